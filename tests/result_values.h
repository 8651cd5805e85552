#pragma once

// Pieces of worker results (docs/FORMATS.md, "Worker protocol") built as the typed values the
// views read, for the view tests: a renamed EvalResult field is a compile error here too.

#include "core/eval_result.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hone::testing {

namespace proto = hone::core::protocol;

/// One comparison with the reference (`checks[]`).
inline proto::Check check(bool ok, double maxAbs, double maxRel, int64_t mismatches, std::string shape = "small[0]",
    int64_t seed = 1)
{
    proto::Check c;
    c.shape = std::move(shape);
    c.seed = seed;
    c.ok = ok;
    c.maxAbsErr = maxAbs;
    c.maxRelErr = maxRel;
    c.mismatches = mismatches;
    return c;
}

/// The compile stage (`compile`) with `log`.
inline proto::CompileInfo compiled(bool ok, std::string log, std::optional<double> seconds = std::nullopt)
{
    proto::CompileInfo c;
    c.ok = ok;
    c.seconds = seconds;
    c.log = std::move(log);
    return c;
}

/// `bench[0]` timed: three samples around `medianNs` (CV 2%) and an interleaved baseline
/// `speedup` times slower (CV 1%).
inline proto::Timing timed(double medianNs, double speedup)
{
    proto::Timing t;
    t.shape = "bench[0]";
    t.stats.samplesNs = { medianNs * 0.98, medianNs, medianNs * 1.03 };
    t.stats.medianNs = medianNs;
    t.stats.p10Ns = medianNs * 0.98;
    t.stats.p90Ns = medianNs * 1.03;
    t.stats.cv = 0.02;
    t.baseline.emplace();
    t.baseline->medianNs = medianNs * speedup;
    t.baseline->cv = 0.01;
    t.speedup = speedup;
    return t;
}

/// A passed result timed as `timing`: compiled (0.7 s, empty log), one clean check.
inline proto::EvalResult passed(proto::Timing timing)
{
    proto::EvalResult r;
    r.status = proto::EvalStatus::Ok;
    r.compile = compiled(true, "", 0.7);
    r.checks = std::vector { check(true, 1e-8, 2e-7, 0) };
    r.timing = std::move(timing);
    return r;
}

} // namespace hone::testing
