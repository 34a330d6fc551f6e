/*
 * ctrl_writer.c - `drover run`'s writer: status subresources (TrainingJobs, PodGroups, Queues)
 * and Events, written by one thread with its own API client and work queue, so that no write to
 * the API delays a scheduling decision (ctrl_writer.h).
 *
 * It also creates the objects a job needs beside its pods (its headless Service), in order with
 * the Events, where a 409 (there already) is what was wanted.
 *
 * Owns: its queue and thread. The scheduler thread says what it wants written
 * (ctrl_writer_status keeps only the latest status per object; ctrl_writer_event queues Events
 * in order, as plain text: an event_note, rendered to JSON by the writer thread when it is
 * sent) under the writer's lock; the writer thread takes them from there and writes them. A
 * status is a JSON merge patch of the status subresource whose metadata.resourceVersion is a
 * precondition (write_status says which version), so that a status computed before someone
 * else's write never lands after it; back-off and up to 8 retries; a 404 means the object is
 * gone and drops it. Touches: the counters (what was written, what failed).
 *
 * Behind a burst of pod requests (ctrl_writer_follow) it holds its writes back, up to
 * CTRL_WRITER_HOLD_S, then flushes what is queued: on a real server, whose writes take
 * 15-30 ms each, a status patch or Event sent during a gang's creations takes a seat and a
 * place in the budget a creation could have had, and a job's statuses asked during the burst
 * (Pending, then Running) replace each other, so one PATCH per job goes instead of several.
 *
 * Example: a job goes Pending -> Running within one back-off: only "Running" is written. Its
 * TrainingJob at version 7 was written Pending by us (7 -> 8); "Running", computed from 7 (the
 * echo of 8 not applied yet), is sent with precondition 8 (8 -> 9). Had someone else written it
 * Succeeded in between (8 -> 9), "Running" would meet a 409 and be dropped once the scheduler
 * thread applies version 9 (the job then ends as that status says).
 */
#include "ctrl_writer.h"

#include "drover/clock.h"
#include "kube/json.h"
#include "kube/kthread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int ctrl_writer_init(ctrl_writer *w, const drv_kube_config *cfg, ctrl_counters *counters,
                     bool no_events, const char *source, drv_diag *d)
{
    pthread_mutex_init(&w->mu, NULL);
    w->counters = counters;
    w->no_events = no_events;
    memset(w->spam, 0, sizeof w->spam);
    w->source = source;
    int rc = drv_kube_new(&w->client, cfg, d);
    if (rc != 0)
        return rc;
    if (!(w->queue = drv_workqueue_new(0.05, 30, NULL, NULL)))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    return 0;
}

/* Makes status[key] a slot to fill in (under w->mu). */
static status_slot *status_slot_of(ctrl_writer *w, int32_t key)
{
    int32_t old = w->cap_status;
    if (drv_grow(&w->status, sizeof *w->status, &w->cap_status, key + 1) != 0)
        return NULL;
    if (w->cap_status > old) /* new entries: nothing to write yet */
        memset(w->status + old, 0, sizeof *w->status * (size_t)(w->cap_status - old));
    if (!w->status[key])
        w->status[key] = drv_calloc(1, sizeof *w->status[key]);
    return w->status[key];
}

void ctrl_status_trainingjob(status_request *r, const char *ns, const char *name, const char *rv,
                             const char *phase, const char *message)
{
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path,
             "/apis/drover.dev/v1alpha1/namespaces/%s/trainingjobs/%s/status", ns, name);
    snprintf(r->rv, sizeof r->rv, "%s", rv);
    snprintf(r->phase, sizeof r->phase, "%s", phase);
    snprintf(r->message, sizeof r->message, "%s", message);
}

bool ctrl_writer_status(ctrl_writer *w, int32_t key, const status_request *r)
{
    char k[32];
    snprintf(k, sizeof k, "s/%d", (int)key);
    pthread_mutex_lock(&w->mu);
    status_slot *slot = status_slot_of(w, key);
    if (slot) {
        slot->r = *r;
        slot->gen++;
        slot->pending = true;
        slot->refused = false;
    }
    pthread_mutex_unlock(&w->mu);
    if (!slot || drv_workqueue_add(w->queue, k) != 0) {
        drv_log(DRV_LOG_ERROR, "out of memory: status at %s not written", r->path);
        return false;
    }
    return true;
}

