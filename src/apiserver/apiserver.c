/*
 * apiserver.c - the in-memory Kubernetes API server (apiserver.h; how it works: apiserver_int.h):
 * its start (the recorded fixtures loaded, seeded namespaces, CRDs) and its end, and the
 * handler libmicrohttpd calls for each request, as a list of steps: the body read, the delay and
 * hold a test injected, authentication, discovery, the route, injected faults, a watch or the
 * dispatch, the answer logged and queued.
 */
#include "apiserver_int.h"

#include <stdarg.h>

/* The bytes of the file at path, NUL-terminated (drv_free them), their count into *len (may be
 * NULL); NULL when it cannot be read. Binary: the recorded OpenAPI documents are gzip'd, which
 * core's drv_file_read, for text, refuses. */
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

/* Queues r; with opts.audit, an answer of 400 or more is logged first: "CODE METHOD URL AGENT". */
static enum MHD_Result answer(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                              const char *url, struct resp *r)
{
    srv_log_request(s, c, method, url, r->code);
    if (s->audit && r->code >= 400) {
        const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
        char line[640];
        snprintf(line, sizeof line, "%d %s %.400s %.120s", r->code, method, url, ua ? ua : "-");
        pthread_mutex_lock(&s->mu);
        srv_log_append(&s->err_buf, &s->err_len, &s->err_cap, line);
        pthread_mutex_unlock(&s->mu);
    }
    return srv_queue(c, r);
}

/* A request's body, as libmicrohttpd hands it over in pieces: kept up to MAX_BODY (beyond, the
 * request is refused whole: too_big). MHD_NO when out of memory. */
static enum MHD_Result read_body(struct conn *cn, const char *upload, size_t *upload_size)
{
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

/* The delay a test set, then the hold a test set (srv_hold_wait): what the request answers
 * instead of being served (a 409 as for a stale resourceVersion, or an injected fault), or 0. */
static int wait_injected(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                         const char *url, struct resp *r)
{
    pthread_mutex_lock(&s->mu);
    s->seq++;
    int delay = s->delay_ms;
    pthread_mutex_unlock(&s->mu);
    if (delay > 0) {
        struct timespec t = {delay / 1000, (long)(delay % 1000) * 1000000L};
        nanosleep(&t, NULL);
    }
    int held = srv_hold_wait(s, c, method, url);
    if (held == 409) { /* (as kube-apiserver refuses a stale resourceVersion) */
        struct route hr;
        pthread_mutex_lock(&s->mu);
        bool routed = srv_parse_route(s, url, &hr) == 0;
        pthread_mutex_unlock(&s->mu);
        if (routed)
            srv_conflict(r, hr.rt, hr.name);
        else
            srv_not_found_page(r);
    } else if (held > 0) {
        srv_set_status(r, held, "InternalError", NULL, NULL, NULL, true, "injected fault: %d",
                       held);
    }
    return held;
}

/* Whether the request is refused before it is read any further: no verified client certificate
 * where one is required (401), or a body too large (413). */
static bool refused(drv_apiserver *s, struct MHD_Connection *c, const struct conn *cn,
                    struct resp *r)
{
    if (s->client_auth && !client_verified(c)) {
        srv_set_status(r, 401, "Unauthorized", NULL, NULL, NULL, false, "Unauthorized");
        return true;
    }
    if (cn->too_big) {
        srv_set_status(r, 413, "RequestEntityTooLarge", NULL, NULL, NULL, false,
                       "the request body is larger than %u bytes", MAX_BODY);
        return true;
    }
    return false;
}

/* A routed request's injected faults (mutex held; released when it returns true): the next
 * `fail_next` answer, or a chaos fault drawn for it (a slow one is waited out here, the lock
 * dropped meanwhile). True: r holds the fault's answer. */
static bool faulted(drv_apiserver *s, struct MHD_Connection *c, bool is_watch, struct resp *r)
{
    if (s->fail_count > 0) {
        s->fail_count--;
        int code = s->fail_status;
        const char *reason = code == 409   ? "Conflict"
                             : code == 429 ? "TooManyRequests"
                             : code == 503 ? "ServiceUnavailable"
                             : code == 504 ? "Timeout"
                                           : "InternalError";
        int retry_after = s->fail_retry_after;
        pthread_mutex_unlock(&s->mu);
        srv_set_status(r, code, reason, NULL, NULL, NULL, true, "injected fault: %d %s", code,
                       reason);
        r->retry_after = retry_after;
        return true;
    }
    if (s->chaos_rate <= 0 || !srv_agent_matches(c, s->chaos_agent))
        return false;
    int code = srv_chaos_fault(s, is_watch);
    if (code == CHAOS_SLOW) {
        pthread_mutex_unlock(&s->mu);
        struct timespec t = {0, CHAOS_SLOW_MS * 1000000L};
        nanosleep(&t, NULL);
        pthread_mutex_lock(&s->mu);
        return false;
    }
    if (code <= 0)
        return false;
    pthread_mutex_unlock(&s->mu);
    srv_set_status(r, code,
                   code == 409   ? "Conflict"
                   : code == 429 ? "TooManyRequests"
                                 : "InternalError",
                   NULL, NULL, NULL, true, "injected fault: %d", code);
    r->retry_after = code == 429 ? 1 : 0;
    return true;
}

/* A watch: its stream answered from the window and then as events come (watches.c). The mutex
 * is held on entry and released here. */
static enum MHD_Result serve_watch(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                                   const char *url, const struct route *rt)
{
    struct resp r = {0};
    struct watch *w = srv_start_watch(s, c, rt, &r);
    pthread_mutex_unlock(&s->mu);
    if (!w)
        return answer(s, c, method, url, &r);
    struct MHD_Response *mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384,
                                                                srv_watch_read, w, srv_watch_free);
    if (!mr) {
        srv_watch_free(w);
        return MHD_NO;
    }
    MHD_add_response_header(mr, "Content-Type", "application/json");
    MHD_add_response_header(mr, "Cache-Control", "no-cache, private");
    srv_log_request(s, c, method, url, 200);
    enum MHD_Result ok = MHD_queue_response(c, 200, mr);
    MHD_destroy_response(mr);
    return ok;
}

