/*
 * drv_json_loadb (src/kube/jsonparse.c) against jansson's json_loadb, which it replaces on the
 * informers' hot paths: two ways to read the same text must agree. For hand-picked texts at
 * the edges of the grammar, for every recorded API server answer, and for thousands of
 * mutations of those answers (a byte replaced by one that matters to JSON, a byte dropped,
 * the text cut short), both refuse or both accept and give equal values (json_equal: the
 * same types, integers and reals told apart). Plus the values of a few texts checked by hand
 * (escapes, surrogate pairs, numbers), and failing allocations. drv_json_loadb_skip is held to
 * the same on every text: jansson's value with the skipped members dropped; and drv_jdoc_parse
 * to drv_json_loadb_skip's answer, error (text and position) and value (drv_jdoc_json).
 */
#include "json.h"
#include "testutil.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Skip paths for drv_json_loadb_skip: what the informers skip, and keys that recorded answers
 * hold at the top or one level down (so that skipping is exercised on most of them). */
static const char *const SKIP[] = {"metadata.managedFields",
                                   "spec.volumes",
                                   "status.images",
                                   "status.conditions",
                                   "kind",
                                   "items",
                                   "metadata.labels",
                                   "spec.containers",
                                   "x.y.z",
                                   NULL};

/* v without the members at SKIP's paths (from v's member root when not NULL), in place. */
static void drop(json_t *v, const char *root)
{
    if (root)
        v = json_object_get(v, root);
    for (const char *const *p = SKIP; *p; p++) {
        char path[64];
        snprintf(path, sizeof path, "%s", *p);
        json_t *o = v;
        char *save = NULL, *key = strtok_r(path, ".", &save);
        for (char *nk; o && key && (nk = strtok_r(NULL, ".", &save)); key = nk)
            o = json_is_object(o) ? json_object_get(o, key) : NULL;
        if (json_is_object(o))
            json_object_del(o, key);
    }
}

/* drv_json_loadb_skip against jansson's value with the members dropped: both refuse or both
 * accept and give equal values. */
static void agree_skipping(const char *text, size_t n, const json_t *want, const char *root,
                           const char *what)
{
    json_error_t je;
    json_t *got = drv_json_loadb_skip(text, n, SKIP, root, &je);
    json_t *w = want ? json_deep_copy(want) : NULL;
    if (w)
        drop(w, root);
    if (!w != !got || (w && !json_equal(w, got)))
        fail_msg("%s: skipping from %s: jansson %s, drv_json_loadb_skip %s (%s) for %.*s", what,
                 root ? root : "the top", w ? "accepts" : "refuses", got ? "accepts" : "refuses",
                 got ? "" : je.text, (int)(n < 300 ? n : 300), text);
    /* a document of the same text: the same answer, the same error, the same value */
    drv_jdoc doc;
    drv_jdoc_init(&doc);
    json_error_t de;
    int drc = drv_jdoc_parse(&doc, text, n, SKIP, root, &de);
    json_t *dv = drc == 0 ? drv_jdoc_json(&doc, 0) : NULL;
    if ((drc == 0) != (got != NULL) || (got && !json_equal(got, dv)) ||
        (!got && (strcmp(je.text, de.text) != 0 || je.position != de.position)))
        fail_msg("%s: skipping from %s: drv_json_loadb_skip %s (%s at %d), drv_jdoc_parse %s (%s "
                 "at %d) for %.*s",
                 what, root ? root : "the top", got ? "accepts" : "refuses", got ? "" : je.text,
                 je.position, drc == 0 ? "accepts" : "refuses", drc == 0 ? "" : de.text,
                 de.position, (int)(n < 300 ? n : 300), text);
    json_decref(dv);
    drv_jdoc_fini(&doc);
    json_decref(w);
    json_decref(got);
}

