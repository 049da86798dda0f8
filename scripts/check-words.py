#!/usr/bin/env python3
"""The operator writes and compares the Kubernetes API's words through named constants only.

The words are the string values of the `inline constexpr const char* kName = "Word";` lines of
operator/src/reconcile/job_constants.h (the PPUJob API: phases, condition types, reasons) and
operator/src/kube/kube_words.h (Kubernetes' own: pod phases, condition statuses, the condition
types the operator reads). Any other C++ file of operator/src that spells one of those words as a
whole string literal ("Running", "True") is a finding: the word has a second definition that can
drift from the first. Comments are not code and are skipped. A line that uses the same letters for
something else (a printer column's title) says so with a trailing `// words: not <Word>` comment.
Prints "check-words: PASS ..." or "check-words: FAIL ..." last (ctest lint.words).

Usage: scripts/check-words.py [SOURCE_ROOT]
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
SRC = ROOT / "operator" / "src"
WORD_FILES = [SRC / "reconcile" / "job_constants.h", SRC / "kube" / "kube_words.h"]
CONSTANT = re.compile(r'inline constexpr const char\* k[A-Za-z0-9]+ =\s*"([^"]+)";')
# A string literal, or a comment (dropped): whichever starts first wins, so "//" inside a string
# stays a string and a quote inside a comment stays a comment.
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
WAIVER = re.compile(r"//\s*words:\s*not\s+(\w+)")


def words():
    """Every word the two vocabulary headers define."""
    found = set()
    for f in WORD_FILES:
        if not f.exists():
            sys.exit(f"check-words: FAIL: {f.relative_to(ROOT)} is missing")
        found.update(CONSTANT.findall(f.read_text()))
    return found


def findings(vocabulary):
    """(file, line, word) for each whole-literal use of a word outside the vocabulary headers."""
    out = []
    for f in sorted(SRC.rglob("*")):
        if f.suffix not in (".h", ".cpp") or f in WORD_FILES:
            continue
        text = f.read_text()
        lines = text.splitlines()
        for m in TOKEN.finditer(text):
            tok = m.group(0)
            if not tok.startswith('"') or tok[1:-1] not in vocabulary:
                continue
            line = text.count("\n", 0, m.start()) + 1
            waiver = WAIVER.search(lines[line - 1])
            if waiver and waiver.group(1) == tok[1:-1]:
                continue
            out.append((f.relative_to(ROOT), line, tok))
    return out


def main():
    vocabulary = words()
    bad = findings(vocabulary)
    for f, line, tok in bad:
        print(f"{f}:{line}: {tok} spelled out; use its constant (reconcile/job_constants.h, kube/kube_words.h)")
    if bad:
        print(f"check-words: FAIL: {len(bad)} spelled-out API words")
        return 1
    print(f"check-words: PASS: {len(vocabulary)} API words, each spelled only in its constant")
    return 0


if __name__ == "__main__":
    sys.exit(main())
