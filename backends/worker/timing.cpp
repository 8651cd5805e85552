#include "timing.h"

#include <algorithm>
#include <cmath>

namespace hone::backends {

double quantile(std::vector<double> values, double q)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    const double frac = pos - static_cast<double>(lo);
    return values[lo] + (values[hi] - values[lo]) * frac;
}

SampleStats summarizeSamples(std::vector<double> samplesNs)
{
    SampleStats s;
    s.medianNs = quantile(samplesNs, 0.5);
    s.p10Ns = quantile(samplesNs, 0.1);
    s.p90Ns = quantile(samplesNs, 0.9);
    if (samplesNs.size() >= 2) {
        double mean = 0;
        for (double v : samplesNs)
            mean += v;
        mean /= static_cast<double>(samplesNs.size());
        double var = 0;
        for (double v : samplesNs)
            var += (v - mean) * (v - mean);
        var /= static_cast<double>(samplesNs.size() - 1);
        s.cv = mean > 0 ? std::sqrt(var) / mean : 0;
    }
    s.samplesNs = std::move(samplesNs);
    return s;
}

nlohmann::json toJson(const SampleStats& s)
{
    return nlohmann::json { { "samples_ns", s.samplesNs }, { "median_ns", s.medianNs }, { "p10_ns", s.p10Ns },
        { "p90_ns", s.p90Ns }, { "cv", s.cv } };
}

} // namespace hone::backends
