/*
 * recorded.h - the body of a recorded API answer (tests/fixtures/k8s/transcripts/NN/response.txt:
 * its headers, an empty line, the body), for the benches that use the recorded Pod and Node.
 * Header-only: each bench stays one file.
 */
#ifndef DROVER_BENCH_RECORDED_H
#define DROVER_BENCH_RECORDED_H

#include "drover/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The body after the headers, drv_malloc'd; exits naming bench when the file cannot be read
 * (the benches run from the source tree). */
static inline char *recorded_body(const char *bench, const char *path)
{
    char *text = NULL;
    size_t n;
    if (drv_file_read(path, &text, &n, NULL) != 0) {
        fprintf(stderr, "%s: %s: cannot read it (run from the source tree)\n", bench, path);
        exit(2);
    }
    char *body = strstr(text, "\r\n\r\n");
    body = body ? body + 4 : strstr(text, "\n\n") ? strstr(text, "\n\n") + 2 : text;
    char *out = drv_strdup(body);
    drv_free(text);
    if (!out) {
        fprintf(stderr, "%s: out of memory\n", bench);
        exit(1);
    }
    return out;
}

#endif
