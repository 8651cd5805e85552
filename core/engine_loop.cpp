// The search loop of one run or resume (Engine::loop), in named parts: the in-flight window of
// W proposals, results stored on arrival and applied in proposal order, the proposal itself
// (requeued, external, grid, knob policy or the tree's knob synthesizer), and the report.

#include "core/engine.h"
#include "core/cache_hashes.h"

#include "core/sha256.h"
#include "core/store.h"
#include "core/utf8.h"

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
bool cacheable(const protocol::EvalResult& r)
{
    if (r.ok())
        return true;
    using K = protocol::FailureKind;
    switch (r.failureKind()) {
    case K::BadCandidate:
    case K::CompileError:
    case K::RuntimeError:
    case K::WrongResult:
    case K::Nan:
    case K::PartialWrite:
    case K::InputMutation:
        return true;
    case K::Crash:
    case K::Timeout:
    case K::MemoryLimit:
    case K::ProtocolError:
    case K::WorkerError:
    case K::Suspicious:
    case K::LlmError:
        return false;
    }
    return false;
}

double rewardOf(const protocol::EvalResult& r)
{
    return r.ok() && r.speedup() > 0 ? std::log2(1.0 + r.speedup()) : 0.0;
}

} // namespace

/// The state of one loop: what is in flight, what has arrived and waits for its turn, what has
/// been applied. Results are applied lazily and in proposal order: proposal k sees exactly the
/// results of proposals 0..k-W, whatever order the workers finish in.
class Engine::Loop {
public:
    Loop(Engine& engine, EngineObserver* observer);
    Report run();

private:
    struct Arrived {
        NodeId node = 0;
        protocol::EvalResult result;
        bool fromCache = false;
    };
    static constexpr NodeId kBaselineNode = 1;

    void emitProgress();
    std::string cacheKeyOf(const protocol::EvalRequest& req) const;
    void storeResult(NodeId id, const std::string& key, const protocol::EvalResult& r, bool fromCache);
    /// Decodes a worker's reply; one that breaks the format becomes a protocol_error failure.
    static protocol::EvalResult decode(const std::string& id, const nlohmann::json& result);
    void screenFor(NodeId id, protocol::EvalRequest& req);
    std::optional<NodeId> propose();
    /// Sends a proposed node to the executor, or takes its result from the cache or from the
    /// synthesizer's rejection (a reply that never became a kernel).
    void dispatch(NodeId id);
    void apply(Arrived& a);
    bool applyNext();
    void waitForResult();
    Report finish();

    Engine& e;
    EngineObserver* m_observer;
    const int m_window;
    const Clock::time_point m_started;
    const bool m_external;
    Progress m_progress;
    std::map<NodeId, protocol::EvalResult> m_results; // applied, and stored before this run
    std::deque<NodeId> m_requeue;
    std::map<std::string, std::pair<int64_t, NodeId>> m_inFlight; // job id -> (k, node)
    std::map<int64_t, Arrived> m_ready;
    std::map<NodeId, std::string> m_keys;
    std::map<NodeId, double> m_screenScale; // per proposed node: see objectiveOf
    int64_t m_kNext = 0;
    int64_t m_kApply = 0;
    std::string m_stopReason;
    bool m_exhausted = false;
    bool m_paused = false;
};

Report Engine::loop(EngineObserver* observer)
{
    Loop l(*this, observer);
    return l.run();
}

Engine::Loop::Loop(Engine& engine, EngineObserver* observer)
    : e(engine)
    , m_observer(observer)
    , m_window(engine.m_options.workers)
    , m_started(Clock::now())
    , m_external(!builtinSynth(engine.m_options.synth))
{
    m_progress.session = e.m_session;
    m_progress.budget = e.m_options.budget;
    m_progress.evaluations = e.m_alreadyEvaluated;
    if (auto b = e.m_tree.best()) {
        m_progress.bestNode = *b;
        m_progress.bestSpeedup = e.m_tree.node(*b).speedup;
    }
    e.m_grid.reset();
    e.m_knobPolicy.reset();
    if (m_external)
        e.beginExternal();
    for (const auto& ev : e.m_store.evaluations(e.m_session)) {
        try {
            m_results[ev.nodeId] = protocol::EvalResult::fromJson(ev.result); // with the objective it was stored with
        } catch (const protocol::ProtocolError&) {
        }
    }
    m_requeue.assign(e.m_requeue.begin(), e.m_requeue.end());
}

