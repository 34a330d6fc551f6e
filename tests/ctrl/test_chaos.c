/*
 * test_chaos.c - `drover run` under faults and kills, checked against the API server's whole
 * history: never bind twice, never over-commit, never leave a gang half-bound.
 *
 * The cluster is the in-memory test API server on loopback with an audit log (every node and
 * pod event, in order), and an in-process `drover emulate` of 8 nodes of 8 CPUs that runs each
 * bound pod for its duration annotation. The test submits --jobs TrainingJobs of 1 PS and 4
 * workers (500m, 1Gi each), then runs `drover run` as a child process and SIGKILLs it --kills
 * times at seeded random moments, restarting it at once each time; the last one runs until
 * every job has succeeded (or one has Failed, or none more has for a minute: a stuck run, told
 * apart from a slow one by its progress rather than by the wall clock) and is stopped with
 * SIGTERM. Meanwhile the server answers about
 * --rate of the controller's requests (its User-Agent is drover-run/<version>; the emulator's and
 * the test's are not touched) with a fault: 409, 429 with Retry-After, 500, a 300 ms delay, every
 * watch dropped, or the watch window expired (410).
 *
 * Checked, from the audit log replayed event by event (history.h, shared with test_e2e20):
 *   over-commit   at no moment do the pods bound to a node and not finished request more CPU
 *                 or memory than it has;
 *   double bind   at no moment are two unfinished bound pods the same job, role and rank, and
 *                 no job, role and rank succeeds twice;
 *   half gang     no pod of a job ends before a pod of each of its 5 ranks has been bound;
 * and, from the objects at the end: every TrainingJob Succeeded; the last controller's failed
 * requests (its stop line) equal the error faults injected while it ran (409, 429, 500).
 *
 * Seeded and repeatable in what it injects: the same --seed draws the same faults and kill
 * times (the interleaving of threads still varies). Prints one summary line.
 *
 * usage: test_chaos [--seed N] [--jobs N] [--rate R] [--kills N] [--policy NAME] [--nodes N]
 *                   [--delay-ms MS] [--kill-bound N] [--keep]
 *        (defaults: seed $CHAOS_SEED or 1, 200 jobs, rate 0.1, 6 kills, gang-fifo, 8 nodes, no
 *        delay, kills at random moments; --keep: the controllers' logs and the audit log are
 *        kept (and their directory named) even when every check holds, as on a failure)
 * The restart experiment of issue 12 (4 nodes, 20 jobs, every request 150 ms late, each of 37
 * kills once 13 pods are bound and live, no faults):
 *        test_chaos --nodes 4 --jobs 20 --delay-ms 150 --kills 37 --kill-bound 13 --rate 0
 */
#include "apiserver.h"
#include "drover/kube.h"
#include "drover/emulator.h"
#include "drover/kube_types.h"
#include "history.h"
#include "json.h"
#include "kubectl_util.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { NODES = 8, RANKS = 5, MAX_JOBS = 2000 };
/* The last controller is stopped once no job has succeeded for this long (seconds): about 12
 * times a job's run at the emulator's speed, and what a stuck job costs a failing run. */
enum { STALL_S = 60 };

typedef struct opts {
    uint64_t seed;
    int jobs, kills, nodes;
    int delay_ms;   /* every request served this late (drv_apiserver_set_delay), 0: none */
    int kill_bound; /* > 0: each kill comes once this many pods are bound and live (and the
                       controller has run a random 0.3-1 s), not at a random moment */
    double rate;
    const char *policy;
    bool keep; /* keep the logs and the audit log even when every check holds */
} opts;

static int failures;

/* Counts a failed check: what, with the number that shows it. */
static void expect(bool ok, const char *what, long n)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s (%ld)\n", what, n);
        failures++;
    }
}

