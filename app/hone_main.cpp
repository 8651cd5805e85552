// hone: the headless command line. Runs and resumes searches, evaluates one candidate, shows
// a session's tree and exports a node.

#include "app/cli_common.h"
#include "app/cli_docs.h"
#include "app/cli_errors.h"
#include "app/exit_code.h"
#include "app/bench_cli.h"
#include "app/kb_cli.h"
#include "app/kb_source.h"
#include "app/import_cli.h"
#include "app/llm_cli.h"
#include "app/targets_cli.h"
#include "app/replay_cli.h"
#include "app/session.h"
#include "app/show_cli.h"
#include "backends/local_executor.h"
#include "backends/spool_executor.h"
#include "core/engine.h"
#include "core/export_bundle.h"
#include "core/knobs.h"
#include "core/problem_spec.h"
#include "core/protocol.h"
#include "core/resources.h"
#include "core/store.h"
#include "knowledge/knowledge_base.h"
#include "knowledge/skills.h"

#include <algorithm>
#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace {

using namespace hone;

std::atomic<core::Engine*> g_engine {nullptr};
std::atomic<int> g_interrupts {0};

void onInterrupt(int)
{
    // First Ctrl-C: finish the evaluations in flight and write the report. Second: leave now.
    if (g_interrupts.fetch_add(1) >= 1)
        _exit(app::toInt(app::ExitCode::Interrupted));
    if (core::Engine* e = g_engine.load())
        e->requestStop();
}

struct Globals {
    std::string store;
    std::string worker;
    std::string cacheDir;
    bool skills = true; // skills from the knowledge base bias the knob search; a gain writes one back
    double memoryMiB = 0; // 0: 4096 MiB for CPU workers, 16384 for GPU workers (host copies of bench tensors)
    std::string targetsFile; // --targets (docs/REMOTE.md)
    std::string on;          // --on TARGET: evaluate on a target of the targets file
    std::string spool;       // --spool DIR: the worker protocol through files (docs/REMOTE.md)
    bool workersGiven = false;
    bool createFolders = false; // --create: make missing folders above --store
    std::string moveSkillFile;      // run --move-skill FILE (docs/SEARCH.md, "Live move skills")
    std::string moveSkillScope = "family"; // run --move-skill-scope: family | all
};

/// Prints a live progress line: in place on a terminal, a line every few evaluations otherwise.
class ProgressPrinter final : public core::EngineObserver {
public:
    explicit ProgressPrinter(bool quiet)
        : m_quiet(quiet)
        , m_tty(isatty(2))
    {
    }
    void progressChanged(const core::Progress& p) override
    {
        if (m_quiet)
            return;
        if (!m_tty && p.evaluations == m_lastPrinted)
            return;
        if (!m_tty && p.evaluations % 10 != 0 && p.evaluations != p.budget)
            return;
        m_lastPrinted = p.evaluations;
        double hitRate = p.evaluations > 0 ? 100.0 * p.cacheHits / p.evaluations : 0.0;
        char line[256];
        std::snprintf(line, sizeof line,
            "[%3d/%d] best %.2fx  %.1f eval/min  cache hits %d (%.0f%%)  failed %d  in flight %d  %.0fs",
            p.evaluations, p.budget, p.bestSpeedup, p.evaluationsPerMinute, p.cacheHits, hitRate, p.failures,
            p.inFlight, p.elapsedSeconds);
        if (m_tty)
            std::fprintf(stderr, "\r\033[K%s", line);
        else
            std::fprintf(stderr, "%s\n", line);
    }
    void finish()
    {
        if (m_tty && !m_quiet)
            std::fprintf(stderr, "\n");
    }

private:
    bool m_quiet;
    bool m_tty;
    int m_lastPrinted = -1;
};

app::SessionConfig sessionConfig(const Globals& g, const app::LlmCliOptions& llm = {})
{
    app::SessionConfig c;
    c.store = g.store;
    c.workerPath = g.worker;
    c.cacheDir = g.cacheDir;
    c.memoryMiB = g.memoryMiB;
    c.targetsFile = g.targetsFile;
    c.on = g.on;
    c.spool = g.spool;
    c.workersGiven = g.workersGiven;
    c.skills = g.skills;
    c.moveSkillFile = g.moveSkillFile;
    c.moveSkillSameFamily = g.moveSkillScope == "family";
    c.llm = llm;
    return c;
}

