// The worker's request reader as the worker meets a request line: JSON through
// parseEvalRequest, then, for an accepted request, every small input drawn from its `init`
// (HostTensor::fill, the code that turns a request's numbers into buffers). Both may only throw
// RequestError; an accepted request holds what the evaluator relies on.
#include "coverage_checks.h"
#include "eval_request.h"
#include "tensors.h"
#include "tests/fuzz/fuzz_check.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <set>

using namespace hone::backends;

namespace {

void checkAccepted(const EvalRequest& r)
{
    HONE_FUZZ_CHECK(r.seeds.size() >= 3, "a request has at least three seeds");
    HONE_FUZZ_CHECK(std::set<uint64_t>(r.seeds.begin(), r.seeds.end()).size() == r.seeds.size(),
        "the seeds are distinct");
    HONE_FUZZ_CHECK(r.samples >= 20 && r.samples <= 100000, "samples within [20, 100000]");
    HONE_FUZZ_CHECK(r.warmup >= 0 && r.warmup <= 1000, "warmup within [0, 1000]");
    HONE_FUZZ_CHECK(!r.timingShapes.empty() && r.timingShape == r.timingShapes.front(),
        "the timing shape is the first timed shape");
    if (r.wantTime)
        for (size_t i : r.timingShapes)
            HONE_FUZZ_CHECK(i < r.bench.size(), "every timed shape is a bench shape");
    HONE_FUZZ_CHECK(r.compileSeconds > 0, "a positive compile limit");
    if (r.wantCheck)
        HONE_FUZZ_CHECK(!r.check.empty(), "checking has shapes to check");
    for (const auto* set : { &r.check, &r.bench })
        for (const ShapeSpec& s : *set) {
            HONE_FUZZ_CHECK(!s.outputs.empty(), "every shape has an output");
            for (const auto* list : { &s.inputs, &s.outputs })
                for (const TensorDesc& t : *list) {
                    HONE_FUZZ_CHECK(t.shape.size() <= HONE_MAX_RANK, "rank within HONE_MAX_RANK");
                    for (int64_t d : t.shape)
                        HONE_FUZZ_CHECK(d >= 0, "no negative extent");
                }
        }
}

/// Draws every input of at most 64 KiB, the way the evaluator fills its buffers.
void fillInputs(const EvalRequest& r, const std::vector<ShapeSpec>& coverage)
{
    for (const auto* set : { &r.check, &r.bench, &coverage })
        for (const ShapeSpec& s : *set)
            for (size_t i = 0; i < s.inputs.size(); ++i) {
                const TensorDesc& d = s.inputs[i];
                double bytes = static_cast<double>(dtypeSize(d.dtype));
                for (int64_t e : d.shape)
                    bytes *= static_cast<double>(e);
                if (bytes > 64 * 1024)
                    continue;
                HostTensor t(d);
                try {
                    t.fill(r.seeds.front(), s.label, i);
                } catch (const RequestError& e) {
                    HONE_FUZZ_CHECK(e.what()[0] != '\0', "a RequestError says what is wrong");
                    continue;
                }
                if (d.init.is_object() && d.init.value("dist", std::string()) == "offsets" && t.numel() >= 2)
                    for (size_t k = 1; k < t.numel(); ++k)
                        HONE_FUZZ_CHECK(t.at(k - 1) <= t.at(k), "offsets never decrease");
            }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const nlohmann::json request = nlohmann::json::parse(data, data + size, nullptr, false);
    if (request.is_discarded())
        return 0;
    EvalRequest r;
    try {
        r = EvalRequest::fromJson(request);
    } catch (const RequestError& e) {
        HONE_FUZZ_CHECK(e.what()[0] != '\0', "a RequestError says what is wrong");
        return 0;
    }
    checkAccepted(r);
    // The coverage checks (problem.coverage): drawn and resolved shapes, transformed inputs.
    std::vector<ShapeSpec> coverage;
    try {
        for (const CoverageCheck& c : coverageChecks(r)) {
            HONE_FUZZ_CHECK(!c.shape.outputs.empty(), "every coverage shape has an output");
            coverage.push_back(c.shape);
        }
    } catch (const RequestError& e) {
        HONE_FUZZ_CHECK(e.what()[0] != '\0', "a RequestError says what is wrong");
    }
    fillInputs(r, coverage);
    return 0;
}
