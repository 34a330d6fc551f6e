/*
 * Typed decoding. A golden test walks every recorded exchange in tests/fixtures/k8s/transcripts
 * (the directory itself, so a new recording is covered without touching this file) and decodes
 * each response: Pods and Nodes (alone, in lists and in watch events) with the typed decoders;
 * Status bodies must carry the HTTP status the recording shows (the error it implies);
 * discovery documents and Tables are recognised and skipped; other kinds are counted as not
 * typed yet. Then the decoders on hand-made objects: fields, the init-container rule, each
 * malformed field named in the error; the quantity parser on a table of good and bad input.
 */
#include "drover/file.h"
#include "drover/kube_types.h"
#include "drover/kube_watch.h"
#include "json.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct tally {
    int files, pods, nodes, tjs, leases, events_k8s, statuses, events, skipped, untyped, empty,
        plain;
} tally;

static char *slurp(const char *path, size_t *n)
{
    char *text = NULL;
    return drv_file_read(path, &text, n, NULL) == 0 ? text : NULL;
}

/* Decodes one object by its kind (or the list's item kind). */
static void decode_one(const char *where, json_t *o, const char *kind, long http, tally *t)
{
    drv_strtab *names = drv_strtab_new();
    drv_diag d;
    if (!strcmp(kind, "Pod")) {
        drv_kpod p;
        if (drv_kube_decode_pod(o, names, &p, &d))
            fail_msg("%s: %s", where, d.msg);
        assert_true(p.name > 0);
        t->pods++;
    } else if (!strcmp(kind, "Node")) {
        drv_knode n;
        if (drv_kube_decode_node(o, names, &n, &d))
            fail_msg("%s: %s", where, d.msg);
        assert_true(n.name > 0);
        t->nodes++;
    } else if (!strcmp(kind, "TrainingJob")) {
        drv_ktrainingjob j;
        if (drv_kube_decode_trainingjob(o, names, &j, &d))
            fail_msg("%s: %s", where, d.msg);
        assert_true(j.role[DRV_ROLE_WORKER].replicas + j.role[DRV_ROLE_PS].replicas > 0);
        t->tjs++;
    } else if (!strcmp(kind, "Lease")) {
        drv_klease l;
        if (drv_kube_decode_lease(o, &l, &d))
            fail_msg("%s: %s", where, d.msg);
        t->leases++;
    } else if (!strcmp(kind, "Event")) {
        drv_kevent e;
        if (drv_kube_decode_event(o, &e, &d))
            fail_msg("%s: %s", where, d.msg);
        assert_true(e.reason[0] != 0);
        t->events_k8s++;
    } else if (!strcmp(kind, "Status")) {
        long code;
        const char *reason;
        if (drv_kube_decode_status(o, &code, &reason, &d))
            fail_msg("%s: %s", where, d.msg);
        if (http && code != http && !(code == 0 && http >= 200 && http < 300))
            fail_msg("%s: Status code %ld, HTTP status %ld", where, code, http);
        t->statuses++;
    } else if (!strcmp(kind, "Table") || !strncmp(kind, "API", 3) || !*kind) {
        t->skipped++; /* discovery and kubectl's Tables: not scheduling data */
    } else {
        /* TrainingJob, Lease, Event, CRD, ConfigMap, Binding...: no typed record yet, but
         * every one is an object with a name or a list */
        json_t *m = json_object_get(o, "metadata");
        if (!json_is_object(m))
            fail_msg("%s: %s without metadata", where, kind);
        t->untyped++;
    }
    drv_strtab_free(names);
}

static void decode_body(const char *where, json_t *o, long http, tally *t)
{
    const char *kind = json_string_value(json_object_get(o, "kind"));
    if (!kind)
        kind = "";
    size_t kl = strlen(kind);
    if (kl > 4 && !strcmp(kind + kl - 4, "List") && json_is_array(json_object_get(o, "items"))) {
        char item[64];
        snprintf(item, sizeof item, "%.*s", (int)(kl - 4), kind);
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(o, "items"), i, it) decode_one(where, it, item, 0, t);
        return;
    }
    decode_one(where, o, kind, http, t);
}

typedef struct wctx {
    const char *where;
    tally *t;
} wctx;

static int on_event(const drv_watch_event *ev, void *arg)
{
    wctx *w = arg;
    w->t->events++;
    const char *kind = json_string_value(json_object_get(ev->object, "kind"));
    if (ev->type == DRV_WATCH_BOOKMARK)
        return 0;
    decode_one(w->where, ev->object, kind ? kind : "", 0, w->t);
    return 0;
}

