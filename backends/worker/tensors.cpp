#include "tensors.h"

#include "hone/draws.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <functional>
#include <new>
#include <thread>
#include <vector>

namespace hone::backends {
namespace {

using hone_draws::fnv1a;

double number(const nlohmann::json& init, const char* key, double fallback)
{
    if (!init.is_object())
        return fallback;
    auto it = init.find(key);
    if (it == init.end() || it->is_null())
        return fallback;
    if (!it->is_number())
        throw RequestError(std::string("init field '") + key + "' is not a number");
    return it->get<double>();
}

double required(const nlohmann::json& init, const char* key, const std::string& dist)
{
    if (!init.is_object() || !init.contains(key))
        throw RequestError("init '" + dist + "' needs a '" + key + "' number");
    return number(init, key, 0);
}

template <typename T> T clampTo(double v)
{
    if (std::isnan(v))
        return 0;
    // Compared, not clamped to: the double nearest INT64_MAX is 2^63, one past it, and casting
    // it is undefined (fuzz_eval_request found it).
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= lo)
        return std::numeric_limits<T>::lowest();
    if (v >= hi)
        return std::numeric_limits<T>::max();
    return static_cast<T>(v);
}

/// An init number that bounds integer draws: an integer-valued double within +-2^53 (every
/// such integer is exact, and spans between two of them fit int64_t).
int64_t integerBound(double v, const char* key, const std::string& dist)
{
    constexpr double kLimit = 9007199254740992.0; // 2^53
    if (!(std::fabs(v) <= kLimit))
        throw RequestError("init '" + dist + "' has " + key + " outside +-2^53 (9007199254740992)");
    return static_cast<int64_t>(v);
}

} // namespace

hone_dtype dtypeFromName(const std::string& name)
{
    if (const auto t = core::dtypeFromName(name))
        return *t;
    throw RequestError("unknown dtype '" + name + "'; expected one of f32, f16, bf16, f64, i32, i64, u8");
}

void HostTensor::Free::operator()(unsigned char* p) const
{
    std::free(p);
}

HostTensor::HostTensor(TensorDesc desc)
    : m_desc(std::move(desc))
    , m_numel(m_desc.numel())
    , m_bytes(m_desc.bytes())
{
    // Never a null pointer, even for an empty tensor; 64-byte aligned for vector loads.
    const size_t alloc = std::max<size_t>(64, (m_bytes + 63) / 64 * 64);
    m_data.reset(static_cast<unsigned char*>(std::aligned_alloc(64, alloc)));
    if (!m_data)
        throw std::bad_alloc();
    std::memset(m_data.get(), 0, alloc);
}

HostTensor::HostTensor(const HostTensor& other)
    : HostTensor(other.m_desc)
{
    std::memcpy(m_data.get(), other.m_data.get(), m_bytes);
}

double HostTensor::at(size_t i) const
{
    const unsigned char* p = m_data.get() + i * dtypeSize(m_desc.dtype);
    switch (m_desc.dtype) {
    case HONE_F32: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
    }
    case HONE_F64: {
        double v;
        std::memcpy(&v, p, 8);
        return v;
    }
    case HONE_F16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return hone_f16_to_f32(v);
    }
    case HONE_BF16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return hone_bf16_to_f32(v);
    }
    case HONE_I32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return v;
    }
    case HONE_I64: {
        int64_t v;
        std::memcpy(&v, p, 8);
        return static_cast<double>(v);
    }
    case HONE_U8:
        return *p;
    }
    return 0;
}

bool HostTensor::isPoison(size_t i) const
{
    const size_t size = dtypeSize(m_desc.dtype);
    const unsigned char* p = m_data.get() + i * size;
    switch (m_desc.dtype) {
    case HONE_F32: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return v == kPoisonF32;
    }
    case HONE_F64: {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return v == kPoisonF64;
    }
    case HONE_F16:
    case HONE_BF16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return v == (m_desc.dtype == HONE_F16 ? kPoisonF16 : kPoisonBF16);
    }
    case HONE_I32:
    case HONE_I64:
    case HONE_U8:
        for (size_t b = 0; b < size; ++b)
            if (p[b] != kPoisonByte)
                return false;
        return true;
    }
    return false;
}

void HostTensor::poison()
{
    unsigned char* p = m_data.get();
    switch (m_desc.dtype) {
    case HONE_F32:
        for (size_t i = 0; i < m_numel; ++i)
            std::memcpy(p + 4 * i, &kPoisonF32, 4);
        break;
    case HONE_F64:
        for (size_t i = 0; i < m_numel; ++i)
            std::memcpy(p + 8 * i, &kPoisonF64, 8);
        break;
    case HONE_F16:
    case HONE_BF16: {
        const uint16_t v = m_desc.dtype == HONE_F16 ? kPoisonF16 : kPoisonBF16;
        for (size_t i = 0; i < m_numel; ++i)
            std::memcpy(p + 2 * i, &v, 2);
        break;
    }
    case HONE_I32:
    case HONE_I64:
    case HONE_U8:
        std::memset(p, kPoisonByte, m_bytes);
        break;
    }
}

