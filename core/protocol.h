#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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

/// One timed bench shape of a result's `shapes` (config.timing_shapes).
struct ShapeSummary {
    size_t index = 0;             // into problem.bench
    std::string label;            // "bench[2]"
    double medianNs = 0;
    double baselineMedianNs = 0;
    double speedup = 0;           // 0 without a baseline
    double fracBandwidth = 0;
    double fracCompute = 0;
    std::string bound;
};

/// The fields of a `result` the search needs, read defensively: a result missing them is
/// a protocol error, not a crash.
struct EvalSummary {
    bool ok = false;
    std::string failureKind;      // empty when ok
    std::string failureStage;
    std::string failureMessage;
    double medianNs = 0;
    double baselineMedianNs = 0;  // interleaved baseline, 0 when none
    double speedup = 0;           // baseline / candidate from interleaved samples, 0 when none
    double cv = 0;
    std::string bound;
    std::string evidence;
    double fracBandwidth = 0;
    double fracCompute = 0;
    bool suspicious = false;
    bool compileCached = false;
    std::vector<ShapeSummary> shapes; // per timed shape, in request order; empty for one shape
    bool screened = false;        // the first shape's speedup was under config.screen_speedup
};

EvalSummary summarize(const nlohmann::json& result);

} // namespace hone::core::protocol
