/*
 * writes.c - the test API server's writes: creation (validated, defaulted as kube-apiserver
 * does), update and patch (resourceVersion preconditions, status kept apart from spec,
 * generation bumped), pods/binding, and pods/resize (Kubernetes >= 1.33: QoS class kept).
 */
#include "apiserver_int.h"

/* Drops from b what a lacks (recursively): fields a real server would have defaulted. */
static void prune_defaults(json_t *a, json_t *b)
{
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(b, tmp, k, v)
        {
            json_t *av = json_object_get(a, k);
            if (!av)
                json_object_del(b, k);
            else
                prune_defaults(av, v);
        }
    } else if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++)
            prune_defaults(json_array_get(a, i), json_array_get(b, i));
    }
}

/* Type-specific validation of a new or updated object. old is NULL on create. 0 = valid. */
static int validate(drv_apiserver *s, int rt, json_t *o, json_t *old, const char *ns,
                    struct resp *r)
{
    (void)s;
    const char *name = srv_mstr(o, "name");
    if (rt == R_TJ) {
        const char *k;
        json_t *v;
        json_object_foreach(srv_path_get(o, "spec.replicaSpecs"), k, v)
        {
            json_t *rep = json_object_get(v, "replicas");
            if (json_is_integer(rep) && json_integer_value(rep) < 0) {
                char field[300], msg[512];
                snprintf(field, sizeof field, "spec.replicaSpecs.%s.replicas", k);
                snprintf(msg, sizeof msg,
                         "Invalid value: %lld: %s in body should be greater than or equal to 0",
                         (long long)json_integer_value(rep), field);
                srv_set_status(r, 422, "Invalid", name, "drover.dev", "TrainingJob", false,
                               "TrainingJob.drover.dev \"%s\" is invalid: %s: %s", name, field,
                               msg);
                json_t *body = json_loads(r->body, 0, NULL);
                json_object_set_new(json_object_get(body, "details"), "causes",
                                    json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueInvalid",
                                              "message", msg, "field", field));
                free(r->body);
                srv_set_json(r, 422, body);
                return -1;
            }
        }
    }
    if (rt == R_EVENTS) {
        const char *ins = json_string_value(srv_path_get(o, "involvedObject.namespace"));
        if (ins && *ins && ns && strcmp(ins, ns)) {
            srv_set_status(
                r, 422, "Invalid", name, NULL, "Event", false,
                "Event \"%s\" is invalid: involvedObject.namespace: Invalid value: \"%s\": "
                "does not match event.namespace",
                name, ins);
            json_t *body = json_loads(r->body, 0, NULL);
            json_object_set_new(json_object_get(body, "details"), "causes",
                                json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueInvalid",
                                          "message",
                                          "Invalid value: \"kube-system\": does not match "
                                          "event.namespace",
                                          "field", "involvedObject.namespace"));
            free(r->body);
            srv_set_json(r, 422, body);
            return -1;
        }
    }
    if (rt == R_PODS && old) {
        /* Only images, activeDeadlineSeconds, tolerations and terminationGracePeriodSeconds may
         * change in a pod spec after creation. */
        json_t *a = json_deep_copy(json_object_get(old, "spec"));
        json_t *b = json_deep_copy(json_object_get(o, "spec"));
        json_t *specs[2] = {a, b};
        for (int k = 0; k < 2; k++) {
            size_t i;
            json_t *ct;
            json_array_foreach(json_object_get(specs[k], "containers"), i, ct)
                json_object_del(ct, "image");
            json_object_del(specs[k], "activeDeadlineSeconds");
            json_object_del(specs[k], "tolerations");
            json_object_del(specs[k], "terminationGracePeriodSeconds");
        }
        /* Fields the real server defaults (volumes, dnsPolicy...) may arrive in a full PUT. */
        prune_defaults(a, b);
        bool same = json_equal(a, b);
        json_decref(a);
        json_decref(b);
        if (!same) {
            srv_set_status(
                r, 422, "Invalid", name, NULL, "Pod", false,
                "Pod \"%s\" is invalid: spec: Forbidden: pod updates may not change fields "
                "other than `spec.containers[*].image`, `spec.initContainers[*].image`, "
                "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to "
                "existing tolerations) or `spec.terminationGracePeriodSeconds`",
                name);
            return -1;
        }
    }
    return 0;
}

