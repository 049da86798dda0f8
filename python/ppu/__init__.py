"""ppu: what Python tests, benches and scripts need to talk to PPU's binaries, read from one
machine-readable contract (contract.json, generated from the C++ definitions by ppu-contract;
scripts/verify.sh and the ctest operator.contract_file fail when it drifts).

  ppu.CONTRACT        the contract as loaded JSON
  ppu.exit_codes      ExitCode (ppu-train's and ppu-launch's codes by name), on_exit(code, live)
  ppu.files           file names: a rank's summary, a checkpoint's rounds, parts and notes
  ppu.summary         Summary: a run summary checked against its field list, read by attribute
                      (s.eval_loss, s.recovery.theta_mismatches); load(), load_dir()
  ppu.status          Status: a PPUJob's status read by attribute (st.outer_round for outerRound)
  ppu.choices         the allowed names of every choice-valued config key (Method.STREAMING_DILOCO)
  ppu.metrics         metric names by C++ constant: RANK.flops_executed, OPERATOR.job_loss

A program outside python/ puts the repository's python/ directory on sys.path, then imports what
it needs. No file outside python/ppu
spells a summary key, a contract file name or an exit code: scripts/check-contract-strings.py
counts them (ctest lint.contract_strings).
"""

import json
import os

CONTRACT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contract.json")

with open(CONTRACT_PATH) as _f:
    CONTRACT = json.load(_f)
