/*
 * report.c - what a run shows: the comparison table, JSON and CSV summaries, and the per-run
 * files written to --out (per-job results and the cluster's time series, which the plotting
 * and report tools read; the placement log when the run recorded it; scenario.json saying what
 * was simulated, so `drover report` can redraw everything from the directory alone).
 */
#include "drover/sim.h"

#include "drover/calib.h"
#include "drover/file.h"
#include "drover/version.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdarg.h>
#include <string.h>

static void cell_min(FILE *f, int width, double seconds)
{
    if (isfinite(seconds))
        fprintf(f, " %*.1f", width, seconds / 60.0);
    else
        fprintf(f, " %*s", width, "-");
}

bool drv_report_gpu_first(const drv_summary *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i].gpu_util > 0)
            return true;
    return false;
}

static void cell_pct(FILE *f, int width, double fraction)
{
    if (isfinite(fraction))
        fprintf(f, " %*.1f", width, 100 * fraction);
    else
        fprintf(f, " %*s", width, "-");
}

/*
 * The queues' block under the table, only when the cluster declares queues: per policy a line
 * of fairness figures, then a row per queue.
 */
static void queue_table(FILE *f, const drv_summary *v, int n)
{
    int w = 14;
    bool any = false;
    for (int i = 0; i < n; i++) {
        any |= v[i].nqueues > 0;
        if ((int)strlen(v[i].policy) > w)
            w = (int)strlen(v[i].policy);
        for (int32_t k = 0; k < v[i].nqueues; k++)
            if ((int)strlen(v[i].queue[k].name) + 2 > w)
                w = (int)strlen(v[i].queue[k].name) + 2;
    }
    if (!any)
        return;
    bool decayed = false; /* some run has fair share over time: the usage% column */
    for (int i = 0; i < n; i++)
        decayed = decayed || (v[i].nqueues > 0 && v[i].half_life > 0);
    fprintf(f,
            "\nper queue (JCT and wait in minutes; share%%: time-average dominant share of the "
            "cluster; quota%%: of its nominal quota%s)\nfairness: Jain's index over share/weight; "
            "finish-time fairness rho = JCT / time alone on 1/N of the cluster (N queues)\n",
            decayed ? "; usage%: dominant share decayed by the profile's half_life, at the end"
                    : "");
    fprintf(f, "%-*s %7s %5s %5s %8s %8s %7s %7s%s\n", w, "policy / queue", "weight", "jobs",
            "done", "avgJCT", "avgWait", "share%", "quota%", decayed ? "  usage%" : "");
    for (int i = 0; i < n; i++) {
        const drv_summary *s = &v[i];
        if (s->nqueues == 0)
            continue;
        fprintf(f, "%-*s fairness: Jain(share/weight) %.3f; rho max %.2f, Jain(rho) %.3f\n", w,
                s->policy, s->jain_share, s->ftf_max, s->ftf_jain);
        for (int32_t k = 0; k < s->nqueues; k++) {
            const drv_queue_summary *q = &s->queue[k];
            fprintf(f, "  %-*s %7.4g %5d %5d", w - 2, q->name, q->weight, q->jobs, q->done);
            cell_min(f, 8, q->avg_jct);
            cell_min(f, 8, q->avg_wait);
            cell_pct(f, 7, q->share);
            cell_pct(f, 7, q->quota_use);
            if (decayed)
                cell_pct(f, 7, s->half_life > 0 ? q->usage : NAN);
            fputc('\n', f);
        }
    }
}

/*
 * The GPU types' block under the table, only when the cluster has GPU types: per policy a row
 * of each type's utilisation (the runs of one comparison share a cluster, so the first run's
 * types name them all).
 */
