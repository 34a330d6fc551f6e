/*
 * rbac_check.c - the shipped RBAC against the requests the components made (rbac_check.h).
 *
 * Attributes follow kube-apiserver's RequestInfoFactory (k8s.io/apiserver/pkg/endpoints/
 * request/requestinfo.go): /api/v1/... is the core group, /apis/GROUP/VERSION/... another;
 * anything shorter or elsewhere is a non-resource URL. After the version an optional "watch"
 * segment (the deprecated watch paths), then "namespaces/NS" and the resource, its name and
 * subresource. Verbs: GET of one object get, of a collection list (watch with watch=true or 1
 * or the watch segment), POST create, PUT update, PATCH patch, DELETE of one object delete, of
 * a collection deletecollection. A list, watch or deletecollection with the field selector
 * metadata.name=X is about the object X (resourceNames apply).
 *
 * Authorization follows RBAC's rule matching (plugin/pkg/auth/authorizer/rbac): a rule grants
 * when its verbs, apiGroups and resources (or "*", or "*\/SUB" for a subresource) name the
 * request's, and its resourceNames are empty or name the object: a create (no name yet) is
 * never granted by a rule with resourceNames. A ClusterRoleBinding grants its ClusterRole's
 * rules everywhere; a RoleBinding its Role's or ClusterRole's in its own namespace only.
 *
 * Example: "200 PATCH /apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/j/status
 * drover-run/0.9" is patch drover.dev trainingjobs/status in default, name j: refused by a
 * ClusterRole whose trainingjobs/status rule says [get, update].
 */
#include "rbac_check.h"

#include "drover/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- request attributes ------------------------------------------------------------------ */

/* Copies src into dst (of size cap), cut to fit. */
static void put(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Copies the percent-decoded n bytes of s into out (of size cap), cut to fit. */
static void decode_into(char *out, size_t cap, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned v;
        if (s[i] == '%' && i + 2 < n && sscanf(s + i + 1, "%2x", &v) == 1) {
            out[o++] = (char)v;
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = 0;
}

/* The decoded value of query argument key in q ("a=1&b=2"), in out; false when absent. */
static bool query_value(const char *q, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    for (const char *p = q; p && *p;) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n >= kl && !strncmp(p, key, kl) && (n == kl || p[kl] == '=')) {
            decode_into(out, cap, n > kl ? p + kl + 1 : p + n, n > kl ? n - kl - 1 : 0);
            return true;
        }
        p = end ? end + 1 : NULL;
    }
    return false;
}

enum { MAX_PARTS = 16 };

/* Splits path (without query) at "/" into parts (bounded, each cut to 255 bytes). */
static int split_path(const char *path, char part[MAX_PARTS][256])
{
    int n = 0;
    for (const char *p = path; *p && n < MAX_PARTS;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, "/");
        decode_into(part[n++], 256, p, len);
        p += len;
    }
    return n;
}

static void set_verb(drv_rbac_attrs *a, const char *method, bool watch_path, const char *query)
{
    static const struct {
        const char *method, *verb;
    } verbs[] = {{"GET", "get"},    {"HEAD", "get"},    {"POST", "create"},
                 {"PUT", "update"}, {"PATCH", "patch"}, {"DELETE", "delete"}};
    put(a->verb, sizeof a->verb, "unknown");
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
        if (!strcmp(method, verbs[i].method))
            put(a->verb, sizeof a->verb, verbs[i].verb);
    char v[64];
    if (watch_path)
        snprintf(a->verb, sizeof a->verb, "watch");
    else if (!strcmp(a->verb, "get") && !a->name[0])
        snprintf(a->verb, sizeof a->verb, "%s",
                 query_value(query, "watch", v, sizeof v) && (!strcmp(v, "true") || !strcmp(v, "1"))
                     ? "watch"
                     : "list");
    else if (!strcmp(a->verb, "delete") && !a->name[0])
        snprintf(a->verb, sizeof a->verb, "deletecollection");
    /* A collection request selecting one object by name is about that object. */
    bool coll = !strcmp(a->verb, "list") || !strcmp(a->verb, "watch") ||
                !strcmp(a->verb, "deletecollection");
    char sel[512];
    if (coll && !a->name[0] && query_value(query, "fieldSelector", sel, sizeof sel) &&
        !strncmp(sel, "metadata.name=", 14) && !strchr(sel, ','))
        put(a->name, sizeof a->name, sel + 14);
}

