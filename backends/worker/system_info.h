#pragma once

#include <cstddef>
#include <string>

/// Facts about the host the worker runs on, read from /proc and /sys.
namespace hone::backends {

/// "Intel(R) Xeon(R) Processor" from /proc/cpuinfo, or "unknown CPU".
std::string cpuModelName();

/// The `flags` line of /proc/cpuinfo (what -march=native will target); may be empty.
std::string cpuFeatureFlags();

/// Logical cores (std::thread::hardware_concurrency), at least 1.
unsigned cpuCores();

/// Size of the largest cache of cpu0 in bytes, 0 when /sys does not say.
size_t lastLevelCacheBytes();

/// Bytes the kernel says can be allocated without swapping (MemAvailable), 0 when unknown.
size_t availableMemoryBytes();

std::string hostName();

} // namespace hone::backends
