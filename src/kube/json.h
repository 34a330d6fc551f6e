/*
 * json.h - the parts of the Kubernetes client that take or give jansson objects, private to
 * src/kube (and to tests and benchmarks that use internals: they add src/kube to their include
 * path). The public headers (drover/kube.h, kube_types.h, kube_watch.h, kube_informer.h) need
 * no jansson; a program outside src/kube drives the controller, the emulator and informers
 * through them, never JSON.
 */
#ifndef DROVER_KUBE_JSON_H
#define DROVER_KUBE_JSON_H

#include "drover/kube.h"
#include "drover/kube_informer.h"
#include "drover/kube_types.h"
#include "drover/kube_watch.h"

#include <jansson.h>

/* ---- parsing (jsonparse.c) ------------------------------------------------------------------ */

/* v's JSON text (json_dumps with flags) in memory from drv_malloc, which the caller drv_free's
 * (json_dumps' own is malloc'd); NULL when memory ran out. */
char *drv_json_dump(const json_t *v, size_t flags);

/* n bytes of JSON text (an object or an array at the top) parsed into a new jansson value, as
 * json_loadb(buf, n, 0, err) parses them (the same values, the same texts refused) but about
 * four times as fast; the list and watch decoders use it for every object they decode. NULL
 * when the text is not JSON or memory ran out: err (may be NULL) then says where (position: a
 * byte offset), why (text) and json_error_code(err) which (json_error_out_of_memory: an
 * allocation failed). The caller json_decref's the value. */
json_t *drv_json_loadb(const char *buf, size_t n, json_error_t *err);

/* True when the n bytes at s are valid UTF-8 (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF): the check drv_json_loadb makes of a string's bytes, accepting and
 * refusing what jansson's json_stringn does (control characters and NUL are valid). O(n). */
bool drv_json_utf8(const char *s, size_t n);

/* drv_json_loadb without the members at paths (NULL-terminated, at most 16, each of dot-separated
 * object keys from the top value, or from its member root when root is not NULL: "object" for
 * a watch event; at most 8 keys with root): those are checked as JSON as the rest is (the same
 * texts refused) but not built, and absent from the value. For what the decoders never read
 * (drv_kube_unread_pod, drv_kube_unread_node): on recorded objects about half their bytes.
 * Example: paths {"metadata.managedFields", NULL} on {"metadata":{"name":"a","managedFields":
 * [...]}} gives {"metadata":{"name":"a"}}. */
json_t *drv_json_loadb_skip(const char *buf, size_t n, const char *const *paths, const char *root,
                            json_error_t *err);

/* The paths (drv_json_loadb_skip's, borrowed: static lists) that k's lists (drv_kube_list) and
 * watches (drv_kube_watch) leave out of the objects they decode; NULL: none (the default). Set
 * before the client is used. */
void drv_kube_skip_unread(drv_kube *k, const char *const *paths);
const char *const *drv_kube_unread(const drv_kube *k);

/* ---- documents: JSON text as a flat tree, without jansson (jsonparse.c, jsondoc.c) -------- */

/* The informers of pods and nodes read a few dozen fields of each object once: a jansson tree
 * costs them an allocation per value and a hash table per object. A document is the same
 * tree as an array of nodes and one text buffer, both reused from one object to the next:
 * after the first objects, parsing allocates nothing. */
enum drv_jtype {
    DRV_JNONE, /* (drv_jdoc_type of an absent value: index -1) */
    DRV_JOBJECT,
    DRV_JARRAY,
    DRV_JSTRING,
    DRV_JINT,
    DRV_JREAL,
    DRV_JTRUE,
    DRV_JFALSE,
    DRV_JNULL,
};

typedef struct drv_jnode {
    const char *key; /* a member's key (NUL-terminated, in the document's text); NULL in an
                        array and at the top */
    const char *str; /* a string's value (NUL-terminated, unescaped, in the text) */
    union {
        json_int_t i; /* an integer's value */
        double r;     /* a real's value */
    };
    uint32_t klen;       /* bytes of key */
    uint32_t len;        /* bytes of str; members of an object, elements of an array */
    uint32_t koff, soff; /* (where key and str are in the text: the parse's own) */
    int32_t child, next; /* first member or element, next sibling (indexes; -1: none) */
    uint8_t type;        /* enum drv_jtype */
} drv_jnode;

