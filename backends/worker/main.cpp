// hone-worker: evaluates candidate kernels for Hone over JSON lines on stdin/stdout
// (docs/FORMATS.md). Everything that can crash or hang — compilers, candidate code — runs here,
// so that a death costs one candidate, never the session.
#include "channel.h"
#include "compiler.h"
#include "cpu_backend.h"
#ifdef HONE_WITH_CUDA
#include "cuda_backend.h"
#endif
#include "evaluator.h"
#ifdef HONE_WITH_HIP
#include "hip_backend.h"
#endif
#include "runner_backend.h"
#include "runner_wire.h"
#include "torch_reference.h"

#include "core/protocol.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>

#ifndef HONE_WORKER_VERSION
#define HONE_WORKER_VERSION "0.1.0"
#endif

namespace {

using namespace hone;
using core::protocol::FailureKind;

constexpr const char* kUsage = "usage: hone-worker --stdio [--cache-dir DIR] [--no-sandbox]\n"
                               "       hone-worker --runner FD   (started by the worker itself)\n"
                               "       hone-worker --version\n";

struct OptionDoc {
    const char* name;
    const char* value;
    const char* help;
};

/// The options main() parses, for the man page (`hone-worker --man`, installed as hone-worker.1).
constexpr OptionDoc kOptions[] = {
    { "--stdio", nullptr, "speak the worker protocol (docs/FORMATS.md) on standard input and output; required" },
    { "--cache-dir", "DIR", "compile and calibration cache (default $HONE_CACHE_DIR, else ~/.cache/hone)" },
    { "--no-sandbox", nullptr, "run candidate code without the bubblewrap sandbox (docs/THREAT_MODEL.md)" },
    { "--profile-once", "REQUEST", "evaluate one request file under a profiler and print the result" },
    { "--version", nullptr, "print the version and the protocol version, then exit" },
    { "--help", nullptr, "print the usage and exit" },
};

/// roff text: backslashes and dashes escaped.
std::string roff(const std::string& s)
{
    std::string out;
    for (char c : s)
        out += c == '\\' ? std::string("\\e") : c == '-' ? std::string("\\-") : std::string(1, c);
    return out;
}

std::string manPage()
{
    std::string m = std::string(".TH HONE\\-WORKER 1 \"\" \"hone ") + HONE_WORKER_VERSION + "\" \"User Commands\"\n"
        ".SH NAME\nhone\\-worker \\- the isolated evaluation process of Hone\n"
        ".SH SYNOPSIS\n.B hone\\-worker \\-\\-stdio\n[\\fB\\-\\-cache\\-dir\\fR \\fIDIR\\fR] [\\fB\\-\\-no\\-sandbox\\fR]\n"
        ".SH DESCRIPTION\n\\fBhone\\-worker\\fR compiles, checks and times candidate kernels for \\fBhone\\fR(1) and "
        "\\fBhone\\-workbench\\fR(1), which start it; a user does not run it by hand. It reads one JSON request per "
        "line and answers each (worker protocol " + std::to_string(core::protocol::kVersion) + "). Candidate code "
        "runs in a child process inside a bubblewrap sandbox with resource limits.\n.SH OPTIONS\n";
    for (const auto& o : kOptions)
        m += ".TP\n\\fB" + roff(o.name) + "\\fR" + (o.value ? " \\fI" + roff(o.value) + "\\fR" : std::string()) + "\n"
            + roff(o.help) + "\n";
    m += ".SH ENVIRONMENT\n.TP\n.B HONE_CXX\nthe C++ compiler for CPU candidates (default c++)\n"
         ".TP\n.B HONE_CACHE_DIR\nthe cache folder when \\fB\\-\\-cache\\-dir\\fR is not given\n"
         ".SH \"SEE ALSO\"\n\\fBhone\\fR(1)\n";
    return m;
}

std::filesystem::path defaultCacheDir()
{
    if (const char* dir = std::getenv("HONE_CACHE_DIR"); dir && *dir)
        return dir;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return std::filesystem::path(xdg) / "hone";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::filesystem::path(home) / ".cache" / "hone";
    return std::filesystem::temp_directory_path() / "hone-cache";
}

/// HONE_CUDA_IN_PROCESS=1: CUDA candidates run in the worker's own process and context, the way
/// they did before GPU runners (no containment of their code; for comparison and fallback).
bool cudaInProcess()
{
    const char* v = std::getenv("HONE_CUDA_IN_PROCESS");
    return v && std::string(v) == "1";
}

/// Serves requests until end of input or `shutdown`.
class Worker {
public:
    Worker(backends::ProtocolChannel& channel, const std::filesystem::path& cacheDir,
        const std::string& compiler)
        : m_channel(channel)
        , m_compiler(cacheDir, compiler)
        , m_cpu(cacheDir, m_compiler)
        , m_runners(m_cpu)
        , m_evaluator(m_runners, m_runners, channel)
#ifdef HONE_WITH_CUDA
        , m_cuda(cacheDir)
        , m_cudaRunners(m_cuda, backends::RunnerBackend::Memory::Device)
        , m_cudaEvaluator(cudaInProcess() ? static_cast<backends::DeviceBackend&>(m_cuda)
                                          : static_cast<backends::DeviceBackend&>(m_cudaRunners),
              m_runners, channel)
#endif
#ifdef HONE_WITH_HIP
        , m_cacheDir(cacheDir)
#endif
    {
        m_evaluator.setReferenceCache(cacheDir);
#ifdef HONE_WITH_CUDA
        m_cudaEvaluator.setReferenceCache(cacheDir);
#endif
    }

#ifdef HONE_WITH_HIP
    /// Made on first use (hello, a HIP eval or calibrate): a worker that evaluates CPU or CUDA
    /// code never loads ROCm.
    backends::HipBackend& hip()
    {
        if (!m_hip) {
            m_hip = std::make_unique<backends::HipBackend>(m_cacheDir);
            m_hipEvaluator = std::make_unique<backends::Evaluator>(*m_hip, m_runners, m_channel);
            m_hipEvaluator->setReferenceCache(m_cacheDir);
        }
        return *m_hip;
    }
#endif

