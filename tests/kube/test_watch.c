/*
 * test_watch.c - the watch decoder against the recorded watch streams (golden inputs from
 * tests/fixtures/k8s/transcripts/05-watch-*), fed in small uneven pieces, and against bad
 * input: malformed JSON, unknown event types, truncated lines, failing allocations.
 * Expected event counts and types are read from the recordings themselves (one event per
 * non-blank body line), not from this program's output.
 */
#include "drover/file.h"
#include "drover/kube_watch.h"
#include "json.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_streams_in_pieces),
        cmocka_unit_test(test_bad_input_names_context),
        cmocka_unit_test(test_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
