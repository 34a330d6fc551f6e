/*
 * apiserver.c - the in-memory Kubernetes API server used by Drover's tests (see apiserver.h).
 *
 * Why: no cluster is reachable from test machines, yet the client, the informers and kubectl
 * must be exercised against something that answers like kube-apiserver v1.24. Everything here
 * follows the recorded exchanges in tests/fixtures/k8s/transcripts (shapes, codes, reasons).
 *
 * How: libmicrohttpd with one thread per connection, so a watch can block in its content
 * reader. One mutex guards the store: per resource type a jansson object mapping
 * "namespace/name" (or "name") to the stored object. Every write bumps a global
 * resourceVersion counter and appends {type, rv, object, previous object} to a ring of the last
 * `window` events; a watch from resourceVersion R replays the ring entries newer than R, and
 * answers an ERROR 410 Expired event when R is older than the oldest event still held (as the
 * real watch cache does). Watchers sleep on a condition variable woken by every write, with a
 * 50 ms cap so stop / drop / expire requests are noticed promptly.
 *
 * Selectors: a field selector that stops (starts) matching turns MODIFIED into DELETED (ADDED),
 * like the real server. Lists are sorted by key (etcd order; the sorted keys are cached until a
 * key is added or removed, so a page costs its items, not a sort of the store) and paginated
 * with a base64url continue token {"v":"meta.k8s.io/v1","rv":N,"start":"key\u0000"}. A page
 * shows the objects as they are now (not as of N, as etcd would: the informer's watch from N
 * replays what changed, so the result is the same); a token whose N is older than the window's
 * start gets 410 Expired, as a compacted etcd revision does.
 *
 * Bounds: request bodies up to 4 MiB; window up to 100000 events; a watch lasts at most its
 * timeoutSeconds (default 30 s, capped at 300 s).
 */
#include "apiserver.h"
#include "drover/clock.h"

#include <gnutls/gnutls.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

#define MAX_BODY (4u << 20)
/* The query text kept per line of the request log (opts.request_log); longer is cut. */
#define MAX_LOGGED_QUERY 512
#define PG_CRD "podgroups.scheduling.x-k8s.io"
#define QUEUE_CRD "queues.drover.dev"
#define DEF_WINDOW 200
#define MAX_WINDOW 100000
#define DEF_WATCH_TIMEOUT_S 30
#define MAX_WATCH_TIMEOUT_S 300

enum rtype_id {
    R_NAMESPACES,
    R_NODES,
    R_PODS,
    R_CONFIGMAPS,
    R_EVENTS,
    R_LEASES,
    R_CRDS,
    R_TJ,
    R_SERVICES,
    R_PG,
    R_PC,
    R_QUEUE,
    R_N
};

struct rtype {
    const char *group;   /* "" for core */
    const char *version; /* "v1" */
    const char *plural;  /* URL segment and Status details.kind */
    const char *kind;    /* object kind */
    bool namespaced;     /* lives under /namespaces/NS/ */
    bool status;         /* has a status subresource: main writes keep status */
    bool generation;     /* metadata.generation is kept and bumped on spec change */
    bool custom;         /* a custom resource: lists keep kind/apiVersion, no strategic merge */
};

static const struct rtype RT[R_N] = {
    [R_NAMESPACES] = {"", "v1", "namespaces", "Namespace", false, true, false, false},
    [R_NODES] = {"", "v1", "nodes", "Node", false, true, false, false},
    [R_PODS] = {"", "v1", "pods", "Pod", true, true, false, false},
    [R_CONFIGMAPS] = {"", "v1", "configmaps", "ConfigMap", true, false, false, false},
    [R_EVENTS] = {"", "v1", "events", "Event", true, false, false, false},
    [R_LEASES] = {"coordination.k8s.io", "v1", "leases", "Lease", true, false, false, false},
    [R_CRDS] = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", false, true, true, false},
    [R_TJ] = {"drover.dev", "v1alpha1", "trainingjobs", "TrainingJob", true, true, true, true},
    [R_SERVICES] = {"", "v1", "services", "Service", true, true, false, false},
    [R_PG] = {"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", true, true, true, true},
    [R_PC] = {"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false, false, false,
              false},
    [R_QUEUE] = {"drover.dev", "v1alpha1", "queues", "Queue", false, true, true, true},
};

struct wevent {
    uint64_t rv;      /* resourceVersion of this change */
    int rt;           /* enum rtype_id */
    const char *type; /* ADDED, MODIFIED, DELETED */
    json_t *obj;      /* object after the change (DELETED: last state with the new rv) */
    json_t *prev;     /* object before the change, NULL for ADDED */
};

struct fgdel {
    int rt;
    char *key;
    long seq; /* request number at which the foreground delete was accepted */
};

struct drv_apiserver {
    struct MHD_Daemon *mhd;
    uint16_t port;
    bool client_auth; /* TLS with a client CA: requests need a verified client certificate */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    json_t *store[R_N]; /* key -> object */
    /* store[rt]'s keys in strcmp order (borrowed from the store), kept while sorted_ok[rt]: a
     * write that adds or removes a key clears it, the next list sorts again (once, not per page) */
    const char **sorted[R_N];
    size_t nsorted[R_N];
    bool sorted_ok[R_N];
    uint64_t rv;        /* last resourceVersion handed out */
    uint64_t compacted; /* events with rv <= compacted are gone from the window */
    struct wevent *ring;
    int cap, head, n;
    bool crd;        /* trainingjobs.drover.dev is served */
    bool pg_crd;     /* podgroups.scheduling.x-k8s.io is served */
    bool queue_crd;  /* queues.drover.dev is served */
    bool pod_resize; /* pods/resize is served and listed (drv_apiserver_opts.pod_resize) */
    int bookmark_ms;
    long seq; /* requests served */
    uint64_t uid_seq;
    /* faults */
    int fail_status, fail_count, fail_retry_after;
    int drop_gen, expire_gen, delay_ms;
    int corrupt_gen;   /* drv_apiserver_corrupt_watches */
    char corrupt[256]; /* the raw line it sends */
    /* drv_apiserver_chaos: probability, the generator's state, whose requests, and counts */
    double chaos_rate;
    uint64_t chaos_rng;
    char chaos_agent[64];
    drv_apiserver_faults chaos_count;
    long abandoned; /* writes not applied: their client had gone before they were served */
    /* drv_apiserver_hold: requests of this method, path (no query) and User-Agent prefix wait
     * before they are served while hold_on; held counts them; release bumps hold_gen */
    bool hold_on;
    char hold_method[8], hold_path[512], hold_agent[64];
    int held;
    unsigned hold_gen;
    int hold_answer; /* what the requests released last answer instead of being served; 0: */
    /* opts.audit: every node and pod event as a JSON line, in order */
    bool audit;
    char *audit_buf;
    size_t audit_len, audit_cap;
    /* ... and every answer of 400 or more, a line each (drv_apiserver_errors) */
    char *err_buf;
    size_t err_len, err_cap;
    /* opts.request_log: every request answered, a line each (drv_apiserver_request_log) */
    bool request_log;
    char *req_buf;
    size_t req_len, req_cap;
    /* drv_apiserver_keep_writes: every write served since, as sent (drv_apiserver_writes) */
    bool keep_writes;
    drv_apiserver_write *writes;
    int32_t nwrites, cap_writes;
    bool stopping;
    struct fgdel *fg;
    int nfg;
    /* fixture bodies */
    char *fx_api, *fx_api_v1, *fx_apis, *fx_apis_crd, *fx_coord, *fx_drover, *fx_version,
        *fx_v3index;
    char *fx_v3_v1, *fx_v3_coord;
    size_t fx_v3_v1_len, fx_v3_coord_len;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *buf = drv_malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *nb = drv_realloc(buf, cap * 2 + 1);
        if (!nb) {
            drv_free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

/* The body of a recorded response.txt (after the blank line that ends the headers). */
static char *fixture_body(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/transcripts/%s/response.txt", dir, name);
    char *t = read_file(path, NULL);
    if (!t)
        return NULL;
    char *p = strstr(t, "\r\n\r\n");
    size_t skip = 4;
    if (!p) {
        p = strstr(t, "\n\n");
        skip = 2;
    }
    char *body = drv_strdup(p ? p + skip : "");
    drv_free(t);
    return body;
}

static void now_rfc3339(char *out, size_t n, long offset_s)
{
    drv_time_rfc3339(out, n, (double)(time(NULL) + offset_s), false);
}

/* Whole seconds since the epoch; 0 when s is absent or not a time. */
static time_t parse_rfc3339(const char *s)
{
    double t;
    return drv_time_parse_rfc3339(s, &t) == 0 ? (time_t)t : 0;
}

static void age(char *out, size_t n, const char *ts)
{
    time_t t = parse_rfc3339(ts);
    long d = t ? (long)(time(NULL) - t) : 0;
    if (d < 0)
        d = 0;
    if (!t)
        snprintf(out, n, "<unknown>");
    else if (d < 120)
        snprintf(out, n, "%lds", d);
    else if (d < 3 * 3600)
        snprintf(out, n, "%ldm", d / 60);
    else if (d < 2 * 86400)
        snprintf(out, n, "%ldh", d / 3600);
    else
        snprintf(out, n, "%ldd", d / 86400);
}

static json_t *meta(json_t *o)
{
    json_t *m = json_object_get(o, "metadata");
    if (!json_is_object(m)) {
        m = json_object();
        json_object_set_new(o, "metadata", m);
    }
    return m;
}

static const char *mstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), k));
}

/* Value at a dotted path ("spec.nodeName"), or NULL. */
static json_t *path_get(json_t *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = o;
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && cur;
         tok = strtok_r(NULL, ".", &save))
        cur = json_object_get(cur, tok);
    return cur;
}

static const char *api_version(int rt)
{
    static const char *const av[R_N] = {
        [R_NAMESPACES] = "v1",
        [R_NODES] = "v1",
        [R_PODS] = "v1",
        [R_CONFIGMAPS] = "v1",
        [R_EVENTS] = "v1",
        [R_LEASES] = "coordination.k8s.io/v1",
        [R_CRDS] = "apiextensions.k8s.io/v1",
        [R_TJ] = "drover.dev/v1alpha1",
        [R_SERVICES] = "v1",
        [R_PG] = "scheduling.x-k8s.io/v1alpha1",
        [R_PC] = "scheduling.k8s.io/v1",
        [R_QUEUE] = "drover.dev/v1alpha1",
    };
    return av[rt];
}

static void make_key(char *out, size_t n, int rt, const char *ns, const char *name)
{
    if (RT[rt].namespaced)
        snprintf(out, n, "%s/%s", ns ? ns : "", name);
    else
        snprintf(out, n, "%s", name);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted keys of one store; *n receives the count. Borrowed strings. */
static const char **sorted_keys(json_t *store, size_t *n)
{
    size_t cnt = json_object_size(store), i = 0;
    const char **keys = drv_calloc(cnt + 1, sizeof *keys);
    if (!keys)
        return NULL;
    const char *k;
    json_t *v;
    json_object_foreach(store, k, v)
    {
        (void)v;
        keys[i++] = k;
    }
    qsort(keys, i, sizeof *keys, cmp_str);
    *n = i;
    return keys;
}

/* store[rt]'s keys in order, from the cache (sorted again after a key was added or removed);
 * NULL when out of memory. Borrowed: valid until the next write. Mutex held. */
static const char **cached_keys(drv_apiserver *s, int rt, size_t *n)
{
    if (!s->sorted_ok[rt]) {
        drv_free(s->sorted[rt]);
        s->sorted[rt] = sorted_keys(s->store[rt], &s->nsorted[rt]);
        s->sorted_ok[rt] = s->sorted[rt] != NULL;
    }
    *n = s->sorted_ok[rt] ? s->nsorted[rt] : 0;
    return s->sorted[rt];
}

/* The index of the first key after `after` (strcmp order) in keys[0..n). */
static size_t first_after(const char **keys, size_t n, const char *after)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(keys[mid], after) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- responses ---------------------------------------------------------------------------- */

struct resp {
    int code;
    char *body; /* drv_malloc'd */
    size_t len;
    const char *ctype;
    const char *encoding; /* Content-Encoding or NULL */
    int retry_after;
    bool body_static; /* body points into fixture memory */
};

static void set_json(struct resp *r, int code, json_t *j)
{
    r->code = code;
    r->body = json_dumps(j, JSON_COMPACT);
    r->len = r->body ? strlen(r->body) : 0;
    r->ctype = "application/json";
    json_decref(j);
}

static void set_fixture(struct resp *r, const char *body)
{
    r->code = body ? 200 : 404;
    r->body = (char *)(body ? body : "404 page not found\n");
    r->len = strlen(r->body);
    r->ctype = body ? "application/json" : "text/plain; charset=utf-8";
    r->body_static = true;
}

static void not_found_page(struct resp *r)
{
    set_fixture(r, NULL);
}

/* A Status failure. kind is the plural (or "pods/binding"); with_details forces "details":{}. */
static void set_status(struct resp *r, int code, const char *reason, const char *name,
                       const char *group, const char *kind, bool with_details, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
static void set_status(struct resp *r, int code, const char *reason, const char *name,
                       const char *group, const char *kind, bool with_details, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s}", "kind", "Status", "apiVersion", "v1",
                           "metadata", "status", "Failure", "message", msg, "reason", reason);
    if (name || kind || with_details) {
        json_t *d = json_object();
        if (name)
            json_object_set_new(d, "name", json_string(name));
        if (group && *group)
            json_object_set_new(d, "group", json_string(group));
        if (kind)
            json_object_set_new(d, "kind", json_string(kind));
        json_object_set_new(st, "details", d);
    }
    json_object_set_new(st, "code", json_integer(code));
    set_json(r, code, st);
}

static void not_found_obj(struct resp *r, int rt, const char *name)
{
    const char *g = RT[rt].group;
    if (*g)
        set_status(r, 404, "NotFound", name, g, RT[rt].plural, false, "%s.%s \"%s\" not found",
                   RT[rt].plural, g, name);
    else
        set_status(r, 404, "NotFound", name, NULL, RT[rt].plural, false, "%s \"%s\" not found",
                   RT[rt].plural, name);
}

static void conflict(struct resp *r, int rt, const char *name)
{
    const char *g = RT[rt].group;
    char what[128];
    if (*g)
        snprintf(what, sizeof what, "%s.%s", RT[rt].plural, g);
    else
        snprintf(what, sizeof what, "%s", RT[rt].plural);
    set_status(r, 409, "Conflict", name, g, RT[rt].plural, false,
               "Operation cannot be fulfilled on %s \"%s\": the object has been modified; please "
               "apply your changes to the latest version and try again",
               what, name);
}

/* ---- store and events (mutex held) ------------------------------------------------------- */

/* Appends line and a newline to the log buf (len, cap); a line that does not fit in memory is
 * left out (the log is a test's evidence, not the server's state). */
