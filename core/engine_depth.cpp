// The engine's side of memory operators and warm start (docs/SEARCH.md): which operator builds
// the next child, what the memory policy is told, and the warm-start nodes of a new session.

#include "core/engine.h"

#include "core/problem_spec.h"
#include "core/store.h"

#include <algorithm>

namespace hone::core {
namespace {

nlohmann::json knobsToJson(const KnobValues& v)
{
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, val] : v)
        j[k] = val;
    return j;
}

} // namespace

void Engine::addWarmStart(const ProblemSpec& spec, EngineObserver* observer)
{
    WarmStartQuery q;
    q.problemHash = spec.contentHash;
    q.problemName = spec.name;
    q.family = spec.family;
    q.target = m_options.target;
    q.count = m_options.warmStartCount;
    q.excludeSession = m_session;
    for (WarmStartCandidate& c : findWarmStart(m_store, q, m_tree, m_warmStartNotes)) {
        if (!m_sources.count(c.sourceHash))
            m_sources[c.sourceHash] = {c.sourceName, c.sourceText};
        if (!m_synth.space(c.sourceHash))
            m_synth.addSource(c.sourceHash, std::move(c.space));
        Node n;
        n.parent = 0;
        n.sourceHash = c.sourceHash;
        n.sourceName = m_sources.at(c.sourceHash).first;
        n.knobs = c.knobs;
        n.flags = c.flags;
        n.origin = "warm";
        n.op = "restart";
        NodeId id = m_tree.add(n);
        NodeRecord rec {id, 0, m_nextSeq++, n.sourceHash, knobsToJson(n.knobs), n.flags, n.origin, n.op, {},
            c.fromSession, c.fromNode};
        m_store.insertNode(m_session, rec);
        m_requeue.push_back(id);
        m_warmStart.push_back({id, c.fromSession, c.fromNode, c.problemName, c.sameProblem, c.speedup});
        if (observer)
            observer->nodeAdded(m_tree.node(id));
    }
}

std::optional<NodeId> Engine::selectForExpansion(std::mt19937_64& pick, bool& boosted)
{
    const std::deque<NodeId> queued = m_boosted;
    auto sel = selectNext(pick);
    const size_t popped = queued.size() - m_boosted.size();
    boosted = sel && std::find(queued.begin(), queued.begin() + static_cast<std::ptrdiff_t>(popped), *sel)
            != queued.begin() + static_cast<std::ptrdiff_t>(popped);
    return sel;
}

MemoryOperator Engine::chooseOperator(bool boosted) const
{
    MemoryOperator op = m_memory.choose(m_nextSeq);
    return boosted && op == MemoryOperator::Restart ? MemoryOperator::Inherit : op;
}

void Engine::registerProposal(NodeId id, int64_t seq)
{
    const Node& n = m_tree.node(id);
    if (!chosenByMemoryPolicy(n.origin))
        return;
    if (auto op = memoryOperatorFromName(n.op))
        m_memory.proposed(id, *op, seq);
}

std::optional<NodeId> Engine::proposeGrid(EngineObserver* observer)
{
    if (!m_grid)
        m_grid.emplace(m_tree, m_options.seed, [this](const std::string& hash) { return m_synth.space(hash); });
    std::optional<GridSweep::Item> it;
    do
        it = m_grid->next(m_tree);
    while (it && m_tree.node(it->parent).pruned); // a pruned seed's assignments are skipped
    if (!it)
        return std::nullopt;
    // Op restart: a fresh assignment of a seed's source, as a child of that seed.
    return addKnobChild(it->parent, it->sourceHash, it->knobs, it->flags, "grid", "restart", observer);
}

std::optional<NodeId> Engine::proposeKnobPolicy(EngineObserver* observer, std::string& stopReason)
{
    try {
        if (!m_knobPolicy) {
            KnobPolicyParams params;
            params.hybrid.skill = m_options.moveSkill; // the session's move skill (docs/SEARCH.md)
            m_knobPolicy = makeKnobPolicy(m_options.policy,
                domainOfSeeds(m_tree, [this](const std::string& hash) { return m_synth.space(hash); }), m_options.seed,
                params);
        }
    } catch (const KnobError& e) {
        if (stopReason.empty())
            stopReason = e.what();
        return std::nullopt;
    }
    // The policy's own generator per proposal, as a selection policy's: resume and replay agree.
    std::mt19937_64 pick(selectionSeed(m_options.seed, m_nextSeq));
    auto m = m_knobPolicy->next(m_tree, pick);
    if (!m)
        return std::nullopt;
    return addKnobChild(m->parent, m->sourceHash, m->knobs, m->flags, m->origin, m->op, observer);
}

NodeId Engine::addKnobChild(NodeId parent, const std::string& sourceHash, const KnobValues& knobs,
    const std::string& flags, const std::string& origin, const std::string& op, EngineObserver* observer)
{
    Node n;
    n.parent = parent;
    n.sourceHash = sourceHash;
    n.sourceName = m_sources.at(sourceHash).first;
    n.knobs = knobs;
    n.flags = flags;
    n.origin = origin;
    n.op = op;
    NodeId id = m_tree.add(n);
    NodeRecord rec {id, n.parent, m_nextSeq++, n.sourceHash, knobsToJson(n.knobs), n.flags, n.origin, n.op, {}};
    m_store.insertNode(m_session, rec);
    registerProposal(id, rec.seq); // nothing for grid nodes: no memory operator chose them
    if (observer)
        observer->nodeAdded(m_tree.node(id));
    return id;
}

} // namespace hone::core
