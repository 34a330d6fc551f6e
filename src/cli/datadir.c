/*
 * datadir.c - finds drover's data directory from any working directory (datadir.h has the
 * order). Before this, `drover sim --trace /abs/trace.csv` run outside the repository failed on
 * data/pollux/profiles, which was read relative to the working directory.
 *
 * Example: a build in /src/build run from /tmp finds /src/build/../data (holds models.csv); the
 * same binary installed with `make install PREFIX=/opt/drover` finds
 * /opt/drover/bin/../share/drover/data. Paths are bounded by PATH_BUF bytes; a longer candidate
 * is skipped.
 */
#include "datadir.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef DROVER_BUILD_DIR
#define DROVER_BUILD_DIR ""
#endif
#ifndef DROVER_SOURCE_DATA_DIR
#define DROVER_SOURCE_DATA_DIR ""
#endif
#ifndef DROVER_INSTALL_DATA_DIR
#define DROVER_INSTALL_DATA_DIR "/usr/local/share/drover/data"
#endif

#define PATH_BUF 4096

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool has_models(const char *dir)
{
    char p[PATH_BUF];
    struct stat sb;
    int n = snprintf(p, sizeof p, "%s/models.csv", dir);
    return n > 0 && (size_t)n < sizeof p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int take(const char *dir, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s", dir);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* The directory holding the running binary (Linux: /proc/self/exe), or "" when unknown. */
static void bin_dir(char *out, size_t cap)
{
    out[0] = 0;
    if (cap < 2)
        return;
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0) {
        out[0] = 0;
        return;
    }
    out[n] = 0;
    char *slash = strrchr(out, '/');
    if (slash)
        *slash = 0;
    else
        out[0] = 0;
}

/* True when a and b name the same directory. */
static bool same_dir(const char *a, const char *b)
{
    struct stat sa, sb;
    return *a && *b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int data_dir_find(const char *flag, char *out, size_t cap, char *why, size_t whycap)
{
    if (flag) {
        if (is_dir(flag))
            return take(flag, out, cap);
        snprintf(why, whycap, "--data-dir %s: expected a directory", flag);
        return -1;
    }
    const char *env = getenv("DROVER_DATA_DIR");
    if (env && *env) {
        if (is_dir(env))
            return take(env, out, cap);
        snprintf(why, whycap, "DROVER_DATA_DIR=%s: expected a directory", env);
        return -1;
    }
    char bin[PATH_BUF], cand[3][PATH_BUF + 32];
    int nc = 0;
    bin_dir(bin, sizeof bin);
    if (*bin) {
        snprintf(cand[nc++], sizeof cand[0], "%s/../data", bin);
        snprintf(cand[nc++], sizeof cand[0], "%s/../share/drover/data", bin);
    }
    if (same_dir(bin, DROVER_BUILD_DIR) && *DROVER_SOURCE_DATA_DIR)
        snprintf(cand[nc++], sizeof cand[0], "%s", DROVER_SOURCE_DATA_DIR);
    for (int i = 0; i < nc; i++)
        if (has_models(cand[i]))
            return take(cand[i], out, cap);
    if (has_models(DROVER_INSTALL_DATA_DIR))
        return take(DROVER_INSTALL_DATA_DIR, out, cap);
    snprintf(why, whycap,
             "no data directory (one holding models.csv) found: give --data-dir DIR or set "
             "DROVER_DATA_DIR (looked next to %s and in %s)",
             *bin ? bin : "the binary", DROVER_INSTALL_DATA_DIR);
    return -1;
}

const char *data_path(const char *path, const char *data_dir, char *buf, size_t cap)
{
    struct stat sb;
    if (!path || !data_dir || path[0] == '/' || stat(path, &sb) == 0)
        return path;
    const char *rest = strncmp(path, "data/", 5) == 0 ? path + 5 : path;
    int n = snprintf(buf, cap, "%s/%s", data_dir, rest);
    if (n > 0 && (size_t)n < cap && stat(buf, &sb) == 0)
        return buf;
    return path;
}
