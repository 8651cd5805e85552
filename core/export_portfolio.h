#pragma once

#include "core/export_bundle.h"
#include "core/export_torch.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace hone::core {

class Store;

/// The fastest evaluated candidate on one bench shape of a session.
struct PortfolioChoice {
    size_t benchIndex = 0;
    std::string shape;                   // "bench[2]"
    ShapeBinding symbols;
    int64_t nodeId = 0;
    double medianNs = 0;
    double speedup = 0;                  // over the baseline on this shape
    size_t config = 0;                   // index into Portfolio::kernels
};

/// A session's per-shape result: for each bench shape the fastest candidate that passed its
/// checks and timed that shape, and the distinct configurations among them.
struct Portfolio {
    std::string lang;                    // cpp | cuda: the language of the session's best node
    std::vector<PortfolioChoice> choices; // one per bench shape that some candidate timed
    std::vector<TorchKernel> kernels;    // each with the shapes it serves
    std::vector<int64_t> kernelNodes;    // the node of each configuration
    std::vector<std::string> warnings;   // shapes no candidate timed, nodes skipped
};

/// Chooses a session's portfolio from its stored per-shape results (evaluations with `shapes`).
/// Nodes that failed, failed re-verification, or are in another language than the best are
/// skipped. Throws ExportError when no evaluation timed more than one shape.
Portfolio choosePortfolio(const Store& store, int64_t sessionId);

/// Writes the portfolio into `dir`: the configurations (kernels/, k<i>_config.*), dispatch.*
/// (an `hone_run` that calls the configuration of the nearest shape of the table, falling back
/// to the others when one refuses a shape), portfolio.json (the table and each choice's
/// measurements), hone/kernel.h and build.sh (one shared object); with options.torch also
/// DIR/torch, the PyTorch package of the same configurations.
ExportResult exportPortfolio(const Store& store, int64_t sessionId, const std::filesystem::path& dir,
    const ExportOptions& options = {});

} // namespace hone::core
