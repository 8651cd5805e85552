// A hand-written candidate for the imported 08_linear_relu: out = relu(x W^T + b), with the
// module's parameters as inputs 1 (linear_weight [out, in]) and 2 (linear_bias [out]).
#include "hone/kernel.h"

#include <algorithm>
#include <cstdint>

extern "C" int hone_run(const hone_args* args)
{
    const hone_tensor& x = args->inputs[0];
    const float* xp = static_cast<const float*>(x.data);
    const float* w = static_cast<const float*>(args->inputs[1].data);
    const float* b = static_cast<const float*>(args->inputs[2].data);
    float* out = static_cast<float*>(args->outputs[0].data);
    const int64_t M = x.shape[0], K = x.shape[1], N = args->outputs[0].shape[1];
#pragma omp parallel for
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            float acc = b[n];
            for (int64_t k = 0; k < K; ++k)
                acc += xp[m * K + k] * w[n * K + k];
            out[m * N + n] = std::max(acc, 0.0f);
        }
    return 0;
}
