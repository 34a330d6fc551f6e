/*
 * report_seeds.c - summary-seeds.json (written by `drover sim --seeds A-B --out DIR`, see
 * src/cli/sim_seeds.c) read back for the report page's "Over seeds" table.
 *
 * The file is optional and never fails the report: a directory of one seed has none, and a
 * malformed one (the array of older versions, a field missing or of the wrong type) leaves
 * s->has false with a message naming the file and the field, so the page is drawn without it.
 */
#include "drover/file.h"
#include "drover/sim.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const metric_keys[DRV_SEEDS_NMETRICS] = {"avg_jct_s", "p95_jct_s", "makespan_s",
                                                            "done"};

/* o[key] as {"mean": number, "ci95": number}; false when it is not that. */
static bool get_interval(json_t *o, const char *key, double *mean, double *ci95)
{
    json_t *v = json_object_get(o, key), *m = json_object_get(v, "mean"),
           *h = json_object_get(v, "ci95");
    if (!json_is_object(v) || !json_is_number(m) || !json_is_number(h))
        return false;
    *mean = json_number_value(m);
    *ci95 = json_number_value(h);
    return true;
}

/* The seeds as "A-B" when they run one by one upwards, else "A, B, C" (cut with "..."). */
static const char *seeds_text(drv_report_seeds *s, json_t *seeds)
{
    size_t n = json_array_size(seeds);
    bool range = n > 1;
    for (size_t k = 0; k < n; k++) {
        if (!json_is_integer(json_array_get(seeds, k)) ||
            json_integer_value(json_array_get(seeds, k)) < 0)
            return "\"seeds\": expected an array of whole numbers";
        if (k > 0)
            range &= json_integer_value(json_array_get(seeds, k)) ==
                     json_integer_value(json_array_get(seeds, k - 1)) + 1;
    }
    if (n == 0)
        return "\"seeds\": expected an array of whole numbers";
    s->nseeds = (int32_t)n;
    long long first = json_integer_value(json_array_get(seeds, 0));
    if (range) {
        snprintf(s->seeds, sizeof s->seeds, "%lld-%lld", first, first + (long long)n - 1);
        return NULL;
    }
    size_t len = 0;
    for (size_t k = 0; k < n; k++) {
        char one[32];
        snprintf(one, sizeof one, "%s%lld", k ? ", " : "",
                 (long long)json_integer_value(json_array_get(seeds, k)));
        if (len + strlen(one) + 5 >= sizeof s->seeds) {
            snprintf(s->seeds + len, sizeof s->seeds - len, ", ...");
            break;
        }
        len += (size_t)snprintf(s->seeds + len, sizeof s->seeds - len, "%s", one);
    }
    return NULL;
}

/* The provenance: commit, dirty tree, command. */
static const char *load_provenance(drv_report_seeds *s, json_t *root)
{
    json_t *commit = json_object_get(root, "drover_commit"),
           *dirty = json_object_get(root, "drover_dirty"), *cmd = json_object_get(root, "command");
    if (!json_is_string(commit))
        return "\"drover_commit\": expected a string";
    if (!json_is_boolean(dirty))
        return "\"drover_dirty\": expected true or false";
    if (!json_is_array(cmd) || json_array_size(cmd) == 0)
        return "\"command\": expected an array of strings";
    snprintf(s->commit, sizeof s->commit, "%s", json_string_value(commit));
    s->dirty = json_is_true(dirty);
    size_t len = 0, i;
    json_t *w;
    json_array_foreach(cmd, i, w)
    {
        if (!json_is_string(w))
            return "\"command\": expected an array of strings";
        if (len < sizeof s->command)
            len += (size_t)snprintf(s->command + len, sizeof s->command - len, "%s%s", i ? " " : "",
                                    json_string_value(w));
    }
    return NULL;
}

