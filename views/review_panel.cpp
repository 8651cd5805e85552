#include "views/review_panel.h"

#include "core/export_bundle.h"
#include "core/store.h"
#include "views/diff_view.h"
#include "views/evidence.h"
#include "views/review_concerns.h"

#include <QCheckBox>
#include <QDir>
#include <QFutureWatcher>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <filesystem>

namespace hone::views {

namespace {

QString knobText(const nlohmann::json& knobs)
{
    QStringList parts;
    if (knobs.is_object())
        for (auto it = knobs.begin(); it != knobs.end(); ++it)
            parts << QString::fromStdString(it.key()) + QLatin1Char('=')
                    + QString::fromStdString(it->is_string() ? it->get<std::string>() : it->dump());
    return parts.join(QStringLiteral(", "));
}

QString nodeTitle(const NodeInfo& n)
{
    const QString knobs = knobText(n.knobs);
    return QStringLiteral("node %1 (%2%3)").arg(n.id).arg(n.sourceName, knobs.isEmpty() ? QString() : QStringLiteral(", ") + knobs);
}

QString expandHome(const QString& path)
{
    if (path == QLatin1String("~"))
        return QDir::homePath();
    if (path.startsWith(QLatin1String("~/")))
        return QDir::homePath() + path.mid(1);
    return path;
}

} // namespace

ReviewPanel::ReviewPanel(SessionData* sessionData, Selection* selection, NodeActions* actions, QWidget* parent)
    : QWidget(parent)
    , m_data(sessionData)
    , m_selection(selection)
    , m_actions(actions)
    , m_exportRoot(QDir::homePath() + QStringLiteral("/hone-exports"))
{
    m_header = new QLabel(tr("No candidate under review: pick a node and choose Review."));
    m_header->setWordWrap(true);
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_reviewSelected = new QPushButton(tr("Review selected node"));
    auto* top = new QHBoxLayout;
    top->addWidget(m_header, 1);
    top->addWidget(m_reviewSelected);

    m_diff = new DiffView;
    m_evidence = new EvidenceView;
    m_history = new QListWidget;
    m_history->setObjectName(QStringLiteral("history"));
    // The evidence gets the panel's room; the earlier reviews are a tab of their own.
    m_tabs = new QTabWidget;
    m_tabs->setObjectName(QStringLiteral("reviewTabs"));
    m_tabs->addTab(m_diff, tr("Diff against the baseline"));
    m_tabs->addTab(m_evidence, tr("Evidence"));
    m_tabs->addTab(m_history, tr("Earlier reviews"));

    m_concerns = new QLabel;
    m_concerns->setObjectName(QStringLiteral("concerns"));
    m_concerns->setWordWrap(true);
    m_concerns->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_concerns->setStyleSheet(QStringLiteral("QLabel { background: #fff4e5; border: 1px solid #f0a020; padding: 4px; }"));
    m_concerns->hide();
    m_reviewer = new QLineEdit(qEnvironmentVariable("USER"));
    m_reviewer->setObjectName(QStringLiteral("reviewer"));
    m_reviewer->setPlaceholderText(tr("your name (required)"));
    m_note = new QPlainTextEdit;
    m_note->setObjectName(QStringLiteral("note"));
    m_note->setPlaceholderText(tr("why: what you checked, what worries you; a rejection's note becomes a hint"));
    m_note->setMaximumHeight(60);
    m_justification = new QPlainTextEdit;
    m_justification->setObjectName(QStringLiteral("justification"));
    m_justification->setPlaceholderText(
        tr("required to approve despite the concerns above: why this candidate can ship anyway"));
    m_justification->setMaximumHeight(60);
    m_exports = new QLabel;
    m_exports->setObjectName(QStringLiteral("exports"));
    m_exports->setWordWrap(true);
    m_torch = new QCheckBox(tr("also a PyTorch package (torch.ops.hone.*, docs/TORCH.md)"));
    m_torch->setObjectName(QStringLiteral("exportTorch"));
    m_approve = new QPushButton(tr("Approve and export"));
    m_approve->setObjectName(QStringLiteral("approve"));
    m_reject = new QPushButton(tr("Reject"));
    m_reject->setObjectName(QStringLiteral("reject"));
    m_message = new QLabel;
    m_message->setObjectName(QStringLiteral("message"));
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* form = new QFormLayout;
    form->addRow(tr("Reviewer"), m_reviewer);
    form->addRow(tr("Note"), m_note);
    form->addRow(tr("Justification"), m_justification);
    form->addRow(tr("Exports"), m_exports);
    form->addRow(QString(), m_torch);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(m_reject);
    buttons->addWidget(m_approve);
    auto* bottom = new QWidget;
    auto* bl = new QVBoxLayout(bottom);
    bl->setContentsMargins(0, 0, 0, 0);
    bl->addWidget(m_concerns);
    bl->addLayout(form);
    bl->addLayout(buttons);
    bl->addWidget(m_message);
    bl->addStretch(1);
    // The decision area scrolls when the dock is short, so the evidence never gives up its room.
    auto* bottomScroll = new QScrollArea;
    bottomScroll->setWidget(bottom);
    bottomScroll->setWidgetResizable(true);
    bottomScroll->setFrameShape(QFrame::NoFrame);
    bottomScroll->setMinimumHeight(120);

    auto* split = new QSplitter(Qt::Vertical);
    split->setObjectName(QStringLiteral("reviewSplit"));
    split->addWidget(m_tabs);
    split->addWidget(bottomScroll);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    split->setChildrenCollapsible(false);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(split, 1);

    connect(m_approve, &QPushButton::clicked, this, [this] { approve(); });
    connect(m_reject, &QPushButton::clicked, this, [this] { reject(); });
    connect(m_reviewSelected, &QPushButton::clicked, this, [this] {
        if (m_selection)
            review(m_selection->current());
    });
    if (m_actions)
        connect(m_actions, &NodeActions::reviewRequested, this, &ReviewPanel::review);
    if (m_data) {
        connect(m_data, &SessionData::sessionReset, this, [this] {
            m_node = -1;
            m_message->clear();
            refresh();
        });
        connect(m_data, &SessionData::nodesChanged, this, [this](const QVector<qint64>& ids) {
            const qint64 base = m_data->baselineNode();
            if (m_node >= 0 && (ids.contains(m_node) || ids.contains(base)))
                refresh();
        });
    }
    refresh();
}

void ReviewPanel::setStore(core::Store* store)
{
    m_store = store;
    refresh();
}

void ReviewPanel::setExportRoot(const QString& dir)
{
    m_exportRoot = expandHome(dir);
    if (m_node >= 0)
        refresh(); // the Exports line names the folder
}

QString ReviewPanel::message() const
{
    return m_message->text();
}

QString ReviewPanel::headerText() const
{
    return m_header->text();
}

QStringList ReviewPanel::historyLines() const
{
    QStringList out;
    for (int i = 0; i < m_history->count(); ++i)
        out << m_history->item(i)->text();
    return out;
}

void ReviewPanel::review(qint64 node)
{
    m_node = node;
    m_message->clear();
    refresh();
}

void ReviewPanel::showMessage(const QString& text, bool error)
{
    m_message->setStyleSheet(error ? QStringLiteral("color: #b00020;") : QString());
    m_message->setText(text);
}

void ReviewPanel::refresh()
{
    const NodeInfo* n = m_data ? m_data->node(m_node) : nullptr;
    const bool candidate = n && !n->sourceHash.isEmpty();
    m_approve->setEnabled(candidate && m_store && !m_busy);
    m_reject->setEnabled(candidate && m_store && !m_busy);
    m_approve->setToolTip(m_store ? QString() : tr("no writable store: reviews cannot be recorded"));
    if (!candidate) {
        m_header->setText(m_node < 0 ? tr("No candidate under review: pick a node and choose Review.")
                                     : tr("Node %1 is not a candidate (the root has no source).").arg(m_node));
        m_diff->showMessage(tr("No candidate under review."));
        m_evidence->clear();
        m_history->clear();
        showConcerns({});
        return;
    }
    const NodeInfo* base = m_data->node(m_data->baselineNode());
    const QString reverification = reverificationText(n->id);
    m_header->setText(tr("Reviewing %1 · %2 · %3%4%5")
                          .arg(nodeTitle(*n), n->origin, n->statusText(),
                              n->bound.isEmpty() ? QString() : QStringLiteral(" · ") + n->bound + tr("-bound"),
                              reverification.isEmpty() ? QString() : QStringLiteral(" · ") + reverification));
    if (reverification.startsWith(QStringLiteral("FAILED")))
        m_approve->setToolTip(tr("this node failed its re-verification: it cannot be approved"));
    if (base) {
        DiffSide left {tr("baseline ") + nodeTitle(*base), base->sourceName, m_data->sourceText(base->sourceHash),
            base->knobs, base->flags};
        DiffSide right {nodeTitle(*n), n->sourceName, m_data->sourceText(n->sourceHash), n->knobs, n->flags};
        if (base->id == n->id)
            m_diff->showMessage(tr("Node %1 is the baseline itself: there is nothing to compare it with.").arg(n->id));
        else
            m_diff->setSides(left, right);
    } else {
        m_diff->showMessage(tr("The session has no baseline seed to compare with."));
    }
    m_evidence->setResults(n->result, base ? base->result : std::nullopt);
    showConcerns(n->status == NodeInfo::Status::Ok ? concernTexts() : QStringList());
    m_exports->setText(tr("the bundle (source, build.sh, evidence.json, a standalone test) into %1")
                           .arg(QDir(m_exportRoot).filePath(
                               QStringLiteral("session-%1-node-%2").arg(m_data->sessionId()).arg(n->id))));
    refreshHistory();
}

QStringList ReviewPanel::concernTexts() const
{
    const NodeInfo* n = m_data ? m_data->node(m_node) : nullptr;
    QStringList out;
    if (n && n->result)
        for (const auto& c : reviewConcerns(*n->result, m_policy))
            out << c.text;
    return out;
}

void ReviewPanel::showConcerns(const QStringList& concerns)
{
    m_concerns->setVisible(!concerns.isEmpty());
    m_justification->setEnabled(!concerns.isEmpty());
    m_justification->setPlaceholderText(concerns.isEmpty()
            ? tr("not needed: this candidate raises no concerns")
            : tr("required to approve despite the concerns above: why this candidate can ship anyway"));
    if (concerns.isEmpty()) {
        m_concerns->clear();
        return;
    }
    // Each concern escaped on its own: escaping the joined list would show the tags as text.
    QStringList items;
    for (const QString& c : concerns)
        items << QStringLiteral("<li>") + c.toHtmlEscaped() + QStringLiteral("</li>");
    m_concerns->setText(tr("<b>%n concern(s): approval needs a justification.</b>", nullptr, int(concerns.size()))
        + QStringLiteral("<ul style=\"margin-left: -20px\">") + items.join(QString()) + QStringLiteral("</ul>"));
}

QString ReviewPanel::reverificationText(qint64 node) const
{
    const core::Store* store = m_store ? m_store : (m_data ? m_data->store() : nullptr);
    if (!store || !m_data)
        return {};
    try {
        std::optional<core::ReverificationRecord> last;
        for (auto& r : store->reverifications(m_data->sessionId()))
            if (r.nodeId == node)
                last = std::move(r);
        if (!last)
            return {};
        if (last->status == "verified")
            return tr("re-verified at %1x").arg(last->speedup, 0, 'f', 2);
        return tr("FAILED re-verification (%1: %2)")
            .arg(QString::fromStdString(last->failureKind), QString::fromStdString(last->failureMessage));
    } catch (const std::exception& e) {
        return tr("re-verification unknown: %1").arg(QString::fromUtf8(e.what()));
    }
}

void ReviewPanel::refreshHistory()
{
    m_history->clear();
    const core::Store* store = m_store ? m_store : (m_data ? m_data->store() : nullptr);
    if (!store || !m_data || m_node < 0)
        return;
    try {
        for (const auto& a : store->approvals(m_data->sessionId())) {
            if (a.nodeId != m_node)
                continue;
            QString line = QStringLiteral("%1 by %2 at %3")
                               .arg(QString::fromStdString(a.decision), QString::fromStdString(a.reviewer),
                                   QString::fromStdString(a.createdAt));
            if (!a.note.empty())
                line += QStringLiteral(": ") + QString::fromStdString(a.note);
            if (!a.justification.empty())
                line += tr(" [justified: %1]").arg(QString::fromStdString(a.justification));
            if (!a.exportDir.empty())
                line += tr(" (exported to %1)").arg(QString::fromStdString(a.exportDir));
            m_history->addItem(line);
        }
    } catch (const std::exception& e) {
        m_history->addItem(tr("cannot read the reviews: %1").arg(QString::fromUtf8(e.what())));
    }
    if (m_history->count() == 0)
        m_history->addItem(tr("(none)"));
}

QString ReviewPanel::requireReviewer()
{
    const QString name = m_reviewer->text().trimmed();
    if (name.isEmpty()) {
        showMessage(tr("A reviewer's name is required: type it in the Reviewer field, then approve or reject again."), true);
        m_reviewer->setFocus();
    }
    return name;
}

const NodeInfo* ReviewPanel::decisionTarget(QString& reviewer)
{
    const NodeInfo* n = m_data ? m_data->node(m_node) : nullptr;
    if (!n || n->sourceHash.isEmpty()) {
        showMessage(tr("Pick a candidate node to review first."), true);
        return nullptr;
    }
    if (!m_store) {
        showMessage(tr("No writable store: open the session's store to record reviews."), true);
        return nullptr;
    }
    reviewer = requireReviewer();
    return reviewer.isEmpty() ? nullptr : n;
}

bool ReviewPanel::approve()
{
    QString reviewer;
    const NodeInfo* n = decisionTarget(reviewer);
    if (!n)
        return false;
    if (n->status == NodeInfo::Status::Pending) {
        showMessage(tr("Node %1 has not been evaluated yet: wait for its result before approving it.").arg(n->id), true);
        return false;
    }
    if (n->status == NodeInfo::Status::Failed) {
        showMessage(tr("Node %1 failed its evaluation (%2): only a candidate that passed its checks can be "
                       "approved. Reject it to turn your note into a hint.")
                        .arg(n->id)
                        .arg(n->failureKind),
            true);
        return false;
    }
    if (const QString why = reverificationText(n->id); why.startsWith(QStringLiteral("FAILED"))) {
        showMessage(tr("Node %1 cannot be approved: it %2. A fresh worker with new seeds and inputs disagreed "
                       "with the search's result, so that result cannot be trusted. Reject it to turn your note "
                       "into a hint.")
                        .arg(n->id)
                        .arg(why.toLower()),
            true);
        return false;
    }
    const auto concerns = n->result ? reviewConcerns(*n->result, m_policy) : std::vector<ReviewConcern>();
    const QString justification = m_justification->toPlainText().trimmed();
    if (!concerns.empty() && justification.size() < kMinJustification) {
        QStringList lines;
        for (const auto& c : concerns)
            lines << QStringLiteral("- ") + c.text;
        showMessage(tr("Node %1 raises %2 concern(s); approving it needs a justification (a sentence, at least %3 "
                       "characters) in the Justification field:\n%4")
                        .arg(n->id)
                        .arg(concerns.size())
                        .arg(kMinJustification)
                        .arg(lines.join(QLatin1Char('\n'))),
            true);
        m_justification->setFocus();
        return false;
    }
    nlohmann::json concernJson = nlohmann::json::array();
    for (const auto& c : concerns)
        concernJson.push_back({{"kind", concernKey(c.kind)}, {"text", c.text.toStdString()}});
    const QString note = m_note->toPlainText().trimmed();
    const QString dir = QDir(m_exportRoot).filePath(QStringLiteral("session-%1-node-%2").arg(m_data->sessionId()).arg(n->id));
    core::ExportOptions options;
    options.resourcesDir = m_resourcesDir.toStdString();
    options.torch = m_torch->isChecked();
    options.review = {{"decision", "approved"}, {"reviewer", reviewer.toStdString()}, {"note", note.toStdString()},
        {"concerns", concernJson}, {"justification", concerns.empty() ? std::string() : justification.toStdString()},
        {"at", core::nowIso()}};
    core::ApprovalRecord rec;
    rec.nodeId = n->id;
    rec.decision = "approved";
    rec.reviewer = reviewer.toStdString();
    rec.note = note.toStdString();
    rec.justification = concerns.empty() ? std::string() : justification.toStdString();
    const qint64 node = n->id;
    const qint64 session = m_data->sessionId();
    const std::filesystem::path storePath = m_store->path();
    struct Outcome {
        core::ExportResult result;
        std::string error;
    };
    // One Store per thread (core/store.h): the export reads and the approval row is written
    // through a Store of its own on the same file, so the GUI thread's stays untouched.
    auto work = [storePath, session, node, dir, options, rec]() mutable {
        Outcome out;
        try {
            core::Store store(storePath);
            out.result = core::exportBundle(store, session, node, dir.toStdString(), options);
            rec.evidence = out.result.evidence;
            rec.exportDir = out.result.dir.string();
            store.insertApproval(session, rec);
        } catch (const std::exception& e) {
            out.error = e.what();
        }
        return out;
    };
    auto* watcher = new QFutureWatcher<Outcome>(this);
    connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, node, dir, reviewer] {
        const Outcome out = watcher->result();
        watcher->deleteLater();
        setBusy(false);
        if (!out.error.empty()) {
            showMessage(tr("Approval of node %1 not recorded: %2").arg(node).arg(QString::fromStdString(out.error)), true);
            emit approvalFailed(node);
            return;
        }
        const core::ExportResult& r = out.result;
        QString text = tr("Approved by %1; exported to %2").arg(reviewer, dir);
        if (r.hasTest)
            text += tr(" (check it without Hone: run_test.sh)");
        if (!r.torchSchema.empty())
            text += tr("; PyTorch op %1 in torch/").arg(QString::fromStdString(r.torchSchema));
        for (const auto& w : r.warnings)
            text += QStringLiteral("\n") + tr("warning: ") + QString::fromStdString(w);
        showMessage(text, false);
        m_note->clear();
        m_justification->clear();
        refreshHistory();
        emit approved(node, dir);
    });
    setBusy(true);
    showMessage(tr("Exporting node %1 to %2…").arg(node).arg(dir), false);
    watcher->setFuture(QtConcurrent::run(std::move(work)));
    return true;
}

