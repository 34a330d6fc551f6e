/*
 * emulate_cmd.c - `drover emulate`: play kubelet for a cluster file's nodes on a Kubernetes API
 * server (docs/emulate.md), until SIGINT or SIGTERM.
 *
 * Steps: parse the flags; read the cluster file into the emulator's node list (bad input exits 2
 * before any traffic); read the kubeconfig; start the emulator; wait for a signal; print what
 * it did.
 */
#include "cli.h"
#include "logfmt.h"

#include "drover/emulator.h"

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct emulate_opts {
    const char *cluster, *kubeconfig, *context, *log_format;
    double speed;
    double start_delay; /* < 0: not given (the cluster file's timing decides) */
} emulate_opts;

#define AT(field) .at = offsetof(emulate_opts, field)
static const cli_flag emulate_flags[] = {
    {.name = "cluster",
     .kind = FLAG_TEXT,
     AT(cluster),
     .arg = "FILE",
     .help = "the nodes to emulate (YAML; docs/formats.md). Required"},
    {.name = "kubeconfig",
     .kind = FLAG_TEXT,
     AT(kubeconfig),
     .arg = "FILES",
     .help = "kubeconfig files, ':'-separated (default: $KUBECONFIG, or\n~/.kube/config)"},
    {.name = "context",
     .kind = FLAG_TEXT,
     AT(context),
     .arg = "NAME",
     .help = "kubeconfig context (default: current-context)"},
    {.name = "speed",
     .kind = FLAG_NUMBER,
     AT(speed),
     .arg = "X",
     .lo = 1e-6,
     .hi = DRV_EMU_MAX_SPEED,
     .help = "emulated seconds per real second (default: 1)"},
    {.name = "start-delay",
     .kind = FLAG_NUMBER,
     AT(start_delay),
     .arg = "S",
     .lo = 0,
     .hi = 86400,
     .help = "emulated seconds from binding to Running (default: the cluster\n"
             "file's timing.podStartSeconds, which defaults to 5)"},
    {.name = "log-format",
     .kind = FLAG_CHOICE,
     AT(log_format),
     .arg = "F",
     .choices = CLI_LOG_FORMATS,
     .help = "text (default): a timestamp, the level and the message a line; json:\n"
             "one object a line with ts, level, component and msg"},
};
#undef AT

const cli_command emulate_command = {
    .name = "emulate",
    .about = "Plays kubelet for the nodes of a cluster file (the format of `drover sim "
             "--cluster`),\n"
             "in the spirit of KWOK: registers them on the API server, keeps them Ready, and "
             "moves\n"
             "the pods bound to them from Pending to Running (after the start delay) and to\n"
             "Succeeded (after the pod's drover.dev/duration-seconds annotation; without it the "
             "pod\n"
             "runs until deleted). Runs until SIGINT or SIGTERM. See docs/emulate.md.\n",
    .footer = "Exit status: 0 stopped by a signal; 1 the API server refused or could not be "
              "reached;\n"
              "2 bad usage or bad input (reported as file:line: field: what was expected).\n",
    .flags = emulate_flags,
    .nflags = (int)(sizeof emulate_flags / sizeof emulate_flags[0]),
};

/* The signal that stops it: written by the handler, which may run on any thread (the
 * emulator's informer and worker too), read by the main thread: a lock-free atomic, which C11
 * allows a handler to write (7.14.1.1), where a volatile sig_atomic_t is safe within one thread
 * only. */
static atomic_int emulate_signal;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler's flag must be lock-free");

static void on_emulate_signal(int sig)
{
    atomic_store(&emulate_signal, sig);
}

/* Class cls's labels and taints as the emulator writes them ("k=v,..." and
 * "k=v:Effect,..."). DRV_ERANGE when they do not fit its fields. */
static int node_meta(const drv_cluster_spec *cl, int32_t cls, drv_emu_node *e)
{
    e->labels[0] = e->taints[0] = 0;
    if (cls <= 0 || cls >= cl->nclasses)
        return 0;
    const drv_nodeclass *k = &cl->classes[cls];
    size_t n = 0, m = 0;
    for (int32_t i = 0; i < k->nlabels; i++) {
        int w = snprintf(e->labels + n, sizeof e->labels - n, "%s%s=%s", i ? "," : "",
                         drv_strtab_str(cl->names, k->labels[i].key),
                         drv_strtab_str(cl->names, k->labels[i].value));
        if (w < 0 || (size_t)w >= sizeof e->labels - n)
            return DRV_ERANGE;
        n += (size_t)w;
    }
    for (int32_t i = 0; i < k->ntaints; i++) {
        const drv_taint *t = &k->taints[i];
        const char *v = drv_strtab_str(cl->names, t->value);
        int w = snprintf(e->taints + m, sizeof e->taints - m, "%s%s%s%s:%s", i ? "," : "",
                         drv_strtab_str(cl->names, t->key), *v ? "=" : "", v,
                         drv_effect_name(t->effect));
        if (w < 0 || (size_t)w >= sizeof e->taints - m)
            return DRV_ERANGE;
        m += (size_t)w;
    }
    return 0;
}

