/*
 * test_run_e2e.c - `drover run` as a user runs it, with real kubectl as the user's hands,
 * against the in-memory API server on loopback:
 *
 *   kubectl apply -f deploy/crd.yaml            (the manifest we ship)
 *   kubectl create -f <two nodes>               (Ready, 8 CPUs each)
 *   drover run --kubeconfig K --policy P        (a child process)
 *   kubectl create -f examples/trainingjob.yaml (the example we ship)
 *   -> its 3 pods are bound, `kubectl get tj` shows it, an Event says it was scheduled;
 *   SIGTERM -> drover exits 0 with its summary line.
 *
 * Skipped (77) when kubectl is not on PATH. kubectl runs with --validate=false (test_kubectl.c
 * says why). Every kubectl call has --request-timeout; ctest's TIMEOUT bounds the whole test.
 */
#include "apiserver.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256], kcfg[512];
static int failures;

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
        fprintf(stderr, "FAIL: %s\n--- output:\n%s\n", what, out);
        failures++;
    } else {
        printf("ok: %s\n", what);
    }
}

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Lines of `out` that are non-empty. */
static int lines(const char *out)
{
    int n = 0;
    for (const char *p = out; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        n += len > 0;
        p += len + (e != NULL);
    }
    return n;
}

int main(void)
{
    if (system("command -v kubectl >/dev/null 2>&1") != 0) {
        printf("kubectl not found on PATH: test skipped\n");
        return 77;
    }
    const char *src = getenv("DROVER_SOURCE_DIR"), *bin = getenv("DROVER_BINARY_DIR");
    src = src ? src : ".";
    bin = bin ? bin : "build";
    char fx[512];
    snprintf(fx, sizeof fx, "%.400s/tests/fixtures/k8s", src);
    drv_apiserver *s = NULL;
    drv_apiserver_opts o = {.fixture_dir = fx};
    drv_diag d = {{0}};
    if (drv_apiserver_start(&s, &o, &d)) {
        fprintf(stderr, "cannot start the test server: %s\n", d.msg);
        return 1;
    }
    snprintf(dir, sizeof dir, "/tmp/drover-run-XXXXXX");
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
    write_file("nodes.yaml",
               "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  allocatable: "
               "{cpu: \"8\", memory: 32Gi}\n  conditions: [{type: Ready, status: \"True\"}]\n"
               "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n2\nstatus:\n  allocatable: "
               "{cpu: \"8\", memory: 32Gi}\n  conditions: [{type: Ready, status: \"True\"}]\n");
    static char out[65536];
    char args[1024];
    int rc;
    snprintf(args, sizeof args, "apply --validate=false -f %s/deploy/crd.yaml", src);
    rc = kubectl(out, sizeof out, args);
    expect(rc == 0 && strstr(out, "trainingjobs.drover.dev"), "kubectl apply deploy/crd.yaml", out);
    snprintf(args, sizeof args, "create --validate=false -f %s/nodes.yaml", dir);
    rc = kubectl(out, sizeof out, args);
    expect(rc == 0 && strstr(out, "node/n2 created"), "kubectl create nodes", out);

    char log[512];
    snprintf(log, sizeof log, "%s/drover.log", dir);
    pid_t pid = fork();
    if (pid == 0) {
        char exe[512];
        snprintf(exe, sizeof exe, "%s/drover", bin);
        if (!freopen(log, "w", stderr))
            _exit(127);
        execl(exe, exe, "run", "--kubeconfig", kcfg, "--policy", "drover", (char *)NULL);
        _exit(127);
    }
    snprintf(args, sizeof args, "create --validate=false -f %s/examples/trainingjob.yaml", src);
    rc = kubectl(out, sizeof out, args);
    expect(rc == 0 && strstr(out, "mnist created"), "kubectl create examples/trainingjob.yaml",
           out);
    /* PS 2 CPUs + 2 workers of 4: bound within a few seconds. */
    int bound = 0;
    for (int i = 0; i < 100 && bound < 3; i++) {
        rc = kubectl(out, sizeof out,
                     "get pods -l drover.dev/job=mnist -o "
                     "jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}'");
        bound = rc == 0 ? lines(out) : 0;
        if (bound < 3)
            usleep(100000);
    }
    expect(bound == 3, "the example's 3 pods are bound", out);
    rc = kubectl(out, sizeof out, "get pods -l drover.dev/role=worker -o name");
    expect(rc == 0 && strstr(out, "pod/mnist-worker-0") && strstr(out, "pod/mnist-worker-1"),
           "its workers are named <job>-worker-<rank>", out);
    rc = kubectl(out, sizeof out, "get tj");
    expect(rc == 0 && strstr(out, "mnist"), "kubectl get tj", out);
    rc = kubectl(out, sizeof out,
                 "get events -o jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}'");
    expect(rc == 0 && strstr(out, "Scheduled") && strstr(out, "3 pods bound by profile drover"),
           "an Event says the job was scheduled", out);

    int st = 0;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    FILE *f = fopen(log, "r");
    size_t len = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[len] = 0;
    if (f)
        fclose(f);
    expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "stopped after") &&
               strstr(out, "1 jobs"),
           "drover run stops on SIGTERM with exit status 0 and a summary", out);

    drv_apiserver_free(s);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return failures ? 1 : 0;
}