static void test_golden_transcripts(void **unused)
{
    (void)unused;
    const char *root = FIXTURE_DIR "/transcripts";
    DIR *dir = opendir(root);
    assert_non_null(dir);
    tally t = {0};
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.' || !strcmp(de->d_name, "INDEX.md"))
            continue;
        char path[1024];
        size_t n;
        snprintf(path, sizeof path, "%s/%s/request.txt", root, de->d_name);
        char *req = slurp(path, &n);
        snprintf(path, sizeof path, "%s/%s/response.txt", root, de->d_name);
        char *resp = slurp(path, &n);
        if (!req || !resp)
            fail_msg("%s: request.txt or response.txt missing", de->d_name);
        t.files++;
        long http = strtol(resp + strcspn(resp, " "), NULL, 10);
        /* The body follows the first empty line (CRLF or LF line ends). */
        char *body = strstr(resp, "\r\n\r\n");
        if (body)
            body += 4;
        else if ((body = strstr(resp, "\n\n")) != NULL)
            body += 2;
        bool watch = strstr(req, "watch=") != NULL;
        bool chunked_raw = strstr(de->d_name, "raw-chunked") != NULL;
        bool json_ct = strstr(resp, "Content-Type: application/json") != NULL ||
                       strstr(resp, "Content-Type: application/vnd.kubernetes") != NULL;
        if (!body || !*body) {
            t.empty++;
        } else if (!json_ct) {
            /* e.g. a 404 for an unknown resource: text/plain "404 page not found"; the client
             * reports the status alone (kube.h), so only the status matters */
            if (http >= 200 && http < 300)
                fail_msg("%s: a 2xx answer that is not JSON", de->d_name);
            t.plain++;
        } else if (chunked_raw) {
            t.skipped++; /* the same stream as 05-watch-pods-bookmarks with chunk framing */
        } else if (watch && http == 200) {
            drv_watch_decoder dec;
            drv_watch_decoder_init(&dec, de->d_name);
            wctx w = {de->d_name, &t};
            drv_diag d;
            if (drv_watch_decoder_feed(&dec, body, strlen(body), on_event, &w, &d))
                fail_msg("%s: %s", de->d_name, d.msg);
            drv_watch_decoder_fini(&dec);
        } else {
            json_error_t je;
            json_t *o = json_loads(body, 0, &je);
            if (!o)
                fail_msg("%s: body is not JSON: %s", de->d_name, je.text);
            const char *k = json_string_value(json_object_get(o, "kind"));
            if ((http < 200 || http >= 300) && (!k || strcmp(k, "Status") != 0))
                fail_msg("%s: HTTP %ld without a Status body", de->d_name, http);
            decode_body(de->d_name, o, http, &t);
            json_decref(o);
        }
        drv_free(req);
        drv_free(resp);
    }
    closedir(dir);
    print_message(
        "transcripts: %d files; %d pods, %d nodes, %d trainingjobs, %d leases, %d "
        "events, %d Status, %d watch events, %d skipped (discovery, tables), %d untyped, %d "
        "empty, %d plain-text errors\n",
        t.files, t.pods, t.nodes, t.tjs, t.leases, t.events_k8s, t.statuses, t.events, t.skipped,
        t.untyped, t.empty, t.plain);
    assert_true(t.tjs >= 5);
    assert_true(t.leases >= 3);
    assert_true(t.events_k8s >= 1);
    assert_true(t.files >= 80);
    assert_true(t.pods >= 20);
    assert_true(t.nodes >= 3);
    assert_true(t.statuses >= 15);
}

static json_t *pod_json(const char *cpu0, const char *init_cpu, const char *role)
{
    json_t *p =
        json_pack("{s:{s:s, s:s, s:s, s:{s:s, s:s, s:s}}, s:{s:s, s:s, s:[{s:s, s:{s:{s:s, s:s}}}, "
                  "{s:s, s:{s:{s:s, s:s}}}], s:[{s:s, s:{s:{s:s}}}]}, s:{s:s}}",
                  "metadata", "name", "w0", "namespace", "ml", "resourceVersion", "77", "labels",
                  "drover.dev/job", "tj1", "drover.dev/role", role, "drover.dev/rank", "3", "spec",
                  "nodeName", "n1", "schedulerName", "drover", "containers", "name", "a",
                  "resources", "requests", "cpu", cpu0, "memory", "1Gi", "name", "b", "resources",
                  "requests", "cpu", "250m", "nvidia.com/gpu", "1", "initContainers", "name", "i",
                  "resources", "requests", "cpu", init_cpu, "status", "phase", "Running");
    assert_non_null(p);
    return p;
}

