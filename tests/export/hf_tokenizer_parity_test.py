"""The tokenizer ppu-export writes gives SentencePiece's ids, for every SentencePiece setting it accepts.

usage: hf_tokenizer_parity_test.py BUILD_DIR SOURCE_DIR HF_TOKENIZER_EXPORT CORPUS
       (run with scripts/install-hf-venv.sh's python; CORPUS: tinyshakespeare.txt)

Models: ppu-data's own (BPE, and Unigram with --model-type, each with ppu-data's settings: byte
fallback, split digits, nmt_nfkc) on CORPUS, and models the sentencepiece package trains on
CORPUS with other normalisation and whitespace rules (no collapsing of whitespace, no dummy
prefix, identity, nfkc_cf, nmt_nfkc_cf, pieces across spaces, whitespace-only pieces). Each is
exported with HF_TOKENIZER_EXPORT (the files ppu-export writes) and loaded with
AutoTokenizer.from_pretrained, fast and slow; on tokenizer_parity's generated texts and on lines
and multi-line chunks of CORPUS both must give SentencePiece's ids, and both must decode
SentencePiece's ids to SentencePiece's decode. For ppu-data's models, ppu-data's own ids (the ids
training saw, from the C++ library) must equal the sentencepiece package's on the corpus lines
and the single-line generated texts. Settings the export cannot reproduce must be refused with a
message naming the setting. Seeded throughout. Prints "PASS hf-tokenizer-parity", or "FAIL: ...".
"""

import collections
import os
import subprocess
import sys
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2
from transformers import AutoTokenizer

