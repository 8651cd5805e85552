// The problem reader: problem.toml text and the production shape trace (CSV and JSON).
// The first byte picks the input kind ('t' problem.toml, 'c' trace.csv, 'j' trace.json), the
// rest is the file's text. A reader may only throw ProblemError; anything else escaping (a
// std::out_of_range from a number conversion, a JSON type_error) is a finding.
#include "core/problem_reader.h"
#include "core/shape_trace.h"
#include "tests/fuzz/fuzz_check.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace hone::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1)
        return 0;
    const char kind = static_cast<char>(data[0]);
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        if (kind == 'c' || kind == 'j') {
            auto rows = detail::readShapeTrace(text, kind == 'c' ? "trace.csv" : "trace.json");
            HONE_FUZZ_CHECK(rows.size() <= detail::kMaxProductionShapes, "a trace keeps at most 64 shapes");
            for (const auto& row : rows)
                HONE_FUZZ_CHECK(row.count > 0 && std::isfinite(row.count) && row.line >= 1,
                    "a trace row has a finite positive count and a line");
        } else {
            // A folder that does not exist: `[shapes] production` cannot reach a real file.
            detail::ParsedProblem p = detail::readProblemToml(text, "/nonexistent-hone-fuzz/problem.toml");
            HONE_FUZZ_CHECK(
                p.spec.benchWeights.size() == p.spec.benchShapes.size(), "one weight per bench shape");
            // What an eval request carries: every shape resolved, expressions evaluated.
            (void)resolveProblem(p.spec);
        }
    } catch (const ProblemError& e) {
        HONE_FUZZ_CHECK(e.what()[0] != '\0', "a ProblemError says what is wrong");
    }
    return 0;
}
