/*
 * test_watch.c - the watch decoder against the recorded watch streams (golden inputs from
 * tests/fixtures/k8s/transcripts/05-watch-*), fed in small uneven pieces, and against bad
 * input: malformed JSON, unknown event types, truncated lines, failing allocations. Events as
 * documents (drv_watch_decoder.doc) against events as jansson values: on the recordings, on odd
 * hand-made events and on random mutations the two must give the same events (type,
 * resourceVersion, offset, object) and the same result and message. Expected event counts and types
 * are read from the recordings themselves (one event per non-blank body line), not from this
 * program's output.
 */
#include "drover/file.h"
#include "drover/kube_watch.h"
#include "json.h"
#include "testutil.h"

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

struct seen {
    int n;
    int types[5];
    char first_type[16];
};

static int count(const drv_watch_event *ev, void *arg)
{
    struct seen *s = arg;
    if (s->n++ == 0)
        snprintf(s->first_type, sizeof s->first_type, "%s", drv_watch_type_name(ev->type));
    s->types[ev->type]++;
    return 0;
}

static const char *const STREAMS[] = {
    "05-watch-expired-410",
    "05-watch-fieldselector-unbound",
    "05-watch-old-rv-replay-in-window",
    "05-watch-pods-bookmarks",
    "05-watch-timeout-5s",
    "05-watch-trainingjobs",
};

static void test_recorded_streams_in_pieces(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof STREAMS / sizeof *STREAMS; k++) {
        char *body = body_of(STREAMS[k]);
        assert_non_null(body);
        int lines = 0;
        char first[16] = "";
        for (char *p = body; *p;) {
            size_t l = strcspn(p, "\n");
            if (l > 0) {
                if (!lines++)
                    sscanf(p, "{\"type\":\"%15[A-Z]", first);
            }
            p += l + (p[l] == '\n');
        }
        for (size_t piece = 1; piece <= 4099; piece = piece * 3 + 4) {
            drv_watch_decoder w;
            drv_watch_decoder_init(&w, "pods");
            struct seen s = {0};
            drv_diag d = {{0}};
            size_t n = strlen(body);
            for (size_t off = 0; off < n; off += piece) {
                size_t m = n - off < piece ? n - off : piece;
                assert_int_equal(drv_watch_decoder_feed(&w, body + off, m, count, &s, &d), 0);
            }
            assert_int_equal(drv_watch_decoder_finish(&w, &d), 0);
            assert_int_equal(s.n, lines);
            assert_string_equal(s.first_type, first);
            drv_watch_decoder_fini(&w);
        }
        free(body);
    }
}

static int bad_input(const char *text, drv_diag *d)
{
    drv_watch_decoder w;
    drv_watch_decoder_init(&w, "pods");
    struct seen s = {0};
    int rc = drv_watch_decoder_feed(&w, text, strlen(text), count, &s, d);
    if (!rc)
        rc = drv_watch_decoder_finish(&w, d);
    drv_watch_decoder_fini(&w);
    return rc;
}

static void test_bad_input_names_context(void **state)
{
    (void)state;
    drv_diag d = {{0}};
    const char *ok = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}\n";
    char text[512];
    snprintf(text, sizeof text, "%s{\"type\":\"ADDED\",\"object\":{\n", ok);
    assert_int_equal(bad_input(text, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "pods"));
    assert_non_null(strstr(d.msg, "resourceVersion 7"));
    assert_non_null(strstr(d.msg, "byte"));
    snprintf(text, sizeof text, "%s{\"type\":\"EXPLODED\",\"object\":{}}\n", ok);
    assert_int_equal(bad_input(text, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "EXPLODED"));
    snprintf(text, sizeof text, "%s{\"type\":\"MODIFIED\",\"obj", ok); /* truncated */
    assert_int_equal(bad_input(text, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "stream ended inside an event"));
    assert_int_equal(bad_input("{\"type\":\"ADDED\"}\n", &d), DRV_EPARSE);
    assert_int_equal(bad_input("404 page not found\n", &d), DRV_EPARSE);
}

static void test_allocation_failure(void **state)
{
    (void)state;
    drv_diag d = {{0}};
    drv_alloc_fail_at(1);
    int rc = bad_input("{\"type\":\"ADDED\",\"object\":{}}\n", &d);
    drv_alloc_fail_at(0);
    assert_int_equal(rc, DRV_ENOMEM);
}

/* ---- runs: drv_watch_event.more ------------------------------------------------------------- */

typedef struct runs {
    char more[64]; /* per event: '1' when more was set, '0' when not */
    int n;
} runs;

