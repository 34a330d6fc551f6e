/*
 * kubeconfig loading and in-cluster configuration. Every case writes its files into a fresh
 * temporary directory: KUBECONFIG merge order across files, context override, relative file
 * references, inline base64 data, tokenFile, the errors (unknown context listing the known
 * ones, missing cluster or user, a malformed file with its line, exec users), and in-cluster
 * files under a fake root.
 */
#include "drover/kube.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[256];

static void put(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *paths(const char *a, const char *b)
{
    static char s[1024];
    if (b)
        snprintf(s, sizeof s, "%s/%s:%s/missing-is-skipped:%s/%s", dir, a, dir, dir, b);
    else
        snprintf(s, sizeof s, "%s/%s", dir, a);
    return s;
}

static int setup(void **unused)
{
    (void)unused;
    snprintf(dir, sizeof dir, "/tmp/drover-kubeconfig-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    /* "aGVsbG8=" is base64 for "hello" */
    put("a.yaml", "apiVersion: v1\n"
                  "kind: Config\n"
                  "current-context: dev\n"
                  "clusters:\n"
                  "- name: prod\n"
                  "  cluster:\n"
                  "    server: https://prod-from-a:6443/\n"
                  "    certificate-authority: certs/ca.pem\n"
                  "contexts:\n"
                  "- name: prod\n"
                  "  context: {cluster: prod, user: me, namespace: team}\n");
    put("b.yaml", "apiVersion: v1\n"
                  "kind: Config\n"
                  "current-context: prod\n"
                  "clusters:\n"
                  "- name: prod\n"
                  "  cluster: {server: 'https://prod-from-b:6443'}\n"
                  "- name: dev\n"
                  "  cluster:\n"
                  "    server: https://dev:6443\n"
                  "    certificate-authority-data: aGVsbG8=\n"
                  "    insecure-skip-tls-verify: true\n"
                  "users:\n"
                  "- name: me\n"
                  "  user:\n"
                  "    tokenFile: tok\n"
                  "    client-certificate-data: aGVsbG8=\n"
                  "- name: robot\n"
                  "  user:\n"
                  "    exec: {command: get-token}\n"
                  "contexts:\n"
                  "- name: dev\n"
                  "  context: {cluster: dev, user: me}\n"
                  "- name: robot\n"
                  "  context: {cluster: dev, user: robot}\n"
                  "- name: nocluster\n"
                  "  context: {cluster: gone, user: me}\n");
    put("tok", "s3cret\n");
    char certs[300];
    snprintf(certs, sizeof certs, "%s/certs", dir);
    if (mkdir(certs, 0700) != 0)
        return -1;
    put("certs/ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    put("bad.yaml", "clusters:\n- name: x\n  cluster: [1, 2\n");
    return 0;
}

static int teardown(void **unused)
{
    (void)unused;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_merge_and_current_context(void **unused)
{
    (void)unused;
    drv_kube_config c;
    drv_diag d;
    /* a first: a's current-context (dev) wins; the dev cluster and user come from b */
    if (drv_kubeconfig_load(&c, paths("a.yaml", "b.yaml"), NULL, &d))
        fail_msg("%s", d.msg);
    assert_string_equal(c.server, "https://dev:6443");
    assert_string_equal(c.ca_data, "hello");
    assert_true(c.insecure);
    assert_string_equal(c.token, "s3cret"); /* tokenFile relative to b.yaml, newline trimmed */
    assert_string_equal(c.cert_data, "hello");
    assert_null(c.namespace_);
    drv_kube_config_fini(&c);
    /* context override: prod is defined in both files; a's (listed first) wins, its trailing
     * slash dropped, its relative CA made absolute against a's directory */
    assert_int_equal(drv_kubeconfig_load(&c, paths("a.yaml", "b.yaml"), "prod", &d), 0);
    assert_string_equal(c.server, "https://prod-from-a:6443");
    char ca[512];
    snprintf(ca, sizeof ca, "%s/certs/ca.pem", dir);
    assert_string_equal(c.ca_file, ca);
    assert_string_equal(c.namespace_, "team");
    assert_false(c.insecure);
    drv_kube_config_fini(&c);
    /* b first: b's current-context (prod) and b's prod cluster */
    assert_int_equal(drv_kubeconfig_load(&c, paths("b.yaml", "a.yaml"), NULL, &d), 0);
    assert_string_equal(c.server, "https://prod-from-b:6443");
    drv_kube_config_fini(&c);
    /* KUBECONFIG is read when no list is given */
    setenv("KUBECONFIG", paths("b.yaml", NULL), 1);
    assert_int_equal(drv_kubeconfig_load(&c, NULL, "dev", &d), 0);
    assert_string_equal(c.server, "https://dev:6443");
    drv_kube_config_fini(&c);
    unsetenv("KUBECONFIG");
}

static void test_errors(void **unused)
{
    (void)unused;
    drv_kube_config c;
    drv_diag d;
    assert_int_equal(drv_kubeconfig_load(&c, paths("a.yaml", "b.yaml"), "nope", &d), DRV_ENOENT);
    assert_non_null(
        strstr(d.msg, "context \"nope\" not found (known: prod, dev, robot, nocluster)"));
    assert_int_equal(drv_kubeconfig_load(&c, paths("b.yaml", NULL), "nocluster", &d), DRV_ENOENT);
    assert_non_null(strstr(d.msg, "cluster \"gone\" not found"));
    assert_int_equal(drv_kubeconfig_load(&c, paths("b.yaml", NULL), "robot", &d), DRV_ENOTSUP);
    if (!strstr(d.msg, "b.yaml:19: users[robot].user.exec: not supported"))
        fail_msg("%s", d.msg);
    assert_non_null(strstr(d.msg, "b.yaml:19: users[robot].user.exec: not supported"));
    assert_int_equal(drv_kubeconfig_load(&c, paths("bad.yaml", NULL), "x", &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "bad.yaml:"));
    char none[600];
    snprintf(none, sizeof none, "%s/none1:%s/none2", dir, dir);
    assert_int_equal(drv_kubeconfig_load(&c, none, NULL, &d), DRV_ENOENT);
    assert_non_null(strstr(d.msg, "no kubeconfig found"));
    /* a client built from a config without a usable server refuses clearly */
    drv_kube *k;
    drv_kube_config empty = {0};
    assert_int_equal(drv_kube_new(&k, &empty, &d), DRV_EINVAL);
}

/* A token with CR LF would inject an HTTP header; basic-auth users would silently run with no
 * credentials. Both are refused, naming file:line and field. */
static void test_hostile_users(void **unused)
{
    (void)unused;
    put("h.yaml", "clusters:\n"
                  "- name: c\n"
                  "  cluster: {server: 'https://c:6443'}\n"
                  "users:\n"
                  "- name: crlf\n"
                  "  user: {token: \"abc\\r\\nX-Injected: 1\"}\n"
                  "- name: basic\n"
                  "  user: {username: admin, password: hunter2}\n"
                  "- name: tf\n"
                  "  user: {tokenFile: badtok}\n"
                  "contexts:\n"
                  "- {name: crlf, context: {cluster: c, user: crlf}}\n"
                  "- {name: basic, context: {cluster: c, user: basic}}\n"
                  "- {name: tf, context: {cluster: c, user: tf}}\n");
    put("badtok", "abc\nX-Injected: 1\n");
    drv_kube_config c;
    drv_diag d;
    char want[700];
    assert_int_equal(drv_kubeconfig_load(&c, paths("h.yaml", NULL), "crlf", &d), DRV_EINVAL);
    snprintf(want, sizeof want, "%s/h.yaml:6: users[crlf].user.token: contains a control character",
             dir);
    assert_string_equal(d.msg, want);
    assert_int_equal(drv_kubeconfig_load(&c, paths("h.yaml", NULL), "basic", &d), DRV_ENOTSUP);
    snprintf(want, sizeof want,
             "%s/h.yaml:8: users[basic].user.username: not supported (use a token, a tokenFile or "
             "a client certificate)",
             dir);
    assert_string_equal(d.msg, want);
    assert_int_equal(drv_kubeconfig_load(&c, paths("h.yaml", NULL), "tf", &d), DRV_EINVAL);
    snprintf(want, sizeof want,
             "%s/h.yaml:10: users[tf].user.tokenFile: %s/badtok: the token contains a control "
             "character",
             dir, dir);
    assert_string_equal(d.msg, want);
}

/* The load of kubeconfig k.yaml with context ctx fails with code, and its message is
 * "DIR/k.yaml:LINE: " + want with every "@" replaced by the test directory. */
static void refused(const char *ctx, int code, int line, const char *want)
{
    drv_kube_config c;
    drv_diag d;
    char exp[1280], body[900];
    size_t o = 0;
    for (const char *p = want; *p && o + strlen(dir) + 2 < sizeof body; p++)
        o += (size_t)snprintf(body + o, sizeof body - o, "%s", *p == '@' ? dir : (char[]){*p, 0});
    snprintf(exp, sizeof exp, "%s/k.yaml:%d: %s", dir, line, body);
    int rc = drv_kubeconfig_load(&c, paths("k.yaml", NULL), ctx, &d);
    if (rc == 0) {
        drv_kube_config_fini(&c);
        fail_msg("context %s: loaded, expected: %s", ctx, exp);
    }
    assert_int_equal(rc, code);
    assert_string_equal(d.msg, exp);
}

/* A server URL with user information is refused at load, naming file:line and field, and its
 * message does not repeat the password: "localhost:pw@evil.example" is evil.example. */
static void test_server_user_info(void **unused)
{
    (void)unused;
    put("k.yaml", "clusters:\n"
                  "- name: cred\n"
                  "  cluster: {server: 'http://localhost:pw@evil.example:80'}\n"
                  "- name: user\n"
                  "  cluster: {server: 'http://127.0.0.1@evil.example:80'}\n"
                  "- name: local\n"
                  "  cluster: {server: 'http://[::1]:80'}\n"
                  "contexts:\n"
                  "- {name: cred, context: {cluster: cred}}\n"
                  "- {name: user, context: {cluster: user}}\n"
                  "- {name: local, context: {cluster: local}}\n");
    refused("cred", DRV_EINVAL, 3,
            "clusters[cred].cluster.server: http://evil.example:80/: the URL carries a user name "
            "or password (not shown); expected scheme://host[:port][/path] (authenticate with a "
            "token, a tokenFile or a client certificate)");
    refused("user", DRV_EINVAL, 5,
            "clusters[user].cluster.server: http://evil.example:80/: the URL carries a user name "
            "or password (not shown); expected scheme://host[:port][/path] (authenticate with a "
            "token, a tokenFile or a client certificate)");
    drv_kube_config c;
    drv_diag d;
    assert_int_equal(drv_kubeconfig_load(&c, paths("k.yaml", NULL), "local", &d), 0);
    assert_string_equal(c.server, "http://[::1]:80");
    drv_kube_config_fini(&c);
}

/* Token and certificate files are read when the kubeconfig is loaded: a directory, an endless
 * file, a NUL byte, an empty token, a missing or non-PEM certificate each fail there with the
 * field and the file, instead of an empty or cut token sent later, or a first request that
 * fails (and is retried). */
static void test_file_refusals(void **unused)
{
    (void)unused;
    put("k.yaml", "clusters:\n"
                  "- name: c\n"
                  "  cluster: {server: 'https://c:6443'}\n"
                  "- name: noca\n"
                  "  cluster: {server: 'https://c:6443', certificate-authority: none.pem}\n"
                  "- name: dirca\n"
                  "  cluster: {server: 'https://c:6443', certificate-authority: certs}\n"
                  "- name: notpem\n"
                  "  cluster: {server: 'https://c:6443', certificate-authority: tok}\n"
                  "users:\n"
                  "- name: dir\n"
                  "  user: {tokenFile: certs}\n"
                  "- name: zero\n"
                  "  user: {tokenFile: /dev/zero}\n"
                  "- name: nul\n"
                  "  user: {tokenFile: nultok}\n"
                  "- name: empty\n"
                  "  user: {tokenFile: emptytok}\n"
                  "- name: blank\n"
                  "  user: {token: \"\"}\n"
                  "- name: nocert\n"
                  "  user: {token: t, client-certificate: none.crt}\n"
                  "- name: nokey\n"
                  "  user: {token: t, client-certificate: certs/ca.pem, client-key: none.key}\n"
                  "- name: good\n"
                  "  user: {tokenFile: tok, client-certificate: certs/ca.pem}\n"
                  "contexts:\n"
                  "- {name: noca, context: {cluster: noca}}\n"
                  "- {name: dirca, context: {cluster: dirca}}\n"
                  "- {name: notpem, context: {cluster: notpem}}\n"
                  "- {name: dir, context: {cluster: c, user: dir}}\n"
                  "- {name: zero, context: {cluster: c, user: zero}}\n"
                  "- {name: nul, context: {cluster: c, user: nul}}\n"
                  "- {name: empty, context: {cluster: c, user: empty}}\n"
                  "- {name: blank, context: {cluster: c, user: blank}}\n"
                  "- {name: nocert, context: {cluster: c, user: nocert}}\n"
                  "- {name: nokey, context: {cluster: c, user: nokey}}\n"
                  "- {name: good, context: {cluster: c, user: good}}\n");
    char p[512];
    snprintf(p, sizeof p, "%s/nultok", dir);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite("abc\0def\n", 1, 8, f), 8);
    fclose(f);
    put("emptytok", " \n\n");
    refused("noca", DRV_EIO, 5,
            "clusters[noca].cluster.certificate-authority: @/none.pem: cannot open: No such file "
            "or directory");
    refused("dirca", DRV_EIO, 7,
            "clusters[dirca].cluster.certificate-authority: @/certs: read error: Is a directory");
    refused("notpem", DRV_EINVAL, 9,
            "clusters[notpem].cluster.certificate-authority: @/tok: expected PEM (a \"-----BEGIN "
            "...\" block)");
    refused("dir", DRV_EIO, 12, "users[dir].user.tokenFile: @/certs: read error: Is a directory");
    refused("zero", DRV_EPARSE, 14,
            "users[zero].user.tokenFile: /dev/zero: byte 0: a NUL byte; expected text");
    refused("nul", DRV_EPARSE, 16,
            "users[nul].user.tokenFile: @/nultok: byte 3: a NUL byte; expected text");
    refused("empty", DRV_EINVAL, 18,
            "users[empty].user.tokenFile: @/emptytok: empty; expected a bearer token");
    refused("blank", DRV_EINVAL, 20,
            "users[blank].user.token: empty; expected a bearer token (leave the field out to send "
            "none)");
    refused("nocert", DRV_EIO, 22,
            "users[nocert].user.client-certificate: @/none.crt: cannot open: No such file or "
            "directory");
    refused("nokey", DRV_EIO, 24,
            "users[nokey].user.client-key: @/none.key: cannot open: No such file or directory");
    drv_kube_config c;
    drv_diag d;
    if (drv_kubeconfig_load(&c, paths("k.yaml", NULL), "good", &d) != 0)
        fail_msg("%s", d.msg);
    assert_string_equal(c.token, "s3cret");
    drv_kube_config_fini(&c);
}

static void test_in_cluster(void **unused)
{
    (void)unused;
    drv_kube_config c;
    drv_diag d;
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(drv_kube_incluster(&c, dir, &d), DRV_ENOENT);
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(drv_kube_incluster(&c, dir, &d), DRV_EIO); /* no token yet */
    assert_non_null(strstr(d.msg, "serviceaccount/token"));
    char sa[512], cmd[600];
    snprintf(sa, sizeof sa, "%s/var/run/secrets/kubernetes.io/serviceaccount", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", sa);
    assert_int_equal(system(cmd), 0);
    put("var/run/secrets/kubernetes.io/serviceaccount/token", "\n");
    assert_int_equal(drv_kube_incluster(&c, dir, &d), DRV_EINVAL); /* an empty token */
    assert_non_null(strstr(d.msg, "serviceaccount/token: empty; expected a bearer token"));
    put("var/run/secrets/kubernetes.io/serviceaccount/token", "tok-123\n");
    put("var/run/secrets/kubernetes.io/serviceaccount/namespace", "training");
    /* ca.crt is checked at load: missing, a directory, not PEM */
    assert_int_equal(drv_kube_incluster(&c, dir, &d), DRV_EIO);
    assert_non_null(strstr(d.msg, "the service account CA certificate: "));
    assert_non_null(strstr(d.msg, "serviceaccount/ca.crt"));
    snprintf(cmd, sizeof cmd, "mkdir '%s/ca.crt'", sa);
    assert_int_equal(system(cmd), 0);
    assert_int_not_equal(drv_kube_incluster(&c, dir, &d), 0);
    assert_non_null(strstr(d.msg, "serviceaccount/ca.crt"));
    snprintf(cmd, sizeof cmd, "rmdir '%s/ca.crt'", sa);
    assert_int_equal(system(cmd), 0);
    put("var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "not a certificate\n");
    assert_int_equal(drv_kube_incluster(&c, dir, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "ca.crt: expected PEM"));
    put("var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    assert_int_equal(drv_kube_incluster(&c, dir, &d), 0);
    assert_string_equal(c.server, "https://10.0.0.1:443");
    assert_string_equal(c.token, "tok-123");
    assert_string_equal(c.namespace_, "training");
    char ca[600];
    snprintf(ca, sizeof ca, "%s/ca.crt", sa);
    assert_string_equal(c.ca_file, ca);
    drv_kube_config_fini(&c);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    assert_int_equal(drv_kube_incluster(&c, dir, &d), 0);
    assert_string_equal(c.server, "https://[fd00::1]:443");
    drv_kube_config_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_users), cmocka_unit_test(test_server_user_info),
        cmocka_unit_test(test_file_refusals), cmocka_unit_test(test_merge_and_current_context),
        cmocka_unit_test(test_errors),        cmocka_unit_test(test_in_cluster),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
