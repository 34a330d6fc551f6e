#!/bin/sh
# The bad-input catalogue (tests/fixtures/bad/catalogue.tsv): every malformed input gives its
# exit status and exactly its message on stderr, and nothing on stdout that would read as a
# result. Also checks that docs/errors.md is what scripts/errors-doc.sh makes of the table.
# Usage: test_bad_inputs.sh DROVER_BINARY SOURCE_DIR
set -u
drover=$1
src=$2
cd "$src/tests/fixtures/bad" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tab=$(printf '\t')
pass=0
failed=0
while IFS="$tab" read -r file args status what want; do
    case $file in '#'* | '') continue ;; esac
    # {} is the file, {src} the source tree; no argument holds a space.
    cmd=$(printf '%s' "$args" | sed "s|{src}|$src|g; s|{}|$file|g")
    # shellcheck disable=SC2086
    "$drover" $cmd >"$tmp/out" 2>"$tmp/err"
    got=$?
    printf '%s\n' "$want" >"$tmp/want"
    if [ "$got" -ne "$status" ] || ! cmp -s "$tmp/err" "$tmp/want"; then
        failed=$((failed + 1))
        echo "FAIL: $file ($what): drover $cmd" >&2
        echo "  status $got, want $status" >&2
        echo "  stderr: $(cat "$tmp/err")" >&2
        echo "  want:   $want" >&2
    else
        pass=$((pass + 1))
    fi
done <catalogue.tsv
[ ! -e out/index.html ] && [ ! -e out/summary.csv ] || {
    failed=$((failed + 1))
    echo "FAIL: out/: the refused run wrote into it" >&2
}
if ! sh "$src/scripts/errors-doc.sh" "$src" | cmp -s - "$src/docs/errors.md"; then
    failed=$((failed + 1))
    echo "FAIL: docs/errors.md is not what scripts/errors-doc.sh makes (run it: sh scripts/errors-doc.sh > docs/errors.md)" >&2
fi
echo "bad inputs: $pass passed, $failed failed"
[ "$pass" -ge 60 ] || { echo "FAIL: fewer than 60 cases ran" >&2; exit 1; }
[ "$failed" -eq 0 ]
