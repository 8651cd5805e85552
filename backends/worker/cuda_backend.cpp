#include "cuda_backend.h"
#include "cache_integrity.h"

#include "calibration.h"
#include "core/knobs.h"
#include "core/sha256.h"
#include "core/utf8.h"
#include "cuda_delay.h"
#include "cuda_driver.h"
#include "file_lock.h"
#include "hone_embedded.h"
#include "ncu_profile.h"
#include "process.h"
#include "sandbox.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace hone::backends {
namespace fs = std::filesystem;
using cuda::Driver;

namespace {

using RunFn = int (*)(const hone_args*);

class CudaKernel final : public LoadedKernel {
public:
    explicit CudaKernel(RunFn fn)
        : m_fn(fn)
    {
    }
    int run(const hone_args& args) override { return m_fn(&args); }

private:
    RunFn m_fn;
};

std::string join(const std::vector<std::string>& parts)
{
    std::string out;
    for (const auto& p : parts)
        out += (out.empty() ? "" : " ") + p;
    return out;
}

std::string trimRight(std::string s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.pop_back();
    return s;
}

std::string demangle(const std::string& name)
{
    int status = 0;
    char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !out)
        return name;
    std::string s = out;
    std::free(out);
    return s;
}

/// A file name nvcc treats as CUDA and that cannot escape the build directory.
std::string cudaFileName(const std::string& name)
{
    std::string base = fs::path(name).filename().string();
    for (char& c : base)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
            c = '_';
    if (base.empty() || base[0] == '.' || base[0] == '-')
        base = "candidate" + base;
    if (fs::path(base).extension() != ".cu")
        base += ".cu";
    return base;
}

std::string findNvcc()
{
    if (const char* env = std::getenv("HONE_NVCC"); env && *env)
        return findExecutable(env);
    if (std::string p = findExecutable("nvcc"); !p.empty())
        return p;
    for (const char* p : { "/usr/local/cuda/bin/nvcc", "/opt/cuda/bin/nvcc" })
        if (::access(p, X_OK) == 0)
            return p;
    return {};
}

/// nvcc's `file(line): error: text` and the host compiler's `file:line:col: error: text`.
std::vector<CompileMessage> parseNvccDiagnostics(const std::string& log)
{
    std::vector<CompileMessage> out = parseDiagnostics(log);
    static const std::regex nvccLine(R"(^(.+?)\((\d+)\): (error|warning|catastrophic error)[^:]*: (.*)$)");
    static const std::regex ptxasLine(R"(^ptxas (error|fatal)\s*: (.*)$)");
    std::istringstream in(log);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
        line = trimRight(line);
        if (std::regex_match(line, m, nvccLine)) {
            CompileMessage msg;
            msg.file = m[1];
            msg.line = std::atoi(m[2].str().c_str());
            msg.severity = m[3] == "warning" ? "warning" : "error";
            msg.text = m[4];
            out.push_back(msg);
        } else if (std::regex_match(line, m, ptxasLine)) {
            CompileMessage msg;
            msg.file = "ptxas";
            msg.severity = "error";
            msg.text = m[2];
            out.push_back(msg);
        }
    }
    // Errors first, in the order they came, so firstError() names the first real one.
    std::stable_sort(out.begin(), out.end(), [](const CompileMessage& a, const CompileMessage& b) {
        auto rank = [](const CompileMessage& x) { return x.severity == "error" || x.severity == "fatal error" ? 0 : 1; };
        return rank(a) < rank(b);
    });
    return out;
}

} // namespace

/// ptxas -v resource usage per kernel: registers, shared memory, stack, spills.
nlohmann::json parsePtxasResources(const std::string& log)
{
    static const std::regex entry(R"(Compiling entry function '([^']+)')");
    static const std::regex props(R"(Function properties for (\S+))");
    static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
    static const std::regex used(R"(Used (\d+) registers)");
    static const std::regex smem(R"((\d+) bytes smem)");
    nlohmann::json kernels = nlohmann::json::array();
    std::map<std::string, nlohmann::json> byName;
    std::vector<std::string> order;
    std::string current;
    std::istringstream in(log);
    std::string line;
    std::smatch m;
    auto entryFor = [&](const std::string& mangled) -> nlohmann::json& {
        if (!byName.count(mangled)) {
            order.push_back(mangled);
            byName[mangled] = { { "name", demangle(mangled) }, { "mangled", mangled }, { "registers", 0 },
                { "smem_static", 0 }, { "stack_bytes", 0 }, { "spill_stores", 0 }, { "spill_loads", 0 } };
        }
        return byName[mangled];
    };
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, entry)) {
            current = m[1];
            entryFor(current);
        } else if (std::regex_search(line, m, props)) {
            current = m[1];
        } else if (!current.empty() && std::regex_search(line, m, frame)) {
            if (byName.count(current)) {
                auto& k = byName[current];
                k["stack_bytes"] = std::stoll(m[1]);
                k["spill_stores"] = std::stoll(m[2]);
                k["spill_loads"] = std::stoll(m[3]);
            }
        } else if (!current.empty() && std::regex_search(line, m, used)) {
            auto& k = entryFor(current);
            k["registers"] = std::stoll(m[1]);
            std::smatch s;
            if (std::regex_search(line, s, smem))
                k["smem_static"] = std::stoll(s[1]);
        }
    }
    for (const auto& name : order)
        kernels.push_back(byName[name]);
    return kernels;
}

