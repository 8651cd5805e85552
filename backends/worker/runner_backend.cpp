#include "runner_backend.h"

#include "cache_integrity.h"

#include "runner_clock.h"
#include "runner_wire.h"

#include "core/protocol.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <stdexcept>

namespace hone::backends {

using runner::Op;
using runner::Reply;
using runner::Request;
using runner::Status;
using Clock = std::chrono::steady_clock;

namespace {

/// CPU time in ns the kernel has charged to the main thread of `pid`: schedstat where the
/// kernel keeps it (ns), else utime + stime in clock ticks. -1 when neither can be read.
double mainThreadCpuNs(pid_t pid)
{
    if (pid <= 0)
        return -1;
    const std::string base = "/proc/" + std::to_string(pid);
    if (FILE* f = std::fopen((base + "/schedstat").c_str(), "r")) {
        unsigned long long run = 0;
        const int n = std::fscanf(f, "%llu", &run);
        std::fclose(f);
        if (n == 1)
            return static_cast<double>(run);
    }
    if (FILE* f = std::fopen((base + "/stat").c_str(), "r")) {
        char buf[1024];
        const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
        std::fclose(f);
        buf[n] = 0;
        const char* p = std::strrchr(buf, ')'); // the command name may hold spaces
        unsigned long long utime = 0, stime = 0;
        if (p && std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) == 2)
            return static_cast<double>(utime + stime) * 1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK));
    }
    return -1;
}

/// The runner's pid as this process sees it: `spawned` itself, or inside a sandbox the
/// shallowest descendant named hone-worker (bubblewrap puts one or two processes between).
pid_t findRunner(pid_t spawned, bool sandboxed)
{
    if (!sandboxed)
        return spawned;
    std::vector<pid_t> level { spawned };
    for (int depth = 0; depth < 4 && !level.empty(); ++depth) {
        std::vector<pid_t> next;
        for (pid_t p : level) {
            if (depth > 0) {
                std::ifstream comm("/proc/" + std::to_string(p) + "/comm");
                std::string name;
                std::getline(comm, name);
                if (name == "hone-worker")
                    return p;
            }
            std::ifstream children("/proc/" + std::to_string(p) + "/task/" + std::to_string(p) + "/children");
            pid_t c = 0;
            while (children >> c)
                next.push_back(c);
        }
        level = std::move(next);
    }
    return -1;
}

std::string selfExe()
{
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        throw std::runtime_error("cannot find the hone-worker binary (/proc/self/exe)");
    return std::string(buf, static_cast<size_t>(n));
}

/// Limits every runner gets, sandboxed or not: no core files, bounded file size and fds.
void limitChild()
{
    const rlimit core { 0, 0 };
    setrlimit(RLIMIT_CORE, &core);
    const rlimit fsize { 64u << 20, 64u << 20 };
    setrlimit(RLIMIT_FSIZE, &fsize);
    const rlimit files { 256, 256 };
    setrlimit(RLIMIT_NOFILE, &files);
}

/// Forks and execs `argv` with `childSock` as its fd 3 and no other descriptor of ours beyond
/// 0-2; the child dies with this process.
pid_t spawn(const std::vector<std::string>& argv, int childSock)
{
    std::vector<char*> cargv;
    for (const auto& a : argv)
        cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid != 0)
        return pid;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
        _exit(1);
    if (childSock != 3) {
        ::dup2(childSock, 3);
    } else {
        ::fcntl(3, F_SETFD, 0);
    }
    // Everything else of the judge's (the protocol channel above all) stays behind.
    ::close_range(4, ~0U, 0);
    limitChild();
    ::execv(cargv[0], cargv.data());
    static const char msg[] = "hone-worker: cannot start a runner\n";
    (void)!::write(2, msg, sizeof msg - 1);
    _exit(127);
}

} // namespace

/// One runner process holding one loaded object.
class RunnerKernel final : public LoadedKernel {
public:
    RunnerKernel(RunnerBackend& backend, pid_t pid, int sock)
        : m_backend(backend)
        , m_pid(pid)
        , m_sock(sock)
    {
        m_backend.m_kernels.insert(this);
    }
    ~RunnerKernel() override
    {
        m_backend.m_kernels.erase(this);
        if (m_backend.m_lastTimed == this)
            m_backend.m_lastTimed = nullptr;
        ::close(m_sock);
        if (m_pid > 0) {
            ::kill(m_pid, SIGKILL);
            while (::waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
            }
        }
    }

