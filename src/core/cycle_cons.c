/*
 * cycle_cons.c - the constraint table (cons_table, cycle_int.h): per node constraint and node
 * class whether the class fits and its constraint score, the rows per GPU type (issue 27), and
 * which row a pod reads (cycle_cons_row), and so whether a class fits a pod (cycle_cons). Split
 * from cycle_place.c, which asks it per pod; cycle_int.h only declares these, so the header
 * calls into no file of the cycle.
 */
#include "cycle_int.h"

/* Reads the GPU type of every node class (cons_table's types): 0, or DRV_ENOMEM. Sets
 * ntypes 0 when the nodes carry fewer than two types. O(classes · (labels + types)). */
static int read_types(cons_table *t, const drv_state *st, int32_t ncls)
{
    t->ntypes = 0;
    t->key = st->gpu_type_key;
    if (!st->gpu_type_key)
        return 0;
    if (drv_grow(&t->type_of, sizeof *t->type_of, &t->cap_type_of, ncls) != 0 ||
        drv_grow(&t->type_name, sizeof *t->type_name, &t->cap_type_name, ncls) != 0)
        return DRV_ENOMEM;
    /* Class 0 (no label) is there whenever a node has none; a state without classes has one
     * type at most. Classes no node holds may add a type: harmless, it is never chosen. */
    int32_t n = 0;
    for (int32_t cl = 0; cl < ncls; cl++) {
        int32_t name = 0;
        if (cl > 0 && cl < st->nclasses) {
            const drv_nodeclass *k = &st->classes[cl];
            for (int32_t i = 0; i < k->nlabels; i++)
                if (k->labels[i].key == st->gpu_type_key)
                    name = k->labels[i].value;
        }
        int32_t ty = 0;
        while (ty < n && t->type_name[ty] != name)
            ty++;
        if (ty == n)
            t->type_name[n++] = name;
        t->type_of[cl] = ty;
    }
    t->ntypes = n >= 2 ? n : 0;
    return 0;
}

int cycle_cons_refresh(drv_sched *s, const drv_state *st)
{
    int32_t ncons = st->ncons > 0 ? st->ncons : 1, ncls = st->nclasses > 0 ? st->nclasses : 1;
    s->cons.on = ncons > 1 || ncls > 1;
    if (!s->cons.on ||
        (ncons == s->cons.ncons && ncls == s->cons.ncls && st->gpu_type_key == s->cons.key))
        return 0;
    if (read_types(&s->cons, st, ncls) != 0)
        return DRV_ENOMEM;
    int32_t nt = s->cons.ntypes;
    /* Classes added: every row is recomputed (has_prefer_taint may have changed the scores);
     * only constraints added: only their rows. With types the typed rows follow the base
     * rows, whose count moved them: all are made again. O(rows · classes · expressions ·
     * labels). */
    int32_t from = ncls == s->cons.ncls && nt == 0 ? s->cons.ncons : 0;
    int32_t rows = ncons * (1 + nt);
    if (drv_grow(&s->cons.fit, sizeof *s->cons.fit, &s->cons.cap, rows * ncls) != 0)
        return DRV_ENOMEM;
    for (int32_t k = from; k < ncons; k++)
        for (int32_t cl = 0; cl < ncls; cl++) {
            int32_t sc;
            s->cons.fit[(size_t)k * (size_t)ncls + (size_t)cl] =
                drv_constraint_fits(st, k, cl, &sc) ? sc : -1;
        }
    for (int32_t k = 0; k < ncons && nt > 0; k++)
        for (int32_t ty = 0; ty < nt; ty++) {
            int32_t *row = s->cons.fit + (size_t)(ncons + k * nt + ty) * (size_t)ncls;
            const int32_t *base = s->cons.fit + (size_t)k * (size_t)ncls;
            for (int32_t cl = 0; cl < ncls; cl++)
                row[cl] = s->cons.type_of[cl] == ty ? base[cl] : -1;
        }
    s->cons.memo_job = -1;
    /* The index groups classes the rows treat alike; on failure the rows are made again next
     * time, and the map with them. */
    if (s->index.ix && drv_nodeindex_set_classes(s->index.ix, s->cons.fit, rows, ncls) != 0)
        return DRV_ENOMEM;
    s->cons.ncons = ncons;
    s->cons.ncls = ncls;
    return 0;
}

/* The GPU type job's GPU pods are on in the assumed state (the type being tried while
 * drv_ctx_place_gang pins one), or -1 when none is placed. O(1) when asked again with nothing
 * changed; else O(the job's pods). */
int32_t cycle_job_gpu_type(const drv_ctx *c, int32_t job)
{
    drv_sched *s = c->s;
    cons_table *t = &s->cons;
    if (t->pin_job == job)
        return t->pin_type;
    if (t->memo_job == job && t->memo_stamp == s->stamp && t->memo_changes == c->changes)
        return t->memo_type;
    const drv_state *st = c->snap->st;
    const drv_job *j = &st->jobs[job];
    int32_t ty = -1;
    for (int32_t k = 0; k < j->pod_count && ty < 0; k++) {
        int32_t pod = j->pod_base + k, at;
        if (cycle_pod_req(st, pod).gpu > 0 && (at = cycle_pod_node(c, pod)) >= 0)
            ty = t->type_of[st->nodes[at].node_class];
    }
    t->memo_job = job;
    t->memo_type = ty;
    t->memo_stamp = s->stamp;
    t->memo_changes = c->changes;
    return ty;
}

const int32_t *cycle_cons_row(const drv_ctx *c, int32_t pod)
{
    const drv_sched *s = c->s;
    if (!s->cons.on)
        return NULL;
    const drv_state *st = c->snap->st;
    const drv_pod *p = &st->pods[pod];
    int32_t k = st->jobs[p->job].cons[p->role], ty;
    if (s->cons.ntypes > 0 && cycle_pod_req(st, pod).gpu > 0 &&
        (ty = cycle_job_gpu_type(c, p->job)) >= 0)
        k = s->cons.ncons + k * s->cons.ntypes + ty;
    return s->cons.fit + (size_t)k * (size_t)s->cons.ncls;
}

int32_t cycle_cons(const drv_ctx *c, int32_t pod, int32_t cls)
{
    const int32_t *row = cycle_cons_row(c, pod);
    return row ? row[cls] : 0;
}
