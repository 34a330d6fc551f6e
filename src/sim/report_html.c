/*
 * report_html.c - the body of index.html, the report page (plot.c opens the file and renames it
 * into place): what was simulated, the summary table, the queues and fairness (a cluster with
 * queues only), each GPU type's utilisation (a cluster with GPU types only), the plots, one
 * section per policy, links to the data files.
 *
 * The page is static and self-contained: no script, no external resource (a report directory is
 * viewed from disk, offline). It stays short with many policies: a navigation bar with an anchor
 * per section and per policy; the per-policy sections are <details> elements, open only for the
 * two runs drv_report_pick chooses (best and baseline), whose Gantt charts are drawn.
 *
 * Every string from the input files is escaped for HTML (html_text) or percent-encoded in a link
 * (html_url): a policy named <script> or x'.system(...).' is shown as those characters.
 */
#include "report_html.h"

#include <math.h>
#include <string.h>

static void html_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

/* Writes s percent-encoded for an href or src (a relative file name: nothing but unreserved
 * characters passes, so no name can start a scheme, a query or break out of the attribute). */
static void html_url(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~')
            fputc(c, f);
        else
            fprintf(f, "%%%02X", c);
    }
}

static void html_min(FILE *f, double seconds)
{
    if (isfinite(seconds))
        fprintf(f, "<td>%.1f</td>", seconds / 60.0);
    else
        fputs("<td>-</td>", f);
}

static void html_figure(FILE *f, const char *base, const char *alt, const char *caption)
{
    fputs("<figure><a href=\"", f);
    html_url(f, base);
    fputs(".png\"><img src=\"", f);
    html_url(f, base);
    fputs(".svg\" alt=\"", f);
    html_text(f, alt);
    fputs("\"></a><figcaption>", f);
    html_text(f, caption);
    fputs(" (<a href=\"", f);
    html_url(f, base);
    fputs(".png\">PNG</a>)</figcaption></figure>\n", f);
}

static const char *const css =
    "body{font-family:sans-serif;margin:0 auto 2em;max-width:1040px;color:#222;padding:0 1em;"
    "line-height:1.35}"
    "nav{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:0.5em 0;"
    "font-size:0.9em;z-index:1}nav a{margin-right:0.8em;white-space:nowrap}nav .pol "
    "a{margin-right:0.5em}"
    "h1{font-size:1.5em;margin:0.8em 0 0.3em}h2{font-size:1.2em;margin:1.4em 0 0.4em}"
    "table{border-collapse:collapse;font-size:0.85em;margin:0.6em 0}"
    "th,td{border:1px solid #ccc;padding:0.2em 0.45em;text-align:right}"
    "th:first-child,td:first-child{text-align:left}thead th{background:#f0f0f0}"
    "tr.pick td{background:#eef5ff}"
    "figure{margin:0.8em 0}img{max-width:100%;height:auto;border:1px solid #ddd}"
    "figcaption{font-size:0.85em;color:#555}.note{color:#555;font-size:0.85em}"
    "details{border:1px solid #ddd;border-radius:4px;margin:0.4em 0;padding:0.3em 0.6em}"
    "summary{cursor:pointer}.tag{font-size:0.8em;background:#dde9f7;border-radius:3px;"
    "padding:0 0.3em;margin-left:0.4em}";

/* The anchor of policy i's section: by index, so no name needs escaping in an id. */
static void policy_anchor(FILE *f, int32_t i)
{
    fprintf(f, "policy-%d", i + 1);
}

static const char *pick_tag(int32_t i, int32_t best, int32_t baseline)
{
    if (i == best && i == baseline)
        return "";
    return i == best ? "best" : i == baseline ? "baseline" : "";
}

/* The notes under the summary table: unfinished jobs, interrupted runs, equal rows. */
static void html_table_notes(FILE *f, const drv_report_data *r)
{
    bool unfinished = false;
    for (int32_t i = 0; i < r->n; i++)
        unfinished |= r->sum[i].done < r->sum[i].jobs;
    if (unfinished)
        fputs("<p class=\"note\">* JCT and makespan cover finished jobs only.</p>\n", f);
    for (int32_t i = 0; i < r->n; i++) {
        const drv_summary *s = &r->sum[i];
        int32_t k = drv_report_same_as(r->sum, r->n, i);
        if (s->interrupted) {
            fputs("<p class=\"note\"><b>", f);
            html_text(f, s->policy);
            fprintf(f,
                    "</b> was interrupted at simulated t=%.1f min; %d of %d job(s) finished by "
                    "then.</p>\n",
                    s->end / 60.0, s->done, s->jobs);
        }
        if (k >= 0) {
            fputs("<p class=\"note\">= <b>", f);
            html_text(f, s->policy);
            fputs("</b>: every figure equals <b>", f);
            html_text(f, r->sum[k].policy);
            fputs("</b>&#39;s: what its profile adds took no action that changed this run "
                  "(docs/policies.md, &ldquo;Equal rows&rdquo;).</p>\n",
                  f);
        }
    }
}

