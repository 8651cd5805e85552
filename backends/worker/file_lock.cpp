#include "file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
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

} // namespace

std::unique_ptr<TimingLock> lockFile(const std::filesystem::path& path, bool exclusive,
    std::function<void()> onRelease, const std::function<void()>& onWait)
{
    std::filesystem::create_directories(path.parent_path());
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        throw std::runtime_error("cannot open the lock file " + path.string() + ": " + std::strerror(errno));
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