    void serve()
    {
        std::string line;
        while (m_channel.readLine(line)) {
            if (line.find_first_not_of(" \t\r") == std::string::npos)
                continue;
            if (!handle(line))
                break;
        }
    }

private:
    /// False when the worker should exit.
    bool handle(const std::string& line)
    {
        const nlohmann::json request = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        m_channel.beginRequest(request); // every reply to it carries its id and secret
        std::string preview = line.substr(0, 80);
        for (char& c : preview)
            if (static_cast<unsigned char>(c) < 0x20)
                c = ' ';
        if (line.size() > 80)
            preview += "...";
        if (request.is_discarded() || !request.is_object()) {
            refuse("", "request line is not a JSON object: '" + preview + "'");
            return true;
        }
        const std::string id = backends::requestId(request);
        auto version = request.find("protocol");
        if (version == request.end() || !version->is_number_integer()) {
            refuse(id, "request has no integer 'protocol' field: '" + preview + "'");
            return true;
        }
        if (version->get<int>() != core::protocol::kVersion) {
            refuse(id,
                "protocol version mismatch: the request speaks version " + std::to_string(version->get<int>())
                    + ", this hone-worker speaks version " + std::to_string(core::protocol::kVersion)
                    + "; deploy a matching hone-worker");
            return true;
        }
        auto type = request.find("type");
        if (type == request.end() || !type->is_string()) {
            refuse(id, "request has no string 'type' field: '" + preview + "'");
            return true;
        }
        const std::string kind = type->get<std::string>();
        try {
            if (kind == "hello")
                m_channel.send(hello(id));
            else if (kind == "calibrate")
                m_channel.send(calibrate(id, request));
            else if (kind == "eval")
                return evaluate(request);
            else if (kind == "dump")
                m_channel.send(m_evaluator.dump(request));
            else if (kind == "shutdown")
                return false;
            else
                refuse(
                    id, "unknown request type '" + kind + "'; expected hello, calibrate, eval, dump or shutdown");
        } catch (const std::exception& e) {
            refuse(id, std::string("worker error serving '") + kind + "': " + e.what());
        }
        m_channel.clearContext();
        return true;
    }