/* A run's util, useful and wasted cells of one resource. */
static void html_util(FILE *f, double util, double useful, double wasted)
{
    fprintf(f, "<td>%.1f</td><td>%.1f</td><td>%.1f</td>", 100 * util, 100 * useful, 100 * wasted);
}

/* The summary table: the terminal table's columns (GPUs, then CPU, on a GPU cluster). */
static void html_table(FILE *f, const drv_report_data *r, bool gpu, int32_t best, int32_t baseline)
{
    fputs("<table>\n<thead><tr><th>policy</th><th>done</th><th>avg JCT</th><th>p50 JCT</th>"
          "<th>p95 JCT</th><th>p99 JCT</th><th>makespan</th><th>avg wait</th>",
          f);
    for (int k = 0; k < (gpu ? 2 : 1); k++)
        fputs("<th>util %</th><th>useful %</th><th>wasted %</th>", f);
    fputs("<th>preempt</th><th>migr</th><th>scale</th></tr>\n<tr><th></th><th></th><th>(min)</th>"
          "<th>(min)</th><th>(min)</th><th>(min)</th><th>(min)</th><th>(min)</th>",
          f);
    if (gpu)
        fputs("<th>gpu</th><th>gpu</th><th>gpu</th>", f);
    fputs("<th>cpu</th><th>cpu</th><th>cpu</th><th></th><th></th><th></th></tr></thead>\n"
          "<tbody>\n",
          f);
    for (int32_t i = 0; i < r->n; i++) {
        const drv_summary *s = &r->sum[i];
        const char *tag = pick_tag(i, best, baseline);
        fprintf(f, "<tr%s><td><a href=\"#", *tag ? " class=\"pick\"" : "");
        policy_anchor(f, i);
        fputs("\">", f);
        html_text(f, s->policy);
        fputs("</a>", f);
        if (*tag)
            fprintf(f, "<span class=\"tag\">%s</span>", tag);
        fprintf(f, "</td><td>%d/%d%s</td>", s->done, s->jobs, s->done < s->jobs ? "*" : "");
        html_min(f, s->avg_jct);
        html_min(f, s->p50_jct);
        html_min(f, s->p95_jct);
        html_min(f, s->p99_jct);
        html_min(f, s->makespan);
        html_min(f, s->avg_wait);
        if (gpu)
            html_util(f, s->gpu_util, s->gpu_useful, s->gpu_wasted);
        html_util(f, s->cpu_util, s->cpu_useful, s->cpu_wasted);
        fprintf(f, "<td>%lld</td><td>%lld</td><td>%lld</td></tr>\n", (long long)s->preemptions,
                (long long)s->migrations, (long long)s->scales);
    }
    fputs("</tbody></table>\n", f);
    html_table_notes(f, r);
}

static bool has_queues(const drv_report_data *r)
{
    for (int32_t i = 0; i < r->n; i++)
        if (r->sum[i].nqueues > 0)
            return true;
    return false;
}

/* A cell with x to prec decimals, or "-" when x is not defined (NaN). */
static void html_num(FILE *f, int prec, double x)
{
    fputs("<td>", f);
    if (isfinite(x))
        fprintf(f, "%.*f", prec, x);
    else
        fputs("-", f);
    fputs("</td>", f);
}

/* The queues' section (runs of a cluster with queues only): fairness per policy, then each
 * queue's results per policy (docs/model.md, "Queues and fairness"). */
