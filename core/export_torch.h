#pragma once

#include "core/problem_spec.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace hone::core {

/// One kernel configuration of a PyTorch package: a candidate's source and the knobs and flags
/// it was measured with. A package holds one (a node) or several (a per-shape portfolio).
struct TorchKernel {
    std::string sourceName;              // the candidate's file name, e.g. "rowwise.cu"
    std::string sourceText;
    nlohmann::json knobs = nlohmann::json::object();
    std::string flags;                   // the node's extra compile flags
    std::string label;                   // where it came from, e.g. "node 3/17"
    /// The shapes this kernel was chosen for (portfolio); empty: every shape.
    std::vector<ShapeBinding> shapes;
};

/// How the op reads one shape symbol: from an input's dimension, from a relation with another
/// symbol that every shape entry of the problem satisfies, or as an int argument of the op.
struct TorchSymbol {
    std::string name;
    enum class From { InputDim, Relation, Argument } from = From::InputDim;
    std::string input;                   // InputDim: tensor name
    size_t dim = 0;                      // InputDim: dimension index
    std::string expression;              // Relation: C++ over other symbols, e.g. "B1 - 1"
};

/// The op's interface, derived from problem.toml.
struct TorchSignature {
    std::string opName;                  // "softmax" (torch.ops.hone.softmax)
    std::string schema;                  // "softmax(Tensor x) -> Tensor"
    std::vector<TorchSymbol> symbols;    // in binding order
    std::vector<std::string> argumentOrder; // the Python call: inputs, int symbols, params
};

/// Derives the op's schema and symbol bindings. Throws ExportError when a symbol cannot be
/// bound at all (a problem whose outputs use a symbol no input, relation or argument gives).
TorchSignature torchSignature(const ProblemSpec& spec);

/// C++ source of a per-shape dispatcher over `kernels` (each must be linked as hone_run_k<i>):
/// kConfigs, kSymbolNames, kTable and `std::vector<int> order(const int64_t* symbols)`, the
/// configurations in the order to try them (nearest shape of the table first, in log space).
/// Leaves an anonymous namespace open; needs <cmath>, <cstdint>, <vector>, <algorithm>.
std::string dispatchSource(const std::vector<std::string>& symbols, const std::vector<TorchKernel>& kernels);

/// The configuration sources written for a package or a dispatcher.
struct KernelConfigurations {
    std::vector<std::string> sources;    // k<i>_config.{cpp,cu}, to compile
    std::vector<std::string> files;      // every file written, relative to the folder
    std::string extraFlags;              // the union of the configurations' flags
    std::vector<std::string> warnings;
};

/// Writes kernels/ and one wrapper per configuration (knobs #defined, hone_run renamed
/// hone_run_k<i>, a namespace each when there are several) into `dir`.
KernelConfigurations writeKernelConfigurations(const std::vector<TorchKernel>& kernels, const std::string& lang,
    const std::filesystem::path& dir);

struct TorchPackage {
    std::vector<std::string> files;      // written, relative to the package folder
    std::vector<std::string> warnings;
    TorchSignature signature;
};

/// Writes a PyTorch extension package into `dir` (created): the op registration
/// (TORCH_LIBRARY_FRAGMENT `hone`, so packages of several problems load together; the kernel's device, Meta for torch.compile), one wrapper per kernel
/// configuration, hone/kernel.h, problem.json, torch_ref.py (when the problem has one), a loader
/// module that builds it with torch.utils.cpp_extension, a pytest file and a README.
/// `lang` is cpp or cuda; `kernelHeader` is the text of hone/kernel.h.
TorchPackage writeTorchPackage(const ProblemSpec& spec, const std::vector<TorchKernel>& kernels,
    const std::string& lang, const std::string& kernelHeader, const std::filesystem::path& dir,
    const std::string& cudaArch = "90a");

} // namespace hone::core
