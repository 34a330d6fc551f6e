/*
 * listdec.c - incremental decoding of a Kubernetes list answer (listdec.h).
 *
 * Why: a page of 500 pods is ~250 kB; parsing it into one jansson tree after the last byte
 * arrived makes the client wait for the whole transfer, then build (and page-fault in) a tree
 * of the whole page before the first item is used. Here each item is parsed alone as soon as it
 * is complete, while the rest of the page is still on the wire, and its memory is reused by the
 * next one.
 *
 * Algorithm: one pass over the bytes tracks only what the list's shape needs: inside a string or
 * not (and escapes), the nesting depth, and at depth 1 the current key. The value of "metadata"
 * (depth 2) and each element of "items" (depth 3 and deeper) are captured verbatim and parsed into
 * jansson values (drv_json_loadb, jsonparse.c) when their closing brace arrives; every other
 * value is skipped. Each byte is looked at
 * once and copied at most once (runs are copied with memcpy, at a capture's end or the chunk's;
 * inside strings, memchr jumps to the next quote or backslash). With a document callback an
 * item whole in the chunk (all of them when a page is fed at once, as pager.c does) is parsed
 * where it lies instead: neither scanned for its brackets nor copied.
 *
 * Example: feeding {"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[{"a":1},{"b":2}]}
 * in chunks of any size calls cb with {"a":1}, then {"b":2}; rv is then "7".
 */
#include "listdec.h"

#include <stdio.h>
#include <string.h>

void drv_list_decoder_init(drv_list_decoder *l, const char *what, drv_list_item_fn cb, void *arg)
{
    memset(l, 0, sizeof *l);
    l->what = what ? what : "list";
    l->cb = cb;
    l->arg = arg;
}

void drv_list_decoder_fini(drv_list_decoder *l)
{
    if (!l)
        return;
    drv_free(l->buf);
    drv_jdoc_fini(&l->doc);
    json_decref(l->meta);
    l->buf = NULL;
    l->meta = NULL;
    l->len = l->cap = 0;
}

void drv_list_decoder_reset(drv_list_decoder *l)
{
    drv_list_decoder_fini(l);
    drv_kbuf *raw = l->raw;
    const char *const *skip = l->skip;
    drv_kube_doc_cb doc_cb = l->doc_cb;
    bool meta_only = l->meta_only;
    drv_list_decoder_init(l, l->what, l->cb, l->arg);
    l->meta_only = meta_only;
    l->raw = raw;
    l->skip = skip;
    l->doc_cb = doc_cb;
    if (raw)
        raw->n = 0;
}

static const char *meta_str(const drv_list_decoder *l, const char *field)
{
    const char *s = json_string_value(json_object_get(l->meta, field));
    return s ? s : "";
}

const char *drv_list_decoder_rv(const drv_list_decoder *l)
{
    return meta_str(l, "resourceVersion");
}

const char *drv_list_decoder_continue(const drv_list_decoder *l)
{
    return meta_str(l, "continue");
}

/* Appends n captured bytes. */
static int keep(drv_list_decoder *l, const char *p, size_t n, drv_diag *d)
{
    if (l->len + n > DRV_LIST_MAX_ITEM)
        return drv_fail(d, DRV_ERANGE, "%s: byte %llu: an item longer than %u bytes", l->what,
                        (unsigned long long)l->offset, DRV_LIST_MAX_ITEM);
    if (l->len + n > l->cap) {
        size_t cap = l->cap ? l->cap : 4096;
        while (cap < l->len + n)
            cap *= 2;
        char *b = drv_realloc(l->buf, cap);
        if (!b)
            return drv_fail(d, DRV_ENOMEM, "%s: out of memory", l->what);
        l->buf = b;
        l->cap = cap;
    }
    memcpy(l->buf + l->len, p, n);
    l->len += n;
    return 0;
}

