// The clock checks that bound a runner's reported times (runner_clock.h), linked from
// hone_worker_lib: honest reports pass, patched clocks fail as the worker would report them. The
// GPU numbers are those measured on an H100 (docs/THREAT_MODEL.md); nothing here is timed.

#include "runner_clock.h"

#include <QtTest>

using namespace hone::backends;

namespace {

std::vector<RunnerTimedCall> calls(int n, double reported, double wall, double cpu = -1)
{
    return std::vector<RunnerTimedCall>(static_cast<size_t>(n), RunnerTimedCall { reported, wall, cpu });
}

} // namespace

class TestRunnerClock : public QObject {
    Q_OBJECT

private slots:
    void gpuHonestCallsPass()
    {
        // cuda_scale's naive kernel on an H100: 161 us reported, 553 us from request to reply.
        QCOMPARE(QString::fromStdString(deviceClockDisagreement(calls(22, 161e3, 553e3))), QString());
        // A long kernel: the window is the report plus the same overhead.
        QCOMPARE(QString::fromStdString(deviceClockDisagreement(calls(22, 5e6, 5.4e6))), QString());
    }

    void gpuPatchedTimerFails()
    {
        // cuEventElapsedTime patched to a twentieth of a 5 ms call.
        const std::string why = deviceClockDisagreement(calls(22, 250e3, 5.4e6));
        QVERIFY2(why.find("GPU clock disagrees") != std::string::npos, why.c_str());
        QVERIFY2(why.find("250.0 us per call") != std::string::npos, why.c_str());
        QVERIFY2(why.find("5400.0 us per call") != std::string::npos, why.c_str());
    }

    void gpuOneSlowCallDoesNotFail()
    {
        // The first call loads modules on the host: a one-off, judged on the median call.
        std::vector<RunnerTimedCall> c = calls(21, 161e3, 553e3);
        c.insert(c.begin(), RunnerTimedCall { 161e3, 40e6, -1 });
        QCOMPARE(QString::fromStdString(deviceClockDisagreement(c)), QString());
        // ... but most calls slow is a verdict.
        std::vector<RunnerTimedCall> d = calls(10, 161e3, 553e3);
        const std::vector<RunnerTimedCall> slow = calls(12, 161e3, 4e6);
        d.insert(d.end(), slow.begin(), slow.end());
        QVERIFY(!deviceClockDisagreement(d).empty());
    }

    void reportBeyondTheWindowFails()
    {
        std::vector<RunnerTimedCall> c = calls(10, 161e3, 553e3);
        c.push_back(RunnerTimedCall { 2e6, 1e6, -1 });
        const std::string why = deviceClockDisagreement(c);
        QVERIFY2(why.find("from request to reply") != std::string::npos, why.c_str());
    }

    void tooFewCallsCannotBeJudged()
    {
        QCOMPARE(QString::fromStdString(deviceClockDisagreement(calls(2, 1e3, 9e6))), QString());
        QVERIFY(deviceClockStats({}).is_null());
        const nlohmann::json stats = deviceClockStats(calls(3, 161e3, 553e3));
        QCOMPARE(stats["calls"].get<int>(), 3);
        QCOMPARE(stats["median_wall_ns"].get<double>(), 553e3);
    }

    void cpuPatchedClockFails()
    {
        // libc's clock_gettime rewritten to report 1 us; the main thread computed 500 us.
        const std::string why = cpuClockDisagreement(calls(20, 1e3, 600e3, 500e3));
        QVERIFY2(why.find("disagrees with the CPU time") != std::string::npos, why.c_str());
        QCOMPARE(QString::fromStdString(cpuClockDisagreement(calls(20, 500e3, 600e3, 480e3))), QString());
        // Without CPU accounting the check cannot be made.
        QCOMPARE(QString::fromStdString(cpuClockDisagreement(calls(20, 1e3, 600e3, -1))), QString());
    }
};

QTEST_APPLESS_MAIN(TestRunnerClock)
#include "tst_runner_clock.moc"
