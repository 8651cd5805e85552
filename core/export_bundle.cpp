#include "core/export_bundle.h"
#include "core/export_torch.h"

#include "core/problem_spec.h"
#include "core/resources.h"
#include "core/store.h"

#include "hone_prompt_resources.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace hone::core {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> readText(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// `text` as one shell word.
std::string shellQuote(const std::string& text)
{
    const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_-+=.,/:@%").find(c) != std::string_view::npos;
    });
    if (plain)
        return text;
    std::string out = "'";
    for (char c : text)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

/// A C++ double literal that reads back as `v`.
std::string cDouble(double v)
{
    if (std::isnan(v))
        return "std::numeric_limits<double>::quiet_NaN()";
    if (std::isinf(v))
        return v > 0 ? "std::numeric_limits<double>::infinity()" : "-std::numeric_limits<double>::infinity()";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".eE") == std::string::npos)
        s += ".0";
    return s;
}

std::string knobValue(const nlohmann::json& v)
{
    return v.is_string() ? v.get<std::string>() : v.dump();
}

const nlohmann::json& member(const nlohmann::json& j, const char* key)
{
    static const nlohmann::json null;
    if (!j.is_object())
        return null;
    const auto it = j.find(key);
    return it == j.end() ? null : *it;
}

std::string langOf(const SourceRecord& src)
{
    if (!src.lang.empty())
        return src.lang;
    if (src.name.ends_with(".cu"))
        return "cuda";
    if (src.name.ends_with(".hip"))
        return "hip";
    return "cpp";
}

/// Everything an export reads from the store.
struct Context {
    SessionRecord session;
    NodeRecord node;
    SourceRecord source;
    std::optional<EvaluationRecord> evaluation;
    std::optional<NodeRecord> baselineNode;
    std::optional<SourceRecord> baselineSource;
    std::optional<EvaluationRecord> baselineEvaluation;
    std::vector<ApprovalRecord> reviews;
    std::optional<ReverificationRecord> reverification; // the node's last one
};

Context loadContext(const Store& store, int64_t sessionId, int64_t nodeId)
{
    Context c;
    auto session = store.session(sessionId);
    if (!session)
        throw ExportError("the store " + store.path().string() + " has no session " + std::to_string(sessionId)
            + "; `hone show` lists the sessions");
    c.session = *session;
    const auto nodes = store.nodes(sessionId);
    const auto n = std::find_if(nodes.begin(), nodes.end(), [&](const NodeRecord& r) { return r.id == nodeId; });
    if (n == nodes.end() || n->sourceHash.empty())
        throw ExportError("session " + std::to_string(sessionId) + " has no candidate node " + std::to_string(nodeId)
            + "; `hone show " + std::to_string(sessionId) + "` lists its nodes");
    c.node = *n;
    auto src = store.source(n->sourceHash);
    if (!src)
        throw ExportError("the store lacks the source of node " + std::to_string(sessionId) + "/"
            + std::to_string(nodeId) + " (hash " + n->sourceHash + ")");
    c.source = *src;
    // The baseline is the first seed, as the engine adds it (docs/ARCHITECTURE.md, the loop).
    for (const auto& r : nodes)
        if (r.origin == "seed" && (!c.baselineNode || r.id < c.baselineNode->id))
            c.baselineNode = r;
    if (c.baselineNode)
        c.baselineSource = store.source(c.baselineNode->sourceHash);
    for (auto& e : store.evaluations(sessionId)) {
        if (e.nodeId == nodeId)
            c.evaluation = e;
        if (c.baselineNode && e.nodeId == c.baselineNode->id)
            c.baselineEvaluation = e;
    }
    for (auto& a : store.approvals(sessionId))
        if (a.nodeId == nodeId)
            c.reviews.push_back(std::move(a));
    for (auto& r : store.reverifications(sessionId))
        if (r.nodeId == nodeId)
            c.reverification = std::move(r);
    return c;
}

nlohmann::json evaluationJson(const EvaluationRecord& e)
{
    nlohmann::json j = {{"status", e.status}, {"speedup", e.speedup}, {"median_ns", e.medianNs},
        {"bound", e.bound}, {"device", e.device}, {"from_cache", e.fromCache}, {"evaluated_at", e.createdAt},
        {"result", e.result}};
    if (e.status != "ok")
        j["failure"] = {{"kind", e.failureKind}, {"message", e.failureMessage}};
    if (const auto checks = e.evalResult().checks) {
        j["checks_passed"] = std::count_if(checks->begin(), checks->end(), [](const auto& c) { return c.ok; });
        j["checks_total"] = checks->size();
    }
    return j;
}

