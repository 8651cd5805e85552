#include "core/protocol.h"

#include "core/utf8.h"

#include <array>
#include <csignal>
#include <cstring>
#include <utility>

namespace hone::core::protocol {
namespace {

constexpr std::array<std::pair<FailureKind, const char*>, 14> kKinds = {{
    {FailureKind::BadCandidate, "bad_candidate"},
    {FailureKind::CompileError, "compile_error"},
    {FailureKind::RuntimeError, "runtime_error"},
    {FailureKind::WrongResult, "wrong_result"},
    {FailureKind::Nan, "nan"},
    {FailureKind::PartialWrite, "partial_write"},
    {FailureKind::InputMutation, "input_mutation"},
    {FailureKind::Crash, "crash"},
    {FailureKind::Timeout, "timeout"},
    {FailureKind::MemoryLimit, "memory_limit"},
    {FailureKind::ProtocolError, "protocol_error"},
    {FailureKind::WorkerError, "worker_error"},
    {FailureKind::Suspicious, "suspicious"},
    {FailureKind::LlmError, "llm_error"},
}};

} // namespace

const char* failureKindName(FailureKind kind)
{
    for (const auto& [k, name] : kKinds)
        if (k == kind)
            return name;
    return "worker_error";
}

std::optional<FailureKind> failureKindFromName(std::string_view name)
{
    for (const auto& [k, n] : kKinds)
        if (name == n)
            return k;
    return std::nullopt;
}

nlohmann::json makeMessage(std::string_view type)
{
    return nlohmann::json{{"protocol", kVersion}, {"type", std::string(type)}};
}

nlohmann::json parseMessage(std::string_view line)
{
    nlohmann::json msg = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    auto preview = [&] {
        std::string s(line.substr(0, 80));
        for (char& c : s)
            if (static_cast<unsigned char>(c) < 0x20)
                c = ' ';
        return validUtf8(s) + (line.size() > 80 ? "..." : "");
    };
    if (msg.is_discarded())
        throw ProtocolError("worker sent a line that is not JSON: '" + preview() + "'");
    if (!msg.is_object())
        throw ProtocolError("worker sent JSON that is not an object: '" + preview() + "'");
    auto version = msg.find("protocol");
    if (version == msg.end() || !version->is_number_integer())
        throw ProtocolError("worker message has no integer 'protocol' field: '" + preview() + "'");
    if (version->get<int>() != kVersion)
        throw ProtocolError("protocol version mismatch: the worker speaks version "
            + std::to_string(version->get<int>()) + ", this hone speaks version " + std::to_string(kVersion)
            + "; deploy a matching hone-worker");
    auto type = msg.find("type");
    if (type == msg.end() || !type->is_string())
        throw ProtocolError("worker message has no string 'type' field: '" + preview() + "'");
    return msg;
}

nlohmann::json makeFailure(std::string_view id, FailureKind kind, std::string_view stage, std::string_view message)
{
    nlohmann::json r = makeMessage("result");
    // The message often quotes a worker's stderr or a candidate's bytes: valid UTF-8 or the
    // result could not be written as JSON.
    r["id"] = validUtf8(id);
    r["status"] = "failed";
    r["failure"] = {{"kind", failureKindName(kind)}, {"stage", validUtf8(stage)}, {"message", validUtf8(message)}};
    return r;
}

std::string requestId(const nlohmann::json& request)
{
    if (!request.is_object())
        return {};
    auto it = request.find("id");
    if (it == request.end())
        return {};
    if (it->is_string())
        return it->get<std::string>();
    if (it->is_number_integer())
        return std::to_string(it->get<int64_t>());
    return {};
}

std::string signalDescription(int sig)
{
    static const std::pair<int, const char*> names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"},
        {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"}, {SIGILL, "SIGILL"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"},
        {SIGTRAP, "SIGTRAP"}, {SIGPIPE, "SIGPIPE"}};
    std::string name = "signal " + std::to_string(sig);
    for (auto [n, s] : names)
        if (n == sig)
            name = s;
    return name + " (" + strsignal(sig) + ")";
}

} // namespace hone::core::protocol
