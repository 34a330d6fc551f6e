#!/bin/sh
# The operator's kustomize base renders (kubectl kustomize, offline) with every object it
# lists, and the Service and ServiceMonitor point at the port the Deployment names.
# Usage: test_deploy.sh SOURCE_DIR. Exit 77 (skipped) without kubectl. The kubectl is
# $DROVER_KUBECTL when set, as in the tests of tests/apiserver (kubectl_util.h).
set -u
src=$1
kubectl=${DROVER_KUBECTL:-kubectl}
if ! command -v "$kubectl" >/dev/null 2>&1; then
    [ -z "${DROVER_KUBECTL:-}" ] || { echo "FAIL: DROVER_KUBECTL=$kubectl: no such program" >&2 && exit 1; }
    echo "skipped: no kubectl" >&2
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $1" >&2; failed=$((failed + 1)); }

"$kubectl" kustomize "$src/deploy" >"$tmp/all.yaml" 2>"$tmp/err" || fail "kustomize: $(cat "$tmp/err")"
for kind in Namespace CustomResourceDefinition ServiceAccount ClusterRole ClusterRoleBinding \
    Deployment Service PodDisruptionBudget NetworkPolicy; do
    grep -q "^kind: $kind\$" "$tmp/all.yaml" || fail "no $kind in kubectl kustomize deploy/"
done
# Every YAML file in deploy/ is listed but the ServiceMonitor (it needs the Prometheus Operator)
# and the emulator's RBAC (drover emulate is a test tool, not part of the operator).
for f in "$src"/deploy/*.yaml; do
    b=$(basename "$f")
    case $b in kustomization.yaml | servicemonitor.yaml | emulate-rbac.yaml) continue ;; esac
    grep -q -- "- $b\$" "$src/deploy/kustomization.yaml" || fail "$b not in kustomization.yaml"
done
# The metrics port: named in the Deployment, targeted by the Service, scraped by the monitor.
grep -q 'name: metrics' "$src/deploy/drover.yaml" || fail "Deployment names no metrics port"
grep -q 'targetPort: metrics' "$src/deploy/service.yaml" || fail "Service does not target it"
grep -q 'port: metrics, path: /metrics' "$src/deploy/servicemonitor.yaml" ||
    fail "ServiceMonitor does not scrape it"
grep -q 'app: drover' "$src/deploy/service.yaml" || fail "Service selects no drover pods"
# The operator's exposure (issue 26): a versioned image, the release's, never :latest; replicas
# kept apart; the metrics port the only way in.
version=$(sed -n 's/^project(drover VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
grep -q "^ *image: drover:$version\$" "$src/deploy/drover.yaml" ||
    fail "deploy/drover.yaml's image is not drover:$version (CMakeLists.txt's version)"
grep -q 'image: .*:latest' "$tmp/all.yaml" && fail "an image tagged :latest"
grep -q 'podAntiAffinity:' "$src/deploy/drover.yaml" || fail "replicas without anti-affinity"
grep -q 'port: metrics, protocol: TCP' "$src/deploy/networkpolicy.yaml" ||
    fail "the NetworkPolicy does not admit the metrics port"
[ "$failed" -eq 0 ]
