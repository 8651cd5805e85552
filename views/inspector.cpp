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

using core::protocol::CompileMessage;

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

/// A string field of a stored LLM prompt (the request as sent: {"system", "messages": [...]}).
QString promptText(const nlohmann::json& j, const char* key)
{
    const auto it = j.is_object() ? j.find(key) : j.end();
    return j.is_object() && it != j.end() && it->is_string() ? QString::fromStdString(it->get<std::string>()) : QString();
}

QString number(const std::optional<double>& v)
{
    return v ? QString::number(*v, 'g', QLocale::FloatingPointShortest) : QStringLiteral("null");
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

QString pre(const QString& body)
{
    return QStringLiteral("<pre style=\"white-space: pre-wrap\">%1</pre>").arg(body.toHtmlEscaped());
}

QStandardItem* readOnlyItem(const QString& s)
{
    auto* item = new QStandardItem(s);
    item->setEditable(false);
    return item;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// CorrectnessModel

void CorrectnessModel::setChecks(const std::vector<core::protocol::Check>& checks)
{
    beginResetModel();
    m_rows.clear();
    for (const auto& c : checks) {
        Row r;
        r.shape = qs(c.shape);
        if (c.afterTiming)
            r.shape += tr(" (after timing)");
        r.seed = static_cast<qint64>(c.seed);
        r.ok = c.ok;
        r.maxAbs = c.maxAbsErr.value_or(0.0);
        r.maxRel = c.maxRelErr.value_or(0.0);
        r.mismatches = static_cast<qint64>(c.mismatches);
        QStringList lines;
        if (c.failureKind)
            lines << tr("%1: %2").arg(QLatin1String(core::protocol::failureKindName(*c.failureKind)), qs(c.failureMessage));
        if (!c.firstMismatches.empty()) {
            lines << tr("First mismatches:");
            for (const auto& m : c.firstMismatches) {
                const QString where = QStringLiteral("%1[%2]").arg(qs(m.output)).arg(static_cast<qint64>(m.index));
                if (m.unwritten)
                    lines << tr("  %1: never written (want %2)").arg(where, QString::number(m.want.value_or(0.0), 'g', 7));
                else
                    lines << tr("  %1: got %2, want %3").arg(where, number(m.got), number(m.want));
            }
        }
        r.details = lines.isEmpty() ? tr("No mismatches.") : lines.join(QLatin1Char('\n'));
        m_rows.push_back(std::move(r));
    }
    endResetModel();
}

int CorrectnessModel::failedCount() const
{
    return static_cast<int>(std::count_if(m_rows.begin(), m_rows.end(), [](const Row& r) { return !r.ok; }));
}

int CorrectnessModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int CorrectnessModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CorrectnessModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row& r = m_rows[static_cast<size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case ShapeColumn:
            return r.shape;
        case SeedColumn:
            return r.seed;
        case OkColumn:
            return r.ok ? tr("ok") : tr("FAILED");
        case MaxAbsColumn:
            return QString::number(r.maxAbs, 'g', 3);
        case MaxRelColumn:
            return QString::number(r.maxRel, 'g', 3);
        case MismatchesColumn:
            return r.mismatches;
        }
        return {};
    case Qt::ToolTipRole:
        return r.details;
    case Qt::BackgroundRole:
        return r.ok ? QVariant() : QVariant(QBrush(QColor(0xfd, 0xe2, 0xe2)));
    case Qt::TextAlignmentRole:
        return index.column() >= SeedColumn && index.column() != OkColumn
            ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter))
            : QVariant();
    case Qt::UserRole: // the raw value, for sorting and tests
        switch (index.column()) {
        case OkColumn:
            return r.ok;
        case MaxAbsColumn:
            return r.maxAbs;
        case MaxRelColumn:
            return r.maxRel;
        default:
            return data(index, Qt::DisplayRole);
        }
    }
    return {};
}

QVariant CorrectnessModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* const kNames[] = { "Shape", "Seed", "OK", "Max abs err", "Max rel err", "Mismatches" };
    return tr(kNames[section]);
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

