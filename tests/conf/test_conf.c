/* Tests for src/conf: the YAML tree, typed getters and the file:line messages they give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drover/conf.h"

static int load(drv_conf_doc *doc, const char *text, drv_diag *d)
{
    memset(doc, 0, sizeof *doc);
    return drv_conf_load_string(doc, "t.yaml", text, strlen(text), d);
}

static void test_tree_and_lines(void **unused)
{
    (void)unused;
    drv_conf_doc doc;
    drv_diag d;
    assert_int_equal(
        load(&doc, "nodes:\n  - name: a\n    cpu: 32\n  - name: b\n    cpu: 500m\n", &d), 0);
    drv_conf *nodes = drv_conf_get(doc.root, "nodes");
    assert_non_null(nodes);
    assert_int_equal(nodes->kind, DRV_CONF_SEQ);
    assert_int_equal(nodes->nitems, 2);
    assert_int_equal(nodes->items[1]->line, 4);
    int64_t cpu;
    assert_int_equal(drv_conf_cpu(&doc, drv_conf_get(nodes->items[1], "cpu"), "cpu", &cpu, &d), 0);
    assert_int_equal(cpu, 500);
    drv_conf_doc_fini(&doc);
}

static void test_errors_name_file_line_field(void **unused)
{
    (void)unused;
    drv_conf_doc doc;
    drv_diag d;
    assert_int_equal(load(&doc, "a: 1\nb: lots\n", &d), 0);
    int64_t v;
    assert_int_equal(drv_conf_int(&doc, drv_conf_get(doc.root, "b"), "b", 0, 10, &v, &d),
                     DRV_EINVAL);
    assert_string_equal(d.msg, "t.yaml:2: b: expected a whole number, found 'lots'");
    assert_int_equal(drv_conf_int(&doc, drv_conf_get(doc.root, "a"), "a", 5, 10, &v, &d),
                     DRV_ERANGE);
    assert_non_null(strstr(d.msg, "t.yaml:1: a: 1 is out of range"));
    drv_conf_doc_fini(&doc);

    assert_int_equal(load(&doc, "a: 1\nzz: 2\n", &d), 0);
    drv_conf_get(doc.root, "a");
    assert_int_equal(drv_conf_check_unused(&doc, doc.root, "top", &d), DRV_EINVAL);
    assert_string_equal(d.msg, "t.yaml:2: top: unknown field 'zz'");
    drv_conf_doc_fini(&doc);
}

static void test_malformed_and_duplicates(void **unused)
{
    (void)unused;
    drv_conf_doc doc;
    drv_diag d;
    assert_int_equal(load(&doc, "a: [1, 2\nb: 3\n", &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "t.yaml:"));
    assert_int_equal(load(&doc, "a: 1\na: 2\n", &d), DRV_EPARSE);
    assert_string_equal(d.msg, "t.yaml:2: duplicate key 'a'");
    assert_int_equal(load(&doc, "a: &x 1\nb: *x\n", &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "aliases"));
}

static void test_quantities(void **unused)
{
    (void)unused;
    int64_t v;
    assert_int_equal(drv_parse_cpu("1.5", &v), 0);
    assert_int_equal(v, 1500);
    assert_int_equal(drv_parse_cpu("250m", &v), 0);
    assert_int_equal(v, 250);
    assert_int_equal(drv_parse_cpu("-1", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_cpu("4x", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_mem("128Gi", &v), 0);
    assert_int_equal(v, 128LL << 30);
    assert_int_equal(drv_parse_mem("1G", &v), 0);
    assert_int_equal(v, 1000000000LL);
    assert_int_equal(drv_parse_mem("12Qi", &v), DRV_EINVAL);
}

/* Kubernetes' quantities are decimal: strtod's hex, infinities and spaces are refused, and a
 * value too large for the int64 sums of a cluster is out of range, not undefined behaviour. */