void Engine::Loop::emitProgress()
{
    m_progress.inFlight = static_cast<int>(m_inFlight.size());
    m_progress.elapsedSeconds = std::chrono::duration<double>(Clock::now() - m_started).count();
    m_progress.evaluationsPerMinute
        = m_progress.elapsedSeconds > 0 ? m_progress.fresh * 60.0 / m_progress.elapsedSeconds : 0.0;
    if (m_observer)
        m_observer->progressChanged(m_progress);
}

std::string Engine::Loop::cacheKeyOf(const protocol::EvalRequest& req) const
{
    nlohmann::json config = req.configToJson();
    config.erase("screen_speedup"); // a screened hit is checked against the threshold instead
    config.erase("screen_probe");
    nlohmann::json keyed = {{"problem", e.m_problemHash}, {"candidate", req.candidate.toJson()},
        {"baseline", req.baseline ? req.baseline->toJson() : nlohmann::json()}, {"config", config}, {"device", e.m_device}, {"toolchain", e.m_toolchain}};
    return sha256Hex(dumpJson(keyed)); // the same bytes as dump() for valid text; never throws
}

void Engine::Loop::storeResult(NodeId id, const std::string& key, const protocol::EvalResult& s, bool fromCache)
{
    EvaluationRecord r;
    r.nodeId = id;
    r.cacheKey = cacheable(s) ? key : std::string();
    r.status = s.ok() ? "ok" : "failed";
    r.failureKind = s.ok() ? std::string() : protocol::failureKindName(s.failureKind());
    r.failureMessage = s.failure ? s.failure->message : std::string();
    r.medianNs = s.medianNs();
    r.speedup = s.speedup();
    r.reward = rewardOf(s);
    r.bound = s.bound();
    r.device = e.m_device;
    r.fromCache = fromCache;
    r.result = s.toJson();
    if (s.ok() && !s.shapeResults().empty()) {
        const Objective o = objectiveOf(s, e.m_spec->benchWeights, 0);
        for (size_t i = 0; i < s.shapes->size(); ++i) {
            const auto& x = (*s.shapes)[i];
            const double fracBandwidth = x.roofline ? x.roofline->fracBandwidth.value_or(0.0) : 0.0;
            const double fracCompute = x.roofline ? x.roofline->fracCompute.value_or(0.0) : 0.0;
            r.shapes.push_back(ShapeResultRecord {static_cast<int64_t>(x.index), x.label, x.medianNs(),
                x.baselineMedianNs(), x.speedup.value_or(0.0), o.weights[i], fracBandwidth, fracCompute});
        }
        r.screened = s.isScreened();
        if (id != 1)
            r.slowerShapes = o.slowerOn;
    }
    e.m_store.insertEvaluation(e.m_session, r);
}

void Engine::flagCacheChanges(protocol::EvalResult& r)
{
    core::flagCacheChanges(m_store, r);
}

protocol::EvalResult Engine::Loop::decode(const std::string& id, const nlohmann::json& result)
{
    try {
        return protocol::EvalResult::fromJson(result);
    } catch (const protocol::ProtocolError& err) {
        return protocol::EvalResult::failed(id, protocol::FailureKind::ProtocolError, "result", err.what());
    }
}

