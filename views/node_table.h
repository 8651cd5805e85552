#pragma once

#include "views/node_menu.h"

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QWidget>

#include <nlohmann/json.hpp>

class QComboBox;
class QLineEdit;
class QTableView;

namespace hone::views {

class NodeActions;
class SessionData;
class Selection;
struct NodeInfo;

/// "A=1 B=2" (keys in order); empty for no knobs.
QString compactKnobs(const nlohmann::json& knobs);
/// A duration given in nanoseconds: "850 ns", "12.3 µs", "4.56 ms", "1.20 s"; empty for <= 0.
QString formatDuration(double ns);

/// Every node of the session, one row per node (row == node id). Grows with nodesAdded
/// (beginInsertRows), refreshes with nodesChanged (dataChanged per contiguous run of ids), resets
/// only on sessionReset. Qt::UserRole gives the raw value for sorting (numbers as numbers).
class NodeTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Id, Parent, Source, Knobs, Origin, Op, Status, Speedup, Median, Bound, Bandwidth, Visits, Failure,
        ColumnCount };
    /// The node id of a row, in every column.
    static constexpr int NodeIdRole = Qt::UserRole + 1;

    explicit NodeTableModel(SessionData* session, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    const SessionData* session() const { return m_data; }

private:
    void onNodesAdded(qint64 first, qint64 last);
    void onNodesChanged(const QVector<qint64>& ids);
    void onReset();
    void refreshBest();
    QVariant display(const NodeInfo& n, int column) const;
    QVariant raw(const NodeInfo& n, int column) const;

    SessionData* m_data;
    int m_rows = 0; // what the views were told; the data may be ahead inside a signal
    qint64 m_best = -1;
};

/// Rows whose source, knobs, status, bound or failure contain the text (case-insensitive), and
/// whose status matches the status filter.
class NodeFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    enum class StatusFilter { All, Ok, Failed, Pending, Pruned };
    using QSortFilterProxyModel::QSortFilterProxyModel;

    void setText(const QString& text);
    QString text() const { return m_text; }
    void setStatusFilter(StatusFilter filter);
    StatusFilter statusFilter() const { return m_status; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    QString m_text;
    StatusFilter m_status = StatusFilter::All;
};

/// The node table panel: a filter line, a status combo and a sortable table of every node, its
/// current row synced with the Selection, the node context menu on every row.
class NodeTable : public QWidget {
    Q_OBJECT
public:
    NodeTable(SessionData* session, Selection* selection, NodeActions* actions, QWidget* parent = nullptr);

    /// How "Add hint…" asks for the text (default: a dialog).
    void setHintTextProvider(NodeMenu::HintTextProvider provider) { m_hintText = std::move(provider); }

    NodeTableModel* model() const { return m_model; }
    NodeFilterProxy* proxy() const { return m_proxy; }
    QTableView* view() const { return m_view; }
    QLineEdit* filterEdit() const { return m_filter; }
    QComboBox* statusCombo() const { return m_status; }

private:
    void onCurrentRowChanged(const QModelIndex& current);
    void onSelectionChanged(qint64 id);
    void showMenu(const QPoint& pos);

    SessionData* m_data;
    Selection* m_selection;
    NodeActions* m_actions;
    NodeTableModel* m_model;
    NodeFilterProxy* m_proxy;
    QTableView* m_view;
    QLineEdit* m_filter;
    QComboBox* m_status;
    NodeMenu::HintTextProvider m_hintText;
    bool m_syncing = false;
};

} // namespace hone::views
