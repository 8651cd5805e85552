#pragma once

#include "core/problem_spec.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

/// The problem.toml reader behind loadProblem/parseProblemToml; not a public interface.
namespace hone::core::detail {

struct Pos {
    int line = 1;
    int column = 1;
};

struct ParsedProblem {
    ProblemSpec spec;
    std::optional<Pos> baselinePos; // set when problem.toml names a baseline
    std::string productionText;     // the trace file's bytes, when [shapes] production names one
};

/// Parses and validates problem.toml text; throws ProblemError. Reference and seeds are not read.
ParsedProblem readProblemToml(std::string_view text, const std::string& fileName);

std::string join(const std::vector<std::string>& items, const char* sep = ", ");
/// "prefix[i]", the field path of an array element.
std::string indexed(const std::string& prefix, size_t i);
nlohmann::json toJson(Value v);

} // namespace hone::core::detail
