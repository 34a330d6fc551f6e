#!/bin/sh
# fresh-machine.sh - README's two commands on a new Debian 12, as a new user would run them.
#
# Builds (once, then kept) a minimal Debian 12 (bookworm) root with debootstrap: the base
# system (variant minbase) with only git and make added. Each run copies that base to a new
# root, clones the commit under test into it (a clean checkout: no build directories, no
# uncommitted change), and runs, as root inside a chroot, `make demo` and then `make test`.
# `make demo` reaches the Debian mirror (scripts/deps.sh installs what is missing); `make test`
# runs in a network namespace of its own with only loopback (unshare -n), so no test can reach
# a cluster or anything else. It prints each command's exit status and wall time and the number
# of packages the run installed (dpkg's count before and after), and exits 0 only when both
# commands did.
#
#   usage: sh scripts/fresh-machine.sh [--dir DIR] [--commit REV] [--mirror URL] [--keep]
#                                      [--reuse] [--rebuild-base] [--demo-only] [--ci]
#   --dir DIR        where the base and the root live (default /var/tmp/drover-fresh; never
#                    inside the repository)
#   --commit REV     the commit to check (default HEAD)
#   --mirror URL     the Debian mirror (default: the first one this machine's apt uses)
#   --keep           keep the root after the run (DIR/root) to look into it
#   --reuse          run in the root an earlier --keep left (its packages stay installed:
#                    a quick second look, not a fresh machine) with a fresh clone
#   --rebuild-base   debootstrap the base again
#   --demo-only      stop after `make demo` (a quick check of scripts/deps.sh)
#   --ci             `make test` as CI runs it (CI=true: -Werror)
# Needs root, debootstrap (apt-get install debootstrap) and unshare (util-linux). The chroot's
# mounts (/proc, /sys, /dev, /dev/pts, /dev/shm) are undone on exit, failure and interrupt.
# Logs: DIR/logs/make-demo.log and DIR/logs/make-test.log.
set -eu

dir=/var/tmp/drover-fresh
rev=HEAD
mirror=""
keep=""
reuse=""
rebuild=""
ci=""
demo_only=""
# The usage lines above: on stdout with status 0 for --help, on stderr with status 2 after a
# bad argument.
usage() {
    text=$(sed -n '/^#   usage:/,/^#   --ci/p' "$0" | sed 's/^# \{0,1\}//')
    if [ "$1" -eq 0 ]; then echo "$text"; else echo "$text" >&2; fi
    exit "$1"
}
while [ $# -gt 0 ]; do
    case $1 in
    --dir) dir=${2:?--dir needs a directory} && shift ;;
    --commit) rev=${2:?--commit needs a revision} && shift ;;
    --mirror) mirror=${2:?--mirror needs a URL} && shift ;;
    --keep) keep=1 ;;
    --reuse) reuse=1 keep=1 ;;
    --rebuild-base) rebuild=1 ;;
    --demo-only) demo_only=1 ;;
    --ci) ci=1 ;;
    -h | --help) usage 0 ;;
    *) echo "fresh-machine: unknown argument '$1'" >&2 && usage 2 ;;
    esac
    shift
done

say() { echo "fresh-machine: $*" >&2; }
die() {
    say "$*"
    exit 1
}

repo=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mounts)"
command -v debootstrap >/dev/null 2>&1 ||
    die "needs debootstrap: apt-get install --no-install-recommends debootstrap"
