/*
 * TLS: the test API server serves HTTPS with a certificate signed by a test CA
 * (tests/fixtures/tls). The client must accept it given that CA as a file or inline, refuse
 * it given another CA (without retrying: retrying cannot fix a certificate), and accept it
 * with insecure-skip-tls-verify — which it must log as a warning. With a server that requires
 * client certificates, the client's certificate (file or inline) must get it through.
 */
#include "apiserver.h"
#include "drover/kube.h"
#include "json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *slurp(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TLS_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *b = calloc(1, 16384);
    size_t n = fread(b, 1, 16383, f);
    b[n] = 0;
    fclose(f);
    return b;
}

static char warned[512];
static void sink(enum drv_log_level lvl, const char *msg, void *arg)
{
    (void)arg;
    if (lvl == DRV_LOG_WARN)
        snprintf(warned, sizeof warned, "%s", msg);
}

static int get(drv_kube_config *c, drv_diag *d, long *requests)
{
    drv_kube *k;
    int rc = drv_kube_new(&k, c, d);
    if (rc)
        return rc;
    long st;
    rc = drv_kube_request(k, "GET", "/api/v1/namespaces", NULL, NULL, &st, NULL, d);
    *requests = drv_kube_requests(k);
    drv_kube_free(k);
    return rc;
}

static void test_tls(void **unused)
{
    (void)unused;
    char *cert = slurp("server.pem"), *key = slurp("server-key.pem"), *ca = slurp("ca.pem");
    drv_apiserver *srv;
    drv_diag d;
    drv_apiserver_opts o = {.fixture_dir = FIXTURE_DIR, .tls_cert_pem = cert, .tls_key_pem = key};
    if (drv_apiserver_start(&srv, &o, &d) != 0) {
        fprintf(stderr, "no TLS test server (%s): skipped\n", d.msg);
        exit(77);
    }
    char url[64], cafile[512], other[512];
    snprintf(url, sizeof url, "https://127.0.0.1:%u", drv_apiserver_port(srv));
    snprintf(cafile, sizeof cafile, "%s/ca.pem", TLS_DIR);
    snprintf(other, sizeof other, "%s/other-ca.pem", TLS_DIR);
    long n;
    drv_kube_config good = {.server = url, .ca_file = cafile};
    if (get(&good, &d, &n))
        fail_msg("with the right CA file: %s", d.msg);
    drv_kube_config inline_ca = {.server = url, .ca_data = ca};
    if (get(&inline_ca, &d, &n))
        fail_msg("with the right CA inline: %s", d.msg);
    drv_kube_config wrong = {.server = url, .ca_file = other, .backoff_ms = 1};
    assert_int_equal(get(&wrong, &d, &n), DRV_EIO);
    assert_non_null(strstr(d.msg, "certificate"));
    assert_int_equal(n, 1); /* not retried */
    drv_log_set(sink, NULL, DRV_LOG_WARN);
    drv_kube_config insecure = {.server = url, .ca_file = other, .insecure = true};
    if (get(&insecure, &d, &n))
        fail_msg("insecure: %s", d.msg);
    assert_non_null(strstr(warned, "insecure-skip-tls-verify"));
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
    drv_apiserver_free(srv);
    free(cert);
    free(key);
    free(ca);
}

/* A server that requires client certificates (kube-apiserver with --client-ca-file and no
 * anonymous access): without one the client gets the 401 Status, with one - from files or
 * inline, as a kubeconfig gives them - it gets through. */
static void test_client_certificate(void **unused)
{
    (void)unused;
    char *cert = slurp("server.pem"), *key = slurp("server-key.pem");
    char *ca = slurp("client-ca.pem");
    char *ccert = slurp("client.pem"), *ckey = slurp("client-key.pem");
    drv_apiserver *srv;
    drv_diag d;
    drv_apiserver_opts o = {.fixture_dir = FIXTURE_DIR,
                            .tls_cert_pem = cert,
                            .tls_key_pem = key,
                            .tls_client_ca_pem = ca};
    if (drv_apiserver_start(&srv, &o, &d) != 0) {
        fprintf(stderr, "no TLS test server (%s): skipped\n", d.msg);
        exit(77);
    }
    char url[64], cafile[512], cfile[512], kfile[512];
    snprintf(url, sizeof url, "https://127.0.0.1:%u", drv_apiserver_port(srv));
    snprintf(cafile, sizeof cafile, "%s/ca.pem", TLS_DIR);
    snprintf(cfile, sizeof cfile, "%s/client.pem", TLS_DIR);
    snprintf(kfile, sizeof kfile, "%s/client-key.pem", TLS_DIR);
    long n;
    drv_kube_config anon = {.server = url, .ca_file = cafile, .backoff_ms = 1};
    assert_int_not_equal(get(&anon, &d, &n), 0);
    if (!strstr(d.msg, "401 Unauthorized"))
        fail_msg("without a client certificate: %s", d.msg);
    drv_kube_config files = {
        .server = url, .ca_file = cafile, .cert_file = cfile, .key_file = kfile};
    if (get(&files, &d, &n))
        fail_msg("with the client certificate from files: %s", d.msg);
    drv_kube_config data = {.server = url, .ca_file = cafile, .cert_data = ccert, .key_data = ckey};
    if (get(&data, &d, &n))
        fail_msg("with the client certificate inline: %s", d.msg);
    /* A certificate from another CA is no better than none. */
    char *stranger = slurp("server.pem");
    drv_kube_config wrong = {
        .server = url, .ca_file = cafile, .cert_data = stranger, .key_data = key, .backoff_ms = 1};
    assert_int_not_equal(get(&wrong, &d, &n), 0);
    assert_non_null(strstr(d.msg, "401 Unauthorized"));
    drv_apiserver_free(srv);
    free(stranger);
    free(cert);
    free(key);
    free(ca);
    free(ccert);
    free(ckey);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tls),
                                       cmocka_unit_test(test_client_certificate)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
