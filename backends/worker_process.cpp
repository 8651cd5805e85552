#include "backends/worker_process.h"

#include "backends/worker/process_tree.h"
#include "core/protocol.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <poll.h>
#include <random>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hone::backends {
namespace {

using Clock = std::chrono::steady_clock;
namespace proto = hone::core::protocol;

constexpr size_t kMaxStderr = 64 * 1024;
constexpr size_t kMaxLine = 64 * 1024 * 1024;

double ownResidentMiB(pid_t pid)
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

/// Resident memory of `pid` and all its descendants: candidate code runs in runner processes
/// (in sandboxes, sessions of their own) below the worker, and counts against its limit.
double residentMiB(pid_t pid, int depth = 0)
{
    double total = ownResidentMiB(pid);
    if (depth > 8)
        return total;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        std::ifstream children(task.path() / "children");
        pid_t child = 0;
        while (children >> child)
            total += residentMiB(child, depth + 1);
    }
    return total;
}

/// 128 random bits as 32 hex digits: the proof that a message comes from the worker that read
/// this request, not from code that merely found the reply channel.
std::string freshSecret()
{
    unsigned char bytes[16];
    if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
        std::random_device rd;
        for (auto& b : bytes)
            b = static_cast<unsigned char>(rd());
    }
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : bytes) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

constexpr const char* kForged
    = "a message on the result channel did not carry this request's id and secret: forged or out of step";

std::string tail(const std::string& s, size_t n)
{
    std::string t = s.size() <= n ? s : "..." + s.substr(s.size() - n);
    while (!t.empty() && (t.back() == '\n' || t.back() == ' '))
        t.pop_back();
    return t;
}

} // namespace

WorkerProcess::WorkerProcess(const WorkerCommand& cmd, const WorkerLimits& limits)
    : m_started(Clock::now())
{
    if (cmd.argv.empty()) {
        m_startError = "no worker command configured";
        m_reaped = true;
        return;
    }
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        m_startError = std::string("pipe: ") + strerror(errno);
        m_reaped = true;
        return;
    }
    std::vector<char*> argv;
    for (const auto& a : cmd.argv)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    // A worker that dies while we write its request must not kill us.
    signal(SIGPIPE, SIG_IGN);

    const pid_t parent = getpid();
    const bool diesWithCaller = cmd.diesWithCaller;
    pid_t pid = fork();
    if (pid < 0) {
        m_startError = std::string("fork: ") + strerror(errno);
        for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]})
            close(fd);
        m_reaped = true;
        return;
    }
    if (pid == 0) {
        setpgid(0, 0);
        // Dies with us, even of SIGKILL; the check closes the race with a parent that died
        // before the request was made.
        if (diesWithCaller && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent))
            _exit(1);
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
#else
        (void)limits;
#endif
        execvp(argv[0], argv.data());
        // Only async-signal-safe calls between fork and exec: the parent has threads (so no
        // strerror, no allocation): the reason by name for the usual errors, else the number.
        const int e = errno;
        static const char msg[] = "exec of the worker command failed: ";
        (void)!write(2, msg, sizeof msg - 1);
        const char* why = e == ENOENT ? "ENOENT (no such file)"
            : e == EACCES             ? "EACCES (not executable, or a folder on the way is not searchable)"
            : e == ETXTBSY            ? "ETXTBSY (the file is being written: a rebuild in progress)"
            : e == ENOEXEC            ? "ENOEXEC (not an executable for this machine)"
                                      : nullptr;
        if (why) {
            (void)!write(2, why, strlen(why));
        } else {
            char num[16];
            int n = 0;
            for (int v = e; n == 0 || v > 0; v /= 10)
                num[n++] = static_cast<char>('0' + v % 10);
            (void)!write(2, "errno ", 6);
            while (n > 0)
                (void)!write(2, &num[--n], 1);
        }
        (void)!write(2, "\n", 1);
        _exit(127);
    }
    setpgid(pid, pid);
    close(in[0]);
    close(out[1]);
    close(err[1]);
    m_pid = pid;
    m_in = in[1];
    m_out = out[0];
    m_err = err[0];
    // Requests are written from the poll loop, so a worker that never reads cannot block us.
    fcntl(m_in, F_SETFL, fcntl(m_in, F_GETFL) | O_NONBLOCK);
}

WorkerProcess::~WorkerProcess()
{
    if (!m_reaped && m_pid > 0)
        terminate();
    reap();
}

void WorkerProcess::terminate()
{
    if (m_reaped || m_pid <= 0)
        return;
    // Stopped, the worker can start nothing new, and (a subreaper) it inherits the orphans of
    // the descendants killed below, so the next scan finds them: a candidate's child that
    // called setsid() leaves the group, never the tree.
    ::kill(m_pid, SIGSTOP);
    killDescendants(m_pid);
    ::kill(-m_pid, SIGKILL);
    ::kill(m_pid, SIGKILL); // also when it left its own group
}

