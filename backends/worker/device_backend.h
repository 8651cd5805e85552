#pragma once

#include "compiler.h"
#include "core/diagnosis.h"

#include <hone/kernel.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>
#include <string>
#include <utility>

/// What the evaluator needs from a device: compile, load, memory, run, time, ceilings.
/// The CPU implements it now; CUDA (driver API + NVRTC) and HIP plug in beside it.
namespace hone::backends {

/// Asynchronous work of a candidate failed on the device (an illegal address, a trap): the
/// candidate fails with a runtime error, and where deviceLost() says so the worker exits after
/// reporting it.
class DeviceFault : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The process that ran a candidate's code died (a signal, an exit) while serving a call.
class RunnerDied : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The process that ran a candidate's code sent something other than the one reply to the
/// request at hand: forged, or out of step.
class RunnerForged : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A loaded translation unit's hone_run, callable with buffers of the backend that loaded it.
class LoadedKernel {
public:
    virtual ~LoadedKernel() = default;
    /// Calls hone_run; exceptions thrown by candidate code propagate.
    virtual int run(const hone_args& args) = 0;
};

/// Held for a whole timing stage so that workers sharing a device never time concurrently.
class TimingLock {
public:
    virtual ~TimingLock() = default;
};

/// A buffer a timed kernel touches.
struct MemRegion {
    const void* data = nullptr;
    size_t bytes = 0;
};

class DeviceBackend {
public:
    virtual ~DeviceBackend() = default;

    /// "cpu", "cuda", "hip".
    virtual std::string kind() const = 0;
    /// "cpu: Intel(R) Xeon(R) Processor (2 cores)": names the device in results and ceilings.
    virtual std::string deviceName() const = 0;
    /// Entries of the hello reply's `devices`.
    virtual nlohmann::json devices() const = 0;
    /// Whether candidates in `lang` ("cpp", "cuda", "hip") can be built for this device.
    virtual bool acceptsLang(const std::string& lang) const = 0;
    /// Compiler identification for results ("g++ (Debian 12.2.0-14) 12.2.0").
    virtual std::string compilerVersion() = 0;
    /// The flags a compile of `job` gets, as one string, for the result's environment.
    virtual std::string flagsFor(const CompileJob& job) const = 0;

    /// Empty when every user flag is allowed for this backend's compiler, else why not.
    virtual std::string refusedFlags(const std::string& flags) const { return refusedFlag(splitFlags(flags)); }

    virtual CompileOutput compile(const CompileJob& job) = 0;
    /// nullptr with `error` set when the object cannot be loaded or exports no hone_run;
    /// `missingEntry` tells the two apart.
    virtual std::unique_ptr<LoadedKernel> load(
        const CompileOutput& object, std::string& error, bool& missingEntry)
        = 0;

    /// Device memory; throws std::bad_alloc when there is not enough.
    virtual void* allocate(size_t bytes) = 0;
    virtual void release(void* p) noexcept = 0;
    virtual void upload(void* device, const void* host, size_t bytes) = 0;
    virtual void download(void* host, const void* device, size_t bytes) = 0;
    /// Passed to hone_run as `stream`; null on the CPU.
    virtual void* stream() = 0;

    /// Device memory another process (a runner) can map: `fd` gets a descriptor of it that the
    /// caller owns and passes on. Throws std::bad_alloc when there is not enough, and
    /// std::runtime_error where this device cannot share memory between processes.
    virtual void* allocateShared(size_t bytes, int& fd)
    {
        (void)bytes;
        fd = -1;
        throw std::runtime_error(kind() + " memory cannot be shared with another process");
    }
    virtual void releaseShared(void* p) noexcept { (void)p; }
    /// In a runner: maps memory that allocateShared made in another process (`fd` is consumed).
    virtual void* importShared(int fd, size_t bytes)
    {
        (void)fd;
        (void)bytes;
        throw std::runtime_error(kind() + " memory cannot be shared with another process");
    }
    virtual void releaseImported(void* p) noexcept { (void)p; }

    /// Runs once and returns the wall time in ns until the whole device is idle again (so
    /// work on side streams counts). `rc` gets hone_run's return value.
    virtual double timedRun(LoadedKernel& kernel, const hone_args& args, int& rc) = 0;
    /// Whether the last timedRun's closing synchronize came back much later than the stream's
    /// end: work on other streams, or this process kept off the CPU. The evaluator re-takes
    /// such a sample (twice at most) and keeps the device-wide time only when it persists.
    virtual bool lastRunDisturbed() const { return false; }
    /// Evicts the kernel's working set (its input, output and workspace buffers) from the
    /// caches between timed runs, so every run starts cold.
    virtual void flushCaches(const std::vector<MemRegion>& workingSet) = 0;
    virtual std::unique_ptr<TimingLock> lockForTiming() = 0;
    /// Held (shared) while checks run kernels on the device, so that no check overlaps another
    /// worker's timing stage; null where checks cannot disturb timing.
    /// `onWait` runs before blocking when a timing stage holds the device.
    virtual std::unique_ptr<TimingLock> lockForUse(const std::function<void()>& /*onWait*/ = {}) { return nullptr; }

