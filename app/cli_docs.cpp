#include "app/cli_docs.h"

#include "app/exit_code.h"

#include <CLI/CLI.hpp>

#include <sstream>
#include <vector>

namespace hone::app {

namespace {

/// The type an option takes as the user should read it: its choices "{auto,cpu,cuda}", its
/// range "INT in [1 - 256]", "DIR", or the plain type; "" for a flag.
std::string typeLabel(const CLI::Option* o)
{
    if (o->get_type_size() == 0)
        return {};
    std::string label;
    std::stringstream parts(o->get_type_name());
    for (std::string part; std::getline(parts, part, ':');)
        if (!part.empty())
            label = part;
    return label;
}

std::vector<std::string> choicesOf(const CLI::Option* o)
{
    const std::string label = typeLabel(o);
    std::vector<std::string> out;
    if (label.size() < 2 || label.front() != '{' || label.back() != '}')
        return out;
    std::stringstream items(label.substr(1, label.size() - 2));
    for (std::string item; std::getline(items, item, ',');)
        out.push_back(item);
    return out;
}

/// "default: 60" unless the description says its default itself (often a sentinel such as 0
/// meaning "as the session ran") or there is none.
std::string defaultNote(const CLI::Option* o)
{
    if (o->get_type_size() == 0 || o->get_default_str().empty() || o->get_default_str() == "[]"
        || o->get_description().find("default") != std::string::npos)
        return {};
    return "default: " + o->get_default_str();
}

std::vector<std::string> optionNames(const CLI::Option* o)
{
    std::vector<std::string> names;
    for (const auto& s : o->get_snames())
        names.push_back("-" + s);
    for (const auto& l : o->get_lnames())
        names.push_back("--" + l);
    return names;
}

bool hidden(const CLI::Option* o)
{
    return o->get_group().empty();
}

std::vector<const CLI::App*> subcommandsOf(const CLI::App& app)
{
    return app.get_subcommands(
        [](const CLI::App* s) { return !s->get_name().empty() && !s->get_group().empty(); });
}

/// One command of the tree, as completion and the man page need it.
struct Command {
    std::string path; // "" for hone itself, "kb search"
    const CLI::App* app;
    std::vector<const CLI::App*> ancestors; // hone first; their options apply too (fallthrough)
};

void collect(const CLI::App& app, const std::string& path, std::vector<const CLI::App*> ancestors,
    std::vector<Command>& out)
{
    out.push_back({ path, &app, ancestors });
    ancestors.push_back(&app);
    for (const CLI::App* s : subcommandsOf(app))
        collect(*s, path.empty() ? s->get_name() : path + " " + s->get_name(), ancestors, out);
}

std::vector<Command> commandTree(const CLI::App& app)
{
    std::vector<Command> out;
    collect(app, "", {}, out);
    return out;
}

std::string roff(const std::string& text)
{
    std::string out;
    for (char c : text) {
        if (c == '\\')
            out += "\\e";
        else if (c == '-')
            out += "\\-";
        else
            out += c;
    }
    if (!out.empty() && (out[0] == '.' || out[0] == '\''))
        out = "\\&" + out;
    return out;
}

std::string usageOf(const Command& c)
{
    std::string usage = c.path.empty() ? "hone" : "hone " + c.path;
    for (const CLI::Option* o :
        c.app->get_options([](const CLI::Option* o) { return o->get_positional(); })) {
        std::string arg = o->get_name(true, false);
        for (char& ch : arg)
            ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        if (o->get_expected_max() > 1)
            arg += "...";
        usage += o->get_required() ? " " + arg : " [" + arg + "]";
    }
    if (!subcommandsOf(*c.app).empty())
        usage += " COMMAND";
    return usage;
}

void manOptions(std::ostringstream& m, const CLI::App& app, bool withHelp)
{
    for (const CLI::Option* o : app.get_options()) {
        if (hidden(o) || o->get_positional() || (!withHelp && o == app.get_help_ptr()))
            continue;
        std::string names;
        for (const auto& n : optionNames(o))
            names += (names.empty() ? "" : ", ") + std::string("\\fB") + roff(n) + "\\fR";
        const std::string label = typeLabel(o);
        m << ".TP\n" << names << (label.empty() ? "" : " \\fI" + roff(label) + "\\fR") << "\n";
        std::string desc = o->get_description();
        if (std::string d = defaultNote(o); !d.empty())
            desc += " (" + d + ")";
        m << roff(desc) << "\n";
    }
}

std::string shellWords(const std::vector<std::string>& words)
{
    std::string s;
    for (const auto& w : words)
        s += (s.empty() ? "" : " ") + w;
    return s;
}

/// Single-quoted for sh and zsh.
std::string quoted(const std::string& s)
{
    std::string out = "'";
    for (char c : s)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

struct CompletionData {
    std::string path;
    std::vector<std::pair<std::string, std::string>> commands; // name, description
    std::vector<std::pair<std::string, std::string>> options; // own and inherited
    std::vector<std::string> valueOptions;
    std::vector<std::pair<std::string, std::vector<std::string>>> choices; // option, values
};

std::vector<CompletionData> completionData(const CLI::App& app)
{
    std::vector<CompletionData> out;
    for (const Command& c : commandTree(app)) {
        CompletionData d;
        d.path = c.path;
        for (const CLI::App* s : subcommandsOf(*c.app))
            d.commands.emplace_back(s->get_name(), s->get_description());
        // A positional with choices (`completion bash|zsh`) completes like a command.
        for (const CLI::Option* o :
            c.app->get_options([](const CLI::Option* o) { return o->get_positional(); }))
            for (const auto& choice : choicesOf(o))
                d.commands.emplace_back(choice, o->get_description());
        std::vector<const CLI::App*> scope = c.ancestors;
        scope.push_back(c.app);
        for (auto it = scope.rbegin(); it != scope.rend(); ++it)
            for (const CLI::Option* o : (*it)->get_options()) {
                if (hidden(o) || o->get_positional())
                    continue;
                for (const auto& n : optionNames(o)) {
                    bool seen = false;
                    for (const auto& [have, desc] : d.options)
                        seen = seen || have == n;
                    if (seen) // the command's own option wins over its parent's
                        continue;
                    d.options.emplace_back(n, o->get_description());
                    if (o->get_type_size() != 0) {
                        d.valueOptions.push_back(n);
                        if (auto ch = choicesOf(o); !ch.empty())
                            d.choices.emplace_back(n, ch);
                    }
                }
            }
        out.push_back(std::move(d));
    }
    return out;
}

std::string bashCompletion(const CLI::App& app)
{
    const auto data = completionData(app);
    std::ostringstream s;
    s << "# bash completion for hone, written by `hone completion bash` from its command definitions.\n"
         "# Install: hone completion bash > ~/.local/share/bash-completion/completions/hone\n\n";
    auto function = [&](const char* name, auto&& words) {
        s << name << "() {\n    case \"$1\" in\n";
        for (const auto& d : data)
            s << "    " << quoted(d.path) << ") echo " << quoted(words(d)) << " ;;\n";
        s << "    esac\n}\n";
    };
    function("_hone_commands", [](const CompletionData& d) {
        std::vector<std::string> w;
        for (const auto& [n, desc] : d.commands)
            w.push_back(n);
        return shellWords(w);
    });
    function("_hone_options", [](const CompletionData& d) {
        std::vector<std::string> w;
        for (const auto& [n, desc] : d.options)
            w.push_back(n);
        return shellWords(w);
    });
    function("_hone_value_options", [](const CompletionData& d) { return shellWords(d.valueOptions); });
    s << "_hone_choices() {\n    case \"$1|$2\" in\n";
    for (const auto& d : data)
        for (const auto& [opt, values] : d.choices)
            s << "    " << quoted(d.path + "|" + opt) << ") echo " << quoted(shellWords(values)) << " ;;\n";
    s << "    esac\n}\n";
    s << R"SH(_hone() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local path="" i w
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $w == -* ]]; then
            [[ " $(_hone_value_options "$path") " == *" $w "* ]] && ((i++))
        elif [[ " $(_hone_commands "$path") " == *" $w "* ]]; then
            path=${path:+$path }$w
        fi
    done
    COMPREPLY=()
    if [[ $prev == -* && " $(_hone_value_options "$path") " == *" $prev "* ]]; then
        local choices
        choices=$(_hone_choices "$path" "$prev")
        [[ -n $choices ]] && COMPREPLY=($(compgen -W "$choices" -- "$cur"))
        return 0  # no choices: the default (file names)
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_hone_options "$path")" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(_hone_commands "$path")" -- "$cur"))
    fi
}
complete -o default -F _hone hone
)SH";
    return s.str();
}

