#include "views/line_diff.h"

#include <QHash>

#include <algorithm>
#include <utility>

namespace hone::views {

namespace {

using Matches = std::vector<std::pair<int, int>>;

/// Myers' linear-space algorithm: strip the common prefix and suffix, find a point on an optimal
/// path by searching from both ends at once ("middle snake"), recurse on both halves. Each half
/// has at most half the edit distance, so the recursion depth is O(log D).
class Myers {
public:
    Myers(const std::vector<int>& a, const std::vector<int>& b, long long budget)
        : m_a(a)
        , m_b(b)
        , m_budget(budget)
    {
    }

    /// Matched (left, right) index pairs in increasing order.
    Matches run()
    {
        compare(0, static_cast<int>(m_a.size()), 0, static_cast<int>(m_b.size()));
        return std::move(m_matches);
    }
    bool exhausted() const { return m_exhausted; }

private:
    void compare(int a0, int a1, int b0, int b1)
    {
        while (a0 < a1 && b0 < b1 && m_a[a0] == m_b[b0]) {
            m_matches.emplace_back(a0, b0);
            ++a0;
            ++b0;
        }
        const int suffixEnd = a1;
        while (a0 < a1 && b0 < b1 && m_a[a1 - 1] == m_b[b1 - 1]) {
            --a1;
            --b1;
        }
        const int suffixLength = suffixEnd - a1;
        if (a0 < a1 && b0 < b1) {
            int x = 0, y = 0;
            // No split (budget spent, or no progress possible): the block has no matches.
            if (split(a0, a1, b0, b1, x, y) && !(x == a0 && y == b0) && !(x == a1 && y == b1)) {
                compare(a0, x, b0, y);
                compare(x, a1, y, b1);
            }
        }
        for (int k = 0; k < suffixLength; ++k)
            m_matches.emplace_back(a1 + k, b1 + k);
    }

    /// The bisection of diff-match-patch: forward and reverse searches until their paths overlap;
    /// (x, y) is where the forward path stood then.
    bool split(int a0, int a1, int b0, int b1, int& xs, int& ys)
    {
        const int n = a1 - a0;
        const int m = b1 - b0;
        const int maxD = (n + m + 1) / 2;
        const int offset = maxD;
        const int length = 2 * maxD + 2;
        m_v1.assign(static_cast<size_t>(length), -1);
        m_v2.assign(static_cast<size_t>(length), -1);
        m_v1[static_cast<size_t>(offset + 1)] = 0;
        m_v2[static_cast<size_t>(offset + 1)] = 0;
        const int delta = n - m;
        const bool front = (delta % 2) != 0;
        int k1start = 0, k1end = 0, k2start = 0, k2end = 0;
        auto v1 = [&](int i) -> int& { return m_v1[static_cast<size_t>(i)]; };
        auto v2 = [&](int i) -> int& { return m_v2[static_cast<size_t>(i)]; };
        for (int d = 0; d < maxD; ++d) {
            if (m_work > m_budget) {
                m_exhausted = true;
                return false;
            }
            for (int k1 = -d + k1start; k1 <= d - k1end; k1 += 2) {
                const int k1o = offset + k1;
                int x1 = (k1 == -d || (k1 != d && v1(k1o - 1) < v1(k1o + 1))) ? v1(k1o + 1) : v1(k1o - 1) + 1;
                int y1 = x1 - k1;
                const int x1Start = x1;
                while (x1 < n && y1 < m && m_a[a0 + x1] == m_b[b0 + y1]) {
                    ++x1;
                    ++y1;
                }
                m_work += 1 + x1 - x1Start;
                v1(k1o) = x1;
                if (x1 > n) {
                    k1end += 2;
                } else if (y1 > m) {
                    k1start += 2;
                } else if (front) {
                    const int k2o = offset + delta - k1;
                    if (k2o >= 0 && k2o < length && v2(k2o) != -1 && x1 >= n - v2(k2o)) {
                        xs = a0 + x1;
                        ys = b0 + y1;
                        return true;
                    }
                }
            }
            for (int k2 = -d + k2start; k2 <= d - k2end; k2 += 2) {
                const int k2o = offset + k2;
                int x2 = (k2 == -d || (k2 != d && v2(k2o - 1) < v2(k2o + 1))) ? v2(k2o + 1) : v2(k2o - 1) + 1;
                int y2 = x2 - k2;
                const int x2Start = x2;
                while (x2 < n && y2 < m && m_a[a0 + n - x2 - 1] == m_b[b0 + m - y2 - 1]) {
                    ++x2;
                    ++y2;
                }
                m_work += 1 + x2 - x2Start;
                v2(k2o) = x2;
                if (x2 > n) {
                    k2end += 2;
                } else if (y2 > m) {
                    k2start += 2;
                } else if (!front) {
                    const int k1o = offset + delta - k2;
                    if (k1o >= 0 && k1o < length && v1(k1o) != -1) {
                        const int x1 = v1(k1o);
                        const int y1 = offset + x1 - k1o;
                        if (x1 >= n - x2) {
                            xs = a0 + x1;
                            ys = b0 + y1;
                            return true;
                        }
                    }
                }
            }
        }
        return false;
    }

