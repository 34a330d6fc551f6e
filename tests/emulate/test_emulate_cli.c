/*
 * `drover emulate` end to end: the command is run (fork and exec of the built binary) against
 * the in-memory API server through a kubeconfig, with a cluster file of the simulator's
 * format; the test waits for its nodes, binds a pod with a short duration to one, waits for it
 * to succeed, then sends SIGTERM: the command must exit 0 (under ASan: without leaks) and say
 * what it did. Every wait polls for up to 10 s.
 */
#include "apiserver.h"
#include "drover/kube.h"
#include "drover/emulator.h"
#include "drover/kube_types.h"
#include "json.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static const char *phase_of(drv_kube *k, const char *path, json_t **keep)
{
    long st;
    drv_diag d;
    json_t *o = NULL;
    drv_kube_request(k, "GET", path, NULL, NULL, &st, &o, &d);
    json_decref(*keep);
    *keep = o;
    return json_string_value(json_object_get(json_object_get(o, "status"), "phase"));
}

static void test_emulate_command(void **unused)
{
    (void)unused;
    const char *bin = getenv("DROVER_BINARY_DIR");
    const char *src = getenv("DROVER_SOURCE_DIR");
    assert_non_null(bin);
    assert_non_null(src);
    drv_apiserver *srv;
    drv_diag d;
    drv_apiserver_opts o = {.fixture_dir = FIXTURE_DIR, .bookmark_ms = 200};
    assert_int_equal(drv_apiserver_start(&srv, &o, &d), 0);
    char dir[] = "/tmp/drover-emulate-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char kc[128], cluster[128], err[128], drover[1024];
    snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
    snprintf(cluster, sizeof cluster, "%s/cluster.yaml", dir);
    snprintf(err, sizeof err, "%s/stderr", dir);
    snprintf(drover, sizeof drover, "%s/drover", bin);
    FILE *f = fopen(kc, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster: {server: "
            "\"http://127.0.0.1:%u\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: "
            "c\n  context: {cluster: test, user: u}\ncurrent-context: c\n",
            drv_apiserver_port(srv));
    fclose(f);
    f = fopen(cluster, "w");
    assert_non_null(f);
    fputs("nodes:\n  - {name: gpu, count: 2, cpu: 16, memory: 64Gi, gpu: 4, zone: z1, rack: r7,\n"
          "     labels: {pool: gpu}, taints: [{key: gpu, value: \"true\", effect: NoSchedule}]}\n"
          "timing:\n  podStartSeconds: 3\n",
          f);
    fclose(f);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *e = freopen(err, "w", stderr);
        (void)e;
        execl(drover, drover, "emulate", "--cluster", cluster, "--kubeconfig", kc, "--speed",
              "1000", (char *)NULL);
        _exit(127);
    }
    drv_kube_config cfg = {.server = NULL, .qps = 1000, .burst = 1000};
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(srv));
    cfg.server = url;
    drv_kube *k;
    assert_int_equal(drv_kube_new(&k, &cfg, &d), 0);
    json_t *obj = NULL;
    long st = 0;
    for (int i = 0; i < 1000 && st != 200; i++) { /* the nodes of the cluster file appear */
        json_decref(obj);
        obj = NULL;
        drv_kube_request(k, "GET", "/api/v1/nodes/gpu-1", NULL, NULL, &st, &obj, &d);
        if (st != 200)
            sleep_ms(10);
    }
    assert_int_equal(st, 200);
    json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "drover.dev/rack")), "r7");
    assert_string_equal(json_string_value(json_object_get(labels, "pool")), "gpu");
    json_t *t0 = json_array_get(json_object_get(json_object_get(obj, "spec"), "taints"), 0);
    assert_string_equal(json_string_value(json_object_get(t0, "key")), "gpu");
    assert_string_equal(json_string_value(json_object_get(t0, "value")), "true");
    assert_string_equal(json_string_value(json_object_get(t0, "effect")), "NoSchedule");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(obj, "status"), "allocatable"), "nvidia.com/gpu")),
        "4");
    json_decref(obj);
    obj = NULL;

    const char *pod = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"j-0\","
                      "\"annotations\":{\"" DRV_EMU_DURATION_ANNOTATION "\":\"20\"}},\"spec\":{"
                      "\"containers\":[{\"name\":\"main\",\"image\":\"x\"}]}}";
    assert_int_equal(
        drv_kube_request(k, "POST", "/api/v1/namespaces/default/pods", NULL, pod, &st, NULL, &d),
        0);
    char *b = drv_kube_binding_json("default", "j-0", "gpu-0");
    assert_int_equal(drv_kube_request(k, "POST", "/api/v1/namespaces/default/pods/j-0/binding",
                                      NULL, b, &st, NULL, &d),
                     0);
    drv_free(b);
    const char *ph = NULL;
    for (int i = 0; i < 1000; i++) {
        ph = phase_of(k, "/api/v1/namespaces/default/pods/j-0", &obj);
        if (ph && !strcmp(ph, "Succeeded"))
            break;
        sleep_ms(10);
    }
    assert_non_null(ph);
    assert_string_equal(ph, "Succeeded");
    json_decref(obj);

    assert_int_equal(kill(pid, SIGTERM), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    char text[4096] = "";
    f = fopen(err, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("drover emulate did not exit 0 (status %d); stderr:\n%s", status, text);
    assert_non_null(strstr(text, "2 nodes registered"));
    assert_non_null(strstr(text, "1 pods started, 1 succeeded"));
    remove(kc);
    remove(cluster);
    remove(err);
    rmdir(dir);
    drv_kube_free(k);
    drv_apiserver_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_emulate_command)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
