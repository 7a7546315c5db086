#!/usr/bin/env python3
"""Independent pure-Python reference for BERT WordPiece tokenization (HF BertTokenizer).

This mirrors the *slow* (pure Python) HuggingFace `BertTokenizer` as of transformers 4.3x:

  PreTrainedTokenizer.tokenize():
    * if do_lower_case: lowercase every character that is not part of a special token
      (per character via a regex, so no context-sensitive final-sigma rule: "ΣΑΣ" -> "σασ",
      as HF tokenizers' BertNormalizer does too); configs with lowercase_rule "per_word" skip
      this pass, so that BasicTokenizer's token.lower() (Python's full mapping with
      Final_Sigma: "ΣΑΣ" -> "σας") decides, as in Google's original BERT tokenizer;
    * split the text on special tokens ([CLS], [SEP], ...) found verbatim in the input;
  BasicTokenizer.tokenize() on every other fragment:
    * clean text: drop U+0000, U+FFFD and category C* (except \\t \\n \\r), whitespace -> " "
    * surround CJK ideographs with spaces; NFC-normalize; split on (Python str) whitespace
    * per token: unless it is a special token: lowercase, strip accents (NFD, drop Mn),
      split on punctuation
  WordpieceTokenizer.tokenize(): greedy longest-match-first with "##" continuations,
    [UNK] for unmatched words and words longer than 100 characters.

It deliberately uses only the standard library (`unicodedata`, `re`, `json`) and shares no
code with the C++ implementation it is used to test.

Usage:
  reference_tokenizer.py --vocab vocab.txt --corpus corpus.json --out reference.json
                         [--random-cases N] [--seed S]

corpus.json is a JSON array of strings. The output is
  {"unicode_version": ..., "configs": {name: {options}},
   "cases": [{"text": str, "ids": {config_name: [int, ...]}}]}
where ids include [CLS] ... [SEP] and are never truncated.
"""

import argparse
import json
import os
import random
import re
import sys
import unicodedata

SPECIAL_TOKENS = ["[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"]

# Configurations that the C++ test replays. strip_accents=None means "follow lowercase".
# lowercase_rule: "per_character" (HF) or "per_word" (Python str.lower() on each word).
CONFIGS = {
    "uncased": {"lowercase": True, "strip_accents": None, "tokenize_chinese_chars": True,
                "lowercase_rule": "per_character"},
    "cased": {"lowercase": False, "strip_accents": None, "tokenize_chinese_chars": True,
              "lowercase_rule": "per_character"},
    "lower_keep_accents": {"lowercase": True, "strip_accents": False, "tokenize_chinese_chars": True,
                           "lowercase_rule": "per_character"},
    "cased_strip_no_cjk": {"lowercase": False, "strip_accents": True, "tokenize_chinese_chars": False,
                           "lowercase_rule": "per_character"},
    "uncased_per_word": {"lowercase": True, "strip_accents": None, "tokenize_chinese_chars": True,
                         "lowercase_rule": "per_word"},
    "lower_keep_accents_per_word": {"lowercase": True, "strip_accents": False,
                                    "tokenize_chinese_chars": True, "lowercase_rule": "per_word"},
}


def load_vocab(path):
    vocab = {}
    with open(path, encoding="utf-8") as f:
        for index, token in enumerate(f.readlines()):
            vocab[token.rstrip("\n")] = index
    return vocab


def whitespace_tokenize(text):
    text = text.strip()
    if not text:
        return []
    return text.split()


def _is_whitespace(char):
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char).startswith("C")


def _is_punctuation(char):
    cp = ord(char)
    if (33 <= cp <= 47) or (58 <= cp <= 64) or (91 <= cp <= 96) or (123 <= cp <= 126):
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
    return (
        (0x4E00 <= cp <= 0x9FFF)
        or (0x3400 <= cp <= 0x4DBF)
        or (0x20000 <= cp <= 0x2A6DF)
        or (0x2A700 <= cp <= 0x2B73F)
        or (0x2B740 <= cp <= 0x2B81F)
        or (0x2B820 <= cp <= 0x2CEAF)
        or (0xF900 <= cp <= 0xFAFF)
        or (0x2F800 <= cp <= 0x2FA1F)
    )


