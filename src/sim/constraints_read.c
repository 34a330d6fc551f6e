/*
 * constraints_read.c - labels, taints, unschedulable, nodeSelector, nodeAffinity and
 * tolerations in cluster and workload files (docs/formats.md), in Kubernetes' spelling and with
 * its validation: an unknown operator or effect, In/NotIn without values, Exists with values,
 * Gt/Lt without exactly one integer, a weight outside 1..100 are errors naming file:line and
 * the field. Strings are interned in the spec's own table; drv_sim_new re-interns them into
 * the state's (drv_state_add_constraint's `from`).
 *
 * Example (a worker role):
 *     nodeSelector: {pool: gpu}
 *     tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
 *     affinity:
 *       nodeAffinity:
 *         requiredDuringSchedulingIgnoredDuringExecution:
 *           nodeSelectorTerms: [{matchExpressions: [{key: gen, operator: Gt, values: ["3"]}]}]
 */
#include "constraints_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A field's path for messages ("jobs[2].roles.worker.tolerations[0].effect"), cut at cap. */
__attribute__((format(printf, 3, 4))) static void pathf(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

/* Interns s into *names (created on first use); -1 when out of memory. */
static int32_t intern(drv_strtab **names, const char *s)
{
    if (!*names && !(*names = drv_strtab_new()))
        return -1;
    return drv_strtab_intern(*names, s);
}

/* A scalar field as an interned string ("" when absent and optional). */
static int read_str(const drv_conf_doc *doc, drv_conf *m, const char *key, const char *path,
                    bool required, drv_strtab **names, int32_t *out, drv_diag *d)
{
    char p[256];
    pathf(p, sizeof p, "%s.%s", path, key);
    drv_conf *f = drv_conf_get(m, key);
    const char *s = "";
    int rc;
    if (!f && required)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", doc->file, m->line, p);
    if (f && (rc = drv_conf_str(doc, f, p, &s, d)) != 0)
        return rc;
    if ((*out = intern(names, s)) < 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    return 0;
}

/* A map of strings to strings (labels, nodeSelector) into *out (allocated, *n entries). */
static int read_string_map(const drv_conf_doc *doc, drv_conf *m, const char *path, int max,
                           drv_strtab **names, drv_label **out, int32_t *n, drv_diag *d)
{
    int rc = drv_conf_expect(doc, m, DRV_CONF_MAP, path, d);
    if (rc)
        return rc;
    if (m->nitems > max)
        return drv_fail(d, DRV_ERANGE, "%s:%d: %s: at most %d entries", doc->file, m->line, path,
                        max);
    *out = m->nitems ? drv_calloc((size_t)m->nitems, sizeof **out) : NULL;
    if (m->nitems && !*out)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int32_t i = 0; i < m->nitems; i++) {
        char p[256];
        const char *v;
        pathf(p, sizeof p, "%s.%s", path, m->items[i]->key);
        m->items[i]->used = true;
        if ((rc = drv_conf_str(doc, m->items[i], p, &v, d)) != 0)
            return rc;
        (*out)[i].key = intern(names, m->items[i]->key);
        (*out)[i].value = intern(names, v);
        if ((*out)[i].key < 0 || (*out)[i].value < 0)
            return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    *n = m->nitems;
    return 0;
}

/* An effect field: one of Kubernetes' three, or (when allow_empty) absent or "" for any. */
static int read_effect(const drv_conf_doc *doc, drv_conf *m, const char *path, bool allow_empty,
                       int32_t *out, drv_diag *d)
{
    char p[256];
    pathf(p, sizeof p, "%s.effect", path);
    drv_conf *f = drv_conf_get(m, "effect");
    const char *s = "";
    int rc;
    if (f && (rc = drv_conf_str(doc, f, p, &s, d)) != 0)
        return rc;
    *out = *s ? drv_effect_parse(s) : allow_empty ? DRV_EFFECT_ANY : -1;
    if (*out < 0)
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: %s: expected NoSchedule, PreferNoSchedule or NoExecute, found '%s'",
                        doc->file, f ? f->line : m->line, p, s);
    return 0;
}

static int read_taints(const drv_conf_doc *doc, drv_conf *seq, const char *path, drv_strtab **names,
                       drv_nodeclass *k, drv_diag *d)
{
    int rc = drv_conf_expect(doc, seq, DRV_CONF_SEQ, path, d);
    if (rc)
        return rc;
    if (seq->nitems > MAX_TAINTS)
        return drv_fail(d, DRV_ERANGE, "%s:%d: %s: at most %d taints", doc->file, seq->line, path,
                        MAX_TAINTS);
    k->taints = seq->nitems ? drv_calloc((size_t)seq->nitems, sizeof *k->taints) : NULL;
    if (seq->nitems && !k->taints)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int32_t i = 0; i < seq->nitems; i++) {
        char p[256];
        drv_conf *t = seq->items[i];
        drv_taint *x = &k->taints[i];
        pathf(p, sizeof p, "%s[%d]", path, i);
        if ((rc = drv_conf_expect(doc, t, DRV_CONF_MAP, p, d)) != 0 ||
            (rc = read_str(doc, t, "key", p, true, names, &x->key, d)) != 0 ||
            (rc = read_str(doc, t, "value", p, false, names, &x->value, d)) != 0 ||
            (rc = read_effect(doc, t, p, false, &x->effect, d)) != 0 ||
            (rc = drv_conf_check_unused(doc, t, p, d)) != 0)
            return rc;
        k->ntaints++;
    }
    return 0;
}

