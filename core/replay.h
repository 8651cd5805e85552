#pragma once

#include "core/knobs.h"
#include "core/search_tree.h"
#include "core/selection_policy.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hone::core {

class Store;

/// The evaluations of recorded sessions as a lookup table, so that a selection policy can be
/// run again with no device (docs/SEARCH.md, "Replay").
class ReplayTable {
public:
    struct Outcome {
        bool ok = false;
        double speedup = 0;
        std::string failureKind;
    };
    struct SeedEntry {
        std::string sourceHash;
        std::string sourceName;
        KnobValues knobs;
        std::string flags;
        std::string origin = "seed"; // seed | warm (a warm-start node, docs/SEARCH.md)
    };
    /// How the first session chose memory operators (its RunOptions).
    struct Recording {
        std::string memoryOp = "inherit";
        int restartAfter = 12;
        bool knobOperators = false; // false: the knob synthesizer's choices before memory operators
        UctParams uct = UctParams::legacy();           // the policies' parameters it ran with
        EvolutionParams evolution = EvolutionParams::legacy();
    };

    /// Reads sessions of one problem from `store`. Throws when a session is missing, when the
    /// sessions are of different problems, or when nothing was evaluated.
    static ReplayTable fromStore(const Store& store, const std::vector<int64_t>& sessions);

    void addSource(const std::string& sourceHash, KnobSpace space);
    /// Seeds (and warm-start nodes) are evaluated first, in the order added (the baseline first).
    void addSeed(SeedEntry seed);
    void setRecording(Recording r) { m_recording = std::move(r); }
    const Recording& recording() const { return m_recording; }
    /// A later record of the same candidate replaces an earlier one.
    void addResult(const std::string& sourceHash, const KnobValues& knobs, const std::string& flags, Outcome outcome);

    const std::map<std::string, KnobSpace>& spaces() const { return m_spaces; }
    const std::vector<SeedEntry>& seeds() const { return m_seeds; }
    size_t size() const { return m_results.size(); }
    /// The highest recorded speedup; 0 when nothing succeeded.
    double bestSpeedup() const;

    /// The recorded outcome, else that of the nearest recorded assignment of the same source and
    /// flags (fewest differing knobs; ties go to the slower, a failure being slowest), else a
    /// failure of kind "not_recorded". `exact` tells which.
    Outcome lookup(const std::string& sourceHash, const KnobValues& knobs, const std::string& flags,
        bool* exact = nullptr) const;

private:
    struct Entry {
        std::string sourceHash;
        KnobValues knobs;
        std::string flags;
        Outcome outcome;
    };
    std::map<std::string, KnobSpace> m_spaces;
    std::vector<SeedEntry> m_seeds;
    Recording m_recording;
    std::map<std::string, Entry> m_results; // SearchTree::candidateKey -> entry
    std::map<std::string, std::string> m_names; // source hash -> file name
};

struct ReplayOptions {
    std::string policy = "uct";
    uint64_t seed = 1;
    int budget = 60;                // evaluations, seeds included
    /// The policies' parameters; empty: as the table's first session ran (a sweep records this
    /// version's defaults).
    std::optional<UctParams> uct;
    std::optional<EvolutionParams> evolution;
    /// auto | inherit | compare | combine | restart, with the knob synthesizer honouring it;
    /// empty: as the table's first session was recorded (ReplayTable::recording()).
    std::string memoryOp;
    int restartAfter = 12;          // with memoryOp set
};

struct ReplayResult {
    std::vector<std::string> sequence;  // candidate keys in evaluation order
    std::vector<double> speedups;       // per evaluation; 0 for a failure
    std::vector<std::string> operators; // per evaluation: the node's memory operator
    int exactHits = 0;                  // evaluations answered by a recorded candidate
    double best = 0;                    // best speedup reached
    double tableBest = 0;               // best in the table
    /// 1-based evaluation index of the first result >= tableBest (resp. 0.95 * tableBest), or
    /// nullopt when the run never got there.
    std::optional<int> toBest;
    std::optional<int> toWithin5;
    SearchTree tree;
};

/// Runs `options.policy` with the knob synthesizer against `table`: seeds first, then one
/// proposal at a time (one worker), each answered by the table. Deterministic in the seed.
ReplayResult replaySearch(const ReplayTable& table, const ReplayOptions& options);

} // namespace hone::core