static uint64_t rng_state;
static double uniform(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static void sleep_s(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the controller as a child process ----------------------------------------------------- */

static pid_t start_drover(const opts *o, int incarnation, char *log, size_t nlog)
{
    const char *bin = getenv("DROVER_BINARY_DIR");
    char drover[512];
    snprintf(drover, sizeof drover, "%s/drover", bin ? bin : "build");
    snprintf(log, nlog, "%s/drover-%d.log", kc_dir(), incarnation);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "w", stderr);
        (void)f;
        execl(drover, drover, "run", "--kubeconfig", kc_config(), "--policy", o->policy,
              (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The "N failed requests" of the stop line in log, or -1. */
static long stop_line_failures(const char *log)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return -1;
    char line[1024];
    long n = -1;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, " failed requests");
        if (strstr(line, "stopped after") && p) {
            while (p > line && p[-1] >= '0' && p[-1] <= '9')
                p--;
            n = atol(p);
        }
    }
    fclose(f);
    return n;
}

/* ---- the workload -------------------------------------------------------------------------- */

static void submit(drv_kube *k, int i)
{
    char body[2048];
    const char *pod = "{\"metadata\":{\"annotations\":{\"" DRV_EMU_DURATION_ANNOTATION
                      "\":\"100\"}},\"spec\":{\"schedulerName\":\"drover\",\"containers\":[{"
                      "\"name\":\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":"
                      "\"500m\",\"memory\":\"1Gi\"}}}]}}";
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
             "\"name\":\"job-%d\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{"
             "\"PS\":{\"replicas\":1,\"template\":%s},\"Worker\":{\"replicas\":4,"
             "\"template\":%s}}}}",
             i, pod, pod);
    drv_diag d = {{0}};
    long st = 0;
    if (drv_kube_request(k, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
                         NULL, body, &st, NULL, &d) != 0 ||
        st != 201) {
        fprintf(stderr, "test_chaos: cannot submit job-%d: %ld %s\n", i, st, d.msg);
        exit(1);
    }
}

/* How many pods are bound and live (neither finished nor being deleted), or -1. */
static int live_bound_pods(drv_kube *k)
{
    drv_diag d = {{0}};
    long st = 0;
    json_t *list = NULL;
    if (drv_kube_request(k, "GET", "/api/v1/pods", NULL, NULL, &st, &list, &d) != 0)
        return -1;
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(list, "items"), i, p)
    {
        const char *ph = json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
        bool finished = ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
        n += json_object_get(json_object_get(p, "spec"), "nodeName") && !finished &&
             !json_object_get(json_object_get(p, "metadata"), "deletionTimestamp");
    }
    json_decref(list);
    return n;
}

/* How many TrainingJobs have status.phase Succeeded, and (*failed) how many Failed; tell: the
 * others are named on stderr (the first 10, with their phase), for whoever debugs a run that
 * did not finish. */
static int succeeded_jobs(drv_kube *k, bool tell, int *failed)
{
    drv_diag d = {{0}};
    long st = 0;
    json_t *list = NULL;
    if (drv_kube_request(k, "GET", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
                         NULL, NULL, &st, &list, &d) != 0)
        return -1;
    int n = 0;
    size_t i;
    json_t *tj;
    json_array_foreach(json_object_get(list, "items"), i, tj)
    {
        const char *ph = json_string_value(json_object_get(json_object_get(tj, "status"), "phase"));
        bool ok = ph && strcmp(ph, "Succeeded") == 0;
        *failed += ph && strcmp(ph, "Failed") == 0;
        if (tell && !ok && (int)i - n < 10)
            fprintf(stderr, "not succeeded: %s (phase %s)\n",
                    json_string_value(json_object_get(json_object_get(tj, "metadata"), "name")),
                    ph ? ph : "none");
        n += ok;
    }
    json_decref(list);
    return n;
}

/* ---- main ---------------------------------------------------------------------------------- */

static int usage(void)
{
    fprintf(stderr, "usage: test_chaos [--seed N] [--jobs N] [--rate R] [--kills N] "
                    "[--policy NAME] [--nodes N] [--delay-ms MS] [--kill-bound N] [--keep]\n");
    return 2;
}

static int parse(int argc, char **argv, opts *o)
{
    const char *env = getenv("CHAOS_SEED");
    *o = (opts){.seed = env ? strtoull(env, NULL, 10) : 1,
                .jobs = 200,
                .rate = 0.1,
                .kills = 6,
                .nodes = NODES,
                .policy = "gang-fifo"};
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--keep")) {
            o->keep = true;
            i--; /* (a flag without a value) */
            continue;
        }
        if (i + 1 >= argc)
            return usage();
        if (!strcmp(argv[i], "--seed"))
            o->seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--jobs"))
            o->jobs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rate"))
            o->rate = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--kills"))
            o->kills = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--policy"))
            o->policy = argv[i + 1];
        else if (!strcmp(argv[i], "--nodes"))
            o->nodes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--delay-ms"))
            o->delay_ms = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--kill-bound"))
            o->kill_bound = atoi(argv[i + 1]);
        else
            return usage();
    }
    if (o->jobs < 1 || o->jobs > MAX_JOBS || o->kills < 0 || o->rate < 0 || o->rate > 0.5 ||
        o->nodes < 1 || o->nodes > NODES || o->delay_ms < 0 || o->delay_ms > 5000 ||
        o->kill_bound < 0)
        return usage();
    return 0;
}

