#pragma once

#include "device_backend.h"
#include "hip_runtime.h"
#include "hip_toolchain.h"

#include <filesystem>
#include <memory>
#include <optional>

namespace hone::backends {

/// An AMD GPU as a device (docs/HIP.md): candidates are hipcc-built shared objects for one gfx
/// architecture whose hone_run launches on the harness stream; every compile is followed by the
/// code-object analysis (hip_code_object.h): per-kernel registers, LDS, scratch, spills, the
/// kernel descriptor, occupancy on CDNA2/CDNA3 and the ISA. Memory, streams and events go
/// through libamdhip64 loaded at run time. Without a GPU it still compiles and analyses (for
/// the request's `hip_arch`, else $HONE_HIP_ARCH, else gfx90a) and says why it cannot run.
class HipBackend final : public DeviceBackend {
public:
    explicit HipBackend(std::filesystem::path cacheDir);
    ~HipBackend() override;

    bool available() const;
    std::string unavailableReason() const;
    bool canCompile() const { return !m_hipcc.empty(); }
    /// The gfx target compiles are for: the device's when there is one.
    const std::string& arch() const { return m_arch; }
    /// A request's `hip_arch` ("" for the default): empty when accepted (this request's compiles
    /// are for it), else why not (an unknown name, or not the architecture of this host's GPU).
    std::string selectArch(const std::string& arch);
    /// The clang that builds what hipcc cannot (hip_toolchain.h): its version line, "" when none.
    std::string clangVersion();
    /// ROCm version ("5.2.21153") from the runtime, else from hipcc; "" when neither says.
    std::string rocmVersion();

    /// "amd", or "nvidia" for HIP on the NVIDIA platform (HONE_HIP_PLATFORM=nvidia, a test bench
    /// for this run path: nvcc and HIP's NVIDIA platform headers, libhone-hip-nvidia.so).
    std::string platform() const { return m_nvidia ? "nvidia" : "amd"; }

    std::string kind() const override { return "hip"; }
    std::string deviceName() const override;
    nlohmann::json devices() const override;
    bool acceptsLang(const std::string& lang) const override { return lang == "hip"; }
    std::string compilerVersion() override;
    std::string flagsFor(const CompileJob& job) const override;
    std::string refusedFlags(const std::string& flags) const override;

    CompileOutput compile(const CompileJob& job) override;
    std::unique_ptr<LoadedKernel> load(const CompileOutput& object, std::string& error, bool& missingEntry) override;

    void* allocate(size_t bytes) override;
    void release(void* p) noexcept override;
    void upload(void* device, const void* host, size_t bytes) override;
    void download(void* host, const void* device, size_t bytes) override;
    void* stream() override;

    double timedRun(LoadedKernel& kernel, const hone_args& args, int& rc) override;
    void flushCaches(const std::vector<MemRegion>& workingSet) override;
    std::unique_ptr<TimingLock> lockForTiming() override;
    std::unique_ptr<TimingLock> lockForUse(const std::function<void()>& onWait = {}) override;
    void synchronize() override;
    bool deviceLost() const override { return m_lost; }
    void* workspace(size_t& bytes) override;
    nlohmann::json timingInfo() override;
    nlohmann::json launchProfile(LoadedKernel& kernel, const hone_args& args) override;
    core::Ceilings ceilings(bool force, bool* cached) override;

    /// The analysis of a compiled object for `arch`: fills `out.resources` (per kernel; an
    /// {"error": ...} object when the code object cannot be read) and `out.isa`, with the
    /// llvm-readelf / llvm-objdump of `llvmBinDir` where given (the LLVM that built it).
    void analyze(CompileOutput& out, const std::string& arch, const std::string& llvmBinDir = {});

private:
    void ensureStream();
    /// HIP on NVIDIA: nvcc over the candidate with HIP's NVIDIA platform headers.
    CompileOutput compileNvidia(const CompileJob& job, const std::string& version);
    /// The NVIDIA platform headers copied under the cache's include folder (which the sandbox
    /// sees), in a folder named by their content; "" and `error` set when they cannot be found.
    std::string nvidiaHeaders(std::string& error);
    std::vector<std::string> nvidiaFlags() const;
    /// Throws DeviceFault (sticky errors mark the device lost), std::bad_alloc or runtime_error.
    void check(hipError_t code, const char* what);

    hip::ToolchainSelector& toolchains();

    std::unique_ptr<hip::Runtime> m_rt;
    std::unique_ptr<hip::ToolchainSelector> m_toolchains; // made on the first compile
    std::filesystem::path m_cacheDir;
    std::string m_hipcc;
    std::string m_hipccVersion;
    bool m_hipccVersionRead = false;
    std::string m_arch = "gfx90a";
    std::string m_defaultArch = "gfx90a"; // the device's, else $HONE_HIP_ARCH, else gfx90a
    std::string m_deviceArch; // the GPU's, when there is one

    bool m_nvidia = false;
    std::string m_nvidiaInclude; // <cache>/include/hip-nvidia-HASH, once copied
    int m_waveSize = 64;
    int m_maxWavesPerCu = 32;

    std::string m_name;
    std::string m_uuid;
    int m_cus = 0;
    int m_l2Bytes = 0;
    size_t m_memoryBytes = 0;
    hipStream_t m_stream = nullptr;
    hipEvent_t m_start = nullptr;
    hipEvent_t m_stop = nullptr;
    hipEvent_t m_after = nullptr;
    void* m_flush = nullptr;
    size_t m_flushBytes = 0;
    unsigned m_flushRound = 0;
    void* m_workspace = nullptr;
    size_t m_workspaceBytes = size_t(64) << 20;
    bool m_lost = false;
    bool m_lastDisturbed = false;
    std::optional<core::Ceilings> m_ceilings;
};

} // namespace hone::backends
