/*
 * controller.c - `drover run`: informers feed a drv_state, the scheduling core decides, the
 * binder writes the decisions back (kube_controller.h; user's guide: docs/running.md).
 *
 * Threads. Three informers (nodes, pods, TrainingJobs) run on their own threads with their own
 * API clients. Their handlers copy what changed into an event queue and wake the scheduler
 * thread, which alone owns the drv_state and the controller's per-job and per-pod records: no
 * lock is held while the state is read or the cycle runs. Names decoded on the informer
 * threads are interned in one table (kn) under its own mutex.
 *
 * The scheduler thread's loop:
 *   1. wait for events, or for the time the plugins asked to be woken (drv_sched_wake), or for
 *      the profile's period when some plugin wants every cycle;
 *   2. apply the events: nodes (allocatable minus foreign pods' requests), TrainingJobs (a
 *      drv_job each), pods (which slot exists, where it is bound, which phase it is in);
 *   3. run one cycle, apply its decisions to the state as assumed, and send them: deletions
 *      from this thread, then bindings and pod creations through the binder threads, whose
 *      answers come back as events;
 *   4. reconcile: create the pods of jobs that wait, delete surplus and finished pods, and hand
 *      status and Events to the writer thread (its own client and work queue), so that no
 *      status write delays the next decision.
 * A request that fails is logged and its assumption undone; the next cycle sees the truth.
 */
#include "drover/kube_controller.h"

#include "drover/kube_informer.h"
#include "drover/kube_workqueue.h"
#include "drover/kube_types.h"

#include "kbuf.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *const tj_role_key[DRV_NROLES] = {"PS", "Chief", "Worker", "Evaluator"};

/* ---- what the informers hand over ---------------------------------------------------------- */

/* A TrainingJob as cached: the compact record, plus what creating its pods needs. */
typedef struct tjrec {
    drv_ktrainingjob tj;
    char uid[64];
    char *tmpl[DRV_NROLES]; /* each role's pod template, as compact JSON (NULL when absent) */
    bool finished;          /* status.phase is Succeeded or Failed */
} tjrec;

enum { K_NODE, K_POD, K_TJ, K_PROGRESS, K_PLACED };

typedef struct cev {
    int8_t kind, type; /* K_*, DRV_WATCH_ADDED / _MODIFIED / _DELETED */
    bool has_old;
    int32_t key;    /* interned informer key ("ns/name", or "name" for nodes) */
    int32_t jobkey; /* pods: interned "ns/<drover.dev/job>", or 0 */
    double t;       /* when the handler ran */
    union {
        drv_kpod pod;
        drv_knode node;
        struct {
            double step, loss; /* loss NAN when the job does not serve it */
        } prog;
        struct {
            int32_t slot, node; /* node -1: created unbound */
            bool create, ok;
            long status;
            double sent, done;
        } placed; /* a binder thread's answer */
    } old, cur;
    tjrec *tj; /* K_TJ, not DELETED: an owned copy */
} cev;

/* ---- the scheduler thread's records --------------------------------------------------------- */

enum { ST_NONE, ST_PENDING, ST_RUNNING, ST_SUCCEEDED, ST_FAILED };
static const char *const st_phase[] = {"", "Pending", "Running", "Succeeded", "Failed"};

typedef struct cjob {
    int32_t key, ns, name; /* interned in kn */
    char uid[64];
    char *tmpl[DRV_NROLES];
    double t_ready; /* when the event that made it placeable whole arrived (latency), or -1 */
    int8_t status;  /* ST_* decided */
    int8_t written; /* ST_* last written to the API */
    int32_t wrote_active[DRV_NROLES];
    /* the gang being bound, for its latency: requests out, pods, when decided, and the latest
     * send and answer so far */
    int32_t lat_out, lat_pods;
    bool lat_armed;
    double lat_t0, lat_decide, lat_sent, lat_server;
    bool why_written; /* the waiting Event of the current wait was written */
    bool created;     /* its wanted pods were created (unbound) */
    bool gone;        /* the TrainingJob was deleted */
    int32_t port;     /* spec.progress: where its chief serves progress (0: nowhere) */
    char path[128], step[96], loss[96];
} cjob;

/* What an informer's callbacks get: the controller, and which kind they decode. */
typedef struct infarg {
    drv_ctrl *c;
    int kind;
} infarg;

/* A TrainingJob status the writer is to write. */
typedef struct wstatus {
    char path[800];
    char phase[16], message[64];
    int32_t active[DRV_NROLES];
} wstatus;

typedef struct cpod {
    int8_t exists;             /* 0: no pod; 1: a pod; 2: a pod being deleted */
    int8_t phase;              /* enum drv_kpod_phase of the pod */
    int32_t api_node;          /* the node the API has it on, -1 */
    int32_t api_name;          /* ... its interned name, 0 when unbound */
    uint8_t ip_family, ip[16]; /* status.podIP (0: none yet) */
    int32_t ghost;             /* being deleted where the state no longer has it: the interned
                                  node whose room it holds until gone (counted as foreign), 0 */
    drv_res ghost_req;
    int32_t want;      /* create it bound to this node once the old pod is gone, -1 */
    bool inflight;     /* a binder thread is creating or binding it */
    bool delete_after; /* ... and it is to be deleted once that is done */
} cpod;

struct drv_ctrl {
    drv_ctrl_opts o;
    const drv_profile *prof; /* borrowed from drv_ctrl_opts: outlives the controller */
    char sched_name[64], ns[254];
    int32_t sched_kn;     /* sched_name interned in kn */
    drv_kube *k;          /* the scheduler thread's client */
    drv_kube *kinf[3];    /* one per informer */
    drv_informer *inf[3]; /* nodes, pods, trainingjobs */
    infarg args[3];       /* their callbacks' argument */
    pthread_t thr[3];
    bool started[3];
    volatile int stop_inf;

    pthread_mutex_t kn_mu; /* guards kn */
    drv_strtab *kn;

    pthread_mutex_t mu; /* guards the event queue, the stats and the latencies */
    pthread_cond_t cv;
    cev *ev;
    int32_t nev, cap_ev;
    drv_ctrl_stats stats;
    drv_ctrl_latency *lat;
    int32_t nlat, cap_lat;
    /* progress collection: what to scrape (written by the scheduler thread, read by the
     * collector's) */
    struct target {
        int32_t key; /* the job's interned key */
        char url[400], step[96], loss[96];
    } * targets;
    int32_t ntargets, cap_targets;
    struct target *tbuild; /* the next list, built by the scheduler thread */
    int32_t cap_build;
    pthread_t scr_thr;
    bool scr_started;
    /* the binders: bindings and pod creations, off the scheduling thread (bmu guards bq) */
    struct bop {
        int32_t slot, node;
        bool create;
        char *path, *body;
    } * bq;
    int32_t bq_head, nbq, cap_bq;
    pthread_mutex_t bmu;
    pthread_cond_t bcv;
    bool bstop;
    struct binder {
        drv_ctrl *c;
        drv_kube *k;
        pthread_t t;
        bool started;
    } * binders;
    int nbinders;
    /* the writer: status and Events (wmu guards want and evq) */
    drv_kube *kw;
    drv_workqueue *wq;
    pthread_t wthr;
    bool wstarted;
    pthread_mutex_t wmu;
    wstatus **want; /* by interned job key: the status to write */
    int32_t cap_want;
    struct wevent {
        char *path, *body;
    } * evq;
    int32_t nevq, cap_evq;
    double scrape_s; /* seconds between scrapes: the profile's period, within [1, 60] */

    /* scheduler thread only */
    drv_state st;
    drv_sched *sched;
    double t0;
    cjob *jobs; /* per state job */
    int32_t cap_jobs;
    cpod *pods; /* per pod slot */
    int32_t cap_pods;
    drv_res *kalloc; /* per state node: the API's allocatable */
    bool *kok;       /* per state node: ready, not cordoned, not tainted away */
    int32_t cap_nodes;
    int32_t *job_of, *node_of; /* by interned key: state job id / node id, or -1 */
    drv_kpod **parked;         /* by interned pod key: drover pods of jobs not known yet */
    drv_res *foreign;          /* by interned node name: requests of pods Drover does not
                                  schedule (kept by name: a pod may be seen before its node) */
    int32_t cap_of;
    struct orphan {         /* drover pods bound to a node not seen yet */
        int32_t slot, node; /* pod slot, interned node name */
    } * orphans;
    int32_t norphans, cap_orphans;
    bool dirty;
    bool warned_resize;

    /* metrics (drv_ctrl_opts.metrics): what was last exported, to add the differences */
    struct {
        drv_metric *cycles, *binds, *creates, *deletes, *errors, *status, *events, *samples;
        drv_metric *pending, *running, *leader, *cycle_s, *latency_s;
        drv_ctrl_stats last;
    } m;

    /* leader election (scheduler thread) */
    char lease_ns[254], lease_name[254], identity[256];
    bool leader;
    double lease_next, lease_renewed;    /* next attempt; last successful renewal (mono) */
    char obs_holder[128], obs_renew[40]; /* the lease record last observed, and when */
    double obs_t;
};

/* ---- small helpers -------------------------------------------------------------------------- */

static int32_t kn_intern(drv_ctrl *c, const char *s)
{
    pthread_mutex_lock(&c->kn_mu);
    int32_t id = drv_strtab_intern(c->kn, s);
    pthread_mutex_unlock(&c->kn_mu);
    return id;
}

/* Copies the string of an interned id into buf (the table may grow meanwhile). */
static const char *kn_str(drv_ctrl *c, int32_t id, char *buf, size_t n)
{
    pthread_mutex_lock(&c->kn_mu);
    snprintf(buf, n, "%s", drv_strtab_str(c->kn, id));
    pthread_mutex_unlock(&c->kn_mu);
    return buf;
}

static void count(drv_ctrl *c, long *field, long by)
{
    pthread_mutex_lock(&c->mu);
    *field += by;
    pthread_mutex_unlock(&c->mu);
}

static int grow_of(drv_ctrl *c, int32_t id)
{
    int32_t old = c->cap_of;
    if (id < old)
        return 0;
    int32_t cap = old;
    if (drv_grow(&c->job_of, sizeof *c->job_of, &cap, id + 1) != 0)
        return DRV_ENOMEM;
    int32_t cap2 = old, cap3 = old, cap4 = old;
    if (drv_grow(&c->node_of, sizeof *c->node_of, &cap2, cap) != 0 ||
        drv_grow(&c->parked, sizeof *c->parked, &cap3, cap) != 0 ||
        drv_grow(&c->foreign, sizeof *c->foreign, &cap4, cap) != 0)
        return DRV_ENOMEM;
    for (int32_t i = old; i < cap; i++) {
        c->job_of[i] = c->node_of[i] = -1;
        c->parked[i] = NULL;
        c->foreign[i] = (drv_res){0, 0, 0};
    }
    c->cap_of = cap;
    return 0;
}

