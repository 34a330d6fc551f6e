/*
 * test_e2e20.c - issue 13's end-to-end proof: the 20 jobs of tests/fixtures/e2e20/ through
 * `drover run` and `drover emulate` on the in-memory test API server, and the same workload
 * through `drover sim`, compared job by job.
 *
 *   1. `drover sim --cluster C --workload W --models M --policy gang-fifo`: each job's start
 *      and end (jobs-gang-fifo.csv);
 *   2. the test API server (audit on), `drover emulate --cluster C --speed X` and `drover run
 *      --policy gang-fifo` as child processes (their own User-Agents); once both are ready,
 *      time 0: the test reads W with the simulator's own loader and creates each job at its
 *      submit time / X (a TrainingJob of PS+Chief+Worker or Master+Worker, or a PodGroup and
 *      its pods), every pod annotated with its run time (W's header says how), and polls the
 *      TrainingJobs and PodGroups every 20 ms for the moment each is Succeeded;
 *   3. checked: all 20 Succeeded; from the audit log replayed (history.h): no pod bound twice,
 *      no node over-committed at any moment, no gang half-bound; failonce-08 restarted; every
 *      answer of 400 or more is one of the expected ones (expected_4xx below, each with why);
 *      both controllers exit 0 on SIGTERM; every request either made is granted by the
 *      shipped RBAC (deploy/rbac.yaml, deploy/emulate-rbac.yaml; rbac_check.h);
 *   4. parity: the order in which jobs got their first pod bound (audit log) never inverts two
 *      jobs the simulator started at different times, and each job's completion time (end -
 *      submit, emulated seconds: real seconds since time 0 times X) is within 5 % of the
 *      simulator's. The per-job table is printed (scripts/parity.sh).
 * With DROVER_E2E_SHOW=1 (scripts/kubectl-doc.sh) it also prints `kubectl get tj`, `kubectl
 * describe tj failonce-08` and `kubectl get podgroups` at the end (kubectl on PATH).
 *
 * Timing: the emulator runs X = 10 emulated seconds per real second, so the 460 emulated
 * seconds of the workload take about 50 s. Each hand-off on the cluster (a pod ends -> the
 * controller sees it -> the next gang bound -> the emulator starts it) costs tens of
 * milliseconds, X times that in emulated time, more on a loaded machine: at X = 20 with 8
 * builds sharing 2 cores a job that never waited came out 4 % late, at X = 10 the largest
 * difference was 1.4 %. The simulator's cycles run on whole seconds (period 1 s, every event of
 * the workload at a whole second). docs/running.md quotes a run's table.
 *
 * usage: test_e2e20 [--speed X]        (default 10; 1 <= X <= 100)
 */
#include "apiserver.h"
#include "history.h"
#include "kubectl_util.h"
#include "rbac_check.h"

#include "drover/clock.h"
#include "drover/kube.h"
#include "drover/sim.h"
#include "json.h" /* drv_kube_request, a private header of drover_kube */

#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_JOBS = 20 };
#define POLICY "gang-fifo"
#define TOLERANCE 0.05

/* Answers of 400 or more a correct run may meet, and why. Each line of the server's error log
 * must match one: (status, method, a substring of the path, the User-Agent's start). */
static const struct {
    int code;
    const char *method, *path, *agent, *why;
} expected_4xx[] = {
    /* The emulator confirms a deletion with a DELETE (grace 0, the uid as precondition); the
     * controller deleting a finished job's pods (cleanPodPolicy Running) or a restarted pod may
     * have removed it first (404), or a pod re-created under the name fails the precondition
     * (409): both are the emulator's "gone already" answers (docs/emulate.md). */
    {404, "DELETE", "/pods/", "drover-emulate/", "a pod the emulator confirms deleted is gone"},
    {409, "DELETE", "/pods/", "drover-emulate/", "the name belongs to a re-created pod"},
    /* Read-modify-write of a pod's status racing another writer (the controller deleting it):
     * drv_kube_update reads again and retries. */
    {409, "PUT", "/status", "drover-emulate/", "a status write raced another write: retried"},
};

static int failures;

static void expect(bool ok, const char *what, double n)
{
    printf("%s: %s (%g)\n", ok ? "ok" : "FAIL", what, n);
    failures += !ok;
}