static void html_queues(FILE *f, const drv_report_data *r)
{
    fputs("<h2 id=\"queues\">Queues and fairness</h2>\n<p>Jain's index over the queues' weighted "
          "shares (share / weight: 1 when shares follow weights); finish-time fairness &rho; = "
          "JCT / the job's time alone on 1/N of the cluster (N queues; &rho; &le; 1 is fair), "
          "its largest value and Jain's index over all jobs.</p>\n<table>\n<thead><tr>"
          "<th>policy</th><th>Jain (share/weight)</th><th>max &rho;</th><th>Jain (&rho;)</th>"
          "</tr></thead>\n<tbody>\n",
          f);
    for (int32_t i = 0; i < r->n; i++) {
        const drv_summary *s = &r->sum[i];
        fputs("<tr><td>", f);
        html_text(f, s->policy);
        fputs("</td>", f);
        html_num(f, 3, s->jain_share);
        html_num(f, 2, s->ftf_max);
        html_num(f, 3, s->ftf_jain);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n<p>Per queue: <em>share</em> is the time-average dominant share of "
          "the cluster its pods held, <em>quota</em> the time-average use of its nominal quota "
          "(over 100 %: beyond it).</p>\n<table>\n<thead><tr><th>policy</th><th>queue</th>"
          "<th>weight</th><th>jobs</th><th>done</th><th>avg JCT (min)</th>"
          "<th>avg wait (min)</th><th>share %</th><th>quota %</th></tr></thead>\n<tbody>\n",
          f);
    for (int32_t i = 0; i < r->n; i++)
        for (int32_t k = 0; k < r->sum[i].nqueues; k++) {
            const drv_queue_summary *q = &r->sum[i].queue[k];
            fputs("<tr><td>", f);
            html_text(f, r->sum[i].policy);
            fputs("</td><td>", f);
            html_text(f, q->name);
            fprintf(f, "</td><td>%.4g</td><td>%d</td><td>%d</td>", q->weight, q->jobs, q->done);
            html_min(f, q->avg_jct);
            html_min(f, q->avg_wait);
            html_num(f, 1, 100 * q->share);
            html_num(f, 1, 100 * q->quota_use);
            fputs("</tr>\n", f);
        }
    fputs("</tbody></table>\n", f);
}

/* The GPU types' section (runs of a cluster with GPU types only; the first run's types name
 * them all): per policy each type's utilisation (docs/formats.md, "Outputs"). */
