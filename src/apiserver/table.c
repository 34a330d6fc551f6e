/*
 * table.c - the Table answers real kubectl asks for (Accept: as=Table): the columns kubectl
 * prints for each resource type, the cells of each object, ages as kubectl writes them.
 */
#include "apiserver_int.h"

/* Whole seconds since the epoch; 0 when s is absent or not a time. */
static time_t parse_rfc3339(const char *s)
{
    double t;
    return drv_time_parse_rfc3339(s, &t) == 0 ? (time_t)t : 0;
}

static void age(char *out, size_t n, const char *ts)
{
    time_t t = parse_rfc3339(ts);
    long d = t ? (long)(time(NULL) - t) : 0;
    if (d < 0)
        d = 0;
    if (!t)
        snprintf(out, n, "<unknown>");
    else if (d < 120)
        snprintf(out, n, "%lds", d);
    else if (d < 3 * 3600)
        snprintf(out, n, "%ldm", d / 60);
    else if (d < 2 * 86400)
        snprintf(out, n, "%ldh", d / 3600);
    else
        snprintf(out, n, "%ldd", d / 86400);
}

static json_t *coldef(const char *name, const char *type, const char *format, const char *desc,
                      int prio)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", name, "type", type, "format", format,
                     "description", desc, "priority", prio);
}

static const char NAME_DESC[] =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: http://kubernetes.io/docs/user-guide/"
    "identifiers#names";

/* The PodGroup CRD's printer columns: name, type, JSON path (dotted). */
static const char *const PG_COLS[][3] = {
    {"Phase", "string", ".status.phase"},      {"MinMember", "integer", ".spec.minMember"},
    {"Running", "integer", ".status.running"}, {"Succeeded", "integer", ".status.succeeded"},
    {"Failed", "integer", ".status.failed"},   {"Age", "date", ".metadata.creationTimestamp"}};

/* deploy/queue-crd.yaml's printer columns: name, type, JSON path to the map, and its key
 * (apart, as "nvidia.com/gpu" has dots). */
static const char *const QUEUE_COLS[][4] = {
    {"Weight", "number", ".spec", "weight"},
    {"Pending", "integer", ".status", "pending"},
    {"Admitted", "integer", ".status", "admitted"},
    {"CPU", "string", ".status.used", "cpu"},
    {"CPU quota", "string", ".spec.nominalQuota", "cpu"},
    {"GPU", "string", ".status.used", "nvidia.com/gpu"},
    {"GPU quota", "string", ".spec.nominalQuota", "nvidia.com/gpu"},
    {"Cohort", "string", ".spec", "cohort"},
    {"Age", "date", ".metadata", "creationTimestamp"}};

