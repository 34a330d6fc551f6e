/*
 * place - gang placement throughput of the core, against an exhaustive scan in the same run.
 *
 * Load (scheduler_perf-like): N heterogeneous nodes (four CPU shapes and a GPU shape, in a
 * fixed repeating mix) start 30 % used; 10,000 pending pods in gangs of 1-64 pods (PS + workers,
 * request shapes drawn from a seeded mix) are placed by ONE scheduling cycle of the given
 * profile. Reported: pods placed per second of cycle time.
 *
 * Baseline, default profile (least-allocated): the obvious placement, written out here without
 * the core: for every pod, scan every node, keep those with room, score least-allocated, take
 * the best (gangs all-or-nothing). Quality: the cycle's BIND decisions are replayed in order on
 * a copy of the free resources; for each, every node is scored as the exhaustive scan would and
 * the chosen node must score as high as the best. The count of worse choices is printed (0).
 *
 * Baseline, any other --profile (e.g. the drover profile's locality + PS anti-affinity +
 * least-allocated scoring): the same core and plugins told to scan every node for every pod
 * (drv_sched_set_exhaustive) — the obvious placement with those scores. Quality: the indexed
 * cycle's decisions must equal the scan's, one by one; "worse" counts those that differ.
 *
 * With --latency K, it instead times K cycles (each on the same snapshot, decisions discarded)
 * and prints the p50/p99/max cycle latency beside the same percentiles of the scan baseline.
 *
 * --profile-only 1 runs the core alone (no baseline, no quality check): for perf record.
 *
 * --constraints 1 adds node constraints (issue 14): 30 % of the nodes (3 in every 10) are
 * labelled pool=gpu and tainted gpu=true:NoSchedule; every other job (half the pods) selects
 * pool=gpu and tolerates the taint, the others, tolerating nothing, may not go there. The
 * default profile's hand-written scan applies the same rule (a job may use a node when it is
 * tainted exactly when the job selects the pool), written out here apart from the core. The
 * pool's nodes have no GPU (node shapes 0-2 of the repeating five), so the gangs that select
 * it and ask for GPUs fit nowhere: some gangs fail whole, as in a real queue.
 *
 * --queues Q (issue 17: three) puts the jobs in Q queues, job j in queue j % Q, with different
 * weights and one cohort. Their quotas are unlimited: the bench measures placement, not quota
 * admission, so every gang is judged by room and constraints alone (and its choices still
 * compare one by one with the scan, which has the same queues).
 *
 * --reps R runs the cycle R times on the same snapshot and reports the fastest: the first
 * cycle also builds the index (every node grouped, every tree filled), the later ones find it
 * built, as every cycle of a long run does. --scan-reps S (default R) times the baseline only
 * S times, the fastest reported likewise: the scan with the drover profile's scores takes
 * seconds per cycle at 50,000 nodes, and its decisions are the same every time.
 *
 * --e2e 1 builds instead the cluster and queue of bench/e2e_bind (issue 17): N alike nodes of
 * 32 CPU and 128 GiB, zone i % 4, rack i / 20 (racks of 20 consecutive nodes), nothing used;
 * the pending pods in gangs of 4 workers of 1 CPU and 4 GiB, no PS. --existing E (with --e2e:
 * 16,000 unless given) then binds E other schedulers' pods of 100m CPU and 256 MiB round robin
 * (pod i on node i % N), as e2e_bind does, and counts them as the controller counts foreign
 * load: off the node's allocatable (a node with 4 of them is another allocatable than one with
 * 3). The zone and rack are also the node's labels, as the controller sees them, so each
 * (zone, rack) pair is a node class of its own (1,000 of them at 5,000 nodes). The default
 * profile's hand-written scan applies as ever (no job selects anything).
 *
 * --first 1 times the FIRST cycle of a fresh scheduler instead (a restarted controller's: the
 * index built, every memo cold), each rep with a new scheduler on the same snapshot, the
 * fastest reported; the later cycles of one scheduler, the default, find everything built.
 *
 * --topology 1 (issue 29): every node also carries the labels topology.kubernetes.io/zone
 * (zone-a) and cloud.provider.com/topology-rack (rack-K for nodes 20K..20K+19, also the node's
 * rack), the state's topology levels are those two, and every gang is required in one rack: the
 * core chooses a rack by best fit and places the gang inside it (cycle_topo.c). The default
 * profile's hand-written scan applies the same rule, written out here (scan_topology), and the
 * quality check looks for the best node in the rack of the job's first bind, counting any bind
 * outside it as worse; other profiles are compared with the core's scan, node by node.
 *
 * --gpu-types 1 (issue 27): the GPU nodes (every fifth) carry nvidia.com/gpu.product, three
 * types in turn (a, b, c), and the state reads types: a job's GPU pods all go to one type.
 * Likewise compared with the core's scan under a profile other than the default.
 *
 * usage: place [--nodes N[,N...]] [--pods N] [--reps R] [--scan-reps S] [--latency K]
 *              [--profile LINE] [--seed S] [--profile-only 0|1] [--constraints 0|1] [--queues Q]
 *              [--e2e 0|1] [--existing E] [--first 0|1] [--topology 0|1] [--gpu-types 0|1]
 */