static drv_emulator *start_emulator(const char *url, int n)
{
    drv_emu_node nodes[NODES];
    for (int i = 0; i < n; i++) {
        nodes[i] = (drv_emu_node){.alloc = {.cpu = 8000, .mem = 32LL << 30}};
        snprintf(nodes[i].name, sizeof nodes[i].name, "n%d", i);
        snprintf(nodes[i].zone, sizeof nodes[i].zone, "zone-%d", i % 2);
        snprintf(nodes[i].rack, sizeof nodes[i].rack, "rack-%d", i % 4);
    }
    drv_emulator_opts eo;
    drv_emulator_opts_default(&eo);
    eo.speed = 20;
    eo.heartbeat_s = 5;
    drv_kube_config cfg = {
        .server = (char *)url, .qps = 1000, .burst = 1000, .component = "emulate"};
    drv_emulator *e = NULL;
    drv_diag d = {{0}};
    if (drv_emulator_new(&e, &cfg, nodes, n, &eo, &d) != 0 || drv_emulator_start(e, &d) != 0) {
        fprintf(stderr, "test_chaos: emulator: %s\n", d.msg);
        exit(1);
    }
    return e;
}

/* The store's resourceVersion when each controller was started and killed (stopped): what tells
 * which incarnation a binding of the audit log can have come from. */
typedef struct incarnations {
    uint64_t *from, *to; /* o.kills + 1 each */
} incarnations;

/* o.kills controllers started and SIGKILLed in turn: each once kill_bound pods are bound (or
 * 10 s on), after 0.3-1 s; without kill_bound, after 0.3-3 s. Returns the kills that came with
 * kill_bound pods bound. */
static int kill_rounds(const opts *o, drv_apiserver *srv, drv_kube *k, incarnations *in, char *log,
                       size_t nlog)
{
    int kills_bound = 0;
    for (int kill_no = 0; kill_no < o->kills; kill_no++) {
        in->from[kill_no] = drv_apiserver_rv(srv);
        pid_t pid = start_drover(o, kill_no, log, nlog);
        if (o->kill_bound > 0) {
            double t0 = now(), min = 0.3 + 0.7 * uniform();
            int bound = 0;
            while (now() - t0 < 10 &&
                   (now() - t0 < min || (bound = live_bound_pods(k)) < o->kill_bound))
                sleep_s(0.05);
            kills_bound += bound >= o->kill_bound;
        } else {
            sleep_s(0.3 + 2.7 * uniform());
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        in->to[kill_no] = drv_apiserver_rv(srv);
    }
    return kills_bound;
}

/* Waits while jobs keep succeeding: until every one has, or one has Failed (it never will
 * succeed), or none more has for STALL_S. A loaded machine is slow but makes progress, so the
 * wait scales with it; a stuck job is told apart from a slow one by the stall. Returns the jobs
 * that succeeded (those that did not are listed). */
static int await_jobs(const opts *o, drv_kube *k)
{
    int done = 0, failed = 0;
    for (double last = now(); done < o->jobs && failed == 0 && now() - last < STALL_S;
         sleep_s(0.5)) {
        failed = 0;
        int n = succeeded_jobs(k, false, &failed);
        if (n > done) {
            done = n;
            last = now();
        }
    }
    if (done < o->jobs) {
        failed = 0;
        done = succeeded_jobs(k, true, &failed);
    }
    return done;
}

/* The audit log's history checked (no pod bound twice, no rank succeeded twice, no node over-
 * committed, no gang half-bound), reported with the run's figures. */
static void check_history(const opts *o, const char *audit, int done, int kills_bound,
                          const drv_apiserver_faults *before, const drv_apiserver_faults *after,
                          long counted, int status)
{
    hist *h = hist_new();
    char gang[64];
    for (int i = 0; i < o->jobs; i++) {
        snprintf(gang, sizeof gang, "default/job-%d", i);
        hist_gang(h, gang, RANKS);
    }
    hist_replay(h, audit ? audit : "");
    hist_counts hc = hist_result(h);
    hist_free(h);
    long injected = (after->conflict - before->conflict) + (after->throttled - before->throttled) +
                    (after->internal - before->internal);
    char how[64] = "";
    if (o->kill_bound > 0)
        snprintf(how, sizeof how, " (%d of them once %d+ pods were bound)", kills_bound,
                 o->kill_bound);
    printf(
        "seed %llu: %d nodes, %d jobs, %d kills%s; faults injected: %ld conflict, %ld throttled, "
        "%ld internal, %ld gone, %ld slow, %ld dropped; jobs succeeded %d; events %ld; "
        "double binds %ld, succeeded twice %ld, over-commits %ld, half gangs %ld; last "
        "controller: %ld error faults injected, %ld failed requests counted\n",
        (unsigned long long)o->seed, o->nodes, o->jobs, o->kills, how, after->conflict,
        after->throttled, after->internal, after->gone, after->slow, after->dropped, done,
        hc.events, hc.double_binds, hc.twice_done, hc.overcommits, hc.half_gangs, injected,
        counted);
    expect(done == o->jobs, "jobs that did not succeed", o->jobs - done);
    expect(hc.double_binds == 0, "double binds", hc.double_binds);
    expect(hc.twice_done == 0, "ranks succeeded twice", hc.twice_done);
    expect(hc.overcommits == 0, "over-commits", hc.overcommits);
    expect(hc.half_gangs == 0, "half gangs", hc.half_gangs);
    expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "last controller's exit status",
           (long)status);
    expect(counted == injected, "last controller's failed requests unlike the faults injected",
           counted);
}

