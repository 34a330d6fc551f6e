/*
 * plot.c - the pictures of a report directory and the page that shows them: a JCT CDF per
 * policy, CPU utilisation and queue length over time, a per-node Gantt chart per policy (runs
 * of at most DRV_GANTT_MAX_JOBS jobs), each as SVG and PNG, and index.html.
 *
 * Why gnuplot as an external program, driven by a script generated here: the data are already
 * in memory (read back by report_read.c), so the script carries them inline as datablocks
 * ($name << EOD) and needs no helper files or shell; one gnuplot process draws every plot; a
 * missing gnuplot is found before anything is written (PATH is searched here) and only means
 * "no plots". The script is written to DIR/.plots.gp.tmp, gnuplot runs it with posix_spawn
 * (no shell, so no quoting of DIR for a shell), and is removed afterwards. gnuplot writes each
 * image under a temporary name; only when it exits with status 0 are they renamed into place,
 * so a failure never leaves half an image. Neither the script nor the images contain a time
 * or anything else that varies between runs (SVG and pngcairo output embed no timestamp).
 *
 * Bounds: a time series is thinned to at most MAX_POINTS points per policy (every k-th tick),
 * so a million-event trace still gives a small script and a quick plot.
 */
#include "drover/sim.h"
#include "drover/file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_POINTS 4000 /* time-series points per policy in a plot */
#define MAX_OUTPUTS 256 /* images one render may produce */
#define ROW_PX 70       /* height of a node's row in the Gantt chart, pixels, ... */
#define GANTT_PX 1400   /* ... less when the rows would be taller than this in all */
#define LABEL_PX 10     /* a lane this tall or taller gets job numbers */

