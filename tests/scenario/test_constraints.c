/*
 * Scenario: node constraints (constraint.c) through the simulator, from cluster and workload
 * files as a user writes them. Each case is built so that the plain scores (least-allocated,
 * ties to the lowest node id) would put the pods elsewhere: with the filter off, every
 * assertion here fails.
 */
#include "scenario.h"

#include <unistd.h>

/* Writes text to a new temporary file; its path into path (at least 32 bytes). */
static void write_tmp(char *path, const char *text)
{
    snprintf(path, 32, "drover-cons-XXXXXX"); /* in the test's working directory */
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
}

/* Loads a cluster and a workload given as YAML text. */
static void load(drv_cluster_spec *c, drv_workload *w, const char *cluster, const char *workload)
{
    char cp[32], wp[32];
    drv_diag d = {{0}};
    write_tmp(cp, cluster);
    write_tmp(wp, workload);
    int rc = drv_cluster_load(c, cp, &d);
    if (!rc)
        rc = drv_workload_load(w, wp, &tu_cat, 1, &d);
    unlink(cp);
    unlink(wp);
    if (rc)
        fail_msg("%s", d.msg);
}

/* Runs the profile line on them until t and calls check on the state. */
static void run(const char *cluster, const char *workload, const char *line, double t,
                void (*check)(const drv_state *st))
{
    drv_cluster_spec c = {0};
    drv_workload w = {0};
    load(&c, &w, cluster, workload);
    drv_profile p;
    drv_diag d = {{0}};
    if (drv_profile_parse("test", line, &p, &d))
        fail_msg("%s", d.msg);
    drv_sim_config cfg = {.seed = 1, .check = true};
    drv_sim *s = NULL;
    if (drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d))
        fail_msg("%s", d.msg);
    until(s, t);
    check(drv_sim_state(s));
    drv_sim_free(s);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* The name of the node a job's pod is on, or "-" when unbound. */
static const char *node_of(const drv_state *st, int32_t job, int role, int index)
{
    int32_t n = st->pods[drv_job_pod(st, job, role, index)].node;
    return n < 0 ? "-" : drv_strtab_str(st->names, st->nodes[n].name);
}

static const char *const profiles[] = {
    "admit=gang score=least-allocated",
    "admit=gang score=locality*4,ps-anti-affinity,least-allocated", /* the drover profile's */
};

/* Two small plain nodes first (the lowest ids: ties go there), then two large GPU nodes in a
 * tainted pool that least-allocated prefers (more room left). */
static const char pool_cluster[] = "nodes:\n"
                                   "  - {name: cpu, count: 2, cpu: 16, memory: 64Gi}\n"
                                   "  - name: gpu\n"
                                   "    count: 2\n"
                                   "    cpu: 64\n"
                                   "    memory: 256Gi\n"
                                   "    labels: {pool: gpu}\n"
                                   "    taints: [{key: gpu, value: 'true', effect: NoSchedule}]\n";

static const char pool_workload[] =
    "jobs:\n"
    "  - name: plain\n"
    "    model: lenet\n"
    "    roles: {worker: {replicas: 3, cpu: 2, memory: 1Gi}}\n"
    "  - name: tolerant\n"
    "    model: lenet\n"
    "    roles:\n"
    "      worker:\n"
    "        replicas: 3\n"
    "        cpu: 2\n"
    "        memory: 1Gi\n"
    "        tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]\n";

static void check_pool(const drv_state *st)
{
    for (int i = 0; i < 3; i++) {
        assert_memory_equal(node_of(st, 0, DRV_ROLE_WORKER, i), "cpu-", 4); /* never tainted */
        assert_memory_equal(node_of(st, 1, DRV_ROLE_WORKER, i), "gpu-", 4); /* may, and does */
    }
}

static void test_taint_keeps_out_the_intolerant(void **unused)
{
    (void)unused;
    for (int k = 0; k < 2; k++)
        run(pool_cluster, pool_workload, profiles[k], 1.5, check_pool);
}

