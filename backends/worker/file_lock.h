#pragma once

#include "device_backend.h"

#include <filesystem>
#include <functional>
#include <memory>

namespace hone::backends {

/// flock(2) on `path` (created if missing), shared or exclusive, held until the returned object
/// dies; `onRelease` runs just before the unlock, `onWait` once before blocking when another
/// process holds the lock. Throws std::runtime_error naming the file.
std::unique_ptr<TimingLock> lockFile(const std::filesystem::path& path, bool exclusive,
    std::function<void()> onRelease = {}, const std::function<void()>& onWait = {});

} // namespace hone::backends