/* On failure (or --keep): the history too, one event a line, for whoever debugs it; else the
 * directory goes. */
static void keep_or_clean(const opts *o, const char *audit, const incarnations *in)
{
    if (!failures && !o->keep) {
        kc_cleanup();
        return;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/audit.jsonl", kc_dir());
    FILE *f = fopen(path, "w");
    if (f && audit)
        fputs(audit, f);
    if (f)
        fclose(f);
    for (int i = 0; i <= o->kills; i++)
        fprintf(stderr, "controller %d (drover-%d.log): resourceVersions %llu to %llu\n", i, i,
                (unsigned long long)in->from[i], (unsigned long long)in->to[i]);
    fprintf(stderr, "logs and the audit log kept in %s\n", kc_dir());
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o) != 0)
        return 2;
    rng_state = o.seed * 0x2545f4914f6cdd1dULL + 1;
    const char *src = getenv("DROVER_SOURCE_DIR");
    char fx[512], url[64];
    snprintf(fx, sizeof fx, "%s/tests/fixtures/k8s", src ? src : ".");
    drv_apiserver *srv = NULL;
    drv_apiserver_opts so = {.fixture_dir = fx, .crd_installed = true, .audit = true};
    drv_diag d = {{0}};
    if (drv_apiserver_start(&srv, &so, &d) != 0 || kc_setup(drv_apiserver_port(srv), "chaos")) {
        fprintf(stderr, "test_chaos: test server: %s\n", d.msg);
        return 1;
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(srv));
    drv_emulator *emu = start_emulator(url, o.nodes);
    drv_kube_config cfg = {.server = url, .qps = 1000, .burst = 1000, .component = "test"};
    drv_kube *k;
    if (drv_kube_new(&k, &cfg, &d) != 0)
        return 1;
    for (int i = 0; i < o.jobs; i++)
        submit(k, i);
    drv_apiserver_chaos(srv, o.seed, o.rate, "drover-run/");
    drv_apiserver_set_delay(srv, o.delay_ms);
    char log[600];
    incarnations in = {calloc((size_t)o.kills + 1, sizeof *in.from),
                       calloc((size_t)o.kills + 1, sizeof *in.to)};
    if (!in.from || !in.to)
        return 1;
    int kills_bound = kill_rounds(&o, srv, k, &in, log, sizeof log);
    drv_apiserver_faults before = drv_apiserver_fault_counts(srv);
    in.from[o.kills] = drv_apiserver_rv(srv);
    pid_t pid = start_drover(&o, o.kills, log, sizeof log);
    int done = await_jobs(&o, k);
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    in.to[o.kills] = drv_apiserver_rv(srv);
    drv_apiserver_faults after = drv_apiserver_fault_counts(srv);
    drv_apiserver_chaos(srv, 0, 0, NULL);
    char *audit = drv_apiserver_audit(srv);
    check_history(&o, audit, done, kills_bound, &before, &after, stop_line_failures(log), status);
    drv_kube_free(k);
    drv_emulator_stop(emu);
    drv_emulator_free(emu);
    drv_apiserver_free(srv);
    keep_or_clean(&o, audit, &in);
    drv_free(audit);
    free(in.from);
    free(in.to);
    return failures ? 1 : 0;
}
