#pragma once

#include <QString>
#include <QStringList>

#include <vector>

namespace hone::views {

/// A run of characters inside one line: [start, start + length) in UTF-16 code units.
struct CharRange {
    int start = 0;
    int length = 0;
    bool operator==(const CharRange&) const = default;
};

/// One row of a side-by-side diff. Line numbers are 0-based; -1 where a side has no line.
struct DiffRow {
    enum class Kind { Equal, Changed, Added, Removed };
    Kind kind = Kind::Equal;
    int left = -1; // -1 on an Added row
    int right = -1; // -1 on a Removed row
    bool operator==(const DiffRow&) const = default;
};

/// The aligned rows of two texts. A Changed row pairs a removed line with an added one (the
/// i-th removed line of a block with the i-th added line of the same block).
struct LineDiff {
    std::vector<DiffRow> rows;
    int added = 0; // lines of the right text that are not in the left one (Changed included)
    int removed = 0; // lines of the left text that are not in the right one (Changed included)
    bool minimal = true; // false when the work budget ran out and a block was replaced as a whole
    bool identical() const { return added == 0 && removed == 0; }
};

/// The characters that differ within a Changed row.
struct IntraLine {
    std::vector<CharRange> left;
    std::vector<CharRange> right;
    bool wholeLine = false; // a line was too long to compare by character
};

/// Splits on "\n", "\r\n" and lone "\r"; the terminators are dropped, so line endings never
/// count as differences. A final terminator does not start another line; "" has no lines.
QStringList splitLines(const QString& text);

/// Myers' O(ND) difference of two line lists (linear space, divide and conquer). Lines that
/// occur in only one of the lists are set aside first (they can never match), so a file and its
/// rewrite cost little. Past `workBudget` steps a block is reported as removed + added.
LineDiff diffLines(const QStringList& left, const QStringList& right, long long workBudget = 50'000'000);
LineDiff diffTexts(const QString& left, const QString& right);

/// The differing characters of two lines (Myers on characters). Runs of one or two equal
/// characters between two changes are folded into the change, so a highlight covers a token
/// rather than scattered letters. Lines of `maxLength` characters or more are not compared: each
/// non-empty side is one whole-line range.
IntraLine diffChars(const QString& left, const QString& right, int maxLength = 2000);

} // namespace hone::views
