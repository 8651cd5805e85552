// Remote evaluation on real loopback infrastructure (scripts/infra): searches through ssh and
// Slurm, and the faults that must cost at most one candidate: a remote worker killed, the ssh
// connection dropped, a job cancelled, a worker of another protocol version. Each test skips,
// saying why, when its daemon is not running (scripts/test-all starts them).

#include "backends/remote_executor.h"
#include "backends/targets.h"
#include "core/engine.h"
#include "core/store.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

using namespace hone;

namespace {

std::filesystem::path dataDir() { return HONE_TEST_DATA; }

std::string workerPath()
{
    const char* w = std::getenv("HONE_WORKER");
    return w ? std::filesystem::absolute(w).string() : "hone-worker";
}

std::string sshConfig()
{
    const char* c = std::getenv("HONE_TEST_SSH_CONFIG");
    return c && *c ? c : "/tmp/local-infra/sshd/ssh_config";
}

/// Empty when the loopback sshd answers; otherwise why not.
QString probeSsh()
{
    if (!std::filesystem::exists(sshConfig()))
        return QString::fromStdString("no loopback sshd (" + sshConfig()
            + " missing); start it with scripts/infra/start-local-sshd.sh");
    QProcess p;
    p.start("ssh", {"-F", QString::fromStdString(sshConfig()), "hone-test-host", "true"});
    if (!p.waitForFinished(20000)) {
        p.kill();
        p.waitForFinished();
        return "the loopback sshd does not answer within 20 s";
    }
    if (p.exitCode() != 0)
        return "the loopback sshd does not answer: " + QString::fromUtf8(p.readAllStandardError());
    return {};
}

QString probeSlurm()
{
    if (qgetenv("SLURM_CONF").isEmpty() && std::filesystem::exists("/tmp/local-infra/slurm/slurm.conf"))
        qputenv("SLURM_CONF", "/tmp/local-infra/slurm/slurm.conf");
    QProcess p;
    p.start("scontrol", {"ping"});
    const bool finished = p.waitForFinished(15000);
    if (!finished) {
        p.kill();
        p.waitForFinished();
    }
    if (!finished || p.exitCode() != 0 || !p.readAllStandardOutput().contains("UP"))
        return "no Slurm controller answers 'scontrol ping'; start one with scripts/infra/start-local-slurm.sh";
    return {};
}

/// The first word of each process's command line, by PID.
std::vector<std::pair<pid_t, std::vector<std::string>>> processes()
{
    std::vector<std::pair<pid_t, std::vector<std::string>>> out;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::ifstream f(e.path() / "cmdline");
        std::vector<std::string> args;
        std::string a;
        while (std::getline(f, a, '\0'))
            args.push_back(a);
        if (!args.empty())
            out.emplace_back(std::stoi(name), std::move(args));
    }
    return out;
}

bool mentions(const std::vector<std::string>& args, const std::string& what)
{
    for (const auto& a : args)
        if (a.find(what) != std::string::npos)
            return true;
    return false;
}

QString sshMissing()
{
    static const QString why = probeSsh();
    return why;
}

QString slurmMissing()
{
    static const QString why = probeSlurm();
    return why;
}

struct Counter final : core::EngineObserver {
    std::atomic<int> evaluations {0};
    void progressChanged(const core::Progress& p) override { evaluations = p.evaluations; }
};

} // namespace

