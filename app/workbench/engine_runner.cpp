#include "app/workbench/engine_runner.h"

#include "app/session.h"
#include "core/problem_spec.h"
#include "core/store.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>

#include <chrono>
#include <stdexcept>

namespace hone::app {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

nlohmann::json knobJson(const core::KnobValues& knobs)
{
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : knobs)
        j[k] = v;
    return j;
}

} // namespace

/// Runs on the engine's thread: turns events into values under the runner's mutex. It keeps the
/// last value of every node, so that an update (a result, a prune) carries the whole node.
class EngineRunner::Observer final : public core::EngineObserver {
public:
    Observer(EngineRunner& runner, core::Engine& engine, std::vector<views::NodeInfo> known)
        : m_runner(runner)
        , m_engine(engine)
        , m_t0(std::chrono::steady_clock::now())
        , m_shadow(std::move(known))
    {
    }

    void nodeAdded(const core::Node& n) override
    {
        if (m_shadow.empty() && n.id != 0)
            nodeAdded(m_engine.tree().node(0)); // the engine announces seeds, not the root
        views::NodeInfo info;
        info.id = n.id;
        info.parent = n.parent;
        info.seq = n.id;
        info.sourceHash = qs(n.sourceHash);
        info.sourceName = qs(n.sourceName);
        info.origin = qs(n.origin);
        info.op = qs(n.op);
        info.flags = qs(n.flags);
        info.knobs = knobJson(n.knobs);
        info.pruned = n.pruned;
        if (n.id == 0)
            info.origin = QStringLiteral("root"); // it stands for the problem; never evaluated
        if (static_cast<size_t>(n.id) >= m_shadow.size())
            m_shadow.resize(static_cast<size_t>(n.id) + 1);
        m_shadow[static_cast<size_t>(n.id)] = info;
        push(info);
    }

    void nodeEvaluated(const core::Node& n, const core::protocol::EvalResult& result) override
    {
        if (static_cast<size_t>(n.id) >= m_shadow.size())
            return;
        views::NodeInfo info = m_shadow[static_cast<size_t>(n.id)];
        views::applyResult(info, result);
        info.speedup = result.ok() ? n.speedup : 0;
        info.fromCache = false;
        info.pruned = n.pruned;
        info.evaluatedAtSeconds = seconds();
        m_shadow[static_cast<size_t>(n.id)] = info;
        push(std::move(info));
    }

    void progressChanged(const core::Progress& p) override
    {
        views::ProgressPoint point;
        point.seconds = seconds();
        point.evaluations = p.evaluations;
        point.failures = p.failures;
        point.bestSpeedup = p.bestSpeedup;
        point.evaluationsPerMinute = p.evaluationsPerMinute;
        point.tokensIn = m_tokensIn;
        point.tokensOut = m_tokensOut;
        point.costUsd = m_costUsd;
        std::lock_guard lock(m_runner.m_mutex);
        announce();
        m_runner.m_pending.progress.push_back(point);
    }

    void llmCallRecorded(const core::Node& n, const core::LlmCallRecord& call) override
    {
        m_tokensIn += call.tokensIn;
        m_tokensOut += call.tokensOut;
        m_costUsd += call.costUsd;
        if (static_cast<size_t>(n.id) < m_shadow.size() && !m_shadow[static_cast<size_t>(n.id)].hasLlmCall) {
            m_shadow[static_cast<size_t>(n.id)].hasLlmCall = true;
            push(m_shadow[static_cast<size_t>(n.id)]);
        }
    }

    void steeringApplied(const core::SteeringRecord& rec) override
    {
        if (rec.outcome == "applied" && rec.nodeId >= 0 && static_cast<size_t>(rec.nodeId) < m_shadow.size()) {
            auto& info = m_shadow[static_cast<size_t>(rec.nodeId)];
            bool changed = true;
            if (rec.command == "prune")
                info.pruned = true;
            else if (rec.command == "boost")
                info.boosted = true;
            else if (rec.command == "hint" && rec.payload.contains("text") && rec.payload["text"].is_string())
                info.hints << qs(rec.payload["text"].get<std::string>());
            else
                changed = false;
            if (changed)
                push(info);
        }
        std::lock_guard lock(m_runner.m_mutex);
        m_runner.m_pending.steering.push_back(rec);
    }

private:
    double seconds() const
    {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count();
    }

