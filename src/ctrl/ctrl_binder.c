/*
 * ctrl_binder.c - `drover run`'s binder: pod creations (bound or not), bindings, pod
 * deletions and CPU resizes (pods/resize: ctrl_resize.c decides), sent by binder threads (several
 * at once, each with its own API client, as kube-scheduler binds asynchronously) so that no request
 * blocks the scheduler thread (ctrl.h).
 *
 * Owns: c->binder (the request queue and the threads, under binder.mu). The scheduler thread
 * queues (ctrl_binder_create/_place/_delete), marking the pod record's request in flight; a
 * binder thread sends it and pushes the answer as an EV_ANSWER event, which the scheduler
 * thread applies (ctrl_binder_apply_answer): a failure undoes the assumption, and the next
 * cycle sees the truth. May touch, on the scheduler thread: the mirror's pod and job records,
 * the state (undoing assumptions), counters.
 *
 * A creation's body is rendered by the binder thread that sends it (the role's template with
 * the pod's names, labels, owner reference, nodeName, peer environment and CPU limit: podbody.c
 * splices them into a shape rendered once per template), from a pod_render the scheduler
 * thread fills when it queues the creation: a copy of what the body needs, and its paths, in
 * one allocation, so a binder thread never reads the mirror, which the scheduler thread changes
 * meanwhile. (On the scheduler thread, that rendering was a quarter of its CPU while the
 * binder threads waited.)
 *
 * A cycle's requests are handed over in batches (ctrl_binder_hold .. ctrl_binder_flush): they
 * gather in binder.staged, on the scheduler thread alone, and every HELD_MAX of them, and the
 * rest at the flush, go to the queues under one lock with one wake-up. In e2e_bind, 2,000
 * creations in one cycle took a lock and woke a binder thread each; the binders still start
 * after the first 64.
 *
 * At most one request per pod is out at a time: a pod to be deleted while its creation is out
 * is deleted once that is answered (delete_after), and a pod is not created or bound while its
 * deletion is out (it waits in pod_record.want), so two binder threads never race on one name.
 *
 * Example: a gang of 3 placed in a cycle queues 3 REQ_BIND (or REQ_CREATE with spec.nodeName);
 * the 3rd answer completes the gang's latency record (drv_ctrl_latencies).
 */
#include "ctrl.h"

#include <stdlib.h>
#include <string.h>

/* The path of pod `pod` of namespace `ns`, allocated (NULL: out of memory). */
static char *path_of(const char *ns, const char *pod)
{
    char path[1200];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, pod);
    return drv_strdup(path);
}

/* Slot s's pod's own path, allocated (NULL: out of memory). */
static char *pod_path(drv_ctrl *c, int32_t s)
{
    char ns[256], pod[600];
    ctrl_name_str(c, c->mirror.jobs[c->mirror.st.pods[s].job].ns, ns, sizeof ns);
    ctrl_pod_name(c, s, pod, sizeof pod);
    return path_of(ns, pod);
}

/* Slot s's pod name, its job's name given (job_name) for the names Drover gives (no look-up). */
static void pod_name(drv_ctrl *c, int32_t slot, const char *job_name, char *buf, size_t n)
{
    const drv_pod *p = &c->mirror.st.pods[slot];
    const job_record *jr = &c->mirror.jobs[p->job];
    char name[600];
    if (jr->members) { /* another operator's pod: its own name (its key is "ns/name") */
        ctrl_name_str(c, jr->members[slot - c->mirror.st.jobs[p->job].pod_base], name, sizeof name);
        const char *slash = strchr(name, '/');
        snprintf(buf, n, "%s", slash ? slash + 1 : name);
        return;
    }
    /* (peers.h's names: an all-reduce job's chief is its master) */
    bool master = p->role == DRV_ROLE_CHIEF && jr->allreduce;
    snprintf(buf, n, "%s-%s-%d", job_name, master ? "master" : drv_role_name(p->role), p->index);
}

void ctrl_pod_name(drv_ctrl *c, int32_t slot, char *buf, size_t n)
{
    char name[600];
    const drv_pod *p = &c->mirror.st.pods[slot];
    const job_record *jr = &c->mirror.jobs[p->job];
    pod_name(c, slot, jr->members ? "" : ctrl_name_str(c, jr->name, name, sizeof name), buf, n);
}

