#include "torch_reference.h"

#include "core/protocol.h"
#include "core/sha256.h"
#include "hone_embedded.h"
#include "process.h"
#include "sandbox.h"
#include "tensors.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace hone::backends {
namespace fs = std::filesystem;

std::string torchPython()
{
    if (const char* p = std::getenv("HONE_PYTHON"); p && *p)
        return p;
    if (::access("/usr/bin/python3", X_OK) == 0)
        return "/usr/bin/python3";
    return findExecutable("python3");
}

const nlohmann::json& torchInfo()
{
    static const nlohmann::json info = [] {
        const std::string python = torchPython();
        nlohmann::json j = { { "available", false }, { "python", python } };
        if (python.empty()) {
            j["reason"] = "no python3 on this host; install python3-torch (or set HONE_PYTHON)";
            return j;
        }
        // Found and versioned without importing it (an import of torch takes seconds, and every
        // hello asks); a broken install still fails at the first call, with torch's own error.
        const ProcessResult r = runProcess({ python, "-c",
                                               "import importlib.util as u, importlib.metadata as m\n"
                                               "missing = [n for n in ('torch', 'numpy') if u.find_spec(n) is None]\n"
                                               "if missing: raise SystemExit('no module named ' + ' or '.join(missing))\n"
                                               "print('hone-torch', m.version('torch'))" },
            {}, 60, 64 << 10);
        const auto at = r.output.rfind("hone-torch ");
        if (r.started && !r.timedOut && r.exitCode == 0 && at != std::string::npos) {
            std::string version = r.output.substr(at + 11);
            while (!version.empty() && (version.back() == '\n' || version.back() == '\r'))
                version.pop_back();
            j["available"] = true;
            j["version"] = version;
            return j;
        }
        std::string why = r.started ? r.output : r.error;
        const auto last = why.find_last_not_of("\n\r ");
        why = last == std::string::npos ? std::string() : why.substr(0, last + 1);
        if (const auto nl = why.rfind('\n'); nl != std::string::npos)
            why = why.substr(nl + 1);
        j["reason"] = python + " has no PyTorch"
            + (why.empty() ? std::string() : " (" + why + ")")
            + "; install python3-torch, or set HONE_PYTHON to an interpreter that has PyTorch";
        return j;
    }();
    return info;
}

std::string torchReferenceKey(const std::string& source)
{
    return "torch-" + core::sha256Hex(std::string(embedded::kTorchRunner) + "\n--\n" + source);
}

TorchKernel::TorchKernel(std::string source, std::string name, double callSeconds, bool onGpu)
    : m_source(std::move(source))
    , m_name(std::move(name))
    , m_callSeconds(callSeconds > 0 ? callSeconds : 600)
    , m_onGpu(onGpu)
{
}

