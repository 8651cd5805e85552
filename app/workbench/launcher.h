#pragma once

#include "core/engine.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QDoubleSpinBox;
class QFormLayout;
class QTableWidget;

namespace hone::app {

/// The launcher panel: a problem folder, the target, synthesizer, policy and budgets; start,
/// pause and stop; and the store's past sessions, to open or resume.
class Launcher : public QWidget {
    Q_OBJECT
public:
    explicit Launcher(QWidget* parent = nullptr);

    /// The run the form describes; throws std::runtime_error naming the field when it is invalid
    /// (for the LLM synthesizer: provider, URL, model and the key's environment variable are
    /// checked as `hone run --synth llm` checks them; the key itself is never stored).
    core::RunOptions options() const;
    /// LLM settings (the synthesizer switches to "llm").
    void setLlm(const QString& provider, const QString& url, const QString& model, const QString& keyEnv);
    void setProblemDir(const QString& dir);
    void setBudget(int budget);
    void setWorkers(int workers);
    /// Lists "this machine" and the targets of `file` (empty: the default targets file) in "Run
    /// on"; a file that cannot be read is reported in the message line, with its reason.
    void setTargetsFile(const QString& file);
    /// Selects a target of the list by name; false when it is not there.
    bool setRunOn(const QString& target);
    /// The chosen target's name, empty for this machine.
    QString runOn() const;
    /// Reflects the search's state in the buttons.
    void setRunning(bool running, bool paused);
    /// Lists the sessions of `store` (newest first).
    void showSessions(const std::vector<core::SessionRecord>& sessions, const std::map<int64_t, std::pair<int, double>>& stats);
    void setMessage(const QString& text, bool error = false);
    /// The session selected in the list, or -1.
    qint64 selectedSession() const;
    int extraBudget() const;
    /// Narrow enough for a dock on a 1366-pixel screen: the form puts its labels above the
    /// fields when the panel is narrower than labels and fields side by side.
    QSize minimumSizeHint() const override;

signals:
    void startRequested();
    void pauseRequested();
    void resumeRequested();
    void stopRequested();
    void openSessionRequested(qint64 session);
    void resumeSessionRequested(qint64 session, int extraBudget);
    void refreshRequested();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    /// The panel's minimum widths with the labels beside and above the fields (measured once).
    void measureWidths() const;
    QFormLayout* m_form;
    mutable int m_sideBySideWidth = 0;
    mutable int m_stackedWidth = 0;
    QLineEdit* m_problem;
    QComboBox* m_target;
    QComboBox* m_runOn;
    QComboBox* m_synth;
    QWidget* m_llmBox;
    QComboBox* m_provider;
    QLineEdit* m_llmUrl;
    QLineEdit* m_llmModel;
    QLineEdit* m_llmKeyEnv;
    QComboBox* m_policy;
    QComboBox* m_memoryOp;
    QCheckBox* m_warmStart;
    QSpinBox* m_budget;
    QSpinBox* m_workers;
    QSpinBox* m_seed;
    QSpinBox* m_stall;
    QDoubleSpinBox* m_timeLimit;
    QPushButton* m_start;
    QPushButton* m_pause;
    QPushButton* m_stop;
    QLabel* m_message;
    QTableWidget* m_sessions;
    QSpinBox* m_extra;
};

} // namespace hone::app
