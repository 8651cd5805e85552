#include "backends/job_threads.h"

namespace hone::backends {

void JobThreads::reapFinished()
{
    for (auto it = m_jobs.begin(); it != m_jobs.end();) {
        if (it->finished->load()) {
            it->thread.join();
            it = m_jobs.erase(it);
        } else {
            ++it;
        }
    }
}

void JobThreads::submit(core::EvalJob job)
{
    std::lock_guard lock(m_mutex);
    reapFinished();
    auto finished = std::make_shared<std::atomic<bool>>(false);
    std::thread t([this, finished, job = std::move(job)] {
        struct Done {
            std::atomic<bool>& flag;
            ~Done() { flag = true; }
        } done { *finished };
        const auto start = std::chrono::steady_clock::now();
        nlohmann::json result = m_runner(job);
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (m_cancel)
            return;
        std::lock_guard inner(m_mutex);
        m_done.push_back(core::EvalDone { job.id, std::move(result), wall });
        m_cv.notify_all();
    });
    m_jobs.push_back(Job { std::move(t), std::move(finished) });
}

std::optional<core::EvalDone> JobThreads::next(std::chrono::milliseconds timeout)
{
    std::unique_lock lock(m_mutex);
    if (!m_cv.wait_for(lock, timeout, [&] { return !m_done.empty(); }))
        return std::nullopt;
    core::EvalDone d = std::move(m_done.front());
    m_done.pop_front();
    return d;
}

void JobThreads::cancelAll()
{
    m_cancel = true;
    std::vector<Job> jobs;
    {
        std::lock_guard lock(m_mutex);
        jobs.swap(m_jobs);
    }
    for (auto& j : jobs)
        if (j.thread.joinable())
            j.thread.join();
    std::lock_guard lock(m_mutex);
    m_done.clear();
    m_cancel = false;
}

} // namespace hone::backends
