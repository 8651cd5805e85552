// Softmax, first version: one thread, scalar loops. Per row: a max pass, a pass that stores
// exp(x - max) and sums it, and a pass that scales by 1 / sum.
#include "hone/kernel.h"

#include <cmath>
#include <cstdint>

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

    for (int64_t i = 0; i < M; ++i) {
        const float* xr = xp + i * N;
        float* yr = yp + i * N;

        float m = xr[0];
        for (int64_t j = 1; j < N; ++j)
            if (xr[j] > m)
                m = xr[j];

        float sum = 0.0f;
        for (int64_t j = 0; j < N; ++j) {
            float e = std::exp(xr[j] - m);
            yr[j] = e;
            sum += e;
        }

        float inv = 1.0f / sum;
        for (int64_t j = 0; j < N; ++j)
            yr[j] *= inv;
    }
    return 0;
}
