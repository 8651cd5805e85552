#include "hip_backend.h"

#include "core/knobs.h"
#include "core/sha256.h"
#include "file_lock.h"
#include "hip_code_object.h"
#include "hone_embedded.h"
#include "process.h"
#include "sandbox.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <new>
#include <sstream>

namespace hone::backends {
namespace fs = std::filesystem;

namespace {

using RunFn = int (*)(const hone_args*);

class HipKernel final : public LoadedKernel {
public:
    explicit HipKernel(RunFn fn)
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

/// A file name hipcc treats as HIP and that cannot escape the build directory.
std::string hipFileName(const std::string& name)
{
    std::string base = fs::path(name).filename().string();
    for (char& c : base)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
            c = '_';
    if (base.empty() || base[0] == '.' || base[0] == '-')
        base = "candidate" + base;
    if (fs::path(base).extension() != ".hip")
        base += ".hip";
    return base;
}

std::string findHipcc()
{
    std::string p;
    if (hip::nvidiaPlatform()) {
        // HIP on NVIDIA compiles with nvcc (hip_backend_nvidia.cpp).
        if (const char* env = std::getenv("HONE_NVCC"); env && *env)
            p = findExecutable(env);
        else if (p = findExecutable("nvcc"); p.empty() && ::access("/usr/local/cuda/bin/nvcc", X_OK) == 0)
            p = "/usr/local/cuda/bin/nvcc";
        return p;
    }
    if (const char* env = std::getenv("HONE_HIPCC"); env && *env)
        p = findExecutable(env);
    else if (::access("/opt/rocm/bin/hipcc", X_OK) == 0)
        p = "/opt/rocm/bin/hipcc";
    else
        p = findExecutable("hipcc");
    // /opt/rocm is usually a symlink to /opt/rocm-X.Y.Z: the sandbox binds the real folder.
    std::error_code ec;
    const fs::path real = p.empty() ? fs::path() : fs::canonical(p, ec);
    return ec || real.empty() ? p : real.string();
}

const std::vector<std::string>& hipccBaseFlags()
{
    static const std::vector<std::string> flags = { "-std=c++17", "-O3", "-shared", "-fPIC" };
    return flags;
}

/// Runs an LLVM tool on files in `dir` (inside bubblewrap where compiles are sandboxed: the code
/// object came out of a candidate's compile, and LLVM's parsers are not hardened against it).
ProcessResult runTool(const std::vector<std::string>& argv, const fs::path& dir)
{
    const SandboxInfo& sandbox = sandboxInfo();
    if (!sandbox.enabled)
        return runProcess(argv, dir.string(), 60, size_t(8) << 20);
    std::vector<std::string> a = sandboxCommand(sandbox.bwrap, { { "PATH", "/usr/bin:/bin" }, { "TMPDIR", "/tmp" } }, 64ull << 20);
    const std::string tool = argv.front();
    if (tool.rfind("/usr/", 0) != 0)
        a.insert(a.end(), { "--ro-bind", fs::path(tool).parent_path().parent_path().string(),
                              fs::path(tool).parent_path().parent_path().string() });
    a.insert(a.end(), { "--ro-bind", dir.string(), dir.string(), "--chdir", dir.string() });
    a.insert(a.end(), argv.begin(), argv.end());
    return runProcess(a, dir.string(), 60, size_t(8) << 20);
}

/// llvm-objdump's listing without the padding after each kernel's s_endpgm.
std::string tidyIsa(const std::string& text)
{
    std::istringstream in(text);
    std::string line;
    std::string out;
    bool afterEnd = false;
    while (std::getline(in, line)) {
        if (line.find("s_endpgm") != std::string::npos)
            afterEnd = true;
        else if (!line.empty() && line[0] != '\t' && line[0] != ' ')
            afterEnd = false; // a label or section header
        if (afterEnd && line.find("s_nop 0") != std::string::npos)
            continue;
        out += line + "\n";
        if (out.size() > (size_t(256) << 10)) {
            out += "... (cut at 256 KiB)\n";
            break;
        }
    }
    return out;
}

} // namespace

HipBackend::HipBackend(fs::path cacheDir)
    : m_rt(std::make_unique<hip::Runtime>())
    , m_cacheDir(std::move(cacheDir))
    , m_hipcc(findHipcc())
    , m_nvidia(hip::nvidiaPlatform())
{
    if (m_nvidia)
        m_arch = "sm_90"; // until the GPU says
    if (const char* a = std::getenv("HONE_HIP_ARCH"); a && *a)
        m_arch = a;
    m_defaultArch = m_arch;
    hip::Runtime& rt = *m_rt;
    if (!rt.available())
        return;
    int ordinal = 0;
    if (const char* o = std::getenv("HONE_HIP_DEVICE"); o && *o)
        ordinal = std::atoi(o);
    hipDeviceProp_t prop {};
    if (rt.hipGetDeviceProperties(&prop, ordinal) != hipSuccess || rt.hipSetDevice(ordinal) != hipSuccess)
        return;
    m_name = prop.name;
    const std::string gcn = prop.gcnArchName; // "gfx90a:sramecc+:xnack-"
    m_deviceArch = m_nvidia ? "sm_" + std::to_string(prop.major) + std::to_string(prop.minor) : gcn.substr(0, gcn.find(':'));
    if (prop.warpSize > 0) {
        m_waveSize = prop.warpSize;
        if (prop.maxThreadsPerMultiProcessor > 0)
            m_maxWavesPerCu = prop.maxThreadsPerMultiProcessor / prop.warpSize;
    }
    m_arch = m_deviceArch;
    m_defaultArch = m_arch;
    m_cus = prop.multiProcessorCount;
    m_l2Bytes = prop.l2CacheSize;
    m_memoryBytes = prop.totalGlobalMem;
    // hipDeviceProp_t has no UUID before ROCm 6: the PCI address names the GPU for locks and ceilings.
    m_uuid = "pci-" + std::to_string(prop.pciDomainID) + "-" + std::to_string(prop.pciBusID) + "-"
        + std::to_string(prop.pciDeviceID);
}

HipBackend::~HipBackend()
{
    if (!m_stream || m_lost)
        return;
    hip::Runtime& rt = *m_rt;
    for (void* p : { m_flush, m_workspace })
        if (p)
            (void)rt.hipFree(p);
    for (hipEvent_t e : { m_start, m_stop, m_after })
        if (e)
            (void)rt.hipEventDestroy(e);
    (void)rt.hipStreamDestroy(m_stream);
}

bool HipBackend::available() const
{
    return m_rt->available() && !m_deviceArch.empty();
}

std::string HipBackend::unavailableReason() const
{
    if (!m_rt->available())
        return m_rt->unavailableReason();
    if (m_deviceArch.empty() && m_nvidia)
        return "HIP on NVIDIA: cannot open the selected GPU (check HONE_HIP_DEVICE and CUDA_VISIBLE_DEVICES)";
    if (m_deviceArch.empty())
        return "the ROCm runtime cannot open the selected GPU (check HONE_HIP_DEVICE and HIP_VISIBLE_DEVICES)";
    return {};
}

std::string HipBackend::selectArch(const std::string& arch)
{
    if (arch.empty()) {
        m_arch = m_defaultArch; // a persistent worker: the last request's choice does not stick
        return {};
    }
    if (m_nvidia)
        return "hip_arch '" + arch + "' does not apply: this worker runs HIP on the NVIDIA platform (" + m_arch
            + ", HONE_HIP_PLATFORM=nvidia)";
    if (!hip::archLimits(arch))
        return "hip_arch '" + arch + "' is not an architecture Hone knows; expected gfx90a, gfx940, gfx941 or gfx942";
    if (!m_deviceArch.empty() && arch != m_deviceArch)
        return "hip_arch '" + arch + "' is not the architecture of this host's GPU (" + m_name + ", " + m_deviceArch + ")";
    m_arch = arch;
    return {};
}

std::string HipBackend::rocmVersion()
{
    if (m_nvidia)
        return {}; // no ROCm: HIP's headers over CUDA
    if (const int v = m_rt->runtimeVersion(); v > 0)
        return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100) + "." + std::to_string(v % 100000);
    const std::string c = compilerVersion(); // "HIP version: 5.2.21153-0"
    const size_t at = c.find("HIP version: ");
    return at == std::string::npos ? std::string() : c.substr(at + 13, c.find_first_of(" ,-", at + 13) - at - 13);
}

std::string HipBackend::deviceName() const
{
    if (!available())
        return "hip: none (" + unavailableReason() + ")";
    if (m_nvidia)
        return "hip: " + m_name + " (" + m_deviceArch + ", " + std::to_string(m_cus) + " SMs; HIP on the NVIDIA platform)";
    return "hip: " + m_name + " (" + m_deviceArch + ", " + std::to_string(m_cus) + " CUs)";
}

nlohmann::json HipBackend::devices() const
{
    if (!available())
        return nlohmann::json::array();
    return nlohmann::json::array({ { { "kind", "hip" }, { "name", m_name }, { "arch", m_deviceArch },
        { "uuid", m_uuid }, { "cus", m_cus }, { "l2_bytes", m_l2Bytes }, { "memory_bytes", m_memoryBytes },
        { "runtime", m_rt->runtimeVersion() }, { "platform", platform() }, { "wave_size", m_waveSize } } });
}

std::string HipBackend::compilerVersion()
{
    if (!m_hipccVersionRead) {
        m_hipccVersionRead = true;
        // hipcc --version takes about a second (Debian's probes for GPUs on the way): the answer
        // is kept per hipcc binary (path, size, mtime) under the cache.
        std::error_code ec;
        const auto size = m_hipcc.empty() ? 0 : fs::file_size(m_hipcc, ec);
        const auto mtime = m_hipcc.empty() ? fs::file_time_type() : fs::last_write_time(m_hipcc, ec);
        const fs::path memo = m_cacheDir / ("hipcc-version-"
            + core::sha256Hex(m_hipcc + "\n" + std::to_string(size) + "\n"
                + std::to_string(mtime.time_since_epoch().count())).substr(0, 16) + ".txt");
        bool memoOk = false;
        if (!m_hipcc.empty())
            m_hipccVersion = trimRight(readFile(memo, &memoOk));
        if (memoOk && !m_hipccVersion.empty())
            return m_hipccVersion;
        m_hipccVersion.clear();
        if (!m_hipcc.empty()) {
            const ProcessResult r = runProcess({ m_hipcc, "--version" }, {}, 60);
            // "HIP version: 5.2.21153-0" and the clang line: both decide the code.
            std::istringstream in(r.output);
            std::string line;
            while (std::getline(in, line))
                if (line.find("HIP version") != std::string::npos || line.find("clang version") != std::string::npos
                    || (m_nvidia && line.find("release") != std::string::npos)) // nvcc: "Cuda compilation tools, release 13.0"
                    m_hipccVersion += (m_hipccVersion.empty() ? "" : ", ") + trimRight(line);
            if (!m_hipccVersion.empty()) {
                try {
                    writeFileAtomically(memo, m_hipccVersion + "\n");
                } catch (const std::exception&) {
                    // a read-only cache only costs the next worker a second
                }
            }
        }
    }
    return m_hipccVersion;
}

std::string HipBackend::flagsFor(const CompileJob& job) const
{
    std::vector<std::string> f = hipccBaseFlags();
    if (m_nvidia)
        f = nvidiaFlags();
    else
        f.push_back("--offload-arch=" + m_arch);
    for (const auto& [name, value] : job.defines)
        f.push_back("-D" + name + "=" + value);
    for (const auto& x : splitFlags(job.flags))
        f.push_back(x);
    return join(f);
}

std::string HipBackend::refusedFlags(const std::string& flags) const
{
    if (m_nvidia)
        return core::checkFlags(flags, "cuda"); // nvcc reads them: CUDA's allow-list
    // -mllvm passes its next word to LLVM unchecked; the target is Hone's to choose.
    for (const auto& f : splitFlags(flags))
        if (f == "-mllvm" || f.rfind("-mcpu", 0) == 0 || f.rfind("-march", 0) == 0)
            return "compile flag '" + f + "' is not allowed for HIP; the gfx target comes from the device or hip_arch";
    return core::checkFlags(flags, "hip");
}

CompileOutput HipBackend::compile(const CompileJob& job)
{
    CompileOutput out;
    if (m_hipcc.empty() && m_nvidia) {
        out.toolError = "HIP on NVIDIA: cannot find nvcc (set HONE_NVCC, put nvcc on PATH or install the CUDA toolkit)";
        return out;
    }
    if (m_hipcc.empty()) {
        out.toolError = "cannot find hipcc (set HONE_HIPCC, put hipcc on PATH or install ROCm in /opt/rocm, or "
                        "Debian's hipcc package)";
        return out;
    }
    const std::string version = compilerVersion();
    if (version.empty()) {
        out.toolError = "cannot run " + std::string(m_nvidia ? "nvcc" : "hipcc") + " at " + m_hipcc;
        return out;
    }
    if (m_nvidia)
        return compileNvidia(job, version);
    const fs::path includeDir = installKernelHeader(m_cacheDir);
    // hipcc where it can build the architecture, else the clang route (hip_toolchain.h).
    const hip::Toolchain& tc = toolchains().forArch(m_arch);
    if (!tc.error.empty()) {
        out.toolError = tc.error;
        return out;
    }
    std::vector<std::string> middle = hipccBaseFlags();
    std::vector<std::string> keyMiddle = middle;
    middle.insert(middle.end(), tc.flags.begin(), tc.flags.end());
    keyMiddle.insert(keyMiddle.end(), tc.keyFlags.begin(), tc.keyFlags.end());
    appendJobFlags(job, includeDir.string(), middle, keyMiddle);
    CachedCompile c;
    c.cacheDir = m_cacheDir;
    c.subdir = "hip-so";
    c.key = core::sha256Hex("hone-hip-compile-2\n" + version + "\n" + tc.identity + "\n" + tc.compiler + "\n"
        + join(keyMiddle) + "\n" + join(tc.tail) + "\n" + core::sha256Hex(embedded::kKernelHeader) + "\n" + job.source);
    c.compiler = tc.compiler;
    c.middle = middle;
    c.tail = tc.tail;
    c.sourceName = hipFileName(job.name);
    c.source = job.source;
    c.timeLimitSeconds = job.timeLimitSeconds;
    c.parseLog = [](CompileOutput& o) { o.messages = parseDiagnostics(o.log); };
    out = runCachedCompile(c);
    if (out.ok)
        analyze(out, m_arch, tc.llvmBinDir);
    return out;
}

hip::ToolchainSelector& HipBackend::toolchains()
{
    if (!m_toolchains)
        m_toolchains = std::make_unique<hip::ToolchainSelector>(m_cacheDir, m_hipcc, compilerVersion());
    return *m_toolchains;
}

std::string HipBackend::clangVersion()
{
    return m_hipcc.empty() || m_nvidia ? std::string() : toolchains().clangVersion();
}

void HipBackend::analyze(CompileOutput& out, const std::string& arch, const std::string& llvmBinDir)
{
    fs::path dir;
    try {
        bool ok = false;
        const std::string so = readFile(out.objectPath, &ok);
        if (!ok)
            throw hip::CodeObjectError("cannot read " + out.objectPath);
        const std::string code = hip::extractCodeObject(so, arch);
        const std::string readelf = hip::findLlvmTool("llvm-readelf", llvmBinDir);
        if (readelf.empty())
            throw hip::CodeObjectError("llvm-readelf not found (apt install llvm-15, or set HONE_LLVM_READELF)");
        fs::create_directories(m_cacheDir / "tmp");
        std::string tmpl = (m_cacheDir / "tmp" / "hip-analysis-XXXXXX").string();
        if (!::mkdtemp(tmpl.data()))
            throw hip::CodeObjectError("cannot create a directory under " + (m_cacheDir / "tmp").string());
        dir = tmpl;
        writeFileAtomically(dir / "code.o", code);
        const ProcessResult notes = runTool({ readelf, "--notes", "code.o" }, dir);
        if (!notes.started || notes.exitCode != 0)
            throw hip::CodeObjectError("llvm-readelf --notes failed on the code object: " + trimRight(notes.error + notes.output));
        std::string target; // "amdgcn-amd-amdhsa--gfx942", features after a ':'
        std::vector<hip::KernelResources> kernels = hip::parseMetadataNotes(notes.output, &target);
        if (const size_t at = target.find("--");
            !target.empty() && (at == std::string::npos || target.substr(at + 2, target.find(':', at) - at - 2) != arch))
            throw hip::CodeObjectError("the code object's amdhsa.target is '" + target + "', not " + arch);
        hip::readKernelDescriptors(code, kernels);
        nlohmann::json resources = nlohmann::json::array();
        for (const auto& k : kernels) {
            resources.push_back(hip::toJson(k, arch, hip::assumedBlockThreads(k)));
            resources.back()["target"] = target;
        }
        out.resources = resources;
        if (const std::string objdump = hip::findLlvmTool("llvm-objdump", llvmBinDir); !objdump.empty()) {
            const ProcessResult isa = runTool({ objdump, "-d", "--no-show-raw-insn", "code.o" }, dir);
            if (isa.started && isa.exitCode == 0)
                out.isa = tidyIsa(isa.output);
        }
    } catch (const std::exception& e) {
        out.resources = { { "error", std::string("code-object analysis failed: ") + e.what() } };
    }
    std::error_code ec;
    if (!dir.empty())
        fs::remove_all(dir, ec);
}

std::unique_ptr<LoadedKernel> HipBackend::load(const CompileOutput& object, std::string& error, bool& missingEntry)
{
    missingEntry = false;
    ensureStream();
    void* handle = ::dlopen(object.objectPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* err = ::dlerror();
        error = std::string("cannot load the compiled object: ") + (err ? err : "unknown dlopen error");
        return nullptr;
    }
    void* sym = ::dlsym(handle, "hone_run");
    if (!sym) {
        missingEntry = true;
        error = "the compiled object exports no 'hone_run'; define extern \"C\" int hone_run(const hone_args*) "
                "(include <hone/kernel.h>)";
        return nullptr;
    }
    return std::make_unique<HipKernel>(reinterpret_cast<RunFn>(sym));
}

void HipBackend::ensureStream()
{
    if (m_stream)
        return;
    if (!available())
        throw std::runtime_error("cannot run HIP candidates here: " + unavailableReason());
    hip::Runtime& rt = *m_rt;
    check(rt.hipStreamCreateWithFlags(&m_stream, hipStreamNonBlocking), "hipStreamCreateWithFlags");
    for (hipEvent_t* e : { &m_start, &m_stop, &m_after })
        check(rt.hipEventCreate(e), "hipEventCreate");
}

void HipBackend::check(hipError_t code, const char* what)
{
    if (code == hipSuccess)
        return;
    if (hip::isSticky(code)) {
        m_lost = true;
        throw DeviceFault(std::string("GPU fault: ") + m_rt->describe(code) + " (seen by " + what
            + "); the device state is lost and the worker restarts");
    }
    if (code == hipErrorOutOfMemory)
        throw std::bad_alloc();
    throw std::runtime_error(std::string(what) + " failed: " + m_rt->describe(code));
}

void* HipBackend::allocate(size_t bytes)
{
    ensureStream();
    void* p = nullptr;
    check(m_rt->hipMalloc(&p, std::max<size_t>(256, (bytes + 255) / 256 * 256)), "hipMalloc");
    return p;
}

void HipBackend::release(void* p) noexcept
{
    if (p && m_stream && !m_lost)
        (void)m_rt->hipFree(p);
}

void HipBackend::upload(void* device, const void* host, size_t bytes)
{
    ensureStream();
    if (!bytes)
        return;
    check(m_rt->hipMemcpy(device, host, bytes, hipMemcpyHostToDevice), "hipMemcpy (upload)");
    // The harness stream is non-blocking: the copy must have landed before a kernel reads it.
    check(m_rt->hipDeviceSynchronize(), "the synchronize after an upload");
}

void HipBackend::download(void* host, const void* device, size_t bytes)
{
    synchronize();
    if (bytes)
        check(m_rt->hipMemcpy(host, device, bytes, hipMemcpyDeviceToHost), "hipMemcpy (download)");
}

void* HipBackend::stream()
{
    ensureStream();
    return m_stream;
}

void HipBackend::synchronize()
{
    ensureStream();
    check(m_rt->hipDeviceSynchronize(), "the device-wide synchronize after hone_run");
}

void* HipBackend::workspace(size_t& bytes)
{
    ensureStream();
    if (!m_workspace)
        check(m_rt->hipMalloc(&m_workspace, m_workspaceBytes), "hipMalloc (workspace)");
    bytes = m_workspaceBytes;
    return m_workspace;
}

double HipBackend::timedRun(LoadedKernel& kernel, const hone_args& args, int& rc)
{
    ensureStream();
    hip::Runtime& rt = *m_rt;
    // Host-inclusive for now: no delay kernel yet (CUDA's is PTX), so the cache flush queued
    // before is waited for and hone_run's launch overhead is inside the events.
    synchronize();
    check(rt.hipEventRecord(m_start, m_stream), "hipEventRecord");
    rc = kernel.run(args);
    check(rt.hipEventRecord(m_stop, m_stream), "hipEventRecord");
    synchronize(); // work on other streams must finish too
    check(rt.hipEventRecord(m_after, m_stream), "hipEventRecord");
    check(rt.hipEventSynchronize(m_after), "hipEventSynchronize");
    float streamMs = 0;
    float deviceMs = 0;
    check(rt.hipEventElapsedTime(&streamMs, m_start, m_stop), "hipEventElapsedTime");
    check(rt.hipEventElapsedTime(&deviceMs, m_start, m_after), "hipEventElapsedTime");
    m_lastDisturbed = (deviceMs - streamMs) * 1e6 > 50000.0;
    return (m_lastDisturbed ? deviceMs : streamMs) * 1e6;
}

nlohmann::json HipBackend::timingInfo()
{
    return { { "method",
                 std::string(m_nvidia ? "HIP on the NVIDIA platform; " : "") + "host-inclusive: synchronize, start event, hone_run, stop event, device-wide synchronize (HIP "
                 "has no pre-start delay kernel yet)" },
        { "clock", "HIP events on the harness stream, closed by a device-wide synchronize" },
        { "l2_flush_bytes", m_flushBytes } };
}

void HipBackend::flushCaches(const std::vector<MemRegion>& workingSet)
{
    (void)workingSet;
    ensureStream();
    if (!m_flush) {
        // MI300 (gfx94x) has a 256 MiB Infinity Cache behind its L2s: rewrite 512 MiB there.
        const size_t floor = m_deviceArch.rfind("gfx94", 0) == 0 ? size_t(512) << 20 : size_t(64) << 20;
        m_flushBytes = std::max<size_t>(size_t(2) * static_cast<size_t>(m_l2Bytes), floor);
        check(m_rt->hipMalloc(&m_flush, m_flushBytes), "hipMalloc (cache flush buffer)");
    }
    check(m_rt->hipMemsetD32Async(reinterpret_cast<hipDeviceptr_t>(m_flush), static_cast<int>(++m_flushRound),
              m_flushBytes / 4, m_stream),
        "hipMemsetD32Async (cache flush)");
}

std::unique_ptr<TimingLock> HipBackend::lockForTiming()
{
    return lockFile(machineLockPath("hip-" + (m_uuid.empty() ? std::string("none") : m_uuid) + ".lock", m_cacheDir), true);
}

std::unique_ptr<TimingLock> HipBackend::lockForUse(const std::function<void()>& onWait)
{
    return lockFile(machineLockPath("hip-" + (m_uuid.empty() ? std::string("none") : m_uuid) + ".lock", m_cacheDir),
        false, {}, onWait);
}

} // namespace hone::backends
