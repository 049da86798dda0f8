"""ppu-export's Hugging Face format, loaded by the stock transformers API and nothing of ours.

usage: hf_export_test.py BUILD_DIR SOURCE_DIR   (run with scripts/install-hf-venv.sh's python)

A text dataset is made with `ppu-data text` from the licence texts every Debian system has
(/usr/share/common-licenses) plus a line of characters the tokenizer never saw. For PPU
(1/2 MLPs + heads, K = 4) and DDP (K = 2), each with a GELU and a ReLU model, ppu-launch trains
to a step that ends a round and ppu-export writes the model. Then, with transformers alone:
  - AutoModelForCausalLM.from_pretrained(dir) is a GPTNeoXForCausalLM whose loss on the run's
    evaluation windows equals the summary's eval_loss within FP32_LOSS_ATOL (fp32 export), and
    within the bound BF16_LOSS_BOUND states for the bf16 export of the same checkpoint;
  - AutoTokenizer.from_pretrained(dir), fast and slow, gives the ids ppu-data gave every line of
    a sample (byte fallback and literal "</s>" included), and SentencePiece's ids and decodes on
    tokenizer_parity's generated texts (runtime_process.hf_tokenizer_parity covers more models
    and settings); the config's BOS/EOS ids are the tokenizer's;
  - generate() returns new text; the model card and provenance name the round and eval loss.
Then the directory's guarantees: re-exporting the same checkpoint succeeds (idempotent), a
different one is refused with exit 2 unless --overwrite, and a sharded export (tiny
--max-shard-size) loads to the same loss. Prints "PASS hf-export" at the end, "FAIL: ..." on failure.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import sentencepiece as spm
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

BIN, SRC = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "scripts"))
sys.path.insert(0, os.path.join(SRC, "python"))
from ppu import files, summary
from ppu.exit_codes import ExitCode
from ppu_export_eval import read_shard, read_val_tokens  # shard readers; no model code
from tokenizer_parity import generated_texts, mismatches  # texts SentencePiece normalises specially
from training_run import launch_command  # the run both export tests start from

LAUNCH = os.path.join(BIN, "bin", "ppu-launch")
EXPORT = os.path.join(BIN, "bin", "ppu-export")
DATA = os.path.join(BIN, "bin", "ppu-data")
TINY = os.path.join(SRC, "configs", "tiny.yaml")
EVAL_BATCHES, BATCH, VOCAB = 6, 4, 512
# fp32: the same parameters evaluated by two implementations differ only in summation order
# (about √n·2^-24 relative per sum of n ≤ 256 terms, far less after the mean over 1536 tokens);
# the contract is 1e-5, and observed differences are ~1e-7.
FP32_LOSS_ATOL = 1e-5
ODD_LINE = "Odd: 中文 🙂 ﬁle ①  two  spaces\ttab </s> <s> <unk> literal"


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_text(path, **kw):
    with open(path, **kw) as f:
        return f.read()


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)


def make_dataset(work):
    texts = sorted(p for p in glob.glob("/usr/share/common-licenses/*") if os.path.isfile(p) and not os.path.islink(p))
    out = os.path.join(work, "data")
    r = run([DATA, "text", "--out", out, "--vocab", "400", "--val-fraction", "0.1", "--input", *texts])
    if r.returncode != 0:
        fail("ppu-data text failed:\n" + r.stdout + r.stderr)
    return out, texts


def train(work, name, nproc, sets):
    ckpt, summaries = os.path.join(work, name, "ckpt"), os.path.join(work, name, "summaries")
    r = run(
        launch_command(
            LAUNCH, TINY, nproc, DATASET, ckpt, summaries, EVAL_BATCHES, BATCH, [f"model.vocab={VOCAB}", *sets]
        )
    )
    if r.returncode != 0:
        fail(f"{name}: training failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return ckpt, summary.load(files.summary_file(summaries, 0))


def export(ckpt, out, *flags, expect=0):
    e = run([EXPORT, "--checkpoint", ckpt, "--out", out, *flags])
    if e.returncode != expect:
        fail(f"ppu-export {' '.join(flags)} -> {out} exited {e.returncode}, expected {expect}:\n{e.stdout}{e.stderr}")
    return e


def eval_windows(seq_len):
    """The rows ppu-train's evaluation reads (data_loader.h: eval_batch), as [EVAL_BATCHES*BATCH, seq_len+1]."""
    val = read_val_tokens(DATASET)
    window = seq_len + 1
    windows, m = len(val) // window, EVAL_BATCHES * BATCH
    rows = [j * windows // m if m <= windows else j % windows for j in range(m)]
    return torch.stack([val[r * window : (r + 1) * window] for r in rows])


def hf_loss(model, tokens):
    """ppu-train's eval loss: the mean over batches of each batch's mean next-token cross-entropy."""
    losses = []
    for i in range(EVAL_BATCHES):
        batch = tokens[i * BATCH : (i + 1) * BATCH]
        logits = model(input_ids=batch[:, :-1]).logits.double()
        losses.append(torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1)))
    return torch.stack(losses).mean()


