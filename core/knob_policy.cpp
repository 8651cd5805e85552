// The knob domain and the simple knob-space baselines: uniform sampling, first-improvement
// hill climbing with restarts, simulated annealing (docs/SEARCH.md, "Knob-space policies").

#include "core/knob_policy.h"

#include "core/knob_policy_base.h"
#include "core/selection_policy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hone::core {

KnobDomain::KnobDomain(const std::vector<std::pair<std::string, std::string>>& sources,
    const std::function<const KnobSpace*(const std::string&)>& spaceOf)
{
    size_t total = 0;
    for (const auto& [hash, flags] : sources) {
        Source s;
        s.hash = hash;
        s.flags = flags;
        if (const KnobSpace* space = spaceOf(hash))
            s.knobs = space->knobs;
        std::vector<size_t> strides;
        s.count = 1;
        for (const KnobDecl& k : s.knobs) {
            strides.push_back(s.count);
            s.count *= std::max<size_t>(1, k.values.size());
            if (s.count > 100'000)
                throw KnobError("the knob space of " + hash.substr(0, 12) + " has more than 100000 assignments; "
                    "a knob-space policy enumerates it (use uct or evolutionary)");
        }
        s.offset = total;
        total += s.count;
        m_sources.push_back(std::move(s));
        m_strides.push_back(std::move(strides));
    }
    m_admissible.assign(total, 0);
    for (size_t si = 0; si < m_sources.size(); ++si) {
        const Source& s = m_sources[si];
        const KnobSpace* space = spaceOf(s.hash);
        for (size_t p = s.offset; p < s.offset + s.count; ++p) {
            bool ok = !space || space->admits(knobs(p));
            m_admissible[p] = ok ? 1 : 0;
            if (ok)
                m_points.push_back(p);
        }
    }
}

size_t KnobDomain::sourceOf(size_t p) const
{
    for (size_t i = m_sources.size(); i-- > 0;)
        if (p >= m_sources[i].offset)
            return i;
    return 0;
}

int KnobDomain::value(size_t p, size_t k) const
{
    size_t s = sourceOf(p);
    const Source& src = m_sources[s];
    return static_cast<int>(((p - src.offset) / m_strides[s][k]) % src.knobs[k].values.size());
}

size_t KnobDomain::with(size_t p, size_t k, int v) const
{
    size_t s = sourceOf(p);
    int old = value(p, k);
    return p + (static_cast<size_t>(v) - static_cast<size_t>(old)) * m_strides[s][k]; // wraps back for v < old
}

KnobValues KnobDomain::knobs(size_t p) const
{
    const Source& src = m_sources[sourceOf(p)];
    KnobValues v;
    for (size_t k = 0; k < src.knobs.size(); ++k)
        v[src.knobs[k].name] = src.knobs[k].values[static_cast<size_t>(value(p, k))];
    return v;
}

std::optional<size_t> KnobDomain::pointOf(
    const std::string& hash, const KnobValues& knobs, const std::string& flags) const
{
    for (size_t s = 0; s < m_sources.size(); ++s) {
        const Source& src = m_sources[s];
        if (src.hash != hash || src.flags != flags)
            continue;
        if (knobs.size() != src.knobs.size())
            return std::nullopt;
        size_t p = src.offset;
        for (size_t k = 0; k < src.knobs.size(); ++k) {
            auto it = knobs.find(src.knobs[k].name);
            if (it == knobs.end())
                return std::nullopt;
            const auto& vals = src.knobs[k].values;
            auto v = std::find(vals.begin(), vals.end(), it->second);
            if (v == vals.end())
                return std::nullopt;
            p += static_cast<size_t>(v - vals.begin()) * m_strides[s][k];
        }
        return p;
    }
    return std::nullopt;
}

std::vector<size_t> KnobDomain::neighbours(size_t p) const
{
    std::vector<size_t> out;
    const Source& src = m_sources[sourceOf(p)];
    for (size_t k = 0; k < src.knobs.size(); ++k) {
        int cur = value(p, k);
        for (int v = 0; v < static_cast<int>(src.knobs[k].values.size()); ++v) {
            if (v == cur)
                continue;
            size_t q = with(p, k, v);
            if (admissible(q))
                out.push_back(q);
        }
    }
    return out;
}

namespace knobpolicy {

double fixedDraw(uint64_t seed, uint64_t key)
{
    // splitmix64 of the pair: cheap, portable, well mixed.
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + key * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
}

Base::Base(std::shared_ptr<const KnobDomain> domain, uint64_t seed)
    : m_domain(std::move(domain))
    , m_seed(seed)
    , m_nodeAt(m_domain->size(), -1)
    , m_seedOf(m_domain->sources().size(), -1)
{
}

void Base::sync(const SearchTree& tree)
{
    for (size_t id = m_pointOfNode.size(); id < tree.size(); ++id) {
        const Node& n = tree.node(static_cast<NodeId>(id));
        std::optional<size_t> p;
        if (id != 0 && !n.sourceHash.empty())
            p = m_domain->pointOf(n.sourceHash, n.knobs, n.flags);
        m_pointOfNode.push_back(p ? static_cast<long long>(*p) : -1);
        if (!p)
            continue;
        if (m_nodeAt[*p] < 0)
            m_nodeAt[*p] = n.id;
        size_t s = m_domain->sourceOf(*p);
        if (n.parent == 0 && (n.origin == "seed" || n.origin == "warm") && m_seedOf[s] < 0)
            m_seedOf[s] = n.id;
    }
}

std::optional<size_t> Base::pointOfNode(NodeId id) const
{
    long long p = m_pointOfNode.at(static_cast<size_t>(id));
    return p < 0 ? std::nullopt : std::optional<size_t>(static_cast<size_t>(p));
}

std::optional<double> Base::speedOf(const SearchTree& tree, size_t p) const
{
    NodeId id = m_nodeAt[p];
    if (id < 0 || tree.node(id).state != NodeState::Ok)
        return std::nullopt;
    return tree.node(id).speedup;
}

bool Base::failed(const SearchTree& tree, size_t p) const
{
    NodeId id = m_nodeAt[p];
    return id >= 0 && tree.node(id).state == NodeState::Failed;
}

std::optional<NodeId> Base::bestSeed(const SearchTree& tree) const
{
    std::optional<NodeId> best;
    for (NodeId id : m_seedOf)
        if (id >= 0 && tree.node(id).state == NodeState::Ok
            && (!best || tree.node(id).speedup > tree.node(*best).speedup))
            best = id;
    return best;
}

std::optional<size_t> Base::freshPoint()
{
    if (m_perm.empty() && !m_domain->admissiblePoints().empty()) {
        m_perm = m_domain->admissiblePoints();
        std::mt19937_64 rng(m_seed * 0x9E3779B97F4A7C15ull + 0x756e69666f726dull);
        for (size_t i = m_perm.size(); i > 1; --i) // Fisher-Yates with portable draws
            std::swap(m_perm[i - 1], m_perm[below(rng, i)]);
    }
    while (m_cursor < m_perm.size() && m_nodeAt[m_perm[m_cursor]] >= 0)
        ++m_cursor;
    if (m_cursor >= m_perm.size())
        return std::nullopt;
    return m_perm[m_cursor];
}

std::vector<size_t> Base::freshPoints(size_t k)
{
    std::vector<size_t> out;
    if (!freshPoint())
        return out;
    for (size_t i = m_cursor; i < m_perm.size() && out.size() < k; ++i)
        if (m_nodeAt[m_perm[i]] < 0)
            out.push_back(m_perm[i]);
    return out;
}

std::vector<size_t> Base::unseenNeighbours(size_t p) const
{
    std::vector<size_t> out;
    for (size_t q : m_domain->neighbours(p))
        if (m_nodeAt[q] < 0)
            out.push_back(q);
    return out;
}

KnobMove Base::move(NodeId parent, size_t p, const std::string& origin, const std::string& op) const
{
    const auto& src = m_domain->sources()[m_domain->sourceOf(p)];
    return {parent, src.hash, m_domain->knobs(p), src.flags, origin, op};
}

namespace {

/// Uniform random sampling without replacement over the admissible points.
class Uniform : public Base {
public:
    using Base::Base;
    std::string name() const override { return "uniform"; }
    std::optional<KnobMove> next(const SearchTree& tree, std::mt19937_64&) override
    {
        sync(tree);
        auto p = freshPoint();
        if (!p)
            return std::nullopt;
        return fresh(*p);
    }
};

/// The last node this policy proposed (highest id inside the domain, below the root's
/// children), or nullopt before the first proposal.
std::optional<NodeId> lastMove(const SearchTree& tree, const std::function<bool(NodeId)>& inDomain)
{
    for (NodeId id = static_cast<NodeId>(tree.size()) - 1; id > 0; --id)
        if (tree.node(id).parent != 0 && inDomain(id))
            return id;
    return std::nullopt;
}

/// First-improvement hill climbing over one-knob neighbours with random restarts (Base::climb),
/// unseen neighbours evaluated in a random order.
class HillClimb : public Base {
public:
    using Base::Base;
    std::string name() const override { return "hillclimb"; }
    std::optional<KnobMove> next(const SearchTree& tree, std::mt19937_64& rng) override
    {
        sync(tree);
        return climb(tree, [&](size_t, const Node&, const std::vector<size_t>& unseen) {
            return unseen[below(rng, unseen.size())];
        });
    }
};

/// Simulated annealing as Kernel Tuner's `simulated_annealing` strategy runs it: a random
/// one-knob neighbour, accepted with probability exp(((t_old - t_new) / t_old) / T) when slower
/// (t: time, 1 / speedup), always when faster, never when it failed; T = t0 * alpha^k after k
/// evaluations. Known neighbours are stepped through without an evaluation (Kernel Tuner's
/// cache); a fresh uniform point restarts the walk when it is stuck.
class Anneal : public Base {
public:
    Anneal(std::shared_ptr<const KnobDomain> d, uint64_t seed, AnnealParams p)
        : Base(std::move(d), seed)
        , m_p(p)
    {
    }
    std::string name() const override { return "anneal"; }
    std::optional<KnobMove> next(const SearchTree& tree, std::mt19937_64& rng) override
    {
        sync(tree);
        auto inDomain = [&](NodeId id) { return pointOfNode(id).has_value(); };
        std::optional<NodeId> cur;
        if (auto last = lastMove(tree, inDomain)) {
            const Node& n = tree.node(*last);
            if (n.origin == "sample")
                cur = *last;
            else if (n.state == NodeState::Pending)
                cur = n.parent;
            else
                cur = accept(tree.node(n.parent), n, temperature(*last - 1)) > fixedDraw(m_seed, static_cast<uint64_t>(*last))
                    ? *last
                    : n.parent;
        } else {
            cur = bestSeed(tree);
        }
        const double T = temperature(static_cast<NodeId>(tree.size()) - 1);
        for (int step = 0; step < 100 && cur && pointOfNode(*cur); ++step) {
            const Node& c = tree.node(*cur);
            if (c.state == NodeState::Failed)
                break;
            auto nbrs = m_domain->neighbours(*pointOfNode(*cur));
            if (nbrs.empty() || unseenNeighbours(*pointOfNode(*cur)).empty())
                break;
            size_t q = nbrs[below(rng, nbrs.size())];
            if (nodeAt(q) < 0)
                return move(*cur, q, "neighbour", "inherit");
            const Node& known = tree.node(nodeAt(q));
            if (known.state != NodeState::Pending && accept(c, known, T) > unit(rng))
                cur = known.id;
        }
        auto q = freshPoint();
        if (!q)
            return std::nullopt;
        return fresh(*q);
    }

private:
    double temperature(NodeId evaluations) const
    {
        return std::max(m_p.tMin, m_p.t0 * std::pow(m_p.alpha, static_cast<double>(std::max<NodeId>(0, evaluations))));
    }
    static double accept(const Node& from, const Node& to, double T)
    {
        if (from.state != NodeState::Ok)
            return 1.0;
        if (to.state != NodeState::Ok)
            return 0.0;
        if (to.speedup >= from.speedup)
            return 1.0;
        // Kernel Tuner: exp(((old_cost - new_cost) / old_cost) / T) with cost = time.
        return std::exp((1.0 - from.speedup / to.speedup) / T);
    }
    AnnealParams m_p;
};

} // namespace

std::optional<KnobMove> Base::climb(const SearchTree& tree,
    const std::function<size_t(size_t, const Node&, const std::vector<size_t>&)>& pick,
    const std::function<std::optional<KnobMove>()>& restart)
{
    auto inDomain = [&](NodeId id) { return pointOfNode(id).has_value(); };
    std::optional<NodeId> cur;
    if (auto last = lastMove(tree, inDomain)) {
        const Node& n = tree.node(*last);
        const Node& parent = tree.node(n.parent);
        bool better = n.state == NodeState::Ok && parent.state == NodeState::Ok && n.speedup > parent.speedup;
        const bool restarted = n.origin == "sample" || (n.origin == "model" && n.op == "restart");
        cur = restarted || better ? *last : n.parent;
    } else {
        cur = bestSeed(tree);
    }
    while (cur && pointOfNode(*cur)) {
        const Node& c = tree.node(*cur);
        if (c.state == NodeState::Failed)
            break;
        size_t p = *pointOfNode(*cur);
        std::optional<NodeId> step;
        if (c.state == NodeState::Ok)
            for (size_t q : m_domain->neighbours(p)) {
                auto s = speedOf(tree, q);
                if (s && *s > c.speedup && (!step || nodeAt(q) < *step))
                    step = nodeAt(q);
            }
        if (step) {
            cur = step;
            continue;
        }
        auto unseen = unseenNeighbours(p);
        if (unseen.empty())
            break; // a local optimum: restart
        return move(*cur, pick(p, c, unseen), "neighbour", "inherit");
    }
    if (restart)
        return restart();
    auto q = freshPoint();
    if (!q)
        return std::nullopt;
    return fresh(*q);
}

} // namespace knobpolicy

const std::vector<std::string>& knobPolicyNames()
{
    static const std::vector<std::string> names {"uniform", "hillclimb", "anneal", "genetic", "tpe", "guided", "hybrid"};
    return names;
}

std::string defaultPolicy(const std::string& synth)
{
    return synth == "knob" ? "hybrid" : "uct";
}

bool isKnobPolicy(const std::string& name)
{
    const auto& n = knobPolicyNames();
    return std::find(n.begin(), n.end(), name) != n.end();
}

const std::vector<std::string>& allPolicyNames()
{
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v = selectionPolicyNames();
        v.insert(v.end(), knobPolicyNames().begin(), knobPolicyNames().end());
        return v;
    }();
    return names;
}

