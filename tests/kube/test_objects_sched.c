/*
 * test_objects_sched.c - the scheduling vocabulary's decoders (src/kube/objects_sched.c): a
 * Node's labels and taints through their interned text and back, a pod spec's constraints with
 * Kubernetes' validation (each error names its field), PriorityClasses, Queues and a Queue's
 * status. Expected values are written from the API reference, not from the program's output.
 */
#include "json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    if (!o)
        fail_msg("bad test JSON: %s", e.text);
    return o;
}

static void test_node_meta_round_trip(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    drv_diag d;
    json_t *o = load("{\"metadata\":{\"name\":\"g1\",\"labels\":{\"pool\":\"gpu\","
                     "\"kubernetes.io/hostname\":\"g1\",\"gen\":\"4\"}},\"spec\":{\"taints\":["
                     "{\"key\":\"gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"},"
                     "{\"key\":\"spot\",\"effect\":\"PreferNoSchedule\"}]}}");
    int32_t meta;
    assert_int_equal(drv_kube_node_meta(o, names, "node g1", &meta, &d), 0);
    assert_true(meta > 0);
    drv_strtab *st = drv_strtab_new();
    drv_label *l;
    drv_taint *t;
    int32_t nl, nt;
    assert_int_equal(drv_node_meta_parse(drv_strtab_str(names, meta), st, &l, &nl, &t, &nt), 0);
    assert_int_equal(nl, 2); /* hostname left out */
    assert_int_equal(nt, 2);
    for (int32_t i = 0; i < nl; i++)
        assert_string_not_equal(drv_strtab_str(st, l[i].key), "kubernetes.io/hostname");
    assert_string_equal(drv_strtab_str(st, t[0].key), "gpu");
    assert_string_equal(drv_strtab_str(st, t[0].value), "true");
    assert_int_equal(t[0].effect, DRV_EFFECT_NO_SCHEDULE);
    assert_string_equal(drv_strtab_str(st, t[1].value), "");
    assert_int_equal(t[1].effect, DRV_EFFECT_PREFER_NO_SCHEDULE);
    drv_free(l);
    drv_free(t);
    /* the same labels in another order are another text, but the same labels */
    json_t *o2 = load("{\"metadata\":{\"name\":\"g2\"}}");
    assert_int_equal(drv_kube_node_meta(o2, names, "node g2", &meta, &d), 0);
    assert_int_equal(meta, 0); /* none at all */
    json_decref(o2);
    json_decref(o);
    o = load("{\"metadata\":{\"name\":\"g3\"},\"spec\":{\"taints\":[{\"key\":\"a\","
             "\"effect\":\"Sometimes\"}]}}");
    assert_int_equal(drv_kube_node_meta(o, names, "node g3", &meta, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "node g3: spec.taints[0].effect: expected NoSchedule"));
    json_decref(o);
    drv_strtab_free(st);
    drv_strtab_free(names);
}

