#pragma once

#include "core/search_tree.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hone::core {

/// How a proposal's context is built (DESIGN.md §1, step 2). The knob synthesizer gives each a
/// meaning of its own (docs/SEARCH.md, "Memory operators").
enum class MemoryOperator {
    Inherit, // the node and its ancestors
    Compare, // the node and its evaluated siblings
    Combine, // both
    Restart, // problem and knowledge only
};

const char* memoryOperatorName(MemoryOperator op);
std::optional<MemoryOperator> memoryOperatorFromName(std::string_view name);

/// True for the origins of nodes whose operator the session's MemoryPolicy chose: not the root,
/// seeds, warm-start nodes, manual children or repairs.
bool chosenByMemoryPolicy(const std::string& origin);

/// Picks the memory operator of each expansion (docs/SEARCH.md, "Memory operators"): one fixed
/// operator, or `auto`, which runs UCB1 over inherit, compare and combine on the rate at which
/// their children beat their parent by more than 1%, and picks restart once the session has gone
/// `restartAfter` evaluations without a 1% gain of its best speedup.
///
/// It draws nothing: its choice is a function of what proposed() and applied() were told, in
/// the engine's proposal order, so the same seed and results give the same choices, and a
/// resumed session rebuilds the same state by telling it the stored nodes and evaluations.
class MemoryPolicy {
public:
    struct Arm {
        int proposed = 0;  // children built with the operator, results pending included
        int evaluated = 0; // of which have a result
        int improved = 0;  // of which beat their parent by more than 1%
    };

    /// `name`: auto | inherit | compare | combine | restart. `restartAfter` 0: never restart.
    /// Throws std::invalid_argument naming the known operators for any other name.
    explicit MemoryPolicy(const std::string& name = "auto", int restartAfter = 12);

    /// "auto" first, then the operators.
    static const std::vector<std::string>& names();

    bool adaptive() const { return !m_fixed.has_value(); }
    const std::string& name() const { return m_name; }

    /// The operator for the expansion made at proposal index `seq`.
    MemoryOperator choose(int64_t seq) const;

    /// `node` was added at `seq` with `op` chosen by this policy.
    void proposed(NodeId node, MemoryOperator op, int64_t seq);

    /// The result of any node (seeds included: they count for the stall), in proposal order.
    /// `parentSpeedup` is the speedup of the node's parent (0 when it failed).
    void applied(NodeId node, bool ok, double speedup, double parentSpeedup);

    const Arm& arm(MemoryOperator op) const { return m_arms[static_cast<size_t>(op)]; }
    /// Evaluations since the best speedup last grew by more than 1%.
    int sinceGain() const { return m_sinceGain; }

private:
    std::string m_name;
    std::optional<MemoryOperator> m_fixed;
    int m_restartAfter;
    std::array<Arm, 4> m_arms {};
    std::map<NodeId, MemoryOperator> m_pending; // proposed, no result yet
    double m_best = 0;
    int m_sinceGain = 0;
    int64_t m_lastRestart = -1; // proposal index of the last restart
};

} // namespace hone::core
