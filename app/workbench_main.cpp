// hone-workbench: the desktop workbench (docs/WORKBENCH.md).
#include "app/cli_common.h"
#include "app/workbench/launcher.h"
#include "app/workbench/main_window.h"
#include "views/inspector.h"
#include "views/kb_curator.h"
#include "views/knowledge_hits.h"
#include "views/node_table.h"
#include "views/occupancy_plot.h"
#include "views/progress_plot.h"
#include "views/review_panel.h"
#include "views/roofline_plot.h"
#include "views/tree_view.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QScreen>
#include <QTabWidget>
#include <QTimer>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

using namespace hone;

namespace {

void settle(int ms)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms)
        QApplication::processEvents(QEventLoop::AllEvents, 20);
}

bool save(QWidget* w, const QString& dir, const QString& name)
{
    const QString path = QDir(dir).filePath(name + ".png");
    const bool ok = w->grab().save(path);
    std::printf("%s %s\n", ok ? "saved" : "FAILED to save", qPrintable(path));
    return ok;
}

/// Shows the dock of `panel` in front, lets it lay out and paint, then saves it.
bool shoot(app::MainWindow& w, QWidget* panel, const QString& dir, const QString& name)
{
    if (QDockWidget* d = w.dockOf(panel)) {
        // Shot floating at a readable size, then put back where it was.
        const bool wasFloating = d->isFloating();
        d->show();
        d->setFloating(true);
        d->resize(1200, 760);
        d->raise();
        settle(500);
        const bool ok = save(d, dir, name);
        d->setFloating(wasFloating);
        settle(100);
        return ok;
    }
    settle(300);
    return save(panel, dir, name);
}

/// The screenshot tour (scripts/screenshots): every panel on the best node of the session.
int screenshots(app::MainWindow& w, const QString& dir, const QString& prefix)
{
    QDir().mkpath(dir);
    auto& data = *w.sessionData();
    const qint64 best = data.bestNode();
    if (best < 0) {
        std::fprintf(stderr, "hone-workbench: the session has no successful candidate to show\n");
        return 1;
    }
    w.selection()->setCurrent(best);
    w.treeView()->refresh();
    w.treeView()->fitAll();
    settle(600);
    bool ok = save(&w, dir, prefix + "window");
    // The tree alone: the docks step aside so that it gets the whole window, fitted.
    QList<QDockWidget*> shown;
    for (QDockWidget* d : w.docks())
        if (d->isVisible()) {
            shown << d;
            d->hide();
        }
    settle(300);
    w.treeView()->fitAll();
    settle(400);
    ok &= save(w.centralWidget(), dir, prefix + "tree"); // the tree with its legend
    for (QDockWidget* d : shown)
        d->show();
    settle(300);
    ok &= shoot(w, w.nodeTable(), dir, prefix + "nodes");
    ok &= shoot(w, w.roofline(), dir, prefix + "roofline");
    ok &= shoot(w, w.occupancy(), dir, prefix + "occupancy");
    ok &= shoot(w, w.progress(), dir, prefix + "progress");
    auto* inspector = w.inspector();
    const std::pair<int, const char*> tabs[] = {{views::Inspector::SourceTab, "inspector-source"},
        {views::Inspector::CompileTab, "inspector-compile"}, {views::Inspector::CorrectnessTab, "inspector-correctness"},
        {views::Inspector::TimingTab, "inspector-timing"}, {views::Inspector::LlmTab, "inspector-llm"}};
    for (const auto& [tab, name] : tabs) {
        inspector->tabs()->setCurrentIndex(tab);
        ok &= shoot(w, reinterpret_cast<QWidget*>(inspector), dir, prefix + name);
    }
    inspector->setDiffAgainst(views::Inspector::AgainstBaseline);
    inspector->tabs()->setCurrentIndex(views::Inspector::DiffTab);
    ok &= shoot(w, reinterpret_cast<QWidget*>(inspector), dir, prefix + "diff");
    ok &= shoot(w, w.knowledgeHits(), dir, prefix + "knowledge");
    ok &= shoot(w, w.curator(), dir, prefix + "curator");
    w.actions()->reviewRequested(best);
    ok &= shoot(w, w.review(), dir, prefix + "review");
    w.review()->tabs()->setCurrentIndex(1); // the evidence beside the diff
    ok &= shoot(w, w.review(), dir, prefix + "review-evidence");
    w.review()->tabs()->setCurrentIndex(0);
    ok &= shoot(w, w.launcher(), dir, prefix + "launcher");
    return ok ? 0 : 1;
}

