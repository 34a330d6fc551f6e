/*
 * playground_cmd.c - `drover playground`: the Kubernetes side on a laptop, in one command, in
 * the spirit of kwokctl. It is not Kubernetes: there is no kubelet, no container runs, no
 * admission webhook is called. It is enough for real kubectl and `drover run` as they are.
 *
 * Steps, all in this process: start the in-memory API server (src/apiserver) on 127.0.0.1 with
 * the TrainingJob, PodGroup and Queue CRDs installed; write a kubeconfig for it into a directory
 * (--dir, else a new /tmp/drover-playground-XXXXXX); register a cluster file's nodes with the
 * emulator (src/emulate: kubelet's part, pods Running after the start delay, Succeeded after
 * --pod-seconds); print the lines to export the kubeconfig and to submit the example job; run
 * the controller (`drover run`'s) until SIGINT or SIGTERM; stop everything, print what it did
 * and remove the kubeconfig (the store was in memory: nothing of it is left).
 *
 * Example: `drover playground` then, in another terminal, `export KUBECONFIG=...`,
 * `kubectl apply --validate=false -f examples/trainingjob.yaml` and `kubectl get tj -w`: mnist
 * goes Pending -> Running -> Succeeded in about --pod-seconds / --speed seconds.
 *
 * The API server answers discovery and OpenAPI from documents recorded from a real
 * kube-apiserver (tests/fixtures/k8s; installed under <prefix>/share/drover/k8s): they are found
 * beside the data directory (datadir.h), as <data>/../k8s or <data>/../tests/fixtures/k8s.
 */
#define _DEFAULT_SOURCE /* realpath (glibc declares it for X/Open, not plain POSIX 2008) */
#include "cli.h"
#include "datadir.h"
#include "logfmt.h"

#include "apiserver.h"
#include "drover/controller.h"
#include "drover/emulator.h"
#include "drover/policy.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PG_PATH 4096

typedef struct playground_opts {
    const char *cluster, *dir, *policy, *profiles, *log_format;
    double speed, pod_seconds;
    bool verbose;
} playground_opts;

/* A pod without drover.dev/duration-seconds (examples/trainingjob.yaml's) runs this long. */
#define DEF_POD_SECONDS 60.0
#define MAX_POD_SECONDS 86400.0

#define AT(field) .at = offsetof(playground_opts, field)
static const cli_flag playground_flags[] = {
    {.name = "cluster",
     .kind = FLAG_TEXT,
     AT(cluster),
     .arg = "FILE",
     .help = "the nodes to emulate (YAML; docs/formats.md; default: the built-in\n"
             "cluster, 8 nodes of 32 CPUs in two racks)"},
    {.name = "dir",
     .kind = FLAG_TEXT,
     AT(dir),
     .arg = "DIR",
     .help = "where to write the kubeconfig (created if missing; default: a new\n"
             "/tmp/drover-playground-XXXXXX, removed at the end)"},
    {.name = "policy",
     .kind = FLAG_TEXT,
     AT(policy),
     .arg = "NAME",
     .help = "the policy drover run schedules with (default: drover)"},
    {.name = "profiles",
     .kind = FLAG_TEXT,
     AT(profiles),
     .arg = "FILE",
     .help = "more policies in YAML (docs/policies.md) that --policy can name"},
    {.name = "speed",
     .kind = FLAG_NUMBER,
     AT(speed),
     .arg = "X",
     .lo = 1e-3,
     .hi = 1000,
     .help = "emulated seconds per real second (default: 1)"},
    {.name = "pod-seconds",
     .kind = FLAG_NUMBER,
     AT(pod_seconds),
     .arg = "S",
     .lo = 0,
     .hi = MAX_POD_SECONDS,
     .help = "emulated seconds a pod runs before it succeeds when it has no\n"
             "drover.dev/duration-seconds annotation (default: 60; 0: until deleted)"},
    {.name = "log-format",
     .kind = FLAG_CHOICE,
     AT(log_format),
     .arg = "F",
     .choices = CLI_LOG_FORMATS,
     .help = "text (default) or json, as drover run's"},
    {.name = "verbose",
     .short_name = 'v',
     .kind = FLAG_SWITCH,
     AT(verbose),
     .help = "also log informational messages (as drover run -v)"},
};
#undef AT

