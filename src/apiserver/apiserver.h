/*
 * apiserver.h - an in-memory Kubernetes API server for `drover playground` and the tests
 * (libmicrohttpd, loopback only).
 *
 * It answers the way the recorded kube-apiserver v1.24 answers (tests/fixtures/k8s/transcripts):
 * discovery, /version, /openapi/v3, CRUD for nodes, pods, namespaces, configmaps, events,
 * leases, CRDs, trainingjobs.drover.dev and podgroups.scheduling.x-k8s.io (each served once its
 * CRD is created, with a status subresource), list with label and
 * field selectors and limit/continue, watch with bookmarks and a bounded event window that
 * yields a 410 Expired ERROR event, resourceVersion preconditions (409), pods/binding,
 * pods/resize (opts.pod_resize: Kubernetes >= 1.33),
 * merge / JSON / strategic patches with their 415/422 answers, and Table responses for kubectl.
 * Optionally (drv_apiserver_load) it answers at a real server's pace: service times per verb and
 * API Priority and Fairness' seats, queues and 429s (load.c).
 *
 * Faults are injected from the test's own thread through the functions below; every one is
 * thread-safe. ResourceVersions are a counter, uids are derived from it: the same sequence of
 * requests gives the same resourceVersions and uids.
 */
#ifndef DROVER_TEST_APISERVER_H
#define DROVER_TEST_APISERVER_H

#include "drover/base.h"

#include <stdint.h>

typedef struct drv_apiserver drv_apiserver;

/* One verb's modelled service time: a log-normal distribution given by its median and its 90th
 * percentile in milliseconds (p90 == p50: always p50; p90 > p50 gives the tail a real server
 * shows). */
typedef struct drv_apiserver_latency {
    double p50_ms, p90_ms;
} drv_apiserver_latency;

/* A priority level of the load model's API Priority and Fairness (load.c): at most `seats`
 * requests are served at once; up to `queue` more wait for a seat in arrival order; beyond,
 * a request is answered 429 TooManyRequests with Retry-After: 1, unserved, as kube-apiserver's
 * APF answers when a priority level's queues are full. */
typedef struct drv_apiserver_level {
    const char *agent_prefix; /* whose requests (User-Agent prefix); NULL: level 0, the rest's */
    int seats;                /* 1..MAX_LOAD_SEATS */
    int queue;                /* 0..MAX_LOAD_QUEUE */
} drv_apiserver_level;

/* The load model (issue 28): the in-memory server answers as fast as its CPU allows, a real
 * kube-apiserver with etcd in 15-30 ms a write. With it, each request (watches excepted) first
 * takes a seat of its priority level (or waits, or gets 429), then is served after a service
 * time drawn for its verb, its seat held meanwhile: what bounds a client is then how many
 * requests it keeps in flight, as on a real server. Defaults: drv_apiserver_load_defaults. */
typedef struct drv_apiserver_load {
    drv_apiserver_latency create; /* POST (pods/binding excepted) */
    drv_apiserver_latency write;  /* PUT, PATCH, DELETE, POST pods/binding */
    drv_apiserver_latency get;    /* one object, discovery, OpenAPI */
    double list_ms, list_item_us; /* a list: list_ms + list_item_us per object in its page */
    /* Level 0 serves every request no other level names (agent_prefix ignored); level 1, when
     * its agent_prefix is set, those whose User-Agent starts with it: a dedicated FlowSchema
     * and PriorityLevelConfiguration, as docs/running.md describes. */
    drv_apiserver_level level[2];
    uint64_t seed; /* of the service-time draws */
} drv_apiserver_load;

/* The defaults, from issue 28's audit of a real kube-apiserver v1.24 with etcd (creates p50
 * 15.6 ms, p90 31 ms) and its default APF configuration (load.c says how each is derived). */
void drv_apiserver_load_defaults(drv_apiserver_load *l);
/* From now on, answers with model l (copied; its counts kept), or at once with no limit (NULL).
 * A request already waiting for a seat keeps its place; with NULL it is served at once.
 * DRV_EINVAL, d saying which field, for a model it cannot serve (the model unchanged). */
int drv_apiserver_set_load(drv_apiserver *s, const drv_apiserver_load *l, drv_diag *d);
/* One draw from lat, with *rng a splitmix64 state: what the model sleeps (ms, >= 0, capped at
 * 60 s: a request's timeout). */
double drv_apiserver_load_draw(uint64_t *rng, drv_apiserver_latency lat);

