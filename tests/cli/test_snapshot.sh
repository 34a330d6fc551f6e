#!/bin/sh
# issue 29 part 4, "what if" on a live cluster: a running test cluster (drover playground: the
# in-memory API server, emulated nodes, the controller with the gang-scheduling `drover`
# policy) with two TrainingJobs running and two TrainingJobs and a PodGroup gang pending, a
# Queue and a PriorityClass -> `drover snapshot` -> `drover sim --from-snapshot`, which must
# show the same pending set, the running jobs on the nodes kubectl shows them on, and every
# kind of object read (a snapshot that drops nodes, pods, TrainingJobs, PodGroups, Queues or
# PriorityClasses fails a check below). Then bad snapshot directories: a missing file and an
# unknown version, each a clear error with exit status 2. Everything is on 127.0.0.1. Usage:
# test_snapshot.sh DROVER_BINARY SOURCE_DIR. Exit 77 (skipped) without kubectl. Waits are
# bounded polls (60 s each), not timing assertions.
set -u
drover=$1
kubectl=${DROVER_KUBECTL:-kubectl}
if ! command -v "$kubectl" >/dev/null 2>&1; then
    echo "skipped: no kubectl" >&2
    exit 77
fi
tmp=$(mktemp -d)
pid=
cleanup() {
    [ -z "$pid" ] || kill -INT "$pid" 2>/dev/null
    [ -z "$pid" ] || wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
failed=0
fail() { echo "FAIL: $1" >&2; failed=$((failed + 1)); }

# Pods run until deleted (--pod-seconds 0): what runs at the snapshot still runs.
"$drover" playground --dir "$tmp/pg" --pod-seconds 0 >"$tmp/out" 2>"$tmp/err" &
pid=$!
until_ok() {
    end=$(($(date +%s) + 60))
    while [ "$(date +%s)" -le $end ]; do
        "$@" && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}
until_ok grep -q 'kubectl get tj -w' "$tmp/out" || {
    echo "FAIL: the playground did not start: $(cat "$tmp/err")" >&2
    exit 1
}
export KUBECONFIG="$tmp/pg/kubeconfig"
kc() { "$kubectl" --cache-dir "$tmp/cache" --request-timeout=10s "$@"; }

# A TrainingJob of N pods of role ROLE, CPU each: tj NAME ROLE N CPU [spec lines]
tj() {
    printf 'apiVersion: drover.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: %s}\nspec:\n' "$1"
    [ -z "${5:-}" ] || printf '%s\n' "$5"
    printf '  replicaSpecs:\n    %s:\n      replicas: %s\n      template:\n        spec:\n' "$2" "$3"
    printf '          schedulerName: drover\n'
    printf '          containers: [{name: t, image: x, resources: {requests: {cpu: "%s", memory: 1Gi}}}]\n---\n' "$4"
}
# 8 nodes of 32 CPUs: big-a and big-b leave 2 CPUs on each.
{
    printf 'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: urgent}\nvalue: 1000\n---\n'
    printf 'apiVersion: drover.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-a}\nspec: {weight: 2}\n---\n'
    tj big-a Worker 4 30 '  queue: team-a'
    tj big-b Worker 4 30
} >"$tmp/running.yaml"
kc apply --validate=false -f "$tmp/running.yaml" >"$tmp/apply" 2>&1 || fail "apply: $(cat "$tmp/apply")"
nbound() {
    kc get pods -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}' \
        >"$tmp/pods" 2>&1 && [ "$(grep -c -E '=node-[0-9]+$' "$tmp/pods")" -eq "$1" ]
}
until_ok nbound 8 || fail "big-a and big-b bound: $(cat "$tmp/pods")"
# ... and running (status.startTime set: a snapshot's startedAt)
nrunning() { [ "$(kc get pods --field-selector=status.phase=Running -o name 2>/dev/null | grep -c .)" -eq 8 ]; }
until_ok nrunning || fail "big-a and big-b running: $(kc get pods 2>&1)"
{
    tj wait-c Worker 2 20 '  priorityClassName: urgent'
    tj wait-d Chief 1 8
    printf 'apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: gang-e}\nspec: {minMember: 2}\n---\n'
    for k in 0 1; do
        printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: gang-e-%s, labels: {scheduling.x-k8s.io/pod-group: gang-e}}\n' $k
        printf 'spec: {schedulerName: drover, containers: [{name: t, image: x, resources: {requests: {cpu: "16"}}}]}\n---\n'
    done
} >"$tmp/pending.yaml"
kc apply --validate=false -f "$tmp/pending.yaml" >"$tmp/apply" 2>&1 || fail "apply: $(cat "$tmp/apply")"
until_ok eval 'kc get pods -o name 2>/dev/null | grep -c . | grep -qx 13' ||
    fail "the pending jobs' pods created: $(kc get pods 2>&1)"
sleep 1 # a cycle of the controller: they stay pending (nothing fits)
nbound 8 || fail "only big-a and big-b bound: $(cat "$tmp/pods")"

