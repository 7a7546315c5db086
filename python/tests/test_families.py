"""Model families beyond BERT (issues 35 and 37): encoders (XLM-RoBERTa, MPNet, ModernBERT) and
decoders (Qwen3, Qwen2, Mistral) served by a router, a worker and a gateway this test starts,
their vectors and scores against sentence-transformers (or transformers) on the same folders. The repository serves (scripts/make_encoder_model.py, seeded random weights in
the real models' shapes; the XLM-R models with the trained XLM-R Unigram tokenizer of the
tokenizer tests, the MPNet ones with all-mpnet-base-v2's):
  - "e5": multilingual-e5-small's shape (XLMRobertaModel, 12 layers, hidden 384, 514 positions),
    mean pooling, Normalize; on the fused CPU encoder;
  - "e5-aten": the same folder on the ATen forward (`encoder = "aten"`: the path CUDA takes for
    a batch holding a typed padding token);
  - "m3": bge-m3's shape (hidden 1024, 16 heads, 8,194 positions) cut to one layer, CLS
    pooling, Normalize, max_seq_length 8192, with bge-m3's sparse and ColBERT heads
    (sparse_linear.pt, colbert_linear.pt) held to FlagEmbedding's M3 embedder on /embed_sparse
    and /embed_multi_vector; "m3-aten" the same folder on the ATen forward (the path a GPU takes
    for them);
  - "reranker": an XLMRobertaForSequenceClassification with one label (bge-reranker-v2-m3's
    head), multilingual-e5-small's shape cut to two layers;
  - "mpnet": all-mpnet-base-v2's shape (MPNetModel: relative attention bias, no token types)
    cut to four layers, mean pooling, Normalize;
  - "mpnet-reranker": an MPNetForSequenceClassification with one label, two layers;
  - "modernbert-reranker": a ModernBertForSequenceClassification with one label, two layers,
    classifier_pooling mean (its head: dense without a bias, GELU, LayerNorm, classifier);
  - "modernbert": ModernBERT-base's shape (pre-norm, RoPE of two thetas, GeGLU, no biases, a
    global layer every three and a 128-token window in the others) cut to four layers, mean
    pooling, max_seq_length 2048, with the trained byte-level BPE; "modernbert-aten" the same
    folder on the ATen forward;
  - "qwen3": Qwen3-Embedding's structure (RMSNorm, RoPE, 4 query heads over 2 key/value heads of
    32, wider than hidden / heads, per-head q/k norms, SwiGLU, causal) at hidden 64, two layers,
    last-token pooling, with the real Qwen vocabulary and its end-of-text token appended;
    "qwen3-aten" the same folder on the ATen forward; "qwen3-bidirectional" another with
    is_causal false (held to transformers' forward with a bidirectional mask, as
    sentence-transformers has no such mode);
  - "qwen2": gte-Qwen2's structure (biases on the query, key and value projections, 6 heads
    over 2), causal, saved as the real ones are: bfloat16 in shards with
    model.safetensors.index.json (both sides compute in float32);
  - "mistral": e5-mistral's (8 heads over 2, a sliding window, here 64 tokens so that the
    corpus' texts pass it) with the trained SentencePiece BPE laid out as Mistral's.

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
MODERNBERT_RERANKER_DIR = os.environ.get("EMBER_MODERNBERT_RERANKER_DIR", "")
QWEN3_DIR = os.environ.get("EMBER_QWEN3_DIR", "")
QWEN3_BIDIRECTIONAL_DIR = os.environ.get("EMBER_QWEN3_BIDIRECTIONAL_DIR", "")
QWEN2_DIR = os.environ.get("EMBER_QWEN2_DIR", "")
MISTRAL_DIR = os.environ.get("EMBER_MISTRAL_DIR", "")
ATEN = 'encoder = "aten"\n'
# What each of the three test classes serves, (name, folder, config.toml or None), and the
# rerankers among them; each class has a cluster of its own, so that ctest runs them side by side.
XLMR = (("e5", E5_DIR, None), ("e5-aten", E5_DIR, ATEN), ("m3", M3_DIR, None),
        ("m3-aten", M3_DIR, ATEN), ("reranker", RERANKER_DIR, None))
MPNET_MODERNBERT = (("mpnet", MPNET_DIR, None), ("modernbert", MODERNBERT_DIR, None),
                    ("modernbert-aten", MODERNBERT_DIR, ATEN),
                    ("mpnet-reranker", MPNET_RERANKER_DIR, None),
                    ("modernbert-reranker", MODERNBERT_RERANKER_DIR, None))
DECODERS = (("qwen3", QWEN3_DIR, None), ("qwen3-aten", QWEN3_DIR, ATEN),
            ("qwen3-bidirectional", QWEN3_BIDIRECTIONAL_DIR, None), ("qwen2", QWEN2_DIR, None),
            ("mistral", MISTRAL_DIR, None))
RERANKERS = ("reranker", "mpnet-reranker", "modernbert-reranker")

# Both sides compute in float32 in a different order; 12 layers stay well inside this.
TOLERANCE = 1e-5
CHUNK = 16  # texts per request, so that the worker batches unequal lengths together


def corpus():
    """The parity corpus with XLM-R's special tokens mixed in; whitespace-only texts left out
    (ember refuses an empty input, sentence-transformers embeds it)."""
    texts = tokenizer_corpus.texts(specials=["<pad>", "<s>", "</s>", "<mask>", "<unk>"],
                                   seed=7, random_count=150, long_count=4)
    return [t for t in texts if t.strip()]


def m3_texts(texts):
    """The corpus' texts for bge-m3's heads: up to about 2,000 tokens (one layer of hidden 1024),
    and one with XLM-R's special tokens typed in: those FlagEmbedding leaves out of the lexical
    weights, and <mask>, which it keeps."""
    out = [t for t in texts if len(t) < 3000][::6]
    out.append(" ".join("Satz %d über <pad> Füchse, <unk> Hunde und <mask>." % i
                        for i in range(150)))
    return out


def sparse_difference(entries, weights):
    """(largest difference, its token id) between /embed_sparse's entries for a text and
    FlagEmbedding's {id: weight}. An id weighted near 0 may fall on either side of the ReLU, so
    they are compared as vectors: an id one side lacks weighs 0 there."""
    mine = {e["index"]: e["value"] for e in entries}
    return max(((abs(mine.get(idx, 0.0) - weights.get(idx, 0.0)), idx)
                for idx in set(mine) | set(weights)), default=(0.0, -1))


def m3_reference(folder, texts):
    """bge-m3's lexical weights and ColBERT vectors as FlagEmbedding 1.4.2's M3Embedder computes
    them (inference/embedder/encoder_only/m3.py: _process_token_weights, _process_colbert_vecs;
    the heads as its finetune/embedder/encoder_only/m3/modeling.py applies them), on
    transformers' forward in float32. FlagEmbedding itself needs datasets, peft and more that the
    project's environment does not carry; docs/models.md records a run against it. One text at a
    time: no padding, whose rows FlagEmbedding masks and drops anyway."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    hidden = model.config.hidden_size
    sparse_linear = torch.nn.Linear(hidden, 1)
    sparse_linear.load_state_dict(torch.load(os.path.join(folder, "sparse_linear.pt"),
                                             weights_only=True))
    colbert = torch.load(os.path.join(folder, "colbert_linear.pt"), weights_only=True)
    colbert_linear = torch.nn.Linear(hidden, colbert["weight"].shape[0])
    colbert_linear.load_state_dict(colbert)
    unused_tokens = set()
    for token in ["cls_token", "eos_token", "pad_token", "unk_token"]:
        if token in tokenizer.special_tokens_map:
            unused_tokens.add(tokenizer.convert_tokens_to_ids(tokenizer.special_tokens_map[token]))
    lexical, colbert_vecs = [], []
    with torch.no_grad():
        for text in texts:
            inputs = tokenizer([text], truncation=True, max_length=8192, return_tensors="pt")
            state = model(**inputs).last_hidden_state
            token_weights = torch.relu(sparse_linear(state)).squeeze(-1)[0].numpy()
            result = {}
            for w, idx in zip(token_weights, inputs["input_ids"][0].tolist()):
                if idx not in unused_tokens and w > 0 and w > result.get(idx, 0):
                    result[idx] = float(w)
            lexical.append(result)
            vecs = colbert_linear(state[:, 1:]) * inputs["attention_mask"][:, 1:][:, :, None]
            vecs = torch.nn.functional.normalize(vecs, dim=-1)[0]
            colbert_vecs.append(vecs[:int(inputs["attention_mask"].sum()) - 1].numpy())
    return lexical, colbert_vecs


