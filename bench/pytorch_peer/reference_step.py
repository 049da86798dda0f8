#!/usr/bin/python3
"""A plain PyTorch (Python) implementation of ppu-train's inner step, for side-by-side timing.

Same architecture as runtime/engine/model/transformer.cpp (tied embedding, rotary embeddings, pre-norm
blocks, causal multi-head attention written out as matmul/mask/softmax/matmul, a 4d ReLU MLP,
no biases), the same slice plan (rank 0's slice of N: rows of Q/K/V and of the MLP's up
projection, columns of its down projection), the same partial backward as a custom autograd
Function (full input gradient, weight gradient of the trainable slice only, the slice a view of
the full weight), and the same AdamW with gradient clipping on the trainable tensors. It is
written the way a PyTorch user would write it, not tuned against our C++.

usage: reference_step.py --layers L --d-model D --heads H --vocab V --seq-len S --batch B
                         --slices N --mode {none,mlp,mlp+heads} --steps T --warmup W --threads P
Prints one JSON line: median and mean seconds per step after W warm-up steps, the BLAS it
loaded, the OpenBLAS core (kernels) it runs and its thread count.
"""

import argparse
import ctypes
import json
import math
import statistics
import time

import torch


class PartialLinearFunction(torch.autograd.Function):
    """y = x W^T; dL/dx with the full W; dL/dW only for W[begin:end] along `dim`."""

    @staticmethod
    def forward(ctx, x, trainable, full, dim, begin, end):
        ctx.save_for_backward(x)
        ctx.full, ctx.dim, ctx.begin, ctx.end = full, dim, begin, end
        return x.matmul(full.t())

    @staticmethod
    def backward(ctx, gy):
        (x,) = ctx.saved_tensors
        gx = gy.matmul(ctx.full)
        x2, g2 = x.reshape(-1, x.shape[-1]), gy.reshape(-1, gy.shape[-1])
        if ctx.dim == 0:
            gw = g2[:, ctx.begin : ctx.end].t().mm(x2)
        else:
            gw = g2.t().mm(x2[:, ctx.begin : ctx.end])
        return gx, gw, None, None, None, None


class Weight:
    """A full weight and its trainable part (a view of the same storage)."""

    def __init__(self, full, dim=None, begin=0, end=0):
        self.full, self.dim, self.begin, self.end = full, dim, begin, end
        if dim is None:
            self.trainable = full.requires_grad_(True)
        else:
            self.trainable = full.narrow(dim, begin, end - begin).detach().requires_grad_(True)

    def __call__(self, x):
        if self.dim is None:
            return x.matmul(self.full.t())
        return PartialLinearFunction.apply(x, self.trainable, self.full, self.dim, self.begin, self.end)


