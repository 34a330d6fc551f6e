/*
 * ctrl_intake.c - `drover run`'s intake: six informers (nodes, pods, TrainingJobs,
 * PriorityClasses and, when the API serves them, PodGroups and Queues; Queues also once their
 * CRD is applied later, found by asking discovery again), each on its own thread with
 * its own API client, decode what changed and push it as an event; the scheduler thread takes the
 * queued events as one batch (ctrl_intake.h, ctrl_events.h).
 *
 * Owns: the informers and their threads. Touches: the names (the decoders intern into them,
 * under their lock) and the event queue. The decoded records are copied into events, and the
 * informers' caches stay theirs.
 *
 * Example: a pod "ns/tj1-worker-0" labelled drover.dev/job=tj1 arrives as an EV_POD event with
 * key = intern("ns/tj1-worker-0") and job_key = intern("ns/tj1"), which the mirror looks up in
 * its job_of table to find the state's job. A pod of another operator with our schedulerName
 * gets job_key = intern("pg:ns/<its pod-group label>"), or intern("pod:ns/<its name>") when it
 * has none (a gang of one): neither can collide with a TrainingJob's "ns/name"; one with a
 * pod-group label also gets lone_key = intern("pod:ns/<its name>"), the gang of one it joins
 * when it comes after its gang was admitted. Every key a pod's event is applied by is interned
 * here, so the scheduler thread never goes back to the names to build one.
 */
#include "ctrl_intake.h"
#include "peers.h"

#include "drover/clock.h"
#include "kube/json.h"
#include "kube/kthread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- informer callbacks (informer threads) -------------------------------------------------- */

static double time_at(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    double t;
    return s && drv_time_parse_rfc3339(s, &t) == 0 ? t : -1;
}

/* What a TrainingJob's status says already (a restarted controller carries it on): its times,
 * restarts and conditions. */
static void read_status(json_t *status, tj_record *t)
{
    t->start_time = time_at(status, "startTime");
    t->completion_time = time_at(status, "completionTime");
    json_t *n = json_object_get(status, "restarts");
    t->restarts = json_is_integer(n) ? (int32_t)json_integer_value(n) : 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        for (int k = 0; type && k < DRV_NCONDS; k++) {
            if (strcmp(type, drv_job_cond_name(k)) != 0)
                continue;
            drv_condition *x = &t->conds[k];
            const char *st = json_string_value(json_object_get(c, "status"));
            const char *reason = json_string_value(json_object_get(c, "reason"));
            const char *msg = json_string_value(json_object_get(c, "message"));
            x->set = true;
            x->status = st && !strcmp(st, "True");
            snprintf(x->reason, sizeof x->reason, "%s", reason ? reason : "");
            snprintf(x->message, sizeof x->message, "%s", msg ? msg : "");
            x->last_transition = time_at(c, "lastTransitionTime");
        }
    }
}

/* A DNS label's length limit (RFC 1123): a Service's name, a pod's hostname. */
enum { DNS_LABEL_MAX = 63 };

/* Whether the names Drover derives from TrainingJob t (named name) are names Kubernetes
 * accepts: its headless Service is called as the job, so the name must be a DNS-1035 label
 * (Kubeflow's training operators ask the same), and each pod is "<job>-<role>-<rank>", its
 * hostname, so the longest must fit a DNS-1123 label. When not, t is marked invalid naming
 * metadata.name, and its job fails rather than every creation being refused. */
static void check_derived_names(tj_record *t, const char *ns, const char *name)
{
    size_t len = strlen(name);
    bool label = len > 0 && len <= DNS_LABEL_MAX && name[0] >= 'a' && name[0] <= 'z' &&
                 name[len - 1] != '-' &&
                 strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") == len;
    if (!label) {
        snprintf(t->invalid, sizeof t->invalid,
                 "trainingjob %s/%s: metadata.name: expected a DNS-1035 label (at most %d "
                 "lower-case letters, digits or '-', starting with a letter, not ending with "
                 "'-'): it names the job's Service",
                 ns, name, DNS_LABEL_MAX);
        return;
    }
    for (int r = 0; r < DRV_NROLES; r++) {
        const drv_rolespec *rs = &t->tj.role[r];
        int32_t most = rs->max > rs->replicas ? rs->max : rs->replicas;
        if (most <= 0)
            continue;
        const char *role = drv_peers_role_name(r, t->tj.allreduce);
        int w = snprintf(NULL, 0, "%s-%s-%d", name, role, most - 1);
        if (w > DNS_LABEL_MAX) {
            snprintf(t->invalid, sizeof t->invalid,
                     "trainingjob %s/%s: metadata.name: its pod %s-%s-%d would be named with %d "
                     "characters, more than a DNS-1123 label's %d: shorten the name by %d",
                     ns, name, name, role, most - 1, w, DNS_LABEL_MAX, w - DNS_LABEL_MAX);
            return;
        }
    }
}

