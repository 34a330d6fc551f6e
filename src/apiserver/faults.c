/*
 * faults.c - faults a test injects into the test API server, each from its own thread: the next
 * requests failed, chaos drawn at random with a seed, requests held until released, delays,
 * watches dropped, corrupted or expired, and writes whose client went (not applied).
 */
#include "apiserver_int.h"

/* Whether c's User-Agent begins with prefix ("": every request): whom chaos and holds touch. */
bool srv_agent_matches(struct MHD_Connection *c, const char *prefix)
{
    if (!prefix[0])
        return true;
    const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
    return ua && strncmp(ua, prefix, strlen(prefix)) == 0;
}

/* splitmix64: a uniform double in [0, 1) from the server's chaos generator. */
static double chaos_uniform(drv_apiserver *s)
{
    uint64_t z = (s->chaos_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* Under s->mu: whether this request meets a fault, and which. Returns an HTTP status to answer
 * instead of serving it, CHAOS_SLOW to serve it late, or 0 (served as usual; a dropped watch
 * or an expired window, if drawn, has already been applied). */
int srv_chaos_fault(drv_apiserver *s, bool is_watch)
{
    if (chaos_uniform(s) >= s->chaos_rate)
        return 0;
    switch ((int)(chaos_uniform(s) * 6)) {
    case 0:
        s->chaos_count.conflict++;
        return 409;
    case 1:
        s->chaos_count.throttled++;
        return 429;
    case 2:
        s->chaos_count.internal++;
        return 500;
    case 3:
        s->chaos_count.slow++;
        return CHAOS_SLOW;
    case 4:
        s->chaos_count.dropped++;
        s->drop_gen++;
        pthread_cond_broadcast(&s->cv);
        return 0;
    default:
        if (!is_watch) { /* 410 is a watch's answer: a list or write is served late instead */
            s->chaos_count.slow++;
            return CHAOS_SLOW;
        }
        s->chaos_count.gone++;
        s->compacted = s->rv;
        pthread_cond_broadcast(&s->cv);
        return 0;
    }
}

/* Whether c's client has closed its connection (a killed process: its kernel closed the
 * socket) while its request waited: an injected delay or slow fault, or a server thread that a
 * loaded machine did not run. kube-apiserver cancels a request's context when its client goes,
 * so a write not yet committed then is not applied; neither is one here, or a killed
 * controller's binding would land after its successor listed the node as free. */
bool srv_client_gone(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    char b;
    ssize_t n = ci ? recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) : 1;
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* A request drv_apiserver_hold matches waits here (no lock held on return) until the hold is
 * released or the server stops: what lets a test order a race as it chooses, without sleeps.
 * Returns the status to answer instead of serving it (drv_apiserver_release_answer), or 0.
 * hold_on is read under s->mu even with no hold: it is written under it, and every request
 * takes s->mu twice more anyway (its seq, then to be served). held is polled
 * (drv_apiserver_held), so nothing waits on s->cv for it to grow. */
int srv_hold_wait(drv_apiserver *s, struct MHD_Connection *c, const char *method, const char *url)
{
    int answer = 0;
    pthread_mutex_lock(&s->mu);
    if (s->hold_on && !strcmp(method, s->hold_method) && !strcmp(url, s->hold_path) &&
        srv_agent_matches(c, s->hold_agent)) {
        unsigned gen = s->hold_gen;
        s->held++;
        while (s->hold_gen == gen && !s->stopping)
            pthread_cond_wait(&s->cv, &s->mu);
        s->held--;
        answer = s->hold_answer;
    }
    pthread_mutex_unlock(&s->mu);
    return answer;
}

void drv_apiserver_fail_next(drv_apiserver *s, int status, int count, int retry_after_s)
{
    pthread_mutex_lock(&s->mu);
    s->fail_status = status;
    s->fail_count = count;
    s->fail_retry_after = retry_after_s;
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_chaos(drv_apiserver *s, uint64_t seed, double rate, const char *agent_prefix)
{
    pthread_mutex_lock(&s->mu);
    s->chaos_rate = rate;
    s->chaos_rng = seed;
    snprintf(s->chaos_agent, sizeof s->chaos_agent, "%s", agent_prefix ? agent_prefix : "");
    pthread_mutex_unlock(&s->mu);
}

drv_apiserver_faults drv_apiserver_fault_counts(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    drv_apiserver_faults f = s->chaos_count;
    pthread_mutex_unlock(&s->mu);
    return f;
}

void drv_apiserver_drop_watches(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    s->drop_gen++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_corrupt_watches(drv_apiserver *s, const char *line)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->corrupt, sizeof s->corrupt, "%s", line);
    s->corrupt_gen++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_expire(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    s->compacted = s->rv;
    s->expire_gen++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_set_delay(drv_apiserver *s, int ms)
{
    pthread_mutex_lock(&s->mu);
    s->delay_ms = ms;
    pthread_mutex_unlock(&s->mu);
}

void drv_apiserver_hold(drv_apiserver *s, const char *method, const char *path,
                        const char *agent_prefix)
{
    pthread_mutex_lock(&s->mu);
    s->hold_on = true;
    snprintf(s->hold_method, sizeof s->hold_method, "%s", method);
    snprintf(s->hold_path, sizeof s->hold_path, "%s", path);
    snprintf(s->hold_agent, sizeof s->hold_agent, "%s", agent_prefix ? agent_prefix : "");
    pthread_mutex_unlock(&s->mu);
}

int drv_apiserver_held(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->held;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void drv_apiserver_release(drv_apiserver *s)
{
    drv_apiserver_release_answer(s, 0);
}

void drv_apiserver_release_answer(drv_apiserver *s, int status)
{
    pthread_mutex_lock(&s->mu);
    s->hold_on = false;
    s->hold_answer = status;
    s->hold_gen++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

long drv_apiserver_abandoned(drv_apiserver *s)
{
    pthread_mutex_lock(&s->mu);
    long n = s->abandoned;
    pthread_mutex_unlock(&s->mu);
    return n;
}
