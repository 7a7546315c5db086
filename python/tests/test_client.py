#!/usr/bin/python3
"""ember_client against a real cluster: an ember-router and ember-workers
serving the generated ember-tiny model over ipc://, started by this test.

The vectors must equal those the C++ client (emberctl --json) gets for the
same texts (within 1e-5) and the model's reference outputs (within 1e-4, as
tests/cluster_test.cpp checks); errors must arrive as typed exceptions.

Run by ctest (tests/CMakeLists.txt), which sets EMBER_ROUTER_BIN,
EMBER_WORKER_BIN, EMBERCTL_BIN, EMBER_TINY_DIR and PYTHONPATH.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import zmq

import ember_client
from ember_client import protocol
from processes import require, start, stop

ROUTER = os.environ.get("EMBER_ROUTER_BIN", "")
WORKER = os.environ.get("EMBER_WORKER_BIN", "")
EMBERCTL = os.environ.get("EMBERCTL_BIN", "")
TINY = os.environ.get("EMBER_TINY_DIR", "")
# bge-m3's shape with its sparse and ColBERT heads (tests/CMakeLists.txt's families models).
M3 = os.environ.get("EMBER_XLMR_M3_DIR", "")


def max_abs_diff(a, b):
    assert len(a) == len(b), (len(a), len(b))
    return max(abs(x - y) for x, y in zip(a, b))


class ClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require(ROUTER, WORKER, EMBERCTL, TINY)
        cls.dir = tempfile.mkdtemp(prefix="ember-py-")
        cls.frontend = "ipc://" + os.path.join(cls.dir, "frontend")
        backend = "ipc://" + os.path.join(cls.dir, "backend")
        model = os.path.join(TINY, "model.pt")
        cls.processes = [
            start([ROUTER, "--frontend", cls.frontend, "--backend", backend],
                  os.path.join(cls.dir, "router.log")),
            start([WORKER, "--router", backend, "--id", "w1", "--threads", "1",
                   "--model", "tiny=" + model], os.path.join(cls.dir, "w1.log")),
            # The same model under another name on a worker 1000x slower, for
            # deadlines the router must enforce.
            start([WORKER, "--router", backend, "--id", "slow", "--threads", "1",
                   "--capacity", "1", "--slowdown", "1000", "--model", "slow=" + model],
                  os.path.join(cls.dir, "slow.log")),
        ]
        with open(os.path.join(TINY, "reference.json")) as f:
            cls.reference = json.load(f)
        # Wait (bounded) for both workers to register.
        deadline = time.monotonic() + 60
        with ember_client.Client(cls.frontend) as client:
            while time.monotonic() < deadline:
                try:
                    if len(client.status(timeout=0.5)["workers"]) >= 2:
                        return
                except ember_client.EmberError:
                    pass  # router not up yet
                time.sleep(0.1)
        cls.failed = True
        cls.tearDownClass()
        raise RuntimeError("the workers never registered")

    @classmethod
    def tearDownClass(cls):
        stop(cls.processes)
        if getattr(cls, "failed", False):
            for name in sorted(n for n in os.listdir(cls.dir) if n.endswith(".log")):
                with open(os.path.join(cls.dir, name), errors="replace") as f:
                    sys.stderr.write("----- %s -----\n%s\n" % (name, f.read()))
        shutil.rmtree(cls.dir, ignore_errors=True)

    def run(self, result=None):
        result = super().run(result)
        if result is not None and not result.wasSuccessful():
            type(self).failed = True
        return result

    def setUp(self):
        self.client = ember_client.Client(self.frontend, timeout=10.0)

    def tearDown(self):
        self.client.close()

    def emberctl(self, texts):
        out = subprocess.run([EMBERCTL, "--router", self.frontend, "--timeout-ms", "10000",
                              "embed", "--json", "tiny", "--"] + texts,
                             check=True, capture_output=True, timeout=30)
        return [item["embedding"] for item in json.loads(out.stdout)["data"]]

    def test_vectors_equal_the_cpp_clients_and_the_reference(self):
        texts = self.reference["texts"]
        e = self.client.embed("tiny", texts)
        self.assertEqual(len(e), len(texts))
        self.assertEqual(e.dim, self.reference["dim"])
        self.assertEqual(e.model, "tiny")
        self.assertEqual(e.version, 1)
        self.assertTrue(e.worker)
        cpp = self.emberctl(texts)
        for i, text in enumerate(texts):
            self.assertEqual(len(e[i]), e.dim)
            self.assertLess(max_abs_diff(e[i], cpp[i]), 1e-5, text)
            self.assertLess(max_abs_diff(e[i], self.reference["vectors"][i]), 1e-4, text)
        self.assertEqual(e.tolist()[3], list(e[3]))

    def test_token_counts_come_with_the_vectors(self):
        # Issue 26: per text, the tokens the model ran; the C++ client reports the same.
        texts = ["hello world", "你好，世界", "a"]
        e = self.client.embed("tiny", texts)
        self.assertEqual(len(e.tokens), len(texts))
        self.assertTrue(all(t > 0 for t in e.tokens), e.tokens)
        self.assertEqual(e.total_tokens, sum(e.tokens))
        out = subprocess.run([EMBERCTL, "--router", self.frontend, "--timeout-ms", "10000",
                              "embed", "--json", "tiny", "--"] + texts,
                             check=True, capture_output=True, timeout=30)
        cpp = json.loads(out.stdout)
        self.assertEqual([item["tokens"] for item in cpp["data"]], e.tokens)
        self.assertEqual(cpp["usage"]["prompt_tokens"], e.total_tokens)

    def test_one_string_and_an_explicit_version(self):
        e = self.client.embed("tiny", "你好，世界", version=1)
        self.assertEqual(len(e), 1)
        self.assertLess(max_abs_diff(e[0], self.emberctl(["你好，世界"])[0]), 1e-5)

    def test_status(self):
        status = self.client.status()
        self.assertIn("router_version", status)
        self.assertEqual(sorted(w["id"] for w in status["workers"]), ["slow", "w1"])
        names = {m["name"] for w in status["workers"] for m in w["models"]}
        self.assertEqual(names, {"tiny", "slow"})

    def test_unknown_model_is_a_typed_error(self):
        with self.assertRaises(ember_client.UnknownModelError) as caught:
            self.client.embed("no-such-model", ["x"])
        self.assertEqual(caught.exception.code, "UNKNOWN_MODEL")
        self.assertIsInstance(caught.exception, ember_client.EmberError)
        with self.assertRaises(ember_client.UnknownModelError):
            self.client.embed("tiny", ["x"], version=9)
        # The client still works after an error.
        self.assertEqual(len(self.client.embed("tiny", ["x"])), 1)

    def test_bad_request_is_a_typed_error(self):
        with self.assertRaises(ember_client.BadRequestError) as caught:
            self.client.embed("tiny", [])
        self.assertEqual(caught.exception.code, "BAD_REQUEST")
        with self.assertRaises(TypeError):
            self.client.embed("tiny", [b"bytes are not text"])
        # Issue 26: the request's options reach the worker, which refuses what the model lacks.
        with self.assertRaises(ember_client.BadRequestError) as caught:
            self.client.embed("tiny", "x", prompt_name="query")
        self.assertIn("no prompts", str(caught.exception))
        with self.assertRaises(ember_client.BadRequestError) as caught:
            self.client.embed("tiny", "x", dimensions=16)
        self.assertIn("Matryoshka", str(caught.exception))
        with self.assertRaises(ember_client.BadRequestError) as caught:
            self.client.embed_sparse("tiny", "x")
        self.assertIn("sparse_linear.pt", str(caught.exception))

    def test_router_enforces_the_deadline(self):
        texts = ["a text long enough to keep the slow worker busy " * 4] * 8
        start_time = time.monotonic()
        with self.assertRaises(ember_client.TimeoutError) as caught:
            self.client.embed("slow", texts, timeout=0.1)
        elapsed = time.monotonic() - start_time
        self.assertEqual(caught.exception.code, "TIMEOUT")
        self.assertTrue(self.client._answered, "the router, not the client, must answer TIMEOUT")
        self.assertLess(elapsed, 5.0)

    def test_embed_many_keeps_requests_in_flight(self):
        texts = self.reference["texts"]
        requests = [texts[i % len(texts)] for i in range(120)]
        many = self.client.embed_many("tiny", requests, window=64)
        self.assertEqual(len(many), len(requests))
        for i, e in enumerate(many):
            self.assertEqual(len(e), 1)
            self.assertLess(max_abs_diff(e[0], self.reference["vectors"][i % len(texts)]), 1e-4)
        # In flight together, batched together (embed() one at a time would give batches of 1).
        self.assertGreater(max(e.batch_size for e in many), 4)

    def test_embed_many_errors_are_typed(self):
        with self.assertRaises(ember_client.UnknownModelError):
            self.client.embed_many("no-such-model", ["a", "b"])
        with self.assertRaises(TypeError):
            self.client.embed_many("tiny", "one string")

    def test_unreachable_router_is_unavailable_on_the_client(self):
        nobody = "ipc://" + os.path.join(self.dir, "nobody")
        with ember_client.Client(nobody) as client:
            start_time = time.monotonic()
            with self.assertRaises(ember_client.UnavailableError):
                client.embed("tiny", ["x"], timeout=0.2, attempts=2)
            elapsed = time.monotonic() - start_time
        # Two attempts, each waiting 0.2 s to connect, and not much more.
        self.assertGreaterEqual(elapsed, 0.4)
        self.assertLess(elapsed, 5.0)


class FakeRouter:
    """A router frontend played by a thread: answers embeds ("answer"), never answers
    ("silent"), or closes its socket on the first message, as a killed router would ("drop")."""

    def __init__(self, endpoint, mode):
        self.endpoint, self.mode, self.received = endpoint, mode, 0
        self._stop = threading.Event()
        self._bound = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._bound.wait(5)

    def _run(self):
        context = zmq.Context()
        socket = context.socket(zmq.ROUTER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.bind(self.endpoint)
        self._bound.set()
        deadline = time.monotonic() + 60  # bounded, whatever the test does
        while not self._stop.is_set() and time.monotonic() < deadline:
            if not socket.poll(20, zmq.POLLIN):
                continue
            peer, *frames = socket.recv_multipart()
            self.received += 1
            if self.mode == "drop":
                socket.close(linger=0)
                socket = None
                break
            if self.mode == "silent":
                continue
            command, request_id, body = protocol.decode(frames)
            request = protocol.unpack(body)
            n = len(request.get("inputs", []))
            reply = protocol.pack({"model": request.get("model", ""), "version": 1,
                                   "worker": "w", "dim": 1, "count": n,
                                   "data": b"\x00\x00\x80\x3f" * n})
            socket.send_multipart([peer] + protocol.encode(protocol.REPLY, request_id, reply))
        if socket is not None:
            socket.close(linger=0)
        self._stop.wait(60)
        context.term()

    def close(self):
        self._stop.set()
        self._thread.join(10)


class FailoverTest(unittest.TestCase):
    """The client's failover across several routers (client/client.h's rules), against fake
    routers: real sockets, no cluster."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ember-py-failover-")
        self.a = "ipc://" + os.path.join(self.dir, "a")
        self.b = "ipc://" + os.path.join(self.dir, "b")
        self.routers = []

    def tearDown(self):
        for r in self.routers:
            r.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def router(self, endpoint, mode):
        r = FakeRouter(endpoint, mode)
        self.routers.append(r)
        return r

    def client(self):
        return ember_client.Client([self.a, self.b], timeout=0.3, home=0, heartbeat=0.2,
                                   connect_timeout=0.2)

    def test_silent_router_fails_over_to_the_next(self):
        a = self.router(self.a, "silent")
        self.router(self.b, "answer")
        with self.client() as client:
            self.assertEqual(len(client.embed("m", ["x", "y"])), 2)
            self.assertEqual(client.router, self.b)
        self.assertEqual(a.received, 1)

    def test_embed_many_resends_what_a_dropped_router_had(self):
        a = self.router(self.a, "drop")
        self.router(self.b, "answer")
        with self.client() as client:
            start_time = time.monotonic()
            many = client.embed_many("m", ["x%d" % i for i in range(20)], window=8, timeout=20.0)
            self.assertLess(time.monotonic() - start_time, 5.0)
            self.assertEqual([len(e) for e in many], [1] * 20)
            self.assertEqual(client.router, self.b)
        self.assertGreaterEqual(a.received, 1)

    def test_unreachable_router_is_skipped(self):
        self.router(self.b, "answer")
        with self.client() as client:
            start_time = time.monotonic()
            client.embed("m", ["x"])
            self.assertLess(time.monotonic() - start_time, 1.5)
            start_time = time.monotonic()
            client.embed("m", ["x"])  # straight to b while a backs off
            self.assertLess(time.monotonic() - start_time, 0.15)
            self.assertEqual(client.router, self.b)

    def test_lost_connection_fails_over_before_the_timeout(self):
        a = self.router(self.a, "drop")
        self.router(self.b, "answer")
        with self.client() as client:
            start_time = time.monotonic()
            client.embed("m", ["x"], timeout=20.0)
            self.assertLess(time.monotonic() - start_time, 5.0)
            self.assertEqual(client.router, self.b)
        self.assertEqual(a.received, 1)

    def test_returns_home_once_it_is_back(self):
        self.router(self.b, "answer")
        with self.client() as client:
            client.embed("m", ["x"])
            self.assertEqual(client.router, self.b)
            self.router(self.a, "answer")
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and client.router != self.a:
                client.embed("m", ["x"])
                time.sleep(0.05)
            self.assertEqual(client.router, self.a)


