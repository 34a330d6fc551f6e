#!/bin/sh
# Scales the arrival rate of a Pollux-format trace (name,time,application,num_replicas,batch_size):
# every submission time t becomes t0 + (t - t0) / RATE, t0 the first row's time, rounded to
# whole seconds. RATE 2 doubles the load (arrivals twice as dense), 0.5 halves it.
#   sh scripts/arrivals.sh RATE IN.csv > OUT.csv
# The jobs are the same; only when they arrive changes.
set -eu
[ $# -eq 2 ] || { echo "usage: sh scripts/arrivals.sh RATE IN.csv > OUT.csv" >&2; exit 2; }
awk -F, -v OFS=, -v r="$1" 'BEGIN { if (!(r > 0)) { print "arrivals.sh: RATE must be > 0" > "/dev/stderr"; exit 2 } }
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time") t = i
              if (!t) { print "arrivals.sh: " FILENAME ":1: header: expected a column time" > "/dev/stderr"; exit 2 }
              print; next }
    NR == 2 { t0 = $t } { $t = sprintf("%.0f", t0 + ($t - t0) / r); print }' "$2"
