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
    std::string origin;   // mutation | crossover
};

struct KnobSynthParams {
    double crossoverRate = 0.25;   // when the node has an evaluated sibling of the same source
    double neighbourRate = 0.6;    // a mutated knob moves to an adjacent value, else a random one
    int attempts = 64;             // tries to find an admissible, unseen child before giving up
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

    /// nullopt when no new admissible child of `parent` was found.
    std::optional<Proposal> propose(const SearchTree& tree, NodeId parent, std::mt19937_64& rng) const;

private:
    std::optional<Proposal> mutate(const SearchTree& tree, const Node& parent, const KnobSpace& space,
        std::mt19937_64& rng) const;
    std::optional<Proposal> crossover(const SearchTree& tree, const Node& parent, const KnobSpace& space,
        std::mt19937_64& rng) const;

    KnobSynthParams m_params;
    std::map<std::string, KnobSpace> m_spaces;
};

} // namespace hone::core
