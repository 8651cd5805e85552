#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace hone::core {

class KnobDomain;
class ReplayTable;

/// A skill that transfers (docs/SEARCH.md, "Skills that transfer"): what kinds of one-knob
/// moves made a kernel faster under which diagnosis, on an arch. It holds no setting: a move is
/// a knob (its name and what it `acts=` on) taken one step up or down its declared value order,
/// from a point of a diagnosis (the roofline classifier's bound). Learnt from the one-knob pairs
/// of a recording (or a session's results); applied to another problem's moves by knob name,
/// else by `acts`, under the same diagnosis (else pooled over diagnoses).
struct MoveSkill {
    struct Stat {
        std::string bound; // the diagnosis of the point the move started from
        std::string knob;
        std::string acts;  // "" when the knob does not declare it
        int direction = 1; // +1: to a later value in the declaration, -1: to an earlier one
        double wins = 0;   // moves that beat their start by minGain
        double trials = 0;
    };
    std::string arch;       // where it was learnt (informational; the caller matches arches)
    std::string learntFrom; // e.g. "softmax, session 4"
    double minGain = 0.01;
    std::vector<Stat> stats;

    bool empty() const { return stats.empty(); }
    /// Log-odds that moving `knob` (declaring `acts`) in `direction` from a point of `bound`
    /// makes it faster: logit((wins + 1) / (trials + 2)) of the statistics that match, most
    /// specific first: (bound, knob name), (bound, acts), (any bound, knob name), (any bound,
    /// acts); each level needs `minTrials` moves. 0 when nothing matches (no opinion).
    double logOdds(const std::string& bound, const std::string& knob, const std::string& acts, int direction,
        double minTrials = 4) const;
    /// The skill as sentences ("latency-bound: VEC (bytes_per_access) up gained in 78% of 120
    /// moves"), strongest first, at most `limit`.
    std::vector<std::string> statements(size_t limit = 8) const;

    nlohmann::json toJson() const;
    /// Throws std::runtime_error naming `name` when the JSON is not a move skill.
    static MoveSkill fromJson(const nlohmann::json& j, const std::string& name);
};

/// Learns a move skill from every pair of recorded candidates of `table` that differ in one
/// knob (typical results; both directions of each pair; a move to a failure is a loss, a move
/// from a failure is not counted).
MoveSkill learnMoveSkill(const ReplayTable& table, double minGain = 0.01);

} // namespace hone::core