/* ---- preconditions: the versions our own writes went through -------------------------------- */

/* The index of version rv in ch, or -1. At most STATUS_CHAIN comparisons. */
static int32_t chain_find(const status_chain *ch, const char *rv)
{
    for (int32_t i = ch->n - 1; i >= 0; i--)
        if (!strcmp(ch->v[i], rv))
            return i;
    return -1;
}

/* Drops the versions before v[i]: nothing is computed from them any more. */
static void chain_trim(status_chain *ch, int32_t i)
{
    if (i <= 0)
        return;
    memmove(ch->v, ch->v + i, sizeof ch->v[0] * (size_t)(ch->n - i));
    ch->n -= i;
}

/* Our write with precondition from made version to of the object (to == from: a no-op). */
static void chain_wrote(status_chain *ch, const char *from, const char *to)
{
    if (ch->n == 0 || strcmp(ch->v[ch->n - 1], from) != 0) {
        snprintf(ch->v[0], sizeof ch->v[0], "%s", from);
        ch->n = 1;
    }
    if (!to[0] || !strcmp(to, from))
        return;
    if (ch->n == STATUS_CHAIN)
        chain_trim(ch, 1);
    snprintf(ch->v[ch->n++], sizeof ch->v[0], "%s", to);
}

void ctrl_writer_seen(ctrl_writer *w, int32_t key, const char *rv, bool finished)
{
    char k[32];
    bool requeue = false;
    pthread_mutex_lock(&w->mu);
    status_slot *s = key >= 0 && key < w->cap_status && rv[0] ? w->status[key] : NULL;
    int32_t i = s ? chain_find(&s->chain, rv) : -1;
    if (s && i >= 0)
        chain_trim(&s->chain, i); /* our own write, seen back */
    else if (s)
        s->chain.n = 0; /* someone else's: nothing older may be sent any more */
    /* A status waiting, computed from an older version (the scheduler thread applies versions
     * in order): only our own writes came since (the same status computed from rv), or
     * someone else's, whose status fields Drover reads back only when finished. */
    if (s && s->pending && s->r.rv[0] && strcmp(s->r.rv, rv) != 0) {
        if (i < 0 && finished) {
            s->pending = false; /* a finished status is never written over */
            drv_log(DRV_LOG_INFO, "%s: %s was written finished meanwhile: %s not written",
                    s->r.path, rv, s->r.phase);
        } else {
            snprintf(s->r.rv, sizeof s->r.rv, "%s", rv);
            requeue = s->refused; /* (one still queued is sent with rv when its turn comes) */
            s->refused = false;
        }
    }
    pthread_mutex_unlock(&w->mu);
    if (requeue) {
        snprintf(k, sizeof k, "s/%d", (int)key);
        drv_workqueue_forget(w->queue, k); /* (its back-off was for the version refused) */
        if (drv_workqueue_add(w->queue, k) != 0)
            drv_log(DRV_LOG_ERROR, "out of memory: a status of key %d not written", (int)key);
    }
}

/* Queues path and body (owned, then the queue's) to be POSTed (patch: merge-PATCHed) in order
 * with the Events. */
static bool queue_request(ctrl_writer *w, char *path, char *body, bool conflict_ok, bool patch)
{
    pthread_mutex_lock(&w->mu);
    bool ok = (body || conflict_ok) && path &&
              drv_grow(&w->events, sizeof *w->events, &w->cap_events, w->nevents + 1) == 0;
    if (ok)
        w->events[w->nevents++] =
            (event_request){.path = path, .body = body, .conflict_ok = conflict_ok, .patch = patch};
    pthread_mutex_unlock(&w->mu);
    return ok;
}

/* Queues the Event note (owned, then the queue's), rendered when it is sent. */
static bool queue_note(ctrl_writer *w, event_note *note)
{
    pthread_mutex_lock(&w->mu);
    bool ok = note && drv_grow(&w->events, sizeof *w->events, &w->cap_events, w->nevents + 1) == 0;
    if (ok)
        w->events[w->nevents++] = (event_request){.note = note};
    pthread_mutex_unlock(&w->mu);
    return ok;
}

