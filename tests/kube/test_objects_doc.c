/*
 * Pods and nodes decoded from a document (src/kube/objects_doc.c) against objects.c's decoders
 * on jansson values: two ways to the same record must agree. On every recorded Pod and Node
 * (alone, list items, watch events), on a pod and a node with every field the records read,
 * on a hundred hand-made mutations of those (missing fields, wrong types, escapes, huge
 * numbers, repeated keys, bad values) and on thousands of random byte mutations: the same
 * result, the same record byte for byte, the same message, the same strings interned in the
 * same order. The recorded objects must take the document path itself (jansson's allocator is
 * counted: a pod that went back to objects.c builds jansson values), and failing allocations
 * fail cleanly.
 */
#include "drover/file.h"
#include "drover/kube_types.h"
#include "json.h"
#include "testutil.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static long jansson_allocs; /* jansson's allocations since the last reset (this test's only) */

static void *counting_malloc(size_t n)
{
    jansson_allocs++;
    return malloc(n);
}

typedef struct outcome {
    int compared, fast; /* decoded both ways; of those, by the document path alone */
} outcome;

/* text (an object) decoded both ways as a pod or a node, each with a table of its own: fails
 * unless they agree. Text that is no JSON is not compared (test_jsonparse holds the parsers to
 * the same answers). */
static void agree(const char *where, const char *text, size_t n, bool pod, outcome *o)
{
    json_t *obj = drv_json_loadb(text, n, NULL);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return;
    }
    drv_jdoc doc;
    drv_jdoc_init(&doc);
    assert_int_equal(
        drv_jdoc_parse(&doc, text, n, pod ? drv_kube_unread_pod : drv_kube_unread_node, NULL, NULL),
        0);
    drv_strtab *a = drv_strtab_new(), *b = drv_strtab_new();
    union {
        drv_kpod p;
        drv_knode n;
    } x, y;
    memset(&x, 0x5a, sizeof x); /* (the decoders clear what they fill) */
    memset(&y, 0x5a, sizeof y);
    drv_diag d1 = {{0}}, d2 = {{0}};
    int r1 = pod ? drv_kube_decode_pod(obj, a, &x.p, &d1) : drv_kube_decode_node(obj, a, &x.n, &d1);
    jansson_allocs = 0;
    int r2 = pod ? drv_kube_decode_pod_doc(&doc, 0, b, &y.p, &d2)
                 : drv_kube_decode_node_doc(&doc, 0, b, &y.n, &d2);
    o->fast += jansson_allocs == 0;
    if (r1 != r2 || strcmp(d1.msg, d2.msg) != 0)
        fail_msg("%s: objects.c %d (%s), document %d (%s) for %.*s", where, r1, d1.msg, r2, d2.msg,
                 (int)(n < 400 ? n : 400), text);
    if (r1 == 0 && memcmp(&x, &y, pod ? sizeof x.p : sizeof x.n) != 0)
        fail_msg("%s: the records differ for %.*s", where, (int)(n < 400 ? n : 400), text);
    if (drv_strtab_count(a) != drv_strtab_count(b))
        fail_msg("%s: %d strings interned, %d from the document for %.*s", where,
                 drv_strtab_count(a), drv_strtab_count(b), (int)(n < 400 ? n : 400), text);
    for (int32_t id = 1; id < drv_strtab_count(a); id++)
        if (strcmp(drv_strtab_str(a, id), drv_strtab_str(b, id)) != 0)
            fail_msg("%s: string %d is '%s', '%s' from the document", where, id,
                     drv_strtab_str(a, id), drv_strtab_str(b, id));
    o->compared++;
    drv_strtab_free(a);
    drv_strtab_free(b);
    drv_jdoc_fini(&doc);
    json_decref(obj);
}

