#pragma once

#include "knowledge/document.h"
#include "knowledge/retrieval.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace hone::core {
class Store;
}

namespace hone::knowledge {

struct Skill;

/// One stored version of a document.
struct DocumentInfo {
    int64_t id = 0;
    std::string uid;
    int version = 1;
    std::string title;
    Category category = Category::Guidance;
    Tags tags;
    std::string format;
    std::string origin;
    std::string contentHash;
    std::string createdAt;
    std::string removedAt; // empty while this version is the live one
    int chunks = 0;
    bool live() const { return removedAt.empty(); }
};

struct StoredChunk {
    int64_t id = 0;
    int64_t docId = 0;
    int ordinal = 0;
    std::string heading;
    std::string body;
    int pageFirst = 0;
    int pageLast = 0;
};

enum class AddStatus {
    Added, // a new document (or a new version of a removed one)
    Updated, // a new version replaced the live one; the old one stays in the history
    Unchanged, // same uid, same text and tags: nothing written
    Duplicate, // another live document has the same text: nothing written
};
const char* addStatusName(AddStatus s);

struct AddResult {
    AddStatus status = AddStatus::Added;
    int64_t docId = 0; // the live version after the call
    std::string uid;
    int version = 0;
    int chunks = 0;
    std::string note; // for Duplicate: the uid of the document with the same text
};

/// One retrieved chunk used for one candidate.
struct HitRecord {
    int64_t session = 0;
    int64_t node = 0;
    int64_t chunkId = 0;
    int rank = 0;
    double score = 0;
    std::string query;
    std::optional<bool> beatParent; // unknown until the candidate and its parent are evaluated
    std::string createdAt;
};

/// How the candidates that used a chunk fared against their parents.
struct ChunkStats {
    int64_t chunkId = 0;
    int uses = 0; // hits recorded
    int decided = 0; // hits whose outcome is known
    int wins = 0; // ... where the candidate beat its parent
    double winRate() const { return decided ? double(wins) / decided : 0.0; }
};

/// The knowledge base (DESIGN.md §7): documents in four categories, tagged by platform, arch
/// and op family, chunked by heading and indexed with SQLite FTS5 (BM25); hit logging with
/// per-chunk outcomes; skills distilled from sessions. Its tables (kb_*) live in the session
/// store's file or a file of their own, with their own schema version in `kb_meta`.
///
/// Every write is one transaction: a failed add or import leaves the base as it was. Updates
/// and removals keep the old versions (and the chunks that hits point at) as history.
class KnowledgeBase {
public:
    explicit KnowledgeBase(const std::filesystem::path& path, ChunkOptions chunking = {});
    ~KnowledgeBase();
    KnowledgeBase(const KnowledgeBase&) = delete;
    KnowledgeBase& operator=(const KnowledgeBase&) = delete;

    static constexpr int kSchemaVersion = 1;
    int schemaVersion() const;
    const std::filesystem::path& path() const { return m_path; }

    /// Stores a document: new, a new version of the live one with the same uid, or nothing
    /// when it is unchanged or duplicates another document's text.
    AddResult add(const SourceDocument& doc);
    /// All or nothing: when one document fails, none is stored.
    std::vector<AddResult> addAll(const std::vector<SourceDocument>& docs);

    /// Retires the live version of a document (by uid, or "#ID"); its history stays. False
    /// when there is no such live document.
    bool remove(const std::string& uidOrId);

    /// Live documents, or every version with `withHistory`, ordered by uid then version.
    std::vector<DocumentInfo> documents(bool withHistory = false) const;
    /// The live version for a uid, or any version for "#ID".
    std::optional<DocumentInfo> document(const std::string& uidOrId) const;
    /// Every version of a uid, oldest first.
    std::vector<DocumentInfo> history(const std::string& uid) const;
    std::vector<StoredChunk> chunks(int64_t docId) const;
    std::optional<StoredChunk> chunk(int64_t chunkId) const;
    int liveChunkCount() const;

    /// Free-text search: the words of `text` OR-ed, BM25 over title, heading, body and tags,
    /// filtered by `filter`. Best first.
    std::vector<Hit> search(const std::string& text, const SearchFilter& filter, int k) const;
    /// The retrieval policy: a query built from runtime signals (see planQuery), best first,
    /// each hit with its score and the terms it matched.
    std::vector<Hit> retrieve(const RetrievalSignals& query, int k) const;
    std::vector<Hit> run(const QueryPlan& plan, int k) const;

    /// Records the hits a candidate was built with (rank = position in `hits`, from 1).
    void recordHits(
        int64_t session, int64_t node, const std::vector<Hit>& hits, const std::string& query = {});
    /// Sets the outcome of every hit of (session, node); returns how many hits it updated.
    int recordOutcome(int64_t session, int64_t node, bool beatParent);
    /// Fills in the outcomes of a session's hits from its evaluations in `store`: a candidate
    /// beat its parent when it passed and its speedup is higher than the parent's. Returns the
    /// number of hits updated.
    int syncOutcomes(const core::Store& store, int64_t session);
    std::vector<HitRecord> hits(int64_t session, std::optional<int64_t> node = std::nullopt) const;
    ChunkStats chunkStats(int64_t chunkId) const;

    /// Writes a skill back: a skill document (category skill) plus its structured record.
    AddResult addSkill(const Skill& skill);
    /// Skills of live skill documents for `family` (empty: any) on an arch compatible with
    /// `arch` (empty: any), best gain first.
    std::vector<Skill> skills(const std::string& family = {}, const std::string& arch = {}) const;

    /// A bundle of the live documents (chunks, tags, skills) to share a curated base.
    nlohmann::json exportBundle() const;
    /// Adds a bundle's documents like `addAll` (all or nothing). `name` is used in messages.
    std::vector<AddResult> importBundle(const nlohmann::json& bundle, const std::string& name);

private:
    void migrate();
    AddResult addLocked(const SourceDocument& doc, const std::string& skillJson);
    std::vector<Hit> finish(std::vector<Hit> pool, const QueryPlan& plan, int k) const;

    std::filesystem::path m_path;
    ChunkOptions m_chunking;
    sqlite3* m_db = nullptr;
};

} // namespace hone::knowledge