const cli_command playground_command = {
    .name = "playground",
    .about = "Tries the Kubernetes side without a cluster: starts an in-memory API server on\n"
             "127.0.0.1 that real kubectl accepts (the TrainingJob, PodGroup and Queue CRDs\n"
             "installed), emulated nodes from a cluster file (as drover emulate) and the\n"
             "controller (as drover run), writes a kubeconfig and prints the kubectl lines to\n"
             "submit examples/trainingjob.yaml and watch it. Not Kubernetes: no kubelet, no\n"
             "containers, no admission webhooks; everything is lost when it stops. Runs until\n"
             "SIGINT or SIGTERM. See docs/running.md, \"The first hour\".\n",
    .footer = "Exit status: 0 stopped by a signal; 1 something failed to start or the controller\n"
              "failed; 2 bad usage or bad input (cluster file, policy, --dir).\n",
    .flags = playground_flags,
    .nflags = (int)(sizeof playground_flags / sizeof playground_flags[0]),
};

/* Set by the signal handler (any thread), read by the controller's loop: lock-free atomic. */
static atomic_int playground_stop;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler's flag must be lock-free");

static void on_playground_signal(int sig)
{
    (void)sig;
    atomic_store(&playground_stop, 1);
}

/* What the playground holds while it runs; torn down by playground_fini in reverse. */
typedef struct playground {
    char data[PG_PATH];     /* the data directory (datadir.h) */
    char fixtures[PG_PATH]; /* the recorded discovery and OpenAPI documents */
    char dir[PG_PATH];      /* where the kubeconfig is */
    char kubeconfig[PG_PATH + 16];
    bool made_dir; /* dir is a mkdtemp directory of ours: removed at the end */
    drv_apiserver *api;
    drv_emulator *emu;
    drv_emu_node *nodes;
    int32_t nnodes;
    drv_kube_config cfg;
} playground;

static bool has_file(const char *dir, const char *name)
{
    char p[PG_PATH];
    struct stat sb;
    int n = snprintf(p, sizeof p, "%s/%s", dir, name);
    return n > 0 && (size_t)n < sizeof p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The data directory and the API server's recorded documents beside it. 0 or the status. */
static int find_fixtures(playground *pg)
{
    char why[1024];
    if (data_dir_find(NULL, pg->data, sizeof pg->data, why, sizeof why) != 0) {
        fprintf(stderr, "drover playground: %s\n", why);
        return EXIT_USAGE;
    }
    char *real = realpath(pg->data, NULL); /* build/../data as the user would write it */
    if (real && strlen(real) < sizeof pg->data)
        snprintf(pg->data, sizeof pg->data, "%s", real);
    free(real);
    static const char *const rel[] = {"../k8s", "../tests/fixtures/k8s"};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        int n = snprintf(pg->fixtures, sizeof pg->fixtures, "%s/%s", pg->data, rel[i]);
        if (n > 0 && (size_t)n < sizeof pg->fixtures &&
            has_file(pg->fixtures, "openapi/v3-index.json"))
            return 0;
    }
    fprintf(stderr,
            "drover playground: the API server's recorded documents are missing: expected "
            "openapi/v3-index.json under %s/../k8s (installed) or %s/../tests/fixtures/k8s "
            "(source tree)\n",
            pg->data, pg->data);
    return EXIT_USAGE;
}

