#include "app/workbench/kb_access.h"

#include "knowledge/corpus.h"
#include "knowledge/knowledge_base.h"
#include "knowledge/skills.h"
#include "views/knowledge_hits.h"

#include <QRegularExpression>

#include <algorithm>
#include <map>

namespace hone::app {

namespace kb = hone::knowledge;
using views::KbImportOutcome;
using views::KnowledgeHitRow;

namespace {

constexpr int kExplainPool = 60; // hits re-retrieved to explain recorded ones
constexpr int kSnippetWidth = 220;

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

QStringList qlist(const std::vector<std::string>& items)
{
    QStringList out;
    for (const auto& i : items)
        out << qs(i);
    return out;
}

views::KbDocument documentOf(const kb::DocumentInfo& d)
{
    views::KbDocument out;
    out.id = d.id;
    out.uid = qs(d.uid);
    out.version = d.version;
    out.title = qs(d.title);
    out.kind = QString::fromLatin1(kb::categoryName(d.category));
    out.tags.platform = qs(d.tags.platform);
    out.tags.arch = qlist(d.tags.arch);
    out.tags.family = qlist(d.tags.family);
    out.tags.source = qs(d.tags.source);
    out.tags.version = qs(d.tags.version);
    out.format = qs(d.format);
    out.origin = qs(d.origin);
    out.createdAt = qs(d.createdAt);
    out.chunks = d.chunks;
    out.live = d.live();
    return out;
}

views::KbChunk chunkOf(const kb::StoredChunk& c)
{
    return { c.id, c.docId, qs(c.heading), qs(c.body), c.pageFirst, c.pageLast };
}

KbImportOutcome::Status outcomeOf(kb::AddStatus s)
{
    switch (s) {
    case kb::AddStatus::Added:
        return KbImportOutcome::Status::Added;
    case kb::AddStatus::Updated:
        return KbImportOutcome::Status::Updated;
    case kb::AddStatus::Unchanged:
        return KbImportOutcome::Status::Unchanged;
    case kb::AddStatus::Duplicate:
        return KbImportOutcome::Status::Duplicate;
    }
    return KbImportOutcome::Status::Error;
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

QString matchedText(const QStringList& terms)
{
    return terms.isEmpty() ? QStringLiteral("title or tags") : terms.join(QStringLiteral(", "));
}

/// A hit of KnowledgeBase::search/retrieve as a table row (rank from 1).
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
    r.matchedTerms = qlist(hit.matchedTerms);
    r.score = hit.score;
    const auto chunk = base.chunk(hit.chunkId);
    r.snippetHtml = views::highlightTerms(chunk ? qs(chunk->body) : qs(hit.snippet), r.matchedTerms, kSnippetWidth);
    r.why = QStringLiteral("rank %1; ").arg(rank) + qs(hit.reason) + QStringLiteral("; category ")
        + QString::fromLatin1(kb::categoryName(hit.category));
    return r;
}

} // namespace

KbAccess::KbAccess(kb::KnowledgeBase& base)
    : m_kb(base)
{
}

KbAccess::~KbAccess() = default;

QString KbAccess::location() const
{
    return qs(m_kb.path().string());
}

std::vector<views::KbDocument> KbAccess::documents() const
{
    std::vector<views::KbDocument> out;
    for (const auto& d : m_kb.documents())
        out.push_back(documentOf(d));
    return out;
}

std::optional<views::KbDocument> KbAccess::document(const QString& uidOrId) const
{
    const auto d = m_kb.document(uidOrId.toStdString());
    return d ? std::optional(documentOf(*d)) : std::nullopt;
}

int KbAccess::liveChunkCount() const
{
    return m_kb.liveChunkCount();
}

std::vector<views::KbChunk> KbAccess::chunks(qint64 docId) const
{
    std::vector<views::KbChunk> out;
    for (const auto& c : m_kb.chunks(docId))
        out.push_back(chunkOf(c));
    return out;
}

std::optional<views::KbChunk> KbAccess::chunk(qint64 chunkId) const
{
    const auto c = m_kb.chunk(chunkId);
    return c ? std::optional(chunkOf(*c)) : std::nullopt;
}

std::vector<KnowledgeHitRow> KbAccess::search(const QString& text, int k) const
{
    const auto hits = m_kb.search(text.toStdString(), {}, k);
    std::vector<KnowledgeHitRow> rows;
    for (size_t i = 0; i < hits.size(); ++i)
        rows.push_back(hitRow(hits[i], static_cast<int>(i) + 1, m_kb));
    return rows;
}

views::KbRecordedHits KbAccess::recordedHits(qint64 session, qint64 node) const
{
    const auto records = m_kb.hits(session, node);
    views::KbRecordedHits out;
    if (records.empty())
        return out;
    out.query = qs(records.front().query);
    // Re-run each recorded query once: FTS5 then says which words matched, exactly as it did
    // when the hits were retrieved (as long as the chunk is still indexed).
    std::map<std::string, std::map<int64_t, kb::Hit>> explained;
    for (const auto& rec : records) {
        if (explained.count(rec.query))
            continue;
        auto& byChunk = explained[rec.query];
        try {
            for (auto& h : m_kb.retrieve(kb::parseRecordedQuery(rec.query), kExplainPool))
                byChunk.emplace(h.chunkId, std::move(h));
        } catch (const std::exception&) {
            // An unexplained hit is still shown, with the words found in its text.
        }
    }
    for (const auto& rec : records) {
        KnowledgeHitRow r;
        r.chunkId = rec.chunkId;
        r.rank = rec.rank;
        r.score = rec.score;
        const auto chunk = m_kb.chunk(rec.chunkId);
        if (!chunk) {
            r.title = QStringLiteral("(chunk #%1 is no longer stored)").arg(rec.chunkId);
            r.why = QStringLiteral("rank %1; query %2").arg(rec.rank).arg(qs(rec.query));
            out.rows.push_back(std::move(r));
            continue;
        }
        r.docId = chunk->docId;
        const auto doc = m_kb.document("#" + std::to_string(chunk->docId));
        r.uid = doc ? qs(doc->uid) : QString();
        r.title = doc ? qs(doc->title) : QStringLiteral("document #%1").arg(chunk->docId);
        r.section = qs(chunk->heading);
        const QString pages = pagesText(chunk->pageFirst, chunk->pageLast);
        if (!pages.isEmpty())
            r.section += QStringLiteral(" (") + pages + QStringLiteral(")");
        const kb::RetrievalSignals s = kb::parseRecordedQuery(rec.query);
        const auto& byChunk = explained[rec.query];
        if (auto it = byChunk.find(rec.chunkId); it != byChunk.end())
            r.matchedTerms = qlist(it->second.matchedTerms);
        else
            r.matchedTerms = termsIn(kb::planQuery(s), qs(chunk->heading + "\n" + chunk->body));
        r.snippetHtml = views::highlightTerms(qs(chunk->body), r.matchedTerms, kSnippetWidth);
        QStringList why;
        why << QStringLiteral("rank %1 of %2").arg(rec.rank).arg(records.size());
        why << QStringLiteral("matched: ") + matchedText(r.matchedTerms);
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
        out.rows.push_back(std::move(r));
    }
    return out;
}

views::KbSuggestion KbAccess::suggest(const core::KnowledgeQuery& query, int k) const
{
    const kb::RetrievalSignals s = kb::retrievalSignals(query);
    views::KbSuggestion out;
    out.query = qs(kb::planQuery(s).describe());
    if (m_kb.documents().empty())
        return out;
    const auto hits = m_kb.retrieve(s, k);
    for (size_t i = 0; i < hits.size(); ++i) {
        KnowledgeHitRow r = hitRow(hits[i], static_cast<int>(i) + 1, m_kb);
        if (const auto doc = m_kb.document("#" + std::to_string(hits[i].docId))) {
            r.why = QStringLiteral("rank %1 of %2; matched: ").arg(i + 1).arg(hits.size()) + matchedText(r.matchedTerms)
                + QStringLiteral("; tags: ") + tagMatches(*doc, s).join(QStringLiteral(", "))
                + QStringLiteral("; category ") + QString::fromLatin1(kb::categoryName(doc->category));
        }
        out.rows.push_back(std::move(r));
    }
    return out;
}

QStringList KbAccess::expandPath(const QString& path) const
{
    return qlist(kb::expandDocumentPath(path.toStdString()));
}

KbImportOutcome KbAccess::importFile(const QString& path, const QString& fallbackKind)
{
    KbImportOutcome o;
    o.path = path;
    const std::optional<kb::Category> fallback
        = fallbackKind.isEmpty() ? std::nullopt : kb::parseCategory(fallbackKind.toStdString());
    auto read = [&] {
        try {
            return kb::readDocument(path.toStdString());
        } catch (const kb::IngestError&) {
            if (!fallback)
                throw;
            // Read again with the default kind; an override would also replace the kind of a
            // file that names one, so it is only tried when the plain read failed. A file that
            // fails for another reason fails the same way again.
            kb::IngestOverrides ov;
            ov.category = fallback;
            return kb::readDocument(path.toStdString(), ov);
        }
    };
    try {
        const kb::AddResult r = m_kb.add(read());
        o.status = outcomeOf(r.status);
        o.uid = qs(r.uid);
        o.version = r.version;
        o.chunks = r.chunks;
        if (r.status == kb::AddStatus::Duplicate)
            o.message = QStringLiteral("same text as %1; nothing stored").arg(qs(r.note));
    } catch (const kb::IngestError& e) {
        o.message = qs(e.what()); // starts with the file name and says what to do
    } catch (const std::exception& e) {
        o.message = path + QStringLiteral(": ") + qs(e.what());
    }
    return o;
}

KbImportOutcome KbAccess::retag(const QString& uid, const views::KbTags& tags)
{
    const auto d = m_kb.document(uid.toStdString());
    if (!d)
        throw std::runtime_error(uid.toStdString() + ": no such live document");
    // The KnowledgeBase's only write is add(): the same chunks (one section each, which
    // chunking keeps as they are) under the new tags make a new version of the document.
    kb::SourceDocument doc;
    doc.uid = d->uid;
    doc.title = d->title;
    doc.format = d->format;
    doc.origin = d->origin;
    doc.category = d->category;
    doc.categorySet = true;
    doc.tags.platform = tags.platform.toStdString();
    doc.tags.arch = kb::splitTagList(tags.arch.join(QLatin1Char(',')).toStdString());
    doc.tags.family = kb::splitTagList(tags.family.join(QLatin1Char(',')).toStdString());
    doc.tags.source = tags.source.toStdString();
    doc.tags.version = tags.version.toStdString();
    if (doc.tags.platform.empty())
        doc.tags.platform = "any";
    for (const auto& c : m_kb.chunks(d->id))
        doc.sections.push_back({ c.heading, c.body, c.pageFirst });
    const kb::AddResult r = m_kb.add(doc);
    KbImportOutcome o;
    o.status = outcomeOf(r.status);
    o.uid = qs(r.uid);
    o.version = r.version;
    o.chunks = r.chunks;
    return o;
}

bool KbAccess::remove(const QString& uid)
{
    return m_kb.remove(uid.toStdString());
}

int KbAccess::importCorpus(const QString& dir)
{
    int added = 0;
    for (const auto& r : kb::importCorpus(m_kb, dir.toStdString()))
        added += r.status == kb::AddStatus::Added || r.status == kb::AddStatus::Updated ? 1 : 0;
    return added;
}

} // namespace hone::app
