/*
 * conf.h - configuration documents (YAML, and so JSON) loaded into a small tree whose every
 * node remembers its file and line, so that any consumer can report
 * "cluster.yaml:12: nodes[3].cpu: expected a quantity such as 32 or 500m".
 *
 * Built on libyaml's parser. Scalars keep their text; typed getters convert and report.
 * Anchors and aliases are refused (configuration files have no need of them).
 */
#ifndef DROVER_CONF_H
#define DROVER_CONF_H

#include "drover/base.h"

enum drv_conf_kind { DRV_CONF_SCALAR, DRV_CONF_SEQ, DRV_CONF_MAP };

typedef struct drv_conf drv_conf;
struct drv_conf {
    int kind;         /* enum drv_conf_kind */
    int line;         /* 1-based line where the node starts */
    char *text;       /* scalar text (NULL for SEQ and MAP) */
    bool quoted;      /* scalar was quoted: never a number or boolean */
    char *key;        /* key under which this node sits in its parent map, or NULL */
    drv_conf **items; /* children: sequence items, or map values (key in ->key) */
    int32_t nitems, cap;
    bool used; /* set by getters; lets callers report unknown keys */
};

typedef struct drv_conf_doc {
    char *file; /* name used in messages */
    drv_conf *root;
} drv_conf_doc;

/* The largest YAML (or JSON) file read: 64 MiB, far above any cluster, workload, profiles file
 * or kubeconfig (a workload of 100,000 jobs is about 25 MiB; larger job lists are traces). */
#define DRV_MAX_CONF_BYTES (64ULL << 20)

/* Parses a file (path "-" is stdin); errors name file:line. A file larger than
 * DRV_MAX_CONF_BYTES is DRV_ERANGE ("path: larger than 64 MiB, the most a YAML file may be"). */
int drv_conf_load_file(drv_conf_doc *doc, const char *path, drv_diag *d);
/* Parses text in memory; name is used in messages. */
int drv_conf_load_string(drv_conf_doc *doc, const char *name, const char *text, size_t len,
                         drv_diag *d);
void drv_conf_doc_fini(drv_conf_doc *doc);

/* The value under key in a map, or NULL (also when c is not a map). Marks it used. */
drv_conf *drv_conf_get(drv_conf *c, const char *key);

/*
 * Typed reads. `path` is the field's name for messages ("nodes[3].cpu"). Each returns 0, or
 * DRV_EINVAL with "file:line: path: expected ..." in d.
 */
int drv_conf_str(const drv_conf_doc *doc, const drv_conf *c, const char *path, const char **out,
                 drv_diag *d);
/* A name (the name rule of text.h: letters, digits, '-', '_', '.'; at most cap - 1 bytes) into
 * dst; else "file:line: path: expected a name of 1 to N letters, ..., found '...'". */
int drv_conf_name(const drv_conf_doc *doc, const drv_conf *c, const char *path, char *dst,
                  size_t cap, drv_diag *d);
int drv_conf_int(const drv_conf_doc *doc, const drv_conf *c, const char *path, int64_t lo,
                 int64_t hi, int64_t *out, drv_diag *d);
int drv_conf_double(const drv_conf_doc *doc, const drv_conf *c, const char *path, double lo,
                    double hi, double *out, drv_diag *d);
int drv_conf_bool(const drv_conf_doc *doc, const drv_conf *c, const char *path, bool *out,
                  drv_diag *d);
/* Kubernetes quantities: CPU ("4", "500m", "1.5") into millicores. */
int drv_conf_cpu(const drv_conf_doc *doc, const drv_conf *c, const char *path, int64_t *out,
                 drv_diag *d);
/* Kubernetes quantities: memory ("128Gi", "512Mi", "1G", "1000") into bytes. */
int drv_conf_mem(const drv_conf_doc *doc, const drv_conf *c, const char *path, int64_t *out,
                 drv_diag *d);
/* Checks that c is of the kind expected; message names what was found. */
int drv_conf_expect(const drv_conf_doc *doc, const drv_conf *c, int kind, const char *path,
                    drv_diag *d);
/* Fails naming the first key of map c that no getter has asked for ("unknown field"). */
int drv_conf_check_unused(const drv_conf_doc *doc, const drv_conf *c, const char *path,
                          drv_diag *d);

/*
 * The largest quantities accepted: far beyond any machine (10^9 cores, 1 PiB), and small enough
 * that a sum over 8,000 of them (nodes of a cluster, replicas of a job) stays within int64;
 * drv_cluster_load refuses a cluster whose total goes beyond DRV_MAX_TOTAL.
 */
#define DRV_MAX_CPU_MILLI 1000000000000LL
#define DRV_MAX_MEM_BYTES (1LL << 50)
#define DRV_MAX_TOTAL (1LL << 62)

/* Parses a Kubernetes CPU quantity string ("4", "1.5", "500m", "1e3"; decimal only, no sign)
 * into millicores; DRV_EINVAL if malformed, DRV_ERANGE above DRV_MAX_CPU_MILLI. */
int drv_parse_cpu(const char *s, int64_t *out);
/* Parses a Kubernetes memory quantity string ("128Gi", "1G", "1000") into bytes; DRV_EINVAL if
 * malformed, DRV_ERANGE above DRV_MAX_MEM_BYTES. */
int drv_parse_mem(const char *s, int64_t *out);

#endif
