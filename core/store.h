#pragma once

#include "core/eval_result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct sqlite3;

namespace hone::core {

struct ProblemSpec;

class StoreError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct SessionRecord {
    int64_t id = 0;
    int64_t problemId = 0;
    std::string problemName;
    std::string problemDir;
    std::string problemHash;
    std::string target;
    std::string policy;
    uint64_t seed = 0;
    nlohmann::json config;      // the run options, so that resume continues the same search
    std::string status;         // running | finished | stopped | failed
    std::string stopReason;
    std::string createdAt;
    std::string updatedAt;
};

struct NodeRecord {
    int64_t id = 0;
    int64_t parentId = -1;      // -1 for the root
    int64_t seq = 0;            // proposal order
    std::string sourceHash;     // empty for the root
    nlohmann::json knobs = nlohmann::json::object();
    std::string flags;
    std::string origin;         // root | seed | warm | mutation | crossover | restart | prior | manual | llm | repair
    std::string op;             // memory operator
    std::string createdAt;
    int64_t fromSession = -1;   // a warm-start node: the session and node it was taken from (schema 5)
    int64_t fromNode = -1;
};

/// One timed bench shape of an evaluation (schema 7), from the worker's `shapes`.
struct ShapeResultRecord {
    int64_t index = 0;          // into the problem's bench set
    std::string label;          // "bench[2]"
    double medianNs = 0;
    double baselineMedianNs = 0;
    double speedup = 0;         // interleaved, over the baseline on this shape
    double weight = 1;          // the shape's weight in the objective
    double fracBandwidth = 0;
    double fracCompute = 0;
};

struct EvaluationRecord {
    int64_t nodeId = 0;
    std::string cacheKey;
    std::string status;         // ok | failed
    std::string failureKind;
    std::string failureMessage;
    double medianNs = 0;
    double speedup = 0;
    double reward = 0;
    std::string bound;
    std::string device;
    bool fromCache = false;
    nlohmann::json result;      // the worker's full result, as stored (for export)
    std::string createdAt;
    /// `result` decoded (EvalResult::fromJson); a stored result that no longer decodes reads as
    /// the protocol_error failure it is.
    protocol::EvalResult evalResult() const;
    // Shape sets (schema 7): `speedup` is the weighted geometric mean over these.
    std::vector<ShapeResultRecord> shapes; // per timed bench shape; empty for one bench shape
    std::vector<std::string> slowerShapes; // labels of shapes where it is slower than the baseline
    bool screened = false;      // timed on the screening shape only: speedup is an estimate
};

/// The re-verification of a node (schema 6): one more evaluation of the same candidate in a fresh
/// worker with new check seeds, timing and re-check inputs, made before a session reports its best.
/// It is not a search evaluation: it never enters the tree's statistics or the budget.
struct ReverificationRecord {
    int64_t id = 0;
    int64_t nodeId = 0;
    std::string status;         // verified | failed
    std::string failureKind;
    std::string failureMessage;
    double medianNs = 0;
    double speedup = 0;
    std::string device;
    nlohmann::json config = nlohmann::json::object(); // the request's seeds (check, timing, re-check)
    nlohmann::json result;      // the worker's full result
    std::string createdAt;
};

struct SourceRecord {
    std::string hash;
    std::string lang;
    std::string name;
    std::string text;
};

/// One language-model call: what was asked, what came back, what it cost. Never a key.
struct LlmCallRecord {
    int64_t id = 0;
    int64_t nodeId = -1;        // the node it produced; -1 when it produced none
    std::string purpose;        // propose | repair
    std::string op;             // memory operator of the prompt
    std::string provider;
    std::string model;
    nlohmann::json prompt = nlohmann::json::object(); // {"system", "messages": [{role, content}], ...}
    std::string response;       // the reply text, also when it was rejected
    std::string finishReason;
    int64_t tokensIn = 0;
    int64_t tokensOut = 0;
    bool usageReported = true;  // false: tokens are estimated from the text
    double costUsd = 0;
    double latencyMs = 0;
    double firstTokenMs = 0;
    int attempts = 0;
    int httpStatus = 0;
    std::string status;         // ok | rejected | error
    std::string error;          // why rejected or failed
    std::string createdAt;
};

/// A steering command as applied by the engine (docs/SEARCH.md, "Steering").
struct SteeringRecord {
    int64_t id = 0;
    int64_t nodeId = -1;        // the node it names; for a manual child, the child; -1 when none
    std::string command;        // pause | resume | prune | boost | hint | manual_child | stop
    nlohmann::json payload = nlohmann::json::object(); // hint text, knobs, source name...
    std::string author;
    std::string outcome;        // applied | rejected: why
    std::string createdAt;
};

/// A successful evaluation of an earlier session, for warm starts (Store::priorKernels).
struct PriorKernelRecord {
    int64_t session = 0;
    int64_t node = 0;
    std::string problemName;
    std::string problemHash;
    std::string family;
    bool sameProblem = false;   // same content hash or same name as asked; else same family
    std::string sourceHash;
    nlohmann::json knobs = nlohmann::json::object();
    std::string flags;
    double speedup = 0;
};

/// A review of a candidate: who decided what, on which evidence, and where it was exported.
struct ApprovalRecord {
    int64_t id = 0;
    int64_t nodeId = -1;
    std::string decision;       // approved | rejected
    std::string reviewer;
    std::string note;
    nlohmann::json evidence = nlohmann::json::object();
    std::string exportDir;      // the bundle of an approval; empty for a rejection
    /// Why an approval stands despite the concerns the review panel raised (noisy timing, an
    /// interval that includes 1x, a suspicious time, failing shapes); empty when none were raised.
    std::string justification;
    std::string createdAt;
};

struct LlmTotals {
    int calls = 0;
    int64_t tokensIn = 0;
    int64_t tokensOut = 0;
    double costUsd = 0;
};

/// The one SQLite file (WAL) every session writes to (DESIGN.md §8). Each write is its own
/// transaction, so a killed process loses at most what was in flight. One Store object per
/// thread; several processes may open the same file.
class Store {
public:
    /// Opens or creates the store and applies pending schema migrations.
    explicit Store(const std::filesystem::path& path);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    static constexpr int kSchemaVersion = 9;
    int schemaVersion() const;
    const std::filesystem::path& path() const { return m_path; }

