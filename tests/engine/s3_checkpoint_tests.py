"""Checkpoints in object storage (checkpoint.dir: s3://BUCKET/PREFIX) with real processes under
ppu-launch against a real S3-compatible server, SeaweedFS (tests/objectstore/seaweed.py): 4 ranks
of the tiny config, N = 2, rounds of H = 10 steps, a checkpoint every round.

usage: s3_checkpoint_tests.py BIN_DIR SOURCE_DIR CASE
cases: write-resume  a run writes its checkpoints to S3: the newest `keep` rounds stay, each with
                     its manifest, global part and every rank's part; its final parameters are those
                     of the same run on a local directory, bit for bit, and ppu-export reads the
                     newest round from S3 into the same bytes as from the directory; a longer rerun
                     resumes from the newest round in S3
       corrupt       the newest round's rank-1 part overwritten with other bytes and the round before
                     it without its manifest: the rerun skips both (a checksum failure, an unfinished
                     save) and resumes from the round before them
       killed        the server SIGKILLed mid-run and started again 4 s later: the saves in flight
                     are retried with back-off (logged), training goes on, the job exits 0, and a
                     rerun resumes from the newest round, complete
       credentials   a wrong secret key, then no access key at all: ppu-launch exits 2 before any
                     step, the message naming checkpoint.dir and the variable to fix
       background    checkpoint.upload auto (background for s3://, one round in flight) against
                     inline: the same final parameters; every rank's summary says how it wrote
                     (rounds written and skipped add up to the run's rounds, bytes written), the
                     last round is committed (never skipped), and the background rounds hold each
                     member's receipt beside its part
       slow-store    the store stalled for 8 s mid-run (a relay in front of it stops moving bytes;
                     checkpoint.write_timeout_s 3): training goes on through it (steps are logged
                     meanwhile), the rounds caught in it are given up or skipped and counted, the
                     job exits 0, and a rerun resumes from rank 0's last committed round
"""

import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "objectstore"))
from launch_harness import Launch, events, fail, one_checksum, tiny_job
from ppu import files
from ppu.exit_codes import ExitCode
from seaweed import BUCKET, Seaweed
from stall_proxy import StallProxy

BIN, SRC, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
LAUNCH = os.path.join(BIN, "bin", "ppu-launch")
EXPORT = os.path.join(BIN, "bin", "ppu-export")
H = 10
PREFIX = "run/"
LOCATION = f"s3://{BUCKET}/{PREFIX}"


def launch(name, env, steps, location=LOCATION, keep=2, extra=(), in_flight=10, every=1):
    """ppu-launch of the tiny job with a checkpoint every round to `location`. Rounds here are ~0.1 s
    and SeaweedFS's first writes take seconds (it grows its volumes): with room for 10 rounds in
    flight no round is skipped (each in memory is ~1 MB), so every round is a checkpoint. Long runs
    checkpoint every `every` rounds: the test server holds 1 GB, and it reclaims deleted objects'
    space only when compacted."""
    work = tempfile.mkdtemp(prefix=f"ppu-s3-{name}-")
    cmd = [LAUNCH, *tiny_job(SRC, H, 2.0), "--set", f"train.steps={steps}", "--set", f"checkpoint.dir={location}",
           "--set", f"checkpoint.every_rounds={every}", "--set", f"checkpoint.keep={keep}",
           "--set", f"checkpoint.max_in_flight={in_flight}", *extra]  # fmt: skip
    return Launch(work, cmd, env=env)


def finished(run, what):
    rc = run.finish()
    if rc != 0:
        fail(f"{what}: ppu-launch exited {rc}\n{events(run.text())}")
    return rc


def rounds_in_s3(s3):
    """{round: set of object names} under PREFIX."""
    rounds = {}
    for key in s3.ls(PREFIX):
        m = re.match(rf"{PREFIX}{files.ROUND_PREFIX}(\d+)/(.+)$", key)
        if m:
            rounds.setdefault(int(m.group(1)), set()).add(m.group(2))
    return rounds


def complete(names):
    return {files.MANIFEST, files.GLOBAL, *(files.rank_part(r) for r in range(4))} <= names


def resumed_round(run):
    m = re.search(r"resumed from (\S+) at step (\d+)", run.text())
    return (m.group(1), int(m.group(2))) if m else (None, None)