/* Copies s to *tail, which it advances past the terminator; returns the copy. */
static const char *copy(char **tail, const char *s)
{
    char *at = *tail;
    *tail = stpcpy(at, s) + 1;
    return at;
}

/* What slot s's creation, bound to node (or not: -1), is rendered from: a copy of the mirror's
 * part (pod_render), so the binder thread renders the body without reading the mirror, and the
 * paths it is sent to. O(the template's length): a copy, no parse; two look-ups of names (the
 * job's namespace and name). NULL: out of memory. */
static pod_render *pod_render_new(drv_ctrl *c, int32_t s, int32_t node)
{
    static const char pre[] = "/api/v1/namespaces/", post[] = "/pods";
    const drv_state *st = &c->mirror.st;
    const drv_pod *p = &st->pods[s];
    const job_record *jr = &c->mirror.jobs[p->job];
    char ns[256], job[256], pod[600];
    drv_peer_job peers;
    ctrl_lifecycle_pod_peers(c, s, &peers, ns, job, sizeof ns);
    pod_name(c, s, job, pod, sizeof pod);
    const char *tmpl = jr->tmpl[p->role];
    const char *nn = node >= 0 ? drv_strtab_str(st->names, st->nodes[node].name) : "";
    size_t lns = strlen(ns), lpod = strlen(pod);
    size_t lpath = sizeof pre - 1 + lns + sizeof post - 1;
    size_t n = (tmpl ? strlen(tmpl) + 1 : 0) + lpath + 1 + lpath + 1 + lpod + 1 + lns + 1 +
               strlen(job) + 1 + lpod + 1 + strlen(nn) + 1 + strlen(jr->uid) + 1;
    pod_render *r = drv_malloc(sizeof *r + n);
    if (!r)
        return NULL;
    *r = (pod_render){.sched = c->scheduler,
                      .role = p->role,
                      .rank = p->index,
                      .peers = peers,
                      .cpu_limit = c->mirror.pods[s].want_cpu_limit};
    char *tail = (char *)(r + 1);
    r->tmpl = tmpl ? copy(&tail, tmpl) : NULL;
    r->path = tail; /* "/api/v1/namespaces/<ns>/pods", then that and "/<pod>" */
    tail = stpcpy(stpcpy(stpcpy(tail, pre), ns), post) + 1;
    r->pod_path = tail;
    tail = stpcpy(stpcpy(stpcpy(tail, r->path), "/"), pod) + 1;
    r->peers.ns = r->ns = copy(&tail, ns);
    r->peers.name = r->job = copy(&tail, job);
    r->pod = copy(&tail, pod);
    r->node = copy(&tail, nn);
    r->uid = copy(&tail, jr->uid);
    return r;
}

/* Frees what a request owns (a creation's paths are its render's). */
static void request_free(bind_request *r)
{
    if (!r->render) {
        drv_free(r->path);
        if (r->pod_path != r->path) /* (a deletion's path is its pod's: one string) */
            drv_free(r->pod_path);
    }
    drv_free(r->body);
    drv_free(r->render);
}

/* The queue a request waits in. */
static bind_queue *queue_of(ctrl_binder *b, const bind_request *r)
{
    return &b->queue[r->request == REQ_CREATE && r->node < 0 ? QUEUE_BACKGROUND : QUEUE_URGENT];
}

enum { HELD_MAX = 64 }; /* requests gathered before a batch goes (ctrl_binder.held) */

/* A request that was never queued, answered as failed: its assumption is undone. */
static void answer_unsent(drv_ctrl *c, const bind_request *r, const char *what)
{
    ctrl_event e = {.kind = EV_ANSWER, .t = drv_clock_mono()};
    e.u.answer.slot = r->slot;
    e.u.answer.node = r->node;
    e.u.answer.request = r->request;
    e.u.answer.sent = e.u.answer.done = e.t;
    ctrl_events_push(c, &e, what);
}

/* Hands the staged requests to the binder threads: one lock, one wake-up. Those the queues
 * have no room for are answered as failed (the answer undoes each one's assumption, as for a
 * request the API refused), and logged. */
