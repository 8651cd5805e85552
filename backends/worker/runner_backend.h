#pragma once

#include "device_backend.h"
#include "sandbox.h"

#include <map>
#include <set>
#include <string>

/// Split trust on the CPU: the worker (the judge) compiles, generates inputs, compares outputs
/// and decides verdicts, but never maps candidate code. Each loaded object runs in its own runner
/// process (`hone-worker --runner`), started inside a bubblewrap sandbox where one is available.
/// Buffers are shared memory (one memfd each) that the judge maps too; a runner maps only the
/// buffers of the calls it is asked to make, so the candidate never sees the reference's outputs,
/// the baseline's inputs or anything else of the judge.
namespace hone::backends {

class RunnerKernel;

class RunnerBackend final : public DeviceBackend {
public:
    /// `inner` compiles, calibrates and flushes caches; runners see nothing of its cache.
    explicit RunnerBackend(DeviceBackend& inner);
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

    double timedRun(LoadedKernel& kernel, const hone_args& args, int& rc) override;
    void flushCaches(const std::vector<MemRegion>& workingSet) override { m_inner.flushCaches(workingSet); }
    std::unique_ptr<TimingLock> lockForTiming() override { return m_inner.lockForTiming(); }
    std::unique_ptr<TimingLock> lockForUse(const std::function<void()>& onWait = {}) override
    {
        return m_inner.lockForUse(onWait);
    }
    nlohmann::json timingInfo() override;
    core::Ceilings ceilings(bool force, bool* cached) override { return m_inner.ceilings(force, cached); }
    std::string clockDisagreement(LoadedKernel& kernel) override;
    bool verifiesEveryTimedCall() const override { return true; }

private:
    friend class RunnerKernel;
    struct Buffer {
        uint64_t id = 0;
        size_t bytes = 0;
        int fd = -1;
    };
    /// The buffer holding `p` and p's offset in it; throws where `p` is not a runner buffer.
    std::pair<const Buffer*, uint64_t> locate(const void* p) const;

    DeviceBackend& m_inner;
    std::map<uintptr_t, Buffer> m_buffers; // by base address in the judge
    uint64_t m_nextId = 1;
    std::set<RunnerKernel*> m_kernels;
};

} // namespace hone::backends
