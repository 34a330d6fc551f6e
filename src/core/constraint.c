/*
 * constraint.c - node labels and taints, pod templates' node constraints, and whether one
 * satisfies the other, with Kubernetes' semantics (issue 14; the API reference's NodeSelector,
 * NodeAffinity, Taint and Toleration).
 *
 * Nodes are few in kinds: the nodes of one pool carry the same labels and taints. So a node
 * holds a class id, classes are interned (equal label and taint sets share one, found by a
 * hash of the sets), and a constraint is judged per class, not per node: the scheduler caches
 * fits(cons, class) in a table and its best-node index groups nodes by class (nodeindex.c), so
 * a pod's filter costs one table read per group of nodes.
 *
 * Matching, as kube-scheduler does:
 *  - nodeSelector: every key present with that value;
 *  - required node affinity: the terms are ORed, a term's expressions ANDed (a term without
 *    expressions matches nothing); In: present with one of the values; NotIn: absent or none of
 *    them; Exists / DoesNotExist; Gt / Lt: present, an integer, greater / less than the one given;
 *  - taints NoSchedule and NoExecute must each be tolerated: a toleration tolerates a taint when
 *    its effect is empty or equal, and its key is equal (or empty with Exists: every taint), and
 *    it is Exists or its value is equal. PreferNoSchedule taints only cost score.
 *
 * Worked example: class {pool=gpu; taint gpu=true:NoSchedule}. A template with nodeSelector
 * pool=gpu and toleration {key gpu, Exists} fits it; one with no toleration does not, and fits
 * class 0 (no labels, no taints) only if it selects nothing.
 */
#include "drover/state.h"
#include "drover/hashmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const effect_names[] = {"NoSchedule", "PreferNoSchedule", "NoExecute", ""};
static const char *const op_names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};

int drv_effect_parse(const char *s)
{
    for (int i = 0; i < DRV_EFFECT_ANY; i++)
        if (strcmp(s, effect_names[i]) == 0)
            return i;
    return -1;
}

const char *drv_effect_name(int effect)
{
    return effect >= 0 && effect <= DRV_EFFECT_ANY ? effect_names[effect] : "?";
}

int drv_sel_op_parse(const char *s)
{
    for (int i = 0; i <= DRV_SEL_LT; i++)
        if (strcmp(s, op_names[i]) == 0)
            return i;
    return -1;
}

void drv_constraint_fini(drv_constraint *c)
{
    if (!c)
        return;
    drv_free(c->selector);
    drv_free(c->expr);
    drv_free(c->weight);
    drv_free(c->tol);
    memset(c, 0, sizeof *c);
}

void drv_nodeclass_fini(drv_nodeclass *c)
{
    if (!c)
        return;
    drv_free(c->labels);
    drv_free(c->taints);
    memset(c, 0, sizeof *c);
}

static int cmp_label(const void *a, const void *b)
{
    const drv_label *x = a, *y = b;
    return x->key != y->key ? (x->key > y->key) - (x->key < y->key)
                            : (x->value > y->value) - (x->value < y->value);
}

static int cmp_taint(const void *a, const void *b)
{
    const drv_taint *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    if (x->value != y->value)
        return (x->value > y->value) - (x->value < y->value);
    return (x->effect > y->effect) - (x->effect < y->effect);
}

/* A copy of n elements of size sz (NULL for none); *err set on failure. */
static void *dup_array(const void *src, int32_t n, size_t sz, int *err)
{
    if (n <= 0)
        return NULL;
    void *p = drv_malloc(sz * (size_t)n);
    if (!p) {
        *err = DRV_ENOMEM;
        return NULL;
    }
    memcpy(p, src, sz * (size_t)n);
    return p;
}

/* Class 0 (no labels, no taints) exists once anything is added. */
static int ensure_class0(drv_state *st)
{
    if (st->nclasses > 0)
        return 0;
    if (drv_grow(&st->classes, sizeof *st->classes, &st->cap_classes, 1) != 0)
        return DRV_ENOMEM;
    memset(&st->classes[0], 0, sizeof st->classes[0]);
    st->nclasses = 1;
    return 0;
}

