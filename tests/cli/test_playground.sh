#!/bin/sh
# drover playground as docs/running.md's "The first hour" tells a new user to try it: start it,
# export the kubeconfig it prints, submit examples/trainingjob.yaml with the real kubectl, see
# the job's three pods bound to emulated nodes and the job reach Succeeded, stop it with SIGINT.
# Everything is on 127.0.0.1. Usage: test_playground.sh DROVER_BINARY SOURCE_DIR. Exit 77
# (skipped) without kubectl; the kubectl is $DROVER_KUBECTL when set (kubectl_util.h's rule).
# Waits are bounded polls (60 s each), not timing assertions.
set -u
drover=$1
src=$2
kubectl=${DROVER_KUBECTL:-kubectl}
if ! command -v "$kubectl" >/dev/null 2>&1; then
    [ -z "${DROVER_KUBECTL:-}" ] || { echo "FAIL: DROVER_KUBECTL=$kubectl: no such program" >&2 && exit 1; }
    echo "skipped: no kubectl" >&2
    exit 77
fi
tmp=$(mktemp -d)
pid=
cleanup() {
    [ -z "$pid" ] || kill -INT "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
failed=0
fail() { echo "FAIL: $1" >&2; failed=$((failed + 1)); }
echo "kubectl: $(command -v "$kubectl") ($("$kubectl" version --client 2>/dev/null | head -1))"

# Pods run 20 emulated seconds at speed 10: the job succeeds about 2 s after it started.
"$drover" playground --dir "$tmp/pg" --speed 10 --pod-seconds 20 >"$tmp/out" 2>"$tmp/err" &
pid=$!

# until COMMAND succeeds, for at most 60 s (every 0.2 s)
until_ok() {
    end=$(($(date +%s) + 60))
    while [ "$(date +%s)" -le $end ]; do
        "$@" && return 0
        kill -0 "$pid" 2>/dev/null || return 1 # the playground died
        sleep 0.2
    done
    return 1
}
until_ok grep -q 'kubectl get tj -w' "$tmp/out" || {
    fail "the playground printed no instructions: $(cat "$tmp/err")"
    exit 1
}
# The line it tells the user to run, run as it is.
line=$(grep -E '^  export KUBECONFIG=' "$tmp/out")
[ "$line" = "  export KUBECONFIG=$tmp/pg/kubeconfig" ] || fail "export line: '$line'"
eval "$line"
kc() { "$kubectl" --cache-dir "$tmp/cache" --request-timeout=10s "$@"; }
grep -q 'not Kubernetes: no kubelet, no containers, no admission webhooks' "$tmp/err" ||
    fail "the playground does not say what it is not"

kc get nodes >"$tmp/nodes" 2>&1
[ "$(grep -c ' Ready ' "$tmp/nodes")" -eq 8 ] || fail "8 Ready nodes: $(cat "$tmp/nodes")"
apply=$(grep -E '^  kubectl apply ' "$tmp/out" | sed 's/^  kubectl //')
# The example as the instructions name it: relative to the source tree when run there, else a
# full path.
(cd "$src" && eval kc "$apply") >"$tmp/apply" 2>&1 || fail "kubectl $apply: $(cat "$tmp/apply")"
grep -q 'trainingjob.drover.dev/mnist created' "$tmp/apply" || fail "apply: $(cat "$tmp/apply")"

# Each of the job's pods on an emulated node: name=node lines, three with a node.
bound() {
    kc get pods -l drover.dev/job=mnist \
        -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}' \
        >"$tmp/pods" 2>&1 &&
        [ "$(grep -c -E '^mnist-(chief|worker)-[0-9]+=node-[0-9]+$' "$tmp/pods")" -eq 3 ]
}
until_ok bound || fail "the job's 3 pods bound to emulated nodes: $(cat "$tmp/pods")"
succeeded() {
    kc get tj mnist -o jsonpath='{.status.conditions[-1:].type}' >"$tmp/tj" 2>&1 &&
        grep -q Succeeded "$tmp/tj"
}
until_ok succeeded || fail "mnist Succeeded: $(kc get tj mnist -o yaml 2>&1)"
kc describe tj mnist >"$tmp/describe" 2>&1
grep -q 'pods bound by profile drover' "$tmp/describe" || fail "describe: $(cat "$tmp/describe")"

kill -INT "$pid"
wait "$pid"
st=$?
pid=
[ "$st" -eq 0 ] || fail "exit status after SIGINT: $st ($(cat "$tmp/err"))"
grep -q 'stopped: 1 jobs (1 finished)' "$tmp/err" || fail "stop summary: $(cat "$tmp/err")"
[ ! -e "$tmp/pg/kubeconfig" ] || fail "the kubeconfig of a stopped playground is left"
[ "$failed" -eq 0 ] && echo "ok: playground, kubectl apply to Succeeded"
[ "$failed" -eq 0 ]
