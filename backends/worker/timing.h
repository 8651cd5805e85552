#pragma once

#include <nlohmann/json.hpp>

#include <vector>

/// Statistics of timing samples.
namespace hone::backends {

struct SampleStats {
    std::vector<double> samplesNs; // in the order they were taken
    double medianNs = 0;
    double p10Ns = 0;
    double p90Ns = 0;
    double cv = 0; // sample standard deviation / mean
};

/// Linear-interpolated quantile `q` in [0, 1] of `values` (any order); 0 for none.
double quantile(std::vector<double> values, double q);

SampleStats summarizeSamples(std::vector<double> samplesNs);

/// {"samples_ns": [...], "median_ns", "p10_ns", "p90_ns", "cv"}.
nlohmann::json toJson(const SampleStats& s);

} // namespace hone::backends
