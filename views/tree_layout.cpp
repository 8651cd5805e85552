#include "views/tree_layout.h"

#include "views/session_data.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace hone::views {

namespace {

/// Children in compressed rows: node v's children are flat[start[v] .. start[v + 1]). The last
/// node (index n) is a virtual root whose children are the forest's roots, so a forest is laid
/// out as one tree and the virtual root dropped.
struct Csr {
    std::vector<int> start;
    std::vector<int> flat;
};

/// Buchheim, Jünger and Leipert, "Improving Walker's algorithm to run in linear time" (2002),
/// with both walks made iterative. Variable names follow the paper: v+/v- are the inside and
/// outside contours of the right (p) and left (m) subtrees, s the accumulated modifiers.
class Walker {
public:
    Walker(const Csr& csr, double distance)
        : m_csr(csr)
        , m_distance(distance)
    {
        const size_t n = csr.start.size() - 1;
        m_parent.assign(n, -1);
        m_number.assign(n, 0);
        m_thread.assign(n, -1);
        m_ancestor.resize(n);
        m_prelim.assign(n, 0);
        m_mod.assign(n, 0);
        m_shift.assign(n, 0);
        m_change.assign(n, 0);
        for (size_t v = 0; v < n; ++v) {
            m_ancestor[v] = static_cast<int>(v);
            for (int i = csr.start[v]; i < csr.start[v + 1]; ++i) {
                const int w = csr.flat[static_cast<size_t>(i)];
                m_parent[static_cast<size_t>(w)] = static_cast<int>(v);
                m_number[static_cast<size_t>(w)] = i - csr.start[v];
            }
        }
    }

    void firstWalk(int root)
    {
        struct Frame {
            int v;
            int next;             // index into flat of the next child to walk
            int defaultAncestor;
        };
        std::vector<Frame> stack;
        stack.push_back({root, m_csr.start[static_cast<size_t>(root)], -1});
        while (!stack.empty()) {
            Frame& f = stack.back();
            if (f.next < end(f.v)) {
                const int w = m_csr.flat[static_cast<size_t>(f.next)];
                stack.push_back({w, m_csr.start[static_cast<size_t>(w)], -1}); // f is stale from here
                continue;
            }
            const int v = f.v;
            finish(v);
            stack.pop_back();
            if (!stack.empty()) {
                Frame& p = stack.back();
                if (p.defaultAncestor < 0)
                    p.defaultAncestor = firstChild(p.v);
                p.defaultAncestor = apportion(v, p.defaultAncestor);
                ++p.next;
            }
        }
    }

    /// x = prelim + the sum of the ancestors' modifiers; depth counted from `root` (-1 for the
    /// virtual root, so that real roots get 0).
    void secondWalk(int root, int rootDepth, std::vector<TreeLayoutPoint>& out, double levelDistance) const
    {
        struct Frame {
            int v;
            double m;
            int depth;
        };
        std::vector<Frame> stack;
        stack.push_back({root, -m_prelim[static_cast<size_t>(root)], rootDepth});
        while (!stack.empty()) {
            const Frame f = stack.back();
            stack.pop_back();
            if (static_cast<size_t>(f.v) < out.size()) {
                auto& p = out[static_cast<size_t>(f.v)];
                p.x = m_prelim[static_cast<size_t>(f.v)] + f.m;
                p.depth = f.depth;
                p.y = f.depth * levelDistance;
            }
            const double childM = f.m + m_mod[static_cast<size_t>(f.v)];
            for (int i = end(f.v) - 1; i >= m_csr.start[static_cast<size_t>(f.v)]; --i)
                stack.push_back({m_csr.flat[static_cast<size_t>(i)], childM, f.depth + 1});
        }
    }

private:
    int end(int v) const { return m_csr.start[static_cast<size_t>(v) + 1]; }
    bool isLeaf(int v) const { return end(v) == m_csr.start[static_cast<size_t>(v)]; }
    int firstChild(int v) const { return m_csr.flat[static_cast<size_t>(m_csr.start[static_cast<size_t>(v)])]; }
    int lastChild(int v) const { return m_csr.flat[static_cast<size_t>(end(v) - 1)]; }
    int leftSibling(int v) const
    {
        const int p = m_parent[static_cast<size_t>(v)];
        const int k = m_number[static_cast<size_t>(v)];
        return p < 0 || k == 0 ? -1 : m_csr.flat[static_cast<size_t>(m_csr.start[static_cast<size_t>(p)] + k - 1)];
    }
    int leftmostSibling(int v) const
    {
        const int p = m_parent[static_cast<size_t>(v)];
        return p < 0 ? v : firstChild(p);
    }
    int nextLeft(int v) const { return isLeaf(v) ? m_thread[static_cast<size_t>(v)] : firstChild(v); }
    int nextRight(int v) const { return isLeaf(v) ? m_thread[static_cast<size_t>(v)] : lastChild(v); }

