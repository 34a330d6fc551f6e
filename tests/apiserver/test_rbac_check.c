/*
 * The RBAC checker (rbac_check.h) on hand-made manifests and request logs: the attributes
 * kube-apiserver derives from each kind of request, a granted and a refused request of each
 * kind of rule (cluster-wide, namespaced, by name, subresource, non-resource URL), other
 * agents ignored, bad input named, every allocation failure reported.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "rbac_check.h"

#include <sys/stat.h>

static const char RUN_RBAC[] =
    "apiVersion: v1\n"
    "kind: ServiceAccount\n"
    "metadata: {name: sched, namespace: sys}\n"
    "---\n"
    "apiVersion: rbac.authorization.k8s.io/v1\n"
    "kind: ClusterRole\n"
    "metadata: {name: sched}\n"
    "rules:\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [pods]\n"
    "    verbs: [get, list, watch, create]\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [pods/binding]\n"
    "    verbs: [create]\n"
    "  - apiGroups: [drover.dev]\n"
    "    resources: [trainingjobs/status]\n"
    "    verbs: [patch]\n"
    "  - apiGroups: [apps]\n"
    "    resources: [\"*/scale\"]\n"
    "    verbs: [update]\n"
    "---\n"
    "kind: ClusterRoleBinding\n"
    "metadata: {name: sched}\n"
    "roleRef: {kind: ClusterRole, name: sched}\n"
    "subjects: [{kind: ServiceAccount, name: sched, namespace: sys}]\n"
    "---\n"
    "kind: ClusterRole\n"
    "metadata: {name: reader}\n"
    "rules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get]}]\n"
    "---\n"
    "kind: RoleBinding\n"
    "metadata: {name: reader, namespace: team}\n"
    "roleRef: {kind: ClusterRole, name: reader}\n"
    "subjects: [{kind: ServiceAccount, name: sched, namespace: sys}]\n"
    "---\n"
    "kind: Role\n"
    "metadata: {name: lease, namespace: sys}\n"
    "rules:\n"
    "  - {apiGroups: [coordination.k8s.io], resources: [leases], resourceNames: [me],\n"
    "     verbs: [get, list, update]}\n"
    "  - {apiGroups: [coordination.k8s.io], resources: [leases], resourceNames: [me],\n"
    "     verbs: [create]}\n"
    "---\n"
    "kind: RoleBinding\n"
    "metadata: {name: lease, namespace: sys}\n"
    "roleRef: {kind: Role, name: lease}\n"
    "subjects: [{kind: ServiceAccount, name: sched, namespace: sys}]\n"
    "---\n"
    "kind: ClusterRole\n"
    "metadata: {name: unbound}\n"
    "rules: [{apiGroups: [\"*\"], resources: [\"*\"], verbs: [\"*\"]}]\n";

static const char EMU_RBAC[] =
    "kind: ServiceAccount\n"
    "metadata: {name: emu, namespace: sys}\n"
    "---\n"
    "kind: ClusterRole\n"
    "metadata: {name: emu}\n"
    "rules:\n"
    "  - {apiGroups: [\"\"], resources: [nodes/status], verbs: [patch]}\n"
    "  - {apiGroups: [\"\"], resources: [pods], verbs: [deletecollection]}\n"
    "  - {nonResourceURLs: [/metrics, \"/debug/*\"], verbs: [get]}\n"
    "---\n"
    "kind: ClusterRoleBinding\n"
    "metadata: {name: emu}\n"
    "roleRef: {kind: ClusterRole, name: emu}\n"
    "subjects: [{kind: ServiceAccount, name: emu, namespace: sys}]\n";

/* A source tree in a temporary directory whose deploy/ holds the two manifests. */
static void make_tree(char *dir, size_t cap, const char *run, const char *emu)
{
    snprintf(dir, cap, "rbac_check.XXXXXX"); /* in the test's working directory */
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/deploy", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    const char *text[] = {run, emu}, *name[] = {"rbac.yaml", "emulate-rbac.yaml"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/deploy/%s", dir, name[i]);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text[i], f);
        fclose(f);
    }
}

static void remove_tree(const char *dir)
{
    char path[512];
    const char *name[] = {"rbac.yaml", "emulate-rbac.yaml"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/deploy/%s", dir, name[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/deploy", dir);
    rmdir(path);
    rmdir(dir);
}