/* A node group's gpuType (a name: text.h's rule, as a Kubernetes label value) into its labels as
 * DRV_GPU_TYPE_LABEL; a label of that key with another value is a conflict, not overridden. */
static int read_gpu_type(const drv_conf_doc *doc, drv_conf *f, const char *p, drv_cluster_spec *c,
                         drv_nodeclass *k, drv_diag *d)
{
    char type[64];
    int rc = drv_conf_name(doc, f, p, type, sizeof type, d);
    if (rc)
        return rc;
    int32_t key = intern(&c->names, DRV_GPU_TYPE_LABEL), value = intern(&c->names, type);
    if (key < 0 || value < 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int32_t i = 0; i < k->nlabels; i++)
        if (k->labels[i].key == key) {
            if (k->labels[i].value == value)
                break;
            return drv_fail(d, DRV_EINVAL,
                            "%s:%d: %s: '%s' conflicts with its label %s: '%s'; expected one GPU "
                            "type per node",
                            doc->file, f->line, p, type, DRV_GPU_TYPE_LABEL,
                            drv_strtab_str(c->names, k->labels[i].value));
        }
    int32_t cap = k->nlabels;
    if (drv_grow(&k->labels, sizeof *k->labels, &cap, k->nlabels + 1) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    k->labels[k->nlabels++] = (drv_label){key, value};
    c->gpu_types = true;
    return 0;
}

int drv_read_node_meta(const drv_conf_doc *doc, drv_conf *n, const char *path, drv_cluster_spec *c,
                       int32_t *node_class, bool *unschedulable, drv_diag *d)
{
    char p[256];
    drv_nodeclass k = {0};
    int rc = 0;
    drv_conf *f;
    *node_class = 0;
    *unschedulable = false;
    pathf(p, sizeof p, "%s.unschedulable", path);
    if ((f = drv_conf_get(n, "unschedulable")) && (rc = drv_conf_bool(doc, f, p, unschedulable, d)))
        return rc;
    pathf(p, sizeof p, "%s.labels", path);
    if ((f = drv_conf_get(n, "labels")) &&
        (rc = read_string_map(doc, f, p, MAX_LABELS, &c->names, &k.labels, &k.nlabels, d)) != 0)
        goto out;
    pathf(p, sizeof p, "%s.gpuType", path);
    if ((f = drv_conf_get(n, "gpuType")) && (rc = read_gpu_type(doc, f, p, c, &k, d)) != 0)
        goto out;
    pathf(p, sizeof p, "%s.taints", path);
    if ((f = drv_conf_get(n, "taints")) && (rc = read_taints(doc, f, p, &c->names, &k, d)) != 0)
        goto out;
    if (k.nlabels + k.ntaints == 0)
        goto out;
    if (drv_grow(&c->classes, sizeof *c->classes, &c->cap_classes,
                 (c->nclasses ? c->nclasses : 1) + 1) != 0) {
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
        goto out;
    }
    if (c->nclasses == 0) /* class 0: no labels, no taints */
        memset(&c->classes[c->nclasses++], 0, sizeof *c->classes);
    *node_class = c->nclasses;
    c->classes[c->nclasses++] = k;
    return 0;
out:
    drv_nodeclass_fini(&k);
    return rc;
}

/* One matchExpressions item into e; Kubernetes' rules on values per operator. */
static int read_expr(const drv_conf_doc *doc, drv_conf *x, const char *p, drv_strtab **names,
                     drv_selexpr *e, drv_diag *d)
{
    int rc;
    char q[256];
    const char *op;
    drv_conf *f;
    if ((rc = drv_conf_expect(doc, x, DRV_CONF_MAP, p, d)) != 0 ||
        (rc = read_str(doc, x, "key", p, true, names, &e->key, d)) != 0)
        return rc;
    pathf(q, sizeof q, "%s.operator", p);
    if (!(f = drv_conf_get(x, "operator")))
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", doc->file, x->line, q);
    if ((rc = drv_conf_str(doc, f, q, &op, d)) != 0)
        return rc;
    if ((e->op = drv_sel_op_parse(op)) < 0)
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: %s: expected In, NotIn, Exists, DoesNotExist, Gt or Lt, found '%s'",
                        doc->file, f->line, q, op);
    pathf(q, sizeof q, "%s.values", p);
    drv_conf *vs = drv_conf_get(x, "values");
    if (vs && (rc = drv_conf_expect(doc, vs, DRV_CONF_SEQ, q, d)) != 0)
        return rc;
    int32_t nv = vs ? vs->nitems : 0;
    bool listed = e->op == DRV_SEL_IN || e->op == DRV_SEL_NOT_IN;
    bool numeric = e->op == DRV_SEL_GT || e->op == DRV_SEL_LT;
    if (listed ? nv < 1 || nv > DRV_MAX_SEL_VALUES : numeric ? nv != 1 : nv != 0)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: %s takes %s, found %d", doc->file,
                        vs ? vs->line : x->line, q, op,
                        listed    ? "1 to 16 values"
                        : numeric ? "exactly one integer value"
                                  : "no values",
                        nv);
    for (int32_t i = 0; i < nv; i++) {
        char r[288];
        const char *v;
        pathf(r, sizeof r, "%s[%d]", q, i);
        if ((rc = drv_conf_str(doc, vs->items[i], r, &v, d)) != 0)
            return rc;
        if (numeric) {
            char *end;
            errno = 0;
            e->num = strtoll(v, &end, 10);
            if (!*v || *end || errno)
                return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected an integer for %s, found '%s'",
                                doc->file, vs->items[i]->line, r, op, v);
            continue;
        }
        if ((e->values[i] = intern(names, v)) < 0)
            return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    e->nvalues = listed ? nv : 0;
    return drv_conf_check_unused(doc, x, p, d);
}

