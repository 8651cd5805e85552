#include "views/evidence.h"

#include <QBrush>
#include <QColor>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QScrollArea>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>
#include <functional>
#include <optional>

namespace hone::views {

namespace {

const QString kNotMeasured = QStringLiteral("not measured");

using core::protocol::EvalResult;

/// A sub-object of a result, or null when the result or the part is missing.
template <class T>
const T* part(const MaybeResult& r, std::optional<T> EvalResult::*field)
{
    return r && ((*r).*field) ? &*((*r).*field) : nullptr;
}

template <class T, class V>
std::optional<double> opt(const T* p, std::optional<V> T::*field)
{
    if (!p || !(p->*field))
        return std::nullopt;
    return static_cast<double>(*(p->*field));
}

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

QString fixed(double v, int digits)
{
    return QString::number(v, 'f', digits);
}

QString percent(double fraction)
{
    return fixed(100.0 * fraction, 1) + QStringLiteral("%");
}

QString bytes(double b)
{
    if (b >= 1024 * 1024)
        return fixed(b / (1024.0 * 1024.0), 1) + QStringLiteral(" MiB");
    if (b >= 1024)
        return fixed(b / 1024.0, 1) + QStringLiteral(" KiB");
    return QString::number(static_cast<qint64>(b)) + QStringLiteral(" B");
}

/// A numeric row: `format` renders a value; the change is relative (after / before - 1), or in
/// points for percentages (`points`).
MetricDelta numericRow(const QString& name, std::optional<double> before, std::optional<double> after,
    const std::function<QString(double)>& format, bool points = false)
{
    MetricDelta d;
    d.name = name;
    d.before = before ? format(*before) : kNotMeasured;
    d.after = after ? format(*after) : kNotMeasured;
    d.measured = before && after;
    if (d.measured) {
        if (points) {
            const double diff = 100.0 * (*after - *before);
            d.change = (diff >= 0 ? QStringLiteral("+") : QString()) + fixed(diff, 1) + QStringLiteral(" pts");
        } else if (*before != 0) {
            const double rel = 100.0 * (*after / *before - 1.0);
            d.change = (rel >= 0 ? QStringLiteral("+") : QString()) + fixed(rel, 1) + QStringLiteral("%");
        }
    }
    return d;
}

MetricDelta textRow(const QString& name, const QString& before, const QString& after)
{
    MetricDelta d;
    d.name = name;
    d.before = before.isEmpty() ? kNotMeasured : before;
    d.after = after.isEmpty() ? kNotMeasured : after;
    d.measured = !before.isEmpty() && !after.isEmpty();
    if (d.measured)
        d.change = before == after ? QStringLiteral("same") : before + QStringLiteral(" → ") + after;
    return d;
}

/// The headline kernel of an `occupancy`: the one named main_kernel, else the first.
const core::protocol::LaunchOccupancy* mainKernel(const core::protocol::Occupancy* occupancy)
{
    if (!occupancy || occupancy->kernels.empty())
        return nullptr;
    for (const auto& k : occupancy->kernels)
        if (k.name == occupancy->mainKernel)
            return &k;
    return &occupancy->kernels.front();
}

std::optional<double> smemOf(const core::protocol::LaunchOccupancy* kernel)
{
    if (!kernel || (!kernel->staticSmem && !kernel->dynamicSmem))
        return std::nullopt;
    return static_cast<double>(kernel->staticSmem.value_or(0) + kernel->dynamicSmem.value_or(0));
}

QString stallsOf(const core::protocol::ProfiledKernel* main)
{
    if (!main)
        return {};
    QStringList parts;
    for (const auto& s : main->stalls)
        parts << qs(s.reason) + QStringLiteral(" ") + fixed(s.pct, 1) + QStringLiteral("%");
    return parts.join(QStringLiteral(", "));
}

QString notTimedReason(const MaybeResult& candidate)
{
    if (!candidate)
        return QStringLiteral("not measured: the candidate has not been evaluated yet");
    if (const auto& f = candidate->failure)
        return QStringLiteral("not measured: the candidate failed (%1 in %2)")
            .arg(QLatin1String(core::protocol::failureKindName(f->kind)), qs(f->stage));
    return QStringLiteral("not measured: the evaluation has no timing stage");
}

} // namespace

QString formatNs(double ns)
{
    if (!(ns > 0))
        return QStringLiteral("0 ns");
    if (ns < 1e3)
        return fixed(ns, 0) + QStringLiteral(" ns");
    if (ns < 1e6)
        return QString::number(ns / 1e3, 'g', 3) + QStringLiteral(" µs");
    if (ns < 1e9)
        return QString::number(ns / 1e6, 'g', 3) + QStringLiteral(" ms");
    return QString::number(ns / 1e9, 'g', 3) + QStringLiteral(" s");
}

DeltaSection rooflineDeltas(const MaybeResult& candidate, const MaybeResult& baseline)
{
    using core::protocol::Roofline;
    DeltaSection s;
    const Roofline* after = part(candidate, &EvalResult::roofline);
    const Roofline* before = part(baseline, &EvalResult::roofline);
    if (!after) {
        s.why = !candidate ? QStringLiteral("not measured: the candidate has not been evaluated yet")
                           : QStringLiteral("not measured: the candidate has no roofline (it was not timed)");
        return s;
    }
    auto fmt1 = [](double v) { return QString::number(v, 'g', 3); };
    s.rows.push_back(numericRow(QStringLiteral("intensity (FLOP/B)"), opt(before, &Roofline::intensity),
        opt(after, &Roofline::intensity), fmt1));
    s.rows.push_back(numericRow(QStringLiteral("GFLOP/s"), opt(before, &Roofline::gflops), opt(after, &Roofline::gflops), fmt1));
    s.rows.push_back(numericRow(QStringLiteral("GB/s"), opt(before, &Roofline::gbps), opt(after, &Roofline::gbps), fmt1));
    s.rows.push_back(numericRow(QStringLiteral("% of bandwidth"), opt(before, &Roofline::fracBandwidth),
        opt(after, &Roofline::fracBandwidth), percent, true));
    s.rows.push_back(numericRow(QStringLiteral("% of compute"), opt(before, &Roofline::fracCompute),
        opt(after, &Roofline::fracCompute), percent, true));
    s.rows.push_back(textRow(QStringLiteral("bound"), baseline ? qs(baseline->bound()) : QString(), qs(candidate->bound())));
    return s;
}

DeltaSection occupancyDeltas(const MaybeResult& candidate, const MaybeResult& baseline)
{
    using core::protocol::LaunchOccupancy;
    using core::protocol::Occupancy;
    DeltaSection s;
    const Occupancy* after = part(candidate, &EvalResult::occupancy);
    const Occupancy* before = part(baseline, &EvalResult::occupancy);
    if (!after) {
        const std::string backend = candidate ? candidate->backend() : std::string();
        s.why = backend == "cpu" || backend.empty()
            ? QStringLiteral("not measured: occupancy is measured for CUDA candidates only")
            : QStringLiteral("not measured: the evaluation recorded no launch (it was not timed)");
        return s;
    }
    if (after->error) {
        s.why = QStringLiteral("not measured: ") + qs(*after->error);
        return s;
    }
    const LaunchOccupancy* ka = mainKernel(after);
    const LaunchOccupancy* kb = mainKernel(before);
    s.rows.push_back(numericRow(QStringLiteral("theoretical occupancy"), opt(before, &Occupancy::theoretical),
        opt(after, &Occupancy::theoretical), percent, true));
    s.rows.push_back(numericRow(QStringLiteral("registers per thread"), opt(kb, &LaunchOccupancy::registers),
        opt(ka, &LaunchOccupancy::registers), [](double v) { return QString::number(static_cast<qint64>(v)); }));
    s.rows.push_back(numericRow(QStringLiteral("shared memory per block"), smemOf(kb), smemOf(ka), bytes));
    s.rows.push_back(textRow(QStringLiteral("limiter"), before ? qs(before->limiter) : QString(), qs(after->limiter)));
    s.rows.push_back(textRow(QStringLiteral("main kernel"), before ? qs(before->mainKernel) : QString(), qs(after->mainKernel)));
    return s;
}

DeltaSection profileDeltas(const MaybeResult& candidate, const MaybeResult& baseline)
{
    using core::protocol::ProfiledKernel;
    DeltaSection s;
    const core::protocol::Profile* after = part(candidate, &EvalResult::profile);
    const core::protocol::Profile* before = part(baseline, &EvalResult::profile);
    if (!after) {
        s.why = QStringLiteral("not measured: no profiler stage ran for this candidate (CUDA only; `hone bench` "
                               "profiles the best kernel)");
        return s;
    }
    if (!after->error.empty()) {
        s.why = QStringLiteral("not measured: ") + qs(after->error);
        return s;
    }
    const ProfiledKernel* ma = after->main ? &*after->main : nullptr;
    const ProfiledKernel* mb = before && before->main ? &*before->main : nullptr;
    auto pct = [](double v) { return fixed(v, 1) + QStringLiteral("%"); };
    auto asFraction = [](std::optional<double> v) { return v ? std::optional<double>(*v / 100.0) : v; };
    auto row = [&](const QString& name, std::optional<double> ProfiledKernel::*field) {
        s.rows.push_back(numericRow(name, asFraction(opt(mb, field)), asFraction(opt(ma, field)),
            [&](double v) { return pct(100.0 * v); }, true));
    };
    row(QStringLiteral("DRAM throughput"), &ProfiledKernel::dramPct);
    row(QStringLiteral("SM throughput"), &ProfiledKernel::smPct);
    row(QStringLiteral("achieved occupancy"), &ProfiledKernel::achievedOccupancyPct);
    s.rows.push_back(textRow(QStringLiteral("top stalls"), stallsOf(mb), stallsOf(ma)));
    return s;
}

QString timingSummary(const MaybeResult& candidate)
{
    if (!candidate || !candidate->timing)
        return notTimedReason(candidate);
    const core::protocol::Timing& timing = *candidate->timing;
    auto side = [](const core::protocol::SampleStats& t) {
        return QStringLiteral("median %1 (p10 %2 – p90 %3, CV %4%)")
            .arg(formatNs(t.medianNs), formatNs(t.p10Ns.value_or(0)), formatNs(t.p90Ns.value_or(0)),
                fixed(100.0 * t.cv.value_or(0), 1));
    };
    QStringList lines;
    lines << QStringLiteral("Candidate: ") + side(timing.stats) + QStringLiteral(", n=%1").arg(timing.stats.samplesNs.size());
    if (!timing.baseline) {
        lines << QStringLiteral("Baseline: not measured with this candidate");
        return lines.join(QLatin1Char('\n'));
    }
    lines << QStringLiteral("Baseline: ") + side(*timing.baseline);
    const double speedup = timing.speedup.value_or(0);
    const core::SpeedupInterval ci = core::speedupInterval(timing);
    QString s = QStringLiteral("Speedup %1x").arg(fixed(speedup, 2));
    if (ci.valid)
        s += QStringLiteral(", 95% CI %1x – %2x (median of %3 paired ratios, exact coverage %4%)")
                 .arg(fixed(ci.low, 2), fixed(ci.high, 2), QString::number(ci.pairs), fixed(100.0 * ci.coverage, 1));
    else
        s += QStringLiteral(" (no interval: %1)").arg(qs(ci.why));
    lines << s;
    return lines.join(QLatin1Char('\n'));
}

// ---- CorrectnessMatrixModel ----------------------------------------------------------------

void CorrectnessMatrixModel::setResult(const MaybeResult& result)
{
    beginResetModel();
    m_shapes.clear();
    m_columns.clear();
    m_cells.clear();
    if (result && result->checks) {
        for (const auto& c : *result->checks) {
            const QString shape = qs(c.shape);
            const QString column = QStringLiteral("seed %1").arg(c.seed)
                + (c.afterTiming ? QStringLiteral(" (after timing)") : QString());
            qsizetype row = m_shapes.indexOf(shape);
            if (row < 0) {
                m_shapes << shape;
                m_cells.emplace_back(static_cast<size_t>(m_columns.size()));
                row = m_shapes.size() - 1;
            }
            qsizetype col = m_columns.indexOf(column);
            if (col < 0) {
                m_columns << column;
                for (auto& r : m_cells)
                    r.emplace_back();
                col = m_columns.size() - 1;
            }
            m_cells[static_cast<size_t>(row)][static_cast<size_t>(col)] = c;
        }
    }
    endResetModel();
}

int CorrectnessMatrixModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_shapes.size());
}

int CorrectnessMatrixModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_columns.size());
}

const core::protocol::Check* CorrectnessMatrixModel::check(int row, int column) const
{
    if (row < 0 || column < 0 || row >= rowCount() || column >= columnCount())
        return nullptr;
    const auto& c = m_cells[static_cast<size_t>(row)][static_cast<size_t>(column)];
    return c ? &*c : nullptr;
}

QVariant CorrectnessMatrixModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid())
        return {};
    const core::protocol::Check* c = check(index.row(), index.column());
    if (!c)
        return role == Qt::ToolTipRole ? QVariant(QStringLiteral("not checked")) : QVariant();
    const bool ok = c->ok;
    switch (role) {
    case Qt::DisplayRole:
        return ok ? QStringLiteral("ok") : QStringLiteral("err");
    case Qt::TextAlignmentRole:
        return int(Qt::AlignCenter);
    case Qt::BackgroundRole:
        return QBrush(ok ? QColor(0xd8, 0xf0, 0xd8) : QColor(0xf6, 0xd0, 0xd0));
    case Qt::ToolTipRole: {
        QString tip = QStringLiteral("max abs err %1, max rel err %2, mismatches %3")
                          .arg(QString::number(c->maxAbsErr.value_or(0), 'g', 3),
                              QString::number(c->maxRelErr.value_or(0), 'g', 3), QString::number(c->mismatches));
        if (c->failureKind)
            tip += QStringLiteral("\n") + QLatin1String(core::protocol::failureKindName(*c->failureKind))
                + QStringLiteral(": ") + qs(c->failureMessage);
        // A NaN travels as null: it reads "null", as the result file has it.
        auto value = [](const std::optional<double>& v) { return v ? QString::number(*v, 'g', QLocale::FloatingPointShortest) : QStringLiteral("null"); };
        for (const auto& m : c->firstMismatches)
            tip += QStringLiteral("\n%1[%2]: got %3, want %4")
                       .arg(qs(m.output), QString::number(m.index), value(m.got), value(m.want));
        return tip;
    }
    default:
        return {};
    }
}

