#include <hone/kernel.h>
#include <sys/stat.h>
#include <unistd.h>
// Hostile: finds every pipe the process holds and writes non-protocol bytes into it, so the
// worker's protocol stream is corrupted whichever descriptor carries it.
extern "C" int hone_run(const hone_args*)
{
    static const char junk[] = "this is not JSON {{{\n";
    for (int fd = 0; fd < 64; ++fd) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
            (void)!write(fd, junk, sizeof junk - 1);
    }
    return 0;
}