    int run(const hone_args& args) override { return call(args, false).rc; }

    Reply call(const hone_args& args, bool timed)
    {
        const std::vector<char> payload = encode(args);
        std::string message;
        // On a GPU the runner's main thread spins or sleeps in the driver: its CPU time bounds
        // nothing there, the judge's wall clock does (deviceClockDisagreement).
        const bool countCpu = timed && !m_backend.onDevice();
        const double cpuBefore = countCpu ? mainThreadCpuNs(m_runnerPid) : -1;
        const auto start = Clock::now();
        const Reply rep = exchange(Request { Op::Run, 0, 0, timed ? 1u : 0u, 0 }, payload, -1, message);
        const double wall = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
        const double cpuAfter = countCpu ? mainThreadCpuNs(m_runnerPid) : -1;
        failOn(rep, message);
        if (timed) {
            m_timed.push_back({ rep.ns, wall, cpuBefore >= 0 && cpuAfter >= 0 ? cpuAfter - cpuBefore : -1 });
            m_backend.m_lastDisturbed = (rep.flags & runner::kDisturbed) != 0;
        }
        return rep;
    }

    /// A GPU runner's answer to `op` (its launch profile of `args`, or how it times) as JSON.
    nlohmann::json ask(Op op, const hone_args* args)
    {
        std::string message;
        const Reply rep = exchange(Request { op, 0, 0, 0, 0 }, args ? encode(*args) : std::vector<char>(), -1, message);
        failOn(rep, message);
        nlohmann::json j = nlohmann::json::parse(message, nullptr, false);
        if (j.is_discarded() || !j.is_object())
            return { { "error", "the runner's answer is not a JSON object" } };
        return j;
    }

    std::vector<char> encode(const hone_args& args)
    {
        runner::EncodedCall call;
        auto encode = [&](const hone_tensor* ts, int32_t n, std::vector<runner::EncodedTensor>& out) {
            for (int32_t i = 0; i < n; ++i) {
                runner::EncodedTensor e;
                e.name = ts[i].name ? ts[i].name : "";
                const auto [buf, offset] = m_backend.locate(ts[i].data);
                ensureMapped(*buf);
                e.buffer = buf->id;
                e.offset = offset;
                e.dtype = ts[i].dtype;
                e.rank = ts[i].rank;
                std::memcpy(e.shape, ts[i].shape, sizeof e.shape);
                std::memcpy(e.strides, ts[i].strides, sizeof e.strides);
                out.push_back(std::move(e));
            }
        };
        encode(args.inputs, args.num_inputs, call.inputs);
        encode(args.outputs, args.num_outputs, call.outputs);
        for (int32_t i = 0; i < args.num_params; ++i)
            call.params.emplace_back(args.params[i].name ? args.params[i].name : "", args.params[i].value);
        if (args.workspace) {
            const auto [buf, offset] = m_backend.locate(args.workspace);
            ensureMapped(*buf);
            call.workspaceBuffer = buf->id;
            call.workspaceOffset = offset;
            call.workspaceBytes = args.workspace_bytes;
        }
        return runner::encodeCall(call);
    }

    void failOn(const Reply& rep, const std::string& message)
    {
        if (rep.status == Status::OutOfMemory)
            throw std::bad_alloc();
        if (rep.status == Status::DeviceFault) {
            // The runner's context is gone; the judge's is not, but the worker restarts all
            // the same, as it always has after a GPU fault.
            m_backend.m_lost = true;
            throw DeviceFault(message);
        }
        if (rep.status != Status::Ok)
            throw std::runtime_error(message);
    }

    Reply exchange(Request req, const std::vector<char>& payload, int fd, std::string& message)
    {
        if (m_dead)
            throw RunnerDied(m_deathMessage);
        if (m_forged)
            throw RunnerForged(m_forgedMessage);
        // Exactly one reply per request: anything waiting before we ask was sent by nobody we
        // asked (a candidate that found the socket).
        pollfd pending { m_sock, POLLIN, 0 };
        if (::poll(&pending, 1, 0) > 0 && (pending.revents & POLLIN))
            forged("its process sent a message nobody asked for");
        req.nonce = m_rng();
        Reply rep {};
        std::vector<char> text;
        bool answered = false;
        try {
            runner::sendPacket(m_sock, &req, sizeof req, payload, fd);
        } catch (const std::runtime_error&) {
            died();
        }
        try {
            answered = runner::receivePacket(m_sock, &rep, sizeof rep, text);
        } catch (const std::runtime_error&) {
            // A packet that is no reply at all (shorter than one, truncated): the runner's own
            // code never sends one, so someone else in its process did.
            forged("its process answered with a malformed message");
        }
        if (!answered)
            died();
        // A launch profile lists every launch of a call; every other answer is short.
        const size_t maxText = req.op == Op::LaunchProfile ? runner::kMaxPacket : 64 * 1024;
        if (rep.nonce != req.nonce || static_cast<uint32_t>(rep.status) > static_cast<uint32_t>(Status::DeviceFault)
            || text.size() > maxText)
            forged("its process answered with a message that is not the reply to this request");
        message.assign(text.begin(), text.end());
        return rep;
    }

