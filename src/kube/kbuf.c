/*
 * kbuf.c - the growing buffer libcurl writes a response body into (kbuf.h): doubled from 4 kB as
 * needed, NUL-terminated, refused past its max (the progress collector's 1 MiB).
 */
#include "kbuf.h"

#include <string.h>

bool drv_kbuf_reserve(drv_kbuf *b, size_t n)
{
    if (b->n + n + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n + 1)
        cap *= 2;
    char *p = drv_realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

bool drv_kbuf_put(drv_kbuf *b, const char *s, size_t n)
{
    if (!drv_kbuf_reserve(b, n))
        return false;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

size_t drv_kbuf_write(char *data, size_t size, size_t nmemb, void *arg)
{
    drv_kbuf *b = arg;
    size_t n = size * nmemb;
    if (b->max && b->n + n > b->max)
        return 0;
    return drv_kbuf_put(b, data, n) ? n : 0;
}