// Screening (docs/SEARCH.md, "Shape sets"): the other shapes are timed only for a candidate
// within kScreenFraction of the best full result on the screening shape. Decided from the
// results applied when the node is proposed, so the tree depends on results alone.
void Engine::Loop::screenFor(NodeId id, protocol::EvalRequest& req)
{
    if (e.m_timingOrder.size() < 2)
        return;
    double bestScreen = 0;
    double scale = 0;
    std::map<size_t, double> bestOn; // per bench shape, over full results
    for (const auto& [node, s] : m_results) {
        if (!s.ok() || s.isScreened() || s.shapeResults().empty())
            continue;
        for (const auto& shape : s.shapeResults())
            bestOn[shape.index] = std::max(bestOn[shape.index], shape.speedup.value_or(0.0));
        const double screenSpeedup = s.shapes->front().speedup.value_or(0.0);
        if (!(screenSpeedup > 0))
            continue;
        if (screenSpeedup > bestScreen) {
            bestScreen = screenSpeedup;
            scale = s.speedup() / bestScreen;
        }
    }
    m_screenScale[id] = scale;
    if (!(bestScreen > 0))
        return;
    req.screenSpeedup = kScreenFraction * bestScreen;
    // The probe shape, the others in turn by node id: a candidate screened out on the heaviest
    // shape is still timed there, and on all where it at least ties the best full result on it
    // (a specialist the portfolio can deploy for that shape).
    const size_t probe = e.m_timingOrder[1 + static_cast<size_t>(id) % (e.m_timingOrder.size() - 1)];
    if (auto it = bestOn.find(probe); it != bestOn.end() && it->second > 0) {
        req.screenProbe = probe;
        req.screenProbeSpeedup = it->second;
    }
}

std::optional<NodeId> Engine::Loop::propose()
{
    if (!m_requeue.empty()) {
        NodeId id = m_requeue.front();
        m_requeue.pop_front();
        return id;
    }
    if (m_external)
        return e.proposeExternal(m_observer, m_stopReason);
    if (e.m_options.synth == "grid")
        return e.proposeGrid(m_observer);
    if (isKnobPolicy(e.m_options.policy))
        return e.proposeKnobPolicy(m_observer, m_stopReason);
    for (int tries = 0; tries < 1000; ++tries) {
        // One generator per proposal index: resume and replay make the same choice. The
        // policy draws from its own, so a policy that draws nothing (uct) leaves the
        // synthesizer's choices as they were.
        std::mt19937_64 pick(selectionSeed(e.m_options.seed, e.m_nextSeq));
        bool boosted = false;
        auto sel = e.selectForExpansion(pick, boosted);
        if (!sel)
            return std::nullopt;
        std::mt19937_64 rng(e.m_options.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(e.m_nextSeq));
        auto p = e.m_options.knobOperators ? e.m_synth.propose(e.m_tree, *sel, rng, e.chooseOperator(boosted))
                                           : e.m_synth.propose(e.m_tree, *sel, rng);
        if (!p) {
            e.m_tree.markExhausted(*sel);
            continue;
        }
        // The operator is always inherit without knobOperators.
        return e.addKnobChild(p->parent, p->sourceHash, p->knobs, p->flags, p->origin, memoryOperatorName(p->op),
            m_observer);
    }
    return std::nullopt;
}

void Engine::Loop::dispatch(NodeId id)
{
    if (m_external) {
        if (auto failed = e.rejection(id)) {
            // A reply that never became a kernel: a failed node, no worker involved.
            int64_t k = m_kNext++;
            e.m_tree.addVirtualLoss(id);
            Arrived a;
            a.node = id;
            a.result = std::move(*failed);
            storeResult(id, std::string(), a.result, false);
            m_ready.emplace(k, std::move(a));
            return;
        }
    }
    protocol::EvalRequest req = e.makeEvalRequest(id);
    screenFor(id, req);
    std::string key = cacheKeyOf(req);
    m_keys[id] = key;
    int64_t k = m_kNext++;
    // Every proposed, not yet applied node carries a virtual loss, cached or not, so selection
    // does not depend on where a result came from.
    e.m_tree.addVirtualLoss(id);
    std::optional<EvaluationRecord> hit;
    if (e.m_options.useCache)
        hit = e.m_store.cachedEvaluation(key);
    // A hit screened out under a lower bar than today's is timed again.
    if (hit && hit->screened && !hit->shapes.empty()
        && hit->shapes.front().speedup >= req.screenSpeedup)
        hit.reset();
    if (hit) {
        Arrived a;
        a.node = id;
        a.result = decode(req.id, hit->result);
        e.applyObjective(id, a.result, m_screenScale[id]);
        a.fromCache = true;
        storeResult(id, key, a.result, true);
        m_ready.emplace(k, std::move(a));
    } else {
        m_inFlight[req.id] = {k, id};
        e.m_executor.submit(EvalJob {req.id, req.toJson()});
    }
}