static void apply_defaults(drv_apiserver *s, int rt, json_t *o)
{
    if (rt == R_PODS) {
        json_t *spec = json_object_get(o, "spec");
        if (json_is_object(spec)) {
            if (!json_object_get(spec, "schedulerName"))
                json_object_set_new(spec, "schedulerName", json_string("default-scheduler"));
            if (!json_object_get(spec, "restartPolicy"))
                json_object_set_new(spec, "restartPolicy", json_string("Always"));
            if (!json_object_get(spec, "terminationGracePeriodSeconds"))
                json_object_set_new(spec, "terminationGracePeriodSeconds", json_integer(30));
        }
        json_object_set_new(o, "status",
                            json_pack("{s:s,s:s}", "phase", "Pending", "qosClass", "BestEffort"));
    } else if (rt == R_NAMESPACES) {
        json_object_set_new(o, "spec", json_pack("{s:[s]}", "finalizers", "kubernetes"));
        json_object_set_new(o, "status", json_pack("{s:s}", "phase", "Active"));
        json_t *l = json_object_get(srv_meta(o), "labels");
        if (!json_is_object(l)) {
            l = json_object();
            json_object_set_new(srv_meta(o), "labels", l);
        }
        json_object_set_new(l, "kubernetes.io/metadata.name", json_string(srv_mstr(o, "name")));
    } else if (rt == R_CRDS) {
        char ts[32];
        srv_now_rfc3339(ts, sizeof ts, 0);
        json_t *names = json_deep_copy(srv_path_get(o, "spec.names"));
        json_object_set_new(
            o, "status",
            json_pack("{s:[{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:s}],s:o,s:[s]}", "conditions",
                      "type", "NamesAccepted", "status", "True", "lastTransitionTime", ts, "reason",
                      "NoConflicts", "message", "no conflicts found", "type", "Established",
                      "status", "True", "lastTransitionTime", ts, "reason", "InitialNamesAccepted",
                      "message", "the initial names have been accepted", "acceptedNames",
                      names ? names : json_object(), "storedVersions", "v1alpha1"));
        if (!strcmp(srv_str_or(srv_path_get(o, "metadata.name"), ""), "trainingjobs.drover.dev"))
            s->crd = true;
        if (!strcmp(srv_str_or(srv_path_get(o, "metadata.name"), ""), PG_CRD))
            s->pg_crd = true;
        if (!strcmp(srv_str_or(srv_path_get(o, "metadata.name"), ""), QUEUE_CRD))
            s->queue_crd = true;
    } else if (rt == R_NODES) {
        /* The TaintNodesByCondition admission plugin taints a new node not-ready (NoSchedule)
         * until the node lifecycle controller sees it Ready (02-node-create). */
        json_t *spec = json_object_get(o, "spec");
        if (!json_is_object(spec)) {
            spec = json_object();
            json_object_set_new(o, "spec", spec);
        }
        json_t *taints = json_object_get(spec, "taints");
        if (!json_is_array(taints)) {
            taints = json_array();
            json_object_set_new(spec, "taints", taints);
        }
        bool tainted = false;
        size_t ti;
        json_t *tv;
        json_array_foreach(taints, ti, tv)
        {
            if (!strcmp(srv_str_or(json_object_get(tv, "key"), ""), "node.kubernetes.io/not-ready"))
                tainted = true;
        }
        if (!tainted)
            json_array_append_new(taints,
                                  json_pack("{s:s,s:s}", "key", "node.kubernetes.io/not-ready",
                                            "effect", "NoSchedule"));
        /* A node's status is kept on create (02-node-create: what kubelet registers with), with
         * the empty daemon endpoint and node info a kubelet fills in later. */
        json_t *st = json_object_get(o, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(o, "status", st);
        }
        if (!json_object_get(st, "daemonEndpoints"))
            json_object_set_new(st, "daemonEndpoints",
                                json_pack("{s:{s:i}}", "kubeletEndpoint", "Port", 0));
        if (!json_object_get(st, "nodeInfo"))
            json_object_set_new(st, "nodeInfo",
                                json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "machineID",
                                          "", "systemUUID", "", "bootID", "", "kernelVersion", "",
                                          "osImage", "", "containerRuntimeVersion", "",
                                          "kubeletVersion", "", "kubeProxyVersion", "",
                                          "operatingSystem", "", "architecture", ""));
    } else if (SRV_TYPES[rt].status) {
        json_object_del(o, "status"); /* custom resources: status only through /status */
    }
}

