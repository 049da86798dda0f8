#!/usr/bin/env python3
"""No Python or shell file spells what the contract (python/ppu/contract.json) defines: they read
it through the package python/ppu. Counted, per file and line (ctest lint.contract_strings):

  summary key   a string literal equal to a run-summary field name that a plain word could not be
                (it has an underscore: eval_loss, param_checksum, theta_mismatches; or it is an
                object of the summary: recovery, state_bytes, blas ...), at any depth; in a shell
                script, such a name as a whole word outside a comment. One-word leaf names
                (tokens, steps, total, round) are left out: the lint cannot tell a summary's
                from another dict's, and attribute access (ppu.summary) checks them instead.
  file name     a literal that spells a file of the contract: a rank's summary (rank-<r>.json as
                an f-string, a %-format or a number), a checkpoint's round directory or rank part,
                manifest.json, global.pt, the notes (reached.json, notice.json,
                live-fallback.json), the termination log
  exit code     a comparison of an exit status (a name like rc, code, returncode, status, exit)
                with one of the contract's codes (2-5, 130, 143), directly or in a tuple, list or
                set; a keyword argument of such a name given one of them; in a shell script,
                `-eq`/`-ne`/`==`/`!=` of $? or such a variable with one of them. 0 and 1 (success,
                failure) are every program's convention, not ours.

Python is read through its syntax tree (docstrings skipped), shell line by line (comments
skipped; a word followed by a dot and a name is a config key, e.g. slicing.mode, not a summary's).
A line whose letters are another document's (a checkpoint manifest's world_size, a column title)
says so in a comment `# contract: not <what it is>` on the line itself or on its own line just
above it, which waives the line's summary-key findings (never a file name or an exit code), as
check-words.py's waiver does for C++.
Files: every tracked *.py and *.sh and every tracked file under scripts/ that starts with a bash
shebang, but python/ppu/, its test, this script and its test (tests/python/). Prints each finding, then
"check-contract-strings: PASS ..." or "... FAIL: N" last; exit 1 on any finding.

Usage: scripts/check-contract-strings.py [SOURCE_ROOT]
"""

import ast
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
CONTRACT = json.loads((ROOT / "python" / "ppu" / "contract.json").read_text())
EXIT_CODES = {c for c in CONTRACT["exit_codes"]["codes"].values() if c not in (0, 1)}
STATUS_NAME = re.compile(r"(?:^|_)(rc|code|codes|returncode|status|exit|exit_code|exitcode|ret)$", re.IGNORECASE)


def summary_keys():
    """The flagged summary names (see the docstring): underscored names and object fields, at any depth."""
    out = set()

    def walk(fields):
        for name, shape in fields.items():
            if "_" in name or shape.get("type") == "object":
                out.add(name)
            if "fields" in shape:
                walk(shape["fields"])
            for inner in ("items", "values"):
                if inner in shape and "fields" in shape[inner]:
                    walk(shape[inner]["fields"])

    walk(CONTRACT["summary"]["fields"])
    return out


def file_patterns():
    files = CONTRACT["files"]
    ckpt = files["checkpoint"]
    exact = [ckpt["manifest"], ckpt["global"], ckpt["reached_note"], ckpt["notice_note"], ckpt["fallback_note"]]
    exact.append(files["termination_log"])

    def prefix_of(fmt):
        return re.escape(fmt.split("%", 1)[0])

    def suffix_of(fmt):
        return re.escape(re.sub(r"^[^%]*%[0-9a-z]*[di]", "", fmt))

    numbered = []
    for fmt in (files["rank_summary_format"], ckpt["rank_part_format"], ckpt["round_dir_format"]):
        # the name with its number as an f-string field ({rank}), a %-format (%d, %05d) or digits
        numbered.append(re.compile(r"(?<![\w-])" + prefix_of(fmt) + r"(?:\{[^}]*\}|%[0-9]*[di]|\d+)" + suffix_of(fmt)))
    # the bare prefix of a round directory, e.g. "round-" + ...
    numbered.append(re.compile(r"^" + re.escape(ckpt["round_prefix"]) + r"$"))
    return [re.compile(re.escape(e)) for e in exact] + numbered