std::unique_ptr<backends::LocalExecutor> makeExecutor(const Globals& g, int parallel, const std::string& target)
{
    return app::makeLocalExecutor(sessionConfig(g), parallel, target);
}

/// What the re-verification did: not search evaluations, so counted apart from them.
nlohmann::json reverificationJson(const core::Report& r)
{
    nlohmann::json tries = nlohmann::json::array();
    int fresh = 0;
    for (const auto& v : r.reverifications) {
        fresh += v.stored ? 0 : 1;
        tries.push_back({{"node", v.node}, {"verified", v.verified}, {"stored", v.stored},
            {"failure_kind", v.failureKind}, {"failure_message", v.failureMessage}, {"median_ns", v.medianNs},
            {"speedup", v.speedup}, {"seeds", v.config}});
    }
    return {{"evaluations", fresh}, {"tries", tries}, {"note", r.reverifyNote}};
}

/// Shape sets: the best's per-shape results (its speedup is their weighted geometric mean).
nlohmann::json bestShapesJson(const core::Report& r)
{
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < r.bestShapes.size(); ++i) {
        const auto& s = r.bestShapes[i];
        out.push_back({{"index", s.index}, {"shape", s.label}, {"weight", r.bestShapeWeights[i]},
            {"speedup", s.speedup.value_or(0.0)}, {"median_ns", s.medianNs()}, {"baseline_median_ns", s.baselineMedianNs()},
            {"frac_bandwidth", s.roofline ? s.roofline->fracBandwidth.value_or(0.0) : 0.0},
            {"frac_compute", s.roofline ? s.roofline->fracCompute.value_or(0.0) : 0.0}});
    }
    return out;
}

nlohmann::json reportJson(const core::Report& r)
{
    nlohmann::json knobs = nlohmann::json::object();
    for (const auto& [k, v] : r.bestKnobs)
        knobs[k] = v;
    const auto& p = r.progress;
    return {{"session", p.session}, {"stop_reason", r.stopReason}, {"device", r.device},
        {"evaluations", p.evaluations}, {"fresh_evaluations", p.fresh}, {"cache_hits", p.cacheHits},
        {"cache_hit_rate", p.evaluations ? double(p.cacheHits) / p.evaluations : 0.0}, {"failures", p.failures},
        {"elapsed_s", p.elapsedSeconds}, {"evaluations_per_minute", p.evaluationsPerMinute},
        {"best",
            r.best ? nlohmann::json {{"node", *r.best}, {"source", r.bestSource}, {"knobs", knobs},
                         {"flags", r.bestFlags}, {"speedup", r.bestSpeedup}, {"median_ns", r.bestMedianNs},
                         {"baseline_median_ns", r.baselineMedianNs}, {"bound", r.bound}, {"evidence", r.evidence},
                         {"frac_bandwidth", r.fracBandwidth}, {"frac_compute", r.fracCompute},
                         {"verified", r.bestVerified},
                         {"reverify_median_ns", r.bestVerified ? nlohmann::json(r.reverifyMedianNs) : nlohmann::json()},
                         {"reverify_speedup", r.bestVerified ? nlohmann::json(r.reverifySpeedup) : nlohmann::json()},
                         {"shapes", bestShapesJson(r)}, {"slower_on", r.bestSlowerOn}}
                   : nlohmann::json(nullptr)},
        {"reverification", reverificationJson(r)}};
}

void printReverification(const core::Report& r)
{
    for (const auto& v : r.reverifications) {
        if (v.verified && v.stored)
            std::printf("verified   node %lld passed its re-verification in an earlier run of this session (%.2fx, %s)\n",
                static_cast<long long>(v.node), v.speedup, app::formatNs(v.medianNs).c_str());
        else if (v.verified)
            std::printf("verified   node %lld again in a fresh worker with new seeds and inputs: %.2fx, %s "
                        "(one extra evaluation, not counted above)\n",
                static_cast<long long>(v.node), v.speedup, app::formatNs(v.medianNs).c_str());
        else
            std::printf("REJECTED   node %lld failed its re-verification (%s: %s); it is not reported as best\n",
                static_cast<long long>(v.node), v.failureKind.c_str(), v.failureMessage.c_str());
    }
    if (!r.reverifyNote.empty())
        std::printf("verified   NO: %s\n", r.reverifyNote.c_str());
}

