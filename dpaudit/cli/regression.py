"""``dpaudit audit ... --write-regression-test FILE``: a pytest per unexpected verdict.

Each test written re-audits one verdict that failed the run with
:func:`dpaudit.cli.main.assert_fixed`, pinning what made it reproducible: the
target (a spec, or ``FILE.py:CALLABLE`` with its command-line options), the
pair ``(D, D')``, the seed, the sample budget and the claim. It fails, with the
same one-line reason the command printed, until the mechanism is fixed.

The command imports this module only when the option is given (``dpaudit --help`` stays
fast).
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from pathlib import Path

import numpy as np

import dpaudit.model.claims as claims

__all__ = ["RegressionCase", "check_regression_path", "regression_source", "write_regression_tests"]

#: Options of a ``FILE.py:CALLABLE`` target a written test repeats: ``dest -> (flag, kind)``,
#: kind ``"value"``, ``"pair"`` (two values), ``"append"`` (repeatable) or ``"flag"``.
CALLABLE_OPTIONS = {
    "epsilon": ("--epsilon", "value"),
    "delta": ("--delta", "value"),
    "rho": ("--rho", "value"),
    "mu": ("--mu", "value"),
    "renyi": ("--renyi", "append"),
    "adjacency": ("--adjacency", "value"),
    "param": ("--param", "append"),
    "data": ("--data", "pair"),
    "generator": ("--generator", "value"),
    "data_param": ("--data-param", "append"),
    "blackbox": ("--blackbox", "flag"),
    "method": ("--statistic", "value"),
    "reference": ("--reference", "value"),
    "reference_param": ("--reference-param", "append"),
    "features": ("--features", "value"),
    "components": ("--components", "value"),
    "objective": ("--objective", "value"),
    "stopping": ("--stopping", "value"),
    "pairs": ("--pairs", "value"),
    "domain": ("--domain", "pair"),
    "select_samples": ("--select-samples", "value"),
}


@dataclasses.dataclass(frozen=True)
class RegressionCase:
    """One unexpected verdict, as the test that pins it.

    Attributes:
        name: the audit's name (the test is ``test_<name>_keeps_its_claim``).
        target: the spec path or ``FILE.py:CALLABLE`` (absolute: :func:`absolute_target`).
        options: the command-line options of a ``FILE.py:CALLABLE`` target.
        seed: the audit's seed.
        samples: releases per dataset.
        claim: the claim audited (a :class:`~dpaudit.Claim` or a notion claim).
        pair: ``(D, D')`` as audited.
        reason: the one-line reason the run printed.
    """

    name: str
    target: str
    options: tuple
    seed: int
    samples: int
    claim: object
    pair: tuple
    reason: str


def absolute_target(target: str) -> str:
    """A spec path or ``FILE.py:CALLABLE`` with its file made absolute.

    Args:
        target: the target as given on the command line.

    Returns:
        The same target, independent of the working directory.
    """
    file, colon, attr = str(target).rpartition(":")
    if colon and file.endswith(".py"):
        return f"{Path(file).resolve()}:{attr}"
    return str(Path(target).resolve())


def callable_options(args) -> list[str]:
    """The options of a ``FILE.py:CALLABLE`` target, as they would be typed again.

    Args:
        args: the parsed command line.

    Returns:
        The options (data files and ``.py`` references made absolute), without the
        target, ``--seed`` and ``--samples``.
    """
    out: list[str] = []
    for dest, (flag, kind) in CALLABLE_OPTIONS.items():
        value = getattr(args, dest, None)
        if value is None or value is False or value == []:
            continue
        if kind == "flag":
            out.append(flag)
        elif kind == "append":
            out += [part for item in value for part in (flag, str(item))]
        elif kind == "pair":
            paths = dest == "data"
            out += [flag, *(str(Path(v).resolve()) if paths else repr(v) for v in value)]
        else:
            text = str(value)
            out += [flag, absolute_target(text) if ".py:" in text else text]
    return out


def check_regression_path(path, package_folder) -> Path:
    """The ``--write-regression-test`` path, once it is known that a test may be written there.

    Args:
        path: the file asked for.
        package_folder: dpaudit's own source folder (a test is never written into it).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: when ``path`` does not end in ``.py``, is a folder, or lies inside
            dpaudit's own package.
    """
    path = Path(path)
    if path.suffix != ".py" or path.is_dir():
        raise ValueError(
            f"--write-regression-test {path} is not a Python file; give a test file such as "
            "tests/test_dp_regressions.py."
        )
    inside = Path(package_folder).resolve()
    if path.resolve().is_relative_to(inside):
        raise ValueError(
            f"--write-regression-test {path} lies inside the dpaudit package ({inside}); write "
            "it into your own tests folder, e.g. tests/test_dp_regressions.py."
        )
    return path


def _identifier(name: str) -> str:
    return re.sub(r"\W+", "_", name).strip("_").lower() or "audit"


def _literal(value) -> str:
    """Python source re-creating a dataset: arrays, and tuples, lists and dicts of them."""
    if isinstance(value, dict):
        items = ", ".join(f"{k!r}: {_literal(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, tuple | list):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) else f"[{inner}]"
    array = np.asarray(value)
    return f"np.array({array.tolist()!r}, dtype={str(array.dtype)!r})"


def _claim_source(claim) -> tuple[str, str]:
    """``(import line, expression)`` re-creating ``claim``, checked to round-trip."""
    kind = type(claim).__name__
    text = repr(claim)
    try:  # the repr of dpaudit's own frozen claim record, read back to check it round-trips
        same = getattr(claims, kind, None) is type(claim) and eval(text, vars(claims)) == claim
    except Exception:  # a claim field whose repr is not Python source
        same = False
    if not same:
        raise ValueError(f"the claim {text} cannot be written into a test.")
    return f"from dpaudit.model.claims import {kind}", text


def regression_source(cases: list[RegressionCase], command: str) -> str:
    """The text of a pytest file with one test per case.

    Args:
        cases: the unexpected verdicts.
        command: the command line that found them (for the file's docstring).

    Returns:
        The file's text.
    """
    imports = sorted({_claim_source(case.claim)[0] for case in cases})
    lines = [
        '"""Regression tests written by dpaudit for verdicts that failed a run:',
        "",
        f"    {command}",
        "",
        "Each test re-audits one verdict on the same pair, seed, sample budget and claim, and",
        "fails (with the reason the run printed) until the mechanism is fixed.",
        '"""',
        "",
        "import numpy as np",
        *imports,
        "",
        "from dpaudit.cli.main import assert_fixed",
    ]
    for case in cases:
        lines += [
            "",
            "",
            f"def test_{_identifier(case.name)}_keeps_its_claim():",
            f"    # the run said: {case.reason}".replace("\n", " "),
            "    assert_fixed(",
            f"        {case.target!r},",
            f"        options={list(case.options)!r},",
            f"        seed={case.seed},",
            f"        samples={case.samples},",
            f"        claim={_claim_source(case.claim)[1]},",
            "        pair=(",
            *(f"            {_literal(dataset)}," for dataset in case.pair),
            "        ),",
            "    )",
        ]
    return "\n".join(lines) + "\n"


def write_regression_tests(path, cases: list[RegressionCase], command: str) -> Path:
    """Write (atomically) the pytest file of :func:`regression_source`.

    Args:
        path: the test file (checked by :func:`check_regression_path`).
        cases: the unexpected verdicts.
        command: the command line that found them.

    Returns:
        The path written.
    """
    path = Path(path)
    text = regression_source(cases, command)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
