#include "backends/slurm_queue.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace hone::backends {
namespace {

/// Runs argv with stdout captured (stderr appended), at most `timeoutSeconds`; the exit code
/// or -1 when it could not run or was killed.
int capture(const std::vector<std::string>& args, std::string& out, double timeoutSeconds)
{
    int pipeFd[2];
    if (pipe2(pipeFd, O_CLOEXEC) != 0)
        return -1;
    std::vector<char*> argv;
    for (const auto& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
        close(pipeFd[0]);
        close(pipeFd[1]);
        return -1;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(pipeFd[1], 1);
        dup2(pipeFd[1], 2);
        execvp(argv[0], argv.data());
        _exit(127);
    }
    close(pipeFd[1]);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
    char buf[8192];
    bool killed = false;
    for (;;) {
        pollfd p {pipeFd[0], POLLIN, 0};
        const int rc = poll(&p, 1, 100);
        if (rc > 0) {
            const ssize_t n = read(pipeFd[0], buf, sizeof buf);
            if (n <= 0)
                break;
            out.append(buf, static_cast<size_t>(n));
        } else if (rc < 0 && errno != EINTR) {
            break;
        }
        if (std::chrono::steady_clock::now() > until) {
            ::kill(pid, SIGKILL);
            killed = true;
            break;
        }
    }
    close(pipeFd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (killed || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

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
    std::string out;
    const int rc = capture({"squeue", "--me", "-h", "-t", "all", "-o", "%i|%j|%T|%r"}, out, 10);
    m_taken = std::chrono::steady_clock::now();
    if (rc != 0) {
        m_error = rc < 0 ? "squeue did not answer within 10 s (or could not be run)"
                         : "squeue failed (exit " + std::to_string(rc) + "): " + out.substr(0, 300);
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
