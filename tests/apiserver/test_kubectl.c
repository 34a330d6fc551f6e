/*
 * test_kubectl.c - real kubectl against the in-memory API server: create, get (-o wide,
 * -o json), watch and delete pods, nodes and TrainingJobs; a TrainingJob status patch with a
 * stale resourceVersion refused (409 Conflict); deploy/podgroup-crd.yaml and
 * deploy/queue-crd.yaml applied, PodGroups and Queues listed with their columns; a
 * PriorityClass created.
 *
 * `create` runs with --validate=false. With validation on, kubectl 1.32 reads /openapi/v3 and
 * api/v1's document, finds no fieldValidation parameter in it (the recording is of a v1.24
 * server, before server-side field validation), and falls back to /openapi/v2 as protobuf,
 * which the recording does not have (its v2 document is JSON): the test server answers 404 and
 * kubectl refuses to create.
 *
 * Statuses are written through the status subresource with `kubectl patch --subresource=status
 * --type=merge` where kubectl has that flag (1.24 and later). Debian 12's kubectl (1.20) has
 * not: there the test gets the object, merges the same patch into it and PUTs it to .../status
 * with `kubectl replace --raw`, so the subresource, the stale resourceVersion's Conflict and the
 * printer columns are checked with either client; kubectl's own merge patch of a status only
 * with the newer one (drover run's merge patches are checked in tests/kube). The test prints
 * which kubectl it ran and which of the two ways it took.
 *
 * kubectl is pointed at http://127.0.0.1:PORT through a kubeconfig written to a mkdtemp
 * directory (its cache directory lives there too, so runs do not share discovery caches).
 * Every kubectl call has --request-timeout, and ctest's TIMEOUT bounds the whole test. The
 * kubectl is $DROVER_KUBECTL, else the one on PATH (kubectl_util.h); when there is none the
 * test prints that it is skipped and returns 77 (SKIP_RETURN_CODE).
 */
#include "apiserver.h"
#include "kubectl_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Whether kubectl has `patch --subresource` (kubectl 1.24 and later). */
static bool patch_subresource;

/* Writes a status through the status subresource as `kubectl patch RESOURCE NAME
 * --subresource=status --type=merge -p PATCH` does; a kubectl without that flag gets the object,
 * merges the patch into it (objects key by key, as a merge patch without nulls) and PUTs the
 * result to PATH/status with `kubectl replace --raw`. kubectl's exit status, its output in buf
 * ("... patched", or the object written back). */
static int write_status(char *buf, size_t n, const char *resource, const char *name,
                        const char *path, const char *patch)
{
    char args[1536];
    if (patch_subresource) {
        snprintf(args, sizeof args, "patch %s %s --subresource=status --type=merge -p '%s'",
                 resource, name, patch);
        return kc_run(buf, n, args);
    }
    snprintf(args, sizeof args, "get %s %s -o json", resource, name);
    int rc = kc_run(buf, n, args);
    json_error_t e;
    json_t *obj = rc == 0 ? json_loads(buf, 0, &e) : NULL, *p = json_loads(patch, 0, &e);
    char file[512];
    snprintf(file, sizeof file, "%s/status.json", kc_dir());
    if (!obj || !p || json_object_update_recursive(obj, p) || json_dump_file(obj, file, 0)) {
        json_decref(obj);
        json_decref(p);
        return rc == 0 ? -1 : rc; /* buf holds what kubectl get said */
    }
    json_decref(obj);
    json_decref(p);
    snprintf(args, sizeof args, "replace --validate=false --raw %s/status -f %s", path, file);
    return kc_run(buf, n, args);
}

/* Whether write_status's output says the status was written: kubectl patch's "... patched", or
 * the object replace --raw prints back. */
static bool written(const char *buf)
{
    return strstr(buf, patch_subresource ? " patched" : "\"status\"") != NULL;
}

/* What every step writes kubectl's output into. */
static char out[65536];