/* method url -> "resource|verb|group|res|sub|ns|name" (resource 1 or 0; path for 0). */
static void expect_attrs(const char *method, const char *url, const char *want)
{
    drv_rbac_attrs a;
    drv_diag d = {{0}};
    assert_int_equal(drv_rbac_attrs_of(method, url, &a, &d), 0);
    char got[1024];
    if (a.resource)
        snprintf(got, sizeof got, "1|%s|%s|%s|%s|%s|%s", a.verb, a.group, a.res, a.sub, a.ns,
                 a.name);
    else
        snprintf(got, sizeof got, "0|%s|%s", a.verb, a.path);
    if (strcmp(got, want))
        fail_msg("%s %s: got %s, expected %s", method, url, got, want);
}

static void test_attributes(void **unused)
{
    (void)unused;
    expect_attrs("GET", "/api/v1/namespaces/a/pods/p", "1|get||pods||a|p");
    expect_attrs("GET", "/api/v1/pods?limit=500", "1|list||pods|||");
    expect_attrs("GET", "/api/v1/pods?watch=true&resourceVersion=7", "1|watch||pods|||");
    expect_attrs("GET", "/api/v1/pods?allowWatchBookmarks=true&watch=1", "1|watch||pods|||");
    expect_attrs("GET", "/api/v1/pods?watch=false", "1|list||pods|||");
    expect_attrs("GET", "/api/v1/watch/namespaces/a/pods", "1|watch||pods||a|");
    expect_attrs("GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dn1", "1|list||nodes|||n1");
    expect_attrs("POST", "/api/v1/namespaces/a/pods", "1|create||pods||a|");
    expect_attrs("POST", "/api/v1/namespaces/a/pods/p/binding", "1|create||pods|binding|a|p");
    expect_attrs("PUT", "/apis/drover.dev/v1alpha1/namespaces/a/trainingjobs/j/status",
                 "1|update|drover.dev|trainingjobs|status|a|j");
    expect_attrs("PATCH", "/api/v1/nodes/n1/status", "1|patch||nodes|status||n1");
    expect_attrs("DELETE", "/api/v1/namespaces/a/pods/p", "1|delete||pods||a|p");
    expect_attrs("DELETE", "/api/v1/namespaces/a/pods?labelSelector=x%3Dy",
                 "1|deletecollection||pods||a|");
    expect_attrs("GET", "/api/v1/namespaces/a", "1|get||namespaces||a|a");
    expect_attrs("PUT", "/api/v1/namespaces/a/finalize", "1|update||namespaces|finalize|a|a");
    expect_attrs("GET", "/apis/coordination.k8s.io/v1/namespaces/s/leases/l",
                 "1|get|coordination.k8s.io|leases||s|l");
    expect_attrs("GET", "/api", "0|get|/api");
    expect_attrs("GET", "/api/v1", "0|get|/api/v1");
    expect_attrs("GET", "/apis/drover.dev/v1alpha1", "0|get|/apis/drover.dev/v1alpha1");
    expect_attrs("GET", "/version?timeout=32s", "0|get|/version");
    expect_attrs("POST", "/healthz", "0|post|/healthz");
    drv_rbac_attrs a;
    drv_diag d = {{0}};
    assert_int_equal(drv_rbac_attrs_of("GET", "api/v1", &a, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "api/v1"));
}

