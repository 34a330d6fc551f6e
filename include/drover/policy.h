/*
 * policy.h - the plugin registry and profiles.
 *
 * A profile is written as one line of space-separated settings, the same whether it is built in
 * or given by a user:
 *
 *     gang=true period=1 queue_order=fifo admit=gang(strict=0) score=least-allocated*1
 *
 * `gang`, `period`, `half_life` (seconds, fair share over time: drover/usage.h; 0, the
 * default, for shares of now only) and `checkpoint_timeout` (seconds, `drover run`'s checkpoint
 * handshake: docs/running.md; 0, the default, for none) are profile settings; every other key
 * names an extension point (docs/cycle.md) and takes a comma-separated list of plugins, each
 * optionally with a weight (`*N`, scores only) and knobs in parentheses (`name(k=v;k=v)`).
 * Unknown plugins, points and knobs are errors that list what is known.
 */
#ifndef DROVER_POLICY_H
#define DROVER_POLICY_H

#include "drover/cycle.h"
#include "drover/usage.h"

/* Every plugin, in a stable order; *n receives the count. */
const drv_plugin *const *drv_plugins(int *n);
const drv_plugin *drv_plugin_find(const char *name);

/* Parses a profile line into out (named name); drv_profile_format (cycle.h) writes one. Errors name
 * the token and what was expected; on error out is untouched. */
int drv_profile_parse(const char *name, const char *line, drv_profile *out, drv_diag *d);

/* Building a profile from parts (what the YAML loader does, with gang and period already
 * typed): an empty profile named name with the defaults (gang, period 1 s); then the plugin
 * list of one extension point, as written after "point=" in a profile line (text[0..len),
 * white space around names ignored), appended to the point's; then the check that the profile
 * is complete (an admit plugin). Errors as drv_profile_parse's. */
void drv_profile_init(drv_profile *p, const char *name);
int drv_profile_set_point(drv_profile *p, int pt, const char *text, size_t len, drv_diag *d);
int drv_profile_check(const drv_profile *p, drv_diag *d);

/* A built-in profile by name: DRV_ENOENT (with the known names in d) when there is none. */
int drv_profile_builtin(const char *name, drv_profile *out, drv_diag *d);
/* Names of the built-in profiles in table order, and their profile lines and docs. */
int drv_profile_builtin_count(void);
const char *drv_profile_builtin_name(int i);
const char *drv_profile_builtin_line(int i);
const char *drv_profile_builtin_doc(int i);

/* ---- knobs: what a plugin's init uses to read its settings ---------------------------------- */

/* One tunable of a plugin: its default and allowed range, stated next to where it is read. */
typedef struct drv_knob_spec {
    const char *name;
    double def, lo, hi;
    const char *doc;
} drv_knob_spec;

/*
 * Fills vals[i] for each spec (default when not given); fails with DRV_EINVAL naming an unknown
 * knob and listing the known ones, or DRV_ERANGE naming a value out of [lo, hi].
 */
int drv_knobs_read(const drv_knob_spec *spec, int nspec, const drv_knob *knobs, int nknobs,
                   double *vals, drv_diag *d);

/* ---- combined priority (src/policy/priority.c): the per-factor breakdown, like sprio ------- */

enum {
    DRV_PRIO_USER,
    DRV_PRIO_CLASS,
    DRV_PRIO_WAIT,
    DRV_PRIO_PARALLEL,
    DRV_PRIO_SHARE, /* the user's fair share within the job's queue (raw: the share, 0..) */
    DRV_PRIO_NFACTORS
};
/* "user", "class", "wait", "parallelism", "share". */
const char *drv_priority_factor_name(int f);

typedef struct drv_priority_breakdown {
    double raw[DRV_PRIO_NFACTORS];    /* the factor's value (priority, seconds, workers, share) */
    double norm[DRV_PRIO_NFACTORS];   /* min-max normalised over the queue, 0..1 */
    double weight[DRV_PRIO_NFACTORS]; /* the knob weights */
    double total;                     /* sum of weight * norm */
    int32_t queued;                   /* jobs in the queue normalised over */
} drv_priority_breakdown;

/*
 * The combined priority of job at time now, normalised over the jobs waiting in st (phase
 * pending, some pod unbound) plus job itself, with the `priority` plugin's knobs (knobs may be
 * NULL for the defaults). Errors name a bad knob.
 */
int drv_priority_explain(const drv_state *st, double now, int32_t job, const drv_knob *knobs,
                         int nknobs, drv_priority_breakdown *out, drv_diag *d);

/* Fair share (shares now and decayed over time) is the core's: drover/usage.h. */

/* ---- profiles from a file (src/policy/profile_file.c) -------------------------------------- */

/*
 * Loads the profiles of a YAML file (format in docs/policies.md): a `profiles:` list of maps
 * with name, doc, gang, period and one key per extension point, each value as in a profile
 * line. *out is allocated with drv_malloc (the caller drv_frees it); *n receives the count.
 * Errors name file:line and the bad key; on error *out is untouched.
 */
int drv_profile_file_load(const char *path, drv_profile **out, int *n, drv_diag *d);

#endif