static void test_pod_decode(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    drv_kpod p;
    drv_diag d;
    json_t *o = pod_json("1500m", "1", "worker");
    assert_int_equal(drv_kube_decode_pod(o, names, &p, &d), 0);
    assert_string_equal(drv_strtab_str(names, p.name), "w0");
    assert_string_equal(drv_strtab_str(names, p.ns), "ml");
    assert_string_equal(drv_strtab_str(names, p.node), "n1");
    assert_string_equal(drv_strtab_str(names, p.job), "tj1");
    assert_int_equal(p.group, 0); /* no pod-group label */
    assert_int_equal(p.role, DRV_ROLE_WORKER);
    assert_int_equal(p.replica, 3);
    assert_int_equal(p.phase, DRV_KPOD_RUNNING);
    assert_string_equal(p.rv, "77");
    assert_int_equal(p.exit_code, -1); /* none terminated */
    assert_int_equal(p.req.cpu, 1750); /* containers add up */
    assert_int_equal(p.req.mem, 1073741824);
    assert_int_equal(p.req.gpu, 1);
    /* another operator's gang member names its PodGroup */
    json_object_set_new(json_object_get(json_object_get(o, "metadata"), "labels"),
                        "scheduling.x-k8s.io/pod-group", json_string("tfjob-a"));
    assert_int_equal(drv_kube_decode_pod(o, names, &p, &d), 0);
    assert_string_equal(drv_strtab_str(names, p.group), "tfjob-a");
    assert_int_equal(p.topo_mode, DRV_TOPO_NONE);
    /* ... and Kueue's topology annotation when it is not Drover's own (drover.dev/job) */
    json_t *meta = json_object_get(o, "metadata");
    json_object_del(json_object_get(meta, "labels"), "drover.dev/job");
    json_t *ann = json_object();
    json_object_set_new(meta, "annotations", ann);
    json_object_set_new(ann, "kueue.x-k8s.io/podset-required-topology", json_string("rack"));
    assert_int_equal(drv_kube_decode_pod(o, names, &p, &d), 0);
    assert_int_equal(p.topo_mode, DRV_TOPO_REQUIRED);
    assert_string_equal(drv_strtab_str(names, p.topo_key), "rack");
    /* a bad one does not lose the pod: its record says why */
    json_object_set_new(ann, "kueue.x-k8s.io/podset-preferred-topology", json_string("zone"));
    assert_int_equal(drv_kube_decode_pod(o, names, &p, &d), 0);
    assert_int_equal(p.topo_mode, DRV_KPOD_TOPO_BAD);
    assert_string_equal(drv_strtab_str(names, p.topo_key),
                        "pod ml/w0: metadata.annotations: kueue.x-k8s.io/podset-required-topology "
                        "and kueue.x-k8s.io/podset-preferred-topology: expected one topology "
                        "annotation");
    json_decref(o);
    /* an init container asking more than the containers together sets the request */
    o = pod_json("1500m", "4", "ps");
    assert_int_equal(drv_kube_decode_pod(o, names, &p, &d), 0);
    assert_int_equal(p.req.cpu, 4000);
    assert_int_equal(p.role, DRV_ROLE_PS);
    json_decref(o);
    /* malformed fields are named with the object and the bad text */
    o = pod_json("2x", "1", "worker");
    assert_int_equal(drv_kube_decode_pod(o, names, &p, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "pod ml/w0: spec.containers[0].resources.requests.cpu: "
                                  "expected a CPU quantity such as 500m or 2, found '2x'"));
    json_decref(o);
    o = pod_json("1", "1", "boss");
    assert_int_equal(drv_kube_decode_pod(o, names, &p, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "drover.dev/role: expected ps, chief, worker or evaluator, "
                                  "found 'boss'"));
    json_decref(o);
    o = json_pack("{s:{s:s}}", "metadata", "name", "x");
    assert_int_equal(drv_kube_decode_pod(o, names, &p, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "pod x: spec: expected a map"));
    json_decref(o);
    drv_strtab_free(names);
}

static void test_node_decode_and_binding(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    drv_knode n;
    drv_diag d;
    json_t *o =
        json_pack("{s:{s:s, s:{s:s, s:s}}, s:{s:b, s:[{s:s, s:s}]}, s:{s:{s:s, s:s, "
                  "s:s}, s:[{s:s, s:s}]}}",
                  "metadata", "name", "n1", "labels", "topology.kubernetes.io/zone", "z1",
                  "drover.dev/rack", "r7", "spec", "unschedulable", 0, "taints", "key", "k",
                  "effect", "NoSchedule", "status", "allocatable", "cpu", "63500m", "memory",
                  "503Gi", "nvidia.com/gpu", "8", "conditions", "type", "Ready", "status", "True");
    assert_int_equal(drv_kube_decode_node(o, names, &n, &d), 0);
    assert_string_equal(drv_strtab_str(names, n.zone), "z1");
    assert_string_equal(drv_strtab_str(names, n.rack), "r7");
    assert_int_equal(n.alloc.cpu, 63500);
    assert_int_equal(n.alloc.mem, 503LL * 1073741824);
    assert_int_equal(n.alloc.gpu, 8);
    assert_true(n.ready);
    assert_true(n.noschedule);
    assert_false(n.unschedulable);
    json_decref(o);
    char *b = drv_kube_binding_json("ml", "w0", "n1");
    assert_non_null(b);
    assert_string_equal(b, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":"
                           "\"w0\",\"namespace\":\"ml\"},\"target\":{\"apiVersion\":\"v1\","
                           "\"kind\":\"Node\",\"name\":\"n1\"}}");
    drv_free(b);
    drv_strtab_free(names);
}

