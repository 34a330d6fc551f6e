/*
 * conf.c - builds a drv_conf tree from libyaml parser events, and reads typed values from it
 * with messages that name file, line and field.
 *
 * The tree is built with an explicit stack: a MAPPING_START pushes a map, SCALARs inside a map
 * alternate between key and value, and every finished node is attached to the node below it
 * on the stack. Depth is bounded (MAX_DEPTH) so hostile input cannot exhaust memory.
 */
#include "drover/conf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

enum { MAX_DEPTH = 64 };

static void conf_free(drv_conf *c)
{
    if (!c)
        return;
    for (int32_t i = 0; i < c->nitems; i++)
        conf_free(c->items[i]);
    drv_free(c->items);
    drv_free(c->text);
    drv_free(c->key);
    drv_free(c);
}

void drv_conf_doc_fini(drv_conf_doc *doc)
{
    conf_free(doc->root);
    drv_free(doc->file);
    doc->root = NULL;
    doc->file = NULL;
}

static drv_conf *node_new(int kind, int line)
{
    drv_conf *c = drv_calloc(1, sizeof *c);
    if (c) {
        c->kind = kind;
        c->line = line;
    }
    return c;
}

static int attach(drv_conf *parent, drv_conf *child)
{
    if (drv_grow(&parent->items, sizeof *parent->items, &parent->cap, parent->nitems + 1) != 0)
        return DRV_ENOMEM;
    parent->items[parent->nitems++] = child;
    return 0;
}

typedef struct builder {
    drv_conf *stack[MAX_DEPTH];
    char *pending_key[MAX_DEPTH]; /* for maps: key read, value not yet */
    int depth;
    drv_conf *root;
} builder;

/* Adds a finished node to the container on top of the stack (or makes it the root). */
static int add_node(builder *b, drv_conf *n, const char *file, drv_diag *d)
{
    if (b->depth == 0) {
        b->root = n;
        return 0;
    }
    drv_conf *top = b->stack[b->depth - 1];
    if (top->kind == DRV_CONF_MAP) {
        char **pk = &b->pending_key[b->depth - 1];
        if (!*pk) {
            if (n->kind != DRV_CONF_SCALAR) {
                int line = n->line;
                conf_free(n);
                return drv_fail(d, DRV_EPARSE, "%s:%d: a map key must be a plain string", file,
                                line);
            }
            for (int32_t i = 0; i < top->nitems; i++)
                if (strcmp(top->items[i]->key, n->text) == 0) {
                    int line = n->line;
                    drv_fail(d, DRV_EPARSE, "%s:%d: duplicate key '%s'", file, line, n->text);
                    conf_free(n);
                    return DRV_EPARSE;
                }
            *pk = n->text;
            n->text = NULL;
            conf_free(n);
            return 0;
        }
        n->key = *pk;
        *pk = NULL;
    }
    if (attach(top, n) != 0) {
        conf_free(n);
        return drv_fail(d, DRV_ENOMEM, "%s: out of memory", file);
    }
    return 0;
}