static void hand_over(drv_ctrl *c)
{
    ctrl_binder *b = &c->binder;
    int32_t n = b->nstaged, i = 0;
    if (n == 0)
        return;
    pthread_mutex_lock(&b->mu);
    for (; i < n; i++) {
        bind_queue *q = queue_of(b, &b->staged[i]);
        if (q->head == q->n)
            q->head = q->n = 0;
        if (drv_grow(&q->v, sizeof *q->v, &q->cap, q->n + 1) != 0)
            break;
        q->v[q->n++] = b->staged[i];
    }
    if (n > 1)
        pthread_cond_broadcast(&b->cv);
    else
        pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    b->nstaged = 0;
    for (int32_t k = i; k < n; k++) {
        answer_unsent(c, &b->staged[k], "an unqueued request's answer");
        request_free(&b->staged[k]);
    }
    if (i < n)
        drv_log(DRV_LOG_ERROR, "out of memory: %d requests to the API server not sent", n - i);
}

void ctrl_binder_hold(drv_ctrl *c)
{
    c->binder.held = true;
}

void ctrl_binder_flush(drv_ctrl *c)
{
    c->binder.held = false;
    hand_over(c);
}

/* Queues one request about slot s (path, own, body and render then the queue's; body NULL for
 * a deletion and a creation, which has render instead; own: the pod's path) and marks it in
 * flight. While held (ctrl_binder_hold) it is staged, and a full batch goes. DRV_ENOMEM when
 * it could not be staged (nothing in flight); once staged, a failure is its answer's. */
static int enqueue(drv_ctrl *c, int32_t s, int32_t node, int8_t request, char *path, char *own,
                   char *body, pod_render *render)
{
    ctrl_binder *b = &c->binder;
    bind_request r = {s, node, request, path, body, own, render};
    bool ok = (request == REQ_CREATE ? render != NULL : body || request == REQ_DELETE) && path &&
              own && drv_grow(&b->staged, sizeof *b->staged, &b->cap_staged, b->nstaged + 1) == 0;
    if (!ok) {
        request_free(&r);
        return DRV_ENOMEM;
    }
    b->staged[b->nstaged++] = r;
    c->mirror.pods[s].inflight = request;
    c->mirror.pods[s].inflight_node = request == REQ_BIND || request == REQ_CREATE ? node : -1;
    if (!b->held || b->nstaged >= HELD_MAX)
        hand_over(c);
    return 0;
}

/* Hands slot s's creation, bound to node (or unbound: -1), to the binder threads. */
int ctrl_binder_create(drv_ctrl *c, int32_t slot, int32_t node)
{
    ctrl_lifecycle_service(c, c->mirror.st.pods[slot].job); /* with its first pods */
    pod_render *r = pod_render_new(c, slot, node);
    return enqueue(c, slot, node, REQ_CREATE, r ? r->path : NULL, r ? r->pod_path : NULL, NULL, r);
}

/* s and suffix, allocated; NULL when s is or when out of memory. */
static char *suffixed(const char *s, const char *suffix)
{
    char *out = s ? drv_malloc(strlen(s) + strlen(suffix) + 1) : NULL;
    if (out)
        sprintf(out, "%s%s", s, suffix);
    return out;
}

static int bind(drv_ctrl *c, int32_t slot, int32_t node)
{
    const drv_state *st = &c->mirror.st;
    char pod[600], ns[256];
    ctrl_name_str(c, c->mirror.jobs[st->pods[slot].job].ns, ns, sizeof ns);
    ctrl_pod_name(c, slot, pod, sizeof pod);
    char *own = path_of(ns, pod), *path = suffixed(own, "/binding");
    char *body = drv_kube_binding_json(ns, pod, drv_strtab_str(st->names, st->nodes[node].name));
    return enqueue(c, slot, node, REQ_BIND, path, own, body, NULL);
}

int ctrl_binder_resize(drv_ctrl *c, int32_t slot, char *body)
{
    char *own = pod_path(c, slot);
    return enqueue(c, slot, -1, REQ_RESIZE, suffixed(own, "/resize"), own, body, NULL);
}

/* A pod being deleted holds its node's room until it is gone or finished, like
 * kube-scheduler counts terminating pods: when the state no longer has it where the API has it
 * (its job ended, it was evicted or migrated), that room is its ghost meanwhile. */