static void test_quantities(void **unused)
{
    (void)unused;
    static const struct {
        const char *s;
        int64_t milli, units;
        int rc;
    } cases[] = {
        {"2", 2000, 2, 0},         {"500m", 500, 1, 0},       {"1.5", 1500, 2, 0},
        {"0.1", 100, 1, 0},        {"1e3", 1000000, 1000, 0}, {"128Gi", 0, 137438953472, 0},
        {"500M", 0, 500000000, 0}, {"1Ki", 0, 1024, 0},       {"2E", 0, 2000000000000000000, 0},
        {"", 0, 0, DRV_EINVAL},    {"-1", 0, 0, DRV_EINVAL},  {" 1", 0, 0, DRV_EINVAL},
        {"1 ", 0, 0, DRV_EINVAL},  {"1x", 0, 0, DRV_EINVAL},  {"0x10", 0, 0, DRV_EINVAL},
        {"1e", 0, 0, DRV_EINVAL},  {"inf", 0, 0, DRV_EINVAL}, {"1.2.3", 0, 0, DRV_EINVAL},
        {"9Ei", 0, 0, DRV_ERANGE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = -7;
        int rc = drv_kube_quantity(cases[i].s, &v);
        if (rc != cases[i].rc || (rc == 0 && v != cases[i].units))
            fail_msg("quantity('%s') = %d, %lld; want %d, %lld", cases[i].s, rc, (long long)v,
                     cases[i].rc, (long long)cases[i].units);
        if (cases[i].milli) {
            assert_int_equal(drv_kube_quantity_milli(cases[i].s, &v), 0);
            assert_int_equal(v, cases[i].milli);
        }
    }
}

/* Item i, x parsed whole and y parsed without what the informers skip, decoded as a pod or a
 * node into records interning in a and b: the same result, record and message. */
static void same_record(const char *where, bool pod, size_t i, json_t *x, json_t *y, drv_strtab *a,
                        drv_strtab *b)
{
    union {
        drv_kpod pod;
        drv_knode node;
    } r1, r2;
    memset(&r1, 0, sizeof r1);
    memset(&r2, 0, sizeof r2);
    drv_diag d1 = {{0}}, d2 = {{0}};
    int c1 =
        pod ? drv_kube_decode_pod(x, a, &r1.pod, &d1) : drv_kube_decode_node(x, a, &r1.node, &d1);
    int c2 =
        pod ? drv_kube_decode_pod(y, b, &r2.pod, &d2) : drv_kube_decode_node(y, b, &r2.node, &d2);
    assert_int_equal(c1, c2);
    if (memcmp(&r1, &r2, pod ? sizeof r1.pod : sizeof r1.node) != 0)
        fail_msg("%s: %s %zu decoded differently when skipping", where, pod ? "pod" : "node", i);
    assert_string_equal(d1.msg, d2.msg);
}

/* One recorded Pod or Node (or each item of a list of them) decoded from its text parsed whole
 * and parsed without what the informers skip: the same record (every field compared). */
static int same_records(const char *where, const char *text, size_t n, const char *root)
{
    json_t *full = drv_json_loadb(text, n, NULL);
    if (!full)
        return 0;
    json_t *top = root ? json_object_get(full, root) : full;
    const char *kind = json_string_value(json_object_get(top, "kind"));
    bool pods = kind && (!strcmp(kind, "Pod") || !strcmp(kind, "PodList"));
    bool nodes = kind && (!strcmp(kind, "Node") || !strcmp(kind, "NodeList"));
    int compared = 0;
    if (pods || nodes) {
        const char *const *unread = pods ? drv_kube_unread_pod : drv_kube_unread_node;
        json_t *part = drv_json_loadb_skip(text, n, unread, root, NULL);
        assert_non_null(part);
        json_t *ptop = root ? json_object_get(part, root) : part;
        json_t *items = json_object_get(top, "items"), *pitems = json_object_get(ptop, "items");
        if (items) { /* (a list: its items are skipped from, as the list decoder does) */
            json_decref(part);
            part = json_array();
            size_t i;
            json_t *it;
            json_array_foreach(items, i, it)
            {
                char *t = json_dumps(it, JSON_COMPACT);
                json_array_append_new(part, drv_json_loadb_skip(t, strlen(t), unread, NULL, NULL));
                free(t);
            }
            pitems = part;
        }
        size_t count = items ? json_array_size(items) : 1;
        assert_int_equal(items ? json_array_size(pitems) : 1, count);
        drv_strtab *a = drv_strtab_new(), *b = drv_strtab_new();
        for (size_t i = 0; i < count; i++) {
            json_t *x = items ? json_array_get(items, i) : top;
            json_t *y = items ? json_array_get(pitems, i) : ptop;
            same_record(where, pods, i, x, y, a, b);
            compared++;
        }
        /* the interned texts too (the records hold their ids) */
        assert_int_equal(drv_strtab_count(a), drv_strtab_count(b));
        for (int32_t id = 1; id < drv_strtab_count(a); id++)
            assert_string_equal(drv_strtab_str(a, id), drv_strtab_str(b, id));
        drv_strtab_free(a);
        drv_strtab_free(b);
        json_decref(part);
    }
    json_decref(full);
    return compared;
}

/* Issue 17: the informers do not build what the decoders never read (drv_kube_unread_pod,
 * _node): over every recorded Pod and Node, alone, in lists and in watch events, and the
 * recorded ones with the skipped members made large (conditions, images), the decoded records
 * are identical with and without skipping. */
static void test_records_same_when_skipping(void **unused)
{
    (void)unused;
    const char *root = FIXTURE_DIR "/transcripts";
    DIR *dir = opendir(root);
    assert_non_null(dir);
    int compared = 0;
    for (struct dirent *de; (de = readdir(dir));) {
        char path[1024];
        size_t n;
        snprintf(path, sizeof path, "%s/%s/response.txt", root, de->d_name);
        char *resp = de->d_name[0] != '.' ? slurp(path, &n) : NULL;
        char *body = resp ? strstr(resp, "\r\n\r\n") : NULL;
        body = body ? body + 4 : resp && strstr(resp, "\n\n") ? strstr(resp, "\n\n") + 2 : NULL;
        if (body && strstr(de->d_name, "watch") && !strstr(de->d_name, "raw")) {
            for (char *line = body; *line;) { /* (one event a line) */
                size_t len = strcspn(line, "\n");
                compared += same_records(de->d_name, line, len, "object");
                line += len + (line[len] != 0);
            }
        } else if (body) {
            compared += same_records(de->d_name, body, strlen(body), NULL);
        }
        drv_free(resp);
    }
    closedir(dir);
    static const char *const grown[] = {
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"managedFields\":"
        "[{\"manager\":\"k\",\"fieldsV1\":{\"f:spec\":{\"k:{\\\"name\\\":\\\"c\\\"}\":{}}}}]},"
        "\"spec\":{\"nodeName\":\"a\",\"volumes\":[{\"name\":\"v\",\"secret\":{}}],\"containers\":"
        "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":"
        "\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],\"podIP\":"
        "\"10.0.0.1\"}}",
        "{\"kind\":\"Node\",\"metadata\":{\"name\":\"a\",\"managedFields\":[1,2.5,null,true]},"
        "\"status\":{\"allocatable\":{\"cpu\":\"4\"},\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"True\"}],\"images\":[{\"names\":[\"x\"],\"sizeBytes\":123}],\"nodeInfo\":"
        "{\"kubeletVersion\":\"v1\"}}}"};
    for (int i = 0; i < 2; i++)
        compared += same_records("grown", grown[i], strlen(grown[i]), NULL);
    assert_true(compared >= 20); /* (the recordings hold dozens) */
    print_message("%d records compared\n", compared);
}

/* The recorded TrainingJob, with a field Drover does not know added: decoding reads the
 * roles; writing the status back keeps everything else. */
static json_t *recorded(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/transcripts/%s/response.txt", FIXTURE_DIR, name);
    size_t n;
    char *r = slurp(path, &n);
    assert_non_null(r);
    char *body = strstr(r, "\r\n\r\n");
    body = body ? body + 4 : strstr(r, "\n\n") + 2;
    json_t *o = json_loads(body, 0, NULL);
    drv_free(r);
    assert_non_null(o);
    return o;
}

/* A recorded TrainingJob decoded (a field unknown kept), its status set, its errors naming the
 * field; spec.progress. */
static void test_trainingjob_decoded(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    drv_diag d;
    json_t *tj = recorded("08-tj-get");
    json_object_set_new(json_object_get(tj, "spec"), "futureField", json_string("keep me"));
    drv_ktrainingjob j;
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), 0);
    assert_int_equal(j.role[DRV_ROLE_PS].replicas, 1);
    assert_int_equal(j.role[DRV_ROLE_WORKER].replicas, 2);
    assert_int_equal(j.role[DRV_ROLE_WORKER].min, 1);
    assert_int_equal(j.role[DRV_ROLE_WORKER].max, 4);
    assert_int_equal(j.role[DRV_ROLE_WORKER].req.gpu, 1); /* from the limit, as defaulted */
    assert_string_equal(drv_strtab_str(names, j.scheduler), "drover");
    int32_t active[DRV_NROLES] = {1, 0, 2, 0};
    assert_int_equal(drv_kube_trainingjob_set_status(tj, "Running", "gang bound", active, NULL), 0);
    json_t *st = json_object_get(tj, "status");
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Running");
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(st, "replicaStatuses"), "Worker"), "active")),
        2);
    assert_null(json_object_get(json_object_get(st, "replicaStatuses"), "Chief")); /* no role */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(tj, "spec"), "futureField")), "keep me");
    /* the checkpoint handshake's answer: absent -1; a time; not one, refused by name */
    assert_true(j.checkpoint_done == -1);
    json_t *meta = json_object_get(tj, "metadata"), *ann = json_object();
    json_object_set_new(meta, "annotations", ann);
    json_object_set_new(ann, "drover.dev/checkpoint-done", json_string("2026-01-02T03:04:05Z"));
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), 0);
    assert_true(j.checkpoint_done == 1767323045.0); /* (date -u -d 2026-01-02T03:04:05Z +%s) */
    json_object_set_new(ann, "drover.dev/checkpoint-done", json_string("yesterday"));
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "trainingjob default/tj1: metadata.annotations.drover.dev/"
                                  "checkpoint-done: expected an RFC 3339 time"));
    json_object_del(meta, "annotations");
    /* errors name the field */
    json_object_set_new(
        json_object_get(json_object_get(json_object_get(tj, "spec"), "replicaSpecs"), "Worker"),
        "minReplicas", json_integer(3));
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "trainingjob default/tj1: spec.replicaSpecs.Worker: expected "
                                  "minReplicas <= replicas <= maxReplicas, found 3, 2, 4"));
    json_decref(tj);

    /* spec.progress: defaults, values, and errors that name the field */
    tj = recorded("08-tj-get");
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), 0);
    assert_int_equal(j.progress_port, 0);
    assert_string_equal(j.step_metric, "drover_train_step");
    json_t *prog = json_pack("{s:i, s:s, s:s, s:I}", "port", 9100, "path", "/stats", "step",
                             "global_step", "totalSteps", (json_int_t)20000);
    json_object_set_new(json_object_get(tj, "spec"), "progress", prog);
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), 0);
    assert_int_equal(j.progress_port, 9100);
    assert_string_equal(j.progress_path, "/stats");
    assert_string_equal(j.step_metric, "global_step");
    assert_string_equal(j.loss_metric, "drover_train_loss");
    assert_true(j.total_steps == 20000);
    json_object_set_new(prog, "step", json_string("bad metric"));
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "spec.progress.step: expected a Prometheus metric name"));
    json_object_set_new(prog, "step", json_string("global_step"));
    json_object_set_new(prog, "port", json_integer(70000));
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "spec.progress.port: expected an integer in [1, 65535]"));
    json_object_del(prog, "port");
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "spec.progress.port: missing"));
    json_decref(tj);
    drv_strtab_free(names);
}

