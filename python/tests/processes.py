"""What the Python tests share for the processes they start (routers, workers, gateways), the
model repositories they serve and the gateway they call."""

import ctypes
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request


def _die_with_parent():
    # PR_SET_PDEATHSIG: a crashed test never leaves a router or worker behind.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def start(argv, log_path):
    """Starts argv with stdout and stderr appended to log_path; it dies with this process."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=_die_with_parent)


def start_gateway(argv, log_path, timeout=60):
    """Starts ember-gateway (argv without --listen) on a port of its own choosing and returns
    (process, port): the port is read from its log, so no other test can take it in between."""
    process = start(argv + ["--listen", "127.0.0.1:0"], log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read())
        if found:
            return process, int(found.group(1))
        if process.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError("ember-gateway did not start; see " + log_path)


def require(*paths):
    """Raises unless every path (binaries, model folders ctest passes in) exists."""
    for path in paths:
        if not path or not os.path.exists(path):
            raise RuntimeError("missing %r: run through ctest" % path)


def stop(processes, timeout=5):
    """Terminates the processes (SIGTERM, then SIGKILL after `timeout` seconds each)."""
    for p in processes:
        if p.poll() is None:
            p.terminate()
    for p in processes:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def add_version(repository, name, source, config_toml=None):
    """Makes version 1 of model `name` in `repository` serve the folder `source`: a link to it,
    or, with config_toml, a folder of links to its entries beside a config.toml of that text
    (the same weights under other settings)."""
    version = os.path.join(repository, name, "1")
    if config_toml is None:
        os.makedirs(os.path.dirname(version), exist_ok=True)
        os.symlink(source, version)
        return
    os.makedirs(version)
    for entry in os.listdir(source):
        os.symlink(os.path.join(source, entry), os.path.join(version, entry))
    with open(os.path.join(version, "config.toml"), "w") as f:
        f.write(config_toml)


def post_json(base, path, body, timeout=30):
    """(status, parsed JSON body, headers) of a POST of `body` as JSON to base + path; status 0
    and the reason when nothing answers (a gateway not up yet)."""
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), e.headers
    except urllib.error.URLError as e:
        return 0, str(e), {}