/* The captured item or metadata is complete: parse it, hand it on or keep it. */
static int captured(drv_list_decoder *l, uint64_t at, drv_diag *d)
{
    json_error_t je;
    json_t *v = NULL;
    bool doc = l->in_item && l->doc_cb;
    bool ok = doc ? drv_jdoc_parse(&l->doc, l->buf, l->len, l->skip, NULL, &je) == 0
                  : (v = drv_json_loadb_skip(l->buf, l->len, l->in_item ? l->skip : NULL, NULL,
                                             &je)) != NULL;
    size_t n = l->len;
    l->len = 0;
    if (!ok && json_error_code(&je) == json_error_out_of_memory)
        return drv_fail(d, DRV_ENOMEM, "%s: out of memory", l->what);
    if (!ok)
        return drv_fail(d, DRV_EPARSE, "%s: byte %llu: malformed %s: %s", l->what,
                        (unsigned long long)(at - n + 1 + (je.position > 0 ? je.position : 0)),
                        l->in_item ? "item" : "metadata", je.text);
    int rc = 0;
    if (l->in_item) {
        l->in_item = false;
        l->items++;
        rc = doc ? l->doc_cb(&l->doc, l->arg) : l->cb ? l->cb(v, l->arg) : 0;
        json_decref(v);
    } else {
        l->in_meta = false;
        json_decref(l->meta);
        l->meta = v;
    }
    return rc;
}

/* The decoder failed: it takes nothing more. Returns rc. */
static int failed(drv_list_decoder *l, int rc)
{
    l->done = true;
    l->depth = -1;
    return rc;
}

static int bad(drv_list_decoder *l, uint64_t at, const char *what, drv_diag *d)
{
    return failed(
        l, drv_fail(d, DRV_EPARSE, "%s: byte %llu: %s", l->what, (unsigned long long)at, what));
}

/* An opening bracket outside any capture: -1 when it opens an item that is no object. */
static int open_bracket(drv_list_decoder *l, char c, bool *start)
{
    if (l->depth == 1) {
        l->open[2] = c;
        if (c == '[' && !strcmp(l->key, "items"))
            l->in_items = l->has_items = true;
        else if (c == '{' && !strcmp(l->key, "metadata"))
            *start = l->in_meta = true;
    } else if (l->depth == 2 && l->in_items) {
        if (c != '{')
            return -1;
        /* without a callback the item is only skipped */
        *start = l->in_item = l->cb != NULL || l->doc_cb != NULL;
    }
    l->depth++;
    return 0;
}

/* One byte outside strings; i its index in the chunk, seg where the capture run began. */
static int structural(drv_list_decoder *l, const char *data, size_t i, size_t *seg, drv_diag *d)
{
    char c = data[i];
    uint64_t at = l->offset + i;
    bool capturing = l->in_item || l->in_meta;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
        return 0;
    if (l->depth == 0) {
        if (c != '{')
            return bad(l, at, "a list must be a JSON object", d);
        l->depth = 1;
        l->open[1] = '{';
        l->want_key = true;
        return 0;
    }
    switch (c) {
    case '"':
        l->str = true;
        if (!capturing && l->depth == 1 && l->want_key) {
            l->in_key = true;
            l->want_key = false;
            l->keylen = 0;
            l->key[0] = 0;
        } else if (!capturing && l->depth == 2 && l->in_items) {
            return bad(l, at, "an item of the list is not an object", d);
        }
        return 0;
    case '{':
    case '[':
        if (capturing) {
            l->depth++;
            return 0;
        } else {
            bool start = false;
            if (open_bracket(l, c, &start) != 0)
                return bad(l, at, "an item of the list is not an object", d);
            if (start)
                *seg = i;
            return 0;
        }
    case '}':
    case ']':
        if (l->depth <= 2 && c != (l->open[l->depth] == '{' ? '}' : ']'))
            return bad(l, at, "mismatched bracket", d);
        if ((l->in_item && l->depth == 3) || (l->in_meta && l->depth == 2)) {
            int rc = keep(l, data + *seg, i + 1 - *seg, d);
            *seg = SIZE_MAX;
            if (!rc)
                rc = captured(l, at, d);
            if (rc)
                return failed(l, rc);
        } else if (l->depth == 2 && l->in_items) {
            l->in_items = false;
        }
        if (--l->depth == 0)
            l->done = true;
        return 0;
    case ',':
        if (l->depth == 1)
            l->want_key = true;
        return 0;
    case ':':
        return 0;
    default: /* numbers, true, false, null */
        if (!capturing && l->depth == 2 && l->in_items)
            return bad(l, at, "an item of the list is not an object", d);
        return 0;
    }
}

