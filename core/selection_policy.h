#pragma once

#include "core/search_tree.h"

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace hone::core {

/// Chooses which node of the tree the synthesizer expands next (docs/SEARCH.md). One object per
/// session, chosen by RunOptions::policy; it runs on the engine thread and may keep state
/// between calls (the evolutionary archive), but its choices depend only on the tree and `rng`,
/// so the same seed and the same results give the same tree.
class SelectionPolicy {
public:
    virtual ~SelectionPolicy() = default;
    virtual std::string name() const = 0;
    /// The node to expand, or nullopt when nothing in the tree can be expanded any more.
    /// `rng` is the proposal's own generator (seeded from the session seed and proposal index).
    virtual std::optional<NodeId> select(SearchTree& tree, std::mt19937_64& rng) = 0;
};

struct EvolutionParams {
    int archiveSize = 4;            // elites kept
    int minKnobDistance = 2;        // an elite differs from every better elite of its source in
                                    //   at least this many knobs (or in flags)
    int tournament = 4;             // entrants per parent choice; the fastest wins

    /// Before the replays of docs/SEARCH.md ("Policy table") tuned them: 8 elites, size-2
    /// tournaments. Sessions stored then resume and replay with these.
    static EvolutionParams legacy() { return {8, 2, 2}; }
};

/// uct | greedy | random | evolutionary. Throws std::invalid_argument naming the known
/// policies for any other name.
std::unique_ptr<SelectionPolicy> makeSelectionPolicy(
    const std::string& name, const UctParams& uct = {}, const EvolutionParams& evolution = {});

/// The names makeSelectionPolicy accepts, in the order docs and help list them.
const std::vector<std::string>& selectionPolicyNames();

/// The seed of the generator a policy draws from for proposal `seq` of a session: one per
/// proposal, so resume and replay make the same choices.
inline uint64_t selectionSeed(uint64_t sessionSeed, int64_t seq)
{
    return (sessionSeed ^ 0xD1B54A32D192ED03ull) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(seq) * 0xBF58476D1CE4E5B9ull;
}

/// Nodes a policy may expand: evaluated successfully, not exhausted, neither pruned nor under a
/// pruned node, never the root; in id order.
std::vector<NodeId> expandableNodes(const SearchTree& tree);


/// Elite archive with diversity by source and knob assignment; the parent is the winner of a
/// tournament over the archive. Crossover comes from the knob synthesizer, which mates a
/// node with its best sibling.
class EvolutionaryPolicy : public SelectionPolicy {
public:
    explicit EvolutionaryPolicy(EvolutionParams params = {})
        : m_params(params)
    {
    }
    std::string name() const override { return "evolutionary"; }
    std::optional<NodeId> select(SearchTree& tree, std::mt19937_64& rng) override;

    /// The archive the last select() drew from, best first.
    const std::vector<NodeId>& archive() const { return m_archive; }

private:
    EvolutionParams m_params;
    std::vector<NodeId> m_archive;
};

} // namespace hone::core
