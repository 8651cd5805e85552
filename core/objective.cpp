#include "core/objective.h"

#include <algorithm>
#include <cmath>

namespace hone::core {

double weightedGeomean(const std::vector<double>& speedups, const std::vector<double>& weights)
{
    if (speedups.empty() || speedups.size() != weights.size())
        return 0;
    double logSum = 0;
    double weightSum = 0;
    for (size_t i = 0; i < speedups.size(); ++i) {
        if (!(speedups[i] > 0) || !(weights[i] > 0) || !std::isfinite(speedups[i]) || !std::isfinite(weights[i]))
            return 0;
        logSum += weights[i] * std::log(speedups[i]);
        weightSum += weights[i];
    }
    return std::exp(logSum / weightSum);
}

std::vector<size_t> timingOrder(const ProblemSpec& spec, const Ceilings& ceilings)
{
    const Ceilings c = forComputeUnit(ceilings, spec.computeUnit);
    size_t heaviest = 0;
    double heaviestCost = -1;
    for (size_t i = 0; i < spec.benchShapes.size(); ++i) {
        const nlohmann::json shape = resolveShape(spec, spec.benchShapes[i], "bench[" + std::to_string(i) + "]");
        const double flops = shape["flops"].get<double>();
        const double bytes = shape["bytes"].get<double>();
        const double floor = c.peakGbps > 0 && c.peakGflops > 0
            ? std::max(bytes / (c.peakGbps * 1e9), flops / (c.peakGflops * 1e9))
            : bytes + flops;
        const double weight = i < spec.benchWeights.size() ? spec.benchWeights[i] : 1.0;
        if (weight * floor > heaviestCost) {
            heaviestCost = weight * floor;
            heaviest = i;
        }
    }
    std::vector<size_t> order = { heaviest };
    for (size_t i = 0; i < spec.benchShapes.size(); ++i)
        if (i != heaviest)
            order.push_back(i);
    return order;
}

Objective objectiveOf(const protocol::EvalResult& r, const std::vector<double>& weights, double screenScale)
{
    Objective o;
    if (!r.ok())
        return o;
    const auto& shapes = r.shapeResults();
    if (shapes.empty()) {
        o.value = r.timedSpeedup();
        return o;
    }
    std::vector<double> speedups;
    for (const auto& shape : shapes) {
        const double speedup = shape.speedup.value_or(0.0);
        speedups.push_back(speedup);
        o.weights.push_back(shape.index < weights.size() ? weights[shape.index] : 1.0);
        if (speedup > 0 && speedup < kSlowerThanBaseline)
            o.slowerOn.push_back(shape.label);
    }
    o.screened = r.isScreened();
    if (o.screened) {
        o.value = shapes.front().speedup.value_or(0.0) * (screenScale > 0 ? screenScale : 1.0);
        return o;
    }
    o.value = weightedGeomean(speedups, o.weights);
    return o;
}

protocol::ObjectiveRecord Objective::record() const
{
    protocol::ObjectiveRecord r;
    r.value = value;
    r.screened = screened;
    r.slowerOn = slowerOn;
    r.weights = weights;
    return r;
}

} // namespace hone::core
