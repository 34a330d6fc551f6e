#!/bin/sh
# Runs every benchmark from a build directory: sh bench/run.sh BUILD_DIR
set -eu
b=${1:-build}
"$b/bench/sim_speed"
"$b/bench/trace_replay"