static bool post_queue(ctrl_writer *w, char *path, char *body, bool conflict_ok)
{
    return queue_request(w, path, body, conflict_ok, false);
}

int ctrl_writer_post(ctrl_writer *w, const char *path, const char *body, bool conflict_ok)
{
    char *p = drv_strdup(path), *b = drv_strdup(body);
    if (!post_queue(w, p, b, conflict_ok)) {
        drv_free(p);
        drv_free(b);
        return DRV_ENOMEM;
    }
    return drv_workqueue_add(w->queue, "e") != 0 ? DRV_ENOMEM : 0;
}

int ctrl_writer_patch(ctrl_writer *w, const char *path, const char *body)
{
    char *p = drv_strdup(path), *b = drv_strdup(body);
    if (!p || !b || !queue_request(w, p, b, false, true)) {
        drv_free(p);
        drv_free(b);
        return DRV_ENOMEM;
    }
    return drv_workqueue_add(w->queue, "e") != 0 ? DRV_ENOMEM : 0;
}

int ctrl_writer_delete(ctrl_writer *w, const char *path)
{
    char *p = drv_strdup(path);
    if (!post_queue(w, p, NULL, true)) {
        drv_free(p);
        return DRV_ENOMEM;
    }
    return drv_workqueue_add(w->queue, "e") != 0 ? DRV_ENOMEM : 0;
}

/* Whether an Event of reason about the object `about` is within its budget (and takes from
 * it). FNV-1a over namespace, name and reason. O(their length). */
static bool event_allowed(ctrl_writer *w, const ctrl_ref *about, const char *reason)
{
    uint32_t h = 2166136261u;
    const char *parts[] = {about->ns, "/", about->name, "/", reason};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        for (const char *c = parts[i]; c && *c; c++)
            h = (h ^ (uint8_t)*c) * 16777619u;
    event_bucket *b = &w->spam[h % EVENT_BUCKETS];
    double now = drv_clock_mono();
    if (b->t == 0)
        b->tokens = EVENT_BURST;
    else
        b->tokens += (now - b->t) / EVENT_REFILL_S;
    if (b->tokens > EVENT_BURST)
        b->tokens = EVENT_BURST;
    b->t = now;
    if (b->tokens < 1)
        return false;
    b->tokens -= 1;
    return true;
}

void ctrl_writer_event(ctrl_writer *w, const ctrl_ref *about, const char *type, const char *reason,
                       const char *message)
{
    if (w->no_events || w->following)
        return;
    if (!event_allowed(w, about, reason)) {
        drv_log(DRV_LOG_DEBUG, "Event %s of %s/%s not written: more than %d at once", reason,
                about->ns, about->name, EVENT_BURST);
        return;
    }
    size_t len = strlen(message);
    event_note *note = drv_malloc(sizeof *note + len + 1);
    if (note) {
        snprintf(note->kind, sizeof note->kind, "%s", about->kind);
        snprintf(note->api_version, sizeof note->api_version, "%s", about->api_version);
        snprintf(note->ns, sizeof note->ns, "%s", about->ns);
        snprintf(note->name, sizeof note->name, "%s", about->name);
        snprintf(note->uid, sizeof note->uid, "%s", about->uid ? about->uid : "");
        snprintf(note->type, sizeof note->type, "%s", type);
        snprintf(note->reason, sizeof note->reason, "%s", reason);
        memcpy(note->message, message, len + 1);
        drv_time_rfc3339(note->now, sizeof note->now, drv_clock_wall(), false);
    }
    bool ok = queue_note(w, note);
    if (!ok || drv_workqueue_add(w->queue, "e") != 0) {
        if (!ok)
            drv_free(note);
        drv_log(DRV_LOG_ERROR, "out of memory: Event %s of %s/%s not written", reason, about->ns,
                about->name);
    }
}

