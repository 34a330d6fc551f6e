#!/bin/sh
# Installs the Debian packages Drover needs to build, test and plot, if any are missing, and
# nothing else: no recommended packages (apt's default would add ImageMagick, Ghostscript, dbus
# and ~200 more), apt's output kept in a log that is shown only when the install fails.
# Safe to run repeatedly: it does nothing when everything is present.
#   usage: sh scripts/deps.sh [fuzz]
# scripts/fresh-machine.sh checks on a new Debian 12 root that this list is enough for
# `make demo` and `make test`.
set -eu

# The C compiler and make; CMake and pkg-config; the libraries (cmocka for the tests; libyaml,
# jansson, libcurl, libmicrohttpd with GnuTLS, nettle for drover); gnuplot for the plots;
# Universal Ctags for test_shape (scripts/check-shape.sh, the size limits).
PKGS="gcc libc6-dev make cmake pkg-config libcmocka-dev libjansson-dev libyaml-dev \
libcurl4-openssl-dev libmicrohttpd-dev libgnutls28-dev nettle-dev gnuplot-nox universal-ctags"
# GLPK solves goodput's integer program on a cluster of several GPU types (goodput_ilp.c).
PKGS="$PKGS libglpk-dev"
# kubectl drives the test API server in the Kubernetes tests; Debian ships it as
# kubernetes-client (kubectl 1.20 in Debian 12; the tests say what they skip with it).
command -v kubectl >/dev/null 2>&1 || PKGS="$PKGS kubernetes-client"
# python3 runs python/drover_progress.py's tests (tests/python, test_ctrl_progress_py); any
# python3 on PATH will do (a minimal Debian 12 has none).
command -v python3 >/dev/null 2>&1 || PKGS="$PKGS python3"
# help2man formats the man page (make install); without it cmake/manpage.cmake writes a plainer
# one, so a machine that cannot install it still builds.
OPTIONAL="help2man"
# `scripts/deps.sh fuzz` (make fuzz) also needs clang and its libFuzzer, which Debian packages
# as libclang-rt-N-dev (N clang's major version), a package clang only recommends.
FUZZ=""
[ "${1:-}" = fuzz ] && FUZZ=1 && PKGS="$PKGS clang"

# The libclang-rt-N-dev that matches the `clang` package apt would install; empty when apt does
# not know clang yet (no package lists).
clang_rt() {
    apt-cache depends clang 2>/dev/null |
        sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/libclang-rt-\1-dev/p' | head -n 1
}

# The packages of the list given that are not installed.
not_installed() {
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            printf ' %s' "$p"
    done
}

if [ -n "$FUZZ" ]; then
    rt=$(clang_rt)
    [ -n "$rt" ] && PKGS="$PKGS $rt"
fi
# shellcheck disable=SC2086
missing=$(not_installed $PKGS)
# shellcheck disable=SC2086
optional_missing=$(not_installed $OPTIONAL)
[ -z "$missing$optional_missing" ] && exit 0
# Optional packages alone never ask for sudo: they come along with required ones, or as root.
if [ -z "$missing" ] && [ "$(id -u)" -ne 0 ]; then
    echo "deps: optional, not installed (run as root to add):$optional_missing" >&2
    exit 0
fi
missing="$missing$optional_missing"

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "deps: these Debian packages are missing:$missing" >&2
    echo "deps: run as root: apt-get install --no-install-recommends$missing" >&2
    exit 1
fi
log=$(mktemp "${TMPDIR:-/tmp}/drover-deps.XXXXXX")
fail() {
    tail -n 40 "$log" >&2
    echo "deps: $1 failed (apt's whole output: $log)" >&2
    exit 1
}
echo "deps: installing:$missing (no recommended packages)" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >"$log" 2>&1 || fail "apt-get update"
if [ -n "$FUZZ" ] && [ -z "${rt:-}" ]; then
    rt=$(clang_rt)
    missing="$missing $rt"
fi
before=$(dpkg-query -W -f='${Status}\n' 2>/dev/null | grep -c "install ok installed" || true)
# kubernetes-client and help2man are optional (not in every release); install the rest regardless.
# shellcheck disable=SC2086
if ! $SUDO apt-get install -y -q --no-install-recommends $missing >>"$log" 2>&1; then
    rest=$(echo "$missing" | sed 's/kubernetes-client//; s/help2man//')
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -q --no-install-recommends $rest >>"$log" 2>&1 ||
        fail "apt-get install"
    echo "deps: kubernetes-client or help2man could not be installed; going on without" >&2
fi
after=$(dpkg-query -W -f='${Status}\n' 2>/dev/null | grep -c "install ok installed" || true)
echo "deps: $((after - before)) packages installed (apt's output: $log)" >&2