def decoder_texts(texts):
    """The corpus, texts of one token and texts past 2,048 tokens (a decoder's batches mix them:
    a padding or position bug shows there)."""
    long = [" ".join("Satz %d über Füchse, Hunde und <s> Katzen." % i for i in range(400)),
            " ".join("paragraph %d: the quick brown fox jumps over the lazy dog" % i
                     for i in range(260))]
    return ["a", "7", "日", "!"] + texts + long


def bidirectional_reference(folder, texts):
    """transformers' forward of the folder's base model with every token seeing every other
    (its config's is_causal false; transformers' own forward is causal whatever the config
    says), then sentence-transformers' last-token pooling and Normalize. One text at a time: no
    padding, and the scores of a 3,000-token text in a padded batch of 16 would take gigabytes."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.masking_utils import create_bidirectional_mask
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    for layer in model.layers:
        layer.self_attn.is_causal = False
    out = []
    with torch.no_grad():
        for text in texts:
            ids = tokenizer([text], truncation=True, max_length=8192, return_tensors="pt")
            mask = create_bidirectional_mask(config=model.config,
                                             inputs_embeds=model.embed_tokens(ids["input_ids"]),
                                             attention_mask=ids["attention_mask"])
            hidden = model(input_ids=ids["input_ids"],
                           attention_mask={"full_attention": mask}).last_hidden_state
            out.append(torch.nn.functional.normalize(hidden[0, -1], dim=-1).numpy())
    return np.stack(out)


def decoder_reference(folder, texts, **model_kwargs):
    """sentence-transformers on a decoder folder, in batches of 4: a batch holding a 3,000-token
    text pads every text to it."""
    return SentenceTransformer(folder, device="cpu", model_kwargs=model_kwargs).encode(
        texts, batch_size=4)


class ClusterTest:
    """A router, a worker serving MODELS and a gateway, up for the test class (a mixin: the
    classes below add unittest.TestCase)."""
    MODELS = ()

    @classmethod
    def setUpClass(cls):
        require(ROUTER, WORKER, GATEWAY, *(folder for _, folder, _ in cls.MODELS))
        cls.dir = tempfile.mkdtemp(prefix="ember-families-")
        frontend = "ipc://" + os.path.join(cls.dir, "frontend")
        backend = "ipc://" + os.path.join(cls.dir, "backend")
        repository = os.path.join(cls.dir, "repository")
        for name, source, config_toml in cls.MODELS:
            add_version(repository, name, source, config_toml)
        cls.processes = [
            start([ROUTER, "--frontend", frontend, "--backend", backend],
                  os.path.join(cls.dir, "router.log")),
            start([WORKER, "--router", backend, "--id", "w1", "--threads", "1",
                   "--repository", repository], os.path.join(cls.dir, "worker.log")),
        ]
        gateway, port = start_gateway([GATEWAY, "--router", frontend,
                                       "--default-model", cls.MODELS[0][0]],
                                      os.path.join(cls.dir, "gateway.log"))
        cls.processes.append(gateway)
        cls.base = "http://127.0.0.1:%d" % port
        # The models load and warm up on a 2-core machine beside other tests: a generous bound.
        deadline = time.monotonic() + 240
        while True:
            statuses = [cls.post(cls, "/rerank", {"model": m, "query": "warm", "texts": ["up"]})[0]
                        if m in RERANKERS else
                        cls.post(cls, "/embed", {"model": m, "inputs": "warm-up"})[0]
                        for m, _, _ in cls.MODELS]
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

    def collect(self, path, model, texts):
        """The gateway's answers on `path` for `texts`, CHUNK at a time, one per text."""
        answers = []
        for i in range(0, len(texts), CHUNK):
            status, reply, _ = self.post(path, {"model": model, "inputs": texts[i:i + CHUNK]})
            self.assertEqual(status, 200, reply)
            answers.extend(reply)
        self.assertEqual(len(answers), len(texts))
        return answers

    def embed(self, model, texts):
        return np.asarray(self.collect("/embed", model, texts), dtype=np.float64)

    def check_vectors(self, model, folder, texts, want=None, peer="sentence-transformers"):
        if want is None:
            want = SentenceTransformer(folder, device="cpu").encode(texts, batch_size=CHUNK)
        got = self.embed(model, texts)
        self.assertEqual(got.shape, want.shape)
        err = np.abs(got - want).max(axis=1)
        worst = int(err.argmax())
        print("\n%s: max |ember - %s| %.2g over %d texts"
              % (model, peer, err[worst], len(texts)), file=sys.stderr)
        self.assertLess(err[worst], TOLERANCE,
                        "%s: text %d (%r...) differs by %g" % (model, worst, texts[worst][:80],
                                                                err[worst]))

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


