#pragma once

#include "core/eval_result.h"
#include "core/export_bundle.h"

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <optional>
#include <vector>

class QGroupBox;
class QLabel;
class QTableView;
class QTableWidget;

namespace hone::views {

/// One metric of the baseline (before) and the candidate (after), as shown.
struct MetricDelta {
    QString name;
    QString before;             // "not measured" when that side lacks it
    QString after;
    QString change;             // "+12.3%", "memory → compute"; empty when either side is missing
    bool measured = false;      // both sides have it
};

/// A section of deltas; `rows` is empty when nothing was measured, and `why` says why.
struct DeltaSection {
    std::vector<MetricDelta> rows;
    QString why;
};

/// A worker result, or none (not evaluated yet).
using MaybeResult = std::optional<core::protocol::EvalResult>;

/// Intensity, GFLOP/s, % bandwidth, % compute and bound of two worker results.
DeltaSection rooflineDeltas(const MaybeResult& candidate, const MaybeResult& baseline);
/// CUDA only: theoretical occupancy, registers, shared memory, limiter of the main kernel.
DeltaSection occupancyDeltas(const MaybeResult& candidate, const MaybeResult& baseline);
/// CUDA `profile` (Nsight Compute): DRAM %, SM %, achieved occupancy, top stalls.
DeltaSection profileDeltas(const MaybeResult& candidate, const MaybeResult& baseline);

/// The timing paragraph: medians with p10–p90 of both sides and the speedup with its 95%
/// interval (core::speedupInterval over the candidate's and the baseline's samples).
QString timingSummary(const MaybeResult& candidate);
/// 850 ns, 12.3 µs, 1.23 ms, 1.23 s.
QString formatNs(double ns);

/// Correctness of one result: one row per shape, one column per seed (a re-check after
/// timing gets its own column). A cell reads ok, err or empty (not checked).
class CorrectnessMatrixModel : public QAbstractTableModel {
    Q_OBJECT
public:
    using QAbstractTableModel::QAbstractTableModel;
    void setResult(const MaybeResult& result);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    /// The check at (row, column), or null.
    const core::protocol::Check* check(int row, int column) const;

private:
    QStringList m_shapes;
    QStringList m_columns;                       // "seed 1", ..., "seed 4 (after timing)"
    std::vector<std::vector<std::optional<core::protocol::Check>>> m_cells; // [row][column], none when not checked
};

/// The evidence of a candidate against the baseline: correctness matrix, timing with its
/// confidence interval, roofline, occupancy and profiler deltas, each with a clear
/// "not measured" state.
class EvidenceView : public QWidget {
    Q_OBJECT
public:
    explicit EvidenceView(QWidget* parent = nullptr);

    /// `candidate` and `baseline` are worker results (NodeInfo::result); either may be none.
    void setResults(const MaybeResult& candidate, const MaybeResult& baseline);
    void clear();

    CorrectnessMatrixModel* correctnessModel() const { return m_correctness; }
    QString timingText() const;
    /// The text shown in a section ("roofline", "occupancy", "profile"): a "not measured" line
    /// or its rows as "name: before → after (change)".
    QString sectionText(const QString& section) const;

private:
    struct Section {
        QGroupBox* box = nullptr;
        QLabel* state = nullptr;
        QTableWidget* table = nullptr;
        DeltaSection data;
    };
    Section makeSection(const QString& title);
    void fill(Section& s, DeltaSection deltas);

    CorrectnessMatrixModel* m_correctness = nullptr;
    QTableView* m_correctnessView = nullptr;
    QLabel* m_correctnessState = nullptr;
    QLabel* m_timing = nullptr;
    Section m_roofline;
    Section m_occupancy;
    Section m_profile;
};

} // namespace hone::views
