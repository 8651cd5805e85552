#include "backends/remote_executor.h"

#include "backends/target_health.h"
#include "core/protocol.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace hone::backends {
namespace {

namespace proto = hone::core::protocol;

/// Runs the worker and reports how it ended on stderr, so that a worker killed on the remote
/// side reads differently from a transport that went away. A watchdog kills the worker when the
/// wrapper's parent goes away (sshd's session process, when the connection drops or the local ssh
/// is killed after a stage timeout), so that a hung candidate does not spin on the host; it reads
/// /proc (ps where there is none) once a second, so it forks nothing but `sleep` beside a timing.
/// The worker keeps the wrapper's stdin (fd 3): an asynchronous command would get /dev/null.
constexpr const char* kWrapper
    = "exec 3<&0; \"$@\" <&3 3<&- & w=$!; exec 3<&-; "
      "( while kill -0 $w 2>/dev/null; do if [ -r /proc/$$/stat ]; then read -r _ _ _ p _ </proc/$$/stat; "
      "else p=$(ps -o ppid= -p $$ 2>/dev/null | tr -d ' '); fi; "
      "if [ -n \"$p\" ] && [ \"$p\" != \"$PPID\" ]; then kill -9 $w; break; fi; sleep 1; done ) "
      "</dev/null >/dev/null 2>&1 & d=$!; "
      "wait $w; s=$?; kill $d 2>/dev/null; "
      "if [ $s -gt 128 ]; then echo \"hone-remote: worker killed by signal $((s-128))\" >&2; "
      "else echo \"hone-remote: worker exited with code $s\" >&2; fi; exit $s";

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

/// Runs a helper command (scancel) with its output discarded, and waits for it.
void runQuiet(const std::vector<std::string>& args)
{
    std::vector<char*> argv;
    for (const auto& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0)
        return;
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        execvp(argv[0], argv.data());
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

} // namespace

std::string shellQuote(const std::string& word)
{
    if (!word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '-'
                || c == '=' || c == ':' || c == ',';
        }))
        return word;
    std::string out = "'";
    for (char c : word) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out + "'";
}

RemoteExecutor::RemoteExecutor(RemoteExecutorConfig config)
    : m_config(std::move(config))
    , m_jobs([this](const core::EvalJob& job) {
        WorkerLimits limits = m_config.limits;
        if (auto l = job.request.find("limits"); l != job.request.end() && l->is_object()) {
            limits.compileSeconds = l->value("compile_s", limits.compileSeconds);
            // Starting a remote worker (handshake, allocation) counts as stage 'start'.
            limits.stageSeconds = std::max(l->value("run_s", limits.stageSeconds), 30.0);
            limits.totalSeconds = l->value("total_s", limits.totalSeconds);
        }
        return request(job.request, limits);
    })
{
    m_config.parallel = std::max(1, m_config.parallel);
    m_config.retries = std::max(0, m_config.retries);
    if (m_config.kind == RemoteExecutorConfig::Kind::Slurm)
        m_queue = std::make_unique<SlurmQueue>();
    if (!m_config.healthFile.empty()) {
        // A corrupt file reads as empty here; `hone targets check` and `--on` report it.
        const TargetHealth h = TargetHealthFile(m_config.healthFile).get(m_config.name);
        m_probeFirst = !h.healthy();
    }
}

RemoteExecutor::~RemoteExecutor()
{
    cancelAll();
    std::vector<Persistent> idle;
    {
        std::lock_guard lock(m_idleMutex);
        idle.swap(m_idle);
    }
    // At end of input each worker exits and its ssh connection or srun step ends with it.
    for (auto& w : idle)
        dropWorker(w, /*graceful=*/true);
}

void RemoteExecutor::dropWorker(Persistent& w, bool graceful)
{
    if (!w.process)
        return;
    if (graceful)
        w.process->stop(5);
    w.process.reset();
    if (!graceful && m_config.kind == RemoteExecutorConfig::Kind::Slurm)
        runQuiet({"scancel", "--quiet", "--name", "hone-eval-" + w.tag});
}

