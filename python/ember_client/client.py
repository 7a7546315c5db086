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
import random
import struct
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
        # Per text, the tokens the model ran on it (special tokens included, after
        # truncation); empty when not known. total_tokens: their sum, as OpenAI's usage.
        self.tokens = list(reply.get("tokens") or [])
        if self.tokens and len(self.tokens) != reply.get("count", 0):
            raise InternalError("reply has %d token counts for %d texts"
                                % (len(self.tokens), reply.get("count", 0)))
        self.total_tokens = sum(self.tokens)
        # A score's: what each of a row's dim scores is (a classifier's labels).
        self.labels = list(reply.get("labels") or [])
        # A tokenization's (dim 0, no vectors): every text's tokens one after another,
        # tokens[i] of text i; per token its id, its vocabulary string and the bytes
        # (start, stop) of its text it came from ((0, 0) for the [CLS] and [SEP] added).
        self.token_ids = list(reply.get("token_ids") or [])
        self.token_pieces = list(reply.get("token_pieces") or [])
        spans = list(reply.get("token_spans") or [])
        self.token_spans = list(zip(spans[0::2], spans[1::2]))
        # A decode's (dim 0, no vectors): one text per sequence of ids.
        self.texts = list(reply.get("texts") or [])
        # A sparse or multi-vector reply's: how many rows of dim floats each text has (e[i]
        # then holds them all), and a sparse row's token id.
        self.rows = list(reply.get("rows") or [])
        self.indices = list(reply.get("indices") or [])
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


class _RouterList:
    """Which router to use and when to try a failed one again: client/router_list.h's rules
    (start at a home router, stay with the one that answers, skip a failed one for a backoff
    that doubles from 0.5 s to 5 s; away from home, probe it once its backoff is over and
    go back when the probe connects)."""

    def __init__(self, endpoints, home, first=0.5, most=5.0):
        if not endpoints:
            raise ValueError("no router endpoint given")
        self.endpoints = list(endpoints)
        self.home = home % len(self.endpoints)
        self.current = self.home
        self._first, self._most = first, most
        self._retry_at = [0.0] * len(self.endpoints)
        self._backoff = [0.0] * len(self.endpoints)

    def backing_off(self, i, now):
        return now < self._retry_at[i]

    def fail_back_due(self, now):
        return self.current != self.home and not self.backing_off(self.home, now)

    def pick(self, now):
        n = len(self.endpoints)
        for k in range(n):
            i = (self.current + k) % n
            if not self.backing_off(i, now):
                return i
        return min(range(n), key=lambda i: self._retry_at[i])

    def failed(self, i, now):
        self._backoff[i] = self._first if self._backoff[i] == 0 else min(self._backoff[i] * 2,
                                                                         self._most)
        self._retry_at[i] = now + self._backoff[i]
        if self.current == i:
            self.current = (i + 1) % len(self.endpoints)

    def answered(self, i):
        self._backoff[i] = 0.0
        self._retry_at[i] = 0.0
        self.current = i


def _texts(texts):
    """One request's texts (a str or a list of str) as a list; TypeError otherwise."""
    if isinstance(texts, str):
        texts = [texts]
    texts = list(texts)
    if not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be str")
    return texts


def _embeddings(body, count):
    """A REPLY body to a request of ``count`` texts; InternalError if it holds another number."""
    embeddings = Embeddings(protocol.unpack(body))
    if len(embeddings) != count:
        raise InternalError("reply has %d vectors for %d texts" % (len(embeddings), count))
    return embeddings


def _error(body):
    """An ERROR body as the EmberError subclass its code names."""
    error = protocol.unpack(body)
    return error_for(str(error.get("code", "INTERNAL")), str(error.get("message", "")))


def _split(endpoints):
    if isinstance(endpoints, str):
        endpoints = endpoints.split(",")
    return [e.strip() for e in endpoints if e.strip()]


