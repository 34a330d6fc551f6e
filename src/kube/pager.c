/*
 * pager.c - drv_kube_list (json.h): a list read page by page, the next page fetched while this
 * one is decoded.
 *
 * Why: a page costs the API server its serialisation and the client its decoding, about the
 * same (~8 ms each for 500 pods on the test server); one after the other, a 16,000-pod list
 * takes the sum of both. The continue token is in the page's metadata, which the server writes
 * before the items, so the next request can go out as soon as a page has arrived.
 *
 * How: a fetcher thread, started for the list and joined before it returns, GETs the pages
 * with the client k (no other thread uses k meanwhile: the caller is inside drv_kube_list). A
 * page's bytes are kept as they arrive and only scanned (listdec.h without a callback: items
 * skipped, metadata read) for the continue token, up to it (meta_only: the metadata comes
 * before the items; the rest is checked when the caller decodes the page); the page goes to a queue
 * of at most AHEAD pages, and the fetcher asks for the next one. The caller's thread takes pages
 * in order and decodes them with the item callback. So at most AHEAD + 1 pages are in memory
 * (one being decoded, AHEAD waiting or arriving: the fetcher asks for a page only while fewer
 * than AHEAD wait): a page is asked for only once the caller has begun the one AHEAD pages
 * before it.
 *
 * Why AHEAD is 2, not 1: with one page waiting, the next request went out only when the caller
 * had taken that page, i.e. had finished the one before, and on a busy machine the caller's
 * decode of a page (its items into the cache and the controller's queue) now and then takes
 * longer than the server's next page: the server's list then waits for the request. Timed in
 * e2e_bind's 16,000-pod list (32 pages of 500): from a page's last byte to the next request,
 * median 0.06-0.20 ms per page, 13-22 ms per list in all, with one page waiting; 0.014-0.018
 * ms per page with two (the wait is then the request's own, unless the caller falls two pages
 * behind). Memory: one more page at most (~150 kB for plain pods, ~1.2 MB recorded-size).
 *
 * Ends: the fetcher's error (410 Expired -> DRV_KUBE_RELIST, transport, parse) reaches the
 * caller after the pages before it, in order; the caller's error (its callback's) stops the
 * fetcher before its next request.
 */
#include "json.h"
#include "kthread.h"
#include "listdec.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* A fetched page, or the end of the list (last: the fetcher stops after it). */
typedef struct fetched {
    drv_kbuf body; /* the page's bytes (a 2xx answer), owned */
    int rc;        /* 0, or why the list ends here (d: the message) */
    drv_diag d;
    bool last;
} fetched;

/* Pages fetched ahead of the caller's, at most (see the top). */
enum { AHEAD = 2 };

typedef struct pager {
    drv_kube *k;
    const char *path, *query, *what;
    int limit;
    pthread_mutex_t mu; /* guards the four below */
    pthread_cond_t cv;
    fetched slot[AHEAD]; /* the pages waiting for the caller: nfull of them from head, in order */
    int head, nfull;
    bool stop;
} pager;

/* The page path with query, limit and continue (drv_malloc'd), or NULL. */
static char *page_path(const pager *p, const char *cont)
{
    size_t len = strlen(p->path) + (p->query ? strlen(p->query) : 0) + strlen(cont) + 64;
    char *s = drv_malloc(len);
    if (!s)
        return NULL;
    int w = snprintf(s, len, "%s?", p->path);
    if (p->query && *p->query)
        w += snprintf(s + w, len - (size_t)w, "%s&", p->query);
    if (p->limit > 0)
        w += snprintf(s + w, len - (size_t)w, "limit=%d&", p->limit);
    if (*cont)
        w += snprintf(s + w, len - (size_t)w, "continue=%s&", cont);
    s[w - 1] = 0; /* the trailing '?' or '&' */
    return s;
}

/* Fetches one page into f; *cont (n bytes) receives its continue token ("" at the end). */
static void fetch_page(pager *p, fetched *f, char *cont, size_t n)
{
    char *path = page_path(p, cont);
    if (!path) {
        f->rc = drv_fail(&f->d, DRV_ENOMEM, "out of memory");
        return;
    }
    drv_list_decoder scan;
    drv_list_decoder_init(&scan, p->what, NULL, NULL);
    scan.raw = &f->body;
    scan.meta_only = true; /* (the caller's decode of the page checks the rest) */
    long status = 0;
    f->rc = drv_kube_get_page(p->k, path, &scan, &status, &f->d);
    drv_free(path);
    if (f->rc == 0) {
        const char *c = drv_list_decoder_continue(&scan);
        if (strlen(c) >= n)
            f->rc = drv_fail(&f->d, DRV_ERANGE, "%s: continue token longer than %zu bytes", p->what,
                             n - 1);
        snprintf(cont, n, "%s", c);
    } else if (status == 410) {
        f->rc = DRV_KUBE_RELIST; /* the continue token expired: list again from the start */
    }
    drv_list_decoder_fini(&scan);
    f->last = f->rc != 0 || !*cont;
}

