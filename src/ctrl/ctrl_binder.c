/*
 * ctrl_binder.c - `drover run`'s binder, the scheduler thread's side (ctrl_binder.h): pod
 * creations (bound or not), bindings, pod deletions and CPU resizes (ctrl_resize.c decides)
 * queued for the binder threads (ctrl_send.c) and assumed in the mirror meanwhile; their
 * answers applied when they come back as events.
 *
 * Owns: its send side and the leader flag. The scheduler thread queues
 * (ctrl_binder_create/_place/_delete), marking the pod record's request in flight; a binder
 * thread sends it and pushes the answer as an EV_ANSWER event, which the scheduler thread
 * applies (ctrl_binder_apply_answer): a failure undoes the assumption, and the next cycle sees
 * the truth. Touches, on the scheduler thread: the mirror's pod and job records, the state
 * (undoing assumptions), names, the writer (a job's Service), counters.
 *
 * A creation's body is rendered by the binder thread that sends it (the role's template with
 * the pod's names, labels, owner reference, nodeName, peer environment and CPU limit:
 * podbody.c splices them into a shape rendered once per template), from a pod_render filled
 * here when the creation is queued: a copy of what the body needs, and its paths, in one
 * allocation, so a binder thread never reads the mirror, which this thread changes meanwhile.
 *
 * A binding's body is rendered by the binder thread too, from the pod's and the node's names
 * copied here as text (binding_render): the scheduler thread formats no JSON.
 *
 * Example: a gang of 3 placed in a cycle queues 3 REQ_BIND (or REQ_CREATE with spec.nodeName);
 * the 3rd answer completes the gang's latency record (drv_ctrl_latencies).
 */
#include "ctrl_binder.h"

#include "drover/clock.h"
#include "kube/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ctrl_binder_init(ctrl_binder *b, const drv_kube_config *kcfg, ctrl_mirror *mirror,
                     ctrl_names *names, ctrl_writer *writer, ctrl_counters *counters,
                     ctrl_events *events, const ctrl_config *cfg, drv_diag *d)
{
    b->mirror = mirror;
    b->names = names;
    b->writer = writer;
    b->counters = counters;
    b->cfg = cfg;
    ctrl_writer_follow(writer, &b->send.urgent); /* (a gang's pods before its status) */
    return ctrl_send_init(&b->send, kcfg, cfg->o.binders, 0, events, names, d);
}

int ctrl_binder_start(ctrl_binder *b, drv_diag *d)
{
    return ctrl_send_start(&b->send, d);
}

void ctrl_binder_stop(ctrl_binder *b)
{
    ctrl_send_stop(&b->send);
}

void ctrl_binder_fini(ctrl_binder *b)
{
    ctrl_send_fini(&b->send);
}

void ctrl_binder_hold(ctrl_binder *b)
{
    ctrl_send_hold(&b->send);
}

void ctrl_binder_flush(ctrl_binder *b)
{
    ctrl_send_flush(&b->send);
}

int ctrl_binder_limit(ctrl_binder *b, int *peak)
{
    return ctrl_send_limit(&b->send, peak);
}

void ctrl_binder_lead(ctrl_binder *b, bool on)
{
    b->leader = on;
    if (!on)
        ctrl_send_drop(&b->send);
}

/* ---- what a pod's requests carry ------------------------------------------------------------ */

/* The path of pod `pod` of namespace `ns`, allocated (NULL: out of memory). */
static char *path_of(const char *ns, const char *pod)
{
    char path[1200];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, pod);
    return drv_strdup(path);
}

/* Slot s's pod's own path, allocated (NULL: out of memory). */
static char *pod_path(ctrl_binder *b, int32_t s)
{
    ctrl_mirror *m = b->mirror;
    char pod[600];
    ctrl_mirror_pod_name(m, s, pod, sizeof pod);
    return path_of(m->jobs[m->st.pods[s].job].ns_text, pod);
}

/* The peer environment's inputs of job j into *pj (pj->ns, pj->name point at ns, name, n bytes
 * each). */
static void peer_job(ctrl_binder *b, int32_t j, drv_peer_job *pj, char *ns, char *name, size_t n)
{
    const job_record *jr = &b->mirror->jobs[j];
    const drv_job *jb = &b->mirror->st.jobs[j];
    ctrl_name_str(b->names, jr->ns, ns, n);
    ctrl_name_str(b->names, jr->name, name, n);
    *pj = (drv_peer_job){.ns = ns,
                         .name = name,
                         .framework =
                             jr->allreduce ? DRV_FRAMEWORK_ALLREDUCE : DRV_FRAMEWORK_TENSORFLOW};
    for (int r = 0; r < DRV_NROLES; r++)
        pj->replicas[r] = jb->target[r];
}

