#include "knowledge/knowledge_base.h"

#include "core/sha256.h"
#include "core/store.h"
#include "knowledge/fts_rank.h"
#include "knowledge/sqlite_db.h"

#include <algorithm>
#include <cctype>

namespace hone::knowledge {
namespace {

// Each entry moves the knowledge schema from version i to i+1. Never edit a shipped entry.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE kb_documents (
    id INTEGER PRIMARY KEY,
    uid TEXT NOT NULL,
    version INTEGER NOT NULL,
    title TEXT NOT NULL,
    category TEXT NOT NULL,
    platform TEXT NOT NULL DEFAULT 'any',
    arch TEXT NOT NULL DEFAULT '',          -- ',sm_90,sm_90a,' or '' for any
    family TEXT NOT NULL DEFAULT '',        -- ',softmax,reduction,' or '' for any
    source TEXT NOT NULL DEFAULT '',
    doc_version TEXT NOT NULL DEFAULT '',
    format TEXT NOT NULL,
    origin TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL,             -- of the chunk texts: duplicate detection
    signature TEXT NOT NULL,                -- of text, title and tags: "unchanged" detection
    created_at TEXT NOT NULL,
    removed_at TEXT,                        -- NULL for the live version of a uid
    UNIQUE (uid, version)
);
CREATE UNIQUE INDEX kb_documents_live ON kb_documents(uid) WHERE removed_at IS NULL;
CREATE INDEX kb_documents_by_hash ON kb_documents(content_hash);
CREATE TABLE kb_chunks (
    id INTEGER PRIMARY KEY,
    doc_id INTEGER NOT NULL REFERENCES kb_documents(id),
    ordinal INTEGER NOT NULL,
    heading TEXT NOT NULL,
    body TEXT NOT NULL,
    page_first INTEGER NOT NULL DEFAULT 0,
    page_last INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX kb_chunks_by_doc ON kb_chunks(doc_id, ordinal);
-- Only the chunks of live documents are indexed; rowid = kb_chunks.id.
CREATE VIRTUAL TABLE kb_fts USING fts5(title, heading, body, tags, tokenize = 'porter unicode61');
CREATE TABLE kb_hits (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    chunk_id INTEGER NOT NULL REFERENCES kb_chunks(id),
    rank INTEGER NOT NULL,
    score REAL NOT NULL,
    query TEXT NOT NULL DEFAULT '',
    beat_parent INTEGER,                    -- NULL until known, then 0 or 1
    created_at TEXT NOT NULL
);
CREATE INDEX kb_hits_by_node ON kb_hits(session_id, node_id);
CREATE INDEX kb_hits_by_chunk ON kb_hits(chunk_id);
CREATE VIEW kb_chunk_stats AS
    SELECT chunk_id, COUNT(*) AS uses, COUNT(beat_parent) AS decided, COALESCE(SUM(beat_parent), 0) AS wins
    FROM kb_hits GROUP BY chunk_id;
CREATE TABLE kb_skills (
    id INTEGER PRIMARY KEY,
    doc_id INTEGER NOT NULL REFERENCES kb_documents(id),
    family TEXT NOT NULL,
    arch TEXT NOT NULL,
    gain REAL NOT NULL,
    data TEXT NOT NULL                      -- the Skill as JSON
);
CREATE INDEX kb_skills_by_family ON kb_skills(family);
)sql",
};
constexpr int kMigrationCount = static_cast<int>(sizeof kMigrations / sizeof kMigrations[0]);
static_assert(kMigrationCount == KnowledgeBase::kSchemaVersion);

constexpr const char* kDocColumns
    = "d.id, d.uid, d.version, d.title, d.category, d.platform, d.arch, d.family, "
      "d.source, d.doc_version, d.format, d.origin, d.content_hash, d.created_at, "
      "d.removed_at, (SELECT COUNT(*) FROM kb_chunks c WHERE c.doc_id = d.id)";

std::string joinTags(const std::vector<std::string>& tags)
{
    if (tags.empty())
        return {};
    std::string out = ",";
    for (const auto& t : tags)
        out += t + ",";
    return out;
}

