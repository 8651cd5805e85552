// Reference for bucketize: out[i] = number of boundaries strictly less than x[i] (= the index of
// the first boundary >= x[i] for sorted boundaries), as int64. Fails if boundaries is unsorted.
#include "hone/kernel.h"

#include <algorithm>
#include <cstdint>

extern "C" int hone_run(const hone_args* args)
{
    if (args->num_inputs != 2 || args->num_outputs != 1)
        return 1;
    const hone_tensor& x = args->inputs[0];
    const hone_tensor& bnd = args->inputs[1];
    const hone_tensor& out = args->outputs[0];
    if (x.dtype != HONE_F32 || bnd.dtype != HONE_F32 || out.dtype != HONE_I64)
        return 1;
    if (x.rank != 1 || bnd.rank != 1 || out.rank != 1 || out.shape[0] != x.shape[0])
        return 1;
    const int64_t N = x.shape[0];
    const int64_t K = bnd.shape[0];
    const float* xp = static_cast<const float*>(x.data);
    const float* b = static_cast<const float*>(bnd.data);
    int64_t* o = static_cast<int64_t*>(out.data);
    for (int64_t k = 1; k < K; ++k)
        if (!(b[k - 1] <= b[k]))
            return 1; // not sorted (or NaN): the problem's precondition is broken
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < N; ++i)
        o[i] = std::lower_bound(b, b + K, xp[i]) - b;
    return 0;
}
