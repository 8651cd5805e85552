#include <hone/kernel.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
// Hostile: computes the right answer, but on its first call forks a child that leaves the
// worker's process group and session (setsid), keeps every descriptor it inherited (the
// worker's pipes among them) and sleeps for ever. Its pid goes to
// $HONE_CONTAINMENT_DIR/holder.pid (written by the parent).
extern "C" int hone_run(const hone_args* a)
{
    static bool forked = false;
    if (!forked) {
        forked = true;
        // Prepared before fork: the parent has threads, so the child makes only system calls.
        const char* dir = getenv("HONE_CONTAINMENT_DIR");
        char pidPath[4096];
        snprintf(pidPath, sizeof pidPath, "%s/holder.pid", dir ? dir : "/nonexistent");
        const pid_t child = fork();
        if (child > 0) {
            // The parent names the child (which may not be scheduled before it is ended).
            if (FILE* f = fopen(pidPath, "w")) {
                fprintf(f, "%d\n", (int)child);
                fclose(f);
            }
        }
        if (child == 0) {
            setsid();
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
