#include "core/engine.h"

#include "core/problem_spec.h"
#include "core/sha256.h"
#include "core/session_lock.h"
#include "core/store.h"
#include "core/utf8.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <thread>

namespace hone::core {
namespace {

using Clock = std::chrono::steady_clock;

/// Failures that say something about the candidate itself, so the same candidate on the same
/// device fails the same way. A crash, timeout or dead worker may be the machine's fault and
/// is evaluated again next time.
bool cacheable(const protocol::EvalSummary& s)
{
    if (s.ok)
        return true;
    static const char* const kinds[] = {"bad_candidate", "compile_error", "runtime_error", "wrong_result", "nan",
        "partial_write", "input_mutation"};
    for (const char* k : kinds)
        if (s.failureKind == k)
            return true;
    return false;
}

double rewardOf(const protocol::EvalSummary& s)
{
    return s.ok && s.speedup > 0 ? std::log2(1.0 + s.speedup) : 0.0;
}

KnobValues knobsFromJson(const nlohmann::json& j)
{
    KnobValues v;
    if (j.is_object())
        for (auto it = j.begin(); it != j.end(); ++it)
            v[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    return v;
}

nlohmann::json knobsToJson(const KnobValues& v)
{
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, val] : v)
        j[k] = val;
    return j;
}

std::string langOf(const std::string& name)
{
    if (name.size() > 3 && name.ends_with(".cu"))
        return "cuda";
    if (name.size() > 4 && name.ends_with(".hip"))
        return "hip";
    return "cpp";
}

} // namespace

nlohmann::json RunOptions::toJson() const
{
    return {{"problem_dir", std::filesystem::absolute(problemDir).string()}, {"target", target}, {"policy", policy},
        {"budget", budget}, {"workers", workers}, {"seed", seed}, {"target_speedup", targetSpeedup},
        {"stall", stall}, {"time_limit_s", timeLimitSeconds}, {"check_seeds", checkSeeds}, {"samples", samples},
        {"warmup", warmup}, {"compile_limit_s", compileLimitSeconds}, {"run_limit_s", runLimitSeconds},
        {"use_cache", useCache},
        {"uct", {{"c", uct.exploration}, {"widen_k", uct.widenK}, {"widen_alpha", uct.widenAlpha},
                    {"max_weight", uct.maxWeight}, {"normalize", uct.normalize}, {"self_arm", uct.selfArm}}},
        {"evolution", {{"archive", evolution.archiveSize}, {"tournament", evolution.tournament},
                          {"min_knob_distance", evolution.minKnobDistance}}},
        {"synth", synth}, {"memory_op", memoryOp}, {"restart_after", restartAfter}, {"knob_operators", knobOperators},
        {"warm_start", warmStart}, {"warm_start_count", warmStartCount}, {"repair", repair},
        {"llm_budget_usd", llmBudgetUsd}, {"llm_token_budget", llmTokenBudget}, {"hints", hints}, {"llm", llm},
        {"reverify", reverify}};
}

RunOptions RunOptions::fromJson(const nlohmann::json& j)
{
    RunOptions o;
    o.problemDir = j.value("problem_dir", std::string());
    o.target = j.value("target", o.target);
    o.policy = j.value("policy", o.policy);
    o.budget = j.value("budget", o.budget);
    o.workers = j.value("workers", o.workers);
    o.seed = j.value("seed", o.seed);
    o.targetSpeedup = j.value("target_speedup", o.targetSpeedup);
    o.stall = j.value("stall", o.stall);
    o.timeLimitSeconds = j.value("time_limit_s", o.timeLimitSeconds);
    o.checkSeeds = j.value("check_seeds", o.checkSeeds);
    o.samples = j.value("samples", o.samples);
    o.warmup = j.value("warmup", o.warmup);
    o.compileLimitSeconds = j.value("compile_limit_s", o.compileLimitSeconds);
    o.runLimitSeconds = j.value("run_limit_s", o.runLimitSeconds);
    o.useCache = j.value("use_cache", o.useCache);
    // Sessions stored before a parameter existed keep the search they had (UctParams::legacy).
    auto u = j.find("uct");
    if (u == j.end() || !u->is_object() || !u->contains("self_arm"))
        o.uct = UctParams::legacy();
    if (u != j.end() && u->is_object()) {
        o.uct.normalize = u->value("normalize", o.uct.normalize);
        o.uct.selfArm = u->value("self_arm", o.uct.selfArm);
        o.uct.exploration = u->value("c", o.uct.exploration);
        o.uct.widenK = u->value("widen_k", o.uct.widenK);
        o.uct.widenAlpha = u->value("widen_alpha", o.uct.widenAlpha);
        o.uct.maxWeight = u->value("max_weight", o.uct.maxWeight);
    }
    o.evolution = EvolutionParams::legacy();
    if (auto e = j.find("evolution"); e != j.end() && e->is_object()) {
        o.evolution.archiveSize = e->value("archive", o.evolution.archiveSize);
        o.evolution.tournament = e->value("tournament", o.evolution.tournament);
        o.evolution.minKnobDistance = e->value("min_knob_distance", o.evolution.minKnobDistance);
    }
    o.synth = j.value("synth", o.synth);
    // Sessions stored before a field existed keep the behaviour they had then.
    o.memoryOp = j.value("memory_op", std::string("inherit"));
    o.restartAfter = j.value("restart_after", o.restartAfter);
    o.knobOperators = j.value("knob_operators", false);
    o.warmStart = j.value("warm_start", false);
    o.warmStartCount = j.value("warm_start_count", o.warmStartCount);
    o.repair = j.value("repair", o.repair);
    o.llmBudgetUsd = j.value("llm_budget_usd", o.llmBudgetUsd);
    o.llmTokenBudget = j.value("llm_token_budget", o.llmTokenBudget);
    o.hints = j.value("hints", o.hints);
    if (auto l = j.find("llm"); l != j.end() && l->is_object())
        o.llm = *l;
    o.reverify = j.value("reverify", o.reverify);
    return o;
}

