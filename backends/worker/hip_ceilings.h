#pragma once

/// The HIP calibration kernels, compiled by the worker like a candidate (for the device's gfx
/// target) and run once per GPU, ROCm and hipcc: `hone_hip_ceilings(stream, out)` writes copy
/// bandwidth (GB/s, bytes read + written), the FP32 FMA peak and the bf16 matrix-core peak
/// (GFLOP/s). Kept in this header so that a worker copied to an AMD host needs no resource files.
namespace hone::backends::hip {

inline constexpr const char* kCeilingsSource = R"hip(
#include <hip/hip_runtime.h>
#include <algorithm>
#include <vector>

#pragma clang diagnostic ignored "-Wunused-result" // timing calls; errors surface at hipGetLastError

__global__ void __launch_bounds__(256) copyKernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n)
{
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        out[i] = in[i];
}

__global__ void __launch_bounds__(256) fmaKernel(float* out, float seed, int iters)
{
    float a[8];
    for (int c = 0; c < 8; ++c)
        a[c] = seed + threadIdx.x + c;
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int c = 0; c < 8; ++c)
            a[c] = __builtin_fmaf(a[c], 0.999999f, 1e-7f);
    float s = 0;
    for (int c = 0; c < 8; ++c)
        s += a[c];
    if (s == 12345.0f)
        out[threadIdx.x] = s; // never true: keeps the chains alive
}

#if defined(__HIP_PLATFORM_NVIDIA__)
// HIP on the NVIDIA platform (a test bench, docs/HIP.md): the matrix peak from WMMA bf16
// 16x16x16, one warp per fragment set, 2 * 16^3 flops per mma_sync.
#include <mma.h>
#include <cuda_bf16.h>
constexpr int kMatrixFlopsPerWaveStep = 2 * 16 * 16 * 16;
__global__ void __launch_bounds__(256) mfmaKernel(float* out, int iters)
{
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
    wmma::fill_fragment(a, __float2bfloat16(1.0f));
    wmma::fill_fragment(b, __float2bfloat16(0.5f));
    for (int c = 0; c < 4; ++c)
        wmma::fill_fragment(acc[c], 0.0f);
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int c = 0; c < 4; ++c)
            wmma::mma_sync(acc[c], a, b, acc[c]);
    float s = 0;
    for (int c = 0; c < 4; ++c)
        s += acc[c].x[0];
    if (s == 12345.0f)
        out[threadIdx.x] = s;
}
#else
constexpr int kMatrixFlopsPerWaveStep = 2 * 32 * 32 * 8;
typedef short bf16x4 __attribute__((ext_vector_type(4)));
typedef float f32x16 __attribute__((ext_vector_type(16)));

__global__ void __launch_bounds__(256) mfmaKernel(float* out, int iters)
{
    bf16x4 a = { 1, 2, 3, 4 };
    bf16x4 b = { 5, 6, 7, 8 };
    f32x16 acc[4] = {};
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int c = 0; c < 4; ++c)
            acc[c] = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, acc[c], 0, 0, 0);
    float s = 0;
    for (int c = 0; c < 4; ++c)
        s += acc[c][0];
    if (s == 12345.0f)
        out[threadIdx.x] = s;
}
#endif

template <typename F>
static double medianMs(hipStream_t s, int reps, F launch)
{
    hipEvent_t a, b;
    hipEventCreate(&a);
    hipEventCreate(&b);
    launch(); // warm-up
    std::vector<float> ms;
    for (int r = 0; r < reps; ++r) {
        hipEventRecord(a, s);
        launch();
        hipEventRecord(b, s);
        hipEventSynchronize(b);
        float t = 0;
        hipEventElapsedTime(&t, a, b);
        ms.push_back(t);
    }
    hipEventDestroy(a);
    hipEventDestroy(b);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

extern "C" int hone_hip_ceilings(void* stream, double* out)
{
    hipStream_t s = static_cast<hipStream_t>(stream);
    int dev = 0, cus = 0;
    hipGetDevice(&dev);
    hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, dev);
    const size_t bytes = size_t(1) << 30;
    float4 *in = nullptr, *o = nullptr;
    float* sink = nullptr;
    if (hipMalloc(&in, bytes) != hipSuccess || hipMalloc(&o, bytes) != hipSuccess || hipMalloc(&sink, 4096) != hipSuccess)
        return 1;
    hipMemsetAsync(in, 0, bytes, s);
    const size_t n = bytes / sizeof(float4);
    const double copyMs = medianMs(s, 15, [&] { copyKernel<<<cus * 16, 256, 0, s>>>(in, o, n); });
    out[0] = 2.0 * bytes / (copyMs * 1e6);
    const int iters = 4096;
    const double fmaMs = medianMs(s, 9, [&] { fmaKernel<<<cus * 16, 256, 0, s>>>(sink, 1.0f, iters); });
    out[1] = 2.0 * 8 * iters * double(cus) * 16 * 256 / (fmaMs * 1e6);
    // One 32x32x8 MFMA is 2*32*32*8 flops per wave (WMMA 16x16x16 on NVIDIA: 2*16^3 per warp);
    // 4 matrix chains per wave, 256 / warpSize waves per block.
    int wave = 64;
    hipDeviceGetAttribute(&wave, hipDeviceAttributeWarpSize, dev);
    const int mIters = 2048;
    const double mfmaMs = medianMs(s, 9, [&] { mfmaKernel<<<cus * 8, 256, 0, s>>>(sink, mIters); });
    out[2] = double(kMatrixFlopsPerWaveStep) * 4.0 * mIters * double(cus) * 8 * (256 / wave) / (mfmaMs * 1e6);
    hipFree(in);
    hipFree(o);
    hipFree(sink);
    return hipGetLastError() == hipSuccess ? 0 : 2;
}

extern "C" int hone_run(const void*) { return 0; } // not a candidate; satisfies the loader's check
)hip";

} // namespace hone::backends::hip
