/*
 * file.h - reading a whole text file, and writing a file so that readers see either the old
 * contents or the new, never a half-written file.
 */
#ifndef DROVER_FILE_H
#define DROVER_FILE_H

#include "drover/base.h"

#include <stdint.h>
#include <stdio.h>

/*
 * Reads the file at path into *text (NUL-terminated, drv_free it) and its length into *len
 * (may be NULL). Refuses a file that contains a NUL byte (DRV_EPARSE, "path: byte 1234: a NUL
 * byte; expected text"): text parsers would silently stop there. DRV_EIO names path and the
 * system's reason; DRV_ENOMEM. On failure *text and *len are untouched.
 */
int drv_file_read(const char *path, char **text, size_t *len, drv_diag *d);

/*
 * Limits on what drover reads (docs/formats.md, "Limits"): every read is bounded, so an endless
 * file (/dev/zero, a FIFO fed forever) ends with an error naming the file and the limit instead
 * of reading until memory runs out. Each reader states its own limit next to it; these are the
 * shared ones.
 */
#define DRV_MAX_FILE_BYTES (1ULL << 30) /* drv_file_read: 1 GiB, a trace read whole */
#define DRV_MAX_LINE_BYTES (1 << 20)    /* a line of a file read line by line: 1 MiB */

/*
 * drv_file_read with a limit: a file of more than max bytes is DRV_ERANGE, "path: larger than
 * 64 MiB, the most KIND may be" (kind such as "a YAML file"); at most max + 1 bytes are read.
 * A NUL byte is refused as soon as it is read. path "-" reads standard input.
 */
int drv_file_read_max(const char *path, uint64_t max, const char *kind, char **text, size_t *len,
                      drv_diag *d);
/* The message of a file over its limit (as above); returns DRV_ERANGE. */
int drv_file_too_big(drv_diag *d, const char *path, uint64_t max, const char *kind);

/*
 * A text file read one line at a time, bounded: at most max bytes in all, DRV_MAX_LINE_BYTES a
 * line and INT32_MAX lines (line numbers are int in messages). The buffer is reused: a line
 * stays valid until the next call.
 *
 *     drv_lines r;
 *     if (drv_lines_open(&r, path, 1ULL << 32, "a jobs file", d) != 0) return DRV_EIO;
 *     char *s;
 *     while ((rc = drv_lines_next(&r, &s, NULL, d)) == 1) ... r.line is s's number ...
 *     drv_lines_close(&r);
 */
typedef struct drv_lines {
    FILE *f;          /* open between open and close */
    char *buf;        /* the current line, NUL-terminated, without '\n' or a final '\r' */
    size_t cap;       /* bytes allocated for buf */
    int line;         /* number of the line last returned, 1-based; 0 before the first */
    uint64_t bytes;   /* read so far */
    uint64_t max;     /* the most bytes the file may have */
    const char *kind; /* what the file is, for the size message (borrowed) */
    char path[4096];  /* for messages */
} drv_lines;

/* 0; DRV_ENOENT or DRV_EIO ("path: cannot read: reason"). */
int drv_lines_open(drv_lines *r, const char *path, uint64_t max, const char *kind, drv_diag *d);
/*
 * The next line: 1 with *line (and *len, may be NULL) set, 0 at the end of the file, or an error
 * naming the file: DRV_EPARSE "path:N: a NUL byte; expected text", DRV_ERANGE (a line longer
 * than DRV_MAX_LINE_BYTES, the file larger than max, more than INT32_MAX lines), DRV_EIO,
 * DRV_ENOMEM.
 */
int drv_lines_next(drv_lines *r, char **line, size_t *len, drv_diag *d);
/* Back to the first line (a second pass); DRV_EIO when the file cannot seek (a pipe). */
int drv_lines_rewind(drv_lines *r, drv_diag *d);
/* Closes the file and frees the buffer; safe on a reader that failed to open. */
void drv_lines_close(drv_lines *r);

/*
 * Atomic replacement: drv_file_out_open creates ".NAME.tmp" beside path, the caller writes to
 * o->f, drv_file_out_commit closes it and renames it over path. On any failure (and on
 * drv_file_out_abort) the temporary file is removed and path is left as it was.
 *
 *     drv_file_out o;
 *     if (drv_file_out_open(&o, "out/summary.csv", d) != 0) return DRV_EIO;
 *     fprintf(o.f, "...");
 *     return drv_file_out_commit(&o, d);
 */
typedef struct drv_file_out {
    FILE *f;         /* open for writing between open and commit/abort; NULL otherwise */
    char tmp[4352];  /* the temporary file */
    char path[4352]; /* the final name */
} drv_file_out;

/* 0; DRV_EINVAL (path too long); DRV_EIO ("tmp: cannot write: reason"). */
int drv_file_out_open(drv_file_out *o, const char *path, drv_diag *d);
/* Closes and renames into place. 0, or DRV_EIO ("path: write failed", "path: cannot rename into
 * place: reason") with the temporary file removed. */
int drv_file_out_commit(drv_file_out *o, drv_diag *d);
/* Closes and removes the temporary file (a no-op when not open). */
void drv_file_out_abort(drv_file_out *o);
/* Renames a finished temporary file (written by another program, e.g. gnuplot's images) over
 * path; on failure removes it. 0 or DRV_EIO ("path: cannot rename into place: reason"). */
int drv_file_publish(const char *tmp, const char *path, drv_diag *d);
/* The whole of data[0..len) as path's new contents: open, write, commit. */
int drv_file_write_atomic(const char *path, const void *data, size_t len, drv_diag *d);

#endif
