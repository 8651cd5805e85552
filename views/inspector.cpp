#include "views/inspector.h"

#include "views/code_view.h"
#include "views/diff_view.h"
#include "views/timing_plot.h"

#include <QBrush>
#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>

namespace hone::views {

namespace {

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

QString valueText(const nlohmann::json& v)
{
    return v.is_string() ? QString::fromStdString(v.get<std::string>()) : QString::fromStdString(v.dump());
}

QString knobList(const nlohmann::json& knobs)
{
    QStringList parts;
    if (knobs.is_object())
        for (auto it = knobs.begin(); it != knobs.end(); ++it)
            parts << QString::fromStdString(it.key()) + QLatin1Char('=') + valueText(it.value());
    return parts.join(QStringLiteral(", "));
}

/// "node 17 (tuned.cpp, VEC=8)".
QString nodeTitle(const NodeInfo& n)
{
    QString inner = n.sourceName.isEmpty() ? QStringLiteral("no source") : n.sourceName;
    if (const QString knobs = knobList(n.knobs); !knobs.isEmpty())
        inner += QStringLiteral(", ") + knobs;
    return QStringLiteral("node %1 (%2)").arg(n.id).arg(inner);
}

bool sameContent(const NodeInfo& a, const NodeInfo& b)
{
    return a.id == b.id && a.status == b.status && a.result == b.result && a.pruned == b.pruned
        && a.boosted == b.boosted && a.hints == b.hints && a.hasLlmCall == b.hasLlmCall
        && a.failureKind == b.failureKind && a.failureMessage == b.failureMessage && a.knobs == b.knobs
        && a.sourceHash == b.sourceHash && a.flags == b.flags && a.fromCache == b.fromCache;
}

} // namespace

QStandardItem* Inspector::readOnlyItem(const QString& text)
{
    auto* item = new QStandardItem(text);
    item->setEditable(false);
    return item;
}

// ---------------------------------------------------------------------------------------------
// Inspector

Inspector::Inspector(SessionData* sessionData, Selection* selection, NodeActions* actions, QWidget* parent)
    : QWidget(parent)
    , m_data(sessionData)
    , m_selection(selection)
    , m_actions(actions)
{
    m_empty = new QLabel(tr("Select a node in the tree to inspect it."), this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);

    m_header = new QLabel(this);
    m_header->setWordWrap(true); // unwrapped, its text would set the dock's minimum width
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_evidence = new QLabel(this);
    m_evidence->setWordWrap(true);
    m_evidence->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_edit = new QPushButton(tr("Edit as new child…"), this);
    m_edit->setToolTip(tr("Open this node's source in an editor; the edit is evaluated as a new child"));

    // Source: the code over its knob table.
    m_source = new CodeView(this);
    m_knobModel = new QStandardItemModel(0, 3, this);
    m_knobModel->setHorizontalHeaderLabels(
        { tr("Knob"), tr("Value"), tr("Parent's value (when different)") });
    m_knobTable = new QTableView(this);
    m_knobTable->setModel(m_knobModel);
    m_knobTable->horizontalHeader()->setStretchLastSection(true);
    m_knobTable->verticalHeader()->hide();
    m_flags = new QLabel(this);
    m_flags->setWordWrap(true);
    auto* knobBox = new QWidget(this);
    auto* knobLayout = new QVBoxLayout(knobBox);
    knobLayout->setContentsMargins(0, 0, 0, 0);
    knobLayout->addWidget(m_knobTable);
    knobLayout->addWidget(m_flags);
    auto* sourceSplit = new QSplitter(Qt::Vertical, this);
    sourceSplit->addWidget(m_source);
    sourceSplit->addWidget(knobBox);
    sourceSplit->setStretchFactor(0, 3);
    sourceSplit->setStretchFactor(1, 1);

    // Diff: against the parent, the baseline or any node.
    m_against = new QComboBox(this);
    m_against->addItems({ tr("Parent"), tr("Baseline"), tr("Other node") });
    m_otherId = new QSpinBox(this);
    m_otherId->setRange(-1, 0);
    m_otherId->setSpecialValueText(tr("choose a node"));
    m_otherId->setPrefix(tr("node "));
    m_otherId->setValue(-1);
    m_otherId->setEnabled(false);
    m_diff = new DiffView(this);
    auto* diffPage = new QWidget(this);
    auto* diffBar = new QHBoxLayout;
    diffBar->addWidget(new QLabel(tr("Compare with"), diffPage));
    diffBar->addWidget(m_against);
    diffBar->addWidget(m_otherId);
    diffBar->addStretch(1);
    auto* diffLayout = new QVBoxLayout(diffPage);
    diffLayout->addLayout(diffBar);
    diffLayout->addWidget(m_diff, 1);

    // Compile: command, clickable messages, ptxas resources, the log.
    m_command = new QLineEdit(this);
    m_command->setReadOnly(true);
    m_messages = new QListWidget(this);
    m_messageNote = new QLabel(this);
    m_messageNote->setWordWrap(true);
    m_messageNote->hide();
    m_resourceModel = new QStandardItemModel(0, 6, this);
    m_resourceModel->setHorizontalHeaderLabels({ tr("Kernel"), tr("Registers"), tr("Static smem (B)"),
        tr("Stack (B)"), tr("Spill stores (B)"), tr("Spill loads (B)") });
    m_resourceTable = new QTableView(this);
    m_resourceTable->setModel(m_resourceModel);
    m_resourceTable->verticalHeader()->hide();
    m_resourceTable->horizontalHeader()->setStretchLastSection(true);
    m_log = new QPlainTextEdit(this);
    m_log->setReadOnly(true);
    m_log->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_log->setFont(m_source->font());
    auto* compilePage = new QWidget(this);
    auto* compileForm = new QFormLayout;
    compileForm->addRow(tr("Command"), m_command);
    auto* compileSplit = new QSplitter(Qt::Vertical, compilePage);
    compileSplit->addWidget(m_messages);
    compileSplit->addWidget(m_resourceTable);
    compileSplit->addWidget(m_log);
    auto* compileLayout = new QVBoxLayout(compilePage);
    compileLayout->addLayout(compileForm);
    compileLayout->addWidget(m_messageNote);
    compileLayout->addWidget(compileSplit, 1);

    m_correctness = new CorrectnessModel(this);
    m_correctnessSummary = new QLabel(this);
    m_correctnessSummary->setWordWrap(true);
    auto* checksTable = new QTableView(this);
    checksTable->setModel(m_correctness);
    checksTable->verticalHeader()->hide();
    checksTable->horizontalHeader()->setStretchLastSection(true);
    auto* checksPage = new QWidget(this);
    auto* checksLayout = new QVBoxLayout(checksPage);
    checksLayout->addWidget(m_correctnessSummary);
    checksLayout->addWidget(checksTable, 1);

    m_timing = new TimingPlot(this);
    m_llm = new QTextBrowser(this);
    m_llm->setOpenLinks(false);

    m_tabs = new QTabWidget(this);
    m_tabs->insertTab(SourceTab, sourceSplit, tr("Source"));
    m_tabs->insertTab(DiffTab, diffPage, tr("Diff"));
    m_tabs->insertTab(CompileTab, compilePage, tr("Compile"));
    m_tabs->insertTab(CorrectnessTab, checksPage, tr("Correctness"));
    m_tabs->insertTab(TimingTab, m_timing, tr("Timing"));
    m_tabs->insertTab(LlmTab, m_llm, tr("LLM"));

    auto* content = new QWidget(this);
    auto* headerRow = new QHBoxLayout;
    headerRow->addWidget(m_header, 1);
    headerRow->addWidget(m_edit);
    auto* contentLayout = new QVBoxLayout(content);
    contentLayout->setContentsMargins(0, 0, 0, 0);
    contentLayout->addLayout(headerRow);
    contentLayout->addWidget(m_evidence);
    contentLayout->addWidget(m_tabs, 1);

    m_stack = new QStackedWidget(this);
    m_stack->addWidget(m_empty);
    m_stack->addWidget(content);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_stack);