KEYS = summary_keys()
OWN_FILES = {
    "scripts/check-contract-strings.py",
    "tests/python/ppu_package_test.py",
    "tests/python/contract_strings_test.py",
}
WAIVER = re.compile(r"#\s*contract:\s*not\b")
FILES = file_patterns()


def tracked():
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True).stdout
    for rel in out.splitlines():
        if rel.startswith("python/ppu/") or rel in OWN_FILES:
            continue
        path = ROOT / rel
        if not path.is_file():
            continue
        if rel.endswith(".py"):
            yield rel, "python"
        elif rel.endswith(".sh"):
            yield rel, "shell"
        elif rel.startswith("scripts/") and "." not in pathlib.Path(rel).name:
            with open(path, errors="replace") as f:
                first = f.readline()
            if first.startswith("#!") and "sh" in first:
                yield rel, "shell"


def docstrings(tree):
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def text_of(node):
    """A string literal's text; an f-string's with every replacement field written as "{}"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def exit_status_name(node):
    if isinstance(node, ast.Name):
        return STATUS_NAME.search(node.id) is not None
    if isinstance(node, ast.Attribute):
        return STATUS_NAME.search(node.attr) is not None
    if isinstance(node, ast.Call):  # proc.wait(), run(...).returncode is an Attribute
        return exit_status_name(node.func)
    return False


def codes_in(node):
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value in EXIT_CODES:
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [c for e in node.elts for c in codes_in(e)]
    return []


def waived_lines(lines):
    """Line numbers (1-based) a waiver covers: its own, and the next when it stands alone."""
    out = set()
    for n, line in enumerate(lines, 1):
        if WAIVER.search(line):
            out.add(n)
            if line.lstrip().startswith("#"):
                out.add(n + 1)
    return out


def python_findings(rel, source):
    waived = waived_lines(source.splitlines())
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        yield e.lineno or 0, f"cannot parse: {e.msg}"
        return
    skip = docstrings(tree)
    inside_fstring = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in skip or id(node) in inside_fstring:
            continue
        text = text_of(node)
        if text is not None:
            if text in KEYS and node.lineno not in waived and getattr(node, "end_lineno", 0) not in waived:
                yield node.lineno, f"summary key {text!r}"
            for rx in FILES:
                if rx.search(text):
                    yield node.lineno, f"file name in {text!r}"
                    break
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(exit_status_name(s) for s in sides):
                for s in sides:
                    for c in codes_in(s):
                        yield node.lineno, f"exit code {c}"
        if isinstance(node, ast.keyword) and node.arg and STATUS_NAME.search(node.arg):
            for c in codes_in(node.value):
                yield node.value.lineno, f"exit code {c} (keyword {node.arg})"


SHELL_EXIT = re.compile(
    r"(?:\$\?|\$\{?(?:\w*_)?(?:rc|code|status)\b\}?)\S*\s*(?:-eq|-ne|==|!=)\s*(\d+)\b", re.IGNORECASE
)


def shell_findings(rel, source):
    covered = waived_lines(source.splitlines())
    for n, line in enumerate(source.splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#!") else ""
        waived = n in covered
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?![A-Za-z0-9_]*\.[A-Za-z])", code):
            if word in KEYS and not waived:
                yield n, f"summary key {word!r}"
        for rx in FILES:
            for quoted in re.findall(r"[\w./%{}$-]+", code):
                if rx.search(quoted):
                    yield n, f"file name in {quoted!r}"
        for m in SHELL_EXIT.finditer(code):
            if int(m.group(1)) in EXIT_CODES:
                yield n, f"exit code {m.group(1)}"


def main():
    total = 0
    for rel, kind in tracked():
        source = (ROOT / rel).read_text(errors="replace")
        found = python_findings(rel, source) if kind == "python" else shell_findings(rel, source)
        for line, what in found:
            print(f"{rel}:{line}: {what}")
            total += 1
    if total:
        print(f"check-contract-strings: FAIL: {total} hand-spelled contract strings (read them through python/ppu)")
        sys.exit(1)
    print("check-contract-strings: PASS: no Python or shell file spells a summary key, file name or exit code")


if __name__ == "__main__":
    main()
