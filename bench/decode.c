/*
 * decode.c - CPU per pod and per node of the informers' list decoding (issue 17): a list page
 * of N objects decoded R times the way drover run's informers read pages, through jansson
 * (drv_list_decoder's item callback, drv_kube_decode_pod / _node) and through documents
 * (its document callback, drv_kube_decode_pod_doc / _node_doc), each with the informers' skip
 * paths, a fresh string table per page (every name is new, as in a first list) and a record
 * allocated and freed per object.
 *
 * Objects: plain ones as bench/e2e_bind creates them (a ~300-byte pod, a ~400-byte node), and
 * the recorded Pod and Node (tests/fixtures/k8s: 2.5 and 1.6 kB) renamed per item. Run from
 * the source tree: build/bench/decode [--objects N] [--reps R] [--only jansson|document]
 * (--only: one way, for a profile). Prints per kind the bytes per
 * object, the CPU microseconds per object both ways (thread CPU time, the best of the reps)
 * and their ratio.
 */
#include "drover/file.h"
#include "drover/kube_types.h"
#include "json.h"
#include "listdec.h"
#include "recorded.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct run {
    drv_strtab *names;
    bool pod;
    long decoded;
} run;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "decode: %s\n", what);
    exit(1);
}

static int by_json(json_t *item, void *arg)
{
    run *r = arg;
    drv_diag d;
    void *rec = drv_malloc(r->pod ? sizeof(drv_kpod) : sizeof(drv_knode));
    int rc = r->pod ? drv_kube_decode_pod(item, r->names, rec, &d)
                    : drv_kube_decode_node(item, r->names, rec, &d);
    drv_free(rec);
    r->decoded += rc == 0;
    return 0;
}

static int by_doc(const drv_jdoc *doc, void *arg)
{
    run *r = arg;
    drv_diag d;
    void *rec = drv_malloc(r->pod ? sizeof(drv_kpod) : sizeof(drv_knode));
    int rc = r->pod ? drv_kube_decode_pod_doc(doc, 0, r->names, rec, &d)
                    : drv_kube_decode_node_doc(doc, 0, r->names, rec, &d);
    drv_free(rec);
    r->decoded += rc == 0;
    return 0;
}

/* Item i: the plain object, or the recorded one (rec) with its name, namespace and node set. */
static void item(char *out, size_t n, bool pod, const char *rec, int i)
{
    if (!rec) {
        if (pod)
            snprintf(out, n,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"other-%d\","
                     "\"namespace\":\"default\",\"resourceVersion\":\"%d\",\"labels\":{\"app\":"
                     "\"other\"}},\"spec\":{\"nodeName\":\"node-%d\",\"containers\":[{\"name\":"
                     "\"c\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"100m\","
                     "\"memory\":\"256Mi\"}}}]},\"status\":{\"phase\":\"Running\"}}",
                     i, 1000 + i, i % 5000);
        else
            snprintf(out, n,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%d\","
                     "\"resourceVersion\":\"%d\",\"labels\":{\"topology.kubernetes.io/zone\":"
                     "\"zone-%d\",\"drover.dev/rack\":\"rack-%d\"}},\"spec\":{},\"status\":{"
                     "\"allocatable\":{\"cpu\":\"32\",\"memory\":\"128Gi\",\"pods\":\"110\"},"
                     "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                     i, 1000 + i, i % 4, i / 20);
        return;
    }
    json_t *o = json_loads(rec, 0, NULL);
    json_t *meta = json_object_get(o, "metadata");
    if (!meta)
        die("the recorded object has no metadata");
    json_object_set_new(meta, "name", json_sprintf(pod ? "other-%d" : "node-%d", i));
    json_object_set_new(meta, "resourceVersion", json_sprintf("%d", 1000 + i));
    if (pod)
        json_object_set_new(json_object_get(o, "spec"), "nodeName",
                            json_sprintf("node-%d", i % 5000));
    else
        json_object_del(json_object_get(meta, "labels"), "kubernetes.io/hostname");
    size_t k = json_dumpb(o, out, n, JSON_COMPACT);
    if (k == 0 || k >= n)
        die("an object longer than its buffer");
    out[k] = 0;
    json_decref(o);
}

/* A list page of n objects (drv_malloc'd); *bytes the mean bytes per object. */
static char *page(bool pod, const char *rec, int n, double *bytes)
{
    size_t cap = (size_t)n * 8192 + 256, w = 0;
    char *p = drv_malloc(cap), one[8192];
    if (!p)
        die("out of memory");
    w += (size_t)snprintf(p, cap,
                          "{\"kind\":\"%sList\",\"apiVersion\":\"v1\",\"metadata\":{"
                          "\"resourceVersion\":\"9\"},\"items\":[",
                          pod ? "Pod" : "Node");
    size_t items = 0;
    for (int i = 0; i < n; i++) {
        item(one, sizeof one, pod, rec, i);
        items += strlen(one);
        w += (size_t)snprintf(p + w, cap - w, "%s%s", i ? "," : "", one);
    }
    snprintf(p + w, cap - w, "]}");
    *bytes = (double)items / n;
    return p;
}

/* The best of reps decodes of text, in CPU microseconds per object. */
static double decode(const char *text, bool pod, bool doc, int n, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        run st = {.names = drv_strtab_new(), .pod = pod};
        drv_list_decoder l;
        drv_list_decoder_init(&l, "bench", doc ? NULL : by_json, &st);
        l.doc_cb = doc ? by_doc : NULL;
        l.skip = pod ? drv_kube_unread_pod : drv_kube_unread_node;
        drv_diag d;
        double t0 = cpu_now();
        if (drv_list_decoder_feed(&l, text, strlen(text), &d) != 0 ||
            drv_list_decoder_finish(&l, &d) != 0)
            die(d.msg);
        drv_list_decoder_fini(&l);
        drv_strtab_free(st.names);
        double t = cpu_now() - t0;
        if (st.decoded != n)
            die("an object was not decoded");
        best = t < best ? t : best;
    }
    return best * 1e6 / n;
}

int main(int argc, char **argv)
{
    int n = 16000, reps = 5, only = -1; /* --only jansson (0) or document (1): for profiles */
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--objects"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--only"))
            only = !strcmp(argv[i + 1], "document");
        else
            die("usage: decode [--objects N] [--reps R] [--only jansson|document]");
    }
    if (n < 1 || n > 100000 || reps < 1)
        die("--objects in [1, 100000], --reps at least 1");
    char *rpod = recorded_body("decode", "tests/fixtures/k8s/transcripts/03-pod-get/response.txt");
    char *rnode =
        recorded_body("decode", "tests/fixtures/k8s/transcripts/02-node-get/response.txt");
    printf("%d objects a page, best of %d; CPU us per object\n", n, reps);
    printf("%-15s %7s %9s %9s %7s\n", "objects", "bytes", "jansson", "document", "ratio");
    for (int k = 0; k < 4; k++) {
        bool pod = k < 2, rec = k % 2;
        double bytes;
        char *text = page(pod, rec ? (pod ? rpod : rnode) : NULL, n, &bytes);
        double a = only == 1 ? 0 : decode(text, pod, false, n, reps);
        double b = only == 0 ? 0 : decode(text, pod, true, n, reps);
        printf("%-15s %7.0f %9.2f %9.2f %6.2fx\n",
               k == 0   ? "plain pods"
               : k == 1 ? "recorded pods"
               : k == 2 ? "plain nodes"
                        : "recorded nodes",
               bytes, a, b, a / b);
        drv_free(text);
    }
    drv_free(rpod);
    drv_free(rnode);
    return 0;
}