/* Job j's headless Service (its pods' names resolve through it), handed to the writer once,
 * with its first pods (docs/running.md: peers). */
static void ask_service(ctrl_binder *b, int32_t j)
{
    job_record *jr = &b->mirror->jobs[j];
    if (jr->service_asked)
        return;
    jr->service_asked = true;
    char ns[256], name[256];
    drv_peer_job pj;
    peer_job(b, j, &pj, ns, name, sizeof ns);
    char *text = drv_peers_service_json(&pj, jr->uid);
    char path[400];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/services", ns);
    if (!text || ctrl_writer_post(b->writer, path, text, true) != 0)
        drv_log(DRV_LOG_ERROR, "out of memory: the Service of %s/%s not created", ns, name);
    drv_free(text);
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
 * paths it is sent to. The pod is marked as having its job's peer environment of now (env_gen).
 * O(the template's length): a copy, no parse; two look-ups of names (the job's namespace and
 * name). NULL: out of memory. */
static pod_render *pod_render_new(ctrl_binder *b, int32_t s, int32_t node)
{
    static const char pre[] = "/api/v1/namespaces/", post[] = "/pods";
    ctrl_mirror *m = b->mirror;
    const drv_state *st = &m->st;
    const drv_pod *p = &st->pods[s];
    const job_record *jr = &m->jobs[p->job];
    char ns[256], job[256], pod[600];
    drv_peer_job peers;
    peer_job(b, p->job, &peers, ns, job, sizeof ns);
    m->pods[s].env_gen = jr->env_gen;
    ctrl_mirror_pod_name_in(m, s, job, pod, sizeof pod);
    const char *tmpl = jr->tmpl[p->role];
    char nn[256] = "";
    if (node >= 0)
        ctrl_mirror_node_name(m, node, nn, sizeof nn);
    size_t lns = strlen(ns), lpod = strlen(pod);
    size_t lpath = sizeof pre - 1 + lns + sizeof post - 1;
    size_t n = (tmpl ? strlen(tmpl) + 1 : 0) + lpath + 1 + lpath + 1 + lpod + 1 + lns + 1 +
               strlen(job) + 1 + lpod + 1 + strlen(nn) + 1 + strlen(jr->uid) + 1;
    pod_render *r = drv_malloc(sizeof *r + n);
    if (!r)
        return NULL;
    *r = (pod_render){.sched = b->cfg->scheduler,
                      .role = p->role,
                      .rank = p->index,
                      .peers = peers,
                      .cpu_limit = m->pods[s].want_cpu_limit};
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

/* s and suffix, allocated; NULL when s is or when out of memory. */
static char *suffixed(const char *s, const char *suffix)
{
    char *out = s ? drv_malloc(strlen(s) + strlen(suffix) + 1) : NULL;
    if (out)
        sprintf(out, "%s%s", s, suffix);
    return out;
}

/* ---- queueing ------------------------------------------------------------------------------- */

/* Queues r and marks its pod's request in flight. DRV_ENOMEM when it could not be queued
 * (nothing in flight); once queued, a failure is its answer's. */
static int enqueue(ctrl_binder *b, const bind_request *r)
{
    int rc = ctrl_send_submit(&b->send, r);
    if (rc != 0)
        return rc;
    pod_record *p = &b->mirror->pods[r->slot];
    p->inflight = r->request;
    p->inflight_node = r->request == REQ_BIND || r->request == REQ_CREATE ? r->node : -1;
    return 0;
}

int ctrl_binder_create(ctrl_binder *b, int32_t slot, int32_t node)
{
    ask_service(b, b->mirror->st.pods[slot].job); /* with its first pods */
    pod_render *r = pod_render_new(b, slot, node);
    return enqueue(b, &(bind_request){.slot = slot,
                                      .node = node,
                                      .request = REQ_CREATE,
                                      .path = r ? r->path : NULL,
                                      .pod_path = r ? r->pod_path : NULL,
                                      .render = r});
}

/* What slot's binding to node is rendered from (binding_render: the binder thread renders the
 * Binding's body), its strings copied after it. NULL: out of memory. */
static binding_render *binding_new(const char *ns, const char *pod, const char *node)
{
    size_t lns = strlen(ns) + 1, lpod = strlen(pod) + 1;
    binding_render *r = drv_malloc(sizeof *r + lns + lpod + strlen(node) + 1);
    if (!r)
        return NULL;
    char *tail = (char *)(r + 1);
    r->ns = copy(&tail, ns);
    r->pod = copy(&tail, pod);
    r->node = copy(&tail, node);
    return r;
}

static int bind(ctrl_binder *b, int32_t slot, int32_t node)
{
    const drv_state *st = &b->mirror->st;
    char pod[600], ns[256], nn[256];
    ctrl_name_str(b->names, b->mirror->jobs[st->pods[slot].job].ns, ns, sizeof ns);
    ctrl_mirror_pod_name(b->mirror, slot, pod, sizeof pod);
    ctrl_mirror_node_name(b->mirror, node, nn, sizeof nn);
    char *own = path_of(ns, pod), *path = suffixed(own, "/binding");
    return enqueue(b, &(bind_request){.slot = slot,
                                      .node = node,
                                      .request = REQ_BIND,
                                      .path = path,
                                      .pod_path = own,
                                      .binding = binding_new(ns, pod, nn)});
}

int ctrl_binder_resize(ctrl_binder *b, int32_t slot, char *body)
{
    char *own = pod_path(b, slot);
    return enqueue(b, &(bind_request){.slot = slot,
                                      .node = -1,
                                      .request = REQ_RESIZE,
                                      .path = suffixed(own, "/resize"),
                                      .body = body,
                                      .pod_path = own});
}

/* --bind-mode=binding: pod s, created unbound for the node it was placed on (p->want), is bound
 * there now, unless it was moved or is to be deleted meanwhile; its gang waits for this answer
 * too. */
static int bind_created(ctrl_binder *b, int32_t s)
{
    ctrl_mirror *m = b->mirror;
    pod_record *p = &m->pods[s];
    int32_t node = p->want;
    if (m->st.pods[s].node != node || p->delete_after || p->presence != POD_PRESENT)
        return 0;
    p->want = -1;
    int rc = bind(b, s, node);
    if (rc == 0) {
        job_record *jr = &m->jobs[m->st.pods[s].job];
        jr->lat_out++;
    } else {
        p->want = node;
    }
    return rc;
}

/* A pod being deleted holds its node's room until it is gone or finished, like
 * kube-scheduler counts terminating pods: when the state no longer has it where the API has it
 * (its job ended, it was evicted or migrated), that room is its ghost meanwhile. */
static void hold_room(ctrl_mirror *m, int32_t slot)
{
    pod_record *p = &m->pods[slot];
    const drv_pod *sp = &m->st.pods[slot];
    if (p->presence != POD_ABSENT && p->api_name && !ctrl_pod_terminal(p->phase) &&
        sp->node != p->api_node)
        ctrl_mirror_set_ghost(m, p, p->api_name, m->st.jobs[sp->job].role[sp->role].req);
}

/* A pod to be deleted whose placement (a binding or a bound creation) is still out may be on
 * that node from the moment it is answered until its deletion has gone through: when the state
 * no longer has it there (its job ended, it was evicted), that room is its ghost from now, not
 * from the answer, or a cycle in between could give it away. The answer sets it right
 * (ctrl_binder_apply_answer). */
static void hold_placed_room(ctrl_binder *b, int32_t slot)
{
    ctrl_mirror *m = b->mirror;
    pod_record *p = &m->pods[slot];
    const drv_pod *sp = &m->st.pods[slot];
    int32_t node = p->inflight_node;
    if ((p->inflight != REQ_BIND && p->inflight != REQ_CREATE) || node < 0 || sp->node == node)
        return;
    int32_t name = ctrl_mirror_node_key(m, node);
    if (name > 0) {
        ctrl_mirror_set_ghost(m, p, name, m->st.jobs[sp->job].role[sp->role].req);
        p->ghost_placed = true;
    }
}

int ctrl_binder_delete(ctrl_binder *b, int32_t slot)
{
    pod_record *p = &b->mirror->pods[slot];
    if (p->inflight == REQ_DELETE)
        return 0;
    if (p->inflight) {
        p->delete_after = true;
        hold_placed_room(b, slot);
        return 0;
    }
    hold_room(b->mirror, slot);
    char *own = pod_path(b, slot);
    int rc = enqueue(
        b, &(bind_request){
               .slot = slot, .node = -1, .request = REQ_DELETE, .path = own, .pod_path = own});
    if (rc == 0 && p->presence == POD_PRESENT) {
        p->presence = POD_DELETING;
        p->delete_assumed = true;
    }
    return rc;
}

int ctrl_binder_place(ctrl_binder *b, int32_t slot, int32_t node)
{
    ctrl_mirror *m = b->mirror;
    pod_record *p = &m->pods[slot];
    job_record *jr = &m->jobs[m->st.pods[slot].job];
    /* (another operator's pod that is gone is never created: bound if it comes back) */
    if (p->presence == POD_DELETING || p->inflight || (p->presence == POD_ABSENT && jr->members) ||
        !drv_res_nonneg(drv_node_free(&m->st.nodes[node]))) {
        p->want = node;
        jr->lat_armed = false; /* not bound by this cycle's requests alone */
        return 0;
    }
    int rc;
    if (p->presence == POD_ABSENT && b->cfg->o.bind_with_binding) {
        rc = ctrl_binder_create(b, slot, -1); /* (bound when answered: placement_answered) */
        if (rc == 0)
            p->want = node;
    } else {
        rc = p->presence == POD_ABSENT ? ctrl_binder_create(b, slot, node) : bind(b, slot, node);
    }
    if (rc != 0) {
        if (m->st.pods[slot].node == node)
            ctrl_mirror_place(m, slot, -1);
        m->dirty = true;
        return rc;
    }
    jr->lat_out++;
    jr->lat_pods++;
    return 0;
}

/* ---- answers -------------------------------------------------------------------------------- */

/* A success counted as what it did: a pod created bound, created unbound, or bound. */
static void count_success(ctrl_counters *k, bool create, bool bound)
{
    ctrl_count(k, create ? &k->stats.creates : &k->stats.binds, 1);
    if (create && bound)
        ctrl_count(k, &k->stats.created_bound, 1);
}

/* A gang whose last answer this is has its latency recorded. */
static void gang_answered(ctrl_binder *b, job_record *jr, int32_t job, const ctrl_event *e)
{
    double sent = e->u.answer.sent, done = e->u.answer.done;
    if (jr->lat_armed && --jr->lat_out <= 0) {
        jr->lat_armed = false;
        if (ctrl_mirror_job_complete(b->mirror, job)) {
            double last_sent = jr->lat_sent > sent ? jr->lat_sent : sent;
            drv_ctrl_latency l = {.decide = jr->lat_decide - jr->lat_t0,
                                  .sent = last_sent - jr->lat_t0,
                                  .done = done - jr->lat_t0,
                                  .server = jr->lat_server + (done - sent),
                                  .pods = jr->lat_pods};
            ctrl_counters_latency(b->counters, &l);
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
static int deletion_answered(ctrl_binder *b, int32_t s, const ctrl_event *e)
{
    pod_record *p = &b->mirror->pods[s];
    int8_t read = e->u.answer.read;
    if (e->u.answer.ok || read == READ_GONE || (read == READ_FOUND && e->u.answer.read_deleting)) {
        if (e->u.answer.ok && e->u.answer.status != 404)
            ctrl_count(b->counters, &b->counters->stats.deletes, 1);
        p->delete_assumed = false;
        p->delete_tries = 0;
        return 0;
    }
    if (p->presence == POD_ABSENT) /* gone meanwhile (its watch event came first) */
        return 0;
    if (b->leader && ++p->delete_tries < MAX_DELETE_TRIES) {
        int rc = ctrl_binder_delete(b, s);
        return rc == DRV_ENOMEM ? rc : 0;
    }
    if (b->leader)
        drv_log(DRV_LOG_WARN,
                "drover run: a pod's deletion failed %d times; its room stays held "
                "until it goes",
                MAX_DELETE_TRIES);
    if (p->delete_assumed && p->presence == POD_DELETING)
        p->presence = POD_PRESENT;
    p->delete_assumed = false;
    p->delete_tries = 0;
    b->mirror->dirty = true;
    return 0;
}

/* Slot s's creation met a pod of its name that its job does not control (READ_FOREIGN, issue
 * 26): never adopted; the job waits for the name, and says so once (a Warning naming the pod).
 * No cycle is asked for (the same creation would meet the same pod): the next comes with the
 * next change, or when a pod not the job's is deleted (name_waits). */
static void name_taken(ctrl_binder *b, int32_t s)
{
    ctrl_mirror *m = b->mirror;
    pod_record *p = &m->pods[s];
    if (p->name_taken)
        return;
    p->name_taken = true;
    m->name_waits++;
    const drv_pod *sp = &m->st.pods[s];
    const job_record *jr = &m->jobs[sp->job];
    char pod[600], msg[1400];
    ctrl_mirror_pod_name(m, s, pod, sizeof pod);
    snprintf(msg, sizeof msg,
             "pod %s/%s already exists and is not this job's (its controller ownerReference does "
             "not name this TrainingJob's uid): it is not adopted; the job's pod is created once "
             "that name is free",
             jr->ns_text, pod);
    ctrl_ref about = ctrl_ref_trainingjob(jr->ns_text, jr->name_text, jr->uid);
    ctrl_writer_event(b->writer, &about, "Warning", "PodNameTaken", msg);
}

/* A placement's or creation's answer: done, the pod is where it was sent; failed, the
 * assumption is undone, and only what the API says is believed: after a 409 the pod as read
 * (bound where the API has it: nothing to send again; not bound: bound next time; gone, or not
 * read: created next time, where a 409 reads it again); a 404 says the pod does not exist (a
 * binding of a pod whose creation failed). A failed creation is never taken to have made the
 * pod. */
static void placement_answered(ctrl_binder *b, int32_t s, const ctrl_event *e)
{
    ctrl_mirror *m = b->mirror;
    pod_record *p = &m->pods[s];
    const drv_pod *sp = &m->st.pods[s];
    int32_t node = e->u.answer.node;
    bool create = e->u.answer.request == REQ_CREATE;
    if (e->u.answer.ok) {
        if (p->presence == POD_ABSENT)
            p->presence = POD_PRESENT;
        if (create && p->name_taken) {
            p->name_taken = false;
            m->name_waits--;
        }
        if (node >= 0) {
            int32_t name = ctrl_mirror_node_key(m, node);
            p->api_node = node;
            p->api_name = name > 0 ? name : 0;
        }
        count_success(b->counters, create, node >= 0);
        if (create && node < 0 && p->want >= 0 && b->cfg->o.bind_with_binding &&
            bind_created(b, s) == DRV_ENOMEM)
            m->dirty = true; /* (its next cycle's reconcile binds it: p->want) */
        /* A job re-creating pods for new peers is Scaling until the last is back: this may be
         * it, or a pod sent with its old peers, now to be re-created; only a cycle's reconcile
         * says so or does it (its watch echo asks for none) */
        if (m->jobs[sp->job].peers_pending)
            m->dirty = true;
        return;
    }
    /* Where the state should have the pod: on the node the API read back, else off the node
     * it was assumed on (unless the state wants it placed still), else where it is; one move. */
    int32_t read = -1, to = sp->node;
    bool foreign = e->u.answer.read == READ_FOREIGN;
    if (foreign)
        name_taken(b, s);
    else if (e->u.answer.read == READ_FOUND)
        read = ctrl_mirror_pod_read(m, s, e->u.answer.read_node);
    else if ((e->u.answer.read == READ_GONE || e->u.answer.status == 404) &&
             p->presence == POD_PRESENT)
        p->presence = POD_ABSENT;
    if (read >= 0)
        to = read;
    else if (node >= 0 && sp->node == node && p->want < 0)
        to = -1;
    if (!foreign) /* (a name taken asks for no cycle: name_taken) */
        m->dirty = true;
    if (to != sp->node)
        ctrl_mirror_place(m, s, to);
}

int ctrl_binder_apply_answer(ctrl_binder *b, const ctrl_event *e)
{
    ctrl_mirror *m = b->mirror;
    int32_t s = e->u.answer.slot;
    pod_record *p = &m->pods[s];
    const drv_pod *sp = &m->st.pods[s];
    p->inflight = REQ_NONE;
    if (e->u.answer.request == REQ_DELETE)
        return deletion_answered(b, s, e);
    if (e->u.answer.request != REQ_RESIZE) /* (a resize's: ctrl_resize_answered) */
        placement_answered(b, s, e);
    if (p->ghost_placed) {
        /* The room held for the placement while it was out is held again only if the pod is
         * there (hold_room, by the deletion below); one seen being deleted meanwhile keeps the
         * ghost its watch event gave it (ctrl_mirror.c). */
        p->ghost_placed = false;
        if (p->presence != POD_DELETING)
            ctrl_mirror_set_ghost(m, p, 0, (drv_res){0, 0, 0});
    }
    if (p->delete_after) {
        p->delete_after = false;
        if (p->presence == POD_PRESENT && ctrl_binder_delete(b, s) == DRV_ENOMEM)
            return DRV_ENOMEM;
    }
    if (e->u.answer.request != REQ_RESIZE) /* (a resize is no part of a gang's placing) */
        gang_answered(b, &m->jobs[sp->job], sp->job, e);
    return 0;
}
