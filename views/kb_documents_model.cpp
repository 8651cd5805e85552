#include "views/kb_documents_model.h"

#include <QDateTime>
#include <QStringList>

namespace hone::views {

namespace kb = hone::knowledge;

namespace {

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

} // namespace

QString joinedList(const std::vector<std::string>& items)
{
    QStringList out;
    for (const auto& i : items)
        out << qs(i);
    return out.join(QStringLiteral(", "));
}

KbDocumentsModel::KbDocumentsModel(kb::KnowledgeBase* base, QObject* parent)
    : QAbstractTableModel(parent)
    , m_kb(base)
{
    reload();
}

void KbDocumentsModel::setKnowledgeBase(kb::KnowledgeBase* base)
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

const kb::DocumentInfo* KbDocumentsModel::document(int row) const
{
    return row >= 0 && row < static_cast<int>(m_docs.size()) ? &m_docs[static_cast<size_t>(row)] : nullptr;
}

int KbDocumentsModel::rowOf(const QString& uid) const
{
    const std::string u = uid.toStdString();
    for (size_t i = 0; i < m_docs.size(); ++i)
        if (m_docs[i].uid == u)
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
    const kb::DocumentInfo* d = index.isValid() ? document(index.row()) : nullptr;
    if (!d)
        return {};
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Title:
            return qs(d->title);
        case Kind:
            return QString::fromLatin1(kb::categoryName(d->category));
        case Tags: {
            QStringList parts;
            parts << qs(d->tags.platform);
            parts << QStringLiteral("arch: ")
                    + (d->tags.arch.empty() ? QStringLiteral("any") : joinedList(d->tags.arch));
            parts << QStringLiteral("family: ")
                    + (d->tags.family.empty() ? QStringLiteral("any") : joinedList(d->tags.family));
            return parts.join(QStringLiteral("; "));
        }
        case Chunks:
            return d->chunks;
        case Added: {
            const auto t = QDateTime::fromString(qs(d->createdAt), Qt::ISODateWithMs);
            return t.isValid() ? t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd hh:mm"))
                               : qs(d->createdAt);
        }
        case Source:
            return qs(d->origin);
        }
        break;
    case Qt::ToolTipRole:
        switch (index.column()) {
        case Title:
            return QStringLiteral("%1 (id %2, version %3, %4)")
                .arg(qs(d->title), qs(d->uid))
                .arg(d->version)
                .arg(qs(d->format));
        case Tags:
            return QStringLiteral("platform %1\narch %2\nfamily %3\nsource %4\nversion %5")
                .arg(qs(d->tags.platform), joinedList(d->tags.arch), joinedList(d->tags.family), qs(d->tags.source),
                    qs(d->tags.version));
        case Source:
            return qs(d->origin);
        default:
            return {};
        }
    case Qt::TextAlignmentRole:
        if (index.column() == Chunks)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case UidRole:
        return qs(d->uid);
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