static void log_append(char **buf, size_t *len, size_t *cap, const char *line)
{
    size_t n = line ? strlen(line) : 0;
    if (line && *len + n + 2 > *cap) {
        size_t want = (*len + n + 2) * 2;
        char *b = drv_realloc(*buf, want);
        if (b) {
            *buf = b;
            *cap = want;
        }
    }
    if (line && *len + n + 2 <= *cap) {
        memcpy(*buf + *len, line, n);
        (*buf)[*len + n] = '\n';
        *len += n + 1;
        (*buf)[*len] = 0;
    }
}

/* Appends {"type":..,"object":..} to the audit log (opts.audit), nodes and pods only. */
static void audit_event(drv_apiserver *s, int rt, const char *type, json_t *obj)
{
    if (!s->audit || (rt != R_PODS && rt != R_NODES))
        return;
    json_t *ev = json_pack("{s:s, s:O}", "type", type, "object", obj);
    char *line = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    log_append(&s->audit_buf, &s->audit_len, &s->audit_cap, line);
    free(line);
}

static void push_event(drv_apiserver *s, int rt, const char *type, json_t *obj, json_t *prev)
{
    audit_event(s, rt, type, obj);
    if (s->n == s->cap) {
        struct wevent *old = &s->ring[s->head];
        s->compacted = old->rv;
        json_decref(old->obj);
        json_decref(old->prev);
        s->head = (s->head + 1) % s->cap;
        s->n--;
    }
    struct wevent *e = &s->ring[(s->head + s->n) % s->cap];
    e->rv = s->rv;
    e->rt = rt;
    e->type = type;
    e->obj = json_deep_copy(obj);
    e->prev = prev ? json_deep_copy(prev) : NULL;
    s->n++;
    pthread_cond_broadcast(&s->cv);
}

static void set_rv(json_t *o, uint64_t rv)
{
    char b[32];
    snprintf(b, sizeof b, "%llu", (unsigned long long)rv);
    json_object_set_new(meta(o), "resourceVersion", json_string(b));
}

/* Stores o (a new reference is taken) under key and records the event. */
static void store_put(drv_apiserver *s, int rt, const char *key, json_t *o, json_t *prev)
{
    json_incref(prev); /* the store's reference to prev is dropped by the replacement */
    s->rv++;
    set_rv(o, s->rv);
    if (!json_object_get(s->store[rt], key))
        s->sorted_ok[rt] = false; /* a new key */
    json_object_set(s->store[rt], key, o);
    push_event(s, rt, prev ? "MODIFIED" : "ADDED", o, prev);
    json_decref(prev);
}

static void store_del(drv_apiserver *s, int rt, const char *key)
{
    json_t *o = json_incref(json_object_get(s->store[rt], key));
    if (!o)
        return;
    json_object_del(s->store[rt], key);
    s->sorted_ok[rt] = false;
    s->rv++;
    json_t *last = json_deep_copy(o);
    set_rv(last, s->rv);
    push_event(s, rt, "DELETED", last, o);
    json_decref(last);
    json_decref(o);
}

static bool ns_exists(drv_apiserver *s, const char *ns)
{
    return json_object_get(s->store[R_NAMESPACES], ns) != NULL;
}

static void new_uid(drv_apiserver *s, char *out, size_t n)
{
    s->uid_seq++;
    snprintf(out, n, "00000000-0000-4000-8000-%012llx", (unsigned long long)s->uid_seq);
}

/* Runs pending foreground deletions accepted at least two requests ago: dependents first
 * (objects whose ownerReferences name the owner's uid), then the owner, as the garbage
 * collector does. The delay lets a test observe the owner while it is being deleted. */
static void run_gc(drv_apiserver *s)
{
    for (int i = 0; i < s->nfg;) {
        struct fgdel *f = &s->fg[i];
        if (s->seq - f->seq < 2) {
            i++;
            continue;
        }
        json_t *owner = json_object_get(s->store[f->rt], f->key);
        const char *uid = owner ? mstr(owner, "uid") : NULL;
        for (int rt = 0; uid && rt < R_N; rt++) {
            size_t nk = 0;
            const char **keys = sorted_keys(s->store[rt], &nk);
            char **dead = keys ? drv_calloc(nk + 1, sizeof *dead) : NULL;
            size_t nd = 0;
            for (size_t k = 0; dead && k < nk; k++) {
                json_t *refs = json_object_get(
                    json_object_get(json_object_get(s->store[rt], keys[k]), "metadata"),
                    "ownerReferences");
                size_t ri;
                json_t *ref;
                json_array_foreach(refs, ri, ref)
                {
                    const char *ruid = json_string_value(json_object_get(ref, "uid"));
                    if (ruid && !strcmp(ruid, uid)) {
                        dead[nd++] = drv_strdup(keys[k]);
                        break;
                    }
                }
            }
            for (size_t k = 0; k < nd; k++) {
                if (dead[k])
                    store_del(s, rt, dead[k]);
                drv_free(dead[k]);
            }
            drv_free(dead);
            drv_free(keys);
        }
        if (owner)
            store_del(s, f->rt, f->key);
        drv_free(f->key);
        s->fg[i] = s->fg[--s->nfg];
    }
}

/* ---- selectors ---------------------------------------------------------------------------- */

enum sel_op { OP_EQ, OP_NE, OP_IN, OP_NOTIN, OP_EXISTS, OP_NOTEXISTS };

struct req_term {
    int op;
    char key[256];
    char vals[8][128];
    int nvals;
};

struct selector {
    struct req_term t[16];
    int n;
};

static char *trim(char *s)
{
    while (*s == ' ')
        s++;
    size_t l = strlen(s);
    while (l && s[l - 1] == ' ')
        s[--l] = 0;
    return s;
}

/* Splits on commas outside parentheses. Returns the count or -1. */
static int split_terms(char *s, char **parts, int max)
{
    int n = 0, depth = 0;
    char *start = s;
    for (char *p = s;; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')')
            depth--;
        if ((*p == ',' && depth == 0) || *p == 0) {
            bool end = *p == 0;
            *p = 0;
            if (n == max)
                return -1;
            parts[n++] = start;
            start = p + 1;
            if (end)
                break;
        }
    }
    return n;
}

/* Parses a label selector (field=true: field selector, only =, ==, !=). 0 or -1. */
static int parse_selector(const char *text, bool field, struct selector *sel, char *err,
                          size_t errn)
{
    memset(sel, 0, sizeof *sel);
    if (!text || !*text)
        return 0;
    char buf[2048];
    if (strlen(text) >= sizeof buf) {
        snprintf(err, errn, "selector too long");
        return -1;
    }
    strcpy(buf, text);
    char *parts[16];
    int np = split_terms(buf, parts, 16);
    if (np < 0) {
        snprintf(err, errn, "too many terms in selector");
        return -1;
    }
    for (int i = 0; i < np; i++) {
        char *p = trim(parts[i]);
        if (!*p)
            continue;
        struct req_term *t = &sel->t[sel->n++];
        char *op;
        if ((op = strstr(p, "!="))) {
            t->op = OP_NE;
            *op = 0;
            snprintf(t->key, sizeof t->key, "%s", trim(p));
            snprintf(t->vals[0], sizeof t->vals[0], "%s", trim(op + 2));
            t->nvals = 1;
        } else if ((op = strchr(p, '='))) {
            t->op = OP_EQ;
            *op = 0;
            char *v = op + 1 + (op[1] == '=');
            snprintf(t->key, sizeof t->key, "%s", trim(p));
            snprintf(t->vals[0], sizeof t->vals[0], "%s", trim(v));
            t->nvals = 1;
        } else if (field) {
            snprintf(err, errn, "invalid selector: '%s'; can't understand '%s'", text, p);
            return -1;
        } else if ((op = strstr(p, " notin ")) || (op = strstr(p, " in "))) {
            t->op = op[1] == 'n' ? OP_NOTIN : OP_IN;
            *op = 0;
            snprintf(t->key, sizeof t->key, "%s", trim(p));
            char *l = strchr(op + 1, '('), *r = l ? strchr(l, ')') : NULL;
            if (!l || !r) {
                snprintf(err, errn, "unable to parse requirement: found '%s', expected: '('",
                         op + 1);
                return -1;
            }
            *r = 0;
            char *vparts[8];
            int nv = split_terms(l + 1, vparts, 8);
            if (nv < 0) {
                snprintf(err, errn, "too many values");
                return -1;
            }
            for (int k = 0; k < nv; k++)
                snprintf(t->vals[t->nvals++], sizeof t->vals[0], "%s", trim(vparts[k]));
        } else if (*p == '!') {
            t->op = OP_NOTEXISTS;
            snprintf(t->key, sizeof t->key, "%s", trim(p + 1));
        } else {
            t->op = OP_EXISTS;
            snprintf(t->key, sizeof t->key, "%s", p);
        }
        if (!t->key[0]) {
            snprintf(err, errn, "invalid selector: '%s'", text);
            return -1;
        }
    }
    return 0;
}

static bool sel_match(const struct selector *sel, json_t *o, bool field)
{
    json_t *labels = json_object_get(json_object_get(o, "metadata"), "labels");
    for (int i = 0; i < sel->n; i++) {
        const struct req_term *t = &sel->t[i];
        const char *v;
        bool has;
        if (field) {
            json_t *j = path_get(o, t->key);
            v = json_is_string(j) ? json_string_value(j) : "";
            has = true;
        } else {
            v = json_string_value(json_object_get(labels, t->key));
            has = v != NULL;
            if (!v)
                v = "";
        }
        bool in = false;
        for (int k = 0; k < t->nvals; k++)
            in |= !strcmp(v, t->vals[k]);
        switch (t->op) {
        case OP_EQ:
        case OP_IN:
            if (!has || !in)
                return false;
            break;
        case OP_NE:
        case OP_NOTIN:
            if (has && in)
                return false;
            break;
        case OP_EXISTS:
            if (!has)
                return false;
            break;
        case OP_NOTEXISTS:
            if (has)
                return false;
            break;
        }
    }
    return true;
}

/* ---- base64url (continue tokens) ---------------------------------------------------------- */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64url_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = B64[(v >> 18) & 63];
        out[o++] = B64[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = B64[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = B64[v & 63];
    }
    out[o] = 0;
}

static int b64_val(char c)
{
    const char *p = c ? strchr(B64, c) : NULL;
    if (p)
        return (int)(p - B64);
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

static int b64url_decode(const char *in, unsigned char *out, size_t max, size_t *outn)
{
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (const char *p = in; *p && *p != '='; p++) {
        int v = b64_val(*p);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == max)
                return -1;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    *outn = o;
    return 0;
}

/* ---- tables ------------------------------------------------------------------------------- */

static json_t *coldef(const char *name, const char *type, const char *format, const char *desc,
                      int prio)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", name, "type", type, "format", format,
                     "description", desc, "priority", prio);
}

static const char NAME_DESC[] =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: http://kubernetes.io/docs/user-guide/"
    "identifiers#names";

/* The PodGroup CRD's printer columns: name, type, JSON path (dotted). */
static const char *const PG_COLS[][3] = {
    {"Phase", "string", ".status.phase"},      {"MinMember", "integer", ".spec.minMember"},
    {"Running", "integer", ".status.running"}, {"Succeeded", "integer", ".status.succeeded"},
    {"Failed", "integer", ".status.failed"},   {"Age", "date", ".metadata.creationTimestamp"}};

/* deploy/queue-crd.yaml's printer columns: name, type, JSON path to the map, and its key
 * (apart, as "nvidia.com/gpu" has dots). */
static const char *const QUEUE_COLS[][4] = {
    {"Weight", "number", ".spec", "weight"},
    {"Pending", "integer", ".status", "pending"},
    {"Admitted", "integer", ".status", "admitted"},
    {"CPU", "string", ".status.used", "cpu"},
    {"CPU quota", "string", ".spec.nominalQuota", "cpu"},
    {"GPU", "string", ".status.used", "nvidia.com/gpu"},
    {"GPU quota", "string", ".spec.nominalQuota", "nvidia.com/gpu"},
    {"Cohort", "string", ".spec", "cohort"},
    {"Age", "date", ".metadata", "creationTimestamp"}};

static json_t *table_columns(int rt)
{
    json_t *c = json_array();
    json_array_append_new(c, coldef("Name", "string", "name", NAME_DESC, 0));
    if (rt == R_PODS) {
        json_array_append_new(c, coldef("Ready", "string", "",
                                        "The aggregate readiness state of this pod for "
                                        "accepting traffic.",
                                        0));
        json_array_append_new(c, coldef("Status", "string", "",
                                        "The aggregate status of the containers in this pod.", 0));
        json_array_append_new(c, coldef("Restarts", "string", "",
                                        "The number of times the containers in this pod have "
                                        "been restarted and when the last container in this pod "
                                        "has restarted.",
                                        0));
        json_array_append_new(c, coldef("Age", "string", "", "CreationTimestamp", 0));
        json_array_append_new(c, coldef("IP", "string", "", "IP address allocated to the pod.", 1));
        json_array_append_new(
            c, coldef("Node", "string", "", "Name of the node this pod is assigned to.", 1));
        json_array_append_new(c, coldef("Nominated Node", "string", "",
                                        "Name of the node this pod is nominated to.", 1));
        json_array_append_new(
            c, coldef("Readiness Gates", "string", "", "Readiness gates of the pod.", 1));
    } else if (rt == R_NODES) {
        json_array_append_new(c, coldef("Status", "string", "", "The status of the node", 0));
        json_array_append_new(c, coldef("Roles", "string", "", "The roles of the node", 0));
        json_array_append_new(c, coldef("Age", "string", "", "CreationTimestamp", 0));
        json_array_append_new(c, coldef("Version", "string", "", "Kubelet Version", 0));
        json_array_append_new(c, coldef("Internal-IP", "string", "", "InternalIP address", 1));
        json_array_append_new(c, coldef("External-IP", "string", "", "ExternalIP address", 1));
        json_array_append_new(c, coldef("OS-Image", "string", "", "OS Image", 1));
        json_array_append_new(c, coldef("Kernel-Version", "string", "", "Kernel Version", 1));
        json_array_append_new(
            c, coldef("Container-Runtime", "string", "", "Container Runtime Version", 1));
    } else if (rt == R_TJ) {
        /* deploy/crd.yaml's additionalPrinterColumns, as the API server renders them */
        static const char *const cols[][4] = {
            {"State", "string", ".status.conditions[-1:].type", "0"},
            {"Workers", "integer", ".status.replicaStatuses.Worker.active", "0"},
            {"Restarts", "integer", ".status.restarts", "0"},
            {"Age", "date", ".metadata.creationTimestamp", "0"},
            {"Message", "string", ".status.conditions[-1:].message", "1"}};
        for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
            char desc[200];
            snprintf(desc, sizeof desc,
                     "Custom resource definition column (in JSONPath format): %s", cols[i][2]);
            json_array_append_new(c, coldef(cols[i][0], cols[i][1], "", desc, cols[i][3][0] - '0'));
        }
    } else if (rt == R_PG) {
        /* deploy/podgroup-crd.yaml's additionalPrinterColumns */
        for (size_t i = 0; i < sizeof PG_COLS / sizeof PG_COLS[0]; i++) {
            char desc[200];
            snprintf(desc, sizeof desc,
                     "Custom resource definition column (in JSONPath format): %s", PG_COLS[i][2]);
            json_array_append_new(c, coldef(PG_COLS[i][0], PG_COLS[i][1], "", desc, 0));
        }
    } else if (rt == R_QUEUE) {
        for (size_t i = 0; i < sizeof QUEUE_COLS / sizeof QUEUE_COLS[0]; i++) {
            char desc[200];
            snprintf(desc, sizeof desc,
                     "Custom resource definition column (in JSONPath format): %s.%s",
                     QUEUE_COLS[i][2], QUEUE_COLS[i][3]);
            json_array_append_new(c, coldef(QUEUE_COLS[i][0], QUEUE_COLS[i][1], "", desc, 0));
        }
    } else if (rt == R_NAMESPACES) {
        json_array_append_new(c, coldef("Status", "string", "", "The status of the namespace", 0));
        json_array_append_new(c, coldef("Age", "string", "", "CreationTimestamp", 0));
    } else {
        json_array_append_new(c, coldef("Created At", "date", "", "CreationTimestamp", 0));
    }
    return c;
}

