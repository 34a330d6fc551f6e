/* fuzz_util.c - the temporary file and directory of fuzz.h, made once per process. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *fuzz_dir(void)
{
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/drover-fuzz-%ld", (long)getpid());
        char cmd[128];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
        if (system(cmd) != 0)
            return NULL;
    }
    return dir;
}

const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    static char path[128];
    const char *dir = fuzz_dir();
    if (!dir)
        return NULL;
    snprintf(path, sizeof path, "%s/input%s", dir, suffix);
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    size_t put = fwrite(data, 1, size, f);
    if (fclose(f) != 0 || put != size)
        return NULL;
    return path;
}
