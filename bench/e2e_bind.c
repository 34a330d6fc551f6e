/*
 * e2e_bind - end-to-end placement rate of `drover run` against the API server's ceiling for the
 * same requests, both on the in-memory test API server on loopback, in one run.
 *
 * The cluster: --nodes nodes and --existing pods already bound to them (other schedulers' pods,
 * 100m CPU each), then --jobs TrainingJobs of --workers workers each (1 CPU), all submitted
 * before the controller starts, so that the run measures what a restart or a burst costs:
 *
 *   drover    drv_ctrl_new (the process's start) to the last pod placed: listing and syncing
 *             the informers, the cycles, and the binder threads' requests;
 *   ceiling   a plain client sends exactly the requests Drover sent in that time: first the
 *             lists its informers make (nodes, pods, TrainingJobs, PriorityClasses, one thread
 *             each, pages of 500 with continue tokens; the bytes are read, not decoded) and
 *             its three discovery GETs; then, with --threads threads, the writes Drover sent
 *             until its last pod was placed, byte for byte as the server received them (path,
 *             query, content type, body: the pods with their peer variables, the Services, the
 *             TrainingJob status patches, without their resourceVersion precondition:
 *             strip_preconditions), in the order it received them, each thread taking the
 *             next write not yet taken as soon as its last one is answered (a client with a
 *             shared work queue: every thread busy to the end), a pod's binding only once its
 *             creation is answered (--bind-mode-binding). Like Drover's informers, each list
 *             is followed by a watch from its resourceVersion, kept open to the end: the
 *             server streams every
 *             creation and patch to it as it does to Drover (read, not decoded). From its first
 *             request to its last answer; both parts are reported: "lists s" and "creates s".
 *             (Keeping Drover's writes costs the server a copy of each body during Drover's
 *             run, ~1 µs a write, which the ceiling's run does not pay.)
 *
 * Each is measured on a fresh server holding the same objects, Drover first (the ceiling
 * replays its writes). Reported: seconds, Drover's time as a fraction of the ceiling's
 * (ceiling s / drover s: 1 is as fast as the server allows), Drover's time to sync, its first
 * decision after the caches were synced (the time to its first request's write on the server,
 * polled every millisecond), and the binding phase's fraction (creates s / Drover's time from
 * sync to the last pod placed). Under each rep, the CPU seconds the process spent in each
 * phase (the server is in this process: its time is included), which says what bounds a phase
 * on this machine: CPU s close to 1 x its wall time is one core's worth (a serial server or
 * client), close to the number of cores is the machine. Beside it, Drover's own part: the CPU of
 * its threads (those named drv-*, the loop's thread named drv-loop here; from
 * /proc/self/task/.../schedstat, nanoseconds), by phase, which the machine's other load moves
 * much less than wall times: what Drover takes from the cores the server needs. (A thread that
 * has ended by the phase's end is missing from it: the pager's page fetchers, a few ms.)
 *
 * Drover runs with `drover run`'s default API budget (--kube-api-qps, --kube-api-burst), or
 * --qps/--burst: a limiter that held it below the server's pace would show here.
 *
 * --real-objects 1: the nodes and existing pods are recorded-size objects (the recorded Node
 * and Pod of tests/fixtures/k8s, 1.6 and 2.5 kB with managedFields, volumes, nodeInfo..., given
 * the plain ones' names, labels, resources and state) instead of ~300-byte ones: what listing
 * and syncing cost on a real cluster's objects.
 *
 * --server-model 1: both runs meet a server that answers like a real one under load (the test
 * server's load model, src/apiserver/README.md; its defaults: creates and patches p50 15 ms,
 * p90 31 ms, lists 2 ms + 15 µs an object, 244 seats), switched on once the cluster is in the
 * store: what bounds both is then how many requests each keeps in flight. Under each rep, the
 * requests in flight on average during the writes (the service time the server drew for the
 * writes, summed, over the phase's wall time) and at most, and the 429s; --seats N gives the
 * priority level N seats instead; --latency-scale F multiplies every service time of the model
 * (F 3.33: creates p50 50 ms), a slower server. --binders N: Drover's binder threads, the most
 * requests it keeps in flight (default: `drover run`'s, DRV_CTRL_DEF_BINDERS; how many it does
 * keep is sized from their latency, src/kube/limiter.c: its limit at the end, and the most it had
 * in flight, are printed under each rep). --bind-mode-binding 1: Drover runs as `drover run
 * --bind-mode=binding` (each pod created unbound, then bound through pods/binding: two requests a
 * pod), and the plain client replays those requests; the row then measures the mode's cost against
 * the default's.
 *
 * usage: e2e_bind [--nodes N] [--existing N] [--jobs N] [--workers N] [--threads N]
 *                 [--policy NAME] [--reps N] [--qps N] [--burst N] [--real-objects 0|1]
 *                 [--server-model 0|1] [--seats N] [--latency-scale F] [--binders N]
 *                 [--bind-mode-binding 0|1]
 */