static const char *str_or(json_t *j, const char *dflt)
{
    const char *s = json_string_value(j);
    return s && *s ? s : dflt;
}

static json_t *table_cells(int rt, json_t *o)
{
    char a[32];
    age(a, sizeof a, mstr(o, "creationTimestamp"));
    json_t *c = json_array();
    json_array_append_new(c, json_string(mstr(o, "name") ? mstr(o, "name") : ""));
    if (rt == R_PODS) {
        size_t nc = json_array_size(path_get(o, "spec.containers"));
        char ready[32];
        snprintf(ready, sizeof ready, "0/%zu", nc);
        json_array_append_new(c, json_string(ready));
        const char *phase = mstr(o, "deletionTimestamp")
                                ? "Terminating"
                                : str_or(path_get(o, "status.phase"), "Pending");
        json_array_append_new(c, json_string(phase));
        json_array_append_new(c, json_string("0"));
        json_array_append_new(c, json_string(a));
        json_array_append_new(c, json_string(str_or(path_get(o, "status.podIP"), "<none>")));
        json_array_append_new(c, json_string(str_or(path_get(o, "spec.nodeName"), "<none>")));
        json_array_append_new(c, json_string("<none>"));
        json_array_append_new(c, json_string("<none>"));
    } else if (rt == R_NODES) {
        const char *st = "Unknown";
        size_t i;
        json_t *cond;
        json_array_foreach(path_get(o, "status.conditions"), i, cond)
        {
            if (!strcmp(str_or(json_object_get(cond, "type"), ""), "Ready"))
                st = !strcmp(str_or(json_object_get(cond, "status"), ""), "True") ? "Ready"
                                                                                  : "NotReady";
        }
        char stb[64];
        snprintf(stb, sizeof stb, "%s%s", st,
                 json_is_true(path_get(o, "spec.unschedulable")) ? ",SchedulingDisabled" : "");
        json_array_append_new(c, json_string(stb));
        json_array_append_new(c, json_string("<none>"));
        json_array_append_new(c, json_string(a));
        json_array_append_new(
            c, json_string(str_or(path_get(o, "status.nodeInfo.kubeletVersion"), "")));
        const char *iip = "<none>", *eip = "<none>";
        json_array_foreach(path_get(o, "status.addresses"), i, cond)
        {
            const char *t = str_or(json_object_get(cond, "type"), "");
            if (!strcmp(t, "InternalIP"))
                iip = str_or(json_object_get(cond, "address"), "<none>");
            if (!strcmp(t, "ExternalIP"))
                eip = str_or(json_object_get(cond, "address"), "<none>");
        }
        json_array_append_new(c, json_string(iip));
        json_array_append_new(c, json_string(eip));
        json_array_append_new(
            c, json_string(str_or(path_get(o, "status.nodeInfo.osImage"), "<unknown>")));
        json_array_append_new(
            c, json_string(str_or(path_get(o, "status.nodeInfo.kernelVersion"), "<unknown>")));
        json_array_append_new(
            c, json_string(
                   str_or(path_get(o, "status.nodeInfo.containerRuntimeVersion"), "<unknown>")));
    } else if (rt == R_TJ) {
        json_t *conds = path_get(o, "status.conditions");
        json_t *last = json_array_get(conds, json_array_size(conds) - 1);
        json_t *type = json_object_get(last, "type"), *msg = json_object_get(last, "message");
        json_t *w = path_get(o, "status.replicaStatuses.Worker.active");
        json_t *n = path_get(o, "status.restarts");
        json_array_append_new(c, type ? json_incref(type) : json_null());
        json_array_append_new(c, w ? json_incref(w) : json_null());
        json_array_append_new(c, n ? json_incref(n) : json_null());
        /* a date column is sent as an age ("17s"), as kube-apiserver's CRD tables do
         * (transcript 13-table-tj) */
        json_array_append_new(c, json_string(a));
        json_array_append_new(c, msg ? json_incref(msg) : json_null());
    } else if (rt == R_PG) {
        /* a path absent is null, which kubectl prints as <none> (as for a CRD's columns) */
        for (size_t i = 0; i < sizeof PG_COLS / sizeof PG_COLS[0]; i++) {
            /* (a date column is sent as an age, "5m", as kube-apiserver's CRD tables do) */
            json_t *v = path_get(o, PG_COLS[i][2] + 1);
            if (!strcmp(PG_COLS[i][1], "date"))
                json_array_append_new(c, json_string(a));
            else
                json_array_append_new(c, v ? json_incref(v) : json_null());
        }
    } else if (rt == R_QUEUE) {
        for (size_t i = 0; i < sizeof QUEUE_COLS / sizeof QUEUE_COLS[0]; i++) {
            json_t *v = json_object_get(path_get(o, QUEUE_COLS[i][2] + 1), QUEUE_COLS[i][3]);
            if (!strcmp(QUEUE_COLS[i][1], "date"))
                json_array_append_new(c, json_string(a));
            else
                json_array_append_new(c, v ? json_incref(v) : json_null());
        }
    } else if (rt == R_NAMESPACES) {
        json_array_append_new(c, json_string(str_or(path_get(o, "status.phase"), "Active")));
        json_array_append_new(c, json_string(a));
    } else {
        json_array_append_new(c,
                              json_string(str_or(path_get(o, "metadata.creationTimestamp"), "")));
    }
    return c;
}

/* objs: array of full objects (borrowed). */
static json_t *make_table(int rt, json_t *objs, json_t *list_meta, bool include_object)
{
    json_t *rows = json_array();
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o)
    {
        json_t *row = json_pack("{s:o}", "cells", table_cells(rt, o));
        if (include_object)
            json_object_set_new(row, "object",
                                json_pack("{s:s,s:s,s:O}", "kind", "PartialObjectMetadata",
                                          "apiVersion", "meta.k8s.io/v1", "metadata",
                                          json_object_get(o, "metadata")));
        json_array_append_new(rows, row);
    }
    return json_pack("{s:s,s:s,s:o,s:o,s:o}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
                     "metadata", list_meta, "columnDefinitions", table_columns(rt), "rows", rows);
}

static bool wants_table(struct MHD_Connection *c)
{
    const char *acc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
    return acc && strstr(acc, "as=Table");
}

/* ---- patches ------------------------------------------------------------------------------ */

/* RFC 7386 merge patch; returns a new reference. strategic: lists of objects with "name" are
 * merged element-wise by name (the part of strategic merge Drover and kubectl rely on). */
static json_t *merge_patch(json_t *target, json_t *patch, bool strategic)
{
    if (!json_is_object(patch))
        return json_deep_copy(patch);
    json_t *out = json_is_object(target) ? json_deep_copy(target) : json_object();
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v)
    {
        if (strategic && k[0] == '$')
            continue;
        if (json_is_null(v)) {
            json_object_del(out, k);
            continue;
        }
        json_t *cur = json_object_get(out, k);
        if (strategic && json_is_array(v) && json_is_array(cur)) {
            json_t *merged = json_deep_copy(cur);
            size_t i;
            json_t *pe;
            json_array_foreach(v, i, pe)
            {
                const char *pn = json_string_value(json_object_get(pe, "name"));
                bool done = false;
                size_t j;
                json_t *ce;
                json_array_foreach(merged, j, ce)
                {
                    const char *cn = json_string_value(json_object_get(ce, "name"));
                    if (pn && cn && !strcmp(pn, cn)) {
                        json_array_set_new(merged, j, merge_patch(ce, pe, true));
                        done = true;
                        break;
                    }
                }
                if (!done) {
                    if (!pn) { /* not a keyed list: replace wholesale */
                        json_decref(merged);
                        merged = json_deep_copy(v);
                        break;
                    }
                    json_array_append_new(merged, json_deep_copy(pe));
                }
            }
            json_object_set_new(out, k, merged);
        } else {
            json_object_set_new(out, k, merge_patch(cur, v, strategic));
        }
    }
    return out;
}

/* Resolves a JSON pointer to (parent, last token). Returns 0 or -1. */
static int pointer_parent(json_t *doc, const char *ptr, json_t **parent, char *last, size_t n)
{
    if (*ptr != '/')
        return -1;
    json_t *cur = doc;
    const char *p = ptr + 1;
    for (;;) {
        char tok[256];
        size_t o = 0;
        while (*p && *p != '/' && o + 1 < sizeof tok) {
            if (p[0] == '~' && p[1] == '1') {
                tok[o++] = '/';
                p += 2;
            } else if (p[0] == '~' && p[1] == '0') {
                tok[o++] = '~';
                p += 2;
            } else {
                tok[o++] = *p++;
            }
        }
        tok[o] = 0;
        if (!*p) {
            *parent = cur;
            snprintf(last, n, "%s", tok);
            return 0;
        }
        p++;
        if (json_is_object(cur))
            cur = json_object_get(cur, tok);
        else if (json_is_array(cur))
            cur = json_array_get(cur, strtoul(tok, NULL, 10));
        else
            return -1;
        if (!cur)
            return -1;
    }
}

static json_t *pointer_get(json_t *doc, const char *ptr)
{
    if (!*ptr)
        return doc;
    json_t *par;
    char last[256];
    if (pointer_parent(doc, ptr, &par, last, sizeof last))
        return NULL;
    if (json_is_object(par))
        return json_object_get(par, last);
    if (json_is_array(par))
        return json_array_get(par, strtoul(last, NULL, 10));
    return NULL;
}

static int pointer_remove(json_t *doc, const char *ptr)
{
    json_t *par;
    char last[256];
    if (pointer_parent(doc, ptr, &par, last, sizeof last))
        return -1;
    if (json_is_object(par))
        return json_object_del(par, last);
    if (json_is_array(par))
        return json_array_remove(par, strtoul(last, NULL, 10));
    return -1;
}

static int pointer_add(json_t *doc, const char *ptr, json_t *val, bool replace)
{
    json_t *par;
    char last[256];
    if (pointer_parent(doc, ptr, &par, last, sizeof last))
        return -1;
    if (json_is_object(par)) {
        if (replace && !json_object_get(par, last))
            return -1;
        return json_object_set(par, last, val);
    }
    if (json_is_array(par)) {
        size_t n = json_array_size(par);
        if (!strcmp(last, "-") && !replace)
            return json_array_append(par, val);
        char *end;
        unsigned long idx = strtoul(last, &end, 10);
        if (*end || idx > n || (replace && idx >= n))
            return -1;
        return replace ? json_array_set(par, idx, val) : json_array_insert(par, idx, val);
    }
    return -1;
}

/* RFC 6902. Returns a new document or NULL when an operation fails (nothing applied). */
static json_t *json_patch(json_t *target, json_t *ops)
{
    if (!json_is_array(ops))
        return NULL;
    json_t *doc = json_deep_copy(target);
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op)
    {
        const char *o = json_string_value(json_object_get(op, "op"));
        const char *path = json_string_value(json_object_get(op, "path"));
        const char *from = json_string_value(json_object_get(op, "from"));
        json_t *val = json_object_get(op, "value");
        int rc = -1;
        if (!o || !path) {
            rc = -1;
        } else if (!strcmp(o, "add") && val) {
            rc = pointer_add(doc, path, val, false);
        } else if (!strcmp(o, "replace") && val) {
            rc = pointer_add(doc, path, val, true);
        } else if (!strcmp(o, "remove")) {
            rc = pointer_remove(doc, path);
        } else if (!strcmp(o, "test") && val) {
            json_t *cur = pointer_get(doc, path);
            rc = cur && json_equal(cur, val) ? 0 : -1;
        } else if ((!strcmp(o, "move") || !strcmp(o, "copy")) && from) {
            json_t *src = pointer_get(doc, from);
            if (src) {
                json_t *cp = json_deep_copy(src);
                rc = 0;
                if (o[0] == 'm')
                    rc = pointer_remove(doc, from);
                if (!rc)
                    rc = pointer_add(doc, path, cp, false);
                json_decref(cp);
            }
        }
        if (rc) {
            json_decref(doc);
            return NULL;
        }
    }
    return doc;
}

/* ---- request handling --------------------------------------------------------------------- */

struct route {
    int rt;         /* enum rtype_id, or -1 */
    char ns[256];   /* namespace from the URL, or "" */
    char name[256]; /* object name, or "" */
    char sub[64];   /* subresource ("status", "binding"), or "" */
};

static const char *qarg(struct MHD_Connection *c, const char *k)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

static int find_rt(drv_apiserver *s, const char *group, const char *version, const char *plural)
{
    for (int i = 0; i < R_N; i++) {
        if ((i == R_TJ && !s->crd) || (i == R_PG && !s->pg_crd) || (i == R_QUEUE && !s->queue_crd))
            continue;
        if (!strcmp(RT[i].group, group) && !strcmp(RT[i].version, version) &&
            !strcmp(RT[i].plural, plural))
            return i;
    }
    return -1;
}

/* Parses /api/v1/... and /apis/G/V/... into a route. Returns 0, or -1 for "not a resource". */
static int parse_route(drv_apiserver *s, const char *url, struct route *r)
{
    char buf[1024];
    if (strlen(url) >= sizeof buf)
        return -1;
    strcpy(buf, url);
    char *seg[12];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, "/", &save); t && n < 12;
         t = strtok_r(NULL, "/", &save))
        seg[n++] = t;
    const char *group, *version;
    int i;
    if (n >= 3 && !strcmp(seg[0], "api") && !strcmp(seg[1], "v1")) {
        group = "";
        version = "v1";
        i = 2;
    } else if (n >= 4 && !strcmp(seg[0], "apis")) {
        group = seg[1];
        version = seg[2];
        i = 3;
    } else {
        return -1;
    }
    memset(r, 0, sizeof *r);
    if (n - i >= 3 && !strcmp(seg[i], "namespaces")) {
        snprintf(r->ns, sizeof r->ns, "%s", seg[i + 1]);
        i += 2;
    } else if (n - i == 2 && !strcmp(seg[i], "namespaces") && !*group) {
        r->rt = R_NAMESPACES;
        snprintf(r->name, sizeof r->name, "%s", seg[i + 1]);
        return 0;
    }
    r->rt = find_rt(s, group, version, seg[i]);
    if (r->rt < 0)
        return -1;
    if (r->ns[0] && !RT[r->rt].namespaced)
        return -1;
    if (i + 1 < n)
        snprintf(r->name, sizeof r->name, "%s", seg[i + 1]);
    if (i + 2 < n)
        snprintf(r->sub, sizeof r->sub, "%s", seg[i + 2]);
    if (i + 3 < n)
        return -1;
    bool pod_sub = r->rt == R_PODS &&
                   (!strcmp(r->sub, "binding") || (s->pod_resize && !strcmp(r->sub, "resize")));
    if (r->sub[0] && strcmp(r->sub, "status") && !pod_sub)
        return -1;
    if (!strcmp(r->sub, "status") && !RT[r->rt].status)
        return -1;
    return 0;
}

