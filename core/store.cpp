#include "core/store.h"

#include "core/sqlite_stmt.h"

#include "core/problem_spec.h"
#include "core/sha256.h"
#include "core/utf8.h"

#include <sqlite3.h>

#include <chrono>
#include <ctime>
#include <thread>

namespace hone::core {
namespace {

/// A prepared statement of the store (core/sqlite_stmt.h).
class Stmt : public sqlite::Statement<StoreError> {
public:
    Stmt(sqlite3* db, const char* sql)
        : Statement(db, sql, "store")
    {
    }
};

// Each entry moves the schema from version i to i+1. Never edit a shipped entry: add one.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE problems (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    family TEXT NOT NULL,
    dir TEXT NOT NULL,
    content_hash TEXT NOT NULL UNIQUE,
    spec TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE sources (
    hash TEXT PRIMARY KEY,
    lang TEXT NOT NULL,
    name TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    problem_id INTEGER NOT NULL REFERENCES problems(id),
    target TEXT NOT NULL,
    policy TEXT NOT NULL,
    seed INTEGER NOT NULL,
    config TEXT NOT NULL,
    status TEXT NOT NULL,
    stop_reason TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE nodes (
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    id INTEGER NOT NULL,
    parent_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    source_hash TEXT REFERENCES sources(hash),
    knobs TEXT NOT NULL,
    flags TEXT NOT NULL,
    origin TEXT NOT NULL,
    operator TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, id)
);
CREATE TABLE evaluations (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    node_id INTEGER NOT NULL,
    cache_key TEXT NOT NULL,
    status TEXT NOT NULL,
    failure_kind TEXT NOT NULL DEFAULT '',
    failure_message TEXT NOT NULL DEFAULT '',
    median_ns REAL NOT NULL DEFAULT 0,
    speedup REAL NOT NULL DEFAULT 0,
    reward REAL NOT NULL DEFAULT 0,
    bound TEXT NOT NULL DEFAULT '',
    device TEXT NOT NULL DEFAULT '',
    from_cache INTEGER NOT NULL DEFAULT 0,
    result TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (session_id, node_id)
);
CREATE INDEX evaluations_by_cache_key ON evaluations(cache_key, from_cache);
)sql",
    // 2: language-model calls (prompt, reply, tokens, cost, latency; never keys).
    R"sql(
CREATE TABLE llm_calls (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    node_id INTEGER NOT NULL DEFAULT -1,
    purpose TEXT NOT NULL,
    operator TEXT NOT NULL DEFAULT '',
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    response TEXT NOT NULL DEFAULT '',
    finish_reason TEXT NOT NULL DEFAULT '',
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    usage_reported INTEGER NOT NULL DEFAULT 1,
    cost_usd REAL NOT NULL DEFAULT 0,
    latency_ms REAL NOT NULL DEFAULT 0,
    first_token_ms REAL NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    http_status INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX llm_calls_by_node ON llm_calls(session_id, node_id);
)sql",
    // 3: steering commands (pause, prune, hint, manual child...) with their time and author.
    R"sql(
CREATE TABLE steering (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    node_id INTEGER NOT NULL DEFAULT -1,
    command TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{}',
    author TEXT NOT NULL DEFAULT '',
    outcome TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX steering_by_session ON steering(session_id, id);
)sql",
    // 4: reviews of candidates (approve or reject), with the evidence and the exported bundle.
    R"sql(
CREATE TABLE approvals (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    node_id INTEGER NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('approved', 'rejected')),
    reviewer TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    evidence TEXT NOT NULL DEFAULT '{}',
    export_dir TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX approvals_by_session ON approvals(session_id, id);
)sql",
    // 5: warm-start nodes record the session and node they were taken from.
    R"sql(
ALTER TABLE nodes ADD COLUMN from_session INTEGER NOT NULL DEFAULT -1;
ALTER TABLE nodes ADD COLUMN from_node INTEGER NOT NULL DEFAULT -1;
)sql",
    // 6: re-verifications of a session's best in a fresh worker with new seeds (not search
    // evaluations: kept apart, so budgets, caches and trees read as before).
    R"sql(
