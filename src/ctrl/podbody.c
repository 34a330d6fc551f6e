/*
 * podbody.c - the body of a pod creation (`drover run`'s binder threads), rendered from a byte
 * template instead of a parse, an edit and a dump of the role's pod template per pod.
 *
 * What a pod's body is stays defined by one function, pod_tree: the role's template parsed,
 * then the pod's names, labels, owner reference, schedulerName, nodeName, peer environment
 * (peers.h) and CPU limit (set_cpu_limit) set in it. podbody_dump is that tree dumped (one
 * jansson round trip per pod: it was the binder threads' largest cost in e2e_bind).
 *
 * podbody_render gives the same bytes from a shape: pod_tree run once with a marker string in
 * place of each per-pod or per-job value (the pod's name and hostname, nodeName, the rank label,
 * the job's name, namespace and uid, each peer variable's value, the CPU limit), dumped, and cut
 * at the markers into pieces. A pod's body is then the pieces with the values, JSON-escaped as
 * jansson escapes them, in between: O(the body's length), one allocation. Because every value
 * that differs between pods (or jobs) is a slot, a shape depends only on the template's text,
 * the role, the framework, the scheduler's name and whether the pod is bound and limited: in
 * e2e_bind (500 jobs with one template) one shape serves all 2,000 pods.
 *
 * Example: template {"spec":{"containers":[{"name":"m","image":"t"}]}}, worker, all-reduce,
 * bound: the shape is {"spec":{"containers":[{"name":"m","image":"t","env":[...,{"name":"RANK",
 * "value":"<E3>"},...]}],"schedulerName":"drover","restartPolicy":"Never","nodeName":"<NODE>",
 * "hostname":"<HOST>","subdomain":"<JOB>"},"metadata":{"labels":{"drover.dev/job":"<JOB>",...
 * and worker 2 of job "a" on node "n7" replaces <E3> by "3", <NODE> by "n7", <JOB> by "a".
 *
 * Exactness: a shape is used only if the dump holds exactly the markers that were set (so a
 * template that already held one, or an edit that moved one, falls back); a pod whose values
 * hold a byte outside ASCII, or whose hostname would be too long, falls back to podbody_dump
 * (jansson refuses or drops what the splice would keep). tests/ctrl/test_podbody.c builds pods
 * both ways over varied templates and fails on any byte of difference.
 *
 * The cache: SHAPES entries, direct-mapped by a hash of the shape's key, under one mutex (a
 * lookup compares the template's text: O(its length), as the copy the scheduler thread already
 * makes); a colliding key replaces the entry. Bounded: SHAPES templates and bodies.
 *
 * TF_CONFIG lists every peer of the job, so it grows with the job and was most of a body's
 * rendering (64 workers: 17 of 27 µs a pod). Its cluster part is the same for all the job's
 * pods but the evaluator (peers.h: drv_peers_tf_cluster): kept per job in CLUSTERS entries,
 * direct-mapped by the job's name and namespace and checked against its replicas and port, a
 * pod's TF_CONFIG is that part and its task part. Bounded: CLUSTERS cluster parts.
 */
#include "podbody.h"

#include "drover/hashmap.h"
#include "kube/json.h"
#include "kube/jsontext.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The slots: what a shape leaves out (the pod's values, in podbody_render's values[]). */
enum {
    SLOT_NAME, /* metadata.name */
    SLOT_NS,   /* metadata.namespace */
    SLOT_JOB,  /* the job label, the owner reference's name, spec.subdomain */
    SLOT_UID,  /* the owner reference's uid */
    SLOT_RANK, /* the rank label */
    SLOT_NODE, /* spec.nodeName */
    SLOT_HOST, /* spec.hostname */
    SLOT_CPU,  /* the CPU limit */
    SLOT_ENV,  /* SLOT_ENV + v: the value of peer variable v (drv_peers_variables' order) */
    NSLOTS = SLOT_ENV + 5
};

enum { SHAPES = 64 };   /* cached shapes (templates x roles x bound/limited seen at once) */
enum { CLUSTERS = 16 }; /* cached TF_CONFIG cluster parts (jobs whose pods go out at once) */

/* "\x01drv" then 'A' + slot then "\x01": dumped by jansson as \u0001drvA\u0001 */
#define MARK_TEXT "\\u0001drv"
enum { MARK_LEN = 9, MARKED_LEN = MARK_LEN + 1 + 6 };

/* A piece of a shape: text[off, off + len), then the value of slot (-1: the last piece). */
typedef struct piece {
    uint32_t off, len;
    int32_t slot;
} piece;