/* Parses text both ways; fails unless they agree. Returns whether it was accepted. */
static bool agree(const char *text, size_t n, const char *what)
{
    json_error_t je, ours;
    json_t *want = json_loadb(text, n, 0, &je);
    json_t *got = drv_json_loadb(text, n, &ours);
    bool ok = true;
    if (!want != !got)
        ok = false;
    else if (want && !json_equal(want, got))
        ok = false;
    if (!ok)
        fail_msg("%s: jansson %s (%s), drv_json_loadb %s (%s) for %.*s", what,
                 want ? "accepts" : "refuses", want ? "" : je.text, got ? "accepts" : "refuses",
                 got ? "" : ours.text, (int)(n < 300 ? n : 300), text);
    if (!got && (ours.position < 0 || (size_t)ours.position > n))
        fail_msg("%s: error position %d outside the text of %zu bytes", what, ours.position, n);
    agree_skipping(text, n, want, NULL, what);
    agree_skipping(text, n, want, "object", what);
    json_decref(want);
    json_decref(got);
    return ok && got;
}

static void test_edges_agree_with_jansson(void **unused)
{
    (void)unused;
    static const char *const cases[] = {
        "{}", "[]", " \t\r\n{ } \n", "{\"a\":1}", "[1,2,3]", "[[[[[]]]]]", "{\"a\":{\"b\":[{}]}}",
        /* numbers */
        "[0]", "[-0]", "[-1]", "[01]", "[1.]", "[.5]", "[1.5]", "[-1.5e3]", "[1E+2]", "[1e-2]",
        "[1e]", "[1e+]", "[-]", "[+1]", "[1.5.2]", "[9223372036854775807]", "[9223372036854775808]",
        "[-9223372036854775808]", "[-9223372036854775809]", "[1e400]", "[1e-400]", "[0x10]",
        "[1 2]", "[NaN]", "[Infinity]",
        /* literals */
        "[true,false,null]", "[tru]", "[nulll]", "[True]", "[null,]", "[,1]",
        /* strings */
        "[\"\"]", "[\"a\\\"b\"]", "[\"\\\\\\/\\b\\f\\n\\r\\t\"]", "[\"\\u00e9\"]", "[\"\\u20AC\"]",
        "[\"\\ud83d\\ude00\"]", "[\"\\ud83d\"]", "[\"\\ude00\"]", "[\"\\ud83dx\"]",
        "[\"\\ud83d\\u0041\"]", "[\"\\u0000\"]", "[\"\\u00\"]", "[\"\\x41\"]", "[\"\\\"]",
        "[\"abc]", "[\"a\tb\"]", "[\"a\x01\"]", "[\"\xc3\xa9\"]", "[\"\xc3\"]", "[\"\xc0\xaf\"]",
        "[\"\xed\xa0\x80\"]", "[\"\xf4\x90\x80\x80\"]", "[\"\xf0\x9f\x98\x80\"]", "[\"\xe2\x82\"]",
        "[\"\xff\"]",
        /* objects */
        "{\"a\":1,\"a\":2}", "{\"a\" 1}", "{a:1}", "{\"a\":1,}", "{,\"a\":1}", "{\"a\":}",
        "{\"\\u0041\":\"\\u0042\"}", "{\"\\u0000\":1}", "{\"a\":1}}", "{\"a\":1",
        /* the top */
        "", " ", "1", "\"a\"", "null", "{} {}", "{}x", "\xef\xbb\xbf{}", "[1]\n\n"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        agree(cases[i], strlen(cases[i]), "case");
    /* a NUL byte in the text */
    agree("[\"a\0b\"]", 7, "NUL in a string");
    agree("[1,\0 2]", 7, "NUL between values");
}

static void test_values_by_hand(void **unused)
{
    (void)unused;
    const char *t = "{\"s\":\"x\\u00e9\\ud83d\\ude00\\n\",\"i\":-42,\"r\":2.5,\"big\":"
                    "9223372036854775807,\"e\":1e2,\"a\":[true,null,false],\"\\u0041\":{}}";
    json_error_t err;
    json_t *v = drv_json_loadb(t, strlen(t), &err);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "s")), "x\xc3\xa9\xf0\x9f\x98\x80\n");
    assert_true(json_is_integer(json_object_get(v, "i")));
    assert_int_equal(json_integer_value(json_object_get(v, "i")), -42);
    assert_true(json_is_real(json_object_get(v, "r")));
    assert_true(json_real_value(json_object_get(v, "r")) == 2.5);
    assert_true(json_integer_value(json_object_get(v, "big")) == 9223372036854775807LL);
    assert_true(json_is_real(json_object_get(v, "e"))); /* an exponent makes a real, as jansson */
    assert_int_equal(json_array_size(json_object_get(v, "a")), 3);
    assert_true(json_is_null(json_array_get(json_object_get(v, "a"), 1)));
    assert_true(json_is_object(json_object_get(v, "A")));
    json_decref(v);
    /* errors say where */
    const char *bad = "{\"a\":[1,2,}";
    assert_null(drv_json_loadb(bad, strlen(bad), &err));
    assert_int_equal(err.position, 10);
    assert_null(drv_json_loadb("[\"\\u0000\"]", 10, &err));
    assert_int_equal(err.position, 2);
    assert_null(drv_json_loadb("[1] x", 5, NULL)); /* (err may be NULL) */
    /* depth: as deep as jansson allows, and one more is refused */
    enum { DEEP = 2048 };
    char *deep = malloc(2 * DEEP + 2);
    assert_non_null(deep);
    for (int k = 0; k <= DEEP; k++) {
        memset(deep, '[', (size_t)k);
        memset(deep + k, ']', (size_t)k);
        if (k == DEEP || k == DEEP - 1 || k == 1)
            agree(deep, 2 * (size_t)k, "nesting");
    }
    memset(deep, '[', DEEP + 1);
    memset(deep + DEEP + 1, ']', DEEP + 1);
    assert_null(drv_json_loadb(deep, 2 * DEEP + 2, &err));
    free(deep);
}