class Model:
    def __init__(self, a):
        torch.manual_seed(0)
        d, f, n = a.d_model, 4 * a.d_model, a.slices
        self.heads, self.hd = a.heads, d // a.heads

        def sliced(shape, dim, extent, std, on):
            w = torch.randn(*shape) * std
            return Weight(w, dim, 0, extent // n) if on and n > 1 else Weight(w)

        resid = 0.02 / math.sqrt(2 * a.layers)
        self.emb = Weight(torch.randn(a.vocab, d) * 0.02)
        self.blocks = []
        for _ in range(a.layers):
            heads_sliced = a.mode == "mlp+heads"
            mlp_sliced = a.mode != "none"
            self.blocks.append(
                {
                    "ln1": (torch.ones(d, requires_grad=True), torch.zeros(d, requires_grad=True)),
                    "q": sliced((d, d), 0, d, 0.02, heads_sliced),
                    "k": sliced((d, d), 0, d, 0.02, heads_sliced),
                    "v": sliced((d, d), 0, d, 0.02, heads_sliced),
                    "o": Weight(torch.randn(d, d) * resid),
                    "ln2": (torch.ones(d, requires_grad=True), torch.zeros(d, requires_grad=True)),
                    "up": sliced((f, d), 0, f, 0.02, mlp_sliced),
                    "down": sliced((d, f), 1, f, resid, mlp_sliced),
                }
            )
        self.lnf = (torch.ones(d, requires_grad=True), torch.zeros(d, requires_grad=True))
        half = self.hd // 2
        inv_freq = 10000.0 ** (-torch.arange(0, half, dtype=torch.float64) * 2.0 / self.hd)
        angles = torch.outer(torch.arange(a.seq_len, dtype=torch.float64), inv_freq)
        angles = torch.cat([angles, angles], 1)
        self.cos, self.sin = angles.cos().float(), angles.sin().float()
        self.mask = torch.ones(a.seq_len, a.seq_len, dtype=torch.bool).triu(1)

    def parameters(self):
        ps = [self.emb.trainable]
        for b in self.blocks:
            ps += [
                *b["ln1"],
                b["q"].trainable,
                b["k"].trainable,
                b["v"].trainable,
                b["o"].trainable,
                *b["ln2"],
                b["up"].trainable,
                b["down"].trainable,
            ]
        return ps + list(self.lnf)

    def rotate(self, x):
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * self.cos + rotated * self.sin

    def attention(self, x, b):
        B, S, D = x.shape

        def split(t):
            return t.view(B, S, self.heads, self.hd).transpose(1, 2)

        q, k, v = self.rotate(split(b["q"](x))), self.rotate(split(b["k"](x))), split(b["v"](x))
        att = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
        att = torch.softmax(att.masked_fill(self.mask, float("-inf")), -1)
        return b["o"](att.matmul(v).transpose(1, 2).reshape(B, S, D))

    def loss(self, tokens):
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        d = self.emb.full.shape[1]
        x = torch.nn.functional.embedding(inputs, self.emb.full)
        for b in self.blocks:
            x = x + self.attention(torch.nn.functional.layer_norm(x, (d,), *b["ln1"]), b)
            h = torch.relu(b["up"](torch.nn.functional.layer_norm(x, (d,), *b["ln2"])))
            x = x + b["down"](h)
        x = torch.nn.functional.layer_norm(x, (d,), *self.lnf)
        logits = x.matmul(self.emb.full.t())
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def loaded_blas():
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "/libblas.so" in path or "/libopenblas" in path:
                return path
    return ""


def openblas_core(path):
    """The kernels OpenBLAS runs here (openblas_get_corename), "" when the BLAS is not OpenBLAS."""
    try:
        get = ctypes.CDLL(path).openblas_get_corename
    except (OSError, AttributeError):
        return ""
    get.restype = ctypes.c_char_p
    return get().decode()


def main():
    p = argparse.ArgumentParser()
    for name, default in [
        ("layers", 6),
        ("d-model", 384),
        ("heads", 8),
        ("vocab", 4096),
        ("seq-len", 256),
        ("batch", 8),
        ("slices", 1),
        ("steps", 12),
        ("warmup", 2),
        ("threads", 2),
    ]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--mode", default="none", choices=["none", "mlp", "mlp+heads"])
    p.add_argument("--lr", type=float, default=3e-4)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = Model(a)
    params = model.parameters()
    decay = [t for t in params if t.dim() >= 2]
    no_decay = [t for t in params if t.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=a.lr,
        betas=(0.9, 0.99),
        eps=1e-8,
    )
    gen = torch.Generator().manual_seed(1)
    times, phases = [], {}
    for step in range(a.warmup + a.steps):
        tokens = torch.randint(0, a.vocab, (a.batch, a.seq_len + 1), generator=gen)
        start = time.perf_counter()
        loss = model.loss(tokens)
        t_forward = time.perf_counter()
        loss.backward()
        t_backward = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        end = time.perf_counter()
        if step >= a.warmup:
            times.append(end - start)
            for name, t in [
                ("forward", t_forward - start),
                ("backward", t_backward - t_forward),
                ("optimizer", end - t_backward),
            ]:
                phases.setdefault(name, []).append(t)
    print(
        json.dumps(
            {
                "median_step_seconds": statistics.median(times),
                "mean_step_seconds": statistics.mean(times),
                "phases_median": {k: statistics.median(v) for k, v in phases.items()},
                "steps": len(times),
                "blas": loaded_blas(),
                "core": openblas_core(loaded_blas()),
                "threads": torch.get_num_threads(),
                "torch": torch.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
