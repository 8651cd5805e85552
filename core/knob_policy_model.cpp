// The population- and model-based knob-space baselines: Kernel Tuner's genetic algorithm and
// a tree-structured Parzen estimator (docs/SEARCH.md, "Knob-space policies").

#include "core/knob_policy_base.h"

#include <algorithm>
#include <cmath>

namespace hone::core::knobpolicy {
namespace {

/// Kernel Tuner's `genetic_algorithm` strategy (van Werkhoven, "Kernel Tuner: A search-
/// optimizing GPU code auto-tuner", FGCS 2019; kernel_tuner/strategies/genetic_algorithm.py):
/// a population ranked by time; parents drawn by rank (index int(Beta(1, 2.5) * size), the
/// fastest most often, two distinct); uniform crossover (each knob swapped with even odds)
/// gives two children; each mutates 1 in `mutationChance` times to a random one-knob
/// neighbour; children that are inadmissible or already in the next generation are dropped.
/// A child that was evaluated before costs nothing (Kernel Tuner's cache). Generation 0 is the
/// seeds plus uniform points. After `generations` generations it starts over.
class Genetic : public Base {
public:
    Genetic(std::shared_ptr<const KnobDomain> d, uint64_t seed, GeneticParams p)
        : Base(std::move(d), seed)
        , m_p(p)
    {
    }
    std::string name() const override { return "genetic"; }

    std::optional<KnobMove> next(const SearchTree& tree, std::mt19937_64&) override
    {
        sync(tree);
        if (m_gen.empty())
            m_gen = firstGeneration(tree);
        // Generations whose members are all known cost nothing; a bound keeps a converged
        // population from looping forever.
        for (int guard = 0; guard < 10 * std::max(1, m_p.generations); ++guard) {
            for (const Member& m : m_gen)
                if (nodeAt(m.point) < 0) {
                    if (m.parent < 0)
                        return fresh(m.point);
                    return move(m.parent, m.point, "offspring", "inherit");
                }
            ++m_index;
            m_gen = m_index % std::max(1, m_p.generations) == 0 ? firstGeneration(tree) : breed(tree);
            if (m_gen.empty())
                return std::nullopt;
        }
        return std::nullopt;
    }

private:
    struct Member {
        size_t point;
        NodeId parent; // the node of the parent it took its place from; -1: a fresh point
    };

    std::vector<Member> firstGeneration(const SearchTree& tree)
    {
        std::vector<Member> gen;
        if (m_index == 0)
            for (NodeId id : tree.node(0).children)
                if (auto p = pointOfNode(id); p && static_cast<int>(gen.size()) < m_p.population)
                    gen.push_back({*p, id});
        for (size_t p : freshPoints(static_cast<size_t>(std::max(0, m_p.population - static_cast<int>(gen.size())))))
            gen.push_back({p, -1});
        return gen;
    }

