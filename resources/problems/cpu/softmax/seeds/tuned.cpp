// Softmax, tunable. Rows are spread over OpenMP threads; each row is processed with GCC vector
// types of VEC lanes and UNROLL independent accumulators (VEC = 1 is plain scalar code).
//   EXP      0: std::exp per element, 1: an inlined polynomial exp (Cephes expf, ~1 ulp) that
//            vectorises.
//   STORE    1: the sum pass stores exp(x - max) into y and the last pass rescales y in place;
//            0: the last pass re-reads x and recomputes the exponential.
//   ONE_PASS 1: "online" softmax: the running max and the rescaled running sum are kept per lane
//            in a single pass over x (two exponentials per element), then one output pass.
//
// hone:knob THREADS = 1 | 2  acts=parallelism
// hone:knob ROWS_PER_TASK = 1 | 8 | 64  acts=launch_shape
// hone:knob VEC = 1 | 8 | 16  acts=bytes_per_access
// hone:knob UNROLL = 1 | 2 | 4  acts=work_per_thread
// hone:knob EXP = 0 | 1  acts=arithmetic
// hone:knob STORE = 1 | 0
// hone:knob ONE_PASS = 0 | 1  acts=reduction
// hone:require ONE_PASS == 0 || STORE == 0
// hone:require VEC * UNROLL <= 32
// hone:flags -ffp-contract=fast
#include "hone/kernel.h"

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#ifndef THREADS
#define THREADS 2
#endif
#ifndef ROWS_PER_TASK
#define ROWS_PER_TASK 64
#endif
#ifndef VEC
#define VEC 16
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef EXP
#define EXP 1
#endif
#ifndef STORE
#define STORE 1
#endif
#ifndef ONE_PASS
#define ONE_PASS 0
#endif

#if ONE_PASS && STORE
#error "ONE_PASS = 1 needs STORE = 0 (the stored exponentials would use a stale max)"
#endif