/* A Node, a Pod and a TrainingJob, created from files as a user would. */
static void create_objects(void)
{
    char args[1024];
    int rc;
    kc_write("node.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-node-1\n"
                          "  labels:\n    topology.kubernetes.io/zone: zone-a\n");
    kc_write("pod.yaml",
             "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kc-pod\n  labels:\n    app: t\n"
             "spec:\n  schedulerName: drover\n  containers:\n  - name: main\n"
             "    image: busybox:1.36\n");
    kc_write("tj.yaml", "apiVersion: drover.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n"
                        "  name: kc-tj\nspec:\n  replicaSpecs:\n    Worker:\n      replicas: 2\n");

    snprintf(args, sizeof args, "create --validate=false -f %s/node.yaml", kc_dir());
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "node/gpu-node-1 created"), "kubectl create node", out);
    snprintf(args, sizeof args, "create --validate=false -f %s/pod.yaml", kc_dir());
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "pod/kc-pod created"), "kubectl create pod", out);
    snprintf(args, sizeof args, "create --validate=false -f %s/tj.yaml", kc_dir());
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "kc-tj created"), "kubectl create trainingjob", out);
}

/* The created objects read back: tables, JSON, the custom resource's short name. */
static void read_objects(void)
{
    int rc;
    rc = kc_run(out, sizeof out, "get pods -o wide");
    kc_expect(rc == 0 && strstr(out, "NOMINATED NODE") && strstr(out, "kc-pod"),
              "kubectl get pods -o wide", out);
    rc = kc_run(out, sizeof out, "get nodes");
    kc_expect(rc == 0 && strstr(out, "gpu-node-1") && strstr(out, "STATUS"), "kubectl get nodes",
              out);
    rc = kc_run(out, sizeof out, "get pod kc-pod -o json");
    kc_expect(rc == 0 && strstr(out, "\"schedulerName\": \"drover\""), "kubectl get pod -o json",
              out);
    rc = kc_run(out, sizeof out, "get tj");
    kc_expect(rc == 0 && strstr(out, "kc-tj") && strstr(out, "STATE"), "kubectl get tj", out);
    rc = kc_run(out, sizeof out, "get trainingjobs kc-tj -o json");
    kc_expect(rc == 0 && strstr(out, "\"replicas\": 2"), "kubectl get trainingjob -o json", out);
}

/* A pod's printed READY and RESTARTS come from its container statuses, as the real server
 * prints them (the playground's running pods showed 0/1). */
static void pod_status_printed(void)
{
    const char *path = "/api/v1/namespaces/default/pods/kc-pod";
    int rc = write_status(out, sizeof out, "pod", "kc-pod", path,
                          "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":"
                          "\"main\",\"image\":\"busybox:1.36\",\"imageID\":\"\",\"ready\":true,"
                          "\"started\":true,\"restartCount\":2,\"state\":{\"running\":{}}}]}}");
    kc_expect(rc == 0, "kubectl: pod status written", out);
    rc = kc_run(out, sizeof out, "get pod kc-pod --no-headers");
    char name[64] = "", ready[16] = "", phase[32] = "", restarts[32] = "";
    sscanf(out, "%63s %15s %31s %31s", name, ready, phase, restarts);
    kc_expect(rc == 0 && !strcmp(ready, "1/1") && !strcmp(phase, "Running") &&
                  !strcmp(restarts, "2"),
              "kubectl get pod: READY 1/1, RESTARTS 2 from containerStatuses", out);
}