/* A growing response body (malloc-compatible: queue() frees it with free). */
typedef struct lbody {
    char *p;
    size_t n;
    int32_t cap; /* drv_grow's: a body stays under 2 GiB */
    bool oom;
} lbody;

/* Appends n bytes; also jansson's json_dump_callback sink (0, or -1 when out of memory). */
static int body_add(const char *p, size_t n, void *arg)
{
    lbody *b = arg;
    if (b->oom || b->n + n + 1 > INT32_MAX ||
        drv_grow(&b->p, 1, &b->cap, (int32_t)(b->n + n + 1)) != 0) {
        b->oom = true;
        return -1;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

static void body_str(lbody *b, const char *s)
{
    body_add(s, strlen(s), b);
}

/* Appends o as a list item: built-in kinds lose kind and apiVersion (the list carries them).
 * Written field by field from the stored object, so a page costs one serialisation of its
 * items and no copy of them. */
static void body_item(lbody *b, int rt, json_t *o)
{
    if (RT[rt].custom) {
        json_dump_callback(o, body_add, b, JSON_COMPACT);
        return;
    }
    const char *k;
    json_t *v;
    bool first = true;
    body_str(b, "{");
    json_object_foreach(o, k, v)
    {
        if (!strcmp(k, "kind") || !strcmp(k, "apiVersion"))
            continue;
        json_t *key = json_string(k);
        body_str(b, first ? "" : ",");
        json_dump_callback(key, body_add, b, JSON_ENCODE_ANY);
        body_str(b, ":");
        json_dump_callback(v, body_add, b, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(key);
        first = false;
    }
    body_str(b, "}");
}

/* A 200 answer {"kind":"<Kind>List","apiVersion":..,"metadata":lm,"items":[..]} (lm is
 * consumed; objs borrowed). */
static void set_list(struct resp *r, int rt, json_t *objs, json_t *lm)
{
    lbody b = {0};
    char head[160];
    snprintf(head, sizeof head,
             "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",\"metadata\":", RT[rt].kind,
             api_version(rt));
    body_str(&b, head);
    json_dump_callback(lm, body_add, &b, JSON_COMPACT);
    json_decref(lm);
    body_str(&b, ",\"items\":[");
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o)
    {
        body_str(&b, i ? "," : "");
        body_item(&b, rt, o);
    }
    body_str(&b, "]}");
    if (b.oom) {
        free(b.p);
        set_status(r, 500, "InternalError", NULL, NULL, NULL, false, "out of memory");
        return;
    }
    r->code = 200;
    r->body = b.p;
    r->len = b.n;
    r->ctype = "application/json";
}

static void do_list(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt_,
                    struct resp *r)
{
    int rt = rt_->rt;
    struct selector ls, fs;
    char err[512];
    if (parse_selector(qarg(c, "labelSelector"), false, &ls, err, sizeof err) ||
        parse_selector(qarg(c, "fieldSelector"), true, &fs, err, sizeof err)) {
        set_status(r, 400, "BadRequest", NULL, NULL, NULL, false, "%s", err);
        return;
    }
    long limit = qarg(c, "limit") ? strtol(qarg(c, "limit"), NULL, 10) : 0;
    const char *cont = qarg(c, "continue");
    char start[600] = "";
    uint64_t list_rv = s->rv;
    if (cont && *cont) {
        unsigned char dec[1024];
        size_t dn = 0;
        json_t *tok = NULL;
        if (!b64url_decode(cont, dec, sizeof dec - 1, &dn))
            tok = json_loadb((const char *)dec, dn, JSON_ALLOW_NUL, NULL);
        const char *st = json_string_value(json_object_get(tok, "start"));
        json_t *trv = json_object_get(tok, "rv");
        if (!st || !json_is_integer(trv)) {
            json_decref(tok);
            set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                       "invalid continue token: continue key is not valid: invalid character "
                       "looking for beginning of value");
            return;
        }
        snprintf(start, sizeof start, "%s", st);
        list_rv = (uint64_t)json_integer_value(trv);
        json_decref(tok);
        if (list_rv < s->compacted) { /* the snapshot the list began at is gone (etcd: compacted) */
            set_status(r, 410, "Expired", NULL, NULL, NULL, false,
                       "The provided continue parameter is too old to display a consistent list "
                       "result. You can start a new list without the continue parameter.");
            return;
        }
    }
    size_t nk = 0;
    const char **keys = cached_keys(s, rt, &nk);
    json_t *full = json_array();
    long nitems = 0;
    long remaining = 0;
    const char *last = NULL;
    /* The token's start is "lastkey\0": continue strictly after lastkey. */
    for (size_t i = start[0] ? first_after(keys, nk, start) : 0; keys && i < nk; i++) {
        json_t *o = json_object_get(s->store[rt], keys[i]);
        if (rt_->ns[0] && strcmp(str_or(path_get(o, "metadata.namespace"), ""), rt_->ns))
            continue;
        if (!sel_match(&ls, o, false) || !sel_match(&fs, o, true))
            continue;
        if (limit > 0 && nitems >= limit) {
            if (!rt_->ns[0] && ls.n == 0 && fs.n == 0) { /* every later key counts */
                remaining = (long)(nk - i);
                break;
            }
            remaining++;
            continue;
        }
        nitems++;
        json_array_append(full, o);
        last = keys[i];
    }
    char rvb[32];
    snprintf(rvb, sizeof rvb, "%llu", (unsigned long long)list_rv);
    json_t *lm = json_pack("{s:s}", "resourceVersion", rvb);
    if (remaining > 0 && last) {
        char tokjson[1024], enc[1500];
        char startb[620];
        int sl = snprintf(startb, sizeof startb, "%s", last);
        json_t *t = json_pack("{s:s,s:I,s:o}", "v", "meta.k8s.io/v1", "rv", (json_int_t)list_rv,
                              "start", json_stringn(startb, (size_t)sl + 1));
        char *d = json_dumps(t, JSON_COMPACT);
        json_decref(t);
        snprintf(tokjson, sizeof tokjson, "%s", d ? d : "");
        free(d);
        b64url_encode((const unsigned char *)tokjson, strlen(tokjson), enc);
        json_object_set_new(lm, "continue", json_string(enc));
        if (ls.n == 0 && fs.n == 0)
            json_object_set_new(lm, "remainingItemCount", json_integer(remaining));
    }
    if (wants_table(c)) {
        const char *io = qarg(c, "includeObject");
        set_json(r, 200, make_table(rt, full, lm, !io || strcmp(io, "None")));
        json_decref(full);
        return;
    }
    set_list(r, rt, full, lm);
    json_decref(full);
}

static json_t *lookup(drv_apiserver *s, const struct route *rt, char *key, size_t kn)
{
    make_key(key, kn, rt->rt, rt->ns, rt->name);
    return json_object_get(s->store[rt->rt], key);
}

static void do_get(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt,
                   struct resp *r)
{
    char key[600];
    json_t *o = lookup(s, rt, key, sizeof key);
    if (!o) {
        not_found_obj(r, rt->rt, rt->name);
        return;
    }
    if (wants_table(c)) {
        json_t *one = json_array();
        json_array_append(one, o);
        char rvb[32];
        snprintf(rvb, sizeof rvb, "%llu", (unsigned long long)s->rv);
        set_json(r, 200, make_table(rt->rt, one, json_pack("{s:s}", "resourceVersion", rvb), true));
        json_decref(one);
        return;
    }
    set_json(r, 200, json_deep_copy(o));
}

/* Drops from b what a lacks (recursively): fields a real server would have defaulted. */
static void prune_defaults(json_t *a, json_t *b)
{
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(b, tmp, k, v)
        {
            json_t *av = json_object_get(a, k);
            if (!av)
                json_object_del(b, k);
            else
                prune_defaults(av, v);
        }
    } else if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++)
            prune_defaults(json_array_get(a, i), json_array_get(b, i));
    }
}

/* Type-specific validation of a new or updated object. old is NULL on create. 0 = valid. */
static int validate(drv_apiserver *s, int rt, json_t *o, json_t *old, const char *ns,
                    struct resp *r)
{
    (void)s;
    const char *name = mstr(o, "name");
    if (rt == R_TJ) {
        const char *k;
        json_t *v;
        json_object_foreach(path_get(o, "spec.replicaSpecs"), k, v)
        {
            json_t *rep = json_object_get(v, "replicas");
            if (json_is_integer(rep) && json_integer_value(rep) < 0) {
                char field[300], msg[512];
                snprintf(field, sizeof field, "spec.replicaSpecs.%s.replicas", k);
                snprintf(msg, sizeof msg,
                         "Invalid value: %lld: %s in body should be greater than or equal to 0",
                         (long long)json_integer_value(rep), field);
                set_status(r, 422, "Invalid", name, "drover.dev", "TrainingJob", false,
                           "TrainingJob.drover.dev \"%s\" is invalid: %s: %s", name, field, msg);
                json_t *body = json_loads(r->body, 0, NULL);
                json_object_set_new(json_object_get(body, "details"), "causes",
                                    json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueInvalid",
                                              "message", msg, "field", field));
                free(r->body);
                set_json(r, 422, body);
                return -1;
            }
        }
    }
    if (rt == R_EVENTS) {
        const char *ins = json_string_value(path_get(o, "involvedObject.namespace"));
        if (ins && *ins && ns && strcmp(ins, ns)) {
            set_status(r, 422, "Invalid", name, NULL, "Event", false,
                       "Event \"%s\" is invalid: involvedObject.namespace: Invalid value: \"%s\": "
                       "does not match event.namespace",
                       name, ins);
            json_t *body = json_loads(r->body, 0, NULL);
            json_object_set_new(json_object_get(body, "details"), "causes",
                                json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueInvalid",
                                          "message",
                                          "Invalid value: \"kube-system\": does not match "
                                          "event.namespace",
                                          "field", "involvedObject.namespace"));
            free(r->body);
            set_json(r, 422, body);
            return -1;
        }
    }
    if (rt == R_PODS && old) {
        /* Only images, activeDeadlineSeconds, tolerations and terminationGracePeriodSeconds may
         * change in a pod spec after creation. */
        json_t *a = json_deep_copy(json_object_get(old, "spec"));
        json_t *b = json_deep_copy(json_object_get(o, "spec"));
        json_t *specs[2] = {a, b};
        for (int k = 0; k < 2; k++) {
            size_t i;
            json_t *ct;
            json_array_foreach(json_object_get(specs[k], "containers"), i, ct)
                json_object_del(ct, "image");
            json_object_del(specs[k], "activeDeadlineSeconds");
            json_object_del(specs[k], "tolerations");
            json_object_del(specs[k], "terminationGracePeriodSeconds");
        }
        /* Fields the real server defaults (volumes, dnsPolicy...) may arrive in a full PUT. */
        prune_defaults(a, b);
        bool same = json_equal(a, b);
        json_decref(a);
        json_decref(b);
        if (!same) {
            set_status(r, 422, "Invalid", name, NULL, "Pod", false,
                       "Pod \"%s\" is invalid: spec: Forbidden: pod updates may not change fields "
                       "other than `spec.containers[*].image`, `spec.initContainers[*].image`, "
                       "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to "
                       "existing tolerations) or `spec.terminationGracePeriodSeconds`",
                       name);
            return -1;
        }
    }
    return 0;
}

static void apply_defaults(drv_apiserver *s, int rt, json_t *o)
{
    if (rt == R_PODS) {
        json_t *spec = json_object_get(o, "spec");
        if (json_is_object(spec)) {
            if (!json_object_get(spec, "schedulerName"))
                json_object_set_new(spec, "schedulerName", json_string("default-scheduler"));
            if (!json_object_get(spec, "restartPolicy"))
                json_object_set_new(spec, "restartPolicy", json_string("Always"));
            if (!json_object_get(spec, "terminationGracePeriodSeconds"))
                json_object_set_new(spec, "terminationGracePeriodSeconds", json_integer(30));
        }
        json_object_set_new(o, "status",
                            json_pack("{s:s,s:s}", "phase", "Pending", "qosClass", "BestEffort"));
    } else if (rt == R_NAMESPACES) {
        json_object_set_new(o, "spec", json_pack("{s:[s]}", "finalizers", "kubernetes"));
        json_object_set_new(o, "status", json_pack("{s:s}", "phase", "Active"));
        json_t *l = json_object_get(meta(o), "labels");
        if (!json_is_object(l)) {
            l = json_object();
            json_object_set_new(meta(o), "labels", l);
        }
        json_object_set_new(l, "kubernetes.io/metadata.name", json_string(mstr(o, "name")));
    } else if (rt == R_CRDS) {
        char ts[32];
        now_rfc3339(ts, sizeof ts, 0);
        json_t *names = json_deep_copy(path_get(o, "spec.names"));
        json_object_set_new(
            o, "status",
            json_pack("{s:[{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:s}],s:o,s:[s]}", "conditions",
                      "type", "NamesAccepted", "status", "True", "lastTransitionTime", ts, "reason",
                      "NoConflicts", "message", "no conflicts found", "type", "Established",
                      "status", "True", "lastTransitionTime", ts, "reason", "InitialNamesAccepted",
                      "message", "the initial names have been accepted", "acceptedNames",
                      names ? names : json_object(), "storedVersions", "v1alpha1"));
        if (!strcmp(str_or(path_get(o, "metadata.name"), ""), "trainingjobs.drover.dev"))
            s->crd = true;
        if (!strcmp(str_or(path_get(o, "metadata.name"), ""), PG_CRD))
            s->pg_crd = true;
        if (!strcmp(str_or(path_get(o, "metadata.name"), ""), QUEUE_CRD))
            s->queue_crd = true;
    } else if (rt == R_NODES) {
        /* The TaintNodesByCondition admission plugin taints a new node not-ready (NoSchedule)
         * until the node lifecycle controller sees it Ready (02-node-create). */
        json_t *spec = json_object_get(o, "spec");
        if (!json_is_object(spec)) {
            spec = json_object();
            json_object_set_new(o, "spec", spec);
        }
        json_t *taints = json_object_get(spec, "taints");
        if (!json_is_array(taints)) {
            taints = json_array();
            json_object_set_new(spec, "taints", taints);
        }
        bool tainted = false;
        size_t ti;
        json_t *tv;
        json_array_foreach(taints, ti, tv)
        {
            if (!strcmp(str_or(json_object_get(tv, "key"), ""), "node.kubernetes.io/not-ready"))
                tainted = true;
        }
        if (!tainted)
            json_array_append_new(taints,
                                  json_pack("{s:s,s:s}", "key", "node.kubernetes.io/not-ready",
                                            "effect", "NoSchedule"));
        /* A node's status is kept on create (02-node-create: what kubelet registers with), with
         * the empty daemon endpoint and node info a kubelet fills in later. */
        json_t *st = json_object_get(o, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(o, "status", st);
        }
        if (!json_object_get(st, "daemonEndpoints"))
            json_object_set_new(st, "daemonEndpoints",
                                json_pack("{s:{s:i}}", "kubeletEndpoint", "Port", 0));
        if (!json_object_get(st, "nodeInfo"))
            json_object_set_new(st, "nodeInfo",
                                json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "machineID",
                                          "", "systemUUID", "", "bootID", "", "kernelVersion", "",
                                          "osImage", "", "containerRuntimeVersion", "",
                                          "kubeletVersion", "", "kubeProxyVersion", "",
                                          "operatingSystem", "", "architecture", ""));
    } else if (RT[rt].status) {
        json_object_del(o, "status"); /* custom resources: status only through /status */
    }
}