/* status.podIP, v4 and v6, and a bad one. */
static void test_pod_ip(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    drv_diag d;
    json_t *pod = recorded("03-pod-get");
    drv_kpod p;
    assert_int_equal(drv_kube_decode_pod(pod, names, &p, &d), 0);
    assert_int_equal(p.ip_family, 0);
    json_object_set_new(json_object_get(pod, "status"), "podIP", json_string("10.1.2.3"));
    assert_int_equal(drv_kube_decode_pod(pod, names, &p, &d), 0);
    assert_int_equal(p.ip_family, 4);
    assert_int_equal(p.ip[0], 10);
    assert_int_equal(p.ip[3], 3);
    json_object_set_new(json_object_get(pod, "status"), "podIP", json_string("fd00::7"));
    assert_int_equal(drv_kube_decode_pod(pod, names, &p, &d), 0);
    assert_int_equal(p.ip_family, 6);
    assert_int_equal(p.ip[15], 7);
    json_object_set_new(json_object_get(pod, "status"), "podIP", json_string("10.1.2"));
    assert_int_equal(drv_kube_decode_pod(pod, names, &p, &d), DRV_EPARSE);
    assert_non_null(
        strstr(d.msg, "status.podIP: expected an IPv4 or IPv6 address, found '10.1.2'"));
    json_decref(pod);
    drv_strtab_free(names);
}