typedef struct drv_apiserver_opts {
    const char *fixture_dir;  /* tests/fixtures/k8s (discovery and OpenAPI documents) */
    int window;               /* events kept for watch resumption; 0 = 200 */
    int bookmark_ms;          /* idle time before a BOOKMARK is sent; 0 = 1000 */
    bool crd_installed;       /* start with trainingjobs.drover.dev already established */
    bool podgroup_crd;        /* ... and podgroups.scheduling.x-k8s.io (deploy/podgroup-crd.yaml) */
    bool queue_crd;           /* ... and queues.drover.dev (deploy/queue-crd.yaml) */
    const char *tls_cert_pem; /* with tls_key_pem: serve HTTPS with this certificate (PEM text) */
    const char *tls_key_pem;
    /* With TLS: require a client certificate signed by this CA (PEM text), as a kube-apiserver
     * with --client-ca-file and anonymous access off: a request without one gets 401. */
    const char *tls_client_ca_pem;
    /* Keep every node and pod event (drv_apiserver_audit), never compacted, and every answer
     * of 400 or more (drv_apiserver_errors): what a test checks the whole history against
     * (over-commit at any moment, pods bound twice, unexpected refusals). */
    bool audit;
    /* Serve pods/NAME/resize and list it in /api/v1's resources, as kube-apiserver >= 1.33
     * (in-place resize, beta and on by default): a PATCH or PUT there changes only the
     * containers' resources (cpu and memory; the QoS class kept, else 422). Without it, as on
     * the recorded 1.24, the path is a 404 and the list does not name it. */
    bool pod_resize;
    /* Keep every request answered (drv_apiserver_request_log): what a test checks the shipped
     * RBAC against (tests/apiserver/rbac_check.h). */
    bool request_log;
    /* Answer like a real server under load (drv_apiserver_load; copied); NULL: at once, no
     * concurrency limit, as every unit test runs. */
    const drv_apiserver_load *load;
} drv_apiserver_opts;

/* Starts a server on 127.0.0.1 with an ephemeral port. */
int drv_apiserver_start(drv_apiserver **out, const drv_apiserver_opts *o, drv_diag *d);
/* Stops the server: open watches end, threads are joined. Accepts NULL. */
void drv_apiserver_free(drv_apiserver *s);
uint16_t drv_apiserver_port(const drv_apiserver *s);

/* The next `count` resource requests (not discovery, not watches) answer `status` (409, 429,
 * 500, 503...) with a Status body; retry_after_s > 0 adds a Retry-After header. */
void drv_apiserver_fail_next(drv_apiserver *s, int status, int count, int retry_after_s);
/* Faults drawn at random by drv_apiserver_chaos, by kind. Errors are the first three. */
typedef struct drv_apiserver_faults {
    long conflict, throttled, internal; /* answered 409, 429 (Retry-After: 1), 500; not served */
    long gone;    /* a watch start expired the window: open watches get an ERROR 410 and end */
    long slow;    /* served 300 ms late */
    long dropped; /* every open watch was cut */
} drv_apiserver_faults;
/* From now on, each resource request (not discovery) whose User-Agent starts with agent_prefix
 * (NULL: every client's) meets a fault with probability rate, its kind drawn uniformly from the
 * six above by a generator seeded with seed: the same requests in the same order meet the same
 * faults. A request answered with an error is not applied to the store. rate 0 ends it. */
void drv_apiserver_chaos(drv_apiserver *s, uint64_t seed, double rate, const char *agent_prefix);
drv_apiserver_faults drv_apiserver_fault_counts(drv_apiserver *s);
/* With opts.audit: every node and pod event so far, one {"type":..,"object":..} JSON line each,
 * in the order they happened (drv_malloc'd; the caller frees it). */
char *drv_apiserver_audit(drv_apiserver *s);
/* With opts.audit: every answer of 400 or more so far (watch events excepted: a 410 inside a
 * watch stream is an ERROR event of a 200), one "CODE METHOD PATH USER-AGENT" line each, in
 * order (drv_malloc'd; the caller frees it). What a test checks for unexpected refusals. */
char *drv_apiserver_errors(drv_apiserver *s);
/* With opts.request_log: every request answered so far, discovery and watches included (a
 * watch when its stream starts, with 200), one "CODE METHOD PATH?QUERY USER-AGENT" line each, in
 * order; the query is rebuilt from the arguments, "&", " " and "%" in them percent-escaped, at
 * most 511 bytes (drv_malloc'd; the caller frees it). A request refused before it is read
 * (MHD_NO: out of memory) is not in it. */
