/*
 * jobsource.c - the generated scenario as a job source (jobsource.h): the default scenario's
 * generator drawing job i when the simulator asks for it, and drv_workload_generate on top of
 * the same per-job step, so that the in-memory workload and the streamed source are one
 * sequence of draws and give the same jobs.
 *
 * The generator keeps its random stream and the next submission time: O(1) memory whatever
 * the number of jobs. Announcing the pods means drawing every job once before the run (0.28 s
 * per million jobs here, ~1 % of such a run), simpler than a bound that holds for every seed.
 */
#include "drover/jobsource.h"

#include <stdio.h>
#include <string.h>

#define GiB (1024LL * 1024 * 1024)

/*
 * The default scenario's jobs, after the seeds' testbeds: TensorFlow PS jobs on CPU nodes.
 * Per job: a model family uniformly from the catalogue; 1 PS (2 in 30 % of jobs) of 2 CPU /
 * 4 GiB; 2, 4, 6 or 8 workers of 4 CPU / 8 GiB, elastic between half and twice that (at most
 * 16); one of four users with priority 1-3; priority class 0, 10 or 100; it ends at its family's
 * loss target, or at its family's step cap (drv_genparams.caps) if one is given and comes first.
 */
/* snprintf(dst, n, "%s-%d", prefix, v), truncated alike, without the format parser: three
 * snprintf a job were 6 % of the instructions of a streamed run (its jobs are drawn twice). */
static void name_number(char *dst, size_t n, const char *prefix, int32_t v)
{
    if (v < 0) {
        snprintf(dst, n, "%s-%d", prefix, v);
        return;
    }
    char digits[12];
    int k = 0;
    do {
        digits[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    size_t o = 0;
    for (const char *p = prefix; *p && o + 1 < n; p++)
        dst[o++] = *p;
    if (o + 1 < n)
        dst[o++] = '-';
    while (k > 0 && o + 1 < n)
        dst[o++] = digits[--k];
    dst[o] = '\0';
}

void drv_generate_job(drv_rng *r, double *t, int32_t i, const drv_genparams *g,
                      const drv_catalogue *cat, drv_jobspec *out)
{
    static const int32_t classes[] = {0, 10, 100};
    drv_jobspec j;
    memset(&j, 0, sizeof j);
    j.submit = *t;
    *t += drv_rng_exp(r, g->mean_interarrival);
    j.model = (int32_t)drv_rng_range(r, 0, cat->n - 1);
    const drv_family *f = &cat->v[j.model];
    name_number(j.name, sizeof j.name, f->name, i);
    int32_t user = (int32_t)drv_rng_range(r, 0, 3);
    name_number(j.user, sizeof j.user, "user", user);
    memcpy(j.queue, "default", sizeof "default");
    j.user_priority = 1 + user % 3;
    j.priority = classes[drv_rng_range(r, 0, 2)];
    int32_t nps = drv_rng_uniform(r) < 0.3 ? 2 : 1;
    int32_t nw = 2 * (int32_t)drv_rng_range(r, 1, 4);
    j.role[DRV_ROLE_PS] = (drv_rolespec){nps, nps, nps, {2000, 4 * GiB, 0}, 2000};
    j.role[DRV_ROLE_WORKER] =
        (drv_rolespec){nw, nw / 2, nw * 2 > 16 ? 16 : nw * 2, {4000, 8 * GiB, 0}, 4000};
    j.target_loss = f->target_loss;
    j.max_steps = 0;
    for (int32_t k = 0; k < g->ncaps; k++)
        if (g->caps[k].family == j.model)
            j.max_steps = g->caps[k].steps;
    *out = j;
}

/* The generator's state between two jobs. */
typedef struct gen_source {
    drv_genparams g;
    const drv_catalogue *cat; /* borrowed */
    drv_rng r;
    double t;     /* the next job's submission time */
    int32_t next; /* the next job's index */
} gen_source;

static int gen_next(drv_jobsource *src, drv_jobspec *out, drv_diag *d)
{
    (void)d;
    gen_source *gs = src->ctx;
    if (gs->next >= gs->g.jobs)
        return 0;
    drv_generate_job(&gs->r, &gs->t, gs->next, &gs->g, gs->cat, out);
    gs->next++;
    return 1;
}

static void gen_fini(drv_jobsource *src)
{
    drv_free(src->ctx);
}

static const drv_jobsource_ops gen_ops = {.next = gen_next, .fini = gen_fini};

/* Pod slots of a job: per role, the larger of its replicas and its maximum (the simulator
 * lays slots out the same way). */
static int64_t slots(const drv_jobspec *js)
{
    int64_t n = 0;
    for (int r = 0; r < DRV_NROLES; r++)
        n += js->role[r].max > js->role[r].replicas ? js->role[r].max : js->role[r].replicas;
    return n;
}

int drv_jobsource_generate(drv_jobsource *src, const drv_genparams *g, const drv_catalogue *cat,
                           drv_diag *d)
{
    memset(src, 0, sizeof *src);
    gen_source *gs = drv_calloc(1, sizeof *gs);
    if (!gs)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    gs->g = *g;
    gs->cat = cat;
    drv_rng_seed(&gs->r, g->seed);
    int64_t pods = 0;
    for (int32_t i = 0; i < g->jobs; i++) { /* a dry run: the pods to reserve */
        drv_jobspec j;
        drv_generate_job(&gs->r, &gs->t, i, g, cat, &j);
        pods += slots(&j);
    }
    drv_rng_seed(&gs->r, g->seed);
    gs->t = 0;
    *src = (drv_jobsource){.ops = &gen_ops, .jobs = g->jobs, .pods = pods, .ctx = gs};
    return 0;
}

void drv_jobsource_fini(drv_jobsource *src)
{
    if (src->ops && src->ops->fini)
        src->ops->fini(src);
    memset(src, 0, sizeof *src);
}