def bf16_loss_bound(model32, tokens):
    """|L(θ_bf16) − L(θ)| for round-to-nearest bf16 weights, |δ_i| ≤ 2^-9·|θ_i|: to first order at
    most 2^-9·Σ|∂L/∂θ_i|·|θ_i| (the triangle inequality over the rounding errors); doubled to
    cover the second-order term, which at these |δ| is orders of magnitude smaller."""
    model32.zero_grad()
    hf_loss(model32, tokens).backward()
    first_order = sum(
        (p.grad.abs() * p.detach().abs()).sum().item() for p in model32.parameters() if p.grad is not None
    )
    model32.zero_grad()
    return 2 * 2.0**-9 * first_order


def check_model(name, out, want, tokens, activation):
    model = AutoModelForCausalLM.from_pretrained(out, torch_dtype=torch.float32)
    if type(model).__name__ != "GPTNeoXForCausalLM" or model.config.hidden_act != activation:
        fail(f"{name}: loaded {type(model).__name__} with hidden_act {model.config.hidden_act}")
    if model.get_output_embeddings().weight.data_ptr() != model.get_input_embeddings().weight.data_ptr():
        fail(f"{name}: the output head is not tied to the embedding")
    with torch.no_grad():
        got = hf_loss(model, tokens).item()
    print(f"{name}: ppu-train eval_loss {want:.7f}, transformers {got:.7f}, |diff| {abs(got - want):.2e}")
    if abs(got - want) > FP32_LOSS_ATOL:
        fail(f"{name}: transformers' loss {got} differs from ppu-train's {want} by more than {FP32_LOSS_ATOL}")
    return model, got


