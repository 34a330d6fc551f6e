/*
 * run_mem - memory of `drover run` per pod (issue 26): the controller against the in-memory
 * test API server on loopback, with N nodes and P pods listed and watched, against the same
 * cluster without pods (the empty baseline) measured in the same run.
 *
 * Each run is a child process of its own (a clean heap): the server is filled first, then
 * the heap in use (mallinfo2: every allocation of the process, jansson's and libcurl's
 * included) and the resident set are read; the controller is started, waited for until synced
 * and then idle (no request for 1 s), and both are read again. The controller's share is the
 * difference (the server's own heap does not change meanwhile: the controller only reads). Per
 * pod = (controller's heap with P pods - controller's heap without pods) / P.
 *
 * Pods: another scheduler's, each bound to a node (round robin) and asking 100m and 128Mi, with
 * two labels, a controller ownerReference and a status: the other workloads of a shared cluster,
 * which the controller keeps as each node's foreign load (informer cache + mirror).
 *
 * In bench/run.sh (about 35 s on two shared cores).
 *
 * usage: run_mem [--nodes N] [--pods N]   (run from the repository root)
 */
#include "apiserver.h"
#include "drover/controller.h"
#include "drover/policy.h"
#include "json.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct runner {
    drv_ctrl *c;
    atomic_int stop;
    int rc;
    drv_diag d;
} runner;

static void *run_main(void *arg)
{
    runner *r = arg;
    r->rc = drv_ctrl_run(r->c, &r->stop, &r->d);
    return NULL;
}

static void die(const char *what, const drv_diag *d)
{
    fprintf(stderr, "run_mem: %s: %s\n", what, d ? d->msg : "");
    exit(1);
}

static void call(drv_kube *k, const char *method, const char *path, const char *ctype,
                 const char *body)
{
    drv_diag d = {{0}};
    long st;
    if (drv_kube_request(k, method, path, ctype, body, &st, NULL, &d) != 0)
        die(path, &d);
}

/* Heap in use and resident set, bytes. */
static void measure(double *heap, double *rss)
{
    malloc_trim(0);
    struct mallinfo2 mi = mallinfo2();
    *heap = (double)mi.uordblks + (double)mi.hblkhd;
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &res) != 2)
        res = 0;
    if (f)
        fclose(f);
    *rss = (double)res * (double)sysconf(_SC_PAGESIZE);
}

/* Nodes first, then pods from FILLERS threads, each with its own client (the server serves
 * them in parallel: the fill, not the measure, is most of a run's time). */
enum { FILLERS = 4 };

typedef struct filler {
    const drv_kube_config *cfg;
    int nodes, pods, first, step;
} filler;

static void *fill_pods(void *arg)
{
    const filler *fl = arg;
    drv_diag d = {{0}};
    drv_kube *k;
    if (drv_kube_new(&k, fl->cfg, &d) != 0)
        die("client", &d);
    char body[2048];
    for (int i = fl->first; i < fl->pods; i += fl->step) {
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-%d\","
                 "\"namespace\":\"default\",\"labels\":{\"app\":\"web\",\"shard\":\"s%d\"},"
                 "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
                 "\"name\":\"web-%d\",\"uid\":\"5f1c7a1e-0000-4000-8000-%012d\",\"controller\":"
                 "true}]},\"spec\":{\"nodeName\":\"node-%d\",\"containers\":[{\"name\":\"main\","
                 "\"image\":\"registry.example/web:1.0\",\"resources\":{\"requests\":{\"cpu\":"
                 "\"100m\",\"memory\":\"128Mi\"}}}]},\"status\":{\"phase\":\"Running\","
                 "\"podIP\":\"10.%d.%d.%d\"}}",
                 i, i % 16, i / 10, i / 10, i % fl->nodes, (i >> 16) & 255, (i >> 8) & 255,
                 i & 255);
        call(k, "POST", "/api/v1/namespaces/default/pods", NULL, body);
    }
    drv_kube_free(k);
    return NULL;
}

