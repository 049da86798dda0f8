#!/usr/bin/env python3
"""Runs a command and records the peak resident set size of its largest descendant process.

Contract: `peak_rss.py OUT_FILE -- CMD...` runs CMD, waits for it, writes
"<exit status> <peak RSS bytes> <wall seconds>" to OUT_FILE and exits with CMD's status.
The peak is getrusage(RUSAGE_CHILDREN).ru_maxrss: the largest RSS any waited-for descendant
(here: one ppu-train rank under ppu-launch) ever had.
"""

import resource
import subprocess
import sys
import time

if len(sys.argv) < 4 or sys.argv[2] != "--":
    sys.exit("usage: peak_rss.py OUT_FILE -- CMD...")
start = time.monotonic()
status = subprocess.call(sys.argv[3:])
wall = time.monotonic() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
with open(sys.argv[1], "w") as f:
    f.write(f"{status} {peak} {wall:.3f}\n")
sys.exit(status)
