// CPU ceilings for Hone's roofline: measured copy bandwidth and FMA peak.
//
// hone-worker embeds this file, compiles it exactly like a candidate
// (c++ -std=c++17 -O3 -march=native -fopenmp -shared -fPIC) and calls the functions below,
// so the ceilings describe what code built the same way can reach on this machine.
// Nothing here prints: the worker reports the numbers.
#include <omp.h>

#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace {

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
constexpr const char* kIsa = "512-bit";
inline Vec splat(float v)
{
    return _mm512_set1_ps(v);
}
inline Vec fma(Vec a, Vec b, Vec c)
{
    return _mm512_fmadd_ps(a, b, c);
}
inline float lane0(Vec v)
{
    return _mm512_cvtss_f32(v);
}
#elif defined(__AVX__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
constexpr const char* kIsa = "256-bit";
inline Vec splat(float v)
{
    return _mm256_set1_ps(v);
}
inline Vec fma(Vec a, Vec b, Vec c)
{
    return _mm256_fmadd_ps(a, b, c);
}
inline float lane0(Vec v)
{
    return _mm256_cvtss_f32(v);
}
#else
// No FMA instruction: a vector multiply and add, counted as two flops like an FMA.
typedef float Vec __attribute__((vector_size(16)));
constexpr int kLanes = 4;
constexpr const char* kIsa = "128-bit (no FMA unit, mul+add)";
inline Vec splat(float v)
{
    return Vec { v, v, v, v };
}
inline Vec fma(Vec a, Vec b, Vec c)
{
    return a * b + c;
}
inline float lane0(Vec v)
{
    return v[0];
}
#endif

/// Every thread runs `Chains` independent FMA dependency chains for `iters` steps. Enough
/// chains cover the FMA latency times the number of FMA ports; too many spill registers, so
/// the caller tries several counts and keeps the best.
template <int Chains> double fmaSeconds(long iters, float* sink)
{
    float total = 0.0f;
    double start = 0.0;
    double stop = 0.0;
#pragma omp parallel reduction(+ : total)
    {
        Vec acc[Chains];
        const float t = 1e-3f * static_cast<float>(omp_get_thread_num());
        for (int c = 0; c < Chains; ++c)
            acc[c] = splat(0.5f + t + 1e-4f * static_cast<float>(c));
        // x <- x * a + b converges to b / (1 - a) = 1: no overflow, no denormals.
        const Vec a = splat(0.999999f);
        const Vec b = splat(1e-6f);
#pragma omp barrier
#pragma omp master
        start = omp_get_wtime();
        for (long i = 0; i < iters; ++i) {
            for (int c = 0; c < Chains; ++c)
                acc[c] = fma(acc[c], a, b);
        }
        for (int c = 0; c < Chains; ++c)
            total += lane0(acc[c]);
#pragma omp barrier
#pragma omp master
        stop = omp_get_wtime();
    }
    *sink += total;
    return stop - start;
}

template <int Chains> double fmaGflops(int reps, float* sink)
{
    // Grow the trip count until one run takes long enough to time reliably.
    long iters = 1L << 16;
    while (fmaSeconds<Chains>(iters, sink) < 0.02 && iters < (1L << 34))
        iters *= 2;
    double best = 1e30;
    for (int r = 0; r < reps; ++r)
        best = std::min(best, fmaSeconds<Chains>(iters, sink));
    const double flops = 2.0 * kLanes * Chains * static_cast<double>(iters) * omp_get_max_threads();
    return flops / best * 1e-9;
}

} // namespace

extern "C" {

/// OpenMP threads the measurements use.
int hone_calib_threads(void)
{
    return omp_get_max_threads();
}

/// "512-bit" etc.: the vector width the FMA measurement used.
const char* hone_calib_isa(void)
{
    return kIsa;
}

/// Best-of-`reps` f32 FMA throughput of all threads, GFLOP/s (an FMA counts as two flops).
double hone_calib_fma_gflops(int reps)
{
    float sink = 0.0f;
    double best = 0.0;
    best = std::max(best, fmaGflops<8>(reps, &sink));
    best = std::max(best, fmaGflops<10>(reps, &sink));
    best = std::max(best, fmaGflops<12>(reps, &sink));
    best = std::max(best, fmaGflops<16>(reps, &sink));
    // Keep the accumulators observable so no chain is optimised away.
    return sink == 12345.678f ? best + 1e-9 : best;
}

/// Best-of-`reps` copy bandwidth of all threads between two buffers of `bytes` each, GB/s,
/// counting bytes read plus bytes written (STREAM "copy" convention). Negative when the
/// buffers cannot be allocated.
double hone_calib_copy_gbps(size_t bytes, int reps)
{
    const size_t n = bytes / sizeof(double);
    const size_t rounded = n * sizeof(double);
    auto* src = static_cast<double*>(std::aligned_alloc(4096, (rounded + 4095) / 4096 * 4096));
    auto* dst = static_cast<double*>(std::aligned_alloc(4096, (rounded + 4095) / 4096 * 4096));
    if (!src || !dst) {
        std::free(src);
        std::free(dst);
        return -1.0;
    }
    // First touch by the threads that copy, so pages sit on their NUMA nodes.
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) {
        src[i] = static_cast<double>(i & 1023);
        dst[i] = 0.0;
    }
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const double start = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; ++i)
            dst[i] = src[i];
        best = std::min(best, omp_get_wtime() - start);
    }
#if defined(__AVX__)
    // Plain stores first read each destination line (read-for-ownership), so a plain copy
    // moves 3 bytes per 2 counted. Streaming stores skip that read: the best a kernel can do.
    if (n % 4 == 0) {
        for (int r = 0; r < reps; ++r) {
            const double start = omp_get_wtime();
#pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i += 4)
                _mm256_stream_pd(dst + i, _mm256_load_pd(src + i));
            _mm_sfence();
            best = std::min(best, omp_get_wtime() - start);
        }
    }
#endif
    const bool copied = dst[n / 2] == src[n / 2];
    std::free(src);
    std::free(dst);
    if (!copied)
        return -1.0;
    return 2.0 * static_cast<double>(rounded) / best * 1e-9;
}

} // extern "C"