static void html_gpu_types(FILE *f, const drv_report_data *r)
{
    const drv_summary *first = &r->sum[0];
    if (first->ngpu_types == 0)
        return;
    fputs("<h2 id=\"gpu-types\">GPU types</h2>\n<p>Per GPU type: GPUs held by pods on the "
          "type&#39;s nodes, % of its GPUs, over the makespan.</p>\n<table>\n<thead><tr>"
          "<th>policy</th>",
          f);
    for (int32_t k = 0; k < first->ngpu_types; k++) {
        fputs("<th>", f);
        html_text(f, first->gpu_type[k].name);
        fprintf(f, " (%lld GPUs) %%</th>", (long long)first->gpu_type[k].gpus);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (int32_t i = 0; i < r->n; i++) {
        fputs("<tr><td>", f);
        html_text(f, r->sum[i].policy);
        fputs("</td>", f);
        for (int32_t k = 0; k < first->ngpu_types; k++)
            html_num(f, 1, k < r->sum[i].ngpu_types ? 100 * r->sum[i].gpu_type[k].util : NAN);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

/* A cell "mean ± half-width", in minutes when minutes is true; sign forces a + on positives. */
static void html_pm(FILE *f, double mean, double half, bool minutes, bool sign)
{
    double s = minutes ? 1 / 60.0 : 1;
    if (!isfinite(mean) || !isfinite(half))
        fputs("<td>-</td>", f);
    else
        fprintf(f, sign ? "<td>%+.1f &plusmn; %.1f</td>" : "<td>%.1f &plusmn; %.1f</td>", mean * s,
                half * s);
}

/* The "Over seeds" section from summary-seeds.json: its provenance, each policy's mean ± 95 %
 * interval over the seeds, and its paired difference against the baseline. */
static void html_seeds(FILE *f, const drv_report_seeds *s)
{
    if (!s->has) {
        if (s->msg[0]) {
            fputs("<p class=\"note\">No multi-seed table: ", f);
            html_text(f, s->msg);
            fputs("</p>\n", f);
        }
        return;
    }
    fputs("<h2 id=\"seeds\">Over seeds ", f);
    html_text(f, s->seeds);
    fprintf(f,
            "</h2>\n<p>%d seeds, each its own workload and noise; the sections below are of "
            "the first seed alone. Commit <code>",
            s->nseeds);
    html_text(f, s->commit);
    fprintf(f, "</code>%s; command: <code>", s->dirty ? " (tree dirty)" : "");
    html_text(f, s->command);
    fputs("</code>.</p>\n<table>\n<thead><tr><th>policy</th><th>avg JCT (min)</th>"
          "<th>p95 JCT (min)</th><th>makespan (min)</th><th>done (jobs)</th>"
          "<th>avg JCT &minus; ",
          f);
    html_text(f, s->baseline);
    fputs(" (min)</th><th>avg JCT lower</th></tr></thead>\n<tbody>\n", f);
    for (int32_t i = 0; i < s->n; i++) {
        const drv_seeds_row *row = &s->rows[i];
        fputs("<tr><td>", f);
        html_text(f, row->policy);
        fputs("</td>", f);
        for (int m = 0; m < DRV_SEEDS_NMETRICS; m++)
            html_pm(f, row->mean[m], row->ci95[m], m < DRV_SEEDS_NMETRICS - 1, false);
        if (row->has_diff) {
            html_pm(f, row->diff, row->diff_ci95, true, true);
            fprintf(f, "<td>on %d of %d</td></tr>\n", row->lower, s->nseeds);
        } else {
            fputs("<td>baseline</td><td></td></tr>\n", f);
        }
    }
    fputs("</tbody></table>\n<p class=\"note\">Mean &plusmn; half-width of the 95 % confidence "
          "interval over the seeds (Student&#39;s t). The difference is paired: per seed the "
          "policy&#39;s average JCT minus the baseline&#39;s on the same jobs, then their mean and "
          "interval; <em>lower</em> counts the seeds on which the policy&#39;s was below.</p>\n",
          f);
}

static void html_nav(FILE *f, const drv_report_data *r, bool plots)
{
    fputs("<nav><a href=\"#summary\">Summary</a>", f);
    if (r->seeds.has)
        fputs("<a href=\"#seeds\">Over seeds</a>", f);
    if (has_queues(r))
        fputs("<a href=\"#queues\">Queues</a>", f);
    if (r->n > 0 && r->sum[0].ngpu_types > 0)
        fputs("<a href=\"#gpu-types\">GPU types</a>", f);
    if (plots)
        fputs("<a href=\"#jct\">Completion</a><a href=\"#utilisation\">Utilisation</a>"
              "<a href=\"#queue\">Queue</a>",
              f);
    fputs("<a href=\"#data\">Data</a><span class=\"pol\">Policies: ", f);
    for (int32_t i = 0; i < r->n; i++) {
        fputs("<a href=\"#", f);
        policy_anchor(f, i);
        fputs("\">", f);
        html_text(f, r->sum[i].policy);
        fputs("</a>", f);
    }
    fputs("</span></nav>\n", f);
}

static void html_data_links(FILE *f, const drv_report_data *r, int32_t i)
{
    static const char *const kinds[] = {"jobs", "timeline", "placements"};
    for (int k = 0; k < (r->runs[i].has_pl ? 3 : 2); k++) {
        char name[160];
        snprintf(name, sizeof name, "%s-%s.csv", kinds[k], r->sum[i].policy);
        fputs(k ? ", <a href=\"" : "<a href=\"", f);
        html_url(f, name);
        fputs("\">", f);
        html_text(f, name);
        fputs("</a>", f);
    }
}

/* One policy's section: a line of its numbers, its Gantt chart when drawn, its data files. */
static void html_policy(FILE *f, const drv_report_data *r, int32_t i, bool plots, bool gpu,
                        int32_t best, int32_t baseline)
{
    const drv_summary *s = &r->sum[i];
    const char *tag = pick_tag(i, best, baseline);
    fputs("<details id=\"", f);
    policy_anchor(f, i);
    fprintf(f, "\"%s><summary><b>", *tag ? " open" : "");
    html_text(f, s->policy);
    fputs("</b>", f);
    if (*tag)
        fprintf(f, "<span class=\"tag\">%s</span>", tag);
    fprintf(f, " &mdash; %d/%d done", s->done, s->jobs);
    if (isfinite(s->avg_jct))
        fprintf(f, ", mean JCT %.1f min", s->avg_jct / 60.0);
    if (gpu)
        fprintf(f, ", GPU utilisation %.0f%%, CPU %.0f%%</summary>\n", 100 * s->gpu_util,
                100 * s->cpu_util);
    else
        fprintf(f, ", CPU utilisation %.0f%%</summary>\n", 100 * s->cpu_util);
    const drv_report_run *run = &r->runs[i];
    if (plots && drv_plot_gantt_shown(r, i)) {
        char base[160], cap[256];
        snprintf(base, sizeof base, "gantt-%s", s->policy);
        snprintf(cap, sizeof cap,
                 "%s: which job held each node when; one lane per overlapping job, colour by "
                 "user, labelled with the job's name where it fits.",
                 s->policy);
        html_figure(f, base, cap, cap);
    } else if (plots) {
        fputs("<p class=\"note\">No Gantt chart: ", f);
        if (!run->has_pl)
            fputs("no placements file.", f);
        else if (run->jobs > DRV_GANTT_MAX_JOBS)
            fprintf(f, "%d jobs; drawn for at most %d.", run->jobs, DRV_GANTT_MAX_JOBS);
        else if (run->nnodes > DRV_GANTT_MAX_NODES)
            fprintf(f, "%d nodes; drawn for at most %d.", run->nnodes, DRV_GANTT_MAX_NODES);
        else
            fputs("drawn only for the best policy and the baseline.", f);
        fputs("</p>\n", f);
    }
    fputs("<p class=\"note\">Data: ", f);
    html_data_links(f, r, i);
    fputs("</p></details>\n", f);
}

static void html_plots(FILE *f, bool gpu)
{
    fputs("<h2 id=\"jct\">Job completion time</h2>\n", f);
    html_figure(f, "jct-cdf", "JCT CDF per policy",
                "Fraction of all jobs finished within a given completion time; further left "
                "and higher is better.");
    fputs("<h2 id=\"utilisation\">Utilisation over time</h2>\n", f);
    html_figure(f, "utilisation", gpu ? "GPUs allocated over time" : "CPU allocated over time",
                gpu ? "GPUs held by pods, as a share of the cluster, after every event; one panel "
                      "per policy, the baseline in grey behind the others."
                    : "CPU held by pods, as a share of the cluster, after every event; one panel "
                      "per policy, the baseline in grey behind the others.");
    fputs("<h2 id=\"queue\">Queue over time</h2>\n", f);
    html_figure(f, "queue", "Pending jobs over time",
                "Jobs submitted but not running, after every event; one panel per policy.");
}

void drv_report_page(FILE *f, const drv_report_data *r, bool plots)
{
    bool gpu = drv_report_gpu_first(r->sum, r->n);
    int32_t best, baseline;
    drv_report_pick(r, &best, &baseline);
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>Drover simulation report</title>\n<style>%s</style>\n</head>\n<body>\n",
            css);
    html_nav(f, r, plots);
    fputs("<h1>Drover simulation report</h1>\n<p>", f);
    if (r->has_scen) {
        fputs("Scenario: ", f);
        html_text(f, r->scen.desc);
        fprintf(f, ", seed %llu; %d polic%s compared on the same jobs.",
                (unsigned long long)r->scen.seed, r->n, r->n == 1 ? "y" : "ies");
    } else {
        fprintf(f, "%d jobs; %d polic%s compared on the same jobs (no scenario.json).",
                r->sum[0].jobs, r->n, r->n == 1 ? "y" : "ies");
    }
    fprintf(f,
            " Durations in minutes; utilisation is the share of cluster %s held by pods over the "
            "makespan, <em>useful</em> by jobs whose gang is complete, <em>wasted</em> by partly "
            "placed gangs that cannot run; <em>preempt</em> counts jobs preempted, <em>migr</em> "
            "pods migrated, <em>scale</em> worker-count changes.</p>\n",
            gpu ? "GPUs (then CPU)" : "CPU");
    fputs("<h2 id=\"summary\">Summary</h2>\n", f);
    html_table(f, r, gpu, best, baseline);
    if (r->n > 1) {
        fputs("<p class=\"note\">Shown in detail: <b>", f);
        html_text(f, r->sum[best].policy);
        fputs("</b> (best: most jobs finished, then lowest mean JCT) and <b>", f);
        html_text(f, r->sum[baseline].policy);
        fputs("</b> (baseline).</p>\n", f);
    }
    html_seeds(f, &r->seeds);
    if (has_queues(r))
        html_queues(f, r);
    html_gpu_types(f, r);
    if (!plots)
        fputs("<p class=\"note\">Plots were not rendered (gnuplot was not available). Install "
              "gnuplot and run <code>drover report DIR</code> on this directory.</p>\n",
              f);
    else
        html_plots(f, gpu);
    fputs("<h2 id=\"policies\">Policies</h2>\n", f);
    for (int32_t i = 0; i < r->n; i++)
        html_policy(f, r, i, plots, gpu, best, baseline);
    fprintf(
        f,
        "<h2 id=\"data\">Data</h2>\n<p><a href=\"summary.json\">summary.json</a> (with the "
        "profiles, seed, version and input checksums), <a href=\"summary.csv\">summary.csv</a>, "
        "<a href=\"scenario.json\">scenario.json</a>%s; per policy in its section. Formats: "
        "docs/formats.md and docs/reports.md in the Drover sources.</p>\n</body>\n</html>\n",
        r->seeds.has ? ", <a href=\"summary-seeds.json\">summary-seeds.json</a> and "
                       "<a href=\"seeds.csv\">seeds.csv</a> (every seed)"
                     : "");
}
