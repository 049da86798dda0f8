"""How the one-node program's phases compare printed values and run the check scripts.

Contract: same(a, b) compares two values as printed (the bash compared jsonpath's and json's
printed values as strings); run_check(*argv, failure=...) runs a check program, its lines shown as
it prints them, and fails with `failure` when it exits non-zero.
"""

import subprocess


def same(a: object, b: object) -> bool:
    """Equal as printed: the bash compared jsonpath's and json's printed values as strings."""
    return str(a) == str(b)


def run_check(*argv: str, failure: str) -> None:
    """A check program (its lines shown as it prints them); fails with `failure` when it exits non-zero."""
    if subprocess.run(list(argv), check=False).returncode != 0:
        raise AssertionError(failure)
