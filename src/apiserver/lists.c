/*
 * lists.c - the test API server's lists: label and field selectors (=, !=, in, notin, exists),
 * pages of `limit` items in key order with base64url continue tokens, and the list body written
 * field by field from the stored objects.
 */
#include "apiserver_int.h"

/* store[rt]'s keys in order, from the cache (sorted again after a key was added or removed);
 * NULL when out of memory. Borrowed: valid until the next write. Mutex held. */
static const char **cached_keys(drv_apiserver *s, int rt, size_t *n)
{
    if (!s->sorted_ok[rt]) {
        drv_free(s->sorted[rt]);
        s->sorted[rt] = srv_sorted_keys(s->store[rt], &s->nsorted[rt]);
        s->sorted_ok[rt] = s->sorted[rt] != NULL;
    }
    *n = s->sorted_ok[rt] ? s->nsorted[rt] : 0;
    return s->sorted[rt];
}

/* The index of the first key after `after` (strcmp order) in keys[0..n). */
static size_t first_after(const char **keys, size_t n, const char *after)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(keys[mid], after) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static char *trim(char *s)
{
    while (*s == ' ')
        s++;
    size_t l = strlen(s);
    while (l && s[l - 1] == ' ')
        s[--l] = 0;
    return s;
}

/* Splits on commas outside parentheses. Returns the count or -1. */
static int split_terms(char *s, char **parts, int max)
{
    int n = 0, depth = 0;
    char *start = s;
    for (char *p = s;; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')')
            depth--;
        if ((*p == ',' && depth == 0) || *p == 0) {
            bool end = *p == 0;
            *p = 0;
            if (n == max)
                return -1;
            parts[n++] = start;
            start = p + 1;
            if (end)
                break;
        }
    }
    return n;
}

/* Parses a label selector (field=true: field selector, only =, ==, !=). 0 or -1. */
int srv_parse_selector(const char *text, bool field, struct selector *sel, char *err, size_t errn)
{
    memset(sel, 0, sizeof *sel);
    if (!text || !*text)
        return 0;
    char buf[2048];
    if (strlen(text) >= sizeof buf) {
        snprintf(err, errn, "selector too long");
        return -1;
    }
    strcpy(buf, text);
    char *parts[16];
    int np = split_terms(buf, parts, 16);
    if (np < 0) {
        snprintf(err, errn, "too many terms in selector");
        return -1;
    }
    for (int i = 0; i < np; i++) {
        char *p = trim(parts[i]);
        if (!*p)
            continue;
        struct req_term *t = &sel->t[sel->n++];
        char *op;
        if ((op = strstr(p, "!="))) {
            t->op = OP_NE;
            *op = 0;
            snprintf(t->key, sizeof t->key, "%s", trim(p));
            snprintf(t->vals[0], sizeof t->vals[0], "%s", trim(op + 2));
            t->nvals = 1;
        } else if ((op = strchr(p, '='))) {
            t->op = OP_EQ;
            *op = 0;
            char *v = op + 1 + (op[1] == '=');
            snprintf(t->key, sizeof t->key, "%s", trim(p));
            snprintf(t->vals[0], sizeof t->vals[0], "%s", trim(v));
            t->nvals = 1;
        } else if (field) {
            snprintf(err, errn, "invalid selector: '%s'; can't understand '%s'", text, p);
            return -1;
        } else if ((op = strstr(p, " notin ")) || (op = strstr(p, " in "))) {
            t->op = op[1] == 'n' ? OP_NOTIN : OP_IN;
            *op = 0;
            snprintf(t->key, sizeof t->key, "%s", trim(p));
            char *l = strchr(op + 1, '('), *r = l ? strchr(l, ')') : NULL;
            if (!l || !r) {
                snprintf(err, errn, "unable to parse requirement: found '%s', expected: '('",
                         op + 1);
                return -1;
            }
            *r = 0;
            char *vparts[8];
            int nv = split_terms(l + 1, vparts, 8);
            if (nv < 0) {
                snprintf(err, errn, "too many values");
                return -1;
            }
            for (int k = 0; k < nv; k++)
                snprintf(t->vals[t->nvals++], sizeof t->vals[0], "%s", trim(vparts[k]));
        } else if (*p == '!') {
            t->op = OP_NOTEXISTS;
            snprintf(t->key, sizeof t->key, "%s", trim(p + 1));
        } else {
            t->op = OP_EXISTS;
            snprintf(t->key, sizeof t->key, "%s", p);
        }
        if (!t->key[0]) {
            snprintf(err, errn, "invalid selector: '%s'", text);
            return -1;
        }
    }
    return 0;
}

