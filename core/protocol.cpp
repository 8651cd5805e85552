#include "core/protocol.h"

#include "core/utf8.h"

#include <array>
#include <csignal>
#include <cstring>
#include <utility>

namespace hone::core::protocol {
namespace {

constexpr std::array<std::pair<FailureKind, const char*>, 13> kKinds = {{
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
}};

double number(const nlohmann::json& obj, const char* key)
{
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_number())
        return 0.0;
    return it->get<double>();
}

std::string text(const nlohmann::json& obj, const char* key)
{
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_string())
        return {};
    return it->get<std::string>();
}

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

EvalSummary summarize(const nlohmann::json& result)
{
    EvalSummary s;
    if (!result.is_object())
        throw ProtocolError("result is not a JSON object");
    const std::string status = text(result, "status");
    if (status != "ok" && status != "failed")
        throw ProtocolError("result has status '" + status + "'; expected 'ok' or 'failed'");
    s.ok = status == "ok";
    if (auto f = result.find("failure"); f != result.end() && f->is_object()) {
        s.failureKind = text(*f, "kind");
        s.failureStage = text(*f, "stage");
        s.failureMessage = text(*f, "message");
    }
    if (!s.ok && s.failureKind.empty()) {
        s.failureKind = "worker_error";
        s.failureMessage = "worker reported a failure without a reason";
    }
    if (auto t = result.find("timing"); t != result.end() && t->is_object()) {
        s.medianNs = number(*t, "median_ns");
        s.cv = number(*t, "cv");
        s.speedup = number(*t, "speedup");
        if (auto b = t->find("baseline"); b != t->end() && b->is_object())
            s.baselineMedianNs = number(*b, "median_ns");
    }
    if (auto r = result.find("roofline"); r != result.end() && r->is_object()) {
        s.fracBandwidth = number(*r, "frac_bandwidth");
        s.fracCompute = number(*r, "frac_compute");
    }
    if (auto d = result.find("diagnosis"); d != result.end() && d->is_object()) {
        s.bound = text(*d, "bound");
        s.evidence = text(*d, "evidence");
        auto sus = d->find("suspicious");
        s.suspicious = sus != d->end() && sus->is_boolean() && sus->get<bool>();
    }
    if (auto c = result.find("compile"); c != result.end() && c->is_object()) {
        auto cached = c->find("cached");
        s.compileCached = cached != c->end() && cached->is_boolean() && cached->get<bool>();
    }
    if (auto sh = result.find("shapes"); sh != result.end() && sh->is_array()) {
        for (const auto& e : *sh) {
            if (!e.is_object())
                throw ProtocolError("result.shapes holds an entry that is not an object");
            ShapeSummary x;
            const double index = number(e, "index");
            if (index < 0)
                throw ProtocolError("result.shapes holds a negative index");
            // Converting a double past size_t's range is undefined (tests/fuzz/fuzz_protocol).
            if (index > 1e9)
                throw ProtocolError("result.shapes holds an index past any bench shape");
            x.index = static_cast<size_t>(index);
            x.label = text(e, "shape");
            x.speedup = number(e, "speedup");
            if (auto t = e.find("timing"); t != e.end() && t->is_object()) {
                x.medianNs = number(*t, "median_ns");
                if (auto b = t->find("baseline"); b != t->end() && b->is_object())
                    x.baselineMedianNs = number(*b, "median_ns");
            }
            if (auto r = e.find("roofline"); r != e.end() && r->is_object()) {
                x.fracBandwidth = number(*r, "frac_bandwidth");
                x.fracCompute = number(*r, "frac_compute");
            }
            if (auto d = e.find("diagnosis"); d != e.end() && d->is_object())
                x.bound = text(*d, "bound");
            if (s.ok && !(x.medianNs > 0))
                throw ProtocolError("result says ok but shape " + x.label + " has no positive median_ns");
            s.shapes.push_back(std::move(x));
        }
    }
    if (auto sc = result.find("screened"); sc != result.end() && sc->is_boolean())
        s.screened = sc->get<bool>();
    if (s.ok && result.contains("timing") && !(s.medianNs > 0))
        throw ProtocolError("result says ok but its timing has no positive median_ns");
    return s;
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
