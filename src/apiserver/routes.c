/*
 * routes.c - the test API server's routing: the resource types it serves (SRV_TYPES), a URL's
 * route (/api/v1/..., /apis/G/V/..., namespaced or not, with its subresource), the answers
 * every handler gives (a Status, a JSON body, a recorded document), and the dispatch of a
 * routed request by method to the store, lists and writes.
 */
#include "apiserver_int.h"

const struct rtype SRV_TYPES[R_N] = {
    [R_NAMESPACES] = {"", "v1", "namespaces", "Namespace", false, true, false, false},
    [R_NODES] = {"", "v1", "nodes", "Node", false, true, false, false},
    [R_PODS] = {"", "v1", "pods", "Pod", true, true, false, false},
    [R_CONFIGMAPS] = {"", "v1", "configmaps", "ConfigMap", true, false, false, false},
    [R_EVENTS] = {"", "v1", "events", "Event", true, false, false, false},
    [R_LEASES] = {"coordination.k8s.io", "v1", "leases", "Lease", true, false, false, false},
    [R_CRDS] = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", false, true, true, false},
    [R_TJ] = {"drover.dev", "v1alpha1", "trainingjobs", "TrainingJob", true, true, true, true},
    [R_SERVICES] = {"", "v1", "services", "Service", true, true, false, false},
    [R_PG] = {"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", true, true, true, true},
    [R_PC] = {"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false, false, false,
              false},
    [R_QUEUE] = {"drover.dev", "v1alpha1", "queues", "Queue", false, true, true, true},
};

const char *srv_api_version(int rt)
{
    static const char *const av[R_N] = {
        [R_NAMESPACES] = "v1",
        [R_NODES] = "v1",
        [R_PODS] = "v1",
        [R_CONFIGMAPS] = "v1",
        [R_EVENTS] = "v1",
        [R_LEASES] = "coordination.k8s.io/v1",
        [R_CRDS] = "apiextensions.k8s.io/v1",
        [R_TJ] = "drover.dev/v1alpha1",
        [R_SERVICES] = "v1",
        [R_PG] = "scheduling.x-k8s.io/v1alpha1",
        [R_PC] = "scheduling.k8s.io/v1",
        [R_QUEUE] = "drover.dev/v1alpha1",
    };
    return av[rt];
}

void srv_make_key(char *out, size_t n, int rt, const char *ns, const char *name)
{
    if (SRV_TYPES[rt].namespaced)
        snprintf(out, n, "%s/%s", ns ? ns : "", name);
    else
        snprintf(out, n, "%s", name);
}

void srv_set_json(struct resp *r, int code, json_t *j)
{
    r->code = code;
    r->body = json_dumps(j, JSON_COMPACT);
    r->len = r->body ? strlen(r->body) : 0;
    r->ctype = "application/json";
    json_decref(j);
}

void srv_set_fixture(struct resp *r, const char *body)
{
    r->code = body ? 200 : 404;
    r->body = (char *)(body ? body : "404 page not found\n");
    r->len = strlen(r->body);
    r->ctype = body ? "application/json" : "text/plain; charset=utf-8";
    r->body_static = true;
}

void srv_not_found_page(struct resp *r)
{
    srv_set_fixture(r, NULL);
}

void srv_set_status(struct resp *r, int code, const char *reason, const char *name,
                    const char *group, const char *kind, bool with_details, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s}", "kind", "Status", "apiVersion", "v1",
                           "metadata", "status", "Failure", "message", msg, "reason", reason);
    if (name || kind || with_details) {
        json_t *d = json_object();
        if (name)
            json_object_set_new(d, "name", json_string(name));
        if (group && *group)
            json_object_set_new(d, "group", json_string(group));
        if (kind)
            json_object_set_new(d, "kind", json_string(kind));
        json_object_set_new(st, "details", d);
    }
    json_object_set_new(st, "code", json_integer(code));
    srv_set_json(r, code, st);
}

void srv_not_found_obj(struct resp *r, int rt, const char *name)
{
    const char *g = SRV_TYPES[rt].group;
    if (*g)
        srv_set_status(r, 404, "NotFound", name, g, SRV_TYPES[rt].plural, false,
                       "%s.%s \"%s\" not found", SRV_TYPES[rt].plural, g, name);
    else
        srv_set_status(r, 404, "NotFound", name, NULL, SRV_TYPES[rt].plural, false,
                       "%s \"%s\" not found", SRV_TYPES[rt].plural, name);
}

void srv_conflict(struct resp *r, int rt, const char *name)
{
    const char *g = SRV_TYPES[rt].group;
    char what[128];
    if (*g)
        snprintf(what, sizeof what, "%s.%s", SRV_TYPES[rt].plural, g);
    else
        snprintf(what, sizeof what, "%s", SRV_TYPES[rt].plural);
    srv_set_status(
        r, 409, "Conflict", name, g, SRV_TYPES[rt].plural, false,
        "Operation cannot be fulfilled on %s \"%s\": the object has been modified; please "
        "apply your changes to the latest version and try again",
        what, name);
}

