#!/bin/sh
# Installs the Debian packages Drover needs to build, test and plot, if any are missing.
# Safe to run repeatedly: it does nothing when everything is present.
set -eu

PKGS="build-essential cmake pkg-config libcmocka-dev libjansson-dev libyaml-dev \
libcurl4-openssl-dev libmicrohttpd-dev libgnutls28-dev nettle-dev gnuplot-nox jq"
# kubectl drives the test API server in the Kubernetes tests; Debian ships it as kubernetes-client.
command -v kubectl >/dev/null 2>&1 || PKGS="$PKGS kubernetes-client"
# help2man formats the man page (make install); without it cmake/manpage.cmake writes a plainer
# one, so a machine that cannot install it still builds.
OPTIONAL="help2man"
# `scripts/deps.sh fuzz` (make fuzz) also needs clang, for libFuzzer; nothing else does.
[ "${1:-}" = fuzz ] && PKGS="$PKGS clang"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
optional_missing=""
for p in $OPTIONAL; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        optional_missing="$optional_missing $p"
done
[ -z "$missing$optional_missing" ] && exit 0
# Optional packages alone never ask for sudo: they come along with required ones, or as root.
if [ -z "$missing" ] && [ "$(id -u)" -ne 0 ]; then
    echo "deps: optional, not installed (run as root to add):$optional_missing" >&2
    exit 0
fi
missing="$missing$optional_missing"

echo "deps: installing:$missing" >&2
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "deps: these Debian packages are missing:$missing" >&2
    echo "deps: run as root: apt-get install$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# kubernetes-client and help2man are optional (not in every release); install the rest regardless.
# shellcheck disable=SC2086
if ! $SUDO apt-get install -y -qq $missing; then
    rest=$(echo "$missing" | sed 's/kubernetes-client//; s/help2man//')
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq $rest
fi
