/*
 * listdec.h - incremental decoding of a Kubernetes list answer (src/kube only; tests add src/kube
 * to their include path).
 *
 * A list page ({"kind":..,"apiVersion":..,"metadata":{..},"items":[{..},{..}]}) is fed as the
 * bytes arrive; each item is handed to a callback as soon as its closing brace is seen, decoded
 * alone (a tree of one object, not of the whole page), and its bytes are dropped. The list's
 * metadata is kept for resourceVersion and continue. Memory: one item (and the metadata) at a
 * time, at most DRV_LIST_MAX_ITEM bytes each.
 */
#ifndef DROVER_KUBE_LISTDEC_H
#define DROVER_KUBE_LISTDEC_H

#include "json.h"
#include "kbuf.h"

#include <stdint.h>

#define DRV_LIST_MAX_ITEM (16u << 20) /* one item (or the metadata) larger than this: an error */

/* Called for every item, borrowed for the call; 0 to go on, or a negative code that feed
 * returns unchanged. */
typedef int (*drv_list_item_fn)(json_t *item, void *arg);

typedef struct drv_list_decoder {
    const char *what;    /* the list, for messages (borrowed): "GET /api/v1/pods" */
    drv_list_item_fn cb; /* the item callback and its argument; NULL: items are skipped, not
                            parsed (only the metadata is read) */
    void *arg;
    drv_kbuf *raw;           /* optional: every byte fed is also appended here */
    bool meta_only;          /* with raw and no callback: once the metadata is read, the rest of the
                                answer is only appended to raw, not scanned (its reader parses it
                                whole later and finds what is wrong with it then) */
    const char *const *skip; /* optional: members of each item not built (drv_json_loadb_skip) */
    drv_kube_doc_cb doc_cb;  /* optional: each item parsed into doc and handed here instead of
                                to cb (set one of the two) */
    drv_jdoc doc;            /* the item's document, reused from one item to the next */
    char *buf;               /* the item or metadata being captured (drv_malloc'd) */
    size_t len, cap;         /* bytes in buf, allocated */
    uint64_t offset;         /* bytes fed so far */
    int depth;     /* containers open: 1 inside the list object, 2 inside items or metadata */
    char open[3];  /* open[d]: '{' or '[' that opened depth d, for d = 1, 2 */
    bool str, esc; /* inside a string; after a backslash in it */
    bool want_key; /* depth 1: the next string is a key */
    bool in_key;   /* depth 1: reading a key into key[] */
    char key[16];  /* the current top-level key (truncated: only short ones matter) */
    size_t keylen;
    bool in_items;  /* inside the items array (depth 2) */
    bool has_items; /* an items array was seen */
    bool in_meta;   /* capturing the metadata object */
    bool in_item;   /* capturing one item (depth >= 3) */
    bool done;      /* the list object closed */
    json_t *meta;   /* the list's metadata once read (owned), or NULL */
    long items;     /* items handed to cb */
} drv_list_decoder;

void drv_list_decoder_init(drv_list_decoder *l, const char *what, drv_list_item_fn cb, void *arg);
/* Frees what the decoder holds (the metadata included). */
void drv_list_decoder_fini(drv_list_decoder *l);
/* Back to its state after init (same what, callbacks, raw, meta_only and skip; raw emptied): the
 * answer is read again from its first byte. */
void drv_list_decoder_reset(drv_list_decoder *l);
/* Feeds n bytes. 0, the callback's code, DRV_EPARSE (not a list: the byte offset named),
 * DRV_ERANGE (an item too long) or DRV_ENOMEM. After an error the decoder takes no more. */
int drv_list_decoder_feed(drv_list_decoder *l, const char *data, size_t n, drv_diag *d);
/* After the last byte: DRV_EPARSE unless a whole list object was read. */
int drv_list_decoder_finish(drv_list_decoder *l, drv_diag *d);
/* metadata.resourceVersion / metadata.continue of the list ("" when absent); borrowed from the
 * decoder until fini. */
const char *drv_list_decoder_rv(const drv_list_decoder *l);
const char *drv_list_decoder_continue(const drv_list_decoder *l);

#endif
