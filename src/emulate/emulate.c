/*
 * emulate.c - a kubelet for fake nodes (emulator.h): registers the nodes, keeps them
 * Ready, and moves the pods bound to them through Pending -> Running -> Succeeded.
 *
 * Two threads. The informer thread lists and watches all pods; its handlers keep a table of
 * the pods that need the emulator next (keyed "namespace/name", with the pod's uid), each with
 * the real (monotonic) time its next step is due:
 *
 *     bound here, Pending        -> STARTING, due now + start_delay / speed
 *     Running (by us or before)  -> RUNNING,  due start + duration / speed (without one, the
 *                                   default duration if any, else never),
 *                                   then Succeeded, or Failed with drover.dev/exit-code (the
 *                                   first drover.dev/fail-times times a pod of its name ends)
 *     deletionTimestamp set      -> DELETING, due now
 *     Succeeded, Failed, deleted -> dropped
 *
 * The worker thread sleeps until the earliest due step or the next heartbeat, copies that step
 * out of the table, and performs it without the lock: a read-modify-write of the pod's status
 * subresource (drv_kube_update: fresh data, 409s retried), or a DELETE with grace 0 and the
 * uid as precondition. Every write re-checks the uid on the object it changes, so a pod
 * deleted and created again under the same name is never touched for its predecessor. When
 * the step is done it looks the pod up again and moves it on, unless a watch event changed it
 * meanwhile. A failed write is retried with back-off (1 s doubling to 30 s) while the pod is
 * tracked. Each wake-up scans the table: O(tracked pods), pods that are Pending or Running on
 * the emulated nodes only.
 *
 * Heartbeats are one merge-PATCH of each node's status every heartbeat_s (the conditions list
 * is the kubelet's to own, so replacing it whole is right); lastTransitionTime stays the
 * registration time. The node lifecycle controller needs nothing more to keep them Ready.
 */
#include "drover/emulator.h"
#include "drover/kube_informer.h"
#include "drover/kube_types.h"
#include "drover/clock.h"
#include "drover/hashmap.h"
#include "emulate.h"
#include "kube/json.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum tstate { T_STARTING, T_RUNNING, T_DELETING };

/* A pod the worker will act on. */
typedef struct tpod {
    char *key; /* "namespace/name"; owned, the table borrows it as its key */
    char ns[64], name[254], uid[64];
    enum tstate state;
    double due;     /* monotonic seconds of the next step; INFINITY: none (runs until deleted) */
    double run_s;   /* real seconds from Running to Succeeded; < 0: forever */
    int fails;      /* consecutive failed writes, for back-off */
    int exit_code;  /* drover.dev/exit-code: how it ends (0: Succeeded) */
    int fail_times; /* drover.dev/fail-times: how many times a pod of its name fails; -1 all */
    bool in_place;  /* spec.restartPolicy OnFailure: a failure restarts the container in place */
} tpod;

/* Pods of one name failed so far (drover.dev/fail-times counts across re-creations). */
typedef struct emu_ends {
    char *key; /* "namespace/name", owned; the table borrows it */
    int failed;
} emu_ends;

/* What the informer caches per pod. */
typedef struct podrec {
    char ns[64], name[254], uid[64];
    int32_t node; /* interned spec.nodeName */
    int8_t phase; /* enum drv_kpod_phase */
    bool deleting;
    double duration;   /* emulated seconds from the annotation; < 0 when absent or bad */
    int exit_code;     /* drover.dev/exit-code, 0 when absent or bad */
    int fail_times;    /* drover.dev/fail-times, -1 when absent or bad */
    bool in_place;     /* spec.restartPolicy is OnFailure */
    double started_at; /* status.startTime, epoch seconds; 0 when absent */
} podrec;

void drv_emulator_opts_default(drv_emulator_opts *o)
{
    memset(o, 0, sizeof *o);
    o->speed = DRV_EMU_DEF_SPEED;
    o->start_delay_s = DRV_EMU_DEF_START_DELAY;
    o->heartbeat_s = DRV_EMU_DEF_HEARTBEAT;
}