static void hold_room(drv_ctrl *c, int32_t slot)
{
    ctrl_mirror *m = &c->mirror;
    pod_record *p = &m->pods[slot];
    const drv_pod *sp = &m->st.pods[slot];
    if (p->exists && p->api_name && !ctrl_pod_terminal(p->phase) && sp->node != p->api_node)
        ctrl_mirror_set_ghost(c, p, p->api_name, m->st.jobs[sp->job].role[sp->role].req);
}

/* A pod to be deleted whose placement (a binding or a bound creation) is still out may be on
 * that node from the moment it is answered until its deletion has gone through: when the state
 * no longer has it there (its job ended, it was evicted), that room is its ghost from now, not
 * from the answer, or a cycle in between could give it away. The answer sets it right
 * (ctrl_binder_apply_answer). */
static void hold_placed_room(drv_ctrl *c, int32_t slot)
{
    ctrl_mirror *m = &c->mirror;
    pod_record *p = &m->pods[slot];
    const drv_pod *sp = &m->st.pods[slot];
    int32_t node = p->inflight_node;
    if ((p->inflight != REQ_BIND && p->inflight != REQ_CREATE) || node < 0 || sp->node == node)
        return;
    int32_t name = ctrl_name_intern(c, drv_strtab_str(m->st.names, m->st.nodes[node].name));
    if (name > 0) {
        ctrl_mirror_set_ghost(c, p, name, m->st.jobs[sp->job].role[sp->role].req);
        p->ghost_placed = true;
    }
}

/* Deletes slot s's pod: assumed gone from now (exists 2) until the answer says otherwise; its
 * room stays held meanwhile (hold_room). A request still out about it is answered first
 * (delete_after; a placement's room held meanwhile: hold_placed_room); a deletion out is
 * enough. */
int ctrl_binder_delete(drv_ctrl *c, int32_t slot)
{
    pod_record *p = &c->mirror.pods[slot];
    if (p->inflight == REQ_DELETE)
        return 0;
    if (p->inflight) {
        p->delete_after = true;
        hold_placed_room(c, slot);
        return 0;
    }
    hold_room(c, slot);
    char *own = pod_path(c, slot);
    int rc = enqueue(c, slot, -1, REQ_DELETE, own, own, NULL, NULL);
    if (rc == 0 && p->exists == 1) {
        p->exists = 2;
        p->delete_assumed = true;
    }
    return rc;
}

/* Places slot s on node in the API: a binding when its pod exists, a bound creation when not
 * (both through the binders); later when the old pod is being deleted, when a request about
 * it is still out, or when the node's room is still held by pods being deleted (or others'
 * pods): the room stays reserved in the state meanwhile. */
int ctrl_binder_place(drv_ctrl *c, int32_t slot, int32_t node)
{
    ctrl_mirror *m = &c->mirror;
    pod_record *p = &m->pods[slot];
    job_record *jr = &m->jobs[m->st.pods[slot].job];
    /* (another operator's pod that is gone is never created: bound if it comes back) */
    if (p->exists == 2 || p->inflight || (p->exists == 0 && jr->members) ||
        !drv_res_nonneg(drv_node_free(&m->st.nodes[node]))) {
        p->want = node;
        jr->lat_armed = false; /* not bound by this cycle's requests alone */
        return 0;
    }
    int rc = p->exists == 0 ? ctrl_binder_create(c, slot, node) : bind(c, slot, node);
    if (rc != 0) {
        if (m->st.pods[slot].node == node)
            drv_state_unbind(&m->st, slot);
        m->dirty = true;
        return rc;
    }
    jr->lat_out++;
    jr->lat_pods++;
    return 0;
}

/* ---- the binder threads --------------------------------------------------------------------- */

/* After a 409: what the pod is, read rather than guessed (a conflict is never retried blindly
 * nor forgotten). Read as a list of the namespace's pods filtered by name, so that a pod that
 * does not exist is an answer (no items) rather than a 404 counted as a failed request. */
