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
#include "runner_wire.h"
#include "worker_server.h"

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

constexpr const char* kUsage = "usage: hone-worker --stdio [--cache-dir DIR] [--no-sandbox] [--threads N]\n"
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
    { "--threads", "N", "host threads for drawing, hashing and comparing tensors (sets $HONE_WORKER_THREADS; "
                        "default: the hardware threads, at most 16)" },
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
        } else if (arg == "--threads" && i + 1 < argc && std::atoi(argv[i + 1]) > 0) {
            ::setenv("HONE_WORKER_THREADS", argv[++i], 1); // read once, by hostThreads()
        } else if (arg == "--cache-dir" && i + 1 < argc && argv[i + 1][0] != '\0') {
            cacheDir = argv[++i];
        } else if (arg.rfind("--cache-dir=", 0) == 0 && arg.size() > 12) {
            cacheDir = arg.substr(12);
        } else {
            std::fprintf(stderr, "hone-worker: %s '%s'\n%s",
                arg == "--cache-dir" ? "missing directory after"
                    : arg == "--threads" ? "missing positive number after"
                                         : "unknown argument",
                arg.c_str(), kUsage);
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
        backends::Worker worker(channel, std::filesystem::absolute(cacheDir), cxx && *cxx ? cxx : "c++", HONE_WORKER_VERSION);
        worker.serve();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "hone-worker: %s\n", e.what());
        return 1;
    }
    return 0;
}