#include "apiserver.h"
#include "drover/controller.h"
#include "drover/policy.h"
#include "json.h"
#include "recorded.h"

#include <stdatomic.h>
#include <curl/curl.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct params {
    int nodes, existing, jobs, workers, threads, reps;
    int binders;    /* Drover's binder threads (--binders; 0: drover run's default) */
    int binding;    /* --bind-mode-binding 1: Drover creates pods unbound, then binds them */
    int qps, burst; /* Drover's API budget (the ceiling's client has none) */
    const char *policy;
    /* --real-objects 1: the nodes and existing pods are the recorded Node and Pod of
     * tests/fixtures/k8s (1.6 and 2.5 kB of JSON: managedFields, volumes, nodeInfo...) with the
     * plain ones' names, labels, resources and state; the texts, NULL: the plain objects */
    const char *real_node, *real_pod;
    /* the ceiling's requests: the writes Drover sent until its last pod was placed, as the
     * server received them (drv_apiserver_writes), replayed in that order */
    const drv_apiserver_write *writes;
    /* --server-model 1: the load model both runs meet, once the cluster is stored; NULL: none */
    const drv_apiserver_load *model;
} params;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of the whole process (every thread, the server's included) so far. */
static double cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* CPU seconds of Drover's threads so far: those whose name starts with "drv-" (Linux's
 * schedstat; 0 where /proc is not there). Reads a few files per thread: called at a phase's
 * edges only. */
