#include "views/kb_documents_model.h"

#include <QDateTime>
#include <QStringList>

namespace hone::views {

QString joinedList(const QStringList& items)
{
    return items.join(QStringLiteral(", "));
}

KbDocumentsModel::KbDocumentsModel(KnowledgeAccess* base, QObject* parent)
    : QAbstractTableModel(parent)
    , m_kb(base)
{
    reload();
}

void KbDocumentsModel::setKnowledgeBase(KnowledgeAccess* base)
{
    m_kb = base;
    reload();
}

void KbDocumentsModel::reload()
{
    // A small table that changes by whole documents: a reset is the honest signal.
    beginResetModel();
    m_docs.clear();
    if (m_kb)
        m_docs = m_kb->documents();
    endResetModel();
}

const KbDocument* KbDocumentsModel::document(int row) const
{
    return row >= 0 && row < static_cast<int>(m_docs.size()) ? &m_docs[static_cast<size_t>(row)] : nullptr;
}

int KbDocumentsModel::rowOf(const QString& uid) const
{
    for (size_t i = 0; i < m_docs.size(); ++i)
        if (m_docs[i].uid == uid)
            return static_cast<int>(i);
    return -1;
}

int KbDocumentsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_docs.size());
}

int KbDocumentsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant KbDocumentsModel::data(const QModelIndex& index, int role) const
{
    const KbDocument* d = index.isValid() ? document(index.row()) : nullptr;
    if (!d)
        return {};
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Title:
            return d->title;
        case Kind:
            return d->kind;
        case Tags: {
            QStringList parts;
            parts << d->tags.platform;
            parts << QStringLiteral("arch: ")
                    + (d->tags.arch.empty() ? QStringLiteral("any") : joinedList(d->tags.arch));
            parts << QStringLiteral("family: ")
                    + (d->tags.family.empty() ? QStringLiteral("any") : joinedList(d->tags.family));
            return parts.join(QStringLiteral("; "));
        }
        case Chunks:
            return d->chunks;
        case Added: {
            const auto t = QDateTime::fromString(d->createdAt, Qt::ISODateWithMs);
            return t.isValid() ? t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd hh:mm"))
                               : d->createdAt;
        }
        case Source:
            return d->origin;
        }
        break;
    case Qt::ToolTipRole:
        switch (index.column()) {
        case Title:
            return QStringLiteral("%1 (id %2, version %3, %4)")
                .arg(d->title, d->uid)
                .arg(d->version)
                .arg(d->format);
        case Tags:
            return QStringLiteral("platform %1\narch %2\nfamily %3\nsource %4\nversion %5")
                .arg(d->tags.platform, joinedList(d->tags.arch), joinedList(d->tags.family), d->tags.source,
                    d->tags.version);
        case Source:
            return d->origin;
        default:
            return {};
        }
    case Qt::TextAlignmentRole:
        if (index.column() == Chunks)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case UidRole:
        return d->uid;
    case DocIdRole:
        return static_cast<qlonglong>(d->id);
    default:
        break;
    }
    return {};
}

QVariant KbDocumentsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Title:
        return QStringLiteral("Title");
    case Kind:
        return QStringLiteral("Kind");
    case Tags:
        return QStringLiteral("Tags");
    case Chunks:
        return QStringLiteral("Chunks");
    case Added:
        return QStringLiteral("Added");
    case Source:
        return QStringLiteral("Source path");
    }
    return {};
}

} // namespace hone::views
