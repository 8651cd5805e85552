#include "app/bench_cli.h"

#include "app/cli_common.h"
#include "app/exit_code.h"
#include "backends/worker_process.h"
#include "core/engine.h"
#include "core/eval_result.h"
#include "core/export_portfolio.h"
#include "core/problem_spec.h"
#include "core/protocol.h"
#include "core/resources.h"
#include "core/store.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

namespace hone::app {
namespace fs = std::filesystem;
namespace {

std::string shellQuote(const std::string& s)
{
    std::string out = "'";
    for (char c : s) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out + "'";
}

/// Runs a shell command and returns its stdout; `status` gets the exit status.
std::string capture(const std::string& command, int& status)
{
    std::string out;
    FILE* p = ::popen(command.c_str(), "r");
    if (!p) {
        status = -1;
        return out;
    }
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
        out.append(buf, n);
    const int rc = ::pclose(p);
    status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    return out;
}

std::string torchScript()
{
    return core::findResource("bench/torch_bench.py").string();
}

std::string shapeText(const core::ProblemSpec& spec, size_t index = 0)
{
    if (index >= spec.benchShapes.size())
        return "?";
    nlohmann::json s = core::resolveShape(spec, spec.benchShapes[index], "bench[" + std::to_string(index) + "]");
    std::string out;
    for (const auto& [k, v] : s["symbols"].items()) {
        out += (out.empty() ? "" : " ") + k + "=";
        const double d = v.get<double>();
        out += d == std::floor(d) ? std::to_string(static_cast<long long>(d)) : std::to_string(d);
    }
    return out;
}

std::string fmtX(double v)
{
    if (!(v > 0))
        return "—";
    char b[32];
    std::snprintf(b, sizeof b, "%.2fx", v);
    return b;
}

std::string fmtPct(double v)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.0f%%", 100 * v);
    return b;
}

/// One PyTorch variant as torch_bench.py reports it, decoded once for the rows and the table.
struct TorchVariant {
    std::string label;    // eager, compile, max_autotune
    std::string title;    // as the table names it
    bool present = false; // the script ran this variant
    bool ok = false;      // checked and timed
    double gpuNs = 0;     // GPU time: launch hidden behind queued work
    double hostNs = 0;    // host-inclusive: wall clock around call + synchronize
    double graphNs = 0;   // CUDA-graph replay; 0 when the capture failed
    std::string graphError;
};

std::vector<TorchVariant> torchVariants(const nlohmann::json& t)
{
    static const std::pair<const char*, const char*> kVariants[]
        = { { "eager", "eager" }, { "compile", "torch.compile" }, { "max_autotune", "max-autotune" } };
    std::vector<TorchVariant> out;
    for (const auto& [label, title] : kVariants) {
        TorchVariant v;
        v.label = label;
        v.title = title;
        if (t.is_object() && t.contains(label) && t[label].is_object()) {
            const auto& e = t[label];
            v.present = true;
            v.ok = e.value("ok", false) && e.contains("median_ns");
            v.gpuNs = e.value("median_ns", 0.0);
            v.hostNs = e.value("host_median_ns", 0.0);
            if (e.contains("graph") && e["graph"].is_object()) {
                const auto& g = e["graph"];
                if (g.value("ok", false))
                    v.graphNs = g.value("median_ns", 0.0);
                else
                    v.graphError = g.value("error", g.value("check", std::string("failed")));
            }
        }
        out.push_back(v);
    }
    return out;
}

/// The variant with the lowest GPU time, or null when none was timed.
const TorchVariant* fastestTorch(const std::vector<TorchVariant>& vs)
{
    const TorchVariant* best = nullptr;
    for (const auto& v : vs)
        if (v.ok && v.gpuNs > 0 && (!best || v.gpuNs < best->gpuNs))
            best = &v;
    return best;
}

/// KernelBench's figures over a suite: the share of problems with a correct kernel, and fast_p,
/// the share that is correct and faster than PyTorch eager by more than p (speedup > p, as
/// KernelBench computes it). A problem's speedup is over eager as torch_bench.py timed it, else
/// the search's own when the problem's baseline is its PyTorch reference (reference.py).
nlohmann::json kernelBenchFigures(const nlohmann::json& rows)
{
    int n = 0, correct = 0, measured = 0;
    std::map<std::string, int> fast;
    const std::vector<std::pair<std::string, double>> ps = { { "1.0", 1.0 }, { "1.5", 1.5 }, { "2.0", 2.0 } };
    for (const auto& row : rows) {
        ++n;
        if (!row.value("correct", false))
            continue;
        ++correct;
        if (!row.contains("speedup_vs_eager"))
            continue;
        ++measured;
        const double s = row["speedup_vs_eager"].get<double>();
        for (const auto& [name, p] : ps)
            fast[name] += s > p ? 1 : 0;
    }
    nlohmann::json out = { { "problems", n }, { "correct", correct },
        { "correct_rate", n ? static_cast<double>(correct) / n : 0.0 }, { "with_eager_speedup", measured } };
    for (const auto& [name, p] : ps)
        out["fast_p"][name] = n ? static_cast<double>(fast[name]) / n : 0.0;
    return out;
}

std::string stamp()
{
    const std::time_t t = std::time(nullptr);
    char b[32];
    std::strftime(b, sizeof b, "%Y%m%d-%H%M%S", std::localtime(&t));
    return b;
}

} // namespace

