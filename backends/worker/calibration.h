#pragma once

#include "compiler.h"
#include "core/diagnosis.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

/// CPU ceilings: measured with the embedded resources/calibration/cpu_ceilings.cpp and
/// cached per machine, so the roofline of every result compares against the same numbers.
namespace hone::backends {

/// Compiles the calibration kernels like a candidate and measures copy bandwidth and FMA
/// peak with all threads. Takes seconds. Throws std::runtime_error saying what failed.
core::Ceilings measureCpuCeilings(
    HostCompiler& compiler, const std::string& deviceName, size_t lastLevelCacheBytes);

/// The ceilings stored at `path`, or nullopt when the file is missing, unusable, or not the bytes
/// the worker wrote (its hash differs from the manifest's, cache_integrity.h: then a warning is
/// appended to `warnings`).
std::optional<core::Ceilings> readCachedCeilings(
    const std::filesystem::path& path, std::vector<std::string>* warnings = nullptr);

/// Writes the ceilings and records their hash.
void writeCachedCeilings(const std::filesystem::path& path, const core::Ceilings& ceilings);

/// The host's 1-minute load average per core, or -1.
double loadPerCore();

/// The ceilings kept at `path`: `memo`, else the file, unless `force` or the file was measured
/// on a busy host that is now clearly quieter (then measured again, keeping the higher values);
/// otherwise `measure()`, written to `path` and `memo`. `cached` says which. A file that fails its
/// hash check is measured again, with a warning in `warnings`.
core::Ceilings cachedCeilings(const std::filesystem::path& path, bool force, bool* cached,
    std::optional<core::Ceilings>& memo, const std::function<core::Ceilings()>& measure,
    std::vector<std::string>* warnings);

} // namespace hone::backends
