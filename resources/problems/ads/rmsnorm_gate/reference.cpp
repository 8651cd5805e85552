// Reference for rmsnorm_gate: y[i,j] = x[i,j] / sqrt(mean_k x[i,k]^2 + eps) * w[j] * silu(g[i,j]),
// silu(g) = g / (1 + exp(-g)); all tensors bf16.
// Ground truth: the sum of squares and every product in double, y rounded to bf16 once (through
// float). Rows are independent (OpenMP).
#include "hone/kernel.h"

#include <cmath>
#include <cstdint>

extern "C" int hone_run(const hone_args* args)
{
    if (args->num_inputs != 3 || args->num_outputs != 1)
        return 1;
    const hone_tensor& x = args->inputs[0];
    const hone_tensor& w = args->inputs[1];
    const hone_tensor& g = args->inputs[2];
    const hone_tensor& y = args->outputs[0];
    if (x.rank != 2 || w.rank != 1 || g.rank != 2 || y.rank != 2)
        return 1;
    if (x.dtype != HONE_BF16 || w.dtype != HONE_BF16 || g.dtype != HONE_BF16 || y.dtype != HONE_BF16)
        return 1;
    const int64_t M = x.shape[0];
    const int64_t N = x.shape[1];
    if (w.shape[0] != N || g.shape[0] != M || g.shape[1] != N || y.shape[0] != M || y.shape[1] != N)
        return 1;
    const double eps = hone_param_or(args, "eps", 1e-6);
    const uint16_t* xp = static_cast<const uint16_t*>(x.data);
    const uint16_t* wp = static_cast<const uint16_t*>(w.data);
    const uint16_t* gp = static_cast<const uint16_t*>(g.data);
    uint16_t* yp = static_cast<uint16_t*>(y.data);

#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        const uint16_t* xr = xp + i * N;
        const uint16_t* gr = gp + i * N;
        uint16_t* yr = yp + i * N;
        double ss = 0.0;
        for (int64_t j = 0; j < N; ++j) {
            const double v = hone_bf16_to_f32(xr[j]);
            ss += v * v;
        }
        const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(N) + eps);
        for (int64_t j = 0; j < N; ++j) {
            const double gv = hone_bf16_to_f32(gr[j]);
            const double silu = gv / (1.0 + std::exp(-gv));
            const double v = static_cast<double>(hone_bf16_to_f32(xr[j])) * rstd
                * static_cast<double>(hone_bf16_to_f32(wp[j])) * silu;
            yr[j] = hone_f32_to_bf16(static_cast<float>(v));
        }
    }
    return 0;
}
