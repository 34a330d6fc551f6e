/*
 * conf.c - builds a drv_conf tree from libyaml parser events, and reads typed values from it
 * with messages that name file, line and field.
 *
 * The tree is built with an explicit stack: a MAPPING_START pushes a map, SCALARs inside a map
 * alternate between key and value, and every finished node is attached to the node below it
 * on the stack. Depth is bounded (MAX_DEPTH) so hostile input cannot exhaust memory.
 */
#include "drover/conf.h"
#include "drover/file.h"
#include "drover/strtab.h"
#include "drover/text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

enum { MAX_DEPTH = 64 };
/* A map with more keys than this finds duplicates through a hash table (one per open map), so
 * a map of n keys costs O(n), not O(n^2): 200,000 keys took a minute with the plain scan. */
enum { KEY_SCAN_MAX = 8 };

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
    drv_strtab *keys[MAX_DEPTH];  /* for maps of more than KEY_SCAN_MAX keys: the keys seen */
    int depth;
    drv_conf *root;
} builder;

/* 1 when map top (on top of b's stack) already has key, 0 when not, DRV_ENOMEM. Small maps are
 * scanned; from KEY_SCAN_MAX keys on, the keys go into a table (an empty key, which the table
 * holds from the start, is always looked for by the scan). */
static int key_seen(builder *b, const drv_conf *top, const char *key)
{
    drv_strtab **t = &b->keys[b->depth - 1];
    if (top->nitems < KEY_SCAN_MAX || !*key) {
        for (int32_t i = 0; i < top->nitems; i++)
            if (strcmp(top->items[i]->key, key) == 0)
                return 1;
        if (top->nitems < KEY_SCAN_MAX - 1 || !*key)
            return 0;
    }
    if (!*t) { /* the map reaches KEY_SCAN_MAX keys: its earlier keys enter the table */
        if (!(*t = drv_strtab_new()))
            return DRV_ENOMEM;
        for (int32_t i = 0; i < top->nitems; i++)
            if (drv_strtab_intern(*t, top->items[i]->key) < 0)
                return DRV_ENOMEM;
    }
    int32_t before = drv_strtab_count(*t);
    int32_t id = drv_strtab_intern(*t, key);
    if (id < 0)
        return DRV_ENOMEM;
    return id < before;
}

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
            int dup = key_seen(b, top, n->text);
            if (dup) {
                int line = n->line;
                if (dup < 0)
                    drv_fail(d, DRV_ENOMEM, "%s: out of memory", file);
                else
                    drv_fail(d, DRV_EPARSE, "%s:%d: duplicate key '%s'", file, line, n->text);
                conf_free(n);
                return dup < 0 ? DRV_ENOMEM : DRV_EPARSE;
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
    /* A NUL byte would end the text early for some readers: refuse it rather than guess. */
    const char *nul = memchr(text, 0, len);
    if (nul)
        return drv_fail(d, DRV_EPARSE, "%s: byte %zu: a NUL byte; expected text", name,
                        (size_t)(nul - text));
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
            b.keys[b.depth] = NULL;
            b.stack[b.depth++] = n;
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
            drv_conf *n = b.stack[--b.depth];
            drv_strtab_free(b.keys[b.depth]);
            b.keys[b.depth] = NULL;
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
        drv_strtab_free(b.keys[b.depth]);
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
    char *buf = NULL;
    size_t len = 0;
    int rc = drv_file_read_max(path, DRV_MAX_CONF_BYTES, "a YAML file", &buf, &len, d);
    if (!rc)
        rc = drv_conf_load_string(doc, path, buf, len, d);
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

int drv_conf_name(const drv_conf_doc *doc, const drv_conf *c, const char *path, char *dst,
                  size_t cap, drv_diag *d)
{
    const char *s;
    int rc = drv_conf_str(doc, c, path, &s, d);
    if (rc)
        return rc;
    if (!drv_name_ok(s, cap - 1)) {
        char where[600];
        snprintf(where, sizeof where, "%s:%d: %s", doc->file, c->line, path);
        return drv_name_fail(d, where, s, cap - 1);
    }
    snprintf(dst, cap, "%s", s);
    return 0;
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
    double v;
    if (c->quoted || drv_parse_decimal(c->text, &v) != 0)
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

/*
 * The syntax of a Kubernetes quantity's number, decimal only: digits [. digits]
 * [e|E [+|-] digits], at least one digit before the exponent. Returns where the suffix starts,
 * or NULL. strtod alone also takes "0x10", "inf", " 5" and "-1", which Kubernetes refuses.
 */
static const char *quantity_number(const char *s)
{
    const char *p = s;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            digits++;
    if (!digits)
        return NULL;
    if ((*p == 'e' || *p == 'E') && p[1] && p[1] != 'i') {
        const char *q = p + 1;
        if (*q == '+' || *q == '-')
            q++;
        if (*q < '0' || *q > '9')
            return NULL;
        while (*q >= '0' && *q <= '9')
            q++;
        p = q;
    }
    return p;
}

int drv_parse_cpu(const char *s, int64_t *out)
{
    const char *end = quantity_number(s);
    if (!end || (*end && strcmp(end, "m") != 0))
        return DRV_EINVAL;
    double v = strtod(s, NULL) * (*end ? 1.0 : 1000.0);
    if (!isfinite(v) || v > (double)DRV_MAX_CPU_MILLI)
        return DRV_ERANGE; /* checked before the conversion: llround of 1e33 is undefined */
    *out = (int64_t)llround(v);
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
    const char *end = quantity_number(s);
    if (!end)
        return DRV_EINVAL;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0) {
            double b = strtod(s, NULL) * units[i].mult;
            if (!isfinite(b) || b > (double)DRV_MAX_MEM_BYTES)
                return DRV_ERANGE;
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
    rc = drv_parse_cpu(c->text, out);
    if (rc == DRV_ERANGE)
        return drv_fail(d, rc, "%s:%d: %s: %s is more than the largest CPU quantity accepted, %lld",
                        doc->file, c->line, path, c->text, DRV_MAX_CPU_MILLI / 1000);
    if (rc)
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
    rc = drv_parse_mem(c->text, out);
    if (rc == DRV_ERANGE)
        return drv_fail(d, rc,
                        "%s:%d: %s: %s is more than the largest memory quantity accepted, %lldTi",
                        doc->file, c->line, path, c->text, DRV_MAX_MEM_BYTES >> 40);
    if (rc)
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
