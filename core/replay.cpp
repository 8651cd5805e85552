#include "core/replay.h"

#include "core/engine.h"
#include "core/knob_synth.h"
#include "core/memory_policy.h"
#include "core/selection_policy.h"
#include "core/store.h"

#include <algorithm>
#include <cmath>
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
            // A cache hit copies an earlier timing: it adds a candidate, never a second timing.
            if (e.fromCache
                && table.m_results.count(SearchTree::candidateKey(
                    n->second->sourceHash, knobsOf(n->second->knobs), n->second->flags)))
                continue;
            table.addResult(n->second->sourceHash, knobsOf(n->second->knobs), n->second->flags,
                {e.status == "ok", e.status == "ok" ? e.speedup : 0.0, e.failureKind, e.bound});
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

int ReplayTable::adoptActs(const std::map<std::string, KnobSpace>& byFileName)
{
    int adopted = 0;
    for (auto& [hash, space] : m_spaces) {
        auto name = m_names.find(hash);
        auto current = name == m_names.end() ? byFileName.end() : byFileName.find(name->second);
        if (current == byFileName.end())
            continue;
        for (KnobDecl& k : space.knobs) {
            const KnobDecl* now = current->second.find(k.name);
            if (now && now->values == k.values && !now->acts.empty() && k.acts != now->acts) {
                k.acts = now->acts;
                ++adopted;
            }
        }
    }
    m_domain.reset();
    return adopted;
}

std::pair<int, int> ReplayTable::actsCoverage() const
{
    int knobs = 0, withActs = 0;
    for (const auto& [hash, space] : m_spaces)
        for (const KnobDecl& k : space.knobs) {
            ++knobs;
            withActs += k.acts.empty() ? 0 : 1;
        }
    return {knobs, withActs};
}

void ReplayTable::addSeed(SeedEntry seed)
{
    m_seeds.push_back(std::move(seed));
}

void ReplayTable::addResult(
    const std::string& sourceHash, const KnobValues& knobs, const std::string& flags, Outcome outcome)
{
    Entry& e = m_results[SearchTree::candidateKey(sourceHash, knobs, flags)];
    e.sourceHash = sourceHash;
    e.knobs = knobs;
    e.flags = flags;
    e.timings.push_back(std::move(outcome));
    e.typical = typicalOf(e.timings);
}

ReplayTable::Outcome ReplayTable::typicalOf(const std::vector<Outcome>& timings)
{
    std::vector<double> ok;
    for (const Outcome& o : timings)
        if (o.ok)
            ok.push_back(o.speedup);
    if (ok.empty())
        return timings.front();
    std::sort(ok.begin(), ok.end());
    size_t n = ok.size();
    std::string bound; // the first successful timing's diagnosis
    for (const Outcome& o : timings)
        if (o.ok) {
            bound = o.bound;
            break;
        }
    return {true, n % 2 ? ok[n / 2] : 0.5 * (ok[n / 2 - 1] + ok[n / 2]), "", bound};
}

std::pair<size_t, size_t> ReplayTable::timingsPerCandidate() const
{
    size_t lo = 0, hi = 0;
    for (const auto& [key, e] : m_results) {
        lo = lo == 0 ? e.timings.size() : std::min(lo, e.timings.size());
        hi = std::max(hi, e.timings.size());
    }
    return {lo, hi};
}

double ReplayTable::bestSpeedup() const
{
    double best = 0;
    for (const auto& [key, e] : m_results)
        if (e.typical.ok)
            best = std::max(best, e.typical.speedup);
    return best;
}

std::shared_ptr<const KnobDomain> ReplayTable::domain() const
{
    if (!m_domain) {
        std::vector<std::pair<std::string, std::string>> sources;
        for (const SeedEntry& s : m_seeds) {
            std::pair<std::string, std::string> key {s.sourceHash, s.flags};
            if (std::find(sources.begin(), sources.end(), key) == sources.end())
                sources.push_back(key);
        }
        m_domain = std::make_shared<const KnobDomain>(sources, [this](const std::string& hash) -> const KnobSpace* {
            auto it = m_spaces.find(hash);
            return it == m_spaces.end() ? nullptr : &it->second;
        });
    }
    return m_domain;
}

ReplayTable::Outcome ReplayTable::lookup(const std::string& sourceHash, const KnobValues& knobs,
    const std::string& flags, bool* exact, std::mt19937_64* noise, double* typical) const
{
    auto it = m_results.find(SearchTree::candidateKey(sourceHash, knobs, flags));
    if (exact)
        *exact = it != m_results.end();
    if (it != m_results.end()) {
        const Entry& e = it->second;
        if (typical)
            *typical = e.typical.ok ? e.typical.speedup : 0.0;
        if (noise && e.timings.size() > 1)
            return e.timings[(*noise)() % e.timings.size()];
        return e.typical;
    }
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
        if (!nearest || d < nearestDistance || (d == nearestDistance && slower(e.typical, nearest->typical))) {
            nearest = &e;
            nearestDistance = d;
        }
    }
    if (typical)
        *typical = nearest && nearest->typical.ok ? nearest->typical.speedup : 0.0;
    if (nearest)
        return nearest->typical;
    return {false, 0.0, "not_recorded", ""};
}

