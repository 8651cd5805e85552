#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

/// The JSON-lines protocol between the engine's executors and hone-worker (docs/FORMATS.md).
namespace hone::core::protocol {

constexpr int kVersion = 2;

enum class FailureKind {
    BadCandidate,   // no hone_run, refused flags, forbidden construct
    CompileError,
    RuntimeError,   // hone_run returned non-zero or threw
    WrongResult,
    Nan,
    PartialWrite,
    InputMutation,
    Crash,          // the worker died on a signal
    Timeout,
    MemoryLimit,
    ProtocolError,  // unparsable or out-of-protocol output
    WorkerError,    // the worker could not do its job (missing compiler, bad request)
    Suspicious,     // timing that cannot be trusted: below the roofline floor, clocks disagree
    LlmError,       // the engine's, never the worker's: a synthesizer reply that could not be used
};

const char* failureKindName(FailureKind kind);
std::optional<FailureKind> failureKindFromName(std::string_view name);

class ProtocolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// `{"protocol": kVersion, "type": type}`.
nlohmann::json makeMessage(std::string_view type);

/// Parses one line. Throws ProtocolError saying what was wrong: not JSON, not an object, no
/// `protocol` or `type`, or another protocol version (naming both versions).
nlohmann::json parseMessage(std::string_view line);

/// A failed `result` for `id`, as an executor writes it when the worker could not.
nlohmann::json makeFailure(std::string_view id, FailureKind kind, std::string_view stage, std::string_view message);

/// A request's `id` as replies echo it: a string, or an integer written out; empty otherwise.
std::string requestId(const nlohmann::json& request);

/// "SIGSEGV (Segmentation fault)": how failure messages name the signal a process died on.
std::string signalDescription(int sig);

} // namespace hone::core::protocol
