#include "views/timing_plot.h"

#include "views/plot_legend.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace hone::views {

namespace {

/// Nearest-rank quantile of sorted values.
double quantile(std::vector<double> v, double q)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const size_t i = static_cast<size_t>(std::clamp(
        std::ceil(q * static_cast<double>(v.size())) - 1.0, 0.0, static_cast<double>(v.size() - 1)));
    return v[i];
}

struct Unit {
    double scale;
    const char* name;
};

Unit unitFor(double ns)
{
    if (ns >= 1e9)
        return { 1e9, "s" };
    if (ns >= 1e6)
        return { 1e6, "ms" };
    if (ns >= 1e3)
        return { 1e3, "µs" };
    return { 1, "ns" };
}

QCPGraph* line(QCustomPlot* plot, const QString& name, double y, double x0, double x1, const QPen& pen)
{
    QCPGraph* g = plot->addGraph();
    g->setName(name);
    g->setPen(pen);
    g->setData(QVector<double> { x0, x1 }, QVector<double> { y, y });
    return g;
}

} // namespace

QString TimingPlot::formatNs(double ns)
{
    const Unit u = unitFor(std::abs(ns));
    const double v = ns / u.scale;
    const int decimals = std::abs(v) < 10 ? 2 : std::abs(v) < 100 ? 1 : 0;
    return QStringLiteral("%1 %2").arg(QString::number(v, 'f', decimals), QString::fromUtf8(u.name));
}

TimingPlot::TimingPlot(QWidget* parent)
    : QWidget(parent)
{
    m_summary = new QLabel(this);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_message = new QLabel(this);
    m_message->setAlignment(Qt::AlignCenter);
    m_message->setWordWrap(true);
    m_plot = new QCustomPlot(this);
    placeLegendBelow(m_plot, 1, 3); // under the axes: inside, it hid the slowest samples
    m_plot->xAxis->setLabel(tr("sample (in measurement order)"));
    m_stack = new QStackedWidget(this);
    m_stack->addWidget(m_message);
    m_stack->addWidget(m_plot);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_summary);
    layout->addWidget(m_stack, 1);
    showMessage(tr("No timing yet."));
}

void TimingPlot::showMessage(const QString& text)
{
    m_plot->clearGraphs();
    m_unit.clear();
    m_summary->clear();
    m_summary->hide();
    m_message->setText(text);
    m_stack->setCurrentWidget(m_message);
}

bool TimingPlot::isEmpty() const
{
    return m_stack->currentWidget() == m_message;
}

QString TimingPlot::summary() const
{
    return m_summary->text();
}

QString TimingPlot::message() const
{
    return isEmpty() ? m_message->text() : QString();
}

void TimingPlot::setResult(const std::optional<core::protocol::EvalResult>& result, const QString& emptyMessage)
{
    if (!result || !result->timing || result->timing->stats.samplesNs.empty()) {
        showMessage(emptyMessage.isEmpty() ? tr("This candidate has no timing samples.") : emptyMessage);
        return;
    }
    const core::protocol::Timing& timing = *result->timing;
    const std::vector<double>& ns = timing.stats.samplesNs;
    const double median = timing.stats.medianNs > 0 ? timing.stats.medianNs : quantile(ns, 0.5);
    const double p10 = timing.stats.p10Ns.value_or(0.0) > 0 ? *timing.stats.p10Ns : quantile(ns, 0.1);
    const double p90 = timing.stats.p90Ns.value_or(0.0) > 0 ? *timing.stats.p90Ns : quantile(ns, 0.9);
    const double cv = timing.stats.cv.value_or(0.0);
    const double baseMedian = timing.baseline ? timing.baseline->medianNs : 0.0;
    const std::vector<double> baseNs = timing.baseline ? timing.baseline->samplesNs : std::vector<double>();

    const Unit u = unitFor(median);
    m_unit = QString::fromUtf8(u.name);
    m_plot->clearGraphs();
    const double n = static_cast<double>(ns.size());
    QVector<double> x, y;
    for (size_t i = 0; i < ns.size(); ++i) {
        x << static_cast<double>(i + 1);
        y << ns[i] / u.scale;
    }
    if (!baseNs.empty()) {
        QVector<double> bx, by;
        for (size_t i = 0; i < baseNs.size(); ++i) {
            bx << static_cast<double>(i + 1);
            by << baseNs[i] / u.scale;
        }
        QCPGraph* g = m_plot->addGraph();
        g->setName(tr("baseline samples"));
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QColor(0x9e, 0x9e, 0x9e), 5));
        g->setData(bx, by);
    }
    QCPGraph* points = m_plot->addGraph();
    points->setName(tr("samples"));
    points->setLineStyle(QCPGraph::lsNone);
    points->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(0x15, 0x65, 0xc0), 6));
    points->setData(x, y);
    const double xEnd = std::max(n, static_cast<double>(baseNs.size())) + 0.5;
    line(m_plot, tr("median"), median / u.scale, 0.5, xEnd, QPen(QColor(0x15, 0x65, 0xc0), 2));
    QPen dashed(QColor(0x15, 0x65, 0xc0), 1, Qt::DashLine);
    line(m_plot, tr("p10 / p90"), p10 / u.scale, 0.5, xEnd, dashed);
    line(m_plot, tr("p90"), p90 / u.scale, 0.5, xEnd, dashed)->removeFromLegend();
    if (baseMedian > 0)
        line(m_plot, tr("baseline median"), baseMedian / u.scale, 0.5, xEnd,
            QPen(QColor(0xc6, 0x28, 0x28), 2, Qt::DashDotLine));

    double lo = *std::min_element(ns.begin(), ns.end());
    double hi = *std::max_element(ns.begin(), ns.end());
    if (baseMedian > 0) {
        lo = std::min(lo, baseMedian);
        hi = std::max(hi, baseMedian);
    }
    for (double v : baseNs) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    const double pad = std::max((hi - lo) * 0.08, hi * 0.01);
    m_plot->xAxis->setRange(0.5, xEnd);
    m_plot->yAxis->setRange((lo - pad) / u.scale, (hi + pad) / u.scale);
    m_plot->yAxis->setLabel(tr("time (%1)").arg(m_unit));
    m_plot->replot(QCustomPlot::rpQueuedReplot);

    QString text = tr("median %1, CV %2%, n=%3")
                       .arg(formatNs(median), QString::number(cv * 100.0, 'f', 1))
                       .arg(ns.size());
    if (baseMedian > 0) {
        text += tr("; baseline median %1").arg(formatNs(baseMedian));
        if (const double speedup = timing.speedup.value_or(0.0); speedup > 0)
            text += tr(" (%1x)").arg(QString::number(speedup, 'f', 2));
    }
    m_summary->setText(text);
    m_summary->show();
    m_stack->setCurrentWidget(m_plot);
}

} // namespace hone::views
