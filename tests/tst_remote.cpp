// Remote evaluation on real loopback infrastructure (scripts/infra): searches through ssh and
// Slurm, fresh and persistent workers, and the faults that must cost at most one candidate: a
// remote worker killed, the ssh connection dropped, a job cancelled, a worker of another
// protocol version; `hone targets deploy`, health kept across sessions, `targets check
// --ceilings`. Each test skips, saying why, when its daemon is not running (scripts/test-all
// starts them).

#include "backends/deploy.h"
#include "backends/remote_executor.h"
#include "backends/target_health.h"
#include "backends/targets.h"
#include "core/engine.h"
#include "core/protocol.h"
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
#include <sstream>
#include <thread>
#include <unistd.h>

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

/// Seconds of CPU the process has used (all its threads), from /proc/PID/stat; -1 when gone.
double cpuSeconds(pid_t pid)
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');
    if (close == std::string::npos)
        return -1;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    // after the name: state(3) ... utime(14) stime(15)
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14)
            utime = std::stod(field);
        if (i == 15)
            stime = std::stod(field);
    }
    return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct CliRun {
    int code = -1;
    std::string out, err;
};

/// Runs the built `hone` with `args`, HONE_CACHE_DIR set to `cacheDir` (health file lives there).
CliRun runCli(const QStringList& args, const std::string& cacheDir, int timeoutMs)
{
    CliRun r;
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("HONE_CACHE_DIR", QString::fromStdString(cacheDir));
    p.setProcessEnvironment(env);
    p.start(std::getenv("HONE_CLI"), args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = "timed out";
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput().toStdString();
    r.err += p.readAllStandardError().toStdString();
    return r;
}

std::map<std::string, nlohmann::json> jsonRows(const std::string& out)
{
    std::map<std::string, nlohmann::json> rows;
    for (const auto& line : QString::fromStdString(out).split('\n', Qt::SkipEmptyParts)) {
        auto j = nlohmann::json::parse(line.toStdString(), nullptr, false);
        if (j.is_object() && j.contains("target"))
            rows[j["target"]] = j;
    }
    return rows;
}

nlohmann::json readJsonFile(const std::string& path)
{
    std::ifstream f(path);
    return nlohmann::json::parse(f, nullptr, false);
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
        core::Report r;
        try {
            r = engine.run(opt, &counter);
        } catch (...) {
            finished = true;
            if (side.joinable())
                side.join();
            throw;
        }
        finished = true;
        if (side.joinable())
            side.join();
        m_session = engine.sessionId();
        return r;
    }

    int m_problems = 0;
    int64_t m_session = 0;
    std::string m_deployPrefix; // where deployToSshThenSearch installed a worker

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

    /// Submits a job that holds every GPU of the loopback node for `seconds` and waits until it
    /// runs; its id, or empty.
    static QString takeAllGpus(int seconds)
    {
        QProcess sb;
        sb.start("sbatch", {"--parsable", "--gres=gpu:4", "--job-name", "hone-test-blocker", "--output", "/dev/null",
                               "--wrap", "sleep " + QString::number(seconds)});
        sb.waitForFinished(10000);
        const QString id = QString::fromUtf8(sb.readAllStandardOutput()).trimmed().split(';').first();
        if (id.isEmpty())
            return {};
        for (int i = 0; i < 100; ++i) {
            QProcess q;
            q.start("squeue", {"-h", "-j", id, "-o", "%T"});
            q.waitForFinished(10000);
            if (QString::fromUtf8(q.readAllStandardOutput()).trimmed() == "RUNNING")
                return id;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return {};
    }

    /// Whether squeue lists a job whose name starts with `prefix` in `state`.
    static bool jobListed(const std::string& prefix, const char* state)
    {
        QProcess q;
        q.start("squeue", {"-h", "-t", state, "-o", "%j"});
        q.waitForFinished(10000);
        return QString::fromUtf8(q.readAllStandardOutput()).contains(QString::fromStdString(prefix));
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
        QCOMPARE(ts[0].persistent, false); // the default
        QCOMPARE(backends::parseTargets("[targets.p]\nexecutor = \"ssh\"\nhost = \"h\"\npersistent = true\n", "t.toml")[0]
                     .persistent,
            true);
        try {
            backends::parseTargets("[targets.p]\nexecutor = \"ssh\"\nhost = \"h\"\npersistent = 1\n", "t.toml");
            QFAIL("a non-boolean persistent was accepted");
        } catch (const backends::TargetsError& e) {
            QVERIFY2(std::string(e.what()).find("field 'targets.p.persistent': not a boolean") != std::string::npos,
                e.what());
        }
        QCOMPARE(backends::slurmTimeLimitSeconds("30"), 1800.0);
        QCOMPARE(backends::slurmTimeLimitSeconds("1:30"), 90.0);
        QCOMPARE(backends::slurmTimeLimitSeconds("2:00:00"), 7200.0);
        QCOMPARE(backends::slurmTimeLimitSeconds("1-02"), 93600.0);
        QCOMPARE(backends::slurmTimeLimitSeconds("1-0:10:5"), 87005.0);
        QCOMPARE(backends::slurmTimeLimitSeconds("UNLIMITED"), -1.0);
        backends::TargetSpec slurm = ts[1];
        slurm.persistent = true;
        slurm.timeLimit = "10";
        const double recycle = backends::remoteConfig(slurm).recycleSeconds;
        QVERIFY2(recycle > 0 && recycle < 600, std::to_string(recycle).c_str()); // before Slurm's limit
        try {
            backends::parseTargets("[targets.a]\nexecutor = \"ssh\"\nhost = \"h\"\nparalel = 3\n", "t.toml");
            QFAIL("an unknown key was accepted");
        } catch (const backends::TargetsError& e) {
            QVERIFY2(std::string(e.what()).starts_with("t.toml:4:1: field 'targets.a.paralel': unknown key"), e.what());
        }
        QCOMPARE(ts[1].queueTimeout, 1800); // the default
        try {
            backends::parseTargets("[targets.a]\nexecutor = \"ssh\"\nhost = \"h\"\nqueue_timeout = 60\n", "t.toml");
            QFAIL("queue_timeout was accepted on an ssh target");
        } catch (const backends::TargetsError& e) {
            QVERIFY2(std::string(e.what()).find("field 'targets.a.queue_timeout': only Slurm jobs wait in a queue")
                    != std::string::npos,
                e.what());
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
        QCOMPARE(exec.hello().value("protocol", 0), core::protocol::kVersion);
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
        // It echoes the request's secret, as every worker must.
        std::ofstream(fake) << "#!/bin/sh\nread -r line\n"
                               "secret=$(printf '%s' \"$line\" | sed -n 's/.*\"secret\":\"\\([0-9a-f]*\\)\".*/\\1/p')\n"
                               "echo '{\"protocol\":2,\"type\":\"hello\",\"id\":\"hello\",\"secret\":\"'\"$secret\"'\",\"devices\":"
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
                const std::string seen = e.failureKind + ": " + e.failureMessage;
                QVERIFY2(e.failureKind == "crash", seen.c_str());
                QVERIFY2(e.failureMessage.find("SIGKILL") != std::string::npos, seen.c_str());
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

    /// While every GPU of the node is taken, an evaluation's job waits in the queue (reason
    /// Resources). The start stage's limit (4 s here) must not take that for a silent worker:
    /// the request is answered once the GPUs are free, by the first and only job.
    void queuedSlurmJobWaitsForResources()
    {
        if (QString why = slurmMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        const QString blocker = takeAllGpus(10);
        QVERIFY2(!blocker.isEmpty(), "the job that takes every GPU did not start");
        backends::RemoteExecutorConfig c = slurmTarget(1);
        c.retries = 0; // a start timeout would fail the request: nothing hides it
        backends::RemoteExecutor exec(c);
        backends::WorkerLimits limits = c.limits;
        limits.stageSeconds = 4;
        nlohmann::json req = core::protocol::makeMessage("hello");
        req["id"] = "queued";
        const auto t0 = std::chrono::steady_clock::now();
        const nlohmann::json r = exec.request(req, limits);
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        QVERIFY2(r.value("type", std::string()) == "hello", r.dump().c_str());
        QVERIFY2(waited > 5, std::to_string(waited).c_str()); // it did wait for the blocker
        QCOMPARE(exec.workersStarted(), 1L);
        QCOMPARE(exec.consecutiveInfraFailures(), 0);
    }

    /// queue_timeout ends the wait: the request fails at once with the job's reason, naming the
    /// target, and is not retried (another job would wait in the same queue).
    void queueTimeoutEndsTheWait()
    {
        if (QString why = slurmMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        const QString blocker = takeAllGpus(30);
        QVERIFY2(!blocker.isEmpty(), "the job that takes every GPU did not start");
        backends::RemoteExecutorConfig c = slurmTarget(1);
        c.queueSeconds = 3;
        c.retries = 2;
        backends::RemoteExecutor exec(c);
        nlohmann::json req = core::protocol::makeMessage("hello");
        req["id"] = "queued";
        const auto t0 = std::chrono::steady_clock::now();
        const nlohmann::json r = exec.request(req, c.limits);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        QProcess::execute("scancel", {blocker});
        QCOMPARE(r.value("status", std::string()), std::string("failed"));
        const std::string msg = r["failure"].value("message", std::string());
        QCOMPARE(r["failure"].value("kind", std::string()), std::string("worker_error"));
        QVERIFY2(msg.find("target 'loopback-slurm' (slurm): queued for") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find("(limit 3 s): job ") != std::string::npos && msg.find("pending: Resources") != std::string::npos,
            msg.c_str());
        QVERIFY2(took < 12, std::to_string(took).c_str());
        QCOMPARE(exec.workersStarted(), 1L);
        QCOMPARE(exec.consecutiveInfraFailures(), 1);
        QVERIFY(!jobListed("hone-eval-" + std::to_string(getpid()) + "-", "PENDING")); // cancelled, not left queued
    }

    /// A job that Slurm will never start (its partition is down) fails within seconds, saying
    /// why and what to change, without retries, instead of waiting out the start limit.
    void hopelessSlurmJobFailsAtOnce()
    {
        if (QString why = slurmMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        QProcess create;
        create.start("scontrol", {"create", "PartitionName=hone-test-down", "Nodes=ALL", "State=DOWN"});
        create.waitForFinished(10000);
        if (create.exitCode() != 0)
            QSKIP(qPrintable("cannot create a partition (needs Slurm administrator rights): "
                + QString::fromUtf8(create.readAllStandardError())));
        backends::RemoteExecutorConfig c = slurmTarget(1);
        c.partition = "hone-test-down";
        c.retries = 2;
        backends::RemoteExecutor exec(c);
        nlohmann::json req = core::protocol::makeMessage("hello");
        req["id"] = "down";
        const auto t0 = std::chrono::steady_clock::now();
        const nlohmann::json r = exec.request(req, c.limits);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        QProcess::execute("scontrol", {"delete", "PartitionName=hone-test-down"});
        const std::string msg = r.contains("failure") ? r["failure"].value("message", std::string()) : r.dump();
        QCOMPARE(r["failure"].value("kind", std::string()), std::string("worker_error"));
        QVERIFY2(msg.find("target 'loopback-slurm' (slurm partition hone-test-down): Slurm will not start job")
                != std::string::npos,
            msg.c_str());
        QVERIFY2(msg.find("pending with reason PartitionDown: its partition is down or inactive; use another partition")
                != std::string::npos,
            msg.c_str());
        QVERIFY2(took < 15, std::to_string(took).c_str()); // the start limit is 60 s
        QCOMPARE(exec.workersStarted(), 1L);
    }

    void unreachableHostFailsWithTheReason()
    {
        backends::RemoteExecutorConfig c = sshTarget(1);
        c.sshConfig = "/dev/null";
        c.host = "127.0.0.1";
        c.extraArgs = {"-p", "1"}; // nothing listens on port 1
        c.retries = 1;
        backends::RemoteExecutor exec(c);
        nlohmann::json req = {{"protocol", core::protocol::kVersion}, {"type", "hello"}, {"id", "h"}};
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
        QCOMPARE(p.exitCode(), 4); // one target failed: ExitCode::Environment
        std::map<std::string, nlohmann::json> rows;
        for (const auto& line : QString::fromUtf8(p.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts)) {
            auto j = nlohmann::json::parse(line.toStdString());
            rows[j["target"]] = j;
        }
        QCOMPARE(rows.size(), size_t(2));
        QCOMPARE(rows["good"]["ok"].get<bool>(), true);
        QCOMPARE(rows["good"]["protocol"].get<int>(), core::protocol::kVersion);
        QVERIFY(!rows["good"]["devices"].empty());
        QVERIFY(rows["good"]["latency_ms"].get<double>() > 0);
        QCOMPARE(rows["future"]["ok"].get<bool>(), false);
        const std::string err = rows["future"]["error"];
        QVERIFY2(err.find("worker speaks version 99, this hone speaks version 2") != std::string::npos, err.c_str());
    }

    void versionMismatchNamesBothVersions()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        for (bool persistent : {false, true}) {
            backends::RemoteExecutorConfig c = sshTarget(1);
            c.workerPath = (dataDir() / "remote" / "worker_v99.sh").string();
            c.persistent = persistent;
            backends::RemoteExecutor exec(c);
            try {
                exec.hello();
                QFAIL("a protocol-99 worker was accepted");
            } catch (const std::exception& e) {
                const std::string msg = e.what();
                QVERIFY2(msg.find("worker speaks version 99") != std::string::npos, e.what());
                QVERIFY2(msg.find("this hone speaks version 2") != std::string::npos, e.what());
                QVERIFY2(msg.find("loopback-ssh") != std::string::npos, e.what());
            }
            QCOMPARE(exec.consecutiveInfraFailures(), 0); // not retried: another worker, not a lost one
            QCOMPARE(exec.workersStarted(), 1L);
        }
    }

    // ---- persistent workers -------------------------------------------------------------

    void persistentSshSearch()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        core::Store store(m_tmp.path().toStdString() + "/persistent-ssh.db");
        backends::RemoteExecutorConfig c = sshTarget(2);
        c.persistent = true;
        backends::RemoteExecutor exec(c);
        core::Report r = search(exec, store, 6, 2);
        QCOMPARE(r.progress.evaluations, 6);
        QCOMPARE(r.progress.failures, 0);
        QVERIFY(r.best.has_value());
        // hello, calibrate and six evaluations over at most two connections (one per slot);
        // fresh workers would have taken eight.
        QVERIFY2(exec.workersStarted() >= 1 && exec.workersStarted() <= 2,
            std::to_string(exec.workersStarted()).c_str());
        for (const auto& e : store.evaluations(m_session))
            QCOMPARE(e.device, r.device);
    }

    void persistentWorkerFaultsCostOneCandidateEach()
    {
        // The isolation failures of tst_engine, through one persistent ssh worker: each costs its
        // candidate (crash, timeout, partial write); a hung worker is replaced, the search goes on.
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        auto dir = std::filesystem::path(m_tmp.path().toStdString()) / "hostile-scale";
        std::filesystem::copy(dataDir() / "problems" / "scale", dir, std::filesystem::copy_options::recursive);
        for (const char* s : {"segfault.cpp", "abort.cpp", "infinite_loop.cpp", "garbage_stdout.cpp"})
            std::filesystem::copy_file(dataDir() / "hostile" / s, dir / "seeds" / s);
        core::Store store(m_tmp.path().toStdString() + "/persistent-hostile.db");
        backends::RemoteExecutorConfig c = sshTarget(1);
        c.persistent = true;
        auto exec = std::make_unique<backends::RemoteExecutor>(c);
        core::Engine engine(store, *exec);
        core::RunOptions opt;
        opt.problemDir = dir;
        opt.budget = 9; // 6 seeds, then 3 knob children of the tuned seed
        opt.workers = 1;
        opt.seed = 5;
        opt.runLimitSeconds = 4; // remote workers get at least 30 s per stage
        opt.samples = 20;
        core::Report r = engine.run(opt);
        QCOMPARE(r.progress.evaluations, 9);
        std::map<std::string, std::pair<std::string, std::string>> failures;
        for (const auto& e : store.evaluations(engine.sessionId()))
            if (e.status == "failed")
                failures[engine.tree().node(e.nodeId).sourceName] = {e.failureKind, e.failureMessage};
        auto expect = [&](const char* source, const char* kind, const char* fragment) {
            QVERIFY2(failures.count(source), source);
            QCOMPARE(failures[source].first, std::string(kind));
            QVERIFY2(failures[source].second.find(fragment) != std::string::npos, failures[source].second.c_str());
        };
        expect("segfault.cpp", "crash", "SIGSEGV");
        expect("abort.cpp", "crash", "SIGABRT");
        expect("infinite_loop.cpp", "timeout", "no progress for");
        // Candidate code runs in a runner that holds no protocol pipe: the junk reaches stderr.
        expect("garbage_stdout.cpp", "partial_write", "never written");
        QCOMPARE(failures.size(), size_t(4));
        QVERIFY(r.best.has_value());
        // One worker for the session, plus one replacement per worker it lost: a crash is the
        // runner's and the worker lives on; only the hung candidate costs the worker.
        QCOMPARE(exec->workersStarted(), 2L);
        QCOMPARE(exec->consecutiveInfraFailures(), 0);
        // Nothing is left running on the host: the hung candidate's worker, whose ssh was killed
        // at the timeout, was killed there too (the wrapper's watchdog), and the idle worker
        // ended with the session.
        exec.reset();
        const std::string worker = workerPath();
        auto leftovers = [&] {
            int n = 0;
            for (const auto& [pid, args] : processes())
                if (args[0] == worker && mentions(args, m_cache))
                    ++n;
            return n;
        };
        QTRY_COMPARE_WITH_TIMEOUT(leftovers(), 0, 5000);
    }

    void persistentWorkerIsRetiredAfterItsShare()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        backends::RemoteExecutorConfig c = sshTarget(1);
        c.persistent = true;
        c.maxRequestsPerWorker = 2;
        backends::RemoteExecutor exec(c);
        for (int i = 0; i < 5; ++i)
            QVERIFY(exec.ceilings("cpu").value("peak_gbps", 0.0) > 0);
        QCOMPARE(exec.workersStarted(), 3L); // requests 1-2, 3-4, 5
    }

    void persistentSlurmSearch()
    {
        if (QString why = slurmMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        core::Store store(m_tmp.path().toStdString() + "/persistent-slurm.db");
        backends::RemoteExecutorConfig c = slurmTarget(2);
        c.persistent = true;
        backends::RemoteExecutor exec(c);
        core::Report r = search(exec, store, 6, 2);
        QCOMPARE(r.progress.evaluations, 6);
        QCOMPARE(r.progress.failures, 0);
        QVERIFY(r.best.has_value());
        QVERIFY2(exec.workersStarted() >= 1 && exec.workersStarted() <= 2,
            std::to_string(exec.workersStarted()).c_str());
    }

    void persistentWorkerKilledMidEvaluation()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        core::Store store(m_tmp.path().toStdString() + "/persistent-kill.db");
        backends::RemoteExecutorConfig c = sshTarget(1);
        c.persistent = true;
        backends::RemoteExecutor exec(c);
        const std::string worker = workerPath();
        bool killed = false;
        core::Report r = search(exec, store, 6, 1, [&](const auto& evals, const auto& finished) {
            while (!finished && evals < 2)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            // The persistent worker idles between requests: kill it only while it computes
            // (its CPU time grows over two samples), so that one evaluation is lost mid-way.
            while (!finished && !killed) {
                for (const auto& [pid, args] : processes()) {
                    if (args[0] != worker || !mentions(args, m_cache) || !mentions(args, "--stdio"))
                        continue;
                    const double a = cpuSeconds(pid);
                    std::this_thread::sleep_for(std::chrono::milliseconds(60));
                    const double b = cpuSeconds(pid);
                    std::this_thread::sleep_for(std::chrono::milliseconds(60));
                    const double d = cpuSeconds(pid);
                    if (a >= 0 && b > a && d > b) {
                        ::kill(pid, SIGKILL);
                        killed = true;
                    }
                    break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        });
        QVERIFY(killed);
        QCOMPARE(r.progress.evaluations, 6);
        QCOMPARE(r.progress.failures, 1);
        int crashes = 0, okAfter = 0;
        bool seenCrash = false;
        for (const auto& e : store.evaluations(m_session)) {
            if (e.status == "failed") {
                const std::string seen = e.failureKind + ": " + e.failureMessage;
                QVERIFY2(e.failureKind == "crash", seen.c_str());
                QVERIFY2(e.failureMessage.find("SIGKILL") != std::string::npos, seen.c_str());
                ++crashes;
                seenCrash = true;
            } else if (seenCrash) {
                ++okAfter;
            }
        }
        QCOMPARE(crashes, 1);
        QVERIFY2(okAfter >= 1, "no evaluation succeeded after the crash");
        // The killed worker was replaced once, not per request.
        QCOMPARE(exec.workersStarted(), 2L);
        QCOMPARE(exec.consecutiveInfraFailures(), 0);
    }

    void persistentStepCancelledIsRetried()
    {
        if (QString why = slurmMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        core::Store store(m_tmp.path().toStdString() + "/persistent-scancel.db");
        backends::RemoteExecutorConfig c = slurmTarget(1);
        c.persistent = true;
        backends::RemoteExecutor exec(c);
        bool cancelled = false;
        const std::string prefix = "hone-eval-" + std::to_string(getpid()) + "-";
        core::Report r = search(exec, store, 6, 1, [&](const auto& evals, const auto& finished) {
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
        QCOMPARE(r.progress.evaluations, 6);
        QCOMPARE(r.progress.failures, 0);
        QVERIFY(r.best.has_value());
        QVERIFY2(exec.workersStarted() >= 2, std::to_string(exec.workersStarted()).c_str()); // a new step
        QCOMPARE(exec.consecutiveInfraFailures(), 0);
    }

    // ---- health across sessions -------------------------------------------------------------

    void healthIsKeptAcrossSessions()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        const std::string file = m_tmp.path().toStdString() + "/health/targets-health.json";
        {
            // Session 1: the target is unreachable; both attempts are recorded.
            backends::RemoteExecutorConfig c = sshTarget(1);
            c.name = "flaky";
            c.sshConfig = "/dev/null";
            c.host = "127.0.0.1";
            c.extraArgs = {"-p", "1"};
            c.retries = 1;
            c.healthFile = file;
            backends::RemoteExecutor exec(c);
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, exec.hello());
        }
        nlohmann::json j = readJsonFile(file);
        QVERIFY2(j.is_object(), file.c_str());
        QCOMPARE(j["targets"]["flaky"]["consecutive_infra_failures"].get<int>(), 2);
        QCOMPARE(j["targets"]["flaky"]["last_probe_ok"].get<bool>(), false);
        QVERIFY2(j["targets"]["flaky"]["last_error"].get<std::string>().find("Connection refused") != std::string::npos,
            j.dump().c_str());
        QVERIFY(!backends::TargetHealthFile(file).get("flaky").healthy());

        // Session 2: the same target, reachable again. It gets no work before a hello: the
        // calibrate request is preceded by one.
        backends::RemoteExecutorConfig c = sshTarget(1);
        c.name = "flaky";
        c.healthFile = file;
        backends::RemoteExecutor exec(c);
        nlohmann::json ceil = exec.ceilings("cpu");
        QVERIFY(ceil.value("peak_gbps", 0.0) > 0);
        QCOMPARE(exec.workersStarted(), 2L); // the probe, then the calibration
        j = readJsonFile(file);
        QCOMPARE(j["targets"]["flaky"]["consecutive_infra_failures"].get<int>(), 0);
        QCOMPARE(j["targets"]["flaky"]["last_probe_ok"].get<bool>(), true);
        QVERIFY(!j["targets"]["flaky"]["last_probe"].get<std::string>().empty());

        // Session 3: healthy now, so no probe first.
        backends::RemoteExecutor again(c);
        again.ceilings("cpu");
        QCOMPARE(again.workersStarted(), 1L);
    }

    void corruptHealthFileIsReportedAndIgnored()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        if (!std::getenv("HONE_CLI"))
            QSKIP("HONE_CLI is not set (CTest sets it to the built hone)");
        const std::string cache = m_tmp.path().toStdString() + "/cli-cache";
        std::filesystem::create_directories(cache);
        const std::string health = cache + "/targets-health.json";
        std::ofstream(health) << "{\"targets\": {\"good\": [1, 2";
        const std::string file = m_tmp.path().toStdString() + "/health-targets.toml";
        std::ofstream(file) << "[targets.good]\nexecutor = \"ssh\"\nhost = \"hone-test-host\"\nssh_config = \""
                            << sshConfig() << "\"\nworker = \"" << workerPath() << "\"\ncache_dir = \"" << m_cache
                            << "\"\n";
        CliRun r = runCli({"--targets", QString::fromStdString(file), "targets", "check", "--json"}, cache, 120000);
        QVERIFY2(r.code == 0, (r.out + r.err).c_str());
        QVERIFY2(r.err.find("target health file " + health + " is corrupt") != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("ignoring it") != std::string::npos, r.err.c_str());
        auto rows = jsonRows(r.out);
        QCOMPARE(rows["good"]["ok"].get<bool>(), true);
        QCOMPARE(rows["good"]["health"]["last_probe"].get<std::string>(), std::string()); // nothing usable stored
        // The probe replaced the corrupt file; the next check shows what it stored.
        QVERIFY(readJsonFile(health).is_object());
        r = runCli({"--targets", QString::fromStdString(file), "targets", "check"}, cache, 120000);
        QVERIFY2(r.code == 0, (r.out + r.err).c_str());
        QVERIFY2(r.err.find("corrupt") == std::string::npos, r.err.c_str());
        QVERIFY2(r.out.find("health before this check: last probe ") != std::string::npos, r.out.c_str());
        QVERIFY2(r.out.find(" ok, 0 consecutive infrastructure failure(s)") != std::string::npos, r.out.c_str());
    }

    void targetsCheckReportsCeilings()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        if (!std::getenv("HONE_CLI"))
            QSKIP("HONE_CLI is not set (CTest sets it to the built hone)");
        const std::string cache = m_tmp.path().toStdString() + "/ceil-cache";
        const std::string file = m_tmp.path().toStdString() + "/ceil-targets.toml";
        std::ofstream(file) << "[targets.good]\nexecutor = \"ssh\"\nhost = \"hone-test-host\"\nssh_config = \""
                            << sshConfig() << "\"\nworker = \"" << workerPath() << "\"\ncache_dir = \"" << m_cache
                            << "\"\npersistent = true\n";
        CliRun r = runCli({"--targets", QString::fromStdString(file), "targets", "check", "--ceilings", "--json"}, cache,
            600000);
        QVERIFY2(r.code == 0, (r.out + r.err).c_str());
        auto rows = jsonRows(r.out);
        const nlohmann::json ceil = rows["good"]["ceilings"];
        QVERIFY2(ceil.value("peak_gbps", 0.0) > 0, r.out.c_str());
        QVERIFY2(ceil.value("peak_gflops", 0.0) > 0, r.out.c_str());
        QCOMPARE(ceil.value("kind", std::string()), std::string("cpu"));
        QCOMPARE(rows["good"]["persistent"].get<bool>(), true);
        r = runCli({"--targets", QString::fromStdString(file), "targets", "check", "--ceilings"}, cache, 600000);
        QVERIFY2(r.code == 0, (r.out + r.err).c_str());
        QVERIFY2(r.out.find("ceilings cpu: ") != std::string::npos && r.out.find(" GB/s copy, ") != std::string::npos,
            r.out.c_str());
        QVERIFY2(r.out.find("(cached on the target)") != std::string::npos, r.out.c_str()); // the first run measured
    }

    // ---- hone targets deploy ----------------------------------------------------------------

    void deployToSshThenSearch()
    {
        if (QString why = sshMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        if (!std::getenv("HONE_CLI"))
            QSKIP("HONE_CLI is not set (CTest sets it to the built hone)");
        const std::string prefix = m_tmp.path().toStdString() + "/deploy prefix"; // a space: quoting
        const std::string file = m_tmp.path().toStdString() + "/deploy-targets.toml";
        const std::string text = "[targets.box]\nexecutor = \"ssh\"\nhost = \"hone-test-host\"\nssh_config = \""
            + sshConfig() + "\"\n";
        std::ofstream(file) << text;
        CliRun r = runCli({"--targets", QString::fromStdString(file), "targets", "deploy", "box", "--from",
                              HONE_SOURCE_DIR, "--prefix", QString::fromStdString(prefix)},
            m_tmp.path().toStdString() + "/deploy-cache", 1500000);
        QVERIFY2(r.code == 0, (r.out + r.err).c_str());
        const std::string installed = prefix + "/bin/hone-worker";
        QVERIFY2(r.out.find("protocol 2 (this hone speaks 2), worker ") != std::string::npos, r.out.c_str());
        QVERIFY2(r.out.find("set worker = \"" + installed + "\" in [targets.box] of " + file) != std::string::npos,
            r.out.c_str());
        for (const char* step : {"probe: ", "upload: ", "build: ", "check: ", "install: "})
            QVERIFY2(r.out.find(std::string("  ") + step) != std::string::npos, r.out.c_str());
        QVERIFY(std::filesystem::is_regular_file(installed));
        std::ifstream f(file);
        QCOMPARE(std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()), text);

        // A search through the deployed worker.
        core::Store store(m_tmp.path().toStdString() + "/deployed.db");
        backends::RemoteExecutorConfig c = sshTarget(1);
        c.workerPath = installed;
        c.persistent = true;
        backends::RemoteExecutor exec(c);
        QCOMPARE(exec.hello().value("protocol", 0), core::protocol::kVersion);
        core::Report rep = search(exec, store, 4, 1);
        QCOMPARE(rep.progress.evaluations, 4);
        QCOMPARE(rep.progress.failures, 0);
        QVERIFY(rep.best.has_value());
        m_deployPrefix = prefix;
    }

    void deployRefusesAnotherProtocol()
    {
        if (QString why = slurmMissing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        if (!std::getenv("HONE_CLI"))
            QSKIP("HONE_CLI is not set (CTest sets it to the built hone)");
        // The worker's sources with another protocol version, deployed through Slurm (srun
        // builds them on the node) into the prefix of the ssh deploy: shared filesystem.
        const std::string src = m_tmp.path().toStdString() + "/src-v99";
        for (const auto& rel : backends::workerSourceFiles(HONE_SOURCE_DIR)) {
            std::filesystem::create_directories(std::filesystem::path(src + "/" + rel).parent_path());
            std::filesystem::copy_file(std::string(HONE_SOURCE_DIR) + "/" + rel, src + "/" + rel);
            // Same times as the originals: the build of the ssh deploy then recompiles only
            // what depends on the one changed header.
            std::filesystem::last_write_time(
                src + "/" + rel, std::filesystem::last_write_time(std::string(HONE_SOURCE_DIR) + "/" + rel));
        }
        std::ifstream in(src + "/core/protocol.h");
        std::string header((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const std::string from = "constexpr int kVersion = 2;";
        QVERIFY2(header.find(from) != std::string::npos, "core/protocol.h has no 'constexpr int kVersion = 2;'");
        header.replace(header.find(from), from.size(), "constexpr int kVersion = 99;");
        std::ofstream(src + "/core/protocol.h") << header;

        const std::string prefix
            = m_deployPrefix.empty() ? m_tmp.path().toStdString() + "/deploy-v99" : m_deployPrefix;
        const auto installed = std::filesystem::path(prefix) / "bin" / "hone-worker";
        const bool had = std::filesystem::exists(installed);
        const auto before = had ? std::filesystem::last_write_time(installed) : std::filesystem::file_time_type {};
        const std::string file = m_tmp.path().toStdString() + "/deploy-slurm.toml";
        std::ofstream(file) << "[targets.cluster]\nexecutor = \"slurm\"\ntime_limit = \"20\"\n";
        CliRun r = runCli({"--targets", QString::fromStdString(file), "targets", "deploy", "cluster", "--from",
                              QString::fromStdString(src), "--prefix", QString::fromStdString(prefix)},
            m_tmp.path().toStdString() + "/deploy-cache", 1500000);
        QCOMPARE(r.code, 4); // ExitCode::Environment
        QVERIFY2(r.err.find("deploy to target 'cluster' failed at step 'check'") != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("the worker speaks version 99, this hone speaks version 2") != std::string::npos,
            r.err.c_str());
        QVERIFY2(r.err.find("nothing was installed") != std::string::npos, r.err.c_str());
        QVERIFY2(r.out.find("build: cmake on slurm") != std::string::npos, r.out.c_str());
        // The good worker of the ssh deploy is still the installed one.
        QCOMPARE(std::filesystem::exists(installed), had);
        if (had)
            QVERIFY(std::filesystem::last_write_time(installed) == before);
    }

    void deployErrorNamesStepCommandAndFix()
    {
        if (!std::getenv("HONE_CLI"))
            QSKIP("HONE_CLI is not set (CTest sets it to the built hone)");
        const std::string file = m_tmp.path().toStdString() + "/deploy-bad.toml";
        std::ofstream(file) << "[targets.nowhere]\nexecutor = \"ssh\"\nhost = \"127.0.0.1\"\nssh_config = \"/dev/null\"\n"
                               "extra_args = [\"-p\", \"1\"]\n";
        CliRun r = runCli({"--targets", QString::fromStdString(file), "targets", "deploy", "nowhere", "--from",
                              HONE_SOURCE_DIR},
            m_tmp.path().toStdString() + "/deploy-cache", 120000);
        QCOMPARE(r.code, 8); // ExitCode::TargetUnreachable: ssh could not connect
        QVERIFY2(r.err.find("failed at step 'probe'") != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("command: ssh 127.0.0.1 -- sh -c ") != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("Connection refused") != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("fix: ssh could not reach 127.0.0.1") != std::string::npos, r.err.c_str());
    }
};

QTEST_GUILESS_MAIN(TestRemote)
#include "tst_remote.moc"