std::unique_ptr<KnobPolicy> makeKnobPolicy(
    const std::string& name, std::shared_ptr<const KnobDomain> domain, uint64_t sessionSeed, const KnobPolicyParams& params)
{
    using namespace knobpolicy;
    if (name == "uniform")
        return std::make_unique<Uniform>(std::move(domain), sessionSeed);
    if (name == "hillclimb")
        return std::make_unique<HillClimb>(std::move(domain), sessionSeed);
    if (name == "anneal")
        return std::make_unique<Anneal>(std::move(domain), sessionSeed, params.anneal);
    if (name == "genetic")
        return makeGenetic(std::move(domain), sessionSeed, params.genetic);
    if (name == "tpe")
        return makeTpe(std::move(domain), sessionSeed, params.tpe);
    if (name == "guided")
        return makeGuided(std::move(domain), sessionSeed, params.guided);
    if (name == "hybrid")
        return makeHybrid(std::move(domain), sessionSeed, params.hybrid);
    throw std::invalid_argument("unknown knob-space policy '" + name + "'");
}

std::shared_ptr<const KnobDomain> domainOfSeeds(
    const SearchTree& tree, const std::function<const KnobSpace*(const std::string&)>& spaceOf)
{
    std::vector<std::pair<std::string, std::string>> sources;
    for (NodeId c : tree.node(0).children) {
        const Node& n = tree.node(c);
        if ((n.origin != "seed" && n.origin != "warm") || n.sourceHash.empty())
            continue;
        std::pair<std::string, std::string> key {n.sourceHash, n.flags};
        if (std::find(sources.begin(), sources.end(), key) == sources.end())
            sources.push_back(key);
    }
    return std::make_shared<const KnobDomain>(sources, spaceOf);
}

} // namespace hone::core