int drv_rbac_attrs_of(const char *method, const char *url, drv_rbac_attrs *a, drv_diag *d)
{
    if (url[0] != '/')
        return drv_fail(d, DRV_EINVAL, "request log: %s: expected a path starting with /", url);
    memset(a, 0, sizeof *a);
    size_t plen = strcspn(url, "?");
    snprintf(a->path, sizeof a->path, "%.*s", (int)plen, url);
    const char *query = url[plen] ? url + plen + 1 : "";
    char part[MAX_PARTS][256];
    int n = split_path(a->path, part);
    int at = n >= 2 && !strcmp(part[0], "api") ? 2 : n >= 3 && !strcmp(part[0], "apis") ? 3 : -1;
    bool watch_path = at > 0 && at < n && !strcmp(part[at], "watch");
    at += watch_path;
    if (at < 0 || at >= n) { /* /api, /apis/G/V, /version, /healthz...: a non-resource URL */
        for (size_t i = 0; method[i] && i + 1 < sizeof a->verb; i++)
            a->verb[i] = (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] + 32 : method[i]);
        return 0;
    }
    a->resource = true;
    if (!strcmp(part[0], "apis"))
        put(a->group, sizeof a->group, part[1]);
    if (!strcmp(part[at], "namespaces") && at + 1 < n) {
        put(a->ns, sizeof a->ns, part[at + 1]);
        /* namespaces/NS/status and /finalize are the namespace's own subresources */
        if (at + 2 < n && strcmp(part[at + 2], "status") && strcmp(part[at + 2], "finalize"))
            at += 2;
    }
    put(a->res, sizeof a->res, part[at]);
    if (at + 1 < n)
        put(a->name, sizeof a->name, part[at + 1]);
    if (at + 2 < n)
        put(a->sub, sizeof a->sub, part[at + 2]);
    set_verb(a, method, watch_path, query);
    return 0;
}

/* ---- manifests ---------------------------------------------------------------------------- */

static const char *text_at(drv_conf *c, const char *key)
{
    drv_conf *x = drv_conf_get(c, key);
    return x && x->kind == DRV_CONF_SCALAR ? x->text : "";
}

static bool list_has(drv_conf *list, const char *s)
{
    for (int32_t i = 0; list && list->kind == DRV_CONF_SEQ && i < list->nitems; i++)
        if (list->items[i]->text && !strcmp(list->items[i]->text, s))
            return true;
    return false;
}

/* A rule's list field must be a sequence of strings when present (required ones too). */
static int check_list(const drv_conf_doc *doc, drv_conf *rule, const char *key, bool required,
                      int i, drv_diag *d)
{
    drv_conf *x = drv_conf_get(rule, key);
    if (!x && !required)
        return 0;
    bool ok = x && x->kind == DRV_CONF_SEQ;
    for (int32_t j = 0; ok && j < x->nitems; j++)
        ok = x->items[j]->kind == DRV_CONF_SCALAR;
    if (!ok)
        return drv_fail(d, DRV_EINVAL, "%s:%d: rules[%d].%s: expected a list of strings", doc->file,
                        x ? x->line : rule->line, i, key);
    return 0;
}

