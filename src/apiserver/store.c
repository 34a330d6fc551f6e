/*
 * store.c - the test API server's objects: the store (per resource type, key -> object) and
 * the event window every write appends to (mutex held), reads of one object, deletion (graceful,
 * foreground, with finalizers) and the garbage collector that follows owner references.
 */
#include "apiserver_int.h"

static void push_event(drv_apiserver *s, int rt, const char *type, json_t *obj, json_t *prev)
{
    srv_audit_event(s, rt, type, obj);
    if (s->n == s->cap) {
        struct wevent *old = &s->ring[s->head];
        s->compacted = old->rv;
        json_decref(old->obj);
        json_decref(old->prev);
        s->head = (s->head + 1) % s->cap;
        s->n--;
    }
    struct wevent *e = &s->ring[(s->head + s->n) % s->cap];
    e->rv = s->rv;
    e->rt = rt;
    e->type = type;
    e->obj = json_deep_copy(obj);
    e->prev = prev ? json_deep_copy(prev) : NULL;
    s->n++;
    pthread_cond_broadcast(&s->cv);
}

static void set_rv(json_t *o, uint64_t rv)
{
    char b[32];
    snprintf(b, sizeof b, "%llu", (unsigned long long)rv);
    json_object_set_new(srv_meta(o), "resourceVersion", json_string(b));
}

/* Stores o (a new reference is taken) under key and records the event. */
void srv_store_put(drv_apiserver *s, int rt, const char *key, json_t *o, json_t *prev)
{
    json_incref(prev); /* the store's reference to prev is dropped by the replacement */
    s->rv++;
    set_rv(o, s->rv);
    if (!json_object_get(s->store[rt], key))
        s->sorted_ok[rt] = false; /* a new key */
    json_object_set(s->store[rt], key, o);
    push_event(s, rt, prev ? "MODIFIED" : "ADDED", o, prev);
    json_decref(prev);
}

static void store_del(drv_apiserver *s, int rt, const char *key)
{
    json_t *o = json_incref(json_object_get(s->store[rt], key));
    if (!o)
        return;
    json_object_del(s->store[rt], key);
    s->sorted_ok[rt] = false;
    s->rv++;
    json_t *last = json_deep_copy(o);
    set_rv(last, s->rv);
    push_event(s, rt, "DELETED", last, o);
    json_decref(last);
    json_decref(o);
}

bool srv_ns_exists(drv_apiserver *s, const char *ns)
{
    return json_object_get(s->store[R_NAMESPACES], ns) != NULL;
}

void srv_new_uid(drv_apiserver *s, char *out, size_t n)
{
    s->uid_seq++;
    snprintf(out, n, "00000000-0000-4000-8000-%012llx", (unsigned long long)s->uid_seq);
}

/* Runs pending foreground deletions accepted at least two requests ago: dependents first
 * (objects whose ownerReferences name the owner's uid), then the owner, as the garbage
 * collector does. The delay lets a test observe the owner while it is being deleted. */
void srv_run_gc(drv_apiserver *s)
{
    for (int i = 0; i < s->nfg;) {
        struct fgdel *f = &s->fg[i];
        if (s->seq - f->seq < 2) {
            i++;
            continue;
        }
        json_t *owner = json_object_get(s->store[f->rt], f->key);
        const char *uid = owner ? srv_mstr(owner, "uid") : NULL;
        for (int rt = 0; uid && rt < R_N; rt++) {
            size_t nk = 0;
            const char **keys = srv_sorted_keys(s->store[rt], &nk);
            char **dead = keys ? drv_calloc(nk + 1, sizeof *dead) : NULL;
            size_t nd = 0;
            for (size_t k = 0; dead && k < nk; k++) {
                json_t *refs = json_object_get(
                    json_object_get(json_object_get(s->store[rt], keys[k]), "metadata"),
                    "ownerReferences");
                size_t ri;
                json_t *ref;
                json_array_foreach(refs, ri, ref)
                {
                    const char *ruid = json_string_value(json_object_get(ref, "uid"));
                    if (ruid && !strcmp(ruid, uid)) {
                        dead[nd++] = drv_strdup(keys[k]);
                        break;
                    }
                }
            }
            for (size_t k = 0; k < nd; k++) {
                if (dead[k])
                    store_del(s, rt, dead[k]);
                drv_free(dead[k]);
            }
            drv_free(dead);
            drv_free(keys);
        }
        if (owner)
            store_del(s, f->rt, f->key);
        drv_free(f->key);
        s->fg[i] = s->fg[--s->nfg];
    }
}

json_t *srv_lookup(drv_apiserver *s, const struct route *rt, char *key, size_t kn)
{
    srv_make_key(key, kn, rt->rt, rt->ns, rt->name);
    return json_object_get(s->store[rt->rt], key);
}

void srv_do_get(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt, struct resp *r)
{
    char key[600];
    json_t *o = srv_lookup(s, rt, key, sizeof key);
    if (!o) {
        srv_not_found_obj(r, rt->rt, rt->name);
        return;
    }
    if (srv_wants_table(c)) {
        json_t *one = json_array();
        json_array_append(one, o);
        char rvb[32];
        snprintf(rvb, sizeof rvb, "%llu", (unsigned long long)s->rv);
        srv_set_json(r, 200,
                     srv_make_table(rt->rt, one, json_pack("{s:s}", "resourceVersion", rvb), true));
        json_decref(one);
        return;
    }
    srv_set_json(r, 200, json_deep_copy(o));
}

