/* fuzz_kubeserver.c - a kubeconfig server URL (drv_kube_check_server, then drv_kube_new with a
 * token, as drv_kubeconfig_load and drover run take it). What must hold, whatever the bytes:
 *  - a URL that libcurl parses with a user name or password is refused, and the message shows
 *    the URL without them (a password may still occur elsewhere in it by chance: in the
 *    scheme, the host or the path);
 *  - an accepted http:// URL with a token and without insecure makes a client only when its host
 *    (as libcurl parses it) is localhost, 127.0.0.0/8 or [::1] (checked here on its own).
 * No request is made: drv_kube_new connects to nothing. */
#include "drover/kube.h"
#include "fuzz.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The host is loopback, decided here apart from client.c's code (by prefix of the parsed host,
 * which is enough once libcurl has normalised it). */
static int host_is_loopback(const char *host)
{
    unsigned char a[16];
    if (!strcasecmp(host, "localhost"))
        return 1;
    if (inet_pton(AF_INET, host, a) == 1)
        return a[0] == 127;
    return !strcmp(host, "[::1]");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *url = malloc(size + 1);
    if (!url)
        return 0;
    memcpy(url, data, size);
    url[size] = 0;
    bool local = false;
    drv_diag d;
    int rc = drv_kube_check_server(url, &local, &d);
    CURLU *u = curl_url();
    char *pw = NULL, *user = NULL, *host = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK) {
        curl_url_get(u, CURLUPART_USER, &user, 0);
        curl_url_get(u, CURLUPART_PASSWORD, &pw, 0);
        curl_url_get(u, CURLUPART_HOST, &host, 0);
    }
    if ((user || pw) && rc == 0)
        abort();      /* user information accepted */
    if (user || pw) { /* the message begins with the URL less its user information */
        curl_url_set(u, CURLUPART_USER, NULL, 0);
        curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
        char *clean = NULL;
        if (curl_url_get(u, CURLUPART_URL, &clean, 0) == CURLUE_OK) {
            size_t n = strlen(clean) < strlen(d.msg) ? strlen(clean) : strlen(d.msg);
            if (strncmp(d.msg, clean, n) || (d.msg[n] && d.msg[n] != ':'))
                abort();
        }
        curl_free(clean);
    }
    if (rc == 0 && local != (host && host_is_loopback(host)))
        abort(); /* loopback decided otherwise than on the parsed host */
    if (rc == 0) {
        drv_kube_config c = {.server = url, .token = "t"};
        drv_kube *k = NULL;
        int nrc = drv_kube_new(&k, &c, &d);
        drv_kube_free(k);
        if (!strncmp(url, "http://", 7) && nrc == 0 && !local)
            abort(); /* a token in clear to a host that is not loopback */
    }
    curl_free(user);
    curl_free(pw);
    curl_free(host);
    curl_url_cleanup(u);
    free(url);
    return 0;
}
