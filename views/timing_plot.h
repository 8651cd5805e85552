#pragma once

#include <QString>
#include <QWidget>

#include "core/eval_result.h"

#include <optional>

class QCustomPlot;
class QLabel;
class QStackedWidget;

namespace hone::views {

/// The timing samples of one candidate as a strip plot (sample order on x, time on y), with its
/// median (solid), p10 and p90 (dashed) and the baseline's median as a reference line, and a
/// summary "median 1.23 ms, CV 2.1%, n=25". Shows a message when there is nothing to plot.
class TimingPlot : public QWidget {
    Q_OBJECT
public:
    explicit TimingPlot(QWidget* parent = nullptr);

    /// Plots the result's timing (FORMATS.md, worker protocol); without samples (or without a
    /// result) shows `emptyMessage` (or a default one).
    void setResult(const std::optional<core::protocol::EvalResult>& result, const QString& emptyMessage = {});
    void showMessage(const QString& text);

    bool isEmpty() const;
    QString summary() const;
    QString message() const;
    /// The unit the y axis is in: "ns", "µs", "ms" or "s".
    QString unit() const { return m_unit; }
    QCustomPlot* plot() const { return m_plot; }

    /// "1.23 ms", "850 µs": three significant digits in the largest unit below the value.
    static QString formatNs(double ns);

private:
    QLabel* m_summary = nullptr;
    QLabel* m_message = nullptr;
    QCustomPlot* m_plot = nullptr;
    QStackedWidget* m_stack = nullptr;
    QString m_unit;
};

} // namespace hone::views