    const std::vector<int>& m_a;
    const std::vector<int>& m_b;
    long long m_budget;
    long long m_work = 0;
    bool m_exhausted = false;
    Matches m_matches;
    std::vector<int> m_v1;
    std::vector<int> m_v2;
};

} // namespace

QStringList splitLines(const QString& text)
{
    QStringList out;
    const int n = static_cast<int>(text.size());
    int start = 0;
    for (int i = 0; i < n; ++i) {
        const QChar c = text.at(i);
        if (c != u'\n' && c != u'\r')
            continue;
        out << text.mid(start, i - start);
        if (c == u'\r' && i + 1 < n && text.at(i + 1) == u'\n')
            ++i;
        start = i + 1;
    }
    if (start < n)
        out << text.mid(start);
    return out;
}

LineDiff diffLines(const QStringList& left, const QStringList& right, long long workBudget)
{
    // Lines become ids; a line present on one side only is set aside before the search, which
    // keeps D small for rewrites and is exact (such a line can never be part of a match).
    QHash<QString, int> ids;
    std::vector<int> idsLeft, idsRight;
    idsLeft.reserve(static_cast<size_t>(left.size()));
    idsRight.reserve(static_cast<size_t>(right.size()));
    auto idOf = [&ids](const QString& line) {
        auto it = ids.constFind(line);
        if (it == ids.constEnd())
            it = ids.insert(line, static_cast<int>(ids.size()));
        return it.value();
    };
    for (const auto& l : left)
        idsLeft.push_back(idOf(l));
    for (const auto& l : right)
        idsRight.push_back(idOf(l));
    std::vector<int> countLeft(static_cast<size_t>(ids.size()), 0),
        countRight(static_cast<size_t>(ids.size()), 0);
    for (int id : idsLeft)
        ++countLeft[static_cast<size_t>(id)];
    for (int id : idsRight)
        ++countRight[static_cast<size_t>(id)];
    std::vector<int> a, b, mapA, mapB;
    for (size_t i = 0; i < idsLeft.size(); ++i)
        if (countRight[static_cast<size_t>(idsLeft[i])] > 0) {
            a.push_back(idsLeft[i]);
            mapA.push_back(static_cast<int>(i));
        }
    for (size_t j = 0; j < idsRight.size(); ++j)
        if (countLeft[static_cast<size_t>(idsRight[j])] > 0) {
            b.push_back(idsRight[j]);
            mapB.push_back(static_cast<int>(j));
        }

    Myers myers(a, b, workBudget);
    Matches matches = myers.run();

    LineDiff out;
    out.minimal = !myers.exhausted();
    out.rows.reserve(static_cast<size_t>(std::max(left.size(), right.size())));
    int i = 0, j = 0;
    auto gap = [&](int toLeft, int toRight) {
        const int paired = std::min(toLeft - i, toRight - j);
        for (int k = 0; k < paired; ++k)
            out.rows.push_back({ DiffRow::Kind::Changed, i + k, j + k });
        for (int k = i + paired; k < toLeft; ++k)
            out.rows.push_back({ DiffRow::Kind::Removed, k, -1 });
        for (int k = j + paired; k < toRight; ++k)
            out.rows.push_back({ DiffRow::Kind::Added, -1, k });
        out.removed += toLeft - i;
        out.added += toRight - j;
    };
    for (const auto& [ma, mb] : matches) {
        const int li = mapA[static_cast<size_t>(ma)];
        const int rj = mapB[static_cast<size_t>(mb)];
        gap(li, rj);
        out.rows.push_back({ DiffRow::Kind::Equal, li, rj });
        i = li + 1;
        j = rj + 1;
    }
    gap(static_cast<int>(left.size()), static_cast<int>(right.size()));
    return out;
}

LineDiff diffTexts(const QString& left, const QString& right)
{
    return diffLines(splitLines(left), splitLines(right));
}

IntraLine diffChars(const QString& left, const QString& right, int maxLength)
{
    IntraLine out;
    if (left.size() >= maxLength || right.size() >= maxLength) {
        out.wholeLine = true;
        if (!left.isEmpty())
            out.left.push_back({ 0, static_cast<int>(left.size()) });
        if (!right.isEmpty())
            out.right.push_back({ 0, static_cast<int>(right.size()) });
        return out;
    }
    std::vector<int> a, b;
    a.reserve(static_cast<size_t>(left.size()));
    b.reserve(static_cast<size_t>(right.size()));
    for (QChar c : left)
        a.push_back(c.unicode());
    for (QChar c : right)
        b.push_back(c.unicode());
    Matches matches = Myers(a, b, 4'000'000).run();

    // Segments: an equal run, or an edit removing `del` and inserting `ins` characters.
    struct Segment {
        bool equal;
        int del;
        int ins;
    };
    std::vector<Segment> segs;
    auto addEdit = [&](int del, int ins) {
        if (del == 0 && ins == 0)
            return;
        if (!segs.empty() && !segs.back().equal) {
            segs.back().del += del;
            segs.back().ins += ins;
        } else {
            segs.push_back({ false, del, ins });
        }
    };
    int i = 0, j = 0;
    for (const auto& [ma, mb] : matches) {
        addEdit(ma - i, mb - j);
        if (!segs.empty() && segs.back().equal)
            ++segs.back().del; // an equal run's length lives in `del`
        else
            segs.push_back({ true, 1, 1 });
        i = ma + 1;
        j = mb + 1;
    }
    addEdit(static_cast<int>(a.size()) - i, static_cast<int>(b.size()) - j);

    // Fold short equal runs that sit between two edits into one edit.
    std::vector<Segment> folded;
    for (size_t k = 0; k < segs.size(); ++k) {
        const Segment& s = segs[k];
        const bool between = k > 0 && k + 1 < segs.size();
        if (s.equal && between && s.del <= 2) {
            folded.back().del += s.del; // the previous one is an edit: segments alternate
            folded.back().ins += s.del;
            continue;
        }
        if (!s.equal && !folded.empty() && !folded.back().equal) {
            folded.back().del += s.del;
            folded.back().ins += s.ins;
            continue;
        }
        folded.push_back(s);
    }
    int pa = 0, pb = 0;
    for (const auto& s : folded) {
        if (s.equal) {
            pa += s.del;
            pb += s.del;
            continue;
        }
        if (s.del > 0)
            out.left.push_back({ pa, s.del });
        if (s.ins > 0)
            out.right.push_back({ pb, s.ins });
        pa += s.del;
        pb += s.ins;
    }
    return out;
}

} // namespace hone::views
