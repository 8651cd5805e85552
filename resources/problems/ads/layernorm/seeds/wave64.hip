// LayerNorm (bf16) for CDNA: one wavefront (64 lanes) per row, WAVES rows per workgroup. Each
// lane loads VEC bf16 values at a time (VEC = 4: 8-byte global_load_dwordx2, 8: dwordx4) and
// keeps up to MAXV such vectors in VGPRs, so x is read once from HBM: the row sum and sum of
// squares are reduced across the wave with __shfl_xor (DPP/ds_swizzle on CDNA), then the lane
// writes (x - mean) * rstd * gamma + beta rounded to bf16 once. Rows longer than
// 64 * VEC * MAXV take a second read of x (from L2 on MI200/MI300).
// hone:knob VEC = 2 | 4 | 8  acts=bytes_per_access
// hone:knob MAXV = 1 | 2 | 4 | 8  acts=work_per_thread
// hone:knob WAVES = 1 | 2 | 4 | 8  acts=launch_shape
// hone:require VEC * MAXV <= 32
// The bench row (N = 1024) is 64 lanes x 4 x 4: in registers at the start.
// hone:start VEC=4 MAXV=4 WAVES=4
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

#include <cstdint>

#ifndef VEC
#define VEC 4
#endif
#ifndef MAXV
#define MAXV 4
#endif
#ifndef WAVES
#define WAVES 4
#endif

namespace {

typedef long long i64;
// One wave per row. HIP on NVIDIA (a test bench for the HIP path, docs/HIP.md) has 32-wide
// warps: the row is then one warp, and the code for CDNA (wave64) is unchanged.
#if defined(__HIP_PLATFORM_NVIDIA__)
constexpr int kWave = 32;
#else
constexpr int kWave = 64;
#endif

__device__ inline float bf2f(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }

__device__ inline uint16_t f2bf(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0; // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u); // round to nearest even
    return static_cast<uint16_t>(u >> 16);
}

__device__ inline float waveSum(float v)
{
#pragma unroll
    for (int o = kWave / 2; o > 0; o >>= 1)
        v += __shfl_xor(v, o, kWave);
    return v;
}

__global__ void __launch_bounds__(WAVES * kWave) layernorm_wave(const uint16_t* __restrict__ x, const uint16_t* __restrict__ gamma,
    const uint16_t* __restrict__ beta, uint16_t* __restrict__ y, i64 m, int n, float eps, bool vec)
{
    const i64 row = static_cast<i64>(blockIdx.x) * WAVES + threadIdx.x / kWave;
    const int lane = threadIdx.x % kWave;
    if (row >= m)
        return; // the whole wave: shuffles below stay within live waves
    const uint16_t* xr = x + row * n;
    uint16_t* yr = y + row * n;
    const int v = vec ? VEC : 1;
    float keep[MAXV][VEC];
    float s = 0.0f, ss = 0.0f;
    const bool inRegs = n <= kWave * VEC * MAXV && vec;
    if (inRegs) {
#pragma unroll
        for (int j = 0; j < MAXV; ++j) {
            const int c = (j * kWave + lane) * VEC;
#pragma unroll
            for (int q = 0; q < VEC; ++q) {
                keep[j][q] = c < n ? bf2f(xr[c + q]) : 0.0f;
                s += keep[j][q];
                ss += keep[j][q] * keep[j][q];
            }
        }
    } else {
        for (int c = lane * v; c < n; c += kWave * v)
            for (int q = 0; q < v; ++q) {
                const float t = bf2f(xr[c + q]);
                s += t;
                ss += t * t;
            }
    }
    s = waveSum(s);
    ss = waveSum(ss);
    const float mean = s / static_cast<float>(n);
    const float var = fmaxf(ss / static_cast<float>(n) - mean * mean, 0.0f);
    const float rstd = rsqrtf(var + eps);
    if (inRegs) {
#pragma unroll
        for (int j = 0; j < MAXV; ++j) {
            const int c = (j * kWave + lane) * VEC;
            if (c < n)
#pragma unroll
                for (int q = 0; q < VEC; ++q)
                    yr[c + q] = f2bf((keep[j][q] - mean) * rstd * bf2f(gamma[c + q]) + bf2f(beta[c + q]));
        }
    } else {
        for (int c = lane * v; c < n; c += kWave * v)
            for (int q = 0; q < v; ++q)
                yr[c + q] = f2bf((bf2f(xr[c + q]) - mean) * rstd * bf2f(gamma[c + q]) + bf2f(beta[c + q]));
    }
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
    const float eps = static_cast<float>(hone_param_or(a, "eps", 1e-5));
    const i64 grid = (m + WAVES - 1) / WAVES;
    layernorm_wave<<<static_cast<unsigned>(grid), WAVES * kWave, 0, static_cast<hipStream_t>(a->stream)>>>(
        static_cast<const uint16_t*>(a->inputs[0].data), static_cast<const uint16_t*>(a->inputs[1].data),
        static_cast<const uint16_t*>(a->inputs[2].data), static_cast<uint16_t*>(a->outputs[0].data), m,
        static_cast<int>(n), eps, n % VEC == 0);
    return static_cast<int>(hipGetLastError());
}
