/*
 * routes.c - the test API server's routing: a URL's route (/api/v1/..., /apis/G/V/...,
 * namespaced or not, with its subresource) among the resource types it serves (resources.c),
 * and the dispatch of a routed request by method to the store, lists and writes.
 */
#include "apiserver_int.h"

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
