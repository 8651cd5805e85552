#pragma once

#include <CLI/Formatter.hpp>

#include <string>

namespace CLI {
class App;
class Option;
} // namespace CLI

/// Help, man page and shell completion, all written from the CLI11 definitions so that they
/// cannot drift from what `hone` accepts.
namespace hone::app {

/// `--help` without CLI11's quirks: a flag is "--no-skills", not "--no-skills{false}"; an
/// option shows its type or choices and, unless its description already says it, its default.
class HelpFormatter : public CLI::Formatter {
public:
    std::string make_option_name(const CLI::Option* opt, bool positional) const override;
    std::string make_option_opts(const CLI::Option* opt) const override;
    std::string make_option_desc(const CLI::Option* opt) const override;
};

/// "EXIT STATUS" lines for the footer of `hone --help`.
std::string exitCodeHelp();

/// The man page (roff, section 1) of `app` and every subcommand.
std::string manPage(const CLI::App& app, const std::string& version);

/// A completion script for `shell` ("bash" or "zsh") completing the commands, the options of
/// the chosen command and the choices of options that have them. Throws CliError (usage) for
/// another shell.
std::string completionScript(const CLI::App& app, const std::string& shell);

} // namespace hone::app