const char *srv_qarg(struct MHD_Connection *c, const char *k)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

static int find_rt(drv_apiserver *s, const char *group, const char *version, const char *plural)
{
    for (int i = 0; i < R_N; i++) {
        if ((i == R_TJ && !s->crd) || (i == R_PG && !s->pg_crd) || (i == R_QUEUE && !s->queue_crd))
            continue;
        if (!strcmp(SRV_TYPES[i].group, group) && !strcmp(SRV_TYPES[i].version, version) &&
            !strcmp(SRV_TYPES[i].plural, plural))
            return i;
    }
    return -1;
}

/* Parses /api/v1/... and /apis/G/V/... into a route. Returns 0, or -1 for "not a resource". */
int srv_parse_route(drv_apiserver *s, const char *url, struct route *r)
{
    char buf[1024];
    if (strlen(url) >= sizeof buf)
        return -1;
    strcpy(buf, url);
    char *seg[12];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, "/", &save); t && n < 12;
         t = strtok_r(NULL, "/", &save))
        seg[n++] = t;
    const char *group, *version;
    int i;
    if (n >= 3 && !strcmp(seg[0], "api") && !strcmp(seg[1], "v1")) {
        group = "";
        version = "v1";
        i = 2;
    } else if (n >= 4 && !strcmp(seg[0], "apis")) {
        group = seg[1];
        version = seg[2];
        i = 3;
    } else {
        return -1;
    }
    memset(r, 0, sizeof *r);
    if (n - i >= 3 && !strcmp(seg[i], "namespaces")) {
        snprintf(r->ns, sizeof r->ns, "%s", seg[i + 1]);
        i += 2;
    } else if (n - i == 2 && !strcmp(seg[i], "namespaces") && !*group) {
        r->rt = R_NAMESPACES;
        snprintf(r->name, sizeof r->name, "%s", seg[i + 1]);
        return 0;
    }
    r->rt = find_rt(s, group, version, seg[i]);
    if (r->rt < 0)
        return -1;
    if (r->ns[0] && !SRV_TYPES[r->rt].namespaced)
        return -1;
    if (i + 1 < n)
        snprintf(r->name, sizeof r->name, "%s", seg[i + 1]);
    if (i + 2 < n)
        snprintf(r->sub, sizeof r->sub, "%s", seg[i + 2]);
    if (i + 3 < n)
        return -1;
    bool pod_sub = r->rt == R_PODS &&
                   (!strcmp(r->sub, "binding") || (s->pod_resize && !strcmp(r->sub, "resize")));
    if (r->sub[0] && strcmp(r->sub, "status") && !pod_sub)
        return -1;
    if (!strcmp(r->sub, "status") && !SRV_TYPES[r->rt].status)
        return -1;
    return 0;
}

enum MHD_Result srv_queue(struct MHD_Connection *c, struct resp *r)
{
    struct MHD_Response *mr = MHD_create_response_from_buffer(
        r->len, r->body ? r->body : (char *)"",
        r->body_static || !r->body ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_COPY);
    if (!r->body_static)
        free(r->body); /* jansson's json_dumps uses malloc */
    if (!mr)
        return MHD_NO;
    MHD_add_response_header(mr, "Content-Type", r->ctype ? r->ctype : "application/json");
    MHD_add_response_header(mr, "Cache-Control", "no-cache, private");
    if (r->encoding)
        MHD_add_response_header(mr, "Content-Encoding", r->encoding);
    if (r->retry_after > 0) {
        char b[16];
        snprintf(b, sizeof b, "%d", r->retry_after);
        MHD_add_response_header(mr, "Retry-After", b);
    }
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->code, mr);
    MHD_destroy_response(mr);
    return ok;
}

void srv_dispatch(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                  const struct route *rt, const char *body, size_t len, struct resp *r)
{
    bool named = rt->name[0] != 0;
    bool binding = !strcmp(rt->sub, "binding");
    if (!strcmp(method, "GET") && named)
        srv_do_get(s, c, rt, r);
    else if (!strcmp(method, "GET"))
        srv_do_list(s, c, rt, r);
    else if (!strcmp(method, "POST") && !named)
        srv_do_create(s, rt, body, len, r);
    else if (!strcmp(method, "POST") && binding)
        srv_do_bind(s, rt, body, len, r);
    else if (!strcmp(method, "PUT") && named && !binding)
        srv_do_update(s, rt, body, len, r);
    else if (!strcmp(method, "PATCH") && named && !binding)
        srv_do_patch(s, c, rt, body, len, r);
    else if (!strcmp(method, "DELETE") && named && !rt->sub[0])
        srv_do_delete(s, c, rt, body, len, r);
    else
        srv_set_status(r, 405, "MethodNotAllowed", NULL, NULL, NULL, true,
                       "the server does not allow this method on the requested resource");
}