/* Twelve distinct colours, so every built-in policy (ten) has its own; the tenth is black. */
static const char *const policy_colour[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                            "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                            "#7f7f7f", "#000000", "#bcbd22", "#aec7e8"};
#define NPCOL (sizeof policy_colour / sizeof policy_colour[0])

/* Job colours of the Gantt chart: a cycle of distinguishable hues (Tableau 20). */
static const unsigned job_colour[] = {0x1f77b4, 0xaec7e8, 0xff7f0e, 0xffbb78, 0x2ca02c,
                                      0x98df8a, 0xd62728, 0xff9896, 0x9467bd, 0xc5b0d5,
                                      0x8c564b, 0xc49c94, 0xe377c2, 0xf7b6d2, 0x7f7f7f,
                                      0xc7c7c7, 0xbcbd22, 0xdbdb8d, 0x17becf, 0x9edae5};
#define NJCOL (sizeof job_colour / sizeof job_colour[0])

/* A time unit chosen so the axis reads naturally: minutes up to 3 h, hours up to 3 days. */
typedef struct unit {
    double div;
    const char *name;
} unit;

static unit pick_unit(double max_s)
{
    if (max_s <= 3 * 3600.0)
        return (unit){60.0, "min"};
    if (max_s <= 3 * 86400.0)
        return (unit){3600.0, "h"};
    return (unit){86400.0, "days"};
}

/* Writes s as a gnuplot single-quoted string (a quote is doubled). */
static void gp_str(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* The images of this render, by final name; each is written first as .<name>.tmp. */
typedef struct outputs {
    char name[MAX_OUTPUTS][160];
    int n;
} outputs;

/* Starts an image: sets terminal and output for svg or png. */
static void gp_output(FILE *f, outputs *o, const char *dir, const char *base, bool png, int width,
                      int height)
{
    char path[4400];
    if (o->n < MAX_OUTPUTS)
        snprintf(o->name[o->n++], sizeof o->name[0], "%s.%s", base, png ? "png" : "svg");
    if (png)
        fprintf(f, "set terminal pngcairo size %d,%d font 'sans,10' noenhanced\n", width, height);
    else
        fprintf(f, "set terminal svg size %d,%d font 'sans,12' noenhanced background '#ffffff'\n",
                width, height);
    snprintf(path, sizeof path, "%s/.%s.%s.tmp", dir, base, png ? "png" : "svg");
    fputs("set output ", f);
    gp_str(f, path);
    fputc('\n', f);
}

/* Draws the plot set up by the preceding lines as SVG, then again as PNG. */
static void gp_both(FILE *f, outputs *o, const char *dir, const char *base, const char *plot,
                    int width, int height)
{
    gp_output(f, o, dir, base, false, width, height);
    fputs(plot, f);
    fputs("\nunset output\n", f);
    gp_output(f, o, dir, base, true, width, height);
    fputs("replot\nunset output\n", f);
}

static double run_end(const drv_report_data *r, int32_t i)
{
    const drv_report_run *run = &r->runs[i];
    double end = isfinite(r->sum[i].end) ? r->sum[i].end : 0;
    if (run->nticks > 0 && run->ticks[run->nticks - 1].t > end)
        end = run->ticks[run->nticks - 1].t;
    return end;
}

/* ---- JCT CDF ------------------------------------------------------------------------------ */

static void plot_cdf(FILE *f, outputs *o, const char *dir, const drv_report_data *r)
{
    double max = 0;
    for (int32_t i = 0; i < r->n; i++)
        if (r->runs[i].njct > 0 && r->runs[i].jct[r->runs[i].njct - 1] > max)
            max = r->runs[i].jct[r->runs[i].njct - 1];
    unit u = pick_unit(max);
    for (int32_t i = 0; i < r->n; i++) {
        const drv_report_run *run = &r->runs[i];
        fprintf(f, "$cdf%d << EOD\n0 0\n", i);
        for (int32_t k = 0; k < run->njct; k++)
            fprintf(f, "%.6g %.6g\n", run->jct[k] / u.div, (k + 1.0) / run->jobs);
        fputs("EOD\n", f);
    }
    fprintf(f,
            "reset\nset title 'Job completion time, CDF per policy'\n"
            "set xlabel 'job completion time (%s)'\n"
            "set ylabel 'fraction of all jobs finished'\nset yrange [0:1.02]\nset xrange [0:*]\n"
            "set key bottom right box opaque\nset grid\n",
            u.name);
    char plot[8192];
    int len = snprintf(plot, sizeof plot, "plot");
    for (int32_t i = 0; i < r->n && len < (int)sizeof plot - 200; i++)
        len += snprintf(plot + len, sizeof plot - (size_t)len,
                        "%s $cdf%d using 1:2 with steps lw 2 lc rgb '%s' title '%s'", i ? "," : "",
                        i, policy_colour[i % NPCOL], r->sum[i].policy);
    gp_both(f, o, dir, "jct-cdf", plot, 800, 450);
}

/* ---- time series -------------------------------------------------------------------------- */

/* Utilisation (percent of capacity, or cores when the capacity is unknown) and queue length. */
static void plot_series(FILE *f, outputs *o, const char *dir, const drv_report_data *r)
{
    double max = 0;
    for (int32_t i = 0; i < r->n; i++)
        if (run_end(r, i) > max)
            max = run_end(r, i);
    unit u = pick_unit(max);
    bool pct = r->has_scen && r->scen.cpu_m > 0;
    for (int32_t i = 0; i < r->n; i++) {
        const drv_report_run *run = &r->runs[i];
        int32_t step = run->nticks / MAX_POINTS + 1;
        fprintf(f, "$ts%d << EOD\n", i);
        for (int32_t k = 0; k < run->nticks; k += step) {
            const drv_tick *t = &run->ticks[k];
            double cpu = pct ? 100.0 * t->cpu_used / r->scen.cpu_m : t->cpu_used / 1000.0;
            fprintf(f, "%.6g %.6g %d\n", t->t / u.div, cpu, t->pending);
        }
        fputs("EOD\n", f);
    }
    char plot[8192];
    fprintf(f,
            "reset\nset title 'Cluster CPU allocated to pods over time'\n"
            "set xlabel 'simulated time (%s)'\nset ylabel '%s'\nset xrange [0:*]\n%s"
            "set key top right box opaque\nset grid\n",
            u.name, pct ? "CPU allocated (% of cluster)" : "CPU allocated (cores)",
            pct ? "set yrange [0:105]\n" : "set yrange [0:*]\n");
    int len = snprintf(plot, sizeof plot, "plot");
    for (int32_t i = 0; i < r->n && len < (int)sizeof plot - 200; i++)
        len += snprintf(plot + len, sizeof plot - (size_t)len,
                        "%s $ts%d using 1:2 with steps lw 1.5 lc rgb '%s' title '%s'", i ? "," : "",
                        i, policy_colour[i % NPCOL], r->sum[i].policy);
    gp_both(f, o, dir, "utilisation", plot, 800, 450);

    fprintf(f,
            "reset\nset title 'Queue length over time'\n"
            "set xlabel 'simulated time (%s)'\nset ylabel 'pending jobs'\nset xrange [0:*]\n"
            "set yrange [0:*]\nset key top right box opaque\nset grid\n",
            u.name);
    len = snprintf(plot, sizeof plot, "plot");
    for (int32_t i = 0; i < r->n && len < (int)sizeof plot - 200; i++)
        len += snprintf(plot + len, sizeof plot - (size_t)len,
                        "%s $ts%d using 1:3 with steps lw 1.5 lc rgb '%s' title '%s'", i ? "," : "",
                        i, policy_colour[i % NPCOL], r->sum[i].policy);
    gp_both(f, o, dir, "queue", plot, 800, 450);
}

/* ---- Gantt -------------------------------------------------------------------------------- */

static int cmp_place(const void *a, const void *b)
{
    const drv_placement *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->job != y->job)
        return x->job < y->job ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

bool drv_plot_has_gantt(const drv_report_run *run)
{
    return run->has_pl && run->npl > 0 && run->jobs <= DRV_GANTT_MAX_JOBS;
}

/*
 * One row per node; a job's pods on a node are merged into intervals, and intervals that
 * overlap in time go to separate lanes of the row (greedy: the first lane free at the start).
 */
static int plot_gantt(FILE *f, outputs *o, const char *dir, const drv_report_data *r, int32_t i,
                      drv_diag *d)
{
    const drv_report_run *run = &r->runs[i];
    double end = run_end(r, i);
    unit u = pick_unit(end);
    int32_t n = run->npl;
    drv_placement *v = drv_malloc(sizeof *v * (size_t)n);
    double *lane_end = drv_malloc(sizeof *lane_end * (size_t)n);
    double *ybar = drv_malloc(sizeof *ybar * (size_t)n);
    int32_t *lane = drv_malloc(sizeof *lane * (size_t)n),
            *nlanes = drv_malloc(sizeof *nlanes * (size_t)n);
    if (!v || !lane_end || !lane || !ybar || !nlanes) {
        drv_free(v);
        drv_free(lane_end);
        drv_free(lane);
        drv_free(ybar);
        drv_free(nlanes);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    for (int32_t k = 0; k < n; k++) {
        v[k] = run->pl[k];
        if (v[k].end < 0)
            v[k].end = end;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_place);
    /* Merge a job's overlapping intervals on the same node (its several pods there). */
    int32_t m = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t j = m - 1;
        while (j >= 0 && v[j].node == v[k].node && v[j].job != v[k].job && v[j].end > v[k].start)
            j--;
        if (j >= 0 && v[j].node == v[k].node && v[j].job == v[k].job && v[j].end >= v[k].start) {
            if (v[k].end > v[j].end)
                v[j].end = v[k].end;
            continue;
        }
        v[m++] = v[k];
    }
    /* Lanes per node. */
    int32_t first = 0;
    fputs("$gantt << EOD\n", f);
    double span = end > 0 ? end : 1;
    int row_px = run->nnodes * ROW_PX > GANTT_PX ? GANTT_PX / run->nnodes : ROW_PX;
    if (row_px < 8)
        row_px = 8;
    while (first < m) {
        int32_t last = first, nl = 0;
        while (last < m && v[last].node == v[first].node)
            last++;
        for (int32_t k = first; k < last; k++) {
            int32_t l = 0;
            while (l < nl && lane_end[l] > v[k].start)
                l++;
            if (l == nl)
                nl++;
            lane_end[l] = v[k].end;
            lane[k] = l;
        }
        for (int32_t k = first; k < last; k++) {
            double h = 0.8 / nl, y = v[k].node - 0.4 + (lane[k] + 0.5) * h;
            ybar[k] = y;
            nlanes[k] = nl;
            fprintf(f, "%.6g %.6g %.6g %.6g %.6g %.6g %u %d\n", (v[k].start + v[k].end) / 2 / u.div,
                    y, v[k].start / u.div, v[k].end / u.div, y - 0.45 * h, y + 0.45 * h,
                    job_colour[v[k].job % NJCOL], v[k].job + 1);
        }
        first = last;
    }
    fputs("EOD\n$glabels << EOD\n", f);
    /* Label a bar with its job number when it is wide and tall enough to hold it. */
    for (int32_t k = 0; k < m; k++)
        if (v[k].end - v[k].start > span / 40 && row_px * 0.8 / nlanes[k] >= LABEL_PX)
            fprintf(f, "%.6g %.6g %d\n", (v[k].start + v[k].end) / 2 / u.div, ybar[k],
                    v[k].job + 1);
    fputs("EOD\n", f);
    drv_free(v);
    drv_free(lane_end);
    drv_free(lane);
    drv_free(ybar);
    drv_free(nlanes);

    fputs("reset\nset title ", f);
    char title[256];
    snprintf(title, sizeof title,
             "Which job held each node, %s (a bar is a job's pods on the node; colour by job)",
             r->sum[i].policy);
    gp_str(f, title);
    fprintf(f, "\nset xlabel 'simulated time (%s)'\nset xrange [0:%.6g]\n", u.name, end / u.div);
    fprintf(f, "set yrange [%d.55:-0.55]\nset ytics (", run->nnodes - 1);
    for (int32_t k = 0; k < run->nnodes; k++) {
        fputs(k ? ", " : "", f);
        gp_str(f, run->nodes[k]);
        fprintf(f, " %d", k);
    }
    fputs(") nomirror\nset grid xtics\nunset key\nset style fill solid 0.9 border rgb '#ffffff'\n",
          f);
    char base[160];
    snprintf(base, sizeof base, "gantt-%s", r->sum[i].policy);
    int height = 110 + row_px * run->nnodes;
    if (height < 300)
        height = 300;
    gp_both(f, o, dir, base,
            "plot $gantt using 1:2:3:4:5:6:7 with boxxyerror lc rgb variable notitle, "
            "$glabels using 1:2:3 with labels font 'sans,7' tc rgb '#222222' notitle",
            900, height);
    return 0;
}

/* ---- running gnuplot ---------------------------------------------------------------------- */

/* Finds gnuplot on PATH; false when it is not there. */
static bool find_gnuplot(char *out, size_t n)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        return false;
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len > 0 && len + 10 < n) {
            snprintf(out, n, "%.*s/gnuplot", (int)len, path);
            struct stat sb;
            if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode) && access(out, X_OK) == 0)
                return true;
        }
        path += len + (colon ? 1 : 0);
    }
    return false;
}

