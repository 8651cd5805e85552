// HIP softmax written for any wave size: one wave per row, whatever a wave is (64 lanes on
// CDNA, 32 on NVIDIA): the lane count, the rows per block and the __shfl_xor butterfly all come
// from warpSize (on the device) and hipDeviceAttributeWarpSize (on the host), never from 64.
#include <hone/kernel.h>

#include <hip/hip_runtime.h>

#include <cstdint>

__global__ void __launch_bounds__(256) softmax_wave(const float* __restrict__ x, float* __restrict__ y, int64_t m, int n)
{
    const int lane = threadIdx.x % warpSize;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / warpSize) + threadIdx.x / warpSize;
    if (row >= m)
        return; // the whole wave leaves together: a row is one wave
    const float* xr = x + row * n;
    float* yr = y + row * n;
    float mx = -INFINITY;
    for (int c = lane; c < n; c += warpSize)
        mx = fmaxf(mx, xr[c]);
    for (int o = warpSize / 2; o > 0; o >>= 1)
        mx = fmaxf(mx, __shfl_xor(mx, o));
    float s = 0.0f;
    for (int c = lane; c < n; c += warpSize)
        s += __expf(xr[c] - mx);
    for (int o = warpSize / 2; o > 0; o >>= 1)
        s += __shfl_xor(s, o);
    const float inv = 1.0f / s;
    for (int c = lane; c < n; c += warpSize)
        yr[c] = __expf(xr[c] - mx) * inv;
}

extern "C" int hone_run(const hone_args* a)
{
    const int64_t m = a->inputs[0].shape[0];
    const int64_t n = a->inputs[0].shape[1];
    if (m <= 0 || n <= 0)
        return 0;
    if (n > 0x7fffffff)
        return 1;
    static int wave = 0;
    if (wave == 0) {
        int dev = 0;
        if (hipGetDevice(&dev) != hipSuccess || hipDeviceGetAttribute(&wave, hipDeviceAttributeWarpSize, dev) != hipSuccess
            || wave <= 0)
            return 2;
    }
    const int block = 256;
    const int64_t rowsPerBlock = block / wave;
    hipLaunchKernelGGL(softmax_wave, dim3(static_cast<unsigned>((m + rowsPerBlock - 1) / rowsPerBlock)), dim3(block), 0,
        static_cast<hipStream_t>(a->stream), static_cast<const float*>(a->inputs[0].data),
        static_cast<float*>(a->outputs[0].data), m, static_cast<int>(n));
    return static_cast<int>(hipGetLastError());
}