#include "drover/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GiB (1024LL * 1024 * 1024)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const drv_res node_shapes[] = {
    {16000, 64 * GiB, 0},  {32000, 128 * GiB, 0}, {64000, 256 * GiB, 0},
    {96000, 384 * GiB, 0}, {64000, 512 * GiB, 8},
};
static const drv_res pod_shapes[] = {
    {500, 1 * GiB, 0},  {1000, 2 * GiB, 0},  {2000, 4 * GiB, 0},
    {4000, 8 * GiB, 0}, {8000, 16 * GiB, 0}, {4000, 32 * GiB, 1},
};

/* --constraints: node i is in the tainted pool; job j selects it. */
static bool in_pool(int32_t node)
{
    return node % 10 < 3;
}

static bool selects_pool(int32_t job)
{
    return job % 2 == 0;
}

/* The constraint of the jobs that select the pool: nodeSelector pool=gpu, toleration
 * gpu Exists NoSchedule. Returns its id. */
static int32_t add_pool_constraint(drv_state *st)
{
    drv_label sel = {drv_strtab_intern(st->names, "pool"), drv_strtab_intern(st->names, "gpu")};
    drv_toleration tol = {drv_strtab_intern(st->names, "gpu"), 0, true, DRV_EFFECT_NO_SCHEDULE};
    drv_constraint c = {.selector = &sel, .nselector = 1, .tol = &tol, .ntol = 1};
    int32_t id = 0;
    drv_state_add_constraint(st, &c, NULL, &id);
    return id;
}

/* --queues: nq queues "queue-0".. in one cohort, weights 1..nq, quota and borrowing
 * unlimited. Added before any node, so their use starts at 0. Returns the first one's id (the
 * default queue 0 is made beside them and holds no job). */
static int32_t add_queues(drv_state *st, int32_t nq)
{
    int32_t first = 0;
    for (int32_t q = 0; q < nq; q++) {
        char name[32];
        snprintf(name, sizeof name, "queue-%d", q);
        drv_queue dq = {.name = drv_strtab_intern(st->names, name),
                        .cohort = drv_strtab_intern(st->names, "bench"),
                        .weight = 1 + q,
                        .quota = {DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED},
                        .borrow = {DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED}};
        int32_t id = 0;
        if (drv_state_add_queue(st, &dq, &id) != 0) {
            fprintf(stderr, "place: cannot add queue %s\n", name);
            exit(2);
        }
        if (q == 0)
            first = id;
    }
    return first;
}