static double drover_cpu(void)
{
    DIR *dir = opendir("/proc/self/task");
    if (!dir)
        return 0;
    double sum = 0;
    for (struct dirent *de; (de = readdir(dir));) {
        if (de->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        bool ours = fgets(comm, sizeof comm, f) && !strncmp(comm, "drv-", 4);
        fclose(f);
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", de->d_name);
        unsigned long long ns = 0;
        if (ours && (f = fopen(path, "r"))) {
            if (fscanf(f, "%llu", &ns) == 1)
                sum += (double)ns * 1e-9;
            fclose(f);
        }
    }
    closedir(dir);
    return sum;
}

static void die(const char *what, const drv_diag *d)
{
    fprintf(stderr, "e2e_bind: %s: %s\n", what, d ? d->msg : "");
    exit(1);
}

/* ---- requests sent by several threads ------------------------------------------------------ */

/* Builds request i's path and body; returns the method. (NULL in a sender: it replays
 * params.writes[i] as recorded, content type included.) */
typedef const char *(*request_fn)(const params *p, int i, char *path, size_t np, char *body,
                                  size_t nb);

typedef struct sender {
    const params *p;
    request_fn make;
    char *url;
    int to;           /* requests below to */
    atomic_int *next; /* the next request no thread has taken (shared by the senders) */
    /* replaying: request i is sent once request after[i] is answered (-1: at once): a pod's
     * binding after its creation, as the client that sent them did; answered[i] says so */
    const int *after;
    atomic_int *answered;
} sender;

static void *send_some(void *arg)
{
    sender *s = arg;
    drv_diag d = {{0}};
    drv_kube_config cfg = {.server = s->url, .qps = 1e6, .burst = 1000000};
    drv_kube *k;
    if (drv_kube_new(&k, &cfg, &d) != 0)
        die("client", &d);
    enum { BODY = 4096 };
    char *b = malloc(BODY), path[256];
    if (!b)
        die("out of memory", NULL);
    for (int i; (i = atomic_fetch_add(s->next, 1)) < s->to;) {
        const drv_apiserver_write *w = s->make ? NULL : &s->p->writes[i];
        while (s->after && s->after[i] >= 0 && !atomic_load(&s->answered[s->after[i]]))
            usleep(100);
        const char *method = w ? w->method : s->make(s->p, i, path, sizeof path, b, BODY);
        const char *ctype = w                         ? w->content_type
                            : strcmp(method, "PATCH") ? "application/json"
                                                      : "application/merge-patch+json";
        long st;
        if (drv_kube_request(k, method, w ? w->path : path, ctype[0] ? ctype : NULL,
                             w ? w->body : b, &st, NULL, &d) != 0 ||
            st >= 300) {
            fprintf(stderr, "e2e_bind: %s %s: %ld %s\n", method, w ? w->path : path, st, d.msg);
            exit(1);
        }
        if (s->answered)
            atomic_store(&s->answered[i], 1);
    }
    free(b);
    drv_kube_free(k);
    return NULL;
}

/* For each of the n writes, the earlier one it must wait for: a binding (POST .../NAME/binding)
 * its pod's creation (a POST to the pods of that namespace whose metadata.name is NAME); -1 for
 * the rest. drv_malloc'd. O(bindings x creations) string comparisons. */
static int *dependencies(const drv_apiserver_write *w, int n)
{
    int *after = malloc(sizeof *after * (size_t)(n > 0 ? n : 1));
    char **name = calloc((size_t)(n > 0 ? n : 1), sizeof *name);
    if (!after || !name)
        die("out of memory", NULL);
    for (int i = 0; i < n; i++) {
        after[i] = -1;
        size_t len = strlen(w[i].path);
        if (!strcmp(w[i].method, "POST") && len > 5 && !strcmp(w[i].path + len - 5, "/pods")) {
            json_t *o = json_loads(w[i].body, 0, NULL);
            const char *nm =
                json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
            char full[600];
            snprintf(full, sizeof full, "%s/%s/binding", w[i].path, nm ? nm : "");
            name[i] = strdup(full);
            json_decref(o);
        } else if (!strcmp(w[i].method, "POST") && len > 8 &&
                   !strcmp(w[i].path + len - 8, "/binding")) {
            for (int k = i - 1; k >= 0 && after[i] < 0; k--)
                if (name[k] && !strcmp(name[k], w[i].path))
                    after[i] = k;
        }
    }
    for (int i = 0; i < n; i++)
        free(name[i]);
    free(name);
    return after;
}

/* Sends requests 0..n-1 with `threads` threads (replaying p->writes: each binding after its
 * pod's creation); returns the wall time. */
static double send_all(const params *p, char *url, request_fn make, int n, int threads)
{
    pthread_t t[64];
    sender s[64];
    if (threads > 64)
        threads = 64;
    atomic_int next = 0;
    int *after = make ? NULL : dependencies(p->writes, n);
    atomic_int *answered = make ? NULL : calloc((size_t)(n > 0 ? n : 1), sizeof *answered);
    if (!make && !answered)
        die("out of memory", NULL);
    double t0 = now();
    for (int i = 0; i < threads; i++) {
        s[i] = (sender){.p = p,
                        .make = make,
                        .url = url,
                        .to = n,
                        .next = &next,
                        .after = after,
                        .answered = answered};
        pthread_create(&t[i], NULL, send_some, &s[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    double wall = now() - t0;
    free(after);
    free(answered);
    return wall;
}

/* ---- the objects --------------------------------------------------------------------------- */

/* The recorded object's text with the plain one's parts set by edit, into body (nb bytes). */
static void real_body(const char *text, int i, const params *p,
                      void (*edit)(json_t *, int, const params *), char *body, size_t nb)
{
    json_t *o = json_loads(text, 0, NULL);
    if (!o)
        die("--real-objects: the recorded object", NULL);
    json_t *meta = json_object_get(o, "metadata");
    json_object_del(meta, "uid");
    json_object_del(meta, "resourceVersion");
    json_object_del(meta, "creationTimestamp");
    edit(o, i, p);
    size_t k = json_dumpb(o, body, nb, JSON_COMPACT);
    if (k == 0 || k >= nb)
        die("--real-objects: a body longer than the buffer", NULL);
    body[k] = 0;
    json_decref(o);
}

/* The plain node's name, zone and rack labels, allocatable and Ready condition (the recorded
 * one's other labels kept but its hostname: alike nodes stay alike, as the plain ones). */
static void edit_node(json_t *o, int i, const params *p)
{
    (void)p;
    json_t *meta = json_object_get(o, "metadata"), *st = json_object_get(o, "status");
    json_t *labels = json_object_get(meta, "labels");
    json_object_set_new(meta, "name", json_sprintf("node-%d", i));
    json_object_del(labels, "kubernetes.io/hostname");
    json_object_set_new(labels, "topology.kubernetes.io/zone", json_sprintf("zone-%d", i % 4));
    json_object_set_new(labels, "drover.dev/rack", json_sprintf("rack-%d", i / 20));
    json_object_set_new(
        st, "allocatable",
        json_pack("{s:s, s:s, s:s}", "cpu", "32", "memory", "128Gi", "pods", "110"));
    json_object_set_new(st, "conditions",
                        json_pack("[{s:s, s:s}]", "type", "Ready", "status", "True"));
}

/* The plain pod's name, namespace, labels, node, scheduler, request and phase (the recorded one's
 * volumes, tolerations, managedFields... kept). */
static void edit_pod(json_t *o, int i, const params *p)
{
    json_t *meta = json_object_get(o, "metadata"), *spec = json_object_get(o, "spec");
    json_object_set_new(meta, "name", json_sprintf("other-%d", i));
    json_object_set_new(meta, "namespace", json_string("default"));
    json_object_set_new(meta, "labels", json_pack("{s:s}", "app", "other"));
    json_object_set_new(spec, "nodeName", json_sprintf("node-%d", i % p->nodes));
    /* (the recorded pod was Drover's own: these are other schedulers', as the plain ones) */
    json_object_set_new(spec, "schedulerName", json_string("default-scheduler"));
    json_t *c0 = json_array_get(json_object_get(spec, "containers"), 0);
    json_object_set_new(c0, "resources",
                        json_pack("{s:{s:s, s:s}}", "requests", "cpu", "100m", "memory", "256Mi"));
    json_object_set_new(json_object_get(o, "status"), "phase", json_string("Running"));
}

static const char *node_req(const params *p, int i, char *path, size_t np, char *body, size_t nb)
{
    snprintf(path, np, "/api/v1/nodes");
    if (p->real_node) {
        real_body(p->real_node, i, p, edit_node, body, nb);
        return "POST";
    }
    snprintf(body, nb,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%d\","
             "\"labels\":{\"topology.kubernetes.io/zone\":\"zone-%d\",\"drover.dev/rack\":"
             "\"rack-%d\"}},\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"32\","
             "\"memory\":\"128Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"True\"}]}}",
             i, i % 4, i / 20);
    return "POST";
}

/* Lifts the not-ready taint the API server puts on a new node (the node lifecycle
 * controller's part). */
static const char *untaint_req(const params *p, int i, char *path, size_t np, char *body, size_t nb)
{
    (void)p;
    snprintf(path, np, "/api/v1/nodes/node-%d", i);
    snprintf(body, nb, "{\"spec\":{\"taints\":null}}");
    return "PATCH";
}

static const char *existing_req(const params *p, int i, char *path, size_t np, char *body,
                                size_t nb)
{
    snprintf(path, np, "/api/v1/namespaces/default/pods");
    if (p->real_pod) {
        real_body(p->real_pod, i, p, edit_pod, body, nb);
        return "POST";
    }
    snprintf(body, nb,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"other-%d\","
             "\"namespace\":\"default\",\"labels\":{\"app\":\"other\"}},\"spec\":{"
             "\"nodeName\":\"node-%d\",\"containers\":[{\"name\":\"c\",\"image\":\"t\","
             "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"256Mi\"}}}]},"
             "\"status\":{\"phase\":\"Running\"}}",
             i, i % p->nodes);
    return "POST";
}

static const char *job_req(const params *p, int i, char *path, size_t np, char *body, size_t nb)
{
    snprintf(path, np, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs");
    snprintf(body, nb,
             "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":"
             "{\"name\":\"job-%d\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{"
             "\"Worker\":{\"replicas\":%d,\"template\":{\"spec\":{\"schedulerName\":"
             "\"drover\",\"containers\":[{\"name\":\"main\",\"image\":\"t\",\"resources\":{"
             "\"requests\":{\"cpu\":\"1\",\"memory\":\"4Gi\"}}}]}}}}}}",
             i, p->workers);
    return "POST";
}

/* A fresh server holding the nodes, the existing pods and the jobs. */
static drv_apiserver *cluster(const params *p, char *url, size_t nu)
{
    drv_diag d = {{0}};
    drv_apiserver *srv;
    drv_apiserver_opts so = {
        .fixture_dir = "tests/fixtures/k8s", .crd_installed = true, .window = 1000000};
    if (drv_apiserver_start(&srv, &so, &d) != 0)
        die("test API server", &d);
    snprintf(url, nu, "http://127.0.0.1:%u", drv_apiserver_port(srv));
    send_all(p, url, node_req, p->nodes, 8);
    send_all(p, url, untaint_req, p->nodes, 8);
    send_all(p, url, existing_req, p->existing, 8);
    send_all(p, url, job_req, p->jobs, 8);
    if (p->model && drv_apiserver_set_load(srv, p->model, &d) != 0)
        die("--server-model", &d);
    return srv;
}

/* The load model's account of a phase: requests in flight on average for the writes (their
 * drawn service time over the phase's wall time), the most seats taken, 429s. */
typedef struct in_flight {
    double mean;
    int max;
    long rejected;
} in_flight;

static double write_ms(const drv_apiserver_load_stats *st)
{
    return st->modelled_ms[DRV_LOAD_CREATE] + st->modelled_ms[DRV_LOAD_WRITE];
}

static in_flight in_flight_of(drv_apiserver *srv, const drv_apiserver_load_stats *before,
                              double wall_s)
{
    drv_apiserver_load_stats st = drv_apiserver_load_counts(srv, 0);
    return (in_flight){.mean = wall_s > 0 ? (write_ms(&st) - write_ms(before)) / (wall_s * 1e3) : 0,
                       .max = st.max_in_use,
                       .rejected = st.rejected - before->rejected};
}

/* ---- a plain paged list -------------------------------------------------------------------- */

/* The head of a page (where metadata.continue is: the API server writes metadata before items),
 * and its size. */
typedef struct page {
    char head[4096];
    size_t n;
} page;

static size_t keep_head(char *data, size_t size, size_t nmemb, void *arg)
{
    page *pg = arg;
    size_t n = size * nmemb;
    if (pg->n < sizeof pg->head - 1) {
        size_t k = n < sizeof pg->head - 1 - pg->n ? n : sizeof pg->head - 1 - pg->n;
        memcpy(pg->head + pg->n, data, k);
        pg->head[pg->n + k] = 0;
    }
    pg->n += n;
    return n;
}

/* The lists' threads: each lists, says so, then watches until told to stop. */
typedef struct listing {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int listed;         /* lists complete */
    _Atomic int stop;   /* the watches end (read by curl callbacks on the listers' threads) */
    long watched_bytes; /* what the watches received, all of them */
} listing;

typedef struct lister {
    const char *url, *path;
    bool discovery; /* also sends Drover's three discovery GETs, as Drover does at start */
    listing *ls;
} lister;

static size_t count_bytes(char *data, size_t size, size_t nmemb, void *arg)
{
    (void)data;
    *(long *)arg += (long)(size * nmemb);
    return size * nmemb;
}

static int watch_stop(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t e)
{
    (void)a, (void)b, (void)c, (void)e;
    return ((const listing *)arg)->stop ? 1 : 0;
}

/* Watches path from rv as an informer does, the bytes read and not decoded, until ls->stop. */
static void watch_plain(const lister *l, const char *rv)
{
    CURL *h = curl_easy_init();
    if (!h)
        die("curl", NULL);
    char url[2048];
    long bytes = 0;
    snprintf(url, sizeof url, "%s%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=300%s%s",
             l->url, l->path, rv[0] ? "&resourceVersion=" : "", rv);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count_bytes);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &bytes);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watch_stop);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, l->ls);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    CURLcode cc = curl_easy_perform(h);
    if (cc != CURLE_ABORTED_BY_CALLBACK && cc != CURLE_OK)
        die(l->path, NULL);
    curl_easy_cleanup(h);
    pthread_mutex_lock(&l->ls->mu);
    l->ls->watched_bytes += bytes;
    pthread_mutex_unlock(&l->ls->mu);
}

/* One plain GET, the answer read and dropped. */
static void get_plain(CURL *h, const char *base, const char *path)
{
    char url[2048];
    page pg = {.n = 0};
    snprintf(url, sizeof url, "%s%s", base, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &pg);
    long code = 0;
    if (curl_easy_perform(h) != CURLE_OK ||
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK || code != 200)
        die(path, NULL);
}

/* Lists path in pages of 500 as Drover's informers do, reading the bytes without decoding
 * them: only the continue token and the resourceVersion are picked out of each page's head;
 * then watches from the list's resourceVersion. */
static void *list_plain(void *arg)
{
    const lister *l = arg;
    CURL *h = curl_easy_init();
    if (!h)
        die("curl", NULL);
    char url[2048], cont[1024] = "", rv[64] = "";
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep_head);
    if (l->discovery) /* (Drover: PodGroups served? Queues served? pods/resize served?) */
        get_plain(h, l->url, "/apis");
    do {
        page pg = {.n = 0};
        snprintf(url, sizeof url, "%s%s?limit=500%s%s", l->url, l->path,
                 cont[0] ? "&continue=" : "", cont);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &pg);
        long code = 0;
        if (curl_easy_perform(h) != CURLE_OK ||
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK || code != 200)
            die(l->path, NULL);
        const char *c = strstr(pg.head, "\"continue\":\"");
        cont[0] = 0;
        if (c)
            snprintf(cont, sizeof cont, "%.*s", (int)strcspn(c + 12, "\""), c + 12);
        const char *r = strstr(pg.head, "\"resourceVersion\":\"");
        if (r)
            snprintf(rv, sizeof rv, "%.*s", (int)strcspn(r + 19, "\""), r + 19);
    } while (cont[0]);
    if (l->discovery) {
        get_plain(h, l->url, "/apis/drover.dev/v1alpha1");
        get_plain(h, l->url, "/api/v1");
    }
    curl_easy_cleanup(h);
    pthread_mutex_lock(&l->ls->mu);
    l->ls->listed++;
    pthread_cond_broadcast(&l->ls->cv);
    pthread_mutex_unlock(&l->ls->mu);
    watch_plain(l, rv);
    return NULL;
}