/* Checks the shape of a Role's or ClusterRole's rules, and a binding's roleRef and subjects. */
static int check_doc(const drv_conf_doc *doc, drv_diag *d)
{
    drv_conf *r = doc->root;
    const char *kind = text_at(r, "kind");
    if (!strcmp(kind, "Role") || !strcmp(kind, "ClusterRole")) {
        drv_conf *rules = drv_conf_get(r, "rules");
        if (!rules || rules->kind != DRV_CONF_SEQ)
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s rules: expected a list", doc->file,
                            rules ? rules->line : r->line, kind);
        for (int32_t i = 0; i < rules->nitems; i++) {
            drv_conf *u = rules->items[i];
            bool nonres = drv_conf_get(u, "nonResourceURLs") != NULL;
            int rc = check_list(doc, u, "verbs", true, (int)i, d);
            rc = rc ? rc : check_list(doc, u, "apiGroups", !nonres, (int)i, d);
            rc = rc ? rc : check_list(doc, u, "resources", !nonres, (int)i, d);
            rc = rc ? rc : check_list(doc, u, "resourceNames", false, (int)i, d);
            rc = rc ? rc : check_list(doc, u, "nonResourceURLs", false, (int)i, d);
            if (rc)
                return rc;
        }
    } else if (!strcmp(kind, "RoleBinding") || !strcmp(kind, "ClusterRoleBinding")) {
        drv_conf *s = drv_conf_get(r, "subjects");
        if (!*text_at(drv_conf_get(r, "roleRef"), "name") || !s || s->kind != DRV_CONF_SEQ)
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected roleRef.name and subjects",
                            doc->file, r->line, kind);
    }
    return 0;
}

int drv_rbac_add_file(drv_rbac *p, const char *path, drv_diag *d)
{
    char *text = NULL;
    size_t len = 0;
    int rc = drv_file_read(path, &text, &len, d);
    if (rc)
        return rc;
    /* Each document is parsed alone, what precedes it blanked (newlines kept) so that the
     * parser's line numbers are the file's. */
    char *copy = drv_malloc(len + 1);
    if (!copy) {
        drv_free(text);
        return drv_fail(d, DRV_ENOMEM, "%s: out of memory", path);
    }
    for (size_t start = 0; !rc && start < len;) {
        char *sep = strstr(text + start, "\n---\n");
        size_t end = sep ? (size_t)(sep - text) + 1 : len;
        for (size_t i = 0; i < start; i++)
            copy[i] = text[i] == '\n' ? '\n' : ' ';
        memcpy(copy + start, text + start, end - start);
        if (p->n >= DRV_RBAC_MAX_DOCS)
            rc = drv_fail(d, DRV_ERANGE, "%s: more than %d documents", path, DRV_RBAC_MAX_DOCS);
        else if (!(rc = drv_conf_load_string(&p->doc[p->n], path, copy, end, d)))
            p->n++; /* kept even if misshapen: drv_rbac_fini frees it */
        if (!rc)
            rc = check_doc(&p->doc[p->n - 1], d);
        start = sep ? end + 4 : len;
    }
    drv_free(copy);
    drv_free(text);
    return rc;
}

void drv_rbac_fini(drv_rbac *p)
{
    for (int i = 0; i < p->n; i++)
        drv_conf_doc_fini(&p->doc[i]);
    p->n = 0;
}

bool drv_rbac_account(drv_rbac *p, const char *path, const char **ns, const char **name)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->doc[i].file, path) &&
            !strcmp(text_at(p->doc[i].root, "kind"), "ServiceAccount")) {
            drv_conf *m = drv_conf_get(p->doc[i].root, "metadata");
            *ns = text_at(m, "namespace");
            *name = text_at(m, "name");
            return true;
        }
    return false;
}

/* ---- authorization ------------------------------------------------------------------------- */

static bool names(drv_conf *list, const char *s)
{
    return list_has(list, "*") || list_has(list, s);
}