QVariant CorrectnessMatrixModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole || section < 0)
        return {};
    if (orientation == Qt::Horizontal)
        return section < m_columns.size() ? QVariant(m_columns[section]) : QVariant();
    return section < m_shapes.size() ? QVariant(m_shapes[section]) : QVariant();
}

// ---- EvidenceView -----------------------------------------------------------------------------

EvidenceView::EvidenceView(QWidget* parent)
    : QWidget(parent)
{
    auto* inner = new QWidget;
    auto* layout = new QVBoxLayout(inner);

    auto* correctnessBox = new QGroupBox(tr("Correctness (shape × seed)"));
    auto* cl = new QVBoxLayout(correctnessBox);
    m_correctnessState = new QLabel;
    m_correctnessState->setWordWrap(true);
    m_correctness = new CorrectnessMatrixModel(this);
    m_correctnessView = new QTableView;
    m_correctnessView->setModel(m_correctness);
    m_correctnessView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_correctnessView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_correctnessView->setMaximumHeight(220);
    cl->addWidget(m_correctnessState);
    cl->addWidget(m_correctnessView);
    layout->addWidget(correctnessBox);

    auto* timingBox = new QGroupBox(tr("Timing"));
    auto* tl = new QVBoxLayout(timingBox);
    m_timing = new QLabel;
    m_timing->setObjectName(QStringLiteral("timing"));
    m_timing->setWordWrap(true);
    m_timing->setTextInteractionFlags(Qt::TextSelectableByMouse);
    tl->addWidget(m_timing);
    layout->addWidget(timingBox);

    m_roofline = makeSection(tr("Roofline (baseline → candidate)"));
    m_occupancy = makeSection(tr("Occupancy (baseline → candidate)"));
    m_profile = makeSection(tr("Profiler metrics (baseline → candidate)"));
    layout->addWidget(m_roofline.box);
    layout->addWidget(m_occupancy.box);
    layout->addWidget(m_profile.box);
    layout->addStretch(1);

    auto* scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setWidget(inner);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(scroll);
    clear();
}

