// What the memory system allows for dot_interaction's access pattern on the bench shape
// (B = 16384 samples of F x D = 27 x 128 floats, 351 outputs each), with the arithmetic left out:
// every kernel reads all of X and writes all of `out` the way the real kernels do, and nothing
// else. Standalone (CUDA runtime only), not part of the build:
//     nvcc -arch=sm_90 -O3 -std=c++17 -o floor bench/gpu/dot_interaction_floor.cu && ./floor
// Prints the median of 25 launches, each after a 256 MiB memset that flushes L2.
//   copy      a grid-stride float4 copy of X (read + write), for reference;
//   regs      one warp per sample, 27 16-byte loads per lane into registers (as warp_regs.cu);
//   staged K  persistent warps, each with STAGES whole-sample buffers filled by cp.async (as
//             smem_tiles.cu), plus K x 16 independent FMAs per sample and lane standing in for
//             the arithmetic: how much exposed compute the pipeline tolerates.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

constexpr int kB = 16384;
constexpr int kS = 27 * 128; // floats per sample
constexpr int kP = 27 * 26 / 2;
constexpr int kUnits = kS / 4; // 16-byte units per sample

__global__ void copy(const float4* __restrict__ x, float4* __restrict__ y, size_t n)
{
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x)
        y[i] = x[i];
}

__global__ void regs(const float* __restrict__ x, float* __restrict__ out, int wpb)
{
    const int lane = threadIdx.x & 31;
    const long b = blockIdx.x * static_cast<long>(wpb) + threadIdx.x / 32;
    if (b >= kB)
        return;
    const float4* xb = reinterpret_cast<const float4*>(x + b * kS);
    float4 v[kUnits / 32];
#pragma unroll
    for (int r = 0; r < kUnits / 32; ++r)
        v[r] = __ldg(xb + r * 32 + lane);
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < kUnits / 32; ++r)
        s += v[r].x + v[r].y + v[r].z + v[r].w;
    for (int p = lane; p < kP; p += 32)
        out[b * kP + p] = s;
}

__global__ void staged(const float* __restrict__ x, float* __restrict__ out, int stages, int K)
{
    extern __shared__ float4 sm[];
    const int lane = threadIdx.x & 31;
    const int w = threadIdx.x / 32;
    const int wpb = blockDim.x / 32;
    float4* buf = sm + static_cast<size_t>(w) * stages * kUnits;
    const long stride = static_cast<long>(gridDim.x) * wpb;
    const long first = blockIdx.x * static_cast<long>(wpb) + w;
    auto fill = [&](long b, int slot) {
        if (b < kB) {
            const float4* xb = reinterpret_cast<const float4*>(x + b * kS);
            const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(buf + slot * kUnits));
            for (int q = lane; q < kUnits; q += 32)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d + q * 16), "l"(xb + q) : "memory");
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    for (int s = 0; s < stages - 1; ++s)
        fill(first + s * stride, s);
    int slot = 0;
    for (long b = first; b < kB; b += stride) {
        fill(b + (stages - 1) * stride, (slot + stages - 1) % stages);
        if (stages == 2)
            asm volatile("cp.async.wait_group 1;\n" ::: "memory");
        else
            asm volatile("cp.async.wait_group 2;\n" ::: "memory");
        __syncwarp();
        const float* f = reinterpret_cast<const float*>(buf + slot * kUnits);
        float s = f[lane * 7];
        float a[16];
        for (int i = 0; i < 16; ++i)
            a[i] = f[lane + 32 * i];
        for (int k = 0; k < K; ++k) {
#pragma unroll
            for (int i = 0; i < 16; ++i)
                a[i] = fmaf(a[i], 1.0001f, s);
        }
        for (int i = 0; i < 16; ++i)
            s += a[i];
        for (int p = lane; p < kP; p += 32)
            out[b * kP + p] = s;
        __syncwarp();
        slot = (slot + 1) % stages;
    }
}

} // namespace

int main()
{
    const size_t n = static_cast<size_t>(kB) * kS;
    float *x = nullptr, *y = nullptr, *out = nullptr, *flush = nullptr;
    if (cudaMalloc(&x, n * 4) != cudaSuccess || cudaMalloc(&y, n * 4) != cudaSuccess
        || cudaMalloc(&out, static_cast<size_t>(kB) * kP * 4) != cudaSuccess
        || cudaMalloc(&flush, 256u << 20) != cudaSuccess) {
        std::fprintf(stderr, "floor: no GPU memory (%s)\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
    }
    cudaMemset(x, 0, n * 4);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    auto time = [&](const char* name, double bytes, auto launch) {
        std::vector<float> us;
        for (int i = 0; i < 25; ++i) {
            cudaMemsetAsync(flush, i, 256u << 20);
            cudaEventRecord(e0);
            launch();
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            float ms = 0;
            cudaEventElapsedTime(&ms, e0, e1);
            us.push_back(ms * 1000);
        }
        std::sort(us.begin(), us.end());
        std::printf("%-36s %8.1f us %6.0f GB/s  %s\n", name, us[12], bytes / us[12] / 1e3,
            cudaGetErrorString(cudaGetLastError()));
    };
    const double bytes = n * 4.0 + static_cast<double>(kB) * kP * 4;
    time("copy float4 (read + write)", 2.0 * n * 4,
        [&] { copy<<<sms * 8, 512>>>(reinterpret_cast<float4*>(x), reinterpret_cast<float4*>(y), n / 4); });
    for (int wpb : {1, 2, 4, 8}) {
        char name[64];
        std::snprintf(name, sizeof name, "regs WPB=%d", wpb);
        time(name, bytes, [&] { regs<<<kB / wpb, 32 * wpb>>>(x, out, wpb); });
    }
    for (int K : {0, 32, 64, 128, 192})
        for (int st : {2, 3}) {
            const int wpb = 2;
            const int smem = wpb * st * kUnits * 16;
            cudaFuncSetAttribute(staged, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            int per = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, staged, 32 * wpb, smem);
            char name[64];
            std::snprintf(name, sizeof name, "staged STAGES=%d WPB=2 K=%d", st, K);
            time(name, bytes, [&] { staged<<<per * sms, 32 * wpb, smem>>>(x, out, st, K); });
        }
    return 0;
}
