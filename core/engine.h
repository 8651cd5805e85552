#pragma once

#include "core/executor.h"
#include "core/knob_synth.h"
#include "core/protocol.h"
#include "core/search_tree.h"

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>

namespace hone::core {

class Store;

/// Everything a run needs; stored with the session so that `resume` continues the same search.
struct RunOptions {
    std::filesystem::path problemDir;
    std::string target = "cpu";
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
};

/// Receives engine events on the engine's thread. Keep handlers short.
class EngineObserver {
public:
    virtual ~EngineObserver() = default;
    virtual void nodeAdded(const Node&) {}
    virtual void nodeEvaluated(const Node&, const protocol::EvalSummary&) {}
    virtual void progressChanged(const Progress&) {}
};

/// The search loop (DESIGN.md §1): select, synthesize, evaluate through the executor,
/// back-propagate, record, check termination. Owns the tree; runs on the caller's thread.
///
/// With W workers, proposal k is made only after the results of proposals 0..k-W have been
/// applied, and results are applied in proposal order. The tree therefore depends only on
/// the seed and the evaluation results, not on which worker finished first.
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

    const SearchTree& tree() const { return m_tree; }
    int64_t sessionId() const { return m_session; }

private:
    struct Pending;
    Report loop(EngineObserver* observer);
    void setup(const RunOptions& options);

    Store& m_store;
    Executor& m_executor;
    std::atomic<bool> m_stopRequested {false};
    SearchTree m_tree;
    KnobSynthesizer m_synth;
    RunOptions m_options;
    int64_t m_session = 0;
    std::string m_problemHash;
    nlohmann::json m_problemJson;
    nlohmann::json m_baselineCandidate;
    std::string m_device;
    std::string m_toolchain;
    nlohmann::json m_ceilings;
    std::map<std::string, std::pair<std::string, std::string>> m_sources; // hash -> (name, text)
    int64_t m_nextSeq = 0;
    std::vector<NodeId> m_requeue;   // nodes created but never evaluated (resume)
    int m_alreadyEvaluated = 0;
};

} // namespace hone::core
