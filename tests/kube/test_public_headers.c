/*
 * The public Kubernetes headers need no jansson (issue 11): this file includes every one of
 * them and fails to compile if any pulls jansson.h in. It then uses a little of the API that
 * needs no JSON, so a program outside src/kube can build against these headers alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "drover/kube.h"
#include "drover/controller.h"
#include "drover/emulator.h"
#include "drover/kube_informer.h"
#include "drover/kube_metrics.h"
#include "drover/kube_types.h"
#include "drover/kube_watch.h"
#include "drover/kube_workqueue.h"

#ifdef JANSSON_H
#error "a public header under include/drover/ includes jansson.h"
#endif

static void test_api_without_json(void **unused)
{
    (void)unused;
    int64_t m = 0;
    assert_int_equal(drv_kube_quantity_milli("1500m", &m), 0);
    assert_true(m == 1500);
    drv_watch_decoder w;
    drv_watch_decoder_init(&w, "pods");
    drv_diag d = {{0}};
    assert_int_equal(drv_watch_decoder_finish(&w, &d), 0); /* nothing fed: nothing left */
    drv_watch_decoder_fini(&w);
    assert_string_equal(drv_watch_type_name(DRV_WATCH_DELETED), "DELETED");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_api_without_json)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
