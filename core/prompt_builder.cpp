#include "core/prompt_builder.h"

#include "core/problem_spec.h"

#include "hone_prompt_resources.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

namespace hone::core {
namespace {

const std::set<std::string>& commonNames()
{
    static const std::set<std::string> names { "language", "lang", "target", "cpu", "gpu", "problem",
        "reference", "abi", "hardware", "memory", "operator", "task", "knowledge", "hints",
        "allowed_libraries", "max_kb", "reference_lang", "reference_note" };
    return names;
}

const std::set<std::string>& repairNames()
{
    static const std::set<std::string> names = [] {
        std::set<std::string> n = commonNames();
        n.insert({ "failure", "failure_kind", "failed_code", "attempt", "max_attempts", "context" });
        return n;
    }();
    return names;
}

/// Renders every name as "x" so that an unknown placeholder or a broken section fails now,
/// when the templates are loaded, not in the middle of a search.
void validate(const std::string& text, const std::set<std::string>& names, const std::string& fileName)
{
    std::map<std::string, std::string> values;
    for (const auto& n : names)
        values[n] = "x";
    renderTemplate(text, values, fileName);
}

std::string readFile(const std::filesystem::path& p)
{
    std::ifstream f(p, std::ios::binary);
    if (!f)
        throw PromptError("cannot read prompt template " + p.string() + "; check its permissions");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string format(const char* fmt, double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

std::string formatTime(double ns)
{
    if (ns >= 1e9)
        return format("%.2f s", ns / 1e9);
    if (ns >= 1e6)
        return format("%.3f ms", ns / 1e6);
    if (ns >= 1e3)
        return format("%.1f us", ns / 1e3);
    return format("%.0f ns", ns);
}

std::string shapeText(const std::vector<Dim>& dims)
{
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i)
            s += ", ";
        s += dims[i].symbol.empty() ? std::to_string(dims[i].extent) : dims[i].symbol;
    }
    return s + "]";
}

std::string bindingText(const ShapeBinding& b)
{
    std::string s = "{";
    bool first = true;
    for (const auto& [k, v] : b) {
        s += (first ? "" : ", ") + k + "=" + std::to_string(v);
        first = false;
    }
    return s + "}";
}

std::string truncateText(const std::string& s, size_t maxChars)
{
    if (s.size() <= maxChars)
        return s;
    return s.substr(0, maxChars) + "\n[... " + std::to_string(s.size() - maxChars) + " more characters cut]";
}

std::string bullets(const std::vector<std::string>& items)
{
    std::string out;
    for (const auto& i : items)
        out += "- " + i + "\n";
    if (!out.empty())
        out.pop_back();
    return out;
}

std::string languageName(const std::string& lang)
{
    if (lang == "cuda")
        return "CUDA C++";
    if (lang == "hip")
        return "HIP C++";
    return "C++17";
}

std::string textOf(const nlohmann::json& j, const char* key)
{
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double numberOf(const nlohmann::json& j, const char* key)
{
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string renderMemory(const MemoryContext& memory, const std::string& lang)
{
    if (memory.op == MemoryOperator::Restart || memory.entries.empty())
        return "Nothing is shown on purpose: start from the problem and design a fresh kernel, different "
               "from the "
               "usual first attempt.";
    std::string out;
    for (size_t i = 0; i < memory.entries.size(); ++i) {
        const MemoryEntry& e = memory.entries[i];
        // Code for the node being expanded and for siblings; ancestors by their results only,
        // which keeps the prompt short while the lineage still shows what helped.
        bool withCode = i == 0 || e.relation == "sibling";
        out += renderMemoryEntry(e, lang, withCode) + "\n";
    }
    return out;
}

std::string operatorText(MemoryOperator op)
{
    switch (op) {
    case MemoryOperator::Inherit:
        return "inherit: the kernel to improve, then its ancestors";
    case MemoryOperator::Compare:
        return "compare: the kernel to improve, then what was already tried from it";
    case MemoryOperator::Combine:
        return "combine: the kernel to improve, its ancestors and what was already tried from it";
    case MemoryOperator::Restart:
        return "restart";
    }
    return "inherit";
}

std::string taskText(MemoryOperator op)
{
    switch (op) {
    case MemoryOperator::Inherit:
        return "Start from the first kernel under \"What was tried\" and make it faster: read its diagnosis "
               "and "
               "attack the bound it names.";
    case MemoryOperator::Compare:
        return "Start from the first kernel under \"What was tried\"; its other children show what worked "
               "and what "
               "did not, so try something different from them.";
    case MemoryOperator::Combine:
        return "Combine the strengths of the kernels under \"What was tried\" into one faster kernel.";
    case MemoryOperator::Restart:
        return "Design a new kernel from scratch.";
    }
    return "";
}

} // namespace

PromptTemplates PromptTemplates::builtin()
{
    PromptTemplates t;
    t.system = std::string(embedded::kPromptSystem);
    t.propose = std::string(embedded::kPromptPropose);
    t.repair = std::string(embedded::kPromptRepair);
    t.origin = "built-in";
    return t;
}

PromptTemplates PromptTemplates::load(const std::filesystem::path& dir)
{
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        throw PromptError("prompt folder " + dir.string()
            + " does not exist; pass a folder holding system.md, propose.md and repair.md (see "
              "resources/prompts/)");
    PromptTemplates t = builtin();
    t.origin = dir.string();
    struct File {
        const char* name;
        std::string* text;
        const std::set<std::string>* names;
    };
    const File files[] = { { "system.md", &t.system, &commonNames() },
        { "propose.md", &t.propose, &commonNames() }, { "repair.md", &t.repair, &repairNames() } };
    for (const File& f : files) {
        auto path = dir / f.name;
        if (std::filesystem::exists(path, ec))
            *f.text = readFile(path);
        validate(*f.text, *f.names, path.string());
    }
    return t;
}

std::string renderTemplate(
    const std::string& text, const std::map<std::string, std::string>& values, const std::string& fileName)
{
    auto lineAt = [&](size_t pos) {
        return static_cast<int>(
                   std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'))
            + 1;
    };
    auto fail = [&](size_t pos, const std::string& what) -> PromptError {
        std::string known;
        for (const auto& [k, v] : values)
            known += (known.empty() ? "" : ", ") + k;
        return PromptError(
            fileName + ":" + std::to_string(lineAt(pos)) + ": " + what + "; known names: " + known);
    };
    std::string out;
    // Sections may nest; each open section records whether its body is kept.
    struct Open {
        std::string name;
        size_t pos;
        bool keep;
    };
    std::vector<Open> open;
    auto keeping = [&] { return open.empty() || open.back().keep; };
    size_t i = 0;
    while (i < text.size()) {
        size_t start = text.find("{{", i);
        if (start == std::string::npos) {
            if (keeping())
                out.append(text, i, std::string::npos);
            break;
        }
        if (keeping())
            out.append(text, i, start - i);
        size_t end = text.find("}}", start + 2);
        if (end == std::string::npos)
            throw fail(start, "'{{' without a closing '}}'");
        std::string tag = text.substr(start + 2, end - start - 2);
        auto trim = [](std::string s) {
            s.erase(0, s.find_first_not_of(" \t"));
            s.erase(s.find_last_not_of(" \t") + 1);
            return s;
        };
        tag = trim(tag);
        char sigil = tag.empty() ? '\0' : tag[0];
        std::string name = (sigil == '#' || sigil == '/') ? trim(tag.substr(1)) : tag;
        auto value = values.find(name);
        if (value == values.end())
            throw fail(start, "unknown placeholder '{{" + tag + "}}'");
        if (sigil == '#') {
            open.push_back({ name, start, keeping() && !value->second.empty() });
        } else if (sigil == '/') {
            if (open.empty() || open.back().name != name)
                throw fail(start, "'{{/" + name + "}}' closes no open '{{#" + name + "}}'");
            open.pop_back();
        } else if (keeping()) {
            out += value->second;
        }
        i = end + 2;
    }
    if (!open.empty())
        throw fail(open.back().pos,
            "'{{#" + open.back().name + "}}' is never closed with '{{/" + open.back().name + "}}'");
    // A dropped section leaves its blank line behind; collapse runs of blank lines.
    std::string tidy;
    int newlines = 0;
    for (char c : out) {
        newlines = c == '\n' ? newlines + 1 : 0;
        if (newlines <= 2)
            tidy += c;
    }
    return tidy;
}

const std::string& abiHeaderText()
{
    static const std::string text(embedded::kAbiHeader);
    return text;
}

std::string languageOfTarget(const std::string& target)
{
    if (target == "cuda")
        return "cuda";
    if (target == "hip")
        return "hip";
    return "cpp";
}

std::string describeProblem(const ProblemSpec& spec)
{
    std::string s = "Name: " + spec.name + " (family " + spec.family + ")\n";
    if (!spec.description.empty())
        s += spec.description + "\n";
    s += "\nInputs (read-only, contiguous row-major, in this order in args->inputs):\n";
    for (const auto& t : spec.inputs)
        s += "- " + t.name + ": " + dtypeName(t.dtype) + " " + shapeText(t.shape) + "\n";
    s += "Outputs (in this order in args->outputs; write every element):\n";
    for (const auto& t : spec.outputs)
        s += "- " + t.name + ": " + dtypeName(t.dtype) + " " + shapeText(t.shape) + "\n";
    if (!spec.params.empty()) {
        s += "Scalar params (read with hone_param_or):\n";
        for (const auto& [k, v] : spec.params)
            s += "- " + k + " = " + format("%g", v) + "\n";
    }
    s += "Shape symbols are also available through hone_param_or(args, \"M\", 0).\n";
    s += "Correctness shapes:";
    for (const auto& b : spec.smallShapes)
        s += " " + bindingText(b);
    s += "\nTimed shape:";
    for (const auto& b : spec.benchShapes)
        s += " " + bindingText(b);
    s += "\nThe kernel must be correct for any shape, not only these.\n";
    s += "Tolerance: |got - want| <= atol + rtol * |want|, with";
    for (const auto& [dt, tol] : spec.tolerance)
        s += std::string(" ") + dtypeName(dt) + ": atol " + format("%g", tol.atol) + ", rtol "
            + format("%g", tol.rtol) + ";";
    s += "\nCost model: flops = " + spec.flops.text() + ", minimum bytes moved = " + spec.bytes.text() + ".";
    return s;
}

std::string describeHardware(const std::string& target, const std::string& device,
    const std::string& toolchain, const nlohmann::json& ceilings)
{
    std::string s = "Target: " + target + "\n";
    if (!device.empty())
        s += "Device: " + device + "\n";
    if (!toolchain.empty())
        s += "Compiler: " + toolchain + "\n";
    if (target == "cpu")
        s += "Build: c++ -std=c++17 -O3 -march=native -fopenmp -shared -fPIC, knobs as -D NAME=VALUE; extra "
             "optimisation, -f and -m flags through // hone:flags. OpenMP is available.\n";
    if (ceilings.is_object()) {
        double gbps = numberOf(ceilings, "peak_gbps");
        double gflops = numberOf(ceilings, "peak_gflops");
        double tensor = numberOf(ceilings, "peak_tensor_gflops");
        if (gbps > 0 || gflops > 0) {
            s += "Measured ceilings: copy bandwidth " + format("%.1f", gbps) + " GB/s, FMA peak "
                + format("%.1f", gflops) + " GFLOP/s";
            if (tensor > 0)
                s += ", tensor peak " + format("%.1f", tensor) + " GFLOP/s";
            s += ".\n";
        }
        if (std::string m = textOf(ceilings, "method"); !m.empty())
            s += "(" + m + ")\n";
    }
    if (!s.empty() && s.back() == '\n')
        s.pop_back();
    return s;
}

std::string renderFeedback(const protocol::EvalResult& result, size_t maxChars)
{
    if (result.ok())
        return {};
    std::string s;
    if (const auto& f = result.failure)
        s += std::string(protocol::failureKindName(f->kind)) + " in stage " + f->stage + ": " + f->message + "\n";
    if (const auto& c = result.compile) {
        int shown = 0;
        for (const auto& m : c->messages) {
            if (shown >= 12)
                break;
            s += "line " + std::to_string(static_cast<int>(m.line)) + ":" + std::to_string(static_cast<int>(m.column))
                + ": " + m.severity + ": " + m.text + "\n";
            ++shown;
        }
        if (!c->ok.value_or(true) && shown == 0) {
            std::string log = c->log.value_or(std::string());
            if (log.size() > 1500)
                log = "..." + log.substr(log.size() - 1500);
            if (!log.empty())
                s += "compiler output:\n" + log + "\n";
        }
    }
    if (result.checks) {
        int shown = 0;
        for (const auto& ch : *result.checks) {
            if (ch.ok || shown >= 4)
                continue;
            ++shown;
            // The failure kind and message are the result's own (above), not repeated per check.
            s += "check " + ch.shape + " seed " + std::to_string(ch.seed) + (ch.afterTiming ? " (after timing)" : "")
                + ": ";
            s += "max abs err " + format("%g", ch.maxAbsErr.value_or(0.0)) + ", max rel err "
                + format("%g", ch.maxRelErr.value_or(0.0)) + ", " + std::to_string(ch.mismatches) + " mismatches";
            if (!ch.firstMismatches.empty()) {
                s += "; first:";
                int n = 0;
                for (const auto& m : ch.firstMismatches) {
                    if (n++ >= 3)
                        break;
                    s += " " + m.output + "[" + std::to_string(m.index) + "]";
                    if (m.unwritten)
                        s += " never written";
                    else
                        s += " got " + format("%g", m.got.value_or(0.0)) + " want " + format("%g", m.want.value_or(0.0));
                    s += ";";
                }
            }
            s += "\n";
        }
    }
    if (!s.empty() && s.back() == '\n')
        s.pop_back();
    return truncateText(s, maxChars);
}

std::string renderMemoryEntry(const MemoryEntry& e, const std::string& lang, bool withCode)
{
    std::string s = "## #" + std::to_string(e.node) + " (" + e.relation + ") "
        + (e.sourceName.empty() ? "(no code)" : e.sourceName);
    if (!e.knobs.empty())
        s += " [" + knobsToString(e.knobs) + "]";
    if (!e.origin.empty())
        s += ", " + e.origin;
    s += "\n";
    if (e.status == "ok") {
        s += "Result: correct, " + format("%.2f", e.speedup) + "x over the baseline ("
            + formatTime(e.medianNs) + " median).";
        if (!e.bound.empty())
            s += " Diagnosis: " + e.bound + "-bound, " + format("%.0f", 100 * e.fracBandwidth)
                + "% of copy bandwidth, " + format("%.1f", 100 * e.fracCompute) + "% of FMA peak.";
        if (!e.evidence.empty())
            s += " " + e.evidence;
        s += "\n";
    } else if (e.status == "failed") {
        s += "Result: FAILED (" + e.failureKind + "): " + e.failureMessage + "\n";
        if (!e.feedback.empty())
            s += e.feedback + "\n";
    } else {
        s += "Result: not evaluated yet.\n";
    }
    if (withCode && !e.source.empty())
        s += "```" + lang + "\n" + e.source + (e.source.ends_with("\n") ? "" : "\n") + "```\n";
    return s;
}

PromptBuilder::PromptBuilder(PromptTemplates templates)
    : m_templates(std::move(templates))
{
}

std::map<std::string, std::string> PromptBuilder::commonValues(const PromptInputs& in) const
{
    const std::string lang = languageOfTarget(in.target);
    std::map<std::string, std::string> v;
    v["language"] = languageName(lang);
    v["lang"] = lang;
    v["target"] = in.target;
    v["cpu"] = in.target == "cpu" ? "1" : "";
    v["gpu"] = in.target == "cpu" ? "" : "1";
    v["problem"] = in.problem ? describeProblem(*in.problem) : std::string();
    std::string ref = in.problem ? in.problem->referenceSource : std::string();
    while (!ref.empty() && ref.back() == '\n')
        ref.pop_back();
    v["reference"] = ref;
    // A PyTorch reference (imported problems): the candidate takes its inputs in order, the
    // module's parameters among them, and writes its outputs in order.
    const bool torchRef = in.problem && in.problem->referenceLang == "python";
    v["reference_lang"] = torchRef ? "python" : "cpp";
    v["reference_note"] = torchRef
        ? "The reference is PyTorch: `run(inputs, params)` gets the inputs by name as tensors (the module's "
          "parameters among them) and returns the outputs in order. Your kernel gets the same tensors, in the order of "
          "the problem's inputs, through hone_args, and writes the outputs in order."
        : std::string();
    std::string abi = abiHeaderText();
    while (!abi.empty() && abi.back() == '\n')
        abi.pop_back();
    v["abi"] = abi;
    v["hardware"] = describeHardware(in.target, in.device, in.toolchain, in.ceilings);
    v["memory"] = renderMemory(in.memory, lang);
    v["operator"] = memoryOperatorName(in.memory.op);
    v["task"] = taskText(in.memory.op);
    v["knowledge"] = bullets(in.knowledge);
    std::vector<std::string> hints = in.hints;
    hints.insert(hints.end(), in.memory.hints.begin(), in.memory.hints.end()); // steering, this subtree
    v["hints"] = bullets(hints);
    std::string libs;
    if (in.problem)
        for (const auto& l : in.problem->allowedLibraries)
            libs += (libs.empty() ? "" : ", ") + l;
    v["allowed_libraries"] = libs.empty() ? "none" : libs;
    v["max_kb"] = std::to_string(in.maxSourceBytes / 1024);
    return v;
}

Prompt PromptBuilder::propose(const PromptInputs& in) const
{
    auto v = commonValues(in);
    v["operator"] = operatorText(in.memory.op);
    Prompt p;
    p.kind = "propose";
    p.system = renderTemplate(m_templates.system, v, m_templates.origin + "/system.md");
    p.user = renderTemplate(m_templates.propose, v, m_templates.origin + "/propose.md");
    return p;
}

Prompt PromptBuilder::repair(const PromptInputs& in) const
{
    if (in.memory.entries.empty())
        throw std::logic_error("PromptBuilder::repair: no failed node in the memory context");
    const std::string lang = languageOfTarget(in.target);
    const MemoryEntry& failed = in.memory.entries.front();
    auto v = commonValues(in);
    for (const char* k : { "failure", "failure_kind", "failed_code", "attempt", "max_attempts", "context" })
        v[k] = "";
    v["failure_kind"] = failed.failureKind;
    std::string failure = failed.failureKind + ": " + failed.failureMessage;
    if (!failed.feedback.empty() && failed.feedback.find(failed.failureMessage) == std::string::npos)
        failure += "\n" + failed.feedback;
    else if (!failed.feedback.empty())
        failure = failed.feedback;
    v["failure"] = failure;
    if (!failed.source.empty())
        v["failed_code"]
            = "```" + lang + "\n" + failed.source + (failed.source.ends_with("\n") ? "" : "\n") + "```";
    else if (!failed.reply.empty())
        v["failed_code"] = "Your reply was rejected before it could be compiled. It was:\n\n"
            + truncateText(failed.reply, 6000);
    else
        v["failed_code"] = "(the reply held no usable code)";
    v["attempt"] = std::to_string(in.attempt);
    v["max_attempts"] = std::to_string(in.maxAttempts);
    std::string context;
    for (size_t i = 1; i < in.memory.entries.size(); ++i)
        context += renderMemoryEntry(in.memory.entries[i], lang, false) + "\n";
    v["context"] = context;
    Prompt p;
    p.kind = "repair";
    p.system = renderTemplate(m_templates.system, v, m_templates.origin + "/system.md");
    p.user = renderTemplate(m_templates.repair, v, m_templates.origin + "/repair.md");
    return p;
}

} // namespace hone::core
