/*
 * test_lifecycle.c - a training job's state from its pods (src/ctrl/lifecycle.c): Kubeflow's
 * restartPolicy, backoffLimit, activeDeadlineSeconds, suspend, cleanPodPolicy and TTL rules, and
 * metav1.Condition transition times. Each case states the rule it pins.
 */
#include "lifecycle.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* A TensorFlow job: chief + 2 workers, every role under restart policy r. */
static drv_lifecycle_in tf_job(drv_pod_obs *pods, drv_restart r)
{
    drv_lifecycle_in in = {.policy = drv_run_policy_default(),
                           .pods = pods,
                           .npods = 3,
                           .placed = true,
                           .now = 100,
                           .start_time = 10,
                           .completion_time = -1};
    in.replicas[DRV_ROLE_CHIEF] = 1;
    in.replicas[DRV_ROLE_WORKER] = 2;
    for (int i = 0; i < DRV_NROLES; i++)
        in.restart[i] = r;
    pods[0] = (drv_pod_obs){.role = DRV_ROLE_CHIEF, .phase = DRV_OBS_RUNNING, .exit_code = -1};
    pods[1] = (drv_pod_obs){.role = DRV_ROLE_WORKER, .phase = DRV_OBS_RUNNING, .exit_code = -1};
    pods[2] = (drv_pod_obs){
        .role = DRV_ROLE_WORKER, .rank = 1, .phase = DRV_OBS_RUNNING, .exit_code = -1};
    return in;
}

/* The chief outlives its workers: finished workers neither finish nor fail the job. */
static void chief_outlives_workers(void **state)
{
    (void)state;
    drv_pod_obs pods[3];
    drv_lifecycle_in in = tf_job(pods, DRV_RESTART_NEVER);
    pods[1].phase = pods[2].phase = DRV_OBS_SUCCEEDED;
    drv_lifecycle_out out;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RUNNING);
    assert_int_equal(out.nrestart, 0);
    pods[0].phase = DRV_OBS_SUCCEEDED;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_SUCCEEDED);
    assert_true(out.finished);
    assert_true(out.delete_running); /* cleanPodPolicy Running by default */
}

static void never_fails_the_job(void **state)
{
    (void)state;
    drv_pod_obs pods[3];
    drv_lifecycle_in in = tf_job(pods, DRV_RESTART_NEVER);
    pods[2].phase = DRV_OBS_FAILED;
    pods[2].exit_code = 137;
    drv_lifecycle_out out;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_FAILED);
    assert_string_equal(out.reason, "PodFailed");
    assert_int_equal(out.nrestart, 0);
}

/* OnFailure restarts until backoffLimit, counting kubelet's container restarts too. */
static void on_failure_restarts_until_backoff_limit(void **state)
{
    (void)state;
    drv_pod_obs pods[3];
    drv_lifecycle_in in = tf_job(pods, DRV_RESTART_ON_FAILURE);
    in.policy.backoff_limit = 2;
    pods[1].phase = DRV_OBS_FAILED;
    drv_lifecycle_out out;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RESTARTING);
    assert_int_equal(out.nrestart, 1);
    assert_int_equal(out.restart[0], 1);
    in.restarts = 1;
    pods[0].restarts = 1; /* kubelet restarted the chief's container once */
    drv_lifecycle_step(&in, DRV_COND_RESTARTING, &out);
    assert_int_equal(out.state, DRV_COND_FAILED);
    assert_string_equal(out.reason, "BackoffLimitExceeded");
    assert_int_equal(out.nrestart, 0);
}

/* The kubelet's restarts in place count toward backoffLimit with no pod failed, as Kubeflow
 * counts them: a job is failed once they exceed it, not before; an ExitCode role's are not
 * counted (its pods are Never to the kubelet), nor those of a pod no longer there. */
