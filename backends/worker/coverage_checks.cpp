#include "coverage_checks.h"

#include "hone/draws.h"

#include <cmath>

namespace hone::backends {

namespace {

/// `shape` with the distribution's transform on the inputs it names (float inputs only).
ShapeSpec underDistribution(const ShapeSpec& shape, const core::CheckDistribution& d)
{
    ShapeSpec s = shape;
    s.label = shape.label + " dist " + d.name;
    s.distribution = d.name;
    s.coverage = true;
    for (auto& in : s.inputs)
        if (isFloat(in.dtype) && d.appliesTo(in.name)) {
            if (!in.init.is_object())
                in.init = nlohmann::json::object();
            in.init["transform"] = d.transformJson();
        }
    return s;
}

} // namespace

std::vector<CoverageCheck> coverageChecks(const EvalRequest& req)
{
    const core::CheckCoverage& cov = req.coverage;
    std::vector<CoverageCheck> out;
    if (cov.empty())
        return out;
    uint64_t state = req.coverageSeed;
    // Input seeds cycle through the check seeds, from a drawn start: the shapes and the
    // distribution turn are the secret's, and the result's seed columns stay the check seeds.
    size_t next = static_cast<size_t>(hone_draws::splitmix64(state) % req.seeds.size());
    auto nextSeed = [&] { return req.seeds[next++ % req.seeds.size()]; };

    for (const auto& d : cov.distributions)
        for (const auto& shape : req.check)
            out.push_back({ underDistribution(shape, d), nextSeed() });

    if (cov.ranges.empty() || cov.randomShapes <= 0)
        return out;
    std::vector<core::ShapeBinding> listed;
    for (const auto& shape : req.check) {
        core::ShapeBinding b;
        for (const auto& [sym, extent] : shape.symbols)
            b[sym] = static_cast<int64_t>(std::llround(extent));
        listed.push_back(std::move(b));
    }
    std::vector<core::ShapeBinding> drawn;
    try {
        drawn = cov.drawShapes(req.coverageSeed, listed, req.params);
    } catch (const std::runtime_error& e) {
        throw RequestError(std::string("problem.coverage: ") + e.what());
    }
    const size_t turn
        = cov.distributions.empty() ? 0 : static_cast<size_t>(hone_draws::splitmix64(state) % cov.distributions.size());
    for (size_t i = 0; i < drawn.size(); ++i) {
        const std::string label = "random[" + std::to_string(i) + "] (" + core::symbolsText(drawn[i]) + ")";
        nlohmann::json resolved;
        try {
            resolved = cov.shape.resolve(drawn[i], req.params, label);
        } catch (const core::ShapeResolveError& e) {
            throw RequestError("problem.coverage: " + e.path() + ": " + e.what());
        }
        ShapeSpec shape = ShapeSpec::fromJson(resolved, "coverage", i);
        shape.coverage = true;
        out.push_back({ shape, nextSeed() });
        if (!cov.distributions.empty())
            out.push_back({ underDistribution(shape, cov.distributions[(turn + i) % cov.distributions.size()]),
                nextSeed() });
    }
    return out;
}

} // namespace hone::backends