/* Drover's status patches open with their precondition, {"metadata":{"resourceVersion":"N"},
 * a version of Drover's run's server: the ceiling's server, written from several threads in
 * another order, gives its objects other versions, and would refuse them (409). They are sent
 * without it (the same work for the server but one string comparison). */
static void strip_preconditions(drv_apiserver_write *w, int32_t n)
{
    static const char head[] = "{\"metadata\":{\"resourceVersion\":\"";
    for (int32_t i = 0; i < n; i++) {
        if (strcmp(w[i].method, "PATCH") != 0 || strncmp(w[i].body, head, sizeof head - 1) != 0)
            continue;
        char *end = strstr(w[i].body + sizeof head - 1, "\"},");
        if (!end)
            continue;
        size_t cut = (size_t)(end + 3 - (w[i].body + 1)); /* (the '{' stays) */
        memmove(w[i].body + 1, w[i].body + 1 + cut, w[i].len - 1 - cut + 1);
        w[i].len -= cut;
    }
}

/* ---- the two measurements ------------------------------------------------------------------ */

typedef struct ceiling_times {
    double lists, creates;         /* wall */
    double cpu_lists, cpu_creates; /* the process's CPU */
    int requests;                  /* creations and patches sent */
    long watched;                  /* bytes the watches received */
    in_flight flight;              /* --server-model: during the creates */
} ceiling_times;

