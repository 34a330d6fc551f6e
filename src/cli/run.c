/*
 * run.c - `drover run`: the controller against a Kubernetes API server (docs/running.md).
 */
#include "cli.h"

#include "drover/kube_controller.h"
#include "drover/policy.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const usage_run =
    "usage: drover run [options]\n"
    "\n"
    "Runs Drover in a Kubernetes cluster: a controller for TrainingJobs (drover.dev/v1alpha1)\n"
    "that creates their pods, schedules them with one policy and binds them, scales elastic\n"
    "jobs, and writes each job's status and Events. Install the CRD and permissions first\n"
    "(deploy/; docs/running.md). Runs until SIGINT or SIGTERM.\n"
    "\n"
    "options:\n"
    "  --policy NAME       the policy (default: drover); see `drover policies`\n"
    "  --profiles FILE     more policies in YAML (docs/policies.md) that --policy can name\n"
    "  --kubeconfig FILES  kubeconfig files, ':'-separated (default: $KUBECONFIG, else\n"
    "                      ~/.kube/config)\n"
    "  --context NAME      kubeconfig context (default: its current-context)\n"
    "  --in-cluster        use the pod's service account instead of a kubeconfig\n"
    "  --namespace NS      TrainingJobs of this namespace only (default: every namespace)\n"
    "  --scheduler-name S  the schedulerName served (default: drover)\n"
    "  --kube-api-qps Q    requests per second to the API server (default: 50)\n"
    "  --kube-api-burst B  burst of requests above the rate (default: 100)\n"
    "  --leader-elect      schedule only while holding a Lease, so several replicas can run\n"
    "                      (one schedules; another takes over once the lease has gone about\n"
    "                      15 s without renewal, on its own clock)\n"
    "  --lease NS/NAME     the Lease for --leader-elect (default: drover-system/drover)\n"
    "  --metrics-addr A    serve Prometheus metrics on /metrics and health on /healthz and\n"
    "                      /readyz at A = [HOST]:PORT; without HOST only on loopback\n"
    "                      (\":8080\" is 127.0.0.1:8080; \"0.0.0.0:8080\" or \"[::]:8080\" for\n"
    "                      every interface, \":0\" for any free port); off by default\n"
    "  -v, --verbose       also log informational messages: caches synced, lease taken,\n"
    "                      conflicts retried, progress scrapes that failed (failed requests\n"
    "                      are logged as warnings either way)\n"
    "  -h, --help          show this help\n"
    "\n"
    "Exit status: 0 stopped by a signal; 1 the controller failed (out of memory); 2 bad\n"
    "usage or configuration (unknown policy, unreadable kubeconfig).\n";