nlohmann::json evidenceOf(const Context& c)
{
    nlohmann::json j = {{"format", "hone-evidence-1"}, {"session", c.session.id}, {"node", c.node.id},
        {"problem", {{"name", c.session.problemName}, {"dir", c.session.problemDir}, {"hash", c.session.problemHash}}},
        {"candidate", {{"source", c.source.name}, {"source_sha256", c.source.hash}, {"lang", langOf(c.source)},
            {"knobs", c.node.knobs}, {"flags", c.node.flags}, {"origin", c.node.origin}, {"parent", c.node.parentId}}},
        {"target", c.session.target}};
    j["evaluation"] = c.evaluation ? evaluationJson(*c.evaluation) : nlohmann::json();
    // null: never re-verified (only a session's best is).
    j["reverification"] = c.reverification
        ? nlohmann::json {{"status", c.reverification->status}, {"failure_kind", c.reverification->failureKind},
              {"failure_message", c.reverification->failureMessage}, {"median_ns", c.reverification->medianNs},
              {"speedup", c.reverification->speedup}, {"seeds", c.reverification->config},
              {"at", c.reverification->createdAt}}
        : nlohmann::json();
    if (c.baselineNode) {
        nlohmann::json b = {{"node", c.baselineNode->id}, {"knobs", c.baselineNode->knobs},
            {"flags", c.baselineNode->flags}};
        b["source"] = c.baselineSource ? c.baselineSource->name : std::string();
        b["evaluation"] = c.baselineEvaluation ? evaluationJson(*c.baselineEvaluation) : nlohmann::json();
        j["baseline"] = b;
    } else {
        j["baseline"] = nullptr;
    }

    const protocol::EvalResult result = c.evaluation ? c.evaluation->evalResult() : protocol::EvalResult();
    nlohmann::json speedup = nullptr;
    if (c.evaluation && c.evaluation->status == "ok") {
        // The interval is of the timed shape's paired ratios, so the median beside it is that
        // shape's; over a shape set the stored speedup is the weighted objective, kept apart.
        auto interval = [](const std::optional<protocol::Timing>& t) {
            if (t)
                return speedupInterval(*t);
            SpeedupInterval none;
            none.why = "not timed";
            return none;
        };
        const SpeedupInterval ci = interval(result.timing);
        const double median = result.timing && result.timing->speedup ? *result.timing->speedup : c.evaluation->speedup;
        speedup = {{"median", median}, {"method",
            "median of the paired ratios baseline/candidate (interleaved samples); order-statistic (sign-test) "
            "interval of that median"}};
        if (result.objective) {
            speedup["objective"] = result.objective->value;
            speedup["objective_method"] = "weighted geometric mean of the per-shape speedups (docs/SEARCH.md)";
            speedup["shape"] = result.timing ? result.timing->shape.value_or(std::string()) : std::string();
            nlohmann::json perShape = nlohmann::json::array();
            for (const auto& sh : result.shapeResults()) {
                const SpeedupInterval si = interval(sh.timing);
                perShape.push_back({{"shape", sh.label}, {"speedup", sh.speedup.value_or(0.0)},
                    {"ci95", si.valid ? nlohmann::json::array({si.low, si.high}) : nlohmann::json()}});
            }
            speedup["per_shape"] = perShape;
        }
        if (ci.valid) {
            speedup["ci95"] = {ci.low, ci.high};
            speedup["coverage"] = ci.coverage;
            speedup["pairs"] = ci.pairs;
        } else {
            speedup["ci95"] = nullptr;
            speedup["why_no_interval"] = ci.why;
        }
    }
    j["speedup"] = speedup;

    std::string device = c.evaluation ? c.evaluation->device : std::string();
    if (device.empty())
        device = result.device();
    j["device"] = device;
    const auto& env = result.environment;
    j["toolchain"] = {{"compiler", env ? env->compiler.value_or(std::string()) : ""}, {"backend", result.backend()},
        {"flags", env ? env->flags.value_or(std::string()) : ""},
        {"compile_command", result.compile ? result.compile->command.value_or(std::string()) : ""}};

    nlohmann::json reviews = nlohmann::json::array();
    for (const auto& r : c.reviews)
        reviews.push_back({{"decision", r.decision}, {"reviewer", r.reviewer}, {"note", r.note},
            {"export_dir", r.exportDir}, {"justification", r.justification}, {"at", r.createdAt}});
    j["reviews"] = reviews;
    j["review"] = nullptr;
    return j;
}