static void tjrec_free(tjrec *t)
{
    if (!t)
        return;
    for (int r = 0; r < DRV_NROLES; r++)
        drv_free(t->tmpl[r]);
    drv_free(t);
}

/* RFC 3339 wall-clock time, seconds or microseconds. */
static void rfc3339(char *buf, size_t n, bool micro)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    if (micro)
        snprintf(buf + k, n - k, ".%06ldZ", ts.tv_nsec / 1000);
    else
        snprintf(buf + k, n - k, "Z");
}

static void pod_name(drv_ctrl *c, int32_t s, char *buf, size_t n);
static int register_metrics(drv_ctrl *c, drv_diag *d);

/* ---- informer side: decode and hand over --------------------------------------------------- */

static void *decode(json_t *obj, void *arg, drv_diag *d)
{
    const infarg *a = arg;
    drv_ctrl *c = a->c;
    void *rec = NULL;
    int rc = DRV_ENOMEM;
    pthread_mutex_lock(&c->kn_mu);
    if (a->kind == K_NODE) {
        rec = drv_malloc(sizeof(drv_knode));
        if (rec)
            rc = drv_kube_decode_node(obj, c->kn, rec, d);
    } else if (a->kind == K_POD) {
        rec = drv_malloc(sizeof(drv_kpod));
        if (rec)
            rc = drv_kube_decode_pod(obj, c->kn, rec, d);
    } else {
        tjrec *t = drv_calloc(1, sizeof *t);
        rec = t;
        if (t && (rc = drv_kube_decode_trainingjob(obj, c->kn, &t->tj, d)) == 0) {
            json_t *meta = json_object_get(obj, "metadata");
            const char *uid = json_string_value(json_object_get(meta, "uid"));
            snprintf(t->uid, sizeof t->uid, "%s", uid ? uid : "");
            const char *ph =
                json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
            t->finished = ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
            json_t *specs = json_object_get(json_object_get(obj, "spec"), "replicaSpecs");
            for (int r = 0; r < DRV_NROLES && rc == 0; r++) {
                json_t *tm = json_object_get(json_object_get(specs, tj_role_key[r]), "template");
                if (!tm)
                    continue;
                char *s = json_dumps(tm, JSON_COMPACT);
                t->tmpl[r] = s ? drv_strdup(s) : NULL;
                free(s);
                if (!t->tmpl[r])
                    rc = drv_fail(d, DRV_ENOMEM, "out of memory");
            }
        } else if (!t) {
            drv_fail(d, DRV_ENOMEM, "out of memory");
        }
    }
    if (!rec)
        drv_fail(d, DRV_ENOMEM, "out of memory");
    pthread_mutex_unlock(&c->kn_mu);
    if (rc != 0) {
        if (a->kind == K_TJ)
            tjrec_free(rec);
        else
            drv_free(rec);
        return NULL;
    }
    return rec;
}

static void release(void *rec, void *arg)
{
    const infarg *a = arg;
    if (a->kind == K_TJ)
        tjrec_free(rec);
    else
        drv_free(rec);
}

