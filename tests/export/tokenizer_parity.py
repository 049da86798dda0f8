"""The exported tokenizer against SentencePiece itself: texts to try and the comparison.

generated_texts() draws strings from groups of characters that SentencePiece's normalisation
treats specially — whitespace of every kind and in runs (newlines, CR LF, tabs, NBSP, U+0085,
leading and trailing), characters NFKC changes (ligatures, full-width and circled forms,
half-width katakana with voicing marks, decomposed accents and Hangul jamo, a compatibility
character before a combining mark), multi-byte text (CJK, scripts with combining vowels, emoji
with modifiers, ZWJ sequences and flags), control characters and literal piece names ("<s>",
"<0x41>", "▁") — plus fixed edge cases, the empty string among them. corpus_texts() samples
lines and multi-line chunks of a text file. mismatches() compares, for each text, the ids of
AutoTokenizer's fast and slow tokenizers with SentencePiece's encode, and both decodes of
SentencePiece's ids with SentencePiece's decode. Seeded: the same seed gives the same texts.
"""

import random

WHITESPACE = [" ", "  ", "   ", "\t", "\t\t", " \t ", "\n", "\n\n", " \n", "\r\n", "\r", "\x0b", "\x0c", "\x85"]
WHITESPACE += ["\u00a0", "\u2009", "\u3000", "\u2028", "\u200b", "\ufeff", "\u1680"]
WORDS = ["ROMEO", "But", "soft", "what", "light", "the", "a", "I", "thee", "42", "7", "2026", "3.14"]
WORDS += [".", ",", ";", ":", "?!", "'", '"', "-", "(", ")", "&", "~", "_", "[x]"]
NFKC_CHANGED = ["ﬁ", "ﬂ", "ﬃ", "Ａ", "ｂ", "Ｚｚ", "１２", "①", "½", "Ⅻ", "™", "㎏", "µ", "ſ", "ǅ", "ŉ", "¨", "´"]
NFKC_CHANGED += ["ｶﾞ", "ﾊﾟ", "ｱｲｳ", "ｶ\u3099", "e\u0301", "A\u0302\u0300", "o\u031b\u0323", "\u1100\u1161\u11a8"]
NFKC_CHANGED += ["ﬁ\u0301", "Ａ\u0301", "～", "ẞ", "İ", "\u2126", "𝔘𝔫𝔦", "ｸﾞﾗｽ", "\u0fb2\u0f80"]
MULTIBYTE = ["é", "ü", "ñ", "—", "…", "£", "€", "¥", "中文", "日本語", "한국어", "Ωμέγα", "русский", "العربية"]
MULTIBYTE += ["नमस्ते", "ภาษาไทย", "🙂", "👍🏽", "👨\u200d👩\u200d👧", "🇺🇸", "❤️", "1️⃣", "𝄞", "\U0010fffd"]
ODD = [
    "\x00",
    "\x01",
    "\x1f",
    "\x7f",
    "<s>",
    "</s>",
    "<unk>",
    "<pad>",
    "<0x41>",
    "<0x0A>",
    "▁",
    "▁▁",
    "\ufdd0",
    "\ufdd3",
]
GROUPS = [WHITESPACE, WORDS, WORDS, NFKC_CHANGED, MULTIBYTE, ODD]

FIXED = ["", " ", "  ", "\n", "\t", "\r\n", " \n\t ", "x", " x", "x ", "  x  ", "\u3000x\u3000", "\x01", " \x01 "]
FIXED += ["ROMEO: But soft, what light", " leading space", "ROMEO:\nBut soft", "two  spaces", "tab\there"]
FIXED += ["trailing space ", "ﬁ ligature", "Zqx 42 £ — ünïcödé\tand  two  spaces", "line\n\nbreak\n"]


def generated_texts(seed, count):
    """FIXED, then `count` random compositions of the groups' atoms."""
    rng = random.Random(seed)
    texts = list(FIXED)
    for _ in range(count):
        atoms = [rng.choice(rng.choice(GROUPS)) for _ in range(rng.randint(1, 10))]
        joiner = rng.choice(["", "", " ", "\n", rng.choice(WHITESPACE)])
        text = joiner.join(atoms)
        if rng.random() < 0.3:
            text = rng.choice(WHITESPACE) + text
        if rng.random() < 0.3:
            text += rng.choice(WHITESPACE)
        texts.append(text)
    return texts


def corpus_texts(path, seed, lines, chunks):
    """`lines` lines of the file and `chunks` runs of 2 to 12 consecutive lines ("\\n"-joined)."""
    with open(path, encoding="utf-8") as f:
        all_lines = f.read().split("\n")
    rng = random.Random(seed)
    texts = rng.sample(all_lines, lines)
    for _ in range(chunks):
        i = rng.randrange(len(all_lines))
        texts.append("\n".join(all_lines[i : i + rng.randint(2, 12)]))
    return texts


def mismatches(sp, fast, slow, texts):
    """(what, text, SentencePiece's, the tokenizer's) for every disagreement."""
    out = []
    for text in texts:
        ids = sp.encode(text)
        decoded = sp.decode(ids)
        for name, tok in (("fast", fast), ("slow", slow)):
            got = tok(text)["input_ids"]
            if got != ids:
                out.append((name + " ids", text, ids, got))
            back = tok.decode(ids)
            if back != decoded:
                out.append((name + " decode", text, decoded, back))
    return out