    std::vector<Member> breed(const SearchTree& tree)
    {
        // Rank the last generation: successful by speed, then failures; pending ones (several
        // workers) are left out.
        std::vector<size_t> ranked;
        for (const Member& m : m_gen) {
            NodeId id = nodeAt(m.point);
            if (id >= 0 && tree.node(id).state != NodeState::Pending
                && std::find(ranked.begin(), ranked.end(), m.point) == ranked.end())
                ranked.push_back(m.point);
        }
        std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
            auto sa = speedOf(tree, a), sb = speedOf(tree, b);
            return sa.value_or(-1.0) > sb.value_or(-1.0);
        });
        if (ranked.size() < 2)
            return firstGeneration(tree);
        std::mt19937_64 rng(m_seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(m_index) * 0xBF58476D1CE4E5B9ull + 0x6761);
        const size_t n = ranked.size();
        auto rankIndex = [&] {
            double x = 1.0 - std::pow(1.0 - unit(rng), 1.0 / 2.5); // Beta(1, 2.5) by inversion
            return std::min(n - 1, static_cast<size_t>(x * static_cast<double>(n)));
        };
        std::vector<Member> gen;
        const size_t cap = static_cast<size_t>(std::max(1, m_p.population));
        for (int attempts = 0; gen.size() < cap && attempts < 100 * m_p.population; ++attempts) {
            size_t i1 = rankIndex(), i2 = rankIndex();
            while (i2 == i1)
                i2 = rankIndex();
            size_t a = ranked[i1], b = ranked[i2];
            size_t c1 = a, c2 = b;
            const size_t s = m_domain->sourceOf(a);
            if (m_domain->sourceOf(b) == s)
                for (size_t k = 0; k < m_domain->sources()[s].knobs.size(); ++k)
                    if (unit(rng) > 0.5) {
                        c1 = m_domain->with(c1, k, m_domain->value(b, k));
                        c2 = m_domain->with(c2, k, m_domain->value(a, k));
                    }
            for (auto [child, from] : {std::pair {c1, a}, std::pair {c2, b}}) {
                if (m_p.mutationChance > 0 && below(rng, static_cast<uint64_t>(m_p.mutationChance)) == 0) {
                    auto nb = m_domain->neighbours(child);
                    if (!nb.empty())
                        child = nb[below(rng, nb.size())];
                }
                bool dup = std::any_of(gen.begin(), gen.end(), [&, &point = child](const Member& m) { return m.point == point; });
                if (m_domain->admissible(child) && !dup)
                    gen.push_back({child, nodeAt(from)});
                if (gen.size() >= cap)
                    break;
            }
        }
        return gen;
    }

    GeneticParams m_p;
    std::vector<Member> m_gen;
    int m_index = 0;
};

/// A tree-structured Parzen estimator (Bergstra et al., "Algorithms for Hyper-Parameter
/// Optimization", NIPS 2011) with Optuna's TPESampler defaults for categorical parameters
/// (independent per knob): after `startup` known results, the best min(ceil(0.1 n), 25) form
/// the good group and the rest (failures included) the bad group; each knob's value (and the
/// source, with several) gets l(v) = (good with v + w/K) / (good + w) and g(v) likewise over
/// the bad group; `candidates` points are drawn from l and the unseen admissible one with the
/// highest product of l/g is proposed. Knob values are categories: their order is not used.
class Tpe : public Base {
public:
    Tpe(std::shared_ptr<const KnobDomain> d, uint64_t seed, TpeParams p)
        : Base(std::move(d), seed)
        , m_p(p)
    {
    }
    std::string name() const override { return "tpe"; }

    std::optional<KnobMove> next(const SearchTree& tree, std::mt19937_64& rng) override
    {
        sync(tree);
        auto obs = TpeModel::observe(
            tree, [&](NodeId id) { return pointOfNode(id); }, [&](size_t p) { return nodeAt(p); });
        if (static_cast<int>(obs.size()) < m_p.startup)
            return sample();
        TpeModel model(*m_domain, std::move(obs), m_p);
        auto best = model.propose(rng, [&](size_t q) { return nodeAt(q) < 0; });
        if (!best)
            return sample();
        return move(seedOf(*best), *best, "model", "restart");
    }

private:
    std::optional<KnobMove> sample()
    {
        auto p = freshPoint();
        if (!p)
            return std::nullopt;
        return fresh(*p);
    }

    TpeParams m_p;
};

} // namespace

std::vector<TpeModel::Obs> TpeModel::observe(const SearchTree& tree,
    const std::function<std::optional<size_t>(NodeId)>& pointOf, const std::function<NodeId(size_t)>& nodeAt)
{
    std::vector<Obs> obs;
    for (size_t id = 1; id < tree.size(); ++id) {
        auto p = pointOf(static_cast<NodeId>(id));
        const Node& n = tree.node(static_cast<NodeId>(id));
        if (p && n.state != NodeState::Pending && nodeAt(*p) == n.id)
            obs.push_back({*p, n.state == NodeState::Ok ? n.speedup : -1.0});
    }
    return obs;
}

