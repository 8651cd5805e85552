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
#include <type_traits>
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
    , m_elementSize(dtypeSize(m_desc.dtype))
{
    // Never a null pointer, even for an empty tensor; 64-byte aligned for vector loads.
    const size_t alloc = std::max<size_t>(64, (m_bytes + 63) / 64 * 64);
    m_data.reset(static_cast<unsigned char*>(std::aligned_alloc(64, alloc)));
    if (!m_data)
        throw std::bad_alloc();
    // Zeroed in 1 MiB pieces on several threads when large: the first touch of each page (the
    // kernel's fault and clearing) is most of the cost of a gigabyte tensor.
    constexpr size_t kPiece = size_t(1) << 20;
    unsigned char* base = m_data.get();
    parallelFor((alloc + kPiece - 1) / kPiece, [&](size_t b, size_t e) {
        std::memset(base + b * kPiece, 0, std::min(alloc, e * kPiece) - b * kPiece);
    }, 32);
}

HostTensor::HostTensor(const HostTensor& other)
    : HostTensor(other.m_desc)
{
    std::memcpy(m_data.get(), other.m_data.get(), m_bytes);
}

void HostTensor::poison()
{
    unsigned char* p = m_data.get();
    auto pattern = [&](auto value) {
        parallelFor(m_numel, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i)
                std::memcpy(p + sizeof value * i, &value, sizeof value);
        });
    };
    switch (m_desc.dtype) {
    case HONE_F32:
        pattern(kPoisonF32);
        break;
    case HONE_F64:
        pattern(kPoisonF64);
        break;
    case HONE_F16:
        pattern(kPoisonF16);
        break;
    case HONE_BF16:
        pattern(kPoisonBF16);
        break;
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

size_t hostThreads()
{
    static const size_t threads = [] {
        if (const char* env = std::getenv("HONE_WORKER_THREADS")) {
            char* end = nullptr;
            const unsigned long v = std::strtoul(env, &end, 10);
            if (end != env && *end == '\0' && v > 0)
                return static_cast<size_t>(std::min<unsigned long>(v, 256));
        }
        return std::min<size_t>(16, std::max(1u, std::thread::hardware_concurrency()));
    }();
    return threads;
}

void parallelFor(size_t n, const std::function<void(size_t, size_t)>& body, size_t serialBelow, size_t threads)
{
    if (threads == 0)
        threads = n < serialBelow ? 1 : hostThreads();
    threads = std::min(threads, std::max<size_t>(n, 1));
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
struct Transform {
    double scale = 1.0;
    double shift = 0.0;
    int signMode = 0; // -1 negative, 1 positive, 0 keep
    size_t row = 1; // elements that share the first one's value; 0: the whole tensor

    template <class Draw> double operator()(const Draw& draw, size_t i) const
    {
        const size_t at = row == 0 ? 0 : i - i % row;
        double v = draw(at);
        if (signMode != 0)
            v = signMode * std::fabs(v);
        return v * scale + shift;
    }
};

Transform parseTransform(const nlohmann::json& t, bool floating, const std::vector<int64_t>& shape)
{
    if (!t.is_object())
        throw RequestError("init 'transform' is not an object");
    if (!floating)
        throw RequestError("init 'transform' applies to float tensors only; integer inputs keep their init");
    Transform out;
    out.scale = number(t, "scale", 1.0);
    out.shift = number(t, "shift", 0.0);
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
    out.signMode = sign == "negative" ? -1 : sign == "positive" ? 1 : 0;
    out.row = constant == "all" ? 0
        : constant == "rows"    ? static_cast<size_t>(std::max<int64_t>(1, shape.empty() ? 1 : shape.back()))
                                : 1;
    return out;
}

/// Element i of a tensor of `dtype` at `p` takes the draw `v`: floats rounded from double,
/// integers rounded to nearest and clamped to the type's range.
template <hone_dtype D> inline void storeAt(unsigned char* p, size_t i, double v)
{
    if constexpr (D == HONE_F32) {
        const float f = static_cast<float>(v);
        std::memcpy(p + 4 * i, &f, 4);
    } else if constexpr (D == HONE_F64) {
        std::memcpy(p + 8 * i, &v, 8);
    } else if constexpr (D == HONE_F16) {
        const uint16_t h = hone_f32_to_f16(static_cast<float>(v));
        std::memcpy(p + 2 * i, &h, 2);
    } else if constexpr (D == HONE_BF16) {
        const uint16_t h = hone_f32_to_bf16(static_cast<float>(v));
        std::memcpy(p + 2 * i, &h, 2);
    } else if constexpr (D == HONE_I32) {
        const int32_t x = clampTo<int32_t>(std::nearbyint(v));
        std::memcpy(p + 4 * i, &x, 4);
    } else if constexpr (D == HONE_I64) {
        const int64_t x = clampTo<int64_t>(std::nearbyint(v));
        std::memcpy(p + 8 * i, &x, 8);
    } else {
        static_assert(D == HONE_U8);
        p[i] = clampTo<uint8_t>(std::nearbyint(v));
    }
}

/// Calls f(std::integral_constant<hone_dtype, D>) for the tensor's dtype, so that the loops
/// below are compiled once per dtype and draw, with no call or switch per element.
template <class F> void withDtype(hone_dtype dtype, F&& f)
{
    switch (dtype) {
    case HONE_F32:
        return f(std::integral_constant<hone_dtype, HONE_F32>());
    case HONE_F64:
        return f(std::integral_constant<hone_dtype, HONE_F64>());
    case HONE_F16:
        return f(std::integral_constant<hone_dtype, HONE_F16>());
    case HONE_BF16:
        return f(std::integral_constant<hone_dtype, HONE_BF16>());
    case HONE_I32:
        return f(std::integral_constant<hone_dtype, HONE_I32>());
    case HONE_I64:
        return f(std::integral_constant<hone_dtype, HONE_I64>());
    case HONE_U8:
        return f(std::integral_constant<hone_dtype, HONE_U8>());
    }
}

} // namespace

void HostTensor::fill(uint64_t seed, const std::string& shapeLabel, size_t tensorIndex, size_t threads)
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
    const std::string who = "input '" + m_desc.name + "': ";
    const size_t n = m_numel;
    // Values in [b, e) from `draw` (counter-based: element i depends on i only), so any split
    // of [0, n) over threads gives the same bytes; a sorted tensor sorts all draws first.
    auto generate = [&](const auto& draw) {
        withDtype(m_desc.dtype, [&](auto dtype) {
            constexpr hone_dtype D = decltype(dtype)::value;
            if (sorted) {
                std::vector<double> values(n);
                parallelFor(n, [&](size_t b, size_t e) {
                    for (size_t i = b; i < e; ++i)
                        values[i] = draw(i);
                }, size_t(1) << 20, threads);
                std::sort(values.begin(), values.end());
                parallelFor(n, [&](size_t b, size_t e) {
                    for (size_t i = b; i < e; ++i)
                        storeAt<D>(p, i, values[i]);
                }, size_t(1) << 20, threads);
                return;
            }
            parallelFor(n, [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i)
                    storeAt<D>(p, i, draw(i));
            }, size_t(1) << 20, threads);
        });
    };
    auto generateTransformed = [&](const auto& draw) {
        if (!init.is_object() || !init.contains("transform")) {
            generate(draw);
            return;
        }
        const Transform t = parseTransform(init["transform"], floating, m_desc.shape);
        generate([&](size_t i) { return t(draw, i); });
    };
    try {
        if (sorted && (!floating || m_desc.shape.size() != 1 || (dist != "normal" && dist != "uniform")))
            throw RequestError("init 'sorted' needs a rank-1 float tensor drawn from normal or uniform");
        if (dist == "normal") {
            const double mean = number(init, "mean", 0.0);
            const double stddev = number(init, "std", 1.0);
            generateTransformed([=](size_t i) { return mean + stddev * normalAt(key, i); });
        } else if (dist == "uniform") {
            const double low = number(init, "low", 0.0);
            const double high = number(init, "high", 1.0);
            if (high < low)
                throw RequestError("init 'uniform' has high < low");
            if (floating) {
                generateTransformed([=](size_t i) { return low + (high - low) * uniformAt(key, i); });
            } else {
                // Integers: every value of [low, high], both ends included.
                const int64_t lo = integerBound(std::ceil(low), "low", dist);
                const int64_t span = integerBound(std::floor(high), "high", dist) - lo + 1;
                if (span <= 0)
                    throw RequestError("init 'uniform' holds no integer");
                generateTransformed([=](size_t i) { return static_cast<double>(lo + belowAt(key, i, span)); });
            }
        } else if (dist == "randint") {
            const int64_t lo = integerBound(number(init, "low", 0.0), "low", dist);
            const int64_t hi = integerBound(required(init, "high", dist), "high", dist);
            if (hi <= lo)
                throw RequestError("init 'randint' needs high > low (high is exclusive)");
            generateTransformed([=](size_t i) { return static_cast<double>(lo + belowAt(key, i, hi - lo)); });
        } else if (dist == "offsets") {
            if (floating || m_desc.shape.size() != 1)
                throw RequestError("init 'offsets' needs a rank-1 integer tensor");
            const int64_t total = integerBound(required(init, "total", dist), "total", dist);
            if (total < 0)
                throw RequestError("init 'offsets' needs total >= 0");
            // Sequential choices (one generator), then stored like any other draw.
            const std::vector<int64_t> cuts = hone_draws::offsetCuts(key, n, total);
            generate([&](size_t i) { return static_cast<double>(cuts[i]); });
        } else {
            throw RequestError(
                "unknown init dist '" + dist + "'; expected normal, uniform, randint or offsets");
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