/* A node selector term ({matchExpressions: [...]}) appended to c as term number t. */
static int read_term(const drv_conf_doc *doc, drv_conf *tn, const char *p, int32_t t,
                     drv_strtab **names, drv_constraint *c, drv_diag *d)
{
    int rc;
    char q[256];
    if ((rc = drv_conf_expect(doc, tn, DRV_CONF_MAP, p, d)) != 0)
        return rc;
    pathf(q, sizeof q, "%s.matchExpressions", p);
    drv_conf *xs = drv_conf_get(tn, "matchExpressions");
    if (!xs)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", doc->file, tn->line, q);
    if ((rc = drv_conf_expect(doc, xs, DRV_CONF_SEQ, q, d)) != 0)
        return rc;
    if (xs->nitems < 1 || xs->nitems > MAX_TERM_EXPRS)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected 1 to %d expressions", doc->file,
                        xs->line, q, MAX_TERM_EXPRS);
    drv_selexpr *e = drv_realloc(c->expr, sizeof *e * (size_t)(c->nexpr + xs->nitems));
    if (!e)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    c->expr = e;
    for (int32_t i = 0; i < xs->nitems; i++) {
        char r[288];
        pathf(r, sizeof r, "%s[%d]", q, i);
        drv_selexpr *x = &c->expr[c->nexpr];
        memset(x, 0, sizeof *x);
        x->term = t;
        if ((rc = read_expr(doc, xs->items[i], r, names, x, d)) != 0)
            return rc;
        c->nexpr++;
    }
    return drv_conf_check_unused(doc, tn, p, d);
}

/* requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [term...]}. */
static int read_required(const drv_conf_doc *doc, drv_conf *rq, const char *p, drv_strtab **names,
                         drv_constraint *c, drv_diag *d)
{
    int rc;
    char q[256];
    if ((rc = drv_conf_expect(doc, rq, DRV_CONF_MAP, p, d)) != 0)
        return rc;
    pathf(q, sizeof q, "%s.nodeSelectorTerms", p);
    drv_conf *ts = drv_conf_get(rq, "nodeSelectorTerms");
    if (!ts)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", doc->file, rq->line, q);
    if ((rc = drv_conf_expect(doc, ts, DRV_CONF_SEQ, q, d)) != 0)
        return rc;
    if (ts->nitems < 1 || ts->nitems > MAX_TERMS)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected 1 to %d terms", doc->file, ts->line, q,
                        MAX_TERMS);
    for (int32_t i = 0; i < ts->nitems; i++) {
        char r[288];
        pathf(r, sizeof r, "%s[%d]", q, i);
        if ((rc = read_term(doc, ts->items[i], r, c->nrequired, names, c, d)) != 0)
            return rc;
        c->nrequired++;
    }
    return drv_conf_check_unused(doc, rq, p, d);
}

/* preferredDuringSchedulingIgnoredDuringExecution: [{weight, preference: term}...]. */
static int read_preferred(const drv_conf_doc *doc, drv_conf *ps, const char *p, drv_strtab **names,
                          drv_constraint *c, drv_diag *d)
{
    int rc;
    if ((rc = drv_conf_expect(doc, ps, DRV_CONF_SEQ, p, d)) != 0)
        return rc;
    if (ps->nitems > MAX_TERMS)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: at most %d terms", doc->file, ps->line, p,
                        MAX_TERMS);
    c->weight = ps->nitems ? drv_calloc((size_t)ps->nitems, sizeof *c->weight) : NULL;
    if (ps->nitems && !c->weight)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int32_t i = 0; i < ps->nitems; i++) {
        char q[256], r[288];
        drv_conf *x = ps->items[i], *f;
        int64_t w;
        pathf(q, sizeof q, "%s[%d]", p, i);
        if ((rc = drv_conf_expect(doc, x, DRV_CONF_MAP, q, d)) != 0)
            return rc;
        pathf(r, sizeof r, "%s.weight", q);
        if (!(f = drv_conf_get(x, "weight")))
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", doc->file, x->line, r);
        if ((rc = drv_conf_int(doc, f, r, 1, 100, &w, d)) != 0)
            return rc;
        pathf(r, sizeof r, "%s.preference", q);
        if (!(f = drv_conf_get(x, "preference")))
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", doc->file, x->line, r);
        if ((rc = read_term(doc, f, r, c->nrequired + c->npreferred, names, c, d)) != 0)
            return rc;
        c->weight[c->npreferred++] = (int32_t)w;
        if ((rc = drv_conf_check_unused(doc, x, q, d)) != 0)
            return rc;
    }
    return 0;
}

/* affinity: {nodeAffinity: {required..., preferred...}}; pod (anti-)affinity is not read. */
static int read_affinity(const drv_conf_doc *doc, drv_conf *af, const char *p, drv_strtab **names,
                         drv_constraint *c, drv_diag *d)
{
    int rc;
    char q[256], r[320];
    if ((rc = drv_conf_expect(doc, af, DRV_CONF_MAP, p, d)) != 0)
        return rc;
    pathf(q, sizeof q, "%s.nodeAffinity", p);
    drv_conf *na = drv_conf_get(af, "nodeAffinity"), *f;
    if (na) {
        if ((rc = drv_conf_expect(doc, na, DRV_CONF_MAP, q, d)) != 0)
            return rc;
        pathf(r, sizeof r, "%s.requiredDuringSchedulingIgnoredDuringExecution", q);
        if ((f = drv_conf_get(na, "requiredDuringSchedulingIgnoredDuringExecution")) &&
            (rc = read_required(doc, f, r, names, c, d)) != 0)
            return rc;
        pathf(r, sizeof r, "%s.preferredDuringSchedulingIgnoredDuringExecution", q);
        if ((f = drv_conf_get(na, "preferredDuringSchedulingIgnoredDuringExecution")) &&
            (rc = read_preferred(doc, f, r, names, c, d)) != 0)
            return rc;
        if ((rc = drv_conf_check_unused(doc, na, q, d)) != 0)
            return rc;
    }
    return drv_conf_check_unused(doc, af, p, d);
}

