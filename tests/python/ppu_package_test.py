#!/usr/bin/env python3
"""The package python/ppu against its contract (python/ppu/contract.json, which the ctest
operator.contract_file keeps equal to the C++ definitions): a summary is checked against the
field list and read by attribute; a status by snake_case names; exit codes and file names are
the contract's. Pure logic on made-up documents built from the contract's own shapes.
Prints "PASS ppu-package" last (ctest ppu_package)."""

import copy
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from ppu import CONTRACT, choices, exit_codes, files, metrics, status, summary
from ppu.record import ContractError

SAMPLE = {"integer": 7, "number": 0.5, "string": "x", "boolean": True, "int-or-string": 3}


def example(shape):
    """A document of `shape` with every field set (an array of one element, a map of one key)."""
    t = shape.get("type")
    if t == "object":
        if "fields" in shape:
            return {k: example(v) for k, v in shape["fields"].items()}
        if "values" in shape:
            return {"killed": example(shape["values"])}
        return {"free": 1}
    if t == "array":
        return [example(shape["items"])] if "items" in shape else []
    return SAMPLE[t]


class SummaryTest(unittest.TestCase):
    def setUp(self):
        self.doc = example(summary.SHAPE)

    def test_a_complete_summary_reads_by_attribute_at_every_depth(self):
        s = summary.of(self.doc)
        self.assertEqual(s.eval_loss, self.doc["eval_loss"])
        self.assertEqual(s.recovery.theta_mismatches, self.doc["recovery"]["theta_mismatches"])
        self.assertEqual(s.recovery.faults["killed"].count, self.doc["recovery"]["faults"]["killed"]["count"])
        self.assertEqual(s.recovery.degraded[0].missing, self.doc["recovery"]["degraded"][0]["missing"])
        self.assertEqual(s.optimizer_settings, self.doc["optimizer_settings"])  # free-form: a dict

    def test_a_name_the_contract_does_not_have_is_an_attribute_error_naming_it(self):
        s = summary.of(self.doc)
        with self.assertRaisesRegex(AttributeError, "eval_los'"):
            _ = s.eval_los
        with self.assertRaisesRegex(AttributeError, "theta_mismatch'"):
            _ = s.recovery.theta_mismatch

    def test_a_missing_required_field_fails_at_load_and_an_optional_one_reads_none(self):
        optional = [k for k, v in summary.FIELDS.items() if v.get("optional")]
        required = [k for k, v in summary.FIELDS.items() if not v.get("optional")]
        self.assertTrue(optional and required)
        doc = copy.deepcopy(self.doc)
        del doc[optional[0]]
        self.assertIsNone(getattr(summary.of(doc), optional[0]))
        del doc[required[0]]
        with self.assertRaisesRegex(ContractError, required[0]):
            summary.of(doc)
        lenient = summary.of(doc, check_fields=False)
        with self.assertRaisesRegex(ContractError, required[0]):
            getattr(lenient, required[0])

    def test_an_unknown_field_or_a_wrong_type_fails_at_load(self):
        doc = copy.deepcopy(self.doc)
        doc["recovery"]["not_a_field"] = 1
        with self.assertRaisesRegex(ContractError, "not_a_field"):
            summary.of(doc)
        doc = copy.deepcopy(self.doc)
        doc["steps"] = "many"
        with self.assertRaisesRegex(ContractError, "steps"):
            summary.of(doc)

    def test_equal_summaries_compare_and_hash_alike(self):
        a, b = summary.of(self.doc), summary.of(copy.deepcopy(self.doc))
        self.assertEqual(a, b)
        self.assertEqual(len({a, b}), 1)
        changed = copy.deepcopy(self.doc)
        changed["eval_loss"] += 1
        self.assertNotEqual(a, summary.of(changed))

    def test_field_names_give_a_shapes_keys_by_attribute(self):
        names = summary.field_names(summary.SHAPE)
        self.assertEqual(names.eval_loss, "eval_loss")
        self.assertEqual(summary.field_names(summary.FIELDS["recovery"]).theta_mismatches, "theta_mismatches")
        with self.assertRaises(AttributeError):
            _ = names.eval_los

    def test_load_dir_reads_the_files_the_launcher_names_and_refuses_a_gap(self):
        with tempfile.TemporaryDirectory() as d:
            for r in (0, 1):
                with open(files.summary_file(d, r), "w") as f:
                    json.dump(self.doc, f)
            self.assertEqual(len(summary.load_dir(d)), 2)
            self.assertEqual(len(summary.load_dir(d, ranks=2)), 2)
            with self.assertRaisesRegex(ContractError, "rank 2 of 3"):
                summary.load_dir(d, ranks=3)


