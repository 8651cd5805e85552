#pragma once

#include "backends/job_threads.h"
#include "backends/slurm_queue.h"
#include "backends/worker_process.h"
#include "core/executor.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace hone::backends {

/// hello() failed because every attempt was lost to ssh or Slurm before a worker answered: the
/// target is unreachable (`hone` exits with ExitCode::TargetUnreachable), not misconfigured.
class TargetUnreachable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Where a remote executor starts its workers (docs/REMOTE.md).
struct RemoteExecutorConfig {
    enum class Kind { Ssh, Slurm };
    Kind kind = Kind::Ssh;
    std::string name;                 // the target's name, for messages
    // ssh: `ssh [-F sshConfig] host -- WORKER --stdio ...`
    std::string host;
    std::string sshConfig;            // empty: the user's own ~/.ssh/config
    // slurm: `srun [--partition P] [--gres=gpu:N] --time T --job-name hone-eval-... -- WORKER --stdio ...`
    std::string partition;            // empty: the cluster's default partition
    int gpusPerTask = 0;
    std::string timeLimit = "30";     // srun --time (Slurm's formats: minutes, H:MM:SS, ...)
    double queueSeconds = 1800;       // the longest a job may wait in the queue; 0: no limit
    std::vector<std::string> extraArgs; // appended to the ssh or srun options
    // Both: the worker on the remote side.
    std::string workerPath = "hone-worker";
    std::string cacheDir;             // remote path; empty: the worker's default
    int parallel = 1;
    int retries = 2;                  // extra attempts after an infrastructure failure
    double retryDelaySeconds = 1;     // waits attempt * this between attempts
    // Persistent workers: one ssh connection or one srun step serves many requests in turn
    // (at most `parallel` of them), instead of one process per request.
    bool persistent = false;
    double recycleSeconds = 0;        // > 0: a persistent worker older than this is replaced before
                                      // its next request (Slurm: before its step's time limit)
    int maxRequestsPerWorker = 100;   // then a persistent worker is replaced: candidates' libraries
                                      // are never unloaded from a worker, so it grows with each
    std::string healthFile;           // empty: no health kept across sessions (target_health.h)
    WorkerLimits limits;              // stage limits apply from here; the RSS watch sees only the
                                      // local ssh/srun process, so memory is not limited remotely
};

/// Runs evaluations through remote workers, streaming the JSON-lines protocol: by default a fresh
/// worker per request (one ssh connection or one Slurm job step), with `persistent` one worker
/// per slot that serves request after request. The worker runs inside a small shell wrapper that
/// reports its exit status or signal on stderr, which tells a candidate that killed its worker
/// (a crash, as locally; a persistent worker is then replaced) from a transport that lost it:
/// ssh exit 255, srun errors, a cancelled or preempted job, a node that never answered. On Slurm
/// the job's state comes from squeue (no accounting needed): a job waiting for resources is not a
/// hung worker, a job that can never start (a down partition, a per-job limit) fails at once
/// without retries, and a job the cluster ended (cancelled, preempted, node failure, time limit)
/// is retried.
/// Transport failures are retried `retries` times, then the job fails with kind worker_error
/// naming the target and the reason; the session goes on. With a health file, infrastructure
/// failures and probes are kept across sessions, and a target that was unhealthy is probed (a
/// hello) before it gets work.
class RemoteExecutor final : public core::Executor {
public:
    explicit RemoteExecutor(RemoteExecutorConfig config);
    ~RemoteExecutor() override;

    nlohmann::json hello() override;
    nlohmann::json ceilings(const std::string& kind) override;
    int slotCount() const override { return m_config.parallel; }
    void submit(core::EvalJob job) override;
    std::optional<core::EvalDone> next(std::chrono::milliseconds timeout) override;
    void cancelAll() override;

    /// The command line of one attempt; `tag` makes a Slurm job name unique.
    WorkerCommand command(const std::string& tag) const;

    /// Runs one request with retries (what submit does on its thread); public for `targets check`.
    nlohmann::json request(const nlohmann::json& req, const WorkerLimits& limits);

    /// Infrastructure failures since the last success (0: healthy).
    int consecutiveInfraFailures() const { return m_infraFailures.load(); }

    /// Worker processes started so far (persistent or not): tells reuse from restarts.
    long workersStarted() const { return m_started.load(); }

    const RemoteExecutorConfig& config() const { return m_config; }

private:
    struct Persistent {
        std::unique_ptr<WorkerProcess> process;
        std::string tag; // its Slurm job name is hone-eval-TAG
        int served = 0;  // requests answered
    };

    /// How an attempt was lost, when it was not the worker's (or the candidate's) doing.
    enum class Loss {
        None,  // the worker answered, or the candidate failed
        Retry, // the transport or the cluster lost it: another attempt may succeed
        Final, // the target cannot run it as configured (a hopeless Slurm job, a queue timeout)
    };
    /// One attempt.
    nlohmann::json attempt(const nlohmann::json& req, const WorkerLimits& limits, Loss& loss);
    /// `limits` with a start probe for the Slurm job named hone-eval-TAG: a job waiting in the
    /// queue keeps the start stage's clock still, one that can never start fails at once.
    WorkerLimits slurmLimits(const WorkerLimits& limits, const std::string& tag);
    /// One exchange with a persistent worker: an idle one, or a new one after a hello handshake.
    nlohmann::json persistentExchange(const nlohmann::json& req, const WorkerLimits& limits);
    void dropWorker(Persistent& w, bool graceful);
    /// Probes a target that was unhealthy in an earlier session before its first job; empty when
    /// it answers, else why not.
    std::string probeIfUnhealthy();
    void recordOutcome(bool infra, const std::string& error);
    void recordProbe(bool ok, const std::string& error);
    std::string where() const;

    RemoteExecutorConfig m_config;
    std::atomic<int> m_infraFailures {0};
    std::atomic<long> m_attempts {0};
    std::atomic<long> m_started {0};
    std::mutex m_helloMutex;
    nlohmann::json m_hello;              // guarded by m_helloMutex
    std::atomic<bool> m_probeFirst {false};
    std::atomic<bool> m_healthDirty {true}; // the health file may not say "healthy" yet
    std::mutex m_idleMutex;
    std::vector<Persistent> m_idle;      // guarded by m_idleMutex
    std::unique_ptr<SlurmQueue> m_queue; // Slurm targets: squeue, shared by the slots
    JobThreads m_jobs; // last: its threads use the members above
};

/// Shell-quotes one word for a POSIX shell ('...' with embedded quotes escaped).
std::string shellQuote(const std::string& word);

} // namespace hone::backends