    /// Routes by the candidate's language; false (exit) when a GPU fault lost the context.
    bool evaluate(const nlohmann::json& request)
    {
        std::string lang;
        if (auto c = request.find("candidate"); c != request.end() && c->is_object())
            if (auto l = c->find("lang"); l != c->end() && l->is_string())
                lang = l->get<std::string>();
        if (lang == "cuda") {
#ifdef HONE_WITH_CUDA
            nlohmann::json result = m_cudaEvaluator.evaluate(request);
            // A runner's fault leaves the worker's own context usable (seen on an H100), but the
            // worker restarts all the same, as it did when candidates faulted in its context.
            const bool lost = m_cuda.deviceLost() || (!cudaInProcess() && m_cudaRunners.deviceLost());
            if (lost)
                result["device_lost"] = true;
            m_channel.send(result);
            m_channel.clearContext();
            return !lost;
#else
            refuse(backends::requestId(request),
                "this hone-worker was built without the CUDA backend; rebuild it where the CUDA toolkit is "
                "installed");
            return true;
#endif
        }
        if (lang == "hip")
            return evaluateHip(request);
        m_channel.send(m_evaluator.evaluate(request));
        m_channel.clearContext();
        return true;
    }

    /// HIP: the request's `hip_arch` picks the gfx target; without an AMD GPU only compile-only
    /// requests (compile errors, registers, occupancy, ISA) are served, anything else refused.
    bool evaluateHip(const nlohmann::json& request)
    {
        const std::string id = backends::requestId(request);
#ifdef HONE_WITH_HIP
        {
            const auto a = request.find("hip_arch");
            const bool given = a != request.end() && !a->is_null();
            const std::string why = !given ? hip().selectArch("")
                : a->is_string()           ? hip().selectArch(a->get<std::string>())
                                           : "hip_arch is not a string";
            if (!why.empty()) {
                refuse(id, why);
                return true;
            }
        }
        bool needsDevice = true;
        if (auto st = request.find("stages"); st != request.end() && st->is_array()) {
            needsDevice = false;
            for (const auto& s : *st)
                needsDevice |= s == "check" || s == "time";
        }
        if (needsDevice && !hip().available()) {
            refuse(id, "cannot evaluate HIP candidates on this host: " + hip().unavailableReason()
                    + "; only compile-only requests (stages [\"compile\"]) work without an AMD GPU");
            return true;
        }
        nlohmann::json result = m_hipEvaluator->evaluate(request);
        const bool lost = hip().deviceLost();
        if (lost)
            result["device_lost"] = true;
        m_channel.send(result);
        m_channel.clearContext();
        return !lost;
#else
        refuse(id, "this hone-worker was built without the HIP backend; rebuild it where hipcc and "
                   "hip/hip_runtime_api.h are installed");
        return true;
#endif
    }

    void refuse(const std::string& id, const std::string& message)
    {
        m_channel.send(core::protocol::makeFailure(id, FailureKind::WorkerError, "request", message));
    }

