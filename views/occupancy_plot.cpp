#include "views/occupancy_plot.h"

#include "views/plot_legend.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QStackedLayout>

#include <algorithm>

namespace hone::views {

namespace {

QString bytes(long long b)
{
    if (b >= 1024 && b % 1024 == 0)
        return QStringLiteral("%1 KiB").arg(b / 1024);
    if (b >= 1024)
        return QStringLiteral("%1 KiB").arg(b / 1024.0, 0, 'f', 1);
    return QStringLiteral("%1 B").arg(b);
}

QString percent(double fraction)
{
    return QStringLiteral("%1%").arg(fraction * 100, 0, 'f', fraction * 100 < 10 ? 1 : 0);
}

} // namespace

OccupancyPlot::OccupancyPlot(SessionData* sessionData, Selection* selection, QWidget* parent)
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
    m_empty->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_plot = new QCustomPlot(this);
    m_stack->addWidget(m_empty);
    m_stack->addWidget(m_plot);

    m_plot->xAxis->setLabel(tr("threads per block"));
    m_plot->yAxis->setLabel(tr("theoretical occupancy (%)"));
    m_plot->xAxis->setRange(0, 1056);
    m_plot->yAxis->setRange(0, 108);
    auto xTicks = QSharedPointer<QCPAxisTickerFixed>::create();
    xTicks->setTickStep(128);
    m_plot->xAxis->setTicker(xTicks);
    auto yTicks = QSharedPointer<QCPAxisTickerFixed>::create();
    yTicks->setTickStep(25);
    m_plot->yAxis->setTicker(yTicks);
    m_plot->plotLayout()->insertRow(0);
    m_title = new QCPTextElement(m_plot, QString(), font());
    m_plot->plotLayout()->addElement(0, 0, m_title);

    // The total first, so the thinner dashed limits stay visible where they coincide with it.
    m_total = m_plot->addGraph();
    m_total->setName(tr("occupancy"));
    m_total->setPen(QPen(QColor(20, 20, 20), 3));
    m_slots = m_plot->addGraph();
    m_slots->setName(tr("thread and block slots alone"));
    m_slots->setPen(QPen(QColor(150, 150, 150), 1.5, Qt::DotLine));
    m_registers = m_plot->addGraph();
    m_registers->setName(tr("registers alone"));
    m_registers->setPen(QPen(QColor(230, 60, 60), 1.5, Qt::DashLine));
    m_shared = m_plot->addGraph();
    m_shared->setName(tr("shared memory alone"));
    m_shared->setPen(QPen(QColor(40, 140, 220), 1.5, Qt::DashLine));
    m_marker = m_plot->addGraph();
    m_marker->setName(tr("this candidate"));
    m_marker->setLineStyle(QCPGraph::lsNone);
    m_marker->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::black, 2), QBrush(QColor(255, 215, 0)), 13));
    m_label = new QCPItemText(m_plot);
    m_label->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_label->setPadding(QMargins(4, 2, 4, 2));
    m_label->setBrush(QBrush(QColor(255, 255, 255, 220)));
    m_label->setPen(QPen(QColor(120, 120, 120)));
    m_label->setClipToAxisRect(false);
    m_label->setVisible(false);
    // The legend in a row under the axes: inside them it would cover curves or the label.
    placeLegendBelow(m_plot, 2);

    connect(m_selection, &Selection::currentChanged, this, &OccupancyPlot::showNode);
    connect(m_data, &SessionData::sessionReset, this, [this] { showNode(m_selection->current()); });
    connect(m_data, &SessionData::nodesChanged, this, [this](const QVector<qint64>& ids) {
        if (ids.contains(m_node))
            refresh();
    });
    connect(m_data, &SessionData::nodesAdded, this, [this](qint64 first, qint64 last) {
        if (m_node >= first && m_node <= last)
            refresh();
    });
    showNode(m_selection->current());
}

void OccupancyPlot::showNode(qint64 id)
{
    m_node = id;
    refresh();
}

bool OccupancyPlot::isEmptyState() const
{
    return m_stack->currentWidget() == m_empty;
}

QString OccupancyPlot::emptyText() const
{
    return isEmptyState() ? m_empty->text() : QString();
}

QString OccupancyPlot::markerLabel() const
{
    return m_label->visible() ? m_label->text() : QString();
}

QString OccupancyPlot::heading() const
{
    return isEmptyState() ? QString() : m_title->text();
}

void OccupancyPlot::showEmpty(const QString& why)
{
    m_arch.clear();
    m_markedBlock = -1;
    m_markedOccupancy = -1;
    m_empty->setText(why);
    m_stack->setCurrentWidget(m_empty);
}

