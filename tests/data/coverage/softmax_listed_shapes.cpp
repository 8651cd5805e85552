// Adversarial (issue 18, class 9): a softmax hard-coded for the listed check shapes of
// resources/problems/cpu/softmax (M x N = 1x1, 7x33, 3x4099, 64x1000) and the bench shapes.
// Right on exactly those shapes; on any other it writes every element, but garbage (1 / (N + 1)
// everywhere), as a kernel specialised for a few shapes and never tested beyond them would.
#include "hone/kernel.h"

#include <cmath>
#include <cstdint>

static bool listed(int64_t m, int64_t n)
{
    static const int64_t shapes[][2] = { { 1, 1 }, { 7, 33 }, { 3, 4099 }, { 64, 1000 }, { 2048, 1024 },
        { 1000, 96 }, { 64, 4099 } };
    for (const auto& s : shapes)
        if (s[0] == m && s[1] == n)
            return true;
    return false;
}

extern "C" int hone_run(const hone_args* args)
{
    const int64_t M = args->inputs[0].shape[0];
    const int64_t N = args->inputs[0].shape[1];
    const float* x = static_cast<const float*>(args->inputs[0].data);
    float* y = static_cast<float*>(args->outputs[0].data);
    if (!listed(M, N)) {
        for (int64_t i = 0; i < M * N; ++i)
            y[i] = 1.0f / static_cast<float>(N + 1);
        return 0;
    }
    for (int64_t i = 0; i < M; ++i) {
        float m = x[i * N];
        for (int64_t j = 1; j < N; ++j)
            m = std::fmax(m, x[i * N + j]);
        float sum = 0.0f;
        for (int64_t j = 0; j < N; ++j) {
            y[i * N + j] = std::exp(x[i * N + j] - m);
            sum += y[i * N + j];
        }
        for (int64_t j = 0; j < N; ++j)
            y[i * N + j] /= sum;
    }
    return 0;
}
