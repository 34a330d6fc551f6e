#!/bin/sh
# The first ten minutes: progress when piped, --quiet, data found from any working directory,
# trace formats through the command line. Usage: test_first_run.sh DROVER_BINARY SOURCE_DIR
set -u
drover=$1
src=$2
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
# The default period (5 s) is longer than this run: nothing is printed.
expect_status progress-default 0 "$drover" sim --policy gang-fifo
grep -q 'progress' "$tmp/err"
[ $? -ne 0 ]
check progress-default-period $?
expect_status progress-bad-period 0 env DROVER_PROGRESS_SECONDS=soon "$drover" sim --policy gang-fifo
grep -q "DROVER_PROGRESS_SECONDS: expected a number of seconds in \[0, 86400\], found 'soon'" "$tmp/err"
check progress-bad-period-message $?

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