/* The path and body of the Event of note r->note (writer thread). False when out of memory. */
static bool render_event(ctrl_writer *w, event_request *r)
{
    const event_note *n = r->note;
    r->body = drv_kube_event_json(n->ns, n->kind, n->api_version, n->name, n->uid, n->type,
                                  n->reason, n->message, n->now, w->source);
    r->path = drv_malloc(300);
    if (r->path)
        snprintf(r->path, 300, "/api/v1/namespaces/%s/events", n->ns);
    return r->body && r->path;
}

/* ---- status as JSON (writer thread) --------------------------------------------------------- */

static json_t *time_json(double t)
{
    char buf[40];
    drv_time_rfc3339(buf, sizeof buf, t, false);
    return json_string(buf);
}

/* The conditions (the True one last: Kubeflow's printer column reads .status.conditions[-1:]),
 * restarts, start and completion times and per-role succeeded and failed counts of r into obj's
 * status (a TrainingJob's, set by drv_kube_trainingjob_set_status). */
static int set_job_status(json_t *obj, const status_request *r)
{
    json_t *st = json_object_get(obj, "status");
    if (!json_is_object(st))
        return DRV_ENOMEM;
    json_t *list = json_array();
    int8_t last = drv_condition_current(r->conds);
    for (int k = 0; list && k <= DRV_NCONDS; k++) {
        int type = k == DRV_NCONDS ? last : k;
        if (type < 0 || !r->conds[type].set || (k < DRV_NCONDS && type == last))
            continue;
        const drv_condition *x = &r->conds[type];
        json_t *one =
            json_pack("{s:s, s:s, s:s, s:s}", "type", drv_job_cond_name(type), "status",
                      x->status ? "True" : "False", "reason", x->reason, "message", x->message);
        if (!one ||
            json_object_set_new(one, "lastTransitionTime", time_json(x->last_transition)) != 0 ||
            json_array_append_new(list, one) != 0) {
            json_decref(list);
            return DRV_ENOMEM;
        }
    }
    if (!list || json_object_set_new(st, "conditions", list) != 0 ||
        json_object_set_new(st, "restarts", json_integer(r->restarts)) != 0)
        return DRV_ENOMEM;
    if (r->start_time >= 0 && json_object_set_new(st, "startTime", time_json(r->start_time)))
        return DRV_ENOMEM;
    if (r->completion_time >= 0 &&
        json_object_set_new(st, "completionTime", time_json(r->completion_time)))
        return DRV_ENOMEM;
    json_t *rs = json_object_get(st, "replicaStatuses");
    const char *key;
    json_t *one;
    json_object_foreach(rs, key, one)
    {
        int r2 = drv_role_parse(!strcmp(key, "Master") ? "chief" : key);
        if (r2 < 0) {
            char low[16];
            snprintf(low, sizeof low, "%s", key);
            for (char *q = low; *q; q++)
                *q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
            r2 = drv_role_parse(low);
        }
        if (r2 < 0)
            continue;
        if (json_object_set_new(one, "succeeded", json_integer(r->succeeded[r2])) != 0 ||
            json_object_set_new(one, "failed", json_integer(r->failed[r2])) != 0)
            return DRV_ENOMEM;
    }
    return 0;
}

/* ---- the writer thread ---------------------------------------------------------------------- */

static int set_status(json_t *obj, void *arg)
{
    const status_request *r = arg;
    if (r->queue)
        return drv_kube_queue_set_status(obj, r->active[0], r->active[1], r->used, r->usage);
    if (r->podgroup)
        return drv_kube_podgroup_set_status(obj, r->phase, r->active[0], r->succeeded[0],
                                            r->failed[0], r->restarts);
    /* (the patch has no spec to list the job's roles: the record says them) */
    const char *keys[DRV_NROLES];
    for (int k = 0; k < DRV_NROLES; k++)
        keys[k] = r->roles & (1u << k) ? drv_kube_tj_role_key(k, r->master) : NULL;
    int rc = drv_kube_trainingjob_set_status(obj, r->phase, r->message, r->active, keys);
    return rc ? rc : set_job_status(obj, r);
}