class Client:
    """Talks to a router's frontend endpoint (``tcp://host:5555``, ``ipc://...``), or to
    several: a list, or one string with commas. With several, an embed or status that gets
    no answer from one router (nothing within the timeout, or the connection lost, which
    ZMTP heartbeats detect within ``heartbeat`` seconds even for a hung router) is sent to
    the next, and a router that failed is skipped for a while (the C++ SDK's rules,
    client/client.h).

    ``timeout`` (seconds) and ``attempts`` (0: one per router) are the defaults for embed().
    ``home``: the router index to start with (default: a random one, so clients spread).
    (CURVE encryption, docs/security.md, is not supported by this client yet.)
    """

    def __init__(self, endpoint, timeout=30.0, attempts=0, home=None, heartbeat=1.0,
                 connect_timeout=1.0):
        endpoints = _split(endpoint)
        self.timeout = timeout
        self.attempts = attempts
        self.heartbeat = heartbeat
        self.connect_timeout = connect_timeout
        self._routers = _RouterList(endpoints,
                                    random.randrange(len(endpoints)) if home is None else home)
        self._context = zmq.Context()
        self._socket = None
        self._monitor = None
        self._connected = None
        self._probe = None  # (socket, monitor, deadline): connecting to home while away
        self._ids = itertools.count(1)
        self._sent = False      # whether the last attempt was sent
        self._answered = False  # whether the last attempt got any answer
        self.router = None      # the endpoint that answered last
        self._connect(self._routers.pick(time.monotonic()))

    @property
    def endpoint(self):
        return self._routers.endpoints[self._connected]

    # -- lifetime ------------------------------------------------------------

    def close(self):
        self._close_socket()
        if self._context is not None:
            self._context.term()
            self._context = None

    def _close_socket(self):
        if self._probe is not None:
            self._probe[1].close(linger=0)
            self._probe[0].close(linger=0)
            self._probe = None
        if self._monitor is not None:
            self._monitor.close(linger=0)
            self._monitor = None
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _connect(self, router):
        self._close_socket()
        self._socket, self._monitor = self._open(router)
        self._connected = router

    def _fail_back(self):
        """Away from home: probe it in the background; move there once the probe connects."""
        now = time.monotonic()
        if self._probe is not None:
            socket, monitor, deadline = self._probe
            if self._reported(monitor, zmq.EVENT_HANDSHAKE_SUCCEEDED):
                self._probe = None
                old_socket, old_monitor = self._socket, self._monitor
                self._socket, self._monitor = socket, monitor
                self._connected = self._routers.home
                self._routers.answered(self._routers.home)
                old_monitor.close(linger=0)
                old_socket.close(linger=0)
            elif now >= deadline:
                self._probe = None
                monitor.close(linger=0)
                socket.close(linger=0)
                self._routers.failed(self._routers.home, now)
        elif self._routers.fail_back_due(now):
            socket, monitor = self._open(self._routers.home)
            self._probe = (socket, monitor, now + self.connect_timeout)

    def _open(self, router):
        socket = self._context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.RECONNECT_IVL, 100)
        socket.setsockopt(zmq.RECONNECT_IVL_MAX, 2000)
        # Queue nothing for a router we are not connected to: the send fails instead.
        socket.setsockopt(zmq.IMMEDIATE, 1)
        socket.setsockopt(zmq.HEARTBEAT_IVL, int(self.heartbeat * 1000))
        socket.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(3 * self.heartbeat * 1000))
        monitor = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED |
                                            zmq.EVENT_HANDSHAKE_SUCCEEDED)
        socket.connect(self._routers.endpoints[router])
        return socket, monitor

    # -- API -----------------------------------------------------------------

    def embed(self, model, texts, version=0, truncate=True, timeout=None, attempts=None,
              dimensions=0, prompt_name=""):
        """Embeds ``texts`` (a str or a list of str) with ``model``.

        version:  0 = the latest version the cluster serves.
        truncate: False makes over-long texts fail with TOO_LONG.
        dimensions: the first n components of each vector, normalised again
                  (Matryoshka models only); 0: all of them.
        prompt_name: one of the model's prompts (e.g. "query") put before each
                  text; "": the model's default prompt, if it has one.
        timeout:  seconds per attempt (default: the client's); the router
                  enforces the same deadline.
        attempts: tries in all (Lazy Pirate): when no answer comes within the
                  timeout, or the router answers UNAVAILABLE, reconnect and
                  resend. Embedding is idempotent, so that is safe.
        Raises EmberError (a subclass per code) on any failure.
        """
        return self._request(model, _texts(texts), timeout, attempts, version=version,
                             truncate=truncate, dimensions=dimensions, prompt_name=prompt_name)

    def score(self, model, texts, pairs=None, version=0, truncate=True, raw_scores=False,
              timeout=None, attempts=None):
        """Scores ``texts`` with ``model``, a cross-encoder or classifier: each text alone, or
        paired with ``pairs[i]`` ([CLS] text [SEP] pair [SEP]). One row per text, one score per
        label (``.labels``): the sigmoid of a one-label model's logit, the softmax of several;
        raw_scores=True: the logits. Raises BadRequestError for a model that embeds.
        """
        texts = _texts(texts)
        if pairs is not None:
            pairs = _texts(pairs)
            if len(pairs) != len(texts):
                raise ValueError("pairs must have one text per text")
        scores = self._request(model, texts, timeout, attempts, version=version,
                               truncate=truncate, pairs=pairs, raw_scores=raw_scores)
        if not scores.labels:  # a worker older than scores embedded the texts
            raise InternalError("worker %r answered a score with something else" % scores.worker)
        return scores

    def _request(self, model, texts, timeout, attempts, **fields):
        """One REQUEST of ``texts`` with protocol.embed_request's ``fields``, and its answer."""
        if not isinstance(model, str):
            raise TypeError("model must be a str")
        timeout = self.timeout if timeout is None else timeout
        attempts = self.attempts if attempts is None else attempts
        timeout_ms = max(1, int(round(timeout * 1000)))
        body = protocol.embed_request(model, texts, timeout_ms=timeout_ms, **fields)
        return _embeddings(self._call(protocol.REQUEST, body, timeout, attempts), len(texts))

    def embed_sparse(self, model, texts, version=0, truncate=True, timeout=None, attempts=None,
                     prompt_name=""):
        """Each text's sparse lexical weights from a model with a sparse head (bge-m3's
        sparse_linear.pt): a list of {token id: weight} per text, weights > 0 (FlagEmbedding's
        lexical_weights, keyed by int). Raises BadRequestError for a model without the head."""
        texts = _texts(texts)
        reply = self._request(model, texts, timeout, attempts, version=version,
                              truncate=truncate, prompt_name=prompt_name, task="sparse")
        if len(reply.rows) != len(texts) or reply.dim != 1:
            raise InternalError("worker %r answered a sparse embedding with something else"
                                % reply.worker)
        out, at = [], 0
        for i, count in enumerate(reply.rows):
            out.append(dict(zip(reply.indices[at:at + count], reply[i])))
            at += count
        return out

    def embed_multi_vector(self, model, texts, version=0, truncate=True, timeout=None,
                           attempts=None, prompt_name=""):
        """Each text's token vectors from a model with a multi-vector head (bge-m3's
        colbert_linear.pt): per text a list of arrays of floats, one per token but the first
        (FlagEmbedding's colbert_vecs). Raises BadRequestError for a model without the head."""
        texts = _texts(texts)
        reply = self._request(model, texts, timeout, attempts, version=version,
                              truncate=truncate, prompt_name=prompt_name, task="multi_vector")
        if len(reply.rows) != len(texts) or reply.indices:
            raise InternalError("worker %r answered a multi-vector embedding with something else"
                                % reply.worker)
        return [[reply[i][r * reply.dim:(r + 1) * reply.dim] for r in range(count)]
                for i, count in enumerate(reply.rows)]

    def tokenize(self, model, texts, version=0, truncate=True, timeout=None, attempts=None):
        """The tokens of ``texts`` (a str or a list of str) as ``model`` runs them: an Embeddings
        without vectors whose ``tokens``, ``token_ids``, ``token_pieces`` and ``token_spans``
        say which and from where (TEI's /tokenize)."""
        tokens = self._request(model, _texts(texts), timeout, attempts, version=version,
                               truncate=truncate, task="tokenize")
        if not tokens.tokens or tokens.dim:  # a worker older than tokenize embedded the texts
            raise InternalError("worker %r answered a tokenize with something else"
                                % tokens.worker)
        return tokens

    def decode(self, model, ids, skip_special_tokens=True, version=0, timeout=None,
               attempts=None):
        """The text of each sequence of token ids in ``ids`` (a list of lists of int) with
        ``model``'s tokenizer, as HF tokenizers' decode writes it (TEI's /decode)."""
        ids = [list(map(int, sequence)) for sequence in ids]
        if any(i < 0 for sequence in ids for i in sequence):
            raise ValueError("token ids are integers from 0")
        decoded = self._request(model, [" ".join(map(str, s)) for s in ids], timeout, attempts,
                                version=version, task="decode",
                                skip_special_tokens=skip_special_tokens)
        if len(decoded.texts) != len(ids):  # a worker older than decode embedded the ids
            raise InternalError("worker %r answered a decode with something else"
                                % decoded.worker)
        return decoded.texts

    def rerank(self, model, query, texts, top_n=0, **kwargs):
        """Scores each of ``texts`` against ``query`` with a cross-encoder ``model`` and returns
        [(index, score), ...] best first (at most top_n; 0: all). kwargs as score's."""
        texts = _texts(texts)
        scores = self.score(model, [query] * len(texts), texts, **kwargs)
        ranked = sorted(((i, row[0]) for i, row in enumerate(scores)), key=lambda x: -x[1])
        return ranked[:top_n] if top_n else ranked

    def embed_many(self, model, requests, window=64, version=0, truncate=True, timeout=None,
                   attempts=None, dimensions=0, prompt_name=""):
        """Embeds many requests (each a str or a list of str) with up to ``window`` of them in
        flight at once on this client's connection, so that one Python thread can keep a GPU
        worker busy (embed() has one in flight). Returns a list of Embeddings, in the order of
        ``requests``.

        A request that meets what embed() would retry (no answer within the timeout, the
        connection lost, the router unreachable or answering UNAVAILABLE) is sent again
        through embed(), with its failover, as is every request not yet sent by then. Any
        other error raises as embed() raises it (the requests still in flight are dropped).
        """
        if isinstance(requests, str):
            raise TypeError("requests must be a list of requests (a str or a list of str each)")
        requests = [_texts(r) for r in requests]
        if not isinstance(model, str):
            raise TypeError("model must be a str")
        if window < 1:
            raise ValueError("window must be at least 1")
        timeout = self.timeout if timeout is None else timeout
        timeout_ms = max(1, int(round(timeout * 1000)))
        results = [None] * len(requests)
        again = []  # indices for the sequential path
        self._fail_back()
        endpoint = self.endpoint
        self._connection_lost()  # what it said about earlier calls is history
        connect = min(timeout, self.connect_timeout)
        self._socket.setsockopt(zmq.SNDTIMEO, max(1, int(connect * 1000)))
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        poller.register(self._monitor, zmq.POLLIN)
        in_flight = {}  # request id -> (index, deadline)
        following = 0  # the next index to send
        healthy = True
        while healthy and (following < len(requests) or in_flight):
            while healthy and following < len(requests) and len(in_flight) < window:
                body = protocol.embed_request(model, requests[following], version=version,
                                              timeout_ms=timeout_ms, truncate=truncate,
                                              dimensions=dimensions, prompt_name=prompt_name)
                request_id = next(self._ids)
                try:
                    self._socket.send_multipart(protocol.encode(protocol.REQUEST, request_id,
                                                                body), copy=False)
                except zmq.Again:
                    healthy = False  # unreachable: what is left goes the sequential way
                    break
                in_flight[request_id] = (following, time.monotonic() + timeout + _GRACE_S)
                following += 1
            if not in_flight:
                break
            left = min(d for _, d in in_flight.values()) - time.monotonic()
            if left <= 0:
                healthy = False  # a request unanswered in time: the router may be gone
                break
            ready = dict(poller.poll(max(1, int(left * 1000))))
            if self._monitor in ready and self._connection_lost() and self._socket not in ready:
                healthy = False
                break
            while self._socket in ready and self._socket.poll(0, zmq.POLLIN):
                got_command, got_id, got_body = protocol.decode(self._socket.recv_multipart())
                if got_id not in in_flight:
                    continue  # a late reply to an earlier call
                index, _ = in_flight.pop(got_id)
                if got_command == protocol.ERROR:
                    error = _error(got_body)
                    if error.code == UNAVAILABLE:
                        again.append(index)
                        continue
                    raise error
                if got_command != protocol.REPLY:
                    raise InternalError("unexpected command %d" % got_command)
                results[index] = _embeddings(got_body, len(requests[index]))
        if healthy:
            self.router = endpoint
            self._routers.answered(self._connected)
        else:
            self._routers.failed(self._connected, time.monotonic())
            again.extend(index for index, _ in in_flight.values())
            again.extend(range(following, len(requests)))
        for index in sorted(again):
            results[index] = self.embed(model, requests[index], version=version,
                                        truncate=truncate, timeout=timeout, attempts=attempts,
                                        dimensions=dimensions, prompt_name=prompt_name)
        return results

    def status(self, timeout=5.0):
        """The router's view of the cluster (CONTROL "status") as a dict:
        router_version, requests, workers [...], models [...]."""
        body = protocol.pack({"op": "status"})
        return protocol.unpack(self._call(protocol.CONTROL, body, timeout, 0))

    # -- transport -------------------------------------------------------------

    def _call(self, command, body, timeout, attempts):
        """Only idempotent calls (embed, status) come here: they are resent on failure."""
        attempts = attempts if attempts > 0 else len(self._routers.endpoints)
        self._fail_back()
        attempt = 1
        while True:
            router = self._routers.pick(time.monotonic())
            # Lazy Pirate: a fresh socket for every retry drops whatever was queued for a
            # router that may be gone.
            if router != self._connected or attempt > 1:
                self._connect(router)
            try:
                reply = self._call_once(command, body, timeout)
                self._routers.answered(router)
                self.router = self._routers.endpoints[router]
                return reply
            except EmberError as e:
                unanswered = not self._answered
                if unanswered or e.code == UNAVAILABLE:
                    self._routers.failed(router, time.monotonic())
                else:
                    self._routers.answered(router)
                retryable = e.code == UNAVAILABLE or (e.code == TIMEOUT and unanswered)
                if not retryable or attempt >= attempts:
                    raise
                attempt += 1

    @staticmethod
    def _reported(monitor, wanted):
        seen = False
        while monitor.poll(0, zmq.POLLIN):
            event = monitor.recv_multipart()
            seen |= struct.unpack("=H", event[0][:2])[0] == wanted
        return seen

    def _connection_lost(self):
        return self._reported(self._monitor, zmq.EVENT_DISCONNECTED)

    def _call_once(self, command, body, timeout):
        self._sent = False
        self._answered = False
        request_id = next(self._ids)
        endpoint = self.endpoint
        self._connection_lost()  # what it said about earlier calls is history
        connect = min(timeout, self.connect_timeout)
        self._socket.setsockopt(zmq.SNDTIMEO, max(1, int(connect * 1000)))
        try:
            self._socket.send_multipart(protocol.encode(command, request_id, body), copy=False)
        except zmq.Again:
            raise error_for(UNAVAILABLE, "could not reach router %s within %d ms" %
                            (endpoint, round(connect * 1000)))
        self._sent = True
        deadline = time.monotonic() + timeout + _GRACE_S
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        poller.register(self._monitor, zmq.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from router %s within %d ms" %
                                   (endpoint, round(timeout * 1000)))
            ready = dict(poller.poll(max(1, int(left * 1000))))
            if self._monitor in ready and self._connection_lost() and self._socket not in ready:
                raise error_for(UNAVAILABLE,
                                "lost the connection to router %s before it answered" % endpoint)
            if self._socket not in ready:
                continue
            frames = self._socket.recv_multipart()
            got_command, got_id, got_body = protocol.decode(frames)
            # An error about a message the router could not even parse
            # carries id 0.
            if got_id != request_id and not (got_id == 0 and got_command == protocol.ERROR):
                continue  # a late reply to an earlier call that timed out
            self._answered = True
            if got_command == protocol.ERROR:
                raise _error(got_body)
            if got_command != protocol.REPLY:
                raise InternalError("unexpected command %d" % got_command)
            return got_body
