// Reference for embedding_bag_sum: out[b, :] = sum over k in [offsets[b], offsets[b+1]) of
// table[indices[k], :]; an empty bag gives zeros. Ground truth: accumulation in double.
#include "hone/kernel.h"

#include <cstdint>
#include <vector>

extern "C" int hone_run(const hone_args* args)
{
    if (args->num_inputs != 3 || args->num_outputs != 1)
        return 1;
    const hone_tensor& table = args->inputs[0];
    const hone_tensor& indices = args->inputs[1];
    const hone_tensor& offsets = args->inputs[2];
    const hone_tensor& out = args->outputs[0];
    if (table.rank != 2 || indices.rank != 1 || offsets.rank != 1 || out.rank != 2)
        return 1;
    if (table.dtype != HONE_F32 || out.dtype != HONE_F32 || indices.dtype != HONE_I64
        || offsets.dtype != HONE_I64)
        return 1;
    const int64_t R = table.shape[0];
    const int64_t D = table.shape[1];
    const int64_t L = indices.shape[0];
    const int64_t B = out.shape[0];
    if (out.shape[1] != D || offsets.shape[0] != B + 1)
        return 1;
    const float* tp = static_cast<const float*>(table.data);
    const int64_t* idx = static_cast<const int64_t*>(indices.data);
    const int64_t* off = static_cast<const int64_t*>(offsets.data);
    float* op = static_cast<float*>(out.data);
    if (off[0] < 0 || off[B] > L)
        return 1;
    for (int64_t b = 0; b < B; ++b)
        if (off[b + 1] < off[b])
            return 1;
    for (int64_t k = 0; k < L; ++k)
        if (idx[k] < 0 || idx[k] >= R)
            return 1;

#pragma omp parallel
    {
        std::vector<double> acc(static_cast<size_t>(D));
#pragma omp for schedule(dynamic, 64)
        for (int64_t b = 0; b < B; ++b) {
            for (int64_t d = 0; d < D; ++d)
                acc[d] = 0.0;
            for (int64_t k = off[b]; k < off[b + 1]; ++k) {
                const float* row = tp + idx[k] * D;
                for (int64_t d = 0; d < D; ++d)
                    acc[d] += row[d];
            }
            for (int64_t d = 0; d < D; ++d)
                op[b * D + d] = static_cast<float>(acc[d]);
        }
    }
    return 0;
}
