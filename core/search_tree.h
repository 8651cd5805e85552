#pragma once

#include "core/knobs.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace hone::core {

using NodeId = int64_t;

enum class NodeState { Pending, Ok, Failed };

/// One candidate in the search tree. The root (id 0) stands for the problem itself; its
/// children are the seeds.
struct Node {
    NodeId id = 0;
    NodeId parent = -1;
    std::vector<NodeId> children;   // append-only
    std::string sourceHash;
    std::string sourceName;
    KnobValues knobs;
    std::string flags;
    std::string origin;             // root | seed | mutation | crossover | manual
    std::string op = "inherit";     // memory operator that built its context

    NodeState state = NodeState::Pending;
    double speedup = 0;             // over the baseline seed, interleaved in one worker
    double reward = 0;              // log2(1 + speedup); 0 for a failure
    std::string failureKind;
    std::string bound;              // the evaluation's diagnosis: memory | compute | latency | occupancy; "" unknown

    // Search statistics over the subtree (this node's own evaluation included).
    int visits = 0;
    double sumReward = 0;
    double maxReward = 0;
    int virtualLoss = 0;            // evaluations in flight below this node
    bool expandable = true;         // false once the synthesizer finds no new child
    bool pruned = false;
};

struct UctParams {
    double exploration = 0.2;       // c in Q + c * sqrt(ln N / n)
    double widenK = 1.0;            // progressive widening (selfArm = false): a node may have
    double widenAlpha = 0.5;        //   ceil(K * visits^alpha) children
    double maxWeight = 0.5;         // Q = (1-w) * mean + w * max reward of the subtree
    /// Q rescaled to [0, 1] between the lowest and highest reward of the tree's successful
    /// nodes, so that `exploration` means the same on a problem whose kernels span 1.1x to 1.3x
    /// as on one whose kernels span 2x to 40x.
    bool normalize = true;
    /// Instead of progressive widening: at each node on the way down, expanding the node itself
    /// is one more arm beside its children, valued at its own reward and counted by the children
    /// it already has. Every node here is a kernel, not a state, so widening (expand the first
    /// node on the path that has room) mostly mutates ancestors that are worse than the node
    /// they led to. Replays on recorded sweeps: docs/SEARCH.md, "Policy table".
    bool selfArm = true;

    /// The parameters before selfArm and normalize existed (c = 0.5, widening): sessions stored
    /// then resume and replay with them.
    static UctParams legacy()
    {
        UctParams p;
        p.exploration = 0.5;
        p.normalize = false;
        p.selfArm = false;
        return p;
    }
};

/// The tree of one session. Owned by the engine thread.
class SearchTree {
public:
    SearchTree();

    Node& node(NodeId id) { return m_nodes.at(static_cast<size_t>(id)); }
    const Node& node(NodeId id) const { return m_nodes.at(static_cast<size_t>(id)); }
    size_t size() const { return m_nodes.size(); }
    const std::vector<Node>& nodes() const { return m_nodes; }

    /// Adds a child and returns its id (ids are dense and in creation order).
    NodeId add(Node n);

    /// Key of (source, knobs, flags): one tree never holds the same candidate twice.
    static std::string candidateKey(const std::string& sourceHash, const KnobValues& knobs, const std::string& flags);
    bool contains(const std::string& key) const { return m_keys.count(key) != 0; }

    /// Records an evaluation and back-propagates its reward to the root.
    void setResult(NodeId id, bool ok, double speedup, const std::string& failureKind);

    void addVirtualLoss(NodeId id);
    void removeVirtualLoss(NodeId id);

    /// UCT descent with progressive widening: returns the node to expand, or nullopt when
    /// nothing in the tree can be expanded any more.
    std::optional<NodeId> select(const UctParams& params);

    /// Marks a node as having no further children to offer.
    void markExhausted(NodeId id) { node(id).expandable = false; }

    /// The successful node with the highest speedup (lowest id on ties), or nullopt.
    std::optional<NodeId> best() const;

private:
    bool selectable(const Node& n) const;
    bool subtreeOpen(NodeId id) const;

    std::vector<Node> m_nodes;
    std::unordered_set<std::string> m_keys;
    double m_minReward = 0; // lowest reward of a successful node (UctParams::normalize)
    bool m_anyOk = false;
};

} // namespace hone::core