std::string zshCompletion(const CLI::App& app)
{
    const auto data = completionData(app);
    std::ostringstream s;
    s << "#compdef hone\n"
         "# zsh completion for hone, written by `hone completion zsh` from its command definitions.\n"
         "# Install: hone completion zsh > \"${fpath[1]}/_hone\"\n\n";
    auto escape = [](std::string t) { // ':' separates name and description in _describe
        std::string out;
        for (char c : t)
            out += c == ':' ? std::string("\\:") : std::string(1, c);
        return out;
    };
    auto function = [&](const char* name, auto&& entries) {
        s << name << "() {\n    case \"$1\" in\n";
        for (const auto& d : data) {
            s << "    " << quoted(d.path) << ") reply=(";
            for (const auto& [n, desc] : entries(d))
                s << " " << quoted(escape(n) + ":" + desc);
            s << " ) ;;\n";
        }
        s << "    *) reply=() ;;\n    esac\n}\n";
    };
    function("_hone_commands", [](const CompletionData& d) { return d.commands; });
    function("_hone_options", [](const CompletionData& d) { return d.options; });
    s << "_hone_value_options() {\n    case \"$1\" in\n";
    for (const auto& d : data)
        s << "    " << quoted(d.path) << ") reply=(" << shellWords(d.valueOptions) << ") ;;\n";
    s << "    *) reply=() ;;\n    esac\n}\n";
    s << "_hone_choices() {\n    case \"$1|$2\" in\n";
    for (const auto& d : data)
        for (const auto& [opt, values] : d.choices)
            s << "    " << quoted(d.path + "|" + opt) << ") reply=(" << shellWords(values) << ") ;;\n";
    s << "    *) reply=() ;;\n    esac\n}\n";
    // `path` is zsh's array tied to $PATH: the command path is `cmdpath`.
    s << R"SH(_hone() {
    local cmdpath="" w cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    local -a reply entries
    local i
    for ((i = 2; i < CURRENT; i++)); do
        w=${words[i]}
        if [[ $w == -* ]]; then
            _hone_value_options "$cmdpath"
            (( ${reply[(Ie)$w]} )) && ((i++))
        else
            _hone_commands "$cmdpath"
            if (( ${reply[(I)${w}:*]} )); then cmdpath=${cmdpath:+$cmdpath }$w; fi
        fi
    done
    _hone_value_options "$cmdpath"
    if [[ $prev == -* ]] && (( ${reply[(Ie)$prev]} )); then
        _hone_choices "$cmdpath" "$prev"
        if (( $#reply )); then compadd -a reply; else _files; fi
        return
    fi
    if [[ $cur == -* ]]; then
        _hone_options "$cmdpath"; entries=("${reply[@]}")
        _describe -t options 'option' entries
    else
        _hone_commands "$cmdpath"; entries=("${reply[@]}")
        if (( $#entries )); then _describe -t commands 'command' entries; else _files; fi
    fi
}
_hone "$@"
)SH";
    return s.str();
}

} // namespace

std::string HelpFormatter::make_option_name(const CLI::Option* opt, bool positional) const
{
    if (positional)
        return opt->get_name(true, false);
    std::string names;
    for (const auto& n : optionNames(opt))
        names += (names.empty() ? "" : ", ") + n;
    return names;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const
{
    std::string out;
    if (std::string label = typeLabel(opt); !label.empty())
        out += " " + label;
    if (opt->get_type_size() != 0 && opt->get_expected_max() >= CLI::detail::expected_max_vector_size)
        out += " ...";
    if (opt->get_required())
        out += " REQUIRED";
    return out;
}

std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const
{
    std::string desc = opt->get_description();
    if (std::string d = defaultNote(opt); !d.empty())
        desc += " (" + d + ")";
    return desc;
}

std::string exitCodeHelp()
{
    std::string s = "Exit status:\n";
    for (const auto& e : kExitCodes)
        s += "  " + std::to_string(toInt(e.code)) + "  " + e.meaning + "\n";
    return s + "Run 'hone COMMAND --help' for a command's options; 'man hone' for all of them.";
}

std::string manPage(const CLI::App& app, const std::string& version)
{
    std::ostringstream m;
    std::string summary = app.get_description();
    if (summary.rfind("hone: ", 0) == 0)
        summary = summary.substr(6);
    m << ".\\\" Written by `hone --man` from the command definitions; do not edit.\n"
      << ".TH HONE 1 \"\" \"hone " << roff(version) << "\" \"User Commands\"\n"
      << ".SH NAME\nhone \\- " << roff(summary) << "\n"
      << ".SH SYNOPSIS\n.B hone\n[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGUMENTS\\fR]\n"
      << ".SH DESCRIPTION\n"
      << "Hone searches for faster versions of a compute kernel: it proposes candidates, compiles, checks "
         "and "
         "times each in a separate worker process, and keeps the evidence in a SQLite store. The options "
         "below may be given before or after the command. \\fBhone COMMAND \\-\\-help\\fR prints a command's "
         "options with their current defaults.\n"
      << ".SH OPTIONS\n";
    manOptions(m, app, true);
    m << ".SH COMMANDS\n";
    for (const Command& c : commandTree(app)) {
        if (c.path.empty())
            continue;
        m << ".SS \"" << roff(usageOf(c)) << "\"\n" << roff(c.app->get_description()) << "\n";
        for (const CLI::Option* o :
            c.app->get_options([](const CLI::Option* o) { return o->get_positional(); })) {
            std::string arg = o->get_name(true, false);
            for (char& ch : arg)
                ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
            m << ".TP\n\\fI" << roff(arg) << "\\fR\n" << roff(o->get_description()) << "\n";
        }
        manOptions(m, *c.app, false);
    }
    m << ".SH \"EXIT STATUS\"\n";
    for (const auto& e : kExitCodes)
        m << ".TP\n.B " << toInt(e.code) << "\n" << roff(e.meaning) << "\n";
    m << ".SH ENVIRONMENT\n"
      << ".TP\n.B HONE_STORE\nthe store when \\fB\\-\\-store\\fR is not given (else "
         "$XDG_DATA_HOME/hone/hone.db, ~/.local/share/hone/hone.db)\n"
      << ".TP\n.B HONE_CACHE_DIR\ncompiled objects and calibrated ceilings (default ~/.cache/hone)\n"
      << ".TP\n.B HONE_KB\nthe knowledge base file (default: the store's file)\n"
      << ".TP\n.B HONE_RESOURCES\nthe resources folder (kernel header, bundled problems, bench scripts)\n"
      << ".SH \"SEE ALSO\"\n.BR hone\\-workbench (1)\n";
    return m.str();
}

std::string completionScript(const CLI::App& app, const std::string& shell)
{
    if (shell == "bash")
        return bashCompletion(app);
    if (shell == "zsh")
        return zshCompletion(app);
    throw CliError(ExitCode::Usage, "completion: unknown shell '" + shell + "'; expected bash or zsh");
}

} // namespace hone::app