/* Now the tainted pool is the small one: a tolerating job that selects it lands there only. */
static const char small_pool_cluster[] =
    "nodes:\n"
    "  - name: gpu\n"
    "    count: 2\n"
    "    cpu: 16\n"
    "    memory: 64Gi\n"
    "    labels: {pool: gpu}\n"
    "    taints: [{key: gpu, value: 'true', effect: NoSchedule}]\n"
    "  - {name: cpu, count: 2, cpu: 64, memory: 256Gi, labels: {pool: cpu}}\n";

static const char select_workload[] =
    "jobs:\n"
    "  - name: selecting\n"
    "    model: lenet\n"
    "    roles:\n"
    "      ps: {replicas: 1, cpu: 1, memory: 1Gi, nodeSelector: {pool: gpu},\n"
    "           tolerations: [{key: gpu, operator: Equal, value: 'true'}]}\n"
    "      worker:\n"
    "        replicas: 4\n"
    "        cpu: 2\n"
    "        memory: 1Gi\n"
    "        nodeSelector: {pool: gpu}\n"
    "        tolerations: [{operator: Exists}]\n";

static void check_select(const drv_state *st)
{
    assert_memory_equal(node_of(st, 0, DRV_ROLE_PS, 0), "gpu-", 4);
    for (int i = 0; i < 4; i++)
        assert_memory_equal(node_of(st, 0, DRV_ROLE_WORKER, i), "gpu-", 4);
}

static void test_selecting_job_stays_in_its_pool(void **unused)
{
    (void)unused;
    for (int k = 0; k < 2; k++)
        run(small_pool_cluster, select_workload, profiles[k], 1.5, check_select);
}

/* Four equal nodes with gen 2..5 (n0 would win every tie), n2 has an ssd label. One one-pod
 * job per operator. */
static const char gen_cluster[] = "nodes:\n"
                                  "  - {name: n0, cpu: 16, memory: 64Gi, labels: {gen: '2'}}\n"
                                  "  - {name: n1, cpu: 16, memory: 64Gi, labels: {gen: '3'}}\n"
                                  "  - {name: n2, cpu: 16, memory: 64Gi, labels: {gen: '4', "
                                  "ssd: 'yes'}}\n"
                                  "  - {name: n3, cpu: 16, memory: 64Gi, labels: {gen: '5'}}\n";

#define AFFINITY_JOB(name, expr)                                                                   \
    "  - name: " name "\n"                                                                         \
    "    model: lenet\n"                                                                           \
    "    roles:\n"                                                                                 \
    "      worker:\n"                                                                              \
    "        cpu: 1\n"                                                                             \
    "        memory: 1Gi\n"                                                                        \
    "        affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:\n"          \
    "          {nodeSelectorTerms: [{matchExpressions: [" expr "]}]}}}\n"

static const char gen_workload[] =
    "jobs:\n" AFFINITY_JOB("in", "{key: gen, operator: In, values: ['3']}")
        AFFINITY_JOB("notin", "{key: gen, operator: NotIn, values: ['2', '3', '4']}")
            AFFINITY_JOB("exists", "{key: ssd, operator: Exists}")
                AFFINITY_JOB("gt", "{key: gen, operator: Gt, values: ['4']}")
                    AFFINITY_JOB("and", "{key: gen, operator: Lt, values: ['5']}, {key: gen, "
                                        "operator: NotIn, values: ['2']}, {key: ssd, operator: "
                                        "DoesNotExist}");

static void check_gen(const drv_state *st)
{
    assert_string_equal(node_of(st, 0, DRV_ROLE_WORKER, 0), "n1");
    assert_string_equal(node_of(st, 1, DRV_ROLE_WORKER, 0), "n3");
    assert_string_equal(node_of(st, 2, DRV_ROLE_WORKER, 0), "n2");
    assert_string_equal(node_of(st, 3, DRV_ROLE_WORKER, 0), "n3");
    assert_string_equal(node_of(st, 4, DRV_ROLE_WORKER, 0), "n1");
}

static void test_required_affinity(void **unused)
{
    (void)unused;
    for (int k = 0; k < 2; k++)
        run(gen_cluster, gen_workload, profiles[k], 1.5, check_gen);
}

/* Two equal nodes, n0 already holding a pod: a preference for zone a moves the next pod from
 * n1 (emptier: least-allocated's choice) to n0. */