/* The request's steps (the top of this file), once its body is read and its seat taken (level:
 * load.c's, or LOAD_NONE). */
static enum MHD_Result serve_seated(drv_apiserver *s, struct MHD_Connection *c, const char *url,
                                    const char *method, struct conn *cn, int level)
{
    struct resp r = {0};
    if (wait_injected(s, c, method, url, &r) > 0 || refused(s, c, cn, &r))
        return answer(s, c, method, url, &r);
    pthread_mutex_lock(&s->mu);
    srv_run_gc(s);
    struct route rt;
    if (srv_serve_discovery(s, c, url, &r) || srv_parse_route(s, url, &rt)) {
        if (!r.code)
            srv_not_found_page(&r);
        srv_load_serve(s, level, c, method, NULL);
        pthread_mutex_unlock(&s->mu);
        return answer(s, c, method, url, &r);
    }
    const char *wq = srv_qarg(c, "watch");
    bool is_watch = wq && (!strcmp(wq, "1") || !strcmp(wq, "true"));
    if (faulted(s, c, is_watch, &r)) /* (which released the mutex) */
        return answer(s, c, method, url, &r);
    if (!is_watch)
        srv_load_serve(s, level, c, method, &rt);
    if (strcmp(method, "GET") != 0 && srv_client_gone(c)) { /* a write whose client went */
        s->abandoned++;
        pthread_mutex_unlock(&s->mu);
        return MHD_NO; /* (not served: the connection is closed) */
    }
    if (!strcmp(method, "GET") && is_watch)
        return serve_watch(s, c, method, url, &rt);
    if (strcmp(method, "GET") != 0)
        srv_keep_write(s, c, method, url, cn);
    srv_dispatch(s, c, method, &rt, cn->body, cn->len, &r);
    pthread_mutex_unlock(&s->mu);
    return answer(s, c, method, url, &r);
}

