/*
 * workload.c - cluster and workload files (docs/formats.md), and the synthetic generator
 * behind the built-in scenario. A cluster file's queues are read by queues_read.c, node labels
 * and taints and roles' constraints by constraints_read.c.
 *
 * Every field is read through src/conf, so a bad value is reported as
 * "file:line: jobs[3].roles.worker.cpu: expected a CPU quantity ..." and unknown fields are
 * refused (a typo must not silently fall back to a default).
 */
#include "constraints_read.h"
#include "topology_read.h"
#include "drover/conf.h"
#include "drover/jobsource.h"
#include "queues_read.h"
#include "running_read.h"
#include "drover/sim.h"
#include "drover/strtab.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GiB (1024LL * 1024 * 1024)

/* Bounds on what a small file may ask for. Nodes: Kubernetes is tested to 5,000; 10^5 in all
 * (count included). Generated jobs: `generate: {jobs: N}` costs ~330 bytes per job before the
 * run and more during it; 10^5 is ~33 MB (10^7 asked 3.3 GB of a 45-byte file). */
#define MAX_NODES 100000
#define DEF_GENERATE_JOBS 60
#define MAX_GENERATE_JOBS 100000

/* 1 when name was added to names before, 0 when it is new, DRV_ENOMEM. A hash lookup, so n
 * names cost O(n): `count: 100000` took 38 s with a scan of the earlier names per name. The
 * empty string is in every strtab; callers never pass it. */
static int name_seen(drv_strtab *names, const char *name)
{
    int32_t before = drv_strtab_count(names);
    int32_t id = drv_strtab_intern(names, name);
    return id < 0 ? DRV_ENOMEM : id < before;
}

/* ---- cluster ------------------------------------------------------------------------------ */

static void timing_default(drv_timing *t)
{
    t->pod_start = DRV_DEF_POD_START;
    t->restart = DRV_DEF_RESTART;
    t->horizon = DRV_DEF_HORIZON;
    t->grace = 0; /* a removed pod's room and queue use are released at once */
}

static void net_default(drv_netparams *n)
{
    n->intra_MBps = DRV_DEF_INTRA_MBPS;
    n->inter_MBps = DRV_DEF_INTER_MBPS;
    n->hop_s = DRV_DEF_HOP_S;
}

void drv_cluster_fini(drv_cluster_spec *c)
{
    drv_free(c->nodes);
    for (int32_t i = 0; i < c->nclasses; i++)
        drv_nodeclass_fini(&c->classes[i]);
    drv_free(c->classes);
    drv_strtab_free(c->names);
    drv_free(c->queues);
    memset(c, 0, sizeof *c);
}

static int add_nodespec(drv_cluster_spec *c, const char *name, const char *zone, const char *rack,
                        drv_res alloc)
{
    if (drv_grow(&c->nodes, sizeof *c->nodes, &c->cap, c->n + 1) != 0)
        return DRV_ENOMEM;
    drv_nodespec *n = &c->nodes[c->n++];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    snprintf(n->zone, sizeof n->zone, "%s", zone);
    snprintf(n->rack, sizeof n->rack, "%s", rack);
    n->alloc = alloc;
    return 0;
}

void drv_cluster_default(drv_cluster_spec *c)
{
    memset(c, 0, sizeof *c);
    net_default(&c->net);
    timing_default(&c->timing);
    for (int i = 0; i < 8; i++) {
        char name[16], rack[16];
        snprintf(name, sizeof name, "node-%d", i);
        snprintf(rack, sizeof rack, "rack-%d", i / 4);
        if (add_nodespec(c, name, "zone-a", rack, (drv_res){32000, 128 * GiB, 0}) != 0)
            break; /* out of memory: caller sees fewer nodes; never happens at this size */
    }
}

int drv_cluster_uniform(drv_cluster_spec *c, int32_t n, drv_res alloc)
{
    memset(c, 0, sizeof *c);
    net_default(&c->net);
    timing_default(&c->timing);
    for (int32_t i = 0; i < n; i++) {
        char name[32], rack[32];
        snprintf(name, sizeof name, "node-%d", i);
        snprintf(rack, sizeof rack, "rack-%d", i / 16);
        if (add_nodespec(c, name, "zone-a", rack, alloc) != 0) {
            drv_cluster_fini(c);
            return DRV_ENOMEM;
        }
    }
    return 0;
}

