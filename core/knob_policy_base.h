#pragma once

// Internal to the knob-space policies (knob_policy*.cpp): what they share.

#include "core/knob_policy.h"

namespace hone::core::knobpolicy {

/// Portable draws (the standard distributions differ between standard libraries).
inline uint64_t below(std::mt19937_64& rng, uint64_t n) { return n == 0 ? 0 : rng() % n; }
inline double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

/// A uniform number in [0, 1) fixed by (seed, key): a decision that must come out the same
/// whenever the tree is read again (annealing's acceptance of a node).
double fixedDraw(uint64_t seed, uint64_t key);

/// The tree as the domain sees it: which node holds each point. Nodes are append-only and
/// their candidates never change, so the map is brought up to date incrementally.
class Base : public KnobPolicy {
public:
    Base(std::shared_ptr<const KnobDomain> domain, uint64_t seed);

protected:
    void sync(const SearchTree& tree);
    /// The node holding point `p`, or -1.
    NodeId nodeAt(size_t p) const { return m_nodeAt[p]; }
    std::optional<size_t> pointOfNode(NodeId id) const;
    /// Known and successful: its speedup; else nullopt (failed, pending or never evaluated).
    std::optional<double> speedOf(const SearchTree& tree, size_t p) const;
    bool failed(const SearchTree& tree, size_t p) const;
    /// The top-level node that brought the point's source.
    NodeId seedOf(size_t p) const { return m_seedOf[m_domain->sourceOf(p)]; }
    /// The fastest successful top-level node of the domain, or nullopt.
    std::optional<NodeId> bestSeed(const SearchTree& tree) const;
    /// The next admissible point the tree does not hold, in a permutation fixed by the session
    /// seed: a uniform sample without replacement.
    std::optional<size_t> freshPoint();
    /// The next `k` such points (fewer when the domain runs out), the first being freshPoint().
    std::vector<size_t> freshPoints(size_t k);
    std::vector<size_t> unseenNeighbours(size_t p) const;
    KnobMove move(NodeId parent, size_t p, const std::string& origin, const std::string& op) const;
    KnobMove fresh(size_t p) const { return move(seedOf(p), p, "sample", "restart"); }
    /// First-improvement hill climbing with restarts (the hill climber and the guided policy):
    /// the climb stands on the last proposal if it was a restart or beat its parent, else on its
    /// parent; it steps for free onto a known faster neighbour, evaluates an unseen neighbour
    /// chosen by `pick(point, node, unseen)`, and restarts from a fresh uniform point at a local
    /// optimum. Call sync(tree) first.
    /// `restart` (empty: freshPoint) gives the point a new climb starts from; a proposal of
    /// origin "sample" or "model" is such a start.
    std::optional<KnobMove> climb(const SearchTree& tree,
        const std::function<size_t(size_t, const Node&, const std::vector<size_t>&)>& pick,
        const std::function<std::optional<KnobMove>()>& restart = {});

    std::shared_ptr<const KnobDomain> m_domain;
    uint64_t m_seed;

private:
    std::vector<NodeId> m_nodeAt;
    std::vector<long long> m_pointOfNode; // per node id; -1 outside the domain
    std::vector<NodeId> m_seedOf;         // per source
    std::vector<size_t> m_perm;
    size_t m_cursor = 0;
};

/// The tree-structured Parzen estimator's densities over the known results (the `tpe` policy,
/// and the `hybrid` one's neighbour order and restarts): per source and knob value, the good
/// group's l and the rest's g, smoothed by a uniform prior of `priorWeight` observations.
class TpeModel {
public:
    struct Obs {
        size_t point;
        double speed; // -1: failed
    };
    /// The known results of `tree` in node order (the first node of each point; pending ones
    /// left out).
    static std::vector<Obs> observe(const SearchTree& tree, const std::function<std::optional<size_t>(NodeId)>& pointOf,
        const std::function<NodeId(size_t)>& nodeAt);
    TpeModel(const KnobDomain& domain, std::vector<Obs> obs, const TpeParams& p);
    /// Sum over the point's source and knob values of log(l / g): higher is more like the good group.
    double score(size_t point) const;
    /// `candidates` draws from l; the unseen admissible one (`unseen`) with the highest score.
    std::optional<size_t> propose(std::mt19937_64& rng, const std::function<bool(size_t)>& unseen) const;

private:
    double density(const std::vector<double>& counts, size_t v) const;
    size_t drawFrom(const std::vector<double>& counts, std::mt19937_64& rng) const;
    const KnobDomain& m_domain;
    TpeParams m_p;
    std::vector<double> m_srcCount[2];                         // [group][source]
    std::vector<std::vector<std::vector<double>>> m_knobCount[2]; // [group][source][knob][value]
};

std::unique_ptr<KnobPolicy> makeHybrid(std::shared_ptr<const KnobDomain> d, uint64_t seed, const HybridParams& p);
std::unique_ptr<KnobPolicy> makeGenetic(std::shared_ptr<const KnobDomain> d, uint64_t seed, const GeneticParams& p);
std::unique_ptr<KnobPolicy> makeTpe(std::shared_ptr<const KnobDomain> d, uint64_t seed, const TpeParams& p);
std::unique_ptr<KnobPolicy> makeGuided(std::shared_ptr<const KnobDomain> d, uint64_t seed, const GuidedParams& p);

} // namespace hone::core::knobpolicy
