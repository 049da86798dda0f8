#!/usr/bin/python3
"""Evaluates a ppu-export directory with an independent PyTorch implementation.

usage: ppu_export_eval.py EXPORT_DIR DATASET_DIR --batches N --batch-size B [--json]

Reads EXPORT_DIR/config.json and EXPORT_DIR/model.safetensors (written by ppu-export), builds
the decoder its `architecture` describes from plain torch.nn.functional calls (no code shared
with the C++ runtime), and prints the mean next-token cross-entropy over the first N eval
batches of DATASET_DIR/val.bin, batched exactly as ppu-train's evaluation of N batches does:
row j = i*B + b of the M = N*B rows is window floor(j*W/M) of seq_len+1 tokens when M <= W =
len(val) // (seq_len+1) (evenly spread over the split), else window j mod W. With --json it
prints {"eval_loss": ..., "batches": N, "tokens": ...}.

The safetensors file is parsed here against the format's rules (8-byte little-endian header
length, JSON header, 8-byte-aligned data with every byte covered exactly once), so a file this
script accepts is one any safetensors reader accepts. Needs Debian's python3-torch.
"""

import argparse
import json
import math
import os
import struct
import sys
from typing import NamedTuple

import torch

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "I64": torch.int64}


class Evaluation(NamedTuple):
    """What --json prints, as a JSON object with these keys in this order. eval_loss is named after
    the run summary's field it reproduces (the mean of the batches' mean losses)."""

    eval_loss: float
    batches: int
    tokens: int


def load_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    if (8 + n) % 8 or 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} is not aligned or exceeds the file")
    header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    header.pop("__metadata__", None)
    data = memoryview(blob)[8 + n :]
    tensors, spans = {}, []
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = DTYPES[entry["dtype"]]
        count = math.prod(entry["shape"])
        if end - begin != count * torch.tensor([], dtype=dtype).element_size():
            raise ValueError(f"{path}: {name}: {end - begin} bytes for shape {entry['shape']} {entry['dtype']}")
        spans.append((begin, end, name))
        tensors[name] = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype).reshape(entry["shape"])
    spans.sort()
    expected = 0
    for begin, end, name in spans:
        if begin != expected:
            raise ValueError(f"{path}: {name} starts at {begin}, expected {expected} (gap or overlap)")
        expected = end
    if expected != len(data):
        raise ValueError(f"{path}: tensors cover {expected} of {len(data)} data bytes")
    return tensors


def read_val_tokens(dataset_dir):
    return read_shard(os.path.join(dataset_dir, "val.bin"))


def read_shard(path):
    """The tokens of a PPU token shard (data/token_shard.h) as int64."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != b"PPUTOKS\0":
        raise ValueError(f"{path}: not a PPU token shard")
    version, width, count, _vocab = struct.unpack("<IIQQ", blob[8:32])
    if version != 1 or width not in (2, 4):
        raise ValueError(f"{path}: version {version}, {width} bytes per token")
    dtype = torch.int16 if width == 2 else torch.int32
    tokens = torch.frombuffer(bytearray(blob[64 : 64 + count * width]), dtype=dtype).to(torch.int64)
    return tokens & 0xFFFF if width == 2 else tokens  # uint16 stored as int16


class Decoder:
    """Pre-norm decoder: tied embedding, rotary q/k (halves paired), causal softmax attention,
    a ReLU/GELU MLP of width mlp_hidden, LayerNorm, no biases in linear layers."""

    def __init__(self, arch, weights):
        self.a, self.w = arch, weights
        hd = arch["head_dim"]
        if arch["rotary"]["pairing"] != "halves" or arch["norm"]["type"] != "layernorm":
            raise ValueError(f"unsupported architecture {arch}")
        half = hd // 2
        inv = arch["rotary"]["base"] ** (-torch.arange(0, half, dtype=torch.float64) * 2.0 / hd)
        ang = torch.outer(torch.arange(arch["seq_len"], dtype=torch.float64), inv)
        ang = torch.cat([ang, ang], 1)
        self.cos, self.sin = ang.cos().float(), ang.sin().float()

    def rope(self, x):  # x: [B, h, S, hd]
        S, half = x.shape[2], x.shape[3] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * self.cos[:S] + rotated * self.sin[:S]

    def norm(self, x, prefix):
        return torch.nn.functional.layer_norm(
            x, (x.shape[-1],), self.w[prefix + ".weight"], self.w[prefix + ".bias"], self.a["norm"]["eps"]
        )

    def loss_sum(self, tokens):
        a, w = self.a, self.w
        x_in, y = tokens[:, :-1], tokens[:, 1:]
        B, S = x_in.shape
        h, hd = a["heads"], a["head_dim"]
        x = w["tok_emb.weight"][x_in]
        mask = torch.ones(S, S, dtype=torch.bool).triu(1)
        for l in range(a["layers"]):
            p = f"blocks.{l}."
            n = self.norm(x, p + "ln1")
            q, k, v = (
                n.matmul(w[p + f"attn.{m}.weight"].t()).view(B, S, h, hd).transpose(1, 2) for m in ("wq", "wk", "wv")
            )
            q, k = self.rope(q), self.rope(k)
            att = (q.matmul(k.transpose(-1, -2)) / math.sqrt(hd)).masked_fill(mask, float("-inf")).softmax(-1)
            x = x + att.matmul(v).transpose(1, 2).reshape(B, S, h * hd).matmul(w[p + "attn.wo.weight"].t())
            n = self.norm(x, p + "ln2")
            hid = n.matmul(w[p + "mlp.up.weight"].t())
            hid = torch.relu(hid) if a["activation"] == "relu" else torch.nn.functional.gelu(hid)
            x = x + hid.matmul(w[p + "mlp.down.weight"].t())
        logits = self.norm(x, "ln_f").matmul(w["tok_emb.weight"].t())
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, a["vocab"]).double(), y.reshape(-1), reduction="sum"
        ).item()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("export_dir")
    p.add_argument("dataset_dir")
    p.add_argument("--batches", type=int, required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    with open(os.path.join(args.export_dir, "config.json")) as f:
        arch = json.load(f)["architecture"]
    weights = load_safetensors(os.path.join(args.export_dir, "model.safetensors"))
    model = Decoder(arch, weights)
    val = read_val_tokens(args.dataset_dir)
    window = arch["seq_len"] + 1
    windows = len(val) // window
    if windows == 0:
        sys.exit(f"{args.dataset_dir}: val split shorter than one window of {window} tokens")
    per_batch = []
    m = args.batches * args.batch_size

    def window_of(j):
        return j * windows // m if m <= windows else j % windows

    with torch.no_grad():
        for i in range(args.batches):
            rows = [window_of(i * args.batch_size + b) for b in range(args.batch_size)]
            batch = torch.stack([val[r * window : (r + 1) * window] for r in rows])
            per_batch.append(model.loss_sum(batch) / (args.batch_size * arch["seq_len"]))
    loss = sum(per_batch) / len(per_batch)  # ppu-train: the mean of the batches' mean losses
    if args.json:
        tokens = args.batches * args.batch_size * arch["seq_len"]
        print(json.dumps(Evaluation(loss, args.batches, tokens)._asdict()))
    else:
        print(f"eval loss {loss:.6f} ppl {math.exp(loss):.4f} over {args.batches} batches of {args.batch_size}")


if __name__ == "__main__":
    main()
