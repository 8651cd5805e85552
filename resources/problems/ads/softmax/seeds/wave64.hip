// Softmax for CDNA (wave64): a group of LANES lanes owns a row (LANES = 64: one wavefront per
// row, the bench shape's 128 floats are two per lane), VEC-wide loads, MAXV vectors per lane kept
// in VGPRs so x is read once; max and sum are reduced with DPP-backed __shfl_xor inside the
// group. Rows too long for registers take a streaming online pass and a second read.
// BLOCK threads per workgroup: 256 is four waves, one per SIMD of the CU.
// hone:knob LANES = 16 | 32 | 64
// hone:knob VEC = 1 | 2 | 4
// hone:knob MAXV = 1 | 2 | 4
// hone:knob BLOCK = 64 | 128 | 256 | 512
// hone:require VEC * MAXV <= 8
// hone:start LANES=64 VEC=2 MAXV=1 BLOCK=256
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

#include <cstdint>

#ifndef LANES
#define LANES 64
#endif
// HIP on NVIDIA (a test bench for the HIP path, docs/HIP.md) has 32-wide warps: a group cannot
// be wider than the warp there, so LANES = 64 acts as 32; CDNA (wave64) is unchanged.
#if defined(__HIP_PLATFORM_NVIDIA__) && LANES > 32
#undef LANES
#define LANES 32
#endif
#ifndef VEC
#define VEC 2
#endif
#ifndef MAXV
#define MAXV 1
#endif
#ifndef BLOCK
#define BLOCK 256
#endif

namespace {

typedef long long i64;

template <int R> __device__ inline float groupMax(float v)
{
#pragma unroll
    for (int o = R / 2; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor(v, o, R));
    return v;
}

template <int R> __device__ inline float groupSum(float v)
{
#pragma unroll
    for (int o = R / 2; o > 0; o >>= 1)
        v += __shfl_xor(v, o, R);
    return v;
}

template <int V>
__global__ void __launch_bounds__(BLOCK) softmax_wave(const float* __restrict__ x, float* __restrict__ y, i64 m, int n)
{
    const i64 row = (static_cast<i64>(blockIdx.x) * BLOCK + threadIdx.x) / LANES;
    const int lane = threadIdx.x % LANES;
    if (row >= m)
        return; // whole groups leave together: LANES divides BLOCK
    const float* xr = x + row * n;
    float* yr = y + row * n;
    const int nv = n / V;
    if (nv <= MAXV * LANES) {
        float v[MAXV][V];
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < MAXV; ++j) {
            const int c = j * LANES + lane;
#pragma unroll
            for (int q = 0; q < V; ++q) {
                v[j][q] = c < nv ? xr[c * V + q] : -INFINITY;
                mx = fmaxf(mx, v[j][q]);
            }
        }
        mx = groupMax<LANES>(mx);
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < MAXV; ++j)
#pragma unroll
            for (int q = 0; q < V; ++q) {
                v[j][q] = __expf(v[j][q] - mx);
                s += j * LANES + lane < nv ? v[j][q] : 0.0f;
            }
        const float inv = 1.0f / groupSum<LANES>(s);
#pragma unroll
        for (int j = 0; j < MAXV; ++j) {
            const int c = j * LANES + lane;
            if (c < nv)
#pragma unroll
                for (int q = 0; q < V; ++q)
                    yr[c * V + q] = v[j][q] * inv;
        }
        return;
    }
    float mx = -INFINITY;
    float s = 0.0f;
    for (int c = lane * V; c < n; c += LANES * V)
        for (int q = 0; q < V; ++q) {
            const float t = xr[c + q];
            if (t > mx) {
                s = s * __expf(mx - t) + 1.0f;
                mx = t;
            } else {
                s += __expf(t - mx);
            }
        }
    const float gmx = groupMax<LANES>(mx);
    s = s > 0.0f ? s * __expf(mx - gmx) : 0.0f;
    const float inv = 1.0f / groupSum<LANES>(s);
    for (int c = lane * V; c < n; c += LANES * V)
        for (int q = 0; q < V; ++q)
            yr[c + q] = __expf(xr[c + q] - gmx) * inv;
}

template <int V> int launch(const hone_args* a, i64 m, int n)
{
    constexpr int rowsPerBlock = BLOCK / LANES;
    const i64 grid = (m + rowsPerBlock - 1) / rowsPerBlock;
    if (grid > 0x7fffffff)
        return 1;
    softmax_wave<V><<<static_cast<unsigned>(grid), BLOCK, 0, static_cast<hipStream_t>(a->stream)>>>(
        static_cast<const float*>(a->inputs[0].data), static_cast<float*>(a->outputs[0].data), m, n);
    return static_cast<int>(hipGetLastError());
}

} // namespace

extern "C" int hone_run(const hone_args* a)
{
    const i64 m = a->inputs[0].shape[0];
    const i64 n = a->inputs[0].shape[1];
    if (m <= 0 || n <= 0)
        return 0;
    if (n > 0x7fffffff / 4)
        return 1;
    if constexpr (VEC >= 4)
        if (n % 4 == 0)
            return launch<4>(a, m, static_cast<int>(n));
    if constexpr (VEC >= 2)
        if (n % 2 == 0)
            return launch<2>(a, m, static_cast<int>(n));
    return launch<1>(a, m, static_cast<int>(n));
}
