#!/usr/bin/env python3
"""The texts every tokenizer's parity test runs on (scripts/reference_hf_tokenizers.py), seeded.

    texts(specials, seed) -> list of str

Three parts, about 2,400 texts in all:
  * written cases: whitespace of every kind, controls, accents composed and decomposed,
    ligatures and full-width forms, Turkish dotted I, final sigma, Indic conjuncts, Thai, Arabic
    and Hebrew with their marks, emoji sequences (ZWJ families, skin tones, flags, keycaps),
    zero-width and bidi marks, code, URLs, numbers, contractions, a very long word, and the
    tokenizers' own markers typed as text (U+2581, U+0120, <0x41>, ##);
  * the project's real texts (tests/data/real_texts.json, tests/data/wordpiece_corpus.json);
  * 2,000 random texts of words drawn from 30 scripts, joined by every kind of separator, with
    combining marks, emoji, controls, digits, long words and the tokenizer's special tokens
    (`specials`) mixed in, and 30 texts past any model's length (long paragraphs and random
    runs of 3,000 to 12,000 characters).

Characters come from Unicode 14.0 (Python 3.11's unicodedata) and stop at what all of HF
tokenizers' tables agree on: characters assigned after 14.0 are left out (docs/tokenizers.md,
"Unicode versions"). Only the standard library is needed.
"""

import json
import os
import random
import unicodedata

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Word alphabets: (name, list of code point ranges). Only assigned characters are drawn.
_SCRIPTS = [
    ("latin", [(0x61, 0x7A), (0x41, 0x5A)]),
    ("latin-ext", [(0xC0, 0x24F), (0x1E00, 0x1EFF)]),
    ("greek", [(0x391, 0x3C9), (0x1F00, 0x1FFC)]),
    ("cyrillic", [(0x400, 0x4FF)]),
    ("armenian", [(0x531, 0x587)]),
    ("hebrew", [(0x5D0, 0x5EA), (0x591, 0x5C7)]),
    ("arabic", [(0x621, 0x64A), (0x64B, 0x65F), (0x671, 0x6D3), (0xFB50, 0xFDFF), (0xFE70, 0xFEFC)]),
    ("syriac", [(0x710, 0x74F)]),
    ("thaana", [(0x780, 0x7B1)]),
    ("devanagari", [(0x900, 0x97F)]),
    ("bengali", [(0x980, 0x9FE)]),
    ("gurmukhi", [(0xA00, 0xA76)]),
    ("tamil", [(0xB82, 0xBFA)]),
    ("telugu", [(0xC00, 0xC7F)]),
    ("malayalam", [(0xD00, 0xD7F)]),
    ("sinhala", [(0xD81, 0xDF4)]),
    ("thai", [(0xE01, 0xE5B)]),
    ("lao", [(0xE81, 0xEDF)]),
    ("tibetan", [(0xF00, 0xFDA)]),
    ("myanmar", [(0x1000, 0x109F)]),
    ("georgian", [(0x10A0, 0x10FF)]),
    ("hangul", [(0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3131, 0x318E)]),
    ("ethiopic", [(0x1200, 0x137C)]),
    ("cherokee", [(0x13A0, 0x13F5)]),
    ("khmer", [(0x1780, 0x17F9)]),
    ("mongolian", [(0x1820, 0x1878)]),
    ("kana", [(0x3041, 0x3096), (0x30A1, 0x30FA), (0xFF66, 0xFF9D)]),
    ("cjk", [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0xF900, 0xFAFF)]),
    ("symbols", [(0x2000, 0x2BFF), (0x3000, 0x303F), (0xFF01, 0xFF5E), (0x1D400, 0x1D7FF)]),
    ("historic", [(0x10300, 0x1034A), (0x10400, 0x1044F), (0x13000, 0x1342E), (0x1F100, 0x1F1FF)]),
]

_COMBINING = [0x300, 0x301, 0x302, 0x303, 0x308, 0x30A, 0x316, 0x323, 0x327, 0x328, 0x331,
              0x345, 0x35C, 0x361, 0x489, 0x591, 0x5B0, 0x64B, 0x651, 0x93C, 0x94D, 0xE31,
              0xE48, 0x1AB0, 0x1DC0, 0x20D0, 0x20E3, 0x302A, 0x3099, 0xFE20, 0x1D165]
_EMOJI = ["😀", "🥰", "🫠", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "🇯🇵", "1️⃣", "❤️", "☺️", "✌🏿",
          "🧑🏻‍💻", "🐈‍⬛", "👩🏾‍🦰", "🫶🏼", "🧗‍♀️", "⚽", "🎉", "💯", "🔥", "🤖", "🙏", "😂"]
_CONTROLS = ["\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f", "\x85",
             "\x9f", "\u00ad", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a",
             "\u202e", "\u2060", "\u2066", "\u2069", "\ufeff", "\ufffd", "\ufff9", "\U000e0001",
             "\U000e0041", "\ue000", "\U000f0000", "\ufdd0", "\uffff", "\u0378"]
