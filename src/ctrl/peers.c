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
 *    "environment":"cloud","task":{"index":1,"type":"worker"}}
 * (keys sorted, as jansson's JSON_SORT_KEYS wrote it when it was built as a tree). TF_CONFIG and
 * the Service are written as text (jsontext.h): they are rendered per pod and per job while a
 * burst of creations goes out, and a tree built and dumped was most of that cost.
 * Source of the conventions: Kubeflow's TFJob and PyTorchJob operators and TensorFlow's
 * TF_CONFIG documentation (the evaluator is outside the training cluster).
 */
#include "peers.h"

#include "kube/json.h"
#include "kube/jsontext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DNS_LABEL_MAX = 63 };

/* Kubeflow's replica types as pod names spell them (TFJob's PS, Chief, Worker, Evaluator in
 * lower case), by enum drv_role; a PyTorchJob's Master is the all-reduce chief. */
static const char *const pod_roles[DRV_NROLES] = {
    [DRV_ROLE_PS] = "ps",
    [DRV_ROLE_CHIEF] = "chief",
    [DRV_ROLE_WORKER] = "worker",
    [DRV_ROLE_EVALUATOR] = "evaluator",
};

const char *drv_peers_role_name(int role, bool allreduce)
{
    if (role < 0 || role >= DRV_NROLES)
        return "?";
    return allreduce && role == DRV_ROLE_CHIEF ? "master" : pod_roles[role];
}

const char *drv_peers_role(const drv_peer_job *j, int role)
{
    return drv_peers_role_name(role, j->framework == DRV_FRAMEWORK_ALLREDUCE);
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

/* TF_CONFIG is written as text rather than built with jansson and dumped (that was most of a
 * pod body's rendering in e2e_bind): the same bytes as json_dumps(JSON_COMPACT |
 * JSON_SORT_KEYS) of {"cluster":{<role>:[<address>...]...},"task":{"type":..,"index":..},
 * "environment":"cloud"}, which tests/ctrl/test_peers.c checks against jansson for names that
 * need escapes, that are outside ASCII or too long. O(the text's length). */

static bool puts_(drv_kbuf *b, const char *s)
{
    return drv_kbuf_put(b, s, strlen(s));
}

/* True when s is text jansson takes as a string (valid UTF-8). */
static bool is_text(const char *s)
{
    return drv_json_utf8(s, strlen(s));
}

/* Appends "<pod>.<job>.<ns>.svc:<port>" as a JSON string; 0, 1 when it cannot be (a pod name
 * longer than a DNS label, or not UTF-8: jansson was given no string) or DRV_ENOMEM. text: j's
 * name and namespace are (is_text, checked once per cluster rather than once per address). */
static int put_address(drv_kbuf *b, const drv_peer_job *j, int role, int rank, bool text)
{
    char pod[DNS_LABEL_MAX + 1], port[24];
    if (!text || drv_peers_pod_name(j, role, rank, pod, sizeof pod) != 0)
        return 1;
    snprintf(port, sizeof port, ".svc:%d\"", port_of(j));
    bool ok = puts_(b, "\"") && drv_kbuf_put_escaped(b, pod) && puts_(b, ".") &&
              drv_kbuf_put_escaped(b, j->name) && puts_(b, ".") && drv_kbuf_put_escaped(b, j->ns) &&
              puts_(b, port);
    return ok ? 0 : DRV_ENOMEM;
}

/* Appends the "cluster" object: every role but the evaluator with replicas, in the order of
 * their names (JSON_SORT_KEYS), or the evaluator's own address alone. 0, or 1 (an address
 * that cannot be written: no TF_CONFIG) or DRV_ENOMEM. */
static int put_cluster(drv_kbuf *b, const drv_peer_job *j, int role, int rank)
{
    bool text = is_text(j->name) && is_text(j->ns);
    if (role == DRV_ROLE_EVALUATOR) { /* (an address jansson refused left the list empty) */
        if (!puts_(b, "{\"evaluator\":["))
            return DRV_ENOMEM;
        int rc = put_address(b, j, role, rank, text);
        return rc < 0 ? rc : puts_(b, "]}") ? 0 : DRV_ENOMEM;
    }
    int order[DRV_NROLES], n = 0;
    for (int r = 0; r < DRV_NROLES; r++) {
        if (r == DRV_ROLE_EVALUATOR || j->replicas[r] <= 0)
            continue;
        int k = n++;
        for (; k > 0 && strcmp(drv_peers_role(j, order[k - 1]), drv_peers_role(j, r)) > 0; k--)
            order[k] = order[k - 1];
        order[k] = r;
    }
    if (!puts_(b, "{"))
        return DRV_ENOMEM;
    for (int k = 0; k < n; k++) {
        int r = order[k];
        if (!puts_(b, k ? ",\"" : "\"") || !puts_(b, drv_peers_role(j, r)) || !puts_(b, "\":["))
            return DRV_ENOMEM;
        for (int i = 0; i < j->replicas[r]; i++) {
            int rc = i && !puts_(b, ",") ? DRV_ENOMEM : put_address(b, j, r, i, text);
            if (rc)
                return rc;
        }
        if (!puts_(b, "]"))
            return DRV_ENOMEM;
    }
    return puts_(b, "}") ? 0 : DRV_ENOMEM;
}

/* TF_CONFIG's start, {"cluster":{...}, for role/rank (the same for every role but the
 * evaluator); NULL when an address cannot be written or out of memory. */
static char *tf_start(const drv_peer_job *j, int role, int rank)
{
    drv_kbuf b = {0};
    int rc = puts_(&b, "{\"cluster\":") ? put_cluster(&b, j, role, rank) : DRV_ENOMEM;
    if (rc == 0)
        return b.p;
    drv_free(b.p);
    return NULL;
}

char *drv_peers_tf_cluster(const drv_peer_job *j)
{
    return tf_start(j, DRV_ROLE_WORKER, 0);
}

void drv_peers_tf_task(const drv_peer_job *j, int role, int rank, char buf[DRV_PEERS_TASK_MAX])
{
    snprintf(buf, DRV_PEERS_TASK_MAX,
             ",\"environment\":\"cloud\",\"task\":{\"index\":%d,\"type\":\"%s\"}}", rank,
             drv_peers_role(j, role));
}

char *drv_peers_tf_join(const drv_peer_job *j, int role, int rank, const char *cluster, size_t len)
{
    char task[DRV_PEERS_TASK_MAX];
    drv_peers_tf_task(j, role, rank, task);
    size_t lt = strlen(task);
    char *out = cluster ? drv_malloc(len + lt + 1) : NULL;
    if (out) {
        memcpy(out, cluster, len);
        memcpy(out + len, task, lt + 1);
    }
    return out;
}

char *drv_peers_tf_config(const drv_peer_job *j, int role, int rank)
{
    char *start = tf_start(j, role, rank);
    char *out = drv_peers_tf_join(j, role, rank, start, start ? strlen(start) : 0);
    drv_free(start);
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

int drv_peers_tf_variables(char *tf_config, const char *names[5], char values[5][512], char **out)
{
    *out = tf_config;
    names[0] = "TF_CONFIG";
    values[0][0] = 0; /* the caller uses *out: it may exceed 512 bytes */
    return tf_config ? 1 : DRV_ENOMEM;
}

int drv_peers_variables(const drv_peer_job *j, int role, int rank, const char *names[5],
                        char values[5][512], char **tf_config)
{
    *tf_config = NULL;
    if (j->framework == DRV_FRAMEWORK_TENSORFLOW)
        return drv_peers_tf_variables(drv_peers_tf_config(j, role, rank), names, values, tf_config);
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

/* Appends s as a JSON string (quoted, escaped); false when out of memory. */
static bool put_string(drv_kbuf *b, const char *s)
{
    return puts_(b, "\"") && drv_kbuf_put_escaped(b, s) && puts_(b, "\"");
}

char *drv_peers_service_json(const drv_peer_job *j, const char *uid)
{
    /* json_pack's insertion order, compact: what was built with jansson and dumped before
     * (test_peers compares); a name jansson would refuse (not UTF-8) is refused here too. */
    if (!is_text(j->name) || !is_text(j->ns) || !is_text(uid))
        return NULL;
    char ports[96];
    snprintf(ports, sizeof ports,
             "\"ports\":[{\"name\":\"peers\",\"port\":%d,\"targetPort\":%d}]}}", port_of(j),
             port_of(j));
    drv_kbuf b = {0};
    bool ok = puts_(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":") &&
              put_string(&b, j->name) && puts_(&b, ",\"namespace\":") && put_string(&b, j->ns) &&
              puts_(&b, ",\"labels\":{\"drover.dev/job\":") && put_string(&b, j->name) &&
              puts_(&b, "},\"ownerReferences\":[{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":"
                        "\"TrainingJob\",\"name\":") &&
              put_string(&b, j->name) && puts_(&b, ",\"uid\":") && put_string(&b, uid) &&
              puts_(&b, ",\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{"
                        "\"clusterIP\":\"None\",\"publishNotReadyAddresses\":true,\"selector\":{"
                        "\"drover.dev/job\":") &&
              put_string(&b, j->name) && puts_(&b, "},") && puts_(&b, ports);
    if (ok)
        return b.p;
    drv_free(b.p);
    return NULL;
}
