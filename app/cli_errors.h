#pragma once

#include "app/exit_code.h"

#include <exception>
#include <string>
#include <vector>

namespace CLI {
class App;
class ParseError;
} // namespace CLI

/// How `hone` reports what went wrong: one exit code per kind of error (app/exit_code.h),
/// "did you mean" for mistyped commands and options, and type errors that name the option.
namespace hone::app {

/// CliError carries its code; the typed errors of core, backends and knowledge map by what
/// they are about (a problem file is input, a deploy is the environment); anything else is
/// ExitCode::Failed.
ExitCode exitCodeOf(const std::exception& e);

/// Prints "hone: error: WHAT" on stderr and returns exitCodeOf(e) as a process status.
int reportError(const std::exception& e);

/// Damerau-Levenshtein distance (optimal string alignment): "rnu" is 1 from "run".
size_t editDistance(const std::string& a, const std::string& b);

/// The candidate nearest to `word` if it is near enough to be a typo (distance at most 1 for
/// short words, 2 from five letters, a third of the length beyond), else "".
std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates);

/// After a failed parse: help and version go to stdout (status 0); callback errors keep their
/// status; anything else prints "hone: error: ...", a "did you mean" for each unknown command
/// or option, and where to find the usage, and returns ExitCode::Usage.
int reportParseError(CLI::App& app, const CLI::ParseError& e);

/// Gives every numeric option and positional of `app` and its subcommands a type check that
/// runs before the range check: "--budget: 'abc' is not a whole number (INT)".
void addTypeChecks(CLI::App& app);

} // namespace hone::app