    void announce() // m_runner.m_mutex held
    {
        if (!m_runner.m_pending.sessionAnnounced && m_engine.sessionId() > 0) {
            m_runner.m_pending.session = m_engine.sessionId();
            m_runner.m_pending.sessionAnnounced = true;
        }
    }

    void push(views::NodeInfo info)
    {
        std::lock_guard lock(m_runner.m_mutex);
        announce();
        m_runner.m_pending.nodes.push_back(std::move(info));
    }

    EngineRunner& m_runner;
    core::Engine& m_engine;
    std::chrono::steady_clock::time_point m_t0;
    std::vector<views::NodeInfo> m_shadow;
    qint64 m_tokensIn = 0;
    qint64 m_tokensOut = 0;
    double m_costUsd = 0;
};

EngineRunner::EngineRunner(views::SessionData* data, QObject* parent)
    : QObject(parent)
    , m_data(data)
{
    // 20 Hz: the engine may report hundreds of events a second; the UI takes them in batches.
    m_flushTimer.setInterval(50);
    connect(&m_flushTimer, &QTimer::timeout, this, &EngineRunner::flush);
}

EngineRunner::~EngineRunner()
{
    stop();
    join();
}

void EngineRunner::start(const core::RunOptions& options, const RunnerConfig& config)
{
    const core::ProblemSpec spec = core::loadProblem(options.problemDir); // throws with the reason
    core::RunOptions opts = options;
    opts.target = core::resolveTarget(spec, opts.target);
    m_data->clear();
    m_data->setSession(0, qs(spec.name), qs(options.problemDir.string()), qs(opts.target));
    launch([opts](core::Engine& engine, core::EngineObserver* observer) { return engine.run(opts, observer); }, opts,
        config, {});
}

void EngineRunner::resume(qint64 session, int extraBudget, const RunnerConfig& config)
{
    core::Store store(config.store);
    auto rec = store.session(session);
    if (!rec)
        throw std::runtime_error("the store " + config.store.string() + " has no session " + std::to_string(session));
    core::RunOptions opts = core::RunOptions::fromJson(rec->config);
    // What is stored so far comes from the store (the engine rebuilds its tree silently); new
    // nodes and results then arrive as events.
    m_data->loadFromStore(store, session);
    launch([session, extraBudget](core::Engine& engine, core::EngineObserver* observer) {
        return engine.resume(session, observer, extraBudget);
    },
        opts, config, m_data->nodes());
    m_announced = true; // the session is known already
    m_data->setStatus(QStringLiteral("running"));
    emit started(session);
}

void EngineRunner::launch(std::function<core::Report(core::Engine&, core::EngineObserver*)> body,
    const core::RunOptions& options, const RunnerConfig& config, std::vector<views::NodeInfo> known)
{
    if (m_running)
        throw std::runtime_error("a search is already running; stop it first");
    join();
    {
        std::lock_guard lock(m_mutex);
        m_pending = Pending {};
    }
    m_announced = false;
    m_paused = false;
    m_running = true;
    m_flushTimer.start();
    m_thread = std::thread([this, body = std::move(body), options, config, known = std::move(known)]() mutable {
        std::string stopReason;
        std::string error;
        try {
            core::Store store(config.store);
            SessionConfig sc;
            sc.store = config.store.string();
            sc.workerPath = config.workerPath;
            sc.cacheDir = config.cacheDir.string();
            sc.targetsFile = config.targetsFile;
            sc.on = config.on;
            sc.workersGiven = true; // the launcher's worker count
            sc.skills = config.skills;
            sc.kbPath = config.knowledgeBase.string();
            core::RunOptions opts = options;
            SessionAssembly session(sc, store, opts, options.target);
            core::Engine& engine = session.engine();
            Observer observer(*this, engine, std::move(known));
            core::EngineObserver* events = session.observers(&observer);
            {
                std::lock_guard lock(m_mutex);
                m_engine = &engine;
                for (auto& c : m_early)
                    engine.steer(std::move(c));
                m_early.clear();
            }
            core::Report report = body(engine, events);
            {
                std::lock_guard lock(m_mutex);
                m_engine = nullptr;
                if (!m_pending.sessionAnnounced && report.progress.session > 0) {
                    m_pending.session = report.progress.session;
                    m_pending.sessionAnnounced = true;
                }
            }
            stopReason = report.stopReason;
            error = report.error;
            session.afterRun(report, {}); // knowledge-hit outcomes and the skill write-back
            if (session.knowledgeChanged()) {
                std::lock_guard lock(m_mutex);
                m_pending.knowledgeChanged = true;
            }
        } catch (const std::exception& e) {
            std::lock_guard lock(m_mutex);
            m_engine = nullptr;
            error = e.what();
        }
        std::lock_guard lock(m_mutex);
        m_pending.finished = std::make_pair(stopReason, error);
    });
}

