/*
 * test_conformance.c - replays every recorded request in tests/fixtures/k8s/transcripts against
 * the in-memory API server and compares the answer with the recording: status code, content
 * type, and body shape (top-level kind; for a Status, its reason and code).
 *
 * The recordings were taken in one session against a real kube-apiserver, so a request is
 * replayed after the ones that created its state (ORDER below). Values that were per-run in the
 * recording are adjusted before sending: a PUT that carried the then-current resourceVersion
 * gets the server's current one, watch timeouts are cut to 1 s, and the 410 case expires the
 * window first. Exchanges that need authentication/RBAC (401/403) are not modelled and are
 * listed in SKIP with the reason.
 */
#include "apiserver.h"

#include <curl/curl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "drover/file.h"
#include "kbuf.h"

static const char *const ORDER[] = {
    "01-discovery-api",
    "01-discovery-apis",
    "01-discovery-api-v1",
    "01-discovery-coordination-v1",
    "01-discovery-version",
    "02-node-create",
    "02-node-get",
    "03-pod-create",
    "04-binding-missing-pod",
    "04-binding-name-mismatch",
    "04-binding-success",
    "04-binding-already-bound",
    "04-pod-get-after-binding",
    "03-pod-list-all",
    "03-pod-list-limit-1",
    "03-pod-list-continue",
    "03-pod-list-bad-continue",
    "03-pod-list-fieldselector",
    "03-pod-list-labelselector",
    "02-node-list",
    "02-node-list-labelselector",
    "02-node-status-merge-patch",
    "06-put-stale-resourceversion",
    "06-put-current-resourceversion",
    "06-merge-patch-stale-resourceversion",
    "07-patch-merge",
    "07-patch-json",
    "07-patch-json-test-fails",
    "07-patch-merge-malformed-json",
    "07-patch-strategic-merge",
    "07-patch-merge-replaces-list",
    "07-patch-unsupported-content-type",
    "03-pod-get",
    "08-crd-create",
    "08-crd-get-established",
    "08-discovery-apis-with-crd",
    "08-discovery-drover-v1alpha1",
    "08-tj-create",
    "08-tj-get",
    "08-tj-list",
    "08-tj-validation-422",
    "08-tj-status-merge-patch",
    "08-tj-main-patch-spec",
    "08-tj-main-patch-status-ignored",
    "08-tj-status-put",
    "07-patch-strategic-on-cr-415",
    "13-table-tj",
    "13-table-pods",
    "13-table-pod-single",
    "13-table-nodes",
    "05-watch-old-rv-replay-in-window",
    "05-watch-timeout-5s",
    "05-watch-pods-bookmarks",
    "05-watch-fieldselector-unbound",
    "05-watch-trainingjobs",
    "05-watch-expired-410",
    "09-lease-create",
    "09-lease-renew-put",
    "09-lease-conflict-put",
    "09-lease-get",
    "10-event-create",
    "10-event-list-fieldselector",
    "10-event-namespace-mismatch-422",
    "12-create-already-exists-409",
    "12-create-in-missing-namespace-404",
    "12-create-namespace-mismatch-400",
    "12-get-missing-node-404",
    "12-get-missing-pod-404",
    "12-post-on-named-resource-405",
    "12-unknown-resource-404",
    "11-delete-pod-grace0",
    "11-delete-pod-graceful-bound",
    "11-delete-pod-force-after-graceful",
    "11-delete-cr-background",
};

static const char *const SKIP[] = {
    /* authentication and RBAC are not modelled by the test server */
    "12-bad-token-401",
    "12-forbidden-403",
    "12-forbidden-403-binding",
    "12-no-token-anonymous-403",
    /* need objects (configmap, owner TrainingJob tj-owner) whose creation was not recorded;
     * foreground deletion is covered by hand in test_apiserver_semantics */
    "11-delete-configmap-status",
    "11-create-pod-with-ownerreference",
    "11-delete-foreground-owner",
    "11-foreground-owner-get-during",
    "11-foreground-dependents-after",
    "11-foreground-owner-get-after",
    /* the raw-chunked capture repeats 05-watch-pods-bookmarks (framing is libmicrohttpd's) */
    "05-watch-pods-raw-chunked",
};

static char *slurp(const char *path)
{
    char *text = NULL;
    return drv_file_read(path, &text, NULL, NULL) == 0 ? text : NULL;
}

static const char *fixdir(void)
{
    static char dir[512];
    const char *src = getenv("DROVER_SOURCE_DIR");
    snprintf(dir, sizeof dir, "%.400s/tests/fixtures/k8s", src ? src : ".");
    return dir;
}