void Engine::Loop::apply(Arrived& a)
{
    e.m_tree.removeVirtualLoss(a.node);
    const std::string failureKind = a.result.ok() ? std::string() : protocol::failureKindName(a.result.failureKind());
    e.m_tree.setResult(a.node, a.result.ok(), a.result.speedup(), failureKind);
    e.m_tree.node(a.node).bound = a.result.bound(); // the guided knob policy reads the parent's diagnosis
    e.m_memory.applied(a.node, a.result.ok(), a.result.speedup(), e.m_tree.node(e.m_tree.node(a.node).parent).speedup);
    e.noteOutcome(a.node, a.result);
    m_results[a.node] = a.result;
    ++m_progress.evaluations;
    if (a.fromCache)
        ++m_progress.cacheHits;
    if (!a.result.ok())
        ++m_progress.failures;
    if (a.result.ok() && a.result.speedup() > m_progress.bestSpeedup) {
        m_progress.bestSpeedup = a.result.speedup();
        m_progress.bestNode = a.node;
    }
    if (m_observer) {
        m_observer->nodeEvaluated(e.m_tree.node(a.node), a.result);
    }
    // Node 1 is the baseline seed, unless the baseline is the PyTorch reference (never a node).
    if (a.node == kBaselineNode && e.m_baseline.lang != "python" && !a.result.ok()
        && m_stopReason.empty())
        m_stopReason = "baseline seed failed (" + failureKind + "): " + a.result.failure->message;
    if (m_stopReason.empty() && e.m_options.targetSpeedup > 0 && m_progress.bestSpeedup >= e.m_options.targetSpeedup)
        m_stopReason = "target speedup " + std::to_string(e.m_options.targetSpeedup) + "x reached";
    // The memory policy counts the stall (rebuilt on resume): the same rule as before.
    if (m_stopReason.empty() && e.m_options.stall > 0 && e.m_memory.sinceGain() >= e.m_options.stall)
        m_stopReason = "stalled: no 1% gain in " + std::to_string(e.m_options.stall) + " evaluations";
    emitProgress();
}

bool Engine::Loop::applyNext()
{
    auto it = m_ready.find(m_kApply);
    if (it == m_ready.end())
        return false;
    apply(it->second);
    m_ready.erase(it);
    ++m_kApply;
    return true;
}

void Engine::Loop::waitForResult()
{
    auto done = e.m_executor.next(std::chrono::milliseconds(200));
    if (!done) {
        emitProgress();
        return;
    }
    auto f = m_inFlight.find(done->id);
    if (f == m_inFlight.end())
        return; // a stale reply for a job we no longer track
    auto [k, node] = f->second;
    m_inFlight.erase(f);
    Arrived a;
    a.node = node;
    a.result = decode(done->id, done->result);
    e.flagCacheChanges(a.result);
    e.applyObjective(node, a.result, m_screenScale[node]);
    ++m_progress.fresh;
    // Stored on arrival, applied in proposal order: a kill loses only what is in flight.
    storeResult(node, m_keys[node], a.result, false);
    m_ready.emplace(k, std::move(a));
}