    nlohmann::json hello(const std::string& id)
    {
        nlohmann::json msg = core::protocol::makeMessage("hello");
        msg["id"] = id;
        msg["worker"] = "hone-worker";
        msg["version"] = HONE_WORKER_VERSION;
        msg["devices"] = m_cpu.devices();
        msg["backends"] = { { "cpu", true }, { "cuda", false }, { "hip", false } };
#ifdef HONE_WITH_CUDA
        for (const auto& d : m_cuda.devices())
            msg["devices"].push_back(d);
        msg["backends"]["cuda"] = m_cuda.available();
        if (!m_cuda.available())
            msg["cuda_unavailable"] = m_cuda.unavailableReason();
        msg["nvcc"] = m_cuda.compilerVersion();
#endif
#ifdef HONE_WITH_HIP
        backends::HipBackend& amd = hip();
        for (const auto& d : amd.devices())
            msg["devices"].push_back(d);
        msg["backends"]["hip"] = amd.available();
        if (!amd.available())
            msg["hip_unavailable"] = amd.unavailableReason();
        msg["hipcc"] = amd.compilerVersion();
        msg["hip_clang"] = amd.clangVersion(); // builds the gfx targets hipcc cannot (docs/HIP.md)
        msg["hip_arch"] = amd.arch();
        msg["hip_platform"] = amd.platform(); // "nvidia": HIP on NVIDIA, a test bench (docs/HIP.md)
        msg["rocm"] = amd.rocmVersion();
#else
        msg["hip_unavailable"] = "this hone-worker was built without the HIP backend (no hipcc or HIP headers at build time)";
#endif
        msg["compiler"] = m_compiler.versionLine();
        const backends::SandboxInfo& sandbox = backends::sandboxInfo();
        msg["sandbox"] = { { "enabled", sandbox.enabled }, { "available", sandbox.available } };
        if (!sandbox.enabled)
            msg["sandbox"]["reason"] = sandbox.reason;
        msg["torch"] = backends::torchInfo(); // PyTorch references (reference.py)
        return msg;
    }

    nlohmann::json calibrate(const std::string& id, const nlohmann::json& request)
    {
        const auto force = request.find("force");
        const bool forced = force != request.end() && force->is_boolean() && force->get<bool>();
        m_channel.progress(id, "calibrate",
            forced ? "measuring copy bandwidth and FMA peak" : "reading cached ceilings or measuring them");
        std::string which = "cpu";
        if (auto k = request.find("kind"); k != request.end() && k->is_string())
            which = k->get<std::string>();
        backends::DeviceBackend* device = &m_cpu;
#ifdef HONE_WITH_CUDA
        if (which == "cuda")
            device = &m_cuda;
#endif
#ifdef HONE_WITH_HIP
        if (which == "hip")
            device = &hip();
#endif
        if (device->kind() != which)
            return core::protocol::makeFailure(id, FailureKind::WorkerError, "calibrate",
                "this hone-worker has no '" + which + "' backend; expected kind cpu"
#ifdef HONE_WITH_CUDA
                    " or cuda"
#endif
#ifdef HONE_WITH_HIP
                    " or hip"
#endif
            );
        try {
            bool cached = false;
            const core::Ceilings c = device->ceilings(forced, &cached);
            nlohmann::json msg = core::protocol::makeMessage("ceilings");
            msg["id"] = id;
            msg.update(core::toJson(c));
            msg["kind"] = device->kind();
            msg["cached"] = cached;
            return msg;
        } catch (const std::exception& e) {
            return core::protocol::makeFailure(id, FailureKind::WorkerError, "calibrate", e.what());
        }
    }

    backends::ProtocolChannel& m_channel;
    backends::HostCompiler m_compiler;
    backends::CpuBackend m_cpu;
    backends::RunnerBackend m_runners; // CPU code (candidates, references) runs in runner processes
    backends::Evaluator m_evaluator;
#ifdef HONE_WITH_CUDA
    backends::CudaBackend m_cuda;
    // CUDA candidates run in GPU runner processes, the judge keeping its own context
    // (HONE_CUDA_IN_PROCESS=1: in this process, as before the split; docs/THREAT_MODEL.md).
    backends::RunnerBackend m_cudaRunners;
    backends::Evaluator m_cudaEvaluator;
#endif
#ifdef HONE_WITH_HIP
    std::filesystem::path m_cacheDir;
    std::unique_ptr<backends::HipBackend> m_hip;
    std::unique_ptr<backends::Evaluator> m_hipEvaluator;
#endif
};

#ifdef HONE_WITH_CUDA
int runProfileOnce(const std::string& requestFile, const std::filesystem::path& cacheDir)
{
    const nlohmann::json request = nlohmann::json::parse(backends::readFile(requestFile), nullptr, false);
    if (request.is_discarded()) {
        std::fprintf(stderr, "hone-worker: %s is not a JSON eval request\n", requestFile.c_str());
        return 2;
    }
    // Nothing here speaks the protocol: the channel writes to stderr, away from ncu's table.
    backends::ProtocolChannel channel = backends::ProtocolChannel::toStderr();
    backends::HostCompiler compiler(cacheDir, "c++");
    backends::CpuBackend cpu(cacheDir, compiler);
    backends::CudaBackend cuda(cacheDir);
    backends::Evaluator evaluator(cuda, cpu, channel);
    return evaluator.runOnce(request);
}
#else
int runProfileOnce(const std::string&, const std::filesystem::path&)
{
    std::fprintf(stderr, "hone-worker: --profile-once needs the CUDA backend, which this build lacks\n");
    return 2;
}
#endif

} // namespace

