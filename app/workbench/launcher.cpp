#include "app/workbench/launcher.h"

#include "backends/targets.h"
#include "core/knob_policy.h"

#include "app/llm_cli.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSizePolicy>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <stdexcept>

namespace hone::app {

Launcher::Launcher(QWidget* parent)
    : QWidget(parent)
{
    auto* form = new QFormLayout;
    m_form = form;
    form->setRowWrapPolicy(QFormLayout::DontWrapRows); // resizeEvent puts labels above when narrow
    m_problem = new QLineEdit(this);
    m_problem->setPlaceholderText(tr("a problem folder (problem.toml, reference.cpp, seeds/)"));
    m_problem->setMinimumWidth(80); // the dock may be narrow: the field shrinks, the button stays whole
    auto* browse = new QPushButton(tr("Open…"), this);
    browse->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Problem folder"), m_problem->text());
        if (!dir.isEmpty())
            m_problem->setText(dir);
    });
    auto* problemRow = new QHBoxLayout;
    problemRow->addWidget(m_problem, 1);
    problemRow->addWidget(browse);
    form->addRow(tr("Problem"), problemRow);

    m_target = new QComboBox(this);
    m_target->addItems({"auto", "cpu", "cuda"});
    m_target->setToolTip(tr("auto: the kind of the problem's baseline seed"));
    form->addRow(tr("Target"), m_target);
    m_runOn = new QComboBox(this);
    m_runOn->addItem(tr("this machine"), QString());
    m_runOn->setToolTip(tr("where candidates are evaluated: this machine, or a target of the targets file "
                           "(ssh, Slurm; docs/REMOTE.md)"));
    form->addRow(tr("Run on"), m_runOn);
    m_synth = new QComboBox(this);
    m_synth->addItems({"knob", "grid", "llm"});
    m_synth->setToolTip(tr("knob: offline knob and variant search over the seeds; grid: every admissible knob "
                           "assignment of each seed once (a sweep); llm: a model behind an OpenAI-compatible or "
                           "Anthropic endpoint proposes children (docs/LLM.md)"));
    form->addRow(tr("Synthesizer"), m_synth);
    m_llmBox = new QWidget(this);
    auto* llmForm = new QFormLayout(m_llmBox);
    llmForm->setContentsMargins(16, 0, 0, 0);
    m_provider = new QComboBox(m_llmBox);
    m_provider->addItems({"openai", "anthropic"});
    m_llmUrl = new QLineEdit(m_llmBox);
    m_llmUrl->setPlaceholderText(tr("default: the provider's endpoint, e.g. http://127.0.0.1:8000/v1 for a local server"));
    m_llmModel = new QLineEdit(m_llmBox);
    m_llmModel->setPlaceholderText(tr("the model as the provider names it (required)"));
    m_llmKeyEnv = new QLineEdit(m_llmBox);
    m_llmKeyEnv->setPlaceholderText(tr("environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY)"));
    llmForm->addRow(tr("Provider"), m_provider);
    llmForm->addRow(tr("Endpoint"), m_llmUrl);
    llmForm->addRow(tr("Model"), m_llmModel);
    llmForm->addRow(tr("Key variable"), m_llmKeyEnv);
    form->addRow(m_llmBox);
    m_llmBox->setVisible(false);
    connect(m_synth, &QComboBox::currentTextChanged, this,
        [this](const QString& synth) { m_llmBox->setVisible(synth == "llm"); });
    m_policy = new QComboBox(this);
    // The knob-space policies need --synth knob (docs/SEARCH.md); the default follows the synthesizer.
    for (const auto& name : core::allPolicyNames())
        m_policy->addItem(QString::fromStdString(name));
    m_policy->setCurrentText(QString::fromStdString(core::defaultPolicy(m_synth->currentText().toStdString())));
    connect(m_synth, &QComboBox::currentTextChanged, this, [this](const QString& synth) {
        m_policy->setCurrentText(QString::fromStdString(core::defaultPolicy(synth.toStdString())));
    });
    form->addRow(tr("Policy"), m_policy);
    m_memoryOp = new QComboBox(this);
    m_memoryOp->addItems({"auto", "inherit", "compare", "combine", "restart"});
    m_memoryOp->setToolTip(tr("the context each proposal draws: auto lets a bandit choose per expansion and "
                              "restarts when the search stalls; the knob search mutates (inherit), moves "
                              "towards siblings (compare), both (combine) or starts afresh (restart)"));
    form->addRow(tr("Memory operator"), m_memoryOp);
    m_warmStart = new QCheckBox(tr("Warm start from earlier runs"), this);
    m_warmStart->setChecked(true);
    m_warmStart->setToolTip(tr("warm start: the best kernels of earlier sessions on this problem, then on its "
                               "family, join the tree after the seeds"));
    form->addRow(m_warmStart); // the whole row: beside a label it would widen the form
    m_budget = new QSpinBox(this);
    m_budget->setRange(1, 100000);
    m_budget->setValue(120);
    form->addRow(tr("Budget (evaluations)"), m_budget);
    m_workers = new QSpinBox(this);
    m_workers->setRange(1, 256);
    m_workers->setValue(2);
    form->addRow(tr("Workers"), m_workers);
    m_seed = new QSpinBox(this);
    m_seed->setRange(0, 1 << 30);
    m_seed->setValue(1);
    form->addRow(tr("Seed"), m_seed);
    m_stall = new QSpinBox(this);
    m_stall->setRange(0, 100000);
    m_stall->setSpecialValueText(tr("never"));
    form->addRow(tr("Stop after no gain in"), m_stall);
    m_timeLimit = new QDoubleSpinBox(this);
    m_timeLimit->setRange(0, 1e7);
    m_timeLimit->setSuffix(tr(" s"));
    m_timeLimit->setSpecialValueText(tr("none"));
    form->addRow(tr("Time limit"), m_timeLimit);

    m_start = new QPushButton(tr("Start"), this);
    m_start->setObjectName("start");
    m_pause = new QPushButton(tr("Pause"), this);
    m_pause->setObjectName("pause");
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setObjectName("stop");
    connect(m_start, &QPushButton::clicked, this, &Launcher::startRequested);
    connect(m_pause, &QPushButton::clicked, this, [this] {
        if (m_pause->text() == tr("Pause"))
            emit pauseRequested();
        else
            emit resumeRequested();
    });
    connect(m_stop, &QPushButton::clicked, this, &Launcher::stopRequested);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_start);
    buttons->addWidget(m_pause);
    buttons->addWidget(m_stop);

    m_message = new QLabel(this);
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_sessions = new QTableWidget(0, 6, this);
    m_sessions->setHorizontalHeaderLabels({tr("session"), tr("problem"), tr("target"), tr("status"), tr("evals"), tr("best")});
    m_sessions->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_sessions->setSelectionMode(QAbstractItemView::SingleSelection);
    m_sessions->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_sessions->verticalHeader()->hide();
    m_sessions->horizontalHeader()->setStretchLastSection(true);
    connect(m_sessions, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        emit openSessionRequested(m_sessions->item(row, 0)->text().toLongLong());
    });
    auto* open = new QPushButton(tr("Open"), this);
    auto* resume = new QPushButton(tr("Resume"), this);
    auto* refresh = new QPushButton(tr("Refresh"), this);
    m_extra = new QSpinBox(this);
    m_extra->setRange(0, 100000);
    m_extra->setValue(40);
    m_extra->setPrefix(tr("+"));
    m_extra->setToolTip(tr("evaluations added to the session's budget"));
    connect(open, &QPushButton::clicked, this, [this] {
        if (selectedSession() >= 0)
            emit openSessionRequested(selectedSession());
    });
    connect(resume, &QPushButton::clicked, this, [this] {
        if (selectedSession() >= 0)
            emit resumeSessionRequested(selectedSession(), m_extra->value());
    });
    connect(refresh, &QPushButton::clicked, this, &Launcher::refreshRequested);
    auto* sessionButtons = new QHBoxLayout;
    sessionButtons->addWidget(open);
    sessionButtons->addWidget(resume);
    sessionButtons->addWidget(m_extra);
    sessionButtons->addStretch();
    auto* sessionsHeader = new QHBoxLayout; // Refresh beside the title: the row below stays narrow
    sessionsHeader->addWidget(new QLabel(tr("Sessions in the store"), this), 1);
    sessionsHeader->addWidget(refresh);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addLayout(buttons);
    layout->addWidget(m_message);
    layout->addLayout(sessionsHeader);
    layout->addWidget(m_sessions, 1);
    layout->addLayout(sessionButtons);

    // A combo box or spin box asks for the width of its longest entry; in a dock narrower than
    // that (1366-pixel screens) the whole form would scroll sideways and cut off its right edge.
    for (auto* combo : findChildren<QComboBox*>()) {
        combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        combo->setMinimumContentsLength(6);
    }
    for (auto* spin : findChildren<QAbstractSpinBox*>())
        spin->setMinimumWidth(60);
    for (auto* button : findChildren<QPushButton*>())
        button->setMinimumWidth(button->fontMetrics().horizontalAdvance(button->text()) + 16);
    setRunning(false, false);
}