/* Runs gnuplot on script, its output into log; returns its exit status or -1. */
static int run_gnuplot(const char *gp, const char *script, const char *log)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    char *argv[] = {(char *)"gnuplot", (char *)script, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, gp, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The first line of the log, for an error message. */
static void first_line(const char *log, char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen(log, "r");
    if (!f)
        return;
    if (fgets(out, (int)n, f))
        out[strcspn(out, "\n")] = 0;
    fclose(f);
}

int drv_plot_render(const char *dir, const drv_report_data *r, drv_diag *d)
{
    char gp[4096];
    if (!find_gnuplot(gp, sizeof gp))
        return drv_fail(d, DRV_ENOENT, "gnuplot not found on PATH");
    outputs *o = drv_calloc(1, sizeof *o);
    if (!o)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    char script[4200], log[4200];
    snprintf(script, sizeof script, "%s/.plots.gp.tmp", dir);
    snprintf(log, sizeof log, "%s/.gnuplot.log.tmp", dir);
    FILE *f = fopen(script, "w");
    if (!f) {
        drv_free(o);
        return drv_fail(d, DRV_EIO, "%s: cannot write: %s", script, strerror(errno));
    }
    fputs("# generated by drover (src/sim/plot.c); data inline\n", f);
    int rc = 0;
    plot_cdf(f, o, dir, r);
    plot_series(f, o, dir, r);
    for (int32_t i = 0; i < r->n && !rc; i++)
        if (drv_plot_has_gantt(&r->runs[i]))
            rc = plot_gantt(f, o, dir, r, i, d);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad)
        rc = rc ? rc : drv_fail(d, DRV_EIO, "%s: write failed", script);
    int st = rc ? 0 : run_gnuplot(gp, script, log);
    if (!rc && st != 0) {
        char line[256];
        first_line(log, line, sizeof line);
        if (line[0])
            rc = drv_fail(d, DRV_EIO, "gnuplot failed: %s", line);
        else if (st < 0)
            rc = drv_fail(d, DRV_EIO, "%s: could not be run", gp);
        else
            rc = drv_fail(d, DRV_EIO, "gnuplot failed with exit status %d", st);
    }
    for (int k = 0; k < o->n; k++) {
        char tmp[4400], final[4400];
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, o->name[k]);
        snprintf(final, sizeof final, "%s/%s", dir, o->name[k]);
        if (rc)
            remove(tmp);
        else if (rename(tmp, final) != 0)
            rc = drv_fail(d, DRV_EIO, "%s: cannot rename into place: %s", final, strerror(errno));
    }
    remove(script);
    remove(log);
    drv_free(o);
    return rc;
}

