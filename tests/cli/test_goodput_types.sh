#!/bin/sh
# goodput's allocation on GPU types (src/policy/goodput_types.c, issue 27), on synthetic
# profiles written here in Sia's layout: type "slow" measured 1.1 times as slow as "fast".
#  - solver=1 (the default, Sia's integer program, goodput_ilp.c): three new jobs on 4 fast and 4
#    slow GPUs, the slow type twice as slow: at the 60 s round the program gives one of them 2
#    slow GPUs (the others 2 fast each: costs 0.5 + 0.5 + 0.71 against any other choice), where
#    the greedy and its moves (solver=0) leave the slow type idle and split the fast one 1/2/1;
# The move cases below are the greedy's (solver=0), with one type-blind fit (fits=0).
#  - move=1: new jobs do not all pile onto the fast type when the slow one's GPUs, left idle by
#    the greedy, give a job more goodput (move=0 puts all three on the fast type);
#  - move=2 (the default): a job holding 2 fast GPUs moves to the slow type's 8 when its
#    goodput there is higher (move=1 keeps it on the fast type; penalty=0 here: at the default
#    0.2 the synthetic job's gain, 1.23 times on 4 GPUs, does not pay the restart);
#  - bootstrap: a new job gets no GPUs before its submission + types x `bootstrap` seconds;
#  - fits=1 (the default): a job's online model is kept per type: after its move in the case
#    above, its slow samples make the slow type's fit and leave the fast type's alone, and it
#    stays; the type-blind fit (fits=0) takes the slow samples for the one model, which the
#    one-GPU speed ratio then scales up for the fast type, and the job moves back; so under the
#    greedy (solver=0) and under the program (solver=1) alike.
# Usage: test_goodput_types.sh DROVER
set -eu
DROVER=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# profiles: step = k * (0.001 * local batch + 0.01 * replicas), k = 1 (fast), 1.1 (slow)
. "$(dirname "$0")/typed_profiles.sh"
typed_profiles "$T/prof" fast:1 slow:1.1
# a profile: drover with goodput's knobs $2
prof() {
    cat <<P
  - name: $1
    doc: drover with goodput($2)
    gang: true
    period: 5
    queue_order: fairshare, las, priority
    admit: goodput($2), dragon(grow_min_left=900;starve_wait=86400;quiet=120;start_wait=300;adaptive=0)
    scale: goodput, dragon
    score: locality*4, ps-anti-affinity, least-allocated
    migrate: las, specon
P
}
{
    echo "profiles:"
    prof m0 "solver=0;fits=0;move=0;bootstrap=0"
    prof m1 "solver=0;fits=0;move=1;bootstrap=0"
    prof m1p "solver=0;fits=0;move=1;bootstrap=0;penalty=0"
    prof m2p "solver=0;fits=0;move=2;bootstrap=0;penalty=0"
    prof f1p "solver=0;fits=1;bootstrap=0;penalty=0"
    prof i0p "fits=0;bootstrap=0;penalty=0"
    prof i1p "bootstrap=0;penalty=0"
    prof i1 "bootstrap=0"
    prof g2 "solver=0;fits=0;bootstrap=0"
    prof b0 "bootstrap=0"
    prof b40 "bootstrap=40"
} >"$T/p.yaml"
# sim TRACE CLUSTER POLICIES OUT
sim() {
    "$DROVER" sim --trace "$1" --calib-dir "$T/prof" --cluster "$2" --profiles "$T/p.yaml" \
        --policy "$3" --quiet --out "$4" >/dev/null
}
# types JOB placements.csv: the node names (types) the job's pods ran on, sorted, unique
types() { awk -F, -v j="$1" 'NR > 1 && $1 == j { print $3 }' "$2" | sed 's/-[0-9]*$//' | sort -u | tr '\n' ' '; }

# 1. three jobs at once, 4 fast GPUs and 4 slow ones
printf 'nodes:\n  - {name: s, count: 1, cpu: 8, memory: 32Gi, gpu: 4, gpuType: slow}\n  - {name: f, count: 1, cpu: 8, memory: 32Gi, gpu: 4, gpuType: fast}\n' >"$T/c44.yaml"
printf 'name,time,application,num_replicas,batch_size\ncifar10-0,0,cifar10,1,64\ncifar10-1,10,cifar10,1,64\ncifar10-2,20,cifar10,1,64\n' >"$T/three.csv"
sim "$T/three.csv" "$T/c44.yaml" m0,m1 "$T/o1"
awk -F, 'NR > 1 && $3 !~ /^f/ { exit 1 }' "$T/o1/placements-m0.csv" ||
    fail "move=0 no longer puts every job on the fast type (the check below cannot fail)"
