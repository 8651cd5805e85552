#pragma once

#include "core/knobs.h"
#include "core/search_tree.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hone::core {

/// `--synth grid`: every admissible knob assignment of every seed source, each evaluated once,
/// as a child of the seed that brought the source (docs/SEARCH.md, "Sweeps"). The order is a
/// shuffle fixed by the session's seed, interleaved across sources, so a sweep cut short by its
/// budget or a time limit is a uniform sample of the space rather than a corner of it. A sweep
/// measures the whole landscape once: the table that `hone replay` compares policies on.
class GridSweep {
public:
    struct Item {
        NodeId parent = 0;
        std::string sourceHash;
        KnobValues knobs;
        std::string flags;
    };

    /// One list per top-level node of `tree` whose origin is seed or warm (in node order), from
    /// the knob spaces given by `spaceOf` (nullptr: a source without knobs, one assignment).
    /// Throws KnobError when a space is too large to enumerate.
    template <typename SpaceOf>
    GridSweep(const SearchTree& tree, uint64_t seed, SpaceOf spaceOf)
    {
        std::vector<Source> sources;
        for (NodeId c : tree.node(0).children) {
            const Node& n = tree.node(c);
            if (n.origin != "seed" && n.origin != "warm")
                continue;
            bool seen = false;
            for (const Source& s : sources)
                seen = seen || (s.hash == n.sourceHash && s.flags == n.flags);
            if (!seen)
                sources.push_back({c, n.sourceHash, n.flags, spaceOf(n.sourceHash)});
        }
        build(sources, seed);
    }

    /// The next assignment the tree does not hold yet, or nullopt when the sweep is complete.
    std::optional<Item> next(const SearchTree& tree);

    size_t size() const { return m_items.size(); }

private:
    struct Source {
        NodeId node;
        std::string hash;
        std::string flags;
        const KnobSpace* space;
    };
    void build(const std::vector<Source>& sources, uint64_t seed);

    std::vector<Item> m_items;
    size_t m_cursor = 0;
};

} // namespace hone::core
