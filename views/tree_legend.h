#pragma once

#include <QColor>
#include <QString>
#include <QWidget>

class QComboBox;

namespace hone::views {

struct NodeInfo;
class SessionData;

/// What the tree writes under each node.
enum class NodeLabel { Speedup, Median, Cv, Bound, Visits, Id, None };

/// "40.7x", "1.23 ms", "cv 3.1%", "memory", "12 visits", "#17"; the root reads "root" whatever
/// the metric, a failed node "failed", a pending one "pending".
QString nodeLabelText(const NodeInfo& n, NodeLabel label);

/// Perceptually uniform (viridis) colour for t in [0, 1]: dark purple to yellow, readable in
/// grey and by the common colour-vision deficiencies.
QColor viridis(double t);

/// The colour scale of speedups: log-scaled over the session's range of passing candidates
/// (10th percentile to the best, at least a factor 2 wide), so that the nodes an engineer
/// compares (30x against 40x) differ visibly. Below the range is clamped to its first colour.
class SpeedupScale {
public:
    SpeedupScale() = default;
    SpeedupScale(double low, double high);
    /// The scale of a session's passing candidates (a default 0.5x–2x before there are any).
    static SpeedupScale of(const SessionData& data);

    double low() const { return m_low; }
    double high() const { return m_high; }
    /// 0 at low() (and below), 1 at high() (and above), log-linear between.
    double position(double speedup) const;
    QColor color(double speedup) const { return viridis(position(speedup)); }
    bool operator==(const SpeedupScale&) const = default;

private:
    double m_low = 0.5;
    double m_high = 2.0;
};

/// The strip under the tree: the label chooser, the colour bar of the speedup scale with its
/// ticks, and what the letters, rings and colours mean. It sits beside the tree, never over it.
class TreeLegend : public QWidget {
    Q_OBJECT
public:
    explicit TreeLegend(QWidget* parent = nullptr);

    NodeLabel label() const;
    void setLabel(NodeLabel label);
    const SpeedupScale& scale() const { return m_scale; }
    QComboBox* labelBox() const { return m_labelBox; }
    /// The legend's explanations, one per line (what a reader sees in the strip).
    QStringList entries() const;

public slots:
    void setScale(const SpeedupScale& scale);

signals:
    void labelChanged(hone::views::NodeLabel label);

private:
    class Bar;
    class Key;
    QComboBox* m_labelBox = nullptr;
    Bar* m_bar = nullptr;
    Key* m_key = nullptr;
    SpeedupScale m_scale;
};

} // namespace hone::views