static tjrec *tjrec_copy(const tjrec *t)
{
    tjrec *x = drv_malloc(sizeof *x);
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

static void push(drv_ctrl *c, int kind, int type, const char *key, const void *old, const void *cur)
{
    cev e = {.kind = (int8_t)kind, .type = (int8_t)type, .t = mono(), .has_old = old != NULL};
    e.key = kn_intern(c, key);
    if (kind == K_NODE) {
        if (old)
            e.old.node = *(const drv_knode *)old;
        if (cur)
            e.cur.node = *(const drv_knode *)cur;
    } else if (kind == K_POD) {
        if (old)
            e.old.pod = *(const drv_kpod *)old;
        if (cur)
            e.cur.pod = *(const drv_kpod *)cur;
        const drv_kpod *p = cur ? cur : old;
        if (p->job) {
            char ns[256], job[256], jk[520];
            kn_str(c, p->ns, ns, sizeof ns);
            kn_str(c, p->job, job, sizeof job);
            snprintf(jk, sizeof jk, "%s/%s", ns, job);
            e.jobkey = kn_intern(c, jk);
        }
    } else if (cur) {
        e.tj = tjrec_copy(cur);
        if (!e.tj) {
            drv_log(DRV_LOG_ERROR, "out of memory: TrainingJob %s dropped", key);
            return;
        }
    }
    if (e.key < 0 || e.jobkey < 0) {
        tjrec_free(e.tj);
        drv_log(DRV_LOG_ERROR, "out of memory: event for %s dropped", key);
        return;
    }
    pthread_mutex_lock(&c->mu);
    if (drv_grow(&c->ev, sizeof *c->ev, &c->cap_ev, c->nev + 1) != 0) {
        pthread_mutex_unlock(&c->mu);
        tjrec_free(e.tj);
        drv_log(DRV_LOG_ERROR, "out of memory: event for %s dropped", key);
        return;
    }
    c->ev[c->nev++] = e;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void on_add(const char *key, void *rec, void *arg)
{
    const infarg *a = arg;
    push(a->c, a->kind, DRV_WATCH_ADDED, key, NULL, rec);
}
static void on_update(const char *key, void *old, void *rec, void *arg)
{
    const infarg *a = arg;
    push(a->c, a->kind, DRV_WATCH_MODIFIED, key, old, rec);
}
static void on_delete(const char *key, void *rec, void *arg)
{
    const infarg *a = arg;
    push(a->c, a->kind, DRV_WATCH_DELETED, key, rec, NULL);
}

static void *inf_main(void *arg)
{
    const infarg *a = arg;
    drv_diag d = {{0}};
    if (drv_informer_run(a->c->inf[a->kind], &a->c->stop_inf, &d) != 0)
        drv_log(DRV_LOG_ERROR, "informer stopped: %s", d.msg);
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

int drv_ctrl_new(drv_ctrl **out, const drv_kube_config *cfg, const drv_ctrl_opts *o, drv_diag *d)
{
    *out = NULL;
    if (!o || !o->profile)
        return drv_fail(d, DRV_EINVAL, "drover run: no scheduling profile given");
    drv_ctrl *c = drv_calloc(1, sizeof *c);
    if (!c)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    c->o = *o;
    c->prof = o->profile;
    snprintf(c->sched_name, sizeof c->sched_name, "%s", o->scheduler ? o->scheduler : "drover");
    snprintf(c->ns, sizeof c->ns, "%s", o->namespace_ ? o->namespace_ : "");
    c->o.scheduler = c->sched_name;
    c->o.namespace_ = c->ns[0] ? c->ns : NULL;
    pthread_mutex_init(&c->kn_mu, NULL);
    pthread_mutex_init(&c->wmu, NULL);
    pthread_mutex_init(&c->bmu, NULL);
    pthread_cond_init(&c->bcv, NULL);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    int rc;
    if (!(c->kn = drv_strtab_new()) || (rc = drv_state_init(&c->st)) != 0 ||
        (c->sched_kn = drv_strtab_intern(c->kn, c->sched_name)) < 0) {
        drv_ctrl_free(c);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    if ((rc = drv_kube_new(&c->k, cfg, d)) != 0 || (rc = drv_kube_new(&c->kw, cfg, d)) != 0) {
        drv_ctrl_free(c);
        return rc;
    }
    for (int i = 0; i < 3; i++)
        if ((rc = drv_kube_new(&c->kinf[i], cfg, d)) != 0) {
            drv_ctrl_free(c);
            return rc;
        }
    c->nbinders = o->binders > 0 ? o->binders : 8;
    if (!(c->binders = drv_calloc((size_t)c->nbinders, sizeof *c->binders))) {
        drv_ctrl_free(c);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    for (int i = 0; i < c->nbinders; i++) {
        c->binders[i].c = c;
        if ((rc = drv_kube_new(&c->binders[i].k, cfg, d)) != 0) {
            drv_ctrl_free(c);
            return rc;
        }
    }
    if (!(c->wq = drv_workqueue_new(0.05, 30, NULL, NULL))) {
        drv_ctrl_free(c);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    if ((rc = drv_sched_new(c->prof, &c->sched, d)) != 0) {
        drv_ctrl_free(c);
        return rc;
    }
    drv_sched_set_exhaustive(c->sched, o->exhaustive);
    if (o->metrics && (rc = register_metrics(c, d)) != 0) {
        drv_ctrl_free(c);
        return rc;
    }
    if (o->lease_name) {
        snprintf(c->lease_ns, sizeof c->lease_ns, "%s",
                 o->lease_namespace ? o->lease_namespace : "drover-system");
        snprintf(c->lease_name, sizeof c->lease_name, "%s", o->lease_name);
        if (o->identity) {
            snprintf(c->identity, sizeof c->identity, "%s", o->identity);
        } else {
            char host[200] = "drover";
            gethostname(host, sizeof host - 1);
            snprintf(c->identity, sizeof c->identity, "%s_%ld", host, (long)getpid());
        }
    } else {
        c->leader = true;
        c->stats.leader = true;
    }
    c->o.lease_namespace = c->o.lease_name = c->o.identity = NULL;
    *out = c;
    return 0;
}

void drv_ctrl_free(drv_ctrl *c)
{
    if (!c)
        return;
    for (int i = 0; i < 3; i++) {
        drv_informer_free(c->inf[i]);
        drv_kube_free(c->kinf[i]);
    }
    drv_kube_free(c->k);
    drv_kube_free(c->kw);
    for (int i = 0; c->binders && i < c->nbinders; i++)
        drv_kube_free(c->binders[i].k);
    drv_free(c->binders);
    for (int32_t i = c->bq_head; i < c->nbq; i++) {
        drv_free(c->bq[i].path);
        drv_free(c->bq[i].body);
    }
    drv_free(c->bq);
    if (c->wq)
        drv_workqueue_free(c->wq);
    for (int32_t i = 0; i < c->cap_want; i++)
        drv_free(c->want[i]);
    drv_free(c->want);
    for (int32_t i = 0; i < c->nevq; i++) {
        drv_free(c->evq[i].path);
        drv_free(c->evq[i].body);
    }
    drv_free(c->evq);
    drv_sched_free(c->sched);
    for (int32_t i = 0; i < c->nev; i++)
        tjrec_free(c->ev[i].tj);
    drv_free(c->ev);
    drv_free(c->lat);
    drv_free(c->targets);
    drv_free(c->tbuild);
    for (int32_t j = 0; j < c->st.njobs && c->jobs; j++)
        for (int r = 0; r < DRV_NROLES; r++)
            drv_free(c->jobs[j].tmpl[r]);
    drv_free(c->jobs);
    drv_free(c->pods);
    drv_free(c->kalloc);
    drv_free(c->foreign);
    drv_free(c->orphans);
    drv_free(c->kok);
    for (int32_t i = 0; i < c->cap_of; i++)
        drv_free(c->parked[i]);
    drv_free(c->parked);
    drv_free(c->job_of);
    drv_free(c->node_of);
    drv_state_fini(&c->st);
    drv_strtab_free(c->kn);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->kn_mu);
    pthread_mutex_destroy(&c->wmu);
    pthread_mutex_destroy(&c->bmu);
    pthread_cond_destroy(&c->bcv);
    drv_free(c);
}

drv_ctrl_stats drv_ctrl_get_stats(drv_ctrl *c)
{
    pthread_mutex_lock(&c->mu);
    drv_ctrl_stats s = c->stats;
    pthread_mutex_unlock(&c->mu);
    return s;
}

size_t drv_ctrl_latencies(drv_ctrl *c, drv_ctrl_latency *out, size_t n)
{
    pthread_mutex_lock(&c->mu);
    size_t have = (size_t)c->nlat;
    if (out)
        memcpy(out, c->lat, sizeof *out * (n < have ? n : have));
    pthread_mutex_unlock(&c->mu);
    return have;
}

/* ---- metrics ----------------------------------------------------------------------------------
 */

static int register_metrics(drv_ctrl *c, drv_diag *d)
{
    drv_metrics *r = c->o.metrics;
    static const double lat[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                 0.01,   0.025,   0.05,   0.1,   0.25,   1};
    const char *const prof[] = {"profile", c->prof->name, NULL};
    int rc = 0;
#define COUNTER(field, name, help)                                                                 \
    if (!rc)                                                                                       \
    rc = drv_metrics_counter(r, name, help, prof, &c->m.field, d)
#define GAUGE(field, name, help)                                                                   \
    if (!rc)                                                                                       \
    rc = drv_metrics_gauge(r, name, help, prof, &c->m.field, d)
    COUNTER(cycles, "drover_cycles_total", "Scheduling cycles run.");
    COUNTER(binds, "drover_bindings_total", "pods/binding requests that succeeded.");
    COUNTER(creates, "drover_pods_created_total", "Pods created (bound or not).");
    COUNTER(deletes, "drover_pods_deleted_total", "Pods deleted.");
    COUNTER(errors, "drover_api_errors_total", "API requests that failed.");
    COUNTER(status, "drover_status_writes_total", "TrainingJob status updates written.");
    COUNTER(events, "drover_events_total", "Events written.");
    COUNTER(samples, "drover_progress_samples_total", "Progress samples scraped.");
    GAUGE(pending, "drover_jobs_pending", "TrainingJobs waiting for their pods to be placed.");
    GAUGE(running, "drover_jobs_running", "TrainingJobs with every wanted pod running.");
    GAUGE(leader, "drover_leader", "1 while this controller schedules (holds the lease).");
#undef COUNTER
#undef GAUGE
    if (!rc)
        rc = drv_metrics_histogram(r, "drover_cycle_seconds", "Duration of a scheduling cycle.",
                                   prof, lat, 12, &c->m.cycle_s, d);
    if (!rc)
        rc = drv_metrics_histogram(r, "drover_decision_seconds",
                                   "Watch event completing a gang to its last binding request "
                                   "sent.",
                                   prof, lat, 12, &c->m.latency_s, d);
    return rc;
}

/* Adds what changed since the last export (scheduler thread, after each cycle). */
static void export_metrics(drv_ctrl *c, bool gauges)
{
    if (!c->o.metrics)
        return;
    drv_ctrl_stats s = drv_ctrl_get_stats(c), *l = &c->m.last;
    drv_metric_add(c->m.cycles, (double)(s.cycles - l->cycles));
    drv_metric_add(c->m.binds, (double)(s.binds - l->binds));
    drv_metric_add(c->m.creates, (double)(s.creates - l->creates));
    drv_metric_add(c->m.deletes, (double)(s.deletes - l->deletes));
    drv_metric_add(c->m.errors, (double)(s.api_errors - l->api_errors));
    drv_metric_add(c->m.status, (double)(s.status_writes - l->status_writes));
    drv_metric_add(c->m.events, (double)(s.events - l->events));
    drv_metric_add(c->m.samples, (double)(s.samples - l->samples));
    drv_metric_set(c->m.leader, s.leader ? 1 : 0);
    *l = s;
    if (!gauges) /* (the job gauges walk the live jobs: after cycles only) */
        return;
    int32_t running = 0;
    DRV_FOR_LIVE(&c->st, j)
    running += c->st.jobs[j].phase == DRV_JOB_RUNNING;
    drv_metric_set(c->m.pending, c->st.npending);
    drv_metric_set(c->m.running, running);
}

/* ---- applying events to the state ----------------------------------------------------------- */

static bool terminal(int phase)
{
    return phase == DRV_KPOD_SUCCEEDED || phase == DRV_KPOD_FAILED;
}

/* What a pod Drover does not schedule takes from its node: its request while it is bound and
 * not finished. */
static void foreign_res(drv_ctrl *c, int32_t name, drv_res req, int sign)
{
    if (!name || grow_of(c, name) != 0)
        return;
    drv_res *f = &c->foreign[name];
    *f = sign > 0 ? drv_res_add(*f, req) : drv_res_sub(*f, req);
    int32_t n = c->node_of[name];
    if (n >= 0) {
        drv_state_set_node(&c->st, n, drv_res_sub(c->kalloc[n], *f), c->kok[n]);
        c->dirty = true;
    }
}

/* A pod Drover does not schedule, added (sign > 0) to or taken off its node's foreign load. */
static void foreign_add(drv_ctrl *c, const drv_kpod *p, int sign)
{
    if (!terminal(p->phase))
        foreign_res(c, p->node, p->req, sign);
}

/* A pod of ours being deleted holds its node's room until it is gone, like kube-scheduler
 * counts terminating pods; when the state no longer has it there (evicted, migrated), that room
 * is counted as foreign meanwhile. */
static void ghost_set(drv_ctrl *c, cpod *cp, int32_t name, drv_res req)
{
    if (cp->ghost == name && !memcmp(&cp->ghost_req, &req, sizeof req))
        return;
    if (cp->ghost)
        foreign_res(c, cp->ghost, cp->ghost_req, -1);
    cp->ghost = name;
    cp->ghost_req = req;
    if (name)
        foreign_res(c, name, req, +1);
}

static void adopt_orphans(drv_ctrl *c, int32_t name, int32_t node)
{
    int32_t k = 0;
    for (int32_t i = 0; i < c->norphans; i++) {
        const struct orphan *o = &c->orphans[i];
        if (o->node != name) {
            c->orphans[k++] = *o;
            continue;
        }
        const cpod *cp = &c->pods[o->slot];
        if (cp->exists && cp->api_name == name && !terminal(cp->phase) &&
            c->st.pods[o->slot].node < 0) {
            drv_state_bind(&c->st, o->slot, node);
            c->pods[o->slot].api_node = node;
        }
    }
    c->norphans = k;
}

static int apply_node(drv_ctrl *c, const cev *e)
{
    const drv_knode *kn = e->type == DRV_WATCH_DELETED ? &e->old.node : &e->cur.node;
    if (grow_of(c, kn->name) != 0)
        return DRV_ENOMEM;
    int32_t id = c->node_of[kn->name];
    bool ok = e->type != DRV_WATCH_DELETED && kn->ready && !kn->unschedulable && !kn->noschedule;
    if (id < 0) {
        if (e->type == DRV_WATCH_DELETED)
            return 0;
        char name[256], zone[256], rack[256];
        kn_str(c, kn->name, name, sizeof name);
        int rc = drv_state_add_node(&c->st, name, kn->alloc,
                                    kn->zone ? kn_str(c, kn->zone, zone, sizeof zone) : NULL,
                                    kn->rack ? kn_str(c, kn->rack, rack, sizeof rack) : NULL, &id);
        if (rc != 0)
            return rc;
        int32_t cap = c->cap_nodes, cap2 = c->cap_nodes;
        if (drv_grow(&c->kalloc, sizeof *c->kalloc, &cap, c->st.nnodes) != 0 ||
            drv_grow(&c->kok, sizeof *c->kok, &cap2, c->st.nnodes) != 0)
            return DRV_ENOMEM;
        c->cap_nodes = cap;
        c->node_of[kn->name] = id;
        adopt_orphans(c, kn->name, id);
    }
    /* A node deleted keeps its slot, cordoned with nothing allocatable; its pods are deleted by
     * the cluster and leave through their own events. Labels do not move once seen. */
    c->kalloc[id] = kn->alloc;
    c->kok[id] = ok;
    drv_state_set_node(&c->st, id, drv_res_sub(c->kalloc[id], c->foreign[kn->name]), ok);
    c->dirty = true;
    return 0;
}

static void job_placeable(drv_ctrl *c, int32_t j, double t)
{
    cjob *cj = &c->jobs[j];
    if (cj->t_ready < 0)
        cj->t_ready = t;
}

/* The pod slot a drover pod record stands for, or -1. */
static int32_t slot_of(drv_ctrl *c, const cev *e, const drv_kpod *p)
{
    if (!e->jobkey || e->jobkey >= c->cap_of || c->job_of[e->jobkey] < 0 || p->role < 0 ||
        p->replica < 0)
        return -1;
    return drv_job_pod(&c->st, c->job_of[e->jobkey], p->role, p->replica);
}

static bool ours(const drv_kpod *p, int32_t sched_id)
{
    return p->job && p->scheduler == sched_id;
}

/* A pod of a known job changed (p) or went away (p NULL). */
static int own_pod(drv_ctrl *c, int32_t s, const drv_kpod *p, double t)
{
    cpod *cp = &c->pods[s];
    const drv_pod *sp = &c->st.pods[s];
    int32_t job = sp->job;
    c->dirty = true;
    if (!p) {
        ghost_set(c, cp, 0, (drv_res){0, 0, 0});
        cp->exists = 0;
        cp->api_node = -1;
        cp->api_name = 0;
        cp->ip_family = 0;
        cp->phase = DRV_KPOD_PENDING;
        if (cp->want < 0 && sp->node >= 0)
            drv_state_unbind(&c->st, s);
        /* A job that waited for this pod to go (to be placed again whole) is placeable now. */
        if (c->st.jobs[job].phase == DRV_JOB_PENDING)
            job_placeable(c, job, t);
        return 0;
    }
    int32_t node = p->node && p->node < c->cap_of ? c->node_of[p->node] : -1;
    if (p->deleting) {
        /* Its phase says nothing of the job any more (kubelet may mark a pod it kills Failed),
         * and it holds its node's room until it is gone. */
        cp->exists = 2;
        bool held = sp->node >= 0 && sp->node == node && cp->want < 0;
        if (terminal(p->phase) && held)
            drv_state_unbind(&c->st, s);
        ghost_set(c, cp, held || terminal(p->phase) ? 0 : p->node, p->req);
        return 0;
    }
    cp->exists = 1;
    cp->phase = p->phase;
    cp->ip_family = p->ip_family;
    memcpy(cp->ip, p->ip, sizeof cp->ip);
    cp->api_node = node;
    cp->api_name = p->node;
    if (p->node && node < 0 && !terminal(p->phase)) {
        /* Bound to a node not seen yet (the pod informer listed first): bound in the state
         * when the node shows up. */
        if (drv_grow(&c->orphans, sizeof *c->orphans, &c->cap_orphans, c->norphans + 1) != 0)
            return DRV_ENOMEM;
        c->orphans[c->norphans++] = (struct orphan){s, p->node};
        return 0;
    }
    if (terminal(p->phase)) {
        if (sp->node >= 0)
            drv_state_unbind(&c->st, s);
        return 0;
    }
    if (node >= 0 && sp->node != node && cp->want < 0) {
        /* Bound where the state does not have it (adopted after a restart, or bound by someone
         * else): the API is the truth. */
        if (sp->node >= 0)
            drv_state_unbind(&c->st, s);
        drv_state_bind(&c->st, s, node);
    }
    return 0;
}

static int apply_pod(drv_ctrl *c, const cev *e)
{
    const drv_kpod *cur = e->type == DRV_WATCH_DELETED ? NULL : &e->cur.pod;
    const drv_kpod *old = e->has_old ? &e->old.pod : NULL;
    int32_t sid = c->sched_kn;
    if (grow_of(c, e->key) != 0 || (e->jobkey && grow_of(c, e->jobkey) != 0))
        return DRV_ENOMEM;
    const drv_kpod *any = cur ? cur : old;
    if (!ours(any, sid)) {
        if (old)
            foreign_add(c, old, -1);
        if (cur)
            foreign_add(c, cur, +1);
        return 0;
    }
    int32_t s = slot_of(c, e, any);
    if (s < 0) {
        /* A drover pod of a job not known (yet): counted as foreign until its job shows up. */
        drv_kpod *pk = c->parked[e->key];
        if (pk) {
            foreign_add(c, pk, -1);
            drv_free(pk);
            c->parked[e->key] = NULL;
        }
        if (cur) {
            if (!(pk = drv_malloc(sizeof *pk)))
                return DRV_ENOMEM;
            *pk = *cur;
            c->parked[e->key] = pk;
            foreign_add(c, pk, +1);
        }
        return 0;
    }
    return own_pod(c, s, cur, e->t);
}

static int add_job(drv_ctrl *c, cev *e)
{
    tjrec *t = e->tj;
    int32_t sid = c->sched_kn;
    if (t->finished || (t->tj.scheduler && t->tj.scheduler != sid))
        return 0;
    char ns[256], name[256], key[520];
    kn_str(c, t->tj.ns, ns, sizeof ns);
    kn_str(c, t->tj.name, name, sizeof name);
    if (c->ns[0] && strcmp(ns, c->ns) != 0)
        return 0;
    drv_job tmpl;
    memset(&tmpl, 0, sizeof tmpl);
    snprintf(key, sizeof key, "%s/%s", ns, name);
    int32_t nid = drv_strtab_intern(c->st.names, key);
    int32_t uid = drv_strtab_intern(c->st.names, ns);
    if (nid < 0 || uid < 0)
        return DRV_ENOMEM;
    tmpl.name = nid;
    tmpl.user = uid;
    tmpl.queue = uid;
    tmpl.model = -1;
    tmpl.submit = e->t - c->t0;
    tmpl.phase = DRV_JOB_PENDING;
    tmpl.steps_total = t->tj.total_steps;
    int32_t wanted = 0;
    for (int r = 0; r < DRV_NROLES; r++) {
        tmpl.role[r] = t->tj.role[r];
        wanted += t->tj.role[r].replicas;
    }
    if (wanted == 0)
        return 0;
    int32_t j;
    int rc = drv_state_add_job(&c->st, &tmpl, &j);
    if (rc != 0)
        return rc;
    int32_t cap = c->cap_jobs;
    if (drv_grow(&c->jobs, sizeof *c->jobs, &cap, c->st.njobs) != 0)
        return DRV_ENOMEM;
    c->cap_jobs = cap;
    cap = c->cap_pods;
    if (drv_grow(&c->pods, sizeof *c->pods, &cap, c->st.npods) != 0)
        return DRV_ENOMEM;
    c->cap_pods = cap;
    cjob *cj = &c->jobs[j];
    memset(cj, 0, sizeof *cj);
    cj->key = e->key;
    cj->ns = t->tj.ns;
    cj->name = t->tj.name;
    snprintf(cj->uid, sizeof cj->uid, "%s", t->uid);
    for (int r = 0; r < DRV_NROLES; r++) {
        cj->tmpl[r] = t->tmpl[r];
        t->tmpl[r] = NULL; /* taken over */
    }
    cj->t_ready = e->t;
    cj->status = ST_PENDING;
    cj->port = t->tj.progress_port;
    snprintf(cj->path, sizeof cj->path, "%s", t->tj.progress_path);
    snprintf(cj->step, sizeof cj->step, "%s", t->tj.step_metric);
    snprintf(cj->loss, sizeof cj->loss, "%s", t->tj.loss_metric);
    const drv_job *jb = &c->st.jobs[j];
    for (int32_t k = 0; k < jb->pod_count; k++)
        c->pods[jb->pod_base + k] = (cpod){.phase = DRV_KPOD_PENDING, .api_node = -1, .want = -1};
    c->job_of[e->key] = j;
    count(c, &c->stats.jobs, 1);
    /* Its pods seen before it (named as the controller names them): adopt them. O(slots). */
    for (int32_t k = 0; k < jb->pod_count; k++) {
        int32_t s = jb->pod_base + k, id;
        char pod[600], pkey[900];
        pod_name(c, s, pod, sizeof pod);
        snprintf(pkey, sizeof pkey, "%s/%s", ns, pod);
        pthread_mutex_lock(&c->kn_mu);
        id = drv_strtab_find(c->kn, pkey);
        pthread_mutex_unlock(&c->kn_mu);
        drv_kpod *pk = id > 0 && id < c->cap_of ? c->parked[id] : NULL;
        if (!pk || pk->ns != t->tj.ns || pk->job != t->tj.name)
            continue;
        foreign_add(c, pk, -1);
        int rc2 = 0;
        if (pk->role == c->st.pods[s].role && pk->replica == c->st.pods[s].index)
            rc2 = own_pod(c, s, pk, e->t);
        drv_free(pk);
        c->parked[id] = NULL;
        if (rc2)
            return rc2;
    }
    c->dirty = true;
    return 0;
}

static int apply_tj(drv_ctrl *c, cev *e)
{
    if (grow_of(c, e->key) != 0)
        return DRV_ENOMEM;
    int32_t j = c->job_of[e->key];
    if (j >= 0 && e->type != DRV_WATCH_DELETED && strcmp(c->jobs[j].uid, e->tj->uid) != 0) {
        /* Deleted and created again under the same name (its deletion not seen, or seen and
         * done): the old job is over, without touching pods, which may be the new one's. */
        const drv_job *jb = &c->st.jobs[j];
        if (jb->phase != DRV_JOB_DONE) {
            for (int32_t k = 0; k < jb->pod_count; k++)
                if (c->st.pods[jb->pod_base + k].node >= 0)
                    drv_state_unbind(&c->st, jb->pod_base + k);
            drv_state_set_phase(&c->st, j, DRV_JOB_DONE);
            count(c, &c->stats.jobs_done, 1);
        }
        c->jobs[j].gone = true;
        c->job_of[e->key] = -1;
        return add_job(c, e);
    }
    if (e->type == DRV_WATCH_DELETED) {
        if (j >= 0) {
            c->jobs[j].gone = true;
            if (c->jobs[j].status < ST_SUCCEEDED)
                c->jobs[j].status = ST_FAILED;
            c->dirty = true;
        }
        return 0;
    }
    if (j < 0)
        return add_job(c, e);
    /* Spec changes of a known job are not followed yet (docs/running.md). A status written by
     * someone else as finished ends it. */
    if (e->tj->finished && c->jobs[j].status < ST_SUCCEEDED) {
        c->jobs[j].status = ST_FAILED;
        c->dirty = true;
    }
    return 0;
}

/* ---- requests ------------------------------------------------------------------------------- */

/* Path prefix of a job's namespace's pods. */
static void pods_path(drv_ctrl *c, int32_t ns, char *buf, size_t n)
{
    char s[256];
    snprintf(buf, n, "/api/v1/namespaces/%s/pods", kn_str(c, ns, s, sizeof s));
}

static void pod_name(drv_ctrl *c, int32_t s, char *buf, size_t n)
{
    const drv_pod *p = &c->st.pods[s];
    char name[256];
    kn_str(c, c->jobs[p->job].name, name, sizeof name);
    snprintf(buf, n, "%s-%s-%d", name, drv_role_name(p->role), p->index);
}

/* The body that creates slot s's pod from its role's template, bound to node (or not: -1). */
static char *pod_body(drv_ctrl *c, int32_t s, int32_t node)
{
    const drv_pod *p = &c->st.pods[s];
    const cjob *cj = &c->jobs[p->job];
    json_t *tm = cj->tmpl[p->role] ? json_loads(cj->tmpl[p->role], 0, NULL) : json_object();
    if (!tm)
        return NULL;
    char ns[256], job[256], pod[600], rank[16];
    kn_str(c, cj->ns, ns, sizeof ns);
    kn_str(c, cj->name, job, sizeof job);
    pod_name(c, s, pod, sizeof pod);
    snprintf(rank, sizeof rank, "%d", p->index);
    json_t *meta = json_object_get(tm, "metadata");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(tm, "metadata", meta);
    }
    json_t *labels = json_object_get(meta, "labels");
    if (!json_is_object(labels)) {
        labels = json_object();
        json_object_set_new(meta, "labels", labels);
    }
    json_object_set_new(labels, "drover.dev/job", json_string(job));
    json_object_set_new(labels, "drover.dev/role", json_string(drv_role_name(p->role)));
    json_object_set_new(labels, "drover.dev/rank", json_string(rank));
    json_object_set_new(meta, "name", json_string(pod));
    json_object_set_new(meta, "namespace", json_string(ns));
    json_object_set_new(meta, "ownerReferences",
                        json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion",
                                  "drover.dev/v1alpha1", "kind", "TrainingJob", "name", job, "uid",
                                  cj->uid, "controller", 1, "blockOwnerDeletion", 1));
    json_t *spec = json_object_get(tm, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(tm, "spec", spec);
    }
    json_object_set_new(spec, "schedulerName", json_string(c->sched_name));
    if (!json_object_get(spec, "restartPolicy"))
        json_object_set_new(spec, "restartPolicy", json_string("Never"));
    if (node >= 0)
        json_object_set_new(spec, "nodeName",
                            json_string(drv_strtab_str(c->st.names, c->st.nodes[node].name)));
    json_object_set_new(tm, "apiVersion", json_string("v1"));
    json_object_set_new(tm, "kind", json_string("Pod"));
    char *s2 = json_dumps(tm, JSON_COMPACT);
    json_decref(tm);
    char *out = s2 ? drv_strdup(s2) : NULL;
    free(s2);
    return out;
}

/* Hands slot s's creation (bound to node, or unbound: -1) or binding to the binder threads.
 * The answer comes back as a K_PLACED event (apply_placed). */
static int enqueue(drv_ctrl *c, int32_t s, int32_t node, bool create)
{
    char path[1200], pod[600], ns[256];
    char *body;
    kn_str(c, c->jobs[c->st.pods[s].job].ns, ns, sizeof ns);
    if (create) {
        body = pod_body(c, s, node);
        pods_path(c, c->jobs[c->st.pods[s].job].ns, path, sizeof path);
    } else {
        pod_name(c, s, pod, sizeof pod);
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s/binding", ns, pod);
        body = drv_kube_binding_json(ns, pod, drv_strtab_str(c->st.names, c->st.nodes[node].name));
    }
    char *p = drv_strdup(path);
    pthread_mutex_lock(&c->bmu);
    if (c->bq_head == c->nbq)
        c->bq_head = c->nbq = 0;
    bool ok = body && p && drv_grow(&c->bq, sizeof *c->bq, &c->cap_bq, c->nbq + 1) == 0;
    if (ok) {
        c->bq[c->nbq++] = (struct bop){s, node, create, p, body};
        pthread_cond_signal(&c->bcv);
    }
    pthread_mutex_unlock(&c->bmu);
    if (!ok) {
        drv_free(body);
        drv_free(p);
        return DRV_ENOMEM;
    }
    c->pods[s].inflight = true;
    return 0;
}

/* A binder thread: sends what the scheduler thread queued, several at once across threads (as
 * kube-scheduler binds asynchronously), and hands each answer back as an event. */
static void *binder_main(void *arg)
{
    struct binder *b = arg;
    drv_ctrl *c = b->c;
    for (;;) {
        pthread_mutex_lock(&c->bmu);
        while (!c->bstop && c->bq_head == c->nbq)
            pthread_cond_wait(&c->bcv, &c->bmu);
        if (c->bstop) { /* what is still queued is dropped: the next leader redoes it */
            pthread_mutex_unlock(&c->bmu);
            break;
        }
        struct bop op = c->bq[c->bq_head++];
        pthread_mutex_unlock(&c->bmu);
        drv_diag d = {{0}};
        long st = 0;
        cev e = {.kind = K_PLACED};
        e.cur.placed.sent = mono();
        int rc = drv_kube_request(b->k, "POST", op.path, NULL, op.body, &st, NULL, &d);
        e.cur.placed.done = e.t = mono();
        e.cur.placed.slot = op.slot;
        e.cur.placed.node = op.node;
        e.cur.placed.create = op.create;
        e.cur.placed.ok = rc == 0;
        e.cur.placed.status = st;
        if (rc != 0 && st != 409) {
            drv_log(DRV_LOG_WARN, "%s", d.msg);
            count(c, &c->stats.api_errors, 1);
        }
        pthread_mutex_lock(&c->mu);
        if (drv_grow(&c->ev, sizeof *c->ev, &c->cap_ev, c->nev + 1) == 0) {
            c->ev[c->nev++] = e;
            pthread_cond_signal(&c->cv);
        } else {
            drv_log(DRV_LOG_ERROR, "out of memory: the answer to POST %s is lost", op.path);
        }
        pthread_mutex_unlock(&c->mu);
        drv_free(op.path);
        drv_free(op.body);
    }
    return NULL;
}

static int delete_pod(drv_ctrl *c, int32_t s)
{
    if (c->pods[s].inflight) { /* after the binder's answer: it may be creating the pod */
        c->pods[s].delete_after = true;
        return 0;
    }
    char path[1200], pod[600];
    pods_path(c, c->jobs[c->st.pods[s].job].ns, path, sizeof path);
    pod_name(c, s, pod, sizeof pod);
    size_t k = strlen(path);
    snprintf(path + k, sizeof path - k, "/%s", pod);
    drv_diag d = {{0}};
    long status = 0;
    int rc = drv_kube_delete(c->k, path, -1, "Background", &status, &d);
    if (rc == 0 || status == 404) {
        if (c->pods[s].exists)
            c->pods[s].exists = 2;
        if (rc == 0)
            count(c, &c->stats.deletes, 1);
        return 0;
    }
    drv_log(DRV_LOG_WARN, "%s", d.msg);
    count(c, &c->stats.api_errors, 1);
    return rc;
}

/* Places slot s on node in the API: a binding when its pod exists, a bound creation when not
 * (both through the binders); later when the old pod is being deleted, when a request about
 * it is still out, or when the node's room is still held by pods being deleted (or others'
 * pods): the room stays reserved in the state meanwhile. */
static int place(drv_ctrl *c, int32_t s, int32_t node)
{
    cpod *cp = &c->pods[s];
    cjob *cj = &c->jobs[c->st.pods[s].job];
    if (cp->exists == 2 || cp->inflight || !drv_res_nonneg(drv_node_free(&c->st.nodes[node]))) {
        cp->want = node;
        cj->lat_armed = false; /* not bound by this cycle's requests alone */
        return 0;
    }
    int rc = enqueue(c, s, node, cp->exists == 0);
    if (rc != 0) {
        if (c->st.pods[s].node == node)
            drv_state_unbind(&c->st, s);
        c->dirty = true;
        return rc;
    }
    cj->lat_out++;
    cj->lat_pods++;
    return 0;
}

/* A binder's answer (scheduler thread): the pod exists (and where), or the assumption is undone;
 * a deletion that waited for it is sent; a gang whose last answer this is has its latency. */
static int apply_placed(drv_ctrl *c, const cev *e)
{
    int32_t s = e->cur.placed.slot, node = e->cur.placed.node;
    cpod *cp = &c->pods[s];
    const drv_pod *sp = &c->st.pods[s];
    cjob *cj = &c->jobs[sp->job];
    cp->inflight = false;
    if (e->cur.placed.ok) {
        if (cp->exists == 0)
            cp->exists = 1;
        if (node >= 0)
            cp->api_node = node;
        count(c, e->cur.placed.create ? &c->stats.creates : &c->stats.binds, 1);
    } else {
        if (e->cur.placed.create && e->cur.placed.status == 409 && cp->exists == 0)
            cp->exists = 1; /* it exists already: bind it next time */
        if (node >= 0 && sp->node == node && cp->want < 0)
            drv_state_unbind(&c->st, s);
        c->dirty = true;
    }
    if (cp->delete_after) {
        cp->delete_after = false;
        if (cp->exists == 1) {
            int rc = delete_pod(c, s);
            if (rc == DRV_ENOMEM)
                return rc;
        }
    }
    if (cj->lat_armed && --cj->lat_out <= 0) {
        cj->lat_armed = false;
        if (drv_job_complete(&c->st.jobs[sp->job])) {
            pthread_mutex_lock(&c->mu);
            if (drv_grow(&c->lat, sizeof *c->lat, &c->cap_lat, c->nlat + 1) == 0)
                c->lat[c->nlat++] = (drv_ctrl_latency){
                    cj->lat_decide - cj->lat_t0,
                    (cj->lat_sent > e->cur.placed.sent ? cj->lat_sent : e->cur.placed.sent) -
                        cj->lat_t0,
                    e->cur.placed.done - cj->lat_t0,
                    cj->lat_server + (e->cur.placed.done - e->cur.placed.sent), cj->lat_pods};
            pthread_mutex_unlock(&c->mu);
            if (c->o.metrics)
                drv_metric_observe(
                    c->m.latency_s,
                    (cj->lat_sent > e->cur.placed.sent ? cj->lat_sent : e->cur.placed.sent) -
                        cj->lat_t0);
        }
    } else if (cj->lat_armed) {
        if (e->cur.placed.sent > cj->lat_sent)
            cj->lat_sent = e->cur.placed.sent;
        cj->lat_server += e->cur.placed.done - e->cur.placed.sent;
    }
    return 0;
}

/* ---- progress collection ------------------------------------------------------------------- */

/* The value of the first sample of metric `name` in Prometheus text (comments skipped, labels
 * allowed), or NAN. */
static double prom_value(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        if (*l != '#' && !strncmp(l, name, n) && (l[n] == ' ' || l[n] == '\t' || l[n] == '{')) {
            const char *v = l + n;
            if (*v == '{')
                v = strchr(v, '}');
            if (v && (!e || v < e)) {
                v += *v == '}';
                char *end;
                double x = strtod(v, &end);
                if (end != v && (!e || end <= e))
                    return x;
            }
        }
        l = e ? e + 1 : NULL;
    }
    return NAN;
}

/* Which running jobs to scrape, and where: their chief's address (scheduler thread). */
static void publish_targets(drv_ctrl *c)
{
    /* built aside, then swapped in: the collector, informers and binders wait on mu */
    int32_t n = 0;
    DRV_FOR_LIVE(&c->st, j)
    {
        const cjob *cj = &c->jobs[j];
        const drv_job *jb = &c->st.jobs[j];
        if (!cj->port || jb->phase != DRV_JOB_RUNNING)
            continue;
        int lead = jb->role[DRV_ROLE_CHIEF].replicas > 0 ? DRV_ROLE_CHIEF : DRV_ROLE_WORKER;
        int32_t s = drv_job_pod(&c->st, j, lead, 0);
        if (s < 0 || !c->pods[s].ip_family)
            continue;
        if (drv_grow(&c->tbuild, sizeof *c->tbuild, &c->cap_build, n + 1) != 0)
            break;
        struct target *t = &c->tbuild[n++];
        char ip[64];
        inet_ntop(c->pods[s].ip_family == 4 ? AF_INET : AF_INET6, c->pods[s].ip, ip, sizeof ip);
        snprintf(t->url, sizeof t->url,
                 c->pods[s].ip_family == 4 ? "http://%s:%d%s" : "http://[%s]:%d%s", ip, cj->port,
                 cj->path);
        t->key = cj->key;
        snprintf(t->step, sizeof t->step, "%s", cj->step);
        snprintf(t->loss, sizeof t->loss, "%s", cj->loss);
    }
    pthread_mutex_lock(&c->mu);
    struct target *old = c->targets;
    int32_t cap = c->cap_targets;
    c->targets = c->tbuild;
    c->cap_targets = c->cap_build;
    c->ntargets = n;
    c->tbuild = old;
    c->cap_build = cap;
    pthread_mutex_unlock(&c->mu);
}

/* The collector's thread: every scrape interval, GET each target and hand the step and loss to
 * the scheduler thread as an event. A target that does not answer (or lacks the step metric)
 * is skipped until the next round, and logged at info level. */
static void *scrape_main(void *arg)
{
    drv_ctrl *c = arg;
    CURL *h = curl_easy_init();
    struct target *ts = NULL;
    int32_t n = 0, cap = 0;
    drv_kbuf b = {.max = 1u << 20}; /* more than 1 MiB of metrics is refused */
    double next = mono();
    while (h && !c->stop_inf) {
        if (mono() < next) {
            usleep(20000);
            continue;
        }
        next += c->scrape_s;
        if (next < mono())
            next = mono() + c->scrape_s;
        pthread_mutex_lock(&c->mu);
        n = 0;
        if (c->ntargets > 0 && drv_grow(&ts, sizeof *ts, &cap, c->ntargets) == 0) {
            memcpy(ts, c->targets, sizeof *ts * (size_t)c->ntargets);
            n = c->ntargets;
        }
        pthread_mutex_unlock(&c->mu);
        for (int32_t i = 0; i < n && !c->stop_inf; i++) {
            b.n = 0;
            if (b.p)
                b.p[0] = 0; /* an empty answer must not read the previous target's text */
            curl_easy_reset(h);
            curl_easy_setopt(h, CURLOPT_URL, ts[i].url);
            curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, drv_kbuf_write);
            curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
            curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 2000L);
            curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
            long code = 0;
            CURLcode rc = curl_easy_perform(h);
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
            double step = rc == CURLE_OK && code == 200 && b.p ? prom_value(b.p, ts[i].step) : NAN;
            if (isnan(step)) {
                drv_log(DRV_LOG_INFO, "progress: %s: %s", ts[i].url,
                        rc != CURLE_OK ? curl_easy_strerror(rc)
                        : code != 200  ? "not 200 OK"
                                       : "no step metric");
                continue;
            }
            cev e = {.kind = K_PROGRESS, .key = ts[i].key, .t = mono()};
            e.cur.prog.step = step;
            e.cur.prog.loss = prom_value(b.p, ts[i].loss);
            pthread_mutex_lock(&c->mu);
            if (drv_grow(&c->ev, sizeof *c->ev, &c->cap_ev, c->nev + 1) == 0)
                c->ev[c->nev++] = e;
            pthread_mutex_unlock(&c->mu);
        }
    }
    drv_free(b.p);
    drv_free(ts);
    if (h)
        curl_easy_cleanup(h);
    return NULL;
}