typedef struct drv_jdoc {
    drv_jnode *v;   /* the nodes; v[0] the top value, children after their parent */
    int32_t n, cap; /* nodes used, allocated */
    char *text;     /* the strings and keys, each NUL-terminated (as long as the largest
                       document parsed, at most) */
    size_t tcap;    /* bytes allocated in text */
} drv_jdoc;

/* A document holds no memory after init (all zero is the same); fini frees it. */
void drv_jdoc_init(drv_jdoc *doc);
void drv_jdoc_fini(drv_jdoc *doc);
/* n bytes parsed into doc (replacing what it held), accepting and refusing exactly what
 * drv_json_loadb_skip(buf, n, paths, root, err) does, with the same err (0 or -1); paths'
 * members are checked, not kept. Of an object's repeated key only the last member is found
 * by drv_jdoc_get (as jansson keeps the last value). */
int drv_jdoc_parse(drv_jdoc *doc, const char *buf, size_t n, const char *const *paths,
                   const char *root, json_error_t *err);
/* The object or array at buf (the first of n bytes, whitespace first allowed) parsed into doc
 * as drv_jdoc_parse parses it, what follows it left alone: *used the bytes it took. For a
 * list page's items, parsed where they lie (listdec.c). */
int drv_jdoc_parse_one(drv_jdoc *doc, const char *buf, size_t n, const char *const *paths,
                       size_t *used, json_error_t *err);
/* The member key of object node obj (its last one when repeated), or -1 (also when obj is -1
 * or no object). Linear in obj's members. */
int32_t drv_jdoc_get(const drv_jdoc *doc, int32_t obj, const char *key);
/* Node v's type (DRV_JNONE for -1), its string (NULL unless a string). */
int drv_jdoc_type(const drv_jdoc *doc, int32_t v);
const char *drv_jdoc_str(const drv_jdoc *doc, int32_t v);
/* Node v as a new jansson value (the caller json_decref's it), equal to what drv_json_loadb_skip
 * gives for the same text; NULL when memory ran out. For the decoders' rare cases and tests. */
json_t *drv_jdoc_json(const drv_jdoc *doc, int32_t v);

/* ---- watch stream decoding (kube_watch.h) --------------------------------------------------- */

typedef struct drv_watch_event {
    int type;            /* enum drv_watch_type */
    json_t *object;      /* borrowed for the duration of the callback; NULL when doc is set */
    const drv_jdoc *doc; /* when the decoder hands documents (drv_watch_decoder.doc): the
                            event's line, its object at node obj; borrowed for the callback
                            (the next event is parsed into the same document); else NULL */
    int32_t obj;         /* the object's node in doc (-1 without doc) */
    const char *rv;      /* object's metadata.resourceVersion, or "" */
    uint64_t offset;     /* byte offset of the event's line in the stream */
    bool more; /* another event follows this one in the bytes fed with it (complete, not blank:
                  its callback comes next, unless its line is malformed or this one's callback
                  fails), so a consumer may gather them before acting; false for the last */
} drv_watch_event;

/* Returns 0 to continue, or a negative code that feed returns unchanged. */
typedef int (*drv_watch_cb)(const drv_watch_event *ev, void *arg);

/* Feeds n bytes; calls cb for every complete event line. 0 or a negative DRV_E*. */
int drv_watch_decoder_feed(drv_watch_decoder *w, const char *data, size_t n, drv_watch_cb cb,
                           void *arg, drv_diag *d);

/* ---- the API client (kube.h) ---------------------------------------------------------------- */

/* GET path (one list page), a 2xx answer fed to l (listdec.h) as it arrives (then finished);
 * drv_kube_request's retries, budget and errors; *status the HTTP status (0: none). A failure
 * after bytes reached l is not retried. */
struct drv_list_decoder;
int drv_kube_get_page(drv_kube *k, const char *path, struct drv_list_decoder *l, long *status,
                      drv_diag *d);
/*
 * One request. method: "GET", "POST", "PUT", "PATCH", "DELETE"; path starts with "/" and may
 * carry a query; body (NULL for none) is sent with content type ctype (NULL:
 * "application/json"). On a 2xx answer returns 0 and *out (if out) receives the decoded body
 * (NULL when empty; the caller json_decref's it). Otherwise returns DRV_EIO (transport, or a
 * non-2xx answer after retries: *status says which, 0 for transport) or DRV_EPARSE (a 2xx
 * body that is not JSON), with the message in d.
 */