/* The key of a document's top value is NULL (json.h), an element's too; a member's is its key.
 * A fresh document parsing text without strings has no text buffer: nothing may point into it
 * (the fuzz target's crash under UBSan was a key made from the NULL text). */
static void test_document_keys(void **unused)
{
    (void)unused;
    drv_jdoc doc;
    drv_jdoc_init(&doc);
    assert_int_equal(drv_jdoc_parse(&doc, "[1,{}]", 6, NULL, NULL, NULL), 0);
    assert_int_equal(doc.n, 3);
    for (int32_t i = 0; i < doc.n; i++)
        assert_null(doc.v[i].key);
    const char *t = "{\"a\":[\"x\",{\"b\":1}]}";
    assert_int_equal(drv_jdoc_parse(&doc, t, strlen(t), NULL, NULL, NULL), 0);
    assert_null(doc.v[0].key);
    int32_t a = drv_jdoc_get(&doc, 0, "a");
    assert_string_equal(doc.v[a].key, "a");
    int32_t x = doc.v[a].child, o = doc.v[x].next;
    assert_null(doc.v[x].key);
    assert_null(doc.v[o].key);
    assert_string_equal(doc.v[drv_jdoc_get(&doc, o, "b")].key, "b");
    drv_jdoc_fini(&doc);
}