Report Engine::Loop::run()
{
    const int W = m_window;
    while (true) {
        if (e.m_stopRequested && m_stopReason.empty())
            m_stopReason = "stopped by request";
        if (m_stopReason.empty() && e.m_options.timeLimitSeconds > 0
            && std::chrono::duration<double>(Clock::now() - m_started).count() >= e.m_options.timeLimitSeconds)
            m_stopReason
                = "time limit of " + std::to_string(static_cast<int>(e.m_options.timeLimitSeconds)) + " s reached";

        // Results the next proposal must see.
        while (m_kApply <= m_kNext - W && applyNext()) {
        }
        // Steering commands posted so far, including from the observer of those results.
        e.applySteering(m_observer, m_requeue, m_paused, m_exhausted, m_stopReason);
        const bool budgetLeft = e.m_alreadyEvaluated + m_kNext < e.m_options.budget;
        if (m_paused && m_stopReason.empty() && !m_exhausted && budgetLeft) {
            // Paused: apply what arrives, propose nothing, keep listening for commands.
            while (applyNext()) {
            }
            if (m_kApply == m_kNext) {
                emitProgress();
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            } else {
                waitForResult();
            }
            continue;
        }
        const bool proposing = m_stopReason.empty() && !m_exhausted && budgetLeft;
        if (proposing && m_kApply > m_kNext - W) {
            if (auto id = propose()) {
                dispatch(*id);
                continue;
            }
            // Nothing can be expanded with what is applied so far: apply the next result (in
            // order) and try again; with nothing outstanding the space is exhausted.
            if (m_kApply == m_kNext) {
                m_exhausted = true;
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
            if (m_kApply == m_kNext) {
                if (m_stopReason.empty())
                    m_stopReason = !m_exhausted
                        ? "budget of " + std::to_string(e.m_options.budget) + " evaluations spent"
                        : e.m_grid ? "sweep complete: every admissible assignment of the seeds evaluated ("
                                + std::to_string(e.m_grid->size()) + ")"
                                   : "search space exhausted";
                break;
            }
        }
        waitForResult();
    }
    return finish();
}

Report Engine::Loop::finish()
{
    const std::string status = m_stopReason.rfind("baseline seed failed", 0) == 0 || !e.m_error.empty()
        ? "failed"
        : (e.m_stopRequested ? "stopped" : "finished");
    e.m_store.setSessionStatus(e.m_session, status, m_stopReason);
    emitProgress();

    Report report;
    report.progress = m_progress;
    report.stopReason = m_stopReason;
    report.error = e.m_error;
    report.device = e.m_device;
    report.memoryOp = e.m_memory.name();
    for (MemoryOperator op : {MemoryOperator::Inherit, MemoryOperator::Compare, MemoryOperator::Combine,
             MemoryOperator::Restart})
        report.operators.emplace_back(memoryOperatorName(op), e.m_memory.arm(op));
    report.warmStart = e.m_warmStart;
    report.warmStartNotes = e.m_warmStartNotes;
    report.moveSkill = e.m_options.moveSkill;
    report.moveSkillFrom = e.m_options.moveSkillFrom;
    // The best is named only after a fresh worker with new seeds agrees (engine_reverify.cpp).
    if (status == "failed" || !e.m_tree.best()) {
        report.best = e.m_tree.best();
        if (report.best)
            report.reverifyNote = "not re-verified: the session failed";
    } else {
        e.reverifyBest(report);
    }
    if (auto bl = m_results.find(kBaselineNode); bl != m_results.end())
        report.baselineMedianNs = bl->second.medianNs();
    if (report.best) {
        const Node& b = e.m_tree.node(*report.best);
        report.bestSource = b.sourceName;
        report.bestKnobs = b.knobs;
        report.bestFlags = b.flags;
        report.bestSpeedup = b.speedup;
        if (auto s = m_results.find(*report.best); s != m_results.end()) {
            const protocol::EvalResult& r = s->second;
            report.bestMedianNs = r.medianNs();
            report.bound = r.bound();
            report.evidence = r.evidence();
            report.fracBandwidth = r.fracBandwidth();
            report.fracCompute = r.fracCompute();
            if (r.baselineMedianNs() > 0)
                report.baselineMedianNs = r.baselineMedianNs();
            if (!r.shapeResults().empty()) {
                const Objective o = objectiveOf(r, e.m_spec->benchWeights, 0);
                report.bestShapes = r.shapeResults();
                report.bestShapeWeights = o.weights;
                if (*report.best != kBaselineNode)
                    report.bestSlowerOn = o.slowerOn;
            }
        }
    }
    return report;
}

} // namespace hone::core