/* ---- index.html --------------------------------------------------------------------------- */

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
        default:
            fputc(*s, f);
        }
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
    html_text(f, base);
    fputs(".png\"><img src=\"", f);
    html_text(f, base);
    fputs(".svg\" alt=\"", f);
    html_text(f, alt);
    fputs("\"></a><figcaption>", f);
    html_text(f, caption);
    fputs(" (<a href=\"", f);
    html_text(f, base);
    fputs(".png\">PNG</a>)</figcaption></figure>\n", f);
}

static const char *const css =
    "body{font-family:sans-serif;margin:2em auto;max-width:980px;color:#222;padding:0 1em}"
    "table{border-collapse:collapse;font-size:0.9em;margin:1em 0}"
    "th,td{border:1px solid #ccc;padding:0.25em 0.5em;text-align:right}"
    "th:first-child,td:first-child{text-align:left}thead th{background:#f0f0f0}"
    "figure{margin:1.5em 0}img{max-width:100%;height:auto;border:1px solid #ddd}"
    "figcaption{font-size:0.9em;color:#555}.note{color:#555;font-size:0.9em}";

static void html_table(FILE *f, const drv_report_data *r)
{
    fputs("<table>\n<thead><tr><th>policy</th><th>done</th><th>avg JCT</th><th>p50 JCT</th>"
          "<th>p95 JCT</th><th>p99 JCT</th><th>makespan</th><th>avg wait</th><th>util %</th>"
          "<th>useful %</th><th>wasted %</th><th>preempt</th><th>migr</th><th>scale</th></tr>\n"
          "<tr><th></th><th></th><th>(min)</th><th>(min)</th><th>(min)</th><th>(min)</th>"
          "<th>(min)</th><th>(min)</th><th>cpu</th><th>cpu</th><th>cpu</th><th></th><th></th>"
          "<th></th></tr></thead>\n<tbody>\n",
          f);
    bool unfinished = false;
    for (int32_t i = 0; i < r->n; i++) {
        const drv_summary *s = &r->sum[i];
        fputs("<tr><td>", f);
        html_text(f, s->policy);
        fprintf(f, "</td><td>%d/%d%s</td>", s->done, s->jobs, s->done < s->jobs ? "*" : "");
        unfinished |= s->done < s->jobs;
        html_min(f, s->avg_jct);
        html_min(f, s->p50_jct);
        html_min(f, s->p95_jct);
        html_min(f, s->p99_jct);
        html_min(f, s->makespan);
        html_min(f, s->avg_wait);
        fprintf(f,
                "<td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%lld</td><td>%lld</td>"
                "<td>%lld</td></tr>\n",
                100 * s->cpu_util, 100 * s->cpu_useful, 100 * s->cpu_wasted,
                (long long)s->preemptions, (long long)s->migrations, (long long)s->scales);
    }
    fputs("</tbody></table>\n", f);
    if (unfinished)
        fputs("<p class=\"note\">* JCT and makespan cover finished jobs only.</p>\n", f);
}