/* --dir (created when missing) or a new temporary directory. 0 or the status. */
static int make_dir(playground *pg, const char *dir)
{
    if (!dir) {
        snprintf(pg->dir, sizeof pg->dir, "/tmp/drover-playground-XXXXXX");
        if (!mkdtemp(pg->dir)) {
            fprintf(stderr, "drover playground: cannot create %s: %s\n", pg->dir, strerror(errno));
            return EXIT_RUN;
        }
        pg->made_dir = true;
    } else {
        struct stat sb;
        if (strlen(dir) >= sizeof pg->dir - 16 || (mkdir(dir, 0700) != 0 && errno != EEXIST) ||
            stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr,
                    "drover playground: --dir %s: expected a directory it can create or "
                    "write into\n",
                    dir);
            return EXIT_USAGE;
        }
        snprintf(pg->dir, sizeof pg->dir, "%s", dir);
    }
    snprintf(pg->kubeconfig, sizeof pg->kubeconfig, "%s/kubeconfig", pg->dir);
    return 0;
}

/* The kubeconfig kubectl and the controller both read: plain http on loopback (a token is
 * needed by neither; one is given because drover run expects a user). 0 or the status. */
static int write_kubeconfig(playground *pg)
{
    FILE *f = fopen(pg->kubeconfig, "w");
    if (!f) {
        fprintf(stderr, "drover playground: cannot write %s: %s\n", pg->kubeconfig,
                strerror(errno));
        return EXIT_RUN;
    }
    fprintf(f,
            "# drover playground: the in-memory API server (gone when the playground stops)\n"
            "apiVersion: v1\nkind: Config\nclusters:\n- name: playground\n  cluster:\n"
            "    server: http://127.0.0.1:%u\nusers:\n- name: playground\n  user:\n"
            "    token: playground\ncontexts:\n- name: playground\n  context:\n"
            "    cluster: playground\n    user: playground\n    namespace: default\n"
            "current-context: playground\n",
            drv_apiserver_port(pg->api));
    if (fclose(f) != 0) {
        fprintf(stderr, "drover playground: cannot write %s\n", pg->kubeconfig);
        return EXIT_RUN;
    }
    return 0;
}

/* The API server, its kubeconfig, and the configuration the controller and emulator use. */
static int start_api(playground *pg)
{
    drv_diag d = {{0}};
    drv_apiserver_opts ao = {.fixture_dir = pg->fixtures,
                             .crd_installed = true,
                             .podgroup_crd = true,
                             .queue_crd = true,
                             .pod_resize = true};
    if (drv_apiserver_start(&pg->api, &ao, &d) != 0) {
        fprintf(stderr, "drover playground: %s\n", d.msg);
        return EXIT_RUN;
    }
    int status = write_kubeconfig(pg);
    if (status)
        return status;
    if (drv_kubeconfig_load(&pg->cfg, pg->kubeconfig, NULL, &d) != 0) {
        fprintf(stderr, "drover playground: %s\n", d.msg);
        return EXIT_RUN;
    }
    return 0;
}

/* The emulated nodes, registered and kept Ready. */
static int start_emulator(playground *pg, const playground_opts *po, double pod_start)
{
    drv_diag d = {{0}};
    drv_emulator_opts eo;
    drv_emulator_opts_default(&eo);
    eo.speed = po->speed;
    if (pod_start >= 0)
        eo.start_delay_s = pod_start;
    eo.default_duration_s = po->pod_seconds;
    drv_kube_config cfg = pg->cfg;
    cfg.qps = 50; /* as drover emulate: a status write per pod step and node heartbeat */
    cfg.burst = 100;
    cfg.component = "emulate";
    if (drv_emulator_new(&pg->emu, &cfg, pg->nodes, pg->nnodes, &eo, &d) != 0 ||
        drv_emulator_start(pg->emu, &d) != 0) {
        fprintf(stderr, "drover playground: %s\n", d.msg);
        return EXIT_RUN;
    }
    return 0;
}

