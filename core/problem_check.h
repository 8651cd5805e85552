#pragma once

#include "core/problem_spec.h"

#include <toml++/toml.h>

#include <string>

/// The `[check]` section of problem.toml (docs/FORMATS.md); part of the problem reader.
namespace hone::core::detail {

/// Reads and validates `[check]` (`check` may be null: no section) against the rest of the
/// problem, already read and validated; throws ProblemError naming the line and the fix.
CheckCoverage readCheckSection(const toml::node* check, const std::string& file, const ProblemSpec& spec);

} // namespace hone::core::detail