/* ---- leader election ------------------------------------------------------------------------ */

typedef struct lease_arg {
    drv_ctrl *c;
    double now;
} lease_arg;

/* Takes or renews the lease when it is ours or has expired; DRV_EEXIST when another holds it. */
static int lease_mutate(json_t *obj, void *arg)
{
    lease_arg *a = arg;
    drv_ctrl *c = a->c;
    drv_klease l;
    drv_diag d = {{0}};
    if (drv_kube_decode_lease(obj, &l, &d) != 0)
        return DRV_EPARSE;
    if (strcmp(l.holder, c->obs_holder) != 0 || strcmp(l.renew, c->obs_renew) != 0) {
        snprintf(c->obs_holder, sizeof c->obs_holder, "%s", l.holder);
        snprintf(c->obs_renew, sizeof c->obs_renew, "%s", l.renew);
        c->obs_t = a->now;
    }
    bool mine = strcmp(l.holder, c->identity) == 0;
    bool expired = !l.holder[0] || a->now - c->obs_t > (double)l.duration_s;
    if (!mine && !expired)
        return DRV_EEXIST;
    char ts[40];
    rfc3339(ts, sizeof ts, true);
    return drv_kube_lease_set(obj, c->identity, c->o.lease_s ? c->o.lease_s : 15, ts);
}