Engine::Engine(Store& store, Executor& executor)
    : m_store(store)
    , m_executor(executor)
{
}

namespace {

std::string langOfTarget(const std::string& target)
{
    return target == "cuda" ? "cuda" : target == "hip" ? "hip" : "cpp";
}

/// The baseline for `target`: the problem's, or, where that is for another device, the seed of
/// the target's language with the same stem (naive.cu -> naive.hip), else its first such seed.
const Seed* baselineFor(const ProblemSpec& spec, const std::string& target)
{
    const Seed* base = spec.baselineSeed();
    // A PyTorch baseline (reference.py) serves every target.
    if (!base || base->lang == "python" || target.empty() || target == "auto" || base->lang == langOfTarget(target))
        return base;
    const std::string lang = langOfTarget(target);
    const std::string stem = base->fileName.substr(0, base->fileName.rfind('.'));
    const Seed* first = nullptr;
    for (const Seed& s : spec.seeds) {
        if (s.lang != lang)
            continue;
        if (s.fileName.substr(0, s.fileName.rfind('.')) == stem)
            return &s;
        if (!first)
            first = &s;
    }
    return first ? first : base;
}

} // namespace

std::string resolveTarget(const ProblemSpec& spec, const std::string& requested)
{
    const Seed* base = baselineFor(spec, requested);
    if (!base)
        throw std::runtime_error("problem " + spec.name + " has no baseline seed; set baseline = \"FILE\" in problem.toml");
    // A PyTorch baseline (reference.py) runs anywhere: the target is what was asked for, else
    // the kind of the first seed, else the CPU.
    std::string baseTarget = base->lang == "cuda" ? "cuda" : base->lang == "hip" ? "hip" : "cpu";
    if (base->lang == "python") {
        if (!requested.empty() && requested != "auto")
            return requested;
        for (const Seed& s : spec.seeds)
            if (s.lang != "python") {
                baseTarget = s.lang == "cuda" ? "cuda" : s.lang == "hip" ? "hip" : "cpu";
                break;
            }
        return baseTarget;
    }
    const std::string target = requested.empty() || requested == "auto" ? baseTarget : requested;
    if (target != baseTarget)
        throw std::runtime_error("problem " + spec.name + " has its baseline " + base->fileName + " for " + baseTarget
            + ", not for --target " + target + "; use --target " + baseTarget + " or a problem with " + target
            + " seeds");
    return target;
}