static int note_more(const drv_watch_event *ev, void *arg)
{
    runs *r = arg;
    if (r->n < 63)
        r->more[r->n++] = ev->more ? '1' : '0';
    return 0;
}

/* text fed in the pieces given (lengths, 0-terminated; the rest at once after them): the more
 * flags of its events, as a string. */
static void more_of(const char *text, const size_t *pieces, char *out)
{
    drv_watch_decoder w;
    drv_watch_decoder_init(&w, "pods");
    runs r = {{0}, 0};
    drv_diag d = {{0}};
    size_t off = 0, n = strlen(text);
    for (; pieces && *pieces; pieces++) {
        assert_int_equal(drv_watch_decoder_feed(&w, text + off, *pieces, note_more, &r, &d), 0);
        off += *pieces;
    }
    assert_int_equal(drv_watch_decoder_feed(&w, text + off, n - off, note_more, &r, &d), 0);
    drv_watch_decoder_fini(&w);
    strcpy(out, r.more);
}

/* An event says whether another follows in the bytes fed with it: blank lines and an
 * unfinished line are none; a line finished by a later feed is. */
static void test_more_follows(void **state)
{
    (void)state;
#define EV(rv) "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"" rv "\"}}}"
    const char *text = EV("1") "\n\r\n" EV("2") "\r\n \n\n" EV("3") "\n" EV("4");
    char got[64];
    more_of(text, NULL, got); /* (4 unfinished) */
    assert_string_equal(got, "110");
    size_t first[] = {strlen(EV("1")) + 3, 0}; /* 1 and the blank line, then the rest */
    more_of(text, first, got);
    assert_string_equal(got, "010");
    size_t split[] = {strlen(EV("1")) + 10, 0}; /* 1 whole, 2 cut: 1 alone */
    more_of(text, split, got);
    assert_string_equal(got, "010");
    const char *tail = EV("1") "\n" EV("2") "\n  \r\n";
    more_of(tail, NULL, got); /* (a blank line last is no event) */
    assert_string_equal(got, "10");
    /* byte by byte up to 1's newline, then the rest: 1 ends in the feed that holds 2 */
    size_t ones[sizeof EV("1")];
    for (size_t i = 0; i + 1 < sizeof ones / sizeof *ones; i++)
        ones[i] = 1;
    ones[sizeof ones / sizeof *ones - 1] = 0;
    more_of(EV("1") "\n" EV("2") "\n", ones, got);
    assert_string_equal(got, "10");
#undef EV
}

/* ---- events as documents (drv_watch_decoder.doc) against events as jansson values ---------- */

/* What a stream gave, as text: per event its type, resourceVersion, offset and object (compact
 * JSON, sorted keys), then the result and message. Two decodings agree when their texts do. */
typedef struct transcript {
    char *t;
    size_t n, cap;
    bool doc;   /* the events came as documents (object NULL, doc set) */
    int mixed;  /* events in the other form than asked, or with both or neither */
    int events; /* events seen */
} transcript;

static void put(transcript *x, const char *s)
{
    size_t m = strlen(s);
    if (x->n + m + 1 > x->cap) {
        x->cap = (x->n + m + 1) * 2;
        x->t = realloc(x->t, x->cap);
        assert_non_null(x->t);
    }
    memcpy(x->t + x->n, s, m + 1);
    x->n += m;
}

static int record(const drv_watch_event *ev, void *arg)
{
    transcript *x = arg;
    x->events++;
    bool as_doc = ev->doc && ev->object == NULL && ev->obj >= 0;
    bool as_json = !ev->doc && ev->object && ev->obj == -1;
    x->mixed += x->doc ? !as_doc : !as_json;
    json_t *o = ev->doc ? drv_jdoc_json(ev->doc, ev->obj) : json_incref(ev->object);
    char *js = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char head[128];
    snprintf(head, sizeof head, "%s rv=%s @%llu%s ", drv_watch_type_name(ev->type), ev->rv,
             (unsigned long long)ev->offset, ev->more ? " more" : "");
    put(x, head);
    put(x, js ? js : "(none)");
    put(x, "\n");
    free(js);
    json_decref(o);
    return 0;
}

/* body fed in pieces of `piece` bytes, its events as documents or as jansson values, with the
 * skip paths; the transcript (the caller frees x->t). */
