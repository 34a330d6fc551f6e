/*
 * kubeconfig.c - where the API server is and who we are: kubeconfig files (merged like kubectl
 * merges KUBECONFIG) and the in-cluster service account (kube.h).
 *
 * Worked example: KUBECONFIG=a:b, a defines cluster "prod" and current-context "dev", b defines
 * clusters "prod" and "dev", user "me" and contexts "dev" (cluster dev, user me): the context
 * is "dev" (first current-context: a's), its cluster "dev" comes from b, and had the context
 * named cluster "prod", a's "prod" would win over b's.
 */
#include "drover/conf.h"
#include "drover/file.h"
#include "drover/kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_FILES = 16 };

typedef struct kfiles {
    drv_conf_doc doc[MAX_FILES];
    char *dir[MAX_FILES];
    int n;
} kfiles;

static void kfiles_fini(kfiles *f)
{
    for (int i = 0; i < f->n; i++) {
        drv_conf_doc_fini(&f->doc[i]);
        drv_free(f->dir[i]);
    }
    f->n = 0;
}

/* Decodes base64 (standard alphabet, padding optional, whitespace skipped) into a new
 * NUL-terminated buffer. NULL when malformed or out of memory (*oom says which). */
static char *b64_decode(const char *s, bool *oom)
{
    size_t n = strlen(s);
    char *out = drv_malloc(n / 4 * 3 + 4);
    *oom = out == NULL;
    if (!out)
        return NULL;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '+')
            v = 62;
        else if (c == '/')
            v = 63;
        else if (c == '=' || c == '\n' || c == '\r' || c == ' ' || c == '\t')
            continue;
        else {
            drv_free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[o] = 0;
    return out;
}

/* 1 when s holds a control character (below 0x20, or DEL). A token goes verbatim into an
 * "Authorization: Bearer" header: a CR LF in it would start a header of the token's choosing. */
static bool has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return true;
    return false;
}

/* path made absolute against dir (the kubeconfig's directory) when relative. */
static char *resolve(const char *dir, const char *path)
{
    if (path[0] == '/' || !dir)
        return drv_strdup(path);
    size_t n = strlen(dir) + strlen(path) + 2;
    char *p = drv_malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, path);
    return p;
}

/*
 * The files a kubeconfig names are read when it is loaded, so that a wrong one is refused there,
 * naming its field, rather than noticed at the first request (a missing CA fails every request,
 * and requests are retried). Reads are bounded: /dev/zero or a FIFO ends with an error.
 */
enum { MAX_TOKEN_FILE = 64 << 10, MAX_PEM_FILE = 4 << 20 };

/* path's text without trailing whitespace: the reader's errors (cannot open, a directory, a NUL
 * byte, larger than max, what it is: kind), or DRV_EINVAL when nothing is left (what it should
 * hold: want). Messages begin with path. */
static int read_trimmed(const char *path, uint64_t max, const char *kind, const char *want,
                        char **out, drv_diag *d)
{
    size_t n = 0;
    int rc = drv_file_read_max(path, max, kind, out, &n, d);
    if (rc) {
        *out = NULL;
        return rc;
    }
    while (n > 0 && strchr(" \t\r\n", (*out)[n - 1]))
        (*out)[--n] = 0;
    if (n == 0) {
        drv_free(*out);
        *out = NULL;
        return drv_fail(d, DRV_EINVAL, "%s: empty; expected %s", path, want);
    }
    return 0;
}

/* A bearer token from a file: not empty, no control character (see has_control). */
static int read_token(const char *path, char **out, drv_diag *d)
{
    int rc = read_trimmed(path, MAX_TOKEN_FILE, "a token file", "a bearer token", out, d);
    if (!rc && has_control(*out)) {
        drv_free(*out);
        *out = NULL;
        rc = drv_fail(d, DRV_EINVAL, "%s: the token contains a control character", path);
    }
    return rc;
}

