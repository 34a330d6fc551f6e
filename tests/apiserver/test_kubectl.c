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
 * kubectl is pointed at http://127.0.0.1:PORT through a kubeconfig written to a mkdtemp
 * directory (its cache directory lives there too, so runs do not share discovery caches).
 * Every kubectl call has --request-timeout, and ctest's TIMEOUT bounds the whole test. When
 * kubectl is not on PATH the test prints that it is skipped and returns 77 (SKIP_RETURN_CODE).
 */
#include "apiserver.h"
#include "kubectl_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
    kc_write("node.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-node-1\n"
                          "  labels:\n    topology.kubernetes.io/zone: zone-a\n");
    kc_write("pod.yaml",
             "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kc-pod\n  labels:\n    app: t\n"
             "spec:\n  schedulerName: drover\n  containers:\n  - name: main\n"
             "    image: busybox:1.36\n");
    kc_write("tj.yaml", "apiVersion: drover.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n"
                        "  name: kc-tj\nspec:\n  replicaSpecs:\n    Worker:\n      replicas: 2\n");
    static char out[65536];
    char args[1024];
    int rc;

    snprintf(args, sizeof args, "create --validate=false -f %s/node.yaml", kc_dir());
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "node/gpu-node-1 created"), "kubectl create node", out);
    snprintf(args, sizeof args, "create --validate=false -f %s/pod.yaml", kc_dir());
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "pod/kc-pod created"), "kubectl create pod", out);
    snprintf(args, sizeof args, "create --validate=false -f %s/tj.yaml", kc_dir());
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc == 0 && strstr(out, "kc-tj created"), "kubectl create trainingjob", out);

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
    /* A status merge patch carrying a resourceVersion that is no longer the object's is refused
     * with a Status kubectl reads as a Conflict (no recorded exchange of a custom resource's
     * status subresource: the pod's and the Lease's are), as drover run's writer sends them. */
    char rv0[64] = "";
    rc = kc_run(out, sizeof out, "get tj kc-tj -o jsonpath={.metadata.resourceVersion}");
    snprintf(rv0, sizeof rv0, "%.*s", (int)strspn(out, "0123456789"), out);
    kc_expect(rc == 0 && rv0[0], "kubectl get tj resourceVersion", out);
    rc = kc_run(out, sizeof out,
                "patch tj kc-tj --subresource=status --type=merge "
                "-p '{\"status\":{\"phase\":\"Succeeded\"}}'");
    kc_expect(rc == 0 && strstr(out, "patched"), "kubectl patch tj status", out);
    snprintf(args, sizeof args,
             "patch tj kc-tj --subresource=status --type=merge -p '{\"metadata\":{"
             "\"resourceVersion\":\"%s\"},\"status\":{\"phase\":\"Running\"}}'",
             rv0);
    rc = kc_run(out, sizeof out, args);
    kc_expect(rc != 0 && strstr(out, "Error from server (Conflict): Operation cannot be fulfilled "
                                     "on trainingjobs.drover.dev \"kc-tj\": the object has been "
                                     "modified; please apply your changes to the latest version "
                                     "and try again"),
              "kubectl patch tj status with a stale resourceVersion: 409 Conflict", out);
    rc = kc_run(out, sizeof out, "get tj kc-tj -o jsonpath={.status.phase}");
    kc_expect(rc == 0 && !strcmp(out, "Succeeded"), "the refused patch left the status as it was",
              out);
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
    rc = kc_run(out, sizeof out,
                "patch pg kc-pg --subresource=status --type=merge "
                "-p '{\"status\":{\"phase\":\"Scheduled\",\"scheduled\":4,\"running\":0}}'");
    kc_expect(rc == 0 && strstr(out, "patched"), "kubectl patch podgroup status", out);
    rc = kc_run(out, sizeof out, "get podgroups");
    kc_expect(rc == 0 && strstr(out, "MINMEMBER") && strstr(out, "kc-pg") &&
                  strstr(out, "Scheduled"),
              "kubectl get podgroups", out);
    rc = kc_run(out, sizeof out, "delete pg kc-pg");
    kc_expect(rc == 0 && strstr(out, "deleted"), "kubectl delete podgroup", out);

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
    rc = kc_run(out, sizeof out,
                "patch queue research --subresource=status --type=merge -p '{\"status\":{"
                "\"pending\":1,\"admitted\":2,\"used\":{\"cpu\":\"4500m\","
                "\"nvidia.com/gpu\":\"3\"}}}'");
    kc_expect(rc == 0 && strstr(out, "patched"), "kubectl patch queue status", out);
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

    drv_apiserver_free(s);
    kc_cleanup();
    return kc_failures() ? 1 : 0;
}
