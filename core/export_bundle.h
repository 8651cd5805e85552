#pragma once

#include "core/eval_result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace hone::core {

class Store;

/// An export that cannot be written (no such node, no source, a folder that cannot be made).
class ExportError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ExportOptions {
    /// The resources folder that holds include/hone/kernel.h. Empty: core::resourceDirs()
    /// (core/resources.h), then the copy compiled into hone.
    std::filesystem::path resourcesDir;
    /// The review to record in evidence.json ({decision, reviewer, note, ...}); null for none.
    nlohmann::json review;
    /// Export a node whose last re-verification failed (for inspection); refused otherwise.
    bool allowFailedReverification = false;
    /// Also write a PyTorch extension package into DIR/torch (core/export_torch.h).
    bool torch = false;
};

struct ExportResult {
    std::filesystem::path dir;
    std::vector<std::string> files;     // written, relative to dir, in writing order
    bool hasTest = false;               // test_candidate.* and run_test.sh were written
    std::string lang;                   // cpp | cuda
    std::string kernelHeaderFrom;       // where hone/kernel.h was copied from
    std::vector<std::string> warnings;  // what is missing from the bundle, and why
    nlohmann::json evidence;            // what evidence.json holds
    std::string torchSchema;            // the op's schema when options.torch; empty otherwise
};

/// A speedup with a distribution-free confidence interval of the median of the paired ratios
/// baseline_i / candidate_i (the worker times the two interleaved, so sample i of each was taken
/// back to back). The interval is [r_(k), r_(n+1-k)] of the sorted ratios, k from the binomial
/// (sign-test) distribution, so `coverage` >= the confidence asked for whenever n allows it.
struct SpeedupInterval {
    bool valid = false;
    double median = 0;                  // the median ratio: the worker's `timing.speedup`
    double low = 0;
    double high = 0;
    double coverage = 0;                // the interval's exact coverage (0.957 for n = 25)
    int pairs = 0;
    std::string why;                    // when not valid
};

/// The interval from two sample vectors (ns). Invalid when they differ in length or are empty;
/// a pair with a non-positive sample is skipped, as the worker skips it. With too few pairs
/// for `confidence` (fewer than 6 for 95%), low/high are the smallest and largest ratio and
/// `coverage` says what they cover.
SpeedupInterval pairedSpeedupInterval(
    const std::vector<double>& candidateNs, const std::vector<double>& baselineNs, double confidence = 0.95);

/// The interval from a worker result's timing (samples and the interleaved baseline's samples).
SpeedupInterval speedupInterval(const protocol::Timing& timing);

/// The evidence of one node as evidence.json holds it: the candidate and its evaluation, the
/// baseline's evaluation, the speedup with its paired-ratio interval, device, toolchain, and
/// the node's stored reviews. Throws ExportError when the session has no such candidate node.
nlohmann::json buildEvidence(const Store& store, int64_t sessionId, int64_t nodeId);

/// `text` as a C++ string literal (quotes, backslashes and newlines escaped), for generated code.
std::string cString(const std::string& text);

/// Writes `text` to dir/rel (replacing it), executable if asked; ExportError when it cannot.
void writeExportFile(const std::filesystem::path& dir, const std::string& rel, const std::string& text,
    bool executable = false);

/// The text of hone/kernel.h an export copies (options.resourcesDir, $HONE_RESOURCES, the
/// install or source tree, else the copy built into hone).
std::string kernelHeaderText(const ExportOptions& options = {});

/// Writes node `nodeId` of `sessionId` into `dir` (created; files there are replaced): the
/// source, knobs.json, build.sh, evidence.json, hone/kernel.h, and, when the session's problem
/// folder still exists, reference.cpp, problem.toml and a standalone test (test_candidate.cpp
/// or .cu, run_test.sh) that needs only a C++ compiler (and nvcc for CUDA). Throws ExportError for
/// a node whose last re-verification failed, unless options.allowFailedReverification.
ExportResult exportBundle(const Store& store, int64_t sessionId, int64_t nodeId, const std::filesystem::path& dir,
    const ExportOptions& options = {});

} // namespace hone::core
