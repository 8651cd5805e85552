#include "views/node_table.h"

#include "views/session_data.h"

#include <QBrush>
#include <QComboBox>
#include <QFont>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLineEdit>
#include <QMenu>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace hone::views {

QString compactKnobs(const nlohmann::json& knobs)
{
    if (!knobs.is_object())
        return {};
    QStringList parts;
    for (auto it = knobs.begin(); it != knobs.end(); ++it) {
        const std::string value = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
        parts << QString::fromStdString(it.key() + "=" + value);
    }
    return parts.join(QLatin1Char(' '));
}

QString formatDuration(double ns)
{
    if (!(ns > 0))
        return {};
    auto fmt = [](double v, const char* unit) {
        const int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
        return QString::number(v, 'f', decimals) + QLatin1Char(' ') + QString::fromUtf8(unit);
    };
    if (ns < 1e3)
        return QString::number(ns, 'f', 0) + QStringLiteral(" ns");
    if (ns < 1e6)
        return fmt(ns / 1e3, "µs");
    if (ns < 1e9)
        return fmt(ns / 1e6, "ms");
    return fmt(ns / 1e9, "s");
}

namespace {

QString statusColumnText(const NodeInfo& n)
{
    QString s = n.statusText();
    if (n.pruned)
        s += QStringLiteral(", pruned");
    if (n.boosted)
        s += QStringLiteral(", boosted");
    if (!n.slowerOn.isEmpty())
        s += QStringLiteral(", slower than baseline on ") + n.slowerOn.join(QStringLiteral(", "));
    if (n.screened)
        s += QStringLiteral(", screened (estimate)");
    return s;
}

QString failureText(const NodeInfo& n)
{
    if (n.failureKind.isEmpty() && n.failureMessage.isEmpty())
        return {};
    QString message = n.failureMessage.section(QLatin1Char('\n'), 0, 0).trimmed();
    if (message.size() > 160)
        message = message.left(157) + QStringLiteral("...");
    if (n.failureKind.isEmpty())
        return message;
    return message.isEmpty() ? n.failureKind : n.failureKind + QStringLiteral(": ") + message;
}

} // namespace

NodeTableModel::NodeTableModel(SessionData* session, QObject* parent)
    : QAbstractTableModel(parent)
    , m_data(session)
    , m_rows(session ? session->size() : 0)
{
    if (!session)
        return;
    connect(session, &SessionData::nodesAdded, this, &NodeTableModel::onNodesAdded);
    connect(session, &SessionData::nodesChanged, this, &NodeTableModel::onNodesChanged);
    connect(session, &SessionData::sessionReset, this, &NodeTableModel::onReset);
    m_best = session->bestNode();
}

int NodeTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_rows; }

int NodeTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant NodeTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return {};
    static const char* const names[ColumnCount] = {"Id", "Parent", "Source", "Knobs", "Origin", "Op", "Status",
        "Speedup", "Median", "Bound", "% BW", "Visits", "Failure"};
    static const char* const tips[ColumnCount] = {"Node id", "Parent node id", "Source file", "Knob assignment",
        "How the node was made", "Memory operator of the proposal", "Evaluation status", "Speedup over the baseline seed",
        "Median time on the bench shape", "What limits the kernel (roofline diagnosis)",
        "Achieved fraction of the peak bandwidth", "Evaluations in the node's subtree", "Why the evaluation failed"};
    if (role == Qt::DisplayRole)
        return tr(names[section]);
    if (role == Qt::ToolTipRole)
        return tr(tips[section]);
    return {};
}

QVariant NodeTableModel::display(const NodeInfo& n, int column) const
{
    const bool ok = n.status == NodeInfo::Status::Ok;
    switch (column) {
    case Id:
        return n.id;
    case Parent:
        return n.parent >= 0 ? QVariant(n.parent) : QVariant(QString());
    case Source:
        return n.sourceName;
    case Knobs:
        return compactKnobs(n.knobs);
    case Origin:
        return n.origin;
    case Op:
        return n.op;
    case Status:
        return statusColumnText(n);
    case Speedup:
        // A mark where a shape of the set runs slower than on the baseline (docs/SEARCH.md).
        return ok ? QString::number(n.speedup, 'f', 2) + QLatin1Char('x')
                + (n.slowerOn.isEmpty() ? QString() : QStringLiteral(" \u25BC"))
                  : QString();
    case Median:
        return formatDuration(n.medianNs);
    case Bound:
        return n.bound;
    case Bandwidth:
        return ok && n.fracBandwidth > 0 ? QString::number(n.fracBandwidth * 100, 'f', 1) + QLatin1Char('%') : QString();
    case Visits:
        return n.visits;
    case Failure:
        return failureText(n);
    default:
        return {};
    }
}