void printReport(
    const core::Report& r, const std::string& problemName, const std::string& baselineName, bool spooled)
{
    const auto& p = r.progress;
    std::printf("session %lld  %s on %s\n", static_cast<long long>(p.session), problemName.c_str(), r.device.c_str());
    std::printf("stopped    %s\n", r.stopReason.c_str());
    if (spooled) // replies read from files: this process's wall time says nothing about the worker's rate
        std::printf("evaluated  %d candidates (%d answered through the spool, %d cache hits = %.0f%%, %d failed)\n",
            p.evaluations, p.fresh, p.cacheHits, p.evaluations ? 100.0 * p.cacheHits / p.evaluations : 0.0,
            p.failures);
    else
        std::printf("evaluated  %d candidates (%d by a worker, %d cache hits = %.0f%%, %d failed) in %.0f s, %.1f "
                    "eval/min\n",
            p.evaluations, p.fresh, p.cacheHits, p.evaluations ? 100.0 * p.cacheHits / p.evaluations : 0.0,
            p.failures, p.elapsedSeconds, p.evaluationsPerMinute);
    if (!r.best) {
        std::printf("best       none: no candidate passed the checks%s\n",
            r.reverifications.empty() ? "" : " and its re-verification");
        printReverification(r);
        return;
    }
    std::printf("best       node %lld: %s [%s]%s%s\n", static_cast<long long>(*r.best), r.bestSource.c_str(),
        core::knobsToString(r.bestKnobs).c_str(), r.bestFlags.empty() ? "" : " flags ", r.bestFlags.c_str());
    std::printf("speedup    %.2fx over the seed baseline %s (%s vs %s, medians interleaved in one worker)\n",
        r.bestSpeedup, baselineName.c_str(), app::formatNs(r.bestMedianNs).c_str(),
        app::formatNs(r.baselineMedianNs).c_str());
    for (size_t i = 0; i < r.bestShapes.size(); ++i) {
        const auto& s = r.bestShapes[i];
        std::printf("  %-9s weight %-7g %.2fx (%s vs %s), %.0f%% of bandwidth%s\n", s.label.c_str(),
            r.bestShapeWeights[i], s.speedup.value_or(0.0), app::formatNs(s.medianNs()).c_str(),
            app::formatNs(s.baselineMedianNs()).c_str(),
            100 * (s.roofline ? s.roofline->fracBandwidth.value_or(0.0) : 0.0),
            std::find(r.bestSlowerOn.begin(), r.bestSlowerOn.end(), s.label) != r.bestSlowerOn.end()
                ? "  SLOWER THAN BASELINE" : "");
    }
    if (!r.bestShapes.empty())
        std::printf("           (the speedup is the weighted geometric mean over these shapes; timing, roofline and\n"
                    "           evidence are the first, the heaviest)\n");
    std::printf("roofline   %.0f%% of measured copy bandwidth, %.1f%% of measured FMA peak: %s-bound\n",
        100 * r.fracBandwidth, 100 * r.fracCompute, r.bound.c_str());
    std::printf("evidence   %s\n", r.evidence.c_str());
    printReverification(r);
}