/* ---- the class index: classes by their (sorted) label and taint sets ------------------------ */

/* FNV-1a over n bytes, from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

static uint64_t class_hash(const void *key)
{
    const drv_nodeclass *c = key;
    uint64_t h = fnv(1469598103934665603ull, &c->nlabels, sizeof c->nlabels);
    h = fnv(h, c->labels, sizeof *c->labels * (size_t)c->nlabels);
    h = fnv(h, &c->ntaints, sizeof c->ntaints);
    return fnv(h, c->taints, sizeof *c->taints * (size_t)c->ntaints);
}

static bool same_class(const void *a, const void *b)
{
    const drv_nodeclass *x = a, *y = b;
    return x->nlabels == y->nlabels && x->ntaints == y->ntaints &&
           (x->nlabels == 0 ||
            memcmp(x->labels, y->labels, sizeof *x->labels * (size_t)x->nlabels) == 0) &&
           (x->ntaints == 0 ||
            memcmp(x->taints, y->taints, sizeof *x->taints * (size_t)x->ntaints) == 0);
}

/* Keys: a drv_malloc'd copy of the class's drv_nodeclass (its arrays are the class's and never
 * move); values: the class id. */
static const drv_hashmap_type class_index_type = {
    .hash = class_hash, .equal = same_class, .key_free = drv_free};

/* Files class id (its arrays in st->classes[id]) in the index. 0 or DRV_ENOMEM. */
static int index_class(drv_state *st, int32_t id)
{
    drv_nodeclass *key = drv_malloc(sizeof *key);
    if (!key || (!st->class_index && !(st->class_index = drv_hashmap_new(&class_index_type)))) {
        drv_free(key);
        return DRV_ENOMEM;
    }
    *key = st->classes[id];
    if (drv_hashmap_put(st->class_index, key, (void *)(intptr_t)id) != 0) {
        drv_free(key);
        return DRV_ENOMEM;
    }
    return 0;
}

/* Gives a node its class, telling the state's readers when that is a change. */
static void set_class(drv_state *st, int32_t node, int32_t cls)
{
    if (st->nodes[node].node_class != cls) {
        st->nodes[node].node_class = cls;
        drv_state_node_changed(st, node, true);
    }
}

int drv_node_meta_parse(const char *text, drv_strtab *names, drv_label **labels, int32_t *nlabels,
                        drv_taint **taints, int32_t *ntaints)
{
    *labels = NULL;
    *taints = NULL;
    *nlabels = *ntaints = 0;
    int32_t cap_l = 0, cap_t = 0;
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[1200], *f[4] = {0};
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        p = end ? end + 1 : p + len;
        int nf = 0; /* (fields split at each tab, in place; past the fourth: ignored) */
        for (char *q = line; q && nf < 4; nf++) {
            f[nf] = q;
            if ((q = strchr(q, '\t')))
                *q++ = '\0';
        }
        int32_t key = nf >= 3 ? drv_strtab_intern(names, f[1]) : 0;
        int32_t val = nf >= 3 ? drv_strtab_intern(names, f[2]) : 0;
        if (key < 0 || val < 0)
            return DRV_ENOMEM;
        if (nf == 3 && f[0][0] == 'l') {
            if (drv_grow(labels, sizeof **labels, &cap_l, *nlabels + 1) != 0)
                return DRV_ENOMEM;
            (*labels)[(*nlabels)++] = (drv_label){key, val};
        } else if (nf == 4 && f[0][0] == 't' && drv_effect_parse(f[3]) >= 0) {
            if (drv_grow(taints, sizeof **taints, &cap_t, *ntaints + 1) != 0)
                return DRV_ENOMEM;
            (*taints)[(*ntaints)++] = (drv_taint){key, val, drv_effect_parse(f[3])};
        }
    }
    return 0;
}

