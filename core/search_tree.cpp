#include "core/search_tree.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace hone::core {

SearchTree::SearchTree()
{
    Node root;
    root.id = 0;
    root.origin = "root";
    root.state = NodeState::Ok;
    m_nodes.push_back(std::move(root));
}

std::string SearchTree::candidateKey(const std::string& sourceHash, const KnobValues& knobs, const std::string& flags)
{
    return sourceHash + "|" + knobsToString(knobs) + "|" + flags;
}

NodeId SearchTree::add(Node n)
{
    n.id = static_cast<NodeId>(m_nodes.size());
    if (n.parent < 0 || n.parent >= n.id)
        throw std::logic_error("SearchTree::add: parent " + std::to_string(n.parent) + " does not exist");
    m_keys.insert(candidateKey(n.sourceHash, n.knobs, n.flags));
    m_nodes[static_cast<size_t>(n.parent)].children.push_back(n.id);
    m_nodes.push_back(std::move(n));
    return m_nodes.back().id;
}

void SearchTree::setResult(NodeId id, bool ok, double speedup, const std::string& failureKind)
{
    Node& n = node(id);
    n.state = ok ? NodeState::Ok : NodeState::Failed;
    n.speedup = ok ? speedup : 0.0;
    n.reward = ok && speedup > 0 ? std::log2(1.0 + speedup) : 0.0;
    n.failureKind = failureKind;
    if (ok) {
        m_minReward = m_anyOk ? std::min(m_minReward, n.reward) : n.reward;
        m_anyOk = true;
    }
    for (NodeId cur = id; cur >= 0; cur = node(cur).parent) {
        Node& a = node(cur);
        a.visits += 1;
        a.sumReward += n.reward;
        a.maxReward = std::max(a.maxReward, n.reward);
    }
}

void SearchTree::addVirtualLoss(NodeId id)
{
    for (NodeId cur = id; cur >= 0; cur = node(cur).parent)
        node(cur).virtualLoss += 1;
}

void SearchTree::removeVirtualLoss(NodeId id)
{
    for (NodeId cur = id; cur >= 0; cur = node(cur).parent)
        node(cur).virtualLoss = std::max(0, node(cur).virtualLoss - 1);
}

bool SearchTree::selectable(const Node& n) const
{
    return !n.pruned && n.state == NodeState::Ok;
}

bool SearchTree::subtreeOpen(NodeId id) const
{
    const Node& n = node(id);
    if (n.pruned)
        return false;
    if (id != 0 && selectable(n) && n.expandable)
        return true;
    for (NodeId c : n.children)
        if (subtreeOpen(c))
            return true;
    return false;
}

std::optional<NodeId> SearchTree::select(const UctParams& p)
{
    NodeId cur = 0;
    while (true) {
        const Node& n = node(cur);
        if (cur != 0 && n.expandable && !p.selfArm) {
            double allowed = std::ceil(p.widenK * std::pow(std::max(1, n.visits + n.virtualLoss), p.widenAlpha));
            if (static_cast<double>(n.children.size()) < allowed)
                return cur;
        }
        // Descend to the child with the best UCT score whose subtree can still grow.
        double parentN = std::max(1, n.visits + n.virtualLoss);
        const double span = node(0).maxReward - m_minReward;
        auto scaled = [&](double q) {
            if (!p.normalize)
                return q;
            return span > 1e-12 ? (q - m_minReward) / span : 1.0;
        };
        NodeId bestChild = -1;
        double bestScore = -1e300;
        if (p.selfArm && cur != 0 && n.expandable && selectable(n)) {
            // The node itself, as often tried as it has children (in flight included).
            const double tried = static_cast<double>(std::max<size_t>(1, n.children.size()));
            bestScore = scaled(n.reward) + p.exploration * std::sqrt(std::log(parentN + 1.0) / tried);
            bestChild = cur;
        }
        for (NodeId c : n.children) {
            const Node& ch = node(c);
            if (!selectable(ch) || !subtreeOpen(c))
                continue;
            double visits = std::max(1, ch.visits + ch.virtualLoss);
            double mean = ch.sumReward / visits; // virtual losses count as zero reward
            double q = scaled((1.0 - p.maxWeight) * mean + p.maxWeight * ch.maxReward);
            double score = q + p.exploration * std::sqrt(std::log(parentN + 1.0) / visits);
            if (score > bestScore) {
                bestScore = score;
                bestChild = c;
            }
        }
        if (bestChild == cur)
            return cur;
        if (bestChild >= 0) {
            cur = bestChild;
            continue;
        }
        if (cur != 0 && n.expandable)
            return cur; // past its widening limit, but nothing below can grow
        return std::nullopt;
    }
}

std::optional<NodeId> SearchTree::best() const
{
    std::optional<NodeId> best;
    for (const Node& n : m_nodes) {
        if (n.id == 0 || n.state != NodeState::Ok)
            continue;
        if (!best || n.speedup > node(*best).speedup)
            best = n.id;
    }
    return best;
}

} // namespace hone::core
