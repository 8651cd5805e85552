// A session's per-shape portfolio: the fastest candidate on each bench shape, exported as one
// source whose hone_run dispatches by shape, and optionally as a PyTorch package.
#include "core/export_portfolio.h"

#include "core/knobs.h"
#include "core/problem_spec.h"
#include "core/store.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace hone::core {
namespace {

namespace fs = std::filesystem;

std::string knobText(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

/// One source file holding every configuration (each in its own namespace, its knobs defined
/// around it) and an `hone_run` that dispatches by shape: a candidate like any other, so
/// `hone eval` checks it through the whole harness.
std::string amalgamation(const std::vector<std::string>& symbols, const std::vector<TorchKernel>& kernels,
    const std::string& header)
{
    std::ostringstream o;
    o << "// A per-shape portfolio exported by Hone: " << kernels.size()
      << " configuration(s) and an hone_run that calls the one chosen for the nearest shape of the table\n"
         "// (log distance over the shape symbols), falling back to the others when one refuses a shape.\n"
         "#include <hone/kernel.h>\n\n#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <vector>\n\n";
    (void)header;
    for (size_t i = 0; i < kernels.size(); ++i) {
        const TorchKernel& k = kernels[i];
        o << "// ---- configuration " << i << ": " << k.label << " (" << k.sourceName << ")\n";
        std::istringstream lines(k.sourceText);
        std::string body;
        for (std::string line; std::getline(lines, line);) {
            const size_t at = line.find_first_not_of(" \t");
            if (at != std::string::npos && line.compare(at, 8, "#include") == 0)
                o << line.substr(at) << "\n"; // before the namespace; guarded headers stay once
            else if (const size_t mark = line.find("// hone:"); mark != std::string::npos)
                body += line.replace(mark, 8, "// (was hone:) ") + "\n"; // the knobs are fixed here
            else
                body += line + "\n";
        }
        for (auto it = k.knobs.begin(); it != k.knobs.end(); ++it)
            o << "#define " << it.key() << " " << knobText(*it) << "\n";
        o << "#define hone_run hone_run_k" << i << "\nnamespace hone_k" << i << " {\n" << body << "} // namespace hone_k"
          << i << "\n#undef hone_run\n";
        for (auto it = k.knobs.begin(); it != k.knobs.end(); ++it)
            o << "#undef " << it.key() << "\n";
        o << "\n";
    }
    o << "// ---- the dispatcher\n" << dispatchSource(symbols, kernels);
    o << "} // namespace\n\n"
         "extern \"C\" int hone_run(const hone_args* args)\n{\n"
         "    int64_t symbols[kNumSymbols > 0 ? kNumSymbols : 1] = { 0 };\n"
         "    for (int i = 0; i < kNumSymbols; ++i)\n"
         "        symbols[i] = (int64_t)hone_param_or(args, kSymbolNames[i], -1);\n"
         "    int rc = 1;\n"
         "    for (int c : order(symbols)) {\n"
         "        rc = kConfigs[c].run(args);\n"
         "        if (rc == 0)\n            return 0;\n"
         "    }\n    return rc;\n}\n";
    return o.str();
}

} // namespace

Portfolio choosePortfolio(const Store& store, int64_t sessionId)
{
    const auto session = store.session(sessionId);
    if (!session)
        throw ExportError("the store " + store.path().string() + " has no session " + std::to_string(sessionId)
            + "; `hone show` lists the sessions");
    std::error_code ec;
    if (session->problemDir.empty() || !fs::exists(fs::path(session->problemDir) / "problem.toml", ec))
        throw ExportError("a portfolio needs the session's problem folder (" + session->problemDir
            + ") for its shape set; it is gone");
    const ProblemSpec spec = loadProblem(session->problemDir);
    const auto nodes = store.nodes(sessionId);
    std::map<int64_t, const NodeRecord*> byId;
    for (const auto& n : nodes)
        byId[n.id] = &n;
    std::set<int64_t> failedReverify;
    for (const auto& r : store.reverifications(sessionId))
        if (r.status == "failed")
            failedReverify.insert(r.nodeId);
        else
            failedReverify.erase(r.nodeId);
    std::map<int64_t, EvaluationRecord> last;
    for (auto& e : store.evaluations(sessionId))
        last[e.nodeId] = std::move(e);

    // The language of the session's best node: configurations must link into one object.
    Portfolio p;
    double bestSpeedup = -1;
    std::map<int64_t, std::string> names;
    for (const auto& [id, e] : last) {
        const auto n = byId.find(id);
        if (n == byId.end() || n->second->sourceHash.empty())
            continue;
        const auto src = store.source(n->second->sourceHash);
        if (!src)
            continue;
        names[id] = src->name;
        if (e.status == "ok" && !failedReverify.count(id) && e.speedup > bestSpeedup) {
            bestSpeedup = e.speedup;
            p.lang = langOfFile(src->name);
        }
    }
    if (p.lang.empty())
        throw ExportError("session " + std::to_string(sessionId) + " has no candidate that passed its checks");

    std::map<size_t, PortfolioChoice> best; // bench index -> fastest
    int skipped = 0;
    for (const auto& [id, e] : last) {
        if (e.status != "ok" || !names.count(id) || langOfFile(names[id]) != p.lang || failedReverify.count(id)) {
            skipped += e.status == "ok" ? 1 : 0;
            continue;
        }
        const protocol::EvalResult result = e.evalResult();
        for (const auto& s : result.shapeResults()) {
            const size_t index = s.index;
            const double ns = s.medianNs();
            if (ns <= 0 || index >= spec.benchShapes.size())
                continue;
            auto it = best.find(index);
            if (it == best.end() || ns < it->second.medianNs) {
                PortfolioChoice c;
                c.benchIndex = index;
                c.shape = s.label.empty() ? "bench[" + std::to_string(index) + "]" : s.label;
                c.symbols = spec.benchShapes[index];
                c.nodeId = id;
                c.medianNs = ns;
                c.speedup = s.speedup.value_or(0.0);
                best[index] = c;
            }
        }
    }
    if (best.size() < 2)
        throw ExportError("session " + std::to_string(sessionId) + " has per-shape timings for " + std::to_string(best.size())
            + " bench shape(s); a portfolio needs a problem whose bench set has two or more shapes, timed per shape "
              "(docs/SEARCH.md, shape sets). `hone export SESSION/NODE` exports one node");
    if (skipped)
        p.warnings.push_back(std::to_string(skipped) + " passing node(s) in another language than the best (" + p.lang
            + ") or failed re-verification were left out");
    for (size_t i = 0; i < spec.benchShapes.size(); ++i)
        if (!best.count(i))
            p.warnings.push_back("no candidate timed bench[" + std::to_string(i)
                + "]: calls of that shape go to the configuration of the nearest shape");

    // One configuration per distinct node, with the shapes it won.
    std::map<int64_t, size_t> configOf;
    for (auto& [index, c] : best) {
        if (!configOf.count(c.nodeId)) {
            const NodeRecord& n = *byId[c.nodeId];
            const auto src = store.source(n.sourceHash);
            TorchKernel k;
            k.sourceName = src->name;
            k.sourceText = src->text;
            k.knobs = n.knobs.is_object() ? n.knobs : nlohmann::json::object();
            k.flags = n.flags;
            k.label = "node " + std::to_string(sessionId) + "/" + std::to_string(c.nodeId);
            configOf[c.nodeId] = p.kernels.size();
            p.kernels.push_back(std::move(k));
            p.kernelNodes.push_back(c.nodeId);
        }
        c.config = configOf[c.nodeId];
        p.kernels[c.config].shapes.push_back(c.symbols);
        p.choices.push_back(c);
    }
    return p;
}

ExportResult exportPortfolio(const Store& store, int64_t sessionId, const fs::path& dir, const ExportOptions& options)
{
    const Portfolio p = choosePortfolio(store, sessionId);
    const auto session = store.session(sessionId);
    const ProblemSpec spec = loadProblem(session->problemDir);
    const TorchSignature sig = torchSignature(spec);
    std::vector<std::string> symbols;
    for (const TorchSymbol& s : sig.symbols)
        symbols.push_back(s.name);
    const std::string header = kernelHeaderText(options);

    ExportResult r;
    r.dir = dir;
    r.lang = p.lang;
    r.warnings = p.warnings;
    std::error_code ec;
    fs::create_directories(dir / "hone", ec);
    if (ec)
        throw ExportError("cannot create the export folder " + (dir / "hone").string() + ": " + ec.message());
    auto write = [&](const std::string& rel, const std::string& text, bool executable = false) {
        writeExportFile(dir, rel, text, executable);
        r.files.push_back(rel);
    };
    const bool cuda = p.lang == "cuda";
    const std::string source = cuda ? "portfolio.cu" : "portfolio.cpp";
    write(source, amalgamation(symbols, p.kernels, header));
    write("hone/kernel.h", header);
    std::set<std::string> flagSet;
    for (const auto& k : p.kernels)
        if (!k.flags.empty())
            flagSet.insert(k.flags);
    std::string flags;
    for (const auto& f : flagSet)
        flags += " " + f;
    std::ostringstream build;
    build << "#!/bin/sh\n# The portfolio of session " << sessionId << " (" << spec.name
          << ") as one shared object exporting hone_run. Usage: ./build.sh [OUTPUT.so]\n"
          << "set -e\nHERE=$(cd \"$(dirname \"$0\")\" && pwd)\nOUT=\"${1:-$HERE/portfolio.so}\"\n";
    if (cuda) {
        std::string libs;
        for (const auto& l : spec.allowedLibraries)
            if (l == "cublasLt" || l == "cublas")
                libs += " -l" + l;
        build << "${NVCC:-nvcc} -std=c++17 -O3 -gencode=arch=compute_${HONE_ARCH:-90a},code=sm_${HONE_ARCH:-90a} -shared "
                 "-Xcompiler -fPIC -I\"$HERE\""
              << flags << libs << " -o \"$OUT\" \"$HERE/" << source << "\"\n";
    } else {
        build << "${CXX:-c++} -std=c++17 -O3 -march=native -fopenmp -shared -fPIC -I\"$HERE\"" << flags << " -o \"$OUT\" \"$HERE/"
              << source << "\"\n";
    }
    write("build.sh", build.str(), true);

    nlohmann::json table = nlohmann::json::array();
    for (const auto& c : p.choices)
        table.push_back({ { "shape", c.shape }, { "symbols", c.symbols }, { "node", c.nodeId }, { "config", c.config },
            { "median_ns", c.medianNs }, { "speedup", c.speedup } });
    nlohmann::json configs = nlohmann::json::array();
    for (size_t i = 0; i < p.kernels.size(); ++i)
        configs.push_back({ { "config", i }, { "node", p.kernelNodes[i] }, { "source", p.kernels[i].sourceName },
            { "knobs", p.kernels[i].knobs }, { "flags", p.kernels[i].flags } });
    r.evidence = { { "session", sessionId }, { "problem", spec.name }, { "lang", p.lang }, { "symbols", symbols },
        { "shapes", table }, { "configurations", configs }, { "warnings", r.warnings } };
    write("portfolio.json", r.evidence.dump(2) + "\n");

    if (options.torch) {
        const TorchPackage package = writeTorchPackage(spec, p.kernels, p.lang, header, dir / "torch");
        for (const auto& f : package.files)
            r.files.push_back("torch/" + f);
        for (const auto& w : package.warnings)
            r.warnings.push_back(w);
        r.torchSchema = "hone::" + package.signature.schema;
    }
    return r;
}

} // namespace hone::core
