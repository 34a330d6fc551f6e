#!/bin/sh
# Regenerates docs/img/*.png, the pictures README.md and docs/reports.md show, from one default
# run (`drover sim --out DIR` with no other flags), so they are never drawn by hand: the plots
# (copied as drawn) and docs/img/report-page.png, the top of that run's index.html as headless
# Chromium renders it (offline: the page needs no network, and Chromium is told not to use it);
# and docs/img/data.sha256, the digests of the data they were drawn from (test_docs_img).
# Usage: scripts/update-docs-img.sh [BUILD_DIR]   (default: build; run from the repository root)
# Needs gnuplot; Chromium (Debian package chromium) for the page (skipped with a note without).
# The run is deterministic, so an unchanged simulator gives unchanged plots.
set -eu
build=${1:-build}
cd "$(dirname "$0")/.."
if [ ! -x "$build/drover" ]; then
    echo "update-docs-img: $build/drover not found; build first (make build)" >&2
    exit 2
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "update-docs-img: gnuplot is needed (scripts/deps.sh installs it)" >&2
    exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/drover" sim --out "$tmp/run" >/dev/null
mkdir -p docs/img
rm -f docs/img/jct-cdf.png docs/img/utilisation.png docs/img/queue.png docs/img/gantt-*.png
# Only the pictures the documents show, to keep the repository small: the Gantt charts are the
# two the report draws (baseline and best).
for f in jct-cdf utilisation queue; do
    cp "$tmp/run/$f.png" docs/img/
done
cp "$tmp/run"/gantt-*.png docs/img/
# The data behind every picture, as digests (tests/cli/test_docs_img.sh reruns the same command
# and compares: a change in the numbers without new pictures fails it): the summary (the report
# page's table), per-job JCTs (jct-cdf), the timelines (utilisation, queue) and the placements
# of the policies a Gantt chart is drawn for.
(cd "$tmp/run" && sha256sum summary.csv jobs-*.csv timeline-*.csv \
    $(for g in gantt-*.png; do g=${g#gantt-}; echo "placements-${g%.png}.csv"; done)) \
    >docs/img/data.sha256

chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$chrome" ]; then
    mkdir "$tmp/profile"
    # --headless: no window; the --disable-* flags keep it from any network use (updates, sync,
    # QUIC, background requests), so the picture shows exactly what the page holds offline.
    "$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$tmp/profile" \
        --screenshot="$tmp/page.png" --window-size=1280,2000 \
        "file://$(cd "$tmp/run" && pwd)/index.html" >"$tmp/chrome.log" 2>&1 || {
        cat "$tmp/chrome.log" >&2
        echo "update-docs-img: chromium failed; docs/img/report-page.png left as it was" >&2
        exit 1
    }
    cp "$tmp/page.png" docs/img/report-page.png
else
    echo "update-docs-img: chromium not found; docs/img/report-page.png left as it was" >&2
fi
ls -l docs/img/*.png | awk '{ total += $5; print $5, $NF } END { print total, "bytes in all" }'
