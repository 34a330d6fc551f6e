/*
 * podbody.h - the body of a pod creation, rendered on a binder thread (ctrl_send.c) from a
 * pod_render the scheduler thread fills (ctrl_binder.c). Owns its cache of shapes (own lock);
 * calls nothing of the controller.
 */
#ifndef DROVER_CTRL_PODBODY_H
#define DROVER_CTRL_PODBODY_H

#include "peers.h"

/* What a binder thread renders a pod creation's body from: copied from the mirror by the
 * scheduler thread when it queues the creation, so that the binder reads nothing the scheduler
 * thread may change meanwhile (the mirror's records and string table grow and are freed under
 * it). One allocation (ctrl_binder.c: pod_render_new): the strings follow the struct, a few
 * hundred bytes in all (fixed arrays made it 1.8 kB, a page fault every other pod in a burst of
 * creations). */
typedef struct pod_render {
    const char *tmpl;   /* the role's pod template (JSON text); NULL: {} */
    const char *sched;  /* spec.schedulerName: the one served, fixed before the threads start */
    const char *ns;     /* the job's namespace */
    const char *job;    /* the TrainingJob's name */
    const char *pod;    /* the pod's name (ctrl_mirror_pod_name) */
    const char *node;   /* spec.nodeName; "": unbound */
    const char *uid;    /* the TrainingJob's uid (its pods' owner reference) */
    int role, rank;     /* the pod's role and index in it */
    drv_peer_job peers; /* the peer environment's inputs; .ns, .name are ns, job above */
    int64_t cpu_limit;  /* a wanted CPU limit (ctrl_resize.c, millicores); <= 0: none */
    char *path;         /* the namespace's pods, where the creation is POSTed; NULL in a render
                           filled by hand (tests) */
    char *pod_path;     /* path + "/" + pod (the same) */
} pod_render;

/* A pod creation's body from r (drv_malloc'd), or NULL when out of memory.
 * podbody_dump parses, edits and dumps r's template; podbody_render gives the same bytes from a
 * shape cached in pc (rendered once per template, role, bound and limited; thread-safe) and a
 * TensorFlow job's TF_CONFIG cluster part cached there too (written once per job), and falls
 * back to podbody_dump for what a shape cannot render. */
typedef struct podbody_cache podbody_cache;
char *podbody_dump(const pod_render *r);
char *podbody_render(podbody_cache *pc, const pod_render *r);
podbody_cache *podbody_cache_new(void); /* NULL: out of memory */
void podbody_cache_free(podbody_cache *pc);
int64_t podbody_spliced(podbody_cache *pc); /* bodies podbody_render spliced (not fallen back) */

#endif
