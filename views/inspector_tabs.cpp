// The Inspector's result tabs: the compiler's output (messages, log, per-kernel resources), the
// correctness checks, the timing samples and the model call that wrote the node (inspector.cpp
// holds the panel, its header, the source and the diff).
#include "views/inspector.h"

#include "views/code_view.h"
#include "views/timing_plot.h"

#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>

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

QString pre(const QString& body)
{
    return QStringLiteral("<pre style=\"white-space: pre-wrap\">%1</pre>").arg(body.toHtmlEscaped());
}

} // namespace

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

} // namespace hone::views
