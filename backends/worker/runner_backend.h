#pragma once

#include "device_backend.h"
#include "sandbox.h"

#include <map>
#include <set>
#include <vector>
#include <string>

/// Split trust on the CPU: the worker (the judge) compiles, generates inputs, compares outputs
/// and decides verdicts, but never maps candidate code. Each loaded object runs in its own runner
/// process (`hone-worker --runner`), started inside a bubblewrap sandbox where one is available,
/// which loads exactly one object: a private memfd copy of the cached file, verified by hash as
/// it is copied (the runner sees no cache file, and a second load is refused).
/// Buffers are shared memory (one memfd each) that the judge maps too; a runner maps only the
/// buffers of the calls it is asked to make, so the candidate never sees the reference's outputs,
/// the baseline's inputs or anything else of the judge.
///
/// On a GPU (`Memory::Device`) the same split holds: each runner owns a context of its own on
/// the device and maps, by file descriptor, only the device buffers of its calls, which the
/// judge allocates in its own context, poisons, fills and reads itself. The runner times a call
/// with the device's events; the judge bounds that report by its own clock (clockDisagreement).
namespace hone::backends {

class RunnerKernel;

class RunnerBackend final : public DeviceBackend {
public:
    /// Where call buffers live: shared host memory (memfd), or `inner`'s device memory
    /// exported to the runners (DeviceBackend::allocateShared).
    enum class Memory { Host, Device };

    /// `inner` compiles, calibrates and flushes caches; runners see nothing of its cache.
    explicit RunnerBackend(DeviceBackend& inner, Memory memory = Memory::Host);
    ~RunnerBackend() override;

    std::string kind() const override { return m_inner.kind(); }
    std::string deviceName() const override { return m_inner.deviceName(); }
    nlohmann::json devices() const override { return m_inner.devices(); }
    bool acceptsLang(const std::string& lang) const override { return m_inner.acceptsLang(lang); }
    std::string compilerVersion() override { return m_inner.compilerVersion(); }
    std::string flagsFor(const CompileJob& job) const override { return m_inner.flagsFor(job); }
    std::string refusedFlags(const std::string& flags) const override { return m_inner.refusedFlags(flags); }
    CompileOutput compile(const CompileJob& job) override { return m_inner.compile(job); }
    std::unique_ptr<LoadedKernel> load(const CompileOutput& object, std::string& error, bool& missingEntry) override;

    void* allocate(size_t bytes) override;
    void release(void* p) noexcept override;
    void upload(void* device, const void* host, size_t bytes) override;
    void download(void* host, const void* device, size_t bytes) override;
    void* stream() override { return nullptr; }
    void* workspace(size_t& bytes) override;
    void synchronize() override;
    bool deviceLost() const override;
    bool lastRunDisturbed() const override { return m_lastDisturbed; }
    nlohmann::json launchProfile(LoadedKernel& kernel, const hone_args& args) override;
    nlohmann::json profile(const nlohmann::json& request) override;

    double timedRun(LoadedKernel& kernel, const hone_args& args, int& rc) override;
    void flushCaches(const std::vector<MemRegion>& workingSet) override;
    std::unique_ptr<TimingLock> lockForTiming() override { return m_inner.lockForTiming(); }
    std::unique_ptr<TimingLock> lockForUse(const std::function<void()>& onWait = {}) override
    {
        return m_inner.lockForUse(onWait);
    }
    nlohmann::json timingInfo() override;
    core::Ceilings ceilings(bool force, bool* cached) override { return m_inner.ceilings(force, cached); }
    std::vector<std::string> takeCacheWarnings() override { return m_inner.takeCacheWarnings(); }
    std::string clockDisagreement(LoadedKernel& kernel) override;
    bool verifiesEveryTimedCall() const override { return m_memory == Memory::Host; }
    // On a GPU the buffers are the inner backend's: its judge kernels check them.
    std::string prepareDeviceChecks() override
    {
        return onDevice() ? m_inner.prepareDeviceChecks() : "buffers in host memory";
    }
    bool poisonOnDevice(void* device, hone_dtype dtype, size_t numel) override
    {
        return onDevice() && m_inner.poisonOnDevice(device, dtype, numel);
    }
    std::optional<uint64_t> mismatchesOnDevice(
        const void* got, const void* want, hone_dtype dtype, size_t numel, double atol, double rtol) override
    {
        return onDevice() ? m_inner.mismatchesOnDevice(got, want, dtype, numel, atol, rtol) : std::nullopt;
    }
    std::optional<uint64_t> checksumOnDevice(const void* device, size_t bytes, uint64_t key) override
    {
        return onDevice() ? m_inner.checksumOnDevice(device, bytes, key) : std::nullopt;
    }

private:
    friend class RunnerKernel;
    struct Buffer {
        uint64_t id = 0;
        size_t bytes = 0;
        int fd = -1;
    };
    /// The buffer holding `p` and p's offset in it; throws where `p` is not a runner buffer.
    std::pair<const Buffer*, uint64_t> locate(const void* p) const;

    bool onDevice() const { return m_memory == Memory::Device; }
    /// The runner's command line: `hone-worker --runner 3 [cuda]`, in the sandbox where enabled.
    std::vector<std::string> runnerCommand() const;

    DeviceBackend& m_inner;
    Memory m_memory;
    std::map<uintptr_t, Buffer> m_buffers; // by base address in the judge
    uint64_t m_nextId = 1;
    std::set<RunnerKernel*> m_kernels;
    RunnerKernel* m_lastTimed = nullptr; // the candidate of the last clock check: timingInfo() asks it
    void* m_workspace = nullptr; // device runners: scratch shared by the calls (hone_args.workspace)
    bool m_lastDisturbed = false;
    bool m_lost = false; // a runner's device context faulted
};

} // namespace hone::backends
