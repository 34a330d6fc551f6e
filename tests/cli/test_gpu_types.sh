#!/bin/sh
# drover sim on GPU types with per-type profiles (issue 27; docs/data.md "Per GPU type"): a job
# runs at its type's measured speed (synthetic profiles written here, Sia's layout, type "slow"
# measured exactly twice as slow as "fast"), --calib-slowdown scales one model, a type without
# a profile refuses the run naming model and type, --calib-type-fallback accepts it.
# goodput (drover) chooses the faster type for a job where drover-no-types does not.
# Usage: test_gpu_types.sh DROVER ROOT
set -eu
DROVER=$1
ROOT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# profiles: step = k * (0.001 * local batch + 0.01 * replicas), k = 1 (fast), 2 (slow)
. "$(dirname "$0")/typed_profiles.sh"
typed_profiles "$T/prof" fast:1 slow:2
printf 'name,time,application,num_replicas,batch_size\ncifar10-0,0,cifar10,2,128\n' >"$T/t.csv"
for ty in fast slow mid; do
    printf 'nodes:\n  - {name: n, count: 2, cpu: 8, memory: 32Gi, gpu: 4, gpuType: %s}\n' "$ty" \
        >"$T/c-$ty.yaml"
done
# avg JCT of the one policy's row
jct() {
    "$DROVER" sim --trace "$T/t.csv" --calib-dir "$T/prof" --policy gang-fifo --quiet "$@" |
        awk '$1 == "gang-fifo" { print $3 }'
}
fast=$(jct --cluster "$T/c-fast.yaml")
slow=$(jct --cluster "$T/c-slow.yaml")
awk -v f="$fast" -v s="$slow" 'BEGIN { exit !(f > 0 && s > 1.99 * f && s < 2.01 * f) }' ||
    fail "slow type's JCT $slow is not twice the fast type's $fast"
sd=$(jct --cluster "$T/c-fast.yaml" --calib-slowdown cifar10=1.5,ncf=3)
awk -v f="$fast" -v s="$sd" 'BEGIN { exit !(s > 1.49 * f && s < 1.51 * f) }' ||
    fail "--calib-slowdown cifar10=1.5: JCT $sd, not 1.5 x $fast"
# a type the profiles do not have: refused, named; accepted with the fallback (first type)
if out=$("$DROVER" sim --trace "$T/t.csv" --calib-dir "$T/prof" --cluster "$T/c-mid.yaml" \
    --policy gang-fifo --quiet 2>&1); then
    fail "a type without a profile ran: $out"
fi
echo "$out" | grep -q "model cifar10 has no profile for GPU type mid (placements-mid.csv; node n-0 has it): add it, or --calib-type-fallback to time it by placements-fast.csv" ||
    fail "refusal does not name model and type: $out"
fb=$(jct --cluster "$T/c-mid.yaml" --calib-type-fallback)
[ "$fb" = "$fast" ] || fail "--calib-type-fallback: JCT $fb, expected the first type's $fast"
# a bad slowdown is named
if out=$("$DROVER" sim --trace "$T/t.csv" --calib-dir "$T/prof" --cluster "$T/c-fast.yaml" \
    --calib-slowdown resnet=2 --quiet 2>&1); then
    fail "an unknown model's slowdown was accepted"
fi
echo "$out" | grep -q "slowdowns: 'resnet': no such model" || fail "bad slowdown: $out"
# goodput's type choice (src/policy/goodput_types.c): one adaptive job, a 2-GPU node of the
# slow type listed first and a 4-GPU node of the fast type. drover takes the type of most
# one-GPU speed x room (fast, JCT t); with types=0 (drover-no-types: one pool, the first node
# that fits) it runs on the slow type (2t).
printf 'nodes:\n  - {name: s, count: 1, cpu: 8, memory: 32Gi, gpu: 2, gpuType: slow}\n  - {name: f, count: 1, cpu: 8, memory: 32Gi, gpu: 4, gpuType: fast}\n' >"$T/mix.yaml"
printf 'name,time,application,num_replicas,batch_size\ncifar10-0,0,cifar10,1,64\n' >"$T/one.csv"
"$DROVER" sim --trace "$T/one.csv" --calib-dir "$T/prof" --cluster "$T/mix.yaml" --quiet \
    --profiles "$ROOT/examples/sia-ablations.yaml" --policy drover,drover-no-types --out "$T/o" >/dev/null