CudaBackend::CudaBackend(fs::path cacheDir)
    : m_driver(std::make_unique<Driver>())
    , m_cacheDir(std::move(cacheDir))
    , m_nvcc(findNvcc())
{
    if (const char* a = std::getenv("HONE_CUDA_ARCH"); a && *a)
        m_arch = a;
    Driver& d = *m_driver;
    if (d.available()) {
        // The device is read now (names, limits), the context made at first use.
        int ordinal = 0;
        if (const char* o = std::getenv("HONE_CUDA_DEVICE"); o && *o)
            ordinal = std::atoi(o);
        if (d.cuDeviceGet(&m_device, ordinal) == CUDA_SUCCESS) {
            m_haveDevice = true;
            char name[256] = {};
            d.cuDeviceGetName(name, sizeof name, m_device);
            m_name = name;
            auto attr = [&](CUdevice_attribute a) {
                int v = 0;
                d.cuDeviceGetAttribute(&v, a, m_device);
                return v;
            };
            m_ccMajor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
            m_ccMinor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
            m_sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
            m_l2Bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
            m_maxThreadsPerSm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
            m_regsPerSm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
            m_smemPerSm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
            m_maxBlocksPerSm = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
            d.cuDeviceTotalMem(&m_memoryBytes, m_device);
            d.cuDriverGetVersion(&m_driverVersion);
            CUuuid uuid {};
            if (d.cuDeviceGetUuid(&uuid, m_device) == CUDA_SUCCESS) {
                static const char* hex = "0123456789abcdef";
                for (unsigned char b : uuid.bytes) {
                    m_uuid += hex[b >> 4];
                    m_uuid += hex[b & 15];
                }
            }
            m_arch = "sm_" + std::to_string(m_ccMajor) + std::to_string(m_ccMinor);
        }
    }
    // Hopper's architecture-specific features (wgmma, setmaxnreg) need the 'a' target.
    const std::string digits = m_arch.substr(m_arch.find('_') + 1);
    const std::string full = digits == "90" ? "90a" : digits;
    m_gencode = "-gencode=arch=compute_" + full + ",code=sm_" + full;
}

CudaBackend::~CudaBackend()
{
    Driver& d = *m_driver;
    if (!m_ctx || m_lost)
        return;
    if (m_flush)
        d.cuMemFree(m_flush);
    if (m_workspace)
        d.cuMemFree(m_workspace);
    if (m_delay)
        m_delay->unload();
    for (CUevent e : { m_start, m_stop, m_after })
        if (e)
            d.cuEventDestroy(e);
    if (m_stream)
        d.cuStreamDestroy(m_stream);
    d.cuDevicePrimaryCtxRelease(m_device);
}

bool CudaBackend::available() const
{
    return m_driver->available() && m_haveDevice;
}

std::string CudaBackend::unavailableReason() const
{
    if (!m_driver->available())
        return m_driver->unavailableReason();
    if (!m_haveDevice)
        return "the NVIDIA driver cannot open the selected GPU (check HONE_CUDA_DEVICE and CUDA_VISIBLE_DEVICES)";
    return {};
}

std::string CudaBackend::deviceName() const
{
    if (!available())
        return "cuda: none (" + unavailableReason() + ")";
    return "cuda: " + m_name + " (" + m_arch + ", " + std::to_string(m_sms) + " SMs)";
}

nlohmann::json CudaBackend::devices() const
{
    if (!available())
        return nlohmann::json::array();
    return nlohmann::json::array({ { { "kind", "cuda" }, { "name", m_name }, { "arch", m_arch },
        { "uuid", m_uuid }, { "sms", m_sms }, { "l2_bytes", m_l2Bytes }, { "memory_bytes", m_memoryBytes },
        { "shared_per_sm", m_smemPerSm }, { "registers_per_sm", m_regsPerSm },
        { "max_threads_per_sm", m_maxThreadsPerSm }, { "driver", m_driverVersion } } });
}

