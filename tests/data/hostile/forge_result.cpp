#include <hone/kernel.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
// Hostile: finds every pipe and socket among its descriptors and writes a forged reply into
// each, claiming success and a 1000x speedup under ids it guesses (one of them right), then
// leaves its output unwritten. Adopting any of these lines would report a broken kernel as the
// best one.
static void forge(int fd, const char* id)
{
    char line[1024];
    const int n = snprintf(line, sizeof line,
        "{\"protocol\":2,\"type\":\"result\",\"id\":\"%s\",\"status\":\"ok\",\"forged\":true,"
        "\"timing\":{\"shape\":\"bench[0]\",\"samples_ns\":[1],\"median_ns\":1,\"p10_ns\":1,\"p90_ns\":1,"
        "\"cv\":0,\"speedup\":1000},\"checks\":[]}\n",
        id);
    if (n > 0)
        (void)!write(fd, line, (size_t)n);
}

extern "C" int hone_run(const hone_args*)
{
    static const char* const ids[] = { "forged", "0", "1", "c-forge", "hello" };
    DIR* dir = opendir("/proc/self/fd");
    if (!dir)
        return 0;
    const int own = dirfd(dir);
    while (const dirent* e = readdir(dir)) {
        const int fd = atoi(e->d_name);
        struct stat st;
        if (e->d_name[0] == '.' || fd == own || fstat(fd, &st) != 0)
            continue;
        if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
            for (const char* id : ids)
                forge(fd, id);
    }
    closedir(dir);
    return 0;
}
