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
#include <tuple>
#include <map>
#include <thread>

namespace hone::core {
namespace {

using Clock = std::chrono::steady_clock;

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
    nlohmann::json j = {{"problem_dir", std::filesystem::absolute(problemDir).string()}, {"target", target},
        {"policy", policy}, {"budget", budget}, {"workers", workers}, {"seed", seed}, {"target_speedup", targetSpeedup},
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
    if (moveSkill)
        j["move_skill"] = {{"from", moveSkillFrom}, {"skill", moveSkill->toJson()}};
    return j;
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
    if (auto m = j.find("move_skill"); m != j.end() && m->is_object()) {
        o.moveSkill = std::make_shared<const MoveSkill>(MoveSkill::fromJson(m->value("skill", nlohmann::json()),
            "the session's stored move skill"));
        o.moveSkillFrom = m->value("from", std::string());
    }
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
    try {
        m_problemRequest = protocol::EvalRequest::forProblem(resolveProblem(spec));
    } catch (const protocol::RequestError& e) {
        throw std::runtime_error("problem " + spec.name + " does not resolve to a valid eval request: " + e.what());
    }
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
    m_baseline = {base->fileName, base->lang, base->source, baseKnobs, baseSpace ? baseSpace->flags : std::string()};
}

Report Engine::run(const RunOptions& options, EngineObserver* observer)
{
    setup(options);
    ProblemSpec spec = loadProblem(m_options.problemDir);
    // The hybrid policy's move skill, fixed before the session is stored (resume keeps it).
    if (m_moveSkillProvider && !m_options.moveSkill && m_options.policy == "hybrid")
        std::tie(m_options.moveSkill, m_options.moveSkillFrom)
            = m_moveSkillProvider(spec.family, m_device, m_options.target);
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

protocol::EvalRequest Engine::makeEvalRequest(NodeId id) const
{
    const Node& n = m_tree.node(id);
    const auto& src = m_sources.at(n.sourceHash);
    protocol::EvalRequest req = m_problemRequest;
    req.id = "s" + std::to_string(m_session) + "-n" + std::to_string(id);
    req.candidate = {src.first, langOf(src.first), src.second, n.knobs, n.flags};
    req.baseline = m_baseline;
    // timing_seed and recheck_seed stay at the worker's defaults (1, 1000), so the cache keys
    // of earlier sessions stay as they were.
    req.seeds.assign(m_options.checkSeeds.begin(), m_options.checkSeeds.end());
    req.samples = m_options.samples;
    req.warmup = m_options.warmup;
    req.timingShape = m_timingOrder.empty() ? size_t(0) : m_timingOrder.front();
    if (m_timingOrder.size() > 1)
        req.timingShapes.assign(m_timingOrder.begin(), m_timingOrder.end());
    req.compileSeconds = m_options.compileLimitSeconds;
    req.runSeconds = m_options.runLimitSeconds;
    return req;
}

Objective Engine::applyObjective(NodeId id, protocol::EvalResult& r, double screenScale) const
{
    Objective o = objectiveOf(r, m_spec ? m_spec->benchWeights : std::vector<double> {}, screenScale);
    if (!r.ok() || r.shapeResults().empty())
        return o;
    if (id == 1) // the baseline seed is not slower than itself, whatever the noise says
        o.slowerOn.clear();
    r.objective = o.record();
    return o;
}

} // namespace hone::core
