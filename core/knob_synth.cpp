#include "core/knob_synth.h"

#include <algorithm>
#include <iterator>
#include <vector>

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

/// A value of `k` other than the one at `current`, drawn in proportion to its prior weight;
/// nullopt when no other value has weight.
std::optional<std::string> drawFromPrior(
    const KnobDecl& k, size_t current, const std::map<std::string, double>& weights, std::mt19937_64& rng)
{
    auto weightOf = [&](size_t i) {
        auto it = weights.find(k.values[i]);
        return i == current || it == weights.end() ? 0.0 : std::max(0.0, it->second);
    };
    double total = 0;
    for (size_t i = 0; i < k.values.size(); ++i)
        total += weightOf(i);
    if (total <= 0)
        return std::nullopt;
    double r = unit(rng) * total;
    for (size_t i = 0; i < k.values.size(); ++i) {
        double w = weightOf(i);
        if (w > 0 && r < w)
            return k.values[i];
        r -= w;
    }
    for (size_t i = k.values.size(); i-- > 0;) // rounding left r just past the end
        if (weightOf(i) > 0)
            return k.values[i];
    return std::nullopt;
}

} // namespace

void KnobSynthesizer::moveKnob(
    const KnobDecl& k, KnobValues& child, const KnobPrior* pr, std::mt19937_64& rng) const
{
    auto cur = std::find(k.values.begin(), k.values.end(), child[k.name]);
    size_t idx = cur == k.values.end() ? 0 : static_cast<size_t>(cur - k.values.begin());
    // Only a source with a prior draws the extra numbers, so the choices made without
    // one stay exactly what they were.
    if (pr) {
        auto w = pr->find(k.name);
        if (w != pr->end() && unit(rng) < m_params.priorRate) {
            if (auto v = drawFromPrior(k, idx, w->second, rng)) {
                child[k.name] = *v;
                return;
            }
        }
    }
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

void KnobSynthesizer::addSource(const std::string& sourceHash, KnobSpace space)
{
    m_spaces[sourceHash] = std::move(space);
}

const KnobSpace* KnobSynthesizer::space(const std::string& sourceHash) const
{
    auto it = m_spaces.find(sourceHash);
    return it == m_spaces.end() ? nullptr : &it->second;
}

void KnobSynthesizer::setPrior(const std::string& sourceHash, KnobPrior prior)
{
    // Drop what cannot apply, so that an empty result means "no prior" everywhere below.
    for (auto k = prior.begin(); k != prior.end();) {
        for (auto v = k->second.begin(); v != k->second.end();)
            v = v->second > 0 ? std::next(v) : k->second.erase(v);
        k = k->second.empty() ? prior.erase(k) : std::next(k);
    }
    if (prior.empty())
        m_priors.erase(sourceHash);
    else
        m_priors[sourceHash] = std::move(prior);
}

const KnobPrior* KnobSynthesizer::prior(const std::string& sourceHash) const
{
    auto it = m_priors.find(sourceHash);
    return it == m_priors.end() ? nullptr : &it->second;
}

std::optional<Proposal> KnobSynthesizer::propose(const SearchTree& tree, NodeId parentId, std::mt19937_64& rng) const
{
    const Node& parent = tree.node(parentId);
    const KnobSpace* sp = space(parent.sourceHash);
    if (!sp || sp->empty())
        return std::nullopt;
    if (const KnobPrior* pr = prior(parent.sourceHash); pr && parent.origin == "seed") {
        if (auto p = towardsPrior(tree, parent, *sp, *pr))
            return p;
    }
    if (unit(rng) < m_params.crossoverRate) {
        if (auto p = crossover(tree, parent, *sp, rng))
            return p;
    }
    return mutate(tree, parent, *sp, rng);
}

std::optional<Proposal> KnobSynthesizer::propose(
    const SearchTree& tree, NodeId parentId, std::mt19937_64& rng, MemoryOperator op) const
{
    if (op == MemoryOperator::Restart) {
        if (auto p = restart(tree, rng))
            return p;
        op = MemoryOperator::Inherit; // nowhere to restart from: an ordinary child
    }
    const Node& parent = tree.node(parentId);
    const KnobSpace* sp = space(parent.sourceHash);
    if (!sp || sp->empty())
        return std::nullopt;
    std::optional<Proposal> p;
    if (const KnobPrior* pr = prior(parent.sourceHash); pr && parent.origin == "seed")
        p = towardsPrior(tree, parent, *sp, *pr);
    if (!p && (op == MemoryOperator::Compare || op == MemoryOperator::Combine))
        p = towardsSibling(tree, parent, *sp, rng, op == MemoryOperator::Combine);
    if (!p)
        p = mutate(tree, parent, *sp, rng);
    if (p)
        p->op = op;
    return p;
}

std::optional<Proposal> KnobSynthesizer::towardsSibling(const SearchTree& tree, const Node& parent,
    const KnobSpace& sp, std::mt19937_64& rng, bool thenMutate) const
{
    if (parent.parent < 0)
        return std::nullopt;
    // The three fastest evaluated siblings of the same source (lowest id on ties).
    std::vector<const Node*> mates;
    for (NodeId s : tree.node(parent.parent).children) {
        const Node& sib = tree.node(s);
        if (sib.id != parent.id && sib.state == NodeState::Ok && sib.sourceHash == parent.sourceHash && !sib.pruned)
            mates.push_back(&sib);
    }
    std::stable_sort(mates.begin(), mates.end(), [](const Node* a, const Node* b) { return a->speedup > b->speedup; });
    if (mates.size() > 3)
        mates.resize(3);
    if (mates.empty())
        return std::nullopt;
    const KnobPrior* pr = prior(parent.sourceHash);
    for (int attempt = 0; attempt < m_params.attempts / 4; ++attempt) {
        const Node& mate = *mates[static_cast<size_t>(attempt) % mates.size()];
        std::vector<const KnobDecl*> differ;
        for (const auto& k : sp.knobs) {
            auto a = parent.knobs.find(k.name);
            auto b = mate.knobs.find(k.name);
            if (b != mate.knobs.end() && (a == parent.knobs.end() || a->second != b->second))
                differ.push_back(&k);
        }
        if (differ.empty())
            continue;
        // Each differing knob takes the sibling's value with even odds; at least one does.
        KnobValues child = parent.knobs;
        bool moved = false;
        for (const KnobDecl* k : differ)
            if ((rng() & 1) != 0) {
                child[k->name] = mate.knobs.at(k->name);
                moved = true;
            }
        if (!moved) {
            const KnobDecl* k = differ[below(rng, differ.size())];
            child[k->name] = mate.knobs.at(k->name);
        }
        if (thenMutate) {
            const KnobDecl& k = sp.knobs[below(rng, sp.knobs.size())];
            if (k.values.size() >= 2)
                moveKnob(k, child, pr, rng);
        }
        if (!sp.admits(child) || tree.contains(SearchTree::candidateKey(parent.sourceHash, child, parent.flags)))
            continue;
        return Proposal { parent.id, parent.sourceHash, std::move(child), parent.flags, "crossover" };
    }
    return std::nullopt;
}

std::optional<Proposal> KnobSynthesizer::restart(const SearchTree& tree, std::mt19937_64& rng) const
{
    // Anchors: the successful top-level nodes (seeds, warm starts) with knobs to draw.
    std::vector<const Node*> anchors;
    for (NodeId c : tree.node(0).children) {
        const Node& n = tree.node(c);
        const KnobSpace* sp = space(n.sourceHash);
        if (n.state == NodeState::Ok && !n.pruned && sp && !sp->empty())
            anchors.push_back(&n);
    }
    if (anchors.empty())
        return std::nullopt;
    const size_t start = below(rng, anchors.size());
    for (size_t i = 0; i < anchors.size(); ++i) {
        const Node& a = *anchors[(start + i) % anchors.size()];
        const KnobSpace& sp = *space(a.sourceHash);
        for (int attempt = 0; attempt < m_params.attempts; ++attempt) {
            KnobValues child;
            for (const auto& k : sp.knobs)
                child[k.name] = k.values[below(rng, k.values.size())];
            if (!sp.admits(child) || tree.contains(SearchTree::candidateKey(a.sourceHash, child, a.flags)))
                continue;
            return Proposal { a.id, a.sourceHash, std::move(child), a.flags, "restart", MemoryOperator::Restart };
        }
    }
    return std::nullopt;
}

std::optional<Proposal> KnobSynthesizer::towardsPrior(
    const SearchTree& tree, const Node& parent, const KnobSpace& sp, const KnobPrior& pr) const
{
    // The seed's assignment with each knob moved to the prior's favourite value, the most
    // confident knobs first; a move that breaks a `require` is skipped, not forced.
    std::vector<std::pair<double, const KnobDecl*>> order;
    for (const auto& k : sp.knobs) {
        auto w = pr.find(k.name);
        if (w == pr.end())
            continue;
        double total = 0, top = 0;
        for (const auto& v : k.values) {
            auto it = w->second.find(v);
            double x = it == w->second.end() ? 0.0 : it->second;
            total += x;
            top = std::max(top, x);
        }
        if (top > 0)
            order.emplace_back(top / total, &k);
    }
    std::stable_sort(
        order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    KnobValues child = parent.knobs;
    for (const auto& [confidence, k] : order) {
        const auto& weights = pr.at(k->name);
        const std::string* best = nullptr;
        double bestWeight = 0;
        for (const auto& v : k->values) { // declaration order breaks ties
            auto it = weights.find(v);
            if (it != weights.end() && it->second > bestWeight) {
                bestWeight = it->second;
                best = &v;
            }
        }
        std::string old = child[k->name];
        child[k->name] = *best;
        if (!sp.admits(child))
            child[k->name] = old;
    }
    if (child == parent.knobs || !sp.admits(child)
        || tree.contains(SearchTree::candidateKey(parent.sourceHash, child, parent.flags)))
        return std::nullopt;
    return Proposal { parent.id, parent.sourceHash, std::move(child), parent.flags, "prior" };
}

std::optional<Proposal> KnobSynthesizer::mutate(const SearchTree& tree, const Node& parent, const KnobSpace& sp,
    std::mt19937_64& rng) const
{
    const KnobPrior* pr = prior(parent.sourceHash);
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
            moveKnob(k, child, pr, rng);
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
