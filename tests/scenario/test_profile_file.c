/* Profiles from YAML (profile_file.c): same result as a profile line; errors name the key. */
#include "scenario.h"

static void test_file_equals_line(void **unused)
{
    (void)unused;
    drv_profile *v = NULL, p;
    int n = 0;
    drv_diag d = {{0}};
    assert_int_equal(
        drv_profile_file_load(tu_path("tests/fixtures/policy/profiles.yaml"), &v, &n, &d), 0);
    assert_int_equal(n, 2);
    assert_int_equal(drv_profile_parse("mine",
                                       "gang=true period=5 queue_order=priority(w_par=0) "
                                       "admit=dragon scale=dragon score=locality*3,least-allocated",
                                       &p, &d),
                     0);
    assert_string_equal(v[0].name, "mine");
    assert_string_equal(v[0].doc, "priority without parallelism, DRAGON, locality");
    snprintf(p.doc, sizeof p.doc, "%s", v[0].doc);
    assert_memory_equal(&v[0], &p, sizeof p);
    assert_string_equal(v[1].name, "plain");
    drv_free(v);
}

static void test_errors_name_the_key(void **unused)
{
    (void)unused;
    drv_profile *v = NULL;
    int n = 0;
    drv_diag d = {{0}};
    assert_int_equal(
        drv_profile_file_load(tu_path("tests/fixtures/policy/bad-key.yaml"), &v, &n, &d),
        DRV_EINVAL);
    assert_non_null(strstr(d.msg, "bad-key.yaml:4: profiles[0]: unknown field 'sccore'"));
    assert_int_equal(
        drv_profile_file_load(tu_path("tests/fixtures/policy/bad-plugin.yaml"), &v, &n, &d),
        DRV_ENOENT);
    assert_non_null(strstr(d.msg, "bad-plugin.yaml:2: profiles[0]"));
    assert_non_null(strstr(d.msg, "unknown plugin 'nope'"));
    /* Knobs are checked when the scheduler is created, naming the knob. */
    assert_int_equal(
        drv_profile_file_load(tu_path("tests/fixtures/policy/bad-knob.yaml"), &v, &n, &d), 0);
    drv_sched *s = NULL;
    assert_int_equal(drv_sched_new(&v[0], &s, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "unknown knob 'quiett'"));
    drv_free(v);
    assert_int_equal(
        drv_profile_file_load(tu_path("tests/fixtures/policy/missing.yaml"), &v, &n, &d) < 0, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_equals_line),
        cmocka_unit_test(test_errors_name_the_key),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
