// Reference for layernorm (bf16): y[i,j] = (x[i,j] - mean_i) / sqrt(var_i + eps) * gamma[j] + beta[j],
// var_i the biased (divide by N) variance of row i; all tensors bf16.
// Ground truth: two passes in double, y rounded to bf16 once (through float). Rows are
// independent (OpenMP).
#include "hone/kernel.h"

#include <cmath>
#include <cstdint>

extern "C" int hone_run(const hone_args* args)
{
    if (args->num_inputs != 3 || args->num_outputs != 1)
        return 1;
    const hone_tensor& x = args->inputs[0];
    const hone_tensor& gamma = args->inputs[1];
    const hone_tensor& beta = args->inputs[2];
    const hone_tensor& y = args->outputs[0];
    if (x.rank != 2 || y.rank != 2 || gamma.rank != 1 || beta.rank != 1)
        return 1;
    if (x.dtype != HONE_BF16 || gamma.dtype != HONE_BF16 || beta.dtype != HONE_BF16 || y.dtype != HONE_BF16)
        return 1;
    const int64_t M = x.shape[0];
    const int64_t N = x.shape[1];
    if (y.shape[0] != M || y.shape[1] != N || gamma.shape[0] != N || beta.shape[0] != N)
        return 1;
    const double eps = hone_param_or(args, "eps", 1e-5);
    const uint16_t* xp = static_cast<const uint16_t*>(x.data);
    const uint16_t* gp = static_cast<const uint16_t*>(gamma.data);
    const uint16_t* bp = static_cast<const uint16_t*>(beta.data);
    uint16_t* yp = static_cast<uint16_t*>(y.data);

#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        const uint16_t* xr = xp + i * N;
        uint16_t* yr = yp + i * N;
        double sum = 0.0;
        for (int64_t j = 0; j < N; ++j)
            sum += hone_bf16_to_f32(xr[j]);
        const double mean = sum / static_cast<double>(N);
        double sq = 0.0;
        for (int64_t j = 0; j < N; ++j) {
            const double d = hone_bf16_to_f32(xr[j]) - mean;
            sq += d * d;
        }
        const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(N) + eps);
        for (int64_t j = 0; j < N; ++j) {
            const double v
                = (hone_bf16_to_f32(xr[j]) - mean) * rstd * hone_bf16_to_f32(gp[j]) + hone_bf16_to_f32(bp[j]);
            yr[j] = hone_f32_to_bf16(static_cast<float>(v));
        }
    }
    return 0;
}