int drv_kube_request(drv_kube *k, const char *method, const char *path, const char *ctype,
                     const char *body, long *status, json_t **out, drv_diag *d);
/* drv_kube_request that reads of a 2xx answer only its metadata.resourceVersion, into rv (nrv
 * bytes; "" when absent or no answer), without decoding the rest: for a write whose caller
 * needs only the version it made (ctrl_writer.c's status patches). */
int drv_kube_request_rv(drv_kube *k, const char *method, const char *path, const char *ctype,
                        const char *body, long *status, char *rv, size_t nrv, drv_diag *d);
/*
 * Read-modify-write with optimistic concurrency: GETs path, lets mutate change the object (it
 * returns 0, or a negative code that aborts), PUTs it back — the resourceVersion read is the
 * precondition, and every field of the object, known to Drover or not, is written back as
 * read. On 409 Conflict it reads again and re-applies mutate to the fresh object, up to
 * `attempts` times (0: 5): safe because mutate never works on stale data. *out (optional)
 * receives the object written; *status (optional) the HTTP status of the last request, as in
 * drv_kube_request (404: no such object). Use path ".../status" for the status subresource.
 */
typedef int (*drv_kube_mutate_fn)(json_t *obj, void *arg);
int drv_kube_update(drv_kube *k, const char *path, drv_kube_mutate_fn mutate, void *arg,
                    int attempts, json_t **out, long *status, drv_diag *d);

/* Called for every item of a list; returns 0 to go on, or a negative code that stops the list
 * and is returned. The item is borrowed for the call. */
typedef int (*drv_kube_item_cb)(json_t *item, void *arg);

/*
 * Lists path (a collection, e.g. "/api/v1/pods"; query in `query` such as
 * "labelSelector=app%3Dx", or NULL) page by page with limit (0: no paging) and continue
 * tokens; calls cb for every item, in order, on the caller's thread (each page is decoded one
 * item's tree at a time while the next page is fetched: pager.c). rv (n bytes) receives the
 * list's resourceVersion, from which a watch continues. DRV_KUBE_RELIST when a continue token
 * expired mid-list (list again from the start). A page is retried as any GET is; cb sees items
 * of complete pages only.
 */
int drv_kube_list(drv_kube *k, const char *path, const char *query, int limit, drv_kube_item_cb cb,
                  void *arg, char *rv, size_t n, drv_diag *d);
/* drv_kube_list with each item parsed into a document (drv_jdoc_parse, with the client's skip
 * paths) instead of a jansson value: cb gets the document, its item at node 0, borrowed for the
 * call (the same document is reused for the next item). */
typedef int (*drv_kube_doc_cb)(const drv_jdoc *doc, void *arg);
int drv_kube_list_docs(drv_kube *k, const char *path, const char *query, int limit,
                       drv_kube_doc_cb cb, void *arg, char *rv, size_t n, drv_diag *d);

/*
 * One watch stream on path from resourceVersion rv with bookmarks, ending after timeout_s on
 * the server side. Events go to cb as they arrive (incremental decoding: drv_watch_decoder).
 * last_rv (n bytes) tracks the resourceVersion of the last event, bookmarks included; it is
 * where the next watch continues. Returns:
 *   0                 the stream ended cleanly (server timeout): watch again from last_rv;
 *   DRV_KUBE_RELIST   an ERROR event with code 410 (Expired), or HTTP 410: list again;
 *   DRV_EIO           the connection failed or dropped: back off, watch again from last_rv;
 *   DRV_EPARSE        a malformed event (the stream is abandoned: list again to be safe);
 *   a negative code   returned by cb.
 * *stop (may be NULL), when it becomes non-zero, ends the stream early with 0.
 */
int drv_kube_watch(drv_kube *k, const char *path, const char *rv, int timeout_s, drv_watch_cb cb,
                   void *arg, char *last_rv, size_t n, atomic_int *stop, drv_diag *d);
/* drv_kube_watch with each event parsed into a document (drv_jdoc_parse, with the client's skip
 * paths) instead of a jansson value: cb's events carry doc and obj, object NULL. The same events,
 * results and messages. */
