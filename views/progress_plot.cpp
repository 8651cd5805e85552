#include "views/progress_plot.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>

namespace hone::views {

namespace {

constexpr int kReplotMs = 100; // at most ten redraws a second

// 12345 -> "12,345", the same on every machine.
QString grouped(qint64 v)
{
    QString digits = QString::number(v < 0 ? -v : v);
    for (qsizetype i = digits.size() - 3; i > 0; i -= 3)
        digits.insert(i, QLatin1Char(','));
    return v < 0 ? QLatin1Char('-') + digits : digits;
}

QSharedPointer<QCPAxisTickerTime> timeTicker()
{
    auto t = QSharedPointer<QCPAxisTickerTime>::create();
    t->setTimeFormat(QStringLiteral("%h:%m:%s"));
    return t;
}

} // namespace

ProgressPlot::ProgressPlot(SessionData* sessionData, QWidget* parent)
    : QWidget(parent)
    , m_data(sessionData)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);

    m_plot = new QCustomPlot(this);
    m_plot->xAxis->setTicker(timeTicker());
    m_plot->xAxis->setLabel(tr("time since the session started"));
    m_plot->yAxis->setLabel(tr("best speedup (x)"));
    m_plot->yAxis2->setVisible(true);
    m_plot->yAxis2->setLabel(tr("evaluations"));
    m_plot->xAxis->setRange(0, 60);
    m_plot->yAxis->setRange(0, 2);
    m_plot->yAxis2->setRange(0, 10);

    m_evaluations = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis2);
    m_evaluations->setName(tr("evaluations"));
    m_evaluations->setPen(QPen(QColor(31, 119, 180), 1.5));
    m_evaluations->setBrush(QColor(31, 119, 180, 30));
    m_failures = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis2);
    m_failures->setName(tr("failures"));
    m_failures->setPen(QPen(QColor(214, 39, 40), 1.5, Qt::DashLine));
    m_best = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis);
    m_best->setName(tr("best speedup"));
    m_best->setLineStyle(QCPGraph::lsStepLeft);
    m_best->setPen(QPen(QColor(0, 110, 60), 2.5));
    m_plot->legend->setVisible(true);
    QFont small = font();
    small.setPointSizeF(std::max(7.0, small.pointSizeF() - 1));
    m_plot->legend->setFont(small);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    layout->addWidget(m_plot, 1);

    m_stats = new QLabel(this);
    m_stats->setWordWrap(true); // unwrapped, the line would set the dock's minimum width
    m_stats->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_stats->setContentsMargins(6, 0, 6, 0);
    layout->addWidget(m_stats);

    m_tokenPlot = new QCustomPlot(this);
    m_tokenPlot->setFixedHeight(120);
    m_tokenPlot->xAxis->setTicker(timeTicker());
    m_tokenPlot->yAxis->setLabel(tr("tokens"));
    m_tokenPlot->yAxis2->setVisible(true);
    m_tokenPlot->yAxis2->setLabel(tr("USD"));
    m_tokens = m_tokenPlot->addGraph(m_tokenPlot->xAxis, m_tokenPlot->yAxis);
    m_tokens->setName(tr("LLM tokens"));
    m_tokens->setLineStyle(QCPGraph::lsStepLeft);
    m_tokens->setPen(QPen(QColor(148, 103, 189), 2));
    m_cost = m_tokenPlot->addGraph(m_tokenPlot->xAxis, m_tokenPlot->yAxis2);
    m_cost->setName(tr("cost"));
    m_cost->setLineStyle(QCPGraph::lsStepLeft);
    m_cost->setPen(QPen(QColor(255, 127, 14), 1.5, Qt::DashLine));
    m_tokenPlot->legend->setVisible(true);
    m_tokenPlot->legend->setFont(small);
    m_tokenPlot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    m_tokenPlot->setVisible(false);
    layout->addWidget(m_tokenPlot);

    m_timer.setSingleShot(true);
    m_timer.setInterval(kReplotMs);
    connect(&m_timer, &QTimer::timeout, this, &ProgressPlot::flush);
    connect(m_data, &SessionData::sessionReset, this, &ProgressPlot::rebuild);
    connect(m_data, &SessionData::progressAppended, this, &ProgressPlot::appendNew);
    rebuild();
    flush();
}

void ProgressPlot::rebuild()
{
    for (QCPGraph* g : { m_best, m_evaluations, m_failures, m_tokens, m_cost })
        g->data()->clear();
    m_consumed = 0;
    m_maxSeconds = m_maxBest = m_maxCost = 0;
    m_maxEvaluations = 0;
    m_maxTokens = 0;
    appendNew();
}

