/*
 * kthread.h - naming the threads src/kube starts (src/kube only).
 *
 * Why: `drover run` runs a dozen threads (informers, page fetchers, binders, the writer, the
 * lease, the progress collector); named, they can be told apart in top -H, perf's per-thread
 * reports and gdb, which is how the end-to-end benchmark's time is attributed (bench/e2e_bind.c).
 * Linux keeps at most 15 bytes of a name; longer names are cut. Elsewhere a no-op.
 */
#ifndef DROVER_KUBE_KTHREAD_H
#define DROVER_KUBE_KTHREAD_H

#ifdef __linux__
#include <sys/prctl.h>
#endif

/* Names the calling thread (at most 15 bytes are kept). */
static inline void drv_kthread_name(const char *name)
{
#ifdef __linux__
    prctl(PR_SET_NAME, name, 0, 0, 0);
#else
    (void)name;
#endif
}

#endif