static void gpu_type_table(FILE *f, const drv_summary *v, int n)
{
    if (n == 0 || v[0].ngpu_types == 0)
        return;
    int w = 14;
    for (int i = 0; i < n; i++)
        if ((int)strlen(v[i].policy) > w)
            w = (int)strlen(v[i].policy);
    fprintf(f,
            "\nper GPU type (util%%: GPUs held by pods on the type's nodes, %% of its GPUs, "
            "over the makespan)\n%-*s",
            w, "policy / type");
    for (int32_t k = 0; k < v[0].ngpu_types; k++)
        fprintf(f, " %9s", v[0].gpu_type[k].name);
    fprintf(f, "\n%-*s", w, "(GPUs)");
    for (int32_t k = 0; k < v[0].ngpu_types; k++)
        fprintf(f, " %9lld", (long long)v[0].gpu_type[k].gpus);
    fputc('\n', f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%-*s", w, v[i].policy);
        for (int32_t k = 0; k < v[0].ngpu_types; k++)
            cell_pct(f, 9, k < v[i].ngpu_types ? v[i].gpu_type[k].util : NAN);
        fputc('\n', f);
    }
}

/* The utilisation columns of a run: a resource's util, useful and wasted fractions. */
static void util_cells(FILE *f, double util, double useful, double wasted)
{
    fprintf(f, " %6.1f %6.1f %6.1f", 100 * util, 100 * useful, 100 * wasted);
}

/* Whether a and b show the same figures in the table (NaN equal to NaN): two profiles that
 * differ only by plugins that never acted on the workload give equal rows. Equal to 1e-9
 * relative: utilisation is integrated between events, and a run with more events (a plugin's
 * own cycles) sums the same areas in more pieces. */
static bool same_figures(const drv_summary *a, const drv_summary *b)
{
    const double x[] = {a->avg_jct,  a->p50_jct,    a->p95_jct,    a->p99_jct,
                        a->makespan, a->avg_wait,   a->cpu_util,   a->cpu_useful,
                        a->gpu_util, a->gpu_useful, a->lost_gpu_h, a->lost_cpu_h};
    const double y[] = {b->avg_jct,  b->p50_jct,    b->p95_jct,    b->p99_jct,
                        b->makespan, b->avg_wait,   b->cpu_util,   b->cpu_useful,
                        b->gpu_util, b->gpu_useful, b->lost_gpu_h, b->lost_cpu_h};
    for (size_t k = 0; k < sizeof x / sizeof x[0]; k++)
        if (!(fabs(x[k] - y[k]) <= 1e-9 * fmax(fabs(x[k]), fabs(y[k])) ||
              (isnan(x[k]) && isnan(y[k]))))
            return false;
    return a->jobs == b->jobs && a->done == b->done && a->preemptions == b->preemptions &&
           a->migrations == b->migrations && a->scales == b->scales;
}

int32_t drv_report_same_as(const drv_summary *v, int n, int32_t i)
{
    for (int32_t k = 0; k < i && k < n; k++)
        if (same_figures(&v[k], &v[i]))
            return k;
    return -1;
}

/* What is under the table: which figures cover finished jobs only, runs that stopped early,
 * rows equal to an earlier row, and what the columns mean. */
static void table_notes(FILE *f, const drv_summary *v, int n, bool gpu)
{
    bool unfinished = false, stopped = false;
    for (int i = 0; i < n; i++) {
        unfinished |= v[i].done < v[i].jobs;
        stopped |= v[i].interrupted;
    }
    if (unfinished) {
        fprintf(f, "\n* JCT and makespan cover finished jobs only.\n");
        for (int i = 0; i < n; i++)
            if (v[i].stuck > 0 && !v[i].interrupted)
                fprintf(f,
                        "  %s: %d job(s) never finished; at the end (t=%.1f min) jobs that could "
                        "not start held %.0f%% of the CPU%s\n",
                        v[i].policy, v[i].stuck, v[i].end / 60.0, 100 * v[i].stuck_cpu,
                        v[i].stuck_cpu > 0 ? " (partly placed jobs deadlocked)" : "");
    }
    for (int i = 0; stopped && i < n; i++)
        if (v[i].interrupted)
            fprintf(f,
                    "  %s: interrupted at simulated t=%.1f min; %d of %d job(s) finished by "
                    "then\n",
                    v[i].policy, v[i].end / 60.0, v[i].done, v[i].jobs);
    bool tie = false;
    for (int32_t i = 0; i < n; i++) {
        int32_t k = drv_report_same_as(v, n, i);
        if (k < 0)
            continue;
        if (!tie)
            fputc('\n', f);
        tie = true;
        fprintf(f,
                "= %s: every figure equals %s's: what its profile adds took no action that "
                "changed this run (docs/policies.md, \"Equal rows\")\n",
                v[i].policy, v[k].policy);
    }
    fprintf(f,
            "\nutil%%: %s held by pods, %% of the cluster's, over the makespan; useful: held by "
            "jobs whose gang is complete;\nwasted: held by partly placed gangs that cannot "
            "run; preempt: jobs preempted; migr: pods migrated; scale: worker-count changes\n",
            gpu ? "GPUs (cpu columns: CPU)" : "CPU");
}

