/*
 * file.c - whole-file reading and atomic file replacement (file.h).
 *
 * Reading grows one buffer by doubling (64 KiB first), so a file of n bytes costs O(n) copies
 * and at most 2n + 64 KiB of memory; the NUL check is one memchr over what was read.
 * Replacement writes a temporary file in the same directory (rename(2) is atomic only within a
 * file system) and renames it over the target, as editors and package managers do.
 */
#include "drover/file.h"

#include <errno.h>
#include <string.h>

int drv_file_read(const char *path, char **text, size_t *len, drv_diag *d)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return drv_fail(d, DRV_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = drv_malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break; /* end of file or an error: ferror tells below */
        char *nb = drv_realloc(buf, cap * 2);
        if (!nb) {
            drv_free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (!buf)
        return drv_fail(d, DRV_ENOMEM, "%s: out of memory", path);
    if (err) {
        drv_free(buf);
        return drv_fail(d, DRV_EIO, "%s: read error: %s", path, strerror(err));
    }
    const char *nul = memchr(buf, 0, n);
    if (nul) {
        size_t at = (size_t)(nul - buf);
        drv_free(buf);
        return drv_fail(d, DRV_EPARSE, "%s: byte %zu: a NUL byte; expected text", path, at);
    }
    buf[n] = 0;
    *text = buf;
    if (len)
        *len = n;
    return 0;
}

int drv_file_out_open(drv_file_out *o, const char *path, drv_diag *d)
{
    o->f = NULL;
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path + 1) : 0; /* bytes of the directory, with its '/' */
    int w = snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.tmp", dir, path, path + dir);
    if (w < 0 || (size_t)w >= sizeof o->tmp ||
        (size_t)snprintf(o->path, sizeof o->path, "%s", path) >= sizeof o->path)
        return drv_fail(d, DRV_EINVAL, "%s: path too long", path);
    if (!(o->f = fopen(o->tmp, "w")))
        return drv_fail(d, DRV_EIO, "%s: cannot write: %s", o->tmp, strerror(errno));
    return 0;
}

int drv_file_out_commit(drv_file_out *o, drv_diag *d)
{
    if (!o->f)
        return drv_fail(d, DRV_EIO, "%s: write failed", o->path);
    int bad = ferror(o->f);
    int closed = fclose(o->f);
    o->f = NULL;
    if (closed != 0 || bad) {
        remove(o->tmp);
        return drv_fail(d, DRV_EIO, "%s: write failed", o->path);
    }
    return drv_file_publish(o->tmp, o->path, d);
}

int drv_file_publish(const char *tmp, const char *path, drv_diag *d)
{
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return drv_fail(d, DRV_EIO, "%s: cannot rename into place: %s", path, strerror(e));
    }
    return 0;
}

void drv_file_out_abort(drv_file_out *o)
{
    if (!o->f)
        return;
    fclose(o->f);
    o->f = NULL;
    remove(o->tmp);
}

int drv_file_write_atomic(const char *path, const void *data, size_t len, drv_diag *d)
{
    drv_file_out o;
    int rc = drv_file_out_open(&o, path, d);
    if (rc)
        return rc;
    if (len && fwrite(data, 1, len, o.f) != len) {
        drv_file_out_abort(&o);
        return drv_fail(d, DRV_EIO, "%s: write failed", path);
    }
    return drv_file_out_commit(&o, d);
}