command -v unshare >/dev/null 2>&1 || die "needs unshare (Debian package util-linux)"
sha=$(git -C "$repo" rev-parse --verify "$rev^{commit}") || die "no commit '$rev' in $repo"
case $dir/ in "$repo"/*) die "--dir $dir is inside the repository; use a directory outside it" ;; esac
[ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ] &&
    say "note: uncommitted changes in $repo are not part of this check (commit $sha is)"

# The Debian mirror this machine's apt reads (deb822 URIs: or one-line deb), else deb.debian.org.
if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
        sed -n 's|^URIs: *\(http[^ ]*/debian\)/*$|\1|p' | head -n 1)
    [ -n "$mirror" ] || mirror=$(sed -n 's|^deb  *\(http[^ ]*/debian\)/*  *.*|\1|p' \
        /etc/apt/sources.list 2>/dev/null | head -n 1)
    [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
fi

base=$dir/base
root=$dir/root
logs=$dir/logs
mkdir -p "$dir" "$logs"

# Every mount under the root, deepest first (so they can be undone in that order).
mounts_under() {
    awk -v r="$1/" 'index($2 "/", r) == 1 { print $2 }' /proc/mounts | sort -r
}
unmount_all() {
    for m in $(mounts_under "$root"); do
        umount "$m" 2>/dev/null || umount -l "$m" || say "could not unmount $m"
    done
}
# Removes a root only when nothing is mounted under it (a bound /dev must never be emptied).
remove_root() {
    [ -e "$1" ] || return 0
    [ -z "$(mounts_under "$1")" ] || die "$1 still has mounts; not removing it"
    rm -rf --one-file-system "$1"
}
finish() {
    status=$?
    unmount_all
    if [ -z "$keep" ]; then
        remove_root "$root"
    else
        say "root kept: $root (run again in it with --reuse)"
    fi
    exit $status
}
trap finish EXIT
trap 'exit 130' INT TERM

# The base: debootstrap's minbase (essential packages and apt) with git and make, and the
# sources a Debian 12 install has (main, updates, security).
if [ -n "$rebuild" ] || [ ! -f "$base/.drover-base-ok" ]; then
    remove_root "$base"
    say "debootstrap bookworm (minbase, git, make) from $mirror into $base"
    t0=$(date +%s)
    debootstrap --variant=minbase --include=git,make bookworm "$base" "$mirror" \
        >"$logs/debootstrap.log" 2>&1 || {
        tail -n 20 "$logs/debootstrap.log" >&2
        die "debootstrap failed (log: $logs/debootstrap.log)"
    }
    security=$(echo "$mirror" | sed 's|/debian$|/debian-security|')
    cat >"$base/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
    [ -s "$base/etc/hosts" ] ||
        printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
            >"$base/etc/hosts"
    touch "$base/.drover-base-ok"
    say "base ready in $(($(date +%s) - t0)) s"
fi

if [ -n "$reuse" ]; then
    [ -d "$root/root" ] || die "--reuse: no kept root in $root (run once with --keep)"
    unmount_all
    rm -rf "$root/root/drover"
else
    unmount_all
    remove_root "$root"
    cp -a "$base" "$root"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
git clone -q --no-checkout "$repo" "$root/root/drover"
git -C "$root/root/drover" checkout -q --detach "$sha"

mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs -o mode=1777 shm "$root/dev/shm"

# Runs a shell command line in the root, as a login would (a clean environment), its output on
# the terminal and in a log; leaves its exit status and wall time in $rc and $secs. (The status
# goes through a file: the pipe into tee runs the command in a subshell; `|| st=$?` keeps set -e
# from ending that subshell before it is written.)
in_root() { # LOG NET COMMAND
    log=$1 net=$2 cmd=$3
    env="HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    env="$env LANG=C.UTF-8 TERM=${TERM:-dumb}${ci:+ CI=true}"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    set -- chroot "$root" env -i $env sh -c "cd /root/drover && $cmd"
    [ "$net" = loopback ] && set -- unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"
    {
        st=0
        "$@" 2>&1 || st=$?
        echo $st >"$log.rc"
    } | tee "$log"
    secs=$(($(date +%s) - t0))
    rc=$(cat "$log.rc")
    rm -f "$log.rc"
}
# shellcheck disable=SC2016
packages() { chroot "$root" dpkg-query -W -f='${Status}\n' | grep -c "install ok installed"; }

# unshare -n needs `ip` from the host to bring loopback up; without it there is no loopback.
command -v ip >/dev/null 2>&1 || die "needs ip (Debian package iproute2) for make test's loopback"
n0=$(packages)
say "commit $(git -C "$repo" log -1 --format='%h %s' "$sha" | cut -c1-80)"
say "root $root: $n0 packages installed; running make demo"
in_root "$logs/make-demo.log" mirror "make demo"
demo_rc=$rc demo_secs=$secs
n1=$(packages)
test_rc=0
if [ -z "$demo_only" ]; then
    say "running make test (network: loopback only)${ci:+ with CI=true}"
    in_root "$logs/make-test.log" loopback "make test"
    test_rc=$rc test_secs=$secs
    n2=$(packages)
fi

echo
echo "fresh machine: Debian 12 (debootstrap minbase + git, make), commit $(echo "$sha" | cut -c1-12)"
echo "  make demo: exit $demo_rc, $demo_secs s; packages $n0 -> $n1 ($((n1 - n0)) installed)"
[ -z "$demo_only" ] &&
    echo "  make test: exit $test_rc, $test_secs s; packages $n1 -> $n2 ($((n2 - n1)) installed)"
[ -n "$reuse" ] && echo "  (a reused root: packages an earlier run installed are not counted)"
echo "  logs: $logs/"
[ "$demo_rc" -eq 0 ] && [ "$test_rc" -eq 0 ]
