// The default knob-space policy: first-improvement hill climbing whose neighbour order, jumps
// and restarts come from a tree-structured Parzen estimator (docs/SEARCH.md, "hybrid").

#include "core/knob_policy_base.h"

#include <limits>

namespace hone::core::knobpolicy {
namespace {

/// After `startup` uniform points, every proposal builds the TPE model of the known results
/// (TpeModel, with the hybrid's own parameters) and draws one global candidate g from it. The
/// climb (Base::climb: the current point, free steps onto known faster neighbours) then offers
/// the unseen one-knob neighbour n of the current point that the model scores highest (ties in a
/// random order; with a skill, its log-odds for the neighbour's move joins the score). If score(g) > score(n) + localBonus, g is proposed instead and the climb goes
/// on from it (a jump); else n. At a local optimum the climb restarts from g. So on spaces whose
/// good region the model has found, the policy climbs; where the model sees something better than
/// every neighbour, it jumps there.
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
        const int startup = m_p.skill && !m_p.skill->empty() ? m_p.skillStartup : m_p.startup;
        if (static_cast<int>(obs.size()) < startup) {
            auto p = freshPoint();
            return p ? std::optional<KnobMove>(fresh(*p)) : std::nullopt;
        }
        TpeModel model(*m_domain, std::move(obs), m_p.tpe);
        const auto global = model.propose(rng, [&](size_t p) { return nodeAt(p) < 0; });
        auto jumpTo = [&](size_t q) { return move(seedOf(q), q, "model", "restart"); };
        bool jump = false;
        auto step = climb(
            tree,
            [&](size_t p, const Node& current, const std::vector<size_t>& unseen) {
                size_t start = below(rng, unseen.size());
                size_t best = unseen[start];
                double bestScore = -std::numeric_limits<double>::infinity();
                for (size_t i = 0; i < unseen.size(); ++i) {
                    size_t q = unseen[(start + i) % unseen.size()];
                    double sc = model.score(q) + skillTerm(p, q, current.bound);
                    if (sc > bestScore) {
                        best = q;
                        bestScore = sc;
                    }
                }
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