/* A rendered shape and the key it was rendered for. */
typedef struct shape {
    char *tmpl;  /* the template's text (owned); NULL: {} */
    char *sched; /* spec.schedulerName (owned); NULL: none */
    int role, framework;
    bool bound, limited;
    bool usable; /* false: the shape could not be cut (podbody_dump each time) */
    char *text;  /* the dumped shape, markers included */
    piece *pieces;
    int32_t npieces, cap;
} shape;

/* A TensorFlow job's TF_CONFIG cluster part (drv_peers_tf_cluster) and what it was written
 * from. */
typedef struct cluster {
    char *ns, *name; /* owned; NULL: the entry is empty */
    int32_t replicas[DRV_NROLES];
    int port;
    char *text; /* {"cluster":{...} (owned) */
    size_t len;
} cluster;

struct podbody_cache {
    pthread_mutex_t mu; /* guards slot, clusters, spliced */
    shape *slot[SHAPES];
    cluster clusters[CLUSTERS]; /* direct-mapped by the job's name and namespace */
    int64_t spliced; /* bodies rendered from a shape (the rest fell back to podbody_dump) */
};

/* The strings pod_tree writes (podbody_dump: the pod's own; a shape: markers). */
typedef struct tree_strings {
    const char *name, *ns, *job, *uid, *rank;
} tree_strings;

/* Sets obj[key] to a new object unless it holds one already; returns it. */
static json_t *object_at(json_t *obj, const char *key)
{
    json_t *x = json_object_get(obj, key);
    if (!json_is_object(x)) {
        x = json_object();
        json_object_set_new(obj, key, x);
    }
    return x;
}

/* The wanted CPU limit (millicores; <= 0: none) into pod's first container, when it has exactly
 * one (ctrl_resize.c: a pod of several containers is never resized). 0 or DRV_ENOMEM. */
static int set_cpu_limit(int64_t lim, json_t *pod)
{
    json_t *cs = json_object_get(json_object_get(pod, "spec"), "containers");
    json_t *c0 = json_array_get(cs, 0);
    if (lim <= 0 || json_array_size(cs) != 1 || !json_is_object(c0))
        return 0;
    json_t *res = json_object_get(c0, "resources");
    if (!json_is_object(res) && json_object_set_new(c0, "resources", res = json_object()) != 0)
        return DRV_ENOMEM;
    json_t *limits = json_object_get(res, "limits");
    if (!json_is_object(limits) && json_object_set_new(res, "limits", limits = json_object()) != 0)
        return DRV_ENOMEM;
    char q[32];
    snprintf(q, sizeof q, "%lldm", (long long)lim);
    return json_object_set_new(limits, "cpu", json_string(q)) != 0 ? DRV_ENOMEM : 0;
}

/* The pod r creates, with s's strings: NULL when out of memory; *peers_rc: drv_peers_apply's
 * result (its message in d). */
static json_t *pod_tree(const pod_render *r, const tree_strings *s, int *peers_rc, drv_diag *d)
{
    json_t *tm = r->tmpl ? drv_json_loadb(r->tmpl, strlen(r->tmpl), NULL) : json_object();
    if (!tm)
        return NULL;
    json_t *meta = object_at(tm, "metadata");
    json_t *labels = object_at(meta, "labels");
    json_object_set_new(labels, "drover.dev/job", json_string(s->job));
    json_object_set_new(labels, "drover.dev/role", json_string(drv_role_name(r->role)));
    json_object_set_new(labels, "drover.dev/rank", json_string(s->rank));
    json_object_set_new(meta, "name", json_string(s->name));
    json_object_set_new(meta, "namespace", json_string(s->ns));
    json_object_set_new(meta, "ownerReferences",
                        json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion",
                                  "drover.dev/v1alpha1", "kind", "TrainingJob", "name", s->job,
                                  "uid", s->uid, "controller", 1, "blockOwnerDeletion", 1));
    json_t *spec = object_at(tm, "spec");
    json_object_set_new(spec, "schedulerName", json_string(r->sched));
    if (!json_object_get(spec, "restartPolicy"))
        json_object_set_new(spec, "restartPolicy", json_string("Never"));
    if (r->node[0])
        json_object_set_new(spec, "nodeName", json_string(r->node));
    json_object_set_new(tm, "apiVersion", json_string("v1"));
    json_object_set_new(tm, "kind", json_string("Pod"));
    *peers_rc = drv_peers_apply(&r->peers, r->role, r->rank, tm, d);
    if (*peers_rc == DRV_ENOMEM || set_cpu_limit(r->cpu_limit, tm) != 0) {
        json_decref(tm);
        return NULL;
    }
    return tm;
}

