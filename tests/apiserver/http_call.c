/*
 * http_call.c - one HTTP request to a test API server (http_call.h).
 */
#include "http_call.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static size_t on_header(char *d, size_t sz, size_t nm, void *u)
{
    struct call *c = u;
    size_t n = sz * nm;
    if (n > 12 && !strncasecmp(d, "Retry-After:", 12))
        snprintf(c->retry_after, sizeof c->retry_after, "%.*s", (int)strcspn(d + 13, "\r\n"),
                 d + 13);
    return n;
}

void *do_call(void *arg)
{
    struct call *c = arg;
    char url[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", c->port, c->path);
    CURL *h = curl_easy_init();
    struct curl_slist *hd = NULL;
    char ct[128];
    snprintf(ct, sizeof ct, "Content-Type: %s", c->ctype ? c->ctype : "application/json");
    hd = curl_slist_append(hd, ct);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    if (c->agent)
        curl_easy_setopt(h, CURLOPT_USERAGENT, c->agent);
    if (c->body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, drv_kbuf_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->out);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 15L);
    c->cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->code);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}