void Engine::setup(const RunOptions& options)
{
    m_options = options;
    if (m_options.workers < 1)
        throw std::runtime_error("--workers must be at least 1");
    if (m_options.budget < 1)
        throw std::runtime_error("--budget must be at least 1");
    if (m_options.checkSeeds.size() < 3)
        throw std::runtime_error("at least 3 check seeds are required; got " + std::to_string(m_options.checkSeeds.size()));
    ProblemSpec spec = loadProblem(m_options.problemDir);
    m_problemHash = spec.contentHash;
    m_problemJson = resolveProblem(spec);
    try {
        m_memory = MemoryPolicy(m_options.memoryOp, m_options.restartAfter);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
    }
    m_warmStart.clear();
    m_warmStartNotes.clear();
    if (!builtinSynth(m_options.synth) && !m_external)
        throw std::runtime_error("--synth " + m_options.synth
            + " needs a synthesizer that this front end did not provide; use --synth knob or --synth grid");
    m_spec = std::make_shared<const ProblemSpec>(spec);
    try {
        if (isKnobPolicy(m_options.policy) && !builtinSynth(m_options.synth))
            throw std::invalid_argument("--policy " + m_options.policy
                + " proposes knob assignments itself; use it with --synth knob");
        // A knob-space policy proposes on its own; UCT only answers steering's questions then.
        m_policy = makeSelectionPolicy(isKnobPolicy(m_options.policy) ? std::string("uct") : m_options.policy,
            m_options.uct, m_options.evolution);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
    }
    m_outcomes.clear();
    m_rejected.clear();
    m_replies.clear();
    m_error.clear();

    m_options.target = resolveTarget(spec, m_options.target);
    const std::string lang = langOfTarget(m_options.target);

    nlohmann::json hello = m_executor.hello();
    m_device.clear();
    if (auto d = hello.find("devices"); d != hello.end() && d->is_array()) {
        for (const auto& dev : *d) {
            if (dev.value("kind", std::string()) != m_options.target)
                continue;
            m_device = dev.value("kind", std::string("?")) + ": " + dev.value("name", std::string("?"));
            if (dev.contains("cores"))
                m_device += " (" + std::to_string(dev.value("cores", 0)) + " cores)";
            if (dev.contains("uuid"))
                m_device += " [" + dev.value("uuid", std::string()) + "]";
            break;
        }
    }
    if (m_device.empty())
        throw std::runtime_error("target " + m_options.target + ": the worker reports no such device"
            + (hello.contains(m_options.target + "_unavailable")
                    ? " (" + hello.value(m_options.target + "_unavailable", std::string()) + ")"
                    : std::string())
            + "; run on a host that has one, or choose another --target");
    m_toolchain = m_options.target == "cuda" ? hello.value("nvcc", std::string())
        : m_options.target == "hip"          ? hello.value("hipcc", std::string())
                                             : hello.value("compiler", std::string());
    // Calibrate (or load the cached ceilings) once, before candidates are timed in parallel.
    m_ceilings = m_executor.ceilings(m_options.target);
    // Shape sets: the heaviest shape (weight times its cost-model floor) screens the others.
    {
        Ceilings c;
        try {
            c = ceilingsFromJson(m_ceilings);
        } catch (const std::exception&) {
        }
        m_timingOrder = timingOrder(spec, c);
    }

    m_synth = KnobSynthesizer();
    m_sourcesWithPrior = 0;
    m_sources.clear();
    for (const Seed& seed : spec.seeds) {
        if (seed.lang != lang)
            continue;
        std::string hash = m_store.putSource(seed.lang, seed.fileName, seed.source);
        KnobSpace space;
        try {
            space = parseKnobSpace(seed.source, (spec.dir / "seeds" / seed.fileName).string());
        } catch (const KnobError& e) {
            throw std::runtime_error(e.what());
        }
        if (m_priorProvider && !space.empty()) {
            KnobPrior prior = m_priorProvider(spec.family, m_device, m_options.target, space);
            if (!prior.empty()) {
                m_synth.setPrior(hash, std::move(prior));
                ++m_sourcesWithPrior;
            }
        }
        m_synth.addSource(hash, std::move(space));
        m_sources[hash] = {seed.fileName, seed.source};
    }
    if (builtinSynth(m_options.synth) && m_sources.empty())
        throw std::runtime_error("problem " + spec.name + " has no seed kernel for target " + m_options.target
            + ": --synth " + m_options.synth + " only tunes the knobs of seeds/*."
            + (lang == "cuda" ? "cu" : lang == "hip" ? "hip" : "cpp")
            + " and needs at least one; add a seed, or let a model write kernels from the reference (--synth llm)");
    const Seed* base = baselineFor(spec, m_options.target);
    if (!base)
        throw std::runtime_error("problem " + spec.name + " has no baseline seed");
    std::string baseHash = sha256Hex(base->source);
    const KnobSpace* baseSpace = m_synth.space(baseHash);
    KnobValues baseKnobs = baseSpace ? baseSpace->initial().value_or(KnobValues {}) : KnobValues {};
    m_baselineCandidate = {{"name", base->fileName}, {"lang", base->lang}, {"source", base->source},
        {"knobs", knobsToJson(baseKnobs)}, {"flags", baseSpace ? baseSpace->flags : std::string()}};
}

