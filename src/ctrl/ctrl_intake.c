/*
 * ctrl_intake.c - `drover run`'s intake: six informers (nodes, pods, TrainingJobs,
 * PriorityClasses and, when the API serves them, PodGroups and Queues; Queues also once their
 * CRD is applied later, found by asking discovery again), each on its own thread with
 * its own API client, decode what changed and push it as an event; the scheduler thread takes the
 * queued events as one batch (ctrl.h).
 *
 * Owns: c->names (interned names, under names.mu), c->events (the queue, under events.mu) and
 * c->intake (the informers and their threads). Touches nothing else: the decoded records are
 * copied into events, and the informers' caches stay theirs.
 *
 * Example: a pod "ns/tj1-worker-0" labelled drover.dev/job=tj1 arrives as an EV_POD event with
 * key = intern("ns/tj1-worker-0") and job_key = intern("ns/tj1"), which the mirror looks up in
 * its job_of table to find the state's job. A pod of another operator with our schedulerName
 * gets job_key = intern("pg:ns/<its pod-group label>"), or intern("pod:ns/<its name>") when it
 * has none (a gang of one): neither can collide with a TrainingJob's "ns/name".
 */
#include "ctrl.h"

#include <stdlib.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------------------------- */

int32_t ctrl_name_intern(drv_ctrl *c, const char *s)
{
    pthread_mutex_lock(&c->names.mu);
    int32_t id = drv_strtab_intern(c->names.tab, s);
    pthread_mutex_unlock(&c->names.mu);
    return id;
}

int32_t ctrl_name_find(drv_ctrl *c, const char *s)
{
    pthread_mutex_lock(&c->names.mu);
    int32_t id = drv_strtab_find(c->names.tab, s);
    pthread_mutex_unlock(&c->names.mu);
    return id;
}

/* Copies the string of an interned id into buf (the table may grow meanwhile). */
const char *ctrl_name_str(drv_ctrl *c, int32_t id, char *buf, size_t n)
{
    pthread_mutex_lock(&c->names.mu);
    snprintf(buf, n, "%s", drv_strtab_str(c->names.tab, id));
    pthread_mutex_unlock(&c->names.mu);
    return buf;
}

char *ctrl_name_dup(drv_ctrl *c, int32_t id)
{
    pthread_mutex_lock(&c->names.mu);
    char *s = drv_strdup(drv_strtab_str(c->names.tab, id));
    pthread_mutex_unlock(&c->names.mu);
    return s;
}

/* ---- the event queue ------------------------------------------------------------------------ */

/* Queues e (its tj, if any, is then the queue's) and, with wake, wakes the scheduler thread;
 * when out of memory, drops it, frees its tj and logs `what`. */
static void events_push(drv_ctrl *c, const ctrl_event *e, const char *what, bool wake)
{
    pthread_mutex_lock(&c->events.mu);
    if (drv_grow(&c->events.v, sizeof *c->events.v, &c->events.cap, c->events.n + 1) != 0) {
        pthread_mutex_unlock(&c->events.mu);
        ctrl_tj_record_free(e->tj);
        drv_log(DRV_LOG_ERROR, "out of memory: %s dropped", what);
        return;
    }
    c->events.v[c->events.n++] = *e;
    if (wake && (!c->events.batch_wakes || c->events.n % CTRL_EVENTS_BATCH == 0))
        pthread_cond_signal(&c->events.cv);
    pthread_mutex_unlock(&c->events.mu);
}

void ctrl_events_push(drv_ctrl *c, const ctrl_event *e, const char *what)
{
    events_push(c, e, what, true);
}

void ctrl_events_push_quiet(drv_ctrl *c, const ctrl_event *e, const char *what)
{
    events_push(c, e, what, false);
}

void ctrl_events_signal(drv_ctrl *c)
{
    pthread_mutex_lock(&c->events.mu);
    if (c->events.n > 0)
        pthread_cond_signal(&c->events.cv);
    pthread_mutex_unlock(&c->events.mu);
}

/* The queue's array becomes *batch, and *batch's (emptied) the queue's: no copy, and the
 * informers wait on the lock for a swap only. */
