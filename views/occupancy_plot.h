#pragma once

#include "views/occupancy_calc.h"
#include "views/session_data.h"

#include <QWidget>

class QCustomPlot;
class QCPGraph;
class QCPItemText;
class QCPTextElement;
class QLabel;
class QStackedLayout;

namespace hone::views {

/// The selected CUDA candidate's theoretical occupancy against block size (32..1024), with what
/// the register and shared-memory limits alone would allow as dashed lines and the candidate's
/// own block size marked. Registers and shared memory come from the result's
/// `occupancy.kernels[main_kernel]` (or `compile.resources`); the device's limits from its
/// architecture. CPU candidates get an explanation instead.
class OccupancyPlot : public QWidget {
    Q_OBJECT
public:
    OccupancyPlot(SessionData* sessionData, Selection* selection, QWidget* parent = nullptr);

    /// Shows node `id` (what the selection does); -1 shows the empty state.
    void showNode(qint64 id);

    QCustomPlot* plot() const { return m_plot; }
    qint64 shownNode() const { return m_node; }
    bool isEmptyState() const;
    QString emptyText() const;
    /// The device limits in use ("sm_90"), empty in the empty state.
    QString arch() const { return m_arch; }
    /// The candidate's block size on the plot, -1 when none is marked.
    int markedBlockSize() const { return m_markedBlock; }
    /// Its occupancy (0..1) by the calculator; -1 when none is marked.
    double markedOccupancy() const { return m_markedOccupancy; }
    QString markerLabel() const;
    /// The kernel, its resources and the device, as the plot's heading says them.
    QString heading() const;
    QCPGraph* occupancyCurve() const { return m_total; }
    QCPGraph* registerLimitCurve() const { return m_registers; }
    QCPGraph* sharedLimitCurve() const { return m_shared; }
    QCPGraph* slotLimitCurve() const { return m_slots; }
    QCPGraph* marker() const { return m_marker; }

private:
    void refresh();
    void showEmpty(const QString& why);

    SessionData* m_data;
    Selection* m_selection;
    QStackedLayout* m_stack = nullptr;
    QLabel* m_empty = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPTextElement* m_title = nullptr;
    QCPGraph* m_total = nullptr;
    QCPGraph* m_registers = nullptr;
    QCPGraph* m_shared = nullptr;
    QCPGraph* m_slots = nullptr;
    QCPGraph* m_marker = nullptr;
    QCPItemText* m_label = nullptr;

    qint64 m_node = -1;
    QString m_arch;
    int m_markedBlock = -1;
    double m_markedOccupancy = -1;
};

} // namespace hone::views