static void do_create(drv_apiserver *s, const struct route *rt, const char *body, size_t blen,
                      struct resp *r)
{
    int t = rt->rt;
    json_error_t je;
    json_t *o = json_loadb(body, blen, 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                   "couldn't get version/kind; json parse error: %s", je.text);
        return;
    }
    json_t *m = meta(o);
    const char *bns = json_string_value(json_object_get(m, "namespace"));
    if (RT[t].namespaced) {
        if (bns && *bns && strcmp(bns, rt->ns)) {
            set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                       "the namespace of the provided object does not match the namespace sent "
                       "on the request");
            json_decref(o);
            return;
        }
        if (!ns_exists(s, rt->ns)) {
            set_status(r, 404, "NotFound", rt->ns, NULL, "namespaces", false,
                       "namespaces \"%s\" not found", rt->ns);
            json_decref(o);
            return;
        }
        json_object_set_new(m, "namespace", json_string(rt->ns));
    } else {
        json_object_del(m, "namespace");
    }
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *gen = json_string_value(json_object_get(m, "generateName"));
    if ((!name || !*name) && gen && *gen) {
        char nb[300];
        snprintf(nb, sizeof nb, "%s%05llx", gen, (unsigned long long)(s->uid_seq + 1) & 0xfffff);
        json_object_set_new(m, "name", json_string(nb));
        name = mstr(o, "name");
    }
    if (!name || !*name) {
        set_status(r, 422, "Invalid", NULL, RT[t].group, RT[t].kind, false,
                   "%s \"\" is invalid: metadata.name: Required value: name or generateName is "
                   "required",
                   RT[t].kind);
        json_decref(o);
        return;
    }
    char key[600];
    make_key(key, sizeof key, t, rt->ns, name);
    if (json_object_get(s->store[t], key)) {
        const char *g = RT[t].group;
        if (*g)
            set_status(r, 409, "AlreadyExists", name, g, RT[t].plural, false,
                       "%s.%s \"%s\" already exists", RT[t].plural, g, name);
        else
            set_status(r, 409, "AlreadyExists", name, NULL, RT[t].plural, false,
                       "%s \"%s\" already exists", RT[t].plural, name);
        json_decref(o);
        return;
    }
    if (validate(s, t, o, NULL, rt->ns, r)) {
        json_decref(o);
        return;
    }
    json_object_set_new(o, "kind", json_string(RT[t].kind));
    json_object_set_new(o, "apiVersion", json_string(api_version(t)));
    char uid[64], ts[32];
    new_uid(s, uid, sizeof uid);
    now_rfc3339(ts, sizeof ts, 0);
    json_object_set_new(m, "uid", json_string(uid));
    json_object_set_new(m, "creationTimestamp", json_string(ts));
    json_object_del(m, "deletionTimestamp");
    json_object_del(m, "resourceVersion");
    if (RT[t].generation)
        json_object_set_new(m, "generation", json_integer(1));
    apply_defaults(s, t, o);
    store_put(s, t, key, o, NULL);
    set_json(r, 201, json_deep_copy(o));
    json_decref(o);
}

/* Common tail of PUT and PATCH: checks the precondition, keeps what the subresource rules keep,
 * validates, bumps generation, stores. nw is consumed. */
/* ---- pods/resize (kube-apiserver >= 1.33) ---------------------------------------------------- */

/* A pod's QoS class computed from its spec, as kube-apiserver's ComputePodQOS: BestEffort when
 * no container requests or limits cpu or memory; Guaranteed when every container limits both
 * and its requests (absent: defaulted to the limits) equal them; Burstable otherwise. (Equal
 * means the same quantity string: "1" and "1000m" differ here, unlike the real server.) */
static const char *qos_class(json_t *spec)
{
    static const char *const res[] = {"cpu", "memory"};
    bool any = false, guaranteed = true;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        json_t *rs = json_object_get(c, "resources");
        json_t *req = json_object_get(rs, "requests"), *lim = json_object_get(rs, "limits");
        for (int k = 0; k < 2; k++) {
            json_t *q = json_object_get(req, res[k]), *l = json_object_get(lim, res[k]);
            any |= q || l;
            guaranteed &= l && (!q || json_equal(q, l));
        }
    }
    return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

/* Whether a resize changes a resource other than cpu and memory in one container's requests
 * or limits (which) from a to b, or removes one: the message, or NULL. */
static const char *resize_forbidden(json_t *a, json_t *b, const char *which)
{
    const char *k;
    json_t *v;
    json_object_foreach(a, k, v)
    {
        json_t *w = json_object_get(b, k);
        if (!w)
            return !strcmp(which, "limits") ? "resource limits cannot be removed"
                                            : "resource requests cannot be removed";
        if (!json_equal(v, w) && strcmp(k, "cpu") && strcmp(k, "memory"))
            return "only cpu and memory resources are mutable";
    }
    json_object_foreach(b, k, v)
    {
        if (!json_object_get(a, k) && strcmp(k, "cpu") && strcmp(k, "memory"))
            return "only cpu and memory resources are mutable";
    }
    return NULL;
}

/* The pod after a write to pods/NAME/resize, or NULL with r set (422): as kube-apiserver's
 * resize strategy, only spec.containers[*].resources are taken from the new object (matched
 * by container name; anything else it changes is dropped), then ValidatePodResize's rules:
 * only cpu and memory change, none is removed, and the QoS class stays. The status is left as
 * it is: since 1.33 the API server no longer writes status.resize (the kubelet reports the
 * resize in the PodResizePending / PodResizeInProgress conditions; there is none here). */
static json_t *resized(json_t *old, json_t *nw, const char *name, struct resp *r)
{
    json_t *out = json_deep_copy(old);
    json_t *ospec = json_object_get(out, "spec");
    size_t i, k;
    json_t *c, *n;
    const char *why = NULL;
    json_array_foreach(json_object_get(ospec, "containers"), i, c)
    {
        json_array_foreach(json_object_get(json_object_get(nw, "spec"), "containers"), k, n)
        {
            const char *cn = json_string_value(json_object_get(n, "name"));
            if (!cn || strcmp(cn, str_or(json_object_get(c, "name"), "")) != 0)
                continue;
            json_t *a = json_object_get(c, "resources"), *b = json_object_get(n, "resources");
            for (int w = 0; w < 2 && !why; w++) {
                const char *which = w ? "limits" : "requests";
                why = resize_forbidden(json_object_get(a, which), json_object_get(b, which), which);
            }
            if (json_is_object(b))
                json_object_set(c, "resources", b);
        }
    }
    if (!why && strcmp(qos_class(json_object_get(old, "spec")), qos_class(ospec)) != 0) {
        set_status(r, 422, "Invalid", name, NULL, "Pod", false,
                   "Pod \"%s\" is invalid: spec: Invalid value: \"%s\": Pod QOS Class may not "
                   "change as a result of resizing",
                   name, qos_class(json_object_get(old, "spec")));
        json_decref(out);
        return NULL;
    }
    if (why) {
        set_status(r, 422, "Invalid", name, NULL, "Pod", false,
                   "Pod \"%s\" is invalid: spec: Forbidden: %s", name, why);
        json_decref(out);
        return NULL;
    }
    return out;
}

static void finish_update(drv_apiserver *s, const struct route *rt, const char *key, json_t *old,
                          json_t *nw, struct resp *r)
{
    int t = rt->rt;
    const char *brv = mstr(nw, "resourceVersion");
    if (brv && *brv && strcmp(brv, mstr(old, "resourceVersion"))) {
        conflict(r, t, rt->name);
        json_decref(nw);
        return;
    }
    json_t *out;
    bool resize = !strcmp(rt->sub, "resize");
    if (resize) {
        out = resized(old, nw, rt->name, r);
        json_decref(nw);
        if (!out)
            return;
    } else if (!strcmp(rt->sub, "status")) {
        out = json_deep_copy(old);
        json_t *st = json_object_get(nw, "status");
        if (st)
            json_object_set(out, "status", st);
        else
            json_object_del(out, "status");
        json_decref(nw);
    } else {
        out = nw;
        if (RT[t].status) {
            json_t *st = json_object_get(old, "status");
            if (st)
                json_object_set(out, "status", st);
            else
                json_object_del(out, "status");
        }
    }
    /* Identity and system fields are not writable. */
    json_t *m = meta(out), *om = json_object_get(old, "metadata");
    const char *keep[] = {"uid",       "creationTimestamp", "namespace",
                          "name",      "deletionTimestamp", "deletionGracePeriodSeconds",
                          "generation"};
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
        json_t *v = json_object_get(om, keep[i]);
        if (v)
            json_object_set(m, keep[i], v);
        else
            json_object_del(m, keep[i]);
    }
    json_object_set_new(out, "kind", json_string(RT[t].kind));
    json_object_set_new(out, "apiVersion", json_string(api_version(t)));
    json_object_set(m, "resourceVersion", json_object_get(om, "resourceVersion"));
    if (!resize && validate(s, t, out, old, rt->ns, r)) {
        json_decref(out);
        return;
    }
    if (json_equal(out, old)) { /* a no-op write does not bump the resourceVersion */
        set_json(r, 200, json_deep_copy(old));
        json_decref(out);
        return;
    }
    if (RT[t].generation && !json_equal(json_object_get(out, "spec"), json_object_get(old, "spec")))
        json_object_set_new(
            m, "generation",
            json_integer(json_integer_value(json_object_get(om, "generation")) + 1));
    json_t *prev = json_incref(old);
    store_put(s, t, key, out, prev);
    json_decref(prev);
    set_json(r, 200, json_deep_copy(out));
    json_decref(out);
}

static void do_update(drv_apiserver *s, const struct route *rt, const char *body, size_t blen,
                      struct resp *r)
{
    json_error_t je;
    json_t *o = json_loadb(body, blen, 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                   "couldn't get version/kind; json parse error: %s", je.text);
        return;
    }
    const char *bname = mstr(o, "name");
    if (bname && strcmp(bname, rt->name)) {
        set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                   "the name of the object (%s) does not match the name on the URL (%s)", bname,
                   rt->name);
        json_decref(o);
        return;
    }
    char key[600];
    json_t *old = lookup(s, rt, key, sizeof key);
    if (!old) {
        not_found_obj(r, rt->rt, rt->name);
        json_decref(o);
        return;
    }
    const char *brv = mstr(o, "resourceVersion");
    if (!brv || !*brv) {
        set_status(r, 422, "Invalid", rt->name, RT[rt->rt].group, RT[rt->rt].kind, false,
                   "%s \"%s\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be "
                   "specified for an update",
                   RT[rt->rt].kind, rt->name);
        json_decref(o);
        return;
    }
    finish_update(s, rt, key, old, o, r);
}

static void do_patch(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt,
                     const char *body, size_t blen, struct resp *r)
{
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    char ctb[128] = "";
    if (ct)
        snprintf(ctb, sizeof ctb, "%.*s", (int)strcspn(ct, ";"), ct);
    int kind; /* 0 merge, 1 json, 2 strategic */
    if (!strcmp(ctb, "application/merge-patch+json"))
        kind = 0;
    else if (!strcmp(ctb, "application/json-patch+json"))
        kind = 1;
    else if (!strcmp(ctb, "application/strategic-merge-patch+json") && !RT[rt->rt].custom)
        kind = 2;
    else {
        if (!strcmp(ctb, "application/json") || !ct)
            set_status(r, 415, "UnsupportedMediaType", NULL, NULL, NULL, true,
                       "415: Unsupported Media Type");
        else
            set_status(r, 415, "UnsupportedMediaType", NULL, NULL, NULL, true,
                       "the body of the request was in an unknown format - accepted media types "
                       "include: application/json-patch+json, application/merge-patch+json, "
                       "application/apply-patch+yaml%s",
                       RT[rt->rt].custom ? "" : ", application/strategic-merge-patch+json");
        return;
    }
    json_t *p = json_loadb(body, blen, 0, NULL);
    if (!p) {
        set_status(r, 400, "BadRequest", NULL, NULL, NULL, false, "Invalid JSON Patch");
        return;
    }
    char key[600];
    json_t *old = lookup(s, rt, key, sizeof key);
    if (!old) {
        not_found_obj(r, rt->rt, rt->name);
        json_decref(p);
        return;
    }
    json_t *nw = kind == 1 ? json_patch(old, p) : merge_patch(old, p, kind == 2);
    json_decref(p);
    if (!nw) {
        set_status(r, 422, "Invalid", NULL, NULL, NULL, true,
                   "the server rejected our request due to an error in our request");
        return;
    }
    finish_update(s, rt, key, old, nw, r);
}