TorchKernel::~TorchKernel()
{
    if (m_in >= 0)
        ::close(m_in);
    if (m_out >= 0)
        ::close(m_out);
    if (m_pid > 0) {
        ::kill(m_pid, SIGKILL);
        while (::waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    if (!m_dir.empty()) {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }
}

void TorchKernel::start()
{
    const nlohmann::json& torch = torchInfo();
    if (!torch.value("available", false))
        throw std::runtime_error("this host cannot run the PyTorch reference " + m_name + ": "
            + torch.value("reason", std::string("PyTorch is missing")));
    const SandboxInfo& sandbox = sandboxInfo();
    if (!sandbox.enabled && !sandbox.optedOut)
        throw std::runtime_error("no sandbox for the PyTorch reference: " + sandbox.reason
            + "; install bubblewrap, or pass --no-sandbox (HONE_NO_SANDBOX=1)");

    // A private folder for the module, the runner script and the tensors of each call; the
    // sandbox sees this folder and the system, nothing else of the host.
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = (tmp && *tmp ? std::string(tmp) : std::string("/tmp")) + "/hone-torch-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
        throw std::runtime_error(std::string("cannot make a folder for the PyTorch reference: ") + std::strerror(errno));
    m_dir = buf.data();
    {
        std::ofstream(fs::path(m_dir) / "reference.py") << m_source;
        std::ofstream(fs::path(m_dir) / "hone_torch_runner.py") << embedded::kTorchRunner;
    }

    const std::string python = torchPython();
    std::vector<std::string> argv;
    if (sandbox.enabled) {
        std::vector<std::pair<std::string, std::string>> env
            = { { "PATH", "/usr/bin:/bin" }, { "HOME", "/tmp" }, { "PYTHONDONTWRITEBYTECODE", "1" } };
        for (const char* var : { "OMP_NUM_THREADS", "MKL_NUM_THREADS", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
                 "CUDA_DEVICE_ORDER", "HONE_CUDA_DEVICE" })
            if (const char* v = std::getenv(var))
                env.emplace_back(var, v);
        argv = sandboxCommand(sandbox.bwrap, env, 256ull << 20);
        // The GPU baseline needs the driver's device nodes and the PCI topology (it also gets
        // /etc/alternatives, through which Debian reaches BLAS and LAPACK for numpy and torch).
        if (m_onGpu)
            appendGpuAccess(argv);
        else // Debian reaches BLAS and LAPACK (numpy, torch) through /etc/alternatives.
            argv.insert(argv.end(), { "--ro-bind-try", "/etc/alternatives", "/etc/alternatives" });
        // An interpreter outside /usr (a venv, conda) is seen with its whole prefix, read-only.
        std::error_code ec;
        const fs::path real = fs::canonical(python, ec);
        if (!ec && real.string().rfind("/usr/", 0) != 0) {
            const fs::path prefix = real.parent_path().parent_path();
            argv.insert(argv.end(), { "--ro-bind", prefix.string(), prefix.string() });
        }
        if (!ec && fs::path(python).parent_path() != real.parent_path()) {
            const fs::path venv = fs::path(python).parent_path().parent_path();
            argv.insert(argv.end(), { "--ro-bind-try", venv.string(), venv.string() });
        }
        argv.insert(argv.end(), { "--bind", m_dir, m_dir, "--chdir", m_dir });
    }
    for (const std::string& a : { python, std::string("-I"), std::string("-B"),
             m_dir + "/hone_torch_runner.py", m_dir + "/reference.py" })
        argv.push_back(a);

    int toChild[2], fromChild[2];
    if (::pipe2(toChild, O_CLOEXEC) != 0 || ::pipe2(fromChild, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    std::vector<char*> cargv;
    for (auto& a : argv)
        cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent)
            _exit(1);
        ::dup2(toChild[0], 0);
        ::dup2(fromChild[1], 1);
        ::close_range(3, ~0U, 0);
        const rlimit core { 0, 0 };
        ::setrlimit(RLIMIT_CORE, &core);
        ::execv(cargv[0], cargv.data());
        static const char msg[] = "hone-worker: cannot start the PyTorch reference\n";
        (void)!::write(2, msg, sizeof msg - 1);
        _exit(127);
    }
    ::close(toChild[0]);
    ::close(fromChild[1]);
    if (pid < 0) {
        ::close(toChild[1]);
        ::close(fromChild[0]);
        throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    m_pid = pid;
    m_in = toChild[1];
    m_out = fromChild[0];
    const nlohmann::json ready = nlohmann::json::parse(readLine(180), nullptr, false);
    if (!ready.is_object() || !ready.value("ok", false))
        throw std::runtime_error("the PyTorch reference " + m_name + " did not start: "
            + (ready.is_object() ? ready.value("error", std::string("no reason given")) : std::string("no reply")));
}

void TorchKernel::send(const std::string& line)
{
    const std::string text = line + "\n";
    // A process that died must not take the worker with it through SIGPIPE.
    struct sigaction ignore { }, old { };
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old);
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(m_in, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += static_cast<size_t>(n);
    }
    ::sigaction(SIGPIPE, &old, nullptr);
    if (done < text.size())
        throw RunnerDied("the PyTorch reference " + m_name + ": its process ended (its input is closed)");
}

std::string TorchKernel::readLine(double seconds)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        if (const auto nl = m_buffered.find('\n'); nl != std::string::npos) {
            std::string line = m_buffered.substr(0, nl);
            m_buffered.erase(0, nl + 1);
            return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            throw std::runtime_error("the PyTorch reference " + m_name + " did not answer within "
                + std::to_string(static_cast<int>(seconds)) + " s");
        pollfd p { m_out, POLLIN, 0 };
        if (::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000))) <= 0)
            continue;
        char chunk[4096];
        const ssize_t n = ::read(m_out, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int status = 0;
            std::string why = "its process ended";
            if (::waitpid(m_pid, &status, 0) == m_pid) {
                m_pid = -1;
                if (WIFSIGNALED(status))
                    why = "its process died on " + core::protocol::signalDescription(WTERMSIG(status));
                else if (WIFEXITED(status))
                    why = "its process exited with code " + std::to_string(WEXITSTATUS(status));
            }
            throw RunnerDied("the PyTorch reference " + m_name + ": " + why + " (its messages are in the worker's stderr)");
        }
        m_buffered.append(chunk, static_cast<size_t>(n));
    }
}

