#pragma once

#include "device_backend.h"

#include <filesystem>
#include <optional>

namespace hone::backends {

/// The host CPU as a device: candidates are C++ shared objects built with OpenMP, buffers are
/// host memory, timing is steady_clock around the call with a cache flush in between.
class CpuBackend final : public DeviceBackend {
public:
    CpuBackend(std::filesystem::path cacheDir, HostCompiler& compiler);
    ~CpuBackend() override;

    std::string kind() const override { return "cpu"; }
    std::string deviceName() const override;
    nlohmann::json devices() const override;
    bool acceptsLang(const std::string& lang) const override;
    std::string compilerVersion() override;
    std::string flagsFor(const CompileJob& job) const override;

    CompileOutput compile(const CompileJob& job) override;
    std::unique_ptr<LoadedKernel> load(
        const CompileOutput& object, std::string& error, bool& missingEntry) override;

    void* allocate(size_t bytes) override;
    void release(void* p) noexcept override;
    void upload(void* device, const void* host, size_t bytes) override;
    void download(void* host, const void* device, size_t bytes) override;
    void* stream() override { return nullptr; }

    double timedRun(LoadedKernel& kernel, const hone_args& args, int& rc) override;
    void flushCaches(const std::vector<MemRegion>& workingSet) override;
    std::unique_ptr<TimingLock> lockForTiming() override;
    core::Ceilings ceilings(bool force, bool* cached) override;

    /// Bytes written per flush: twice the last-level cache, at least 32 MiB, at most 1 GiB.
    size_t flushBytes() const { return m_flushBytes; }

private:
    std::filesystem::path m_cacheDir;
    HostCompiler& m_compiler;
    std::string m_model;
    unsigned m_cores;
    size_t m_llcBytes;
    size_t m_flushBytes;
    unsigned char* m_flushBuffer = nullptr;
    unsigned m_flushRound = 0;
    std::optional<core::Ceilings> m_ceilings;
};

} // namespace hone::backends