/* A certificate or key file that exists, is readable text and holds a PEM block. */
static int check_pem(const char *path, drv_diag *d)
{
    char *text = NULL;
    int rc = read_trimmed(path, MAX_PEM_FILE, "a PEM file", "PEM", &text, d);
    if (!rc && !strstr(text, "-----BEGIN "))
        rc = drv_fail(d, DRV_EINVAL, "%s: expected PEM (a \"-----BEGIN ...\" block)", path);
    drv_free(text);
    return rc;
}

/* A file field (certificate-authority, client-certificate, client-key): *dst is the file made
 * absolute against the kubeconfig's directory, checked by check_pem; errors name file:line and
 * field. */
static int set_pem_file(char **dst, const kfiles *f, int fi, drv_conf *m, const char *key,
                        const char *field, const char *v, drv_diag *d)
{
    if (!(*dst = resolve(f->dir[fi], v)))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    drv_diag why;
    int rc = check_pem(*dst, &why);
    return rc ? drv_fail(d, rc, "%s:%d: %s: %s", f->doc[fi].file, drv_conf_get(m, key)->line, field,
                         why.msg)
              : 0;
}

static int load_files(kfiles *f, const char *files, drv_diag *d)
{
    char *list = NULL;
    if (files) {
        list = drv_strdup(files);
    } else if (getenv("KUBECONFIG") && *getenv("KUBECONFIG")) {
        list = drv_strdup(getenv("KUBECONFIG"));
    } else {
        const char *home = getenv("HOME");
        size_t n = (home ? strlen(home) : 0) + 32;
        list = drv_malloc(n);
        if (list)
            snprintf(list, n, "%s/.kube/config", home ? home : "");
    }
    if (!list)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    int rc = 0;
    char *save = NULL;
    for (char *p = strtok_r(list, ":", &save); p && !rc; p = strtok_r(NULL, ":", &save)) {
        FILE *probe = fopen(p, "r");
        if (!probe)
            continue; /* like kubectl: a listed file that does not exist is skipped */
        fclose(probe);
        if (f->n == MAX_FILES) {
            rc = drv_fail(d, DRV_ERANGE, "KUBECONFIG: more than %d files", MAX_FILES);
            break;
        }
        rc = drv_conf_load_file(&f->doc[f->n], p, d);
        if (rc)
            break;
        const char *slash = strrchr(p, '/');
        f->dir[f->n] = slash ? drv_malloc((size_t)(slash - p) + 1) : NULL;
        if (slash && f->dir[f->n])
            snprintf(f->dir[f->n], (size_t)(slash - p) + 1, "%.*s", (int)(slash - p), p);
        f->n++;
        if (f->doc[f->n - 1].root && f->doc[f->n - 1].root->kind != DRV_CONF_MAP)
            rc = drv_fail(d, DRV_EINVAL,
                          "%s:%d: expected a kubeconfig (a map with clusters, "
                          "users and contexts)",
                          p, f->doc[f->n - 1].root->line);
    }
    if (!rc && f->n == 0)
        rc = drv_fail(d, DRV_ENOENT, "no kubeconfig found (looked at %s)",
                      files                  ? files
                      : getenv("KUBECONFIG") ? "$KUBECONFIG"
                                             : "~/.kube/config");
    drv_free(list);
    return rc;
}

/*
 * The first entry named `name` in list `kind` ("clusters", "users", "contexts") across the
 * files; *fi receives the file index and the entry's `inner` map ("cluster", "user",
 * "context") is returned, or NULL (rc set on a malformed entry).
 */