/* ---- the table ------------------------------------------------------------------------------ */

static tpod *find(drv_emulator *e, const char *key)
{
    return drv_hashmap_get(e->pods, key);
}

static void forget(drv_emulator *e, const char *key)
{
    tpod *t = find(e, key);
    if (!t)
        return;
    drv_hashmap_remove(e->pods, key);
    drv_free(t->key);
    drv_free(t);
    e->st.forgotten++;
}

/* Adds a pod (the caller checked it is absent); NULL when out of memory (logged). */
static tpod *track(drv_emulator *e, const char *key, const podrec *r)
{
    tpod *t = drv_calloc(1, sizeof *t);
    if (!t || !(t->key = drv_strdup(key)) || drv_hashmap_put(e->pods, t->key, t) != 0) {
        if (t)
            drv_free(t->key);
        drv_free(t);
        drv_log(DRV_LOG_ERROR, "emulate: out of memory: pod %s is not emulated", key);
        return NULL;
    }
    snprintf(t->ns, sizeof t->ns, "%s", r->ns);
    snprintf(t->name, sizeof t->name, "%s", r->name);
    snprintf(t->uid, sizeof t->uid, "%s", r->uid);
    double run = r->duration >= 0              ? r->duration
                 : e->o.default_duration_s > 0 ? e->o.default_duration_s
                                               : -1;
    t->run_s = run < 0 ? -1 : run / e->o.speed;
    t->exit_code = r->exit_code;
    t->fail_times = r->fail_times;
    t->in_place = r->in_place;
    return t;
}

static void set_running(tpod *t, double started_at)
{
    t->state = T_RUNNING;
    t->fails = 0;
    if (t->run_s < 0) {
        t->due = INFINITY;
        return;
    }
    double elapsed = started_at > 0 ? drv_clock_wall() - started_at : 0;
    t->due = drv_clock_mono() + fmax(0, t->run_s - fmax(0, elapsed));
}

/* ---- informer side -------------------------------------------------------------------------- */

/* An integer annotation in [lo, hi]; dflt when absent, or bad (logged). */
static int int_annotation(json_t *ann, const char *key, int lo, int hi, int dflt, const podrec *r)
{
    const char *v = json_string_value(json_object_get(ann, key));
    if (!v)
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    if (end != v && !*end && n >= lo && n <= hi)
        return (int)n;
    drv_log(DRV_LOG_WARN,
            "emulate: pod %s/%s: annotation %s: expected an integer in [%d, %d], "
            "found '%s' (ignored)",
            r->ns, r->name, key, lo, hi, v);
    return dflt;
}

static void *decode(json_t *obj, void *arg, drv_diag *d)
{
    drv_emulator *e = arg;
    drv_kpod kp;
    if (drv_kube_decode_pod(obj, e->names, &kp, d))
        return NULL;
    podrec *r = drv_calloc(1, sizeof *r);
    if (!r) {
        drv_fail(d, DRV_ENOMEM, "out of memory");
        return NULL;
    }
    json_t *meta = json_object_get(obj, "metadata");
    snprintf(r->ns, sizeof r->ns, "%s", drv_strtab_str(e->names, kp.ns));
    snprintf(r->name, sizeof r->name, "%s", drv_strtab_str(e->names, kp.name));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    snprintf(r->uid, sizeof r->uid, "%s", uid ? uid : "");
    r->node = kp.node;
    r->phase = kp.phase;
    r->deleting = kp.deleting;
    r->duration = -1;
    const char *dur = json_string_value(
        json_object_get(json_object_get(meta, "annotations"), DRV_EMU_DURATION_ANNOTATION));
    if (dur) {
        char *end;
        double v = strtod(dur, &end);
        if (end != dur && !*end && isfinite(v) && v >= 0)
            r->duration = v;
        else
            drv_log(DRV_LOG_WARN,
                    "emulate: pod %s/%s: annotation %s: expected seconds such as 90 or 2.5, "
                    "found '%s' (the pod runs until deleted)",
                    r->ns, r->name, DRV_EMU_DURATION_ANNOTATION, dur);
    }
    json_t *ann = json_object_get(meta, "annotations");
    r->exit_code = int_annotation(ann, DRV_EMU_EXIT_CODE_ANNOTATION, 0, 255, 0, r);
    r->fail_times = int_annotation(ann, DRV_EMU_FAIL_TIMES_ANNOTATION, 0, 1000000, -1, r);
    const char *policy =
        json_string_value(json_object_get(json_object_get(obj, "spec"), "restartPolicy"));
    r->in_place = policy && !strcmp(policy, "OnFailure");
    const char *start =
        json_string_value(json_object_get(json_object_get(obj, "status"), "startTime"));
    if (drv_time_parse_rfc3339(start, &r->started_at) != 0)
        r->started_at = 0; /* absent or not a time: treated as just started */
    return r;
}

