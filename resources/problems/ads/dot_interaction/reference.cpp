// Reference for dot_interaction: out[b, i*(i-1)/2 + j] = sum_d X[b,i,d] * X[b,j,d] for
// 0 <= j < i < F, the pairs in row-major order of the strict lower triangle.
// Ground truth: every dot product is accumulated in double; samples are independent (OpenMP).
#include "hone/kernel.h"

#include <cstdint>

extern "C" int hone_run(const hone_args* args)
{
    if (args->num_inputs != 1 || args->num_outputs != 1)
        return 1;
    const hone_tensor& X = args->inputs[0];
    const hone_tensor& out = args->outputs[0];
    if (X.rank != 3 || out.rank != 2 || X.dtype != HONE_F32 || out.dtype != HONE_F32)
        return 1;
    const int64_t B = X.shape[0];
    const int64_t F = X.shape[1];
    const int64_t D = X.shape[2];
    const int64_t P = F * (F - 1) / 2;
    if (out.shape[0] != B || out.shape[1] != P)
        return 1;
    const float* xp = static_cast<const float*>(X.data);
    float* op = static_cast<float*>(out.data);

#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < B; ++b) {
        const float* xb = xp + b * F * D;
        float* ob = op + b * P;
        int64_t p = 0; // = i * (i - 1) / 2 + j
        for (int64_t i = 1; i < F; ++i)
            for (int64_t j = 0; j < i; ++j) {
                double s = 0.0;
                for (int64_t d = 0; d < D; ++d)
                    s += static_cast<double>(xb[i * D + d]) * static_cast<double>(xb[j * D + d]);
                ob[p++] = static_cast<float>(s);
            }
    }
    return 0;
}
