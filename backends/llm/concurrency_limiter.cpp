#include "backends/llm/concurrency_limiter.h"

#include <algorithm>
#include <chrono>

namespace hone::llm {

ConcurrencyLimiter::ConcurrencyLimiter(int limit)
    : m_limit(std::max(1, limit))
{
}

bool ConcurrencyLimiter::acquire(const std::atomic<bool>* cancel)
{
    std::unique_lock lock(m_mutex);
    // Cancellation is a plain flag, so poll it: a short timed wait costs nothing here.
    while (m_inUse >= m_limit) {
        if (cancel && cancel->load())
            return false;
        m_freed.wait_for(lock, std::chrono::milliseconds(50));
    }
    if (cancel && cancel->load())
        return false;
    ++m_inUse;
    m_highWater = std::max(m_highWater, m_inUse);
    return true;
}

void ConcurrencyLimiter::release()
{
    {
        std::lock_guard lock(m_mutex);
        --m_inUse;
    }
    m_freed.notify_one();
}

int ConcurrencyLimiter::inUse() const
{
    std::lock_guard lock(m_mutex);
    return m_inUse;
}

int ConcurrencyLimiter::highWater() const
{
    std::lock_guard lock(m_mutex);
    return m_highWater;
}

} // namespace hone::llm