void srv_do_create(drv_apiserver *s, const struct route *rt, const char *body, size_t blen,
                   struct resp *r)
{
    int t = rt->rt;
    json_error_t je;
    json_t *o = json_loadb(body, blen, 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                       "couldn't get version/kind; json parse error: %s", je.text);
        return;
    }
    json_t *m = srv_meta(o);
    const char *bns = json_string_value(json_object_get(m, "namespace"));
    if (SRV_TYPES[t].namespaced) {
        if (bns && *bns && strcmp(bns, rt->ns)) {
            srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                           "the namespace of the provided object does not match the namespace sent "
                           "on the request");
            json_decref(o);
            return;
        }
        if (!srv_ns_exists(s, rt->ns)) {
            srv_set_status(r, 404, "NotFound", rt->ns, NULL, "namespaces", false,
                           "namespaces \"%s\" not found", rt->ns);
            json_decref(o);
            return;
        }
        json_object_set_new(m, "namespace", json_string(rt->ns));
    } else {
        json_object_del(m, "namespace");
    }
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *gen = json_string_value(json_object_get(m, "generateName"));
    if ((!name || !*name) && gen && *gen) {
        char nb[300];
        snprintf(nb, sizeof nb, "%s%05llx", gen, (unsigned long long)(s->uid_seq + 1) & 0xfffff);
        json_object_set_new(m, "name", json_string(nb));
        name = srv_mstr(o, "name");
    }
    if (!name || !*name) {
        srv_set_status(r, 422, "Invalid", NULL, SRV_TYPES[t].group, SRV_TYPES[t].kind, false,
                       "%s \"\" is invalid: metadata.name: Required value: name or generateName is "
                       "required",
                       SRV_TYPES[t].kind);
        json_decref(o);
        return;
    }
    char key[600];
    srv_make_key(key, sizeof key, t, rt->ns, name);
    if (json_object_get(s->store[t], key)) {
        const char *g = SRV_TYPES[t].group;
        if (*g)
            srv_set_status(r, 409, "AlreadyExists", name, g, SRV_TYPES[t].plural, false,
                           "%s.%s \"%s\" already exists", SRV_TYPES[t].plural, g, name);
        else
            srv_set_status(r, 409, "AlreadyExists", name, NULL, SRV_TYPES[t].plural, false,
                           "%s \"%s\" already exists", SRV_TYPES[t].plural, name);
        json_decref(o);
        return;
    }
    if (validate(s, t, o, NULL, rt->ns, r)) {
        json_decref(o);
        return;
    }
    json_object_set_new(o, "kind", json_string(SRV_TYPES[t].kind));
    json_object_set_new(o, "apiVersion", json_string(srv_api_version(t)));
    char uid[64], ts[32];
    srv_new_uid(s, uid, sizeof uid);
    srv_now_rfc3339(ts, sizeof ts, 0);
    json_object_set_new(m, "uid", json_string(uid));
    json_object_set_new(m, "creationTimestamp", json_string(ts));
    json_object_del(m, "deletionTimestamp");
    json_object_del(m, "resourceVersion");
    if (SRV_TYPES[t].generation)
        json_object_set_new(m, "generation", json_integer(1));
    apply_defaults(s, t, o);
    srv_store_put(s, t, key, o, NULL);
    srv_set_json(r, 201, json_deep_copy(o));
    json_decref(o);
}

/* Common tail of PUT and PATCH: checks the precondition, keeps what the subresource rules keep,
 * validates, bumps generation, stores. nw is consumed. */

