// Reference for layernorm: y[i, j] = (x[i, j] - mean_i) / sqrt(var_i + eps) * gamma[j] + beta[j],
// var_i the biased (divide by N) variance of row i. Ground truth: two passes in double.
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
    const int64_t M = x.shape[0];
    const int64_t N = x.shape[1];
    if (y.shape[0] != M || y.shape[1] != N || gamma.shape[0] != N || beta.shape[0] != N)
        return 1;
    const double eps = hone_param_or(args, "eps", 1e-5);
    const float* xp = static_cast<const float*>(x.data);
    const float* g = static_cast<const float*>(gamma.data);
    const float* b = static_cast<const float*>(beta.data);
    float* yp = static_cast<float*>(y.data);

    for (int64_t i = 0; i < M; ++i) {
        const float* xr = xp + i * N;
        float* yr = yp + i * N;
        double sum = 0.0;
        for (int64_t j = 0; j < N; ++j)
            sum += xr[j];
        const double mean = sum / static_cast<double>(N);
        double sq = 0.0;
        for (int64_t j = 0; j < N; ++j) {
            const double d = xr[j] - mean;
            sq += d * d;
        }
        const double var = sq / static_cast<double>(N);
        const double rstd = 1.0 / std::sqrt(var + eps);
        for (int64_t j = 0; j < N; ++j)
            yr[j] = static_cast<float>((xr[j] - mean) * rstd * g[j] + b[j]);
    }
    return 0;
}
