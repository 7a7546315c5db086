#!/usr/bin/env bash
# Runs the README's two commands (./scripts/demo.sh, then ./scripts/test.sh) on a freshly
# bootstrapped Debian 12 root, as a new user's machine would: a minimal root built by
# mmdebstrap from Debian's own packages, this checkout copied in as a clean clone would have it
# (tracked and untracked-but-not-ignored files), and nothing of this machine's installed state
# but its CUDA toolkit (below). setup.sh then installs from Debian's and PyPI's registries (the
# Python environment: 2.8 GB of wheels). A package that setup.sh misses (for example one
# Debian pulls in only as a Recommends) fails here, where it cannot on a machine that already
# has it.
#
# The CUDA toolkit is not a Debian package: a GPU build machine has NVIDIA's, in
# /usr/local/cuda-VERSION with /usr/local/cuda pointing at it. That folder of this machine (if it
# has one) is mounted read-only into the root at the same place, with /usr/local/cuda and
# nvcc on PATH, as NVIDIA's installer leaves them; EMBER_FRESH_CUDA=none leaves it out.
#
#   sudo ./scripts/fresh-check.sh            # prints each command's time; non-zero on failure
#   EMBER_FRESH_KEEP=1 ...                   # keep the root afterwards (to look around)
#   EMBER_FRESH_DIR=/var/tmp/x ...           # where the root goes (needs ~14 GiB)
#   EMBER_FRESH_MIRROR=http://... ...        # a Debian mirror (default deb.debian.org)
#
# Too slow for every CI run (~30-40 min on 2 cores, all of it cold: no ccache, no packages):
# run it before a release and before calling setup work done (README "Before a release").
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-check: needs root (mmdebstrap, mounts and chroot); try: sudo $0" >&2
  exit 2
fi
if ! command -v mmdebstrap >/dev/null 2>&1; then
  echo "fresh-check: installing mmdebstrap (Debian package) on this machine"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null
fi

mirror="${EMBER_FRESH_MIRROR:-http://deb.debian.org/debian}"
security="${EMBER_FRESH_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
work="${EMBER_FRESH_DIR:-$(mktemp -d /var/tmp/ember-fresh-XXXXXX)}"
cuda="${EMBER_FRESH_CUDA:-$(readlink -f /usr/local/cuda 2>/dev/null || true)}"
[ "$cuda" = none ] || [ -x "$cuda/bin/nvcc" ] || cuda=none
mkdir -p "$work"
chroot_dir="$work/root"
cleanup() {
  if [ -z "${EMBER_FRESH_KEEP:-}" ]; then
    rm -rf --one-file-system "$chroot_dir"
  else
    echo "fresh-check: kept $chroot_dir"
  fi
}
trap cleanup EXIT

results=()
failed=0
# log_of NAME: the log file of step NAME.
log_of() { echo "$work/$(printf '%s' "${1#./}" | tr -c 'A-Za-z0-9.-' '_').log"; }
# step NAME COMMAND...: runs COMMAND, logs to $(log_of NAME), records time and outcome.
step() {
  local name="$1" log start end rc=0
  shift
  log="$(log_of "$name")"
  start=$(date +%s)
  "$@" >"$log" 2>&1 || rc=$?
  end=$(date +%s)
  if [ "$rc" -eq 0 ]; then
    results+=("$(printf '%-28s ok      %5d s' "$name" $((end - start)))")
  else
    results+=("$(printf '%-28s FAILED  %5d s  (exit %d; log %s)' "$name" $((end - start)) "$rc" "$log")")
    failed=1
    echo "fresh-check: $name failed (exit $rc); last lines of its log:" >&2
    tail -n 40 "$log" >&2
  fi
  return "$rc"
}

bootstrap() {
  # minbase: Essential packages and apt, the smallest Debian there is (no sudo, no
  # ca-certificates, no compiler, no Python).
  mmdebstrap --variant=minbase --mode=root bookworm "$chroot_dir" \
    "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
    "deb $security bookworm-security main"
  # A chroot has no init: services that packages start on install (redis-server) stay
  # stopped, as the standard policy-rc.d says. The tests start what they need themselves.
  printf '#!/bin/sh\nexit 101\n' >"$chroot_dir/usr/sbin/policy-rc.d"
  chmod +x "$chroot_dir/usr/sbin/policy-rc.d"
  # This machine's network, as any machine on it would have it: its resolver and its site CA
  # certificates (an HTTPS-inspecting proxy's, say), which ca-certificates adds to the trust
  # store when setup.sh installs it. Nothing else of this machine goes in.
  cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$chroot_dir/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$chroot_dir/usr/local/share/ca-certificates/"
  fi
  if [ "$cuda" != none ]; then
    mkdir -p "$chroot_dir$cuda"
    ln -sfn "$cuda" "$chroot_dir/usr/local/cuda"
  fi
  mkdir -p "$chroot_dir/root/ember"
  # What a clean clone holds: tracked files and untracked ones git does not ignore.
  (cd "$repo" && git ls-files -z --cached --others --exclude-standard |
    tar --null --files-from=- -cf -) | tar -xf - -C "$chroot_dir/root/ember"
}

# in_root COMMAND: runs COMMAND in the root, in its own mount and PID namespaces (so the
# mounts and every process it started go away with it), with a clean environment.
in_root() {
  unshare --mount --pid --fork --kill-child bash -euo pipefail -c '
    root="$1" cuda="$2"; shift 2
    mount --make-rprivate /
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/dev/shm"
    if [ "$cuda" != none ]; then
      mount --bind "$cuda" "$root$cuda"
      mount -o remount,bind,ro "$root$cuda"
    fi
    exec chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/cuda/bin \
      /bin/bash -c "cd /root/ember && $*"
  ' in_root "$chroot_dir" "$cuda" "$@"
}

echo "fresh-check: bootstrapping Debian 12 (minbase) in $chroot_dir"
step "bootstrap (mmdebstrap)" bootstrap || { printf '%s\n' "${results[@]}"; exit 1; }
packages=$(chroot "$chroot_dir" dpkg-query -W -f='.\n' | wc -l)
echo "fresh-check: fresh root has $packages packages, CUDA toolkit: $cuda; running the README's commands"
step "./scripts/demo.sh" in_root ./scripts/demo.sh || true
if [ "$failed" -eq 0 ]; then
  echo "fresh-check: demo output:"
  tail -n 12 "$(log_of ./scripts/demo.sh)" || true
fi
step "./scripts/test.sh" in_root ./scripts/test.sh || true
grep -E "tests passed|tests failed" "$(log_of ./scripts/test.sh)" || true

echo
echo "fresh-check: Debian 12 minbase root (CUDA toolkit: $cuda), $(nproc) cores; logs in $work"
printf '  %s\n' "${results[@]}"
exit "$failed"
