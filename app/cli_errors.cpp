#include "app/cli_errors.h"

#include "backends/deploy.h"
#include "backends/remote_executor.h"
#include "backends/spool_executor.h"
#include "backends/targets.h"
#include "core/export_bundle.h"
#include "core/expr.h"
#include "core/knobs.h"
#include "core/problem_spec.h"
#include "core/prompt_builder.h"
#include "core/protocol.h"
#include "core/store.h"
#include "core/synthesizer.h"
#include "knowledge/document.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace hone::app {

ExitCode exitCodeOf(const std::exception& e)
{
    if (const auto* c = dynamic_cast<const CliError*>(&e))
        return c->code();
    if (dynamic_cast<const backends::SpoolWaiting*>(&e))
        return ExitCode::Pending;
    if (dynamic_cast<const core::ProblemError*>(&e) || dynamic_cast<const core::KnobError*>(&e)
        || dynamic_cast<const core::ExprError*>(&e) || dynamic_cast<const core::StoreError*>(&e)
        || dynamic_cast<const core::ExportError*>(&e) || dynamic_cast<const core::PromptError*>(&e)
        || dynamic_cast<const backends::TargetsError*>(&e) || dynamic_cast<const knowledge::IngestError*>(&e)
        || dynamic_cast<const knowledge::KbError*>(&e))
        return ExitCode::Input;
    if (const auto* d = dynamic_cast<const backends::DeployError*>(&e); d && d->unreachable)
        return ExitCode::TargetUnreachable;
    if (dynamic_cast<const backends::TargetUnreachable*>(&e))
        return ExitCode::TargetUnreachable;
    if (dynamic_cast<const backends::DeployError*>(&e)
        || dynamic_cast<const core::protocol::ProtocolError*>(&e)
        || dynamic_cast<const core::SynthError*>(&e))
        return ExitCode::Environment;
    if (dynamic_cast<const std::filesystem::filesystem_error*>(&e))
        return ExitCode::Input;
    return ExitCode::Failed;
}

int reportError(const std::exception& e)
{
    std::fflush(stdout);
    std::fprintf(stderr, "hone: error: %s\n", e.what());
    return toInt(exitCodeOf(e));
}

size_t editDistance(const std::string& a, const std::string& b)
{
    const size_t n = a.size(), m = b.size();
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
    for (size_t i = 0; i <= n; ++i)
        d[i][0] = i;
    for (size_t j = 0; j <= m; ++j)
        d[0][j] = j;
    for (size_t i = 1; i <= n; ++i)
        for (size_t j = 1; j <= m; ++j) {
            const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({ d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost });
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[n][m];
}

std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates)
{
    // Option dashes say nothing about the typo; compare the names.
    auto bare = [](const std::string& s) { return s.substr(std::min(s.find_first_not_of('-'), s.size())); };
    const std::string w = bare(word);
    const size_t limit = w.size() < 5 ? 1 : std::max<size_t>(2, w.size() / 3);
    std::string best;
    size_t bestDistance = limit + 1;
    for (const auto& c : candidates) {
        size_t dist = editDistance(w, bare(c));
        // A prefix of a longer name ("--work" for "--workers") is a typo too.
        if (w.size() >= 3 && bare(c).rfind(w, 0) == 0)
            dist = std::min<size_t>(dist, 1);
        if (dist < bestDistance) {
            bestDistance = dist;
            best = c;
        }
    }
    return best;
}

