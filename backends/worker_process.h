#pragma once

#include "core/protocol.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace hone::backends {

/// What a start probe says about a worker that has not said anything yet (stage 'start').
struct StartStatus {
    bool queued = false; // waiting its turn for resources: the start stage's clock stands still
    std::string detail;  // why it waits, for messages ("job 12 pending: Resources")
    std::string abort;   // non-empty: it will never start; the request fails with this message
};

/// Limits the executor enforces from outside the worker.
struct WorkerLimits {
    double compileSeconds = 120;     // wall time while the worker is in stage 'compile'
    double stageSeconds = 60;        // wall time in any other stage
    /// Wall time of a whole exchange, which no message of the worker extends (only the wait of
    /// a queued start, as the start probe tells it, is not counted); 0: 2 * compileSeconds +
    /// 8 * stageSeconds, room for three compiles and every later stage, waits for the device's
    /// timing lock included.
    double totalSeconds = 0;
    double memoryMiB = 4096;         // resident set size of the worker process
    bool addressSpaceLimit = true;   // RLIMIT_AS backstop; off for GPU workers, whose driver
                                     // reserves far more address space than it uses
    /// Asked about once a second until the worker's first message (Slurm: the job's state in
    /// the queue), so that a job waiting for resources is not taken for a hung worker and one
    /// that can never start fails at once.
    std::function<StartStatus()> startProbe;
    double queueSeconds = 0;         // the longest a queued start may wait; 0: no limit
};

/// How to start one worker: the command line (`hone-worker --stdio ...`, or `ssh host ...`).
struct WorkerCommand {
    std::vector<std::string> argv;
    /// The process gets SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG), so
    /// that a worker never outlives a killed hone. Off for a worker kept for later requests
    /// (persistent remote workers), whose starting thread may end first; those end at end of
    /// input when hone's side of the pipe goes away.
    bool diesWithCaller = true;
};

/// One worker process in its own process group, with pipes to its stdin, stdout and stderr. It
/// serves one request (`exchange(..., last = true)`, then it exits at end of input) or many in
/// turn (a persistent worker). Each request carries a fresh secret; the worker's messages for it
/// must carry the request's id and that secret, and exactly one of them is the reply. Whatever
/// goes wrong during an exchange — a crash (signal), no progress within a stage's limit, the
/// total limit, the memory limit, garbage or a forged message on stdout, an exit without a
/// reply, cancellation — ends the process and everything it started (its group, and every
/// descendant that left the group) and becomes a failed result with the reason; `alive()` is
/// then false.
class WorkerProcess {
public:
    /// Starts `cmd`; `limits.addressSpaceLimit` and `memoryMiB` set the RLIMIT_AS backstop.
    WorkerProcess(const WorkerCommand& cmd, const WorkerLimits& limits);
    ~WorkerProcess(); // kills the group if it still runs
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;

    /// Sends `request` with a fresh `secret` and returns the worker's reply (a `result`, or for
    /// hello and calibrate the reply; the secret removed), or a failed result saying why there
    /// was none. With `last` the worker's input is closed after the request; once the reply is
    /// in, the process has a short grace to exit, then it and whatever it started are killed
    /// and reaped before returning (never waiting for a descendant that holds the pipes).
    nlohmann::json exchange(const nlohmann::json& request, const WorkerLimits& limits,
        const std::atomic<bool>* cancel, bool last);

    /// False once the process ended or was killed. Checks an idle worker without blocking: an
    /// end of output, or output nobody asked for, means it is gone (and it is reaped).
    bool alive();

    /// Closes the worker's input (it exits at end of input), waits up to `graceSeconds`, then
    /// kills the group.
    void stop(double graceSeconds);

    /// Seconds since the process started.
    double ageSeconds() const;

private:
    void reap(); // closes the pipes, waits for the process, kills what is left of its group
    void terminate(); // SIGKILLs the process, its group and every descendant that left it
    bool exited(); // the process ended (it stays a zombie until reap(), so its pid is not reused)

    pid_t m_pid = -1;
    int m_in = -1, m_out = -1, m_err = -1;
    std::string m_outBuf, m_errBuf;
    std::string m_startError;
    int m_status = 0;
    bool m_reaped = false;
    std::chrono::steady_clock::time_point m_started;
};

/// Runs one request through a fresh worker process and returns its `result` (or, for hello
/// and calibrate, the reply); failures as WorkerProcess::exchange describes.
nlohmann::json runWorker(const WorkerCommand& cmd, const nlohmann::json& request, const WorkerLimits& limits,
    const std::atomic<bool>* cancel = nullptr);

using core::protocol::signalDescription; // "SIGSEGV (Segmentation fault)"

} // namespace hone::backends
