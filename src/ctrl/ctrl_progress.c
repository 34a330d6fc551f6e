/*
 * ctrl_progress.c - `drover run`'s progress collector: every scrape period (the profile's
 * period within 1..60 s) its thread GETs the Prometheus text each running job's chief serves
 * (spec.progress) and hands the step and loss to the scheduler thread as EV_PROGRESS events,
 * which become the job's progress samples as the simulator's are (ctrl_progress.h).
 *
 * Owns: its struct. The scheduler thread builds the next target list aside (progress.next,
 * its own) and swaps it in under progress.mu after each cycle; the collector copies the list
 * under the same lock and scrapes without it. Plain HTTP through libcurl, 2 s per target,
 * at most 1 MiB of text. Touches nothing else but the event queue.
 *
 * Example: a job with spec.progress {port: 9100, path: /metrics, step: train_step} whose
 * chief runs at 10.0.0.7 is scraped at http://10.0.0.7:9100/metrics.
 */
#include "ctrl_progress.h"

#include "drover/clock.h"
#include "kube/kthread.h"

#include <stdio.h>
#include <arpa/inet.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

void ctrl_progress_init(ctrl_progress *pg, double period, ctrl_events *events)
{
    pthread_mutex_init(&pg->mu, NULL);
    pg->period_s = period < 1 ? 1 : period > 60 ? 60 : period;
    pg->events = events;
}

void ctrl_progress_publish(ctrl_progress *pg, const ctrl_mirror *m)
{
    int32_t n = 0;
    DRV_FOR_LIVE(&m->st, j)
    {
        const job_record *jr = &m->jobs[j];
        const drv_job *jb = &m->st.jobs[j];
        if (!jr->port || jb->phase != DRV_JOB_RUNNING)
            continue;
        int lead = jb->role[DRV_ROLE_CHIEF].replicas > 0 ? DRV_ROLE_CHIEF : DRV_ROLE_WORKER;
        int32_t s = drv_job_pod(&m->st, j, lead, 0);
        if (s < 0 || !m->pods[s].ip_family)
            continue;
        if (drv_grow(&pg->next, sizeof *pg->next, &pg->cap_next, n + 1) != 0)
            break;
        scrape_target *t = &pg->next[n++];
        const pod_record *chief = &m->pods[s];
        char ip[64];
        inet_ntop(chief->ip_family == 4 ? AF_INET : AF_INET6, chief->ip, ip, sizeof ip);
        snprintf(t->url, sizeof t->url,
                 chief->ip_family == 4 ? "http://%s:%d%s" : "http://[%s]:%d%s", ip, jr->port,
                 jr->path);
        t->key = jr->key;
        snprintf(t->step, sizeof t->step, "%s", jr->step);
        snprintf(t->loss, sizeof t->loss, "%s", jr->loss);
    }
    pthread_mutex_lock(&pg->mu);
    scrape_target *old = pg->targets;
    int32_t cap = pg->cap;
    pg->targets = pg->next;
    pg->cap = pg->cap_next;
    pg->n = n;
    pg->next = old;
    pg->cap_next = cap;
    pthread_mutex_unlock(&pg->mu);
}

const char *ctrl_progress_fetch(CURL *h, drv_kbuf *b, const scrape_target *t, double *step,
                                double *loss)
{
    b->n = 0;
    if (b->p)
        b->p[0] = 0; /* an empty answer must not read the previous target's text */
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, t->url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, drv_kbuf_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    long code = 0;
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    *step = rc == CURLE_OK && code == 200 && b->p ? prom_value(b->p, t->step) : NAN;
    *loss = isnan(*step) ? NAN : prom_value(b->p, t->loss);
    return rc != CURLE_OK ? curl_easy_strerror(rc)
           : code != 200  ? "not 200 OK"
           : isnan(*step) ? "no step metric"
                          : NULL;
}

/* Scrapes one target; its step and loss become an event. A target that does not answer (or
 * lacks the step metric) is skipped until the next round, and logged at info level. */
static void scrape(ctrl_progress *pg, CURL *h, drv_kbuf *b, const scrape_target *t)
{
    double step, loss;
    const char *why = ctrl_progress_fetch(h, b, t, &step, &loss);
    if (why) {
        drv_log(DRV_LOG_INFO, "progress: %s: %s", t->url, why);
        return;
    }
    ctrl_event e = {.kind = EV_PROGRESS, .key = t->key, .t = drv_clock_mono()};
    e.u.progress.step = step;
    e.u.progress.loss = loss;
    ctrl_events_push(pg->events, &e, "a progress sample");
}

static void *collector_main(void *arg)
{
    ctrl_progress *pg = arg;
    drv_kthread_name("drv-progress");
    CURL *h = curl_easy_init();
    scrape_target *ts = NULL;
    int32_t n = 0, cap = 0;
    drv_kbuf b = {.max = 1u << 20}; /* more than 1 MiB of metrics is refused */
    double next = drv_clock_mono();
    while (h && !atomic_load(&pg->stop)) {
        if (drv_clock_mono() < next) {
            usleep(20000);
            continue;
        }
        next += pg->period_s;
        if (next < drv_clock_mono())
            next = drv_clock_mono() + pg->period_s;
        pthread_mutex_lock(&pg->mu);
        n = 0;
        if (pg->n > 0 && drv_grow(&ts, sizeof *ts, &cap, pg->n) == 0) {
            memcpy(ts, pg->targets, sizeof *ts * (size_t)pg->n);
            n = pg->n;
        }
        pthread_mutex_unlock(&pg->mu);
        for (int32_t i = 0; i < n && !atomic_load(&pg->stop); i++)
            scrape(pg, h, &b, &ts[i]);
    }
    drv_free(b.p);
    drv_free(ts);
    if (h)
        curl_easy_cleanup(h);
    return NULL;
}

int ctrl_progress_start(ctrl_progress *pg, drv_diag *d)
{
    atomic_store(&pg->stop, 0);
    int err = pthread_create(&pg->thread, NULL, collector_main, pg);
    if (err != 0)
        return drv_fail(d, DRV_EIO, "cannot start the progress collector's thread: %s",
                        strerror(err));
    pg->started = true;
    return 0;
}

void ctrl_progress_tell_stop(ctrl_progress *pg)
{
    atomic_store(&pg->stop, 1);
}

void ctrl_progress_stop(ctrl_progress *pg)
{
    ctrl_progress_tell_stop(pg);
    if (pg->started) {
        pthread_join(pg->thread, NULL);
        pg->started = false;
    }
}

void ctrl_progress_fini(ctrl_progress *pg)
{
    drv_free(pg->targets);
    drv_free(pg->next);
    pthread_mutex_destroy(&pg->mu);
}
