/*
 * answers.c - how the in-memory API server answers: a JSON body, a recorded document, a Status
 * (404 NotFound, 409 Conflict and the rest, as kube-apiserver words them), queued to
 * libmicrohttpd; and a request's query arguments.
 */
#include "apiserver_int.h"

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

const char *srv_qarg(struct MHD_Connection *c, const char *k)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}