int drv_state_set_node_meta(drv_state *st, int32_t node, const drv_label *labels, int32_t nlabels,
                            const drv_taint *taints, int32_t ntaints)
{
    if (node < 0 || node >= st->nnodes || nlabels < 0 || ntaints < 0)
        return DRV_EINVAL;
    for (int32_t i = 0; i < ntaints; i++)
        if (taints[i].effect < 0 || taints[i].effect >= DRV_EFFECT_ANY || taints[i].key < 0 ||
            taints[i].value < 0)
            return DRV_EINVAL;
    for (int32_t i = 0; i < nlabels; i++)
        if (labels[i].key < 0 || labels[i].value < 0)
            return DRV_EINVAL;
    if (nlabels == 0 && ntaints == 0) {
        set_class(st, node, 0);
        return 0;
    }
    int err = 0;
    drv_label *l = dup_array(labels, nlabels, sizeof *labels, &err);
    drv_taint *t = dup_array(taints, ntaints, sizeof *taints, &err);
    if (err || ensure_class0(st) != 0) {
        drv_free(l);
        drv_free(t);
        return DRV_ENOMEM;
    }
    if (l)
        qsort(l, (size_t)nlabels, sizeof *l, cmp_label);
    if (t)
        qsort(t, (size_t)ntaints, sizeof *t, cmp_taint);
    for (int32_t i = 1; i < nlabels; i++)
        if (l[i].key == l[i - 1].key) {
            drv_free(l);
            drv_free(t);
            return DRV_EINVAL;
        }
    drv_nodeclass want = {l, nlabels, t, ntaints};
    intptr_t c = st->class_index ? (intptr_t)drv_hashmap_get(st->class_index, &want) : 0;
    if (c > 0) {
        drv_free(l);
        drv_free(t);
        set_class(st, node, (int32_t)c);
        return 0;
    }
    if (drv_grow(&st->classes, sizeof *st->classes, &st->cap_classes, st->nclasses + 1) != 0) {
        drv_free(l);
        drv_free(t);
        return DRV_ENOMEM;
    }
    st->classes[st->nclasses] = want;
    if (index_class(st, st->nclasses) != 0) {
        drv_free(l);
        drv_free(t);
        return DRV_ENOMEM;
    }
    for (int32_t i = 0; i < ntaints; i++)
        st->has_prefer_taint |= t[i].effect == DRV_EFFECT_PREFER_NO_SCHEDULE;
    set_class(st, node, st->nclasses++);
    return 0;
}

int drv_state_set_gpu_type_label(drv_state *st, const char *key)
{
    int32_t k = key && *key ? drv_strtab_intern(st->names, key) : 0;
    if (k < 0)
        return DRV_ENOMEM;
    st->gpu_type_key = k;
    return 0;
}

int drv_state_set_topology(drv_state *st, const char *const *keys, int32_t n, const char **why)
{
    int32_t k[DRV_MAX_TOPO];
    if (n < 0 || n > DRV_MAX_TOPO) {
        *why = "at most 8 levels";
        return DRV_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        if (!keys[i] || !*keys[i]) {
            *why = "an empty label key";
            return DRV_EINVAL;
        }
        for (int32_t j = 0; j < i; j++)
            if (strcmp(keys[i], keys[j]) == 0) {
                *why = "a label key given twice";
                return DRV_EINVAL;
            }
        if ((k[i] = drv_strtab_intern(st->names, keys[i])) < 0)
            return DRV_ENOMEM;
    }
    memcpy(st->topo_key, k, sizeof *k * (size_t)n);
    st->ntopo = n;
    st->topo_host = 0;
    for (int32_t i = 0; i < n; i++)
        if (strcmp(keys[i], DRV_TOPO_HOSTNAME) == 0)
            st->topo_host = i + 1;
    return 0;
}

int32_t drv_topology_split(const char *s, char *buf, size_t cap, const char **keys,
                           const char **why)
{
    if (!s || !*s)
        return 0;
    if (strlen(s) >= cap) {
        *why = "too long";
        return -1;
    }
    memcpy(buf, s, strlen(s) + 1);
    int32_t n = 0;
    for (char *p = buf;;) {
        char *c = strchr(p, ',');
        if (c)
            *c = 0;
        if (n == DRV_MAX_TOPO) {
            *why = "at most 8 levels";
            return -1;
        }
        if (!*p) {
            *why = "an empty label key";
            return -1;
        }
        for (int32_t j = 0; j < n; j++)
            if (strcmp(keys[j], p) == 0) {
                *why = "a label key given twice";
                return -1;
            }
        keys[n++] = p;
        if (!c)
            return n;
        p = c + 1;
    }
}

