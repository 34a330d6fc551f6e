#!/bin/sh
# bench/trace_replay runs what `drover sim` runs on the same trace and cluster file (issue 24:
# it once built its own cluster and reported 7.92 h for drover on Philly where the CLI gave
# 11.58 h). The first 400 rows of the Philly-derived trace on a 4-node GPU cluster, three
# policies: the average JCT of each, in hours to 3 decimals, must be the same both ways, and the
# bench must print the drover sim command it stands for.
# Usage: test_bench_agrees.sh DROVER_BINARY TRACE_REPLAY_BINARY SOURCE_DIR
set -u
drover=$1
bench=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -n 401 "$src/data/pollux/philly.csv" >"$tmp/trace.csv"
cluster="$src/examples/cluster-gpu.yaml"
policies=drover,gang-fifo,tiresias
(cd "$src" && "$bench" --trace "$tmp/trace.csv" --cluster "$cluster" --policy "$policies") \
    >"$tmp/bench" || { echo "FAIL: trace_replay" >&2; exit 1; }
"$drover" sim --trace "$tmp/trace.csv" --cluster "$cluster" --policy "$policies" --quiet \
    --format csv >"$tmp/cli" || { echo "FAIL: drover sim" >&2; exit 1; }
grep -q "drover sim --trace $tmp/trace.csv --cluster $cluster --policy $policies" "$tmp/bench" ||
    { echo "FAIL: the bench does not print the command it stands for" >&2; exit 1; }
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
         { printf "%s %.3f\n", $c["policy"], $c["avg_jct_s"] / 3600 }' "$tmp/cli" >"$tmp/want"
awk '$1 ~ /^(drover|gang-fifo|tiresias)$/ && NF == 9 { print $1, $8 }' "$tmp/bench" >"$tmp/got"
if ! cmp -s "$tmp/want" "$tmp/got" || [ "$(wc -l <"$tmp/want")" -ne 3 ]; then
    echo "FAIL: average JCT (h) differs between drover sim and trace_replay:" >&2
    paste "$tmp/want" "$tmp/got" >&2
    exit 1
fi
echo "ok: trace_replay and drover sim agree on $policies"
