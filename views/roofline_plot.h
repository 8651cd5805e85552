#pragma once

#include "views/session_data.h"

#include <QPointF>
#include <QTimer>
#include <QWidget>

#include <array>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QCPCurve;
class QCPItemText;
class QCPTextElement;
class QLabel;
class QStackedLayout;

namespace hone::views {

/// The session's candidates on a log-log roofline: arithmetic intensity (FLOP/byte) against
/// achieved GFLOP/s, under the device's bandwidth slope and compute roof. One scatter graph per
/// bound (so thousands of points cost a handful of plottables), the best-so-far trajectory as a
/// line, the selected node outlined. Clicking a point selects its node. Data arrive in batches;
/// the plot catches up at most every 100 ms.
class RooflinePlot : public QWidget {
    Q_OBJECT
public:
    /// The categories points are coloured by: the diagnosis' bound of an ok candidate.
    enum Category { Memory, Compute, Latency, Occupancy, Unclassified, CategoryCount };

    RooflinePlot(SessionData* sessionData, Selection* selection, QWidget* parent = nullptr);

    /// Applies pending changes and replots now (the timer does this on its own).
    void flush();

    QCustomPlot* plot() const { return m_plot; }
    /// Points on the plot (ok candidates with a roofline point).
    int pointCount() const;
    /// Evaluated candidates that failed (counted in the legend, not plotted).
    int failedCount() const { return m_failed; }
    /// True while the empty-state text shows instead of the plot.
    bool isEmptyState() const;
    QString emptyText() const;
    QCPGraph* categoryGraph(Category c) const { return m_graphs[static_cast<size_t>(c)]; }
    QCPGraph* bandwidthRoof() const { return m_bandwidthRoof; }
    QCPGraph* computeRoof() const { return m_computeRoof; }
    QCPGraph* selectedMarker() const { return m_selectedGraph; }
    QCPCurve* trajectory() const { return m_trajectory; }
    QString bandwidthLabel() const;
    QString computeLabel() const;
    QString failedNote() const;

    /// The plotted node nearest to a pixel of the plot widget, within `radiusPx`; -1 for none.
    qint64 nodeAtPixel(const QPointF& pixel, double radiusPx = 12) const;
    /// Selects the plotted node nearest to a data coordinate (intensity, GFLOP/s), measured on
    /// screen; returns it, or -1 when no point lies within 12 pixels.
    qint64 selectNearest(double intensity, double gflops);

private:
    struct Entry {
        int category = -1; // -1: not plotted
        double x = 0;
        double y = 0;
        bool failed = false;
    };

    void reset();
    void schedule();
    void markPending(qint64 first, qint64 last);
    void markPending(const QVector<qint64>& ids);
    void rebuildCategory(int category);
    void updateCeilings();
    void updateTrajectory();
    void updateSelection();
    void updateRanges();
    void updateLegendNote();
    void onMousePress(QMouseEvent* e);
    void onMouseRelease(QMouseEvent* e);
    static int categoryOf(const NodeInfo& n);

    SessionData* m_data;
    Selection* m_selection;
    QStackedLayout* m_stack = nullptr;
    QLabel* m_empty = nullptr;
    QCustomPlot* m_plot = nullptr;
    std::array<QCPGraph*, CategoryCount> m_graphs {};
    QCPGraph* m_bandwidthRoof = nullptr;
    QCPGraph* m_computeRoof = nullptr;
    QCPGraph* m_selectedGraph = nullptr;
    QCPGraph* m_failedGraph = nullptr; // legend note only, no data
    QCPCurve* m_trajectory = nullptr;
    QCPItemText* m_bandwidthText = nullptr;
    QCPItemText* m_computeText = nullptr;
    QCPTextElement* m_title = nullptr;

    std::vector<Entry> m_entries; // by node id
    std::vector<qint64> m_pending;
    bool m_needsFull = true;
    int m_failed = 0;
    bool m_autoRange = true;
    QPoint m_pressPos;
    QTimer m_timer;
};

} // namespace hone::views