/* Each line is granted (G) or refused (R); the report names exactly the refused ones. */
static const struct {
    char expect;
    const char *line;
} LOG[] = {
    {'G', "200 GET /api/v1/pods?watch=true drover-run/1.0"},
    {'G', "201 POST /api/v1/namespaces/x/pods drover-run/1.0"},
    {'R', "200 DELETE /api/v1/namespaces/x/pods/p drover-run/1.0"}, /* verb */
    {'G', "201 POST /api/v1/namespaces/x/pods/p/binding drover-run/1.0"},
    {'R', "200 PATCH /api/v1/namespaces/x/pods/p/status drover-run/1.0"}, /* subresource */
    {'G', "200 PATCH /apis/drover.dev/v1alpha1/namespaces/x/trainingjobs/j/status drover-run/1"},
    {'R', "200 PUT /apis/drover.dev/v1alpha1/namespaces/x/trainingjobs/j/status drover-run/1"},
    {'R', "200 GET /apis/other.dev/v1/namespaces/x/pods/p drover-run/1.0"},         /* group */
    {'G', "200 PUT /apis/apps/v1/namespaces/x/deployments/d/scale drover-run/1.0"}, /* "*\/" */
    {'R', "200 PUT /apis/apps/v1/namespaces/x/deployments/d drover-run/1.0"},
    {'G', "200 GET /api/v1/namespaces/team/configmaps/c drover-run/1.0"}, /* RoleBinding ns */
    {'R', "200 GET /api/v1/namespaces/other/configmaps/c drover-run/1.0"},
    {'G', "200 GET /api/v1/namespaces/team/configmaps/c drover-snapshot/1.0"}, /* run's */
    {'R', "200 GET /api/v1/secrets drover-snapshot/1.0"},
    {'G', "200 PUT /apis/coordination.k8s.io/v1/namespaces/sys/leases/me drover-run/1.0"},
    {'R', "200 PUT /apis/coordination.k8s.io/v1/namespaces/sys/leases/you drover-run/1.0"},
    {'R', "201 POST /apis/coordination.k8s.io/v1/namespaces/sys/leases drover-run/1.0"},
    {'G', "200 GET /apis/coordination.k8s.io/v1/namespaces/sys/leases?fieldSelector="
          "metadata.name%3Dme drover-run/1.0"},
    {'R', "200 GET /apis/coordination.k8s.io/v1/namespaces/sys/leases drover-run/1.0"},
    {'G', "200 GET /apis/drover.dev/v1alpha1 drover-run/1.0"}, /* discovery */
    {'G', "200 GET /version drover-run/1.0"},
    {'R', "404 GET /metrics drover-run/1.0"},
    {'G', "200 GET /metrics drover-emulate/1.0"},
    {'G', "200 GET /debug/pprof drover-emulate/1.0"},
    {'R', "200 POST /api drover-emulate/1.0"},
    {'G', "200 PATCH /api/v1/nodes/n1/status drover-emulate/1.0"},
    {'R', "200 PATCH /api/v1/nodes/n1 drover-emulate/1.0"},
    {'R', "200 GET /api/v1/pods drover-emulate/1.0"}, /* run's rules are not emulate's */
    {'G', "200 DELETE /api/v1/namespaces/x/pods drover-emulate/1.0"},
    {'R', "200 DELETE /api/v1/namespaces/x/pods/p drover-emulate/1.0"},
    {'G', "200 DELETE /api/v1/nodes/n1 drover/1.0"}, /* the test's own client */
    {'G', "200 DELETE /api/v1/nodes/n1 curl/8.0"},
};

static void test_granted_and_refused(void **unused)
{
    (void)unused;
    char dir[64], log[8192] = "";
    make_tree(dir, sizeof dir, RUN_RBAC, EMU_RBAC);
    size_t n = sizeof LOG / sizeof *LOG;
    for (size_t i = 0; i < n; i++) {
        strcat(log, LOG[i].line);
        strcat(log, "\n");
    }
    drv_diag d = {{0}};
    char *out = drv_rbac_refused(log, dir, &d);
    if (!out)
        fail_msg("%s", d.msg);
    int refused = 0;
    for (size_t i = 0; i < n; i++) {
        bool named = strstr(out, LOG[i].line) != NULL;
        if (named != (LOG[i].expect == 'R'))
            fail_msg("%s: expected %s\n%s", LOG[i].line,
                     LOG[i].expect == 'R' ? "refused" : "granted", out);
        refused += named;
    }
    /* one report line per refused kind, naming verb, group, resource and account */
    int lines = 0;
    for (const char *p = out; (p = strchr(p, '\n')); p++)
        lines++;
    assert_int_equal(lines, refused);
    assert_non_null(strstr(out, "not granted: patch \"\" pods/status (sys/sched): 1 request,"));
    assert_non_null(strstr(out, "create coordination.k8s.io leases (sys/sched)"));
    assert_non_null(strstr(out, "post non-resource URL /api (sys/emu)"));
    drv_free(out);

    /* the same refusal twice is one line with its count; a granted log gives "" */
    out = drv_rbac_refused("200 PATCH /api/v1/nodes/a drover-emulate/1\n"
                           "200 PATCH /api/v1/nodes/b drover-emulate/1\n"
                           "200 PATCH /api/v1/nodes/a/status drover-emulate/1\n",
                           dir, &d);
    assert_non_null(out);
    assert_non_null(strstr(out, "patch \"\" nodes (sys/emu): 2 requests, first: 200 PATCH "
                                "/api/v1/nodes/a drover-emulate/1\n"));
    assert_null(strchr(strchr(out, '\n') + 1, '\n'));
    drv_free(out);
    out = drv_rbac_refused("200 GET /api/v1/pods drover-run/1\n", dir, &d);
    assert_string_equal(out, "");
    drv_free(out);

    /* the other direction: each rule's verb and resource that no granted request used */
    out = drv_rbac_unused(log, dir, &d);
    if (!out)
        fail_msg("%s", d.msg);
    static const char *const never[] = {
        "unused grant: get \"\" pods (", "unused grant: list \"\" pods (",
        "unused grant: get coordination.k8s.io leases (",
        "unused grant: create coordination.k8s.io leases (", /* (its POST was refused) */
    };
    static const char *const used[] = {
        " watch \"\" pods ",
        " create \"\" pods ",
        " create \"\" pods/binding ",
        " update apps */scale",
        " list coordination.k8s.io leases",
        " get \"\" configmaps ",
    };
    for (size_t i = 0; i < sizeof never / sizeof *never; i++)
        if (!strstr(out, never[i]))
            fail_msg("expected '%s' in:\n%s", never[i], out);
    for (size_t i = 0; i < sizeof used / sizeof *used; i++)
        if (strstr(out, used[i]))
            fail_msg("'%s' was used, yet reported:\n%s", used[i], out);
    assert_non_null(strstr(out, ", sys/sched)\n"));
    drv_free(out);
    remove_tree(dir);
}