bool EngineRunner::steer(core::SteeringCommand command)
{
    if (!m_running)
        return false;
    std::lock_guard lock(m_mutex);
    if (m_engine)
        m_engine->steer(std::move(command));
    else
        m_early.push_back(std::move(command));
    return true;
}

void EngineRunner::pause()
{
    core::SteeringCommand c;
    c.kind = core::SteeringCommand::Kind::Pause;
    if (steer(c) && !m_paused) {
        m_paused = true;
        emit pausedChanged(true);
    }
}

void EngineRunner::resumeSearch()
{
    core::SteeringCommand c;
    c.kind = core::SteeringCommand::Kind::Resume;
    if (steer(c) && m_paused) {
        m_paused = false;
        emit pausedChanged(false);
    }
}

void EngineRunner::stop()
{
    if (!m_running)
        return;
    core::SteeringCommand c;
    c.kind = core::SteeringCommand::Kind::Stop;
    std::lock_guard lock(m_mutex);
    if (m_engine) {
        m_engine->steer(c);
        m_engine->requestStop();
    } else {
        m_early.push_back(c);
    }
}

bool EngineRunner::wait(int timeoutMs)
{
    QElapsedTimer t;
    t.start();
    while (m_running) {
        if (t.elapsed() > timeoutMs)
            return false;
        flush();
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    }
    return true;
}

void EngineRunner::join()
{
    if (m_thread.joinable())
        m_thread.join();
}

void EngineRunner::flush()
{
    Pending batch;
    {
        std::lock_guard lock(m_mutex);
        batch.nodes.swap(m_pending.nodes);
        batch.progress.swap(m_pending.progress);
        batch.steering.swap(m_pending.steering);
        batch.session = m_pending.session;
        batch.sessionAnnounced = m_pending.sessionAnnounced;
        batch.finished = m_pending.finished;
        m_pending.finished.reset();
        batch.knowledgeChanged = m_pending.knowledgeChanged;
        m_pending.knowledgeChanged = false;
    }
    if (batch.sessionAnnounced && !m_announced) {
        m_announced = true;
        m_data->setSession(batch.session, m_data->problemName(), m_data->problemDir(), m_data->target());
        m_data->setStatus(QStringLiteral("running"));
        emit started(batch.session);
    }
    if (!batch.nodes.empty() || !batch.progress.empty()) {
        QElapsedTimer t;
        t.start();
        m_data->apply({std::move(batch.nodes), std::move(batch.progress)});
        m_longestApplyMs = std::max(m_longestApplyMs, t.nsecsElapsed() / 1e6);
        ++m_batches;
    }
    for (const auto& s : batch.steering)
        emit steeringApplied(qs(s.command), s.nodeId, qs(s.outcome));
    if (batch.knowledgeChanged)
        emit knowledgeChanged();
    if (batch.finished) {
        join();
        m_running = false;
        m_flushTimer.stop();
        const bool failed = !batch.finished->second.empty();
        m_data->setStatus(failed ? QStringLiteral("failed") : QStringLiteral("finished"));
        if (m_paused) {
            m_paused = false;
            emit pausedChanged(false);
        }
        emit finished(qs(batch.finished->first), qs(batch.finished->second));
    }
}

} // namespace hone::app
