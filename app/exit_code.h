#pragma once

#include <stdexcept>
#include <string>

namespace hone::app {

/// The exit status of `hone`, one meaning per number (docs/CLI.md, `hone --help`, man hone).
/// Scripts may rely on these; add a code rather than reuse one.
enum class ExitCode : int {
    Ok = 0, ///< done (run, resume, bench: a candidate passed; eval: the candidate passed)
    NoPassingCandidate = 1, ///< no candidate passed the checks (run, resume; bench: on no problem)
    Usage = 2, ///< the command line is wrong: unknown command or option, bad value, missing argument
    Input = 3, ///< an input is missing or invalid: problem, store, session, candidate or other file
    Environment = 4, ///< something local Hone needs is unavailable: worker, compiler, device, LLM endpoint
    Interrupted = 5, ///< stopped by Ctrl-C or SIGTERM; the report of the work done so far is printed
    Pending = 6, ///< a spooled session waits for replies; carry them and `hone resume ID --spool DIR`
    EvaluationFailed = 7, ///< eval: the candidate did not compile, was wrong, crashed or timed out
    TargetUnreachable = 8, ///< a remote target (ssh, Slurm) could not be reached: --on, targets check, deploy
    Failed
    = 9, ///< any other failure; the message says what (kb learn found no skill, import converted not all)
};

struct ExitCodeDoc {
    ExitCode code;
    const char* meaning;
};

/// The table printed by `hone --help`, the man page and docs/CLI.md.
inline constexpr ExitCodeDoc kExitCodes[] = {
    { ExitCode::Ok,
        "success (run, resume, bench: at least one candidate passed the checks; eval: the candidate "
        "passed)" },
    { ExitCode::NoPassingCandidate,
        "no passing candidate: the search ran and no candidate passed the checks (run, resume; bench: "
        "on no problem of the suite)" },
    { ExitCode::Usage,
        "usage error: unknown command or option, a value of the wrong type, a missing argument" },
    { ExitCode::Input,
        "input error: a missing or invalid problem, store, session, candidate, targets, bundle or "
        "configuration file" },
    { ExitCode::Environment,
        "environment error: the worker, a compiler, a device or the LLM endpoint is unavailable or "
        "refused, or a reached target's worker is wrong" },
    { ExitCode::Interrupted, "interrupted by Ctrl-C or SIGTERM (the report so far is printed)" },
    { ExitCode::Pending, "a spooled session waits for replies (--spool; docs/REMOTE.md)" },
    { ExitCode::EvaluationFailed,
        "evaluation failed: the candidate of eval did not compile, gave wrong results, crashed or timed "
        "out" },
    { ExitCode::TargetUnreachable,
        "target unreachable: ssh or Slurm could not reach a remote target (--on, targets check, targets "
        "deploy)" },
    { ExitCode::Failed,
        "another failure, named by the message (kb learn found no skill to learn, import converted "
        "only some files, an unexpected error)" },
};

constexpr int toInt(ExitCode code)
{
    return static_cast<int>(code);
}

/// An error the user can act on, with the exit code that tells a script its kind.
class CliError : public std::runtime_error {
public:
    CliError(ExitCode code, const std::string& message)
        : std::runtime_error(message)
        , m_code(code)
    {
    }
    ExitCode code() const { return m_code; }

private:
    ExitCode m_code;
};

} // namespace hone::app
