#!/usr/bin/env python3
"""Multi-process checks of ppu-train / ppu-launch from the outside, through --summary files.

usage: process_tests.py BIN_DIR SOURCE_DIR CASE
cases: resume      kill a random rank mid-run, corrupt the newest checkpoint, restart: the
                   run resumes from the previous checkpoint and ends with the checksum of an
                   uninterrupted run
       dead-peer   kill one of two ranks started by hand: the survivor exits 3, never hangs
       frozen-peer SIGSTOP a rank of four (a middle one, then rank 0, which hosts the store):
                   every other rank names it and exits 3 within network.heartbeat_s, long
                   before network.timeout_s; after SIGCONT the stopped rank exits 3 too
       bad-config  invalid configs stop before any work with exit 2 and name the key
       launch-fail ppu-launch stops every rank when one fails and returns its exit code
       equivalence ppu-launch runs of PPU (N=1) and Streaming DiLoCo agree bit for bit
       theta-flip  one element of rank 2's global θ changed at step 15 (PPU_TEST_FAULT=flip:2:15):
                   the θ check before the next sync of that fragment finds it on rank 2 alone,
                   repairs it from the others before any delta is taken, and the run ends with
                   the checksum of an unfaulted run; every rank counts one mismatch
       repeat-bf16 two identical bf16 runs end with the same checksum bit for bit
                   (train.deterministic; on a GPU, whether SDPA's bf16 kernels are deterministic)
       metrics     a live /metrics scrape passes promtool check metrics
       data-error  a missing or corrupt dataset exits 4 (never retried) naming the path
       runtime-failure  an environment failure at run time (the metrics port is taken) exits 1,
                   naming the key and the port, so the operator restarts instead of failing
       launch-check ppu-launch refuses what only ppu-train can check (device, dataset) once,
                   with ppu-train's exit code, before starting any rank
       checkpoint-format  a checkpoint of another format is refused (exit 4, naming it), never
                   loaded or replaced; ppu-export refuses it too
       unusable-checkpoints  when every checkpoint is unusable (global.pt deleted from every round;
                   one whose outer state is missing) the run exits 4 naming them and changes
                   nothing; checkpoint.start_over_if_unusable=true trains from step 0 instead;
                   a round without a manifest (a save that never finished) is not a checkpoint
       result-message  on success every rank's termination message (PPU_TERMINATION_LOG here)
                   is its result (core/run_result.h) and equals its --summary; on a failure
                   it is the reason in plain text
"""

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from ppu import files, summary
from ppu.exit_codes import ExitCode

BIN, SRC, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
TRAIN = os.path.join(BIN, "bin", "ppu-train")
LAUNCH = os.path.join(BIN, "bin", "ppu-launch")
TINY = os.path.join(SRC, "configs", "tiny.yaml")
BASE = [
    "--set",
    "train.steps=100",
    "--set",
    "outer.sync_every=10",
    "--set",
    "train.eval_every=0",
    "--set",
    "train.log_every=5",
    "--set",
    "model.seq_len=32",
]
# PPU_TEST_DEVICE=cuda (ctest label gpu): the same cases with the 4 ranks sharing one GPU (Gloo
# via host for their collectives, as NCCL needs a GPU per rank).
if os.environ.get("PPU_TEST_DEVICE"):
    BASE += ["--set", "train.device=" + os.environ["PPU_TEST_DEVICE"]]


