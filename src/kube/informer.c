/*
 * informer.c - list+watch cache of one resource kind (kube_informer.h).
 *
 * The cache is a hash table (drover/hashmap.h) of key -> {resourceVersion, caller's record}. A full
 * list stamps every entry it sees with a new epoch; entries left with an older stamp after a
 * complete list are gone from the server and are deleted (client-go's Replace). Watch events apply
 * one by one. Readers on other threads take the mutex. A caller that decodes documents
 * (ops.decode_doc) gets its lists and watch events as documents (no jansson tree per item or
 * event); drv_informer_apply's objects, jansson values, go to ops.decode.
 */
#include "drover/kube_informer.h"
#include "drover/hashmap.h"
#include "json.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct entry {
    char *key; /* owned; the cache table borrows it as its key */
    char rv[32];
    void *rec;
    uint32_t mark;                     /* epoch of the last list that saw it */
    int32_t ixv[DRV_INFORMER_INDEXES]; /* value filed under, per index (0: none) */
} entry;

/* The entries filed under one index value (a small vector). */
typedef struct ixbucket {
    entry **e;
    int32_t n, cap;
} ixbucket;

/* One index: value (an int key, never 0) -> its ixbucket. */
typedef struct index {
    drv_informer_index_fn fn;
    drv_hashmap *m;
} index_t;

struct drv_informer {
    drv_kube *k;
    char *path;
    int page, wto;
    drv_informer_ops ops;
    void *arg;
    pthread_mutex_t mu;
    drv_hashmap *cache; /* key -> entry */
    char rv[32];
    bool synced, need_list;
    bool holding; /* inside a run of watch events (ops.hold(true) was called; the informer's
                     thread alone reads and writes it) */
    uint32_t epoch;
    int fails; /* consecutive failed rounds, for back-off */
    drv_rng rng;
    drv_informer_stats st;
    index_t ix[DRV_INFORMER_INDEXES];
    int nix;
};

static int ix_add(index_t *x, int32_t v, entry *e)
{
    if (!v)
        return 0;
    ixbucket *b = drv_hashmap_get(x->m, DRV_HASHMAP_INT(v));
    if (!b) {
        if (!(b = drv_calloc(1, sizeof *b)))
            return DRV_ENOMEM;
        if (drv_hashmap_put(x->m, DRV_HASHMAP_INT(v), b) != 0) {
            drv_free(b);
            return DRV_ENOMEM;
        }
    }
    if (drv_grow(&b->e, sizeof *b->e, &b->cap, b->n + 1) != 0)
        return DRV_ENOMEM;
    b->e[b->n++] = e;
    return 0;
}

static void ix_remove(index_t *x, int32_t v, entry *e)
{
    ixbucket *b = v ? drv_hashmap_get(x->m, DRV_HASHMAP_INT(v)) : NULL;
    if (!b)
        return;
    for (int32_t i = 0; i < b->n; i++)
        if (b->e[i] == e) {
            b->e[i] = b->e[--b->n];
            break;
        }
    if (b->n == 0)
        drv_hashmap_remove(x->m, DRV_HASHMAP_INT(v)); /* frees b (the table's val_free) */
}

static void ixbucket_free(void *p)
{
    ixbucket *b = p;
    drv_free(b->e);
    drv_free(b);
}

/* Integer keys, each owning its ixbucket. */
static const drv_hashmap_type index_type = {
    .hash = drv_hashmap_hash_int, .equal = drv_hashmap_equal_int, .val_free = ixbucket_free};

/* Files e (whose record changed) under its current values. */
static int ix_refile(struct drv_informer *inf, entry *e)
{
    for (int i = 0; i < inf->nix; i++) {
        int32_t v = inf->ix[i].fn(e->rec, inf->arg);
        if (v == e->ixv[i])
            continue;
        ix_remove(&inf->ix[i], e->ixv[i], e);
        e->ixv[i] = 0;
        if (ix_add(&inf->ix[i], v, e) != 0)
            return DRV_ENOMEM;
        e->ixv[i] = v;
    }
    return 0;
}