/// Where hone/kernel.h comes from: the option, the environment, the install or source tree,
/// else the copy compiled into hone_core.
std::pair<std::string, std::string> kernelHeader(const ExportOptions& o)
{
    const fs::path rel = fs::path("include") / "hone" / "kernel.h";
    if (!o.resourcesDir.empty()) {
        if (auto text = readText(o.resourcesDir / rel))
            return {*text, (o.resourcesDir / rel).string()};
        throw ExportError("the resources folder " + o.resourcesDir.string() + " has no include/hone/kernel.h; "
            "pass Hone's resources folder (resources/ of the source tree or share/hone of an install)");
    }
    for (const auto& dir : resourceDirs())
        if (auto text = readText(dir / rel))
            return {*text, (dir / rel).string()};
    return {std::string(embedded::kAbiHeader), "the copy built into hone"};
}

/// The worker's default tolerance per dtype (backends/worker/checks.cpp), for outputs whose
/// dtype problem.toml leaves out.
Tolerance toleranceFor(const ProblemSpec& spec, DType t)
{
    if (auto it = spec.tolerance.find(t); it != spec.tolerance.end())
        return it->second;
    switch (t) {
    case HONE_F64:
        return {1e-10, 1e-8};
    case HONE_F32:
        return {1e-5, 1e-4};
    case HONE_F16:
        return {1e-3, 1e-2};
    case HONE_BF16:
        return {1e-2, 2e-2};
    default:
        return {0, 0};
    }
}

const char* honeDtype(const std::string& name)
{
    return dtypeEnumName(dtypeFromName(name).value_or(HONE_F32));
}

double initNumber(const nlohmann::json& init, const char* key, double fallback)
{
    const auto& v = member(init, key);
    return v.is_number() ? v.get<double>() : fallback;
}

/// The C++ table of check shapes the standalone test runs.
std::string shapeTable(const ProblemSpec& spec, const std::vector<int>& seeds)
{
    const nlohmann::json problem = resolveProblem(spec);
    std::ostringstream s;
    s << "const char* const kProblem = " << cString(spec.name) << ";\n";
    s << "const std::vector<uint64_t> kSeeds = {";
    for (size_t i = 0; i < seeds.size(); ++i)
        s << (i ? ", " : "") << seeds[i];
    s << "};\n";
    s << "const std::vector<ShapeDef> kShapes = {\n";
    for (const auto& shape : problem["check"]) {
        s << "    {" << cString(shape["label"].get<std::string>()) << ",\n        {";
        bool first = true;
        for (const auto& t : shape["inputs"]) {
            const auto& init = t["init"];
            const std::string dist = init.value("dist", std::string("normal"));
            std::string kind = "kNormal";
            double a = initNumber(init, "mean", 0.0), b = initNumber(init, "std", 1.0);
            if (dist == "uniform") {
                kind = "kUniform";
                a = initNumber(init, "low", 0.0);
                b = initNumber(init, "high", 1.0);
            } else if (dist == "randint") {
                kind = "kRandint";
                a = initNumber(init, "low", 0.0);
                b = initNumber(init, "high", 0.0);
            } else if (dist == "offsets") {
                kind = "kOffsets";
                a = initNumber(init, "total", 0.0);
                b = 0;
            }
            s << (first ? "" : ",\n         ") << "{" << cString(t["name"].get<std::string>()) << ", "
              << honeDtype(t["dtype"].get<std::string>()) << ", {";
            for (size_t d = 0; d < t["shape"].size(); ++d)
                s << (d ? ", " : "") << t["shape"][d].get<int64_t>();
            s << "}, " << kind << ", " << cDouble(a) << ", " << cDouble(b) << ", "
              << (init.value("sorted", false) ? "true" : "false") << ", 0.0, 0.0}";
            first = false;
        }
        s << "},\n        {";
        first = true;
        for (const auto& t : shape["outputs"]) {
            const std::string dtype = t["dtype"].get<std::string>();
            const Tolerance tol = toleranceFor(spec, dtypeFromName(dtype).value_or(HONE_F32));
            s << (first ? "" : ",\n         ") << "{" << cString(t["name"].get<std::string>()) << ", "
              << honeDtype(dtype) << ", {";
            for (size_t d = 0; d < t["shape"].size(); ++d)
                s << (d ? ", " : "") << t["shape"][d].get<int64_t>();
            s << "}, kNormal, 0.0, 0.0, false, " << cDouble(tol.atol) << ", " << cDouble(tol.rtol) << "}";
            first = false;
        }
        // The problem's params, then the shape's symbols: the order hone-worker passes them in.
        s << "},\n        {";
        first = true;
        for (const auto& [name, value] : spec.params) {
            s << (first ? "" : ", ") << "{" << cString(name) << ", " << cDouble(value) << "}";
            first = false;
        }
        for (auto it = shape["symbols"].begin(); it != shape["symbols"].end(); ++it) {
            s << (first ? "" : ", ") << "{" << cString(it.key()) << ", " << cDouble(it->get<double>()) << "}";
            first = false;
        }
        s << "}},\n";
    }
    s << "};\n";
    return s.str();
}