def case_write_resume(s3):
    run = launch("write", s3.env(), 60)
    finished(run, "checkpoints to S3")
    rounds = rounds_in_s3(s3)
    if sorted(rounds) != [5, 6] or not all(complete(names) for names in rounds.values()):
        fail(f"checkpoint.keep = 2 after 6 rounds: S3 holds {rounds}, want rounds 5 and 6 complete")
    local_dir = tempfile.mkdtemp(prefix="ppu-s3-dir-")
    local = launch("dir", os.environ.copy(), 60, location=local_dir)
    finished(local, "checkpoints to a directory")
    if one_checksum(run) != one_checksum(local):
        fail(f"the same run gives {one_checksum(run)} with S3 checkpoints, {one_checksum(local)} with a directory")
    exported = export_both(s3, run_location=local_dir)
    longer = launch("resume", s3.env(), 80)
    finished(longer, "the rerun")
    where, step = resumed_round(longer)
    if step != 60 or where != f"{LOCATION}{files.round_dir(6)}":
        fail(f"the rerun resumed from {where} at step {step}, want {LOCATION}{files.round_dir(6)} at step 60")
    print(f"S3 checkpoints: rounds {sorted(rounds)} kept, the directory's θ ({one_checksum(local)}), ppu-export "
          f"reads them ({exported}), resumed at 60")  # fmt: skip


def export_both(s3, run_location):
    """ppu-export --format ppu of the newest round from S3 and from the directory of the same run:
    the same files, the same weights, and the provenance names the S3 location."""
    outs = {}
    for name, where, env in (("s3", LOCATION, s3.env()), ("dir", run_location, os.environ.copy())):
        outs[name] = tempfile.mkdtemp(prefix=f"ppu-s3-export-{name}-")
        r = subprocess.run([EXPORT, "--checkpoint", where, "--out", outs[name], "--format", "ppu"],
                           capture_output=True, text=True, env=env, check=False)  # fmt: skip
        if r.returncode != 0:
            fail(f"ppu-export --checkpoint {where} exited {r.returncode}: {r.stderr[-2000:]}")
    names = sorted(os.listdir(outs["s3"]))
    if names != sorted(os.listdir(outs["dir"])):
        fail(f"ppu-export wrote {names} from S3, {sorted(os.listdir(outs['dir']))} from the directory")
    weights = {name: pathlib.Path(out, "model.safetensors").read_bytes() for name, out in outs.items()}
    if weights["s3"] != weights["dir"]:
        fail("ppu-export's model.safetensors differs between S3 and the directory")
    with open(os.path.join(outs["s3"], "ppu_provenance.json")) as f:
        if LOCATION not in f.read():
            fail(f"ppu-export's provenance does not name {LOCATION}")
    return f"model.safetensors byte-identical to the directory's, provenance naming {LOCATION}"


def case_corrupt(s3):
    finished(launch("first", s3.env(), 60, keep=3), "checkpoints to S3")
    newest = f"{PREFIX}{files.round_dir(6)}/{files.rank_part(1)}"
    part = s3.get(newest)
    s3.put(newest, bytes(b ^ 0x5A for b in part))
    s3.rm(f"{PREFIX}{files.round_dir(5)}/{files.MANIFEST}")
    rerun = launch("rerun", s3.env(), 80, keep=3)
    finished(rerun, "the rerun over a corrupt and an unfinished round")
    where, step = resumed_round(rerun)
    log = rerun.text()
    if step != 40 or where != f"{LOCATION}{files.round_dir(4)}":
        fail(f"resumed from {where} at step {step}, want round 4 at step 40\n{events(log)}")
    if not re.search(
        rf"skipping checkpoint \S+{files.round_dir(6)}: {re.escape(files.rank_part(1))} fails its checksum", log
    ):
        fail(f"no rank named the corrupt part of round 6\n{events(log)}")
    if not re.search(rf"ignoring \S+{files.round_dir(5)}: no manifest", log):
        fail(f"round 5 without its manifest was not ignored as unfinished\n{events(log)}")
    print("corrupt object and missing manifest: both rounds skipped, resumed from round 4")


def case_killed(s3):
    run = launch("killed", s3.env(), 300, extra=["--set", "network.recovery=live"])
    run.wait_for(r"\[rank 0\] .* step 60/")
    s3.kill()
    time.sleep(4)
    s3.start()
    finished(run, "the server killed and restarted mid-run")
    log = run.text()
    retries = len(re.findall(r"checkpoint storage: .* failed \(attempt \d+: .*\); trying again", log))
    if retries == 0:
        fail(f"no save was retried while the server was down\n{events(log)}")
    rounds = rounds_in_s3(s3)
    newest = max(rounds)
    rerun = launch("after-kill", s3.env(), 310, extra=["--set", "network.recovery=live"])
    finished(rerun, "the rerun")
    where, step = resumed_round(rerun)
    if step != newest * H:
        fail(f"the rerun resumed at step {step} from {where}, want the newest round {newest}")
    print(f"server killed for 4 s: {retries} retried requests, exit 0, resumed from round {newest}")