TpeModel::TpeModel(const KnobDomain& domain, std::vector<Obs> obs, const TpeParams& p)
    : m_domain(domain)
    , m_p(p)
{
    std::stable_sort(obs.begin(), obs.end(), [](const Obs& a, const Obs& b) { return a.speed > b.speed; });
    const size_t nGood = std::min(obs.size(),
        std::min(static_cast<size_t>(std::ceil(m_p.gammaFraction * static_cast<double>(obs.size()))),
            static_cast<size_t>(std::max(1, m_p.gammaMax))));
    const auto& sources = m_domain.sources();
    for (int g = 0; g < 2; ++g) {
        m_srcCount[g].assign(sources.size(), 0.0);
        m_knobCount[g].resize(sources.size());
        for (size_t s = 0; s < sources.size(); ++s)
            for (const KnobDecl& k : sources[s].knobs)
                m_knobCount[g][s].emplace_back(k.values.size(), 0.0);
    }
    for (size_t i = 0; i < obs.size(); ++i) {
        int g = i < nGood ? 0 : 1;
        size_t s = m_domain.sourceOf(obs[i].point);
        m_srcCount[g][s] += 1;
        for (size_t k = 0; k < sources[s].knobs.size(); ++k)
            m_knobCount[g][s][k][static_cast<size_t>(m_domain.value(obs[i].point, k))] += 1;
    }
}

double TpeModel::density(const std::vector<double>& counts, size_t v) const
{
    double total = 0;
    for (double c : counts)
        total += c;
    return (counts[v] + m_p.priorWeight / static_cast<double>(counts.size())) / (total + m_p.priorWeight);
}

/// A draw from l: counts smoothed by the prior, as density() weighs them.
size_t TpeModel::drawFrom(const std::vector<double>& counts, std::mt19937_64& rng) const
{
    const double w = m_p.priorWeight / static_cast<double>(counts.size());
    double total = 0;
    for (double c : counts)
        total += c + w;
    double u = unit(rng) * total;
    for (size_t v = 0; v < counts.size(); ++v) {
        u -= counts[v] + w;
        if (u < 0)
            return v;
    }
    return counts.size() - 1;
}

double TpeModel::score(size_t point) const
{
    size_t s = m_domain.sourceOf(point);
    double score = std::log(density(m_srcCount[0], s) / density(m_srcCount[1], s));
    for (size_t k = 0; k < m_domain.sources()[s].knobs.size(); ++k) {
        size_t v = static_cast<size_t>(m_domain.value(point, k));
        score += std::log(density(m_knobCount[0][s][k], v) / density(m_knobCount[1][s][k], v));
    }
    return score;
}

std::optional<size_t> TpeModel::propose(std::mt19937_64& rng, const std::function<bool(size_t)>& unseen) const
{
    const auto& sources = m_domain.sources();
    std::optional<size_t> best;
    double bestScore = 0;
    int valid = 0;
    for (int draw = 0; draw < 10 * m_p.candidates && valid < m_p.candidates; ++draw) {
        size_t s = drawFrom(m_srcCount[0], rng);
        size_t q = sources[s].offset;
        for (size_t k = 0; k < sources[s].knobs.size(); ++k)
            q = m_domain.with(q, k, static_cast<int>(drawFrom(m_knobCount[0][s][k], rng)));
        if (!m_domain.admissible(q) || !unseen(q))
            continue;
        ++valid;
        double sc = score(q);
        if (!best || sc > bestScore) {
            best = q;
            bestScore = sc;
        }
    }
    return best;
}

std::unique_ptr<KnobPolicy> makeGenetic(std::shared_ptr<const KnobDomain> d, uint64_t seed, const GeneticParams& p)
{
    return std::make_unique<Genetic>(std::move(d), seed, p);
}

std::unique_ptr<KnobPolicy> makeTpe(std::shared_ptr<const KnobDomain> d, uint64_t seed, const TpeParams& p)
{
    return std::make_unique<Tpe>(std::move(d), seed, p);
}

} // namespace hone::core::knobpolicy