static void do_bind(drv_apiserver *s, const struct route *rt, const char *body, size_t blen,
                    struct resp *r)
{
    json_t *b = json_loadb(body, blen, 0, NULL);
    if (!json_is_object(b)) {
        json_decref(b);
        set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                   "couldn't get version/kind; json parse error");
        return;
    }
    const char *bname = mstr(b, "name");
    if (bname && strcmp(bname, rt->name)) {
        set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                   "name in URL does not match name in Binding object");
        json_decref(b);
        return;
    }
    const char *node = json_string_value(path_get(b, "target.name"));
    char key[600];
    json_t *pod = lookup(s, rt, key, sizeof key);
    if (!pod) {
        not_found_obj(r, R_PODS, rt->name);
    } else if (!node || !*node) {
        set_status(r, 422, "Invalid", rt->name, NULL, "Binding", false,
                   "Binding \"%s\" is invalid: target.name: Required value", rt->name);
    } else if (json_string_value(path_get(pod, "spec.nodeName")) &&
               *json_string_value(path_get(pod, "spec.nodeName"))) {
        set_status(r, 409, "Conflict", rt->name, NULL, "pods/binding", false,
                   "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is already "
                   "assigned to node \"%s\"",
                   rt->name, rt->name, json_string_value(path_get(pod, "spec.nodeName")));
    } else if (mstr(pod, "deletionTimestamp")) {
        set_status(r, 409, "Conflict", rt->name, NULL, "pods/binding", false,
                   "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is being deleted, "
                   "cannot be assigned to a host",
                   rt->name, rt->name);
    } else {
        json_t *nw = json_deep_copy(pod);
        json_object_set_new(json_object_get(nw, "spec"), "nodeName", json_string(node));
        json_t *st = json_object_get(nw, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(nw, "status", st);
        }
        json_t *conds = json_object_get(st, "conditions");
        if (!json_is_array(conds)) {
            conds = json_array();
            json_object_set_new(st, "conditions", conds);
        }
        char ts[32];
        now_rfc3339(ts, sizeof ts, 0);
        json_array_append_new(conds,
                              json_pack("{s:s,s:s,s:n,s:s}", "type", "PodScheduled", "status",
                                        "True", "lastProbeTime", "lastTransitionTime", ts));
        store_put(s, R_PODS, key, nw, pod);
        json_decref(nw);
        set_json(r, 201,
                 json_pack("{s:s,s:s,s:{},s:s,s:i}", "kind", "Status", "apiVersion", "v1",
                           "metadata", "status", "Success", "code", 201));
    }
    json_decref(b);
}

static void do_delete(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt,
                      const char *body, size_t blen, struct resp *r)
{
    int t = rt->rt;
    char key[600];
    json_t *o = lookup(s, rt, key, sizeof key);
    if (!o) {
        not_found_obj(r, t, rt->name);
        return;
    }
    json_t *opts = blen ? json_loadb(body, blen, 0, NULL) : NULL;
    long grace = -1;
    const char *gq = qarg(c, "gracePeriodSeconds");
    if (gq)
        grace = strtol(gq, NULL, 10);
    else if (json_is_integer(json_object_get(opts, "gracePeriodSeconds")))
        grace = (long)json_integer_value(json_object_get(opts, "gracePeriodSeconds"));
    char propb[32];
    const char *pq = qarg(c, "propagationPolicy");
    if (!pq)
        pq = json_string_value(json_object_get(opts, "propagationPolicy"));
    snprintf(propb, sizeof propb, "%s", pq ? pq : "");
    const char *prop = propb;
    json_t *pre_rv = path_get(opts, "preconditions.resourceVersion");
    if (json_is_string(pre_rv) &&
        strcmp(json_string_value(pre_rv), str_or(path_get(o, "metadata.resourceVersion"), ""))) {
        json_decref(opts);
        conflict(r, t, rt->name);
        return;
    }
    /* A uid precondition protects an object created again under the same name (kubelets
     * confirm a graceful pod deletion this way); kube-apiserver answers 409 Conflict. */
    json_t *pre_uid = path_get(opts, "preconditions.uid");
    const char *uid = str_or(path_get(o, "metadata.uid"), "");
    if (json_is_string(pre_uid) && strcmp(json_string_value(pre_uid), uid)) {
        set_status(r, 409, "Conflict", rt->name, RT[t].group, RT[t].plural, false,
                   "Operation cannot be fulfilled on %s \"%s\": Precondition failed: UID in "
                   "precondition: %s, UID in object meta: %s",
                   RT[t].plural, rt->name, json_string_value(pre_uid), uid);
        json_decref(opts);
        return;
    }
    json_decref(opts);
    if (t == R_PODS) {
        if (grace < 0)
            grace = (long)json_integer_value(path_get(o, "spec.terminationGracePeriodSeconds"));
        const char *node = json_string_value(path_get(o, "spec.nodeName"));
        if (grace > 0 && node && *node) {
            if (mstr(o, "deletionTimestamp")) {
                set_json(r, 200, json_deep_copy(o));
                return;
            }
            json_t *nw = json_deep_copy(o);
            char ts[32];
            now_rfc3339(ts, sizeof ts, grace);
            json_object_set_new(meta(nw), "deletionTimestamp", json_string(ts));
            json_object_set_new(meta(nw), "deletionGracePeriodSeconds", json_integer(grace));
            store_put(s, t, key, nw, o);
            set_json(r, 200, nw);
            return;
        }
        json_t *last = json_deep_copy(o);
        store_del(s, t, key);
        set_json(r, 200, last);
        return;
    }
    if (prop && !strcmp(prop, "Foreground")) {
        if (!mstr(o, "deletionTimestamp")) {
            json_t *nw = json_deep_copy(o);
            char ts[32];
            now_rfc3339(ts, sizeof ts, 0);
            json_object_set_new(meta(nw), "deletionTimestamp", json_string(ts));
            json_object_set_new(meta(nw), "deletionGracePeriodSeconds", json_integer(0));
            json_object_set_new(meta(nw), "finalizers", json_pack("[s]", "foregroundDeletion"));
            store_put(s, t, key, nw, o);
            o = nw;
            struct fgdel *fg = drv_realloc(s->fg, (size_t)(s->nfg + 1) * sizeof *fg);
            if (fg) {
                s->fg = fg;
                s->fg[s->nfg++] = (struct fgdel){t, drv_strdup(key), s->seq};
            }
            set_json(r, 200, nw);
            return;
        }
        set_json(r, 200, json_deep_copy(o));
        return;
    }
    json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:{s:s}}", "kind", "Status", "apiVersion", "v1",
                           "metadata", "status", "Success", "details", "name", rt->name);
    json_t *d = json_object_get(st, "details");
    if (*RT[t].group)
        json_object_set_new(d, "group", json_string(RT[t].group));
    json_object_set_new(d, "kind", json_string(RT[t].plural));
    json_object_set_new(d, "uid", json_string(mstr(o, "uid")));
    if (t == R_CRDS && !strcmp(rt->name, "trainingjobs.drover.dev")) {
        s->crd = false;
        json_object_clear(s->store[R_TJ]);
        s->sorted_ok[R_TJ] = false;
    }
    if (t == R_CRDS && !strcmp(rt->name, PG_CRD)) {
        s->pg_crd = false;
        json_object_clear(s->store[R_PG]);
        s->sorted_ok[R_PG] = false;
    }
    if (t == R_CRDS && !strcmp(rt->name, QUEUE_CRD)) {
        s->queue_crd = false;
        json_object_clear(s->store[R_QUEUE]);
    }
    store_del(s, t, key);
    set_json(r, 200, st);
}

/* ---- watch -------------------------------------------------------------------------------- */

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
    if (w->rt.ns[0] && strcmp(str_or(path_get(o, "metadata.namespace"), ""), w->rt.ns))
        return false;
    if (w->rt.name[0] && strcmp(str_or(path_get(o, "metadata.name"), ""), w->rt.name))
        return false;
    return sel_match(&w->ls, o, false) && sel_match(&w->fs, o, true);
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

static ssize_t watch_read(void *cls, uint64_t pos, char *out, size_t max)
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
                json_t *bm = json_pack("{s:s,s:s,s:{s:s,s:n}}", "kind", RT[w->rt.rt].kind,
                                       "apiVersion", api_version(w->rt.rt), "metadata",
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

static void watch_free(void *cls)
{
    struct watch *w = cls;
    if (!w)
        return;
    drv_free(w->buf);
    drv_free(w);
}

/* Sets up a watch; returns NULL with r filled on an error answer. */
static struct watch *start_watch(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt,
                                 struct resp *r)
{
    struct watch *w = drv_calloc(1, sizeof *w);
    if (!w) {
        set_status(r, 500, "InternalError", NULL, NULL, NULL, false, "out of memory");
        return NULL;
    }
    w->s = s;
    w->rt = *rt;
    char err[512];
    if (parse_selector(qarg(c, "labelSelector"), false, &w->ls, err, sizeof err) ||
        parse_selector(qarg(c, "fieldSelector"), true, &w->fs, err, sizeof err)) {
        set_status(r, 400, "BadRequest", NULL, NULL, NULL, false, "%s", err);
        drv_free(w);
        return NULL;
    }
    /* A watch on one object arrives as fieldSelector=metadata.name=NAME from clients. */
    const char *bm = qarg(c, "allowWatchBookmarks");
    w->bookmarks = bm && (!strcmp(bm, "true") || !strcmp(bm, "1"));
    long to = qarg(c, "timeoutSeconds") ? strtol(qarg(c, "timeoutSeconds"), NULL, 10) : 0;
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
    const char *rvq = qarg(c, "resourceVersion");
    if (!rvq || !*rvq || !strcmp(rvq, "0")) {
        /* "Get state and start at most recent": synthetic ADDED for what exists now. */
        size_t nk = 0;
        const char **keys = sorted_keys(s->store[rt->rt], &nk);
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
            set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                       "resourceVersion: Invalid value: \"%s\": must be a number", rvq);
            drv_free(w);
            return NULL;
        }
    }
    return w;
}

/* ---- discovery ---------------------------------------------------------------------------- */

static char *apis_doc(drv_apiserver *s)
{
    json_t *doc = json_loads(s->crd ? s->fx_apis_crd : s->fx_apis, 0, NULL);
    json_t *groups = json_object_get(doc, "groups"), *keep = json_array();
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g)
    {
        const char *n = str_or(json_object_get(g, "name"), "");
        if (!strcmp(n, "coordination.k8s.io") || !strcmp(n, "apiextensions.k8s.io") ||
            (!strcmp(n, "drover.dev") && s->crd)) {
            /* Only the versions this server serves. */
            json_t *cp = json_deep_copy(g);
            json_t *pv = json_object_get(cp, "preferredVersion");
            json_object_set_new(cp, "versions", json_pack("[O]", pv));
            json_array_append_new(keep, cp);
        }
    }
    {
        /* Not in the recorded documents (kube-apiserver serves it always): PriorityClasses. */
        json_t *gv =
            json_pack("{s:s,s:s}", "groupVersion", "scheduling.k8s.io/v1", "version", "v1");
        json_array_append_new(keep, json_pack("{s:s,s:[O],s:o}", "name", "scheduling.k8s.io",
                                              "versions", gv, "preferredVersion", gv));
    }
    if (s->pg_crd) {
        /* Not in the recorded documents: a CRD's group as kube-apiserver lists one. */
        json_t *gv = json_pack("{s:s,s:s}", "groupVersion", "scheduling.x-k8s.io/v1alpha1",
                               "version", "v1alpha1");
        json_array_append_new(keep, json_pack("{s:s,s:[O],s:o}", "name", "scheduling.x-k8s.io",
                                              "versions", gv, "preferredVersion", gv));
    }
    json_object_set_new(doc, "groups", keep);
    char *out = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return out;
}

static json_t *resource_entry(int rt, const char *name, bool sub)
{
    json_t *verbs = sub ? json_pack("[s,s,s]", "get", "patch", "update")
                        : json_pack("[s,s,s,s,s,s,s,s]", "create", "delete", "deletecollection",
                                    "get", "list", "patch", "update", "watch");
    json_t *e = json_pack("{s:s,s:s,s:b,s:s,s:o}", "name", name, "singularName", "", "namespaced",
                          RT[rt].namespaced, "kind", RT[rt].kind, "verbs", verbs);
    if (!sub && rt == R_CRDS) {
        json_object_set_new(e, "shortNames", json_pack("[s,s]", "crd", "crds"));
        json_object_set_new(e, "categories", json_pack("[s]", "api-extensions"));
    }
    return e;
}

/* Discovery and OpenAPI. Returns true when the path was one of them. */
static bool serve_discovery(drv_apiserver *s, struct MHD_Connection *c, const char *url,
                            struct resp *r)
{
    if (!strcmp(url, "/version")) {
        set_fixture(r, s->fx_version);
    } else if (!strcmp(url, "/api")) {
        set_fixture(r, s->fx_api);
    } else if (!strcmp(url, "/api/v1") && s->pod_resize) {
        /* The recorded 1.24 list, with the entry kube-apiserver >= 1.33 lists after pods/proxy
         * (the same shape as pods/status: kind Pod, verbs get, patch, update). */
        json_t *doc = json_loads(s->fx_api_v1, 0, NULL), *res = json_object_get(doc, "resources");
        size_t i, at = json_array_size(res);
        json_t *e;
        json_array_foreach(res, i, e)
        {
            if (!strcmp(str_or(json_object_get(e, "name"), ""), "pods/proxy"))
                at = i + 1;
        }
        json_array_insert_new(res, at, resource_entry(R_PODS, "pods/resize", true));
        set_json(r, 200, doc);
    } else if (!strcmp(url, "/api/v1")) {
        set_fixture(r, s->fx_api_v1);
    } else if (!strcmp(url, "/apis")) {
        r->code = 200;
        r->body = apis_doc(s);
        r->len = r->body ? strlen(r->body) : 0;
        r->ctype = "application/json";
    } else if (!strcmp(url, "/apis/coordination.k8s.io/v1")) {
        set_fixture(r, s->fx_coord);
    } else if (!strcmp(url, "/apis/drover.dev/v1alpha1")) {
        if (!s->crd) {
            not_found_page(r);
        } else if (!s->queue_crd) {
            set_fixture(r, s->fx_drover);
        } else { /* the recorded list, and the Queue CRD's resources as a real server adds them */
            json_t *doc = json_loads(s->fx_drover, 0, NULL);
            json_t *res = json_object_get(doc, "resources"),
                   *q = resource_entry(R_QUEUE, "queues", false);
            json_object_set_new(q, "singularName", json_string("queue"));
            json_array_append_new(res, q);
            json_array_append_new(res, resource_entry(R_QUEUE, "queues/status", true));
            set_json(r, 200, doc);
        }
    } else if (!strcmp(url, "/apis/scheduling.k8s.io/v1")) {
        json_t *res = json_array(), *pc = resource_entry(R_PC, "priorityclasses", false);
        json_object_set_new(pc, "singularName", json_string("priorityclass"));
        json_object_set_new(pc, "shortNames", json_pack("[s]", "pc"));
        json_array_append_new(res, pc);
        set_json(r, 200,
                 json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                           "groupVersion", "scheduling.k8s.io/v1", "resources", res));
    } else if (!strcmp(url, "/apis/scheduling.x-k8s.io/v1alpha1")) {
        if (!s->pg_crd) {
            not_found_page(r);
            return true;
        }
        json_t *res = json_array(), *pg = resource_entry(R_PG, "podgroups", false);
        json_object_set_new(pg, "singularName", json_string("podgroup"));
        json_object_set_new(pg, "shortNames", json_pack("[s,s]", "pg", "pgs"));
        json_array_append_new(res, pg);
        json_array_append_new(res, resource_entry(R_PG, "podgroups/status", true));
        set_json(r, 200,
                 json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                           "groupVersion", "scheduling.x-k8s.io/v1alpha1", "resources", res));
    } else if (!strcmp(url, "/apis/apiextensions.k8s.io/v1")) {
        json_t *res = json_array();
        json_array_append_new(res, resource_entry(R_CRDS, "customresourcedefinitions", false));
        json_array_append_new(res,
                              resource_entry(R_CRDS, "customresourcedefinitions/status", true));
        set_json(r, 200,
                 json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                           "groupVersion", "apiextensions.k8s.io/v1", "resources", res));
    } else if (!strcmp(url, "/openapi/v3")) {
        json_t *idx = json_loads(s->fx_v3index, 0, NULL), *paths = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(idx, "paths"), k, v)
        {
            if (!strcmp(k, "api/v1") || !strcmp(k, "apis/coordination.k8s.io/v1"))
                json_object_set(paths, k, v);
        }
        json_object_set_new(idx, "paths", paths);
        set_json(r, 200, idx);
    } else if (!strcmp(url, "/openapi/v3/api/v1") ||
               !strcmp(url, "/openapi/v3/apis/coordination.k8s.io/v1")) {
        const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
        if (!ae || !strstr(ae, "gzip")) {
            set_status(r, 406, "NotAcceptable", NULL, NULL, NULL, false,
                       "this test server serves OpenAPI documents gzip-encoded only");
            return true;
        }
        bool v1 = !strcmp(url, "/openapi/v3/api/v1");
        r->code = 200;
        r->body = v1 ? s->fx_v3_v1 : s->fx_v3_coord;
        r->len = v1 ? s->fx_v3_v1_len : s->fx_v3_coord_len;
        r->body_static = true;
        r->ctype = "application/json";
        r->encoding = "gzip";
    } else if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/livez")) {
        set_fixture(r, "ok");
        r->ctype = "text/plain; charset=utf-8";
    } else {
        return false;
    }
    return true;
}

