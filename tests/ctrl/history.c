/*
 * history.c - replaying the test API server's audit log and checking it (history.h).
 *
 * State per node (allocatable, what live pods request), per gang (declared size, slots ever
 * bound, when its first pod was bound), per slot (live bound pods, times succeeded) and per pod
 * uid (node, slot, live, requests, name). Each event updates one pod and checks the node and slot
 * it touched. Lookups are linear (pods searched newest first, where events mostly fall): a run of
 * a few thousand pods and tens of thousands of events replays in well under a second.
 */
#include "history.h"

#include "drover/kube_types.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hnode {
    char name[64];
    long long cpu_m, mem, used_cpu, used_mem;
    bool reported; /* its pods were named at its first over-commit (not again) */
} hnode;

typedef struct hgang {
    char name[256];
    int slots;       /* declared size; 0: not declared (not checked for half binding) */
    int bound_slots; /* distinct slots ever bound */
    int binds;       /* pods ever bound */
    long first_bind; /* event number of its first binding; -1: never */
    bool half;       /* counted as a half gang already */
} hgang;

typedef struct hslot {
    int gang;
    char name[256];
    int live, done;
    bool ever_bound;
} hslot;

typedef struct hpod {
    char uid[64];
    char name[64];  /* metadata.name (for the report of an over-commit) */
    long bound_rv;  /* resourceVersion of the event that first showed it bound, 0 */
    bool deleting;  /* a deletionTimestamp was seen */
    int node, slot; /* -1: unbound / not yet known */
    bool live, done;
    long long cpu_m, mem;
} hpod;

struct hist {
    hnode *nodes;
    hgang *gangs;
    hslot *slots;
    hpod *pods;
    int nnodes, ngangs, nslots, npods;
    int cap_nodes, cap_gangs, cap_slots, cap_pods;
    hist_counts c;
};

/* Grows *v (of *cap elements of size sz) to hold n + 1; exits on allocation failure (a test). */
static void *grow(void *v, int *cap, int n, size_t sz)
{
    if (n < *cap)
        return v;
    *cap = *cap ? *cap * 2 : 64;
    void *nv = realloc(v, (size_t)*cap * sz);
    if (!nv) {
        fprintf(stderr, "history: out of memory\n");
        exit(1);
    }
    return nv;
}

hist *hist_new(void)
{
    hist *h = calloc(1, sizeof *h);
    if (!h) {
        fprintf(stderr, "history: out of memory\n");
        exit(1);
    }
    return h;
}

void hist_free(hist *h)
{
    if (!h)
        return;
    free(h->nodes);
    free(h->gangs);
    free(h->slots);
    free(h->pods);
    free(h);
}

static int node_of(hist *h, const char *name)
{
    for (int i = 0; i < h->nnodes; i++)
        if (!strcmp(h->nodes[i].name, name))
            return i;
    h->nodes = grow(h->nodes, &h->cap_nodes, h->nnodes, sizeof *h->nodes);
    hnode *n = &h->nodes[h->nnodes];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    return h->nnodes++;
}

static int gang_of(hist *h, const char *name)
{
    for (int i = 0; i < h->ngangs; i++)
        if (!strcmp(h->gangs[i].name, name))
            return i;
    h->gangs = grow(h->gangs, &h->cap_gangs, h->ngangs, sizeof *h->gangs);
    hgang *g = &h->gangs[h->ngangs];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->first_bind = -1;
    return h->ngangs++;
}

static int slot_of(hist *h, int gang, const char *name)
{
    for (int i = 0; i < h->nslots; i++)
        if (h->slots[i].gang == gang && !strcmp(h->slots[i].name, name))
            return i;
    h->slots = grow(h->slots, &h->cap_slots, h->nslots, sizeof *h->slots);
    hslot *s = &h->slots[h->nslots];
    memset(s, 0, sizeof *s);
    s->gang = gang;
    snprintf(s->name, sizeof s->name, "%s", name);
    return h->nslots++;
}