void OccupancyPlot::refresh()
{
    const NodeInfo* n = m_data->node(m_node);
    if (!n) {
        showEmpty(tr("Select a node to see the occupancy of its kernel against the block size."));
        return;
    }
    if (n->origin == QLatin1String("root") || (n->sourceHash.isEmpty() && n->parent < 0)) {
        showEmpty(tr("Node %1 is the root of the tree; select a candidate to see its occupancy.").arg(n->id));
        return;
    }
    if (!n->evaluated() || !n->result) {
        showEmpty(tr("Node %1 has not been evaluated yet; its occupancy appears once the worker reports it.").arg(n->id));
        return;
    }
    const core::protocol::EvalResult& result = *n->result;
    if (!isCudaResult(result)) {
        QString device = QString::fromStdString(result.device());
        if (device.isEmpty())
            device = m_data->target().isEmpty() ? tr("a CPU") : m_data->target();
        showEmpty(tr("Occupancy applies to GPU kernels; node %1 ran on %2, which has no warps, registers per "
                     "thread or shared memory to trade.")
                      .arg(n->id)
                      .arg(device));
        return;
    }
    const auto launch = mainKernelLaunch(result);
    if (!launch) {
        showEmpty(tr("Node %1 ran on a GPU but its result names no kernel resources (no `occupancy` and no "
                     "`compile.resources`): it probably failed to compile (%2).")
                      .arg(n->id)
                      .arg(n->failureKind.isEmpty() ? tr("no failure recorded") : n->failureKind));
        return;
    }
    QString assumed;
    auto limits = DeviceLimits::fromResult(result);
    if (!limits) {
        limits = DeviceLimits::sm90();
        const QString device = QString::fromStdString(result.device());
        assumed = tr(" (assumed: no preset for \"%1\")").arg(device);
    }
    const DeviceLimits& d = *limits;
    m_arch = QString::fromStdString(d.arch);
    KernelResources k = launch->resources;

    QVector<double> xs, total, regs, smem, slotLimit;
    for (int bs = 32; bs <= d.maxThreadsPerBlock; bs += 32) {
        k.blockSize = bs;
        const OccupancyResult r = computeOccupancy(d, k);
        xs.push_back(bs);
        total.push_back(r.occupancy * 100);
        const bool regsFit = k.registers <= d.maxRegistersPerThread && r.blocksByRegisters > 0;
        regs.push_back(regsFit ? occupancyOf(d, bs, r.blocksByRegisters) * 100 : 0);
        smem.push_back(occupancyOf(d, bs, r.blocksBySharedMemory) * 100);
        slotLimit.push_back(occupancyOf(d, bs, std::min(r.blocksByWarps, r.blocksByBlocks)) * 100);
    }
    m_total->setData(xs, total, true);
    m_registers->setData(xs, regs, true);
    m_shared->setData(xs, smem, true);
    m_slots->setData(xs, slotLimit, true);

    const QString kernel = QString::fromStdString(launch->name.empty() ? std::string("kernel") : launch->name);
    QString shortKernel = kernel;
    if (shortKernel.size() > 60)
        shortKernel = shortKernel.left(57) + QStringLiteral("...");
    m_title->setText(tr("node %1 · %2: %3 registers/thread, %4 static + %5 dynamic shared memory per block\n%6 %7%8")
                         .arg(n->id)
                         .arg(shortKernel)
                         .arg(launch->resources.registers)
                         .arg(bytes(launch->resources.staticShared))
                         .arg(bytes(launch->resources.dynamicShared))
                         .arg(m_arch)
                         .arg(QString::fromStdString(d.description))
                         .arg(assumed));

    if (launch->hasBlock && launch->resources.blockSize > 0) {
        const OccupancyResult r = computeOccupancy(d, launch->resources);
        m_markedBlock = launch->resources.blockSize;
        m_markedOccupancy = r.occupancy;
        m_marker->setData(QVector<double> { double(m_markedBlock) }, QVector<double> { r.occupancy * 100 }, true);
        QString text;
        if (r.launchable()) {
            text = tr("block %1: %2 (%3 blocks/SM, %4 warps)")
                       .arg(m_markedBlock)
                       .arg(percent(r.occupancy))
                       .arg(r.blocksPerSm)
                       .arg(r.activeWarps);
            text += r.limiter == OccupancyLimiter::None
                ? tr(", full occupancy")
                : tr(", limited by %1").arg(QString::fromStdString(limiterName(r.limiter)));
        } else {
            text = tr("block %1 cannot launch: %2").arg(m_markedBlock).arg(QString::fromStdString(r.error));
        }
        if (launch->reportedBlocksPerSm >= 0 && launch->reportedBlocksPerSm != r.blocksPerSm)
            text += tr("\nthe driver reported %1 blocks/SM (%2)")
                        .arg(launch->reportedBlocksPerSm)
                        .arg(launch->reportedOccupancy >= 0 ? percent(launch->reportedOccupancy) : tr("?"));
        m_label->setText(text);
        // Left of the point on the right half, so the label stays inside the plot.
        const bool right = m_markedBlock > 560;
        m_label->setPositionAlignment((right ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignBottom);
        m_label->position->setCoords(m_markedBlock + (right ? -12 : 12), std::min(96.0, r.occupancy * 100 + 2));
        m_label->setVisible(true);
    } else {
        m_markedBlock = -1;
        m_markedOccupancy = -1;
        m_marker->data()->clear();
        m_label->setText(tr("block size unknown: no launch was captured, only the compiler's resource counts"));
        m_label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
        m_label->position->setCoords(528, 96);
        m_label->setVisible(true);
    }
    m_stack->setCurrentWidget(m_plot);
    m_plot->replot(QCustomPlot::rpQueuedRefresh);
}

} // namespace hone::views