int32_t ctrl_events_take(drv_ctrl *c, ctrl_event **batch, int32_t *cap, double until)
{
    double now = drv_clock_mono();
    pthread_mutex_lock(&c->events.mu);
    if (c->events.n == 0 && !c->events.woken && until > now) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double abs_t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + (until - now);
        ts.tv_sec = (time_t)abs_t;
        ts.tv_nsec = (long)((abs_t - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&c->events.cv, &c->events.mu, &ts);
    }
    ctrl_event *mine = *batch;
    int32_t mine_cap = *cap, n = c->events.n;
    *batch = c->events.v;
    *cap = c->events.cap;
    c->events.v = mine;
    c->events.cap = mine_cap;
    c->events.n = 0;
    c->events.woken = false;
    pthread_mutex_unlock(&c->events.mu);
    return n;
}

void ctrl_events_batch_wakes(drv_ctrl *c, bool on)
{
    pthread_mutex_lock(&c->events.mu);
    c->events.batch_wakes = on;
    pthread_mutex_unlock(&c->events.mu);
}

void ctrl_events_wake(drv_ctrl *c)
{
    pthread_mutex_lock(&c->events.mu);
    c->events.woken = true;
    pthread_cond_signal(&c->events.cv);
    pthread_mutex_unlock(&c->events.mu);
}

/* ---- informer callbacks (informer threads) -------------------------------------------------- */

void ctrl_tj_record_free(tj_record *t)
{
    if (!t)
        return;
    for (int r = 0; r < DRV_NROLES; r++)
        drv_free(t->tmpl[r]);
    drv_free(t);
}

/* A TrainingJob's uid, finished phase and pod templates, beside its compact record. A spec
 * that does not validate (but names its job) is kept, marked invalid with the reason, so that
 * the job can be failed with it rather than ignored. */
