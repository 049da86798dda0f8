"""Exit codes of ppu-train and ppu-launch by name, and the supervisor's decision for each, from
the contract (runtime/core/job_contract.h).

  ExitCode.DONE, RUNTIME_FAILURE, CONFIG_ERROR, PEER_FAILURE, DATA_ERROR, REJOIN,
  LEFT_ON_SIGTERM, LEFT_ON_SIGINT      (an IntEnum: compares equal to the process's returncode)
  left_on_notice(signal)               128 + signal: a rank that acted on a notice and left
  on_exit(code, live)                  "finished", "fail_job", "restart_rank" or "restart_gang"
  is_permanent(code)                   no restart can succeed (the job fails)
"""

import enum

from . import CONTRACT

_EXIT = CONTRACT["exit_codes"]

ExitCode = enum.IntEnum("ExitCode", {name.upper(): code for name, code in _EXIT["codes"].items()})


def left_on_notice(signal):
    return _EXIT["notice_base"] + int(signal)


def on_exit(code, live):
    table = _EXIT["on_exit"]["live" if live else "gang"]
    return table.get(str(int(code)), table["other"])


def is_permanent(code):
    return on_exit(code, live=True) == "fail_job"
