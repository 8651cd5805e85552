#include "backends/worker_process.h"

#include "core/protocol.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hone::backends {
namespace {

using Clock = std::chrono::steady_clock;
namespace proto = hone::core::protocol;

constexpr size_t kMaxStderr = 64 * 1024;
constexpr size_t kMaxLine = 64 * 1024 * 1024;

double residentMiB(pid_t pid)
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string key;
    while (f >> key) {
        if (key == "VmRSS:") {
            double kb = 0;
            f >> kb;
            return kb / 1024.0;
        }
        std::string rest;
        std::getline(f, rest);
    }
    return 0;
}

std::string tail(const std::string& s, size_t n)
{
    std::string t = s.size() <= n ? s : "..." + s.substr(s.size() - n);
    while (!t.empty() && (t.back() == '\n' || t.back() == ' '))
        t.pop_back();
    return t;
}

} // namespace

std::string signalDescription(int sig)
{
    static const std::pair<int, const char*> names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"},
        {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"}, {SIGILL, "SIGILL"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"},
        {SIGTRAP, "SIGTRAP"}, {SIGPIPE, "SIGPIPE"}};
    std::string name = "signal " + std::to_string(sig);
    for (auto [n, s] : names)
        if (n == sig)
            name = s;
    return name + " (" + strsignal(sig) + ")";
}