/* What the ceiling replays, by kind: the pod creations, Services and TrainingJob status
 * patches among Drover's writes, and the rest (none expected: Events are off). */
typedef struct write_kinds {
    int pods, services, patches, other;
} write_kinds;

static write_kinds kinds_of(const drv_apiserver_write *w, int n)
{
    write_kinds k = {0};
    for (int i = 0; i < n; i++) {
        const char *q = strchr(w[i].path, '?');
        size_t len = q ? (size_t)(q - w[i].path) : strlen(w[i].path);
        bool post = !strcmp(w[i].method, "POST"), patch = !strcmp(w[i].method, "PATCH");
        if (post && len >= 5 && !strncmp(w[i].path + len - 5, "/pods", 5))
            k.pods++;
        else if (post && len >= 9 && !strncmp(w[i].path + len - 9, "/services", 9))
            k.services++;
        else if (patch && len >= 7 && !strncmp(w[i].path + len - 7, "/status", 7) &&
                 strstr(w[i].path, "/trainingjobs/"))
            k.patches++;
        else
            k.other++;
    }
    return k;
}

/* The ceiling for the requests Drover sent: its writes until its last pod was placed
 * (p->writes, n of them), byte for byte, in the order the server received them. */
static ceiling_times ceiling(const params *p, int n)
{
    char url[64];
    drv_apiserver *srv = cluster(p, url, sizeof url);
    static const char *const paths[] = {"/api/v1/nodes", "/api/v1/pods",
                                        "/apis/drover.dev/v1alpha1/trainingjobs",
                                        "/apis/scheduling.k8s.io/v1/priorityclasses"};
    enum { NLISTS = 4 };
    pthread_t t[NLISTS];
    lister l[NLISTS];
    listing ls = {.listed = 0};
    pthread_mutex_init(&ls.mu, NULL);
    pthread_cond_init(&ls.cv, NULL);
    ceiling_times out = {.requests = n};
    double c0 = cpu(), t0 = now();
    for (int i = 0; i < NLISTS; i++) {
        l[i] = (lister){url, paths[i], i == NLISTS - 1, &ls};
        pthread_create(&t[i], NULL, list_plain, &l[i]);
    }
    pthread_mutex_lock(&ls.mu);
    while (ls.listed < NLISTS)
        pthread_cond_wait(&ls.cv, &ls.mu);
    pthread_mutex_unlock(&ls.mu);
    double c1 = cpu();
    out.lists = now() - t0;
    out.cpu_lists = c1 - c0;
    drv_apiserver_load_stats before = drv_apiserver_load_counts(srv, 0);
    out.creates = send_all(p, url, NULL, n, p->threads);
    out.cpu_creates = cpu() - c1;
    out.flight = in_flight_of(srv, &before, out.creates);
    ls.stop = 1;
    for (int i = 0; i < NLISTS; i++)
        pthread_join(t[i], NULL);
    out.watched = ls.watched_bytes;
    pthread_cond_destroy(&ls.cv);
    pthread_mutex_destroy(&ls.mu);
    drv_apiserver_free(srv);
    return out;
}