static void test_constraint_decode(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    drv_diag d;
    json_t *spec =
        load("{\"nodeSelector\":{\"pool\":\"gpu\"},\"affinity\":{\"nodeAffinity\":{"
             "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
             "{\"matchExpressions\":[{\"key\":\"gen\",\"operator\":\"Gt\",\"values\":[\"3\"]},"
             "{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]}]},"
             "{\"matchExpressions\":[{\"key\":\"big\",\"operator\":\"Exists\"}]}]},"
             "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":30,\"preference\":"
             "{\"matchExpressions\":[{\"key\":\"ssd\",\"operator\":\"DoesNotExist\"}]}}]}},"
             "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"},"
             "{\"operator\":\"Exists\"},{\"key\":\"x\",\"value\":\"y\"}]}");
    drv_constraint c;
    assert_int_equal(drv_kube_decode_constraint(spec, names, "tj a", "spec", &c, &d), 0);
    assert_int_equal(c.nselector, 1);
    assert_int_equal(c.nrequired, 2);
    assert_int_equal(c.npreferred, 1);
    assert_int_equal(c.nexpr, 4);
    assert_int_equal(c.expr[0].term, 0);
    assert_int_equal(c.expr[0].op, DRV_SEL_GT);
    assert_int_equal(c.expr[0].num, 3);
    assert_int_equal(c.expr[1].nvalues, 2);
    assert_int_equal(c.expr[2].term, 1);
    assert_int_equal(c.expr[3].term, 2); /* the preference follows the required terms */
    assert_int_equal(c.expr[3].op, DRV_SEL_DOES_NOT_EXIST);
    assert_int_equal(c.weight[0], 30);
    assert_int_equal(c.ntol, 3);
    assert_true(c.tol[0].exists);
    assert_int_equal(c.tol[0].effect, DRV_EFFECT_NO_SCHEDULE);
    assert_int_equal(c.tol[1].key, 0); /* every key */
    assert_int_equal(c.tol[1].effect, DRV_EFFECT_ANY);
    assert_false(c.tol[2].exists); /* Equal by default */
    assert_string_equal(drv_strtab_str(names, c.tol[2].value), "y");
    drv_constraint_fini(&c);
    /* the interned form: keys sorted, so equal specs written differently are one text */
    char *a = drv_kube_constraint_json(spec);
    json_t *spec2 = load("{\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":"
                         "\"NoSchedule\"}],\"nodeSelector\":{\"pool\":\"gpu\"}}");
    json_t *spec3 = load("{\"nodeSelector\":{\"pool\":\"gpu\"},\"tolerations\":[{\"effect\":"
                         "\"NoSchedule\",\"operator\":\"Exists\",\"key\":\"gpu\"}],"
                         "\"containers\":[]}");
    char *b = drv_kube_constraint_json(spec2), *b3 = drv_kube_constraint_json(spec3);
    assert_non_null(a);
    assert_string_equal(b, b3);
    assert_string_not_equal(a, b);
    json_t *none = load("{\"containers\":[],\"nodeSelector\":{}}");
    assert_null(drv_kube_constraint_json(none));
    drv_free(a);
    drv_free(b);
    drv_free(b3);
    json_decref(none);
    json_decref(spec2);
    json_decref(spec3);
    json_decref(spec);
    drv_strtab_free(names);
}

/* Each bad spec fails naming its field. */
static void test_constraint_errors(void **unused)
{
    (void)unused;
    static const char *const bad[][2] = {
        {"{\"nodeSelector\":{\"pool\":3}}", "spec.nodeSelector.pool: expected a string"},
        {"{\"tolerations\":{}}", "spec.tolerations: expected a list"},
        {"{\"tolerations\":[{\"key\":\"a\",\"operator\":\"Exists\",\"value\":\"v\"}]}",
         "spec.tolerations[0].value: must be empty with operator Exists"},
        {"{\"tolerations\":[{\"value\":\"v\"}]}",
         "spec.tolerations[0].key: an empty key needs operator Exists"},
        {"{\"tolerations\":[{\"key\":\"a\",\"operator\":\"Is\"}]}",
         "spec.tolerations[0].operator: expected Exists or Equal, found 'Is'"},
        {"{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
         "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"z\",\"operator\":\"In\"}]}]"
         "}}}}",
         "nodeSelectorTerms[0].matchExpressions[0].values: In takes 1 to 16 values, found 0"},
        {"{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
         "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"g\",\"operator\":\"Lt\","
         "\"values\":[\"x4\"]}]}]}}}}",
         "matchExpressions[0].values[0]: expected an integer for Lt, found 'x4'"},
        {"{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
         "{\"nodeSelectorTerms\":[{\"matchFields\":[]}]}}}}",
         "nodeSelectorTerms[0].matchFields: not supported"},
        {"{\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":"
         "[{\"weight\":0,\"preference\":{}}]}}}",
         "preferredDuringSchedulingIgnoredDuringExecution[0].weight: expected an integer in "
         "[1, 100]"},
    };
    drv_strtab *names = drv_strtab_new();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *o = load(bad[i][0]);
        drv_constraint c;
        drv_diag d = {{0}};
        assert_int_equal(drv_kube_decode_constraint(o, names, "pod p", "spec", &c, &d), DRV_EPARSE);
        if (!strstr(d.msg, bad[i][1]) || strncmp(d.msg, "pod p: spec.", 12) != 0)
            fail_msg("case %zu: '%s' does not say '%s'", i, d.msg, bad[i][1]);
        json_decref(o);
    }
    drv_strtab_free(names);
}

