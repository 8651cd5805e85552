#include "cache_integrity.h"

#include "compiler.h"

#include "core/sha256.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hone::backends {

namespace fs = std::filesystem;

fs::path manifestPath(const fs::path& entry)
{
    return entry.string() + ".sha256";
}

void recordHash(const fs::path& entry, const std::string& sha256)
{
    writeFileAtomically(manifestPath(entry), sha256 + "\n");
}

HashCheck checkHash(const fs::path& entry, const std::string& actual, std::string* recorded)
{
    bool ok = false;
    std::string text = readFile(manifestPath(entry), &ok);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    if (recorded)
        *recorded = ok ? text : std::string();
    if (!ok || text.empty())
        return HashCheck::Unrecorded;
    return text == actual ? HashCheck::Verified : HashCheck::Mismatch;
}

std::string tamperWarning(const std::string& what, const fs::path& entry, const std::string& recorded,
    const std::string& actual, const std::string& action)
{
    return "cache entry changed after the worker wrote it: " + what + " " + entry.string() + " has sha256 "
        + actual + ", the manifest recorded " + recorded + "; not used, " + action;
}

namespace {

/// Reads `in` to its end, feeding every piece to `hash` and, where `out` >= 0, to `out`.
bool copyHashing(int in, int out, core::Sha256& hash)
{
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            return true;
        hash.update(buf, static_cast<size_t>(n));
        for (ssize_t done = 0; out >= 0 && done < n;) {
            const ssize_t w = ::write(out, buf + done, static_cast<size_t>(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return false;
            done += w;
        }
    }
}

} // namespace

std::string fileSha256(const fs::path& path, bool* ok)
{
    if (ok)
        *ok = false;
    const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return {};
    core::Sha256 hash;
    const bool read = copyHashing(in, -1, hash);
    ::close(in);
    if (!read)
        return {};
    if (ok)
        *ok = true;
    return hash.hexDigest();
}

int verifiedCopy(const fs::path& path, const std::string& expectedSha256, std::string& error)
{
    // O_NOFOLLOW: the compile moved a regular file here; a link put in its place is not it.
    const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0) {
        error = "cannot load the compiled object: cannot open " + path.string() + ": " + std::strerror(errno);
        return -1;
    }
    const int out = ::memfd_create("hone-object", MFD_CLOEXEC);
    core::Sha256 hash;
    const bool ok = out >= 0 && copyHashing(in, out, hash);
    const int savedErrno = errno;
    ::close(in);
    if (!ok) {
        if (out >= 0)
            ::close(out);
        error = "cannot load the compiled object: cannot copy " + path.string() + ": " + std::strerror(savedErrno);
        return -1;
    }
    const std::string actual = hash.hexDigest();
    if (!expectedSha256.empty() && actual != expectedSha256) {
        ::close(out);
        error = "cannot load the compiled object: " + path.string() + " changed after it was verified (sha256 "
            + actual + ", verified " + expectedSha256 + ")";
        return -1;
    }
    return out;
}

void* openVerified(const std::string& path, const std::string& sha256, std::string& error)
{
    const int fd = verifiedCopy(path, sha256, error);
    if (fd < 0)
        return nullptr;
    void* handle = ::dlopen(("/proc/self/fd/" + std::to_string(fd)).c_str(), RTLD_NOW | RTLD_LOCAL);
    ::close(fd);
    if (!handle) {
        const char* err = ::dlerror();
        error = std::string("cannot load ") + path + ": " + (err ? err : "unknown dlopen error");
    }
    return handle;
}

void CacheLedger::add(const std::string& kind, const std::string& key, const std::string& sha256)
{
    if (key.empty() || sha256.empty())
        return;
    for (const auto& e : m_entries)
        if (e["kind"] == kind && e["key"] == key && e["sha256"] == sha256)
            return;
    m_entries.push_back({ { "kind", kind }, { "key", key }, { "sha256", sha256 } });
}

void CacheLedger::clear()
{
    m_entries.clear();
    m_warnings.clear();
}

nlohmann::json CacheLedger::toJson() const
{
    return { { "entries", m_entries }, { "warnings", m_warnings } };
}

} // namespace hone::backends