/* Reads an optional scalar field; absent leaves *out unchanged. */
#define OPT(getter, node, key, path, ...)                                                          \
    do {                                                                                           \
        drv_conf *f_ = drv_conf_get(node, key);                                                    \
        if (f_ && (rc = getter(&doc, f_, path, __VA_ARGS__)) != 0)                                 \
            goto out;                                                                              \
    } while (0)

/* Reads the optional resource fields cpu, memory and gpu of map m (field names prefix.cpu...);
 * absent fields leave their output unchanged. */
static int read_resources(const drv_conf_doc *doc, drv_conf *m, const char *prefix, int64_t *cpu,
                          int64_t *mem, int64_t *gpu, drv_diag *d)
{
    char p[192];
    drv_conf *f;
    int rc = 0;
    snprintf(p, sizeof p, "%s.cpu", prefix);
    if ((f = drv_conf_get(m, "cpu")) && (rc = drv_conf_cpu(doc, f, p, cpu, d)) != 0)
        return rc;
    snprintf(p, sizeof p, "%s.memory", prefix);
    if ((f = drv_conf_get(m, "memory")) && (rc = drv_conf_mem(doc, f, p, mem, d)) != 0)
        return rc;
    snprintf(p, sizeof p, "%s.gpu", prefix);
    if ((f = drv_conf_get(m, "gpu")) && (rc = drv_conf_int(doc, f, p, 0, 1024, gpu, d)) != 0)
        return rc;
    return 0;
}

/* The optional network and timing maps of a cluster file into c. */
static int read_network_timing(const drv_conf_doc *docp, drv_cluster_spec *cp, drv_diag *d)
{
    drv_conf_doc doc = *docp;
    drv_cluster_spec c = *cp;
    int rc = 0;
    drv_conf *net = drv_conf_get(doc.root, "network");
    if (net) {
        if ((rc = drv_conf_expect(&doc, net, DRV_CONF_MAP, "network", d)) != 0)
            goto out;
        OPT(drv_conf_double, net, "intraMBps", "network.intraMBps", 1, 1e9, &c.net.intra_MBps, d);
        OPT(drv_conf_double, net, "interMBps", "network.interMBps", 1, 1e9, &c.net.inter_MBps, d);
        OPT(drv_conf_double, net, "hopSeconds", "network.hopSeconds", 0, 10, &c.net.hop_s, d);
        if ((rc = drv_conf_check_unused(&doc, net, "network", d)) != 0)
            goto out;
    }
    drv_conf *tm = drv_conf_get(doc.root, "timing");
    if (tm) {
        if ((rc = drv_conf_expect(&doc, tm, DRV_CONF_MAP, "timing", d)) != 0)
            goto out;
        OPT(drv_conf_double, tm, "podStartSeconds", "timing.podStartSeconds", 0, 3600,
            &c.timing.pod_start, d);
        OPT(drv_conf_double, tm, "restartSeconds", "timing.restartSeconds", 0, 3600,
            &c.timing.restart, d);
        OPT(drv_conf_double, tm, "terminationGraceSeconds", "timing.terminationGraceSeconds", 0,
            3600, &c.timing.grace, d);
        OPT(drv_conf_double, tm, "horizonSeconds", "timing.horizonSeconds", 1, 1e9,
            &c.timing.horizon, d);
        if ((rc = drv_conf_check_unused(&doc, tm, "timing", d)) != 0)
            goto out;
    }
out:
    if (!rc) {
        cp->net = c.net;
        cp->timing = c.timing;
    }
    return rc;
}

