/*
 * test_snapshot_rbac.c - `drover snapshot` needs no grant beyond `drover run`'s (issue 29,
 * docs/what-if.md): the drover binary snapshots the test API server (loopback) while it holds
 * one object of each kind the snapshot reads - a Node, a PriorityClass, a Queue, a TrainingJob,
 * a PodGroup and a pod of it - and must succeed; fixture_close then judges every request it
 * made (User-Agent drover-snapshot/...) by deploy/rbac.yaml's account (rbac_check.h), so a
 * read that account is not granted fails the test.
 */
#include "ctrl_fixture.h"
#include "kubectl_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

static int setup(void **state)
{
    return fixture_open(state, (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR,
                                                    .crd_installed = true,
                                                    .podgroup_crd = true,
                                                    .queue_crd = true});
}

static int teardown(void **state)
{
    return fixture_close(state);
}

/* Whether file name of dir holds text. */
static bool file_has(const char *dir, const char *name, const char *text)
{
    char path[512], buf[65536];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    return strstr(buf, text) != NULL;
}

static void test_snapshot_reads_within_run_rbac(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    req(f, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
        "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":"
        "{\"name\":\"low\"},\"value\":0}");
    req(f, "POST", "/apis/drover.dev/v1alpha1/queues",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
        "\"train\"},\"spec\":{\"weight\":1}}");
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"tj\",\"namespace\":\"default\"},\"spec\":{\"queue\":\"train\","
        "\"priorityClassName\":\"low\",\"replicaSpecs\":{\"Worker\":{\"replicas\":1,"
        "\"template\":{\"spec\":{\"schedulerName\":\"drover\",\"containers\":[{\"name\":"
        "\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}");
    req(f, "POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
        "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":"
        "{\"name\":\"pg\",\"namespace\":\"default\"},\"spec\":{\"minMember\":1}}");
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pg-0\",\"namespace\":"
        "\"default\",\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"pg\"}},\"spec\":{"
        "\"schedulerName\":\"drover\",\"containers\":[{\"name\":\"main\",\"image\":\"t\","
        "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}");
    assert_int_equal(kc_setup(drv_apiserver_port(f->srv), "drover-snaprbac"), 0);
    char out[600], cmd[1600];
    snprintf(out, sizeof out, "%s/snap", kc_dir());
    snprintf(cmd, sizeof cmd, "'%s' snapshot --kubeconfig '%s' --out '%s' >'%s/log' 2>&1",
             DROVER_BIN, kc_config(), out, kc_dir());
    int rc = system(cmd);
    if (!(WIFEXITED(rc) && WEXITSTATUS(rc) == 0)) {
        char log[600];
        snprintf(log, sizeof log, "cat '%s/log' >&2", kc_dir());
        (void)!system(log);
        kc_cleanup();
        fail_msg("drover snapshot failed (status %d)", rc);
    }
    /* (what it read is in its files: every kind was listed) */
    bool ok = file_has(out, "workload.yaml", "default.tj") &&
              file_has(out, "workload.yaml", "default.pg") &&
              file_has(out, "cluster.yaml", "node-a") && file_has(out, "cluster.yaml", "train");
    kc_cleanup();
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_snapshot_reads_within_run_rbac, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
