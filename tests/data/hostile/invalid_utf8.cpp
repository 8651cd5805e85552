#include <hone/kernel.h>
#include <sys/stat.h>
#include <unistd.h>
// Hostile: bytes that are not UTF-8 (a Latin-1 letter, a stray continuation byte, a cut-off
// sequence) on stderr and into every pipe the process holds, the protocol's among them.
extern "C" int hone_run(const hone_args*)
{
    static const char junk[] = "caf\xE9 \x80 \xE2\x82\n";
    for (int fd = 0; fd < 64; ++fd) {
        struct stat st;
        if (fd == 2 || (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)))
            (void)!write(fd, junk, sizeof junk - 1);
    }
    return 0;
}