    connect(m_tabs, &QTabWidget::currentChanged, this, &Inspector::fillTab);
    connect(m_messages, &QListWidget::itemClicked, this,
        [this](QListWidgetItem* item) { showCompileMessage(m_messages->row(item)); });
    connect(m_messages, &QListWidget::itemActivated, this,
        [this](QListWidgetItem* item) { showCompileMessage(m_messages->row(item)); });
    connect(m_edit, &QPushButton::clicked, this, [this] {
        if (m_node > 0)
            emit m_actions->editRequested(m_node);
    });
    connect(m_against, &QComboBox::currentIndexChanged, this,
        [this](int i) { setDiffAgainst(static_cast<DiffAgainst>(i)); });
    connect(m_otherId, &QSpinBox::valueChanged, this, [this](int v) {
        m_selection->setOther(v);
        m_dirty[DiffTab] = true;
        if (m_tabs->currentIndex() == DiffTab)
            fillTab(DiffTab);
    });

    connect(m_selection, &Selection::currentChanged, this, [this](qint64 id) { showNode(id, true); });
    connect(m_selection, &Selection::otherChanged, this, [this](qint64 id) {
        const QSignalBlocker block(m_otherId);
        m_otherId->setValue(static_cast<int>(id));
        if (diffAgainst() == AgainstOther) {
            m_dirty[DiffTab] = true;
            if (m_tabs->currentIndex() == DiffTab)
                fillTab(DiffTab);
        }
    });
    connect(m_data, &SessionData::sessionReset, this, [this] {
        m_otherId->setMaximum(std::max(0, m_data->size() - 1));
        m_shown.reset();
        m_sourceHashShown.clear();
        showNode(m_selection->current(), true);
    });
    connect(m_data, &SessionData::nodesAdded, this, [this](qint64 first, qint64 last) {
        m_otherId->setMaximum(std::max(0, m_data->size() - 1));
        if (m_node >= first && m_node <= last)
            showNode(m_node, true);
    });
    connect(m_data, &SessionData::nodesChanged, this, [this](const QVector<qint64>& ids) {
        if (m_node >= 0 && ids.contains(m_node))
            showNode(m_node, false);
    });
    // A compare request from any panel: show that node, diffed against the other one.
    connect(m_actions, &NodeActions::compareRequested, this, [this](qint64 node, qint64 other) {
        if (node >= 0)
            m_selection->setCurrent(node);
        compareWith(other);
    });