/* A pod's QoS class computed from its spec, as kube-apiserver's ComputePodQOS: BestEffort when
 * no container requests or limits cpu or memory; Guaranteed when every container limits both
 * and its requests (absent: defaulted to the limits) equal them; Burstable otherwise. (Equal
 * means the same quantity string: "1" and "1000m" differ here, unlike the real server.) */
static const char *qos_class(json_t *spec)
{
    static const char *const res[] = {"cpu", "memory"};
    bool any = false, guaranteed = true;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        json_t *rs = json_object_get(c, "resources");
        json_t *req = json_object_get(rs, "requests"), *lim = json_object_get(rs, "limits");
        for (int k = 0; k < 2; k++) {
            json_t *q = json_object_get(req, res[k]), *l = json_object_get(lim, res[k]);
            any |= q || l;
            guaranteed &= l && (!q || json_equal(q, l));
        }
    }
    return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

/* Whether a resize changes a resource other than cpu and memory in one container's requests
 * or limits (which) from a to b, or removes one: the message, or NULL. */
static const char *resize_forbidden(json_t *a, json_t *b, const char *which)
{
    const char *k;
    json_t *v;
    json_object_foreach(a, k, v)
    {
        json_t *w = json_object_get(b, k);
        if (!w)
            return !strcmp(which, "limits") ? "resource limits cannot be removed"
                                            : "resource requests cannot be removed";
        if (!json_equal(v, w) && strcmp(k, "cpu") && strcmp(k, "memory"))
            return "only cpu and memory resources are mutable";
    }
    json_object_foreach(b, k, v)
    {
        if (!json_object_get(a, k) && strcmp(k, "cpu") && strcmp(k, "memory"))
            return "only cpu and memory resources are mutable";
    }
    return NULL;
}

/* The pod after a write to pods/NAME/resize, or NULL with r set (422): as kube-apiserver's
 * resize strategy, only spec.containers[*].resources are taken from the new object (matched
 * by container name; anything else it changes is dropped), then ValidatePodResize's rules:
 * only cpu and memory change, none is removed, and the QoS class stays. The status is left as
 * it is: since 1.33 the API server no longer writes status.resize (the kubelet reports the
 * resize in the PodResizePending / PodResizeInProgress conditions; there is none here). */
static json_t *resized(json_t *old, json_t *nw, const char *name, struct resp *r)
{
    json_t *out = json_deep_copy(old);
    json_t *ospec = json_object_get(out, "spec");
    size_t i, k;
    json_t *c, *n;
    const char *why = NULL;
    json_array_foreach(json_object_get(ospec, "containers"), i, c)
    {
        json_array_foreach(json_object_get(json_object_get(nw, "spec"), "containers"), k, n)
        {
            const char *cn = json_string_value(json_object_get(n, "name"));
            if (!cn || strcmp(cn, srv_str_or(json_object_get(c, "name"), "")) != 0)
                continue;
            json_t *a = json_object_get(c, "resources"), *b = json_object_get(n, "resources");
            for (int w = 0; w < 2 && !why; w++) {
                const char *which = w ? "limits" : "requests";
                why = resize_forbidden(json_object_get(a, which), json_object_get(b, which), which);
            }
            if (json_is_object(b))
                json_object_set(c, "resources", b);
        }
    }
    if (!why && strcmp(qos_class(json_object_get(old, "spec")), qos_class(ospec)) != 0) {
        srv_set_status(r, 422, "Invalid", name, NULL, "Pod", false,
                       "Pod \"%s\" is invalid: spec: Invalid value: \"%s\": Pod QOS Class may not "
                       "change as a result of resizing",
                       name, qos_class(json_object_get(old, "spec")));
        json_decref(out);
        return NULL;
    }
    if (why) {
        srv_set_status(r, 422, "Invalid", name, NULL, "Pod", false,
                       "Pod \"%s\" is invalid: spec: Forbidden: %s", name, why);
        json_decref(out);
        return NULL;
    }
    return out;
}