class StatusTest(unittest.TestCase):
    def test_snake_case_names_read_the_api_camel_case_fields_and_unset_ones_read_none(self):
        fields = status.SHAPE["fields"]
        camel = next(k for k in fields if any(c.isupper() for c in k))
        snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
        st = status.of({camel: SAMPLE.get(fields[camel].get("type"), 1)})
        self.assertEqual(getattr(st, snake), SAMPLE.get(fields[camel].get("type"), 1))
        other = next(k for k in fields if k != camel)
        self.assertIsNone(getattr(st, "".join("_" + c.lower() if c.isupper() else c for c in other)))
        with self.assertRaises(AttributeError):
            _ = st.no_such_field


class ExitCodeAndFilesTest(unittest.TestCase):
    def test_exit_codes_and_decisions_are_the_contracts(self):
        codes = CONTRACT["exit_codes"]["codes"]
        for name, code in codes.items():
            self.assertEqual(exit_codes.ExitCode[name.upper()], code)
        self.assertEqual(exit_codes.left_on_notice(15), exit_codes.ExitCode.LEFT_ON_SIGTERM)
        self.assertTrue(exit_codes.is_permanent(exit_codes.ExitCode.CONFIG_ERROR))
        self.assertFalse(exit_codes.is_permanent(exit_codes.ExitCode.PEER_FAILURE))
        self.assertEqual(exit_codes.on_exit(exit_codes.ExitCode.PEER_FAILURE, live=True), "restart_gang")
        self.assertEqual(exit_codes.on_exit(exit_codes.ExitCode.REJOIN, live=True), "restart_rank")
        self.assertEqual(exit_codes.on_exit(139, live=False), CONTRACT["exit_codes"]["on_exit"]["gang"]["other"])

    def test_file_names_follow_the_printf_formats(self):
        fmt = CONTRACT["files"]["checkpoint"]["round_dir_format"].replace("ll", "")
        self.assertEqual(files.round_dir(12), fmt % 12)
        self.assertTrue(files.is_rank_part(files.rank_part(3)))
        self.assertFalse(files.is_rank_part(files.GLOBAL))
        with tempfile.TemporaryDirectory() as d:
            for r in (5, 10):
                os.mkdir(os.path.join(d, files.round_dir(r)))
            os.mkdir(os.path.join(d, files.round_dir(15) + ".tmp"))
            self.assertEqual(files.rounds_in(d), [5, 10])

    def test_metric_names_are_prometheus_names_each_once(self):
        names = list(vars(metrics.RANK).values()) + list(vars(metrics.OPERATOR).values())
        self.assertTrue(all(n.startswith("ppu_") for n in names))
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(metrics.RANK.flops_executed, CONTRACT["metrics"]["rank"]["flops_executed"])

    def test_choices_are_the_configs(self):
        self.assertIn(choices.Method.STREAMING_DILOCO, choices.names("method"))
        self.assertEqual(set(vars(choices.Recovery).values()), set(choices.names("network.recovery")))
        with self.assertRaisesRegex(KeyError, "not a choice"):
            choices.names("train.steps")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if result.wasSuccessful():
        print("PASS ppu-package")
    sys.exit(0 if result.wasSuccessful() else 1)
