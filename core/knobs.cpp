#include "core/knobs.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

namespace hone::core {
namespace {

std::string trim(std::string_view s)
{
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
        ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
        --e;
    return std::string(s.substr(b, e - b));
}

bool isIdentifier(std::string_view s)
{
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
        return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool isKnobValue(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '+';
    });
}

std::optional<Value> numericValue(const std::string& text)
{
    int64_t i = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
    if (ec == std::errc() && p == text.data() + text.size())
        return Value::ofInt(i);
    try {
        size_t used = 0;
        double d = std::stod(text, &used);
        if (used == text.size())
            return Value::ofDouble(d);
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

std::vector<std::string> splitWords(const std::string& s)
{
    std::vector<std::string> out;
    std::istringstream in(s);
    std::string w;
    while (in >> w)
        out.push_back(w);
    return out;
}

} // namespace

const std::vector<std::string>& knobActsKinds()
{
    static const std::vector<std::string> kinds {"bytes_per_access", "parallelism", "work_per_thread",
        "memory_pipeline", "reduction", "cache_policy", "launch_shape", "arithmetic"};
    return kinds;
}

const KnobDecl* KnobSpace::find(const std::string& name) const
{
    for (const auto& k : knobs)
        if (k.name == name)
            return &k;
    return nullptr;
}

bool KnobSpace::admits(const KnobValues& values, std::string* why) const
{
    for (const auto& k : knobs) {
        auto it = values.find(k.name);
        if (it == values.end()) {
            if (why)
                *why = "knob " + k.name + " has no value";
            return false;
        }
        if (std::find(k.values.begin(), k.values.end(), it->second) == k.values.end()) {
            if (why)
                *why = "knob " + k.name + " = " + it->second + " is not one of its declared values";
            return false;
        }
    }
    for (const auto& [name, v] : values) {
        if (!find(name)) {
            if (why)
                *why = "knob " + name + " is not declared by this source";
            return false;
        }
    }
    SymbolLookup lookup = [&](std::string_view name) -> std::optional<Value> {
        auto it = values.find(std::string(name));
        if (it == values.end())
            return std::nullopt;
        return numericValue(it->second);
    };
    for (const auto& r : requires_) {
        try {
            if (!r.eval(lookup).truthy()) {
                if (why)
                    *why = "require " + r.text() + " does not hold";
                return false;
            }
        } catch (const ExprError& e) {
            if (why)
                *why = "require " + r.text() + ": " + e.what();
            return false;
        }
    }
    return true;
}

namespace {

/// Calls `visit` with every assignment of `space` in odometer order (the first knob turns
/// fastest) until it returns false, at most `maxSteps` times; false when it stopped early.
template <typename Visit> bool forEachAssignment(const KnobSpace& space, uint64_t maxSteps, Visit visit)
{
    std::vector<size_t> index(space.knobs.size(), 0);
    for (uint64_t step = 0; step < maxSteps; ++step) {
        KnobValues v;
        for (size_t i = 0; i < space.knobs.size(); ++i)
            v[space.knobs[i].name] = space.knobs[i].values[index[i]];
        if (!visit(std::move(v)))
            return false;
        size_t i = 0;
        while (i < space.knobs.size()) {
            if (++index[i] < space.knobs[i].values.size())
                break;
            index[i] = 0;
            ++i;
        }
        if (i == space.knobs.size())
            return true;
    }
    return false;
}

} // namespace

std::optional<KnobValues> KnobSpace::firstAdmissible() const
{
    // Bounded so that a huge space with no admissible point cannot hang the caller.
    std::optional<KnobValues> first;
    forEachAssignment(*this, 1'000'000, [&](KnobValues v) {
        if (!admits(v))
            return true;
        first = std::move(v);
        return false;
    });
    return first;
}

std::vector<KnobValues> KnobSpace::admissibleAssignments(uint64_t limit) const
{
    if (cardinality() > limit)
        throw KnobError("the knob space has " + std::to_string(cardinality()) + " assignments, more than the "
            + std::to_string(limit) + " a sweep enumerates; narrow the knobs' values or search it instead");
    std::vector<KnobValues> all;
    forEachAssignment(*this, limit, [&](KnobValues v) {
        if (admits(v))
            all.push_back(std::move(v));
        return true;
    });
    return all;
}

std::optional<KnobValues> KnobSpace::initial() const
{
    if (!start.empty()) {
        KnobValues v;
        for (const auto& k : knobs) {
            auto it = start.find(k.name);
            v[k.name] = it != start.end() ? it->second : k.values.front();
        }
        if (admits(v))
            return v;
    }
    return firstAdmissible();
}

uint64_t KnobSpace::cardinality() const
{
    uint64_t n = 1;
    for (const auto& k : knobs) {
        if (n > (uint64_t(1) << 62) / std::max<size_t>(1, k.values.size()))
            return uint64_t(1) << 62;
        n *= k.values.size();
    }
    return n;
}

KnobSpace parseKnobSpace(const std::string& source, const std::string& fileName)
{
    KnobSpace space;
    std::vector<std::pair<int, std::string>> requireLines;
    std::vector<std::pair<int, std::string>> startLines;
    std::istringstream in(source);
    std::string line;
    int lineNo = 0;
    auto fail = [&](const std::string& msg) { throw KnobError(fileName + ":" + std::to_string(lineNo) + ": " + msg); };
    while (std::getline(in, line)) {
        ++lineNo;
        auto slash = line.find("//");
        if (slash == std::string::npos)
            continue;
        std::string comment = trim(std::string_view(line).substr(slash + 2));
        if (comment.rfind("hone:", 0) != 0)
            continue;
        std::string rest = comment.substr(5);
        size_t nameEnd = 0;
        while (nameEnd < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[nameEnd])) || rest[nameEnd] == '_'))
            ++nameEnd;
        std::string directive = rest.substr(0, nameEnd);
        std::string body = trim(std::string_view(rest).substr(nameEnd));
        if (directive == "knob") {
            auto eq = body.find('=');
            if (eq == std::string::npos)
                fail("hone:knob needs 'NAME = v1 | v2 | ...'; expected '=' after the knob name");
            KnobDecl decl;
            decl.name = trim(std::string_view(body).substr(0, eq));
            decl.line = lineNo;
            if (!isIdentifier(decl.name))
                fail("hone:knob name '" + decl.name + "' is not an identifier; expected a C identifier such as BLOCK");
            if (space.find(decl.name))
                fail("knob '" + decl.name + "' is declared twice; expected each knob once");
            std::string values = body.substr(eq + 1);
            // An optional trailing `acts=KIND` (values never hold '=').
            if (const auto actsEq = values.find('='); actsEq != std::string::npos) {
                const auto keyStart = values.find_last_of(" \t|", actsEq);
                const std::string key = trim(std::string_view(values).substr(
                    keyStart == std::string::npos ? 0 : keyStart + 1,
                    actsEq - (keyStart == std::string::npos ? 0 : keyStart + 1)));
                if (key != "acts" || keyStart == std::string::npos || values[keyStart] == '|')
                    fail("knob '" + decl.name + "': unexpected '" + key + "=' in its values; expected 'NAME = v1 | v2 | ..."
                        + "' optionally followed by ' acts=KIND'");
                decl.acts = trim(std::string_view(values).substr(actsEq + 1));
                const auto& kinds = knobActsKinds();
                if (std::find(kinds.begin(), kinds.end(), decl.acts) == kinds.end()) {
                    std::string list;
                    for (const auto& k : kinds)
                        list += (list.empty() ? "" : ", ") + k;
                    fail("knob '" + decl.name + "' acts='" + decl.acts + "' is not a known kind; expected one of " + list);
                }
                values = values.substr(0, keyStart);
            }
            size_t start = 0;
            while (true) {
                size_t bar = values.find('|', start);
                std::string v = trim(std::string_view(values).substr(start, bar == std::string::npos ? std::string::npos : bar - start));
                if (!isKnobValue(v))
                    fail("knob '" + decl.name + "' has an empty or invalid value '" + v
                        + "'; expected values of letters, digits, '_', '.', '+', '-' separated by '|'");
                if (std::find(decl.values.begin(), decl.values.end(), v) != decl.values.end())
                    fail("knob '" + decl.name + "' lists value '" + v + "' twice; expected distinct values");
                decl.values.push_back(v);
                if (bar == std::string::npos)
                    break;
                start = bar + 1;
            }
            space.knobs.push_back(std::move(decl));
        } else if (directive == "start") {
            startLines.emplace_back(lineNo, body);
        } else if (directive == "require") {
            if (body.empty())
                fail("hone:require is empty; expected an expression over knob names such as 'BLOCK % 32 == 0'");
            try {
                space.requires_.push_back(Expr::parse(body));
            } catch (const ExprError& e) {
                fail("hone:require '" + body + "': " + e.what());
            }
            requireLines.emplace_back(lineNo, body);
        } else if (directive == "flags") {
            if (std::string err = checkFlags(body, langOfFile(fileName)); !err.empty())
                fail("hone:flags: " + err);
            space.flags = space.flags.empty() ? body : space.flags + " " + body;
        } else {
            fail("unknown directive 'hone:" + directive + "'; expected hone:knob, hone:require, hone:flags or hone:start");
        }
    }
    // A require may name only declared knobs: a typo must not turn into "always false".
    for (size_t i = 0; i < space.requires_.size(); ++i) {
        for (const auto& sym : space.requires_[i].symbols()) {
            if (!space.find(sym)) {
                lineNo = requireLines[i].first;
                fail("hone:require '" + requireLines[i].second + "' names '" + sym
                    + "', which is not a declared knob; expected one of the hone:knob names");
            }
        }
    }
    // `hone:start NAME=value ...` may come before or after the knobs it names.
    for (const auto& [at, body] : startLines) {
        lineNo = at;
        std::istringstream words(body);
        std::string w;
        while (words >> w) {
            const auto eq = w.find('=');
            const std::string name = eq == std::string::npos ? w : w.substr(0, eq);
            const KnobDecl* decl = space.find(name);
            if (eq == std::string::npos || !decl)
                fail("hone:start '" + w + "': expected NAME=VALUE pairs naming declared knobs");
            const std::string value = w.substr(eq + 1);
            if (std::find(decl->values.begin(), decl->values.end(), value) == decl->values.end())
                fail("hone:start gives knob '" + name + "' the value '" + value + "', which its hone:knob line does not "
                    "declare; expected one of its values");
            space.start[name] = value;
        }
    }
    if (!space.start.empty()) {
        KnobValues v;
        for (const auto& k : space.knobs)
            v[k.name] = space.start.count(k.name) ? space.start.at(k.name) : k.values.front();
        std::string why;
        if (!space.admits(v, &why)) {
            lineNo = startLines.front().first;
            fail("hone:start is not admissible: " + why + "; expected an assignment every hone:require accepts");
        }
    }
    return space;
}