nlohmann::json runWorker(const WorkerCommand& cmd, const nlohmann::json& request, const WorkerLimits& limits,
    const std::atomic<bool>* cancel)
{
    const std::string id = request.value("id", std::string());
    const std::string type = request.value("type", std::string());
    auto failure = [&](proto::FailureKind kind, const std::string& stage, const std::string& message) {
        return proto::makeFailure(id, kind, stage, message);
    };
    if (cmd.argv.empty())
        return failure(proto::FailureKind::WorkerError, "start", "no worker command configured");

    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
        return failure(proto::FailureKind::WorkerError, "start", std::string("pipe: ") + strerror(errno));

    std::vector<char*> argv;
    for (const auto& a : cmd.argv)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);

    pid_t pid = fork();
    if (pid < 0)
        return failure(proto::FailureKind::WorkerError, "start", std::string("fork: ") + strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        // A backstop for allocations the RSS watch cannot see in time; virtual size runs well
        // ahead of resident size (thread stacks, malloc arenas), hence the headroom.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
        // (Sanitizer builds reserve terabytes of shadow address space; the RSS watch still
        // applies to them.)
        if (limits.addressSpaceLimit) {
            rlim_t as = static_cast<rlim_t>((limits.memoryMiB * 2 + 8192) * 1024 * 1024);
            struct rlimit rl {as, as};
            setrlimit(RLIMIT_AS, &rl);
        }
#endif
        execvp(argv[0], argv.data());
        // Only async-signal-safe calls between fork and exec: the parent has threads.
        static const char msg[] = "exec of the worker command failed\n";
        (void)!write(2, msg, sizeof msg - 1);
        _exit(127);
    }
    setpgid(pid, pid);
    close(in[0]);
    close(out[1]);
    close(err[1]);

    std::string line = request.dump() + "\n";
    // Write the request, then close stdin: the worker answers and exits at EOF.
    {
        signal(SIGPIPE, SIG_IGN);
        size_t off = 0;
        while (off < line.size()) {
            ssize_t n = write(in[1], line.data() + off, line.size() - off);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                break;
            }
            off += static_cast<size_t>(n);
        }
        close(in[1]);
    }

    std::string outBuf, errBuf;
    nlohmann::json result;
    std::string stage = "start";
    std::string lastDetail;
    std::optional<nlohmann::json> verdict; // set when the executor decides the outcome itself
    auto stageStart = Clock::now();
    bool outOpen = true, errOpen = true;
    auto kill = [&] { ::kill(-pid, SIGKILL); };

    while (outOpen || errOpen) {
        pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
        if (!outOpen)
            fds[0].fd = -1;
        if (!errOpen)
            fds[1].fd = -1;
        int rc = poll(fds, 2, 50);
        if (rc < 0 && errno != EINTR)
            break;
        char buf[65536];
        if (outOpen && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(out[0], buf, sizeof buf);
            if (n <= 0) {
                outOpen = false;
            } else {
                outBuf.append(buf, static_cast<size_t>(n));
                size_t nl;
                while ((nl = outBuf.find('\n')) != std::string::npos) {
                    std::string l = outBuf.substr(0, nl);
                    outBuf.erase(0, nl + 1);
                    if (l.empty() || verdict)
                        continue;
                    try {
                        nlohmann::json msg = proto::parseMessage(l);
                        std::string t = msg.value("type", std::string());
                        if (t == "progress") {
                            // Any progress restarts the clock: a stage is limited by its
                            // silences (a hung kernel), not by how many slow calls it makes.
                            stage = msg.value("stage", stage);
                            stageStart = Clock::now();
                            lastDetail = msg.value("detail", std::string());
                        } else if (result.is_null()) {
                            result = std::move(msg);
                        }
                    } catch (const proto::ProtocolError& e) {
                        verdict = failure(proto::FailureKind::ProtocolError, stage, e.what());
                        kill();
                    }
                }
                if (outBuf.size() > kMaxLine && !verdict) {
                    verdict = failure(proto::FailureKind::ProtocolError, stage,
                        "worker sent a line longer than 64 MiB without a newline");
                    kill();
                }
            }
        }
        if (errOpen && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(err[0], buf, sizeof buf);
            if (n <= 0) {
                errOpen = false;
            } else {
                errBuf.append(buf, static_cast<size_t>(n));
                if (errBuf.size() > 2 * kMaxStderr)
                    errBuf.erase(0, errBuf.size() - kMaxStderr);
            }
        }
        if (verdict)
            continue;
        double limit = stage == "compile" ? limits.compileSeconds : limits.stageSeconds;
        double inStage = std::chrono::duration<double>(Clock::now() - stageStart).count();
        // Waiting for the device's timing lock says nothing about this candidate.
        if (inStage > limit && stage != "wait") {
            char msg[160];
            std::snprintf(msg, sizeof msg, "no progress for %.0f s in stage '%s' (limit %.0f s); the worker was killed",
                inStage, stage.c_str(), limit);
            verdict = failure(proto::FailureKind::Timeout, stage, msg);
            kill();
            continue;
        }
        double rss = residentMiB(pid);
        if (rss > limits.memoryMiB) {
            char msg[160];
            std::snprintf(msg, sizeof msg, "resident memory %.0f MiB exceeded the %.0f MiB limit in stage '%s'", rss,
                limits.memoryMiB, stage.c_str());
            verdict = failure(proto::FailureKind::MemoryLimit, stage, msg);
            kill();
            continue;
        }
        if (cancel && cancel->load()) {
            verdict = failure(proto::FailureKind::WorkerError, stage, "cancelled");
            kill();
        }
    }
    close(out[0]);
    close(err[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    // Compilers the worker started may outlive it; they are in its process group.
    ::kill(-pid, SIGKILL);

    if (verdict)
        return *verdict;
    if (!result.is_null()) {
        if (type == "eval" && result.value("type", std::string()) != "result")
            return failure(proto::FailureKind::ProtocolError, stage,
                "worker answered an eval with a '" + result.value("type", std::string()) + "' message");
        return result;
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        std::string msg = "worker died on " + signalDescription(sig) + " in stage '" + stage + "'";
        if (!lastDetail.empty())
            msg += " (" + lastDetail + ")";
        auto kind = proto::FailureKind::Crash;
        // An allocation refused by the address-space backstop usually ends in an abort.
        if (sig == SIGABRT && errBuf.find("bad_alloc") != std::string::npos)
            kind = proto::FailureKind::MemoryLimit;
        return failure(kind, stage, msg);
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::string stderrTail = tail(errBuf, 600);
    if (code == 127)
        return failure(proto::FailureKind::WorkerError, "start", "could not start the worker: " + stderrTail);
    return failure(proto::FailureKind::ProtocolError, stage,
        "worker exited with code " + std::to_string(code) + " without a result; stderr: " + stderrTail);
}

} // namespace hone::backends