/* A TrainingJob's queue, class, user and a role's constraints; a bad toleration makes the job
 * invalid, naming the role's template field. */
static void test_trainingjob_shared_fields(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    drv_diag d;
    drv_ktrainingjob tj;
    json_t *o = load(
        "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ml\",\"labels\":{\"drover.dev/user\":"
        "\"ana\"}},\"spec\":{\"queue\":\"research\",\"priorityClassName\":\"high\","
        "\"replicaSpecs\":{\"Worker\":{\"replicas\":2,\"template\":{\"spec\":{\"nodeSelector\":{"
        "\"pool\":\"gpu\"},\"containers\":[{\"name\":\"m\"}]}}},\"PS\":{\"template\":{\"spec\":{"
        "\"containers\":[{\"name\":\"m\"}]}}}}}}");
    assert_int_equal(drv_kube_decode_trainingjob(o, names, &tj, &d), 0);
    assert_string_equal(drv_strtab_str(names, tj.queue), "research");
    assert_string_equal(drv_strtab_str(names, tj.priority_class), "high");
    assert_string_equal(drv_strtab_str(names, tj.user), "ana");
    assert_true(tj.cons[DRV_ROLE_WORKER] > 0);
    assert_int_equal(tj.cons[DRV_ROLE_PS], 0);
    json_decref(o);
    o = load("{\"metadata\":{\"name\":\"b\",\"namespace\":\"ml\"},\"spec\":{\"replicaSpecs\":{"
             "\"Worker\":{\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"g\",\"effect\":"
             "\"Never\"}],\"containers\":[{\"name\":\"m\"}]}}}}}}");
    assert_int_equal(drv_kube_decode_trainingjob(o, names, &tj, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "trainingjob ml/b: spec.replicaSpecs.Worker.template.spec."
                                  "tolerations[0].effect: expected NoSchedule"));
    json_decref(o);
    o = load("{\"metadata\":{\"name\":\"c\",\"namespace\":\"ml\"},\"spec\":{\"queue\":\"\","
             "\"replicaSpecs\":{\"Worker\":{\"template\":{\"spec\":{\"containers\":[{}]}}}}}}");
    assert_int_equal(drv_kube_decode_trainingjob(o, names, &tj, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "spec.queue: expected a name"));
    json_decref(o);
    drv_strtab_free(names);
}