class XlmRobertaFamiliesTest(ClusterTest, unittest.TestCase):
    """XLM-R: e5, bge-m3 with its sparse and ColBERT heads, the reranker (issue 35), against
    sentence-transformers and FlagEmbedding's algorithm."""
    MODELS = XLMR

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

    @classmethod
    def m3_case(cls):
        """The bge-m3 texts with FlagEmbedding's lexical weights and ColBERT vectors for them,
        computed once for the four tests that hold ember to them."""
        if not hasattr(cls, "_m3_case"):
            texts = m3_texts(cls.texts)
            cls._m3_case = (texts, *m3_reference(M3_DIR, texts))
        return cls._m3_case

    def check_sparse(self, model):
        texts, want, _ = self.m3_case()
        got = self.collect("/embed_sparse", model, texts)
        worst = 0.0
        for k, (entries, weights) in enumerate(zip(got, want)):
            ids = [e["index"] for e in entries]
            self.assertEqual(ids, sorted(set(ids)), "text %d: ids not ascending once each" % k)
            self.assertTrue(all(e["value"] > 0 for e in entries))
            err, idx = sparse_difference(entries, weights)
            worst = max(worst, err)
            self.assertLess(err, TOLERANCE, "text %d (%r...), token %d" % (k, texts[k][:60], idx))
        print("\n%s /embed_sparse: max |ember - FlagEmbedding| %.2g over %d texts, %d weights"
              % (model, worst, len(texts), sum(len(w) for w in want)), file=sys.stderr)

    def check_multi_vector(self, model):
        texts, _, want = self.m3_case()
        got = self.collect("/embed_multi_vector", model, texts)
        worst = 0.0
        for k, (vectors, reference) in enumerate(zip(got, want)):
            vectors = np.asarray(vectors, dtype=np.float64)
            self.assertEqual(vectors.shape, reference.shape, "text %d" % k)
            worst = max(worst, float(np.abs(vectors - reference).max()))
        print("\n%s /embed_multi_vector: max |ember - FlagEmbedding| %.2g over %d texts, %d "
              "vectors" % (model, worst, len(texts), sum(len(w) for w in want)), file=sys.stderr)
        self.assertLess(worst, TOLERANCE)

    def test_m3_sparse_equals_flagembedding(self):
        self.check_sparse("m3")

    def test_m3_sparse_on_aten_equals_flagembedding(self):
        self.check_sparse("m3-aten")

    def test_m3_multi_vector_equals_flagembedding(self):
        self.check_multi_vector("m3")

    def test_m3_multi_vector_on_aten_equals_flagembedding(self):
        self.check_multi_vector("m3-aten")

    def test_a_model_without_the_heads_refuses_them(self):
        for path, head in (("/embed_sparse", "sparse_linear.pt"),
                           ("/embed_multi_vector", "colbert_linear.pt")):
            status, reply, _ = self.post(path, {"model": "e5", "inputs": ["a", "b"]})
            self.assertEqual(status, 400, reply)
            self.assertEqual(reply["error_type"], "Validation")
            self.assertIn(head, reply["error"])
        status, reply, _ = self.post("/embed_sparse", {"model": "reranker", "inputs": "a"})
        self.assertEqual(status, 400, reply)

    def test_rerank_equals_cross_encoder_predict(self):
        self.check_rerank("reranker", RERANKER_DIR)