static void *fetcher_main(void *arg)
{
    pager *p = arg;
    char cont[4096] = "", name[16];
    const char *res = strrchr(p->path, '/');
    snprintf(name, sizeof name, "drv-pg-%s", res ? res + 1 : p->path);
    drv_kthread_name(name);
    for (bool last = false; !last;) {
        pthread_mutex_lock(&p->mu);
        while (p->nfull == AHEAD && !p->stop) /* AHEAD pages ahead at most */
            pthread_cond_wait(&p->cv, &p->mu);
        bool stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        fetched f;
        memset(&f, 0, sizeof f);
        fetch_page(p, &f, cont, sizeof cont);
        last = f.last;
        pthread_mutex_lock(&p->mu);
        p->slot[(p->head + p->nfull) % AHEAD] = f;
        p->nfull++;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* The next page in order (waits for it). */
static fetched take(pager *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->nfull == 0)
        pthread_cond_wait(&p->cv, &p->mu);
    fetched f = p->slot[p->head];
    p->head = (p->head + 1) % AHEAD;
    p->nfull--;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return f;
}

/* Decodes one fetched page with the caller's callback; rv (n bytes) follows the metadata. */
static int decode_page(const pager *p, fetched *f, drv_kube_item_cb cb, drv_kube_doc_cb doc_cb,
                       void *arg, char *rv, size_t n, drv_diag *d)
{
    drv_list_decoder ld;
    drv_list_decoder_init(&ld, p->what, cb, arg);
    ld.doc_cb = doc_cb;
    ld.skip = drv_kube_unread(p->k);
    int rc = drv_list_decoder_feed(&ld, f->body.p ? f->body.p : "", f->body.n, d);
    if (rc == 0)
        rc = drv_list_decoder_finish(&ld, d);
    if (rc == 0 && (!ld.meta || !ld.has_items))
        rc = drv_fail(d, DRV_EPARSE, "%s: a list must have items and metadata", p->what);
    if (rc == 0 && n && *drv_list_decoder_rv(&ld))
        snprintf(rv, n, "%s", drv_list_decoder_rv(&ld));
    drv_list_decoder_fini(&ld);
    return rc;
}

/* drv_kube_list with items as jansson values (cb) or as documents (doc_cb). */
static int list(drv_kube *k, const char *path, const char *query, int limit, drv_kube_item_cb cb,
                drv_kube_doc_cb doc_cb, void *arg, char *rv, size_t n, drv_diag *d)
{
    if (n)
        rv[0] = 0;
    char what[200];
    snprintf(what, sizeof what, "GET %s", path);
    pager p = {.k = k, .path = path, .query = query, .what = what, .limit = limit};
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_t t;
    int rc = 0;
    if (pthread_create(&t, NULL, fetcher_main, &p) != 0) {
        rc = drv_fail(d, DRV_ENOMEM, "%s: cannot start the page fetcher", what);
    } else {
        for (bool last = false; !last;) {
            fetched f = take(&p);
            last = f.last;
            if (f.rc == 0) {
                rc = decode_page(&p, &f, cb, doc_cb, arg, rv, n, d);
            } else {
                rc = f.rc; /* the fetcher's error, after every page before it */
                if (d)
                    *d = f.d;
            }
            drv_free(f.body.p);
            if (rc && !last) { /* the caller's error: no more requests */
                pthread_mutex_lock(&p.mu);
                p.stop = true;
                pthread_cond_broadcast(&p.cv);
                pthread_mutex_unlock(&p.mu);
                break;
            }
        }
        pthread_join(t, NULL);
        for (int i = 0; i < p.nfull; i++) /* pages fetched after the caller's error */
            drv_free(p.slot[(p.head + i) % AHEAD].body.p);
    }
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    return rc;
}

int drv_kube_list(drv_kube *k, const char *path, const char *query, int limit, drv_kube_item_cb cb,
                  void *arg, char *rv, size_t n, drv_diag *d)
{
    return list(k, path, query, limit, cb, NULL, arg, rv, n, d);
}

int drv_kube_list_docs(drv_kube *k, const char *path, const char *query, int limit,
                       drv_kube_doc_cb cb, void *arg, char *rv, size_t n, drv_diag *d)
{
    return list(k, path, query, limit, NULL, cb, arg, rv, n, d);
}