static int decode_trainingjob(json_t *obj, drv_ctrl *c, tj_record *t, drv_diag *d)
{
    int rc = drv_kube_decode_trainingjob(obj, c->names.tab, &t->tj, d);
    if (rc == DRV_EPARSE && t->tj.ns > 0 && t->tj.name > 0)
        snprintf(t->invalid, sizeof t->invalid, "%s", d->msg);
    else if (rc != 0)
        return rc;
    json_t *meta = json_object_get(obj, "metadata");
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    snprintf(t->uid, sizeof t->uid, "%s", uid ? uid : "");
    json_t *status = json_object_get(obj, "status");
    const char *ph = json_string_value(json_object_get(status, "phase"));
    t->succeeded = ph && !strcmp(ph, "Succeeded");
    t->finished = t->succeeded || (ph && !strcmp(ph, "Failed"));
    ctrl_lifecycle_read_status(status, t);
    if (t->invalid[0])
        return 0;
    json_t *specs = json_object_get(json_object_get(obj, "spec"), "replicaSpecs");
    for (int r = 0; r < DRV_NROLES; r++) {
        const char *key = drv_kube_tj_role_key(r, t->tj.allreduce);
        json_t *tm = json_object_get(json_object_get(specs, key), "template");
        if (!tm)
            continue;
        /* A pod created with spec.nodeName is bound without any scheduler's check: 4 workers of
         * 2 CPUs pinned to a 4-CPU node would all be bound there, and a gang half placed. The
         * node is Drover's to decide, so the field is dropped (and the job told why). */
        json_t *spec = json_object_get(tm, "spec");
        if (json_object_get(spec, "nodeName")) {
            json_object_del(spec, "nodeName");
            t->node_name = true;
        }
        t->tmpl[r] = drv_json_dump(tm, JSON_COMPACT);
        if (!t->tmpl[r])
            return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    return 0;
}

/* Decodes under names.mu: the decoders intern into the shared table. */
static void *decode(json_t *obj, void *arg, drv_diag *d)
{
    const informer_arg *a = arg;
    drv_ctrl *c = a->c;
    void *rec = NULL;
    int rc = DRV_ENOMEM;
    pthread_mutex_lock(&c->names.mu);
    if (a->kind == EV_NODE) {
        if ((rec = drv_malloc(sizeof(drv_knode))))
            rc = drv_kube_decode_node(obj, c->names.tab, rec, d);
    } else if (a->kind == EV_POD) {
        if ((rec = drv_malloc(sizeof(drv_kpod))))
            rc = drv_kube_decode_pod(obj, c->names.tab, rec, d);
    } else if (a->kind == EV_PODGROUP) {
        if ((rec = drv_malloc(sizeof(drv_kpodgroup))))
            rc = drv_kube_decode_podgroup(obj, c->names.tab, rec, d);
    } else if (a->kind == EV_PRIORITYCLASS) {
        if ((rec = drv_malloc(sizeof(drv_kpriorityclass))))
            rc = drv_kube_decode_priorityclass(obj, c->names.tab, rec, d);
    } else if (a->kind == EV_QUEUE) {
        if ((rec = drv_malloc(sizeof(drv_kqueue))))
            rc = drv_kube_decode_queue(obj, c->names.tab, rec, d);
    } else if ((rec = drv_calloc(1, sizeof(tj_record)))) {
        rc = decode_trainingjob(obj, c, rec, d);
    }
    if (!rec)
        drv_fail(d, DRV_ENOMEM, "out of memory");
    pthread_mutex_unlock(&c->names.mu);
    if (rc != 0) {
        if (a->kind == EV_TRAININGJOB)
            ctrl_tj_record_free(rec);
        else
            drv_free(rec);
        return NULL;
    }
    return rec;
}

/* Pods and nodes from a list page's document (objects_doc.c), under names.mu as decode. */
static void *decode_doc(const drv_jdoc *doc, int32_t obj, void *arg, drv_diag *d)
{
    const informer_arg *a = arg;
    drv_ctrl *c = a->c;
    bool node = a->kind == EV_NODE;
    void *rec = drv_malloc(node ? sizeof(drv_knode) : sizeof(drv_kpod));
    if (!rec) {
        drv_fail(d, DRV_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_lock(&c->names.mu);
    int rc = node ? drv_kube_decode_node_doc(doc, obj, c->names.tab, rec, d)
                  : drv_kube_decode_pod_doc(doc, obj, c->names.tab, rec, d);
    pthread_mutex_unlock(&c->names.mu);
    if (rc != 0) {
        drv_free(rec);
        return NULL;
    }
    return rec;
}

static void release(void *rec, void *arg)
{
    const informer_arg *a = arg;
    if (a->kind == EV_TRAININGJOB)
        ctrl_tj_record_free(rec);
    else
        drv_free(rec);
}

static tj_record *tj_record_copy(const tj_record *t)
{
    tj_record *x = drv_malloc(sizeof *x);
    if (!x)
        return NULL;
    *x = *t;
    for (int r = 0; r < DRV_NROLES; r++) {
        x->tmpl[r] = t->tmpl[r] ? drv_strdup(t->tmpl[r]) : NULL;
        if (t->tmpl[r] && !x->tmpl[r]) {
            for (int q = 0; q < r; q++)
                drv_free(x->tmpl[q]);
            drv_free(x);
            return NULL;
        }
    }
    return x;
}

/* A pod's event key (key interned) and, in *job_key, its gang's (0 when neither Drover's nor
 * another operator's with our schedulerName), under one hold of names.mu: the informer's
 * thread took it for the decode already, and every lock taken is one more chance to wait for
 * the scheduler thread. -1 when out of memory. */
static int32_t pod_keys(drv_ctrl *c, const char *key, const drv_kpod *p, int32_t *job_key)
{
    bool other = !p->job && p->scheduler == c->names.scheduler; /* (fixed at creation) */
    pthread_mutex_lock(&c->names.mu);
    int32_t k = drv_strtab_intern(c->names.tab, key);
    *job_key = 0;
    if (p->job || other) {
        char jk[540];
        snprintf(jk, sizeof jk, "%s%.255s/%.255s",
                 p->job     ? ""
                 : p->group ? "pg:"
                            : "pod:",
                 drv_strtab_str(c->names.tab, p->ns),
                 drv_strtab_str(c->names.tab, p->job     ? p->job
                                              : p->group ? p->group
                                                         : p->name));
        *job_key = drv_strtab_intern(c->names.tab, jk);
    }
    pthread_mutex_unlock(&c->names.mu);
    return k;
}

/* Copies what changed into an event: the informer's records stay in its cache. Inside a run
 * of watch events (a->holding) the scheduler thread is not woken: it is once at the run's end
 * (on_hold), so a run of the pods Drover created read at once (~8 in e2e_bind's binding phase)
 * costs it one wake-up, not one each. */
static void push(informer_arg *a, int type, const char *key, const void *old, const void *cur)
{
    drv_ctrl *c = a->c;
    int kind = a->kind;
    ctrl_event e = {
        .kind = (int8_t)kind, .type = (int8_t)type, .t = drv_clock_mono(), .has_old = old != NULL};
    if (kind == EV_POD)
        e.key = pod_keys(c, key, cur ? cur : old, &e.job_key);
    else
        e.key = ctrl_name_intern(c, key);
    if (kind == EV_NODE) {
        if (old)
            e.old.node = *(const drv_knode *)old;
        if (cur)
            e.cur.node = *(const drv_knode *)cur;
    } else if (kind == EV_POD) {
        if (old)
            e.old.pod = *(const drv_kpod *)old;
        if (cur)
            e.cur.pod = *(const drv_kpod *)cur;
    } else if (kind == EV_PODGROUP) {
        if (old)
            e.old.group = *(const drv_kpodgroup *)old;
        if (cur)
            e.cur.group = *(const drv_kpodgroup *)cur;
    } else if (kind == EV_PRIORITYCLASS) {
        if (old)
            e.old.pclass = *(const drv_kpriorityclass *)old;
        if (cur)
            e.cur.pclass = *(const drv_kpriorityclass *)cur;
    } else if (kind == EV_QUEUE) {
        if (old)
            e.old.queue = *(const drv_kqueue *)old;
        if (cur)
            e.cur.queue = *(const drv_kqueue *)cur;
    } else if (cur) {
        e.tj = tj_record_copy(cur);
        if (!e.tj) {
            drv_log(DRV_LOG_ERROR, "out of memory: TrainingJob %s dropped", key);
            return;
        }
    }
    char what[600];
    snprintf(what, sizeof what, "event for %s", key);
    if (e.key < 0 || e.job_key < 0) {
        ctrl_tj_record_free(e.tj);
        drv_log(DRV_LOG_ERROR, "out of memory: %s dropped", what);
        return;
    }
    if (a->holding) {
        ctrl_events_push_quiet(c, &e, what);
        a->held = true;
    } else {
        ctrl_events_push(c, &e, what);
    }
}

static void on_add(const char *key, void *rec, void *arg)
{
    push(arg, DRV_WATCH_ADDED, key, NULL, rec);
}

static void on_update(const char *key, void *old, void *rec, void *arg)
{
    push(arg, DRV_WATCH_MODIFIED, key, old, rec);
}

static void on_delete(const char *key, void *rec, void *arg)
{
    push(arg, DRV_WATCH_DELETED, key, rec, NULL);
}

/* A run of watch events begins, or ends: its changes are queued, and the scheduler thread
 * woken once after the last (the run is what one read brought: the delay is its decoding, at
 * most a few events'). */
static void on_hold(bool on, void *arg)
{
    informer_arg *a = arg;
    a->holding = on;
    if (!on && a->held) {
        a->held = false;
        ctrl_events_signal(a->c);
    }
}

/* An informer has listed: the scheduler thread looks at once whether all have (rather than
 * after its next 50 ms wait, which the last list's events may have just missed). */
static void on_listed(void *arg)
{
    const informer_arg *a = arg;
    ctrl_events_wake(a->c);
}

static void *informer_main(void *arg)
{
    static const char *const thread_name[NINFORMERS] = {"drv-inf-nodes",  "drv-inf-pods",
                                                        "drv-inf-tjobs",  "drv-inf-pgroups",
                                                        "drv-inf-pclass", "drv-inf-queues"};
    const informer_arg *a = arg;
    drv_diag d = {{0}};
    drv_kthread_name(thread_name[a->kind]);
    if (drv_informer_run(a->c->intake.informer[a->kind], &a->c->intake.stop, &d) != 0)
        drv_log(DRV_LOG_ERROR, "informer stopped: %s", d.msg);
    return NULL;
}

/* ---- start and stop ------------------------------------------------------------------------- */

/* Whether the API serves PodGroups (their CRD is installed): asked once at start. Without it
 * their informer would only log a failed list every few seconds; pods naming a PodGroup then
 * wait (docs/running.md). */
static bool podgroups_served(drv_ctrl *c)
{
    /* The group list (GET /apis, an APIGroupList) answers 200 whether or not the group is
     * served, as client-go's discovery reads it: asking the group itself would answer 404, a
     * failed request counted for nothing. */
    drv_diag d = {{0}};
    long status = 0;
    json_t *list = NULL;
    int rc = drv_kube_request(c->intake.client[EV_PODGROUP], "GET", "/apis", NULL, NULL, &status,
                              &list, &d);
    bool served = false;
    size_t i, k;
    json_t *g, *v;
    json_array_foreach(json_object_get(list, "groups"), i, g)
    {
        const char *name = json_string_value(json_object_get(g, "name"));
        if (!name || strcmp(name, "scheduling.x-k8s.io") != 0)
            continue;
        json_array_foreach(json_object_get(g, "versions"), k, v)
        {
            const char *ver = json_string_value(json_object_get(v, "version"));
            served |= ver && strcmp(ver, "v1alpha1") == 0;
        }
    }
    json_decref(list);
    if (!served)
        drv_log(DRV_LOG_INFO,
                "PodGroups (scheduling.x-k8s.io/v1alpha1) are not served (%s): pods of pod "
                "groups wait; install deploy/podgroup-crd.yaml and restart to serve them",
                rc ? d.msg : "not in the API's group list");
    return served;
}

/* Default and maximum of queue_recheck_s: as often as client-go's cached discovery is
 * refreshed by controllers that follow CRDs; one GET per period, through the shared budget. */
#define DEF_QUEUE_RECHECK_S 30.0
#define MAX_QUEUE_RECHECK_S 3600.0

/* Whether the API serves Queues (deploy/queue-crd.yaml is applied), from drover.dev/v1alpha1's
 * resource list (served with the TrainingJob CRD): asked at start and, when not served then,
 * again every queue_recheck_s (queue_recheck_main). Until then jobs naming a queue are held,
 * saying so; tell: log that they are not served (once, not at every re-check). */
static bool queues_served(drv_ctrl *c, bool tell)
{
    drv_diag d = {{0}};
    long status = 0;
    json_t *list = NULL;
    int rc = drv_kube_request(c->intake.client[EV_QUEUE], "GET", "/apis/drover.dev/v1alpha1", NULL,
                              NULL, &status, &list, &d);
    bool served = false;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(list, "resources"), i, r)
    {
        const char *name = json_string_value(json_object_get(r, "name"));
        served |= name && !strcmp(name, "queues");
    }
    json_decref(list);
    if (!served && tell)
        drv_log(DRV_LOG_INFO,
                "Queues (queues.drover.dev) are not served (%s): jobs naming a queue wait; "
                "apply deploy/queue-crd.yaml to serve them (asked again every %.0f s)",
                rc ? d.msg : "not in drover.dev/v1alpha1's resources", c->o.queue_recheck_s);
    return served;
}

/* Creates informer i for the API path of its resource. */
static int informer_create(drv_ctrl *c, int i, drv_diag *d)
{
    static const char *const paths[NINFORMERS][2] = {
        {"/api/v1", "nodes"},
        {"/api/v1", "pods"},
        {"/apis/drover.dev/v1alpha1", "trainingjobs"},
        {"/apis/scheduling.x-k8s.io/v1alpha1", "podgroups"},
        {"/apis/scheduling.k8s.io/v1", "priorityclasses"},
        {"/apis/drover.dev/v1alpha1", "queues"}};
    ctrl_intake *in = &c->intake;
    char path[400];
    if ((i == EV_TRAININGJOB || i == EV_PODGROUP) && c->ns[0])
        snprintf(path, sizeof path, "%s/namespaces/%s/%s", paths[i][0], c->ns, paths[i][1]);
    else
        snprintf(path, sizeof path, "%s/%s", paths[i][0], paths[i][1]);
    drv_informer_ops ops = {.decode = decode,
                            .release = release,
                            .on_add = on_add,
                            .on_update = on_update,
                            .on_delete = on_delete,
                            .on_listed = on_listed,
                            .hold = on_hold,
                            .decode_doc = i == EV_POD || i == EV_NODE ? decode_doc : NULL};
    /* (what the decoders never read is not built: about half of a real pod's or node's JSON) */
    drv_kube_skip_unread(in->client[i], i == EV_POD    ? drv_kube_unread_pod
                                        : i == EV_NODE ? drv_kube_unread_node
                                                       : NULL);
    return drv_informer_new(&in->informer[i], in->client[i], path, 0, c->o.watch_timeout_s, &ops,
                            &in->arg[i], d);
}

/* Sleeps s seconds in 20 ms slices, returning early when *stop is set. */
static void nap_s(double s, atomic_int *stop)
{
    for (double left = s; left > 0 && !*stop; left -= 0.02) {
        struct timespec ts = {0, (long)((left < 0.02 ? left : 0.02) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* The Queue thread when Queues were not served at start: asks discovery again every
 * queue_recheck_s, jittered by up to 10% (controllers started together do not ask together),
 * and once they are served runs their informer on this thread; its first list brings every
 * Queue as an event, and held jobs naming one are then admitted (ctrl_shared.c). Stops when
 * the intake stops. */
static void *queue_recheck_main(void *arg)
{
    const informer_arg *a = arg;
    drv_ctrl *c = a->c;
    drv_rng rng;
    drv_rng_seed(&rng, (uint64_t)(uintptr_t)c ^ (uint64_t)time(NULL));
    while (!c->intake.stop) {
        nap_s(c->o.queue_recheck_s * (0.9 + 0.2 * drv_rng_uniform(&rng)), &c->intake.stop);
        if (c->intake.stop || !queues_served(c, false))
            continue;
        drv_diag d = {{0}};
        if (informer_create(c, EV_QUEUE, &d) != 0) { /* (out of memory: asked again later) */
            drv_log(DRV_LOG_ERROR, "Queues are served, their informer not started: %s", d.msg);
            continue;
        }
        drv_log(DRV_LOG_INFO, "Queues (queues.drover.dev) are now served: following them");
        return informer_main(arg);
    }
    return NULL;
}

int ctrl_intake_start(drv_ctrl *c, drv_diag *d)
{
    ctrl_intake *in = &c->intake;
    in->stop = 0;
    in->queue_late = false;
    ctrl_events_batch_wakes(c, true); /* (until synced: ctrl_loop.c) */
    if (c->o.queue_recheck_s <= 0 || c->o.queue_recheck_s > MAX_QUEUE_RECHECK_S)
        c->o.queue_recheck_s = DEF_QUEUE_RECHECK_S;
    int rc = 0;
    for (int i = 0; i < NINFORMERS && rc == 0; i++) {
        in->arg[i] = (informer_arg){.c = c, .kind = i};
        if (i == EV_PODGROUP && !podgroups_served(c))
            continue;
        void *(*main_fn)(void *) = informer_main;
        if (i == EV_QUEUE && !(c->shared.queues_served = queues_served(c, true))) {
            in->queue_late = true;
            main_fn = queue_recheck_main;
        } else {
            rc = informer_create(c, i, d);
        }
        if (rc == 0 && pthread_create(&in->thread[i], NULL, main_fn, &in->arg[i]) != 0)
            rc = drv_fail(d, DRV_ENOMEM, "cannot start an informer thread");
        if (rc == 0)
            in->started[i] = true;
    }
    return rc;
}

bool ctrl_intake_synced(drv_ctrl *c)
{
    for (int i = 0; i < NINFORMERS; i++)
        if (!(i == EV_QUEUE && c->intake.queue_late) && c->intake.informer[i] &&
            !drv_informer_synced(c->intake.informer[i]))
            return false;
    return true;
}

void ctrl_intake_stop(drv_ctrl *c)
{
    c->intake.stop = 1;
    for (int i = 0; i < NINFORMERS; i++)
        if (c->intake.started[i]) {
            pthread_join(c->intake.thread[i], NULL);
            c->intake.started[i] = false;
        }
}
