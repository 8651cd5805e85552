// Containment and result integrity (issue 18, classes 1 and 8): candidates that forge protocol
// messages, hold an evaluation with forged heartbeats, or leave processes behind (setsid()
// children, a side effect after the evaluation), run through the real hone-worker; and stand-in
// workers (shell scripts) that break the protocol's rules from the worker's side. Every test
// asserts the outcome a user sees (the verdict, how soon it came, that no process or file was
// left), never which defence fired: a forged message that is never seen passes as well.
#include "backends/worker_process.h"
#include "core/protocol.h"

#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

using nlohmann::json;
namespace backends = hone::backends;
namespace protocol = hone::core::protocol;
namespace fs = std::filesystem;

namespace {

const char* const kReference = R"(#include <hone/kernel.h>
extern "C" int hone_run(const hone_args* a)
{
    const float* x = static_cast<const float*>(a->inputs[0].data);
    float* y = static_cast<float*>(a->outputs[0].data);
    const int64_t n = hone_numel(&a->outputs[0]);
    const float b = static_cast<float>(hone_param_or(a, "b", 0.0));
    for (int64_t i = 0; i < n; ++i)
        y[i] = 2.0f * x[i] + b;
    return 0;
}
)";

json shape(const std::string& label, int64_t n)
{
    return json{{"label", label}, {"symbols", {{"N", n}}}, {"flops", 2.0 * double(n)}, {"bytes", 8.0 * double(n)},
        {"inputs",
            json::array({{{"name", "x"}, {"dtype", "f32"}, {"shape", json::array({n})},
                {"init", {{"dist", "normal"}, {"mean", 0.0}, {"std", 1.0}}}}})},
        {"outputs", json::array({{{"name", "y"}, {"dtype", "f32"}, {"shape", json::array({n})}}})}};
}

json source(const std::string& name, const std::string& text)
{
    return json{{"name", name}, {"lang", "cpp"}, {"source", text}, {"knobs", json::object()}, {"flags", ""}};
}

