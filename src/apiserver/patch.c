/*
 * patch.c - the three patch types the test API server applies: JSON merge patch (RFC 7386),
 * strategic merge patch (lists of named items merged by name), and JSON patch (RFC 6902, with
 * its JSON pointers).
 */
#include "apiserver_int.h"

/* RFC 7386 merge patch; returns a new reference. strategic: lists of objects with "name" are
 * merged element-wise by name (the part of strategic merge Drover and kubectl rely on). */
json_t *srv_merge_patch(json_t *target, json_t *patch, bool strategic)
{
    if (!json_is_object(patch))
        return json_deep_copy(patch);
    json_t *out = json_is_object(target) ? json_deep_copy(target) : json_object();
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v)
    {
        if (strategic && k[0] == '$')
            continue;
        if (json_is_null(v)) {
            json_object_del(out, k);
            continue;
        }
        json_t *cur = json_object_get(out, k);
        if (strategic && json_is_array(v) && json_is_array(cur)) {
            json_t *merged = json_deep_copy(cur);
            size_t i;
            json_t *pe;
            json_array_foreach(v, i, pe)
            {
                const char *pn = json_string_value(json_object_get(pe, "name"));
                bool done = false;
                size_t j;
                json_t *ce;
                json_array_foreach(merged, j, ce)
                {
                    const char *cn = json_string_value(json_object_get(ce, "name"));
                    if (pn && cn && !strcmp(pn, cn)) {
                        json_array_set_new(merged, j, srv_merge_patch(ce, pe, true));
                        done = true;
                        break;
                    }
                }
                if (!done) {
                    if (!pn) { /* not a keyed list: replace wholesale */
                        json_decref(merged);
                        merged = json_deep_copy(v);
                        break;
                    }
                    json_array_append_new(merged, json_deep_copy(pe));
                }
            }
            json_object_set_new(out, k, merged);
        } else {
            json_object_set_new(out, k, srv_merge_patch(cur, v, strategic));
        }
    }
    return out;
}

/* Resolves a JSON pointer to (parent, last token). Returns 0 or -1. */
static int pointer_parent(json_t *doc, const char *ptr, json_t **parent, char *last, size_t n)
{
    if (*ptr != '/')
        return -1;
    json_t *cur = doc;
    const char *p = ptr + 1;
    for (;;) {
        char tok[256];
        size_t o = 0;
        while (*p && *p != '/' && o + 1 < sizeof tok) {
            if (p[0] == '~' && p[1] == '1') {
                tok[o++] = '/';
                p += 2;
            } else if (p[0] == '~' && p[1] == '0') {
                tok[o++] = '~';
                p += 2;
            } else {
                tok[o++] = *p++;
            }
        }
        tok[o] = 0;
        if (!*p) {
            *parent = cur;
            snprintf(last, n, "%s", tok);
            return 0;
        }
        p++;
        if (json_is_object(cur))
            cur = json_object_get(cur, tok);
        else if (json_is_array(cur))
            cur = json_array_get(cur, strtoul(tok, NULL, 10));
        else
            return -1;
        if (!cur)
            return -1;
    }
}

static json_t *pointer_get(json_t *doc, const char *ptr)
{
    if (!*ptr)
        return doc;
    json_t *par;
    char last[256];
    if (pointer_parent(doc, ptr, &par, last, sizeof last))
        return NULL;
    if (json_is_object(par))
        return json_object_get(par, last);
    if (json_is_array(par))
        return json_array_get(par, strtoul(last, NULL, 10));
    return NULL;
}

static int pointer_remove(json_t *doc, const char *ptr)
{
    json_t *par;
    char last[256];
    if (pointer_parent(doc, ptr, &par, last, sizeof last))
        return -1;
    if (json_is_object(par))
        return json_object_del(par, last);
    if (json_is_array(par))
        return json_array_remove(par, strtoul(last, NULL, 10));
    return -1;
}

static int pointer_add(json_t *doc, const char *ptr, json_t *val, bool replace)
{
    json_t *par;
    char last[256];
    if (pointer_parent(doc, ptr, &par, last, sizeof last))
        return -1;
    if (json_is_object(par)) {
        if (replace && !json_object_get(par, last))
            return -1;
        return json_object_set(par, last, val);
    }
    if (json_is_array(par)) {
        size_t n = json_array_size(par);
        if (!strcmp(last, "-") && !replace)
            return json_array_append(par, val);
        char *end;
        unsigned long idx = strtoul(last, &end, 10);
        if (*end || idx > n || (replace && idx >= n))
            return -1;
        return replace ? json_array_set(par, idx, val) : json_array_insert(par, idx, val);
    }
    return -1;
}

/* RFC 6902. Returns a new document or NULL when an operation fails (nothing applied). */
json_t *srv_json_patch(json_t *target, json_t *ops)
{
    if (!json_is_array(ops))
        return NULL;
    json_t *doc = json_deep_copy(target);
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op)
    {
        const char *o = json_string_value(json_object_get(op, "op"));
        const char *path = json_string_value(json_object_get(op, "path"));
        const char *from = json_string_value(json_object_get(op, "from"));
        json_t *val = json_object_get(op, "value");
        int rc = -1;
        if (!o || !path) {
            rc = -1;
        } else if (!strcmp(o, "add") && val) {
            rc = pointer_add(doc, path, val, false);
        } else if (!strcmp(o, "replace") && val) {
            rc = pointer_add(doc, path, val, true);
        } else if (!strcmp(o, "remove")) {
            rc = pointer_remove(doc, path);
        } else if (!strcmp(o, "test") && val) {
            json_t *cur = pointer_get(doc, path);
            rc = cur && json_equal(cur, val) ? 0 : -1;
        } else if ((!strcmp(o, "move") || !strcmp(o, "copy")) && from) {
            json_t *src = pointer_get(doc, from);
            if (src) {
                json_t *cp = json_deep_copy(src);
                rc = 0;
                if (o[0] == 'm')
                    rc = pointer_remove(doc, from);
                if (!rc)
                    rc = pointer_add(doc, path, cp, false);
                json_decref(cp);
            }
        }
        if (rc) {
            json_decref(doc);
            return NULL;
        }
    }
    return doc;
}
