/*
 * test_writer.c - the writer behind a burst of pod requests (src/ctrl/ctrl_writer.c,
 * ctrl_writer_follow), against the in-memory API server on loopback, counting the PATCHes it
 * served: while the burst is on, nothing is written and the statuses asked replace each other,
 * so each object gets one PATCH, the last status asked, once the burst ends. Without the hold
 * (burst not followed) the first status goes at once and the object gets two. An Event is
 * kept as text while held, and the body sent is drv_kube_event_json's for that text.
 */
#include "apiserver.h"
#include "ctrl_writer.h"
#include "json.h"

#include "../wait.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define TJ "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/"

typedef struct fixture {
    drv_apiserver *srv;
    drv_kube_config cfg;
    char url[64];
    drv_kube_budget *budget;
    ctrl_counters counters;
    ctrl_writer w;
    atomic_int burst;
} fixture;

static fixture *open_writer(bool follow)
{
    fixture *f = calloc(1, sizeof *f);
    drv_diag d = {{0}};
    drv_apiserver_opts o = {.fixture_dir = FIXTURE_DIR, .crd_installed = true};
    assert_int_equal(drv_apiserver_start(&f->srv, &o, &d), 0);
    drv_apiserver_keep_writes(f->srv);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u", drv_apiserver_port(f->srv));
    assert_int_equal(drv_kube_budget_new(&f->budget, 1e6, 1000000, &d), 0);
    f->cfg = (drv_kube_config){.server = f->url, .retries = -1, .budget = f->budget};
    assert_int_equal(ctrl_counters_init(&f->counters, NULL, f->budget, "test", &d), 0);
    drv_kube *k = NULL;
    assert_int_equal(drv_kube_new(&k, &f->cfg, &d), 0);
    for (const char *const *name = (const char *const[]){"a", "b", NULL}; *name; name++) {
        char body[600];
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\","
                 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{"
                 "\"replicaSpecs\":{\"Worker\":{\"replicas\":1,\"template\":{\"spec\":{"
                 "\"containers\":[{\"name\":\"w\",\"image\":\"x\"}]}}}}}}",
                 *name);
        long status = 0;
        int rc =
            drv_kube_request(k, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
                             NULL, body, &status, NULL, &d);
        if (rc != 0)
            fail_msg("%s", d.msg);
    }
    drv_kube_free(k);
    assert_int_equal(ctrl_writer_init(&f->w, &f->cfg, &f->counters, true, "drover", &d), 0);
    atomic_init(&f->burst, 1); /* a burst on from the start */
    if (follow)
        ctrl_writer_follow(&f->w, &f->burst);
    assert_int_equal(ctrl_writer_start(&f->w, &d), 0);
    return f;
}

static void close_writer(fixture *f)
{
    ctrl_writer_stop(&f->w);
    ctrl_writer_fini(&f->w);
    ctrl_counters_fini(&f->counters);
    drv_kube_budget_free(f->budget);
    drv_apiserver_free(f->srv);
    free(f);
}

static void ask(fixture *f, int32_t key, const char *name, const char *phase)
{
    status_request r;
    ctrl_status_trainingjob(&r, "default", name, "", phase, "");
    assert_true(ctrl_writer_status(&f->w, key, &r));
}

/* Status PATCHes the server saw for job `name`; *last: whether the last says phase. */
static int patches(fixture *f, const char *name, const char *phase, bool *last)
{
    char path[200];
    snprintf(path, sizeof path, TJ "%s/status", name);
    drv_apiserver_write *w = NULL;
    int32_t n = drv_apiserver_writes(f->srv, &w);
    assert_true(n >= 0);
    int count = 0;
    for (int32_t i = 0; i < n; i++)
        if (!strcmp(w[i].method, "PATCH") && !strcmp(w[i].path, path)) {
            count++;
            char want[64];
            snprintf(want, sizeof want, "\"phase\":\"%s\"", phase);
            *last = strstr(w[i].body, want) != NULL;
        }
    drv_apiserver_writes_free(w, n);
    return count;
}

/* PATCHes the server served so far. */
static long answered(fixture *f)
{
    drv_apiserver_write *w = NULL;
    int32_t n = drv_apiserver_writes(f->srv, &w);
    assert_true(n >= 0);
    long count = 0;
    for (int32_t i = 0; i < n; i++)
        count += !strcmp(w[i].method, "PATCH");
    drv_apiserver_writes_free(w, n);
    return count;
}

