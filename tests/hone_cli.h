#pragma once

#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

/// What one run of the `hone` command line ($HONE_CLI, a separate process) gave back; `code` is
/// -1 when it crashed or was killed.
struct HoneRun {
    int code = -1;
    QString out;
    QString err;
};

/// Runs `hone args`; a run past `timeoutMs` is killed (code -1).
inline HoneRun runHoneCli(
    const QStringList& args, int timeoutMs, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(qEnvironmentVariable("HONE_CLI"), args);
    const bool finished = p.waitForFinished(timeoutMs);
    if (!finished) {
        p.kill();
        p.waitForFinished();
    }
    return { finished && p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
        QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError()) };
}