EvidenceView::Section EvidenceView::makeSection(const QString& title)
{
    Section s;
    s.box = new QGroupBox(title);
    auto* l = new QVBoxLayout(s.box);
    s.state = new QLabel;
    s.state->setWordWrap(true);
    s.table = new QTableWidget(0, 4);
    s.table->setHorizontalHeaderLabels({tr("metric"), tr("baseline"), tr("candidate"), tr("change")});
    s.table->verticalHeader()->setVisible(false);
    s.table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    s.table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    s.table->horizontalHeader()->setStretchLastSection(true);
    l->addWidget(s.state);
    l->addWidget(s.table);
    return s;
}

void EvidenceView::fill(Section& s, DeltaSection deltas)
{
    s.data = std::move(deltas);
    s.state->setText(s.data.why);
    s.state->setVisible(s.data.rows.empty());
    s.table->setVisible(!s.data.rows.empty());
    s.table->setRowCount(static_cast<int>(s.data.rows.size()));
    for (int r = 0; r < static_cast<int>(s.data.rows.size()); ++r) {
        const MetricDelta& d = s.data.rows[static_cast<size_t>(r)];
        const QString cells[] = {d.name, d.before, d.after, d.change};
        for (int c = 0; c < 4; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            if ((c == 1 || c == 2) && cells[c] == kNotMeasured)
                item->setForeground(QBrush(Qt::gray));
            s.table->setItem(r, c, item);
        }
    }
    s.table->setFixedHeight(s.table->horizontalHeader()->sizeHint().height()
        + s.table->verticalHeader()->length() + 2 * s.table->frameWidth() + 2);
}

