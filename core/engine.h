#pragma once

#include "core/executor.h"
#include "core/grid_sweep.h"
#include "core/problem_spec.h"
#include "core/knob_policy.h"
#include "core/knob_synth.h"
#include "core/objective.h"
#include "core/memory_policy.h"
#include "core/eval_request.h"
#include "core/eval_result.h"
#include "core/search_tree.h"
#include "core/selection_policy.h"
#include "core/steering.h"
#include "core/synthesizer.h"
#include "core/warm_start.h"

#include <atomic>
#include <deque>
#include <functional>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace hone::core {

class Store;

/// True for the synthesizers the engine has built in (knob, grid); others come from
/// Engine::setSynthesizer.
inline bool builtinSynth(const std::string& synth) { return synth == "knob" || synth == "grid"; }

/// Everything a run needs; stored with the session so that `resume` continues the same search.
struct RunOptions {
    std::filesystem::path problemDir;
    std::string target = "auto";    // cpu | cuda | auto (the baseline seed's kind)
    std::string policy = "uct";
    int budget = 60;                // evaluations (cache hits count), seeds included
    int workers = 1;
    uint64_t seed = 1;
    double targetSpeedup = 0;       // stop once reached; 0 = never
    int stall = 0;                  // stop after this many evaluations without a 1% gain; 0 = never
    double timeLimitSeconds = 0;    // 0 = none
    std::vector<int> checkSeeds {1, 2, 3};
    int samples = 25;
    int warmup = 3;
    double compileLimitSeconds = 120;
    double runLimitSeconds = 60;
    bool useCache = true;
    UctParams uct;
    EvolutionParams evolution;      // --policy evolutionary

    // Synthesis (docs/LLM.md). `knob` is the built-in knob synthesizer; anything else needs a
    // Synthesizer from Engine::setSynthesizer.
    std::string synth = "knob";     // knob | grid | llm
    // Memory operators (docs/SEARCH.md): `auto` picks one per expansion (UCB1 over inherit,
    // compare, combine; restart after `restartAfter` evaluations without a 1% gain, 0 = never).
    // Sessions stored without the field were "inherit".
    std::string memoryOp = "auto";  // auto | inherit | compare | combine | restart
    int restartAfter = 12;
    // The knob synthesizer honours the operator. Sessions stored before it did resume and replay
    // with the old choices (mutation, or crossover with the best sibling a quarter of the time).
    bool knobOperators = true;
    // Warm start (docs/SEARCH.md): the best `warmStartCount` kernels of earlier sessions of this
    // problem, then of its family, on the same target kind, join the seeds. Stored sessions
    // without the field had none.
    bool warmStart = true;
    int warmStartCount = 3;
    int repair = 2;                 // fix attempts per failed LLM candidate
    double llmBudgetUsd = 0;        // 0 = no limit
    int64_t llmTokenBudget = 0;     // 0 = no limit
    std::vector<std::string> hints; // the engineer's, shown in every prompt
    nlohmann::json llm = nlohmann::json::object(); // provider settings for resume; never a key
    // Re-verify the best node in a fresh worker with new seeds before the report names it
    // (docs/SEARCH.md, "Re-verification"); `hone run --no-reverify` turns it off.
    bool reverify = true;
    // A skill that transfers (docs/SEARCH.md, "Live move skills"): move statistics the hybrid
    // policy orders its neighbours by. Fixed when the session starts (`--move-skill FILE`, else
    // learnt from the store's other sessions on the same arch) and stored with the session, so
    // that resume keeps it. Null: none.
    std::shared_ptr<const MoveSkill> moveSkill;
    std::string moveSkillFrom; // where it came from, for the report ("file X", "this store's sessions 1, 3")

    nlohmann::json toJson() const;
    static RunOptions fromJson(const nlohmann::json& j);
};

struct Progress {
    int64_t session = 0;
    int evaluations = 0;            // results applied, cache hits included
    int fresh = 0;                  // evaluated by a worker in this process
    int cacheHits = 0;
    int failures = 0;
    int inFlight = 0;
    int budget = 0;
    double bestSpeedup = 0;
    NodeId bestNode = -1;
    double elapsedSeconds = 0;
    double evaluationsPerMinute = 0; // fresh evaluations per minute of this process's run
};

