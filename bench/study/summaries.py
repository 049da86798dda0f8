#!/usr/bin/env python3
"""What the study's shell scripts (run.sh, owners.sh, kernel_pin.sh) read of a run's rank
summaries, through python/ppu.

  summaries.py path DIR               the file of rank 0's summary under ppu-launch --summary-dir DIR
  summaries.py eval-loss DIR          rank 0's final eval loss (run.sh's inner lr sweep)
  summaries.py check-kernels SUMMARY  exit 0 when rank summary SUMMARY ran on the kernel path that
                                      kernel_pin.sh's study_pin_kernels exported; else exit 1 with
                                      the path it took (or that it records none)

A study's runs are read as they are (check=False), as report.py reads them: PPU_BUILD may be a
snapshot of another commit's binaries, and a resumed OUT holds runs of earlier days, whose
summaries may lack fields that today's have.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
import report  # beside this file: the kernel path's fields, in the order report.py compares them
from ppu import files, summary  # the repository's python/, above
from ppu.record import ContractError


def check_kernels(path):
    env = os.environ
    pin = dict(
        zip(
            report.KERNEL_KEYS,
            (env["OPENBLAS_CORETYPE"], env["ATEN_CPU_CAPABILITY"], env["PPU_ONEDNN"] != "off"),
            strict=True,
        )
    )
    try:
        kp = summary.load(path, check=False).kernel_path
    except ContractError:
        kp = None
    if kp is None:
        sys.exit(f"{path} records no kernel_path (made before the study's v2)")
    try:
        same = all(getattr(kp, k) == v for k, v in pin.items())
    except ContractError:  # a field of the kernel path missing: not the pinned path
        same = False
    sys.exit(0 if same else f"kernel path {kp.as_dict()}, not the study's {pin}")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("path", "eval-loss", "check-kernels"):
        sys.exit("usage: summaries.py path DIR | eval-loss DIR | check-kernels SUMMARY")
    what, arg = sys.argv[1:]
    if what == "path":
        print(files.summary_file(arg, 0))
    elif what == "eval-loss":
        print(summary.load(files.summary_file(arg, 0), check=False).eval_loss)
    else:
        check_kernels(arg)


if __name__ == "__main__":
    main()
