#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace hone::backends {

std::string findExecutable(const std::string& program)
{
    if (program.empty())
        return {};
    auto runnable = [](const std::string& path) {
        struct stat st { };
        return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
    };
    if (program.find('/') != std::string::npos)
        return runnable(program) ? program : std::string();
    const char* pathEnv = std::getenv("PATH");
    std::string path = pathEnv ? pathEnv : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= path.size()) {
        size_t end = path.find(':', start);
        if (end == std::string::npos)
            end = path.size();
        // Built with append: GCC 12 at -O3 warns falsely (-Wrestrict) on `dir + "/" + program`.
        std::string candidate = end > start ? path.substr(start, end - start) : std::string(".");
        candidate.append(1, '/').append(program);
        if (runnable(candidate))
            return candidate;
        start = end + 1;
    }
    return {};
}

ProcessResult runProcess(const std::vector<std::string>& argv, const std::string& workDir,
    double timeLimitSeconds, size_t maxOutputBytes)
{
    ProcessResult result;
    if (argv.empty()) {
        result.error = "no program to run";
        return result;
    }
    const std::string path = findExecutable(argv[0]);
    if (path.empty()) {
        result.error = "cannot find '" + argv[0] + "' on PATH";
        return result;
    }

    // Everything the child needs is prepared before fork: between fork and exec only
    // async-signal-safe calls are allowed (candidate code may have started threads).
    std::vector<char*> cargv;
    for (const auto& a : argv)
        cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    const char* dir = workDir.empty() ? nullptr : workDir.c_str();

    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        result.error = std::string("pipe: ") + std::strerror(errno);
        return result;
    }
    const auto start = std::chrono::steady_clock::now();
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        result.error = std::string("fork: ") + std::strerror(errno);
        ::close(fds[0]);
        ::close(fds[1]);
        return result;
    }
    if (pid == 0) {
        // Its own group, so that a timeout ends the compiler's children too; and it dies with
        // the worker, whose group kill it left (the executor also ends the worker's whole tree).
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent)
            ::_exit(127); // the worker died before the line above
        ::signal(SIGPIPE, SIG_DFL);
        if (dir && ::chdir(dir) != 0)
            ::_exit(126);
        const int devNull = ::open("/dev/null", O_RDONLY);
        if (devNull >= 0)
            ::dup2(devNull, 0);
        ::dup2(fds[1], 1);
        ::dup2(fds[1], 2);
        ::execv(path.c_str(), cargv.data());
        static const char msg[] = "exec failed\n";
        [[maybe_unused]] auto ignored = ::write(2, msg, sizeof msg - 1);
        ::_exit(127);
    }
    ::setpgid(pid, pid); // also from the parent: no race with the kill below
    ::close(fds[1]);
    result.started = true;

    const auto deadline = start + std::chrono::duration<double>(timeLimitSeconds);
    char buf[65536];
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            result.timedOut = true;
            ::kill(-pid, SIGKILL);
            break;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
        pollfd pfd { fds[0], POLLIN, 0 };
        const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left + 1, 1000)));
        if (ready < 0 && errno != EINTR)
            break;
        if (ready <= 0)
            continue;
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; // EOF: the compiler and everything it started closed the pipe
        if (result.output.size() < maxOutputBytes)
            result.output.append(buf,
                static_cast<size_t>(
                    std::min<ssize_t>(n, static_cast<ssize_t>(maxOutputBytes - result.output.size()))));
    }
    ::close(fds[0]);

    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) { }
    if (result.timedOut)
        ::kill(-pid, SIGKILL); // stragglers of the group
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (WIFEXITED(status))
        result.exitCode = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        result.signal = WTERMSIG(status);
    if (result.exitCode == 127 && result.output == "exec failed\n")
        result.error = "cannot execute '" + path + "'";
    return result;
}

} // namespace hone::backends
