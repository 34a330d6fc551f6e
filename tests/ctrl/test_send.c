/*
 * test_send.c - the binder threads' bounded rings (src/ctrl/ctrl_send.c) at their bound,
 * against the in-memory API server on loopback: requests beyond a ring's capacity wait staged,
 * none is answered failed for want of room (back-pressure, not loss), and each is sent once the
 * thread has taken enough, in the order submitted.
 */
#include "apiserver.h"
#include "ctrl_send.h"

#include "drover/clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

enum { CAP = 4, EXTRA = 3 }; /* a ring of 4, and 3 more requests than it holds */

typedef struct fixture {
    drv_apiserver *srv;
    drv_kube_config cfg;
    char url[64];
    ctrl_events events;
    ctrl_names names;
    ctrl_send send;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    drv_diag d = {{0}};
    drv_apiserver_opts o = {.fixture_dir = FIXTURE_DIR};
    assert_int_equal(drv_apiserver_start(&f->srv, &o, &d), 0);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u", drv_apiserver_port(f->srv));
    f->cfg.server = f->url;
    f->cfg.qps = 1e6;
    f->cfg.burst = 1000000;
    assert_int_equal(ctrl_events_init(&f->events), 0);
    assert_int_equal(ctrl_names_init(&f->names, "drover"), 0);
    assert_int_equal(ctrl_send_init(&f->send, &f->cfg, 1, CAP, &f->events, &f->names, &d), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ctrl_send_stop(&f->send);
    ctrl_send_fini(&f->send);
    ctrl_names_fini(&f->names);
    ctrl_events_fini(&f->events);
    drv_apiserver_free(f->srv);
    free(f);
    return 0;
}

/* The deletion of pod p<slot> (none exists: answered 404, which a deletion counts as done). */
static bind_request deletion(int32_t slot)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/p%d", (int)slot);
    char *own = drv_strdup(path);
    return (bind_request){
        .slot = slot, .node = -1, .request = REQ_DELETE, .path = own, .pod_path = own};
}

/* CAP + EXTRA deletions submitted with no thread running: CAP wait in the urgent ring, EXTRA
 * staged, none answered. Then one thread runs, and each flush (as the loop's send phase after
 * each batch of answers) hands over what the ring has room for: every request is answered
 * done, once, in the order submitted. */
static void test_beyond_the_bound_waits_staged(void **state)
{
    fixture *f = *state;
    for (int32_t i = 0; i < CAP + EXTRA; i++) {
        bind_request r = deletion(i);
        assert_int_equal(ctrl_send_submit(&f->send, &r), 0);
    }
    assert_int_equal(f->send.ring[SEND_URGENT].n, CAP);
    assert_int_equal(ctrl_send_staged(&f->send), EXTRA);
    ctrl_send_flush(&f->send); /* (the ring is full: nothing moves) */
    assert_int_equal(ctrl_send_staged(&f->send), EXTRA);
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    assert_int_equal(ctrl_events_take(&f->events, &batch, &cap, 0), 0); /* none answered */

    drv_diag d = {{0}};
    assert_int_equal(ctrl_send_start(&f->send, &d), 0);
    int32_t got = 0;
    for (int round = 0; round < 3000 && got < CAP + EXTRA; round++) {
        int32_t n = ctrl_events_take(&f->events, &batch, &cap, drv_clock_mono() + 0.01);
        for (int32_t k = 0; k < n; k++) {
            assert_int_equal(batch[k].kind, EV_ANSWER);
            assert_int_equal(batch[k].u.answer.request, REQ_DELETE);
            assert_true(batch[k].u.answer.ok);
            assert_int_equal(batch[k].u.answer.status, 404); /* sent, not dropped */
            assert_int_equal(batch[k].u.answer.slot, got++);
        }
        ctrl_send_flush(&f->send);
    }
    assert_int_equal(got, CAP + EXTRA);
    assert_int_equal(ctrl_send_staged(&f->send), 0);
    assert_int_equal(f->send.ring[SEND_URGENT].n, 0);
    drv_free(batch);
}

/* What is staged for want of room when this controller stops leading is answered as dropped
 * with the rest: nothing is left out, nothing is sent. */
static void test_dropped_with_the_staged(void **state)
{
    fixture *f = *state;
    for (int32_t i = 0; i < CAP + EXTRA; i++) {
        bind_request r = deletion(i);
        assert_int_equal(ctrl_send_submit(&f->send, &r), 0);
    }
    long before = drv_apiserver_requests(f->srv);
    ctrl_send_drop(&f->send);
    assert_int_equal(ctrl_send_staged(&f->send), 0);
    assert_int_equal(f->send.ring[SEND_URGENT].n, 0);
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    int32_t n = ctrl_events_take(&f->events, &batch, &cap, 0);
    assert_int_equal(n, CAP + EXTRA);
    bool seen[CAP + EXTRA] = {false};
    for (int32_t k = 0; k < n; k++) {
        assert_false(batch[k].u.answer.ok);
        assert_int_equal(batch[k].u.answer.status, 0); /* never sent */
        seen[batch[k].u.answer.slot] = true;
    }
    for (int32_t i = 0; i < CAP + EXTRA; i++)
        assert_true(seen[i]);
    assert_int_equal(drv_apiserver_requests(f->srv), before);
    drv_free(batch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_beyond_the_bound_waits_staged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_with_the_staged, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
