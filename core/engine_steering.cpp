// Steering (docs/SEARCH.md): commands posted from any thread, applied by the engine before its
// next proposal, each logged in the store with its time, author and outcome.

#include "core/engine.h"

#include "core/sha256.h"
#include "core/store.h"
#include "core/utf8.h"

#include <algorithm>

namespace hone::core {
namespace {

nlohmann::json knobJson(const KnobValues& v)
{
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, val] : v)
        j[k] = val;
    return j;
}

std::string langOfName(const std::string& name)
{
    if (name.ends_with(".cu"))
        return "cuda";
    if (name.ends_with(".hip"))
        return "hip";
    return "cpp";
}

} // namespace

std::string steeringKindName(SteeringCommand::Kind kind)
{
    switch (kind) {
    case SteeringCommand::Kind::Pause: return "pause";
    case SteeringCommand::Kind::Resume: return "resume";
    case SteeringCommand::Kind::Prune: return "prune";
    case SteeringCommand::Kind::Boost: return "boost";
    case SteeringCommand::Kind::Hint: return "hint";
    case SteeringCommand::Kind::ManualChild: return "manual_child";
    case SteeringCommand::Kind::Stop: return "stop";
    }
    return "?";
}

std::vector<std::string> Engine::subtreeHints(NodeId node) const
{
    std::vector<NodeId> chain;
    for (NodeId cur = node; cur >= 0 && static_cast<size_t>(cur) < m_tree.size(); cur = m_tree.node(cur).parent)
        chain.push_back(cur);
    std::vector<std::string> out;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) // the root's first
        if (auto h = m_hints.find(*it); h != m_hints.end())
            out.insert(out.end(), h->second.begin(), h->second.end());
    return out;
}

std::optional<NodeId> Engine::selectNext(std::mt19937_64& pick)
{
    while (!m_boosted.empty()) {
        NodeId b = m_boosted.front();
        m_boosted.pop_front();
        auto open = expandableNodes(m_tree);
        if (std::binary_search(open.begin(), open.end(), b))
            return b;
    }
    return m_policy->select(m_tree, pick);
}

std::string Engine::addManualChild(
    const SteeringCommand& c, EngineObserver* observer, std::deque<NodeId>& requeue, NodeId& child)
{
    const Node& parent = m_tree.node(c.node);
    SynthProposal p;
    p.parent = c.node;
    p.origin = "manual";
    p.op = "inherit";
    p.flags = c.flags.empty() ? parent.flags : c.flags;
    const KnobSpace* space = nullptr;
    KnobSpace parsed;
    std::string hash;
    if (!c.text.empty()) {
        const std::string name = c.sourceName.empty() ? std::string("manual.cpp") : c.sourceName;
        // It travels to the worker as JSON text.
        if (const size_t bad = firstInvalidUtf8(c.text); bad != std::string::npos)
            return "rejected: the source is not valid UTF-8 (at byte " + std::to_string(bad) + "); save it as UTF-8";
        try {
            parsed = parseKnobSpace(c.text, name);
        } catch (const KnobError& e) {
            return std::string("rejected: the source's knob annotations do not parse: ") + e.what();
        }
        space = &parsed;
        p.newSource = NewSource {name, langOfName(name), c.text};
    } else {
        if (c.node == 0)
            return "rejected: a manual child of the root needs a source";
        hash = parent.sourceHash;
        p.sourceHash = hash;
        space = m_synth.space(hash);
    }
    p.knobs = c.knobs;
    if (p.knobs.empty() && space && !space->empty()) {
        auto first = space->initial();
        if (!first)
            return "rejected: no knob assignment satisfies the source's hone:require lines";
        p.knobs = *first;
    }
    std::string why;
    if (space && !space->empty() && !space->admits(p.knobs, &why))
        return "rejected: knobs " + knobsToString(p.knobs) + " are not admissible: " + why;
    if (hash.empty() && p.newSource)
        hash = sha256Hex(p.newSource->text);
    if (m_tree.contains(SearchTree::candidateKey(hash, p.knobs, p.flags)))
        return "rejected: the tree already holds this candidate";
    child = addProposal(std::move(p), observer);
    requeue.push_front(child);
    return "applied";
}

void Engine::applySteering(EngineObserver* observer, std::deque<NodeId>& requeue, bool& paused, bool& exhausted,
    std::string& stopReason)
{
    using Kind = SteeringCommand::Kind;
    for (SteeringCommand& c : m_steering.takeAll()) {
        SteeringRecord rec;
        rec.command = steeringKindName(c.kind);
        rec.author = c.author;
        rec.nodeId = c.node;
        std::string outcome = "applied";
        const bool named = c.kind == Kind::Prune || c.kind == Kind::Boost || c.kind == Kind::Hint
            || c.kind == Kind::ManualChild;
        if (named && (c.node < 0 || static_cast<size_t>(c.node) >= m_tree.size())) {
            outcome = "rejected: node " + std::to_string(c.node) + " does not exist in session "
                + std::to_string(m_session) + " (it has nodes 0.." + std::to_string(m_tree.size() - 1) + ")";
        } else {
            switch (c.kind) {
            case Kind::Pause:
                paused = true;
                break;
            case Kind::Resume:
                paused = false;
                break;
            case Kind::Prune:
                if (c.node == 0)
                    outcome = "rejected: the root cannot be pruned; stop the session instead";
                else
                    m_tree.node(c.node).pruned = true; // results in flight are still applied and stored
                break;
            case Kind::Boost:
                m_boosted.push_back(c.node);
                break;
            case Kind::Hint:
                rec.payload["text"] = c.text;
                if (c.text.empty())
                    outcome = "rejected: an empty hint";
                else
                    m_hints[c.node].push_back(c.text);
                break;
            case Kind::ManualChild: {
                rec.payload = {{"parent", c.node}, {"knobs", knobJson(c.knobs)}, {"flags", c.flags},
                    {"source_name", c.sourceName}, {"has_source", !c.text.empty()}};
                NodeId child = -1;
                outcome = addManualChild(c, observer, requeue, child);
                if (child >= 0) {
                    rec.nodeId = child;
                    exhausted = false;
                }
                break;
            }
            case Kind::Stop:
                m_stopRequested = true;
                if (stopReason.empty())
                    stopReason = "stopped by steering command" + (c.author.empty() ? "" : " from " + c.author);
                break;
            }
        }
        rec.outcome = outcome;
        rec.id = m_store.insertSteering(m_session, rec);
        if (observer)
            observer->steeringApplied(rec);
    }
}

} // namespace hone::core
