/*
 * load.c - the test API server answering like a real one under load (issue 28): a service time
 * per verb and a concurrency limit like API Priority and Fairness (APF), off unless
 * drv_apiserver_opts.load is set.
 *
 * Why: the in-memory server answers a pod creation in ~50 µs of CPU, so a client there is bound
 * by its own CPU and the server's; a real kube-apiserver with etcd takes 15-30 ms for the same
 * write while using little CPU, so a client there is bound by how many requests it keeps in
 * flight (throughput = requests in flight / service time). Without this model a controller that
 * keeps too few requests in flight looks as fast as the server allows on loopback and is half as
 * fast on a cluster.
 *
 * How, per request (watches excepted: APF does not hold a seat for a watch's stream):
 *   1. srv_load_enter: its priority level by User-Agent prefix (level 1 when it matches, else
 *      level 0); a free seat is taken at once if nobody waits; else the request waits in the
 *      level's queue, served in arrival order; a full queue answers 429 with Retry-After: 1 and
 *      the Status kube-apiserver sends ("Too many requests, please try again later."), unserved.
 *   2. srv_load_serve (store lock held on entry and on return, dropped meanwhile): the service
 *      time drawn for its verb (log-normal from p50 and p90; a list: a base plus a cost per
 *      object of its page) is slept with the seat held; then the request is served, so what it
 *      writes lands at the end of its service time, as an etcd commit does.
 *   3. srv_load_leave: the seat is given back, the oldest waiter woken.
 * Bounds: one mutex and condition variable for the model's state (never the store's), a draw is
 * O(1); a waiter is woken at most once per seat given back.
 *
 * Defaults (drv_apiserver_load_defaults), each a knob of drv_apiserver_load:
 *   creates  p50 15 ms, p90 31 ms: issue 28's audit log of a real v1.24 server (p50 15.6 ms,
 *            p90 31 ms); sigma = ln(31/15) / 1.2816 = 0.57.
 *   writes   the same [R]: a patch, update, delete or binding is one etcd transaction as a create.
 *   gets     p50 1 ms, p90 3 ms [R]: one quorum read from etcd on loopback.
 *   lists    2 ms + 15 µs per object [R]: a page of 500 pods then takes ~10 ms, what a list of
 *            recorded-size pods costs the server to encode.
 *   level 0  the `workload-low` priority level every ServiceAccount falls into by default:
 *            600 seats (--max-requests-inflight 400 + --max-mutating-requests-inflight 200)
 *            times its 100 of 245 nominal concurrency shares = 244 seats; queue 300 (its
 *            queueLengthLimit 50 times the handSize 6 queues one flow is dealt).
 *   level 1  off (agent_prefix NULL); docs/running.md's dedicated level when set.
 */
#include "apiserver_int.h"

#include <math.h>

/* z of the 90th percentile of the standard normal distribution */
#define Z90 1.2815515655446004

/* A request's longest modelled service time (kube-apiserver's default request timeout). */
#define MAX_SERVICE_MS 60000.0

void drv_apiserver_load_defaults(drv_apiserver_load *l)
{
    *l = (drv_apiserver_load){
        .create = {15.0, 31.0},
        .write = {15.0, 31.0},
        .get = {1.0, 3.0},
        .list_ms = 2.0,
        .list_item_us = 15.0,
        .level = {{.agent_prefix = NULL, .seats = 244, .queue = 300},
                  {.agent_prefix = NULL, .seats = 244, .queue = 300}},
        .seed = 28,
    };
}

