"""ember's Python client: the C++ SDK's API (client/client.h) over the same
wire protocol, with python3-zmq and python3-msgpack only.

    from ember_client import Client
    with Client("tcp://127.0.0.1:5555") as client:
        e = client.embed("minilm", ["hello", "world"])
        e[0]      # array('f', [...]), e.dim floats
        e.tolist()  # list of lists of float

A Client owns one ZeroMQ socket and, like it, must be used by one thread at a
time; give each thread its own Client.
"""

import itertools
import time

import zmq

from . import protocol
from .errors import (TIMEOUT, UNAVAILABLE, EmberError, InternalError, TimeoutError,
                     error_for)

# Past the request's own deadline the router answers TIMEOUT itself; wait a
# little longer than that before concluding the router is unreachable.
_GRACE_S = 0.25


class Embeddings:
    """Vectors for one request, in the order of the texts sent. A sequence:
    ``len(e)``, ``e[i]`` (array.array of float32), iteration."""

    def __init__(self, reply):
        self.model = reply.get("model", "")
        self.version = reply.get("version", 0)
        self.worker = reply.get("worker", "")
        self.dim = reply.get("dim", 0)
        # Texts in the largest worker batch that computed these.
        self.batch_size = reply.get("batch_size", 0)
        self._rows = protocol.vectors(reply)

    def __len__(self):
        return len(self._rows)

    def __getitem__(self, i):
        return self._rows[i]

    def __iter__(self):
        return iter(self._rows)

    def tolist(self):
        return [row.tolist() for row in self._rows]

    def __repr__(self):
        return "Embeddings(model=%r, version=%d, count=%d, dim=%d)" % (
            self.model, self.version, len(self), self.dim)


class Client:
    """Talks to a router's frontend endpoint (``tcp://host:5555``, ``ipc://...``).

    ``timeout`` (seconds) and ``attempts`` are the defaults for embed().
    (CURVE encryption, docs/security.md, is not supported by this client yet.)
    """

    def __init__(self, endpoint, timeout=30.0, attempts=1):
        self.endpoint = endpoint
        self.timeout = timeout
        self.attempts = attempts
        self._context = zmq.Context()
        self._socket = None
        self._ids = itertools.count(1)
        self._answered = False  # whether the last attempt got any answer
        self._connect()

    # -- lifetime ------------------------------------------------------------

    def close(self):
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None
        if self._context is not None:
            self._context.term()
            self._context = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _connect(self):
        if self._socket is not None:
            self._socket.close(linger=0)
        socket = self._context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.RECONNECT_IVL, 100)
        socket.setsockopt(zmq.RECONNECT_IVL_MAX, 2000)
        socket.connect(self.endpoint)
        self._socket = socket

    # -- API -----------------------------------------------------------------

    def embed(self, model, texts, version=0, truncate=True, timeout=None, attempts=None):
        """Embeds ``texts`` (a str or a list of str) with ``model``.

        version:  0 = the latest version the cluster serves.
        truncate: False makes over-long texts fail with TOO_LONG.
        timeout:  seconds per attempt (default: the client's); the router
                  enforces the same deadline.
        attempts: tries in all (Lazy Pirate): when no answer comes within the
                  timeout, or the router answers UNAVAILABLE, reconnect and
                  resend. Embedding is idempotent, so that is safe.
        Raises EmberError (a subclass per code) on any failure.
        """
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be str")
        if not isinstance(model, str):
            raise TypeError("model must be a str")
        timeout = self.timeout if timeout is None else timeout
        attempts = self.attempts if attempts is None else attempts
        timeout_ms = max(1, int(round(timeout * 1000)))
        body = protocol.embed_request(model, texts, version=version, timeout_ms=timeout_ms,
                                      truncate=truncate)
        reply = protocol.unpack(self._call(protocol.REQUEST, body, timeout, attempts))
        embeddings = Embeddings(reply)
        if len(embeddings) != len(texts):
            raise InternalError("reply has %d vectors for %d texts" % (len(embeddings), len(texts)))
        return embeddings

    def status(self, timeout=5.0):
        """The router's view of the cluster (CONTROL "status") as a dict:
        router_version, requests, workers [...], models [...]."""
        body = protocol.pack({"op": "status"})
        return protocol.unpack(self._call(protocol.CONTROL, body, timeout, 1))

    # -- transport -------------------------------------------------------------

    def _call(self, command, body, timeout, attempts):
        attempt = 1
        while True:
            try:
                return self._call_once(command, body, timeout)
            except EmberError as e:
                retryable = e.code == UNAVAILABLE or (e.code == TIMEOUT and not self._answered)
                if not retryable or attempt >= attempts:
                    raise
                attempt += 1
                # Lazy Pirate: a fresh socket drops whatever was queued for a
                # router that may be gone.
                self._connect()

    def _call_once(self, command, body, timeout):
        self._answered = False
        request_id = next(self._ids)
        self._socket.send_multipart(protocol.encode(command, request_id, body), copy=False)
        deadline = time.monotonic() + timeout + _GRACE_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from the router within %d ms" % round(timeout * 1000))
            if not self._socket.poll(max(1, int(left * 1000)), zmq.POLLIN):
                continue
            frames = self._socket.recv_multipart()
            got_command, got_id, got_body = protocol.decode(frames)
            # An error about a message the router could not even parse
            # carries id 0.
            if got_id != request_id and not (got_id == 0 and got_command == protocol.ERROR):
                continue  # a late reply to an earlier call that timed out
            self._answered = True
            if got_command == protocol.ERROR:
                error = protocol.unpack(got_body)
                raise error_for(str(error.get("code", "INTERNAL")), str(error.get("message", "")))
            if got_command != protocol.REPLY:
                raise InternalError("unexpected command %d" % got_command)
            return got_body