def free_port():
    """A TCP port free now and below the kernel's ephemeral range (32768+), where a neighbouring
    test's outgoing connection could take it between this check and the server's bind."""
    while True:
        port = random.randint(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run_result_kind():
    """The run result's kind key and version, from their one definition (runtime/core/run_result.h)."""
    with open(os.path.join(SRC, "runtime", "core", "run_result.h")) as f:
        text = f.read()
    return re.search(r'kKind = "(\w+)";', text).group(1), int(re.search(r"kVersion = (\d+);", text).group(1))


def launch(args, out_dir, **kw):
    return subprocess.run(
        [LAUNCH, "--nproc", "4", "--config", TINY, *BASE, *args, "--summary-dir", out_dir],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        **kw,
    )


def case_resume():
    work = tempfile.mkdtemp(prefix="ppu-resume-")
    ref = launch([], os.path.join(work, "ref"))
    if ref.returncode != 0:
        fail("uninterrupted run failed:\n" + ref.stdout[-3000:] + ref.stderr[-3000:])
    want = summary.load(files.summary_file(os.path.join(work, "ref"), 0)).param_checksum

    ckpt = os.path.join(work, "ckpt")
    args = ["--set", "checkpoint.dir=" + ckpt, "--set", "checkpoint.keep=5"]
    proc = subprocess.Popen(
        [LAUNCH, "--nproc", "4", "--config", TINY, *BASE, *args, "--summary-dir", os.path.join(work, "run1")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    rounds_seen = set()
    seen_at = []  # when each round's first checkpoint line arrived
    target_round = random.randint(2, 5)
    for line in proc.stdout:
        if "checkpoint round" in line:
            r = line.split("checkpoint round")[1].split()[0]
            if r not in rounds_seen:
                rounds_seen.add(r)
                seen_at.append(time.monotonic())
        if len(rounds_seen) >= target_round:
            break
    # A random moment after that checkpoint: up to 0.3 s, but never more than half a round as this
    # CPU runs them, so a fast machine cannot finish the remaining 5+ rounds before the kill.
    round_s = (seen_at[-1] - seen_at[0]) / (len(seen_at) - 1) if len(seen_at) > 1 else 0.0
    time.sleep(random.uniform(0.0, min(0.3, 0.5 * round_s)))
    children = subprocess.run(
        ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True, check=False
    ).stdout.split()
    if len(children) != 4:
        fail(f"expected 4 rank processes under ppu-launch, found {children}")
    victim = random.choice(children)
    os.kill(int(victim), signal.SIGKILL)
    proc.communicate(timeout=300)
    if proc.returncode == 0:
        fail("ppu-launch returned 0 after a rank was killed")
    print(f"killed rank pid {victim} after checkpoint round {target_round}; ppu-launch exited {proc.returncode}")

    # Corrupt the newest complete checkpoint: the restart must skip it, naming it.
    rounds = sorted(
        d
        for d in os.listdir(ckpt)
        if d.startswith(files.ROUND_PREFIX) and os.path.exists(os.path.join(ckpt, d, files.MANIFEST))
    )
    newest = os.path.join(ckpt, rounds[-1], files.rank_part(1))
    with open(newest, "r+b") as f:
        f.seek(os.path.getsize(newest) // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    again = launch(args, os.path.join(work, "run2"))
    out = again.stdout + again.stderr
    if again.returncode != 0:
        fail("restarted run failed:\n" + out[-4000:])
    if f"skipping checkpoint {os.path.join(ckpt, rounds[-1])}" not in out:
        fail("the corrupted checkpoint was not reported by name:\n" + out[-4000:])
    if "resumed from" not in out:
        fail("the restarted run did not resume:\n" + out[-4000:])
    got = summary.load(files.summary_file(os.path.join(work, "run2"), 0)).param_checksum
    print(f"uninterrupted {want}, resumed {got}")
    if got != want:
        fail("the resumed run's checksum differs from the uninterrupted run's")


def case_dead_peer():
    port = str(free_port())
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(
            subprocess.Popen(
                [
                    TRAIN,
                    "--config",
                    TINY,
                    *BASE,
                    "--set",
                    "train.steps=100000",
                    "--set",
                    "network.timeout_s=30",
                    "--set",
                    "slicing.slices=2",
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    for line in procs[0].stdout:
        if "step 10/" in line:
            break
    procs[1].kill()
    procs[1].wait()
    try:
        out = procs[0].communicate(timeout=120)[0]
    except subprocess.TimeoutExpired:
        procs[0].kill()
        fail("the surviving rank hung after its peer died")
    print(out[-600:])
    if procs[0].returncode != ExitCode.PEER_FAILURE:
        fail(f"the surviving rank exited {procs[0].returncode}, expected {ExitCode.PEER_FAILURE} (peer failure)")
    if "peer failure" not in out:
        fail("no clear peer-failure message")


def freeze_one(stopped, heartbeat_s=3.0, timeout_s=300):
    """Four ranks by hand; SIGSTOP rank `stopped` once rank 0 logs step 10; returns the others'
    exit codes, outputs and how long they took after the stop, then the stopped rank's exit code
    after SIGCONT."""
    port = str(free_port())
    procs = []
    for rank in range(4):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="4", MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        cmd = [TRAIN, "--config", TINY, *BASE, "--set", "train.steps=100000", "--set", "slicing.slices=2"]
        cmd += ["--set", f"network.timeout_s={timeout_s}", "--set", f"network.heartbeat_s={heartbeat_s}"]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    watched = procs[1] if stopped == 0 else procs[0]
    for line in watched.stdout:
        if "step 10/" in line:
            break
    procs[stopped].send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    results = {}
    try:
        for rank, p in enumerate(procs):
            if rank != stopped:
                out = p.communicate(timeout=timeout_s / 2)[0]
                results[rank] = (p.returncode, out, time.monotonic() - stopped_at)
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        fail(f"with rank {stopped} stopped, a survivor was still running after {timeout_s / 2:.0f} s")
    procs[stopped].send_signal(signal.SIGCONT)
    try:
        procs[stopped].communicate(timeout=60)
    except subprocess.TimeoutExpired:
        procs[stopped].kill()
        fail(f"rank {stopped}, continued after its peers stopped, hung")
    return results, procs[stopped].returncode


def case_frozen_peer():
    heartbeat_s = 3.0
    for stopped, expected in [(2, "rank 2 has sent no heartbeat"), (0, None)]:
        results, resumed_rc = freeze_one(stopped, heartbeat_s)
        for rank, (rc, out, seconds) in sorted(results.items()):
            print(f"rank {stopped} stopped: rank {rank} exited {rc} after {seconds:.1f} s")
            if rc != ExitCode.PEER_FAILURE:
                fail(
                    f"rank {rank} exited {rc} with rank {stopped} stopped, expected {ExitCode.PEER_FAILURE} "
                    f"(peer failure)\n{out[-800:]}"
                )
            if "peer failure" not in out:
                fail(f"rank {rank} did not report a peer failure\n{out[-800:]}")
        # Who noticed first named the silence within the window; the rest may instead see that
        # rank's exit close its connections. With rank 0 stopped, the store stops with it: the
        # store or rank 0 is named.
        names = ["rendezvous store has not answered", "rank 0 has sent no heartbeat"] if stopped == 0 else [expected]
        named = [out for rc, out, _ in results.values() if any(n in out for n in names)]
        if not named:
            fail(f"with rank {stopped} stopped, no rank named the silent peer (the collective timeout fired?)")
        silent = [float(m) for out in named for m in re.findall(r"for ([0-9.]+) s \(", out)]
        if not silent or min(silent) > heartbeat_s * 1.5 + 1:
            fail(f"the silence reported ({silent}) is not within network.heartbeat_s={heartbeat_s}")
        if resumed_rc != ExitCode.PEER_FAILURE:
            fail(f"rank {stopped}, continued after SIGCONT, exited {resumed_rc}, expected {ExitCode.PEER_FAILURE}")


def case_bad_config():
    checks = [
        (["--set", "inner.lrr=1"], {}, "unknown config key 'inner.lrr'"),
        (["--set", "slicing.mode=rows"], {}, "'slicing.mode'"),
        (["--set", "slicing.slices=4"], {"RANK": "0", "WORLD_SIZE": "6"}, "K=6"),
        (["--set", "model.heads=5"], {}, "model.heads"),
        (["--set", "data.source=shards"], {}, "data.path"),
        (["--set", "train.steps=abc"], {}, "'train.steps'"),
    ]
    # Without a GPU (CPU LibTorch, or no driver) train.device=cuda must be refused by name.
    if shutil.which("nvidia-smi") is None:
        checks.append((["--set", "train.device=cuda"], {}, "'train.device'"))
    for args, env, needle in checks:
        start = time.time()
        r = subprocess.run(
            [TRAIN, "--config", TINY, *args],
            env=dict(os.environ, **env),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        out = r.stdout + r.stderr
        if r.returncode != ExitCode.CONFIG_ERROR or needle not in out:
            fail(f"{args} {env}: exit {r.returncode}, output:\n{out}")
        if "step " in out:
            fail(f"{args}: training started before the config error was reported")
        print(
            f"ok {args} {env} -> exit {ExitCode.CONFIG_ERROR} in {time.time() - start:.2f}s: "
            f"{out.strip().splitlines()[-1]}"
        )
    r = subprocess.run(
        [LAUNCH, "--nproc", "3", "--config", TINY], capture_output=True, text=True, timeout=60, check=False
    )
    if r.returncode != ExitCode.CONFIG_ERROR or "K=3" not in r.stderr:
        fail(f"ppu-launch with K=3, N=2: exit {r.returncode}: {r.stderr}")


def case_launch_fail():
    # fail_rank.sh makes rank 1 exit 7 while rank 0 trains (and would wait for it forever).
    r = subprocess.run(
        [
            LAUNCH,
            "--nproc",
            "2",
            "--config",
            TINY,
            *BASE,
            "--set",
            "train.steps=100000",
            "--ppu-train",
            os.path.join(SRC, "tests", "engine", "fail_rank.sh"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PPU_TRAIN=TRAIN, FAIL_RANK="1"),
        check=False,
    )
    print(r.stdout[-800:], r.stderr[-800:])
    if r.returncode != 7:
        fail(f"ppu-launch exited {r.returncode}, expected the failing rank's code 7")
    if "[rank 1]" not in r.stdout or "stopping the other ranks" not in r.stderr:
        fail("missing rank prefixes or stop message")


def case_equivalence():
    work = tempfile.mkdtemp(prefix="ppu-equiv-")
    a = launch(["--set", "method=ppu", "--set", "slicing.slices=1"], os.path.join(work, "ppu"))
    b = launch(["--set", "method=streaming-diloco"], os.path.join(work, "sd"))
    if a.returncode or b.returncode:
        fail("runs failed:\n" + a.stderr + b.stderr)
    sums = [s.param_checksum for d in ("ppu", "sd") for s in summary.load_dir(os.path.join(work, d), 4)]
    print(sums)
    if len(set(sums)) != 1:
        fail("PPU with N=1 and Streaming DiLoCo disagree")
    # Where each step's time went: every phase reported, the computing ones non-zero. Each phase is
    # read by name (one missing: ContractError) and the load refused any phase the contract lacks.
    phases = summary.load(files.summary_file(os.path.join(work, "ppu"), 0)).inner_step_phases_median
    print("phases", phases.as_dict())
    each = [phases.backward, phases.batch, phases.forward, phases.gradient_allreduce, phases.optimizer]
    if len(phases.as_dict()) != len(each):
        fail(f"inner_step_phases_median has keys {sorted(phases.as_dict())}")
    if min(each) < 0 or not all(t > 0 for t in (phases.forward, phases.backward, phases.optimizer)):
        fail(f"inner_step_phases_median {phases.as_dict()}: a computing phase took no time")


def case_theta_flip():
    work = tempfile.mkdtemp(prefix="ppu-theta-")
    clean = launch([], os.path.join(work, "clean"))
    flipped = launch([], os.path.join(work, "flip"), env=dict(os.environ, PPU_TEST_FAULT="flip:2:15"))
    if clean.returncode or flipped.returncode:
        fail("runs failed:\n" + clean.stderr[-2000:] + flipped.stderr[-2000:])
    log = flipped.stdout + flipped.stderr
    found = re.findall(r"θ of fragment (\S+) before its sync at step (\d+) differs on rank\(s\) \[([0-9,]+)\]", log)
    if len(found) < 1 or any(ranks != "2" for _, _, ranks in found):
        fail(f"the θ check should name rank 2 (and only it): {found}\n{log[-2000:]}")
    sums = [s for d in ("clean", "flip") for s in summary.load_dir(os.path.join(work, d), 4)]
    if len({s.param_checksum for s in sums}) != 1:
        fail(f"the repaired run differs from the clean one: {[s.param_checksum for s in sums]}")
    counted = [s.recovery.theta_mismatches for s in sums]
    if counted != [0, 0, 0, 0, 1, 1, 1, 1]:
        fail(f"theta_mismatches per rank (clean, then flipped run): {counted}")
    print(f"θ changed on rank 2 at step 15: found at {found}, repaired; checksums equal the clean run's")


def case_repeat_bf16():
    work = tempfile.mkdtemp(prefix="ppu-repeat-")
    args = ["--set", "train.dtype=bf16", "--set", "train.deterministic=true"]
    runs = [launch(args, os.path.join(work, name)) for name in ("a", "b")]
    for run in runs:
        if run.returncode:
            fail("bf16 run failed:\n" + run.stdout[-2000:] + run.stderr[-2000:])
    sums = [summary.load(files.summary_file(os.path.join(work, name), 0)).param_checksum for name in ("a", "b")]
    print("bf16 checksums", sums)
    if sums[0] != sums[1]:
        fail("two identical bf16 runs ended with different parameters")


def case_metrics():
    # A live scrape of a training rank passes `promtool check metrics` and carries the
    # series docs/METRICS.md promises.
    import urllib.request

    port = free_port()
    proc = subprocess.Popen(
        [TRAIN, "--config", TINY, *BASE, "--set", "train.steps=100000", "--set", f"metrics.port={port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if "step 20/" in line:
                break
        else:
            fail("ppu-train ended before step 20:\n" + "".join(seen[-20:]))
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finally:
        proc.kill()
        proc.wait()
    check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    if check.returncode != 0:
        fail("promtool check metrics: " + check.stdout + check.stderr)
    for name in [
        "ppu_state_bytes{",
        "ppu_flops_executed_total",
        "ppu_flops_full_backward_total",
        "ppu_loss",
        "ppu_tokens_per_second",
        "ppu_outer_round",
        "ppu_outer_sync_bytes_total{",
        "ppu_step ",
        "ppu_process_resident_memory_bytes",
        'component="inner_optimizer"',
        'rank="0"',
    ]:
        if name not in text:
            fail(f"{name} missing from the scrape")
    print(f"scraped {len(text.splitlines())} lines; promtool check metrics passed")


def case_data_error():
    # Exit code 4 (docs/METRICS.md): the operator fails the job at once instead of restarting it.
    work = tempfile.mkdtemp(prefix="ppu-data-error-")
    corrupt = os.path.join(work, "corrupt")
    os.makedirs(corrupt)
    with open(os.path.join(corrupt, "meta.json"), "w") as f:
        f.write("{ not json")
    for path, needle in [(os.path.join(work, "absent"), "no such directory"), (corrupt, "meta.json")]:
        r = subprocess.run(
            [TRAIN, "--config", TINY, "--set", "data.source=shards", "--set", "data.path=" + path],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        out = r.stdout + r.stderr
        if r.returncode != ExitCode.DATA_ERROR or path not in out or needle not in out:
            fail(
                f"data.path={path}: exit {r.returncode}, expected {ExitCode.DATA_ERROR} naming the path and "
                f"'{needle}':\n{out}"
            )
        print(f"ok data.path={path} -> exit {ExitCode.DATA_ERROR}: {out.strip().splitlines()[-1]}")
    shutil.rmtree(work)


def case_launch_check():
    # Each of these passes ppu-launch's own config parsing; only ppu-train can tell (no GPU, no
    # dataset). ppu-launch must ask ppu-train once and start no rank: one error, not K.
    work = tempfile.mkdtemp(prefix="ppu-launch-check-")
    absent = ["--set", "data.source=shards", "--set", "data.path=" + os.path.join(work, "absent")]
    checks = [(absent, ExitCode.DATA_ERROR, "no such directory")]
    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    checks.append((["--set", "data.source=shards", "--set", "data.path=" + empty], ExitCode.DATA_ERROR, "meta.json"))
    if shutil.which("nvidia-smi") is None:
        checks.append((["--set", "train.device=cuda"], ExitCode.CONFIG_ERROR, "'train.device'"))
    for args, code, needle in checks:
        r = subprocess.run(
            [LAUNCH, "--nproc", "4", "--config", TINY, *BASE, *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        out = r.stdout + r.stderr
        if r.returncode != code:
            fail(f"{args}: ppu-launch exited {r.returncode}, expected {code}:\n{out}")
        if out.count(needle) != 1:
            fail(f"{args}: expected the error '{needle}' exactly once, got:\n{out}")
        if "[launch] started" in out or "[rank " in out:
            fail(f"{args}: ranks were started before the config was refused:\n{out}")
        print(f"ok {args} -> exit {code}, one error: {out.strip().splitlines()[-1]}")
    # A runnable config still runs, and the check does not change its result.
    r = launch(["--set", "train.steps=12"], os.path.join(work, "ok"))
    if r.returncode != 0 or "[launch] started 4 ranks" not in r.stdout:
        fail("a valid config did not run:\n" + r.stdout[-2000:] + r.stderr[-2000:])
    shutil.rmtree(work)


def checkpointed_run(prefix):
    """A finished 30-step run with checkpoints: (work dir, checkpoint dir, its args, its rounds)."""
    work = tempfile.mkdtemp(prefix=prefix)
    ckpt = os.path.join(work, "ckpt")
    args = ["--set", "train.steps=30", "--set", "checkpoint.dir=" + ckpt]
    r = launch(args, os.path.join(work, "run1"))
    if r.returncode != 0:
        fail("the first run failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
    return work, ckpt, args, [files.round_dir(r) for r in files.rounds_in(ckpt)]


def case_checkpoint_format():
    # A checkpoint of another format (engine/state/checkpoint_format.h) is refused with exit 4 naming
    # its path and both formats; the job neither loads it nor starts over beside it.
    work, ckpt, args, rounds = checkpointed_run("ppu-ckpt-format-")
    newest = os.path.join(ckpt, rounds[-1])
    with open(os.path.join(newest, files.MANIFEST)) as f:
        manifest = json.load(f)
    if manifest.get("format") != 2:
        fail(f"the manifest has format {manifest.get('format')!r}, expected 2")
    del manifest["format"]  # what a format-1 manifest looked like
    with open(os.path.join(newest, files.MANIFEST), "w") as f:
        json.dump(manifest, f)
    before = files.listing(ckpt)
    r = launch(args + ["--set", "train.steps=60"], os.path.join(work, "run2"))
    out = r.stdout + r.stderr
    if r.returncode != ExitCode.DATA_ERROR or newest not in out or "format 1" not in out or "format 2" not in out:
        fail(
            f"resume from a format-1 checkpoint: exit {r.returncode}, expected {ExitCode.DATA_ERROR} naming {newest} "
            "and both formats:\n" + out[-4000:]
        )
    after = files.listing(ckpt)
    if after != before:
        fail(f"the refused run changed the checkpoint directory: {before} -> {after}")
    said = next(l for l in out.splitlines() if "format 1" in l).strip()
    print(f"ok format-1 checkpoint -> exit {ExitCode.DATA_ERROR}: {said}")
    export = os.path.join(BIN, "bin", "ppu-export")
    r = subprocess.run(
        [export, "--checkpoint", ckpt, "--out", os.path.join(work, "hf")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if r.returncode != ExitCode.DATA_ERROR or "format 1" not in r.stderr:
        fail(
            f"ppu-export of a format-1 checkpoint: exit {r.returncode}, expected {ExitCode.DATA_ERROR} naming the "
            f"format:\n{r.stderr}"
        )
    print(f"ok ppu-export refuses it too (exit {ExitCode.DATA_ERROR})")
    shutil.rmtree(work)


def case_runtime_failure():
    # Exit 1 is "runtime failure": retryable (the operator restarts the gang), unlike 2 and 4.
    import socket

    taken = socket.socket()
    taken.bind(("0.0.0.0", 0))
    taken.listen()
    port = taken.getsockname()[1]
    env = dict(os.environ, PPU_METRICS_PORT=str(port))
    env.pop("RANK", None)
    r = subprocess.run(
        [TRAIN, "--config", TINY, *BASE], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    out = r.stdout + r.stderr
    taken.close()
    if r.returncode != ExitCode.RUNTIME_FAILURE or "metrics.port" not in out or str(port) not in out:
        fail(
            f"metrics port {port} taken: exit {r.returncode}, expected {ExitCode.RUNTIME_FAILURE} naming metrics.port "
            f"and the port:\n{out}"
        )
    print(f"ok metrics port {port} taken -> exit {ExitCode.RUNTIME_FAILURE}: {out.strip().splitlines()[-1]}")


def case_result_message():
    work = tempfile.mkdtemp(prefix="ppu-result-")
    ckpt = os.path.join(work, "ckpt")
    env = dict(os.environ, PPU_TERMINATION_LOG=os.path.join(work, "termination-log"))
    # Two ranks by hand, each with its own message file (a pod has one per container).
    port = free_port()
    procs = []
    for rank in range(2):
        e = dict(
            env,
            RANK=str(rank),
            WORLD_SIZE="2",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            PPU_TERMINATION_LOG=os.path.join(work, f"termination-log-{rank}"),
        )
        procs.append(
            subprocess.Popen(
                [
                    TRAIN,
                    "--config",
                    TINY,
                    *BASE,
                    "--set",
                    "ranks=2",
                    "--set",
                    "slicing.slices=2",
                    "--set",
                    "checkpoint.dir=" + ckpt,
                    "--summary",
                    files.summary_file(work, rank),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=e,
            )
        )
    for rank, p in enumerate(procs):
        out = p.communicate(timeout=600)[0]
        if p.returncode != 0:
            fail(f"rank {rank} exited {p.returncode}:\n{out[-3000:]}")
    for rank in range(2):
        with open(os.path.join(work, f"termination-log-{rank}")) as f:
            text = f.read()
        if len(text.encode()) > 1024:
            fail(f"rank {rank}'s result is {len(text.encode())} bytes, more than 1024")
        res, s = json.loads(text), summary.load(files.summary_file(work, rank))
        kind, version = run_result_kind()
        # The run result's keys (core/run_result.h), each with the summary field it carries.
        want = {
            kind: version,
            "round": s.outer_rounds,
            # contract: not a summary: the run result's key (core/run_result.h)
            "eval_loss": s.eval_loss,
            "perplexity": s.eval_perplexity,
            "steps": s.steps,
            "tokens": s.tokens,
            "checkpoint_round": s.last_checkpoint_round,
            "checksum": s.param_checksum,
        }
        for k, v in want.items():
            if res.get(k) != v:
                fail(f"rank {rank}'s result has {k}={res.get(k)!r}, its summary {v!r}: {text}")
        if res["checkpoint_round"] != res["round"] or res["round"] < 1:
            fail(f"rank {rank}: last checkpoint round {res['checkpoint_round']} is not the final round {res['round']}")
        print(f"ok rank {rank} result: {text.strip()}")
    # A failure leaves the reason, in plain text.
    bad = subprocess.run(
        [TRAIN, "--config", TINY, "--set", "model.layers=0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    with open(env["PPU_TERMINATION_LOG"]) as f:
        text = f.read()
    if bad.returncode != ExitCode.CONFIG_ERROR or "model.layers" not in text or text.lstrip().startswith("{"):
        fail(f"a bad config should leave its reason as the message, got exit {bad.returncode}: {text!r}")
    print(f"ok failure message: {text.strip()}")
    shutil.rmtree(work)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def case_unusable_checkpoints():
    # Every checkpoint unusable must stop the run (exit 4, each named, nothing changed), never
    # start over beside them; starting over is the explicit checkpoint.start_over_if_unusable.
    work, ckpt, args, rounds = checkpointed_run("ppu-unusable-")
    if len(rounds) < 2:
        fail(f"expected at least two checkpoints, found {rounds}")

    def refused(what, expect_named, names_the_key):
        before = files.listing(ckpt)
        r = launch(args + ["--set", "train.steps=60"], os.path.join(work, "refused"))
        out = r.stdout + r.stderr
        missing = [n for n in expect_named if n not in out]
        if r.returncode != ExitCode.DATA_ERROR or missing or (names_the_key and "start_over_if_unusable" not in out):
            fail(
                f"{what}: exit {r.returncode}, expected {ExitCode.DATA_ERROR} naming {missing or expect_named} and the "
                f"key:\n{out[-4000:]}"
            )
        if files.listing(ckpt) != before:
            fail(f"{what}: the refused run changed the checkpoint directory: {before} -> {files.listing(ckpt)}")
        if "resumed from" in out or "step 5/" in out:
            fail(f"{what}: the refused run trained:\n{out[-3000:]}")
        said = next(l for l in out.splitlines() if "unusable" in l or "outer state" in l)
        print(f"ok {what} -> exit {ExitCode.DATA_ERROR}: {said.strip()}")

    # 1. The newest round's global.pt holds no outer state (its checksum matches, so the store
    #    accepts it and the load fails): the fault is the checkpoint's, exit 4, not a restart loop.
    newest = os.path.join(ckpt, rounds[-1])
    with open(os.path.join(newest, files.MANIFEST)) as f:
        manifest = json.load(f)
    with open(os.path.join(newest, files.GLOBAL), "rb") as f:
        original = f.read()
    with open(os.path.join(newest, files.rank_part(0)), "rb") as f:
        stand_in = f.read()  # a valid archive without outer.*
    with open(os.path.join(newest, files.GLOBAL), "wb") as f:
        f.write(stand_in)
    saved = manifest["files"][files.GLOBAL]
    manifest["files"][files.GLOBAL] = {"bytes": len(stand_in), "fnv1a64": fnv1a64(stand_in)}
    with open(os.path.join(newest, files.MANIFEST), "w") as f:
        json.dump(manifest, f)
    refused("missing outer state", [newest, "no outer state"], names_the_key=False)
    with open(os.path.join(newest, files.GLOBAL), "wb") as f:
        f.write(original)
    manifest["files"][files.GLOBAL] = saved
    with open(os.path.join(newest, files.MANIFEST), "w") as f:
        json.dump(manifest, f)

    # 2. global.pt deleted from every round: every round is named, the directory is untouched.
    for d in rounds:
        os.remove(os.path.join(ckpt, d, files.GLOBAL))
    refused(f"{files.GLOBAL} deleted from every round", [os.path.join(ckpt, d) for d in rounds], names_the_key=True)

    # 3. Starting over is a choice: the run trains from step 0 and its rounds replace the old ones.
    r = launch(args + ["--set", "checkpoint.start_over_if_unusable=true"], os.path.join(work, "over"))
    out = r.stdout + r.stderr
    if r.returncode != 0 or "resumed from" in out or "starting from step 0" not in out:
        fail(f"start_over_if_unusable=true: exit {r.returncode}, expected 0 and a fresh start:\n{out[-3000:]}")
    rounds_now = [files.round_dir(r) for r in files.rounds_in(ckpt)]
    if not all(os.path.exists(os.path.join(ckpt, d, files.GLOBAL)) for d in rounds_now):
        fail(f"after starting over, some round still lacks {files.GLOBAL}: {files.listing(ckpt)}")
    print("ok start_over_if_unusable=true trains from step 0 and replaces the rounds")

    # 4. A round without a manifest is a save that never finished: a first run that crashed in
    #    its first save starts from step 0 (exit 0), it is not failed for it.
    shutil.rmtree(ckpt)
    os.makedirs(os.path.join(ckpt, files.round_dir(1)))
    with open(os.path.join(ckpt, files.round_dir(1), files.rank_part(0)), "wb") as f:
        f.write(b"partial")
    r = launch(args, os.path.join(work, "incomplete"))
    out = r.stdout + r.stderr
    if r.returncode != 0 or "no manifest" not in out:
        fail(f"an unfinished save only: exit {r.returncode}, expected 0 and the round ignored:\n{out[-3000:]}")
    print("ok a round without a manifest is ignored, the run starts from step 0")
    shutil.rmtree(work)


{
    "metrics": case_metrics,
    "unusable-checkpoints": case_unusable_checkpoints,
    "result-message": case_result_message,
    "runtime-failure": case_runtime_failure,
    "checkpoint-format": case_checkpoint_format,
    "launch-check": case_launch_check,
    "data-error": case_data_error,
    "resume": case_resume,
    "dead-peer": case_dead_peer,
    "frozen-peer": case_frozen_peer,
    "bad-config": case_bad_config,
    "launch-fail": case_launch_fail,
    "equivalence": case_equivalence,
    "repeat-bf16": case_repeat_bf16,
    "theta-flip": case_theta_flip,
}[CASE]()
print("PASS", CASE)