work = tempfile.mkdtemp(prefix="ppu-hf-export-")
DATASET, TEXTS = make_dataset(work)
tokens = eval_windows(64)
for name, nproc, sets in (
    ("ppu-gelu", 4, ["method=ppu", "slicing.mode=mlp+heads", "slicing.slices=2", "model.activation=gelu"]),
    ("ppu-relu", 4, ["method=ppu", "slicing.mode=mlp+heads", "slicing.slices=2", "model.activation=relu"]),
    ("ddp-gelu", 2, ["method=ddp", "model.activation=gelu"]),
    ("ddp-relu", 2, ["method=ddp", "model.activation=relu"]),
):
    ckpt, ran = train(work, name, nproc, sets)
    want = ran.eval_loss
    out = os.path.join(work, name, "hf")
    export(ckpt, out)
    model, got = check_model(name, out, want, tokens, name.split("-")[1])

    # The card and the provenance say where the model came from and how good it is.
    provenance = read_json(os.path.join(out, "ppu_provenance.json"))
    card = read_text(os.path.join(out, "README.md"))
    if provenance["identity"]["round"] != 3 or abs(provenance["eval"]["loss"] - want) > FP32_LOSS_ATOL:
        fail(f"{name}: provenance {provenance['identity']} / eval {provenance['eval']}, expected round 3, loss {want}")
    # contract: not a summary: ppu_provenance.json
    if provenance["param_checksum"] != ran.param_checksum:
        # contract: not a summary: ppu_provenance.json
        fail(f"{name}: exported parameters' checksum {provenance['param_checksum']} != the run's {ran.param_checksum}")
    if not card.startswith("---\nlibrary_name: transformers") or "round 3" not in card or f"{want:.4f}"[:5] not in card:
        fail(f"{name}: model card lacks front matter, round or eval loss:\n{card}")

    # bf16: the same checkpoint rounded; the loss moves by less than the rounding can explain.
    out16 = os.path.join(work, name, "hf-bf16")
    export(ckpt, out16, "--dtype", "bf16")
    auto = AutoModelForCausalLM.from_pretrained(out16, torch_dtype="auto")
    if next(auto.parameters()).dtype != torch.bfloat16:
        fail(f"{name}: the bf16 export loads as {next(auto.parameters()).dtype} with torch_dtype=auto")
    bound = bf16_loss_bound(model, tokens)
    with torch.no_grad():
        got16 = hf_loss(AutoModelForCausalLM.from_pretrained(out16, torch_dtype=torch.float32), tokens).item()
    print(f"{name}: bf16 export {got16:.7f}, |diff| {abs(got16 - got):.2e} <= bound {bound:.2e}")
    if abs(got16 - got) > bound or got16 == got:
        fail(f"{name}: the bf16 export's loss {got16} is not within {bound} of fp32's {got} (or not rounded at all)")

# The tokenizer: the ids ppu-data wrote for every line of the licence texts and the odd line
# (a dataset of those lines alone, with the run's tokenizer) are what AutoTokenizer gives.
hf_dir = os.path.join(work, "ppu-gelu", "hf")
sample = os.path.join(work, "sample.txt")
lines = [l for t in TEXTS[:3] for l in read_text(t, encoding="utf-8").split("\n")[:300] if l.strip()] + [ODD_LINE]
with open(sample, "w", encoding="utf-8") as f:
    f.write("\n\n".join(lines) + "\n")  # every line its own document
r = run(
    [
        DATA,
        "text",
        "--out",
        os.path.join(work, "sample"),
        "--tokenizer",
        os.path.join(DATASET, "tokenizer.model"),
        "--val-fraction",
        "0.5",
        "--input",
        sample,
    ]
)
if r.returncode != 0:
    fail("ppu-data text --tokenizer failed:\n" + r.stdout + r.stderr)
config = read_json(os.path.join(hf_dir, "config.json"))
eos = config["eos_token_id"]
stream = [t for part in ("train.bin", "val.bin") for t in read_shard(os.path.join(work, "sample", part)).tolist()]
segments, cur = [], []
for t in stream:
    cur.append(t)
    if t == eos:
        if len(cur) > 1:
            segments.append(tuple(cur))
        cur = []
for use_fast in (True, False):
    tok = AutoTokenizer.from_pretrained(hf_dir, use_fast=use_fast)
    if (tok.bos_token_id, tok.eos_token_id) != (config["bos_token_id"], eos):
        fail(f"tokenizer (fast={use_fast}) BOS/EOS {tok.bos_token_id}/{tok.eos_token_id} != config's")
    expected = sorted(tuple(tok(l)["input_ids"] + [eos]) for l in lines)
    if expected != sorted(segments):
        diff = sorted(set(expected) ^ set(segments))[:3]
        fail(
            f"{type(tok).__name__}: ids differ from ppu-data's on {len(set(expected) ^ set(segments))} lines, e.g. {diff}"
        )
    odd_ids = tok(ODD_LINE)["input_ids"]
    if not any(tok.convert_ids_to_tokens(i).startswith("<0x") for i in odd_ids) or eos in odd_ids:
        fail(f"{type(tok).__name__}: the odd line should use byte fallback and no special token: {odd_ids}")
    print(f"{type(tok).__name__}: {len(lines)} lines tokenised as ppu-data did")
