// GPU ceilings for Hone's roofline: measured copy bandwidth, FP32 FMA peak and bf16
// tensor-core peak (through cuBLASLt).
//
// hone-worker embeds this file, compiles it with nvcc for the device's architecture like a
// candidate (plus -lcublasLt) and calls hone_cuda_ceilings() on its own stream. Nothing here
// prints: the worker reports the numbers.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

__global__ void copyKernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n)
{
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = in[i];
}

// Each thread copies ILP float4 that are blockDim apart, loading all of them before storing any,
// so that ILP 16-byte reads per thread are in flight; one block per 256 * ILP vectors.
template <int ILP>
__global__ void copyTileKernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n)
{
    const size_t base = static_cast<size_t>(blockIdx.x) * blockDim.x * ILP + threadIdx.x;
    float4 v[ILP];
#pragma unroll
    for (int u = 0; u < ILP; ++u) {
        const size_t i = base + static_cast<size_t>(u) * blockDim.x;
        if (i < n)
            v[u] = __ldcs(in + i);
    }
#pragma unroll
    for (int u = 0; u < ILP; ++u) {
        const size_t i = base + static_cast<size_t>(u) * blockDim.x;
        if (i < n)
            __stcs(out + i, v[u]);
    }
}

// 8 independent FMA chains per thread, enough to cover the pipeline latency.
__global__ void fmaKernel(float* out, int iterations, float seed)
{
    float a[8];
    for (int k = 0; k < 8; ++k)
        a[k] = seed + static_cast<float>(threadIdx.x + k);
    const float b = 0.999f;
    const float c = 1e-3f;
    for (int i = 0; i < iterations; ++i) {
#pragma unroll
        for (int k = 0; k < 8; ++k)
            a[k] = fmaf(a[k], b, c);
    }
    float s = 0;
    for (int k = 0; k < 8; ++k)
        s += a[k];
    if (s == 12345.678f) // never true; keeps the chains alive
        out[blockIdx.x] = s;
}

__global__ void fillBf16(__nv_bfloat16* p, size_t n, uint32_t seed)
{
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        p[i] = __float2bfloat16(static_cast<float>(h & 0xFFFF) / 65536.0f - 0.5f);
    }
}

