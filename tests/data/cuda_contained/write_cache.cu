// Containment: tries to write the worker's cache. Its own object lives in the cache
// (<cache>/cuda-so/...), so its path names the cache folder. It tries to create a file there
// and next to itself, to rewrite calibrated ceilings, and to append to its own object. Then it
// computes y = a * x + b correctly, whatever happened.
#include <hone/kernel.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <string>

__global__ void axpb(const float* x, const float* b, float* y, float a, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b[i];
}

static void tryToWrite()
{
    Dl_info info {};
    if (!dladdr((void*)&tryToWrite, &info) || !info.dli_fname)
        return;
    const std::string self = info.dli_fname;
    const std::string dir = self.substr(0, self.rfind('/'));
    const std::string cache = dir.substr(0, dir.rfind('/'));
    for (const std::string& p : { cache + "/pwned-by-candidate", dir + "/pwned-by-candidate",
             cache + "/ceilings-cuda-pwned-by-candidate.json", std::string("/tmp/pwned-by-candidate") }) {
        if (FILE* f = std::fopen(p.c_str(), "w")) {
            std::fputs("{\"peak_gbps\": 1e9}\n", f);
            std::fclose(f);
        }
    }
    const int fd = ::open(self.c_str(), O_WRONLY | O_APPEND);
    if (fd >= 0) {
        (void)!::write(fd, "pwned", 5);
        ::close(fd);
    }
}

extern "C" int hone_run(const hone_args* args)
{
    static bool tried = false;
    if (!tried) {
        tried = true;
        tryToWrite();
    }
    long long n = hone_numel(&args->inputs[0]);
    if (n == 0) return 0;
    axpb<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)args->stream>>>((const float*)args->inputs[0].data,
        (const float*)args->inputs[1].data, (float*)args->outputs[0].data, (float)hone_param_or(args, "a", 0), n);
    return (int)cudaGetLastError();
}