static void release(void *rec, void *arg)
{
    (void)arg;
    drv_free(rec);
}

static bool mine(const drv_emulator *e, const podrec *r)
{
    return r->node > 0 && r->node < e->nnames && e->is_node[r->node];
}

static void on_pod(const char *key, void *old, void *rec, void *arg)
{
    (void)old;
    drv_emulator *e = arg;
    const podrec *r = rec;
    pthread_mutex_lock(&e->mu);
    tpod *t = find(e, key);
    if (t && strcmp(t->uid, r->uid)) { /* another pod under the same name */
        forget(e, key);
        t = NULL;
    }
    if (!mine(e, r)) {
        if (t)
            forget(e, key);
    } else if (r->deleting) {
        if (!t)
            t = track(e, key, r);
        if (t && t->state != T_DELETING) {
            t->state = T_DELETING;
            t->due = drv_clock_mono();
            t->fails = 0;
        }
    } else if (r->phase == DRV_KPOD_PENDING) {
        if (!t && (t = track(e, key, r)) != NULL) {
            t->state = T_STARTING;
            t->due = drv_clock_mono() + e->o.start_delay_s / e->o.speed;
        }
    } else if (r->phase == DRV_KPOD_RUNNING) {
        if (!t)
            t = track(e, key, r);
        if (t && t->state == T_STARTING) /* ours echoed, or started by someone else */
            set_running(t, r->started_at);
    } else if (t && t->state != T_DELETING) { /* Succeeded, Failed, Unknown */
        forget(e, key);
    }
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static void on_add(const char *key, void *rec, void *arg)
{
    on_pod(key, NULL, rec, arg);
}

static void on_delete(const char *key, void *rec, void *arg)
{
    drv_emulator *e = arg;
    const podrec *r = rec;
    pthread_mutex_lock(&e->mu);
    tpod *t = find(e, key);
    if (t && !strcmp(t->uid, r->uid))
        forget(e, key);
    pthread_mutex_unlock(&e->mu);
}

static void *informer_main(void *arg)
{
    drv_emulator *e = arg;
    drv_diag d = {{0}};
    int rc = drv_informer_run(e->inf, &e->stop, &d);
    if (rc)
        drv_log(DRV_LOG_ERROR, "emulate: pod informer stopped: %s", d.msg);
    return NULL;
}

/* ---- pods ----------------------------------------------------------------------------------- */

typedef struct pod_arg {
    const char *uid;
    double now;
    int phase_seen; /* the phase found on the fresh object */
    int exit_code;  /* mut_ended: 0 Succeeded, else Failed with it */
} pod_arg;

static int phase_of(json_t *obj)
{
    const char *p = json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
    static const char *const phases[] = {"Pending", "Running", "Succeeded", "Failed"};
    for (int i = 0; p && i < 4; i++)
        if (!strcmp(p, phases[i]))
            return i;
    return DRV_KPOD_UNKNOWN;
}

/* Sets condition type to status (True/False) with reason, keeping its transition time when
 * the status does not change. */
static void set_condition(json_t *conds, const char *type, const char *status, const char *reason,
                          const char *now)
{
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, type)) {
            const char *s = json_string_value(json_object_get(c, "status"));
            if (!s || strcmp(s, status)) {
                json_object_set_new(c, "status", json_string(status));
                json_object_set_new(c, "lastTransitionTime", json_string(now));
            }
            if (reason)
                json_object_set_new(c, "reason", json_string(reason));
            else
                json_object_del(c, "reason");
            return;
        }
    }
    json_t *n = json_pack("{s:s, s:s, s:n, s:s}", "type", type, "status", status, "lastProbeTime",
                          "lastTransitionTime", now);
    if (n && reason)
        json_object_set_new(n, "reason", json_string(reason));
    json_array_append_new(conds, n);
}