/* The body of a recorded answer (after the blank line that ends the headers), malloc'd. */
static char *body_of(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *all = malloc((size_t)len + 1);
    if (!all || fread(all, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        free(all);
        return NULL;
    }
    fclose(f);
    all[len] = 0;
    const char *b = strstr(all, "\r\n\r\n");
    size_t skip = b ? (size_t)(b - all) + 4 : (b = strstr(all, "\n\n")) ? (size_t)(b - all) + 2 : 0;
    *n = (size_t)len - skip;
    memmove(all, all + skip, *n + 1);
    return all;
}

static void test_recorded_answers_and_their_mutations_agree(void **unused)
{
    (void)unused;
    static const char bytes[] = "\"\\{}[],:0-+.eEuU \n\t1tfnl\x80\xc3\xa9\xed\xff";
    char root[600];
    snprintf(root, sizeof root, "%s/transcripts", FIXTURE_DIR);
    DIR *dir = opendir(root);
    assert_non_null(dir);
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    long answers = 0, accepted = 0, mutants = 0, mutants_accepted = 0;
    for (struct dirent *de; (de = readdir(dir));) {
        if (de->d_name[0] == '.')
            continue;
        char path[1200];
        size_t n;
        snprintf(path, sizeof path, "%s/%s/response.txt", root, de->d_name);
        char *body = body_of(path, &n);
        if (!body || n == 0) {
            free(body);
            continue;
        }
        answers++;
        accepted += agree(body, n, de->d_name);
        char *m = malloc(n + 1);
        assert_non_null(m);
        for (int k = 0; k < 300; k++) {
            size_t at = (size_t)(tu_rnd(&rng) % n), len = n;
            memcpy(m, body, n);
            switch (tu_rnd(&rng) % 4) {
            case 0:
            case 1: /* a byte replaced by one that matters to JSON */
                m[at] = bytes[tu_rnd(&rng) % (sizeof bytes - 1)];
                break;
            case 2: /* a byte dropped */
                memmove(m + at, m + at + 1, n - at - 1);
                len = n - 1;
                break;
            default: /* cut short */
                len = at;
                break;
            }
            mutants++;
            mutants_accepted += agree(m, len, de->d_name);
        }
        free(m);
        free(body);
    }
    closedir(dir);
    /* the recorded answers are JSON (but watch streams, several values: refused by both) and
     * the mutations reached both sides of the grammar */
    assert_true(answers >= 50);
    assert_true(accepted >= answers * 3 / 4);
    assert_true(mutants_accepted > mutants / 20);
    assert_true(mutants_accepted < mutants - mutants / 20);
    print_message("%ld answers (%ld JSON), %ld mutants (%ld accepted by both)\n", answers, accepted,
                  mutants, mutants_accepted);
}

/* Out of memory where the parser allocates itself (long escaped strings and escaped keys):
 * NULL, said so, nothing leaked (the sanitizer build checks). */
static void test_failing_allocations(void **unused)
{
    (void)unused;
    char text[1200];
    int w = snprintf(text, sizeof text, "{\"k\\u0041\":\"");
    for (int i = 0; i < 300; i++)
        w += snprintf(text + w, sizeof text - (size_t)w, "\\n");
    snprintf(text + w, sizeof text - (size_t)w,
             "\",\"n\":1234567890123456789012345678901234567890123456789012345678901234567890.5}");
    json_error_t err;
    int failed = 0;
    for (long nth = 1; nth < 10; nth++) {
        drv_alloc_fail_at(nth);
        json_t *v = drv_json_loadb(text, strlen(text), &err);
        long pending = drv_alloc_fail_pending();
        drv_alloc_fail_at(0);
        if (pending > 0) { /* fewer allocations than nth: it succeeded */
            assert_non_null(v);
            json_decref(v);
            break;
        }
        assert_null(v);
        assert_string_equal(err.text, "out of memory");
        assert_int_equal(json_error_code(&err), json_error_out_of_memory);
        failed++;
    }
    assert_true(failed >= 3); /* the key, the string, the number's copy */
    json_t *v = drv_json_loadb(text, strlen(text), &err);
    assert_non_null(v);
    assert_int_equal(strlen(json_string_value(json_object_get(v, "kA"))), 300);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges_agree_with_jansson),
        cmocka_unit_test(test_values_by_hand),
        cmocka_unit_test(test_document_keys),
        cmocka_unit_test(test_recorded_answers_and_their_mutations_agree),
        cmocka_unit_test(test_failing_allocations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
