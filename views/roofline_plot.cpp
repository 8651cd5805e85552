#include "views/roofline_plot.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QMouseEvent>
#include <QStackedLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hone::views {

namespace {

constexpr int kReplotMs = 100;

struct CategoryStyle {
    const char* name;
    QColor color;
};

const CategoryStyle& styleOf(int c)
{
    static const CategoryStyle styles[RooflinePlot::CategoryCount] = {
        { "memory-bound", QColor(31, 119, 180) },
        { "compute-bound", QColor(214, 39, 40) },
        { "latency-bound", QColor(148, 103, 189) },
        { "occupancy-limited", QColor(255, 127, 14) },
        { "unclassified", QColor(44, 160, 44) },
    };
    return styles[c];
}

// 3350 -> "3350", 40 -> "40", 6.26 -> "6.26": plain digits, three significant ones below 1000.
QString plainNumber(double v)
{
    const int decimals = v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : 3;
    QString t = QString::number(v, 'f', decimals);
    if (t.contains(QLatin1Char('.'))) {
        while (t.endsWith(QLatin1Char('0')))
            t.chop(1);
        if (t.endsWith(QLatin1Char('.')))
            t.chop(1);
    }
    return t;
}

} // namespace

RooflinePlot::RooflinePlot(SessionData* sessionData, Selection* selection, QWidget* parent)
    : QWidget(parent)
    , m_data(sessionData)
    , m_selection(selection)
{
    m_stack = new QStackedLayout(this);
    m_stack->setContentsMargins(0, 0, 0, 0);
    m_empty = new QLabel(this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_empty->setMargin(24);
    m_plot = new QCustomPlot(this);
    m_stack->addWidget(m_empty);
    m_stack->addWidget(m_plot);

    auto logTicker = QSharedPointer<QCPAxisTickerLog>::create();
    for (QCPAxis* axis : { m_plot->xAxis, m_plot->yAxis }) {
        axis->setScaleType(QCPAxis::stLogarithmic);
        axis->setTicker(logTicker);
        axis->setNumberFormat(QStringLiteral("gb"));
        axis->setNumberPrecision(0);
    }
    m_plot->xAxis->setLabel(tr("arithmetic intensity (FLOP/byte)"));
    m_plot->yAxis->setLabel(tr("achieved GFLOP/s"));
    m_plot->xAxis->setRange(0.01, 100);
    m_plot->yAxis->setRange(0.1, 1000);
    m_plot->plotLayout()->insertRow(0);
    QFont titleFont = font();
    titleFont.setBold(true);
    m_title = new QCPTextElement(m_plot, tr("Roofline"), titleFont);
    m_plot->plotLayout()->addElement(0, 0, m_title);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->setNoAntialiasingOnDrag(true);

    // Drawn in creation order: roofs, trajectory, points, then the selection on top.
    QPen roofPen(QColor(60, 60, 60), 2);
    m_bandwidthRoof = m_plot->addGraph();
    m_bandwidthRoof->setPen(roofPen);
    m_bandwidthRoof->setName(tr("bandwidth roof"));
    m_bandwidthRoof->removeFromLegend();
    m_computeRoof = m_plot->addGraph();
    m_computeRoof->setPen(roofPen);
    m_computeRoof->setName(tr("compute roof"));
    m_computeRoof->removeFromLegend();

    m_trajectory = new QCPCurve(m_plot->xAxis, m_plot->yAxis);
    m_trajectory->setName(tr("best so far"));
    m_trajectory->setPen(QPen(QColor(0, 110, 60), 2));
    m_trajectory->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssNone));

    for (int c = 0; c < CategoryCount; ++c) {
        QCPGraph* g = m_plot->addGraph();
        const auto& s = styleOf(c);
        QColor fill = s.color;
        fill.setAlpha(170);
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, s.color.darker(130), fill, 6));
        g->setName(QString::fromLatin1(s.name));
        g->setAdaptiveSampling(true);
        m_graphs[static_cast<size_t>(c)] = g;
    }
    m_failedGraph = m_plot->addGraph();
    m_failedGraph->setLineStyle(QCPGraph::lsNone);
    m_failedGraph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCross, QPen(Qt::gray, 1.5), Qt::NoBrush, 6));
    m_selectedGraph = m_plot->addGraph();
    m_selectedGraph->setLineStyle(QCPGraph::lsNone);
    m_selectedGraph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::black, 2.5), QBrush(QColor(255, 215, 0, 160)), 16));
    m_selectedGraph->setName(tr("selected"));
    m_selectedGraph->removeFromLegend();

    m_bandwidthText = new QCPItemText(m_plot);
    m_bandwidthText->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
    m_bandwidthText->setPadding(QMargins(2, 2, 6, 4));
    m_computeText = new QCPItemText(m_plot);
    m_computeText->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_computeText->setPadding(QMargins(6, 2, 2, 4));
    for (QCPItemText* t : { m_bandwidthText, m_computeText }) {
        t->setClipToAxisRect(true);
        t->setColor(QColor(60, 60, 60));
        t->setVisible(false);
    }
    m_plot->legend->setVisible(true);
    QFont legendFont = font();
    legendFont.setPointSizeF(std::max(7.0, legendFont.pointSizeF() - 1));
    m_plot->legend->setFont(legendFont);
    // The legend sits in a column of its own right of the axis rect, so it never covers a point.
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    auto* legendColumn = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(1, 1, legendColumn);
    legendColumn->addElement(0, 0, m_plot->legend);
    legendColumn->addElement(1, 0, new QCPLayoutElement(m_plot)); // takes the rest of the height
    legendColumn->setRowStretchFactor(0, 0.001);
    legendColumn->setRowStretchFactor(1, 1);
    m_plot->plotLayout()->setColumnStretchFactor(1, 0.001);
    m_plot->legend->setMaximumSize(180, QWIDGETSIZE_MAX);
    m_plot->legend->setMargins(QMargins(4, 2, 4, 2));
    m_plot->plotLayout()->setColumnSpacing(4);

    connect(m_plot, &QCustomPlot::mousePress, this, &RooflinePlot::onMousePress);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &RooflinePlot::onMouseRelease);
    connect(m_plot, &QCustomPlot::mouseWheel, this, [this](QWheelEvent*) { m_autoRange = false; });
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) {
        m_autoRange = true;
        updateRanges();
        updateCeilings();
        m_plot->replot(QCustomPlot::rpQueuedRefresh);
    });

    m_timer.setSingleShot(true);
    m_timer.setInterval(kReplotMs);
    connect(&m_timer, &QTimer::timeout, this, &RooflinePlot::flush);
    connect(m_data, &SessionData::sessionReset, this, &RooflinePlot::reset);
    connect(m_data, &SessionData::nodesAdded, this, [this](qint64 first, qint64 last) { markPending(first, last); });
    connect(m_data, &SessionData::nodesChanged, this, [this](const QVector<qint64>& ids) { markPending(ids); });
    if (m_selection)
        connect(m_selection, &Selection::currentChanged, this, &RooflinePlot::schedule);
    flush();
}

