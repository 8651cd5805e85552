// Containment: rewrites the driver entry point its process times with. Every function pointer
// to cuEventElapsedTime (either ABI version) in its process's writable memory is replaced by
// one that reports a twentieth of the true time. The work is correct and takes about 5 ms a call
// (a spin on the GPU's clock after y = a * x + b). In the worker's own process this made it
// look 20 times faster; in a runner the worker's clock shows the lie.
#include <hone/kernel.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <cstdio>
#include <cstring>

__global__ void axpb(const float* x, const float* b, float* y, float a, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b[i];
}

__global__ void spin(unsigned long long ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    while (now - start < ns);
}

using ElapsedFn = CUresult (*)(float*, CUevent, CUevent);
static ElapsedFn g_real = nullptr;

static CUresult fakeElapsed(float* ms, CUevent a, CUevent b)
{
    const CUresult r = g_real(ms, a, b);
    if (r == CUDA_SUCCESS)
        *ms /= 20.0f;
    return r;
}

static int patchDriverTable()
{
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return 0;
    void* targets[2] = { dlsym(lib, "cuEventElapsedTime"), dlsym(lib, "cuEventElapsedTime_v2") };
    int patched = 0;
    FILE* maps = std::fopen("/proc/self/maps", "r");
    if (!maps)
        return 0;
    char line[512];
    while (std::fgets(line, sizeof line, maps)) {
        unsigned long lo = 0, hi = 0;
        char perms[8] = {};
        char path[256] = {};
        if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, path) < 3)
            continue;
        // The heap and anonymous private memory, where a loaded driver table lives.
        if (std::strncmp(perms, "rw-p", 4) != 0 || (path[0] && std::strcmp(path, "[heap]") != 0)
            || hi - lo > (256ul << 20))
            continue;
        for (void** p = (void**)lo; p + 1 <= (void**)hi; ++p)
            for (void* t : targets)
                if (t && *p == t) {
                    if (!g_real)
                        g_real = (ElapsedFn)t;
                    *p = (void*)&fakeElapsed;
                    ++patched;
                }
    }
    std::fclose(maps);
    return patched;
}

extern "C" int hone_run(const hone_args* args)
{
    static int patched = -1;
    if (patched < 0)
        patched = patchDriverTable();
    long long n = hone_numel(&args->inputs[0]);
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)args->stream;
    axpb<<<(unsigned)((n + 255) / 256), 256, 0, s>>>((const float*)args->inputs[0].data,
        (const float*)args->inputs[1].data, (float*)args->outputs[0].data, (float)hone_param_or(args, "a", 0), n);
    spin<<<1, 1, 0, s>>>(5000000ull);
    return (int)cudaGetLastError();
}