/* splitmix64: a uniform double in (0, 1). */
static double uniform(uint64_t *rng)
{
    uint64_t z = (*rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * 0x1.0p-53;
}

double drv_apiserver_load_draw(uint64_t *rng, drv_apiserver_latency lat)
{
    if (lat.p50_ms <= 0)
        return 0;
    double sigma = lat.p90_ms > lat.p50_ms ? log(lat.p90_ms / lat.p50_ms) / Z90 : 0;
    double u1 = uniform(rng), u2 = uniform(rng); /* (Box-Muller: one standard normal z) */
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
    double ms = lat.p50_ms * exp(sigma * z);
    return ms < MAX_SERVICE_MS ? ms : MAX_SERVICE_MS;
}

void srv_load_init(drv_apiserver *s)
{
    pthread_mutex_init(&s->load_mu, NULL);
    pthread_cond_init(&s->load_cv, NULL);
}

/* What is wrong with l, into d (DRV_EINVAL), or 0. */
static int check_model(const drv_apiserver_load *l, drv_diag *d)
{
    const drv_apiserver_latency *lat[] = {&l->create, &l->write, &l->get};
    for (size_t i = 0; i < sizeof lat / sizeof *lat; i++)
        if (!(lat[i]->p50_ms >= 0 && lat[i]->p90_ms >= lat[i]->p50_ms &&
              lat[i]->p90_ms <= MAX_SERVICE_MS))
            return drv_fail(d, DRV_EINVAL,
                            "apiserver load: a service time needs 0 <= p50 <= p90 <= %.0f ms "
                            "(got p50 %g, p90 %g)",
                            MAX_SERVICE_MS, lat[i]->p50_ms, lat[i]->p90_ms);
    if (!(l->list_ms >= 0 && l->list_item_us >= 0))
        return drv_fail(d, DRV_EINVAL, "apiserver load: list costs must be >= 0");
    for (int i = 0; i < 2; i++) {
        const drv_apiserver_level *v = &l->level[i];
        if ((i == 0 || v->agent_prefix) && (v->seats < 1 || v->seats > MAX_LOAD_SEATS ||
                                            v->queue < 0 || v->queue > MAX_LOAD_QUEUE))
            return drv_fail(d, DRV_EINVAL,
                            "apiserver load: level %d: seats must be 1..%d and queue 0..%d "
                            "(got %d, %d)",
                            i, MAX_LOAD_SEATS, MAX_LOAD_QUEUE, v->seats, v->queue);
    }
    return 0;
}

int drv_apiserver_set_load(drv_apiserver *s, const drv_apiserver_load *l, drv_diag *d)
{
    int rc = l ? check_model(l, d) : 0;
    if (rc)
        return rc;
    pthread_mutex_lock(&s->load_mu);
    s->load_on = l != NULL;
    if (l) {
        s->load = *l;
        s->load_rng = l->seed;
        for (int i = 0; i < 2; i++) {
            struct load_level *lv = &s->lv[i];
            lv->on = i == 0 || l->level[i].agent_prefix;
            lv->seats = l->level[i].seats;
            lv->queue = l->level[i].queue;
            snprintf(lv->agent, sizeof lv->agent, "%s",
                     i == 1 && lv->on ? l->level[i].agent_prefix : "");
        }
    }
    pthread_cond_broadcast(&s->load_cv); /* (more seats: waiters may go) */
    pthread_mutex_unlock(&s->load_mu);
    return 0;
}

void srv_load_fini(drv_apiserver *s)
{
    pthread_cond_destroy(&s->load_cv);
    pthread_mutex_destroy(&s->load_mu);
}

/* Wakes every request waiting for a seat: the server is stopping, they are served at once. */
void srv_load_stop(drv_apiserver *s)
{
    pthread_mutex_lock(&s->load_mu);
    s->load_stopping = true;
    pthread_cond_broadcast(&s->load_cv);
    pthread_mutex_unlock(&s->load_mu);
}

int srv_load_enter(drv_apiserver *s, struct MHD_Connection *c, struct resp *r)
{
    const char *wq = srv_qarg(c, "watch");
    if (wq && (!strcmp(wq, "1") || !strcmp(wq, "true")))
        return LOAD_NONE;
    pthread_mutex_lock(&s->load_mu);
    if (!s->load_on) {
        pthread_mutex_unlock(&s->load_mu);
        return LOAD_NONE;
    }
    int level = s->lv[1].on && srv_agent_matches(c, s->lv[1].agent) ? 1 : 0;
    struct load_level *lv = &s->lv[level];
    if (lv->in_use >= lv->seats || lv->waiting > 0) {
        if (lv->waiting >= lv->queue) {
            lv->rejected++;
            pthread_mutex_unlock(&s->load_mu);
            srv_set_status(r, 429, "TooManyRequests", NULL, NULL, NULL, true,
                           "Too many requests, please try again later.");
            r->retry_after = 1;
            return LOAD_REJECTED;
        }
        uint64_t ticket = lv->next_ticket++;
        lv->waiting++;
        lv->queued++;
        while (!s->load_stopping && s->load_on &&
               (ticket != lv->next_grant || lv->in_use >= lv->seats))
            pthread_cond_wait(&s->load_cv, &s->load_mu);
        lv->waiting--;
        lv->next_grant++;
        pthread_cond_broadcast(&s->load_cv); /* (the next ticket may fit a free seat too) */
    }
    lv->in_use++;
    lv->admitted++;
    if (lv->in_use > lv->max_in_use)
        lv->max_in_use = lv->in_use;
    pthread_mutex_unlock(&s->load_mu);
    return level;
}

/* The verb a routed request is modelled as (rt NULL: discovery, a GET). */
static int verb_of(const char *method, const struct route *rt)
{
    if (!strcmp(method, "GET"))
        return rt && !rt->name[0] ? DRV_LOAD_LIST : DRV_LOAD_GET;
    if (!strcmp(method, "POST") && !(rt && !strcmp(rt->sub, "binding")))
        return DRV_LOAD_CREATE;
    return DRV_LOAD_WRITE;
}

void srv_load_serve(drv_apiserver *s, int level, struct MHD_Connection *c, const char *method,
                    const struct route *rt)
{
    if (level < 0)
        return;
    int verb = verb_of(method, rt);
    size_t items = 0;
    if (verb == DRV_LOAD_LIST && rt->rt >= 0) { /* (s->mu held: the store's size) */
        items = json_object_size(s->store[rt->rt]);
        const char *lim = srv_qarg(c, "limit");
        long l = lim ? strtol(lim, NULL, 10) : 0;
        if (l > 0 && (size_t)l < items)
            items = (size_t)l;
    }
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->load_mu);
    const drv_apiserver_load *m = &s->load;
    double ms = verb == DRV_LOAD_LIST    ? m->list_ms + m->list_item_us * 1e-3 * (double)items
                : verb == DRV_LOAD_GET   ? drv_apiserver_load_draw(&s->load_rng, m->get)
                : verb == DRV_LOAD_WRITE ? drv_apiserver_load_draw(&s->load_rng, m->write)
                                         : drv_apiserver_load_draw(&s->load_rng, m->create);
    s->lv[level].served[verb]++;
    s->lv[level].ms[verb] += ms;
    pthread_mutex_unlock(&s->load_mu);
    if (ms > 0) {
        long ns = (long)(ms * 1e6);
        struct timespec t = {ns / 1000000000L, ns % 1000000000L};
        while (nanosleep(&t, &t) != 0 && errno == EINTR)
            ;
    }
    pthread_mutex_lock(&s->mu);
}

void srv_load_leave(drv_apiserver *s, int level)
{
    if (level < 0)
        return;
    pthread_mutex_lock(&s->load_mu);
    s->lv[level].in_use--;
    pthread_cond_broadcast(&s->load_cv);
    pthread_mutex_unlock(&s->load_mu);
}

drv_apiserver_load_stats drv_apiserver_load_counts(drv_apiserver *s, int level)
{
    drv_apiserver_load_stats st = {0};
    if (level < 0 || level > 1)
        return st;
    pthread_mutex_lock(&s->load_mu);
    const struct load_level *lv = &s->lv[level];
    st.in_use = lv->in_use;
    st.waiting = lv->waiting;
    st.max_in_use = lv->max_in_use;
    st.admitted = lv->admitted;
    st.queued = lv->queued;
    st.rejected = lv->rejected;
    for (int i = 0; i < 4; i++) {
        st.served[i] = lv->served[i];
        st.modelled_ms[i] = lv->ms[i];
    }
    pthread_mutex_unlock(&s->load_mu);
    return st;
}
