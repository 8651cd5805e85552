#pragma once

#include "core/executor.h"

#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace hone::backends {

/// Raised by SpoolExecutor when the session needs replies that are not in the spool yet. The
/// message says which files to carry to the worker host and what to run there. The session's
/// nodes are stored; `hone resume --spool DIR` continues it once the replies are back.
class SpoolWaiting : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The worker protocol through files, for a device host that no ssh or Slurm reaches (an
/// air-gapped GPU box, a lent machine). The same JSON lines an ssh target would stream are
/// written to a folder, carried to the host, fed to `hone-worker --stdio` there, and the
/// worker's output is carried back (docs/REMOTE.md, "Spool"):
///   DIR/probe.jsonl     hello and calibrate requests (written while DIR/hello.jsonl is missing)
///   DIR/hello.jsonl     the worker's output for probe.jsonl
///   DIR/requests.jsonl  the eval requests that have no reply yet, rewritten every round
///   DIR/replies.jsonl   the worker's output for requests.jsonl, appended round after round
/// Replies are matched to requests by id; progress and log lines are skipped; a malformed line
/// is reported with FILE:LINE and skipped, so its request stays pending.
class SpoolExecutor final : public core::Executor {
public:
    SpoolExecutor(std::filesystem::path dir, int parallel);

    nlohmann::json hello() override;
    nlohmann::json ceilings(const std::string& kind) override;
    int slotCount() const override { return m_parallel; }
    void submit(core::EvalJob job) override;
    /// A reply from the spool, or throws SpoolWaiting when every submitted job still waits
    /// for one.
    std::optional<core::EvalDone> next(std::chrono::milliseconds timeout) override;
    void cancelAll() override;

    /// Requests written to requests.jsonl and not answered yet.
    int pendingCount() const { return static_cast<int>(m_pending.size()); }
    /// Replies taken from replies.jsonl so far.
    int loadedCount() const { return m_loaded; }
    const std::filesystem::path& dir() const { return m_dir; }

private:
    /// The worker's output in `file`: replies by id (the last one wins), type hello/ceilings/result.
    std::map<std::string, nlohmann::json> readReplies(const std::filesystem::path& file) const;
    /// Rewrites requests.jsonl with the pending requests, in submission order.
    void writeRequests() const;
    /// The instructions SpoolWaiting and the probe error give.
    std::string carryInstructions(const std::string& in, const std::string& out, bool append) const;
    nlohmann::json probeReply(const std::string& type, const std::string& id);

    std::filesystem::path m_dir;
    int m_parallel;
    std::map<std::string, nlohmann::json> m_probe;  // hello.jsonl, read once
    bool m_probeRead = false;
    std::deque<std::pair<std::string, nlohmann::json>> m_pending; // id -> request, in order
    std::deque<core::EvalDone> m_done;
    int m_loaded = 0;
    mutable std::set<std::string> m_warned; // FILE:LINE reported already
};

} // namespace hone::backends
