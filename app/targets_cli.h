#pragma once

#include "core/executor.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace hone::app {

struct TargetsCliOptions {
    std::string file;                 // empty: backends::defaultTargetsPath()
    std::vector<std::string> names;   // `targets check NAME...`; empty: all
    bool json = false;
    bool ceilings = false;            // `targets check --ceilings`: calibrated ceilings too
    CLI::App* check = nullptr;
    // `targets deploy TARGET [--from DIR] [--prefix DIR] [--build-with auto|cmake|c++]`
    CLI::App* deploy = nullptr;
    std::string deployTarget;
    std::string deployFrom;           // empty: the source tree hone was built from
    std::string deployPrefix;         // empty: ~/.local/hone on the target
    std::string deployBuildWith = "auto";
};

/// `hone targets check [NAME...]` and `hone targets deploy TARGET` (docs/REMOTE.md);
/// `--targets FILE` is the global option.
CLI::App* addTargetsCommand(CLI::App& app, TargetsCliOptions& opts);

/// Runs the chosen `targets` subcommand; `localWorker` is the worker of `local` targets.
int runTargets(const TargetsCliOptions& opts, const std::string& localWorker);

/// The executor of target `names` in the targets file, for `hone run --on NAME`; several names,
/// comma-separated, make one pool (backends::TargetPool). `parallel` > 0 overrides each target's
/// parallelism. Remote targets keep their health in backends::defaultHealthPath(). Throws naming
/// the file and the targets it has.
std::unique_ptr<core::Executor> makeTargetExecutor(
    const std::string& file, const std::string& names, int parallel, const std::string& localWorker,
    const std::string& localCacheDir);

} // namespace hone::app
