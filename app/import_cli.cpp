#include "app/import_cli.h"

#include "app/exit_code.h"
#include "core/resources.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace hone::app {
namespace fs = std::filesystem;

namespace {

std::string shellQuote(const std::string& s)
{
    std::string out = "'";
    for (char c : s)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

} // namespace

std::string pythonWithTorch()
{
    if (const char* p = std::getenv("HONE_PYTHON"); p && *p)
        return p;
    if (::access("/usr/bin/python3", X_OK) == 0)
        return "/usr/bin/python3";
    return "python3";
}

std::string resourceFile(const std::string& relative)
{
    return core::findResource(relative).string();
}

CLI::App* addImportCommand(CLI::App& app, ImportOptions& o)
{
    auto* imp = app.add_subcommand("import", "make Hone problems from problems written for other tools");
    imp->require_subcommand(1, 1);
    auto* kb = imp->add_subcommand("kernelbench",
        "convert KernelBench-format Python files (Model, get_inputs, get_init_inputs) into problems with a PyTorch "
        "reference.py (docs/FORMATS.md)");
    kb->add_option("paths", o.paths, "KernelBench .py files, or folders of them")->required();
    kb->add_option("--out", o.outDir, "folder that receives one problem folder per file")->required();
    return imp;
}

int runImport(const ImportOptions& o)
{
    const std::string script = resourceFile("python/kernelbench_import.py");
    if (script.empty())
        throw CliError(ExitCode::Environment, core::describeResourceSearch("python/kernelbench_import.py"));
    for (const auto& p : o.paths)
        if (!fs::exists(p))
            throw CliError(ExitCode::Input, p + ": no such file or folder");
    std::error_code ec;
    fs::create_directories(o.outDir, ec);
    if (ec)
        throw CliError(ExitCode::Input, "cannot create " + o.outDir + ": " + ec.message());
    std::string cmd = shellQuote(pythonWithTorch()) + " " + shellQuote(script) + " --out " + shellQuote(o.outDir);
    for (const auto& p : o.paths)
        cmd += " " + shellQuote(p);
    std::fflush(stdout);
    const int rc = std::system(cmd.c_str());
    const int status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (status == 0)
        return toInt(ExitCode::Ok);
    if (status == 1)
        return toInt(ExitCode::Failed); // some files could not be converted; each said why
    if (status == 3)
        return toInt(ExitCode::Environment); // no PyTorch: the script said so
    throw CliError(ExitCode::Environment, "the KernelBench importer (" + script + ") ended with status "
            + std::to_string(status) + "; is " + pythonWithTorch() + " a Python 3 with PyTorch?");
}

} // namespace hone::app