static bool rule_grants(drv_conf *u, const drv_rbac_attrs *a)
{
    if (!names(drv_conf_get(u, "verbs"), a->verb))
        return false;
    if (!a->resource) {
        drv_conf *urls = drv_conf_get(u, "nonResourceURLs");
        for (int32_t i = 0; urls && i < urls->nitems; i++) {
            const char *x = urls->items[i]->text;
            size_t n = strlen(x);
            if (!strcmp(x, a->path) || (n && x[n - 1] == '*' && !strncmp(x, a->path, n - 1)))
                return true;
        }
        return false;
    }
    if (!names(drv_conf_get(u, "apiGroups"), a->group))
        return false;
    char combined[160], any_sub[80];
    snprintf(combined, sizeof combined, "%s%s%s", a->res, a->sub[0] ? "/" : "", a->sub);
    snprintf(any_sub, sizeof any_sub, "*/%s", a->sub);
    drv_conf *res = drv_conf_get(u, "resources");
    if (!names(res, combined) && !(a->sub[0] && list_has(res, any_sub)))
        return false;
    drv_conf *rn = drv_conf_get(u, "resourceNames");
    return !rn || rn->nitems == 0 || (a->name[0] && list_has(rn, a->name));
}

/* The Role (namespace ns) or ClusterRole (ns NULL) called name. */
static drv_conf *role(drv_rbac *p, const char *kind, const char *ns, const char *name)
{
    for (int i = 0; i < p->n; i++) {
        drv_conf *r = p->doc[i].root, *m = drv_conf_get(r, "metadata");
        if (!strcmp(text_at(r, "kind"), kind) && !strcmp(text_at(m, "name"), name) &&
            (!ns || !strcmp(text_at(m, "namespace"), ns)))
            return r;
    }
    return NULL;
}

static bool binds(drv_conf *binding, const char *ns, const char *name)
{
    drv_conf *s = drv_conf_get(binding, "subjects");
    for (int32_t i = 0; s && i < s->nitems; i++)
        if (!strcmp(text_at(s->items[i], "kind"), "ServiceAccount") &&
            !strcmp(text_at(s->items[i], "name"), name) &&
            !strcmp(text_at(s->items[i], "namespace"), ns))
            return true;
    return false;
}

static bool role_grants(drv_conf *r, const drv_rbac_attrs *a)
{
    drv_conf *rules = drv_conf_get(r, "rules");
    for (int32_t i = 0; r && rules && i < rules->nitems; i++)
        if (rule_grants(rules->items[i], a))
            return true;
    return false;
}

/* Granted to every authenticated account by system:discovery and system:public-info-viewer. */
static bool discovery_grants(const drv_rbac_attrs *a)
{
    static const char *const urls[] = {"/api",      "/apis",    "/openapi", "/version",
                                       "/version/", "/healthz", "/livez",   "/readyz"};
    static const char *const trees[] = {"/api/", "/apis/", "/openapi/"};
    if (a->resource || strcmp(a->verb, "get"))
        return false;
    for (size_t i = 0; i < sizeof urls / sizeof *urls; i++)
        if (!strcmp(a->path, urls[i]))
            return true;
    for (size_t i = 0; i < sizeof trees / sizeof *trees; i++)
        if (!strncmp(a->path, trees[i], strlen(trees[i])))
            return true;
    return false;
}

bool drv_rbac_allows(drv_rbac *p, const char *ns, const char *name, const drv_rbac_attrs *a)
{
    if (discovery_grants(a))
        return true;
    for (int i = 0; i < p->n; i++) {
        drv_conf *b = p->doc[i].root;
        const char *kind = text_at(b, "kind");
        drv_conf *ref = drv_conf_get(b, "roleRef");
        const char *bns = text_at(drv_conf_get(b, "metadata"), "namespace");
        if (!strcmp(kind, "ClusterRoleBinding") && binds(b, ns, name)) {
            if (!strcmp(text_at(ref, "kind"), "ClusterRole") &&
                role_grants(role(p, "ClusterRole", NULL, text_at(ref, "name")), a))
                return true;
        } else if (!strcmp(kind, "RoleBinding") && binds(b, ns, name) && a->resource &&
                   !strcmp(a->ns, bns)) {
            const char *rk = text_at(ref, "kind");
            if (role_grants(role(p, rk, !strcmp(rk, "Role") ? bns : NULL, text_at(ref, "name")), a))
                return true;
        }
    }
    return false;
}

