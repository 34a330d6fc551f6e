#!/bin/sh
# End-to-end checks of `drover sim --profiles` and `--explain`: exit codes, messages naming
# file:line and the key, and a breakdown whose total is the sum of its contributions.
# Usage: test_cli_policy.sh DROVER_BINARY SOURCE_DIR
set -u
drover=$1
src=$2
fx=$src/tests/fixtures/policy
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $1" >&2; failed=$((failed + 1)); }

"$drover" sim --profiles "$fx/bad-key.yaml" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "bad profile key: exit 2"
grep -q "bad-key.yaml:4: profiles\[0\]: unknown field 'sccore'" "$tmp/err" || fail "bad key named"
[ -s "$tmp/out" ] && fail "bad profile file: nothing on stdout"

"$drover" sim --profiles "$fx/profiles.yaml" --policy mine,plain --format csv >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] || fail "file profiles run"
[ "$(cut -d, -f1 "$tmp/out" | tr '\n' ' ')" = "policy mine plain " ] || fail "file profiles named"

"$drover" sim --explain nope >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "--explain unknown job: exit 2"
grep -q "no job named 'nope'" "$tmp/err" || fail "--explain names the job"

w="$src/examples/mix-8node-60job.yaml"
c="$src/examples/cluster-hetero-8node.yaml"
"$drover" sim --workload "$w" --cluster "$c" --policy volcano-priority --explain mix-35-resnet50 \
    >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] || fail "--explain runs"
# The total must equal the sum of weight x normalised over the five factor rows.
awk '$1 ~ /^(user|class|wait|parallelism|share)$/ { s += $4 * $3; n++ }
     $1 == "priority" { t = $2 }
     END { exit !(n == 5 && (s - t) < 1e-3 && (t - s) < 1e-3) }' "$tmp/out" ||
    fail "--explain total is the weighted sum"

# A job submitted at the very time explained is not in the simulator's state yet (jobs enter
# at their submission): its own factors must still be read, not a blank placeholder's.
"$drover" sim --policy drover --explain birnn-0 >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] || fail "--explain at t=0 runs"
awk '$1 == "parallelism" { p = $2 } END { exit !(p > 0) }' "$tmp/out" ||
    fail "--explain of a job submitted at the explained time reads its own spec"

[ "$failed" -eq 0 ] || exit 1
echo "all passed"