    /// Everything below v is placed relative to v: place v itself.
    void finish(int v)
    {
        const auto sv = static_cast<size_t>(v);
        const int w = leftSibling(v);
        if (isLeaf(v)) {
            m_prelim[sv] = w >= 0 ? m_prelim[static_cast<size_t>(w)] + m_distance : 0.0;
            return;
        }
        executeShifts(v);
        const double midpoint
            = 0.5 * (m_prelim[static_cast<size_t>(firstChild(v))] + m_prelim[static_cast<size_t>(lastChild(v))]);
        if (w >= 0) {
            m_prelim[sv] = m_prelim[static_cast<size_t>(w)] + m_distance;
            m_mod[sv] = m_prelim[sv] - midpoint;
        } else {
            m_prelim[sv] = midpoint;
        }
    }

    /// Pushes v's subtree right of its left siblings' subtrees, spreading the shift over the
    /// siblings in between (applied later by executeShifts).
    int apportion(int v, int defaultAncestor)
    {
        const int w = leftSibling(v);
        if (w < 0)
            return defaultAncestor;
        int vip = v, vop = v, vim = w, vom = leftmostSibling(v);
        double sip = m_mod[static_cast<size_t>(vip)], sop = m_mod[static_cast<size_t>(vop)];
        double sim = m_mod[static_cast<size_t>(vim)], som = m_mod[static_cast<size_t>(vom)];
        while (nextRight(vim) >= 0 && nextLeft(vip) >= 0) {
            vim = nextRight(vim);
            vip = nextLeft(vip);
            vom = nextLeft(vom);
            vop = nextRight(vop);
            m_ancestor[static_cast<size_t>(vop)] = v;
            const double s = (m_prelim[static_cast<size_t>(vim)] + sim) - (m_prelim[static_cast<size_t>(vip)] + sip)
                + m_distance;
            if (s > 0) {
                moveSubtree(ancestorOf(vim, v, defaultAncestor), v, s);
                sip += s;
                sop += s;
            }
            sim += m_mod[static_cast<size_t>(vim)];
            sip += m_mod[static_cast<size_t>(vip)];
            som += m_mod[static_cast<size_t>(vom)];
            sop += m_mod[static_cast<size_t>(vop)];
        }
        if (nextRight(vim) >= 0 && nextRight(vop) < 0) {
            m_thread[static_cast<size_t>(vop)] = nextRight(vim);
            m_mod[static_cast<size_t>(vop)] += sim - sop;
        }
        if (nextLeft(vip) >= 0 && nextLeft(vom) < 0) {
            m_thread[static_cast<size_t>(vom)] = nextLeft(vip);
            m_mod[static_cast<size_t>(vom)] += sip - som;
            defaultAncestor = v;
        }
        return defaultAncestor;
    }

    int ancestorOf(int vim, int v, int defaultAncestor) const
    {
        const int a = m_ancestor[static_cast<size_t>(vim)];
        return m_parent[static_cast<size_t>(a)] == m_parent[static_cast<size_t>(v)] ? a : defaultAncestor;
    }

    void moveSubtree(int wm, int wp, double s)
    {
        const double subtrees = m_number[static_cast<size_t>(wp)] - m_number[static_cast<size_t>(wm)];
        m_change[static_cast<size_t>(wp)] -= s / subtrees;
        m_shift[static_cast<size_t>(wp)] += s;
        m_change[static_cast<size_t>(wm)] += s / subtrees;
        m_prelim[static_cast<size_t>(wp)] += s;
        m_mod[static_cast<size_t>(wp)] += s;
    }

    void executeShifts(int v)
    {
        double shift = 0, change = 0;
        for (int i = end(v) - 1; i >= m_csr.start[static_cast<size_t>(v)]; --i) {
            const auto w = static_cast<size_t>(m_csr.flat[static_cast<size_t>(i)]);
            m_prelim[w] += shift;
            m_mod[w] += shift;
            change += m_change[w];
            shift += m_shift[w] + change;
        }
    }