/* The item at p (its opening brace; n bytes of the chunk from there) parsed where it lies,
 * when it is whole in the chunk: 0 (handed to doc_cb, *used its bytes), 1 (not whole here, or
 * malformed: it is captured as any item, whose parse says what is wrong), or doc_cb's code or
 * DRV_ENOMEM. Saves the item's copy and the scan of its bytes for their brackets. */
static int in_place(drv_list_decoder *l, const char *p, size_t n, size_t *used, drv_diag *d)
{
    json_error_t je;
    if (drv_jdoc_parse_one(&l->doc, p, n, l->skip, used, &je) != 0)
        return json_error_code(&je) == json_error_out_of_memory
                   ? drv_fail(d, DRV_ENOMEM, "%s: out of memory", l->what)
                   : 1;
    l->items++;
    return l->doc_cb(&l->doc, l->arg);
}

/* meta_only's end: the metadata is read, the rest is only kept in raw. */
static bool meta_read(const drv_list_decoder *l)
{
    return l->meta_only && l->raw && l->meta;
}

int drv_list_decoder_feed(drv_list_decoder *l, const char *data, size_t n, drv_diag *d)
{
    if (l->depth < 0)
        return drv_fail(d, DRV_EPARSE, "%s: byte %llu: fed after an error", l->what,
                        (unsigned long long)l->offset);
    if (l->raw && n && drv_kbuf_write((char *)data, 1, n, l->raw) != n)
        return failed(l, drv_fail(d, l->raw->oom ? DRV_ENOMEM : DRV_ERANGE, "%s: %s", l->what,
                                  l->raw->oom ? "out of memory" : "answer too long"));
    if (meta_read(l)) { /* all that was wanted is read */
        l->offset += n;
        return 0;
    }
    size_t seg = l->in_item || l->in_meta ? 0 : SIZE_MAX; /* a capture going on continues here */
    for (size_t i = 0; i < n; i++) {
        char c = data[i];
        if (l->str && !l->esc && !l->in_key && c != '"' && c != '\\') {
            /* most bytes are inside strings: skip to the next quote or backslash at once */
            const char *q = memchr(data + i, '"', n - i);
            const char *e = memchr(data + i, '\\', (size_t)((q ? q : data + n) - (data + i)));
            i = (size_t)((e ? e : q ? q : data + n) - data) - 1;
            continue;
        }
        if (l->str) {
            if (l->esc)
                l->esc = false;
            else if (c == '\\')
                l->esc = true;
            else if (c == '"')
                l->str = l->in_key = false;
            if (l->in_key && l->keylen + 1 < sizeof l->key) {
                l->key[l->keylen++] = c;
                l->key[l->keylen] = 0;
            }
            continue;
        }
        if (l->done) {
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
                continue;
            return bad(l, l->offset + i, "data after the list", d);
        }
        if (c == '{' && l->doc_cb && l->depth == 2 && l->in_items) {
            size_t used = 0;
            int rc = in_place(l, data + i, n - i, &used, d);
            if (rc < 0)
                return failed(l, rc);
            if (rc == 0) {
                i += used - 1; /* (at its closing brace: depth 2 again, as after a capture) */
                continue;
            }
        }
        int rc = structural(l, data, i, &seg, d);
        if (rc)
            return rc;
        if (meta_read(l)) /* (at the metadata's closing brace: no capture goes on) */
            break;
    }
    if (seg != SIZE_MAX && (l->in_item || l->in_meta)) {
        int rc = keep(l, data + seg, n - seg, d);
        if (rc)
            return failed(l, rc);
    }
    l->offset += n;
    return 0;
}

int drv_list_decoder_finish(drv_list_decoder *l, drv_diag *d)
{
    if ((l->done && l->depth == 0) || meta_read(l))
        return 0;
    return drv_fail(d, DRV_EPARSE, "%s: byte %llu: the answer ended inside the list", l->what,
                    (unsigned long long)l->offset);
}
