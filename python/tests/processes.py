"""What the Python tests share for the processes they start (routers, workers, gateways)."""

import ctypes
import os
import signal
import subprocess


def _die_with_parent():
    # PR_SET_PDEATHSIG: a crashed test never leaves a router or worker behind.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def start(argv, log_path):
    """Starts argv with stdout and stderr appended to log_path; it dies with this process."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=_die_with_parent)


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
