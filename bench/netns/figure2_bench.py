#!/usr/bin/env python3
"""figure2_bench: Figure 2 measured — DDP, Streaming DiLoCo and PPU over rate-limited links.

Every rank runs in its own network namespace; a veth pair joins it to a bridge that lives in
one more namespace of its own (the "switch"), and `tc` token-bucket filters (tbf) limit both
directions of every rank's link to the same rate. The bench makes addresses only inside the
namespaces it created (10.77.0.0/24), touches nothing else on the host's network, and removes
every namespace it made — and with it every veth, the bridge and every qdisc — at exit,
including on SIGINT / SIGTERM. This kernel has the tbf and htb qdiscs but no netem, so no
delay can be added: the links are bandwidth-limited with sub-millisecond latency.

For each rate and method it runs K = 4 `ppu-train` processes (one per namespace, Gloo bound
to the namespace's eth0), reads their summaries, the interfaces' tx byte counters and
`ppu-plan --json` for the same config at that bandwidth, and prints per run: wall time per
1000 tokens (all ranks), network wait per step, ppu-plan's communication seconds per step
(its bytes_sent_per_run for the same config over the link rate, divided by the steps),
bytes sent per rank (summary / plan / interface counter incl. TCP/IP headers). Writes
results.json and figure2.png (matplotlib) into --out.

usage: sudo bench/netns/figure2_bench.py BUILD_DIR [--quick] [--out DIR] [--rates 1000,100,10]
           [--methods ddp,streaming,ppu,ppu-int8] [--set key=value]...
"""

import argparse
import atexit
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "python"))

from ppu import files, summary

p = argparse.ArgumentParser()
p.add_argument("build")
p.add_argument("--quick", action="store_true", help="tiny model, few steps, 1000 and 10 Mbit/s only (~2 min)")
p.add_argument("--out", default="bench-netns-out")
p.add_argument("--rates", default=None, help="Mbit/s, comma-separated (default 1000,100,10)")
p.add_argument("--ranks", type=int, default=4)
p.add_argument("--methods", default=None, help="comma-separated subset of: ddp,streaming,ppu,ppu-int8")
p.add_argument("--set", dest="sets", action="append", default=[], help="extra config override for every run")
args = p.parse_args()
TRAIN = os.path.join(args.build, "bin", "ppu-train")
PLAN = os.path.join(args.build, "bin", "ppu-plan")
K = args.ranks
TAG = f"ppu{os.getpid()}"  # every name this bench creates starts with it
SWITCH = TAG + "-sw"
RANKS = [f"{TAG}-r{r}" for r in range(K)]
created = []


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def cleanup():
    # Deleting a namespace deletes its veth ends (and so their peers), the bridge and qdiscs.
    for ns in reversed(created):
        sh("ip", "netns", "del", ns, check=False)
    created.clear()


def on_signal(signum, _frame):
    cleanup()
    sys.exit(128 + signum)


atexit.register(cleanup)
signal.signal(signal.SIGINT, on_signal)
signal.signal(signal.SIGTERM, on_signal)


