#pragma once

#include "device_backend.h"

#include <filesystem>
#include <functional>
#include <memory>

namespace hone::backends {

/// flock(2) on `path` (created if missing), shared or exclusive, held until the returned object
/// dies; `onRelease` runs just before the unlock. Throws std::runtime_error naming the file.
std::unique_ptr<TimingLock> lockFile(
    const std::filesystem::path& path, bool exclusive, std::function<void()> onRelease = {});

} // namespace hone::backends