int RooflinePlot::categoryOf(const NodeInfo& n)
{
    if (n.status != NodeInfo::Status::Ok || !(n.intensity > 0) || !(n.gflops > 0) || !std::isfinite(n.intensity)
        || !std::isfinite(n.gflops))
        return -1;
    if (n.bound == QLatin1String("memory"))
        return Memory;
    if (n.bound == QLatin1String("compute"))
        return Compute;
    if (n.bound == QLatin1String("latency"))
        return Latency;
    if (n.bound == QLatin1String("occupancy"))
        return Occupancy;
    return Unclassified;
}

void RooflinePlot::reset()
{
    m_needsFull = true;
    m_autoRange = true;
    m_pending.clear();
    schedule();
}

void RooflinePlot::schedule()
{
    if (!m_timer.isActive())
        m_timer.start();
}

void RooflinePlot::markPending(qint64 first, qint64 last)
{
    for (qint64 id = first; id <= last; ++id)
        m_pending.push_back(id);
    schedule();
}

void RooflinePlot::markPending(const QVector<qint64>& ids)
{
    m_pending.insert(m_pending.end(), ids.begin(), ids.end());
    schedule();
}

void RooflinePlot::flush()
{
    m_timer.stop();
    std::array<bool, CategoryCount> dirty {};
    if (m_needsFull) {
        m_needsFull = false;
        m_pending.clear();
        m_entries.assign(m_data->nodes().size(), Entry {});
        m_failed = 0;
        for (const auto& n : m_data->nodes()) {
            Entry& e = m_entries[static_cast<size_t>(n.id)];
            e.category = categoryOf(n);
            e.x = n.intensity;
            e.y = n.gflops;
            e.failed = n.status == NodeInfo::Status::Failed;
            m_failed += e.failed ? 1 : 0;
        }
        dirty.fill(true);
    } else if (!m_pending.empty()) {
        std::sort(m_pending.begin(), m_pending.end());
        m_pending.erase(std::unique(m_pending.begin(), m_pending.end()), m_pending.end());
        if (m_entries.size() < m_data->nodes().size())
            m_entries.resize(m_data->nodes().size());
        std::array<QVector<double>, CategoryCount> addX, addY;
        for (qint64 id : m_pending) {
            const NodeInfo* n = m_data->node(id);
            if (!n)
                continue;
            Entry& e = m_entries[static_cast<size_t>(id)];
            Entry next { categoryOf(*n), n->intensity, n->gflops, n->status == NodeInfo::Status::Failed };
            m_failed += (next.failed ? 1 : 0) - (e.failed ? 1 : 0);
            const bool moved = e.category >= 0 && (e.category != next.category || e.x != next.x || e.y != next.y);
            if (moved) {
                dirty[static_cast<size_t>(e.category)] = true;
                if (next.category >= 0)
                    dirty[static_cast<size_t>(next.category)] = true;
            } else if (e.category < 0 && next.category >= 0) {
                addX[static_cast<size_t>(next.category)].push_back(next.x);
                addY[static_cast<size_t>(next.category)].push_back(next.y);
            }
            e = next;
        }
        m_pending.clear();
        // New points are appended (the container sorts once per batch); a moved point rebuilds
        // its old and new graphs.
        for (int c = 0; c < CategoryCount; ++c)
            if (!dirty[static_cast<size_t>(c)] && !addX[static_cast<size_t>(c)].isEmpty())
                m_graphs[static_cast<size_t>(c)]->addData(addX[static_cast<size_t>(c)], addY[static_cast<size_t>(c)]);
    }
    for (int c = 0; c < CategoryCount; ++c)
        if (dirty[static_cast<size_t>(c)])
            rebuildCategory(c);

    updateTrajectory();
    updateSelection();
    updateLegendNote();
    updateRanges();
    updateCeilings();

    const bool empty = pointCount() == 0 && !(m_data->ceilings().peakGbps > 0);
    if (empty) {
        QString why = tr("No roofline yet: a point appears for every candidate that passes its checks and is timed, "
                         "under the device's bandwidth and compute ceilings.");
        if (m_failed > 0)
            why += QLatin1Char('\n') + tr("%n evaluation(s) failed so far; failures are not plotted.", nullptr, m_failed);
        m_empty->setText(why);
        m_stack->setCurrentWidget(m_empty);
    } else {
        m_stack->setCurrentWidget(m_plot);
    }
    m_plot->replot(QCustomPlot::rpQueuedRefresh);
}