/* Checks the object is still the pod we track, in phase want (else DRV_EEXIST: nothing to
 * do); prepares status and its conditions, and now (RFC 3339, NOW_LEN bytes) from a->now. */
enum { NOW_LEN = 32 };
static int pod_prologue(json_t *obj, pod_arg *a, int want, json_t **status, json_t **conds,
                        char *now)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    if (!uid || strcmp(uid, a->uid))
        return DRV_ENOENT;
    a->phase_seen = phase_of(obj);
    if (json_object_get(meta, "deletionTimestamp"))
        return DRV_EINVAL;
    *status = json_object_get(obj, "status");
    if (!json_is_object(*status)) {
        *status = json_object();
        if (json_object_set_new(obj, "status", *status))
            return DRV_ENOMEM;
    }
    *conds = json_object_get(*status, "conditions");
    if (!json_is_array(*conds)) {
        *conds = json_array();
        if (json_object_set_new(*status, "conditions", *conds))
            return DRV_ENOMEM;
    }
    if (a->phase_seen != want)
        return DRV_EEXIST;
    drv_time_rfc3339(now, NOW_LEN, a->now, false);
    return 0;
}

static int mut_running(json_t *obj, void *arg)
{
    pod_arg *a = arg;
    json_t *status, *conds;
    char now[NOW_LEN];
    int rc = pod_prologue(obj, a, DRV_KPOD_PENDING, &status, &conds, now);
    if (rc)
        return rc;
    json_object_set_new(status, "phase", json_string("Running"));
    json_object_set_new(status, "startTime", json_string(now));
    set_condition(conds, "Initialized", "True", NULL, now);
    set_condition(conds, "Ready", "True", NULL, now);
    set_condition(conds, "ContainersReady", "True", NULL, now);
    set_condition(conds, "PodScheduled", "True", NULL, now);
    json_t *cs = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(obj, "spec"), "containers"), i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *image = json_string_value(json_object_get(c, "image"));
        json_array_append_new(cs, json_pack("{s:s, s:s, s:s, s:b, s:b, s:i, s:{s:{s:s}}}", "name",
                                            name ? name : "", "image", image ? image : "",
                                            "imageID", "", "ready", 1, "started", 1, "restartCount",
                                            0, "state", "running", "startedAt", now));
    }
    json_object_set_new(status, "containerStatuses", cs);
    return 0;
}

/* Running -> Succeeded (exit code 0), or Failed with a.exit_code. */
static int mut_ended(json_t *obj, void *arg)
{
    pod_arg *a = arg;
    json_t *status, *conds;
    char now[NOW_LEN];
    int rc = pod_prologue(obj, a, DRV_KPOD_RUNNING, &status, &conds, now);
    if (rc)
        return rc;
    bool ok = a->exit_code == 0;
    json_object_set_new(status, "phase", json_string(ok ? "Succeeded" : "Failed"));
    set_condition(conds, "Ready", "False", ok ? "PodCompleted" : "PodFailed", now);
    set_condition(conds, "ContainersReady", "False", ok ? "PodCompleted" : "PodFailed", now);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status, "containerStatuses"), i, c)
    {
        const char *started = json_string_value(
            json_object_get(json_object_get(json_object_get(c, "state"), "running"), "startedAt"));
        json_object_set_new(c, "ready", json_false());
        json_object_set_new(c, "started", json_false());
        json_object_set_new(c, "state",
                            json_pack("{s:{s:i, s:s, s:s, s:s}}", "terminated", "exitCode",
                                      i == 0 ? a->exit_code : 0, "reason",
                                      ok || i > 0 ? "Completed" : "Error", "startedAt",
                                      started ? started : now, "finishedAt", now));
    }
    return 0;
}

