#!/bin/sh
# check-shape.sh - the size limits of docs/STYLE (no source file over MAX_FILE lines, no function
# over MAX_FUNC lines) measured on src/: file lengths with wc, function extents with Universal
# Ctags' line and end fields. Prints every offender and exits 1 if there is one.
#   usage: sh scripts/check-shape.sh [MAX_FILE [MAX_FUNC]]      (defaults 900 and 120)
set -eu
cd "$(dirname "$0")/.."
max_file=${1:-900}
max_func=${2:-120}
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
    echo "check-shape: Universal Ctags is needed (Debian package universal-ctags)" >&2
    exit 2
fi
files=$(find src -name '*.c' -o -name '*.h' | sort)
bad=0
for f in $files; do
    n=$(wc -l <"$f")
    if [ "$n" -gt "$max_file" ]; then
        echo "$f: $n lines (limit $max_file)"
        bad=1
    fi
done
# One line per function: file, first line, end line, name.
long=$(ctags --fields=+ne --c-kinds=f -o - $files |
    awk -F'\t' -v max="$max_func" '{
        line = ""; end = ""
        for (i = 4; i <= NF; i++) {
            if ($i ~ /^line:/) line = substr($i, 6)
            if ($i ~ /^end:/) end = substr($i, 5)
        }
        if (line != "" && end != "" && end - line + 1 > max)
            printf "%s:%d: %s: %d lines (limit %d)\n", $2, line, $1, end - line + 1, max
    }')
if [ -n "$long" ]; then
    echo "$long"
    bad=1
fi
nfunc=$(ctags --fields=+ne --c-kinds=f -o - $files | wc -l)
echo "check-shape: $(echo "$files" | wc -l) files, $nfunc functions; limits $max_file lines a file, $max_func a function"
exit $bad
