#include "views/knowledge_hits.h"

#include "core/problem_spec.h"

#include <QAbstractTextDocumentLayout>
#include <QApplication>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QRegularExpression>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTextDocumentFragment>
#include <QVBoxLayout>

#include <algorithm>

namespace hone::views {

namespace {

constexpr int kSuggestions = 5; // a few more than the LLM's top 3, to show what is near

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

QString plainOf(const QString& html)
{
    return QTextDocumentFragment::fromHtml(html).toPlainText();
}

} // namespace

// ---- KnowledgeHitsModel -------------------------------------------------------------------

void KnowledgeHitsModel::setRows(std::vector<KnowledgeHitRow> rows)
{
    beginResetModel();
    m_rows = std::move(rows);
    endResetModel();
}

const KnowledgeHitRow* KnowledgeHitsModel::hit(int row) const
{
    return row >= 0 && row < static_cast<int>(m_rows.size()) ? &m_rows[static_cast<size_t>(row)] : nullptr;
}

int KnowledgeHitsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int KnowledgeHitsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant KnowledgeHitsModel::data(const QModelIndex& index, int role) const
{
    const KnowledgeHitRow* h = index.isValid() ? hit(index.row()) : nullptr;
    if (!h)
        return {};
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Rank:
            return h->rank;
        case Document:
            return h->title;
        case Section:
            return h->section;
        case Snippet:
            return plainOf(h->snippetHtml);
        case Score:
            return QString::number(h->score, 'f', 2);
        case Why:
            return h->why;
        }
        break;
    case Qt::ToolTipRole:
        switch (index.column()) {
        case Document:
            return h->uid.isEmpty() ? h->title
                                    : h->title + QStringLiteral(" (") + h->uid + QStringLiteral(")");
        case Snippet:
            return plainOf(h->snippetHtml);
        case Why:
        case Rank:
        case Score:
            return h->why;
        default:
            return h->section;
        }
    case Qt::TextAlignmentRole:
        if (index.column() == Rank || index.column() == Score)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case SnippetHtmlRole:
        return index.column() == Snippet ? QVariant(h->snippetHtml) : QVariant();
    case ChunkIdRole:
        return h->chunkId;
    default:
        break;
    }
    return {};
}

QVariant KnowledgeHitsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Rank:
        return QStringLiteral("#");
    case Document:
        return QStringLiteral("Document");
    case Section:
        return QStringLiteral("Section");
    case Snippet:
        return QStringLiteral("Snippet");
    case Score:
        return QStringLiteral("Score");
    case Why:
        return QStringLiteral("Why retrieved");
    }
    return {};
}

// ---- HtmlSnippetDelegate ------------------------------------------------------------------

void HtmlSnippetDelegate::paint(
    QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const
{
    const QString html = index.data(KnowledgeHitsModel::SnippetHtmlRole).toString();
    if (html.isEmpty()) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    opt.text.clear();
    QStyle* style = opt.widget ? opt.widget->style() : QApplication::style();
    style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, opt.widget);

    QTextDocument doc;
    doc.setDefaultFont(opt.font);
    doc.setDocumentMargin(2);
    doc.setHtml(html);
    doc.setTextWidth(opt.rect.width());
    QAbstractTextDocumentLayout::PaintContext ctx;
    ctx.palette = opt.palette;
    if (opt.state & QStyle::State_Selected)
        ctx.palette.setColor(QPalette::Text, opt.palette.color(QPalette::HighlightedText));
    painter->save();
    painter->translate(opt.rect.topLeft());
    painter->setClipRect(QRect(QPoint(0, 0), opt.rect.size()));
    doc.documentLayout()->draw(painter, ctx);
    painter->restore();
}

QSize HtmlSnippetDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const
{
    const QString html = index.data(KnowledgeHitsModel::SnippetHtmlRole).toString();
    if (html.isEmpty())
        return QStyledItemDelegate::sizeHint(option, index);
    QTextDocument doc;
    doc.setDefaultFont(option.font);
    doc.setDocumentMargin(2);
    doc.setHtml(html);
    doc.setTextWidth(std::max(200, option.rect.width()));
    return QSize(static_cast<int>(doc.idealWidth()), static_cast<int>(doc.size().height()));
}

// ---- helpers ------------------------------------------------------------------------------