int drv_cluster_load(drv_cluster_spec *out, const char *path, drv_diag *d)
{
    drv_conf_doc doc = {0};
    drv_cluster_spec c;
    memset(&c, 0, sizeof c);
    net_default(&c.net);
    timing_default(&c.timing);
    drv_strtab *names = drv_strtab_new();
    int rc = names ? drv_conf_load_file(&doc, path, d) : drv_fail(d, DRV_ENOMEM, "out of memory");
    if (rc) {
        drv_strtab_free(names);
        return rc;
    }
    char p[128];
    double total_cpu = 0, total_mem = 0;
    if ((rc = drv_conf_expect(&doc, doc.root, DRV_CONF_MAP, "top level", d)) != 0 ||
        (rc = drv_read_topology(&doc, doc.root, &c, d)) != 0)
        goto out;
    drv_conf *nodes = drv_conf_get(doc.root, "nodes");
    if (!nodes) {
        rc = drv_fail(d, DRV_EINVAL, "%s:1: nodes: missing (a cluster needs at least one node)",
                      path);
        goto out;
    }
    if ((rc = drv_conf_expect(&doc, nodes, DRV_CONF_SEQ, "nodes", d)) != 0)
        goto out;
    for (int32_t i = 0; i < nodes->nitems; i++) {
        drv_conf *n = nodes->items[i];
        snprintf(p, sizeof p, "nodes[%d]", i);
        if ((rc = drv_conf_expect(&doc, n, DRV_CONF_MAP, p, d)) != 0)
            goto out;
        char name[40] = "", zone[32] = "", rack[32] = "";
        int64_t count = 1, cpu = -1, mem = -1, gpu = 0;
        drv_conf *f = drv_conf_get(n, "name");
        snprintf(p, sizeof p, "nodes[%d].name", i);
        if (!f) {
            rc = drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", path, n->line, p);
            goto out;
        }
        if ((rc = drv_conf_name(&doc, f, p, name, sizeof name, d)) != 0)
            goto out;
        snprintf(p, sizeof p, "nodes[%d].count", i);
        OPT(drv_conf_int, n, "count", p, 1, MAX_NODES, &count, d);
        snprintf(p, sizeof p, "nodes[%d]", i);
        if ((rc = read_resources(&doc, n, p, &cpu, &mem, &gpu, d)) != 0)
            goto out;
        if (cpu <= 0 || mem <= 0) {
            rc = drv_fail(d, DRV_EINVAL, "%s:%d: nodes[%d]: cpu and memory are required and > 0",
                          path, n->line, i);
            goto out;
        }
        if ((f = drv_conf_get(n, "zone"))) {
            snprintf(p, sizeof p, "nodes[%d].zone", i);
            if ((rc = drv_conf_name(&doc, f, p, zone, sizeof zone, d)) != 0)
                goto out;
        }
        if ((f = drv_conf_get(n, "rack"))) {
            snprintf(p, sizeof p, "nodes[%d].rack", i);
            if ((rc = drv_conf_name(&doc, f, p, rack, sizeof rack, d)) != 0)
                goto out;
        }
        snprintf(p, sizeof p, "nodes[%d]", i);
        int32_t node_class;
        bool unsched;
        if ((rc = drv_read_node_meta(&doc, n, p, &c, &node_class, &unsched, d)) != 0 ||
            (rc = drv_check_node_topology(&doc, n, p, &c, node_class, d)) != 0 ||
            (rc = drv_conf_check_unused(&doc, n, p, d)) != 0)
            goto out;
        total_cpu += (double)cpu * (double)count;
        total_mem += (double)mem * (double)count;
        if (c.n + count > MAX_NODES || total_cpu > (double)DRV_MAX_TOTAL ||
            total_mem > (double)DRV_MAX_TOTAL) {
            rc = drv_fail(d, DRV_ERANGE,
                          "%s:%d: %s: the cluster grows past %d nodes or %lldTi of memory in all",
                          path, n->line, p, MAX_NODES, DRV_MAX_TOTAL >> 40);
            goto out;
        }
        for (int64_t k = 0; k < count; k++) {
            char full[64];
            if (count > 1)
                snprintf(full, sizeof full, "%s-%lld", name, (long long)k);
            else
                snprintf(full, sizeof full, "%s", name);
            if ((rc = name_seen(names, full)) != 0) {
                rc = rc < 0
                         ? drv_fail(d, rc, "%s: out of memory", path)
                         : drv_fail(d, DRV_EEXIST, "%s:%d: nodes[%d].name: node '%s' defined twice",
                                    path, n->line, i, full);
                goto out;
            }
            if (add_nodespec(&c, full, zone, rack, (drv_res){cpu, mem, gpu}) != 0) {
                rc = drv_fail(d, DRV_ENOMEM, "%s: out of memory", path);
                goto out;
            }
            c.nodes[c.n - 1].node_class = node_class;
            c.nodes[c.n - 1].unschedulable = unsched;
        }
    }
    if ((rc = read_network_timing(&doc, &c, d)) != 0 || (rc = drv_read_queues(&doc, &c, d)) != 0)
        goto out;
    if ((rc = drv_conf_check_unused(&doc, doc.root, "top level", d)) != 0)
        goto out;
    if (c.n == 0)
        rc = drv_fail(d, DRV_EINVAL, "%s:%d: nodes: the list is empty", path, nodes->line);
out:
    drv_strtab_free(names);
    drv_conf_doc_fini(&doc);
    if (rc) {
        drv_cluster_fini(&c);
        return rc;
    }
    drv_cluster_fini(out);
    *out = c;
    return 0;
}