CLI::App* addBenchCommand(CLI::App& app, BenchOptions& o)
{
    auto* bench = app.add_subcommand("bench", "search every problem of SUITE and tabulate the best kernels against the seeds (and PyTorch)");
    bench->add_option("suite", o.suite, "a folder of problem folders (resources/problems/ads), or one problem")
        ->required()
        ->check(CLI::ExistingDirectory);
    bench->add_option("--target", o.target,
              "device kind: cpu, cuda, hip (the problems' .hip seeds, on an AMD GPU), or auto (each problem's baseline kind)")
        ->check(CLI::IsMember({ "auto", "cpu", "cuda", "hip" }));
    bench->add_option("--budget", o.budget, "evaluations per problem")->check(CLI::Range(1, 1000000));
    bench->add_option("--workers", o.workers, "parallel evaluations")->check(CLI::Range(1, 256));
    bench->add_option("--seed", o.seed, "random seed of every search");
    bench->add_option("--only", o.only, "problem names to run (repeatable)");
    bench->add_option("--out", o.outDir, "where the JSON and Markdown tables go (default bench-results/SUITE-TIME)");
    bench->add_flag("!--no-torch", o.torch, "skip the PyTorch comparison (eager, torch.compile, max-autotune)");
    bench->add_flag("!--skip-max-autotune", o.maxAutotune,
        "skip torch.compile(mode=\"max-autotune-no-cudagraphs\"), which takes minutes to compile per problem");
    bench->add_flag("!--no-profile", o.profile, "skip the Nsight Compute profile of each best kernel");
    bench->add_option("--torch-samples", o.torchSamples, "timing samples for PyTorch")->check(CLI::Range(20, 10000));
    return bench;
}

