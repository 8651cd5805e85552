#include "core/memory_policy.h"

#include <cmath>
#include <stdexcept>

namespace hone::core {

const char* memoryOperatorName(MemoryOperator op)
{
    switch (op) {
    case MemoryOperator::Inherit:
        return "inherit";
    case MemoryOperator::Compare:
        return "compare";
    case MemoryOperator::Combine:
        return "combine";
    case MemoryOperator::Restart:
        return "restart";
    }
    return "inherit";
}

std::optional<MemoryOperator> memoryOperatorFromName(std::string_view name)
{
    for (MemoryOperator op : { MemoryOperator::Inherit, MemoryOperator::Compare, MemoryOperator::Combine,
             MemoryOperator::Restart })
        if (name == memoryOperatorName(op))
            return op;
    return std::nullopt;
}

bool chosenByMemoryPolicy(const std::string& origin)
{
    return origin != "root" && origin != "seed" && origin != "warm" && origin != "manual" && origin != "repair"
        && origin != "grid" && origin != "sample" && origin != "neighbour" && origin != "offspring"
        && origin != "model"; // the knob-space policies (core/knob_policy.h) choose their own moves
}

const std::vector<std::string>& MemoryPolicy::names()
{
    static const std::vector<std::string> n { "auto", "inherit", "compare", "combine", "restart" };
    return n;
}

MemoryPolicy::MemoryPolicy(const std::string& name, int restartAfter)
    : m_name(name)
    , m_restartAfter(restartAfter)
{
    if (name != "auto") {
        m_fixed = memoryOperatorFromName(name);
        if (!m_fixed)
            throw std::invalid_argument(
                "unknown memory operator '" + name + "'; expected auto, inherit, compare, combine or restart");
    }
}

MemoryOperator MemoryPolicy::choose(int64_t seq) const
{
    if (m_fixed)
        return *m_fixed;
    if (m_restartAfter > 0 && m_sinceGain >= m_restartAfter
        && (m_lastRestart < 0 || seq - m_lastRestart >= m_restartAfter))
        return MemoryOperator::Restart;
    // UCB1 over the three context operators. Pending children count as pulls (with no reward
    // yet), so that W workers do not all try the same arm before its first result.
    const MemoryOperator arms[] = { MemoryOperator::Inherit, MemoryOperator::Compare, MemoryOperator::Combine };
    int total = 0;
    for (MemoryOperator op : arms)
        total += arm(op).proposed;
    MemoryOperator best = MemoryOperator::Inherit;
    double bestScore = -1;
    for (MemoryOperator op : arms) {
        const Arm& a = arm(op);
        if (a.proposed == 0)
            return op; // every arm once, in order
        double mean = a.evaluated > 0 ? static_cast<double>(a.improved) / a.evaluated : 0.0;
        double score = mean + std::sqrt(2.0 * std::log(static_cast<double>(total)) / a.proposed);
        if (score > bestScore) { // ties go to the earlier arm
            bestScore = score;
            best = op;
        }
    }
    return best;
}

void MemoryPolicy::proposed(NodeId node, MemoryOperator op, int64_t seq)
{
    ++m_arms[static_cast<size_t>(op)].proposed;
    m_pending[node] = op;
    if (op == MemoryOperator::Restart)
        m_lastRestart = seq;
}

void MemoryPolicy::applied(NodeId node, bool ok, double speedup, double parentSpeedup)
{
    // The same rule as the engine's --stall: a gain is more than 1% over the best before it.
    const double before = m_best;
    if (ok && speedup > m_best)
        m_best = speedup;
    m_sinceGain = m_best > before * 1.01 ? 0 : m_sinceGain + 1;
    auto it = m_pending.find(node);
    if (it == m_pending.end())
        return;
    Arm& a = m_arms[static_cast<size_t>(it->second)];
    ++a.evaluated;
    if (ok && speedup > parentSpeedup * 1.01)
        ++a.improved;
    m_pending.erase(it);
}

} // namespace hone::core
