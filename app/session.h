#pragma once

// One session assembly (DESIGN.md §2): the executor, the knowledge base with its knob priors,
// the LLM synthesizer with its knowledge source, the observer chain and the after-run steps,
// wired in one place for `hone run`, `hone resume`, `hone bench` and the workbench.

#include "app/llm_cli.h"
#include "core/engine.h"

#include <memory>
#include <string>
#include <vector>

namespace hone::knowledge {
class KnowledgeBase;
}
namespace hone::backends {
class LocalExecutor;
}

namespace hone::app {

class KbKnowledgeSource;

/// Where and how a session runs.
struct SessionConfig {
    std::string store;       // the store file
    std::string kbPath;      // the knowledge base file; empty: knowledgeBasePath(store)
    std::string workerPath;  // local worker; empty: defaultWorkerPath()
    std::string cacheDir;    // local worker cache; empty: the worker's default
    double memoryMiB = 0;    // per local worker; 0: 4096 MiB for CPU targets, 16384 for GPUs
    std::string targetsFile; // with `on`: evaluate on targets of this file (docs/REMOTE.md)
    std::string on;          // target name(s), comma-separated; empty: this machine
    std::string spool;       // the worker protocol through files (docs/REMOTE.md)
    bool workersGiven = false; // the caller chose opts.workers (else remote targets and spools decide)
    bool resume = false;       // a stored session continues: a spool keeps its stored workers
    bool skills = true;      // knob priors from the knowledge base; a gain writes a skill back
    // Live move skills (docs/SEARCH.md) for the hybrid policy, with `skills` on: this file's
    // (`hone run --move-skill`), else one learnt from the store's other sessions on the same arch
    // and kind of device.
    std::string moveSkillFile;
    bool moveSkillSameFamily = true; // learn from the problem's family only; false: every family
    LlmCliOptions llm;       // output options of the LLM synthesizer
};

/// The knowledge base a session reads and writes, and the one every view of it shows:
/// $HONE_KB when set, else the store's own file.
std::string knowledgeBasePath(const std::string& store);

/// A local executor for `target` (cpu, cuda, hip) with `parallel` workers.
std::unique_ptr<backends::LocalExecutor> makeLocalExecutor(const SessionConfig& config, int parallel, const std::string& target);

/// The parts of one session. Construct it, run the engine with observers(inner), then call
/// afterRun with the report. Throws std::runtime_error (or app::CliError for bad options) with
/// the reason when the executor cannot be built.
class SessionAssembly {
public:
    /// `opts` is the run's options (a resumed session's stored ones), `target` its resolved
    /// target (cpu, cuda, hip) for a local executor. opts.workers is set to the executor's slots
    /// where a remote target or a spool decides them.
    SessionAssembly(const SessionConfig& config, core::Store& store, core::RunOptions& opts, const std::string& target);
    ~SessionAssembly();
    SessionAssembly(const SessionAssembly&) = delete;
    SessionAssembly& operator=(const SessionAssembly&) = delete;

    core::Engine& engine() { return *m_engine; }
    core::Executor& executor() { return *m_executor; }
    /// Null when skills are off or the base cannot be opened (skillsNote says why).
    knowledge::KnowledgeBase* knowledgeBase() { return m_kb.get(); }
    bool llm() const { return m_llm != nullptr; }

    /// The observer chain around `inner`: the LLM's call log, then the knowledge hits.
    core::EngineObserver* observers(core::EngineObserver* inner);

    /// After the run: outcomes of the knowledge hits and the skill write-back. One line per
    /// thing done (warm start, operators, move skill, skills), for the report.
    std::vector<std::string> afterRun(const core::Report& report, const std::string& family);

    /// Whether afterRun changed the knowledge base (hit outcomes recorded, a skill written), so
    /// that views of it reload.
    bool knowledgeChanged() const { return m_knowledgeChanged; }

    /// Why there are no skills this run, or empty.
    const std::string& skillsNote() const { return m_skillsNote; }

private:
    core::Store& m_store;
    std::unique_ptr<core::Executor> m_executor;
    std::unique_ptr<core::Engine> m_engine;
    std::unique_ptr<knowledge::KnowledgeBase> m_kb;
    std::unique_ptr<KbKnowledgeSource> m_kbSource;
    std::unique_ptr<LlmRun> m_llm;
    std::string m_skillsNote;
    std::string m_moveSkillNote; // why a new session got no move skill
    bool m_knowledgeChanged = false;
};

} // namespace hone::app