static const char pref_cluster[] = "nodes:\n"
                                   "  - {name: n0, cpu: 16, memory: 64Gi, labels: {zone: a}}\n"
                                   "  - {name: n1, cpu: 16, memory: 64Gi, labels: {zone: b}}\n"
                                   "  - {name: n2, cpu: 16, memory: 64Gi, unschedulable: true}\n";

static const char pref_workload[] =
    "jobs:\n"
    "  - name: plain\n"
    "    model: lenet\n"
    "    roles: {worker: {cpu: 1, memory: 1Gi}}\n"
    "  - name: prefers\n"
    "    model: lenet\n"
    "    submit: 1\n"
    "    roles:\n"
    "      worker:\n"
    "        cpu: 1\n"
    "        memory: 1Gi\n"
    "        affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution:\n"
    "          [{weight: 50, preference: {matchExpressions: [{key: zone, operator: In, values: "
    "[a]}]}}]}}\n"
    "  - name: too-big\n"
    "    model: lenet\n"
    "    submit: 2\n"
    "    roles: {worker: {cpu: 16, memory: 1Gi}}\n"
    "  - name: too-big-2\n"
    "    model: lenet\n"
    "    submit: 2\n"
    "    roles: {worker: {cpu: 16, memory: 1Gi}}\n";

static void check_pref(const drv_state *st)
{
    assert_string_equal(node_of(st, 0, DRV_ROLE_WORKER, 0), "n0"); /* the plain tie-break */
    assert_string_equal(node_of(st, 1, DRV_ROLE_WORKER, 0), "n0");
    assert_string_equal(node_of(st, 2, DRV_ROLE_WORKER, 0), "n1");
    assert_string_equal(node_of(st, 3, DRV_ROLE_WORKER, 0), "-"); /* only n2 has room for it */
    for (int32_t p = 0; p < st->npods; p++)
        assert_true(st->pods[p].node != 2); /* the unschedulable node gets nothing */
}

static void test_preferred_affinity_and_unschedulable(void **unused)
{
    (void)unused;
    for (int k = 0; k < 2; k++)
        run(pref_cluster, pref_workload, profiles[k], 2.5, check_pref);
}

static char warned[512];

static void keep_log(enum drv_log_level lvl, const char *msg, void *arg)
{
    (void)arg;
    if (lvl == DRV_LOG_WARN && strlen(warned) + strlen(msg) + 2 < sizeof warned) {
        strcat(warned, msg);
        strcat(warned, "\n");
    }
}

/* A job asking for nodes no node satisfies is warned about once, like one bigger than the
 * cluster; the tolerating one beside it is not. */
static void test_unsatisfiable_selector_is_warned(void **unused)
{
    (void)unused;
    static const char wl[] =
        "jobs:\n"
        "  - name: lost\n"
        "    model: lenet\n"
        "    roles: {worker: {cpu: 1, memory: 1Gi, nodeSelector: {pool: tpu}}}\n"
        "  - name: found\n"
        "    model: lenet\n"
        "    roles: {worker: {cpu: 1, memory: 1Gi, nodeSelector: {pool: gpu},\n"
        "            tolerations: [{key: gpu, operator: Exists}]}}\n";
    drv_cluster_spec c = {0};
    drv_workload w = {0};
    load(&c, &w, pool_cluster, wl);
    drv_profile p;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_parse("test", profiles[0], &p, &d), 0);
    drv_sim_config cfg = {.seed = 1};
    drv_sim *s = NULL;
    warned[0] = 0;
    drv_log_set(keep_log, NULL, DRV_LOG_WARN);
    int rc = drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d);
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
    assert_int_equal(rc, 0);
    assert_string_equal(warned, "1 job(s) ask for nodes (nodeSelector, affinity, tolerations) that "
                                "no node of the cluster satisfies and will not run, the first "
                                "lost\n");
    drv_sim_free(s);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taint_keeps_out_the_intolerant),
        cmocka_unit_test(test_selecting_job_stays_in_its_pool),
        cmocka_unit_test(test_required_affinity),
        cmocka_unit_test(test_preferred_affinity_and_unschedulable),
        cmocka_unit_test(test_unsatisfiable_selector_is_warned),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
