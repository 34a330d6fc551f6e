#!/bin/sh
# sia.sh - Sia's heterogeneous comparison (SOSP'23, issue 27): its Philly-derived workloads 1-8
# on its 64-GPU cluster of three types (examples/cluster-sia-hetero.yaml) with its per-type
# profiles and slowdown calibration, for `drover`, `drover-no-types` (goodput sizing every type
# as one pool: heterogeneity off, examples/sia-ablations.yaml), `tiresias` and `gang-fifo`, and
# two ablations of drover's type allocation (`drover-greedy`, `drover-one-fit`),
# beside the average JCT Sia's paper publishes (Table 3). Prints a markdown section.
#
# Usage: sh scripts/sia.sh SIA_DIR [BUILD_DIR]   (BUILD_DIR: default build, from where it is run)
# scripts/results.sh appends this section to docs/results.md when SIA_DIR is set.
# SIA_DIR is a checkout of siasosp23/artifacts (profiles in sia-simulator/traces/, workloads in
# sia-simulator/workloads/philly/) or a directory with profiles/ and workloads/philly/ in the
# same layout. The artifact has no licence: nothing of it is in this repository (docs/data.md).
set -eu
sia=$(cd "${1:?usage: sh scripts/sia.sh SIA_DIR [BUILD_DIR]}" && pwd)
drover=$(cd "${2:-build}" && pwd)/drover
cd "$(dirname "$0")/.."
[ -x "$drover" ] || { echo "sia.sh: no $drover (build first)" >&2; exit 2; }
if [ -d "$sia/sia-simulator/traces" ]; then
    prof=$sia/sia-simulator/traces wl=$sia/sia-simulator/workloads/philly
else
    prof=$sia/profiles wl=$sia/workloads/philly
fi
[ -d "$prof" ] && [ -f "$wl/workload-1.csv" ] || {
    echo "sia.sh: $sia: expected sia-simulator/traces and sia-simulator/workloads/philly (a checkout of siasosp23/artifacts), or profiles/ and workloads/philly/" >&2
    exit 2
}
# Sia's SLOWDOWNS (sia-simulator/simulator_config.py), fitted to its physical testbed
slow=cifar10=1.8,imagenet=1.2,yolov3=1.2,bert=1.2,deepspeech2=1.2,ncf=1.5
pols=drover,drover-no-types,tiresias,gang-fifo,drover-greedy,drover-one-fit
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for w in 1 2 3 4 5 6 7 8; do
    "$drover" sim --trace "$wl/workload-$w.csv" --cluster examples/cluster-sia-hetero.yaml \
        --calib-dir "$prof" --calib-slowdown "$slow" --profiles examples/sia-ablations.yaml \
        --policy "$pols" --format csv --quiet |
        awk -F, -v w="$w" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            { printf "%s %s %s %s %s\n", $c["policy"], w, $c["avg_jct_s"], $c["done"], $c["jobs"] }' >>"$tmp"
done
echo "## Heterogeneous GPUs: Sia's Philly workloads (issue 27)"
echo
echo "Sia's cluster (\`examples/cluster-sia-hetero.yaml\`: 6 x 4 T4 \`aws\`, 3 x 8 RTX 2080Ti \`rtx\`,"
echo "2 x 8 A100 \`dgx-ext\`), its per-type profiles and slowdowns, its Philly-derived workloads 1-8"
echo "(160 jobs each), \`sh scripts/sia.sh SIA_DIR\` (docs/data.md). Average JCT in hours; a cell"
echo "with fewer than 160 jobs finished says how many and averages the finished ones only (so"
echo "does the mean over such cells)."
echo "Sia, Pollux and Gavel are the paper's published figures (Table 3, the mean over the"
echo "workloads), not runs of ours."
echo
echo "\`drover-greedy\`: the greedy and its moves instead of Sia's integer program, one type-blind"
echo "online fit (\`goodput(solver=0;fits=0)\`); \`drover-one-fit\`: the program with one type-blind"
echo "online fit instead of one per GPU type (\`goodput(fits=0)\`);"
echo "docs/model.md, \"On several GPU types\"."
echo
echo "| workload | $(echo "$pols" | sed 's/,/ | /g') |"
echo "|---|$(echo "$pols" | sed 's/[^,]*/---:/g; s/,/|/g')|"
awk -v pols="$pols" '
    BEGIN { np = split(pols, p, ",") }
    { jct[$1, $2] = $3; done[$1, $2] = $4; jobs[$1, $2] = $5; ws[$2] = 1 }
    function cell(k, w) {
        s = sprintf("%.2f", jct[k, w] / 3600)
        if (done[k, w] < jobs[k, w]) s = s sprintf(" (%d/%d)", done[k, w], jobs[k, w])
        return s
    }
    END {
        for (w = 1; w <= 8; w++) {
            line = "| " w
            for (i = 1; i <= np; i++) { line = line " | " cell(p[i], w); sum[i] += jct[p[i], w] }
            print line " |"
        }
        line = "| **mean** |"
        for (i = 1; i <= np; i++) line = line sprintf(" **%.2f** |", sum[i] / 8 / 3600)
        print line
    }' "$tmp"
echo
echo "Published (Sia, Table 3, heterogeneous, Philly): Sia 0.6 h, Pollux 1.0 h, Gavel 1.9 h."
awk -v pols="$pols" '$1 == "drover" { s += $3; n++ } END {
    m = s / n / 3600
    printf "`drover` here: %.3f h, %s Sia'"'"'s 0.6 h and %s Pollux'"'"'s 1.0 h.\n", m,
        m < 0.6 ? "below" : "above", m < 1.0 ? "below" : "above" }' "$tmp"
