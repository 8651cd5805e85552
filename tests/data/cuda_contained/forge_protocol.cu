// Containment: writes a forged result line ("ok", a 1000x speedup) to every pipe it inherited:
// every pipe of which its process holds one end only. (Pipes of which it holds both ends are the
// CUDA driver's own; junk in them breaks only its own context, CUDA_ERROR_OPERATING_SYSTEM, as a
// first version of this test found on an H100.) In the worker's own process one of them is the
// protocol channel, and the forged line reached the engine (a protocol_error on an H100); in a
// runner, none is. Then it computes y = a * x + b correctly.
#include <hone/kernel.h>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstring>
#include <map>

__global__ void axpb(const float* x, const float* b, float* y, float a, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b[i];
}

static void forge()
{
    static const char line[] = "{\"type\":\"result\",\"id\":\"forge_protocol.cu\",\"status\":\"ok\",\"protocol\":1,"
                               "\"timing\":{\"median_ns\":1,\"speedup\":1000},\"checks\":[]}\n";
    std::map<ino_t, int> ends; // pipe inode -> how many of its ends this process holds
    for (int fd = 0; fd < 1024; ++fd) {
        struct stat st {};
        if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
            ++ends[st.st_ino];
    }
    for (int fd = 1; fd < 1024; ++fd) {
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || ends[st.st_ino] != 1)
            continue;
        const int flags = ::fcntl(fd, F_GETFL);
        if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
            continue;
        (void)!::write(fd, line, sizeof line - 1);
    }
}

extern "C" int hone_run(const hone_args* args)
{
    static bool forged = false;
    if (!forged) {
        forged = true;
        forge();
    }
    long long n = hone_numel(&args->inputs[0]);
    if (n == 0) return 0;
    axpb<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)args->stream>>>((const float*)args->inputs[0].data,
        (const float*)args->inputs[1].data, (float*)args->outputs[0].data, (float)hone_param_or(args, "a", 0), n);
    return (int)cudaGetLastError();
}