@unittest.skipUnless(os.path.exists(os.path.join(M3, "sparse_linear.pt")),
                     "no bge-m3 test model (EMBER_XLMR_M3_DIR)")
class TokenOutputsTest(unittest.TestCase):
    """Issue 35: bge-m3's sparse weights and ColBERT vectors through the Python client (their
    values are held to FlagEmbedding in test_families.py; here, what the client makes of the
    replies)."""

    @classmethod
    def setUpClass(cls):
        require(ROUTER, WORKER)
        cls.dir = tempfile.mkdtemp(prefix="ember-py-m3-")
        frontend = "ipc://" + os.path.join(cls.dir, "frontend")
        backend = "ipc://" + os.path.join(cls.dir, "backend")
        cls.processes = [
            start([ROUTER, "--frontend", frontend, "--backend", backend],
                  os.path.join(cls.dir, "router.log")),
            start([WORKER, "--router", backend, "--id", "w1", "--threads", "1",
                   "--model", "m3=" + M3], os.path.join(cls.dir, "w1.log")),
        ]
        cls.client = ember_client.Client(frontend, timeout=60)
        deadline = time.monotonic() + 60
        while True:
            try:
                cls.client.embed("m3", "warm-up", attempts=1, timeout=2)
                break
            except ember_client.EmberError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        stop(cls.processes, timeout=10)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_sparse_weights_are_the_texts_ids(self):
        texts = ["Füchse jagen Füchse.", "a"]
        ids = self.client.tokenize("m3", texts)
        sparse = self.client.embed_sparse("m3", texts)
        self.assertEqual(len(sparse), 2)
        at = 0
        for text, weights, count in zip(texts, sparse, ids.tokens):
            tokens = ids.token_ids[at:at + count]
            at += count
            self.assertTrue(set(weights) <= set(tokens[1:-1]), text)  # not <s> or </s>
            self.assertTrue(all(w > 0 for w in weights.values()), text)
        self.assertTrue(sparse[0])

    def test_multi_vector_has_a_unit_vector_per_token_but_the_first(self):
        texts = ["Füchse jagen Füchse.", "a"]
        ids = self.client.tokenize("m3", texts)
        vectors = self.client.embed_multi_vector("m3", texts)
        self.assertEqual([len(v) for v in vectors], [n - 1 for n in ids.tokens])
        for text in vectors:
            for v in text:
                self.assertEqual(len(v), 1024)
                self.assertAlmostEqual(sum(x * x for x in v), 1.0, places=4)


