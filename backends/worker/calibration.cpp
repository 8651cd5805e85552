#include "calibration.h"
#include "cache_integrity.h"
#include "core/sha256.h"

#include "hone_embedded.h"
#include "system_info.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>

namespace hone::backends {

core::Ceilings measureCpuCeilings(
    HostCompiler& compiler, const std::string& deviceName, size_t lastLevelCacheBytes)
{
    CompileJob job;
    job.name = "cpu_ceilings.cpp";
    job.source = std::string(embedded::kCpuCeilingsSource);
    job.timeLimitSeconds = 300;
    const CompileOutput built = compiler.compile(job);
    if (!built.ok)
        throw std::runtime_error("cannot compile the CPU calibration kernels: " + built.firstError());

    std::string error;
    void* handle = openVerified(built.objectPath, built.objectSha256, error);
    if (!handle)
        throw std::runtime_error("cannot load the CPU calibration kernels: " + error);
    // Deliberately never dlclose'd: its OpenMP thread pool outlives the calls.
    using ThreadsFn = int (*)();
    using IsaFn = const char* (*)();
    using FmaFn = double (*)(int);
    using CopyFn = double (*)(size_t, int);
    auto threadsFn = reinterpret_cast<ThreadsFn>(::dlsym(handle, "hone_calib_threads"));
    auto isaFn = reinterpret_cast<IsaFn>(::dlsym(handle, "hone_calib_isa"));
    auto fmaFn = reinterpret_cast<FmaFn>(::dlsym(handle, "hone_calib_fma_gflops"));
    auto copyFn = reinterpret_cast<CopyFn>(::dlsym(handle, "hone_calib_copy_gbps"));
    if (!threadsFn || !isaFn || !fmaFn || !copyFn)
        throw std::runtime_error("the CPU calibration kernels lack an entry point (hone_calib_*)");

    // Buffers well beyond the last-level cache, so the copy streams from DRAM; bounded so
    // calibration stays a few seconds and never crowds the machine's memory.
    size_t bytes = std::max<size_t>(size_t(256) << 20, 2 * lastLevelCacheBytes);
    bytes = std::min<size_t>(bytes, size_t(1) << 30);
    if (const size_t avail = availableMemoryBytes(); avail > 0)
        bytes = std::min(bytes, avail / 4);
    bytes = std::max<size_t>(bytes, size_t(32) << 20);

    constexpr int kCopyReps = 8;
    constexpr int kFmaReps = 5;
    const double gbps = copyFn(bytes, kCopyReps);
    if (!(gbps > 0))
        throw std::runtime_error("the copy-bandwidth measurement failed (could not allocate "
            + std::to_string(bytes >> 20) + " MiB twice?)");
    const double gflops = fmaFn(kFmaReps);
    if (!(gflops > 0))
        throw std::runtime_error("the FMA-peak measurement failed");

    const int threads = threadsFn();
    core::Ceilings c;
    c.device = deviceName;
    c.peakGbps = gbps;
    c.peakGflops = gflops;
    char method[512];
    std::snprintf(method, sizeof method,
        "copy: %d OpenMP threads, 2 x %zu MiB buffers, best of %d, bytes read + written; "
        "fma: f32 %s FMA chains (8-16 per thread), %d threads, best of %d; built with %s -O3 -march=native "
        "-fopenmp",
        threads, bytes >> 20, kCopyReps, isaFn(), threads, kFmaReps, compiler.versionLine().c_str());
    c.method = method;
    return c;
}

std::optional<core::Ceilings> readCachedCeilings(const std::filesystem::path& path, std::vector<std::string>* warnings)
{
    bool ok = false;
    const std::string text = readFile(path, &ok);
    if (!ok)
        return std::nullopt;
    // Used only as the worker wrote them: ceilings raised by hand would hide every candidate
    // that beats physics (the suspicious verdict), lowered ones would flag honest ones.
    const std::string actual = core::sha256Hex(text);
    std::string recorded;
    const HashCheck check = checkHash(path, actual, &recorded);
    if (check == HashCheck::Mismatch && warnings)
        warnings->push_back(tamperWarning("ceilings", path, recorded, actual, "measured again"));
    if (check != HashCheck::Verified)
        return std::nullopt;
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return std::nullopt;
    core::Ceilings c = core::ceilingsFromJson(j);
    if (!(c.peakGbps > 0) || !(c.peakGflops > 0))
        return std::nullopt;
    return c;
}

double loadPerCore()
{
    double load[1] = {0};
    if (::getloadavg(load, 1) != 1)
        return -1;
    return load[0] / std::max(1u, std::thread::hardware_concurrency());
}

core::Ceilings cachedCeilings(const std::filesystem::path& path, bool force, bool* cached,
    std::optional<core::Ceilings>& memo, const std::function<core::Ceilings()>& measure,
    std::vector<std::string>* warnings)
{
    if (cached)
        *cached = false;
    const double load = loadPerCore();
    bool remeasure = force;
    if (!force) {
        if (!memo)
            memo = readCachedCeilings(path, warnings);
        // Ceilings measured on a busy host are too low (every candidate then looks "above the
        // roofline"); they are measured again once the host is clearly quieter, keeping the best.
        const bool busyThen = memo && memo->loadPerCore > 0.5;
        if (memo && !(busyThen && load >= 0 && load < memo->loadPerCore / 2)) {
            if (cached)
                *cached = true;
            return *memo;
        }
    }
    core::Ceilings c = measure();
    c.loadPerCore = load;
    if (!remeasure && memo) {
        c.peakGbps = std::max(c.peakGbps, memo->peakGbps);
        c.peakGflops = std::max(c.peakGflops, memo->peakGflops);
        c.peakTensorGflops = std::max(c.peakTensorGflops, memo->peakTensorGflops);
    }
    writeCachedCeilings(path, c);
    memo = c;
    return c;
}

void writeCachedCeilings(const std::filesystem::path& path, const core::Ceilings& ceilings)
{
    const std::string text = core::toJson(ceilings).dump(2) + "\n";
    recordHash(path, core::sha256Hex(text)); // the manifest first: see cache_integrity.h
    writeFileAtomically(path, text);
}

} // namespace hone::backends