static hpod *pod_of(hist *h, const char *uid)
{
    for (int i = h->npods - 1; i >= 0; i--) /* recent pods are looked up most */
        if (!strcmp(h->pods[i].uid, uid))
            return &h->pods[i];
    h->pods = grow(h->pods, &h->cap_pods, h->npods, sizeof *h->pods);
    hpod *p = &h->pods[h->npods++];
    memset(p, 0, sizeof *p);
    snprintf(p->uid, sizeof p->uid, "%s", uid);
    p->node = p->slot = -1;
    return p;
}

void hist_gang(hist *h, const char *gang, int slots)
{
    int g = gang_of(h, gang); /* before h->gangs is read: it may move */
    h->gangs[g].slots = slots;
}

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* The pod's slot (and so its gang), from its labels (history.h). */
static int slot_of_pod(hist *h, json_t *meta)
{
    json_t *labels = json_object_get(meta, "labels");
    const char *ns = str(meta, "namespace"), *name = str(meta, "name");
    const char *job = str(labels, "drover.dev/job"), *role = str(labels, "drover.dev/role");
    const char *rank = str(labels, "drover.dev/rank");
    const char *group = str(labels, "scheduling.x-k8s.io/pod-group");
    char gang[256], slot[256];
    ns = ns ? ns : "default";
    name = name ? name : "?";
    if (job && role && rank) {
        snprintf(gang, sizeof gang, "%s/%s", ns, job);
        snprintf(slot, sizeof slot, "%s/%s", role, rank);
    } else {
        snprintf(gang, sizeof gang, "%s/%s", ns, group ? group : name);
        snprintf(slot, sizeof slot, "%s", name);
    }
    return slot_of(h, gang_of(h, gang), slot);
}

static void requests_of(json_t *pod, long long *cpu, long long *mem)
{
    *cpu = *mem = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, c)
    {
        json_t *req = json_object_get(json_object_get(c, "resources"), "requests");
        int64_t v;
        if (drv_kube_quantity_milli(str(req, "cpu"), &v) == 0)
            *cpu += v;
        if (drv_kube_quantity(str(req, "memory"), &v) == 0)
            *mem += v;
    }
}

static void set_live(hist *h, hpod *p, bool live)
{
    if (p->live == live)
        return;
    int sign = live ? 1 : -1;
    p->live = live;
    h->nodes[p->node].used_cpu += sign * p->cpu_m;
    h->nodes[p->node].used_mem += sign * p->mem;
    h->slots[p->slot].live += sign;
}

/* A pod ended: a Succeeded slot counts once; its gang must have had every slot bound. */
static void ended(hist *h, hpod *p, bool succeeded)
{
    hslot *s = &h->slots[p->slot];
    hgang *g = &h->gangs[s->gang];
    p->done = true;
    if (succeeded && ++s->done > 1)
        h->c.twice_done++;
    if (g->slots > 0 && g->bound_slots < g->slots && !g->half) {
        g->half = true;
        h->c.half_gangs++;
        fprintf(stderr, "half gang: %s had %d of %d slots bound when a pod ended\n", g->name,
                g->bound_slots, g->slots);
    }
}

/* Names the live pods of node i on stderr, each with the resourceVersion that first showed it
 * bound (the controller incarnation that bound it can be told by the resourceVersions at which
 * each was started and killed) and whether it is being deleted: who took the room twice. */
static void report_node(const hist *h, int i)
{
    for (int k = 0; k < h->npods; k++) {
        const hpod *q = &h->pods[k];
        if (q->node == i && q->live)
            fprintf(stderr, "  %s bound at rv %ld%s\n", q->name, q->bound_rv,
                    q->deleting ? ", being deleted" : "");
    }
}

