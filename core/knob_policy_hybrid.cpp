// The default knob-space policy: first-improvement hill climbing whose neighbour order, jumps
// and restarts come from a tree-structured Parzen estimator (docs/SEARCH.md, "hybrid").

#include "core/knob_policy_base.h"

#include <limits>

namespace hone::core::knobpolicy {
namespace {

/// For its first `startup` results (seeds included) the policy climbs as `hillclimb` does, from
/// the best seed (with a skill, the neighbour the skill likes best first; else a random one): an
/// iterated local search starts from the incumbent, as SMAC's does from the default. From then
/// on every proposal builds the TPE model of the known results (TpeModel, with the hybrid's own
/// parameters) and draws one global candidate g from it. The climb (Base::climb: the current
/// point, free steps onto known faster neighbours) then offers, `randomPick` of the time, an
/// unseen one-knob neighbour drawn uniformly (random interleaving, as SMAC interleaves random
/// configurations, so that a model that misleads cannot steer every step), and otherwise the
/// unseen neighbour n that the model scores highest (ties in a random order; with a skill, its
/// log-odds for the neighbour's move joins the score). If score(g) > score(n) + localBonus, g
/// is proposed instead and the climb goes on from it (a jump); else n. At a local optimum the
/// climb restarts from g. So on spaces whose good region the model has found, the policy
/// climbs; where the model sees something better than every neighbour, it jumps there.
class Hybrid : public Base {
public:
    Hybrid(std::shared_ptr<const KnobDomain> d, uint64_t seed, HybridParams p)
        : Base(std::move(d), seed)
        , m_p(p)
    {
    }
    std::string name() const override { return "hybrid"; }

    std::optional<KnobMove> next(const SearchTree& tree, std::mt19937_64& rng) override
    {
        sync(tree);
        auto obs = TpeModel::observe(
            tree, [&](NodeId id) { return pointOfNode(id); }, [&](size_t p) { return nodeAt(p); });
        // A pick without the model: the unseen neighbour the skill likes best, or a uniform one.
        auto modelFree = [&](size_t p, const Node& current, const std::vector<size_t>& unseen) {
            return bestOf(unseen, rng, [&](size_t q) { return skillTerm(p, q, current.bound); });
        };
        const int startup = m_p.skill && !m_p.skill->empty() ? m_p.skillStartup : m_p.startup;
        if (static_cast<int>(obs.size()) < startup) {
            if (!m_p.climbStart) {
                auto p = freshPoint();
                return p ? std::optional<KnobMove>(fresh(*p)) : std::nullopt;
            }
            return climb(tree, modelFree);
        }
        TpeModel model(*m_domain, std::move(obs), m_p.tpe);
        const auto global = model.propose(rng, [&](size_t p) { return nodeAt(p) < 0; });
        auto jumpTo = [&](size_t q) { return move(seedOf(q), q, "model", "restart"); };
        bool jump = false;
        auto step = climb(
            tree,
            [&](size_t p, const Node& current, const std::vector<size_t>& unseen) {
                if (m_p.randomPick > 0 && unit(rng) < m_p.randomPick)
                    return modelFree(p, current, unseen);
                double bestScore = 0;
                size_t best = bestOf(unseen, rng, [&](size_t q) { return model.score(q) + skillTerm(p, q, current.bound); },
                    &bestScore);
                jump = global && model.score(*global) > bestScore + m_p.localBonus;
                return best;
            },
            [&]() -> std::optional<KnobMove> {
                if (global)
                    return jumpTo(*global);
                auto p = freshPoint();
                return p ? std::optional<KnobMove>(fresh(*p)) : std::nullopt;
            });
        if (jump)
            return jumpTo(*global);
        return step;
    }

private:
    /// The point of `points` (not empty) with the highest `score`, ties broken by a random start.
    static size_t bestOf(const std::vector<size_t>& points, std::mt19937_64& rng,
        const std::function<double(size_t)>& score, double* bestScore = nullptr)
    {
        size_t start = below(rng, points.size());
        size_t best = points[start];
        double top = -std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < points.size(); ++i) {
            size_t q = points[(start + i) % points.size()];
            double sc = score(q);
            if (sc > top) {
                best = q;
                top = sc;
            }
        }
        if (bestScore)
            *bestScore = top;
        return best;
    }

    /// The skill's opinion of the move p -> q (one knob) from a point diagnosed `bound`.
    double skillTerm(size_t p, size_t q, const std::string& bound) const
    {
        if (!m_p.skill || m_p.skill->empty())
            return 0;
        const auto& src = m_domain->sources()[m_domain->sourceOf(p)];
        for (size_t k = 0; k < src.knobs.size(); ++k)
            if (m_domain->value(p, k) != m_domain->value(q, k))
                return m_p.skillWeight
                    * m_p.skill->logOdds(bound, src.knobs[k].name, src.knobs[k].acts,
                        m_domain->value(q, k) > m_domain->value(p, k) ? 1 : -1);
        return 0;
    }

    HybridParams m_p;
};

} // namespace

std::unique_ptr<KnobPolicy> makeHybrid(std::shared_ptr<const KnobDomain> d, uint64_t seed, const HybridParams& p)
{
    return std::make_unique<Hybrid>(std::move(d), seed, p);
}

} // namespace hone::core::knobpolicy
