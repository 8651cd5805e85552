// Row softmax for the scripted LLM tests: rows over OpenMP threads; each row in three passes
// (max, exp and sum, scale) on GCC vectors of LANES floats, with exp as a degree-7 polynomial
// on the reduced argument. Softmax only takes exp of x - max <= 0, which the rounding relies on.
// hone:knob THREADS = 1 | 2
// hone:knob LANES = 16 | 8
#include "hone/kernel.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#ifndef THREADS
#define THREADS 1
#endif
#ifndef LANES
#define LANES 16
#endif

typedef float vf __attribute__((vector_size(4 * LANES)));
typedef int32_t vi __attribute__((vector_size(4 * LANES)));

static inline vf vload(const float* p)
{
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(float* p, vf v) { std::memcpy(p, &v, sizeof v); }

// exp(x) for x <= 0: k = round(x / ln 2), r = x - k ln 2, exp(x) = 2^k * P(r).
static inline vf vexp(vf x)
{
    const vf lo = vf {} - 87.0f;
    x = x < lo ? lo : x;
    vi k = __builtin_convertvector(x * 1.4426950408889634f - 0.5f, vi); // truncation = rounding for x <= 0
    vf kf = __builtin_convertvector(k, vf);
    vf r = x - kf * 0.693145751953125f;
    r = r - kf * 1.428606765330187e-06f;
    vf p = vf {} + 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    vi bits = (k + 127) << 23;
    vf scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static inline float sexp(float x)
{
    float in[LANES] = {};
    in[0] = x;
    vf v = vexp(vload(in));
    return v[0];
}

static void row(const float* __restrict x, float* __restrict y, int64_t n)
{
    int64_t j = 0;
    float m = -INFINITY;
    if (n >= LANES) {
        vf vm = vload(x);
        for (j = LANES; j + LANES <= n; j += LANES) {
            vf v = vload(x + j);
            vm = v > vm ? v : vm;
        }
        for (int l = 0; l < LANES; ++l)
            m = vm[l] > m ? vm[l] : m;
    }
    for (; j < n; ++j)
        m = x[j] > m ? x[j] : m;

    vf vs = vf {};
    const vf vmax = vf {} + m;
    j = 0;
    for (; j + LANES <= n; j += LANES) {
        vf e = vexp(vload(x + j) - vmax);
        vstore(y + j, e);
        vs += e;
    }
    float s = 0.0f;
    for (int l = 0; l < LANES; ++l)
        s += vs[l];
    for (; j < n; ++j) {
        float e = sexp(x[j] - m);
        y[j] = e;
        s += e;
    }
    const float inv = 1.0f / s;
    for (int64_t i = 0; i < n; ++i)
        y[i] *= inv;
}

extern "C" int hone_run(const hone_args* args)
{
    const hone_tensor& x = args->inputs[0];
    const int64_t rows = x.shape[0];
    const int64_t cols = x.shape[1];
    const float* xp = static_cast<const float*>(x.data);
    float* yp = static_cast<float*>(args->outputs[0].data);
#pragma omp parallel for num_threads(THREADS) schedule(static) if (rows > 1)
    for (int64_t i = 0; i < rows; ++i)
        row(xp + i * cols, yp + i * cols, cols);
    return 0;
}