void srv_do_delete(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt,
                   const char *body, size_t blen, struct resp *r)
{
    int t = rt->rt;
    char key[600];
    json_t *o = srv_lookup(s, rt, key, sizeof key);
    if (!o) {
        srv_not_found_obj(r, t, rt->name);
        return;
    }
    json_t *opts = blen ? json_loadb(body, blen, 0, NULL) : NULL;
    long grace = -1;
    const char *gq = srv_qarg(c, "gracePeriodSeconds");
    if (gq)
        grace = strtol(gq, NULL, 10);
    else if (json_is_integer(json_object_get(opts, "gracePeriodSeconds")))
        grace = (long)json_integer_value(json_object_get(opts, "gracePeriodSeconds"));
    char propb[32];
    const char *pq = srv_qarg(c, "propagationPolicy");
    if (!pq)
        pq = json_string_value(json_object_get(opts, "propagationPolicy"));
    snprintf(propb, sizeof propb, "%s", pq ? pq : "");
    const char *prop = propb;
    json_t *pre_rv = srv_path_get(opts, "preconditions.resourceVersion");
    if (json_is_string(pre_rv) &&
        strcmp(json_string_value(pre_rv),
               srv_str_or(srv_path_get(o, "metadata.resourceVersion"), ""))) {
        json_decref(opts);
        srv_conflict(r, t, rt->name);
        return;
    }
    /* A uid precondition protects an object created again under the same name (kubelets
     * confirm a graceful pod deletion this way); kube-apiserver answers 409 Conflict. */
    json_t *pre_uid = srv_path_get(opts, "preconditions.uid");
    const char *uid = srv_str_or(srv_path_get(o, "metadata.uid"), "");
    if (json_is_string(pre_uid) && strcmp(json_string_value(pre_uid), uid)) {
        srv_set_status(r, 409, "Conflict", rt->name, SRV_TYPES[t].group, SRV_TYPES[t].plural, false,
                       "Operation cannot be fulfilled on %s \"%s\": Precondition failed: UID in "
                       "precondition: %s, UID in object meta: %s",
                       SRV_TYPES[t].plural, rt->name, json_string_value(pre_uid), uid);
        json_decref(opts);
        return;
    }
    json_decref(opts);
    if (t == R_PODS) {
        if (grace < 0)
            grace = (long)json_integer_value(srv_path_get(o, "spec.terminationGracePeriodSeconds"));
        const char *node = json_string_value(srv_path_get(o, "spec.nodeName"));
        if (grace > 0 && node && *node) {
            if (srv_mstr(o, "deletionTimestamp")) {
                srv_set_json(r, 200, json_deep_copy(o));
                return;
            }
            json_t *nw = json_deep_copy(o);
            char ts[32];
            srv_now_rfc3339(ts, sizeof ts, grace);
            json_object_set_new(srv_meta(nw), "deletionTimestamp", json_string(ts));
            json_object_set_new(srv_meta(nw), "deletionGracePeriodSeconds", json_integer(grace));
            srv_store_put(s, t, key, nw, o);
            srv_set_json(r, 200, nw);
            return;
        }
        json_t *last = json_deep_copy(o);
        store_del(s, t, key);
        srv_set_json(r, 200, last);
        return;
    }
    if (prop && !strcmp(prop, "Foreground")) {
        if (!srv_mstr(o, "deletionTimestamp")) {
            json_t *nw = json_deep_copy(o);
            char ts[32];
            srv_now_rfc3339(ts, sizeof ts, 0);
            json_object_set_new(srv_meta(nw), "deletionTimestamp", json_string(ts));
            json_object_set_new(srv_meta(nw), "deletionGracePeriodSeconds", json_integer(0));
            json_object_set_new(srv_meta(nw), "finalizers", json_pack("[s]", "foregroundDeletion"));
            srv_store_put(s, t, key, nw, o);
            o = nw;
            struct fgdel *fg = drv_realloc(s->fg, (size_t)(s->nfg + 1) * sizeof *fg);
            if (fg) {
                s->fg = fg;
                s->fg[s->nfg++] = (struct fgdel){t, drv_strdup(key), s->seq};
            }
            srv_set_json(r, 200, nw);
            return;
        }
        srv_set_json(r, 200, json_deep_copy(o));
        return;
    }
    json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:{s:s}}", "kind", "Status", "apiVersion", "v1",
                           "metadata", "status", "Success", "details", "name", rt->name);
    json_t *d = json_object_get(st, "details");
    if (*SRV_TYPES[t].group)
        json_object_set_new(d, "group", json_string(SRV_TYPES[t].group));
    json_object_set_new(d, "kind", json_string(SRV_TYPES[t].plural));
    json_object_set_new(d, "uid", json_string(srv_mstr(o, "uid")));
    if (t == R_CRDS && !strcmp(rt->name, "trainingjobs.drover.dev")) {
        s->crd = false;
        json_object_clear(s->store[R_TJ]);
        s->sorted_ok[R_TJ] = false;
    }
    if (t == R_CRDS && !strcmp(rt->name, PG_CRD)) {
        s->pg_crd = false;
        json_object_clear(s->store[R_PG]);
        s->sorted_ok[R_PG] = false;
    }
    if (t == R_CRDS && !strcmp(rt->name, QUEUE_CRD)) {
        s->queue_crd = false;
        json_object_clear(s->store[R_QUEUE]);
    }
    store_del(s, t, key);
    srv_set_json(r, 200, st);
}