static void read_pod(binder_thread *t, const bind_request *r, ctrl_event *e)
{
    drv_diag d = {{0}};
    long status = 0;
    json_t *list = NULL, *o = NULL;
    char path[1400];
    const char *slash = strrchr(r->pod_path, '/');
    snprintf(path, sizeof path, "%.*s?fieldSelector=metadata.name%%3D%s",
             (int)(slash - r->pod_path), r->pod_path, slash + 1);
    int rc = drv_kube_request(t->client, "GET", path, NULL, NULL, &status, &list, &d);
    if (rc == 0)
        o = json_array_get(json_object_get(list, "items"), 0);
    if (rc == 0 && o) {
        const char *node =
            json_string_value(json_object_get(json_object_get(o, "spec"), "nodeName"));
        e->u.answer.read = READ_FOUND;
        e->u.answer.read_deleting =
            json_object_get(json_object_get(o, "metadata"), "deletionTimestamp") != NULL;
        e->u.answer.read_node = node ? ctrl_name_intern(t->c, node) : 0;
        if (e->u.answer.read_node < 0) /* (out of memory: as if not read) */
            e->u.answer.read = READ_NONE;
    } else if (rc == 0) {
        e->u.answer.read = READ_GONE;
    } else {
        drv_log(DRV_LOG_WARN, "%s", d.msg);
    }
    json_decref(list);
}

/* Sends one request; fills the answer's fields. (Every answer but a success is counted by the
 * budget.) A 409 and a deletion's 404 can be a race with the informers (logged at info level);
 * after a 409 the pod is read: a conflict is resolved by what the API has, never guessed. */
static void send_request(binder_thread *t, const bind_request *r, ctrl_event *e)
{
    drv_diag d = {{0}};
    long status = 0;
    e->u.answer.sent = drv_clock_mono();
    int rc;
    if (r->request == REQ_CREATE && !r->body) /* (out of memory rendering it: not sent) */
        rc = drv_fail(&d, DRV_ENOMEM, "out of memory: the body of %s not rendered", r->pod_path);
    else if (r->request == REQ_DELETE)
        rc = drv_kube_delete(t->client, r->path, -1, "Background", &status, &d);
    else if (r->request == REQ_RESIZE) /* (kubectl patch --subresource resize's patch type) */
        rc = drv_kube_request(t->client, "PATCH", r->path, "application/strategic-merge-patch+json",
                              r->body, &status, NULL, &d);
    else
        rc = drv_kube_request(t->client, "POST", r->path, NULL, r->body, &status, NULL, &d);
    e->u.answer.done = e->t = drv_clock_mono();
    e->u.answer.slot = r->slot;
    e->u.answer.node = r->node;
    e->u.answer.request = r->request;
    e->u.answer.status = status;
    e->u.answer.ok = rc == 0 || (r->request == REQ_DELETE && status == 404);
    bool expected = r->request == REQ_DELETE ? status == 404 : status == 409;
    if (rc != 0)
        drv_log(expected ? DRV_LOG_INFO : DRV_LOG_WARN, "%s", d.msg);
    if (rc != 0 && status == 409 && r->request != REQ_RESIZE)
        read_pod(t, r, e);
}

/* The queue to take from (urgent first), or NULL when both are empty; under b->mu. */
static bind_queue *next_queue(ctrl_binder *b)
{
    for (int i = 0; i < NQUEUES; i++)
        if (b->queue[i].head < b->queue[i].n)
            return &b->queue[i];
    return NULL;
}

static void *binder_main(void *arg)
{
    binder_thread *t = arg;
    ctrl_binder *b = &t->c->binder;
    char name[16];
    snprintf(name, sizeof name, "drv-bind-%d", (int)(t - b->threads));
    drv_kthread_name(name);
    for (;;) {
        pthread_mutex_lock(&b->mu);
        bind_queue *q = NULL;
        while (!b->stop && !(q = next_queue(b)))
            pthread_cond_wait(&b->cv, &b->mu);
        if (b->stop) { /* what is still queued is dropped: the next leader redoes it */
            pthread_mutex_unlock(&b->mu);
            break;
        }
        bind_request r = q->v[q->head++];
        pthread_mutex_unlock(&b->mu);
        if (r.render) /* (here rather than on the scheduler thread; podbody.c) */
            r.body = podbody_render(b->bodies, r.render);
        ctrl_event e = {.kind = EV_ANSWER};
        send_request(t, &r, &e);
        /* (what names it only when it cannot be pushed: no text formatted per request) */
        ctrl_events_push(t->c, &e,
                         r.request == REQ_DELETE   ? "the answer to a pod's DELETE"
                         : r.request == REQ_RESIZE ? "the answer to a pod's resize PATCH"
                         : r.request == REQ_BIND   ? "the answer to a pod's binding POST"
                                                   : "the answer to a pod's creation POST");
        request_free(&r);
    }
    return NULL;
}