/// roff text: backslashes and leading dots or quotes escaped, dashes as \-.
QString roff(QString s)
{
    s.replace('\\', QStringLiteral("\\e")).replace('-', QStringLiteral("\\-"));
    if (s.startsWith('.') || s.startsWith('\''))
        s.prepend(QStringLiteral("\\&"));
    return s;
}

/// The man page, written from the same option definitions as --help (app/CMakeLists.txt
/// installs it as hone-workbench.1).
QString manPage(const QCommandLineParser& parser, const QList<QCommandLineOption>& options)
{
    QString m;
    m += QStringLiteral(".TH HONE\\-WORKBENCH 1 \"\" \"hone %1\" \"User Commands\"\n").arg(QStringLiteral(HONE_VERSION));
    m += QStringLiteral(".SH NAME\nhone\\-workbench \\- ") + roff(parser.applicationDescription()) + '\n';
    m += QStringLiteral(".SH SYNOPSIS\n.B hone\\-workbench\n[\\fIOPTIONS\\fR] [\\fIPROBLEM\\fR]\n");
    m += QStringLiteral(".SH DESCRIPTION\nThe desktop workbench of Hone: a live search tree, the inspector, the roofline, "
                        "steering and the review of the winner. The headless command line is \\fBhone\\fR(1).\n");
    m += QStringLiteral(".SH OPTIONS\n");
    for (const QCommandLineOption& o : options) {
        if (o.flags() & QCommandLineOption::HiddenFromHelp)
            continue;
        QString names;
        for (const QString& n : o.names())
            names += (names.isEmpty() ? "" : ", ") + QStringLiteral("\\fB") + roff((n.size() == 1 ? "-" : "--") + n)
                + QStringLiteral("\\fR");
        if (!o.valueName().isEmpty())
            names += QStringLiteral(" \\fI") + roff(o.valueName()) + QStringLiteral("\\fR");
        QString text = o.description();
        if (!o.defaultValues().isEmpty() && !o.defaultValues().first().isEmpty())
            text += QStringLiteral(" (default: %1)").arg(o.defaultValues().join(','));
        m += QStringLiteral(".TP\n") + names + '\n' + roff(text) + '\n';
    }
    m += QStringLiteral(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nprint the options and exit\n"
                        ".TP\n\\fB\\-v\\fR, \\fB\\-\\-version\\fR\nprint the version and exit\n");
    m += QStringLiteral(".SH ENVIRONMENT\n.TP\n.B HONE_STORE\nthe store when \\fB\\-\\-store\\fR is not given\n"
                        ".TP\n.B HONE_RESOURCES\nthe resources folder (bundled problems, knowledge corpus)\n");
    m += QStringLiteral(".SH \"SEE ALSO\"\n\\fBhone\\fR(1), \\fBhone\\-worker\\fR(1)\n");
    return m;
}

/// --help, --version and --man need no display: they run under a QCoreApplication.
bool wantsNoWindow(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help" || a == "--help-all" || a == "-v" || a == "--version" || a == "--man")
            return true;
    }
    return false;
}

} // namespace

