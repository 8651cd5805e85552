// Re-verification of a session's best (issue 18): before a report names a node as best, the
// node's exact candidate is evaluated once more through the executor (a fresh worker for local
// executors), never from the evaluation cache, with check seeds, timing input sets and re-check
// inputs that the search never used. A node that fails is excluded and the next best is tried.

#include "core/engine.h"

#include "core/sha256.h"
#include "core/store.h"

#include <chrono>
#include <map>
#include <set>

namespace hone::core {
namespace {

constexpr int kReverifyTries = 3;

/// Seeds no search request uses (those are small: 1, 2, 3, 1000 by default), derived from the
/// session and node so that a spooled request asked again after `resume` is the same request.
uint64_t reverifySeed(const std::string& problemHash, int64_t session, uint64_t runSeed, NodeId node, int attempt)
{
    const std::string digest = sha256Hex(problemHash + "/reverify/" + std::to_string(session) + "/"
        + std::to_string(runSeed) + "/" + std::to_string(node) + "/" + std::to_string(attempt));
    return 1'000'000 + std::stoull(digest.substr(0, 12), nullptr, 16) % 1'000'000'000ull;
}

} // namespace

Reverification Engine::reverifyNode(NodeId id, int attempt)
{
    Reverification out;
    out.node = id;
    const uint64_t base = reverifySeed(m_problemHash, m_session, m_options.seed, id, attempt);
    protocol::EvalRequest req = makeEvalRequest(id);
    const std::string jobId = req.id + "-reverify" + std::to_string(attempt);
    req.id = jobId;
    req.seeds = {base, base + 1, base + 2};
    req.timingSeed = base + 100; // the timing input sets are this seed and the next ones
    req.recheckSeed = base + 200;
    out.config = {{"seeds", req.seeds}, {"timing_seed", req.timingSeed}, {"recheck_seed", req.recheckSeed}};

    m_executor.submit(EvalJob {jobId, req.toJson()});
    nlohmann::json result;
    while (true) {
        if (m_stopRequested) {
            m_executor.cancelAll();
            out.failureKind = "stopped";
            out.failureMessage = "stopped by request during the re-verification";
            return out;
        }
        auto done = m_executor.next(std::chrono::milliseconds(200));
        if (done && done->id == jobId) {
            result = std::move(done->result);
            break;
        }
    }
    protocol::EvalResult s;
    try {
        s = protocol::EvalResult::fromJson(result);
    } catch (const protocol::ProtocolError& e) {
        s = protocol::EvalResult::failed(jobId, protocol::FailureKind::ProtocolError, "result", e.what());
    }
    flagCacheChanges(s);
    applyObjective(id, s, 0); // all shapes timed: the search's objective, not an estimate
    out.verified = s.ok();
    out.failureKind = s.ok() ? std::string() : protocol::failureKindName(s.failureKind());
    out.failureMessage = s.ok() ? std::string() : s.failure->message;
    out.medianNs = s.medianNs();
    out.speedup = s.speedup();

    ReverificationRecord rec;
    rec.nodeId = id;
    rec.status = s.ok() ? "verified" : "failed";
    rec.failureKind = out.failureKind;
    rec.failureMessage = out.failureMessage;
    rec.medianNs = out.medianNs;
    rec.speedup = out.speedup;
    rec.device = m_device;
    rec.config = out.config;
    rec.result = s.toJson();
    m_store.insertReverification(m_session, rec);
    return out;
}

void Engine::reverifyBest(Report& report)
{
    // A node's standing is its last re-verification (an earlier run of a resumed session).
    std::map<NodeId, ReverificationRecord> last;
    for (auto& r : m_store.reverifications(m_session))
        last[r.nodeId] = std::move(r);
    std::set<NodeId> excluded;
    for (const auto& [id, r] : last)
        if (r.status == "failed")
            excluded.insert(id);
    auto bestLeft = [&]() -> std::optional<NodeId> {
        std::optional<NodeId> best;
        for (const Node& n : m_tree.nodes()) {
            if (n.id == 0 || n.state != NodeState::Ok || excluded.count(n.id))
                continue;
            if (!best || n.speedup > m_tree.node(*best).speedup)
                best = n.id;
        }
        return best;
    };

    if (!m_options.reverify) {
        report.best = bestLeft();
        report.reverifyNote = "re-verification is off (--no-reverify): the best is not re-verified";
        return;
    }
    if (m_stopRequested) {
        report.best = bestLeft();
        report.reverifyNote = "not re-verified: the run was stopped by request";
        return;
    }
    int tries = 0;
    while (auto candidate = bestLeft()) {
        if (auto it = last.find(*candidate); it != last.end() && it->second.status == "verified") {
            Reverification v;
            v.node = *candidate;
            v.verified = true;
            v.stored = true;
            v.medianNs = it->second.medianNs;
            v.speedup = it->second.speedup;
            v.config = it->second.config;
            report.reverifications.push_back(v);
            break;
        }
        if (tries == kReverifyTries) {
            report.reverifyNote = "not re-verified: " + std::to_string(kReverifyTries)
                + " better nodes failed their re-verification; this one was not tried";
            break;
        }
        Reverification v = reverifyNode(*candidate, ++tries);
        if (v.failureKind == "stopped") {
            report.reverifyNote = "not re-verified: " + v.failureMessage;
            break;
        }
        report.reverifications.push_back(v);
        if (v.verified)
            break;
        excluded.insert(*candidate);
    }
    report.best = bestLeft();
    if (report.best && !report.reverifications.empty() && report.reverifications.back().verified
        && report.reverifications.back().node == *report.best) {
        report.bestVerified = true;
        report.reverifyMedianNs = report.reverifications.back().medianNs;
        report.reverifySpeedup = report.reverifications.back().speedup;
    }
}

} // namespace hone::core