static void set_leader(drv_ctrl *c, bool on)
{
    if (c->leader == on)
        return;
    c->leader = on;
    drv_log(on ? DRV_LOG_INFO : DRV_LOG_WARN, "drover run: %s the lease %s/%s as %s",
            on ? "acquired" : "lost", c->lease_ns, c->lease_name, c->identity);
    pthread_mutex_lock(&c->mu);
    c->stats.leader = on;
    c->stats.leaderships += on;
    pthread_mutex_unlock(&c->mu);
    c->dirty = true;
    if (on)
        return;
    /* A follower sends nothing: requests still queued for the binders are dropped, each as a
     * failed answer, so that apply_placed undoes its assumption. (One a binder has already
     * taken is sent; the new leader sees its effect in the API.) */
    pthread_mutex_lock(&c->bmu);
    for (int32_t i = c->bq_head; i < c->nbq; i++) {
        cev e = {.kind = K_PLACED, .t = mono()};
        e.cur.placed.slot = c->bq[i].slot;
        e.cur.placed.node = c->bq[i].node;
        e.cur.placed.create = c->bq[i].create;
        e.cur.placed.sent = e.cur.placed.done = e.t;
        pthread_mutex_lock(&c->mu);
        if (drv_grow(&c->ev, sizeof *c->ev, &c->cap_ev, c->nev + 1) == 0)
            c->ev[c->nev++] = e;
        pthread_mutex_unlock(&c->mu);
        drv_free(c->bq[i].path);
        drv_free(c->bq[i].body);
    }
    c->bq_head = c->nbq = 0;
    pthread_mutex_unlock(&c->bmu);
}