void Launcher::measureWidths() const
{
    if (m_sideBySideWidth > 0)
        return;
    ensurePolished();
    // A nested form's change does not reach the outer layout's cached sizes: invalidate both.
    const auto was = m_form->rowWrapPolicy();
    m_form->setRowWrapPolicy(QFormLayout::WrapAllRows);
    layout()->invalidate();
    m_stackedWidth = QWidget::minimumSizeHint().width();
    m_form->setRowWrapPolicy(QFormLayout::DontWrapRows);
    layout()->invalidate();
    m_sideBySideWidth = QWidget::minimumSizeHint().width();
    m_form->setRowWrapPolicy(was);
    layout()->invalidate();
}

QSize Launcher::minimumSizeHint() const
{
    measureWidths();
    return QSize(m_stackedWidth, QWidget::minimumSizeHint().height());
}

void Launcher::resizeEvent(QResizeEvent* event)
{
    measureWidths();
    const auto wanted = width() < m_sideBySideWidth ? QFormLayout::WrapAllRows : QFormLayout::DontWrapRows;
    if (m_form->rowWrapPolicy() != wanted)
        m_form->setRowWrapPolicy(wanted);
    QWidget::resizeEvent(event);
}

core::RunOptions Launcher::options() const
{
    const QString dir = m_problem->text().trimmed();
    if (dir.isEmpty())
        throw std::runtime_error("Problem: choose a problem folder (Open…), e.g. resources/problems/cpu/softmax");
    if (!QFileInfo(QDir(dir).filePath("problem.toml")).isFile())
        throw std::runtime_error(("Problem: " + dir + " has no problem.toml; pick the folder that holds it").toStdString());
    core::RunOptions o;
    o.problemDir = dir.toStdString();
    o.target = m_target->currentText().toStdString();
    o.synth = m_synth->currentText().toStdString();
    o.policy = m_policy->currentText().toStdString();
    o.memoryOp = m_memoryOp->currentText().toStdString();
    o.warmStart = m_warmStart->isChecked();
    o.budget = m_budget->value();
    o.workers = m_workers->value();
    o.seed = static_cast<uint64_t>(m_seed->value());
    o.stall = m_stall->value();
    o.timeLimitSeconds = m_timeLimit->value();
    if (o.synth == "llm") {
        LlmCliOptions llm;
        llm.provider = m_provider->currentText().toStdString();
        llm.url = m_llmUrl->text().trimmed().toStdString();
        llm.model = m_llmModel->text().trimmed().toStdString();
        llm.keyEnv = m_llmKeyEnv->text().trimmed().toStdString();
        try {
            applyLlmOptions(llm, o);
        } catch (const std::exception& e) {
            throw std::runtime_error(std::string("LLM: ") + e.what());
        }
    }
    return o;
}