static double now_s(void)
{
    return drv_clock_mono();
}

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}

/* ---- children ------------------------------------------------------------------------------ */

/* Runs argv with stderr (and stdout) into log; the child's pid. */
static pid_t spawn(const char *log, char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(log, "w", stderr) || dup2(fileno(stderr), 1) < 0)
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static int stop(pid_t pid)
{
    int st = 0;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

/* The metrics port `drover run` logged, or 0. */
static int logged_port(const char *log)
{
    char buf[8192] = "";
    FILE *f = fopen(log, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    const char *p = strstr(buf, "metrics on http://127.0.0.1:");
    return p ? atoi(p + strlen("metrics on http://127.0.0.1:")) : 0;
}

/* Waits (up to 20 s) until `drover run`'s /readyz answers 200: its caches are synced. */
static bool run_ready(const char *log)
{
    for (double t0 = now_s(); now_s() - t0 < 20; sleep_s(0.05)) {
        int port = logged_port(log);
        if (!port)
            continue;
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d/readyz", port);
        CURL *h = curl_easy_init();
        long code = 0;
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 2L);
        if (curl_easy_perform(h) == CURLE_OK)
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(h);
        if (code == 200)
            return true;
    }
    return false;
}

/* ---- the API, as the test reads and writes it ---------------------------------------------- */

static json_t *get(drv_kube *k, const char *path)
{
    drv_diag d = {{0}};
    long st = 0;
    json_t *out = NULL;
    if (drv_kube_request(k, "GET", path, NULL, NULL, &st, &out, &d) != 0 || st != 200) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static bool post(drv_kube *k, const char *path, const char *body)
{
    drv_diag d = {{0}};
    long st = 0;
    if (drv_kube_request(k, "POST", path, NULL, body, &st, NULL, &d) == 0 && st == 201)
        return true;
    fprintf(stderr, "test_e2e20: POST %s: %ld %s\n", path, st, d.msg);
    return false;
}

/* Nodes registered Ready and without taints (the emulator's are n-0 ... n-3). */
static int ready_nodes(drv_kube *k)
{
    json_t *list = get(k, "/api/v1/nodes");
    int n = 0;
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(list, "items"), i, node)
    {
        json_t *spec = json_object_get(node, "spec");
        size_t j;
        json_t *c;
        bool ready = false;
        json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), j, c)
        {
            const char *type = json_string_value(json_object_get(c, "type"));
            const char *st = json_string_value(json_object_get(c, "status"));
            ready |= type && st && !strcmp(type, "Ready") && !strcmp(st, "True");
        }
        n += ready && json_array_size(json_object_get(spec, "taints")) == 0;
    }
    json_decref(list);
    return n;
}

/* ---- the workload --------------------------------------------------------------------------- */

typedef struct e2e_job {
    const drv_jobspec *spec;
    double run_s;   /* each pod's duration annotation, emulated seconds */
    bool podgroup;  /* submitted as a PodGroup and its pods */
    bool failonce;  /* its pods fail once and are restarted */
    int slots;      /* pods of its gang */
    bool submitted; /* created on the server */
    double done;    /* emulated seconds since time 0 when seen Succeeded; < 0 not yet */
    double sim_start, sim_end;
    int cluster_rank; /* position of its first binding among the jobs' (audit log) */
} e2e_job;

/* Emulated seconds by which a job's other pods end before its chief (workload.yaml says why). */
#define EARLY_S 2.0

/* A pod template: requests of role r, its duration annotation (the chief's D, the others' D -
 * EARLY_S), and the failure annotations on failonce-08's chief. */
static void template_json(char *out, size_t n, const e2e_job *j, int r, bool chief,
                          const char *container)
{
    const drv_rolespec *rs = &j->spec->role[r];
    char fail[160] = "";
    if (j->failonce && chief)
        snprintf(fail, sizeof fail,
                 ",\"drover.dev/exit-code\":\"137\",\"drover.dev/fail-times\":\"1\"");
    snprintf(out, n,
             "{\"metadata\":{\"annotations\":{\"drover.dev/duration-seconds\":\"%g\"%s}},"
             "\"spec\":{\"containers\":[{\"name\":\"%s\",\"image\":\"train\",\"resources\":{"
             "\"requests\":{\"cpu\":\"%lldm\",\"memory\":\"%lldMi\"}}}]}}",
             chief ? j->run_s : j->run_s - EARLY_S, fail, container, (long long)rs->req.cpu,
             (long long)(rs->req.mem >> 20));
}

