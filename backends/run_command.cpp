#include "backends/run_command.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hone::backends {

CommandResult runCommand(const std::vector<std::string>& argv, double timeoutSeconds)
{
    CommandResult r;
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        r.output = std::string("pipe: ") + strerror(errno);
        return r;
    }
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
        close(out[0]);
        close(out[1]);
        r.output = std::string("fork: ") + strerror(errno);
        return r;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        dup2(out[1], 1);
        dup2(out[1], 2);
        execvp(args[0], args.data());
        static const char msg[] = "exec failed\n";
        (void)!write(2, msg, sizeof msg - 1);
        _exit(127);
    }
    setpgid(pid, pid);
    close(out[1]);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(timeoutSeconds * 1000));
    for (;;) {
        pollfd p { out[0], POLLIN, 0 };
        int rc = poll(&p, 1, 200);
        if (rc < 0 && errno != EINTR)
            break;
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            char buf[16384];
            ssize_t n = read(out[0], buf, sizeof buf);
            if (n <= 0)
                break;
            r.output.append(buf, static_cast<size_t>(n));
            if (r.output.size() > 4 * 1024 * 1024)
                r.output.erase(0, r.output.size() - 1024 * 1024);
        }
        if (std::chrono::steady_clock::now() > deadline) {
            r.timedOut = true;
            ::kill(-pid, SIGKILL);
            break;
        }
    }
    close(out[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) { }
    ::kill(-pid, SIGKILL);
    if (WIFEXITED(status) && !r.timedOut)
        r.code = WEXITSTATUS(status);
    return r;
}

} // namespace hone::backends
