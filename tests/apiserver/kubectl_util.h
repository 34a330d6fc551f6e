/*
 * kubectl_util.h - real kubectl against the test API server, for tests: a temporary directory
 * with a kubeconfig pointing at the server (and kubectl's cache, so runs share no discovery
 * cache), running kubectl with a request timeout, and counting failed expectations.
 */
#ifndef DROVER_KUBECTL_UTIL_H
#define DROVER_KUBECTL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when kubectl is on PATH. */
bool kc_available(void);
/* Creates /tmp/<prefix>-XXXXXX with a kubeconfig for http://127.0.0.1:port (namespace
 * default). 0, or -1 when the directory cannot be made. */
int kc_setup(uint16_t port, const char *prefix);
const char *kc_dir(void);
const char *kc_config(void);
/* Writes text into the directory as name. */
void kc_write(const char *name, const char *text);
/* Runs `kubectl ARGS` (stderr too) into out; returns its exit status, or -1. */
int kc_run(char *out, size_t n, const char *args);
/* Prints ok or FAIL (with the output) and counts failures. */
void kc_expect(bool ok, const char *what, const char *out);
int kc_failures(void);
/* Removes the directory. */
void kc_cleanup(void);

#endif
