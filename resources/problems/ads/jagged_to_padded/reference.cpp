// Reference for jagged_to_padded: out[b, l, :] = values[offsets[b] + l, :] for
// l < min(len_b, MAXL), padding_value elsewhere.
#include "hone/kernel.h"

#include <cmath>
#include <cstdint>
#include <cstring>

extern "C" int hone_run(const hone_args* args)
{
    if (args->num_inputs != 2 || args->num_outputs != 1)
        return 1;
    const hone_tensor& values = args->inputs[0];
    const hone_tensor& offsets = args->inputs[1];
    const hone_tensor& out = args->outputs[0];
    if (values.dtype != HONE_F32 || offsets.dtype != HONE_I64 || out.dtype != HONE_F32)
        return 1;
    if (values.rank != 2 || offsets.rank != 1 || out.rank != 3)
        return 1;
    const int64_t T = values.shape[0];
    const int64_t D = values.shape[1];
    const int64_t B = out.shape[0];
    const int64_t MAXL = out.shape[1];
    if (out.shape[2] != D || offsets.shape[0] != B + 1)
        return 1;
    const double pad_d = hone_param_or(args, "padding_value", NAN);
    if (std::isnan(pad_d))
        return 1;
    const float pad = static_cast<float>(pad_d);
    const float* vp = static_cast<const float*>(values.data);
    const int64_t* off = static_cast<const int64_t*>(offsets.data);
    float* op = static_cast<float*>(out.data);
    if (off[0] < 0 || off[B] > T)
        return 1;
    for (int64_t b = 0; b < B; ++b)
        if (off[b + 1] < off[b])
            return 1;

#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < B; ++b) {
        const int64_t len = off[b + 1] - off[b];
        for (int64_t l = 0; l < MAXL; ++l) {
            float* dst = op + (b * MAXL + l) * D;
            if (l < len) {
                std::memcpy(dst, vp + (off[b] + l) * D, static_cast<size_t>(D) * sizeof(float));
            } else {
                for (int64_t d = 0; d < D; ++d)
                    dst[d] = pad;
            }
        }
    }
    return 0;
}