int drv_kube_watch_docs(drv_kube *k, const char *path, const char *rv, int timeout_s,
                        drv_watch_cb cb, void *arg, char *last_rv, size_t n, atomic_int *stop,
                        drv_diag *d);

/* ---- objects: decoding and write-back (kube_types.h) ---------------------------------------- */

/* Decodes a Pod (a Node). Errors name the kind, the object and the field path with the bad
 * text: "pod default/x: spec.containers[1].resources.requests.cpu: expected a CPU quantity
 * such as 500m or 2, found '2x'". Strings are interned in names. */
int drv_kube_decode_pod(json_t *obj, drv_strtab *names, drv_kpod *out, drv_diag *d);
/* Kueue's topology annotations in ann (a pod template's or pod's metadata.annotations, may be
 * NULL): *mode the one given (enum drv_topo_mode, -1 when none is), *key its level's node label
 * key interned (0 with none). Two of them, an empty level or an unconstrained one other than
 * "true" fail with who and path named. The TrainingJob's roles and PodGroup pods read them so
 * (drv_kube_topology_keys: the three annotations, by enum drv_topo_mode). */
extern const char *const drv_kube_topology_keys[3];
int drv_kube_topology(json_t *ann, drv_strtab *names, const char *who, const char *path,
                      int8_t *mode, int32_t *key, drv_diag *d);
/* The member paths of a pod and of a node that the decoders never read (drv_json_loadb_skip's
 * paths; objects.c says what they are). */
extern const char *const drv_kube_unread_pod[];
extern const char *const drv_kube_unread_node[];
int drv_kube_decode_node(json_t *obj, drv_strtab *names, drv_knode *out, drv_diag *d);

/* The id of s in t into *out (0 when s is NULL or empty): the decoders' interning of names
 * (objects.c, objects_doc.c). 0 or DRV_ENOMEM. */
int drv_kube_intern(drv_strtab *t, const char *s, int32_t *out);

/* The same from node obj of a document (objects_doc.c): the same record, the same strings
 * interned in the same order, the same errors, with no jansson tree built (but for the rare
 * objects that objects.c's own rules are kept for). */
int drv_kube_decode_pod_doc(const drv_jdoc *doc, int32_t obj, drv_strtab *names, drv_kpod *out,
                            drv_diag *d);
int drv_kube_decode_node_doc(const drv_jdoc *doc, int32_t obj, drv_strtab *names, drv_knode *out,
                             drv_diag *d);

/*
 * The scheduling vocabulary (objects_sched.c). A Node's labels (but kubernetes.io/hostname) and
 * taints as one interned canonical text (*out 0 when it has none; state.h's node meta text,
 * read back by the core: drv_node_meta_parse). A pod
 * spec's nodeSelector, affinity.nodeAffinity and tolerations as compact JSON with sorted keys
 * (drv_malloc'd; NULL when it has none, or out of memory), and decoded into a drv_constraint
 * with strings in names (drv_constraint_fini it), errors naming who and path.field.
 */
int drv_kube_node_meta(json_t *node, drv_strtab *names, const char *who, int32_t *out, drv_diag *d);
char *drv_kube_constraint_json(json_t *podspec);
int drv_kube_decode_constraint(json_t *podspec, drv_strtab *names, const char *who,
                               const char *path, drv_constraint *out, drv_diag *d);
int drv_kube_decode_priorityclass(json_t *obj, drv_strtab *names, drv_kpriorityclass *out,
                                  drv_diag *d);
int drv_kube_decode_queue(json_t *obj, drv_strtab *names, drv_kqueue *out, drv_diag *d);
/* A Queue's status.pending, status.admitted (jobs) and status.used (quantities); with usage
 * >= 0 also status.usage, its dominant share decayed over time (usage.h) as a decimal string
 * ("0.438"); usage -1 leaves status.usage out, -2 sets it null (a merge patch's removal: the
 * profile's half-life is 0 now, a value written before must go). */
int drv_kube_queue_set_status(json_t *obj, int32_t pending, int32_t admitted, drv_res used,
                              double usage);

/* A Status object's code and reason (reason may be NULL). A success Status may have no code:
 * *code is then 0 (the HTTP status stands). DRV_EPARSE when obj is no Status. */
int drv_kube_decode_status(json_t *obj, long *code, const char **reason, drv_diag *d);