void RooflinePlot::rebuildCategory(int category)
{
    QVector<double> xs, ys;
    for (const Entry& e : m_entries)
        if (e.category == category) {
            xs.push_back(e.x);
            ys.push_back(e.y);
        }
    m_graphs[static_cast<size_t>(category)]->setData(xs, ys);
}

int RooflinePlot::pointCount() const
{
    int total = 0;
    for (QCPGraph* g : m_graphs)
        total += g->dataCount();
    return total;
}

bool RooflinePlot::isEmptyState() const
{
    return m_stack->currentWidget() == m_empty;
}

QString RooflinePlot::emptyText() const
{
    return isEmptyState() ? m_empty->text() : QString();
}

QString RooflinePlot::bandwidthLabel() const
{
    return m_bandwidthText->visible() ? m_bandwidthText->text() : QString();
}

QString RooflinePlot::computeLabel() const
{
    return m_computeText->visible() ? m_computeText->text() : QString();
}

QString RooflinePlot::failedNote() const
{
    return m_failedGraph->name();
}

void RooflinePlot::updateLegendNote()
{
    for (int c = 0; c < CategoryCount; ++c) {
        QCPGraph* g = m_graphs[static_cast<size_t>(c)];
        const int n = g->dataCount();
        g->setName(QStringLiteral("%1 (%2)").arg(QString::fromLatin1(styleOf(c).name)).arg(n));
        if (n > 0)
            g->addToLegend();
        else
            g->removeFromLegend();
    }
    if (m_trajectory->dataCount() > 0)
        m_trajectory->addToLegend();
    else
        m_trajectory->removeFromLegend();
    m_failedGraph->setName(tr("%n failed (not plotted)", nullptr, m_failed));
    if (m_failed > 0)
        m_failedGraph->addToLegend();
    else
        m_failedGraph->removeFromLegend();
    // Say where x comes from: the profile's DRAM bytes (each candidate its own) or the
    // problem's minimum byte count (one intensity for every candidate of a problem).
    int measured = 0, plotted = 0;
    for (const auto& n : m_data->nodes())
        if (categoryOf(n) >= 0) {
            ++plotted;
            measured += n.intensityMeasured ? 1 : 0;
        }
    QString label = tr("arithmetic intensity (FLOP/byte)");
    if (plotted > 0 && measured == plotted)
        label += tr(", measured: DRAM bytes from the profile");
    else if (measured > 0)
        label += tr(", measured for %1 of %2 (profile), else the problem's bytes").arg(measured).arg(plotted);
    else if (plotted > 0)
        label += tr(", from the problem's bytes (no profile)");
    m_plot->xAxis->setLabel(label);
}

