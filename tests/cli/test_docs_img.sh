#!/bin/sh
# README's and docs/reports.md's pictures (docs/img, drawn by scripts/update-docs-img.sh) are
# those of what the program produces now: the default run is made again and the data behind
# each picture (summary, per-job, timeline and Gantt placement CSVs) compared with the digests
# the script wrote beside the pictures (docs/img/data.sha256). Pixels are not compared: gnuplot
# and Chromium versions differ between machines; the numbers do not.
# Usage: test_docs_img.sh DROVER_BINARY SOURCE_DIR
set -u
drover=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sums=$src/docs/img/data.sha256
[ -f "$sums" ] || { echo "FAIL: $sums missing: run sh scripts/update-docs-img.sh" >&2 && exit 1; }
# The script's command: no flags. gnuplot absent only skips the plots, not the data.
"$drover" sim --out "$tmp/run" >/dev/null 2>"$tmp/err" || {
    echo "FAIL: drover sim --out: $(cat "$tmp/err")" >&2
    exit 1
}
failed=0
if ! (cd "$tmp/run" && sha256sum -c --quiet "$sums") >"$tmp/check" 2>&1; then
    echo "FAIL: the data behind docs/img changed since its pictures were drawn:" >&2
    cat "$tmp/check" >&2
    failed=1
fi
# Every table the run writes is covered, so a policy added to the run is noticed too.
for f in "$tmp/run"/summary.csv "$tmp/run"/jobs-*.csv "$tmp/run"/timeline-*.csv; do
    grep -q " $(basename "$f")\$" "$sums" || {
        echo "FAIL: $(basename "$f") is not in docs/img/data.sha256" >&2
        failed=1
    }
done
# The Gantt charts in docs/img are those the run draws, each with its placements' digest.
for g in "$src"/docs/img/gantt-*.png; do
    p=${g##*/gantt-}
    [ -f "$tmp/run/${g##*/}" ] && grep -q " placements-${p%.png}.csv\$" "$sums" || {
        echo "FAIL: docs/img/${g##*/} is not a Gantt chart of the default run's" >&2
        failed=1
    }
done
[ "$failed" -eq 0 ] || echo "regenerate them: sh scripts/update-docs-img.sh (docs/img)" >&2
[ "$failed" -eq 0 ] && echo "ok: docs/img drawn from what drover sim produces now"
[ "$failed" -eq 0 ]