void RemoteExecutor::recordOutcome(bool infra, const std::string& error)
{
    if (m_config.healthFile.empty())
        return;
    if (infra) {
        m_healthDirty = true;
        TargetHealthFile(m_config.healthFile).update(m_config.name, [&](TargetHealth& h) {
            ++h.consecutiveInfraFailures;
            h.lastError = error;
            h.lastErrorAt = utcNow();
        });
    } else if (m_healthDirty.exchange(false)) {
        // Written once per recovery, not per evaluation.
        TargetHealthFile(m_config.healthFile).update(m_config.name, [&](TargetHealth& h) {
            h.consecutiveInfraFailures = 0;
            h.lastOk = utcNow();
        });
    }
}

void RemoteExecutor::recordProbe(bool ok, const std::string& error)
{
    if (m_config.healthFile.empty())
        return;
    TargetHealthFile(m_config.healthFile).update(m_config.name, [&](TargetHealth& h) {
        h.lastProbe = utcNow();
        h.lastProbeOk = ok;
        if (ok) {
            h.consecutiveInfraFailures = 0;
            h.lastOk = h.lastProbe;
        } else {
            h.lastError = error;
            h.lastErrorAt = h.lastProbe;
        }
    });
}

std::string RemoteExecutor::probeIfUnhealthy()
{
    if (!m_probeFirst)
        return {};
    try {
        hello(); // clears m_probeFirst when the target answers
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

std::string RemoteExecutor::where() const
{
    std::string what = m_config.kind == RemoteExecutorConfig::Kind::Ssh
        ? "ssh " + m_config.host
        : "slurm" + (m_config.partition.empty() ? std::string() : " partition " + m_config.partition);
    return "target '" + m_config.name + "' (" + what + ")";
}

WorkerCommand RemoteExecutor::command(const std::string& tag) const
{
    std::vector<std::string> worker = {"sh", "-c", kWrapper, "hone-remote", m_config.workerPath, "--stdio"};
    if (!m_config.cacheDir.empty()) {
        worker.push_back("--cache-dir");
        worker.push_back(m_config.cacheDir);
    }
    WorkerCommand cmd;
    auto& a = cmd.argv;
    if (m_config.kind == RemoteExecutorConfig::Kind::Ssh) {
        a = {"ssh"};
        if (!m_config.sshConfig.empty())
            a.insert(a.end(), {"-F", m_config.sshConfig});
        // No password prompts; a dead connection is noticed within ~15 s.
        a.insert(a.end(), {"-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5", "-o",
                              "ServerAliveCountMax=3"});
        a.insert(a.end(), m_config.extraArgs.begin(), m_config.extraArgs.end());
        a.push_back(m_config.host);
        a.push_back("--");
        // The remote side reads one command string through the login shell: quote every word.
        std::string remote = "exec";
        for (const auto& w : worker)
            remote += " " + shellQuote(w);
        a.push_back(remote);
    } else {
        a = {"srun", "--ntasks=1", "--unbuffered", "--quiet", "--job-name", "hone-eval-" + tag, "--time",
            m_config.timeLimit};
        if (!m_config.partition.empty())
            a.insert(a.end(), {"--partition", m_config.partition});
        if (m_config.gpusPerTask > 0)
            a.push_back("--gres=gpu:" + std::to_string(m_config.gpusPerTask));
        a.insert(a.end(), m_config.extraArgs.begin(), m_config.extraArgs.end());
        a.push_back("--");
        a.insert(a.end(), worker.begin(), worker.end());
    }
    return cmd;
}

WorkerLimits RemoteExecutor::slurmLimits(const WorkerLimits& limits, const std::string& tag)
{
    WorkerLimits l = limits;
    if (!m_queue)
        return l;
    l.queueSeconds = m_config.queueSeconds;
    l.startProbe = [queue = m_queue.get(), name = "hone-eval-" + tag]() {
        StartStatus s;
        const std::optional<SlurmJob> job = queue->find(name);
        if (!job) // not submitted yet, or squeue is unavailable: the start limit decides
            return s;
        s.abort = hopelessPending(*job);
        if (job->state == "PENDING") {
            s.queued = true;
            s.detail = "job " + job->id + " pending: " + job->reason;
        }
        return s;
    };
    return l;
}

nlohmann::json RemoteExecutor::attempt(const nlohmann::json& req, const WorkerLimits& limits, Loss& loss)
{
    loss = Loss::None;
    const bool slurm = m_config.kind == RemoteExecutorConfig::Kind::Slurm;
    nlohmann::json r;
    std::string tag;
    if (m_config.persistent) {
        r = persistentExchange(req, limits); // cancels the step of a worker it gives up
    } else {
        tag = std::to_string(getpid()) + "-" + std::to_string(m_attempts.fetch_add(1));
        ++m_started;
        r = runWorker(command(tag), req, slurmLimits(limits, tag), m_jobs.cancelled());
    }
    auto f = r.find("failure");
    if (r.value("status", std::string()) != "failed" || f == r.end() || !f->is_object())
        return r;
    const std::string kind = f->value("kind", std::string());
    const std::string stage = f->value("stage", std::string());
    std::string msg = f->value("message", std::string());
    if (msg == "cancelled") {
        if (slurm && !m_config.persistent)
            runQuiet({"scancel", "--quiet", "--name", "hone-eval-" + tag});
        return r;
    }
    // What Slurm says of the job, read before it is cancelled below: a job the cluster ended
    // reads differently from one whose worker died. Only where the worker's end is unexplained
    // (it died, or the transport went away): a verdict of ours (a stage timeout, the memory
    // limit, garbage on stdout) killed srun, and the job's state then says nothing new.
    std::optional<SlurmJob> job;
    const bool unexplained = kind == "crash" || msg.rfind("worker exited with code", 0) == 0
        || msg.rfind("worker died on", 0) == 0 || contains(msg, "hone-remote: worker killed by signal");
    if (slurm && !m_config.persistent && unexplained)
        job = m_queue->find("hone-eval-" + tag, /*fresh=*/true);
    if (slurm && !m_config.persistent) // a step that timed out, was cancelled or lost its srun must not linger
        runQuiet({"scancel", "--quiet", "--name", "hone-eval-" + tag});
    if (kind == "worker_error" && stage == "start"
        && (msg.rfind("Slurm will not start", 0) == 0 || msg.rfind("queued for", 0) == 0)) {
        // Another attempt would wait in the same queue for the same reason.
        loss = Loss::Final;
        (*f)["message"] = where() + ": " + msg;
        return r;
    }
    if (job && endedByCluster(job->state)) {
        loss = Loss::Retry;
        (*f)["message"] = msg + " (Slurm: job " + job->id + " " + job->state
            + (job->reason.empty() || job->reason == "None" ? std::string() : ", " + job->reason) + ")";
        return r;
    }
    // The wrapper saw the worker end: a candidate's doing (or the worker's), never retried.
    static const std::string killed = "hone-remote: worker killed by signal ";
    if (auto k = msg.find(killed); k != std::string::npos && !(slurm && contains(msg, "CANCELLED"))) {
        int sig = std::atoi(msg.c_str() + k + killed.size());
        return proto::makeFailure(req.value("id", std::string()), proto::FailureKind::Crash, stage,
            "worker died on " + signalDescription(sig) + " in stage '" + stage + "' on " + where());
    }
    if (contains(msg, "hone-remote: worker exited with code 127"))
        return proto::makeFailure(req.value("id", std::string()), proto::FailureKind::WorkerError, "start",
            "no hone-worker at '" + m_config.workerPath + "' on " + where()
                + "; install hone-worker there (scripts/install-deps, cmake --build) or set 'worker' in the targets file");
    const bool lostTransport = msg.rfind("worker exited with code", 0) == 0 || msg.rfind("worker died on", 0) == 0;
    const bool slurmKilled = slurm
        && (contains(msg, "CANCELLED") || contains(msg, "PREEMPT") || contains(msg, "NODE_FAIL")
            || contains(msg, "Job step aborted") || contains(msg, "Unable to allocate"));
    const bool neverAnswered = kind == "timeout" && stage == "start";
    if ((lostTransport && !contains(msg, "hone-remote: worker exited with code")) || slurmKilled || neverAnswered)
        loss = Loss::Retry;
    return r;
}

nlohmann::json RemoteExecutor::persistentExchange(const nlohmann::json& req, const WorkerLimits& limits)
{
    const std::string id = req.value("id", std::string());
    Persistent w;
    std::vector<Persistent> stale;
    {
        std::lock_guard lock(m_idleMutex);
        while (!m_idle.empty() && !w.process) {
            Persistent c = std::move(m_idle.back());
            m_idle.pop_back();
            const bool old = m_config.recycleSeconds > 0 && c.process->ageSeconds() > m_config.recycleSeconds;
            if (!old && c.process->alive())
                w = std::move(c);
            else
                stale.push_back(std::move(c));
        }
    }
    // A worker that died while idle (a dropped connection, a step that ran out of time) costs
    // nothing: the request goes to a new one.
    for (auto& c : stale)
        dropWorker(c, /*graceful=*/c.process->alive());
    if (!w.process) {
        w.tag = std::to_string(getpid()) + "-" + std::to_string(m_attempts.fetch_add(1));
        ++m_started;
        const WorkerLimits startLimits = slurmLimits(limits, w.tag);
        WorkerCommand cmd = command(w.tag);
        cmd.diesWithCaller = false; // it serves later requests from other threads
        w.process = std::make_unique<WorkerProcess>(cmd, startLimits);
        // The handshake checks the protocol version and bears the start-up (allocation, key
        // exchange), so the request's own stages get their usual limits.
        nlohmann::json hello = proto::makeMessage("hello");
        hello["id"] = req.value("type", std::string()) == "hello" ? id : "hello";
        WorkerLimits handshake = startLimits;
        handshake.stageSeconds = std::max(limits.stageSeconds, 60.0);
        nlohmann::json h = w.process->exchange(hello, handshake, m_jobs.cancelled(), false);
        if (h.value("type", std::string()) != "hello") {
            dropWorker(w, /*graceful=*/false);
            if (!h.contains("failure"))
                h = proto::makeFailure(id, proto::FailureKind::ProtocolError, "start",
                    "worker answered hello with a '" + h.value("type", std::string()) + "' message");
            h["id"] = id;
            return h;
        }
        if (req.value("type", std::string()) == "hello") {
            std::lock_guard lock(m_idleMutex);
            m_idle.push_back(std::move(w));
            return h;
        }
    }
    nlohmann::json r = w.process->exchange(req, limits, m_jobs.cancelled(), false);
    // A worker whose GPU context is lost exits after its result; one that served its share is
    // retired with it.
    const bool lost = r.value("device_lost", false);
    const bool retired = ++w.served >= std::max(1, m_config.maxRequestsPerWorker);
    const bool alive = w.process->alive();
    if (!lost && !retired && alive) {
        std::lock_guard lock(m_idleMutex);
        m_idle.push_back(std::move(w));
    } else {
        // A worker that was killed (a timeout, a cancel) may leave a Slurm step behind.
        dropWorker(w, /*graceful=*/alive || lost);
    }
    return r;
}

nlohmann::json RemoteExecutor::request(const nlohmann::json& req, const WorkerLimits& limits)
{
    if (req.value("type", std::string()) != "hello")
        if (std::string why = probeIfUnhealthy(); !why.empty())
            return proto::makeFailure(req.value("id", std::string()), proto::FailureKind::WorkerError, "start",
                "target '" + m_config.name + "' was unhealthy in an earlier session and its probe failed: " + why);
    nlohmann::json last;
    std::vector<std::string> reasons;
    for (int i = 0; i <= m_config.retries; ++i) {
        if (i > 0) {
            // Backoff in small steps so that cancelAll is not held up.
            auto until = std::chrono::steady_clock::now()
                + std::chrono::milliseconds(static_cast<long>(1000 * m_config.retryDelaySeconds * i));
            while (std::chrono::steady_clock::now() < until && !*m_jobs.cancelled())
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        Loss loss = Loss::None;
        last = attempt(req, limits, loss);
        if (loss == Loss::Final) {
            // Not retried; the target is unhealthy all the same (a pool benches it, and the
            // next session probes it first).
            ++m_infraFailures;
            recordOutcome(true, last["failure"].value("message", std::string()));
            return last;
        }
        if (loss == Loss::None) {
            if (last.value("status", std::string()) != "failed"
                || last["failure"].value("kind", std::string()) != "worker_error") {
                m_infraFailures = 0;
                recordOutcome(false, {});
            }
            return last;
        }
        ++m_infraFailures;
        reasons.push_back(last["failure"].value("message", std::string()));
        recordOutcome(true, reasons.back());
        if (*m_jobs.cancelled())
            break;
    }
    std::string msg = where() + ": " + std::to_string(reasons.size()) + " attempt(s) lost to the infrastructure";
    if (!reasons.empty())
        msg += "; last: " + reasons.back();
    msg += "; check the target with 'hone targets check " + m_config.name + "'";
    return proto::makeFailure(req.value("id", std::string()), proto::FailureKind::WorkerError,
        last.contains("failure") ? last["failure"].value("stage", std::string("start")) : "start", msg);
}

nlohmann::json RemoteExecutor::hello()
{
    std::lock_guard lock(m_helloMutex);
    if (!m_hello.is_null())
        return m_hello;
    nlohmann::json req = proto::makeMessage("hello");
    req["id"] = "hello";
    WorkerLimits limits = m_config.limits;
    limits.stageSeconds = 60; // a Slurm allocation and an ssh handshake take their time
    nlohmann::json reply = request(req, limits);
    if (reply.value("type", std::string()) != "hello") {
        std::string why = reply.contains("failure") ? reply["failure"].value("message", std::string()) : reply.dump();
        recordProbe(false, why);
        // Failures counted as lost to the infrastructure (a dropped or refused connection, a
        // Slurm job that never started) mean no worker was reached at all.
        if (m_infraFailures.load() > 0)
            throw TargetUnreachable("cannot reach " + where() + ": " + why);
        throw std::runtime_error("cannot start a worker on " + where() + ": " + why);
    }
    recordProbe(true, {});
    m_probeFirst = false;
    m_hello = reply;
    return m_hello;
}

nlohmann::json RemoteExecutor::ceilings(const std::string& kind)
{
    nlohmann::json req = proto::makeMessage("calibrate");
    req["id"] = "calibrate";
    req["kind"] = kind;
    WorkerLimits limits = m_config.limits;
    limits.stageSeconds = 300;
    nlohmann::json reply = request(req, limits);
    if (reply.value("type", std::string()) != "ceilings") {
        const std::string why
            = reply.contains("failure") ? reply["failure"].value("message", reply.dump()) : reply.dump();
        throw std::runtime_error("calibrating the " + kind + " device on " + where() + " failed: " + why);
    }
    return reply;
}

void RemoteExecutor::submit(core::EvalJob job)
{
    m_jobs.submit(std::move(job));
}

std::optional<core::EvalDone> RemoteExecutor::next(std::chrono::milliseconds timeout)
{
    return m_jobs.next(timeout);
}

void RemoteExecutor::cancelAll()
{
    m_jobs.cancelAll();
}

} // namespace hone::backends
