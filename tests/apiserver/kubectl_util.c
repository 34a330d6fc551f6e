/*
 * kubectl_util.c - see kubectl_util.h.
 */
#include "kubectl_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256], kcfg[512];
static int failures;

bool kc_available(void)
{
    return system("command -v kubectl >/dev/null 2>&1") == 0;
}

const char *kc_dir(void)
{
    return dir;
}

const char *kc_config(void)
{
    return kcfg;
}

void kc_write(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int kc_setup(uint16_t port, const char *prefix)
{
    snprintf(dir, sizeof dir, "/tmp/%s-XXXXXX", prefix);
    if (!mkdtemp(dir))
        return -1;
    snprintf(kcfg, sizeof kcfg, "%s/kubeconfig", dir);
    char text[1024];
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: "
             "http://127.0.0.1:%u\nusers:\n- name: u\n  user:\n    token: test\ncontexts:\n- "
             "name: c\n  context:\n    cluster: t\n    user: u\n    namespace: default\n"
             "current-context: c\n",
             port);
    kc_write("kubeconfig", text);
    return 0;
}

int kc_run(char *out, size_t n, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "kubectl --kubeconfig %s --cache-dir %s/cache --request-timeout=10s %s 2>&1", kcfg,
             dir, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t len = fread(out, 1, n - 1, p);
    out[len] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void kc_expect(bool ok, const char *what, const char *out)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n--- output:\n%s\n", what, out);
        failures++;
    } else {
        printf("ok: %s\n", what);
    }
}

int kc_failures(void)
{
    return failures;
}

void kc_cleanup(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}
