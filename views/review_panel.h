#pragma once

#include "views/review_concerns.h"
#include "views/session_data.h"

#include <QString>
#include <QStringList>
#include <QWidget>

class QLabel;
class QLineEdit;
class QListWidget;
class QCheckBox;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;

namespace hone::core {
class Store;
}

namespace hone::views {

class DiffView;
class EvidenceView;

/// Review of one candidate before it ships: its diff against the baseline, the evidence
/// (correctness, timing interval, roofline/occupancy/profile deltas), the node's earlier
/// reviews, and Approve / Reject. A candidate that raises concerns (review_concerns.h: noisy
/// timing, an interval that includes 1x, a suspicious time, failing or slower shapes) is approved
/// only with a typed justification, which the audit row (ApprovalRecord::justification) keeps. Approve exports the bundle (core::exportBundle) into
/// `<export root>/session-S-node-N/` and records an approval with the evidence and the folder;
/// Reject records a rejection and asks, through NodeActions::hintRequested, for the reason to
/// become a hint for the search. Writes need a writable store (setStore). The export and the
/// approval row are written off the GUI thread, through a Store of their own on the same file
/// (one Store per thread); the buttons are disabled and the panel says so meanwhile.
class ReviewPanel : public QWidget {
    Q_OBJECT
public:
    ReviewPanel(SessionData* sessionData, Selection* selection, NodeActions* actions, QWidget* parent = nullptr);

    /// The GUI thread's writable store; null disables Approve and Reject. Not owned.
    void setStore(core::Store* store);
    /// Where bundles go (default ~/hone-exports); a leading ~ is the home folder.
    void setExportRoot(const QString& dir);
    QString exportRoot() const { return m_exportRoot; }
    /// Hone's resources folder for hone/kernel.h (core::ExportOptions); empty: found as hone finds it.
    void setResourcesDir(const QString& dir) { m_resourcesDir = dir; }

    /// The node under review, or -1.
    qint64 node() const { return m_node; }
    /// The last outcome or error shown under the buttons.
    QString message() const;
    /// The node's reviews as listed: "approved by alice at ...: note (exported to DIR)".
    QStringList historyLines() const;
    QString headerText() const;

    DiffView* diffView() const { return m_diff; }
    EvidenceView* evidenceView() const { return m_evidence; }
    QLineEdit* reviewerEdit() const { return m_reviewer; }
    QPlainTextEdit* noteEdit() const { return m_note; }
    /// Where the reviewer says why a candidate with concerns ships anyway (enabled only then).
    QPlainTextEdit* justificationEdit() const { return m_justification; }
    QCheckBox* torchExportBox() const { return m_torch; }
    QTabWidget* tabs() const { return m_tabs; }
    /// The concerns shown for the node under review (reviewConcerns of its result), one line each.
    QStringList concernTexts() const;
    /// When concerns are raised (default: timing CV above 10%).
    void setPolicy(const ReviewPolicy& policy)
    {
        m_policy = policy;
        refresh();
    }
    /// The shortest justification accepted (characters, after trimming).
    static constexpr int kMinJustification = 10;
    QPushButton* approveButton() const { return m_approve; }
    QPushButton* rejectButton() const { return m_reject; }
    /// True while a review is being recorded (an approval's export, a rejection's row).
    bool busy() const { return m_busy; }

public slots:
    /// Shows `node` for review (also connected to NodeActions::reviewRequested).
    void review(qint64 node);
    /// Starts the export and the approval record on a worker thread; approved() (or an error in
    /// message()) follows when it is done. False, with the reason in message(), when it cannot
    /// start.
    bool approve();
    /// Records the rejection on a worker thread; rejected() and the reason as a hint follow when
    /// the row is written (or an error in message()). False, with the reason, when it cannot start.
    bool reject();

signals:
    void approved(qint64 node, const QString& dir);
    /// An approval's export or record failed; message() says why.
    void approvalFailed(qint64 node);
    void rejected(qint64 node);

private:
    void refresh();
    void refreshHistory();
    void showConcerns(const QStringList& concerns);
    void showMessage(const QString& text, bool error);
    /// The reviewer's name, or empty after showing why not.
    /// "re-verified at 1.9x", "FAILED re-verification (kind: message)", or empty when never re-verified.
    QString reverificationText(qint64 node) const;
    QString requireReviewer();
    /// The node a decision applies to, with the reviewer's name; null (the reason shown) when
    /// there is no candidate, no writable store or no name.
    const NodeInfo* decisionTarget(QString& reviewer);
    void setBusy(bool busy);

    SessionData* m_data;
    Selection* m_selection;
    NodeActions* m_actions;
    core::Store* m_store = nullptr;
    QString m_exportRoot;
    QString m_resourcesDir;
    qint64 m_node = -1;
    bool m_busy = false;

    QLabel* m_header = nullptr;
    DiffView* m_diff = nullptr;
    EvidenceView* m_evidence = nullptr;
    QListWidget* m_history = nullptr;
    QLineEdit* m_reviewer = nullptr;
    QPlainTextEdit* m_note = nullptr;
    QPlainTextEdit* m_justification = nullptr;
    QLabel* m_concerns = nullptr;
    QLabel* m_exports = nullptr;
    QTabWidget* m_tabs = nullptr;
    ReviewPolicy m_policy;
    QCheckBox* m_torch = nullptr;
    QPushButton* m_approve = nullptr;
    QPushButton* m_reject = nullptr;
    QPushButton* m_reviewSelected = nullptr;
    QLabel* m_message = nullptr;
};

} // namespace hone::views