/* What to build: the options that shape the cluster and the queue. */
typedef struct shape {
    int32_t pods;
    uint64_t seed;
    bool cons;        /* --constraints */
    int32_t nq;       /* --queues */
    bool e2e;         /* --e2e */
    int32_t existing; /* --existing */
    bool topo;        /* --topology */
    bool types;       /* --gpu-types */
} shape;

/* --e2e: bench/e2e_bind's cluster and gangs (see the top). existing other schedulers' pods
 * of 100m and 256 MiB, pod i on node i % nodes, come off the allocatable as the controller's
 * mirror takes foreign load off it. */
static void build_e2e(drv_state *st, int32_t nodes, int32_t pods, int32_t existing)
{
    drv_state_init(st);
    for (int32_t i = 0; i < nodes; i++) {
        char name[32], zone[32], rack[32];
        snprintf(name, sizeof name, "node-%d", i);
        snprintf(zone, sizeof zone, "zone-%d", i % 4);
        snprintf(rack, sizeof rack, "rack-%d", i / 20);
        int64_t others = existing / nodes + (i < existing % nodes);
        drv_res a = {32000 - 100 * others, 128 * GiB - others * 256 * 1024 * 1024, 0};
        drv_state_add_node(st, name, a, zone, rack, NULL);
        /* The zone and rack are labels too, and the controller gives every label but the
         * hostname to the node's class: each (zone, rack) pair is a class of its own. */
        drv_label lab[2] = {
            {drv_strtab_intern(st->names, "topology.kubernetes.io/zone"),
             drv_strtab_intern(st->names, zone)},
            {drv_strtab_intern(st->names, "drover.dev/rack"), drv_strtab_intern(st->names, rack)}};
        drv_state_set_node_meta(st, i, lab, 2, NULL, 0);
    }
    for (int32_t jid = 0; jid * 4 < pods; jid++) {
        drv_job t;
        memset(&t, 0, sizeof t);
        char name[32];
        snprintf(name, sizeof name, "job-%d", jid);
        t.name = drv_strtab_intern(st->names, name);
        t.phase = DRV_JOB_PENDING;
        t.submit = jid + 1;
        drv_res w = {1000, 4 * GiB, 0};
        t.role[DRV_ROLE_WORKER] = (drv_rolespec){4, 4, 4, w, w.cpu};
        drv_state_add_job(st, &t, NULL);
    }
}

#define ZONE_KEY "topology.kubernetes.io/zone"
#define RACK_KEY "cloud.provider.com/topology-rack"

/* Node i's labels and taints: the pool's (--constraints), zone and rack (--topology), GPU type
 * (--gpu-types). */
static void node_meta(drv_state *st, int32_t i, const shape *sh, const char *rack)
{
    drv_label lab[4];
    int nl = 0, nt = 0;
    drv_taint taint = {drv_strtab_intern(st->names, "gpu"), drv_strtab_intern(st->names, "true"),
                       DRV_EFFECT_NO_SCHEDULE};
    if (sh->cons && in_pool(i)) {
        lab[nl++] =
            (drv_label){drv_strtab_intern(st->names, "pool"), drv_strtab_intern(st->names, "gpu")};
        nt = 1;
    }
    if (sh->topo) {
        lab[nl++] = (drv_label){drv_strtab_intern(st->names, ZONE_KEY),
                                drv_strtab_intern(st->names, "zone-a")};
        lab[nl++] =
            (drv_label){drv_strtab_intern(st->names, RACK_KEY), drv_strtab_intern(st->names, rack)};
    }
    if (sh->types && node_shapes[i % 5].gpu > 0) {
        static const char *const types[] = {"a", "b", "c"};
        lab[nl++] = (drv_label){drv_strtab_intern(st->names, DRV_GPU_TYPE_LABEL),
                                drv_strtab_intern(st->names, types[(i / 5) % 3])};
    }
    if (nl > 0 || nt > 0)
        drv_state_set_node_meta(st, i, lab, nl, &taint, nt);
}