class BasicTokenizer:
    def __init__(self, do_lower_case, strip_accents, tokenize_chinese_chars, never_split):
        self.do_lower_case = do_lower_case
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.never_split = set(never_split)

    def tokenize(self, text):
        text = self._clean_text(text)
        if self.tokenize_chinese_chars:
            text = self._tokenize_chinese_chars(text)
        text = unicodedata.normalize("NFC", text)
        split_tokens = []
        for token in whitespace_tokenize(text):
            if token not in self.never_split:
                if self.do_lower_case:
                    token = token.lower()
                    if self.strip_accents is not False:
                        token = self._run_strip_accents(token)
                elif self.strip_accents:
                    token = self._run_strip_accents(token)
            split_tokens.extend(self._run_split_on_punc(token))
        return whitespace_tokenize(" ".join(split_tokens))

    @staticmethod
    def _run_strip_accents(text):
        text = unicodedata.normalize("NFD", text)
        return "".join(c for c in text if unicodedata.category(c) != "Mn")

    def _run_split_on_punc(self, text):
        if text in self.never_split:
            return [text]
        output = []
        start_new_word = True
        for char in text:
            if _is_punctuation(char):
                output.append([char])
                start_new_word = True
            else:
                if start_new_word:
                    output.append([])
                start_new_word = False
                output[-1].append(char)
        return ["".join(x) for x in output]

    @staticmethod
    def _tokenize_chinese_chars(text):
        return "".join(f" {c} " if _is_chinese_char(ord(c)) else c for c in text)

    @staticmethod
    def _clean_text(text):
        output = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or _is_control(char):
                continue
            output.append(" " if _is_whitespace(char) else char)
        return "".join(output)


class WordpieceTokenizer:
    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=100):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text):
        output_tokens = []
        for token in whitespace_tokenize(text):
            chars = list(token)
            if len(chars) > self.max_input_chars_per_word:
                output_tokens.append(self.unk_token)
                continue
            is_bad = False
            start = 0
            sub_tokens = []
            while start < len(chars):
                end = len(chars)
                cur_substr = None
                while start < end:
                    substr = "".join(chars[start:end])
                    if start > 0:
                        substr = "##" + substr
                    if substr in self.vocab:
                        cur_substr = substr
                        break
                    end -= 1
                if cur_substr is None:
                    is_bad = True
                    break
                sub_tokens.append(cur_substr)
                start = end
            if is_bad:
                output_tokens.append(self.unk_token)
            else:
                output_tokens.extend(sub_tokens)
        return output_tokens


class BertTokenizer:
    def __init__(self, vocab, lowercase=True, strip_accents=None, tokenize_chinese_chars=True,
                 lowercase_rule="per_character"):
        if lowercase_rule not in ("per_character", "per_word"):
            raise ValueError(f"unknown lowercase_rule {lowercase_rule!r}")
        self.vocab = vocab
        # The per-character pre-pass; without it BasicTokenizer lowercases each word.
        self.do_lower_case = lowercase and lowercase_rule == "per_character"
        self.specials = [t for t in SPECIAL_TOKENS if t in vocab]
        self.basic = BasicTokenizer(lowercase, strip_accents, tokenize_chinese_chars, self.specials)
        self.wordpiece = WordpieceTokenizer(vocab)
        alternation = "|".join(re.escape(s) for s in self.specials)
        self._lower_re = re.compile("(" + alternation + ")|(.+?)")
        longest_first = sorted(self.specials, key=len, reverse=True)
        self._split_re = re.compile("(" + "|".join(re.escape(s) for s in longest_first) + ")")

    def tokenize(self, text):
        if self.do_lower_case:
            text = self._lower_re.sub(lambda m: m.groups()[0] or m.groups()[1].lower(), text)
        tokens = []
        for fragment in self._split_re.split(text):
            if not fragment:
                continue
            if fragment in self.specials:
                tokens.append(fragment)
                continue
            for token in self.basic.tokenize(fragment):
                tokens.extend(self.wordpiece.tokenize(token))
        return tokens

    def encode(self, text):
        unk = self.vocab["[UNK]"]
        ids = [self.vocab.get(t, unk) for t in self.tokenize(text)]
        return [self.vocab["[CLS]"]] + ids + [self.vocab["[SEP]"]]