bool Inspector::messageInCandidate(const CompileMessage& message) const
{
    const NodeInfo* n = current();
    if (!n || message.line <= 0)
        return false;
    const QString file = qs(message.file.value_or(std::string()));
    if (file.isEmpty())
        return true;
    // The worker compiles the candidate under its own name, made safe for a file system.
    const QString base = QFileInfo(file).fileName();
    const QString name = QFileInfo(n->sourceName).fileName();
    QString safe = name;
    safe.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]")), QStringLiteral("_"));
    return base == name || base == safe || base == safe + QLatin1String(".cpp")
        || base == safe + QLatin1String(".cu");
}

void Inspector::fillCompile()
{
    const NodeInfo& n = *current();
    m_messageNote->hide();
    m_messages->clear();
    m_resourceModel->removeRows(0, m_resourceModel->rowCount());
    m_messageList.clear();
    if (!n.result || !n.result->compile) {
        m_command->clear();
        QString why = n.id == 0 ? tr("The root is not compiled.")
            : n.status == NodeInfo::Status::Pending
            ? tr("Not compiled yet.")
            : tr("Not compiled: %1").arg(n.failureMessage.isEmpty() ? n.failureKind : n.failureMessage);
        m_log->setPlainText(why);
        m_messages->hide();
        m_resourceTable->hide();
        return;
    }
    const core::protocol::CompileInfo& compile = *n.result->compile;
    m_command->setText(qs(compile.command.value_or(std::string())));
    m_command->setCursorPosition(0);
    QString log = qs(compile.log.value_or(std::string()));
    if (compile.cached)
        log = tr("(the build came from the compile cache)\n") + log;
    if (log.isEmpty())
        log = tr("(the compiler printed nothing)");
    // HIP: the code-object analysis's failure, and the ISA (llvm-objdump) after the log.
    if (compile.resourcesError)
        log += QStringLiteral("\n") + qs(*compile.resourcesError);
    if (compile.isa && !compile.isa->empty())
        log += tr("\n--- ISA (llvm-objdump -d) ---\n") + qs(*compile.isa);
    m_log->setPlainText(log);

    m_messageList = compile.messages;
    for (const auto& m : m_messageList) {
        const QString severity = qs(m.severity);
        const int line = static_cast<int>(m.line);
        const int column = static_cast<int>(m.column);
        const QString file = qs(m.file.value_or(std::string()));
        QString where = QFileInfo(file).fileName();
        if (line > 0)
            where += QStringLiteral(":%1").arg(line)
                + (column > 0 ? QStringLiteral(":%1").arg(column) : QString());
        auto* item = new QListWidgetItem(
            QStringLiteral("%1  %2: %3").arg(where, severity, qs(m.text)), m_messages);
        const bool error = severity.contains(QLatin1String("error"));
        item->setForeground(error                      ? QColor(0xc6, 0x28, 0x28)
                : severity == QLatin1String("warning") ? QColor(0xb2, 0x6a, 0x00)
                                                       : QColor(0x42, 0x42, 0x42));
        if (!messageInCandidate(m)) {
            item->setForeground(QColor(0x9e, 0x9e, 0x9e));
            item->setToolTip(tr("About %1, not the candidate's source").arg(file));
        } else {
            item->setToolTip(tr("Click to show line %1 in the Source tab").arg(line));
        }
    }
    m_messages->setVisible(!m_messageList.empty());

    const auto& resources = compile.resources;
    auto count = [](const std::optional<int64_t>& v) {
        auto* item = readOnlyItem(QString::number(static_cast<qint64>(v.value_or(0))));
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        return item;
    };
    // AMD code objects carry VGPR/AGPR/SGPR counts, LDS, scratch and occupancy per kernel.
    const bool amd = !resources.empty() && resources[0].sgprs.has_value();
    if (amd) {
        m_resourceModel->setColumnCount(8);
        m_resourceModel->setHorizontalHeaderLabels({ tr("Kernel"), tr("VGPRs"), tr("AGPRs"), tr("SGPRs"), tr("LDS (B)"),
            tr("Scratch (B)"), tr("Spills (VGPR/SGPR)"), tr("Occupancy") });
        for (const auto& k : resources) {
            QList<QStandardItem*> row { readOnlyItem(qs(k.name)), count(k.vgprs), count(k.agprs), count(k.sgprs),
                count(k.ldsBytes), count(k.scratchBytes) };
            auto* spills = readOnlyItem(QStringLiteral("%1 / %2")
                                            .arg(static_cast<qint64>(k.vgprSpills.value_or(0)))
                                            .arg(static_cast<qint64>(k.sgprSpills.value_or(0))));
            if (k.vgprSpills.value_or(0) + k.sgprSpills.value_or(0) > 0)
                spills->setForeground(QColor(0xc6, 0x28, 0x28));
            row << spills;
            const auto& o = k.amdOccupancy;
            row << readOnlyItem(o ? tr("%1 waves/SIMD at %2 threads (%3), %4")
                                        .arg(o->wavesPerSimd.value_or(0.0))
                                        .arg(static_cast<qint64>(o->block.value_or(0)))
                                        .arg(qs(o->arch), qs(o->limiter))
                                  : QString());
            m_resourceModel->appendRow(row);
        }
    } else {
        m_resourceModel->setColumnCount(6);
        m_resourceModel->setHorizontalHeaderLabels({ tr("Kernel"), tr("Registers"), tr("Static smem (B)"),
            tr("Stack (B)"), tr("Spill stores (B)"), tr("Spill loads (B)") });
        for (const auto& k : resources) {
            QList<QStandardItem*> row { readOnlyItem(qs(k.name)), count(k.registers), count(k.smemStatic),
                count(k.stackBytes) };
            for (const auto& spill : { k.spillStores, k.spillLoads }) {
                auto* item = count(spill);
                if (spill.value_or(0) > 0)
                    item->setForeground(QColor(0xc6, 0x28, 0x28));
                row << item;
            }
            m_resourceModel->appendRow(row);
        }
    }
    m_resourceTable->setVisible(m_resourceModel->rowCount() > 0);
}