std::vector<std::string> splitTags(const std::string& stored)
{
    std::vector<std::string> out;
    std::string item;
    for (char c : stored) {
        if (c == ',') {
            if (!item.empty())
                out.push_back(item);
            item.clear();
        } else {
            item += c;
        }
    }
    if (!item.empty())
        out.push_back(item);
    return out;
}

DocumentInfo readDoc(const db::Stmt& s)
{
    DocumentInfo d;
    d.id = s.integer(0);
    d.uid = s.text(1);
    d.version = static_cast<int>(s.integer(2));
    d.title = s.text(3);
    d.category = parseCategory(s.text(4)).value_or(Category::Guidance);
    d.tags.platform = s.text(5);
    d.tags.arch = splitTags(s.text(6));
    d.tags.family = splitTags(s.text(7));
    d.tags.source = s.text(8);
    d.tags.version = s.text(9);
    d.format = s.text(10);
    d.origin = s.text(11);
    d.contentHash = s.text(12);
    d.createdAt = s.text(13);
    d.removedAt = s.isNull(14) ? std::string() : s.text(14);
    d.chunks = static_cast<int>(s.integer(15));
    return d;
}

std::string sanitizeUid(const std::string& raw)
{
    std::string out;
    for (unsigned char c : raw) {
        char l = static_cast<char>(std::tolower(c));
        bool keep = std::isalnum(c) || l == '.' || l == '_' || l == '-';
        if (keep)
            out += l;
        else if (!out.empty() && out.back() != '-')
            out += '-';
    }
    while (!out.empty() && out.back() == '-')
        out.pop_back();
    return out;
}