void EvidenceView::clear()
{
    setResults(std::nullopt, std::nullopt);
}

void EvidenceView::setResults(const MaybeResult& candidate, const MaybeResult& baseline)
{
    m_correctness->setResult(candidate);
    const bool checked = m_correctness->rowCount() > 0;
    m_correctnessState->setText(!candidate
            ? tr("not measured: the candidate has not been evaluated yet")
            : tr("not measured: the candidate failed before its checks (%1)")
                  .arg(candidate->failure ? QLatin1String(core::protocol::failureKindName(candidate->failure->kind))
                                          : QLatin1String("no checks in the result")));
    m_correctnessState->setVisible(!checked);
    m_correctnessView->setVisible(checked);
    m_timing->setText(timingSummary(candidate));
    fill(m_roofline, rooflineDeltas(candidate, baseline));
    fill(m_occupancy, occupancyDeltas(candidate, baseline));
    fill(m_profile, profileDeltas(candidate, baseline));
}

QString EvidenceView::timingText() const
{
    return m_timing->text();
}

QString EvidenceView::sectionText(const QString& section) const
{
    const Section* s = section == QLatin1String("roofline") ? &m_roofline
        : section == QLatin1String("occupancy")             ? &m_occupancy
        : section == QLatin1String("profile")               ? &m_profile
                                                            : nullptr;
    if (!s)
        return {};
    if (s->data.rows.empty())
        return s->data.why;
    QStringList lines;
    for (const auto& d : s->data.rows)
        lines << QStringLiteral("%1: %2 → %3%4").arg(d.name, d.before, d.after,
                     d.change.isEmpty() ? QString() : QStringLiteral(" (") + d.change + QStringLiteral(")"));
    return lines.join(QLatin1Char('\n'));
}

} // namespace hone::views
