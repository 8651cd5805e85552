#pragma once

#include "views/session_data.h"

#include <QTimer>
#include <QWidget>

class QCustomPlot;
class QCPGraph;
class QLabel;

namespace hone::views {

/// The session's progress over time: the best speedup so far (a step line) and the evaluations
/// and failures (right axis), a row of numbers (evaluations per minute, LLM tokens and cost) and,
/// once a model has been called, a small plot of tokens and cost. Points are appended as
/// `progressAppended` arrives; the plot redraws at most ten times a second.
class ProgressPlot : public QWidget {
    Q_OBJECT
public:
    explicit ProgressPlot(SessionData* sessionData, QWidget* parent = nullptr);

    QCustomPlot* plot() const { return m_plot; }
    QCustomPlot* tokenPlot() const { return m_tokenPlot; }
    QCPGraph* bestGraph() const { return m_best; }
    QCPGraph* evaluationsGraph() const { return m_evaluations; }
    QCPGraph* failuresGraph() const { return m_failures; }
    QCPGraph* tokensGraph() const { return m_tokens; }
    QCPGraph* costGraph() const { return m_cost; }
    /// The numbers row as shown.
    QString statsText() const;
    /// Progress points taken in so far.
    int pointsConsumed() const { return static_cast<int>(m_consumed); }
    /// Replots now (the timer does this on its own).
    void flush();

private:
    void rebuild();
    void appendNew();
    void schedule();
    void updateStats();

    SessionData* m_data;
    QCustomPlot* m_plot = nullptr;
    QCustomPlot* m_tokenPlot = nullptr;
    QLabel* m_stats = nullptr;
    QCPGraph* m_best = nullptr;
    QCPGraph* m_evaluations = nullptr;
    QCPGraph* m_failures = nullptr;
    QCPGraph* m_tokens = nullptr;
    QCPGraph* m_cost = nullptr;
    size_t m_consumed = 0;
    double m_maxSeconds = 0;
    double m_maxBest = 0;
    int m_maxEvaluations = 0;
    qint64 m_maxTokens = 0;
    double m_maxCost = 0;
    QTimer m_timer;
};

} // namespace hone::views
