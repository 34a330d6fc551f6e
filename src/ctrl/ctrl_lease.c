/*
 * ctrl_lease.c - `drover run`'s leader election through a coordination.k8s.io Lease, on its
 * own thread with its own API client, so that no lease request blocks the scheduler thread
 * (ctrl_lease.h; the rules are client-go's, drv_ctrl_opts says which).
 *
 * Owns: its struct. The lease thread, started once the caches are synced, tries every retry_s
 * to take the lease (when it is free, or its holder has not renewed it for lease_s as measured
 * on our clock from when we saw its last renewal) or to renew it (when ours). When its view
 * changes it pushes an EV_LEASE event; the scheduler thread applies it (ctrl_lease_apply, then
 * the loop): only the leader cycles, and a leader that lost the lease drops the binders' queue.
 * A leader that could not renew for renew_s stops leading. Touches: the event queue, the
 * counters. Its waits run on the monotonic clock, as the expiry it measures does.
 *
 * Example (lease_s 15, renew_s 10, retry_s 2): A holds and renews every 2 s; A stops; B sees
 * the same renewTime for more than 15 s, takes the lease, and its next cycle schedules.
 */
#include "ctrl_lease.h"

#include "drover/clock.h"
#include "kube/json.h"
#include "kube/kthread.h"

#include <stdio.h>
#include <math.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct lease_attempt {
    ctrl_lease *l;
    double now;
} lease_attempt;

/* Takes or renews the lease when it is ours or has expired; DRV_EEXIST when another holds it. */
static int lease_mutate(json_t *obj, void *arg)
{
    lease_attempt *a = arg;
    ctrl_lease *l = a->l;
    drv_klease k;
    drv_diag d = {{0}};
    if (drv_kube_decode_lease(obj, &k, &d) != 0)
        return DRV_EPARSE;
    if (strcmp(k.holder, l->observed_holder) != 0 || strcmp(k.renew, l->observed_renew) != 0) {
        snprintf(l->observed_holder, sizeof l->observed_holder, "%s", k.holder);
        snprintf(l->observed_renew, sizeof l->observed_renew, "%s", k.renew);
        l->observed_t = a->now;
    }
    bool mine = strcmp(k.holder, l->identity) == 0;
    bool expired = !k.holder[0] || a->now - l->observed_t > (double)k.duration_s;
    if (!mine && !expired)
        return DRV_EEXIST;
    char ts[40];
    drv_time_rfc3339(ts, sizeof ts, drv_clock_wall(), true);
    return drv_kube_lease_set(obj, l->identity, (int)l->lease_s, ts);
}

/* No lease yet: creates it, held by us (a 409 means another was faster). */
static int lease_create(ctrl_lease *l, long *status, drv_diag *d)
{
    char ts[40], path[600];
    drv_time_rfc3339(ts, sizeof ts, drv_clock_wall(), true);
    json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "coordination.k8s.io/v1",
                          "kind", "Lease", "metadata", "name", l->name, "namespace", l->ns);
    char *body = NULL;
    if (o && drv_kube_lease_set(o, l->identity, (int)l->lease_s, ts) == 0)
        body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    snprintf(path, sizeof path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases", l->ns);
    int rc = body ? drv_kube_request(l->client, "POST", path, NULL, body, status, NULL, d)
                  : drv_fail(d, DRV_ENOMEM, "out of memory");
    free(body);
    return rc;
}

/* One attempt to take or renew the lease; returns whether we hold it afterwards. A failed
 * request is counted as an API error (another holding the lease is no failure). */