/// One re-verification the report made: the node's candidate again, in a fresh worker, with new
/// check seeds and timing and re-check inputs; not a search evaluation.
struct Reverification {
    NodeId node = -1;
    bool verified = false;
    bool stored = false;            // an earlier run of the session made it; not run again
    std::string failureKind;
    std::string failureMessage;
    double medianNs = 0;
    double speedup = 0;
    nlohmann::json config;          // the seeds it used
};

struct Report {
    Progress progress;
    std::string stopReason;
    std::optional<NodeId> best;
    std::string bestSource;
    KnobValues bestKnobs;
    std::string bestFlags;
    double bestSpeedup = 0;
    double bestMedianNs = 0;
    double baselineMedianNs = 0;
    std::string bound;
    std::string evidence;
    double fracBandwidth = 0;
    double fracCompute = 0;
    std::string device;
    std::string error;              // why the session failed (unreachable model, refused key), else empty
    std::string memoryOp;           // the session's setting (auto | inherit | ...)
    std::vector<std::pair<std::string, MemoryPolicy::Arm>> operators; // per operator, this session's nodes
    std::vector<WarmStartNode> warmStart; // the session's warm-start nodes
    std::vector<std::string> warmStartNotes; // kernels skipped when the session started
    // Re-verification of the best (not counted in progress: no search evaluation, no budget).
    bool bestVerified = false;      // the reported best passed a re-verification
    std::string reverifyNote;       // why the best is not verified (off, stopped, tries spent), else empty
    double reverifyMedianNs = 0;    // the best's re-verification, next to the search's numbers
    double reverifySpeedup = 0;
    std::vector<Reverification> reverifications; // in order; the failed ones name the excluded nodes
    // Shape sets (docs/SEARCH.md): the best's per-shape results with their weights, and the
    // shapes where it is slower than the baseline. Empty for a problem with one bench shape.
    std::vector<protocol::ShapeResult> bestShapes;
    std::vector<double> bestShapeWeights;
    std::vector<std::string> bestSlowerOn;
    // The move skill the session's hybrid policy used (RunOptions::moveSkill), and whence.
    std::shared_ptr<const MoveSkill> moveSkill;
    std::string moveSkillFrom;
};

/// Receives engine events on the engine's thread. Keep handlers short.
class EngineObserver {
public:
    virtual ~EngineObserver() = default;
    virtual void nodeAdded(const Node&) {}
    /// A node's result was applied: the worker's result as stored (with the engine's objective).
    virtual void nodeEvaluated(const Node&, const protocol::EvalResult&) {}
    /// A steering command was applied or rejected (the node it names may have changed).
    virtual void steeringApplied(const SteeringRecord&) {}
    virtual void progressChanged(const Progress&) {}
    /// A model call was stored for `node` (after nodeAdded).
    virtual void llmCallRecorded(const Node&, const LlmCallRecord&) {}
};

/// Passes every event on to `inner` (may be null). Observers that add to the events derive from
/// it and call the base, so that an event added later still reaches the inner observer.
class ForwardingObserver : public EngineObserver {
public:
    explicit ForwardingObserver(EngineObserver* inner = nullptr)
        : m_inner(inner)
    {
    }
    void setInner(EngineObserver* inner) { m_inner = inner; }
    void nodeAdded(const Node& n) override
    {
        if (m_inner)
            m_inner->nodeAdded(n);
    }
    void nodeEvaluated(const Node& n, const protocol::EvalResult& r) override
    {
        if (m_inner)
            m_inner->nodeEvaluated(n, r);
    }
    void steeringApplied(const SteeringRecord& r) override
    {
        if (m_inner)
            m_inner->steeringApplied(r);
    }
    void progressChanged(const Progress& p) override
    {
        if (m_inner)
            m_inner->progressChanged(p);
    }
    void llmCallRecorded(const Node& n, const LlmCallRecord& c) override
    {
        if (m_inner)
            m_inner->llmCallRecorded(n, c);
    }

protected:
    EngineObserver* m_inner;
};

