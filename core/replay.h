#pragma once

#include "core/knob_policy.h"
#include "core/knobs.h"
#include "core/search_tree.h"
#include "core/selection_policy.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
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
        std::string bound; // the evaluation's diagnosis; "" unknown
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
    /// Copies `acts=` declarations from current seed files (file name -> its knob space) onto the
    /// recorded sources of the same file name, knob by knob where name and values agree: a
    /// recording made before its seeds declared `acts` replays with them. Call before domain().
    /// Returns the number of recorded knobs that got an `acts`.
    int adoptActs(const std::map<std::string, KnobSpace>& byFileName);
    /// Knobs of the recorded sources, and how many of them declare `acts`.
    std::pair<int, int> actsCoverage() const;
    /// Seeds (and warm-start nodes) are evaluated first, in the order added (the baseline first).
    void addSeed(SeedEntry seed);
    void setRecording(Recording r) { m_recording = std::move(r); }
    const Recording& recording() const { return m_recording; }
    /// One more timing of a candidate: a candidate timed several times (a sweep run again with
    /// --no-cache) keeps them all, and a replay draws one per evaluation.
    void addResult(const std::string& sourceHash, const KnobValues& knobs, const std::string& flags, Outcome outcome);

    const std::map<std::string, KnobSpace>& spaces() const { return m_spaces; }
    const std::vector<SeedEntry>& seeds() const { return m_seeds; }
    size_t size() const { return m_results.size(); }
    /// The fewest and the most timings any recorded candidate has.
    std::pair<size_t, size_t> timingsPerCandidate() const;
    /// The highest typical speedup of a candidate; 0 when nothing succeeded.
    double bestSpeedup() const;

    /// The recorded outcome, else that of the nearest recorded assignment of the same source and
    /// flags (fewest differing knobs; ties go to the slower, a failure being slowest), else a
    /// failure of kind "not_recorded". `exact` tells which. A candidate's typical outcome is the
    /// median of its successful timings (a failure when none succeeded); with `noise` and
    /// several timings one of them is drawn instead, and `typical` gets the typical speedup (0
    /// for a failure).
    Outcome lookup(const std::string& sourceHash, const KnobValues& knobs, const std::string& flags,
        bool* exact = nullptr, std::mt19937_64* noise = nullptr, double* typical = nullptr) const;

    /// The knob domain of the seeds, for knob-space policies; built once and shared by replays.
    std::shared_ptr<const KnobDomain> domain() const;

private:
    struct Entry {
        std::string sourceHash;
        KnobValues knobs;
        std::string flags;
        std::vector<Outcome> timings;
        Outcome typical;
    };
    static Outcome typicalOf(const std::vector<Outcome>& timings);
    std::map<std::string, KnobSpace> m_spaces;
    std::vector<SeedEntry> m_seeds;
    Recording m_recording;
    std::map<std::string, Entry> m_results; // SearchTree::candidateKey -> entry
    std::map<std::string, std::string> m_names; // source hash -> file name
    mutable std::shared_ptr<const KnobDomain> m_domain;
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
    KnobPolicyParams knobPolicy;    // the knob-space policies' parameters
    /// Stop once the table's best candidate was evaluated (nothing after it changes toBest or
    /// toWithin5): the statistics over many seeds need no more.
    bool stopAtBest = false;
    bool stopAtWithin5 = false;     // likewise once toWithin5 is known (toBest may then stay unset)
};

struct ReplayResult {
    std::vector<std::string> sequence;  // candidate keys in evaluation order
    std::vector<double> speedups;       // per evaluation, as the policy saw it (a drawn timing); 0 for a failure
    std::vector<std::string> operators; // per evaluation: the node's memory operator
    int exactHits = 0;                  // evaluations answered by a recorded candidate
    double best = 0;                    // best typical speedup of a candidate evaluated
    double tableBest = 0;               // best typical speedup in the table
    /// 1-based evaluation index of the first candidate whose typical speedup is >= tableBest
    /// (resp. 0.95 * tableBest), or nullopt when the run never got there: what the user would
    /// have, not what one noisy timing said.
    std::optional<int> toBest;
    std::optional<int> toWithin5;
    SearchTree tree;
};

/// Evaluations-to-target over many replay seeds (docs/SEARCH.md, "Replay"). A run that never
/// reached the target counts as budget + 1, so the order statistics are honest lower bounds.
struct ReplayStats {
    int runs = 0;
    double median = 0;
    double p75 = 0;
    double p90 = 0;
    double medianLow = 0;  // bootstrap 95% interval of the median (percentile method)
    double medianHigh = 0;
    double reached = 0;    // fraction of runs that reached the target within the budget
};

/// `evals`: per run, the 1-based evaluation at which the target was reached, budget + 1 if
/// never. `resamples` bootstrap resamples drawn from a generator seeded with `bootstrapSeed`.
ReplayStats replayStats(const std::vector<int>& evals, int budget, int resamples = 2000, uint64_t bootstrapSeed = 1);

/// Runs `options.policy` against `table`: seeds first, then one proposal at a time (one
/// worker), each answered by the table. A selection policy expands nodes with the knob
/// synthesizer; a knob-space policy proposes candidates itself. Deterministic in the seed
/// (the noise draws included).
ReplayResult replaySearch(const ReplayTable& table, const ReplayOptions& options);

} // namespace hone::core