/* ---- the request log ------------------------------------------------------------------------ */

/* Which manifest speaks for which component (src/kube/client.c: "drover-<component>/VERSION"). */
static const struct {
    const char *agent, *file;
} COMPONENTS[] = {{"drover-run/", "rbac.yaml"}, {"drover-emulate/", "emulate-rbac.yaml"}};
enum { NCOMP = sizeof COMPONENTS / sizeof *COMPONENTS, MAX_KINDS = 64 };
/* Components that read with another's account: `drover snapshot` is documented to need no
 * grant beyond drover run's (docs/what-if.md), so its requests are judged by rbac.yaml's
 * account. Only for refusals: a grant counts as used by its own component's requests alone. */
static const struct {
    const char *agent;
    int as; /* the index in COMPONENTS whose account it uses */
} ALIASES[] = {{"drover-snapshot/", 0}};
enum { NALIAS = sizeof ALIASES / sizeof *ALIASES };

/* One kind of refused request: its attributes as text, how many, the first line. */
typedef struct refusal {
    char what[768];
    long count;
    char first[1200];
} refusal;

/* Records line (attributes a, refused to account who) among the kinds of refusal seen. */
static void note(refusal *seen, int *nseen, const drv_rbac_attrs *a, const char *who,
                 const char *line)
{
    char what[768];
    if (a->resource)
        snprintf(what, sizeof what, "%s %s %s%s%s (%s)", a->verb, a->group[0] ? a->group : "\"\"",
                 a->res, a->sub[0] ? "/" : "", a->sub, who);
    else
        snprintf(what, sizeof what, "%s non-resource URL %s (%s)", a->verb, a->path, who);
    for (int i = 0; i < *nseen; i++)
        if (!strcmp(seen[i].what, what)) {
            seen[i].count++;
            return;
        }
    if (*nseen == MAX_KINDS) /* beyond 64 kinds the first 64 say enough */
        return;
    refusal *r = &seen[(*nseen)++];
    put(r->what, sizeof r->what, what);
    put(r->first, sizeof r->first, line);
    r->count = 1;
}

/* Checks one log line ("CODE METHOD URL AGENT"); lines of other agents are skipped. */
static int check_line(drv_rbac *p, const char *acct[NCOMP][2], const char *line, refusal *seen,
                      int *nseen, drv_diag *d)
{
    char method[16], url[1024];
    int code, used = 0;
    if (sscanf(line, "%d %15s %1023s %n", &code, method, url, &used) != 3 || !used)
        return drv_fail(d, DRV_EINVAL, "request log: \"%.200s\": expected CODE METHOD URL AGENT",
                        line);
    const char *agent = line + used;
    for (int k = 0; k < NCOMP + NALIAS; k++) {
        const char *as = k < NCOMP ? COMPONENTS[k].agent : ALIASES[k - NCOMP].agent;
        int c = k < NCOMP ? k : ALIASES[k - NCOMP].as;
        if (strncmp(agent, as, strlen(as)))
            continue;
        drv_rbac_attrs a;
        int rc = drv_rbac_attrs_of(method, url, &a, d);
        if (rc)
            return rc;
        char who[160];
        snprintf(who, sizeof who, "%s/%s", acct[c][0], acct[c][1]);
        if (!drv_rbac_allows(p, acct[c][0], acct[c][1], &a))
            note(seen, nseen, &a, who, line);
    }
    return 0;
}

/* The refusals as text: one line per kind, with its count and first request. */
static char *report(const refusal *seen, int nseen, drv_diag *d)
{
    size_t cap = 1 + (size_t)nseen * (sizeof seen->what + sizeof seen->first + 64), len = 0;
    char *out = drv_malloc(cap);
    if (!out) {
        drv_fail(d, DRV_ENOMEM, "rbac check: out of memory");
        return NULL;
    }
    out[0] = 0;
    for (int i = 0; i < nseen; i++)
        len += (size_t)snprintf(out + len, cap - len, "not granted: %s: %ld request%s, first: %s\n",
                                seen[i].what, seen[i].count, seen[i].count == 1 ? "" : "s",
                                seen[i].first);
    return out;
}

