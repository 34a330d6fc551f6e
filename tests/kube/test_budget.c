/*
 * test_budget.c - one API budget shared by clients (src/kube/budget.c): request labels, every
 * non-2xx answer counted (retried ones too) in the client and in the budget, and one bucket
 * for all clients. Against the in-memory test API server on loopback.
 */
#include "apiserver.h"
#include "drover/kube.h"
#include "json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void labels(void **state)
{
    (void)state;
    char verb[8], res[48];
    drv_kube_request_labels("POST", "/api/v1/namespaces/default/pods/w-1/binding", verb,
                            sizeof verb, res, sizeof res);
    assert_string_equal(verb, "POST");
    assert_string_equal(res, "pods/binding");
    drv_kube_request_labels("GET", "/api/v1/nodes?limit=500", verb, sizeof verb, res, sizeof res);
    assert_string_equal(verb, "LIST");
    assert_string_equal(res, "nodes");
    drv_kube_request_labels("GET", "/api/v1/pods?watch=1&resourceVersion=5", verb, sizeof verb, res,
                            sizeof res);
    assert_string_equal(verb, "WATCH");
    assert_string_equal(res, "pods");
    drv_kube_request_labels("PUT", "/apis/drover.dev/v1alpha1/namespaces/ml/trainingjobs/a/status",
                            verb, sizeof verb, res, sizeof res);
    assert_string_equal(verb, "PUT");
    assert_string_equal(res, "trainingjobs/status");
    drv_kube_request_labels("GET", "/api/v1/namespaces/ml", verb, sizeof verb, res, sizeof res);
    assert_string_equal(verb, "GET");
    assert_string_equal(res, "namespaces");
    drv_kube_request_labels("GET", "/apis/coordination.k8s.io/v1/namespaces/x/leases/drover", verb,
                            sizeof verb, res, sizeof res);
    assert_string_equal(verb, "GET");
    assert_string_equal(res, "leases");
}

static void every_error_answer_is_counted(void **state)
{
    (void)state;
    drv_apiserver *srv;
    drv_apiserver_opts so = {.fixture_dir = FIXTURE_DIR};
    drv_diag d = {{0}};
    assert_int_equal(drv_apiserver_start(&srv, &so, &d), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(srv));
    drv_kube_budget *b;
    assert_int_equal(drv_kube_budget_new(&b, 1000, 100, &d), 0);
    drv_kube_config cfg = {.server = url, .budget = b, .backoff_ms = 1, .retry_after_max_s = 1};
    drv_kube *k1, *k2;
    assert_int_equal(drv_kube_new(&k1, &cfg, &d), 0);
    assert_int_equal(drv_kube_new(&k2, &cfg, &d), 0);
    long st;
    /* two 429s retried, then served: both counted although the request succeeded */
    drv_apiserver_fail_next(srv, 429, 2, 0);
    assert_int_equal(drv_kube_request(k1, "GET", "/api/v1/nodes", NULL, NULL, &st, NULL, &d), 0);
    assert_int_equal(drv_kube_errors(k1), 2);
    /* a 404 from the other client, not retried */
    assert_int_not_equal(drv_kube_request(k2, "GET", "/api/v1/namespaces/default/pods/nope", NULL,
                                          NULL, &st, NULL, &d),
                         0);
    assert_int_equal(st, 404);
    assert_int_equal(drv_kube_errors(k2), 1);
    assert_int_equal(drv_kube_budget_error_total(b), 3);
    drv_kube_api_errors rows[4];
    assert_int_equal(drv_kube_budget_errors(b, rows, 4), 2);
    assert_int_equal(rows[0].code, 429);
    assert_string_equal(rows[0].verb, "LIST");
    assert_string_equal(rows[0].resource, "nodes");
    assert_int_equal(rows[0].n, 2);
    assert_int_equal(rows[1].code, 404);
    assert_string_equal(rows[1].verb, "GET");
    assert_string_equal(rows[1].resource, "pods");
    drv_kube_free(k1);
    drv_kube_free(k2);
    drv_kube_budget_free(b);
    drv_apiserver_free(srv);
}

/* Two clients on one budget of burst 4 and 1 qps: the fifth token waits about a second, as
 * the bucket says (the wait is computed, not timed). */
static void one_bucket_for_all(void **state)
{
    (void)state;
    drv_kube_budget *b;
    drv_diag d = {{0}};
    assert_int_equal(drv_kube_budget_new(&b, 1, 4, &d), 0);
    for (int i = 0; i < 4; i++)
        assert_true(drv_kube_budget_take(b) == 0);
    double wait = drv_kube_budget_take(b);
    assert_true(wait > 0.5 && wait <= 1.0);
    drv_kube_budget_free(b);
    assert_int_equal(drv_kube_budget_new(&b, 0, 4, &d), DRV_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(labels),
        cmocka_unit_test(every_error_answer_is_counted),
        cmocka_unit_test(one_bucket_for_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
