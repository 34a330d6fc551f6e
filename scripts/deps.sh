#!/bin/sh
# Installs the Debian packages Drover needs to build, test and plot, if any are missing.
# Safe to run repeatedly: it does nothing when everything is present.
set -eu

PKGS="build-essential cmake pkg-config libcmocka-dev libjansson-dev libyaml-dev \
libcurl4-openssl-dev libmicrohttpd-dev libgnutls28-dev gnuplot-nox jq"
# kubectl drives the test API server in the Kubernetes tests; Debian ships it as kubernetes-client.
command -v kubectl >/dev/null 2>&1 || PKGS="$PKGS kubernetes-client"
# `scripts/deps.sh fuzz` (make fuzz) also needs clang, for libFuzzer; nothing else does.
[ "${1:-}" = fuzz ] && PKGS="$PKGS clang"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

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
# kubernetes-client is optional (not in every Debian release); install the rest regardless.
# shellcheck disable=SC2086
if ! $SUDO apt-get install -y -qq $missing; then
    rest=$(echo "$missing" | sed 's/kubernetes-client//')
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq $rest
fi