int32_t drv_state_topo_level(const drv_state *st, const char *key)
{
    for (int32_t i = 0; i < st->ntopo; i++)
        if (strcmp(drv_strtab_str(st->names, st->topo_key[i]), key) == 0)
            return i;
    return -1;
}

/* The value of label key (interned) on node class cls, 0 when it has none. O(labels). */
static int32_t class_label(const drv_state *st, int32_t cls, int32_t key)
{
    if (cls <= 0 || cls >= st->nclasses || key <= 0)
        return 0;
    const drv_nodeclass *k = &st->classes[cls];
    for (int32_t i = 0; i < k->nlabels; i++)
        if (k->labels[i].key == key)
            return k->labels[i].value;
    return 0;
}

int32_t drv_node_gpu_type(const drv_state *st, int32_t node)
{
    return class_label(st, st->nodes[node].node_class, st->gpu_type_key);
}

int32_t drv_node_domain(const drv_state *st, int32_t node, int32_t level)
{
    if (level < 0 || level >= st->ntopo)
        return 0;
    if (level + 1 == st->topo_host) /* (the node itself: its interned name, never 0) */
        return st->nodes[node].name;
    return class_label(st, st->nodes[node].node_class, st->topo_key[level]);
}

typedef struct dom_free {
    int32_t dom;
    int64_t free;
} dom_free;

static int cmp_dom_free(const void *a, const void *b)
{
    const dom_free *x = a, *y = b;
    return (x->dom > y->dom) - (x->dom < y->dom);
}

/* A level's short name: its key's last word ("cloud.provider.com/topology-rack": "rack"), and
 * "node" for the hostname level. */
static const char *level_word(const char *key)
{
    if (strcmp(key, DRV_TOPO_HOSTNAME) == 0)
        return "node";
    const char *w = strrchr(key, '/');
    w = w ? w + 1 : key;
    return strncmp(w, "topology-", 9) == 0 && w[9] ? w + 9 : w;
}

bool drv_topo_explain(const drv_state *st, int32_t job, char *buf, size_t n)
{
    const drv_job *j = &st->jobs[job];
    buf[0] = 0;
    if (j->topo_mode == DRV_TOPO_NONE || j->topo_level >= st->ntopo || st->nnodes == 0)
        return false;
    drv_res need = drv_job_demand(j);
    bool gpu = need.gpu > 0;
    dom_free *v = drv_malloc(sizeof *v * (size_t)st->nnodes);
    if (!v)
        return false;
    int32_t m = 0;
    for (int32_t i = 0; i < st->nnodes; i++) {
        int32_t d = drv_node_domain(st, i, j->topo_level);
        drv_res f = drv_node_free(&st->nodes[i]);
        if (d > 0 && st->nodes[i].schedulable)
            v[m++] = (dom_free){d, gpu ? (f.gpu > 0 ? f.gpu : 0) : (f.cpu > 0 ? f.cpu : 0)};
    }
    qsort(v, (size_t)m, sizeof *v, cmp_dom_free);
    int64_t best = 0, sum = 0;
    for (int32_t i = 0; i < m; i++) {
        sum = i > 0 && v[i].dom == v[i - 1].dom ? sum + v[i].free : v[i].free;
        best = sum > best ? sum : best;
    }
    drv_free(v);
    const char *key = drv_strtab_str(st->names, st->topo_key[j->topo_level]);
    const char *w = level_word(key);
    if (gpu)
        snprintf(buf, n, "needs %lld GPUs in one %s (%s%s); the largest free %s has %lld",
                 (long long)need.gpu, w, key,
                 j->topo_mode == DRV_TOPO_PREFERRED ? ", preferred" : "", w, (long long)best);
    else
        snprintf(buf, n, "needs %.1f CPUs in one %s (%s%s); the largest free %s has %.1f",
                 (double)need.cpu / 1000, w, key,
                 j->topo_mode == DRV_TOPO_PREFERRED ? ", preferred" : "", w, (double)best / 1000);
    return true;
}

