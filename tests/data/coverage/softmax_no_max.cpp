// Adversarial (issue 18, class 9): softmax without the max subtraction. Right on the listed
// inputs (normal, std 3: exp never overflows), wrong when |x| is large (exp overflows to inf,
// inf / inf is NaN) or very negative (exp underflows to 0, 0 / 0 is NaN).
#include "hone/kernel.h"

#include <cmath>
#include <cstdint>

extern "C" int hone_run(const hone_args* args)
{
    const int64_t M = args->inputs[0].shape[0];
    const int64_t N = args->inputs[0].shape[1];
    const float* x = static_cast<const float*>(args->inputs[0].data);
    float* y = static_cast<float*>(args->outputs[0].data);
    for (int64_t i = 0; i < M; ++i) {
        float sum = 0.0f;
        for (int64_t j = 0; j < N; ++j) {
            y[i * N + j] = std::exp(x[i * N + j]);
            sum += y[i * N + j];
        }
        for (int64_t j = 0; j < N; ++j)
            y[i * N + j] /= sum;
    }
    return 0;
}
