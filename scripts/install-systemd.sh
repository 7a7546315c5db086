#!/usr/bin/env bash
# Installs ember's daemons as systemd services: the binaries, the unit files
# (router, per-GPU worker template, gateway), example configuration and
# environment files, and the `ember` system user.
#
#   sudo ./scripts/install-systemd.sh            # build/ -> /usr/local, /etc
#   ./scripts/install-systemd.sh --destdir /tmp/stage   # staged, no root needed
#
# Options:
#   --build-dir DIR   where the binaries were built (default: ./build)
#   --prefix DIR      binaries in PREFIX/bin, docs in PREFIX/share/doc/ember
#                     (default /usr/local); the units' ExecStart= points there
#   --sysconfdir DIR  configuration in SYSCONFDIR/ember (default /etc)
#   --unitdir DIR     unit files (default /etc/systemd/system)
#   --destdir DIR     stage everything under DIR, as `make DESTDIR=` does: the
#                     files land in DIR/PREFIX/... but name PREFIX/... inside;
#                     no user is created and systemd is not reloaded
#   --no-user         do not create the ember user (tests use this with
#                     --prefix/--sysconfdir/--unitdir in a temporary folder)
#
# Existing configuration files are never overwritten: a changed example is
# installed next to them as *.new. Afterwards (as root):
#   systemctl enable --now ember-router ember-worker@0 ember-gateway
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
prefix=/usr/local
sysconfdir=/etc
unitdir=/etc/systemd/system
destdir=""
create_user=1

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --prefix) prefix="$2"; shift 2 ;;
    --sysconfdir) sysconfdir="$2"; shift 2 ;;
    --unitdir) unitdir="$2"; shift 2 ;;
    --destdir) destdir="$2"; shift 2 ;;
    --no-user) create_user=0; shift ;;
    -h|--help) usage 0 ;;
    *) echo "install-systemd: unknown option $1" >&2; usage 2 >&2 ;;
  esac
done

for p in "$prefix" "$sysconfdir" "$unitdir"; do
  case "$p" in
    /*) ;;
    *) echo "install-systemd: $p must be an absolute path" >&2; exit 2 ;;
  esac
done
if [ -n "$destdir" ]; then
  mkdir -p "$destdir"
  destdir="$(cd "$destdir" && pwd)"
fi

bins=(router/ember-router worker/ember-worker gateway/ember-gateway client/emberctl)
for b in "${bins[@]}"; do
  if [ ! -x "$build/$b" ]; then
    echo "install-systemd: $build/$b is missing; build first (./scripts/build.sh)" >&2
    exit 1
  fi
done

bindir="$prefix/bin"
confdir="$sysconfdir/ember"
docdir="$prefix/share/doc/ember"

# Files go under $destdir; what they say inside does not.
install -d -m 0755 "$destdir$bindir" "$destdir$unitdir" "$destdir$docdir"
install -d -m 0755 "$destdir$confdir"
for b in "${bins[@]}"; do
  install -m 0755 "$build/$b" "$destdir$bindir/"
done

# The units in systemd/ name /usr/local/bin and /etc/ember; point them at
# where this installation puts things.
for unit in ember-router.service ember-worker@.service ember-gateway.service; do
  sed -e "s#/usr/local/bin/#$bindir/#g" \
      -e "s#/etc/ember/#$confdir/#g" \
      -e "s#/usr/local/share/doc/ember/#$docdir/#g" \
      "$root/systemd/$unit" > "$destdir$unitdir/$unit.tmp"
  chmod 0644 "$destdir$unitdir/$unit.tmp"
  mv "$destdir$unitdir/$unit.tmp" "$destdir$unitdir/$unit"
done

# Configuration: keep what the operator has; offer the new example as .new.
install_config() {
  local src="$1" dst="$2" mode="$3"
  if [ -e "$dst" ]; then
    if ! cmp -s "$src" "$dst"; then
      install -m "$mode" "$src" "$dst.new"
      echo "install-systemd: kept $dst; the current example is $dst.new"
    fi
  else
    install -m "$mode" "$src" "$dst"
  fi
}
for name in router worker gateway; do
  install_config "$root/config/$name.toml" "$destdir$confdir/$name.toml" 0640
  install_config "$root/systemd/$name.env" "$destdir$confdir/$name.env" 0640
done
# CURVE key files (docs/security.md) belong here: owned by ember, *.key 0600.
install -d -m 0750 "$destdir$confdir/keys"

for doc in README.md docs/operations.md docs/protocol.md; do
  [ -f "$root/$doc" ] && install -m 0644 "$root/$doc" "$destdir$docdir/"
done

if [ -n "$destdir" ]; then
  echo "install-systemd: staged under $destdir"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  if [ "$create_user" -eq 1 ] && ! getent passwd ember >/dev/null; then
    # A system user with no login and no home of its own; "video" and
    # "render" give GPU device access on hosts where /dev/nvidia* or
    # /dev/dri are group-restricted.
    useradd --system --user-group --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin --comment "ember embedding cluster" ember
    for group in video render; do
      getent group "$group" >/dev/null && usermod -a -G "$group" ember
    done
    echo "install-systemd: created user ember"
  fi
  if getent group ember >/dev/null; then
    chgrp -R ember "$confdir"
    # CURVE keys (docs/security.md): owned by the service user.
    chown ember:ember "$confdir/keys"
  fi
  # Reload only when the units went where systemd looks for them.
  case "$unitdir" in
    /etc/systemd/system|/usr/lib/systemd/system|/lib/systemd/system|/usr/local/lib/systemd/system)
      [ -d /run/systemd/system ] && systemctl daemon-reload ;;
  esac
  echo "install-systemd: installed; edit $confdir/*.toml, then:"
  echo "  systemctl enable --now ember-router ember-worker@0 ember-gateway"
else
  echo "install-systemd: installed without root: no ember user, no daemon-reload"
fi
