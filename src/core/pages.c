/*
 * pages.c - fixed-capacity arrays that give memory back as entries are released (pages.h).
 *
 * Each page keeps a count of the entries overlapping it that are still in use; releasing an
 * entry decrements the counts of the one or two pages it spans, and a page whose count reaches
 * zero is returned with madvise(MADV_DONTNEED) and, when guarded, protected with PROT_NONE, so
 * that a stale index faults rather than reads zeros. Protecting splits the mapping and costs
 * about 5 % of a 100,000-job simulation, so only checked runs guard. Returning one 4 KiB page
 * at a time cost two system calls per page (a 100,000-job run spent 0.1 s in them), so a
 * "page" here is DRV_PAGES_UNIT system pages, collected DRV_PAGES_BATCH at a time, sorted, and
 * returned one run of adjacent pages per call. Bounds: init is O(cap), a release O(entries +
 * pages they span) plus, once per batch, a sort of it. If protecting fails (the system's limit
 * of mappings) the pages are still returned.
 */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MADV_DONTNEED */
#endif
#include "drover/pages.h"

#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define HAVE_MMAP 1
#else
#define HAVE_MMAP 0
#endif

int drv_pages_init(drv_pages *p, size_t elem, size_t cap)
{
    drv_pages q = {0};
    q.elem = elem;
    q.cap = cap;
#if HAVE_MMAP
    long pg = sysconf(_SC_PAGESIZE);
    /* memory goes back DRV_PAGES_UNIT system pages at a time; a unit's count of entries must
     * fit its uint16_t counter */
    size_t unit = pg > 0 ? (size_t)pg * DRV_PAGES_UNIT : 0;
    q.page = elem > 0 && unit / elem + 2 <= UINT16_MAX ? unit : 0;
#endif
    size_t bytes = elem * cap;
    if (cap && bytes / cap != elem)
        return DRV_ENOMEM;
    if (q.page) {
        size_t npages = (bytes + q.page - 1) / q.page;
        q.len = npages * q.page;
        q.left = drv_calloc(npages + 1, sizeof *q.left);
        if (!q.left)
            return DRV_ENOMEM;
        if (q.len) {
#if HAVE_MMAP
            void *m = mmap(NULL, q.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) {
                drv_free(q.left);
                return DRV_ENOMEM;
            }
            q.base = m;
#endif
        }
        for (size_t i = 0; i < cap; i++) {
            size_t a = i * elem / q.page, b = ((i + 1) * elem - 1) / q.page;
            for (size_t k = a; k <= b; k++)
                q.left[k]++;
        }
    } else {
        q.len = bytes;
        q.base = drv_calloc(cap + 1, elem ? elem : 1);
        if (!q.base)
            return DRV_ENOMEM;
    }
    *p = q;
    return 0;
}

void drv_pages_fini(drv_pages *p)
{
    if (p->page) {
#if HAVE_MMAP
        if (p->base)
            munmap(p->base, p->len);
#endif
        drv_free(p->left);
    } else {
        drv_free(p->base);
    }
    memset(p, 0, sizeof *p);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Returns the pages collected in p->pend, one system call pair per run of adjacent pages. */
void drv_pages_flush(drv_pages *p)
{
    size_t *v = p->pend, n = p->npend;
    qsort(v, n, sizeof *v, cmp_size);
    for (size_t i = 0; i < n;) {
        size_t k = i + 1;
        while (k < n && v[k] == v[k - 1] + 1)
            k++;
#if HAVE_MMAP
        unsigned char *pg = p->base + v[i] * p->page;
        size_t len = (k - i) * p->page;
        madvise(pg, len, MADV_DONTNEED);
        if (p->guard)
            (void)mprotect(pg, len, PROT_NONE);
#endif
        i = k;
    }
    p->returned += n;
    p->npend = 0;
}

void drv_pages_release(drv_pages *p, size_t first, size_t n)
{
    if (!p->page || n == 0)
        return;
    size_t a = first * p->elem / p->page, b = ((first + n) * p->elem - 1) / p->page;
    for (size_t k = a; k <= b; k++) {
        /* entries of the range overlapping page k */
        size_t lo = k * p->page, hi = lo + p->page; /* bytes [lo, hi) */
        size_t e0 = lo / p->elem, e1 = (hi + p->elem - 1) / p->elem;
        if (e0 < first)
            e0 = first;
        if (e1 > first + n)
            e1 = first + n;
        size_t c = e1 > e0 ? e1 - e0 : 0;
        if (c > p->left[k]) /* a double release: keep the count sane */
            c = p->left[k];
        p->left[k] = (uint16_t)(p->left[k] - c);
        if (c && p->left[k] == 0) {
            p->pend[p->npend++] = k;
            if (p->npend == DRV_PAGES_BATCH)
                drv_pages_flush(p);
        }
    }
}