static void test_quantities_strict(void **unused)
{
    (void)unused;
    int64_t v = 7;
    assert_int_equal(drv_parse_cpu("0x10", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_mem("0x10", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_mem("0x10Gi", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_cpu(" 4", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_cpu("inf", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_cpu("nan", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_cpu("", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_cpu(".", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_cpu("1e", &v), DRV_EINVAL);
    assert_int_equal(drv_parse_cpu("1e30", &v), DRV_ERANGE);
    assert_int_equal(drv_parse_mem("5e18", &v), DRV_ERANGE);
    assert_int_equal(drv_parse_mem("1025Ti", &v), DRV_ERANGE);
    assert_int_equal(v, 7); /* untouched on failure */
    assert_int_equal(drv_parse_mem("1024Ti", &v), 0);
    assert_int_equal(v, 1LL << 50);
    assert_int_equal(drv_parse_cpu("1e3", &v), 0);
    assert_int_equal(v, 1000000);
    assert_int_equal(drv_parse_cpu(".5", &v), 0);
    assert_int_equal(v, 500);
    drv_conf_doc doc;
    drv_diag d;
    assert_int_equal(load(&doc, "cpu: 1e30\n", &d), 0);
    assert_int_equal(drv_conf_cpu(&doc, drv_conf_get(doc.root, "cpu"), "nodes[0].cpu", &v, &d),
                     DRV_ERANGE);
    assert_string_equal(d.msg, "t.yaml:1: nodes[0].cpu: 1e30 is more than the largest CPU "
                               "quantity accepted, 1000000000");
    drv_conf_doc_fini(&doc);
}

/* A map of many keys: duplicates are still found (through the table past KEY_SCAN_MAX), and
 * 100,000 keys load (a quadratic scan took a minute for twice as many). */
static void test_many_keys(void **unused)
{
    (void)unused;
    enum { N = 100000 };
    char *text = malloc((size_t)N * 16 + 32);
    assert_non_null(text);
    size_t len = 0;
    for (int i = 0; i < N; i++)
        len += (size_t)sprintf(text + len, "k%d: %d\n", i, i);
    drv_conf_doc doc;
    drv_diag d;
    assert_int_equal(drv_conf_load_string(&doc, "t.yaml", text, len, &d), 0);
    assert_int_equal(doc.root->nitems, N);
    drv_conf_doc_fini(&doc);
    len += (size_t)sprintf(text + len, "k77: dup\n");
    assert_int_equal(drv_conf_load_string(&doc, "t.yaml", text, len, &d), DRV_EPARSE);
    assert_string_equal(d.msg, "t.yaml:100001: duplicate key 'k77'");
    /* the switch from scan to table: a duplicate of an early key just past it */
    const char *small = "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\ng: 7\nh: 8\ni: 9\nb: 10\n";
    assert_int_equal(load(&doc, small, &d), DRV_EPARSE);
    assert_string_equal(d.msg, "t.yaml:10: duplicate key 'b'");
    assert_int_equal(load(&doc, "\"\": 1\na: 2\n\"\": 3\n", &d), DRV_EPARSE);
    assert_string_equal(d.msg, "t.yaml:3: duplicate key ''");
    free(text);
}

static void test_nul_byte_refused(void **unused)
{
    (void)unused;
    drv_conf_doc doc;
    drv_diag d;
    assert_int_equal(drv_conf_load_string(&doc, "t.yaml", "a: 1\nb\0: 2\n", 12, &d), DRV_EPARSE);
    assert_string_equal(d.msg, "t.yaml: byte 6: a NUL byte; expected text");
}

static void test_alloc_failures_do_not_crash(void **unused)
{
    (void)unused;
    const char *text = "x:\n  - {a: 1, b: [2, 3]}\n  - c\n";
    for (int nth = 1; nth < 40; nth++) {
        drv_conf_doc doc;
        drv_diag d;
        drv_alloc_fail_at(nth);
        int rc = load(&doc, text, &d);
        drv_alloc_fail_at(0);
        assert_true(rc == 0 || rc == DRV_ENOMEM);
        if (rc == 0)
            drv_conf_doc_fini(&doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_and_lines),
        cmocka_unit_test(test_errors_name_file_line_field),
        cmocka_unit_test(test_malformed_and_duplicates),
        cmocka_unit_test(test_quantities),
        cmocka_unit_test(test_alloc_failures_do_not_crash),
        cmocka_unit_test(test_quantities_strict),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_nul_byte_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
