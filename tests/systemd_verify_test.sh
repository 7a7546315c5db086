#!/usr/bin/env bash
# The systemd units as scripts/install-systemd.sh installs them must pass
# `systemd-analyze verify` without a single complaint, and the installed
# configuration files must load. systemd-analyze only warns (exit status 0)
# about an unknown key or an unparsable value, so any output counts as a
# failure here; the test checks that it does catch a broken directive and a
# missing binary, so it can fail.
#
#   systemd_verify_test.sh BUILD_DIR
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ember-systemd-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Prints systemd-analyze's complaints; returns 0 only when there are none.
clean_verify() {
  local out
  if ! out="$(cd "$(dirname "$1")" && systemd-analyze verify "./$(basename "$1")" 2>&1)"; then
    echo "$out"
    [ -n "$out" ] || echo "(exit status non-zero)"
    return 1
  fi
  echo "$out"
  [ -z "$out" ]
}

command -v systemd-analyze >/dev/null || { echo "FAIL: systemd-analyze missing (scripts/setup.sh installs systemd)" >&2; exit 1; }

# 1. Install into a temporary tree whose paths are real, so verify can check
#    that every ExecStart= binary exists.
"$root/scripts/install-systemd.sh" --build-dir "$build" --prefix "$tmp/usr" \
  --sysconfdir "$tmp/etc" --unitdir "$tmp/units" --no-user >/dev/null
units="$tmp/units"
for f in usr/bin/ember-router usr/bin/ember-worker usr/bin/ember-gateway usr/bin/emberctl \
         etc/ember/router.toml etc/ember/worker.toml etc/ember/gateway.toml \
         etc/ember/router.env etc/ember/worker.env etc/ember/gateway.env \
         units/ember-router.service units/ember-worker@.service units/ember-gateway.service; do
  [ -e "$tmp/$f" ] || fail "install-systemd.sh did not install $f"
done
# The template as systemd instantiates it for GPU 0 (so %i is resolved too).
cp "$units/ember-worker@.service" "$units/ember-worker@0.service"

# 2. Every unit verifies cleanly.
for unit in ember-router.service ember-worker@.service ember-worker@0.service ember-gateway.service; do
  if ! out="$(clean_verify "$units/$unit")"; then
    fail "systemd-analyze verify $unit:"$'\n'"$out"
  fi
done

# 3. What the units must say.
grep -q "^ExecStart=$tmp/usr/bin/ember-worker --config $tmp/etc/ember/worker.toml --device cuda:%i " \
  "$units/ember-worker@.service" || fail "worker ExecStart does not run --device cuda:%i from the prefix"
grep -q "^EnvironmentFile=-$tmp/etc/ember/worker@%i.env" "$units/ember-worker@.service" ||
  fail "worker unit does not read its per-GPU environment file"
for unit in ember-router.service ember-worker@.service ember-gateway.service; do
  for key in "User=ember" "Restart=on-failure" "NoNewPrivileges=yes" "ProtectSystem=strict" \
             "ProtectHome=yes" "PrivateTmp=yes" "RuntimeDirectory=ember" "LimitNOFILE=65536"; do
    grep -qx "$key" "$units/$unit" || fail "$unit lacks $key"
  done
done
grep -q "^DeviceAllow=/dev/nvidiactl rw" "$units/ember-worker@.service" || fail "worker lacks DeviceAllow for NVIDIA"
grep -q "^After=.*ember-router.service" "$units/ember-worker@.service" || fail "worker not ordered after the router"
grep -q "^Wants=.*ember-router.service" "$units/ember-gateway.service" || fail "gateway does not want the router"

# 4. The installed configuration files load (each daemon reads --config
#    before it handles --help).
for d in router worker gateway; do
  if ! out="$("$tmp/usr/bin/ember-$d" --config "$tmp/etc/ember/$d.toml" --help 2>&1)"; then
    fail "ember-$d rejects the installed $d.toml:"$'\n'"$out"
  fi
done

# 5. The test can fail: a misspelt value, an unknown key and a missing binary
#    must each be caught.
sed 's/^Restart=on-failure/Restart=sometimes/' "$units/ember-router.service" > "$units/broken-value.service"
sed 's/^NoNewPrivileges=yes/NoNewPrivilegez=yes/' "$units/ember-gateway.service" > "$units/broken-key.service"
sed "s#^ExecStart=$tmp/usr/bin/ember-worker#ExecStart=$tmp/usr/bin/ember-wroker#" \
  "$units/ember-worker@.service" > "$units/broken-exec@0.service"
for unit in broken-value.service broken-key.service broken-exec@0.service; do
  if clean_verify "$units/$unit" >/dev/null; then
    fail "systemd-analyze verify accepted $unit"
  fi
done

# 6. DESTDIR staging: files under the stage, paths inside without it; an
#    operator's edited config survives a reinstall.
stage="$tmp/stage"
"$root/scripts/install-systemd.sh" --build-dir "$build" --destdir "$stage" >/dev/null
[ -x "$stage/usr/local/bin/ember-router" ] || fail "--destdir did not stage the binaries"
grep -q "^ExecStart=/usr/local/bin/ember-router --config /etc/ember/router.toml" \
  "$stage/etc/systemd/system/ember-router.service" || fail "--destdir leaked into the unit's paths"
echo 'log-level = "debug"' >> "$stage/etc/ember/router.toml"
"$root/scripts/install-systemd.sh" --build-dir "$build" --destdir "$stage" >/dev/null
grep -q 'log-level = "debug"' "$stage/etc/ember/router.toml" || fail "reinstall overwrote router.toml"
[ -f "$stage/etc/ember/router.toml.new" ] || fail "reinstall did not offer router.toml.new"

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "systemd units verified"
