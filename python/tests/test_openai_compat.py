"""The gateway against the official clients' expectations (issue 26): the `openai` Python
package's embeddings.create against /v1/embeddings, and TEI-shaped HTTP calls to /embed, on a
router (cache on), a worker and a gateway this test starts, serving the real all-MiniLM-L6-v2
three times from a model repository: as "minilm"; as "minilm-mrl" with `matryoshka = true`; as
"minilm-prompts", whose config_sentence_transformers.json declares e5-style prompts ("query: ",
"passage: ") with "query" the default.

Oracles: HF `tokenizers` (the folder's tokenizer.json) for the token counts that `usage` and
TEI's x-compute-tokens header report, and sentence-transformers' encode for the vectors (with
truncate_dim for `dimensions`, and with the same folder's prompts for `prompt_name`).

Run by ctest (tests/CMakeLists.txt) with the project's Python environment, which sets
EMBER_ROUTER_BIN, EMBER_WORKER_BIN, EMBER_GATEWAY_BIN and EMBER_MINILM_REAL_DIR.
"""

import json
import os
import shutil
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import numpy as np
import openai
import tokenizers
from sentence_transformers import SentenceTransformer

from processes import require, start, start_gateway, stop

ROUTER = os.environ.get("EMBER_ROUTER_BIN", "")
WORKER = os.environ.get("EMBER_WORKER_BIN", "")
GATEWAY = os.environ.get("EMBER_GATEWAY_BIN", "")
MODEL_DIR = os.environ.get("EMBER_MINILM_REAL_DIR", "")

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "Café, naïve, Ångström: accents are stripped by the uncased tokenizer.",
    "Unbelievably, the tokenizer splits unaffordable words into word pieces.",
    "机器学习模型把文本变成向量。",
    "A",
]
PROMPTS = {"query": "query: ", "passage": "passage: "}


class OpenAiCompatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require(ROUTER, WORKER, GATEWAY, MODEL_DIR)
        cls.dir = tempfile.mkdtemp(prefix="ember-openai-")
        frontend = "ipc://" + os.path.join(cls.dir, "frontend")
        backend = "ipc://" + os.path.join(cls.dir, "backend")
        repository = os.path.join(cls.dir, "repository")
        for name, config in (("minilm", ""), ("minilm-mrl", "matryoshka = true\n"),
                             ("minilm-prompts", "")):
            version = os.path.join(repository, name, "1")
            os.makedirs(version)
            for entry in os.listdir(MODEL_DIR):
                if name == "minilm-prompts" and entry == "config_sentence_transformers.json":
                    continue
                os.symlink(os.path.join(MODEL_DIR, entry), os.path.join(version, entry))
            with open(os.path.join(version, "config.toml"), "w") as f:
                f.write(config)
        cls.prompts_dir = os.path.join(repository, "minilm-prompts", "1")
        with open(os.path.join(cls.prompts_dir, "config_sentence_transformers.json"), "w") as f:
            json.dump({"prompts": PROMPTS, "default_prompt_name": "query"}, f)
        cls.processes = [
            start([ROUTER, "--frontend", frontend, "--backend", backend,
                   "--cache-bytes", str(16 << 20)], os.path.join(cls.dir, "router.log")),
            start([WORKER, "--router", backend, "--id", "w1", "--threads", "1",
                   "--repository", repository], os.path.join(cls.dir, "worker.log")),
        ]
        gateway, port = start_gateway([GATEWAY, "--router", frontend, "--default-model", "minilm"],
                                      os.path.join(cls.dir, "gateway.log"))
        cls.processes.append(gateway)
        cls.base = "http://127.0.0.1:%d" % port
        cls.client = openai.OpenAI(base_url=cls.base + "/v1", api_key="unused", max_retries=0,
                                   timeout=30)
        deadline = time.monotonic() + 90  # the worker loads the model
        while True:
            try:
                for model in ("minilm", "minilm-mrl", "minilm-prompts"):
                    cls.client.embeddings.create(model=model, input="warm-up")
                break
            except openai.APIError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the cluster did not come up; logs in " + cls.dir)
                time.sleep(0.2)
        tokenizer = tokenizers.Tokenizer.from_file(os.path.join(MODEL_DIR, "tokenizer.json"))
        tokenizer.no_padding()  # the file pads every text to 128 for batching
        cls.tokenizer = tokenizer
        cls.tokens = [len(tokenizer.encode(t).ids) for t in TEXTS]
        cls.st = SentenceTransformer(MODEL_DIR, device="cpu").encode(
            TEXTS, convert_to_numpy=True, normalize_embeddings=True)

    @classmethod
    def tearDownClass(cls):
        stop(cls.processes, timeout=10)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def check_vectors(self, data, expected=None):
        expected = self.st if expected is None else expected
        self.assertEqual([d.index for d in data], list(range(len(TEXTS))))
        got = np.array([d.embedding for d in data], dtype=np.float32)
        self.assertEqual(got.shape, expected.shape)
        self.assertLessEqual(float(np.abs(got - expected).max()), 1e-5)

    def test_usage_counts_the_tokens_the_model_ran(self):
        # The client's default asks for base64 and decodes it.
        r = self.client.embeddings.create(model="minilm", input=TEXTS)
        self.assertEqual(r.model, "minilm")
        self.check_vectors(r.data)
        self.assertEqual(r.usage.prompt_tokens, sum(self.tokens))
        self.assertEqual(r.usage.total_tokens, sum(self.tokens))

    def test_float_format_and_one_string(self):
        r = self.client.embeddings.create(model="minilm", input=TEXTS, encoding_format="float")
        self.check_vectors(r.data)
        one = self.client.embeddings.create(model="minilm", input=TEXTS[1])
        self.assertEqual(len(one.data), 1)
        self.assertEqual(one.usage.prompt_tokens, self.tokens[1])

    def test_cached_answers_report_the_same_usage(self):
        # The router's cache answers repeats (docs/caching.md): the counts come from it.
        first = self.client.embeddings.create(model="minilm", input=TEXTS[:3])
        again = self.client.embeddings.create(model="minilm", input=TEXTS[:3] + TEXTS[:1])
        self.assertEqual(first.usage.prompt_tokens, sum(self.tokens[:3]))
        self.assertEqual(again.usage.prompt_tokens, sum(self.tokens[:3]) + self.tokens[0])

    def test_dimensions_of_the_model_pass_and_others_are_400(self):
        r = self.client.embeddings.create(model="minilm", input=TEXTS[:1], dimensions=384)
        self.assertEqual(len(r.data[0].embedding), 384)
        with self.assertRaises(openai.BadRequestError):
            self.client.embeddings.create(model="minilm", input=TEXTS[:1], dimensions=999)

    def test_matryoshka_dimensions_equal_sentence_transformers_truncate_dim(self):
        for d in (32, 128, 256):
            st = SentenceTransformer(MODEL_DIR, device="cpu", truncate_dim=d).encode(
                TEXTS, convert_to_numpy=True, normalize_embeddings=True)
            r = self.client.embeddings.create(model="minilm-mrl", input=TEXTS, dimensions=d)
            got = np.array([x.embedding for x in r.data], dtype=np.float32)
            self.assertEqual(got.shape, (len(TEXTS), d))
            self.assertLessEqual(float(np.abs(got - st).max()), 1e-6, d)
            self.assertEqual(r.usage.prompt_tokens, sum(self.tokens), "the same tokens ran")

    def test_dimensions_are_part_of_the_cache_key(self):
        cut = self.client.embeddings.create(model="minilm-mrl", input=TEXTS[4], dimensions=64)
        full = self.client.embeddings.create(model="minilm-mrl", input=TEXTS[4])
        again = self.client.embeddings.create(model="minilm-mrl", input=TEXTS[4], dimensions=64)
        self.assertEqual(len(cut.data[0].embedding), 64)
        self.assertEqual(len(full.data[0].embedding), 384)
        self.assertEqual(again.data[0].embedding, cut.data[0].embedding)

    def test_dimensions_for_a_model_that_does_not_declare_them_is_400(self):
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.embeddings.create(model="minilm", input=TEXTS[:1], dimensions=128)
        self.assertIn("Matryoshka", str(caught.exception))
        with self.assertRaises(openai.BadRequestError):
            self.client.embeddings.create(model="minilm-mrl", input=TEXTS[:1], dimensions=385)

    def test_tei_embed_takes_dimensions(self):
        body = json.dumps({"inputs": TEXTS[:2], "model": "minilm-mrl", "dimensions": 64}).encode()
        request = urllib.request.Request(self.base + "/embed", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            vectors = np.array(json.loads(response.read()), dtype=np.float32)
        self.assertEqual(vectors.shape, (2, 64))
        self.assertLessEqual(float(np.abs(np.linalg.norm(vectors, axis=1) - 1).max()), 1e-6)

    def test_prompts_as_sentence_transformers_puts_them(self):
        st = SentenceTransformer(self.prompts_dir, device="cpu")
        for name in (None, "query", "passage"):  # None: the folder's default, "query"
            expected = st.encode(TEXTS, convert_to_numpy=True, normalize_embeddings=True,
                                 prompt_name=name)
            prompt = PROMPTS[name or "query"]
            tokens = sum(len(self.tokenizer.encode(prompt + t).ids) for t in TEXTS)
            body = {"inputs": TEXTS, "model": "minilm-prompts"}
            if name:
                body["prompt_name"] = name
            request = urllib.request.Request(self.base + "/embed", data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                self.assertEqual(int(response.headers["x-compute-tokens"]), tokens, name)
                got = np.array(json.loads(response.read()), dtype=np.float32)
            self.assertLessEqual(float(np.abs(got - expected).max()), 1e-5, name)
            # The same through the OpenAI API (prompt_name is ember's extension there).
            r = self.client.embeddings.create(model="minilm-prompts", input=TEXTS,
                                              extra_body={"prompt_name": name} if name else None)
            self.assertEqual(r.usage.prompt_tokens, tokens, name)
            self.check_vectors(r.data, expected)

    def test_unknown_prompt_names_are_400(self):
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.embeddings.create(model="minilm-prompts", input="x",
                                          extra_body={"prompt_name": "document"})
        self.assertIn("prompts passage, query", str(caught.exception))
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.embeddings.create(model="minilm", input="x",
                                          extra_body={"prompt_name": "query"})
        self.assertIn("no prompts", str(caught.exception))

    def test_unknown_model_is_not_found(self):
        with self.assertRaises(openai.NotFoundError):
            self.client.embeddings.create(model="no-such-model", input="x")

    def test_tei_embed_reports_tokens_in_its_header(self):
        body = json.dumps({"inputs": TEXTS}).encode()
        request = urllib.request.Request(self.base + "/embed", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            self.assertEqual(int(response.headers["x-compute-tokens"]), sum(self.tokens))
            vectors = np.array(json.loads(response.read()), dtype=np.float32)
        self.assertLessEqual(float(np.abs(vectors - self.st).max()), 1e-5)

    def post(self, path, body):
        """(status, parsed JSON body) of a POST to the gateway."""
        request = urllib.request.Request(self.base + path, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def test_tei_tokenize_equals_hf_tokenizers_with_byte_offsets(self):
        # Texts with accents, CJK, an emoji ([UNK]), a ligature, a combining accent, a special
        # token written in the text, odd spaces: every token's id and the bytes it came from
        # as HF tokenizers' offsets give them (characters there, bytes here, as TEI reports).
        texts = TEXTS + ["emoji \U0001F600 and \uFB01 ligature \u0130stanbul \u03a3\u0391\u03a3",
                         "e\u0301 combining [SEP] inside,\u00a0nbsp"]
        status, reply = self.post("/tokenize", {"inputs": texts})
        self.assertEqual(status, 200, reply)
        self.assertEqual(len(reply), len(texts))
        for text, tokens in zip(texts, reply):
            want = self.tokenizer.encode(text)
            to_bytes = [len(text[:i].encode()) for i in range(len(text) + 1)]
            self.assertEqual([t["id"] for t in tokens], want.ids, text)
            self.assertEqual([t["special"] for t in tokens],
                             [bool(m) for m in want.special_tokens_mask], text)
            for t, (start, stop), piece in zip(tokens, want.offsets, want.tokens):
                if t["special"]:
                    self.assertEqual((t["text"], t["start"], t["stop"]), (piece, None, None))
                else:
                    self.assertEqual((t["start"], t["stop"]), (to_bytes[start], to_bytes[stop]))
                    self.assertEqual(t["text"], text[start:stop])
        # Without the special tokens, and one string alone.
        status, reply = self.post("/tokenize", {"inputs": "Hello, world!", "add_special_tokens": False})
        self.assertEqual(status, 200, reply)
        self.assertEqual([t["text"] for t in reply[0]], ["Hello", ",", "world", "!"])  # as written

    def test_tei_decode_equals_hf_tokenizers(self):
        sequences = [self.tokenizer.encode(t).ids for t in TEXTS + ["Don't stop: it's 3.5 , ok ?"]]
        sequences.append([100, 7592, 0, 102, 2015, 2015])  # [UNK], [PAD], a leading "##s"
        for skip in (True, False):
            status, reply = self.post("/decode", {"ids": sequences, "skip_special_tokens": skip})
            self.assertEqual(status, 200, reply)
            self.assertEqual(reply, [self.tokenizer.decode(s, skip_special_tokens=skip)
                                     for s in sequences])
        status, reply = self.post("/decode", {"ids": sequences[0]})  # one sequence alone
        self.assertEqual(status, 200, reply)
        self.assertEqual(reply, [self.tokenizer.decode(sequences[0])])
        for body in ({}, {"ids": []}, {"ids": "1 2"}, {"ids": [-1]}, {"ids": [1, [2]]},
                     {"ids": [30522]}, {"ids": [1], "skip_special_tokens": 1}):
            status, reply = self.post("/decode", body)
            self.assertEqual(status, 400, body)
            self.assertEqual(reply["error_type"], "Validation")

    def test_tei_tokenize_bad_input_is_400(self):
        for body in ({}, {"inputs": []}, {"inputs": [1]}, {"inputs": "a", "prompt_name": "q"},
                     {"inputs": "a", "add_special_tokens": "no"}):
            status, reply = self.post("/tokenize", body)
            self.assertEqual(status, 400, body)
            self.assertEqual(reply["error_type"], "Validation")
        # Over the model's 256 tokens: cut there, or TOO_LONG without truncation.
        long_text = " ".join(["word"] * 300)
        status, reply = self.post("/tokenize", {"inputs": long_text})
        self.assertEqual(status, 200)
        self.assertEqual(len(reply[0]), 256)
        status, reply = self.post("/tokenize", {"inputs": long_text, "truncate": False})
        self.assertEqual(status, 400)
        self.assertIn("256", reply["error"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
