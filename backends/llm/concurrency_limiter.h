#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace hone::llm {

/// At most `limit` calls at once against one provider; waiting callers can be cancelled.
class ConcurrencyLimiter {
public:
    explicit ConcurrencyLimiter(int limit);

    /// Waits for a slot. False when `cancel` became true first.
    bool acquire(const std::atomic<bool>* cancel);
    void release();

    int limit() const { return m_limit; }
    int inUse() const;
    int highWater() const; // the most slots ever held at once

private:
    mutable std::mutex m_mutex;
    std::condition_variable m_freed;
    const int m_limit;
    int m_inUse = 0; // guarded by m_mutex
    int m_highWater = 0; // guarded by m_mutex
};

/// Holds one slot for its lifetime.
class Permit {
public:
    Permit(ConcurrencyLimiter& limiter, const std::atomic<bool>* cancel)
        : m_limiter(limiter)
        , m_held(limiter.acquire(cancel))
    {
    }
    ~Permit()
    {
        if (m_held)
            m_limiter.release();
    }
    Permit(const Permit&) = delete;
    Permit& operator=(const Permit&) = delete;
    bool held() const { return m_held; }

private:
    ConcurrencyLimiter& m_limiter;
    bool m_held;
};

} // namespace hone::llm
