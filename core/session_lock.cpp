#include "core/session_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hone::core {
namespace {

bool shareable(const std::filesystem::path& storePath)
{
    const std::string s = storePath.string();
    return !s.empty() && s != ":memory:" && s.rfind("file::memory:", 0) != 0;
}

/// The pid written in the lock file, 0 when none is (yet).
long pidIn(int fd)
{
    char buf[64] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    return n > 0 ? std::strtol(buf, nullptr, 10) : 0;
}

std::string holderText(long pid)
{
    return pid > 0 ? "process " + std::to_string(pid) : std::string("another process");
}

} // namespace

std::filesystem::path SessionLock::lockPath(const std::filesystem::path& storePath, int64_t session)
{
    // The same file whatever path (relative, through a symlink) names the store.
    std::error_code ec;
    std::filesystem::path dir
        = std::filesystem::weakly_canonical(std::filesystem::absolute(storePath, ec), ec);
    if (ec || dir.empty())
        dir = storePath;
    dir += ".locks";
    return dir / ("session-" + std::to_string(session) + ".lock");
}

SessionLock::SessionLock(const std::filesystem::path& storePath, int64_t session)
{
    if (!shareable(storePath))
        return;
    const auto path = lockPath(storePath, session);
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0)
        throw StoreError("cannot open the session lock " + path.string() + ": " + std::strerror(errno)
            + "; check that the store's folder is writable");
    while (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR)
            continue;
        const int err = errno;
        const long pid = err == EWOULDBLOCK ? pidIn(m_fd) : 0;
        ::close(m_fd);
        m_fd = -1;
        if (err != EWOULDBLOCK)
            throw StoreError("cannot lock " + path.string() + ": " + std::strerror(err));
        throw SessionBusy("session " + std::to_string(session) + " of store " + storePath.string()
                + " is driven by " + holderText(pid)
                + "; only one process may run a session at a time: wait for it to end or stop it"
                + (pid > 0 ? " (kill " + std::to_string(pid) + ")" : std::string()) + ". 'hone show "
                + std::to_string(session) + "' reads the session meanwhile",
            pid);
    }
    const std::string me = std::to_string(static_cast<long>(::getpid())) + "\n";
    // Without the pid the lock still holds; a refused process then names no pid.
    if (::ftruncate(m_fd, 0) == 0)
        (void)!::pwrite(m_fd, me.data(), me.size(), 0);
}

SessionLock::~SessionLock()
{
    if (m_fd < 0)
        return;
    (void)!::ftruncate(m_fd, 0);
    ::close(m_fd); // releases the flock
}

std::optional<long> SessionLock::holder(const std::filesystem::path& storePath, int64_t session)
{
    if (!shareable(storePath))
        return std::nullopt;
    const int fd = ::open(lockPath(storePath, session).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return std::nullopt;
    std::optional<long> out;
    if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK)
        out = pidIn(fd);
    else
        ::flock(fd, LOCK_UN);
    ::close(fd);
    return out;
}

} // namespace hone::core