/// `hone-worker --runner FD cuda`: a GPU runner, owning a context of its own. Its CUDA backend
/// never compiles, calibrates or takes a lock, so it is given no cache.
static int runDeviceRunner(int sock, const std::string& kind)
{
    (void)sock;
#ifdef HONE_WITH_CUDA
    if (kind == "cuda") {
        backends::CudaBackend cuda(std::filesystem::path("/nonexistent/hone-runner-has-no-cache"));
        if (!cuda.available()) {
            std::fprintf(stderr, "hone-worker --runner: %s\n", cuda.unavailableReason().c_str());
            return 3;
        }
        return backends::runner::runnerMain(sock, &cuda);
    }
#endif
    std::fprintf(stderr, "hone-worker --runner: no '%s' runners in this build\n", kind.c_str());
    return 2;
}

#if defined(__SANITIZE_ADDRESS__)
// AddressSanitizer builds (the `asan` preset): a candidate's crash must end its runner on the
// signal, as in a release build (the judge reports "crash" with the signal's name), not in
// ASan's SEGV report and exit code 1. The judge's and runner's own code stays instrumented.
extern "C" const char* __asan_default_options()
{
    return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0";
}
#endif

int main(int argc, char** argv)
{
    bool stdio = false;
    std::string profileOnce; // hone-worker --profile-once REQUEST.json: run under a profiler
    std::filesystem::path cacheDir;
    if (argc == 3 && std::string(argv[1]) == "--runner")
        return backends::runner::runnerMain(std::atoi(argv[2]));
    if (argc == 4 && std::string(argv[1]) == "--runner")
        return runDeviceRunner(std::atoi(argv[2]), argv[3]);
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--version") {
            std::printf("hone-worker %s protocol %d\n", HONE_WORKER_VERSION, core::protocol::kVersion);
            return 0;
        }
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (arg == "--man") {
            std::fputs(manPage().c_str(), stdout);
            return 0;
        }
        if (arg == "--profile-once" && i + 1 < argc) {
            profileOnce = argv[++i];
        } else if (arg == "--stdio") {
            stdio = true;
        } else if (arg == "--no-sandbox") {
            ::setenv("HONE_NO_SANDBOX", "1", 1); // read by the runners' sandbox decision
        } else if (arg == "--cache-dir" && i + 1 < argc && argv[i + 1][0] != '\0') {
            cacheDir = argv[++i];
        } else if (arg.rfind("--cache-dir=", 0) == 0 && arg.size() > 12) {
            cacheDir = arg.substr(12);
        } else {
            std::fprintf(stderr, "hone-worker: %s '%s'\n%s",
                arg == "--cache-dir" ? "missing directory after" : "unknown argument", arg.c_str(), kUsage);
            return 2;
        }
    }
    if (!profileOnce.empty()) {
        if (cacheDir.empty())
            cacheDir = defaultCacheDir();
        return runProfileOnce(profileOnce, std::filesystem::absolute(cacheDir));
    }
    if (!stdio) {
        std::fprintf(stderr, "hone-worker: --stdio is required (the only transport)\n%s", kUsage);
        return 2;
    }
    if (cacheDir.empty())
        cacheDir = defaultCacheDir();

    try {
        backends::ProtocolChannel channel = backends::ProtocolChannel::takeOverStdio();
        const char* cxx = std::getenv("HONE_CXX");
        Worker worker(channel, std::filesystem::absolute(cacheDir), cxx && *cxx ? cxx : "c++");
        worker.serve();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "hone-worker: %s\n", e.what());
        return 1;
    }
    return 0;
}