/// "90a" from "-gencode=arch=compute_90a,code=sm_90a" in the flags the worker used; 90a when
/// the evaluation did not record one.
std::string cudaArch(const std::string& flags)
{
    const std::string key = "arch=compute_";
    if (const size_t at = flags.find(key); at != std::string::npos) {
        const size_t end = flags.find_first_of(", ", at);
        const std::string arch = flags.substr(at + key.size(), end == std::string::npos ? end : end - at - key.size());
        if (!arch.empty())
            return arch;
    }
    return "90a";
}

} // namespace

SpeedupInterval pairedSpeedupInterval(
    const std::vector<double>& candidateNs, const std::vector<double>& baselineNs, double confidence)
{
    SpeedupInterval out;
    if (candidateNs.empty() || baselineNs.empty()) {
        out.why = "no timing samples";
        return out;
    }
    if (candidateNs.size() != baselineNs.size()) {
        out.why = "the candidate has " + std::to_string(candidateNs.size()) + " samples and the baseline "
            + std::to_string(baselineNs.size()) + ": not paired";
        return out;
    }
    std::vector<double> ratios;
    for (size_t i = 0; i < candidateNs.size(); ++i)
        if (candidateNs[i] > 0 && baselineNs[i] > 0) // as the worker: a failed sample is no pair
            ratios.push_back(baselineNs[i] / candidateNs[i]);
    if (ratios.empty()) {
        out.why = "no pair of positive samples";
        return out;
    }
    std::sort(ratios.begin(), ratios.end());
    const size_t n = ratios.size();
    const double pos = 0.5 * static_cast<double>(n - 1);
    const auto lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, n - 1);
    out.median = ratios[lo] + (ratios[hi] - ratios[lo]) * (pos - static_cast<double>(lo));
    // The largest k with P(B <= k-1) <= alpha/2, B ~ Binomial(n, 1/2): [r_(k), r_(n+1-k)]
    // covers the median with probability 1 - 2 P(B <= k-1).
    const double alpha = 1.0 - std::clamp(confidence, 0.0, 1.0);
    const double nd = static_cast<double>(n);
    auto pmf = [&](size_t i) {
        const double id = static_cast<double>(i);
        return std::exp(std::lgamma(nd + 1) - std::lgamma(id + 1) - std::lgamma(nd - id + 1) - nd * std::log(2.0));
    };
    size_t k = 1;
    double tail = pmf(0); // P(B <= k-1)
    double tailAtK = tail;
    while (k < n / 2 + 1) {
        const double next = tail + pmf(k);
        if (next > alpha / 2)
            break;
        tail = next;
        ++k;
        tailAtK = tail;
    }
    out.low = ratios[k - 1];
    out.high = ratios[n - k];
    out.coverage = std::max(0.0, 1.0 - 2.0 * tailAtK);
    out.pairs = static_cast<int>(n);
    out.valid = true;
    return out;
}