/* Writes every Event queued so far, in order. */
static void write_events(ctrl_writer *w)
{
    pthread_mutex_lock(&w->mu);
    event_request *v = w->events;
    int32_t n = w->nevents;
    w->events = NULL;
    w->nevents = w->cap_events = 0;
    pthread_mutex_unlock(&w->mu);
    for (int32_t i = 0; i < n; i++) {
        drv_diag d = {{0}};
        long status = 0;
        if (v[i].note && !render_event(w, &v[i])) {
            drv_log(DRV_LOG_ERROR, "out of memory: Event %s of %s/%s not written",
                    v[i].note->reason, v[i].note->ns, v[i].note->name);
            drv_free(v[i].note);
            drv_free(v[i].path);
            drv_free(v[i].body);
            continue;
        }
        int rc = v[i].body ? drv_kube_request(w->client, v[i].patch ? "PATCH" : "POST", v[i].path,
                                              v[i].patch ? "application/merge-patch+json" : NULL,
                                              v[i].body, &status, NULL, &d)
                           : drv_kube_delete(w->client, v[i].path, -1, "Background", &status, &d);
        if (rc == 0 && v[i].patch) {
            /* (a TrainingJob's annotation: no Event to count) */
        } else if (rc == 0 && !v[i].conflict_ok) {
            ctrl_count(w->counters, &w->counters->stats.events, 1);
        } else if (rc == 0 || (v[i].conflict_ok && status == (v[i].body ? 409 : 404))) {
            /* (created or deleted, or there already or gone already) */
        } else {
            drv_log(DRV_LOG_WARN, "%s", d.msg);
            ctrl_count(w->counters, &w->counters->stats.api_errors, 1);
        }
        drv_free(v[i].note);
        drv_free(v[i].path);
        drv_free(v[i].body);
    }
    drv_free(v);
}

/* The status patch of r with precondition rv ("": none), compact JSON (free()), or NULL. */
static char *status_patch(const status_request *r, const char *rv)
{
    json_t *patch = rv[0]
                        ? json_pack("{s:{s:s}, s:{}}", "metadata", "resourceVersion", rv, "status")
                        : json_pack("{s:{}}", "status");
    char *body =
        patch && set_status(patch, (void *)r) == 0 ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    return body;
}

/* Takes the status to write of slot id into *r, with its precondition into rv: the version it
 * was computed from, or the newest our own writes made of that one. False: nothing to write. */
static bool status_take(ctrl_writer *w, int32_t id, status_request *r, char rv[24], uint32_t *gen)
{
    pthread_mutex_lock(&w->mu);
    status_slot *s = id >= 0 && id < w->cap_status ? w->status[id] : NULL;
    bool have = s && s->pending;
    if (have) {
        *r = s->r;
        *gen = s->gen;
        int32_t i = r->rv[0] ? chain_find(&s->chain, r->rv) : -1;
        chain_trim(&s->chain, i);
        snprintf(rv, 24, "%s", i >= 0 ? s->chain.v[s->chain.n - 1] : r->rv);
    }
    pthread_mutex_unlock(&w->mu);
    return have;
}

/* After slot id's write with precondition rv: written (the version it made: made), gone (404),
 * or refused (409). */
static void status_answered(ctrl_writer *w, int32_t id, uint32_t gen, const char *rv,
                            const char *made, bool written, bool gone, bool refused)
{
    pthread_mutex_lock(&w->mu);
    status_slot *s = w->status[id];
    if (rv[0] && written)
        chain_wrote(&s->chain, rv, made);
    if ((written || gone) && s->gen == gen)
        s->pending = false;
    if (refused && s->gen == gen && s->pending)
        s->refused = true; /* (the next version seen sends it again at once) */
    pthread_mutex_unlock(&w->mu);
}

/*
 * Writes the latest status asked for the object of key "s/<id>" as a JSON merge patch of its
 * status subresource, with metadata.resourceVersion as a precondition when the status was
 * computed from a TrainingJob: a version the scheduler thread applied, or the newest our own
 * writes made of it (status_chain), so that the common path sends one PATCH per status and
 * meets no conflict, while a write computed before someone else's (a status written finished,
 * a spec edit) meets a 409 instead of landing over it. A 409 waits for the scheduler thread to
 * apply the newer version (ctrl_writer_seen: re-based, or dropped when it is finished), and is
 * retried with back-off meanwhile with the same precondition, which can never land over a newer
 * version (an injected 409, the object unchanged, passes). Other failures are retried with
 * back-off, up to 8 times; a 404 means the object is gone and drops it.
 */
