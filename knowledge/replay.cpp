#include "knowledge/replay.h"

#include "core/sha256.h"

#include <algorithm>
#include <limits>
#include <random>

namespace hone::knowledge {

NearestReplayTable::NearestReplayTable(const SessionDump& s)
{
    std::vector<const SessionDump::Node*> seeds;
    for (const auto& n : s.nodes)
        if (n.origin == "seed")
            seeds.push_back(&n);
    std::stable_sort(
        seeds.begin(), seeds.end(), [](const auto* a, const auto* b) { return a->seq < b->seq; });
    for (const auto* n : seeds) {
        Seed seed;
        seed.source = n->source;
        seed.knobs = n->knobs;
        if (const auto* src = s.source(n->source)) {
            seed.hash = src->hash.empty() ? core::sha256Hex(src->text) : src->hash;
            try {
                seed.space = core::parseKnobSpace(src->text, src->name);
            } catch (const core::KnobError&) {
                // A source whose annotations no longer parse replays as a fixed candidate.
            }
        } else {
            seed.hash = core::sha256Hex(n->source);
        }
        m_seeds.push_back(std::move(seed));
    }
    for (const auto& e : s.evaluations) {
        const SessionDump::Node* n = s.node(e.node);
        if (!n || n->origin == "root")
            continue;
        m_rows.push_back({ n->source, n->knobs, e.ok, e.ok ? e.speedup : 0.0 });
        if (e.ok)
            m_best = std::max(m_best, e.speedup);
    }
}

bool NearestReplayTable::recorded(const std::string& source, const core::KnobValues& knobs) const
{
    return std::any_of(
        m_rows.begin(), m_rows.end(), [&](const Row& r) { return r.source == source && r.knobs == knobs; });
}

std::pair<bool, double> NearestReplayTable::result(const std::string& source, const core::KnobValues& knobs) const
{
    const Row* nearest = nullptr;
    size_t nearestDistance = std::numeric_limits<size_t>::max();
    for (const Row& r : m_rows) {
        if (r.source != source)
            continue;
        size_t d = 0;
        for (const auto& [name, value] : knobs) {
            auto it = r.knobs.find(name);
            if (it == r.knobs.end() || it->second != value)
                ++d;
        }
        if (d == 0)
            return { r.ok, r.speedup };
        if (d < nearestDistance || (d == nearestDistance && r.speedup < nearest->speedup)) {
            nearest = &r;
            nearestDistance = d;
        }
    }
    if (!nearest)
        return { false, 0.0 };
    return { nearest->ok, nearest->speedup };
}

ReplayRun replaySearch(const NearestReplayTable& table, const std::map<std::string, core::KnobPrior>& priors,
    uint64_t seed, int budget, double fraction, const core::UctParams& uct)
{
    core::SearchTree tree;
    core::KnobSynthesizer synth;
    std::map<std::string, std::string> nameOf; // hash -> source name
    for (const auto& s : table.seeds()) {
        synth.addSource(s.hash, s.space);
        nameOf[s.hash] = s.source;
        if (auto p = priors.find(s.source); p != priors.end())
            synth.setPrior(s.hash, p->second);
    }
    ReplayRun run;
    run.evaluationsToTarget = budget + 1;
    const double target = fraction * table.bestSpeedup();
    int evaluations = 0;
    auto evaluate = [&](core::NodeId id) {
        const core::Node& n = tree.node(id);
        auto [ok, speedup] = table.result(nameOf[n.sourceHash], n.knobs);
        if (table.recorded(nameOf[n.sourceHash], n.knobs))
            ++run.recordedHits;
        tree.setResult(id, ok, speedup, ok ? "" : "replayed failure");
        ++evaluations;
        if (ok)
            run.best = std::max(run.best, speedup);
        if (!run.reached && ok && speedup >= target) {
            run.reached = true;
            run.evaluationsToTarget = evaluations;
        }
    };
    // As the engine does: the root is proposal 0, the seeds (baseline first) come next, and
    // each later proposal draws from a generator seeded by (seed, proposal index).
    uint64_t seq = 1;
    for (const auto& s : table.seeds()) {
        if (evaluations >= budget)
            break;
        core::Node n;
        n.parent = 0;
        n.sourceHash = s.hash;
        n.sourceName = s.source;
        n.knobs = s.knobs;
        n.flags = s.space.flags;
        n.origin = "seed";
        n.op = "restart";
        core::NodeId id = tree.add(n);
        ++seq;
        evaluate(id);
    }
    while (evaluations < budget) {
        std::optional<core::Proposal> p;
        for (int tries = 0; tries < 1000 && !p; ++tries) {
            auto sel = tree.select(uct);
            if (!sel)
                break;
            std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + seq);
            p = synth.propose(tree, *sel, rng);
            if (!p)
                tree.markExhausted(*sel);
        }
        if (!p)
            break; // the space is exhausted
        core::Node n;
        n.parent = p->parent;
        n.sourceHash = p->sourceHash;
        n.sourceName = nameOf[p->sourceHash];
        n.knobs = p->knobs;
        n.flags = p->flags;
        n.origin = p->origin;
        core::NodeId id = tree.add(n);
        ++seq;
        evaluate(id);
    }
    return run;
}

double median(std::vector<int> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

ReplayStudy replayStudy(const NearestReplayTable& table, const std::map<std::string, core::KnobPrior>& priors,
    const std::vector<uint64_t>& seeds, int budget, double fraction)
{
    ReplayStudy st;
    for (uint64_t s : seeds) {
        ReplayRun a = replaySearch(table, {}, s, budget, fraction);
        ReplayRun b = replaySearch(table, priors, s, budget, fraction);
        st.without.push_back(a.evaluationsToTarget);
        st.with.push_back(b.evaluationsToTarget);
        st.reachedWithout += a.reached;
        st.reachedWith += b.reached;
    }
    st.medianWithout = median(st.without);
    st.medianWith = median(st.with);
    return st;
}

} // namespace hone::knowledge
