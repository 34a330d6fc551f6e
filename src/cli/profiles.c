/*
 * profiles.c - the policies a command can name: the built-in profiles plus those of a
 * `--profiles FILE`, looked up one way for `drover sim`, `drover run` and `drover policies`.
 *
 * The rule when a file's profile and a built-in one share a name: the file wins, everywhere.
 * `--policy NAME` gets the file's; `--policy all` runs the built-ins in their order with the
 * file's profile in the overridden one's place, then the file's other profiles in file order, so
 * no name runs twice. A file cannot define a name twice (drv_profile_file_load refuses it).
 *
 * Also here: a profile written back as a profile line (for file profiles in `drover policies`),
 * and plugin and profile docs with the seed numbers of the design notes replaced by the names of
 * the systems they stand for, which is what a user can look up.
 */
#include "cli.h"

#include "drover/policy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_profiles_load(cli_profiles *ps, const char *path, drv_diag *d)
{
    memset(ps, 0, sizeof *ps);
    if (!path)
        return 0;
    int rc = drv_profile_file_load(path, &ps->file, &ps->nfile, d);
    if (rc == 0)
        ps->path = path;
    return rc;
}

void cli_profiles_fini(cli_profiles *ps)
{
    drv_free(ps->file);
    memset(ps, 0, sizeof *ps);
}

/* The file's profile named name, or NULL. */
static const drv_profile *file_profile(const cli_profiles *ps, const char *name)
{
    for (int i = 0; i < ps->nfile; i++)
        if (strcmp(ps->file[i].name, name) == 0)
            return &ps->file[i];
    return NULL;
}

/* Is name one of the built-in profiles? */
static bool is_builtin(const char *name)
{
    for (int i = 0; i < drv_profile_builtin_count(); i++)
        if (strcmp(drv_profile_builtin_name(i), name) == 0)
            return true;
    return false;
}

bool cli_profile_overridden(const cli_profiles *ps, const char *name)
{
    return is_builtin(name) && file_profile(ps, name) != NULL;
}

int cli_profile_find(const cli_profiles *ps, const char *name, drv_profile *out, drv_diag *d)
{
    const drv_profile *f = file_profile(ps, name);
    if (f) {
        *out = *f;
        return 0;
    }
    if (is_builtin(name))
        return drv_profile_builtin(name, out, d);
    /* Every name the user could have meant: the built-ins, then the file's new ones. */
    char known[400] = "";
    size_t len = 0;
    for (int i = 0; i < drv_profile_builtin_count() && len < sizeof known; i++)
        len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
                                drv_profile_builtin_name(i));
    for (int i = 0; i < ps->nfile && len < sizeof known; i++)
        if (!is_builtin(ps->file[i].name))
            len += (size_t)snprintf(known + len, sizeof known - len, ", %s", ps->file[i].name);
    return drv_fail(d, DRV_ENOENT, "unknown policy '%s' (known: %s)", name, known);
}

/* `all`: the built-ins (each possibly overridden), then the file's other profiles. */
static int resolve_all(const cli_profiles *ps, drv_profile *v, int *n, drv_diag *d)
{
    for (int i = 0; i < drv_profile_builtin_count(); i++) {
        int rc = cli_profile_find(ps, drv_profile_builtin_name(i), &v[(*n)++], d);
        if (rc)
            return rc;
    }
    for (int i = 0; i < ps->nfile; i++)
        if (!is_builtin(ps->file[i].name))
            v[(*n)++] = ps->file[i];
    return 0;
}

int cli_profiles_resolve(const cli_profiles *ps, const char *list, drv_profile **out, int *n,
                         drv_diag *d)
{
    /* Bound: `all` is builtins + file; a list may name up to MAX_LISTED more (repeats). */
    enum { MAX_LISTED = 16 };
    int cap = drv_profile_builtin_count() + ps->nfile + MAX_LISTED, count = 0, rc = 0;
    drv_profile *v = drv_calloc((size_t)cap, sizeof *v);
    char *copy = drv_strdup(list);
    if (!v || !copy) {
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
        goto done;
    }
    if (strcmp(list, "all") == 0) {
        rc = resolve_all(ps, v, &count, d);
        goto done;
    }
    char *save = NULL;
    for (char *name = strtok_r(copy, ",", &save); name && !rc; name = strtok_r(NULL, ",", &save)) {
        if (count == cap)
            rc = drv_fail(d, DRV_EINVAL, "more than %d policies", cap);
        else
            rc = cli_profile_find(ps, name, &v[count++], d);
    }
    if (!rc && count == 0)
        rc = drv_fail(d, DRV_EINVAL, "no policy named");
    /* A policy named twice would run twice and print two equal rows. O(count^2), count <= cap. */
    for (int i = 0; !rc && i < count; i++)
        for (int k = 0; !rc && k < i; k++)
            if (strcmp(v[k].name, v[i].name) == 0)
                rc = drv_fail(d, DRV_EINVAL, "'%s' is named twice (name each policy once)",
                              v[i].name);
done:
    drv_free(copy);
    if (rc) {
        drv_free(v);
        return rc;
    }
    *out = v;
    *n = count;
    return 0;
}

int cli_policy_named(const char *who, const char *profiles, const char *name, drv_profile *out)
{
    drv_diag d = {{0}};
    cli_profiles ps;
    if (cli_profiles_load(&ps, profiles, &d) != 0) {
        fprintf(stderr, "drover %s: --profiles: %s\n", who, d.msg);
        return -1;
    }
    int rc = cli_profile_find(&ps, name, out, &d);
    cli_profiles_fini(&ps);
    if (rc != 0) {
        fprintf(stderr, "drover %s: --policy: %s\n", who, d.msg);
        return -1;
    }
    return 0;
}
