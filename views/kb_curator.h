#pragma once

#include "views/kb_documents_model.h"
#include "views/knowledge_access.h"
#include "views/knowledge_hits.h"

#include <QStringList>
#include <QWidget>

#include <functional>
#include <vector>

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTableView;

namespace hone::views {

/// The knowledge-base curator: the documents table, import (dialog or drop files on the
/// panel), tag editing, full-text search, a preview of the selected document's chunks and
/// removal. Every change goes through KnowledgeAccess, one document per transaction, so a bad
/// file never costs a stored document.
class KbCurator : public QWidget {
    Q_OBJECT
public:
    explicit KbCurator(KnowledgeAccess* kb, QWidget* parent = nullptr);

    void setKnowledgeBase(KnowledgeAccess* kb);
    /// Imports files (folders expand to their .md/.markdown/.txt/.html/.htm/.pdf files) one by
    /// one, and reports each in the status line.
    std::vector<KbImportOutcome> importFiles(const QStringList& paths);
    /// Replaces the tags of the live document `uid`: a new version with the same chunks (the
    /// old one stays in the history). False, with `error` set, when it cannot.
    bool retag(const QString& uid, const KbTags& tags, QString* error = nullptr);
    /// Removes the live document `uid` after asking the confirmation (setConfirm).
    bool removeDocument(const QString& uid);
    /// Runs a full-text search and lists the hits.
    void search(const QString& text);
    /// Selects a document in the table (and previews it); false when it is not listed.
    bool selectDocument(const QString& uid);
    /// The kind (guidance, hardware, correctness) given to files that name none (no
    /// front-matter `category:`); empty: such files are refused with a message. Files that name
    /// a kind keep it.
    void setDefaultKind(const QString& kind);
    /// The question asked before a removal; true goes ahead. Default: a message box.
    void setConfirm(std::function<bool(QString)> confirm) { m_confirm = std::move(confirm); }

    /// The bundled corpus folder (the one `hone kb init` reads) offered to an empty base.
    void setCorpusDir(const QString& dir);
    /// True while the "Import the bundled corpus" offer shows: a base with no documents but
    /// skills.
    bool corpusOffered() const;
    /// Imports the bundled corpus (all or nothing) and reports it in the status line.
    bool importCorpus();

    QString statusText() const;
    QString previewText() const;
    KbDocumentsModel* documentsModel() const { return m_docs; }
    KnowledgeHitsModel* searchModel() const { return m_results; }

public slots:
    /// Re-reads the documents and the summary line: the base changed behind the panel's back
    /// (a skill written at the end of a run, `hone kb` in a terminal).
    void reload();

signals:
    /// Documents were added, re-tagged or removed.
    void knowledgeChanged();

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dragMoveEvent(QDragMoveEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void importClicked();
    void editTagsClicked();
    void removeClicked();
    void previewDocument(int row);
    void previewHit(int row);
    void setStatus(const QString& text, bool error);
    /// The "N documents, M chunks" line and the corpus offer, from the documents as read.
    void showSummary();
    QString selectedUid() const;
    void updateEnabled();

    KnowledgeAccess* m_kb;
    KbDocumentsModel* m_docs;
    KnowledgeHitsModel* m_results;
    QTableView* m_docTable;
    QTableView* m_resultTable;
    QPlainTextEdit* m_preview;
    QLineEdit* m_search;
    QLabel* m_status;
    QComboBox* m_defaultKind;
    QPushButton* m_import;
    QPushButton* m_tags;
    QPushButton* m_remove;
    std::function<bool(QString)> m_confirm;
    QWidget* m_offer = nullptr;
    QPushButton* m_importCorpus = nullptr;
    QString m_corpusDir;
};

} // namespace hone::views