std::string CudaBackend::compilerVersion()
{
    if (!m_nvccVersionRead) {
        m_nvccVersionRead = true;
        if (!m_nvcc.empty()) {
            const ProcessResult r = runProcess({ m_nvcc, "--version" }, {}, 60);
            if (r.started && r.exitCode == 0) {
                // The last line says it all: "Build cuda_13.0.r13.0/compiler.36424714_0".
                std::istringstream in(r.output);
                std::string line;
                std::string release;
                while (std::getline(in, line))
                    if (line.find("release") != std::string::npos)
                        release = trimRight(line);
                m_nvccVersion = release.empty() ? trimRight(r.output) : release;
            }
        }
    }
    return m_nvccVersion;
}

namespace {

const std::vector<std::string>& nvccBaseFlags()
{
    static const std::vector<std::string> flags
        = { "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-lineinfo" };
    return flags;
}

std::vector<std::string> libraryFlags(const std::vector<std::string>& libraries, const std::string& nvcc = {})
{
    std::vector<std::string> out;
    // The toolkit's own library folder, so the candidate finds libcublasLt at dlopen time
    // whatever ld.so.conf says.
    if (!libraries.empty() && !nvcc.empty()) {
        for (const char* sub : { "lib64", "lib" }) {
            const fs::path dir = fs::path(nvcc).parent_path().parent_path() / sub;
            std::error_code ec;
            if (fs::exists(dir, ec)) {
                out.push_back("-Xlinker=-rpath=" + dir.string());
                break;
            }
        }
    }
    for (const auto& l : libraries) {
        if (l == "cublasLt")
            out.push_back("-lcublasLt");
        else if (l == "cublas")
            out.push_back("-lcublas");
    }
    return out;
}

} // namespace

std::string CudaBackend::flagsFor(const CompileJob& job) const
{
    std::vector<std::string> f = nvccBaseFlags();
    f.push_back(m_gencode);
    for (const auto& [name, value] : job.defines)
        f.push_back("-D" + name + "=" + value);
    for (const auto& x : splitFlags(job.flags))
        f.push_back(x);
    for (const auto& x : libraryFlags(job.libraries))
        f.push_back(x);
    return join(f);
}

std::string CudaBackend::refusedFlags(const std::string& flags) const
{
    return core::checkFlags(flags, "cuda");
}

CompileOutput CudaBackend::compile(const CompileJob& job)
{
    CompileOutput out;
    if (m_nvcc.empty()) {
        out.toolError = "cannot find nvcc (set HONE_NVCC, put nvcc on PATH or install the CUDA toolkit "
                        "in /usr/local/cuda)";
        return out;
    }
    const std::string version = compilerVersion();
    if (version.empty()) {
        out.toolError = "cannot run nvcc at " + m_nvcc;
        return out;
    }
    const fs::path includeDir = installKernelHeader(m_cacheDir);
    const std::string srcName = cudaFileName(job.name);
    std::vector<std::string> middle = nvccBaseFlags();
    middle.push_back(m_gencode);
    std::vector<std::string> keyMiddle = middle;
    appendJobFlags(job, includeDir.string(), middle, keyMiddle);
    const std::vector<std::string> libs = libraryFlags(job.libraries, m_nvcc);
    for (const auto& l : libs)
        keyMiddle.push_back(l);

    const std::string key = core::sha256Hex("hone-cuda-compile-1\n" + version + "\n" + m_nvcc + "\n"
        + join(keyMiddle) + "\n" + core::sha256Hex(embedded::kKernelHeader) + "\n" + job.source);
    CachedCompile c;
    c.cacheDir = m_cacheDir;
    c.subdir = "cuda-so";
    c.key = key;
    c.compiler = m_nvcc;
    c.middle = middle;
    c.tail = libs;
    c.sourceName = srcName;
    c.source = job.source;
    c.timeLimitSeconds = job.timeLimitSeconds;
    c.parseLog = [](CompileOutput& o) {
        o.messages = parseNvccDiagnostics(o.log);
        o.resources = parsePtxasResources(o.log);
    };
    return runCachedCompile(c);
}

std::unique_ptr<LoadedKernel> CudaBackend::load(const CompileOutput& object, std::string& error, bool& missingEntry)
{
    missingEntry = false;
    ensureContext();
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
        error = "the compiled object exports no 'hone_run'; define extern \"C\" int hone_run(const hone_args*) "
                "(include <hone/kernel.h>)";
        return nullptr;
    }
    return std::make_unique<CudaKernel>(reinterpret_cast<RunFn>(sym));
}

