/*
 * trace_philly.c - Microsoft Philly's raw job log (ATC'19; msr-fiddle/philly-traces,
 * trace-data/cluster_job_log): one JSON array of jobs,
 *
 *   [{"status": "Pass", "vc": "ee9e8c", "jobid": "application_1506638472019_14199",
 *     "submitted_time": "2017-10-07 01:11:39", "user": "ce2f4c",
 *     "attempts": [{"start_time": "2017-10-07 01:13:30", "end_time": "2017-10-09 06:53:12",
 *                   "detail": [{"ip": "m412", "gpus": ["gpu0", ..., "gpu7"]}]}]}, ...]
 *
 * A job becomes a rigid job of as many GPUs as its last attempt held (summed over its
 * servers), submitted at submitted_time, that runs for the sum of its attempts' run times
 * (attempts without both times are not counted); user and vc become its user and queue. Every
 * final status is kept (a killed job held its GPUs too). Jobs without attempts, GPUs or run
 * time (the log's notes: attempts and times may be missing, a last end_time of None means
 * still running) are left out. (This is not the CSV `philly` format, which is Pollux's digest
 * of the same trace.) Errors name the file and the job's index and jobid: JSON has no rows; a
 * key twice in one object is an error (file:line:column), as in every YAML or JSON file read.
 */
#include "trace_read.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The time at key, as seconds; false when missing, null, "None" or malformed. */
static bool time_at(json_t *o, const char *key, double *out)
{
    const char *s = str(o, key);
    return s && trace_time_str(s, out) == 0;
}

/* Fills j from job i; 0, or DRV_EPARSE naming what is wrong. */
static int parse_job(const char *where, json_t *job, trace_job *j, drv_diag *d)
{
    trace_job_init(j);
    if (!json_is_object(job))
        return drv_fail(d, DRV_EPARSE, "%s: job: expected a JSON object", where);
    const char *id = str(job, "jobid"), *sub = str(job, "submitted_time");
    if (!id)
        return drv_fail(d, DRV_EPARSE, "%s: jobid: expected a string", where);
    snprintf(j->name, sizeof j->name, "%s", id);
    snprintf(j->user, sizeof j->user, "%s", str(job, "user") ? str(job, "user") : "");
    snprintf(j->queue, sizeof j->queue, "%s", str(job, "vc") ? str(job, "vc") : "");
    if (!sub || trace_time_str(sub, &j->submit) != 0)
        return drv_fail(d, DRV_EPARSE,
                        "%s: submitted_time: expected a time as YYYY-MM-DD HH:MM:SS, found '%.40s'",
                        where, sub ? sub : "(none)");
    json_t *att = json_object_get(job, "attempts");
    if (att && !json_is_array(att))
        return drv_fail(d, DRV_EPARSE, "%s: attempts: expected a list", where);
    size_t n = att ? json_array_size(att) : 0;
    for (size_t k = 0; k < n; k++) {
        json_t *a = json_array_get(att, k);
        double t0, t1;
        if (json_is_object(a) && time_at(a, "start_time", &t0) && time_at(a, "end_time", &t1) &&
            t1 > t0)
            j->duration += t1 - t0;
    }
    json_t *last = n ? json_array_get(att, n - 1) : NULL;
    json_t *detail = json_is_object(last) ? json_object_get(last, "detail") : NULL;
    for (size_t k = 0; k < json_array_size(detail); k++) {
        json_t *g = json_object_get(json_array_get(detail, k), "gpus");
        j->gpus += (int32_t)json_array_size(g); /* 0 when not a list */
    }
    return 0;
}

int trace_read_philly_log(trace_sink *s, const char *file, const char *text, drv_diag *d)
{
    json_error_t je;
    /* A key twice in an object is refused: jansson would keep the last, silently. */
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return drv_fail(d, je.line < 0 ? DRV_ENOMEM : DRV_EPARSE, "%s:%d:%d: JSON: %s", file,
                        je.line, je.column, je.text);
    int rc = 0;
    if (!json_is_array(root))
        rc =
            drv_fail(d, DRV_EPARSE, "%s:1:1: expected a JSON list of jobs (cluster_job_log)", file);
    for (size_t i = 0; !rc && i < json_array_size(root); i++) {
        json_t *job = json_array_get(root, i);
        const char *id = json_is_object(job) ? str(job, "jobid") : NULL;
        char where[600];
        snprintf(where, sizeof where, "%s: job %zu (%.60s)", file, i, id ? id : "no jobid");
        trace_job j;
        rc = parse_job(where, job, &j, d);
        rc = rc ? trace_sink_bad(s, rc, d) : trace_sink_add(s, &j, where, d);
    }
    json_decref(root);
    return rc;
}
