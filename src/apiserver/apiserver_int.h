/*
 * apiserver_int.h - what the in-memory Kubernetes API server's files share (src/apiserver only; the
 * API is apiserver.h): the store, the resource types, a request's route and answer, and each
 * file's functions the others call.
 *
 *   apiserver.c  start, free, and each request's steps (MHD's handler)
 *   resources.c  resource types, keys, apiVersions, metadata and dotted paths, sorted keys, time
 *   answers.c    answers (JSON, recorded documents, Status), queueing them, query arguments
 *   routes.c     a URL's route, dispatch by method
 *   store.c      the store and its events; reads, deletion, garbage collection
 *   lists.c      lists: label and field selectors, pages and continue tokens
 *   writes.c     creation, update, patch, binding, pods/resize: validation and defaults
 *   patch.c      merge, strategic merge and JSON patches
 *   table.c      kubectl's Table answers
 *   watches.c    watch streams from the event window
 *   discovery.c  /api, /apis, /version, OpenAPI, from the recorded documents
 *   faults.c     injected faults: fail_next, chaos, holds, delays, dropped and expired watches
 *   audit.c      the audit log, error log, request log, kept writes, dumps
 *   load.c       the load model: service times per verb, APF-like seats and queues (429)
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
#ifndef DROVER_APISERVER_INT_H
#define DROVER_APISERVER_INT_H

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

/* drv_apiserver_level's bounds (kube-apiserver's whole default concurrency is 600) */
#define MAX_LOAD_SEATS 10000

#define MAX_LOAD_QUEUE 100000

/* srv_load_enter's answers besides a level: not modelled (off, a watch), or refused (429) */
enum { LOAD_NONE = -1, LOAD_REJECTED = -2 };

/* One priority level of the load model (load.c), under drv_apiserver.load_mu. */
struct load_level {
    bool on;
    char agent[64]; /* level 1: whose User-Agent starts with it */
    int seats, queue;
    int in_use, waiting, max_in_use;
    uint64_t next_ticket, next_grant; /* waiters are granted seats in ticket order */
    long admitted, queued, rejected;
    long served[4]; /* by DRV_LOAD_* verb */
    double ms[4];   /* service time drawn, summed */
};

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
    /* opts.load, drv_apiserver_set_load (load.c): the model, its generator, its levels, all
     * under load_mu */
    bool load_on;
    drv_apiserver_load load;
    pthread_mutex_t load_mu;
    pthread_cond_t load_cv;
    uint64_t load_rng;
    bool load_stopping;
    struct load_level lv[2];
    struct fgdel *fg;
    int nfg;
    /* fixture bodies */
    char *fx_api, *fx_api_v1, *fx_apis, *fx_apis_crd, *fx_coord, *fx_drover, *fx_version,
        *fx_v3index;
    char *fx_v3_v1, *fx_v3_coord;
    size_t fx_v3_v1_len, fx_v3_coord_len;
};

struct resp {
    int code;
    char *body; /* drv_malloc'd */
    size_t len;
    const char *ctype;
    const char *encoding; /* Content-Encoding or NULL */
    int retry_after;
    bool body_static; /* body points into fixture memory */
};

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

struct route {
    int rt;         /* enum rtype_id, or -1 */
    char ns[256];   /* namespace from the URL, or "" */
    char name[256]; /* object name, or "" */
    char sub[64];   /* subresource ("status", "binding"), or "" */
};

struct conn {
    char *body;
    size_t len, cap;
    bool too_big;
};

enum { CHAOS_SLOW = -1, CHAOS_SLOW_MS = 300 };

extern const struct rtype SRV_TYPES[R_N]; /* by enum rtype_id (resources.c) */
struct watch;

/* resources.c */
const char *srv_api_version(int rt);
void srv_make_key(char *out, size_t n, int rt, const char *ns, const char *name);
json_t *srv_meta(json_t *o);
const char *srv_mstr(json_t *o, const char *k);
json_t *srv_path_get(json_t *o, const char *path);
const char *srv_str_or(json_t *j, const char *dflt);
void srv_now_rfc3339(char *out, size_t n, long offset_s);
const char **srv_sorted_keys(json_t *store, size_t *n);

