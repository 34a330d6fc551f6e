/*
 * test_run_e2e.c - `drover run` as a user runs it, with real kubectl as the user's hands,
 * against the in-memory API server on loopback:
 *
 *   kubectl apply -f deploy/crd.yaml            (the manifest we ship)
 *   kubectl create -f <two nodes>               (Ready, 8 CPUs each)
 *   drover run --kubeconfig K --policy P        (a child process)
 *   kubectl create -f examples/trainingjob.yaml (the example we ship)
 *   -> its 3 pods are bound, `kubectl get tj` shows it, an Event says it was scheduled;
 *   kubectl create -f <a PodGroup and its 2 pods> (another operator's gang, schedulerName drover)
 *   -> both pods are bound, `kubectl get podgroups` shows it Scheduled (DROVER_E2E_SHOW=1
 *      prints what kubectl printed: docs/running.md quotes it);
 *   kubectl apply -f deploy/queue-crd.yaml; a job naming Queue research before it exists
 *   -> held, its Event says so; kubectl create the Queue -> the job is admitted and
 *      `kubectl get queues` shows it and the CPU it uses;
 *   a job that waits for room -> its Waiting Event gives its priority factor by factor;
 *   SIGTERM -> drover exits 0 with its summary line; every request it made is granted by
 *   deploy/rbac.yaml (rbac_check.h).
 *
 * Skipped (77) when kubectl is not on PATH. kubectl runs with --validate=false (test_kubectl.c
 * says why). Every kubectl call has --request-timeout; ctest's TIMEOUT bounds the whole test.
 */
#include "apiserver.h"
#include "kubectl_util.h"
#include "rbac_check.h"
#include "wait.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
    char *buf = arg;
    size_t have = strlen(buf), k = size * n;
    if (have + k < 65535) {
        memcpy(buf + have, p, k);
        buf[have + k] = 0;
    }
    return k;
}

/* GET url into out (NUL-terminated); the HTTP status, or 0. */
static long http_get(const char *url, char *out)
{
    out[0] = 0;
    CURL *h = curl_easy_init();
    long code = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    return code;
}

