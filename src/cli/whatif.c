/*
 * whatif.c - `drover sim --from-snapshot DIR`: "what if" on a live cluster. DIR is what
 * `drover snapshot` wrote (snapshot_cmd.c): snapshot.yaml (its version, when and from where),
 * cluster.yaml and workload.yaml in the formats `drover sim` reads, the jobs that ran at that
 * moment marked running on their nodes (docs/formats.md, "Running jobs").
 *
 * Each policy of --policy replays from that moment (t0 = 0); then one table, a row per job
 * pending at t0 and per running one, says when it starts and finishes under each policy, in
 * time from t0, and a line per pending job compares each policy with the first:
 *
 *     with gang-preempt, job train-c starts in 4 min instead of 2 h 3 min
 *
 * A running job whose progress the snapshot could not read has its remaining work estimated
 * (sim_running.c says how); its row is marked `~`, and the table's footnote says so.
 */
#include "sim_cmd.h"

#include "drover/conf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The version of the snapshot directory's layout this drover reads and writes. */
#define SNAPSHOT_VERSION 1

static const char *const snapshot_files[] = {"snapshot.yaml", "cluster.yaml", "workload.yaml"};

/* DIR's files: each must exist (a clear message naming what is missing, not a parse error of
 * a file never written), snapshot.yaml's version must be ours. 0 or -1, the message printed. */
int whatif_resolve(sim_opts *o)
{
    const char *dir = o->from_snapshot;
    if (o->workload || o->cluster || o->trace || o->stream || o->seeds ||
        strcmp(o->mechanics, "default") != 0) {
        fprintf(stderr, "drover sim: --from-snapshot DIR brings its own cluster and jobs: not with "
                        "--workload, --cluster, --trace, --stream, --seeds or --mechanics\n");
        return -1;
    }
    for (size_t i = 0; i < sizeof snapshot_files / sizeof snapshot_files[0]; i++) {
        char path[4200];
        struct stat sb;
        errno = 0;
        snprintf(path, sizeof path, "%s/%s", dir, snapshot_files[i]);
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            fprintf(stderr,
                    "drover sim: --from-snapshot %s: %s: %s (a snapshot directory holds "
                    "snapshot.yaml, cluster.yaml and workload.yaml, as drover snapshot writes "
                    "them)\n",
                    dir, path, errno != 0 ? strerror(errno) : "not a file");
            return -1;
        }
    }
    drv_conf_doc doc = {0};
    drv_diag d = {{0}};
    char path[4200];
    snprintf(path, sizeof path, "%s/snapshot.yaml", dir);
    int64_t version = 0;
    const char *s;
    drv_conf *f;
    int rc = drv_conf_load_file(&doc, path, &d);
    if (!rc)
        rc = drv_conf_expect(&doc, doc.root, DRV_CONF_MAP, "top level", &d);
    if (!rc && !(f = drv_conf_get(doc.root, "version")))
        rc = drv_fail(&d, DRV_EINVAL, "%s:1: version: missing", path);
    else if (!rc)
        rc = drv_conf_int(&doc, f, "version", 0, INT32_MAX, &version, &d);
    if (!rc && version != SNAPSHOT_VERSION)
        rc = drv_fail(&d, DRV_EINVAL,
                      "%s:%d: version: this drover reads snapshots of version %d, found %lld (take "
                      "the snapshot again with this drover)",
                      path, f->line, SNAPSHOT_VERSION, (long long)version);
    if (!rc && (f = drv_conf_get(doc.root, "takenAt")) &&
        (rc = drv_conf_str(&doc, f, "takenAt", &s, &d)) == 0)
        snprintf(o->snap_taken, sizeof o->snap_taken, "%s", s);
    if (!rc && (f = drv_conf_get(doc.root, "server")) &&
        (rc = drv_conf_str(&doc, f, "server", &s, &d)) == 0)
        snprintf(o->snap_server, sizeof o->snap_server, "%s", s);
    if (!rc)
        rc = drv_conf_check_unused(&doc, doc.root, "top level", &d);
    drv_conf_doc_fini(&doc);
    if (rc) {
        fprintf(stderr, "drover sim: --from-snapshot: %s\n", d.msg);
        return -1;
    }
    snprintf(o->snap_cluster, sizeof o->snap_cluster, "%s/cluster.yaml", dir);
    snprintf(o->snap_workload, sizeof o->snap_workload, "%s/workload.yaml", dir);
    o->cluster = o->snap_cluster;
    o->workload = o->snap_workload;
    return 0;
}

/* A time from t0 as a reader says it: "now", "45 s", "4 min", "2 h 3 min", "3 d 4 h";
 * "never" for a job that does not start (or finish) within the horizon. */
static const char *span(double t, char *buf, size_t n)
{
    if (t < 0 || !isfinite(t))
        snprintf(buf, n, "never");
    else if (t < 0.5)
        snprintf(buf, n, "now");
    else if (t < 60)
        snprintf(buf, n, "%.0f s", t);
    else if (t < 3600)
        snprintf(buf, n, "%.0f min", floor(t / 60));
    else if (t < 86400)
        snprintf(buf, n, "%.0f h %.0f min", floor(t / 3600), floor(fmod(t, 3600) / 60));
    else
        snprintf(buf, n, "%.0f d %.0f h", floor(t / 86400), floor(fmod(t, 86400) / 3600));
    return buf;
}