void CudaBackend::ensureContext()
{
    if (m_ctx)
        return;
    if (!available())
        throw std::runtime_error("cannot run CUDA candidates here: " + unavailableReason());
    Driver& d = *m_driver;
    // Spin while waiting: the device-wide synchronize that ends every sample then costs
    // microseconds, not a scheduler wake-up. Fails harmlessly when the context is active.
    d.cuDevicePrimaryCtxSetFlags(m_device, CU_CTX_SCHED_SPIN);
    check(d.cuDevicePrimaryCtxRetain(&m_ctx, m_device), "cuDevicePrimaryCtxRetain");
    check(d.cuCtxSetCurrent(m_ctx), "cuCtxSetCurrent");
    check(d.cuStreamCreate(&m_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    for (CUevent* e : { &m_start, &m_stop, &m_after })
        check(d.cuEventCreate(e, CU_EVENT_DEFAULT), "cuEventCreate");
}

void CudaBackend::check(CUresult code, const char* what)
{
    if (code == CUDA_SUCCESS)
        return;
    Driver& d = *m_driver;
    if (cuda::isSticky(code)) {
        m_lost = true;
        throw DeviceFault(std::string("GPU fault: ") + d.describe(code) + " (seen by " + what
            + "); the context is lost and the worker restarts");
    }
    if (code == CUDA_ERROR_OUT_OF_MEMORY)
        throw std::bad_alloc();
    throw std::runtime_error(std::string(what) + " failed: " + d.describe(code));
}

void* CudaBackend::allocate(size_t bytes)
{
    ensureContext();
    CUdeviceptr p = 0;
    // 256-byte granularity keeps every tensor aligned for 16-byte vector access, and a
    // zero-size tensor still gets a valid pointer.
    check(m_driver->cuMemAlloc(&p, std::max<size_t>(256, (bytes + 255) / 256 * 256)), "cuMemAlloc");
    return reinterpret_cast<void*>(p);
}

void CudaBackend::release(void* p) noexcept
{
    if (p && m_ctx && !m_lost)
        m_driver->cuMemFree(reinterpret_cast<CUdeviceptr>(p));
}

void CudaBackend::upload(void* device, const void* host, size_t bytes)
{
    ensureContext();
    if (!bytes)
        return;
    check(m_driver->cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(device), host, bytes), "cuMemcpyHtoD");
    // From pageable memory cuMemcpyHtoD returns once the bytes are staged, before the DMA has
    // landed, and the candidate's stream does not wait for the legacy stream that carries it
    // (CU_STREAM_NON_BLOCKING). Without this wait a kernel could read stale inputs, or have the
    // output poison written over its results (seen on H100 as spurious partial_write and NaN).
    check(m_driver->cuCtxSynchronize(), "the synchronize after an upload");
}

void CudaBackend::download(void* host, const void* device, size_t bytes)
{
    synchronize();
    if (bytes)
        check(m_driver->cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(device), bytes), "cuMemcpyDtoH");
}

void* CudaBackend::stream()
{
    ensureContext();
    return m_stream;
}

void CudaBackend::synchronize()
{
    ensureContext();
    check(m_driver->cuCtxSynchronize(), "the device-wide synchronize after hone_run");
}

void* CudaBackend::workspace(size_t& bytes)
{
    ensureContext();
    if (!m_workspace)
        check(m_driver->cuMemAlloc(&m_workspace, m_workspaceBytes), "cuMemAlloc (workspace)");
    bytes = m_workspaceBytes;
    return reinterpret_cast<void*>(m_workspace);
}

namespace {
/// How long the pre-start delay holds the GPU: more than hone_run's host side takes for any
/// candidate that launches a few kernels (5-20 us), together with the L2 flush before it
/// (about 35 us on an H100).
constexpr unsigned long long kLaunchDelayNs = 50000;
} // namespace

void CudaBackend::ensureDelay()
{
    if (m_delayTried)
        return;
    m_delayTried = true;
    ensureContext();
    m_delay = std::make_unique<cuda::DelayKernel>(*m_driver, m_sms, m_maxThreadsPerSm);
    if (!m_delay->ok()) {
        m_delayError = m_delay->error();
        m_delay.reset();
    }
}

