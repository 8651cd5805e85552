#include "process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace hone::backends {
namespace {

struct ProcEntry {
    pid_t ppid = 0;
    bool zombie = false;
};

/// pid -> (parent, zombie) for every process visible in /proc.
std::unordered_map<pid_t, ProcEntry> processTable()
{
    std::unordered_map<pid_t, ProcEntry> table;
    DIR* proc = ::opendir("/proc");
    if (!proc)
        return table;
    while (const dirent* e = ::readdir(proc)) {
        char* end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end != '\0')
            continue;
        char path[64];
        std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; // gone in between
        char buf[512];
        const ssize_t n = ::read(fd, buf, sizeof buf - 1);
        ::close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse from the
        // last ')'.
        const char* close = std::strrchr(buf, ')');
        if (!close || close[1] != ' ' || close[2] == '\0')
            continue;
        ProcEntry entry;
        entry.zombie = close[2] == 'Z' || close[2] == 'X';
        entry.ppid = static_cast<pid_t>(std::strtol(close + 3, nullptr, 10));
        table[static_cast<pid_t>(pid)] = entry;
    }
    ::closedir(proc);
    return table;
}

} // namespace

std::vector<pid_t> descendantsOf(pid_t root)
{
    const auto table = processTable();
    std::vector<pid_t> out;
    for (const auto& [pid, entry] : table) {
        if (pid == root || entry.zombie)
            continue;
        // Walk up; a cycle cannot happen in a consistent table, the bound guards a torn read.
        pid_t p = entry.ppid;
        for (int depth = 0; p > 1 && depth < 4096; ++depth) {
            if (p == root) {
                out.push_back(pid);
                break;
            }
            const auto it = table.find(p);
            if (it == table.end())
                break;
            p = it->second.ppid;
        }
    }
    return out;
}

int killDescendants(pid_t root, int rounds)
{
    int signalled = 0;
    for (int i = 0; i < rounds; ++i) {
        const std::vector<pid_t> found = descendantsOf(root);
        if (found.empty())
            break;
        // Stop them all first, so that none forks a replacement while its siblings die.
        for (pid_t p : found)
            ::kill(p, SIGSTOP);
        for (pid_t p : found)
            if (::kill(p, SIGKILL) == 0)
                ++signalled;
        ::usleep(2000); // a killed process lingers as a zombie only once the signal is through
    }
    return signalled;
}

int reapZombieChildren()
{
    const pid_t self = ::getpid();
    int reaped = 0;
    for (const auto& [pid, entry] : processTable())
        if (entry.ppid == self && entry.zombie && ::waitpid(pid, nullptr, WNOHANG) == pid)
            ++reaped;
    return reaped;
}

} // namespace hone::backends
