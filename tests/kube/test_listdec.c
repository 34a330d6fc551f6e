/*
 * test_listdec.c - the incremental list decoder against the recorded list answers of a real API
 * server (golden inputs: tests/fixtures/k8s/transcripts/0?-*-list*) and hand-made lists with
 * strings full of brackets, fed in pieces of every size from 1 byte; and against bad input.
 * Metamorphic: what the decoder hands on, item by item, must equal the items of the same body
 * parsed whole by jansson (so the expected values come from the input, not from this code).
 * Every test runs twice: items handed on as jansson values, then as documents.
 */
#include "drover/file.h"
#include "listdec.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *body_of(const char *name)
{
    char path[1024];
    const char *src = getenv("DROVER_SOURCE_DIR");
    snprintf(path, sizeof path, "%.400s/tests/fixtures/k8s/transcripts/%s/response.txt",
             src ? src : ".", name);
    char *p;
    if (drv_file_read(path, &p, NULL, NULL) != 0)
        return NULL;
    char *b = strstr(p, "\r\n\r\n");
    char *out = strdup(b ? b + 4 : "");
    drv_free(p);
    return out;
}

/* The items seen, each as compact JSON with sorted keys. */
typedef struct seen {
    json_t *items;
    int stop_at; /* return -100 from this item on (0: never) */
} seen;

/* The decoders' way of handing items on: jansson values (cb) or documents (doc_cb), for every
 * test in turn (main). */
static bool docs;

static int on_item(json_t *item, void *arg)
{
    seen *s = arg;
    if (s->stop_at && (int)json_array_size(s->items) + 1 >= s->stop_at)
        return -100;
    json_array_append(s->items, item);
    return 0;
}

static int on_doc(const drv_jdoc *doc, void *arg)
{
    json_t *item = drv_jdoc_json(doc, 0);
    if (!item)
        return DRV_ENOMEM;
    int rc = on_item(item, arg);
    json_decref(item);
    return rc;
}

/* Feeds body in pieces of `piece` bytes; returns the first non-zero code, or finish's. */
static int feed_all(const char *body, size_t piece, seen *s, drv_list_decoder *l, drv_diag *d)
{
    size_t n = strlen(body);
    drv_list_decoder_init(l, "GET /test", docs ? NULL : on_item, s);
    l->doc_cb = docs ? on_doc : NULL;
    for (size_t at = 0; at < n; at += piece) {
        int rc = drv_list_decoder_feed(l, body + at, n - at < piece ? n - at : piece, d);
        if (rc)
            return rc;
    }
    return drv_list_decoder_finish(l, d);
}

/* Every piece size gives what jansson gives for the whole body. */
static void check_against_whole(const char *body)
{
    json_error_t je;
    json_t *whole = json_loads(body, 0, &je);
    assert_non_null(whole);
    json_t *none = json_array();
    json_t *want = json_object_get(whole, "items");
    if (!json_is_array(want))
        want = none; /* "items": null, or none at all: no item */
    json_t *meta = json_object_get(whole, "metadata");
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    const char *cont = json_string_value(json_object_get(meta, "continue"));
    size_t n = strlen(body);
    size_t pieces[] = {1, 2, 3, 5, 7, 13, 64, 4096, n};
    for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
        seen s = {json_array(), 0};
        drv_list_decoder l;
        drv_diag d = {{0}};
        assert_int_equal(feed_all(body, pieces[p], &s, &l, &d), 0);
        assert_true(json_equal(s.items, want));
        assert_int_equal(l.items, (long)json_array_size(s.items));
        assert_string_equal(drv_list_decoder_rv(&l), rv ? rv : "");
        assert_string_equal(drv_list_decoder_continue(&l), cont ? cont : "");
        drv_list_decoder_fini(&l);
        json_decref(s.items);
        /* without a callback (the pager's scan): items skipped, metadata read, bytes kept; a
         * transfer cut after half the body, then read again after a reset, gives the same */
        drv_kbuf raw = {0};
        drv_list_decoder_init(&l, "GET /test", NULL, NULL);
        l.raw = &raw;
        assert_int_equal(drv_list_decoder_feed(&l, body, n / 2, &d), 0);
        drv_list_decoder_reset(&l);
        assert_int_equal(raw.n, 0);
        for (size_t at = 0; at < n; at += pieces[p])
            assert_int_equal(
                drv_list_decoder_feed(&l, body + at, n - at < pieces[p] ? n - at : pieces[p], &d),
                0);
        assert_int_equal(drv_list_decoder_finish(&l, &d), 0);
        assert_int_equal(l.items, 0);
        assert_int_equal(raw.n, n);
        assert_memory_equal(raw.p, body, n);
        assert_string_equal(drv_list_decoder_rv(&l), rv ? rv : "");
        assert_string_equal(drv_list_decoder_continue(&l), cont ? cont : "");
        drv_list_decoder_fini(&l);
        drv_free(raw.p);
    }
    json_decref(whole);
    json_decref(none);
}

