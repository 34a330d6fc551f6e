/*
 * kube.h - a Kubernetes API client: requests with retries and a client-side rate limit, paged
 * lists, and watch streams decoded as they arrive (libcurl, jansson).
 *
 * Behaviour follows client-go where it matters:
 *  - every request waits for a token of a token bucket (qps, burst; defaults 5 and 10 like
 *    client-go's rest.Config) before it is sent;
 *  - 429 and 5xx answers, and failures to connect, are retried up to `retries` times with
 *    jittered exponential back-off (base `backoff_ms`, doubling, capped at `backoff_max_ms`);
 *    a Retry-After header, when present, is the wait instead (capped at `retry_after_max_s`).
 *    POST is retried only on 429 and connection failures (the server did not process it);
 *  - any other non-2xx answer is an error whose message names the verb, the path, the HTTP
 *    status and the Status object's reason and message; *status tells the caller which;
 *  - TLS: the server certificate is verified against the configured CA (or the system's)
 *    unless the configuration says insecure, which is logged as a warning once per client;
 *  - the bearer token is refused when it holds a control character (it would inject HTTP
 *    headers), and over http:// unless the server is on loopback or the configuration says
 *    insecure (then it is sent, with a warning, in clear).
 *
 * Thread safety: a drv_kube is used by one thread at a time, except that drv_kube_watch may
 * run on other threads concurrently (each watch has its own connection).
 */
#ifndef DROVER_KUBE_H
#define DROVER_KUBE_H

#include "drover/base.h"
#include "drover/kube_watch.h"

#include <jansson.h>

/* Where and how to reach an API server (from a kubeconfig, in-cluster files, or a test). All
 * strings are owned (drv_kube_config_fini frees them); NULL when absent. */
typedef struct drv_kube_config {
    char *server;          /* "https://host:6443" or "http://127.0.0.1:port" */
    char *token;           /* bearer token */
    char *ca_file;         /* PEM file of the CA that signs the server certificate */
    char *ca_data;         /* the same, PEM bytes (kubeconfig certificate-authority-data) */
    char *cert_file;       /* client certificate (PEM) */
    char *cert_data;       /* ... as PEM bytes */
    char *key_file;        /* client key (PEM) */
    char *key_data;        /* ... as PEM bytes */
    char *namespace_;      /* default namespace of the context, or NULL ("default") */
    bool insecure;         /* insecure-skip-tls-verify */
    double qps;            /* requests per second (0: 5) */
    int burst;             /* bucket size (0: 10) */
    int retries;           /* retries after the first attempt (0: 5; -1: none) */
    int backoff_ms;        /* first back-off (0: 200) */
    int backoff_max_ms;    /* back-off cap (0: 10000) */
    int retry_after_max_s; /* Retry-After cap (0: 30) */
    int timeout_s;         /* whole-request timeout for non-watch requests (0: 30) */
} drv_kube_config;

void drv_kube_config_fini(drv_kube_config *c);

/*
 * Loads a kubeconfig the way kubectl does. files: a list separated by ':' (KUBECONFIG's
 * syntax); NULL means $KUBECONFIG, or ~/.kube/config when that is unset. Across files, the
 * first to define a cluster, user or context name wins, and the first current-context wins.
 * context: the context to use, or NULL for current-context. Relative file references
 * (certificate-authority, client-certificate, client-key, tokenFile) are relative to the file
 * that holds them; *-data fields are base64 and are decoded. Fills out (fini it); errors name
 * file:line: field: what was expected (an unknown context lists the known ones). exec,
 * auth-provider and basic-auth (username, password) users are refused (DRV_ENOTSUP): Drover runs
 * with a token or a certificate. A token with a control character is DRV_EINVAL.
 */
int drv_kubeconfig_load(drv_kube_config *out, const char *files, const char *context, drv_diag *d);
/*
 * In-cluster configuration: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT with the
 * service account's token, CA and namespace under root (NULL: "/") +
 * var/run/secrets/kubernetes.io/serviceaccount/.
 */
int drv_kube_incluster(drv_kube_config *out, const char *root, drv_diag *d);

typedef struct drv_kube drv_kube;

int drv_kube_new(drv_kube **out, const drv_kube_config *cfg, drv_diag *d);
void drv_kube_free(drv_kube *k);

/*
 * One request. method: "GET", "POST", "PUT", "PATCH", "DELETE"; path starts with "/" and may
 * carry a query; body (NULL for none) is sent with content type ctype (NULL:
 * "application/json"). On a 2xx answer returns 0 and *out (if out) receives the decoded body
 * (NULL when empty; the caller json_decref's it). Otherwise returns DRV_EIO (transport, or a
 * non-2xx answer after retries: *status says which, 0 for transport) or DRV_EPARSE (a 2xx
 * body that is not JSON), with the message in d.
 */