/* The metrics port drover run logged ("metrics on http://127.0.0.1:PORT/metrics"), or 0. */
static int logged_port(const char *log)
{
    char buf[4096] = "";
    FILE *f = fopen(log, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    const char *p = strstr(buf, "metrics on http://127.0.0.1:");
    return p ? atoi(p + strlen("metrics on http://127.0.0.1:")) : 0;
}

static char out[65536]; /* what the last kubectl printed */

/* Runs `kubectl args` (formatted) into out; its exit status. */
static int kc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int kc(const char *fmt, ...)
{
    char args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return kc_run(out, sizeof out, args);
}

/* What kc_until polls: kubectl args, and what its output must hold. */
typedef struct kc_poll {
    const char *args, *want;
    int rc;
} kc_poll;

static bool kc_holds(void *arg)
{
    kc_poll *p = arg;
    p->rc = kc_run(out, sizeof out, p->args);
    return p->rc == 0 && strstr(out, p->want);
}

/* Runs `kubectl args` until its output holds want (tests/wait.h's bound); its last exit status. */
static int kc_until(const char *args, const char *want)
{
    kc_poll p = {.args = args, .want = want};
    wait_until(kc_holds, &p);
    return p.rc;
}

/* With DROVER_E2E_SHOW set, prints what kubectl printed for `what` (docs/running.md quotes it). */
static void show(const char *what)
{
    if (getenv("DROVER_E2E_SHOW"))
        printf("$ kubectl %s\n%s", what, out);
}

static const char *src_dir(void)
{
    const char *src = getenv("DROVER_SOURCE_DIR");
    return src ? src : ".";
}

/* The CRDs we ship, and two Ready nodes of 8 CPUs (untainted, as the node lifecycle controller
 * does). */
static void cluster(void)
{
    const char *src = src_dir();
    int rc = kc("apply --validate=false -f %s/deploy/crd.yaml", src);
    kc_expect(rc == 0 && strstr(out, "trainingjobs.drover.dev"), "kubectl apply deploy/crd.yaml",
              out);
    rc = kc("apply --validate=false -f %s/deploy/podgroup-crd.yaml", src);
    kc_expect(rc == 0 && strstr(out, "podgroups.scheduling.x-k8s.io"),
              "kubectl apply deploy/podgroup-crd.yaml", out);
    rc = kc("apply --validate=false -f %s/deploy/queue-crd.yaml", src);
    kc_expect(rc == 0 && strstr(out, "queues.drover.dev"), "kubectl apply deploy/queue-crd.yaml",
              out);
    kc_write("nodes.yaml",
             "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  allocatable: "
             "{cpu: \"8\", memory: 32Gi}\n  conditions: [{type: Ready, status: \"True\"}]\n"
             "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n2\nstatus:\n  allocatable: "
             "{cpu: \"8\", memory: 32Gi}\n  conditions: [{type: Ready, status: \"True\"}]\n");
    rc = kc("create --validate=false -f %s/nodes.yaml", kc_dir());
    kc_expect(rc == 0 && strstr(out, "node/n2 created"), "kubectl create nodes", out);
    rc = kc("patch nodes n1 n2 --type=merge -p '{\"spec\":{\"taints\":null}}'");
    kc_expect(rc == 0 && strstr(out, "node/n2 patched"), "kubectl patch nodes (untaint)", out);
}

/* drover run as a child process, its stderr into log. */
static pid_t start_drover(const char *log)
{
    const char *bin = getenv("DROVER_BINARY_DIR");
    pid_t pid = fork();
    if (pid == 0) {
        char exe[512];
        snprintf(exe, sizeof exe, "%s/drover", bin ? bin : "build");
        if (!freopen(log, "w", stderr))
            _exit(127);
        execl(exe, exe, "run", "--kubeconfig", kc_config(), "--policy", "drover", "--metrics-addr",
              "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The example's 3 pods are bound (kubectl prints a nodeName a line). */
static bool three_bound(void *unused)
{
    (void)unused;
    int rc = kc("get pods -l drover.dev/job=mnist -o "
                "jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}'");
    return rc == 0 && lines(out) == 3;
}

/* The example we ship: its 3 pods bound, named as Kubeflow names them, Running, its Service,
 * and the Event that says so. */
static void example_job(void)
{
    int rc = kc("create --validate=false -f %s/examples/trainingjob.yaml", src_dir());
    kc_expect(rc == 0 && strstr(out, "mnist created"), "kubectl create examples/trainingjob.yaml",
              out);
    /* PS 2 CPUs + 2 workers of 4: bound within a few seconds. */
    kc_expect(wait_until(three_bound, NULL), "the example's 3 pods are bound", out);
    rc = kc("get pods -l drover.dev/role=worker -o name");
    kc_expect(rc == 0 && strstr(out, "pod/mnist-worker-0") && strstr(out, "pod/mnist-worker-1"),
              "its workers are named <job>-worker-<rank>", out);
    /* The printer columns read the conditions: bound whole, the job is Running (its pods
     * starting: reason JobPlaced in -o wide's MESSAGE). */
    rc = kc_until("get tj", "Running");
    kc_expect(rc == 0 && strstr(out, "mnist") && strstr(out, "STATE") && strstr(out, "Running"),
              "kubectl get tj: STATE Running", out);
    rc = kc("get tj -o wide");
    kc_expect(rc == 0 && strstr(out, "MESSAGE") && strstr(out, "bound"), "kubectl get tj -o wide",
              out);
    rc = kc("get service mnist -o jsonpath={.spec.clusterIP}");
    kc_expect(rc == 0 && !strcmp(out, "None"), "the job's headless Service", out);
    rc = kc("get events -o jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}'");
    kc_expect(rc == 0 && strstr(out, "Scheduled") && strstr(out, "3 pods bound by profile drover"),
              "an Event says the job was scheduled", out);
}

/* What metrics_counted polls: the /metrics URL and its last answer. */
typedef struct metrics_poll {
    char url[128];
    char *body;
    long code;
} metrics_poll;

static bool metrics_counted(void *arg)
{
    metrics_poll *m = arg;
    m->code = http_get(m->url, m->body);
    return m->code == 200 && strstr(m->body, "drover_pods_created_total{profile=\"drover\"} 3") &&
           strstr(m->body, "drover_decision_seconds_count{profile=\"drover\"} 1");
}

static bool port_logged(void *arg)
{
    const char *log = arg;
    return logged_port(log) > 0;
}

/* drover run's metrics: ready, and the bound pods counted (as their answers arrive). */
static void metrics(const char *log)
{
    static char body[65536] = "";
    wait_until(port_logged, (void *)log);
    int port = logged_port(log);
    metrics_poll m = {.body = body};
    snprintf(m.url, sizeof m.url, "http://127.0.0.1:%d/readyz", port);
    long code = port ? http_get(m.url, body) : 0;
    kc_expect(code == 200, "drover run's /readyz is 200 once synced", body);
    snprintf(m.url, sizeof m.url, "http://127.0.0.1:%d/metrics", port);
    kc_expect(port && wait_until(metrics_counted, &m),
              "drover run's /metrics counts the 3 pods and one gang's decision", body);
}

/* Another operator's gang, as Kubeflow's training operator makes one: both pods bound, the
 * PodGroup Scheduled, its Event. */
static void pod_group(void)
{
    kc_write(
        "gang.yaml",
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata:\n  name: tf-gang\n"
        "spec:\n  minMember: 2\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: tf-gang-worker-0\n  labels:\n"
        "    scheduling.x-k8s.io/pod-group: tf-gang\nspec:\n  schedulerName: drover\n"
        "  containers:\n  - {name: tensorflow, image: t, resources: {requests: {cpu: \"1\"}}}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: tf-gang-worker-1\n  labels:\n"
        "    scheduling.x-k8s.io/pod-group: tf-gang\nspec:\n  schedulerName: drover\n"
        "  containers:\n  - {name: tensorflow, image: t, resources: {requests: {cpu: \"1\"}}}\n");
    int rc = kc("create --validate=false -f %s/gang.yaml", kc_dir());
    kc_expect(rc == 0 && strstr(out, "tf-gang-worker-1 created"), "kubectl create a pod group",
              out);
    rc = kc_until("get podgroups", "Scheduled");
    show("get podgroups");
    kc_expect(rc == 0 && strstr(out, "tf-gang") && strstr(out, "Scheduled") &&
                  strstr(out, "MINMEMBER"),
              "kubectl get podgroups: tf-gang Scheduled", out);
    kc("get pods -l scheduling.x-k8s.io/pod-group=tf-gang -o wide");
    show("get pods -l scheduling.x-k8s.io/pod-group=tf-gang -o wide");
    rc = kc("get pods -l scheduling.x-k8s.io/pod-group=tf-gang -o "
            "jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}'");
    kc_expect(rc == 0 && lines(out) == 2, "its two pods are bound", out);
    rc = kc("get events --field-selector involvedObject.kind=PodGroup -o "
            "jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}'");
    show("get events (PodGroup)");
    kc_expect(rc == 0 && strstr(out, "Scheduled: 2 pods bound by profile drover"),
              "an Event says the pod group was scheduled", out);
}

/* A job naming a Queue that does not exist yet: held, saying why; admitted once the Queue is
 * created, whose status then shows it and its use. */
static void queued_job(void)
{
    kc_write("queued.yaml",
             "apiVersion: drover.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: lab-job\n"
             "spec:\n  queue: research\n  replicaSpecs:\n    Worker:\n      replicas: 2\n"
             "      template:\n        spec:\n          schedulerName: drover\n"
             "          containers:\n          - {name: t, image: t, resources: {requests: "
             "{cpu: \"1\"}}}\n");
    kc_write("queue.yaml", "apiVersion: drover.dev/v1alpha1\nkind: Queue\nmetadata:\n"
                           "  name: research\nspec:\n  weight: 2\n  nominalQuota:\n"
                           "    cpu: \"4\"\n");
    int rc = kc("create --validate=false -f %s/queued.yaml", kc_dir());
    kc_expect(rc == 0 && strstr(out, "lab-job created"), "kubectl create a job naming a queue",
              out);
    rc = kc_until("get events --field-selector involvedObject.name=lab-job -o "
                  "jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}'",
                  "QueueMissing");
    show("get events (lab-job)");
    kc_expect(rc == 0 && strstr(out, "QueueMissing: spec.queue names Queue research"),
              "an Event says the job waits for its Queue", out);
    rc = kc("create --validate=false -f %s/queue.yaml", kc_dir());
    kc_expect(rc == 0 && strstr(out, "research created"), "kubectl create the queue", out);
    /* (lab-job, its 2 workers of 1 CPU) */
    rc = kc_until("get queue research -o jsonpath='{.status.admitted}/{.status.used.cpu}'", "1/2");
    kc_expect(rc == 0 && !strcmp(out, "1/2"), "Queue research's status: 1 admitted, 2 CPUs used",
              out);
    rc = kc("get queues");
    show("get queues");
    kc_expect(rc == 0 && strstr(out, "research") && strstr(out, "CPU QUOTA"), "kubectl get queues",
              out);
}

/* A job that waits for room (2 workers of 7.5 CPUs: it fits the empty nodes, not these, whose
 * pods never end here): its Waiting Event gives the room it needs and, the drover profile
 * ordering by the combined priority, every factor of it. */
static void waiting_job(void)
{
    kc_write("big.yaml",
             "apiVersion: drover.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: big-job\n"
             "spec:\n  replicaSpecs:\n    Worker:\n      replicas: 2\n"
             "      template:\n        spec:\n          schedulerName: drover\n"
             "          containers:\n          - {name: t, image: t, resources: {requests: "
             "{cpu: \"7500m\"}}}\n");
    int rc = kc("create --validate=false -f %s/big.yaml", kc_dir());
    kc_expect(rc == 0 && strstr(out, "big-job created"), "kubectl create a job that waits", out);
    rc = kc_until("get events --field-selector involvedObject.name=big-job,reason=Waiting -o "
                  "jsonpath='{range .items[*]}{.message}{\"\\n\"}{end}'",
                  "waiting");
    show("get events (big-job, Waiting)");
    kc_expect(rc == 0 && strstr(out, "waiting for room") && strstr(out, "; priority ") &&
                  strstr(out, " user ") && strstr(out, " class ") && strstr(out, " wait ") &&
                  strstr(out, " parallelism ") && strstr(out, " share "),
              "the Waiting Event gives every factor of the job's priority", out);
}

/* SIGTERM: drover exits 0 with its summary line (log: its stderr). */
static void stop_drover(pid_t pid, const char *log)
{
    int st = 0;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    FILE *f = fopen(log, "r");
    size_t len = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[len] = 0;
    if (f)
        fclose(f);
    kc_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "stopped after") &&
                  strstr(out, "4 jobs"), /* the example, the pod group, lab-job, big-job */
              "drover run stops on SIGTERM with exit status 0 and a summary", out);
}

int main(void)
{
    if (!kc_available()) {
        printf("kubectl not found on PATH: test skipped\n");
        return 77;
    }
    char fx[512];
    snprintf(fx, sizeof fx, "%.400s/tests/fixtures/k8s", src_dir());
    drv_apiserver *s = NULL;
    drv_apiserver_opts o = {.fixture_dir = fx, .request_log = true};
    drv_diag d = {{0}};
    if (drv_apiserver_start(&s, &o, &d)) {
        fprintf(stderr, "cannot start the test server: %s\n", d.msg);
        return 1;
    }
    if (kc_setup(drv_apiserver_port(s), "drover-run") != 0) {
        drv_apiserver_free(s);
        return 1;
    }
    cluster();
    char log[512];
    snprintf(log, sizeof log, "%s/drover.log", kc_dir());
    pid_t pid = start_drover(log);
    example_job();
    metrics(log);
    pod_group();
    queued_job();
    waiting_job();
    stop_drover(pid, log);
    /* every request the drover binary made is one deploy/rbac.yaml grants */
    kc_expect(drv_rbac_check_server(s, stdout) == 0, "deploy/rbac.yaml grants every request", "");
    drv_apiserver_free(s);
    kc_cleanup();
    return kc_failures() ? 1 : 0;
}
