/*
 * The informer under faults: while it runs on its own thread against the in-memory API server,
 * the test creates, updates and deletes pods at random and, between them, drops the watch
 * connections, expires every resourceVersion (410 on the next watch), sends malformed and
 * unknown events down the watch, and makes lists and requests fail with 500 and 429. At the end the
 * informer's cache must equal the server's store, object for object and resourceVersion for
 * resourceVersion, and its handlers' counts must agree with its size. The event window is short
 * (15), so operations made while the informer reconnects can leave it (then only a relist shows
 * deletions). The faults must have happened (relists and reconnects counted), or the test proves
 * nothing. Twice: objects as jansson values, then as documents (ops.decode_doc).
 */
#include "apiserver.h"
#include "drover/kube_informer.h"
#include "drover/kube_types.h"
#include "json.h"
#include "wait.h"

#include <stdatomic.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

typedef struct counts {
    long add, update, del, live_records;
    long json_decodes, doc_decodes; /* records made by decode, by decode_doc */
    bool holding;                   /* inside a run of watch events (ops.hold) */
    long holds, bad_holds;          /* runs held; hold calls out of turn (nested, unopened) */
    long held_changes;              /* handler calls inside a run */
} counts;

/* A run of watch events opens or closes: calls must alternate, beginning with an open. */
static void hold(bool on, void *arg)
{
    counts *c = arg;
    c->bad_holds += on == c->holding;
    c->holds += on;
    c->holding = on;
}

/* The cached record: the pod's node name (compact), or "" when unbound. */
static void *decode(json_t *obj, void *arg, drv_diag *d)
{
    counts *c = arg;
    const char *n = json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
    char *r = drv_strdup(n ? n : "");
    if (!r)
        drv_fail(d, DRV_ENOMEM, "out of memory");
    else
        c->live_records++, c->json_decodes++;
    return r;
}

/* decode from a document (lists and watch events come as documents then). */
static void *decode_doc(const drv_jdoc *doc, int32_t obj, void *arg, drv_diag *d)
{
    counts *c = arg;
    const char *n =
        drv_jdoc_str(doc, drv_jdoc_get(doc, drv_jdoc_get(doc, obj, "spec"), "nodeName"));
    char *r = drv_strdup(n ? n : "");
    if (!r)
        drv_fail(d, DRV_ENOMEM, "out of memory");
    else
        c->live_records++, c->doc_decodes++;
    return r;
}

static void release(void *rec, void *arg)
{
    counts *c = arg;
    c->live_records--;
    drv_free(rec);
}

static void on_add(const char *key, void *rec, void *arg)
{
    (void)key, (void)rec;
    ((counts *)arg)->add++;
    ((counts *)arg)->held_changes += ((counts *)arg)->holding;
}

static void on_update(const char *key, void *old, void *rec, void *arg)
{
    (void)key, (void)old, (void)rec;
    ((counts *)arg)->update++;
    ((counts *)arg)->held_changes += ((counts *)arg)->holding;
}

static void on_delete(const char *key, void *rec, void *arg)
{
    (void)key, (void)rec;
    ((counts *)arg)->del++;
    ((counts *)arg)->held_changes += ((counts *)arg)->holding;
}

typedef struct runner {
    drv_informer *inf;
    atomic_int stop;
    int rc;
    drv_diag d;
} runner;