_SPACES = [" ", " ", " ", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "\u00a0", "\u1680",
           "\u2002", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
           " \t ", "\x0c", "\x0b"]
_PUNCT = [".", ",", "!", "?", ";", ":", "-", "--", "...", "'", "\"", "(", ")", "[", "]", "{",
          "}", "/", "\\", "@", "#", "$", "%", "^", "&", "*", "_", "+", "=", "<", ">", "|", "~",
          "`", "«", "»", "“", "”", "‘", "’", "—", "–", "…", "·", "。", "、", "！", "？", "「",
          "」", "¿", "¡", "§", "¶", "†", "•", "‰", "′", "؟", "،", "।", "॥", "๏", "፣"]

_WRITTEN = [
    "", " ", "   ", "\t", "\n", "\r\n", "\u00a0", "\u3000", " \n\t ", "a", "A", "I", ".", "!!!",
    "Hello, world!", "hello world", "  leading and trailing spaces  ", "two  spaces", "tab\tseparated",
    "new\nline", "carriage\r\nreturn", "don't", "I'm", "we've", "they're", "it's", "y'all'd've",
    "DON'T", "IT'S", "\u017fs", "O'Neil's", "naïve café résumé", "nai\u0308ve cafe\u0301",
    "Ångström", "A\u030angstro\u0308m", "ﬁne ﬂour ﬃ", "ＡＢＣ１２３ｘｙｚ", "①②③ ⑴⑵ ¹²³ ½ ¼",
    "İstanbul ISTANBUL ıi İI", "Straße STRASSE ß ẞ", "ΣΑΣ ΌΣΟΣ σας ὈΔΥΣΣΕΎΣ", "ǅemal ǈ ǋ",
    "क्षत्रिय हिन्दी में", "সংস্কৃত ভাষা", "ภาษาไทยใช้งาน", "العَرَبِيَّة لُغَة", "עִבְרִית",
    "日本語のテキストです。", "中文文本，标点符号！", "한국어 텍스트입니다", "ｶﾀｶﾅ ﾊﾝｶｸ", "Ελληνικά κείμενα",
    "Русский текст, ЁЖИК ёжик", "Հայերեն", "ქართული", "አማርኛ", "ᏣᎳᎩ", "ᠮᠣᠩᠭᠣᠯ", "ཀ་ཁ་ག",
    "👨‍👩‍👧‍👦 family", "👍🏽👍🏿", "🇫🇷🇩🇪🇯🇵", "1️⃣2️⃣#️⃣", "🏳️‍🌈", "a😀b", "😀😀😀",
    "zero\u200bwidth", "joi\u200dner", "non\u200cjoiner", "\ufeffBOM at start", "soft\u00adhyphen",
    "rtl \u202eevil\u202c text", "\u2066isolate\u2069", "ctrl\x00nul", "bell\x07", "esc\x1b[0m",
    "del\x7f", "c1\x85next\x9f", "\ufffdreplacement", "private \ue000\uf8ff", "\U000f0000plane",
    "noncharacter \ufdd0 \uffff", "unassigned \u0378", "e\u0301\u0316\u0300 stacked marks",
    "a\u0316\u0301 vs a\u0301\u0316", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334",
    "x" * 100, "y" * 101, "z" * 150, "supercalifragilisticexpialidocious" * 5,
    "https://example.com/path?query=1&x=y#frag", "user@example.org", "C:\\Program Files\\x",
    "def f(x):\n    return x ** 2  # square", "for (int i = 0; i < n; ++i) { a[i] += b[i]; }",
    "<html><body>Hi</body></html>", "{\"key\": [1, 2, 3]}", "SELECT * FROM t WHERE x = 'y';",
    "3.14159 2,718 1e-9 -42 +7 1,000,000 0x1F 007", "12345678901234567890", "٠١٢٣٤٥٦٧٨٩ ०१२३",
    "$100 €50 £20 ¥1000 ₹500 ₿", "50% off!!! ???", "...", "--", "— – -", "«quoted» “curly” ‘single’",
    "x² + y³ = z⁴", "∀x∈ℝ: x²≥0 ∑∫∂√∞", "→ ← ↑ ↓ ⇒ ⇔", "♠♣♥♦ ★☆", "℃ ℉ № ™ ©®",
    "\u2581already\u2581meta\u2581spaced", "\u0120G\u0120dot \u010a", "<0x41><0xE2>", "##ing ##s",
    "[CLS] [SEP] [MASK] [PAD] [UNK]", "<s> </s> <pad> <unk> <mask>", "<|endoftext|><|im_start|>",
    "[cls] [Sep] <S> <MASK>", "a[SEP]b", "x<mask>y", " <mask> ", "text <mask>", "<mask>",
    "<s>", "</s>", "<<s>>", "<|endoftext|>", "<|im_start|>user\nhi<|im_end|>", "<think>x</think>",
    "ﾟ･✿ヾ╲(｡◕‿◕｡)╱✿･ﾟ", "(╯°□°)╯︵ ┻━┻", "¯\\_(ツ)_/¯", "ʕ•ᴥ•ʔ", "ಠ_ಠ",
    "Ⅻ ⅻ Ⅳ", "㍿ ㌀ ㋿", "ｱｲｳｴｵ", "ㄱㄴㄷ ㅏㅑㅓ", "각 가\u11a8 \u1100\u1161\u11a8",
    "\u0958\u0959 \u095a", "\u09dc \u09dd", "\u0f43 \u0f4d", "\u2126 \u212a \u212b",
    "\u1e9b\u0323", "\u0344 \u0374 \u037e \u0387", "\u2000\u2001\u2002\u2003", "\ufb1d \ufb1f",
]