int main(int argc, char** argv)
{
    std::unique_ptr<QCoreApplication> application = wantsNoWindow(argc, argv)
        ? std::make_unique<QCoreApplication>(argc, argv)
        : std::make_unique<QApplication>(argc, argv);
    QCoreApplication& app = *application;
    QCoreApplication::setApplicationName("hone-workbench");
    QCoreApplication::setOrganizationName("Hone");
    QCoreApplication::setApplicationVersion(QStringLiteral(HONE_VERSION));
    QCommandLineParser parser;
    parser.setApplicationDescription("Hone workbench: watch and steer a kernel search, review and approve the winner.");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument("problem", "a problem folder to put in the launcher (and run with --start)", "[PROBLEM]");
    QCommandLineOption storeOpt("store", "SQLite store (default $HONE_STORE or ~/.local/share/hone/hone.db)", "PATH");
    QCommandLineOption workerOpt("worker", "hone-worker binary (default: next to this one, else PATH)", "PATH");
    QCommandLineOption cacheOpt("cache-dir", "compile and calibration cache (default $HONE_CACHE_DIR or ~/.cache/hone)", "DIR");
    QCommandLineOption startOpt("start", "start the search on PROBLEM at once");
    QCommandLineOption budgetOpt("budget", "evaluations (seeds included)", "N", "120");
    QCommandLineOption workersOpt("workers", "parallel evaluations", "N", "2");
    QCommandLineOption openOpt("open", "open stored session N (read-only)", "N");
    QCommandLineOption resumeOpt("resume", "resume stored session N", "N");
    QCommandLineOption exportsOpt("exports", "where approved bundles go (default ~/hone-exports)", "DIR");
    QCommandLineOption shotsOpt("screenshots", "save a PNG of every panel into DIR once the search ends, then quit", "DIR");
    QCommandLineOption prefixOpt("screenshot-prefix", "file name prefix of the screenshots", "TEXT", "");
    QCommandLineOption noLayoutOpt("no-saved-layout", "ignore the saved window layout");
    QCommandLineOption targetsOpt("targets", "targets file (default $HONE_TARGETS or ~/.config/hone/targets.toml)", "FILE");
    QCommandLineOption onOpt("on", "evaluate on this target of the targets file (docs/REMOTE.md)", "NAME");
    QCommandLineOption manOpt("man", "print the manual page (roff) and exit");
    manOpt.setFlags(QCommandLineOption::HiddenFromHelp);
    const QList<QCommandLineOption> options {storeOpt, workerOpt, cacheOpt, startOpt, budgetOpt, workersOpt, openOpt,
        resumeOpt, exportsOpt, shotsOpt, prefixOpt, noLayoutOpt, targetsOpt, onOpt, manOpt};
    parser.addOptions(options);
    parser.process(app);
    if (parser.isSet(manOpt)) {
        std::fputs(manPage(parser, options).toUtf8().constData(), stdout);
        return 0;
    }

    app::WorkbenchConfig config;
    config.runner.store = parser.isSet(storeOpt) ? std::filesystem::path(parser.value(storeOpt).toStdString())
                                                 : app::defaultStorePath();
    config.runner.workerPath = parser.value(workerOpt).toStdString();
    config.runner.cacheDir = parser.value(cacheOpt).toStdString();
    config.runner.targetsFile = parser.value(targetsOpt).toStdString();
    config.runner.on = parser.value(onOpt).toStdString();
    config.exportRoot = parser.value(exportsOpt);
    config.restoreLayout = !parser.isSet(noLayoutOpt) && !parser.isSet(shotsOpt);

    std::unique_ptr<app::MainWindow> window;
    try {
        window = std::make_unique<app::MainWindow>(config);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "hone-workbench: %s\n", e.what());
        return 2;
    }
    auto& w = *window;
    bool ok = true;
    auto number = [&](const QCommandLineOption& o) {
        bool good = false;
        const int v = parser.value(o).toInt(&good);
        if (!good || v <= 0) {
            std::fprintf(stderr, "hone-workbench: --%s '%s': expected a positive number\n",
                qPrintable(o.names().first()), qPrintable(parser.value(o)));
            std::exit(2);
        }
        return v;
    };
    if (parser.isSet(shotsOpt))
        if (const QScreen* screen = QGuiApplication::primaryScreen())
            w.resize(screen->availableGeometry().size()); // what a user of this screen sees, maximised
    w.launcher()->setBudget(number(budgetOpt));
    w.launcher()->setWorkers(number(workersOpt));
    if (!parser.positionalArguments().isEmpty())
        w.launcher()->setProblemDir(parser.positionalArguments().first());
    w.show();
    if (parser.isSet(openOpt))
        ok = w.openSession(number(openOpt));
    else if (parser.isSet(resumeOpt))
        ok = w.resumeSession(number(resumeOpt), 0);
    else if (parser.isSet(startOpt))
        ok = w.startSearch();
    if (!ok) {
        std::fprintf(stderr, "hone-workbench: could not start; see the launcher's message\n");
        if (parser.isSet(shotsOpt))
            return 2;
    }
    if (parser.isSet(shotsOpt)) {
        const QString dir = parser.value(shotsOpt);
        const QString prefix = parser.value(prefixOpt);
        auto tour = [&w, dir, prefix] { QApplication::exit(screenshots(w, dir, prefix)); };
        if (w.runner()->running())
            QObject::connect(w.runner(), &app::EngineRunner::finished, &w, [tour] { QTimer::singleShot(500, tour); });
        else
            QTimer::singleShot(800, tour);
    }
    return QApplication::exec();
}