std::string langOfFile(const std::string& fileName)
{
    auto endsWith = [&](const char* ext) {
        const size_t n = std::char_traits<char>::length(ext);
        return fileName.size() > n && fileName.compare(fileName.size() - n, n, ext) == 0;
    };
    return endsWith(".cu") ? "cuda" : endsWith(".hip") ? "hip" : "cpp";
}

namespace {

/// nvcc's allow-list: optimisation level, fast-math switches, a register cap and macros.
std::string checkCudaFlags(const std::string& flags)
{
    for (const auto& f : splitWords(flags)) {
        const bool quoted = f.find_first_of("\"'`\\$") != std::string::npos;
        auto valueIs = [&](const char* prefix, const char* values) {
            const std::string p = prefix;
            if (f.rfind(p, 0) != 0)
                return false;
            const std::string v = f.substr(p.size());
            return !v.empty() && v.find_first_not_of(values) == std::string::npos;
        };
        const bool boolean = valueIs("-ftz=", "truefals") || valueIs("--ftz=", "truefals")
            || valueIs("-prec-div=", "truefals") || valueIs("--prec-div=", "truefals")
            || valueIs("-prec-sqrt=", "truefals") || valueIs("--prec-sqrt=", "truefals")
            || valueIs("-fmad=", "truefals") || valueIs("--fmad=", "truefals");
        const bool allowed = !quoted
            && ((f.size() == 3 && f[0] == '-' && f[1] == 'O' && f[2] >= '0' && f[2] <= '3') || f == "--use_fast_math"
                || f == "-use_fast_math" || f == "--extra-device-vectorization" || boolean
                || valueIs("-maxrregcount=", "0123456789") || valueIs("--maxrregcount=", "0123456789")
                || (f.size() > 2 && (f.rfind("-D", 0) == 0 || f.rfind("-U", 0) == 0)));
        if (!allowed)
            return "compile flag '" + f
                + "' is not allowed for CUDA; expected only -O0..-O3, --use_fast_math, -maxrregcount=N, "
                  "--extra-device-vectorization, -ftz=/-prec-div=/-prec-sqrt=/-fmad=true|false, -D* and -U*"
                + (quoted ? std::string(" (quotes, backslashes and $ are not interpreted)") : std::string());
    }
    return {};
}

} // namespace

std::string checkFlags(const std::string& flags, const std::string& lang)
{
    if (lang == "cuda")
        return checkCudaFlags(flags);
    for (const auto& f : splitWords(flags)) {
        bool ok = false;
        if (f.size() >= 2 && f[0] == '-') {
            char c = f[1];
            if (c == 'O' || c == 'm' || c == 'D' || c == 'U' || c == 'W')
                ok = true;
            if (c == 'f' && f.rfind("-fplugin", 0) != 0)
                ok = true;
            if (f.rfind("-std=", 0) == 0)
                ok = true;
            if (f.rfind("-Wl", 0) == 0 || f.rfind("-Wa", 0) == 0 || f.rfind("-Wp", 0) == 0)
                ok = false; // these pass arbitrary options to the linker, assembler, preprocessor
        }
        if (!ok)
            return "compile flag '" + f + "' is not allowed; expected only -O*, -f* (not -fplugin), -m*, -D*, -U*, -W* (not -Wl/-Wa/-Wp) and -std=*";
    }
    return {};
}

std::string knobsToString(const KnobValues& values)
{
    std::string out;
    for (const auto& [k, v] : values) {
        if (!out.empty())
            out += ' ';
        out += k + "=" + v;
    }
    return out;
}

} // namespace hone::core
