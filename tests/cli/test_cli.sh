#!/bin/sh
# End-to-end checks of the drover command: exit codes, messages that name file:line:field,
# nothing written to --out on bad input, --help, and the default comparison; the one flag parser's
# conventions (--flag=value, --version, one-line usage errors), `drover help`, `drover policies`
# (with --profiles), a --profiles file overriding a built-in, and --explain under a FIFO policy.
# Usage: test_cli.sh DROVER_BINARY SOURCE_DIR
set -u
drover=$1
src=$2
fx=$src/tests/fixtures/sim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
failed=0

check() { # name, condition result (0 = ok)
    if [ "$2" -eq 0 ]; then
        pass=$((pass + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $1" >&2
    fi
}

expect_status() { # name, want, command...
    name=$1
    want=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    [ "$got" -eq "$want" ]
    r=$?
    [ $r -eq 0 ] || echo "  $name: exit $got, want $want; stderr: $(cat "$tmp/err")" >&2
    check "$name" $r
}

# Bad workload: exit 2, the message names file:line: field, and --out gets nothing.
expect_status bad-cpu 2 "$drover" sim --workload "$fx/bad-workload-cpu.yaml" --out "$tmp/o1"
grep -q 'bad-workload-cpu.yaml:5: jobs\[0\].roles.worker.cpu: expected a CPU quantity' "$tmp/err"
check bad-cpu-message $?
[ ! -e "$tmp/o1" ]
check bad-cpu-no-output $?

expect_status bad-cluster 2 "$drover" sim --cluster "$fx/bad-cluster-mem.yaml" --out "$tmp/o2"
grep -q 'bad-cluster-mem.yaml:4: nodes\[0\].memory' "$tmp/err"
check bad-cluster-message $?
[ ! -e "$tmp/o2" ]
check bad-cluster-no-output $?

expect_status too-big 2 "$drover" sim --workload "$fx/too-big.yaml" --out "$tmp/o3"
grep -q 'job whale' "$tmp/err"
check too-big-message $?

# Unknown policy lists the known ones.
expect_status unknown-policy 2 "$drover" sim --policy fastest
grep -q "unknown policy 'fastest' (known: k8s-default, gang-fifo" "$tmp/err"
check unknown-policy-lists $?

expect_status unknown-flag 2 "$drover" sim --sed 3
expect_status bad-seed 2 "$drover" sim --seed -4
expect_status bad-format 2 "$drover" sim --format xml
expect_status no-command 2 "$drover"
expect_status bad-command 2 "$drover" simulate

# Help tells the truth about the flags the parser accepts.
expect_status help 0 "$drover" sim --help
for flag in --workload --cluster --policy --seed --format --out --models --check; do
    grep -q -- "$flag" "$tmp/out"
    check "help-mentions$flag" $?
done
# docs/formats.md lists the built-in catalogue's model families, all of them and no other.
want=$(grep -v '^#' "$src/data/models.csv" | sed 1d | cut -d, -f1 | sort | tr '\n' ' ')
got=$(grep -A1 '^The model families of the built-in catalogue' "$src/docs/formats.md" | tail -1 |
    grep -o '`[a-z0-9_-]*`' | tr -d '`' | sort | tr '\n' ' ')
[ -n "$want" ] && [ "$got" = "$want" ]
check formats-doc-families $?
# README: short forms only where --help lists one; sim has none (-v is drover run's).
expect_status sim-no-v 2 "$drover" sim -v
grep -q "drover sim: unknown option '-v'" "$tmp/err"
check sim-no-v-message $?
expect_status version 0 "$drover" version
grep -q '^drover [0-9]' "$tmp/out"
check version-format $?
# --version and summary.json name the commit built from (and whether the tree was modified);
# built outside a git checkout (a tarball, even unpacked inside another repository), "unknown".
if head=$(git -C "$src" rev-parse HEAD 2>/dev/null); then
    grep -q "^drover [0-9.]* (commit $head\(, with uncommitted changes\)\{0,1\})\$" "$tmp/out"
    check version-commit $?
    "$drover" sim --quiet --policy k8s-default --out "$tmp/prov" >/dev/null 2>&1
    grep -q "\"drover_commit\": \"$head\"" "$tmp/prov/summary.json" &&
        grep -q '"drover_dirty": \(true\|false\)' "$tmp/prov/summary.json"
    check summary-commit $?
fi
mkdir -p "$tmp/repo/drover-0.1.0"
git -C "$tmp/repo" init -q 2>/dev/null &&
    git -C "$tmp/repo" -c user.name=t -c user.email=t@localhost commit -q --allow-empty -m x
cmake -DSRC="$tmp/repo/drover-0.1.0" -DOUT="$tmp/commit.c" -DGIT="$(command -v git)" \
    -P "$src/cmake/commit.cmake" && grep -q 'drv_build_commit\[\] = "unknown";' "$tmp/commit.c" &&
    grep -q 'drv_build_dirty = 0;' "$tmp/commit.c"
check commit-unknown-outside-git $?

# drover emulate: help, bad usage and bad input exit 2 before any traffic; an unreachable API
# server (a closed loopback port) exits 1 naming the server.
expect_status emulate-help 0 "$drover" emulate --help
for flag in --cluster --kubeconfig --context --speed --start-delay; do
    grep -q -- "$flag" "$tmp/out"
    check "emulate-help-mentions$flag" $?
done
"$drover" --help | grep -q '^  emulate '
check emulate-in-main-help $?
expect_status emulate-no-cluster 2 "$drover" emulate
expect_status emulate-bad-speed 2 "$drover" emulate --cluster "$fx/two-nodes.yaml" --speed 0
expect_status emulate-bad-cluster 2 "$drover" emulate --cluster "$fx/bad-cluster-mem.yaml"
grep -q 'bad-cluster-mem.yaml:4: nodes\[0\].memory' "$tmp/err"
check emulate-bad-cluster-message $?
cat >"$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "http://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: nowhere, user: u}
current-context: c
EOF
expect_status emulate-unreachable 1 "$drover" emulate --cluster "$fx/two-nodes.yaml" \
    --kubeconfig "$tmp/kubeconfig"
grep -q '127.0.0.1:1' "$tmp/err"
check emulate-unreachable-message $?

# The default run: one row per built-in policy, and the files --out promises.
expect_status default 0 "$drover" sim --out "$tmp/demo"
for p in k8s-default gang-fifo; do
    grep -q "^$p " "$tmp/out"
    check "row-$p" $?
    [ -s "$tmp/demo/jobs-$p.csv" ] && [ -s "$tmp/demo/timeline-$p.csv" ]
    check "files-$p" $?
done
[ -s "$tmp/demo/summary.json" ] && [ -s "$tmp/demo/summary.csv" ]
check summary-files $?
# 60 jobs + header in each per-job CSV.
[ "$(wc -l <"$tmp/demo/jobs-gang-fifo.csv")" -eq 61 ]
check jobs-csv-rows $?
ls -a "$tmp/demo" | grep -q '\.tmp$'
[ $? -ne 0 ]
check no-temp-files-left $?

# JSON and CSV formats, and determinism through the CLI.
expect_status json 0 "$drover" sim --format json --seed 5
cp "$tmp/out" "$tmp/a.json"
expect_status json-again 0 "$drover" sim --format json --seed 5
cmp -s "$tmp/out" "$tmp/a.json"
check json-deterministic $?

# drover run: bad usage and configuration are refused with exit 2 before anything connects.
expect_status run-help 0 "$drover" run --help
grep -q -- '--leader-elect' "$tmp/out"
check run-help-text $?
expect_status run-bad-lease 2 "$drover" run --lease nons
grep -q "expected NAMESPACE/NAME, found 'nons'" "$tmp/err"
check run-bad-lease-message $?
expect_status run-bad-policy 2 "$drover" run --policy nope
grep -q 'nope' "$tmp/err"
check run-bad-policy-message $?
expect_status run-bad-qps 2 "$drover" run --kube-api-qps 0
grep -q 'kube-api-qps: expected a number from 1' "$tmp/err"
check run-bad-qps-message $?
expect_status run-no-kubeconfig 2 env -u KUBECONFIG HOME="$tmp/nohome" "$drover" run
grep -q 'kubeconfig' "$tmp/err"
check run-no-kubeconfig-message $?
expect_status run-incluster-outside 2 env -u KUBERNETES_SERVICE_HOST "$drover" run --in-cluster
expect_status run-unknown-flag 2 "$drover" run --nope

# One parser for every command: GNU --flag=value, --version per command, one-line usage errors.
expect_status equals-value 0 "$drover" sim --policy=gang-fifo --format=csv --seed=2
[ "$(cut -d, -f1 "$tmp/out" | tr '\n' ' ')" = "policy gang-fifo " ]
check equals-value-used $?
expect_status run-equals-value 2 "$drover" run --policy=nope
grep -q "unknown policy 'nope'" "$tmp/err"
check run-equals-value-parsed $?
for c in sim run report policies calibrate emulate help; do
    expect_status "version-$c" 0 "$drover" $c --version
    grep -q '^drover [0-9]' "$tmp/out"
    check "version-$c-format" $?
done
expect_status run-unknown-flag-one-line 2 "$drover" run --nope
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "'--nope'" "$tmp/err"
check run-unknown-flag-one-line-message $?
expect_status sim-missing-value 2 "$drover" sim --seed
grep -q -- '--seed needs a value' "$tmp/err"
check sim-missing-value-message $?
expect_status sim-switch-value 2 "$drover" sim --check=yes
grep -q -- '--check takes no value' "$tmp/err"
check sim-switch-value-message $?

# drover help: every command's help is its --help; an unknown one is a usage error.
for c in sim run report policies calibrate emulate; do
    "$drover" help $c >"$tmp/a" 2>&1
    "$drover" $c --help >"$tmp/b" 2>&1
    cmp -s "$tmp/a" "$tmp/b" && grep -q "^usage: drover $c" "$tmp/a"
    check "help-$c-same-as-flag" $?
done
expect_status help-unknown 2 "$drover" help nosuch
grep -q "unknown command 'nosuch'" "$tmp/err" && [ ! -s "$tmp/out" ]
check help-unknown-message $?

# drover policies: names the systems, not the design notes' seed numbers; --profiles lists the
# file's profiles with their profile lines.
expect_status policies 0 "$drover" policies
grep -q 'seed [0-9]' "$tmp/out"
[ $? -ne 0 ]
check policies-no-seed-numbers $?
grep -q '^  volcano-priority .*(Volcano)' "$tmp/out" && grep -q '^  dragon .*(DRAGON)' "$tmp/out"
check policies-system-names $?
pfx=$src/tests/fixtures/policy/profiles.yaml
expect_status policies-profiles 0 "$drover" policies --profiles "$pfx"
grep -q '^  mine  *priority without parallelism, DRAGON, locality$' "$tmp/out"
check policies-profiles-lists-file $?
grep -q '^ *gang=true period=5 queue_order=priority(w_par=0) admit=dragon score=locality\*3,least-allocated scale=dragon$' "$tmp/out"
check policies-profiles-line $?
grep -q '^  plain$' "$tmp/out" && grep -q '^  k8s-default ' "$tmp/out"
check policies-profiles-keeps-builtins $?
expect_status policies-bad-profiles 2 "$drover" policies --profiles "$src/tests/fixtures/policy/bad-key.yaml"
grep -q 'bad-key.yaml:4:' "$tmp/err"
check policies-bad-profiles-message $?

# A --profiles file's profile replaces the built-in of its name, for sim and run alike: here
# k8s-default is redefined as gang-fifo's line, so it must give gang-fifo's numbers, and
# `--policy all` must run it once.
printf '%s\n' 'profiles:' '  - name: k8s-default' '    doc: gang-fifo under another name' \
    '    gang: true' '    period: 1' '    queue_order: fifo' '    admit: gang' \
    '    score: least-allocated' >"$tmp/override.yaml"
expect_status override-all 0 "$drover" sim --profiles "$tmp/override.yaml" --policy all --format csv
[ "$(grep -c '^k8s-default,' "$tmp/out")" -eq 1 ]
check override-runs-once $?
[ "$(grep '^k8s-default,' "$tmp/out" | cut -d, -f2-)" = "$(grep '^gang-fifo,' "$tmp/out" | cut -d, -f2-)" ]
check override-is-the-files $?
expect_status override-policies 0 "$drover" policies --profiles "$tmp/override.yaml"
grep -q '^  k8s-default .*replaced' "$tmp/out"
check override-policies-says-replaced $?
# drover run takes the same file and name, and gets as far as the kubeconfig.
expect_status run-override 2 env -u KUBECONFIG HOME="$tmp/nohome" "$drover" run \
    --profiles "$tmp/override.yaml" --policy k8s-default
grep -q 'kubeconfig' "$tmp/err" && ! grep -q 'policy' "$tmp/err"
check run-override-found $?

# --explain under a policy that does not order by priority (k8s-default: FIFO) says so and shows
# no priority factors; under one that does, it shows them.
expect_status explain-fifo 0 "$drover" sim --policy k8s-default --explain resnet50-1
grep -q 'k8s-default orders its queue FIFO' "$tmp/out"
check explain-fifo-says-fifo $?
grep -q -E '^(user|class|wait|parallelism|share|priority) ' "$tmp/out"
[ $? -ne 0 ]
check explain-fifo-no-factors $?
expect_status explain-priority 0 "$drover" sim --policy volcano-priority --explain resnet50-1
[ "$(grep -c -E '^(user|class|wait|parallelism|share|priority) ' "$tmp/out")" -eq 6 ]
check explain-priority-factors $?
# Each factor is min-max normalised over the queue and the job explained, so within [0, 1]: eight
# has the most workers (8 against 2 and 5) and the highest class, and it waited least. Before the
# job explained was counted in the bounds (it is not live yet at its first cycle) this printed
# parallelism 2.000, wait -1.000 and class 0.000 (issue 30).
cat >"$tmp/explain-wl.yaml" <<'EOF'
jobs:
  - {name: big, model: resnet50, user: a, roles: {worker: {replicas: 4, cpu: 8, memory: 8Gi}}}
  - {name: two, model: lenet, user: b, submit: 10, roles: {worker: {replicas: 2, cpu: 8}}}
  - {name: five, model: lenet, user: b, submit: 20, roles: {worker: {replicas: 5, cpu: 8}}}
  - {name: eight, model: lenet, user: c, priority: 100, submit: 30,
     roles: {worker: {replicas: 8, cpu: 1, memory: 1Gi}}}
EOF
expect_status explain-bounds 0 "$drover" sim --policy volcano-priority \
    --cluster "$src/examples/cluster-4node.yaml" --workload "$tmp/explain-wl.yaml" --explain eight
awk '/^(user|class|wait|parallelism|share) / { n++; if ($3 < 0 || $3 > 1) bad++ }
     END { exit !(n == 5 && !bad) }' "$tmp/out"
check explain-normalised-in-0-1 $?
grep -q 'normalised over 3 queued jobs' "$tmp/out" &&
    grep -Eq '^parallelism +8\.0 +1\.000 ' "$tmp/out" && grep -Eq '^class +100\.0 +1\.000 ' "$tmp/out"
check explain-bounds-take-the-job $?
# With queues (examples/cluster-tenants.yaml): the job's queue with its weight from the file, and
# its user's share within that queue, before the factors.
expect_status explain-queues 0 "$drover" sim --cluster "$src/examples/cluster-tenants.yaml" \
    --workload "$src/examples/tenants-workload.yaml" --policy drover --explain batch-02-lenet
grep -q '^queue batch (weight 1): uses .* weighted dominant share 0\.[0-9]' "$tmp/out"
check explain-queue-line $?
grep -q '^user dave in queue batch: share 0\.[0-9]' "$tmp/out"
check explain-user-line $?
grep -q -E '^share +0\.[0-9]+ ' "$tmp/out"
check explain-share-factor $?
# With a half-life (examples/morning-*.yaml, fair-decay): night's jobs ended, so its share now is
# 0, but the order reads the decayed usage of the night: --explain prints that one too.
expect_status explain-decayed 0 "$drover" sim --workload "$src/examples/morning-workload.yaml" \
    --cluster "$src/examples/cluster-morning.yaml" --profiles "$src/examples/morning-profiles.yaml" \
    --policy fair-decay --explain night-morning-0
grep -q '^queue night (weight 1): .* weighted dominant share 0\.0000$' "$tmp/out" &&
    grep -q -E '^decayed over time \(half-life 3600 s\), what the order reads: queue night usage 0\.[1-9]' "$tmp/out"
check explain-decayed-share $?


# --seeds: one row per policy with mean ± interval over the seeds; the same numbers whatever
# --threads says (runs side by side must not change a result); a bad list is a usage error.
expect_status seeds 0 "$drover" sim --seeds 1-3 --policy gang-fifo,k8s-default --threads 1 \
    --format csv
cp "$tmp/out" "$tmp/seeds1.csv"
[ "$(wc -l <"$tmp/seeds1.csv")" -eq 3 ] && head -1 "$tmp/seeds1.csv" | grep -q '^policy,runs,avg_jct_s_mean,avg_jct_s_ci95' &&
    grep -q '^gang-fifo,3,' "$tmp/seeds1.csv"
check seeds-csv $?
expect_status seeds-threads 0 "$drover" sim --seeds 1-3 --policy gang-fifo,k8s-default --threads 4 \
    --format csv
cmp -s "$tmp/out" "$tmp/seeds1.csv"
check seeds-threads-same $?
# the mean of three single-seed runs is the --seeds mean
sum=0
for s in 1 2 3; do
    "$drover" sim --seed $s --policy gang-fifo --format csv >"$tmp/one.csv"
    v=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c["avg_jct_s"] }' "$tmp/one.csv")
    sum=$(awk -v a="$sum" -v b="$v" 'BEGIN { printf "%.6f", a + b }')
done
mean=$(awk -F, '$1 == "gang-fifo" { printf "%.6f", $3 }' "$tmp/seeds1.csv")
awk -v s="$sum" -v m="$mean" 'BEGIN { d = s / 3 - m; exit !(d < 1e-3 && d > -1e-3) }'
check seeds-mean $?
# With --out: seeds.csv holds each seed's row of summary.csv (the same bytes as a run of that
# seed alone writes), and summary-seeds.json the provenance, the baseline and each policy's
# paired difference against it, whose mean is the mean of the per-seed differences in seeds.csv.
expect_status seeds-out 0 "$drover" sim --seeds 1-3 --policy gang-fifo,k8s-default \
    --out "$tmp/so"
[ "$(wc -l <"$tmp/so/seeds.csv")" -eq 7 ] &&
    head -1 "$tmp/so/seeds.csv" | grep -q '^seed,policy,jobs,done,avg_jct_s,'
check seeds-out-csv $?
"$drover" sim --seed 2 --policy gang-fifo,k8s-default --out "$tmp/s2" >/dev/null 2>&1
grep '^2,' "$tmp/so/seeds.csv" | sed 's/^2,//' >"$tmp/s2rows"
tail -n +2 "$tmp/s2/summary.csv" | cmp -s - "$tmp/s2rows"
check seeds-out-row-is-the-seeds-run $?
j=$tmp/so/summary-seeds.json
grep -q '"drover_commit": "' "$j" && grep -q '"drover_dirty": ' "$j" &&
    grep -q '"command": \["drover", "sim", "--seeds", "1-3", "--policy", "gang-fifo,k8s-default", "--out", ' "$j" &&
    grep -q '"seeds": \[1, 2, 3\]' "$j" && grep -q '"baseline": "k8s-default"' "$j"
check seeds-out-provenance $?
want=$(awk -F, 'NR > 1 { d[$1] += ($2 == "gang-fifo" ? $5 : -$5) } END { for (k in d) s += d[k]; printf "%.6f", s / 3 }' "$tmp/so/seeds.csv")
got=$(sed -n '/"paired"/,$p' "$j" | grep -o '"avg_jct_s": {"mean": [-0-9.e+]*' | head -1 | sed 's/.*: //')
# (seeds.csv has summary.csv's six significant digits: JCTs to 0.01 s)
awk -v a="$want" -v b="$got" 'BEGIN { d = a - b; exit !(b != "" && d < 0.02 && d > -0.02) }'
check seeds-out-paired-mean $?
expect_status seeds-paired-table 0 "$drover" sim --seeds 1-3 --policy gang-fifo,k8s-default
grep -q '^paired difference against k8s-default' "$tmp/out" &&
    grep -Eq '^gang-fifo +[-+][0-9.]+ ± [0-9.]+ ' "$tmp/out"
check seeds-paired-table $?
expect_status seeds-table 0 "$drover" sim --seeds 1,2 --policy gang-fifo
grep -q 'seeds 1,2 (2 runs of each policy)' "$tmp/out" && grep -q '±' "$tmp/out"
check seeds-table-text $?
expect_status seeds-bad 2 "$drover" sim --seeds 3-1
grep -q -- '--seeds: expected seeds and ranges' "$tmp/err"
check seeds-bad-message $?
expect_status seeds-explain 2 "$drover" sim --seeds 1-2 --explain x


# A GPU trace on the built-in (CPU) cluster: exit 2, and the message says what to add.
expect_status trace-no-gpus 2 "$drover" sim --trace "$src/tests/fixtures/trace/helios.csv"
grep -q -- "add --mechanics pollux" "$tmp/err"
check trace-no-gpus-hint $?

# --stream: a CSV trace read as the clock reaches its rows gives the same table and the same
# jobs CSV as the trace read whole (rows in order of finishing, so compared sorted, header
# first); the built-in scenario streamed gives the same table; what it cannot do is refused.
awk 'BEGIN { print "id,queued_at,n_gpu,secs,arch"; m[0] = "imagenet"; m[1] = "resnet";
    m[2] = "bert"; for (i = 0; i < 40; i++) printf "j%d,%d,%d,%d,%s\n", i, i * 37,
    1 + (i * 7) % 6, 120 + (i * 113) % 900, m[i % 3] }' >"$tmp/stream.csv"
