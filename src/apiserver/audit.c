/*
 * audit.c - what the test API server keeps for a test to check afterwards: every node and pod
 * event (the audit log), every answer of 400 or more, every request (checked against the shipped
 * RBAC), the writes as sent (replayed by a benchmark), and sorted dumps of a resource.
 */
#include "apiserver_int.h"

/* Appends line and a newline to the log buf (len, cap); a line that does not fit in memory is
 * left out (the log is a test's evidence, not the server's state). */
void srv_log_append(char **buf, size_t *len, size_t *cap, const char *line)
{
    size_t n = line ? strlen(line) : 0;
    if (line && *len + n + 2 > *cap) {
        size_t want = (*len + n + 2) * 2;
        char *b = drv_realloc(*buf, want);
        if (b) {
            *buf = b;
            *cap = want;
        }
    }
    if (line && *len + n + 2 <= *cap) {
        memcpy(*buf + *len, line, n);
        (*buf)[*len + n] = '\n';
        *len += n + 1;
        (*buf)[*len] = 0;
    }
}

/* Appends {"type":..,"object":..} to the audit log (opts.audit), nodes and pods only. */
void srv_audit_event(drv_apiserver *s, int rt, const char *type, json_t *obj)
{
    if (!s->audit || (rt != R_PODS && rt != R_NODES))
        return;
    json_t *ev = json_pack("{s:s, s:O}", "type", type, "object", obj);
    char *line = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    srv_log_append(&s->audit_buf, &s->audit_len, &s->audit_cap, line);
    free(line);
}

/* Appends text to q (of MAX_LOGGED_QUERY bytes), the characters of `esc` percent-escaped. */
static void query_put(char *q, const char *text, const char *esc)
{
    size_t n = strlen(q);
    for (const char *p = text; p && *p && n + 4 < MAX_LOGGED_QUERY; p++)
        n += (size_t)(strchr(esc, *p) ? snprintf(q + n, 4, "%%%02X", (unsigned char)*p)
                                      : snprintf(q + n, 2, "%c", *p));
}

/* Appends "?key=value" or "&key=value" to the query text of log_request: "&", " " and "%"
 * escaped so that the line splits back into its fields, "=" too in the key. */
static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    (void)kind;
    char *q = cls;
    query_put(q, q[0] ? "&" : "?", "");
    query_put(q, key, "&= %");
    if (value) {
        query_put(q, "=", "");
        query_put(q, value, "& %");
    }
    return MHD_YES;
}

/* With opts.request_log: "CODE METHOD PATH?QUERY USER-AGENT" (the query rebuilt from the
 * arguments, "&", "=" in keys, " " and "%" percent-escaped; at most MAX_LOGGED_QUERY bytes). */
void srv_log_request(drv_apiserver *s, struct MHD_Connection *c, const char *method,
                     const char *url, int code)
{
    if (!s->request_log)
        return;
    char q[MAX_LOGGED_QUERY] = "";
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_arg, q);
    const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
    char line[MAX_LOGGED_QUERY + 640];
    snprintf(line, sizeof line, "%d %s %.400s%s %.120s", code, method, url, q, ua ? ua : "-");
    pthread_mutex_lock(&s->mu);
    srv_log_append(&s->req_buf, &s->req_len, &s->req_cap, line);
    pthread_mutex_unlock(&s->mu);
}

/* Once keeping writes (under s->mu): the write about to be served, kept as it was sent. An
 * allocation failing loses it and says so: the replay would not be the same requests. */
