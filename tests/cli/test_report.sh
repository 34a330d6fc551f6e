#!/bin/sh
# End-to-end checks of the reports: `drover sim --out` writes plots and index.html when gnuplot
# exists, still succeeds (data written, one "plots skipped" line) when it does not, `drover
# report DIR` redraws the same bytes from the files alone, and bad files give file:line and
# exit status 2.
# Usage: test_report.sh DROVER_BINARY SOURCE_DIR
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

expect_status() { # name, want, command...
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

plots="jct-cdf utilisation queue gantt-k8s-default"
data="summary.json summary.csv scenario.json jobs-gang-fifo.csv timeline-gang-fifo.csv
placements-gang-fifo.csv placements-k8s-default.csv"

# Without gnuplot on PATH: the run succeeds, writes the data and index.html, says so in one line.
mkdir "$tmp/empty-path"
expect_status no-gnuplot 0 env PATH="$tmp/empty-path" "$drover" sim --out "$tmp/nogp"
grep -q 'gnuplot not found on PATH; plots skipped' "$tmp/err"
check no-gnuplot-message $?
[ "$(wc -l <"$tmp/err")" -eq 1 ]
check no-gnuplot-one-line $?
for f in $data index.html; do
    [ -s "$tmp/nogp/$f" ]
    check "no-gnuplot-wrote-$f" $?
done
ls "$tmp/nogp" | grep -q -E '\.(svg|png)$'
[ $? -ne 0 ]
check no-gnuplot-no-images $?
grep -q '<img' "$tmp/nogp/index.html"
[ $? -ne 0 ]
check no-gnuplot-page-without-images $?
grep -q '^k8s-default ' "$tmp/out"
check no-gnuplot-table-on-stdout $?

# `drover report` without gnuplot: exit 1 and the same message.
expect_status report-no-gnuplot 1 env PATH="$tmp/empty-path" "$drover" report "$tmp/nogp"
grep -q 'plots skipped' "$tmp/err"
check report-no-gnuplot-message $?

# Usage errors.
expect_status report-no-dir 2 "$drover" report
expect_status report-help 0 "$drover" report --help
grep -q 'usage: drover report DIR' "$tmp/out"
check report-help-text $?
expect_status report-missing-dir 2 "$drover" report "$tmp/does-not-exist"
grep -q 'does-not-exist/summary.json' "$tmp/err"
check report-missing-dir-message $?

# Bad files: file:line: what was expected, exit 2. Work on copies of the gnuplot-less run.
cp -r "$tmp/nogp" "$tmp/bad1"
sed -i '5s/^\([^,]*,\([^,]*,\)\{9\}\)[^,]*/\1x12/' "$tmp/bad1/jobs-gang-fifo.csv"
expect_status bad-jct 2 "$drover" report "$tmp/bad1"
grep -q 'jobs-gang-fifo.csv:5: jct_s: expected a number, found .x12.' "$tmp/err"
check bad-jct-message $?

cp -r "$tmp/nogp" "$tmp/bad2"
sed -i '3s/,[^,]*$//' "$tmp/bad2/timeline-k8s-default.csv"
expect_status bad-fields 2 "$drover" report "$tmp/bad2"
grep -q 'timeline-k8s-default.csv:3: expected 7 fields like the header, found 6' "$tmp/err"
check bad-fields-message $?

cp -r "$tmp/nogp" "$tmp/bad3"
rm "$tmp/bad3/timeline-gang-fifo.csv"
expect_status missing-file 2 "$drover" report "$tmp/bad3"
grep -q 'timeline-gang-fifo.csv: cannot read' "$tmp/err"
check missing-file-message $?

cp -r "$tmp/nogp" "$tmp/bad4"
sed -i '1s/node/host/' "$tmp/bad4/placements-gang-fifo.csv"
expect_status bad-header 2 "$drover" report "$tmp/bad4"
grep -q "placements-gang-fifo.csv:1: expected a column 'node' in the header" "$tmp/err"
check bad-header-message $?

# --seeds with --out: the page's "Over seeds" table. Its cells are recomputed here from
# seeds.csv (mean and 95 % interval with Student's t for 2 degrees of freedom, 4.303; the paired
# difference of avg JCT against k8s-default, and the seeds on which it is lower), in minutes.
expect_status seeds-page 0 env PATH="$tmp/empty-path" "$drover" sim --seeds 1-3 \
    --policy gang-fifo,k8s-default --out "$tmp/seeds"
rows=$(awk -F, '
function pm(sum, sq, n, s, sign,    m, h) {
    m = sum / n; h = 4.303 * sqrt((sq - n * m * m) / (n - 1)) / sqrt(n)
    return sprintf(sign ? "<td>%+.1f &plusmn; %.1f</td>" : "<td>%.1f &plusmn; %.1f</td>", m * s, h * s)
}
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{
    p = $2; pol[p] = 1; n[p]++
    split("avg_jct_s p95_jct_s makespan_s done", k, " ")
    for (i = 1; i <= 4; i++) { v = $col[k[i]]; sum[p, i] += v; sq[p, i] += v * v }
    jct[p, $1] = $col["avg_jct_s"]; seeds[$1] = 1
}
END {
    for (p in pol) {
        row = "<tr><td>" p "</td>"
        for (i = 1; i <= 4; i++) row = row pm(sum[p, i], sq[p, i], n[p], i < 4 ? 1 / 60 : 1, 0)
        if (p == "k8s-default") { print row "<td>baseline</td><td></td></tr>"; continue }
        ds = 0; dq = 0; lower = 0
        for (s in seeds) {
            d = jct[p, s] - jct["k8s-default", s]; ds += d; dq += d * d; lower += d < 0
        }
        print row pm(ds, dq, 3, 1 / 60, 1) "<td>on " lower " of 3</td></tr>"
    }
}' "$tmp/seeds/seeds.csv")
ok=0
[ "$(echo "$rows" | wc -l)" -eq 2 ] || ok=1
echo "$rows" | while IFS= read -r row; do
    grep -qF "$row" "$tmp/seeds/index.html" || { echo "  not on the page: $row" >&2; exit 1; }
done || ok=1
grep -q '<h2 id="seeds">Over seeds 1-3</h2>' "$tmp/seeds/index.html" &&
    grep -q 'command: <code>drover sim --seeds 1-3 --policy gang-fifo,k8s-default --out ' "$tmp/seeds/index.html" &&
    grep -qF "Commit <code>$(sed 's/.*"drover_commit": "\([^"]*\)".*/\1/;t;d' "$tmp/seeds/summary-seeds.json")</code>" "$tmp/seeds/index.html" || ok=1
check seeds-page-table $ok
# `drover report` redraws it; the old array form or a missing field: the file and the field
# named, the page drawn without the table.
cp "$tmp/seeds/index.html" "$tmp/seeds-page.html"
expect_status seeds-report 1 env PATH="$tmp/empty-path" "$drover" report "$tmp/seeds"
cmp -s "$tmp/seeds/index.html" "$tmp/seeds-page.html"
check seeds-report-same-page $?
sed -i 's/"baseline"/"base"/' "$tmp/seeds/summary-seeds.json"
expect_status seeds-bad-field 1 env PATH="$tmp/empty-path" "$drover" report "$tmp/seeds"
grep -q 'summary-seeds.json: "baseline": expected a policy name; the page has no multi-seed table' "$tmp/err" &&
    ! grep -q 'id="seeds"' "$tmp/seeds/index.html" && grep -q 'No multi-seed table: ' "$tmp/seeds/index.html" &&
    grep -q '<h2 id="summary">' "$tmp/seeds/index.html"
check seeds-bad-field $?
echo '[{"policy": "gang-fifo", "runs": 3}]' >"$tmp/seeds/summary-seeds.json"
expect_status seeds-old-array 1 env PATH="$tmp/empty-path" "$drover" report "$tmp/seeds"
grep -q 'summary-seeds.json: expected an object with "seeds", "baseline", "policies" and "paired"' "$tmp/err" &&
    ! grep -q 'id="seeds"' "$tmp/seeds/index.html"
check seeds-old-array $?
# a run of one seed into the same directory removes them: its page shows no earlier seeds
expect_status seeds-then-one 0 env PATH="$tmp/empty-path" "$drover" sim --policy gang-fifo --out "$tmp/seeds"
[ ! -e "$tmp/seeds/summary-seeds.json" ] && [ ! -e "$tmp/seeds/seeds.csv" ] &&
    ! grep -q 'seeds' "$tmp/seeds/index.html"
check seeds-then-one-seed $?

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "gnuplot not installed: skipping the checks of rendered plots"
    echo "$pass passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
fi

# With gnuplot: every plot as SVG and PNG, and a page that shows them.
expect_status with-gnuplot 0 "$drover" sim --out "$tmp/gp"
[ ! -s "$tmp/err" ]
check with-gnuplot-quiet-stderr $?
# Gantt charts for the baseline (k8s-default) and the best other policy only: the one that
# finished most jobs, then had the lowest mean JCT, found here from summary.csv.
best=$(awk -F, 'NR > 1 && $1 != "k8s-default" {
    if (!n || $3 > done || ($3 == done && $4 + 0 < jct)) { n = 1; done = $3; jct = $4 + 0; b = $1 }
} END { print b }' "$tmp/gp/summary.csv")
plots="$plots gantt-$best"
[ "$(ls "$tmp/gp" | grep -c '^gantt-.*\.svg$')" -eq 2 ]
check gantt-two-charts $?
grep -q "Shown in detail: <b>$best</b>" "$tmp/gp/index.html"
check page-names-best $?
for p in $plots; do
    head -c 400 "$tmp/gp/$p.svg" | grep -q '<svg'
    check "svg-$p" $?
    [ "$(head -c 4 "$tmp/gp/$p.png" | od -An -tx1 | tr -d ' \n')" = "89504e47" ]
    check "png-$p" $?
    grep -q "src=\"$p.svg\"" "$tmp/gp/index.html"
    check "page-shows-$p" $?
done
# The Gantt chart's legend names the users and its bars the jobs (names from jobs-*.csv).
user=$(awk -F, 'NR == 2 { print $2 }' "$tmp/gp/jobs-k8s-default.csv")
job=$(awk -F, 'NR == 2 { print $1 }' "$tmp/gp/jobs-k8s-default.csv")
grep -q ">$user<" "$tmp/gp/gantt-k8s-default.svg" && grep -q ">$job<" "$tmp/gp/gantt-k8s-default.svg"
check gantt-names-users-and-jobs $?
grep -q 'index.html' "$tmp/out"
check sim-says-where-the-page-is $?
for p in k8s-default gang-fifo; do
    grep -q "<td><a href=\"#policy-[0-9]*\">$p</a>.*</td><td>60/60</td>" "$tmp/gp/index.html"
    check "page-row-$p" $?
done
grep -q 'Scenario: 60 jobs on 8 nodes' "$tmp/gp/index.html"
check page-scenario $?
# Self-contained: nothing fetched from elsewhere.
grep -q -i -E '(src|href)="(https?:)?//' "$tmp/gp/index.html"
[ $? -ne 0 ]
check page-no-external-resources $?
ls -a "$tmp/gp" | grep -q '\.tmp$'
[ $? -ne 0 ]
check no-temp-files-left $?

# Determinism: a second run gives the same bytes, images included.
"$drover" sim --out "$tmp/gp2" >/dev/null 2>&1
same=0
for f in "$tmp/gp"/*; do
    cmp -s "$f" "$tmp/gp2/$(basename "$f")" || { same=1; echo "  differs: $(basename "$f")" >&2; }
done
check deterministic-outputs $same

# `drover report` redraws what was deleted, byte for byte, from the files alone.
mkdir "$tmp/keep"
cp "$tmp/gp"/*.svg "$tmp/gp"/*.png "$tmp/gp/index.html" "$tmp/keep/"
rm "$tmp/gp"/*.svg "$tmp/gp"/*.png "$tmp/gp/index.html"
expect_status report 0 "$drover" report "$tmp/gp"
same=0
for f in "$tmp/keep"/*; do
    cmp -s "$f" "$tmp/gp/$(basename "$f")" || { same=1; echo "  differs: $(basename "$f")" >&2; }
done
check report-redraws-same-bytes $same

# Hostile names (issue 12, issue 26): a profile whose name would close gnuplot's quoted title
# and call system(), with markup, is refused where it is read (the name rule, docs/formats.md
# "Names"), before anything runs or is written: exit 2 naming file, line and field. Nothing
# named PWNED may appear (gnuplot runs in the current directory), and no --out directory is
# made. (The plots and the page still escape every name: tests/sim/test_report.c.)
cat >"$tmp/evil.yaml" <<'EOF'
profiles:
  - name: "x'.system('touch PWNED').'<i>"
    queue_order: fifo
    admit: gang
    score: least-allocated
EOF
mkdir "$tmp/cwd"
(cd "$tmp/cwd" && "$drover" sim --profiles "$tmp/evil.yaml" \
    --policy "k8s-default,x'.system('touch PWNED').'<i>" --out "$tmp/evil" >"$tmp/out" 2>"$tmp/err")
[ $? -eq 2 ] && grep -qF "evil.yaml:2: profiles[0].name: expected a name of 1 to 63 letters, digits, '-', '_' or '.', found 'x'.system('touch PWNED').'<i>'" "$tmp/err"
check evil-profile-refused $?
[ ! -e "$tmp/cwd/PWNED" ] && [ ! -e "$tmp/evil" ]
check evil-no-command-run $?
# ... and a profile named to reach another file name (../../x) is refused the same way.
sed 's|"x.*<i>"|"../../x"|' "$tmp/evil.yaml" >"$tmp/dots.yaml"
"$drover" sim --profiles "$tmp/dots.yaml" --policy ../../x --out "$tmp/dots" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && grep -qF "found '../../x'" "$tmp/err" && [ ! -e "$tmp/dots" ]
check dots-profile-refused $?

# No text is cut off by a picture's edge: every label's baseline, plus the descent of its font
# (a third of its size), lies inside the SVG's height (the bottom panel's x label of the small
# multiples was drawn below it).
inside() { # svg file: 0 when every text fits
    awk '/<svg/ { insvg = 1 } insvg && /height="/ && !h { match($0, /height="[0-9.]+"/);
        h = substr($0, RSTART + 8, RLENGTH - 9) + 0 }
        /transform="translate\(/ && /font-size/ { match($0, /translate\([0-9.]+,[0-9.]+\)/);
        split(substr($0, RSTART + 10, RLENGTH - 11), xy, ","); match($0, /font-size="[0-9.]+"/);
        fs = substr($0, RSTART + 11, RLENGTH - 12) + 0;
        if (xy[2] + fs / 3 > h) { print FILENAME ": text at y=" xy[2] " below " h > "/dev/stderr"; bad = 1 } }
        END { exit bad || !h }' "$1"
}
for p in utilisation queue jct-cdf gantt-k8s-default; do
    inside "$tmp/gp/$p.svg"
    check "no-text-cut-$p" $?
done
# gnuplot leaves out a label that falls outside the picture: the x label under each column's
# bottom panel is there (one per column: up to two policies one column each, up to four two
# columns, then three).
n=$(($(wc -l <"$tmp/gp/summary.csv") - 1))
cols=$n
[ "$n" -gt 2 ] && cols=2
[ "$n" -gt 4 ] && cols=3
for p in utilisation queue; do
    [ "$(grep -c '<text>simulated time (' "$tmp/gp/$p.svg")" -eq "$cols" ]
    check "x-label-drawn-$p" $?
done
# The built-in scenario's CDF has a linear time axis (its JCTs span 1-91 min).
grep -q 'log scale' "$tmp/gp/jct-cdf.svg"
[ $? -ne 0 ]
check cdf-linear-builtin $?

# A trace (Pollux's workload 1: 160 jobs of one user, from 1 min to 16 h): its CDF on a log time
# axis, and its Gantt chart coloured by job with a colour of its own for each of the 160 jobs
# (ten colours were reused in turn).
expect_status trace-run 0 "$drover" sim --trace data/pollux/workloads/workload-1.csv \
    --mechanics pollux --policy tiresias --out "$tmp/tr"
grep -q 'job completion time (h, log scale)' "$tmp/tr/jct-cdf.svg"
check cdf-log-trace $?
jobs=$(cut -d, -f1 "$tmp/tr/placements-tiresias.csv" | sed 1d | sort -u | wc -l)
colours=$(grep -o "polygon fill = 'rgb([ 0-9,]*)'" "$tmp/tr/gantt-tiresias.svg" | sort -u | wc -l)
[ "$jobs" -eq 160 ] && [ "$colours" -eq "$jobs" ]
r=$?
[ $r -eq 0 ] || echo "  $colours colours for $jobs jobs" >&2
check gantt-colour-per-job $r

# A GPU cluster with CPU-only jobs beside GPU jobs: the utilisation plot draws both, the page's
# table and each policy's line give GPUs and CPU.
cat >"$tmp/mixed.yaml" <<'EOF'
jobs:
  - name: gpu-a
    model: resnet50
    submit: 0
    roles:
      ps: {replicas: 1, cpu: 2, memory: 4Gi}
      worker: {replicas: 2, cpu: 4, memory: 8Gi, gpu: 1}
  - name: cpu-b
    model: lenet
    submit: 0
    roles:
      ps: {replicas: 1, cpu: 2, memory: 4Gi}
      worker: {replicas: 4, cpu: 4, memory: 8Gi}
EOF
expect_status mixed-run 0 "$drover" sim --workload "$tmp/mixed.yaml" \
    --cluster "$src/examples/cluster-gpu.yaml" --policy k8s-default,gang-fifo --out "$tmp/mixed"
grep -q 'GPUs (solid) and CPU (dashed)' "$tmp/mixed/utilisation.svg"
check mixed-plot-both $?
grep -q '<th>gpu</th><th>gpu</th><th>gpu</th><th>cpu</th><th>cpu</th><th>cpu</th>' "$tmp/mixed/index.html" &&
    grep -q 'GPU utilisation [0-9]*%, CPU [0-9]*%' "$tmp/mixed/index.html"
check mixed-page-both $?
grep -q 'gpu    gpu    gpu    cpu    cpu    cpu' "$tmp/out"
check mixed-table-both $?

# A run with more jobs than the Gantt limit gets no Gantt chart, and the page says why.
cat >"$tmp/many.yaml" <<'EOF'
generate:
  jobs: 210
  meanInterarrival: 30
EOF
if "$drover" sim --workload "$tmp/many.yaml" --policy gang-fifo --out "$tmp/many" >/dev/null 2>"$tmp/err"; then
    [ ! -e "$tmp/many/gantt-gang-fifo.svg" ] && grep -q 'No Gantt chart: 210 jobs' "$tmp/many/index.html"
    check gantt-limit $?
else
    echo "  (generated workload not accepted: $(cat "$tmp/err"); gantt-limit not checked)"
fi

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
