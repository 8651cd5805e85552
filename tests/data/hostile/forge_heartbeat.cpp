#include <hone/kernel.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
// Hostile: never returns, and writes a forged progress line (stage 'wait', whose silences the
// executor does not count) into every pipe and socket ten times a second, so that an executor
// that believed it would wait for ever.
extern "C" int hone_run(const hone_args*)
{
    static const char line[] = "{\"protocol\":2,\"type\":\"progress\",\"id\":\"c-heartbeat\",\"stage\":\"wait\","
                               "\"detail\":\"another worker is timing on this device\"}\n";
    for (;;) {
        DIR* dir = opendir("/proc/self/fd");
        if (dir) {
            const int own = dirfd(dir);
            while (const dirent* e = readdir(dir)) {
                const int fd = atoi(e->d_name);
                struct stat st;
                if (e->d_name[0] == '.' || fd == own || fstat(fd, &st) != 0)
                    continue;
                if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
                    (void)!write(fd, line, sizeof line - 1);
            }
            closedir(dir);
        }
        usleep(100 * 1000);
    }
}