double CudaBackend::timedRun(LoadedKernel& kernel, const hone_args& args, int& rc)
{
    ensureContext();
    ensureDelay();
    Driver& d = *m_driver;
    // No host synchronize before the start: behind the cache flush already on the stream goes
    // the delay, then the start event, so hone_run's host side runs while the GPU is still busy
    // and the events measure the GPU's work alone, the way a caller that keeps the stream fed
    // sees it (PyTorch is timed the same way in torch_bench.py). The previous sample ended with
    // a device-wide synchronize, so nothing else is in flight.
    if (m_delay)
        check(m_delay->launch(m_stream, kLaunchDelayNs), "cuLaunchKernel (the pre-start delay)");
    else
        synchronize();
    check(d.cuEventRecord(m_start, m_stream), "cuEventRecord");
    rc = kernel.run(args);
    if (m_delay) {
        // The start event already passed: the GPU waited for the host, and that wait is counted.
        ++m_delayedRuns;
        if (d.cuEventQuery(m_start) == CUDA_SUCCESS)
            ++m_exposedLaunches;
    }
    check(d.cuEventRecord(m_stop, m_stream), "cuEventRecord");
    // Device-wide: work the candidate put on other streams must finish too.
    synchronize();
    check(d.cuEventRecord(m_after, m_stream), "cuEventRecord");
    check(d.cuEventSynchronize(m_after), "cuEventSynchronize");
    float streamMs = 0;
    float deviceMs = 0;
    float tailMs = 0;
    check(d.cuEventElapsedTime(&streamMs, m_start, m_stop), "cuEventElapsedTime");
    check(d.cuEventElapsedTime(&deviceMs, m_start, m_after), "cuEventElapsedTime");
    check(d.cuEventElapsedTime(&tailMs, m_stop, m_after), "cuEventElapsedTime");
    // The stretch from the stream's end to the post-synchronize event is normally just the
    // synchronize's own latency. When it is much longer, work on other streams was still
    // running: then the device-wide time is the honest one.
    const double overhead = syncOverheadNs();
    const double tailNs = tailMs * 1e6;
    m_lastDisturbed = tailNs > std::max(20000.0, 4 * overhead);
    return (m_lastDisturbed ? deviceMs : streamMs) * 1e6;
}

double CudaBackend::syncOverheadNs()
{
    if (m_syncOverheadNs)
        return *m_syncOverheadNs;
    ensureContext();
    Driver& d = *m_driver;
    std::vector<double> ns;
    for (int i = 0; i < 21; ++i) {
        check(d.cuCtxSynchronize(), "cuCtxSynchronize");
        check(d.cuEventRecord(m_stop, m_stream), "cuEventRecord");
        check(d.cuCtxSynchronize(), "cuCtxSynchronize");
        check(d.cuEventRecord(m_after, m_stream), "cuEventRecord");
        check(d.cuEventSynchronize(m_after), "cuEventSynchronize");
        float ms = 0;
        check(d.cuEventElapsedTime(&ms, m_stop, m_after), "cuEventElapsedTime");
        ns.push_back(ms * 1e6);
    }
    std::sort(ns.begin(), ns.end());
    m_syncOverheadNs = ns[ns.size() / 2];
    return *m_syncOverheadNs;
}

