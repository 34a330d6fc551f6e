/*
 * watch_bind - decision latency of `drover run`: from the watch event that completes a gang (a
 * TrainingJob's ADDED event) to the last binding request of its pods, against the in-memory
 * test API server on loopback. The baseline, in the same run, is the same controller scoring
 * every node for every pod (the exhaustive scan the placement index must agree with).
 *
 * Each job is submitted alone and waited for, so a figure is one gang's latency, not a queue's.
 * Reported per run: p50 / p99 / max of
 *   decide  event -> the cycle's decisions are made;
 *   sent    event -> a binder thread sends the gang's last binding request: what the target
 *           is about (the binders send in parallel; with more requests than binders, waiting
 *           for earlier answers is in it too);
 *   done    event -> the last answer is received (the API server's time included);
 * and the server's mean time per request.
 *
 * usage: watch_bind [--nodes N] [--jobs N] [--policy NAME] [--baseline 0|1]
 */
#include "apiserver.h"
#include "drover/controller.h"
#include "drover/policy.h"
#include "json.h"

#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    fprintf(stderr, "watch_bind: %s: %s\n", what, d ? d->msg : "");
    exit(1);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, cmp_dbl);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

static void post(drv_kube *k, const char *path, const char *body)
{
    drv_diag d = {{0}};
    long st;
    if (drv_kube_request(k, "POST", path, NULL, body, &st, NULL, &d) != 0)
        die(path, &d);
}

/* One run: a fresh server with n nodes, a controller, jobs submitted one by one. */
static void run(int nodes, int jobs, const drv_profile *prof, bool exhaustive)
{
    drv_diag d = {{0}};
    drv_apiserver *srv;
    drv_apiserver_opts so = {
        .fixture_dir = "tests/fixtures/k8s", .crd_installed = true, .window = 100000};
    if (drv_apiserver_start(&srv, &so, &d) != 0)
        die("test API server", &d);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(srv));
    drv_kube_config cfg = {.server = url, .qps = 1e6, .burst = 1000000};
    drv_kube *k;
    if (drv_kube_new(&k, &cfg, &d) != 0)
        die("client", &d);
    char body[2048];
    for (int i = 0; i < nodes; i++) {
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%d\","
                 "\"labels\":{\"topology.kubernetes.io/zone\":\"zone-%d\",\"drover.dev/rack\":"
                 "\"rack-%d\"}},\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"%d\","
                 "\"memory\":\"128Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
                 "\"status\":\"True\"}]}}",
                 i, i % 4, i / 20, i % 3 == 0 ? 64 : 32);
        post(k, "/api/v1/nodes", body);
        /* lift the not-ready taint the API server puts on a new node (the node lifecycle
         * controller's part) */
        char path[64];
        snprintf(path, sizeof path, "/api/v1/nodes/node-%d", i);
        drv_diag dd = {{0}};
        long st;
        if (drv_kube_request(k, "PATCH", path, "application/merge-patch+json",
                             "{\"spec\":{\"taints\":null}}", &st, NULL, &dd) != 0)
            die(path, &dd);
    }
    drv_ctrl_opts o = {.profile = prof, .exhaustive = exhaustive, .no_events = true};
    runner r = {0};
    if (drv_ctrl_new(&r.c, &cfg, &o, &d) != 0)
        die("controller", &d);
    pthread_t t;
    pthread_create(&t, NULL, run_main, &r);
    while (!drv_ctrl_get_stats(r.c).synced)
        usleep(1000);
    long pods = 0;
    for (int i = 0; i < jobs; i++) {
        int w = 1 + (i * 7) % 16, ps = i % 2;
        char psbody[512] = "";
        if (ps)
            snprintf(psbody, sizeof psbody,
                     ",\"PS\":{\"replicas\":1,\"template\":{\"spec\":{\"containers\":[{\"name\":"
                     "\"ps\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"2\","
                     "\"memory\":\"4Gi\"}}}]}}}");
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":"
                 "{\"name\":\"job-%d\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{"
                 "\"Worker\":{\"replicas\":%d,\"template\":{\"spec\":{\"schedulerName\":"
                 "\"drover\",\"containers\":[{\"name\":\"main\",\"image\":\"t\",\"resources\":{"
                 "\"requests\":{\"cpu\":\"%d\",\"memory\":\"8Gi\"}}}]}}}%s}}}",
                 i, w, 1 + i % 4, psbody);
        post(k, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs", body);
        pods += w + ps;
        long waited = 0;
        while (drv_ctrl_latencies(r.c, NULL, 0) < (size_t)i + 1 && waited++ < 10000)
            usleep(200);
        if (drv_ctrl_latencies(r.c, NULL, 0) < (size_t)i + 1) {
            fprintf(stderr, "watch_bind: job-%d was not placed within 2 s\n", i);
            exit(1);
        }
    }
    drv_ctrl_stats st = drv_ctrl_get_stats(r.c);
    size_t n = drv_ctrl_latencies(r.c, NULL, 0);
    drv_ctrl_latency *lat = malloc(n * sizeof *lat);
    double *dec = malloc(n * sizeof *dec), *done = malloc(n * sizeof *done),
           *sent = malloc(n * sizeof *sent);
    if (!lat || !dec || !done || !sent)
        die("out of memory", NULL);
    drv_ctrl_latencies(r.c, lat, n);
    double server = 0;
    for (size_t i = 0; i < n; i++) {
        dec[i] = lat[i].decide * 1e3;
        done[i] = lat[i].done * 1e3;
        sent[i] = lat[i].sent * 1e3;
        server += lat[i].server;
    }
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    printf(
        "%-22s %6d %6zu %6ld   %5.2f %5.2f %6.2f   %5.2f %5.2f %6.2f   %5.2f %5.2f %6.2f   %6.3f\n",
        exhaustive ? "exhaustive scan" : "index", nodes, n, pods, pct(dec, n, .5), pct(dec, n, .99),
        pct(dec, n, 1), pct(sent, n, .5), pct(sent, n, .99), pct(sent, n, 1), pct(done, n, .5),
        pct(done, n, .99), pct(done, n, 1), st.creates ? server * 1e3 / (double)st.creates : 0);
    fflush(stdout);
    free(lat);
    free(dec);
    free(done);
    free(sent);
    drv_ctrl_free(r.c);
    drv_kube_free(k);
    drv_apiserver_free(srv);
}

int main(int argc, char **argv)
{
    int nodes = 1000, jobs = 200, baseline = 1;
    const char *policy = "drover";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nodes"))
            nodes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--jobs"))
            jobs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--policy"))
            policy = argv[i + 1];
        else if (!strcmp(argv[i], "--baseline"))
            baseline = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: watch_bind [--nodes N] [--jobs N] [--policy NAME] "
                            "[--baseline 0|1]\n");
            return 2;
        }
    }
    if (nodes < 1 || jobs < 1) {
        fprintf(stderr, "watch_bind: --nodes and --jobs must be at least 1\n");
        return 2;
    }
    drv_profile prof;
    drv_diag d = {{0}};
    if (drv_profile_builtin(policy, &prof, &d) != 0)
        die("--policy", &d);
    printf("policy %s; gangs of 1-16 workers (+1 PS every other job), each submitted alone; "
           "milliseconds\n",
           policy);
    printf("%-22s %6s %6s %6s   %-17s   %-18s   %-18s   %s\n", "placement", "nodes", "gangs",
           "pods", "decide p50/p99/max", "sent p50/p99/max", "done p50/p99/max", "server/req");
    run(nodes, jobs, &prof, false);
    if (baseline)
        run(nodes, jobs, &prof, true);
    return 0;
}
