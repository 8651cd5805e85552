// Layernorm, first version: one thread, scalar loops. Per row: a pass for the mean, a pass for
// the variance, a pass that writes (x - mean) * rstd * gamma + beta.
#include "hone/kernel.h"

#include <cmath>
#include <cstdint>

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

    for (int64_t i = 0; i < M; ++i) {
        const float* xr = xp + i * N;
        float* yr = yp + i * N;

        float sum = 0.0f;
        for (int64_t j = 0; j < N; ++j)
            sum += xr[j];
        const float mean = sum / static_cast<float>(N);

        float sq = 0.0f;
        for (int64_t j = 0; j < N; ++j) {
            const float d = xr[j] - mean;
            sq += d * d;
        }
        const float var = sq / static_cast<float>(N);
        const float rstd = 1.0f / std::sqrt(var + eps);

        for (int64_t j = 0; j < N; ++j)
            yr[j] = (xr[j] - mean) * rstd * g[j] + b[j];
    }
    return 0;
}