static void finish_update(drv_apiserver *s, const struct route *rt, const char *key, json_t *old,
                          json_t *nw, struct resp *r)
{
    int t = rt->rt;
    const char *brv = srv_mstr(nw, "resourceVersion");
    if (brv && *brv && strcmp(brv, srv_mstr(old, "resourceVersion"))) {
        srv_conflict(r, t, rt->name);
        json_decref(nw);
        return;
    }
    json_t *out;
    bool resize = !strcmp(rt->sub, "resize");
    if (resize) {
        out = resized(old, nw, rt->name, r);
        json_decref(nw);
        if (!out)
            return;
    } else if (!strcmp(rt->sub, "status")) {
        out = json_deep_copy(old);
        json_t *st = json_object_get(nw, "status");
        if (st)
            json_object_set(out, "status", st);
        else
            json_object_del(out, "status");
        json_decref(nw);
    } else {
        out = nw;
        if (SRV_TYPES[t].status) {
            json_t *st = json_object_get(old, "status");
            if (st)
                json_object_set(out, "status", st);
            else
                json_object_del(out, "status");
        }
    }
    /* Identity and system fields are not writable. */
    json_t *m = srv_meta(out), *om = json_object_get(old, "metadata");
    const char *keep[] = {"uid",       "creationTimestamp", "namespace",
                          "name",      "deletionTimestamp", "deletionGracePeriodSeconds",
                          "generation"};
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
        json_t *v = json_object_get(om, keep[i]);
        if (v)
            json_object_set(m, keep[i], v);
        else
            json_object_del(m, keep[i]);
    }
    json_object_set_new(out, "kind", json_string(SRV_TYPES[t].kind));
    json_object_set_new(out, "apiVersion", json_string(srv_api_version(t)));
    json_object_set(m, "resourceVersion", json_object_get(om, "resourceVersion"));
    if (!resize && validate(s, t, out, old, rt->ns, r)) {
        json_decref(out);
        return;
    }
    if (json_equal(out, old)) { /* a no-op write does not bump the resourceVersion */
        srv_set_json(r, 200, json_deep_copy(old));
        json_decref(out);
        return;
    }
    if (SRV_TYPES[t].generation &&
        !json_equal(json_object_get(out, "spec"), json_object_get(old, "spec")))
        json_object_set_new(
            m, "generation",
            json_integer(json_integer_value(json_object_get(om, "generation")) + 1));
    json_t *prev = json_incref(old);
    srv_store_put(s, t, key, out, prev);
    json_decref(prev);
    srv_set_json(r, 200, json_deep_copy(out));
    json_decref(out);
}

void srv_do_update(drv_apiserver *s, const struct route *rt, const char *body, size_t blen,
                   struct resp *r)
{
    json_error_t je;
    json_t *o = json_loadb(body, blen, 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                       "couldn't get version/kind; json parse error: %s", je.text);
        return;
    }
    const char *bname = srv_mstr(o, "name");
    if (bname && strcmp(bname, rt->name)) {
        srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                       "the name of the object (%s) does not match the name on the URL (%s)", bname,
                       rt->name);
        json_decref(o);
        return;
    }
    char key[600];
    json_t *old = srv_lookup(s, rt, key, sizeof key);
    if (!old) {
        srv_not_found_obj(r, rt->rt, rt->name);
        json_decref(o);
        return;
    }
    const char *brv = srv_mstr(o, "resourceVersion");
    if (!brv || !*brv) {
        srv_set_status(
            r, 422, "Invalid", rt->name, SRV_TYPES[rt->rt].group, SRV_TYPES[rt->rt].kind, false,
            "%s \"%s\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be "
            "specified for an update",
            SRV_TYPES[rt->rt].kind, rt->name);
        json_decref(o);
        return;
    }
    finish_update(s, rt, key, old, o, r);
}

