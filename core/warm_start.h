#pragma once

#include "core/knobs.h"
#include "core/search_tree.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hone::core {

class Store;

/// Where a new session looks for earlier kernels to start from (docs/SEARCH.md, "Warm start").
struct WarmStartQuery {
    std::string problemHash;
    std::string problemName;
    std::string family;
    std::string target;        // cpu | cuda | hip: only sessions on the same kind
    int count = 3;             // at most this many kernels
    int64_t excludeSession = -1;
};

/// A kernel of an earlier session to add to a new session's tree.
struct WarmStartCandidate {
    int64_t fromSession = 0;
    NodeId fromNode = 0;
    std::string problemName;   // of the session it comes from
    bool sameProblem = true;   // same content hash or name; else another problem of the family
    double speedup = 0;        // as recorded there
    std::string sourceHash;
    std::string sourceName;
    std::string sourceLang;
    std::string sourceText;
    KnobSpace space;
    KnobValues knobs;
    std::string flags;
};

/// A warm-start node of a session, for reports.
struct WarmStartNode {
    NodeId node = 0;
    int64_t fromSession = 0;
    NodeId fromNode = 0;
    std::string problemName;
    bool sameProblem = true;
    double speedup = 0;        // recorded in the session it comes from
};

/// The best `query.count` distinct (source, knobs, flags) kernels that succeeded in earlier
/// sessions: of the same problem first, then of the family, best speedup first, skipping those
/// `tree` already holds. A kernel whose source's knob annotations no longer parse, or whose
/// knobs its source does not admit, is skipped with a line in `notes`.
std::vector<WarmStartCandidate> findWarmStart(
    const Store& store, const WarmStartQuery& query, const SearchTree& tree, std::vector<std::string>& notes);

/// "2 from session 4 (scale), 1 from session 6 (axpb, family elementwise)"; "" for none.
std::string describeWarmStart(const std::vector<WarmStartNode>& nodes, const std::string& family);

} // namespace hone::core
