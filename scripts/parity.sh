#!/bin/sh
# parity.sh - runs the 20-job end-to-end test (tests/ctrl/test_e2e20.c) and prints its
# per-job table: the same workload (tests/fixtures/e2e20/) through `drover sim` and through
# `drover run` + `drover emulate` on the in-memory test API server, each job's start in the
# simulator, its completion time (end - submit, emulated seconds) on both sides, their
# difference in per cent, and its place in each side's admission order. Exit status: the
# test's (0 when the order is the same and every job is within 5 %).
#
# Usage: sh scripts/parity.sh [BUILD_DIR] [SPEED]
#   BUILD_DIR  a configured build directory (default: build); drover and test_e2e20 are built
#   SPEED      the emulator's --speed (default: the test's, 10)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
speed=${2:-}
cmake --build "$build" -j2 --target drover test_e2e20 >/dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
DROVER_SOURCE_DIR=$root DROVER_BINARY_DIR=$(cd "$build" && pwd) \
    "$build/tests/ctrl/test_e2e20" ${speed:+--speed "$speed"} >"$out" 2>&1 || status=$?
sed -n '/^per-job table/,/^mean difference/p' "$out"
grep -E '^(ok|FAIL):' "$out" | grep -E 'order|5 %|Succeeded' || true
exit $status