    m_otherId->setMaximum(std::max({ 0, m_data->size() - 1, static_cast<int>(m_selection->other()) }));
    m_otherId->setValue(static_cast<int>(m_selection->other()));
    showNode(m_selection->current(), true);
}

const NodeInfo* Inspector::current() const
{
    return m_data->node(m_node);
}

QString Inspector::headerText() const
{
    return m_headerPlain;
}

Inspector::DiffAgainst Inspector::diffAgainst() const
{
    return static_cast<DiffAgainst>(m_against->currentIndex());
}

QString Inspector::compileCommand() const
{
    return m_command->text();
}

QString Inspector::compileLog() const
{
    return m_log->toPlainText();
}

QString Inspector::correctnessSummary() const
{
    return m_correctnessSummary->text();
}

QString Inspector::llmText() const
{
    return m_llm->toPlainText();
}

void Inspector::showNode(qint64 id, bool force)
{
    m_node = id;
    const NodeInfo* n = current();
    if (!n) {
        m_shown.reset();
        m_sourceHashShown.clear();
        m_headerPlain.clear();
        m_empty->setText(id < 0 ? tr("Select a node in the tree to inspect it.")
                                : tr("Node %1 is not in this session (yet).").arg(id));
        m_stack->setCurrentWidget(m_empty);
        m_edit->setEnabled(false);
        return;
    }
    m_stack->setCurrentIndex(1);
    fillHeader();
    // Ancestors are "changed" whenever their subtree grows; that alone rebuilds nothing.
    if (!force && m_shown && sameContent(*m_shown, *n))
        return;
    m_shown = *n;
    ++m_rebuilds;
    m_dirty.fill(true);
    fillTab(m_tabs->currentIndex());
}

