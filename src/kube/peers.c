/*
 * peers.c - peer discovery for a training job's pods (peers.h): names, TF_CONFIG, the
 * all-reduce variables, the headless Service.
 *
 * Worked example: TrainingJob "mnist" in namespace "ml" with 1 PS, 1 Chief and 2 Workers. The
 * pod of worker 1 is named mnist-worker-1, with hostname mnist-worker-1 and subdomain mnist, so
 * the Service "mnist" (headless) makes mnist-worker-1.mnist.ml.svc resolve to it. Its TF_CONFIG:
 *   {"cluster":{"chief":["mnist-chief-0.mnist.ml.svc:2222"],
 *               "ps":["mnist-ps-0.mnist.ml.svc:2222"],
 *               "worker":["mnist-worker-0.mnist.ml.svc:2222","mnist-worker-1.mnist.ml.svc:2222"]},
 *    "task":{"type":"worker","index":1},"environment":"cloud"}
 * Source of the conventions: Kubeflow's TFJob and PyTorchJob operators and TensorFlow's
 * TF_CONFIG documentation (the evaluator is outside the training cluster).
 */
#include "peers.h"

#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DNS_LABEL_MAX = 63 };

const char *drv_peers_role(const drv_peer_job *j, int role)
{
    if (j->framework == DRV_FRAMEWORK_ALLREDUCE && role == DRV_ROLE_CHIEF)
        return "master";
    return drv_role_name(role);
}

static int port_of(const drv_peer_job *j)
{
    if (j->port > 0)
        return j->port;
    return j->framework == DRV_FRAMEWORK_ALLREDUCE ? DRV_PEERS_MASTER_PORT : DRV_PEERS_TF_PORT;
}

int drv_peers_pod_name(const drv_peer_job *j, int role, int rank, char *buf, size_t n)
{
    int w = snprintf(buf, n, "%s-%s-%d", j->name, drv_peers_role(j, role), rank);
    if (w < 0 || (size_t)w >= n || w > DNS_LABEL_MAX)
        return DRV_ERANGE;
    return 0;
}

/* "<pod>.<job>.<ns>.svc:<port>" as a new JSON string, or NULL. */
static json_t *address(const drv_peer_job *j, int role, int rank)
{
    char pod[DNS_LABEL_MAX + 1], buf[512];
    if (drv_peers_pod_name(j, role, rank, pod, sizeof pod) != 0)
        return NULL;
    snprintf(buf, sizeof buf, "%s.%s.%s.svc:%d", pod, j->name, j->ns, port_of(j));
    return json_string(buf);
}

/* {"chief":[...],"ps":[...],"worker":[...]}: every role but the evaluator. */
static json_t *cluster_spec(const drv_peer_job *j)
{
    json_t *cluster = json_object();
    for (int r = 0; cluster && r < DRV_NROLES; r++) {
        if (r == DRV_ROLE_EVALUATOR || j->replicas[r] <= 0)
            continue;
        json_t *list = json_array();
        if (!list || json_object_set_new(cluster, drv_peers_role(j, r), list) != 0)
            goto fail;
        for (int i = 0; i < j->replicas[r]; i++)
            if (json_array_append_new(list, address(j, r, i)) != 0)
                goto fail;
    }
    return cluster;
fail:
    json_decref(cluster);
    return NULL;
}

char *drv_peers_tf_config(const drv_peer_job *j, int role, int rank)
{
    json_t *cluster = role == DRV_ROLE_EVALUATOR ? json_object() : cluster_spec(j);
    if (!cluster)
        return NULL;
    if (role == DRV_ROLE_EVALUATOR) {
        json_t *self = json_array();
        json_array_append_new(self, address(j, role, rank));
        json_object_set_new(cluster, "evaluator", self);
    }
    json_t *tf = json_pack("{s:o, s:{s:s, s:i}, s:s}", "cluster", cluster, "task", "type",
                           drv_peers_role(j, role), "index", rank, "environment", "cloud");
    if (!tf)
        return NULL;
    char *out = drv_json_dump(tf, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(tf);
    return out;
}

/* Sets name=value in a container's env array, replacing an entry of the same name. */
static int set_env(json_t *container, const char *name, const char *value)
{
    json_t *env = json_object_get(container, "env");
    if (!json_is_array(env)) {
        env = json_array();
        if (!env || json_object_set_new(container, "env", env) != 0)
            return DRV_ENOMEM;
    }
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n && strcmp(n, name) == 0)
            return json_object_set_new(e, "value", json_string(value)) ? DRV_ENOMEM : 0;
    }
    json_t *entry = json_pack("{s:s, s:s}", "name", name, "value", value);
    return entry && json_array_append_new(env, entry) == 0 ? 0 : DRV_ENOMEM;
}

