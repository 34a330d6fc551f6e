/*
 * discovery.c - the test API server's discovery: /api, /apis, /version, OpenAPI v3, group
 * resource lists, served from the recorded documents (tests/fixtures/k8s) and from the CRDs
 * created so far.
 */
#include "apiserver_int.h"

static char *apis_doc(drv_apiserver *s)
{
    json_t *doc = json_loads(s->crd ? s->fx_apis_crd : s->fx_apis, 0, NULL);
    json_t *groups = json_object_get(doc, "groups"), *keep = json_array();
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g)
    {
        const char *n = srv_str_or(json_object_get(g, "name"), "");
        if (!strcmp(n, "coordination.k8s.io") || !strcmp(n, "apiextensions.k8s.io") ||
            (!strcmp(n, "drover.dev") && s->crd)) {
            /* Only the versions this server serves. */
            json_t *cp = json_deep_copy(g);
            json_t *pv = json_object_get(cp, "preferredVersion");
            json_object_set_new(cp, "versions", json_pack("[O]", pv));
            json_array_append_new(keep, cp);
        }
    }
    {
        /* Not in the recorded documents (kube-apiserver serves it always): PriorityClasses. */
        json_t *gv =
            json_pack("{s:s,s:s}", "groupVersion", "scheduling.k8s.io/v1", "version", "v1");
        json_array_append_new(keep, json_pack("{s:s,s:[O],s:o}", "name", "scheduling.k8s.io",
                                              "versions", gv, "preferredVersion", gv));
    }
    if (s->pg_crd) {
        /* Not in the recorded documents: a CRD's group as kube-apiserver lists one. */
        json_t *gv = json_pack("{s:s,s:s}", "groupVersion", "scheduling.x-k8s.io/v1alpha1",
                               "version", "v1alpha1");
        json_array_append_new(keep, json_pack("{s:s,s:[O],s:o}", "name", "scheduling.x-k8s.io",
                                              "versions", gv, "preferredVersion", gv));
    }
    json_object_set_new(doc, "groups", keep);
    char *out = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return out;
}

static json_t *resource_entry(int rt, const char *name, bool sub)
{
    json_t *verbs = sub ? json_pack("[s,s,s]", "get", "patch", "update")
                        : json_pack("[s,s,s,s,s,s,s,s]", "create", "delete", "deletecollection",
                                    "get", "list", "patch", "update", "watch");
    json_t *e = json_pack("{s:s,s:s,s:b,s:s,s:o}", "name", name, "singularName", "", "namespaced",
                          SRV_TYPES[rt].namespaced, "kind", SRV_TYPES[rt].kind, "verbs", verbs);
    if (!sub && rt == R_CRDS) {
        json_object_set_new(e, "shortNames", json_pack("[s,s]", "crd", "crds"));
        json_object_set_new(e, "categories", json_pack("[s]", "api-extensions"));
    }
    return e;
}