int drv_conf_load_string(drv_conf_doc *doc, const char *name, const char *text, size_t len,
                         drv_diag *d)
{
    yaml_parser_t p;
    builder b;
    memset(&b, 0, sizeof b);
    int rc = 0;
    bool done = false;
    if (!yaml_parser_initialize(&p))
        return drv_fail(d, DRV_ENOMEM, "%s: out of memory", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    while (!done && !rc) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = drv_fail(d, DRV_EPARSE, "%s:%zu: %s%s%s", name, p.problem_mark.line + 1,
                          p.problem ? p.problem : "malformed YAML", p.context ? " " : "",
                          p.context ? p.context : "");
            break;
        }
        int line = (int)ev.start_mark.line + 1;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (b.root)
                rc = drv_fail(d, DRV_EPARSE, "%s:%d: expected a single YAML document", name, line);
            break;
        case YAML_ALIAS_EVENT:
            rc = drv_fail(d, DRV_EPARSE, "%s:%d: YAML aliases are not supported", name, line);
            break;
        case YAML_SCALAR_EVENT: {
            drv_conf *n = node_new(DRV_CONF_SCALAR, line);
            if (n)
                n->text = drv_strdup((const char *)ev.data.scalar.value);
            if (!n || !n->text) {
                conf_free(n);
                rc = drv_fail(d, DRV_ENOMEM, "%s: out of memory", name);
                break;
            }
            n->quoted = ev.data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                        ev.data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
            rc = add_node(&b, n, name, d);
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            if (b.depth == MAX_DEPTH) {
                rc = drv_fail(d, DRV_EPARSE, "%s:%d: nested deeper than %d levels", name, line,
                              MAX_DEPTH);
                break;
            }
            int kind = ev.type == YAML_SEQUENCE_START_EVENT ? DRV_CONF_SEQ : DRV_CONF_MAP;
            drv_conf *n = node_new(kind, line);
            if (!n) {
                rc = drv_fail(d, DRV_ENOMEM, "%s: out of memory", name);
                break;
            }
            b.pending_key[b.depth] = NULL;
            b.stack[b.depth++] = n;
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
            drv_conf *n = b.stack[--b.depth];
            rc = add_node(&b, n, name, d);
            break;
        }
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    /* On error, free whatever is still open on the stack, innermost first. */
    while (b.depth > 0) {
        b.depth--;
        drv_free(b.pending_key[b.depth]);
        conf_free(b.stack[b.depth]);
    }
    if (rc) {
        conf_free(b.root);
        return rc;
    }
    char *file = drv_strdup(name);
    if (!file) {
        conf_free(b.root);
        return drv_fail(d, DRV_ENOMEM, "%s: out of memory", name);
    }
    if (!b.root)
        b.root = node_new(DRV_CONF_MAP, 1);
    doc->file = file;
    doc->root = b.root;
    return 0;
}

int drv_conf_load_file(drv_conf_doc *doc, const char *path, drv_diag *d)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return drv_fail(d, DRV_EIO, "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (cap - len < 65536) {
            cap = cap ? cap * 2 : 65536;
            char *nb = drv_realloc(buf, cap);
            if (!nb) {
                rc = drv_fail(d, DRV_ENOMEM, "%s: out of memory", path);
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                rc = drv_fail(d, DRV_EIO, "%s: read error", path);
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    if (!rc)
        rc = drv_conf_load_string(doc, path, buf ? buf : "", len, d);
    drv_free(buf);
    return rc;
}

/* ---- typed access ------------------------------------------------------------------------ */

drv_conf *drv_conf_get(drv_conf *c, const char *key)
{
    if (!c || c->kind != DRV_CONF_MAP)
        return NULL;
    for (int32_t i = 0; i < c->nitems; i++)
        if (strcmp(c->items[i]->key, key) == 0) {
            c->items[i]->used = true;
            return c->items[i];
        }
    return NULL;
}

static const char *kind_name(const drv_conf *c)
{
    if (!c)
        return "nothing";
    return c->kind == DRV_CONF_MAP ? "a map" : c->kind == DRV_CONF_SEQ ? "a list" : "a value";
}

int drv_conf_expect(const drv_conf_doc *doc, const drv_conf *c, int kind, const char *path,
                    drv_diag *d)
{
    if (c && c->kind == kind)
        return 0;
    static const char *const want[] = {"a value", "a list", "a map"};
    return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected %s, found %s", doc->file, c ? c->line : 1,
                    path, want[kind], kind_name(c));
}

int drv_conf_str(const drv_conf_doc *doc, const drv_conf *c, const char *path, const char **out,
                 drv_diag *d)
{
    int rc = drv_conf_expect(doc, c, DRV_CONF_SCALAR, path, d);
    if (!rc)
        *out = c->text;
    return rc;
}