/* ---- workload ----------------------------------------------------------------------------- */

void drv_workload_fini(drv_workload *w)
{
    drv_free(w->jobs);
    for (int32_t i = 0; i < w->ncons; i++)
        drv_constraint_fini(&w->cons[i]);
    drv_free(w->cons);
    drv_strtab_free(w->names);
    drv_free(w->running);
    drv_free(w->runpods);
    memset(w, 0, sizeof *w);
}

static int push_job(drv_workload *w, const drv_jobspec *j)
{
    if (drv_grow(&w->jobs, sizeof *w->jobs, &w->cap, w->n + 1) != 0)
        return DRV_ENOMEM;
    w->jobs[w->n++] = *j;
    return 0;
}

void drv_genparams_default(drv_genparams *g, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->jobs = DEF_GENERATE_JOBS;
    g->mean_interarrival = 60.0;
    g->seed = seed;
}

/* The default scenario's jobs (drv_generate_job, jobsource.c: a streamed run draws the same). */
int drv_workload_generate(drv_workload *w, const drv_genparams *g, const drv_catalogue *cat,
                          drv_diag *d)
{
    drv_rng r;
    drv_rng_seed(&r, g->seed);
    double t = 0;
    for (int32_t i = 0; i < g->jobs; i++) {
        drv_jobspec j;
        drv_generate_job(&r, &t, i, g, cat, &j);
        if (push_job(w, &j) != 0)
            return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    return 0;
}

static int read_role(const drv_conf_doc *docp, drv_conf *rc_node, const char *path,
                     drv_rolespec *rs, bool is_worker, drv_workload *w, int32_t *cons, drv_diag *d)
{
    drv_conf_doc doc = *docp;
    int rc;
    char p[160];
    int64_t replicas = 1, mn = -1, mx = -1, cpu = -1, mem = -1, gpu = 0, lim = -1;
    if ((rc = drv_conf_expect(&doc, rc_node, DRV_CONF_MAP, path, d)) != 0)
        return rc;
    snprintf(p, sizeof p, "%s.replicas", path);
    OPT(drv_conf_int, rc_node, "replicas", p, 0, 4096, &replicas, d);
    if ((rc = read_resources(&doc, rc_node, path, &cpu, &mem, &gpu, d)) != 0)
        goto out;
    snprintf(p, sizeof p, "%s.cpuLimit", path);
    OPT(drv_conf_cpu, rc_node, "cpuLimit", p, &lim, d);
    if (is_worker) {
        snprintf(p, sizeof p, "%s.min", path);
        OPT(drv_conf_int, rc_node, "min", p, 0, 4096, &mn, d);
        snprintf(p, sizeof p, "%s.max", path);
        OPT(drv_conf_int, rc_node, "max", p, 1, 4096, &mx, d);
    }
    if ((rc = drv_read_role_constraint(&doc, rc_node, path, w, cons, d)) != 0 ||
        (rc = drv_conf_check_unused(&doc, rc_node, path, d)) != 0)
        goto out;
    if (cpu < 0 && gpu == 0) {
        rc = drv_fail(d, DRV_EINVAL, "%s:%d: %s: cpu or gpu is required", doc.file, rc_node->line,
                      path);
        goto out;
    }
    if (mn < 0)
        mn = replicas;
    if (mx < 0)
        mx = replicas;
    if (!(mn <= replicas && replicas <= mx)) {
        rc = drv_fail(
            d, DRV_EINVAL, "%s:%d: %s: expected min <= replicas <= max, found %lld, %lld, %lld",
            doc.file, rc_node->line, path, (long long)mn, (long long)replicas, (long long)mx);
        goto out;
    }
    if (cpu < 0)
        cpu = 0;
    if (mem < 0)
        mem = 0;
    if (lim < 0)
        lim = cpu;
    if (lim < cpu) {
        rc = drv_fail(d, DRV_EINVAL, "%s:%d: %s.cpuLimit: must be at least cpu", doc.file,
                      rc_node->line, path);
        goto out;
    }
    *rs = (drv_rolespec){(int32_t)replicas, (int32_t)mn, (int32_t)mx, {cpu, mem, gpu}, lim};
out:
    return rc;
}

/* A job's names and numbers: name (unique in w), user, queue, priority and its class's
 * minRuntimeSeconds, userPriority, submit, checkpointSeconds.
 * file is the workload's path, for messages. */
static int read_names(const drv_conf_doc *docp, const char *file, drv_conf *jn, int32_t i,
                      drv_strtab *names, drv_jobspec *j, drv_diag *d)
{
    drv_conf_doc doc = *docp;
    char p[128];
    drv_conf *f;
    int rc = 0;
    snprintf(p, sizeof p, "jobs[%d].name", i);
    if (!(f = drv_conf_get(jn, "name")))
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", file, jn->line, p);
    if ((rc = drv_conf_name(&doc, f, p, j->name, sizeof j->name, d)) != 0)
        return rc;
    if ((rc = name_seen(names, j->name)) != 0)
        return rc < 0 ? drv_fail(d, rc, "%s: out of memory", file)
                      : drv_fail(d, DRV_EEXIST, "%s:%d: %s: job '%s' defined twice", file, f->line,
                                 p, j->name);
    j->line = jn->line;
    snprintf(j->user, sizeof j->user, "default");
    snprintf(j->queue, sizeof j->queue, "default");
    if ((f = drv_conf_get(jn, "user"))) {
        snprintf(p, sizeof p, "jobs[%d].user", i);
        if ((rc = drv_conf_name(&doc, f, p, j->user, sizeof j->user, d)) != 0)
            return rc;
    }
    if ((f = drv_conf_get(jn, "queue"))) {
        snprintf(p, sizeof p, "jobs[%d].queue", i);
        if ((rc = drv_conf_name(&doc, f, p, j->queue, sizeof j->queue, d)) != 0)
            return rc;
    }
    int64_t prio = 0, uprio = 1;
    snprintf(p, sizeof p, "jobs[%d].priority", i);
    OPT(drv_conf_int, jn, "priority", p, -1000000, 1000000, &prio, d);
    snprintf(p, sizeof p, "jobs[%d].userPriority", i);
    OPT(drv_conf_int, jn, "userPriority", p, 0, 1000000, &uprio, d);
    j->priority = (int32_t)prio;
    j->user_priority = (int32_t)uprio;
    snprintf(p, sizeof p, "jobs[%d].minRuntimeSeconds", i);
    OPT(drv_conf_double, jn, "minRuntimeSeconds", p, 0, DRV_MAX_MIN_RUNTIME, &j->min_runtime, d);
    snprintf(p, sizeof p, "jobs[%d].submit", i);
    OPT(drv_conf_double, jn, "submit", p, 0, 1e10, &j->submit, d);
    snprintf(p, sizeof p, "jobs[%d].checkpointSeconds", i);
    OPT(drv_conf_double, jn, "checkpointSeconds", p, 0, 1e7, &j->checkpoint_s, d);
out:
    return rc;
}

/* A job's model family (from the catalogue), target loss (above the family's floor) and step
 * budget. */
static int read_model(const drv_conf_doc *docp, const char *file, drv_conf *jn, int32_t i,
                      const drv_catalogue *cat, drv_jobspec *j, drv_diag *d)
{
    drv_conf_doc doc = *docp;
    char p[128];
    drv_conf *f;
    int rc = 0;
    snprintf(p, sizeof p, "jobs[%d].model", i);
    if (!(f = drv_conf_get(jn, "model")))
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", file, jn->line, p);
    const char *model;
    if ((rc = drv_conf_str(&doc, f, p, &model, d)) != 0)
        return rc;
    j->model = drv_catalogue_find(cat, model);
    if (j->model < 0) {
        char known[256] = "";
        for (int32_t k = 0; k < cat->n; k++) {
            strncat(known, k ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, cat->v[k].name, sizeof known - strlen(known) - 1);
        }
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: unknown model family '%s' (known: %s)", file,
                        f->line, p, model, known);
    }
    j->target_loss = cat->v[j->model].target_loss;
    snprintf(p, sizeof p, "jobs[%d].targetLoss", i);
    OPT(drv_conf_double, jn, "targetLoss", p, 0, 1e9, &j->target_loss, d);
    if (j->target_loss <= cat->v[j->model].beta2)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: %g is below the %s loss floor %g, never reached",
                        file, jn->line, p, j->target_loss, model, cat->v[j->model].beta2);
    snprintf(p, sizeof p, "jobs[%d].maxSteps", i);
    OPT(drv_conf_double, jn, "maxSteps", p, 1, 1e15, &j->max_steps, d);