"$drover" snapshot --out "$tmp/snap" >"$tmp/snap.out" 2>&1 || fail "snapshot: $(cat "$tmp/snap.out")"
"$drover" sim --from-snapshot "$tmp/snap" --policy k8s-default,drover --quiet >"$tmp/whatif" \
    2>&1 || fail "sim --from-snapshot: $(cat "$tmp/whatif")"
# The sets, from the table: job name and state.
awk '$2 == "pending" {print $1}' "$tmp/whatif" | sort >"$tmp/pending"
awk '$2 ~ /^running/ {print $1}' "$tmp/whatif" | sort >"$tmp/running"
printf 'default.gang-e\ndefault.wait-c\ndefault.wait-d\n' >"$tmp/want-pending"
printf 'default.big-a\ndefault.big-b\n' >"$tmp/want-running"
cmp -s "$tmp/pending" "$tmp/want-pending" || fail "pending set: $(cat "$tmp/whatif")"
cmp -s "$tmp/running" "$tmp/want-running" || fail "running set: $(cat "$tmp/whatif")"
# The simulator started the running jobs before t0 (their start is "N s ago" under each policy).
[ "$(awk '$2 ~ /^running/ && gsub(/ ago/, "") == 2' "$tmp/whatif" | wc -l)" -eq 2 ] ||
    fail "the running jobs not running at t0: $(cat "$tmp/whatif")"
grep -q 'with drover, job default.wait-c starts' "$tmp/whatif" || fail "no comparison: $(cat "$tmp/whatif")"

# The running jobs on the nodes kubectl shows: big-a's workers in rank order.
for job in big-a big-b; do
    want=$(for k in 0 1 2 3; do grep "^$job-worker-$k=" "$tmp/pods" | cut -d= -f2; done |
        sort | paste -sd, - | sed 's/,/, /g')
    got=$(sed -n "/name: default.$job\$/,/^  - name/p" "$tmp/snap/workload.yaml" |
        sed -n 's/^ *worker: \[\(.*\)\]$/\1/p' | tr -d ' ' | tr , '\n' | sort | paste -sd, - |
        sed 's/,/, /g')
    [ -n "$want" ] && [ "$got" = "$want" ] || fail "$job runs on '$want', the snapshot says '$got'"
done
# The same sim run with --check: the state's invariants hold with the running jobs placed.
"$drover" sim --from-snapshot "$tmp/snap" --policy drover --check --quiet >/dev/null 2>&1 ||
    fail "--check refused the replayed state"
# Every kind: 8 nodes, the Queue and the job naming it, the PriorityClass's value, the PodGroup
# gang of two 16-CPU pods.
[ "$(grep -c '^  - name: node-' "$tmp/snap/cluster.yaml")" -eq 8 ] || fail "nodes: $(cat "$tmp/snap/cluster.yaml")"
grep -q '^  - name: team-a$' "$tmp/snap/cluster.yaml" || fail "the Queue is missing"
grep -q '^    queue: team-a$' "$tmp/snap/workload.yaml" || fail "big-a's queue is missing"
grep -q '^    priority: 1000 ' "$tmp/snap/workload.yaml" || fail "wait-c's priority is missing"
grep -q 'worker: {replicas: 2, min: 2, max: 2, cpu: 16000m' "$tmp/snap/workload.yaml" ||
    fail "the PodGroup gang is missing: $(cat "$tmp/snap/workload.yaml")"
grep -q '^version: 1$' "$tmp/snap/snapshot.yaml" || fail "snapshot.yaml: $(cat "$tmp/snap/snapshot.yaml")"

# Bad snapshot directories: exit 2, the file and what is wrong named.
cp -r "$tmp/snap" "$tmp/nocluster"
rm "$tmp/nocluster/cluster.yaml"
"$drover" sim --from-snapshot "$tmp/nocluster" --quiet >"$tmp/o" 2>"$tmp/e"
st=$?
[ $st -eq 2 ] && grep -q "nocluster/cluster.yaml: No such file" "$tmp/e" ||
    fail "missing cluster.yaml: status $st, $(cat "$tmp/e")"
cp -r "$tmp/snap" "$tmp/v99"
sed -i 's/^version: 1$/version: 99/' "$tmp/v99/snapshot.yaml"
"$drover" sim --from-snapshot "$tmp/v99" --quiet >"$tmp/o" 2>"$tmp/e"
st=$?
[ $st -eq 2 ] && grep -q "snapshot.yaml:[0-9]*: version: this drover reads snapshots of version 1, found 99" "$tmp/e" ||
    fail "version 99: status $st, $(cat "$tmp/e")"
"$drover" sim --from-snapshot "$tmp/snap" --workload x.yaml >"$tmp/o" 2>"$tmp/e"
st=$?
[ $st -eq 2 ] && grep -q "not with" "$tmp/e" || fail "--workload too: status $st, $(cat "$tmp/e")"
"$drover" snapshot --kubeconfig "$tmp/none" --out "$tmp/x" >"$tmp/o" 2>"$tmp/e"
st=$?
[ $st -eq 2 ] && [ ! -e "$tmp/x" ] || fail "no kubeconfig: status $st, $(cat "$tmp/e")"

[ $failed -eq 0 ] && echo "ok: snapshot of a running test cluster replayed with the same pending set"
exit $((failed > 0))