char *drv_rbac_refused(const char *log, const char *source_dir, drv_diag *d)
{
    drv_rbac p = {0};
    const char *acct[NCOMP][2];
    char path[NCOMP][1024];
    int rc = 0;
    for (int c = 0; c < NCOMP && !rc; c++) {
        snprintf(path[c], sizeof path[c], "%s/deploy/%s", source_dir, COMPONENTS[c].file);
        rc = drv_rbac_add_file(&p, path[c], d);
    }
    for (int c = 0; c < NCOMP && !rc; c++)
        if (!drv_rbac_account(&p, path[c], &acct[c][0], &acct[c][1]))
            rc = drv_fail(d, DRV_EINVAL, "%s: expected a ServiceAccount", path[c]);
    refusal *seen = rc ? NULL : drv_calloc(MAX_KINDS, sizeof *seen);
    if (!rc && !seen)
        rc = drv_fail(d, DRV_ENOMEM, "rbac check: out of memory");
    int nseen = 0;
    for (const char *l = log; !rc && l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        char line[1200];
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        if (n)
            rc = check_line(&p, acct, line, seen, &nseen, d);
        l = nl ? nl + 1 : NULL;
    }
    char *out = rc ? NULL : report(seen, nseen, d);
    drv_free(seen);
    drv_rbac_fini(&p);
    return out;
}

/* ---- grants no request used ---------------------------------------------------------------- */

/* Whether a request of log from agent is granted by rule u through this verb, group and
 * resource of it (res may be "RES/SUB", "*" or "*\/SUB"). */
static bool rule_used(drv_conf *u, const char *agent, const char *verb, const char *group,
                      const char *res, const char *log)
{
    for (const char *l = log; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        char line[1200], method[16], url[1024];
        int code, used = 0;
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        l = nl ? nl + 1 : NULL;
        drv_rbac_attrs a;
        drv_diag d;
        if (sscanf(line, "%d %15s %1023s %n", &code, method, url, &used) != 3 || !used ||
            strncmp(line + used, agent, strlen(agent)) ||
            drv_rbac_attrs_of(method, url, &a, &d) != 0 || !a.resource)
            continue;
        char combined[160];
        snprintf(combined, sizeof combined, "%s%s%s", a.res, a.sub[0] ? "/" : "", a.sub);
        bool res_ok = !strcmp(res, "*") || !strcmp(combined, res) ||
                      (a.sub[0] && !strncmp(res, "*/", 2) && !strcmp(res + 2, a.sub));
        if ((!strcmp(verb, "*") || !strcmp(a.verb, verb)) &&
            (!strcmp(group, "*") || !strcmp(a.group, group)) && res_ok && rule_grants(u, &a))
            return true;
    }
    return false;
}

/* Appends to out (len, cap) the grants of role r (bound to component c's account) that log
 * never used. */
static int unused_of_role(drv_conf *r, const char *file, const char *agent, const char *who,
                          const char *log, char **out, int32_t *len, int32_t *cap)
{
    drv_conf *rules = drv_conf_get(r, "rules");
    for (int32_t i = 0; rules && i < rules->nitems; i++) {
        drv_conf *u = rules->items[i];
        drv_conf *verbs = drv_conf_get(u, "verbs"), *groups = drv_conf_get(u, "apiGroups"),
                 *res = drv_conf_get(u, "resources");
        for (int32_t v = 0; verbs && v < verbs->nitems; v++)
            for (int32_t g = 0; groups && g < groups->nitems; g++)
                for (int32_t k = 0; res && k < res->nitems; k++) {
                    const char *verb = verbs->items[v]->text, *group = groups->items[g]->text,
                               *rs = res->items[k]->text;
                    if (rule_used(u, agent, verb, group, rs, log))
                        continue;
                    char line[600];
                    int w = snprintf(line, sizeof line, "unused grant: %s %s %s (%s:%d, %s)\n",
                                     verb, group[0] ? group : "\"\"", rs, file, u->line, who);
                    if (w < 0 || w >= (int)sizeof line)
                        w = (int)sizeof line - 1;
                    if (drv_grow(out, 1, cap, *len + w + 1) != 0)
                        return DRV_ENOMEM;
                    memcpy(*out + *len, line, (size_t)w + 1);
                    *len += w;
                }
    }
    return 0;
}

