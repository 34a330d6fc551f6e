/*
 * objects_sched.c - the scheduling vocabulary of Kubernetes objects (issue 14): a Node's labels
 * and taints, a pod spec's nodeSelector, node affinity and tolerations, PriorityClasses,
 * Drover's cluster-scoped Queues and Kueue's topology annotations (json.h), a TrainingJob's
 * restartPolicy and cleanPodPolicy words (kube_types.h), with the API
 * server's validation, so that bad input is named by object and field: "trainingjob ns/x:
 * spec.replicaSpecs.Worker.template.spec.tolerations[0].effect: expected NoSchedule,
 * PreferNoSchedule, NoExecute or empty, found 'No'".
 *
 * Informer records are copied by value into events, so what varies in length travels interned:
 * a Node's labels and taints as one canonical text ("l\tkey\tvalue\n", "t\tkey\tvalue\teffect\n"
 * lines), a pod spec's constraint fields as their compact JSON (keys sorted). Nodes of one pool
 * then share one string, and the scheduler thread decodes either into the state's own names
 * (the meta text by the core: drv_node_meta_parse, state.h; the JSON here:
 * drv_kube_decode_constraint).
 *
 * Example: a node labelled pool=gpu with taint gpu=true:NoSchedule has the meta text
 * "l\tpool\tgpu\nt\tgpu\ttrue\tNoSchedule\n".
 */
#include "json.h"
#include "drover/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A label key or value, a taint's parts: no tab or newline (the meta text's separators). */
static bool plain(const char *s)
{
    return s && !strpbrk(s, "\t\n");
}

/* Appends to a drv_malloc'd string *s of length *n. 0 or DRV_ENOMEM. */
static int append(char **s, size_t *n, size_t *cap, const char *a)
{
    size_t k = strlen(a);
    if (*n + k + 1 > *cap) {
        size_t c = (*cap ? *cap * 2 : 256) + k;
        char *p = drv_realloc(*s, c);
        if (!p)
            return DRV_ENOMEM;
        *s = p;
        *cap = c;
    }
    memcpy(*s + *n, a, k + 1);
    *n += k;
    return 0;
}

/* ---- Node labels and taints ---------------------------------------------------------------- */

/* kubernetes.io/hostname is left out: unique per node, it would make each node a class of its
 * own (state.h), and Drover chooses nodes itself. */
static bool class_label(const char *key)
{
    return strcmp(key, "kubernetes.io/hostname") != 0;
}

int drv_kube_node_meta(json_t *node, drv_strtab *names, const char *who, int32_t *out, drv_diag *d)
{
    *out = 0;
    json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
    if ((labels && !json_is_object(labels)) || (taints && !json_is_array(taints)))
        return drv_fail(d, DRV_EPARSE, "%s: %s: expected a %s", who,
                        labels && !json_is_object(labels) ? "metadata.labels" : "spec.taints",
                        labels && !json_is_object(labels) ? "map" : "list");
    char *s = NULL, line[1200];
    size_t n = 0, cap = 0;
    int rc = 0;
    const char *k;
    json_t *v;
    json_object_foreach(labels, k, v)
    {
        const char *val = json_string_value(v);
        if (!plain(k) || !plain(val)) {
            rc = drv_fail(d, DRV_EPARSE, "%s: metadata.labels.%s: expected a string label value",
                          who, k);
            break;
        }
        if (!class_label(k))
            continue;
        snprintf(line, sizeof line, "l\t%s\t%s\n", k, val);
        if ((rc = append(&s, &n, &cap, line)) != 0)
            break;
    }
    size_t i;
    json_array_foreach(taints, i, v)
    {
        if (rc)
            break;
        const char *key = json_string_value(json_object_get(v, "key"));
        const char *val = json_string_value(json_object_get(v, "value"));
        const char *eff = json_string_value(json_object_get(v, "effect"));
        if (!plain(key) || !*key || (val && !plain(val)))
            rc = drv_fail(d, DRV_EPARSE, "%s: spec.taints[%zu].key: expected a taint key", who, i);
        else if (!eff || drv_effect_parse(eff) < 0)
            rc = drv_fail(d, DRV_EPARSE,
                          "%s: spec.taints[%zu].effect: expected NoSchedule, PreferNoSchedule or "
                          "NoExecute, found '%s'",
                          who, i, eff ? eff : "(none)");
        if (rc)
            break;
        snprintf(line, sizeof line, "t\t%s\t%s\t%s\n", key, val ? val : "", eff);
        rc = append(&s, &n, &cap, line);
    }
    if (rc == 0 && s && (*out = drv_strtab_intern(names, s)) < 0)
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
    drv_free(s);
    return rc;
}

