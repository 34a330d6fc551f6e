#!/bin/sh
# check-shape.sh - the size limits of docs/STYLE (no source file over MAX_FILE lines, no function
# over MAX_FUNC lines) measured on src/ and tests/: file lengths with wc, function extents with
# Universal Ctags' line and end fields. Prints every offender and exits 1 if there is one.
#   usage: sh scripts/check-shape.sh [MAX_FILE [MAX_FUNC]]      (defaults 900 and 120)
# The folders in PENDING are measured and their offenders listed, marked "(pending)", without
# failing the check (a folder being split); empty since the Kubernetes tests fit (issue 25).
set -eu
cd "$(dirname "$0")/.."
max_file=${1:-900}
max_func=${2:-120}
PENDING=""
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
    echo "check-shape: Universal Ctags is needed (Debian package universal-ctags)" >&2
    exit 2
fi
files=$(find src tests \( -name '*.c' -o -name '*.h' \) | sort)

# 0 when the path is under a pending folder.
pending() {
    for p in $PENDING; do
        case $1 in "$p"/*) return 0 ;; esac
    done
    return 1
}

bad=0
npending=0
# report FILE MESSAGE: an offender, failing unless its file is pending.
report() {
    if pending "$1"; then
        echo "$2 (pending)"
        npending=$((npending + 1))
    else
        echo "$2"
        bad=1
    fi
}

for f in $files; do
    n=$(wc -l <"$f")
    if [ "$n" -gt "$max_file" ]; then
        report "$f" "$f: $n lines (limit $max_file)"
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
            printf "%s\t%s:%d: %s: %d lines (limit %d)\n", $2, $2, line, $1, end - line + 1, max
    }')
if [ -n "$long" ]; then
    tab=$(printf '\t')
    while IFS="$tab" read -r f msg; do
        report "$f" "$msg"
    done <<EOF
$long
EOF
fi
nfunc=$(ctags --fields=+ne --c-kinds=f -o - $files | wc -l)
echo "check-shape: $(echo "$files" | wc -l) files, $nfunc functions in src/ and tests/;" \
    "limits $max_file lines a file, $max_func a function; $npending pending (not counted) in $PENDING"
exit $bad