def _assigned(cp):
    ch = chr(cp)
    return unicodedata.category(ch) not in ("Cn", "Cs")


def _alphabets():
    out = []
    for name, ranges in _SCRIPTS:
        chars = [chr(cp) for lo, hi in ranges for cp in range(lo, hi + 1) if _assigned(cp)]
        out.append((name, chars))
    return out


def _random_word(rng, alphabet):
    n = rng.choice([1, 1, 2, 3, 3, 4, 5, 6, 7, 8, 10, 12, 16])
    if rng.random() < 0.01:
        n = rng.randint(90, 260)  # past WordPiece's 100 characters, and unknown to every vocab
    word = "".join(rng.choice(alphabet) for _ in range(n))
    if rng.random() < 0.08:
        at = rng.randint(0, len(word))
        marks = "".join(chr(rng.choice(_COMBINING)) for _ in range(rng.randint(1, 3)))
        word = word[:at] + marks + word[at:]
    if rng.random() < 0.1:
        word = word.capitalize() if rng.random() < 0.5 else word.upper()
    return word


def _random_text(rng, alphabets, specials, real_words):
    home = rng.choice(alphabets)[1]
    parts = []
    for _ in range(rng.randint(1, 40)):
        r = rng.random()
        if r < 0.35:
            parts.append(rng.choice(real_words))
        elif r < 0.75:
            alphabet = home if rng.random() < 0.7 else rng.choice(alphabets)[1]
            parts.append(_random_word(rng, alphabet))
        elif r < 0.82:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 12))))
        elif r < 0.88:
            parts.append(rng.choice(_PUNCT) * rng.choice([1, 1, 1, 2, 3]))
        elif r < 0.92:
            parts.append(rng.choice(_EMOJI))
        elif r < 0.95:
            parts.append(rng.choice(_CONTROLS))
        elif r < 0.98 and specials:
            parts.append(rng.choice(specials))
        else:
            parts.append(rng.choice(_WRITTEN))
    text = ""
    for i, part in enumerate(parts):
        if i > 0:
            r = rng.random()
            if r < 0.7:
                text += " "
            elif r < 0.85:
                text += rng.choice(_SPACES)
            elif r < 0.95:
                text += ""  # glued: "word," "a[SEP]b"
            else:
                text += rng.choice(_PUNCT)
        text += part
    if rng.random() < 0.1:
        text = rng.choice(_SPACES) + text
    if rng.random() < 0.1:
        text += rng.choice(_SPACES)
    return text


def _real_texts():
    out = []
    with open(os.path.join(_ROOT, "tests", "data", "real_texts.json"), encoding="utf-8") as f:
        for key, value in json.load(f).items():
            if not key.startswith("_"):
                out += [t for t in value if isinstance(t, str)]
    with open(os.path.join(_ROOT, "tests", "data", "wordpiece_corpus.json"), encoding="utf-8") as f:
        out += [t for t in json.load(f) if isinstance(t, str)]
    return out


def texts(specials=(), seed=0, random_count=2000, long_count=30):
    """The corpus: written cases, real texts, random texts and long texts, in that order."""
    rng = random.Random(seed)
    alphabets = _alphabets()
    real = _real_texts()
    real_words = [w for t in real for w in t.split() if w]
    out = list(_WRITTEN) + real
    out += [_random_text(rng, alphabets, list(specials), real_words) for _ in range(random_count)]
    paragraphs = [t for t in real if len(t) > 200] or real
    for i in range(long_count):
        if i % 2 == 0:
            text = " ".join(rng.choice(paragraphs) for _ in range(rng.randint(10, 40)))
        else:
            text = ""
            while len(text) < rng.randint(3000, 12000):
                text += _random_text(rng, alphabets, list(specials), real_words) + " "
        out.append(text)
    return out


if __name__ == "__main__":
    corpus = texts()
    print(f"{len(corpus)} texts, {sum(len(t) for t in corpus)} characters")