static bool lease_try(ctrl_lease *l, double now)
{
    char path[800];
    snprintf(path, sizeof path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", l->ns,
             l->name);
    lease_attempt a = {l, now};
    drv_diag d = {{0}};
    long status = 0;
    int rc = drv_kube_update(l->client, path, lease_mutate, &a, 0, NULL, &status, &d);
    if (rc == DRV_EIO && status == 404)
        rc = lease_create(l, &status, &d);
    if (rc == 0) {
        l->renewed = now;
        return true;
    }
    if (rc != DRV_EEXIST)
        ctrl_count(l->counters, &l->counters->stats.api_errors, 1);
    if (rc != DRV_EEXIST && rc != DRV_EIO)
        drv_log(DRV_LOG_WARN, "drover run: lease %s/%s: %s", l->ns, l->name, d.msg);
    else if (rc == DRV_EIO)
        drv_log(DRV_LOG_INFO, "drover run: lease: %s", d.msg);
    if (l->holding && now - l->renewed > l->renew_s)
        return false;
    return rc == DRV_EEXIST ? false : l->holding;
}

static void *lease_main(void *arg)
{
    ctrl_lease *l = arg;
    drv_kthread_name("drv-lease");
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        pthread_mutex_unlock(&l->mu);
        double now = drv_clock_mono();
        bool holding = lease_try(l, now);
        if (holding != l->holding) {
            l->holding = holding;
            ctrl_event e = {.kind = EV_LEASE, .t = drv_clock_mono()};
            e.u.lease.leader = holding;
            ctrl_events_push(l->events, &e, "a change of leadership");
        }
        /* the next attempt retry_s after this one began */
        struct timespec ts = ctrl_mono_deadline(now + l->retry_s);
        pthread_mutex_lock(&l->mu);
        if (!l->stop)
            pthread_cond_timedwait(&l->cv, &l->mu, &ts);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* ---- the scheduler thread's side ------------------------------------------------------------ */

bool ctrl_lease_apply(ctrl_lease *l, const ctrl_event *e, bool *leader)
{
    bool on = e->u.lease.leader;
    if (*leader == on)
        return false;
    *leader = on;
    drv_log(on ? DRV_LOG_INFO : DRV_LOG_WARN, "drover run: %s the lease %s/%s as %s",
            on ? "acquired" : "lost", l->ns, l->name, l->identity);
    ctrl_counters_leader(l->counters, on);
    return true;
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

int ctrl_lease_init(ctrl_lease *l, const drv_ctrl_opts *o, const drv_kube_config *cfg,
                    ctrl_events *events, ctrl_counters *counters, drv_diag *d)
{
    pthread_condattr_t a;
    pthread_mutex_init(&l->mu, NULL);
    l->events = events;
    l->counters = counters;
    int rc = pthread_condattr_init(&a);
    if (rc == 0 && (rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC)) == 0)
        rc = pthread_cond_init(&l->cv, &a);
    pthread_condattr_destroy(&a);
    if (rc != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    if (!o->lease_name)
        return 0;
    snprintf(l->ns, sizeof l->ns, "%s", o->lease_namespace ? o->lease_namespace : "drover-system");
    snprintf(l->name, sizeof l->name, "%s", o->lease_name);
    if (o->identity) {
        snprintf(l->identity, sizeof l->identity, "%s", o->identity);
    } else {
        char host[200] = "drover";
        gethostname(host, sizeof host - 1);
        snprintf(l->identity, sizeof l->identity, "%s_%ld", host, (long)getpid());
    }
    l->lease_s = o->lease_s ? o->lease_s : 15;
    l->renew_s = o->renew_s ? o->renew_s : 10;
    l->retry_s = o->retry_s > 0 ? o->retry_s : 2.0;
    return drv_kube_new(&l->client, cfg, d);
}

bool ctrl_lease_elects(const ctrl_lease *l)
{
    return l->client != NULL;
}

int ctrl_lease_start(ctrl_lease *l, drv_diag *d)
{
    if (!l->client || l->started)
        return 0;
    l->stop = false;
    int err = pthread_create(&l->thread, NULL, lease_main, l);
    if (err != 0)
        return drv_fail(d, DRV_EIO, "cannot start the lease's thread: %s", strerror(err));
    l->started = true;
    return 0;
}

void ctrl_lease_stop(ctrl_lease *l)
{
    if (!l->started)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    l->started = false;
}

void ctrl_lease_fini(ctrl_lease *l)
{
    drv_kube_free(l->client);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
}