std::string readText(const fs::path& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

fs::path dataDir()
{
    const char* env = std::getenv("HONE_TEST_DATA");
    return env && *env ? fs::path(env) : fs::path(HONE_TEST_DATA);
}

/// An eval of the hostile candidate `file` (tests/data/hostile) for y = 2*x + b, timed.
json evalRequest(const std::string& id, const std::string& file, double runSeconds, double totalSeconds)
{
    json problem = {{"name", "axpb"}, {"reference", source("reference.cpp", kReference)}, {"params", {{"b", 0.5}}},
        {"tolerance", {{"f32", {{"atol", 1e-6}, {"rtol", 1e-5}}}}},
        {"check", json::array({shape("small[0]", 1000), shape("small[1]", 17)})},
        {"bench", json::array({shape("bench[0]", 1 << 16)})}};
    json req = protocol::makeMessage("eval");
    req["id"] = id;
    req["problem"] = problem;
    req["candidate"] = source(file, readText(dataDir() / "hostile" / file));
    req["baseline"] = nullptr;
    req["stages"] = json::array({"compile", "check", "time"});
    req["config"] = {{"seeds", {1, 2, 3}}, {"samples", 10}, {"warmup", 2}, {"timing_shape", 0}};
    req["limits"] = {{"compile_s", 120}, {"run_s", runSeconds}, {"total_s", totalSeconds}};
    return req;
}

struct Outcome {
    bool finished = false; // false: still running at the cap (the exchange hangs)
    json reply;
    double seconds = 0;
};

/// runWorker on a thread of its own, so that an exchange that never returns fails the test
/// after `capSeconds` instead of hanging it.
Outcome runBounded(const backends::WorkerCommand& cmd, const json& request, const backends::WorkerLimits& limits,
    double capSeconds)
{
    struct Shared {
        std::mutex mutex;
        std::condition_variable cv;
        bool done = false;
        json reply;
    };
    auto shared = std::make_shared<Shared>();
    const auto t0 = std::chrono::steady_clock::now();
    std::thread([shared, cmd, request, limits] {
        json r = backends::runWorker(cmd, request, limits);
        std::lock_guard lock(shared->mutex);
        shared->reply = std::move(r);
        shared->done = true;
        shared->cv.notify_all();
    }).detach();
    Outcome out;
    std::unique_lock lock(shared->mutex);
    out.finished = shared->cv.wait_for(lock, std::chrono::duration<double>(capSeconds), [&] { return shared->done; });
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (out.finished)
        out.reply = shared->reply;
    return out;
}

std::string failureKind(const json& r)
{
    return r.contains("failure") && r["failure"].is_object() ? r["failure"].value("kind", std::string()) : "";
}

std::string failureMessage(const json& r)
{
    return r.contains("failure") && r["failure"].is_object() ? r["failure"].value("message", std::string()) : "";
}

/// Gone: no such process, or only its zombie (dead, waiting for a parent to reap it).
bool processGone(pid_t pid)
{
    if (::kill(pid, 0) != 0 && errno == ESRCH)
        return true;
    const std::string stat = readText("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');
    return stat.empty() || (close != std::string::npos && close + 2 < stat.size()
                               && (stat[close + 2] == 'Z' || stat[close + 2] == 'X'));
}

/// Loosely: a SIGKILL takes a moment to land.
bool goneWithin(pid_t pid, double seconds)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!processGone(pid)) {
        if (std::chrono::steady_clock::now() > until)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

/// The pid a candidate or script wrote to `file`, waiting up to `seconds` for it; 0 if none.
pid_t readPid(const fs::path& file, double seconds)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        const int pid = std::atoi(readText(file).c_str());
        if (pid > 0)
            return pid;
        if (std::chrono::steady_clock::now() > until)
            return 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

/// The start of a stand-in worker: reads one request and pulls out its id and secret.
const char* const kScriptHead = "#!/bin/sh\n"
                                "read -r line\n"
                                "id=$(printf '%s' \"$line\" | sed -n 's/.*\"id\":\"\\([^\"]*\\)\".*/\\1/p')\n"
                                "secret=$(printf '%s' \"$line\" | sed -n 's/.*\"secret\":\"\\([0-9a-f]*\\)\".*/\\1/p')\n";

} // namespace

class TestContainment : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_tmp;
    std::string m_worker;

    /// The real worker. `sandboxed = false` tests the defences that hold without bubblewrap
    /// (the candidate can then write the pid files these tests read); the sandbox itself is
    /// tested by tst_worker_checks::candidatesAreSandboxed.
    backends::WorkerCommand workerCommand(bool sandboxed = true) const
    {
        backends::WorkerCommand cmd;
        cmd.argv = {m_worker, "--stdio", "--cache-dir", m_tmp.path().toStdString() + "/cache"};
        if (!sandboxed)
            cmd.argv.push_back("--no-sandbox");
        return cmd;
    }

    /// A folder for one test's pid files and markers, named to the candidate by
    /// $HONE_CONTAINMENT_DIR (the worker passes its environment on).
    fs::path scratch(const std::string& name)
    {
        const fs::path dir = fs::path(m_tmp.path().toStdString()) / name;
        fs::create_directories(dir);
        ::setenv("HONE_CONTAINMENT_DIR", dir.c_str(), 1);
        return dir;
    }

    /// A stand-in worker: kScriptHead, then `body`.
    backends::WorkerCommand script(const std::string& name, const std::string& body)
    {
        const fs::path path = fs::path(m_tmp.path().toStdString()) / name;
        std::ofstream(path) << kScriptHead << body;
        fs::permissions(path, fs::perms::owner_all);
        backends::WorkerCommand cmd;
        cmd.argv = {path.string()};
        return cmd;
    }

    static backends::WorkerLimits limits(double stageSeconds, double totalSeconds)
    {
        backends::WorkerLimits l;
        l.compileSeconds = 120;
        l.stageSeconds = stageSeconds;
        l.totalSeconds = totalSeconds;
        return l;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_tmp.isValid());
        const char* worker = std::getenv("HONE_WORKER");
        QVERIFY2(worker && *worker, "set HONE_WORKER to the hone-worker binary");
        m_worker = worker;
    }

    /// Class 1: a candidate writes forged `ok` results (1000x, one under the request's own id)
    /// into every pipe it holds and computes nothing. The verdict is the honest one (its output
    /// was never written) or a protocol error; never the forged success.
    void forgedResultIsNotAdopted()
    {
        scratch("forge");
        const json req = evalRequest("c-forge", "forge_result.cpp", 30, 300);
        const Outcome o = runBounded(workerCommand(), req, limits(30, 300), 400);
        QVERIFY2(o.finished, "the exchange did not return");
        const json& r = o.reply;
        QVERIFY2(!r.contains("forged"), r.dump().c_str());
        QCOMPARE(r.value("type", std::string()), std::string("result"));
        QCOMPARE(r.value("id", std::string()), std::string("c-forge"));
        QCOMPARE(r.value("status", std::string()), std::string("failed"));
        const std::set<std::string> honest = {"protocol_error", "partial_write", "wrong_result"};
        QVERIFY2(honest.count(failureKind(r)), r.dump().c_str());
        QVERIFY2(!r.contains("secret"), r.dump().c_str()); // spent: not stored with the result
    }

    /// Class 1: a candidate that never returns and writes forged progress (stage 'wait', which
    /// the silence limit does not count) ten times a second is ended by the total limit at the
    /// latest.
    void forgedHeartbeatsCannotHoldTheEvaluation()
    {
        scratch("heartbeat");
        const double total = 15;
        const json req = evalRequest("c-heartbeat", "forge_heartbeat.cpp", 3, total);
        const Outcome o = runBounded(workerCommand(), req, limits(3, total), 120);
        QVERIFY2(o.finished, "forged heartbeats held the evaluation past two minutes");
        QCOMPARE(o.reply.value("status", std::string()), std::string("failed"));
        const std::set<std::string> ended = {"protocol_error", "timeout"};
        QVERIFY2(ended.count(failureKind(o.reply)), o.reply.dump().c_str());
        QVERIFY2(o.seconds < total + 15, std::to_string(o.seconds).c_str());
    }

    /// The total limit holds against a worker's own progress too: a worker whose heartbeats are
    /// genuine (right id and secret) but never ends is killed at the total limit.
    void totalLimitIsNotExtendedByProgress()
    {
        const backends::WorkerCommand cmd = script("endless-progress",
            "while :; do\n"
            "  printf '{\"protocol\":2,\"type\":\"progress\",\"id\":\"%s\",\"secret\":\"%s\",\"stage\":\"wait\","
            "\"detail\":\"timing lock\"}\\n' \"$id\" \"$secret\"\n"
            "  sleep 0.2\n"
            "done\n");
        json req = protocol::makeMessage("hello");
        req["id"] = "endless";
        const Outcome o = runBounded(cmd, req, limits(1, 4), 60);
        QVERIFY2(o.finished, "the exchange did not return");
        QCOMPARE(failureKind(o.reply), std::string("timeout"));
        QVERIFY2(failureMessage(o.reply).find("total limit of 4 s") != std::string::npos, o.reply.dump().c_str());
        QVERIFY2(o.seconds < 4 + 10, std::to_string(o.seconds).c_str());
    }

    void replyMustCarryIdAndSecret_data()
    {
        QTest::addColumn<QString>("body");
        QTest::addColumn<bool>("accepted");
        const std::string fields = "\"worker\":\"stand-in\",\"devices\":[]";
        auto reply = [&](const std::string& id, const std::string& secret) {
            return "printf '{\"protocol\":2,\"type\":\"hello\",\"id\":\"%s\"" + std::string(secret.empty() ? "" : ",\"secret\":\"%s\"")
                + "," + fields + "}\\n' \"" + id + "\"" + (secret.empty() ? "" : " \"" + secret + "\"") + "\n";
        };
        QTest::addRow("id and secret") << QString::fromStdString(reply("$id", "$secret")) << true;
        QTest::addRow("no secret") << QString::fromStdString(reply("$id", "")) << false;
        QTest::addRow("wrong secret") << QString::fromStdString(reply("$id", "0123456789abcdef0123456789abcdef"))
                                      << false;
        QTest::addRow("wrong id") << QString::fromStdString(reply("other", "$secret")) << false;
        // Two replies in one write: the second is as authentic as the first, and still refused.
        QTest::addRow("two replies")
            << QString::fromStdString("r='{\"protocol\":2,\"type\":\"hello\",\"id\":\"'$id'\",\"secret\":\"'$secret'\","
                   + fields + "}'\nprintf '%s\\n%s\\n' \"$r\" \"$r\"\n")
            << false;
    }

    /// Exactly one reply, carrying the request's id and secret; anything else fails the request
    /// as a protocol error that says so.
    void replyMustCarryIdAndSecret()
    {
        QFETCH(QString, body);
        QFETCH(bool, accepted);
        const backends::WorkerCommand cmd = script("reply-" + std::to_string(std::rand()), body.toStdString());
        json req = protocol::makeMessage("hello");
        req["id"] = "h-1";
        const Outcome o = runBounded(cmd, req, limits(10, 20), 60);
        QVERIFY2(o.finished, "the exchange did not return");
        if (accepted) {
            QVERIFY2(o.reply.value("type", std::string()) == "hello", o.reply.dump().c_str());
            QVERIFY2(!o.reply.contains("secret"), o.reply.dump().c_str());
            return;
        }
        QCOMPARE(failureKind(o.reply), std::string("protocol_error"));
        QVERIFY2(failureMessage(o.reply).find("did not carry this request's id and secret") != std::string::npos,
            o.reply.dump().c_str());
    }

    /// Reading stops at the verdict: a worker that answers and then waits, with a child in a
    /// session of its own holding the pipes, is ended after a short grace; the child too.
    void exchangeEndsAtTheVerdict()
    {
        const fs::path dir = scratch("verdict");
        const backends::WorkerCommand cmd = script("reply-and-linger",
            "setsid sleep 300 &\n"
            "echo $! > '" + (dir / "sleeper.pid").string() + "'\n"
            "printf '{\"protocol\":2,\"type\":\"hello\",\"id\":\"%s\",\"secret\":\"%s\",\"devices\":[]}\\n' \"$id\" "
            "\"$secret\"\n"
            "wait\n");
        json req = protocol::makeMessage("hello");
        req["id"] = "linger";
        const Outcome o = runBounded(cmd, req, limits(60, 600), 60);
        QVERIFY2(o.finished, "the exchange waited for the pipes to close");
        QVERIFY2(o.reply.value("type", std::string()) == "hello", o.reply.dump().c_str());
        QVERIFY2(o.seconds < 15, std::to_string(o.seconds).c_str());
        const pid_t sleeper = readPid(dir / "sleeper.pid", 5);
        QVERIFY(sleeper > 0);
        QVERIFY2(goneWithin(sleeper, 3), "the worker's child in its own session survived the exchange");
    }

    /// Class 8: a candidate's child that calls setsid() and keeps the worker's pipes does not
    /// hold the evaluation, and does not survive it.
    void setsidChildDoesNotSurvive()
    {
        const fs::path dir = scratch("holder");
        const json req = evalRequest("c-holder", "setsid_holder.cpp", 30, 300);
        const Outcome o = runBounded(workerCommand(false), req, limits(30, 300), 150);
        QVERIFY2(o.finished, "a setsid() child holding the pipes held the evaluation");
        QCOMPARE(o.reply.value("type", std::string()), std::string("result"));
        QVERIFY2(failureKind(o.reply) != "timeout", o.reply.dump().c_str());
        const pid_t holder = readPid(dir / "holder.pid", 5);
        QVERIFY2(holder > 0, ("the candidate never forked: " + o.reply.dump().substr(0, 600)).c_str());
        QVERIFY2(goneWithin(holder, 3), "the candidate's setsid() child survived its evaluation");
    }

    /// Class 8: a detached setsid() child that closed every descriptor and waits for the
    /// evaluation to end before writing a file never gets to write it.
    void noSideEffectAfterTheEvaluation()
    {
        const fs::path dir = scratch("late");
        const json req = evalRequest("c-late", "late_marker.cpp", 30, 300);
        const Outcome o = runBounded(workerCommand(false), req, limits(30, 300), 150);
        QVERIFY2(o.finished, "the exchange did not return");
        QCOMPARE(o.reply.value("type", std::string()), std::string("result"));
        const pid_t late = readPid(dir / "late.pid", 5);
        QVERIFY2(late > 0, ("the candidate never forked: " + o.reply.dump().substr(0, 600)).c_str());
        QVERIFY2(goneWithin(late, 3), "the candidate's detached child survived its evaluation");
        // It polls ten times a second for the end of its evaluator; give it that and more.
        std::this_thread::sleep_for(std::chrono::seconds(1));
        QVERIFY2(!fs::exists(dir / "marker"), "a file was written after the evaluation");
    }

    /// Class 8: a worker dies with the process that started it, even of SIGKILL (a killed hone
    /// must not leave a hung candidate spinning).
    void workerDiesWithItsParent()
    {
        const fs::path dir = scratch("orphan");
        const backends::WorkerCommand cmd = script("hang", "echo $$ > '" + (dir / "worker.pid").string()
                + "'\nexec sleep 300\n");
        const pid_t parent = ::fork();
        QVERIFY(parent >= 0);
        if (parent == 0) {
            // A stand-in for hone: starts the worker and waits for its reply, which never comes.
            json req = protocol::makeMessage("hello");
            req["id"] = "orphan";
            backends::runWorker(cmd, req, limits(300, 600));
            ::_exit(0);
        }
        const pid_t worker = readPid(dir / "worker.pid", 20);
        ::kill(parent, SIGKILL);
        ::waitpid(parent, nullptr, 0);
        QVERIFY2(worker > 0, "the worker never started");
        QVERIFY2(goneWithin(worker, 5), "the worker outlived the process that started it");
    }
};

QTEST_GUILESS_MAIN(TestContainment)
#include "tst_containment.moc"