int32_t drv_constraint_gpu_type(const drv_state *st, int32_t k)
{
    if (k <= 0 || k >= st->ncons || st->gpu_type_key <= 0)
        return 0;
    const drv_constraint *c = &st->cons[k];
    for (int32_t i = 0; i < c->nselector; i++)
        if (c->selector[i].key == st->gpu_type_key)
            return c->selector[i].value;
    for (int32_t i = 0; i < c->nexpr; i++) {
        const drv_selexpr *e = &c->expr[i];
        if (e->term < c->nrequired && e->key == st->gpu_type_key && e->op == DRV_SEL_IN &&
            e->nvalues == 1)
            return e->values[0];
    }
    return 0;
}

bool drv_state_has_gpu_type(const drv_state *st, int32_t type)
{
    for (int32_t n = 0; n < st->nnodes; n++)
        if (drv_node_gpu_type(st, n) == type)
            return true;
    return false;
}

/* id of `from` re-interned into st->names (id itself when from is NULL), or -1. */
static int32_t reintern(drv_state *st, const drv_strtab *from, int32_t id)
{
    if (!from)
        return id;
    const char *s = drv_strtab_str(from, id);
    return s ? drv_strtab_intern(st->names, s) : -1;
}

/* Checks c and re-interns its strings in place (c is the state's copy). */
static int adopt(drv_state *st, drv_constraint *c, const drv_strtab *from)
{
    int32_t ok = 0;
    for (int32_t i = 0; i < c->nselector; i++) {
        ok |= (c->selector[i].key = reintern(st, from, c->selector[i].key));
        ok |= (c->selector[i].value = reintern(st, from, c->selector[i].value));
    }
    for (int32_t i = 0; i < c->nexpr; i++) {
        drv_selexpr *e = &c->expr[i];
        bool listed = e->op == DRV_SEL_IN || e->op == DRV_SEL_NOT_IN;
        if (e->op < 0 || e->op > DRV_SEL_LT || e->term < 0 ||
            e->term >= c->nrequired + c->npreferred ||
            (listed ? e->nvalues < 1 || e->nvalues > DRV_MAX_SEL_VALUES : e->nvalues != 0))
            return DRV_EINVAL;
        ok |= (e->key = reintern(st, from, e->key));
        for (int32_t k = 0; k < e->nvalues; k++)
            ok |= (e->values[k] = reintern(st, from, e->values[k]));
    }
    for (int32_t i = 0; i < c->npreferred; i++)
        if (c->weight[i] < 1 || c->weight[i] > 100)
            return DRV_EINVAL;
    for (int32_t i = 0; i < c->ntol; i++) {
        drv_toleration *t = &c->tol[i];
        if (t->effect < 0 || t->effect > DRV_EFFECT_ANY)
            return DRV_EINVAL;
        ok |= (t->key = reintern(st, from, t->key));
        ok |= (t->value = reintern(st, from, t->value));
    }
    return ok < 0 ? DRV_ENOMEM : 0;
}

int drv_state_add_constraint(drv_state *st, const drv_constraint *c, const drv_strtab *from,
                             int32_t *id)
{
    if (c->nselector + c->nexpr + c->nrequired + c->npreferred + c->ntol == 0) {
        *id = 0;
        return 0;
    }
    if (c->nselector < 0 || c->nexpr < 0 || c->nrequired < 0 || c->npreferred < 0 || c->ntol < 0)
        return DRV_EINVAL;
    if (st->ncons == 0) {
        if (drv_grow(&st->cons, sizeof *st->cons, &st->cap_cons, 1) != 0)
            return DRV_ENOMEM;
        memset(&st->cons[0], 0, sizeof st->cons[0]);
        st->ncons = 1;
    }
    if (drv_grow(&st->cons, sizeof *st->cons, &st->cap_cons, st->ncons + 1) != 0)
        return DRV_ENOMEM;
    int err = 0;
    drv_constraint k = *c;
    k.selector = dup_array(c->selector, c->nselector, sizeof *c->selector, &err);
    k.expr = dup_array(c->expr, c->nexpr, sizeof *c->expr, &err);
    k.weight = dup_array(c->weight, c->npreferred, sizeof *c->weight, &err);
    k.tol = dup_array(c->tol, c->ntol, sizeof *c->tol, &err);
    if (err || (err = adopt(st, &k, from)) != 0) {
        drv_constraint_fini(&k);
        return err;
    }
    st->cons[st->ncons] = k;
    *id = st->ncons++;
    return 0;
}

