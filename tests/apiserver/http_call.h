/*
 * http_call.h - one HTTP request to a test API server on loopback, as the server's tests send
 * them (curl; the answer, its status and its Retry-After kept): from the test's thread or from
 * one of its own (do_call takes and returns a void * for pthread_create).
 */
#ifndef DROVER_TEST_HTTP_CALL_H
#define DROVER_TEST_HTTP_CALL_H

#include "kbuf.h"

#include <curl/curl.h>
#include <stdint.h>

struct call {
    uint16_t port;
    const char *method, *path, *body, *ctype;
    const char *agent; /* User-Agent (NULL: curl's) */
    long code;
    CURLcode cc;
    drv_kbuf out;
    char retry_after[16];
    int done; /* set (atomically) when the transfer has ended */
};

/* Sends c's request (ctype NULL: application/json) and keeps its answer in c; arg is c. */
void *do_call(void *arg);

#endif