/* The work each policy's preemptions, scalings and migrations cost (jobs' checkpointSeconds):
 * only when the workload gives checkpoint intervals, so every other table stays as it was. */
static void lost_table(FILE *f, const drv_summary *v, int n, bool gpu)
{
    if (n == 0 || !v[0].lost_modelled)
        return;
    fprintf(f, "\nlost work (since each job's last checkpoint, when preempted, scaled or "
               "migrated):\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "  %-24s %10.2f %s\n", v[i].policy, gpu ? v[i].lost_gpu_h : v[i].lost_cpu_h,
                gpu ? "GPU-hours" : "CPU core-hours");
}

/*
 * On a GPU cluster the GPU's utilisation columns come first (what such a cluster is bought for),
 * then the CPU's: a mixed cluster's CPU-only jobs show there; on a CPU cluster only the CPU's.
 */
void drv_report_table(FILE *f, const drv_summary *v, int n)
{
    bool gpu = drv_report_gpu_first(v, n);
    int w = 8;
    for (int i = 0; i < n; i++)
        if ((int)strlen(v[i].policy) > w)
            w = (int)strlen(v[i].policy);
    fprintf(f, "%-*s %9s %8s %8s %8s %8s %9s %8s %6s %6s %6s%s %7s %6s %6s\n", w, "policy", "done",
            "avgJCT", "p50JCT", "p95JCT", "p99JCT", "makespan", "avgWait", "util%", "useful",
            "wasted", gpu ? "  util%  useful wasted" : "", "preempt", "migr", "scale");
    fprintf(f, "%-*s %9s %8s %8s %8s %8s %9s %8s %6s %6s %6s%s\n", w, "", "", "(min)", "(min)",
            "(min)", "(min)", "(min)", "(min)", gpu ? "gpu" : "cpu", gpu ? "gpu" : "cpu",
            gpu ? "gpu" : "cpu", gpu ? "    cpu    cpu    cpu" : "");
    for (int i = 0; i < n; i++) {
        const drv_summary *s = &v[i];
        char done[24];
        snprintf(done, sizeof done, "%d/%d%s", s->done, s->jobs, s->done < s->jobs ? "*" : "");
        fprintf(f, "%-*s %9s", w, s->policy, done);
        cell_min(f, 8, s->avg_jct);
        cell_min(f, 8, s->p50_jct);
        cell_min(f, 8, s->p95_jct);
        cell_min(f, 8, s->p99_jct);
        cell_min(f, 9, s->makespan);
        cell_min(f, 8, s->avg_wait);
        if (gpu)
            util_cells(f, s->gpu_util, s->gpu_useful, s->gpu_wasted);
        util_cells(f, s->cpu_util, s->cpu_useful, s->cpu_wasted);
        fprintf(f, " %7lld %6lld %6lld\n", (long long)s->preemptions, (long long)s->migrations,
                (long long)s->scales);
    }
    table_notes(f, v, n, gpu);
    lost_table(f, v, n, gpu);
    queue_table(f, v, n);
    gpu_type_table(f, v, n);
}

