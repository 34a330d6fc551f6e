/*
 * The deploy/ manifests keep least privilege (docs/running.md, "Trust model"): read with our
 * own YAML reader, document by document. Leases are writable only through the namespaced Role,
 * by name for get and update; no ClusterRole touches Leases, Secrets or ConfigMaps or uses a
 * wildcard; status subresources are patched, never replaced; emulate's permissions are its own;
 * the Deployment runs non-root, read-only, without privilege escalation or capabilities, with
 * the default seccomp profile and limits. That the rules grant every request the components
 * make is checked by the end-to-end tests themselves (tests/apiserver/rbac_check.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drover/conf.h"

enum { MAX_DOCS = 16 };

typedef struct manifests {
    drv_conf_doc doc[MAX_DOCS];
    int n;
} manifests;

/* Loads every "---"-separated document of deploy/<name>. */
static void load(manifests *m, const char *name)
{
    char path[4096];
    const char *src = getenv("DROVER_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/deploy/%s", src ? src : ".", name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    memset(m, 0, sizeof *m);
    for (char *p = text; p && *p;) {
        char *sep = strstr(p, "\n---\n");
        size_t n = sep ? (size_t)(sep - p) + 1 : strlen(p);
        drv_diag d;
        assert_true(m->n < MAX_DOCS);
        if (drv_conf_load_string(&m->doc[m->n], name, p, n, &d) != 0)
            fail_msg("%s", d.msg);
        m->n++;
        p = sep ? sep + 5 : NULL;
    }
}

static void unload(manifests *m)
{
    for (int i = 0; i < m->n; i++)
        drv_conf_doc_fini(&m->doc[i]);
}

static const char *text_at(drv_conf *c, const char *a, const char *b)
{
    drv_conf *x = drv_conf_get(c, a);
    if (b)
        x = drv_conf_get(x, b);
    return x && x->kind == DRV_CONF_SCALAR ? x->text : "";
}

static bool list_has(drv_conf *list, const char *s)
{
    for (int32_t i = 0; list && i < list->nitems; i++)
        if (list->items[i]->text && !strcmp(list->items[i]->text, s))
            return true;
    return false;
}

/* The document of that kind and name, or NULL. */
static drv_conf *find(manifests *m, const char *kind, const char *name)
{
    for (int i = 0; i < m->n; i++) {
        drv_conf *r = m->doc[i].root;
        if (!strcmp(text_at(r, "kind", NULL), kind) &&
            !strcmp(text_at(r, "metadata", "name"), name))
            return r;
    }
    return NULL;
}

static void no_wildcards_nor_secrets(drv_conf *role)
{
    drv_conf *rules = drv_conf_get(role, "rules");
    assert_non_null(rules);
    for (int32_t i = 0; i < rules->nitems; i++) {
        drv_conf *res = drv_conf_get(rules->items[i], "resources");
        drv_conf *verbs = drv_conf_get(rules->items[i], "verbs");
        assert_false(list_has(res, "*") || list_has(verbs, "*"));
        assert_false(list_has(res, "secrets") || list_has(res, "configmaps"));
    }
}

static void test_rbac(void **unused)
{
    (void)unused;
    manifests m;
    load(&m, "rbac.yaml");
    drv_conf *cr = find(&m, "ClusterRole", "drover");
    assert_non_null(cr);
    no_wildcards_nor_secrets(cr);
    drv_conf *rules = drv_conf_get(cr, "rules");
    bool pg_read = false, resize = false, q_status = false;
    int q_read = 0, status_patched = 0;
    for (int32_t i = 0; i < rules->nitems; i++) {
        drv_conf *res = drv_conf_get(rules->items[i], "resources");
        assert_false(list_has(res, "leases")); /* cluster-wide Lease writes were the finding */
        assert_false(list_has(res, "nodes") &&
                     list_has(drv_conf_get(rules->items[i], "verbs"), "update"));
        /* Other operators' PodGroups are read and their status written, never created, edited
         * or deleted (their operator owns them). */
        drv_conf *verbs = drv_conf_get(rules->items[i], "verbs");
        if (list_has(res, "podgroups")) {
            pg_read = list_has(verbs, "watch") && list_has(verbs, "list");
            assert_false(list_has(verbs, "create") || list_has(verbs, "delete") ||
                         list_has(verbs, "update") || list_has(verbs, "patch"));
        }
        /* Status is written with merge patches (tests/apiserver/rbac_check.h checks every
         * request), never replaced: update would be a privilege unused. */
        if (list_has(res, "podgroups/status") || list_has(res, "trainingjobs/status")) {
            status_patched += list_has(verbs, "patch");
            assert_false(list_has(verbs, "update"));
        }
        /* CPU limits change through pods/resize (patch) only: a pod itself is never edited. */
        if (list_has(res, "pods/resize"))
            resize = list_has(verbs, "patch") && verbs->nitems == 1;
        if (list_has(res, "pods"))
            assert_false(list_has(verbs, "update") || list_has(verbs, "patch"));
        /* Queues and PriorityClasses are the cluster admin's: read, and a Queue's status
         * patched (the writer's merge patch), nothing else. */
        if (list_has(res, "queues") || list_has(res, "priorityclasses")) {
            q_read += list_has(verbs, "watch") && list_has(verbs, "list");
            assert_false(list_has(verbs, "create") || list_has(verbs, "delete") ||
                         list_has(verbs, "update") || list_has(verbs, "patch"));
        }
        if (list_has(res, "queues/status"))
            q_status = list_has(verbs, "patch") && !list_has(verbs, "update");
    }
    assert_true(pg_read && status_patched == 2 && resize);
    assert_int_equal(q_read, 2);
    assert_true(q_status);
    drv_conf *role = find(&m, "Role", "drover-lease");
    assert_non_null(role);
    assert_string_equal(text_at(role, "metadata", "namespace"), "drover-system");
    rules = drv_conf_get(role, "rules");
    assert_int_equal(rules->nitems, 2);
    for (int32_t i = 0; i < rules->nitems; i++) {
        drv_conf *r = rules->items[i];
        assert_true(list_has(drv_conf_get(r, "resources"), "leases"));
        drv_conf *verbs = drv_conf_get(r, "verbs");
        if (list_has(verbs, "update") || list_has(verbs, "get"))
            assert_true(list_has(drv_conf_get(r, "resourceNames"), "drover"));
        else
            assert_true(list_has(verbs, "create") && verbs->nitems == 1);
    }
    drv_conf *rb = find(&m, "RoleBinding", "drover-lease");
    assert_non_null(rb);
    assert_string_equal(text_at(rb, "metadata", "namespace"), "drover-system");
    unload(&m);

    load(&m, "emulate-rbac.yaml");
    drv_conf *em = find(&m, "ClusterRole", "drover-emulate");
    assert_non_null(em);
    no_wildcards_nor_secrets(em);
    drv_conf *sa = find(&m, "ServiceAccount", "drover-emulate");
    assert_non_null(sa);
    unload(&m);
}

static void test_deployment(void **unused)
{
    (void)unused;
    manifests m;
    load(&m, "drover.yaml");
    drv_conf *dep = find(&m, "Deployment", "drover");
    assert_non_null(dep);
    drv_conf *pod = drv_conf_get(drv_conf_get(drv_conf_get(dep, "spec"), "template"), "spec");
    assert_string_equal(text_at(pod, "securityContext", "runAsNonRoot"), "true");
    assert_string_equal(text_at(drv_conf_get(pod, "securityContext"), "seccompProfile", "type"),
                        "RuntimeDefault");
    drv_conf *c = drv_conf_get(pod, "containers")->items[0];
    drv_conf *sc = drv_conf_get(c, "securityContext");
    assert_string_equal(text_at(sc, "allowPrivilegeEscalation", NULL), "false");
    assert_string_equal(text_at(sc, "readOnlyRootFilesystem", NULL), "true");
    assert_true(list_has(drv_conf_get(drv_conf_get(sc, "capabilities"), "drop"), "ALL"));
    drv_conf *res = drv_conf_get(c, "resources");
    assert_true(*text_at(res, "requests", "cpu") && *text_at(res, "requests", "memory"));
    assert_true(*text_at(res, "limits", "cpu") && *text_at(res, "limits", "memory"));
    /* metrics beyond loopback are asked for explicitly (the default is loopback) */
    assert_true(list_has(drv_conf_get(c, "args"), "0.0.0.0:8080"));
    unload(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rbac),
        cmocka_unit_test(test_deployment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
