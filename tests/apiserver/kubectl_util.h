/*
 * kubectl_util.h - real kubectl against the test API server, for tests: a temporary directory
 * with a kubeconfig pointing at the server (and kubectl's cache, so runs share no discovery
 * cache), running kubectl with a request timeout, and counting failed expectations.
 *
 * The kubectl run is $DROVER_KUBECTL when it is set (a path, to test another client than the
 * one on PATH: Debian 12's kubernetes-client is kubectl 1.20), else `kubectl` from PATH.
 */
#ifndef DROVER_KUBECTL_UTIL_H
#define DROVER_KUBECTL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when kubectl is on PATH, or DROVER_KUBECTL is set: when that names no program, it says
 * so on stderr and still returns true, so that the test fails instead of being skipped. */
bool kc_available(void);
/* The kubectl run: DROVER_KUBECTL, or "kubectl". */
const char *kc_program(void);
/* One line naming the kubectl run and its version (`kubectl version --client`), as
 * "kubectl: PATH (vX.Y.Z)"; written into line (n bytes). */
void kc_describe(char *line, size_t n);
/* True when `kubectl COMMAND --help` lists the flag (e.g. "patch", "--subresource"): what a
 * test uses to choose between a newer kubectl's way and an older one's. */
bool kc_has_flag(const char *command, const char *flag);
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