    /// True when a message is waiting that nobody asked for (checked at the end of timing).
    bool unsolicited()
    {
        pollfd pending { m_sock, POLLIN, 0 };
        return !m_dead && ::poll(&pending, 1, 0) > 0 && (pending.revents & POLLIN);
    }

    void forget(uint64_t id) noexcept
    {
        if (!m_mapped.erase(id) || m_dead)
            return;
        try {
            std::string message;
            exchange(Request { Op::Unmap, 0, id, 0, 0 }, {}, -1, message);
        } catch (...) {
        }
    }

    std::string clockDisagreement() const { return cpuClockDisagreement(m_timed); }
    std::string deviceClockDisagreement() const { return backends::deviceClockDisagreement(m_timed); }
    nlohmann::json deviceClockStats() const { return backends::deviceClockStats(m_timed); }

    void locateRunner(bool sandboxed) { m_runnerPid = findRunner(m_pid, sandboxed); }

private:
    [[noreturn]] void forged(const std::string& what)
    {
        m_forged = true;
        m_forgedMessage = what + ": forged or out of step; the candidate's calls cannot be trusted";
        throw RunnerForged(m_forgedMessage);
    }

    [[noreturn]] void died()
    {
        m_dead = true;
        int status = 0;
        pid_t r;
        do
            r = ::waitpid(m_pid, &status, 0);
        while (r < 0 && errno == EINTR);
        m_pid = -1;
        std::string why = "its process ended";
        if (r > 0 && WIFSIGNALED(status)) {
            why = "its process died on " + core::protocol::signalDescription(WTERMSIG(status));
        } else if (r > 0 && WIFEXITED(status)) {
            why = "its process exited with code " + std::to_string(WEXITSTATUS(status));
            // bwrap passes a signal death on as 128 + signal.
            if (WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 160 && sandboxInfo().enabled)
                why = "its process died on " + core::protocol::signalDescription(WEXITSTATUS(status) - 128);
        }
        m_deathMessage = why;
        throw RunnerDied(why);
    }

    void ensureMapped(const RunnerBackend::Buffer& buf)
    {
        if (m_mapped.count(buf.id))
            return;
        std::string message;
        const Reply rep = exchange(Request { Op::Map, 0, buf.id, buf.bytes, 0 }, {}, buf.fd, message);
        if (rep.status == Status::OutOfMemory)
            throw std::bad_alloc();
        if (rep.status != Status::Ok)
            throw std::runtime_error("runner could not map a buffer: " + message);
        m_mapped.insert(buf.id);
    }

    RunnerBackend& m_backend;
    pid_t m_pid;
    int m_sock;
    bool m_dead = false;
    std::string m_deathMessage;
    bool m_forged = false;
    std::string m_forgedMessage;
    std::mt19937_64 m_rng { std::random_device {}() };
    std::set<uint64_t> m_mapped;
    std::vector<RunnerTimedCall> m_timed;
    pid_t m_runnerPid = -1;
};

RunnerBackend::RunnerBackend(DeviceBackend& inner, Memory memory)
    : m_inner(inner)
    , m_memory(memory)
{
}

RunnerBackend::~RunnerBackend()
{
    for (auto& [base, buf] : m_buffers) {
        if (onDevice())
            m_inner.releaseShared(reinterpret_cast<void*>(base));
        else
            ::munmap(reinterpret_cast<void*>(base), std::max<size_t>(buf.bytes, 1));
        ::close(buf.fd);
    }
}