static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* "queues" (one object per queue) and the fairness figures, added to a summary record. */
static int queues_json(json_t *o, const drv_summary *s)
{
    json_t *arr = json_array();
    if (!arr || json_object_set_new(o, "queues", arr) != 0)
        return DRV_ENOMEM;
    for (int32_t k = 0; k < s->nqueues; k++) {
        const drv_queue_summary *q = &s->queue[k];
        json_t *e = json_object();
        if (!e || json_array_append_new(arr, e) != 0)
            return DRV_ENOMEM;
        json_object_set_new(e, "name", json_string(q->name));
        json_object_set_new(e, "weight", num(q->weight));
        json_object_set_new(e, "jobs", json_integer(q->jobs));
        json_object_set_new(e, "done", json_integer(q->done));
        json_object_set_new(e, "avg_jct_s", num(q->avg_jct));
        json_object_set_new(e, "avg_wait_s", num(q->avg_wait));
        json_object_set_new(e, "share", num(q->share));
        json_object_set_new(e, "quota_use", num(q->quota_use));
        if (s->half_life > 0) /* fair share over time only: other records stay as they were */
            json_object_set_new(e, "usage", num(q->usage));
    }
    if (s->half_life > 0)
        json_object_set_new(o, "half_life_s", num(s->half_life));
    json_object_set_new(o, "jain_share", num(s->jain_share));
    json_object_set_new(o, "ftf_max", num(s->ftf_max));
    json_object_set_new(o, "ftf_jain", num(s->ftf_jain));
    return 0;
}

/* "gpu_types" (one object per type: type, gpus, util), added to a summary record. */
static int gpu_types_json(json_t *o, const drv_summary *s)
{
    json_t *arr = json_array();
    if (!arr || json_object_set_new(o, "gpu_types", arr) != 0)
        return DRV_ENOMEM;
    for (int32_t k = 0; k < s->ngpu_types; k++) {
        json_t *e = json_object();
        if (!e || json_array_append_new(arr, e) != 0)
            return DRV_ENOMEM;
        json_object_set_new(e, "type", json_string(s->gpu_type[k].name));
        json_object_set_new(e, "gpus", json_integer(s->gpu_type[k].gpus));
        json_object_set_new(e, "util", num(s->gpu_type[k].util));
    }
    return 0;
}