static void decode_stream(const char *body, size_t n, size_t piece, bool doc,
                          const char *const *skip, transcript *x)
{
    drv_watch_decoder w;
    drv_watch_decoder_init(&w, "pods");
    drv_jdoc jd;
    drv_jdoc_init(&jd);
    w.skip = skip;
    w.doc = doc ? &jd : NULL;
    memset(x, 0, sizeof *x);
    x->doc = doc;
    drv_diag d = {{0}};
    int rc = 0;
    for (size_t off = 0; off < n && !rc; off += piece)
        rc = drv_watch_decoder_feed(&w, body + off, n - off < piece ? n - off : piece, record, x,
                                    &d);
    if (!rc)
        rc = drv_watch_decoder_finish(&w, &d);
    char tail[640];
    snprintf(tail, sizeof tail, "rc %d last_rv %s: %s\n", rc, w.last_rv, rc ? d.msg : "");
    put(x, tail);
    drv_watch_decoder_fini(&w);
    drv_jdoc_fini(&jd);
}

/* Both decodings of body agree (fails with both transcripts); returns the events seen. */
static int agree(const char *where, const char *body, size_t n, size_t piece,
                 const char *const *skip)
{
    transcript a, b;
    decode_stream(body, n, piece, false, skip, &a);
    decode_stream(body, n, piece, true, skip, &b);
    if (strcmp(a.t, b.t) != 0)
        fail_msg("%s: jansson and document decodings differ\n--- jansson\n%s--- document\n%s",
                 where, a.t, b.t);
    assert_int_equal(a.mixed, 0);
    assert_int_equal(b.mixed, 0);
    int events = a.events;
    free(a.t);
    free(b.t);
    return events;
}

/* Every recorded stream, in pieces of several sizes, with and without the pod's skip paths: the
 * same events (type, resourceVersion, offset, object), the same result. */
static void test_recorded_streams_as_documents(void **state)
{
    (void)state;
    const char *const *skips[] = {NULL, drv_kube_unread_pod};
    int events = 0;
    for (size_t k = 0; k < sizeof STREAMS / sizeof *STREAMS; k++) {
        char *body = body_of(STREAMS[k]);
        assert_non_null(body);
        for (size_t piece = 1; piece <= 4099; piece = piece * 5 + 2)
            for (int s = 0; s < 2; s++)
                events += agree(STREAMS[k], body, strlen(body), piece, skips[s]);
        free(body);
    }
    assert_true(events > 100); /* (the recordings were read: ~40 events, 10 ways) */
}

/* Hand-made events both decodings must treat alike: repeated keys, types and objects of the
 * wrong kind, a resourceVersion that is no string, an ERROR's Status, bookmarks, blank and
 * \r-terminated lines, bad JSON after good events. */
static void test_odd_events_as_documents(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"3\"}}}"
        "\n",
        "{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{\"metadata\":{}}}\n",
        "{\"type\":\"ADDED\",\"object\":[],\"object\":{\"metadata\":{\"resourceVersion\":\"4\"}}}"
        "\n",
        "{\"type\":\"ADDED\",\"object\":{},\"object\":7}\n",
        "{\"type\":\"ADDED\",\"object\":\"x\"}\n",
        "{\"type\":5,\"object\":{}}\n",
        "{\"object\":{}}\n",
        "[\"ADDED\",{}]\n",
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":12}}}\n",
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":[\"resourceVersion\"]}}\n",
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"99\"}}}\r\n\n",
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"metadata\":{"
        "\"resourceVersion\":\"5\"}}}\n",
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}\n"
        "{\"type\":\"ADDED\",\"object\":{\"a\":tru}}\n",
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\",\"managedFields\":"
        "[{\"x\":1}]},\"status\":{\"images\":[1,2]},\"s\":\"\\u00e9\\n\"}}\n",
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"managedFields\":[nul]}}}\n",
        "{\"type\":\"DELETED\",\"object\":{}} x\n",
        "{\"type\":\"DELETED\",\"object\":{}}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int s = 0; s < 2; s++) {
            char where[32];
            snprintf(where, sizeof where, "case %zu", i);
            agree(where, cases[i], strlen(cases[i]), 3, s ? drv_kube_unread_pod : NULL);
        }
}

/* Random bytes that matter to JSON (and newlines) replaced or dropped in a recorded stream:
 * both decodings give the same events up to the same error. */
static void test_random_mutations_as_documents(void **state)
{
    (void)state;
    static const char bytes[] = "\"\\{}[],:0-.e 1tfnu\t\n";
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    char *body = body_of("05-watch-pods-bookmarks");
    assert_non_null(body);
    size_t n0 = strlen(body);
    char *m = malloc(n0 + 1);
    assert_non_null(m);
    int events = 0;
    for (int k = 0; k < 600; k++) {
        size_t n = n0;
        memcpy(m, body, n);
        for (int j = 0; j < 1 + k % 3; j++) {
            size_t at = (size_t)(tu_rnd(&rng) % n);
            if (tu_rnd(&rng) % 3) {
                m[at] = bytes[tu_rnd(&rng) % (sizeof bytes - 1)];
            } else {
                memmove(m + at, m + at + 1, n - at - 1);
                n--;
            }
        }
        events += agree("a random mutation", m, n, 1 + k % 700, k % 2 ? drv_kube_unread_pod : NULL);
    }
    free(m);
    free(body);
    assert_true(events > 600);
}