awk -F, 'NR > 1 && $3 != "f" { exit 1 }' "$T/o/placements-drover.csv" ||
    fail "drover placed the job off the fast type: $(cat "$T/o/placements-drover.csv")"
awk -F, 'NR > 1 && $3 != "s" { exit 1 }' "$T/o/placements-drover-no-types.csv" ||
    fail "the ablation (types=0) no longer shows the slow type's choice"
# the reports per type (issue 27): jobs-POLICY.csv's last column names the type the job ran on,
# in memory and streamed; --explain says which type and why: one-GPU speed per type worked out
# here from the profiles' formula (one replica, batch 64: step = k * (0.064 + 0.01)), and the
# GPUs free when it was placed (all: it is the only job)
last=$(awk -F, 'NR == 1 { print $NF } NR == 2 { print $NF }' "$T/o/jobs-drover.csv" | tr '\n' ' ')
[ "$last" = "gpu_type fast " ] || fail "jobs-drover.csv: gpu_type column: '$last'"
last=$(awk -F, 'NR == 2 { print $NF }' "$T/o/jobs-drover-no-types.csv")
[ "$last" = "slow" ] || fail "jobs-drover-no-types.csv: gpu_type '$last', expected slow"
printf 'id,t,g,d\nj0,0,2,100\n' >"$T/cols.csv"
for mode in mem stream; do
    "$DROVER" sim --trace "$T/cols.csv" --trace-columns name=id,submit=t,gpus=g,duration=d \
        --calib-dir "$T/prof" --cluster "$T/mix.yaml" --policy gang-fifo --quiet --out "$T/$mode" \
        $([ $mode = stream ] && echo --stream) >/dev/null
done
head -1 "$T/stream/jobs-gang-fifo.csv" | grep -q ',gpu_type$' || fail "--stream: no gpu_type column"
cmp "$T/mem/jobs-gang-fifo.csv" "$T/stream/jobs-gang-fifo.csv" || fail "--stream: jobs differ"
out=$("$DROVER" sim --trace "$T/one.csv" --calib-dir "$T/prof" --cluster "$T/mix.yaml" \
    --profiles "$ROOT/examples/sia-ablations.yaml" --policy drover --explain cifar10-0)
# placed at goodput's first 60 s round after its bootstrap: 2 types x 10 s (goodput's bootstrap
# and interval defaults, docs/policies.md), from its submission at 0
want=$(awk 'BEGIN { boot = 2 * 10; at = 60 * int((boot + 59) / 60)
    printf "job cifar10-0 ran on GPU type fast (placed there at t=%.1f s by policy drover): %.3g steps/s on one GPU there (slow %.3g) at its batch 64;", at, 1 / (0.064 + 0.01), 1 / (2 * (0.064 + 0.01)) }')
echo "$out" | grep -qF "$want" || fail "--explain: no line '$want' in: $out"
echo "$out" | grep -qF "GPUs free then, before its own: 2 of 2 slow, 4 of 4 fast" ||
    fail "--explain: free GPUs per type: $out"
# a cluster without types: no type line
printf 'nodes:\n  - {name: n, count: 2, cpu: 8, memory: 32Gi, gpu: 4}\n' >"$T/plain.yaml"
out=$("$DROVER" sim --trace "$T/one.csv" --calib-dir "$T/prof" --cluster "$T/plain.yaml" \
    --calib-type-fallback --policy drover --explain cifar10-0)
echo "$out" | grep -q "GPU type" && fail "--explain: a type line without types: $out"
# examples/hetero-synthetic: what its generator writes, and it runs to the end with a per-type block
mkdir "$T/hs"
cp "$ROOT/examples/hetero-synthetic/generate.sh" "$T/hs/"
sh "$T/hs/generate.sh"
diff -r "$ROOT/examples/hetero-synthetic/profiles" "$T/hs/profiles" >/dev/null &&
    cmp -s "$ROOT/examples/hetero-synthetic/trace.csv" "$T/hs/trace.csv" ||
    fail "examples/hetero-synthetic differs from what its generate.sh writes"
out=$("$DROVER" sim --trace "$T/hs/trace.csv" --calib-dir "$T/hs/profiles" \
    --cluster "$ROOT/examples/cluster-sia-hetero.yaml" --policy gang-fifo --quiet)
echo "$out" | grep -q "^gang-fifo  *48/48 " || fail "the synthetic example: $out"
echo "$out" | grep -q "^policy / type  *aws  *rtx  *dgx-ext$" || fail "no per-type block: $out"
echo "ok"