int runBench(const BenchOptions& o, const std::string& storePath, const ExecutorFactory& makeExecutor)
{
    // The problems: SUITE itself, or its sub-folders that hold a problem.toml, by name.
    std::vector<fs::path> dirs;
    if (fs::exists(fs::path(o.suite) / "problem.toml")) {
        dirs.push_back(o.suite);
    } else {
        for (const auto& e : fs::directory_iterator(o.suite))
            if (e.is_directory() && fs::exists(e.path() / "problem.toml"))
                dirs.push_back(e.path());
        std::sort(dirs.begin(), dirs.end());
    }
    if (dirs.empty())
        throw CliError(ExitCode::Input, o.suite + " holds no problem folder (a folder with problem.toml); pass a suite such as resources/problems/ads");
    const std::string suiteName = fs::path(o.suite).lexically_normal().filename().string().empty()
        ? fs::path(o.suite).lexically_normal().parent_path().filename().string()
        : fs::path(o.suite).lexically_normal().filename().string();
    const fs::path out = o.outDir.empty() ? fs::path("bench-results") / (suiteName + "-" + stamp()) : fs::path(o.outDir);
    fs::create_directories(out);

    // PyTorch is optional: asked once, and every problem says what happened to its comparison.
    std::string torchWhy;
    std::string script = o.torch ? torchScript() : std::string();
    bool torch = false;
    if (!o.torch) {
        torchWhy = "skipped (--no-torch)";
    } else if (o.target == "hip") {
        torchWhy = "skipped (torch_bench.py times CUDA only)";
    } else if (script.empty()) {
        torchWhy = core::describeResourceSearch("bench/torch_bench.py");
    } else {
        int st = 0;
        const std::string v = capture("python3 -c 'import torch,sys; print(torch.__version__); "
                                      "sys.exit(0 if torch.cuda.is_available() else 3)' 2>/dev/null",
            st);
        torch = st == 0;
        torchWhy = st == 0 ? "torch " + v.substr(0, v.find('\n'))
            : st == 3     ? "torch " + v.substr(0, v.find('\n')) + " sees no GPU"
                          : "python3 cannot import torch";
    }
    std::fprintf(stderr, "bench %s: %zu problems, budget %d, %d workers; PyTorch: %s\n", o.suite.c_str(), dirs.size(),
        o.budget, o.workers, torchWhy.c_str());

    core::Store store(storePath); // main checked its folder (prepareNewStore)
    nlohmann::json rows = nlohmann::json::array();
    std::string device;
    // Rewritten after every problem, so a run cut short still leaves its table.
    auto writeTables = [&](bool final) {
    // Geometric means: the objective over the problems, the PyTorch ratios over every (problem,
    // shape) that has the number; and the minimum ratio, which decides deployment.
    auto geomean = [&](const char* key) {
        double logSum = 0;
        int n = 0;
        for (const auto& row : rows)
            if (row.contains(key) && row[key].get<double>() > 0) {
                logSum += std::log(row[key].get<double>());
                ++n;
            }
        return n ? std::exp(logSum / n) : 0.0;
    };
    auto shapeGeomean = [&](const char* key) {
        double logSum = 0;
        int n = 0;
        for (const auto& row : rows)
            for (const auto& sh : row.value("shapes", nlohmann::json::array()))
                if (sh.contains(key) && sh[key].get<double>() > 0) {
                    logSum += std::log(sh[key].get<double>());
                    ++n;
                }
        return n ? std::exp(logSum / n) : 0.0;
    };
    double minVsTorch = 0;
    std::string minAt;
    for (const auto& row : rows)
        for (const auto& sh : row.value("shapes", nlohmann::json::array()))
            if (sh.contains("vs_torch") && (minAt.empty() || sh["vs_torch"].get<double>() < minVsTorch)) {
                minVsTorch = sh["vs_torch"].get<double>();
                minAt = row["problem"].get<std::string>() + " " + sh["label"].get<std::string>() + " ("
                    + sh["shape"].get<std::string>() + ")";
            }
    nlohmann::json summary = { { "suite", o.suite }, { "device", device }, { "budget", o.budget },
        { "workers", o.workers }, { "seed", o.seed }, { "torch", torchWhy }, { "geomean_speedup", geomean("speedup") },
        { "geomean_vs_torch", shapeGeomean("vs_torch") }, { "geomean_vs_eager", shapeGeomean("vs_eager") },
        { "geomean_vs_compile", shapeGeomean("vs_compile") },
        { "geomean_vs_max_autotune", shapeGeomean("vs_max_autotune") }, { "min_vs_torch", minVsTorch },
        { "min_vs_torch_at", minAt }, { "kernelbench", kernelBenchFigures(rows) }, { "rows", rows } };
    {
        std::ofstream j(out / "bench.json");
        j << summary.dump(2) << "\n";
    }

    std::ostringstream md;
    md << "# hone bench " << o.suite << "\n\n"
       << "Device: " << device << ". Budget " << o.budget << " evaluations per problem, " << o.workers
       << " workers, seed " << o.seed << ". PyTorch: " << torchWhy << ".\n\n"
       << "One line per problem and bench shape; the search's objective is the weighted geometric mean of "
          "the per-shape speedups (the problem's summary line). Each PyTorch cell: GPU time / "
          "host-inclusive time / CUDA-graph replay. GPU time hides the host launch behind work already "
          "queued, as candidates are timed; vs PyTorch compares the deployed kernel (the portfolio's fastest "
          "candidate on that shape, shown beside the best where it differs) with the fastest variant by GPU time on "
          "that shape.\n\n"
       << "| problem | shape | weight | seed | best | speedup | % BW | % compute | bound | eager | torch.compile | "
          "max-autotune | vs PyTorch |\n"
       << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    auto cell = [](const TorchVariant& v) -> std::string {
        if (!v.present)
            return "—";
        if (!v.ok)
            return "failed";
        return formatNs(v.gpuNs) + " / " + (v.hostNs > 0 ? formatNs(v.hostNs) : "—") + " / "
            + (v.graphNs > 0 ? formatNs(v.graphNs) : v.graphError.empty() ? "—" : "no graph");
    };
    for (const auto& row : rows) {
        if (row.contains("skipped") || row.contains("error")) {
            md << "| " << row["problem"].get<std::string>() << " | " << row["shape"].get<std::string>() << " | "
               << (row.contains("skipped") ? "skipped: " + row["skipped"].get<std::string>()
                                           : "failed: " + row["error"].get<std::string>())
               << " ||||||||||||\n";
            continue;
        }
        for (const auto& sh : row.value("shapes", nlohmann::json::array())) {
            const std::vector<TorchVariant> variants = torchVariants(sh.value("torch", nlohmann::json()));
            const TorchVariant* fastest = fastestTorch(variants);
            char weight[32];
            std::snprintf(weight, sizeof weight, "%g", sh.value("weight", 1.0));
            md << "| " << row["problem"].get<std::string>() << " | " << sh["label"].get<std::string>() << " "
               << sh["shape"].get<std::string>() << " | " << weight << " | "
               << formatNs(sh.value("seed_median_ns", 0.0)) << " | " << formatNs(sh.value("best_median_ns", 0.0))
               << (sh.contains("deployed_node") && sh["deployed_node"] != row.value("best_node", nlohmann::json())
                          ? " (portfolio: node " + std::to_string(sh["deployed_node"].get<int64_t>()) + ", "
                              + formatNs(sh["deployed_median_ns"].get<double>()) + ")"
                          : std::string())
               << " | " << fmtX(sh.value("speedup", 0.0)) << (sh.value("slower_than_seed", false) ? " (slower)" : "")
               << " | " << fmtPct(sh.value("frac_bandwidth", 0.0)) << " | " << fmtPct(sh.value("frac_compute", 0.0))
               << " | " << sh.value("bound", std::string());
            for (const auto& v : variants)
                md << " | " << cell(v);
            if (variants.empty())
                md << " | — | — | —";
            md << " | "
               << (fastest ? fmtX(sh.value("vs_torch", 0.0)) + " (" + fastest->title + ")" : std::string("—"))
               << " |\n";
        }
        md << "| **" << row["problem"].get<std::string>() << "** | all shapes | | | | **"
           << fmtX(row["speedup"].get<double>()) << "** (weighted) | | | | | | | "
           << (row.contains("worst_vs_torch")
                      ? "worst " + fmtX(row["worst_vs_torch"].get<double>()) + " on " + row["worst_shape"].get<std::string>()
                      : std::string("—"))
           << " |\n";
    }
    md << "\nGeometric mean: " << fmtX(summary["geomean_speedup"].get<double>()) << " over the seeds (the problems' objectives)";
    if (summary["geomean_vs_torch"].get<double>() > 0) {
        md << ", " << fmtX(summary["geomean_vs_torch"].get<double>())
           << " over the fastest PyTorch variant by GPU time over every problem and shape ("
           << fmtX(summary["geomean_vs_eager"].get<double>()) << " over eager, "
           << fmtX(summary["geomean_vs_compile"].get<double>()) << " over torch.compile";
        if (summary["geomean_vs_max_autotune"].get<double>() > 0)
            md << ", " << fmtX(summary["geomean_vs_max_autotune"].get<double>()) << " over max-autotune";
        md << "); minimum " << fmtX(minVsTorch) << " on " << minAt;
    }
    md << ".\n";
    {
        // KernelBench's report beside the table: correctness rate and fast_p over PyTorch eager.
        const nlohmann::json& kb = summary["kernelbench"];
        md << "\nKernelBench: " << kb["correct"].get<int>() << " of " << kb["problems"].get<int>()
           << " problems correct (" << fmtPct(kb["correct_rate"].get<double>()) << "); fast_1.0 "
           << fmtPct(kb["fast_p"]["1.0"].get<double>()) << ", fast_1.5 " << fmtPct(kb["fast_p"]["1.5"].get<double>())
           << ", fast_2.0 " << fmtPct(kb["fast_p"]["2.0"].get<double>())
           << " (correct and more than p times faster than PyTorch eager; " << kb["with_eager_speedup"].get<int>()
           << " problems have an eager time).\n";
    }
    {
        std::ofstream m(out / "bench.md");
        m << md.str();
    }
    if (final)
        std::cout << md.str() << "\nwritten: " << (out / "bench.json").string() << ", " << (out / "bench.md").string() << "\n";
    };
    int searched = 0, passed = 0; // problems searched, and those whose search found a passing candidate
    for (const auto& dir : dirs) {
        core::ProblemSpec spec;
        try {
            spec = core::loadProblem(dir);
        } catch (const std::exception& e) {
            rows.push_back({ { "problem", dir.filename().string() }, { "shape", "?" }, { "error", e.what() } });
            std::fprintf(stderr, "  %-20s bad problem: %s\n", dir.filename().string().c_str(), e.what());
            continue;
        }
        if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), spec.name) == o.only.end())
            continue;
        nlohmann::json row = { { "problem", spec.name }, { "family", spec.family }, { "shape", shapeText(spec) } };
        std::string target;
        try {
            target = core::resolveTarget(spec, o.target);
        } catch (const std::exception& e) {
            row["skipped"] = e.what();
            rows.push_back(row);
            std::fprintf(stderr, "  %-20s skipped: %s\n", spec.name.c_str(), e.what());
            continue;
        }
        std::fprintf(stderr, "  %-20s searching (%s, budget %d)...\n", spec.name.c_str(), target.c_str(), o.budget);
        auto exec = makeExecutor(o.workers, target);
        core::Engine engine(store, *exec);
        core::RunOptions ro;
        ro.problemDir = dir;
        ro.target = target;
        ro.budget = o.budget;
        ro.workers = o.workers;
        ro.seed = o.seed;
        // Each row measures this run's search from the problem's seeds: a warm start from an
        // earlier bench in the same store would make rows incomparable between runs.
        ro.warmStart = false;
        core::Report r;
        try {
            r = engine.run(ro, nullptr);
        } catch (const std::exception& e) {
            row["error"] = e.what();
            rows.push_back(row);
            std::fprintf(stderr, "  %-20s failed: %s\n", spec.name.c_str(), e.what());
            continue;
        }
        device = r.device;
        ++searched;
        passed += r.best ? 1 : 0;
        const auto& p = r.progress;
        row.update({ { "session", p.session }, { "target", target }, { "device", r.device },
            { "evaluations", p.evaluations }, { "failures", p.failures }, { "elapsed_s", p.elapsedSeconds },
            { "evaluations_per_minute", p.evaluationsPerMinute }, { "baseline", spec.baseline },
            { "seed_median_ns", r.baselineMedianNs }, { "best_median_ns", r.bestMedianNs },
            { "best_node", r.best ? static_cast<int64_t>(*r.best) : int64_t { 0 } }, { "speedup", r.bestSpeedup }, { "frac_bandwidth", r.fracBandwidth }, { "frac_compute", r.fracCompute },
            { "bound", r.bound }, { "evidence", r.evidence }, { "best_source", r.bestSource },
            { "best_knobs", core::knobsToString(r.bestKnobs) }, { "stop_reason", r.stopReason } });
        // Per bench shape: the seed and the best (its speedup is their weighted geometric mean).
        {
            nlohmann::json shapes = nlohmann::json::array();
            if (r.bestShapes.empty()) {
                shapes.push_back({ { "index", 0 }, { "label", "bench[0]" }, { "shape", shapeText(spec) },
                    { "weight", spec.benchWeights.empty() ? 1.0 : spec.benchWeights[0] },
                    { "seed_median_ns", r.baselineMedianNs }, { "best_median_ns", r.bestMedianNs },
                    { "speedup", r.bestMedianNs > 0 ? r.baselineMedianNs / r.bestMedianNs : 0.0 },
                    { "frac_bandwidth", r.fracBandwidth }, { "frac_compute", r.fracCompute }, { "bound", r.bound } });
            } else {
                for (size_t i = 0; i < r.bestShapes.size(); ++i) {
                    const auto& x = r.bestShapes[i];
                    shapes.push_back({ { "index", x.index }, { "label", x.label }, { "shape", shapeText(spec, x.index) },
                        { "weight", r.bestShapeWeights[i] }, { "seed_median_ns", x.baselineMedianNs() },
                        { "best_median_ns", x.medianNs() }, { "speedup", x.speedup.value_or(0.0) },
                        { "frac_bandwidth", x.roofline ? x.roofline->fracBandwidth.value_or(0.0) : 0.0 },
                        { "frac_compute", x.roofline ? x.roofline->fracCompute.value_or(0.0) : 0.0 },
                        { "bound", x.diagnosis ? x.diagnosis->bound : std::string() }, { "slower_than_seed", std::find(r.bestSlowerOn.begin(), r.bestSlowerOn.end(), x.label)
                                != r.bestSlowerOn.end() } });
                }
            }
            row["shapes"] = shapes;
        }
        // What a user deploys: the portfolio, the fastest evaluated candidate on each shape (the
        // dispatcher `hone export --portfolio` writes). Without per-shape results, the best.
        try {
            const core::Portfolio folio = core::choosePortfolio(store, p.session);
            for (auto& sh : row["shapes"])
                for (const auto& c : folio.choices)
                    if (c.benchIndex == sh["index"].get<size_t>() && c.medianNs > 0) {
                        sh["deployed_node"] = c.nodeId;
                        sh["deployed_median_ns"] = c.medianNs;
                        sh["deployed_speedup"] = c.speedup;
                    }
            row["portfolio_configurations"] = folio.kernels.size();
        } catch (const std::exception& e) {
            row["portfolio"] = std::string("none: ") + e.what();
        }
        // Best per seed source, so that hand-written kernels can be compared with library seeds.
        std::map<std::string, std::string> sourceName;
        std::map<int64_t, std::string> nodeSource;
        for (const auto& n : store.nodes(p.session)) {
            if (n.sourceHash.empty())
                continue;
            if (!sourceName.count(n.sourceHash))
                if (auto s = store.source(n.sourceHash))
                    sourceName[n.sourceHash] = s->name;
            nodeSource[n.id] = sourceName[n.sourceHash];
        }
        nlohmann::json perSource = nlohmann::json::object();
        for (const auto& e : store.evaluations(p.session)) {
            if (e.status != "ok" || !(e.medianNs > 0))
                continue;
            const std::string& src = nodeSource[e.nodeId];
            if (!perSource.contains(src) || perSource[src]["median_ns"].get<double>() > e.medianNs)
                perSource[src] = { { "node", e.nodeId }, { "median_ns", e.medianNs }, { "speedup", e.speedup } };
        }
        row["best_per_source"] = perSource;

        if (o.profile && r.best && target == "cuda") {
            // The best kernel once more, with the profiler stage: why it stops where it does.
            std::optional<core::NodeRecord> node;
            for (auto& n : store.nodes(p.session))
                if (n.id == *r.best)
                    node = n;
            const auto src = node ? store.source(node->sourceHash) : std::nullopt;
            const core::Seed* base = spec.baselineSeed();
            if (src && base) {
                core::protocol::EvalRequest req = core::protocol::EvalRequest::forProblem(core::resolveProblem(spec));
                req.id = "profile-" + spec.name;
                req.candidate = core::protocol::SourceSpec::fromJson(
                    { { "name", src->name }, { "lang", src->lang }, { "source", src->text }, { "knobs", node->knobs },
                        { "flags", node->flags } },
                    "the best node", src->name);
                req.wantProfile = true;
                req.seeds = { 1, 2, 3 };
                req.samples = 20;
                backends::WorkerLimits limits;
                limits.stageSeconds = 900;
                limits.memoryMiB = 65536;
                limits.addressSpaceLimit = false;
                core::protocol::EvalResult res;
                try {
                    res = core::protocol::EvalResult::fromJson(backends::runWorker(exec->command(), req.toJson(), limits));
                } catch (const core::protocol::ProtocolError& e) {
                    res = core::protocol::EvalResult::failed(req.id, core::protocol::FailureKind::ProtocolError, "profile", e.what());
                }
                if (res.profile) {
                    row["profile"] = res.profile->toJson();
                } else {
                    std::string why = res.ok() ? "the result has no profile" : "failed: ";
                    if (res.failure)
                        why += std::string(core::protocol::failureKindName(res.failure->kind)) + " in " + res.failure->stage
                            + ": " + res.failure->message;
                    row["profile"] = { { "error", why } };
                }
                if (res.diagnosis)
                    row["profiled_evidence"] = res.diagnosis->evidence;
            }
        }

        if (torch && r.best) {
            const fs::path data = out / (spec.name + "-data");
            std::vector<std::string> manifests;
            std::string dumpError;
            for (const auto& sh : row["shapes"]) {
                nlohmann::json req = core::protocol::makeMessage("dump");
                req["id"] = "dump-" + spec.name + "-" + sh["label"].get<std::string>();
                req["problem"] = core::resolveProblem(spec);
                req["dir"] = fs::absolute(data / ("shape-" + std::to_string(sh["index"].get<size_t>()))).string();
                req["config"] = { { "timing_shape", sh["index"] } };
                backends::WorkerLimits limits;
                limits.stageSeconds = 1800;
                limits.memoryMiB = 65536;
                limits.addressSpaceLimit = false;
                const nlohmann::json dumped = backends::runWorker(exec->command(), req, limits);
                if (dumped.value("type", std::string()) != "dumped") {
                    dumpError = "the worker could not dump the inputs of " + sh["label"].get<std::string>() + ": "
                        + dumped.dump().substr(0, 400);
                    break;
                }
                manifests.push_back(dumped.value("manifest", std::string()));
            }
            if (!dumpError.empty()) {
                row["torch"] = { { "error", dumpError } };
            } else {
                // A PyTorch reference (imported problems) is also the module torch_bench.py times.
                const fs::path module
                    = fs::exists(dir / "torch_ref.py") || spec.referenceLang != "python" ? dir / "torch_ref.py" : dir / "reference.py";
                if (!fs::exists(module)) {
                    row["torch"] = { { "error", "the problem has no torch_ref.py" } };
                } else {
                    int st = 0;
                    std::string manifestArgs;
                    for (const auto& m : manifests)
                        manifestArgs += " --manifest " + shellQuote(m);
                    const std::string cmd = "python3 " + shellQuote(script) + manifestArgs + " --module "
                        + shellQuote(fs::absolute(module).string()) + " --samples " + std::to_string(o.torchSamples)
                        + (o.maxAutotune ? "" : " --skip-max-autotune")
                        + " 2>" + shellQuote((out / (spec.name + "-torch.log")).string());
                    const std::string text = capture(cmd, st);
                    const std::string last = text.substr(text.rfind('{') == std::string::npos ? 0 : text.rfind("\n{") + 1);
                    nlohmann::json t = nlohmann::json::parse(last, nullptr, false);
                    if (t.is_discarded())
                        t = { { "error", "torch_bench.py printed no JSON (exit " + std::to_string(st) + "); see "
                                      + (out / (spec.name + "-torch.log")).string() } };
                    row["torch"] = t;
                    // Per shape: each variant against the best on that shape, GPU time.
                    for (size_t i = 0; i < row["shapes"].size(); ++i) {
                        nlohmann::json& sh = row["shapes"][i];
                        const nlohmann::json& ts
                            = t.contains("shapes") && i < t["shapes"].size() ? t["shapes"][i] : (i == 0 ? t : nlohmann::json());
                        sh["torch"] = ts;
                        // Against the deployed kernel of this shape; the single best beside it.
                        const double singleNs = sh.value("best_median_ns", 0.0);
                        const double bestNs = sh.value("deployed_median_ns", singleNs);
                        const std::vector<TorchVariant> variants = torchVariants(ts);
                        if (bestNs > 0) {
                            for (const auto& v : variants)
                                if (v.ok && v.gpuNs > 0)
                                    sh["vs_" + v.label] = v.gpuNs / bestNs;
                            if (const TorchVariant* f = fastestTorch(variants)) {
                                sh["torch_fastest"] = f->label;
                                sh["vs_torch"] = f->gpuNs / bestNs;
                                if (singleNs > 0)
                                    sh["vs_torch_single_best"] = f->gpuNs / singleNs;
                            }
                        }
                        if (i == 0) // the heaviest shape: the row's own figures, as before
                            for (const char* k : { "vs_eager", "vs_compile", "vs_max_autotune", "vs_torch", "torch_fastest" })
                                if (sh.contains(k))
                                    row[k] = sh[k];
                    }
                    // The worst shape decides whether the kernel can be deployed for the set.
                    for (const auto& sh : row["shapes"])
                        if (sh.contains("vs_torch")
                            && (!row.contains("worst_vs_torch") || sh["vs_torch"].get<double>() < row["worst_vs_torch"].get<double>())) {
                            row["worst_vs_torch"] = sh["vs_torch"];
                            row["worst_shape"] = sh["label"];
                        }
                }
            }
            std::error_code ec;
            fs::remove_all(data, ec); // bench inputs run to gigabytes
        } else if (!torch) {
            row["torch"] = { { "skipped", torchWhy } };
        }
        row["correct"] = r.best.has_value();
        if (row.contains("vs_eager"))
            row["speedup_vs_eager"] = row["vs_eager"];
        else if (spec.baseline == "reference.py" && r.bestSpeedup > 0)
            row["speedup_vs_eager"] = r.bestSpeedup; // timed beside the PyTorch baseline in the worker
        std::fprintf(stderr, "  %-20s %s -> %s (%s), %s of bandwidth, %s\n", spec.name.c_str(),
            formatNs(r.baselineMedianNs).c_str(), formatNs(r.bestMedianNs).c_str(), fmtX(r.bestSpeedup).c_str(),
            fmtPct(r.fracBandwidth).c_str(), r.bound.c_str());
        rows.push_back(row);
        writeTables(false);
    }

    writeTables(true);
    for (const auto& row : rows)
        if (row.contains("error"))
            return toInt(ExitCode::Failed); // its row and the log above say what
    // A suite where some problems found nothing is a result (the table's correctness rate says
    // how many); one where none did is "no passing candidate".
    return toInt(searched > 0 && passed == 0 ? ExitCode::NoPassingCandidate : ExitCode::Ok);
}

} // namespace hone::app
