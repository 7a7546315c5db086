"""Encoder families beyond BERT (issue 35): XLM-RoBERTa and MPNet models served by a router, a
worker and a gateway this test starts, their vectors and scores against sentence-transformers on
the same folders. The repository serves (scripts/make_encoder_model.py, seeded random weights in
the real models' shapes; the XLM-R models with the trained XLM-R Unigram tokenizer of the
tokenizer tests, the MPNet ones with all-mpnet-base-v2's):
  - "e5": multilingual-e5-small's shape (XLMRobertaModel, 12 layers, hidden 384, 514 positions),
    mean pooling, Normalize; on the fused CPU encoder;
  - "e5-aten": the same folder on the ATen forward (`encoder = "aten"`: the path CUDA takes for
    a batch holding a typed padding token);
  - "m3": bge-m3's shape (hidden 1024, 16 heads, 8,194 positions) cut to one layer, CLS
    pooling, Normalize, max_seq_length 8192;
  - "reranker": an XLMRobertaForSequenceClassification with one label (bge-reranker-v2-m3's
    head), multilingual-e5-small's shape cut to two layers;
  - "mpnet": all-mpnet-base-v2's shape (MPNetModel: relative attention bias, no token types)
    cut to four layers, mean pooling, Normalize;
  - "mpnet-reranker": an MPNetForSequenceClassification with one label, two layers;
  - "modernbert": ModernBERT-base's shape (pre-norm, RoPE of two thetas, GeGLU, no biases, a
    global layer every three and a 128-token window in the others) cut to four layers, mean
    pooling, max_seq_length 2048, with the trained byte-level BPE; "modernbert-aten" the same
    folder on the ATen forward.

The texts are the tokenizer parity corpus (scripts/tokenizer_corpus.py) with XLM-R's special
tokens typed into them: "<pad>" typed as text is the padding id, which RoBERTa's positions skip
(create_position_ids_from_input_ids), and texts past 512 tokens are cut as sentence-transformers
cuts them.

Run by ctest (tests/CMakeLists.txt) with the project's Python environment, which sets
EMBER_ROUTER_BIN, EMBER_WORKER_BIN, EMBER_GATEWAY_BIN, EMBER_XLMR_E5_DIR, EMBER_XLMR_M3_DIR,
EMBER_XLMR_RERANKER_DIR, EMBER_MPNET_DIR and EMBER_MPNET_RERANKER_DIR.
"""

import os
import shutil
import sys
import tempfile
import time
import unittest

import numpy as np
from sentence_transformers import CrossEncoder, SentenceTransformer

from processes import add_version, post_json, require, start, start_gateway, stop

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
import tokenizer_corpus  # noqa: E402

ROUTER = os.environ.get("EMBER_ROUTER_BIN", "")
WORKER = os.environ.get("EMBER_WORKER_BIN", "")
GATEWAY = os.environ.get("EMBER_GATEWAY_BIN", "")
E5_DIR = os.environ.get("EMBER_XLMR_E5_DIR", "")
M3_DIR = os.environ.get("EMBER_XLMR_M3_DIR", "")
RERANKER_DIR = os.environ.get("EMBER_XLMR_RERANKER_DIR", "")
MPNET_DIR = os.environ.get("EMBER_MPNET_DIR", "")
MPNET_RERANKER_DIR = os.environ.get("EMBER_MPNET_RERANKER_DIR", "")
MODERNBERT_DIR = os.environ.get("EMBER_MODERNBERT_DIR", "")
SERVED = (("e5", E5_DIR), ("m3", M3_DIR), ("reranker", RERANKER_DIR), ("mpnet", MPNET_DIR),
          ("mpnet-reranker", MPNET_RERANKER_DIR), ("modernbert", MODERNBERT_DIR))
RERANKERS = ("reranker", "mpnet-reranker")

# Both sides compute in float32 in a different order; 12 layers stay well inside this.
TOLERANCE = 1e-5
CHUNK = 16  # texts per request, so that the worker batches unequal lengths together


def corpus():
    """The parity corpus with XLM-R's special tokens mixed in; whitespace-only texts left out
    (ember refuses an empty input, sentence-transformers embeds it)."""
    texts = tokenizer_corpus.texts(specials=["<pad>", "<s>", "</s>", "<mask>", "<unk>"],
                                   seed=7, random_count=150, long_count=4)
    return [t for t in texts if t.strip()]


class FamiliesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require(ROUTER, WORKER, GATEWAY, *(folder for _, folder in SERVED))
        cls.dir = tempfile.mkdtemp(prefix="ember-families-")
        frontend = "ipc://" + os.path.join(cls.dir, "frontend")
        backend = "ipc://" + os.path.join(cls.dir, "backend")
        repository = os.path.join(cls.dir, "repository")
        for name, source in SERVED:
            add_version(repository, name, source)
        add_version(repository, "e5-aten", E5_DIR, 'encoder = "aten"\n')
        add_version(repository, "modernbert-aten", MODERNBERT_DIR, 'encoder = "aten"\n')
        cls.processes = [
            start([ROUTER, "--frontend", frontend, "--backend", backend],
                  os.path.join(cls.dir, "router.log")),
            start([WORKER, "--router", backend, "--id", "w1", "--threads", "1",
                   "--repository", repository], os.path.join(cls.dir, "worker.log")),
        ]
        gateway, port = start_gateway([GATEWAY, "--router", frontend, "--default-model", "e5"],
                                      os.path.join(cls.dir, "gateway.log"))
        cls.processes.append(gateway)
        cls.base = "http://127.0.0.1:%d" % port
        # Eight models load and warm up on a 2-core machine beside other tests: a generous bound.
        deadline = time.monotonic() + 240
        while True:
            statuses = [cls.post(cls, "/embed", {"model": m, "inputs": "warm-up"})[0]
                        for m in ("e5", "e5-aten", "m3", "mpnet", "modernbert",
                                  "modernbert-aten")]
            statuses += [cls.post(cls, "/rerank", {"model": m, "query": "warm",
                                                   "texts": ["up"]})[0] for m in RERANKERS]
            if statuses == [200] * len(statuses):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster did not come up (%s); logs in %s"
                                   % (statuses, cls.dir))
            time.sleep(0.2)
        cls.texts = corpus()

    @classmethod
    def tearDownClass(cls):
        stop(cls.processes, timeout=10)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def post(self, path, body):
        """(status, parsed JSON body, headers) of a POST to the gateway."""
        return post_json(self.base, path, body, timeout=120)

    def embed(self, model, texts):
        vectors = []
        for i in range(0, len(texts), CHUNK):
            status, reply, _ = self.post("/embed", {"model": model, "inputs": texts[i:i + CHUNK]})
            self.assertEqual(status, 200, reply)
            vectors.extend(reply)
        return np.asarray(vectors, dtype=np.float64)

    def check_vectors(self, model, folder, texts):
        want = SentenceTransformer(folder, device="cpu").encode(texts, batch_size=CHUNK)
        got = self.embed(model, texts)
        self.assertEqual(got.shape, want.shape)
        err = np.abs(got - want).max(axis=1)
        worst = int(err.argmax())
        print("\n%s: max |ember - sentence-transformers| %.2g over %d texts"
              % (model, err[worst], len(texts)), file=sys.stderr)
        self.assertLess(err[worst], TOLERANCE,
                        "%s: text %d (%r...) differs by %g" % (model, worst, texts[worst][:80],
                                                                err[worst]))

    def test_the_corpus_holds_what_it_must(self):
        # What the families' differences show on: typed padding tokens, texts past 512 tokens.
        self.assertGreaterEqual(len(self.texts), 200)
        self.assertGreaterEqual(sum("<pad>" in t for t in self.texts), 10)
        self.assertGreaterEqual(sum(len(t) > 2500 for t in self.texts), 4)

    def test_e5_equals_sentence_transformers(self):
        self.check_vectors("e5", E5_DIR, self.texts)

    def test_e5_on_aten_equals_sentence_transformers(self):
        self.check_vectors("e5-aten", E5_DIR, self.texts)

    def test_m3_equals_sentence_transformers_past_512_tokens(self):
        # One layer of hidden 1024 over 8,194 positions: texts up to about 2,000 tokens (the
        # corpus' longest would take minutes on two cores), and one built to end past 1,500.
        texts = [t for t in self.texts if len(t) < 3000][::4]
        texts.append(" ".join("Satz %d über <pad> Füchse und Hunde." % i for i in range(150)))
        self.check_vectors("m3", M3_DIR, texts)

    def test_mpnet_equals_sentence_transformers(self):
        self.check_vectors("mpnet", MPNET_DIR, self.texts)

    def test_modernbert_equals_sentence_transformers(self):
        # Texts past the 64 tokens of the sliding window and up to about 1,000 tokens.
        self.check_vectors("modernbert", MODERNBERT_DIR, self.texts)

    def test_modernbert_on_aten_equals_sentence_transformers(self):
        self.check_vectors("modernbert-aten", MODERNBERT_DIR, self.texts)

    def check_rerank(self, model, folder):
        query = "Wo schläft der <pad> Fuchs?"
        passages = [t for t in self.texts if len(t) < 400][:40] + [self.texts[-1]]
        want = CrossEncoder(folder, device="cpu").predict([(query, p) for p in passages])
        status, reply, _ = self.post("/rerank", {"model": model, "query": query,
                                                 "texts": passages})
        self.assertEqual(status, 200, reply)
        self.assertEqual(len(reply), len(passages))
        err = max(abs(r["score"] - float(want[r["index"]])) for r in reply)
        print("\n%s: max |ember - CrossEncoder| %.2g over %d pairs" % (model, err, len(reply)),
              file=sys.stderr)
        for r in reply:
            self.assertAlmostEqual(r["score"], float(want[r["index"]]), delta=TOLERANCE)
        # Best first; scores closer than the tolerance may come in either order.
        scores = [r["score"] for r in reply]
        self.assertEqual(scores, sorted(scores, reverse=True))
        self.assertEqual(sorted(r["index"] for r in reply), list(range(len(passages))))


    def test_rerank_equals_cross_encoder_predict(self):
        self.check_rerank("reranker", RERANKER_DIR)

    def test_mpnet_rerank_equals_cross_encoder_predict(self):
        self.check_rerank("mpnet-reranker", MPNET_RERANKER_DIR)


if __name__ == "__main__":
    unittest.main(verbosity=2)
