#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include "cpu_backend.h"

#include "calibration.h"
#include "file_lock.h"
#include "core/sha256.h"
#include "system_info.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>

namespace hone::backends {
namespace {

using RunFn = int (*)(const hone_args*);

class CpuKernel final : public LoadedKernel {
public:
    explicit CpuKernel(RunFn fn)
        : m_fn(fn)
    {
    }
    int run(const hone_args& args) override { return m_fn(&args); }

private:
    RunFn m_fn;
};

} // namespace

CpuBackend::CpuBackend(std::filesystem::path cacheDir, HostCompiler& compiler)
    : m_cacheDir(std::move(cacheDir))
    , m_compiler(compiler)
    , m_model(cpuModelName())
    , m_cores(cpuCores())
    , m_llcBytes(lastLevelCacheBytes())
    , m_flushBytes(std::clamp<size_t>(2 * m_llcBytes, size_t(32) << 20, size_t(1) << 30))
{
}

CpuBackend::~CpuBackend()
{
    std::free(m_flushBuffer);
}

std::string CpuBackend::deviceName() const
{
    return "cpu: " + m_model + " (" + std::to_string(m_cores) + " cores)";
}

nlohmann::json CpuBackend::devices() const
{
    return nlohmann::json::array(
        { { { "kind", "cpu" }, { "name", m_model }, { "cores", m_cores }, { "llc_bytes", m_llcBytes } } });
}

bool CpuBackend::acceptsLang(const std::string& lang) const
{
    return lang == "cpp" || lang == "c++";
}

std::string CpuBackend::compilerVersion()
{
    return m_compiler.versionLine();
}

std::string CpuBackend::flagsFor(const CompileJob& job) const
{
    std::string flags;
    for (const auto& f : HostCompiler::baseFlags())
        flags += (flags.empty() ? "" : " ") + f;
    for (const auto& [name, value] : job.defines)
        flags += " -D" + name + "=" + value;
    for (const auto& f : splitFlags(job.flags))
        flags += " " + f;
    return flags;
}

CompileOutput CpuBackend::compile(const CompileJob& job)
{
    return m_compiler.compile(job);
}

std::unique_ptr<LoadedKernel> CpuBackend::load(
    const CompileOutput& object, std::string& error, bool& missingEntry)
{
    missingEntry = false;
    // Never dlclose'd: OpenMP pools and threads a candidate started may outlive the call.
    void* handle = ::dlopen(object.objectPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* err = ::dlerror();
        error = std::string("cannot load the compiled object: ") + (err ? err : "unknown dlopen error");
        return nullptr;
    }
    ::dlerror();
    void* sym = ::dlsym(handle, "hone_run");
    if (!sym) {
        missingEntry = true;
        error
            = "the compiled object exports no 'hone_run'; define extern \"C\" int hone_run(const hone_args*) "
              "(include <hone/kernel.h>)";
        return nullptr;
    }
    return std::make_unique<CpuKernel>(reinterpret_cast<RunFn>(sym));
}

void* CpuBackend::allocate(size_t bytes)
{
    void* p = std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
    if (!p)
        throw std::bad_alloc();
    return p;
}

void CpuBackend::release(void* p) noexcept
{
    std::free(p);
}

void CpuBackend::upload(void* device, const void* host, size_t bytes)
{
    std::memcpy(device, host, bytes);
}

void CpuBackend::download(void* host, const void* device, size_t bytes)
{
    std::memcpy(host, device, bytes);
}

double CpuBackend::timedRun(LoadedKernel& kernel, const hone_args& args, int& rc)
{
    const auto start = std::chrono::steady_clock::now();
    rc = kernel.run(args);
    const auto stop = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(stop - start).count();
}

void CpuBackend::flushCaches(const std::vector<MemRegion>& workingSet)
{
#if defined(__x86_64__) || defined(__i386__)
    // Evict exactly the kernel's working set from every cache level: clflush costs time in
    // proportion to the data the kernel touches, where writing a buffer of twice the
    // last-level cache cost seconds per candidate on hosts that report hundreds of MiB of L3.
    (void)m_flushRound;
    for (const MemRegion& r : workingSet) {
        const auto* p = static_cast<const char*>(r.data);
        for (size_t off = 0; off < r.bytes; off += 64)
            _mm_clflush(p + off);
        if (r.bytes > 0)
            _mm_clflush(p + r.bytes - 1);
    }
    _mm_mfence();
#else
    (void)workingSet;
    if (!m_flushBuffer) {
        m_flushBuffer = static_cast<unsigned char*>(std::aligned_alloc(4096, m_flushBytes));
        if (!m_flushBuffer)
            throw std::bad_alloc();
    }
    // No cache-line flush instruction here: write a buffer of twice the last-level cache.
    // A different byte each round, so no write can be skipped.
    std::memset(m_flushBuffer, static_cast<int>(++m_flushRound & 0xFF), m_flushBytes);
    volatile unsigned sink = 0;
    for (size_t i = 0; i < m_flushBytes; i += 4096)
        sink = sink + m_flushBuffer[i];
#endif
}

std::unique_ptr<TimingLock> CpuBackend::lockForTiming()
{
    // The flush buffer (up to 1 GiB) is only needed while timing: give it back after, so the
    // worker's resident size between timing stages stays that of the candidate's data.
    return lockFile(machineLockPath("cpu-timing.lock", m_cacheDir), true, [this] {
        std::free(m_flushBuffer);
        m_flushBuffer = nullptr;
    });
}

core::Ceilings CpuBackend::ceilings(bool force, bool* cached)
{
    const std::string key
        = core::sha256Hex(m_model + "\n" + std::to_string(m_cores) + "\n" + m_compiler.versionLine());
    return cachedCeilings(m_cacheDir / ("ceilings-cpu-" + key + ".json"), force, cached, m_ceilings, [this] {
        // Measured alone: no other worker may time (or calibrate) on this machine meanwhile.
        auto lock = lockForTiming();
        return measureCpuCeilings(m_compiler, deviceName(), m_llcBytes);
    },
        &m_cacheWarnings);
}

} // namespace hone::backends