static json_t *summary_json(const drv_summary *s)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "policy", json_string(s->policy));
    json_object_set_new(o, "jobs", json_integer(s->jobs));
    json_object_set_new(o, "done", json_integer(s->done));
    json_object_set_new(o, "avg_jct_s", num(s->avg_jct));
    json_object_set_new(o, "p50_jct_s", num(s->p50_jct));
    json_object_set_new(o, "p95_jct_s", num(s->p95_jct));
    json_object_set_new(o, "p99_jct_s", num(s->p99_jct));
    json_object_set_new(o, "makespan_s", num(s->makespan));
    json_object_set_new(o, "avg_wait_s", num(s->avg_wait));
    json_object_set_new(o, "cpu_util", num(s->cpu_util));
    json_object_set_new(o, "cpu_useful", num(s->cpu_useful));
    json_object_set_new(o, "cpu_wasted", num(s->cpu_wasted));
    json_object_set_new(o, "gpu_util", num(s->gpu_util));
    json_object_set_new(o, "gpu_useful", num(s->gpu_useful));
    json_object_set_new(o, "gpu_wasted", num(s->gpu_wasted));
    json_object_set_new(o, "preemptions", json_integer(s->preemptions));
    json_object_set_new(o, "migrations", json_integer(s->migrations));
    json_object_set_new(o, "restarts", json_integer(s->restarts));
    json_object_set_new(o, "scales", json_integer(s->scales));
    json_object_set_new(o, "resizes", json_integer(s->resizes));
    if (s->lost_modelled) { /* only then: other records stay as they were */
        json_object_set_new(o, "lost_gpu_hours", num(s->lost_gpu_h));
        json_object_set_new(o, "lost_cpu_hours", num(s->lost_cpu_h));
    }
    json_object_set_new(o, "cycles", json_integer(s->cycles));
    json_object_set_new(o, "cycles_skipped", json_integer(s->skipped));
    json_object_set_new(o, "events", json_integer(s->events));
    json_object_set_new(o, "decisions", json_integer(s->decisions));
    json_object_set_new(o, "stuck", json_integer(s->stuck));
    json_object_set_new(o, "stuck_cpu", num(s->stuck_cpu));
    json_object_set_new(o, "end_s", num(s->end));
    if (s->interrupted) /* only then: a finished run's record is as it always was */
        json_object_set_new(o, "interrupted", json_true());
    if ((s->nqueues > 0 && queues_json(o, s) != 0) ||
        (s->ngpu_types > 0 && gpu_types_json(o, s) != 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- provenance: version, seed, profile line, input checksums ------------------------------ */

int drv_report_sha256_file(const char *path, char out[65], drv_diag *d)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return drv_fail(d, errno == ENOENT ? DRV_ENOENT : DRV_EIO, "%s: cannot read: %s", path,
                        strerror(errno));
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    unsigned char buf[1 << 14];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        sha256_update(&ctx, got, buf);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return drv_fail(d, DRV_EIO, "%s: read failed", path);
    unsigned char dig[SHA256_DIGEST_SIZE];
    sha256_digest(&ctx, sizeof dig, dig);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
        snprintf(out + 2 * i, 3, "%02x", dig[i]);
    return 0;
}

/* Adds drover_version, drover_commit, drover_dirty, seed, profile and inputs to a summary record; 0
 * or an error. */
static int add_provenance(json_t *o, const drv_report_meta *meta, int i, json_t **inputs,
                          drv_diag *d)
{
    json_object_set_new(o, "drover_version", json_string(DROVER_VERSION));
    json_object_set_new(o, "drover_commit", json_string(drv_build_commit));
    json_object_set_new(o, "drover_dirty", json_boolean(drv_build_dirty));
    json_object_set_new(o, "seed", json_integer((json_int_t)meta->seed));
    if (meta->profiles) {
        char line[4096];
        drv_profile_format(&meta->profiles[i], line, sizeof line);
        json_object_set_new(o, "profile", json_string(line));
    }
    if (!*inputs) { /* hashed once, shared by every record */
        if (!(*inputs = json_array()))
            return drv_fail(d, DRV_ENOMEM, "out of memory");
        for (int k = 0; k < meta->ninputs && k < DRV_REPORT_MAX_INPUTS; k++) {
            if (!meta->inputs[k].path)
                continue;
            char hex[65];
            int rc = drv_report_sha256_file(meta->inputs[k].path, hex, d);
            if (rc)
                return rc;
            json_t *e = json_object();
            if (!e || json_array_append_new(*inputs, e) != 0)
                return drv_fail(d, DRV_ENOMEM, "out of memory");
            json_object_set_new(e, "role", json_string(meta->inputs[k].role));
            json_object_set_new(e, "path", json_string(meta->inputs[k].path));
            json_object_set_new(e, "sha256", json_string(hex));
        }
    }
    json_object_set(o, "inputs", *inputs);
    return 0;
}

static int write_json(FILE *f, const drv_summary *v, int n, const drv_report_meta *meta,
                      drv_diag *d)
{
    json_t *arr = json_array(), *inputs = NULL;
    if (!arr)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        json_t *o = summary_json(&v[i]);
        if (!o || json_array_append_new(arr, o) != 0)
            rc = drv_fail(d, DRV_ENOMEM, "out of memory");
        else if (meta)
            rc = add_provenance(o, meta, i, &inputs, d);
    }
    json_decref(inputs);
    if (!rc && json_dumpf(arr, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)))
        rc = drv_fail(d, DRV_EIO, "write failed");
    if (!rc)
        fputc('\n', f);
    json_decref(arr);
    return rc;
}

