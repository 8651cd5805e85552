#pragma once

#include "core/eval_result.h"

#include <QAbstractTableModel>
#include <QString>

#include <vector>

namespace hone::views {

/// The correctness checks of one result (`checks[]`, FORMATS.md): a row per shape × seed. The
/// tooltip of a row lists its first mismatches and its failure.
class CorrectnessModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        ShapeColumn,
        SeedColumn,
        OkColumn,
        MaxAbsColumn,
        MaxRelColumn,
        MismatchesColumn,
        ColumnCount
    };
    using QAbstractTableModel::QAbstractTableModel;

    void setChecks(const std::vector<core::protocol::Check>& checks);
    int failedCount() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row {
        QString shape;
        qint64 seed = 0;
        bool ok = false;
        double maxAbs = 0;
        double maxRel = 0;
        qint64 mismatches = 0;
        QString details;
    };
    std::vector<Row> m_rows;
};

} // namespace hone::views