static void kubelet_restarts_in_place_count(void **state)
{
    (void)state;
    drv_pod_obs pods[3];
    drv_lifecycle_in in = tf_job(pods, DRV_RESTART_ON_FAILURE);
    in.policy.backoff_limit = 3;
    pods[1].restarts = 2;
    pods[2].restarts = 1;
    drv_lifecycle_out out;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RUNNING); /* 3 restarts: within the limit */
    pods[2].restarts = 2;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_FAILED);
    assert_string_equal(out.reason, "BackoffLimitExceeded");
    assert_non_null(strstr(out.message, "4 time(s) in place"));
    assert_int_equal(out.nrestart, 0);
    assert_true(out.delete_running); /* (cleanPodPolicy Running) */
    in.restarts = 1;                 /* the controller's own restarts add up with them */
    pods[2].restarts = 1;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_FAILED);
    pods[2].phase = DRV_OBS_ABSENT; /* deleted: its count went with it */
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RUNNING);
    in = tf_job(pods, DRV_RESTART_EXIT_CODE);
    in.policy.backoff_limit = 0;
    pods[1].restarts = 5;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RUNNING);
}

/* ExitCode: 128-255 (killed by a signal) restart, 1-127 fail. */
static void exit_code_policy(void **state)
{
    (void)state;
    drv_pod_obs pods[3];
    drv_lifecycle_in in = tf_job(pods, DRV_RESTART_EXIT_CODE);
    pods[2].phase = DRV_OBS_FAILED;
    pods[2].exit_code = 137;
    drv_lifecycle_out out;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RESTARTING);
    assert_int_equal(out.nrestart, 1);
    pods[2].exit_code = 1;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_FAILED);
    assert_string_equal(out.reason, "PermanentError");
    assert_non_null(strstr(out.message, "code 1"));
}

/* All-reduce without a master: done when every worker is. */
static void allreduce_without_master_needs_every_worker(void **state)
{
    (void)state;
    drv_pod_obs pods[3];
    drv_lifecycle_in in = tf_job(pods, DRV_RESTART_NEVER);
    in.allreduce = true;
    in.replicas[DRV_ROLE_CHIEF] = 0;
    pods[0] = (drv_pod_obs){.role = DRV_ROLE_WORKER, .rank = 2, .phase = DRV_OBS_RUNNING};
    in.replicas[DRV_ROLE_WORKER] = 3;
    pods[1].phase = pods[2].phase = DRV_OBS_SUCCEEDED;
    drv_lifecycle_out out;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RUNNING);
    pods[0].phase = DRV_OBS_SUCCEEDED;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_SUCCEEDED);
}

/* TensorFlow without a chief: worker 0 decides (Kubeflow's default success policy). */
static void tensorflow_without_chief_follows_worker0(void **state)
{
    (void)state;
    drv_pod_obs pods[3];
    drv_lifecycle_in in = tf_job(pods, DRV_RESTART_NEVER);
    in.replicas[DRV_ROLE_CHIEF] = 0;
    pods[0] = (drv_pod_obs){.role = DRV_ROLE_PS, .phase = DRV_OBS_RUNNING};
    pods[2].phase = DRV_OBS_SUCCEEDED; /* worker 1 */
    drv_lifecycle_out out;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RUNNING);
    pods[1].phase = DRV_OBS_SUCCEEDED; /* worker 0 */
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_SUCCEEDED);
}

/* Worker-only under TFJob's successPolicy AllWorkers: worker 0 ending does not end the job (its
 * other ranks keep running); the last worker's success does. */
static void all_workers_success_policy(void **state)
{
    (void)state;
    drv_pod_obs pods[3];
    drv_lifecycle_in in = tf_job(pods, DRV_RESTART_NEVER);
    in.replicas[DRV_ROLE_CHIEF] = 0;
    in.replicas[DRV_ROLE_WORKER] = 3;
    in.policy.all_workers = true;
    pods[0] = (drv_pod_obs){.role = DRV_ROLE_WORKER, .rank = 2, .phase = DRV_OBS_RUNNING};
    pods[1].phase = DRV_OBS_SUCCEEDED; /* worker 0 */
    drv_lifecycle_out out;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RUNNING);
    assert_false(out.delete_running);
    pods[2].phase = DRV_OBS_SUCCEEDED;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RUNNING);
    pods[0].phase = DRV_OBS_SUCCEEDED;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_SUCCEEDED);
    /* the same job under the default policy: worker 0 alone ends it, the rest are deleted */
    in.policy.all_workers = false;
    pods[0].phase = pods[2].phase = DRV_OBS_RUNNING;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_SUCCEEDED);
    assert_true(out.delete_running);
}