def random_cases(vocab, count, seed):
    """Deterministic random texts that stress the Unicode paths.

    Only code points that are assigned (category != Cn) in this Python's Unicode database are
    used, so that the reference and the C++ side (utf8proc, possibly a newer Unicode version)
    agree on character properties.
    """
    rng = random.Random(seed)
    words = [t for t in vocab if not t.startswith("[")]

    def pool(lo, hi):
        return [chr(c) for c in range(lo, hi + 1) if unicodedata.category(chr(c)) != "Cn"]

    pools = [
        (30, [chr(c) for c in range(0x20, 0x7F)]),
        (8, list(" \t\n\r\u00a0\u3000\u2028\u2029\u2009\x0b\x0c\x85")),
        (4, list("\x00\x01\x1f\x7f\ufffd\u200b\u200d\ufeff\u00ad\ue000")),
        (8, pool(0xC0, 0x24F)),
        (6, pool(0x300, 0x36F)),
        (4, pool(0x370, 0x3FF) + ["\u03a3"] * 10),
        # Final_Sigma's context: case-ignorable characters (apostrophes, periods, colons,
        # modifier letters, marks) between a capital sigma and the letters around it.
        (3, list("\u03a3\u03a3\u03a3\u0391\u039f'.:\u00b7\u2019\u02b0\u0301\u0342^`,;-1")),
        (3, pool(0x400, 0x4FF)),
        (2, pool(0x591, 0x5F4) + pool(0x600, 0x6FF)),
        (2, pool(0x900, 0x97F) + pool(0xE00, 0xE7F)),
        (2, pool(0x1E00, 0x1FFF)),
        (3, pool(0x2000, 0x206F) + pool(0x20A0, 0x20C0) + pool(0x2100, 0x218B)),
        (2, pool(0x2190, 0x22FF) + list("\u2260\u226e\u226f")),
        (3, pool(0x3000, 0x30FF)),
        (8, pool(0x4E00, 0x9FFF)),
        (1, pool(0x3400, 0x4DBF) + pool(0xF900, 0xFAFF) + pool(0x2F800, 0x2FA1F)),
        (1, pool(0x20000, 0x2A6DF)),
        (3, pool(0xAC00, 0xD7A3) + pool(0x1100, 0x11FF)),
        (2, pool(0xFF00, 0xFFEF)),
        (2, pool(0x1F300, 0x1F64F) + pool(0x2600, 0x27BF)),
        (1, pool(0x1D400, 0x1D4FF)),
        (1, list("\u0130\u212a\u212b\u2126\u1e9e\u00df\u0149\u01c5\u1fbc")),
        (1, list("=<>") + ["=\u0338", "<\u0338", "e\u0301", "A\u030a", "\u1100\u1161\u11a8"]),
    ]
    weights = [w for w, _ in pools]
    specials = ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "[cls]", "[MAS\u212a]", "[SEP\u200b]"]

    cases = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(0, 24)):
            r = rng.random()
            if r < 0.25:
                w = rng.choice(words)
                w = w[2:] if w.startswith("##") else w
                parts.append(w.upper() if rng.random() < 0.2 else w)
                parts.append(rng.choice([" ", " ", " ", "", ", ", "\n"]))
            elif r < 0.28:
                parts.append(rng.choice(specials))
            else:
                chosen = rng.choices(pools, weights=weights)[0][1]
                parts.append("".join(rng.choice(chosen) for _ in range(rng.randint(1, 6))))
        cases.append("".join(parts))
    return cases


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--corpus", required=True, help="JSON array of input texts")
    parser.add_argument("--out", required=True)
    parser.add_argument("--random-cases", type=int, default=0)
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args(argv[1:])

    vocab = load_vocab(args.vocab)
    with open(args.corpus, encoding="utf-8") as f:
        texts = json.load(f)
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise SystemExit(f"{args.corpus}: expected a JSON array of strings")
    texts = texts + random_cases(vocab, args.random_cases, args.seed)

    tokenizers = {name: BertTokenizer(vocab, **opts) for name, opts in CONFIGS.items()}
    cases = [{"text": t, "ids": {n: tok.encode(t) for n, tok in tokenizers.items()}} for t in texts]
    out = {
        "unicode_version": unicodedata.unidata_version,
        "configs": CONFIGS,
        "cases": cases,
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True)
    os.replace(tmp, args.out)
    print(f"wrote {len(cases)} cases x {len(CONFIGS)} configs to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