int drv_peers_variables(const drv_peer_job *j, int role, int rank, const char *names[5],
                        char values[5][512], char **tf_config)
{
    *tf_config = NULL;
    if (j->framework == DRV_FRAMEWORK_TENSORFLOW) {
        *tf_config = drv_peers_tf_config(j, role, rank);
        if (!*tf_config)
            return DRV_ENOMEM;
        names[0] = "TF_CONFIG";
        values[0][0] = 0; /* the caller uses *tf_config: it may exceed 512 bytes */
        return 1;
    }
    char master[DNS_LABEL_MAX + 1];
    if (drv_peers_pod_name(j, DRV_ROLE_CHIEF, 0, master, sizeof master) != 0)
        return DRV_ERANGE;
    int masters = j->replicas[DRV_ROLE_CHIEF] > 0 ? 1 : 0;
    names[0] = "MASTER_ADDR";
    snprintf(values[0], 512, "%s.%s.%s.svc", master, j->name, j->ns);
    names[1] = "MASTER_PORT";
    snprintf(values[1], 512, "%d", port_of(j));
    names[2] = "WORLD_SIZE";
    snprintf(values[2], 512, "%d", masters + j->replicas[DRV_ROLE_WORKER]);
    names[3] = "RANK";
    snprintf(values[3], 512, "%d", role == DRV_ROLE_CHIEF ? 0 : rank + masters);
    names[4] = "PYTHONUNBUFFERED";
    snprintf(values[4], 512, "1");
    return 5;
}

int drv_peers_apply(const drv_peer_job *j, int role, int rank, json_t *pod, drv_diag *d)
{
    json_t *spec = json_object_get(pod, "spec");
    json_t *containers = json_object_get(spec, "containers");
    if (!json_is_array(containers) || json_array_size(containers) == 0)
        return drv_fail(d, DRV_EINVAL,
                        "%s/%s: role %s: template: spec.containers: expected at "
                        "least one container",
                        j->ns, j->name, drv_peers_role(j, role));
    char host[DNS_LABEL_MAX + 1];
    if (drv_peers_pod_name(j, role, rank, host, sizeof host) != 0)
        return drv_fail(d, DRV_ERANGE, "%s/%s: pod name %s-%s-%d is longer than %d characters",
                        j->ns, j->name, j->name, drv_peers_role(j, role), rank, DNS_LABEL_MAX);
    if (json_object_set_new(spec, "hostname", json_string(host)) != 0 ||
        json_object_set_new(spec, "subdomain", json_string(j->name)) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    const char *names[5];
    char values[5][512], *tf_config;
    int n = drv_peers_variables(j, role, rank, names, values, &tf_config);
    if (n < 0)
        return drv_fail(d, n, "%s/%s: cannot name the job's peers", j->ns, j->name);
    int rc = 0;
    size_t i;
    json_t *c;
    json_array_foreach(containers, i, c)
    {
        for (int v = 0; v < n && rc == 0; v++)
            rc = set_env(c, names[v], tf_config && v == 0 ? tf_config : values[v]);
    }
    drv_free(tf_config);
    return rc ? drv_fail(d, rc, "out of memory") : 0;
}

json_t *drv_peers_service(const drv_peer_job *j, const char *uid)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]},"
                     " s:{s:s, s:b, s:{s:s}, s:[{s:s, s:i, s:i}]}}",
                     "apiVersion", "v1", "kind", "Service", "metadata", "name", j->name,
                     "namespace", j->ns, "labels", "drover.dev/job", j->name, "ownerReferences",
                     "apiVersion", "drover.dev/v1alpha1", "kind", "TrainingJob", "name", j->name,
                     "uid", uid, "controller", 1, "blockOwnerDeletion", 1, "spec", "clusterIP",
                     "None", "publishNotReadyAddresses", 1, "selector", "drover.dev/job", j->name,
                     "ports", "name", "peers", "port", port_of(j), "targetPort", port_of(j));
}