nlohmann::json TorchKernel::exchange(nlohmann::json req, const hone_args& args)
{
    if (m_pid <= 0)
        start();
    req["inputs"] = nlohmann::json::array();
    req["outputs"] = nlohmann::json::array();
    req["params"] = nlohmann::json::object();
    auto describe = [&](const hone_tensor& t, const std::string& file) {
        std::vector<int64_t> shape(t.shape, t.shape + t.rank);
        return nlohmann::json { { "name", t.name ? t.name : "" },
            { "dtype", dtypeName(static_cast<hone_dtype>(t.dtype)) }, { "shape", shape }, { "file", file } };
    };
    auto bytesOf = [](const hone_tensor& t) {
        size_t n = dtypeSize(static_cast<hone_dtype>(t.dtype));
        for (int32_t d = 0; d < t.rank; ++d)
            n *= static_cast<size_t>(t.shape[d]);
        return n;
    };
    for (int32_t i = 0; i < args.num_inputs; ++i) {
        const std::string file = m_dir + "/in" + std::to_string(i) + ".bin";
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(static_cast<const char*>(args.inputs[i].data), static_cast<std::streamsize>(bytesOf(args.inputs[i])));
        if (!out)
            throw std::runtime_error("cannot write the PyTorch reference's input " + file);
        req["inputs"].push_back(describe(args.inputs[i], file));
    }
    for (int32_t i = 0; i < args.num_outputs; ++i)
        req["outputs"].push_back(describe(args.outputs[i], m_dir + "/out" + std::to_string(i) + ".bin"));
    for (int32_t i = 0; i < args.num_params; ++i)
        req["params"][args.params[i].name ? args.params[i].name : ""] = args.params[i].value;
    send(req.dump());
    const nlohmann::json rep = nlohmann::json::parse(readLine(m_callSeconds), nullptr, false);
    if (!rep.is_object())
        throw std::runtime_error("the PyTorch reference sent a line that is not JSON");
    if (!rep.value("ok", false))
        throw std::runtime_error(rep.value("error", std::string("failed without a reason")));
    for (int32_t i = 0; i < args.num_outputs; ++i) {
        const std::string file = req["outputs"][static_cast<size_t>(i)]["file"];
        const size_t bytes = bytesOf(args.outputs[i]);
        std::ifstream in(file, std::ios::binary);
        if (!in.read(static_cast<char*>(args.outputs[i].data), static_cast<std::streamsize>(bytes))
            || in.peek() != std::ifstream::traits_type::eof())
            throw std::runtime_error("the PyTorch reference wrote " + file + " with a size other than "
                + std::to_string(bytes) + " bytes");
    }
    return rep;
}

int TorchKernel::run(const hone_args& args)
{
    // On a GPU target the tensors of a call are the device's: the module is timed through
    // stage() and timeOnGpu(), on its own copies, never handed device pointers.
    if (m_onGpu)
        throw std::logic_error("the PyTorch baseline " + m_name + " on a GPU is timed with stage()/timeOnGpu()");
    const nlohmann::json rep = exchange(nlohmann::json::object(), args);
    m_lastNs = rep.value("ns", 0.0);
    return 0;
}

nlohmann::json TorchKernel::stage(int set, const hone_args& hostArgs)
{
    nlohmann::json rep = exchange({ { "op", "stage" }, { "set", set } }, hostArgs);
    rep.erase("ok");
    return rep;
}

std::vector<double> TorchKernel::timeOnGpu(int set, int samples, int& covered)
{
    if (m_pid <= 0)
        throw std::logic_error("timeOnGpu before stage");
    send(nlohmann::json { { "op", "time" }, { "set", set }, { "samples", samples } }.dump());
    const nlohmann::json rep = nlohmann::json::parse(readLine(m_callSeconds * std::max(1, samples)), nullptr, false);
    if (!rep.is_object())
        throw std::runtime_error("the PyTorch reference sent a line that is not JSON");
    if (!rep.value("ok", false))
        throw std::runtime_error(rep.value("error", std::string("failed without a reason")));
    covered = rep.value("covered", 0);
    std::vector<double> ns = rep.value("ns", std::vector<double>());
    if (ns.size() != static_cast<size_t>(samples))
        throw std::runtime_error("the PyTorch reference returned " + std::to_string(ns.size()) + " samples of "
            + std::to_string(samples));
    return ns;
}

double TorchKernel::timedRun(const hone_args& args, int& rc)
{
    rc = run(args);
    return m_lastNs;
}

} // namespace hone::backends