/* What the user types next, with the example's path as it is from here. */
static void say_next(const playground *pg, const playground_opts *po)
{
    /* examples/ is data/'s sibling in the source tree and in an install (share/drover/); the
     * relative path when the working directory has it (the source tree's, as the docs say) */
    char ex[PG_PATH + 64] = "examples/trainingjob.yaml";
    size_t n = strlen(pg->data);
    if (!has_file(".", ex) && has_file(pg->data, "../examples/trainingjob.yaml")) {
        if (n >= 5 && strcmp(pg->data + n - 5, "/data") == 0)
            snprintf(ex, sizeof ex, "%.*s/examples/trainingjob.yaml", (int)(n - 5), pg->data);
        else
            snprintf(ex, sizeof ex, "%s/../examples/trainingjob.yaml", pg->data);
    }
    cli_say("API server on http://127.0.0.1:%u (in memory; not Kubernetes: no kubelet, no "
            "containers, no admission webhooks), %d emulated nodes (speed %g, pods succeed "
            "after %g s), drover run with policy %s",
            drv_apiserver_port(pg->api), pg->nnodes, po->speed, po->pod_seconds, po->policy);
    printf("\nIn another terminal:\n\n"
           "  export KUBECONFIG=%s\n"
           "  kubectl apply --validate=false -f %s\n"
           "  kubectl get tj -w\n"
           "  kubectl describe tj mnist\n"
           "  kubectl get pods -o wide\n"
           "  kubectl get podgroups,queues\n\n"
           "Ctrl-C stops the playground (its objects are in memory only).\n\n",
           pg->kubeconfig, ex);
    fflush(stdout);
}

/* The controller, as drover run's, until a signal. */
static int run_until_signal(playground *pg, const playground_opts *po, const drv_profile *prof)
{
    drv_diag d = {{0}};
    drv_kube_config cfg = pg->cfg;
    cfg.qps = DRV_CTRL_DEF_QPS;
    cfg.burst = DRV_CTRL_DEF_BURST;
    cfg.component = "run";
    drv_ctrl_opts co = {.profile = prof, .scheduler = "drover", .explain = cli_explain_event};
    drv_ctrl *c = NULL;
    if (drv_ctrl_new(&c, &cfg, &co, &d) != 0) {
        fprintf(stderr, "drover playground: %s\n", d.msg);
        return EXIT_RUN;
    }
    say_next(pg, po);
    int rc = drv_ctrl_run(c, &playground_stop, &d);
    drv_ctrl_stats st = drv_ctrl_get_stats(c);
    drv_ctrl_free(c);
    drv_emulator_stats es = drv_emulator_get_stats(pg->emu);
    cli_say("stopped: %ld jobs (%ld finished), %ld pods bound, %ld started and %ld succeeded on "
            "emulated nodes",
            st.jobs, st.jobs_done, st.created_bound + st.binds, es.started, es.succeeded);
    if (rc != 0) {
        cli_log_write(stderr, "error", d.msg);
        return EXIT_RUN;
    }
    return 0;
}

static void playground_fini(playground *pg)
{
    drv_emulator_free(pg->emu);
    drv_apiserver_free(pg->api);
    drv_kube_config_fini(&pg->cfg);
    drv_free(pg->nodes);
    if (pg->kubeconfig[0])
        unlink(pg->kubeconfig);
    if (pg->made_dir)
        rmdir(pg->dir);
}

int cmd_playground(int argc, char **argv)
{
    playground_opts po = {.policy = "drover", .speed = 1, .pod_seconds = DEF_POD_SECONDS};
    int first, status = cli_begin(&playground_command, argc, argv, &po, &first);
    if (status >= 0)
        return status;
    drv_profile prof;
    if (cli_policy_named("playground", po.profiles, po.policy, &prof) != 0)
        return EXIT_USAGE;
    playground pg;
    memset(&pg, 0, sizeof pg);
    double pod_start = -1;
    if ((status = cli_emulated_nodes(po.cluster, "playground", &pg.nodes, &pg.nnodes,
                                     &pod_start)) != 0 ||
        (status = find_fixtures(&pg)) != 0 || (status = make_dir(&pg, po.dir)) != 0) {
        playground_fini(&pg);
        return status;
    }
    cli_log_setup(po.log_format, po.verbose, "playground");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_playground_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if ((status = start_api(&pg)) == 0 && (status = start_emulator(&pg, &po, pod_start)) == 0)
        status = run_until_signal(&pg, &po, &prof);
    playground_fini(&pg);
    return status;
}
