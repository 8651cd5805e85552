#include "app/session.h"

#include "app/cli_common.h"
#include "app/cli_errors.h"
#include "app/kb_source.h"
#include "app/targets_cli.h"
#include "backends/local_executor.h"
#include "backends/spool_executor.h"
#include "core/warm_start.h"
#include "knowledge/knowledge_base.h"
#include "knowledge/move_history.h"
#include "knowledge/skills.h"

#include <cstdlib>

namespace hone::app {

std::string knowledgeBasePath(const std::string& store)
{
    const char* env = std::getenv("HONE_KB");
    return env && *env ? std::string(env) : store;
}

std::unique_ptr<backends::LocalExecutor> makeLocalExecutor(const SessionConfig& config, int parallel, const std::string& target)
{
    backends::LocalExecutorConfig cfg;
    cfg.workerPath = config.workerPath.empty() ? defaultWorkerPath() : config.workerPath;
    if (!config.cacheDir.empty())
        cfg.cacheDir = config.cacheDir;
    cfg.parallel = std::max(1, parallel);
    const bool gpu = target == "cuda" || target == "hip";
    cfg.limits.memoryMiB = config.memoryMiB > 0 ? config.memoryMiB : gpu ? 16384 : 4096;
    // A GPU driver reserves address space far beyond what it touches; the RSS watch still applies.
    cfg.limits.addressSpaceLimit = !gpu;
    return std::make_unique<backends::LocalExecutor>(cfg);
}

SessionAssembly::SessionAssembly(
    const SessionConfig& config, core::Store& store, core::RunOptions& opts, const std::string& target)
    : m_store(store)
{
    if (!config.spool.empty()) {
        if (!config.on.empty())
            throw CliError(ExitCode::Usage, "--spool and --on both say where to evaluate; pass one of them");
        m_executor = std::make_unique<backends::SpoolExecutor>(config.spool, config.workersGiven || config.resume ? opts.workers : 16);
        opts.workers = m_executor->slotCount();
    } else if (config.on.empty()) {
        m_executor = makeLocalExecutor(config, opts.workers, target);
    } else {
        m_executor = makeTargetExecutor(config.targetsFile, config.on, config.workersGiven ? opts.workers : 0,
            config.workerPath.empty() ? defaultWorkerPath() : config.workerPath, config.cacheDir);
        opts.workers = m_executor->slotCount();
    }
    m_engine = std::make_unique<core::Engine>(store, *m_executor);

    // Live move skills (docs/SEARCH.md): the file given, else what the store's history says about
    // moves on this machine, learnt once when a new session starts (a resumed one keeps its own).
    if (!config.moveSkillFile.empty()) {
        if (!config.skills)
            throw CliError(ExitCode::Usage, "--move-skill and --no-skills contradict each other; pass one of them");
        if (opts.policy != "hybrid")
            throw CliError(ExitCode::Usage, "--move-skill orders the moves of the hybrid policy; use it with "
                                            "--policy hybrid (the default with --synth knob), not " + opts.policy);
        if (!config.resume) {
            core::MoveSkill skill;
            try {
                skill = knowledge::readMoveSkillFile(config.moveSkillFile);
            } catch (const std::runtime_error& e) {
                throw CliError(ExitCode::Input, e.what());
            }
            opts.moveSkillFrom = "file " + config.moveSkillFile
                + (skill.learntFrom.empty() ? std::string() : " (learnt from " + skill.learntFrom + ")");
            opts.moveSkill = std::make_shared<const core::MoveSkill>(std::move(skill));
        }
    } else if (config.skills && !config.resume) {
        m_engine->setMoveSkillProvider([this, &store, sameFamily = config.moveSkillSameFamily](
                                           const std::string& family, const std::string& device,
                                           const std::string& kind) {
            knowledge::SessionDump where;
            where.device = device;
            where.target = kind;
            knowledge::MoveHistoryQuery q;
            q.family = family;
            q.arch = knowledge::sessionArch(where);
            q.target = kind;
            q.device = device;
            q.sameFamily = sameFamily;
            auto learnt = knowledge::learnMoveHistory(store, q);
            m_moveSkillNote = learnt.note;
            return std::make_pair(learnt.skill, learnt.from);
        });
    }

    // Skills: priors from earlier sessions on the same family and arch, and a new skill when this
    // one beats its baseline by 10%.
    if (config.skills) {
        try {
            m_kb = std::make_unique<knowledge::KnowledgeBase>(
                config.kbPath.empty() ? knowledgeBasePath(config.store) : config.kbPath);
        } catch (const std::exception& e) {
            m_skillsNote = std::string("no skills this run (knowledge base: ") + e.what() + ")";
        }
    }
    if (m_kb)
        m_engine->setKnobPriorProvider([kb = m_kb.get()](const std::string& family, const std::string& device,
                                           const std::string& kind, const core::KnobSpace& space) {
            knowledge::SessionDump where;
            where.device = device;
            where.target = kind;
            return knowledge::priorFor(*kb, family, knowledge::sessionArch(where), space);
        });
    // The LLM synthesizer (the key from its environment variable), with the knowledge base
    // feeding its prompts.
    if (m_kb && opts.synth == "llm")
        m_kbSource = std::make_unique<KbKnowledgeSource>(*m_kb);
    m_llm = attachLlm(*m_engine, opts, config.llm, m_kbSource.get());
}

SessionAssembly::~SessionAssembly() = default;

core::EngineObserver* SessionAssembly::observers(core::EngineObserver* inner)
{
    core::EngineObserver* o = m_llm ? m_llm->observer(inner) : inner;
    if (m_kbSource)
        o = m_kbSource->observer(o);
    return o;
}

std::vector<std::string> SessionAssembly::afterRun(const core::Report& report, const std::string& family)
{
    std::vector<std::string> notes;
    if (!report.warmStart.empty())
        notes.push_back("warm start " + std::to_string(report.warmStart.size()) + " node(s) from earlier sessions: "
            + core::describeWarmStart(report.warmStart, family));
    for (const auto& note : report.warmStartNotes)
        notes.push_back("warm start " + note);
    std::string ops;
    for (const auto& [name, arm] : report.operators)
        if (arm.proposed > 0)
            ops += (ops.empty() ? "" : ", ") + name + " " + std::to_string(arm.proposed) + " ("
                + std::to_string(arm.improved) + " beat their parent)";
    if (!ops.empty())
        notes.push_back("operators  " + report.memoryOp + ": " + ops);
    if (report.moveSkill)
        notes.push_back("move skill " + knowledge::describeMoveSkill(*report.moveSkill, report.moveSkillFrom));
    else if (!m_moveSkillNote.empty())
        notes.push_back("move skill " + m_moveSkillNote);
    if (m_kb && report.progress.session > 0) {
        if (m_engine->sourcesWithPrior() > 0)
            notes.push_back("skills     stored skills biased the knob search of "
                + std::to_string(m_engine->sourcesWithPrior()) + " seed source(s)");
        try {
            m_knowledgeChanged = m_kb->syncOutcomes(m_store, report.progress.session) > 0;
            std::string why;
            const auto added = knowledge::writeBackSkill(*m_kb, m_store, report.progress.session, {}, &why);
            m_knowledgeChanged |= added.has_value();
            if (added)
                notes.push_back("skills     wrote skill " + added->uid + " (version " + std::to_string(added->version)
                    + ") to the knowledge base");
        } catch (const std::exception& e) {
            notes.push_back(std::string("skills     not written: ") + e.what());
        }
    }
    return notes;
}

} // namespace hone::app
