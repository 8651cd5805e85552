#include "views/knowledge_hits.h"

#include "core/problem_spec.h"
#include "knowledge/skills.h"

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
#include <map>

namespace hone::views {

namespace kb = hone::knowledge;

namespace {

constexpr int kSuggestions = 5; // a few more than the LLM's top 3, to show what is near
constexpr int kExplainPool = 60; // hits re-retrieved to explain recorded ones

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

QString pagesText(int first, int last)
{
    if (first <= 0)
        return {};
    return first == last ? QStringLiteral("p. %1").arg(first)
                         : QStringLiteral("pp. %1-%2").arg(first).arg(last);
}

/// The tags of `doc` that made it eligible for (or ranked it higher in) a query.
QStringList tagMatches(const kb::DocumentInfo& doc, const kb::RetrievalSignals& s)
{
    QStringList out;
    const auto& fam = doc.tags.family;
    if (!s.family.empty() && std::find(fam.begin(), fam.end(), s.family) != fam.end())
        out << QStringLiteral("family ") + qs(s.family);
    if (!s.arch.empty()) {
        if (doc.tags.arch.empty()) {
            out << QStringLiteral("arch any");
        } else {
            for (const auto& a : kb::compatibleArchs(s.arch))
                if (std::find(doc.tags.arch.begin(), doc.tags.arch.end(), a) != doc.tags.arch.end()) {
                    out << QStringLiteral("arch ") + qs(a);
                    break;
                }
        }
    }
    out << QStringLiteral("platform ") + qs(doc.tags.platform);
    return out;
}

/// Query words of `plan` that occur in `text` (a stand-in for FTS5's highlight when the chunk
/// is no longer indexed).
QStringList termsIn(const kb::QueryPlan& plan, const QString& text)
{
    QStringList out;
    const QString lower = text.toLower();
    for (const auto& t : plan.terms) {
        const QString w = qs(t.word).toLower();
        if (!w.isEmpty() && !out.contains(w)
            && lower.contains(QRegularExpression(QStringLiteral("\\b") + QRegularExpression::escape(w))))
            out << w;
    }
    return out;
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

KnowledgeHitRow hitRow(const kb::Hit& hit, int rank, const kb::KnowledgeBase& base)
{
    KnowledgeHitRow r;
    r.chunkId = hit.chunkId;
    r.docId = hit.docId;
    r.rank = rank;
    r.uid = qs(hit.uid);
    r.title = qs(hit.title);
    r.section = qs(hit.heading);
    const QString pages = pagesText(hit.pageFirst, hit.pageLast);
    if (!pages.isEmpty())
        r.section += QStringLiteral(" (") + pages + QStringLiteral(")");
    for (const auto& t : hit.matchedTerms)
        r.matchedTerms << qs(t);
    r.score = hit.score;
    const auto chunk = base.chunk(hit.chunkId);
    r.snippetHtml = highlightTerms(chunk ? qs(chunk->body) : qs(hit.snippet), r.matchedTerms, 220);
    r.why = QStringLiteral("rank %1; ").arg(rank) + qs(hit.reason) + QStringLiteral("; category ")
        + QString::fromLatin1(kb::categoryName(hit.category));
    return r;
}

// ---- KnowledgeHits ------------------------------------------------------------------------

KnowledgeHits::KnowledgeHits(
    SessionData* session, Selection* selection, kb::KnowledgeBase* base, QWidget* parent)
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

void KnowledgeHits::setKnowledgeBase(kb::KnowledgeBase* base)
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

kb::RetrievalSignals KnowledgeHits::retrievalFor(const NodeInfo& node) const
{
    kb::RetrievalSignals s;
    s.family = problemFamily().toStdString();
    kb::SessionDump where;
    where.target = m_data ? m_data->target().toStdString() : std::string();
    where.device = m_data ? m_data->device().toStdString() : std::string();
    if (node.result && node.result->environment)
        where.device = node.result->environment->device;
    s.arch = kb::sessionArch(where);
    s.platform = where.target;
    s.bound = node.bound.toStdString();
    if (node.failureKind == QLatin1String("compile_error"))
        s.compileError = node.failureMessage.toStdString();
    else if (!node.failureMessage.isEmpty())
        s.evidence = node.failureKind.toStdString() + ": " + node.failureMessage.toStdString();
    return s;
}

std::vector<KnowledgeHitRow> KnowledgeHits::recordedRows(const std::vector<kb::HitRecord>& records) const
{
    // Re-run each recorded query once: FTS5 then says which words matched, exactly as it did
    // when the hits were retrieved (as long as the chunk is still indexed).
    std::map<std::string, std::map<int64_t, kb::Hit>> explained;
    for (const auto& rec : records) {
        if (explained.count(rec.query))
            continue;
        auto& byChunk = explained[rec.query];
        try {
            for (auto& h : m_kb->retrieve(kb::parseRecordedQuery(rec.query), kExplainPool))
                byChunk.emplace(h.chunkId, std::move(h));
        } catch (const std::exception&) {
            // An unexplained hit is still shown, with the words found in its text.
        }
    }
    std::vector<KnowledgeHitRow> rows;
    for (const auto& rec : records) {
        KnowledgeHitRow r;
        r.chunkId = rec.chunkId;
        r.rank = rec.rank;
        r.score = rec.score;
        const auto chunk = m_kb->chunk(rec.chunkId);
        if (!chunk) {
            r.title = QStringLiteral("(chunk #%1 is no longer stored)").arg(rec.chunkId);
            r.why = QStringLiteral("rank %1; query %2").arg(rec.rank).arg(qs(rec.query));
            rows.push_back(std::move(r));
            continue;
        }
        r.docId = chunk->docId;
        const auto doc = m_kb->document("#" + std::to_string(chunk->docId));
        r.uid = doc ? qs(doc->uid) : QString();
        r.title = doc ? qs(doc->title) : QStringLiteral("document #%1").arg(chunk->docId);
        r.section = qs(chunk->heading);
        const QString pages = pagesText(chunk->pageFirst, chunk->pageLast);
        if (!pages.isEmpty())
            r.section += QStringLiteral(" (") + pages + QStringLiteral(")");
        const kb::RetrievalSignals s = kb::parseRecordedQuery(rec.query);
        const auto& byChunk = explained[rec.query];
        if (auto it = byChunk.find(rec.chunkId); it != byChunk.end()) {
            for (const auto& t : it->second.matchedTerms)
                r.matchedTerms << qs(t);
        } else {
            r.matchedTerms = termsIn(kb::planQuery(s), qs(chunk->heading + "\n" + chunk->body));
        }
        r.snippetHtml = highlightTerms(qs(chunk->body), r.matchedTerms, 220);
        QStringList why;
        why << QStringLiteral("rank %1 of %2").arg(rec.rank).arg(records.size());
        why << QStringLiteral("matched: ")
                + (r.matchedTerms.isEmpty() ? QStringLiteral("title or tags")
                                            : r.matchedTerms.join(QStringLiteral(", ")));
        if (doc) {
            why << QStringLiteral("tags: ") + tagMatches(*doc, s).join(QStringLiteral(", "));
            why << QStringLiteral("category ") + QString::fromLatin1(kb::categoryName(doc->category));
            if (!doc->live())
                why << QStringLiteral("document since updated or removed");
        }
        if (rec.beatParent)
            why << (*rec.beatParent ? QStringLiteral("the candidate beat its parent")
                                    : QStringLiteral("the candidate did not beat its parent"));
        why << QStringLiteral("query ") + qs(rec.query);
        r.why = why.join(QStringLiteral("; "));
        rows.push_back(std::move(r));
    }
    return rows;
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
        const auto records = m_kb->hits(m_data->sessionId(), node->id);
        if (!records.empty()) {
            m_mode = Mode::Recorded;
            m_emptyReason.clear();
            m_heading->setText(QStringLiteral("<b>Used by this candidate</b>: %1 chunk(s) given to the model "
                                              "for node %2 (query: %3)")
                                   .arg(records.size())
                                   .arg(node->id)
                                   .arg(qs(records.front().query).toHtmlEscaped()));
            m_model->setRows(recordedRows(records));
            m_viewer->clear();
            m_stack->setCurrentIndex(1);
            return;
        }
        const kb::RetrievalSignals s = retrievalFor(*node);
        const kb::QueryPlan plan = kb::planQuery(s);
        const QString what = qs(plan.describe());
        m_heading->setText(QStringLiteral("<b>Suggested for this diagnosis (not used by this candidate)</b>: "
                                          "node %1 has no recorded hits; retrieval for %2")
                               .arg(node->id)
                               .arg(what.toHtmlEscaped()));
        if (m_kb->documents().empty()) {
            showEmpty(Mode::NoHits,
                QStringLiteral("No hits: the knowledge base %1 holds no documents. Import some in the "
                               "Knowledge curator (Import… or drop files on it).")
                    .arg(qs(m_kb->path().string())));
            return;
        }
        const auto hits = m_kb->retrieve(s, kSuggestions);
        if (hits.empty()) {
            showEmpty(Mode::NoHits,
                QStringLiteral(
                    "No hits: node %1 has no recorded hits, and no document in %2 matches its "
                    "diagnosis (%3). Add documents for this family, arch or bound in the Knowledge "
                    "curator.")
                    .arg(node->id)
                    .arg(qs(m_kb->path().string()), what));
            return;
        }
        std::vector<KnowledgeHitRow> rows;
        for (size_t i = 0; i < hits.size(); ++i) {
            KnowledgeHitRow r = hitRow(hits[i], static_cast<int>(i) + 1, *m_kb);
            if (const auto doc = m_kb->document("#" + std::to_string(hits[i].docId))) {
                r.why = QStringLiteral("rank %1 of %2; matched: ").arg(i + 1).arg(hits.size())
                    + (r.matchedTerms.isEmpty() ? QStringLiteral("title or tags")
                                                : r.matchedTerms.join(QStringLiteral(", ")))
                    + QStringLiteral("; tags: ") + tagMatches(*doc, s).join(QStringLiteral(", "))
                    + QStringLiteral("; category ") + QString::fromLatin1(kb::categoryName(doc->category));
            }
            rows.push_back(std::move(r));
        }
        m_mode = Mode::Suggested;
        m_emptyReason.clear();
        m_model->setRows(std::move(rows));
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
        m_viewer->setPlainText(QStringLiteral("Chunk #%1 is no longer stored in %2.")
                                   .arg(h->chunkId)
                                   .arg(qs(m_kb->path().string())));
        return;
    }
    QString html = QStringLiteral("<h3>") + h->title.toHtmlEscaped() + QStringLiteral("</h3><p><i>")
        + h->section.toHtmlEscaped();
    if (!h->uid.isEmpty())
        html += QStringLiteral(" — ") + h->uid.toHtmlEscaped();
    html += QStringLiteral("</i></p><pre style=\"white-space: pre-wrap\">")
        + highlightTerms(qs(chunk->body), h->matchedTerms) + QStringLiteral("</pre>");
    m_viewer->setHtml(html);
}

} // namespace hone::views
