// Layernorm, tunable. Rows are spread over OpenMP threads; each row is processed with GCC vector
// types of VEC lanes and UNROLL independent accumulators (VEC = 1 is plain scalar code).
//   ONE_PASS 0: a pass for the mean and a pass for the variance (exact two-pass formula);
//            1: one pass for both, accumulating x - K and (x - K)^2 with the shift K = x[0] so
//            that E[(x-K)^2] - E[x-K]^2 does not cancel catastrophically.
//   SCHED    0: static schedule in chunks of ROWS_PER_TASK rows, 1: dynamic schedule.
//   PREFETCH 0: no software prefetch; P > 0: before a row, prefetch the row P rows ahead
//            (one __builtin_prefetch per cache line).
//   OUT_UNROLL  vectors written per step of the output pass.
//
// hone:knob THREADS = 1 | 2  acts=parallelism
// hone:knob ROWS_PER_TASK = 1 | 8 | 64  acts=launch_shape
// hone:knob SCHED = 0 | 1  acts=launch_shape
// hone:knob VEC = 1 | 8 | 16  acts=bytes_per_access
// hone:knob UNROLL = 1 | 2 | 4  acts=work_per_thread
// hone:knob ONE_PASS = 0 | 1  acts=reduction
// hone:knob PREFETCH = 0 | 1 | 4  acts=memory_pipeline
// hone:knob OUT_UNROLL = 1 | 2 | 4  acts=work_per_thread
// hone:require VEC * UNROLL <= 32
// hone:require THREADS > 1 || SCHED == 0
// hone:require VEC * OUT_UNROLL <= 32
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
#ifndef SCHED
#define SCHED 1
#endif
#ifndef VEC
#define VEC 8
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef ONE_PASS
#define ONE_PASS 1
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
#ifndef OUT_UNROLL
#define OUT_UNROLL 1
#endif

namespace {

#if VEC > 1
typedef float vf __attribute__((vector_size(4 * VEC)));
#else
typedef float vf;
#endif

template <class V> constexpr bool is_scalar = std::is_same<V, float>::value;

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

constexpr int64_t W = VEC;
constexpr int64_t STEP = W * UNROLL;

// Sum over the row of f(x[j]) with UNROLL vector accumulators; f works on vf and on float.
template <class F> inline float row_reduce(const float* __restrict xr, int64_t N, F f)
{
    vf acc[UNROLL];
    for (int u = 0; u < UNROLL; ++u)
        acc[u] = splat<vf>(0.0f);
    int64_t j = 0;
    for (; j + STEP <= N; j += STEP)
        for (int u = 0; u < UNROLL; ++u)
            acc[u] += f(load<vf>(xr + j + u * W));
    for (int u = 1; u < UNROLL; ++u)
        acc[0] += acc[u];
    float s = hsum(acc[0]);
    for (; j < N; ++j)
        s += f(xr[j]);
    return s;
}

inline void layernorm_row(const float* __restrict xr, const float* __restrict g,
    const float* __restrict b, float* __restrict yr, int64_t N, float eps)
{
    const float invN = 1.0f / static_cast<float>(N);
    float mean, var;
#if ONE_PASS
    {
        const float K = xr[0];
        const vf kv = splat<vf>(K);
        vf s1[UNROLL], s2[UNROLL];
        for (int u = 0; u < UNROLL; ++u) {
            s1[u] = splat<vf>(0.0f);
            s2[u] = splat<vf>(0.0f);
        }
        int64_t j = 0;
        for (; j + STEP <= N; j += STEP)
            for (int u = 0; u < UNROLL; ++u) {
                vf d = load<vf>(xr + j + u * W) - kv;
                s1[u] += d;
                s2[u] += d * d;
            }
        for (int u = 1; u < UNROLL; ++u) {
            s1[0] += s1[u];
            s2[0] += s2[u];
        }
        float t1 = hsum(s1[0]), t2 = hsum(s2[0]);
        for (; j < N; ++j) {
            float d = xr[j] - K;
            t1 += d;
            t2 += d * d;
        }
        const float m1 = t1 * invN;
        mean = K + m1;
        var = t2 * invN - m1 * m1;
        var = var > 0.0f ? var : 0.0f;
    }
#else
    mean = row_reduce(xr, N, [](auto v) { return v; }) * invN;
    {
        const vf mv = splat<vf>(mean);
        const float ms = mean;
        var = row_reduce(xr, N, [mv, ms](auto v) {
            if constexpr (is_scalar<decltype(v)>) {
                float d = v - ms;
                return d * d;
            } else {
                vf d = v - mv;
                return d * d;
            }
        }) * invN;
    }
#endif
    const float rstd = 1.0f / std::sqrt(var + eps);
    const vf mv = splat<vf>(mean);
    const vf rv = splat<vf>(rstd);
    int64_t j = 0;
    for (; j + W * OUT_UNROLL <= N; j += W * OUT_UNROLL)
        for (int u = 0; u < OUT_UNROLL; ++u) {
            const int64_t k = j + u * W;
            store(yr + k, (load<vf>(xr + k) - mv) * (rv * load<vf>(g + k)) + load<vf>(b + k));
        }
    for (; j + W <= N; j += W)
        store(yr + j, (load<vf>(xr + j) - mv) * (rv * load<vf>(g + j)) + load<vf>(b + j));
    for (; j < N; ++j)
        yr[j] = (xr[j] - mean) * (rstd * g[j]) + b[j];
}

} // namespace

extern "C" int hone_run(const hone_args* args)
{
    const hone_tensor& x = args->inputs[0];
    const float* g = static_cast<const float*>(args->inputs[1].data);
    const float* b = static_cast<const float*>(args->inputs[2].data);
    const hone_tensor& y = args->outputs[0];
    const int64_t M = x.shape[0];
    const int64_t N = x.shape[1];
    const float eps = static_cast<float>(hone_param_or(args, "eps", 1e-5));
    const float* xp = static_cast<const float*>(x.data);
    float* yp = static_cast<float*>(y.data);
    if (N == 0)
        return 0;

#if THREADS > 1
#if SCHED == 1
#pragma omp parallel for num_threads(THREADS) schedule(dynamic, ROWS_PER_TASK) if (M > 1)
#else
#pragma omp parallel for num_threads(THREADS) schedule(static, ROWS_PER_TASK) if (M > 1)
#endif
#endif
    for (int64_t i = 0; i < M; ++i) {
#if PREFETCH > 0
        if (i + PREFETCH < M)
            for (int64_t c = 0; c < N; c += 16)
                __builtin_prefetch(xp + (i + PREFETCH) * N + c);
#endif
        layernorm_row(xp + i * N, g, b, yp + i * N, N, eps);
    }
    return 0;
}
