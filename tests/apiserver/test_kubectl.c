/*
 * test_kubectl.c - real kubectl against the in-memory API server: create, get (-o wide,
 * -o json), watch and delete pods, nodes and TrainingJobs.
 *
 * `create` runs with --validate=false. With validation on, kubectl 1.32 reads /openapi/v3 and
 * api/v1's document, finds no fieldValidation parameter in it (the recording is of a v1.24
 * server, before server-side field validation), and falls back to /openapi/v2 as protobuf,
 * which the recording does not have (its v2 document is JSON): the test server answers 404 and
 * kubectl refuses to create.
 *
 * kubectl is pointed at http://127.0.0.1:PORT through a kubeconfig written to a mkdtemp
 * directory (its cache directory lives there too, so runs do not share discovery caches).
 * Every kubectl call has --request-timeout, and ctest's TIMEOUT bounds the whole test. When
 * kubectl is not on PATH the test prints that it is skipped and returns 77 (SKIP_RETURN_CODE).
 */
#include "apiserver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];
static char kcfg[512];
static int failures;

/* Runs `kubectl ARGS` with our kubeconfig; output goes to out (NUL-terminated). */
static int kubectl(char *out, size_t n, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "kubectl --kubeconfig %s --cache-dir %s/cache --request-timeout=10s %s 2>&1", kcfg,
             dir, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t len = fread(out, 1, n - 1, p);
    out[len] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect(bool ok, const char *what, const char *out)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n--- kubectl said:\n%s\n", what, out);
        failures++;
    } else {
        printf("ok: %s\n", what);
    }
}

static int write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

int main(void)
{
    if (system("command -v kubectl >/dev/null 2>&1") != 0) {
        printf("kubectl not found on PATH: test skipped\n");
        return 77;
    }
    const char *src = getenv("DROVER_SOURCE_DIR");
    char fx[512];
    snprintf(fx, sizeof fx, "%.400s/tests/fixtures/k8s", src ? src : ".");
    drv_apiserver *s = NULL;
    drv_apiserver_opts o = {.fixture_dir = fx, .crd_installed = true};
    drv_diag d = {{0}};
    if (drv_apiserver_start(&s, &o, &d)) {
        fprintf(stderr, "cannot start the test server: %s\n", d.msg);
        return 1;
    }
    snprintf(dir, sizeof dir, "/tmp/drover-kubectl-XXXXXX");
    if (!mkdtemp(dir)) {
        drv_apiserver_free(s);
        return 1;
    }
    snprintf(kcfg, sizeof kcfg, "%s/kubeconfig", dir);
    char text[4096];
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: "
             "http://127.0.0.1:%u\nusers:\n- name: u\n  user:\n    token: test\ncontexts:\n- "
             "name: c\n  context:\n    cluster: t\n    user: u\n    namespace: default\n"
             "current-context: c\n",
             drv_apiserver_port(s));
    write_file("kubeconfig", text);
    write_file("node.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-node-1\n"
                            "  labels:\n    topology.kubernetes.io/zone: zone-a\n");
    write_file("pod.yaml",
               "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kc-pod\n  labels:\n    app: t\n"
               "spec:\n  schedulerName: drover\n  containers:\n  - name: main\n"
               "    image: busybox:1.36\n");
    write_file("tj.yaml",
               "apiVersion: drover.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n"
               "  name: kc-tj\nspec:\n  replicaSpecs:\n    Worker:\n      replicas: 2\n");
    static char out[65536];
    char args[1024];
    int rc;

    snprintf(args, sizeof args, "create --validate=false -f %s/node.yaml", dir);
    rc = kubectl(out, sizeof out, args);
    expect(rc == 0 && strstr(out, "node/gpu-node-1 created"), "kubectl create node", out);
    snprintf(args, sizeof args, "create --validate=false -f %s/pod.yaml", dir);
    rc = kubectl(out, sizeof out, args);
    expect(rc == 0 && strstr(out, "pod/kc-pod created"), "kubectl create pod", out);
    snprintf(args, sizeof args, "create --validate=false -f %s/tj.yaml", dir);
    rc = kubectl(out, sizeof out, args);
    expect(rc == 0 && strstr(out, "kc-tj created"), "kubectl create trainingjob", out);

    rc = kubectl(out, sizeof out, "get pods -o wide");
    expect(rc == 0 && strstr(out, "NOMINATED NODE") && strstr(out, "kc-pod"),
           "kubectl get pods -o wide", out);
    rc = kubectl(out, sizeof out, "get nodes");
    expect(rc == 0 && strstr(out, "gpu-node-1") && strstr(out, "STATUS"), "kubectl get nodes", out);
    rc = kubectl(out, sizeof out, "get pod kc-pod -o json");
    expect(rc == 0 && strstr(out, "\"schedulerName\": \"drover\""), "kubectl get pod -o json", out);
    rc = kubectl(out, sizeof out, "get tj");
    expect(rc == 0 && strstr(out, "kc-tj") && strstr(out, "PHASE"), "kubectl get tj", out);
    rc = kubectl(out, sizeof out, "get trainingjobs kc-tj -o json");
    expect(rc == 0 && strstr(out, "\"replicas\": 2"), "kubectl get trainingjob -o json", out);
    rc = kubectl(out, sizeof out, "get nodes -l topology.kubernetes.io/zone=zone-a -o name");
    expect(rc == 0 && strstr(out, "node/gpu-node-1"), "kubectl get nodes -l", out);

    /* Watch: kubectl prints the current list, then follows until its request times out. */
    rc = kubectl(out, sizeof out, "get pods --watch --request-timeout=2s");
    expect(strstr(out, "kc-pod") != NULL, "kubectl get pods --watch", out);

    rc = kubectl(out, sizeof out, "delete pod kc-pod");
    expect(rc == 0 && strstr(out, "deleted"), "kubectl delete pod", out);
    rc = kubectl(out, sizeof out, "delete tj kc-tj");
    expect(rc == 0 && strstr(out, "deleted"), "kubectl delete trainingjob", out);
    rc = kubectl(out, sizeof out, "delete node gpu-node-1");
    expect(rc == 0 && strstr(out, "deleted"), "kubectl delete node", out);
    rc = kubectl(out, sizeof out, "get pods");
    expect(rc == 0 && !strstr(out, "kc-pod"), "pod gone after delete", out);

    drv_apiserver_free(s);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return failures ? 1 : 0;
}