/* ,"Name":{replicas,[min,max,]restartPolicy,template} for role r, or nothing without pods. */
static void role_json(char *out, size_t n, const e2e_job *j, int r, const char *name,
                      const char *container)
{
    const drv_rolespec *rs = &j->spec->role[r];
    char tmpl[1024], bounds[96] = "";
    out[0] = 0;
    if (rs->replicas == 0)
        return;
    template_json(tmpl, sizeof tmpl, j, r, r == DRV_ROLE_CHIEF, container);
    if (rs->min != rs->replicas || rs->max != rs->replicas)
        snprintf(bounds, sizeof bounds, ",\"minReplicas\":%d,\"maxReplicas\":%d", (int)rs->min,
                 (int)rs->max);
    snprintf(out, n, ",\"%s\":{\"replicas\":%d%s,\"restartPolicy\":\"OnFailure\",\"template\":%s}",
             name, (int)rs->replicas, bounds, tmpl);
}

/* TensorFlow's shape (PS, Chief, Worker) when the job has a PS, else PyTorch's (Master,
 * Worker); the simulator's chief is the Chief or the Master. */
static bool submit_trainingjob(drv_kube *k, const e2e_job *j)
{
    const drv_jobspec *s = j->spec;
    bool tf = s->role[DRV_ROLE_PS].replicas > 0;
    const char *ctr = tf ? "tensorflow" : "pytorch";
    char ps[1536], chief[1536], worker[1536], roles[4700], body[5120];
    role_json(ps, sizeof ps, j, DRV_ROLE_PS, "PS", ctr);
    role_json(chief, sizeof chief, j, DRV_ROLE_CHIEF, tf ? "Chief" : "Master", ctr);
    role_json(worker, sizeof worker, j, DRV_ROLE_WORKER, "Worker", ctr);
    snprintf(roles, sizeof roles, "%s%s%s", ps, chief, worker);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
             "\"name\":\"%s\"},\"spec\":{\"replicaSpecs\":{%s}}}",
             s->name, roles + 1); /* the first role's comma left out */
    return post(k, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs", body);
}

/* A PodGroup of minMember = its workers, then its pods, as another operator makes them. */
static bool submit_podgroup(drv_kube *k, const e2e_job *j)
{
    const drv_jobspec *s = j->spec;
    char body[2048], tmpl[1024];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":"
             "{\"name\":\"%s\"},\"spec\":{\"minMember\":%d}}",
             s->name, (int)s->role[DRV_ROLE_WORKER].replicas);
    if (!post(k, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups", body))
        return false;
    template_json(tmpl, sizeof tmpl, j, DRV_ROLE_WORKER, true, "worker"); /* all end together */
    for (int i = 0; i < s->role[DRV_ROLE_WORKER].replicas; i++) {
        /* the template's metadata and spec, with a name, the group's label and our scheduler */
        json_t *pod = json_loads(tmpl, 0, NULL);
        json_t *meta = json_object_get(pod, "metadata");
        char name[128];
        snprintf(name, sizeof name, "%s-worker-%d", s->name, i);
        json_object_set_new(meta, "name", json_string(name));
        json_object_set_new(meta, "labels",
                            json_pack("{s:s}", "scheduling.x-k8s.io/pod-group", s->name));
        json_object_set_new(json_object_get(pod, "spec"), "schedulerName", json_string("drover"));
        json_object_set_new(pod, "apiVersion", json_string("v1"));
        json_object_set_new(pod, "kind", json_string("Pod"));
        char *text = json_dumps(pod, JSON_COMPACT);
        bool ok = text && post(k, "/api/v1/namespaces/default/pods", text);
        free(text);
        json_decref(pod);
        if (!ok)
            return false;
    }
    return true;
}

/* Marks the jobs of list (TrainingJobs or PodGroups) seen Succeeded now, at emulated time t. */
static void mark_done(json_t *list, e2e_job *jobs, int n, double t)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(list, "items"), i, o)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
        const char *ph = json_string_value(json_object_get(json_object_get(o, "status"), "phase"));
        for (int k = 0; name && ph && k < n; k++)
            if (jobs[k].done < 0 && !strcmp(jobs[k].spec->name, name) && !strcmp(ph, "Succeeded"))
                jobs[k].done = t;
    }
}