Report Engine::run(const RunOptions& options, EngineObserver* observer)
{
    setup(options);
    ProblemSpec spec = loadProblem(m_options.problemDir);
    int64_t problemId = m_store.upsertProblem(spec);
    m_session = m_store.createSession(problemId, m_options.target, m_options.policy, m_options.seed, m_options.toJson());
    const SessionLock lock(m_store.path(), m_session); // held until the loop returns
    m_tree = SearchTree();
    m_requeue.clear();
    m_alreadyEvaluated = 0;
    m_nextSeq = 0;

    NodeRecord root;
    root.id = 0;
    root.parentId = -1;
    root.seq = m_nextSeq++;
    root.origin = "root";
    root.op = "restart";
    m_store.insertNode(m_session, root);

    // The baseline seed is evaluated first: every later speedup is measured against it.
    // Seeds for the session's device only: a problem may carry .cu and .hip seeds side by side.
    // A PyTorch baseline (reference.py) is timed beside every candidate, never as a node.
    std::vector<const Seed*> order;
    const Seed* baseSeed = baselineFor(spec, m_options.target);
    if (baseSeed && baseSeed->lang != "python")
        order.push_back(baseSeed);
    for (const Seed& s : spec.seeds)
        if (&s != baseSeed && s.lang == langOfTarget(m_options.target))
            order.push_back(&s);
    for (const Seed* s : order) {
        std::string hash = sha256Hex(s->source);
        const KnobSpace* space = m_synth.space(hash);
        Node n;
        n.parent = 0;
        n.sourceHash = hash;
        n.sourceName = s->fileName;
        n.origin = "seed";
        n.op = "restart";
        if (space && !space->empty()) {
            auto first = space->initial();
            if (!first)
                throw std::runtime_error("seed " + s->fileName + ": no knob assignment satisfies its hone:require lines");
            n.knobs = *first;
        }
        n.flags = space ? space->flags : std::string();
        NodeId id = m_tree.add(n);
        NodeRecord rec {id, 0, m_nextSeq++, hash, knobsToJson(n.knobs), n.flags, "seed", "restart", {}};
        m_store.insertNode(m_session, rec);
        m_requeue.push_back(id);
        if (observer)
            observer->nodeAdded(m_tree.node(id));
    }
    if (m_options.warmStart)
        addWarmStart(spec, observer);
    return loop(observer);
}

Report Engine::resume(int64_t sessionId, EngineObserver* observer, int extraBudget)
{
    auto rec = m_store.session(sessionId);
    if (!rec)
        throw std::runtime_error("no session " + std::to_string(sessionId) + " in store " + m_store.path().string()
            + "; list sessions with 'hone show'");
    // One driver per session: a second `hone resume` (or a workbench) is refused here, before it
    // re-queues what the first one has in flight.
    const SessionLock lock(m_store.path(), sessionId);
    RunOptions options = RunOptions::fromJson(rec->config);
    options.budget += extraBudget;
    setup(options);
    if (m_problemHash != rec->problemHash)
        throw std::runtime_error("problem " + options.problemDir.string() + " changed since session "
            + std::to_string(sessionId) + " started (content hash " + m_problemHash.substr(0, 12) + " vs "
            + rec->problemHash.substr(0, 12) + "); start a new session with 'hone run'");
    m_session = sessionId;
    m_tree = SearchTree();
    m_requeue.clear();
    m_alreadyEvaluated = 0;

    auto nodes = m_store.nodes(sessionId);
    std::map<int64_t, EvaluationRecord> evals;
    for (auto& e : m_store.evaluations(sessionId))
        evals.emplace(e.nodeId, std::move(e));
    int64_t maxSeq = 0;
    for (const NodeRecord& r : nodes) {
        maxSeq = std::max(maxSeq, r.seq);
        if (r.id == 0)
            continue;
        Node n;
        n.parent = r.parentId;
        n.sourceHash = r.sourceHash;
        auto src = m_sources.find(r.sourceHash);
        if (src != m_sources.end()) {
            n.sourceName = src->second.first;
        } else if (auto stored = m_store.source(r.sourceHash)) {
            m_sources[r.sourceHash] = {stored->name, stored->text};
            n.sourceName = stored->name;
            m_synth.addSource(r.sourceHash, parseKnobSpace(stored->text, stored->name));
        }
        n.knobs = knobsFromJson(r.knobs);
        n.flags = r.flags;
        n.origin = r.origin;
        n.op = r.op;
        NodeId id = m_tree.add(n);
        if (id != r.id)
            throw std::runtime_error("session " + std::to_string(sessionId) + " has a gap in its node ids at "
                + std::to_string(r.id) + "; the store is damaged");
        if (r.origin == "warm") {
            WarmStartNode w {id, r.fromSession, r.fromNode, {}, true, 0};
            if (auto from = m_store.session(r.fromSession)) {
                w.problemName = from->problemName;
                w.sameProblem = from->problemHash == rec->problemHash || from->problemName == rec->problemName;
            }
            m_warmStart.push_back(std::move(w));
        }
    }
    std::vector<const NodeRecord*> bySeq;
    for (const NodeRecord& r : nodes)
        if (r.id != 0)
            bySeq.push_back(&r);
    std::sort(bySeq.begin(), bySeq.end(), [](auto* a, auto* b) { return a->seq < b->seq; });
    for (const NodeRecord* r : bySeq) {
        auto it = evals.find(r->id);
        if (it == evals.end()) {
            m_requeue.push_back(r->id);
            continue;
        }
        const EvaluationRecord& e = it->second;
        m_tree.setResult(r->id, e.status == "ok", e.speedup, e.failureKind);
        m_tree.node(r->id).bound = e.bound;
        ++m_alreadyEvaluated;
    }
    // The memory policy's statistics: the stored nodes and results, told in proposal order, give
    // the state the interrupted run had once all of them were applied.
    for (const NodeRecord* r : bySeq)
        registerProposal(r->id, r->seq);
    for (const NodeRecord* r : bySeq)
        if (auto it = evals.find(r->id); it != evals.end()) {
            const Node& n = m_tree.node(r->id);
            m_memory.applied(r->id, it->second.status == "ok", it->second.speedup, m_tree.node(n.parent).speedup);
        }
    // The engineer's steering outlives the process: prunes and hints carry over, and so do
    // hints written while no search ran (a rejected review, say: logged as "queued").
    m_hints.clear();
    for (const SteeringRecord& s : m_store.steering(sessionId)) {
        if (s.nodeId < 0 || static_cast<size_t>(s.nodeId) >= m_tree.size())
            continue;
        const bool applied = s.outcome == "applied" || s.outcome == "queued";
        if (!applied)
            continue;
        if (s.command == "prune" && s.nodeId != 0)
            m_tree.node(s.nodeId).pruned = true;
        else if (s.command == "hint" && s.payload.contains("text") && s.payload["text"].is_string())
            m_hints[s.nodeId].push_back(s.payload["text"].get<std::string>());
    }
    m_nextSeq = maxSeq + 1;
    m_store.setSessionStatus(sessionId, "running", "");
    return loop(observer);
}