/* Tries to take or renew the lease when it is time to. */
static void lease_tick(drv_ctrl *c, double now)
{
    if (!c->lease_name[0] || now < c->lease_next)
        return;
    c->lease_next = now + (c->o.retry_s > 0 ? c->o.retry_s : 2.0);
    char path[800];
    snprintf(path, sizeof path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", c->lease_ns,
             c->lease_name);
    lease_arg a = {c, now};
    drv_diag d = {{0}};
    long status = 0;
    int rc = drv_kube_update(c->k, path, lease_mutate, &a, 0, NULL, &status, &d);
    if (rc == DRV_EIO && status == 404) {
        /* No lease yet: create it, held by us (a 409 means another was faster). */
        char ts[40], coll[600];
        rfc3339(ts, sizeof ts, true);
        json_t *o =
            json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "coordination.k8s.io/v1", "kind",
                      "Lease", "metadata", "name", c->lease_name, "namespace", c->lease_ns);
        char *body = NULL;
        if (o && drv_kube_lease_set(o, c->identity, c->o.lease_s ? c->o.lease_s : 15, ts) == 0)
            body = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        snprintf(coll, sizeof coll, "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
                 c->lease_ns);
        rc = body ? drv_kube_request(c->k, "POST", coll, NULL, body, &status, NULL, &d)
                  : drv_fail(&d, DRV_ENOMEM, "out of memory");
        free(body);
    }
    if (rc == 0) {
        c->lease_renewed = now;
        set_leader(c, true);
        return;
    }
    if (rc != DRV_EEXIST && rc != DRV_EIO)
        drv_log(DRV_LOG_WARN, "drover run: lease %s/%s: %s", c->lease_ns, c->lease_name, d.msg);
    else if (rc == DRV_EIO)
        drv_log(DRV_LOG_INFO, "drover run: lease: %s", d.msg);
    if (c->leader && now - c->lease_renewed > (c->o.renew_s ? c->o.renew_s : 10))
        set_leader(c, false);
    else if (rc == DRV_EEXIST)
        set_leader(c, false);
}

/* ---- the cycle and what follows it ----------------------------------------------------------- */

static void job_active(const drv_ctrl *c, int32_t j, int32_t active[DRV_NROLES], bool *all_running)
{
    const drv_job *jb = &c->st.jobs[j];
    *all_running = drv_job_complete(jb) && drv_job_wanted(jb) > 0;
    memset(active, 0, sizeof(int32_t) * DRV_NROLES);
    for (int32_t k = 0; k < jb->pod_count; k++) {
        const drv_pod *p = &c->st.pods[jb->pod_base + k];
        const cpod *cp = &c->pods[jb->pod_base + k];
        if (p->node >= 0 && cp->phase == DRV_KPOD_RUNNING)
            active[p->role]++;
        else if (p->node >= 0)
            *all_running = false;
    }
}

typedef struct status_arg {
    const char *phase, *message;
    const int32_t *active;
} status_arg;

static int set_status(json_t *obj, void *arg)
{
    const status_arg *a = arg;
    return drv_kube_trainingjob_set_status(obj, a->phase, a->message, a->active);
}

/* Status and Events are written by the writer thread (below), so that no write to the API
 * delays a scheduling decision; the scheduler thread only says what it wants written. */
static void write_status(drv_ctrl *c, int32_t j, const char *message)
{
    cjob *cj = &c->jobs[j];
    int32_t active[DRV_NROLES];
    bool running;
    job_active(c, j, active, &running);
    if (cj->written == cj->status && !memcmp(active, cj->wrote_active, sizeof active))
        return;
    wstatus w;
    char ns[256], name[256];
    kn_str(c, cj->ns, ns, sizeof ns);
    kn_str(c, cj->name, name, sizeof name);
    snprintf(w.path, sizeof w.path,
             "/apis/drover.dev/v1alpha1/namespaces/%s/trainingjobs/%s/status", ns, name);
    snprintf(w.phase, sizeof w.phase, "%s", st_phase[cj->status]);
    snprintf(w.message, sizeof w.message, "%s", message);
    memcpy(w.active, active, sizeof active);
    char key[32];
    snprintf(key, sizeof key, "s/%d", (int)cj->key);
    pthread_mutex_lock(&c->wmu);
    int32_t old = c->cap_want;
    int rc = drv_grow(&c->want, sizeof *c->want, &c->cap_want, cj->key + 1);
    if (rc == 0 && c->cap_want > old) /* new entries: nothing to write yet */
        memset(c->want + old, 0, sizeof *c->want * (size_t)(c->cap_want - old));
    if (rc == 0) {
        if (!c->want[cj->key])
            c->want[cj->key] = drv_malloc(sizeof w);
        if (c->want[cj->key])
            *c->want[cj->key] = w;
        else
            rc = DRV_ENOMEM;
    }
    pthread_mutex_unlock(&c->wmu);
    if (rc != 0 || drv_workqueue_add(c->wq, key) != 0) {
        drv_log(DRV_LOG_ERROR, "out of memory: status of %s/%s not written", ns, name);
        return;
    }
    cj->written = cj->status;
    memcpy(cj->wrote_active, active, sizeof active);
}

static void write_event(drv_ctrl *c, int32_t j, const char *type, const char *reason,
                        const char *message)
{
    if (c->o.no_events)
        return;
    cjob *cj = &c->jobs[j];
    char ns[256], name[256], now[40];
    kn_str(c, cj->ns, ns, sizeof ns);
    kn_str(c, cj->name, name, sizeof name);
    rfc3339(now, sizeof now, false);
    char *body = drv_kube_event_json(ns, "TrainingJob", "drover.dev/v1alpha1", name, cj->uid, type,
                                     reason, message, now, c->sched_name);
    char *path = drv_malloc(300);
    if (body && path)
        snprintf(path, 300, "/api/v1/namespaces/%s/events", ns);
    pthread_mutex_lock(&c->wmu);
    bool ok = body && path && drv_grow(&c->evq, sizeof *c->evq, &c->cap_evq, c->nevq + 1) == 0;
    if (ok)
        c->evq[c->nevq++] = (struct wevent){path, body};
    pthread_mutex_unlock(&c->wmu);
    if (!ok || drv_workqueue_add(c->wq, "e") != 0) {
        if (!ok) {
            drv_free(body);
            drv_free(path);
        }
        drv_log(DRV_LOG_ERROR, "out of memory: Event %s of %s/%s not written", reason, ns, name);
    }
}

