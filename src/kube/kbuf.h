/*
 * kbuf.h - a growing buffer that libcurl writes a response body into (src/kube only: the API
 * client's answers, the progress collector's scrapes; and the tests that speak HTTP to the test
 * API server, which add src/kube to their include path).
 */
#ifndef DROVER_KBUF_H
#define DROVER_KBUF_H

#include "drover/base.h"

#include <stddef.h>

typedef struct drv_kbuf {
    char *p;       /* NUL-terminated; drv_free it */
    size_t n, cap; /* bytes held, allocated */
    size_t max;    /* refuse a body longer than this (0: no limit) */
    bool oom;      /* an allocation failed */
} drv_kbuf;

/* A CURLOPT_WRITEFUNCTION appending to the drv_kbuf given as CURLOPT_WRITEDATA. Returns 0 (which
 * makes libcurl fail the transfer) past max or when out of memory (oom set). */
size_t drv_kbuf_write(char *data, size_t size, size_t nmemb, void *arg);
/* Room for n more bytes and a terminator in b (its max not checked): false when out of memory
 * (oom set). */
bool drv_kbuf_reserve(drv_kbuf *b, size_t n);
/* Appends n bytes of s to b (NUL-terminated after them; b->max is not applied: a body Drover
 * writes, not one it reads); false when out of memory (b->oom set). */
bool drv_kbuf_put(drv_kbuf *b, const char *s, size_t n);

#endif