static void test_recorded_lists(void **state)
{
    (void)state;
    const char *names[] = {"02-node-list",         "02-node-list-labelselector", "03-pod-list-all",
                           "03-pod-list-continue", "03-pod-list-limit-1",        "08-tj-list"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *b = body_of(names[i]);
        assert_non_null(b);
        assert_true(strstr(b, "\"items\"") != NULL); /* a list, not an error */
        check_against_whole(b);
        free(b);
    }
}

static void test_tricky_lists(void **state)
{
    (void)state;
    /* strings holding brackets, quotes, escapes and the word items; a top-level key named
     * like a field of an item; metadata after the items; nested arrays; empty lists */
    const char *bodies[] = {
        "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"7\",\"continue\":\"x]}\"},"
        "\"items\":[{\"a\":\"}]\\\"{[\",\"b\":[[1,{\"c\":null}],[]]},{\"items\":[1,2]},{}]}",
        " \n{ \"items\" : [ { \"k\" : \"v\\\\\" } , { \"k\" : \"\\\"items\\\":[\" } ] ,\n"
        "\"metadata\" : { \"resourceVersion\" : \"42\" } }\n",
        "{\"extra\":{\"items\":[{\"x\":1}],\"metadata\":{\"resourceVersion\":\"9\"}},"
        "\"metadata\":{\"resourceVersion\":\"3\"},\"items\":[]}",
        "{\"metadata\":{},\"items\":null}",
        "{\"itemsx\":[{\"a\":1}],\"items\":[{\"\\u0041\":\"\\u00e9\"}]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        check_against_whole(bodies[i]);
}

/* Bad input: DRV_EPARSE with a byte offset, never a crash; the callback's code stops it. */
static void test_bad_input(void **state)
{
    (void)state;
    struct {
        const char *body;
        int rc;
        const char *msg;
    } cases[] = {
        {"[1,2]", DRV_EPARSE, "a list must be a JSON object"},
        {"{\"items\":[1]}", DRV_EPARSE, "not an object"},
        {"{\"items\":[\"a\"]}", DRV_EPARSE, "not an object"},
        {"{\"items\":[[]]}", DRV_EPARSE, "not an object"},
        {"{\"items\":[{\"a\":1}]", DRV_EPARSE, "ended inside the list"},
        {"{\"items\":[{\"a\":1]]}", DRV_EPARSE, "malformed item"},
        {"{\"items\":[{\"a\":1}}", DRV_EPARSE, "mismatched bracket"},
        {"{\"items\":[{\"a\":tru}]}", DRV_EPARSE, "malformed item"},
        {"{\"items\":[]} x", DRV_EPARSE, "data after the list"},
        {"", DRV_EPARSE, "ended inside the list"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t piece = 1; piece <= 4; piece += 3) {
            seen s = {json_array(), 0};
            drv_list_decoder l;
            drv_diag d = {{0}};
            int rc = feed_all(cases[i].body, piece, &s, &l, &d);
            assert_int_equal(rc, cases[i].rc);
            assert_non_null(strstr(d.msg, cases[i].msg));
            assert_non_null(strstr(d.msg, "GET /test: byte "));
            /* after an error it takes nothing more */
            if (l.depth < 0)
                assert_int_equal(drv_list_decoder_feed(&l, "{", 1, &d), DRV_EPARSE);
            drv_list_decoder_fini(&l);
            json_decref(s.items);
        }
    }
    /* the callback's code is returned as it is, and no item after it is handed on */
    seen s = {json_array(), 2};
    drv_list_decoder l;
    drv_diag d = {{0}};
    assert_int_equal(feed_all("{\"items\":[{\"a\":1},{\"a\":2},{\"a\":3}]}", 5, &s, &l, &d), -100);
    assert_int_equal(json_array_size(s.items), 1);
    drv_list_decoder_fini(&l);
    json_decref(s.items);
}

/* Scans page with meta_only into l (left open), fed in pieces of piece bytes: its continue
 * token is cont, and raw holds every byte fed. */
static void scan_meta_only(drv_list_decoder *l, drv_kbuf *raw, const char *page, size_t piece,
                           const char *cont)
{
    size_t n = strlen(page);
    drv_diag d = {{0}};
    drv_list_decoder_init(l, "GET /test", NULL, NULL);
    l->raw = raw;
    l->meta_only = true;
    for (size_t at = 0; at < n; at += piece)
        assert_int_equal(drv_list_decoder_feed(l, page + at, n - at < piece ? n - at : piece, &d),
                         0);
    assert_int_equal(drv_list_decoder_finish(l, &d), 0);
    assert_string_equal(drv_list_decoder_continue(l), cont);
    assert_int_equal(raw->n, n);
    assert_memory_equal(raw->p, page, n);
}

/* The pager's scan (meta_only): once the metadata is read, the rest is kept, not scanned — a
 * page broken after its metadata passes here (its decode will refuse it), and the bytes kept
 * are all the bytes fed; without meta_only the same page is refused. A page whose metadata
 * comes after the items is scanned to it. A reset keeps meta_only. The scan stops at the
 * metadata's end inside a chunk too: a page whose items are malformed, fed at once, still gives
 * its continue token. */
static void test_meta_only(void **state)
{
    (void)state;
    const char *broken = "{\"metadata\":{\"resourceVersion\":\"9\",\"continue\":\"c1\"},"
                         "\"items\":[{\"a\":1]] garbage";
    const char *late = "{\"items\":[{\"a\":\"}\"}],\"metadata\":{\"continue\":\"c2\"}}";
    size_t n = strlen(broken);
    for (size_t piece = 1; piece <= 64; piece *= 4) {
        drv_kbuf raw = {0};
        drv_list_decoder l;
        drv_diag d = {{0}};
        scan_meta_only(&l, &raw, broken, piece, "c1");
        drv_list_decoder_reset(&l);
        assert_true(l.meta_only);
        assert_int_equal(drv_list_decoder_feed(&l, late, strlen(late), &d), 0);
        assert_int_equal(drv_list_decoder_finish(&l, &d), 0);
        assert_string_equal(drv_list_decoder_continue(&l), "c2");
        drv_list_decoder_fini(&l);
        drv_free(raw.p);
        /* the same broken page scanned whole is refused */
        raw = (drv_kbuf){0};
        drv_list_decoder_init(&l, "GET /test", NULL, NULL);
        l.raw = &raw;
        int rc = drv_list_decoder_feed(&l, broken, n, &d);
        if (rc == 0)
            rc = drv_list_decoder_finish(&l, &d);
        assert_int_equal(rc, DRV_EPARSE);
        drv_list_decoder_fini(&l);
        drv_free(raw.p);
    }
    const char *items = "{\"metadata\":{\"continue\":\"c3\"},\"items\":[\"x\",1]}";
    drv_kbuf raw = {0};
    drv_list_decoder l;
    scan_meta_only(&l, &raw, items, strlen(items), "c3");
    drv_list_decoder_fini(&l);
    drv_free(raw.p);
}

/* Every allocation failing in turn: DRV_ENOMEM or success, and nothing leaks (ASan). */
static void test_failing_allocations(void **state)
{
    (void)state;
    char *b = body_of("03-pod-list-all");
    assert_non_null(b);
    int ok = 0, oom = 0;
    for (long nth = 1; nth < 400; nth++) {
        seen s = {json_array(), 0};
        drv_list_decoder l;
        drv_diag d = {{0}};
        drv_alloc_fail_at(nth);
        int rc = feed_all(b, 97, &s, &l, &d);
        drv_alloc_fail_at(0);
        assert_true(rc == 0 || rc == DRV_ENOMEM);
        rc == 0 ? ok++ : oom++;
        drv_list_decoder_fini(&l);
        json_decref(s.items);
    }
    assert_true(oom > 0 && ok > 0); /* both happened: the failures reached the decoder */
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_lists),
        cmocka_unit_test(test_tricky_lists),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_failing_allocations),
    };
    /* (the pager's scan reads no item: once, not per way items are parsed) */
    const struct CMUnitTest scan[] = {cmocka_unit_test(test_meta_only)};
    int failed = cmocka_run_group_tests_name("the pager's scan", scan, NULL, NULL);
    failed += cmocka_run_group_tests_name("items as jansson values", tests, NULL, NULL);
    docs = true; /* items parsed into documents, where they lie when whole in a piece */
    return failed + cmocka_run_group_tests_name("items as documents", tests, NULL, NULL);
}
