// The engine's side of external synthesizers (RunOptions::synth other than "knob"): memory
// contexts, proposals with new sources, rejected replies, model-call records. Kept apart from
// engine.cpp so that the search loop itself stays one readable function.

#include "core/engine.h"

#include "core/problem_spec.h"
#include "core/prompt_builder.h"
#include "core/store.h"

#include <algorithm>
#include <set>

namespace hone::core {
namespace {

nlohmann::json knobJson(const KnobValues& v)
{
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, val] : v)
        j[k] = val;
    return j;
}

} // namespace

void Engine::beginExternal()
{
    SynthSession s;
    s.problem = m_spec.get();
    s.target = m_options.target;
    s.device = m_device;
    s.toolchain = m_toolchain;
    s.ceilings = m_ceilings;
    s.hints = m_options.hints;
    LlmTotals spent = m_store.llmTotals(m_session);
    s.spentUsd = spent.costUsd;
    s.spentTokens = spent.tokensIn + spent.tokensOut;
    m_external->begin(s);
    // On resume: the results and rejected replies the memory contexts refer to.
    for (const auto& e : m_store.evaluations(m_session)) {
        try {
            m_outcomes[e.nodeId] = protocol::EvalResult::fromJson(e.result);
        } catch (const protocol::ProtocolError&) {
        }
    }
    for (const auto& c : m_store.llmCalls(m_session))
        if (c.nodeId > 0 && c.status != "ok")
            m_replies[c.nodeId] = c.response;
}

void Engine::noteOutcome(NodeId node, const protocol::EvalResult& result)
{
    if (!builtinSynth(m_options.synth))
        m_outcomes[node] = result;
}

std::optional<NodeId> Engine::proposeExternal(EngineObserver* observer, std::string& stopReason)
{
    try {
        // Repairs first: a failed candidate goes back to its author while the failure is fresh.
        std::set<NodeId> tried;
        while (auto failed = m_external->repairCandidate(m_tree)) {
            if (!tried.insert(*failed).second)
                break;
            if (auto p = m_external->repair(synthRequest(*failed, MemoryOperator::Inherit)))
                return addProposal(std::move(*p), observer);
        }
        for (int tries = 0; tries < 1000; ++tries) {
            std::mt19937_64 pick(selectionSeed(m_options.seed, m_nextSeq));
            bool boosted = false;
            auto sel = selectForExpansion(pick, boosted);
            // A problem whose baseline is its PyTorch reference may have no seed kernel: the model
            // then writes one from the problem (a restart from the root), also when every such
            // attempt so far failed.
            const bool fromRoot = !sel && m_spec->baselineSeed() && m_spec->baselineSeed()->lang == "python"
                && m_tree.node(0).expandable;
            if (fromRoot)
                sel = 0;
            if (!sel)
                return std::nullopt;
            auto p = m_external->propose(synthRequest(*sel, fromRoot ? MemoryOperator::Restart : chooseOperator(boosted)));
            if (!p) {
                m_tree.markExhausted(*sel);
                continue;
            }
            return addProposal(std::move(*p), observer);
        }
    } catch (const SynthError& e) {
        for (LlmCallRecord c : e.calls()) {
            c.nodeId = -1;
            m_store.insertLlmCall(m_session, c);
        }
        if (stopReason.empty())
            stopReason = e.what();
        if (e.fatal())
            m_error = e.what();
    }
    return std::nullopt;
}

NodeId Engine::addProposal(SynthProposal p, EngineObserver* observer)
{
    Node n;
    n.parent = p.parent;
    n.origin = p.origin;
    n.op = p.op;
    n.knobs = p.knobs;
    n.flags = p.flags;
    if (p.newSource) {
        const NewSource& src = *p.newSource;
        n.sourceHash = m_store.putSource(src.lang, src.name, src.text);
        auto it = m_sources.emplace(n.sourceHash, std::make_pair(src.name, src.text)).first;
        n.sourceName = it->second.first;
        if (!m_synth.space(n.sourceHash)) {
            try {
                m_synth.addSource(n.sourceHash, parseKnobSpace(src.text, src.name));
            } catch (const KnobError&) {
                // The synthesizer checked the annotations; a source without a space is only
                // never knob-tuned.
            }
        }
    } else if (!p.sourceHash.empty()) {
        n.sourceHash = p.sourceHash;
        n.sourceName = m_sources.at(p.sourceHash).first;
    }
    NodeId id = m_tree.add(n);
    NodeRecord rec { id, n.parent, m_nextSeq++, n.sourceHash, knobJson(n.knobs), n.flags, n.origin, n.op,
        {} };
    m_store.insertNode(m_session, rec);
    registerProposal(id, rec.seq);
    if (p.rejectKind) {
        m_rejected[id] = { *p.rejectKind, p.rejectReason };
        if (!p.calls.empty())
            m_replies[id] = p.calls.back().response;
    }
    if (observer)
        observer->nodeAdded(m_tree.node(id));
    for (LlmCallRecord& c : p.calls) {
        c.nodeId = id;
        c.id = m_store.insertLlmCall(m_session, c);
        if (observer)
            observer->llmCallRecorded(m_tree.node(id), c);
    }
    return id;
}