/* Row i from policies[i]; its paired difference from the "paired" entry of its name. */
static const char *load_row(drv_report_seeds *s, json_t *pol, json_t *paired, int32_t i,
                            char *field, size_t fsize)
{
    drv_seeds_row *row = &s->rows[i];
    json_t *name = json_object_get(pol, "policy");
    snprintf(field, fsize, "\"policies\"[%d]", i);
    if (!json_is_string(name) || strlen(json_string_value(name)) >= sizeof row->policy)
        return "\"policy\": expected a policy name (at most 63 bytes)";
    snprintf(row->policy, sizeof row->policy, "%s", json_string_value(name));
    for (int m = 0; m < DRV_SEEDS_NMETRICS; m++)
        if (!get_interval(pol, metric_keys[m], &row->mean[m], &row->ci95[m])) {
            snprintf(field, fsize, "\"policies\"[%d] \"%s\"", i, metric_keys[m]);
            return "expected {\"mean\": number, \"ci95\": number}";
        }
    if (strcmp(row->policy, s->baseline) == 0)
        return NULL;
    size_t k;
    json_t *p;
    json_array_foreach(paired, k, p)
    {
        if (!json_is_string(json_object_get(p, "policy")) ||
            strcmp(json_string_value(json_object_get(p, "policy")), row->policy) != 0)
            continue;
        json_t *lower = json_object_get(json_object_get(p, "avg_jct_s"), "lower");
        snprintf(field, fsize, "\"paired\"[%zu] \"avg_jct_s\"", k);
        if (!get_interval(p, "avg_jct_s", &row->diff, &row->diff_ci95) || !json_is_integer(lower) ||
            json_integer_value(lower) < 0 || json_integer_value(lower) > s->nseeds)
            return "expected {\"mean\": number, \"ci95\": number, \"lower\": seeds below the "
                   "baseline}";
        row->has_diff = true;
        row->lower = (int32_t)json_integer_value(lower);
        return NULL;
    }
    snprintf(field, fsize, "\"paired\"");
    return "expected an entry for every policy but the baseline";
}

static const char *load_root(drv_report_seeds *s, json_t *root, char *field, size_t fsize)
{
    *field = 0;
    if (!json_is_object(root))
        return "expected an object with \"seeds\", \"baseline\", \"policies\" and \"paired\" "
               "(an array is the older form, without them: rerun `drover sim --seeds`)";
    const char *why = load_provenance(s, root);
    json_t *seeds = json_object_get(root, "seeds"), *base = json_object_get(root, "baseline"),
           *pols = json_object_get(root, "policies"), *paired = json_object_get(root, "paired");
    if (!why && !json_is_array(seeds))
        why = "\"seeds\": expected an array of whole numbers";
    if (!why)
        why = seeds_text(s, seeds);
    if (!why && !json_is_string(base))
        why = "\"baseline\": expected a policy name";
    if (!why && (!json_is_array(pols) || json_array_size(pols) == 0))
        why = "\"policies\": expected a non-empty array";
    if (!why && !json_is_array(paired))
        why = "\"paired\": expected an array";
    if (why)
        return why;
    snprintf(s->baseline, sizeof s->baseline, "%s", json_string_value(base));
    s->n = (int32_t)json_array_size(pols);
    s->rows = drv_calloc((size_t)s->n, sizeof *s->rows);
    if (!s->rows)
        return "out of memory";
    for (int32_t i = 0; i < s->n; i++)
        if ((why = load_row(s, json_array_get(pols, (size_t)i), paired, i, field, fsize)))
            return why;
    return NULL;
}

void drv_report_seeds_load(drv_report_seeds *s, const char *dir)
{
    memset(s, 0, sizeof *s);
    char path[4200];
    snprintf(path, sizeof path, "%s/summary-seeds.json", dir);
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT)
        return;
    drv_diag d = {{0}};
    char *text = NULL;
    size_t len;
    if (drv_file_read_max(path, DRV_MAX_REPORT_JSON, "a JSON file of a report", &text, &len, &d) !=
        0) {
        snprintf(s->msg, sizeof s->msg, "%s", d.msg);
        return;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    drv_free(text);
    if (!root) {
        drv_fail(&d, DRV_EPARSE, "%s:%d: expected JSON: %s", path, je.line, je.text);
        snprintf(s->msg, sizeof s->msg, "%s", d.msg);
        return;
    }
    char field[96];
    const char *why = load_root(s, root, field, sizeof field);
    json_decref(root);
    if (why) {
        drv_fail(&d, DRV_EPARSE, "%s: %s%s%s", path, field, *field ? ": " : "", why);
        snprintf(s->msg, sizeof s->msg, "%s", d.msg);
        drv_free(s->rows);
        s->rows = NULL;
        s->n = 0;
        return;
    }
    s->has = true;
}
