#include <hone/kernel.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
// Hostile: computes the right answer, but on its first call forks a child that calls setsid(),
// closes every descriptor it inherited (so nothing waits for it) and, once the process that
// evaluated it is gone, creates $HONE_CONTAINMENT_DIR/marker: a side effect after the
// evaluation. Its pid goes to $HONE_CONTAINMENT_DIR/late.pid (written by the parent).
extern "C" int hone_run(const hone_args* a)
{
    static bool forked = false;
    if (!forked) {
        forked = true;
        // Everything the child needs is prepared before fork: the parent has threads, so the
        // child makes only system calls.
        const pid_t evaluator = getpid();
        const char* dir = getenv("HONE_CONTAINMENT_DIR");
        char pidPath[4096], marker[4096];
        snprintf(pidPath, sizeof pidPath, "%s/late.pid", dir ? dir : "/nonexistent");
        snprintf(marker, sizeof marker, "%s/marker", dir ? dir : "/nonexistent");
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
            for (int f = 0; f < 1024; ++f)
                close(f);
            // Until the evaluating process has ended (or two minutes passed).
            for (int i = 0; i < 1200 && kill(evaluator, 0) == 0; ++i)
                usleep(100 * 1000);
            const int m = open(marker, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (m >= 0)
                close(m);
            _exit(0);
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