void Launcher::setProblemDir(const QString& dir) { m_problem->setText(dir); }

void Launcher::setLlm(const QString& provider, const QString& url, const QString& model, const QString& keyEnv)
{
    m_synth->setCurrentText("llm");
    m_provider->setCurrentText(provider);
    m_llmUrl->setText(url);
    m_llmModel->setText(model);
    m_llmKeyEnv->setText(keyEnv);
}
void Launcher::setBudget(int budget) { m_budget->setValue(budget); }
void Launcher::setWorkers(int workers) { m_workers->setValue(workers); }

void Launcher::setTargetsFile(const QString& file)
{
    const QString keep = runOn();
    m_runOn->clear();
    m_runOn->addItem(tr("this machine"), QString());
    const std::filesystem::path path = file.isEmpty() ? backends::defaultTargetsPath() : std::filesystem::path(file.toStdString());
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        if (!file.isEmpty())
            setMessage(tr("targets file %1 not found").arg(file), true);
        return;
    }
    try {
        for (const auto& t : backends::readTargets(path))
            m_runOn->addItem(QString::fromStdString(t.name + " (" + t.executor + ", " + t.device + ")"),
                QString::fromStdString(t.name));
        m_runOn->setToolTip(tr("targets of %1").arg(QString::fromStdString(path.string())));
    } catch (const std::exception& e) {
        setMessage(QString::fromUtf8(e.what()), true);
    }
    setRunOn(keep);
}

bool Launcher::setRunOn(const QString& target)
{
    const int i = m_runOn->findData(target);
    if (i < 0)
        return false;
    m_runOn->setCurrentIndex(i);
    return true;
}

QString Launcher::runOn() const { return m_runOn->currentData().toString(); }

void Launcher::setRunning(bool running, bool paused)
{
    m_start->setEnabled(!running);
    m_pause->setEnabled(running);
    m_stop->setEnabled(running);
    m_pause->setText(paused ? tr("Resume") : tr("Pause"));
}

void Launcher::showSessions(
    const std::vector<core::SessionRecord>& sessions, const std::map<int64_t, std::pair<int, double>>& stats)
{
    m_sessions->setRowCount(0);
    for (auto it = sessions.rbegin(); it != sessions.rend(); ++it) {
        const int row = m_sessions->rowCount();
        m_sessions->insertRow(row);
        auto st = stats.count(it->id) ? stats.at(it->id) : std::pair<int, double> {0, 0.0};
        const QStringList cells {QString::number(it->id), QString::fromStdString(it->problemName),
            QString::fromStdString(it->target), QString::fromStdString(it->status), QString::number(st.first),
            st.second > 0 ? QString::number(st.second, 'f', 2) + "x" : QString("-")};
        for (int c = 0; c < cells.size(); ++c)
            m_sessions->setItem(row, c, new QTableWidgetItem(cells[c]));
    }
}

void Launcher::setMessage(const QString& text, bool error)
{
    m_message->setText(text);
    m_message->setStyleSheet(error ? "color: #b00020" : "");
}

qint64 Launcher::selectedSession() const
{
    const auto rows = m_sessions->selectionModel()->selectedRows();
    if (rows.isEmpty())
        return -1;
    return m_sessions->item(rows.first().row(), 0)->text().toLongLong();
}

int Launcher::extraBudget() const { return m_extra->value(); }

} // namespace hone::app