static void *run(void *arg)
{
    runner *r = arg;
    r->rc = drv_informer_run(r->inf, &r->stop, &r->d);
    return NULL;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* 400 random creations, label patches and deletions of 40 pods through writer, with a fault
 * every 25 (watches dropped, the window expired, 500s, a corrupt event, a 429), each given time
 * to reach the informer but for the drops, which the next operations outrun. */
static void churn(drv_apiserver *srv, drv_kube *writer)
{
    drv_diag d;
    drv_rng rng;
    drv_rng_seed(&rng, 42);
    bool exists[40] = {false};
    int faults = 0;
    for (int op = 0; op < 400; op++) {
        int i = (int)drv_rng_range(&rng, 0, 39);
        char path[128], body[512];
        long st;
        if (!exists[i]) {
            snprintf(body, sizeof body,
                     "{\"metadata\":{\"name\":\"p%d\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                     "\"image\":\"busybox\"}]}}",
                     i);
            if (drv_kube_request(writer, "POST", "/api/v1/namespaces/default/pods", NULL, body, &st,
                                 NULL, &d) == 0)
                exists[i] = true;
        } else if (drv_rng_uniform(&rng) < 0.6) {
            snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/p%d", i);
            snprintf(body, sizeof body, "{\"metadata\":{\"labels\":{\"op\":\"%d\"}}}", op);
            drv_kube_request(writer, "PATCH", path, "application/merge-patch+json", body, &st, NULL,
                             &d);
        } else {
            snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/p%d", i);
            if (drv_kube_request(writer, "DELETE", path, NULL, "{\"gracePeriodSeconds\":0}", &st,
                                 NULL, &d) == 0)
                exists[i] = false;
        }
        if (op % 25 == 12) { /* a fault, and time for the informer to meet it */
            switch (faults++ % 5) {
            case 0: /* no pause: the next operations outrun the reconnect and the window */
                drv_apiserver_drop_watches(srv);
                continue;
            case 1:
                drv_apiserver_expire(srv);
                break;
            case 2:
                drv_apiserver_fail_next(srv, 500, 2, 0);
                break;
            case 3: /* malformed: the informer must give up the stream and list again */
                drv_apiserver_corrupt_watches(srv, op % 2 ? "{\"type\":\"ADDED\",\"object\":"
                                                          : "{\"type\":\"GLITCH\",\"object\":{}}");
                break;
            default:
                drv_apiserver_fail_next(srv, 429, 1, 0);
                break;
            }
            sleep_ms(150);
        }
    }
}

/* The server's store and the informer's cache, dumped. */
typedef struct dumps {
    drv_apiserver *srv;
    drv_informer *inf;
    char *want, *got; /* the last dumps (drv_free) */
} dumps;

static bool cache_is_store(void *arg)
{
    dumps *x = arg;
    drv_free(x->want);
    drv_free(x->got);
    x->want = drv_apiserver_dump(x->srv, "pods");
    x->got = drv_informer_dump(x->inf);
    return x->want && x->got && !strcmp(x->want, x->got);
}

/* docs: the informer decodes documents (ops.decode_doc), its lists and watches read so. */
static void converge_under_faults(bool docs)
{
    drv_apiserver *srv;
    drv_diag d;
    drv_apiserver_opts o = {.fixture_dir = FIXTURE_DIR, .window = 15, .bookmark_ms = 100};
    assert_int_equal(drv_apiserver_start(&srv, &o, &d), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(srv));
    drv_kube_config cfg = {.server = url,
                           .qps = 10000,
                           .burst = 10000,
                           .backoff_ms = 5,
                           .backoff_max_ms = 20,
                           .retry_after_max_s = 1};
    drv_kube *writer, *reader;
    assert_int_equal(drv_kube_new(&writer, &cfg, &d), 0);
    assert_int_equal(drv_kube_new(&reader, &cfg, &d), 0);
    counts c = {0};
    drv_informer_ops ops = {.decode = decode,
                            .release = release,
                            .on_add = on_add,
                            .on_update = on_update,
                            .on_delete = on_delete,
                            .decode_doc = docs ? decode_doc : NULL,
                            .hold = hold};
    runner r = {0};
    assert_int_equal(drv_informer_new(&r.inf, reader, "/api/v1/pods", 3, 2, &ops, &c, &d), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run, &r), 0);

    churn(srv, writer);
    /* Converged: the cache reflects the server's current resourceVersion and equals its store
     * (a bookmark or the next event brings the informer up to date). */
    dumps x = {.srv = srv, .inf = r.inf};
    wait_until(cache_is_store, &x);
    char *want = x.want, *got = x.got;
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(want);
    assert_non_null(got);
    if (strcmp(want, got) != 0)
        fail_msg("cache differs from the server:\n--- server\n%s--- informer\n%s", want, got);
    drv_informer_stats s = drv_informer_get_stats(r.inf);
    /* the faults reached the informer */
    assert_true(s.relists >= 1);
    assert_true(s.reconnects >= 1);
    assert_true(s.lists >= 2);
    /* handlers agree with the cache */
    assert_int_equal(c.add - c.del, (long)drv_informer_len(r.inf));
    assert_int_equal(c.live_records, (long)drv_informer_len(r.inf));
    assert_true(c.update > 0);
    /* runs of watch events were opened and closed in turn, each closed (also when a fault
     * ended the stream inside one) */
    assert_true(c.holds > 0 && c.held_changes > 0);
    assert_int_equal(c.bad_holds, 0);
    assert_false(c.holding);
    /* every record came the way asked: with decode_doc, no event went through jansson */
    assert_true(docs ? c.json_decodes == 0 && c.doc_decodes > 0
                     : c.doc_decodes == 0 && c.json_decodes > 0);
    print_message("informer (%s): %ld lists, %ld relists, %ld reconnects, %ld events; %ld adds, "
                  "%ld updates, %ld deletes; %ld runs held, %ld changes in them\n",
                  docs ? "documents" : "jansson", s.lists, s.relists, s.reconnects, s.events, c.add,
                  c.update, c.del, c.holds, c.held_changes);
    drv_free(want);
    drv_free(got);
    drv_informer_free(r.inf);
    assert_int_equal(c.live_records, 0);
    drv_kube_free(writer);
    drv_kube_free(reader);
    drv_apiserver_free(srv);
}

