#pragma once

#include "core/store.h"

#include <cstdint>
#include <filesystem>
#include <optional>

namespace hone::core {

/// Another process drives the session.
class SessionBusy : public StoreError {
public:
    SessionBusy(const std::string& message, long holderPid)
        : StoreError(message)
        , m_holderPid(holderPid)
    {
    }
    /// 0 when the holder had not written its pid yet.
    long holderPid() const { return m_holderPid; }

private:
    long m_holderPid;
};

/// The right to drive (write the search of) one session: an exclusive flock on
/// `<store>.locks/session-<id>.lock`, which holds the driver's pid. The kernel drops it when the
/// process ends, however it ends, so a killed run never leaves a stale lock. Reading a session
/// (hone show, the workbench's views) takes no lock. Not inherited by child processes.
class SessionLock {
public:
    /// Takes the lock or throws SessionBusy naming the session and the pid that holds it.
    /// An in-memory store (":memory:") cannot be shared and takes no lock.
    SessionLock(const std::filesystem::path& storePath, int64_t session);
    ~SessionLock();
    SessionLock(const SessionLock&) = delete;
    SessionLock& operator=(const SessionLock&) = delete;

    static std::filesystem::path lockPath(const std::filesystem::path& storePath, int64_t session);
    /// The pid of the process driving `session` now, if any. It probes with a shared lock for an
    /// instant; a driver starting in that instant is refused, so call it for display only.
    static std::optional<long> holder(const std::filesystem::path& storePath, int64_t session);

private:
    int m_fd = -1;
};

} // namespace hone::core