/* The writer's thread: status updates (read-modify-write with retries, back-off on failure)
 * and Events, in the order asked, off the scheduling path. */
static void *writer_main(void *arg)
{
    drv_ctrl *c = arg;
    char key[32];
    while (drv_workqueue_get(c->wq, key, sizeof key, true)) {
        if (!strcmp(key, "e")) {
            pthread_mutex_lock(&c->wmu);
            struct wevent *v = c->evq;
            int32_t n = c->nevq;
            c->evq = NULL;
            c->nevq = c->cap_evq = 0;
            pthread_mutex_unlock(&c->wmu);
            for (int32_t i = 0; i < n; i++) {
                drv_diag d = {{0}};
                long st = 0;
                if (drv_kube_request(c->kw, "POST", v[i].path, NULL, v[i].body, &st, NULL, &d) == 0)
                    count(c, &c->stats.events, 1);
                else {
                    drv_log(DRV_LOG_WARN, "%s", d.msg);
                    count(c, &c->stats.api_errors, 1);
                }
                drv_free(v[i].path);
                drv_free(v[i].body);
            }
            drv_free(v);
            drv_workqueue_done(c->wq, key);
            continue;
        }
        int32_t id = (int32_t)atol(key + 2);
        wstatus w;
        bool have = false;
        pthread_mutex_lock(&c->wmu);
        if (id >= 0 && id < c->cap_want && c->want[id]) {
            w = *c->want[id];
            have = true;
        }
        pthread_mutex_unlock(&c->wmu);
        if (have) {
            status_arg a = {w.phase, w.message, w.active};
            drv_diag d = {{0}};
            long st = 0;
            if (drv_kube_update(c->kw, w.path, set_status, &a, 0, NULL, &st, &d) == 0) {
                count(c, &c->stats.status_writes, 1);
                drv_workqueue_forget(c->wq, key);
            } else if (st == 404) {
                drv_workqueue_forget(c->wq, key); /* the job is gone */
            } else {
                drv_log(DRV_LOG_WARN, "%s", d.msg);
                count(c, &c->stats.api_errors, 1);
                if (drv_workqueue_retries(c->wq, key) < 8)
                    drv_workqueue_retry(c->wq, key);
            }
        }
        drv_workqueue_done(c->wq, key);
    }
    return NULL;
}

/* Why a job waits, in words a kubectl user can act on. */
static void why_pending(const drv_ctrl *c, int32_t j, int32_t pos, int32_t npend, char *buf,
                        size_t n)
{
    const drv_job *jb = &c->st.jobs[j];
    drv_res need = drv_job_demand(jb), free = {0, 0, 0};
    int32_t ok = 0;
    for (int32_t i = 0; i < c->st.nnodes; i++)
        if (c->st.nodes[i].schedulable) {
            ok++;
            drv_res f = drv_node_free(&c->st.nodes[i]);
            if (drv_res_nonneg(f))
                free = drv_res_add(free, f);
        }
    snprintf(buf, n,
             "waiting for room: its gang of %d pods needs cpu %.1f, memory %.1f GiB, gpu %lld "
             "together; %d schedulable nodes have cpu %.1f, memory %.1f GiB, gpu %lld free in "
             "all (queue position %d of %d, profile %s)",
             drv_job_wanted(jb), (double)need.cpu / 1000, (double)need.mem / (1 << 30),
             (long long)need.gpu, ok, (double)free.cpu / 1000, (double)free.mem / (1 << 30),
             (long long)free.gpu, pos, npend, c->prof->name);
}

/* Sends the cycle's decisions: deletions, then bindings (and bound creations) gang by gang,
 * through the binder threads. The state already holds every decision as assumed; failures
 * undo theirs when their answers come (apply_placed). */
static int send_decisions(drv_ctrl *c, const drv_decisions *dv, double t_decide)
{
    int rc = 0;
    /* Deletions first: the room they free is not free until their pods are gone, and the
     * bindings below wait for it (place). */
    for (int32_t i = 0; i < dv->n && rc == 0; i++) {
        const drv_decision *x = &dv->v[i];
        if (x->kind == DRV_EVICT || x->kind == DRV_MIGRATE) {
            /* The pod holds its node's room until it is gone (its ghost, from now rather than
             * from its deletion's watch event); a migrated one is then created on the new node
             * (at once when there was none). */
            cpod *cp = &c->pods[x->pod];
            const drv_pod *sp = &c->st.pods[x->pod];
            cp->want = -1;
            bool had = cp->exists == 1;
            if (delete_pod(c, x->pod) == 0 && had && cp->api_name)
                ghost_set(c, cp, cp->api_name, c->st.jobs[sp->job].role[sp->role].req);
            if (x->kind == DRV_MIGRATE && cp->exists)
                cp->want = x->node;
            else if (x->kind == DRV_MIGRATE)
                rc = place(c, x->pod, x->node);
        } else if ((x->kind == DRV_RESIZE || x->kind == DRV_BATCH) && !c->warned_resize) {
            /* (BATCH comes only for jobs with a calibrated model, which the cluster's jobs have
             * not: the goodput plugin leaves them alone.) */
            c->warned_resize = true;
            drv_log(DRV_LOG_WARN,
                    "profile %s resizes CPU limits or batch sizes; drover run does not send "
                    "these yet (docs/running.md)",
                    c->prof->name);
        }
    }
    int32_t last = -1;
    for (int32_t i = 0; i < dv->n && rc == 0; i++) {
        const drv_decision *x = &dv->v[i];
        if (x->kind != DRV_BIND)
            continue;
        cjob *cj = &c->jobs[x->job];
        if (x->job != last) {
            /* A gang placed from waiting: its latency is measured from the event that made it
             * placeable to its last request, when all its requests went out this cycle. */
            if (last >= 0 && c->jobs[last].lat_armed && c->jobs[last].lat_out == 0)
                c->jobs[last].lat_armed = false;
            last = x->job;
            cj->lat_armed = cj->t_ready >= 0;
            cj->lat_t0 = cj->t_ready;
            cj->lat_decide = t_decide;
            cj->lat_out = cj->lat_pods = 0;
            cj->lat_sent = cj->lat_server = 0;
            cj->t_ready = -1;
        }
        rc = place(c, x->pod, x->node);
    }
    if (last >= 0 && c->jobs[last].lat_armed && c->jobs[last].lat_out == 0)
        c->jobs[last].lat_armed = false;
    return rc;
}

/* Applies a decision to the state as the cycle assumed it. */
static void assume(drv_ctrl *c, const drv_decision *x)
{
    switch (x->kind) {
    case DRV_BIND:
        drv_state_bind(&c->st, x->pod, x->node);
        break;
    case DRV_EVICT:
        drv_state_unbind(&c->st, x->pod);
        break;
    case DRV_SCALE:
        drv_state_set_workers(&c->st, x->job, (int32_t)x->value);
        break;
    case DRV_RESIZE:
        drv_state_set_cpu_limit(&c->st, x->pod, x->value);
        break;
    case DRV_MIGRATE:
        drv_state_unbind(&c->st, x->pod);
        drv_state_bind(&c->st, x->pod, x->node);
        break;
    }
}

/* After a cycle: phases, pods to create or delete, status, Events. */
static int reconcile(drv_ctrl *c, const int32_t *queue_pos)
{
    int32_t npend = c->st.npending;
    DRV_FOR_LIVE(&c->st, j)
    {
        cjob *cj = &c->jobs[j];
        const drv_job *jb = &c->st.jobs[j];
        /* Finished: the chief (worker 0 without one) succeeded, or any pod failed. */
        int lead_role = jb->role[DRV_ROLE_CHIEF].replicas > 0 ? DRV_ROLE_CHIEF : DRV_ROLE_WORKER;
        int32_t lead = drv_job_pod(&c->st, j, lead_role, 0);
        if (cj->status < ST_SUCCEEDED) {
            for (int32_t k = 0; k < jb->pod_count; k++)
                if (c->pods[jb->pod_base + k].phase == DRV_KPOD_FAILED)
                    cj->status = ST_FAILED;
            if (lead >= 0 && c->pods[lead].phase == DRV_KPOD_SUCCEEDED)
                cj->status = ST_SUCCEEDED;
        }
        if (cj->status >= ST_SUCCEEDED) {
            for (int32_t k = 0; k < jb->pod_count; k++) {
                int32_t s = jb->pod_base + k;
                c->pods[s].want = -1;
                if (c->st.pods[s].node >= 0)
                    drv_state_unbind(&c->st, s);
                /* (A deleted TrainingJob's pods also go through the garbage collector, as
                 * their owner is gone: deleting them here too only makes it sooner.) */
                if ((c->pods[s].exists == 1 && !terminal(c->pods[s].phase)) || c->pods[s].inflight)
                    delete_pod(c, s);
            }
            if (!cj->gone)
                write_status(c, j, cj->status == ST_SUCCEEDED ? "finished" : "failed");
            drv_state_set_phase(&c->st, j, DRV_JOB_DONE);
            count(c, &c->stats.jobs_done, 1);
            continue;
        }
        /* Pods above the targets go; the wanted ones of a waiting job are created unbound. */
        for (int32_t k = 0; k < jb->pod_count; k++) {
            int32_t s = jb->pod_base + k;
            const drv_pod *p = &c->st.pods[s];
            cpod *cp = &c->pods[s];
            bool wanted = p->index < jb->target[p->role];
            if (!wanted && cp->exists == 1 && p->node < 0)
                delete_pod(c, s);
            if (cp->exists != 2 && !cp->inflight && cp->want >= 0) {
                int32_t n = cp->want;
                cp->want = -1;
                if (c->st.pods[s].node == n) {
                    int rc = place(c, s, n);
                    if (rc)
                        return rc;
                }
            }
        }
        bool pending = !drv_job_complete(jb) || drv_job_wanted(jb) == 0;
        if (pending && jb->phase != DRV_JOB_PENDING)
            drv_state_set_phase(&c->st, j, DRV_JOB_PENDING);
        if (pending) {
            cj->t_ready = -1; /* a later placement is measured from what frees room, not this */
            if (!cj->created) {
                for (int32_t k = 0; k < jb->pod_count; k++) {
                    int32_t s = jb->pod_base + k;
                    const drv_pod *p = &c->st.pods[s];
                    if (p->index < jb->target[p->role] && !c->pods[s].exists && p->node < 0 &&
                        c->pods[s].want < 0 && !c->pods[s].inflight &&
                        enqueue(c, s, -1, true) == DRV_ENOMEM)
                        return DRV_ENOMEM;
                }
                cj->created = true;
            }
            if (!cj->why_written) {
                char msg[512];
                why_pending(c, j, queue_pos ? queue_pos[j] : 0, npend, msg, sizeof msg);
                write_event(c, j, "Normal", "Waiting", msg);
                cj->why_written = true;
            }
            cj->status = ST_PENDING;
        } else {
            if (cj->why_written || cj->written == ST_NONE) {
                char msg[256];
                snprintf(msg, sizeof msg, "%d pods bound by profile %s", drv_job_wanted(jb),
                         c->prof->name);
                write_event(c, j, "Normal", "Scheduled", msg);
            }
            cj->why_written = false;
            int32_t active[DRV_NROLES];
            bool running;
            job_active(c, j, active, &running);
            if (jb->phase == DRV_JOB_PENDING)
                drv_state_set_phase(&c->st, j, running ? DRV_JOB_RUNNING : DRV_JOB_STARTING);
            else if (jb->phase == DRV_JOB_STARTING && running)
                drv_state_set_phase(&c->st, j, DRV_JOB_RUNNING);
            if (running && c->st.jobs[j].start < 0)
                c->st.jobs[j].start = mono() - c->t0;
            cj->status = running ? ST_RUNNING : ST_PENDING;
        }
        write_status(c, j, cj->status == ST_RUNNING ? "all pods running" : "waiting for pods");
    }
    return 0;
}