void srv_do_patch(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt,
                  const char *body, size_t blen, struct resp *r)
{
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    char ctb[128] = "";
    if (ct)
        snprintf(ctb, sizeof ctb, "%.*s", (int)strcspn(ct, ";"), ct);
    int kind; /* 0 merge, 1 json, 2 strategic */
    if (!strcmp(ctb, "application/merge-patch+json"))
        kind = 0;
    else if (!strcmp(ctb, "application/json-patch+json"))
        kind = 1;
    else if (!strcmp(ctb, "application/strategic-merge-patch+json") && !SRV_TYPES[rt->rt].custom)
        kind = 2;
    else {
        if (!strcmp(ctb, "application/json") || !ct)
            srv_set_status(r, 415, "UnsupportedMediaType", NULL, NULL, NULL, true,
                           "415: Unsupported Media Type");
        else
            srv_set_status(
                r, 415, "UnsupportedMediaType", NULL, NULL, NULL, true,
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml%s",
                SRV_TYPES[rt->rt].custom ? "" : ", application/strategic-merge-patch+json");
        return;
    }
    json_t *p = json_loadb(body, blen, 0, NULL);
    if (!p) {
        srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false, "Invalid JSON Patch");
        return;
    }
    char key[600];
    json_t *old = srv_lookup(s, rt, key, sizeof key);
    if (!old) {
        srv_not_found_obj(r, rt->rt, rt->name);
        json_decref(p);
        return;
    }
    json_t *nw = kind == 1 ? srv_json_patch(old, p) : srv_merge_patch(old, p, kind == 2);
    json_decref(p);
    if (!nw) {
        srv_set_status(r, 422, "Invalid", NULL, NULL, NULL, true,
                       "the server rejected our request due to an error in our request");
        return;
    }
    finish_update(s, rt, key, old, nw, r);
}

void srv_do_bind(drv_apiserver *s, const struct route *rt, const char *body, size_t blen,
                 struct resp *r)
{
    json_t *b = json_loadb(body, blen, 0, NULL);
    if (!json_is_object(b)) {
        json_decref(b);
        srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                       "couldn't get version/kind; json parse error");
        return;
    }
    const char *bname = srv_mstr(b, "name");
    if (bname && strcmp(bname, rt->name)) {
        srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                       "name in URL does not match name in Binding object");
        json_decref(b);
        return;
    }
    const char *node = json_string_value(srv_path_get(b, "target.name"));
    char key[600];
    json_t *pod = srv_lookup(s, rt, key, sizeof key);
    if (!pod) {
        srv_not_found_obj(r, R_PODS, rt->name);
    } else if (!node || !*node) {
        srv_set_status(r, 422, "Invalid", rt->name, NULL, "Binding", false,
                       "Binding \"%s\" is invalid: target.name: Required value", rt->name);
    } else if (json_string_value(srv_path_get(pod, "spec.nodeName")) &&
               *json_string_value(srv_path_get(pod, "spec.nodeName"))) {
        srv_set_status(r, 409, "Conflict", rt->name, NULL, "pods/binding", false,
                       "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is already "
                       "assigned to node \"%s\"",
                       rt->name, rt->name, json_string_value(srv_path_get(pod, "spec.nodeName")));
    } else if (srv_mstr(pod, "deletionTimestamp")) {
        srv_set_status(
            r, 409, "Conflict", rt->name, NULL, "pods/binding", false,
            "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is being deleted, "
            "cannot be assigned to a host",
            rt->name, rt->name);
    } else {
        json_t *nw = json_deep_copy(pod);
        json_object_set_new(json_object_get(nw, "spec"), "nodeName", json_string(node));
        json_t *st = json_object_get(nw, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(nw, "status", st);
        }
        json_t *conds = json_object_get(st, "conditions");
        if (!json_is_array(conds)) {
            conds = json_array();
            json_object_set_new(st, "conditions", conds);
        }
        char ts[32];
        srv_now_rfc3339(ts, sizeof ts, 0);
        json_array_append_new(conds,
                              json_pack("{s:s,s:s,s:n,s:s}", "type", "PodScheduled", "status",
                                        "True", "lastProbeTime", "lastTransitionTime", ts));
        srv_store_put(s, R_PODS, key, nw, pod);
        json_decref(nw);
        srv_set_json(r, 201,
                     json_pack("{s:s,s:s,s:{},s:s,s:i}", "kind", "Status", "apiVersion", "v1",
                               "metadata", "status", "Success", "code", 201));
    }
    json_decref(b);
}