awk -F, 'NR > 1 && $3 ~ /^s/ { s = 1 } END { exit !s }' "$T/o1/placements-m1.csv" ||
    fail "move=1: the slow type's 4 GPUs stayed idle: $(cat "$T/o1/placements-m1.csv")"

# 2. one job, 2 fast GPUs and 2 nodes of 4 slow ones
printf 'nodes:\n  - {name: s, count: 2, cpu: 8, memory: 32Gi, gpu: 4, gpuType: slow}\n  - {name: f, count: 1, cpu: 8, memory: 32Gi, gpu: 2, gpuType: fast}\n' >"$T/c28.yaml"
printf 'name,time,application,num_replicas,batch_size\ncifar10-0,0,cifar10,1,128\n' >"$T/one.csv"
sim "$T/one.csv" "$T/c28.yaml" m1p,m2p,f1p,i0p,i1p "$T/o2"
[ "$(types cifar10-0 "$T/o2/placements-m1p.csv")" = "f " ] ||
    fail "move=1: the job left the fast type: $(cat "$T/o2/placements-m1p.csv")"
[ "$(types cifar10-0 "$T/o2/placements-m2p.csv")" = "f s " ] ||
    fail "move=2: the job did not move from the fast type to the slow one: $(cat "$T/o2/placements-m2p.csv")"

awk -F, 'NR > 1 && $4 >= 120 && $3 ~ /^f/ { f = 1 } END { exit !f }' "$T/o2/placements-m2p.csv" ||
    fail "fits=0 no longer moves the job back to the fast type (the check below cannot fail)"
awk -F, 'NR > 1 && $4 >= 60 && $3 !~ /^s/ { exit 1 }' "$T/o2/placements-f1p.csv" ||
    fail "fits=1: the job left the slow type after its move: $(cat "$T/o2/placements-f1p.csv")"
awk -F, 'NR > 1 && $4 >= 120 && $3 ~ /^f/ { f = 1 } END { exit !f }' "$T/o2/placements-i0p.csv" ||
    fail "solver=1, fits=0 no longer moves the job back to the fast type (the check below cannot fail)"
awk -F, 'NR > 1 && $4 >= 60 && $3 !~ /^s/ { exit 1 }' "$T/o2/placements-i1p.csv" ||
    fail "solver=1, fits=1: the job left the slow type after its move: $(cat "$T/o2/placements-i1p.csv")"

# 3. the integer program: the slow type twice as slow, three jobs, 4 fast and 4 slow GPUs
typed_profiles "$T/prof2" fast:1 slow:2
"$DROVER" sim --trace "$T/three.csv" --calib-dir "$T/prof2" --cluster "$T/c44.yaml" \
    --profiles "$T/p.yaml" --policy i1,g2 --quiet --out "$T/o4" >/dev/null
# pods bound at the 60 s round on each type
at60() { awk -F, -v t="$2" 'NR > 1 && $4 == 60 && substr($3, 1, 1) == t { n++ } END { print n + 0 }' "$1"; }
[ "$(at60 "$T/o4/placements-g2.csv" s)" = 0 ] ||
    fail "solver=0 no longer leaves the slow type idle at 60 s (the check below cannot fail)"
[ "$(at60 "$T/o4/placements-i1.csv" s)" = 2 ] && [ "$(at60 "$T/o4/placements-i1.csv" f)" = 2 ] ||
    fail "solver=1: not 2 slow GPUs and 2 fast ones more at 60 s: $(cat "$T/o4/placements-i1.csv")"

# 4. bootstrap: 2 types x 40 s: no start before 80 s (the first round, 60 s, without it)
sim "$T/one.csv" "$T/c28.yaml" b0,b40 "$T/o3"
awk -F, 'NR > 1 { exit !($4 < 80) }' "$T/o3/placements-b0.csv" ||
    fail "bootstrap=0: the job did not start at the first round: $(cat "$T/o3/placements-b0.csv")"
awk -F, 'NR > 1 && $4 < 80 { exit 1 }' "$T/o3/placements-b40.csv" ||
    fail "bootstrap=40: the job got GPUs before 80 s: $(cat "$T/o3/placements-b40.csv")"
echo "ok"
