# typed_profiles.sh - sourced by the GPU-type tests (test_gpu_types.sh, test_goodput_types.sh):
# synthetic per-type calibration profiles in Sia's layout (MODEL/placements-TYPE.csv beside
# validation-BATCH.csv; docs/data.md), made up by a formula, nothing measured.
#   typed_profiles DIR TYPE:K ...
# writes, for the six calibrated models, validation files for batches 64 and 128 and for each
# TYPE a placements file whose step time is K * (0.001 * local batch + 0.01 * replicas) and
# sync time K * 0.01 * replicas, on placements 1 2 4 8 44 88 at local batches 32 and 64.
typed_profiles() {
    tp_dir=$1
    shift
    for m in bert:2 cifar10:100 deepspeech2:80 imagenet:90 ncf:10 yolov3:50; do
        n=${m%%:*} e=${m##*:}
        mkdir -p "$tp_dir/$n"
        for b in 64 128; do
            awk -v e="$e" -v b="$b" 'BEGIN { print "progress,grad_sqr,grad_var"
                for (i = 1; i <= e; i++) printf "%d,1.0,%s\n", i * 1000, (b == 64 ? "4.0" : "2.0") }' \
                >"$tp_dir/$n/validation-$b.csv"
        done
        for t in "$@"; do
            awk -v k="${t##*:}" 'BEGIN { print "placement,local_bsz,step_time,sync_time"
                n = split("1 2 4 8 44 88", pl, " ")
                for (i = 1; i <= n; i++) { p = pl[i]; r = 0
                    for (q = p; q > 0; q = int(q / 10)) r += q % 10
                    for (b = 32; b <= 64; b *= 2)
                        printf "%s,%d,%g,%g\n", p, b, k * (0.001 * b + 0.01 * r), k * 0.01 * r } }' \
                >"$tp_dir/$n/placements-${t%%:*}.csv"
        done
    done
}
