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

Objective objectiveOf(const protocol::EvalSummary& s, const std::vector<double>& weights, double screenScale)
{
    Objective o;
    if (!s.ok)
        return o;
    if (s.shapes.empty()) {
        o.value = s.speedup;
        return o;
    }
    std::vector<double> speedups;
    for (const auto& shape : s.shapes) {
        speedups.push_back(shape.speedup);
        o.weights.push_back(shape.index < weights.size() ? weights[shape.index] : 1.0);
        if (shape.speedup > 0 && shape.speedup < kSlowerThanBaseline)
            o.slowerOn.push_back(shape.label);
    }
    o.screened = s.screened;
    if (s.screened) {
        o.value = s.shapes.front().speedup * (screenScale > 0 ? screenScale : 1.0);
        return o;
    }
    o.value = weightedGeomean(speedups, o.weights);
    return o;
}

nlohmann::json Objective::toJson() const
{
    return { { "value", value }, { "screened", screened }, { "slower_on", slowerOn }, { "weights", weights } };
}

} // namespace hone::core
