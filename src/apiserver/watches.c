/*
 * watches.c - the test API server's watch streams: from a resourceVersion, the events of the
 * window newer than it (an ERROR 410 when it is older than the window), then each new one as it
 * happens, with bookmarks, selector transitions (MODIFIED becoming ADDED or DELETED), and the
 * faults that cut, corrupt or expire open streams.
 */
#include "apiserver_int.h"

struct watch {
    drv_apiserver *s;
    struct route rt;
    struct selector ls, fs;
    uint64_t rv; /* last resourceVersion sent */
    bool bookmarks;
    struct timespec deadline;
    int drop_gen, expire_gen, corrupt_gen;
    char *buf; /* pending output */
    size_t len, off, cap;
    bool done; /* end the stream once buf is drained */
    struct timespec last_send;
};

static void ts_now(struct timespec *t)
{
    clock_gettime(CLOCK_MONOTONIC, t);
}

static long ms_since(const struct timespec *a)
{
    struct timespec n;
    ts_now(&n);
    return (long)((n.tv_sec - a->tv_sec) * 1000 + (n.tv_nsec - a->tv_nsec) / 1000000);
}

static int wbuf_line(struct watch *w, const char *type, json_t *obj)
{
    json_t *ev = json_pack("{s:s,s:O}", "type", type, "object", obj);
    char *line = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    if (!line)
        return -1;
    size_t l = strlen(line);
    if (w->len + l + 1 > w->cap) {
        size_t nc = (w->len + l + 1) * 2;
        char *nb = drv_realloc(w->buf, nc);
        if (!nb) {
            free(line);
            return -1;
        }
        w->buf = nb;
        w->cap = nc;
    }
    memcpy(w->buf + w->len, line, l);
    w->buf[w->len + l] = '\n';
    w->len += l + 1;
    free(line);
    return 0;
}

static bool watch_scope(const struct watch *w, json_t *o)
{
    if (w->rt.ns[0] && strcmp(srv_str_or(srv_path_get(o, "metadata.namespace"), ""), w->rt.ns))
        return false;
    if (w->rt.name[0] && strcmp(srv_str_or(srv_path_get(o, "metadata.name"), ""), w->rt.name))
        return false;
    return srv_sel_match(&w->ls, o, false) && srv_sel_match(&w->fs, o, true);
}

static void expired_line(struct watch *w, uint64_t oldest)
{
    char msg[128];
    snprintf(msg, sizeof msg, "too old resource version: %llu (%llu)", (unsigned long long)w->rv,
             (unsigned long long)oldest);
    json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1",
                           "metadata", "status", "Failure", "message", msg, "reason", "Expired",
                           "code", 410);
    wbuf_line(w, "ERROR", st);
    json_decref(st);
    w->done = true;
}

/* Appends every ring event newer than w->rv that concerns this watch (mutex held). */
static void collect_events(struct watch *w)
{
    drv_apiserver *s = w->s;
    if (w->rv < s->compacted) {
        expired_line(w, s->compacted + 1);
        return;
    }
    /* The ring is in resourceVersion order: the first event newer than w->rv is found by
     * bisection, so a wake-up costs the new events, not the whole window. */
    int lo = 0, hi = s->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (s->ring[(s->head + mid) % s->cap].rv <= w->rv)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo; i < s->n; i++) {
        struct wevent *e = &s->ring[(s->head + i) % s->cap];
        if (e->rv <= w->rv || e->rt != w->rt.rt)
            continue;
        bool now = watch_scope(w, e->obj);
        bool before = e->prev && watch_scope(w, e->prev);
        const char *type = e->type;
        if (!strcmp(type, "DELETED"))
            type = before ? "DELETED" : NULL;
        else if (!strcmp(type, "MODIFIED"))
            type = now && before ? "MODIFIED" : now ? "ADDED" : before ? "DELETED" : NULL;
        else
            type = now ? "ADDED" : NULL;
        if (type)
            wbuf_line(w, type, e->obj);
        w->rv = e->rv;
    }
    if (w->rv < s->rv)
        w->rv = s->rv;
}

