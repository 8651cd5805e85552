// Bucketize for CDNA: the workgroup stages the boundaries in LDS (64 KiB per CU on MI200/MI300,
// up to LDS_MAX floats per workgroup) and every thread binary-searches ITEMS elements of x with
// the searches interleaved, so ITEMS independent ds_read chains hide each other's latency.
// Tables larger than LDS_MAX are searched in global memory (through L2). out = the number of
// boundaries strictly below x (torch.bucketize, right=False).
// hone:knob BLOCK = 256 | 512 | 1024  acts=launch_shape
// hone:knob ITEMS = 1 | 2 | 4 | 8  acts=memory_pipeline
// hone:knob LDS_MAX = 2048 | 4096 | 8192
// Two workgroups of 1024 floats' table per CU leave room for 8 waves per SIMD.
// hone:start BLOCK=256 ITEMS=4 LDS_MAX=2048
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

#include <cstdint>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 4
#endif
#ifndef LDS_MAX
#define LDS_MAX 2048
#endif

namespace {

typedef long long i64;

template <bool Shared>
__global__ void __launch_bounds__(BLOCK) bucketize_lds(const float* __restrict__ x, const float* __restrict__ bounds,
    int64_t* __restrict__ out, i64 n, int k)
{
    __shared__ float table[Shared ? LDS_MAX : 1];
    const float* t = bounds;
    if constexpr (Shared) {
        for (int i = threadIdx.x; i < k; i += BLOCK)
            table[i] = bounds[i];
        __syncthreads();
        t = table;
    }
    const i64 base = static_cast<i64>(blockIdx.x) * BLOCK * ITEMS + threadIdx.x;
    float v[ITEMS];
    int lo[ITEMS], hi[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const i64 at = base + static_cast<i64>(i) * BLOCK;
        v[i] = at < n ? x[at] : 0.0f;
        lo[i] = 0;
        hi[i] = k;
    }
    // lower_bound: the first boundary >= v; every lane runs the same number of steps.
    for (int span = k; span > 0; span >>= 1) {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            if (lo[i] < hi[i]) {
                const int mid = (lo[i] + hi[i]) >> 1;
                if (t[mid] < v[i])
                    lo[i] = mid + 1;
                else
                    hi[i] = mid;
            }
        }
    }
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        while (lo[i] < hi[i]) { // finishes the rare search the halving loop left open
            const int mid = (lo[i] + hi[i]) >> 1;
            if (t[mid] < v[i])
                lo[i] = mid + 1;
            else
                hi[i] = mid;
        }
        const i64 at = base + static_cast<i64>(i) * BLOCK;
        if (at < n)
            out[at] = lo[i];
    }
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const i64 n = a->inputs[0].shape[0];
    const i64 k = a->inputs[1].shape[0];
    if (n <= 0)
        return 0;
    if (k > 0x7fffffff)
        return 1;
    const i64 grid = (n + static_cast<i64>(BLOCK) * ITEMS - 1) / (static_cast<i64>(BLOCK) * ITEMS);
    hipStream_t s = static_cast<hipStream_t>(a->stream);
    const float* x = static_cast<const float*>(a->inputs[0].data);
    const float* b = static_cast<const float*>(a->inputs[1].data);
    int64_t* out = static_cast<int64_t*>(a->outputs[0].data);
    if (k <= LDS_MAX)
        bucketize_lds<true><<<static_cast<unsigned>(grid), BLOCK, 0, s>>>(x, b, out, n, static_cast<int>(k));
    else
        bucketize_lds<false><<<static_cast<unsigned>(grid), BLOCK, 0, s>>>(x, b, out, n, static_cast<int>(k));
    return static_cast<int>(hipGetLastError());
}