nlohmann::json Engine::makeEvalRequest(NodeId id) const
{
    const Node& n = m_tree.node(id);
    const auto& src = m_sources.at(n.sourceHash);
    nlohmann::json candidate = {{"name", src.first}, {"lang", langOf(src.first)}, {"source", src.second},
        {"knobs", knobsToJson(n.knobs)}, {"flags", n.flags}};
    nlohmann::json req = protocol::makeMessage("eval");
    req["id"] = "s" + std::to_string(m_session) + "-n" + std::to_string(id);
    req["problem"] = m_problemJson;
    req["candidate"] = std::move(candidate);
    req["baseline"] = m_baselineCandidate;
    req["stages"] = {"compile", "check", "time"};
    // Without timing_seed and recheck_seed: the worker's defaults (1, 1000), and the cache keys
    // of earlier sessions stay as they were.
    req["config"] = {{"seeds", m_options.checkSeeds}, {"samples", m_options.samples}, {"warmup", m_options.warmup},
        {"timing_shape", m_timingOrder.empty() ? size_t(0) : m_timingOrder.front()}};
    if (m_timingOrder.size() > 1) {
        nlohmann::json order = nlohmann::json::array();
        for (size_t i : m_timingOrder)
            order.push_back(i);
        req["config"]["timing_shapes"] = order;
    }
    req["limits"] = {{"compile_s", m_options.compileLimitSeconds}, {"run_s", m_options.runLimitSeconds}};
    return req;
}

Objective Engine::applyObjective(NodeId id, protocol::EvalSummary& s, nlohmann::json& result, double screenScale) const
{
    Objective o = objectiveOf(s, m_spec ? m_spec->benchWeights : std::vector<double> {}, screenScale);
    if (!s.ok || s.shapes.empty())
        return o;
    if (id == 1) // the baseline seed is not slower than itself, whatever the noise says
        o.slowerOn.clear();
    s.speedup = o.value;
    if (result.is_object())
        result["objective"] = o.toJson();
    return o;
}