QVariant NodeTableModel::raw(const NodeInfo& n, int column) const
{
    switch (column) {
    case Id:
        return n.id;
    case Parent:
        return n.parent;
    case Status:
        // Sorts failed < pending < ok, successful ones by speedup.
        return n.status == NodeInfo::Status::Failed ? -2.0 : n.status == NodeInfo::Status::Pending ? -1.0 : n.speedup;
    case Speedup:
        return n.status == NodeInfo::Status::Ok ? n.speedup : 0.0;
    case Median:
        return n.medianNs;
    case Bandwidth:
        return n.fracBandwidth * 100;
    case Visits:
        return n.visits;
    default:
        return display(n, column);
    }
}

QVariant NodeTableModel::data(const QModelIndex& index, int role) const
{
    if (!m_data || !index.isValid() || index.row() >= m_rows || index.column() >= ColumnCount)
        return {};
    const NodeInfo* n = m_data->node(index.row());
    if (!n)
        return {};
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
        return display(*n, column);
    case Qt::UserRole:
        return raw(*n, column);
    case NodeIdRole:
        return n->id;
    case Qt::ToolTipRole:
        if (column == Failure && !n->failureMessage.isEmpty())
            return n->failureMessage;
        if (column == Knobs || column == Source || column == Status)
            return display(*n, column);
        if (column == Speedup && !n->slowerOn.isEmpty())
            return QStringLiteral("slower than the baseline on ") + n->slowerOn.join(QStringLiteral(", "));
        return {};
    case Qt::TextAlignmentRole:
        switch (column) {
        case Id:
        case Parent:
        case Speedup:
        case Median:
        case Bandwidth:
        case Visits:
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        default:
            return QVariant(Qt::AlignLeft | Qt::AlignVCenter);
        }
    case Qt::ForegroundRole:
        if (n->pruned)
            return QBrush(QColor(0x9e, 0x9e, 0x9e));
        if (n->status == NodeInfo::Status::Failed && (column == Status || column == Failure))
            return QBrush(QColor(0xc6, 0x28, 0x28));
        if (n->status == NodeInfo::Status::Pending)
            return QBrush(QColor(0x75, 0x75, 0x75));
        return {};
    case Qt::FontRole:
        if (n->id == m_data->bestNode()) {
            QFont f;
            f.setBold(true);
            return f;
        }
        return {};
    default:
        return {};
    }
}

void NodeTableModel::onNodesAdded(qint64 first, qint64 last)
{
    const int size = m_data->size();
    if (first != m_rows || last < first) {
        onReset(); // not the append this model expects: start over rather than show wrong rows
        return;
    }
    const int newRows = static_cast<int>(std::min<qint64>(last + 1, size));
    if (newRows > m_rows) {
        beginInsertRows({}, m_rows, newRows - 1);
        m_rows = newRows;
        endInsertRows();
    }
    refreshBest();
}

void NodeTableModel::onNodesChanged(const QVector<qint64>& ids)
{
    QVector<qint64> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    // One dataChanged per contiguous run of ids.
    qsizetype i = 0;
    while (i < sorted.size()) {
        const qint64 a = sorted[i];
        qint64 b = a;
        while (i + 1 < sorted.size() && sorted[i + 1] <= b + 1)
            b = sorted[++i];
        ++i;
        if (a < 0 || a >= m_rows)
            continue;
        b = std::min<qint64>(b, m_rows - 1);
        emit dataChanged(index(static_cast<int>(a), 0), index(static_cast<int>(b), ColumnCount - 1));
    }
    refreshBest();
}

void NodeTableModel::refreshBest()
{
    // The old best row loses its bold font without being among the changed nodes.
    const qint64 best = m_data->bestNode();
    if (best == m_best)
        return;
    for (qint64 row : {m_best, best})
        if (row >= 0 && row < m_rows)
            emit dataChanged(index(static_cast<int>(row), 0), index(static_cast<int>(row), ColumnCount - 1),
                {Qt::FontRole});
    m_best = best;
}

void NodeTableModel::onReset()
{
    beginResetModel();
    m_rows = m_data->size();
    m_best = m_data->bestNode();
    endResetModel();
}

void NodeFilterProxy::setText(const QString& text)
{
    const QString t = text.trimmed();
    if (t == m_text)
        return;
    m_text = t;
    invalidateFilter();
}

void NodeFilterProxy::setStatusFilter(StatusFilter filter)
{
    if (filter == m_status)
        return;
    m_status = filter;
    invalidateFilter();
}

bool NodeFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const
{
    if (sourceParent.isValid())
        return false;
    const auto* model = qobject_cast<const NodeTableModel*>(sourceModel());
    const NodeInfo* n = model && model->session() ? model->session()->node(sourceRow) : nullptr;
    if (!n)
        return false;
    switch (m_status) {
    case StatusFilter::All:
        break;
    case StatusFilter::Ok:
        if (n->status != NodeInfo::Status::Ok)
            return false;
        break;
    case StatusFilter::Failed:
        if (n->status != NodeInfo::Status::Failed)
            return false;
        break;
    case StatusFilter::Pending:
        if (n->status != NodeInfo::Status::Pending || n->parent < 0)
            return false;
        break;
    case StatusFilter::Pruned:
        if (!n->pruned)
            return false;
        break;
    }
    if (m_text.isEmpty())
        return true;
    const auto has = [this](const QString& s) { return s.contains(m_text, Qt::CaseInsensitive); };
    return has(n->sourceName) || has(compactKnobs(n->knobs)) || has(statusColumnText(*n)) || has(n->bound)
        || has(n->failureKind) || has(n->failureMessage);
}

