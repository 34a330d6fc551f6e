/*
 * watch.c - incremental line framing and decoding of Kubernetes watch streams (kube_watch.h).
 *
 * Why: a watch is a long-lived chunked HTTP response whose chunks need not align with event
 * lines; re-parsing the whole buffer on every chunk would be quadratic.
 *
 * Algorithm: append the new bytes to the pending buffer, search for '\n' only from `scanned`
 * (bytes already known to hold none), decode each complete line into jansson values
 * (drv_json_loadb, jsonparse.c) or, when the decoder has a document (w->doc: the informers of
 * pods and nodes), into that document, reused from one event to the next (drv_jdoc_parse: no
 * allocation once it has grown to the largest event), then move the unfinished tail to the
 * front. Each byte is scanned once and copied at most twice. A line's end is found before the
 * line before it is handed on, so that each event says whether another one follows in the
 * bytes fed with it (drv_watch_event.more: the informers hand such a run to the scheduler
 * thread as one batch). Both forms accept and refuse the
 * same lines with the same messages, and hand the same type, resourceVersion and offset.
 * Bounds: a single line may not exceed DRV_WATCH_MAX_LINE bytes.
 */
#include "drover/kube_watch.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

static const char *const TYPES[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

const char *drv_watch_type_name(int type)
{
    return type >= 0 && type < 5 ? TYPES[type] : "UNKNOWN";
}

void drv_watch_decoder_init(drv_watch_decoder *w, const char *resource)
{
    memset(w, 0, sizeof *w);
    snprintf(w->resource, sizeof w->resource, "%s", resource ? resource : "?");
}

void drv_watch_decoder_fini(drv_watch_decoder *w)
{
    if (!w)
        return;
    drv_free(w->buf);
    w->buf = NULL;
    w->len = w->cap = w->scanned = 0;
}

/* The event's line parsed: 0, or DRV_ENOMEM / DRV_EPARSE (malformed JSON) with d set. As a
 * jansson value in *ev, or into w->doc when the decoder hands documents (*ev left NULL). */
static int parse_line(drv_watch_decoder *w, const char *line, size_t n, uint64_t off, json_t **ev,
                      drv_diag *d)
{
    json_error_t je;
    *ev = NULL;
    bool ok = w->doc ? drv_jdoc_parse(w->doc, line, n, w->skip, "object", &je) == 0
                     : (*ev = drv_json_loadb_skip(line, n, w->skip, "object", &je)) != NULL;
    if (!ok && json_error_code(&je) == json_error_out_of_memory)
        return drv_fail(d, DRV_ENOMEM, "watch %s: out of memory", w->resource);
    if (!ok)
        return drv_fail(
            d, DRV_EPARSE, "watch %s after resourceVersion %s: byte %llu: malformed event: %s",
            w->resource, w->last_rv[0] ? w->last_rv : "(none)",
            (unsigned long long)(off + (uint64_t)(je.position > 0 ? je.position : 0)), je.text);
    return 0;
}

/* One line (not blank) decoded and handed to cb; more: another event follows it in what was
 * fed. */
static int decode_line(drv_watch_decoder *w, const char *line, size_t n, uint64_t off, bool more,
                       drv_watch_cb cb, void *arg, drv_diag *d)
{
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
        n--; /* (never to 0: feed hands no blank line) */
    json_t *ev;
    int rc = parse_line(w, line, n, off, &ev, d);
    if (rc)
        return rc;
    /* The same fields read from either form: a member's last value when repeated (as jansson
     * keeps it), NULL or -1 when absent or of another type. */
    const drv_jdoc *doc = w->doc;
    int32_t dobj = doc ? drv_jdoc_get(doc, 0, "object") : -1;
    json_t *obj = doc ? NULL : json_object_get(ev, "object");
    const char *type = doc ? drv_jdoc_str(doc, drv_jdoc_get(doc, 0, "type"))
                           : json_string_value(json_object_get(ev, "type"));
    bool is_obj = doc ? drv_jdoc_type(doc, dobj) == DRV_JOBJECT : json_is_object(obj);
    int t = -1;
    for (int i = 0; type && i < 5; i++)
        if (!strcmp(type, TYPES[i]))
            t = i;
    if (t < 0 || !is_obj) {
        rc = drv_fail(d, DRV_EPARSE, "watch %s after resourceVersion %s: byte %llu: %s%s%s",
                      w->resource, w->last_rv[0] ? w->last_rv : "(none)", (unsigned long long)off,
                      t < 0 ? "unknown event type " : "event without an object",
                      t < 0 ? (type ? type : "(missing)") : "", "");
    } else {
        const char *rv =
            doc ? drv_jdoc_str(doc, drv_jdoc_get(doc, drv_jdoc_get(doc, dobj, "metadata"),
                                                 "resourceVersion"))
                : json_string_value(
                      json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
        drv_watch_event e = {.type = t,
                             .object = obj,
                             .doc = doc,
                             .obj = dobj,
                             .rv = rv ? rv : "",
                             .offset = off,
                             .more = more};
        if (rv && t != DRV_WATCH_ERROR)
            snprintf(w->last_rv, sizeof w->last_rv, "%s", rv);
        rc = cb ? cb(&e, arg) : 0;
    }
    json_decref(ev);
    return rc;
}

/* The end ('\n') of the next line at or after *at that is not blank, searching for newlines
 * from `from` (bytes before it hold none after *at); *at is moved past the blank lines it
 * skips. w->len when no such line is complete. */
static size_t next_line(const drv_watch_decoder *w, size_t *at, size_t from)
{
    for (;;) {
        const char *nl = memchr(w->buf + from, '\n', w->len - from);
        if (!nl)
            return w->len;
        size_t end = (size_t)(nl - w->buf), k = *at;
        while (k < end && (w->buf[k] == '\r' || w->buf[k] == ' '))
            k++;
        if (k < end)
            return end;
        *at = from = end + 1; /* (blank: nothing to decode) */
    }
}

int drv_watch_decoder_feed(drv_watch_decoder *w, const char *data, size_t n, drv_watch_cb cb,
                           void *arg, drv_diag *d)
{
    if (w->len + n + 1 > w->cap) {
        size_t nc = (w->len + n + 1) * 2;
        char *nb = drv_realloc(w->buf, nc);
        if (!nb)
            return drv_fail(d, DRV_ENOMEM, "watch %s: out of memory", w->resource);
        w->buf = nb;
        w->cap = nc;
    }
    memcpy(w->buf + w->len, data, n);
    w->len += n;
    /* Each line's end is found before the previous line is decoded, so that an event says
     * whether another follows in these bytes (drv_watch_event.more). */
    size_t start = 0;
    size_t end = next_line(w, &start, w->scanned);
    int rc = 0;
    while (end < w->len) {
        size_t after = end + 1, next = next_line(w, &after, end + 1);
        rc = decode_line(w, w->buf + start, end - start, w->offset + start, next < w->len, cb, arg,
                         d);
        if (rc) {
            start = end + 1;
            break;
        }
        start = after;
        end = next;
    }
    memmove(w->buf, w->buf + start, w->len - start);
    w->len -= start;
    w->offset += start;
    w->scanned = rc ? 0 : w->len;
    if (!rc && w->len > DRV_WATCH_MAX_LINE)
        return drv_fail(d, DRV_ERANGE, "watch %s: byte %llu: event line longer than %u bytes",
                        w->resource, (unsigned long long)w->offset, DRV_WATCH_MAX_LINE);
    return rc;
}

int drv_watch_decoder_finish(drv_watch_decoder *w, drv_diag *d)
{
    size_t n = w->len;
    while (n && (w->buf[n - 1] == '\r' || w->buf[n - 1] == ' '))
        n--;
    if (n)
        return drv_fail(d, DRV_EPARSE,
                        "watch %s after resourceVersion %s: byte %llu: stream ended inside an "
                        "event (%zu bytes without a newline)",
                        w->resource, w->last_rv[0] ? w->last_rv : "(none)",
                        (unsigned long long)w->offset, n);
    return 0;
}
