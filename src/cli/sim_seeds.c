/*
 * sim_seeds.c - `drover sim --seeds`: each policy's results over several seeds.
 *
 * Three views of the same runs (sums is [seed * nprof + policy]):
 *   - each policy's mean and 95 % interval per metric (drv_summary_ci), on stdout in --format;
 *   - each policy's paired difference against the baseline (DRV_REPORT_BASELINE when it ran,
 *     else the first policy, as the report page picks it): per seed d_k = m(policy, k) -
 *     m(baseline, k), then the mean of d and its interval (Student's t over the seeds). Pairing
 *     removes what the seeds share (the same jobs for both), so a difference can be clear when
 *     the two intervals overlap. Example: JCTs of 10, 20, 30 min against 12, 22, 32 give a
 *     difference of -2 ± 0 min, where the intervals (20 ± 24.8 and 22 ± 24.8) say nothing;
 *   - with --out (sim_seeds_files, before the page is drawn: it shows them): seeds.csv
 * (summary.csv's columns, one row per seed and policy, seed first) and summary-seeds.json: the
 * provenance summary.json has (version, commit, dirty tree), the command, the seeds, the baseline,
 * the intervals and the paired differences (each with "lower": on how many seeds the policy was
 * below the baseline).
 */
#include "sim_cmd.h"

#include "drover/sim_batch.h"
#include "drover/version.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The metrics compared pair by pair: name in JSON, what the table shows, seconds or a count. */
static const struct {
    const char *name, *label;
    bool minutes;
} PAIRED[] = {
    {"avg_jct_s", "avg JCT (min)", true},   {"p95_jct_s", "p95 JCT (min)", true},
    {"makespan_s", "makespan (min)", true}, {"avg_wait_s", "queueing (min)", true},
    {"done", "done (jobs)", false},
};
enum { NPAIRED = sizeof PAIRED / sizeof PAIRED[0] };

static double paired_metric(const drv_summary *s, int m)
{
    const double v[NPAIRED] = {s->avg_jct, s->p95_jct, s->makespan, s->avg_wait, s->done};
    return v[m];
}

/* The baseline's index among the policies. */
static int baseline_of(const sim_inputs *in)
{
    for (int p = 0; p < in->nprof; p++)
        if (strcmp(in->prof[p].name, DRV_REPORT_BASELINE) == 0)
            return p;
    return 0;
}

/* The seeds on which policy p's metric m was below b's. */
static int paired_lower(const sim_inputs *in, const drv_summary *sums, int p, int b, int m)
{
    int lower = 0;
    for (int k = 0; k < in->nseeds; k++)
        lower +=
            paired_metric(&sums[k * in->nprof + p], m) < paired_metric(&sums[k * in->nprof + b], m);
    return lower;
}

/* Policy p's paired difference against b for metric m: mean and 95 % half-width. */
static drv_interval paired(const sim_inputs *in, const drv_summary *sums, int p, int b, int m)
{
    int n = in->nseeds;
    double sum = 0, sq = 0;
    for (int k = 0; k < n; k++)
        sum +=
            paired_metric(&sums[k * in->nprof + p], m) - paired_metric(&sums[k * in->nprof + b], m);
    double mean = sum / n;
    for (int k = 0; k < n; k++) {
        double d = paired_metric(&sums[k * in->nprof + p], m) -
                   paired_metric(&sums[k * in->nprof + b], m) - mean;
        sq += d * d;
    }
    return (drv_interval){mean, n > 1 ? drv_t95(n - 1) * sqrt(sq / (n - 1)) / sqrt((double)n) : 0};
}

static void paired_table(FILE *f, const sim_inputs *in, const drv_summary *sums, int b)
{
    fprintf(f, "\npaired difference against %s (policy - %s, per seed; mean ± 95 %% interval):\n",
            in->prof[b].name, in->prof[b].name);
    fprintf(f, "%-18s", "policy");
    for (int m = 0; m < NPAIRED; m++)
        fprintf(f, " %-18s", PAIRED[m].label);
    fprintf(f, "\n");
    for (int p = 0; p < in->nprof; p++) {
        if (p == b)
            continue;
        fprintf(f, "%-18s", in->prof[p].name);
        for (int m = 0; m < NPAIRED; m++) {
            drv_interval v = paired(in, sums, p, b, m);
            double s = PAIRED[m].minutes ? 1 / 60.0 : 1;
            char cell[64];
            snprintf(cell, sizeof cell, "%+.1f ± %.1f", v.mean * s, v.half * s);
            fprintf(f, " %-19s", cell); /* "±" is two bytes */
        }
        fprintf(f, "\n");
    }
}