/* Running, its first container failed with a.exit_code and started again in place, as the
 * kubelet does under restartPolicy OnFailure: restartCount one more, the failure in lastState,
 * the phase still Running (the kubelet's back-off between restarts is not emulated). */
static int mut_restarted(json_t *obj, void *arg)
{
    pod_arg *a = arg;
    json_t *status, *conds;
    char now[NOW_LEN];
    int rc = pod_prologue(obj, a, DRV_KPOD_RUNNING, &status, &conds, now);
    if (rc)
        return rc;
    json_t *c = json_array_get(json_object_get(status, "containerStatuses"), 0);
    if (!c)
        return DRV_EEXIST; /* (not one the emulator started) */
    const char *started = json_string_value(
        json_object_get(json_object_get(json_object_get(c, "state"), "running"), "startedAt"));
    json_t *last =
        json_pack("{s:{s:i, s:s, s:s, s:s}}", "terminated", "exitCode", a->exit_code, "reason",
                  "Error", "startedAt", started ? started : now, "finishedAt", now);
    json_t *state = json_pack("{s:{s:s}}", "running", "startedAt", now);
    json_int_t n = json_integer_value(json_object_get(c, "restartCount"));
    if (!last || !state || json_object_set_new(c, "lastState", last) ||
        json_object_set_new(c, "state", state) ||
        json_object_set_new(c, "restartCount", json_integer(n + 1)))
        return DRV_ENOMEM;
    return 0;
}

/* A pod of that name was failed (under e->mu). */
static void count_failure(drv_emulator *e, const char *key)
{
    e->st.failed++;
    emu_ends *x = drv_hashmap_get(e->ends, key);
    if (!x) {
        x = drv_calloc(1, sizeof *x);
        if (!x || !(x->key = drv_strdup(key)) || drv_hashmap_put(e->ends, x->key, x) != 0) {
            if (x)
                drv_free(x->key);
            drv_free(x);
            drv_log(DRV_LOG_ERROR, "emulate: out of memory: failures of %s not counted", key);
            return;
        }
    }
    x->failed++;
}