void Inspector::showCompileMessage(int index)
{
    if (index < 0 || index >= static_cast<int>(m_messageList.size()) || !current())
        return;
    const CompileMessage& m = m_messageList[static_cast<size_t>(index)];
    if (!messageInCandidate(m)) {
        m_messageNote->setText(m.line <= 0
                ? tr("This message names no line.")
                : tr("This message is about %1, not the candidate's source; see the log below.")
                      .arg(qs(m.file.value_or(std::string()))));
        m_messageNote->show();
        return;
    }
    m_messageNote->hide();
    m_tabs->setCurrentIndex(SourceTab);
    fillTab(SourceTab);
    const int line = static_cast<int>(m.line);
    m_source->goToLine(line, std::max(1, static_cast<int>(m.column)));
    if (!m_source->markedLines().contains(line))
        m_source->markLine(line, qs(m.severity));
    m_source->setFocus();
}

void Inspector::fillCorrectness()
{
    const NodeInfo& n = *current();
    m_correctness->setChecks(n.result && n.result->checks ? *n.result->checks : std::vector<core::protocol::Check>());
    const int total = m_correctness->rowCount();
    const int failed = m_correctness->failedCount();
    QString summary;
    if (n.id == 0)
        summary = tr("The root is not a candidate.");
    else if (total == 0)
        summary = n.status == NodeInfo::Status::Pending
            ? tr("Not checked yet.")
            : tr("No checks ran: %1").arg(n.failureMessage.isEmpty() ? n.failureKind : n.failureMessage);
    else if (failed == 0)
        summary = total == 1 ? tr("1 check, passed.") : tr("%1 checks, all passed.").arg(total);
    else
        summary = tr("%1 of %2 checks failed; hover a row for its first mismatches.").arg(failed).arg(total);
    m_correctnessSummary->setText(summary);
}

