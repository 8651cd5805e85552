#include "core/replay.h"

#include "core/engine.h"
#include "core/knob_synth.h"
#include "core/memory_policy.h"
#include "core/selection_policy.h"
#include "core/store.h"

#include <algorithm>
#include <random>
#include <stdexcept>

namespace hone::core {
namespace {

KnobValues knobsOf(const nlohmann::json& j)
{
    KnobValues v;
    if (j.is_object())
        for (auto it = j.begin(); it != j.end(); ++it)
            v[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    return v;
}

int distance(const KnobValues& a, const KnobValues& b)
{
    int d = 0;
    for (const auto& [k, v] : a) {
        auto it = b.find(k);
        if (it == b.end() || it->second != v)
            ++d;
    }
    for (const auto& [k, v] : b)
        if (!a.count(k))
            ++d;
    return d;
}

} // namespace

ReplayTable ReplayTable::fromStore(const Store& store, const std::vector<int64_t>& sessions)
{
    if (sessions.empty())
        throw std::runtime_error("replay needs at least one session; list them with 'hone show'");
    ReplayTable table;
    std::string problemHash;
    for (int64_t sid : sessions) {
        auto rec = store.session(sid);
        if (!rec)
            throw std::runtime_error("no session " + std::to_string(sid) + " in store " + store.path().string()
                + "; list sessions with 'hone show'");
        if (problemHash.empty())
            problemHash = rec->problemHash;
        else if (rec->problemHash != problemHash)
            throw std::runtime_error("session " + std::to_string(sid) + " is of problem " + rec->problemName
                + ", not of the first session's problem; replay sessions of one problem together");
        auto nodes = store.nodes(sid);
        std::sort(nodes.begin(), nodes.end(), [](const NodeRecord& a, const NodeRecord& b) { return a.seq < b.seq; });
        std::map<int64_t, const NodeRecord*> byId;
        for (const NodeRecord& n : nodes) {
            byId[n.id] = &n;
            if (n.id == 0 || n.sourceHash.empty() || table.m_spaces.count(n.sourceHash))
                continue;
            auto src = store.source(n.sourceHash);
            if (!src)
                throw std::runtime_error("session " + std::to_string(sid) + ": source " + n.sourceHash.substr(0, 12)
                    + " of node " + std::to_string(n.id) + " is missing from the store; the store is damaged");
            table.addSource(n.sourceHash, parseKnobSpace(src->text, src->name));
            table.m_names[n.sourceHash] = src->name;
        }
        if (table.m_seeds.empty()) {
            for (const NodeRecord& n : nodes)
                if (n.origin == "seed" || n.origin == "warm")
                    table.addSeed({n.sourceHash, table.m_names[n.sourceHash], knobsOf(n.knobs), n.flags, n.origin});
            // Read as resume reads it: sessions stored before a field existed keep their defaults.
            if (rec->config.is_object()) {
                RunOptions ro = RunOptions::fromJson(rec->config);
                table.m_recording = {ro.memoryOp, ro.restartAfter, ro.knobOperators, ro.uct, ro.evolution};
                // A sweep ran no selection policy: its stored parameters mean nothing, so its
                // replays use this version's.
                if (ro.synth == "grid") {
                    table.m_recording.uct = UctParams {};
                    table.m_recording.evolution = EvolutionParams {};
                }
            }
        }
        for (const EvaluationRecord& e : store.evaluations(sid)) {
            auto n = byId.find(e.nodeId);
            if (n == byId.end() || n->second->sourceHash.empty())
                continue;
            table.addResult(n->second->sourceHash, knobsOf(n->second->knobs), n->second->flags,
                {e.status == "ok", e.status == "ok" ? e.speedup : 0.0, e.failureKind});
        }
    }
    if (table.m_results.empty() || table.m_seeds.empty())
        throw std::runtime_error("the sessions given have no evaluated seeds; replay a session that ran");
    return table;
}

void ReplayTable::addSource(const std::string& sourceHash, KnobSpace space)
{
    m_spaces[sourceHash] = std::move(space);
}

void ReplayTable::addSeed(SeedEntry seed)
{
    m_seeds.push_back(std::move(seed));
}

void ReplayTable::addResult(
    const std::string& sourceHash, const KnobValues& knobs, const std::string& flags, Outcome outcome)
{
    m_results[SearchTree::candidateKey(sourceHash, knobs, flags)] = {sourceHash, knobs, flags, std::move(outcome)};
}

double ReplayTable::bestSpeedup() const
{
    double best = 0;
    for (const auto& [key, e] : m_results)
        if (e.outcome.ok)
            best = std::max(best, e.outcome.speedup);
    return best;
}

ReplayTable::Outcome ReplayTable::lookup(
    const std::string& sourceHash, const KnobValues& knobs, const std::string& flags, bool* exact) const
{
    auto it = m_results.find(SearchTree::candidateKey(sourceHash, knobs, flags));
    if (exact)
        *exact = it != m_results.end();
    if (it != m_results.end())
        return it->second.outcome;
    const Entry* nearest = nullptr;
    int nearestDistance = 0;
    auto slower = [](const Outcome& a, const Outcome& b) {
        double sa = a.ok ? a.speedup : -1.0, sb = b.ok ? b.speedup : -1.0;
        return sa < sb;
    };
    for (const auto& [key, e] : m_results) { // map order: ties beyond speed are deterministic
        if (e.sourceHash != sourceHash || e.flags != flags)
            continue;
        int d = distance(e.knobs, knobs);
        if (!nearest || d < nearestDistance || (d == nearestDistance && slower(e.outcome, nearest->outcome))) {
            nearest = &e;
            nearestDistance = d;
        }
    }
    if (nearest)
        return nearest->outcome;
    return {false, 0.0, "not_recorded"};
}

ReplayResult replaySearch(const ReplayTable& table, const ReplayOptions& options)
{
    const ReplayTable::Recording rec = options.memoryOp.empty()
        ? table.recording()
        : ReplayTable::Recording {options.memoryOp, options.restartAfter, true, table.recording().uct,
              table.recording().evolution};
    auto policy = makeSelectionPolicy(
        options.policy, options.uct.value_or(rec.uct), options.evolution.value_or(rec.evolution));
    MemoryPolicy memory(rec.memoryOp, rec.restartAfter); // throws std::invalid_argument for a bad name
    KnobSynthesizer synth;
    for (const auto& [hash, space] : table.spaces())
        synth.addSource(hash, space);

    ReplayResult r;
    r.tableBest = table.bestSpeedup();
    int64_t seq = 1; // the root is proposal 0, as in the engine
    auto evaluate = [&](NodeId id) {
        const Node& n = r.tree.node(id);
        bool exact = false;
        auto out = table.lookup(n.sourceHash, n.knobs, n.flags, &exact);
        r.tree.setResult(id, out.ok, out.speedup, out.failureKind);
        memory.applied(id, out.ok, out.speedup, r.tree.node(n.parent).speedup);
        r.operators.push_back(n.op);
        r.exactHits += exact ? 1 : 0;
        r.sequence.push_back(SearchTree::candidateKey(n.sourceHash, n.knobs, n.flags));
        double s = out.ok ? out.speedup : 0.0;
        r.speedups.push_back(s);
        r.best = std::max(r.best, s);
        const int k = static_cast<int>(r.speedups.size());
        if (!r.toBest && r.tableBest > 0 && s >= r.tableBest)
            r.toBest = k;
        if (!r.toWithin5 && r.tableBest > 0 && s >= 0.95 * r.tableBest)
            r.toWithin5 = k;
    };

    for (const auto& s : table.seeds()) {
        if (static_cast<int>(r.speedups.size()) >= options.budget)
            break;
        Node n;
        n.parent = 0;
        n.sourceHash = s.sourceHash;
        n.sourceName = s.sourceName;
        n.knobs = s.knobs;
        n.flags = s.flags;
        n.origin = s.origin;
        n.op = "restart";
        if (r.tree.contains(SearchTree::candidateKey(n.sourceHash, n.knobs, n.flags)))
            continue;
        evaluate(r.tree.add(n));
        ++seq;
    }
    while (static_cast<int>(r.speedups.size()) < options.budget) {
        std::optional<Proposal> p;
        for (int tries = 0; tries < 1000 && !p; ++tries) {
            std::mt19937_64 pick(selectionSeed(options.seed, seq));
            auto sel = policy->select(r.tree, pick);
            if (!sel)
                break;
            std::mt19937_64 rng(options.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(seq));
            // As the engine does (no boosts here).
            p = rec.knobOperators ? synth.propose(r.tree, *sel, rng, memory.choose(seq)) : synth.propose(r.tree, *sel, rng);
            if (!p)
                r.tree.markExhausted(*sel);
        }
        if (!p)
            break; // the space is exhausted
        Node n;
        n.parent = p->parent;
        n.sourceHash = p->sourceHash;
        n.knobs = p->knobs;
        n.flags = p->flags;
        n.origin = p->origin;
        n.op = memoryOperatorName(p->op);
        NodeId id = r.tree.add(n);
        memory.proposed(id, p->op, seq);
        evaluate(id);
        ++seq;
    }
    return r;
}

} // namespace hone::core