static void write_status(ctrl_writer *w, const char *key)
{
    int32_t id = (int32_t)atol(key + 2);
    status_request r;
    char rv[24];
    uint32_t gen;
    if (!status_take(w, id, &r, rv, &gen))
        return;
    drv_diag d = {{0}};
    long status = 0;
    char made[24] = ""; /* (the version the write made: read only when there is a chain) */
    char *body = status_patch(&r, rv);
    int rc = body ? drv_kube_request_rv(w->client, "PATCH", r.path, "application/merge-patch+json",
                                        body, &status, rv[0] ? made : NULL, sizeof made, &d)
                  : drv_fail(&d, DRV_ENOMEM, "%s: out of memory", r.path);
    free(body);
    status_answered(w, id, gen, rv, made, rc == 0, status == 404, status == 409);
    if (rc == 0) {
        ctrl_count(w->counters, &w->counters->stats.status_writes, 1);
        drv_workqueue_forget(w->queue, key);
    } else if (status == 404) {
        drv_workqueue_forget(w->queue, key); /* the job is gone (counted: every failure is) */
        ctrl_count(w->counters, &w->counters->stats.api_errors, 1);
    } else {
        drv_log(status == 409 ? DRV_LOG_INFO : DRV_LOG_WARN, "%s", d.msg);
        ctrl_count(w->counters, &w->counters->stats.api_errors, 1);
        if (drv_workqueue_retries(w->queue, key) < 8)
            drv_workqueue_retry(w->queue, key);
    }
}

void ctrl_writer_follow(ctrl_writer *w, const atomic_int *burst)
{
    w->burst = burst;
}

/* Waits while the followed burst is on, CTRL_WRITER_HOLD_S at most (polled every 2 ms: the
 * burst's end is seen within 2 ms, at ~500 wake-ups a second only while one is on). */
static void hold(ctrl_writer *w)
{
    double t0 = drv_clock_mono();
    while (w->burst && atomic_load(w->burst) > 0 && !atomic_load(&w->stopping) &&
           drv_clock_mono() - t0 < CTRL_WRITER_HOLD_S) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

static void *writer_main(void *arg)
{
    ctrl_writer *w = arg;
    char key[32];
    drv_kthread_name("drv-writer");
    bool flushing = false; /* writing what a hold gathered: no hold until the queue is empty */
    while (drv_workqueue_get(w->queue, key, sizeof key, true)) {
        if (!flushing) {
            hold(w);
            flushing = true;
        }
        if (!strcmp(key, "e"))
            write_events(w);
        else
            write_status(w, key);
        drv_workqueue_done(w->queue, key);
        if (drv_workqueue_len(w->queue) == 0)
            flushing = false;
    }
    return NULL;
}

int ctrl_writer_start(ctrl_writer *w, drv_diag *d)
{
    int err = pthread_create(&w->thread, NULL, writer_main, w);
    if (err != 0)
        return drv_fail(d, DRV_EIO, "cannot start the writer's thread: %s", strerror(err));
    w->started = true;
    return 0;
}

void ctrl_writer_stop(ctrl_writer *w)
{
    if (!w->started)
        return;
    atomic_store(&w->stopping, true);
    drv_workqueue_shutdown(w->queue);
    pthread_join(w->thread, NULL);
    w->started = false;
}

void ctrl_writer_fini(ctrl_writer *w)
{
    drv_kube_free(w->client);
    if (w->queue)
        drv_workqueue_free(w->queue);
    for (int32_t i = 0; i < w->cap_status; i++)
        drv_free(w->status[i]);
    drv_free(w->status);
    for (int32_t i = 0; i < w->nevents; i++) {
        drv_free(w->events[i].note);
        drv_free(w->events[i].path);
        drv_free(w->events[i].body);
    }
    drv_free(w->events);
    pthread_mutex_destroy(&w->mu);
}