uint64_t HostTensor::checksum() const
{
    // 1 MiB blocks hashed a word at a time on several threads, then the block hashes in order:
    // the value depends only on the bytes, never on the thread count.
    constexpr size_t kBlock = size_t(1) << 20;
    const size_t blocks = (m_bytes + kBlock - 1) / kBlock;
    std::vector<uint64_t> parts(blocks);
    const unsigned char* base = m_data.get();
    auto hashBlock = [&](size_t b) {
        const unsigned char* p = base + b * kBlock;
        const size_t n = std::min(kBlock, m_bytes - b * kBlock);
        uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            uint64_t w;
            std::memcpy(&w, p + i, 8);
            h = (h ^ (w * 0xBF58476D1CE4E5B9ull)) * 0x94D049BB133111EBull;
            h ^= h >> 29;
        }
        return fnv1a(p + i, n - i, h);
    };
    parallelFor(blocks, [&](size_t begin, size_t end) {
        for (size_t b = begin; b < end; ++b)
            parts[b] = hashBlock(b);
    }, 8);
    return fnv1a(parts.data(), parts.size() * sizeof(uint64_t));
}

namespace {

// Counter-based draws (hone/draws.h, shared with the exported standalone test).
using hone_draws::belowAt;
using hone_draws::normalAt;
using hone_draws::uniformAt;

} // namespace

void parallelFor(size_t n, const std::function<void(size_t, size_t)>& body, size_t serialBelow)
{
    const size_t threads
        = n < serialBelow ? 1 : std::min<size_t>(16, std::max(1u, std::thread::hardware_concurrency()));
    if (threads <= 1) {
        body(0, n);
        return;
    }
    std::vector<std::thread> pool;
    const size_t chunk = (n + threads - 1) / threads;
    for (size_t t = 0; t < threads; ++t) {
        const size_t b = t * chunk;
        const size_t e = std::min(n, b + chunk);
        if (b < e)
            pool.emplace_back(body, b, e);
    }
    for (auto& th : pool)
        th.join();
}

namespace {

/// A `[check]` distribution on top of the init's draws (docs/FORMATS.md):
/// v -> sign(v) * scale + shift, then every row (last dimension) or the whole tensor takes
/// its first element's value. Counter-based like the draws, so still reproducible in parallel.
std::function<double(size_t)> transformed(std::function<double(size_t)> draw, const nlohmann::json& t,
    bool floating, const std::vector<int64_t>& shape)
{
    if (!t.is_object())
        throw RequestError("init 'transform' is not an object");
    if (!floating)
        throw RequestError("init 'transform' applies to float tensors only; integer inputs keep their init");
    const double scale = number(t, "scale", 1.0);
    const double shift = number(t, "shift", 0.0);
    auto word = [&](const char* key, const char* fallback) {
        auto it = t.find(key);
        if (it == t.end() || it->is_null())
            return std::string(fallback);
        if (!it->is_string())
            throw RequestError(std::string("init transform '") + key + "' is not a string");
        return it->get<std::string>();
    };
    const std::string sign = word("sign", "keep");
    const std::string constant = word("constant", "none");
    if (sign != "keep" && sign != "negative" && sign != "positive")
        throw RequestError("init transform 'sign' is '" + sign + "'; expected keep, negative or positive");
    if (constant != "none" && constant != "rows" && constant != "all")
        throw RequestError("init transform 'constant' is '" + constant + "'; expected none, rows or all");
    const int signMode = sign == "negative" ? -1 : sign == "positive" ? 1 : 0;
    const size_t row = constant == "all" ? 0
        : constant == "rows"             ? static_cast<size_t>(std::max<int64_t>(1, shape.empty() ? 1 : shape.back()))
                                         : 1;
    return [draw = std::move(draw), scale, shift, signMode, row](size_t i) {
        const size_t at = row == 0 ? 0 : i - i % row;
        double v = draw(at);
        if (signMode != 0)
            v = signMode * std::fabs(v);
        return v * scale + shift;
    };
}

} // namespace