static void suspend_deadline_and_ttl(void **state)
{
    (void)state;
    drv_pod_obs pods[3];
    drv_lifecycle_in in = tf_job(pods, DRV_RESTART_NEVER);
    in.policy.suspend = true;
    drv_lifecycle_out out;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_SUSPENDED);
    assert_true(out.delete_running);
    in.policy.suspend = false;
    in.policy.active_deadline_s = 90; /* started at 10, now 100 */
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_FAILED);
    assert_string_equal(out.reason, "DeadlineExceeded");
    in.policy.active_deadline_s = 91;
    drv_lifecycle_step(&in, DRV_COND_RUNNING, &out);
    assert_int_equal(out.state, DRV_COND_RUNNING);
    /* finished at 50, kept 60 s: deleted from 110 on; cleanPodPolicy None deletes nothing */
    in.completion_time = 50;
    in.policy.ttl_after_finished_s = 60;
    in.policy.clean = DRV_CLEAN_NONE;
    drv_lifecycle_step(&in, DRV_COND_SUCCEEDED, &out);
    assert_int_equal(out.state, DRV_COND_SUCCEEDED);
    assert_false(out.delete_job);
    assert_false(out.delete_running);
    in.now = 110;
    drv_lifecycle_step(&in, DRV_COND_SUCCEEDED, &out);
    assert_true(out.delete_job);
}

static void queued_until_placed(void **state)
{
    (void)state;
    drv_pod_obs pods[3];
    drv_lifecycle_in in = tf_job(pods, DRV_RESTART_NEVER);
    in.npods = 0;
    in.placed = false;
    in.start_time = -1;
    drv_lifecycle_out out;
    drv_lifecycle_step(&in, DRV_COND_CREATED, &out);
    assert_int_equal(out.state, DRV_COND_QUEUED);
    in.npods = 3;
    in.placed = true;
    drv_lifecycle_step(&in, DRV_COND_QUEUED, &out);
    assert_int_equal(out.state, DRV_COND_RUNNING);
    assert_true(out.started);
}

/* metav1.Condition: lastTransitionTime moves only when the status does. */
static void condition_transition_time(void **state)
{
    (void)state;
    drv_condition c[DRV_NCONDS] = {{0}};
    drv_condition_set(c, DRV_COND_RUNNING, true, "JobRunning", "a", 5);
    drv_condition_set(c, DRV_COND_RUNNING, true, "JobRunning", "b", 9);
    assert_true(c[DRV_COND_RUNNING].last_transition == 5);
    assert_string_equal(c[DRV_COND_RUNNING].message, "b");
    drv_condition_set(c, DRV_COND_RUNNING, false, "JobSucceeded", "c", 12);
    assert_true(c[DRV_COND_RUNNING].last_transition == 12);
    assert_false(c[DRV_COND_FAILED].set);
    assert_string_equal(drv_job_cond_name(DRV_COND_RESTARTING), "Restarting");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chief_outlives_workers),
        cmocka_unit_test(never_fails_the_job),
        cmocka_unit_test(on_failure_restarts_until_backoff_limit),
        cmocka_unit_test(kubelet_restarts_in_place_count),
        cmocka_unit_test(exit_code_policy),
        cmocka_unit_test(allreduce_without_master_needs_every_worker),
        cmocka_unit_test(tensorflow_without_chief_follows_worker0),
        cmocka_unit_test(all_workers_success_policy),
        cmocka_unit_test(suspend_deadline_and_ttl),
        cmocka_unit_test(queued_until_placed),
        cmocka_unit_test(condition_transition_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
