/*
 * client.c - the Kubernetes API client (kube.h): libcurl requests with rate limit and retries,
 * paged lists whose items are decoded one by one as the page arrives (listdec.h), watch streams
 * fed to the incremental decoder as bytes arrive.
 *
 * One CURL easy handle per client is reused for plain requests (keep-alive); each watch gets
 * its own handle, so watches may run on other threads while requests go on.
 */
#include "drover/clock.h"
#include "drover/kube.h"
#include "drover/version.h"

#include "json.h"
#include "kbuf.h"
#include "listdec.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Header lists kept per content type (NCTYPES; a client sends one or two: JSON, and a patch
 * type); a request with another builds its own. */
enum { NCTYPES = 4 };

struct drv_kube {
    drv_kube_config cfg; /* copied, with defaults filled in */
    CURL *h;             /* for plain requests (one at a time: the fields below serve it) */
    struct curl_slist *hdr;
    /* hdr and "Content-Type: <ctype[i]>", built at a body's first request of that type and
     * reused (libcurl reads the list at each request and keeps no copy); ctype[i] NULL: unused */
    struct curl_slist *hdr_ct[NCTYPES];
    char *ctype[NCTYPES];
    char *url; /* the last plain request's URL, rewritten in place (url_cap bytes) */
    size_t url_cap;
    drv_token_bucket tb;
    drv_rng rng;
    long requests, retries;
    long errors;    /* non-2xx answers, retried ones included */
    long throttled; /* of them, 429s (API Priority and Fairness: the server's seats are full) */
    char agent[64];
    const char *const *skip; /* members lists and watches do not build (borrowed); NULL: none */
};

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

int drv_kube_backoff_ms(int attempt, int base_ms, int max_ms, drv_rng *rng)
{
    double ms = base_ms;
    for (int i = 0; i < attempt && ms < max_ms; i++)
        ms *= 2;
    if (ms > max_ms)
        ms = max_ms;
    return (int)(ms * (0.5 + 0.5 * drv_rng_uniform(rng)));
}

void drv_kube_config_fini(drv_kube_config *c)
{
    char **f[] = {&c->server,    &c->token,    &c->ca_file,  &c->ca_data,   &c->cert_file,
                  &c->cert_data, &c->key_file, &c->key_data, &c->namespace_};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        drv_free(*f[i]);
        *f[i] = NULL;
    }
}

static int dup_field(char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = drv_strdup(src);
    return *dst ? 0 : DRV_ENOMEM;
}

static int copy_config(drv_kube_config *dst, const drv_kube_config *src)
{
    *dst = *src;
    int rc = dup_field(&dst->server, src->server) | dup_field(&dst->token, src->token) |
             dup_field(&dst->ca_file, src->ca_file) | dup_field(&dst->ca_data, src->ca_data) |
             dup_field(&dst->cert_file, src->cert_file) |
             dup_field(&dst->cert_data, src->cert_data) | dup_field(&dst->key_file, src->key_file) |
             dup_field(&dst->key_data, src->key_data) |
             dup_field(&dst->namespace_, src->namespace_);
    if (rc) {
        drv_kube_config_fini(dst);
        return DRV_ENOMEM;
    }
    if (dst->qps <= 0)
        dst->qps = 5;
    if (dst->burst <= 0)
        dst->burst = 10;
    if (dst->retries == 0)
        dst->retries = 5;
    if (dst->retries < 0)
        dst->retries = 0;
    if (dst->backoff_ms <= 0)
        dst->backoff_ms = 200;
    if (dst->backoff_max_ms <= 0)
        dst->backoff_max_ms = 10000;
    if (dst->retry_after_max_s <= 0)
        dst->retry_after_max_s = 30;
    if (dst->timeout_s <= 0)
        dst->timeout_s = 30;
    return 0;
}