    const Csr& m_csr;
    double m_distance;
    std::vector<int> m_parent, m_number, m_thread, m_ancestor;
    std::vector<double> m_prelim, m_mod, m_shift, m_change;
};

std::vector<TreeLayoutPoint> run(const Csr& csr, size_t n, const TreeLayoutOptions& options)
{
    std::vector<TreeLayoutPoint> out(n);
    const int virtualRoot = static_cast<int>(n);
    if (csr.start[n + 1] == csr.start[n])
        return out; // no roots
    Walker walker(csr, options.siblingDistance > 0 ? options.siblingDistance : 1.0);
    walker.firstWalk(virtualRoot);
    walker.secondWalk(virtualRoot, -1, out, options.levelDistance);
    double minX = std::numeric_limits<double>::infinity();
    for (const auto& p : out)
        if (p.depth >= 0)
            minX = std::min(minX, p.x);
    for (auto& p : out)
        if (p.depth >= 0)
            p.x -= minX;
    return out;
}

} // namespace

std::vector<TreeLayoutPoint> layoutTree(const std::vector<std::vector<int>>& children, const std::vector<int>& roots,
    const TreeLayoutOptions& options)
{
    const size_t n = children.size();
    Csr csr;
    csr.start.reserve(n + 2);
    csr.flat.reserve(n);
    std::vector<char> seen(n, 0);
    auto take = [&](int w, size_t from) {
        if (w < 0 || static_cast<size_t>(w) >= n)
            throw std::invalid_argument("tree layout: node " + std::to_string(w) + " (a child of "
                + (from == n ? std::string("the roots") : std::to_string(from)) + ") is out of range 0.."
                + std::to_string(static_cast<long long>(n) - 1));
        if (seen[static_cast<size_t>(w)])
            throw std::invalid_argument("tree layout: node " + std::to_string(w)
                + " is reached twice; the input is not a forest");
        seen[static_cast<size_t>(w)] = 1;
        csr.flat.push_back(w);
    };
    for (size_t v = 0; v < n; ++v) {
        csr.start.push_back(static_cast<int>(csr.flat.size()));
        for (int w : children[v])
            take(w, v);
    }
    csr.start.push_back(static_cast<int>(csr.flat.size()));
    for (int r : roots)
        take(r, n);
    csr.start.push_back(static_cast<int>(csr.flat.size()));
    // A root that is also somebody's child was caught above; a child never reached from a root is
    // simply not placed. A cycle among non-roots is never walked, so the walk terminates.
    return run(csr, n, options);
}

std::vector<TreeLayoutPoint> layoutForest(const std::vector<qint64>& parents, const TreeLayoutOptions& options)
{
    const size_t n = parents.size();
    std::vector<int> count(n + 1, 0);
    auto parentOf = [&](size_t v) -> size_t {
        const qint64 p = parents[v];
        return p < 0 || static_cast<size_t>(p) >= n || static_cast<size_t>(p) == v ? n : static_cast<size_t>(p);
    };
    for (size_t v = 0; v < n; ++v)
        ++count[parentOf(v)];
    Csr csr;
    csr.start.assign(n + 2, 0);
    for (size_t v = 0; v <= n; ++v)
        csr.start[v + 1] = csr.start[v] + count[v];
    csr.flat.resize(n);
    std::vector<int> fill(csr.start.begin(), csr.start.end() - 1);
    for (size_t v = 0; v < n; ++v)
        csr.flat[static_cast<size_t>(fill[parentOf(v)]++)] = static_cast<int>(v);
    return run(csr, n, options);
}

std::vector<TreeLayoutPoint> layoutSession(const SessionData& data, const TreeLayoutOptions& options)
{
    const auto& nodes = data.nodes();
    const size_t n = nodes.size();
    Csr csr;
    csr.start.reserve(n + 2);
    csr.flat.reserve(n);
    std::vector<char> seen(n, 0);
    auto take = [&](qint64 w) {
        if (w >= 0 && static_cast<size_t>(w) < n && !seen[static_cast<size_t>(w)]) {
            seen[static_cast<size_t>(w)] = 1;
            csr.flat.push_back(static_cast<int>(w));
        }
    };
    for (const auto& node : nodes) {
        csr.start.push_back(static_cast<int>(csr.flat.size()));
        for (qint64 w : node.children)
            if (w != node.id)
                take(w);
    }
    csr.start.push_back(static_cast<int>(csr.flat.size()));
    for (const auto& node : nodes)
        if (node.parent < 0 || static_cast<size_t>(node.parent) >= n)
            take(node.id);
    csr.start.push_back(static_cast<int>(csr.flat.size()));
    return run(csr, n, options);
}

} // namespace hone::views