static void test_priorityclass_and_queue(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    drv_diag d;
    drv_kpriorityclass pc;
    json_t *o = load("{\"metadata\":{\"name\":\"high\",\"resourceVersion\":\"7\"},\"value\":1000,"
                     "\"globalDefault\":true}");
    assert_int_equal(drv_kube_decode_priorityclass(o, names, &pc, &d), 0);
    assert_int_equal(pc.value, 1000);
    assert_true(pc.global_default);
    assert_string_equal(pc.rv, "7");
    json_decref(o);
    o = load("{\"metadata\":{\"name\":\"odd\"},\"value\":\"1\"}");
    assert_int_equal(drv_kube_decode_priorityclass(o, names, &pc, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "priorityclass odd: value: expected a 32-bit integer"));
    json_decref(o);
    /* drover.dev/min-runtime-seconds: the class's minimum run time; a bad one named */
    o = load("{\"metadata\":{\"name\":\"patient\",\"annotations\":{"
             "\"drover.dev/min-runtime-seconds\":\"1800.5\"}},\"value\":0}");
    assert_int_equal(drv_kube_decode_priorityclass(o, names, &pc, &d), 0);
    assert_true(pc.min_runtime == 1800.5);
    json_decref(o);
    static const char *const bad_mr[] = {"\"-1\"", "\"1h\"", "\"\"", "3600", "\"9e9\""};
    for (int i = 0; i < 5; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"metadata\":{\"name\":\"p\",\"annotations\":{"
                 "\"drover.dev/min-runtime-seconds\":%s}},\"value\":0}",
                 bad_mr[i]);
        o = load(text);
        assert_int_equal(drv_kube_decode_priorityclass(o, names, &pc, &d), DRV_EPARSE);
        assert_non_null(strstr(d.msg, "priorityclass p: metadata.annotations.drover.dev/"
                                      "min-runtime-seconds: expected seconds in [0, 2592000]"));
        json_decref(o);
    }

    drv_kqueue q;
    o = load("{\"metadata\":{\"name\":\"research\"},\"spec\":{\"cohort\":\"lab\",\"nominalQuota\":"
             "{\"cpu\":\"12\",\"nvidia.com/gpu\":4},\"borrowingLimit\":{\"cpu\":\"500m\"}}}");
    assert_int_equal(drv_kube_decode_queue(o, names, &q, &d), 0);
    assert_true(q.weight == 1); /* the default */
    assert_string_equal(drv_strtab_str(names, q.cohort), "lab");
    assert_int_equal(q.quota.cpu, 12000);
    assert_int_equal(q.quota.gpu, 4);
    assert_true(q.quota.mem == DRV_UNLIMITED); /* not listed: no bound */
    assert_int_equal(q.borrow.cpu, 500);
    assert_true(q.borrow.gpu == DRV_UNLIMITED);
    assert_int_equal(q.nns, -1); /* no spec.namespaces: every namespace */
    assert_false(q.user_label);
    json_decref(o);
    o = load("{\"metadata\":{\"name\":\"q\"},\"spec\":{\"namespaces\":[\"team-a\",\"team-b\"],"
             "\"userFromLabel\":true}}");
    assert_int_equal(drv_kube_decode_queue(o, names, &q, &d), 0);
    assert_int_equal(q.nns, 2);
    assert_string_equal(drv_strtab_str(names, q.ns[1]), "team-b");
    assert_true(q.user_label);
    assert_true(q.min_runtime == 0); /* absent: no minimum run time */
    json_decref(o);
    o = load("{\"metadata\":{\"name\":\"q\"},\"spec\":{\"minRuntimeSeconds\":600}}");
    assert_int_equal(drv_kube_decode_queue(o, names, &q, &d), 0);
    assert_true(q.min_runtime == 600);
    json_decref(o);
    o = load("{\"metadata\":{\"name\":\"q\"},\"spec\":{\"namespaces\":[]}}");
    assert_int_equal(drv_kube_decode_queue(o, names, &q, &d), 0);
    assert_int_equal(q.nns, 0); /* []: no namespace */
    json_decref(o);
    static const char *const bad[][2] = {
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"namespaces\":\"team-a\"}}",
         "queue q: spec.namespaces: expected a list of at most 32 names"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"namespaces\":[\"ok\",\"a,b\"]}}",
         "queue q: spec.namespaces[1]: expected a name of 1 to 63"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"namespaces\":[7]}}",
         "queue q: spec.namespaces[0]: expected a name"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"userFromLabel\":\"yes\"}}",
         "queue q: spec.userFromLabel: expected true or false"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"weight\":0}}",
         "queue q: spec.weight: expected a number in (0, 1e6]"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"nominalQuota\":{\"cpu\":\"lots\"}}}",
         "queue q: spec.nominalQuota.cpu: expected a quantity, found 'lots'"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"cohort\":7}}",
         "queue q: spec.cohort: expected a string"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"minRuntimeSeconds\":-5}}",
         "queue q: spec.minRuntimeSeconds: expected seconds in [0, 2592000]"},
        {"{\"metadata\":{\"name\":\"q\"},\"spec\":{\"minRuntimeSeconds\":\"1h\"}}",
         "queue q: spec.minRuntimeSeconds: expected seconds in [0, 2592000]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = load(bad[i][0]);
        assert_int_equal(drv_kube_decode_queue(o, names, &q, &d), DRV_EPARSE);
        if (!strstr(d.msg, bad[i][1]))
            fail_msg("case %zu: '%s' does not say '%s'", i, d.msg, bad[i][1]);
        json_decref(o);
    }
    /* status: what kubectl's columns read */
    o = load("{\"metadata\":{\"name\":\"research\"},\"spec\":{}}");
    assert_int_equal(drv_kube_queue_set_status(o, 2, 1, (drv_res){4500, 1LL << 30, 2}, -1), 0);
    json_t *st = json_object_get(o, "status");
    assert_int_equal(json_integer_value(json_object_get(st, "pending")), 2);
    assert_int_equal(json_integer_value(json_object_get(st, "admitted")), 1);
    json_t *used = json_object_get(st, "used");
    assert_string_equal(json_string_value(json_object_get(used, "cpu")), "4500m");
    assert_string_equal(json_string_value(json_object_get(used, "memory")), "1073741824");
    assert_string_equal(json_string_value(json_object_get(used, "nvidia.com/gpu")), "2");
    assert_null(json_object_get(st, "usage")); /* half-life 0: no decayed usage */
    assert_int_equal(drv_kube_queue_set_status(o, 2, 1, (drv_res){4500, 1LL << 30, 2}, 0.25), 0);
    assert_string_equal(json_string_value(json_object_get(st, "usage")), "0.250");
    assert_int_equal(drv_kube_queue_set_status(o, 2, 1, (drv_res){4500, 1LL << 30, 2}, -1), 0);
    assert_string_equal(json_string_value(json_object_get(st, "usage")), "0.250"); /* left */
    assert_int_equal(drv_kube_queue_set_status(o, 2, 1, (drv_res){4500, 1LL << 30, 2}, -2), 0);
    assert_true(json_is_null(json_object_get(st, "usage"))); /* a merge patch's removal */
    json_decref(o);
    drv_strtab_free(names);
}

