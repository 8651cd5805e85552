#include <hone/kernel.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
// Hostile: computes the right answer, but on its first call forks a child that leaves the
// worker's process group and session (setsid), keeps every descriptor it inherited (the
// worker's pipes among them) and sleeps for ever. Its pid goes to $HONE_CONTAINMENT_DIR/holder.pid.
extern "C" int hone_run(const hone_args* a)
{
    static bool forked = false;
    if (!forked) {
        forked = true;
        // Prepared before fork: the parent has threads, so the child makes only system calls.
        const char* dir = getenv("HONE_CONTAINMENT_DIR");
        char pidPath[4096];
        snprintf(pidPath, sizeof pidPath, "%s/holder.pid", dir ? dir : "/nonexistent");
        if (fork() == 0) {
            setsid();
            char text[32];
            int n = 0;
            for (int v = (int)getpid(); v > 0; v /= 10)
                text[n++] = (char)('0' + v % 10);
            for (int i = 0; i < n / 2; ++i) {
                const char c = text[i];
                text[i] = text[n - 1 - i];
                text[n - 1 - i] = c;
            }
            text[n++] = '\n';
            const int fd = open(pidPath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) {
                (void)!write(fd, text, (size_t)n);
                close(fd);
            }
            for (;;)
                pause();
        }
    }
    const float* x = static_cast<const float*>(a->inputs[0].data);
    float* y = static_cast<float*>(a->outputs[0].data);
    const int64_t n = hone_numel(&a->outputs[0]);
    const float b = static_cast<float>(hone_param_or(a, "b", 0.0));
    for (int64_t i = 0; i < n; ++i)
        y[i] = 2.0f * x[i] + b;
    return 0;
}