bool WorkerProcess::exited()
{
    if (m_reaped)
        return true;
    siginfo_t info {};
    return waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == m_pid;
}

double WorkerProcess::ageSeconds() const
{
    return std::chrono::duration<double>(Clock::now() - m_started).count();
}

void WorkerProcess::reap()
{
    if (m_reaped)
        return;
    m_reaped = true;
    for (int* fd : {&m_in, &m_out, &m_err})
        if (*fd >= 0) {
            close(*fd);
            *fd = -1;
        }
    while (waitpid(m_pid, &m_status, 0) < 0 && errno == EINTR) {
    }
    // Compilers the worker started may outlive it; they are in its process group.
    ::kill(-m_pid, SIGKILL);
}

bool WorkerProcess::alive()
{
    if (m_reaped)
        return false;
    bool gone = false;
    pollfd fds[2] = {{m_out, POLLIN, 0}, {m_err, POLLIN, 0}};
    if (poll(fds, 2, 0) > 0) {
        // Output between requests: stdout is unasked for, so the worker is out of step; an end
        // of either stream means the process (or its connection) is gone.
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR))
            gone = true;
        if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            char buf[4096];
            ssize_t n = read(m_err, buf, sizeof buf);
            if (n <= 0)
                gone = true;
            else
                m_errBuf.append(buf, static_cast<size_t>(n));
        }
    }
    if (!gone) {
        int status = 0;
        pid_t r = waitpid(m_pid, &status, WNOHANG);
        if (r == m_pid) {
            m_status = status;
            // Reaped already: only the pipes and the group are left.
            m_reaped = true;
            for (int* fd : {&m_in, &m_out, &m_err})
                if (*fd >= 0) {
                    close(*fd);
                    *fd = -1;
                }
            ::kill(-m_pid, SIGKILL);
            return false;
        }
    }
    if (gone) {
        terminate();
        reap();
        return false;
    }
    return true;
}

void WorkerProcess::stop(double graceSeconds)
{
    if (m_reaped)
        return;
    if (m_in >= 0) {
        close(m_in);
        m_in = -1;
    }
    // Waits for the process itself, not for the end of its output: a descendant may hold the
    // pipes open for ever.
    const auto until = Clock::now() + std::chrono::milliseconds(static_cast<long>(1000 * graceSeconds));
    bool outOpen = true, errOpen = true;
    while (!exited() && Clock::now() < until) {
        pollfd fds[2] = {{outOpen ? m_out : -1, POLLIN, 0}, {errOpen ? m_err : -1, POLLIN, 0}};
        if (poll(fds, 2, 20) < 0 && errno != EINTR)
            break;
        char buf[4096];
        if (outOpen && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && read(m_out, buf, sizeof buf) <= 0)
            outOpen = false;
        if (errOpen && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && read(m_err, buf, sizeof buf) <= 0)
            errOpen = false;
    }
    terminate(); // what is left: the process past its grace, its group, its descendants
    reap();
}