Report Engine::loop(EngineObserver* observer)
{
    struct Arrived {
        NodeId node = 0;
        protocol::EvalSummary summary;
        nlohmann::json result;
        bool fromCache = false;
    };
    const int W = m_options.workers;
    const auto started = Clock::now();
    Progress progress;
    progress.session = m_session;
    progress.budget = m_options.budget;
    progress.evaluations = m_alreadyEvaluated;
    if (auto b = m_tree.best()) {
        progress.bestNode = *b;
        progress.bestSpeedup = m_tree.node(*b).speedup;
    }
    std::map<NodeId, protocol::EvalSummary> summaries;
    std::map<NodeId, nlohmann::json> results;
    const bool external = !builtinSynth(m_options.synth);
    m_grid.reset();
    m_knobPolicy.reset();
    if (external)
        beginExternal();
    for (const auto& e : m_store.evaluations(m_session)) {
        try {
            summaries[e.nodeId] = protocol::summarize(e.result);
            if (summaries[e.nodeId].ok)
                summaries[e.nodeId].speedup = e.speedup; // the objective it was stored with
            results[e.nodeId] = e.result;
        } catch (const protocol::ProtocolError&) {
        }
    }

    std::deque<NodeId> requeue(m_requeue.begin(), m_requeue.end());
    std::map<std::string, std::pair<int64_t, NodeId>> inFlight; // job id -> (k, node)
    std::map<int64_t, Arrived> ready;
    int64_t kNext = 0;
    int64_t kApply = 0;
    std::string stopReason;
    bool exhausted = false;
    const NodeId baselineNode = 1;

    auto emitProgress = [&] {
        progress.inFlight = static_cast<int>(inFlight.size());
        progress.elapsedSeconds = std::chrono::duration<double>(Clock::now() - started).count();
        progress.evaluationsPerMinute
            = progress.elapsedSeconds > 0 ? progress.fresh * 60.0 / progress.elapsedSeconds : 0.0;
        if (observer)
            observer->progressChanged(progress);
    };

    auto makeRequest = [&](NodeId id) { return makeEvalRequest(id); };
    auto cacheKeyOf = [&](const nlohmann::json& req) {
        nlohmann::json config = req["config"];
        config.erase("screen_speedup"); // a screened hit is checked against the threshold instead
        nlohmann::json keyed = {{"problem", m_problemHash}, {"candidate", req["candidate"]},
            {"baseline", req["baseline"]}, {"config", config}, {"device", m_device},
            {"toolchain", m_toolchain}};
        return sha256Hex(dumpJson(keyed)); // the same bytes as dump() for valid text; never throws
    };
    auto storeResult = [&](NodeId id, const std::string& key, const protocol::EvalSummary& s,
                           const nlohmann::json& result, bool fromCache) {
        EvaluationRecord e;
        e.nodeId = id;
        e.cacheKey = cacheable(s) ? key : std::string();
        e.status = s.ok ? "ok" : "failed";
        e.failureKind = s.failureKind;
        e.failureMessage = s.failureMessage;
        e.medianNs = s.medianNs;
        e.speedup = s.ok ? s.speedup : 0.0;
        e.reward = rewardOf(s);
        e.bound = s.bound;
        e.device = m_device;
        e.fromCache = fromCache;
        e.result = result;
        if (s.ok && !s.shapes.empty()) {
            const Objective o = objectiveOf(s, m_spec->benchWeights, 0);
            for (size_t i = 0; i < s.shapes.size(); ++i) {
                const auto& x = s.shapes[i];
                e.shapes.push_back(ShapeResultRecord {static_cast<int64_t>(x.index), x.label, x.medianNs,
                    x.baselineMedianNs, x.speedup, o.weights[i], x.fracBandwidth, x.fracCompute});
            }
            e.screened = s.screened;
            if (id != 1)
                e.slowerShapes = o.slowerOn;
        }
        m_store.insertEvaluation(m_session, e);
    };
    auto summarizeSafely = [&](const std::string& id, nlohmann::json& result) {
        try {
            return protocol::summarize(result);
        } catch (const protocol::ProtocolError& e) {
            result = protocol::makeFailure(id, protocol::FailureKind::ProtocolError, "result", e.what());
            return protocol::summarize(result);
        }
    };
    std::map<NodeId, std::string> keys;
    std::map<NodeId, double> screenScale; // per proposed node: see objectiveOf
    // Screening (docs/SEARCH.md, "Shape sets"): the other shapes are timed only for a candidate
    // within kScreenFraction of the best full result on the screening shape. Decided from the
    // results applied when the node is proposed, so the tree depends on results alone.
    auto screenFor = [&](NodeId id, nlohmann::json& req) {
        if (m_timingOrder.size() < 2)
            return;
        double bestScreen = 0;
        double scale = 0;
        for (const auto& [node, s] : summaries) {
            if (!s.ok || s.screened || s.shapes.empty() || !(s.shapes.front().speedup > 0))
                continue;
            if (s.shapes.front().speedup > bestScreen) {
                bestScreen = s.shapes.front().speedup;
                scale = s.speedup / bestScreen;
            }
        }
        screenScale[id] = scale;
        if (bestScreen > 0)
            req["config"]["screen_speedup"] = kScreenFraction * bestScreen;
    };

    auto propose = [&]() -> std::optional<NodeId> {
        if (!requeue.empty()) {
            NodeId id = requeue.front();
            requeue.pop_front();
            return id;
        }
        if (external)
            return proposeExternal(observer, stopReason);
        if (m_options.synth == "grid")
            return proposeGrid(observer);
        if (isKnobPolicy(m_options.policy))
            return proposeKnobPolicy(observer, stopReason);
        for (int tries = 0; tries < 1000; ++tries) {
            // One generator per proposal index: resume and replay make the same choice. The
            // policy draws from its own, so a policy that draws nothing (uct) leaves the
            // synthesizer's choices as they were.
            std::mt19937_64 pick(selectionSeed(m_options.seed, m_nextSeq));
            bool boosted = false;
            auto sel = selectForExpansion(pick, boosted);
            if (!sel)
                return std::nullopt;
            std::mt19937_64 rng(m_options.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(m_nextSeq));
            auto p = m_options.knobOperators ? m_synth.propose(m_tree, *sel, rng, chooseOperator(boosted))
                                             : m_synth.propose(m_tree, *sel, rng);
            if (!p) {
                m_tree.markExhausted(*sel);
                continue;
            }
            // The operator is always inherit without knobOperators.
            return addKnobChild(p->parent, p->sourceHash, p->knobs, p->flags, p->origin, memoryOperatorName(p->op),
                observer);
        }
        return std::nullopt;
    };

    auto apply = [&](Arrived& a) {
        m_tree.removeVirtualLoss(a.node);
        m_tree.setResult(a.node, a.summary.ok, a.summary.speedup, a.summary.failureKind);
        m_tree.node(a.node).bound = a.summary.bound; // the guided knob policy reads the parent's diagnosis
        m_memory.applied(a.node, a.summary.ok, a.summary.speedup, m_tree.node(m_tree.node(a.node).parent).speedup);
        noteOutcome(a.node, a.summary, a.result);
        summaries[a.node] = a.summary;
        results[a.node] = a.result;
        ++progress.evaluations;
        if (a.fromCache)
            ++progress.cacheHits;
        if (!a.summary.ok)
            ++progress.failures;
        if (a.summary.ok && a.summary.speedup > progress.bestSpeedup) {
            progress.bestSpeedup = a.summary.speedup;
            progress.bestNode = a.node;
        }
        if (observer) {
            observer->nodeEvaluated(m_tree.node(a.node), a.summary);
            observer->nodeResult(m_tree.node(a.node), a.result);
        }
        // Node 1 is the baseline seed, unless the baseline is the PyTorch reference (never a node).
        if (a.node == baselineNode && m_baselineCandidate.value("lang", std::string()) != "python"
            && !a.summary.ok && stopReason.empty())
            stopReason = "baseline seed failed (" + a.summary.failureKind + "): " + a.summary.failureMessage;
        if (stopReason.empty() && m_options.targetSpeedup > 0 && progress.bestSpeedup >= m_options.targetSpeedup)
            stopReason = "target speedup " + std::to_string(m_options.targetSpeedup) + "x reached";
        // The memory policy counts the stall (rebuilt on resume): the same rule as before.
        if (stopReason.empty() && m_options.stall > 0 && m_memory.sinceGain() >= m_options.stall)
            stopReason = "stalled: no 1% gain in " + std::to_string(m_options.stall) + " evaluations";
        emitProgress();
    };

    // Results are applied lazily and in proposal order: proposal k sees exactly the results of
    // proposals 0..k-W, whatever order the workers finish in.
    auto applyNext = [&]() -> bool {
        auto it = ready.find(kApply);
        if (it == ready.end())
            return false;
        apply(it->second);
        ready.erase(it);
        ++kApply;
        return true;
    };
    auto waitForResult = [&] {
        auto done = m_executor.next(std::chrono::milliseconds(200));
        if (!done) {
            emitProgress();
            return;
        }
        auto f = inFlight.find(done->id);
        if (f == inFlight.end())
            return; // a stale reply for a job we no longer track
        auto [k, node] = f->second;
        inFlight.erase(f);
        Arrived a;
        a.node = node;
        a.result = std::move(done->result);
        a.summary = summarizeSafely(done->id, a.result);
        applyObjective(node, a.summary, a.result, screenScale[node]);
        ++progress.fresh;
        // Stored on arrival, applied in proposal order: a kill loses only what is in flight.
        storeResult(node, keys[node], a.summary, a.result, false);
        ready.emplace(k, std::move(a));
    };

    bool paused = false;
    while (true) {
        if (m_stopRequested && stopReason.empty())
            stopReason = "stopped by request";
        if (stopReason.empty() && m_options.timeLimitSeconds > 0
            && std::chrono::duration<double>(Clock::now() - started).count() >= m_options.timeLimitSeconds)
            stopReason = "time limit of " + std::to_string(static_cast<int>(m_options.timeLimitSeconds)) + " s reached";

        // Results the next proposal must see.
        while (kApply <= kNext - W && applyNext()) {
        }
        // Steering commands posted so far, including from the observer of those results.
        applySteering(observer, requeue, paused, exhausted, stopReason);
        bool budgetLeft = m_alreadyEvaluated + kNext < m_options.budget;
        if (paused && stopReason.empty() && !exhausted && budgetLeft) {
            // Paused: apply what arrives, propose nothing, keep listening for commands.
            while (applyNext()) {
            }
            if (kApply == kNext) {
                emitProgress();
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            } else {
                waitForResult();
            }
            continue;
        }
        bool proposing = stopReason.empty() && !exhausted && budgetLeft;
        if (proposing && kApply > kNext - W) {
            auto id = propose();
            if (id && external) {
                if (auto failed = rejection(*id)) {
                    // A reply that never became a kernel: a failed node, no worker involved.
                    int64_t k = kNext++;
                    m_tree.addVirtualLoss(*id);
                    Arrived a;
                    a.node = *id;
                    a.result = std::move(*failed);
                    a.summary = summarizeSafely(a.result.value("id", std::string()), a.result);
                    storeResult(*id, std::string(), a.summary, a.result, false);
                    ready.emplace(k, std::move(a));
                    continue;
                }
            }
            if (id) {
                nlohmann::json req = makeRequest(*id);
                screenFor(*id, req);
                std::string key = cacheKeyOf(req);
                keys[*id] = key;
                int64_t k = kNext++;
                // Every proposed, not yet applied node carries a virtual loss, cached or not,
                // so selection does not depend on where a result came from.
                m_tree.addVirtualLoss(*id);
                std::optional<EvaluationRecord> hit;
                if (m_options.useCache)
                    hit = m_store.cachedEvaluation(key);
                // A hit screened out under a lower bar than today's is timed again.
                if (hit && hit->screened && !hit->shapes.empty()
                    && hit->shapes.front().speedup >= req["config"].value("screen_speedup", 0.0))
                    hit.reset();
                if (hit) {
                    Arrived a;
                    a.node = *id;
                    a.result = hit->result;
                    a.summary = summarizeSafely(req["id"], a.result);
                    applyObjective(*id, a.summary, a.result, screenScale[*id]);
                    a.fromCache = true;
                    storeResult(*id, key, a.summary, a.result, true);
                    ready.emplace(k, std::move(a));
                } else {
                    std::string jobId = req["id"];
                    inFlight[jobId] = {k, *id};
                    m_executor.submit(EvalJob {jobId, std::move(req)});
                }
                continue;
            }
            // Nothing can be expanded with what is applied so far: apply the next result (in
            // order) and try again; with nothing outstanding the space is exhausted.
            if (kApply == kNext) {
                exhausted = true;
                continue;
            }
            if (!applyNext())
                waitForResult();
            continue;
        }
        if (!proposing) {
            // No more proposals: drain everything, still in order.
            while (applyNext()) {
            }
            if (kApply == kNext) {
                if (stopReason.empty())
                    stopReason = !exhausted ? "budget of " + std::to_string(m_options.budget) + " evaluations spent"
                        : m_grid ? "sweep complete: every admissible assignment of the seeds evaluated ("
                            + std::to_string(m_grid->size()) + ")"
                                 : "search space exhausted";
                break;
            }
        }
        waitForResult();
    }

    std::string status = stopReason.rfind("baseline seed failed", 0) == 0 || !m_error.empty() ? "failed"
        : (m_stopRequested ? "stopped" : "finished");
    m_store.setSessionStatus(m_session, status, stopReason);
    emitProgress();

    Report report;
    report.progress = progress;
    report.stopReason = stopReason;
    report.error = m_error;
    report.device = m_device;
    report.memoryOp = m_memory.name();
    for (MemoryOperator op : {MemoryOperator::Inherit, MemoryOperator::Compare, MemoryOperator::Combine,
             MemoryOperator::Restart})
        report.operators.emplace_back(memoryOperatorName(op), m_memory.arm(op));
    report.warmStart = m_warmStart;
    report.warmStartNotes = m_warmStartNotes;
    // The best is named only after a fresh worker with new seeds agrees (engine_reverify.cpp).
    const bool failedSession = status == "failed";
    if (failedSession || !m_tree.best()) {
        report.best = m_tree.best();
        if (report.best)
            report.reverifyNote = "not re-verified: the session failed";
    } else {
        reverifyBest(report);
    }
    if (auto bl = summaries.find(baselineNode); bl != summaries.end())
        report.baselineMedianNs = bl->second.medianNs;
    if (report.best) {
        const Node& b = m_tree.node(*report.best);
        report.bestSource = b.sourceName;
        report.bestKnobs = b.knobs;
        report.bestFlags = b.flags;
        report.bestSpeedup = b.speedup;
        if (auto s = summaries.find(*report.best); s != summaries.end()) {
            report.bestMedianNs = s->second.medianNs;
            report.bound = s->second.bound;
            report.evidence = s->second.evidence;
            report.fracBandwidth = s->second.fracBandwidth;
            report.fracCompute = s->second.fracCompute;
            if (s->second.baselineMedianNs > 0)
                report.baselineMedianNs = s->second.baselineMedianNs;
            if (!s->second.shapes.empty()) {
                const Objective o = objectiveOf(s->second, m_spec->benchWeights, 0);
                report.bestShapes = s->second.shapes;
                report.bestShapeWeights = o.weights;
                if (*report.best != baselineNode)
                    report.bestSlowerOn = o.slowerOn;
            }
        }
    }
    return report;
}

} // namespace hone::core