/* ---- MHD glue ----------------------------------------------------------------------------- */

struct conn {
    char *body;
    size_t len, cap;
    bool too_big;
};

static enum MHD_Result queue(struct MHD_Connection *c, struct resp *r)
{
    struct MHD_Response *mr = MHD_create_response_from_buffer(
        r->len, r->body ? r->body : (char *)"",
        r->body_static || !r->body ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_COPY);
    if (!r->body_static)
        free(r->body); /* jansson's json_dumps uses malloc */
    if (!mr)
        return MHD_NO;
    MHD_add_response_header(mr, "Content-Type", r->ctype ? r->ctype : "application/json");
    MHD_add_response_header(mr, "Cache-Control", "no-cache, private");
    if (r->encoding)
        MHD_add_response_header(mr, "Content-Encoding", r->encoding);
    if (r->retry_after > 0) {
        char b[16];
        snprintf(b, sizeof b, "%d", r->retry_after);
        MHD_add_response_header(mr, "Retry-After", b);
    }
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->code, mr);
    MHD_destroy_response(mr);
    return ok;
}

/* Did the client present a certificate that chains to the trusted client CA? */
static bool client_verified(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session)
        return false;
    gnutls_session_t tls = (gnutls_session_t)ci->tls_session;
    unsigned status = 0, npeers = 0;
    return gnutls_certificate_get_peers(tls, &npeers) != NULL && npeers > 0 &&
           gnutls_certificate_verify_peers2(tls, &status) == 0 && status == 0;
}

/* ---- chaos (drv_apiserver_chaos) --------------------------------------------------------- */

enum { CHAOS_SLOW = -1, CHAOS_SLOW_MS = 300 };

/* Whether c's User-Agent begins with prefix ("": every request): whom chaos and holds touch. */
static bool agent_matches(struct MHD_Connection *c, const char *prefix)
{
    if (!prefix[0])
        return true;
    const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
    return ua && strncmp(ua, prefix, strlen(prefix)) == 0;
}

/* splitmix64: a uniform double in [0, 1) from the server's chaos generator. */
static double chaos_uniform(drv_apiserver *s)
{
    uint64_t z = (s->chaos_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* Under s->mu: whether this request meets a fault, and which. Returns an HTTP status to answer
 * instead of serving it, CHAOS_SLOW to serve it late, or 0 (served as usual; a dropped watch
 * or an expired window, if drawn, has already been applied). */
static int chaos_fault(drv_apiserver *s, bool is_watch)
{
    if (chaos_uniform(s) >= s->chaos_rate)
        return 0;
    switch ((int)(chaos_uniform(s) * 6)) {
    case 0:
        s->chaos_count.conflict++;
        return 409;
    case 1:
        s->chaos_count.throttled++;
        return 429;
    case 2:
        s->chaos_count.internal++;
        return 500;
    case 3:
        s->chaos_count.slow++;
        return CHAOS_SLOW;
    case 4:
        s->chaos_count.dropped++;
        s->drop_gen++;
        pthread_cond_broadcast(&s->cv);
        return 0;
    default:
        if (!is_watch) { /* 410 is a watch's answer: a list or write is served late instead */
            s->chaos_count.slow++;
            return CHAOS_SLOW;
        }
        s->chaos_count.gone++;
        s->compacted = s->rv;
        pthread_cond_broadcast(&s->cv);
        return 0;
    }
}

/* Appends text to q (of MAX_LOGGED_QUERY bytes), the characters of `esc` percent-escaped. */
static void query_put(char *q, const char *text, const char *esc)
{
    size_t n = strlen(q);
    for (const char *p = text; p && *p && n + 4 < MAX_LOGGED_QUERY; p++)
        n += (size_t)(strchr(esc, *p) ? snprintf(q + n, 4, "%%%02X", (unsigned char)*p)
                                      : snprintf(q + n, 2, "%c", *p));
}

/* Appends "?key=value" or "&key=value" to the query text of log_request: "&", " " and "%"
 * escaped so that the line splits back into its fields, "=" too in the key. */
static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    (void)kind;
    char *q = cls;
    query_put(q, q[0] ? "&" : "?", "");
    query_put(q, key, "&= %");
    if (value) {
        query_put(q, "=", "");
        query_put(q, value, "& %");
    }
    return MHD_YES;
}

/* With opts.request_log: "CODE METHOD PATH?QUERY USER-AGENT" (the query rebuilt from the
 * arguments, "&", "=" in keys, " " and "%" percent-escaped; at most MAX_LOGGED_QUERY bytes). */
static void log_request(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                        const char *url, int code)
{
    if (!s->request_log)
        return;
    char q[MAX_LOGGED_QUERY] = "";
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_arg, q);
    const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
    char line[MAX_LOGGED_QUERY + 640];
    snprintf(line, sizeof line, "%d %s %.400s%s %.120s", code, method, url, q, ua ? ua : "-");
    pthread_mutex_lock(&s->mu);
    log_append(&s->req_buf, &s->req_len, &s->req_cap, line);
    pthread_mutex_unlock(&s->mu);
}

/* Once keeping writes (under s->mu): the write about to be served, kept as it was sent. An
 * allocation failing loses it and says so: the replay would not be the same requests. */
static void keep_write(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                       const char *url, const struct conn *cn)
{
    if (!s->keep_writes)
        return;
    char q[MAX_LOGGED_QUERY] = "";
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_arg, q);
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    size_t np = strlen(url) + strlen(q) + 1;
    drv_apiserver_write w = {.len = cn->len};
    snprintf(w.method, sizeof w.method, "%s", method);
    w.path = drv_malloc(np);
    w.content_type = drv_strdup(ct ? ct : "");
    w.body = drv_malloc(cn->len + 1);
    if (!w.path || !w.content_type || !w.body ||
        drv_grow(&s->writes, sizeof *s->writes, &s->cap_writes, s->nwrites + 1) != 0) {
        drv_free(w.path);
        drv_free(w.content_type);
        drv_free(w.body);
        fprintf(stderr, "test API server: out of memory: a write not kept\n");
        return;
    }
    snprintf(w.path, np, "%s%s", url, q);
    if (cn->len)
        memcpy(w.body, cn->body, cn->len);
    w.body[cn->len] = 0;
    s->writes[s->nwrites++] = w;
}