class TestRemote : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    std::string m_cache; // shared by the tests: calibration happens once

    backends::RemoteExecutorConfig sshTarget(int parallel)
    {
        backends::RemoteExecutorConfig c;
        c.kind = backends::RemoteExecutorConfig::Kind::Ssh;
        c.name = "loopback-ssh";
        c.host = "hone-test-host";
        c.sshConfig = sshConfig();
        c.workerPath = workerPath();
        c.cacheDir = m_cache;
        c.parallel = parallel;
        c.retries = 2;
        c.retryDelaySeconds = 0.2;
        c.limits.memoryMiB = 768;
        return c;
    }

    backends::RemoteExecutorConfig slurmTarget(int parallel)
    {
        backends::RemoteExecutorConfig c = sshTarget(parallel);
        c.kind = backends::RemoteExecutorConfig::Kind::Slurm;
        c.name = "loopback-slurm";
        c.gpusPerTask = 1;
        c.timeLimit = "10";
        return c;
    }

    /// A small CPU search on `exec`; `during` runs beside it with the evaluation count.
    core::Report search(core::Executor& exec, core::Store& store, int budget, int workers,
        const std::function<void(const std::atomic<int>&, const std::atomic<bool>&)>& during = {})
    {
        auto dir = std::filesystem::path(m_tmp.path().toStdString()) / ("scale-" + std::to_string(++m_problems));
        std::filesystem::copy(dataDir() / "problems" / "scale", dir, std::filesystem::copy_options::recursive);
        core::Engine engine(store, exec);
        core::RunOptions opt;
        opt.problemDir = dir;
        opt.budget = budget;
        opt.workers = workers;
        opt.seed = 3;
        opt.samples = 20;
        Counter counter;
        std::atomic<bool> finished {false};
        std::thread side;
        if (during)
            side = std::thread([&] { during(counter.evaluations, finished); });
        core::Report r = engine.run(opt, &counter);
        finished = true;
        if (side.joinable())
            side.join();
        m_session = engine.sessionId();
        return r;
    }

    int m_problems = 0;
    int64_t m_session = 0;

    /// Waits until `evals` evaluations are done, then kills the first process `pick` accepts.
    static bool killWhen(const std::atomic<int>& evals, const std::atomic<bool>& finished, int after,
        const std::function<bool(const std::vector<std::string>&)>& pick)
    {
        while (!finished && evals < after)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        while (!finished) {
            for (const auto& [pid, args] : processes())
                if (pick(args)) {
                    ::kill(pid, SIGKILL);
                    return true;
                }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return false;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_tmp.isValid());
        m_cache = m_tmp.path().toStdString() + "/remote-cache";
    }

    void targetsFileErrorsNameThePlace()
    {
        auto ts = backends::parseTargets("[targets.a]\nexecutor = \"ssh\"\nhost = \"h\"\nparallel = 3\n"
                                         "[targets.b]\nexecutor = \"slurm\"\npartition = \"debug\"\ngpus_per_task = 2\n",
            "t.toml");
        QCOMPARE(ts.size(), size_t(2));
        QCOMPARE(ts[0].parallel, 3);
        QCOMPARE(ts[1].gpusPerTask, 2);
        try {
            backends::parseTargets("[targets.a]\nexecutor = \"ssh\"\nhost = \"h\"\nparalel = 3\n", "t.toml");
            QFAIL("an unknown key was accepted");
        } catch (const backends::TargetsError& e) {
            QVERIFY2(std::string(e.what()).starts_with("t.toml:4:1: field 'targets.a.paralel': unknown key"), e.what());
        }
        try {
            backends::parseTargets("[targets.a]\nexecutor = \"rsh\"\n", "t.toml");
            QFAIL("an unknown executor was accepted");
        } catch (const backends::TargetsError& e) {
            QVERIFY2(std::string(e.what()).find("expected \"local\", \"ssh\" or \"slurm\"") != std::string::npos, e.what());
        }
    }

    void searchThroughSsh()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        core::Store store(m_tmp.path().toStdString() + "/ssh.db");
        backends::RemoteExecutor exec(sshTarget(2));
        QCOMPARE(exec.hello().value("protocol", 0), 1);
        core::Report r = search(exec, store, 6, 2);
        QCOMPARE(r.progress.evaluations, 6);
        QCOMPARE(r.progress.failures, 0);
        QVERIFY(r.best.has_value());
        QVERIFY(!r.device.empty());
        for (const auto& e : store.evaluations(m_session))
            QCOMPARE(e.device, r.device);
    }

    void searchThroughSlurm()
    {
        if (QString why = slurmMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        core::Store store(m_tmp.path().toStdString() + "/slurm.db");
        backends::RemoteExecutor exec(slurmTarget(2));
        core::Report r = search(exec, store, 6, 2);
        QCOMPARE(r.progress.evaluations, 6);
        QCOMPARE(r.progress.failures, 0);
        QVERIFY(r.best.has_value());
    }

    void searchSplitAcrossTwoTargets()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        if (QString why = slurmMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        core::Store store(m_tmp.path().toStdString() + "/split.db");
        std::vector<backends::TargetPool::Member> members;
        members.push_back({"loopback-ssh", std::make_unique<backends::RemoteExecutor>(sshTarget(1))});
        members.push_back({"loopback-slurm", std::make_unique<backends::RemoteExecutor>(slurmTarget(1))});
        backends::TargetPool pool(std::move(members));
        QCOMPARE(pool.slotCount(), 2);
        core::Report r = search(pool, store, 8, 2);
        QCOMPARE(r.progress.evaluations, 8);
        QCOMPARE(r.progress.failures, 0);
        QVERIFY(r.best.has_value());
        std::map<std::string, int> byTarget;
        for (const auto& e : store.evaluations(m_session)) {
            QCOMPARE(e.device, r.device);
            byTarget[e.result.value("target", std::string("?"))]++;
        }
        QVERIFY2(byTarget["loopback-ssh"] > 0 && byTarget["loopback-slurm"] > 0,
            nlohmann::json(byTarget).dump().c_str());
    }

    void poolRefusesTargetsOfAnotherDevice()
    {
        // Two local workers that report different devices: a fake one stands in for another machine.
        QTemporaryDir dir;
        const std::string fake = dir.path().toStdString() + "/other-device-worker";
        std::ofstream(fake) << "#!/bin/sh\nread -r line\n"
                               "echo '{\"protocol\":1,\"type\":\"hello\",\"id\":\"hello\",\"devices\":"
                               "[{\"kind\":\"cpu\",\"name\":\"Other CPU\",\"cores\":64}]}'\n";
        std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
        backends::RemoteExecutorConfig a = sshTarget(1), b = sshTarget(1);
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        b.name = "other";
        b.workerPath = fake;
        std::vector<backends::TargetPool::Member> members;
        members.push_back({"loopback-ssh", std::make_unique<backends::RemoteExecutor>(a)});
        members.push_back({"other", std::make_unique<backends::RemoteExecutor>(b)});
        backends::TargetPool pool(std::move(members));
        try {
            pool.hello();
            QFAIL("targets with different devices were pooled");
        } catch (const std::exception& e) {
            QVERIFY2(std::string(e.what()).find("'loopback-ssh' and 'other' have different devices") != std::string::npos,
                e.what());
            QVERIFY2(std::string(e.what()).find("Other CPU") != std::string::npos, e.what());
        }
    }

    void remoteWorkerKilledCostsOneCandidate()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        core::Store store(m_tmp.path().toStdString() + "/kill.db");
        backends::RemoteExecutor exec(sshTarget(1));
        const std::string worker = workerPath();
        bool killed = false;
        core::Report r = search(exec, store, 5, 1, [&](const auto& evals, const auto& finished) {
            // The worker itself (not the wrapper shell, not the ssh client), past the seeds.
            killed = killWhen(evals, finished, 2, [&](const auto& args) {
                return args[0] == worker && mentions(args, m_cache) && mentions(args, "--stdio");
            });
        });
        QVERIFY(killed);
        QCOMPARE(r.progress.evaluations, 5);
        QCOMPARE(r.progress.failures, 1);
        int crashes = 0;
        for (const auto& e : store.evaluations(m_session))
            if (e.status == "failed") {
                QCOMPARE(e.failureKind, std::string("crash"));
                QVERIFY2(e.failureMessage.find("SIGKILL") != std::string::npos, e.failureMessage.c_str());
                ++crashes;
            }
        QCOMPARE(crashes, 1);
        QVERIFY(r.best.has_value());
    }

    void droppedSshConnectionIsRetried()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        core::Store store(m_tmp.path().toStdString() + "/drop.db");
        backends::RemoteExecutor exec(sshTarget(1));
        bool killed = false;
        core::Report r = search(exec, store, 5, 1, [&](const auto& evals, const auto& finished) {
            killed = killWhen(evals, finished, 2, [&](const auto& args) {
                return args[0] == "ssh" && mentions(args, m_cache) && mentions(args, "hone-test-host");
            });
        });
        QVERIFY(killed);
        QCOMPARE(r.progress.evaluations, 5);
        QCOMPARE(r.progress.failures, 0); // the lost attempt was retried
        QCOMPARE(exec.consecutiveInfraFailures(), 0);
        QVERIFY(r.best.has_value());
    }

    void cancelledJobIsRetried()
    {
        if (QString why = slurmMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        core::Store store(m_tmp.path().toStdString() + "/scancel.db");
        backends::RemoteExecutor exec(slurmTarget(1));
        bool cancelled = false;
        const std::string prefix = "hone-eval-" + std::to_string(getpid()) + "-";
        core::Report r = search(exec, store, 5, 1, [&](const auto& evals, const auto& finished) {
            while (!finished && evals < 2)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            while (!finished && !cancelled) {
                QProcess q;
                q.start("squeue", {"-h", "-t", "running", "-o", "%i %j"});
                q.waitForFinished(10000);
                for (const auto& line : QString::fromUtf8(q.readAllStandardOutput()).split('\n'))
                    if (line.contains(QString::fromStdString(prefix))) {
                        QProcess::execute("scancel", {line.split(' ').first()});
                        cancelled = true;
                        break;
                    }
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
        });
        QVERIFY(cancelled);
        QCOMPARE(r.progress.evaluations, 5);
        QCOMPARE(r.progress.failures, 0);
        QVERIFY(r.best.has_value());
    }

    void unreachableHostFailsWithTheReason()
    {
        backends::RemoteExecutorConfig c = sshTarget(1);
        c.sshConfig = "/dev/null";
        c.host = "127.0.0.1";
        c.extraArgs = {"-p", "1"}; // nothing listens on port 1
        c.retries = 1;
        backends::RemoteExecutor exec(c);
        nlohmann::json req = {{"protocol", 1}, {"type", "hello"}, {"id", "h"}};
        nlohmann::json r = exec.request(req, c.limits);
        QCOMPARE(r.value("status", std::string()), std::string("failed"));
        QCOMPARE(r["failure"].value("kind", std::string()), std::string("worker_error"));
        const std::string msg = r["failure"].value("message", std::string());
        QVERIFY2(msg.find("2 attempt(s) lost") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find("hone targets check loopback-ssh") != std::string::npos, msg.c_str());
        QCOMPARE(exec.consecutiveInfraFailures(), 2);
    }

    void targetsCheckProbesEachTarget()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        const char* cli = std::getenv("HONE_CLI");
        if (!cli)
            QSKIP("HONE_CLI is not set (CTest sets it to the built hone)");
        const std::string file = m_tmp.path().toStdString() + "/targets.toml";
        std::ofstream(file) << "[targets.good]\nexecutor = \"ssh\"\nhost = \"hone-test-host\"\nssh_config = \""
                            << sshConfig() << "\"\nworker = \"" << workerPath() << "\"\n"
                            << "[targets.future]\nexecutor = \"ssh\"\nhost = \"hone-test-host\"\nssh_config = \""
                            << sshConfig() << "\"\nworker = \"" << (dataDir() / "remote" / "worker_v99.sh").string()
                            << "\"\n";
        QProcess p;
        p.start(cli, {"--targets", QString::fromStdString(file), "targets", "check", "--json"});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 3); // one target failed
        std::map<std::string, nlohmann::json> rows;
        for (const auto& line : QString::fromUtf8(p.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts)) {
            auto j = nlohmann::json::parse(line.toStdString());
            rows[j["target"]] = j;
        }
        QCOMPARE(rows.size(), size_t(2));
        QCOMPARE(rows["good"]["ok"].get<bool>(), true);
        QCOMPARE(rows["good"]["protocol"].get<int>(), 1);
        QVERIFY(!rows["good"]["devices"].empty());
        QVERIFY(rows["good"]["latency_ms"].get<double>() > 0);
        QCOMPARE(rows["future"]["ok"].get<bool>(), false);
        const std::string err = rows["future"]["error"];
        QVERIFY2(err.find("worker speaks version 99, this hone speaks version 1") != std::string::npos, err.c_str());
    }

    void versionMismatchNamesBothVersions()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        backends::RemoteExecutorConfig c = sshTarget(1);
        c.workerPath = (dataDir() / "remote" / "worker_v99.sh").string();
        backends::RemoteExecutor exec(c);
        try {
            exec.hello();
            QFAIL("a protocol-99 worker was accepted");
        } catch (const std::exception& e) {
            const std::string msg = e.what();
            QVERIFY2(msg.find("worker speaks version 99") != std::string::npos, e.what());
            QVERIFY2(msg.find("this hone speaks version 1") != std::string::npos, e.what());
            QVERIFY2(msg.find("loopback-ssh") != std::string::npos, e.what());
        }
        QCOMPARE(exec.consecutiveInfraFailures(), 0); // not retried: another worker, not a lost one
    }
};

QTEST_GUILESS_MAIN(TestRemote)
#include "tst_remote.moc"