/// The search loop (DESIGN.md §1): select, synthesize, evaluate through the executor,
/// back-propagate, record, check termination. Owns the tree; runs on the caller's thread.
///
/// With W workers, proposal k is made only after the results of proposals 0..k-W have been
/// applied, and results are applied in proposal order. The tree therefore depends only on
/// the seed and the evaluation results, not on which worker finished first.
/// The device kind a session on `spec` runs on: `requested` ("cpu", "cuda"), or for "auto" the
/// kind of the baseline seed. Throws when the problem has no baseline for that kind.
std::string resolveTarget(const ProblemSpec& spec, const std::string& requested);

class Engine {
public:
    Engine(Store& store, Executor& executor);

    /// Starts a new session.
    Report run(const RunOptions& options, EngineObserver* observer = nullptr);

    /// Continues a stored session: re-queues the evaluations that were in flight and spends
    /// what is left of its budget (plus `extraBudget`).
    Report resume(int64_t sessionId, EngineObserver* observer = nullptr, int extraBudget = 0);

    /// Thread-safe: the loop stops after the evaluations in flight.
    void requestStop() { m_stopRequested = true; }

    /// Thread-safe: queues a steering command, applied before the next proposal and logged in
    /// the store (docs/SEARCH.md, "Steering").
    void steer(SteeringCommand command) { m_steering.post(std::move(command)); }

    /// The engineer's hints (steering) for the subtree `node` is in: its own and its
    /// ancestors', oldest first.
    std::vector<std::string> subtreeHints(NodeId node) const;

    /// Where children come from when RunOptions::synth is not "knob". Not owned; set before
    /// run() or resume().
    void setSynthesizer(Synthesizer* synth) { m_external = synth; }

    /// Knob-value weights for a seed source of the session's problem (skills from earlier
    /// sessions on the same family and a compatible target); asked once per source at setup.
    using KnobPriorProvider = std::function<KnobPrior(
        const std::string& family, const std::string& device, const std::string& target, const KnobSpace& space)>;
    void setKnobPriorProvider(KnobPriorProvider provider) { m_priorProvider = std::move(provider); }
    /// How many of the session's sources got a non-empty prior.
    int sourcesWithPrior() const { return m_sourcesWithPrior; }

    /// The move skill of a new `--policy hybrid` session that has none in its options (docs/SEARCH.md,
    /// "Live move skills"): asked once, before the session is stored, with the problem's family,
    /// the device and the target. Returns the skill (null: none) and where it came from.
    using MoveSkillProvider = std::function<std::pair<std::shared_ptr<const MoveSkill>, std::string>(
        const std::string& family, const std::string& device, const std::string& target)>;
    void setMoveSkillProvider(MoveSkillProvider provider) { m_moveSkillProvider = std::move(provider); }

    const SearchTree& tree() const { return m_tree; }
    int64_t sessionId() const { return m_session; }

private:
    struct Pending;
    class Loop; // engine_loop.cpp
    Report loop(EngineObserver* observer);
    void setup(const RunOptions& options);

    /// Applies the queued steering commands (engine_steering.cpp). Manual children go to the
    /// front of `requeue`.
    void applySteering(EngineObserver* observer, std::deque<NodeId>& requeue, bool& paused, bool& exhausted,
        std::string& stopReason);
    std::string addManualChild(const SteeringCommand& c, EngineObserver* observer, std::deque<NodeId>& requeue,
        NodeId& child);
    /// A boosted node if one is still open, else the policy's choice.
    std::optional<NodeId> selectNext(std::mt19937_64& pick);
    /// selectNext, saying whether the node came from a boost.
    std::optional<NodeId> selectForExpansion(std::mt19937_64& pick, bool& boosted);
    /// The memory operator for the next proposal (a boosted node is expanded itself: no restart).
    MemoryOperator chooseOperator(bool boosted) const;
    /// Tells the memory policy about a node added at `seq`, when its operator was the policy's.
    void registerProposal(NodeId id, int64_t seq);
    /// Adds the warm-start nodes of a new session (after the seeds) and queues them.
    void addWarmStart(const ProblemSpec& spec, EngineObserver* observer);