int drv_report_json(FILE *f, const drv_summary *v, int n)
{
    drv_diag d;
    return write_json(f, v, n, NULL, &d);
}

static void csv_num(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, ",%.6g", x);
    else
        fputs(",", f);
}

/* The queues' columns of summary.csv, after the others, only when the runs have queues (the
 * runs of one comparison share a cluster, so the first run's queues name them all): the
 * fairness figures, then per queue NAME.avg_jct_s, NAME.avg_wait_s, NAME.share,
 * NAME.quota_use (queue names are letters, digits, '-', '_' and '.': never a comma). */
static void csv_queue_header(FILE *f, const drv_summary *v, int n)
{
    if (n == 0 || v[0].nqueues == 0)
        return;
    fputs(",jain_share,ftf_max,ftf_jain", f);
    for (int32_t k = 0; k < v[0].nqueues; k++) {
        const char *q = v[0].queue[k].name;
        fprintf(f, ",%s.avg_jct_s,%s.avg_wait_s,%s.share,%s.quota_use", q, q, q, q);
    }
}

static void csv_queue_row(FILE *f, const drv_summary *first, const drv_summary *s)
{
    if (first->nqueues == 0)
        return;
    csv_num(f, s->jain_share);
    csv_num(f, s->ftf_max);
    csv_num(f, s->ftf_jain);
    for (int32_t k = 0; k < first->nqueues; k++) {
        const drv_queue_summary *q = k < s->nqueues ? &s->queue[k] : NULL;
        csv_num(f, q ? q->avg_jct : NAN);
        csv_num(f, q ? q->avg_wait : NAN);
        csv_num(f, q ? q->share : NAN);
        csv_num(f, q ? q->quota_use : NAN);
    }
}

/* The GPU types' columns of summary.csv, last, only when the runs' cluster has GPU types (the
 * first run's name them all): per type NAME.gpu_util (type names follow the name rule: never a
 * comma). */
static void csv_gpu_type_header(FILE *f, const drv_summary *v, int n)
{
    for (int32_t k = 0; n > 0 && k < v[0].ngpu_types; k++)
        fprintf(f, ",%s.gpu_util", v[0].gpu_type[k].name);
}

static void csv_gpu_type_row(FILE *f, const drv_summary *first, const drv_summary *s)
{
    for (int32_t k = 0; k < first->ngpu_types; k++)
        csv_num(f, k < s->ngpu_types ? s->gpu_type[k].util : NAN);
}

void drv_report_csv(FILE *f, const drv_summary *v, int n)
{
    fputs("policy,jobs,done,avg_jct_s,p50_jct_s,p95_jct_s,p99_jct_s,makespan_s,avg_wait_s,"
          "cpu_util,cpu_useful,cpu_wasted,gpu_util,gpu_useful,gpu_wasted,preemptions,migrations,"
          "restarts,scales,resizes",
          f);
    bool lost =
        n > 0 && v[0].lost_modelled; /* (columns only then: other files stay as they were) */
    if (lost)
        fputs(",lost_gpu_hours,lost_cpu_hours", f);
    csv_queue_header(f, v, n);
    csv_gpu_type_header(f, v, n);
    fputc('\n', f);
    for (int i = 0; i < n; i++) {
        const drv_summary *s = &v[i];
        fprintf(f, "%s,%d,%d", s->policy, s->jobs, s->done);
        double xs[] = {s->avg_jct,    s->p50_jct,  s->p95_jct,    s->p99_jct,
                       s->makespan,   s->avg_wait, s->cpu_util,   s->cpu_useful,
                       s->cpu_wasted, s->gpu_util, s->gpu_useful, s->gpu_wasted};
        for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++)
            csv_num(f, xs[k]);
        fprintf(f, ",%lld,%lld,%lld,%lld,%lld", (long long)s->preemptions, (long long)s->migrations,
                (long long)s->restarts, (long long)s->scales, (long long)s->resizes);
        if (lost) {
            csv_num(f, s->lost_gpu_h);
            csv_num(f, s->lost_cpu_h);
        }
        csv_queue_row(f, &v[0], s);
        csv_gpu_type_row(f, &v[0], s);
        fputc('\n', f);
    }
}

