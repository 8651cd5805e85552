#include "worker_server.h"

#include "runner_wire.h"
#include "torch_reference.h"

#include "core/protocol.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <utility>

namespace hone::backends {

using core::protocol::FailureKind;

#ifdef HONE_WITH_CUDA
namespace {

/// HONE_CUDA_IN_PROCESS=1: CUDA candidates run in the worker's own process and context, the way
/// they did before GPU runners (no containment of their code; for comparison and fallback).
bool cudaInProcess()
{
    const char* v = std::getenv("HONE_CUDA_IN_PROCESS");
    return v && std::string(v) == "1";
}

} // namespace
#endif

Worker::Worker(ProtocolChannel& channel, const std::filesystem::path& cacheDir, const std::string& compiler,
    std::string version)
    : m_channel(channel)
    , m_compiler(cacheDir, compiler)
    , m_cpu(cacheDir, m_compiler)
    , m_runners(m_cpu)
    , m_evaluator(m_runners, m_runners, channel)
#ifdef HONE_WITH_CUDA
    , m_cuda(cacheDir)
    , m_cudaRunners(m_cuda, RunnerBackend::Memory::Device)
    , m_cudaEvaluator(cudaInProcess() ? static_cast<DeviceBackend&>(m_cuda) : static_cast<DeviceBackend&>(m_cudaRunners),
          m_runners, channel)
#endif
#ifdef HONE_WITH_HIP
    , m_cacheDir(cacheDir)
#endif
    , m_version(std::move(version))
{
    m_evaluator.setReferenceCache(cacheDir);
#ifdef HONE_WITH_CUDA
    m_cudaEvaluator.setReferenceCache(cacheDir);
#endif
}

#ifdef HONE_WITH_HIP
HipBackend& Worker::hip()
{
    if (!m_hip) {
        m_hip = std::make_unique<HipBackend>(m_cacheDir);
        m_hipEvaluator = std::make_unique<Evaluator>(*m_hip, m_runners, m_channel);
        m_hipEvaluator->setReferenceCache(m_cacheDir);
    }
    return *m_hip;
}
#endif

void Worker::serve()
{
    std::string line;
    while (m_channel.readLine(line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        if (!handle(line))
            break;
    }
}

bool Worker::handle(const std::string& line)
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
    const std::string id = requestId(request);
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

bool Worker::evaluate(const nlohmann::json& request)
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
        return reply(std::move(result), m_cuda.deviceLost() || (!cudaInProcess() && m_cudaRunners.deviceLost()));
#else
        refuse(requestId(request),
            "this hone-worker was built without the CUDA backend; rebuild it where the CUDA toolkit is "
            "installed");
        return true;
#endif
    }
    if (lang == "hip")
        return evaluateHip(request);
    return reply(m_evaluator.evaluate(request), false);
}

bool Worker::reply(nlohmann::json result, bool lost)
{
    if (lost)
        result["device_lost"] = true;
    m_channel.send(result);
    m_channel.clearContext();
    return !lost;
}

bool Worker::evaluateHip(const nlohmann::json& request)
{
    const std::string id = requestId(request);
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
    return reply(std::move(result), hip().deviceLost());
#else
    refuse(id, "this hone-worker was built without the HIP backend; rebuild it where hipcc and "
               "hip/hip_runtime_api.h are installed");
    return true;
#endif
}

void Worker::refuse(const std::string& id, const std::string& message)
{
    m_channel.send(core::protocol::makeFailure(id, FailureKind::WorkerError, "request", message));
}

nlohmann::json Worker::hello(const std::string& id)
{
    nlohmann::json msg = core::protocol::makeMessage("hello");
    msg["id"] = id;
    msg["worker"] = "hone-worker";
    msg["version"] = m_version;
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
    HipBackend& amd = hip();
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
    const SandboxInfo& sandbox = sandboxInfo();
    msg["sandbox"] = { { "enabled", sandbox.enabled }, { "available", sandbox.available } };
    if (!sandbox.enabled)
        msg["sandbox"]["reason"] = sandbox.reason;
    msg["torch"] = torchInfo(); // PyTorch references (reference.py)
    return msg;
}

nlohmann::json Worker::calibrate(const std::string& id, const nlohmann::json& request)
{
    const auto force = request.find("force");
    const bool forced = force != request.end() && force->is_boolean() && force->get<bool>();
    m_channel.progress(id, "calibrate",
        forced ? "measuring copy bandwidth and FMA peak" : "reading cached ceilings or measuring them");
    std::string which = "cpu";
    if (auto k = request.find("kind"); k != request.end() && k->is_string())
        which = k->get<std::string>();
    DeviceBackend* device = &m_cpu;
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

#ifdef HONE_WITH_CUDA
#endif
#ifdef HONE_WITH_HIP
#endif

} // namespace hone::backends
