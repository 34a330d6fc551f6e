/*
 * run_cmd.c - `drover run`: the controller against a Kubernetes API server (docs/running.md).
 *
 * Steps: parse and check the flags (the lease and metrics addresses are split here, so a typo
 * exits 2 before anything connects); find the policy (the same lookup as `drover sim`); read the
 * kubeconfig or the pod's service account; serve metrics if asked; run the controller until
 * SIGINT or SIGTERM; print what it did.
 */
#include "cli.h"
#include "logfmt.h"

#include "drover/controller.h"
#include "drover/policy.h"

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_opts {
    const char *policy, *profiles, *kubeconfig, *context, *ns, *sched, *lease, *maddr;
    const char *gpu_type_label;
    const char *topology;
    const char *log_format;
    const char *bind_mode; /* "nodename" or "binding" (--bind-mode) */
    bool incluster, verbose, elect;
    double qps;
    int burst, binders;
} run_opts;

#define AT(field) .at = offsetof(run_opts, field)
static const cli_flag run_flags[] = {
    {.name = "policy",
     .kind = FLAG_TEXT,
     AT(policy),
     .arg = "NAME",
     .help = "the policy (default: drover); see `drover policies`"},
    {.name = "profiles",
     .kind = FLAG_TEXT,
     AT(profiles),
     .arg = "FILE",
     .help = "more policies in YAML (docs/policies.md) that --policy can name; a\n"
             "profile named like a built-in one replaces it"},
    CLI_KUBE_FLAGS(run_opts, kubeconfig, context, incluster),
    {.name = "namespace",
     .kind = FLAG_TEXT,
     AT(ns),
     .arg = "NS",
     .help = "TrainingJobs of this namespace only (default: every namespace)"},
    {.name = "scheduler-name",
     .kind = FLAG_TEXT,
     AT(sched),
     .arg = "S",
     .help = "the schedulerName served (default: drover)"},
    {.name = "gpu-type-label",
     .kind = FLAG_TEXT,
     AT(gpu_type_label),
     .arg = "KEY",
     .help = "the node label whose value is a node's GPU type; a job's GPU pods\n"
             "stay on one type (default: nvidia.com/gpu.product, as GPU Feature\n"
             "Discovery sets it; \"\": GPU types not read)"},
    {.name = "topology",
     .kind = FLAG_TEXT,
     AT(topology),
     .arg = "KEYS",
     .help = "topology levels: node label keys, widest first, comma-separated\n"
             "(e.g. topology.kubernetes.io/zone,cloud.provider.com/topology-rack);\n"
             "a TrainingJob's or PodGroup pods' kueue.x-k8s.io/podset-required-\n"
             "topology (or -preferred-) annotation binds its gang to one (default:\n"
             "none)"},
    {.name = "kube-api-qps",
     .kind = FLAG_NUMBER,
     AT(qps),
     .arg = "Q",
     .lo = 1,
     .hi = 1e6,
     .help = "requests per second to the API server, all of the controller's\n"
             "clients together (default: 5000; kube-scheduler's 50 would hold the\n"
             "8 binder threads to a small fraction of the API server's pace)"},
    {.name = "kube-api-burst",
     .kind = FLAG_INT,
     AT(burst),
     .arg = "B",
     .lo = 1,
     .hi = 1e6,
     .help = "burst of requests above the rate (default: 5000: a start's lists\n"
             "and the pods of 1,000 gangs of 4 go out without waiting)"},
    {.name = "binders",
     .kind = FLAG_INT,
     AT(binders),
     .arg = "N",
     .lo = 1,
     .hi = DRV_CTRL_MAX_BINDERS,
     .help = "the most pod creations, bindings and deletions in flight at once\n"
             "(one thread each; default: 32). How many are, from 8 up to N, follows\n"
             "their latency: grown while answers come as fast as unloaded, shrunk\n"
             "when they take over twice that (the server queues), halved on a 429;\n"
             "all within --kube-api-qps"},
    {.name = "bind-mode",
     .kind = FLAG_CHOICE,
     AT(bind_mode),
     .arg = "M",
     .choices = "nodename|binding",
     .help = "nodename (default): a pod is created with spec.nodeName, one request;\n"
             "binding: created unbound, then bound through pods/binding, two\n"
             "requests a pod, for clusters whose admission refuses spec.nodeName\n"
             "at creation"},
    {.name = "leader-elect",
     .kind = FLAG_SWITCH,
     AT(elect),
     .help = "schedule only while holding a Lease, so several replicas can run\n"
             "(one schedules; another takes over once the lease has gone about\n"
             "15 s without renewal, on its own clock)"},
    {.name = "lease",
     .kind = FLAG_TEXT,
     AT(lease),
     .arg = "NS/NAME",
     .help = "the Lease for --leader-elect (default: drover-system/drover)"},
    {.name = "metrics-addr",
     .kind = FLAG_TEXT,
     AT(maddr),
     .arg = "A",
     .help = "serve Prometheus metrics on /metrics and health on /healthz and\n"
             "/readyz at A = [HOST]:PORT; without HOST only on loopback\n"
             "(\":8080\" is 127.0.0.1:8080; \"0.0.0.0:8080\" or \"[::]:8080\" for\n"
             "every interface, \":0\" for any free port); off by default"},
    {.name = "log-format",
     .kind = FLAG_CHOICE,
     AT(log_format),
     .arg = "F",
     .choices = CLI_LOG_FORMATS,
     .help = "text (default): a timestamp, the level and the message a line; json:\n"
             "one object a line with ts, level, component and msg"},
    {.name = "verbose",
     .short_name = 'v',
     .kind = FLAG_SWITCH,
     AT(verbose),
     .help = "also log informational messages: caches synced, lease taken,\n"
             "conflicts retried, progress scrapes that failed (failed requests\n"
             "are logged as warnings either way)"},
};
#undef AT