static void test_informer_converges_under_faults(void **unused)
{
    (void)unused;
    converge_under_faults(false);
}

/* The same with the objects of lists and watch events as documents: the malformed and unknown
 * events, ERROR 410 and bookmarks read from a document. */
static void test_informer_converges_under_faults_as_documents(void **unused)
{
    (void)unused;
    converge_under_faults(true);
}

/* ---- paged lists ---------------------------------------------------------------------------- */

/* A paged list meets writes between its pages: what decode sees first, then the change. */
typedef struct paging {
    counts c;
    drv_apiserver *srv;
    drv_kube *writer;
    bool expire;      /* after the writes, expire every resourceVersion (the continue token too) */
    bool changed;     /* the writes were made (once) */
    int pages_before; /* pages of the list the server had answered when they were */
    long decoded;     /* objects decoded so far */
    drv_informer *inf;
    long listed;         /* on_listed calls */
    long listed_decoded; /* ... objects decoded, and cached, at the first one */
    long listed_len;
    bool listed_unsynced; /* an on_listed call found the informer not synced */
} paging;

static void write_pod(drv_kube *k, const char *method, int i, const char *body)
{
    char path[128];
    long st;
    drv_diag d;
    if (!strcmp(method, "POST"))
        snprintf(path, sizeof path, "/api/v1/namespaces/default/pods");
    else
        snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/p%02d", i);
    char b[512];
    if (!body) {
        snprintf(b, sizeof b,
                 "{\"metadata\":{\"name\":\"p%02d\"},\"spec\":{\"containers\":[{\"name\":"
                 "\"c\",\"image\":\"busybox\"}]}}",
                 i);
        body = b;
    }
    const char *ct = !strcmp(method, "PATCH") ? "application/merge-patch+json" : NULL;
    if (drv_kube_request(k, method, path, ct, body, &st, NULL, &d) != 0)
        fail_msg("%s p%02d: %s", method, i, d.msg);
}

