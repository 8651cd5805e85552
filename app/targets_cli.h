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
    CLI::App* check = nullptr;
};

/// `hone targets check [NAME...]` (docs/REMOTE.md); `--targets FILE` is the global option.
CLI::App* addTargetsCommand(CLI::App& app, TargetsCliOptions& opts);

/// Runs the chosen `targets` subcommand; `localWorker` is the worker of `local` targets.
int runTargets(const TargetsCliOptions& opts, const std::string& localWorker);

/// The executor of target `names` in the targets file, for `hone run --on NAME`; several names,
/// comma-separated, make one pool (backends::TargetPool). `parallel` > 0 overrides each target's
/// parallelism. Throws naming the file and the targets it has.
std::unique_ptr<core::Executor> makeTargetExecutor(
    const std::string& file, const std::string& names, int parallel, const std::string& localWorker,
    const std::string& localCacheDir);

} // namespace hone::app
