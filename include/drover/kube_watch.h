/*
 * kube_watch.h - incremental decoding of a Kubernetes watch stream: one JSON event per line,
 * {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}.
 *
 * Bytes are fed as they arrive (any split, including mid-line); each complete line is decoded
 * once and handed to a callback. A partial line waits in the decoder's buffer and is never
 * re-parsed. Bad input (malformed JSON, an unknown event type, a line without an object, a
 * stream that ends mid-line) is DRV_EPARSE with the resource, the last resourceVersion seen and
 * the byte offset of the offending line in the stream.
 *
 * The event (it carries the decoded json_t, or the document it was parsed into), its callback
 * and drv_watch_decoder_feed are declared in src/kube/json.h: this header needs no jansson.
 */
#ifndef DROVER_KUBE_WATCH_H
#define DROVER_KUBE_WATCH_H

#include "drover/base.h"

enum drv_watch_type {
    DRV_WATCH_ADDED,
    DRV_WATCH_MODIFIED,
    DRV_WATCH_DELETED,
    DRV_WATCH_BOOKMARK,
    DRV_WATCH_ERROR,
};

typedef struct drv_watch_decoder {
    char *buf; /* bytes of the current partial line */
    size_t len, cap;
    size_t scanned;    /* buf[0..scanned) is known to hold no newline */
    uint64_t offset;   /* stream offset of buf[0] */
    char resource[64]; /* for messages: "pods" */
    char last_rv[32];  /* resourceVersion of the last event decoded */
    /* members of each event's object not built (src/kube/json.h: drv_json_loadb_skip's paths,
     * borrowed); NULL (init's default): none */
    const char *const *skip;
    /* when set (the caller's, src/kube/json.h, kept until fini): each event is parsed into this
     * document and handed as one (drv_watch_event.doc), no jansson value built; NULL (init's
     * default): events carry jansson values */
    struct drv_jdoc *doc;
} drv_watch_decoder;

#define DRV_WATCH_MAX_LINE (16u << 20) /* one event larger than this is an error */

void drv_watch_decoder_init(drv_watch_decoder *w, const char *resource);
void drv_watch_decoder_fini(drv_watch_decoder *w);
/* The stream ended: DRV_EPARSE if a partial line is left (a truncated event). */
int drv_watch_decoder_finish(drv_watch_decoder *w, drv_diag *d);
/* Name of an event type ("ADDED"). */
const char *drv_watch_type_name(int type);

#endif