static drv_conf *find_named(kfiles *f, const char *kind, const char *inner, const char *name,
                            int *fi, int *rc, drv_diag *d)
{
    *rc = 0;
    for (int i = 0; i < f->n; i++) {
        drv_conf *list = drv_conf_get(f->doc[i].root, kind);
        if (!list)
            continue;
        if ((*rc = drv_conf_expect(&f->doc[i], list, DRV_CONF_SEQ, kind, d)) != 0)
            return NULL;
        for (int32_t k = 0; k < list->nitems; k++) {
            drv_conf *e = list->items[k];
            const char *n = NULL;
            char path[64];
            snprintf(path, sizeof path, "%s[%d].name", kind, (int)k);
            if ((*rc = drv_conf_str(&f->doc[i], drv_conf_get(e, "name"), path, &n, d)) != 0)
                return NULL;
            if (strcmp(n, name) != 0)
                continue;
            drv_conf *in = drv_conf_get(e, inner);
            snprintf(path, sizeof path, "%s[%d].%s", kind, (int)k, inner);
            if ((*rc = drv_conf_expect(&f->doc[i], in ? in : e, DRV_CONF_MAP, path, d)) != 0)
                return NULL;
            if (!in) {
                *rc = drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", f->doc[i].file, e->line, path);
                return NULL;
            }
            *fi = i;
            return in;
        }
    }
    return NULL;
}

/* Names of every context, for the message about an unknown one. */
static void known_contexts(kfiles *f, char *out, size_t n)
{
    out[0] = 0;
    size_t w = 0;
    for (int i = 0; i < f->n; i++) {
        drv_conf *list = drv_conf_get(f->doc[i].root, "contexts");
        for (int32_t k = 0; list && list->kind == DRV_CONF_SEQ && k < list->nitems; k++) {
            drv_conf *nm = drv_conf_get(list->items[k], "name");
            if (nm && nm->text && w + strlen(nm->text) + 3 < n)
                w += (size_t)snprintf(out + w, n - w, "%s%s", w ? ", " : "", nm->text);
        }
    }
    if (!w)
        snprintf(out, n, "none");
}

/* An optional string field: *out NULL when absent. */
static int opt_str(const drv_conf_doc *doc, drv_conf *m, const char *key, const char *path,
                   const char **out, drv_diag *d)
{
    *out = NULL;
    drv_conf *c = drv_conf_get(m, key);
    return c ? drv_conf_str(doc, c, path, out, d) : 0;
}

static int set_str(char **dst, const char *v)
{
    drv_free(*dst);
    *dst = v ? drv_strdup(v) : NULL;
    return v && !*dst ? DRV_ENOMEM : 0;
}

/* A *-data field: base64 into PEM bytes. */
static int set_data(char **dst, const drv_conf_doc *doc, const drv_conf *at, const char *path,
                    const char *v, drv_diag *d)
{
    bool oom;
    drv_free(*dst);
    *dst = b64_decode(v, &oom);
    if (!*dst)
        return oom ? drv_fail(d, DRV_ENOMEM, "out of memory")
                   : drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected base64", doc->file, at->line,
                              path);
    return 0;
}

static int fill_cluster(drv_kube_config *o, kfiles *f, int fi, drv_conf *m, const char *name,
                        drv_diag *d)
{
    const drv_conf_doc *doc = &f->doc[fi];
    char path[128];
    const char *server, *ca, *cad;
    snprintf(path, sizeof path, "clusters[%s].cluster.server", name);
    drv_conf *sv = drv_conf_get(m, "server");
    if (!sv)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing (expected https://host:port)", doc->file,
                        m->line, path);
    int rc = drv_conf_str(doc, sv, path, &server, d);
    bool local;
    drv_diag why;
    if (!rc && (rc = drv_kube_check_server(server, &local, &why)) != 0)
        return drv_fail(d, rc, "%s:%d: %s: %s", doc->file, sv->line, path, why.msg);
    if (!rc)
        rc = opt_str(doc, m, "certificate-authority", "certificate-authority", &ca, d);
    if (!rc)
        rc = opt_str(doc, m, "certificate-authority-data", "certificate-authority-data", &cad, d);
    if (rc)
        return rc;
    drv_conf *ins = drv_conf_get(m, "insecure-skip-tls-verify");
    if (ins && (rc = drv_conf_bool(doc, ins, "insecure-skip-tls-verify", &o->insecure, d)) != 0)
        return rc;
    if (set_str(&o->server, server))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    /* "https://host:6443/" and "https://host:6443" name the same server. */
    size_t n = strlen(o->server);
    while (n > 0 && o->server[n - 1] == '/')
        o->server[--n] = 0;
    snprintf(path, sizeof path, "clusters[%s].cluster.certificate-authority", name);
    if (ca && (rc = set_pem_file(&o->ca_file, f, fi, m, "certificate-authority", path, ca, d)) != 0)
        return rc;
    if (cad)
        return set_data(&o->ca_data, doc, drv_conf_get(m, "certificate-authority-data"),
                        "certificate-authority-data", cad, d);
    return 0;
}