std::vector<std::string> RunnerBackend::runnerCommand() const
{
    const SandboxInfo& sandbox = sandboxInfo();
    const std::string exe = selfExe();
    std::vector<std::string> argv;
    if (sandbox.enabled) {
        std::vector<std::pair<std::string, std::string>> env = { { "PATH", "/usr/bin:/bin" } };
        for (const char* var : { "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "OMP_WAIT_POLICY" })
            if (const char* v = std::getenv(var))
                env.emplace_back(var, v);
        // A GPU runner must open the judge's GPU: the same selection, and the driver's
        // libraries where the loader is told to look for them.
        if (onDevice())
            for (const char* var : { "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HONE_CUDA_DEVICE" })
                if (const char* v = std::getenv(var))
                    env.emplace_back(var, v);
        argv = sandboxCommand(sandbox.bwrap, env, 64ull << 20);
        const std::filesystem::path exeDir = std::filesystem::path(exe).parent_path();
        argv.insert(argv.end(), { "--ro-bind", exeDir.string(), exeDir.string() });
        argv.insert(argv.end(), { "--ro-bind-try", (exeDir.parent_path() / "lib").string(), (exeDir.parent_path() / "lib").string() });
        // No object file and nothing else of the cache: the object comes with the load, as a
        // private copy (verifiedCopy). The driver's device nodes and the PCI topology it reads,
        // as for the PyTorch baseline on a GPU (torch_reference.cpp).
        if (onDevice())
            appendGpuAccess(argv);
    }
    argv.insert(argv.end(), { exe, "--runner", "3" });
    if (onDevice())
        argv.push_back(m_inner.kind());
    return argv;
}

std::unique_ptr<LoadedKernel> RunnerBackend::load(const CompileOutput& object, std::string& error, bool& missingEntry)
{
    missingEntry = false;
    const SandboxInfo& sandbox = sandboxInfo();
    if (!sandbox.enabled && !sandbox.optedOut)
        throw std::runtime_error("no sandbox for candidate code: " + sandbox.reason
            + "; install bubblewrap, or pass --no-sandbox (HONE_NO_SANDBOX=1) to run candidates unsandboxed");
    // The judge's own context comes first (it holds every buffer): made here, or the reason
    // this device cannot run candidates, before any runner starts.
    if (onDevice())
        (void)m_inner.stream();
    // The object's bytes as verified against the cache's manifest (compile), copied once into
    // memory of this load's own: the runner loads exactly these, and sees no cache file.
    const int copy = verifiedCopy(object.objectPath, object.objectSha256, error);
    if (copy < 0)
        return nullptr;
    struct CloseCopy {
        int fd;
        ~CloseCopy() { ::close(fd); }
    } closeCopy { copy };
    const std::vector<std::string> argv = runnerCommand();

    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
    const pid_t pid = spawn(argv, sv[1]);
    ::close(sv[1]);
    if (pid < 0) {
        ::close(sv[0]);
        throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    auto kernel = std::make_unique<RunnerKernel>(*this, pid, sv[0]);
    std::string message;
    const std::string& path = object.objectPath;
    Reply rep;
    try {
        rep = kernel->exchange(Request { Op::Load, 0, 0, 0, 0 }, std::vector<char>(path.begin(), path.end()), copy, message);
    } catch (const RunnerDied& e) {
        error = std::string("cannot load the compiled object: ") + e.what();
        return nullptr;
    } catch (const RunnerForged& e) {
        error = std::string("loading the compiled object: ") + e.what();
        return nullptr;
    }
    if (rep.status == Status::MissingEntry) {
        missingEntry = true;
        error = message;
        return nullptr;
    }
    if (rep.status != Status::Ok) {
        error = message;
        return nullptr;
    }
    kernel->locateRunner(sandbox.enabled);
    return kernel;
}

std::pair<const RunnerBackend::Buffer*, uint64_t> RunnerBackend::locate(const void* p) const
{
    const auto addr = reinterpret_cast<uintptr_t>(p);
    auto it = m_buffers.upper_bound(addr);
    if (it != m_buffers.begin()) {
        --it;
        if (addr - it->first <= it->second.bytes)
            return { &it->second, addr - it->first };
    }
    throw std::logic_error("a call passes a pointer that is not a runner buffer");
}

void* RunnerBackend::allocate(size_t bytes)
{
    if (onDevice()) {
        int fd = -1;
        void* p = m_inner.allocateShared(bytes, fd);
        m_buffers[reinterpret_cast<uintptr_t>(p)] = Buffer { m_nextId++, bytes, fd };
        return p;
    }
    const int fd = ::memfd_create("hone-buffer", MFD_CLOEXEC);
    if (fd < 0)
        throw std::bad_alloc();
    const size_t mapped = std::max<size_t>(bytes, 1);
    if (::ftruncate(fd, static_cast<off_t>(mapped)) != 0) {
        ::close(fd);
        throw std::bad_alloc();
    }
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        ::close(fd);
        throw std::bad_alloc();
    }
    m_buffers[reinterpret_cast<uintptr_t>(p)] = Buffer { m_nextId++, bytes, fd };
    return p;
}

void RunnerBackend::release(void* p) noexcept
{
    auto it = m_buffers.find(reinterpret_cast<uintptr_t>(p));
    if (it == m_buffers.end())
        return;
    for (RunnerKernel* k : m_kernels)
        k->forget(it->second.id);
    if (onDevice())
        m_inner.releaseShared(p);
    else
        ::munmap(p, std::max<size_t>(it->second.bytes, 1));
    ::close(it->second.fd);
    m_buffers.erase(it);
}

void RunnerBackend::upload(void* device, const void* host, size_t bytes)
{
    if (onDevice())
        m_inner.upload(device, host, bytes); // in the judge's own context: the runner has no say
    else
        std::memcpy(device, host, bytes);
}

void RunnerBackend::download(void* host, const void* device, size_t bytes)
{
    if (onDevice())
        m_inner.download(host, device, bytes);
    else
        std::memcpy(host, device, bytes);
}

void* RunnerBackend::workspace(size_t& bytes)
{
    if (!onDevice())
        return DeviceBackend::workspace(bytes);
    // The device backend's size, but memory the runners can map.
    size_t innerBytes = 0;
    m_inner.workspace(innerBytes);
    if (!m_workspace && innerBytes)
        m_workspace = allocate(innerBytes);
    bytes = m_workspace ? innerBytes : 0;
    return m_workspace;
}

void RunnerBackend::flushCaches(const std::vector<MemRegion>& workingSet)
{
    m_inner.flushCaches(workingSet);
    // On a GPU the flush runs in the judge's context, finished before the runner is asked to
    // start: the runner cannot skip it.
    if (onDevice())
        m_inner.synchronize();
}

void RunnerBackend::synchronize()
{
    // A runner finishes its call's device work before it replies; this is the judge's own.
    if (onDevice())
        m_inner.synchronize();
}

bool RunnerBackend::deviceLost() const
{
    return m_lost || (onDevice() && m_inner.deviceLost());
}

nlohmann::json RunnerBackend::launchProfile(LoadedKernel& kernel, const hone_args& args)
{
    if (!onDevice())
        return nullptr;
    // Captured in the runner, whose context ran the launches: what it reports is the
    // candidate's own account, shown as occupancy and never used for a verdict.
    return static_cast<RunnerKernel&>(kernel).ask(Op::LaunchProfile, &args);
}

nlohmann::json RunnerBackend::profile(const nlohmann::json& request)
{
    return onDevice() ? m_inner.profile(request) : nullptr;
}

double RunnerBackend::timedRun(LoadedKernel& kernel, const hone_args& args, int& rc)
{
    const Reply rep = static_cast<RunnerKernel&>(kernel).call(args, true);
    rc = rep.rc;
    return rep.ns;
}

std::string RunnerBackend::clockDisagreement(LoadedKernel& kernel)
{
    auto& k = static_cast<RunnerKernel&>(kernel);
    m_lastTimed = &k; // the candidate: timingInfo() reports how its runner timed
    if (k.unsolicited())
        throw RunnerForged("its process sent a message nobody asked for: forged or out of step; the candidate's "
                           "calls cannot be trusted");
    return onDevice() ? k.deviceClockDisagreement() : k.clockDisagreement();
}

nlohmann::json RunnerBackend::timingInfo()
{
    nlohmann::json info;
    if (onDevice()) {
        // How the runner timed (its delay kernel, its synchronize overhead): the last timed
        // kernel's account; the judge's own clock check stands beside it.
        if (m_lastTimed) {
            try {
                info = m_lastTimed->ask(Op::TimingInfo, nullptr);
            } catch (const std::exception& e) {
                info = { { "error", std::string("the runner cannot say how it timed: ") + e.what() } };
            }
        }
        info["clock_check"] = deviceClockBound();
        if (m_lastTimed)
            info["clock_check_calls"] = m_lastTimed->deviceClockStats();
    } else {
        info = m_inner.timingInfo();
    }
    if (info.is_null())
        info = nlohmann::json::object();
    info["runner"] = "own process per kernel; its clock is checked against the worker's";
    info["sandbox"] = sandboxInfo().enabled ? "bubblewrap" : "off: " + sandboxInfo().reason;
    return info;
}

} // namespace hone::backends