/* A follower sends nothing: requests still queued are dropped, each as a failed answer, so
 * that its assumption is undone. (One a binder has already taken is sent; the new leader sees
 * its effect in the API.) */
void ctrl_binder_drop_queued(drv_ctrl *c)
{
    ctrl_binder *b = &c->binder;
    for (int32_t i = 0; i < b->nstaged; i++) { /* (not queued yet: the same) */
        answer_unsent(c, &b->staged[i], "a dropped request's answer");
        request_free(&b->staged[i]);
    }
    b->nstaged = 0;
    pthread_mutex_lock(&b->mu);
    for (int k = 0; k < NQUEUES; k++) {
        bind_queue *q = &b->queue[k];
        for (int32_t i = q->head; i < q->n; i++) {
            answer_unsent(c, &q->v[i], "a dropped request's answer");
            request_free(&q->v[i]);
        }
        q->head = q->n = 0;
    }
    pthread_mutex_unlock(&b->mu);
}

/* ---- answers (scheduler thread) ------------------------------------------------------------- */

/* A success counted as what it did: a pod created bound, created unbound, or bound. */
static void count_success(drv_ctrl *c, bool create, bool bound)
{
    drv_ctrl_stats *st = &c->counters.stats;
    ctrl_count(c, create ? &st->creates : &st->binds, 1);
    if (create && bound)
        ctrl_count(c, &st->created_bound, 1);
}

/* A gang whose last answer this is has its latency recorded. */
static void gang_answered(drv_ctrl *c, job_record *jr, int32_t job, const ctrl_event *e)
{
    double sent = e->u.answer.sent, done = e->u.answer.done;
    if (jr->lat_armed && --jr->lat_out <= 0) {
        jr->lat_armed = false;
        if (drv_job_complete(&c->mirror.st.jobs[job])) {
            double last_sent = jr->lat_sent > sent ? jr->lat_sent : sent;
            drv_ctrl_latency l = {jr->lat_decide - jr->lat_t0, last_sent - jr->lat_t0,
                                  done - jr->lat_t0, jr->lat_server + (done - sent), jr->lat_pods};
            ctrl_counters_latency(c, &l);
        }
    } else if (jr->lat_armed) {
        if (sent > jr->lat_sent)
            jr->lat_sent = sent;
        jr->lat_server += done - sent;
    }
}

/* A deletion's answer. Done: counted (a 404: gone already; after a 409, read as gone or as
 * being deleted). Failed: the pod is still there, so its room stays held (its ghost) and it is
 * deleted again, up to MAX_DELETE_TRIES in all; then, or when this controller no longer leads,
 * the assumption is undone and the watch says when it goes. */
static int deletion_answered(drv_ctrl *c, int32_t s, const ctrl_event *e)
{
    pod_record *p = &c->mirror.pods[s];
    int8_t read = e->u.answer.read;
    if (e->u.answer.ok || read == READ_GONE || (read == READ_FOUND && e->u.answer.read_deleting)) {
        if (e->u.answer.ok && e->u.answer.status != 404)
            ctrl_count(c, &c->counters.stats.deletes, 1);
        p->delete_assumed = false;
        p->delete_tries = 0;
        return 0;
    }
    if (p->exists == 0) /* gone meanwhile (its watch event came first) */
        return 0;
    if (c->loop.leader && ++p->delete_tries < MAX_DELETE_TRIES) {
        int rc = ctrl_binder_delete(c, s);
        return rc == DRV_ENOMEM ? rc : 0;
    }
    if (c->loop.leader)
        drv_log(DRV_LOG_WARN,
                "drover run: a pod's deletion failed %d times; its room stays held "
                "until it goes",
                MAX_DELETE_TRIES);
    if (p->delete_assumed && p->exists == 2)
        p->exists = 1;
    p->delete_assumed = false;
    p->delete_tries = 0;
    c->mirror.dirty = true;
    return 0;
}

/* A binder's answer: the pod exists (and where), or the assumption is undone; a deletion that
 * waited for it is sent; a gang whose last answer this is has its latency. */