/* Gives the writer a chance to write what it has (it does at once unless held): polls for a
 * first answer, 300 ms at most; no assertion on it. */
static void let_it_write(fixture *f)
{
    struct timespec t = {0, 10000000};
    for (int i = 0; i < 30 && answered(f) == 0; i++)
        nanosleep(&t, NULL);
}

/* Two statuses of each of two jobs asked during a burst: one PATCH each, the last asked. */
static void run(bool follow, int want_a)
{
    fixture *f = open_writer(follow);
    ask(f, 1, "a", "Pending");
    let_it_write(f);
    ask(f, 1, "a", "Running");
    ask(f, 2, "b", "Pending");
    ask(f, 2, "b", "Running");
    atomic_store(&f->burst, 0); /* the gang's pods are answered */
    WAIT_FOR(answered(f) >= want_a + 1);
    bool last_a = false, last_b = false;
    assert_int_equal(patches(f, "a", "Running", &last_a), want_a);
    assert_int_equal(patches(f, "b", "Running", &last_b), 1);
    assert_true(last_a && last_b);
    close_writer(f);
}

static void test_burst_coalesces_statuses(void **unused)
{
    (void)unused;
    run(true, 1);
}

/* The server's count the test above reads, without the hold: a status asked once the last was
 * written is a PATCH of its own. */
static void test_without_hold_each_goes(void **unused)
{
    (void)unused;
    fixture *f = open_writer(false);
    ask(f, 1, "a", "Pending");
    WAIT_FOR(answered(f) >= 1);
    ask(f, 1, "a", "Running");
    WAIT_FOR(answered(f) >= 2);
    bool last = false;
    assert_int_equal(patches(f, "a", "Running", &last), 2);
    assert_true(last);
    close_writer(f);
}

/* The server's body of the first Event POSTed (parsed), or NULL. */
static json_t *sent_event(fixture *f)
{
    drv_apiserver_write *w = NULL;
    int32_t n = drv_apiserver_writes(f->srv, &w);
    assert_true(n >= 0);
    json_t *o = NULL;
    for (int32_t i = 0; i < n && !o; i++)
        if (!strcmp(w[i].method, "POST") && !strcmp(w[i].path, "/api/v1/namespaces/default/events"))
            o = json_loads(w[i].body, 0, NULL);
    drv_apiserver_writes_free(w, n);
    return o;
}

/* An Event asked during a burst is queued as its text (nothing rendered on the scheduler
 * thread); what is sent once the burst ends is the body drv_kube_event_json makes of that text
 * (its name's unique suffix aside). */
static void test_event_rendered_when_sent(void **unused)
{
    (void)unused;
    fixture *f = open_writer(true);
    f->w.no_events = false;
    ctrl_ref about = ctrl_ref_trainingjob("default", "a", "u-1");
    char msg[3000]; /* (longer than any buffer of the note: the message goes whole) */
    memset(msg, 'x', sizeof msg - 1);
    msg[sizeof msg - 1] = 0;
    const char *head = "spec.x: expected \"y\" ";
    memcpy(msg, head, strlen(head)); /* (its NUL not copied) */
    ctrl_writer_event(&f->w, &about, "Warning", "Invalid", msg);
    pthread_mutex_lock(&f->w.mu);
    assert_int_equal(f->w.nevents, 1);
    assert_non_null(f->w.events[0].note); /* text, not JSON, while the burst holds it */
    assert_null(f->w.events[0].body);
    pthread_mutex_unlock(&f->w.mu);
    atomic_store(&f->burst, 0);
    WAIT_FOR(ctrl_counters_stats(&f->counters).events >= 1);
    json_t *got = sent_event(f);
    assert_non_null(got);
    const char *now = json_string_value(json_object_get(got, "lastTimestamp"));
    assert_non_null(now);
    char *body = drv_kube_event_json("default", "TrainingJob", "drover.dev/v1alpha1", "a", "u-1",
                                     "Warning", "Invalid", msg, now, "drover");
    json_t *want = json_loads(body, 0, NULL);
    assert_non_null(want);
    json_object_del(json_object_get(got, "metadata"), "name");
    json_object_del(json_object_get(want, "metadata"), "name");
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    free(body);
    close_writer(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_coalesces_statuses),
        cmocka_unit_test(test_without_hold_each_goes),
        cmocka_unit_test(test_event_rendered_when_sent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
