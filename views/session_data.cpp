#include "views/session_data.h"

#include <QDateTime>
#include <QSet>

#include <algorithm>
#include <map>

namespace hone::views {

namespace {

double isoSeconds(const std::string& iso)
{
    auto t = QDateTime::fromString(QString::fromStdString(iso), Qt::ISODateWithMs);
    return t.isValid() ? t.toMSecsSinceEpoch() / 1000.0 : 0.0;
}

} // namespace

QString NodeInfo::statusText() const
{
    if (id == 0)
        return QStringLiteral("root");
    switch (status) {
    case Status::Pending:
        return QStringLiteral("pending");
    case Status::Ok:
        return QString::number(speedup, 'f', 2) + QStringLiteral("x");
    case Status::Failed:
        return QStringLiteral("failed: ") + failureKind;
    }
    return {};
}

void applyResult(NodeInfo& n, const core::protocol::EvalResult& r)
{
    const bool ok = r.ok();
    n.result = r;
    n.status = ok ? NodeInfo::Status::Ok : NodeInfo::Status::Failed;
    n.medianNs = r.medianNs();
    n.cv = r.cv();
    if (ok)
        n.speedup = r.timedSpeedup();
    // Shape sets: the engine's objective (docs/SEARCH.md), written next to the worker's result.
    n.slowerOn.clear();
    n.screened = false;
    if (ok && r.objective) {
        n.speedup = r.objective->value;
        n.screened = r.objective->screened;
        for (const auto& label : r.objective->slowerOn)
            n.slowerOn << QString::fromStdString(label);
    }
    const core::protocol::Roofline roof = r.roofline.value_or(core::protocol::Roofline {});
    n.intensity = roof.intensity.value_or(0.0);
    n.gflops = roof.gflops.value_or(0.0);
    // The problem's intensity is what the candidate must move at least; a profile that counted
    // the DRAM bytes gives what this candidate really moved (docs/WORKBENCH.md, roofline).
    n.intensityMeasured = false;
    const double dramBytes = r.profile ? r.profile->dramBytes.value_or(0.0) : 0.0;
    const double flops = roof.flops.value_or(0.0);
    if (dramBytes > 0 && flops > 0) {
        n.intensity = flops / dramBytes;
        n.intensityMeasured = true;
    }
    n.fracBandwidth = roof.fracBandwidth.value_or(0.0);
    n.fracCompute = roof.fracCompute.value_or(0.0);
    n.bound = QString::fromStdString(r.bound());
    if (!ok) {
        n.speedup = 0;
        if (n.failureKind.isEmpty())
            n.failureKind = QString::fromLatin1(core::protocol::failureKindName(r.failureKind()));
        if (n.failureMessage.isEmpty() && r.failure)
            n.failureMessage = QString::fromStdString(r.failure->message);
    }
}

SessionData::SessionData(QObject* parent)
    : QObject(parent)
{
}

void SessionData::clear()
{
    m_sessionId = 0;
    m_problemName.clear();
    m_problemDir.clear();
    m_target.clear();
    m_device.clear();
    m_status.clear();
    m_nodes.clear();
    m_progress.clear();
    m_evaluationOrder.clear();
    m_best = -1;
    m_ceilings = {};
    emit sessionReset();
}

void SessionData::setSession(qint64 sessionId, const QString& problemName, const QString& problemDir, const QString& target)
{
    clear();
    m_sessionId = sessionId;
    m_problemName = problemName;
    m_problemDir = problemDir;
    m_target = target;
    emit sessionReset();
}

QString SessionData::sourceText(const QString& hash) const
{
    if (!m_store || hash.isEmpty())
        return {};
    auto src = m_store->source(hash.toStdString());
    return src ? QString::fromStdString(src->text) : QString();
}

void SessionData::setStatus(const QString& status)
{
    if (status == m_status)
        return;
    m_status = status;
    emit statusChanged(status);
}

const NodeInfo* SessionData::node(qint64 id) const
{
    if (id < 0 || id >= static_cast<qint64>(m_nodes.size()))
        return nullptr;
    return &m_nodes[static_cast<size_t>(id)];
}

qint64 SessionData::baselineNode() const
{
    for (const auto& n : m_nodes)
        if (n.origin == QLatin1String("seed"))
            return n.id;
    return -1;
}

std::vector<qint64> SessionData::bestTrajectory() const
{
    std::vector<qint64> out;
    double best = 0;
    for (qint64 id : m_evaluationOrder) {
        const auto& n = m_nodes[static_cast<size_t>(id)];
        if (n.status == NodeInfo::Status::Ok && n.speedup > best) {
            best = n.speedup;
            out.push_back(id);
        }
    }
    return out;
}

void SessionData::absorb(NodeInfo n, QSet<qint64>& changed, qint64& firstNew, qint64& lastNew)
{
    const qint64 size = static_cast<qint64>(m_nodes.size());
    const qint64 id = n.id;
    if (n.id < 0 || n.id > size)
        return; // a gap: the bridge sends nodes in id order, so this cannot happen
    const bool fresh = n.id == size;
    const bool wasEvaluated = !fresh && m_nodes[static_cast<size_t>(n.id)].evaluated();
    if (fresh) {
        n.visits = 0;
        m_nodes.push_back(n);
        if (firstNew < 0)
            firstNew = n.id;
        lastNew = n.id;
        if (n.parent >= 0 && n.parent < size + 1 && n.parent != n.id) {
            auto& kids = m_nodes[static_cast<size_t>(n.parent)].children;
            if (!kids.contains(n.id))
                kids.push_back(n.id);
        }
    } else {
        auto& slot = m_nodes[static_cast<size_t>(n.id)];
        n.children = slot.children; // children and visits are kept here, not by the update
        n.visits = slot.visits;
        slot = std::move(n);
        changed.insert(slot.id);
    }
    auto& cur = m_nodes[static_cast<size_t>(id)];
    if (cur.evaluated() && !wasEvaluated) {
        m_evaluationOrder.push_back(cur.id);
        // Visits count evaluations in the subtree, as the engine's tree does.
        for (qint64 a = cur.id; a >= 0 && a < static_cast<qint64>(m_nodes.size());
             a = m_nodes[static_cast<size_t>(a)].parent) {
            ++m_nodes[static_cast<size_t>(a)].visits;
            changed.insert(a);
        }
        if (cur.status == NodeInfo::Status::Ok) {
            if (m_best < 0 || cur.speedup > m_nodes[static_cast<size_t>(m_best)].speedup)
                m_best = cur.id;
            const core::protocol::Roofline* roof = cur.result && cur.result->roofline ? &*cur.result->roofline : nullptr;
            if (roof && roof->peakGbps.value_or(0.0) > 0) {
                m_device = QString::fromStdString(cur.result->device());
                m_ceilings = { *roof->peakGbps, roof->peakGflops.value_or(0.0), m_device };
            }
        }
    }
}

void SessionData::apply(const Batch& batch)
{
    QSet<qint64> dirty;
    qint64 firstNew = -1, lastNew = -1;
    for (const auto& n : batch.nodes)
        absorb(n, dirty, firstNew, lastNew);
    // Updates of nodes that are new in this batch are covered by nodesAdded.
    QVector<qint64> changed;
    for (qint64 id : dirty)
        if (firstNew < 0 || id < firstNew)
            changed.push_back(id);
    std::sort(changed.begin(), changed.end());
    if (firstNew >= 0)
        emit nodesAdded(firstNew, lastNew);
    if (!changed.isEmpty())
        emit nodesChanged(changed);
    if (!batch.progress.empty()) {
        m_progress.insert(m_progress.end(), batch.progress.begin(), batch.progress.end());
        emit progressAppended();
    }
}

void SessionData::loadFromStore(const core::Store& store, qint64 sessionId)
{
    auto session = store.session(sessionId);
    if (!session)
        throw core::StoreError("the store " + store.path().string() + " has no session " + std::to_string(sessionId)
            + "; `hone show` lists the sessions");
    m_sessionId = sessionId;
    m_problemName = QString::fromStdString(session->problemName);
    m_problemDir = QString::fromStdString(session->problemDir);
    m_target = QString::fromStdString(session->target);
    m_status = QString::fromStdString(session->status);
    m_device.clear();
    m_nodes.clear();
    m_progress.clear();
    m_evaluationOrder.clear();
    m_best = -1;
    m_ceilings = {};

    std::map<std::string, QString> names;
    auto nameOf = [&](const std::string& hash) -> QString {
        if (hash.empty())
            return {};
        auto it = names.find(hash);
        if (it != names.end())
            return it->second;
        auto src = store.source(hash);
        return names[hash] = src ? QString::fromStdString(src->name) : QString();
    };

    Batch batch;
    auto records = store.nodes(sessionId);
    std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    std::map<int64_t, core::EvaluationRecord> evals;
    auto evalList = store.evaluations(sessionId);
    for (auto& e : evalList)
        evals[e.nodeId] = e;
    std::map<int64_t, bool> llm;
    for (const auto& c : store.llmCalls(sessionId))
        if (c.nodeId >= 0)
            llm[c.nodeId] = true;

    const double t0 = session->createdAt.empty() ? 0 : isoSeconds(session->createdAt);
    for (const auto& r : records) {
        NodeInfo n;
        n.id = r.id;
        n.parent = r.parentId;
        n.seq = r.seq;
        n.sourceHash = QString::fromStdString(r.sourceHash);
        n.sourceName = nameOf(r.sourceHash);
        n.origin = QString::fromStdString(r.origin);
        n.op = QString::fromStdString(r.op);
        n.flags = QString::fromStdString(r.flags);
        n.knobs = r.knobs;
        n.hasLlmCall = llm.count(r.id) != 0;
        batch.nodes.push_back(std::move(n));
    }
    // Nodes first (in id order), then their evaluations in the order they were stored.
    std::vector<NodeInfo> updates;
    std::sort(evalList.begin(), evalList.end(), [](const auto& a, const auto& b) { return a.createdAt < b.createdAt; });
    int evaluations = 0, failures = 0;
    double best = 0;
    for (const auto& e : evalList) {
        if (e.nodeId < 0 || e.nodeId >= static_cast<int64_t>(batch.nodes.size()))
            continue;
        NodeInfo n = batch.nodes[static_cast<size_t>(e.nodeId)];
        n.failureKind = QString::fromStdString(e.failureKind);
        n.failureMessage = QString::fromStdString(e.failureMessage);
        n.fromCache = e.fromCache;
        applyResult(n, e.evalResult());
        if (e.status == "ok")
            n.speedup = e.speedup;
        n.evaluatedAtSeconds = std::max(0.0, isoSeconds(e.createdAt) - t0);
        ++evaluations;
        if (e.status != "ok")
            ++failures;
        else
            best = std::max(best, e.speedup);
        ProgressPoint p;
        p.seconds = n.evaluatedAtSeconds;
        p.evaluations = evaluations;
        p.failures = failures;
        p.bestSpeedup = best;
        p.evaluationsPerMinute = p.seconds > 0 ? evaluations * 60.0 / p.seconds : 0;
        batch.progress.push_back(p);
        updates.push_back(std::move(n));
    }
    for (const auto& s : store.steering(sessionId)) {
        if (s.outcome != "applied" || s.nodeId < 0 || s.nodeId >= static_cast<int64_t>(batch.nodes.size()))
            continue;
        NodeInfo* target = nullptr;
        for (auto it = updates.rbegin(); it != updates.rend(); ++it)
            if (it->id == s.nodeId) {
                target = &*it;
                break;
            }
        NodeInfo& n = target ? *target : batch.nodes[static_cast<size_t>(s.nodeId)];
        if (s.command == "prune")
            n.pruned = true;
        else if (s.command == "boost")
            n.boosted = true;
        else if (s.command == "hint" && s.payload.contains("text") && s.payload["text"].is_string())
            n.hints << QString::fromStdString(s.payload["text"].get<std::string>());
    }
    // Pruned/hinted nodes never evaluated still need their flags on the base record.
    batch.nodes.insert(batch.nodes.end(), std::make_move_iterator(updates.begin()), std::make_move_iterator(updates.end()));

    Batch nodesOnly;
    nodesOnly.nodes = std::move(batch.nodes);
    QSet<qint64> changed;
    qint64 firstNew = -1, lastNew = -1;
    for (auto& n : nodesOnly.nodes)
        absorb(std::move(n), changed, firstNew, lastNew);
    m_progress = std::move(batch.progress);
    if (auto totals = store.llmTotals(sessionId); totals.calls > 0 && !m_progress.empty()) {
        m_progress.back().tokensIn = totals.tokensIn;
        m_progress.back().tokensOut = totals.tokensOut;
        m_progress.back().costUsd = totals.costUsd;
    }
    emit sessionReset();
}

void Selection::setCurrent(qint64 id)
{
    if (id == m_current)
        return;
    m_current = id;
    emit currentChanged(id);
}

void Selection::setOther(qint64 id)
{
    if (id == m_other)
        return;
    m_other = id;
    emit otherChanged(id);
}

} // namespace hone::views
