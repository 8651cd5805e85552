#pragma once

#include "backends/local_executor.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

/// `hone bench SUITE`: a search per problem of a suite, then a table of seed time, best time,
/// speedup and roofline position, and where PyTorch is importable, eager, torch.compile and
/// torch.compile max-autotune timed on the same inputs (GPU time, host-inclusive, graph replay).
namespace hone::app {

struct BenchOptions {
    std::string suite;              // a folder of problem folders, or one problem folder
    std::string target = "auto";
    int budget = 60;
    int workers = 1;
    uint64_t seed = 1;
    std::vector<std::string> only; // problem names to run; empty = all
    std::string outDir;             // default: bench-results/SUITE-TIMESTAMP
    bool torch = true;
    bool profile = true;            // re-evaluate each best kernel with the Nsight Compute stage
    int torchSamples = 30;
    bool maxAutotune = true;        // also time torch.compile(mode="max-autotune-no-cudagraphs")
};

using ExecutorFactory = std::function<std::unique_ptr<backends::LocalExecutor>(int parallel, const std::string& target)>;

/// Registers `bench` on `app`; returns the subcommand so main can tell whether it was chosen.
CLI::App* addBenchCommand(CLI::App& app, BenchOptions& options);

/// Runs the suite; returns the process exit code.
int runBench(const BenchOptions& options, const std::string& storePath, const ExecutorFactory& makeExecutor);

} // namespace hone::app
