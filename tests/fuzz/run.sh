#!/bin/sh
# Runs every libFuzzer target of BUILD (made by `make fuzz`) for SECONDS each, one after the
# other. Each starts from its seed corpus (tests/fuzz/corpus/NAME, read only) and a working
# corpus in BUILD/fuzz-corpus/NAME (kept between runs); a crash is written to
# tests/fuzz/crashes/NAME/, where `make test` replays it from then on. Prints executions per
# target. Usage: tests/fuzz/run.sh BUILD SECONDS [NAME...]
set -eu
build=$1
secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
names=${*:-"conf cluster workload profile kubeconfig kubeserver objects watch jsonparse trace report catalogue trace_helios trace_pai_job trace_pai_task trace_gavel trace_philly_log trace_columns queues constraints"}
status=0
for n in $names; do
    exe="$build/tests/fuzz/fuzz_$n"
    [ -x "$exe" ] || { echo "fuzz: $exe not built" >&2; status=1; continue; }
    mkdir -p "$build/fuzz-corpus/$n" "$here/crashes/$n"
    log="$build/fuzz-$n.log"
    # -rss_limit_mb: a parser must not need 2 GB for any input; -timeout: nor 10 s.
    if "$exe" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$here/crashes/$n/" "$build/fuzz-corpus/$n" "$here/corpus/$n" \
        >"$log" 2>&1; then
        result=ok
    else
        result="FOUND (see $log and tests/fuzz/crashes/$n/)"
        status=1
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    echo "fuzz_$n: ${execs:-?} executions in ${secs}s: $result"
done
exit $status