/* How many pages of the list (GET /api/v1/pods with limit=3) the server has answered; -1 when
 * out of memory. (Called on the informer's thread: no cmocka assertion here.) */
static int pages_answered(drv_apiserver *srv)
{
    char *log = drv_apiserver_request_log(srv);
    if (!log)
        return -1;
    int n = 0;
    for (const char *l = log; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        const char *q = strstr(l, " GET /api/v1/pods?");
        const char *lim = strstr(l, "limit=3");
        n += q && q < l + len && lim && lim < l + len;
        l = nl ? nl + 1 : NULL;
    }
    drv_free(log);
    return n;
}

/* Decodes as decode does; at the third object (the end of the first page of 3) changes the
 * server once: p01 (listed already) and p05 (not yet) modified, p02 (being listed: cached as it
 * was) and p07 (not yet listed) deleted, p10 created. The informer's thread makes these requests
 * itself (on its own client) while it decodes the first page. The pager fetches two pages
 * ahead: the second and third are asked for before the first is decoded, the fourth only once
 * the second is begun. So the writes wait until the server has answered three pages: the
 * second and third then show the objects as they were, the fourth (p09, p10) as they are, and
 * no page can fall between two of the writes (one did, now and then, on a loaded machine: the
 * third page between p07's delete and p10's create ended the list at p09). */
static void *decode_paging(json_t *obj, void *arg, drv_diag *d)
{
    paging *p = arg;
    if (++p->decoded == 3 && !p->changed) {
        p->changed = true;
        for (int waited = 0; (p->pages_before = pages_answered(p->srv)) < 3 && waited < 20000;
             waited += 5)
            sleep_ms(5); /* (the test asserts pages_before: cmocka fails on its own thread) */
        write_pod(p->writer, "PATCH", 1, "{\"metadata\":{\"labels\":{\"between\":\"pages\"}}}");
        write_pod(p->writer, "PATCH", 5, "{\"metadata\":{\"labels\":{\"between\":\"pages\"}}}");
        write_pod(p->writer, "DELETE", 2, "{\"gracePeriodSeconds\":0}");
        write_pod(p->writer, "DELETE", 7, "{\"gracePeriodSeconds\":0}");
        write_pod(p->writer, "POST", 10, NULL);
        if (p->expire)
            drv_apiserver_expire(p->srv);
    }
    return decode(obj, &p->c, d);
}

/* decode_paging from a document (ops.decode_doc: lists are read as documents): the same
 * record, through the informer's document path (its keys, resourceVersions and marks). */
static void *decode_paging_doc(const drv_jdoc *doc, int32_t obj, void *arg, drv_diag *d)
{
    json_t *o = drv_jdoc_json(doc, obj);
    void *rec = o ? decode_paging(o, arg, d) : NULL;
    json_decref(o);
    return rec;
}

static void release_paging(void *rec, void *arg)
{
    release(rec, &((paging *)arg)->c);
}

/* A list is complete: what was decoded and cached by then, and whether the informer says
 * synced already (a consumer woken here looks at once). */
static void on_listed_paging(void *arg)
{
    paging *p = arg;
    if (p->listed++ == 0) {
        p->listed_decoded = p->decoded;
        p->listed_len = (long)drv_informer_len(p->inf);
    }
    p->listed_unsynced |= !drv_informer_synced(p->inf);
}

/* Runs an informer listing pods in pages of 3 over p00..p09 while decode_paging changes the
 * server between the first and second page; waits until its cache equals the server's store. */