int drv_kube_request(drv_kube *k, const char *method, const char *path, const char *ctype,
                     const char *body, long *status, json_t **out, drv_diag *d);
/*
 * Read-modify-write with optimistic concurrency: GETs path, lets mutate change the object (it
 * returns 0, or a negative code that aborts), PUTs it back — the resourceVersion read is the
 * precondition, and every field of the object, known to Drover or not, is written back as
 * read. On 409 Conflict it reads again and re-applies mutate to the fresh object, up to
 * `attempts` times (0: 5): safe because mutate never works on stale data. *out (optional)
 * receives the object written; *status (optional) the HTTP status of the last request, as in
 * drv_kube_request (404: no such object). Use path ".../status" for the status subresource.
 */
typedef int (*drv_kube_mutate_fn)(json_t *obj, void *arg);
int drv_kube_update(drv_kube *k, const char *path, drv_kube_mutate_fn mutate, void *arg,
                    int attempts, json_t **out, long *status, drv_diag *d);
/* DELETE with DeleteOptions: grace_s < 0 leaves the grace period to the object; propagation
 * ("Foreground", "Background", "Orphan") or NULL. *status as in drv_kube_request. */
int drv_kube_delete(drv_kube *k, const char *path, int grace_s, const char *propagation,
                    long *status, drv_diag *d);
/* The same with preconditions.uid (NULL: none): an object created again under the name since
 * uid was read is not deleted (409 Conflict). */
int drv_kube_delete_uid(drv_kube *k, const char *path, int grace_s, const char *propagation,
                        const char *uid, long *status, drv_diag *d);

/* Requests made and retries spent so far (for tests and metrics). */
long drv_kube_requests(const drv_kube *k);
long drv_kube_retries(const drv_kube *k);

/* What drv_kube_list and drv_kube_watch return when the caller must list again: the
 * resourceVersion (or continue token) it held is too old (410 Gone / Expired). */
enum { DRV_KUBE_RELIST = 1 };

/* Called for every item of a list; returns 0 to go on, or a negative code that stops the list
 * and is returned. The item is borrowed for the call. */
typedef int (*drv_kube_item_cb)(json_t *item, void *arg);

/*
 * Lists path (a collection, e.g. "/api/v1/pods"; query in `query` such as
 * "labelSelector=app%3Dx", or NULL) page by page with limit (0: no paging) and continue
 * tokens; calls cb for every item. rv (n bytes) receives the list's resourceVersion, from
 * which a watch continues. DRV_KUBE_RELIST when a continue token expired mid-list (list again
 * from the start).
 */
int drv_kube_list(drv_kube *k, const char *path, const char *query, int limit, drv_kube_item_cb cb,
                  void *arg, char *rv, size_t n, drv_diag *d);

/*
 * One watch stream on path from resourceVersion rv with bookmarks, ending after timeout_s on
 * the server side. Events go to cb as they arrive (incremental decoding: drv_watch_decoder).
 * last_rv (n bytes) tracks the resourceVersion of the last event, bookmarks included; it is
 * where the next watch continues. Returns:
 *   0                 the stream ended cleanly (server timeout): watch again from last_rv;
 *   DRV_KUBE_RELIST   an ERROR event with code 410 (Expired), or HTTP 410: list again;
 *   DRV_EIO           the connection failed or dropped: back off, watch again from last_rv;
 *   DRV_EPARSE        a malformed event (the stream is abandoned: list again to be safe);
 *   a negative code   returned by cb.
 * *stop (may be NULL), when it becomes non-zero, ends the stream early with 0.
 */
int drv_kube_watch(drv_kube *k, const char *path, const char *rv, int timeout_s, drv_watch_cb cb,
                   void *arg, char *last_rv, size_t n, volatile int *stop, drv_diag *d);

/* The token bucket the client uses, exposed for tests: tokens refill at qps up to burst.
 * take returns the seconds to wait before the request may go (0 when a token is there) and
 * reserves the token. */
typedef struct drv_token_bucket {
    double qps, burst, tokens, last;
} drv_token_bucket;
void drv_token_bucket_init(drv_token_bucket *b, double qps, int burst, double now);
double drv_token_bucket_take(drv_token_bucket *b, double now);

/* Back-off before retry `attempt` (0-based): base * 2^attempt, capped, with jitter in
 * [half, full] drawn from rng. Milliseconds. */
int drv_kube_backoff_ms(int attempt, int base_ms, int max_ms, drv_rng *rng);

#endif
