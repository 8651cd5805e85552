#pragma once

#include "views/knowledge_access.h"
#include "views/session_data.h"

#include <QAbstractTableModel>
#include <QStringList>
#include <QStyledItemDelegate>
#include <QWidget>

#include <vector>

class QLabel;
class QStackedWidget;
class QTableView;
class QTextBrowser;

namespace hone::views {

/// Rows of retrieved chunks (the hits panel, the curator's search results).
class KnowledgeHitsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Rank, Document, Section, Snippet, Score, Why, ColumnCount };
    enum Role { SnippetHtmlRole = Qt::UserRole + 1, ChunkIdRole };

    using QAbstractTableModel::QAbstractTableModel;
    void setRows(std::vector<KnowledgeHitRow> rows);
    const KnowledgeHitRow* hit(int row) const;
    const std::vector<KnowledgeHitRow>& rows() const { return m_rows; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<KnowledgeHitRow> m_rows;
};

/// Paints the HTML of KnowledgeHitsModel::SnippetHtmlRole (bold matched terms) in a cell.
class HtmlSnippetDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(
        QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

/// `text` as HTML with every word that starts with one of `terms` in <b> (case-insensitive);
/// with `width` > 0, only a window of about that many characters around the first match,
/// whitespace collapsed and "…" where it was cut.
QString highlightTerms(const QString& text, const QStringList& terms, int width = 0);

/// The knowledge behind the selected candidate: the chunks the LLM synthesizer was given for it
/// (recorded hits), or, for a candidate built without knowledge, what retrieval suggests for
/// its diagnosis. Double-click a row to read the whole chunk.
class KnowledgeHits : public QWidget {
    Q_OBJECT
public:
    enum class Mode { NoKnowledgeBase, NoSelection, Recorded, Suggested, NoHits };

    KnowledgeHits(
        SessionData* session, Selection* selection, KnowledgeAccess* kb, QWidget* parent = nullptr);

    void setKnowledgeBase(KnowledgeAccess* kb);
    Mode mode() const { return m_mode; }
    /// The line above the table: what the rows are ("Used by this candidate..." or
    /// "Suggested for this diagnosis (not used by this candidate)...").
    QString heading() const;
    /// Why the table is empty (no knowledge base, no node, no hits), or empty.
    QString emptyReason() const { return m_emptyReason; }
    KnowledgeHitsModel* model() const { return m_model; }
    /// The chunk viewer's text (plain).
    QString viewerText() const;

    /// What the engine would ask the knowledge base for `node`'s diagnosis (the query
    /// app/kb_source.cpp gets): the problem's family, target and device, the bound, the failure.
    core::KnowledgeQuery retrievalFor(const NodeInfo& node) const;

public slots:
    /// Re-reads the hits of the selected node (after the knowledge base changed).
    void refresh();
    /// Shows row `row`'s whole chunk in the viewer (what a double-click does).
    void openChunk(int row);

private:
    void showEmpty(Mode mode, const QString& reason);
    QString problemFamily() const;
    QString shownKey() const;

    SessionData* m_data;
    Selection* m_selection;
    KnowledgeAccess* m_kb;
    KnowledgeHitsModel* m_model;
    QLabel* m_heading;
    QLabel* m_empty;
    QStackedWidget* m_stack;
    QTableView* m_table;
    QTextBrowser* m_viewer;
    Mode m_mode = Mode::NoSelection;
    QString m_emptyReason;
    QString m_shownKey; // the node state the rows were made for
    mutable QString m_family; // cached per session
    mutable bool m_familyKnown = false;
};

} // namespace hone::views
