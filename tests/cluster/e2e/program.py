"""What tells one end-to-end program from the other, and how a program reports its progress.

Contract: each program's package declares PROGRAM = Program(...) (single_node/__init__.py,
two_nodes/__init__.py), which its conftest's `program` fixture returns: its name (the prefix of
its progress lines), its PASS label, the cluster state dir and API port it uses unless
PPU_CLUSTER_DIR and PPU_CLUSTER_PORT say otherwise, its job namespace, node count, what `kubectl
get` shows of the cluster when it fails, the prefix of its scratch directories under /var/tmp,
whether it prints how long each phase took, band_job(image): the PPUJob manifest whose
training section the fault-free band runs, and how helm.install_operator puts the operator on its
cluster (in OPERATOR_NAMESPACE): operator_sets, the chart's `--set`s beyond the image's;
sample_alias, whether the image is also loaded under the samples' image name; quiet_load, whether
that load's output is dropped; operator_accounts, the ServiceAccounts created beside the operator.
Progress prints, flushed at once: say() "[NAME +Ns] ...", passed() "PASS LABEL: ...", phase()
"[NAME] phase 'WHAT' took N s" (seconds since the previous phase; only when the program is timed)
and done() the program's last line.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

# Where both programs install the operator's chart.
OPERATOR_NAMESPACE = "ppu-system"


@dataclass(frozen=True)
class Program:
    name: str
    pass_label: str
    cluster_dir: str
    cluster_port: str
    namespace: str
    nodes: int
    failure_kinds: str
    scratch_prefix: str
    timed: bool
    band_job: Callable[[str], str]
    operator_sets: tuple[str, ...]
    sample_alias: bool
    quiet_load: bool
    operator_accounts: tuple[str, ...]


class Progress:
    """The progress lines of one program's run."""

    def __init__(self, program: Program):
        self.program = program
        self.start = int(time.time())
        self._phase_start = self.start

    def elapsed(self) -> int:
        return int(time.time()) - self.start

    def say(self, message: str) -> None:
        print(f"[{self.program.name} +{self.elapsed()}s] {message}", flush=True)

    def passed(self, message: str) -> None:
        print(f"PASS {self.program.pass_label}: {message}", flush=True)

    def restart_phase(self) -> None:
        """The next phase() counts from now."""
        self._phase_start = int(time.time())

    def phase(self, what: str) -> None:
        now = int(time.time())
        if self.program.timed:
            print(f"[{self.program.name}] phase '{what}' took {now - self._phase_start} s", flush=True)
        self._phase_start = now

    def done(self) -> None:
        print(f"{self.program.name}: all checks passed in {self.elapsed()} s", flush=True)