/* tolerations: [{key, operator (Equal, Exists), value, effect}...]. */
static int read_tolerations(const drv_conf_doc *doc, drv_conf *seq, const char *p,
                            drv_strtab **names, drv_constraint *c, drv_diag *d)
{
    int rc;
    if ((rc = drv_conf_expect(doc, seq, DRV_CONF_SEQ, p, d)) != 0)
        return rc;
    if (seq->nitems > MAX_TOLERATIONS)
        return drv_fail(d, DRV_ERANGE, "%s:%d: %s: at most %d tolerations", doc->file, seq->line, p,
                        MAX_TOLERATIONS);
    c->tol = seq->nitems ? drv_calloc((size_t)seq->nitems, sizeof *c->tol) : NULL;
    if (seq->nitems && !c->tol)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int32_t i = 0; i < seq->nitems; i++) {
        char q[256], r[288];
        drv_conf *x = seq->items[i], *f;
        drv_toleration *t = &c->tol[i];
        const char *op = "Equal";
        pathf(q, sizeof q, "%s[%d]", p, i);
        if ((rc = drv_conf_expect(doc, x, DRV_CONF_MAP, q, d)) != 0 ||
            (rc = read_str(doc, x, "key", q, false, names, &t->key, d)) != 0 ||
            (rc = read_str(doc, x, "value", q, false, names, &t->value, d)) != 0 ||
            (rc = read_effect(doc, x, q, true, &t->effect, d)) != 0)
            return rc;
        pathf(r, sizeof r, "%s.operator", q);
        if ((f = drv_conf_get(x, "operator")) && (rc = drv_conf_str(doc, f, r, &op, d)) != 0)
            return rc;
        if (strcmp(op, "Equal") != 0 && strcmp(op, "Exists") != 0)
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected Equal or Exists, found '%s'",
                            doc->file, f->line, r, op);
        t->exists = op[1] == 'x';
        if (t->exists && t->value != 0) /* Kubernetes: Exists takes no value */
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s.value: must be empty with Exists", doc->file,
                            x->line, q);
        if (!t->exists && t->key == 0) /* Kubernetes: an empty key needs Exists */
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s.key: an empty key needs operator Exists",
                            doc->file, x->line, q);
        c->ntol++;
        if ((rc = drv_conf_check_unused(doc, x, q, d)) != 0)
            return rc;
    }
    return 0;
}

int drv_read_role_constraint(const drv_conf_doc *doc, drv_conf *role, const char *path,
                             drv_workload *w, int32_t *cons, drv_diag *d)
{
    char p[256];
    drv_constraint c = {0};
    drv_conf *f;
    int rc = 0;
    *cons = 0;
    pathf(p, sizeof p, "%s.nodeSelector", path);
    if ((f = drv_conf_get(role, "nodeSelector")) &&
        (rc = read_string_map(doc, f, p, MAX_LABELS, &w->names, &c.selector, &c.nselector, d)))
        goto out;
    pathf(p, sizeof p, "%s.affinity", path);
    if ((f = drv_conf_get(role, "affinity")) && (rc = read_affinity(doc, f, p, &w->names, &c, d)))
        goto out;
    pathf(p, sizeof p, "%s.tolerations", path);
    if ((f = drv_conf_get(role, "tolerations")) &&
        (rc = read_tolerations(doc, f, p, &w->names, &c, d)))
        goto out;
    if (c.nselector + c.nexpr + c.ntol == 0)
        goto out;
    if (drv_grow(&w->cons, sizeof *w->cons, &w->cap_cons, (w->ncons ? w->ncons : 1) + 1) != 0) {
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
        goto out;
    }
    if (w->ncons == 0) /* constraint 0: none */
        memset(&w->cons[w->ncons++], 0, sizeof *w->cons);
    *cons = w->ncons;
    w->cons[w->ncons++] = c;
    return 0;
out:
    drv_constraint_fini(&c);
    return rc;
}
