#pragma once

#include "core/knobs.h"
#include "core/memory_policy.h"
#include "core/search_tree.h"

#include <map>
#include <optional>
#include <random>
#include <string>

namespace hone::core {

/// A child the synthesizer wants evaluated.
struct Proposal {
    NodeId parent = 0;
    std::string sourceHash;
    KnobValues knobs;
    std::string flags;
    std::string origin;   // mutation | crossover | prior | restart
    MemoryOperator op = MemoryOperator::Inherit; // the operator that built it (a failed restart: inherit)
};

/// Weights over knob values learnt from earlier sessions (skills): knob -> value -> weight.
/// Larger is more favoured; values that are absent or have weight <= 0 get no push.
using KnobPrior = std::map<std::string, std::map<std::string, double>>;

struct KnobSynthParams {
    double crossoverRate = 0.25;   // when the node has an evaluated sibling of the same source
    double neighbourRate = 0.6;    // a mutated knob moves to an adjacent value, else a random one
    int attempts = 64;             // tries to find an admissible, unseen child before giving up
    double priorRate = 0.5;        // with a prior, how often a mutated knob draws its value from it
};

/// Offline synthesizer: mutates a node's knob assignment, or crosses it with its best
/// sibling, always within the source's `require` constraints and never repeating a
/// candidate already in the tree. The memory operator says which (docs/SEARCH.md).
class KnobSynthesizer {
public:
    explicit KnobSynthesizer(KnobSynthParams params = {})
        : m_params(params)
    {
    }

    void addSource(const std::string& sourceHash, KnobSpace space);
    const KnobSpace* space(const std::string& sourceHash) const;

    /// Biases the children of nodes with this source towards the prior's values: the first
    /// expansion proposes the prior's favourite assignment (origin "prior"), and mutations draw
    /// new values from the prior's weights `priorRate` of the time. Knobs or values the source
    /// does not declare are ignored; an empty prior removes it. Without a prior the synthesizer
    /// makes exactly the choices it made before priors existed.
    void setPrior(const std::string& sourceHash, KnobPrior prior);
    const KnobPrior* prior(const std::string& sourceHash) const;

    /// nullopt when no new admissible child of `parent` was found. Mutation, or crossover with
    /// the best sibling `crossoverRate` of the time: the choices made before memory operators
    /// (sessions stored without `knob_operators` resume and replay with it).
    std::optional<Proposal> propose(const SearchTree& tree, NodeId parent, std::mt19937_64& rng) const;

    /// A child built the way `op` says:
    /// - inherit: a mutation of the node's own assignment (neighbour or random values);
    /// - compare: the node moved towards one of its three best evaluated siblings of the same
    ///   source (some of the knobs where they differ take the sibling's value);
    /// - combine: such a move followed by one mutation step;
    /// - restart: a fresh random admissible assignment of a top-level node's source (a seed or
    ///   warm-start node, chosen at random among the successful ones), as a child of that node;
    ///   `parent` is then ignored unless no restart is possible, when an inherit child of
    ///   `parent` is proposed instead (its `op` says inherit).
    /// Compare and combine fall back to a mutation when no sibling helps (origin "mutation").
    /// A seed with a prior first gets the prior's favourite assignment, as with propose().
    std::optional<Proposal> propose(
        const SearchTree& tree, NodeId parent, std::mt19937_64& rng, MemoryOperator op) const;

private:
    std::optional<Proposal> mutate(const SearchTree& tree, const Node& parent, const KnobSpace& space,
        std::mt19937_64& rng) const;
    std::optional<Proposal> crossover(const SearchTree& tree, const Node& parent, const KnobSpace& space,
        std::mt19937_64& rng) const;
    std::optional<Proposal> towardsSibling(const SearchTree& tree, const Node& parent, const KnobSpace& space,
        std::mt19937_64& rng, bool thenMutate) const;
    std::optional<Proposal> restart(const SearchTree& tree, std::mt19937_64& rng) const;
    /// Moves knob `k` of `child` to a neighbour or random value (or the prior's draw).
    void moveKnob(const KnobDecl& k, KnobValues& child, const KnobPrior* prior, std::mt19937_64& rng) const;
    std::optional<Proposal> towardsPrior(
        const SearchTree& tree, const Node& parent, const KnobSpace& space, const KnobPrior& prior) const;

    KnobSynthParams m_params;
    std::map<std::string, KnobSpace> m_spaces;
    std::map<std::string, KnobPrior> m_priors;
};

} // namespace hone::core