    int64_t upsertProblem(const ProblemSpec& spec);

    /// Content-addressed: returns the SHA-256 of `text`; storing the same text twice is a no-op.
    std::string putSource(const std::string& lang, const std::string& name, const std::string& text);
    std::optional<SourceRecord> source(const std::string& hash) const;

    int64_t createSession(int64_t problemId, const std::string& target, const std::string& policy, uint64_t seed,
        const nlohmann::json& config);
    void setSessionStatus(int64_t sessionId, const std::string& status, const std::string& stopReason);
    std::optional<SessionRecord> session(int64_t sessionId) const;
    std::vector<SessionRecord> sessions() const;

    void insertNode(int64_t sessionId, const NodeRecord& node);
    std::vector<NodeRecord> nodes(int64_t sessionId) const;

    void insertEvaluation(int64_t sessionId, const EvaluationRecord& eval);
    std::vector<EvaluationRecord> evaluations(int64_t sessionId) const;

    /// The best successful evaluations of sessions on `target` (cpu, cuda, ...) other than
    /// `excludeSession`: first those of problems with this content hash or name, then those of
    /// other problems of `family`; best speedup first within each. One row per distinct
    /// (source, knobs, flags) and group, at most `limit` rows.
    std::vector<PriorKernelRecord> priorKernels(const std::string& target, const std::string& problemHash,
        const std::string& problemName, const std::string& family, int64_t excludeSession, int limit) const;

    /// A first-hand (not itself cached) successful or failed evaluation with this key, from
    /// any session.
    std::optional<EvaluationRecord> cachedEvaluation(const std::string& cacheKey) const;

    /// Returns the call's row id.
    int64_t insertLlmCall(int64_t sessionId, const LlmCallRecord& call);
    /// In call order.
    std::vector<LlmCallRecord> llmCalls(int64_t sessionId) const;
    LlmTotals llmTotals(int64_t sessionId) const;

    /// The content hash of a worker cache entry (`kind` object, inputs or reference; `key` its
    /// path in the cache) on `device`: recorded the first time, and then the recorded hash is
    /// returned whenever `sha256` differs from it (nullopt when it is the same, or new).
    std::optional<std::string> recordCacheHash(
        const std::string& device, const std::string& kind, const std::string& key, const std::string& sha256);

    /// Returns the row id.
    int64_t insertReverification(int64_t sessionId, const ReverificationRecord& record);
    /// In the order made; the last one of a node is its standing.
    std::vector<ReverificationRecord> reverifications(int64_t sessionId) const;

    /// Returns the command's row id.
    int64_t insertSteering(int64_t sessionId, const SteeringRecord& record);
    /// In the order applied.
    std::vector<SteeringRecord> steering(int64_t sessionId) const;

    /// Returns the review's row id. Throws on a decision other than approved/rejected or an
    /// empty reviewer.
    int64_t insertApproval(int64_t sessionId, const ApprovalRecord& record);
    /// In the order decided.
    std::vector<ApprovalRecord> approvals(int64_t sessionId) const;

private:
    void migrate();
    void exec(const char* sql);

    std::filesystem::path m_path;
    sqlite3* m_db = nullptr;
};

/// ISO-8601 UTC timestamp with milliseconds.
std::string nowIso();

} // namespace hone::core