typedef struct runner {
    drv_ctrl *c;
    atomic_int stop;
    int rc;
    drv_diag d;
} runner;

static void *run_main(void *arg)
{
    runner *r = arg;
    prctl(PR_SET_NAME, "drv-loop", 0, 0, 0); /* (Drover's: drover_cpu counts it) */
    r->rc = drv_ctrl_run(r->c, &r->stop, &r->d);
    return NULL;
}

typedef struct drover_times {
    double total, sync, first; /* start -> last placed; start -> synced; synced -> first sent */
    double cpu_sync, cpu_bind; /* the process's CPU: start -> synced -> last placed */
    double own_sync, own_bind; /* the same, Drover's threads only (drover_cpu) */
    long errors;
    long cycles;                 /* scheduling cycles run by the last placement */
    drv_apiserver_write *writes; /* what it sent until its last pod was placed, as received */
    int nwrites;
    in_flight flight; /* --server-model: from sync to the last pod placed */
    int limit, peak;  /* the binders' limit of requests in flight at the end; the most at once */
} drover_times;

static drover_times drover(const params *p, const drv_profile *prof)
{
    char url[64];
    drv_apiserver *srv = cluster(p, url, sizeof url);
    drv_apiserver_keep_writes(srv); /* (Drover's, for the ceiling to send the same) */
    drv_diag d = {{0}};
    drv_kube_config cfg = {.server = url, .qps = p->qps, .burst = p->burst};
    drv_ctrl_opts o = {
        .profile = prof, .no_events = true, .binders = p->binders, .bind_with_binding = p->binding};
    long pods = (long)p->jobs * p->workers;
    drover_times out = {0};
    runner r = {0};
    double c0 = cpu(), csynced = 0, o0 = drover_cpu(), osynced = 0;
    double t0 = now(), synced = 0;
    uint64_t rv_synced = 0; /* the server's resourceVersion when the caches were synced */
    drv_apiserver_load_stats at_sync = {0};
    if (drv_ctrl_new(&r.c, &cfg, &o, &d) != 0)
        die("controller", &d);
    pthread_t t;
    pthread_create(&t, NULL, run_main, &r);
    for (;;) {
        drv_ctrl_stats st = drv_ctrl_get_stats(r.c);
        double tn = now();
        if (st.synced && synced == 0) {
            synced = tn;
            csynced = cpu();
            osynced = drover_cpu();
            rv_synced = drv_apiserver_rv(srv);
            at_sync = drv_apiserver_load_counts(srv, 0);
        }
        /* The first decision: when its first request has reached the server (a write moves the
         * server's resourceVersion; Drover writes nothing else before placing pods here). Its
         * answer is applied, and counted in st.creates, only after the whole first cycle. */
        if (synced > 0 && out.first == 0 && drv_apiserver_rv(srv) > rv_synced)
            out.first = tn - synced;
        if ((p->binding ? st.binds : st.creates + st.binds) >= pods) {
            out.total = tn - t0;
            out.cpu_bind = cpu() - csynced;
            out.own_bind = drover_cpu() - osynced;
            out.errors = st.api_errors;
            out.cycles = st.cycles;
            out.limit = st.bind_limit;
            out.peak = st.bind_peak;
            out.flight = in_flight_of(srv, &at_sync, tn - synced);
            if ((out.nwrites = drv_apiserver_writes(srv, &out.writes)) < 0)
                die("the writes Drover sent: out of memory", NULL);
            strip_preconditions(out.writes, out.nwrites);
            break;
        }
        if (tn - t0 > 600)
            die("drover did not place every pod within 600 s", NULL);
        usleep(1000);
    }
    out.sync = synced - t0;
    out.cpu_sync = csynced - c0;
    out.own_sync = osynced - o0;
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    if (r.rc != 0)
        die("controller run", &r.d);
    drv_ctrl_free(r.c);
    drv_apiserver_free(srv);
    return out;
}