static json_t *table_columns(int rt)
{
    json_t *c = json_array();
    json_array_append_new(c, coldef("Name", "string", "name", NAME_DESC, 0));
    if (rt == R_PODS) {
        json_array_append_new(c, coldef("Ready", "string", "",
                                        "The aggregate readiness state of this pod for "
                                        "accepting traffic.",
                                        0));
        json_array_append_new(c, coldef("Status", "string", "",
                                        "The aggregate status of the containers in this pod.", 0));
        json_array_append_new(c, coldef("Restarts", "string", "",
                                        "The number of times the containers in this pod have "
                                        "been restarted and when the last container in this pod "
                                        "has restarted.",
                                        0));
        json_array_append_new(c, coldef("Age", "string", "", "CreationTimestamp", 0));
        json_array_append_new(c, coldef("IP", "string", "", "IP address allocated to the pod.", 1));
        json_array_append_new(
            c, coldef("Node", "string", "", "Name of the node this pod is assigned to.", 1));
        json_array_append_new(c, coldef("Nominated Node", "string", "",
                                        "Name of the node this pod is nominated to.", 1));
        json_array_append_new(
            c, coldef("Readiness Gates", "string", "", "Readiness gates of the pod.", 1));
    } else if (rt == R_NODES) {
        json_array_append_new(c, coldef("Status", "string", "", "The status of the node", 0));
        json_array_append_new(c, coldef("Roles", "string", "", "The roles of the node", 0));
        json_array_append_new(c, coldef("Age", "string", "", "CreationTimestamp", 0));
        json_array_append_new(c, coldef("Version", "string", "", "Kubelet Version", 0));
        json_array_append_new(c, coldef("Internal-IP", "string", "", "InternalIP address", 1));
        json_array_append_new(c, coldef("External-IP", "string", "", "ExternalIP address", 1));
        json_array_append_new(c, coldef("OS-Image", "string", "", "OS Image", 1));
        json_array_append_new(c, coldef("Kernel-Version", "string", "", "Kernel Version", 1));
        json_array_append_new(
            c, coldef("Container-Runtime", "string", "", "Container Runtime Version", 1));
    } else if (rt == R_TJ) {
        /* deploy/crd.yaml's additionalPrinterColumns, as the API server renders them */
        static const char *const cols[][4] = {
            {"State", "string", ".status.conditions[-1:].type", "0"},
            {"Workers", "integer", ".status.replicaStatuses.Worker.active", "0"},
            {"Restarts", "integer", ".status.restarts", "0"},
            {"Age", "date", ".metadata.creationTimestamp", "0"},
            {"Message", "string", ".status.conditions[-1:].message", "1"}};
        for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
            char desc[200];
            snprintf(desc, sizeof desc,
                     "Custom resource definition column (in JSONPath format): %s", cols[i][2]);
            json_array_append_new(c, coldef(cols[i][0], cols[i][1], "", desc, cols[i][3][0] - '0'));
        }
    } else if (rt == R_PG) {
        /* deploy/podgroup-crd.yaml's additionalPrinterColumns */
        for (size_t i = 0; i < sizeof PG_COLS / sizeof PG_COLS[0]; i++) {
            char desc[200];
            snprintf(desc, sizeof desc,
                     "Custom resource definition column (in JSONPath format): %s", PG_COLS[i][2]);
            json_array_append_new(c, coldef(PG_COLS[i][0], PG_COLS[i][1], "", desc, 0));
        }
    } else if (rt == R_QUEUE) {
        for (size_t i = 0; i < sizeof QUEUE_COLS / sizeof QUEUE_COLS[0]; i++) {
            char desc[200];
            snprintf(desc, sizeof desc,
                     "Custom resource definition column (in JSONPath format): %s.%s",
                     QUEUE_COLS[i][2], QUEUE_COLS[i][3]);
            json_array_append_new(c, coldef(QUEUE_COLS[i][0], QUEUE_COLS[i][1], "", desc, 0));
        }
    } else if (rt == R_NAMESPACES) {
        json_array_append_new(c, coldef("Status", "string", "", "The status of the namespace", 0));
        json_array_append_new(c, coldef("Age", "string", "", "CreationTimestamp", 0));
    } else {
        json_array_append_new(c, coldef("Created At", "date", "", "CreationTimestamp", 0));
    }
    return c;
}

