#pragma once

#include <QtGlobal>

#include <vector>

namespace hone::views {

class SessionData;

struct TreeLayoutOptions {
    double siblingDistance = 1.0; ///< least horizontal distance between two nodes of one depth
    double levelDistance = 1.0;   ///< vertical distance between depths
};

struct TreeLayoutPoint {
    double x = 0;
    double y = 0;
    int depth = -1; ///< -1: not reachable from a root (not placed)
};

/// Tidy layout of a forest (Reingold–Tilford as refined by Walker, in linear time after Buchheim,
/// Jünger and Leipert): nodes of one depth at least `siblingDistance` apart, every parent centred
/// over its first and last child, children in the given order, subtrees as compact as the
/// ordering allows, identical subtrees drawn identically. Roots sit at depth 0 side by side; the
/// leftmost node is at x = 0. O(n) time and memory, no recursion (any depth).
///
/// `children[v]` lists v's children left to right; `roots` the trees left to right. Throws
/// std::invalid_argument when an index is out of range or a node is reached twice (not a forest);
/// nodes no root reaches are not placed.
std::vector<TreeLayoutPoint> layoutTree(const std::vector<std::vector<int>>& children,
    const std::vector<int>& roots, const TreeLayoutOptions& options = {});

/// The same from a parent list: `parents[v] < 0`, out of range or v itself makes v a root;
/// children are ordered by index. Nodes on a cycle are not reachable and so not placed.
std::vector<TreeLayoutPoint> layoutForest(const std::vector<qint64>& parents, const TreeLayoutOptions& options = {});

/// The layout of a session's tree, indexed by node id (children in `NodeInfo::children` order).
std::vector<TreeLayoutPoint> layoutSession(const SessionData& data, const TreeLayoutOptions& options = {});

} // namespace hone::views