/* One step, done without the lock; then its outcome applied under it. */
static void step(drv_emulator *e, const tpod *snap)
{
    char path[400];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s%s", snap->ns, snap->name,
             snap->state == T_DELETING ? "" : "/status");
    drv_diag d = {{0}};
    pod_arg a = {snap->uid, drv_clock_wall(), -1, 0};
    if (snap->state == T_RUNNING && snap->exit_code != 0) {
        pthread_mutex_lock(&e->mu);
        emu_ends *x = drv_hashmap_get(e->ends, snap->key);
        if (snap->fail_times < 0 || !x || x->failed < snap->fail_times)
            a.exit_code = snap->exit_code;
        pthread_mutex_unlock(&e->mu);
    }
    long st = 0;
    int rc;
    if (snap->state == T_DELETING) /* grace 0; a pod created again under the name is safe */
        rc = drv_kube_delete_uid(e->writer, path, 0, NULL, snap->uid, &st, &d);
    else
        rc = drv_kube_update(e->writer, path,
                             snap->state == T_STARTING            ? mut_running
                             : snap->in_place && a.exit_code != 0 ? mut_restarted
                                                                  : mut_ended,
                             &a, 0, NULL, &st, &d);
    bool restarted = rc == 0 && snap->state == T_RUNNING && snap->in_place && a.exit_code != 0;
    pthread_mutex_lock(&e->mu);
    tpod *t = find(e, snap->key);
    bool same = t && !strcmp(t->uid, snap->uid) && t->state == snap->state;
    /* Our Running write's echo may have come first and set the run's end from startTime, which
     * has whole seconds only (up to `speed` emulated seconds early): our own start time is exact.
     */
    bool echoed =
        t && !strcmp(t->uid, snap->uid) && snap->state == T_STARTING && t->state == T_RUNNING;
    if (rc == 0) {
        if (snap->state == T_STARTING)
            e->st.started++;
        else if (snap->state == T_RUNNING && a.exit_code != 0)
            count_failure(e, snap->key);
        else if (snap->state == T_RUNNING)
            e->st.succeeded++;
        else
            e->st.deleted++;
        if ((same || echoed) && snap->state == T_STARTING)
            set_running(t, a.now);
        else if (same && restarted)
            set_running(t, 0); /* its run starts over */
        else if (same)
            forget(e, snap->key);
    } else if (snap->state == T_DELETING && (st == 404 || st == 409)) {
        /* gone already, or the name now belongs to another pod */
        if (same)
            forget(e, snap->key);
    } else if (rc == DRV_ENOENT || (rc == DRV_EIO && st == 404)) {
        if (same) /* replaced or gone: the informer tells the rest */
            forget(e, snap->key);
    } else if (rc == DRV_EINVAL) { /* being deleted: confirm it */
        if (same) {
            t->state = T_DELETING;
            t->due = drv_clock_mono();
        }
    } else if (rc == DRV_EEXIST) { /* moved on without us */
        if (same && a.phase_seen == DRV_KPOD_RUNNING)
            set_running(t, 0);
        else if (same)
            forget(e, snap->key);
    } else {
        e->st.errors++;
        drv_log(DRV_LOG_WARN, "emulate: %s: %s (retrying)", snap->key, d.msg);
        if (same) {
            t->fails++;
            t->due =
                drv_clock_mono() + drv_kube_backoff_ms(t->fails - 1, 1000, 30000, &e->rng) / 1000.0;
        }
    }
    pthread_mutex_unlock(&e->mu);
}

static void heartbeat(drv_emulator *e)
{
    for (int32_t i = 0; i < e->n && !atomic_load(&e->stop); i++) {
        drv_diag d = {{0}};
        int rc = emu_patch_node_status(e, e->writer, &e->nodes[i], &d);
        pthread_mutex_lock(&e->mu);
        if (rc) {
            e->st.errors++;
            drv_log(DRV_LOG_WARN, "emulate: heartbeat of node %s: %s", e->nodes[i].name, d.msg);
        } else {
            e->st.heartbeats++;
        }
        pthread_mutex_unlock(&e->mu);
    }
}

static void wait_until(drv_emulator *e, double when)
{
    double now = drv_clock_mono();
    if (when <= now)
        return;
    double until = fmin(when, now + 3600);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + (until - now);
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&e->cv, &e->mu, &ts);
}

