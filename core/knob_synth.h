#pragma once

#include "core/knobs.h"
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
    std::string origin;   // mutation | crossover | prior
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
/// candidate already in the tree.
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

    /// nullopt when no new admissible child of `parent` was found.
    std::optional<Proposal> propose(const SearchTree& tree, NodeId parent, std::mt19937_64& rng) const;

private:
    std::optional<Proposal> mutate(const SearchTree& tree, const Node& parent, const KnobSpace& space,
        std::mt19937_64& rng) const;
    std::optional<Proposal> crossover(const SearchTree& tree, const Node& parent, const KnobSpace& space,
        std::mt19937_64& rng) const;
    std::optional<Proposal> towardsPrior(
        const SearchTree& tree, const Node& parent, const KnobSpace& space, const KnobPrior& prior) const;

    KnobSynthParams m_params;
    std::map<std::string, KnobSpace> m_spaces;
    std::map<std::string, KnobPrior> m_priors;
};

} // namespace hone::core
