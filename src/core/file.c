/*
 * file.c - whole-file reading and atomic file replacement (file.h).
 *
 * Reading grows one buffer by doubling (64 KiB first), so a file of n bytes costs O(n) copies
 * and at most 2n + 64 KiB of memory; the NUL check is one memchr over each block as it comes.
 * Every read is bounded: a whole file by the caller's limit (an endless file such as /dev/zero,
 * a FIFO or /proc/self/... ends with an error naming the file and the limit), a file read line
 * by line by its limit in bytes and by DRV_MAX_LINE_BYTES per line.
 * Replacement writes a temporary file in the same directory (rename(2) is atomic only within a
 * file system) and renames it over the target, as editors and package managers do.
 */
#include "drover/file.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* "N MiB" (or GiB, KiB, bytes) for a limit in a message. */
static const char *size_text(char *buf, size_t n, uint64_t bytes)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && bytes >= 1024 && bytes % 1024 == 0)
        bytes /= 1024, u++;
    snprintf(buf, n, "%llu %s", (unsigned long long)bytes, unit[u]);
    return buf;
}

int drv_file_too_big(drv_diag *d, const char *path, uint64_t max, const char *kind)
{
    char lim[32];
    return drv_fail(d, DRV_ERANGE, "%s: larger than %s, the most %s may be", path,
                    size_text(lim, sizeof lim, max), kind);
}

int drv_file_read_max(const char *path, uint64_t max, const char *kind, char **text, size_t *len,
                      drv_diag *d)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return drv_fail(d, DRV_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = drv_malloc(cap);
    int rc = buf ? 0 : drv_fail(d, DRV_ENOMEM, "%s: out of memory", path);
    while (!rc) {
        size_t want = cap - n - 1; /* never more than max + 1 bytes in all */
        if (want > max + 1 - n)
            want = (size_t)(max + 1 - n);
        size_t got = fread(buf + n, 1, want, f);
        const char *nul = memchr(buf + n, 0, got); /* as it comes: /dev/zero stops at once */
        if (nul) {
            rc = drv_fail(d, DRV_EPARSE, "%s: byte %zu: a NUL byte; expected text", path,
                          (size_t)(nul - buf));
            break;
        }
        n += got;
        if (n > max) {
            rc = drv_file_too_big(d, path, max, kind);
            break;
        }
        if (got < want) {
            if (ferror(f))
                rc = drv_fail(d, DRV_EIO, "%s: read error: %s", path, strerror(errno));
            break; /* else the end of the file */
        }
        char *nb = drv_realloc(buf, cap * 2);
        if (!nb) {
            rc = drv_fail(d, DRV_ENOMEM, "%s: out of memory", path);
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (f != stdin)
        fclose(f);
    if (rc) {
        drv_free(buf);
        return rc;
    }
    buf[n] = 0;
    *text = buf;
    if (len)
        *len = n;
    return 0;
}

int drv_file_read(const char *path, char **text, size_t *len, drv_diag *d)
{
    return drv_file_read_max(path, DRV_MAX_FILE_BYTES, "a file drover reads whole", text, len, d);
}

/* ---- line by line ------------------------------------------------------------------------- */

int drv_lines_open(drv_lines *r, const char *path, uint64_t max, const char *kind, drv_diag *d)
{
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->max = max;
    r->kind = kind;
    if (!(r->f = fopen(path, "rb")))
        return drv_fail(d, errno == ENOENT ? DRV_ENOENT : DRV_EIO, "%s: cannot read: %s", path,
                        strerror(errno));
    return 0;
}

int drv_lines_next(drv_lines *r, char **line, size_t *len, drv_diag *d)
{
    size_t n = 0;
    int ch;
    if (r->line == INT32_MAX)
        return drv_fail(d, DRV_ERANGE, "%s: more than %d lines", r->path, INT32_MAX);
    while ((ch = getc_unlocked(r->f)) != EOF) { /* one reader a file: no lock a byte */
        if (++r->bytes > r->max)
            return drv_file_too_big(d, r->path, r->max, r->kind);
        if (ch == '\n')
            break;
        if (ch == 0) /* it would end the line early, silently */
            return drv_fail(d, DRV_EPARSE, "%s:%d: a NUL byte; expected text", r->path,
                            r->line + 1);
        if (n == DRV_MAX_LINE_BYTES)
            return drv_fail(d, DRV_ERANGE, "%s:%d: a line longer than %d bytes", r->path,
                            r->line + 1, DRV_MAX_LINE_BYTES);
        if (n + 2 > r->cap) {
            size_t cap = r->cap ? 2 * r->cap : 256;
            char *b = drv_realloc(r->buf, cap);
            if (!b)
                return drv_fail(d, DRV_ENOMEM, "%s: out of memory", r->path);
            r->buf = b;
            r->cap = cap;
        }
        r->buf[n++] = (char)ch;
    }
    if (ch == EOF && ferror(r->f))
        return drv_fail(d, DRV_EIO, "%s: read error: %s", r->path, strerror(errno));
    if (ch == EOF && n == 0)
        return 0;
    if (!r->buf) {
        if (!(r->buf = drv_malloc(16)))
            return drv_fail(d, DRV_ENOMEM, "%s: out of memory", r->path);
        r->cap = 16;
    }
    if (n > 0 && r->buf[n - 1] == '\r')
        n--;
    r->buf[n] = 0;
    r->line++;
    *line = r->buf;
    if (len)
        *len = n;
    return 1;
}

int drv_lines_rewind(drv_lines *r, drv_diag *d)
{
    if (fseek(r->f, 0, SEEK_SET) != 0)
        return drv_fail(d, DRV_EIO, "%s: cannot read it again: %s", r->path, strerror(errno));
    r->line = 0;
    r->bytes = 0;
    return 0;
}

void drv_lines_close(drv_lines *r)
{
    if (r->f)
        fclose(r->f);
    drv_free(r->buf);
    r->f = NULL;
    r->buf = NULL;
    r->cap = 0;
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
