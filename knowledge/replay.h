#pragma once

#include "core/knob_synth.h"
#include "core/knobs.h"
#include "core/search_tree.h"
#include "knowledge/skills.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hone::knowledge {

/// A recorded session as a nearest-neighbour lookup table (core::ReplayTable draws among
/// recorded timings instead), so that the knob search can be re-run without a
/// device: a candidate the session evaluated gets its recorded result; one it did not gets
/// the result of its nearest recorded neighbour (fewest differing knobs; on a tie the lower
/// speedup, so the table never invents a better optimum than the one measured).
class NearestReplayTable {
public:
    explicit NearestReplayTable(const SessionDump& session);

    struct Seed {
        std::string source;
        std::string hash;
        core::KnobSpace space;
        core::KnobValues knobs; // the seed's first admissible assignment
    };
    const std::vector<Seed>& seeds() const { return m_seeds; } // baseline first

    /// (passed, speedup) of a candidate, recorded or nearest.
    std::pair<bool, double> result(const std::string& source, const core::KnobValues& knobs) const;
    bool recorded(const std::string& source, const core::KnobValues& knobs) const;
    double bestSpeedup() const { return m_best; }
    size_t size() const { return m_rows.size(); }

private:
    struct Row {
        std::string source;
        core::KnobValues knobs;
        bool ok = false;
        double speedup = 0;
    };
    std::vector<Seed> m_seeds;
    std::vector<Row> m_rows;
    double m_best = 0;
};

struct ReplayRun {
    int evaluationsToTarget = 0; // 1-based, seeds included; budget + 1 when never reached
    bool reached = false;
    double best = 0;
    int recordedHits = 0; // evaluations answered from the record, not a neighbour
};

/// Re-runs the engine's selection (UCT + knob synthesizer, one worker, the engine's per-
/// proposal generator) against the table. `priors` maps a source name to its knob prior.
/// Reaching the target means a speedup of at least `fraction` times the table's best.
ReplayRun replaySearch(const NearestReplayTable& table, const std::map<std::string, core::KnobPrior>& priors,
    uint64_t seed, int budget, double fraction = 0.95, const core::UctParams& uct = {});

struct ReplayStudy {
    std::vector<int> without; // evaluations to target per seed, no prior
    std::vector<int> with; // ... with the prior
    double medianWithout = 0;
    double medianWith = 0;
    int reachedWithout = 0;
    int reachedWith = 0;
};

/// The same seeds with and without the priors.
ReplayStudy replayStudy(const NearestReplayTable& table, const std::map<std::string, core::KnobPrior>& priors,
    const std::vector<uint64_t>& seeds, int budget, double fraction = 0.95);

double median(std::vector<int> values);

} // namespace hone::knowledge