SpeedupInterval speedupInterval(const protocol::Timing& timing)
{
    if (!timing.baseline) {
        SpeedupInterval out;
        out.why = "the baseline was not timed with it";
        return out;
    }
    return pairedSpeedupInterval(timing.stats.samplesNs, timing.baseline->samplesNs);
}

std::string cString(const std::string& text)
{
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\')
            out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out + "\"";
}

void writeExportFile(const std::filesystem::path& dir, const std::string& rel, const std::string& text, bool executable)
{
    const fs::path path = dir / rel;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out)
        throw ExportError("cannot write " + path.string() + " (is the folder writable and the disk not full?)");
    if (executable)
        fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
}

std::string kernelHeaderText(const ExportOptions& options)
{
    return kernelHeader(options).first;
}

nlohmann::json buildEvidence(const Store& store, int64_t sessionId, int64_t nodeId)
{
    return evidenceOf(loadContext(store, sessionId, nodeId));
}

ExportResult exportBundle(const Store& store, int64_t sessionId, int64_t nodeId, const std::filesystem::path& dir,
    const ExportOptions& options)
{
    const Context c = loadContext(store, sessionId, nodeId);
    if (c.reverification && c.reverification->status == "failed" && !options.allowFailedReverification)
        throw ExportError("node " + std::to_string(sessionId) + "/" + std::to_string(nodeId)
            + " failed its re-verification in a fresh worker with new seeds (" + c.reverification->failureKind + ": "
            + c.reverification->failureMessage
            + "); its search result cannot be trusted, so it is not exported (hone export --allow-failed-reverify "
              "writes it anyway, for inspection)");
    const auto [header, headerFrom] = kernelHeader(options);
    ExportResult r;
    r.dir = dir;
    r.lang = langOf(c.source);
    r.kernelHeaderFrom = headerFrom;
    std::error_code ec;
    fs::create_directories(dir / "hone", ec);
    if (ec)
        throw ExportError("cannot create the export folder " + (dir / "hone").string() + ": " + ec.message());
    auto write = [&](const std::string& rel, const std::string& text, bool executable = false) {
        writeExportFile(dir, rel, text, executable);
        r.files.push_back(rel);
    };

    // The candidate keeps its name unless that would clash with a file of the bundle.
    std::string srcName = fs::path(c.source.name).filename().string();
    if (srcName.empty())
        srcName = r.lang == "cuda" ? "candidate.cu" : "candidate.cpp";
    for (const char* reserved : {"reference.cpp", "test_candidate.cpp", "test_candidate.cu", "build.sh",
             "run_test.sh", "knobs.json", "evidence.json", "problem.toml"})
        if (srcName == reserved)
            srcName = "candidate_" + srcName;
    write(srcName, c.source.text);
    write("knobs.json", c.node.knobs.dump(2) + "\n");
    write("hone/kernel.h", header);

    if (c.reverification && c.reverification->status == "failed")
        r.warnings.push_back("node " + std::to_string(nodeId) + " FAILED its re-verification ("
            + c.reverification->failureKind + "): exported for inspection only");
    if (!c.evaluation)
        r.warnings.push_back("node " + std::to_string(nodeId) + " was never evaluated: evidence.json has no measurements");
    else if (c.evaluation->status != "ok")
        r.warnings.push_back("node " + std::to_string(nodeId) + " failed its evaluation (" + c.evaluation->failureKind
            + "): the standalone test is expected to fail");

    // The problem, when its folder is still there.
    std::optional<ProblemSpec> spec;
    const fs::path problemDir = c.session.problemDir;
    if (problemDir.empty() || !fs::exists(problemDir / "problem.toml", ec)) {
        r.warnings.push_back("the session's problem folder " + (problemDir.empty() ? std::string("(none recorded)") : problemDir.string())
            + " no longer exists: the bundle has no reference.cpp, problem.toml or standalone test");
    } else {
        try {
            spec = loadProblem(problemDir);
        } catch (const std::exception& e) {
            r.warnings.push_back(std::string("the problem folder cannot be read (") + e.what()
                + "): the bundle has no reference.cpp, problem.toml or standalone test");
        }
    }
    if (spec) {
        if (!c.session.problemHash.empty() && spec->contentHash != c.session.problemHash)
            r.warnings.push_back("the problem folder " + problemDir.string()
                + " changed since the session ran: reference.cpp, problem.toml and the test are today's");
        write("problem.toml", readText(problemDir / "problem.toml").value_or(""));
        write(spec->referenceFile(), spec->referenceSource);
        if (spec->referenceLang == "python")
            r.warnings.push_back("the problem's reference is PyTorch (reference.py): the standalone test, which "
                                 "compiles a C++ reference.cpp, cannot run from this bundle");
    }

    // build.sh: the candidate as a shared object, with the knobs and flags it was measured with.
    std::string defines;
    for (auto it = c.node.knobs.begin(); it != c.node.knobs.end(); ++it)
        defines += " " + shellQuote("-D" + it.key() + "=" + knobValue(*it));
    const std::string flags = c.node.flags.empty() ? "" : " " + c.node.flags;
    const protocol::EvalResult result = c.evaluation ? c.evaluation->evalResult() : protocol::EvalResult();
    const std::string measuredFlags = result.environment ? result.environment->flags.value_or(std::string()) : "";
    std::ostringstream build;
    build << "#!/bin/sh\n# Node " << nodeId << " of session " << sessionId << " (" << c.source.name << ", "
          << c.session.problemName << "): builds the candidate as a shared object that exports hone_run,\n"
          << "# with the knobs (-D) and flags it was measured with. Usage: ./build.sh [OUTPUT.so]\n";
    if (!measuredFlags.empty())
        build << "# hone-worker compiled it with: " << measuredFlags << "\n";
    build << "set -e\nHERE=$(cd \"$(dirname \"$0\")\" && pwd)\nOUT=\"${1:-$HERE/candidate.so}\"\n";
    std::string libs;
    if (r.lang == "cuda") {
        const std::string arch = cudaArch(measuredFlags);
        std::vector<std::string> allowed = spec ? spec->allowedLibraries : std::vector<std::string>();
        if (!spec) // the libraries the worker linked
            for (const char* l : {"cublasLt", "cublas"})
                if (measuredFlags.find(std::string("-l") + l + " ") != std::string::npos
                    || measuredFlags.ends_with(std::string("-l") + l))
                    allowed.push_back(l);
        for (const auto& l : allowed)
            if (l == "cublasLt" || l == "cublas")
                libs += " -l" + l;
        build << "# Architecture: sm_" << arch << " (compute_" << arch << "), the GPU it was measured on"
              << (c.evaluation && !c.evaluation->device.empty() ? " (" + c.evaluation->device + ")" : std::string())
              << ";\n# change both numbers of -gencode for another GPU.\n"
              << "${NVCC:-nvcc} -std=c++17 -O3 -gencode=arch=compute_" << arch << ",code=sm_" << arch
              << " -shared -Xcompiler -fPIC -I\"$HERE\"" << defines << flags << libs << " -o \"$OUT\" \"$HERE/"
              << srcName << "\"\n";
    } else if (r.lang == "hip") {
        build << "${HIPCC:-hipcc} -std=c++17 -O3 -shared -fPIC -I\"$HERE\"" << defines << flags << " -o \"$OUT\" \"$HERE/"
              << srcName << "\"\n";
        r.warnings.push_back("HIP candidates get no standalone test yet");
    } else {
        build << "${CXX:-c++} -std=c++17 -O3 -march=native -fopenmp -shared -fPIC -I\"$HERE\"" << defines << flags
              << " -o \"$OUT\" \"$HERE/" << srcName << "\"\n";
    }
    write("build.sh", build.str(), true);

    // The standalone test (resources/harness/test_candidate.cpp, embedded as kHarnessSource):
    // reference and candidate as two shared objects, the check shapes, the session's check
    // seeds, the problem's tolerance (shapes.inc); inputs drawn by hone-worker's generator
    // (hone/draws.h), outputs compared as the worker compares them (checks.cpp).
    if (spec && (r.lang == "cpp" || r.lang == "cuda")) {
        std::vector<int> seeds = {1, 2, 3};
        if (const auto& s = member(c.session.config, "check_seeds"); s.is_array() && !s.empty()) {
            seeds.clear();
            for (const auto& v : s)
                if (v.is_number_integer())
                    seeds.push_back(v.get<int>());
        }
        const bool cuda = r.lang == "cuda";
        const std::string testName = cuda ? "test_candidate.cu" : "test_candidate.cpp";
        std::string text = "// Standalone check of node " + std::to_string(nodeId) + " of session "
            + std::to_string(sessionId) + " (" + c.source.name + ") against the reference of problem '" + spec->name
            + "',\n// generated by `hone export`. It needs only a C++ compiler" + (cuda ? " and nvcc" : "")
            + " (run_test.sh builds and runs it). Inputs are drawn as hone-worker\n"
              "// draws them, on the problem's small shapes and the session's check seeds; outputs must satisfy\n"
              "// |got - want| <= atol + rtol * |want| with the problem's tolerance per output dtype.\n"
              "#define HONE_TEST_CUDA "
            + std::string(cuda ? "1" : "0") + "\n";
        text += std::string(embedded::kHarnessSource);
        write(testName, text);
        write("shapes.inc", "// The check shapes, tolerances and seeds of " + testName + ", written by `hone export`.\n"
                + shapeTable(*spec, seeds));
        write("hone/draws.h", std::string(embedded::kDrawsHeader));

        std::string seedList;
        for (int s : seeds)
            seedList += (seedList.empty() ? "" : " ") + std::to_string(s);
        std::ostringstream run;
        run << "#!/bin/sh\n# Builds the problem's reference and the candidate as two shared objects and checks the candidate\n"
            << "# against the reference on the problem's small shapes (seeds " << seedList << ").\n"
            << "# Needs a C++ compiler" << (cuda ? ", nvcc and an sm_" + cudaArch(measuredFlags) + " GPU to run" : std::string())
            << "; nothing of Hone. Usage: ./run_test.sh [--build-only]\n"
            << "set -e\nHERE=$(cd \"$(dirname \"$0\")\" && pwd)\nB=\"$HERE/build\"\nmkdir -p \"$B\"\n"
            << "${CXX:-c++} -std=c++17 -O3 -march=native -fopenmp -shared -fPIC -I\"$HERE\" -o \"$B/reference.so\" \"$HERE/reference.cpp\"\n"
            << "\"$HERE/build.sh\" \"$B/candidate.so\"\n";
        if (cuda)
            run << "${NVCC:-nvcc} -std=c++17 -O2 -I\"$HERE\" -o \"$B/test_candidate\" \"$HERE/test_candidate.cu\" -ldl\n";
        else
            run << "${CXX:-c++} -std=c++17 -O2 -I\"$HERE\" -o \"$B/test_candidate\" \"$HERE/test_candidate.cpp\" -ldl\n";
        run << "if [ \"$1\" = \"--build-only\" ]; then\n    echo \"built $B/test_candidate\"\n    exit 0\nfi\n"
            << "exec \"$B/test_candidate\" \"$B/reference.so\" \"$B/candidate.so\"\n";
        write("run_test.sh", run.str(), true);
        r.hasTest = true;
    }

    if (options.torch) {
        if (!spec)
            throw ExportError("--torch needs the session's problem folder (" + problemDir.string()
                + "), for the op's schema and the reference to test against; it is gone or unreadable");
        TorchKernel kernel;
        kernel.sourceName = c.source.name;
        kernel.sourceText = c.source.text;
        kernel.knobs = c.node.knobs.is_object() ? c.node.knobs : nlohmann::json::object();
        kernel.flags = c.node.flags;
        kernel.label = "node " + std::to_string(sessionId) + "/" + std::to_string(nodeId);
        const TorchPackage package = writeTorchPackage(*spec, {kernel}, r.lang, header, dir / "torch", cudaArch(measuredFlags));
        for (const auto& f : package.files)
            r.files.push_back("torch/" + f);
        for (const auto& w : package.warnings)
            r.warnings.push_back(w);
        r.torchSchema = "hone::" + package.signature.schema;
    }

    r.evidence = evidenceOf(c);
    r.evidence["review"] = options.review.is_null() ? nlohmann::json() : options.review;
    r.evidence["exported_at"] = nowIso();
    r.evidence["export"] = {{"dir", fs::absolute(dir).string()}, {"kernel_header_from", headerFrom},
        {"standalone_test", r.hasTest}, {"warnings", r.warnings}};
    write("evidence.json", r.evidence.dump(2) + "\n");
    return r;
}

} // namespace hone::core
