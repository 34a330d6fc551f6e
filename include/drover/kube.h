/*
 * kube.h - a Kubernetes API client: requests with retries and a client-side rate limit, paged
 * lists, and watch streams decoded as they arrive (libcurl, jansson).
 *
 * This header needs no jansson: the calls that take or give JSON objects (requests with a
 * decoded answer, read-modify-write, lists and watches with per-object callbacks) are declared
 * in src/kube/json.h, private to src/kube and to tests that use internals.
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
    /* Who is calling, for the server's logs and audit: the User-Agent is
     * "drover-<component>/<version>" ("drover/<version>" when NULL). Borrowed: a string that
     * outlives every copy of the config (a literal such as "run" or "emulate"). */
    const char *component;
    /* One API budget shared by several clients (drv_kube_budget_new), as client-go's clients of
     * one process share a rate limiter: its bucket replaces qps/burst, and every non-2xx answer
     * is counted there too. Borrowed; NULL: the client has a bucket of its own. */
    struct drv_kube_budget *budget;
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
 * with a token or a certificate. A token with a control character is DRV_EINVAL. The server is
 * checked by drv_kube_check_server; the token, tokenFile and certificate/key files are read and
 * checked here (an empty token, an unreadable, endless, NUL-holding or empty file, a certificate
 * file without a PEM block are refused), not at the first request.
 */
int drv_kubeconfig_load(drv_kube_config *out, const char *files, const char *context, drv_diag *d);
/*
 * In-cluster configuration: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT with the
 * service account's token, CA and namespace under root (NULL: "/") +
 * var/run/secrets/kubernetes.io/serviceaccount/. The token is held to tokenFile's rules.
 */
int drv_kube_incluster(drv_kube_config *out, const char *root, drv_diag *d);

typedef struct drv_kube drv_kube;

/*
 * Checks a server URL as libcurl parses it: DRV_EINVAL unless it is http:// or https://, and when
 * it carries a user name or password; the message names the URL (without user information) and
 * what was expected, and the caller says which field it is. *loopback: its
 * host is localhost, an IPv4 address in 127.0.0.0/8 or [::1], where plain http never leaves the
 * machine. drv_kube_new and drv_kubeconfig_load call it.
 */
int drv_kube_check_server(const char *server, bool *loopback, drv_diag *d);

/* A client for cfg's server (cfg is copied). Safe to call from several threads at once: the
 * first call initialises libcurl for the process. */
int drv_kube_new(drv_kube **out, const drv_kube_config *cfg, drv_diag *d);
void drv_kube_free(drv_kube *k);

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
/* Non-2xx answers this client received, retried ones included (transport failures are not
 * answers and are not counted). */
long drv_kube_errors(const drv_kube *k);
/* Of them, 429 Too Many Requests (retried after Retry-After or not): what a concurrency limit
 * backs off on (src/kube/limiter.c). */
long drv_kube_throttled(const drv_kube *k);

/*
 * An API budget: one token bucket (qps, burst) that every client configured with it draws
 * from, and the count of non-2xx answers by status code, verb and resource, as
 * drover_api_errors_total{code,verb,resource} reports them. Thread-safe. The verb is the
 * request's: GET on a collection is LIST, with watch=1 WATCH; the resource is the plural with
 * its subresource ("pods/binding", "trainingjobs/status").
 */
typedef struct drv_kube_budget drv_kube_budget;
int drv_kube_budget_new(drv_kube_budget **out, double qps, int burst, drv_diag *d);
void drv_kube_budget_free(drv_kube_budget *b); /* accepts NULL */
/* Takes one token; returns how long the caller must wait for it (seconds, 0 when none). */
double drv_kube_budget_take(drv_kube_budget *b);
/* Counts a non-2xx answer (code) to method on path. */
void drv_kube_budget_count(drv_kube_budget *b, const char *method, const char *path, long code);
typedef struct drv_kube_api_errors {
    long code;
    char verb[8];
    char resource[48];
    long n;
} drv_kube_api_errors;
/* Copies up to n rows (ordered by first occurrence) into out; returns how many rows exist. */
size_t drv_kube_budget_errors(drv_kube_budget *b, drv_kube_api_errors *out, size_t n);
long drv_kube_budget_error_total(drv_kube_budget *b);
/* The verb and resource of a request as the budget labels them (exposed for tests). */
void drv_kube_request_labels(const char *method, const char *path, char *verb, size_t nverb,
                             char *resource, size_t nres);
long drv_kube_retries(const drv_kube *k);

/* What drv_kube_list and drv_kube_watch return when the caller must list again: the
 * resourceVersion (or continue token) it held is too old (410 Gone / Expired). */
enum { DRV_KUBE_RELIST = 1 };

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