int cli_emulated_nodes(const char *file, const char *who, drv_emu_node **nodes, int32_t *n,
                       double *pod_start)
{
    drv_diag d = {{0}};
    drv_cluster_spec cl = {0};
    if (!file)
        drv_cluster_default(&cl);
    else if (drv_cluster_load(&cl, file, &d)) {
        fprintf(stderr, "drover %s: %s\n", who, d.msg);
        return EXIT_USAGE;
    }
    *pod_start = file ? cl.timing.pod_start : -1;
    *nodes = drv_calloc((size_t)(cl.n > 0 ? cl.n : 1), sizeof **nodes);
    if (!*nodes) {
        drv_cluster_fini(&cl);
        fprintf(stderr, "drover %s: out of memory\n", who);
        return EXIT_RUN;
    }
    for (int32_t i = 0; i < cl.n; i++) {
        drv_emu_node *e = &(*nodes)[i];
        snprintf(e->name, sizeof e->name, "%s", cl.nodes[i].name);
        snprintf(e->zone, sizeof e->zone, "%s", cl.nodes[i].zone);
        snprintf(e->rack, sizeof e->rack, "%s", cl.nodes[i].rack);
        e->alloc = cl.nodes[i].alloc;
        e->unschedulable = cl.nodes[i].unschedulable;
        if (node_meta(&cl, cl.nodes[i].node_class, e) != 0) {
            fprintf(stderr,
                    "drover %s: %s: node %s: its labels and taints are too long for the "
                    "emulator (%zu and %zu bytes as text at most)\n",
                    who, file, e->name, sizeof e->labels - 1, sizeof e->taints - 1);
            drv_cluster_fini(&cl);
            drv_free(*nodes);
            *nodes = NULL;
            return EXIT_USAGE;
        }
    }
    *n = cl.n;
    drv_cluster_fini(&cl);
    return 0;
}

/* Starts the emulator, waits for SIGINT or SIGTERM, stops it. Returns the exit status; on
 * failure d says why. */
static int emulate_until_signal(drv_emulator *e, const drv_kube_config *cfg, int32_t n,
                                const drv_emulator_opts *o, drv_diag *d)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_emulate_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (drv_emulator_start(e, d) != 0)
        return EXIT_RUN;
    cli_say("%d nodes registered on %s (speed %g, start delay %g s); SIGINT or SIGTERM stops", n,
            cfg->server, o->speed, o->start_delay_s);
    while (!atomic_load(&emulate_signal)) {
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
    drv_emulator_stop(e);
    drv_emulator_stats s = drv_emulator_get_stats(e);
    cli_say("stopped (signal %d): %ld pods started, %ld succeeded, %ld deletions confirmed, "
            "%ld failed writes",
            atomic_load(&emulate_signal), s.started, s.succeeded, s.deleted, s.errors);
    return 0;
}

int cmd_emulate(int argc, char **argv)
{
    drv_emulator_opts o;
    drv_emulator_opts_default(&o);
    emulate_opts eo = {.speed = o.speed, .start_delay = -1};
    int first, status = cli_begin(&emulate_command, argc, argv, &eo, &first);
    if (status >= 0)
        return status;
    if (!eo.cluster) {
        fprintf(stderr, "drover emulate: --cluster FILE is required (see drover emulate --help)\n");
        return EXIT_USAGE;
    }
    drv_emu_node *nodes = NULL;
    int32_t n = 0;
    double pod_start;
    if ((status = cli_emulated_nodes(eo.cluster, "emulate", &nodes, &n, &pod_start)) != 0)
        return status;
    o.speed = eo.speed;
    if (eo.start_delay >= 0)
        o.start_delay_s = eo.start_delay;
    else if (pod_start >= 0)
        o.start_delay_s = pod_start;
    drv_diag d = {{0}};
    drv_kube_config cfg = {0};
    if (drv_kubeconfig_load(&cfg, eo.kubeconfig, eo.context, &d)) {
        drv_free(nodes);
        fprintf(stderr, "drover emulate: %s\n", d.msg);
        return EXIT_USAGE;
    }
    /* One status write per pod step and per node heartbeat: more than client-go's 5 QPS. */
    cfg.qps = 50;
    cfg.burst = 100;
    cfg.component = "emulate"; /* User-Agent drover-emulate/<version>, told apart from run's */
    cli_log_setup(eo.log_format, false, "emulate");
    drv_emulator *e = NULL;
    status = EXIT_USAGE;
    if (drv_emulator_new(&e, &cfg, nodes, n, &o, &d) == 0)
        status = emulate_until_signal(e, &cfg, n, &o, &d);
    if (status) /* the library's messages mostly start with "emulate: " already */
        fprintf(stderr, "drover emulate: %s\n",
                strncmp(d.msg, "emulate: ", 9) == 0 ? d.msg + 9 : d.msg);
    drv_emulator_free(e);
    drv_kube_config_fini(&cfg);
    drv_free(nodes);
    return status;
}