void ProgressPlot::appendNew()
{
    const auto& points = m_data->progress();
    if (points.size() < m_consumed) { // the session was replaced without a reset
        rebuild();
        return;
    }
    if (points.size() == m_consumed)
        return;
    const auto n = static_cast<qsizetype>(points.size() - m_consumed);
    QVector<double> t, best, evals, fails, tt, tokens, cost;
    t.reserve(n);
    best.reserve(n);
    evals.reserve(n);
    fails.reserve(n);
    for (size_t i = m_consumed; i < points.size(); ++i) {
        const ProgressPoint& p = points[i];
        t.push_back(p.seconds);
        best.push_back(p.bestSpeedup);
        evals.push_back(p.evaluations);
        fails.push_back(p.failures);
        m_maxSeconds = std::max(m_maxSeconds, p.seconds);
        m_maxBest = std::max(m_maxBest, p.bestSpeedup);
        m_maxEvaluations = std::max(m_maxEvaluations, p.evaluations);
        // Token totals are cumulative; points without any say nothing about the model.
        if (p.tokensIn + p.tokensOut > 0) {
            tt.push_back(p.seconds);
            tokens.push_back(static_cast<double>(p.tokensIn + p.tokensOut));
            cost.push_back(p.costUsd);
            m_maxTokens = std::max(m_maxTokens, p.tokensIn + p.tokensOut);
            m_maxCost = std::max(m_maxCost, p.costUsd);
        }
    }
    m_consumed = points.size();
    // Samples arrive in time order, so the containers append without sorting.
    const bool sorted = std::is_sorted(t.begin(), t.end())
        && (t.isEmpty() || m_best->data()->isEmpty() || t.front() >= (m_best->data()->constEnd() - 1)->key);
    m_best->addData(t, best, sorted);
    m_evaluations->addData(t, evals, sorted);
    m_failures->addData(t, fails, sorted);
    if (!tt.isEmpty()) {
        m_tokens->addData(tt, tokens, sorted);
        m_cost->addData(tt, cost, sorted);
    }
    updateStats();
    schedule();
}

void ProgressPlot::schedule()
{
    if (!m_timer.isActive())
        m_timer.start();
}

void ProgressPlot::updateStats()
{
    const auto& points = m_data->progress();
    if (points.empty()) {
        m_stats->setText(tr("No evaluations yet."));
        return;
    }
    const ProgressPoint& last = points.back();
    qint64 tokensIn = 0, tokensOut = 0;
    double cost = 0;
    for (auto it = points.rbegin(); it != points.rend(); ++it)
        if (it->tokensIn + it->tokensOut > 0) {
            tokensIn = it->tokensIn;
            tokensOut = it->tokensOut;
            cost = it->costUsd;
            break;
        }
    QString text = tr("%1 evaluations · %2 failed · best %3x · %4 eval/min")
                       .arg(last.evaluations)
                       .arg(last.failures)
                       .arg(last.bestSpeedup, 0, 'f', 2)
                       .arg(last.evaluationsPerMinute, 0, 'f', 1);
    if (tokensIn + tokensOut > 0)
        text += tr(" · LLM %1 in / %2 out tokens · $%3")
                    .arg(grouped(tokensIn))
                    .arg(grouped(tokensOut))
                    .arg(cost, 0, 'f', cost < 1 ? 4 : 2);
    else
        text += tr(" · no LLM calls");
    m_stats->setText(text);
}

QString ProgressPlot::statsText() const
{
    return m_stats->text();
}

void ProgressPlot::flush()
{
    m_timer.stop();
    const double span = std::max(60.0, m_maxSeconds * 1.05);
    m_plot->xAxis->setRange(0, span);
    m_plot->yAxis->setRange(0, std::max(1.2, m_maxBest * 1.15));
    m_plot->yAxis2->setRange(0, std::max(10.0, m_maxEvaluations * 1.1));
    m_plot->replot(QCustomPlot::rpQueuedRefresh);
    const bool tokens = m_maxTokens > 0;
    m_tokenPlot->setVisible(tokens);
    if (tokens) {
        m_tokenPlot->xAxis->setRange(0, span);
        m_tokenPlot->yAxis->setRange(0, static_cast<double>(m_maxTokens) * 1.15);
        m_tokenPlot->yAxis2->setRange(0, std::max(0.01, m_maxCost * 1.15));
        m_tokenPlot->replot(QCustomPlot::rpQueuedRefresh);
    }
    if (m_data->progress().empty())
        updateStats();
}

} // namespace hone::views
