#include "compiler.h"

#include "cache_integrity.h"

#include "core/sha256.h"
#include "core/utf8.h"
#include "hone_embedded.h"
#include "process.h"
#include "sandbox.h"
#include "system_info.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

namespace hone::backends {
namespace fs = std::filesystem;
namespace {

bool startsWith(const std::string& s, const char* prefix)
{
    return s.rfind(prefix, 0) == 0;
}

bool isIdentifier(const std::string& s)
{
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
        return false;
    for (char c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
            return false;
    return true;
}

/// A file name the compiler will treat as C++ and that cannot escape the build directory.
std::string sourceFileName(const std::string& name)
{
    std::string base = fs::path(name).filename().string();
    for (char& c : base)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
            c = '_';
    if (base.empty() || base[0] == '.' || base[0] == '-')
        base = "candidate" + base;
    const std::string ext = fs::path(base).extension().string();
    if (ext != ".cpp" && ext != ".cc" && ext != ".cxx")
        base += ".cpp";
    return base;
}

bool isRegularFile(const fs::path& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string join(const std::vector<std::string>& parts)
{
    std::string out;
    for (const auto& p : parts) {
        if (!out.empty())
            out += ' ';
        out += p;
    }
    return out;
}

std::string trimRight(std::string s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.pop_back();
    return s;
}

bool allDigits(const std::string& s)
{
    if (s.empty())
        return false;
    for (char c : s)
        if (!std::isdigit(static_cast<unsigned char>(c)))
            return false;
    return true;
}

/// GCC quotes with U+2018/U+2019 in UTF-8 locales; plain quotes read the same in prompts,
/// terminals and JSON.
std::string plainQuotes(std::string text)
{
    for (const char* curly : { "\xE2\x80\x98", "\xE2\x80\x99" }) {
        size_t at = 0;
        while ((at = text.find(curly, at)) != std::string::npos)
            text.replace(at, 3, "'");
    }
    return text;
}

/// Where the toolkit of a compiler outside /usr lives, to be bound read-only in the sandbox:
/// `/opt/cuda` for /opt/cuda/bin/nvcc; only the program's own folder where its parent is / or
/// the home directory. Empty for compilers under /usr, which the sandbox binds anyway.
fs::path toolkitRoot(const std::string& program)
{
    std::error_code ec;
    const fs::path real = fs::canonical(program, ec);
    if (ec || real.string().rfind("/usr/", 0) == 0)
        return {};
    const fs::path dir = real.parent_path();
    fs::path root = dir.filename() == "bin" ? dir.parent_path() : dir;
    const char* home = std::getenv("HOME");
    if (root == "/" || (home && *home && fs::equivalent(root, home, ec)))
        root = dir;
    return root;
}

/// The compile inside bubblewrap: no network, a clean environment, the system (with
/// /usr/local and its CUDA toolkit) read-only, the include folder read-only, the build folder
/// (the source and, once written, the object) writable and current, a private /tmp. The host's
/// home, store and the rest of the cache do not exist in there, so an include of /etc/passwd or
/// a path under $HOME finds nothing to echo into the log.
std::vector<std::string> sandboxedCompile(const std::string& bwrap, const std::vector<std::string>& argv,
    const fs::path& buildDir, const fs::path& includeDir)
{
    const std::string program = findExecutable(argv.front());
    const fs::path toolkit = program.empty() ? fs::path() : toolkitRoot(program);
    std::string path = "/usr/local/bin:/usr/bin:/bin";
    if (!program.empty())
        path = fs::path(program).parent_path().string() + ":" + path;
    std::vector<std::pair<std::string, std::string>> env = { { "PATH", path }, { "TMPDIR", "/tmp" } };
    for (const char* var : { "CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "HIP_PATH" })
        if (const char* v = std::getenv(var); v && *v)
            env.emplace_back(var, v);
    // nvcc keeps its intermediates in /tmp: room for them, in memory.
    std::vector<std::string> a = sandboxCommand(bwrap, env, 4ull << 30);
    // `c++` and `cc` are symlinks through /etc/alternatives on Debian.
    a.insert(a.end(), { "--ro-bind-try", "/etc/alternatives", "/etc/alternatives" });
    if (!toolkit.empty())
        a.insert(a.end(), { "--ro-bind", toolkit.string(), toolkit.string() });
    a.insert(a.end(), { "--ro-bind-try", includeDir.string(), includeDir.string() });
    a.insert(a.end(), { "--bind", buildDir.string(), buildDir.string(), "--chdir", buildDir.string() });
    a.push_back(program.empty() ? argv.front() : program);
    a.insert(a.end(), argv.begin() + 1, argv.end());
    return a;
}

} // namespace

std::string readFile(const fs::path& path, bool* ok)
{
    std::ifstream in(path, std::ios::binary);
    if (ok)
        *ok = static_cast<bool>(in);
    if (!in)
        return {};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void writeFileAtomically(const fs::path& path, const std::string& data)
{
    fs::create_directories(path.parent_path());
    static unsigned counter = 0;
    const fs::path tmp
        = path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++counter);
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << data;
        out.close();
        if (!out)
            throw std::runtime_error("cannot write " + tmp.string());
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw std::runtime_error("cannot rename a temporary file to " + path.string());
    }
}

std::vector<std::string> splitFlags(const std::string& flags)
{
    std::vector<std::string> out;
    std::istringstream in(flags);
    std::string f;
    while (in >> f)
        out.push_back(f);
    return out;
}

std::string refusedFlag(const std::vector<std::string>& flags)
{
    for (const auto& f : flags) {
        const bool quoted = f.find_first_of("\"'`\\$") != std::string::npos;
        const bool passThrough = startsWith(f, "-Wl,") || startsWith(f, "-Wa,") || startsWith(f, "-Wp,");
        const bool allowed = !quoted && !passThrough && f.size() >= 2
            && (startsWith(f, "-O") || (startsWith(f, "-f") && !startsWith(f, "-fplugin"))
                || startsWith(f, "-m") || (startsWith(f, "-D") && f.size() > 2)
                || (startsWith(f, "-U") && f.size() > 2) || startsWith(f, "-W") || startsWith(f, "-std="));
        if (!allowed) {
            std::string why = "flag '" + f
                + "' is not allowed; allowed are -O*, -f* (not -fplugin*), -m*, -D*, "
                  "-U*, -W* (not -Wl, -Wa, -Wp,) and -std=*";
            if (quoted)
                why += " (quotes, backslashes and $ are not interpreted)";
            return why;
        }
    }
    return {};
}

std::string badDefine(const std::string& name, const std::string& value)
{
    if (!isIdentifier(name))
        return "knob name '" + name + "' is not a C identifier";
    if (value.empty())
        return "knob '" + name + "' has an empty value";
    for (char c : value)
        if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)))
            return "knob '" + name + "' has a value with whitespace or control characters";
    return {};
}

std::vector<CompileMessage> parseDiagnostics(const std::string& log)
{
    static const char* const kSeverities[] = { "fatal error", "error", "warning", "note" };
    std::vector<CompileMessage> out;
    std::istringstream in(log);
    std::string line;
    while (std::getline(in, line)) {
        for (const char* sev : kSeverities) {
            const std::string marker = std::string(": ") + sev + ": ";
            const size_t at = line.find(marker);
            if (at == std::string::npos)
                continue;
            // The part before the marker is `file:line:col` or `file:line`.
            const std::string where = line.substr(0, at);
            const size_t c2 = where.rfind(':');
            if (c2 == std::string::npos)
                continue;
            const size_t c1 = c2 > 0 ? where.rfind(':', c2 - 1) : std::string::npos;
            CompileMessage m;
            if (c1 != std::string::npos && allDigits(where.substr(c1 + 1, c2 - c1 - 1))
                && allDigits(where.substr(c2 + 1))) {
                m.file = where.substr(0, c1);
                m.line = std::atoi(where.substr(c1 + 1, c2 - c1 - 1).c_str());
                m.column = std::atoi(where.substr(c2 + 1).c_str());
            } else if (allDigits(where.substr(c2 + 1))) {
                m.file = where.substr(0, c2);
                m.line = std::atoi(where.substr(c2 + 1).c_str());
            } else {
                continue;
            }
            if (m.file.empty())
                continue;
            m.severity = sev;
            m.text = trimRight(line.substr(at + marker.size()));
            out.push_back(std::move(m));
            break;
        }
    }
    return out;
}

std::string CompileOutput::firstError() const
{
    if (!toolError.empty())
        return toolError;
    for (const auto& m : messages)
        if (m.severity == "error" || m.severity == "fatal error")
            return m.file + (m.line > 0 ? ":" + std::to_string(m.line) : std::string())
                + (m.column > 0 ? ":" + std::to_string(m.column) : std::string()) + ": " + m.severity + ": " + m.text;
    // No parsable diagnostic (a linker or driver error): the last non-empty log line.
    std::istringstream in(log);
    std::string line;
    std::string last;
    while (std::getline(in, line))
        if (!trimRight(line).empty())
            last = trimRight(line);
    return last.empty() ? std::string("the compiler failed without a message") : last;
}

nlohmann::json CompileOutput::toJson() const
{
    nlohmann::json messagesJson = nlohmann::json::array();
    for (const auto& m : messages)
        messagesJson.push_back({ { "file", m.file }, { "line", m.line }, { "column", m.column },
            { "severity", m.severity }, { "text", m.text } });
    nlohmann::json j { { "ok", ok }, { "cached", cached }, { "seconds", seconds }, { "command", command },
        { "log", log }, { "messages", messagesJson } };
    if (!resources.is_null())
        j["resources"] = resources;
    if (!isa.empty())
        j["isa"] = isa;
    if (!objectSha256.empty())
        j["object_sha256"] = objectSha256;
    return j;
}

HostCompiler::HostCompiler(fs::path cacheDir, std::string compiler)
    : m_cacheDir(std::move(cacheDir))
    , m_compiler(std::move(compiler))
    , m_machineId(cpuModelName() + "\n" + cpuFeatureFlags())
{
}

fs::path installKernelHeader(const fs::path& cacheDir)
{
    const fs::path includeDir = cacheDir / "include";
    const fs::path header = includeDir / "hone" / "kernel.h";
    bool ok = false;
    const std::string current = readFile(header, &ok);
    if (!ok || current != embedded::kKernelHeader)
        writeFileAtomically(header, std::string(embedded::kKernelHeader));
    return includeDir;
}

void appendJobFlags(const CompileJob& job, const std::string& includeDir, std::vector<std::string>& args,
    std::vector<std::string>& keyed)
{
    args.push_back("-I" + includeDir);
    keyed.push_back("-I<include>");
    for (const auto& [name, value] : job.defines) {
        args.push_back("-D" + name + "=" + value);
        keyed.push_back(args.back());
    }
    for (const auto& f : splitFlags(job.flags)) {
        args.push_back(f);
        keyed.push_back(f);
    }
}

const std::vector<std::string>& HostCompiler::baseFlags()
{
    static const std::vector<std::string> flags
        = { "-std=c++17", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC" };
    return flags;
}

const std::string& HostCompiler::versionLine()
{
    if (!m_versionRead) {
        m_versionRead = true;
        const ProcessResult r = runProcess({ m_compiler, "--version" }, {}, 30);
        if (r.started && r.exitCode == 0) {
            m_version = trimRight(r.output.substr(0, r.output.find('\n')));
        }
    }
    return m_version;
}

void HostCompiler::installHeader()
{
    if (m_headerInstalled)
        return;
    installKernelHeader(m_cacheDir);
    m_headerInstalled = true;
}

CompileOutput HostCompiler::compile(const CompileJob& job)
{
    CompileOutput out;
    const std::string version = versionLine();
    if (version.empty()) {
        out.toolError = "cannot run the C++ compiler '" + m_compiler + "' (set HONE_CXX or install g++)";
        return out;
    }
    installHeader();

    const std::string srcName = sourceFileName(job.name);
    const fs::path includeDir = m_cacheDir / "include";
    std::vector<std::string> middle = baseFlags();
    std::vector<std::string> keyMiddle = middle;
    appendJobFlags(job, includeDir.string(), middle, keyMiddle);

    const std::string key
        = core::sha256Hex("hone-compile-1\n" + version + "\n" + m_compiler + "\n" + m_machineId + "\n"
            + join(keyMiddle) + "\n" + core::sha256Hex(embedded::kKernelHeader) + "\n" + job.source);
    CachedCompile c;
    c.cacheDir = m_cacheDir;
    c.subdir = "so";
    c.key = key;
    c.compiler = m_compiler;
    c.middle = middle;
    c.sourceName = srcName;
    c.source = job.source;
    c.timeLimitSeconds = job.timeLimitSeconds;
    c.cleanLog = plainQuotes;
    c.parseLog = [](CompileOutput& o) { o.messages = parseDiagnostics(o.log); };
    return runCachedCompile(c);
}

CompileOutput runCachedCompile(const CachedCompile& c)
{
    CompileOutput out;
    const fs::path soDir = c.cacheDir / c.subdir;
    const fs::path soPath = soDir / (c.key + ".so");
    const fs::path logPath = soDir / (c.key + ".log");
    std::vector<std::string> shown = { c.compiler };
    shown.insert(shown.end(), c.middle.begin(), c.middle.end());
    shown.insert(shown.end(), { "-o", soPath.string(), c.sourceName });
    shown.insert(shown.end(), c.tail.begin(), c.tail.end());
    out.command = join(shown);
    out.objectPath = soPath.string();
    auto parse = [&] {
        if (c.parseLog)
            c.parseLog(out);
    };

    out.cacheKey = c.subdir + "/" + c.key + ".so";

    std::error_code ec;
    if (isRegularFile(soPath)) {
        // Used only when its bytes are the ones this worker (or another sharing the cache)
        // wrote: hashed and compared with the manifest. Anything else is rebuilt in its place.
        bool read = false;
        const std::string actual = fileSha256(soPath, &read);
        std::string recorded;
        const HashCheck check = read ? checkHash(soPath, actual, &recorded) : HashCheck::Unrecorded;
        if (check == HashCheck::Verified) {
            out.ok = true;
            out.cached = true;
            out.objectSha256 = actual;
            out.log = core::validUtf8(readFile(logPath));
            parse();
            return out;
        }
        if (check == HashCheck::Mismatch)
            out.cacheWarning = tamperWarning("compiled object", soPath, recorded, actual, "compiled again");
    }

    fs::create_directories(soDir);
    fs::create_directories(c.cacheDir / "tmp");
    std::string tmpl = (c.cacheDir / "tmp" / "compile-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
        out.toolError = "cannot create a build directory under " + (c.cacheDir / "tmp").string();
        return out;
    }
    const fs::path buildDir = tmpl;
    {
        std::ofstream src(buildDir / c.sourceName, std::ios::binary);
        src << c.source;
    }
    std::vector<std::string> argv = { c.compiler };
    argv.insert(argv.end(), c.middle.begin(), c.middle.end());
    argv.insert(argv.end(), { "-o", (buildDir / "out.so").string(), c.sourceName });
    argv.insert(argv.end(), c.tail.begin(), c.tail.end());

    const SandboxInfo& sandbox = sandboxInfo();
    if (sandbox.enabled)
        argv = sandboxedCompile(sandbox.bwrap, argv, buildDir, c.cacheDir / "include");
    const ProcessResult r = runProcess(argv, buildDir.string(), c.timeLimitSeconds);
    out.seconds = r.seconds;
    // Compilers echo the source's bytes and speak the locale's encoding: valid UTF-8 from here on,
    // or one stray byte would make the result unwritable as JSON.
    out.log = core::validUtf8(c.cleanLog ? c.cleanLog(r.output) : r.output);
    parse();
    if (!r.started) {
        out.toolError = r.error;
    } else if (r.timedOut) {
        out.timedOut = true;
    } else if (r.exitCode == 0 && !isRegularFile(buildDir / "out.so")) {
        // Written inside the sandbox: a symlink or a fifo put there is not an object.
        out.toolError = "the compiler left no object file (" + (buildDir / "out.so").string() + ")";
    } else if (r.exitCode == 0) {
        // The log first: a worker that finds the object also finds its warnings.
        try {
            writeFileAtomically(logPath, out.log);
        } catch (const std::exception&) {
            // The log is a convenience for cached results; the object is what matters.
        }
        // The manifest first: a reader that finds the new object finds its hash.
        bool hashed = false;
        out.objectSha256 = fileSha256(buildDir / "out.so", &hashed);
        try {
            if (!hashed)
                throw std::runtime_error("cannot read " + (buildDir / "out.so").string());
            recordHash(soPath, out.objectSha256);
            fs::rename(buildDir / "out.so", soPath, ec);
            if (ec)
                out.toolError = "cannot move the compiled object to " + soPath.string() + ": " + ec.message();
            else
                out.ok = true;
        } catch (const std::exception& e) {
            out.toolError = std::string("cannot record the compiled object's hash: ") + e.what();
        }
    }
    fs::remove_all(buildDir, ec);
    return out;
}

} // namespace hone::backends
