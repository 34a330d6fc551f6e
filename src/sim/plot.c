/*
 * plot.c - the pictures of a report directory: a JCT CDF per policy; utilisation (GPU on a GPU
 * cluster, else CPU) and queue length over time as small multiples, one panel per policy with
 * the baseline in grey behind it (ten lines on one axis cannot be told apart); per-node Gantt
 * charts for the two runs drv_report_pick chooses (the best and the baseline), bars coloured by
 * user and labelled with job names; each as SVG and PNG. index.html is opened and renamed into
 * place here, its body is report_html.c's.
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
 * Every string from the input files reaches the script quoted by gp_quote or gp_data_str, so
 * a name is always drawn as text and never runs as a gnuplot command (issue 12).
 *
 * Bounds: a time series is thinned to at most MAX_POINTS points per policy (every k-th tick),
 * so a million-event trace still gives a small script and a quick plot; a Gantt chart is drawn
 * for at most DRV_GANTT_MAX_JOBS jobs on DRV_GANTT_MAX_NODES nodes.
 */
#include "drover/sim.h"
#include "report_html.h"
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
#define ROW_PX 60       /* least height of a node's row in the Gantt chart, pixels, ... */
#define LANE_PX 14      /* ... more when it has many lanes, each this tall (room for a label) ... */
#define GANTT_PX 1800   /* ... less when the rows would be taller than this in all */
#define LABEL_PX 10     /* a lane this tall or taller gets job names */
#define BOTTOM_PX 60    /* below the small multiples' last row: its tick labels and x label */