int drv_kube_decode_trainingjob(json_t *obj, drv_strtab *names, drv_ktrainingjob *out, drv_diag *d);
int drv_kube_decode_podgroup(json_t *obj, drv_strtab *names, drv_kpodgroup *out, drv_diag *d);
int drv_kube_decode_lease(json_t *obj, drv_klease *out, drv_diag *d);
int drv_kube_decode_event(json_t *obj, drv_kevent *out, drv_diag *d);

/*
 * Write-back: these change the given object in place, touching only the fields named, so
 * whatever else it holds — fields Drover does not know included — is sent back as read (use
 * with drv_kube_update, which reads the object and PUTs it). 0 or DRV_ENOMEM.
 */
/* status.phase, status.message, and status.replicaStatuses.<Role>.active per role the job has:
 * keys[r], the role's key in spec.replicaSpecs ("Master" or "Chief" for the chief), NULL for a
 * role it lacks; keys NULL: the roles obj's own spec lists (a patch has no spec: say them). */
int drv_kube_trainingjob_set_status(json_t *obj, const char *phase, const char *message,
                                    const int32_t active[DRV_NROLES],
                                    const char *const keys[DRV_NROLES]);
/* Role r's key in a TrainingJob's spec.replicaSpecs and status.replicaStatuses: "PS", "Chief"
 * ("Master" when master: an all-reduce job's), "Worker", "Evaluator". */
const char *drv_kube_tj_role_key(int r, bool master);
/* spec.holderIdentity, leaseDurationSeconds, renewTime; acquireTime and leaseTransitions when
 * the holder changes. now: RFC 3339 with microseconds ("2026-11-22T04:11:05.123456Z"). */
int drv_kube_lease_set(json_t *obj, const char *holder, int32_t duration_s, const char *now);
/* status.phase and the counts of a PodGroup. */
int drv_kube_podgroup_set_status(json_t *obj, const char *phase, int32_t running, int32_t succeeded,
                                 int32_t failed, int32_t scheduled);

/* ---- informers (kube_informer.h) ------------------------------------------------------------ */

typedef struct drv_informer_ops {
    /* The record to cache for obj, or NULL with d set (the object is skipped and logged). */
    void *(*decode)(json_t *obj, void *arg, drv_diag *d);
    void (*release)(void *rec, void *arg);
    /* Optional handlers. For on_update, old is released after the call. */
    void (*on_add)(const char *key, void *rec, void *arg);
    void (*on_update)(const char *key, void *old, void *rec, void *arg);
    void (*on_delete)(const char *key, void *rec, void *arg);
    /* Optional: called after every complete list, once its last handler call returned and
     * drv_informer_synced says true (no lock held), so that a consumer waiting for the caches
     * is woken then rather than at its next poll. */
    void (*on_listed)(void *arg);
    /* Optional: decode from a document (node obj), the same record decode gives; when set,
     * lists and watch events are read as documents (drv_kube_list_docs, drv_kube_watch_docs),
     * no jansson tree built per item or event (decode is then used by drv_informer_apply). */
    void *(*decode_doc)(const drv_jdoc *doc, int32_t obj, void *arg, drv_diag *d);
    /* Optional: the watch events read together (drv_watch_event.more) are one run: hold(true)
     * before the handlers of its first event, hold(false) after those of its last (also when
     * the stream ends inside it), on the informer's thread with no lock held; a consumer may
     * hand the run's changes on at once (one wake-up, not one each). An event alone in what
     * was read is no run: no call. */
    void (*hold)(bool on, void *arg);
} drv_informer_ops;

/* path: the collection, e.g. "/api/v1/pods" or "/api/v1/namespaces/ns/pods". page: list page
 * size (0: 500). watch_timeout_s: server-side timeout of each watch (0: 300). */
int drv_informer_new(drv_informer **out, drv_kube *k, const char *path, int page,
                     int watch_timeout_s, const drv_informer_ops *ops, void *arg, drv_diag *d);

/* Applies one event (DRV_WATCH_ADDED, _MODIFIED, _DELETED) as if it came from the watch: for
 * callers that receive objects another way, tests and benchmarks. 0 or DRV_ENOMEM. */
int drv_informer_apply(drv_informer *inf, int type, json_t *obj);

#endif