static drv_informer_stats list_across_writes(bool expire, bool docs)
{
    drv_apiserver *srv;
    drv_diag d;
    drv_apiserver_opts o = {.fixture_dir = FIXTURE_DIR, .bookmark_ms = 100, .request_log = true};
    assert_int_equal(drv_apiserver_start(&srv, &o, &d), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(srv));
    drv_kube_config cfg = {.server = url, .qps = 10000, .burst = 10000, .backoff_ms = 5};
    paging p = {.srv = srv, .expire = expire};
    drv_kube *reader;
    assert_int_equal(drv_kube_new(&p.writer, &cfg, &d), 0);
    assert_int_equal(drv_kube_new(&reader, &cfg, &d), 0);
    for (int i = 0; i < 10; i++)
        write_pod(p.writer, "POST", i, NULL);
    drv_informer_ops ops = {.decode = decode_paging,
                            .release = release_paging,
                            .on_listed = on_listed_paging,
                            .decode_doc = docs ? decode_paging_doc : NULL};
    runner r = {0};
    assert_int_equal(drv_informer_new(&r.inf, reader, "/api/v1/pods", 3, 2, &ops, &p, &d), 0);
    p.inf = r.inf;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run, &r), 0);
    char *want = NULL, *got = NULL;
    for (int tries = 0; tries < 200; tries++) {
        drv_free(want);
        drv_free(got);
        want = drv_apiserver_dump(srv, "pods");
        got = drv_informer_dump(r.inf);
        if (p.changed && want && got && !strcmp(want, got))
            break;
        sleep_ms(50);
    }
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    assert_int_equal(r.rc, 0);
    assert_true(p.changed);
    assert_int_equal(p.pages_before, 3); /* (not 4: the pager fetches two pages ahead, no more) */
    assert_non_null(want);
    assert_non_null(got);
    if (strcmp(want, got) != 0)
        fail_msg("cache differs from the server:\n--- server\n%s--- informer\n%s", want, got);
    /* the writes are in it: p02 and p07 gone, p10 there (p01's and p05's versions: compared) */
    assert_non_null(strstr(got, "default/p10@"));
    assert_null(strstr(got, "default/p02@"));
    assert_null(strstr(got, "default/p07@"));
    drv_informer_stats s = drv_informer_get_stats(r.inf);
    /* every complete list was told, after its last object was decoded and cached, with the
     * informer synced (a list cut by an expired token is not complete) */
    assert_int_equal(p.listed, s.lists - (expire ? 1 : 0));
    assert_false(p.listed_unsynced);
    if (!expire) { /* (one list: every object it had decoded, each once: p00..p08 as they were,
                    * p02 and p07 since deleted among them, then p09 and p10) */
        assert_int_equal(p.listed_decoded, 11);
        assert_int_equal(p.listed_len, 11);
    }
    drv_free(want);
    drv_free(got);
    drv_informer_free(r.inf);
    assert_int_equal(p.c.live_records, 0);
    drv_kube_free(p.writer);
    drv_kube_free(reader);
    drv_apiserver_free(srv);
    return s;
}

/* Writes between pages: the list completes (its later pages show the objects as they are now),
 * and the watch from the list's resourceVersion — the first page's, which the continue token
 * carries — replays every write, p01's included (listed before it changed). Had the informer
 * watched from a later resourceVersion, p01 would stay stale and the caches differ. */
static void test_informer_paged_list_with_writes_between_pages(void **unused)
{
    (void)unused;
    for (int docs = 0; docs < 2; docs++) { /* (items as jansson values, then as documents) */
        drv_informer_stats s = list_across_writes(false, docs);
        assert_int_equal(s.lists, 1);
        assert_int_equal(s.relists, 0);
        assert_true(s.events >= 5); /* the five writes, replayed by the watch */
    }
}

/* The continue token expires between pages (410 Expired, as from a compacted etcd): the
 * informer lists again from the start, and p02, cached by the failed list and deleted since
 * (no watch can replay that: the window is gone), is swept by the complete one. */
static void test_informer_expired_continue_relists(void **unused)
{
    (void)unused;
    drv_informer_stats s = list_across_writes(true, false);
    assert_int_equal(s.lists, 2); /* the one that met 410, and the complete one */
}

/* Indexes: typed pod records filed by node and by job, checked against a brute-force count
 * after every one of many random adds, moves and deletes. */