void Inspector::fillTiming()
{
    const NodeInfo& n = *current();
    QString empty;
    if (n.id == 0)
        empty = tr("The root is not a candidate.");
    else if (n.status == NodeInfo::Status::Pending)
        empty = tr("Not evaluated yet.");
    else if (n.status == NodeInfo::Status::Failed)
        empty = tr("No timing: the candidate failed (%1) at the %2 stage.\n%3")
                    .arg(n.failureKind, n.result && n.result->failure ? qs(n.result->failure->stage) : QString(),
                        n.failureMessage);
    else
        empty = tr("The result has no timing samples.");
    m_timing->setResult(n.result, empty);
}

void Inspector::fillLlm()
{
    const NodeInfo& n = *current();
    std::vector<core::LlmCallRecord> calls;
    if (const core::Store* store = m_data->store())
        for (auto& c : store->llmCalls(m_data->sessionId()))
            if (c.nodeId == n.id)
                calls.push_back(std::move(c));
    if (calls.empty()) {
        QString why;
        if (n.id == 0)
            why = tr("The root is not a candidate.");
        else if (n.origin == QLatin1String("seed"))
            why = tr("A seed from the problem folder (no model call).");
        else if (n.origin == QLatin1String("manual"))
            why = tr("Written by hand as a manual child (no model call).");
        else if (n.origin == QLatin1String("warm"))
            why = tr("A warm start: one of the best kernels of an earlier session on this problem or its family "
                     "(no model call; 'hone show' names the session and node).");
        else if (n.hasLlmCall && !m_data->store())
            why = tr("A model wrote this node, but no store is open to read the call from.");
        else
            why = tr("Written by the knob synthesizer (no model call).");
        m_llm->setPlainText(why);
        return;
    }
    QString html;
    for (const auto& c : calls) {
        html += QStringLiteral("<h3>%1</h3>")
                    .arg(tr("Call %1: %2 (%3)")
                             .arg(c.id)
                             .arg(QString::fromStdString(c.purpose), QString::fromStdString(c.op))
                             .toHtmlEscaped());
        QStringList facts;
        facts << QString::fromStdString(c.provider + " / " + c.model);
        facts << tr("status %1").arg(QString::fromStdString(c.status));
        facts << tr("%1 tokens in, %2 out%3")
                     .arg(c.tokensIn)
                     .arg(c.tokensOut)
                     .arg(c.usageReported ? QString() : tr(" (estimated)"));
        facts << tr("latency %1 ms (first token %2 ms)")
                     .arg(QString::number(c.latencyMs, 'f', 0), QString::number(c.firstTokenMs, 'f', 0));
        facts << tr("cost $%1").arg(QString::number(c.costUsd, 'f', 4));
        if (c.attempts > 1)
            facts << tr("%1 attempts").arg(c.attempts);
        if (c.httpStatus)
            facts << tr("HTTP %1").arg(c.httpStatus);
        if (!c.finishReason.empty())
            facts << tr("finish: %1").arg(QString::fromStdString(c.finishReason));
        html += QStringLiteral("<p>%1</p>").arg(facts.join(QStringLiteral(" · ")).toHtmlEscaped());
        if (!c.error.empty())
            html += QStringLiteral("<p style='color:#c62828'>%1</p>")
                        .arg(QString::fromStdString(c.error).toHtmlEscaped());
        if (const QString system = promptText(c.prompt, "system"); !system.isEmpty())
            html += QStringLiteral("<h4>system</h4>") + pre(system);
        if (c.prompt.is_object() && c.prompt.contains("messages") && c.prompt["messages"].is_array())
            for (const auto& m : c.prompt["messages"])
                html += QStringLiteral("<h4>%1</h4>").arg(promptText(m, "role").toHtmlEscaped())
                    + pre(promptText(m, "content"));
        html += QStringLiteral("<h4>%1</h4>").arg(tr("assistant (reply)"))
            + pre(QString::fromStdString(c.response));
    }
    m_llm->setHtml(html);
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
