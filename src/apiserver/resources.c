/*
 * resources.c - what every part of the in-memory API server knows of the objects it serves: the
 * resource types (SRV_TYPES: group, version, plural, kind, whether namespaced, with a status
 * subresource, a generation, a custom resource), their keys and apiVersions, an object's
 * metadata and fields by dotted path, the store's keys in order, the time now as written.
 */
#include "apiserver_int.h"

const struct rtype SRV_TYPES[R_N] = {
    [R_NAMESPACES] = {"", "v1", "namespaces", "Namespace", false, true, false, false},
    [R_NODES] = {"", "v1", "nodes", "Node", false, true, false, false},
    [R_PODS] = {"", "v1", "pods", "Pod", true, true, false, false},
    [R_CONFIGMAPS] = {"", "v1", "configmaps", "ConfigMap", true, false, false, false},
    [R_EVENTS] = {"", "v1", "events", "Event", true, false, false, false},
    [R_LEASES] = {"coordination.k8s.io", "v1", "leases", "Lease", true, false, false, false},
    [R_CRDS] = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", false, true, true, false},
    [R_TJ] = {"drover.dev", "v1alpha1", "trainingjobs", "TrainingJob", true, true, true, true},
    [R_SERVICES] = {"", "v1", "services", "Service", true, true, false, false},
    [R_PG] = {"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", true, true, true, true},
    [R_PC] = {"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false, false, false,
              false},
    [R_QUEUE] = {"drover.dev", "v1alpha1", "queues", "Queue", false, true, true, true},
};

const char *srv_api_version(int rt)
{
    static const char *const av[R_N] = {
        [R_NAMESPACES] = "v1",
        [R_NODES] = "v1",
        [R_PODS] = "v1",
        [R_CONFIGMAPS] = "v1",
        [R_EVENTS] = "v1",
        [R_LEASES] = "coordination.k8s.io/v1",
        [R_CRDS] = "apiextensions.k8s.io/v1",
        [R_TJ] = "drover.dev/v1alpha1",
        [R_SERVICES] = "v1",
        [R_PG] = "scheduling.x-k8s.io/v1alpha1",
        [R_PC] = "scheduling.k8s.io/v1",
        [R_QUEUE] = "drover.dev/v1alpha1",
    };
    return av[rt];
}

void srv_make_key(char *out, size_t n, int rt, const char *ns, const char *name)
{
    if (SRV_TYPES[rt].namespaced)
        snprintf(out, n, "%s/%s", ns ? ns : "", name);
    else
        snprintf(out, n, "%s", name);
}

json_t *srv_meta(json_t *o)
{
    json_t *m = json_object_get(o, "metadata");
    if (!json_is_object(m)) {
        m = json_object();
        json_object_set_new(o, "metadata", m);
    }
    return m;
}

const char *srv_mstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), k));
}

/* Value at a dotted path ("spec.nodeName"), or NULL. */
json_t *srv_path_get(json_t *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = o;
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && cur;
         tok = strtok_r(NULL, ".", &save))
        cur = json_object_get(cur, tok);
    return cur;
}

const char *srv_str_or(json_t *j, const char *dflt)
{
    const char *s = json_string_value(j);
    return s && *s ? s : dflt;
}

void srv_now_rfc3339(char *out, size_t n, long offset_s)
{
    drv_time_rfc3339(out, n, (double)(time(NULL) + offset_s), false);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted keys of one store; *n receives the count. Borrowed strings. */
const char **srv_sorted_keys(json_t *store, size_t *n)
{
    size_t cnt = json_object_size(store), i = 0;
    const char **keys = drv_calloc(cnt + 1, sizeof *keys);
    if (!keys)
        return NULL;
    const char *k;
    json_t *v;
    json_object_foreach(store, k, v)
    {
        (void)v;
        keys[i++] = k;
    }
    qsort(keys, i, sizeof *keys, cmp_str);
    *n = i;
    return keys;
}
