/*
 * ctrl_fixture.c - the shared part of the `drover run` end-to-end tests (ctrl_fixture.h).
 */
#include "ctrl_fixture.h"

#include "drover/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void *run_main(void *arg)
{
    runner *r = arg;
    r->rc = drv_ctrl_run(r->c, &r->stop, &r->d);
    return NULL;
}

void start(fixture *f, runner *r)
{
    start_profile(f, r, "gang-fifo");
}

void start_profile(fixture *f, runner *r, const char *profile)
{
    drv_profile prof;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_builtin(profile, &prof, &d), 0);
    drv_ctrl_opts o = {.profile = &prof};
    memset(r, 0, sizeof *r);
    r->cfg = f->cfg;
    r->cfg.component = "run"; /* told apart from the test's own requests (rbac_check.h) */
    assert_int_equal(drv_ctrl_new(&r->c, &r->cfg, &o, &d), 0);
    assert_int_equal(pthread_create(&r->t, NULL, run_main, r), 0);
}

void stop(runner *r)
{
    r->stop = 1;
    pthread_join(r->t, NULL);
    assert_int_equal(r->rc, 0);
    drv_ctrl_free(r->c);
}

void req(fixture *f, const char *method, const char *path, const char *fmt, ...)
{
    char body[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    drv_diag d = {{0}};
    long status = 0;
    const char *ctype = strcmp(method, "PATCH") == 0 ? "application/merge-patch+json" : NULL;
    if (drv_kube_request(f->k, method, path, ctype, body[0] ? body : NULL, &status, NULL, &d))
        fail_msg("%s %s: %s", method, path, d.msg);
}

json_t *get(fixture *f, const char *fmt, ...)
{
    char path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    drv_diag d = {{0}};
    json_t *o = NULL;
    long status = 0;
    if (drv_kube_request(f->k, "GET", path, NULL, NULL, &status, &o, &d) != 0)
        return NULL;
    return o;
}

void add_node(fixture *f, const char *name, const char *cpu)
{
    req(f, "POST", "/api/v1/nodes",
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},\"spec\":{},"
        "\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"64Gi\",\"pods\":\"110\"},"
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
        name, cpu);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", name);
    req(f, "PATCH", path, "{\"spec\":{\"taints\":null}}");
}