/* Builds the cluster and the pending gangs. */
static void build(drv_state *st, int32_t nodes, const shape *sh)
{
    drv_rng r;
    drv_rng_seed(&r, sh->seed);
    drv_state_init(st);
    int32_t pods = sh->pods, nq = sh->nq;
    bool cons = sh->cons;
    int32_t pool = cons ? add_pool_constraint(st) : 0;
    int32_t q0 = nq > 0 ? add_queues(st, nq) : 0;
    const char *why = "";
    const char *levels[] = {ZONE_KEY, RACK_KEY};
    if ((sh->topo && drv_state_set_topology(st, levels, 2, &why) != 0) ||
        (sh->types && drv_state_set_gpu_type_label(st, DRV_GPU_TYPE_LABEL) != 0)) {
        fprintf(stderr, "place: cannot set the topology or GPU types: %s\n", why);
        exit(2);
    }
    for (int32_t i = 0; i < nodes; i++) {
        char name[32], rack[32];
        snprintf(name, sizeof name, "node-%d", i);
        if (sh->topo)
            snprintf(rack, sizeof rack, "rack-%d", i / 20);
        else
            snprintf(rack, sizeof rack, "%s", i % 40 < 20 ? "rack-a" : "rack-b");
        const drv_res a = node_shapes[i % 5];
        drv_state_add_node(st, name, a, "zone-a", rack, NULL);
        /* 30 % used, not in any job: model it as reduced allocatable headroom. */
        st->nodes[i].used = (drv_res){a.cpu * 3 / 10, a.mem * 3 / 10, 0};
        node_meta(st, i, sh, rack);
    }
    int32_t made = 0, jid = 0;
    while (made < pods) {
        int32_t size = (int32_t)drv_rng_range(&r, 1, 64);
        if (size > pods - made)
            size = pods - made;
        drv_job t;
        memset(&t, 0, sizeof t);
        char name[32];
        snprintf(name, sizeof name, "job-%d", jid++);
        t.name = drv_strtab_intern(st->names, name);
        t.phase = DRV_JOB_PENDING;
        t.submit = jid;
        int32_t nps = size >= 8 ? 1 + size / 32 : 0;
        drv_res ps = pod_shapes[drv_rng_range(&r, 1, 3)];
        drv_res w = pod_shapes[drv_rng_range(&r, 0, 5)];
        t.role[DRV_ROLE_PS] = (drv_rolespec){nps, nps, nps, ps, ps.cpu};
        t.role[DRV_ROLE_WORKER] = (drv_rolespec){size - nps, size - nps, size - nps, w, w.cpu};
        if (cons && selects_pool(jid - 1))
            for (int k = 0; k < DRV_NROLES; k++)
                t.cons[k] = pool;
        if (nq > 0)
            t.queue = q0 + (jid - 1) % nq;
        if (sh->topo) { /* required in one rack */
            t.topo_mode = DRV_TOPO_REQUIRED;
            t.topo_level = 1;
        }
        drv_state_add_job(st, &t, NULL);
        made += size;
    }
}

/* least-allocated exactly as the plugin computes it. */
static int la_score(const drv_node *n, drv_res free, drv_res req)
{
    drv_res after = drv_res_sub(free, req);
    double sum = 0;
    int k = 0;
    if (n->alloc.cpu > 0)
        sum += (double)after.cpu / (double)n->alloc.cpu, k++;
    if (n->alloc.mem > 0)
        sum += (double)after.mem / (double)n->alloc.mem, k++;
    if (n->alloc.gpu > 0)
        sum += (double)after.gpu / (double)n->alloc.gpu, k++;
    return k ? (int)(100.0 * sum / k) : 0;
}

/* Whether the job may use the node (--constraints, the only constraint the bench adds; always
 * without, whatever the nodes' labels: --e2e's zone and rack labels restrict nothing). */
static bool allowed(const drv_state *st, int32_t job, int32_t node)
{
    return st->ncons == 0 || in_pool(node) == selects_pool(job);
}

