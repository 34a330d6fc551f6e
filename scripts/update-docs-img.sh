#!/bin/sh
# Regenerates docs/img/*.png, the pictures README.md shows, from one default run
# (`drover sim --out DIR` with no other flags), so they are never drawn by hand.
# Usage: scripts/update-docs-img.sh [BUILD_DIR]   (default: build; run from the repository root)
# Needs gnuplot. The run is deterministic, so an unchanged simulator gives unchanged images.
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
rm -f docs/img/*.png
# Only the pictures README.md shows, to keep the repository small.
for f in jct-cdf utilisation queue gantt-k8s-default gantt-drover; do
    cp "$tmp/run/$f.png" docs/img/
done
ls -l docs/img/*.png | awk '{ total += $5; print $5, $NF } END { print total, "bytes in all" }'