int drv_conf_int(const drv_conf_doc *doc, const drv_conf *c, const char *path, int64_t lo,
                 int64_t hi, int64_t *out, drv_diag *d)
{
    int rc = drv_conf_expect(doc, c, DRV_CONF_SCALAR, path, d);
    if (rc)
        return rc;
    char *end;
    errno = 0;
    long long v = strtoll(c->text, &end, 10);
    if (c->quoted || errno || end == c->text || *end)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected a whole number, found '%s'", doc->file,
                        c->line, path, c->text);
    if (v < lo || v > hi)
        return drv_fail(d, DRV_ERANGE, "%s:%d: %s: %lld is out of range [%lld, %lld]", doc->file,
                        c->line, path, v, (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int drv_conf_double(const drv_conf_doc *doc, const drv_conf *c, const char *path, double lo,
                    double hi, double *out, drv_diag *d)
{
    int rc = drv_conf_expect(doc, c, DRV_CONF_SCALAR, path, d);
    if (rc)
        return rc;
    char *end;
    errno = 0;
    double v = strtod(c->text, &end);
    if (c->quoted || errno || end == c->text || *end || !isfinite(v))
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected a number, found '%s'", doc->file,
                        c->line, path, c->text);
    if (v < lo || v > hi)
        return drv_fail(d, DRV_ERANGE, "%s:%d: %s: %g is out of range [%g, %g]", doc->file, c->line,
                        path, v, lo, hi);
    *out = v;
    return 0;
}

int drv_conf_bool(const drv_conf_doc *doc, const drv_conf *c, const char *path, bool *out,
                  drv_diag *d)
{
    int rc = drv_conf_expect(doc, c, DRV_CONF_SCALAR, path, d);
    if (rc)
        return rc;
    if (!c->quoted && strcmp(c->text, "true") == 0)
        *out = true;
    else if (!c->quoted && strcmp(c->text, "false") == 0)
        *out = false;
    else
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected true or false, found '%s'", doc->file,
                        c->line, path, c->text);
    return 0;
}

int drv_parse_cpu(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0 || !isfinite(v))
        return DRV_EINVAL;
    if (strcmp(end, "m") == 0)
        *out = (int64_t)llround(v);
    else if (*end == 0)
        *out = (int64_t)llround(v * 1000.0);
    else
        return DRV_EINVAL;
    return 0;
}

int drv_parse_mem(const char *s, int64_t *out)
{
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {{"", 1},           {"k", 1e3},           {"M", 1e6},
                 {"G", 1e9},        {"T", 1e12},          {"Ki", 1024.0},
                 {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}};
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0 || !isfinite(v))
        return DRV_EINVAL;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0) {
            double b = v * units[i].mult;
            if (b > 9.0e18)
                return DRV_EINVAL;
            *out = (int64_t)llround(b);
            return 0;
        }
    return DRV_EINVAL;
}

int drv_conf_cpu(const drv_conf_doc *doc, const drv_conf *c, const char *path, int64_t *out,
                 drv_diag *d)
{
    int rc = drv_conf_expect(doc, c, DRV_CONF_SCALAR, path, d);
    if (rc)
        return rc;
    if (drv_parse_cpu(c->text, out) != 0)
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: %s: expected a CPU quantity such as 4, 1.5 or 500m, found '%s'",
                        doc->file, c->line, path, c->text);
    return 0;
}

int drv_conf_mem(const drv_conf_doc *doc, const drv_conf *c, const char *path, int64_t *out,
                 drv_diag *d)
{
    int rc = drv_conf_expect(doc, c, DRV_CONF_SCALAR, path, d);
    if (rc)
        return rc;
    if (drv_parse_mem(c->text, out) != 0)
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: %s: expected a memory quantity such as 128Gi, 512Mi or 1G, "
                        "found '%s'",
                        doc->file, c->line, path, c->text);
    return 0;
}

int drv_conf_check_unused(const drv_conf_doc *doc, const drv_conf *c, const char *path, drv_diag *d)
{
    if (!c || c->kind != DRV_CONF_MAP)
        return 0;
    for (int32_t i = 0; i < c->nitems; i++)
        if (!c->items[i]->used)
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s: unknown field '%s'", doc->file,
                            c->items[i]->line, path, c->items[i]->key);
    return 0;
}
