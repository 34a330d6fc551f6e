/*
 * The one profile lookup of the drover command (src/cli/profiles.c): a --profiles file overrides
 * a built-in of the same name for a single name and for `all`; unknown names list the file's
 * too; a profile written back as a line parses to the same profile; docs lose the seed numbers;
 * a failing allocation leaves the outputs untouched.
 */
#include "cli.h"

#include "drover/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* A profiles file in /tmp with text; its path in buf. */
static const char *write_file(char *buf, size_t n, const char *text)
{
    snprintf(buf, n, "/tmp/drover-test-profiles-XXXXXX");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return buf;
}

/* Defines k8s-default anew (as gang-fifo's line) and one new profile. */
static const char overriding[] = "profiles:\n"
                                 "  - name: mine\n"
                                 "    admit: gang\n"
                                 "  - name: k8s-default\n"
                                 "    doc: replaced\n"
                                 "    period: 7\n"
                                 "    queue_order: fifo\n"
                                 "    admit: gang\n";

static void test_file_overrides_builtin(void **unused)
{
    (void)unused;
    char path[64];
    drv_diag d = {{0}};
    cli_profiles ps;
    write_file(path, sizeof path, overriding);
    assert_int_equal(cli_profiles_load(&ps, path, &d), 0);
    assert_int_equal(ps.nfile, 2);
    drv_profile p;
    assert_int_equal(cli_profile_find(&ps, "k8s-default", &p, &d), 0);
    assert_string_equal(p.doc, "replaced");
    assert_true(p.period == 7);
    assert_true(cli_profile_overridden(&ps, "k8s-default"));
    assert_false(cli_profile_overridden(&ps, "gang-fifo"));
    assert_false(cli_profile_overridden(&ps, "mine")); /* not a built-in: nothing replaced */

    /* `all`: each name once; the override in the built-in's place, the new one last. */
    drv_profile *v = NULL;
    int n = 0;
    assert_int_equal(cli_profiles_resolve(&ps, "all", &v, &n, &d), 0);
    assert_int_equal(n, drv_profile_builtin_count() + 1);
    assert_string_equal(v[0].name, "k8s-default");
    assert_true(v[0].period == 7);
    for (int i = 1; i < drv_profile_builtin_count(); i++)
        assert_string_equal(v[i].name, drv_profile_builtin_name(i));
    assert_string_equal(v[n - 1].name, "mine");
    drv_free(v);

    /* A list: in its order, repeats allowed. */
    assert_int_equal(cli_profiles_resolve(&ps, "mine,gang-fifo,k8s-default", &v, &n, &d), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].name, "mine");
    assert_string_equal(v[1].name, "gang-fifo");
    assert_true(v[2].period == 7);
    drv_free(v);
    cli_profiles_fini(&ps);
    unlink(path);

    /* Without a file, the built-in. */
    assert_int_equal(cli_profiles_load(&ps, NULL, &d), 0);
    assert_int_equal(cli_profile_find(&ps, "k8s-default", &p, &d), 0);
    assert_true(p.period == 1);
    cli_profiles_fini(&ps);
}

static void test_unknown_names(void **unused)
{
    (void)unused;
    char path[64];
    drv_diag d = {{0}};
    cli_profiles ps;
    write_file(path, sizeof path, overriding);
    assert_int_equal(cli_profiles_load(&ps, path, &d), 0);
    drv_profile p;
    assert_int_equal(cli_profile_find(&ps, "fastest", &p, &d), DRV_ENOENT);
    assert_non_null(strstr(d.msg, "unknown policy 'fastest' (known: k8s-default, gang-fifo"));
    assert_non_null(strstr(d.msg, ", drover, mine)"));
    drv_profile *v = (drv_profile *)&p, *keep = v;
    int n = -1;
    assert_int_equal(cli_profiles_resolve(&ps, "gang-fifo,fastest", &v, &n, &d), DRV_ENOENT);
    assert_ptr_equal(v, keep);
    assert_int_equal(n, -1);
    assert_int_equal(cli_profiles_resolve(&ps, ",,", &v, &n, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "no policy named"));
    /* A policy named twice is refused, not run twice. */
    assert_int_equal(cli_profiles_resolve(&ps, "drover,gang-fifo,drover", &v, &n, &d), DRV_EINVAL);
    assert_string_equal(d.msg, "'drover' is named twice (name each policy once)");
    assert_ptr_equal(v, keep);
    cli_profiles_fini(&ps);
    unlink(path);
    /* A bad file: nothing loaded, the message names the file. */
    write_file(path, sizeof path, "profiles:\n  - name: x\n    sccore: gang\n");
    assert_true(cli_profiles_load(&ps, path, &d) < 0);
    assert_non_null(strstr(d.msg, path));
    assert_int_equal(ps.nfile, 0);
    assert_null(ps.file);
    unlink(path);
}

