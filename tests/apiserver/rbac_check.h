/*
 * rbac_check.h - whether the shipped RBAC (deploy/rbac.yaml, deploy/emulate-rbac.yaml) grants
 * every request `drover run` and `drover emulate` made, as a kube-apiserver with RBAC would
 * decide it (the test server itself authorizes everything).
 *
 * A logged request (drv_apiserver_request_log) becomes the attributes kube-apiserver derives
 * from it (its RequestInfoFactory): verb, API group, resource and subresource, namespace and
 * object name, or a non-resource URL. The manifests' Roles, ClusterRoles and their bindings to
 * the component's ServiceAccount then grant it or not (RBAC rules only add: a request is
 * allowed when one rule matches). Non-resource URLs are granted by the default roles every
 * authenticated account has: system:discovery and system:public-info-viewer, GET of /api,
 * /apis, /openapi and every path below them, /version, /version/, /healthz, /livez, /readyz.
 * Not modelled: aggregated ClusterRoles, impersonation, groups other than the account's own.
 */
#ifndef DROVER_TEST_RBAC_CHECK_H
#define DROVER_TEST_RBAC_CHECK_H

#include "apiserver.h"
#include "drover/base.h"
#include "drover/conf.h"

#include <stdio.h>

/* What kube-apiserver authorizes for one request. Strings are cut at their size (longer names
 * than these never occur in the tests' requests). */
typedef struct drv_rbac_attrs {
    bool resource;  /* a resource request; else path is a non-resource URL */
    char verb[24];  /* get list watch create update patch delete deletecollection; for a
                     * non-resource URL the method in lower case */
    char group[64]; /* "" for the core group (/api/v1) */
    char res[64];   /* "pods" */
    char sub[64];   /* "status", "binding", "" */
    char ns[64];    /* "" for a cluster-scoped resource or a request across namespaces */
    char name[256]; /* the object's name ("" for collections and creation) */
    char path[512]; /* the path without its query */
} drv_rbac_attrs;

/* Derives a's attributes from method and url ("PATH" or "PATH?QUERY", the query's values
 * percent-escaped). Only fails (DRV_EINVAL) for a url that does not start with "/". */
int drv_rbac_attrs_of(const char *method, const char *url, drv_rbac_attrs *a, drv_diag *d);

enum { DRV_RBAC_MAX_DOCS = 32 };

/* The roles and bindings of some manifests, read with src/conf (caller-owned: init/fini). */
typedef struct drv_rbac {
    drv_conf_doc doc[DRV_RBAC_MAX_DOCS]; /* every "---"-separated document, in order */
    int n;
} drv_rbac;

/* Adds every document of the file at path (lines numbered as in the file). DRV_EIO if it
 * cannot be read, DRV_EPARSE naming file:line for bad YAML, DRV_EINVAL naming file:line and
 * field for a rule or binding not shaped as Kubernetes wants, DRV_ERANGE past
 * DRV_RBAC_MAX_DOCS documents. */
int drv_rbac_add_file(drv_rbac *p, const char *path, drv_diag *d);
void drv_rbac_fini(drv_rbac *p);
/* The ServiceAccount the file at path defines (its first), from p's documents: false if none. */
bool drv_rbac_account(drv_rbac *p, const char *path, const char **ns, const char **name);
/* Whether ServiceAccount ns/name may do a under p's rules and the default discovery roles. */
bool drv_rbac_allows(drv_rbac *p, const char *ns, const char *name, const drv_rbac_attrs *a);

/*
 * Every request of log (drv_apiserver_request_log lines) made by `drover run` (User-Agent
 * "drover-run/...", deploy/rbac.yaml's account), `drover snapshot` ("drover-snapshot/...", the
 * same account: it needs no grant of its own) or `drover emulate` ("drover-emulate/...",
 * deploy/emulate-rbac.yaml's) that the manifests under source_dir/deploy do not grant, one line
 * per kind of request ("verb group resource[/sub]": N requests, the first of them), "" when
 * every one is granted. Other agents' requests (the test's own client) are not checked.
 * drv_malloc'd, the caller frees it; NULL with d on error (manifests unreadable, memory).
 */
char *drv_rbac_refused(const char *log, const char *source_dir, drv_diag *d);

/*
 * The other direction: every grant of the manifests under source_dir/deploy that no request of
 * log used, one line per rule's verb and resource ("unused grant: VERB GROUP RESOURCE
 * (FILE:LINE, ACCOUNT)"), "" when each was used. A grant is used by a request of its
 * component that this rule (with its resourceNames) grants. drv_malloc'd; NULL with d on
 * error.
 */
char *drv_rbac_unused(const char *log, const char *source_dir, drv_diag *d);

/* Appends log to $DROVER_RBAC_LOG_DIR/<this program>.log when that variable is set (the
 * end-to-end tests' requests, gathered for test_rbac_grants_used); nothing otherwise. */
void drv_rbac_keep_log(const char *log);

/* srv's request log (opts.request_log) against the manifests under $DROVER_SOURCE_DIR (else
 * "."), as drv_rbac_refused: 0, or -1 after writing the refusals or the error to out. What an
 * end-to-end test's teardown returns, so that the test fails listing them. The log is kept
 * (drv_rbac_keep_log). */
int drv_rbac_check_server(drv_apiserver *srv, FILE *out);

#endif