NodeTable::NodeTable(SessionData* session, Selection* selection, NodeActions* actions, QWidget* parent)
    : QWidget(parent)
    , m_data(session)
    , m_selection(selection)
    , m_actions(actions)
    , m_model(new NodeTableModel(session, this))
    , m_proxy(new NodeFilterProxy(this))
    , m_view(new QTableView(this))
    , m_filter(new QLineEdit(this))
    , m_status(new QComboBox(this))
{
    m_filter->setPlaceholderText(tr("Filter: source, knobs, status, bound, failure"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setObjectName(QStringLiteral("nodeFilter"));
    m_status->addItems({tr("All"), tr("OK"), tr("Failed"), tr("Pending"), tr("Pruned")});
    m_status->setObjectName(QStringLiteral("statusFilter"));
    m_status->setToolTip(tr("Show only nodes with this status"));

    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(Qt::UserRole);
    m_proxy->setDynamicSortFilter(true);

    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(NodeTableModel::Id, Qt::AscendingOrder);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setAlternatingRowColors(true);
    m_view->setWordWrap(false);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    m_view->verticalHeader()->hide();
    // Fixed row heights and no resize-to-contents: both would measure every row on each batch.
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 6);
    auto* header = m_view->horizontalHeader();
    header->setSectionResizeMode(QHeaderView::Interactive);
    header->setStretchLastSection(true);
    const int em = m_view->fontMetrics().horizontalAdvance(QLatin1Char('m'));
    const int widths[NodeTableModel::ColumnCount] = {5, 5, 12, 16, 8, 7, 10, 7, 8, 8, 6, 5, 20};
    for (int c = 0; c < NodeTableModel::ColumnCount; ++c)
        header->resizeSection(c, widths[c] * em);

    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(0, 0, 0, 0);
    bar->addWidget(m_filter, 1);
    bar->addWidget(m_status);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(bar);
    layout->addWidget(m_view, 1);

    connect(m_filter, &QLineEdit::textChanged, m_proxy, &NodeFilterProxy::setText);
    connect(m_status, &QComboBox::currentIndexChanged, this,
        [this](int i) { m_proxy->setStatusFilter(static_cast<NodeFilterProxy::StatusFilter>(std::max(0, i))); });
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this](const QModelIndex& current) { onCurrentRowChanged(current); });
    connect(m_view, &QTableView::customContextMenuRequested, this, &NodeTable::showMenu);
    if (m_selection) {
        connect(m_selection, &Selection::currentChanged, this, &NodeTable::onSelectionChanged);
        // The current node may arrive before its row, or be filtered back in.
        auto resync = [this] { onSelectionChanged(m_selection->current()); };
        connect(m_model, &QAbstractItemModel::rowsInserted, this, resync);
        connect(m_model, &QAbstractItemModel::modelReset, this, resync);
        connect(m_proxy, &QAbstractItemModel::rowsInserted, this, [this](const QModelIndex&, int, int) {
            if (!m_view->selectionModel()->currentIndex().isValid())
                onSelectionChanged(m_selection->current());
        });
        onSelectionChanged(m_selection->current());
    }
}

void NodeTable::onCurrentRowChanged(const QModelIndex& current)
{
    if (m_syncing || !m_selection || !current.isValid())
        return;
    m_selection->setCurrent(current.data(NodeTableModel::NodeIdRole).toLongLong());
}

void NodeTable::onSelectionChanged(qint64 id)
{
    auto* sel = m_view->selectionModel();
    const QModelIndex proxyIndex
        = id >= 0 && id < m_model->rowCount() ? m_proxy->mapFromSource(m_model->index(static_cast<int>(id), 0)) : QModelIndex();
    if (proxyIndex.isValid() && sel->currentIndex().row() == proxyIndex.row() && sel->isRowSelected(proxyIndex.row()))
        return;
    m_syncing = true;
    if (proxyIndex.isValid()) {
        sel->setCurrentIndex(proxyIndex, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        m_view->scrollTo(proxyIndex);
    } else {
        sel->clear();
    }
    m_syncing = false;
}

void NodeTable::showMenu(const QPoint& pos)
{
    const QModelIndex index = m_view->indexAt(pos);
    if (!index.isValid())
        return;
    const qint64 id = index.data(NodeTableModel::NodeIdRole).toLongLong();
    QMenu menu(this);
    NodeMenu::build(menu, id, m_data, m_selection, m_actions, m_hintText ? m_hintText : NodeMenu::dialogHintText(this));
    menu.exec(m_view->viewport()->mapToGlobal(pos));
}

} // namespace hone::views