void Inspector::fillHeader()
{
    const NodeInfo& n = *current();
    QStringList plain, html;
    auto add = [&](const QString& p, const QString& h = {}) {
        plain << p;
        html << (h.isEmpty() ? p.toHtmlEscaped() : h);
    };
    add(tr("node %1").arg(n.id), QStringLiteral("<b>%1</b>").arg(tr("node %1").arg(n.id)));
    add(n.id == 0 ? tr("root") : (n.sourceName.isEmpty() ? tr("(no source)") : n.sourceName));
    if (n.id != 0)
        add(n.op.isEmpty() ? n.origin : QStringLiteral("%1 (%2)").arg(n.origin, n.op));
    const QString status = n.statusText();
    const char* colour = n.status == NodeInfo::Status::Ok ? "#2e7d32"
        : n.status == NodeInfo::Status::Failed            ? "#c62828"
                                                          : "#757575";
    add(status,
        QStringLiteral("<b style='color:%1'>%2</b>").arg(QLatin1String(colour), status.toHtmlEscaped()));
    if (!n.bound.isEmpty())
        add(tr("%1-bound").arg(n.bound));
    if (n.fromCache)
        add(tr("from cache"));
    if (n.pruned)
        add(tr("pruned"));
    if (n.boosted)
        add(tr("boosted"));
    if (n.visits > 0)
        add(n.visits == 1 ? tr("1 evaluation in its subtree")
                          : tr("%1 evaluations in its subtree").arg(n.visits));
    m_headerPlain = plain.join(QStringLiteral(" · "));
    m_header->setText(html.join(QStringLiteral(" · ")));

    QStringList details;
    if (n.status == NodeInfo::Status::Failed && !n.failureMessage.isEmpty())
        details << n.failureMessage;
    if (const QString evidence = n.result ? qs(n.result->evidence()) : QString(); !evidence.isEmpty())
        details << evidence;
    if (n.status == NodeInfo::Status::Pending && n.id != 0)
        details << tr("Waiting for its evaluation.");
    if (!n.hints.isEmpty())
        details << tr("Hints: %1").arg(n.hints.join(QStringLiteral("; ")));
    m_evidence->setText(details.join(QLatin1Char('\n')));
    m_evidence->setVisible(!details.isEmpty());
    m_headerPlain += details.isEmpty() ? QString() : QLatin1Char('\n') + details.join(QLatin1Char('\n'));
    m_edit->setEnabled(n.id != 0 && !n.sourceHash.isEmpty());
}

void Inspector::fillTab(int tab)
{
    if (tab < 0 || tab >= static_cast<int>(m_dirty.size()) || !m_dirty[static_cast<size_t>(tab)]
        || !current())
        return;
    m_dirty[static_cast<size_t>(tab)] = false;
    switch (tab) {
    case SourceTab:
        fillSource();
        break;
    case DiffTab:
        fillDiff();
        break;
    case CompileTab:
        fillCompile();
        break;
    case CorrectnessTab:
        fillCorrectness();
        break;
    case TimingTab:
        fillTiming();
        break;
    case LlmTab:
        fillLlm();
        break;
    }
}

void Inspector::fillSource()
{
    const NodeInfo& n = *current();
    if (n.sourceHash != m_sourceHashShown || n.sourceHash.isEmpty()) {
        QString body = m_data->sourceText(n.sourceHash);
        if (n.sourceHash.isEmpty())
            body = tr("// The root of the tree has no source: its children are the seeds.");
        else if (body.isEmpty())
            body = tr("// The source %1 (%2) is not in the store this window reads.")
                       .arg(n.sourceName, n.sourceHash);
        m_source->setSource(body, n.sourceName);
        m_sourceHashShown = n.sourceHash;
    }
    m_source->clearMarks();
    if (n.result && n.result->compile)
        for (const auto& m : n.result->compile->messages)
            if (messageInCandidate(m))
                m_source->markLine(static_cast<int>(m.line), qs(m.severity));

    const NodeInfo* parent = m_data->node(n.parent);
    const bool parentHasKnobs = parent && !parent->sourceHash.isEmpty();
    m_knobModel->removeRows(0, m_knobModel->rowCount());
    if (n.knobs.is_object()) {
        for (auto it = n.knobs.begin(); it != n.knobs.end(); ++it) {
            QString before;
            if (parentHasKnobs) {
                const auto p = parent->knobs.find(it.key());
                const QString old = p != parent->knobs.end() ? valueText(*p) : tr("(unset)");
                if (old != valueText(it.value()))
                    before = old;
            }
            QList<QStandardItem*> row { readOnlyItem(QString::fromStdString(it.key())),
                readOnlyItem(valueText(it.value())), readOnlyItem(before) };
            if (!before.isEmpty())
                for (auto* item : row) {
                    item->setBackground(QColor(0xff, 0xf8, 0xe1));
                    QFont f = item->font();
                    f.setBold(true);
                    item->setFont(f);
                }
            m_knobModel->appendRow(row);
        }
    }
    QString flags = n.flags.isEmpty() ? tr("Flags: (none)") : tr("Flags: %1").arg(n.flags);
    if (parentHasKnobs && parent->flags != n.flags)
        flags += tr("  (parent: %1)").arg(parent->flags.isEmpty() ? tr("none") : parent->flags);
    m_flags->setText(n.sourceHash.isEmpty() ? QString() : flags);
}