out:
    return rc;
}

/* A job's roles map: each known role (read_role), no other key, a worker or a chief. */
static int read_roles(const drv_conf_doc *doc, const char *file, drv_conf *jn, int32_t i,
                      drv_jobspec *j, drv_workload *w, drv_diag *d)
{
    char p[128];
    int rc;
    drv_conf *roles = drv_conf_get(jn, "roles");
    snprintf(p, sizeof p, "jobs[%d].roles", i);
    if (!roles)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", file, jn->line, p);
    if ((rc = drv_conf_expect(doc, roles, DRV_CONF_MAP, p, d)) != 0)
        return rc;
    for (int r = 0; r < DRV_NROLES; r++) {
        drv_conf *rn = drv_conf_get(roles, drv_role_name(r));
        if (!rn)
            continue;
        snprintf(p, sizeof p, "jobs[%d].roles.%s", i, drv_role_name(r));
        if ((rc = read_role(doc, rn, p, &j->role[r], r == DRV_ROLE_WORKER, w, &j->cons[r], d)) != 0)
            return rc;
    }
    snprintf(p, sizeof p, "jobs[%d].roles", i);
    if ((rc = drv_conf_check_unused(doc, roles, p, d)) != 0)
        return rc;
    if (j->role[DRV_ROLE_WORKER].replicas + j->role[DRV_ROLE_CHIEF].replicas == 0)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: a job needs a worker or a chief", file,
                        roles->line, p);
    return 0;
}

