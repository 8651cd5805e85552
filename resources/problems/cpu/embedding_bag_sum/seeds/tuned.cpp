// Embedding bag (sum), tunable. Bags are spread over OpenMP threads (dynamic schedule, bags
// differ in length). The output row is built DTILE columns at a time in registers: GCC vector
// types of VEC lanes, UNROLL independent accumulator sets (UNROLL table rows in flight per
// step). PREFETCH > 0 prefetches the table row PREFETCH indices ahead (0 = off). Columns past
// the last full tile (D % DTILE) go through a plain loop.
//
// hone:knob THREADS = 1 | 2  acts=parallelism
// hone:knob BAGS_PER_TASK = 1 | 16 | 128  acts=launch_shape
// hone:knob VEC = 8 | 16  acts=bytes_per_access
// hone:knob DTILE = 8 | 16 | 32 | 64  acts=work_per_thread
// hone:knob UNROLL = 1 | 2 | 4  acts=memory_pipeline
// hone:knob PREFETCH = 0 | 4 | 16  acts=memory_pipeline
// hone:require DTILE % VEC == 0
// hone:require DTILE * UNROLL <= 256
#include "hone/kernel.h"

#include <omp.h>

#include <cstdint>
#include <cstring>

#ifndef THREADS
#define THREADS 2
#endif
#ifndef BAGS_PER_TASK
#define BAGS_PER_TASK 128
#endif
#ifndef VEC
#define VEC 16
#endif
#ifndef DTILE
#define DTILE 64
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef PREFETCH
#define PREFETCH 16
#endif

#if DTILE % VEC != 0
#error "DTILE must be a multiple of VEC"
#endif

namespace {

typedef float vf __attribute__((vector_size(4 * VEC)));

inline vf load(const float* p)
{
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }

constexpr int NV = DTILE / VEC; // vectors per tile

inline void prefetch_row(const float* row)
{
    for (int c = 0; c < DTILE; c += 16) // one 64-byte line holds 16 floats
        __builtin_prefetch(row + c, 0, 3);
}

inline void bag_tile(const float* __restrict tp, const int64_t* __restrict idx, int64_t beg,
    int64_t end, int64_t L, int64_t D, int64_t col, float* __restrict o)
{
    vf acc[UNROLL][NV];
    for (int u = 0; u < UNROLL; ++u)
        for (int v = 0; v < NV; ++v)
            acc[u][v] = vf{};
    int64_t k = beg;
    for (; k + UNROLL <= end; k += UNROLL) {
#if PREFETCH > 0
        for (int u = 0; u < UNROLL; ++u)
            if (k + u + PREFETCH < L)
                prefetch_row(tp + idx[k + u + PREFETCH] * D + col);
#endif
        for (int u = 0; u < UNROLL; ++u) {
            const float* row = tp + idx[k + u] * D + col;
            for (int v = 0; v < NV; ++v)
                acc[u][v] += load(row + v * VEC);
        }
    }
    for (; k < end; ++k) {
        const float* row = tp + idx[k] * D + col;
        for (int v = 0; v < NV; ++v)
            acc[0][v] += load(row + v * VEC);
    }
    for (int u = 1; u < UNROLL; ++u)
        for (int v = 0; v < NV; ++v)
            acc[0][v] += acc[u][v];
    for (int v = 0; v < NV; ++v)
        store(o + col + v * VEC, acc[0][v]);
}

inline void bag(const float* __restrict tp, const int64_t* __restrict idx, int64_t beg,
    int64_t end, int64_t L, int64_t D, float* __restrict o)
{
    int64_t col = 0;
    for (; col + DTILE <= D; col += DTILE)
        bag_tile(tp, idx, beg, end, L, D, col, o);
    if (col < D) {
        for (int64_t d = col; d < D; ++d)
            o[d] = 0.0f;
        for (int64_t k = beg; k < end; ++k) {
            const float* row = tp + idx[k] * D;
            for (int64_t d = col; d < D; ++d)
                o[d] += row[d];
        }
    }
}

} // namespace

extern "C" int hone_run(const hone_args* args)
{
    const hone_tensor& table = args->inputs[0];
    const int64_t* idx = static_cast<const int64_t*>(args->inputs[1].data);
    const int64_t L = args->inputs[1].shape[0];
    const int64_t* off = static_cast<const int64_t*>(args->inputs[2].data);
    const hone_tensor& out = args->outputs[0];
    const int64_t D = table.shape[1];
    const int64_t B = out.shape[0];
    const float* tp = static_cast<const float*>(table.data);
    float* op = static_cast<float*>(out.data);

#if THREADS > 1
#pragma omp parallel for num_threads(THREADS) schedule(dynamic, BAGS_PER_TASK) if (B > 1)
#endif
    for (int64_t b = 0; b < B; ++b)
        bag(tp, idx, off[b], off[b + 1], L, D, op + b * D);
    return 0;
}