int drv_report_html(const char *dir, const drv_report_data *r, bool plots, drv_diag *d)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/index.html", dir);
    drv_file_out o;
    int rc = drv_file_out_open(&o, path, d);
    if (rc)
        return rc;
    FILE *f = o.f;
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>Drover simulation report</title>\n<style>%s</style>\n</head>\n<body>\n"
            "<h1>Drover simulation report</h1>\n<p>",
            css);
    if (r->has_scen) {
        fputs("Scenario: ", f);
        html_text(f, r->scen.desc);
        fprintf(f, ", seed %llu; %d polic%s compared on the same jobs.",
                (unsigned long long)r->scen.seed, r->n, r->n == 1 ? "y" : "ies");
    } else {
        fprintf(f, "%d jobs; %d polic%s compared on the same jobs (no scenario.json).",
                r->sum[0].jobs, r->n, r->n == 1 ? "y" : "ies");
    }
    fputs(" Durations in minutes; utilisation is the share of cluster CPU held by pods over the "
          "makespan, <em>useful</em> by jobs whose gang is complete, <em>wasted</em> by jobs that "
          "could not run.</p>\n",
          f);
    html_table(f, r);
    if (!plots) {
        fputs("<p class=\"note\">Plots were not rendered (gnuplot was not available). Install "
              "gnuplot and run <code>drover report DIR</code> on this directory.</p>\n",
              f);
    } else {
        fputs("<h2>Job completion time</h2>\n", f);
        html_figure(f, "jct-cdf", "JCT CDF per policy",
                    "Fraction of all jobs finished within a given completion time; further left "
                    "and higher is better.");
        fputs("<h2>Cluster over time</h2>\n", f);
        html_figure(f, "utilisation", "CPU allocated over time",
                    "CPU held by pods, as a share of the cluster, after every event.");
        html_figure(f, "queue", "Pending jobs over time",
                    "Jobs submitted but not running, after every event.");
        fputs("<h2>Placements</h2>\n", f);
        for (int32_t i = 0; i < r->n; i++) {
            char base[160], cap[256];
            snprintf(base, sizeof base, "gantt-%s", r->sum[i].policy);
            if (drv_plot_has_gantt(&r->runs[i])) {
                snprintf(cap, sizeof cap,
                         "%s: which job held each node when (one lane per overlapping job).",
                         r->sum[i].policy);
                html_figure(f, base, cap, cap);
            } else {
                fputs("<p class=\"note\">", f);
                html_text(f, r->sum[i].policy);
                if (!r->runs[i].has_pl)
                    fputs(": no Gantt chart (no placements file).</p>\n", f);
                else
                    fprintf(f, ": no Gantt chart (%d jobs; drawn for at most %d).</p>\n",
                            r->runs[i].jobs, DRV_GANTT_MAX_JOBS);
            }
        }
    }
    fputs("<h2>Data</h2>\n<p><a href=\"summary.json\">summary.json</a>, "
          "<a href=\"summary.csv\">summary.csv</a>",
          f);
    for (int32_t i = 0; i < r->n; i++) {
        static const char *const kinds[] = {"jobs", "timeline", "placements"};
        for (int k = 0; k < (r->runs[i].has_pl ? 3 : 2); k++) {
            char name[160];
            snprintf(name, sizeof name, "%s-%s.csv", kinds[k], r->sum[i].policy);
            fputs(", <a href=\"", f);
            html_text(f, name);
            fputs("\">", f);
            html_text(f, name);
            fputs("</a>", f);
        }
    }
    fputs(". Formats: docs/formats.md and docs/reports.md in the Drover sources.</p>\n"
          "</body>\n</html>\n",
          f);
    return drv_file_out_commit(&o, d);
}