QString highlightTerms(const QString& text, const QStringList& terms, int width)
{
    QStringList alts;
    for (const QString& t : terms)
        if (!t.trimmed().isEmpty())
            alts << QRegularExpression::escape(t.trimmed());
    // Longest first, so that a term that extends another is matched whole.
    std::sort(
        alts.begin(), alts.end(), [](const QString& a, const QString& b) { return a.size() > b.size(); });
    QRegularExpression re;
    if (!alts.isEmpty())
        re = QRegularExpression(
            QStringLiteral("\\b(?:") + alts.join(QLatin1Char('|')) + QStringLiteral(")\\w*"),
            QRegularExpression::CaseInsensitiveOption | QRegularExpression::UseUnicodePropertiesOption);

    QString src = text;
    QString prefix, suffix;
    if (width > 0) {
        src = src.simplified();
        if (src.size() > width) {
            qsizetype first = 0;
            if (!alts.isEmpty()) {
                auto m = re.match(src);
                if (m.hasMatch())
                    first = m.capturedStart();
            }
            qsizetype start = std::max<qsizetype>(0, first - width / 4);
            if (start > 0) {
                const qsizetype sp = src.indexOf(QLatin1Char(' '), start);
                if (sp >= 0 && sp < first)
                    start = sp + 1;
            }
            qsizetype end = std::min<qsizetype>(src.size(), start + width);
            if (end < src.size()) {
                const qsizetype sp = src.lastIndexOf(QLatin1Char(' '), end);
                if (sp > first && sp > start)
                    end = sp;
            }
            if (start > 0)
                prefix = QStringLiteral("…");
            if (end < src.size())
                suffix = QStringLiteral("…");
            src = src.mid(start, end - start);
        }
    }
    QString out = prefix;
    qsizetype pos = 0;
    if (!alts.isEmpty()) {
        auto it = re.globalMatch(src);
        while (it.hasNext()) {
            auto m = it.next();
            out += src.mid(pos, m.capturedStart() - pos).toHtmlEscaped();
            out += QStringLiteral("<b>") + m.captured().toHtmlEscaped() + QStringLiteral("</b>");
            pos = m.capturedEnd();
        }
    }
    out += src.mid(pos).toHtmlEscaped() + suffix;
    return out;
}

// ---- KnowledgeHits ------------------------------------------------------------------------

KnowledgeHits::KnowledgeHits(
    SessionData* session, Selection* selection, KnowledgeAccess* base, QWidget* parent)
    : QWidget(parent)
    , m_data(session)
    , m_selection(selection)
    , m_kb(base)
    , m_model(new KnowledgeHitsModel(this))
    , m_heading(new QLabel(this))
    , m_empty(new QLabel(this))
    , m_stack(new QStackedWidget(this))
    , m_table(new QTableView(this))
    , m_viewer(new QTextBrowser(this))
{
    m_heading->setWordWrap(true);
    m_heading->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_empty->setWordWrap(true);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_table->setModel(m_model);
    m_table->setItemDelegateForColumn(KnowledgeHitsModel::Snippet, new HtmlSnippetDelegate(m_table));
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setWordWrap(true);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->setSectionResizeMode(KnowledgeHitsModel::Snippet, QHeaderView::Interactive);
    m_table->setColumnWidth(KnowledgeHitsModel::Rank, 36);
    m_table->setColumnWidth(KnowledgeHitsModel::Snippet, 380);

    m_viewer->setReadOnly(true);
    m_viewer->setOpenLinks(false);
    m_viewer->setPlaceholderText(QStringLiteral("Double-click a hit to read its whole chunk."));

    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_table);
    split->addWidget(m_viewer);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    m_stack->addWidget(m_empty);
    m_stack->addWidget(split);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_heading);
    layout->addWidget(m_stack, 1);

    connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex& i) { openChunk(i.row()); });
    if (m_selection)
        connect(m_selection, &Selection::currentChanged, this, &KnowledgeHits::refresh);
    if (m_data) {
        connect(m_data, &SessionData::sessionReset, this, [this] {
            m_familyKnown = false;
            refresh();
        });
        connect(m_data, &SessionData::nodesAdded, this, [this](qint64 first, qint64 last) {
            const qint64 cur = m_selection ? m_selection->current() : -1;
            if (cur >= first && cur <= last)
                refresh();
        });
        connect(m_data, &SessionData::nodesChanged, this, [this](const QVector<qint64>& ids) {
            // Ancestors change with every evaluation below them (visits); only a change of the
            // node's own outcome changes what retrieval would suggest.
            if (m_selection && ids.contains(m_selection->current()) && shownKey() != m_shownKey)
                refresh();
        });
    }
    refresh();
}

void KnowledgeHits::setKnowledgeBase(KnowledgeAccess* base)
{
    m_kb = base;
    refresh();
}

QString KnowledgeHits::heading() const
{
    return m_heading->text();
}

QString KnowledgeHits::viewerText() const
{
    return m_viewer->toPlainText();
}

void KnowledgeHits::showEmpty(Mode mode, const QString& reason)
{
    m_mode = mode;
    m_emptyReason = reason;
    m_model->setRows({});
    m_viewer->clear();
    m_empty->setText(reason);
    m_stack->setCurrentIndex(0);
}

QString KnowledgeHits::problemFamily() const
{
    if (!m_familyKnown && m_data) {
        m_family = m_data->problemName();
        if (!m_data->problemDir().isEmpty()) {
            try {
                m_family = qs(core::loadProblem(m_data->problemDir().toStdString()).family);
            } catch (const std::exception&) {
                // The problem folder moved: its name stands in for the family (as `hone kb learn`).
            }
        }
        m_familyKnown = true;
    }
    return m_family;
}