int drv_informer_new(drv_informer **out, drv_kube *k, const char *path, int page,
                     int watch_timeout_s, const drv_informer_ops *ops, void *arg, drv_diag *d)
{
    *out = NULL;
    if (!ops->decode || !ops->release)
        return drv_fail(d, DRV_EINVAL, "informer %s: decode and release are required", path);
    drv_informer *inf = drv_calloc(1, sizeof *inf);
    if (!inf || !(inf->path = drv_strdup(path)) ||
        !(inf->cache = drv_hashmap_new(&drv_hashmap_borrowed_strings))) {
        if (inf)
            drv_free(inf->path);
        drv_free(inf);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    inf->k = k;
    inf->page = page > 0 ? page : 500;
    inf->wto = watch_timeout_s > 0 ? watch_timeout_s : 300;
    inf->ops = *ops;
    inf->arg = arg;
    inf->need_list = true;
    pthread_mutex_init(&inf->mu, NULL);
    drv_rng_seed(&inf->rng, (uint64_t)(uintptr_t)inf ^ (uint64_t)time(NULL));
    *out = inf;
    return 0;
}

void drv_informer_free(drv_informer *inf)
{
    if (!inf)
        return;
    drv_hashmap_iter it;
    drv_hashmap_iter_init(&it, inf->cache);
    for (void *v; drv_hashmap_next(&it, NULL, &v);) {
        entry *e = v;
        inf->ops.release(e->rec, inf->arg);
        drv_free(e->key);
        drv_free(e);
    }
    drv_hashmap_free(inf->cache); /* borrowed keys: frees only the table */
    for (int i = 0; i < inf->nix; i++)
        drv_hashmap_free(inf->ix[i].m);
    drv_free(inf->path);
    pthread_mutex_destroy(&inf->mu);
    drv_free(inf);
}

/* An object to apply: a jansson value (watch events, drv_informer_apply), or node obj of a
 * document (lists, when the caller decodes documents). */
typedef struct source {
    json_t *json;
    const drv_jdoc *doc;
    int32_t obj;
} source;

/* A string field of o's metadata (the node mdoc of o->doc, or the value mjson), or NULL. */
static const char *meta_str(const source *o, int32_t mdoc, json_t *mjson, const char *field)
{
    if (o->doc)
        return drv_jdoc_str(o->doc, drv_jdoc_get(o->doc, mdoc, field));
    return json_string_value(json_object_get(mjson, field));
}

/* "namespace/name" or "name"; 0, or DRV_EPARSE when the object has no name. */
static int object_key(const source *o, char *key, size_t n, const char **rv)
{
    /* (the metadata found once: a document's member look-up walks its object's members) */
    int32_t md = o->doc ? drv_jdoc_get(o->doc, o->obj, "metadata") : -1;
    json_t *mj = o->doc ? NULL : json_object_get(o->json, "metadata");
    const char *name = meta_str(o, md, mj, "name"), *ns = meta_str(o, md, mj, "namespace");
    *rv = meta_str(o, md, mj, "resourceVersion");
    if (!name || !*name)
        return DRV_EPARSE;
    if (ns && *ns)
        snprintf(key, n, "%s/%s", ns, name);
    else
        snprintf(key, n, "%s", name);
    return 0;
}

/* Adds or updates o (lock held). mark: the epoch to stamp, or 0 to keep the entry's. */
static int upsert(drv_informer *inf, const source *o, uint32_t mark)
{
    char key[512];
    const char *rv;
    if (object_key(o, key, sizeof key, &rv) != 0) {
        inf->st.decode_errors++;
        drv_log(DRV_LOG_WARN, "informer %s: an object without metadata.name: skipped", inf->path);
        return 0;
    }
    entry *e = drv_hashmap_get(inf->cache, key);
    if (e && rv && !strcmp(e->rv, rv)) { /* unchanged */
        if (mark)
            e->mark = mark;
        return 0;
    }
    drv_diag d = {{0}};
    void *rec = o->doc ? inf->ops.decode_doc(o->doc, o->obj, inf->arg, &d)
                       : inf->ops.decode(o->json, inf->arg, &d);
    if (!rec) {
        inf->st.decode_errors++;
        drv_log(DRV_LOG_WARN, "informer %s: %s: %s: skipped", inf->path, key, d.msg);
        return 0;
    }
    if (e) {
        void *old = e->rec;
        e->rec = rec;
        snprintf(e->rv, sizeof e->rv, "%s", rv ? rv : "");
        if (mark)
            e->mark = mark;
        int rc = ix_refile(inf, e);
        if (inf->ops.on_update)
            inf->ops.on_update(key, old, rec, inf->arg);
        inf->ops.release(old, inf->arg);
        return rc;
    }
    e = drv_calloc(1, sizeof *e);
    if (!e || !(e->key = drv_strdup(key)) || drv_hashmap_put(inf->cache, e->key, e) != 0) {
        if (e)
            drv_free(e->key);
        drv_free(e);
        inf->ops.release(rec, inf->arg);
        return DRV_ENOMEM;
    }
    e->rec = rec;
    snprintf(e->rv, sizeof e->rv, "%s", rv ? rv : "");
    e->mark = mark ? mark : inf->epoch;
    if (ix_refile(inf, e) != 0)
        return DRV_ENOMEM;
    if (inf->ops.on_add)
        inf->ops.on_add(key, rec, inf->arg);
    return 0;
}

static void remove_entry(drv_informer *inf, entry *e)
{
    drv_hashmap_remove(inf->cache, e->key);
    for (int i = 0; i < inf->nix; i++)
        ix_remove(&inf->ix[i], e->ixv[i], e);
    if (inf->ops.on_delete)
        inf->ops.on_delete(e->key, e->rec, inf->arg);
    inf->ops.release(e->rec, inf->arg);
    drv_free(e->key);
    drv_free(e);
}

static int list_item(json_t *item, void *arg)
{
    drv_informer *inf = arg;
    source o = {.json = item};
    pthread_mutex_lock(&inf->mu);
    int rc = upsert(inf, &o, inf->epoch);
    pthread_mutex_unlock(&inf->mu);
    return rc;
}

static int list_doc(const drv_jdoc *doc, void *arg)
{
    drv_informer *inf = arg;
    source o = {.doc = doc, .obj = 0};
    pthread_mutex_lock(&inf->mu);
    int rc = upsert(inf, &o, inf->epoch);
    pthread_mutex_unlock(&inf->mu);
    return rc;
}

/* Adds one to a statistic under the lock (readers are on other threads). */
static void bump(drv_informer *inf, long *field)
{
    pthread_mutex_lock(&inf->mu);
    (*field)++;
    pthread_mutex_unlock(&inf->mu);
}

static int relist(drv_informer *inf, drv_diag *d)
{
    char rv[32];
    inf->epoch++;
    bump(inf, &inf->st.lists);
    int rc = inf->ops.decode_doc ? drv_kube_list_docs(inf->k, inf->path, NULL, inf->page, list_doc,
                                                      inf, rv, sizeof rv, d)
                                 : drv_kube_list(inf->k, inf->path, NULL, inf->page, list_item, inf,
                                                 rv, sizeof rv, d);
    if (rc)
        return rc;
    pthread_mutex_lock(&inf->mu);
    drv_hashmap_iter it;
    drv_hashmap_iter_init(&it, inf->cache);
    for (void *v; drv_hashmap_next(&it, NULL, &v);)
        if (((entry *)v)->mark != inf->epoch)
            remove_entry(inf, v); /* gone while we were not watching */
    snprintf(inf->rv, sizeof inf->rv, "%s", rv);
    inf->synced = true;
    pthread_mutex_unlock(&inf->mu);
    if (inf->ops.on_listed)
        inf->ops.on_listed(inf->arg);
    return 0;
}

/* A run of watch events ends (or the stream did inside one): the consumer is told. */
static void hold_end(drv_informer *inf)
{
    if (inf->holding)
        inf->ops.hold(false, inf->arg);
    inf->holding = false;
}

/* One watch event applied to the cache (its handlers called under the lock). */
static int apply_event(drv_informer *inf, const drv_watch_event *ev)
{
    if (ev->type == DRV_WATCH_BOOKMARK)
        return 0;
    source o = {.json = ev->object, .doc = ev->doc, .obj = ev->obj};
    pthread_mutex_lock(&inf->mu);
    inf->st.events++;
    int rc = 0;
    if (ev->type == DRV_WATCH_DELETED) {
        char key[512];
        const char *rv;
        if (object_key(&o, key, sizeof key, &rv) == 0) {
            entry *e = drv_hashmap_get(inf->cache, key);
            if (e)
                remove_entry(inf, e);
        }
    } else {
        rc = upsert(inf, &o, 0);
    }
    pthread_mutex_unlock(&inf->mu);
    return rc;
}

/* A watch event applied; a run of them (ev->more) held for the consumer from its first to its
 * last (ops.hold). */
static int on_event(const drv_watch_event *ev, void *arg)
{
    drv_informer *inf = arg;
    if (ev->more && !inf->holding && inf->ops.hold) {
        inf->ops.hold(true, inf->arg);
        inf->holding = true;
    }
    int rc = apply_event(inf, ev);
    if (!ev->more)
        hold_end(inf);
    return rc;
}

int drv_informer_apply(drv_informer *inf, int type, json_t *obj)
{
    drv_watch_event ev = {.type = type, .object = obj, .obj = -1, .rv = ""};
    return apply_event(inf, &ev);
}

/* Sleeps ms in slices, returning early when *stop is set. */
static void nap(int ms, atomic_int *stop)
{
    for (int left = ms; left > 0 && !(stop && atomic_load(stop)); left -= 20) {
        struct timespec ts = {0, (left < 20 ? left : 20) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int drv_informer_step(drv_informer *inf, atomic_int *stop, drv_diag *d)
{
    if (inf->need_list) {
        int rc = relist(inf, d);
        if (rc == DRV_ENOMEM)
            return rc;
        if (rc) { /* expired continue token, transport failure: try again after a pause */
            inf->fails++;
            drv_log(DRV_LOG_WARN, "informer %s: list: %s", inf->path, d->msg);
            nap(drv_kube_backoff_ms(inf->fails, 100, 5000, &inf->rng), stop);
            return 0;
        }
        inf->need_list = false;
        inf->fails = 0;
    }
    char rv[32], last[32];
    pthread_mutex_lock(&inf->mu);
    snprintf(rv, sizeof rv, "%s", inf->rv);
    pthread_mutex_unlock(&inf->mu);
    bump(inf, &inf->st.watches);
    int rc = inf->ops.decode_doc ? drv_kube_watch_docs(inf->k, inf->path, rv, inf->wto, on_event,
                                                       inf, last, sizeof last, stop, d)
                                 : drv_kube_watch(inf->k, inf->path, rv, inf->wto, on_event, inf,
                                                  last, sizeof last, stop, d);
    hold_end(inf); /* (a stream that failed inside a run) */
    pthread_mutex_lock(&inf->mu);
    snprintf(inf->rv, sizeof inf->rv, "%s", last);
    pthread_mutex_unlock(&inf->mu);
    if (rc == 0) {
        inf->fails = 0;
    } else if (rc == DRV_KUBE_RELIST || rc == DRV_EPARSE) {
        bump(inf, &inf->st.relists);
        inf->need_list = true;
        if (rc == DRV_EPARSE)
            drv_log(DRV_LOG_WARN, "informer %s: %s; listing again", inf->path, d->msg);
    } else if (rc == DRV_EIO) {
        bump(inf, &inf->st.reconnects);
        inf->fails++;
        nap(drv_kube_backoff_ms(inf->fails, 50, 5000, &inf->rng), stop);
    } else {
        return rc; /* out of memory, or a handler's error */
    }
    return 0;
}

int drv_informer_run(drv_informer *inf, atomic_int *stop, drv_diag *d)
{
    while (!(stop && atomic_load(stop))) {
        int rc = drv_informer_step(inf, stop, d);
        if (rc)
            return rc;
    }
    return 0;
}

int drv_informer_add_index(drv_informer *inf, drv_informer_index_fn fn)
{
    pthread_mutex_lock(&inf->mu);
    int rc = DRV_ERANGE;
    if (inf->nix < DRV_INFORMER_INDEXES) {
        index_t *x = &inf->ix[inf->nix];
        x->fn = fn;
        rc = (x->m = drv_hashmap_new(&index_type)) ? inf->nix++ : DRV_ENOMEM;
        /* objects cached already are filed now */
        drv_hashmap_iter it;
        drv_hashmap_iter_init(&it, inf->cache);
        for (void *p; rc >= 0 && drv_hashmap_next(&it, NULL, &p);) {
            entry *e = p;
            int32_t v = fn(e->rec, inf->arg);
            if (ix_add(x, v, e) != 0)
                rc = DRV_ENOMEM;
            else
                e->ixv[inf->nix - 1] = v;
        }
    }
    pthread_mutex_unlock(&inf->mu);
    return rc;
}

size_t drv_informer_by_index(drv_informer *inf, int idx, int32_t v,
                             void (*fn)(const char *key, void *rec, void *arg), void *arg)
{
    pthread_mutex_lock(&inf->mu);
    size_t n = 0;
    if (idx >= 0 && idx < inf->nix && v) {
        ixbucket *b = drv_hashmap_get(inf->ix[idx].m, DRV_HASHMAP_INT(v));
        for (int32_t i = 0; b && i < b->n; i++, n++)
            if (fn)
                fn(b->e[i]->key, b->e[i]->rec, arg);
    }
    pthread_mutex_unlock(&inf->mu);
    return n;
}

bool drv_informer_synced(drv_informer *inf)
{
    pthread_mutex_lock(&inf->mu);
    bool s = inf->synced;
    pthread_mutex_unlock(&inf->mu);
    return s;
}

void drv_informer_rv(drv_informer *inf, char *rv, size_t n)
{
    pthread_mutex_lock(&inf->mu);
    snprintf(rv, n, "%s", inf->rv);
    pthread_mutex_unlock(&inf->mu);
}

size_t drv_informer_len(drv_informer *inf)
{
    pthread_mutex_lock(&inf->mu);
    size_t n = drv_hashmap_len(inf->cache);
    pthread_mutex_unlock(&inf->mu);
    return n;
}

void drv_informer_foreach(drv_informer *inf,
                          void (*fn)(const char *key, const char *rv, void *rec, void *arg),
                          void *arg)
{
    pthread_mutex_lock(&inf->mu);
    drv_hashmap_iter it;
    drv_hashmap_iter_init(&it, inf->cache);
    for (void *p; drv_hashmap_next(&it, NULL, &p);) {
        entry *e = p;
        fn(e->key, e->rv, e->rec, arg);
    }
    pthread_mutex_unlock(&inf->mu);
}

/* Orders "key@rv" lines by key alone, as strcmp orders the keys. */
static int cmp_line(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    size_t nx = strcspn(x, "@"), ny = strcspn(y, "@");
    int c = strncmp(x, y, nx < ny ? nx : ny);
    return c ? c : (nx > ny) - (nx < ny);
}

char *drv_informer_dump(drv_informer *inf)
{
    pthread_mutex_lock(&inf->mu);
    char **lines = drv_calloc(drv_hashmap_len(inf->cache) + 1, sizeof *lines);
    size_t k = 0, total = 1;
    bool oom = !lines;
    drv_hashmap_iter it;
    drv_hashmap_iter_init(&it, inf->cache);
    for (void *p; !oom && drv_hashmap_next(&it, NULL, &p);) {
        entry *e = p;
        size_t n = strlen(e->key) + strlen(e->rv) + 3;
        if (!(lines[k] = drv_malloc(n))) {
            oom = true;
            break;
        }
        snprintf(lines[k++], n, "%s@%s\n", e->key, e->rv);
        total += n;
    }
    pthread_mutex_unlock(&inf->mu);
    char *out = oom ? NULL : drv_malloc(total);
    if (out) {
        qsort(lines, k, sizeof *lines, cmp_line);
        size_t w = 0;
        out[0] = 0;
        for (size_t i = 0; i < k; i++)
            w += (size_t)snprintf(out + w, total - w, "%s", lines[i]);
    }
    for (size_t i = 0; lines && i < k; i++)
        drv_free(lines[i]);
    drv_free(lines);
    return out;
}

drv_informer_stats drv_informer_get_stats(drv_informer *inf)
{
    pthread_mutex_lock(&inf->mu);
    drv_informer_stats s = inf->st;
    pthread_mutex_unlock(&inf->mu);
    return s;
}