/* Submits every job at its time, polls until all are Succeeded (or the time limit). */
static int drive(drv_kube *k, e2e_job *jobs, int n, double speed, double limit_s)
{
    double t0 = now_s();
    int done = 0;
    while (done < n && now_s() - t0 < limit_s) {
        double t = (now_s() - t0) * speed;
        for (int i = 0; i < n; i++)
            if (!jobs[i].submitted && jobs[i].spec->submit <= t) {
                jobs[i].submitted = true;
                if (!(jobs[i].podgroup ? submit_podgroup(k, &jobs[i])
                                       : submit_trainingjob(k, &jobs[i])))
                    return -1;
            }
        json_t *tj = get(k, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs");
        json_t *pg = get(k, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups");
        t = (now_s() - t0) * speed;
        mark_done(tj, jobs, n, t);
        mark_done(pg, jobs, n, t);
        json_decref(tj);
        json_decref(pg);
        done = 0;
        for (int i = 0; i < n; i++)
            done += jobs[i].done >= 0;
        sleep_s(0.02);
    }
    return done;
}

/* ---- the simulator's side ------------------------------------------------------------------ */

/* Runs `drover sim` into dir and reads each job's start and end from its jobs CSV. */
static int simulate(const char *bin, const char *fx, const char *dir, e2e_job *jobs, int n)
{
    char exe[600], cl[600], wl[600], md[600], out[600], log[600];
    snprintf(exe, sizeof exe, "%s/drover", bin);
    snprintf(cl, sizeof cl, "%s/cluster.yaml", fx);
    snprintf(wl, sizeof wl, "%s/workload.yaml", fx);
    snprintf(md, sizeof md, "%s/models.csv", fx);
    snprintf(out, sizeof out, "%s/sim", dir);
    snprintf(log, sizeof log, "%s/sim.log", dir);
    char *argv[] = {exe,        "sim",  "--cluster", cl,  "--workload", wl,  "--models", md,
                    "--policy", POLICY, "--out",     out, "--seed",     "1", NULL};
    int st = 0;
    waitpid(spawn(log, argv), &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return fprintf(stderr, "test_e2e20: drover sim failed (log %s)\n", log), -1;
    char csv[700], line[512];
    snprintf(csv, sizeof csv, "%s/jobs-" POLICY ".csv", out);
    FILE *f = fopen(csv, "r");
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        /* job,user,model,ps,workers_requested,workers_last,submit_s,start_s,end_s,... */
        char *field[9] = {0}, *p = line;
        for (int i = 0; i < 9 && p; i++) {
            field[i] = p;
            p = strchr(p, ',');
            if (p)
                *p++ = 0;
        }
        for (int i = 0; field[8] && i < n; i++)
            if (!strcmp(jobs[i].spec->name, field[0])) {
                jobs[i].sim_start = atof(field[7]);
                jobs[i].sim_end = atof(field[8]);
                found++;
            }
    }
    if (f)
        fclose(f);
    return found == n ? 0 : (fprintf(stderr, "test_e2e20: %s: %d of %d jobs\n", csv, found, n), -1);
}

/* ---- checks --------------------------------------------------------------------------------- */

/* Every answer of 400 or more is an expected one; prints the others. Returns how many not. */
static int unexpected_4xx(const char *log, int *total)
{
    int bad = 0;
    *total = 0;
    for (const char *line = log; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[700], method[16] = "", path[512] = "", agent[160] = "";
        int code = 0;
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        sscanf(buf, "%d %15s %511s %159s", &code, method, path, agent);
        bool ok = false;
        for (size_t i = 0; i < sizeof expected_4xx / sizeof *expected_4xx && !ok; i++)
            ok = code == expected_4xx[i].code && !strcmp(method, expected_4xx[i].method) &&
                 strstr(path, expected_4xx[i].path) &&
                 !strncmp(agent, expected_4xx[i].agent, strlen(expected_4xx[i].agent));
        if (!ok)
            fprintf(stderr, "unexpected answer: %s\n", buf);
        bad += !ok;
        (*total)++;
        line += len + (end != NULL);
    }
    return bad;
}

/* Audit checks: history.h's three, every gang bound, failonce-08's pods bound again. */
static void check_history(drv_apiserver *srv, e2e_job *jobs, int n)
{
    char *audit = drv_apiserver_audit(srv);
    hist *h = hist_new();
    char gang[128];
    for (int i = 0; i < n; i++) {
        snprintf(gang, sizeof gang, "default/%s", jobs[i].spec->name);
        hist_gang(h, gang, jobs[i].slots);
    }
    hist_replay(h, audit ? audit : "");
    hist_counts c = hist_result(h);
    printf("audit: %ld events, %ld double binds, %ld slots succeeded twice, %ld over-commits, "
           "%ld half gangs\n",
           c.events, c.double_binds, c.twice_done, c.overcommits, c.half_gangs);
    expect(c.double_binds == 0, "no pod bound twice", (double)c.double_binds);
    expect(c.twice_done == 0, "no slot succeeded twice", (double)c.twice_done);
    expect(c.overcommits == 0, "no node over-committed at any moment", (double)c.overcommits);
    expect(c.half_gangs == 0, "no gang half-bound", (double)c.half_gangs);
    const char *order[MAX_JOBS * 2];
    int bound = hist_bind_order(h, order, MAX_JOBS * 2);
    expect(bound == n, "every job's gang bound", bound);
    for (int r = 0; r < bound && r < MAX_JOBS * 2; r++)
        for (int i = 0; i < n; i++)
            if (!strcmp(order[r] + strlen("default/"), jobs[i].spec->name))
                jobs[i].cluster_rank = r;
    for (int i = 0; i < n; i++)
        if (jobs[i].failonce) {
            snprintf(gang, sizeof gang, "default/%s", jobs[i].spec->name);
            int binds = hist_binds(h, gang);
            expect(binds == jobs[i].slots + 1, "failonce-08's chief bound again (restarted)",
                   binds);
        }
    hist_free(h);
    /* the history, one event a line, for whoever debugs a failure (kept with the logs) */
    char path[600];
    snprintf(path, sizeof path, "%s/audit.jsonl", kc_dir());
    FILE *f = fopen(path, "w");
    if (f && audit)
        fputs(audit, f);
    if (f)
        fclose(f);
    drv_free(audit);
    char *errs = drv_apiserver_errors(srv);
    int total = 0, bad = unexpected_4xx(errs ? errs : "", &total);
    printf("answers of 400 or more: %d, unexpected %d\n", total, bad);
    expect(bad == 0, "zero unexpected 4xx (or 5xx)", bad);
    drv_free(errs);
    /* every request of drover run and drover emulate granted by deploy/'s RBAC */
    char *log = drv_apiserver_request_log(srv);
    const char *src = getenv("DROVER_SOURCE_DIR");
    drv_diag d = {{0}};
    char *refused = log ? drv_rbac_refused(log, src ? src : ".", &d) : NULL;
    drv_rbac_keep_log(log); /* (for test_rbac_grants_used) */
    long lines = 0;
    for (const char *p = log; p && (p = strchr(p, '\n')); p++)
        lines++;
    if (refused && *refused)
        printf("%s", refused);
    printf("requests logged: %ld\n", lines);
    expect(refused && !*refused, refused ? "every request granted by deploy/'s RBAC" : d.msg,
           (double)lines);
    drv_free(refused);
    drv_free(log);
}

/* The per-job table, and the parity checks: no inversion of the simulator's start order, each
 * job's completion time (end - submit) within TOLERANCE. */
static void check_parity(const e2e_job *jobs, int n, double speed)
{
    printf("\nper-job table (emulated seconds; cluster = real seconds since time 0 x %g):\n",
           speed);
    printf("%-12s %6s %9s %7s %9s %11s %7s %8s\n", "job", "submit", "sim start", "sim end",
           "sim jct", "cluster jct", "diff %", "order");
    double worst = 0, sum = 0;
    for (int i = 0; i < n; i++) {
        double sub = jobs[i].spec->submit, sim = jobs[i].sim_end - sub;
        double cl = jobs[i].done - sub, diff = 100 * (cl - sim) / sim;
        int sim_rank = 0;
        for (int k = 0; k < n; k++)
            sim_rank += jobs[k].sim_start < jobs[i].sim_start;
        printf("%-12s %6.0f %9.1f %7.1f %9.1f %11.1f %+7.2f %4d/%-3d\n", jobs[i].spec->name, sub,
               jobs[i].sim_start, jobs[i].sim_end, sim, cl, diff, sim_rank + 1,
               jobs[i].cluster_rank + 1);
        worst = fmax(worst, fabs(diff));
        sum += diff;
    }
    printf("mean difference %+.2f %%, largest %.2f %% (order: simulator's start rank / "
           "cluster's first-binding rank; equal starts share a rank)\n\n",
           sum / n, worst);
    int inversions = 0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (jobs[a].sim_start < jobs[b].sim_start &&
                jobs[a].cluster_rank > jobs[b].cluster_rank) {
                fprintf(stderr, "order: the simulator started %s before %s, the cluster after\n",
                        jobs[a].spec->name, jobs[b].spec->name);
                inversions++;
            }
    expect(inversions == 0, "the same admission order as drover sim", inversions);
    expect(worst <= 100 * TOLERANCE, "every job's completion time within 5 % of drover sim's",
           worst);
}

/* kubectl's view of the finished run, for docs/running.md (scripts/kubectl-doc.sh). */
static void show(void)
{
    static char out[65536];
    const char *cmds[] = {"get tj", "describe tj failonce-08", "get podgroups"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        int rc = kc_run(out, sizeof out, cmds[i]);
        printf("<<<kubectl %s\n%s>>>\n", cmds[i], rc == 0 ? out : "(kubectl failed)\n");
    }
}

/* ---- main ----------------------------------------------------------------------------------- */

typedef struct inputs {
    drv_catalogue cat;
    drv_cluster_spec cl;
    drv_workload w;
} inputs;

/* Reads the fixtures with the simulator's loaders and derives each job's pods (workload.yaml's
 * header). */
static int load(inputs *in, const char *fx, e2e_job *jobs)
{
    char path[600];
    drv_diag d = {{0}};
    snprintf(path, sizeof path, "%s/models.csv", fx);
    int rc = drv_catalogue_load(&in->cat, path, &d);
    snprintf(path, sizeof path, "%s/cluster.yaml", fx);
    rc = rc ? rc : drv_cluster_load(&in->cl, path, &d);
    snprintf(path, sizeof path, "%s/workload.yaml", fx);
    rc = rc ? rc : drv_workload_load(&in->w, path, &in->cat, 1, &d);
    if (rc || in->w.n != MAX_JOBS) {
        fprintf(stderr, "test_e2e20: fixtures: %s (%d jobs)\n", d.msg, rc ? 0 : in->w.n);
        return -1;
    }
    for (int i = 0; i < in->w.n; i++) {
        const drv_jobspec *s = &in->w.jobs[i];
        e2e_job *j = &jobs[i];
        memset(j, 0, sizeof *j);
        j->spec = s;
        j->done = -1;
        j->podgroup = !strncmp(s->name, "podgroup-", 9);
        j->failonce = !strncmp(s->name, "failonce-", 9);
        int w = s->role[DRV_ROLE_WORKER].replicas + s->role[DRV_ROLE_CHIEF].replicas;
        j->run_s = s->max_steps / w * in->cat.v[s->model].compute_s;
        if (j->failonce) /* runs D, fails, starts again and runs D: 2 D + pod start in all */
            j->run_s = (j->run_s - in->cl.timing.pod_start) / 2;
        for (int r = 0; r < DRV_NROLES; r++)
            j->slots += s->role[r].replicas;
    }
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: test_e2e20 [--speed X]   (1 <= X <= 100; default 10)\n");
    return 2;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines in order with stderr's */
    double speed = 10;
    if (argc == 3 && !strcmp(argv[1], "--speed"))
        speed = atof(argv[2]);
    else if (argc != 1)
        return usage();
    if (!(speed >= 1 && speed <= 100))
        return usage();
    const char *src = getenv("DROVER_SOURCE_DIR"), *bin = getenv("DROVER_BINARY_DIR");
    src = src ? src : ".";
    bin = bin ? bin : "build";
    char fx[512], k8s[512], url[64], exe[600], spd[32], log_emu[600], log_run[600];
    snprintf(fx, sizeof fx, "%.400s/tests/fixtures/e2e20", src);
    snprintf(k8s, sizeof k8s, "%.400s/tests/fixtures/k8s", src);
    static inputs in;
    static e2e_job jobs[MAX_JOBS];
    if (load(&in, fx, jobs) != 0)
        return 1;

    drv_apiserver *srv = NULL;
    drv_apiserver_opts so = {.fixture_dir = k8s,
                             .crd_installed = true,
                             .podgroup_crd = true,
                             .audit = true,
                             .request_log = true,
                             .window = 100000}; /* no watch outlives the window: no 410 */
    drv_diag d = {{0}};
    if (drv_apiserver_start(&srv, &so, &d) != 0 || kc_setup(drv_apiserver_port(srv), "e2e20")) {
        fprintf(stderr, "test_e2e20: test server: %s\n", d.msg);
        return 1;
    }
    if (simulate(bin, fx, kc_dir(), jobs, MAX_JOBS) != 0)
        return 1;
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(srv));
    snprintf(exe, sizeof exe, "%s/drover", bin);
    snprintf(spd, sizeof spd, "%g", speed);
    snprintf(log_emu, sizeof log_emu, "%s/emulate.log", kc_dir());
    snprintf(log_run, sizeof log_run, "%s/run.log", kc_dir());
    char cl[600];
    snprintf(cl, sizeof cl, "%s/cluster.yaml", fx);
    char *emu_argv[] = {
        exe, "emulate", "--kubeconfig", (char *)kc_config(), "--cluster", cl, "--speed", spd, NULL};
    char *run_argv[] = {exe,        "run",  "--kubeconfig",   (char *)kc_config(),
                        "--policy", POLICY, "--metrics-addr", "127.0.0.1:0",
                        NULL};
    drv_kube_config cfg = {.server = url, .qps = 1000, .burst = 1000, .component = "test"};
    drv_kube *k = NULL;
    if (drv_kube_new(&k, &cfg, &d) != 0)
        return 1;
    pid_t emu = spawn(log_emu, emu_argv); /* from here on, every path stops both children */
    int nodes = 0;
    for (double t0 = now_s(); now_s() - t0 < 20 && nodes < in.cl.n; sleep_s(0.05))
        nodes = ready_nodes(k);
    expect(nodes == in.cl.n, "the emulator's nodes are Ready and untainted", nodes);
    pid_t run = spawn(log_run, run_argv);
    bool ready = run_ready(log_run);
    expect(ready, "drover run is ready (/readyz 200)", ready);

    double makespan = 0;
    for (int i = 0; i < MAX_JOBS; i++)
        makespan = fmax(makespan, jobs[i].sim_end);
    /* the simulator's makespan and half again, in real seconds, within ctest's TIMEOUT 150 */
    int done = ready ? drive(k, jobs, MAX_JOBS, speed, 1.5 * makespan / speed + 15) : 0;
    expect(done == MAX_JOBS, "every job Succeeded", done);
    if (getenv("DROVER_E2E_SHOW") && kc_available())
        show();
    int run_rc = stop(run), emu_rc = stop(emu);
    expect(run_rc == 0, "drover run exits 0 on SIGTERM", run_rc);
    expect(emu_rc == 0, "drover emulate exits 0 on SIGTERM", emu_rc);
    check_history(srv, jobs, MAX_JOBS);
    if (done == MAX_JOBS)
        check_parity(jobs, MAX_JOBS, speed);

    drv_kube_free(k);
    drv_apiserver_free(srv);
    drv_workload_fini(&in.w);
    drv_cluster_fini(&in.cl);
    drv_catalogue_fini(&in.cat);
    if (failures)
        fprintf(stderr, "%d checks failed; logs kept in %s\n", failures, kc_dir());
    else
        kc_cleanup();
    return failures ? 1 : 0;
}