namespace {

#if VEC > 1
typedef float vf __attribute__((vector_size(4 * VEC)));
typedef int32_t vi __attribute__((vector_size(4 * VEC)));
#else
typedef float vf;
typedef int32_t vi;
#endif

template <class V> constexpr bool is_scalar = std::is_same<V, float>::value;
template <class V> using int_of = typename std::conditional<is_scalar<V>, int32_t, vi>::type;

template <class V> inline V splat(float s)
{
    if constexpr (is_scalar<V>)
        return s;
    else
        return V{} + s;
}

template <class V> inline V load(const float* p)
{
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class V> inline void store(float* p, V v) { std::memcpy(p, &v, sizeof v); }

template <class V> inline V vmax(V a, V b) { return a > b ? a : b; }

template <class V> inline float hsum(V v)
{
    if constexpr (is_scalar<V>) {
        return v;
    } else {
        float s = 0.0f;
        for (int k = 0; k < VEC; ++k)
            s += v[k];
        return s;
    }
}

template <class V> inline float hmax(V v)
{
    if constexpr (is_scalar<V>) {
        return v;
    } else {
        float m = v[0];
        for (int k = 1; k < VEC; ++k)
            m = v[k] > m ? v[k] : m;
        return m;
    }
}

template <class To, class From> inline To bitcast(From f)
{
    static_assert(sizeof(To) == sizeof(From), "size");
    To t;
    std::memcpy(&t, &f, sizeof t);
    return t;
}

// Cephes-style expf: x = n ln2 + r, |r| <= ln2 / 2, degree-7 polynomial on r, 2^n through the
// exponent bits. Clamped to [-87.33, 88] (below that the result is ~1e-38 instead of 0).
template <class V> inline V fast_exp(V x)
{
    using I = int_of<V>;
    const V lo = splat<V>(-87.3365448f);
    const V hi = splat<V>(88.0f);
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    const V shifter = splat<V>(12582912.0f); // 1.5 * 2^23: adding it rounds to an integer
    V t = x * 1.44269504088896341f + shifter;
    V n = t - shifter;
    V r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    V p = splat<V>(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    I ni = bitcast<I>(t) - 0x4B400000; // the integer n sits in the low mantissa bits of t
    V scale = bitcast<V>((ni + 127) << 23);
    return p * scale;
}

template <class V> inline V expv(V x)
{
#if EXP == 1
    return fast_exp(x);
#else
    if constexpr (is_scalar<V>) {
        return std::exp(x);
    } else {
        V r;
        for (int k = 0; k < VEC; ++k)
            r[k] = std::exp(x[k]);
        return r;
    }
#endif
}

constexpr int64_t W = VEC;
constexpr int64_t STEP = W * UNROLL;

inline void softmax_row(const float* __restrict xr, float* __restrict yr, int64_t N)
{
    float m;
    float s;
#if ONE_PASS
    {
        vf vm[UNROLL], vs[UNROLL];
        for (int u = 0; u < UNROLL; ++u) {
            vm[u] = splat<vf>(-INFINITY);
            vs[u] = splat<vf>(0.0f);
        }
        int64_t j = 0;
        for (; j + STEP <= N; j += STEP)
            for (int u = 0; u < UNROLL; ++u) {
                vf v = load<vf>(xr + j + u * W);
                vf nm = vmax(vm[u], v);
                vs[u] = vs[u] * expv(vm[u] - nm) + expv(v - nm);
                vm[u] = nm;
            }
        float tm = -INFINITY, ts = 0.0f;
        for (; j < N; ++j) {
            float nm = xr[j] > tm ? xr[j] : tm;
            ts = ts * expv(tm - nm) + expv(xr[j] - nm);
            tm = nm;
        }
        m = tm;
        for (int u = 0; u < UNROLL; ++u)
            m = vmax(m, hmax(vm[u]));
        s = ts * expv(tm - m);
        const vf mv = splat<vf>(m);
        for (int u = 0; u < UNROLL; ++u)
            if (N >= STEP)
                s += hsum(vs[u] * expv(vm[u] - mv));
    }
#else
    {
        vf acc[UNROLL];
        for (int u = 0; u < UNROLL; ++u)
            acc[u] = splat<vf>(-INFINITY);
        int64_t j = 0;
        for (; j + STEP <= N; j += STEP)
            for (int u = 0; u < UNROLL; ++u)
                acc[u] = vmax(acc[u], load<vf>(xr + j + u * W));
        for (int u = 1; u < UNROLL; ++u)
            acc[0] = vmax(acc[0], acc[u]);
        m = hmax(acc[0]);
        for (; j < N; ++j)
            m = xr[j] > m ? xr[j] : m;
    }
    {
        const vf mv = splat<vf>(m);
        vf acc[UNROLL];
        for (int u = 0; u < UNROLL; ++u)
            acc[u] = splat<vf>(0.0f);
        int64_t j = 0;
        for (; j + STEP <= N; j += STEP)
            for (int u = 0; u < UNROLL; ++u) {
                vf e = expv(load<vf>(xr + j + u * W) - mv);
#if STORE
                store(yr + j + u * W, e);
#endif
                acc[u] += e;
            }
        for (int u = 1; u < UNROLL; ++u)
            acc[0] += acc[u];
        s = hsum(acc[0]);
        for (; j < N; ++j) {
            float e = expv(xr[j] - m);
#if STORE
            yr[j] = e;
#endif
            s += e;
        }
    }
#endif
    const float inv = 1.0f / s;
    const vf iv = splat<vf>(inv);
    int64_t j = 0;
#if STORE
    for (; j + W <= N; j += W)
        store(yr + j, load<vf>(yr + j) * iv);
    for (; j < N; ++j)
        yr[j] *= inv;
#else
    const vf mv = splat<vf>(m);
    for (; j + W <= N; j += W)
        store(yr + j, expv(load<vf>(xr + j) - mv) * iv);
    for (; j < N; ++j)
        yr[j] = expv(xr[j] - m) * inv;
#endif
}

} // namespace

extern "C" int hone_run(const hone_args* args)
{
    const hone_tensor& x = args->inputs[0];
    const hone_tensor& y = args->outputs[0];
    const int64_t M = x.shape[0];
    const int64_t N = x.shape[1];
    const float* xp = static_cast<const float*>(x.data);
    float* yp = static_cast<float*>(y.data);
    if (N == 0)
        return 0;

#if THREADS > 1
#pragma omp parallel for num_threads(THREADS) schedule(dynamic, ROWS_PER_TASK) if (M > 1)
#endif
    for (int64_t i = 0; i < M; ++i)
        softmax_row(xp + i * N, yp + i * N, N);
    return 0;
}