void Inspector::fillDiff()
{
    const NodeInfo& n = *current();
    const DiffAgainst against = diffAgainst();
    qint64 otherId = -1;
    QString role;
    switch (against) {
    case AgainstParent:
        otherId = n.parent;
        role = tr("parent: ");
        break;
    case AgainstBaseline:
        otherId = m_data->baselineNode();
        role = tr("baseline: ");
        break;
    case AgainstOther:
        otherId = m_otherId->value();
        break;
    }
    if (n.sourceHash.isEmpty())
        return m_diff->showMessage(tr("The root has no source to compare."));
    const NodeInfo* other = m_data->node(otherId);
    if (!other) {
        if (against == AgainstParent)
            return m_diff->showMessage(tr("Node %1 has no parent.").arg(n.id));
        if (against == AgainstBaseline)
            return m_diff->showMessage(tr("This session has no baseline seed yet."));
        return m_diff->showMessage(
            tr("Choose the node to compare with: type its id above, or use \"Compare with…\" in the tree."));
    }
    if (other->sourceHash.isEmpty())
        return m_diff->showMessage(against == AgainstParent
                ? tr("Node %1 is a seed: its parent is the root, which has no source. Compare it with the "
                     "baseline or another node instead.")
                      .arg(n.id)
                : tr("Node %1 is the root, which has no source.").arg(other->id));
    if (other->id == n.id)
        return m_diff->showMessage(against == AgainstBaseline
                ? tr("Node %1 is the baseline itself.").arg(n.id)
                : tr("That is node %1 itself.").arg(n.id));
    DiffSide left { role + nodeTitle(*other), other->sourceName, m_data->sourceText(other->sourceHash),
        other->knobs, other->flags };
    DiffSide right { nodeTitle(n), n.sourceName, m_data->sourceText(n.sourceHash), n.knobs, n.flags };
    for (const auto* side : { other, &n })
        if (m_data->sourceText(side->sourceHash).isEmpty())
            return m_diff->showMessage(tr("The source of node %1 (%2) is not in the store this window reads.")
                                           .arg(side->id)
                                           .arg(side->sourceName));
    m_diff->setSides(left, right);
}

void Inspector::setDiffAgainst(DiffAgainst against)
{
    {
        const QSignalBlocker block(m_against);
        m_against->setCurrentIndex(against);
    }
    m_otherId->setEnabled(against == AgainstOther);
    m_dirty[DiffTab] = true;
    if (m_tabs->currentIndex() == DiffTab)
        fillTab(DiffTab);
}

void Inspector::compareWith(qint64 other)
{
    if (other < 0)
        other = m_selection->other();
    if (other >= 0) {
        const QSignalBlocker block(m_otherId);
        m_otherId->setMaximum(std::max(m_otherId->maximum(), static_cast<int>(other)));
        m_otherId->setValue(static_cast<int>(other));
        m_selection->setOther(other);
    }
    {
        const QSignalBlocker block(m_against);
        m_against->setCurrentIndex(AgainstOther);
    }
    m_otherId->setEnabled(true);
    m_dirty[DiffTab] = true;
    m_tabs->setCurrentIndex(DiffTab);
    fillTab(DiffTab);
    if (other < 0)
        m_otherId->setFocus();
}

} // namespace hone::views