BIN, SRC, TOOL, CORPUS = sys.argv[1:5]
sys.path.insert(0, os.path.join(SRC, "scripts"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ppu_export_eval import read_shard  # shard readers
from tokenizer_parity import corpus_texts, generated_texts, mismatches  # the texts and the comparison

DATA = os.path.join(BIN, "bin", "ppu-data")
SEED = 20261127
GENERATED, LINES, CHUNKS = 2500, 1500, 300

# The sentencepiece package's models, on top of TRAIN_COMMON.
TRAIN_COMMON = {"vocab_size": 600, "character_coverage": 1.0, "byte_fallback": True, "num_threads": 1, "minloglevel": 2}
SETTINGS = {
    "unigram-keep-whitespace": {"model_type": "unigram", "remove_extra_whitespaces": False},
    "bpe-identity-no-dummy-prefix": {
        "model_type": "bpe",
        "normalization_rule_name": "identity",
        "add_dummy_prefix": False,
        "split_by_whitespace": False,
    },
    "unigram-nfkc_cf-raw-whitespace": {
        "model_type": "unigram",
        "normalization_rule_name": "nfkc_cf",
        "add_dummy_prefix": False,
        "remove_extra_whitespaces": False,
        "allow_whitespace_only_pieces": True,
    },
    "bpe-nmt_nfkc_cf-split-digits": {
        "model_type": "bpe",
        "normalization_rule_name": "nmt_nfkc_cf",
        "split_digits": True,
    },
}
SMALL = {"vocab_size": 1000, "input_sentence_size": 5000}  # quick to train
# Trained, then refused by the export: (extra trainer options or a proto edit, what the message names).
REFUSED = {
    "no-byte-fallback": ({"byte_fallback": False}, "trainer_spec.byte_fallback=false"),
    "whitespace-as-suffix": ({"treat_whitespace_as_suffix": True}, "trainer_spec.treat_whitespace_as_suffix=true"),
    "user-defined-symbols": ({"user_defined_symbols": ["<sep>"]}, "trainer_spec.user_defined_symbols"),
    "char-model": ({"model_type": "char"}, "trainer_spec.model_type=CHAR"),
    "word-model": ({"model_type": "word"}, "trainer_spec.model_type=WORD"),
    "unescaped-whitespace": ("escape_whitespaces", "normalizer_spec.escape_whitespaces=false"),
    "denormalizer": ("denormalizer", "denormalizer_spec"),
    "custom-rule": ("rule_tsv", "normalizer_spec.name=user_defined"),
}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


def train_sp(prefix, **options):
    spm.set_random_generator_seed(SEED)
    spm.SentencePieceTrainer.train(input=CORPUS, model_prefix=prefix, **{**TRAIN_COMMON, **options})
    return prefix + ".model"


def ppu_data_model(work, name, *flags):
    out = os.path.join(work, name)
    r = run([DATA, "text", "--input", CORPUS, "--out", out, "--vocab", "512", *flags])
    if r.returncode != 0:
        fail(f"ppu-data text {' '.join(flags)} failed:\n{r.stdout}{r.stderr}")
    return os.path.join(out, "tokenizer.model")


def export(model, out):
    r = run([TOOL, model, out])
    if r.returncode != 0:
        fail(f"exporting {model} failed:\n{r.stderr}")


def check_parity(name, model, hf_dir, texts):
    sp = spm.SentencePieceProcessor(model_file=model)
    fast = AutoTokenizer.from_pretrained(hf_dir)
    slow = AutoTokenizer.from_pretrained(hf_dir, use_fast=False)
    for tok in (fast, slow):
        if len(tok) != sp.get_piece_size() or (tok.eos_token_id, tok.bos_token_id) != (sp.eos_id(), sp.bos_id()):
            fail(f"{name}: {type(tok).__name__} has {len(tok)} tokens, EOS/BOS {tok.eos_token_id}/{tok.bos_token_id}")
    if not fast.is_fast or slow.is_fast:
        fail(f"{name}: AutoTokenizer gave {type(fast).__name__} and {type(slow).__name__}")
    bad = mismatches(sp, fast, slow, texts)
    if bad:
        kinds = collections.Counter(kind for kind, *_ in bad)
        shown = "\n".join(
            f"  {kind} {text!r}: SentencePiece {want!r}, got {got!r}" for kind, text, want, got in bad[:6]
        )
        fail(f"{name}: {len(bad)} disagreements with SentencePiece over {len(texts)} texts {dict(kinds)}:\n{shown}")
    print(f"{name}: {type(fast).__name__} and {type(slow).__name__} agree with SentencePiece on {len(texts)} texts")


def check_ppu_data_ids(name, work, model, lines):
    """ppu-data's ids (libsentencepiece, as at training time) for every line, against the package's."""
    sample = os.path.join(work, name + "-lines.txt")
    with open(sample, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n\n".join(lines) + "\n")  # every line its own document
    out = os.path.join(work, name + "-lines")
    r = run([DATA, "text", "--out", out, "--tokenizer", model, "--val-fraction", "0.5", "--input", sample])
    if r.returncode != 0:
        fail(f"{name}: ppu-data text --tokenizer failed:\n{r.stdout}{r.stderr}")
    sp = spm.SentencePieceProcessor(model_file=model)
    eos = sp.eos_id()
    segments, cur = collections.Counter(), []
    for t in (t for part in ("train.bin", "val.bin") for t in read_shard(os.path.join(out, part)).tolist()):
        cur.append(t)
        if t == eos:
            if len(cur) > 1:
                segments[tuple(cur)] += 1
            cur = []
    expected = collections.Counter((*sp.encode(line), eos) for line in lines)
    expected.pop((eos,), None)
    if expected != segments:
        diff = list((expected - segments).items())[:3]
        fail(f"{name}: ppu-data's ids differ from the sentencepiece package's, e.g. {diff}")
    print(f"{name}: ppu-data's ids equal the sentencepiece package's on {len(lines)} lines")


def refused_model(work, name, change):
    prefix = os.path.join(work, "refused-" + name)
    if isinstance(change, dict):
        options = {"model_type": "bpe", **SMALL, **change}
        if options["model_type"] == "char":
            options["hard_vocab_limit"] = False  # as many pieces as characters
        return train_sp(prefix, **options)
    if change == "rule_tsv":
        rules = prefix + ".tsv"
        with open(rules, "w", encoding="utf-8") as f:
            f.write("41\t61\n")  # A -> a
        return train_sp(prefix, model_type="bpe", normalization_rule_tsv=rules, **SMALL)
    model = sentencepiece_model_pb2.ModelProto()
    with open(train_sp(prefix, model_type="bpe", **SMALL), "rb") as f:
        model.ParseFromString(f.read())
    if change == "escape_whitespaces":
        model.normalizer_spec.escape_whitespaces = False
    else:
        model.denormalizer_spec.CopyFrom(model.normalizer_spec)
    with open(prefix + ".model", "wb") as f:
        f.write(model.SerializeToString())
    return prefix + ".model"


def main():
    texts = generated_texts(SEED, GENERATED)
    corpus = corpus_texts(CORPUS, SEED, LINES, CHUNKS)
    with tempfile.TemporaryDirectory(prefix="hf-tokenizer-parity-") as work:
        models = {
            "ppu-data-bpe": ppu_data_model(work, "ppu-data-bpe"),
            "ppu-data-unigram": ppu_data_model(work, "ppu-data-unigram", "--model-type", "unigram"),
        }
        for name, options in SETTINGS.items():
            models[name] = train_sp(os.path.join(work, name), **options)
        for name, model in models.items():
            hf_dir = os.path.join(work, name + "-hf")
            export(model, hf_dir)
            check_parity(name, model, hf_dir, texts + corpus)
        one_line = [t for t in texts + corpus if t.strip() and "\n" not in t and "\r" not in t]
        for name in ("ppu-data-bpe", "ppu-data-unigram"):
            check_ppu_data_ids(name, work, models[name], one_line)
        for name, (change, setting) in REFUSED.items():
            model = refused_model(work, name, change)
            r = run([TOOL, model, os.path.join(work, "refused-" + name + "-hf")])
            if r.returncode == 0 or setting not in r.stderr:
                fail(f"{name}: the export should be refused naming {setting}; exit {r.returncode}: {r.stderr}")
            print(f"{name}: refused ({setting})")
    print("PASS hf-tokenizer-parity")


if __name__ == "__main__":
    main()
