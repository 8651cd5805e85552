#include "core/knob_synth.h"

#include <algorithm>

namespace hone::core {
namespace {

// Portable, seed-stable draws: std::uniform_*_distribution differ between standard libraries,
// and a replayed search must make the same choices everywhere.
uint64_t below(std::mt19937_64& rng, uint64_t n)
{
    return n == 0 ? 0 : rng() % n;
}

double unit(std::mt19937_64& rng)
{
    return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

} // namespace

void KnobSynthesizer::addSource(const std::string& sourceHash, KnobSpace space)
{
    m_spaces[sourceHash] = std::move(space);
}

const KnobSpace* KnobSynthesizer::space(const std::string& sourceHash) const
{
    auto it = m_spaces.find(sourceHash);
    return it == m_spaces.end() ? nullptr : &it->second;
}

std::optional<Proposal> KnobSynthesizer::propose(const SearchTree& tree, NodeId parentId, std::mt19937_64& rng) const
{
    const Node& parent = tree.node(parentId);
    const KnobSpace* sp = space(parent.sourceHash);
    if (!sp || sp->empty())
        return std::nullopt;
    if (unit(rng) < m_params.crossoverRate) {
        if (auto p = crossover(tree, parent, *sp, rng))
            return p;
    }
    return mutate(tree, parent, *sp, rng);
}

std::optional<Proposal> KnobSynthesizer::mutate(const SearchTree& tree, const Node& parent, const KnobSpace& sp,
    std::mt19937_64& rng) const
{
    for (int attempt = 0; attempt < m_params.attempts; ++attempt) {
        KnobValues child = parent.knobs;
        // Mostly one knob, sometimes two or three: small steps exploit, larger ones escape.
        double r = unit(rng);
        int changes = r < 0.7 ? 1 : (r < 0.95 ? 2 : 3);
        // Later attempts widen the step so a crowded neighbourhood does not end the branch.
        changes = std::min<int>(static_cast<int>(sp.knobs.size()), changes + attempt / 16);
        for (int c = 0; c < changes; ++c) {
            const KnobDecl& k = sp.knobs[below(rng, sp.knobs.size())];
            if (k.values.size() < 2)
                continue;
            auto cur = std::find(k.values.begin(), k.values.end(), child[k.name]);
            size_t idx = cur == k.values.end() ? 0 : static_cast<size_t>(cur - k.values.begin());
            size_t next;
            if (unit(rng) < m_params.neighbourRate) {
                bool up = (rng() & 1) != 0;
                if (idx == 0)
                    up = true;
                if (idx + 1 == k.values.size())
                    up = false;
                next = up ? idx + 1 : idx - 1;
            } else {
                next = below(rng, k.values.size() - 1);
                if (next >= idx)
                    ++next;
            }
            child[k.name] = k.values[next];
        }
        if (!sp.admits(child))
            continue;
        if (tree.contains(SearchTree::candidateKey(parent.sourceHash, child, parent.flags)))
            continue;
        return Proposal {parent.id, parent.sourceHash, std::move(child), parent.flags, "mutation"};
    }
    return std::nullopt;
}

std::optional<Proposal> KnobSynthesizer::crossover(const SearchTree& tree, const Node& parent, const KnobSpace& sp,
    std::mt19937_64& rng) const
{
    // The elite siblings: evaluated, successful nodes under the same parent with the same source.
    if (parent.parent < 0)
        return std::nullopt;
    const Node* mate = nullptr;
    for (NodeId s : tree.node(parent.parent).children) {
        const Node& sib = tree.node(s);
        if (sib.id == parent.id || sib.state != NodeState::Ok || sib.sourceHash != parent.sourceHash || sib.pruned)
            continue;
        if (!mate || sib.speedup > mate->speedup)
            mate = &sib;
    }
    if (!mate)
        return std::nullopt;
    for (int attempt = 0; attempt < m_params.attempts / 4; ++attempt) {
        KnobValues child;
        for (const auto& k : sp.knobs) {
            auto a = parent.knobs.find(k.name);
            auto b = mate->knobs.find(k.name);
            bool takeMate = (rng() & 1) != 0;
            if (takeMate && b != mate->knobs.end())
                child[k.name] = b->second;
            else if (a != parent.knobs.end())
                child[k.name] = a->second;
            else
                child[k.name] = k.values.front();
        }
        if (!sp.admits(child) || tree.contains(SearchTree::candidateKey(parent.sourceHash, child, parent.flags)))
            continue;
        return Proposal {parent.id, parent.sourceHash, std::move(child), parent.flags, "crossover"};
    }
    return std::nullopt;
}

} // namespace hone::core
