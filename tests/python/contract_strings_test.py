#!/usr/bin/env python3
"""scripts/check-contract-strings.py finds what it says it finds, and only that: its finders run
on small sources written here. Prints "PASS contract-strings-lint" last (ctest
lint.contract_strings_finds)."""

import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    "check_contract_strings", os.path.join(HERE, "..", "..", "scripts", "check-contract-strings.py")
)
lint = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(lint)


def py(source):
    return [what for _line, what in lint.python_findings("x.py", source)]


def sh(source):
    return [what for _line, what in lint.shell_findings("x.sh", source)]


class PythonTest(unittest.TestCase):
    def test_summary_keys_file_names_and_exit_codes_are_found(self):
        self.assertEqual(py('x = s["eval_loss"]\n'), ["summary key 'eval_loss'"])
        self.assertEqual(py('y = s.get("recovery")\n'), ["summary key 'recovery'"])
        self.assertEqual(len(py('p = f"{d}/rank-{r}.json"\n')), 1)
        self.assertEqual(len(py('p = os.path.join(d, "manifest.json")\n')), 1)
        self.assertEqual(py("assert proc.returncode == 3\n"), ["exit code 3"])
        self.assertEqual(py("ok = rc in (2, 4)\n"), ["exit code 2", "exit code 4"])
        self.assertEqual(py("run(cmd, expect_code=143)\n"), ["exit code 143 (keyword expect_code)"])

    def test_words_docstrings_conventions_and_waivers_are_not(self):
        self.assertEqual(py('def f():\n    """Reads eval_loss from manifest.json; exits 3."""\n'), [])
        self.assertEqual(py('x = s["tokens"]\ny = "summary-rank-{r}.json"\n'), [])  # a plain word; another name
        self.assertEqual(py("ok = proc.returncode == 0 or rc == 1\n"), [])
        self.assertEqual(py("if count == 3:\n    pass\n"), [])  # not an exit status
        self.assertEqual(py('# contract: not a summary: the manifest\nw = m["world_size"]\n'), [])
        self.assertEqual(py('w = m["world_size"]  # contract: not a summary\n'), [])
        self.assertEqual(len(py('# contract: not a summary\nw = m["world_size"]\nv = s["eval_loss"]\n')), 1)


class ShellTest(unittest.TestCase):
    def test_keys_names_and_codes_in_shell(self):
        self.assertEqual(sh('jq .param_checksum "$f"\n'), ["summary key 'param_checksum'"])
        self.assertEqual(len(sh('cat "$dir/rank-0.json"\n')), 1)
        self.assertEqual(sh("[[ $rc -eq 3 ]] || fail\n"), ["exit code 3"])
        self.assertEqual(sh("[[ $? -ne 2 ]] && exit 1\n"), ["exit code 2"])

    def test_config_keys_comments_and_unrelated_variables_are_not(self):
        self.assertEqual(sh("ppu-launch --set slicing.mode=mlp\n"), [])
        self.assertEqual(sh("# reads param_checksum from rank-0.json\n"), [])
        self.assertEqual(sh("[[ $FORCE == 1 || $count -eq 3 ]]\n"), [])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if result.wasSuccessful():
        print("PASS contract-strings-lint")
    sys.exit(0 if result.wasSuccessful() else 1)