char *podbody_dump(const pod_render *r)
{
    char rank[16];
    snprintf(rank, sizeof rank, "%d", r->rank);
    tree_strings s = {r->pod, r->ns, r->job, r->uid, rank};
    drv_diag d = {{0}};
    int peers_rc = 0;
    json_t *tm = pod_tree(r, &s, &peers_rc, &d);
    if (peers_rc) /* (a template without containers gets no environment: logged, created as is) */
        drv_log(DRV_LOG_ERROR, "%s", d.msg);
    if (!tm)
        return NULL;
    char *out = drv_json_dump(tm, JSON_COMPACT);
    json_decref(tm);
    return out;
}

/* ---- shapes --------------------------------------------------------------------------------- */

static void shape_free(shape *sh)
{
    if (!sh)
        return;
    drv_free(sh->tmpl);
    drv_free(sh->sched);
    drv_free(sh->text);
    drv_free(sh->pieces);
    drv_free(sh);
}

/* Equal strings, or both NULL. */
static bool same(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

static bool shape_is(const shape *sh, const pod_render *r)
{
    return sh->role == r->role && sh->framework == (int)r->peers.framework &&
           sh->bound == (r->node[0] != 0) && sh->limited == (r->cpu_limit > 0) &&
           same(sh->sched, r->sched) && same(sh->tmpl, r->tmpl);
}

static unsigned shape_hash(const pod_render *r)
{
    uint32_t h = (uint32_t)drv_hashmap_hash_str(r->tmpl ? r->tmpl : "");
    h ^= (uint32_t)r->role * 131u + (uint32_t)r->peers.framework * 7u +
         (r->node[0] ? 1u : 0u) * 3u + (r->cpu_limit > 0 ? 1u : 0u);
    return h % SHAPES;
}

/* Marks obj[key] (a string) as slot; counts the marks set. */
static void mark(json_t *obj, const char *key, int slot, int *marks)
{
    char m[8] = {1, 'd', 'r', 'v', (char)('A' + slot), 1, 0};
    if (json_is_string(json_object_get(obj, key)) &&
        json_object_set_new(obj, key, json_string(m)) == 0)
        (*marks)++;
}

/* Marks what drv_peers_apply and set_cpu_limit set per pod in tm (as they find it: the first
 * env entry of each variable's name in each container, the only container's CPU limit). */
static void mark_peers(const pod_render *r, json_t *tm, const char *const names[5], int n,
                       int *marks)
{
    json_t *spec = json_object_get(tm, "spec"), *cs = json_object_get(spec, "containers");
    mark(spec, "hostname", SLOT_HOST, marks);
    mark(spec, "subdomain", SLOT_JOB, marks);
    size_t i;
    json_t *c;
    json_array_foreach(cs, i, c)
    {
        json_t *env = json_object_get(c, "env");
        for (int v = 0; v < n; v++) {
            size_t k;
            json_t *e;
            json_array_foreach(env, k, e)
            {
                const char *en = json_string_value(json_object_get(e, "name"));
                if (en && !strcmp(en, names[v])) {
                    mark(e, "value", SLOT_ENV + v, marks);
                    break;
                }
            }
        }
    }
    if (r->cpu_limit > 0 && json_array_size(cs) == 1)
        mark(json_object_get(json_object_get(json_array_get(cs, 0), "resources"), "limits"), "cpu",
             SLOT_CPU, marks);
}

/* Cuts sh->text at its markers: 1, 0 when they are not exactly the marks set, or DRV_ENOMEM. */
static int cut(shape *sh, int marks)
{
    const char *t = sh->text, *p = t;
    int found = 0;
    for (;;) {
        const char *m = strstr(p, MARK_TEXT);
        if (drv_grow(&sh->pieces, sizeof *sh->pieces, &sh->cap, sh->npieces + 1) != 0)
            return DRV_ENOMEM;
        piece *pc = &sh->pieces[sh->npieces++];
        pc->off = (uint32_t)(p - t);
        if (!m) {
            pc->len = (uint32_t)strlen(p);
            pc->slot = -1;
            return found == marks;
        }
        int slot = m[MARK_LEN] - 'A';
        if (slot < 0 || slot >= NSLOTS || strncmp(m + MARK_LEN + 1, "\\u0001", 6) != 0)
            return 0;
        pc->len = (uint32_t)(m - p);
        pc->slot = slot;
        found++;
        p = m + MARKED_LEN;
    }
}

/* r's shape, rendered (usable false when it cannot be cut); NULL when out of memory. */
static shape *shape_new(const pod_render *r)
{
    shape *sh = drv_calloc(1, sizeof *sh);
    if (!sh || (r->tmpl && !(sh->tmpl = drv_strdup(r->tmpl))) ||
        (r->sched && !(sh->sched = drv_strdup(r->sched)))) {
        shape_free(sh);
        return NULL;
    }
    sh->role = r->role;
    sh->framework = (int)r->peers.framework;
    sh->bound = r->node[0] != 0;
    sh->limited = r->cpu_limit > 0;
    char m[NSLOTS][8];
    for (int i = 0; i < NSLOTS; i++)
        snprintf(m[i], sizeof m[i],
                 "\x01"
                 "drv%c\x01",
                 'A' + i);
    tree_strings s = {m[SLOT_NAME], m[SLOT_NS], m[SLOT_JOB], m[SLOT_UID], m[SLOT_RANK]};
    pod_render mr = *r; /* (the node a marker too: pod_tree writes r->node) */
    mr.node = r->node[0] ? m[SLOT_NODE] : "";
    int marks = 5 + (r->node[0] != 0) + 1 /* the owner reference's name: both SLOT_JOB */;
    drv_diag d = {{0}};
    int peers_rc = 0;
    json_t *tm = pod_tree(&mr, &s, &peers_rc, &d);
    if (!tm) {
        shape_free(sh);
        return NULL;
    }
    const char *names[5];
    char values[5][512], *tf = NULL;
    int n = drv_peers_variables(&r->peers, r->role, r->rank, names, values, &tf);
    drv_free(tf);
    int rc = n == DRV_ENOMEM ? n : 0;
    if (peers_rc == 0 && n > 0) { /* (else podbody_dump each time: it logs why) */
        mark_peers(r, tm, names, n, &marks);
        sh->text = drv_json_dump(tm, JSON_COMPACT);
        rc = sh->text ? cut(sh, marks) : DRV_ENOMEM;
        sh->usable = rc == 1;
    }
    json_decref(tm);
    if (rc < 0) {
        shape_free(sh);
        return NULL;
    }
    return sh;
}

/* ---- splicing ------------------------------------------------------------------------------- */

/* sh's pieces with the values between them; NULL: out of memory, *fallback when a value cannot
 * be spliced. */
static char *splice(const shape *sh, const char *const v[NSLOTS], bool *fallback)
{
    long vlen[NSLOTS], total = 0;
    for (int i = 0; i < NSLOTS; i++)
        vlen[i] = -2;
    for (int32_t i = 0; i < sh->npieces; i++) {
        int s = sh->pieces[i].slot;
        total += sh->pieces[i].len;
        if (s < 0)
            continue;
        if (vlen[s] == -2)
            vlen[s] = v[s] ? drv_json_escaped(v[s], true, NULL) : -1;
        if (vlen[s] < 0) {
            *fallback = true;
            return NULL;
        }
        total += vlen[s];
    }
    char *out = drv_malloc((size_t)total + 1), *o = out;
    if (!out)
        return NULL;
    for (int32_t i = 0; i < sh->npieces; i++) {
        const piece *pc = &sh->pieces[i];
        memcpy(o, sh->text + pc->off, pc->len);
        o += pc->len;
        if (pc->slot >= 0)
            o += drv_json_escaped(v[pc->slot], true, o);
    }
    *o = 0;
    return out;
}

/* The body from r's cached shape (rendering it on a miss); *fallback when it has none. */
static char *from_shape(podbody_cache *pc, const pod_render *r, const char *const v[NSLOTS],
                        bool *fallback)
{
    unsigned h = shape_hash(r);
    pthread_mutex_lock(&pc->mu);
    shape *sh = pc->slot[h];
    if (!sh || !shape_is(sh, r)) {
        pthread_mutex_unlock(&pc->mu); /* (render outside the lock: a parse and a dump) */
        shape *fresh = shape_new(r);
        if (!fresh)
            return NULL;
        pthread_mutex_lock(&pc->mu);
        shape_free(pc->slot[h]);
        pc->slot[h] = sh = fresh;
    }
    char *out = NULL;
    if (sh->usable) {
        out = splice(sh, v, fallback);
        pc->spliced += out != NULL;
    } else
        *fallback = true;
    pthread_mutex_unlock(&pc->mu);
    return out;
}

/* ---- TF_CONFIG's cluster part, once per job ---------------------------------------------------
 */

static void cluster_clear(cluster *cl)
{
    drv_free(cl->ns);
    drv_free(cl->name);
    drv_free(cl->text);
    memset(cl, 0, sizeof *cl);
}

static bool cluster_is(const cluster *cl, const drv_peer_job *j)
{
    return cl->name && cl->port == j->port && !strcmp(cl->name, j->name) &&
           !strcmp(cl->ns, j->ns) && !memcmp(cl->replicas, j->replicas, sizeof cl->replicas);
}

/* j's TF_CONFIG for role/rank (not the evaluator), its cluster part from pc (written on a miss,
 * outside the lock, and kept): the same bytes as drv_peers_tf_config, the addresses of every
 * peer written once per job rather than per pod. NULL as drv_peers_tf_config. */
static char *tf_config(podbody_cache *pc, const drv_peer_job *j, int role, int rank)
{
    uint64_t h = drv_hashmap_hash_str(j->name) * 31u + drv_hashmap_hash_str(j->ns);
    cluster *cl = &pc->clusters[h % CLUSTERS];
    pthread_mutex_lock(&pc->mu);
    if (!cluster_is(cl, j)) {
        pthread_mutex_unlock(&pc->mu);
        cluster fresh = {drv_strdup(j->ns), drv_strdup(j->name),     {0},
                         j->port,           drv_peers_tf_cluster(j), 0};
        if (!fresh.ns || !fresh.name || !fresh.text) {
            cluster_clear(&fresh);
            return NULL;
        }
        memcpy(fresh.replicas, j->replicas, sizeof fresh.replicas);
        fresh.len = strlen(fresh.text);
        pthread_mutex_lock(&pc->mu);
        cluster_clear(cl);
        *cl = fresh;
    }
    char *out = drv_peers_tf_join(j, role, rank, cl->text, cl->len);
    pthread_mutex_unlock(&pc->mu);
    return out;
}

/* The peer variables as drv_peers_variables gives them, TF_CONFIG's cluster part from pc. */
static int variables(podbody_cache *pc, const pod_render *r, const char *names[5],
                     char values[5][512], char **tf)
{
    if (r->peers.framework != DRV_FRAMEWORK_TENSORFLOW || r->role == DRV_ROLE_EVALUATOR)
        return drv_peers_variables(&r->peers, r->role, r->rank, names, values, tf);
    return drv_peers_tf_variables(tf_config(pc, &r->peers, r->role, r->rank), names, values, tf);
}

char *podbody_render(podbody_cache *pc, const pod_render *r)
{
    char rank[16], cpu[32], host[64];
    snprintf(rank, sizeof rank, "%d", r->rank);
    snprintf(cpu, sizeof cpu, "%lldm", (long long)r->cpu_limit);
    const char *names[5];
    char values[5][512], *tf = NULL;
    int n = variables(pc, r, names, values, &tf);
    /* (what drv_peers_apply refuses, or fails on: as it does there, where it is logged; a peer's
     * name too long for TF_CONFIG is an out of memory there too) */
    if (n < 0 || drv_peers_pod_name(&r->peers, r->role, r->rank, host, sizeof host) != 0) {
        drv_free(tf);
        return podbody_dump(r);
    }
    const char *v[NSLOTS] = {
        [SLOT_NAME] = r->pod, [SLOT_NS] = r->ns,     [SLOT_JOB] = r->job, [SLOT_UID] = r->uid,
        [SLOT_RANK] = rank,   [SLOT_NODE] = r->node, [SLOT_HOST] = host,  [SLOT_CPU] = cpu};
    for (int i = 0; i < n; i++)
        v[SLOT_ENV + i] = tf && i == 0 ? tf : values[i];
    bool fallback = false;
    char *out = from_shape(pc, r, v, &fallback);
    drv_free(tf);
    return fallback ? podbody_dump(r) : out;
}

int64_t podbody_spliced(podbody_cache *pc)
{
    pthread_mutex_lock(&pc->mu);
    int64_t n = pc->spliced;
    pthread_mutex_unlock(&pc->mu);
    return n;
}

podbody_cache *podbody_cache_new(void)
{
    podbody_cache *pc = drv_calloc(1, sizeof *pc);
    if (pc && pthread_mutex_init(&pc->mu, NULL) != 0) {
        drv_free(pc);
        return NULL;
    }
    return pc;
}

void podbody_cache_free(podbody_cache *pc)
{
    if (!pc)
        return;
    for (int i = 0; i < SHAPES; i++)
        shape_free(pc->slot[i]);
    for (int i = 0; i < CLUSTERS; i++)
        cluster_clear(&pc->clusters[i]);
    pthread_mutex_destroy(&pc->mu);
    drv_free(pc);
}