void srv_keep_write(drv_apiserver *s, struct MHD_Connection *c, const char *method, const char *url,
                    const struct conn *cn)
{
    if (!s->keep_writes)
        return;
    char q[MAX_LOGGED_QUERY] = "";
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_arg, q);
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    size_t np = strlen(url) + strlen(q) + 1;
    drv_apiserver_write w = {.len = cn->len};
    snprintf(w.method, sizeof w.method, "%s", method);
    w.path = drv_malloc(np);
    w.content_type = drv_strdup(ct ? ct : "");
    w.body = drv_malloc(cn->len + 1);
    if (!w.path || !w.content_type || !w.body ||
        drv_grow(&s->writes, sizeof *s->writes, &s->cap_writes, s->nwrites + 1) != 0) {
        drv_free(w.path);
        drv_free(w.content_type);
        drv_free(w.body);
        fprintf(stderr, "test API server: out of memory: a write not kept\n");
        return;
    }
    snprintf(w.path, np, "%s%s", url, q);
    if (cn->len)
        memcpy(w.body, cn->body, cn->len);
    w.body[cn->len] = 0;
    s->writes[s->nwrites++] = w;
}

void drv_apiserver_keep_writes(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    s->keep_writes = true;
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_writes_free(drv_apiserver_write *w, int32_t n)
{
    for (int32_t i = 0; w && i < n; i++) {
        drv_free(w[i].path);
        drv_free(w[i].content_type);
        drv_free(w[i].body);
    }
    drv_free(w);
}

int32_t drv_apiserver_writes(drv_apiserver *s, drv_apiserver_write **out)
{
    pthread_mutex_lock(&s->mu);
    int32_t n = s->nwrites;
    drv_apiserver_write *w = drv_calloc(n > 0 ? (size_t)n : 1, sizeof *w);
    int32_t i = 0;
    for (; w && i < n; i++) {
        const drv_apiserver_write *k = &s->writes[i];
        w[i] = (drv_apiserver_write){.len = k->len};
        memcpy(w[i].method, k->method, sizeof w[i].method);
        w[i].path = drv_strdup(k->path);
        w[i].content_type = drv_strdup(k->content_type);
        w[i].body = drv_malloc(k->len + 1);
        if (!w[i].path || !w[i].content_type || !w[i].body)
            break;
        memcpy(w[i].body, k->body, k->len + 1);
    }
    pthread_mutex_unlock(&s->mu);
    if (!w || i < n) {
        drv_apiserver_writes_free(w, w ? i + 1 : 0);
        return -1;
    }
    *out = w;
    return n;
}

char *drv_apiserver_audit(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    char *out = drv_strdup(s->audit_buf ? s->audit_buf : "");
    pthread_mutex_unlock(&s->mu);
    return out;
}

char *drv_apiserver_errors(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    char *out = drv_strdup(s->err_buf ? s->err_buf : "");
    pthread_mutex_unlock(&s->mu);
    return out;
}

char *drv_apiserver_request_log(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    char *out = drv_strdup(s->req_buf ? s->req_buf : "");
    pthread_mutex_unlock(&s->mu);
    return out;
}

uint64_t drv_apiserver_rv(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t rv = s->rv;
    pthread_mutex_unlock(&s->mu);
    return rv;
}

long drv_apiserver_requests(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    long n = s->seq;
    pthread_mutex_unlock(&s->mu);
    return n;
}

char *drv_apiserver_dump(drv_apiserver *s, const char *plural)
{
    pthread_mutex_lock(&s->mu);
    int rt = -1;
    for (int i = 0; i < R_N; i++)
        if (!strcmp(SRV_TYPES[i].plural, plural))
            rt = i;
    size_t nk = 0, cap = 1, len = 0;
    const char **keys = rt >= 0 ? srv_sorted_keys(s->store[rt], &nk) : NULL;
    for (size_t i = 0; i < nk; i++)
        cap += strlen(keys[i]) + 32;
    char *out = drv_malloc(cap);
    if (out) {
        out[0] = 0;
        for (size_t i = 0; i < nk; i++)
            len += (size_t)snprintf(
                out + len, cap - len, "%s@%s\n", keys[i],
                srv_mstr(json_object_get(s->store[rt], keys[i]), "resourceVersion"));
    }
    drv_free(keys);
    pthread_mutex_unlock(&s->mu);
    return out;
}
