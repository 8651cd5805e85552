#pragma once

#include "core/protocol.h"
#include "tensors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

/// Correctness of one candidate run against the reference (DESIGN.md §5).
namespace hone::backends {

struct Tolerance {
    double atol = 0;
    double rtol = 0;
};

/// The problem's tolerance for `dtype` ({"f32": {"atol":..,"rtol":..}}), or a default for
/// the dtype when the problem names none (integers compare exactly).
Tolerance toleranceFor(const nlohmann::json& tolerances, hone_dtype dtype);

struct Mismatch {
    std::string output;
    size_t index = 0;
    double got = 0;
    double want = 0;
    bool unwritten = false;
};

/// The record of one (shape, seed) check, as it goes into `checks[]` of a result.
struct CheckOutcome {
    std::string shape;
    uint64_t seed = 0;
    bool ok = true;
    double maxAbsErr = 0;
    double maxRelErr = 0;
    size_t mismatches = 0;
    std::vector<Mismatch> firstMismatches; // at most 5
    std::optional<core::protocol::FailureKind> failure;
    std::string message;
    bool afterTiming = false;

    nlohmann::json toJson() const;
};

/// Compares one candidate run with the reference's. `inputsBefore` are the inputs as
/// generated; `inputsAfter` the candidate's copies after its run, with `checksumsBefore`
/// taken just before it. The first failure decides: input_mutation, then partial_write,
/// nan, wrong_result.
CheckOutcome compareRun(const std::string& shapeLabel, uint64_t seed,
    const std::vector<HostTensor>& inputsBefore, const std::vector<uint64_t>& checksumsBefore,
    const std::vector<HostTensor>& inputsAfter, const std::vector<HostTensor>& got,
    const std::vector<HostTensor>& want, const nlohmann::json& tolerances);

/// The reference must write every element and must not produce a constant float output
/// (a constant kernel would then pass). Empty when fine, else the worker_error message.
/// `allowConstant`: inputs under a `[check]` distribution (constant rows) may give a constant
/// output; the listed inputs already rule out a constant kernel.
std::string referenceProblem(const std::vector<HostTensor>& want, const std::string& shapeLabel, uint64_t seed,
    bool allowConstant = false);

/// Shortest text that reads back as `v` ("0", "1.5", "nan").
std::string formatNumber(double v);

} // namespace hone::backends
