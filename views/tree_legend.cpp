#include "views/tree_legend.h"

#include "views/node_table.h"
#include "views/session_data.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QRegularExpression>
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace hone::views {

namespace {

QString speedupText(double s)
{
    return QString::number(s, 'f', s >= 100 ? 0 : s >= 10 ? 1 : 2) + QLatin1Char('x');
}

} // namespace

QString nodeLabelText(const NodeInfo& n, NodeLabel label)
{
    if (n.parent < 0)
        return QStringLiteral("root");
    if (label == NodeLabel::None)
        return {};
    if (label == NodeLabel::Id)
        return QStringLiteral("#%1").arg(n.id);
    if (label == NodeLabel::Visits)
        return QStringLiteral("%1 visits").arg(n.visits);
    if (n.status == NodeInfo::Status::Pending)
        return QStringLiteral("pending");
    if (n.status == NodeInfo::Status::Failed)
        return QStringLiteral("failed");
    switch (label) {
    case NodeLabel::Speedup:
        return speedupText(n.speedup) + (n.screened ? QStringLiteral("?") : QString());
    case NodeLabel::Median:
        return formatDuration(n.medianNs);
    case NodeLabel::Cv:
        return QStringLiteral("cv %1%").arg(100.0 * n.cv, 0, 'f', 1);
    case NodeLabel::Bound:
        return n.bound.isEmpty() ? QStringLiteral("?") : n.bound;
    default:
        return {};
    }
}

QColor viridis(double t)
{
    // matplotlib's viridis at t = 0, 0.1, ..., 1 (linear in between is within a shade of it).
    static constexpr std::array<std::array<int, 3>, 11> kStops = {{{68, 1, 84}, {72, 36, 117}, {65, 68, 135},
        {53, 95, 141}, {42, 120, 142}, {33, 145, 140}, {34, 168, 132}, {68, 191, 112}, {122, 209, 81},
        {189, 223, 38}, {253, 231, 37}}};
    if (!std::isfinite(t))
        t = 0;
    t = std::clamp(t, 0.0, 1.0) * 10.0;
    const int i = std::min(9, static_cast<int>(t));
    const double f = t - i;
    auto lerp = [&](int c) {
        return static_cast<int>(std::lround(kStops[static_cast<size_t>(i)][static_cast<size_t>(c)] * (1 - f)
            + kStops[static_cast<size_t>(i + 1)][static_cast<size_t>(c)] * f));
    };
    return QColor(lerp(0), lerp(1), lerp(2));
}

SpeedupScale::SpeedupScale(double low, double high)
    : m_low(std::max(low, 1e-6))
    , m_high(std::max(high, m_low * 1.0001))
{
}

SpeedupScale SpeedupScale::of(const SessionData& data)
{
    std::vector<double> ok;
    for (const auto& n : data.nodes())
        if (n.parent >= 0 && n.status == NodeInfo::Status::Ok && n.speedup > 0 && std::isfinite(n.speedup))
            ok.push_back(n.speedup);
    if (ok.empty())
        return {};
    std::sort(ok.begin(), ok.end());
    const double high = ok.back();
    double low = ok[static_cast<size_t>(std::floor(0.1 * static_cast<double>(ok.size() - 1)))];
    // A narrow range would make equal-looking numbers look far apart.
    low = std::min(low, high / 2);
    return SpeedupScale(low, high);
}

double SpeedupScale::position(double speedup) const
{
    if (!(speedup > 0))
        return 0;
    return std::clamp(std::log(speedup / m_low) / std::log(m_high / m_low), 0.0, 1.0);
}

/// The colour bar with ticks at 1-1.5-2-3-5-7 steps where they fit (and the two ends).
class TreeLegend::Bar : public QWidget {
public:
    explicit Bar(QWidget* parent)
        : QWidget(parent)
    {
        setMinimumSize(120, 30);
        setMaximumWidth(360);
        setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    }
    void setScale(const SpeedupScale& s)
    {
        m_scale = s;
        update();
    }

protected:
    void paintEvent(QPaintEvent*) override
    {
        QPainter p(this);
        p.setRenderHint(QPainter::Antialiasing, true);
        const QRectF bar(8, 2, width() - 16, 11);
        QLinearGradient g(bar.topLeft(), bar.topRight());
        for (int i = 0; i <= 10; ++i)
            g.setColorAt(i / 10.0, viridis(i / 10.0));
        p.fillRect(bar, g);
        p.setPen(palette().color(QPalette::Mid));
        p.drawRect(bar);
        QFont f = font();
        f.setPixelSize(10);
        p.setFont(f);
        p.setPen(palette().color(QPalette::WindowText));
        auto tick = [&](double v, const QString& text) {
            const double x = bar.left() + m_scale.position(v) * bar.width();
            p.drawLine(QPointF(x, bar.bottom()), QPointF(x, bar.bottom() + 3));
            // Kept inside the widget: the end labels align to the bar's ends.
            const double left = std::clamp(x - 30, 0.0, std::max(0.0, width() - 60.0));
            p.drawText(QRectF(left, bar.bottom() + 3, 60, 13),
                (x - 30 < left ? Qt::AlignLeft : x - 30 > left ? Qt::AlignRight : Qt::AlignHCenter) | Qt::AlignTop, text);
        };
        // Ends first; inner ticks only where they leave room for the end labels.
        const double lo = m_scale.low(), hi = m_scale.high();
        tick(lo, QStringLiteral("≤") + speedupText(lo));
        tick(hi, speedupText(hi));
        const double minGap = 56.0 / std::max(1.0, bar.width()); // a label's width and a gap
        double last = 0; // the last labelled position: labels never overlap
        for (double decade = std::pow(10.0, std::floor(std::log10(lo))); decade <= hi; decade *= 10)
            for (double m : {1.0, 1.5, 2.0, 3.0, 5.0, 7.0}) {
                const double v = decade * m;
                const double at = m_scale.position(v);
                if (v > lo && v < hi && at - last >= minGap && at < 1 - minGap) {
                    tick(v, speedupText(v));
                    last = at;
                }
            }
    }

private:
    SpeedupScale m_scale;
};

/// The key: one line of coloured symbols and words, wrapped to the width.
class TreeLegend::Key : public QLabel {
public:
    using QLabel::QLabel;
};

TreeLegend::TreeLegend(QWidget* parent)
    : QWidget(parent)
{
    m_labelBox = new QComboBox;
    m_labelBox->setObjectName(QStringLiteral("nodeLabel"));
    m_labelBox->addItem(tr("speedup"), static_cast<int>(NodeLabel::Speedup));
    m_labelBox->addItem(tr("median time"), static_cast<int>(NodeLabel::Median));
    m_labelBox->addItem(tr("timing CV"), static_cast<int>(NodeLabel::Cv));
    m_labelBox->addItem(tr("bound"), static_cast<int>(NodeLabel::Bound));
    m_labelBox->addItem(tr("visits"), static_cast<int>(NodeLabel::Visits));
    m_labelBox->addItem(tr("node id"), static_cast<int>(NodeLabel::Id));
    m_labelBox->addItem(tr("none"), static_cast<int>(NodeLabel::None));
    m_labelBox->setToolTip(tr("What each node's label shows"));
    m_bar = new Bar(this);
    m_bar->setObjectName(QStringLiteral("colourBar"));
    m_bar->setToolTip(tr("Fill colour: speedup over the baseline, log scale from the session's 10th percentile "
                         "to its best (viridis); red is a failed candidate"));
    m_key = new Key;
    m_key->setObjectName(QStringLiteral("treeKey"));
    m_key->setWordWrap(true);
    m_key->setTextFormat(Qt::RichText);
    const QStringList parts = {
        QStringLiteral("<span style='color:#455a64'>&#9679;</span> root"),
        QStringLiteral("<b>I C M R</b>: memory operator (inherit, compare, combine, restart)"),
        QStringLiteral("<span style='color:#e53935'>&#9679;</span> failed"),
        QStringLiteral("<span style='color:#9e9e9e'>&#9675;</span> pending"),
        QStringLiteral("<span style='color:#ffb300'>&#9711;</span> best"),
        QStringLiteral("<span style='color:#1e88e5'>&#9711;</span> selected"),
        QStringLiteral("<span style='color:#6a1b9a'>&#9650;</span> boosted"),
        QStringLiteral("faded: pruned"),
        QStringLiteral("size: visits"),
    };
    m_key->setText(QStringLiteral("<small>") + parts.join(QStringLiteral(" &nbsp; ")) + QStringLiteral("</small>"));

    auto* top = new QHBoxLayout;
    top->setContentsMargins(0, 0, 0, 0);
    top->addWidget(new QLabel(tr("Label")));
    top->addWidget(m_labelBox);
    top->addSpacing(12);
    top->addWidget(new QLabel(tr("Colour")));
    top->addWidget(m_bar, 1);
    top->addStretch(0);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 2, 6, 2);
    layout->setSpacing(1);
    layout->addLayout(top);
    layout->addWidget(m_key);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);

    connect(m_labelBox, &QComboBox::currentIndexChanged, this, [this] { emit labelChanged(label()); });
}

NodeLabel TreeLegend::label() const { return static_cast<NodeLabel>(m_labelBox->currentData().toInt()); }

void TreeLegend::setLabel(NodeLabel label)
{
    const int i = m_labelBox->findData(static_cast<int>(label));
    if (i >= 0)
        m_labelBox->setCurrentIndex(i);
}

QStringList TreeLegend::entries() const
{
    QString text = m_key->text();
    text.remove(QRegularExpression(QStringLiteral("<[^>]*>")));
    text.replace(QStringLiteral("&#9679;"), QStringLiteral("●"))
        .replace(QStringLiteral("&#9675;"), QStringLiteral("○"))
        .replace(QStringLiteral("&#9711;"), QStringLiteral("◯"))
        .replace(QStringLiteral("&#9650;"), QStringLiteral("▲"));
    QStringList out;
    for (const QString& s : text.split(QStringLiteral("&nbsp;"), Qt::SkipEmptyParts))
        if (!s.trimmed().isEmpty())
            out << s.trimmed();
    return out;
}

void TreeLegend::setScale(const SpeedupScale& scale)
{
    if (scale == m_scale)
        return;
    m_scale = scale;
    m_bar->setScale(scale);
}

} // namespace hone::views
