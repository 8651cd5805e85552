#include "core/selection_policy.h"

#include <algorithm>
#include <stdexcept>

namespace hone::core {
namespace {

uint64_t below(std::mt19937_64& rng, uint64_t n)
{
    return n == 0 ? 0 : rng() % n; // portable across standard libraries, unlike the distributions
}

/// Faster first, lower id on ties: every policy ranks the same way.
bool fasterThan(const SearchTree& tree, NodeId a, NodeId b)
{
    double sa = tree.node(a).speedup, sb = tree.node(b).speedup;
    return sa != sb ? sa > sb : a < b;
}

class UctPolicy : public SelectionPolicy {
public:
    explicit UctPolicy(const UctParams& p)
        : m_params(p)
    {
    }
    std::string name() const override { return "uct"; }
    std::optional<NodeId> select(SearchTree& tree, std::mt19937_64&) override { return tree.select(m_params); }

private:
    UctParams m_params;
};

/// Always the fastest expandable node: pure exploitation, a lower bound on exploration.
class GreedyPolicy : public SelectionPolicy {
public:
    std::string name() const override { return "greedy"; }
    std::optional<NodeId> select(SearchTree& tree, std::mt19937_64&) override
    {
        auto open = expandableNodes(tree);
        if (open.empty())
            return std::nullopt;
        return *std::min_element(
            open.begin(), open.end(), [&](NodeId a, NodeId b) { return fasterThan(tree, a, b); });
    }
};

/// Any expandable node with equal chance: the baseline every other policy must beat.
class RandomPolicy : public SelectionPolicy {
public:
    std::string name() const override { return "random"; }
    std::optional<NodeId> select(SearchTree& tree, std::mt19937_64& rng) override
    {
        auto open = expandableNodes(tree);
        if (open.empty())
            return std::nullopt;
        return open[below(rng, open.size())];
    }
};

int knobDistance(const Node& a, const Node& b)
{
    int d = a.flags == b.flags ? 0 : 1;
    for (const auto& [k, v] : a.knobs) {
        auto it = b.knobs.find(k);
        if (it == b.knobs.end() || it->second != v)
            ++d;
    }
    for (const auto& [k, v] : b.knobs)
        if (!a.knobs.count(k))
            ++d;
    return d;
}

} // namespace

const std::vector<std::string>& selectionPolicyNames()
{
    static const std::vector<std::string> names {"uct", "evolutionary", "greedy", "random"};
    return names;
}

std::unique_ptr<SelectionPolicy> makeSelectionPolicy(
    const std::string& name, const UctParams& uct, const EvolutionParams& evolution)
{
    if (name == "uct")
        return std::make_unique<UctPolicy>(uct);
    if (name == "greedy")
        return std::make_unique<GreedyPolicy>();
    if (name == "random")
        return std::make_unique<RandomPolicy>();
    if (name == "evolutionary")
        return std::make_unique<EvolutionaryPolicy>(evolution);
    throw std::invalid_argument("unknown selection policy '" + name
        + "'; expected uct, evolutionary, greedy or random (--policy)");
}

std::vector<NodeId> expandableNodes(const SearchTree& tree)
{
    // Ids are in creation order, so a parent is always decided before its children.
    std::vector<char> blocked(tree.size(), 0);
    std::vector<NodeId> open;
    for (const Node& n : tree.nodes()) {
        bool b = n.pruned || (n.parent >= 0 && blocked[static_cast<size_t>(n.parent)]);
        blocked[static_cast<size_t>(n.id)] = b;
        if (!b && n.id != 0 && n.state == NodeState::Ok && n.expandable)
            open.push_back(n.id);
    }
    return open;
}

std::optional<NodeId> EvolutionaryPolicy::select(SearchTree& tree, std::mt19937_64& rng)
{
    auto open = expandableNodes(tree);
    if (open.empty()) {
        m_archive.clear();
        return std::nullopt;
    }
    std::sort(open.begin(), open.end(), [&](NodeId a, NodeId b) { return fasterThan(tree, a, b); });
    // Best first, skipping near-copies of a better elite of the same source, so that one
    // neighbourhood cannot fill the archive. Skipped nodes fill what room is left.
    m_archive.clear();
    std::vector<NodeId> skipped;
    const size_t cap = static_cast<size_t>(std::max(1, m_params.archiveSize));
    for (NodeId id : open) {
        if (m_archive.size() >= cap)
            break;
        const Node& n = tree.node(id);
        bool near = std::any_of(m_archive.begin(), m_archive.end(), [&](NodeId e) {
            const Node& el = tree.node(e);
            return el.sourceHash == n.sourceHash && knobDistance(el, n) < m_params.minKnobDistance;
        });
        (near ? skipped : m_archive).push_back(id);
    }
    for (size_t i = 0; i < skipped.size() && m_archive.size() < cap; ++i)
        m_archive.push_back(skipped[i]);
    std::sort(m_archive.begin(), m_archive.end(), [&](NodeId a, NodeId b) { return fasterThan(tree, a, b); });

    NodeId winner = m_archive[below(rng, m_archive.size())];
    for (int t = 1; t < m_params.tournament; ++t) {
        NodeId entrant = m_archive[below(rng, m_archive.size())];
        if (fasterThan(tree, entrant, winner))
            winner = entrant;
    }
    return winner;
}

} // namespace hone::core