/* ---- pod spec: nodeSelector, node affinity, tolerations ------------------------------------ */

char *drv_kube_constraint_json(json_t *podspec)
{
    json_t *sel = json_object_get(podspec, "nodeSelector");
    json_t *na = json_object_get(json_object_get(podspec, "affinity"), "nodeAffinity");
    json_t *tol = json_object_get(podspec, "tolerations");
    if ((!sel || !json_object_size(sel)) && !na && (!tol || !json_array_size(tol)))
        return NULL;
    json_t *o = json_object();
    if (!o)
        return NULL;
    if (sel)
        json_object_set(o, "nodeSelector", sel);
    if (na)
        json_object_set_new(o, "affinity", json_pack("{s:O}", "nodeAffinity", na));
    if (tol)
        json_object_set(o, "tolerations", tol);
    char *out = drv_json_dump(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return out;
}

/* What decoding a constraint carries along: the names, who and the field path for messages. */
typedef struct cons_ctx {
    drv_strtab *names;
    const char *who, *path;
    drv_constraint *c;
    int32_t cap_expr;
    drv_diag *d;
} cons_ctx;

static int cons_intern(cons_ctx *x, const char *s, int32_t *out)
{
    *out = s && *s ? drv_strtab_intern(x->names, s) : 0;
    return *out < 0 ? drv_fail(x->d, DRV_ENOMEM, "out of memory") : 0;
}

/* One matchExpression of term `term`; field names its place ("...nodeSelectorTerms[0]"). */
static int cons_expr(cons_ctx *x, json_t *e, int32_t term, const char *field, size_t i)
{
    const char *key = json_string_value(json_object_get(e, "key"));
    const char *op = json_string_value(json_object_get(e, "operator"));
    json_t *vals = json_object_get(e, "values");
    int o = op ? drv_sel_op_parse(op) : -1;
    if (!key || !*key)
        return drv_fail(x->d, DRV_EPARSE, "%s: %s.%s.matchExpressions[%zu].key: missing", x->who,
                        x->path, field, i);
    if (o < 0)
        return drv_fail(x->d, DRV_EPARSE,
                        "%s: %s.%s.matchExpressions[%zu].operator: expected In, NotIn, Exists, "
                        "DoesNotExist, Gt or Lt, found '%s'",
                        x->who, x->path, field, i, op ? op : "(none)");
    size_t nv = json_array_size(vals);
    bool ok = o == DRV_SEL_IN || o == DRV_SEL_NOT_IN ? nv >= 1 && nv <= DRV_MAX_SEL_VALUES
              : o == DRV_SEL_GT || o == DRV_SEL_LT   ? nv == 1
                                                     : nv == 0;
    if (!ok)
        return drv_fail(x->d, DRV_EPARSE,
                        "%s: %s.%s.matchExpressions[%zu].values: %s takes %s, found %zu", x->who,
                        x->path, field, i, op,
                        o <= DRV_SEL_NOT_IN ? "1 to 16 values"
                        : o >= DRV_SEL_GT   ? "exactly one integer"
                                            : "no values",
                        nv);
    if (drv_grow(&x->c->expr, sizeof *x->c->expr, &x->cap_expr, x->c->nexpr + 1) != 0)
        return drv_fail(x->d, DRV_ENOMEM, "out of memory");
    drv_selexpr *s = &x->c->expr[x->c->nexpr];
    memset(s, 0, sizeof *s);
    s->term = term;
    s->op = o;
    int rc = cons_intern(x, key, &s->key);
    for (size_t k = 0; k < nv && !rc; k++) {
        const char *v = json_string_value(json_array_get(vals, k));
        if (!v)
            return drv_fail(x->d, DRV_EPARSE,
                            "%s: %s.%s.matchExpressions[%zu].values[%zu]: expected a string",
                            x->who, x->path, field, i, k);
        if (o == DRV_SEL_GT || o == DRV_SEL_LT) {
            char *end;
            s->num = strtoll(v, &end, 10);
            if (end == v || *end)
                return drv_fail(x->d, DRV_EPARSE,
                                "%s: %s.%s.matchExpressions[%zu].values[0]: expected an integer "
                                "for %s, found '%s'",
                                x->who, x->path, field, i, op, v);
        } else {
            rc = cons_intern(x, v, &s->values[s->nvalues++]);
        }
    }
    if (!rc)
        x->c->nexpr++;
    return rc;
}

/* A node selector term (or a preference): its matchExpressions, ANDed. */
static int cons_term(cons_ctx *x, json_t *t, int32_t term, const char *field)
{
    if (json_object_get(t, "matchFields"))
        return drv_fail(x->d, DRV_EPARSE,
                        "%s: %s.%s.matchFields: not supported (Drover chooses the node; select "
                        "nodes by label)",
                        x->who, x->path, field);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(t, "matchExpressions"), i, e)
    {
        int rc = cons_expr(x, e, term, field, i);
        if (rc)
            return rc;
    }
    return 0;
}