/* --topology: node k's rack (racks of 20 consecutive nodes). */
static int32_t rack_of(int32_t k)
{
    return k / 20;
}

/* Tries job j's gang on the nodes of rack (every node for -1), exhaustive scan per pod; on
 * failure gives back what it took. Returns the pods placed, or -1. */
static int32_t scan_gang(const drv_state *st, drv_res *fr, int32_t j, int32_t rack, int32_t *chosen)
{
    const drv_job *job = &st->jobs[j];
    int32_t n = 0;
    bool ok = true;
    int32_t lo = rack < 0 ? 0 : rack * 20, hi = rack < 0 ? st->nnodes : lo + 20;
    if (hi > st->nnodes)
        hi = st->nnodes;
    for (int r = 0; r < DRV_NROLES && ok; r++)
        for (int32_t i = 0; i < job->target[r] && ok; i++) {
            drv_res req = job->role[r].req;
            int32_t best = -1;
            int bs = -1;
            for (int32_t k = lo; k < hi; k++) {
                if (!drv_res_fits(req, fr[k]) || !allowed(st, j, k))
                    continue;
                int s = la_score(&st->nodes[k], fr[k], req);
                if (s > bs)
                    bs = s, best = k;
            }
            if (best < 0) {
                ok = false;
                break;
            }
            fr[best] = drv_res_sub(fr[best], req);
            chosen[n++] = best * DRV_NROLES + r;
        }
    if (ok)
        return n;
    for (int32_t i = 0; i < n; i++)
        fr[chosen[i] / DRV_NROLES] =
            drv_res_add(fr[chosen[i] / DRV_NROLES], job->role[chosen[i] % DRV_NROLES].req);
    return -1;
}

/* --topology's rule written out: the racks whose free room in sum holds the whole gang, least
 * room first (GPUs, CPU, memory, then the rack's number), each tried in turn. */
static int32_t scan_topology(const drv_state *st, drv_res *fr, int32_t j, int32_t *chosen)
{
    int32_t nr = (st->nnodes + 19) / 20;
    drv_res *sum = calloc((size_t)nr, sizeof *sum), need = {0, 0, 0};
    bool *tried = calloc((size_t)nr, sizeof *tried);
    for (int32_t k = 0; k < st->nnodes; k++)
        sum[rack_of(k)] = drv_res_add(sum[rack_of(k)], fr[k]);
    for (int r = 0; r < DRV_NROLES; r++)
        need = drv_res_add(need, drv_res_scale(st->jobs[j].role[r].req, st->jobs[j].target[r]));
    int32_t placed = -1;
    for (;;) {
        int32_t b = -1;
        for (int32_t q = 0; q < nr; q++) {
            if (tried[q] || !drv_res_fits(need, sum[q]))
                continue;
            drv_res x = sum[q], y = b >= 0 ? sum[b] : x;
            if (b < 0 || x.gpu < y.gpu || (x.gpu == y.gpu && x.cpu < y.cpu) ||
                (x.gpu == y.gpu && x.cpu == y.cpu && x.mem < y.mem))
                b = q;
        }
        if (b < 0 || (placed = scan_gang(st, fr, j, b, chosen)) >= 0)
            break;
        tried[b] = true;
    }
    free(sum);
    free(tried);
    return placed;
}

/* The baseline: exhaustive scan per pod, gangs all-or-nothing (with --topology, in one rack).
 * Returns pods placed. */
