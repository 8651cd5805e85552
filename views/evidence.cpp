#include "views/evidence.h"

#include <QBrush>
#include <QColor>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
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

const nlohmann::json& member(const nlohmann::json& j, const char* key)
{
    static const nlohmann::json null;
    if (!j.is_object())
        return null;
    const auto it = j.find(key);
    return it == j.end() ? null : *it;
}

std::optional<double> number(const nlohmann::json& j, const char* key)
{
    const auto& v = member(j, key);
    if (!v.is_number())
        return std::nullopt;
    return v.get<double>();
}

QString text(const nlohmann::json& j, const char* key)
{
    const auto& v = member(j, key);
    return v.is_string() ? QString::fromStdString(v.get<std::string>()) : QString();
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

/// The headline kernel of an `occupancy` object: the one named main_kernel, else the first.
const nlohmann::json& mainKernel(const nlohmann::json& occupancy)
{
    static const nlohmann::json null;
    const auto& kernels = member(occupancy, "kernels");
    if (!kernels.is_array() || kernels.empty())
        return null;
    const QString name = text(occupancy, "main_kernel");
    for (const auto& k : kernels)
        if (text(k, "name") == name)
            return k;
    return kernels.front();
}

std::optional<double> smemOf(const nlohmann::json& kernel)
{
    const auto s = number(kernel, "static_smem");
    const auto d = number(kernel, "dynamic_smem");
    if (!s && !d)
        return std::nullopt;
    return s.value_or(0) + d.value_or(0);
}

QString stallsOf(const nlohmann::json& main)
{
    const auto& stalls = member(main, "stalls");
    if (!stalls.is_array())
        return {};
    QStringList parts;
    for (const auto& s : stalls)
        parts << text(s, "reason") + QStringLiteral(" ") + fixed(number(s, "pct").value_or(0), 1) + QStringLiteral("%");
    return parts.join(QStringLiteral(", "));
}

QString notTimedReason(const nlohmann::json& candidate)
{
    if (candidate.is_null())
        return QStringLiteral("not measured: the candidate has not been evaluated yet");
    const auto& failure = member(candidate, "failure");
    if (failure.is_object())
        return QStringLiteral("not measured: the candidate failed (%1 in %2)").arg(text(failure, "kind"), text(failure, "stage"));
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

DeltaSection rooflineDeltas(const nlohmann::json& candidate, const nlohmann::json& baseline)
{
    DeltaSection s;
    const auto& after = member(candidate, "roofline");
    const auto& before = member(baseline, "roofline");
    if (!after.is_object()) {
        s.why = candidate.is_null() ? QStringLiteral("not measured: the candidate has not been evaluated yet")
                                    : QStringLiteral("not measured: the candidate has no roofline (it was not timed)");
        return s;
    }
    auto fmt1 = [](double v) { return QString::number(v, 'g', 3); };
    s.rows.push_back(numericRow(QStringLiteral("intensity (FLOP/B)"), number(before, "intensity"), number(after, "intensity"), fmt1));
    s.rows.push_back(numericRow(QStringLiteral("GFLOP/s"), number(before, "gflops"), number(after, "gflops"), fmt1));
    s.rows.push_back(numericRow(QStringLiteral("GB/s"), number(before, "gbps"), number(after, "gbps"), fmt1));
    s.rows.push_back(numericRow(QStringLiteral("% of bandwidth"), number(before, "frac_bandwidth"),
        number(after, "frac_bandwidth"), percent, true));
    s.rows.push_back(numericRow(QStringLiteral("% of compute"), number(before, "frac_compute"),
        number(after, "frac_compute"), percent, true));
    s.rows.push_back(textRow(QStringLiteral("bound"), text(member(baseline, "diagnosis"), "bound"),
        text(member(candidate, "diagnosis"), "bound")));
    return s;
}

DeltaSection occupancyDeltas(const nlohmann::json& candidate, const nlohmann::json& baseline)
{
    DeltaSection s;
    const auto& after = member(candidate, "occupancy");
    const auto& before = member(baseline, "occupancy");
    if (!after.is_object()) {
        const QString backend = text(member(candidate, "environment"), "backend");
        s.why = backend == QLatin1String("cpu") || backend.isEmpty()
            ? QStringLiteral("not measured: occupancy is measured for CUDA candidates only")
            : QStringLiteral("not measured: the evaluation recorded no launch (it was not timed)");
        return s;
    }
    if (after.contains("error")) {
        s.why = QStringLiteral("not measured: ") + text(after, "error");
        return s;
    }
    const auto& ka = mainKernel(after);
    const auto& kb = mainKernel(before);
    s.rows.push_back(numericRow(QStringLiteral("theoretical occupancy"), number(before, "theoretical"),
        number(after, "theoretical"), percent, true));
    s.rows.push_back(numericRow(QStringLiteral("registers per thread"), number(kb, "registers"), number(ka, "registers"),
        [](double v) { return QString::number(static_cast<qint64>(v)); }));
    s.rows.push_back(numericRow(QStringLiteral("shared memory per block"), smemOf(kb), smemOf(ka), bytes));
    s.rows.push_back(textRow(QStringLiteral("limiter"), text(before, "limiter"), text(after, "limiter")));
    s.rows.push_back(textRow(QStringLiteral("main kernel"), text(before, "main_kernel"), text(after, "main_kernel")));
    return s;
}

DeltaSection profileDeltas(const nlohmann::json& candidate, const nlohmann::json& baseline)
{
    DeltaSection s;
    const auto& after = member(candidate, "profile");
    const auto& before = member(baseline, "profile");
    if (!after.is_object()) {
        s.why = QStringLiteral("not measured: no profiler stage ran for this candidate (CUDA only; `hone bench` "
                               "profiles the best kernel)");
        return s;
    }
    if (after.contains("error")) {
        s.why = QStringLiteral("not measured: ") + text(after, "error");
        return s;
    }
    const auto& ma = member(after, "main");
    const auto& mb = member(before, "main");
    auto pct = [](double v) { return fixed(v, 1) + QStringLiteral("%"); };
    auto asFraction = [](std::optional<double> v) { return v ? std::optional<double>(*v / 100.0) : v; };
    s.rows.push_back(numericRow(QStringLiteral("DRAM throughput"), asFraction(number(mb, "dram_pct")),
        asFraction(number(ma, "dram_pct")), [&](double v) { return pct(100.0 * v); }, true));
    s.rows.push_back(numericRow(QStringLiteral("SM throughput"), asFraction(number(mb, "sm_pct")),
        asFraction(number(ma, "sm_pct")), [&](double v) { return pct(100.0 * v); }, true));
    s.rows.push_back(numericRow(QStringLiteral("achieved occupancy"), asFraction(number(mb, "achieved_occupancy_pct")),
        asFraction(number(ma, "achieved_occupancy_pct")), [&](double v) { return pct(100.0 * v); }, true));
    s.rows.push_back(textRow(QStringLiteral("top stalls"), stallsOf(mb), stallsOf(ma)));
    return s;
}

QString timingSummary(const nlohmann::json& candidate)
{
    const auto& timing = member(candidate, "timing");
    if (!timing.is_object() || !number(timing, "median_ns"))
        return notTimedReason(candidate);
    auto side = [](const nlohmann::json& t) {
        return QStringLiteral("median %1 (p10 %2 – p90 %3, CV %4%)")
            .arg(formatNs(number(t, "median_ns").value_or(0)), formatNs(number(t, "p10_ns").value_or(0)),
                formatNs(number(t, "p90_ns").value_or(0)), fixed(100.0 * number(t, "cv").value_or(0), 1));
    };
    const auto& samples = member(timing, "samples_ns");
    QStringList lines;
    lines << QStringLiteral("Candidate: ") + side(timing)
            + (samples.is_array() ? QStringLiteral(", n=%1").arg(samples.size()) : QString());
    const auto& base = member(timing, "baseline");
    if (!base.is_object()) {
        lines << QStringLiteral("Baseline: not measured with this candidate");
        return lines.join(QLatin1Char('\n'));
    }
    lines << QStringLiteral("Baseline: ") + side(base);
    const double speedup = number(timing, "speedup").value_or(0);
    const core::SpeedupInterval ci = core::speedupInterval(timing);
    QString s = QStringLiteral("Speedup %1x").arg(fixed(speedup, 2));
    if (ci.valid)
        s += QStringLiteral(", 95% CI %1x – %2x (median of %3 paired ratios, exact coverage %4%)")
                 .arg(fixed(ci.low, 2), fixed(ci.high, 2), QString::number(ci.pairs), fixed(100.0 * ci.coverage, 1));
    else
        s += QStringLiteral(" (no interval: %1)").arg(QString::fromStdString(ci.why));
    lines << s;
    return lines.join(QLatin1Char('\n'));
}

// ---- CorrectnessMatrixModel ----------------------------------------------------------------

void CorrectnessMatrixModel::setResult(const nlohmann::json& result)
{
    beginResetModel();
    m_shapes.clear();
    m_columns.clear();
    m_cells.clear();
    const auto& checks = member(result, "checks");
    if (checks.is_array()) {
        for (const auto& c : checks) {
            const QString shape = text(c, "shape");
            const auto seed = member(c, "seed");
            const QString column = QStringLiteral("seed ") + QString::fromStdString(seed.dump())
                + (member(c, "after_timing").is_boolean() && c["after_timing"].get<bool>() ? QStringLiteral(" (after timing)")
                                                                                           : QString());
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

const nlohmann::json* CorrectnessMatrixModel::check(int row, int column) const
{
    if (row < 0 || column < 0 || row >= rowCount() || column >= columnCount())
        return nullptr;
    const auto& c = m_cells[static_cast<size_t>(row)][static_cast<size_t>(column)];
    return c.is_null() ? nullptr : &c;
}

QVariant CorrectnessMatrixModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid())
        return {};
    const nlohmann::json* c = check(index.row(), index.column());
    if (!c)
        return role == Qt::ToolTipRole ? QVariant(QStringLiteral("not checked")) : QVariant();
    const bool ok = member(*c, "ok").is_boolean() && (*c)["ok"].get<bool>();
    switch (role) {
    case Qt::DisplayRole:
        return ok ? QStringLiteral("ok") : QStringLiteral("err");
    case Qt::TextAlignmentRole:
        return int(Qt::AlignCenter);
    case Qt::BackgroundRole:
        return QBrush(ok ? QColor(0xd8, 0xf0, 0xd8) : QColor(0xf6, 0xd0, 0xd0));
    case Qt::ToolTipRole: {
        QString tip = QStringLiteral("max abs err %1, max rel err %2, mismatches %3")
                          .arg(QString::number(number(*c, "max_abs_err").value_or(0), 'g', 3),
                              QString::number(number(*c, "max_rel_err").value_or(0), 'g', 3),
                              QString::number(static_cast<qint64>(number(*c, "mismatches").value_or(0))));
        if (const auto& f = member(*c, "failure"); f.is_object())
            tip += QStringLiteral("\n") + text(f, "kind") + QStringLiteral(": ") + text(f, "message");
        const auto& first = member(*c, "first_mismatches");
        if (first.is_array())
            for (const auto& m : first)
                tip += QStringLiteral("\n%1[%2]: got %3, want %4")
                           .arg(text(m, "output"), QString::fromStdString(member(m, "index").dump()),
                               QString::fromStdString(member(m, "got").dump()), QString::fromStdString(member(m, "want").dump()));
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
    setResults(nlohmann::json(), nlohmann::json());
}

void EvidenceView::setResults(const nlohmann::json& candidate, const nlohmann::json& baseline)
{
    m_correctness->setResult(candidate);
    const bool checked = m_correctness->rowCount() > 0;
    m_correctnessState->setText(candidate.is_null()
            ? tr("not measured: the candidate has not been evaluated yet")
            : tr("not measured: the candidate failed before its checks (%1)")
                  .arg(QString::fromStdString(member(member(candidate, "failure"), "kind").is_string()
                          ? candidate["failure"]["kind"].get<std::string>()
                          : std::string("no checks in the result"))));
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