int cmdRun(const Globals& g, core::RunOptions opts, bool json, std::optional<int64_t> resumeSession,
    int extraBudget, const app::LlmCliOptions& llmOutput)
{
    if (resumeSession)
        app::requireExistingStore(g.store);
    else
        app::prepareNewStore(g.store, g.createFolders);
    core::Store store(g.store);
    std::string problemName;
    std::string baselineName;
    if (resumeSession) {
        auto rec = store.session(*resumeSession);
        if (!rec)
            throw app::CliError(app::ExitCode::Input, "no session " + std::to_string(*resumeSession) + " in store " + g.store
                + "; list sessions with 'hone show'");
        opts = core::RunOptions::fromJson(rec->config);
    }
    core::ProblemSpec spec = core::loadProblem(opts.problemDir);
    problemName = spec.name;
    baselineName = spec.baseline;
    app::SessionConfig config = sessionConfig(g, llmOutput);
    config.resume = resumeSession.has_value();
    app::SessionAssembly session(config, store, opts, core::resolveTarget(spec, opts.target));
    core::Engine& engine = session.engine();
    if (!session.skillsNote().empty())
        std::fprintf(stderr, "hone: warning: %s\n", session.skillsNote().c_str());
    ProgressPrinter printer(json);
    core::EngineObserver* observer = session.observers(&printer);
    g_engine = &engine;
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    core::Report report;
    try {
        report = resumeSession ? engine.resume(*resumeSession, observer, extraBudget) : engine.run(opts, observer);
    } catch (const backends::SpoolWaiting& w) {
        // Not a failure: the session is stored and continues with `hone resume --spool`.
        g_engine = nullptr;
        printer.finish();
        if (engine.sessionId() > 0)
            std::printf("session %lld waits for spooled replies\n", static_cast<long long>(engine.sessionId()));
        std::fprintf(stderr, "hone: %s\n", w.what());
        return app::toInt(app::ExitCode::Pending);
    }
    g_engine = nullptr;
    printer.finish();
    std::string skillNote;
    for (const auto& line : session.afterRun(report, spec.family))
        skillNote += line + "\n";
    if (json) {
        nlohmann::json j = reportJson(report);
        j["warm_start"] = nlohmann::json::array();
        for (const auto& w : report.warmStart)
            j["warm_start"].push_back({{"node", w.node}, {"from_session", w.fromSession}, {"from_node", w.fromNode},
                {"problem", w.problemName}, {"same_problem", w.sameProblem}, {"speedup", w.speedup}});
        j["warm_start_notes"] = report.warmStartNotes;
        j["memory_op"] = report.memoryOp;
        j["move_skill"] = report.moveSkill ? nlohmann::json {{"from", report.moveSkillFrom}, {"kinds", report.moveSkill->stats.size()}} : nlohmann::json();
        for (const auto& [name, arm] : report.operators)
            j["operators"][name] = {{"proposed", arm.proposed}, {"evaluated", arm.evaluated}, {"improved", arm.improved}};
        if (session.llm())
            j["llm"] = app::llmSummaryJson(store, report.progress.session);
        std::cout << j.dump(2) << "\n";
    } else {
        printReport(report, problemName, baselineName, !g.spool.empty());
        std::fputs(skillNote.c_str(), stdout);
        if (session.llm())
            app::printLlmSummary(store, report.progress.session);
    }
    if (!report.error.empty()) { // the LLM endpoint refused or is unreachable
        std::fprintf(stderr, "hone: error: %s\n", report.error.c_str());
        return app::toInt(app::ExitCode::Environment);
    }
    if (g_interrupts.load() > 0)
        return app::toInt(app::ExitCode::Interrupted);
    if (report.best)
        return app::toInt(app::ExitCode::Ok);
    // A baseline the worker could not even try says nothing about the code: no compiler, no device,
    // or, on a remote target, every attempt lost to ssh or Slurm.
    for (const char* kind : {"(worker_error)", "(protocol_error)"})
        if (report.stopReason.rfind(std::string("baseline seed failed ") + kind, 0) == 0)
            return app::toInt(!g.on.empty() && std::string(kind) == "(worker_error)" ? app::ExitCode::TargetUnreachable
                                                                                     : app::ExitCode::Environment);
    return app::toInt(app::ExitCode::NoPassingCandidate);
}