/* One policy's run from t0; its start and end per job into start[], end[] (-1: never). */
static int run_one(const sim_opts *o, const sim_inputs *in, int p, double *start, double *end)
{
    drv_sim *s = NULL;
    drv_diag d = {{0}};
    drv_sim_config cfg = {.seed = in->seeds[0], .check = o->check, .workload_file = o->workload};
    int rc = drv_sim_new(&in->cluster, &in->wl[0], &in->cat, &in->prof[p], &cfg, &s, &d);
    if (!rc)
        rc = drv_sim_run(s, &d);
    if (!rc) {
        int32_t n;
        const drv_jobresult *r = drv_sim_jobs(s, &n);
        for (int32_t i = 0; i < n; i++) {
            start[i] = r[i].start;
            end[i] = r[i].end;
        }
    }
    drv_sim_free(s);
    if (rc)
        fprintf(stderr, "drover: %s\n", d.msg[0] ? d.msg : drv_strerror(rc));
    return rc == 0 ? 0 : rc == DRV_EINVAL ? EXIT_USAGE : EXIT_RUN;
}

static void print_row(const sim_inputs *in, int32_t i, const double *start, const double *end,
                      bool estimated)
{
    const drv_jobspec *js = &in->wl[0].jobs[i];
    char a[32], b[32];
    printf("%-32s %-8s", js->name, js->running ? (estimated ? "running~" : "running") : "pending");
    for (int p = 0; p < in->nprof; p++) {
        size_t k = (size_t)p * (size_t)in->wl[0].n + (size_t)i;
        if (js->running && start[k] == 0) { /* started before t0, as the snapshot saw it */
            char ago[40];
            double since = in->wl[0].running[js->running - 1].started_at;
            snprintf(ago, sizeof ago, "%s%s", span(-since, a, sizeof a),
                     since <= -0.5 ? " ago" : "");
            printf("  %12s %12s", ago, span(end[k], b, sizeof b));
        } else {
            printf("  %12s %12s", span(start[k], a, sizeof a), span(end[k], b, sizeof b));
        }
    }
    printf("\n");
}

/* "now", "never" or "in 4 min": when a job starts, as the sentences say it. */
static const char *when(double t, char *buf, size_t n)
{
    char s[32];
    span(t, s, sizeof s);
    snprintf(buf, n, "%s%s", t >= 0.5 && isfinite(t) ? "in " : "", s);
    return buf;
}

/* The sentences: per pending job, each policy after the first against the first, where they
 * differ by a second or more (the same start is no news). */
static void print_compare(const sim_inputs *in, const double *start)
{
    int32_t n = in->wl[0].n;
    int said = 0;
    for (int p = 1; p < in->nprof; p++)
        for (int32_t i = 0; i < n; i++) {
            double t = start[(size_t)p * (size_t)n + (size_t)i], t0 = start[i];
            bool same = (t < 0 && t0 < 0) || (t >= 0 && t0 >= 0 && fabs(t - t0) < 1);
            if (in->wl[0].jobs[i].running || same)
                continue;
            char a[40], b[32];
            printf("%swith %s, job %s starts %s instead of %s\n", said++ ? "" : "\n",
                   in->prof[p].name, in->wl[0].jobs[i].name, when(t, a, sizeof a),
                   span(t0, b, sizeof b));
        }
    if (!said)
        printf("\nevery policy starts each pending job when %s does\n", in->prof[0].name);
}

int whatif_run(const sim_opts *o, const sim_inputs *in)
{
    int32_t n = in->wl[0].n, nrun = 0, nest = 0;
    size_t cells = (size_t)in->nprof * (size_t)(n > 0 ? n : 1);
    double *start = drv_malloc(cells * sizeof *start), *end = drv_malloc(cells * sizeof *end);
    int status = start && end ? 0 : EXIT_RUN;
    if (status)
        fprintf(stderr, "drover: out of memory\n");
    for (int p = 0; !status && p < in->nprof; p++)
        status = run_one(o, in, p, start + (size_t)p * (size_t)n, end + (size_t)p * (size_t)n);
    if (status)
        goto out;
    for (int32_t i = 0; i < n; i++) {
        const drv_jobspec *js = &in->wl[0].jobs[i];
        nrun += js->running > 0;
        nest += js->running > 0 && in->wl[0].running[js->running - 1].done_steps < 0;
    }
    printf("what if: the snapshot of %s taken at %s: %d running and %d pending jobs on %d "
           "nodes\n",
           o->snap_server[0] ? o->snap_server : "a cluster",
           o->snap_taken[0] ? o->snap_taken : "an unknown time", nrun, n - nrun, in->cluster.n);
    printf("times from the snapshot's moment, when each job starts and finishes under each "
           "policy\n\n");
    printf("%-32s %-8s", "job", "state");
    for (int p = 0; p < in->nprof; p++)
        printf("  %12.12s %12s", in->prof[p].name, "");
    printf("\n%-32s %-8s", "", "");
    for (int p = 0; p < in->nprof; p++)
        printf("  %12s %12s", "starts", "finishes");
    printf("\n");
    for (int pass = 0; pass < 2; pass++) /* pending jobs first: what the question is about */
        for (int32_t i = 0; i < n; i++) {
            const drv_jobspec *js = &in->wl[0].jobs[i];
            if ((js->running > 0) != (pass == 1))
                continue;
            print_row(in, i, start, end,
                      js->running > 0 && in->wl[0].running[js->running - 1].done_steps < 0);
        }
    if (nest > 0)
        printf("\nrunning~: %d running job%s whose progress the snapshot could not read: the "
               "work left is an estimate (its rate on its nodes times the time it has run, at "
               "most 90 %% of the job; docs/what-if.md)\n",
               nest, nest == 1 ? "" : "s");
    if (in->nprof > 1 && n > nrun)
        print_compare(in, start);
out:
    drv_free(start);
    drv_free(end);
    return status;
}
