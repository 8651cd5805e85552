#pragma once

#include "views/line_diff.h"

#include <QString>
#include <QStringList>
#include <QWidget>

#include <nlohmann/json.hpp>

#include <vector>

class QLabel;
class QStackedWidget;
class QTimer;

namespace hone::views {

class CodeView;

/// One side of a diff: what it is called and what it holds.
struct DiffSide {
    QString title; // "node 17 (tuned.cpp, VEC=8)"
    QString fileName; // picks the highlighting
    QString text;
    nlohmann::json knobs = nlohmann::json::object();
    QString flags;
};

/// "VEC: 4 → 8", "UNROLL: (unset) → 2", one per knob whose value differs, in name order.
QStringList knobDifferences(const nlohmann::json& left, const nlohmann::json& right);

/// Two read-only code views side by side, aligned row by row, scrolling together. Row
/// backgrounds mark removed (left), added (right) and changed lines; the characters that differ
/// within a changed row are boxed. The diff is computed once and both texts are set in one go;
/// the character highlights are computed and applied only for the rows on screen plus a margin,
/// as they scroll into view, so large files open at once.
class DiffView : public QWidget {
    Q_OBJECT
public:
    explicit DiffView(QWidget* parent = nullptr);

    /// Shows `left` (the older side: parent, baseline) against `right` (the node).
    void setSides(const DiffSide& left, const DiffSide& right);
    /// Replaces the diff by a message ("node 3 is a seed: the root has no source").
    void showMessage(const QString& text);

    const LineDiff& diff() const { return m_diff; }
    /// "+3 −2", or "identical".
    QString countsText() const;
    QString leftTitle() const { return m_left.title; }
    QString rightTitle() const { return m_right.title; }
    /// The knob (and flag) differences listed above the code; empty when there are none.
    QStringList knobLines() const { return m_knobLines; }
    bool sameSource() const { return m_sameSource; }
    /// The message shown instead of a diff, or empty.
    QString message() const;

    CodeView* leftView() const { return m_leftView; }
    CodeView* rightView() const { return m_rightView; }

    /// Applies the character highlights of the rows on screen, plus kPaintMargin rows either
    /// side, that do not have them yet. Runs on scrolling and resizing.
    void paintVisibleRows();
    /// Rows whose character highlights are applied.
    int paintedRows() const { return m_paintedCount; }
    bool rowPainted(int row) const;

    static constexpr int kPaintMargin = 200;
    static constexpr int kAddedMarker = 10;
    static constexpr int kRemovedMarker = 11;
    static constexpr int kChangedMarker = 12;
    static constexpr int kFillerMarker = 13;
    static constexpr int kCharIndicator = 8;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void schedulePaint();
    void paintRow(int row);

    QLabel* m_leftHeader = nullptr;
    QLabel* m_rightHeader = nullptr;
    QLabel* m_counts = nullptr;
    QLabel* m_knobs = nullptr;
    QLabel* m_message = nullptr;
    QStackedWidget* m_stack = nullptr;
    CodeView* m_leftView = nullptr;
    CodeView* m_rightView = nullptr;
    QTimer* m_paintTimer = nullptr;

    DiffSide m_left;
    DiffSide m_right;
    QStringList m_leftLines;
    QStringList m_rightLines;
    LineDiff m_diff;
    std::vector<char> m_painted;
    int m_paintedCount = 0;
    QStringList m_knobLines;
    bool m_sameSource = false;
};

} // namespace hone::views