/* s as a JSON string. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, f);
    fputc('"', f);
}

static void seeds_json(FILE *f, const sim_opts *o, const sim_inputs *in, const drv_summary *sums,
                       const drv_summary_ci *ci, int b)
{
    fprintf(f, "{\"drover_version\": \"%s\", \"drover_commit\": ", DROVER_VERSION);
    json_str(f, drv_build_commit);
    fprintf(f, ", \"drover_dirty\": %s,\n \"command\": [\"drover\"",
            drv_build_dirty ? "true" : "false");
    for (int i = 0; i < o->argc; i++) {
        fputs(", ", f);
        json_str(f, o->argv[i]);
    }
    fprintf(f, "],\n \"seeds\": [");
    for (int k = 0; k < in->nseeds; k++)
        fprintf(f, "%s%llu", k ? ", " : "", (unsigned long long)in->seeds[k]);
    fprintf(f, "],\n \"baseline\": ");
    json_str(f, in->prof[b].name);
    fprintf(f, ",\n \"policies\": ");
    drv_report_ci_json(f, ci, in->nprof);
    fprintf(f, ", \"paired\": [");
    for (int p = 0, first = 1; p < in->nprof; p++) {
        if (p == b)
            continue;
        fprintf(f, "%s\n  {\"policy\": ", first ? "" : ",");
        first = 0;
        json_str(f, in->prof[p].name);
        for (int m = 0; m < NPAIRED; m++) {
            drv_interval v = paired(in, sums, p, b, m);
            fprintf(f, ", \"%s\": {\"mean\": %.17g, \"ci95\": %.17g, \"lower\": %d}",
                    PAIRED[m].name, v.mean, v.half, paired_lower(in, sums, p, b, m));
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n]}\n");
}

/* seeds.csv: summary.csv's header and rows (drv_report_csv), each row led by its seed. */
static int seeds_csv(FILE *f, const sim_inputs *in, const drv_summary *sums)
{
    for (int k = 0; k < in->nseeds; k++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (!m)
            return -1;
        drv_report_csv(m, &sums[k * in->nprof], in->nprof);
        if (fclose(m) != 0) {
            free(buf);
            return -1;
        }
        char *line = buf, *nl;
        for (int row = 0; (nl = strchr(line, '\n')); row++, line = nl + 1) {
            if (row == 0 && k == 0)
                fprintf(f, "seed,%.*s\n", (int)(nl - line), line);
            else if (row > 0)
                fprintf(f, "%llu,%.*s\n", (unsigned long long)in->seeds[k], (int)(nl - line), line);
        }
        free(buf);
    }
    return 0;
}

/* Writes dir/name with fn; 0 or EXIT_RUN (the message printed). */
static int write_file(const char *dir, const char *name, int (*fn)(FILE *, const void *),
                      const void *arg)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    int bad = !f || fn(f, arg) != 0;
    if (f)
        bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "drover: %s: cannot write: %s\n", path, strerror(errno));
    return bad ? EXIT_RUN : 0;
}

typedef struct seeds_out {
    const sim_opts *o;
    const sim_inputs *in;
    const drv_summary *sums;
    const drv_summary_ci *ci;
    int b;
} seeds_out;

static int write_json(FILE *f, const void *arg)
{
    const seeds_out *s = arg;
    seeds_json(f, s->o, s->in, s->sums, s->ci, s->b);
    return ferror(f) ? -1 : 0;
}

static int write_csv(FILE *f, const void *arg)
{
    const seeds_out *s = arg;
    return seeds_csv(f, s->in, s->sums) != 0 || ferror(f) ? -1 : 0;
}

/* Each policy's intervals over the seeds (the caller frees), or NULL with the message printed. */
static drv_summary_ci *seeds_ci(const sim_inputs *in, const drv_summary *sums)
{
    drv_summary_ci *ci = drv_calloc((size_t)in->nprof, sizeof *ci);
    drv_summary *runs = drv_calloc((size_t)in->nseeds, sizeof *runs);
    if (!ci || !runs) {
        drv_free(ci);
        drv_free(runs);
        fprintf(stderr, "drover: out of memory\n");
        return NULL;
    }
    for (int p = 0; p < in->nprof; p++) {
        for (int k = 0; k < in->nseeds; k++)
            runs[k] = sums[k * in->nprof + p];
        drv_summary_ci_compute(runs, in->nseeds, &ci[p]);
    }
    drv_free(runs);
    return ci;
}

int sim_seeds_files(const sim_opts *o, const sim_inputs *in, const drv_summary *sums)
{
    drv_summary_ci *ci = seeds_ci(in, sums);
    if (!ci)
        return EXIT_RUN;
    seeds_out so = {o, in, sums, ci, baseline_of(in)};
    int status = write_file(o->out, "summary-seeds.json", write_json, &so);
    if (status == 0)
        status = write_file(o->out, "seeds.csv", write_csv, &so);
    drv_free(ci);
    return status;
}

int sim_report_seeds(const sim_opts *o, const sim_inputs *in, const drv_summary *sums,
                     const char *desc)
{
    drv_summary_ci *ci = seeds_ci(in, sums);
    if (!ci)
        return EXIT_RUN;
    int b = baseline_of(in), status = 0;
    if (strcmp(o->format, "json") == 0) {
        drv_report_ci_json(stdout, ci, in->nprof);
    } else if (status == 0 && strcmp(o->format, "csv") == 0) {
        drv_report_ci_csv(stdout, ci, in->nprof);
    } else if (status == 0) {
        printf("%s, seeds %s (%d runs of each policy)\n\n", desc, o->seeds, in->nseeds);
        drv_report_ci_table(stdout, ci, in->nprof);
        if (in->nprof > 1)
            paired_table(stdout, in, sums, b);
        if (o->out)
            printf("\nwrote %s/summary-seeds.json and seeds.csv (each seed's row per policy); "
                   "index.html shows them; the other files, the plots and the rest of the page "
                   "are of seed %llu\n",
                   o->out, (unsigned long long)in->seeds[0]);
    }
    drv_free(ci);
    return status;
}