static void test_bad_input(void **unused)
{
    (void)unused;
    char dir[64];
    drv_diag d = {{0}};
    make_tree(dir, sizeof dir, RUN_RBAC, EMU_RBAC);
    assert_null(drv_rbac_refused("GET /api drover-run/1\n", dir, &d));
    assert_non_null(strstr(d.msg, "expected CODE METHOD URL AGENT"));
    remove_tree(dir);

    /* a misshapen rule is named by file, line and field */
    make_tree(dir, sizeof dir, RUN_RBAC,
              "kind: ServiceAccount\nmetadata: {name: emu, namespace: sys}\n---\n"
              "kind: ClusterRole\nmetadata: {name: emu}\nrules:\n"
              "  - apiGroups: [\"\"]\n    resources: [nodes]\n    verbs: patch\n");
    assert_null(drv_rbac_refused("", dir, &d));
    assert_non_null(strstr(d.msg, "emulate-rbac.yaml:9: rules[0].verbs: expected a list"));
    remove_tree(dir);

    make_tree(dir, sizeof dir, RUN_RBAC, "kind: ClusterRole\nmetadata: {name: x}\nrules: []\n");
    assert_null(drv_rbac_refused("", dir, &d));
    assert_non_null(strstr(d.msg, "emulate-rbac.yaml: expected a ServiceAccount"));
    remove_tree(dir);

    assert_null(drv_rbac_refused("", "/nonexistent", &d));
    assert_non_null(strstr(d.msg, "/nonexistent/deploy/rbac.yaml"));
}

/* Every allocation failure gives NULL and a message, never a crash or a wrong report. */
static void test_allocation_failures(void **unused)
{
    (void)unused;
    char dir[64];
    make_tree(dir, sizeof dir, RUN_RBAC, EMU_RBAC);
    const char *log = "200 DELETE /api/v1/namespaces/x/pods/p drover-run/1.0\n";
    for (long nth = 1;; nth++) {
        drv_diag d = {{0}};
        drv_alloc_fail_at(nth);
        char *out = drv_rbac_refused(log, dir, &d);
        bool more = drv_alloc_fail_pending() == 0;
        drv_alloc_fail_at(0);
        if (!more) {
            assert_non_null(out);
            assert_non_null(strstr(out, "delete \"\" pods (sys/sched)"));
            drv_free(out);
            break;
        }
        if (out) /* a failure libyaml recovered from is not an error */
            assert_non_null(strstr(out, "delete \"\" pods (sys/sched)"));
        else
            assert_true(d.msg[0] != 0);
        drv_free(out);
    }
    remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attributes),
        cmocka_unit_test(test_granted_and_refused),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