static int cons_affinity(cons_ctx *x, json_t *na)
{
    json_t *req = json_object_get(
        json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
    json_t *pref = json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution");
    char field[160];
    size_t i;
    json_t *t;
    json_array_foreach(req, i, t)
    {
        snprintf(field, sizeof field,
                 "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                 "nodeSelectorTerms[%zu]",
                 i);
        int rc = cons_term(x, t, (int32_t)i, field);
        if (rc)
            return rc;
    }
    x->c->nrequired = (int32_t)json_array_size(req);
    size_t np = json_array_size(pref);
    if (np && !(x->c->weight = drv_calloc(np, sizeof *x->c->weight)))
        return drv_fail(x->d, DRV_ENOMEM, "out of memory");
    json_array_foreach(pref, i, t)
    {
        json_t *w = json_object_get(t, "weight");
        if (!json_is_integer(w) || json_integer_value(w) < 1 || json_integer_value(w) > 100)
            return drv_fail(x->d, DRV_EPARSE,
                            "%s: %s.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuring"
                            "Execution[%zu].weight: expected an integer in [1, 100]",
                            x->who, x->path, i);
        x->c->weight[i] = (int32_t)json_integer_value(w);
        snprintf(field, sizeof field,
                 "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%zu]."
                 "preference",
                 i);
        int rc =
            cons_term(x, json_object_get(t, "preference"), x->c->nrequired + (int32_t)i, field);
        if (rc)
            return rc;
        x->c->npreferred++;
    }
    return 0;
}

static int cons_tolerations(cons_ctx *x, json_t *tols)
{
    size_t n = json_array_size(tols), i;
    json_t *t;
    if (n && !(x->c->tol = drv_calloc(n, sizeof *x->c->tol)))
        return drv_fail(x->d, DRV_ENOMEM, "out of memory");
    json_array_foreach(tols, i, t)
    {
        const char *key = json_string_value(json_object_get(t, "key"));
        const char *op = json_string_value(json_object_get(t, "operator"));
        const char *val = json_string_value(json_object_get(t, "value"));
        const char *eff = json_string_value(json_object_get(t, "effect"));
        drv_toleration *o = &x->c->tol[i];
        if (op && strcmp(op, "Exists") != 0 && strcmp(op, "Equal") != 0)
            return drv_fail(x->d, DRV_EPARSE,
                            "%s: %s.tolerations[%zu].operator: expected Exists or Equal, found "
                            "'%s'",
                            x->who, x->path, i, op);
        o->exists = op && !strcmp(op, "Exists");
        if (o->exists && val && *val)
            return drv_fail(x->d, DRV_EPARSE,
                            "%s: %s.tolerations[%zu].value: must be empty with operator Exists",
                            x->who, x->path, i);
        if (!o->exists && (!key || !*key))
            return drv_fail(x->d, DRV_EPARSE,
                            "%s: %s.tolerations[%zu].key: an empty key needs operator Exists",
                            x->who, x->path, i);
        o->effect = eff && *eff ? drv_effect_parse(eff) : DRV_EFFECT_ANY;
        if (o->effect < 0)
            return drv_fail(x->d, DRV_EPARSE,
                            "%s: %s.tolerations[%zu].effect: expected NoSchedule, "
                            "PreferNoSchedule, NoExecute or empty, found '%s'",
                            x->who, x->path, i, eff);
        int rc = cons_intern(x, key, &o->key);
        if (!rc)
            rc = cons_intern(x, val, &o->value);
        if (rc)
            return rc;
        x->c->ntol++;
    }
    return 0;
}

int drv_kube_decode_constraint(json_t *podspec, drv_strtab *names, const char *who,
                               const char *path, drv_constraint *out, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    cons_ctx x = {names, who, path, out, 0, d};
    json_t *sel = json_object_get(podspec, "nodeSelector");
    json_t *aff = json_object_get(podspec, "affinity");
    json_t *tol = json_object_get(podspec, "tolerations");
    int rc = 0;
    if ((sel && !json_is_object(sel)) || (tol && !json_is_array(tol)) ||
        (aff && !json_is_object(aff)))
        rc = drv_fail(d, DRV_EPARSE, "%s: %s.%s: expected a %s", who, path,
                      sel && !json_is_object(sel)  ? "nodeSelector"
                      : tol && !json_is_array(tol) ? "tolerations"
                                                   : "affinity",
                      tol && !json_is_array(tol) ? "list" : "map");
    size_t ns = json_object_size(sel);
    if (!rc && ns && !(out->selector = drv_calloc(ns, sizeof *out->selector)))
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
    const char *k;
    json_t *v;
    json_object_foreach(sel, k, v)
    {
        if (rc)
            break;
        if (!json_is_string(v)) {
            rc = drv_fail(d, DRV_EPARSE, "%s: %s.nodeSelector.%s: expected a string", who, path, k);
            break;
        }
        drv_label *l = &out->selector[out->nselector];
        if (!(rc = cons_intern(&x, k, &l->key)) &&
            !(rc = cons_intern(&x, json_string_value(v), &l->value)))
            out->nselector++;
    }
    if (!rc)
        rc = cons_affinity(&x, json_object_get(aff, "nodeAffinity"));
    if (!rc)
        rc = cons_tolerations(&x, tol);
    if (rc)
        drv_constraint_fini(out);
    return rc;
}

/* ---- PriorityClass, Queue ------------------------------------------------------------------ */

int drv_kube_decode_priorityclass(json_t *obj, drv_strtab *names, drv_kpriorityclass *out,
                                  drv_diag *d)
{
    memset(out, 0, sizeof *out);
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    if (!name)
        return drv_fail(d, DRV_EPARSE, "priorityclass: metadata.name: missing");
    snprintf(out->rv, sizeof out->rv, "%s", rv ? rv : "");
    json_t *v = json_object_get(obj, "value");
    /* (the API server refuses values above one billion: those are the system's classes) */
    if (!json_is_integer(v) || json_integer_value(v) < -2147483648LL ||
        json_integer_value(v) > 2000001000LL)
        return drv_fail(d, DRV_EPARSE, "priorityclass %s: value: expected a 32-bit integer", name);
    out->value = (int32_t)json_integer_value(v);
    out->global_default = json_is_true(json_object_get(obj, "globalDefault"));
    json_t *mr = json_object_get(json_object_get(meta, "annotations"), DRV_ANN_MIN_RUNTIME);
    if (mr) {
        const char *t = json_string_value(mr);
        char *end = NULL;
        out->min_runtime = t ? strtod(t, &end) : -1;
        if (!t || !*t || *end || !(out->min_runtime >= 0) || out->min_runtime > DRV_MAX_MIN_RUNTIME)
            return drv_fail(d, DRV_EPARSE,
                            "priorityclass %s: metadata.annotations." DRV_ANN_MIN_RUNTIME
                            ": expected seconds in [0, %.0f] as a string, such as \"3600\"",
                            name, DRV_MAX_MIN_RUNTIME);
    }
    if ((out->name = drv_strtab_intern(names, name)) < 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    return 0;
}

/* A map of quantities (cpu, memory, nvidia.com/gpu) into r; a dimension absent is `dflt`. */
static int res_map(json_t *m, const char *who, const char *field, int64_t dflt, drv_res *r,
                   drv_diag *d)
{
    static const char *keys[] = {"cpu", "memory", "nvidia.com/gpu"};
    int64_t *dst[] = {&r->cpu, &r->mem, &r->gpu};
    if (m && !json_is_object(m))
        return drv_fail(d, DRV_EPARSE, "%s: %s: expected a map of quantities", who, field);
    for (int k = 0; k < 3; k++) {
        json_t *q = json_object_get(m, keys[k]);
        *dst[k] = dflt;
        if (!q)
            continue;
        char num[32];
        const char *s = json_string_value(q);
        if (!s && json_is_integer(q)) {
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(q));
            s = num;
        }
        int rc = !s       ? DRV_EINVAL
                 : k == 0 ? drv_kube_quantity_milli(s, dst[k])
                          : drv_kube_quantity(s, dst[k]);
        if (rc)
            return drv_fail(d, DRV_EPARSE, "%s: %s.%s: expected a quantity, found '%s'", who, field,
                            keys[k], s ? s : "(not a string)");
    }
    return 0;
}

/* A Queue's spec.namespaces (absent: nns -1, every namespace): a list of at most
 * DRV_QUEUE_MAX_NAMESPACES namespace names. */
static int queue_namespaces(json_t *list, const char *who, drv_strtab *names, drv_kqueue *out,
                            drv_diag *d)
{
    out->nns = -1;
    if (!list)
        return 0;
    if (!json_is_array(list) || json_array_size(list) > DRV_QUEUE_MAX_NAMESPACES)
        return drv_fail(d, DRV_EPARSE, "%s: spec.namespaces: expected a list of at most %d names",
                        who, DRV_QUEUE_MAX_NAMESPACES);
    out->nns = 0;
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        char where[340];
        snprintf(where, sizeof where, "%s: spec.namespaces[%zu]", who, i);
        const char *ns = json_string_value(v);
        int rc = drv_name_check(d, where, ns ? ns : "", 63);
        if (rc)
            return rc == DRV_ENOMEM ? rc : DRV_EPARSE;
        if ((out->ns[out->nns++] = drv_strtab_intern(names, ns)) < 0)
            return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    return 0;
}

int drv_kube_decode_queue(json_t *obj, drv_strtab *names, drv_kqueue *out, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    if (!name)
        return drv_fail(d, DRV_EPARSE, "queue: metadata.name: missing");
    snprintf(out->rv, sizeof out->rv, "%s", rv ? rv : "");
    char who[300];
    snprintf(who, sizeof who, "queue %s", name);
    json_t *w = json_object_get(spec, "weight");
    out->weight = w ? json_number_value(w) : 1;
    if (w && (!json_is_number(w) || !(out->weight > 0) || out->weight > 1e6))
        return drv_fail(d, DRV_EPARSE, "%s: spec.weight: expected a number in (0, 1e6]", who);
    json_t *co = json_object_get(spec, "cohort");
    if (co && !json_is_string(co))
        return drv_fail(d, DRV_EPARSE, "%s: spec.cohort: expected a string", who);
    int rc = res_map(json_object_get(spec, "nominalQuota"), who, "spec.nominalQuota", DRV_UNLIMITED,
                     &out->quota, d);
    if (!rc)
        rc = res_map(json_object_get(spec, "borrowingLimit"), who, "spec.borrowingLimit",
                     DRV_UNLIMITED, &out->borrow, d);
    if (!rc)
        rc = queue_namespaces(json_object_get(spec, "namespaces"), who, names, out, d);
    json_t *ul = json_object_get(spec, "userFromLabel");
    if (!rc && ul && !json_is_boolean(ul))
        rc = drv_fail(d, DRV_EPARSE, "%s: spec.userFromLabel: expected true or false", who);
    out->user_label = json_is_true(ul);
    json_t *mr = json_object_get(spec, "minRuntimeSeconds");
    out->min_runtime = json_is_number(mr) ? json_number_value(mr) : 0;
    if (!rc && mr &&
        (!json_is_number(mr) || !(out->min_runtime >= 0) || out->min_runtime > DRV_MAX_MIN_RUNTIME))
        rc = drv_fail(d, DRV_EPARSE, "%s: spec.minRuntimeSeconds: expected seconds in [0, %.0f]",
                      who, (double)DRV_MAX_MIN_RUNTIME);
    if (rc)
        return rc;
    if ((out->name = drv_strtab_intern(names, name)) < 0 ||
        (json_string_length(co) &&
         (out->cohort = drv_strtab_intern(names, json_string_value(co))) < 0))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    return 0;
}

/* A quantity as the API writes it: CPU in millicores ("1500m"), the others whole. */
static json_t *quantity_json(int64_t v, bool milli)
{
    char buf[32];
    if (milli && v % 1000)
        snprintf(buf, sizeof buf, "%lldm", (long long)v);
    else
        snprintf(buf, sizeof buf, "%lld", (long long)(milli ? v / 1000 : v));
    return json_string(buf);
}

int drv_kube_queue_set_status(json_t *obj, int32_t pending, int32_t admitted, drv_res used,
                              double usage)
{
    json_t *st = json_object_get(obj, "status");
    if (!json_is_object(st)) {
        if (!(st = json_object()) || json_object_set_new(obj, "status", st) != 0)
            return DRV_ENOMEM;
    }
    json_t *u =
        json_pack("{s:o, s:o, s:o}", "cpu", quantity_json(used.cpu, true), "memory",
                  quantity_json(used.mem, false), "nvidia.com/gpu", quantity_json(used.gpu, false));
    if (!u || json_object_set_new(st, "used", u) != 0 ||
        json_object_set_new(st, "pending", json_integer(pending)) != 0 ||
        json_object_set_new(st, "admitted", json_integer(admitted)) != 0)
        return DRV_ENOMEM;
    if (usage < 0) {
        if (usage < -1.5 && json_object_set_new(st, "usage", json_null()) != 0)
            return DRV_ENOMEM;
        return 0;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.3f", usage);
    return json_object_set_new(st, "usage", json_string(buf)) != 0 ? DRV_ENOMEM : 0;
}

/* ---- Kueue's topology annotations (a TrainingJob's role templates, PodGroup pods) ---- */

const char *const drv_kube_topology_keys[3] = {"kueue.x-k8s.io/podset-unconstrained-topology",
                                               "kueue.x-k8s.io/podset-required-topology",
                                               "kueue.x-k8s.io/podset-preferred-topology"};

int drv_kube_topology(json_t *ann, drv_strtab *names, const char *who, const char *path,
                      int8_t *mode_out, int32_t *key_out, drv_diag *d)
{
    int mode = -1;
    const char *val = NULL;
    *mode_out = -1;
    *key_out = 0;
    for (int m = 0; m < 3; m++) {
        const char *v = json_string_value(json_object_get(ann, drv_kube_topology_keys[m]));
        if (!v)
            continue;
        if (mode >= 0)
            return drv_fail(d, DRV_EPARSE, "%s: %s: %s and %s: expected one topology annotation",
                            who, path, drv_kube_topology_keys[mode], drv_kube_topology_keys[m]);
        mode = m;
        val = v;
    }
    if (mode < 0)
        return 0;
    if (!*val || (mode == DRV_TOPO_NONE && strcmp(val, "true") != 0))
        return drv_fail(d, DRV_EPARSE, "%s: %s.%s: expected %s, found \"%s\"", who, path,
                        drv_kube_topology_keys[mode],
                        mode == DRV_TOPO_NONE ? "\"true\"" : "a topology level's node label key",
                        val);
    if (mode != DRV_TOPO_NONE && drv_kube_intern(names, val, key_out))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    *mode_out = (int8_t)mode;
    return 0;
}

/* ---- a TrainingJob's run words ------------------------------------------------------------- */

/* The index of s among names[0..n) (exact case), or -1. */
static int word_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

int drv_restart_parse(const char *s, drv_restart *out)
{
    static const char *const names[] = {"Never", "OnFailure", "ExitCode", "Always"};
    int i = word_index(s, names, 4);
    if (i < 0)
        return DRV_EINVAL;
    *out = (drv_restart)i;
    return 0;
}

int drv_clean_pods_parse(const char *s, drv_clean_pods *out)
{
    static const char *const names[] = {"Running", "All", "None"};
    int i = word_index(s, names, 3);
    if (i < 0)
        return DRV_EINVAL;
    *out = (drv_clean_pods)i;
    return 0;
}
