// The diagnosis-guided knob-space policy (docs/SEARCH.md, "Diagnosis-guided moves"): first-
// improvement hill climbing whose next one-knob move is chosen by Thompson sampling over what
// the knob acts on (`acts=` in its hone:knob line), given the current point's diagnosis.

#include "core/knob_policy_base.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace hone::core::knobpolicy {
namespace {

/// A standard normal draw (Box-Muller) from the portable uniform draws.
double normal(std::mt19937_64& rng)
{
    const double u1 = std::max(unit(rng), 1e-300);
    const double u2 = unit(rng);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

/// Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 by the u^(1/shape) boost.
double gammaDraw(std::mt19937_64& rng, double shape)
{
    if (shape < 1.0)
        return gammaDraw(rng, shape + 1.0) * std::pow(std::max(unit(rng), 1e-300), 1.0 / shape);
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
        double x = normal(rng), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        const double u = unit(rng);
        if (std::log(std::max(u, 1e-300)) < 0.5 * x * x + d - d * v + d * std::log(v))
            return d * v;
    }
}

double betaDraw(std::mt19937_64& rng, double a, double b)
{
    const double x = gammaDraw(rng, a), y = gammaDraw(rng, b);
    return x + y > 0 ? x / (x + y) : 0.5;
}

class Guided : public Base {
public:
    Guided(std::shared_ptr<const KnobDomain> d, uint64_t seed, GuidedParams p)
        : Base(std::move(d), seed)
        , m_p(p)
    {
    }
    std::string name() const override { return "guided"; }

    std::optional<KnobMove> next(const SearchTree& tree, std::mt19937_64& rng) override
    {
        sync(tree);
        const auto stats = learn(tree);
        // The hill climber's walk (Base::climb); only the order of unseen neighbours differs.
        return climb(tree, [&](size_t p, const Node& c, const std::vector<size_t>& unseen) {
            return choose(p, c.bound, unseen, stats, rng);
        });
    }

private:
    struct Count {
        double wins = 0;
        double losses = 0;
    };
    using Stats = std::map<std::pair<std::string, std::string>, Count>; // (bound, acts) -> count

    /// The knob in which neighbour `q` differs from `p`.
    size_t knobMoved(size_t p, size_t q) const
    {
        const auto& src = m_domain->sources()[m_domain->sourceOf(p)];
        for (size_t k = 0; k < src.knobs.size(); ++k)
            if (m_domain->value(p, k) != m_domain->value(q, k))
                return k;
        return 0;
    }

    /// Every evaluated one-knob move of this session so far: did it beat its parent by
    /// `minGain`, given the parent's diagnosis and what the moved knob acts on?
    Stats learn(const SearchTree& tree) const
    {
        Stats s;
        for (NodeId id = 1; id < static_cast<NodeId>(tree.size()); ++id) {
            const Node& n = tree.node(id);
            if (n.state == NodeState::Pending || n.parent <= 0)
                continue;
            const Node& parent = tree.node(n.parent);
            auto p = pointOfNode(parent.id), q = pointOfNode(id);
            if (parent.state != NodeState::Ok || !p || !q || m_domain->sourceOf(*p) != m_domain->sourceOf(*q))
                continue;
            const auto& src = m_domain->sources()[m_domain->sourceOf(*p)];
            int moved = -1, differ = 0;
            for (size_t k = 0; k < src.knobs.size(); ++k)
                if (m_domain->value(*p, k) != m_domain->value(*q, k)) {
                    moved = static_cast<int>(k);
                    ++differ;
                }
            if (differ != 1)
                continue;
            Count& c = s[{parent.bound, src.knobs[static_cast<size_t>(moved)].acts}];
            if (n.state == NodeState::Ok && n.speedup > parent.speedup * (1.0 + m_p.minGain))
                c.wins += 1;
            else
                c.losses += 1;
        }
        return s;
    }

    /// Thompson sampling: each unseen neighbour draws a success rate from the Beta posterior of
    /// its kind (what the moved knob acts on, given the current point's diagnosis; knobs without
    /// `acts` form one more kind, "") and the highest draw is evaluated. With nothing learnt every
    /// neighbour is equally likely, as in the hill climber; a kind that keeps helping under this
    /// diagnosis wins most draws, one that keeps failing few.
    size_t choose(size_t p, const std::string& bound, const std::vector<size_t>& unseen, const Stats& stats,
        std::mt19937_64& rng) const
    {
        const auto& src = m_domain->sources()[m_domain->sourceOf(p)];
        size_t pick = unseen.front();
        double best = -1;
        for (size_t q : unseen) {
            auto it = stats.find({bound, src.knobs[knobMoved(p, q)].acts});
            const Count c = it == stats.end() ? Count {} : it->second;
            const double theta = betaDraw(rng, m_p.priorWins + c.wins, m_p.priorLosses + c.losses);
            if (theta > best) {
                best = theta;
                pick = q;
            }
        }
        return pick;
    }

    GuidedParams m_p;
};

} // namespace

std::unique_ptr<KnobPolicy> makeGuided(std::shared_ptr<const KnobDomain> d, uint64_t seed, const GuidedParams& p)
{
    return std::make_unique<Guided>(std::move(d), seed, p);
}

} // namespace hone::core::knobpolicy