static volatile int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static const char *arg_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "drover run: %s: expected a value\n", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int cmd_run(int argc, char **argv)
{
    const char *policy = "drover", *profiles = NULL, *kubeconfig = NULL, *context = NULL;
    const char *ns = NULL, *sched = "drover";
    const char *lease = NULL, *maddr = NULL;
    bool incluster = false, verbose = false, elect = false;
    double qps = 50;
    int burst = 100;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_run, stdout);
            return 0;
        } else if (!strcmp(a, "--in-cluster")) {
            incluster = true;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            verbose = true;
        } else if (!strcmp(a, "--leader-elect")) {
            elect = true;
        } else if (!strcmp(a, "--policy") || !strcmp(a, "--profiles") ||
                   !strcmp(a, "--kubeconfig") || !strcmp(a, "--context") ||
                   !strcmp(a, "--namespace") || !strcmp(a, "--scheduler-name") ||
                   !strcmp(a, "--kube-api-qps") || !strcmp(a, "--kube-api-burst") ||
                   !strcmp(a, "--lease") || !strcmp(a, "--metrics-addr")) {
            if (!(v = arg_value(argc, argv, &i)))
                return EXIT_USAGE;
            if (!strcmp(a, "--policy"))
                policy = v;
            else if (!strcmp(a, "--profiles"))
                profiles = v;
            else if (!strcmp(a, "--kubeconfig"))
                kubeconfig = v;
            else if (!strcmp(a, "--context"))
                context = v;
            else if (!strcmp(a, "--namespace"))
                ns = v;
            else if (!strcmp(a, "--scheduler-name"))
                sched = v;
            else if (!strcmp(a, "--lease"))
                lease = v;
            else if (!strcmp(a, "--metrics-addr"))
                maddr = v;
            else {
                char *end;
                double x = strtod(v, &end);
                bool isqps = !strcmp(a, "--kube-api-qps");
                if (*end || !(x >= 1) || (!isqps && x != (int)x) || x > 1e6) {
                    fprintf(stderr, "drover run: %s: expected %s from 1 to 1000000, found '%s'\n",
                            a, isqps ? "a number" : "a whole number", v);
                    return EXIT_USAGE;
                }
                if (isqps)
                    qps = x;
                else
                    burst = (int)x;
            }
        } else {
            fprintf(stderr, "drover run: unknown option '%s'\n\n%s", a, usage_run);
            return EXIT_USAGE;
        }
    }
    if (incluster && (kubeconfig || context)) {
        fputs("drover run: --in-cluster cannot be combined with --kubeconfig or --context\n",
              stderr);
        return EXIT_USAGE;
    }
    char lease_ns[254] = "drover-system", lease_name[254] = "drover";
    if (lease) {
        const char *slash = strchr(lease, '/');
        if (!slash || slash == lease || !slash[1] || strchr(slash + 1, '/') ||
            (size_t)(slash - lease) >= sizeof lease_ns || strlen(slash + 1) >= sizeof lease_name) {
            fprintf(stderr, "drover run: --lease: expected NAMESPACE/NAME, found '%s'\n", lease);
            return EXIT_USAGE;
        }
        snprintf(lease_ns, sizeof lease_ns, "%.*s", (int)(slash - lease), lease);
        snprintf(lease_name, sizeof lease_name, "%s", slash + 1);
        elect = true;
    }
    char mhost[64] = "";
    long mport = -1;
    if (maddr) {
        const char *colon = strrchr(maddr, ':');
        char *end = NULL;
        if (colon)
            mport = strtol(colon + 1, &end, 10);
        size_t hl = colon ? (size_t)(colon - maddr) : 0;
        const char *h = maddr;
        if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') { /* [IPv6]:port */
            h++;
            hl -= 2;
        }
        if (!colon || !colon[1] || *end || mport < 0 || mport > 65535 || hl >= sizeof mhost) {
            fprintf(stderr,
                    "drover run: --metrics-addr: expected [HOST]:PORT such as :8080, found '%s'\n",
                    maddr);
            return EXIT_USAGE;
        }
        snprintf(mhost, sizeof mhost, "%.*s", (int)hl, h);
    }
    drv_diag d = {{0}};
    drv_profile prof;
    drv_profile *fileprof = NULL;
    int nfile = 0, found = 0;
    if (profiles && drv_profile_file_load(profiles, &fileprof, &nfile, &d) != 0) {
        fprintf(stderr, "drover run: --profiles: %s\n", d.msg);
        return EXIT_USAGE;
    }
    for (int i = 0; i < nfile; i++)
        if (!strcmp(fileprof[i].name, policy)) {
            prof = fileprof[i];
            found = 1;
        }
    drv_free(fileprof);
    if (!found && drv_profile_builtin(policy, &prof, &d) != 0) {
        fprintf(stderr, "drover run: --policy: %s\n", d.msg);
        return EXIT_USAGE;
    }
    drv_kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    int rc = incluster ? drv_kube_incluster(&cfg, NULL, &d)
                       : drv_kubeconfig_load(&cfg, kubeconfig, context, &d);
    if (rc != 0) {
        fprintf(stderr, "drover run: %s\n", d.msg);
        drv_kube_config_fini(&cfg);
        return EXIT_USAGE;
    }
    cfg.qps = qps;
    cfg.burst = burst;
    if (verbose)
        drv_log_set(NULL, NULL, DRV_LOG_INFO);
    drv_ctrl_opts o = {.profile = &prof, .scheduler = sched, .namespace_ = ns};
    if (elect) {
        o.lease_namespace = lease_ns;
        o.lease_name = lease_name;
    }
    drv_metrics *m = NULL;
    if (maddr) {
        uint16_t port = 0;
        if (drv_metrics_new(&m) != 0) {
            drv_kube_config_fini(&cfg);
            fputs("drover run: out of memory\n", stderr);
            return EXIT_RUN;
        }
        if ((rc = drv_metrics_serve(m, mhost[0] ? mhost : NULL, (uint16_t)mport, &port, &d)) != 0) {
            fprintf(stderr, "drover run: --metrics-addr %s: %s\n", maddr, d.msg);
            drv_metrics_free(m);
            drv_kube_config_fini(&cfg);
            return EXIT_USAGE;
        }
        fprintf(stderr, "drover run: metrics on http://%s%s%s:%u/metrics\n",
                strchr(mhost, ':') ? "[" : "", mhost[0] ? mhost : DRV_METRICS_DEFAULT_HOST,
                strchr(mhost, ':') ? "]" : "", port);
        o.metrics = m;
    }
    drv_ctrl *c = NULL;
    rc = drv_ctrl_new(&c, &cfg, &o, &d);
    drv_kube_config_fini(&cfg);
    if (rc != 0) {
        fprintf(stderr, "drover run: %s\n", d.msg);
        drv_metrics_free(m);
        return rc == DRV_ENOMEM ? EXIT_RUN : EXIT_USAGE;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    fprintf(stderr, "drover run: policy %s, scheduler name %s, %s", prof.name, sched,
            ns ? ns : "every namespace");
    if (elect)
        fprintf(stderr, ", leader election on lease %s/%s", lease_ns, lease_name);
    fputc('\n', stderr);
    rc = drv_ctrl_run(c, &stop_flag, &d);
    drv_ctrl_stats st = drv_ctrl_get_stats(c);
    drv_ctrl_free(c);
    drv_metrics_free(m);
    fprintf(stderr,
            "drover run: stopped after %ld cycles: %ld jobs (%ld finished), %ld pods created, "
            "%ld bound, %ld deleted, %ld failed requests\n",
            st.cycles, st.jobs, st.jobs_done, st.creates, st.binds, st.deletes, st.api_errors);
    if (rc != 0) {
        fprintf(stderr, "drover run: %s\n", d.msg);
        return EXIT_RUN;
    }
    return 0;
}