void RooflinePlot::updateTrajectory()
{
    QVector<double> ts, xs, ys;
    for (qint64 id : m_data->bestTrajectory()) {
        const NodeInfo* n = m_data->node(id);
        if (!n || categoryOf(*n) < 0)
            continue;
        ts.push_back(static_cast<double>(ts.size()));
        xs.push_back(n->intensity);
        ys.push_back(n->gflops);
    }
    m_trajectory->setData(ts, xs, ys, true);
}

void RooflinePlot::updateSelection()
{
    const qint64 cur = m_selection ? m_selection->current() : -1;
    if (cur >= 0 && cur < static_cast<qint64>(m_entries.size()) && m_entries[static_cast<size_t>(cur)].category >= 0) {
        const Entry& e = m_entries[static_cast<size_t>(cur)];
        m_selectedGraph->setData(QVector<double> { e.x }, QVector<double> { e.y }, true);
    } else {
        m_selectedGraph->data()->clear();
    }
}

void RooflinePlot::updateRanges()
{
    if (!m_autoRange)
        return;
    double xLo = std::numeric_limits<double>::infinity(), xHi = 0;
    double yLo = std::numeric_limits<double>::infinity(), yHi = 0;
    for (const Entry& e : m_entries)
        if (e.category >= 0) {
            xLo = std::min(xLo, e.x);
            xHi = std::max(xHi, e.x);
            yLo = std::min(yLo, e.y);
            yHi = std::max(yHi, e.y);
        }
    const Ceilings& c = m_data->ceilings();
    const double bw = c.peakGbps;
    const double peak = c.peakGflops;
    if (bw > 0 && peak > 0) {
        const double ridge = peak / bw;
        xLo = std::min(xLo, ridge / 10);
        xHi = std::max(xHi, ridge * 10);
        yHi = std::max(yHi, peak);
        yLo = std::min(yLo, bw * xLo);
    }
    if (!(xHi > 0) || !std::isfinite(xLo))
        return;
    m_plot->xAxis->setRange(xLo / 3, xHi * 3);
    m_plot->yAxis->setRange(yLo / 3, yHi * 3);
}