CREATE TABLE IF NOT EXISTS reverifications (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    node_id INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('verified', 'failed')),
    failure_kind TEXT NOT NULL DEFAULT '',
    failure_message TEXT NOT NULL DEFAULT '',
    median_ns REAL NOT NULL DEFAULT 0,
    speedup REAL NOT NULL DEFAULT 0,
    device TEXT NOT NULL DEFAULT '',
    config TEXT NOT NULL DEFAULT '{}',
    result TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS reverifications_by_session ON reverifications(session_id, node_id, id);
)sql",
    // 7: shape sets: per-shape results, the shapes slower than the baseline, screened results.
    R"sql(
ALTER TABLE evaluations ADD COLUMN shapes TEXT NOT NULL DEFAULT '[]';
ALTER TABLE evaluations ADD COLUMN slower_shapes TEXT NOT NULL DEFAULT '[]';
ALTER TABLE evaluations ADD COLUMN screened INTEGER NOT NULL DEFAULT 0;
)sql",
    // 8: an approval despite raised concerns records the reviewer's typed justification.
    R"sql(
ALTER TABLE approvals ADD COLUMN justification TEXT NOT NULL DEFAULT '';
)sql",
    // 9: the content hash of each worker cache entry (compiled object, cached inputs, reference
    // outputs) as first reported for its key on a device: a later result with another hash for
    // the same key is flagged (docs/THREAT_MODEL.md, "Trusted cache").
    R"sql(
CREATE TABLE IF NOT EXISTS cache_hashes (
    device TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (device, kind, key)
);
)sql",
};
static_assert(std::size(kMigrations) == Store::kSchemaVersion);

SessionRecord readSession(const Stmt& s)
{
    SessionRecord r;
    r.id = s.integer(0);
    r.problemId = s.integer(1);
    r.target = s.text(2);
    r.policy = s.text(3);
    r.seed = static_cast<uint64_t>(s.integer(4));
    r.config = s.json(5);
    r.status = s.text(6);
    r.stopReason = s.text(7);
    r.createdAt = s.text(8);
    r.updatedAt = s.text(9);
    r.problemName = s.text(10);
    r.problemDir = s.text(11);
    r.problemHash = s.text(12);
    return r;
}

constexpr const char* kSessionColumns = "SELECT s.id, s.problem_id, s.target, s.policy, s.seed, s.config, s.status, "
                                        "s.stop_reason, s.created_at, s.updated_at, p.name, p.dir, p.content_hash "
                                        "FROM sessions s JOIN problems p ON p.id = s.problem_id";

EvaluationRecord readEvaluation(const Stmt& s)
{
    EvaluationRecord e;
    e.nodeId = s.integer(0);
    e.cacheKey = s.text(1);
    e.status = s.text(2);
    e.failureKind = s.text(3);
    e.failureMessage = s.text(4);
    e.medianNs = s.real(5);
    e.speedup = s.real(6);
    e.reward = s.real(7);
    e.bound = s.text(8);
    e.device = s.text(9);
    e.fromCache = s.integer(10) != 0;
    e.result = s.json(11);
    e.createdAt = s.text(12);
    const nlohmann::json shapes = s.json(13);
    for (const auto& j : shapes.is_array() ? shapes : nlohmann::json::array()) {
        ShapeResultRecord r;
        r.index = j.value("index", int64_t(0));
        r.label = j.value("shape", std::string());
        r.medianNs = j.value("median_ns", 0.0);
        r.baselineMedianNs = j.value("baseline_median_ns", 0.0);
        r.speedup = j.value("speedup", 0.0);
        r.weight = j.value("weight", 1.0);
        r.fracBandwidth = j.value("frac_bandwidth", 0.0);
        r.fracCompute = j.value("frac_compute", 0.0);
        e.shapes.push_back(std::move(r));
    }
    const nlohmann::json slower = s.json(14);
    for (const auto& j : slower.is_array() ? slower : nlohmann::json::array())
        if (j.is_string())
            e.slowerShapes.push_back(j.get<std::string>());
    e.screened = s.integer(15) != 0;
    return e;
}

nlohmann::json shapesJson(const std::vector<ShapeResultRecord>& shapes)
{
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : shapes)
        out.push_back({ { "index", r.index }, { "shape", r.label }, { "median_ns", r.medianNs },
            { "baseline_median_ns", r.baselineMedianNs }, { "speedup", r.speedup }, { "weight", r.weight },
            { "frac_bandwidth", r.fracBandwidth }, { "frac_compute", r.fracCompute } });
    return out;
}

