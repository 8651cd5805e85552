// The `hone` command line as a user meets it: the real binary ($HONE_CLI) in a subprocess.
// --version, "did you mean", type errors that name the option, defaults in --help, the exit
// codes of app/exit_code.h (and their table in docs/CLI.md), reading commands that refuse a
// missing store without creating anything, and the completion script and man page written
// from the command definitions.

#include "app/exit_code.h"
#include "core/engine.h"
#include "core/protocol.h"

#include "tests/hone_cli.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using hone::app::ExitCode;

namespace {

using Cli = HoneRun;

Cli runHone(
    const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
{
    return runHoneCli(args, 120000, env);
}

QString problemDir()
{
    return QStringLiteral(HONE_SOURCE_DIR "/resources/problems/cpu/softmax");
}

/// A sibling binary of hone (hone-worker, hone-workbench), "" when it was not built.
QString sibling(const QString& name)
{
    const QString path = QFileInfo(qEnvironmentVariable("HONE_CLI")).dir().filePath(name);
    return QFileInfo(path).isExecutable() ? path : QString();
}

Cli runBinary(const QString& binary, const QStringList& args)
{
    QProcess p;
    p.start(binary, args);
    p.waitForFinished(60000);
    return { p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
        QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError()) };
}

/// Runs the bash completion for `line` (the word under the cursor last) and returns its words.
QStringList bashComplete(const QString& script, const QStringList& line)
{
    QStringList quoted;
    for (const auto& w : line)
        quoted << "'" + w + "'";
    const QString cmd = script + "\nCOMP_WORDS=(" + quoted.join(' ')
        + ")\nCOMP_CWORD=" + QString::number(line.size() - 1) + "\n_hone\necho \"${COMPREPLY[*]}\"\n";
    QProcess p;
    p.start(QStringLiteral("bash"), { QStringLiteral("-c"), cmd });
    p.waitForFinished(30000);
    return QString::fromUtf8(p.readAllStandardOutput()).trimmed().split(' ', Qt::SkipEmptyParts);
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        if (qEnvironmentVariableIsEmpty("HONE_CLI"))
            QSKIP("HONE_CLI is not set (run through ctest)");
    }

