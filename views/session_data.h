#pragma once

#include "core/eval_result.h"
#include "core/store.h"

#include <QObject>
#include <QSet>
#include <QStringList>
#include <QString>
#include <QVector>

#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

namespace hone::views {

/// One candidate as the workbench shows it: an immutable value copied out of the engine's events
/// or out of the store. Ids are the session's node ids, dense from 0 (the root).
struct NodeInfo {
    enum class Status { Pending, Ok, Failed };

    qint64 id = 0;
    qint64 parent = -1;
    qint64 seq = 0;                 // proposal order
    QString sourceHash;             // empty for the root
    QString sourceName;
    QString origin;                 // root | seed | mutation | crossover | manual
    QString op;                     // memory operator: inherit | compare | combine | restart
    QString flags;
    nlohmann::json knobs = nlohmann::json::object();
    QVector<qint64> children;

    Status status = Status::Pending;
    bool pruned = false;
    bool boosted = false;
    bool fromCache = false;
    bool hasLlmCall = false;
    QStringList hints;              // the engineer's hints on this node

    double speedup = 0;             // over the baseline seed (weighted geometric mean over a shape set)
    QStringList slowerOn;           // bench shapes where it is slower than the baseline
    bool screened = false;          // timed on the screening shape only: speedup is an estimate
    double medianNs = 0;
    double cv = 0;
    QString bound;                  // memory | compute | latency | occupancy
    QString failureKind;
    QString failureMessage;
    double intensity = 0;           // FLOP per byte (roofline x): measured when the profile counted DRAM bytes
    bool intensityMeasured = false; // intensity from the profile's DRAM bytes, not the problem's byte count
    double gflops = 0;              // achieved (roofline y)
    double fracBandwidth = 0;
    double fracCompute = 0;
    int visits = 0;                 // evaluations in its subtree
    double evaluatedAtSeconds = -1; // since the session's start; -1 while pending
    std::optional<core::protocol::EvalResult> result; // the worker's full result (none while pending)

    bool evaluated() const { return status != Status::Pending; }
    /// "3.41x", "failed: wrong_result", "pending".
    QString statusText() const;
};

/// The device ceilings the roofline is drawn under, from the latest successful result.
struct Ceilings {
    double peakGbps = 0;            // 0 before a result named them
    double peakGflops = 0;
    QString device;
};

/// A sample of the session's progress, for the progress charts.
struct ProgressPoint {
    double seconds = 0;             // since the session's start
    int evaluations = 0;
    int failures = 0;
    double bestSpeedup = 0;
    double evaluationsPerMinute = 0;
    qint64 tokensIn = 0;
    qint64 tokensOut = 0;
    double costUsd = 0;
};

/// The session the workbench shows. Lives on the GUI thread; the engine bridge feeds it in
/// batches (≤ 20 Hz) and a loaded session fills it from the store. Every panel reads it and
/// listens to its signals; no panel touches the engine.
class SessionData : public QObject {
    Q_OBJECT
public:
    explicit SessionData(QObject* parent = nullptr);

    /// A batch of changes, applied at once. `nodes` may hold new nodes (id == size()) and
    /// updated ones; they are applied in order.
    struct Batch {
        std::vector<NodeInfo> nodes;
        std::vector<ProgressPoint> progress;
    };

    /// Starts over with an empty session (no root). Emits sessionReset().
    void clear();
    /// Sets what the session is: id, problem, target, device. Emits sessionReset().
    void setSession(qint64 sessionId, const QString& problemName, const QString& problemDir, const QString& target);
    /// Fills the session from the store (nodes, evaluations, steering, LLM calls). Emits
    /// sessionReset().
    void loadFromStore(const core::Store& store, qint64 sessionId);
    /// Applies a batch: emits nodesAdded for the new ids (one range), nodesChanged for the
    /// updated ones, progressAppended when progress grew.
    void apply(const Batch& batch);

    /// The GUI thread's store (sources, LLM calls, approvals); may be null. Not owned.
    void setStore(const core::Store* store) { m_store = store; }
    const core::Store* store() const { return m_store; }
    /// The text of a stored source, or empty when there is no store or no such source.
    QString sourceText(const QString& hash) const;

    qint64 sessionId() const { return m_sessionId; }
    QString problemName() const { return m_problemName; }
    QString problemDir() const { return m_problemDir; }
    QString target() const { return m_target; }
    QString device() const { return m_device; }
    QString status() const { return m_status; }
    void setStatus(const QString& status);

    int size() const { return static_cast<int>(m_nodes.size()); }
    const std::vector<NodeInfo>& nodes() const { return m_nodes; }
    const NodeInfo* node(qint64 id) const;
    /// The baseline seed (the first seed), or -1.
    qint64 baselineNode() const;
    /// The successful node with the highest speedup, or -1.
    qint64 bestNode() const { return m_best; }
    /// Evaluated successful nodes in evaluation order that raised the best speedup.
    std::vector<qint64> bestTrajectory() const;
    const std::vector<ProgressPoint>& progress() const { return m_progress; }

    /// The device ceilings of the evaluations, from the latest successful result that had them.
    const Ceilings& ceilings() const { return m_ceilings; }

signals:
    void sessionReset();
    void nodesAdded(qint64 first, qint64 last);
    void nodesChanged(const QVector<qint64>& ids);
    void progressAppended();
    void statusChanged(const QString& status);

private:
    void absorb(NodeInfo n, QSet<qint64>& changed, qint64& firstNew, qint64& lastNew);

    const core::Store* m_store = nullptr;
    qint64 m_sessionId = 0;
    QString m_problemName;
    QString m_problemDir;
    QString m_target;
    QString m_device;
    QString m_status;
    std::vector<NodeInfo> m_nodes;
    std::vector<ProgressPoint> m_progress;
    std::vector<qint64> m_evaluationOrder;
    qint64 m_best = -1;
    Ceilings m_ceilings;
};

/// Fills the result-derived fields of `n` (status, speedup, roofline point...) from a worker
/// result.
void applyResult(NodeInfo& n, const core::protocol::EvalResult& result);

/// Which node the panels show; one per window.
class Selection : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    qint64 current() const { return m_current; }
    /// The node to compare against (diff "any node"); -1 for none.
    qint64 other() const { return m_other; }
public slots:
    void setCurrent(qint64 id);
    void setOther(qint64 id);
signals:
    void currentChanged(qint64 id);
    void otherChanged(qint64 id);

private:
    qint64 m_current = -1;
    qint64 m_other = -1;
};

/// What the engineer asks of a node, from any panel (context menus, review). The main window
/// connects these to the engine (steering) and to the panels (inspector, review).
class NodeActions : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
signals:
    void pruneRequested(qint64 node);
    void boostRequested(qint64 node);
    void hintRequested(qint64 node, const QString& text);        // text empty: ask for it
    void editRequested(qint64 node);                              // edit as a new child
    void compareRequested(qint64 node, qint64 other);             // other -1: ask
    void reviewRequested(qint64 node);
};

} // namespace hone::views
