#!/bin/sh
# Runs every benchmark and writes BENCHMARKS.md: sh bench/run.sh BUILD_DIR
# Each benchmark prints its figure beside a deliberately simple baseline measured in the same
# run, so ratios stay meaningful on a shared, noisy machine. Takes a few minutes.
set -eu
b=${1:-build}
out=BENCHMARKS.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
run() { # title, command...
    title=$1
    shift
    echo "running: $*" >&2
    {
        printf '\n### %s\n\n```\n$ %s\n' "$title" "$*"
        "$@"
        printf '```\n'
    } >>"$tmp"
}
run "Gang placement throughput vs exhaustive scan (10,000 pods, 1k-50k nodes)" \
    "$b/bench/place" --nodes 1000,5000,10000,50000 --reps 3
run "Gang placement with the drover profile's scoring (locality, PS anti-affinity, least-allocated) vs the same scores scanned" \
    "$b/bench/place" --nodes 1000,5000,10000,50000 --reps 1 \
    --profile "admit=gang score=locality*4,ps-anti-affinity,least-allocated"
run "Gang placement with node constraints and queues: 30 % of nodes labelled pool=gpu and tainted gpu=true:NoSchedule, half the pods selecting and tolerating them, jobs in three queues with unlimited quotas (default profile vs the scan with the same rule)" \
    "$b/bench/place" --nodes 5000,50000 --reps 3 --constraints 1 --queues 3
run "Gang placement with node constraints, three queues and the drover profile's scoring vs the same scores scanned (fastest of 10 cycles, the first of which builds the index; the scan once; every decision compared)" \
    "$b/bench/place" --nodes 5000,50000 --reps 10 --scan-reps 1 --constraints 1 --queues 3 \
    --profile "admit=gang score=locality*4,ps-anti-affinity,least-allocated"
run "Gang placement with topology-bound gangs (issue 29): every gang required in one rack of 20 nodes (levels zone > rack), default profile vs the scan with the same rule (best-fit rack, tried in turn)" \
    "$b/bench/place" --nodes 5000,50000 --reps 3 --topology 1
run "Gang placement with three GPU types (issue 27): the GPU nodes labelled nvidia.com/gpu.product a, b, c in turn, one type per job, the drover profile's scoring vs the same scores scanned (every decision compared)" \
    "$b/bench/place" --nodes 5000 --reps 5 --scan-reps 1 --gpu-types 1 \
    --profile "admit=gang score=locality*4,ps-anti-affinity,least-allocated"
run "A restarted controller's first cycle: e2e_bind's cluster in the core alone (5,000 nodes with zone and rack labels, 16,000 foreign 100m pods, 500 gangs of 4 x 1 CPU), a fresh scheduler's first cycle with the drover profile's scoring vs the same scores scanned" \
    "$b/bench/place" --e2e 1 --first 1 --nodes 5000 --pods 2000 --reps 10 --scan-reps 1 \
    --profile "admit=gang score=locality*4,ps-anti-affinity,least-allocated"
run "Scheduling-cycle latency, 1,000 pending pods on 5,000 nodes (200 cycles)" \
    "$b/bench/place" --nodes 5000 --pods 1000 --latency 200
run "Scheduling-cycle latency with the drover profile's scoring, 1,000 pending pods on 5,000 nodes (200 cycles; the first builds the index)" \
    "$b/bench/place" --nodes 5000 --pods 1000 --latency 200 \
    --profile "admit=gang score=locality*4,ps-anti-affinity,least-allocated"
run "Simulator: 10,000 jobs on 1,000 nodes (default scenario's arrival rate: overloaded); /tick = time-stepped baseline" \
    "$b/bench/sim_speed" --jobs 10000 --nodes 1000 --baseline 1 --policy k8s-default,gang-fifo,drover
run "Simulator: 100,000 jobs on 5,000 nodes, steady load" \
    "$b/bench/sim_speed" --jobs 100000 --nodes 5000 --interarrival 0.16 --policy k8s-default,gang-fifo,drover
run "Simulator: 100,000 jobs on 5,000 nodes, overloaded (queue grows all trace long)" \
    "$b/bench/sim_speed" --jobs 100000 --nodes 5000 --policy gang-fifo
run "Simulator: FlowCon on 100 jobs submitted at once, 8 nodes (pod-by-pod admission deadlocks there, as k8s-default's does: docs/performance.md item 37); /tick = a cycle every period, as before FlowCon had a wake" \
    "$b/bench/sim_speed" --jobs 100 --nodes 8 --interarrival 0.001 --policy flowcon --baseline 1
run "Simulator, streamed (jobs read as the clock reaches them): 1,000,000 generated jobs on 50,000 nodes, beside the in-memory run of 100,000 jobs as the baseline and a streamed run of 300,000; peak RSS per run (each in its own process)" \
    "$b/bench/sim_stream" --jobs 1000000 --small 100000 --mid 300000 --nodes 50000 --interarrival 0.016
run "Trace replay: the Philly-derived trace (82,247 jobs) on examples/cluster-philly.yaml, gang-fifo and tiresias" \
    "$b/bench/trace_replay" --policy gang-fifo,tiresias
