#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

/// `hone import kernelbench FILE_OR_DIR... --out DIR`: KernelBench-format Python files
/// (a Model(nn.Module), get_inputs(), get_init_inputs()) become Hone problems with a PyTorch
/// reference. The work is done by resources/python/kernelbench_import.py under a Python that
/// has PyTorch ($HONE_PYTHON, else /usr/bin/python3).
namespace hone::app {

struct ImportOptions {
    std::vector<std::string> paths; // KernelBench files or folders of them
    std::string outDir;
};

/// Registers `import` (with its `kernelbench` subcommand) on `app`; returns the subcommand.
CLI::App* addImportCommand(CLI::App& app, ImportOptions& options);

/// Converts every file; one line per file. Exit code: 0 when all converted, 1 when some could
/// not be (the rest are written), 4 when there is no Python with PyTorch.
int runImport(const ImportOptions& options);

/// The interpreter PyTorch work runs under: $HONE_PYTHON, else /usr/bin/python3, else python3.
std::string pythonWithTorch();

/// A file under resources/ as core::findResource finds it; "" when it is nowhere.
std::string resourceFile(const std::string& relative);

} // namespace hone::app
