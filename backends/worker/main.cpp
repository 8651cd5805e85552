// hone-worker: evaluates candidate kernels for Hone over JSON lines on stdin/stdout
// (docs/FORMATS.md). Everything that can crash or hang — compilers, candidate code — runs here,
// so that a death costs one candidate, never the session.
#include "channel.h"
#include "compiler.h"
#include "cpu_backend.h"
#include "evaluator.h"

#include "core/protocol.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>

#ifndef HONE_WORKER_VERSION
#define HONE_WORKER_VERSION "0.1.0"
#endif

namespace {

using namespace hone;
using core::protocol::FailureKind;

constexpr const char* kUsage = "usage: hone-worker --stdio [--cache-dir DIR]\n"
                               "       hone-worker --version\n";

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

/// Serves requests until end of input or `shutdown`.
class Worker {
public:
    Worker(backends::ProtocolChannel& channel, const std::filesystem::path& cacheDir,
        const std::string& compiler)
        : m_channel(channel)
        , m_compiler(cacheDir, compiler)
        , m_cpu(cacheDir, m_compiler)
        , m_evaluator(m_cpu, m_cpu, channel)
    {
    }

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
                m_channel.send(m_evaluator.evaluate(request));
            else if (kind == "shutdown")
                return false;
            else
                refuse(
                    id, "unknown request type '" + kind + "'; expected hello, calibrate, eval or shutdown");
        } catch (const std::exception& e) {
            refuse(id, std::string("worker error serving '") + kind + "': " + e.what());
        }
        m_channel.clearContext();
        return true;
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
        msg["compiler"] = m_compiler.versionLine();
        return msg;
    }

    nlohmann::json calibrate(const std::string& id, const nlohmann::json& request)
    {
        const auto force = request.find("force");
        const bool forced = force != request.end() && force->is_boolean() && force->get<bool>();
        m_channel.progress(id, "calibrate",
            forced ? "measuring copy bandwidth and FMA peak" : "reading cached ceilings or measuring them");
        try {
            bool cached = false;
            const core::Ceilings c = m_cpu.ceilings(forced, &cached);
            nlohmann::json msg = core::protocol::makeMessage("ceilings");
            msg["id"] = id;
            msg.update(core::toJson(c));
            msg["kind"] = m_cpu.kind();
            msg["cached"] = cached;
            return msg;
        } catch (const std::exception& e) {
            return core::protocol::makeFailure(id, FailureKind::WorkerError, "calibrate", e.what());
        }
    }

    backends::ProtocolChannel& m_channel;
    backends::HostCompiler m_compiler;
    backends::CpuBackend m_cpu;
    backends::Evaluator m_evaluator;
};

} // namespace

int main(int argc, char** argv)
{
    bool stdio = false;
    std::filesystem::path cacheDir;
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
        if (arg == "--stdio") {
            stdio = true;
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