class MpnetModernBertFamiliesTest(ClusterTest, unittest.TestCase):
    """MPNet and ModernBERT, their embedders and rerankers (issue 35), against
    sentence-transformers."""
    MODELS = MPNET_MODERNBERT

    def test_mpnet_equals_sentence_transformers(self):
        self.check_vectors("mpnet", MPNET_DIR, self.texts)

    def test_modernbert_equals_sentence_transformers(self):
        # Texts past the 64 tokens of the sliding window and up to about 1,000 tokens.
        self.check_vectors("modernbert", MODERNBERT_DIR, self.texts)

    def test_modernbert_on_aten_equals_sentence_transformers(self):
        self.check_vectors("modernbert-aten", MODERNBERT_DIR, self.texts)

    def test_mpnet_rerank_equals_cross_encoder_predict(self):
        self.check_rerank("mpnet-reranker", MPNET_RERANKER_DIR)

    def test_modernbert_rerank_equals_cross_encoder_predict(self):
        self.check_rerank("modernbert-reranker", MODERNBERT_RERANKER_DIR)


class DecoderFamiliesTest(ClusterTest, unittest.TestCase):
    """Qwen3 (causal and bidirectional), Qwen2 and Mistral against transformers (issue 37)."""
    MODELS = DECODERS

    def test_qwen3_equals_sentence_transformers(self):
        texts = decoder_texts(self.texts)
        self.check_vectors("qwen3", QWEN3_DIR, texts, decoder_reference(QWEN3_DIR, texts))

    def test_qwen3_on_aten_equals_sentence_transformers(self):
        texts = decoder_texts(self.texts)
        self.check_vectors("qwen3-aten", QWEN3_DIR, texts, decoder_reference(QWEN3_DIR, texts))

    def test_bidirectional_qwen3_equals_transformers(self):
        texts = decoder_texts(self.texts)
        self.check_vectors("qwen3-bidirectional", QWEN3_BIDIRECTIONAL_DIR, texts,
                           bidirectional_reference(QWEN3_BIDIRECTIONAL_DIR, texts), "transformers")

    def test_qwen2_equals_sentence_transformers(self):
        import torch
        texts = decoder_texts(self.texts)
        self.check_vectors("qwen2", QWEN2_DIR, texts,
                           decoder_reference(QWEN2_DIR, texts, dtype=torch.float32))

    def test_mistral_equals_sentence_transformers(self):
        texts = decoder_texts(self.texts)
        self.check_vectors("mistral", MISTRAL_DIR, texts, decoder_reference(MISTRAL_DIR, texts))

    def test_decoder_texts_hold_what_they_must(self):
        # One-token texts (the end-of-text token after them) and texts past 2,048 tokens.
        from transformers import AutoTokenizer
        lengths = [len(ids) for ids in
                   AutoTokenizer.from_pretrained(QWEN3_DIR)(decoder_texts(self.texts))["input_ids"]]
        self.assertEqual(min(lengths), 2)
        self.assertGreaterEqual(sum(n > 2048 for n in lengths), 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
