/*
 * informer_mem - memory of the controller's informer caches: bytes per cached pod and in all
 * with 5,000 nodes and 50,000 pods, against a baseline that keeps each object's decoded JSON
 * (what a cache of API objects holds) — same informer, same objects, only the record differs.
 *
 * Objects: the recorded Pod and Node of tests/fixtures/k8s/transcripts (02-node-get, 03-pod-get:
 * with managedFields, labels, status — ~4 KB and ~3 KB of JSON), copied with a new name,
 * resourceVersion, uid, node and job per object, and applied to an informer as watch ADDED
 * events (drv_informer_apply), each from a freshly parsed json_t, as the watch path delivers
 * them. Heap in use is read with mallinfo2 before and after (jansson allocates with malloc).
 *
 * usage: informer_mem [--pods N] [--nodes N]   (run from the repository root)
 */
#include "drover/kube_informer.h"
#include "drover/kube_types.h"
#include "json.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static json_t *load_body(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "informer_mem: %s: cannot open (run from the repository root)\n", path);
        exit(2);
    }
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *body = strstr(buf, "\r\n\r\n");
    body = body ? body + 4 : strstr(buf, "\n\n") + 2;
    json_error_t je;
    json_t *o = json_loads(body, 0, &je);
    if (!o) {
        fprintf(stderr, "informer_mem: %s: %s\n", path, je.text);
        exit(2);
    }
    return o;
}

typedef struct mode {
    bool compact;
    drv_strtab *names;
    long records;
} mode;

static void *decode(json_t *obj, void *arg, drv_diag *d)
{
    mode *m = arg;
    m->records++;
    if (!m->compact) /* baseline: the API object itself */
        return json_incref(obj);
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (kind && !strcmp(kind, "Node")) {
        drv_knode *n = drv_malloc(sizeof *n);
        if (n && drv_kube_decode_node(obj, m->names, n, d) == 0)
            return n;
        drv_free(n);
        return NULL;
    }
    drv_kpod *p = drv_malloc(sizeof *p);
    if (p && drv_kube_decode_pod(obj, m->names, p, d) == 0)
        return p;
    drv_free(p);
    return NULL;
}

static void release(void *rec, void *arg)
{
    mode *m = arg;
    m->records--;
    if (m->compact)
        drv_free(rec);
    else
        json_decref(rec);
}

static size_t heap(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* Feeds n copies of tmpl, renamed, through a fresh parse each, into inf. */
static void feed(drv_informer *inf, json_t *tmpl, int n, bool node, int nodes)
{
    char *text = json_dumps(tmpl, JSON_COMPACT);
    for (int i = 0; i < n; i++) {
        json_t *o = json_loads(text, 0, NULL);
        json_t *meta = json_object_get(o, "metadata");
        char name[64], rv[32], uid[64], nd[32], job[32];
        snprintf(name, sizeof name, node ? "node-%05d" : "tj%05d-worker-%d", node ? i : i / 8,
                 i % 8);
        snprintf(rv, sizeof rv, "%d", 100000 + i + (node ? 0 : 1000000));
        snprintf(uid, sizeof uid, "%08x-4b8e-4c2a-9d3f-%012x", i, i * 7 + (node ? 1 : 2));
        json_object_set_new(meta, "name", json_string(name));
        json_object_set_new(meta, "resourceVersion", json_string(rv));
        json_object_set_new(meta, "uid", json_string(uid));
        if (!node) {
            snprintf(nd, sizeof nd, "node-%05d", i % (nodes ? nodes : 1));
            snprintf(job, sizeof job, "tj%05d", i / 8);
            json_object_set_new(json_object_get(o, "spec"), "nodeName", json_string(nd));
            json_object_set_new(json_object_get(meta, "labels"), "drover.dev/job",
                                json_string(job));
        }
        drv_informer_apply(inf, DRV_WATCH_ADDED, o);
        json_decref(o);
    }
    free(text);
}

static long peak_rss_kb(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

int main(int argc, char **argv)
{
    int pods = 50000, nodes = 5000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--pods"))
            pods = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--nodes"))
            nodes = atoi(argv[i + 1]);
    }
    json_t *pod = load_body("tests/fixtures/k8s/transcripts/03-pod-get/response.txt");
    json_t *node = load_body("tests/fixtures/k8s/transcripts/02-node-get/response.txt");
    char *ps = json_dumps(pod, JSON_COMPACT), *ns = json_dumps(node, JSON_COMPACT);
    printf("informer_mem: %d pods, %d nodes; recorded objects of %zu (pod) and %zu (node) bytes "
           "of JSON\n",
           pods, nodes, strlen(ps), strlen(ns));
    free(ps);
    free(ns);
    printf("%-10s %12s %12s %12s %14s\n", "cache", "B_per_pod", "B_per_node", "total_MB",
           "peak_RSS_MB");
    double per_pod[2] = {0, 0};
    for (int compact = 1; compact >= 0; compact--) {
        mode m = {compact, drv_strtab_new(), 0};
        drv_informer_ops ops = {.decode = decode, .release = release};
        drv_informer *np, *pp;
        drv_diag d;
        size_t h0 = heap();
        if (drv_informer_new(&np, NULL, "/api/v1/nodes", 0, 0, &ops, &m, &d) ||
            drv_informer_new(&pp, NULL, "/api/v1/pods", 0, 0, &ops, &m, &d)) {
            fprintf(stderr, "informer_mem: %s\n", d.msg);
            return 2;
        }
        feed(np, node, nodes, true, nodes);
        size_t h1 = heap();
        feed(pp, pod, pods, false, nodes);
        size_t h2 = heap();
        if (m.records != pods + nodes) {
            fprintf(stderr, "informer_mem: %ld records cached, expected %d\n", m.records,
                    pods + nodes);
            return 1;
        }
        per_pod[compact] = (double)(h2 - h1) / pods;
        /* compact runs first: the process's peak RSS so far is its own */
        printf("%-10s %12.0f %12.0f %12.1f %14.1f\n", compact ? "compact" : "json",
               per_pod[compact], (double)(h1 - h0) / nodes, (double)(h2 - h0) / 1048576.0,
               (double)peak_rss_kb() / 1024);
        drv_informer_free(pp);
        drv_informer_free(np);
        drv_strtab_free(m.names);
    }
    printf("ratio json/compact per pod: %.1f\n", per_pod[0] / per_pod[1]);
    json_decref(pod);
    json_decref(node);
    return 0;
}