/* A Lease renewed and taken over, a PodGroup and its status, an Event and its name. */
static void test_lease_podgroup_event(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    drv_diag d;
    json_t *lease = recorded("09-lease-get");
    drv_klease l;
    assert_int_equal(drv_kube_decode_lease(lease, &l, &d), 0);
    assert_string_equal(l.holder, "drover-0_5f2c");
    assert_int_equal(l.duration_s, 15);
    /* renewing keeps the acquire time; a new holder takes it and counts a transition */
    assert_int_equal(drv_kube_lease_set(lease, "drover-0_5f2c", 15, "2026-11-22T04:11:10.000000Z"),
                     0);
    assert_int_equal(drv_kube_decode_lease(lease, &l, &d), 0);
    assert_string_equal(l.acquire, "2026-11-22T04:11:00.000000Z");
    assert_string_equal(l.renew, "2026-11-22T04:11:10.000000Z");
    assert_int_equal(l.transitions, 0);
    assert_int_equal(drv_kube_lease_set(lease, "drover-1_aa", 15, "2026-11-22T04:12:00.000000Z"),
                     0);
    assert_int_equal(drv_kube_decode_lease(lease, &l, &d), 0);
    assert_string_equal(l.holder, "drover-1_aa");
    assert_string_equal(l.acquire, "2026-11-22T04:12:00.000000Z");
    assert_int_equal(l.transitions, 1);
    json_decref(lease);

    char *pg = drv_kube_podgroup_json("ml", "tj1", 3, (drv_res){2500, 3LL << 30, 2}, 60);
    assert_non_null(pg);
    json_t *po = json_loads(pg, 0, NULL);
    drv_kpodgroup g;
    assert_int_equal(drv_kube_decode_podgroup(po, names, &g, &d), 0);
    assert_int_equal(g.min_member, 3);
    assert_int_equal(g.min_resources.cpu, 2500);
    assert_int_equal(g.min_resources.mem, 3LL << 30);
    assert_int_equal(g.min_resources.gpu, 2);
    assert_int_equal(g.timeout_s, 60);
    assert_int_equal(drv_kube_podgroup_set_status(po, "Running", 2, 1, 0, 3), 0);
    assert_int_equal(drv_kube_decode_podgroup(po, names, &g, &d), 0);
    assert_string_equal(drv_strtab_str(names, g.phase), "Running");
    assert_int_equal(g.running, 2);
    assert_int_equal(g.succeeded, 1);
    assert_int_equal(g.failed, 0);
    assert_int_equal(g.scheduled, 3);
    json_object_del(json_object_get(po, "spec"), "minMember");
    assert_int_equal(drv_kube_decode_podgroup(po, names, &g, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "podgroup ml/tj1: spec.minMember: missing"));
    json_decref(po);
    drv_free(pg);

    char *ev = drv_kube_event_json("default", "TrainingJob", "drover.dev/v1alpha1", "tj1", "u-1",
                                   "Normal", "GangScheduled", "Bound 3/3 pods",
                                   "2026-11-22T04:11:10Z", "drover-scheduler");
    json_t *eo = json_loads(ev, 0, NULL);
    assert_non_null(eo);
    drv_kevent ke;
    assert_int_equal(drv_kube_decode_event(eo, &ke, &d), 0);
    assert_string_equal(ke.message, "Bound 3/3 pods");
    assert_string_equal(ke.kind, "TrainingJob");
    assert_int_equal(ke.count, 1);
    assert_string_equal(json_string_value(json_object_get(eo, "reason")), "GangScheduled");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(eo, "involvedObject"), "name")), "tj1");
    assert_int_equal(
        strncmp(json_string_value(json_object_get(json_object_get(eo, "metadata"), "name")), "tj1.",
                4),
        0);
    json_decref(eo);
    char *ev2 = drv_kube_event_json("default", "TrainingJob", "drover.dev/v1alpha1", "tj1", "u-1",
                                    "Normal", "GangScheduled", "Bound 3/3 pods",
                                    "2026-11-22T04:11:10Z", "drover-scheduler");
    assert_string_not_equal(ev, ev2); /* two events, two names */
    drv_free(ev);
    drv_free(ev2);
    drv_strtab_free(names);
}

