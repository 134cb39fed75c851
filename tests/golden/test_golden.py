"""Golden records: the audits of ``golden_cases.py`` give the records stored in ``records/``.

A refactoring must leave every verdict, bound and JSON field unchanged at the
same seed. Strings, integers, verdicts and array hashes must match exactly;
floats must match to 1e-12 relative, and the hashes of
the kept losses are compared by the script only (last-bit differences can come from a
different CPU's vector instructions; ``python tests/golden/golden_cases.py
--check`` compares to the last bit on one machine). The default run covers
``FAST`` (every route and verdict kind); ``-m slow`` runs the whole suite.
"""

import json
import math

import pytest
from golden_cases import FAST, all_cases, path_of, run_case

SLOW = [c for c in all_cases() if c not in FAST]


def _close(expected, actual, where=""):
    if isinstance(expected, dict) and isinstance(actual, dict):
        assert set(expected) == set(actual), f"{where}: keys {set(expected) ^ set(actual)}"
        for k in expected:
            _close(expected[k], actual[k], f"{where}/{k}")
    elif isinstance(expected, list) and isinstance(actual, list):
        assert len(expected) == len(actual), f"{where}: length"
        for i, (a, b) in enumerate(zip(expected, actual, strict=True)):
            _close(a, b, f"{where}[{i}]")
    elif isinstance(expected, float) and isinstance(actual, float):
        assert math.isclose(expected, actual, rel_tol=1e-12, abs_tol=1e-300), (
            f"{where}: {expected!r} != {actual!r}"
        )
    else:
        assert type(expected) is type(actual) and expected == actual, (
            f"{where}: {expected!r} != {actual!r}"
        )


def _check(case):
    # Bitwise hashes of the kept losses and scores are compared by the script's --check only.
    expected, actual = json.loads(path_of(case).read_text()), run_case(case)
    _close(expected["to_dict"], actual["to_dict"])


@pytest.mark.parametrize("case", FAST)
def test_golden_record(case):
    _check(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW)
def test_golden_record_whole_suite(case):
    _check(case)