/* A TrainingJob's status written, then refused with a stale resourceVersion. */
static void trainingjob_status(void)
{
    char args[1024];
    int rc;
    /* A status merge patch carrying a resourceVersion that is no longer the object's is refused
     * with a Status kubectl reads as a Conflict (no recorded exchange of a custom resource's
     * status subresource: the pod's and the Lease's are), as drover run's writer sends them. */
    char rv0[64] = "";
    rc = kc_run(out, sizeof out, "get tj kc-tj -o jsonpath={.metadata.resourceVersion}");
    snprintf(rv0, sizeof rv0, "%.*s", (int)strspn(out, "0123456789"), out);
    kc_expect(rc == 0 && rv0[0], "kubectl get tj resourceVersion", out);
    const char *tj_path = "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/kc-tj";
    rc = write_status(out, sizeof out, "tj", "kc-tj", tj_path,
                      "{\"status\":{\"phase\":\"Succeeded\"}}");
    kc_expect(rc == 0 && written(out), "kubectl: tj status written", out);
    snprintf(args, sizeof args,
             "{\"metadata\":{\"resourceVersion\":\"%s\"},\"status\":{\"phase\":\"Running\"}}", rv0);
    rc = write_status(out, sizeof out, "tj", "kc-tj", tj_path, args);
    kc_expect(rc != 0 && strstr(out, "Error from server (Conflict): Operation cannot be fulfilled "
                                     "on trainingjobs.drover.dev \"kc-tj\": the object has been "
                                     "modified; please apply your changes to the latest version "
                                     "and try again"),
              "kubectl: tj status with a stale resourceVersion: 409 Conflict", out);
    rc = kc_run(out, sizeof out, "get tj kc-tj -o jsonpath={.status.phase}");
    kc_expect(rc == 0 && !strcmp(out, "Succeeded"), "the refused patch left the status as it was",
              out);
}

/* The PodGroup CRD applied, a PodGroup created, its status written and printed. */
static void podgroup_crd(const char *src)
{
    char args[1024];
    int rc;
    /* The PodGroup CRD we ship: served once applied, its status written through the status
     * subresource, printed with its columns. */
    snprintf(args, sizeof args, "apply --validate=false -f %s/deploy/podgroup-crd.yaml",
             src ? src : ".");
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "podgroups.scheduling.x-k8s.io"),
              "kubectl apply deploy/podgroup-crd.yaml", out);
    kc_write("pg.yaml", "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata:\n"
                        "  name: kc-pg\nspec:\n  minMember: 4\n");
    snprintf(args, sizeof args, "create --validate=false -f %s/pg.yaml", kc_dir());
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "podgroup.scheduling.x-k8s.io/kc-pg created"),
              "kubectl create podgroup", out);
    rc = write_status(out, sizeof out, "pg", "kc-pg",
                      "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/kc-pg",
                      "{\"status\":{\"phase\":\"Scheduled\",\"scheduled\":4,\"running\":0}}");
    kc_expect(rc == 0 && written(out), "kubectl: podgroup status written", out);
    rc = kc_run(out, sizeof out, "get podgroups");
    kc_expect(rc == 0 && strstr(out, "MINMEMBER") && strstr(out, "kc-pg") &&
                  strstr(out, "Scheduled"),
              "kubectl get podgroups", out);
    rc = kc_run(out, sizeof out, "delete pg kc-pg");
    kc_expect(rc == 0 && strstr(out, "deleted"), "kubectl delete podgroup", out);
}

/* The Queue CRD applied, a Queue's status written and printed; a PriorityClass. */
static void queue_crd(const char *src)
{
    char args[1024];
    int rc;
    /* The Queue CRD we ship: cluster-scoped, its status written through the status
     * subresource (as drover run does), printed with its columns; PriorityClasses served. */
    snprintf(args, sizeof args, "apply --validate=false -f %s/deploy/queue-crd.yaml",
             src ? src : ".");
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "queues.drover.dev"), "kubectl apply deploy/queue-crd.yaml",
              out);
    kc_write("queue.yaml", "apiVersion: drover.dev/v1alpha1\nkind: Queue\nmetadata:\n"
                           "  name: research\nspec:\n  weight: 2\n  cohort: lab\n"
                           "  nominalQuota:\n    cpu: \"16\"\n    nvidia.com/gpu: 4\n");
    snprintf(args, sizeof args, "create --validate=false -f %s/queue.yaml", kc_dir());
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "queue.drover.dev/research created"), "kubectl create queue",
              out);
    rc = write_status(out, sizeof out, "queue", "research",
                      "/apis/drover.dev/v1alpha1/queues/research",
                      "{\"status\":{\"pending\":1,\"admitted\":2,\"used\":{\"cpu\":\"4500m\","
                      "\"nvidia.com/gpu\":\"3\"}}}");
    kc_expect(rc == 0 && written(out), "kubectl: queue status written", out);
    rc = kc_run(out, sizeof out, "get queues");
    kc_expect(rc == 0 && strstr(out, "CPU QUOTA") && strstr(out, "research") &&
                  strstr(out, "4500m") && strstr(out, "lab"),
              "kubectl get queues", out);
    printf("%s", out); /* (quoted in docs/running.md) */
    kc_write("pc.yaml", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n"
                        "  name: high\nvalue: 1000\n");
    snprintf(args, sizeof args, "create --validate=false -f %s/pc.yaml", kc_dir());
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "priorityclass.scheduling.k8s.io/high created"),
              "kubectl create priorityclass", out);
    rc = kc_run(out, sizeof out, "get priorityclass high -o name");
    kc_expect(rc == 0 && strstr(out, "priorityclass.scheduling.k8s.io/high"),
              "kubectl get priorityclass", out);
}