std::optional<protocol::EvalResult> Engine::rejection(NodeId node) const
{
    protocol::FailureKind kind = protocol::FailureKind::LlmError;
    std::string reason;
    if (auto it = m_rejected.find(node); it != m_rejected.end()) {
        kind = it->second.first;
        reason = it->second.second;
    } else if (node > 0 && m_tree.node(node).sourceHash.empty()) {
        // Created, then the process died before its reply was judged (resume).
        kind = protocol::FailureKind::LlmError;
        reason = "the process stopped before this node's reply was recorded";
    } else {
        return std::nullopt;
    }
    return protocol::EvalResult::failed(
        "s" + std::to_string(m_session) + "-n" + std::to_string(node), kind, "synthesize", reason);
}

SynthRequest Engine::synthRequest(NodeId node, MemoryOperator op) const
{
    SynthRequest r;
    r.tree = &m_tree;
    r.node = node;
    r.memory = memoryContext(node, op);
    r.seq = m_nextSeq;
    r.cancel = &m_stopRequested;
    return r;
}

MemoryContext Engine::memoryContext(NodeId node, MemoryOperator op) const
{
    MemoryContext ctx;
    ctx.op = op;
    ctx.hints = subtreeHints(node);
    if (op == MemoryOperator::Restart)
        return ctx;
    ctx.entries.push_back(memoryEntry(node, "parent"));
    if (op == MemoryOperator::Inherit || op == MemoryOperator::Combine) {
        int shown = 0;
        for (NodeId a = m_tree.node(node).parent; a > 0 && shown < 3; a = m_tree.node(a).parent, ++shown)
            ctx.entries.push_back(memoryEntry(a, "ancestor"));
    }
    if (op == MemoryOperator::Compare || op == MemoryOperator::Combine) {
        // The node's earlier children, the siblings of the one to come: best first, then failures.
        std::vector<NodeId> kids;
        for (NodeId c : m_tree.node(node).children)
            if (m_outcomes.count(c))
                kids.push_back(c);
        auto rank = [&](NodeId c) {
            const auto& r = m_outcomes.at(c);
            return r.ok() ? r.speedup() : -1.0;
        };
        std::stable_sort(kids.begin(), kids.end(), [&](NodeId a, NodeId b) { return rank(a) > rank(b); });
        for (size_t i = 0; i < kids.size() && i < 3; ++i)
            ctx.entries.push_back(memoryEntry(kids[i], "sibling"));
    }
    return ctx;
}

MemoryEntry Engine::memoryEntry(NodeId id, const std::string& relation) const
{
    const Node& n = m_tree.node(id);
    MemoryEntry e;
    e.node = id;
    e.relation = relation;
    e.sourceName = n.sourceName;
    if (auto s = m_sources.find(n.sourceHash); s != m_sources.end())
        e.source = s->second.second;
    e.knobs = n.knobs;
    e.flags = n.flags;
    e.origin = n.origin;
    auto o = m_outcomes.find(id);
    if (o == m_outcomes.end()) {
        e.status = "pending";
    } else {
        const protocol::EvalResult& r = o->second;
        e.status = r.ok() ? "ok" : "failed";
        e.speedup = r.speedup();
        e.medianNs = r.medianNs();
        e.failureKind = r.ok() ? std::string() : protocol::failureKindName(r.failureKind());
        e.failureMessage = r.failure ? r.failure->message : std::string();
        e.feedback = renderFeedback(r);
        e.bound = r.bound();
        e.evidence = r.evidence();
        e.fracBandwidth = r.fracBandwidth();
        e.fracCompute = r.fracCompute();
    }
    if (auto r = m_replies.find(id); r != m_replies.end())
        e.reply = r->second;
    return e;
}

} // namespace hone::core
