#include "backends/slurm_queue.h"

#include "backends/run_command.h"

#include <cstdlib>
#include <sstream>
#include <vector>

namespace hone::backends {
namespace {

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

} // namespace

SlurmQueue::SlurmQueue(std::chrono::milliseconds minInterval)
    : m_minInterval(minInterval)
{
}

void SlurmQueue::refresh()
{
    // The lock is held across the call on purpose: slots that ask meanwhile wait for this
    // snapshot instead of running squeue themselves.
    const CommandResult r = runCommand({"squeue", "--me", "-h", "-t", "all", "-o", "%i|%j|%T|%r"}, 10);
    const std::string& out = r.output;
    m_taken = std::chrono::steady_clock::now();
    if (r.code != 0) {
        m_error = r.code < 0 ? "squeue did not answer within 10 s (or could not be run)"
                             : "squeue failed (exit " + std::to_string(r.code) + "): " + out.substr(0, 300);
        return;
    }
    m_error.clear();
    std::map<std::string, SlurmJob> jobs;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        std::vector<std::string> f;
        std::istringstream fields(line);
        for (std::string x; std::getline(fields, x, '|');)
            f.push_back(x);
        if (f.size() != 4)
            continue;
        SlurmJob j {f[0], f[1], f[2], f[3]};
        // Several jobs may share a name (a retried step): keep the newest, the highest id.
        auto it = jobs.find(j.name);
        if (it == jobs.end() || std::atoll(j.id.c_str()) > std::atoll(it->second.id.c_str()))
            jobs[j.name] = std::move(j);
    }
    m_jobs = std::move(jobs);
}

std::optional<SlurmJob> SlurmQueue::find(const std::string& name, bool fresh)
{
    std::lock_guard lock(m_mutex);
    if (fresh || std::chrono::steady_clock::now() - m_taken >= m_minInterval)
        refresh();
    auto it = m_jobs.find(name);
    if (it == m_jobs.end())
        return std::nullopt;
    return it->second;
}

std::string SlurmQueue::lastError() const
{
    std::lock_guard lock(m_mutex);
    return m_error;
}

std::string hopelessPending(const SlurmJob& job)
{
    if (job.state != "PENDING")
        return {};
    const std::string& r = job.reason;
    std::string why;
    if (r == "PartitionDown" || r == "PartitionInactive")
        why = "its partition is down or inactive; use another partition in the targets file, or ask the "
              "cluster's administrators";
    else if (r == "PartitionTimeLimit")
        why = "time_limit is longer than the partition allows; lower time_limit in the targets file";
    else if (r == "PartitionNodeLimit" || r == "PartitionConfig")
        why = "the request does not fit the partition; check partition and gpus_per_task in the targets file";
    else if (r == "BadConstraints")
        why = "no node offers what it asks for; check gpus_per_task and extra_args in the targets file";
    else if (r == "InvalidAccount" || r == "InvalidQOS" || r == "AccountNotAllowed" || r == "QOSNotAllowed")
        why = "its account or QOS is not valid here; check --account and --qos in extra_args";
    else if (startsWith(r, "JobHeld"))
        why = "it is held; release it (scontrol release " + job.id + ") or cancel it";
    else if (r == "DependencyNeverSatisfied")
        why = "its dependency can never be met; check --dependency in extra_args";
    else if (r.find("PerJob") != std::string::npos)
        why = "it breaks a per-job limit of its QOS or association; lower gpus_per_task or time_limit";
    if (why.empty())
        return {};
    return "Slurm will not start job " + job.id + " (" + job.name + "), pending with reason " + r + ": " + why;
}

bool endedByCluster(const std::string& state)
{
    return startsWith(state, "CANCELLED") || state == "PREEMPTED" || state == "NODE_FAIL" || state == "BOOT_FAIL"
        || state == "TIMEOUT" || state == "DEADLINE";
}

} // namespace hone::backends