/* Issue 13: Master (all-reduce), restartPolicy, runPolicy, and invalid specs naming the field. */
static void test_trainingjob_roles_and_policies(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    drv_diag d;
    /* a failed pod's exit code: the first container that terminated with one but 0 */
    json_t *pod = pod_json("1", "1", "worker");
    json_t *cs = json_pack("[{s:{s:{s:i}}}, {s:{s:{s:i}}}]", "state", "terminated", "exitCode", 0,
                           "state", "terminated", "exitCode", 137);
    json_object_set_new(json_object_get(pod, "status"), "containerStatuses", cs);
    drv_kpod kp;
    assert_int_equal(drv_kube_decode_pod(pod, names, &kp, &d), 0);
    assert_int_equal(kp.exit_code, 137);
    assert_int_equal(kp.restarts, 0); /* no restartCount */
    /* the kubelet's restarts in place: every container's and init container's restartCount */
    json_object_set_new(json_array_get(cs, 0), "restartCount", json_integer(2));
    json_object_set_new(json_array_get(cs, 1), "restartCount", json_integer(3));
    json_object_set_new(json_object_get(pod, "status"), "initContainerStatuses",
                        json_pack("[{s:i}]", "restartCount", 1));
    assert_int_equal(drv_kube_decode_pod(pod, names, &kp, &d), 0);
    assert_int_equal(kp.restarts, 6);
    json_decref(pod);
    json_t *tj = recorded("08-tj-get");
    json_t *spec = json_object_get(tj, "spec");
    json_t *specs = json_object_get(spec, "replicaSpecs");
    drv_ktrainingjob j;
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), 0);
    assert_false(j.allreduce);
    assert_int_equal(j.restart[DRV_ROLE_WORKER], DRV_RESTART_NEVER); /* the default */
    assert_int_equal(j.backoff_limit, -1);
    assert_int_equal(j.ttl_s, -1);
    assert_int_equal(j.active_deadline_s, 0);
    assert_int_equal(j.clean_pods, DRV_CLEAN_RUNNING);
    assert_false(j.suspend);
    assert_false(j.all_workers); /* successPolicy "": worker 0 decides */
    json_object_set_new(spec, "successPolicy", json_string("AllWorkers"));
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), 0);
    assert_true(j.all_workers);
    json_object_set_new(spec, "successPolicy", json_string("Chief"));
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "spec.successPolicy: expected \"\" or AllWorkers"));
    json_object_del(spec, "successPolicy");
    /* a Master makes it all-reduce, kept as the chief */
    json_t *worker = json_object_get(specs, "Worker");
    json_object_set(specs, "Master", worker);
    json_object_del(specs, "PS");
    json_object_set_new(worker, "restartPolicy", json_string("ExitCode"));
    json_object_set_new(spec, "runPolicy",
                        json_pack("{s:i, s:i, s:i, s:s, s:b}", "backoffLimit", 3,
                                  "activeDeadlineSeconds", 600, "ttlSecondsAfterFinished", 0,
                                  "cleanPodPolicy", "All", "suspend", 1));
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), 0);
    assert_true(j.allreduce);
    assert_int_equal(j.role[DRV_ROLE_CHIEF].replicas, 2);
    assert_int_equal(j.restart[DRV_ROLE_CHIEF], DRV_RESTART_EXIT_CODE); /* same object */
    assert_int_equal(j.restart[DRV_ROLE_WORKER], DRV_RESTART_EXIT_CODE);
    assert_int_equal(j.backoff_limit, 3);
    assert_int_equal(j.active_deadline_s, 600);
    assert_int_equal(j.ttl_s, 0);
    assert_int_equal(j.clean_pods, DRV_CLEAN_ALL);
    assert_true(j.suspend);
    drv_restart r;
    assert_int_equal(drv_restart_parse("ExitCode", &r), 0);
    assert_int_equal(r, DRV_RESTART_EXIT_CODE);
    assert_int_equal(drv_restart_parse("exitcode", &r), DRV_EINVAL); /* Kubeflow's exact case */
    drv_clean_pods cp;
    assert_int_equal(drv_clean_pods_parse("All", &cp), 0);
    assert_int_equal(cp, DRV_CLEAN_ALL);
    /* the status names the Master role */
    int32_t active[DRV_NROLES] = {0, 1, 2, 0};
    assert_int_equal(drv_kube_trainingjob_set_status(tj, "Running", "", active, NULL), 0);
    json_t *rs = json_object_get(json_object_get(tj, "status"), "replicaStatuses");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(rs, "Master"), "active")),
                     1);
    /* errors name the field */
    static const struct {
        const char *path, *value, *msg;
    } bad[] = {
        {"runPolicy.cleanPodPolicy", "Some", "spec.runPolicy.cleanPodPolicy: expected Running"},
        {"restartPolicy", "Sometimes", "spec.replicaSpecs.Worker.restartPolicy: expected Never"},
    };
    for (int i = 0; i < 2; i++) {
        json_t *at = i == 0 ? json_object_get(spec, "runPolicy") : worker;
        const char *key = strchr(bad[i].path, '.') ? strchr(bad[i].path, '.') + 1 : bad[i].path;
        json_t *old = json_deep_copy(json_object_get(at, key));
        json_object_set_new(at, key, json_string(bad[i].value));
        assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), DRV_EPARSE);
        assert_non_null(strstr(d.msg, bad[i].msg));
        json_object_set_new(at, key, old);
    }
    json_object_set(specs, "Chief", worker);
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "spec.replicaSpecs: expected Chief (TensorFlow) or Master"));
    json_object_del(specs, "Chief");
    json_object_del(specs, "Master");
    json_object_set_new(worker, "replicas", json_integer(0));
    json_object_set_new(worker, "minReplicas", json_integer(0));
    json_object_set_new(worker, "maxReplicas", json_integer(0));
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "spec.replicaSpecs.Worker: expected at least one worker"));
    json_object_set_new(worker, "maxReplicas", json_integer(2));
    json_object_set_new(worker, "replicas", json_integer(1));
    json_object_set_new(worker, "template", json_object());
    assert_int_equal(drv_kube_decode_trainingjob(tj, names, &j, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "spec.replicaSpecs.Worker.template.spec.containers: expected "
                                  "a pod template with at least one container"));
    json_decref(tj);
    drv_strtab_free(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_transcripts),
        cmocka_unit_test(test_records_same_when_skipping),
        cmocka_unit_test(test_pod_decode),
        cmocka_unit_test(test_node_decode_and_binding),
        cmocka_unit_test(test_quantities),
        cmocka_unit_test(test_trainingjob_decoded),
        cmocka_unit_test(test_pod_ip),
        cmocka_unit_test(test_lease_podgroup_event),
        cmocka_unit_test(test_trainingjob_roles_and_policies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
