#include "core/response_parser.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace hone::core {
namespace {

struct Block {
    std::string info; // the fence's info string ("cpp", "c++", "")
    std::string text;
    int line = 0; // of the opening fence, 1-based
};

std::string trim(std::string_view s)
{
    size_t a = s.find_first_not_of(" \t\r");
    if (a == std::string_view::npos)
        return {};
    size_t b = s.find_last_not_of(" \t\r");
    return std::string(s.substr(a, b - a + 1));
}

/// Fenced blocks (``` or ~~~, three or more); `unclosedLine` > 0 when the last one never closes.
std::vector<Block> fencedBlocks(std::string_view text, int& unclosedLine)
{
    std::vector<Block> blocks;
    unclosedLine = 0;
    size_t pos = 0;
    int lineNo = 0;
    bool inside = false;
    char fenceChar = 0;
    size_t fenceLen = 0;
    Block cur;
    while (pos <= text.size()) {
        size_t nl = text.find('\n', pos);
        std::string_view line
            = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        ++lineNo;
        std::string t = trim(line);
        size_t run = 0;
        char c = t.empty() ? 0 : t[0];
        if (c == '`' || c == '~')
            while (run < t.size() && t[run] == c)
                ++run;
        if (!inside) {
            if (run >= 3 && (c == '~' || t.find('`', run) == std::string::npos)) {
                inside = true;
                fenceChar = c;
                fenceLen = run;
                cur = Block { trim(std::string_view(t).substr(run)), {}, lineNo };
            }
        } else if (c == fenceChar && run >= fenceLen && trim(std::string_view(t).substr(run)).empty()) {
            inside = false;
            blocks.push_back(std::move(cur));
        } else {
            cur.text.append(line);
            cur.text += '\n';
        }
        if (nl == std::string_view::npos)
            break;
        pos = nl + 1;
    }
    if (inside) {
        unclosedLine = cur.line;
        blocks.push_back(std::move(cur));
    }
    return blocks;
}

/// The same text with comments blanked (newlines kept, so offsets and lines stay), and string
/// and character literal contents blanked too unless `keepStrings`.
std::string mask(const std::string& src, bool keepStrings)
{
    std::string out = src;
    auto isIdent = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    size_t i = 0;
    const size_t n = src.size();
    auto blank = [&](size_t from, size_t to) {
        for (size_t k = from; k < to && k < n; ++k)
            if (out[k] != '\n')
                out[k] = ' ';
    };
    while (i < n) {
        char c = src[i];
        if (c == '/' && i + 1 < n && src[i + 1] == '/') {
            size_t e = src.find('\n', i);
            e = e == std::string::npos ? n : e;
            blank(i, e);
            i = e;
        } else if (c == '/' && i + 1 < n && src[i + 1] == '*') {
            size_t e = src.find("*/", i + 2);
            e = e == std::string::npos ? n : e + 2;
            blank(i, e);
            i = e;
        } else if (c == '"' && i > 0 && src[i - 1] == 'R'
            && (i < 2 || !isIdent(src[i - 2]) || src[i - 2] == '8' || src[i - 2] == 'u' || src[i - 2] == 'U'
                || src[i - 2] == 'L')) {
            // Raw string R"delim( ... )delim"
            size_t open = src.find('(', i + 1);
            if (open == std::string::npos || open - i > 17) {
                ++i;
                continue;
            }
            std::string close = ")" + src.substr(i + 1, open - i - 1) + "\"";
            size_t e = src.find(close, open + 1);
            e = e == std::string::npos ? n : e + close.size();
            if (!keepStrings)
                blank(i + 1, e - 1);
            i = e;
        } else if (c == '"'
            || (c == '\''
                && !(i > 0 && std::isxdigit(static_cast<unsigned char>(src[i - 1])) && i + 1 < n
                    && std::isxdigit(static_cast<unsigned char>(src[i + 1]))))) {
            size_t k = i + 1;
            while (k < n && src[k] != c && src[k] != '\n') {
                if (src[k] == '\\')
                    ++k;
                ++k;
            }
            if (!keepStrings)
                blank(i + 1, k);
            i = k + 1;
        } else {
            ++i;
        }
    }
    return out;
}

int lineOf(const std::string& text, size_t offset)
{
    return static_cast<int>(
               std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'))
        + 1;
}

std::string lower(std::string s)
{
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

const std::set<std::string>& standardHeaders()
{
    static const std::set<std::string> h { // C++
        "algorithm", "any", "array", "atomic", "barrier", "bit", "bitset", "cassert", "cctype", "cerrno",
        "cfenv", "cfloat", "charconv", "chrono", "cinttypes", "climits", "cmath", "compare", "complex",
        "concepts", "condition_variable", "cstdarg", "cstddef", "cstdint", "cstdio", "cstdlib", "cstring",
        "deque", "exception", "execution", "functional", "initializer_list", "iomanip", "ios", "iosfwd",
        "iostream", "iterator", "latch", "limits", "list", "map", "memory", "memory_resource", "mutex", "new",
        "numbers", "numeric", "optional", "ostream", "queue", "random", "ranges", "ratio", "semaphore", "set",
        "shared_mutex", "source_location", "span", "sstream", "stack", "stdexcept", "stop_token", "string",
        "string_view", "thread", "tuple", "type_traits", "typeindex", "typeinfo", "unordered_map",
        "unordered_set", "utility", "valarray", "variant", "vector", "version",
        // C
        "assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h", "inttypes.h", "limits.h",
        "math.h", "stdalign.h", "stdarg.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h",
        "string.h",
        // the ABI
        "hone/kernel.h"
    };
    return h;
}

bool langHeader(const std::string& h, const std::string& lang)
{
    if (lang == "cpp") {
        static const std::set<std::string> cpu { "omp.h", "immintrin.h", "x86intrin.h", "xmmintrin.h",
            "emmintrin.h", "pmmintrin.h", "tmmintrin.h", "smmintrin.h", "nmmintrin.h", "wmmintrin.h",
            "avxintrin.h", "avx2intrin.h", "fmaintrin.h", "f16cintrin.h", "arm_neon.h", "arm_sve.h",
            "arm_fp16.h", "arm_bf16.h" };
        return cpu.count(h) != 0;
    }
    if (lang == "cuda") {
        static const std::set<std::string> cuda { "cuda.h", "cuda_runtime.h", "cuda_runtime_api.h",
            "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "mma.h", "cooperative_groups.h", "cuda_pipeline.h",
            "cuda_awbarrier.h", "device_launch_parameters.h", "vector_types.h", "math_constants.h",
            "sm_60_atomic_functions.h", "crt/math_functions.h" };
        return cuda.count(h) != 0 || h.starts_with("cooperative_groups/") || h.starts_with("cuda/");
    }
    if (lang == "hip") {
        static const std::set<std::string> hip { "hip/hip_runtime.h", "hip/hip_runtime_api.h",
            "hip/hip_fp16.h", "hip/hip_bf16.h", "hip/hip_cooperative_groups.h", "hip/hip_vector_types.h",
            "hip/math_functions.h" };
        return hip.count(h) != 0;
    }
    return false;
}

/// Header prefixes of well-known libraries a problem may allow.
bool libraryHeader(const std::string& header, const std::string& library)
{
    static const std::vector<std::pair<std::string, std::vector<std::string>>> known {
        { "cublas", { "cublas", "cublasLt" } }, { "cublaslt", { "cublasLt" } }, { "cudnn", { "cudnn" } },
        { "cub", { "cub/" } }, { "thrust", { "thrust/" } }, { "cccl", { "cub/", "thrust/", "cuda/" } },
        { "cutlass", { "cutlass/", "cute/" } }, { "curand", { "curand" } }, { "cufft", { "cufft" } },
        { "cusparse", { "cusparse" } }, { "rocblas", { "rocblas" } }, { "hipblas", { "hipblas" } },
        { "hipblaslt", { "hipblaslt" } }, { "hipcub", { "hipcub/" } }, { "rocprim", { "rocprim/" } },
        { "rocwmma", { "rocwmma/" } }, { "miopen", { "miopen/" } }, { "mkl", { "mkl" } },
        { "openblas", { "cblas.h", "openblas" } }, { "cblas", { "cblas.h" } }, { "blas", { "cblas.h" } },
        { "eigen", { "Eigen/", "unsupported/Eigen/" } }, { "onednn", { "dnnl", "oneapi/dnnl/" } },
        { "dnnl", { "dnnl", "oneapi/dnnl/" } }, { "xsimd", { "xsimd/" } }, { "highway", { "hwy/" } },
        { "sleef", { "sleef" } }
    };
    const std::string lib = lower(library);
    for (const auto& [name, prefixes] : known) {
        if (name != lib)
            continue;
        for (const auto& p : prefixes)
            if (header.starts_with(p))
                return true;
        return false;
    }
    // A library Hone does not know: its headers are those named after it.
    const std::string h = lower(header);
    return h.starts_with(lib + "/") || h.starts_with(lib + ".") || h.starts_with(lib + "_");
}

struct Forbidden {
    const char* word;
    bool call; // only when followed by '('
    const char* what;
};

const Forbidden kForbidden[] = {
    { "system", true, "starts a process" },
    { "popen", true, "starts a process" },
    { "fork", true, "starts a process" },
    { "vfork", true, "starts a process" },
    { "clone", true, "starts a process" },
    { "execl", true, "starts a program" },
    { "execlp", true, "starts a program" },
    { "execle", true, "starts a program" },
    { "execv", true, "starts a program" },
    { "execvp", true, "starts a program" },
    { "execvpe", true, "starts a program" },
    { "execve", true, "starts a program" },
    { "posix_spawn", true, "starts a process" },
    { "posix_spawnp", true, "starts a process" },
    { "dlopen", true, "loads a library at run time" },
    { "dlmopen", true, "loads a library at run time" },
    { "dlsym", true, "looks up symbols at run time" },
    { "fopen", true, "does file I/O" },
    { "freopen", true, "does file I/O" },
    { "fdopen", true, "does file I/O" },
    { "open", true, "does file I/O" },
    { "openat", true, "does file I/O" },
    { "creat", true, "does file I/O" },
    { "unlink", true, "does file I/O" },
    { "mkdir", true, "does file I/O" },
    { "socket", true, "opens a socket" },
    { "syscall", true, "makes raw system calls" },
    { "ptrace", true, "traces processes" },
    { "kill", true, "signals processes" },
    { "signal", true, "installs signal handlers" },
    { "sigaction", true, "installs signal handlers" },
    { "setrlimit", true, "changes process limits" },
    { "exit", true, "ends the process" },
    { "_exit", true, "ends the process" },
    { "_Exit", true, "ends the process" },
    { "quick_exit", true, "ends the process" },
    { "FILE", false, "does file I/O" },
    { "ifstream", false, "does file I/O" },
    { "ofstream", false, "does file I/O" },
    { "fstream", false, "does file I/O" },
    { "filebuf", false, "does file I/O" },
    { "filesystem", false, "does file I/O" },
};

} // namespace

std::vector<std::string> forbiddenConstructs(const std::string& source, const ReplyRules& rules)
{
    std::vector<std::string> reasons;
    const std::string noComments = mask(source, true);
    const std::string code = mask(source, false);

    // Preprocessor lines: includes and pragmas.
    size_t pos = 0;
    while (pos < noComments.size()) {
        size_t nl = noComments.find('\n', pos);
        size_t end = nl == std::string::npos ? noComments.size() : nl;
        std::string line = trim(std::string_view(noComments).substr(pos, end - pos));
        if (line.starts_with("#")) {
            std::string directive = trim(std::string_view(line).substr(1));
            const int lineNo = lineOf(noComments, pos);
            const std::string at = "line " + std::to_string(lineNo) + ": ";
            if (directive.starts_with("include_next") || directive.starts_with("import")) {
                reasons.push_back(
                    at + "#" + directive.substr(0, directive.find_first_of(" <\"")) + " is not allowed");
            } else if (directive.starts_with("include")) {
                std::string rest = trim(std::string_view(directive).substr(7));
                std::string header;
                if (rest.size() > 2 && (rest[0] == '<' || rest[0] == '"')) {
                    char close = rest[0] == '<' ? '>' : '"';
                    size_t e = rest.find(close, 1);
                    if (e != std::string::npos)
                        header = rest.substr(1, e - 1);
                }
                bool ok = !header.empty()
                    && (standardHeaders().count(header) != 0 || langHeader(header, rules.lang)
                        || std::any_of(rules.allowedLibraries.begin(), rules.allowedLibraries.end(),
                            [&](const std::string& lib) { return libraryHeader(header, lib); }));
                if (header == "fstream" || header == "filesystem")
                    ok = false;
                if (!ok) {
                    std::string libs;
                    for (const auto& l : rules.allowedLibraries)
                        libs += (libs.empty() ? "" : ", ") + l;
                    reasons.push_back(at + "#include " + (header.empty() ? rest : "<" + header + ">")
                        + " is not a standard header, hone/kernel.h or a header of a library in [libraries] "
                          "allowed ("
                        + (libs.empty() ? "none" : libs) + ")");
                }
            } else if (directive.starts_with("pragma")) {
                std::string p = trim(std::string_view(directive).substr(6));
                if (p.starts_with("comment"))
                    reasons.push_back(at + "#pragma comment links libraries, which is not allowed");
            }
        }
        pos = end + 1;
    }

    // Identifiers: calls and types that reach outside the kernel.
    auto isIdent = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::set<std::string> seen;
    for (size_t i = 0; i < code.size();) {
        if (!(std::isalpha(static_cast<unsigned char>(code[i])) || code[i] == '_')
            || (i > 0 && isIdent(code[i - 1]))) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < code.size() && isIdent(code[j]))
            ++j;
        std::string word = code.substr(i, j - i);
        size_t k = j;
        while (k < code.size() && std::isspace(static_cast<unsigned char>(code[k])))
            ++k;
        const bool call = k < code.size() && code[k] == '(';
        const std::string at = "line " + std::to_string(lineOf(code, i)) + ": ";
        std::string reason;
        if ((word == "asm" || word == "__asm" || word == "__asm__") && rules.lang == "cpp")
            reason = at + "inline assembly is not allowed in CPU kernels; use intrinsics";
        for (const Forbidden& f : kForbidden)
            if (word == f.word && (!f.call || call))
                reason = at + (f.call ? word + "()" : word) + " " + f.what + ", which a kernel may not do";
        if ((word == "__attribute__" || word == "__declspec") && call) {
            std::string args = code.substr(k, std::min<size_t>(200, code.size() - k));
            size_t close = args.find("))");
            args = args.substr(0, close);
            if (args.find("constructor") != std::string::npos || args.find("destructor") != std::string::npos)
                reason = at
                    + "load-time constructors and destructors are not allowed: all work happens in hone_run";
        }
        if (word == "gnu" && code.compare(j, 2, "::") == 0
            && (code.compare(j + 2, 11, "constructor") == 0 || code.compare(j + 2, 10, "destructor") == 0))
            reason
                = at + "load-time constructors and destructors are not allowed: all work happens in hone_run";
        if (!reason.empty() && seen.insert(word).second)
            reasons.push_back(reason);
        i = j;
    }
    return reasons;
}

ParsedReply parseReply(
    std::string_view reply, bool truncated, const std::string& finishReason, const ReplyRules& rules)
{
    ParsedReply r;
    const std::string contract = "the contract is exactly one ```" + rules.lang
        + " block holding the whole kernel, which defines extern \"C\" int hone_run(const hone_args*)";
    if (truncated) {
        r.reason = "the reply was cut off at the token limit (finish reason '" + finishReason
            + "'); raise --max-tokens or ask for a shorter kernel";
        return r;
    }
    int unclosed = 0;
    std::vector<Block> blocks = fencedBlocks(reply, unclosed);
    if (unclosed > 0) {
        r.reason = "the code fence opened at line " + std::to_string(unclosed)
            + " of the reply never closes; the reply looks truncated";
        return r;
    }
    if (blocks.empty()) {
        r.reason = "the reply has no fenced code block; " + contract;
        return r;
    }
    std::vector<const Block*> kernels;
    for (const Block& b : blocks)
        if (mask(b.text, false).find("hone_run") != std::string::npos)
            kernels.push_back(&b);
    if (kernels.empty()) {
        r.reason = "no code block of the reply defines hone_run (" + std::to_string(blocks.size()) + " block"
            + (blocks.size() == 1 ? "" : "s") + " without it); " + contract;
        return r;
    }
    if (kernels.size() > 1) {
        r.reason = std::to_string(kernels.size()) + " code blocks of the reply (at lines "
            + std::to_string(kernels[0]->line) + " and " + std::to_string(kernels[1]->line)
            + ") mention hone_run, so it is not clear which is the kernel; " + contract;
        return r;
    }
    const Block& k = *kernels.front();
    if (k.text.size() > rules.maxSourceBytes) {
        r.reason = "the kernel is " + std::to_string((k.text.size() + 1023) / 1024)
            + " KiB, over the limit of " + std::to_string(rules.maxSourceBytes / 1024) + " KiB";
        return r;
    }
    std::vector<std::string> bad = forbiddenConstructs(k.text, rules);
    if (!bad.empty()) {
        r.reason = "the kernel uses what the problem forbids: ";
        for (size_t i = 0; i < bad.size() && i < 5; ++i)
            r.reason += (i ? "; " : "") + bad[i];
        return r;
    }
    try {
        r.knobs = parseKnobSpace(k.text, "the kernel");
    } catch (const std::exception& e) {
        r.reason = std::string("a // hone: annotation is malformed: ") + e.what();
        return r;
    }
    if (!r.knobs.empty() && !r.knobs.firstAdmissible()) {
        r.reason = "no assignment of the declared knobs satisfies its // hone:require lines";
        return r;
    }
    if (std::string err = checkFlags(r.knobs.flags, rules.lang); !err.empty()) {
        r.reason = "// hone:flags: " + err;
        return r;
    }
    r.ok = true;
    r.source = k.text;
    return r;
}

} // namespace hone::core