/* TLS and authentication options shared by request and watch handles. */
static int setup_handle(drv_kube *k, CURL *h, drv_diag *d)
{
    const drv_kube_config *c = &k->cfg;
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_USERAGENT, k->agent);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); /* gzip when the server offers it */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, k->hdr);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    if (c->ca_data) {
        struct curl_blob b = {c->ca_data, strlen(c->ca_data), CURL_BLOB_COPY};
        if (curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b) != CURLE_OK)
            return drv_fail(d, DRV_ENOTSUP, "%s: this libcurl cannot take an inline CA", c->server);
    }
    if (c->cert_file)
        curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file);
    if (c->key_file)
        curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file);
    if (c->cert_data) {
        struct curl_blob b = {c->cert_data, strlen(c->cert_data), CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (c->key_data) {
        struct curl_blob b = {c->key_data, strlen(c->key_data), CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    return 0;
}

/* curl_global_init is not thread-safe and must run once per process: pthread_once makes the first
 * drv_kube_new do it even when several threads create clients at the same time. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* True for a host (as libcurl parsed it) that is a loopback address: "localhost" (libcurl 7.78+
 * resolves it to loopback itself, never through DNS), an IPv4 address in 127.0.0.0/8, or
 * [::1]. A prefix match on the URL's text is not enough: "127.evil.example" and the user name
 * of "http://127.0.0.1@evil.example" both start with "127.". */
static bool loopback_host(const char *host)
{
    if (!strcasecmp(host, "localhost"))
        return true;
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    size_t n = strlen(host);
    char v6[INET6_ADDRSTRLEN + 2];
    struct in6_addr a6;
    if (n < 2 || n - 2 >= sizeof v6 || host[0] != '[' || host[n - 1] != ']')
        return false;
    snprintf(v6, sizeof v6, "%.*s", (int)(n - 2), host + 1);
    return inet_pton(AF_INET6, v6, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* A URL part, or NULL when absent (freed with curl_free). */
static char *url_part(CURLU *u, CURLUPart what)
{
    char *v = NULL;
    return curl_url_get(u, what, &v, 0) == CURLUE_OK ? v : NULL;
}

/*
 * A user name or password in the server URL is refused rather than used or ignored: Kubernetes
 * has no basic authentication since 1.19, the URL is printed in warnings and in every request's
 * error message (so the password would be too), and user info is what makes a URL look like
 * one host while it names another ("http://127.0.0.1@evil.example"). The message shows the URL
 * without it.
 */
int drv_kube_check_server(const char *server, bool *loopback, drv_diag *d)
{
    *loopback = false;
    if (!server || !*server)
        return drv_fail(d, DRV_EINVAL, "\"\": expected an http:// or https:// URL");
    CURLU *u = curl_url();
    if (!u)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    int rc = 0;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, server, CURLU_NON_SUPPORT_SCHEME);
    char *user = NULL, *pass = NULL, *clean = NULL, *host = NULL;
    if (uc != CURLUE_OK) { /* not echoed: what cannot be parsed may still hold a password */
        rc = drv_fail(d, DRV_EINVAL, "expected an http:// or https:// URL (%s)",
                      curl_url_strerror(uc));
        goto out;
    }
    user = url_part(u, CURLUPART_USER);
    pass = url_part(u, CURLUPART_PASSWORD);
    if (user || pass) {
        curl_url_set(u, CURLUPART_USER, NULL, 0);
        curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
        clean = url_part(u, CURLUPART_URL);
        rc = drv_fail(d, DRV_EINVAL,
                      "%s: the URL carries a user name or password (not shown); "
                      "expected scheme://host[:port][/path] (authenticate with a token, a "
                      "tokenFile or a client certificate)",
                      clean ? clean : "(unprintable)");
        goto out;
    }
    if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7)) {
        rc = drv_fail(d, DRV_EINVAL, "\"%s\": expected an http:// or https:// URL", server);
        goto out;
    }
    host = url_part(u, CURLUPART_HOST);
    *loopback = host && loopback_host(host);
out:
    curl_free(user);
    curl_free(pass);
    curl_free(clean);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

/*
 * The token goes verbatim into an "Authorization: Bearer" header: a control character (CR LF
 * would start a header of the token's choosing) is refused. Over http:// it would travel in
 * clear: refused, unless the server's host is loopback or the configuration says insecure (then
 * a warning says so). c->server has passed drv_kube_check_server: it carries no user info.
 */
static int check_token(const drv_kube_config *c, bool loopback, drv_diag *d)
{
    for (const unsigned char *p = (const unsigned char *)c->token; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return drv_fail(d, DRV_EINVAL, "token: contains a control character (byte %zu)",
                            (size_t)(p - (const unsigned char *)c->token));
    if (strncmp(c->server, "http://", 7) || loopback)
        return 0;
    if (!c->insecure)
        return drv_fail(d, DRV_EINVAL,
                        "server %s: plain http would send the bearer token unencrypted; use "
                        "https://, or set insecure-skip-tls-verify to accept that",
                        c->server);
    drv_log(DRV_LOG_WARN, "%s: plain http: the bearer token is sent unencrypted", c->server);
    return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg);
static size_t on_header(char *data, size_t sz, size_t nm, void *arg);

int drv_kube_new(drv_kube **out, const drv_kube_config *cfg, drv_diag *d)
{
    *out = NULL;
    bool loopback;
    drv_diag why;
    int rc = drv_kube_check_server(cfg->server, &loopback, &why);
    if (rc)
        return drv_fail(d, rc, "server %s", why.msg);
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK)
        return drv_fail(d, DRV_EIO, "libcurl failed to initialise");
    drv_kube *k = drv_calloc(1, sizeof *k);
    if (!k || copy_config(&k->cfg, cfg) != 0) {
        drv_free(k);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    if (cfg->component)
        snprintf(k->agent, sizeof k->agent, "drover-%s/%s", cfg->component, DROVER_VERSION);
    else
        snprintf(k->agent, sizeof k->agent, "drover/%s", DROVER_VERSION);
    char auth[64 + 4096];
    k->hdr = curl_slist_append(NULL, "Accept: application/json");
    if (k->hdr && k->cfg.token) {
        if (strlen(k->cfg.token) > 4096) {
            drv_kube_free(k);
            return drv_fail(d, DRV_EINVAL, "token: longer than 4096 bytes");
        }
        rc = check_token(&k->cfg, loopback, d);
        if (rc) {
            drv_kube_free(k);
            return rc;
        }
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", k->cfg.token);
        struct curl_slist *h = curl_slist_append(k->hdr, auth);
        if (!h) /* (a failed append leaves the list as it was: freed here, not leaked) */
            curl_slist_free_all(k->hdr);
        k->hdr = h;
    }
    k->h = curl_easy_init();
    if (!k->hdr || !k->h) {
        drv_kube_free(k);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    rc = setup_handle(k, k->h, d);
    if (rc) {
        drv_kube_free(k);
        return rc;
    }
    curl_easy_setopt(k->h, CURLOPT_WRITEFUNCTION, on_body); /* (their data: per request) */
    curl_easy_setopt(k->h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(k->h, CURLOPT_TIMEOUT, (long)k->cfg.timeout_s);
    if (k->cfg.insecure && !strncmp(k->cfg.server, "https://", 8))
        drv_log(DRV_LOG_WARN,
                "%s: insecure-skip-tls-verify is set: the server's certificate "
                "is not checked",
                k->cfg.server);
    drv_token_bucket_init(&k->tb, k->cfg.qps, k->cfg.burst, drv_clock_mono());
    drv_rng_seed(&k->rng, (uint64_t)(drv_clock_mono() * 1e6));
    *out = k;
    return 0;
}

void drv_kube_skip_unread(drv_kube *k, const char *const *paths)
{
    k->skip = paths;
}

const char *const *drv_kube_unread(const drv_kube *k)
{
    return k->skip;
}

void drv_kube_free(drv_kube *k)
{
    if (!k)
        return;
    if (k->h)
        curl_easy_cleanup(k->h);
    curl_slist_free_all(k->hdr);
    for (int i = 0; i < NCTYPES; i++) {
        curl_slist_free_all(k->hdr_ct[i]);
        drv_free(k->ctype[i]);
    }
    drv_free(k->url);
    drv_kube_config_fini(&k->cfg);
    drv_free(k);
}

long drv_kube_requests(const drv_kube *k)
{
    return k->requests;
}

long drv_kube_errors(const drv_kube *k)
{
    return k->errors;
}

/* Waits for a token of the client's bucket, or of the shared budget's. */
static void take_token(drv_kube *k)
{
    sleep_s(k->cfg.budget ? drv_kube_budget_take(k->cfg.budget)
                          : drv_token_bucket_take(&k->tb, drv_clock_mono()));
}

/* Counts a non-2xx answer (code 0: no answer, not counted). */
static void count_answer(drv_kube *k, const char *method, const char *path, long code)
{
    if (code == 0 || (code >= 200 && code < 300))
        return;
    k->errors++;
    if (code == 429)
        k->throttled++;
    if (k->cfg.budget)
        drv_kube_budget_count(k->cfg.budget, method, path, code);
}

long drv_kube_throttled(const drv_kube *k)
{
    return k->throttled;
}

long drv_kube_retries(const drv_kube *k)
{
    return k->retries;
}

/* ---- plain requests ------------------------------------------------------------------------ */

typedef struct rbuf {
    drv_kbuf body;
    int retry_after; /* seconds, -1 when absent */
    char ctype[128];
    /* A list page: a 2xx body goes to this decoder as it arrives instead of into body. */
    drv_list_decoder *list;
    CURL *h;
    bool unread;   /* a 2xx body nobody reads (no out, no list): not kept; others are */
    int list_rc;   /* the decoder's first error (its message in d) */
    bool streamed; /* bytes reached the decoder: items may have been handed on */
    drv_diag *d;
} rbuf;

/* The body of an answer: a 2xx list page to the decoder, anything else into the buffer. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    rbuf *b = arg;
    long code = 0;
    if ((b->list && !b->streamed) || b->unread)
        curl_easy_getinfo(b->h, CURLINFO_RESPONSE_CODE, &code);
    if (b->unread && code >= 200 && code < 300)
        return size * nmemb;
    if (!b->list || (!b->streamed && (code < 200 || code >= 300)) || b->body.n)
        return drv_kbuf_write(data, size, nmemb, &b->body);
    b->streamed = true;
    size_t n = size * nmemb;
    if (b->list_rc || (b->list_rc = drv_list_decoder_feed(b->list, data, n, b->d)) != 0)
        return 0; /* aborts the transfer */
    return n;
}

static size_t on_header(char *data, size_t sz, size_t nm, void *arg)
{
    rbuf *b = arg;
    size_t n = sz * nm;
    if (n > 12 && !strncasecmp(data, "Retry-After:", 12))
        b->retry_after = atoi(data + 12);
    else if (n > 13 && !strncasecmp(data, "Content-Type:", 13))
        snprintf(b->ctype, sizeof b->ctype, "%.*s", (int)strcspn(data + 14, "\r\n"), data + 14);
    return n;
}

/* "404 NotFound: pods \"x\" not found" from a Status body, or the status alone. */
static void status_text(const rbuf *b, long status, char *out, size_t n)
{
    json_error_t je;
    json_t *j = b->body.n ? json_loadb(b->body.p, b->body.n, 0, &je) : NULL;
    const char *reason = j ? json_string_value(json_object_get(j, "reason")) : NULL;
    const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
    snprintf(out, n, "%ld%s%s%s%s", status, reason ? " " : "", reason ? reason : "",
             msg ? ": " : "", msg ? msg : "");
    json_decref(j);
}

static bool retryable(const char *method, long status, CURLcode cc)
{
    bool post = !strcmp(method, "POST") || !strcmp(method, "PATCH");
    switch (cc) {
    case CURLE_OK:
        break;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        return true; /* nothing reached the server */
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
        return !post; /* the server may have acted */
    default:
        return false; /* certificates, bad URLs...: retrying cannot help */
    }
    if (status == 429)
        return true;
    return !post && (status == 500 || status == 502 || status == 503 || status == 504);
}

/* The server's URL and path, in k->url (grown as needed); NULL when out of memory. */
static const char *request_url(drv_kube *k, const char *path)
{
    size_t ns = strlen(k->cfg.server), np = strlen(path);
    if (ns + np + 1 > k->url_cap) {
        char *u = drv_realloc(k->url, ns + np + 1);
        if (!u)
            return NULL;
        k->url = u;
        k->url_cap = ns + np + 1;
    }
    memcpy(k->url, k->cfg.server, ns);
    memcpy(k->url + ns, path, np + 1);
    return k->url;
}

/* k->hdr and "Content-Type: <ctype>" (NULL: application/json) for a request with a body: k's
 * list for that type, built at its first use; a type past NCTYPES gets a list of its own in
 * *own, which the caller frees. NULL when out of memory. */
static struct curl_slist *body_headers(drv_kube *k, const char *ctype, struct curl_slist **own)
{
    if (!ctype)
        ctype = "application/json";
    int i = 0;
    while (i < NCTYPES && k->ctype[i] && strcmp(k->ctype[i], ctype) != 0)
        i++;
    if (i < NCTYPES && k->ctype[i])
        return k->hdr_ct[i];
    char ct[160];
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
    struct curl_slist *hdr = NULL, *more = NULL;
    for (const struct curl_slist *h = k->hdr; h; h = h->next, hdr = more)
        if (!(more = curl_slist_append(hdr, h->data)))
            break;
    if (!more || !(more = curl_slist_append(hdr, ct))) {
        curl_slist_free_all(hdr); /* (a failed append leaves the list as it was) */
        return NULL;
    }
    hdr = more;
    if (i == NCTYPES || !(k->ctype[i] = drv_strdup(ctype)))
        return *own = hdr;
    return k->hdr_ct[i] = hdr;
}

/* The metadata.resourceVersion of b's 2xx answer into rv (nrv bytes; "" when absent): the answer
 * parsed as a document without the object's spec and status (checked as JSON, not built), as
 * a caller that reads nothing else need not decode the whole object. */
static int answer_rv(const rbuf *b, const char *method, const char *path, long code, char *rv,
                     size_t nrv, drv_diag *d)
{
    static const char *const unread[] = {"spec", "status", "metadata.managedFields", NULL};
    drv_jdoc doc;
    drv_jdoc_init(&doc);
    json_error_t je;
    int rc = 0;
    if (drv_jdoc_parse(&doc, b->body.p, b->body.n, unread, NULL, &je) != 0)
        rc = drv_fail(d, DRV_EPARSE, "%s %s: %ld answer is not JSON (%s, byte %d): %s", method,
                      path, code, b->ctype[0] ? b->ctype : "no content type", je.position, je.text);
    else {
        const char *v = drv_jdoc_str(
            &doc, drv_jdoc_get(&doc, drv_jdoc_get(&doc, 0, "metadata"), "resourceVersion"));
        snprintf(rv, nrv, "%s", v ? v : "");
    }
    drv_jdoc_fini(&doc);
    return rc;
}

/* drv_kube_request; with list, a 2xx answer is fed to it as it arrives (and *out is unused);
 * with rv, only the answer's metadata.resourceVersion is read (answer_rv). A failure after
 * items were handed on is not retried: the caller lists again; with a decoder that hands
 * nothing on (no callback), the page is read again from the start. */
static int request(drv_kube *k, const char *method, const char *path, const char *ctype,
                   const char *body, long *status, json_t **out, drv_list_decoder *list, char *rv,
                   size_t nrv, drv_diag *d)
{
    if (out)
        *out = NULL;
    if (rv && nrv)
        rv[0] = 0;
    if (status)
        *status = 0;
    const char *url = request_url(k, path);
    struct curl_slist *own = NULL, *hdr = body ? body_headers(k, ctype, &own) : k->hdr;
    if (!url || !hdr)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    rbuf b = {.list = list, .h = k->h, .unread = !out && !list && !rv, .d = d};
    int rc = 0;
    long code = 0;
    for (int attempt = 0;; attempt++) {
        take_token(k);
        b.body.n = 0;
        b.retry_after = -1;
        b.ctype[0] = 0;
        CURL *h = k->h;
        curl_easy_setopt(h, CURLOPT_URL, url);
        /* The handle is reused: reset to a bodiless GET, then set this request's method. */
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        if (body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        }
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, strcmp(method, "GET") ? method : NULL);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b); /* (the callbacks: set once, drv_kube_new) */
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &b);
        k->requests++;
        CURLcode cc = curl_easy_perform(h);
        code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        count_answer(k, method, path, code);
        if (b.body.oom) {
            rc = drv_fail(d, DRV_ENOMEM, "%s %s: out of memory reading the answer", method, path);
            break;
        }
        if (b.list_rc) {
            rc = b.list_rc; /* d says why */
            break;
        }
        if (cc == CURLE_OK && code >= 200 && code < 300) {
            if (list)
                rc = drv_list_decoder_finish(list, d);
            break;
        }
        if (b.streamed && !list->cb) { /* nothing handed on yet (the pager's scan): start over */
            drv_list_decoder_reset(list);
            b.streamed = false;
        }
        if (!b.streamed && attempt < k->cfg.retries && retryable(method, code, cc)) {
            k->retries++;
            double wait = b.retry_after >= 0 ? (double)(b.retry_after < k->cfg.retry_after_max_s
                                                            ? b.retry_after
                                                            : k->cfg.retry_after_max_s)
                                             : drv_kube_backoff_ms(attempt, k->cfg.backoff_ms,
                                                                   k->cfg.backoff_max_ms, &k->rng) /
                                                   1000.0;
            drv_log(DRV_LOG_INFO, "%s %s: %s; retrying in %.2f s", method, path,
                    cc != CURLE_OK ? curl_easy_strerror(cc) : "server busy", wait);
            sleep_s(wait);
            continue;
        }
        if (cc != CURLE_OK) {
            rc = drv_fail(d, DRV_EIO, "%s %s%s: %s", method, k->cfg.server, path,
                          curl_easy_strerror(cc));
        } else {
            char st[400];
            status_text(&b, code, st, sizeof st);
            rc = drv_fail(d, DRV_EIO, "%s %s: %s", method, path, st);
        }
        break;
    }
    if (status)
        *status = code;
    if (!rc && out && b.body.n > 0) {
        json_error_t je;
        *out = json_loadb(b.body.p, b.body.n, 0, &je);
        if (!*out)
            rc = drv_fail(d, DRV_EPARSE, "%s %s: %ld answer is not JSON (%s, byte %d): %s", method,
                          path, code, b.ctype[0] ? b.ctype : "no content type", je.position,
                          je.text);
    }
    if (!rc && rv && b.body.n > 0)
        rc = answer_rv(&b, method, path, code, rv, nrv, d);
    drv_free(b.body.p);
    curl_slist_free_all(own);
    return rc;
}

int drv_kube_request(drv_kube *k, const char *method, const char *path, const char *ctype,
                     const char *body, long *status, json_t **out, drv_diag *d)
{
    return request(k, method, path, ctype, body, status, out, NULL, NULL, 0, d);
}

int drv_kube_request_rv(drv_kube *k, const char *method, const char *path, const char *ctype,
                        const char *body, long *status, char *rv, size_t nrv, drv_diag *d)
{
    return request(k, method, path, ctype, body, status, NULL, NULL, rv, nrv, d);
}

int drv_kube_get_page(drv_kube *k, const char *path, drv_list_decoder *l, long *status, drv_diag *d)
{
    return request(k, "GET", path, NULL, NULL, status, NULL, l, NULL, 0, d);
}

int drv_kube_update(drv_kube *k, const char *path, drv_kube_mutate_fn mutate, void *arg,
                    int attempts, json_t **out, long *status, drv_diag *d)
{
    long st0;
    long *sp = status ? status : &st0;
    if (out)
        *out = NULL;
    if (attempts <= 0)
        attempts = 5;
    int rc = 0;
    for (int a = 0; a < attempts; a++) {
        json_t *obj = NULL;
        long st = 0;
        rc = drv_kube_request(k, "GET", path, NULL, NULL, &st, &obj, d);
        *sp = st;
        if (rc != 0)
            return rc;
        if (!obj)
            return drv_fail(d, DRV_EPARSE, "GET %s: empty answer", path);
        if ((rc = mutate(obj, arg)) != 0) {
            json_decref(obj);
            return rc;
        }
        char *body = json_dumps(obj, JSON_COMPACT);
        json_decref(obj);
        if (!body)
            return drv_fail(d, DRV_ENOMEM, "out of memory");
        json_t *res = NULL;
        rc = drv_kube_request(k, "PUT", path, NULL, body, &st, &res, d);
        *sp = st;
        free(body);
        if (rc == 0) {
            if (out)
                *out = res;
            else
                json_decref(res);
            return 0;
        }
        if (st != 409)
            return rc;
        drv_log(DRV_LOG_INFO, "PUT %s: conflict, reading again (attempt %d of %d)", path, a + 1,
                attempts);
    }
    return rc;
}

int drv_kube_delete(drv_kube *k, const char *path, int grace_s, const char *propagation,
                    long *status, drv_diag *d)
{
    return drv_kube_delete_uid(k, path, grace_s, propagation, NULL, status, d);
}

int drv_kube_delete_uid(drv_kube *k, const char *path, int grace_s, const char *propagation,
                        const char *uid, long *status, drv_diag *d)
{
    json_t *o = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
    if (o && grace_s >= 0)
        json_object_set_new(o, "gracePeriodSeconds", json_integer(grace_s));
    if (o && propagation)
        json_object_set_new(o, "propagationPolicy", json_string(propagation));
    if (o && uid)
        json_object_set_new(o, "preconditions", json_pack("{s:s}", "uid", uid));
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!body)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    int rc = drv_kube_request(k, "DELETE", path, NULL, body, status, NULL, d);
    free(body);
    return rc;
}

/* ---- watches ------------------------------------------------------------------------------- */

typedef struct wstate {
    drv_watch_decoder dec;
    drv_jdoc doc; /* the events' document when they are read as documents (dec.doc) */
    drv_watch_cb cb;
    void *arg;
    char *last_rv;
    size_t n;
    int rc; /* first non-zero result of decoding or of cb */
    bool expired;
    atomic_int *stop;
    drv_diag *d;
} wstate;

static int on_event(const drv_watch_event *ev, void *arg)
{
    wstate *w = arg;
    if (ev->type == DRV_WATCH_ERROR) {
        /* a Status: code 410 (an integer: json_integer_value's 0 for anything else) */
        const drv_jdoc *doc = ev->doc;
        int32_t c = doc ? drv_jdoc_get(doc, ev->obj, "code") : -1;
        json_int_t code = doc ? (drv_jdoc_type(doc, c) == DRV_JINT ? doc->v[c].i : 0)
                              : json_integer_value(json_object_get(ev->object, "code"));
        if (code == 410) {
            w->expired = true;
            return DRV_KUBE_RELIST;
        }
        const char *m = doc ? drv_jdoc_str(doc, drv_jdoc_get(doc, ev->obj, "message"))
                            : json_string_value(json_object_get(ev->object, "message"));
        return drv_fail(w->d, DRV_EIO, "watch %s after resourceVersion %s: ERROR event: %s",
                        w->dec.resource, w->last_rv, m ? m : "(no message)");
    }
    int rc = w->cb(ev, w->arg);
    if (!rc && ev->rv && *ev->rv && w->n)
        snprintf(w->last_rv, w->n, "%s", ev->rv);
    return rc;
}

static size_t on_watch_body(char *data, size_t sz, size_t nm, void *arg)
{
    wstate *w = arg;
    size_t n = sz * nm;
    if (w->rc)
        return 0;
    int rc = drv_watch_decoder_feed(&w->dec, data, n, on_event, w, w->d);
    if (rc) {
        w->rc = rc;
        return 0; /* aborts the transfer */
    }
    return n;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t e)
{
    (void)a, (void)b, (void)c, (void)e;
    const wstate *w = arg;
    return w->stop && atomic_load(w->stop) ? 1 : 0;
}

/* drv_kube_watch, its events as documents when docs is set (drv_kube_watch_docs). */
static int watch_stream(drv_kube *k, const char *path, const char *rv, int timeout_s,
                        drv_watch_cb cb, void *arg, char *last_rv, size_t n, atomic_int *stop,
                        bool docs, drv_diag *d)
{
    if (n && last_rv != rv)
        snprintf(last_rv, n, "%s", rv ? rv : "");
    size_t ulen = strlen(k->cfg.server) + strlen(path) + (rv ? strlen(rv) : 0) + 128;
    char *url = drv_malloc(ulen);
    CURL *h = curl_easy_init();
    if (!url || !h) {
        drv_free(url);
        if (h)
            curl_easy_cleanup(h);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    snprintf(url, ulen, "%s%s%cwatch=1&allowWatchBookmarks=true&timeoutSeconds=%d%s%s",
             k->cfg.server, path, strchr(path, '?') ? '&' : '?', timeout_s > 0 ? timeout_s : 300,
             rv && *rv ? "&resourceVersion=" : "", rv && *rv ? rv : "");
    /* The resource, for messages: the path's last segment before any query. */
    char res[64];
    const char *slash = strrchr(path, '/');
    snprintf(res, sizeof res, "%.*s", (int)strcspn(slash ? slash + 1 : path, "?"),
             slash ? slash + 1 : path);
    wstate w = {.cb = cb, .arg = arg, .last_rv = last_rv, .n = n, .stop = stop, .d = d};
    drv_watch_decoder_init(&w.dec, res);
    w.dec.skip = k->skip;
    drv_jdoc_init(&w.doc);
    w.dec.doc = docs ? &w.doc : NULL;
    int rc = setup_handle(k, h, d);
    CURLcode cc = CURLE_OK;
    long code = 0;
    if (!rc) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_watch_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
        take_token(k);
        k->requests++;
        cc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        count_answer(k, "GET", url + strlen(k->cfg.server), code);
    }
    if (rc) {
        /* setup failed; d says why */
    } else if (w.rc) {
        rc = w.rc; /* RELIST, a parse error or the callback's code */
    } else if (cc == CURLE_ABORTED_BY_CALLBACK) {
        rc = 0; /* *stop */
    } else if (cc != CURLE_OK) {
        rc = drv_fail(d, DRV_EIO, "watch %s after resourceVersion %s: %s", res, last_rv,
                      curl_easy_strerror(cc));
    } else if (code == 410) {
        rc = DRV_KUBE_RELIST;
    } else if (code < 200 || code >= 300) {
        rc = drv_fail(d, DRV_EIO, "watch %s: HTTP %ld", res, code);
    } else {
        rc = drv_watch_decoder_finish(&w.dec, d); /* a stream cut mid-line is an error */
    }
    drv_watch_decoder_fini(&w.dec);
    drv_jdoc_fini(&w.doc);
    curl_easy_cleanup(h);
    drv_free(url);
    return rc;
}

int drv_kube_watch(drv_kube *k, const char *path, const char *rv, int timeout_s, drv_watch_cb cb,
                   void *arg, char *last_rv, size_t n, atomic_int *stop, drv_diag *d)
{
    return watch_stream(k, path, rv, timeout_s, cb, arg, last_rv, n, stop, false, d);
}

int drv_kube_watch_docs(drv_kube *k, const char *path, const char *rv, int timeout_s,
                        drv_watch_cb cb, void *arg, char *last_rv, size_t n, atomic_int *stop,
                        drv_diag *d)
{
    return watch_stream(k, path, rv, timeout_s, cb, arg, last_rv, n, stop, true, d);
}
