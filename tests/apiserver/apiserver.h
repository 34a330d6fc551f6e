/*
 * apiserver.h - an in-memory Kubernetes API server for tests (libmicrohttpd, loopback only).
 *
 * It answers the way the recorded kube-apiserver v1.24 answers (tests/fixtures/k8s/transcripts):
 * discovery, /version, /openapi/v3, CRUD for nodes, pods, namespaces, configmaps, events,
 * leases, CRDs and trainingjobs.drover.dev (with a status subresource), list with label and
 * field selectors and limit/continue, watch with bookmarks and a bounded event window that
 * yields a 410 Expired ERROR event, resourceVersion preconditions (409), pods/binding,
 * merge / JSON / strategic patches with their 415/422 answers, and Table responses for kubectl.
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

typedef struct drv_apiserver_opts {
    const char *fixture_dir;  /* tests/fixtures/k8s (discovery and OpenAPI documents) */
    int window;               /* events kept for watch resumption; 0 = 200 */
    int bookmark_ms;          /* idle time before a BOOKMARK is sent; 0 = 1000 */
    bool crd_installed;       /* start with trainingjobs.drover.dev already established */
    const char *tls_cert_pem; /* with tls_key_pem: serve HTTPS with this certificate (PEM text) */
    const char *tls_key_pem;
    /* With TLS: require a client certificate signed by this CA (PEM text), as a kube-apiserver
     * with --client-ca-file and anonymous access off: a request without one gets 401. */
    const char *tls_client_ca_pem;
} drv_apiserver_opts;

/* Starts a server on 127.0.0.1 with an ephemeral port. */
int drv_apiserver_start(drv_apiserver **out, const drv_apiserver_opts *o, drv_diag *d);
/* Stops the server: open watches end, threads are joined. Accepts NULL. */
void drv_apiserver_free(drv_apiserver *s);
uint16_t drv_apiserver_port(const drv_apiserver *s);

/* The next `count` resource requests (not discovery, not watches) answer `status` (409, 429,
 * 500, 503...) with a Status body; retry_after_s > 0 adds a Retry-After header. */
void drv_apiserver_fail_next(drv_apiserver *s, int status, int count, int retry_after_s);
/* Every open watch stream is cut without its terminating chunk (a dropped connection). */
void drv_apiserver_drop_watches(drv_apiserver *s);
/* Every event so far leaves the window: watches from an older resourceVersion get 410, and
 * open watches receive an ERROR 410 Expired event and end. */
void drv_apiserver_expire(drv_apiserver *s);
/* Every open watch stream receives `line` (and a newline) as it is: malformed JSON, an unknown
 * event type... (at most 255 bytes). */
void drv_apiserver_corrupt_watches(drv_apiserver *s, const char *line);
/* Delay every request by ms before it is handled (0 = none). */
void drv_apiserver_set_delay(drv_apiserver *s, int ms);
/* Current resourceVersion of the store. */
uint64_t drv_apiserver_rv(drv_apiserver *s);
/* Number of requests served so far (all kinds). */
long drv_apiserver_requests(drv_apiserver *s);
/* Sorted "namespace/name@resourceVersion" lines for one resource plural ("pods"), allocated
 * with drv_malloc; the caller frees it. NULL on allocation failure. */
char *drv_apiserver_dump(drv_apiserver *s, const char *plural);

#endif
