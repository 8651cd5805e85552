#include "core/grid_sweep.h"

#include <algorithm>
#include <random>

namespace hone::core {

void GridSweep::build(const std::vector<Source>& sources, uint64_t seed)
{
    std::vector<std::vector<Item>> lists;
    for (size_t i = 0; i < sources.size(); ++i) {
        const Source& s = sources[i];
        std::vector<KnobValues> all = s.space ? s.space->admissibleAssignments() : std::vector<KnobValues> {{}};
        std::vector<Item> items;
        items.reserve(all.size());
        for (KnobValues& v : all)
            items.push_back({s.node, s.hash, std::move(v), s.flags});
        // Its own generator per source: adding a seed does not reorder the others' sweeps.
        std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 0x5eed + i);
        std::shuffle(items.begin(), items.end(), rng);
        lists.push_back(std::move(items));
    }
    // Round-robin over the sources, so a budget cut covers each one in proportion.
    for (size_t k = 0;; ++k) {
        bool any = false;
        for (auto& l : lists)
            if (k < l.size()) {
                m_items.push_back(std::move(l[k]));
                any = true;
            }
        if (!any)
            break;
    }
}

std::optional<GridSweep::Item> GridSweep::next(const SearchTree& tree)
{
    while (m_cursor < m_items.size()) {
        const Item& it = m_items[m_cursor++];
        if (!tree.contains(SearchTree::candidateKey(it.sourceHash, it.knobs, it.flags)))
            return it;
    }
    return std::nullopt;
}

} // namespace hone::core