static json_t *table_cells(int rt, json_t *o)
{
    char a[32];
    age(a, sizeof a, srv_mstr(o, "creationTimestamp"));
    json_t *c = json_array();
    json_array_append_new(c, json_string(srv_mstr(o, "name") ? srv_mstr(o, "name") : ""));
    if (rt == R_PODS) {
        /* (as the real server prints a pod: ready containers of all, restarts summed) */
        size_t nc = json_array_size(srv_path_get(o, "spec.containers")), nready = 0, i;
        json_int_t restarts = 0;
        json_t *cs;
        json_array_foreach(srv_path_get(o, "status.containerStatuses"), i, cs)
        {
            nready += json_is_true(json_object_get(cs, "ready"));
            restarts += json_integer_value(json_object_get(cs, "restartCount"));
        }
        char ready[32], nrestarts[32];
        snprintf(ready, sizeof ready, "%zu/%zu", nready, nc);
        snprintf(nrestarts, sizeof nrestarts, "%lld", (long long)restarts);
        json_array_append_new(c, json_string(ready));
        const char *phase = srv_mstr(o, "deletionTimestamp")
                                ? "Terminating"
                                : srv_str_or(srv_path_get(o, "status.phase"), "Pending");
        json_array_append_new(c, json_string(phase));
        json_array_append_new(c, json_string(nrestarts));
        json_array_append_new(c, json_string(a));
        json_array_append_new(c,
                              json_string(srv_str_or(srv_path_get(o, "status.podIP"), "<none>")));
        json_array_append_new(c,
                              json_string(srv_str_or(srv_path_get(o, "spec.nodeName"), "<none>")));
        json_array_append_new(c, json_string("<none>"));
        json_array_append_new(c, json_string("<none>"));
    } else if (rt == R_NODES) {
        const char *st = "Unknown";
        size_t i;
        json_t *cond;
        json_array_foreach(srv_path_get(o, "status.conditions"), i, cond)
        {
            if (!strcmp(srv_str_or(json_object_get(cond, "type"), ""), "Ready"))
                st = !strcmp(srv_str_or(json_object_get(cond, "status"), ""), "True") ? "Ready"
                                                                                      : "NotReady";
        }
        char stb[64];
        snprintf(stb, sizeof stb, "%s%s", st,
                 json_is_true(srv_path_get(o, "spec.unschedulable")) ? ",SchedulingDisabled" : "");
        json_array_append_new(c, json_string(stb));
        json_array_append_new(c, json_string("<none>"));
        json_array_append_new(c, json_string(a));
        json_array_append_new(
            c, json_string(srv_str_or(srv_path_get(o, "status.nodeInfo.kubeletVersion"), "")));
        const char *iip = "<none>", *eip = "<none>";
        json_array_foreach(srv_path_get(o, "status.addresses"), i, cond)
        {
            const char *t = srv_str_or(json_object_get(cond, "type"), "");
            if (!strcmp(t, "InternalIP"))
                iip = srv_str_or(json_object_get(cond, "address"), "<none>");
            if (!strcmp(t, "ExternalIP"))
                eip = srv_str_or(json_object_get(cond, "address"), "<none>");
        }
        json_array_append_new(c, json_string(iip));
        json_array_append_new(c, json_string(eip));
        json_array_append_new(
            c, json_string(srv_str_or(srv_path_get(o, "status.nodeInfo.osImage"), "<unknown>")));
        json_array_append_new(
            c,
            json_string(srv_str_or(srv_path_get(o, "status.nodeInfo.kernelVersion"), "<unknown>")));
        json_array_append_new(
            c, json_string(srv_str_or(srv_path_get(o, "status.nodeInfo.containerRuntimeVersion"),
                                      "<unknown>")));
    } else if (rt == R_TJ) {
        json_t *conds = srv_path_get(o, "status.conditions");
        json_t *last = json_array_get(conds, json_array_size(conds) - 1);
        json_t *type = json_object_get(last, "type"), *msg = json_object_get(last, "message");
        json_t *w = srv_path_get(o, "status.replicaStatuses.Worker.active");
        json_t *n = srv_path_get(o, "status.restarts");
        json_array_append_new(c, type ? json_incref(type) : json_null());
        json_array_append_new(c, w ? json_incref(w) : json_null());
        json_array_append_new(c, n ? json_incref(n) : json_null());
        /* a date column is sent as an age ("17s"), as kube-apiserver's CRD tables do
         * (transcript 13-table-tj) */
        json_array_append_new(c, json_string(a));
        json_array_append_new(c, msg ? json_incref(msg) : json_null());
    } else if (rt == R_PG) {
        /* a path absent is null, which kubectl prints as <none> (as for a CRD's columns) */
        for (size_t i = 0; i < sizeof PG_COLS / sizeof PG_COLS[0]; i++) {
            /* (a date column is sent as an age, "5m", as kube-apiserver's CRD tables do) */
            json_t *v = srv_path_get(o, PG_COLS[i][2] + 1);
            if (!strcmp(PG_COLS[i][1], "date"))
                json_array_append_new(c, json_string(a));
            else
                json_array_append_new(c, v ? json_incref(v) : json_null());
        }
    } else if (rt == R_QUEUE) {
        for (size_t i = 0; i < sizeof QUEUE_COLS / sizeof QUEUE_COLS[0]; i++) {
            json_t *v = json_object_get(srv_path_get(o, QUEUE_COLS[i][2] + 1), QUEUE_COLS[i][3]);
            if (!strcmp(QUEUE_COLS[i][1], "date"))
                json_array_append_new(c, json_string(a));
            else
                json_array_append_new(c, v ? json_incref(v) : json_null());
        }
    } else if (rt == R_NAMESPACES) {
        json_array_append_new(c,
                              json_string(srv_str_or(srv_path_get(o, "status.phase"), "Active")));
        json_array_append_new(c, json_string(a));
    } else {
        json_array_append_new(
            c, json_string(srv_str_or(srv_path_get(o, "metadata.creationTimestamp"), "")));
    }
    return c;
}

/* objs: array of full objects (borrowed). */
json_t *srv_make_table(int rt, json_t *objs, json_t *list_meta, bool include_object)
{
    json_t *rows = json_array();
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o)
    {
        json_t *row = json_pack("{s:o}", "cells", table_cells(rt, o));
        if (include_object)
            json_object_set_new(row, "object",
                                json_pack("{s:s,s:s,s:O}", "kind", "PartialObjectMetadata",
                                          "apiVersion", "meta.k8s.io/v1", "metadata",
                                          json_object_get(o, "metadata")));
        json_array_append_new(rows, row);
    }
    return json_pack("{s:s,s:s,s:o,s:o,s:o}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
                     "metadata", list_meta, "columnDefinitions", table_columns(rt), "rows", rows);
}

bool srv_wants_table(struct MHD_Connection *c)
{
    const char *acc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
    return acc && strstr(acc, "as=Table");
}