/* A label selector, a watch until its timeout, and every object deleted. */
static void select_watch_delete(void)
{
    int rc;
    rc = kc_run(out, sizeof out, "get nodes -l topology.kubernetes.io/zone=zone-a -o name");
    kc_expect(rc == 0 && strstr(out, "node/gpu-node-1"), "kubectl get nodes -l", out);

    /* Watch: kubectl prints the current list, then follows until its request times out. */
    rc = kc_run(out, sizeof out, "get pods --watch --request-timeout=2s");
    kc_expect(strstr(out, "kc-pod") != NULL, "kubectl get pods --watch", out);

    rc = kc_run(out, sizeof out, "delete pod kc-pod");
    kc_expect(rc == 0 && strstr(out, "deleted"), "kubectl delete pod", out);
    rc = kc_run(out, sizeof out, "delete tj kc-tj");
    kc_expect(rc == 0 && strstr(out, "deleted"), "kubectl delete trainingjob", out);
    rc = kc_run(out, sizeof out, "delete node gpu-node-1");
    kc_expect(rc == 0 && strstr(out, "deleted"), "kubectl delete node", out);
    rc = kc_run(out, sizeof out, "get pods");
    kc_expect(rc == 0 && !strstr(out, "kc-pod"), "pod gone after delete", out);
}

int main(void)
{
    if (!kc_available()) {
        printf("kubectl not found on PATH: test skipped\n");
        return 77;
    }
    const char *src = getenv("DROVER_SOURCE_DIR");
    char fx[512];
    snprintf(fx, sizeof fx, "%.400s/tests/fixtures/k8s", src ? src : ".");
    drv_apiserver *s = NULL;
    drv_apiserver_opts o = {.fixture_dir = fx, .crd_installed = true};
    drv_diag d = {{0}};
    if (drv_apiserver_start(&s, &o, &d)) {
        fprintf(stderr, "cannot start the test server: %s\n", d.msg);
        return 1;
    }
    if (kc_setup(drv_apiserver_port(s), "drover-kubectl") != 0) {
        drv_apiserver_free(s);
        return 1;
    }
    char who[640];
    kc_describe(who, sizeof who);
    patch_subresource = kc_has_flag("patch", "--subresource");
    const char *how = patch_subresource
                          ? "statuses written with kubectl patch --subresource=status (merge patch)"
                          : "statuses written with kubectl replace --raw (PUT): this kubectl has "
                            "no patch --subresource (1.24+), so kubectl's merge patch of a status "
                            "is not covered";
    printf("%s\n%s\n", who, how);
    create_objects();
    read_objects();
    trainingjob_status();
    pod_status_printed();
    podgroup_crd(src);
    queue_crd(src);
    select_watch_delete();

    drv_apiserver_free(s);
    kc_cleanup();
    printf("%s\n%s\n", who, how);
    return kc_failures() ? 1 : 0;
}