void ReviewPanel::setBusy(bool busy)
{
    m_busy = busy;
    const NodeInfo* n = m_data ? m_data->node(m_node) : nullptr;
    const bool candidate = n && !n->sourceHash.isEmpty();
    m_approve->setEnabled(candidate && m_store && !busy);
    m_reject->setEnabled(candidate && m_store && !busy);
}

bool ReviewPanel::reject()
{
    QString reviewer;
    const NodeInfo* n = decisionTarget(reviewer);
    if (!n)
        return false;
    if (m_busy) {
        showMessage(tr("A review is still being recorded: wait for it, then reject."), true);
        return false;
    }
    const QString note = m_note->toPlainText().trimmed();
    const qint64 id = n->id;
    const qint64 session = m_data->sessionId();
    const std::filesystem::path storePath = m_store->path();
    core::ApprovalRecord rec;
    rec.nodeId = id;
    rec.decision = "rejected";
    rec.reviewer = reviewer.toStdString();
    rec.note = note.toStdString();
    // The evidence reads and the row is written through a Store of its own on the same file
    // (one Store per thread, core/store.h), as an approval's export is: the GUI thread's stays
    // untouched and the panel stays responsive on a slow disk.
    auto work = [storePath, session, rec]() mutable {
        try {
            core::Store store(storePath);
            rec.evidence = core::buildEvidence(store, session, rec.nodeId);
            rec.evidence["review"] = {{"decision", "rejected"}, {"reviewer", rec.reviewer}, {"note", rec.note}};
            store.insertApproval(session, rec);
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    auto* watcher = new QFutureWatcher<std::string>(this);
    connect(watcher, &QFutureWatcher<std::string>::finished, this, [this, watcher, id, reviewer, note] {
        const std::string error = watcher->result();
        watcher->deleteLater();
        setBusy(false);
        if (!error.empty()) {
            showMessage(tr("Rejection of node %1 not recorded: %2").arg(id).arg(QString::fromStdString(error)), true);
            return;
        }
        showMessage(tr("Rejected by %1; the reason goes to the search as a hint.").arg(reviewer), false);
        m_note->clear();
        refreshHistory();
        const QString hint
            = tr("Rejected by %1: %2").arg(reviewer, note.isEmpty() ? tr("(no reason given)") : note);
        if (m_actions)
            emit m_actions->hintRequested(id, hint);
        emit rejected(id);
    });
    setBusy(true);
    showMessage(tr("Recording the rejection of node %1…").arg(id), false);
    watcher->setFuture(QtConcurrent::run(std::move(work)));
    return true;
}

} // namespace hone::views