/* Opens dir/.name.tmp for writing (drv_file_out_commit renames it to dir/name); NULL on failure. */
static FILE *begin(drv_file_out *o, const char *dir, const char *name, drv_diag *d)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return drv_file_out_open(o, path, d) == 0 ? o->f : NULL;
}

int drv_report_summary_files(const char *dir, const drv_summary *v, int n,
                             const drv_report_meta *meta, drv_diag *d)
{
    drv_file_out o;
    FILE *f = begin(&o, dir, "summary.json", d);
    if (!f)
        return DRV_EIO;
    int rc = write_json(f, v, n, meta, d);
    if (rc) {
        drv_file_out_abort(&o);
        return rc;
    }
    if ((rc = drv_file_out_commit(&o, d)) != 0)
        return rc;
    f = begin(&o, dir, "summary.csv", d);
    if (!f)
        return DRV_EIO;
    drv_report_csv(f, v, n);
    return drv_file_out_commit(&o, d);
}

/* placements-<policy>.csv: one row per bind interval, only when the run recorded the log. */
static int placement_file(const char *dir, const drv_sim *s, drv_diag *d)
{
    int32_t n;
    const drv_placement *p = drv_sim_placements(s, &n);
    if (!p)
        return 0;
    char name[128];
    drv_file_out o;
    const drv_state *st = drv_sim_state(s);
    snprintf(name, sizeof name, "placements-%s.csv", drv_sim_policy(s));
    FILE *f = begin(&o, dir, name, d);
    if (!f)
        return DRV_EIO;
    fputs("job,pod,node,start_s,end_s\n", f);
    for (int32_t i = 0; i < n; i++) {
        fprintf(f, "%s,%s%d,%s,%.3f", drv_sim_workload(s)->jobs[p[i].job].name,
                drv_role_name(p[i].role), p[i].index,
                drv_strtab_str(st->names, st->nodes[p[i].node].name), p[i].start);
        if (p[i].end >= 0)
            fprintf(f, ",%.3f\n", p[i].end);
        else
            fputs(",\n", f);
    }
    return drv_file_out_commit(&o, d);
}

int drv_report_scenario_file(const char *dir, const drv_scenario *sc, drv_diag *d)
{
    drv_file_out out;
    json_t *o = json_object();
    if (!o)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    json_object_set_new(o, "scenario", json_string(sc->desc));
    json_object_set_new(o, "jobs", json_integer(sc->jobs));
    json_object_set_new(o, "nodes", json_integer(sc->nodes));
    json_object_set_new(o, "cpu_m", json_real(sc->cpu_m));
    json_object_set_new(o, "gpu", json_real(sc->gpu));
    json_object_set_new(o, "seed", json_integer((json_int_t)sc->seed));
    FILE *f = begin(&out, dir, "scenario.json", d);
    if (!f) {
        json_decref(o);
        return DRV_EIO;
    }
    int rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    fputc('\n', f);
    json_decref(o);
    if (rc) {
        drv_file_out_abort(&out);
        return drv_fail(d, DRV_EIO, "%s: write failed", out.path);
    }
    return drv_file_out_commit(&out, d);
}

/* The name of a job's model: its calibrated model's, its catalogue family's, or its index. */
static void model_name(const drv_jobspec *j, const drv_report_meta *meta, char *out, size_t n)
{
    if (meta && meta->calib && j->calib_app > 0 && j->calib_app <= meta->calib->n)
        snprintf(out, n, "%s", meta->calib->v[j->calib_app - 1].name);
    else if (meta && meta->cat && j->model >= 0 && j->model < meta->cat->n)
        snprintf(out, n, "%s", meta->cat->v[j->model].name);
    else
        snprintf(out, n, "%d", j->model);
}