namespace {

/// The chain of chosen commands: hone, then e.g. kb, then search.
std::vector<CLI::App*> chosenChain(CLI::App& app)
{
    std::vector<CLI::App*> chain { &app };
    for (;;) {
        auto subs = chain.back()->get_subcommands();
        if (subs.empty())
            return chain;
        chain.push_back(subs.front());
    }
}

std::string commandLine(const std::vector<CLI::App*>& chain)
{
    std::string s = "hone";
    for (size_t i = 1; i < chain.size(); ++i)
        s += " " + chain[i]->get_name();
    return s;
}

std::vector<std::string> subcommandNames(const CLI::App& app)
{
    std::vector<std::string> names;
    for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
        if (!s->get_name().empty()) {
            names.push_back(s->get_name());
            for (const auto& a : s->get_aliases())
                names.push_back(a);
        }
    return names;
}

std::string joinQuoted(const std::vector<std::string>& names)
{
    std::string s;
    for (const auto& n : names)
        s += (s.empty() ? "" : ", ") + n;
    return s;
}

/// "unknown option '--budgte' (did you mean '--budget'?)" for each word no command took.
std::vector<std::string> describeUnknown(const std::vector<CLI::App*>& chain)
{
    // Options fall through to the commands above, so every option of the chain was valid here.
    std::vector<std::string> options;
    for (CLI::App* a : chain)
        for (const CLI::Option* o : a->get_options())
            for (const auto& l : o->get_lnames())
                options.push_back("--" + l);
    // A word is a command of the deepest command that has subcommands and has not chosen one.
    const CLI::App* commandsOf = nullptr;
    for (CLI::App* a : chain)
        if (!subcommandNames(*a).empty() && a->get_subcommands().empty())
            commandsOf = a;
    std::vector<std::string> lines;
    // Words after an unknown command or option are most likely its arguments: not reported.
    bool unknownBefore = false;
    for (CLI::App* a : chain)
        for (const auto& word : a->remaining()) {
            const bool option = word.size() > 1 && word[0] == '-';
            if (!option && unknownBefore)
                continue;
            unknownBefore = true;
            if (option) {
                const std::string name = word.substr(0, word.find('='));
                const std::string near = closestMatch(name, options);
                lines.push_back("unknown option '" + name + "'"
                    + (near.empty() ? std::string() : "; did you mean '" + near + "'?"));
            } else if (commandsOf) {
                const std::vector<std::string> names = subcommandNames(*commandsOf);
                const std::string near = closestMatch(word, names);
                const std::string where = commandsOf == chain.front() ? "hone" : commandLine(chain);
                lines.push_back("unknown command '" + word + "' for '" + where + "'"
                    + (near.empty() ? "; the commands are " + joinQuoted(names)
                                    : "; did you mean '" + near + "'?"));
            } else {
                lines.push_back("unexpected argument '" + word + "'");
            }
        }
    return lines;
}

std::string describeType(const std::string& type)
{
    if (type == "UINT")
        return "a whole number of 0 or more";
    if (type == "INT")
        return "a whole number";
    return "a number";
}

} // namespace

int reportParseError(CLI::App& app, const CLI::ParseError& e)
{
    const std::string name = e.get_name();
    if (name == "CallForHelp" || name == "CallForAllHelp" || name == "CallForVersion" || name == "Success")
        return app.exit(e); // stdout, status 0
    if (name == "RuntimeError")
        return e.get_exit_code(); // a command's callback printed its error
    const std::vector<CLI::App*> chain = chosenChain(app);
    std::vector<std::string> lines = describeUnknown(chain);
    if (lines.empty()) {
        std::string what = e.what();
        if (name == "RequiredError" && what.rfind("A subcommand", 0) == 0)
            what = "'" + commandLine(chain)
                + "' needs a command: " + joinQuoted(subcommandNames(*chain.back()));
        lines.push_back(what);
    }
    std::fflush(stdout);
    for (const auto& l : lines)
        std::fprintf(stderr, "hone: error: %s\n", l.c_str());
    // CLI11's ExistingFile/ExistingDirectory checks: a missing problem or candidate is an input
    // error like an unreadable one, not a mistyped command line.
    const bool missingInput
        = name == "ValidationError" && std::string(e.what()).find(" does not exist: ") != std::string::npos;
    if (missingInput)
        return toInt(ExitCode::Input);
    std::fprintf(stderr, "Run '%s --help' for the usage.\n", commandLine(chain).c_str());
    return toInt(ExitCode::Usage);
}

void addTypeChecks(CLI::App& app)
{
    for (CLI::Option* o : app.get_options()) {
        std::string type = o->get_type_name();
        type = type.substr(0, type.find(':'));
        if (type != "INT" && type != "UINT" && type != "FLOAT")
            continue;
        const bool whole = type != "FLOAT";
        const bool unsignedOnly = type == "UINT";
        o->transform(CLI::Validator(
            [whole, unsignedOnly, type](std::string& value) -> std::string {
                const char* s = value.c_str();
                char* end = nullptr;
                errno = 0;
                if (whole) {
                    if (unsignedOnly && value.find('-') != std::string::npos)
                        end = const_cast<char*>(s);
                    else
                        std::strtoll(s, &end, 0);
                } else {
                    std::strtod(s, &end);
                }
                if (value.empty() || end == s || *end != '\0' || errno == ERANGE)
                    return "'" + value + "' is not " + describeType(type) + " (" + type + ")";
                return {};
            },
            "", "type"));
    }
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        addTypeChecks(*sub);
}

} // namespace hone::app