void RooflinePlot::updateCeilings()
{
    const Ceilings& c = m_data->ceilings();
    const double bw = c.peakGbps;
    const double peak = c.peakGflops;
    const QString device = c.device;
    m_title->setText(device.isEmpty() ? tr("Roofline") : tr("Roofline · %1").arg(device));
    if (!(bw > 0 && peak > 0)) {
        m_bandwidthRoof->data()->clear();
        m_computeRoof->data()->clear();
        m_bandwidthText->setVisible(false);
        m_computeText->setVisible(false);
        return;
    }
    const double ridge = peak / bw;
    // The roofs reach well past the visible range so that panning never shows their ends.
    const QCPRange xr = m_plot->xAxis->range();
    const double lo = std::min(xr.lower, ridge) / 1000;
    const double hi = std::max(xr.upper, ridge) * 1000;
    m_bandwidthRoof->setData(QVector<double> { lo, ridge }, QVector<double> { bw * lo, peak }, true);
    m_computeRoof->setData(QVector<double> { ridge, hi }, QVector<double> { peak, peak }, true);

    m_bandwidthText->setText(tr("%1 GB/s").arg(plainNumber(bw)));
    m_computeText->setText(tr("%1 GFLOP/s").arg(plainNumber(peak)));
    // Labels sit on their lines, inside the visible range where they can.
    const double xb = std::clamp(ridge / 8, xr.lower * 2, ridge);
    m_bandwidthText->position->setCoords(xb, bw * xb);
    const double xc = std::clamp(ridge * 1.5, ridge, std::max(ridge, xr.upper / 4));
    m_computeText->position->setCoords(xc, peak);
    m_bandwidthText->setVisible(true);
    m_computeText->setVisible(true);
}

qint64 RooflinePlot::nodeAtPixel(const QPointF& pixel, double radiusPx) const
{
    qint64 best = -1;
    double bestD2 = radiusPx * radiusPx;
    for (size_t id = 0; id < m_entries.size(); ++id) {
        const Entry& e = m_entries[id];
        if (e.category < 0)
            continue;
        const double dx = m_plot->xAxis->coordToPixel(e.x) - pixel.x();
        const double dy = m_plot->yAxis->coordToPixel(e.y) - pixel.y();
        const double d2 = dx * dx + dy * dy;
        if (d2 <= bestD2) {
            bestD2 = d2;
            best = static_cast<qint64>(id);
        }
    }
    return best;
}

qint64 RooflinePlot::selectNearest(double intensity, double gflops)
{
    const QPointF px(m_plot->xAxis->coordToPixel(intensity), m_plot->yAxis->coordToPixel(gflops));
    const qint64 id = nodeAtPixel(px);
    if (id >= 0 && m_selection) {
        m_selection->setCurrent(id);
        updateSelection();
        m_plot->replot(QCustomPlot::rpQueuedRefresh);
    }
    return id;
}

void RooflinePlot::onMousePress(QMouseEvent* e)
{
    m_pressPos = e->pos();
}

void RooflinePlot::onMouseRelease(QMouseEvent* e)
{
    if ((e->pos() - m_pressPos).manhattanLength() > 3) {
        m_autoRange = false; // the user dragged the view; keep it until a double click
        return;
    }
    if (e->button() != Qt::LeftButton)
        return;
    const qint64 id = nodeAtPixel(e->position());
    if (id >= 0 && m_selection) {
        m_selection->setCurrent(id);
        updateSelection();
        m_plot->replot(QCustomPlot::rpQueuedRefresh);
    }
}

} // namespace hone::views
