#!/usr/bin/env python3
"""image_test.sh's reading of the summary a 2-rank run inside the image wrote (python/ppu).

usage: image_summary.py path DIR     rank 0's summary file under `ppu-launch --summary-dir DIR`
       image_summary.py check JSON   that summary's text: checked against the contract's field
                                     list, a parameter checksum, LibTorch on OpenBLAS's OpenMP
                                     build; prints an ok line, exits 1 (an AssertionError or a
                                     ContractError) when one fails
"""

import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))

from ppu import files, summary


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("path", "check"):
        sys.exit(__doc__.split("\n\n", 1)[1])
    what, arg = sys.argv[1:]
    if what == "path":
        print(files.summary_file(arg, 0))
        return
    s = summary.of(json.loads(arg), "rank 0's summary from inside the image")
    assert s.param_checksum, "no param_checksum"
    assert s.blas.variant == "openmp", f"LibTorch uses BLAS variant {s.blas.as_dict()}"
    print(f"ok: 2 ranks trained inside the image; BLAS {s.blas.library} ({s.blas.variant})")


if __name__ == "__main__":
    main()
