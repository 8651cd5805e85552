#pragma once

#include "views/knowledge_access.h"

#include <QAbstractTableModel>
#include <QString>

#include <vector>

namespace hone::views {

/// "a, b, c": a list of tags or names as the knowledge panels show it.
QString joinedList(const QStringList& items);

/// The live documents of a knowledge base, one row each.
class KbDocumentsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Title, Kind, Tags, Chunks, Added, Source, ColumnCount };
    enum Role { UidRole = Qt::UserRole + 1, DocIdRole };

    explicit KbDocumentsModel(KnowledgeAccess* kb, QObject* parent = nullptr);
    void setKnowledgeBase(KnowledgeAccess* kb);
    /// Re-reads the documents (after an import, a tag edit or a removal).
    void reload();
    const KbDocument* document(int row) const;
    /// The row of the live document `uid`, or -1.
    int rowOf(const QString& uid) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    KnowledgeAccess* m_kb;
    std::vector<KbDocument> m_docs;
};

} // namespace hone::views
