/*
 * file.h - reading a whole text file, and writing a file so that readers see either the old
 * contents or the new, never a half-written file.
 */
#ifndef DROVER_FILE_H
#define DROVER_FILE_H

#include "drover/base.h"

#include <stdio.h>

/*
 * Reads the file at path into *text (NUL-terminated, drv_free it) and its length into *len
 * (may be NULL). Refuses a file that contains a NUL byte (DRV_EPARSE, "path: byte 1234: a NUL
 * byte; expected text"): text parsers would silently stop there. DRV_EIO names path and the
 * system's reason; DRV_ENOMEM. On failure *text and *len are untouched.
 */
int drv_file_read(const char *path, char **text, size_t *len, drv_diag *d);

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