/* v (a Pod or Node, or a list of them) compared item by item. */
static void agree_value(const char *where, json_t *v, outcome *o)
{
    const char *kind = json_string_value(json_object_get(v, "kind"));
    if (!kind)
        return;
    bool pod = !strcmp(kind, "Pod") || !strcmp(kind, "PodList");
    if (!pod && strcmp(kind, "Node") != 0 && strcmp(kind, "NodeList") != 0)
        return;
    json_t *items = json_object_get(v, "items");
    size_t count = items ? json_array_size(items) : 1;
    for (size_t i = 0; i < count; i++) {
        char *t = json_dumps(items ? json_array_get(items, i) : v, JSON_COMPACT);
        assert_non_null(t);
        agree(where, t, strlen(t), pod, o);
        free(t);
    }
}

static void test_recorded_objects_agree(void **unused)
{
    (void)unused;
    const char *root = FIXTURE_DIR "/transcripts";
    DIR *dir = opendir(root);
    assert_non_null(dir);
    outcome o = {0};
    for (struct dirent *de; (de = readdir(dir));) {
        char path[1024], *resp = NULL;
        size_t n;
        snprintf(path, sizeof path, "%s/%s/response.txt", root, de->d_name);
        if (de->d_name[0] == '.' || drv_file_read(path, &resp, &n, NULL) != 0)
            continue;
        char *body = strstr(resp, "\r\n\r\n");
        body = body ? body + 4 : strstr(resp, "\n\n") ? strstr(resp, "\n\n") + 2 : NULL;
        for (char *line = body; line && *line;) { /* (a watch: one event a line) */
            bool watch = strstr(de->d_name, "watch") != NULL;
            size_t len = watch ? strcspn(line, "\n") : strlen(line);
            json_t *v = json_loadb(line, len, 0, NULL);
            agree_value(de->d_name, watch ? json_object_get(v, "object") : v, &o);
            json_decref(v);
            line += len + (line[len] != 0);
        }
        drv_free(resp);
    }
    closedir(dir);
    print_message("%d recorded pods and nodes compared, %d by the document path alone\n",
                  o.compared, o.fast);
    assert_true(o.compared >= 20);
    assert_true(o.fast >= o.compared * 9 / 10); /* (not all handed back to objects.c) */
}

/* A pod and a node with every field the records read. */
static const char POD[] =
    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"w0\",\"namespace\":\"ml\",\"resourceVersion\":"
    "\"77\",\"labels\":{\"drover.dev/job\":\"tj1\",\"drover.dev/role\":\"worker\","
    "\"drover.dev/rank\":\"3\",\"scheduling.x-k8s.io/pod-group\":\"g\"},\"managedFields\":[{}]},"
    "\"spec\":{\"nodeName\":\"n1\",\"schedulerName\":\"drover\",\"priority\":5,\"containers\":"
    "[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1500m\",\"memory\":\"1Gi\"},"
    "\"limits\":{\"cpu\":\"2\"}}},{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"250m\","
    "\"nvidia.com/gpu\":\"1\"},\"limits\":{\"cpu\":\"1\"}}}],\"initContainers\":[{\"name\":\"i\","
    "\"resources\":{\"requests\":{\"cpu\":\"4\"}}}],\"nodeSelector\":{\"pool\":\"gpu\"}},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.1.2.3\",\"containerStatuses\":[{"
    "\"restartCount\":2,\"state\":{\"terminated\":{\"exitCode\":0}}},{\"restartCount\":1,"
    "\"state\":{\"terminated\":{\"exitCode\":3}}}],\"initContainerStatuses\":[{\"restartCount\":"
    "4}]}}";
static const char NODE[] =
    "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"9\",\"labels\":{"
    "\"kubernetes.io/hostname\":\"n1\",\"topology.kubernetes.io/zone\":\"z1\",\"drover.dev/rack\":"
    "\"r7\",\"pool\":\"gpu\"}},\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"gpu\","
    "\"value\":\"true\",\"effect\":\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\","
    "\"effect\":\"NoExecute\"}]},\"status\":{\"allocatable\":{\"cpu\":\"63500m\",\"memory\":"
    "\"503Gi\",\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]"
    ",\"images\":[{\"names\":[\"x\"]}]}}";