/* One entry of the `jobs:` list, appended to w. */
static int read_job(const drv_conf_doc *doc, const char *file, drv_conf *jn, int32_t i,
                    const drv_catalogue *cat, drv_strtab *names, drv_workload *w, drv_diag *d)
{
    drv_jobspec j;
    memset(&j, 0, sizeof j);
    char p[128];
    snprintf(p, sizeof p, "jobs[%d]", i);
    int rc;
    if ((rc = drv_conf_expect(doc, jn, DRV_CONF_MAP, p, d)) != 0 ||
        (rc = read_names(doc, file, jn, i, names, &j, d)) != 0 ||
        (rc = read_model(doc, file, jn, i, cat, &j, d)) != 0 ||
        (rc = read_roles(doc, file, jn, i, &j, w, d)) != 0 ||
        (rc = drv_read_running(doc, jn, i, &j, w, d)) != 0)
        return rc;
    snprintf(p, sizeof p, "jobs[%d]", i);
    if ((rc = drv_read_job_topology(doc, jn, p, w, &j, d)) != 0)
        return rc;
    if ((rc = drv_conf_check_unused(doc, jn, p, d)) != 0)
        return rc;
    if (push_job(w, &j) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    return 0;
}

/* `generate.maxSteps`: a map of model families of the catalogue to worker-steps, into g->caps. */
static int read_caps(const drv_conf_doc *doc, drv_conf *m, const drv_catalogue *cat,
                     drv_genparams *g, drv_diag *d)
{
    int rc = drv_conf_expect(doc, m, DRV_CONF_MAP, "generate.maxSteps", d);
    if (rc)
        return rc;
    if (m->nitems > DRV_GEN_MAX_CAPS)
        return drv_fail(d, DRV_EINVAL, "%s:%d: generate.maxSteps: at most %d families, found %d",
                        doc->file, m->line, DRV_GEN_MAX_CAPS, m->nitems);
    for (int32_t i = 0; i < m->nitems; i++) {
        drv_conf *v = m->items[i];
        char p[160];
        snprintf(p, sizeof p, "generate.maxSteps.%s", v->key);
        int32_t f = drv_catalogue_find(cat, v->key);
        if (f < 0)
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected a model family of the catalogue",
                            doc->file, v->line, p);
        double steps;
        if ((rc = drv_conf_double(doc, v, p, 1, 1e15, &steps, d)) != 0)
            return rc;
        g->caps[g->ncaps].family = f;
        g->caps[g->ncaps++].steps = steps;
    }
    return 0;
}