static void replay_pod(hist *h, const char *type, json_t *o)
{
    json_t *meta = json_object_get(o, "metadata");
    const char *uid = str(meta, "uid");
    if (!uid)
        return;
    hpod *p = pod_of(h, uid);
    if (p->slot < 0)
        p->slot = slot_of_pod(h, meta);
    hslot *s = &h->slots[p->slot];
    hgang *g = &h->gangs[s->gang];
    requests_of(o, &p->cpu_m, &p->mem);
    const char *node = str(json_object_get(o, "spec"), "nodeName");
    const char *phase = str(json_object_get(o, "status"), "phase");
    bool succeeded = phase && !strcmp(phase, "Succeeded");
    bool finished = succeeded || (phase && !strcmp(phase, "Failed"));
    const char *rv = str(meta, "resourceVersion");
    if (!p->name[0])
        snprintf(p->name, sizeof p->name, "%s", str(meta, "name") ? str(meta, "name") : "?");
    p->deleting |= json_object_get(meta, "deletionTimestamp") != NULL;
    if (node && p->node < 0) {
        p->bound_rv = rv ? atol(rv) : 0;
        p->node = node_of(h, node);
        g->binds++;
        if (g->first_bind < 0)
            g->first_bind = h->c.events;
        if (!s->ever_bound) {
            s->ever_bound = true;
            g->bound_slots++;
        }
    }
    if (p->node >= 0)
        set_live(h, p, !finished && strcmp(type, "DELETED") != 0);
    if (finished && !p->done)
        ended(h, p, succeeded);
    if (p->node >= 0) {
        hnode *n = &h->nodes[p->node];
        if (n->used_cpu > n->cpu_m || n->used_mem > n->mem) {
            h->c.overcommits++;
            fprintf(stderr, "over-commit: %s holds %lldm CPU of %lldm, %lld of %lld bytes\n",
                    n->name, n->used_cpu, n->cpu_m, n->used_mem, n->mem);
            if (!n->reported)
                report_node(h, p->node);
            n->reported = true;
        }
    }
    if (s->live > 1) {
        h->c.double_binds++;
        fprintf(stderr, "double bind: %s slot %s has %d live bound pods\n", g->name, s->name,
                s->live);
    }
}

static void replay_node(hist *h, json_t *o)
{
    const char *name = str(json_object_get(o, "metadata"), "name");
    json_t *alloc = json_object_get(json_object_get(o, "status"), "allocatable");
    if (!name || !alloc)
        return;
    int i = node_of(h, name); /* before h->nodes is read: it may move */
    hnode *n = &h->nodes[i];
    int64_t v;
    if (drv_kube_quantity_milli(str(alloc, "cpu"), &v) == 0)
        n->cpu_m = v;
    if (drv_kube_quantity(str(alloc, "memory"), &v) == 0)
        n->mem = v;
}

void hist_replay(hist *h, const char *audit)
{
    for (const char *line = audit; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        json_t *ev = json_loadb(line, n, 0, NULL);
        const char *type = str(ev, "type");
        json_t *o = json_object_get(ev, "object");
        const char *kind = str(o, "kind");
        if (type && kind && !strcmp(kind, "Node"))
            replay_node(h, o);
        else if (type && kind && !strcmp(kind, "Pod"))
            replay_pod(h, type, o);
        h->c.events++;
        json_decref(ev);
        line += n + (end != NULL);
    }
}

hist_counts hist_result(const hist *h)
{
    return h->c;
}

int hist_bind_order(const hist *h, const char **names, int max)
{
    /* selection by first binding, O(gangs^2): a few hundred gangs at most */
    int n = 0;
    long after = -1;
    for (;;) {
        int best = -1;
        for (int i = 0; i < h->ngangs; i++) {
            long t = h->gangs[i].first_bind;
            if (t > after && (best < 0 || t < h->gangs[best].first_bind))
                best = i;
        }
        if (best < 0)
            return n;
        if (n < max)
            names[n] = h->gangs[best].name;
        n++;
        after = h->gangs[best].first_bind;
    }
}

int hist_binds(const hist *h, const char *gang)
{
    for (int i = 0; i < h->ngangs; i++)
        if (!strcmp(h->gangs[i].name, gang))
            return h->gangs[i].binds;
    return 0;
}
