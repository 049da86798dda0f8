#!/usr/bin/python3
"""A plain PyTorch (Python) implementation of ppu-train's inner step, for side-by-side timing.

usage: reference_step.py --layers L --d-model D --heads H --vocab V --seq-len S --batch B
                         --slices N --mode {none,mlp,mlp+heads} --steps T --warmup W --threads P
                         [--lr LR] [--device {cpu,cuda}] [--dtype {fp32,bf16}] [--recompute]
                         [--grad-clip C] [--activation {relu,gelu}]
Prints one JSON line: median and mean seconds per step after W warm-up steps, the median of each
phase (forward, backward, optimizer), the BLAS it loaded, the OpenBLAS core (kernels) it runs and
its thread count, torch's version; and device, dtype, recompute, tokens_per_second (B·S / median),
the loss of every step (warm-up included) and, on CUDA, the GPU and its peak allocated bytes.
The defaults (cpu, fp32, no recompute, clipping at 1.0, relu) are the step bench/pytorch_peer/run.py
times against ppu-train on CPU with Debian's torch 1.13.

Same architecture as runtime/engine/model/transformer.cpp (tied embedding, rotary embeddings, pre-norm
blocks with LayerNorm weight and bias, causal multi-head attention, a 4d MLP with ReLU or exact
GELU — `model.activation`, relu by default and in every preset, gpt3-xl included —, no biases in
the linear layers), the same slice plan (rank 0's slice of N: rows of Q/K/V and of the MLP's up
projection, columns of its down projection), the same partial backward as a custom autograd
Function (full input gradient, weight gradient of the trainable slice only, the slice a view of
the full weight), and the same AdamW (decay on matrices and the embedding, not on norms) with
optional gradient clipping on the trainable tensors. It is written the way a PyTorch user would
write it, not tuned against our C++: Q, K and V are three GEMMs (the runtime stacks them into one).

Attention: on CUDA (torch 2.x) torch.nn.functional.scaled_dot_product_attention(is_causal=True),
as the runtime's at::scaled_dot_product_attention there; elsewhere matmul, causal mask, softmax,
matmul written out (torch 1.13 has no SDPA).

--dtype bf16 is the runtime's mixed precision (train.dtype: bf16, docs/RUNTIME.md "Mixed
precision"): every working weight (embedding, Q/K/V/O, MLP, LayerNorm weights and biases), the
rotary tables, the activations and the gradients are bf16; fp32 master copies exist for the
trainable tensors only (for a sliced weight, its trainable slice only); after the backward each
master's .grad is its bf16 gradient as fp32, clipping (when --grad-clip > 0) and AdamW
(fused=True on CUDA where torch has it, foreach=True otherwise) run on the masters, and the
updated masters are copied back, rounded, into the bf16 working weights (for a slice, through
its view). Differences from the runtime, both what a PyTorch user would write: the loss computes
the tied head's logits as one bf16 GEMM and takes cross_entropy(logits.float(), ...) (the runtime's
chunked_cross_entropy makes the same fp32 logits chunk by chunk and never holds all of them, and
accumulates the head's weight gradient in fp32); and all masters' fp32 gradients exist at once
(the runtime makes one at a time).

--recompute: each transformer block (both LayerNorms, attention and MLP, as train.recompute)
runs under torch.utils.checkpoint.checkpoint(use_reentrant=False): its activations are not kept,
the backward runs the block again. The embedding, final LayerNorm and loss are not recomputed.

Timing: each step's clock starts after its batch is drawn (on a CPU generator, then copied to the
device): the batch is outside the timed region on every device. On CUDA every phase boundary
synchronises the device before reading the clock.
"""

import argparse
import ctypes
import inspect
import json
import math
import statistics
import time