void drv_apiserver_keep_writes(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    s->keep_writes = true;
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_writes_free(drv_apiserver_write *w, int32_t n)
{
    for (int32_t i = 0; w && i < n; i++) {
        drv_free(w[i].path);
        drv_free(w[i].content_type);
        drv_free(w[i].body);
    }
    drv_free(w);
}

int32_t drv_apiserver_writes(drv_apiserver *s, drv_apiserver_write **out)
{
    pthread_mutex_lock(&s->mu);
    int32_t n = s->nwrites;
    drv_apiserver_write *w = drv_calloc(n > 0 ? (size_t)n : 1, sizeof *w);
    int32_t i = 0;
    for (; w && i < n; i++) {
        const drv_apiserver_write *k = &s->writes[i];
        w[i] = (drv_apiserver_write){.len = k->len};
        memcpy(w[i].method, k->method, sizeof w[i].method);
        w[i].path = drv_strdup(k->path);
        w[i].content_type = drv_strdup(k->content_type);
        w[i].body = drv_malloc(k->len + 1);
        if (!w[i].path || !w[i].content_type || !w[i].body)
            break;
        memcpy(w[i].body, k->body, k->len + 1);
    }
    pthread_mutex_unlock(&s->mu);
    if (!w || i < n) {
        drv_apiserver_writes_free(w, w ? i + 1 : 0);
        return -1;
    }
    *out = w;
    return n;
}

/* Whether c's client has closed its connection (a killed process: its kernel closed the
 * socket) while its request waited: an injected delay or slow fault, or a server thread that a
 * loaded machine did not run. kube-apiserver cancels a request's context when its client goes,
 * so a write not yet committed then is not applied; neither is one here, or a killed
 * controller's binding would land after its successor listed the node as free. */
static bool client_gone(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    char b;
    ssize_t n = ci ? recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) : 1;
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Queues r; with opts.audit, an answer of 400 or more is logged first: "CODE METHOD URL AGENT". */
static enum MHD_Result answer(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                              const char *url, struct resp *r)
{
    log_request(s, c, method, url, r->code);
    if (s->audit && r->code >= 400) {
        const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
        char line[640];
        snprintf(line, sizeof line, "%d %s %.400s %.120s", r->code, method, url, ua ? ua : "-");
        pthread_mutex_lock(&s->mu);
        log_append(&s->err_buf, &s->err_len, &s->err_cap, line);
        pthread_mutex_unlock(&s->mu);
    }
    return queue(c, r);
}

/* A request drv_apiserver_hold matches waits here (no lock held on return) until the hold is
 * released or the server stops: what lets a test order a race as it chooses, without sleeps.
 * Returns the status to answer instead of serving it (drv_apiserver_release_answer), or 0.
 * hold_on is read under s->mu even with no hold: it is written under it, and every request
 * takes s->mu twice more anyway (its seq, then to be served). held is polled
 * (drv_apiserver_held), so nothing waits on s->cv for it to grow. */
static int hold_wait(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                     const char *url)
{
    int answer = 0;
    pthread_mutex_lock(&s->mu);
    if (s->hold_on && !strcmp(method, s->hold_method) && !strcmp(url, s->hold_path) &&
        agent_matches(c, s->hold_agent)) {
        unsigned gen = s->hold_gen;
        s->held++;
        while (s->hold_gen == gen && !s->stopping)
            pthread_cond_wait(&s->cv, &s->mu);
        s->held--;
        answer = s->hold_answer;
    }
    pthread_mutex_unlock(&s->mu);
    return answer;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    drv_apiserver *s = cls;
    struct conn *cn = *con_cls;
    if (!cn) {
        cn = drv_calloc(1, sizeof *cn);
        if (!cn)
            return MHD_NO;
        *con_cls = cn;
        return MHD_YES;
    }
    if (*upload_size) {
        if (cn->len + *upload_size > MAX_BODY) {
            cn->too_big = true;
        } else {
            if (cn->len + *upload_size + 1 > cn->cap) {
                size_t nc = (cn->len + *upload_size + 1) * 2;
                char *nb = drv_realloc(cn->body, nc);
                if (!nb)
                    return MHD_NO;
                cn->body = nb;
                cn->cap = nc;
            }
            memcpy(cn->body + cn->len, upload, *upload_size);
            cn->len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    int delay;
    pthread_mutex_lock(&s->mu);
    s->seq++;
    delay = s->delay_ms;
    pthread_mutex_unlock(&s->mu);
    if (delay > 0) {
        struct timespec t = {delay / 1000, (long)(delay % 1000) * 1000000L};
        nanosleep(&t, NULL);
    }
    int held_answer = hold_wait(s, c, method, url);
    struct resp r = {0};
    if (held_answer == 409) { /* (as kube-apiserver refuses a stale resourceVersion) */
        struct route hr;
        pthread_mutex_lock(&s->mu);
        bool routed = parse_route(s, url, &hr) == 0;
        pthread_mutex_unlock(&s->mu);
        if (routed)
            conflict(&r, hr.rt, hr.name);
        else
            not_found_page(&r);
        return answer(s, c, method, url, &r);
    } else if (held_answer > 0) {
        set_status(&r, held_answer, "InternalError", NULL, NULL, NULL, true, "injected fault: %d",
                   held_answer);
        return answer(s, c, method, url, &r);
    }
    if (s->client_auth && !client_verified(c)) {
        set_status(&r, 401, "Unauthorized", NULL, NULL, NULL, false, "Unauthorized");
        return answer(s, c, method, url, &r);
    }
    if (cn->too_big) {
        set_status(&r, 413, "RequestEntityTooLarge", NULL, NULL, NULL, false,
                   "the request body is larger than %u bytes", MAX_BODY);
        return answer(s, c, method, url, &r);
    }
    pthread_mutex_lock(&s->mu);
    run_gc(s);
    if (serve_discovery(s, c, url, &r)) {
        pthread_mutex_unlock(&s->mu);
        return answer(s, c, method, url, &r);
    }
    struct route rt;
    if (parse_route(s, url, &rt)) {
        pthread_mutex_unlock(&s->mu);
        not_found_page(&r);
        return answer(s, c, method, url, &r);
    }
    if (s->fail_count > 0) {
        s->fail_count--;
        int code = s->fail_status;
        const char *reason = code == 409   ? "Conflict"
                             : code == 429 ? "TooManyRequests"
                             : code == 503 ? "ServiceUnavailable"
                             : code == 504 ? "Timeout"
                                           : "InternalError";
        r.retry_after = s->fail_retry_after;
        pthread_mutex_unlock(&s->mu);
        set_status(&r, code, reason, NULL, NULL, NULL, true, "injected fault: %d %s", code, reason);
        r.retry_after = r.retry_after; /* kept from above */
        return answer(s, c, method, url, &r);
    }
    const char *wq = qarg(c, "watch");
    bool is_watch = wq && (!strcmp(wq, "1") || !strcmp(wq, "true"));
    if (s->chaos_rate > 0 && agent_matches(c, s->chaos_agent)) {
        int code = chaos_fault(s, is_watch);
        if (code == CHAOS_SLOW) {
            pthread_mutex_unlock(&s->mu);
            struct timespec t = {0, CHAOS_SLOW_MS * 1000000L};
            nanosleep(&t, NULL);
            pthread_mutex_lock(&s->mu);
        } else if (code > 0) {
            pthread_mutex_unlock(&s->mu);
            r.retry_after = code == 429 ? 1 : 0;
            set_status(&r, code,
                       code == 409   ? "Conflict"
                       : code == 429 ? "TooManyRequests"
                                     : "InternalError",
                       NULL, NULL, NULL, true, "injected fault: %d", code);
            return answer(s, c, method, url, &r);
        }
    }
    if (strcmp(method, "GET") != 0 && client_gone(c)) { /* a write whose client went */
        s->abandoned++;
        pthread_mutex_unlock(&s->mu);
        return MHD_NO; /* (not served: the connection is closed) */
    }
    if (!strcmp(method, "GET") && is_watch) {
        struct watch *w = start_watch(s, c, &rt, &r);
        pthread_mutex_unlock(&s->mu);
        if (!w)
            return answer(s, c, method, url, &r);
        struct MHD_Response *mr =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, watch_read, w, watch_free);
        if (!mr) {
            watch_free(w);
            return MHD_NO;
        }
        MHD_add_response_header(mr, "Content-Type", "application/json");
        MHD_add_response_header(mr, "Cache-Control", "no-cache, private");
        log_request(s, c, method, url, 200);
        enum MHD_Result ok = MHD_queue_response(c, 200, mr);
        MHD_destroy_response(mr);
        return ok;
    }
    bool named = rt.name[0] != 0;
    if (strcmp(method, "GET") != 0)
        keep_write(s, c, method, url, cn);
    if (!strcmp(method, "GET")) {
        if (named)
            do_get(s, c, &rt, &r);
        else
            do_list(s, c, &rt, &r);
    } else if (!strcmp(method, "POST") && !named) {
        do_create(s, &rt, cn->body, cn->len, &r);
    } else if (!strcmp(method, "POST") && !strcmp(rt.sub, "binding")) {
        do_bind(s, &rt, cn->body, cn->len, &r);
    } else if (!strcmp(method, "PUT") && named && strcmp(rt.sub, "binding")) {
        do_update(s, &rt, cn->body, cn->len, &r);
    } else if (!strcmp(method, "PATCH") && named && strcmp(rt.sub, "binding")) {
        do_patch(s, c, &rt, cn->body, cn->len, &r);
    } else if (!strcmp(method, "DELETE") && named && !rt.sub[0]) {
        do_delete(s, c, &rt, cn->body, cn->len, &r);
    } else {
        set_status(&r, 405, "MethodNotAllowed", NULL, NULL, NULL, true,
                   "the server does not allow this method on the requested resource");
    }
    pthread_mutex_unlock(&s->mu);
    return answer(s, c, method, url, &r);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    struct conn *cn = *con_cls;
    if (cn) {
        drv_free(cn->body);
        drv_free(cn);
        *con_cls = NULL;
    }
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

static const char *const SEED_NS[] = {"default", "kube-system", "kube-public", "kube-node-lease"};

static int load_fixtures(drv_apiserver *s, const char *dir, drv_diag *d)
{
    struct {
        char **dst;
        const char *name;
    } fx[] = {
        {&s->fx_api, "01-discovery-api"},
        {&s->fx_api_v1, "01-discovery-api-v1"},
        {&s->fx_apis, "01-discovery-apis"},
        {&s->fx_apis_crd, "08-discovery-apis-with-crd"},
        {&s->fx_coord, "01-discovery-coordination-v1"},
        {&s->fx_drover, "08-discovery-drover-v1alpha1"},
        {&s->fx_version, "01-discovery-version"},
    };
    for (size_t i = 0; i < sizeof fx / sizeof *fx; i++) {
        *fx[i].dst = fixture_body(dir, fx[i].name);
        if (!*fx[i].dst)
            return drv_fail(d, DRV_EIO, "%s/transcripts/%s/response.txt: cannot read", dir,
                            fx[i].name);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/openapi/v3-index.json", dir);
    s->fx_v3index = read_file(path, NULL);
    snprintf(path, sizeof path, "%s/openapi/v3-api_v1.json.gz", dir);
    s->fx_v3_v1 = read_file(path, &s->fx_v3_v1_len);
    snprintf(path, sizeof path, "%s/openapi/v3-apis_coordination.k8s.io_v1.json.gz", dir);
    s->fx_v3_coord = read_file(path, &s->fx_v3_coord_len);
    if (!s->fx_v3index || !s->fx_v3_v1 || !s->fx_v3_coord)
        return drv_fail(d, DRV_EIO, "%s/openapi: cannot read the OpenAPI documents", dir);
    return 0;
}

static json_t *crd_object(void)
{
    return json_pack(
        "{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:[s]},s:[{s:s,s:b,s:b,s:{s:{}},"
        "s:[{s:s,s:s,s:s},{s:s,s:s,s:s}]}]}}",
        "apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition", "metadata",
        "name", "trainingjobs.drover.dev", "spec", "group", "drover.dev", "scope", "Namespaced",
        "names", "plural", "trainingjobs", "singular", "trainingjob", "kind", "TrainingJob",
        "listKind", "TrainingJobList", "shortNames", "tj", "versions", "name", "v1alpha1", "served",
        1, "storage", 1, "subresources", "status", "additionalPrinterColumns", "name", "State",
        "type", "string", "jsonPath", ".status.conditions[-1:].type", "name", "Age", "type", "date",
        "jsonPath", ".metadata.creationTimestamp");
}

/* deploy/podgroup-crd.yaml's names, versions and status subresource (its schema is not
 * checked here). */
static json_t *pg_crd_object(void)
{
    return json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:[s,s]},s:[{s:s,s:b,s:b,"
                     "s:{s:{}}}]}}",
                     "apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition",
                     "metadata", "name", PG_CRD, "spec", "group", "scheduling.x-k8s.io", "scope",
                     "Namespaced", "names", "plural", "podgroups", "singular", "podgroup", "kind",
                     "PodGroup", "listKind", "PodGroupList", "shortNames", "pg", "pgs", "versions",
                     "name", "v1alpha1", "served", 1, "storage", 1, "subresources", "status");
}

/* deploy/queue-crd.yaml's names, versions and status subresource (its schema and columns are
 * QUEUE_COLS here). */
static json_t *queue_crd_object(void)
{
    return json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:s,s:s,s:s},s:[{s:s,s:b,s:b,"
                     "s:{s:{}}}]}}",
                     "apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition",
                     "metadata", "name", QUEUE_CRD, "spec", "group", "drover.dev", "scope",
                     "Cluster", "names", "plural", "queues", "singular", "queue", "kind", "Queue",
                     "listKind", "QueueList", "versions", "name", "v1alpha1", "served", 1,
                     "storage", 1, "subresources", "status");
}

int drv_apiserver_start(drv_apiserver **out, const drv_apiserver_opts *o, drv_diag *d)
{
    drv_apiserver *s = drv_calloc(1, sizeof *s);
    if (!s)
        return drv_fail(d, DRV_ENOMEM, "apiserver: out of memory");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->cap = o->window > 0 ? (o->window < MAX_WINDOW ? o->window : MAX_WINDOW) : DEF_WINDOW;
    s->bookmark_ms = o->bookmark_ms > 0 ? o->bookmark_ms : 1000;
    s->audit = o->audit;
    s->request_log = o->request_log;
    s->pod_resize = o->pod_resize;
    s->ring = drv_calloc((size_t)s->cap, sizeof *s->ring);
    s->rv = 100;
    int rc = s->ring ? 0 : drv_fail(d, DRV_ENOMEM, "apiserver: out of memory");
    for (int i = 0; !rc && i < R_N; i++)
        if (!(s->store[i] = json_object()))
            rc = drv_fail(d, DRV_ENOMEM, "apiserver: out of memory");
    if (!rc)
        rc = load_fixtures(s, o->fixture_dir, d);
    if (rc) {
        drv_apiserver_free(s);
        return rc;
    }
    struct resp r = {0};
    for (size_t i = 0; i < sizeof SEED_NS / sizeof *SEED_NS; i++) {
        char b[128];
        snprintf(b, sizeof b,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
                 "{\"name\":\"%s\"}}",
                 SEED_NS[i]);
        struct route rt = {.rt = R_NAMESPACES};
        do_create(s, &rt, b, strlen(b), &r);
        free(r.body);
    }
    for (int k = 0; k < 3; k++) {
        if (!(k == 0 ? o->crd_installed : k == 1 ? o->podgroup_crd : o->queue_crd))
            continue;
        json_t *crd = k == 0 ? crd_object() : k == 1 ? pg_crd_object() : queue_crd_object();
        char *b = json_dumps(crd, JSON_COMPACT);
        json_decref(crd);
        struct route rt = {.rt = R_CRDS};
        do_create(s, &rt, b, strlen(b), &r);
        free(r.body);
        free(b);
    }
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
    s->client_auth = o && o->tls_cert_pem && o->tls_key_pem && o->tls_client_ca_pem;
    if (s->client_auth) /* the trusted CA makes the daemon ask clients for a certificate */
        s->mhd = MHD_start_daemon(
            flags | MHD_USE_TLS, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, &sa,
            MHD_OPTION_NOTIFY_COMPLETED, completed, s, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
            MHD_OPTION_HTTPS_MEM_KEY, o->tls_key_pem, MHD_OPTION_HTTPS_MEM_CERT, o->tls_cert_pem,
            MHD_OPTION_HTTPS_MEM_TRUST, o->tls_client_ca_pem, MHD_OPTION_END);
    else if (o && o->tls_cert_pem && o->tls_key_pem)
        s->mhd = MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handle, s,
                                  MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, completed,
                                  s, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                                  MHD_OPTION_HTTPS_MEM_KEY, o->tls_key_pem,
                                  MHD_OPTION_HTTPS_MEM_CERT, o->tls_cert_pem, MHD_OPTION_END);
    else
        s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, &sa,
                                  MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
    if (!s->mhd) {
        drv_apiserver_free(s);
        return drv_fail(d, DRV_EIO, "apiserver: cannot listen on 127.0.0.1");
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    *out = s;
    return 0;
}

void drv_apiserver_free(drv_apiserver *s)
{
    if (!s)
        return;
    if (s->mhd) {
        pthread_mutex_lock(&s->mu);
        s->stopping = true;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        MHD_stop_daemon(s->mhd);
    }
    for (int i = 0; i < R_N; i++) {
        json_decref(s->store[i]);
        drv_free(s->sorted[i]);
    }
    for (int i = 0; s->ring && i < s->n; i++) {
        json_decref(s->ring[(s->head + i) % s->cap].obj);
        json_decref(s->ring[(s->head + i) % s->cap].prev);
    }
    drv_free(s->ring);
    for (int i = 0; i < s->nfg; i++)
        drv_free(s->fg[i].key);
    drv_free(s->fg);
    drv_free(s->audit_buf);
    drv_free(s->err_buf);
    drv_free(s->req_buf);
    drv_apiserver_writes_free(s->writes, s->nwrites);
    char *fx[] = {s->fx_api,    s->fx_api_v1,  s->fx_apis,    s->fx_apis_crd, s->fx_coord,
                  s->fx_drover, s->fx_version, s->fx_v3index, s->fx_v3_v1,    s->fx_v3_coord};
    for (size_t i = 0; i < sizeof fx / sizeof *fx; i++)
        drv_free(fx[i]);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    drv_free(s);
}

uint16_t drv_apiserver_port(const drv_apiserver *s)
{
    return s->port;
}

void drv_apiserver_fail_next(drv_apiserver *s, int status, int count, int retry_after_s)
{
    pthread_mutex_lock(&s->mu);
    s->fail_status = status;
    s->fail_count = count;
    s->fail_retry_after = retry_after_s;
    pthread_mutex_unlock(&s->mu);
}

char *drv_apiserver_audit(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    char *out = drv_strdup(s->audit_buf ? s->audit_buf : "");
    pthread_mutex_unlock(&s->mu);
    return out;
}

char *drv_apiserver_errors(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    char *out = drv_strdup(s->err_buf ? s->err_buf : "");
    pthread_mutex_unlock(&s->mu);
    return out;
}

char *drv_apiserver_request_log(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    char *out = drv_strdup(s->req_buf ? s->req_buf : "");
    pthread_mutex_unlock(&s->mu);
    return out;
}

void drv_apiserver_chaos(drv_apiserver *s, uint64_t seed, double rate, const char *agent_prefix)
{
    pthread_mutex_lock(&s->mu);
    s->chaos_rate = rate;
    s->chaos_rng = seed;
    snprintf(s->chaos_agent, sizeof s->chaos_agent, "%s", agent_prefix ? agent_prefix : "");
    pthread_mutex_unlock(&s->mu);
}

drv_apiserver_faults drv_apiserver_fault_counts(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    drv_apiserver_faults f = s->chaos_count;
    pthread_mutex_unlock(&s->mu);
    return f;
}

void drv_apiserver_drop_watches(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    s->drop_gen++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_corrupt_watches(drv_apiserver *s, const char *line)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->corrupt, sizeof s->corrupt, "%s", line);
    s->corrupt_gen++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_expire(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    s->compacted = s->rv;
    s->expire_gen++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_set_delay(drv_apiserver *s, int ms)
{
    pthread_mutex_lock(&s->mu);
    s->delay_ms = ms;
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_hold(drv_apiserver *s, const char *method, const char *path,
                        const char *agent_prefix)
{
    pthread_mutex_lock(&s->mu);
    s->hold_on = true;
    snprintf(s->hold_method, sizeof s->hold_method, "%s", method);
    snprintf(s->hold_path, sizeof s->hold_path, "%s", path);
    snprintf(s->hold_agent, sizeof s->hold_agent, "%s", agent_prefix ? agent_prefix : "");
    pthread_mutex_unlock(&s->mu);
}

int drv_apiserver_held(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->held;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void drv_apiserver_release(drv_apiserver *s)
{
    drv_apiserver_release_answer(s, 0);
}

void drv_apiserver_release_answer(drv_apiserver *s, int status)
{
    pthread_mutex_lock(&s->mu);
    s->hold_on = false;
    s->hold_answer = status;
    s->hold_gen++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

long drv_apiserver_abandoned(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    long n = s->abandoned;
    pthread_mutex_unlock(&s->mu);
    return n;
}

uint64_t drv_apiserver_rv(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t rv = s->rv;
    pthread_mutex_unlock(&s->mu);
    return rv;
}

long drv_apiserver_requests(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    long n = s->seq;
    pthread_mutex_unlock(&s->mu);
    return n;
}

char *drv_apiserver_dump(drv_apiserver *s, const char *plural)
{
    pthread_mutex_lock(&s->mu);
    int rt = -1;
    for (int i = 0; i < R_N; i++)
        if (!strcmp(RT[i].plural, plural))
            rt = i;
    size_t nk = 0, cap = 1, len = 0;
    const char **keys = rt >= 0 ? sorted_keys(s->store[rt], &nk) : NULL;
    for (size_t i = 0; i < nk; i++)
        cap += strlen(keys[i]) + 32;
    char *out = drv_malloc(cap);
    if (out) {
        out[0] = 0;
        for (size_t i = 0; i < nk; i++)
            len +=
                (size_t)snprintf(out + len, cap - len, "%s@%s\n", keys[i],
                                 mstr(json_object_get(s->store[rt], keys[i]), "resourceVersion"));
    }
    drv_free(keys);
    pthread_mutex_unlock(&s->mu);
    return out;
}
