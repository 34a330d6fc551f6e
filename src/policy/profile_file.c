/*
 * profile_file.c - profiles defined in a YAML file (`drover sim --profiles FILE`), so a user
 * can combine plugins and weights without rebuilding. Each entry fills a profile directly:
 * gang and period from the YAML's typed fields, each extension point's plugin list through
 * drv_profile_set_point - the same parser a profile line's values go through, so both ways of
 * writing a profile accept exactly the same plugins, weights and knobs.
 *
 *     profiles:
 *       - name: my-drover
 *         doc: priority without parallelism, DRAGON elasticity
 *         gang: true
 *         period: 5
 *         queue_order: priority(w_par=0)
 *         admit: dragon
 *         scale: dragon
 *         score: locality*3, least-allocated
 *
 * is the profile of the line "gang=true period=5 queue_order=priority(w_par=0) admit=dragon
 * scale=dragon score=locality*3,least-allocated". An unknown key is reported as
 * file:line: profiles[i].key.
 */
#include "drover/conf.h"
#include "drover/policy.h"

#include <stdio.h>
#include <string.h>

/* The optional gang, period, half_life and checkpoint_timeout of entry e into p. */
static int load_settings(const drv_conf_doc *doc, drv_conf *e, const char *path, drv_profile *p,
                         drv_diag *d)
{
    char field[96];
    drv_conf *v;
    int rc;
    if ((v = drv_conf_get(e, "gang")) != NULL) {
        snprintf(field, sizeof field, "%s.gang", path);
        if ((rc = drv_conf_bool(doc, v, field, &p->gang, d)) != 0)
            return rc;
    }
    if ((v = drv_conf_get(e, "period")) != NULL) {
        snprintf(field, sizeof field, "%s.period", path);
        if ((rc = drv_conf_double(doc, v, field, 0.01, 3600, &p->period, d)) != 0)
            return rc;
    }
    if ((v = drv_conf_get(e, "half_life")) != NULL) {
        snprintf(field, sizeof field, "%s.half_life", path);
        if ((rc = drv_conf_double(doc, v, field, 0, DRV_MAX_HALF_LIFE, &p->half_life, d)) != 0)
            return rc;
    }
    if ((v = drv_conf_get(e, "checkpoint_timeout")) != NULL) {
        snprintf(field, sizeof field, "%s.checkpoint_timeout", path);
        if ((rc = drv_conf_double(doc, v, field, 0, DRV_MAX_CHECKPOINT_TIMEOUT,
                                  &p->checkpoint_timeout, d)) != 0)
            return rc;
    }
    return 0;
}

/* Entry i of the list into *out (left partly filled on error: the caller drops it). */
static int load_one(const drv_conf_doc *doc, drv_conf *e, int i, drv_profile *out, drv_diag *d)
{
    char path[64], field[96];
    snprintf(path, sizeof path, "profiles[%d]", i);
    int rc = drv_conf_expect(doc, e, DRV_CONF_MAP, path, d);
    if (rc)
        return rc;
    const char *docstr = "";
    char name[sizeof out->name]; /* names files (jobs-<name>.csv): the name rule, no '/' */
    drv_conf *v = drv_conf_get(e, "name");
    if (!v)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing name", doc->file, e->line, path);
    snprintf(field, sizeof field, "%s.name", path);
    if ((rc = drv_conf_name(doc, v, field, name, sizeof name, d)) != 0)
        return rc;
    if ((v = drv_conf_get(e, "doc")) != NULL) {
        snprintf(field, sizeof field, "%s.doc", path);
        if ((rc = drv_conf_str(doc, v, field, &docstr, d)) != 0)
            return rc;
    }
    drv_profile_init(out, name);
    snprintf(out->doc, sizeof out->doc, "%s", docstr);
    if ((rc = load_settings(doc, e, path, out, d)) != 0)
        return rc;
    const char *val[DRV_NPOINTS] = {0}; /* each point's plugin list, when given */
    for (int pt = 0; pt < DRV_NPOINTS; pt++) {
        if ((v = drv_conf_get(e, drv_point_name(pt))) == NULL)
            continue;
        snprintf(field, sizeof field, "%s.%s", path, drv_point_name(pt));
        if ((rc = drv_conf_str(doc, v, field, &val[pt], d)) != 0)
            return rc;
    }
    if ((rc = drv_conf_check_unused(doc, e, path, d)) != 0)
        return rc;
    drv_diag pd = {{0}};
    for (int pt = 0; pt < DRV_NPOINTS; pt++)
        if (val[pt] && (rc = drv_profile_set_point(out, pt, val[pt], strlen(val[pt]), &pd)) != 0)
            return drv_fail(d, rc, "%s:%d: %s: %s", doc->file, e->line, path, pd.msg);
    if ((rc = drv_profile_check(out, &pd)) != 0)
        return drv_fail(d, rc, "%s:%d: %s: %s", doc->file, e->line, path, pd.msg);
    return 0;
}

int drv_profile_file_load(const char *path, drv_profile **out, int *n, drv_diag *d)
{
    drv_conf_doc doc = {0};
    int rc = drv_conf_load_file(&doc, path, d);
    if (rc)
        return rc;
    drv_profile *v = NULL;
    drv_conf *list = NULL;
    if ((rc = drv_conf_expect(&doc, doc.root, DRV_CONF_MAP, "(top level)", d)) != 0)
        goto done;
    list = drv_conf_get(doc.root, "profiles");
    if (!list) {
        rc =
            drv_fail(d, DRV_EINVAL, "%s:%d: expected a `profiles:` list", doc.file, doc.root->line);
        goto done;
    }
    if ((rc = drv_conf_check_unused(&doc, doc.root, "(top level)", d)) != 0 ||
        (rc = drv_conf_expect(&doc, list, DRV_CONF_SEQ, "profiles", d)) != 0)
        goto done;
    v = drv_calloc((size_t)list->nitems + 1, sizeof *v);
    if (!v) {
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
        goto done;
    }
    for (int32_t i = 0; i < list->nitems && !rc; i++) {
        rc = load_one(&doc, list->items[i], (int)i, &v[i], d);
        for (int32_t k = 0; k < i && !rc; k++)
            if (strcmp(v[k].name, v[i].name) == 0)
                rc = drv_fail(d, DRV_EEXIST, "%s:%d: profiles[%d].name: '%s' is defined twice",
                              doc.file, list->items[i]->line, (int)i, v[i].name);
    }
    if (!rc) {
        *out = v;
        *n = (int)list->nitems;
        v = NULL;
    }
done:
    drv_free(v);
    drv_conf_doc_fini(&doc);
    return rc;
}
