#pragma once

#include "device_backend.h"

#include <cuda.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>

namespace hone::backends {
namespace cuda {
class Driver;
class DelayKernel;
}

/// ptxas -v resource usage per kernel: [{name, mangled, registers, smem_static, stack_bytes,
/// spill_stores, spill_loads}].
nlohmann::json parsePtxasResources(const std::string& log);

/// An NVIDIA GPU as a device: candidates are nvcc-built shared objects whose hone_run
/// launches on the harness stream; memory, streams, events and occupancy go through the
/// driver API loaded at run time (cuda_driver.h). Without a driver or a GPU the backend still
/// compiles (for the architecture in $HONE_CUDA_ARCH, default sm_90) and says why it cannot
/// run.
class CudaBackend final : public DeviceBackend {
public:
    explicit CudaBackend(std::filesystem::path cacheDir);
    ~CudaBackend() override;

    /// Whether a GPU can run candidates here; unavailableReason() says why not.
    bool available() const;
    std::string unavailableReason() const;
    /// Whether nvcc was found (compiling needs no GPU).
    bool canCompile() const { return !m_nvcc.empty(); }

    std::string kind() const override { return "cuda"; }
    std::string deviceName() const override;
    nlohmann::json devices() const override;
    bool acceptsLang(const std::string& lang) const override { return lang == "cuda"; }
    std::string compilerVersion() override;
    std::string flagsFor(const CompileJob& job) const override;
    std::string refusedFlags(const std::string& flags) const override;

    CompileOutput compile(const CompileJob& job) override;
    std::unique_ptr<LoadedKernel> load(
        const CompileOutput& object, std::string& error, bool& missingEntry) override;

    void* allocate(size_t bytes) override;
    void release(void* p) noexcept override;
    void upload(void* device, const void* host, size_t bytes) override;
    void download(void* host, const void* device, size_t bytes) override;
    void* stream() override;
    // cuda_shared_memory.cpp: driver allocations exported as POSIX file descriptors, so that a
    // runner process maps the judge's buffers into its own context (docs/THREAT_MODEL.md).
    void* allocateShared(size_t bytes, int& fd) override;
    void releaseShared(void* p) noexcept override;
    void* importShared(int fd, size_t bytes) override;
    void releaseImported(void* p) noexcept override;

    double timedRun(LoadedKernel& kernel, const hone_args& args, int& rc) override;
    void flushCaches(const std::vector<MemRegion>& workingSet) override;
    std::unique_ptr<TimingLock> lockForTiming() override;
    std::unique_ptr<TimingLock> lockForUse(const std::function<void()>& onWait = {}) override;
    void synchronize() override;
    bool deviceLost() const override { return m_lost; }
    void* workspace(size_t& bytes) override;
    nlohmann::json timingInfo() override;
    nlohmann::json profile(const nlohmann::json& request) override;
    nlohmann::json launchProfile(LoadedKernel& kernel, const hone_args& args) override;
    core::Ceilings ceilings(bool force, bool* cached) override;
    // resources/calibration/cuda_judge.cu, compiled and loaded on first use.
    std::string prepareDeviceChecks() override;
    bool poisonOnDevice(void* device, hone_dtype dtype, size_t numel) override;
    std::optional<uint64_t> mismatchesOnDevice(
        const void* got, const void* want, hone_dtype dtype, size_t numel, double atol, double rtol) override;
    std::optional<uint64_t> checksumOnDevice(const void* device, size_t bytes, uint64_t key) override;

    /// "sm_90a" etc.: what candidates are built for.
    std::string arch() const { return m_arch; }
    /// How many timed samples had work still running after the harness stream finished
    /// (side streams), since construction.
    bool lastRunDisturbed() const override { return m_lastDisturbed; }
    /// Median cost of the device-wide synchronize that closes every sample, in ns.
    double syncOverheadNs();

private:
    void ensureContext();
    /// Loads the delay kernel that timedRun queues before its start event, once.
    void ensureDelay();
    /// Throws DeviceFault (sticky errors mark the device lost) or std::runtime_error.
    void check(CUresult code, const char* what);
    std::unique_ptr<TimingLock> lockDevice(bool exclusive, const std::function<void()>& onWait = {});
    /// Compiles one of the worker's own embedded sources (calibration, judge kernels) like a
    /// candidate and loads it into this process, in the judge's context; throws saying `what`.
    void* loadOwnObject(const char* name, std::string_view source, std::vector<std::string> libraries, const std::string& what);

    std::unique_ptr<cuda::Driver> m_driver;
    std::filesystem::path m_cacheDir;
    std::string m_nvcc;
    std::string m_nvccVersion;
    bool m_nvccVersionRead = false;
    std::string m_arch = "sm_90";
    std::string m_gencode;

    CUdevice m_device = 0;
    CUcontext m_ctx = nullptr;
    CUstream m_stream = nullptr;
    CUevent m_start = nullptr;
    CUevent m_stop = nullptr;
    CUevent m_after = nullptr;
    bool m_haveDevice = false;
    std::string m_name;
    std::string m_uuid;
    int m_ccMajor = 0;
    int m_ccMinor = 0;
    int m_sms = 0;
    int m_l2Bytes = 0;
    int m_maxThreadsPerSm = 0;
    int m_regsPerSm = 0;
    int m_smemPerSm = 0;
    int m_maxBlocksPerSm = 0;
    size_t m_memoryBytes = 0;
    int m_driverVersion = 0;

    CUdeviceptr m_flush = 0;
    size_t m_flushBytes = 0;
    unsigned m_flushRound = 0;
    CUdeviceptr m_workspace = 0;
    size_t m_workspaceBytes = size_t(64) << 20;
    bool m_lost = false;
    bool m_lastDisturbed = false;
    std::optional<double> m_syncOverheadNs;
    // The pre-start delay (cuda_delay.h); when it cannot load, timedRun synchronizes instead
    // and timingInfo() says so.
    std::unique_ptr<cuda::DelayKernel> m_delay;
    bool m_delayTried = false;
    std::string m_delayError;
    // Since the last timingInfo(): timed runs, and those whose hone_run returned after the
    // delay had already run out (host time beyond the delay was then counted).
    int m_delayedRuns = 0;
    int m_exposedLaunches = 0;
    std::optional<core::Ceilings> m_ceilings;
    // The judge kernels (prepareDeviceChecks): the loaded object's entry points, or why not.
    struct Judge {
        void* handle = nullptr;
        int (*mismatches)(void*, const void*, const void*, unsigned long long, int, double, double,
            unsigned long long*) = nullptr;
        int (*checksum)(void*, const void*, unsigned long long, unsigned long long, unsigned long long*) = nullptr;
        int (*fill64)(void*, void*, unsigned long long, unsigned long long) = nullptr;
    };
    Judge m_judge;
    bool m_judgeTried = false;
    std::string m_judgeError;
    struct SharedMapping {
        size_t bytes = 0; // mapped, a multiple of the allocation granularity
        unsigned long long handle = 0; // CUmemGenericAllocationHandle
    };
    /// Mappings made by allocateShared and importShared, by device address.
    std::map<CUdeviceptr, SharedMapping> m_shared;
};

} // namespace hone::backends
