"""Cross-encoders and classifiers (issue 26, point 4): TEI-shaped calls to the gateway's /rerank
and /predict, the Python client's score and rerank, and `emberctl rerank`, on a router (cache
on), a worker and a gateway this test starts. The repository serves:
  - "reranker": a cross-encoder in the shape of cross-encoder/ms-marco-MiniLM-L6-v2 (one label,
    seeded random weights: no package ships one);
  - "reranker-aten": the same on the ATen forward (`encoder = "aten"`: the path a classifier
    takes on CUDA);
  - "classifier": a 2-layer BertForSequenceClassification with three labels;
  - "minilm": the real all-MiniLM-L6-v2, an embedding model (for the wrong-task errors).

Oracles: sentence-transformers' CrossEncoder.predict on the same folders (the sigmoid of a
one-label model; the logits of a three-label one, softmaxed here as TEI does), transformers'
AutoModelForSequenceClassification for single texts, and HF tokenizers' pair encoding
(longest_first truncation to 512) for the x-compute-tokens header.

Run by ctest (tests/CMakeLists.txt) with the project's Python environment, which sets
EMBER_ROUTER_BIN, EMBER_WORKER_BIN, EMBER_GATEWAY_BIN, EMBER_EMBERCTL_BIN,
EMBER_CROSS_ENCODER_DIR, EMBER_CLASSIFIER_DIR and EMBER_MINILM_REAL_DIR.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import torch
from sentence_transformers import CrossEncoder
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from processes import add_version, post_json, require, start, start_gateway, stop

# The Python client runs on the system's Python (python3-zmq, python3-msgpack: scripts/setup.sh),
# as its own test does; this environment has the oracles.
SYSTEM_PYTHON = "/usr/bin/python3"
PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

ROUTER = os.environ.get("EMBER_ROUTER_BIN", "")
WORKER = os.environ.get("EMBER_WORKER_BIN", "")
GATEWAY = os.environ.get("EMBER_GATEWAY_BIN", "")
EMBERCTL = os.environ.get("EMBER_EMBERCTL_BIN", "")
RERANKER_DIR = os.environ.get("EMBER_CROSS_ENCODER_DIR", "")
CLASSIFIER_DIR = os.environ.get("EMBER_CLASSIFIER_DIR", "")
MINILM_DIR = os.environ.get("EMBER_MINILM_REAL_DIR", "")

QUERY = "What does a fox do?"
# Of every length: one word, a CJK line, and one far over the model's 512 tokens, which both
# sides cut the same way (the passage's end, as HF's longest_first).
PASSAGES = [
    "The quick brown fox jumps over the lazy dog.",
    "A",
    "Foxes are small omnivorous mammals of the dog family; they hunt at dusk.",
    "机器学习模型把文本变成向量。",
    "Café, naïve, Ångström: accents are stripped by the uncased tokenizer.",
    " ".join("word%d of a very long passage about foxes" % i for i in range(120)),
]


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class ScoresTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require(ROUTER, WORKER, GATEWAY, EMBERCTL, RERANKER_DIR, CLASSIFIER_DIR, MINILM_DIR)
        cls.dir = tempfile.mkdtemp(prefix="ember-scores-")
        cls.frontend = "ipc://" + os.path.join(cls.dir, "frontend")
        backend = "ipc://" + os.path.join(cls.dir, "backend")
        repository = os.path.join(cls.dir, "repository")
        for name, source in (("reranker", RERANKER_DIR), ("classifier", CLASSIFIER_DIR),
                             ("minilm", MINILM_DIR)):
            add_version(repository, name, source)
        add_version(repository, "reranker-aten", RERANKER_DIR, 'encoder = "aten"\n')
        cls.processes = [
            start([ROUTER, "--frontend", cls.frontend, "--backend", backend,
                   "--cache-bytes", str(16 << 20)], os.path.join(cls.dir, "router.log")),
            start([WORKER, "--router", backend, "--id", "w1", "--threads", "1",
                   "--repository", repository], os.path.join(cls.dir, "worker.log")),
        ]
        gateway, port = start_gateway(
            [GATEWAY, "--router", cls.frontend, "--default-model", "reranker"],
            os.path.join(cls.dir, "gateway.log"))
        cls.processes.append(gateway)
        cls.base = "http://127.0.0.1:%d" % port
        # The worker loads four models, each warmed up, and a parallel ctest on two cores slows
        # that down: a generous bound.
        deadline = time.monotonic() + 180
        while True:
            statuses = [cls.post(cls, "/rerank", {"query": "warm", "texts": ["up"]})[0],
                        cls.post(cls, "/predict", {"model": "classifier", "inputs": "warm-up"})[0],
                        cls.post(cls, "/embed", {"model": "minilm", "inputs": "warm-up"})[0],
                        cls.post(cls, "/rerank", {"model": "reranker-aten", "query": "warm",
                                                  "texts": ["up"]})[0]]
            if statuses == [200] * 4:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster did not come up (%s); logs in %s"
                                   % (statuses, cls.dir))
            time.sleep(0.2)
        cls.reranker = CrossEncoder(RERANKER_DIR, device="cpu")
        cls.expected = cls.reranker.predict([(QUERY, p) for p in PASSAGES])
        cls.logits = cls.reranker.predict([(QUERY, p) for p in PASSAGES],
                                          activation_fn=torch.nn.Identity())
        tokenizer = AutoTokenizer.from_pretrained(RERANKER_DIR)
        cls.pair_tokens = [len(tokenizer(QUERY, p, truncation=True, max_length=512).input_ids)
                           for p in PASSAGES]

    @classmethod
    def tearDownClass(cls):
        stop(cls.processes, timeout=10)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def post(self, path, body):
        """(status, parsed JSON body, headers) of a POST to the gateway."""
        return post_json(self.base, path, body)

    def python_client(self, code):
        """What `code` prints as JSON, run with the Python client's `client` on the router."""
        script = ("import json\nfrom ember_client import *\nclient = Client(%r, timeout=30)\n%s"
                  % (self.frontend, code))
        out = subprocess.run([SYSTEM_PYTHON, "-c", script], capture_output=True, text=True,
                             timeout=60, env={**os.environ, "PYTHONPATH": PYTHON_DIR})
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def check_bad(self, path, body, words):
        status, reply, _ = self.post(path, body)
        self.assertEqual(status, 400, reply)
        self.assertEqual(reply["error_type"], "Validation")
        self.assertIn(words, reply["error"])

    def test_rerank_equals_cross_encoder_predict(self):
        status, reply, headers = self.post("/rerank", {"query": QUERY, "texts": PASSAGES})
        self.assertEqual(status, 200, reply)
        order = list(np.argsort(-self.expected, kind="stable"))
        self.assertEqual([r["index"] for r in reply], order)
        for r in reply:
            self.assertAlmostEqual(r["score"], float(self.expected[r["index"]]), delta=1e-5)
            self.assertNotIn("text", r)
        # The pairs' tokens as HF counts them, the long one cut to 512.
        self.assertEqual(max(self.pair_tokens), 512)
        self.assertEqual(int(headers["x-compute-tokens"]), sum(self.pair_tokens))

    def test_the_aten_forward_scores_pairs_alike(self):
        status, reply, _ = self.post("/rerank", {"model": "reranker-aten", "query": QUERY,
                                                 "texts": PASSAGES})
        self.assertEqual(status, 200, reply)
        self.assertEqual([r["index"] for r in reply],
                         list(np.argsort(-self.expected, kind="stable")))
        for r in reply:
            self.assertAlmostEqual(r["score"], float(self.expected[r["index"]]), delta=1e-5)

    def test_raw_scores_are_the_logits(self):
        status, reply, _ = self.post("/rerank", {"query": QUERY, "texts": PASSAGES,
                                                 "raw_scores": True, "return_text": True,
                                                 "top_n": 2})
        self.assertEqual(status, 200, reply)
        order = list(np.argsort(-self.logits, kind="stable"))[:2]
        self.assertEqual([r["index"] for r in reply], order)
        for r in reply:
            self.assertAlmostEqual(r["score"], float(self.logits[r["index"]]), delta=1e-5)
            self.assertEqual(r["text"], PASSAGES[r["index"]])

    def test_predict_pairs_equal_cross_encoder_softmax(self):
        pairs = [[QUERY, p] for p in PASSAGES[:3]]
        expected = softmax(CrossEncoder(CLASSIFIER_DIR, device="cpu").predict(pairs))
        labels = ["negative", "neutral", "positive"]
        status, reply, _ = self.post("/predict", {"model": "classifier", "inputs": pairs})
        self.assertEqual(status, 200, reply)
        self.assertEqual(len(reply), 3)
        for row, want in zip(reply, expected):
            scores = [p["score"] for p in row]
            self.assertEqual(scores, sorted(scores, reverse=True))
            for p in row:
                self.assertAlmostEqual(p["score"], float(want[labels.index(p["label"])]),
                                       delta=1e-5)
        # One pair alone is one input: a flat list over the labels.
        status, one, _ = self.post("/predict", {"model": "classifier", "inputs": pairs[0]})
        self.assertEqual(status, 200, one)
        self.assertEqual([p["label"] for p in one], [p["label"] for p in reply[0]])
        np.testing.assert_allclose([p["score"] for p in one], [p["score"] for p in reply[0]],
                                   atol=1e-6)  # batched otherwise: float rounding

    def test_predict_single_texts_equal_transformers(self):
        model = AutoModelForSequenceClassification.from_pretrained(CLASSIFIER_DIR).eval()
        tokenizer = AutoTokenizer.from_pretrained(CLASSIFIER_DIR)
        texts = PASSAGES[:3]
        with torch.no_grad():
            logits = model(**tokenizer(texts, padding=True, return_tensors="pt")).logits.numpy()
        status, reply, _ = self.post("/predict", {"model": "classifier", "raw_scores": True,
                                                  "inputs": [[t] for t in texts]})
        self.assertEqual(status, 200, reply)
        for row, want in zip(reply, logits):
            got = {p["label"]: p["score"] for p in row}
            np.testing.assert_allclose([got["negative"], got["neutral"], got["positive"]], want,
                                       atol=1e-5)

    def test_python_client_scores_and_reranks(self):
        got = self.python_client(
            "s = client.score('reranker', [%r] * %d, %r)\n"
            "print(json.dumps({'labels': s.labels, 'scores': [r[0] for r in s],"
            " 'ranked': client.rerank('reranker', %r, %r, top_n=3)}))"
            % (QUERY, len(PASSAGES), PASSAGES, QUERY, PASSAGES))
        self.assertEqual(got["labels"], ["LABEL_0"])
        np.testing.assert_allclose(got["scores"], self.expected, atol=1e-5)
        self.assertEqual([i for i, _ in got["ranked"]],
                         list(np.argsort(-self.expected, kind="stable"))[:3])
        # Errors are typed as the other calls' are.
        codes = self.python_client(
            "codes = []\n"
            "try:\n  client.score('reranker', [%r], [%r], truncate=False)\n"
            "except TooLongError as e:\n  codes.append(e.code)\n"
            "try:\n  client.embed('classifier', 'hello')\n"
            "except BadRequestError as e:\n  codes.append(e.code)\n"
            "print(json.dumps(codes))" % (QUERY, PASSAGES[-1]))
        self.assertEqual(codes, ["TOO_LONG", "BAD_REQUEST"])

    def test_python_client_and_emberctl_tokenize_as_hf(self):
        # The tokens of the embedding model (the real all-MiniLM-L6-v2's tokenizer.json) and the
        # bytes each came from, against HF's offsets (characters there, bytes here).
        texts = ["Hello, world!", "Café naïve 机器 \U0001F600"]
        tokenizer = AutoTokenizer.from_pretrained(MINILM_DIR)
        want_ids, want_spans = [], []
        for text in texts:
            e = tokenizer(text, return_offsets_mapping=True)
            to_bytes = [len(text[:i].encode()) for i in range(len(text) + 1)]
            want_ids.append(e.input_ids)
            want_spans.append([[to_bytes[a], to_bytes[b]] for a, b in e.offset_mapping])
        got = self.python_client(
            "t = client.tokenize('minilm', %r)\n"
            "print(json.dumps({'tokens': t.tokens, 'ids': t.token_ids, 'spans': t.token_spans}))"
            % texts)
        decoded = self.python_client("print(json.dumps(client.decode('minilm', %r)))" % want_ids)
        self.assertEqual(decoded, [tokenizer.decode(ids, skip_special_tokens=True)
                                   for ids in want_ids])
        self.assertEqual(got["tokens"], [len(ids) for ids in want_ids])
        self.assertEqual(got["ids"], [i for ids in want_ids for i in ids])
        self.assertEqual(got["spans"], [s for spans in want_spans for s in spans])
        out = subprocess.run([EMBERCTL, "--router", self.frontend, "tokenize", "minilm", *texts,
                              "--json"], capture_output=True, text=True, timeout=60,
                             check=True).stdout
        lists = json.loads(out)
        self.assertEqual([[t["id"] for t in ts] for ts in lists], want_ids)
        self.assertEqual([[[t["start"], t["stop"]] for t in ts] for ts in lists], want_spans)
        # A cross-encoder's tokenizer answers too: tokenizing is no task of the model's head.
        status, reply, _ = self.post("/tokenize", {"model": "reranker", "inputs": "a fox"})
        self.assertEqual(status, 200, reply)
        self.assertEqual([t["text"] for t in reply[0]], ["[CLS]", "a", "fox", "[SEP]"])

    def test_emberctl_rerank(self):
        out = subprocess.run([EMBERCTL, "--router", self.frontend, "rerank", "reranker", QUERY,
                              *PASSAGES[:3], "--json"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        results = json.loads(out)["results"]
        self.assertEqual([r["index"] for r in results],
                         list(np.argsort(-self.expected[:3], kind="stable")))
        for r in results:
            self.assertAlmostEqual(r["score"], float(self.expected[r["index"]]), delta=1e-5)

    def test_bad_rerank_requests_are_400(self):
        self.check_bad("/rerank", {"query": QUERY, "texts": []}, "'texts'")
        self.check_bad("/rerank", {"texts": PASSAGES}, "'query'")
        self.check_bad("/rerank", {"query": QUERY, "texts": [QUERY, 3]}, "'texts'")
        self.check_bad("/rerank", {"query": QUERY, "texts": PASSAGES, "top_n": 0}, "'top_n'")
        self.check_bad("/rerank", {"query": QUERY, "texts": PASSAGES, "top_n": 7}, "'top_n'")
        self.check_bad("/rerank", {"query": QUERY, "texts": PASSAGES,
                                   "truncation_direction": "left"}, "'truncation_direction'")
        self.check_bad("/predict", {"model": "classifier", "inputs": ["a", ["b", "c"]]},
                       "mixes")
        self.check_bad("/predict", {"model": "classifier", "inputs": [["a", "b", "c"], "d"]},
                       "'inputs'")
        self.check_bad("/predict", {"model": "classifier", "inputs": []}, "'inputs'")

    def test_pairs_over_the_model_length_without_truncation_are_too_long(self):
        status, reply, _ = self.post("/rerank", {"query": QUERY, "texts": PASSAGES,
                                                 "truncate": False})
        self.assertEqual(status, 400, reply)
        self.assertIn("512", reply["error"])

    def test_a_task_the_model_does_not_do_is_400(self):
        self.check_bad("/rerank", {"model": "minilm", "query": QUERY, "texts": PASSAGES},
                       "embeds texts")
        self.check_bad("/embed", {"inputs": "hello"}, "cross-encoder")  # the default: reranker
        self.check_bad("/predict", {"model": "minilm", "inputs": "hello"}, "embeds texts")


if __name__ == "__main__":
    unittest.main(verbosity=2)