core::KnowledgeQuery KnowledgeHits::retrievalFor(const NodeInfo& node) const
{
    core::KnowledgeQuery q;
    q.family = problemFamily().toStdString();
    q.target = m_data ? m_data->target().toStdString() : std::string();
    q.device = m_data ? m_data->device().toStdString() : std::string();
    if (node.result && node.result->environment)
        q.device = node.result->environment->device;
    q.bound = node.bound.toStdString();
    q.failureKind = node.failureKind.toStdString();
    q.failureMessage = node.failureMessage.toStdString();
    return q;
}

QString KnowledgeHits::shownKey() const
{
    const NodeInfo* n = m_data && m_selection ? m_data->node(m_selection->current()) : nullptr;
    if (!n)
        return {};
    return QStringLiteral("%1|%2|%3|%4|%5")
        .arg(n->id)
        .arg(static_cast<int>(n->status))
        .arg(n->bound, n->failureKind, n->hasLlmCall ? QStringLiteral("llm") : QString());
}

void KnowledgeHits::refresh()
{
    m_shownKey = shownKey();
    if (!m_kb) {
        m_heading->clear();
        showEmpty(Mode::NoKnowledgeBase,
            QStringLiteral("No knowledge base is configured. Open a store (its kb_* tables) or start the "
                           "workbench with --kb FILE to see which documents fed each candidate."));
        return;
    }
    const qint64 id = m_selection ? m_selection->current() : -1;
    const NodeInfo* node = m_data ? m_data->node(id) : nullptr;
    if (!node) {
        m_heading->clear();
        showEmpty(Mode::NoSelection, QStringLiteral("Select a candidate to see the knowledge behind it."));
        return;
    }
    try {
        KbRecordedHits recorded = m_kb->recordedHits(m_data->sessionId(), node->id);
        if (!recorded.rows.empty()) {
            m_mode = Mode::Recorded;
            m_emptyReason.clear();
            m_heading->setText(QStringLiteral("<b>Used by this candidate</b>: %1 chunk(s) given to the model "
                                              "for node %2 (query: %3)")
                                   .arg(recorded.rows.size())
                                   .arg(node->id)
                                   .arg(recorded.query.toHtmlEscaped()));
            m_model->setRows(std::move(recorded.rows));
            m_viewer->clear();
            m_stack->setCurrentIndex(1);
            return;
        }
        KbSuggestion suggestion = m_kb->suggest(retrievalFor(*node), kSuggestions);
        const QString what = suggestion.query;
        m_heading->setText(QStringLiteral("<b>Suggested for this diagnosis (not used by this candidate)</b>: "
                                          "node %1 has no recorded hits; retrieval for %2")
                               .arg(node->id)
                               .arg(what.toHtmlEscaped()));
        if (m_kb->documents().empty()) {
            showEmpty(Mode::NoHits,
                QStringLiteral("No hits: the knowledge base %1 holds no documents. Import some in the "
                               "Knowledge curator (Import… or drop files on it).")
                    .arg(m_kb->location()));
            return;
        }
        if (suggestion.rows.empty()) {
            showEmpty(Mode::NoHits,
                QStringLiteral(
                    "No hits: node %1 has no recorded hits, and no document in %2 matches its "
                    "diagnosis (%3). Add documents for this family, arch or bound in the Knowledge "
                    "curator.")
                    .arg(node->id)
                    .arg(m_kb->location(), what));
            return;
        }
        m_mode = Mode::Suggested;
        m_emptyReason.clear();
        m_model->setRows(std::move(suggestion.rows));
        m_viewer->clear();
        m_stack->setCurrentIndex(1);
    } catch (const std::exception& e) {
        showEmpty(Mode::NoHits,
            QStringLiteral("No hits: the knowledge base could not be read: %1").arg(qs(e.what())));
    }
}

void KnowledgeHits::openChunk(int row)
{
    const KnowledgeHitRow* h = m_model->hit(row);
    if (!h || !m_kb)
        return;
    const auto chunk = m_kb->chunk(h->chunkId);
    if (!chunk) {
        m_viewer->setPlainText(
            QStringLiteral("Chunk #%1 is no longer stored in %2.").arg(h->chunkId).arg(m_kb->location()));
        return;
    }
    QString html = QStringLiteral("<h3>") + h->title.toHtmlEscaped() + QStringLiteral("</h3><p><i>")
        + h->section.toHtmlEscaped();
    if (!h->uid.isEmpty())
        html += QStringLiteral(" — ") + h->uid.toHtmlEscaped();
    html += QStringLiteral("</i></p><pre style=\"white-space: pre-wrap\">")
        + highlightTerms(chunk->body, h->matchedTerms) + QStringLiteral("</pre>");
    m_viewer->setHtml(html);
}

} // namespace hone::views