    /// The worker request that evaluates `id` in the search (the cache key covers it). With
    /// several bench shapes it times them all, the heaviest first (no screening).
    protocol::EvalRequest makeEvalRequest(NodeId id) const;
    /// Records the objective (the weighted geometric mean over the bench shapes) in
    /// `r.objective`, which `r.speedup()` then gives; `screenScale` estimates a screened result.
    Objective applyObjective(NodeId id, protocol::EvalResult& r, double screenScale) const;
    /// Compares the hashes of the worker's cache entries in `r` with those the store recorded
    /// for the same keys (recording new ones); a difference becomes a warning in `r.cache` and a
    /// sentence in its evidence.
    void flagCacheChanges(protocol::EvalResult& r);
    /// Re-verifies the best node before the report names it, excluding nodes that fail, at
    /// most three tries; sets report.best and the re-verification fields (engine_reverify.cpp).
    void reverifyBest(Report& report);
    Reverification reverifyNode(NodeId id, int attempt);

    /// `--synth grid`: the sweep's next assignment as a child of its seed (engine_depth.cpp).
    std::optional<NodeId> proposeGrid(EngineObserver* observer);
    /// A knob-space policy's next candidate (`--policy uniform|hillclimb|...`, engine_depth.cpp).
    std::optional<NodeId> proposeKnobPolicy(EngineObserver* observer, std::string& stopReason);
    /// Adds a built-in synthesizer's child (an existing source): tree, store, memory policy,
    /// observer.
    NodeId addKnobChild(NodeId parent, const std::string& sourceHash, const KnobValues& knobs, const std::string& flags,
        const std::string& origin, const std::string& op, EngineObserver* observer);

    // The external synthesizer path (engine_synth.cpp).
    void beginExternal();
    std::optional<NodeId> proposeExternal(EngineObserver* observer, std::string& stopReason);
    NodeId addProposal(SynthProposal proposal, EngineObserver* observer);
    SynthRequest synthRequest(NodeId node, MemoryOperator op) const;
    MemoryContext memoryContext(NodeId node, MemoryOperator op) const;
    MemoryEntry memoryEntry(NodeId node, const std::string& relation) const;
    void noteOutcome(NodeId node, const protocol::EvalResult& result);
    /// A failed result for a node that is never evaluated (a rejected reply), or nullopt.
    std::optional<protocol::EvalResult> rejection(NodeId node) const;

    Store& m_store;
    Executor& m_executor;
    std::atomic<bool> m_stopRequested {false};
    SearchTree m_tree;
    KnobSynthesizer m_synth;
    std::unique_ptr<SelectionPolicy> m_policy; // from RunOptions::policy
    SteeringQueue m_steering;
    std::map<NodeId, std::vector<std::string>> m_hints; // steering hints by node
    std::deque<NodeId> m_boosted;                      // expanded next, in order
    RunOptions m_options;
    int64_t m_session = 0;
    std::string m_problemHash;
    protocol::EvalRequest m_problemRequest; // the resolved problem; every request copies it
    protocol::SourceSpec m_baseline;
    std::string m_device;
    std::string m_toolchain;
    nlohmann::json m_ceilings;
    std::map<std::string, std::pair<std::string, std::string>> m_sources; // hash -> (name, text)
    int64_t m_nextSeq = 0;
    std::vector<NodeId> m_requeue;   // nodes created but never evaluated (resume)
    int m_alreadyEvaluated = 0;

    Synthesizer* m_external = nullptr;
    std::optional<GridSweep> m_grid; // --synth grid, built at the first proposal
    std::unique_ptr<KnobPolicy> m_knobPolicy; // a knob-space --policy, built at the first proposal

    KnobPriorProvider m_priorProvider;
    MoveSkillProvider m_moveSkillProvider;

    int m_sourcesWithPrior = 0;
    std::shared_ptr<const ProblemSpec> m_spec;
    MemoryPolicy m_memory;
    std::vector<WarmStartNode> m_warmStart;
    std::vector<std::string> m_warmStartNotes;
    std::map<NodeId, protocol::EvalResult> m_outcomes; // applied results
    std::map<NodeId, std::pair<protocol::FailureKind, std::string>> m_rejected; // node -> (failure kind, reason)
    std::map<NodeId, std::string> m_replies;    // rejected replies, for repair prompts
    std::string m_error;
    std::vector<size_t> m_timingOrder; // bench shapes, heaviest first; one entry: no shape set
};

} // namespace hone::core
