/*
 * pages.h - a fixed-capacity array whose entries can be given up for good, and whose memory
 * goes back to the operating system page by page as they are.
 *
 * A driver that knows how many entries it will ever have (the simulator: one job per trace
 * row) reserves them once; an entry is written while in use and released when nothing will
 * read it again. When every entry overlapping a page is released the page is returned
 * (madvise), so resident memory follows the entries still in use while indices stay stable for
 * the whole run. No index is ever handed to a second entry, so a stale index never reads
 * another entry's data - at worst zeros; in a guarded array (the simulator's checked runs) the
 * page is also made inaccessible (mprotect) and such a read faults. Where the
 * system has no mmap the array is plain heap memory and releasing only does the bookkeeping.
 *
 * Memory goes back a "page" of DRV_PAGES_UNIT system pages (8 KiB) at a time, in batches:
 * returning single 4 KiB pages took one system call per few pages (about 0.1 s of a
 * 100,000-job run in the kernel, pages.c). A larger unit is pinned longer: a page goes back
 * only when every entry on it is released, so with entries released in random order (jobs of
 * random lifetimes) a page of k entries lives about as long as the longest of k lifetimes. On
 * a million streamed jobs, 32 KiB pages (~89 jobs) held 361 MB at the peak, 8 KiB pages 340 MB
 * at the same system time, 4 KiB pages 318 MB at ~0.2 s more of it (docs/performance.md).
 *
 * Worked example, with an 8 KiB unit and 368-byte entries (a drv_job): unit 0 holds entries
 * 0..22 (entry 22 straddles units 0 and 1). Releasing entries 0..21 returns nothing; releasing 22
 * as well returns unit 0 (with the next batch). Pages stay pinned by any entry still in use, so
 * memory is at most one page per entry in use plus the fully used pages between them.
 */
#ifndef DROVER_PAGES_H
#define DROVER_PAGES_H

#include "drover/base.h"

enum {
    DRV_PAGES_UNIT = 2,  /* system pages per page returned */
    DRV_PAGES_BATCH = 32 /* pages returned per batch of system calls */
};

typedef struct drv_pages {
    unsigned char *base; /* entry i is at base + i * elem; zero-filled at reservation */
    size_t elem;         /* bytes per entry */
    size_t cap;          /* entries reserved */
    size_t len;          /* bytes reserved (whole pages when mapped) */
    size_t page;         /* bytes returned at a time (DRV_PAGES_UNIT system pages): a "page"
                            here; 0 when the memory is from the heap */
    uint16_t *left;      /* per page: entries overlapping it not released yet */
    size_t returned;     /* pages given back so far */
    bool guard;   /* also make returned pages inaccessible, so a stale read faults (costs a split
                     of the mapping per run of pages: for checked runs) */
    size_t npend; /* pages free of entries in use but not given back yet ... */
    size_t pend[DRV_PAGES_BATCH]; /* ... : they are, a batch at a time, one system call per
                                     run of adjacent pages (entries free in the same order as
                                     they were taken make long runs) */
} drv_pages;

/* Reserves cap zeroed entries of elem bytes. 0 or DRV_ENOMEM (p untouched then). */
int drv_pages_init(drv_pages *p, size_t elem, size_t cap);
/* Frees the array; accepts a zeroed p. */
void drv_pages_fini(drv_pages *p);
/* Releases entries [first, first + n): they must not be read or written again. Pages no
 * entry in use overlaps any more are returned, DRV_PAGES_BATCH at a time. Releasing an entry
 * twice is a caller bug. */
void drv_pages_release(drv_pages *p, size_t first, size_t n);

/* Returns the pages collected for the next batch now (a test, or a caller about to measure). */
void drv_pages_flush(drv_pages *p);

#endif