int cmdEval(const Globals& g, const std::string& problemDir, const std::string& candidatePath,
    const std::vector<std::string>& knobArgs, const std::string& flagsArg, bool json)
{
    core::ProblemSpec spec = core::loadProblem(problemDir);
    std::ifstream f(candidatePath);
    if (!f)
        throw app::CliError(app::ExitCode::Input, "cannot read candidate " + candidatePath + "; check the path");
    std::stringstream ss;
    ss << f.rdbuf();
    std::string source = ss.str();
    std::string name = std::filesystem::path(candidatePath).filename().string();
    core::KnobSpace space = core::parseKnobSpace(source, candidatePath);
    core::KnobValues knobs = space.initial().value_or(core::KnobValues {});
    for (const auto& kv : knobArgs) {
        auto eq = kv.find('=');
        if (eq == std::string::npos)
            throw app::CliError(app::ExitCode::Usage, "--knob '" + kv + "': expected NAME=VALUE");
        knobs[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    std::string why;
    if (!space.empty() && !space.admits(knobs, &why))
        throw app::CliError(app::ExitCode::Usage, candidatePath + ": " + why);
    std::string flags = flagsArg.empty() ? space.flags : flagsArg;
    if (std::string err = core::checkFlags(flags, core::langOfFile(name)); !err.empty())
        throw app::CliError(app::ExitCode::Usage, "--flags: " + err);
    const core::Seed* base = spec.baselineSeed();
    core::KnobSpace baseSpace = core::parseKnobSpace(base->source, base->fileName);
    std::string lang = name.ends_with(".cu") ? "cuda" : name.ends_with(".hip") ? "hip" : "cpp";
    core::protocol::EvalRequest req;
    try {
        req = core::protocol::EvalRequest::forProblem(core::resolveProblem(spec));
    } catch (const core::protocol::RequestError& e) {
        throw app::CliError(app::ExitCode::Input, problemDir + ": " + e.what());
    }
    req.id = "eval-" + name;
    req.candidate = {name, lang, source, knobs, flags};
    req.baseline = core::protocol::SourceSpec {base->fileName, base->lang, base->source,
        baseSpace.initial().value_or(core::KnobValues {}), baseSpace.flags};
    req.seeds = {1, 2, 3};
    for (size_t i = 0; spec.benchShapes.size() > 1 && i < spec.benchShapes.size(); ++i)
        req.timingShapes.push_back(i); // a shape set: every shape, in file order, none screened
    auto exec = makeExecutor(g, 1, lang == "cuda" ? "cuda" : lang == "hip" ? "hip" : "cpu");
    exec->submit(core::EvalJob {req.id, req.toJson()});
    std::optional<core::EvalDone> done;
    while (!done)
        done = exec->next(std::chrono::milliseconds(500));
    // A reply that breaks the format is a protocol_error, as the engine takes it.
    core::protocol::EvalResult s;
    try {
        s = core::protocol::EvalResult::fromJson(done->result);
    } catch (const core::protocol::ProtocolError& e) {
        s = core::protocol::EvalResult::failed(done->id, core::protocol::FailureKind::ProtocolError, "result", e.what());
    }
    if (json) {
        std::cout << done->result.dump(2) << "\n";
    } else {
        std::printf("%s [%s] on %s\n", name.c_str(), core::knobsToString(knobs).c_str(), spec.name.c_str());
        if (!s.ok()) {
            std::printf("FAILED     %s in stage %s: %s\n", core::protocol::failureKindName(s.failureKind()),
                s.failure->stage.c_str(), s.failure->message.c_str());
        } else {
            const int checks = s.checks ? static_cast<int>(s.checks->size()) : 0;
            std::printf("correct    on %d (shape, seed) checks\n", checks);
            std::printf("time       %s median (cv %.1f%%); baseline %s %s; speedup %.2fx\n",
                app::formatNs(s.medianNs()).c_str(), 100 * s.cv(), base->fileName.c_str(),
                app::formatNs(s.baselineMedianNs()).c_str(), s.timedSpeedup());
            std::printf("roofline   %.0f%% of bandwidth, %.1f%% of FMA peak\n", 100 * s.fracBandwidth(),
                100 * s.fracCompute());
            std::printf("diagnosis  %s\n", s.evidence().c_str());
            if (!s.shapeResults().empty()) {
                const core::Objective o = core::objectiveOf(s, spec.benchWeights, 0);
                for (const auto& x : s.shapeResults())
                    std::printf("  %-9s %s vs %s, %.2fx, %.0f%% of bandwidth%s\n", x.label.c_str(),
                        app::formatNs(x.medianNs()).c_str(), app::formatNs(x.baselineMedianNs()).c_str(),
                        x.speedup.value_or(0.0), 100 * (x.roofline ? x.roofline->fracBandwidth.value_or(0.0) : 0.0),
                        std::find(o.slowerOn.begin(), o.slowerOn.end(), x.label) != o.slowerOn.end()
                            ? "  SLOWER THAN BASELINE" : "");
                std::printf("objective  %.2fx (weighted geometric mean over the bench shapes)\n", o.value);
            }
        }
    }
    if (s.ok())
        return app::toInt(app::ExitCode::Ok);
    const bool environment = s.failureKind() == core::protocol::FailureKind::WorkerError
        || s.failureKind() == core::protocol::FailureKind::ProtocolError;
    return app::toInt(environment ? app::ExitCode::Environment : app::ExitCode::EvaluationFailed);
}

} // namespace

int main(int argc, char** argv)
{
    CLI::App app {"hone: search-based kernel optimisation (headless)", "hone"};
    // Before any option or command exists: these settings are copied into each of them.
    app.formatter(std::make_shared<app::HelpFormatter>());
    app.option_defaults()->always_capture_default();
    app.fallthrough(); // global options may follow the command: hone show --store X
    app.require_subcommand(0, 1); // none: --version, --man, or an error that lists the commands
    app.set_version_flag("--version", [] {
        // The second line says where this binary finds its resources (core/resources.h).
        const auto dirs = core::resourceDirs();
        return "hone " HONE_VERSION " (worker protocol " + std::to_string(core::protocol::kVersion) + ")\nresources "
            + (dirs.empty() ? std::string("none found (set HONE_RESOURCES to Hone's resources folder)")
                            : dirs.front().string());
    }, "print the version, the worker protocol version and the resources folder, then exit");
    bool man = false;
    app.add_flag("--man", man, "print the manual page (roff) and exit");
    Globals g;
    g.store = hone::app::defaultStorePath().string();
    app.add_option("--store", g.store, "SQLite store (default $HONE_STORE or ~/.local/share/hone/hone.db)");
    app.add_flag("--create", g.createFolders,
        "let run, bench, kb add and kb import make missing folders above --store (or --kb)");
    app.add_option("--worker", g.worker, "hone-worker executable (default: next to hone, else PATH)");
    app.add_flag("--no-skills", [&g](int64_t) { g.skills = false; }, "neither use nor write skills of the knowledge base");
    app.add_flag("--no-sandbox", [](int64_t) { ::setenv("HONE_NO_SANDBOX", "1", 1); },
        "run candidate code without the bubblewrap sandbox (docs/THREAT_MODEL.md); needed where bubblewrap cannot run");
    app.add_option("--cache-dir", g.cacheDir, "compile and calibration cache (default ~/.cache/hone)");
    app.add_option("--memory-limit", g.memoryMiB, "per-worker resident memory limit in MiB (default 4096, 16384 for GPU targets)")->check(CLI::Range(64.0, 1048576.0));

    core::RunOptions opts;
    bool json = false;
    std::string problem;
    auto* run = app.add_subcommand("run", "search for a faster kernel for PROBLEM");
    run->add_option("problem", problem, "problem folder (with problem.toml)")->required()->check(CLI::ExistingDirectory);
    run->add_option("--target", opts.target, "device kind: cpu, cuda, hip, or auto (the baseline seed's kind)")->check(CLI::IsMember({"auto", "cpu", "cuda", "hip"}));
    run->add_option("--budget", opts.budget, "evaluations, seeds and cache hits included")->check(CLI::Range(1, 1000000));
    run->add_option("--workers", opts.workers, "parallel evaluations")->check(CLI::Range(1, 256));
    run->add_option("--seed", opts.seed, "random seed of the search");
    run->add_option("--policy", opts.policy, "knob-space policy (hybrid, the default with --synth knob; uniform, hillclimb, anneal, genetic, tpe, guided) or selection policy (uct, the default with --synth llm; evolutionary, greedy, random); docs/SEARCH.md")->check(CLI::IsMember(core::allPolicyNames()));
    run->add_option("--target-speedup", opts.targetSpeedup, "stop once this speedup is reached (0: no target)");
    run->add_option("--stall", opts.stall, "stop after N evaluations without a 1% gain (0: never)");
    run->add_option("--time-limit", opts.timeLimitSeconds, "stop after this many seconds (0: no limit)");
    run->add_option("--samples", opts.samples, "timing samples per candidate")->check(CLI::Range(20, 10000));
    run->add_flag("--no-cache", [&](int64_t) { opts.useCache = false; }, "re-evaluate candidates seen before");
    run->add_flag("!--no-reverify", opts.reverify,
        "report the best without re-verifying it in a fresh worker with new seeds (the report says so)");
    run->add_option("--memory-op", opts.memoryOp, "memory operator per expansion: auto (a bandit, restart when stalled), inherit, compare, combine or restart")->check(CLI::IsMember({"auto", "inherit", "compare", "combine", "restart"}));
    run->add_option("--restart-after", opts.restartAfter, "with --memory-op auto: restart after N evaluations without a 1% gain (0: never)")->check(CLI::Range(0, 1000000));
    run->add_flag("!--no-warm-start", opts.warmStart, "start from the seeds only, not from the best kernels of earlier sessions");
    run->add_option("--warm-start", opts.warmStartCount, "warm-start kernels from earlier sessions (default 3)")->check(CLI::Range(0, 100));
    run->add_option("--move-skill", g.moveSkillFile, "a move skill (JSON from hone replay --learn-moves) that orders the hybrid policy's moves, instead of one learnt from the store's sessions on this machine (docs/SEARCH.md, \"Live move skills\")");
    run->add_option("--move-skill-scope", g.moveSkillScope, "learn the move skill from the store's sessions on this machine of the problem's family (family) or of every family (all)")->check(CLI::IsMember({"family", "all"}));
    run->add_flag("--json", json, "print the report as JSON");
    app::LlmCliOptions llmOpts;
    app::addLlmRunOptions(*run, opts, llmOpts);

    int64_t sessionId = 0;
    int extra = 0;
    auto* resume = app.add_subcommand("resume", "continue a stored session");
    resume->add_option("session", sessionId, "session id")->required();
    resume->add_option("--extra-budget", extra, "evaluations to add to the session's budget");
    resume->add_flag("--json", json, "print the report as JSON");
    app::addLlmLogOptions(*resume, llmOpts);

    std::string candidate, flags;
    std::vector<std::string> knobArgs;
    auto* eval = app.add_subcommand("eval", "evaluate one candidate against PROBLEM's reference and baseline");
    eval->add_option("problem", problem, "problem folder")->required()->check(CLI::ExistingDirectory);
    eval->add_option("candidate", candidate, "candidate source file")->required()->check(CLI::ExistingFile);
    eval->add_option("--knob", knobArgs, "NAME=VALUE (repeatable)");
    eval->add_option("--flags", flags, "extra compile flags");
    eval->add_flag("--json", json, "print the worker's full result");

    std::optional<int64_t> showSession;
    auto* show = app.add_subcommand("show", "list sessions, or print one session's tree");
    show->add_option("session", showSession, "session id");

    std::string nodeSpec, outDir;
    auto* exp = app.add_subcommand("export", "write a node's source, knobs, build script and evidence to DIR");
    exp->add_option("node", nodeSpec, "SESSION/NODE, e.g. 3/17 (SESSION with --portfolio)")->required();
    exp->add_option("dir", outDir, "output folder")->required();
    bool allowFailedReverify = false;
    exp->add_flag("--allow-failed-reverify", allowFailedReverify,
        "export a node that failed its re-verification anyway, for inspection");
    bool exportTorch = false, exportPortfolio = false;
    exp->add_flag("--portfolio", exportPortfolio,
        "export a session's per-shape portfolio: give SESSION instead of SESSION/NODE (the fastest node per bench shape, "
        "one source that dispatches by shape)");
    exp->add_flag("--torch", exportTorch,
        "also write DIR/torch: a PyTorch extension registering torch.ops.hone.PROBLEM, with a pytest and a README");

    std::string torchProblem, torchSource, torchOut;
    std::vector<std::string> torchKnobs;
    auto* exportTorchCmd = app.add_subcommand("export-torch",
        "write the PyTorch package of a kernel file (no session needed): torch.ops.hone.PROBLEM, pytest, README");
    exportTorchCmd->add_option("problem", torchProblem, "problem folder")->required()->check(CLI::ExistingDirectory);
    exportTorchCmd->add_option("source", torchSource, "kernel source file (.cpp or .cu)")->required()->check(CLI::ExistingFile);
    exportTorchCmd->add_option("dir", torchOut, "output folder")->required();
    exportTorchCmd->add_option("--knob", torchKnobs, "NAME=VALUE (repeatable; the file's starting knobs otherwise)");

    app::BenchOptions benchOpts;
    auto* bench = app::addBenchCommand(app, benchOpts);
    hone::app::addKbCommands(app, g.store, g.createFolders);
    app::TrajectoryOptions trajectories;
    auto* exportTrajectories = app::addTrajectoryCommand(app, trajectories);
    app::TargetsCliOptions targetsOpts;
    auto* targets = app::addTargetsCommand(app, targetsOpts);
    run->add_option("--on", g.on, "evaluate on TARGET of the targets file, or split the session across TARGET,TARGET,... (--targets; docs/REMOTE.md)");
    resume->add_option("--on", g.on, "evaluate on TARGET of the targets file, or split the session across TARGET,TARGET,... (--targets; docs/REMOTE.md)");
    for (CLI::App* c : {run, resume})
        c->add_option("--spool", g.spool,
            "evaluate through files in DIR, carried to and from a worker host that nothing reaches (exit status 6 "
            "while replies are awaited; docs/REMOTE.md)");
    app::addReplayCommand(app, g.store);
    app::ImportOptions importOpts;
    auto* import = app::addImportCommand(app, importOpts);
    std::string shell;
    auto* completion = app.add_subcommand("completion", "print a shell completion script: source <(hone completion bash)");
    completion->add_option("shell", shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
    app::addTypeChecks(app);
    app.footer(app::exitCodeHelp()); // after the commands: only `hone --help` lists the exit codes

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app::reportParseError(app, e);
    }
    try {
        if (man) {
            std::cout << app::manPage(app, HONE_VERSION);
            return 0;
        }
        if (*completion) {
            std::cout << app::completionScript(app, shell);
            return 0;
        }
        if (app.get_subcommands().empty())
            throw CLI::RequiredError::Subcommand(1);
        g.targetsFile = targetsOpts.file;
        if (*targets)
            return app::runTargets(targetsOpts, g.worker.empty() ? app::defaultWorkerPath() : g.worker);
        if (*run) {
            g.workersGiven = run->count("--workers") > 0;
            opts.problemDir = problem;
            app::applyLlmOptions(llmOpts, opts);
            // The default search (docs/SEARCH.md, "The default knob search"): hybrid for the knob
            // synthesizer, uct for an LLM (it needs a node to expand).
            if (run->count("--policy") == 0)
                opts.policy = core::defaultPolicy(opts.synth);
            return cmdRun(g, opts, json, std::nullopt, 0, llmOpts);
        }
        if (*resume)
            return cmdRun(g, opts, json, sessionId, extra, llmOpts);
        if (*exportTrajectories)
            return app::cmdExportTrajectories(g.store, trajectories);
        if (*eval)
            return cmdEval(g, problem, candidate, knobArgs, flags, json);
        if (*bench) {
            app::prepareNewStore(g.store, g.createFolders);
            return app::runBench(benchOpts, g.store,
                [&](int parallel, const std::string& target) { return makeExecutor(g, parallel, target); });
        }
        if (*show)
            return app::cmdShow(g.store, showSession);
        if (*exportTorchCmd)
            return app::cmdExportTorch(torchProblem, torchSource, torchOut, torchKnobs);
        if (*import)
            return app::runImport(importOpts);
        if (*exp)
            return app::cmdExport(g.store, nodeSpec, outDir, allowFailedReverify, exportTorch, exportPortfolio);
    } catch (const CLI::ParseError& e) {
        return app::reportParseError(app, e);
    } catch (const std::exception& e) {
        return app::reportError(e);
    }
    return 0;
}