/* The `generate:` map: the default scenario's generator with its jobs, meanInterarrival, seed
 * (the run's seed unless given) and per-family step caps (maxSteps), appended to w. */
static int read_generate(const drv_conf_doc *docp, drv_conf *gen, uint64_t seed,
                         const drv_catalogue *cat, drv_workload *w, drv_diag *d)
{
    drv_conf_doc doc = *docp;
    drv_genparams g;
    drv_genparams_default(&g, seed);
    int64_t n = g.jobs, s = (int64_t)(seed & 0x7fffffffffffffffULL);
    int rc;
    if ((rc = drv_conf_expect(&doc, gen, DRV_CONF_MAP, "generate", d)) != 0)
        goto out;
    OPT(drv_conf_int, gen, "jobs", "generate.jobs", 1, MAX_GENERATE_JOBS, &n, d);
    OPT(drv_conf_double, gen, "meanInterarrival", "generate.meanInterarrival", 0, 1e9,
        &g.mean_interarrival, d);
    OPT(drv_conf_int, gen, "seed", "generate.seed", 0, INT64_MAX, &s, d);
    drv_conf *caps = drv_conf_get(gen, "maxSteps");
    if (caps && (rc = read_caps(&doc, caps, cat, &g, d)) != 0)
        goto out;
    if ((rc = drv_conf_check_unused(&doc, gen, "generate", d)) != 0)
        goto out;
    g.jobs = (int32_t)n;
    g.seed = (uint64_t)s;
    rc = drv_workload_generate(w, &g, cat, d);
out:
    return rc;
}

int drv_workload_load(drv_workload *out, const char *path, const drv_catalogue *cat, uint64_t seed,
                      drv_diag *d)
{
    drv_conf_doc doc = {0};
    drv_workload w = {0};
    drv_strtab *names = drv_strtab_new(); /* job names seen, to refuse one twice in O(1) */
    int rc = names ? drv_conf_load_file(&doc, path, d) : drv_fail(d, DRV_ENOMEM, "out of memory");
    if (rc) {
        drv_strtab_free(names);
        return rc;
    }
    if ((rc = drv_conf_expect(&doc, doc.root, DRV_CONF_MAP, "top level", d)) != 0)
        goto out;
    drv_conf *jobs = drv_conf_get(doc.root, "jobs");
    drv_conf *gen = drv_conf_get(doc.root, "generate");
    if (!jobs && !gen) {
        rc = drv_fail(d, DRV_EINVAL, "%s:1: expected 'jobs' (a list) or 'generate' (a map)", path);
        goto out;
    }
    if (jobs && (rc = drv_conf_expect(&doc, jobs, DRV_CONF_SEQ, "jobs", d)) != 0)
        goto out;
    snprintf(w.file, sizeof w.file, "%s", path);
    for (int32_t i = 0; jobs && i < jobs->nitems && !rc; i++)
        rc = read_job(&doc, path, jobs->items[i], i, cat, names, &w, d);
    if (!rc && gen)
        rc = read_generate(&doc, gen, seed, cat, &w, d);
    if (!rc)
        rc = drv_conf_check_unused(&doc, doc.root, "top level", d);
out:
    drv_strtab_free(names);
    drv_conf_doc_fini(&doc);
    if (rc) {
        drv_workload_fini(&w);
        return rc;
    }
    drv_workload_fini(out);
    *out = w;
    return 0;
}