/* Twelve distinct colours, so every built-in policy (ten) has its own; the tenth is black. */
static const char *const policy_colour[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                            "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                            "#7f7f7f", "#000000", "#bcbd22", "#aec7e8"};
#define NPCOL (sizeof policy_colour / sizeof policy_colour[0])

/* Colours of the Gantt chart's users (or jobs): Tableau 10 for up to ten. */
static const unsigned tableau[] = {0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f,
                                   0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac};
#define NTABLEAU (sizeof tableau / sizeof tableau[0])
#define MAX_KEY 20 /* users named in the Gantt chart's key; more are summed up in one entry */

/* A channel of HSL (h in turns, s and l in [0, 1]) as 0..255 (the CSS formula). */
static unsigned hsl_channel(double h, double sat, double l, double n)
{
    double k = fmod(n + h * 12, 12), a = sat * fmin(l, 1 - l);
    double v = l - a * fmax(-1, fmin(fmin(k - 3, 9 - k), 1));
    return (unsigned)lround(255 * v);
}

/*
 * Colour k of n: Tableau 10 when n <= 10; beyond, every k its own colour (a 160-job trace
 * coloured by job reused ten colours sixteen times, so neighbouring bars of different jobs
 * looked alike): hues a golden angle apart (137.5 degrees, so consecutive k are far apart on
 * the wheel and no two of the first few hundred coincide), lightness in three steps so that
 * hues that come close again differ in brightness.
 */
static unsigned distinct_colour(int32_t k, int32_t n)
{
    if (n <= (int32_t)NTABLEAU)
        return tableau[k % (int32_t)NTABLEAU];
    double h = fmod(k * 0.381966011250105, 1.0); /* 1 - 1/phi of a turn: the golden angle */
    double l = (k % 3 == 0) ? 0.42 : (k % 3 == 1) ? 0.58 : 0.72, sat = 0.62;
    return hsl_channel(h, sat, l, 0) << 16 | hsl_channel(h, sat, l, 8) << 8 |
           hsl_channel(h, sat, l, 4);
}

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

/*
 * Quotes s as a gnuplot single-quoted string into out (at most n bytes, always terminated).
 * Inside single quotes gnuplot expands nothing (no `command`, no @macro, no backslash escape);
 * the only way out is a quote, which is doubled, or a line end, which ends the command: control
 * characters become '?'. So a name such as x'.system('touch PWNED').' is drawn as text, never
 * run. A string too long for out is cut, still closed by its quote.
 */
static void gp_quote(char *out, size_t n, const char *s)
{
    size_t k = 0;
    out[k++] = '\'';
    for (; *s && k + 4 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\'')
            out[k++] = '\'';
        out[k++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    out[k++] = '\'';
    out[k] = 0;
}

/* Writes s as a gnuplot single-quoted string (gp_quote). */
static void gp_str(FILE *f, const char *s)
{
    char q[2 * 4400 + 3]; /* the longest path gp_output quotes, every byte doubled */
    gp_quote(q, sizeof q, s);
    fputs(q, f);
}

/*
 * Writes s as a double-quoted string of an inline datablock (a label column). gnuplot reads
 * such a string up to the next '"' and expands nothing in it; '"', '\\', '`' and control
 * characters, which could end or confuse the field, become '?'. At most max characters.
 */
static void gp_data_str(FILE *f, const char *s, int max)
{
    fputc('"', f);
    for (int k = 0; *s && k < max; s++, k++) {
        unsigned char c = (unsigned char)*s;
        fputc(c < 0x20 || c == 0x7f || c == '"' || c == '\\' || c == '`' ? '?' : c, f);
    }
    fputc('"', f);
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

/* Writes the commands that draw one picture (settings, plot or multiplot) to f. */
typedef void draw_fn(FILE *f, const drv_report_data *r, const void *arg);

/* Draws a picture as SVG, then again as PNG (draw runs twice: a multiplot cannot replot). */
static void gp_both(FILE *f, outputs *o, const char *dir, const char *base, draw_fn *draw,
                    const drv_report_data *r, const void *arg, int width, int height)
{
    gp_output(f, o, dir, base, false, width, height);
    draw(f, r, arg);
    fputs("unset output\n", f);
    gp_output(f, o, dir, base, true, width, height);
    draw(f, r, arg);
    fputs("unset output\n", f);
}

static double run_end(const drv_report_data *r, int32_t i)
{
    const drv_report_run *run = &r->runs[i];
    double end = isfinite(r->sum[i].end) ? r->sum[i].end : 0;
    if (run->nticks > 0 && run->ticks[run->nticks - 1].t > end)
        end = run->ticks[run->nticks - 1].t;
    return end;
}

/* When run i's cluster last fell idle: the tick after the last one with a job pending or
 * running (events after the last job, such as a final quiet cycle, would stretch the axis). */
static double busy_end(const drv_report_data *r, int32_t i)
{
    const drv_report_run *run = &r->runs[i];
    for (int32_t k = run->nticks - 1; k >= 0; k--)
        if (run->ticks[k].pending > 0 || run->ticks[k].running > 0)
            return run->ticks[k + 1 < run->nticks ? k + 1 : k].t;
    return run_end(r, i);
}

/* ---- which runs to show in detail --------------------------------------------------------- */

/* Whether run a did better than run b: more jobs finished, then a lower mean JCT. */
static bool better(const drv_summary *a, const drv_summary *b)
{
    if (a->done != b->done)
        return a->done > b->done;
    double x = isfinite(a->avg_jct) ? a->avg_jct : INFINITY;
    double y = isfinite(b->avg_jct) ? b->avg_jct : INFINITY;
    return x < y;
}

void drv_report_pick(const drv_report_data *r, int32_t *best, int32_t *baseline)
{
    *baseline = 0;
    for (int32_t i = 0; i < r->n; i++)
        if (strcmp(r->sum[i].policy, DRV_REPORT_BASELINE) == 0)
            *baseline = i;
    *best = r->n > 1 ? (*baseline == 0 ? 1 : 0) : 0;
    for (int32_t i = 0; i < r->n; i++)
        if (i != *baseline && better(&r->sum[i], &r->sum[*best]))
            *best = i;
}

bool drv_plot_gantt_shown(const drv_report_data *r, int32_t i)
{
    int32_t best, baseline;
    drv_report_pick(r, &best, &baseline);
    return (i == best || i == baseline) && drv_plot_has_gantt(&r->runs[i]);
}

/* ---- JCT CDF ------------------------------------------------------------------------------ */

/* The CDF's time axis: its unit, and whether it is logarithmic. */
typedef struct cdf_axis {
    unit u;
    bool log;
    double lo; /* left end of a log axis, in u */
} cdf_axis;

/* The CDF's time axis is logarithmic when the longest JCT exceeds every run's median JCT this
 * many times: a linear axis would then draw half of every run's jobs in its leftmost twentieth
 * (a trace's minutes-long jobs beside its day-long ones), where a log axis spreads them out. The
 * built-in scenario (longest 91 min, medians 11-28 min) stays linear; Pollux's workload 1
 * (longest 16 h, medians 12-15 min) is drawn on a log axis. */
#define LOG_SKEW 20.0

static void draw_cdf(FILE *f, const drv_report_data *r, const void *arg)
{
    const cdf_axis *a = arg;
    int32_t best, baseline;
    drv_report_pick(r, &best, &baseline);
    fprintf(f,
            "reset\nset title 'Job completion time, CDF per policy (best and baseline thick)'\n"
            "set xlabel 'job completion time (%s%s)'\n"
            "set ylabel 'fraction of all jobs finished'\nset yrange [0:1.02]\n",
            a->u.name, a->log ? ", log scale" : "");
    if (a->log)
        fprintf(f, "set logscale x 10\nset xrange [%.6g:*]\n", a->lo);
    else
        fputs("set xrange [0:*]\n", f);
    fputs("set key bottom right box opaque\nset grid\nplot", f);
    for (int32_t i = 0; i < r->n; i++) {
        fprintf(f, "%s $cdf%d using 1:2 with steps lw %s lc rgb '%s' title ", i ? "," : "", i,
                i == best || i == baseline ? "3" : "1.2", policy_colour[i % NPCOL]);
        gp_str(f, r->sum[i].policy);
    }
    fputc('\n', f);
}

static void plot_cdf(FILE *f, outputs *o, const char *dir, const drv_report_data *r)
{
    double max = 0, min = INFINITY;
    for (int32_t i = 0; i < r->n; i++) {
        const drv_report_run *run = &r->runs[i];
        for (int32_t k = 0; k < run->njct; k++)
            if (run->jct[k] > 0 && run->jct[k] < min)
                min = run->jct[k];
        if (run->njct > 0 && run->jct[run->njct - 1] > max)
            max = run->jct[run->njct - 1];
    }
    double median = 0; /* the largest median JCT of the runs */
    for (int32_t i = 0; i < r->n; i++)
        if (isfinite(r->sum[i].p50_jct) && r->sum[i].p50_jct > median)
            median = r->sum[i].p50_jct;
    cdf_axis a = {.u = pick_unit(max), .log = min > 0 && median > 0 && max > LOG_SKEW * median};
    a.lo = a.log ? pow(10, floor(log10(min / a.u.div))) : 0;
    for (int32_t i = 0; i < r->n; i++) {
        const drv_report_run *run = &r->runs[i];
        /* The curve starts at 0 jobs: at time 0 on a linear axis, at the left end of a log one
         * (which has no 0). */
        fprintf(f, "$cdf%d << EOD\n%.6g 0\n", i, a.lo);
        for (int32_t k = 0; k < run->njct; k++)
            if (!a.log || run->jct[k] > 0)
                fprintf(f, "%.6g %.6g\n", run->jct[k] / a.u.div, (k + 1.0) / run->jobs);
        fputs("EOD\n", f);
    }
    gp_both(f, o, dir, "jct-cdf", draw_cdf, r, &a, 800, 450);
}

/* ---- time series: small multiples, one panel per policy ------------------------------------- */

/* One small-multiples picture: which column of the $ts datablocks, and how to label it. */
typedef struct panels {
    int col;            /* 2: utilisation, 3: pending jobs */
    const char *title;  /* of the whole picture */
    const char *ylabel; /* of the left-hand panels */
    const char *yrange; /* e.g. "[0:105]" */
    unit u;
    double xmax; /* in u */
    int rows, cols;
    int height; /* of the picture, pixels */
    bool gpu;   /* utilisation is the GPU's */
} panels;

/* A round tick step near x: 1, 2 or 5 times a power of ten. */
static double nice_step(double x)
{
    if (!(x > 0))
        return 1;
    double p = pow(10, floor(log10(x))), m = x / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

/* Panel title: the policy, and for utilisation its mean over the makespan (from summary.json). */
static void panel_title(FILE *f, const drv_report_data *r, int32_t i, const panels *p, int32_t best,
                        int32_t baseline)
{
    char t[160];
    const drv_summary *s = &r->sum[i];
    const char *tag = i == best ? " (best)" : i == baseline ? " (baseline)" : "";
    if (p->col == 2 && p->gpu)
        snprintf(t, sizeof t, "%s%s: mean GPU %.0f%%, CPU %.0f%%", s->policy, tag,
                 100 * s->gpu_util, 100 * s->cpu_util);
    else if (p->col == 2)
        snprintf(t, sizeof t, "%s%s: mean %.0f%%", s->policy, tag, 100 * s->cpu_util);
    else
        snprintf(t, sizeof t, "%s%s", s->policy, tag);
    fputs("set title ", f);
    gp_str(f, t);
    fputc('\n', f);
}

/*
 * Ten policies drawn over each other cannot be told apart, so each gets its own panel on shared
 * axes, the baseline repeated in grey behind the others for comparison.
 */
static void draw_panels(FILE *f, const drv_report_data *r, const void *arg)
{
    const panels *p = arg;
    int32_t best, baseline;
    drv_report_pick(r, &best, &baseline);
    /* Margins in pixels, as fractions of the picture: room for the title above, and below the
     * last row for its tick labels and its axis label with the descenders of "(min)" (at 45 px
     * that label was cut off by the picture's edge). */
    double h = p->height;
    fprintf(f,
            "reset\nset multiplot layout %d,%d margins 0.08,0.98,%.4f,%.4f spacing 0.06,%.4f "
            "title ",
            p->rows, p->cols, BOTTOM_PX / h, 1 - 62 / h, 55 / h);
    gp_str(f, p->title);
    fprintf(f,
            " font ',13'\nset xrange [0:%.6g]\nset xtics %g\nset yrange %s\nset grid\n"
            "unset key\nset tics font ',9'\nset title font ',10' offset 0,-0.5\n",
            p->xmax, nice_step(p->xmax / 4), p->yrange);
    for (int32_t i = 0; i < r->n; i++) {
        panel_title(f, r, i, p, best, baseline);
        if (i + p->cols >= r->n)
            fprintf(f, "set xlabel 'simulated time (%s)'\n", p->u.name);
        else
            fputs("set xlabel ''\n", f);
        fputs("set ylabel ", f);
        gp_str(f, i % p->cols == 0 ? p->ylabel : "");
        fputs("\nplot ", f);
        if (i != baseline)
            fprintf(f, "$ts%d using 1:%d with steps lw 1 lc rgb '#bbbbbb', ", baseline, p->col);
        fprintf(f, "$ts%d using 1:%d with steps lw 1.5 lc rgb '%s'", i, p->col,
                policy_colour[i % NPCOL]);
        if (p->col == 2 && p->gpu)
            fprintf(f, ", $ts%d using 1:4 with steps lw 1.2 dt 2 lc rgb '%s'", i,
                    policy_colour[i % NPCOL]);
        fputc('\n', f);
    }
    fputs("unset multiplot\n", f);
}

/*
 * Utilisation (of GPUs on a GPU cluster, else of CPUs: percent of capacity, or units when the
 * capacity is unknown) and queue length, one panel per policy.
 */
static void plot_series(FILE *f, outputs *o, const char *dir, const drv_report_data *r)
{
    double max = 0;
    for (int32_t i = 0; i < r->n; i++)
        if (busy_end(r, i) > max)
            max = busy_end(r, i);
    unit u = pick_unit(max);
    bool gpu = drv_report_gpu_first(r->sum, r->n);
    double cap = !r->has_scen ? 0 : gpu ? r->scen.gpu : r->scen.cpu_m;
    double cpu_cap = r->has_scen ? r->scen.cpu_m : 0;
    for (int32_t i = 0; i < r->n; i++) {
        const drv_report_run *run = &r->runs[i];
        int32_t step = run->nticks / MAX_POINTS + 1;
        /* t, utilisation (GPUs on a GPU cluster), pending jobs, CPU utilisation */
        fprintf(f, "$ts%d << EOD\n", i);
        for (int32_t k = 0; k < run->nticks; k += step) {
            const drv_tick *t = &run->ticks[k];
            double used = gpu ? t->gpu_used : t->cpu_used / 1000.0;
            fprintf(f, "%.6g %.6g %d %.6g\n", t->t / u.div,
                    cap > 0 ? 100.0 * (gpu ? t->gpu_used : t->cpu_used) / cap : used, t->pending,
                    cpu_cap > 0 ? 100.0 * t->cpu_used / cpu_cap : t->cpu_used / 1000.0);
        }
        fputs("EOD\n", f);
    }
    panels p = {.col = 2, .u = u, .xmax = max > 0 ? max / u.div : 1, .gpu = gpu};
    p.cols = r->n <= 2 ? r->n : r->n <= 4 ? 2 : 3;
    p.rows = (r->n + p.cols - 1) / p.cols;
    int width = p.cols == 1 ? 800 : 900;
    p.height = 62 + BOTTOM_PX + 190 * p.rows;
    /* A GPU cluster's CPU is drawn too: a mixed cluster's CPU-only jobs hold no GPU. */
    p.title = gpu ? "GPUs (solid) and CPU (dashed) allocated to pods over time"
                  : "CPU allocated to pods over time";
    p.ylabel = cap > 0 ? "% of cluster" : gpu ? "GPUs" : "cores";
    p.yrange = cap > 0 ? "[0:105]" : "[0:*]";
    gp_both(f, o, dir, "utilisation", draw_panels, r, &p, width, p.height);
    /* The queue panels share one y range too, so their heights compare. */
    int32_t qmax = 1;
    for (int32_t i = 0; i < r->n; i++)
        for (int32_t k = 0; k < r->runs[i].nticks; k++)
            if (r->runs[i].ticks[k].pending > qmax)
                qmax = r->runs[i].ticks[k].pending;
    char qrange[32];
    snprintf(qrange, sizeof qrange, "[0:%d]", qmax + qmax / 20 + 1);
    p.col = 3;
    p.title = "Queue length over time";
    p.ylabel = "pending jobs";
    p.yrange = qrange;
    gp_both(f, o, dir, "queue", draw_panels, r, &p, width, p.height);
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
    return run->has_pl && run->npl > 0 && run->jobs <= DRV_GANTT_MAX_JOBS &&
           run->nnodes <= DRV_GANTT_MAX_NODES;
}

/* Merges a job's overlapping intervals on the same node (its several pods there); v is sorted
 * by cmp_place. Returns the new count. */
static int32_t merge_intervals(drv_placement *v, int32_t n)
{
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
    return m;
}

/* What the Gantt picture's draw function needs besides the datablocks. */
typedef struct gantt {
    int32_t run;
    unit u;
    double end; /* seconds */
    const char *why;
} gantt;

static void draw_gantt(FILE *f, const drv_report_data *r, const void *arg)
{
    const gantt *g = arg;
    const drv_report_run *run = &r->runs[g->run];
    char title[256];
    bool by_user = run->nusers > 1;
    snprintf(title, sizeof title, "Which job held each node: %s (%s); colour by %s",
             r->sum[g->run].policy, g->why, by_user ? "user" : "job");
    fputs("reset\nset title ", f);
    gp_str(f, title);
    fprintf(f, "\nset xlabel 'simulated time (%s)'\nset xrange [0:%.6g]\n", g->u.name,
            g->end / g->u.div);
    fprintf(f, "set yrange [%d.55:-0.55]\nset ytics (", run->nnodes - 1);
    for (int32_t k = 0; k < run->nnodes; k++) {
        fputs(k ? ", " : "", f);
        gp_str(f, run->nodes[k]);
        fprintf(f, " %d", k);
    }
    fputs(by_user ? ") nomirror\nset grid xtics\nset key outside right top title 'user'\n"
                  : ") nomirror\nset grid xtics\nunset key\n",
          f);
    fputs("set style fill solid 0.85 border rgb '#ffffff'\n"
          "plot $gantt using 1:2:3:4:5:6:7 with boxxyerror lc rgb variable notitle, "
          "$glabels using 1:2:3 with labels font 'sans,7' tc rgb '#111111' notitle",
          f);
    for (int32_t k = 0; by_user && k < run->nusers && k < MAX_KEY; k++) {
        fprintf(f, ", keyentry with boxes fc rgb '#%06x' title ", distinct_colour(k, run->nusers));
        gp_str(f, run->users[k]);
    }
    if (by_user && run->nusers > MAX_KEY)
        fprintf(f, ", keyentry with boxes fc rgb '#ffffff' title '(%d more users)'",
                run->nusers - MAX_KEY);
    fputc('\n', f);
}

/*
 * One row per node; a job's pods on a node are merged into intervals, and intervals that
 * overlap in time go to separate lanes of the row (greedy: the first lane free at the start).
 * A bar is coloured by the job's user (by the job when all jobs have one user, as in a trace)
 * and labelled with the job's name where the name fits.
 */
static int plot_gantt(FILE *f, outputs *o, const char *dir, const drv_report_data *r, int32_t i,
                      const char *why, drv_diag *d)
{
    const drv_report_run *run = &r->runs[i];
    /* Up to the cluster's last busy moment: a final quiet event days later would squeeze the
     * bars into the left edge. */
    gantt g = {i, pick_unit(busy_end(r, i)), busy_end(r, i), why};
    int32_t n = run->npl;
    drv_placement *v = drv_malloc(sizeof *v * (size_t)n);
    double *lane_end = drv_malloc(sizeof *lane_end * (size_t)n);
    int32_t *lane = drv_malloc(sizeof *lane * (size_t)n);
    int32_t *nlanes = drv_malloc(sizeof *nlanes * (size_t)n);
    if (!v || !lane_end || !lane || !nlanes) {
        drv_free(v);
        drv_free(lane_end);
        drv_free(lane);
        drv_free(nlanes);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    for (int32_t k = 0; k < n; k++) {
        v[k] = run->pl[k];
        if (v[k].end < 0)
            v[k].end = g.end;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_place);
    int32_t m = merge_intervals(v, n);
    double span = g.end > 0 ? g.end : 1;
    /* Lanes first (the row height depends on the most lanes any node needs), then the bars. */
    int32_t maxl = 1;
    for (int32_t first = 0, last; first < m; first = last) {
        int32_t nl = 0;
        for (last = first; last < m && v[last].node == v[first].node; last++) {
            int32_t l = 0;
            while (l < nl && lane_end[l] > v[last].start)
                l++;
            if (l == nl)
                nl++;
            lane_end[l] = v[last].end;
            lane[last] = l;
        }
        for (int32_t k = first; k < last; k++)
            nlanes[k] = nl;
        maxl = nl > maxl ? nl : maxl;
    }
    int row_px = maxl * LANE_PX > ROW_PX ? maxl * LANE_PX : ROW_PX;
    if (row_px * run->nnodes > GANTT_PX)
        row_px = GANTT_PX / run->nnodes > 8 ? GANTT_PX / run->nnodes : 8;
    fputs("$gantt << EOD\n", f);
    for (int32_t k = 0; k < m; k++) {
        double h = 0.8 / nlanes[k], y = v[k].node - 0.4 + (lane[k] + 0.5) * h;
        fprintf(f, "%.6g %.6g %.6g %.6g %.6g %.6g %u\n", (v[k].start + v[k].end) / 2 / g.u.div, y,
                v[k].start / g.u.div, v[k].end / g.u.div, y - 0.45 * h, y + 0.45 * h,
                run->nusers > 1 ? distinct_colour(run->job_user[v[k].job], run->nusers)
                                : distinct_colour(v[k].job, run->jobs));
    }
    fputs("EOD\n$glabels << EOD\n", f);
    /* A label needs its bar about 6 px per character wide (of ~700 px of plot) and its lane
     * LABEL_PX tall; longer names are cut to 16 characters. */
    for (int32_t k = 0; k < m; k++) {
        const char *name = run->job_names[v[k].job];
        int len = (int)strlen(name) < 16 ? (int)strlen(name) : 16;
        double bar_px = (v[k].end - v[k].start) / span * 700;
        double h = 0.8 / nlanes[k], y = v[k].node - 0.4 + (lane[k] + 0.5) * h;
        if (bar_px < 6.0 * len + 6 || row_px * h < LABEL_PX)
            continue;
        fprintf(f, "%.6g %.6g ", (v[k].start + v[k].end) / 2 / g.u.div, y);
        gp_data_str(f, name, 16);
        fputc('\n', f);
    }
    fputs("EOD\n", f);
    drv_free(v);
    drv_free(lane_end);
    drv_free(lane);
    drv_free(nlanes);

    char base[160];
    snprintf(base, sizeof base, "gantt-%s", r->sum[i].policy);
    int height = 110 + row_px * run->nnodes;
    if (height < 300)
        height = 300;
    gp_both(f, o, dir, base, draw_gantt, r, &g, 1000, height);
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
    int32_t best, baseline;
    drv_report_pick(r, &best, &baseline);
    for (int32_t i = 0; i < r->n && !rc; i++)
        if (drv_plot_gantt_shown(r, i))
            rc = plot_gantt(f, o, dir, r, i, i == best ? "best" : "baseline", d);
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
        else
            rc = drv_file_publish(tmp, final, d);
    }
    remove(script);
    remove(log);
    drv_free(o);
    return rc;
}

/* ---- index.html (the page itself: report_html.c) ------------------------------------------ */

int drv_report_html(const char *dir, const drv_report_data *r, bool plots, drv_diag *d)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/index.html", dir);
    drv_file_out o;
    int rc = drv_file_out_open(&o, path, d);
    if (rc)
        return rc;
    drv_report_page(o.f, r, plots);
    return drv_file_out_commit(&o, d);
}
