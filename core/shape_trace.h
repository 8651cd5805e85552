#pragma once

#include "core/problem_spec.h"

#include <string>
#include <string_view>
#include <vector>

/// The production trace a problem's `[shapes] production` names: one row of shape symbols and a
/// count per line, as CSV or JSON (docs/FORMATS.md). Part of the problem reader.
namespace hone::core::detail {

struct TraceRow {
    ShapeBinding shape;
    double count = 0;
    int line = 0; // where the row is in the trace file (1-based)
};

/// At most this many distinct shapes: each is timed for every surviving candidate.
constexpr size_t kMaxProductionShapes = 64;

/// Parses a trace, CSV or JSON by the file name's extension; rows of the same shape are merged
/// (counts summed, the first row's line kept). Throws ProblemError naming `fileName`, the line
/// and the fix.
std::vector<TraceRow> readShapeTrace(std::string_view text, const std::string& fileName);

} // namespace hone::core::detail
