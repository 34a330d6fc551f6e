/*
 * kube_informer.h - a local cache of one kind of Kubernetes object kept current by list and
 * watch (like client-go's informer), with event handlers.
 *
 * The informer lists the collection (paged), then watches from the list's resourceVersion.
 * Watch events update the cache and call the handlers. When the watch ends at the server's
 * timeout it resumes from the last resourceVersion seen (bookmarks included); when the
 * connection drops it backs off (jittered, capped) and resumes; when the server says the
 * resourceVersion is too old (410 Expired) or a stream is malformed, it lists again and
 * reconciles the cache with the new list — objects missing from it are deleted (with
 * on_delete), changed ones updated, new ones added: the cache converges to the server's state
 * whatever was lost in between.
 *
 * What is cached per object is the caller's: decode turns the API object into a record (a
 * compact struct with only the fields scheduling needs, say); the informer keeps the key
 * ("namespace/name", or "name" for cluster-scoped objects), the resourceVersion and that
 * record. Handlers run on the informer's thread with its lock held; they must not call back
 * into the informer.
 *
 * Creating an informer takes the decode hook, which reads a jansson object: drv_informer_ops,
 * drv_informer_new and drv_informer_apply are declared in src/kube/json.h. What is here reads
 * the cache and drives the informer, and needs no jansson.
 */
#ifndef DROVER_KUBE_INFORMER_H
#define DROVER_KUBE_INFORMER_H

#include "drover/kube.h"

#include <stdatomic.h>

typedef struct drv_informer drv_informer;

typedef struct drv_informer_stats {
    long lists, watches, relists, reconnects, events, decode_errors;
} drv_informer_stats;

void drv_informer_free(drv_informer *inf);

/* Runs list+watch until *stop becomes non-zero (any thread may set it; checked between and
 * during watches).
 * Returns 0 when stopped, or a negative code for an error it cannot recover from (out of
 * memory). Meant for its own thread. */
int drv_informer_run(drv_informer *inf, atomic_int *stop, drv_diag *d);
/* One round: list when needed, then one watch stream (to its timeout, drop or relist
 * request). For callers that drive the informer themselves. */
int drv_informer_step(drv_informer *inf, atomic_int *stop, drv_diag *d);

/* Indexes (pods by node, pods by job): fn gives the value a record is filed under (an interned
 * id > 0), or 0 for none. Add indexes before the informer runs; at most DRV_INFORMER_INDEXES.
 * Returns the index number, or a negative code. */
enum { DRV_INFORMER_INDEXES = 4 };
typedef int32_t (*drv_informer_index_fn)(const void *rec, void *arg);
int drv_informer_add_index(drv_informer *inf, drv_informer_index_fn fn);
/* Calls fn for each cached object filed under value v in index idx (under the lock); returns
 * how many. O(objects under v). */
size_t drv_informer_by_index(drv_informer *inf, int idx, int32_t v,
                             void (*fn)(const char *key, void *rec, void *arg), void *arg);

/* True once the first list has been applied. */
bool drv_informer_synced(drv_informer *inf);
/* The resourceVersion the cache reflects (copied into rv). */
void drv_informer_rv(drv_informer *inf, char *rv, size_t n);
/* Objects in the cache. */
size_t drv_informer_len(drv_informer *inf);
/* Calls fn for each cached object under the lock, in no particular order. */
void drv_informer_foreach(drv_informer *inf,
                          void (*fn)(const char *key, const char *rv, void *rec, void *arg),
                          void *arg);
/* Sorted "key@resourceVersion" lines (the test server's drv_apiserver_dump format), with
 * drv_malloc; the caller frees it. */
char *drv_informer_dump(drv_informer *inf);
drv_informer_stats drv_informer_get_stats(drv_informer *inf);

#endif