/* Attained service of running jobs (Tiresias-style plugins): GPU-seconds, or CPU-seconds for
 * jobs without GPUs, as the simulator counts it. */
static void attain(drv_ctrl *c, double dt)
{
    if (dt <= 0)
        return;
    DRV_FOR_LIVE(&c->st, j)
    {
        drv_job *jb = &c->st.jobs[j];
        if (jb->phase != DRV_JOB_RUNNING)
            continue;
        drv_res held = {0, 0, 0};
        for (int r = 0; r < DRV_NROLES; r++)
            held = drv_res_add(held, drv_res_scale(jb->role[r].req, jb->bound[r]));
        jb->attained += dt * (double)(held.gpu > 0 ? held.gpu * 1000 : held.cpu) / 1000.0;
    }
}

static int cycle(drv_ctrl *c)
{
    double t_start = mono();
    drv_log(DRV_LOG_DEBUG, "cycle: %d nodes, %d live jobs, %d pending", c->st.nnodes, c->st.nlive,
            c->st.npending);
    drv_snapshot snap = {.st = &c->st, .now = mono() - c->t0};
    drv_decisions dv;
    drv_decisions_init(&dv);
    int rc = drv_sched_cycle(c->sched, &snap, &dv);
    double t_decide = mono();
    if (c->o.metrics)
        drv_metric_observe(c->m.cycle_s, t_decide - t_start);
    count(c, &c->stats.cycles, 1);
    if (rc == 0) {
        for (int32_t i = 0; i < dv.n; i++)
            assume(c, &dv.v[i]);
        rc = send_decisions(c, &dv, t_decide);
    }
    /* Queue positions for the Events of waiting jobs: the order the cycle used is the order
     * of the pending set after it (approximately: by submit time). */
    int32_t *pos = NULL;
    if (rc == 0 && c->st.npending > 0 && (pos = drv_calloc((size_t)c->st.njobs, sizeof *pos))) {
        int32_t k = 0;
        DRV_FOR_PENDING(&c->st, j)
        pos[j] = ++k;
    }
    if (rc == 0)
        rc = reconcile(c, pos);
    if (rc == 0)
        publish_targets(c);
    export_metrics(c, true);
    drv_free(pos);
    drv_decisions_fini(&dv);
    return rc;
}

/* A progress sample scraped from a running job's chief. */
static int apply_progress(drv_ctrl *c, const cev *e)
{
    int32_t j = e->key < c->cap_of ? c->job_of[e->key] : -1;
    if (j < 0 || c->st.jobs[j].phase != DRV_JOB_RUNNING)
        return 0;
    drv_job *jb = &c->st.jobs[j];
    double loss = isnan(e->cur.prog.loss) ? jb->loss : e->cur.prog.loss;
    if (drv_job_add_sample(jb, (drv_sample){e->t - c->t0, e->cur.prog.step, loss}) != 0)
        return DRV_ENOMEM;
    jb->steps = e->cur.prog.step;
    jb->loss = loss;
    if (jb->loss0 == 0)
        jb->loss0 = loss;
    pthread_mutex_lock(&c->mu);
    c->stats.samples++;
    c->stats.last_step = jb->steps;
    c->stats.last_loss = loss;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

static int apply_events(drv_ctrl *c, cev *ev, int32_t n)
{
    int rc = 0;
    for (int32_t i = 0; i < n && rc == 0; i++) {
        cev *e = &ev[i];
        rc = e->kind == K_NODE       ? apply_node(c, e)
             : e->kind == K_POD      ? apply_pod(c, e)
             : e->kind == K_PROGRESS ? apply_progress(c, e)
             : e->kind == K_PLACED   ? apply_placed(c, e)
                                     : apply_tj(c, e);
    }
    for (int32_t i = 0; i < n; i++)
        tjrec_free(ev[i].tj);
    return rc;
}

int drv_ctrl_run(drv_ctrl *c, volatile int *stop, drv_diag *d)
{
    static const char *const paths[3] = {"/api/v1/nodes", "/api/v1/pods",
                                         "/apis/drover.dev/v1alpha1/trainingjobs"};
    c->t0 = mono();
    c->stop_inf = 0;
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++) {
        c->args[i] = (infarg){c, i};
        char tjpath[400];
        const char *path = paths[i];
        if (i == K_TJ && c->ns[0]) {
            snprintf(tjpath, sizeof tjpath, "/apis/drover.dev/v1alpha1/namespaces/%s/trainingjobs",
                     c->ns);
            path = tjpath;
        }
        drv_informer_ops ops = {decode, release, on_add, on_update, on_delete};
        rc = drv_informer_new(&c->inf[i], c->kinf[i], path, 0, c->o.watch_timeout_s, &ops,
                              &c->args[i], d);
        if (rc == 0 && pthread_create(&c->thr[i], NULL, inf_main, &c->args[i]) != 0)
            rc = drv_fail(d, DRV_ENOMEM, "cannot start an informer thread");
        if (rc == 0)
            c->started[i] = true;
    }
    for (int i = 0; rc == 0 && i < c->nbinders; i++) {
        if (pthread_create(&c->binders[i].t, NULL, binder_main, &c->binders[i]) != 0)
            rc = drv_fail(d, DRV_ENOMEM, "cannot start a binder thread");
        else
            c->binders[i].started = true;
    }
    if (rc == 0) {
        if (pthread_create(&c->wthr, NULL, writer_main, c) != 0)
            rc = drv_fail(d, DRV_ENOMEM, "cannot start the writer's thread");
        else
            c->wstarted = true;
    }
    if (rc == 0) {
        c->scrape_s = c->prof->period < 1 ? 1 : c->prof->period > 60 ? 60 : c->prof->period;
        if (pthread_create(&c->scr_thr, NULL, scrape_main, c) != 0)
            rc = drv_fail(d, DRV_ENOMEM, "cannot start the progress collector's thread");
        else
            c->scr_started = true;
    }
    cev *batch = NULL;
    int32_t cap_batch = 0;
    bool synced = false;
    double last = mono() - c->t0;
    while (rc == 0 && !*stop) {
        /* 1. wait */
        double now = mono() - c->t0;
        double wake = drv_sched_wake(c->sched);
        double until = synced ? (wake == -INFINITY ? last + c->prof->period : wake) : now + 0.05;
        if (until > now + 0.05)
            until = now + 0.05; /* to notice *stop, and the lease's time */
        pthread_mutex_lock(&c->mu);
        if (c->nev == 0 && until > now) {
            double abs_t;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            abs_t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + (until - now);
            ts.tv_sec = (time_t)abs_t;
            ts.tv_nsec = (long)((abs_t - (double)ts.tv_sec) * 1e9);
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
        cev *tmp = batch;
        int32_t tcap = cap_batch;
        batch = c->ev;
        cap_batch = c->cap_ev;
        int32_t n = c->nev;
        c->ev = tmp;
        c->cap_ev = tcap;
        c->nev = 0;
        pthread_mutex_unlock(&c->mu);
        /* 2. apply */
        if ((rc = apply_events(c, batch, n)) != 0)
            break;
        if (n > 0 && synced)
            export_metrics(c, false); /* binders' answers arrive between cycles */
        if (!synced) {
            synced = drv_informer_synced(c->inf[0]) && drv_informer_synced(c->inf[1]) &&
                     drv_informer_synced(c->inf[2]);
            if (!synced)
                continue;
            pthread_mutex_lock(&c->mu);
            c->stats.synced = true;
            pthread_mutex_unlock(&c->mu);
            if (c->o.metrics)
                drv_metrics_set_ready(c->o.metrics, true, NULL);
            drv_log(DRV_LOG_INFO, "drover run: caches synced (%d nodes, %d jobs); profile %s",
                    c->st.nnodes, c->st.njobs, c->prof->name);
            c->dirty = true;
        }
        /* 3. cycle when something changed, or a plugin asked for the time, and we lead */
        now = mono() - c->t0;
        lease_tick(c, now);
        if (!c->leader)
            continue;
        bool due = c->dirty || (wake == -INFINITY ? now >= last + c->prof->period : now >= wake);
        if (!due || c->st.nlive == 0)
            continue;
        attain(c, now - last);
        last = now;
        c->dirty = false;
        rc = cycle(c);
    }
    c->stop_inf = 1;
    pthread_mutex_lock(&c->bmu);
    c->bstop = true;
    pthread_cond_broadcast(&c->bcv);
    pthread_mutex_unlock(&c->bmu);
    for (int i = 0; i < c->nbinders; i++)
        if (c->binders[i].started) {
            pthread_join(c->binders[i].t, NULL);
            c->binders[i].started = false;
        }
    if (c->wstarted) {
        drv_workqueue_shutdown(c->wq);
        pthread_join(c->wthr, NULL);
        c->wstarted = false;
    }
    if (c->scr_started) {
        pthread_join(c->scr_thr, NULL);
        c->scr_started = false;
    }
    for (int i = 0; i < 3; i++)
        if (c->started[i]) {
            pthread_join(c->thr[i], NULL);
            c->started[i] = false;
        }
    drv_free(batch);
    if (c->o.metrics) {
        drv_metrics_set_ready(c->o.metrics, false, "stopped");
        if (rc != 0)
            drv_metrics_set_healthy(c->o.metrics, false, "the controller failed");
    }
    if (rc == DRV_ENOMEM)
        return drv_fail(d, rc, "drover run: out of memory");
    return rc;
}