/* Two ways to the same profile: the built-in line, and the line written back from it. */
static void test_line_reads_back(void **unused)
{
    (void)unused;
    drv_diag d = {{0}};
    for (int i = 0; i < drv_profile_builtin_count(); i++) {
        drv_profile a, b;
        char line[2048];
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        assert_int_equal(
            drv_profile_parse(drv_profile_builtin_name(i), drv_profile_builtin_line(i), &a, &d), 0);
        drv_profile_format(&a, line, sizeof line);
        assert_int_equal(drv_profile_parse(a.name, line, &b, &d), 0);
        assert_memory_equal(&a, &b, sizeof a);
    }
    /* Knob values that %g would round. */
    drv_profile a, b;
    char line[2048];
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    assert_int_equal(drv_profile_parse("x", "period=0.3 admit=dragon(quiet=61.123456789)", &a, &d),
                     0);
    drv_profile_format(&a, line, sizeof line);
    assert_non_null(strstr(line, "quiet=61.123456789"));
    assert_int_equal(drv_profile_parse("x", line, &b, &d), 0);
    assert_memory_equal(&a, &b, sizeof a);
    /* A short buffer cuts the line, never overruns it. */
    char small[12];
    memset(small, 'z', sizeof small);
    drv_profile_format(&a, small, 8);
    assert_int_equal(strlen(small), 7);
    assert_int_equal(small[8], 'z');
}

/* No built-in profile or plugin doc carries a design-note seed number ("seed 001"): a user knows
 * the systems by name. */
static void test_docs_name_systems(void **unused)
{
    (void)unused;
    for (int i = 0; i < drv_profile_builtin_count(); i++)
        assert_null(strstr(drv_profile_builtin_doc(i), "seed 0"));
    int n;
    const drv_plugin *const *ps = drv_plugins(&n);
    for (int i = 0; i < n; i++)
        assert_null(strstr(ps[i]->doc, "seed 0"));
}

/* Every allocation of resolve may fail: DRV_ENOMEM, outputs untouched, nothing leaked (ASan). */
static void test_failing_allocation(void **unused)
{
    (void)unused;
    drv_diag d = {{0}};
    cli_profiles ps;
    assert_int_equal(cli_profiles_load(&ps, NULL, &d), 0);
    int failures = 0;
    bool done = false;
    for (long nth = 1; nth < 100 && !done; nth++) {
        drv_profile *v = NULL;
        int n = -1;
        drv_alloc_fail_at(nth);
        int rc = cli_profiles_resolve(&ps, "gang-fifo,drover", &v, &n, &d);
        drv_alloc_fail_at(0);
        if (rc == 0) {
            assert_int_equal(n, 2);
            drv_free(v);
            done = true;
            continue;
        }
        assert_int_equal(rc, DRV_ENOMEM);
        assert_null(v);
        assert_int_equal(n, -1);
        failures++;
    }
    assert_true(done);
    assert_true(failures >= 2); /* at least the list and its copy */
    cli_profiles_fini(&ps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_overrides_builtin), cmocka_unit_test(test_unknown_names),
        cmocka_unit_test(test_line_reads_back),        cmocka_unit_test(test_docs_name_systems),
        cmocka_unit_test(test_failing_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
