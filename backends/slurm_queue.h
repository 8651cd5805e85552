#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace hone::backends {

/// One job as `squeue` shows it. Works with accounting off (no sacct): a job that ended stays
/// visible to `squeue -t all` for the cluster's MinJobAge (300 s by default).
struct SlurmJob {
    std::string id;
    std::string name;
    std::string state;  // PENDING, RUNNING, COMPLETED, CANCELLED, PREEMPTED, NODE_FAIL, TIMEOUT, ...
    std::string reason; // Resources, Priority, PartitionDown, None, ...
};

/// This user's Slurm jobs, from one `squeue --me -t all` call that every slot of an executor
/// shares: whatever the number of workers, at most one call per `minInterval`.
class SlurmQueue {
public:
    explicit SlurmQueue(std::chrono::milliseconds minInterval = std::chrono::milliseconds(2000));

    /// The job named `name` (the newest, if several), from a snapshot at most `minInterval` old;
    /// with `fresh`, from a new one. Empty when squeue does not list it or could not be run
    /// (lastError() says why).
    std::optional<SlurmJob> find(const std::string& name, bool fresh = false);

    std::string lastError() const;

private:
    void refresh();

    std::chrono::milliseconds m_minInterval;
    mutable std::mutex m_mutex;
    std::map<std::string, SlurmJob> m_jobs; // by name; guarded by m_mutex
    std::chrono::steady_clock::time_point m_taken {}; // guarded by m_mutex
    std::string m_error; // guarded by m_mutex
};

/// For a PENDING job: why it will never start as submitted — the partition is down or
/// inactive, the request breaks a per-job limit of the partition, QOS or account, the job is
/// held, a dependency can never be met — in words with the fix; empty when the job is only
/// waiting its turn (Resources, Priority, BeginTime, a group limit that frees up, ...).
std::string hopelessPending(const SlurmJob& job);

/// True for the states in which the cluster, not the program, ended a job: cancelled,
/// preempted, a node that failed or did not boot, the time limit, a deadline.
bool endedByCluster(const std::string& state);

} // namespace hone::backends
