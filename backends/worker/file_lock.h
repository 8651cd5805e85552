#pragma once

#include "device_backend.h"

#include <filesystem>
#include <functional>
#include <memory>

namespace hone::backends {

/// flock(2) on `path` (created if missing), shared or exclusive, held until the returned object
/// dies; `onRelease` runs just before the unlock, `onWait` once before blocking when another
/// process holds the lock. Throws std::runtime_error naming the file.
/// Where the lock of a machine-wide resource (a GPU, the CPU's timing) lives: `$HONE_LOCK_DIR`,
/// else /tmp/hone-locks (world-writable and sticky, like /tmp, so that every user's and every
/// cache folder's workers on this machine take the same lock), else, when neither can be
/// written, `fallbackDir`.
std::filesystem::path machineLockPath(const std::string& name, const std::filesystem::path& fallbackDir);

std::unique_ptr<TimingLock> lockFile(const std::filesystem::path& path, bool exclusive,
    std::function<void()> onRelease = {}, const std::function<void()>& onWait = {});

} // namespace hone::backends