const cli_command run_command = {
    .name = "run",
    .about = "Runs Drover in a Kubernetes cluster: a controller for TrainingJobs "
             "(drover.dev/v1alpha1)\n"
             "that creates their pods, schedules them with one policy and binds them, scales "
             "elastic\n"
             "jobs, and writes each job's status and Events. Node labels and taints, pod\n"
             "templates' nodeSelector, node affinity and tolerations, PriorityClasses and\n"
             "Queues (queues.drover.dev: quota per team, spec.queue) are honoured. Install the\n"
             "CRDs and permissions first (deploy/; docs/running.md). Runs until SIGINT or\n"
             "SIGTERM.\n",
    .footer = "Exit status: 0 stopped by a signal; 1 the controller failed (out of memory); 2 bad\n"
              "usage or configuration (unknown policy, unreadable kubeconfig).\n",
    .flags = run_flags,
    .nflags = (int)(sizeof run_flags / sizeof run_flags[0]),
};

/* What the flags say, checked and split: the Lease's namespace and name, the metrics address. */
typedef struct run_plan {
    char lease_ns[254], lease_name[254];
    char mhost[64]; /* empty: loopback (DRV_METRICS_DEFAULT_HOST) */
    long mport;     /* -1: no metrics */
} run_plan;

/* Set by the signal handler, which may run on any thread of the process (the controller's
 * informers, binders...), read by the controller's loop: a lock-free atomic, which C11 allows a
 * handler to write (7.14.1.1), where a volatile sig_atomic_t is only safe within one thread. */
static atomic_int stop_flag;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler's flag must be lock-free");

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stop_flag, 1);
}

/* --lease NS/NAME into the plan; -1 with a message when it is not that. */
static int split_lease(const char *lease, run_plan *p)
{
    const char *slash = strchr(lease, '/');
    if (!slash || slash == lease || !slash[1] || strchr(slash + 1, '/') ||
        (size_t)(slash - lease) >= sizeof p->lease_ns ||
        strlen(slash + 1) >= sizeof p->lease_name) {
        fprintf(stderr, "drover run: --lease: expected NAMESPACE/NAME, found '%s'\n", lease);
        return -1;
    }
    snprintf(p->lease_ns, sizeof p->lease_ns, "%.*s", (int)(slash - lease), lease);
    snprintf(p->lease_name, sizeof p->lease_name, "%s", slash + 1);
    return 0;
}

/* --metrics-addr [HOST]:PORT into the plan; -1 with a message when it is not that. */
static int split_metrics_addr(const char *maddr, run_plan *p)
{
    drv_diag d = {{0}};
    uint16_t port;
    if (drv_metrics_parse_addr(maddr, p->mhost, sizeof p->mhost, &port, &d) != 0) {
        fprintf(stderr, "drover run: --metrics-addr: %s\n", d.msg);
        return -1;
    }
    p->mport = port;
    return 0;
}

/* Checks the flags against each other and splits the addresses. */
static int check_opts(run_opts *o, run_plan *p)
{
    if (o->incluster && (o->kubeconfig || o->context)) {
        fputs("drover run: --in-cluster cannot be combined with --kubeconfig or --context\n",
              stderr);
        return -1;
    }
    *p = (run_plan){.lease_ns = "drover-system", .lease_name = "drover", .mport = -1};
    char buf[1024];
    const char *keys[DRV_MAX_TOPO], *why = "";
    if (o->topology && drv_topology_split(o->topology, buf, sizeof buf, keys, &why) < 0) {
        fprintf(stderr,
                "drover run: --topology %s: %s (expected node label keys, widest level "
                "first, comma-separated)\n",
                o->topology, why);
        return -1;
    }
    if (o->lease) {
        if (split_lease(o->lease, p) != 0)
            return -1;
        o->elect = true;
    }
    return o->maddr ? split_metrics_addr(o->maddr, p) : 0;
}