cols=name=id,submit=queued_at,gpus=n_gpu,duration=secs,model=arch
expect_status stream-whole 0 "$drover" sim --quiet --trace "$tmp/stream.csv" --trace-columns "$cols" \
    --mechanics pollux --out "$tmp/whole"
mv "$tmp/out" "$tmp/whole.txt"
expect_status stream 0 "$drover" sim --quiet --stream --trace "$tmp/stream.csv" \
    --trace-columns "$cols" --mechanics pollux --out "$tmp/streamed"
grep -v '^wrote ' "$tmp/whole.txt" | grep -v '^plots: ' | sed "s#$tmp/whole#DIR#" >"$tmp/w.txt"
grep -v '^wrote ' "$tmp/out" | sed "s#$tmp/streamed#DIR#" >"$tmp/s.txt"
grep -q '^40 jobs on 16 nodes' "$tmp/s.txt" && cmp -s "$tmp/w.txt" "$tmp/s.txt"
check stream-same-table $?
cmp -s "$tmp/whole/summary.csv" "$tmp/streamed/summary.csv"
check stream-same-summary $?
n=0
r=0
for f in "$tmp"/whole/jobs-*.csv; do
    g=$tmp/streamed/${f##*/}
    n=$((n + 1))
    [ -f "$g" ] && [ "$(wc -l <"$f")" -eq 41 ] && [ "$(head -1 "$f")" = "$(head -1 "$g")" ] &&
        [ "$(sort "$f" | cksum)" = "$(sort "$g" | cksum)" ] || { r=1; echo "  differs: $g" >&2; }
done
[ "$n" -ge 10 ]
check stream-policies $?
check stream-same-jobs-csv $r
[ ! -e "$tmp/streamed/timeline-drover.csv" ] && [ ! -e "$tmp/streamed/index.html" ]
check stream-no-timeline $?
expect_status stream-generated 0 "$drover" sim --quiet --stream --policy gang-fifo,drover --seed 4
mv "$tmp/out" "$tmp/gen-s.txt"
expect_status stream-generated-whole 0 "$drover" sim --quiet --policy gang-fifo,drover --seed 4
cmp -s "$tmp/out" "$tmp/gen-s.txt"
check stream-generated-same-table $?
expect_status stream-workload 2 "$drover" sim --stream --workload "$fx/bad-workload-cpu.yaml"
grep -q -- '--stream and --workload' "$tmp/err" && [ "$(wc -l <"$tmp/err")" -eq 1 ]
check stream-workload-message $?
expect_status stream-format 2 "$drover" sim --stream --trace "$tmp/stream.csv" \
    --trace-columns "$cols" --trace-format pollux
grep -q -- "--trace-format: the streamed reader reads only \`columns\`" "$tmp/err"
check stream-format-message $?
expect_status stream-no-columns 2 "$drover" sim --stream --trace "$tmp/stream.csv"
grep -q -- '--trace needs --trace-columns MAP' "$tmp/err"
check stream-no-columns-message $?
expect_status stream-seeds 2 "$drover" sim --stream --seeds 1-2
expect_status stream-queues 2 "$drover" sim --stream --cluster "$fx/cluster-queues.yaml"
grep -q 'declares queues' "$tmp/err"
check stream-queues-message $?
expect_status stream-no-gpus 2 "$drover" sim --stream --trace "$tmp/stream.csv" --trace-columns "$cols"
grep -q -- "add --mechanics pollux" "$tmp/err"
check stream-no-gpus-hint $?
{ head -1 "$tmp/stream.csv" && tail -n +2 "$tmp/stream.csv" | sort -t, -k2,2nr; } >"$tmp/unsorted.csv"
expect_status stream-unsorted 2 "$drover" sim --stream --trace "$tmp/unsorted.csv" \
    --trace-columns "$cols" --mechanics pollux --out "$tmp/unsorted"
grep -q 'unsorted.csv:.*submit: expected rows in order of submission' "$tmp/err" &&
    [ ! -e "$tmp/unsorted" ]
check stream-unsorted-message $?

# An endless text file (issue 26: --cluster /dev/zero read until memory ran out): a FIFO fed
# forever by `yes` is refused at the YAML limit, naming the file and the limit; no output.
mkfifo "$tmp/endless.yaml"
yes 'nodes: []' >"$tmp/endless.yaml" 2>/dev/null &
feeder=$!
expect_status endless-cluster 2 "$drover" sim --cluster "$tmp/endless.yaml" --out "$tmp/endless"
grep -qF "endless.yaml: larger than 64 MiB, the most a YAML file may be" "$tmp/err" &&
    [ ! -e "$tmp/endless" ]
check endless-cluster-message $?
kill "$feeder" 2>/dev/null
wait "$feeder" 2>/dev/null

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