def case_credentials(s3):
    for what, env, variable in (
        ("a wrong secret key", s3.env(secret="not-the-secret"), "AWS_SECRET_ACCESS_KEY"),
        ("no access key", {k: v for k, v in s3.env().items() if k != "AWS_ACCESS_KEY_ID"}, "AWS_ACCESS_KEY_ID"),
    ):
        run = launch("credentials", env, 60)
        rc = run.finish()
        log = run.text()
        if rc != ExitCode.CONFIG_ERROR or variable not in log or "checkpoint.dir" not in log:
            fail(
                f"{what}: exit {rc} (want {ExitCode.CONFIG_ERROR}, naming checkpoint.dir and {variable})\n{events(log)}"
            )
        if re.search(r" step \d+/", log):
            fail(f"{what}: training started\n{events(log)}")
        if s3.ls(PREFIX):
            fail(f"{what}: objects were written: {s3.ls(PREFIX)}")
    print("wrong and missing credentials: exit 2 before any step, naming the variable")


def case_background(s3):
    background = launch("background", s3.env(), 60, keep=6, in_flight=1)
    finished(background, "background upload")
    receipts = {r: {n for n in names if files.is_receipt(n)} for r, names in rounds_in_s3(s3).items()}
    inline_location = f"s3://{BUCKET}/inline/"
    inline = launch("inline", s3.env(), 60, location=inline_location, keep=6,
                    extra=["--set", "checkpoint.upload=inline"])  # fmt: skip
    finished(inline, "inline upload")
    if one_checksum(background) != one_checksum(inline):
        fail(f"background upload ends at {one_checksum(background)}, inline at {one_checksum(inline)}")
    for run, upload in ((background, "background"), (inline, "inline")):
        for r in range(4):
            writes = run.summary(r).checkpoint_writes
            if writes.upload != upload or writes.rounds + writes.skipped != 6 or writes.bytes <= 0:
                fail(f"{upload}: rank {r}'s checkpoint_writes is {writes}, want upload {upload} and 6 rounds")
        if run.summary(0).last_checkpoint_round != 6:
            fail(f"{upload}: rank 0's last checkpoint is round {run.summary(0).last_checkpoint_round}, want 6")
    written = [r for r, names in receipts.items() if names]
    if not written or any(receipts[r] != {files.receipt(m) for m in (1, 2, 3)} for r in written):
        fail(f"background rounds' receipts: {receipts}, want ranks 1-3's beside each round")
    inline_receipts = [k for k in s3.ls("inline/") if files.is_receipt(k.rsplit("/", 1)[-1])]
    if inline_receipts:
        fail(f"inline rounds have receipts: {inline_receipts}")
    waits = [background.summary(r).checkpoint_writes.training_wait_seconds for r in range(4)]
    print(f"background and inline: the same θ ({one_checksum(inline)}), rounds {sorted(written)} with receipts, "
          f"training thread's checkpoint seconds {[round(w, 3) for w in waits]}")  # fmt: skip


def last_step(log):
    steps = re.findall(r"\[rank 0\] .* step (\d+)/", log)
    return int(steps[-1]) if steps else -1


def case_slow_store(s3):
    with StallProxy(s3.ports["s3"]) as proxy:
        env = {**s3.env(), "AWS_ENDPOINT_URL": proxy.endpoint}
        run = launch("slow", env, 3000, keep=3, extra=["--set", "checkpoint.write_timeout_s=3"], in_flight=1, every=10)
        run.wait_for(r"\[rank 0\] .* step 300/", timeout=180)
        proxy.stall()
        at_stop = last_step(run.text())
        time.sleep(8)
        during = last_step(run.text())
        proxy.flow()
        finished(run, "the store stalled for 8 s mid-run")
    if during - at_stop < 4 * H:
        fail(f"training stalled with the store: rank 0 went from step {at_stop} to {during} in 8 s")
    summaries = [run.summary(r) for r in range(4)]
    lost = sum(s.recovery.checkpoints_failed + s.checkpoint_writes.skipped for s in summaries)
    if lost == 0:
        fail(f"no round was given up or skipped while the store was stalled\n{events(run.text())}")
    newest = summaries[0].last_checkpoint_round
    rerun = launch("after-stall", s3.env(), 3100, keep=3, every=10)
    finished(rerun, "the rerun")
    where, step = resumed_round(rerun)
    if step != newest * H:
        fail(f"the rerun resumed at step {step} from {where}, want rank 0's last checkpoint, round {newest}")
    print(f"store stalled for 8 s: rank 0 trained steps {at_stop} to {during} meanwhile, {lost} rank-rounds given up "
          f"or skipped, exit 0, resumed from round {newest}")  # fmt: skip


CASES = {"write-resume": case_write_resume, "corrupt": case_corrupt, "killed": case_killed,
         "credentials": case_credentials, "background": case_background, "slow-store": case_slow_store}  # fmt: skip

with Seaweed(BIN, SRC) as server:
    CASES[CASE](server)
print("PASS", CASE)