char *drv_apiserver_request_log(drv_apiserver *s);
/* A write kept (drv_apiserver_keep_writes), as its client sent it. */
typedef struct drv_apiserver_write {
    char method[8];     /* POST, PUT, PATCH or DELETE */
    char *path;         /* with its query, rebuilt as drv_apiserver_request_log rebuilds it */
    char *content_type; /* "" when the request had none */
    char *body;         /* len bytes, then a NUL */
    size_t len;
} drv_apiserver_write;
/* From now on, every write served is kept as its client sent it (drv_apiserver_writes): what a
 * benchmark replays from a plain client to send exactly the requests of the client it measured. */
void drv_apiserver_keep_writes(drv_apiserver *s);
/* A copy of the writes kept so far (drv_apiserver_keep_writes; not those refused before they
 * reach the store: injected faults, a client gone), in the order they were served, whatever
 * the answer. *out is drv_malloc'd (drv_apiserver_writes_free). Their count, or -1 (memory). */
int32_t drv_apiserver_writes(drv_apiserver *s, drv_apiserver_write **out);
void drv_apiserver_writes_free(drv_apiserver_write *w, int32_t n);
/* Every open watch stream is cut without its terminating chunk (a dropped connection). */
void drv_apiserver_drop_watches(drv_apiserver *s);
/* Every event so far leaves the window: watches from an older resourceVersion get 410, open
 * watches receive an ERROR 410 Expired event and end, and continue tokens of lists begun before
 * the last write get 410 Expired (list again from the start). */
void drv_apiserver_expire(drv_apiserver *s);
/* Every open watch stream receives `line` (and a newline) as it is: malformed JSON, an unknown
 * event type... (at most 255 bytes). */
void drv_apiserver_corrupt_watches(drv_apiserver *s, const char *line);
/* From now on, every request whose method is method, whose path (without its query) is path
 * and whose User-Agent starts with agent_prefix (NULL: any client's) waits, before anything
 * else is done with it, until drv_apiserver_release (or the server is freed): a test orders a
 * race as it chooses, waiting on drv_apiserver_held rather than sleeping. One hold at a time
 * (a second call replaces the first's match; what waits keeps waiting). */
void drv_apiserver_hold(drv_apiserver *s, const char *method, const char *path,
                        const char *agent_prefix);
/* How many requests wait in the hold now. */
int drv_apiserver_held(drv_apiserver *s);
/* Ends the hold: what waits in it is served (in no set order), and no request waits again. */
void drv_apiserver_release(drv_apiserver *s);
/* ... or what waits in it answers status instead, unserved (the store untouched): 409 with a
 * Conflict Status, as for a stale resourceVersion; any other, an injected fault's Status. */
void drv_apiserver_release_answer(drv_apiserver *s, int status);
/* The load model's counts for one priority level (0 or 1) so far. */
typedef struct drv_apiserver_load_stats {
    int in_use, waiting;   /* now: seats taken, requests waiting for one */
    int max_in_use;        /* the most seats taken at once */
    long admitted;         /* requests given a seat */
    long queued;           /* ... of which waited for it */
    long rejected;         /* answered 429: the queue was full */
    long served[4];        /* by verb: create, write, get, list */
    double modelled_ms[4]; /* service time drawn, summed, by verb */
} drv_apiserver_load_stats;
enum { DRV_LOAD_CREATE, DRV_LOAD_WRITE, DRV_LOAD_GET, DRV_LOAD_LIST };
drv_apiserver_load_stats drv_apiserver_load_counts(drv_apiserver *s, int level);
/* Delay every request by ms before it is handled (0 = none). */
void drv_apiserver_set_delay(drv_apiserver *s, int ms);
/* Writes (not GET) whose client has closed its connection by the time they would be served
 * (after a delay, a slow fault, or a wait for a thread) are not applied, as kube-apiserver
 * cancels a request whose client went: a killed client's write never lands late. How many
 * were not, so far: */
long drv_apiserver_abandoned(drv_apiserver *s);
/* Current resourceVersion of the store. */
uint64_t drv_apiserver_rv(drv_apiserver *s);
/* Number of requests served so far (all kinds). */
long drv_apiserver_requests(drv_apiserver *s);
/* Sorted "namespace/name@resourceVersion" lines for one resource plural ("pods"), allocated
 * with drv_malloc; the caller frees it. NULL on allocation failure. */
char *drv_apiserver_dump(drv_apiserver *s, const char *plural);

#endif