ssize_t srv_watch_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    struct watch *w = cls;
    drv_apiserver *s = w->s;
    for (;;) {
        if (w->off < w->len) {
            size_t n = w->len - w->off < max ? w->len - w->off : max;
            memcpy(out, w->buf + w->off, n);
            w->off += n;
            if (w->off == w->len)
                w->off = w->len = 0;
            ts_now(&w->last_send);
            return (ssize_t)n;
        }
        if (w->done)
            return MHD_CONTENT_READER_END_OF_STREAM;
        pthread_mutex_lock(&s->mu);
        if (s->stopping) { /* a server shutting down ends its watches as a timeout does */
            pthread_mutex_unlock(&s->mu);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        if (s->drop_gen != w->drop_gen) { /* a dropped connection: no terminating chunk */
            pthread_mutex_unlock(&s->mu);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (s->expire_gen != w->expire_gen) {
            w->expire_gen = s->expire_gen;
            expired_line(w, s->compacted + 1);
            pthread_mutex_unlock(&s->mu);
            continue;
        }
        if (s->corrupt_gen != w->corrupt_gen) { /* a raw line, as a broken server might send */
            w->corrupt_gen = s->corrupt_gen;
            size_t l = strlen(s->corrupt);
            char *nb = w->len + l + 1 > w->cap ? drv_realloc(w->buf, w->len + l + 1) : w->buf;
            if (nb) {
                if (w->len + l + 1 > w->cap)
                    w->cap = w->len + l + 1;
                w->buf = nb;
                memcpy(w->buf + w->len, s->corrupt, l);
                w->buf[w->len + l] = '\n';
                w->len += l + 1;
            }
            pthread_mutex_unlock(&s->mu);
            continue;
        }
        collect_events(w);
        if (w->len == 0) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            if (now.tv_sec > w->deadline.tv_sec ||
                (now.tv_sec == w->deadline.tv_sec && now.tv_nsec >= w->deadline.tv_nsec)) {
                pthread_mutex_unlock(&s->mu);
                return MHD_CONTENT_READER_END_OF_STREAM;
            }
            if (w->bookmarks && ms_since(&w->last_send) >= s->bookmark_ms) {
                char rvb[32];
                snprintf(rvb, sizeof rvb, "%llu", (unsigned long long)w->rv);
                json_t *bm = json_pack("{s:s,s:s,s:{s:s,s:n}}", "kind", SRV_TYPES[w->rt.rt].kind,
                                       "apiVersion", srv_api_version(w->rt.rt), "metadata",
                                       "resourceVersion", rvb, "creationTimestamp");
                if (w->rt.rt == R_PODS) {
                    json_object_set_new(bm, "spec", json_pack("{s:n}", "containers"));
                    json_object_set_new(bm, "status", json_object());
                }
                wbuf_line(w, "BOOKMARK", bm);
                json_decref(bm);
            } else {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += 50 * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                    until.tv_sec++;
                    until.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&s->cv, &s->mu, &until);
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
}

void srv_watch_free(void *cls)
{
    struct watch *w = cls;
    if (!w)
        return;
    drv_free(w->buf);
    drv_free(w);
}

/* Sets up a watch; returns NULL with r filled on an error answer. */
struct watch *srv_start_watch(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt,
                              struct resp *r)
{
    struct watch *w = drv_calloc(1, sizeof *w);
    if (!w) {
        srv_set_status(r, 500, "InternalError", NULL, NULL, NULL, false, "out of memory");
        return NULL;
    }
    w->s = s;
    w->rt = *rt;
    char err[512];
    if (srv_parse_selector(srv_qarg(c, "labelSelector"), false, &w->ls, err, sizeof err) ||
        srv_parse_selector(srv_qarg(c, "fieldSelector"), true, &w->fs, err, sizeof err)) {
        srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false, "%s", err);
        drv_free(w);
        return NULL;
    }
    /* A watch on one object arrives as fieldSelector=metadata.name=NAME from clients. */
    const char *bm = srv_qarg(c, "allowWatchBookmarks");
    w->bookmarks = bm && (!strcmp(bm, "true") || !strcmp(bm, "1"));
    long to = srv_qarg(c, "timeoutSeconds") ? strtol(srv_qarg(c, "timeoutSeconds"), NULL, 10) : 0;
    if (to <= 0)
        to = DEF_WATCH_TIMEOUT_S;
    if (to > MAX_WATCH_TIMEOUT_S)
        to = MAX_WATCH_TIMEOUT_S;
    clock_gettime(CLOCK_REALTIME, &w->deadline);
    w->deadline.tv_sec += to;
    ts_now(&w->last_send);
    w->drop_gen = s->drop_gen;
    w->corrupt_gen = s->corrupt_gen;
    w->expire_gen = s->expire_gen;
    const char *rvq = srv_qarg(c, "resourceVersion");
    if (!rvq || !*rvq || !strcmp(rvq, "0")) {
        /* "Get state and start at most recent": synthetic ADDED for what exists now. */
        size_t nk = 0;
        const char **keys = srv_sorted_keys(s->store[rt->rt], &nk);
        for (size_t i = 0; keys && i < nk; i++) {
            json_t *o = json_object_get(s->store[rt->rt], keys[i]);
            if (watch_scope(w, o))
                wbuf_line(w, "ADDED", o);
        }
        drv_free(keys);
        w->rv = s->rv;
    } else {
        char *end;
        w->rv = strtoull(rvq, &end, 10);
        if (*end) {
            srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                           "resourceVersion: Invalid value: \"%s\": must be a number", rvq);
            drv_free(w);
            return NULL;
        }
    }
    return w;
}