run "Trace replay: the Philly-derived trace on examples/cluster-philly.yaml with drover; /tick = every cycle run (no quiet cycle skipped), same results required" \
    "$b/bench/trace_replay" --policy drover --baseline 1
run "Trace replay: the Philly trace under --mechanics pollux (Pollux's 16 nodes x 4 GPUs, 60 s rounds: 82,247 jobs on 64 GPUs, overloaded), drover (issue 24: <= 60 s) beside gang-fifo on the same input as the baseline" \
    "$b/bench/trace_replay" --mechanics pollux --policy gang-fifo,drover
run "Trace replay: a 160-job research workload (Pollux workload 1 under --mechanics pollux: 16 nodes x 4 GPUs, 60 s rounds); /tick = every cycle run" \
    "$b/bench/trace_replay" --trace data/pollux/workloads/workload-1.csv --mechanics pollux \
    --policy tiresias,optimus,drover --baseline 1
run "Controller decision latency: watch event completing a gang to its last binding request, 5,000 nodes (drover run against the in-memory test API server on loopback; baseline: the same controller scoring every node)" \
    "$b/bench/watch_bind" --nodes 5000 --jobs 200
run "Simulator on every core: every policy x 8 seeds on Pollux workload 1, one run at a time vs one thread per core (same process; results must be identical)" \
    "$b/bench/sim_parallel" --seeds 8
run "drover run end to end: 5,000 nodes, 16,000 existing pods, 500 gangs x 4 workers submitted before start; drover (default API budget) from start (list, sync) to the last pod placed vs a plain client sending the same requests (the ceiling: the informers' paged lists and discovery, each list's watch held open, then from 8 threads the writes Drover sent, byte for byte: pod creations, Services, status patches)" \
    "$b/bench/e2e_bind" --reps 5
run "drover run end to end as above, with recorded-size objects (the recorded Node and Pod, 1.6 and 2.5 kB: managedFields, volumes, images)" \
    "$b/bench/e2e_bind" --reps 3 --real-objects 1
run "drover run end to end as above, against a real server's model (the test server's load model, issue 28: creates and patches p50 15 ms, p90 31 ms, lists 2 ms + 15 us an object, API Priority and Fairness' 244 seats): what bounds both is the requests each keeps in flight" \
    "$b/bench/e2e_bind" --reps 3 --server-model 1
run "drover run end to end against the real server's model as above, its binders held to 8 in flight (--binders 8: the limit sized from latency cannot grow; the baseline of the default's 32)" \
    "$b/bench/e2e_bind" --reps 2 --server-model 1 --binders 8
run "drover run end to end against a slower server's model: every service time of the model x 3.33 (creates p50 50 ms, p90 103 ms; lists 6.7 ms + 50 us an object), the binders' limit sized from latency as by default" \
    "$b/bench/e2e_bind" --reps 2 --server-model 1 --latency-scale 3.33
run "drover run end to end against the real server's model with a crowded priority level (--seats 4: four seats for both clients' requests): the limit sized from latency against a server that queues" \
    "$b/bench/e2e_bind" --reps 2 --server-model 1 --seats 4
run "drover run end to end against the real server's model as above, with --bind-mode=binding (each pod created unbound, then bound through pods/binding: two requests a pod; the plain client replays the same requests)" \
    "$b/bench/e2e_bind" --reps 3 --server-model 1 --bind-mode-binding 1
run "Controller informer caches: 50,000 pods and 5,000 nodes, compact records vs the API objects" \
    "$b/bench/informer_mem" --pods 50000 --nodes 5000
run "drover run's memory per pod: the controller synced and idle against the test API server with 50,000 other workloads' pods over 5,000 nodes, minus the same cluster without pods (its heap in use and resident set, each run in its own process)" \
    "$b/bench/run_mem" --pods 50000 --nodes 5000
run "Informer list decoding: a list page of 16,000 objects (plain and recorded-size pods and nodes) decoded as the informers do, CPU per object, best of 7; documents (drover's decoder) vs jansson (the baseline: the same items through json_t and drv_kube_decode_pod / _node)" \
    "$b/bench/decode" --objects 16000 --reps 7
for extra in bench/run-*.sh; do
    [ -f "$extra" ] && sh "$extra" "$b" >>"$tmp"
done
# Read before BENCHMARKS.md is rewritten below, and not counting it: its own rewrite is no
# uncommitted change of what was measured.
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- . ':(exclude)BENCHMARKS.md' 2>/dev/null || echo ' (with uncommitted changes)')"
{
    echo "# Benchmarks"
    echo
    echo "Generated by \`make bench\` (bench/run.sh); do not edit by hand."
    echo
    echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "- commit: $commit"
    echo "- machine: $(uname -sm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "- build: $(grep -m1 '^CMAKE_BUILD_TYPE' "$b/CMakeCache.txt" | cut -d= -f2)," \
        "core and policies -O3, benchmarks linked with LTO (DROVER_FAST_CORE): $(grep -m1 '^DROVER_FAST_CORE' "$b/CMakeCache.txt" | cut -d= -f2)"
    cat "$tmp"
} >"$out"
echo "wrote $out" >&2