void drv_report_jobs_header(FILE *f, bool queues, bool gpu_types)
{
    fputs("job,user,model,ps,workers_requested,workers_last,submit_s,start_s,end_s,wait_s,jct_s,"
          "restarts,migrations,preemptions",
          f);
    if (queues)
        fputs(",queue", f);
    fputs(gpu_types ? ",gpu_type\n" : "\n", f);
}

/* A time in seconds as a cell, or an empty cell when it is negative (never happened). */
static void time_cell(FILE *f, double t)
{
    if (t >= 0)
        fprintf(f, ",%.3f", t);
    else
        fputs(",", f);
}

void drv_report_job_row(FILE *f, const drv_jobspec *j, const drv_jobresult *r,
                        const drv_report_meta *meta, bool queues, const char *gpu_type)
{
    char model[64];
    model_name(j, meta, model, sizeof model);
    fprintf(f, "%s,%s,%s,%d,%d,%d,%.3f", j->name, j->user, model, j->role[DRV_ROLE_PS].replicas,
            j->role[DRV_ROLE_WORKER].replicas, r->workers, r->submit);
    time_cell(f, r->start);
    time_cell(f, r->end);
    time_cell(f, r->start >= 0 ? r->start - r->submit : -1);
    time_cell(f, r->end >= 0 ? r->end - r->submit : -1);
    fprintf(f, ",%d,%d,%d", r->restarts, r->migrations, r->preemptions);
    if (queues) /* the name the job gave: the queue it is in, as undeclared names are refused */
        fprintf(f, ",%s", j->queue);
    if (gpu_type) /* the cluster has GPU types: the job's last ("" when it held no GPU) */
        fprintf(f, ",%s", gpu_type);
    fputc('\n', f);
}

const char *drv_report_job_gpu_type(const drv_sim *s, const drv_jobresult *r)
{
    if (drv_sim_gpu_type_name(s, 1) == NULL) /* no GPU type: no column */
        return NULL;
    const char *t = drv_sim_gpu_type_name(s, r->gpu_type);
    return t ? t : "";
}

int drv_report_run_files(const char *dir, const drv_sim *s, const drv_report_meta *meta,
                         drv_diag *d)
{
    char name[128];
    drv_file_out o;
    const drv_workload *wl = drv_sim_workload(s);
    const char *policy = drv_sim_policy(s);
    snprintf(name, sizeof name, "jobs-%s.csv", policy);
    FILE *f = begin(&o, dir, name, d);
    if (!f)
        return DRV_EIO;
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    bool queues = drv_sim_state(s)->nqueues > 0; /* then a last column names each job's queue */
    drv_report_jobs_header(f, queues, drv_sim_gpu_type_name(s, 1) != NULL);
    for (int32_t i = 0; i < n; i++) /* finished jobs are released from the state: read wl */
        drv_report_job_row(f, &wl->jobs[i], &r[i], meta, queues, drv_report_job_gpu_type(s, &r[i]));
    int rc = drv_file_out_commit(&o, d);
    if (rc)
        return rc;
    snprintf(name, sizeof name, "timeline-%s.csv", policy);
    f = begin(&o, dir, name, d);
    if (!f)
        return DRV_EIO;
    int32_t nt;
    const drv_tick *t = drv_sim_ticks(s, &nt);
    fputs("t_s,cpu_used_m,cpu_useful_m,gpu_used,gpu_useful,pending_jobs,running_jobs\n", f);
    for (int32_t i = 0; i < nt; i++)
        fprintf(f, "%.3f,%.0f,%.0f,%.0f,%.0f,%d,%d\n", t[i].t, t[i].cpu_used, t[i].cpu_useful,
                t[i].gpu_used, t[i].gpu_useful, t[i].pending, t[i].running);
    rc = drv_file_out_commit(&o, d);
    if (rc)
        return rc;
    return placement_file(dir, s, d);
}