int ctrl_binder_apply_answer(drv_ctrl *c, const ctrl_event *e)
{
    ctrl_mirror *m = &c->mirror;
    int32_t s = e->u.answer.slot, node = e->u.answer.node;
    pod_record *p = &m->pods[s];
    const drv_pod *sp = &m->st.pods[s];
    job_record *jr = &m->jobs[sp->job];
    bool create = e->u.answer.request == REQ_CREATE;
    p->inflight = REQ_NONE;
    if (e->u.answer.request == REQ_DELETE)
        return deletion_answered(c, s, e);
    if (e->u.answer.request == REQ_RESIZE) {
        ctrl_resize_answered(c, e);
    } else if (e->u.answer.ok) {
        if (p->exists == 0)
            p->exists = 1;
        if (node >= 0) {
            int32_t name = ctrl_name_intern(c, drv_strtab_str(m->st.names, m->st.nodes[node].name));
            p->api_node = node;
            p->api_name = name > 0 ? name : 0;
        }
        count_success(c, create, node >= 0);
        /* A job re-creating pods for new peers is Scaling until the last is back: this may be
         * it, and only a cycle's reconcile says so (its watch echo asks for none) */
        if (create && jr->peers_pending)
            m->dirty = true;
    } else {
        /* The assumption is undone, and only what the API says is believed: after a 409 the
         * pod as read (bound where the API has it: nothing to send again; not bound: bound
         * next time; gone, or not read: created next time, where a 409 reads it again); a 404
         * says the pod does not exist (a binding of a pod whose creation failed). A failed
         * creation is never taken to have made the pod. */
        bool bound = false;
        if (e->u.answer.read == READ_FOUND)
            bound = ctrl_mirror_pod_read(c, s, e->u.answer.read_node);
        else if ((e->u.answer.read == READ_GONE || e->u.answer.status == 404) && p->exists == 1)
            p->exists = 0;
        if (!bound && node >= 0 && sp->node == node && p->want < 0)
            drv_state_unbind(&m->st, s);
        m->dirty = true;
    }
    if (p->ghost_placed) {
        /* The room held for the placement while it was out is held again only if the pod is
         * there (hold_room, by the deletion below); one seen being deleted meanwhile keeps the
         * ghost its watch event gave it (ctrl_mirror.c). */
        p->ghost_placed = false;
        if (p->exists != 2)
            ctrl_mirror_set_ghost(c, p, 0, (drv_res){0, 0, 0});
    }
    if (p->delete_after) {
        p->delete_after = false;
        if (p->exists == 1 && ctrl_binder_delete(c, s) == DRV_ENOMEM)
            return DRV_ENOMEM;
    }
    if (e->u.answer.request != REQ_RESIZE) /* (a resize is no part of a gang's placing) */
        gang_answered(c, jr, sp->job, e);
    return 0;
}

/* ---- start and stop ------------------------------------------------------------------------- */

int ctrl_binder_start(drv_ctrl *c, drv_diag *d)
{
    ctrl_binder *b = &c->binder;
    for (int i = 0; i < b->nthreads; i++) {
        if (pthread_create(&b->threads[i].thread, NULL, binder_main, &b->threads[i]) != 0)
            return drv_fail(d, DRV_ENOMEM, "cannot start a binder thread");
        b->threads[i].started = true;
    }
    return 0;
}

void ctrl_binder_stop(drv_ctrl *c)
{
    ctrl_binder *b = &c->binder;
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    for (int i = 0; i < b->nthreads; i++)
        if (b->threads[i].started) {
            pthread_join(b->threads[i].thread, NULL);
            b->threads[i].started = false;
        }
}

void ctrl_binder_fini(drv_ctrl *c)
{
    ctrl_binder *b = &c->binder;
    for (int i = 0; b->threads && i < b->nthreads; i++)
        drv_kube_free(b->threads[i].client);
    drv_free(b->threads);
    podbody_cache_free(b->bodies);
    b->bodies = NULL;
    for (int32_t i = 0; i < b->nstaged; i++)
        request_free(&b->staged[i]);
    drv_free(b->staged);
    b->staged = NULL;
    b->nstaged = b->cap_staged = 0;
    for (int k = 0; k < NQUEUES; k++) {
        bind_queue *q = &b->queue[k];
        for (int32_t i = q->head; i < q->n; i++)
            request_free(&q->v[i]);
        drv_free(q->v);
    }
}