sp = spm.SentencePieceProcessor(model_file=os.path.join(hf_dir, "tokenizer.model"))
fast, slow = AutoTokenizer.from_pretrained(hf_dir), AutoTokenizer.from_pretrained(hf_dir, use_fast=False)
bad = mismatches(sp, fast, slow, generated_texts(1, 400))
if bad:
    fail(f"{len(bad)} disagreements with SentencePiece on generated texts, e.g. {bad[:3]}")
print("fast and slow tokenizers agree with SentencePiece on 400 generated texts")

# generate() continues a prompt with new text.
tok = AutoTokenizer.from_pretrained(hf_dir)
model = AutoModelForCausalLM.from_pretrained(hf_dir)
prompt = tok("This License", return_tensors="pt").input_ids
# synced_gpus=False says what it is (one process); left unset, transformers 4.46 asks whether the
# model is FSDP-managed, importing torch.distributed.fsdp, which Debian's torch 1.13 cannot
# import under Python 3.11 (a dataclass default its metadata module declares).
generated = model.generate(prompt, max_new_tokens=20, do_sample=False, synced_gpus=False)
# The whole sequence decoded: a continuation of "▁" pieces alone (what this tiny model tends to
# generate) decodes to "" by SentencePiece's rule for leading whitespace, which the tokenizer keeps.
text = tok.decode(generated[0], skip_special_tokens=True)
if generated.shape[1] <= prompt.shape[1] or not text.startswith("This License") or text == "This License":
    fail(f"generate() returned no new tokens: {text!r}")
print(f"generate: 'This License' -> {text!r}")

# The directory's guarantees.
ckpt = os.path.join(work, "ppu-gelu", "ckpt")
export(ckpt, hf_dir)  # the same checkpoint again: idempotent
e = export(ckpt, hf_dir, "--round", "2", expect=ExitCode.CONFIG_ERROR)
if "holds a different model" not in e.stderr or "--overwrite" not in e.stderr:
    fail(f"exporting round 2 over round 3 should be refused naming --overwrite:\n{e.stderr}")
if read_json(os.path.join(hf_dir, "ppu_provenance.json"))["identity"]["round"] != 3:
    fail("a refused export changed the directory")
export(ckpt, hf_dir, "--round", "2", "--overwrite")
if read_json(os.path.join(hf_dir, "ppu_provenance.json"))["identity"]["round"] != 2:
    fail("--overwrite did not replace the model")
if glob.glob(hf_dir + ".partial-*") or glob.glob(hf_dir + ".replaced-*"):
    fail("staging directories were left behind")
sharded = os.path.join(work, "sharded")
export(ckpt, sharded, "--round", "2", "--max-shard-size", "40KB")  # the round hf_dir holds now
index = read_json(os.path.join(sharded, "model.safetensors.index.json"))
shards = sorted(set(index["weight_map"].values()))
if len(shards) < 3 or os.path.exists(os.path.join(sharded, "model.safetensors")):
    fail(f"a 40 KB shard limit should give several shards, got {shards}")
with torch.no_grad():
    a = hf_loss(AutoModelForCausalLM.from_pretrained(sharded), tokens).item()
    b = hf_loss(AutoModelForCausalLM.from_pretrained(hf_dir), tokens).item()
if a != b:
    fail(f"the sharded export evaluates to {a}, the single file to {b}")
print(f"sharded into {len(shards)} files: same loss {a:.7f}")

shutil.rmtree(work)
print("PASS hf-export")