/* The request's seat of the load model (load.c), if it models load: taken (or waited for, or
 * refused with 429) before anything else, given back once the answer is queued. */
static enum MHD_Result serve(drv_apiserver *s, struct MHD_Connection *c, const char *url,
                             const char *method, struct conn *cn)
{
    struct resp r = {0};
    int level = srv_load_enter(s, c, &r);
    if (level == LOAD_REJECTED)
        return answer(s, c, method, url, &r);
    enum MHD_Result ok = serve_seated(s, c, url, method, cn, level);
    srv_load_leave(s, level);
    return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    struct conn *cn = *con_cls;
    if (!cn) {
        if (!(cn = drv_calloc(1, sizeof *cn)))
            return MHD_NO;
        *con_cls = cn;
        return MHD_YES;
    }
    if (*upload_size)
        return read_body(cn, upload, upload_size);
    return serve(cls, c, url, method, cn);
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

/* libmicrohttpd's error log, less what a client hanging up causes: a watch closed by its
 * client (kubectl get -w ended, a controller stopping) is how a watch ends, not an error. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (strstr(msg, "The socket is no longer available for sending"))
        return;
    fputs(msg, stderr);
}

int drv_apiserver_start(drv_apiserver **out, const drv_apiserver_opts *o, drv_diag *d)
{
    drv_apiserver *s = drv_calloc(1, sizeof *s);
    if (!s)
        return drv_fail(d, DRV_ENOMEM, "apiserver: out of memory");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    srv_load_init(s);
    s->cap = o->window > 0 ? (o->window < MAX_WINDOW ? o->window : MAX_WINDOW) : DEF_WINDOW;
    s->bookmark_ms = o->bookmark_ms > 0 ? o->bookmark_ms : 1000;
    s->audit = o->audit;
    s->request_log = o->request_log;
    s->pod_resize = o->pod_resize;
    s->ring = drv_calloc((size_t)s->cap, sizeof *s->ring);
    s->rv = 100;
    int rc = s->ring ? 0 : drv_fail(d, DRV_ENOMEM, "apiserver: out of memory");
    if (!rc && o->load)
        rc = drv_apiserver_set_load(s, o->load, d);
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
        srv_do_create(s, &rt, b, strlen(b), &r);
        free(r.body);
    }
    for (int k = 0; k < 3; k++) {
        if (!(k == 0 ? o->crd_installed : k == 1 ? o->podgroup_crd : o->queue_crd))
            continue;
        json_t *crd = k == 0 ? crd_object() : k == 1 ? pg_crd_object() : queue_crd_object();
        char *b = json_dumps(crd, JSON_COMPACT);
        json_decref(crd);
        struct route rt = {.rt = R_CRDS};
        srv_do_create(s, &rt, b, strlen(b), &r);
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
            flags | MHD_USE_TLS, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
            NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_HTTPS_MEM_KEY, o->tls_key_pem,
            MHD_OPTION_HTTPS_MEM_CERT, o->tls_cert_pem, MHD_OPTION_HTTPS_MEM_TRUST,
            o->tls_client_ca_pem, MHD_OPTION_END);
    else if (o && o->tls_cert_pem && o->tls_key_pem)
        s->mhd = MHD_start_daemon(
            flags | MHD_USE_TLS, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
            NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_HTTPS_MEM_KEY, o->tls_key_pem,
            MHD_OPTION_HTTPS_MEM_CERT, o->tls_cert_pem, MHD_OPTION_END);
    else
        s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER,
                                  mhd_log, NULL, MHD_OPTION_SOCK_ADDR, &sa,
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
        srv_load_stop(s);
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
    srv_load_fini(s);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    drv_free(s);
}

uint16_t drv_apiserver_port(const drv_apiserver *s)
{
    return s->port;
}
