/*
 * kubectl_util.c - see kubectl_util.h.
 */
#include "kubectl_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256], kcfg[512];
static int failures;

const char *kc_program(void)
{
    const char *k = getenv("DROVER_KUBECTL");
    return k && k[0] ? k : "kubectl";
}

bool kc_available(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "command -v '%.500s' >/dev/null 2>&1", kc_program());
    if (system(cmd) == 0)
        return true;
    if (strcmp(kc_program(), "kubectl") != 0) /* asked for, not there: fail, do not skip */
        fprintf(stderr, "DROVER_KUBECTL=%s: no such program\n", kc_program());
    return strcmp(kc_program(), "kubectl") != 0;
}

/* Runs the shell command cmd (stderr too) into out; its exit status, or -1. */
static int capture(char *out, size_t n, const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p) {
        out[0] = 0;
        return -1;
    }
    size_t len = fread(out, 1, n - 1, p);
    out[len] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void kc_describe(char *line, size_t n)
{
    static char out[8192];
    char cmd[600], path[512] = "", ver[64] = "unknown version";
    snprintf(cmd, sizeof cmd, "command -v '%.500s' 2>/dev/null", kc_program());
    if (capture(path, sizeof path, cmd) == 0)
        path[strcspn(path, "\n")] = 0;
    snprintf(cmd, sizeof cmd, "'%.500s' version --client -o json 2>&1", kc_program());
    const char *g = capture(out, sizeof out, cmd) == 0 ? strstr(out, "\"gitVersion\"") : NULL;
    if (g)
        sscanf(g, "\"gitVersion\" : \"%63[^\"]\"", ver);
    snprintf(line, n, "kubectl: %s (%s)", path[0] ? path : kc_program(), ver);
}

bool kc_has_flag(const char *command, const char *flag)
{
    static char out[65536];
    char cmd[600];
    snprintf(cmd, sizeof cmd, "'%.400s' %.100s --help 2>&1", kc_program(), command);
    return capture(out, sizeof out, cmd) == 0 && strstr(out, flag) != NULL;
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
    char cmd[2560];
    snprintf(cmd, sizeof cmd,
             "'%.500s' --kubeconfig %s --cache-dir %s/cache --request-timeout=10s %s 2>&1",
             kc_program(), kcfg, dir, args);
    return capture(out, n, cmd);
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