static void *worker_main(void *arg)
{
    drv_emulator *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!atomic_load(&e->stop)) {
        double now = drv_clock_mono();
        if (now >= e->next_heartbeat) {
            pthread_mutex_unlock(&e->mu);
            heartbeat(e);
            pthread_mutex_lock(&e->mu);
            e->next_heartbeat = drv_clock_mono() + e->o.heartbeat_s;
            continue;
        }
        tpod *next = NULL;
        drv_hashmap_iter it;
        drv_hashmap_iter_init(&it, e->pods);
        for (void *v; drv_hashmap_next(&it, NULL, &v);)
            if (!next || ((tpod *)v)->due < next->due)
                next = v;
        if (next && next->due <= now) {
            tpod snap = *next;
            char key[320];
            snprintf(key, sizeof key, "%s", next->key);
            snap.key = key;
            pthread_mutex_unlock(&e->mu);
            step(e, &snap);
            pthread_mutex_lock(&e->mu);
            continue;
        }
        wait_until(e, next ? fmin(next->due, e->next_heartbeat) : e->next_heartbeat);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

static int copy_str(char **dst, const char *src)
{
    if (!src)
        return 0;
    return (*dst = drv_strdup(src)) ? 0 : DRV_ENOMEM;
}

int drv_emulator_new(drv_emulator **out, const drv_kube_config *cfg, const drv_emu_node *nodes,
                     int32_t n, const drv_emulator_opts *o, drv_diag *d)
{
    drv_emulator_opts def;
    drv_emulator_opts_default(&def);
    if (!o)
        o = &def;
    if (!(o->speed > 0 && o->speed <= DRV_EMU_MAX_SPEED))
        return drv_fail(d, DRV_EINVAL, "emulate: speed: expected a number in (0, %g], found %g",
                        DRV_EMU_MAX_SPEED, o->speed);
    if (!(o->start_delay_s >= 0 && isfinite(o->start_delay_s)))
        return drv_fail(d, DRV_EINVAL, "emulate: start delay: expected seconds >= 0, found %g",
                        o->start_delay_s);
    if (!(o->heartbeat_s > 0 && o->heartbeat_s <= 3600))
        return drv_fail(d, DRV_EINVAL,
                        "emulate: heartbeat: expected seconds in (0, 3600], found %g",
                        o->heartbeat_s);
    if (!isfinite(o->default_duration_s))
        return drv_fail(d, DRV_EINVAL, "emulate: default duration: expected seconds, found %g",
                        o->default_duration_s);
    if (n < 1 || !nodes)
        return drv_fail(d, DRV_EINVAL, "emulate: no nodes to emulate");
    if (!cfg || !cfg->server)
        return drv_fail(d, DRV_EINVAL, "emulate: no API server");
    drv_emulator *e = drv_calloc(1, sizeof *e);
    if (!e)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    pthread_mutex_init(&e->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cv, &ca);
    drv_rng_seed(&e->rng, (uint64_t)getpid());
    pthread_condattr_destroy(&ca);
    e->o = *o;
    e->cfg = *cfg;
    e->cfg.server = e->cfg.token = e->cfg.ca_file = e->cfg.ca_data = NULL;
    e->cfg.cert_file = e->cfg.cert_data = e->cfg.key_file = e->cfg.key_data = NULL;
    e->cfg.namespace_ = NULL;
    int rc = copy_str(&e->cfg.server, cfg->server) | copy_str(&e->cfg.token, cfg->token) |
             copy_str(&e->cfg.ca_file, cfg->ca_file) | copy_str(&e->cfg.ca_data, cfg->ca_data) |
             copy_str(&e->cfg.cert_file, cfg->cert_file) |
             copy_str(&e->cfg.cert_data, cfg->cert_data) |
             copy_str(&e->cfg.key_file, cfg->key_file) | copy_str(&e->cfg.key_data, cfg->key_data);
    e->nodes = drv_malloc((size_t)n * sizeof *e->nodes);
    e->names = drv_strtab_new();
    e->pods = drv_hashmap_new(&drv_hashmap_borrowed_strings);
    e->ends = drv_hashmap_new(&drv_hashmap_borrowed_strings);
    if (rc || !e->nodes || !e->names || !e->pods || !e->ends) {
        drv_emulator_free(e);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    memcpy(e->nodes, nodes, (size_t)n * sizeof *nodes);
    e->n = n;
    for (int32_t i = 0; i < n; i++) {
        if (!e->nodes[i].name[0]) {
            drv_emulator_free(e);
            return drv_fail(d, DRV_EINVAL, "emulate: node %d has no name", i);
        }
        int32_t before = drv_strtab_count(e->names);
        if (drv_strtab_intern(e->names, e->nodes[i].name) < 0) {
            drv_emulator_free(e);
            return drv_fail(d, DRV_ENOMEM, "out of memory");
        }
        if (drv_strtab_count(e->names) == before) {
            drv_emulator_free(e);
            return drv_fail(d, DRV_EINVAL, "emulate: node %s given twice", nodes[i].name);
        }
    }
    e->nnames = drv_strtab_count(e->names);
    e->is_node = drv_calloc((size_t)e->nnames, sizeof *e->is_node);
    if (!e->is_node) {
        drv_emulator_free(e);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    for (int32_t i = 0; i < n; i++)
        e->is_node[drv_strtab_find(e->names, e->nodes[i].name)] = true;
    *out = e;
    return 0;
}

int drv_emulator_start(drv_emulator *e, drv_diag *d)
{
    if (e->started)
        return drv_fail(d, DRV_EEXIST, "emulate: started already");
    /* The worker's client: its writes are retried by the emulator itself, so one retry and a
     * 10 s timeout keep a stop prompt when the server is gone. */
    drv_kube_config wc = e->cfg;
    int rc = drv_kube_new(&e->writer, &e->cfg, d);
    if (rc)
        return rc;
    rc = drv_kube_new(&e->reader, &e->cfg, d);
    if (rc)
        return rc;
    drv_time_rfc3339(e->registered_at, sizeof e->registered_at, drv_clock_wall(), false);
    for (int32_t i = 0; i < e->n; i++) {
        if ((rc = emu_register_node(e, &e->nodes[i], d)) != 0)
            return rc;
        e->st.nodes_registered++;
    }
    drv_kube_free(e->writer);
    e->writer = NULL;
    wc.retries = e->cfg.retries < 0 ? -1 : 1;
    wc.timeout_s = e->cfg.timeout_s > 0 && e->cfg.timeout_s < 10 ? e->cfg.timeout_s : 10;
    if ((rc = drv_kube_new(&e->writer, &wc, d)) != 0)
        return rc;
    drv_informer_ops ops = {.decode = decode,
                            .release = release,
                            .on_add = on_add,
                            .on_update = on_pod,
                            .on_delete = on_delete};
    rc = drv_informer_new(&e->inf, e->reader, "/api/v1/pods", 0, e->o.watch_timeout_s, &ops, e, d);
    if (rc)
        return rc;
    atomic_store(&e->stop, 0);
    e->next_heartbeat = drv_clock_mono() + e->o.heartbeat_s;
    if (pthread_create(&e->tinf, NULL, informer_main, e))
        return drv_fail(d, DRV_ENOMEM, "emulate: cannot start a thread");
    if (pthread_create(&e->twork, NULL, worker_main, e)) {
        atomic_store(&e->stop, 1);
        pthread_join(e->tinf, NULL);
        return drv_fail(d, DRV_ENOMEM, "emulate: cannot start a thread");
    }
    e->started = true;
    drv_log(DRV_LOG_INFO, "emulate: %d nodes registered on %s; watching pods", e->n, e->cfg.server);
    return 0;
}

void drv_emulator_stop(drv_emulator *e)
{
    if (!e || !e->started)
        return;
    pthread_mutex_lock(&e->mu);
    atomic_store(&e->stop, 1);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->twork, NULL);
    pthread_join(e->tinf, NULL);
    e->started = false;
}

void drv_emulator_free(drv_emulator *e)
{
    if (!e)
        return;
    drv_emulator_stop(e);
    drv_informer_free(e->inf);
    drv_kube_free(e->reader);
    drv_kube_free(e->writer);
    drv_hashmap_iter it;
    drv_hashmap_iter_init(&it, e->pods);
    for (void *v; e->pods && drv_hashmap_next(&it, NULL, &v);) {
        drv_free(((tpod *)v)->key);
        drv_free(v);
    }
    drv_hashmap_free(e->pods);
    drv_hashmap_iter_init(&it, e->ends);
    for (void *v; e->ends && drv_hashmap_next(&it, NULL, &v);) {
        drv_free(((emu_ends *)v)->key);
        drv_free(v);
    }
    drv_hashmap_free(e->ends);
    drv_free(e->is_node);
    drv_strtab_free(e->names);
    drv_free(e->nodes);
    drv_kube_config_fini(&e->cfg);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    drv_free(e);
}

drv_emulator_stats drv_emulator_get_stats(drv_emulator *e)
{
    pthread_mutex_lock(&e->mu);
    drv_emulator_stats s = e->st;
    s.tracked = (long)drv_hashmap_len(e->pods);
    pthread_mutex_unlock(&e->mu);
    return s;
}