/* A TrainingJob's uid, finished phase and pod templates, beside its compact record. A spec
 * that does not validate (but names its job) is kept, marked invalid with the reason, so that
 * the job can be failed with it rather than ignored. */
static int decode_trainingjob(json_t *obj, drv_strtab *names, tj_record *t, drv_diag *d)
{
    int rc = drv_kube_decode_trainingjob(obj, names, &t->tj, d);
    if (rc == DRV_EPARSE && t->tj.ns > 0 && t->tj.name > 0)
        snprintf(t->invalid, sizeof t->invalid, "%s", d->msg);
    else if (rc != 0)
        return rc;
    json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    snprintf(t->ns, sizeof t->ns, "%s", ns ? ns : "");
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
    if (rc == 0 && ns && name)
        check_derived_names(t, ns, name);
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    snprintf(t->uid, sizeof t->uid, "%s", uid ? uid : "");
    if (drv_kube_intern(names, uid, &t->uid_id) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    json_t *status = json_object_get(obj, "status");
    const char *ph = json_string_value(json_object_get(status, "phase"));
    t->succeeded = ph && !strcmp(ph, "Succeeded");
    t->finished = t->succeeded || (ph && !strcmp(ph, "Failed"));
    read_status(status, t);
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
    ctrl_names *names = a->in->names;
    drv_strtab *tab = names->tab;
    void *rec = NULL;
    int rc = DRV_ENOMEM;
    ctrl_names_lock(names);
    if (a->kind == EV_NODE) {
        if ((rec = drv_malloc(sizeof(drv_knode))))
            rc = drv_kube_decode_node(obj, tab, rec, d);
    } else if (a->kind == EV_POD) {
        if ((rec = drv_malloc(sizeof(drv_kpod))))
            rc = drv_kube_decode_pod(obj, tab, rec, d);
    } else if (a->kind == EV_PODGROUP) {
        if ((rec = drv_malloc(sizeof(drv_kpodgroup))))
            rc = drv_kube_decode_podgroup(obj, tab, rec, d);
    } else if (a->kind == EV_PRIORITYCLASS) {
        if ((rec = drv_malloc(sizeof(drv_kpriorityclass))))
            rc = drv_kube_decode_priorityclass(obj, tab, rec, d);
    } else if (a->kind == EV_QUEUE) {
        if ((rec = drv_malloc(sizeof(drv_kqueue))))
            rc = drv_kube_decode_queue(obj, tab, rec, d);
    } else if ((rec = drv_calloc(1, sizeof(tj_record)))) {
        rc = decode_trainingjob(obj, tab, rec, d);
    }
    if (!rec)
        drv_fail(d, DRV_ENOMEM, "out of memory");
    ctrl_names_unlock(names);
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
    ctrl_names *names = a->in->names;
    bool node = a->kind == EV_NODE;
    void *rec = drv_malloc(node ? sizeof(drv_knode) : sizeof(drv_kpod));
    if (!rec) {
        drv_fail(d, DRV_ENOMEM, "out of memory");
        return NULL;
    }
    ctrl_names_lock(names);
    int rc = node ? drv_kube_decode_node_doc(doc, obj, names->tab, rec, d)
                  : drv_kube_decode_pod_doc(doc, obj, names->tab, rec, d);
    ctrl_names_unlock(names);
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
static int32_t pod_keys(ctrl_names *names, const char *key, const drv_kpod *p, int32_t *job_key,
                        int32_t *lone_key)
{
    bool other = !p->job && p->scheduler == names->scheduler; /* (fixed at creation) */
    ctrl_names_lock(names);
    drv_strtab *tab = names->tab;
    int32_t k = drv_strtab_intern(tab, key);
    *job_key = *lone_key = 0;
    char jk[540];
    if (p->job || other) {
        snprintf(jk, sizeof jk, "%s%.255s/%.255s",
                 p->job     ? ""
                 : p->group ? "pg:"
                            : "pod:",
                 drv_strtab_str(tab, p->ns),
                 drv_strtab_str(tab, p->job     ? p->job
                                     : p->group ? p->group
                                                : p->name));
        *job_key = drv_strtab_intern(tab, jk);
    }
    if (other && p->group) {
        snprintf(jk, sizeof jk, "pod:%.255s/%.255s", drv_strtab_str(tab, p->ns),
                 drv_strtab_str(tab, p->name));
        *lone_key = drv_strtab_intern(tab, jk);
    }
    ctrl_names_unlock(names);
    return k;
}

/* Copies what changed into an event: the informer's records stay in its cache. Inside a run
 * of watch events (a->holding) the scheduler thread is not woken: it is once at the run's end
 * (on_hold), so a run of the pods Drover created read at once (~8 in e2e_bind's binding phase)
 * costs it one wake-up, not one each. */
static void push(informer_arg *a, int type, const char *key, const void *old, const void *cur)
{
    ctrl_intake *in = a->in;
    int kind = a->kind;
    ctrl_event e = {
        .kind = (int8_t)kind, .type = (int8_t)type, .t = drv_clock_mono(), .has_old = old != NULL};
    if (kind == EV_POD)
        e.key = pod_keys(in->names, key, cur ? cur : old, &e.job_key, &e.lone_key);
    else
        e.key = ctrl_name_intern(in->names, key);
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
    if (e.key < 0 || e.job_key < 0 || e.lone_key < 0) {
        ctrl_tj_record_free(e.tj);
        drv_log(DRV_LOG_ERROR, "out of memory: %s dropped", what);
        return;
    }
    if (a->holding) {
        ctrl_events_push_quiet(in->events, &e, what);
        a->held = true;
    } else {
        ctrl_events_push(in->events, &e, what);
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
        ctrl_events_signal(a->in->events);
    }
}

/* An informer has listed: the scheduler thread looks at once whether all have (rather than
 * after its next 50 ms wait, which the last list's events may have just missed). */
static void on_listed(void *arg)
{
    const informer_arg *a = arg;
    ctrl_events_wake(a->in->events);
}

static void *informer_main(void *arg)
{
    static const char *const thread_name[NINFORMERS] = {"drv-inf-nodes",  "drv-inf-pods",
                                                        "drv-inf-tjobs",  "drv-inf-pgroups",
                                                        "drv-inf-pclass", "drv-inf-queues"};
    const informer_arg *a = arg;
    drv_diag d = {{0}};
    drv_kthread_name(thread_name[a->kind]);
    if (drv_informer_run(a->in->informer[a->kind], &a->in->stop, &d) != 0)
        drv_log(DRV_LOG_ERROR, "informer stopped: %s", d.msg);
    return NULL;
}

/* ---- start and stop ------------------------------------------------------------------------- */

/* Whether the API serves PodGroups (their CRD is installed): asked once at start. Without it
 * their informer would only log a failed list every few seconds; pods naming a PodGroup then
 * wait (docs/running.md). */
static bool podgroups_served(ctrl_intake *in)
{
    /* The group list (GET /apis, an APIGroupList) answers 200 whether or not the group is
     * served, as client-go's discovery reads it: asking the group itself would answer 404, a
     * failed request counted for nothing. */
    drv_diag d = {{0}};
    long status = 0;
    json_t *list = NULL;
    int rc =
        drv_kube_request(in->client[EV_PODGROUP], "GET", "/apis", NULL, NULL, &status, &list, &d);
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
static bool queues_served(ctrl_intake *in, bool tell)
{
    drv_diag d = {{0}};
    long status = 0;
    json_t *list = NULL;
    int rc = drv_kube_request(in->client[EV_QUEUE], "GET", "/apis/drover.dev/v1alpha1", NULL, NULL,
                              &status, &list, &d);
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
                rc ? d.msg : "not in drover.dev/v1alpha1's resources", in->cfg->o.queue_recheck_s);
    return served;
}

/* Creates informer i for the API path of its resource. */
static int informer_create(ctrl_intake *in, int i, drv_diag *d)
{
    static const char *const paths[NINFORMERS][2] = {
        {"/api/v1", "nodes"},
        {"/api/v1", "pods"},
        {"/apis/drover.dev/v1alpha1", "trainingjobs"},
        {"/apis/scheduling.x-k8s.io/v1alpha1", "podgroups"},
        {"/apis/scheduling.k8s.io/v1", "priorityclasses"},
        {"/apis/drover.dev/v1alpha1", "queues"}};
    char path[400];
    if ((i == EV_TRAININGJOB || i == EV_PODGROUP) && in->cfg->ns[0])
        snprintf(path, sizeof path, "%s/namespaces/%s/%s", paths[i][0], in->cfg->ns, paths[i][1]);
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
    return drv_informer_new(&in->informer[i], in->client[i], path, 0, in->cfg->o.watch_timeout_s,
                            &ops, &in->arg[i], d);
}

/* Sleeps s seconds in 20 ms slices, returning early when *stop is set. */
static void nap_s(double s, atomic_int *stop)
{
    for (double left = s; left > 0 && !atomic_load(stop); left -= 0.02) {
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
    ctrl_intake *in = a->in;
    drv_rng rng;
    drv_rng_seed(&rng, (uint64_t)(uintptr_t)in ^ (uint64_t)time(NULL));
    while (!atomic_load(&in->stop)) {
        nap_s(in->cfg->o.queue_recheck_s * (0.9 + 0.2 * drv_rng_uniform(&rng)), &in->stop);
        if (atomic_load(&in->stop) || !queues_served(in, false))
            continue;
        drv_diag d = {{0}};
        if (informer_create(in, EV_QUEUE, &d) != 0) { /* (out of memory: asked again later) */
            drv_log(DRV_LOG_ERROR, "Queues are served, their informer not started: %s", d.msg);
            continue;
        }
        drv_log(DRV_LOG_INFO, "Queues (queues.drover.dev) are now served: following them");
        return informer_main(arg);
    }
    return NULL;
}

double ctrl_intake_recheck_s(double given)
{
    return given <= 0 || given > MAX_QUEUE_RECHECK_S ? DEF_QUEUE_RECHECK_S : given;
}

int ctrl_intake_init(ctrl_intake *in, const drv_kube_config *kcfg, ctrl_names *names,
                     ctrl_events *events, const ctrl_config *cfg, drv_diag *d)
{
    in->names = names;
    in->events = events;
    in->cfg = cfg;
    for (int i = 0; i < NINFORMERS; i++) {
        int rc = drv_kube_new(&in->client[i], kcfg, d);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int ctrl_intake_start(ctrl_intake *in, drv_diag *d)
{
    atomic_store(&in->stop, 0);
    in->queue_late = false;
    ctrl_events_batch_wakes(in->events, true); /* (until synced: ctrl_loop.c) */
    int rc = 0;
    for (int i = 0; i < NINFORMERS && rc == 0; i++) {
        in->arg[i] = (informer_arg){.in = in, .kind = i};
        if (i == EV_PODGROUP && !podgroups_served(in))
            continue;
        void *(*main_fn)(void *) = informer_main;
        if (i == EV_QUEUE && !(in->queues_served = queues_served(in, true))) {
            in->queue_late = true;
            main_fn = queue_recheck_main;
        } else {
            rc = informer_create(in, i, d);
        }
        int err = rc == 0 ? pthread_create(&in->thread[i], NULL, main_fn, &in->arg[i]) : 0;
        if (err != 0)
            rc = drv_fail(d, DRV_EIO, "cannot start an informer thread: %s", strerror(err));
        if (rc == 0)
            in->started[i] = true;
    }
    return rc;
}

bool ctrl_intake_synced(ctrl_intake *in)
{
    for (int i = 0; i < NINFORMERS; i++)
        if (!(i == EV_QUEUE && in->queue_late) && in->informer[i] &&
            !drv_informer_synced(in->informer[i]))
            return false;
    return true;
}

void ctrl_intake_tell_stop(ctrl_intake *in)
{
    atomic_store(&in->stop, 1);
}

void ctrl_intake_stop(ctrl_intake *in)
{
    ctrl_intake_tell_stop(in);
    for (int i = 0; i < NINFORMERS; i++)
        if (in->started[i]) {
            pthread_join(in->thread[i], NULL);
            in->started[i] = false;
        }
}

void ctrl_intake_fini(ctrl_intake *in)
{
    for (int i = 0; i < NINFORMERS; i++) {
        drv_informer_free(in->informer[i]);
        drv_kube_free(in->client[i]);
    }
}