nlohmann::json CudaBackend::profile(const nlohmann::json& request)
{
    std::string ncu;
    if (const char* env = std::getenv("HONE_NCU"); env && *env)
        ncu = findExecutable(env);
    if (ncu.empty())
        ncu = findExecutable("ncu");
    if (ncu.empty() && ::access("/usr/local/cuda/bin/ncu", X_OK) == 0)
        ncu = "/usr/local/cuda/bin/ncu";
    if (ncu.empty())
        return { { "error", "Nsight Compute (ncu) not found; install it or set HONE_NCU" } };
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec)
        return { { "error", "cannot find this worker's executable to profile it" } };
    fs::create_directories(m_cacheDir / "tmp");
    std::string tmpl = (m_cacheDir / "tmp" / "ncu-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
        return { { "error", "cannot create a directory under " + (m_cacheDir / "tmp").string() } };
    const fs::path dir = tmpl;
    writeFileAtomically(dir / "request.json", request.dump());
    std::string metrics;
    for (const auto& m : ncuMetrics())
        metrics += (metrics.empty() ? "" : ",") + m;
    // The child is this worker in --profile-once mode: one call of the candidate, nothing else,
    // so every kernel ncu sees is the candidate's. Candidate code runs in it: ncu and the child
    // start inside the runners' sandbox (ncu cannot follow a target into one), with the cache
    // (where the candidate's object is) and the request read-only.
    const SandboxInfo& sandbox = sandboxInfo();
    if (!sandbox.enabled && !sandbox.optedOut) {
        fs::remove_all(dir, ec);
        return { { "error", "no sandbox for the profiled candidate: " + sandbox.reason } };
    }
    std::vector<std::string> argv;
    if (sandbox.enabled) {
        std::vector<std::pair<std::string, std::string>> env = { { "PATH", "/usr/bin:/bin" }, { "HOME", "/tmp" } };
        for (const char* var : { "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HONE_CUDA_DEVICE" })
            if (const char* v = std::getenv(var))
                env.emplace_back(var, v);
        argv = sandboxCommand(sandbox.bwrap, env, 512ull << 20);
        const fs::path exeDir = self.parent_path();
        argv.insert(argv.end(), { "--ro-bind", exeDir.string(), exeDir.string() });
        argv.insert(argv.end(), { "--ro-bind-try", (exeDir.parent_path() / "lib").string(), (exeDir.parent_path() / "lib").string() });
        // ncu outside /usr (its own install prefix) is seen read-only, with its sections; the
        // toolkit's ncu is a script that looks for Nsight Compute beside the toolkit or in
        // /opt/nvidia, where NVIDIA's packages put it.
        const fs::path ncuReal = fs::canonical(ncu, ec);
        if (!ec && ncuReal.string().rfind("/usr/", 0) != 0)
            argv.insert(argv.end(), { "--ro-bind", ncuReal.parent_path().string(), ncuReal.parent_path().string() });
        argv.insert(argv.end(), { "--ro-bind-try", "/opt/nvidia", "/opt/nvidia" });
        argv.insert(argv.end(), { "--ro-bind", m_cacheDir.string(), m_cacheDir.string() });
        appendGpuAccess(argv);
    }
    argv.insert(argv.end(), { ncu, "--csv", "--page", "raw", "--metrics", metrics, "--target-processes", "all",
                                self.string(), "--profile-once", (dir / "request.json").string(), "--cache-dir",
                                m_cacheDir.string() });
    const ProcessResult r = runProcess(argv, dir.string(), 600, size_t(8) << 20);
    fs::remove_all(dir, ec);
    if (!r.started)
        return { { "error", "cannot run ncu: " + r.error } };
    if (r.timedOut)
        return { { "error", "ncu took longer than 600 s" } };
    try {
        nlohmann::json p = parseNcuCsv(r.output);
        p["seconds"] = r.seconds;
        return p;
    } catch (const std::exception& e) {
        // The profiled process's own words (a failed load, a refused device) end its output.
        std::string tail = r.output.size() > 1500 ? r.output.substr(r.output.size() - 1500) : r.output;
        return { { "error", std::string(e.what()) + " (exit " + std::to_string(r.exitCode) + ")" },
            { "output", core::validUtf8(tail) } };
    }
}

nlohmann::json CudaBackend::timingInfo()
{
    ensureDelay();
    const std::string method = m_delay
        ? "GPU time: the L2 flush and a " + std::to_string(kLaunchDelayNs / 1000)
            + " us delay kernel (all SMs spin on %globaltimer) are queued before the start event with no "
              "host synchronize in between, so hone_run's host launch overlaps them and is not counted; "
              "stop event, then a device-wide synchronize"
        : "host-inclusive: synchronize, start event, hone_run, stop event, device-wide synchronize (the "
          "delay kernel could not be loaded: "
            + m_delayError + ")";
    nlohmann::json info = { { "method", method },
        { "clock", "CUDA events on the harness stream, closed by a device-wide synchronize" },
        { "sync_overhead_ns", syncOverheadNs() }, { "l2_flush_bytes", m_flushBytes },
        { "launch_delay_ns", m_delay ? kLaunchDelayNs : 0ULL }, { "delayed_runs", m_delayedRuns },
        { "exposed_launches", m_exposedLaunches } };
    m_delayedRuns = 0;
    m_exposedLaunches = 0;
    return info;
}

void CudaBackend::flushCaches(const std::vector<MemRegion>& workingSet)
{
    (void)workingSet; // the whole L2 is rewritten, whatever the kernel touched
    ensureContext();
    Driver& d = *m_driver;
    if (!m_flush) {
        m_flushBytes = std::max<size_t>(size_t(2) * static_cast<size_t>(m_l2Bytes), size_t(64) << 20);
        check(d.cuMemAlloc(&m_flush, m_flushBytes), "cuMemAlloc (L2 flush buffer)");
    }
    // A different value each round, so no write can be elided.
    check(d.cuMemsetD32Async(m_flush, ++m_flushRound, m_flushBytes / 4, m_stream), "cuMemsetD32Async (L2 flush)");
}

