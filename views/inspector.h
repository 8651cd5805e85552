#pragma once

#include "views/correctness_model.h"
#include "views/session_data.h"

#include <QString>
#include <QWidget>

#include "core/eval_result.h"

#include <array>
#include <optional>
#include <vector>

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QStandardItem;
class QStandardItemModel;
class QTabWidget;
class QTableView;
class QTextBrowser;

namespace hone::views {

class CodeView;
class DiffView;
class TimingPlot;

/// Everything about the selected candidate: a header (id, source, status, bound, evidence) and
/// tabs for its source and knobs, a diff against its parent, the baseline or any node, the
/// compiler's output, the correctness checks, the timing samples and the model call that wrote
/// it. Reads SessionData and Selection only; asks for edits through NodeActions. Tabs are filled
/// when shown, and a node update that leaves its result alone rebuilds nothing.
class Inspector : public QWidget {
    Q_OBJECT
public:
    enum Tab { SourceTab, DiffTab, CompileTab, CorrectnessTab, TimingTab, LlmTab };
    enum DiffAgainst { AgainstParent, AgainstBaseline, AgainstOther };
    Q_ENUM(DiffAgainst)

    Inspector(
        SessionData* sessionData, Selection* selection, NodeActions* actions, QWidget* parent = nullptr);

    /// The node shown, or -1.
    qint64 node() const { return m_node; }
    /// The header as plain text: "node 17 · tuned.cpp · mutation · 3.41x · memory-bound ...".
    QString headerText() const;
    /// How many times the tabs were rebuilt for a new or changed result.
    int rebuildCount() const { return m_rebuilds; }

    QTabWidget* tabs() const { return m_tabs; }
    CodeView* sourceView() const { return m_source; }
    QStandardItemModel* knobModel() const { return m_knobModel; }
    DiffView* diffView() const { return m_diff; }
    DiffAgainst diffAgainst() const;
    QListWidget* compileMessages() const { return m_messages; }
    QString compileCommand() const;
    QString compileLog() const;
    QStandardItemModel* resourceModel() const { return m_resourceModel; }
    CorrectnessModel* correctnessModel() const { return m_correctness; }
    QString correctnessSummary() const;
    TimingPlot* timingPlot() const { return m_timing; }
    /// The LLM tab as plain text.
    QString llmText() const;
    QPushButton* editButton() const { return m_edit; }

public slots:
    /// Shows the Diff tab against node `other` (-1: against Selection::other(), or asks for an id).
    void compareWith(qint64 other);
    void setDiffAgainst(DiffAgainst against);
    /// Switches to Source, puts the cursor on the line of compile message `index` and marks it.
    void showCompileMessage(int index);

private:
    void showNode(qint64 id, bool force);
    void fillHeader();
    void fillTab(int tab);
    void fillSource();
    void fillDiff();
    void fillCompile();
    void fillCorrectness();
    void fillTiming();
    void fillLlm();
    const NodeInfo* current() const;
    bool messageInCandidate(const core::protocol::CompileMessage& message) const;
    static QStandardItem* readOnlyItem(const QString& text);

    SessionData* m_data;
    Selection* m_selection;
    NodeActions* m_actions;
    qint64 m_node = -1;
    std::optional<NodeInfo> m_shown; // what the tabs were built from
    std::array<bool, 6> m_dirty {};
    int m_rebuilds = 0;
    QString m_sourceHashShown;
    QString m_headerPlain;

    QStackedWidget* m_stack = nullptr;
    QLabel* m_empty = nullptr;
    QLabel* m_header = nullptr;
    QLabel* m_evidence = nullptr;
    QPushButton* m_edit = nullptr;
    QTabWidget* m_tabs = nullptr;

    CodeView* m_source = nullptr;
    QStandardItemModel* m_knobModel = nullptr;
    QTableView* m_knobTable = nullptr;
    QLabel* m_flags = nullptr;

    QComboBox* m_against = nullptr;
    QSpinBox* m_otherId = nullptr;
    DiffView* m_diff = nullptr;

    QLineEdit* m_command = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QListWidget* m_messages = nullptr;
    QLabel* m_messageNote = nullptr;
    QStandardItemModel* m_resourceModel = nullptr;
    QTableView* m_resourceTable = nullptr;
    std::vector<core::protocol::CompileMessage> m_messageList;

    CorrectnessModel* m_correctness = nullptr;
    QLabel* m_correctnessSummary = nullptr;
    TimingPlot* m_timing = nullptr;
    QTextBrowser* m_llm = nullptr;
};

} // namespace hone::views