def make_network():
    sh("ip", "netns", "add", SWITCH)
    created.append(SWITCH)
    sh("ip", "-n", SWITCH, "link", "add", "br0", "type", "bridge")
    sh("ip", "-n", SWITCH, "link", "set", "br0", "up")
    for r, ns in enumerate(RANKS):
        sh("ip", "netns", "add", ns)
        created.append(ns)
        sh("ip", "-n", SWITCH, "link", "add", f"p{r}", "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "-n", SWITCH, "link", "set", f"p{r}", "master", "br0")
        sh("ip", "-n", SWITCH, "link", "set", f"p{r}", "up")
        sh("ip", "-n", ns, "addr", "add", f"10.77.0.{r + 1}/24", "dev", "eth0")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")


def set_rate(mbit):
    # Both directions of each rank's link: egress of eth0 (rank -> switch) and of pR (switch -> rank).
    burst = max(16000, int(mbit * 1e6 / 8 / 100))  # 10 ms of traffic, at least 16 kB
    for r, ns in enumerate(RANKS):
        for n, dev in ((ns, "eth0"), (SWITCH, f"p{r}")):
            sh(
                "ip",
                "netns",
                "exec",
                n,
                "tc",
                "qdisc",
                "replace",
                "dev",
                dev,
                "root",
                "tbf",
                "rate",
                f"{mbit}mbit",
                "burst",
                str(burst),
                "latency",
                "1s",
            )  # a queue deep enough that TCP is not dropped into timeouts


def tbf_drops():
    total = 0
    for r, ns in enumerate(RANKS):
        for n, dev in ((ns, "eth0"), (SWITCH, f"p{r}")):
            out = sh("ip", "netns", "exec", n, "tc", "-s", "qdisc", "show", "dev", dev).stdout.split()
            if "dropped" in out:
                total += int(out[out.index("dropped") + 1].rstrip(","))
    return total


def tx_bytes(ns):
    return int(sh("ip", "netns", "exec", ns, "cat", "/sys/class/net/eth0/statistics/tx_bytes").stdout)


if args.quick:
    MODEL = ["model.preset=tiny", "model.seq_len=32", "inner.batch_size=4", "train.steps=12", "outer.sync_every=6"]
    RATES = [1000, 10]
else:
    MODEL = [
        "model.preset=tiny",
        "model.layers=4",
        "model.d_model=128",
        "model.heads=4",
        "model.seq_len=64",
        "inner.batch_size=4",
        "train.steps=40",
        "outer.sync_every=20",
    ]
    RATES = [1000, 100, 10]
if args.rates:
    RATES = [int(x) for x in args.rates.split(",")]
COMMON = (
    MODEL
    + [
        f"ranks={K}",
        "train.eval_every=0",
        "train.eval_batches=1",
        "train.log_every=1000",
        "train.threads=1",
        "outer.layers_per_fragment=1",
        "data.synthetic_train_tokens=100000",
        "data.synthetic_val_tokens=5000",
        "checkpoint.dir=",
        "metrics.port=0",
        "network.timeout_s=600",
    ]
    + args.sets
)
METHODS = [
    ("DDP", ["method=ddp", "slicing.mode=none"]),  # keys for --methods: ddp, streaming, ppu, ppu-int8
    ("Streaming DiLoCo", ["method=streaming-diloco", "slicing.mode=none"]),
    ("PPU 1/4 MLPs+heads", ["method=ppu", "slicing.mode=mlp+heads", "slicing.slices=4"]),
    (
        "PPU 1/4, int8 deltas",
        [
            "method=ppu",
            "slicing.mode=mlp+heads",
            "slicing.slices=4",
            "outer.delta_dtype=int8",
            "outer.error_feedback=true",
        ],
    ),
]


if args.methods:
    keys = ["ddp", "streaming", "ppu", "ppu-int8"]
    wanted = args.methods.split(",")
    for w in wanted:
        if w not in keys:
            raise SystemExit(f"--methods: unknown method '{w}' (expected {', '.join(keys)})")
    METHODS = [m for k, m in zip(keys, METHODS, strict=True) if k in wanted]


def sets(kvs):
    out = []
    for kv in kvs:
        out += ["--set", kv]
    return out


def run(kvs, outdir, port):
    os.makedirs(outdir, exist_ok=True)
    before = [tx_bytes(ns) for ns in RANKS]
    drops_before = tbf_drops()
    procs = []
    with contextlib.ExitStack() as logs:  # each rank's log stays open until the rank exits
        for r, ns in enumerate(RANKS):
            env = [
                "env",
                f"RANK={r}",
                f"WORLD_SIZE={K}",
                "MASTER_ADDR=10.77.0.1",
                f"MASTER_PORT={port}",
                "GLOO_SOCKET_IFNAME=eth0",
                "OMP_NUM_THREADS=1",
            ]
            log = logs.enter_context(open(os.path.join(outdir, f"rank-{r}.log"), "w"))
            procs.append(
                subprocess.Popen(
                    [
                        "ip",
                        "netns",
                        "exec",
                        ns,
                        *env,
                        TRAIN,
                        *sets(kvs),
                        "--summary",
                        files.summary_file(outdir, r),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        codes = [pr.wait() for pr in procs]
    if any(codes):
        raise SystemExit(f"ranks exited {codes}; logs in {outdir}")
    after = [tx_bytes(ns) for ns in RANKS]
    summaries = summary.load_dir(outdir, K)
    return summaries, [a - b for a, b in zip(after, before, strict=True)], tbf_drops() - drops_before


def plan(kvs, mbit):
    out = sh(PLAN, "--json", *sets(kvs + [f"network.bandwidth_gb_per_s={mbit / 8000.0:g}"])).stdout
    return json.loads(out)


@dataclasses.dataclass
class Row:
    """One rate and method: an entry of results.json's results. bytes_sent and eval_loss are rank
    0's summary's; checksums_equal whether every rank's param_checksum is the same."""

    mbit: int
    method: str
    steps: int
    tokens: int
    seconds: float
    ms_per_1k_tokens: float
    wait_per_step: float
    wait_per_step_max: float
    tbf_drops: int
    plan_comm_per_step: float  # ppu-plan's bytes for exactly this run (final flush included) over the link rate
    plan_comm_per_step_rounds_only: float
    compute_per_step: float
    bytes_sent: float
    plan_bytes_sent: float
    interface_tx_bytes: int
    checksums_equal: bool
    eval_loss: float
    bench_seconds: float
    # Predicted wall time: this run's own compute per step plus ppu-plan's communication per step.
    plan_ms_per_1k_tokens: float


def main():
    os.makedirs(args.out, exist_ok=True)
    make_network()
    print(f"namespaces {SWITCH} + {K} ranks, tbf both directions; no netem on this kernel (no added delay)")
    load = os.getloadavg()
    results = []
    port = 29600
    for mbit in RATES:
        set_rate(mbit)
        for name, extra in METHODS:
            kvs = COMMON + extra
            port += 1
            start = time.time()
            summaries, tx, drops = run(
                kvs, os.path.join(args.out, f"{mbit}mbit-{name.replace(' ', '_').replace('/', '')}"), port
            )
            pl = plan(kvs, mbit)
            steps = summaries[0].steps
            tokens = sum(s.tokens for s in summaries)
            seconds = max(s.seconds for s in summaries)
            # The rank that reaches an exchange last waits only for the transfer itself; the others
            # also wait for it (stragglers: 4 ranks share 2 loaded cores). Both are reported.
            wait = min(s.network_wait_seconds for s in summaries) / steps
            wait_max = max(s.network_wait_seconds for s in summaries) / steps
            plan_comm = pl["bytes_sent_per_run"] / (mbit * 1e6 / 8) / steps
            compute = seconds / steps - wait
            row = Row(
                mbit=mbit,
                method=name,
                steps=steps,
                tokens=tokens,
                seconds=seconds,
                ms_per_1k_tokens=1000 * seconds / tokens * 1000,
                wait_per_step=wait,
                wait_per_step_max=wait_max,
                tbf_drops=drops,
                plan_comm_per_step=plan_comm,
                plan_comm_per_step_rounds_only=pl["comm_seconds_per_step_amortised"],
                compute_per_step=compute,
                bytes_sent=summaries[0].bytes_sent,
                plan_bytes_sent=pl["bytes_sent_per_run"],
                interface_tx_bytes=tx[0],
                checksums_equal=len({s.param_checksum for s in summaries}) == 1,
                eval_loss=summaries[0].eval_loss,
                bench_seconds=time.time() - start,
                plan_ms_per_1k_tokens=1e6 * (compute + plan_comm) * steps / tokens,
            )
            results.append(row)
            print(
                f"{mbit:5d} Mbit/s  {name:<22} {row.ms_per_1k_tokens:8.1f} ms/1k tok "
                f"(plan {row.plan_ms_per_1k_tokens:8.1f})  wait {wait:7.3f}..{wait_max:7.3f} s/step "
                f"(plan {row.plan_comm_per_step:7.3f})  sent {row.bytes_sent:9.0f} B "
                f"(plan {row.plan_bytes_sent:9.0f}, eth0 {tx[0]:9d})  drops {drops:d}  ranks agree {row.checksums_equal}",
                flush=True,
            )
    info = {
        "ranks": K,
        "config": COMMON,
        "load_before": load,
        "load_after": os.getloadavg(),
        "results": [dataclasses.asdict(r) for r in results],
    }
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(info, f, indent=1)
    plot(results)
    print(f"load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f} (2 cores)")
    print("wrote", os.path.join(args.out, "results.json"), "and", os.path.join(args.out, "figure2.png"))


def plot(results):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (name, _) in enumerate(METHODS):
        rows = sorted((r for r in results if r.method == name), key=lambda r: r.mbit)
        x = [r.mbit for r in rows]
        color = f"C{i}"
        axes[0].plot(x, [r.ms_per_1k_tokens for r in rows], "o-", color=color, label=name + " measured")
        axes[0].plot(
            x, [r.plan_ms_per_1k_tokens for r in rows], "x--", color=color, alpha=0.7, label=name + " ppu-plan"
        )
        axes[1].plot(x, [r.wait_per_step for r in rows], "o-", color=color, label=name + " measured")
        axes[1].plot(x, [r.plan_comm_per_step for r in rows], "x--", color=color, alpha=0.7, label=name + " ppu-plan")
    for ax, title, unit in (
        (axes[0], "Wall time per 1000 tokens (4 ranks)", "ms"),
        (axes[1], "Network wait per inner step (last-arriving rank)", "s"),
    ):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("link rate per rank (Mbit/s, tc tbf)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=6.5)
    fig.suptitle(
        f"K={K} ranks in network namespaces, {' '.join(m for m in MODEL if m.startswith('model.'))}", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "figure2.png"), dpi=110)


if __name__ == "__main__":
    if os.geteuid() != 0:
        raise SystemExit("figure2_bench needs root (ip netns, tc)")
    try:
        main()
    finally:
        cleanup()
