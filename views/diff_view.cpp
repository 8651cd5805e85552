#include "views/diff_view.h"

#include "views/code_view.h"

#include <QGridLayout>
#include <QLabel>
#include <QScrollBar>
#include <QSplitter>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <set>

namespace hone::views {

namespace {

QString valueText(const nlohmann::json& v)
{
    if (v.is_string())
        return QString::fromStdString(v.get<std::string>());
    return QString::fromStdString(v.dump());
}

void setupSide(CodeView* view, bool left)
{
    view->markerDefine(QsciScintilla::Background, DiffView::kAddedMarker);
    view->setMarkerBackgroundColor(QColor(0xdd, 0xf7, 0xe0), DiffView::kAddedMarker);
    view->markerDefine(QsciScintilla::Background, DiffView::kRemovedMarker);
    view->setMarkerBackgroundColor(QColor(0xfd, 0xe2, 0xe2), DiffView::kRemovedMarker);
    view->markerDefine(QsciScintilla::Background, DiffView::kChangedMarker);
    view->setMarkerBackgroundColor(
        left ? QColor(0xfd, 0xf0, 0xe0) : QColor(0xea, 0xf6, 0xe6), DiffView::kChangedMarker);
    view->markerDefine(QsciScintilla::Background, DiffView::kFillerMarker);
    view->setMarkerBackgroundColor(QColor(0xee, 0xee, 0xee), DiffView::kFillerMarker);
    view->indicatorDefine(QsciScintilla::FullBoxIndicator, DiffView::kCharIndicator);
    view->setIndicatorForegroundColor(
        left ? QColor(0xd3, 0x2f, 0x2f, 90) : QColor(0x2e, 0x9d, 0x3a, 90), DiffView::kCharIndicator);
    view->setIndicatorDrawUnder(true, DiffView::kCharIndicator);
    view->setCaretLineVisible(false);
}

/// Fills character ranges of `line` (a row of `view`) with the diff indicator. Scintilla counts
/// bytes of UTF-8; the ranges count UTF-16 units.
void fillRanges(CodeView* view, int row, const QString& line, const std::vector<CharRange>& ranges)
{
    if (ranges.empty())
        return;
    const long lineStart
        = view->SendScintilla(QsciScintillaBase::SCI_POSITIONFROMLINE, static_cast<unsigned long>(row));
    view->SendScintilla(
        QsciScintillaBase::SCI_SETINDICATORCURRENT, static_cast<unsigned long>(DiffView::kCharIndicator));
    for (const auto& r : ranges) {
        const long from = lineStart + static_cast<long>(QStringView(line).left(r.start).toUtf8().size());
        const long length = static_cast<long>(QStringView(line).mid(r.start, r.length).toUtf8().size());
        view->SendScintilla(
            QsciScintillaBase::SCI_INDICATORFILLRANGE, static_cast<unsigned long>(from), length);
    }
}

} // namespace

QStringList knobDifferences(const nlohmann::json& left, const nlohmann::json& right)
{
    std::set<std::string> names;
    for (const auto* side : { &left, &right })
        if (side->is_object())
            for (auto it = side->begin(); it != side->end(); ++it)
                names.insert(it.key());
    QStringList out;
    const QString unset = QStringLiteral("(unset)");
    for (const auto& name : names) {
        const bool inLeft = left.is_object() && left.contains(name);
        const bool inRight = right.is_object() && right.contains(name);
        const QString a = inLeft ? valueText(left[name]) : unset;
        const QString b = inRight ? valueText(right[name]) : unset;
        if (a != b)
            out << QStringLiteral("%1: %2 → %3").arg(QString::fromStdString(name), a, b);
    }
    return out;
}

DiffView::DiffView(QWidget* parent)
    : QWidget(parent)
{
    m_leftHeader = new QLabel(this);
    m_rightHeader = new QLabel(this);
    m_counts = new QLabel(this);
    for (QLabel* l : { m_leftHeader, m_rightHeader })
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_knobs = new QLabel(this);
    m_knobs->setWordWrap(true);
    m_knobs->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_knobs->setStyleSheet(QStringLiteral("QLabel { background: #fff8e1; padding: 4px; }"));
    m_knobs->hide();
    m_message = new QLabel(this);
    m_message->setAlignment(Qt::AlignCenter);
    m_message->setWordWrap(true);

    m_leftView = new CodeView(this);
    m_rightView = new CodeView(this);
    setupSide(m_leftView, true);
    setupSide(m_rightView, false);
    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(m_leftView);
    splitter->addWidget(m_rightView);
    splitter->setChildrenCollapsible(false);

    m_stack = new QStackedWidget(this);
    m_stack->addWidget(m_message);
    m_stack->addWidget(splitter);

    auto* header = new QGridLayout;
    header->addWidget(m_leftHeader, 0, 0);
    header->addWidget(m_rightHeader, 0, 1);
    header->addWidget(m_counts, 0, 2, Qt::AlignRight);
    header->setColumnStretch(0, 1);
    header->setColumnStretch(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(header);
    layout->addWidget(m_knobs);
    layout->addWidget(m_stack, 1);

    // Both documents have one line per row, so the scroll positions map one to one.
    auto sync = [this](QScrollBar* from, QScrollBar* to) {
        connect(from, &QScrollBar::valueChanged, to, &QScrollBar::setValue);
    };
    sync(m_leftView->verticalScrollBar(), m_rightView->verticalScrollBar());
    sync(m_rightView->verticalScrollBar(), m_leftView->verticalScrollBar());
    sync(m_leftView->horizontalScrollBar(), m_rightView->horizontalScrollBar());
    sync(m_rightView->horizontalScrollBar(), m_leftView->horizontalScrollBar());

    m_paintTimer = new QTimer(this);
    m_paintTimer->setSingleShot(true);
    m_paintTimer->setInterval(0);
    connect(m_paintTimer, &QTimer::timeout, this, &DiffView::paintVisibleRows);
    connect(m_leftView->verticalScrollBar(), &QScrollBar::valueChanged, this, &DiffView::schedulePaint);
    // Scintilla may scroll before it has sized its scroll bars (a jump right after the text is
    // set): its update notification catches those scrolls too.
    auto follow = [this](CodeView* from, CodeView* to) {
        connect(from, &QsciScintillaBase::SCN_UPDATEUI, this, [this, from, to](int updated) {
            if (updated & QsciScintillaBase::SC_UPDATE_V_SCROLL) {
                if (to->firstVisibleLine() != from->firstVisibleLine())
                    to->setFirstVisibleLine(from->firstVisibleLine());
                schedulePaint();
            }
            if (updated & QsciScintillaBase::SC_UPDATE_H_SCROLL) {
                const long x = from->SendScintilla(QsciScintillaBase::SCI_GETXOFFSET);
                if (to->SendScintilla(QsciScintillaBase::SCI_GETXOFFSET) != x)
                    to->SendScintilla(QsciScintillaBase::SCI_SETXOFFSET, static_cast<unsigned long>(x));
            }
        });
    };
    follow(m_leftView, m_rightView);
    follow(m_rightView, m_leftView);

    showMessage(tr("Nothing to compare yet."));
}

void DiffView::showMessage(const QString& text)
{
    m_left = {};
    m_right = {};
    m_diff = {};
    m_leftLines.clear();
    m_rightLines.clear();
    m_painted.clear();
    m_paintedCount = 0;
    m_knobLines.clear();
    m_sameSource = false;
    m_leftHeader->clear();
    m_rightHeader->clear();
    m_counts->clear();
    m_knobs->hide();
    m_message->setText(text);
    m_stack->setCurrentWidget(m_message);
}

QString DiffView::message() const
{
    return m_stack->currentWidget() == m_message ? m_message->text() : QString();
}

QString DiffView::countsText() const
{
    if (m_diff.identical())
        return tr("identical");
    return QStringLiteral("+%1 −%2").arg(m_diff.added).arg(m_diff.removed);
}

void DiffView::setSides(const DiffSide& left, const DiffSide& right)
{
    m_left = left;
    m_right = right;
    m_leftLines = splitLines(left.text);
    m_rightLines = splitLines(right.text);
    m_diff = diffLines(m_leftLines, m_rightLines);
    m_sameSource = m_leftLines == m_rightLines;

    // Aligned documents: a row per diff row, blank filler where a side has no line.
    const size_t rows = m_diff.rows.size();
    QString leftText, rightText;
    QStringList leftLabels, rightLabels;
    leftLabels.reserve(static_cast<qsizetype>(rows));
    rightLabels.reserve(static_cast<qsizetype>(rows));
    for (size_t r = 0; r < rows; ++r) {
        const DiffRow& row = m_diff.rows[r];
        if (r > 0) {
            leftText += QLatin1Char('\n');
            rightText += QLatin1Char('\n');
        }
        if (row.left >= 0)
            leftText += m_leftLines[row.left];
        if (row.right >= 0)
            rightText += m_rightLines[row.right];
        leftLabels << (row.left >= 0 ? QString::number(row.left + 1) : QString());
        rightLabels << (row.right >= 0 ? QString::number(row.right + 1) : QString());
    }
    m_leftView->setSource(leftText, left.fileName);
    m_rightView->setSource(rightText, right.fileName);
    m_leftView->setLineLabels(leftLabels);
    m_rightView->setLineLabels(rightLabels);
    for (CodeView* v : { m_leftView, m_rightView }) {
        v->SendScintilla(
            QsciScintillaBase::SCI_SETINDICATORCURRENT, static_cast<unsigned long>(kCharIndicator));
        v->SendScintilla(QsciScintillaBase::SCI_INDICATORCLEARRANGE, 0UL, v->length());
        for (int m : { kAddedMarker, kRemovedMarker, kChangedMarker, kFillerMarker })
            v->markerDeleteAll(m);
    }
    for (size_t r = 0; r < rows; ++r) {
        const int line = static_cast<int>(r);
        switch (m_diff.rows[r].kind) {
        case DiffRow::Kind::Equal:
            break;
        case DiffRow::Kind::Changed:
            m_leftView->markerAdd(line, kChangedMarker);
            m_rightView->markerAdd(line, kChangedMarker);
            break;
        case DiffRow::Kind::Added:
            m_leftView->markerAdd(line, kFillerMarker);
            m_rightView->markerAdd(line, kAddedMarker);
            break;
        case DiffRow::Kind::Removed:
            m_leftView->markerAdd(line, kRemovedMarker);
            m_rightView->markerAdd(line, kFillerMarker);
            break;
        }
    }
    m_painted.assign(rows, 0);
    m_paintedCount = 0;

    m_leftHeader->setText(QStringLiteral("<b>%1</b>").arg(left.title.toHtmlEscaped()));
    m_rightHeader->setText(QStringLiteral("<b>%1</b>").arg(right.title.toHtmlEscaped()));
    m_counts->setText(m_diff.identical()
            ? tr("identical")
            : QStringLiteral("<span style='color:#2e7d32'>+%1</span> <span style='color:#c62828'>−%2</span>")
                  .arg(m_diff.added)
                  .arg(m_diff.removed));
    m_counts->setToolTip(m_diff.minimal
            ? QString()
            : tr("The files differ too much for a minimal diff; some blocks are shown "
                 "as removed and added as a whole."));

    // The typical knob-search child has the parent's source and other knobs: say so up front.
    m_knobLines = knobDifferences(left.knobs, right.knobs);
    if (left.flags != right.flags)
        m_knobLines << tr("flags: %1 → %2")
                           .arg(left.flags.isEmpty() ? tr("(none)") : left.flags,
                               right.flags.isEmpty() ? tr("(none)") : right.flags);
    QString banner;
    if (m_sameSource && m_knobLines.isEmpty())
        banner = tr("Same source, knobs and flags.");
    else if (m_sameSource)
        banner = tr("Same source; only the knobs differ:");
    else if (!m_knobLines.isEmpty())
        banner = tr("Knobs:");
    if (banner.isEmpty()) {
        m_knobs->hide();
    } else {
        QString html = QStringLiteral("<b>%1</b>").arg(banner.toHtmlEscaped());
        for (const auto& l : m_knobLines)
            html += QStringLiteral("<br>&nbsp;&nbsp;<tt>%1</tt>").arg(l.toHtmlEscaped());
        m_knobs->setText(html);
        m_knobs->show();
    }
    m_stack->setCurrentIndex(1);
    m_leftView->setFirstVisibleLine(0);
    paintVisibleRows();
}

bool DiffView::rowPainted(int row) const
{
    return row >= 0 && row < static_cast<int>(m_painted.size()) && m_painted[static_cast<size_t>(row)];
}

void DiffView::schedulePaint()
{
    if (!m_painted.empty())
        m_paintTimer->start();
}

void DiffView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    schedulePaint();
}

void DiffView::paintVisibleRows()
{
    const int rows = static_cast<int>(m_painted.size());
    if (rows == 0)
        return;
    const int first = m_leftView->firstVisibleLine();
    const int onScreen
        = std::max(1, static_cast<int>(m_leftView->SendScintilla(QsciScintillaBase::SCI_LINESONSCREEN)));
    const int from = std::max(0, first - kPaintMargin);
    const int to = std::min(rows, first + onScreen + kPaintMargin);
    for (int r = from; r < to; ++r)
        if (!m_painted[static_cast<size_t>(r)])
            paintRow(r);
}

void DiffView::paintRow(int row)
{
    m_painted[static_cast<size_t>(row)] = 1;
    ++m_paintedCount;
    const DiffRow& d = m_diff.rows[static_cast<size_t>(row)];
    if (d.kind != DiffRow::Kind::Changed)
        return;
    const QString& a = m_leftLines[d.left];
    const QString& b = m_rightLines[d.right];
    const IntraLine intra = diffChars(a, b);
    fillRanges(m_leftView, row, a, intra.left);
    fillRanges(m_rightView, row, b, intra.right);
}

} // namespace hone::views