/* Serves metrics at the plan's address. Returns 0 or the exit status, with the message. */
static int start_metrics(const run_opts *o, const run_plan *p, drv_metrics **m)
{
    drv_diag d = {{0}};
    uint16_t port = 0;
    if (drv_metrics_new(m) != 0) {
        fputs("drover run: out of memory\n", stderr);
        return EXIT_RUN;
    }
    if (drv_metrics_serve(*m, p->mhost[0] ? p->mhost : NULL, (uint16_t)p->mport, &port, &d) != 0) {
        fprintf(stderr, "drover run: --metrics-addr %s: %s\n", o->maddr, d.msg);
        drv_metrics_free(*m);
        *m = NULL;
        return EXIT_USAGE;
    }
    bool v6 = strchr(p->mhost, ':') != NULL;
    cli_say("metrics on http://%s%s%s:%u/metrics", v6 ? "[" : "",
            p->mhost[0] ? p->mhost : DRV_METRICS_DEFAULT_HOST, v6 ? "]" : "", port);
    return 0;
}

/* Runs the controller until a signal stops it, then prints what it did. */
static int run_controller(drv_ctrl *c, const run_opts *o, const run_plan *p)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    char lease[600] = "";
    if (o->elect)
        snprintf(lease, sizeof lease, ", leader election on lease %s/%s", p->lease_ns,
                 p->lease_name);
    cli_say("policy %s, scheduler name %s, %s%s", o->policy, o->sched,
            o->ns ? o->ns : "every namespace", lease);
    drv_diag d = {{0}};
    int rc = drv_ctrl_run(c, &stop_flag, &d);
    drv_ctrl_stats st = drv_ctrl_get_stats(c);
    /* what happened to pods, each counted once: created already bound (spec.nodeName), created
     * unbound (bound later by a Binding, or never), bound by a Binding, CPU limits resized in
     * place; and every non-2xx answer of the API budget, retried ones included */
    cli_say("stopped after %ld cycles: %ld jobs (%ld finished), pods: %ld created bound, %ld "
            "created unbound, %ld bound by Binding, %ld deleted, %ld resized; %ld failed "
            "requests",
            st.cycles, st.jobs, st.jobs_done, st.created_bound, st.creates - st.created_bound,
            st.binds, st.deletes, st.resizes, st.api_errors);
    if (rc != 0) {
        cli_log_write(stderr, "error", d.msg);
        return EXIT_RUN;
    }
    return 0;
}

int cmd_run(int argc, char **argv)
{
    /* The API budget's defaults are for throughput (controller.h says why). */
    run_opts o = {.policy = "drover",
                  .sched = "drover",
                  .qps = DRV_CTRL_DEF_QPS,
                  .burst = DRV_CTRL_DEF_BURST,
                  .binders = DRV_CTRL_DEF_BINDERS,
                  .bind_mode = "nodename"};
    run_plan plan;
    drv_profile prof;
    int first, status = cli_begin(&run_command, argc, argv, &o, &first);
    if (status >= 0)
        return status;
    if (check_opts(&o, &plan) != 0 || cli_policy_named("run", o.profiles, o.policy, &prof) != 0)
        return EXIT_USAGE;
    drv_diag d = {{0}};
    drv_kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    int rc = o.incluster ? drv_kube_incluster(&cfg, NULL, &d)
                         : drv_kubeconfig_load(&cfg, o.kubeconfig, o.context, &d);
    if (rc != 0) {
        fprintf(stderr, "drover run: %s\n", d.msg);
        drv_kube_config_fini(&cfg);
        return EXIT_USAGE;
    }
    cfg.qps = o.qps;
    cfg.burst = o.burst;
    cfg.component = "run"; /* User-Agent drover-run/<version> */
    cli_log_setup(o.log_format, o.verbose, "run");
    drv_ctrl_opts co = {.profile = &prof,
                        .scheduler = o.sched,
                        .namespace_ = o.ns,
                        .binders = o.binders,
                        .bind_with_binding = !strcmp(o.bind_mode, "binding"),
                        .gpu_type_label = o.gpu_type_label,
                        .topology = o.topology};
    if (o.elect) {
        co.lease_namespace = plan.lease_ns;
        co.lease_name = plan.lease_name;
    }
    drv_metrics *m = NULL;
    if (o.maddr && (status = start_metrics(&o, &plan, &m)) != 0) {
        drv_kube_config_fini(&cfg);
        return status;
    }
    co.metrics = m;
    co.explain = cli_explain_event; /* a waiting job's Event shows its priority's factors */
    drv_ctrl *c = NULL;
    rc = drv_ctrl_new(&c, &cfg, &co, &d);
    drv_kube_config_fini(&cfg);
    if (rc != 0) {
        fprintf(stderr, "drover run: %s\n", d.msg);
        drv_metrics_free(m);
        return rc == DRV_ENOMEM ? EXIT_RUN : EXIT_USAGE;
    }
    status = run_controller(c, &o, &plan);
    drv_ctrl_free(c);
    drv_metrics_free(m);
    return status;
}
