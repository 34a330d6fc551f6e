#!/bin/sh
# generate.sh - writes this folder's SYNTHETIC heterogeneous example (issue 27): made-up
# per-GPU-type profiles of the six calibrated models, in Sia's layout
# (profiles/MODEL/placements-TYPE.csv for the types aws, rtx and dgx-ext of
# examples/cluster-sia-hetero.yaml, and validation-BATCH.csv), and a 48-job trace in Pollux's
# format (trace.csv). No number here was measured on any GPU: they are a formula, chosen so that
# the models gain differently from the faster types, as real ones do (bert 4x on dgx-ext over
# aws, ncf 1.2x), which is what a type-aware scheduler can use. Its output is committed;
# rerun it only to change the example:   sh examples/hetero-synthetic/generate.sh
#
# Step time of placement P (GPUs per node, e.g. 22 = 2 nodes x 2) at local batch b on type T:
#   step = a * b / speedup(T) + sync,  sync = c * replicas * (2 when more than one node, else 1)
# with a, c per model and speedup 1 on aws. Validation curves: EPOCHS epochs of 400 units of
# progress each; gradient noise 256 / batch, so a larger batch needs fewer steps per epoch.
set -eu
D=$(dirname "$0")
rm -rf "$D/profiles"
mkdir -p "$D/profiles"
# model:epochs:dgx-ext speedup:rtx speedup:a:c
for m in bert:2:4.0:1.5:0.004:0.02 cifar10:100:1.5:1.3:0.0006:0.004 \
    deepspeech2:80:3.0:1.6:0.003:0.03 imagenet:90:3.5:1.8:0.003:0.01 ncf:10:1.2:1.1:0.0002:0.002 \
    yolov3:50:3.0:1.7:0.02:0.03; do
    IFS=: read -r n e sd sr a c <<E2
$m
E2
    mkdir -p "$D/profiles/$n"
    for b in 64 128 256; do
        awk -v e="$e" -v b="$b" 'BEGIN { print "progress,grad_sqr,grad_var"
            for (i = 1; i <= e; i++) printf "%d,1.0,%g\n", i * 400, 256 / b }' \
            >"$D/profiles/$n/validation-$b.csv"
    done
    for t in aws:1 rtx:$sr dgx-ext:$sd; do
        awk -v s="${t#*:}" -v a="$a" -v c="$c" 'BEGIN {
            print "placement,local_bsz,step_time,sync_time"
            n = split("1 2 4 8 11 22 44 88 111 222 444 888 1111 2222 4444 8888", pl, " ")
            for (i = 1; i <= n; i++) {
                p = pl[i]; r = 0; nn = 0
                for (q = p; q > 0; q = int(q / 10)) { r += q % 10; nn++ }
                for (b = 8; b <= 64; b *= 2) {
                    sync = c * r * (nn > 1 ? 2 : 1)
                    printf "%s,%d,%.6g,%.6g\n", p, b, a * b / s + sync, sync } } }' \
            >"$D/profiles/$n/placements-${t%%:*}.csv"
    done
done
# the trace: 48 jobs, one every 75 s; model, replicas and batch from a fixed linear
# congruential sequence (integer arithmetic: the same file with any awk)
awk 'BEGIN { x = 12345; print "name,time,application,num_replicas,batch_size"
    split("bert cifar10 deepspeech2 imagenet ncf yolov3", app, " ")
    split("1 1 2 2 4 8", rep, " "); split("64 128 256", bs, " ")
    for (i = 0; i < 48; i++) {
        x = (x * 1103 + 12345) % 65536; a = app[1 + x % 6]
        x = (x * 1103 + 12345) % 65536; r = rep[1 + x % 6]
        x = (x * 1103 + 12345) % 65536; b = bs[1 + x % 3]
        printf "%s-%d,%d,%s,%d,%d\n", a, i, i * 75, a, r, b } }' >"$D/trace.csv"