static int fill_user(drv_kube_config *o, kfiles *f, int fi, drv_conf *m, const char *name,
                     drv_diag *d)
{
    const drv_conf_doc *doc = &f->doc[fi];
    /* Basic authentication (username, password) was removed from Kubernetes in 1.19; a user
     * that names it must not be silently used without credentials. */
    for (const char *const *k =
             (const char *const[]){"exec", "auth-provider", "username", "password", NULL};
         *k; k++)
        if (drv_conf_get(m, *k))
            return drv_fail(d, DRV_ENOTSUP,
                            "%s:%d: users[%s].user.%s: not supported (use a token, a tokenFile "
                            "or a client certificate)",
                            doc->file, drv_conf_get(m, *k)->line, name, *k);
    const char *token, *tfile, *cert, *certd, *key, *keyd;
    int rc = opt_str(doc, m, "token", "token", &token, d);
    if (!rc)
        rc = opt_str(doc, m, "tokenFile", "tokenFile", &tfile, d);
    if (!rc)
        rc = opt_str(doc, m, "client-certificate", "client-certificate", &cert, d);
    if (!rc)
        rc = opt_str(doc, m, "client-certificate-data", "client-certificate-data", &certd, d);
    if (!rc)
        rc = opt_str(doc, m, "client-key", "client-key", &key, d);
    if (!rc)
        rc = opt_str(doc, m, "client-key-data", "client-key-data", &keyd, d);
    if (rc)
        return rc;
    if (token && has_control(token))
        return drv_fail(d, DRV_EINVAL, "%s:%d: users[%s].user.token: contains a control character",
                        doc->file, drv_conf_get(m, "token")->line, name);
    if (token && !*token)
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: users[%s].user.token: empty; expected a bearer token (leave the "
                        "field out to send none)",
                        doc->file, drv_conf_get(m, "token")->line, name);
    if (token && set_str(&o->token, token))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    if (!token && tfile) {
        char *p = resolve(f->dir[fi], tfile);
        if (!p)
            return drv_fail(d, DRV_ENOMEM, "out of memory");
        drv_diag why;
        rc = read_token(p, &o->token, &why);
        drv_free(p);
        if (rc)
            return drv_fail(d, rc, "%s:%d: users[%s].user.tokenFile: %s", doc->file,
                            drv_conf_get(m, "tokenFile")->line, name, why.msg);
    }
    char path[128];
    snprintf(path, sizeof path, "users[%s].user.client-certificate", name);
    if (cert && (rc = set_pem_file(&o->cert_file, f, fi, m, "client-certificate", path, cert, d)))
        return rc;
    snprintf(path, sizeof path, "users[%s].user.client-key", name);
    if (key && (rc = set_pem_file(&o->key_file, f, fi, m, "client-key", path, key, d)) != 0)
        return rc;
    if (certd && (rc = set_data(&o->cert_data, doc, drv_conf_get(m, "client-certificate-data"),
                                "client-certificate-data", certd, d)) != 0)
        return rc;
    if (keyd && (rc = set_data(&o->key_data, doc, drv_conf_get(m, "client-key-data"),
                               "client-key-data", keyd, d)) != 0)
        return rc;
    return 0;
}

