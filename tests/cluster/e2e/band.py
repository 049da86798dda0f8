"""The fault-free perplexity band a faulted cluster job must end inside, from scripts/cluster/band.sh.

Contract: Band(image, prefix).start(manifest) runs band.sh's band_start on the PPUJob manifest's
training section in a bash of its own (three ppu-launch runs of the image, seeds 0, 1 and 2, in
podman, in the background, in a low-weight cgroup: band.sh says why), in a fresh directory
/var/tmp/PREFIX-band.XXXXXX; it raises BandError when they cannot start. wait() waits for them
(band_wait) and says whether all succeeded; bounds() reads their summaries: seed 0's final
perplexity minus and plus the seeds' range, each rounded to 3 decimals as band.sh printed them.
stop() ends runs still going (their containers removed by name too), removes their cgroup and
the directory; it is safe to call at any time, and twice. start() first removes band containers
an earlier run left (a run killed before its cleanup: found running 9 hours on). in_image() runs one command in the image as band.sh's in_image does.
inside(bounds, x) is band.sh's in_band: x a number within [lo, hi]; anything else is outside.
"""

import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ppu import files, summary

from . import REPO

BAND_SH = REPO / "scripts" / "cluster" / "band.sh"
# band_start in the script's own shell, so that band_wait can wait for its runs; band_stop on the
# way out, whether the runs ended, failed or this bash was told to stop (SIGTERM).
_RUN = """set -euo pipefail
source "$1"
trap band_stop EXIT
trap 'exit 143' TERM
band_start "$2"
echo started
band_wait
"""
_STOP = 'set -euo pipefail; source "$1"; band_stop'
_IN_IMAGE = 'set -euo pipefail; source "$1"; shift; in_image "$@"'


class BandError(RuntimeError):
    """The fault-free runs could not start, or left no summary."""


@dataclass(frozen=True)
class Bounds:
    lo: float
    hi: float
    p0: float

    def __str__(self) -> str:
        return f"[{self.lo:.3f}, {self.hi:.3f}]"


def assert_inside(bounds: Bounds, job: str, perplexity: str | None) -> None:
    """A test's assertion: `job`'s final perplexity lies in the band."""
    assert inside(bounds, perplexity), f"{job}: final perplexity '{perplexity}' outside the fault-free band {bounds}"


def inside(bounds: Bounds, perplexity: str | None) -> bool:
    """Whether the perplexity (a decimal string) lies in [lo, hi]; a missing or non-numeric one does not."""
    try:
        value = float(perplexity) if perplexity is not None else math.nan
    except ValueError:
        return False
    return bounds.lo <= value <= bounds.hi


# band.sh names each seed's container ppu-band-<its bash's pid>-<seed>.
_CONTAINER_PREFIX = "ppu-band-"


def remove_containers(prefix: str) -> None:
    """Removes every podman container whose name starts with prefix, running or not."""
    listed = subprocess.run(
        ["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True, check=False
    )
    for name in listed.stdout.split():
        if name.startswith(prefix):
            subprocess.run(["podman", "rm", "-f", "-t", "0", name], capture_output=True, check=False)


def in_image(image: str, directory: Path, *command: str, log: Path) -> int:
    """band.sh's in_image: COMMAND in the image, no network, directory bind-mounted; output to log; its exit status."""
    env = dict(os.environ, IMAGE=image)
    with log.open("w") as out:
        argv = ["bash", "-c", _IN_IMAGE, "in-image", str(BAND_SH), str(directory), *command]
        return subprocess.run(argv, check=False, stdout=out, stderr=subprocess.STDOUT, env=env).returncode


class Band:
    """The three fault-free runs of one end-to-end run."""

    def __init__(self, image: str, prefix: str):
        self.image = image
        self.prefix = prefix
        self.directory: Path | None = None
        self._runs: subprocess.Popen | None = None

    def start(self, manifest: str) -> None:
        """Starts seeds 0, 1 and 2 of the manifest's PPUJob training section; returns once they run."""
        remove_containers(_CONTAINER_PREFIX)  # a run killed before its cleanup leaves its band running
        self.directory = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-band.", dir="/var/tmp"))
        self._runs = subprocess.Popen(
            ["bash", "-c", _RUN, "band", str(BAND_SH), str(self.directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, IMAGE=self.image),
        )
        assert self._runs.stdin is not None and self._runs.stdout is not None
        self._runs.stdin.write(manifest)
        self._runs.stdin.close()
        if self._runs.stdout.readline().strip() != "started":
            self._runs.wait()
            raise BandError("the fault-free band's runs (scripts/cluster/band.sh) could not start")

    def wait(self) -> bool:
        """Waits for the runs; False when one failed (band.sh printed its last lines)."""
        if self._runs is None:
            return False
        return self._runs.wait() == 0

    def checked_bounds(self, step: str) -> Bounds:
        """The band once its runs ended; a run that failed fails `step` (a test's assertion)."""
        assert self.wait(), f"{step} compares with local fault-free runs, and one failed"
        return self.bounds()

    def bounds(self) -> Bounds:
        """seed 0's perplexity -/+ the range of seeds 0, 1 and 2 (band_of)."""
        try:
            p = [summary.load(files.summary_file(self.directory / f"seed-{s}", 0)).eval_perplexity for s in (0, 1, 2)]
        except (OSError, KeyError, TypeError, ValueError) as e:  # ValueError: not JSON, or a ContractError
            raise BandError(f"the fault-free runs left no summary in {self.directory}: {e}") from e
        for s in (0, 1, 2):
            log = self.directory / f"seed-{s}.log"
            replaced = log.read_text(errors="replace").count("restarting it in place") if log.exists() else 0
            if replaced:
                print(f"band: seed {s} restarted {replaced} fenced rank(s) in place (band.sh)", file=sys.stderr)
        spread = max(p) - min(p)
        print("band: seeds 0, 1, 2 end at perplexity " + ", ".join(f"{x:.3f}" for x in p), file=sys.stderr)
        return Bounds(*(float(f"{x:.3f}") for x in (p[0] - spread, p[0] + spread, p[0])))

    def stop(self) -> None:
        """Ends runs still going (their containers removed), removes the band's cgroup and directory."""
        if self._runs is not None:
            if self._runs.poll() is None:
                self._runs.terminate()
                self._runs.wait()
            # By name as well: band.sh's own trap removes them only when its bash lives to run it.
            remove_containers(f"{_CONTAINER_PREFIX}{self._runs.pid}-")
        # The cgroup again: in_image() runs after the band ended make it anew.
        subprocess.run(
            ["bash", "-c", _STOP, "band-stop", str(BAND_SH)], check=False, env=dict(os.environ, IMAGE=self.image)
        )
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