/// Canonical, de-duplicated tags; a platform implied by every arch tag is filled in.
Tags normalTags(const Tags& in)
{
    Tags t = in;
    std::transform(t.platform.begin(), t.platform.end(), t.platform.begin(),
        [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (t.platform.empty())
        t.platform = "any";
    t.arch.clear();
    for (const auto& a : in.arch) {
        std::string c = canonicalArch(a);
        if (c != "any" && std::find(t.arch.begin(), t.arch.end(), c) == t.arch.end())
            t.arch.push_back(c);
    }
    t.family.clear();
    for (const auto& f : in.family) {
        std::string l = f;
        std::transform(l.begin(), l.end(), l.begin(),
            [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (!l.empty() && l != "any" && std::find(t.family.begin(), t.family.end(), l) == t.family.end())
            t.family.push_back(l);
    }
    if (t.platform == "any" && !t.arch.empty()) {
        std::string p = platformOfArch(t.arch.front());
        bool same = !p.empty() && std::all_of(t.arch.begin(), t.arch.end(), [&](const std::string& a) {
            return platformOfArch(a) == p;
        });
        if (same)
            t.platform = p;
    }
    return t;
}

/// The words the tags column of the index holds: what a query about this arch or family
/// should find even when the chunk's text does not repeat them.
std::string indexTags(const Tags& t, Category c)
{
    std::string out = std::string(categoryName(c)) + " " + t.platform;
    for (const auto& a : t.arch) {
        out += " " + a;
        if (a.rfind("sm_90", 0) == 0)
            out += " hopper h100 h200";
        else if (a == "gfx942")
            out += " cdna3 mi300x";
        else if (a.rfind("x86_64", 0) == 0)
            out += " x86 simd";
    }
    for (const auto& f : t.family)
        out += " " + f;
    return out;
}

} // namespace

const char* addStatusName(AddStatus s)
{
    switch (s) {
    case AddStatus::Added:
        return "added";
    case AddStatus::Updated:
        return "updated";
    case AddStatus::Unchanged:
        return "unchanged";
    case AddStatus::Duplicate:
        return "duplicate";
    }
    return "added";
}

KnowledgeBase::KnowledgeBase(const std::filesystem::path& path, ChunkOptions chunking)
    : m_path(path)
    , m_chunking(chunking)
{
    std::error_code ec;
    if (path.has_parent_path())
        std::filesystem::create_directories(path.parent_path(), ec);
    if (sqlite3_open_v2(
            path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr)
        != SQLITE_OK) {
        std::string msg = m_db ? sqlite3_errmsg(m_db) : "out of memory";
        sqlite3_close(m_db);
        m_db = nullptr;
        throw KbError(path.string() + ": cannot open the knowledge base (" + msg
            + "); check that the folder exists and is writable, or choose another file with --kb");
    }
    try {
        sqlite3_busy_timeout(m_db, 10000);
        db::exec(m_db, "PRAGMA journal_mode=WAL");
        db::exec(m_db, "PRAGMA foreign_keys=ON");
        migrate();
        if (!registerRankFunction(m_db))
            throw KbError(
                path.string() + ": this SQLite has no usable FTS5; install a libsqlite3 built with FTS5");
    } catch (const KbError& e) {
        sqlite3_close(m_db);
        m_db = nullptr;
        std::string msg = e.what();
        if (msg.find("file is not a database") != std::string::npos)
            throw KbError(path.string()
                + ": is not an SQLite database; point --kb (or --store) at a hone store or "
                  "at a new file");
        throw;
    }
}

KnowledgeBase::~KnowledgeBase()
{
    sqlite3_close(m_db);
}

int KnowledgeBase::schemaVersion() const
{
    db::Stmt s(m_db, "SELECT value FROM kb_meta WHERE key = 'schema_version'");
    return s.step() ? std::stoi(s.text(0)) : 0;
}

void KnowledgeBase::migrate()
{
    db::exec(m_db, "CREATE TABLE IF NOT EXISTS kb_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    int version = schemaVersion();
    if (version > kSchemaVersion)
        throw KbError(m_path.string() + ": knowledge base schema version " + std::to_string(version)
            + " is newer than this hone understands (" + std::to_string(kSchemaVersion) + "); upgrade hone");
    if (version == 0) {
        // The walking skeleton's unversioned tables: kept under another name, never dropped.
        db::Stmt legacy(m_db, "SELECT 1 FROM sqlite_master WHERE name = 'kb_chunks' AND sql LIKE '%fts5%'");
        if (legacy.step()) {
            db::Transaction tx(m_db);
            db::exec(m_db, "ALTER TABLE kb_chunks RENAME TO kb_legacy_chunks");
            db::exec(m_db, "ALTER TABLE kb_documents RENAME TO kb_legacy_documents");
            tx.commit();
        }
    }
    for (int v = version; v < kSchemaVersion; ++v) {
        db::Transaction tx(m_db);
        db::exec(m_db, kMigrations[v]);
        db::Stmt s(m_db, "INSERT OR REPLACE INTO kb_meta(key, value) VALUES('schema_version', ?)");
        s.bind(1, std::to_string(v + 1)).run();
        tx.commit();
    }
}

AddResult KnowledgeBase::add(const SourceDocument& doc)
{
    db::Transaction tx(m_db);
    AddResult r = addLocked(doc, {});
    tx.commit();
    return r;
}

std::vector<AddResult> KnowledgeBase::addAll(const std::vector<SourceDocument>& docs)
{
    db::Transaction tx(m_db);
    std::vector<AddResult> out;
    for (const auto& d : docs)
        out.push_back(addLocked(d, {}));
    tx.commit();
    return out;
}

AddResult KnowledgeBase::addLocked(const SourceDocument& doc, const std::string& skillJson)
{
    const std::string name = doc.origin.empty() ? doc.uid : doc.origin;
    AddResult r;
    r.uid = sanitizeUid(doc.uid);
    if (r.uid.empty())
        throw IngestError(
            name + ": the document has no usable id; give it one with 'id:' in its front-matter or --id");
    Tags tags = normalTags(doc.tags);
    std::string title = doc.title.empty() ? r.uid : doc.title;
    std::vector<ChunkText> chunks = chunkSections(doc.sections, m_chunking);
    if (chunks.empty())
        throw IngestError(name + ": no text to index; add some text under its headings");

    std::string text;
    for (const auto& c : chunks)
        text += c.heading + '\x1f' + c.body + '\x1e';
    std::string contentHash = core::sha256Hex(text);
    std::string signature = core::sha256Hex(contentHash + '\x1f' + title + '\x1f' + categoryName(doc.category)
        + '\x1f' + tags.platform + '\x1f' + joinTags(tags.arch) + '\x1f' + joinTags(tags.family) + '\x1f'
        + tags.source + '\x1f' + tags.version + '\x1f' + skillJson);

    std::optional<DocumentInfo> live;
    std::string liveSignature;
    {
        db::Stmt s(m_db,
            std::string("SELECT ") + kDocColumns
                + ", d.signature FROM kb_documents d WHERE d.uid = ? AND "
                  "d.removed_at IS NULL");
        s.bind(1, r.uid);
        if (s.step()) {
            live = readDoc(s);
            liveSignature = s.text(16);
        }
    }
    if (live && liveSignature == signature) {
        r.status = AddStatus::Unchanged;
        r.docId = live->id;
        r.version = live->version;
        r.chunks = live->chunks;
        return r;
    }
    {
        db::Stmt s(
            m_db, "SELECT uid FROM kb_documents WHERE content_hash = ? AND removed_at IS NULL AND uid != ?");
        s.bind(1, contentHash).bind(2, r.uid);
        if (s.step()) {
            r.status = AddStatus::Duplicate;
            r.note = s.text(0);
            return r;
        }
    }
    int version = 1;
    {
        db::Stmt s(m_db, "SELECT COALESCE(MAX(version), 0) FROM kb_documents WHERE uid = ?");
        s.bind(1, r.uid);
        if (s.step())
            version = static_cast<int>(s.integer(0)) + 1;
    }
    std::string now = core::nowIso();
    if (live) {
        db::Stmt del(m_db, "DELETE FROM kb_fts WHERE rowid IN (SELECT id FROM kb_chunks WHERE doc_id = ?)");
        del.bind(1, live->id).run();
        db::Stmt old(m_db, "UPDATE kb_documents SET removed_at = ? WHERE id = ?");
        old.bind(1, now).bind(2, live->id).run();
    }
    db::Stmt ins(m_db,
        "INSERT INTO kb_documents(uid, version, title, category, platform, arch, family, source, "
        "doc_version, format, origin, content_hash, signature, created_at) "
        "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    ins.bind(1, r.uid)
        .bind(2, version)
        .bind(3, title)
        .bind(4, categoryName(doc.category))
        .bind(5, tags.platform)
        .bind(6, joinTags(tags.arch))
        .bind(7, joinTags(tags.family))
        .bind(8, tags.source)
        .bind(9, tags.version)
        .bind(10, doc.format)
        .bind(11, doc.origin)
        .bind(12, contentHash)
        .bind(13, signature)
        .bind(14, now)
        .run();
    int64_t docId = sqlite3_last_insert_rowid(m_db);
    db::Stmt chunk(m_db,
        "INSERT INTO kb_chunks(doc_id, ordinal, heading, body, page_first, page_last) "
        "VALUES(?,?,?,?,?,?)");
    db::Stmt fts(m_db, "INSERT INTO kb_fts(rowid, title, heading, body, tags) VALUES(?,?,?,?,?)");
    std::string tagWords = indexTags(tags, doc.category);
    for (size_t i = 0; i < chunks.size(); ++i) {
        const ChunkText& c = chunks[i];
        chunk.reset();
        chunk.bind(1, docId).bind(2, static_cast<int>(i)).bind(3, c.heading).bind(4, c.body);
        chunk.bind(5, c.pageFirst).bind(6, c.pageLast).run();
        int64_t chunkId = sqlite3_last_insert_rowid(m_db);
        fts.reset();
        fts.bind(1, chunkId).bind(2, title).bind(3, c.heading).bind(4, c.body).bind(5, tagWords).run();
    }
    if (!skillJson.empty()) {
        auto j = nlohmann::json::parse(skillJson);
        db::Stmt sk(m_db, "INSERT INTO kb_skills(doc_id, family, arch, gain, data) VALUES(?,?,?,?,?)");
        sk.bind(1, docId)
            .bind(2, j.value("family", std::string()))
            .bind(3, canonicalArch(j.value("arch", std::string())))
            .bind(4, j.value("gain", 1.0))
            .bind(5, skillJson)
            .run();
    }
    r.status = live ? AddStatus::Updated : AddStatus::Added;
    r.docId = docId;
    r.version = version;
    r.chunks = static_cast<int>(chunks.size());
    return r;
}

bool KnowledgeBase::remove(const std::string& uidOrId)
{
    db::Transaction tx(m_db);
    std::optional<DocumentInfo> d = document(uidOrId);
    if (!d || !d->live())
        return false;
    db::Stmt del(m_db, "DELETE FROM kb_fts WHERE rowid IN (SELECT id FROM kb_chunks WHERE doc_id = ?)");
    del.bind(1, d->id).run();
    db::Stmt upd(m_db, "UPDATE kb_documents SET removed_at = ? WHERE id = ?");
    upd.bind(1, core::nowIso()).bind(2, d->id).run();
    tx.commit();
    return true;
}

std::vector<DocumentInfo> KnowledgeBase::documents(bool withHistory) const
{
    std::string sql = std::string("SELECT ") + kDocColumns + " FROM kb_documents d"
        + (withHistory ? "" : " WHERE d.removed_at IS NULL") + " ORDER BY d.uid, d.version";
    db::Stmt s(m_db, sql);
    std::vector<DocumentInfo> out;
    while (s.step())
        out.push_back(readDoc(s));
    return out;
}

std::optional<DocumentInfo> KnowledgeBase::document(const std::string& uidOrId) const
{
    if (uidOrId.size() > 1 && uidOrId[0] == '#') {
        int64_t id = 0;
        try {
            id = std::stoll(uidOrId.substr(1));
        } catch (const std::exception&) {
            return std::nullopt;
        }
        db::Stmt s(m_db, std::string("SELECT ") + kDocColumns + " FROM kb_documents d WHERE d.id = ?");
        s.bind(1, id);
        if (s.step())
            return readDoc(s);
        return std::nullopt;
    }
    db::Stmt s(m_db,
        std::string("SELECT ") + kDocColumns
            + " FROM kb_documents d WHERE d.uid = ? AND d.removed_at IS NULL");
    s.bind(1, sanitizeUid(uidOrId));
    if (s.step())
        return readDoc(s);
    return std::nullopt;
}

std::vector<DocumentInfo> KnowledgeBase::history(const std::string& uid) const
{
    db::Stmt s(m_db,
        std::string("SELECT ") + kDocColumns + " FROM kb_documents d WHERE d.uid = ? ORDER BY d.version");
    s.bind(1, sanitizeUid(uid));
    std::vector<DocumentInfo> out;
    while (s.step())
        out.push_back(readDoc(s));
    return out;
}

std::vector<StoredChunk> KnowledgeBase::chunks(int64_t docId) const
{
    db::Stmt s(m_db,
        "SELECT id, doc_id, ordinal, heading, body, page_first, page_last FROM kb_chunks WHERE doc_id = ? "
        "ORDER BY ordinal");
    s.bind(1, docId);
    std::vector<StoredChunk> out;
    while (s.step())
        out.push_back({ s.integer(0), s.integer(1), static_cast<int>(s.integer(2)), s.text(3), s.text(4),
            static_cast<int>(s.integer(5)), static_cast<int>(s.integer(6)) });
    return out;
}

std::optional<StoredChunk> KnowledgeBase::chunk(int64_t chunkId) const
{
    db::Stmt s(
        m_db, "SELECT id, doc_id, ordinal, heading, body, page_first, page_last FROM kb_chunks WHERE id = ?");
    s.bind(1, chunkId);
    if (!s.step())
        return std::nullopt;
    return StoredChunk { s.integer(0), s.integer(1), static_cast<int>(s.integer(2)), s.text(3), s.text(4),
        static_cast<int>(s.integer(5)), static_cast<int>(s.integer(6)) };
}

int KnowledgeBase::liveChunkCount() const
{
    db::Stmt s(m_db,
        "SELECT COUNT(*) FROM kb_chunks c JOIN kb_documents d ON d.id = c.doc_id WHERE d.removed_at IS NULL");
    return s.step() ? static_cast<int>(s.integer(0)) : 0;
}

} // namespace hone::knowledge
