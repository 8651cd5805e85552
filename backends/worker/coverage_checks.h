#pragma once

#include "eval_request.h"

#include <cstdint>
#include <vector>

/// The checks that problem.coverage adds to the listed ones (docs/FORMATS.md, `[check]`).
namespace hone::backends {

struct CoverageCheck {
    ShapeSpec shape; // label names the shape and distribution: "random[0] (M=13, N=2711) dist large"
    uint64_t seed = 0;
};

/// Every listed check shape under each extra distribution, then `coverage.randomShapes` shapes
/// drawn from the ranges (none of them a listed one), each with its init as listed and with one
/// of the distributions, in turn from a drawn start. Shapes, seeds and the turn all come from
/// `req.coverageSeed`. Throws RequestError when the coverage cannot be drawn or resolved.
std::vector<CoverageCheck> coverageChecks(const EvalRequest& req);

} // namespace hone::backends