nlohmann::json WorkerProcess::exchange(
    const nlohmann::json& request, const WorkerLimits& limits, const std::atomic<bool>* cancel, bool last)
{
    const std::string id = proto::requestId(request);
    const std::string type = request.value("type", std::string());
    auto failure = [&](proto::FailureKind kind, const std::string& stage, const std::string& message) {
        return proto::makeFailure(id, kind, stage, message);
    };
    if (!m_startError.empty())
        return failure(proto::FailureKind::WorkerError, "start", m_startError);
    if (m_reaped)
        return failure(proto::FailureKind::WorkerError, "start", "the worker process is no longer running");

    // A fresh secret per request: only the worker that read this request can answer it.
    const std::string secret = freshSecret();
    nlohmann::json sent = request;
    sent["secret"] = secret;
    const std::string line = sent.dump() + "\n";
    size_t written = 0;
    m_errBuf.clear(); // this exchange's stderr only: it explains this exchange's end
    nlohmann::json result;
    std::string stage = "start";
    std::string lastDetail;
    std::optional<nlohmann::json> verdict; // set when the executor decides the outcome itself
    const auto began = Clock::now();
    auto stageStart = began;
    auto totalStart = began; // moves only while a start probe says the job is queued
    const double totalLimit
        = limits.totalSeconds > 0 ? limits.totalSeconds : 2 * limits.compileSeconds + 8 * limits.stageSeconds;
    bool heard = false; // any message from the worker yet
    auto nextProbe = began;
    std::optional<Clock::time_point> queuedSince;
    bool outOpen = true, errOpen = true;
    auto kill = [&] { terminate(); };
    auto closeInput = [&] {
        if (m_in >= 0) {
            close(m_in);
            m_in = -1;
        }
    };
    auto authentic = [&](const nlohmann::json& msg) {
        const auto i = msg.find("id");
        const auto s = msg.find("secret");
        return i != msg.end() && i->is_string() && i->get<std::string>() == id && s != msg.end() && s->is_string()
            && s->get<std::string>() == secret;
    };
    // Every complete line in m_outBuf: progress, then exactly one reply, each with this
    // request's id and secret; anything else is the candidate's doing and fails it.
    auto takeLines = [&] {
        size_t nl;
        while (!verdict && (nl = m_outBuf.find('\n')) != std::string::npos) {
            std::string l = m_outBuf.substr(0, nl);
            m_outBuf.erase(0, nl + 1);
            if (l.empty())
                continue;
            try {
                nlohmann::json msg = proto::parseMessage(l);
                if (!authentic(msg) || !result.is_null()) {
                    verdict = failure(proto::FailureKind::ProtocolError, stage, kForged);
                    kill();
                    break;
                }
                heard = true;
                msg.erase("secret");
                if (msg.value("type", std::string()) == "progress") {
                    // Any progress restarts the stage clock: a stage is limited by its silences
                    // (a hung kernel), not by how many slow calls it makes. The total limit is
                    // not moved by anything the worker says.
                    stage = msg.value("stage", stage);
                    stageStart = Clock::now();
                    lastDetail = msg.value("detail", std::string());
                } else {
                    result = std::move(msg);
                }
            } catch (const proto::ProtocolError& e) {
                verdict = failure(proto::FailureKind::ProtocolError, stage, e.what());
                kill();
            }
        }
        if (!verdict && m_outBuf.size() > kMaxLine) {
            verdict = failure(proto::FailureKind::ProtocolError, stage,
                "worker sent a line longer than 64 MiB without a newline");
            kill();
        }
    };
    char buf[65536];
    auto readOut = [&] {
        ssize_t n = read(m_out, buf, sizeof buf);
        if (n <= 0) {
            outOpen = n < 0 && (errno == EINTR || errno == EAGAIN);
            return;
        }
        m_outBuf.append(buf, static_cast<size_t>(n));
        takeLines();
    };
    auto readErr = [&] {
        ssize_t n = read(m_err, buf, sizeof buf);
        if (n <= 0) {
            errOpen = n < 0 && (errno == EINTR || errno == EAGAIN);
            return;
        }
        m_errBuf.append(buf, static_cast<size_t>(n));
        if (m_errBuf.size() > 2 * kMaxStderr)
            m_errBuf.erase(0, m_errBuf.size() - kMaxStderr);
    };
    // What is already in the pipes, for up to `seconds`: the last words of a process that
    // ended, which a descendant holding the pipes must not stretch.
    auto drain = [&](double seconds) {
        const auto until = Clock::now() + std::chrono::milliseconds(static_cast<long>(1000 * seconds));
        while ((outOpen || errOpen) && !verdict && Clock::now() < until) {
            pollfd fds[2] = {{outOpen ? m_out : -1, POLLIN, 0}, {errOpen ? m_err : -1, POLLIN, 0}};
            if (poll(fds, 2, 0) <= 0)
                break;
            if (outOpen && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
                readOut();
            if (errOpen && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
                readErr();
        }
    };

    // Reading stops at the verdict: ours, the reply, or the end of the process.
    while ((outOpen || errOpen) && !verdict && result.is_null()) {
        const bool writing = m_in >= 0 && written < line.size();
        pollfd fds[3] = {{outOpen ? m_out : -1, POLLIN, 0}, {errOpen ? m_err : -1, POLLIN, 0},
            {writing ? m_in : -1, POLLOUT, 0}};
        int rc = poll(fds, 3, 50);
        if (rc < 0 && errno != EINTR)
            break;
        if (writing && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = write(m_in, line.data() + written, line.size() - written);
            if (n > 0)
                written += static_cast<size_t>(n);
            else if (n < 0 && errno != EINTR && errno != EAGAIN)
                closeInput(); // the worker is gone; its end of output says how
            // A one-shot worker answers and exits at end of input.
            if (last && written == line.size())
                closeInput();
        }
        if (outOpen && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
            readOut();
        if (errOpen && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
            readErr();
        if (verdict || !result.is_null())
            break;
        if (exited()) {
            // Its last lines are in the pipes already; a descendant may hold them open for ever.
            drain(1.0);
            break;
        }
        if (!heard && limits.startProbe && Clock::now() >= nextProbe) {
            nextProbe = Clock::now() + std::chrono::seconds(1);
            const StartStatus s = limits.startProbe();
            if (!s.abort.empty()) {
                verdict = failure(proto::FailureKind::WorkerError, "start", s.abort);
                kill();
                continue;
            }
            if (s.queued) {
                if (!queuedSince)
                    queuedSince = Clock::now();
                stageStart = Clock::now(); // waiting in a queue is not a silent worker
                totalStart = Clock::now(); // nor part of the evaluation
                lastDetail = s.detail;
                const double queued = std::chrono::duration<double>(Clock::now() - *queuedSince).count();
                if (limits.queueSeconds > 0 && queued > limits.queueSeconds) {
                    char msg[160];
                    std::snprintf(msg, sizeof msg, "queued for %.0f s without starting (limit %.0f s): ", queued,
                        limits.queueSeconds);
                    verdict = failure(proto::FailureKind::WorkerError, "start", msg + s.detail);
                    kill();
                    continue;
                }
            }
        }
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
        const double total = std::chrono::duration<double>(Clock::now() - totalStart).count();
        if (total > totalLimit) {
            char msg[200];
            std::snprintf(msg, sizeof msg,
                "the evaluation ran %.0f s, past its total limit of %.0f s, in stage '%s'; the worker was killed",
                total, totalLimit, stage.c_str());
            verdict = failure(proto::FailureKind::Timeout, stage, msg);
            kill();
            continue;
        }
        double rss = residentMiB(m_pid);
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
    // Bytes after the reply came from someone else: the worker says nothing more until it
    // reads the next request.
    if (!verdict && !result.is_null() && m_outBuf.find_first_not_of(" \t\r\n") != std::string::npos) {
        verdict = failure(proto::FailureKind::ProtocolError, stage, kForged);
        kill();
    }
    auto misfit = [&]() -> std::optional<nlohmann::json> {
        if (type == "eval" && result.value("type", std::string()) != "result")
            return failure(proto::FailureKind::ProtocolError, stage,
                "worker answered an eval with a '" + result.value("type", std::string()) + "' message");
        return std::nullopt;
    };
    if (!last && !verdict && !result.is_null()) {
        auto bad = misfit();
        if (!bad)
            return result; // a persistent worker answered: it stays for the next request
        kill(); // out of step with us: no further request may go to it
        reap();
        return *bad;
    }
    if (!verdict && !result.is_null()) {
        // The reply is in: a short grace for the worker to exit at end of input, then whatever
        // is left of it is killed. It has nothing more to say; anything on stdout meanwhile is
        // a second reply, or a forgery.
        closeInput();
        const auto until = Clock::now() + std::chrono::seconds(2);
        while (!exited() && !verdict && Clock::now() < until) {
            pollfd fds[2] = {{outOpen ? m_out : -1, POLLIN, 0}, {errOpen ? m_err : -1, POLLIN, 0}};
            poll(fds, 2, 20);
            if (outOpen && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
                readOut(); // a complete line is judged there; a partial one below
            if (errOpen && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
                readErr();
        }
        if (!verdict)
            drain(0.2);
        if (!verdict && m_outBuf.find_first_not_of(" \t\r\n") != std::string::npos)
            verdict = failure(proto::FailureKind::ProtocolError, stage, kForged);
    }
    kill(); // the process past its grace or exited; its group; its descendants
    reap();

    if (verdict)
        return *verdict;
    if (!result.is_null())
        return misfit().value_or(result);
    if (WIFSIGNALED(m_status)) {
        int sig = WTERMSIG(m_status);
        std::string msg = "worker died on " + signalDescription(sig) + " in stage '" + stage + "'";
        if (!lastDetail.empty())
            msg += " (" + lastDetail + ")";
        auto kind = proto::FailureKind::Crash;
        // An allocation refused by the address-space backstop usually ends in an abort.
        if (sig == SIGABRT && m_errBuf.find("bad_alloc") != std::string::npos)
            kind = proto::FailureKind::MemoryLimit;
        return failure(kind, stage, msg);
    }
    int code = WIFEXITED(m_status) ? WEXITSTATUS(m_status) : -1;
    std::string stderrTail = tail(m_errBuf, 600);
    if (code == 127)
        return failure(proto::FailureKind::WorkerError, "start", "could not start the worker: " + stderrTail);
    return failure(proto::FailureKind::ProtocolError, stage,
        "worker exited with code " + std::to_string(code) + " without a result; stderr: " + stderrTail);
}

nlohmann::json runWorker(const WorkerCommand& cmd, const nlohmann::json& request, const WorkerLimits& limits,
    const std::atomic<bool>* cancel)
{
    WorkerProcess worker(cmd, limits);
    return worker.exchange(request, limits, cancel, /*last=*/true);
}

} // namespace hone::backends
