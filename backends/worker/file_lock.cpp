#include "file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace hone::backends {
namespace {

class FileLock final : public TimingLock {
public:
    FileLock(int fd, std::function<void()> onRelease)
        : m_fd(fd)
        , m_onRelease(std::move(onRelease))
    {
    }
    ~FileLock() override
    {
        if (m_onRelease)
            m_onRelease();
        ::flock(m_fd, LOCK_UN);
        ::close(m_fd);
    }

private:
    int m_fd;
    std::function<void()> m_onRelease;
};

bool writableDir(const std::filesystem::path& dir, bool shared)
{
    if (::mkdir(dir.c_str(), shared ? 01777 : 0755) == 0) {
        if (shared)
            ::chmod(dir.c_str(), 01777); // mkdir's mode passes through the umask
    } else if (errno != EEXIST) {
        return false;
    }
    return ::access(dir.c_str(), W_OK | X_OK) == 0;
}

} // namespace

std::filesystem::path machineLockPath(const std::string& name, const std::filesystem::path& fallbackDir)
{
    if (const char* d = std::getenv("HONE_LOCK_DIR"); d && *d) {
        std::error_code ec;
        std::filesystem::create_directories(d, ec);
        return std::filesystem::path(d) / name;
    }
    static const bool shared = writableDir("/tmp/hone-locks", true);
    return (shared ? std::filesystem::path("/tmp/hone-locks") : fallbackDir) / name;
}

std::unique_ptr<TimingLock> lockFile(const std::filesystem::path& path, bool exclusive,
    std::function<void()> onRelease, const std::function<void()>& onWait)
{
    std::filesystem::create_directories(path.parent_path());
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        throw std::runtime_error("cannot open the lock file " + path.string() + ": " + std::strerror(errno));
    ::fchmod(fd, 0666); // other users' workers lock it too (fails harmlessly when not ours)
    const int mode = exclusive ? LOCK_EX : LOCK_SH;
    if (onWait && ::flock(fd, mode | LOCK_NB) == 0)
        return std::make_unique<FileLock>(fd, std::move(onRelease));
    if (onWait)
        onWait();
    while (::flock(fd, mode) != 0) {
        if (errno != EINTR) {
            const int err = errno;
            ::close(fd);
            throw std::runtime_error("cannot lock " + path.string() + ": " + std::strerror(err));
        }
    }
    return std::make_unique<FileLock>(fd, std::move(onRelease));
}

} // namespace hone::backends
