// Reference for softmax: y[i, j] = exp(x[i, j] - max_j x[i, :]) / sum_j exp(x[i, j] - max_j x[i, :]).
// Ground truth: the exponentials and the row sum are computed in double.
#include "hone/kernel.h"

#include <cmath>
#include <cstdint>
#include <vector>

extern "C" int hone_run(const hone_args* args)
{
    if (args->num_inputs != 1 || args->num_outputs != 1)
        return 1;
    const hone_tensor& x = args->inputs[0];
    const hone_tensor& y = args->outputs[0];
    if (x.rank != 2 || y.rank != 2 || x.dtype != HONE_F32 || y.dtype != HONE_F32)
        return 1;
    const int64_t M = x.shape[0];
    const int64_t N = x.shape[1];
    if (y.shape[0] != M || y.shape[1] != N)
        return 1;
    const float* xp = static_cast<const float*>(x.data);
    float* yp = static_cast<float*>(y.data);

#pragma omp parallel
    {
        std::vector<double> e(static_cast<size_t>(N));
#pragma omp for schedule(static)
        for (int64_t i = 0; i < M; ++i) {
            const float* xr = xp + i * N;
            float* yr = yp + i * N;
            double m = -INFINITY;
            for (int64_t j = 0; j < N; ++j)
                m = std::fmax(m, static_cast<double>(xr[j]));
            double sum = 0.0;
            for (int64_t j = 0; j < N; ++j) {
                e[j] = std::exp(static_cast<double>(xr[j]) - m);
                sum += e[j];
            }
            for (int64_t j = 0; j < N; ++j)
                yr[j] = static_cast<float>(e[j] / sum);
        }
    }
    return 0;
}