template <typename F> float medianMs(cudaStream_t stream, int reps, F&& launch)
{
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    launch(); // warm-up
    std::vector<float> ms;
    for (int r = 0; r < reps; ++r) {
        cudaEventRecord(start, stream);
        launch();
        cudaEventRecord(stop, stream);
        cudaEventSynchronize(stop);
        float t = 0;
        cudaEventElapsedTime(&t, start, stop);
        ms.push_back(t);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

} // namespace

// out[0] = copy GB/s (read + write; the best of out[3..5]), out[1] = FP32 FMA GFLOP/s, out[2] =
// bf16 tensor GFLOP/s (0 when cuBLASLt found no algorithm), out[3] = grid-stride float4 copy,
// out[4] = tiled float4 copy with 4 loads in flight per thread, out[5] = cudaMemcpyAsync.
// Returns 0, or a CUDA / cuBLAS status.
extern "C" int hone_cuda_ceilings(void* streamPtr, double* out)
{
    cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceProp prop {};
    cudaGetDeviceProperties(&prop, device);

    // Copy: 1 GiB each way, far beyond any L2.
    const size_t bytes = size_t(1) << 30;
    void* a = nullptr;
    void* b = nullptr;
    if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess)
        return static_cast<int>(cudaGetLastError());
    cudaMemsetAsync(a, 1, bytes, stream);
    // The best of three ways to copy: the copy ceiling is what a kernel can reach, so a method
    // that leaves bandwidth unused would put hand-written kernels above 100%.
    const size_t n4 = bytes / sizeof(float4);
    const int blocks = prop.multiProcessorCount * 8;
    const float strideMs = medianMs(stream, 15, [&] {
        copyKernel<<<blocks, 256, 0, stream>>>(static_cast<const float4*>(a), static_cast<float4*>(b), n4);
    });
    const unsigned tiles = static_cast<unsigned>((n4 + 256 * 4 - 1) / (256 * 4));
    const float tileMs = medianMs(stream, 15, [&] {
        copyTileKernel<4><<<tiles, 256, 0, stream>>>(static_cast<const float4*>(a), static_cast<float4*>(b), n4);
    });
    const float memcpyMs
        = medianMs(stream, 15, [&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream); });
    const float copyMs = std::min(strideMs, std::min(tileMs, memcpyMs));
    out[0] = 2.0 * static_cast<double>(bytes) / (copyMs * 1e-3) / 1e9;
    out[3] = 2.0 * static_cast<double>(bytes) / (strideMs * 1e-3) / 1e9;
    out[4] = 2.0 * static_cast<double>(bytes) / (tileMs * 1e-3) / 1e9;
    out[5] = 2.0 * static_cast<double>(bytes) / (memcpyMs * 1e-3) / 1e9;

    // FP32 FMA: enough blocks to fill every SM several times over.
    const int iters = 4096;
    const int fmaBlocks = prop.multiProcessorCount * 16;
    const float fmaMs = medianMs(stream, 9, [&] {
        fmaKernel<<<fmaBlocks, 256, 0, stream>>>(static_cast<float*>(b), iters, 1.0f);
    });
    out[1] = 2.0 * 8.0 * iters * static_cast<double>(fmaBlocks) * 256 / (fmaMs * 1e-3) / 1e9;

    // bf16 tensor cores through cuBLASLt: an 8192^3 product on random data.
    out[2] = 0;
    const int m = 8192, n = 8192, k = 8192;
    __nv_bfloat16* A = static_cast<__nv_bfloat16*>(a);
    __nv_bfloat16* B = static_cast<__nv_bfloat16*>(b);
    __nv_bfloat16* C = nullptr;
    void* workspace = nullptr;
    const size_t wsBytes = size_t(64) << 20;
    if (cudaMalloc(reinterpret_cast<void**>(&C), size_t(m) * n * 2) != cudaSuccess
        || cudaMalloc(&workspace, wsBytes) != cudaSuccess)
        return static_cast<int>(cudaGetLastError());
    fillBf16<<<1024, 256, 0, stream>>>(A, size_t(m) * k, 17u);
    fillBf16<<<1024, 256, 0, stream>>>(B, size_t(k) * n, 29u);
    cublasLtHandle_t lt = nullptr;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    int status = 0;
    if ((status = cublasLtCreate(&lt)) == 0 && (status = cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F)) == 0
        && (status = cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, m, k, m)) == 0
        && (status = cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, n, k)) == 0
        && (status = cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, m, n, m)) == 0
        && (status = cublasLtMatmulPreferenceCreate(&pref)) == 0) {
        cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof wsBytes);
        cublasLtMatmulHeuristicResult_t heur {};
        int found = 0;
        status = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found);
        if (status == 0 && found > 0) {
            const float alpha = 1.0f, beta = 0.0f;
            const float gemmMs = medianMs(stream, 9, [&] {
                cublasLtMatmul(lt, op, &alpha, A, la, B, lb, &beta, C, lc, C, lc, &heur.algo, workspace,
                    wsBytes, stream);
            });
            out[2] = 2.0 * m * n * static_cast<double>(k) / (gemmMs * 1e-3) / 1e9;
        }
    }
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (lc)
        cublasLtMatrixLayoutDestroy(lc);
    if (op)
        cublasLtMatmulDescDestroy(op);
    if (lt)
        cublasLtDestroy(lt);
    cudaStreamSynchronize(stream);
    cudaFree(a);
    cudaFree(b);
    cudaFree(C);
    cudaFree(workspace);
    const cudaError_t err = cudaGetLastError();
    return err != cudaSuccess ? static_cast<int>(err) : status;
}