    void versionPrintsAndExitsZero()
    {
        for (const QStringList& args : { QStringList { "--version" }, QStringList { "show", "--version" } }) {
            Cli r = runHone(args);
            QVERIFY2(r.code == 0, qPrintable(args.join(' ') + ": " + r.err));
            QVERIFY2(QRegularExpression(QStringLiteral("^hone \\d+\\.\\d+\\.\\d+ ")).match(r.out).hasMatch(),
                qPrintable(r.out));
            QVERIFY2(r.out.contains(QStringLiteral("worker protocol %1").arg(hone::core::protocol::kVersion)),
                qPrintable(r.out));
            // Where it finds its resources: in a build tree, build/X/share/hone (linked to the
            // source tree's resources/), found beside the binary, not through a compiled-in path.
            const QString share
                = QFileInfo(qEnvironmentVariable("HONE_CLI")).dir().filePath(QStringLiteral("../share/hone"));
            QVERIFY2(r.out.contains(QStringLiteral("\nresources ") + QDir::cleanPath(share) + '\n'),
                qPrintable(r.out));
        }
        // $HONE_RESOURCES wins.
        QTemporaryDir tmp;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("HONE_RESOURCES"), tmp.path());
        Cli chosen = runHone({ "--version" }, env);
        QVERIFY2(
            chosen.out.contains(QStringLiteral("\nresources ") + tmp.path() + '\n'), qPrintable(chosen.out));
    }

    void everyBinaryPrintsItsVersion()
    {
        const QString worker = sibling(QStringLiteral("hone-worker"));
        QVERIFY(!worker.isEmpty());
        Cli w = runBinary(worker, { QStringLiteral("--version") });
        QCOMPARE(w.code, 0);
        QVERIFY2(QRegularExpression(QStringLiteral("^hone-worker \\d+\\.\\d+\\.\\d+ protocol %1\n$")
                                        .arg(hone::core::protocol::kVersion))
                     .match(w.out)
                     .hasMatch(),
            qPrintable(w.out));
        const QString workbench = sibling(QStringLiteral("hone-workbench"));
        if (workbench.isEmpty())
            QSKIP("hone-workbench is not built (no Qt Widgets)");
        // No display needed: --version runs before any window.
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        QProcess p;
        p.setProcessEnvironment(env);
        p.start(workbench, { QStringLiteral("--version") });
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        QVERIFY2(QRegularExpression(QStringLiteral("^hone-workbench \\d+\\.\\d+\\.\\d+\n$"))
                     .match(QString::fromUtf8(p.readAllStandardOutput()))
                     .hasMatch(),
            p.readAllStandardError().constData());
    }

    void manPagesOfTheOtherBinaries()
    {
        const QString worker = sibling(QStringLiteral("hone-worker"));
        Cli w = runBinary(worker, { QStringLiteral("--man") });
        QCOMPARE(w.code, 0);
        QVERIFY2(w.out.startsWith(QStringLiteral(".TH HONE\\-WORKER 1"))
                && w.out.contains(QStringLiteral("\\fB\\-\\-cache\\-dir\\fR")),
            qPrintable(w.out));
        const QString workbench = sibling(QStringLiteral("hone-workbench"));
        if (workbench.isEmpty())
            QSKIP("hone-workbench is not built (no Qt Widgets)");
        Cli b = runBinary(workbench, { QStringLiteral("--man") });
        QCOMPARE(b.code, 0);
        QVERIFY2(b.out.startsWith(QStringLiteral(".TH HONE\\-WORKBENCH 1"))
                && b.out.contains(QStringLiteral("\\fB\\-\\-budget\\fR \\fIN\\fR"))
                && b.out.contains(QStringLiteral("(default: 120)")),
            qPrintable(b.out));
    }

    void mistypedWordsGetASuggestion_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("suggestion");
        QTest::addRow("command") << QStringList { "rnu" } << "did you mean 'run'?";
        QTest::addRow("command of kb") << QStringList { "kb", "serch", "banks" } << "did you mean 'search'?";
        QTest::addRow("global option")
            << QStringList { "--stroe", "x.db", "show" } << "did you mean '--store'?";
        QTest::addRow("command option")
            << QStringList { "run", problemDir(), "--budgte", "5" } << "did you mean '--budget'?";
    }
    void mistypedWordsGetASuggestion()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, suggestion);
        Cli r = runHone(args);
        QCOMPARE(r.code, hone::app::toInt(ExitCode::Usage));
        QVERIFY2(r.err.contains(suggestion), qPrintable(r.err));
        QVERIFY2(!r.err.contains(QStringLiteral("A subcommand is required")), qPrintable(r.err));
    }

    void noCommandListsTheCommands()
    {
        Cli r = runHone({});
        QCOMPARE(r.code, hone::app::toInt(ExitCode::Usage));
        QVERIFY2(
            r.err.contains(QStringLiteral("needs a command")) && r.err.contains(QStringLiteral("resume")),
            qPrintable(r.err));
    }

    void typeErrorsNameTheOptionAndType_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::addRow("--budget abc") << QStringList { "run", problemDir(), "--budget", "abc" }
                                      << "--budget: 'abc' is not a whole number";
        QTest::addRow("--workers 2.5") << QStringList { "run", problemDir(), "--workers", "2.5" }
                                       << "--workers: '2.5' is not a whole number";
        QTest::addRow("--seed -1") << QStringList { "run", problemDir(), "--seed", "-1" }
                                   << "--seed: '-1' is not a whole number of 0 or more";
        QTest::addRow("--target-speedup fast") << QStringList { "run", problemDir(), "--target-speedup",
            "fast" } << "--target-speedup: 'fast' is not a number";
        QTest::addRow("session id") << QStringList { "resume", "three" } << "'three' is not a whole number";
    }
    void typeErrorsNameTheOptionAndType()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        Cli r = runHone(args);
        QCOMPARE(r.code, hone::app::toInt(ExitCode::Usage));
        QVERIFY2(r.err.contains(expected), qPrintable(r.err));
        QVERIFY2(!r.err.contains(QStringLiteral("not in range")), qPrintable(r.err));
    }

    void missingInputsAreInputErrors()
    {
        QTemporaryDir tmp;
        Cli problem = runHone({ "run", tmp.filePath(QStringLiteral("no-problem")) });
        QCOMPARE(problem.code, hone::app::toInt(ExitCode::Input));
        QVERIFY2(problem.err.contains(tmp.filePath(QStringLiteral("no-problem"))), qPrintable(problem.err));
        Cli candidate = runHone({ "eval", problemDir(), tmp.filePath(QStringLiteral("k.cpp")) });
        QCOMPARE(candidate.code, hone::app::toInt(ExitCode::Input));
        // A worker that cannot start is the environment, not the candidate.
        Cli worker = runHone({ "--worker", tmp.filePath(QStringLiteral("no-worker")), "eval", problemDir(),
            problemDir() + "/seeds/naive.cpp" });
        QCOMPARE(worker.code, hone::app::toInt(ExitCode::Environment));
        QVERIFY2(worker.out.contains(QStringLiteral("worker_error")), qPrintable(worker.out));
    }

    void helpShowsDefaultsNotFlagValues()
    {
        Cli top = runHone({ "--help" });
        QCOMPARE(top.code, 0);
        QVERIFY2(!top.out.contains('{' + QStringLiteral("false}"))
                && top.out.contains(QStringLiteral("--no-skills")),
            qPrintable(top.out));
        // The exit codes, each with its documented meaning.
        for (const auto& e : hone::app::kExitCodes)
            QVERIFY2(
                top.out.contains(QString::number(hone::app::toInt(e.code)) + "  " + e.meaning), e.meaning);

        Cli run = runHone({ "run", "--help" });
        QCOMPARE(run.code, 0);
        QVERIFY2(
            !run.out.contains(QStringLiteral("{false}")) && run.out.contains(QStringLiteral("--no-cache")),
            qPrintable(run.out));
        // An option's entry: its line and, where the name is long, the description wrapped below.
        auto entry = [&run](const QString& option) {
            const qsizetype at = run.out.indexOf("  " + option + ' ');
            return at < 0 ? QString()
                          : run.out.mid(at, run.out.indexOf(QStringLiteral("\n  -"), at + 1) - at);
        };
        const QString budgetLine = entry(QStringLiteral("--budget"));
        QVERIFY2(budgetLine.contains(QStringLiteral("(default: %1)").arg(hone::core::RunOptions {}.budget)),
            qPrintable(run.out));
        const QString policyLine = entry(QStringLiteral("--policy"));
        QVERIFY2(policyLine.contains(QStringLiteral("{uct,evolutionary,greedy,random,uniform,hillclimb,anneal,genetic,tpe,guided,hybrid}"))
                && policyLine.contains(QStringLiteral("hybrid, the default with --synth knob"))
                && policyLine.contains(QStringLiteral("uct, the default with --synth llm")),
            qPrintable(policyLine));
    }

    void exitCodesAreDistinct()
    {
        QSet<int> codes;
        QSet<QString> meanings;
        for (const auto& e : hone::app::kExitCodes) {
            codes.insert(hone::app::toInt(e.code));
            meanings.insert(QString::fromUtf8(e.meaning));
        }
        QCOMPARE(codes.size(), int(std::size(hone::app::kExitCodes)));
        QCOMPARE(meanings.size(), int(std::size(hone::app::kExitCodes)));
        const QSet<int> apart { hone::app::toInt(ExitCode::NoPassingCandidate),
            hone::app::toInt(ExitCode::EvaluationFailed), hone::app::toInt(ExitCode::TargetUnreachable),
            hone::app::toInt(ExitCode::Environment), hone::app::toInt(ExitCode::Input) };
        QCOMPARE(apart.size(), 5);
    }

    void aFailedCandidateIsEvaluationFailed()
    {
        QTemporaryDir tmp;
        const QString broken = tmp.filePath(QStringLiteral("broken.cpp"));
        QFile f(broken);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("#include <hone/kernel.h>\nextern \"C\" int hone_run(const hone_args* a) { return "
                "not_declared; }\n");
        f.close();
        Cli r
            = runHone({ "--cache-dir", tmp.filePath(QStringLiteral("cache")), "eval", problemDir(), broken });
        QCOMPARE(r.code, hone::app::toInt(ExitCode::EvaluationFailed));
        QVERIFY2(r.out.contains(QStringLiteral("FAILED     compile_error")), qPrintable(r.out + r.err));
    }

    void aSearchWithoutAPassingCandidateSaysSo()
    {
        // The softmax problem with its seeds broken: the search runs, and nothing passes.
        QTemporaryDir tmp;
        const QString problem = tmp.filePath(QStringLiteral("softmax"));
        QVERIFY(QDir().mkpath(problem + "/seeds"));
        for (const QString& name : QDir(problemDir()).entryList(QDir::Files))
            QVERIFY(QFile::copy(problemDir() + '/' + name, problem + '/' + name));
        for (const QString& name : QDir(problemDir() + "/seeds").entryList(QDir::Files)) {
            QFile seed(problem + "/seeds/" + name);
            QVERIFY(seed.open(QIODevice::WriteOnly));
            seed.write("#include <hone/kernel.h>\nthis does not compile;\n");
        }
        Cli r = runHone({ "--store", tmp.filePath(QStringLiteral("s.db")), "--cache-dir",
            tmp.filePath(QStringLiteral("cache")), "--no-skills", "run", problem, "--budget", "2",
            "--workers", "1" });
        QCOMPARE(r.code, hone::app::toInt(ExitCode::NoPassingCandidate));
        QVERIFY2(r.out.contains(QStringLiteral("best       none")), qPrintable(r.out + r.err));
    }

    void anUnreachableTargetIsTargetUnreachable()
    {
        if (QStandardPaths::findExecutable(QStringLiteral("ssh")).isEmpty())
            QSKIP("no ssh client");
        // Port 1 on the loopback refuses at once: ssh exits 255 on every attempt.
        QTemporaryDir tmp;
        QFile targets(tmp.filePath(QStringLiteral("targets.toml")));
        QVERIFY(targets.open(QIODevice::WriteOnly));
        targets.write(
            "[targets.nowhere]\nexecutor = \"ssh\"\nhost = \"127.0.0.1\"\nssh_config = \"/dev/null\"\n"
            "extra_args = [\"-p\", \"1\"]\nretries = 0\n");
        targets.close();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(
            QStringLiteral("HONE_CACHE_DIR"), tmp.filePath(QStringLiteral("cache"))); // the health file
        Cli r = runHone({ "--targets", targets.fileName(), "targets", "check", "nowhere" }, env);
        QCOMPARE(r.code, hone::app::toInt(ExitCode::TargetUnreachable));
        QVERIFY2(r.out.contains(QStringLiteral("nowhere")) && r.out.contains(QStringLiteral("FAILED")),
            qPrintable(r.out + r.err));
        // Deploy without --from: the worker's sources come from the tree above the resources
        // folder (core/resources.h), and ssh's status 255 at the probe is unreachable too.
        Cli deploy = runHone({ "--targets", targets.fileName(), "targets", "deploy", "nowhere" }, env);
        QCOMPARE(deploy.code, hone::app::toInt(ExitCode::TargetUnreachable));
        QVERIFY2(deploy.err.contains(QStringLiteral("failed at step 'probe'")), qPrintable(deploy.out + deploy.err));
    }

    void exitCodeTableIsInTheDocs()
    {
        QFile doc(QStringLiteral(HONE_SOURCE_DIR "/docs/CLI.md"));
        QVERIFY(doc.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(doc.readAll());
        for (const auto& e : hone::app::kExitCodes)
            QVERIFY2(
                text.contains(QStringLiteral("| %1 | %2 |").arg(hone::app::toInt(e.code)).arg(e.meaning)),
                e.meaning);
    }

    void readingCommandsRefuseAMissingStore_data()
    {
        QTest::addColumn<QStringList>("command");
        QTest::addRow("show") << QStringList { "show" };
        QTest::addRow("show SESSION") << QStringList { "show", "1" };
        QTest::addRow("resume") << QStringList { "resume", "1" };
        QTest::addRow("export") << QStringList { "export", "1/1", "OUT" };
        QTest::addRow("replay") << QStringList { "replay", "1" };
        QTest::addRow("export-trajectories") << QStringList { "export-trajectories", "--all", "OUT" };
        QTest::addRow("kb list") << QStringList { "kb", "list" };
        QTest::addRow("kb search") << QStringList { "kb", "search", "banks" };
        QTest::addRow("kb learn") << QStringList { "kb", "learn", "1" };
    }
    void readingCommandsRefuseAMissingStore()
    {
        QFETCH(QStringList, command);
        QTemporaryDir tmp;
        const QString out = tmp.filePath(QStringLiteral("out"));
        command.replaceInStrings(QStringLiteral("OUT"), out);
        // A mistyped file in an existing folder, and a path under a folder that does not exist.
        for (const QString& store :
            { tmp.filePath(QStringLiteral("hnoe.db")), tmp.filePath(QStringLiteral("no/such/x.db")) }) {
            Cli r = runHone(QStringList { "--store", store } + command);
            QCOMPARE(r.code, hone::app::toInt(ExitCode::Input));
            QVERIFY2(
                r.err.contains(store) && r.err.contains(QStringLiteral("does not exist")), qPrintable(r.err));
            QVERIFY2(QDir(tmp.path()).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden),
                qPrintable(QDir(tmp.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).join(' ')));
        }
        // The global option after the command reads the same.
        Cli after = runHone(command + QStringList { "--store", "/nonexistent/x.db" });
        QCOMPARE(after.code, hone::app::toInt(ExitCode::Input));
        QVERIFY2(after.err.contains(QStringLiteral("/nonexistent/x.db")), qPrintable(after.err));
        QVERIFY(!QFileInfo::exists(QStringLiteral("/nonexistent")));
    }

    void newStoresNeedTheirFolderOrCreate()
    {
        QTemporaryDir tmp;
        const QString store = tmp.filePath(QStringLiteral("a/b/hone.db"));
        Cli run = runHone({ "--store", store, "run", problemDir(), "--budget", "1" });
        QCOMPARE(run.code, hone::app::toInt(ExitCode::Input));
        QVERIFY2(run.err.contains(tmp.filePath(QStringLiteral("a/b")))
                && run.err.contains(QStringLiteral("--create")),
            qPrintable(run.err));
        QVERIFY(!QFileInfo::exists(tmp.filePath(QStringLiteral("a"))));

        QFile doc(tmp.filePath(QStringLiteral("note.md")));
        QVERIFY(doc.open(QIODevice::WriteOnly));
        doc.write("# Banks\n\nThirty-two banks of four bytes.\n");
        doc.close();
        Cli add = runHone({ "--store", store, "kb", "add", doc.fileName(), "--category", "hardware" });
        QCOMPARE(add.code, hone::app::toInt(ExitCode::Input));
        QVERIFY(!QFileInfo::exists(tmp.filePath(QStringLiteral("a"))));
        add = runHone(
            { "--store", store, "--create", "kb", "add", doc.fileName(), "--category", "hardware" });
        QVERIFY2(add.code == 0, qPrintable(add.err));
        QVERIFY(QFileInfo::exists(store));
        Cli list = runHone({ "--store", store, "kb", "list" });
        QVERIFY2(
            list.code == 0 && list.out.contains(QStringLiteral("note")), qPrintable(list.out + list.err));
    }

    void bashCompletionCompletesCommandsOptionsAndChoices()
    {
        Cli r = runHone({ "completion", "bash" });
        QCOMPARE(r.code, 0);
        for (const char* name :
            { "run", "resume", "eval", "show", "export", "bench", "kb", "replay", "targets", "completion" })
            QVERIFY2(r.out.contains(QString::fromLatin1(name)), name);
        if (QStandardPaths::findExecutable(QStringLiteral("bash")).isEmpty())
            QSKIP("no bash to run the script");
        QCOMPARE(bashComplete(r.out, { "hone", "re" }), (QStringList { "resume", "replay" }));
        QCOMPARE(bashComplete(r.out, { "hone", "kb", "se" }), QStringList { "search" });
        QVERIFY(bashComplete(r.out, { "hone", "run", "--bud" }).contains(QStringLiteral("--budget")));
        QVERIFY(bashComplete(r.out, { "hone", "--store", "x.db", "show", "--st" })
                    .contains(QStringLiteral("--store")));
        QCOMPARE(bashComplete(r.out, { "hone", "run", "--policy", "g" }), (QStringList { "greedy", "genetic", "guided" }));
        QCOMPARE(bashComplete(r.out, { "hone", "completion", "z" }), QStringList { "zsh" });
    }

    void zshCompletionParses()
    {
        Cli r = runHone({ "completion", "zsh" });
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.startsWith(QStringLiteral("#compdef hone")));
        QVERIFY(r.out.contains(QStringLiteral("'run:search for a faster kernel")));
        Cli bad = runHone({ "completion", "fish" });
        QCOMPARE(bad.code, hone::app::toInt(ExitCode::Usage));
        if (QStandardPaths::findExecutable(QStringLiteral("zsh")).isEmpty())
            QSKIP("no zsh to parse the script");
        QProcess p;
        p.start(QStringLiteral("zsh"), { QStringLiteral("-n"), QStringLiteral("-c"), r.out });
        QVERIFY(p.waitForFinished(30000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        // Run it with the completion system's builtins replaced by printers: `hone kb se<TAB>`.
        const QString stubs = QStringLiteral("_describe() { shift 3; print -r -- \"${(P)1}\"; }\ncompadd() { "
                                             "shift; print -r -- \"${(P)1}\"; }\n"
                                             "_files() { print FILES; }\n");
        QProcess c;
        c.start(QStringLiteral("zsh"),
            { QStringLiteral("-c"), stubs + "words=(hone kb se); CURRENT=3\n" + r.out });
        QVERIFY(c.waitForFinished(30000));
        const QString offered = QString::fromUtf8(c.readAllStandardOutput());
        QVERIFY2(offered.contains(QStringLiteral("search:retrieve chunks"))
                && !offered.contains(QStringLiteral("resume:")),
            qPrintable(offered + c.readAllStandardError()));
    }

    void manPageCoversEveryCommand()
    {
        Cli r = runHone({ "--man" });
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains(QStringLiteral(".TH HONE 1")));
        QVERIFY(r.out.contains(QStringLiteral(".SH \"EXIT STATUS\"")));
        for (const char* cmd :
            { "hone run PROBLEM", "hone kb search", "hone targets check", "hone completion SHELL" })
            QVERIFY2(
                r.out.contains(QStringLiteral(".SS \"") + QString::fromLatin1(cmd).replace('-', "\\-")), cmd);
        QVERIFY(r.out.contains(QStringLiteral("\\fB\\-\\-budget\\fR")));
        QVERIFY(!r.out.contains(QStringLiteral("{false}")));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