constexpr const char* kEvaluationColumns = "SELECT node_id, cache_key, status, failure_kind, failure_message, median_ns, "
                                           "speedup, reward, bound, device, from_cache, result, created_at, shapes, "
                                           "slower_shapes, screened FROM evaluations";

} // namespace

protocol::EvalResult EvaluationRecord::evalResult() const
{
    try {
        return protocol::EvalResult::fromJson(result);
    } catch (const protocol::ProtocolError& e) {
        return protocol::EvalResult::failed(
            "n" + std::to_string(nodeId), protocol::FailureKind::ProtocolError, "store", e.what());
    }
}

std::string nowIso()
{
    auto now = std::chrono::system_clock::now();
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm {};
    gmtime_r(&t, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[48];
    std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
    return out;
}

Store::Store(const std::filesystem::path& path)
    : m_path(path)
{
    std::error_code ec;
    if (path.has_parent_path())
        std::filesystem::create_directories(path.parent_path(), ec);
    if (sqlite3_open_v2(path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr)
        != SQLITE_OK) {
        std::string msg = m_db ? sqlite3_errmsg(m_db) : "out of memory";
        sqlite3_close(m_db);
        m_db = nullptr;
        throw StoreError("cannot open store " + path.string() + ": " + msg
            + "; check the path and its permissions, or pass --store PATH");
    }
    sqlite3_busy_timeout(m_db, 5000);
    try {
        exec("PRAGMA journal_mode=WAL");
        exec("PRAGMA synchronous=NORMAL");
        exec("PRAGMA foreign_keys=ON");
        migrate();
    } catch (...) {
        sqlite3_close(m_db);
        m_db = nullptr;
        throw;
    }
}

Store::~Store()
{
    if (m_db)
        sqlite3_close(m_db);
}

void Store::exec(const char* sql)
{
    sqlite::exec<StoreError>(m_db, sql, "store " + m_path.string());
}

int Store::schemaVersion() const
{
    Stmt s(m_db, "PRAGMA user_version");
    s.step();
    return static_cast<int>(s.integer(0));
}

void Store::migrate()
{
    int version = schemaVersion();
    constexpr int known = static_cast<int>(std::size(kMigrations));
    if (version > known)
        throw StoreError("store " + m_path.string() + " has schema version " + std::to_string(version)
            + ", newer than this hone understands (" + std::to_string(known) + "); upgrade hone");
    for (int v = version; v < known; ++v) {
        exec("BEGIN IMMEDIATE");
        try {
            // Another process may have migrated between our read and the write lock: read again
            // under the lock, so two processes opening a new store never both create its tables.
            if (schemaVersion() > v) {
                exec("COMMIT");
                continue;
            }
            exec(kMigrations[v]);
            exec(("PRAGMA user_version = " + std::to_string(v + 1)).c_str());
            exec("COMMIT");
        } catch (...) {
            exec("ROLLBACK");
            throw;
        }
    }
}

int64_t Store::upsertProblem(const ProblemSpec& spec)
{
    {
        Stmt find(m_db, "SELECT id FROM problems WHERE content_hash = ?");
        find.bind(1, spec.contentHash);
        if (find.step())
            return find.integer(0);
    }
    nlohmann::json summary = {{"name", spec.name}, {"family", spec.family}, {"description", spec.description},
        {"baseline", spec.baseline}};
    Stmt ins(m_db, "INSERT INTO problems(name, family, dir, content_hash, spec, created_at) VALUES(?,?,?,?,?,?)");
    ins.bind(1, spec.name).bind(2, spec.family).bind(3, std::filesystem::absolute(spec.dir).string());
    ins.bind(4, spec.contentHash).bindJson(5, summary).bind(6, nowIso());
    ins.run();
    return sqlite3_last_insert_rowid(m_db);
}

std::string Store::putSource(const std::string& lang, const std::string& name, const std::string& text)
{
    std::string hash = sha256Hex(text);
    Stmt s(m_db, "INSERT OR IGNORE INTO sources(hash, lang, name, text) VALUES(?,?,?,?)");
    s.bind(1, hash).bind(2, lang).bind(3, name).bindBytes(4, text);
    s.run();
    return hash;
}

std::optional<SourceRecord> Store::source(const std::string& hash) const
{
    Stmt s(m_db, "SELECT hash, lang, name, text FROM sources WHERE hash = ?");
    s.bind(1, hash);
    if (!s.step())
        return std::nullopt;
    return SourceRecord {s.text(0), s.text(1), s.text(2), s.bytes(3)};
}

int64_t Store::createSession(int64_t problemId, const std::string& target, const std::string& policy, uint64_t seed,
    const nlohmann::json& config)
{
    std::string now = nowIso();
    Stmt s(m_db, "INSERT INTO sessions(problem_id, target, policy, seed, config, status, created_at, updated_at) "
                 "VALUES(?,?,?,?,?,'running',?,?)");
    s.bind(1, problemId).bind(2, target).bind(3, policy).bind(4, static_cast<int64_t>(seed)).bindJson(5, config);
    s.bind(6, now).bind(7, now);
    s.run();
    return sqlite3_last_insert_rowid(m_db);
}

void Store::setSessionStatus(int64_t sessionId, const std::string& status, const std::string& stopReason)
{
    Stmt s(m_db, "UPDATE sessions SET status = ?, stop_reason = ?, updated_at = ? WHERE id = ?");
    s.bind(1, status).bind(2, stopReason).bind(3, nowIso()).bind(4, sessionId);
    s.run();
}

std::optional<SessionRecord> Store::session(int64_t sessionId) const
{
    Stmt s(m_db, (std::string(kSessionColumns) + " WHERE s.id = ?").c_str());
    s.bind(1, sessionId);
    if (!s.step())
        return std::nullopt;
    return readSession(s);
}

std::vector<SessionRecord> Store::sessions() const
{
    Stmt s(m_db, (std::string(kSessionColumns) + " ORDER BY s.id").c_str());
    std::vector<SessionRecord> out;
    while (s.step())
        out.push_back(readSession(s));
    return out;
}

void Store::insertNode(int64_t sessionId, const NodeRecord& n)
{
    Stmt s(m_db, "INSERT INTO nodes(session_id, id, parent_id, seq, source_hash, knobs, flags, origin, operator, "
                 "created_at, from_session, from_node) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    s.bind(1, sessionId).bind(2, n.id).bind(3, n.parentId).bind(4, n.seq);
    if (n.sourceHash.empty())
        s.bindNull(5);
    else
        s.bind(5, n.sourceHash);
    s.bindJson(6, n.knobs).bind(7, n.flags).bind(8, n.origin).bind(9, n.op);
    s.bind(10, n.createdAt.empty() ? nowIso() : n.createdAt);
    s.bind(11, n.fromSession).bind(12, n.fromNode);
    s.run();
}

std::vector<NodeRecord> Store::nodes(int64_t sessionId) const
{
    Stmt s(m_db, "SELECT id, parent_id, seq, source_hash, knobs, flags, origin, operator, created_at, from_session, "
                 "from_node FROM nodes WHERE session_id = ? ORDER BY id");
    s.bind(1, sessionId);
    std::vector<NodeRecord> out;
    while (s.step()) {
        NodeRecord n;
        n.id = s.integer(0);
        n.parentId = s.integer(1);
        n.seq = s.integer(2);
        n.sourceHash = s.text(3);
        n.knobs = s.json(4);
        n.flags = s.text(5);
        n.origin = s.text(6);
        n.op = s.text(7);
        n.createdAt = s.text(8);
        n.fromSession = s.integer(9);
        n.fromNode = s.integer(10);
        out.push_back(std::move(n));
    }
    return out;
}

void Store::insertEvaluation(int64_t sessionId, const EvaluationRecord& e)
{
    Stmt s(m_db, "INSERT OR REPLACE INTO evaluations(session_id, node_id, cache_key, status, failure_kind, "
                 "failure_message, median_ns, speedup, reward, bound, device, from_cache, result, created_at, "
                 "shapes, slower_shapes, screened) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    s.bind(1, sessionId).bind(2, e.nodeId).bind(3, e.cacheKey).bind(4, e.status).bind(5, e.failureKind);
    s.bind(6, e.failureMessage).bind(7, e.medianNs).bind(8, e.speedup).bind(9, e.reward).bind(10, e.bound);
    s.bind(11, e.device).bind(12, int64_t(e.fromCache ? 1 : 0)).bindJson(13, e.result);
    s.bind(14, e.createdAt.empty() ? nowIso() : e.createdAt);
    s.bindJson(15, shapesJson(e.shapes)).bindJson(16, nlohmann::json(e.slowerShapes));
    s.bind(17, int64_t(e.screened ? 1 : 0));
    s.run();
    Stmt touch(m_db, "UPDATE sessions SET updated_at = ? WHERE id = ?");
    touch.bind(1, nowIso()).bind(2, sessionId);
    touch.run();
}

std::vector<EvaluationRecord> Store::evaluations(int64_t sessionId) const
{
    Stmt s(m_db, (std::string(kEvaluationColumns) + " WHERE session_id = ? ORDER BY node_id").c_str());
    s.bind(1, sessionId);
    std::vector<EvaluationRecord> out;
    while (s.step())
        out.push_back(readEvaluation(s));
    return out;
}

std::vector<PriorKernelRecord> Store::priorKernels(const std::string& target, const std::string& problemHash,
    const std::string& problemName, const std::string& family, int64_t excludeSession, int limit) const
{
    // SQLite takes the bare columns of a MAX() aggregate from the row with the maximum, so each
    // group gives its best evaluation. Ties go to the earliest session and node.
    Stmt s(m_db, "SELECT e.session_id, e.node_id, p.name, p.content_hash, p.family, n.source_hash, n.knobs, n.flags, "
                 "MAX(e.speedup), (p.content_hash = ?1 OR p.name = ?2) AS same "
                 "FROM evaluations e "
                 "JOIN sessions s ON s.id = e.session_id "
                 "JOIN problems p ON p.id = s.problem_id "
                 "JOIN nodes n ON n.session_id = e.session_id AND n.id = e.node_id "
                 "WHERE e.status = 'ok' AND e.speedup > 0 AND s.target = ?3 AND s.id != ?4 "
                 "AND n.source_hash IS NOT NULL AND (p.content_hash = ?1 OR p.name = ?2 OR p.family = ?5) "
                 "AND COALESCE((SELECT r.status FROM reverifications r WHERE r.session_id = e.session_id "
                 "AND r.node_id = e.node_id ORDER BY r.id DESC LIMIT 1), '') != 'failed' "
                 "GROUP BY same, n.source_hash, n.knobs, n.flags "
                 "ORDER BY same DESC, MAX(e.speedup) DESC, e.session_id, e.node_id LIMIT ?6");
    s.bind(1, problemHash).bind(2, problemName).bind(3, target).bind(4, excludeSession).bind(5, family);
    s.bind(6, int64_t(limit));
    std::vector<PriorKernelRecord> out;
    while (s.step()) {
        PriorKernelRecord r;
        r.session = s.integer(0);
        r.node = s.integer(1);
        r.problemName = s.text(2);
        r.problemHash = s.text(3);
        r.family = s.text(4);
        r.sourceHash = s.text(5);
        r.knobs = s.json(6);
        r.flags = s.text(7);
        r.speedup = s.real(8);
        r.sameProblem = s.integer(9) != 0;
        out.push_back(std::move(r));
    }
    return out;
}

std::optional<EvaluationRecord> Store::cachedEvaluation(const std::string& cacheKey) const
{
    Stmt s(m_db, (std::string(kEvaluationColumns) + " WHERE cache_key = ? AND from_cache = 0 ORDER BY id LIMIT 1").c_str());
    s.bind(1, cacheKey);
    if (!s.step())
        return std::nullopt;
    return readEvaluation(s);
}

int64_t Store::insertLlmCall(int64_t sessionId, const LlmCallRecord& c)
{
    Stmt s(m_db, "INSERT INTO llm_calls(session_id, node_id, purpose, operator, provider, model, prompt, "
                 "response, finish_reason, tokens_in, tokens_out, usage_reported, cost_usd, latency_ms, "
                 "first_token_ms, attempts, http_status, status, error, created_at) "
                 "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    s.bind(1, sessionId).bind(2, c.nodeId).bind(3, c.purpose).bind(4, c.op).bind(5, c.provider);
    s.bind(6, c.model).bindJson(7, c.prompt).bind(8, c.response).bind(9, c.finishReason);
    s.bind(10, c.tokensIn).bind(11, c.tokensOut).bind(12, int64_t(c.usageReported ? 1 : 0));
    s.bind(13, c.costUsd).bind(14, c.latencyMs).bind(15, c.firstTokenMs).bind(16, int64_t(c.attempts));
    s.bind(17, int64_t(c.httpStatus)).bind(18, c.status).bind(19, c.error);
    s.bind(20, c.createdAt.empty() ? nowIso() : c.createdAt);
    s.run();
    return sqlite3_last_insert_rowid(m_db);
}

std::vector<LlmCallRecord> Store::llmCalls(int64_t sessionId) const
{
    Stmt s(m_db, "SELECT id, node_id, purpose, operator, provider, model, prompt, response, finish_reason, "
                 "tokens_in, tokens_out, usage_reported, cost_usd, latency_ms, first_token_ms, attempts, "
                 "http_status, status, error, created_at FROM llm_calls WHERE session_id = ? ORDER BY id");
    s.bind(1, sessionId);
    std::vector<LlmCallRecord> out;
    while (s.step()) {
        LlmCallRecord c;
        c.id = s.integer(0);
        c.nodeId = s.integer(1);
        c.purpose = s.text(2);
        c.op = s.text(3);
        c.provider = s.text(4);
        c.model = s.text(5);
        c.prompt = s.json(6);
        c.response = s.text(7);
        c.finishReason = s.text(8);
        c.tokensIn = s.integer(9);
        c.tokensOut = s.integer(10);
        c.usageReported = s.integer(11) != 0;
        c.costUsd = s.real(12);
        c.latencyMs = s.real(13);
        c.firstTokenMs = s.real(14);
        c.attempts = static_cast<int>(s.integer(15));
        c.httpStatus = static_cast<int>(s.integer(16));
        c.status = s.text(17);
        c.error = s.text(18);
        c.createdAt = s.text(19);
        out.push_back(std::move(c));
    }
    return out;
}

LlmTotals Store::llmTotals(int64_t sessionId) const
{
    Stmt s(m_db, "SELECT COUNT(*), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0), "
                 "COALESCE(SUM(cost_usd), 0) FROM llm_calls WHERE session_id = ?");
    s.bind(1, sessionId);
    LlmTotals t;
    if (s.step()) {
        t.calls = static_cast<int>(s.integer(0));
        t.tokensIn = s.integer(1);
        t.tokensOut = s.integer(2);
        t.costUsd = s.real(3);
    }
    return t;
}

std::optional<std::string> Store::recordCacheHash(
    const std::string& device, const std::string& kind, const std::string& key, const std::string& sha256)
{
    {
        Stmt s(m_db, "INSERT OR IGNORE INTO cache_hashes (device, kind, key, sha256, created_at) VALUES (?, ?, ?, ?, ?)");
        s.bind(1, device).bind(2, kind).bind(3, key).bind(4, sha256).bind(5, nowIso());
        s.run();
    }
    Stmt s(m_db, "SELECT sha256 FROM cache_hashes WHERE device = ? AND kind = ? AND key = ?");
    s.bind(1, device).bind(2, kind).bind(3, key);
    if (s.step() && s.text(0) != sha256)
        return s.text(0);
    return std::nullopt;
}

int64_t Store::insertReverification(int64_t sessionId, const ReverificationRecord& r)
{
    if (r.status != "verified" && r.status != "failed")
        throw StoreError("re-verification of node " + std::to_string(r.nodeId) + ": status '" + r.status
            + "' must be 'verified' or 'failed'");
    Stmt s(m_db, "INSERT INTO reverifications(session_id, node_id, status, failure_kind, failure_message, median_ns, "
                 "speedup, device, config, result, created_at) VALUES(?,?,?,?,?,?,?,?,?,?,?)");
    s.bind(1, sessionId).bind(2, r.nodeId).bind(3, r.status).bind(4, r.failureKind).bind(5, r.failureMessage);
    s.bind(6, r.medianNs).bind(7, r.speedup).bind(8, r.device).bindJson(9, r.config).bindJson(10, r.result);
    s.bind(11, r.createdAt.empty() ? nowIso() : r.createdAt);
    s.run();
    return sqlite3_last_insert_rowid(m_db);
}

std::vector<ReverificationRecord> Store::reverifications(int64_t sessionId) const
{
    Stmt s(m_db, "SELECT id, node_id, status, failure_kind, failure_message, median_ns, speedup, device, config, "
                 "result, created_at FROM reverifications WHERE session_id = ? ORDER BY id");
    s.bind(1, sessionId);
    std::vector<ReverificationRecord> out;
    while (s.step()) {
        ReverificationRecord r;
        r.id = s.integer(0);
        r.nodeId = s.integer(1);
        r.status = s.text(2);
        r.failureKind = s.text(3);
        r.failureMessage = s.text(4);
        r.medianNs = s.real(5);
        r.speedup = s.real(6);
        r.device = s.text(7);
        r.config = s.json(8);
        r.result = s.json(9);
        r.createdAt = s.text(10);
        out.push_back(std::move(r));
    }
    return out;
}

int64_t Store::insertSteering(int64_t sessionId, const SteeringRecord& r)
{
    Stmt s(m_db, "INSERT INTO steering(session_id, node_id, command, payload, author, outcome, created_at) "
                 "VALUES(?,?,?,?,?,?,?)");
    s.bind(1, sessionId).bind(2, r.nodeId).bind(3, r.command).bindJson(4, r.payload).bind(5, r.author);
    s.bind(6, r.outcome).bind(7, r.createdAt.empty() ? nowIso() : r.createdAt);
    s.run();
    return sqlite3_last_insert_rowid(m_db);
}

std::vector<SteeringRecord> Store::steering(int64_t sessionId) const
{
    Stmt s(m_db, "SELECT id, node_id, command, payload, author, outcome, created_at FROM steering "
                 "WHERE session_id = ? ORDER BY id");
    s.bind(1, sessionId);
    std::vector<SteeringRecord> out;
    while (s.step()) {
        SteeringRecord r;
        r.id = s.integer(0);
        r.nodeId = s.integer(1);
        r.command = s.text(2);
        r.payload = nlohmann::json::parse(s.text(3), nullptr, false);
        if (r.payload.is_discarded())
            r.payload = nlohmann::json::object();
        r.author = s.text(4);
        r.outcome = s.text(5);
        r.createdAt = s.text(6);
        out.push_back(std::move(r));
    }
    return out;
}

int64_t Store::insertApproval(int64_t sessionId, const ApprovalRecord& r)
{
    if (r.decision != "approved" && r.decision != "rejected")
        throw StoreError("approval of node " + std::to_string(r.nodeId) + ": decision '" + r.decision
            + "' must be 'approved' or 'rejected'");
    if (r.reviewer.empty())
        throw StoreError("approval of node " + std::to_string(r.nodeId) + ": a reviewer's name is required");
    Stmt s(m_db, "INSERT INTO approvals(session_id, node_id, decision, reviewer, note, evidence, export_dir, created_at, "
                 "justification) VALUES(?,?,?,?,?,?,?,?,?)");
    s.bind(1, sessionId).bind(2, r.nodeId).bind(3, r.decision).bind(4, r.reviewer).bind(5, r.note);
    s.bindJson(6, r.evidence).bind(7, r.exportDir).bind(8, r.createdAt.empty() ? nowIso() : r.createdAt);
    s.bind(9, r.justification);
    s.run();
    return sqlite3_last_insert_rowid(m_db);
}

std::vector<ApprovalRecord> Store::approvals(int64_t sessionId) const
{
    Stmt s(m_db, "SELECT id, node_id, decision, reviewer, note, evidence, export_dir, created_at, justification "
                 "FROM approvals WHERE session_id = ? ORDER BY id");
    s.bind(1, sessionId);
    std::vector<ApprovalRecord> out;
    while (s.step()) {
        ApprovalRecord r;
        r.id = s.integer(0);
        r.nodeId = s.integer(1);
        r.decision = s.text(2);
        r.reviewer = s.text(3);
        r.note = s.text(4);
        r.evidence = s.json(5);
        r.exportDir = s.text(6);
        r.createdAt = s.text(7);
        r.justification = s.text(8);
        out.push_back(std::move(r));
    }
    return out;
}

} // namespace hone::core