class ProtocolTest(unittest.TestCase):
    """The frames exactly as docs/protocol.md lays them out."""

    def test_frames(self):
        frames = protocol.encode(protocol.REQUEST, 0x0102030405060708, b"\x80")
        self.assertEqual(frames, [b"EMBER\x01", b"\x01", bytes.fromhex("0807060504030201"),
                                  b"\x80"])
        self.assertEqual(protocol.decode(frames), (1, 0x0102030405060708, b"\x80"))

    def test_rejects_malformed_frames(self):
        good = protocol.encode(protocol.REPLY, 7, b"")
        for bad in (good[:3], [b"EMBER\x02"] + good[1:], [b"HELLO\x01"] + good[1:],
                    good[:1] + [b"\x09"] + good[2:], good[:2] + [b"\x07"] + good[3:]):
            with self.assertRaises(ember_client.InternalError):
                protocol.decode(bad)

    def test_vectors_check_their_size(self):
        data = b"\x00\x00\x80\x3f" * 6  # six 1.0f
        rows = protocol.vectors({"dim": 3, "count": 2, "data": data})
        self.assertEqual([list(r) for r in rows], [[1.0] * 3] * 2)
        with self.assertRaises(ember_client.InternalError):
            protocol.vectors({"dim": 4, "count": 2, "data": data})
        # Rows per input (a sparse or multi-vector reply): dim x rows[i] floats each.
        rows = protocol.vectors({"dim": 2, "count": 2, "rows": [2, 1], "data": data})
        self.assertEqual([len(r) for r in rows], [4, 2])
        with self.assertRaises(ember_client.InternalError):
            protocol.vectors({"dim": 2, "count": 2, "rows": [2, 2], "data": data})

    def test_unknown_error_code_is_internal(self):
        from ember_client.errors import error_for
        e = error_for("NEW_CODE", "from the future")
        self.assertEqual(e.code, "INTERNAL")
        self.assertIn("NEW_CODE", str(e))
        self.assertIsInstance(error_for("OVERLOADED", "x"), ember_client.OverloadedError)


if __name__ == "__main__":
    unittest.main(verbosity=2)