static int usage(void)
{
    fprintf(stderr, "usage: e2e_bind [--nodes N] [--existing N] [--jobs N] [--workers N] "
                    "[--threads N] [--policy NAME] [--reps N] [--qps N] [--burst N] "
                    "[--real-objects 0|1] [--server-model 0|1] [--seats N] [--latency-scale F] "
                    "[--binders N] [--bind-mode-binding 0|1]\n");
    return 2;
}

int main(int argc, char **argv)
{
    params p = {.nodes = 5000,
                .existing = 16000,
                .jobs = 500,
                .workers = 4,
                .threads = 8,
                .reps = 3,
                .qps = DRV_CTRL_DEF_QPS,
                .burst = DRV_CTRL_DEF_BURST,
                .policy = "drover"};
    int real = 0, model = 0, seats = 0;
    double scale = 1;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc)
            return usage();
        int *field = !strcmp(argv[i], "--nodes")               ? &p.nodes
                     : !strcmp(argv[i], "--existing")          ? &p.existing
                     : !strcmp(argv[i], "--jobs")              ? &p.jobs
                     : !strcmp(argv[i], "--workers")           ? &p.workers
                     : !strcmp(argv[i], "--threads")           ? &p.threads
                     : !strcmp(argv[i], "--reps")              ? &p.reps
                     : !strcmp(argv[i], "--qps")               ? &p.qps
                     : !strcmp(argv[i], "--burst")             ? &p.burst
                     : !strcmp(argv[i], "--real-objects")      ? &real
                     : !strcmp(argv[i], "--server-model")      ? &model
                     : !strcmp(argv[i], "--seats")             ? &seats
                     : !strcmp(argv[i], "--binders")           ? &p.binders
                     : !strcmp(argv[i], "--bind-mode-binding") ? &p.binding
                                                               : NULL;
        if (field)
            *field = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--policy"))
            p.policy = argv[i + 1];
        else if (!strcmp(argv[i], "--latency-scale"))
            scale = atof(argv[i + 1]);
        else
            return usage();
    }
    if (p.nodes < 1 || p.existing < 0 || p.jobs < 1 || p.workers < 1 || p.threads < 1 ||
        p.threads > 64 || p.reps < 1 || p.qps < 1 || p.burst < 1 || p.binders < 0 ||
        p.binders > DRV_CTRL_MAX_BINDERS || !(scale > 0 && scale <= 100)) {
        fprintf(stderr,
                "e2e_bind: counts must be at least 1 (threads at most 64, binders 0-%d), "
                "--latency-scale in (0, 100]\n",
                DRV_CTRL_MAX_BINDERS);
        return 2;
    }
    if (real) {
        p.real_node =
            recorded_body("e2e_bind", "tests/fixtures/k8s/transcripts/02-node-get/response.txt");
        p.real_pod =
            recorded_body("e2e_bind", "tests/fixtures/k8s/transcripts/03-pod-get/response.txt");
    }
    drv_apiserver_load load;
    drv_apiserver_load_defaults(&load);
    if (seats > 0)
        load.level[0].seats = seats;
    drv_apiserver_latency *lat[] = {&load.create, &load.write, &load.get};
    for (size_t i = 0; i < sizeof lat / sizeof *lat; i++) {
        lat[i]->p50_ms *= scale;
        lat[i]->p90_ms *= scale;
    }
    load.list_ms *= scale;
    load.list_item_us *= scale;
    if (model)
        p.model = &load;
    drv_profile prof;
    drv_diag d = {{0}};
    if (drv_profile_builtin(p.policy, &prof, &d) != 0)
        die("--policy", &d);
    long pods = (long)p.jobs * p.workers;
    printf("%d nodes, %d existing pods (%s), %d gangs x %d workers = %ld new pods; policy %s; "
           "%d client threads / %d binders; drover's API budget %d/s, burst %d; %s\n",
           p.nodes, p.existing, real ? "recorded-size objects" : "plain objects", p.jobs, p.workers,
           pods, p.policy, p.threads, p.binders ? p.binders : DRV_CTRL_DEF_BINDERS, p.qps, p.burst,
           model ? "a real server's model" : "in-memory server");
    if (model)
        printf(
            "server model: creates p50 %.0f ms, p90 %.0f ms; lists %.1f ms + %.1f us an object\n",
            load.create.p50_ms, load.create.p90_ms, load.list_ms, load.list_item_us);
    if (model)
        printf("server model: %d seats, queue %d\n", load.level[0].seats, load.level[0].queue);
    printf("%-4s %9s %8s %9s   %9s %8s   %8s   %7s %7s %9s %6s\n", "rep", "ceiling s", "lists s",
           "creates s", "drover s", "pods/s", "fraction", "sync s", "first s", "bind frac",
           "errors");
    for (int rep = 1; rep <= p.reps; rep++) {
        drover_times dt = drover(&p, &prof);
        params pp = p;
        pp.writes = dt.writes;
        ceiling_times c = ceiling(&pp, dt.nwrites);
        write_kinds k = kinds_of(dt.writes, dt.nwrites);
        double cs = c.lists + c.creates;
        printf("%-4d %9.3f %8.3f %9.3f   %9.3f %8.0f   %8.2f   %7.3f %7.3f %9.2f %6ld\n", rep, cs,
               c.lists, c.creates, dt.total, (double)pods / dt.total, cs / dt.total, dt.sync,
               dt.first, c.creates / (dt.total - dt.sync), dt.errors);
        printf("     cpu s: ceiling lists %.3f, creates %.3f; drover sync %.3f, bind %.3f "
               "(its own threads %.3f, %.3f); "
               "requests after the lists: %d pods + %d Services + %d status patches + %d other; "
               "watches read %.1f MB; Drover's cycles %ld\n",
               c.cpu_lists, c.cpu_creates, dt.cpu_sync, dt.cpu_bind, dt.own_sync, dt.own_bind,
               k.pods, k.services, k.patches, k.other, (double)c.watched / 1e6, dt.cycles);
        if (p.model)
            printf("     server model: requests in flight during the writes: ceiling %.1f on "
                   "average (%d at most), drover %.1f (%d at most); 429s: %ld, %ld\n",
                   c.flight.mean, c.flight.max, dt.flight.mean, dt.flight.max, c.flight.rejected,
                   dt.flight.rejected);
        printf("     drover's binders: limit %d in flight at the end, %d at most (of %d)\n",
               dt.limit, dt.peak, p.binders ? p.binders : DRV_CTRL_DEF_BINDERS);
        fflush(stdout);
        drv_apiserver_writes_free(dt.writes, dt.nwrites);
    }
    return 0;
}