/* answers.c */
void srv_set_json(struct resp *r, int code, json_t *j);
void srv_set_fixture(struct resp *r, const char *body);
void srv_not_found_page(struct resp *r);
void srv_set_status(struct resp *r, int code, const char *reason, const char *name,
                    const char *group, const char *kind, bool with_details, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
void srv_not_found_obj(struct resp *r, int rt, const char *name);
void srv_conflict(struct resp *r, int rt, const char *name);
enum MHD_Result srv_queue(struct MHD_Connection *c, struct resp *r);
const char *srv_qarg(struct MHD_Connection *c, const char *k);

/* routes.c */
int srv_parse_route(drv_apiserver *s, const char *url, struct route *r);
/* A routed request (not a watch), by method, to the store, lists and writes; mutex held. */
void srv_dispatch(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                  const struct route *rt, const char *body, size_t len, struct resp *r);

/* store.c */
void srv_store_put(drv_apiserver *s, int rt, const char *key, json_t *o, json_t *prev);
bool srv_ns_exists(drv_apiserver *s, const char *ns);
void srv_new_uid(drv_apiserver *s, char *out, size_t n);
void srv_run_gc(drv_apiserver *s);
json_t *srv_lookup(drv_apiserver *s, const struct route *rt, char *key, size_t kn);
void srv_do_get(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt, struct resp *r);
void srv_do_delete(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt,
                   const char *body, size_t blen, struct resp *r);

/* lists.c */
int srv_parse_selector(const char *text, bool field, struct selector *sel, char *err, size_t errn);
bool srv_sel_match(const struct selector *sel, json_t *o, bool field);
void srv_do_list(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt_,
                 struct resp *r);

/* writes.c */
void srv_do_create(drv_apiserver *s, const struct route *rt, const char *body, size_t blen,
                   struct resp *r);
void srv_do_update(drv_apiserver *s, const struct route *rt, const char *body, size_t blen,
                   struct resp *r);
void srv_do_patch(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt,
                  const char *body, size_t blen, struct resp *r);
void srv_do_bind(drv_apiserver *s, const struct route *rt, const char *body, size_t blen,
                 struct resp *r);

/* patch.c */
json_t *srv_merge_patch(json_t *target, json_t *patch, bool strategic);
json_t *srv_json_patch(json_t *target, json_t *ops);

/* table.c */
json_t *srv_make_table(int rt, json_t *objs, json_t *list_meta, bool include_object);
bool srv_wants_table(struct MHD_Connection *c);

/* watches.c */
ssize_t srv_watch_read(void *cls, uint64_t pos, char *out, size_t max);
void srv_watch_free(void *cls);
struct watch *srv_start_watch(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt,
                              struct resp *r);

/* discovery.c */
bool srv_serve_discovery(drv_apiserver *s, struct MHD_Connection *c, const char *url,
                         struct resp *r);

/* faults.c */
bool srv_agent_matches(struct MHD_Connection *c, const char *prefix);
int srv_chaos_fault(drv_apiserver *s, bool is_watch);
bool srv_client_gone(struct MHD_Connection *c);
int srv_hold_wait(drv_apiserver *s, struct MHD_Connection *c, const char *method, const char *url);

/* load.c */
void srv_load_init(drv_apiserver *s);
void srv_load_fini(drv_apiserver *s);
void srv_load_stop(drv_apiserver *s);
/* A request's seat (watches and no model: LOAD_NONE), waiting for it in its level's queue;
 * LOAD_REJECTED with r set to the 429 when the queue is full. */
int srv_load_enter(drv_apiserver *s, struct MHD_Connection *c, struct resp *r);
/* Sleeps the request's modelled service time, s->mu dropped meanwhile (held on entry and on
 * return); rt NULL for discovery. Nothing when level < 0. */
void srv_load_serve(drv_apiserver *s, int level, struct MHD_Connection *c, const char *method,
                    const struct route *rt);
void srv_load_leave(drv_apiserver *s, int level);

/* audit.c */
void srv_log_append(char **buf, size_t *len, size_t *cap, const char *line);
void srv_audit_event(drv_apiserver *s, int rt, const char *type, json_t *obj);
void srv_log_request(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                     const char *url, int code);
void srv_keep_write(drv_apiserver *s, struct MHD_Connection *c, const char *method, const char *url,
                    const struct conn *cn);

#endif