std::unique_ptr<TimingLock> CudaBackend::lockDevice(bool exclusive, const std::function<void()>& onWait)
{
    return lockFile(
        machineLockPath("cuda-" + (m_uuid.empty() ? std::string("none") : m_uuid) + ".lock", m_cacheDir), exclusive,
        {}, onWait);
}

std::unique_ptr<TimingLock> CudaBackend::lockForTiming()
{
    return lockDevice(true);
}

std::unique_ptr<TimingLock> CudaBackend::lockForUse(const std::function<void()>& onWait)
{
    return lockDevice(false, onWait);
}

nlohmann::json CudaBackend::launchProfile(LoadedKernel& kernel, const hone_args& args)
{
    ensureContext();
    Driver& d = *m_driver;
    synchronize();
    // Capture one call into a graph instead of running it: the graph's kernel nodes carry
    // the exact function, grid, block and dynamic shared memory of every launch.
    nlohmann::json out = { { "kernels", nlohmann::json::array() } };
    check(d.cuStreamBeginCapture(m_stream, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
    int rc = 0;
    try {
        rc = kernel.run(args);
    } catch (...) {
        CUgraph g = nullptr;
        d.cuStreamEndCapture(m_stream, &g);
        if (g)
            d.cuGraphDestroy(g);
        throw;
    }
    CUgraph graph = nullptr;
    const CUresult end = d.cuStreamEndCapture(m_stream, &graph);
    if (end != CUDA_SUCCESS || rc != 0 || !graph) {
        if (graph)
            d.cuGraphDestroy(graph);
        // The candidate's runtime may hold the capture error as its last error: one plain
        // call consumes it, so the runs that follow start clean.
        kernel.run(args);
        synchronize();
        out["error"] = "hone_run could not be captured into a graph (" + m_driver->describe(end)
            + (rc != 0 ? ", hone_run returned " + std::to_string(rc) : std::string())
            + "); it probably synchronizes or allocates inside hone_run";
        return out;
    }
    size_t count = 0;
    d.cuGraphGetNodes(graph, nullptr, &count);
    std::vector<CUgraphNode> nodes(count);
    if (count)
        d.cuGraphGetNodes(graph, nodes.data(), &count);
    const int maxWarps = std::max(1, m_maxThreadsPerSm / 32);
    for (CUgraphNode node : nodes) {
        CUgraphNodeType type {};
        if (d.cuGraphNodeGetType(node, &type) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_KERNEL)
            continue;
        CUDA_KERNEL_NODE_PARAMS p {};
        if (d.cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS)
            continue;
        CUfunction f = p.func;
        if (!f && p.kern && d.cuKernelGetFunction)
            d.cuKernelGetFunction(&f, p.kern);
        if (!f)
            continue;
        auto fattr = [&](CUfunction_attribute a) {
            int v = 0;
            d.cuFuncGetAttribute(&v, a, f);
            return v;
        };
        const char* rawName = nullptr;
        d.cuFuncGetName(&rawName, f);
        const int block = static_cast<int>(p.blockDimX * p.blockDimY * p.blockDimZ);
        const long long grid = static_cast<long long>(p.gridDimX) * p.gridDimY * p.gridDimZ;
        const int regs = fattr(CU_FUNC_ATTRIBUTE_NUM_REGS);
        const int smemStatic = fattr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
        const int local = fattr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
        int blocksPerSm = 0;
        d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocksPerSm, f, block, p.sharedMemBytes);
        const int warpsPerBlock = (block + 31) / 32;
        const double occupancy = std::min(1.0, static_cast<double>(blocksPerSm * warpsPerBlock) / maxWarps);
        // Which resource stops the next block: the smallest of the per-resource limits.
        struct Limit {
            const char* name;
            long long blocks;
        };
        const long long regsPerWarp = (static_cast<long long>(regs) * 32 + 255) / 256 * 256;
        const long long smemPerBlock = static_cast<long long>(smemStatic) + p.sharedMemBytes + 1024;
        std::vector<Limit> limits = {
            { "block size (threads per SM)", m_maxThreadsPerSm / std::max(1, warpsPerBlock * 32) },
            { "blocks per SM", m_maxBlocksPerSm },
            { "registers", regsPerWarp > 0 ? m_regsPerSm / (regsPerWarp * warpsPerBlock) : 1LL << 30 },
            { "shared memory", smemPerBlock > 1024 ? m_smemPerSm / smemPerBlock : 1LL << 30 },
        };
        const auto lim = std::min_element(limits.begin(), limits.end(),
            [](const Limit& a, const Limit& b) { return a.blocks < b.blocks; });
        const double waves = blocksPerSm > 0 && m_sms > 0
            ? static_cast<double>(grid) / (static_cast<double>(blocksPerSm) * m_sms)
            : 0.0;
        out["kernels"].push_back({ { "name", demangle(rawName ? rawName : "?") },
            { "grid", { p.gridDimX, p.gridDimY, p.gridDimZ } }, { "block", { p.blockDimX, p.blockDimY, p.blockDimZ } },
            { "dynamic_smem", p.sharedMemBytes }, { "static_smem", smemStatic }, { "registers", regs },
            { "local_bytes", local }, { "blocks_per_sm", blocksPerSm }, { "occupancy", occupancy },
            { "limiter", occupancy >= 0.999 ? "none" : lim->name }, { "waves", waves },
            { "threads", grid * block } });
    }
    d.cuGraphDestroy(graph);
    // The headline: the launch with the most threads, which usually carries the work.
    const auto& ks = out["kernels"];
    if (!ks.empty()) {
        size_t best = 0;
        for (size_t i = 1; i < ks.size(); ++i)
            if (ks[i]["threads"].get<long long>() > ks[best]["threads"].get<long long>())
                best = i;
        out["theoretical"] = ks[best]["occupancy"];
        out["limiter"] = ks[best]["limiter"];
        out["main_kernel"] = ks[best]["name"];
    }
    return out;
}

void* CudaBackend::loadOwnObject(
    const char* name, std::string_view source, std::vector<std::string> libraries, const std::string& what)
{
    CompileJob job;
    job.name = name;
    job.source = std::string(source);
    job.libraries = std::move(libraries);
    job.timeLimitSeconds = 300;
    const CompileOutput built = compile(job);
    if (!built.ok)
        throw std::runtime_error("cannot compile " + what + ": " + built.firstError());
    ensureContext();
    // Loaded from a copy hashed as it was made: the bytes that run are the bytes checked.
    std::string error;
    void* handle = openVerified(built.objectPath, built.objectSha256, error);
    if (!handle)
        throw std::runtime_error("cannot load " + what + ": " + error);
    return handle;
}

core::Ceilings CudaBackend::ceilings(bool force, bool* cached)
{
    if (cached)
        *cached = false;
    if (!available())
        throw std::runtime_error("no CUDA ceilings: " + unavailableReason());
    // The calibration source is part of the key: a better method measures again.
    const std::string key = core::sha256Hex(std::string(embedded::kCudaCeilingsSource) + "\n" + m_name + "\n"
        + m_uuid + "\n" + std::to_string(m_driverVersion) + "\n" + compilerVersion());
    return cachedCeilings(m_cacheDir / ("ceilings-cuda-" + key + ".json"), force, cached, m_ceilings, [this] {
        auto lock = lockForTiming();
        void* handle = loadOwnObject("cuda_ceilings.cu", embedded::kCudaCeilingsSource, { "cublasLt" },
            "the CUDA calibration kernels");
        using Fn = int (*)(void*, double*);
        auto fn = reinterpret_cast<Fn>(::dlsym(handle, "hone_cuda_ceilings"));
        if (!fn)
            throw std::runtime_error("the CUDA calibration object has no hone_cuda_ceilings");
        double v[6] = { 0, 0, 0, 0, 0, 0 };
        const int rc = fn(m_stream, v);
        synchronize();
        if (rc != 0)
            throw std::runtime_error("the CUDA calibration kernels failed with status " + std::to_string(rc));
        core::Ceilings c;
        c.device = deviceName();
        c.peakGbps = v[0];
        c.peakGflops = v[1];
        c.peakTensorGflops = v[2];
        auto gbps = [](double x) { return std::to_string(static_cast<long long>(x + 0.5)); };
        c.method = "copy: 1 GiB device-to-device, bytes read + written, median of 15 each, the best of a "
                   "float4 grid-stride kernel ("
            + gbps(v[3]) + " GB/s), a float4 tiled kernel with 4 loads in flight per thread (" + gbps(v[4])
            + " GB/s) and cuMemcpy (" + gbps(v[5]) + " GB/s); fma: f32 FMA, 8 chains per thread, "
            + std::to_string(m_sms * 16) + " blocks of 256, median of 9; tensor: cuBLASLt bf16 8192^3 GEMM, "
            + "fp32 accumulate, median of 9; built with " + compilerVersion();
        return c;
    },
        &m_cacheWarnings);
}

} // namespace hone::backends