int drv_kubeconfig_load(drv_kube_config *out, const char *files, const char *context, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    kfiles f = {0};
    int rc = load_files(&f, files, d);
    const char *ctx = context;
    for (int i = 0; !rc && !ctx && i < f.n; i++) {
        drv_conf *cc = drv_conf_get(f.doc[i].root, "current-context");
        const char *v = NULL;
        if (cc && (rc = drv_conf_str(&f.doc[i], cc, "current-context", &v, d)) == 0 && *v)
            ctx = v;
    }
    if (!rc && !ctx)
        rc = drv_fail(d, DRV_EINVAL, "%s: no current-context and no context given", f.doc[0].file);
    int fi = 0;
    drv_conf *cm = NULL;
    if (!rc && !(cm = find_named(&f, "contexts", "context", ctx, &fi, &rc, d)) && !rc) {
        char known[256];
        known_contexts(&f, known, sizeof known);
        rc = drv_fail(d, DRV_ENOENT, "context \"%s\" not found (known: %s)", ctx, known);
    }
    const char *cluster = NULL, *user = NULL, *ns = NULL;
    if (!rc) {
        const drv_conf_doc *doc = &f.doc[fi];
        drv_conf *cl = drv_conf_get(cm, "cluster");
        rc = cl ? drv_conf_str(doc, cl, "context.cluster", &cluster, d)
                : drv_fail(d, DRV_EINVAL, "%s:%d: contexts[%s].context.cluster: missing", doc->file,
                           cm->line, ctx);
        if (!rc)
            rc = opt_str(doc, cm, "user", "context.user", &user, d);
        if (!rc)
            rc = opt_str(doc, cm, "namespace", "context.namespace", &ns, d);
    }
    int cfi = 0, ufi = 0;
    drv_conf *clm = NULL, *um = NULL;
    if (!rc && !(clm = find_named(&f, "clusters", "cluster", cluster, &cfi, &rc, d)) && !rc)
        rc = drv_fail(d, DRV_ENOENT, "context \"%s\": cluster \"%s\" not found", ctx, cluster);
    if (!rc)
        rc = fill_cluster(out, &f, cfi, clm, cluster, d);
    if (!rc && user && *user) {
        if (!(um = find_named(&f, "users", "user", user, &ufi, &rc, d)) && !rc)
            rc = drv_fail(d, DRV_ENOENT, "context \"%s\": user \"%s\" not found", ctx, user);
        if (!rc)
            rc = fill_user(out, &f, ufi, um, user, d);
    }
    if (!rc && ns && *ns && set_str(&out->namespace_, ns))
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
    kfiles_fini(&f);
    if (rc)
        drv_kube_config_fini(out);
    return rc;
}

int drv_kube_incluster(drv_kube_config *out, const char *root, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port)
        return drv_fail(d, DRV_ENOENT,
                        "not in a cluster: KUBERNETES_SERVICE_HOST and "
                        "KUBERNETES_SERVICE_PORT are not both set");
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/var/run/secrets/kubernetes.io/serviceaccount",
             root && strcmp(root, "/") ? root : "");
    size_t n = strlen(host) + strlen(port) + 16;
    out->server = drv_malloc(n);
    if (!out->server)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    /* An IPv6 service address needs brackets in a URL. */
    snprintf(out->server, n, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    snprintf(path, sizeof path, "%s/token", dir);
    drv_diag why;
    int rc = read_token(path, &out->token, &why);
    if (rc) {
        drv_kube_config_fini(out);
        return drv_fail(d, rc, "the service account token: %s", why.msg);
    }
    snprintf(path, sizeof path, "%s/ca.crt", dir);
    if (!(out->ca_file = drv_strdup(path))) {
        drv_kube_config_fini(out);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    /* (checked now, as a kubeconfig's certificate-authority is: missing, it would fail every
     * request, each retried) */
    if ((rc = check_pem(path, &why)) != 0) {
        drv_kube_config_fini(out);
        return drv_fail(d, rc, "the service account CA certificate: %s", why.msg);
    }
    snprintf(path, sizeof path, "%s/namespace", dir);
    /* optional: absent, no namespace; present, it must be readable */
    if (access(path, F_OK) == 0 && (rc = read_trimmed(path, MAX_TOKEN_FILE, "a namespace file",
                                                      "a namespace", &out->namespace_, &why))) {
        drv_kube_config_fini(out);
        return drv_fail(d, rc, "the service account namespace: %s", why.msg);
    }
    return 0;
}