/* base with its first `from` replaced by `to` (into out, cap bytes); fails when absent. */
static size_t mutate(const char *base, const char *from, const char *to, char *out, size_t cap)
{
    const char *at = strstr(base, from);
    if (!at)
        fail_msg("mutation: '%s' not in the object", from);
    int w = snprintf(out, cap, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    assert_true(w > 0 && (size_t)w < cap);
    return (size_t)w;
}

/* Edits of the recorded pod (from, to; "": as it is): missing fields, wrong types, escapes,
 * huge numbers, repeated keys, bad values and the rarer rules. */
static const char *const pod_cases[][2] = {
    {"", ""}, /* (the pod as it is) */
    /* missing fields */
    {"\"name\":\"w0\",", ""},
    {"\"namespace\":\"ml\",", ""},
    {"\"resourceVersion\":\"77\",", ""},
    {"\"spec\":{", "\"spex\":{"},
    {"\"containers\":", "\"containerz\":"},
    {"\"labels\":", "\"labelz\":"},
    {"\"status\":{", "\"statuz\":{"},
    {"\"requests\":{\"cpu\":\"1500m\",", "\"requests\":{"},
    {"\"limits\":{\"cpu\":\"2\"}", "\"limits\":{}"},
    {"\"drover.dev/job\":\"tj1\",", ""},
    /* wrong types */
    {"\"priority\":5", "\"priority\":\"5\""},
    {"\"priority\":5", "\"priority\":5.0"},
    {"\"priority\":5", "\"priority\":null"},
    {"\"name\":\"w0\"", "\"name\":7"},
    {"\"namespace\":\"ml\"", "\"namespace\":[\"ml\"]"},
    {"\"metadata\":{", "\"metadata\":[],\"x\":{"},
    {"\"spec\":{", "\"spec\":1,\"x\":{"},
    {"\"containers\":[", "\"containers\":{\"a\":1},\"x\":["},
    {"\"requests\":{\"cpu\":\"1500m\"", "\"requests\":[\"cpu\"],\"x\":{\"cpu\":\"1500m\""},
    {"\"cpu\":\"1500m\"", "\"cpu\":2"},
    {"\"cpu\":\"1500m\"", "\"cpu\":2.5"},
    {"\"cpu\":\"1500m\"", "\"cpu\":true"},
    {"\"memory\":\"1Gi\"", "\"memory\":-3"},
    {"\"restartCount\":2", "\"restartCount\":\"2\""},
    {"\"restartCount\":2", "\"restartCount\":2.0"},
    {"\"exitCode\":3", "\"exitCode\":3.5"},
    {"\"exitCode\":0", "\"exitCode\":\"0\""},
    {"\"labels\":{", "\"labels\":[],\"x\":{"},
    {"\"drover.dev/job\":\"tj1\"", "\"drover.dev/job\":1"},
    {"\"drover.dev/role\":\"worker\"", "\"drover.dev/role\":false"},
    {"\"podIP\":\"10.1.2.3\"", "\"podIP\":10"},
    {"\"phase\":\"Running\"", "\"phase\":{}"},
    {"\"containerStatuses\":[", "\"containerStatuses\":{\"a\":[]},\"x\":["},
    {"\"initContainers\":[", "\"initContainers\":\"no\",\"x\":["},
    {"\"nodeName\":\"n1\"", "\"nodeName\":null"},
    /* escapes */
    {"\"name\":\"w0\"", "\"name\":\"w\\u0030\\n\\u00e9\""},
    {"\"drover.dev/job\"", "\"drover.dev\\/job\""},
    {"\"drover.dev/role\":\"worker\"", "\"drover.dev/role\":\"work\\u0065r\""},
    {"\"cpu\":\"1500m\"", "\"cpu\":\"1500\\u006d\""},
    {"\"nodeName\":\"n1\"", "\"nodeName\":\"\\ud83d\\ude00\""},
    {"\"podIP\":\"10.1.2.3\"", "\"podIP\":\"10.1.2.\\u0033\""},
    {"\"requests\"", "\"req\\u0075ests\""},
    /* huge numbers */
    {"\"priority\":5", "\"priority\":9999999999"},
    {"\"priority\":5", "\"priority\":-9223372036854775808"},
    {"\"priority\":5", "\"priority\":1e308"},
    {"\"restartCount\":2", "\"restartCount\":9223372036854775807"},
    {"\"restartCount\":2", "\"restartCount\":1000001"},
    {"\"restartCount\":2", "\"restartCount\":-5"},
    {"\"exitCode\":3", "\"exitCode\":70000"},
    {"\"cpu\":\"1500m\"", "\"cpu\":9223372036854775807"},
    {"\"cpu\":\"1500m\"", "\"cpu\":\"1e400\""},
    {"\"memory\":\"1Gi\"", "\"memory\":\"99999999999Ei\""},
    {"\"drover.dev/rank\":\"3\"", "\"drover.dev/rank\":\"99999999999999999999\""},
    /* repeated keys */
    {"\"name\":\"w0\"", "\"name\":\"a\",\"name\":\"w0\""},
    {"\"name\":\"w0\"", "\"name\":\"w0\",\"name\":1"},
    {"\"priority\":5", "\"priority\":5,\"priority\":6"},
    {"\"drover.dev/job\":\"tj1\"", "\"drover.dev/job\":\"x\",\"drover.dev/job\":\"tj1\""},
    {"\"spec\":{", "\"spec\":{},\"spec\":{"},
    /* bad values and the rarer rules */
    {"\"drover.dev/role\":\"worker\"", "\"drover.dev/role\":\"boss\""},
    {"\"drover.dev/role\":\"worker\"", "\"drover.dev/role\":\"ps\""},
    {"\"drover.dev/rank\":\"3\"", "\"drover.dev/rank\":\"3x\""},
    {"\"drover.dev/rank\":\"3\"", "\"drover.dev/rank\":\"-1\""},
    {"\"drover.dev/rank\":\"3\"", "\"drover.dev/rank\":\"\""},
    {"\"cpu\":\"1500m\"", "\"cpu\":\"2x\""},
    {"\"cpu\":\"4\"", "\"cpu\":\"4q\""},
    {"\"cpu\":\"2\"}", "\"cpu\":\"lots\"}"},
    {"\"cpu\":\"2\"}", "\"cpu\":\"0\"}"},
    {"\"podIP\":\"10.1.2.3\"", "\"podIP\":\"fd00::1\""},
    {"\"podIP\":\"10.1.2.3\"", "\"podIP\":\"10.1.2\""},
    {"\"podIP\":\"10.1.2.3\"", "\"podIP\":\"\""},
    {"\"phase\":\"Running\"", "\"phase\":\"Succeeded\""},
    {"\"phase\":\"Running\"", "\"phase\":\"Gone\""},
    {"\"drover.dev/job\":\"tj1\",", "\"drover.dev/job\":\"\","},
    {"\"drover.dev/job\":\"tj1\",", ""}, /* another scheduler's: constraints kept */
    {"\"schedulerName\":\"drover\"", "\"schedulerName\":\"default-scheduler\""},
    {"\"name\":\"w0\",", "\"deletionTimestamp\":null,\"name\":\"w0\","},
    {"\"resourceVersion\":\"77\"", "\"resourceVersion\":\"123456789012345678901234567890\""},
    {"\"exitCode\":0", "\"exitCode\":-1"},
    /* Kueue's topology annotations: another operator's pod reads them (objects.c's), ours not */
    {"\"labels\":{\"drover.dev/job\":\"tj1\",",
     "\"annotations\":{\"kueue.x-k8s.io/podset-required-topology\":\"rack\"},\"labels\":{"},
    {"\"labels\":{\"drover.dev/job\":\"tj1\",",
     "\"annotations\":{\"kueue.x-k8s.io/podset-preferred-topology\":\"\"},\"labels\":{"},
    {"\"labels\":{\"drover.dev/job\":\"tj1\",",
     "\"annotations\":{\"kueue.x-k8s.io/podset-unconstrained-topology\":\"true\","
     "\"kueue.x-k8s.io/podset-required-topology\":\"rack\"},\"labels\":{"},
    {"\"labels\":{\"drover.dev/job\":\"tj1\",", "\"annotations\":{\"a\":\"b\"},\"labels\":{"},
    {"\"labels\":{",
     "\"annotations\":{\"kueue.x-k8s.io/podset-required-topology\":\"rack\"},\"labels\":{"},
};

/* The same for the recorded node. */
static const char *const node_cases[][2] = {
    {"", ""},
    {"\"name\":\"n1\",", ""},
    {"\"labels\":{", "\"labels\":[],\"x\":{"},
    {"\"labels\":{", "\"labelz\":{"},
    {"\"taints\":[", "\"taints\":{},\"x\":["},
    {"\"taints\":[", "\"taintz\":["},
    {"\"unschedulable\":true", "\"unschedulable\":\"true\""},
    {"\"unschedulable\":true", "\"unschedulable\":false"},
    {"\"allocatable\":{", "\"allocatable\":\"x\",\"y\":{"},
    {"\"cpu\":\"63500m\"", "\"cpu\":64"},
    {"\"cpu\":\"63500m\"", "\"cpu\":\"64x\""},
    {"\"memory\":\"503Gi\"", "\"memory\":\"1e400\""},
    {"\"pool\":\"gpu\"", "\"pool\":1"},
    {"\"pool\":\"gpu\"", "\"pool\":\"g\\tpu\""},
    {"\"pool\":\"gpu\"", "\"p\\nool\":\"gpu\""},
    {"\"pool\":\"gpu\"", "\"pool\":\"g\\u0070u\""},
    {"\"pool\":\"gpu\"", "\"pool\":\"a\",\"pool\":\"gpu\""},
    {"\"kubernetes.io/hostname\":\"n1\"", "\"kubernetes.io/hostname\":\"n\\t1\""},
    {"\"kubernetes.io/hostname\":\"n1\",", ""},
    {"\"topology.kubernetes.io/zone\":\"z1\"", "\"topology.kubernetes.io/zone\":\"\""},
    {"\"key\":\"gpu\"", "\"key\":\"\""},
    {"\"key\":\"gpu\"", "\"key\":7"},
    {"\"value\":\"true\"", "\"value\":\"t\\nrue\""},
    {"\"value\":\"true\",", ""},
    {"\"effect\":\"NoSchedule\"", "\"effect\":\"No\""},
    {"\"effect\":\"NoSchedule\"", "\"effect\":\"PreferNoSchedule\""},
    {"\"node.kubernetes.io/not-ready\"", "\"node.kubernetes.io/unreachable\""},
    {"\"status\":\"True\"", "\"status\":\"False\""},
    {"\"status\":\"True\"}]", "\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"x\"}]"},
    {"\"type\":\"Ready\"", "\"type\":\"Re\\u0061dy\""},
    {"\"conditions\":[", "\"conditions\":{},\"x\":["},
    {"\"metadata\":{", "\"metadata\":null,\"x\":{"},
};

static void test_mutations_agree(void **unused)
{
    (void)unused;
    outcome o = {0};
    char buf[8192];
    for (size_t i = 0; i < sizeof pod_cases / sizeof pod_cases[0]; i++) {
        size_t n = mutate(POD, pod_cases[i][0], pod_cases[i][1], buf, sizeof buf);
        agree(pod_cases[i][1], buf, n, true, &o);
    }
    for (size_t i = 0; i < sizeof node_cases / sizeof node_cases[0]; i++) {
        size_t n = mutate(NODE, node_cases[i][0], node_cases[i][1], buf, sizeof buf);
        agree(node_cases[i][1], buf, n, false, &o);
    }
    /* long labels: objects_sched.c's line of 1,200 bytes and more meta text than the
     * document path keeps (4 kB) */
    for (int len = 1190; len <= 1200; len += 5) {
        char big[1300];
        memset(big, 'v', (size_t)len);
        big[len] = 0;
        char to[1400];
        snprintf(to, sizeof to, "\"pool\":\"%s\"", big);
        size_t n = mutate(NODE, "\"pool\":\"gpu\"", to, buf, sizeof buf);
        agree("a long label", buf, n, false, &o);
    }
    char many[6000];
    int w = 0;
    for (int i = 0; i < 60; i++)
        w += snprintf(many + w, sizeof many - (size_t)w, "\"label-%02d\":\"%060d\",", i, i);
    snprintf(many + w, sizeof many - (size_t)w, "\"pool\":\"gpu\"");
    size_t n = mutate(NODE, "\"pool\":\"gpu\"", many, buf, sizeof buf);
    agree("many labels", buf, n, false, &o);
    assert_int_equal(o.compared, (int)(sizeof pod_cases / sizeof pod_cases[0] +
                                       sizeof node_cases / sizeof node_cases[0]) +
                                     3 + 1);
    /* the unmutated ones took the document path; the rare rules objects.c's */
    assert_true(o.fast > o.compared / 2);
    assert_true(o.fast < o.compared);
}

/* Random bytes that matter to JSON replaced or dropped, on both objects. */
static void test_random_mutations_agree(void **unused)
{
    (void)unused;
    static const char bytes[] = "\"\\{}[],:0-.e 1tfnu\t";
    uint64_t rng = 0x2545f4914f6cdd1dULL;
    outcome o = {0};
    char m[sizeof POD];
    for (int k = 0; k < 4000; k++) {
        bool pod = k % 2 == 0;
        const char *base = pod ? POD : NODE;
        size_t n = strlen(base), at = (size_t)(tu_rnd(&rng) % n);
        memcpy(m, base, n);
        if (tu_rnd(&rng) % 3) {
            m[at] = bytes[tu_rnd(&rng) % (sizeof bytes - 1)];
        } else {
            memmove(m + at, m + at + 1, n - at - 1);
            n--;
        }
        agree("a random mutation", m, n, pod, &o);
    }
    print_message("%d random mutations decoded both ways\n", o.compared);
    assert_true(o.compared > 400);
}

/* Out of memory at every allocation of a decode from a document: DRV_ENOMEM said so, or the
 * record once there are enough; nothing leaked (the sanitizer build checks). */
static void test_failing_allocations(void **unused)
{
    (void)unused;
    drv_jdoc doc;
    drv_jdoc_init(&doc);
    for (int pod = 0; pod < 2; pod++) {
        const char *text = pod ? POD : NODE;
        bool done = false;
        for (long nth = 1; nth < 200 && !done; nth++) {
            drv_strtab *names = drv_strtab_new();
            assert_non_null(names);
            drv_diag d = {{0}};
            drv_kpod p;
            drv_knode nd;
            drv_alloc_fail_at(nth);
            int rc = drv_jdoc_parse(&doc, text, strlen(text), NULL, NULL, NULL);
            if (rc == 0)
                rc = pod ? drv_kube_decode_pod_doc(&doc, 0, names, &p, &d)
                         : drv_kube_decode_node_doc(&doc, 0, names, &nd, &d);
            done = drv_alloc_fail_pending() > 0;
            drv_alloc_fail_at(0);
            if (done)
                assert_int_equal(rc, 0);
            else if (rc != -1) /* (-1: the parse ran out) */
                assert_int_equal(rc, DRV_ENOMEM);
            drv_strtab_free(names);
            drv_jdoc_fini(&doc);
        }
        assert_true(done);
    }
}

int main(void)
{
    json_set_alloc_funcs(counting_malloc, free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_objects_agree),
        cmocka_unit_test(test_mutations_agree),
        cmocka_unit_test(test_random_mutations_agree),
        cmocka_unit_test(test_failing_allocations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