static drv_strtab *ix_names;

static void *decode_kpod(json_t *obj, void *arg, drv_diag *d)
{
    (void)arg;
    drv_kpod *p = drv_malloc(sizeof *p);
    if (p && drv_kube_decode_pod(obj, ix_names, p, d) == 0)
        return p;
    drv_free(p);
    return NULL;
}

static void free_kpod(void *rec, void *arg)
{
    (void)arg;
    drv_free(rec);
}

static int32_t by_node(const void *rec, void *arg)
{
    (void)arg;
    return ((const drv_kpod *)rec)->node;
}

static int32_t by_job(const void *rec, void *arg)
{
    (void)arg;
    return ((const drv_kpod *)rec)->job;
}

typedef struct brute {
    int32_t v;
    int idx;
    size_t n;
} brute;

static void count_brute(const char *key, const char *rv, void *rec, void *arg)
{
    (void)key, (void)rv;
    brute *b = arg;
    const drv_kpod *p = rec;
    b->n += (b->idx == 0 ? p->node : p->job) == b->v;
}

static void test_informer_indexes(void **unused)
{
    (void)unused;
    ix_names = drv_strtab_new();
    drv_informer_ops ops = {.decode = decode_kpod, .release = free_kpod};
    drv_informer *inf;
    drv_diag d;
    assert_int_equal(drv_informer_new(&inf, NULL, "/api/v1/pods", 0, 0, &ops, NULL, &d), 0);
    assert_int_equal(drv_informer_add_index(inf, by_node), 0);
    drv_rng r;
    drv_rng_seed(&r, 9);
    for (int op = 0; op < 3000; op++) {
        int i = (int)drv_rng_range(&r, 0, 99);
        char name[16], node[16], job[16], rv[16];
        snprintf(name, sizeof name, "p%d", i);
        snprintf(node, sizeof node, "n%d", (int)drv_rng_range(&r, 0, 9));
        snprintf(job, sizeof job, "j%d", (int)drv_rng_range(&r, 0, 6));
        snprintf(rv, sizeof rv, "%d", op + 1);
        json_t *o =
            json_pack("{s:{s:s, s:s, s:s, s:{s:s}}, s:{s:s, s:[{s:s}]}}", "metadata", "name", name,
                      "namespace", "default", "resourceVersion", rv, "labels", "drover.dev/job",
                      job, "spec", "nodeName", node, "containers", "name", "c");
        int type = drv_rng_uniform(&r) < 0.25 ? DRV_WATCH_DELETED : DRV_WATCH_MODIFIED;
        assert_int_equal(drv_informer_apply(inf, type, o), 0);
        json_decref(o);
        if (op == 1500) /* an index added late files what is cached already */
            assert_int_equal(drv_informer_add_index(inf, by_job), 1);
        for (int idx = 0; idx < (op > 1500 ? 2 : 1); idx++)
            for (int v = 0; v < 10; v++) {
                char s[16];
                snprintf(s, sizeof s, idx == 0 ? "n%d" : "j%d", v);
                int32_t id = drv_strtab_find(ix_names, s);
                if (id <= 0)
                    continue;
                brute b = {id, idx, 0};
                drv_informer_foreach(inf, count_brute, &b);
                size_t got = drv_informer_by_index(inf, idx, id, NULL, NULL);
                if (got != b.n)
                    fail_msg("op %d: index %d value %s: %zu filed, %zu cached", op, idx, s, got,
                             b.n);
            }
    }
    assert_true(drv_informer_len(inf) > 10);
    drv_informer_free(inf);
    drv_strtab_free(ix_names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_informer_converges_under_faults),
        cmocka_unit_test(test_informer_converges_under_faults_as_documents),
        cmocka_unit_test(test_informer_paged_list_with_writes_between_pages),
        cmocka_unit_test(test_informer_expired_continue_relists),
        cmocka_unit_test(test_informer_indexes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