/* The value of label key on class k, or -1 when absent (binary search: labels sorted). */
static int32_t label_value(const drv_nodeclass *k, int32_t key)
{
    int32_t lo = 0, hi = k->nlabels;
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (k->labels[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < k->nlabels && k->labels[lo].key == key ? k->labels[lo].value : -1;
}

/* A label value as an integer, Kubernetes' Gt/Lt parse (decimal, optional sign). */
static bool label_int(const drv_state *st, int32_t value, int64_t *out)
{
    const char *s = drv_strtab_str(st->names, value);
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno)
        return false;
    *out = v;
    return true;
}

static bool expr_matches(const drv_state *st, const drv_nodeclass *k, const drv_selexpr *e)
{
    int32_t v = label_value(k, e->key);
    int64_t num;
    switch (e->op) {
    case DRV_SEL_IN:
    case DRV_SEL_NOT_IN: {
        bool in = false;
        for (int32_t i = 0; i < e->nvalues && v >= 0; i++)
            in |= e->values[i] == v;
        return e->op == DRV_SEL_IN ? in : !in;
    }
    case DRV_SEL_EXISTS:
        return v >= 0;
    case DRV_SEL_DOES_NOT_EXIST:
        return v < 0;
    case DRV_SEL_GT:
        return v >= 0 && label_int(st, v, &num) && num > e->num;
    case DRV_SEL_LT:
        return v >= 0 && label_int(st, v, &num) && num < e->num;
    }
    return false;
}

/* Whether term t has expressions and all of them match. */
static bool term_matches(const drv_state *st, const drv_nodeclass *k, const drv_constraint *c,
                         int32_t t)
{
    bool any = false;
    for (int32_t i = 0; i < c->nexpr; i++) {
        if (c->expr[i].term != t)
            continue;
        if (!expr_matches(st, k, &c->expr[i]))
            return false;
        any = true;
    }
    return any;
}

static bool tolerated(const drv_constraint *c, const drv_taint *t)
{
    for (int32_t i = 0; i < c->ntol; i++) {
        const drv_toleration *o = &c->tol[i];
        if (o->effect != DRV_EFFECT_ANY && o->effect != t->effect)
            continue;
        if (o->key == 0 && o->exists)
            return true;
        if (o->key == t->key && (o->exists || o->value == t->value))
            return true;
    }
    return false;
}

bool drv_constraint_fits(const drv_state *st, int32_t cons, int32_t cls, int32_t *score)
{
    static const drv_nodeclass none = {0};
    static const drv_constraint nothing = {0};
    const drv_nodeclass *k = cls > 0 && cls < st->nclasses ? &st->classes[cls] : &none;
    const drv_constraint *c = cons > 0 && cons < st->ncons ? &st->cons[cons] : &nothing;
    for (int32_t i = 0; i < c->nselector; i++)
        if (label_value(k, c->selector[i].key) != c->selector[i].value)
            return false;
    bool req = c->nrequired == 0;
    for (int32_t t = 0; t < c->nrequired && !req; t++)
        req = term_matches(st, k, c, t);
    if (!req)
        return false;
    bool prefer_ok = true;
    for (int32_t i = 0; i < k->ntaints; i++) {
        const drv_taint *t = &k->taints[i];
        if (tolerated(c, t))
            continue;
        if (t->effect != DRV_EFFECT_PREFER_NO_SCHEDULE)
            return false;
        prefer_ok = false;
    }
    if (score) {
        int32_t w = 0;
        for (int32_t t = 0; t < c->npreferred; t++)
            if (term_matches(st, k, c, c->nrequired + t))
                w += c->weight[t];
        *score = 2 * (w > 100 ? 100 : w) + (st->has_prefer_taint && prefer_ok ? 100 : 0);
    }
    return true;
}