static int64_t scan_place(const drv_state *st, drv_res *fr)
{
    int64_t placed = 0;
    int32_t *chosen = malloc(sizeof *chosen * 4096);
    for (int32_t j = 0; j < st->njobs; j++) {
        int32_t n =
            st->ntopo > 0 ? scan_topology(st, fr, j, chosen) : scan_gang(st, fr, j, -1, chosen);
        if (n > 0)
            placed += n;
    }
    free(chosen);
    return placed;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pctl(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int k = (int)(p / 100.0 * n + 0.999999) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static void make_state(drv_state *st, int32_t nodes, const shape *sh)
{
    if (sh->e2e)
        build_e2e(st, nodes, sh->pods, sh->existing);
    else
        build(st, nodes, sh);
}

static int latency(const drv_profile *prof, bool ref_core, const char *nodes_arg, int k,
                   const shape *sh)
{
    printf("%7s %10s %10s %10s %12s %12s %12s\n", "nodes", "p50_ms", "p99_ms", "max_ms",
           "scan_p50_ms", "scan_p99_ms", "scan_max_ms");
    char *list = strdup(nodes_arg);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int32_t nn = atoi(tok);
        drv_state st;
        make_state(&st, nn, sh);
        drv_diag d = {{0}};
        drv_sched *s, *ref = NULL;
        if (drv_sched_new(prof, &s, &d) || (ref_core && drv_sched_new(prof, &ref, &d))) {
            fprintf(stderr, "place: %s\n", d.msg);
            return 2;
        }
        if (ref)
            drv_sched_set_exhaustive(ref, true);
        drv_decisions ds;
        drv_decisions_init(&ds);
        drv_snapshot snap = {.st = &st, .now = 0};
        double *a = malloc(sizeof *a * (size_t)k), *b = malloc(sizeof *b * (size_t)k);
        drv_res *fr = malloc(sizeof *fr * (size_t)nn);
        for (int i = 0; i < k; i++) {
            ds.n = 0;
            double t0 = now_s();
            drv_sched_cycle(s, &snap, &ds);
            a[i] = (now_s() - t0) * 1e3;
            for (int32_t j = 0; j < nn; j++)
                fr[j] = drv_node_free(&st.nodes[j]);
            t0 = now_s();
            if (ref) {
                ds.n = 0;
                drv_sched_cycle(ref, &snap, &ds);
            } else {
                scan_place(&st, fr);
            }
            b[i] = (now_s() - t0) * 1e3;
        }
        printf("%7d %10.3f %10.3f %10.3f %12.3f %12.3f %12.3f\n", nn, pctl(a, k, 50),
               pctl(a, k, 99), pctl(a, k, 100), pctl(b, k, 50), pctl(b, k, 99), pctl(b, k, 100));
        fflush(stdout);
        free(a);
        free(b);
        free(fr);
        drv_decisions_fini(&ds);
        drv_sched_free(s);
        drv_sched_free(ref);
        drv_state_fini(&st);
    }
    free(list);
    return 0;
}

/* Decisions that differ between two runs of one cycle, position by position. */
static int64_t differ(const drv_decisions *a, const drv_decisions *b)
{
    int64_t n = 0;
    int32_t m = a->n > b->n ? a->n : b->n;
    for (int32_t i = 0; i < m; i++)
        if (i >= a->n || i >= b->n || a->v[i].kind != b->v[i].kind || a->v[i].pod != b->v[i].pod ||
            a->v[i].node != b->v[i].node)
            n++;
    return n;
}

int main(int argc, char **argv)
{
    const char *nodes_arg = "1000,5000,10000,50000";
    int32_t reps = 3, scan_reps = -1, lat = 0;
    shape shp = {.pods = 10000, .seed = 1, .existing = -1}, *sh = &shp;
    int profile_only = 0, first = 0;
    static const char default_line[] = "admit=gang score=least-allocated";
    const char *line = default_line;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nodes"))
            nodes_arg = argv[i + 1];
        else if (!strcmp(argv[i], "--pods"))
            sh->pods = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--scan-reps"))
            scan_reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--profile"))
            line = argv[i + 1];
        else if (!strcmp(argv[i], "--latency"))
            lat = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            sh->seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--profile-only")) /* for perf: no baseline, no check */
            profile_only = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--constraints"))
            sh->cons = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "--queues"))
            sh->nq = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--e2e"))
            sh->e2e = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "--existing"))
            sh->existing = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--first")) /* time a fresh scheduler's first cycle */
            first = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--topology"))
            sh->topo = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "--gpu-types"))
            sh->types = atoi(argv[i + 1]) != 0;
    }
    drv_diag d = {{0}};
    drv_profile prof;
    if (drv_profile_parse("bench", line, &prof, &d)) {
        fprintf(stderr, "place: %s\n", d.msg);
        return 2;
    }
    if (scan_reps < 0 || scan_reps > reps)
        scan_reps = reps;
    if (reps < 1 || scan_reps < 1) {
        fprintf(stderr, "place: --reps and --scan-reps: expected at least 1\n");
        return 2;
    }
    if (sh->nq < 0 || sh->nq > 64) {
        fprintf(stderr, "place: --queues %d: expected 0..64\n", sh->nq);
        return 2;
    }
    if (first && lat > 0) { /* latency() times a scheduler's later cycles only */
        fprintf(stderr, "place: --first 1: not with --latency\n");
        return 2;
    }
    if (sh->existing < 0)
        sh->existing = sh->e2e ? 16000 : 0;
    if (!sh->e2e && sh->existing > 0) {
        fprintf(stderr, "place: --existing: only with --e2e 1\n");
        return 2;
    }
    /* The hand-written scan knows the topology rule, not the GPU types' (which type a gang
     * tries first follows the scores): those are compared with the core's scan only. */
    if (sh->types && strcmp(line, default_line) == 0 && !profile_only) {
        fprintf(stderr, "place: --gpu-types: give a --profile other than the default (compared "
                        "with the core's scan, which applies the same rule)\n");
        return 2;
    }
    if (sh->topo && (sh->cons || sh->types)) {
        fprintf(stderr, "place: --topology: not with --constraints or --gpu-types\n");
        return 2;
    }
    if (sh->e2e && (sh->cons || sh->nq > 0 || sh->topo || sh->types)) {
        fprintf(stderr, "place: --e2e 1: no --constraints, no --queues (its cluster has none)\n");
        return 2;
    }
    if (sh->e2e)
        printf("place: %d pending pods in gangs of 4 x 1 CPU on e2e_bind's cluster (32 CPU nodes, "
               "4 zones, racks of 20, %d other pods of 100m), profile: %s",
               sh->pods, sh->existing, line);
    else
        printf("place: %d pending pods in gangs of 1-64, profile: %s%s%s%s", sh->pods, line,
               sh->cons ? ", 30 % of nodes tainted, half the pods selecting them" : "",
               sh->topo ? ", every gang required in one rack of 20 nodes" : "",
               sh->types ? ", three GPU types" : "");
    if (sh->nq > 0)
        printf(", %d queues (quotas unlimited)", sh->nq);
    printf("%s\n", first ? "; the first cycle of a fresh scheduler" : "");
    /* Any profile but the default is compared with the core scanning every node. */
    bool ref_core = strcmp(line, default_line) != 0;
    if (lat > 0)
        return latency(&prof, ref_core, nodes_arg, lat, sh);
    printf("%7s %12s %12s %8s %9s %10s %9s\n", "nodes", "core_pods/s", "scan_pods/s", "ratio",
           "placed", "scan_plcd", "worse");
    char *list = strdup(nodes_arg);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int32_t nn = atoi(tok);
        drv_state st;
        make_state(&st, nn, sh);
        drv_sched *s, *ref = NULL;
        if (drv_sched_new(&prof, &s, &d) || (ref_core && drv_sched_new(&prof, &ref, &d))) {
            fprintf(stderr, "place: %s\n", d.msg);
            return 2;
        }
        if (ref)
            drv_sched_set_exhaustive(ref, true);
        drv_decisions ds, dref;
        drv_decisions_init(&ds);
        drv_decisions_init(&dref);
        drv_snapshot snap = {.st = &st, .now = 0};
        double best_core = 1e30, best_scan = 1e30;
        int64_t placed = 0, scan_placed = 0;
        drv_res *fr = malloc(sizeof *fr * (size_t)nn);
        for (int r = 0; r < reps; r++) {
            ds.n = 0;
            if (first && r > 0) { /* a fresh scheduler: nothing built, nothing remembered */
                drv_sched_free(s);
                if (drv_sched_new(&prof, &s, &d)) {
                    fprintf(stderr, "place: %s\n", d.msg);
                    return 2;
                }
            }
            double t0 = now_s();
            drv_sched_cycle(s, &snap, &ds);
            double t1 = now_s();
            if (t1 - t0 < best_core)
                best_core = t1 - t0;
            for (int32_t k = 0; k < nn; k++)
                fr[k] = drv_node_free(&st.nodes[k]);
            if (profile_only || r >= scan_reps)
                continue;
            t0 = now_s();
            if (ref) {
                dref.n = 0;
                drv_sched_cycle(ref, &snap, &dref);
            } else {
                scan_placed = scan_place(&st, fr);
            }
            t1 = now_s();
            if (t1 - t0 < best_scan)
                best_scan = t1 - t0;
        }
        /* Quality: replay the binds; each must score as high as the best node at that time. */
        for (int32_t k = 0; k < nn; k++)
            fr[k] = drv_node_free(&st.nodes[k]);
        int64_t worse = 0;
        placed = 0;
        if (ref && !profile_only) { /* the scan's decisions, one by one */
            worse = differ(&ds, &dref);
            scan_placed = 0;
            for (int32_t i = 0; i < dref.n; i++)
                scan_placed += dref.v[i].kind == DRV_BIND;
        }
        /* --topology: each job's rack, that of its first bind; a bind elsewhere is worse, and
         * the best is looked for in that rack. */
        int32_t *jrack = malloc(sizeof *jrack * (size_t)st.njobs);
        for (int32_t j = 0; j < st.njobs; j++)
            jrack[j] = -1;
        for (int32_t i = 0; i < ds.n; i++) {
            const drv_decision *x = &ds.v[i];
            if (x->kind != DRV_BIND)
                continue;
            placed++;
            if (ref || profile_only) /* compared decision by decision above, or not at all */
                continue;
            const drv_pod *p = &st.pods[x->pod];
            drv_res req = st.jobs[p->job].role[p->role].req;
            int bs = -1;
            if (st.ntopo > 0 && jrack[p->job] < 0)
                jrack[p->job] = rack_of(x->node);
            if (st.ntopo > 0 && rack_of(x->node) != jrack[p->job])
                worse++;
            for (int32_t k = 0; k < nn; k++)
                if (drv_res_fits(req, fr[k]) && allowed(&st, p->job, k) &&
                    (st.ntopo == 0 || rack_of(k) == jrack[p->job])) {
                    int sc = la_score(&st.nodes[k], fr[k], req);
                    if (sc > bs)
                        bs = sc;
                }
            if (la_score(&st.nodes[x->node], fr[x->node], req) < bs ||
                !drv_res_fits(req, fr[x->node]) || !allowed(&st, p->job, x->node))
                worse++;
            fr[x->node] = drv_res_sub(fr[x->node], req);
        }
        free(jrack);
        if (profile_only)
            printf("%7d %12.0f  (--profile-only: no baseline, no check)\n", nn, placed / best_core);
        else
            printf("%7d %12.0f %12.0f %8.1f %9lld %10lld %9lld\n", nn, placed / best_core,
                   scan_placed / best_scan, (placed / best_core) / (scan_placed / best_scan),
                   (long long)placed, (long long)scan_placed, (long long)worse);
        fflush(stdout);
        free(fr);
        drv_decisions_fini(&ds);
        drv_decisions_fini(&dref);
        drv_sched_free(s);
        drv_sched_free(ref);
        drv_state_fini(&st);
    }
    free(list);
    return 0;
}