/* Out of memory at each allocation of a document's decoding: DRV_ENOMEM, or the event once
 * there are enough; nothing leaked (the sanitizer build checks). */
static void test_allocation_failure_as_documents(void **state)
{
    (void)state;
    const char *text = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\","
                       "\"resourceVersion\":\"3\"},\"spec\":{\"x\":[1,2,{\"y\":\"z\"}]}}}\n";
    bool done = false;
    for (long nth = 1; nth < 100 && !done; nth++) {
        drv_watch_decoder w;
        drv_watch_decoder_init(&w, "pods");
        drv_jdoc jd;
        drv_jdoc_init(&jd);
        w.doc = &jd;
        struct seen s = {0};
        drv_diag d = {{0}};
        drv_alloc_fail_at(nth);
        int rc = drv_watch_decoder_feed(&w, text, strlen(text), count, &s, &d);
        done = drv_alloc_fail_pending() > 0;
        drv_alloc_fail_at(0);
        if (done) {
            assert_int_equal(rc, 0);
            assert_int_equal(s.n, 1);
        } else {
            assert_int_equal(rc, DRV_ENOMEM);
            assert_int_equal(s.n, 0);
        }
        drv_watch_decoder_fini(&w);
        drv_jdoc_fini(&jd);
    }
    assert_true(done);
}

/* Issue 26's probe: a watch delivering a 10 MB object (a pod with a 10 MB annotation, in 64 kB
 * reads) is decoded as one event; a line that never ends is refused once it passes
 * DRV_WATCH_MAX_LINE (16 MB), naming the bound, with the decoder's buffer bounded (at most
 * twice the bound and one read), never growing with the stream. */
static void test_a_10_mb_event_and_an_endless_line(void **state)
{
    (void)state;
    enum { BIG = 10 << 20, PIECE = 64 << 10 };
    static const char head[] = "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\","
                               "\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                               "\"resourceVersion\":\"7\",\"annotations\":{\"a\":\"";
    static const char tail[] = "\"}}}}\n";
    size_t n = sizeof head - 1 + BIG + sizeof tail - 1;
    char *text = malloc(n);
    assert_non_null(text);
    memcpy(text, head, sizeof head - 1);
    memset(text + sizeof head - 1, 'x', BIG);
    memcpy(text + sizeof head - 1 + BIG, tail, sizeof tail - 1);
    drv_watch_decoder w;
    drv_watch_decoder_init(&w, "pods");
    struct seen s = {0};
    drv_diag d = {{0}};
    for (size_t off = 0; off < n; off += PIECE)
        assert_int_equal(drv_watch_decoder_feed(&w, text + off, n - off < PIECE ? n - off : PIECE,
                                                count, &s, &d),
                         0);
    assert_int_equal(drv_watch_decoder_finish(&w, &d), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.first_type, "ADDED");
    drv_watch_decoder_fini(&w);

    /* the same head, then 'x' for ever (no newline) */
    drv_watch_decoder_init(&w, "pods");
    memset(text, 'x', PIECE);
    memcpy(text, head, sizeof head - 1);
    int rc = drv_watch_decoder_feed(&w, text, PIECE, count, &s, &d);
    memset(text, 'x', PIECE);
    size_t fed = PIECE;
    while (rc == 0 && fed < 4 * (size_t)DRV_WATCH_MAX_LINE) {
        rc = drv_watch_decoder_feed(&w, text, PIECE, count, &s, &d);
        fed += PIECE;
    }
    assert_int_equal(rc, DRV_ERANGE);
    assert_true(fed <= (size_t)DRV_WATCH_MAX_LINE + PIECE);
    assert_true(w.cap <= 2 * ((size_t)DRV_WATCH_MAX_LINE + PIECE + 1));
    assert_non_null(strstr(d.msg, "event line longer than 16777216 bytes"));
    drv_watch_decoder_fini(&w);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_streams_in_pieces),
        cmocka_unit_test(test_bad_input_names_context),
        cmocka_unit_test(test_allocation_failure),
        cmocka_unit_test(test_more_follows),
        cmocka_unit_test(test_recorded_streams_as_documents),
        cmocka_unit_test(test_odd_events_as_documents),
        cmocka_unit_test(test_random_mutations_as_documents),
        cmocka_unit_test(test_allocation_failure_as_documents),
        cmocka_unit_test(test_a_10_mb_event_and_an_endless_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
