#include "core/warm_start.h"

#include "core/store.h"

#include <map>
#include <set>

namespace hone::core {

std::vector<WarmStartCandidate> findWarmStart(
    const Store& store, const WarmStartQuery& query, const SearchTree& tree, std::vector<std::string>& notes)
{
    std::vector<WarmStartCandidate> out;
    if (query.count <= 0)
        return out;
    // Generous: rows the tree already holds, duplicates across the two groups and sources that
    // no longer parse are skipped below.
    const int limit = 4 * query.count + 64;
    auto rows = store.priorKernels(
        query.target, query.problemHash, query.problemName, query.family, query.excludeSession, limit);
    std::set<std::string> taken;
    for (const PriorKernelRecord& r : rows) {
        if (static_cast<int>(out.size()) >= query.count)
            break;
        KnobValues knobs;
        if (r.knobs.is_object())
            for (auto it = r.knobs.begin(); it != r.knobs.end(); ++it)
                knobs[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
        const std::string key = SearchTree::candidateKey(r.sourceHash, knobs, r.flags);
        if (tree.contains(key) || !taken.insert(key).second)
            continue;
        const std::string where = "session " + std::to_string(r.session) + " node " + std::to_string(r.node) + " ("
            + r.problemName + ")";
        auto src = store.source(r.sourceHash);
        if (!src) {
            notes.push_back("skipped " + where + ": its source is missing from the store");
            continue;
        }
        WarmStartCandidate c;
        try {
            c.space = parseKnobSpace(src->text, src->name);
        } catch (const KnobError& e) {
            notes.push_back("skipped " + where + ": the knobs of " + src->name + " do not parse: " + e.what());
            continue;
        }
        std::string why;
        if (!c.space.empty() && !c.space.admits(knobs, &why)) {
            notes.push_back("skipped " + where + ": knobs " + knobsToString(knobs) + " are not admissible: "
                + why);
            continue;
        }
        c.fromSession = r.session;
        c.fromNode = r.node;
        c.problemName = r.problemName;
        c.sameProblem = r.sameProblem;
        c.speedup = r.speedup;
        c.sourceHash = r.sourceHash;
        c.sourceName = src->name;
        c.sourceLang = src->lang;
        c.sourceText = src->text;
        c.knobs = std::move(knobs);
        c.flags = r.flags;
        out.push_back(std::move(c));
    }
    return out;
}

std::string describeWarmStart(const std::vector<WarmStartNode>& nodes, const std::string& family)
{
    // One group per source session, in the order the nodes were added.
    std::vector<int64_t> order;
    std::map<int64_t, std::pair<int, const WarmStartNode*>> bySession;
    for (const WarmStartNode& n : nodes) {
        auto [it, inserted] = bySession.emplace(n.fromSession, std::make_pair(0, &n));
        if (inserted)
            order.push_back(n.fromSession);
        ++it->second.first;
    }
    std::string out;
    for (int64_t s : order) {
        const auto& [count, first] = bySession.at(s);
        if (!out.empty())
            out += ", ";
        out += std::to_string(count) + " from session " + std::to_string(s) + " (" + first->problemName;
        if (!first->sameProblem)
            out += ", family " + family;
        out += ")";
    }
    return out;
}

} // namespace hone::core
