#!/bin/sh
# The first ten minutes: progress when piped, --quiet, Ctrl-C, data found from any working
# directory, trace formats through the command line, an install.
# Usage: test_first_run.sh DROVER_BINARY SOURCE_DIR BUILD_DIR
set -u
drover=$1
src=$2
build=$3
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

expect_status() { # name, want, command... (stdout in $tmp/out, stderr in $tmp/err)
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

# Progress when stderr is a file: a plain line per period (0 s: every report), none with --quiet.
expect_status progress-piped 0 env DROVER_PROGRESS_SECONDS=0 "$drover" sim --policy gang-fifo
grep -Eq '^drover: progress: gang-fifo \(1/1\): [0-9]+/60 jobs done, simulated [0-9.]+ h, [0-9]+ jobs/s, ETA' "$tmp/err"
check progress-piped-line $?
grep -q "$(printf '\033')" "$tmp/err"
[ $? -ne 0 ]
check progress-piped-no-escape $?
expect_status progress-quiet 0 env DROVER_PROGRESS_SECONDS=0 "$drover" sim --policy gang-fifo --quiet
[ ! -s "$tmp/err" ]
check progress-quiet-silent $?
# A period longer than any run: nothing is printed (no assumption on how fast this run is).
expect_status progress-long-period 0 env DROVER_PROGRESS_SECONDS=86400 "$drover" sim --policy gang-fifo
grep -q 'progress' "$tmp/err"
[ $? -ne 0 ]
check progress-long-period-silent $?
expect_status progress-bad-period 0 env DROVER_PROGRESS_SECONDS=soon "$drover" sim --policy gang-fifo
grep -q "DROVER_PROGRESS_SECONDS: expected a number of seconds in \[0, 86400\], found 'soon'" "$tmp/err"
check progress-bad-period-message $?

# Ctrl-C during a run: the runs stop, what they finished is written and shown, each interrupted
# run says where it stopped, exit 130 (128 + SIGINT). The signal is sent once the run has shown
# progress, so it arrives while the runs go on (20,000 jobs take many seconds). A background job
# of a script starts with SIGINT ignored (and drover leaves an ignored signal ignored): env puts
# it back to what a terminal's Ctrl-C meets.
printf 'generate:\n  jobs: 20000\n  meanInterarrival: 60\n' >"$tmp/long.yaml"
DROVER_PROGRESS_SECONDS=0 env --default-signal=INT "$drover" sim --workload "$tmp/long.yaml" --policy k8s-default,gang-fifo \
    --out "$tmp/int" >"$tmp/int.out" 2>"$tmp/int.err" &
pid=$!
i=0
while [ $i -lt 600 ] && ! grep -q 'progress' "$tmp/int.err" 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
kill -INT $pid
wait $pid
st=$?
[ $st -eq 130 ]
check interrupt-status-130 $?
[ $st -eq 130 ] || echo "  interrupt: exit $st; stderr: $(tail -3 "$tmp/int.err")" >&2
grep -q '^drover sim: interrupted (SIGINT): the runs stopped early' "$tmp/int.err"
check interrupt-said $?
grep -q '^k8s-default .*\*' "$tmp/int.out" && grep -q 'k8s-default: interrupted at simulated t=' "$tmp/int.out"
check interrupt-table-shown $?
grep -q '"interrupted": true' "$tmp/int/summary.json" && [ -s "$tmp/int/jobs-k8s-default.csv" ] &&
    [ -s "$tmp/int/index.html" ]
check interrupt-out-written $?
grep -q 'was interrupted at simulated t=' "$tmp/int/index.html"
check interrupt-page-says $?

# Data found from any working directory: an absolute trace path run from an empty directory
# (the profiles come from next to the binary), and a data-relative name.
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
expect_status abs-trace-elsewhere 0 "$drover" sim --trace "$src/tests/fixtures/trace/pollux-good.csv" \
    --mechanics pollux --policy gang-fifo --format csv
[ "$(wc -l <"$tmp/out")" -eq 2 ]
check abs-trace-elsewhere-row $?
expect_status data-relative-trace 0 "$drover" sim --trace data/pollux/workloads/workload-1.csv \
    --mechanics pollux --policy gang-fifo
grep -q '^160 jobs on 16 nodes' "$tmp/out"
check data-relative-trace-jobs $?
expect_status bad-data-dir 2 "$drover" sim --trace x.csv --data-dir "$tmp/none"
grep -q -- "--data-dir $tmp/none: expected a directory" "$tmp/err"
check bad-data-dir-message $?
expect_status bad-env-data-dir 2 env DROVER_DATA_DIR="$tmp/none" "$drover" calibrate
grep -q "DROVER_DATA_DIR=$tmp/none: expected a directory" "$tmp/err"
check bad-env-data-dir-message $?
# --data-dir wins over the directory next to the binary: an empty profile directory fails.
mkdir -p "$tmp/d2/pollux/profiles"
expect_status data-dir-wins 2 "$drover" calibrate --data-dir "$tmp/d2"
grep -q "$tmp/d2/pollux/profiles" "$tmp/err"
check data-dir-wins-message $?

# Trace formats through the command line: a real Gavel file (auto), a mapped CSV, and the
# errors naming the missing column and the misused flag.
fx=$src/tests/fixtures/trace
expect_status gavel-auto 0 "$drover" sim --trace "$fx/gavel-925e2b.trace" --mechanics pollux \
    --policy gang-fifo
grep -q '^4 jobs on 16 nodes' "$tmp/out"
check gavel-auto-jobs $?
expect_status columns 0 "$drover" sim --trace "$fx/mapped.csv" --mechanics pollux --policy gang-fifo \
    --trace-columns name=id,submit=queued_at,gpus=n_gpu,duration=secs,model=arch
grep -q '^2 jobs on 16 nodes' "$tmp/out"
check columns-jobs $?
expect_status columns-missing 2 "$drover" sim --trace "$fx/mapped.csv" --mechanics pollux \
    --trace-columns submit=queued_at,gpus=gpus,duration=secs
grep -q "mapped.csv:1:1: header: expected a column 'gpus'" "$tmp/err"
check columns-missing-message $?
expect_status columns-no-trace 2 "$drover" sim --trace-columns gpus=n
expect_status bad-trace-format 2 "$drover" sim --trace "$fx/helios.csv" --trace-format alibaba
grep -q 'helios, pai-job, pai-task, gavel, philly-log, columns or auto' "$tmp/err"
check bad-trace-format-message $?

# An install (what make install PREFIX=... runs) is complete and finds its own data when moved.
if [ -f "$build/drover.1" ]; then
    cmake --install "$build" --prefix "$tmp/prefix" >/dev/null 2>&1
    check install-runs $?
    mv "$tmp/prefix" "$tmp/moved"
    expect_status installed-calibrate 0 "$tmp/moved/bin/drover" calibrate
    grep -q '^bert ' "$tmp/out"
    check installed-calibrate-bert $?
    [ -f "$tmp/moved/share/drover/examples/cluster-gpu.yaml" ]
    check installed-examples $?
    grep -Eq '^\.TH DROVER "?1' "$tmp/moved/share/man/man1/drover.1" &&
        grep -q 'DROVER_DATA_DIR' "$tmp/moved/share/man/man1/drover.1"
    check installed-man-page $?
    # the pages --help points to are installed where the man page says
    [ -f "$tmp/moved/share/doc/drover/README.md" ] &&
        [ -f "$tmp/moved/share/doc/drover/docs/formats.md" ] &&
        [ -f "$tmp/moved/share/doc/drover/docs/policies.md" ] &&
        grep -q 'share/doc/drover' "$tmp/moved/share/man/man1/drover.1"
    check installed-docs $?
    # the progress module where README and docs/running.md say, the same file as python/'s
    cmp -s "$tmp/moved/share/drover/python/drover_progress.py" "$src/python/drover_progress.py"
    check installed-python-module $?
    # drover playground's recorded API documents, where it looks for them (<data>/../k8s)
    [ -f "$tmp/moved/share/drover/k8s/openapi/v3-index.json" ] &&
        [ -f "$tmp/moved/share/drover/k8s/transcripts/01-discovery-version/response.txt" ]
    check installed-playground-documents $?
else
    echo "skipped: install (no $build/drover.1: build the drover_man target)" >&2
fi

# A warm `make demo` does not configure again: building the binary of a configured build
# directory (deps skipped: -o deps) runs no configure step and leaves the cache as it was.
# As a user types it: no CMAKE_FLAGS (CI=true, which make test may run under, adds -Werror to
# them, and flags given ask for a configure on purpose).
if [ -f "$build/CMakeCache.txt" ] && command -v make >/dev/null; then
    before=$(stat -c %Y "$build/CMakeCache.txt")
    env -u CI make -s -C "$src" -o deps build-drover BUILD="$build" JOBS=1 CMAKE_FLAGS= \
        >"$tmp/make.out" 2>&1
    check warm-build-runs $?
    ! grep -q 'Configuring done' "$build/build-drover.log" &&
        [ "$(stat -c %Y "$build/CMakeCache.txt")" = "$before" ]
    check warm-build-no-configure $?
fi

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