/* Every allocation of the decoders failing in turn: DRV_ENOMEM (or success, once the
 * failure falls past them), never a crash or a leak (the sanitizer build checks leaks). */
static void test_allocation_failures(void **unused)
{
    (void)unused;
    json_t *node = load("{\"metadata\":{\"name\":\"g\",\"labels\":{\"a\":\"1\",\"b\":\"2\"}},"
                        "\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]}}");
    json_t *spec =
        load("{\"nodeSelector\":{\"p\":\"g\"},\"affinity\":{\"nodeAffinity\":{"
             "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\""
             ":[{\"matchExpressions\":[{\"key\":\"z\",\"operator\":\"In\",\"values\":"
             "[\"a\"]}]}]},\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
             "\"weight\":5,\"preference\":{\"matchExpressions\":[{\"key\":\"s\","
             "\"operator\":\"Exists\"}]}}]}},\"tolerations\":[{\"operator\":\"Exists\"}]}");
    int ok = 0;
    for (long nth = 1; nth < 60; nth++) {
        drv_strtab *names = drv_strtab_new();
        if (!names)
            continue;
        drv_diag d;
        int32_t meta = 0;
        drv_alloc_fail_at(nth);
        int rc1 = drv_kube_node_meta(node, names, "node g", &meta, &d);
        drv_label *l = NULL;
        drv_taint *t = NULL;
        int32_t nl = 0, nt = 0;
        int rc2 = rc1 == 0
                      ? drv_node_meta_parse(drv_strtab_str(names, meta), names, &l, &nl, &t, &nt)
                      : rc1;
        drv_constraint c;
        int rc3 = drv_kube_decode_constraint(spec, names, "pod p", "spec", &c, &d);
        char *text = drv_kube_constraint_json(spec);
        drv_alloc_fail_at(0);
        assert_true(rc1 == 0 || rc1 == DRV_ENOMEM);
        assert_true(rc2 == 0 || rc2 == DRV_ENOMEM);
        assert_true(rc3 == 0 || rc3 == DRV_ENOMEM);
        if (rc3 == 0)
            drv_constraint_fini(&c);
        ok += rc1 == 0 && rc2 == 0 && rc3 == 0 && text;
        drv_free(text);
        drv_free(l);
        drv_free(t);
        drv_strtab_free(names);
    }
    assert_true(ok > 0); /* (the failure fell past them at last) */
    json_decref(node);
    json_decref(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_meta_round_trip),
        cmocka_unit_test(test_constraint_decode),
        cmocka_unit_test(test_constraint_errors),
        cmocka_unit_test(test_trainingjob_shared_fields),
        cmocka_unit_test(test_priorityclass_and_queue),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