/* Header value from a CRLF header block (case-insensitive name), copied into out. */
static void header(const char *block, const char *name, char *out, size_t n)
{
    out[0] = 0;
    size_t nl = strlen(name);
    for (const char *p = block; p && *p;) {
        if (!strncasecmp(p, name, nl) && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            size_t l = strcspn(v, "\r\n");
            snprintf(out, n, "%.*s", (int)l, v);
            return;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
}

static uint16_t port;
static drv_apiserver *srv;

/* The current resourceVersion of the object at path (GET), or "". */
static void current_rv(const char *path, char *out, size_t n)
{
    char url[2200];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    CURL *c = curl_easy_init();
    drv_kbuf b = {0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drv_kbuf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_perform(c);
    curl_easy_cleanup(c);
    json_t *j = b.p ? json_loads(b.p, 0, NULL) : NULL;
    const char *rv =
        json_string_value(json_object_get(json_object_get(j, "metadata"), "resourceVersion"));
    snprintf(out, n, "%s", rv ? rv : "");
    json_decref(j);
    drv_free(b.p);
}

/* The recorded target's per-run values made this run's: a 1 s watch timeout, and watch
 * resourceVersions (the recorded run's) from the start of this server's window (the 410 case
 * expires the window first). */
static void adapt_target(const char *name, char *target, size_t n)
{
    char *q = strstr(target, "timeoutSeconds=");
    if (q)
        snprintf(q, n - (size_t)(q - target), "timeoutSeconds=1");
    else if (strstr(target, "watch=1"))
        strncat(target, "&timeoutSeconds=1", n - strlen(target) - 1);
    char *rvq = strstr(target, "resourceVersion=");
    if (rvq && strstr(target, "watch=")) {
        size_t tail = strcspn(rvq, "&");
        memmove(rvq + 17, rvq + tail, strlen(rvq + tail) + 1);
        memcpy(rvq, "resourceVersion=1", 17);
    }
    if (!strcmp(name, "05-watch-expired-410"))
        drv_apiserver_expire(srv);
}

/* A PUT's body with the object's current resourceVersion (but for the cases that test a stale
 * one): malloc'd, or NULL when body stays as recorded. */
static char *fresh_body(const char *name, const char *method, const char *target, const char *body)
{
    if (strcmp(method, "PUT") || !strcmp(name, "06-put-stale-resourceversion") ||
        !strcmp(name, "09-lease-conflict-put"))
        return NULL;
    char objpath[2048], rv[64];
    snprintf(objpath, sizeof objpath, "%.*s", (int)strcspn(target, "?"), target);
    char *st = strstr(objpath, "/status");
    if (st && !st[7])
        *st = 0;
    current_rv(objpath, rv, sizeof rv);
    json_t *bj = json_loads(body, 0, NULL);
    json_object_set_new(json_object_get(bj, "metadata"), "resourceVersion", json_string(rv));
    char *out = json_dumps(bj, JSON_COMPACT);
    json_decref(bj);
    return out;
}

/* What the server answered. */
typedef struct got_answer {
    CURLcode cc;
    long code;
    char ct[256]; /* "" when none */
    drv_kbuf body;
} got_answer;

/* Sends the request to this server (its headers ctype and accept when not ""). */
static void send_request(const char *method, const char *target, const char *ctype,
                         const char *accept, const char *body, got_answer *a)
{
    char url[2300], line[600];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, target);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    if (ctype[0]) {
        snprintf(line, sizeof line, "Content-Type: %s", ctype);
        h = curl_slist_append(h, line);
    }
    if (accept[0]) {
        snprintf(line, sizeof line, "Accept: %s", accept);
        h = curl_slist_append(h, line);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (*body || !strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH")) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drv_kbuf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &a->body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    a->cc = curl_easy_perform(c);
    char *ct = NULL;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->code);
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(a->ct, sizeof a->ct, "%s", ct ? ct : "");
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

/* The body's shape against the recorded one: its first line's JSON (a watch stream: its first
 * event's type and object's reason), else the text. How many differ. */
static int compare_body(const char *name, const char *want_body, const char *got)
{
    int fails = 0;
    size_t first = strcspn(want_body, "\n");
    json_t *w = json_loadb(want_body,
                           first == strlen(want_body)
                               ? strlen(want_body)
                               : (strchr(want_body, '{') == want_body ? first : strlen(want_body)),
                           JSON_DISABLE_EOF_CHECK, NULL);
    if (!w)
        w = json_loads(want_body, 0, NULL);
    json_t *g = got ? json_loads(got, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    if (w) {
        const char *keys[] = {"kind", "reason", "type", "apiVersion"};
        for (size_t i = 0; i < 4; i++) {
            json_t *wv = json_object_get(w, keys[i]);
            json_t *gv = json_object_get(g, keys[i]);
            if (wv && !json_equal(wv, gv)) {
                print_error("%s: %s is %s, recorded %s\n", name, keys[i],
                            json_string_value(gv) ? json_string_value(gv) : "(missing)",
                            json_string_value(wv));
                fails++;
            }
        }
        json_t *wr = json_object_get(json_object_get(w, "object"), "reason");
        json_t *gr = json_object_get(json_object_get(g, "object"), "reason");
        if (wr && !json_equal(wr, gr)) {
            print_error("%s: event object reason differs\n", name);
            fails++;
        }
    } else if (strcmp(want_body, got ? got : "")) {
        print_error("%s: body '%s', recorded '%s'\n", name, got ? got : "", want_body);
        fails++;
    }
    json_decref(w);
    json_decref(g);
    return fails;
}

/* The recorded exchange `name` replayed against this server: its request sent (per-run values
 * adapted), the answer's status, content type and body shape compared with the recorded
 * answer's. How many differ. */
static int replay(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/transcripts/%s/request.txt", fixdir(), name);
    char *req = slurp(path);
    snprintf(path, sizeof path, "%s/transcripts/%s/response.txt", fixdir(), name);
    char *rsp = slurp(path);
    assert_non_null(req);
    assert_non_null(rsp);
    char method[16], target[2048];
    assert_int_equal(sscanf(req, "%15s %2047s", method, target), 2);
    char *hend = strstr(req, "\r\n\r\n");
    assert_non_null(hend);
    *hend = 0;
    char ctype[256], accept[512];
    header(req, "Content-Type", ctype, sizeof ctype);
    header(req, "Accept", accept, sizeof accept);
    adapt_target(name, target, sizeof target);
    char *newbody = fresh_body(name, method, target, hend + 4);
    int want_code = 0;
    sscanf(rsp, "HTTP/1.1 %d", &want_code);
    char *rhend = strstr(rsp, "\r\n\r\n");
    assert_non_null(rhend);
    *rhend = 0;
    char want_ct[256];
    header(rsp, "Content-Type", want_ct, sizeof want_ct);
    got_answer a = {0};
    send_request(method, target, ctype, accept, newbody ? newbody : hend + 4, &a);
    int fails = 0;
    if (a.cc != CURLE_OK) {
        print_error("%s: transfer failed: %s\n", name, curl_easy_strerror(a.cc));
        fails++;
    }
    if (a.code != want_code) {
        print_error("%s: status %ld, recorded %d; body %.300s\n", name, a.code, want_code,
                    a.body.p ? a.body.p : "");
        fails++;
    }
    if (!a.ct[0] || strncmp(a.ct, want_ct, strcspn(want_ct, ";"))) {
        print_error("%s: content type %s, recorded %s\n", name, a.ct[0] ? a.ct : "(none)", want_ct);
        fails++;
    }
    fails += compare_body(name, rhend + 4, a.body.p);
    drv_free(a.body.p);
    free(newbody);
    drv_free(req);
    drv_free(rsp);
    return fails;
}

static void seed_pod(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/transcripts/12-create-already-exists-409/request.txt",
             fixdir());
    char *req = slurp(path);
    assert_non_null(req);
    json_t *pod = json_loads(strstr(req, "\r\n\r\n") + 4, 0, NULL);
    assert_non_null(pod);
    json_object_set_new(json_object_get(pod, "metadata"), "name", json_string(name));
    char *body = json_dumps(pod, JSON_COMPACT);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/api/v1/namespaces/default/pods", port);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    drv_kbuf got = {0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drv_kbuf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &got);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    assert_int_equal(code, 201);
    drv_free(got.p);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(body);
    json_decref(pod);
    drv_free(req);
}

static void test_replay_all(void **state)
{
    (void)state;
    drv_apiserver_opts o = {.fixture_dir = fixdir(), .window = 1000, .bookmark_ms = 300};
    drv_diag d = {{0}};
    assert_int_equal(drv_apiserver_start(&srv, &o, &d), 0);
    port = drv_apiserver_port(srv);
    /* State the recording made with requests that were not kept: pods tj1-worker-1 (the body
     * of 12-create-already-exists-409, which re-posts it) and tj1-ps-0. */
    seed_pod("tj1-worker-1");
    seed_pod("tj1-ps-0");
    int fails = 0;
    for (size_t i = 0; i < sizeof ORDER / sizeof *ORDER; i++)
        fails += replay(ORDER[i]);
    drv_apiserver_free(srv);
    srv = NULL;
    assert_int_equal(fails, 0);
}

/* Every recorded exchange is either replayed or skipped with a reason. */
static void test_every_recording_is_covered(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/transcripts/INDEX.md", fixdir());
    char *idx = slurp(path);
    assert_non_null(idx);
    int missing = 0;
    for (char *p = strstr(idx, "| `"); p; p = strstr(p + 1, "| `")) {
        char name[128];
        if (sscanf(p, "| `%127[^/`]", name) != 1 || !strncmp(name, "kubectl", 7) ||
            strchr(name, ' '))
            continue;
        bool found = false;
        for (size_t i = 0; i < sizeof ORDER / sizeof *ORDER; i++)
            found |= !strcmp(ORDER[i], name);
        for (size_t i = 0; i < sizeof SKIP / sizeof *SKIP; i++)
            found |= !strcmp(SKIP[i], name);
        if (!found) {
            print_error("recording %s is neither replayed nor skipped\n", name);
            missing++;
        }
    }
    drv_free(idx);
    assert_int_equal(missing, 0);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_recording_is_covered),
        cmocka_unit_test(test_replay_all),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
