#pragma once

#include "core/prompt_builder.h"

#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

/// What the knowledge panels (the curator, the hits behind a candidate) ask of a knowledge base,
/// in the panels' own terms. hone_views links only hone_core and Qt (DESIGN.md, the views
/// boundary): app/workbench/kb_access.cpp implements this over knowledge::KnowledgeBase.
namespace hone::views {

/// A document's tags (platform, archs, op families, provenance).
struct KbTags {
    QString platform;               // cuda | hip | cpu | any
    QStringList arch;               // empty: any
    QStringList family;             // empty: any
    QString source;
    QString version;
};

/// One stored version of a document.
struct KbDocument {
    qint64 id = 0;
    QString uid;
    int version = 1;
    QString title;
    QString kind;                   // guidance | hardware | correctness | skill
    KbTags tags;
    QString format;
    QString origin;                 // the file it was read from
    QString createdAt;              // ISO 8601
    int chunks = 0;
    bool live = true;               // false once updated or removed
    bool isSkill() const { return kind == QLatin1String("skill"); }
};

/// One chunk of a document (a section, size-limited at ingestion).
struct KbChunk {
    qint64 id = 0;
    qint64 docId = 0;
    QString heading;                // the heading path
    QString body;
    int pageFirst = 0;              // PDFs: the pages it came from; 0 otherwise
    int pageLast = 0;
};

/// One retrieved chunk as a hits table shows it, with the reasons it was retrieved.
struct KnowledgeHitRow {
    qint64 chunkId = 0;
    qint64 docId = 0;
    int rank = 0;
    QString title;
    QString section; // the chunk's heading path
    QString snippetHtml; // an excerpt with the matched terms in <b>
    double score = 0;
    QString why; // "rank 2; matched: bandwidth, coalescing; tags: family softmax, platform any; ..."
    QStringList matchedTerms;
    QString uid;
};

/// What storing one document did (an imported file, a re-tag).
struct KbImportOutcome {
    enum class Status { Added, Updated, Unchanged, Duplicate, Error };
    QString path;
    Status status = Status::Error;
    QString uid;
    int version = 0;
    int chunks = 0;
    QString message; // the error (naming the file and the fix), or what a duplicate duplicates
};

/// The hits recorded against one candidate, as rows, with the query they were retrieved for.
struct KbRecordedHits {
    QString query;                  // "family=softmax arch=x86_64-avx2 bound=memory"
    std::vector<KnowledgeHitRow> rows;
};

/// What retrieval suggests for a candidate's diagnosis.
struct KbSuggestion {
    QString query;                  // the query in words (QueryPlan::describe)
    std::vector<KnowledgeHitRow> rows;
};

/// A knowledge base as the panels use it. Reads and writes throw std::exception with a message
/// a user can act on when the base cannot be read or written.
class KnowledgeAccess {
public:
    virtual ~KnowledgeAccess() = default;

    /// Where the base lives (its file), for messages.
    virtual QString location() const = 0;
    /// The live documents, ordered by uid.
    virtual std::vector<KbDocument> documents() const = 0;
    /// The live version for a uid, or any version for "#ID".
    virtual std::optional<KbDocument> document(const QString& uidOrId) const = 0;
    virtual int liveChunkCount() const = 0;
    virtual std::vector<KbChunk> chunks(qint64 docId) const = 0;
    virtual std::optional<KbChunk> chunk(qint64 chunkId) const = 0;

    /// Free-text search, best first, as rows (rank from 1).
    virtual std::vector<KnowledgeHitRow> search(const QString& text, int k) const = 0;
    /// The hits recorded for `node` of `session`, each with why it was retrieved (the words the
    /// recorded query matched, the tags, the outcome); no rows when none were recorded.
    virtual KbRecordedHits recordedHits(qint64 session, qint64 node) const = 0;
    /// What retrieval suggests for `query` (a candidate's diagnosis), best first.
    virtual KbSuggestion suggest(const core::KnowledgeQuery& query, int k) const = 0;

    /// The files an import of `path` reads: a folder expands to its supported files (as
    /// `hone kb add` does); empty for a folder without any.
    virtual QStringList expandPath(const QString& path) const = 0;
    /// Reads and stores one file, one transaction. `fallbackKind` (guidance, hardware,
    /// correctness; empty: none) is given to a file that names no kind. Never throws: a file
    /// that cannot be read or stored is an Error outcome whose message starts with the file.
    virtual KbImportOutcome importFile(const QString& path, const QString& fallbackKind) = 0;
    /// Stores the same chunks of the live document `uid` under `tags`: a new version (Updated),
    /// or Unchanged. Throws when there is no such document or the write fails.
    virtual KbImportOutcome retag(const QString& uid, const KbTags& tags) = 0;
    /// Retires the live version of `uid`; false when there is no such live document.
    virtual bool remove(const QString& uid) = 0;
    /// Imports the corpus folder `dir` (all or nothing); returns the documents added or updated.
    virtual int importCorpus(const QString& dir) = 0;
};

} // namespace hone::views
