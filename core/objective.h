#pragma once

#include "core/diagnosis.h"
#include "core/problem_spec.h"
#include "core/eval_result.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

/// The search objective over a problem's weighted bench shapes (docs/SEARCH.md, "Shape sets").
namespace hone::core {

/// A per-shape speedup under this counts as slower than the baseline: interleaved medians of two
/// equal kernels differ by a percent or so, and that is no regression.
constexpr double kSlowerThanBaseline = 0.98;
/// Screening: the other shapes are timed only for a candidate whose speedup on the screening
/// shape is at least this fraction of the best full result's there.
constexpr double kScreenFraction = 0.8;

/// exp(sum w ln s / sum w); 0 when the lists differ in length, are empty, or a speedup or weight
/// is not positive (a failed shape has no speedup to average).
double weightedGeomean(const std::vector<double>& speedups, const std::vector<double>& weights);

/// The bench shapes in the order a multi-shape evaluation times them: the heaviest first (weight
/// times the cost model's time floor against `ceilings`; bytes + flops where no ceiling is
/// known), then the others in file order. Ties go to the earlier shape.
std::vector<size_t> timingOrder(const ProblemSpec& spec, const Ceilings& ceilings);

struct Objective {
    double value = 0;                  // weighted geometric mean of the per-shape speedups
    bool screened = false;             // only the screening shape was timed: value is an estimate
    std::vector<std::string> slowerOn; // shapes where the candidate is slower than the baseline
    std::vector<double> weights;       // per timed shape, as `EvalResult::shapes`

    /// What the engine records in a stored result (`result.objective`).
    protocol::ObjectiveRecord record() const;
};

/// The objective of a successful result over `weights` (one per bench shape). Without per-shape
/// timings (a problem with one bench shape) it is the result's own speedup. A screened result
/// has only its first shape: the value is that speedup times `screenScale` (the objective over
/// the screening-shape speedup of the best full result when the candidate was proposed), an
/// estimate that stays under the best because the candidate was screened out below it.
Objective objectiveOf(const protocol::EvalResult& r, const std::vector<double>& weights, double screenScale);

} // namespace hone::core
