#pragma once

#include "core/eval_result.h"

#include <QString>

#include <vector>

namespace hone::views {

/// Why a candidate's numbers deserve a second look before it ships. An approval despite any
/// concern needs the reviewer's typed justification, which the audit row keeps.
struct ReviewConcern {
    enum class Kind {
        NoisyTiming,          ///< the candidate's or the baseline's timing CV is above the limit
        IntervalIncludesOne,  ///< the 95% interval of the speedup reaches 1x (or below)
        Suspicious,           ///< the diagnosis flags a time below what the roofline allows
        FailingShape,         ///< a correctness check failed on some shape
        SlowerShape,          ///< slower than the baseline on some timed shape
    };
    Kind kind;
    QString text;             ///< one line a reviewer can act on, with the numbers
};

/// When a concern is raised.
struct ReviewPolicy {
    double maxCv = 0.10;      ///< timing coefficient of variation (either side, any timed shape)
};

/// The key of a concern kind in evidence.json: noisy_timing, interval_includes_1x, suspicious,
/// failing_shape, slower_shape.
const char* concernKey(ReviewConcern::Kind kind);

/// The concerns a worker result (NodeInfo::result, with the engine's `objective`) raises.
std::vector<ReviewConcern> reviewConcerns(const core::protocol::EvalResult& result, const ReviewPolicy& policy = {});

} // namespace hone::views