static void fill(drv_kube *k, const drv_kube_config *cfg, int nodes, int pods)
{
    char body[2048], path[128];
    for (int i = 0; i < nodes; i++) {
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%d\","
                 "\"labels\":{\"topology.kubernetes.io/zone\":\"zone-%d\",\"drover.dev/rack\":"
                 "\"rack-%d\"}},\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"32\","
                 "\"memory\":\"128Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
                 "\"status\":\"True\"}]}}",
                 i, i % 4, i / 20);
        call(k, "POST", "/api/v1/nodes", NULL, body);
        snprintf(path, sizeof path, "/api/v1/nodes/node-%d", i);
        call(k, "PATCH", path, "application/merge-patch+json", "{\"spec\":{\"taints\":null}}");
    }
    pthread_t t[FILLERS];
    filler fl[FILLERS];
    for (int i = 0; i < FILLERS; i++) {
        fl[i] = (filler){cfg, nodes, pods, i, FILLERS};
        pthread_create(&t[i], NULL, fill_pods, &fl[i]);
    }
    for (int i = 0; i < FILLERS; i++)
        pthread_join(t[i], NULL);
}

/* One run in this process: prints "pods heap rss" of the controller's share. */
static void run(int nodes, int pods, const drv_profile *prof)
{
    drv_diag d = {{0}};
    drv_apiserver *srv;
    drv_apiserver_opts so = {.fixture_dir = "tests/fixtures/k8s", .crd_installed = true};
    if (drv_apiserver_start(&srv, &so, &d) != 0)
        die("test API server", &d);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(srv));
    drv_kube_config cfg = {.server = url, .qps = 1e6, .burst = 1000000};
    drv_kube *k;
    if (drv_kube_new(&k, &cfg, &d) != 0)
        die("client", &d);
    fill(k, &cfg, nodes, pods);
    double h0, r0, h1, r1;
    measure(&h0, &r0);
    drv_ctrl_opts o = {.profile = prof, .no_events = true};
    runner r = {0};
    if (drv_ctrl_new(&r.c, &cfg, &o, &d) != 0)
        die("controller", &d);
    pthread_t t;
    pthread_create(&t, NULL, run_main, &r);
    while (!drv_ctrl_get_stats(r.c).synced)
        usleep(1000);
    for (long seen = -1, now; (now = drv_apiserver_requests(srv)) != seen;) {
        seen = now; /* (idle: no request for a second) */
        sleep(1);
    }
    measure(&h1, &r1);
    printf("%d %.0f %.0f\n", pods, h1 - h0, r1 - r0);
    fflush(stdout);
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    drv_ctrl_free(r.c);
    drv_kube_free(k);
    drv_apiserver_free(srv);
}

/* run() in a child process; its figures read back. */
static void run_child(int nodes, int pods, const drv_profile *prof, double *heap, double *rss)
{
    int fd[2];
    if (pipe(fd) != 0)
        die("pipe", NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        run(nodes, pods, prof);
        _exit(0);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    int p = 0, status = 0;
    if (!f || fscanf(f, "%d %lf %lf", &p, heap, rss) != 3)
        die("a run gave no figures", NULL);
    fclose(f);
    waitpid(pid, &status, 0);
}

int main(int argc, char **argv)
{
    int nodes = 5000, pods = 50000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nodes"))
            nodes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--pods"))
            pods = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: run_mem [--nodes N] [--pods N]\n");
            return 2;
        }
    }
    if (nodes < 1 || pods < 1) {
        fprintf(stderr, "run_mem: --nodes and --pods must be at least 1\n");
        return 2;
    }
    drv_profile prof;
    drv_diag d = {{0}};
    if (drv_profile_builtin("drover", &prof, &d) != 0)
        die("profile", &d);
    double h0, r0, h1, r1;
    run_child(nodes, 0, &prof, &h0, &r0);
    run_child(nodes, pods, &prof, &h1, &r1);
    printf("drover run (profile drover) on %d nodes, synced and idle; the controller's share of "
           "the process (heap in use: mallinfo2; resident set: statm)\n",
           nodes);
    printf("%-28s %8s %12s %12s\n", "cluster", "pods", "heap MB", "RSS MB");
    printf("%-28s %8d %12.1f %12.1f\n", "empty baseline (no pods)", 0, h0 / 1e6, r0 / 1e6);
    printf("%-28s %8d %12.1f %12.1f\n", "other workloads' pods", pods, h1 / 1e6, r1 / 1e6);
    printf("per pod, minus the baseline: heap %.0f B, RSS %.0f B\n", (h1 - h0) / pods,
           (r1 - r0) / pods);
    return 0;
}