void HostTensor::fill(uint64_t seed, const std::string& shapeLabel, size_t tensorIndex)
{
    const uint64_t key = hone_draws::streamKey(seed, shapeLabel.data(), shapeLabel.size(), tensorIndex);
    const nlohmann::json& init = m_desc.init;
    std::string dist = "normal";
    if (init.is_object() && init.contains("dist")) {
        if (!init["dist"].is_string())
            throw RequestError("input '" + m_desc.name + "': init 'dist' is not a string");
        dist = init["dist"].get<std::string>();
    }
    bool sorted = false;
    if (init.is_object() && init.contains("sorted")) {
        if (!init["sorted"].is_boolean())
            throw RequestError("input '" + m_desc.name + "': init 'sorted' is not true or false");
        sorted = init["sorted"].get<bool>();
    }
    const bool floating = isFloat(m_desc.dtype);
    unsigned char* p = m_data.get();
    const hone_dtype dtype = m_desc.dtype;
    auto store = [p, dtype](size_t i, double v) {
        switch (dtype) {
        case HONE_F32: {
            const float f = static_cast<float>(v);
            std::memcpy(p + 4 * i, &f, 4);
            break;
        }
        case HONE_F64:
            std::memcpy(p + 8 * i, &v, 8);
            break;
        case HONE_F16: {
            const uint16_t h = hone_f32_to_f16(static_cast<float>(v));
            std::memcpy(p + 2 * i, &h, 2);
            break;
        }
        case HONE_BF16: {
            const uint16_t h = hone_f32_to_bf16(static_cast<float>(v));
            std::memcpy(p + 2 * i, &h, 2);
            break;
        }
        case HONE_I32: {
            const int32_t x = clampTo<int32_t>(std::nearbyint(v));
            std::memcpy(p + 4 * i, &x, 4);
            break;
        }
        case HONE_I64: {
            const int64_t x = clampTo<int64_t>(std::nearbyint(v));
            std::memcpy(p + 8 * i, &x, 8);
            break;
        }
        case HONE_U8:
            p[i] = clampTo<uint8_t>(std::nearbyint(v));
            break;
        }
    };
    const std::string who = "input '" + m_desc.name + "': ";
    const size_t n = m_numel;
    try {
        if (sorted && (!floating || m_desc.shape.size() != 1 || (dist != "normal" && dist != "uniform")))
            throw RequestError("init 'sorted' needs a rank-1 float tensor drawn from normal or uniform");
        std::function<double(size_t)> draw;
        if (dist == "normal") {
            const double mean = number(init, "mean", 0.0);
            const double stddev = number(init, "std", 1.0);
            draw = [=](size_t i) { return mean + stddev * normalAt(key, i); };
        } else if (dist == "uniform") {
            const double low = number(init, "low", 0.0);
            const double high = number(init, "high", 1.0);
            if (high < low)
                throw RequestError("init 'uniform' has high < low");
            if (floating) {
                draw = [=](size_t i) { return low + (high - low) * uniformAt(key, i); };
            } else {
                // Integers: every value of [low, high], both ends included.
                const int64_t lo = integerBound(std::ceil(low), "low", dist);
                const int64_t span = integerBound(std::floor(high), "high", dist) - lo + 1;
                if (span <= 0)
                    throw RequestError("init 'uniform' holds no integer");
                draw = [=](size_t i) { return static_cast<double>(lo + belowAt(key, i, span)); };
            }
        } else if (dist == "randint") {
            const int64_t lo = integerBound(number(init, "low", 0.0), "low", dist);
            const int64_t hi = integerBound(required(init, "high", dist), "high", dist);
            if (hi <= lo)
                throw RequestError("init 'randint' needs high > low (high is exclusive)");
            draw = [=](size_t i) { return static_cast<double>(lo + belowAt(key, i, hi - lo)); };
        } else if (dist == "offsets") {
            if (floating || m_desc.shape.size() != 1)
                throw RequestError("init 'offsets' needs a rank-1 integer tensor");
            const int64_t total = integerBound(required(init, "total", dist), "total", dist);
            if (total < 0)
                throw RequestError("init 'offsets' needs total >= 0");
            const std::vector<int64_t> cuts = hone_draws::offsetCuts(key, n, total);
            for (size_t i = 0; i < n; ++i)
                store(i, static_cast<double>(cuts[i]));
            return;
        } else {
            throw RequestError(
                "unknown init dist '" + dist + "'; expected normal, uniform, randint or offsets");
        }
        if (init.is_object() && init.contains("transform"))
            draw = transformed(std::move(draw), init["transform"], floating, m_desc.shape);
        if (sorted) {
            std::vector<double> values(n);
            parallelFor(n, [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i)
                    values[i] = draw(i);
            });
            std::sort(values.begin(), values.end());
            for (size_t i = 0; i < n; ++i)
                store(i, values[i]);
        } else {
            parallelFor(n, [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i)
                    store(i, draw(i));
            });
        }
    } catch (const RequestError& e) {
        throw RequestError(who + e.what());
    }
}

Rng::Rng(uint64_t seed)
    : m_gen(seed)
{
}

uint64_t Rng::next() { return m_gen.next(); }

double Rng::uniform01()
{
    return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double Rng::normal()
{
    if (m_haveSpare) {
        m_haveSpare = false;
        return m_spare;
    }
    double u1 = uniform01();
    while (u1 <= 0.0)
        u1 = uniform01();
    const double u2 = uniform01();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double theta = 2.0 * 3.14159265358979323846 * u2;
    m_spare = r * std::sin(theta);
    m_haveSpare = true;
    return r * std::cos(theta);
}

int64_t Rng::below(int64_t n) { return m_gen.below(n); }

} // namespace hone::backends