import torch
import torch.utils.checkpoint


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
        dev, dt = torch.device(a.device), DTYPES[a.dtype]
        self.recompute = a.recompute
        self.activation = torch.relu if a.activation == "relu" else torch.nn.functional.gelu
        self.sdpa = dev.type == "cuda" and hasattr(torch.nn.functional, "scaled_dot_product_attention")

        def randn(shape, std):  # made on the device in the working dtype
            return torch.randn(*shape, device=dev, dtype=dt).mul_(std)

        def sliced(shape, dim, extent, std, on):
            w = randn(shape, std)
            return Weight(w, dim, 0, extent // n) if on and n > 1 else Weight(w)

        def norm():
            return (
                torch.ones(d, device=dev, dtype=dt, requires_grad=True),
                torch.zeros(d, device=dev, dtype=dt, requires_grad=True),
            )

        resid = 0.02 / math.sqrt(2 * a.layers)
        self.emb = Weight(randn((a.vocab, d), 0.02))
        self.blocks = []
        for _ in range(a.layers):
            heads_sliced = a.mode == "mlp+heads"
            mlp_sliced = a.mode != "none"
            self.blocks.append(
                {
                    "ln1": norm(),
                    "q": sliced((d, d), 0, d, 0.02, heads_sliced),
                    "k": sliced((d, d), 0, d, 0.02, heads_sliced),
                    "v": sliced((d, d), 0, d, 0.02, heads_sliced),
                    "o": Weight(randn((d, d), resid)),
                    "ln2": norm(),
                    "up": sliced((f, d), 0, f, 0.02, mlp_sliced),
                    "down": sliced((d, f), 1, f, resid, mlp_sliced),
                }
            )
        self.lnf = norm()
        half = self.hd // 2
        inv_freq = 10000.0 ** (-torch.arange(0, half, dtype=torch.float64) * 2.0 / self.hd)
        angles = torch.outer(torch.arange(a.seq_len, dtype=torch.float64), inv_freq)
        angles = torch.cat([angles, angles], 1)
        # Tables in the working dtype, as the runtime's (an fp32 table would promote bf16 to fp32).
        self.cos, self.sin = angles.cos().to(dev, dt), angles.sin().to(dev, dt)
        self.mask = torch.ones(a.seq_len, a.seq_len, dtype=torch.bool, device=dev).triu(1)

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

    def numel(self):
        """All parameters' elements, frozen ones included."""
        full = [self.emb.full, *self.lnf]
        for b in self.blocks:
            full += [t for w in b.values() for t in ((w.full,) if isinstance(w, Weight) else w)]
        return sum(t.numel() for t in full)

    def rotate(self, x):
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * self.cos + rotated * self.sin

    def attention(self, x, b):
        B, S, D = x.shape

        def split(t):
            return t.view(B, S, self.heads, self.hd).transpose(1, 2)

        q, k, v = self.rotate(split(b["q"](x))), self.rotate(split(b["k"](x))), split(b["v"](x))
        if self.sdpa:
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
            att = torch.softmax(att.masked_fill(self.mask, float("-inf")), -1)
            out = att.matmul(v)
        return b["o"](out.transpose(1, 2).reshape(B, S, D))

    def block(self, x, b):
        d = x.shape[-1]
        x = x + self.attention(torch.nn.functional.layer_norm(x, (d,), *b["ln1"]), b)
        h = self.activation(b["up"](torch.nn.functional.layer_norm(x, (d,), *b["ln2"])))
        return x + b["down"](h)

    def loss(self, tokens):
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        d = self.emb.full.shape[1]
        x = torch.nn.functional.embedding(inputs, self.emb.full)
        for b in self.blocks:
            if self.recompute:
                x = torch.utils.checkpoint.checkpoint(self.block, x, b, use_reentrant=False)
            else:
                x = self.block(x, b)
        x = torch.nn.functional.layer_norm(x, (d,), *self.lnf)
        logits = x.matmul(self.emb.full.t())  # tied head; bf16: a bf16 GEMM, then the loss in fp32
        if logits.dtype != torch.float32:
            logits = logits.float()
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


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


def make_optimizer(a, params):
    """AdamW over `params` (matrices and the embedding decay, norms do not), and its kind.
    fp32 on CPU keeps torch's default implementation (the step run.py has always timed)."""
    decay = [t for t in params if t.dim() >= 2]
    no_decay = [t for t in params if t.dim() < 2]
    kwargs = {}
    if a.device == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters:
        kwargs["fused"] = True
    elif a.device == "cuda" or a.dtype == "bf16":
        kwargs["foreach"] = True
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=a.lr,
        betas=(0.9, 0.99),
        eps=1e-8,
        **kwargs,
    )
    return opt, next(iter(kwargs), "default")


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
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--dtype", default="fp32", choices=list(DTYPES), help="bf16: the runtime's mixed precision")
    p.add_argument("--recompute", action="store_true", help="recompute each block in the backward")
    p.add_argument("--grad-clip", type=float, default=1.0, help="max gradient norm; 0 disables clipping")
    p.add_argument("--activation", default="relu", choices=["relu", "gelu"], help="MLP nonlinearity (gelu: exact)")
    p.add_argument(
        "--profile",
        metavar="TRACE.json",
        help="trace the first --profile-steps steps after warm-up with torch.profiler (Chrome format, as "
        "ppu-train's train.profile_dir; bench/gpu/trace_summary.py); traced steps run slower",
    )
    p.add_argument("--profile-steps", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("reference_step.py: --device cuda but torch.cuda.is_available() is false")

    def now():
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    model = Model(a)
    leaves = model.parameters()
    mixed = a.dtype != "fp32"
    # Mixed precision: the optimiser owns fp32 masters of the trainable tensors (slices) only.
    params = [t.detach().float().clone().requires_grad_(True) for t in leaves] if mixed else leaves
    opt, adamw_impl = make_optimizer(a, params)
    gen = torch.Generator().manual_seed(1)
    times, phases, losses = [], {}, []
    profiler = None
    for step in range(a.warmup + a.steps):
        tokens = torch.randint(0, a.vocab, (a.batch, a.seq_len + 1), generator=gen).to(a.device, non_blocking=True)
        if a.profile and step == a.warmup:
            activities = [torch.profiler.ProfilerActivity.CPU] + (
                [torch.profiler.ProfilerActivity.CUDA] if cuda else []
            )
            profiler = torch.profiler.profile(activities=activities)
            profiler.__enter__()
        start = now()
        loss = model.loss(tokens)
        t_forward = now()
        loss.backward()
        t_backward = now()
        if mixed:
            for m, leaf in zip(params, leaves, strict=True):
                m.grad = leaf.grad.float()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(params, a.grad_clip)
        opt.step()
        if mixed:
            with torch.no_grad():
                for m, leaf in zip(params, leaves, strict=True):
                    leaf.copy_(m)  # a slice's leaf is a view: the update lands in the full weight
            for leaf in leaves:
                leaf.grad = None
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        end = now()
        if profiler is not None and step == a.warmup + a.profile_steps - 1:
            profiler.__exit__(None, None, None)
            profiler.export_chrome_trace(a.profile)
            profiler = None
        if step >= a.warmup:
            times.append(end - start)
            for name, t in [
                ("forward", t_forward - start),
                ("backward", t_backward - t_forward),
                ("optimizer", end - t_backward),
            ]:
                phases.setdefault(name, []).append(t)
    median = statistics.median(times)
    result = {
        "median_step_seconds": median,
        "mean_step_seconds": statistics.mean(times),
        "phases_median": {k: statistics.median(v) for k, v in phases.items()},
        "steps": len(times),
        # contract: not a summary: the reference's own report: the BLAS it loaded
        "blas": loaded_blas(),
        "core": openblas_core(loaded_blas()),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "device": a.device,
        "dtype": a.dtype,
        "recompute": a.recompute,
        "activation": a.activation,
        "grad_clip": a.grad_clip,
        "attention": "sdpa" if model.sdpa else "explicit",
        "adamw": adamw_impl,
        "parameters": model.numel(),
        "trainable_parameters": sum(t.numel() for t in leaves),
        "tokens_per_second": a.batch * a.seq_len / median,
        "losses": losses,
    }
    if cuda:
        result["gpu"] = torch.cuda.get_device_name()
        result["cuda_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