bool srv_sel_match(const struct selector *sel, json_t *o, bool field)
{
    json_t *labels = json_object_get(json_object_get(o, "metadata"), "labels");
    for (int i = 0; i < sel->n; i++) {
        const struct req_term *t = &sel->t[i];
        const char *v;
        bool has;
        if (field) {
            json_t *j = srv_path_get(o, t->key);
            v = json_is_string(j) ? json_string_value(j) : "";
            has = true;
        } else {
            v = json_string_value(json_object_get(labels, t->key));
            has = v != NULL;
            if (!v)
                v = "";
        }
        bool in = false;
        for (int k = 0; k < t->nvals; k++)
            in |= !strcmp(v, t->vals[k]);
        switch (t->op) {
        case OP_EQ:
        case OP_IN:
            if (!has || !in)
                return false;
            break;
        case OP_NE:
        case OP_NOTIN:
            if (has && in)
                return false;
            break;
        case OP_EXISTS:
            if (!has)
                return false;
            break;
        case OP_NOTEXISTS:
            if (has)
                return false;
            break;
        }
    }
    return true;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64url_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = B64[(v >> 18) & 63];
        out[o++] = B64[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = B64[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = B64[v & 63];
    }
    out[o] = 0;
}

static int b64_val(char c)
{
    const char *p = c ? strchr(B64, c) : NULL;
    if (p)
        return (int)(p - B64);
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

static int b64url_decode(const char *in, unsigned char *out, size_t max, size_t *outn)
{
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (const char *p = in; *p && *p != '='; p++) {
        int v = b64_val(*p);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == max)
                return -1;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    *outn = o;
    return 0;
}

/* A growing response body (malloc-compatible: queue() frees it with free). */
typedef struct lbody {
    char *p;
    size_t n;
    int32_t cap; /* drv_grow's: a body stays under 2 GiB */
    bool oom;
} lbody;

/* Appends n bytes; also jansson's json_dump_callback sink (0, or -1 when out of memory). */
static int body_add(const char *p, size_t n, void *arg)
{
    lbody *b = arg;
    if (b->oom || b->n + n + 1 > INT32_MAX ||
        drv_grow(&b->p, 1, &b->cap, (int32_t)(b->n + n + 1)) != 0) {
        b->oom = true;
        return -1;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

static void body_str(lbody *b, const char *s)
{
    body_add(s, strlen(s), b);
}

/* Appends o as a list item: built-in kinds lose kind and apiVersion (the list carries them).
 * Written field by field from the stored object, so a page costs one serialisation of its
 * items and no copy of them. */
static void body_item(lbody *b, int rt, json_t *o)
{
    if (SRV_TYPES[rt].custom) {
        json_dump_callback(o, body_add, b, JSON_COMPACT);
        return;
    }
    const char *k;
    json_t *v;
    bool first = true;
    body_str(b, "{");
    json_object_foreach(o, k, v)
    {
        if (!strcmp(k, "kind") || !strcmp(k, "apiVersion"))
            continue;
        json_t *key = json_string(k);
        body_str(b, first ? "" : ",");
        json_dump_callback(key, body_add, b, JSON_ENCODE_ANY);
        body_str(b, ":");
        json_dump_callback(v, body_add, b, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(key);
        first = false;
    }
    body_str(b, "}");
}

/* A 200 answer {"kind":"<Kind>List","apiVersion":..,"metadata":lm,"items":[..]} (lm is
 * consumed; objs borrowed). */
static void set_list(struct resp *r, int rt, json_t *objs, json_t *lm)
{
    lbody b = {0};
    char head[160];
    snprintf(head, sizeof head,
             "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",\"metadata\":", SRV_TYPES[rt].kind,
             srv_api_version(rt));
    body_str(&b, head);
    json_dump_callback(lm, body_add, &b, JSON_COMPACT);
    json_decref(lm);
    body_str(&b, ",\"items\":[");
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o)
    {
        body_str(&b, i ? "," : "");
        body_item(&b, rt, o);
    }
    body_str(&b, "]}");
    if (b.oom) {
        free(b.p);
        srv_set_status(r, 500, "InternalError", NULL, NULL, NULL, false, "out of memory");
        return;
    }
    r->code = 200;
    r->body = b.p;
    r->len = b.n;
    r->ctype = "application/json";
}

void srv_do_list(drv_apiserver *s, struct MHD_Connection *c, const struct route *rt_,
                 struct resp *r)
{
    int rt = rt_->rt;
    struct selector ls, fs;
    char err[512];
    if (srv_parse_selector(srv_qarg(c, "labelSelector"), false, &ls, err, sizeof err) ||
        srv_parse_selector(srv_qarg(c, "fieldSelector"), true, &fs, err, sizeof err)) {
        srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false, "%s", err);
        return;
    }
    long limit = srv_qarg(c, "limit") ? strtol(srv_qarg(c, "limit"), NULL, 10) : 0;
    const char *cont = srv_qarg(c, "continue");
    char start[600] = "";
    uint64_t list_rv = s->rv;
    if (cont && *cont) {
        unsigned char dec[1024];
        size_t dn = 0;
        json_t *tok = NULL;
        if (!b64url_decode(cont, dec, sizeof dec - 1, &dn))
            tok = json_loadb((const char *)dec, dn, JSON_ALLOW_NUL, NULL);
        const char *st = json_string_value(json_object_get(tok, "start"));
        json_t *trv = json_object_get(tok, "rv");
        if (!st || !json_is_integer(trv)) {
            json_decref(tok);
            srv_set_status(r, 400, "BadRequest", NULL, NULL, NULL, false,
                           "invalid continue token: continue key is not valid: invalid character "
                           "looking for beginning of value");
            return;
        }
        snprintf(start, sizeof start, "%s", st);
        list_rv = (uint64_t)json_integer_value(trv);
        json_decref(tok);
        if (list_rv < s->compacted) { /* the snapshot the list began at is gone (etcd: compacted) */
            srv_set_status(
                r, 410, "Expired", NULL, NULL, NULL, false,
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter.");
            return;
        }
    }
    size_t nk = 0;
    const char **keys = cached_keys(s, rt, &nk);
    json_t *full = json_array();
    long nitems = 0;
    long remaining = 0;
    const char *last = NULL;
    /* The token's start is "lastkey\0": continue strictly after lastkey. */
    for (size_t i = start[0] ? first_after(keys, nk, start) : 0; keys && i < nk; i++) {
        json_t *o = json_object_get(s->store[rt], keys[i]);
        if (rt_->ns[0] && strcmp(srv_str_or(srv_path_get(o, "metadata.namespace"), ""), rt_->ns))
            continue;
        if (!srv_sel_match(&ls, o, false) || !srv_sel_match(&fs, o, true))
            continue;
        if (limit > 0 && nitems >= limit) {
            if (!rt_->ns[0] && ls.n == 0 && fs.n == 0) { /* every later key counts */
                remaining = (long)(nk - i);
                break;
            }
            remaining++;
            continue;
        }
        nitems++;
        json_array_append(full, o);
        last = keys[i];
    }
    char rvb[32];
    snprintf(rvb, sizeof rvb, "%llu", (unsigned long long)list_rv);
    json_t *lm = json_pack("{s:s}", "resourceVersion", rvb);
    if (remaining > 0 && last) {
        char tokjson[1024], enc[1500];
        char startb[620];
        int sl = snprintf(startb, sizeof startb, "%s", last);
        json_t *t = json_pack("{s:s,s:I,s:o}", "v", "meta.k8s.io/v1", "rv", (json_int_t)list_rv,
                              "start", json_stringn(startb, (size_t)sl + 1));
        char *d = json_dumps(t, JSON_COMPACT);
        json_decref(t);
        snprintf(tokjson, sizeof tokjson, "%s", d ? d : "");
        free(d);
        b64url_encode((const unsigned char *)tokjson, strlen(tokjson), enc);
        json_object_set_new(lm, "continue", json_string(enc));
        if (ls.n == 0 && fs.n == 0)
            json_object_set_new(lm, "remainingItemCount", json_integer(remaining));
    }
    if (srv_wants_table(c)) {
        const char *io = srv_qarg(c, "includeObject");
        srv_set_json(r, 200, srv_make_table(rt, full, lm, !io || strcmp(io, "None")));
        json_decref(full);
        return;
    }
    set_list(r, rt, full, lm);
    json_decref(full);
}