    /// Waits until the device is idle. Throws cuda::DriverError-like std::runtime_error when
    /// work that ran asynchronously faulted; see deviceLost().
    virtual void synchronize() { }
    /// True once a fault has left the device context unusable: the worker reports the failed
    /// candidate and exits, and the executor starts a fresh one.
    virtual bool deviceLost() const { return false; }

    /// The optional profiler stage for one eval `request`: structured metrics, or
    /// {"error": why} where the profiler is missing or failed; null where the backend has none.
    virtual nlohmann::json profile(const nlohmann::json& request)
    {
        (void)request;
        return nullptr;
    }

    /// Whether checking the outputs of a timed call costs little next to the call (host
    /// memory): then the evaluator verifies a larger random share of them.
    virtual bool verifiesEveryTimedCall() const { return false; }

    /// After timing: empty when the clock `kernel` was timed with agrees with a clock the
    /// candidate cannot touch, else why not (the candidate then fails as suspicious).
    virtual std::string clockDisagreement(LoadedKernel& kernel)
    {
        (void)kernel;
        return {};
    }

    /// How samples were timed, for the result's timing.method; null where there is nothing to add.
    virtual nlohmann::json timingInfo() { return nullptr; }

    /// Scratch passed to hone_run as `workspace`; null with 0 bytes where there is none.
    virtual void* workspace(size_t& bytes)
    {
        bytes = 0;
        return nullptr;
    }

    /// The launches one call of hone_run makes, with grid, block, registers, shared memory and
    /// theoretical occupancy per kernel; null where the backend cannot tell.
    virtual nlohmann::json launchProfile(LoadedKernel& kernel, const hone_args& args)
    {
        (void)kernel;
        (void)args;
        return nullptr;
    }

    /// The judge's own device work on buffers it allocated (trusted code in the judge's
    /// context, never the candidate's), so that checking a timed call of a large shape moves no
    /// data to the host. Each answers nullopt (or false) where the backend has none; the evaluator
    /// then does the same work on the host.
    /// Prepares them (may compile; call before taking the timing lock). Empty, or why they are off.
    virtual std::string prepareDeviceChecks() { return "this device has none"; }
    /// Fills `numel` elements of `dtype` at `device` with the poison pattern (HostTensor::poison).
    virtual bool poisonOnDevice(void* device, hone_dtype dtype, size_t numel)
    {
        (void)device, (void)dtype, (void)numel;
        return false;
    }
    /// How many of `numel` elements compareRun would report for `got` against `want`.
    virtual std::optional<uint64_t> mismatchesOnDevice(
        const void* got, const void* want, hone_dtype dtype, size_t numel, double atol, double rtol)
    {
        (void)got, (void)want, (void)dtype, (void)numel, (void)atol, (void)rtol;
        return std::nullopt;
    }
    /// A checksum of `bytes` at `device` keyed by `key`: without the key, no change of the bytes
    /// keeps it.
    virtual std::optional<uint64_t> checksumOnDevice(const void* device, size_t bytes, uint64_t key)
    {
        (void)device, (void)bytes, (void)key;
        return std::nullopt;
    }

    /// The device's measured ceilings, cached on disk per device and compiler; `force`
    /// measures again. Throws std::runtime_error when they cannot be measured.
    virtual core::Ceilings ceilings(bool force, bool* cached) = 0;

    /// Cache entries of this backend's own (ceilings) that failed their hash check since the
    /// last call: each was measured again, never used (cache_integrity.h).
    virtual std::vector<std::string> takeCacheWarnings() { return std::exchange(m_cacheWarnings, {}); }

protected:
    std::vector<std::string> m_cacheWarnings;
};

/// Device memory owned for one scope.
class DeviceBuffer {
public:
    DeviceBuffer(DeviceBackend& backend, size_t bytes)
        : m_backend(&backend)
        , m_ptr(backend.allocate(bytes))
        , m_bytes(bytes)
    {
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& other) noexcept
        : m_backend(other.m_backend)
        , m_ptr(other.m_ptr)
        , m_bytes(other.m_bytes)
    {
        other.m_ptr = nullptr;
    }
    DeviceBuffer& operator=(DeviceBuffer&&) = delete;
    ~DeviceBuffer()
    {
        if (m_ptr)
            m_backend->release(m_ptr);
    }

    void* get() const { return m_ptr; }
    size_t bytes() const { return m_bytes; }

private:
    DeviceBackend* m_backend;
    void* m_ptr;
    size_t m_bytes;
};

} // namespace hone::backends