ReplayResult replaySearch(const ReplayTable& table, const ReplayOptions& options)
{
    const ReplayTable::Recording rec = options.memoryOp.empty()
        ? table.recording()
        : ReplayTable::Recording {options.memoryOp, options.restartAfter, true, table.recording().uct,
              table.recording().evolution};
    const bool knobPolicy = isKnobPolicy(options.policy);
    auto policy = makeSelectionPolicy(knobPolicy ? std::string("uct") : options.policy, options.uct.value_or(rec.uct),
        options.evolution.value_or(rec.evolution));
    std::unique_ptr<KnobPolicy> direct;
    if (knobPolicy)
        direct = makeKnobPolicy(options.policy, table.domain(), options.seed, options.knobPolicy);
    std::mt19937_64 noise(options.seed * 0xD6E8FEB86659FD93ull + 0x6e6f697365ull);
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
        double typical = 0;
        auto out = table.lookup(n.sourceHash, n.knobs, n.flags, &exact, &noise, &typical);
        r.tree.setResult(id, out.ok, out.speedup, out.failureKind);
        r.tree.node(id).bound = out.bound;
        memory.applied(id, out.ok, out.speedup, r.tree.node(n.parent).speedup);
        r.operators.push_back(n.op);
        r.exactHits += exact ? 1 : 0;
        r.sequence.push_back(SearchTree::candidateKey(n.sourceHash, n.knobs, n.flags));
        r.speedups.push_back(out.ok ? out.speedup : 0.0);
        r.best = std::max(r.best, typical);
        const int k = static_cast<int>(r.speedups.size());
        if (!r.toBest && r.tableBest > 0 && typical >= r.tableBest)
            r.toBest = k;
        if (!r.toWithin5 && r.tableBest > 0 && typical >= 0.95 * r.tableBest)
            r.toWithin5 = k;
    };
    auto done = [&] {
        return static_cast<int>(r.speedups.size()) >= options.budget || (options.stopAtBest && r.toBest)
            || (options.stopAtWithin5 && r.toWithin5);
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
    while (!done() && direct) {
        std::mt19937_64 pick(selectionSeed(options.seed, seq)); // as the engine draws it
        auto m = direct->next(r.tree, pick);
        if (!m)
            break; // the domain is exhausted
        Node n;
        n.parent = m->parent;
        n.sourceHash = m->sourceHash;
        n.knobs = m->knobs;
        n.flags = m->flags;
        n.origin = m->origin;
        n.op = m->op;
        evaluate(r.tree.add(n));
        ++seq;
    }
    while (!done() && !direct) {
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

namespace {

double medianOf(std::vector<double>& v)
{
    size_t n = v.size();
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
    double hi = v[n / 2];
    if (n % 2)
        return hi;
    double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2));
    return 0.5 * (lo + hi);
}

/// Nearest-rank percentile of sorted `v`.
double percentile(const std::vector<double>& v, double q)
{
    size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, rank > 0 ? rank - 1 : 0)];
}

} // namespace

ReplayStats replayStats(const std::vector<int>& evals, int budget, int resamples, uint64_t bootstrapSeed)
{
    ReplayStats st;
    st.runs = static_cast<int>(evals.size());
    if (evals.empty())
        return st;
    std::vector<double> v(evals.begin(), evals.end());
    std::sort(v.begin(), v.end());
    std::vector<double> tmp = v;
    st.median = medianOf(tmp);
    st.p75 = percentile(v, 0.75);
    st.p90 = percentile(v, 0.90);
    st.reached = static_cast<double>(std::count_if(evals.begin(), evals.end(), [&](int e) { return e <= budget; }))
        / static_cast<double>(evals.size());
    std::mt19937_64 rng(bootstrapSeed);
    std::vector<double> medians;
    medians.reserve(static_cast<size_t>(std::max(0, resamples)));
    for (int b = 0; b < resamples; ++b) {
        for (double& x : tmp)
            x = v[rng() % v.size()];
        medians.push_back(medianOf(tmp));
    }
    if (medians.empty()) {
        st.medianLow = st.medianHigh = st.median;
        return st;
    }
    std::sort(medians.begin(), medians.end());
    st.medianLow = percentile(medians, 0.025);
    st.medianHigh = percentile(medians, 0.975);
    return st;
}

} // namespace hone::core