char *drv_rbac_unused(const char *log, const char *source_dir, drv_diag *d)
{
    drv_rbac p = {0};
    char path[NCOMP][1024];
    int rc = 0;
    for (int c = 0; c < NCOMP && !rc; c++) {
        snprintf(path[c], sizeof path[c], "%s/deploy/%s", source_dir, COMPONENTS[c].file);
        rc = drv_rbac_add_file(&p, path[c], d);
    }
    char *out = NULL;
    int32_t len = 0, cap = 0;
    if (!rc && drv_grow(&out, 1, &cap, 1) == 0)
        out[0] = 0;
    else if (!rc)
        rc = drv_fail(d, DRV_ENOMEM, "rbac check: out of memory");
    for (int c = 0; c < NCOMP && !rc; c++) {
        const char *ns, *name;
        if (!drv_rbac_account(&p, path[c], &ns, &name)) {
            rc = drv_fail(d, DRV_EINVAL, "%s: expected a ServiceAccount", path[c]);
            break;
        }
        char who[160];
        snprintf(who, sizeof who, "%s/%s", ns, name);
        /* every role bound to the account, each once (as its binding names it) */
        for (int i = 0; i < p.n && !rc; i++) {
            drv_conf *b = p.doc[i].root, *ref = drv_conf_get(b, "roleRef");
            const char *kind = text_at(b, "kind"), *rk = text_at(ref, "kind");
            const char *bns = text_at(drv_conf_get(b, "metadata"), "namespace");
            if ((strcmp(kind, "ClusterRoleBinding") && strcmp(kind, "RoleBinding")) ||
                !binds(b, ns, name))
                continue;
            drv_conf *r = role(&p, rk, !strcmp(rk, "Role") ? bns : NULL, text_at(ref, "name"));
            if (r && unused_of_role(r, p.doc[i].file, COMPONENTS[c].agent, who, log, &out, &len,
                                    &cap) != 0)
                rc = drv_fail(d, DRV_ENOMEM, "rbac check: out of memory");
        }
    }
    drv_rbac_fini(&p);
    if (rc) {
        drv_free(out);
        return NULL;
    }
    return out;
}

void drv_rbac_keep_log(const char *log)
{
    const char *dir = getenv("DROVER_RBAC_LOG_DIR");
    char exe[1024], path[1400];
    ssize_t n = dir && log ? readlink("/proc/self/exe", exe, sizeof exe - 1) : -1;
    if (n <= 0)
        return;
    exe[n] = 0;
    const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    snprintf(path, sizeof path, "%s/%s.log", dir, base);
    FILE *f = fopen(path, "a");
    if (f) {
        fputs(log, f);
        fclose(f);
    }
}

int drv_rbac_check_server(drv_apiserver *srv, FILE *out)
{
    char *log = drv_apiserver_request_log(srv);
    drv_rbac_keep_log(log);
    const char *src = getenv("DROVER_SOURCE_DIR");
    drv_diag d = {{0}};
    char *refused = log ? drv_rbac_refused(log, src ? src : ".", &d) : NULL;
    int rc = refused && !*refused ? 0 : -1;
    if (!refused)
        fprintf(out, "rbac check: %s\n", log ? d.msg : "out of memory");
    else if (*refused)
        fprintf(out, "the shipped RBAC (deploy/) does not grant these requests:\n%s", refused);
    drv_free(refused);
    drv_free(log);
    return rc;
}