/* Discovery and OpenAPI. Returns true when the path was one of them. */
bool srv_serve_discovery(drv_apiserver *s, struct MHD_Connection *c, const char *url,
                         struct resp *r)
{
    if (!strcmp(url, "/version")) {
        srv_set_fixture(r, s->fx_version);
    } else if (!strcmp(url, "/api")) {
        srv_set_fixture(r, s->fx_api);
    } else if (!strcmp(url, "/api/v1") && s->pod_resize) {
        /* The recorded 1.24 list, with the entry kube-apiserver >= 1.33 lists after pods/proxy
         * (the same shape as pods/status: kind Pod, verbs get, patch, update). */
        json_t *doc = json_loads(s->fx_api_v1, 0, NULL), *res = json_object_get(doc, "resources");
        size_t i, at = json_array_size(res);
        json_t *e;
        json_array_foreach(res, i, e)
        {
            if (!strcmp(srv_str_or(json_object_get(e, "name"), ""), "pods/proxy"))
                at = i + 1;
        }
        json_array_insert_new(res, at, resource_entry(R_PODS, "pods/resize", true));
        srv_set_json(r, 200, doc);
    } else if (!strcmp(url, "/api/v1")) {
        srv_set_fixture(r, s->fx_api_v1);
    } else if (!strcmp(url, "/apis")) {
        r->code = 200;
        r->body = apis_doc(s);
        r->len = r->body ? strlen(r->body) : 0;
        r->ctype = "application/json";
    } else if (!strcmp(url, "/apis/coordination.k8s.io/v1")) {
        srv_set_fixture(r, s->fx_coord);
    } else if (!strcmp(url, "/apis/drover.dev/v1alpha1")) {
        if (!s->crd) {
            srv_not_found_page(r);
        } else if (!s->queue_crd) {
            srv_set_fixture(r, s->fx_drover);
        } else { /* the recorded list, and the Queue CRD's resources as a real server adds them */
            json_t *doc = json_loads(s->fx_drover, 0, NULL);
            json_t *res = json_object_get(doc, "resources"),
                   *q = resource_entry(R_QUEUE, "queues", false);
            json_object_set_new(q, "singularName", json_string("queue"));
            json_array_append_new(res, q);
            json_array_append_new(res, resource_entry(R_QUEUE, "queues/status", true));
            srv_set_json(r, 200, doc);
        }
    } else if (!strcmp(url, "/apis/scheduling.k8s.io/v1")) {
        json_t *res = json_array(), *pc = resource_entry(R_PC, "priorityclasses", false);
        json_object_set_new(pc, "singularName", json_string("priorityclass"));
        json_object_set_new(pc, "shortNames", json_pack("[s]", "pc"));
        json_array_append_new(res, pc);
        srv_set_json(r, 200,
                     json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                               "groupVersion", "scheduling.k8s.io/v1", "resources", res));
    } else if (!strcmp(url, "/apis/scheduling.x-k8s.io/v1alpha1")) {
        if (!s->pg_crd) {
            srv_not_found_page(r);
            return true;
        }
        json_t *res = json_array(), *pg = resource_entry(R_PG, "podgroups", false);
        json_object_set_new(pg, "singularName", json_string("podgroup"));
        json_object_set_new(pg, "shortNames", json_pack("[s,s]", "pg", "pgs"));
        json_array_append_new(res, pg);
        json_array_append_new(res, resource_entry(R_PG, "podgroups/status", true));
        srv_set_json(r, 200,
                     json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                               "groupVersion", "scheduling.x-k8s.io/v1alpha1", "resources", res));
    } else if (!strcmp(url, "/apis/apiextensions.k8s.io/v1")) {
        json_t *res = json_array();
        json_array_append_new(res, resource_entry(R_CRDS, "customresourcedefinitions", false));
        json_array_append_new(res,
                              resource_entry(R_CRDS, "customresourcedefinitions/status", true));
        srv_set_json(r, 200,
                     json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                               "groupVersion", "apiextensions.k8s.io/v1", "resources", res));
    } else if (!strcmp(url, "/openapi/v3")) {
        json_t *idx = json_loads(s->fx_v3index, 0, NULL), *paths = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(idx, "paths"), k, v)
        {
            if (!strcmp(k, "api/v1") || !strcmp(k, "apis/coordination.k8s.io/v1"))
                json_object_set(paths, k, v);
        }
        json_object_set_new(idx, "paths", paths);
        srv_set_json(r, 200, idx);
    } else if (!strcmp(url, "/openapi/v3/api/v1") ||
               !strcmp(url, "/openapi/v3/apis/coordination.k8s.io/v1")) {
        const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
        if (!ae || !strstr(ae, "gzip")) {
            srv_set_status(r, 406, "NotAcceptable", NULL, NULL, NULL, false,
                           "this test server serves OpenAPI documents gzip-encoded only");
            return true;
        }
        bool v1 = !strcmp(url, "/openapi/v3/api/v1");
        r->code = 200;
        r->body = v1 ? s->fx_v3_v1 : s->fx_v3_coord;
        r->len = v1 ? s->fx_v3_v1_len : s->fx_v3_coord_len;
        r->body_static = true;
        r->ctype = "application/json";
        r->encoding = "gzip";
    } else if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/livez")) {
        srv_set_fixture(r, "ok");
        r->ctype = "text/plain; charset=utf-8";
    } else {
        return false;
    }
    return true;
}
