"""Reports people can read: a stable JSON schema and one self-contained HTML page.

:func:`result_record` turns one audit into the documented JSON record
(schema ``dpaudit.results/1``, see ``audits/README.md``); :func:`write_report`
writes ``results.json`` and ``index.html`` (plots embedded as PNG data URIs)
into a folder *atomically*: everything is written to a temporary folder first
and moved into place only when complete, so an interrupted run never leaves a
half-written report behind.

Per audit the page shows the verdict against the claim and expectation, the
privacy-loss histogram of both directions, the epsilon(delta) curve against
the claimed point (with the exact curve when known), the compatibility
partial sums for functional mechanisms, and a few release samples against the
non-private summary.

Black-box audits (:func:`dpaudit.blackbox_audit`) sit in the same list with
``kind: "black-box"`` (white-box records carry ``kind: "white-box"``; the
field was added without changing any other, so the schema name stays
``dpaudit.results/1``). Their page section shows the certified bound against
the claim, the certified event (statistic, direction, threshold, counts,
Clopper–Pearson bounds) and the histograms of the certification statistic
under ``P`` and ``Q`` with the threshold marked.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dpaudit
from dpaudit.core.serialize import json_float
from dpaudit.io.plot.svg import SvgAxes
from dpaudit.io.plot.tradeoff import renyi_figure, tradeoff_figure
from dpaudit.model.claims import (
    certified_lower_text,
    claim_label,
    is_notion_claim,
    notion_bound_text,
    notion_certified_text,
    notion_fields,
    notion_record,
)
from dpaudit.whitebox.scope import scope_text

__all__ = [
    "REPORT_FILES",
    "REPORT_MARKER",
    "SCHEMA",
    "STAGING_PREFIX",
    "AuditOutcome",
    "ReportPathError",
    "check_json_path",
    "check_output_file",
    "check_report_folder",
    "clean_debris",
    "counts_line",
    "json_document",
    "now",
    "result_record",
    "score_histogram",
    "unexpected_reason",
    "write_json",
    "write_junit",
    "write_report",
]

SCHEMA = "dpaudit.results/1"
_COLOURS = {
    "pass": "#1b7f3b",
    "violation": "#b00020",
    "incompatible": "#b00020",
    "inconclusive": "#9a6700",
}
#: A violation the spec expects (a known-faulty mechanism caught) is the suite working:
#: slate blue, not the red of a verdict that fails the run.
_EXPECTED_FINDING = "#4a5a8c"
#: Verdicts that fail a run unless the spec expects them.
_BAD = ("violation", "incompatible")


@dataclass(frozen=True)
class AuditOutcome:
    """One audit of a run: the spec's name and expectation, the result, and the inputs to plot.

    Attributes:
        name: the audit's name.
        result: the :class:`dpaudit.AuditResult`.
        expected: the spec's expected verdict, or ``None``.
        spec: the spec file (for the report), or ``""``.
        mechanism: the audited :class:`dpaudit.Mechanism` (for sample paths), optional.
        data: ``(D, D')``, optional.
        description: free text.
        extra: further fields for the caller's own use (not written to the report).
    """

    name: str
    result: Any
    expected: str | None = None
    spec: str = ""
    mechanism: Any = None
    data: tuple | None = None
    description: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def as_expected(self) -> bool | None:
        """Whether the verdict is the expected one; ``None`` when nothing is expected."""
        return None if self.expected is None else self.result.verdict == self.expected

    @property
    def kind(self) -> str:
        """``"black-box"`` for a :class:`dpaudit.BlackBoxResult`, else ``"white-box"``."""
        return getattr(self.result, "kind", "white-box")


def unexpected_reason(outcome: AuditOutcome, strict: bool = False) -> str | None:
    """Why an audit fails its run, in a few words; ``None`` when it does not.

    An audit fails when its verdict differs from the spec's ``expected``, or,
    without an expectation, when it is a violation or an incompatibility (with
    ``strict``, also an inconclusive verdict).

    Args:
        outcome: one audit of a run.
        strict: whether an inconclusive verdict without expectation fails.

    Returns:
        ``"missed violation"``, ``"missed incompatibility"``, ``"false alarm"``
        (a violation where the spec expects pass or inconclusive),
        ``"unexpected violation"``, ``"inconclusive"``, ``"pass instead of
        inconclusive"``, ..., or ``None``.
    """
    verdict, expected = outcome.result.verdict, outcome.expected
    if expected is not None and verdict == expected:
        return None
    if expected is None and verdict not in _BAD and not (strict and verdict == "inconclusive"):
        return None
    if expected in _BAD and verdict not in _BAD:
        return "missed violation" if expected == "violation" else "missed incompatibility"
    if verdict in _BAD and expected in ("pass", "inconclusive"):
        return "false alarm"
    if verdict in _BAD:
        return "unexpected " + verdict
    return f"{verdict} instead of {expected}" if expected else verdict


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes}m{seconds:02d}s"


def counts_line(outcomes: Sequence[AuditOutcome], seconds: float, strict: bool = False) -> str:
    """A run's counts in one line, in the manner of pytest's closing line.

    Args:
        outcomes: the audits of the run.
        seconds: the run's wall time.
        strict: whether an inconclusive verdict without expectation fails.

    Returns:
        For example ``"47 as expected, 2 unexpected (1 missed violation, 1 false
        alarm) in 3m12s"``.
    """
    bad = [k for k in (unexpected_reason(o, strict) for o in outcomes) if k is not None]
    text = f"{len(outcomes) - len(bad)} as expected"
    if bad:
        counts = {k: bad.count(k) for k in dict.fromkeys(bad)}
        text += f", {len(bad)} unexpected (" + ", ".join(f"{n} {k}" for k, n in counts.items())
        text += ")"
    return f"{text} in {_duration(seconds)}"


def _common_record(outcome, kind: str) -> dict:
    """The fields white-box and black-box records share."""
    r = outcome.result
    return {
        "kind": kind,
        "name": outcome.name,
        "spec": outcome.spec,
        "mechanism": r.mechanism,
        "claim": _claim_record(r.claim),
        "verdict": r.verdict,
        "expected": outcome.expected,
        "as_expected": outcome.as_expected,
        "epsilon_lower": json_float(r.epsilon_lower),
        "confidence": r.confidence,
        **notion_record(r),  # only for zCDP / RDP / GDP / f-DP claims
        # only for a violation at the statistical resolution (dpaudit.estimation.significance)
        **({} if getattr(r, "borderline", None) is None else {"borderline": dict(r.borderline)}),
        # a violation's p-value (0 without sampling), for a CI's own error control
        **({"p_value": r.p_value} if getattr(r, "p_value", None) is not None else {}),
    }


def _claim_record(claim) -> dict:
    return {
        "epsilon": claim.epsilon,
        "delta": claim.delta,
        "adjacency": claim.adjacency,
        "sensitivity_norm": claim.sensitivity_norm,
        "sensitivity": claim.sensitivity,
        "reference": claim.reference,
        **notion_fields(claim),  # zCDP / RDP / GDP / f-DP claims: notion and parameter
    }


def _blackbox_record(outcome: AuditOutcome) -> dict:
    """The record of a black-box audit: the white-box fields (``None`` where a sample-only
    audit has no value), plus the method, the certified event and the selection budget."""
    r = outcome.result
    d = r.to_dict()
    return {
        **_common_record(outcome, "black-box"),
        "epsilon_at_claimed_delta": None,
        "epsilon_at_claimed_delta_upper": None,
        "epsilon_exact": None,
        "delta_at_claimed_epsilon": {
            "estimate": None,
            "lower": json_float(r.delta_lower),
            "upper": None,
        },
        "samples": r.samples,
        "samples_select": r.samples_select,
        "seed": r.seed,
        "seconds": r.seconds,
        "method": r.method,
        "event": d["event"],
        "certificate": None,
        "compatibility": None,
        "notes": list(r.notes),
        "details": d,
    }


def _training_record(outcome: AuditOutcome) -> dict:
    """The record of a training audit (:func:`dpaudit.training.training_audit`): the shared
    fields (``None`` where a canary audit has no value), ``samples`` = its runs."""
    r = outcome.result
    return {
        "kind": "training",
        "name": outcome.name,
        "spec": outcome.spec,
        "mechanism": r.mechanism,
        "claim": {
            "epsilon": json_float(r.claimed_epsilon),
            "delta": r.claimed_delta,
            "adjacency": r.adjacency,
            "stated": r.claim,
        },
        "verdict": r.verdict,
        "expected": outcome.expected,
        "as_expected": outcome.as_expected,
        "epsilon_lower": json_float(r.epsilon_lower),
        "confidence": r.confidence,
        **({} if r.borderline is None else {"borderline": dict(r.borderline)}),
        **({"p_value": r.p_value} if r.p_value is not None else {}),
        "epsilon_at_claimed_delta": None,
        "epsilon_at_claimed_delta_upper": None,
        "epsilon_exact": None,
        "delta_at_claimed_epsilon": {"estimate": None, "lower": None, "upper": None},
        "samples": sum(r.runs),
        "seed": r.seed,
        "seconds": r.seconds,
        "certificate": None,
        "compatibility": None,
        "notes": list(r.notes),
        "details": r.to_dict(),
    }


def result_record(outcome: AuditOutcome) -> dict:
    """The documented JSON record of one audit (schema ``dpaudit.results/1``).

    ``kind`` is ``"white-box"`` (:func:`dpaudit.audit`) or ``"black-box"``
    (:func:`dpaudit.blackbox_audit`: the same fields, ``None`` where a
    sample-only audit has no value, plus ``method``, ``event`` and
    ``samples_select``). Non-finite numbers are written by
    :func:`dpaudit.core.serialize.json_float` (``"inf"``, ``"-inf"``, ``None`` for NaN).

    Args:
        outcome: one audit of a run.

    Returns:
        The record, a JSON-able dict.
    """
    if outcome.kind == "black-box":
        return _blackbox_record(outcome)
    if outcome.kind == "training":
        return _training_record(outcome)
    r = outcome.result
    d = r.to_dict()
    delta = d["delta_at_claimed_epsilon"]
    eps = d["epsilon_at_claimed_delta"]
    return {
        **_common_record(outcome, "white-box"),
        "epsilon_at_claimed_delta": json_float(eps.get("estimate")),
        "epsilon_at_claimed_delta_upper": json_float(eps.get("upper")),
        "epsilon_exact": json_float(eps.get("exact")),
        "delta_at_claimed_epsilon": {
            "estimate": json_float(delta.get("estimate")),
            "lower": json_float(delta.get("lower")),
            "upper": json_float(delta.get("upper")),
        },
        "samples": r.samples,
        "seed": r.seed,
        "seconds": r.seconds,
        "certificate": d["certificate"],
        "compatibility": None
        if d["compatibility"] is None
        else d["compatibility"].get("classification"),
        "notes": list(r.notes),
        "details": d,
    }


def json_document(outcomes: Sequence[AuditOutcome], started: str = "") -> dict:
    """The results document of a run (schema ``dpaudit.results/1``), as written by :func:`write_json`.

    Args:
        outcomes: the audits of the run, in order.
        started: the run's start time (:func:`now`); empty: now.

    Returns:
        ``{"schema", "dpaudit_version", "started", "audits": [record, ...]}``, JSON-able.
    """
    started = started or now()
    return {
        "schema": SCHEMA,
        "dpaudit_version": dpaudit.__version__,
        "started": started,
        "audits": [result_record(o) for o in outcomes],
    }


def write_json(outcomes: Sequence[AuditOutcome], path: str | Path, *, started: str = "") -> Path:
    """Write the results document to ``path`` atomically (temp file, then rename).

    Args:
        outcomes: the audits of the run, in order.
        path: the JSON file (its folder is created).
        started: the run's start time (:func:`now`); empty: now.

    Returns:
        ``path``.

    Raises:
        OSError: when the file cannot be written (the temp file is removed,
            an older ``path`` is left as it was).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = json_document(outcomes, started)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
        try:
            json.dump(document, tmp, indent=1, allow_nan=False)
            tmp.flush()
        except BaseException:  # disk full, interrupt: no half-written temp file left behind
            tmp.close()
            os.unlink(tmp.name)
            raise
    try:
        os.chmod(tmp.name, 0o644)  # NamedTemporaryFile creates 0600
        os.replace(tmp.name, path)
    except BaseException:
        Path(tmp.name).unlink(missing_ok=True)
        raise
    return path


def _junit_case(outcome: AuditOutcome, strict: bool):
    """One ``<testcase>``: a failure for an unexpected verdict, the numbers in ``system-out``."""
    from xml.etree import ElementTree

    r = outcome.result
    case = ElementTree.Element(
        "testcase",
        classname=f"dpaudit.{outcome.kind}",
        name=outcome.name,
        file=outcome.spec,
        time=f"{float(r.seconds):.3f}",
    )
    expected = outcome.expected
    if expected is not None:
        failed = r.verdict != expected
    else:
        failed = r.verdict in ("violation", "incompatible") or (
            strict and r.verdict == "inconclusive"
        )
    claim = f"{claim_label(r.claim)}, {r.claim.adjacency}"
    notion = notion_certified_text(r)  # a notion claim's own parameter before its anchor's epsilon
    summary = (
        f"verdict {r.verdict}{_weak_mark(r)} (expected {expected or 'no violation'}); claim "
        f"{claim}; certified {'' if notion is None else notion + ', '}epsilon lower bound "
        f"{_fmt(r.epsilon_lower)} at confidence {r.confidence}"
    )
    if failed:  # CI shows the message first: the verdict, then its decisive reason
        reason = getattr(r, "reason", "")
        message = f"{summary}; why: {reason}" if reason else summary
        failure = ElementTree.SubElement(case, "failure", message=message, type=r.verdict)
        failure.text = "\n".join([message, *r.notes])
    ElementTree.SubElement(case, "system-out").text = "\n".join([summary, *r.notes])
    return case, failed


def write_junit(
    outcomes: Sequence[AuditOutcome], path: str | Path, *, strict: bool = False, started: str = ""
) -> Path:
    """Write the run as a JUnit XML file: one test case per audit, a failure per unexpected verdict.

    CI systems (GitLab, Jenkins, GitHub test reporters) then list audits like tests.

    Args:
        outcomes: the audits of the run, in order.
        path: the XML file (its folder is created); written atomically.
        strict: an inconclusive verdict without an expected verdict is a failure.
        started: the run's start time (:func:`now`); empty: now.

    Returns:
        ``path``.

    Raises:
        OSError: when the file cannot be written.
    """
    from xml.etree import ElementTree

    cases = [_junit_case(o, strict) for o in outcomes]
    suite = ElementTree.Element(
        "testsuite",
        name="dpaudit",
        tests=str(len(cases)),
        failures=str(sum(failed for _, failed in cases)),
        errors="0",
        skipped="0",
        time=f"{sum(float(o.result.seconds) for o in outcomes):.3f}",
        timestamp=started or now(),
    )
    suite.extend(case for case, _ in cases)
    root = ElementTree.Element("testsuites")
    root.append(suite)
    ElementTree.indent(root)
    text = ElementTree.tostring(root, encoding="unicode", xml_declaration=True)
    return _write_atomically(Path(path), text + "\n")


def _write_atomically(path: Path, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8"
    ) as tmp:
        try:
            tmp.write(text)
            tmp.flush()
        except BaseException:
            tmp.close()
            os.unlink(tmp.name)
            raise
    try:
        os.chmod(tmp.name, 0o644)  # NamedTemporaryFile creates 0600
        os.replace(tmp.name, path)
    except BaseException:
        Path(tmp.name).unlink(missing_ok=True)
        raise
    return path


class ReportPathError(ValueError):
    """A ``--report`` or ``--json`` path dpaudit will not write to (invalid input).

    Raised before any audit runs, so a run is never spent on output it cannot keep.
    """


#: The file written into every report folder: only a folder holding it (or an
#: empty folder) is ever replaced by :func:`write_report`.
REPORT_MARKER = ".dpaudit-report"


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_parent(path: Path, what: str) -> None:
    """Refuse a path under a file, or under a folder that cannot be written."""
    ancestor = _nearest_existing(path.parent)
    if not ancestor.is_dir():
        raise ReportPathError(
            f"{what} {path} lies under {ancestor}, which is a file, not a folder; "
            "choose another path."
        )
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ReportPathError(f"{what} {path}: cannot write into {ancestor} (permission denied).")


#: The files of a report folder, as its marker lists them (the manifest of what dpaudit wrote).
REPORT_FILES = (REPORT_MARKER, "index.html", "results.json")
_MANIFEST_PREFIX = "files: "


def _manifest(folder: Path) -> set[str]:
    """The files the marker of ``folder`` says dpaudit wrote (markers without a list: the
    three files every report holds)."""
    for line in (folder / REPORT_MARKER).read_text(encoding="utf-8").splitlines():
        if line.startswith(_MANIFEST_PREFIX):
            return set(line[len(_MANIFEST_PREFIX) :].split())
    return set(REPORT_FILES)


def _foreign_files(folder: Path) -> list[str]:
    """Names in a marked report folder that dpaudit did not write (sorted)."""
    return sorted(p.name for p in folder.iterdir() if p.name not in _manifest(folder))


def _is_previous_report(folder: Path) -> bool:
    """A folder dpaudit wrote: it holds the marker, or (reports written before the
    marker existed) exactly ``results.json`` and ``index.html`` with our schema."""
    if (folder / REPORT_MARKER).is_file():
        return True
    if {p.name for p in folder.iterdir()} != {"results.json", "index.html"}:
        return False
    try:
        return json.loads((folder / "results.json").read_text()).get("schema") == SCHEMA
    except (OSError, ValueError, AttributeError):
        return False


def check_report_folder(folder: str | Path) -> Path:
    """Check, before any audit runs, that :func:`write_report` may write ``folder``.

    Args:
        folder: the report folder asked for.

    Returns:
        ``folder`` as a :class:`~pathlib.Path`.

    Raises:
        ReportPathError: when ``folder`` is a file, lies under a file or an
            unwritable folder, or is a non-empty folder that is not a previous
            dpaudit report (dpaudit never replaces what it did not write).
    """
    folder = Path(folder)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise ReportPathError(
            f"--report {folder} exists and is not a folder; dpaudit only replaces a previous "
            "report: choose another path or remove it."
        )
    if folder.is_dir() and any(folder.iterdir()) and not _is_previous_report(folder):
        raise ReportPathError(
            f"--report {folder} is a folder that is not a previous dpaudit report (no "
            f"{REPORT_MARKER} file); choose a new or empty folder."
        )
    if folder.is_dir() and (folder / REPORT_MARKER).is_file() and _foreign_files(folder):
        foreign = _foreign_files(folder)
        raise ReportPathError(
            f"--report {folder} is a previous dpaudit report holding files dpaudit did not "
            f"write ({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}); move them "
            "out or choose another folder (dpaudit never deletes what it did not write)."
        )
    _check_parent(folder, "--report")
    return folder


def check_json_path(path: str | Path) -> Path:
    """``path`` as a :class:`~pathlib.Path`, once it is known that :func:`write_json` may write it.

    Checked before any audit runs, so a bad ``--json`` costs no audit time.

    Args:
        path: the JSON file asked for.

    Raises:
        ReportPathError: when ``path`` is a folder, lies under a file or an
            unwritable folder, or is an existing file that cannot be replaced.
    """
    return check_output_file(path, "--json", "results.json")


def check_output_file(path: str | Path, option: str, example: str = "results.xml") -> Path:
    """``path`` as a :class:`~pathlib.Path`, once it is known that an output file may be written there.

    Args:
        path: the file asked for.
        option: the command-line option naming it, for the message (``"--junitxml"``).
        example: a file name suggested when ``path`` is a folder.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ReportPathError: when ``path`` is a folder, lies under a file or an
            unwritable folder, or is an existing file that cannot be replaced.
    """
    path = Path(path)
    if path.is_dir():
        raise ReportPathError(f"{option} {path} is a folder; give a file name such as {example}.")
    _check_parent(path, option)
    if path.exists() and not os.access(path, os.W_OK):
        raise ReportPathError(f"{option} {path}: the file exists and cannot be written.")
    return path


def now() -> str:
    """The current UTC time as an ISO 8601 string to the second (a run's ``started`` field).

    Returns:
        For example ``"2024-05-01T12:00:00+00:00"``.
    """
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


# ------------------------------------------------------------------------- plots


def _png(ax) -> str | None:
    """The figure of ``ax`` as a PNG data URI (the figure is closed); ``None`` for no axes."""
    if ax is None:
        return None
    import matplotlib.pyplot as plt

    fig = ax.figure
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def score_histogram(result) -> str | None:
    """Histograms of the certification statistic under P and Q, the threshold marked, as a PNG
    (for a notebook; the HTML report draws the same figure as inline SVG).

    The figure is :func:`dpaudit.io.plot.certification_scores`.

    Args:
        result: a :class:`dpaudit.BlackBoxResult`.

    Returns:
        The plot as a PNG data URI, or ``None`` when no score is finite.
    """
    from dpaudit.io.plot import certification_scores

    return _png(certification_scores(result))


def _svg(draw, alt: str = "") -> str | None:
    """The inline SVG of one figure function drawn on a fresh :class:`SvgAxes` (``alt``: its
    text alternative, default its title); ``None`` when the function had nothing to draw."""
    ax = SvgAxes()
    return None if draw(ax) is None else ax.svg(alt)


def _whitebox_plots(o: AuditOutcome) -> list[str]:
    """The inline SVG figures of one white-box audit (a few milliseconds each)."""
    from dpaudit.io import plot

    r = o.result
    data = None if o.data is None else o.data[0]
    draws = [
        lambda ax: plot.loss_distribution(r, ax=ax),
        lambda ax: plot.privacy_profile(r, ax=ax),
        lambda ax: plot.compatibility_sums(r, ax=ax),
        lambda ax: plot.releases(o.mechanism, data, ax=ax),
        lambda ax: tradeoff_figure(r, ax=ax),  # notions (dpaudit.model.claims): GDP, f-DP
        lambda ax: renyi_figure(r, ax=ax),  # zCDP, RDP
    ]
    return [p for p in map(_svg, draws) if p]


# -------------------------------------------------------------------------- html


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    v = float(v)
    if math.isnan(v):
        return "–"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    return f"{v:.4g}"


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;
font-size:14px;text-align:left}th{background:#f3f3f3}.v{font-weight:bold;color:#fff;
padding:2px 6px;border-radius:4px}.audit{border-top:2px solid #ddd;margin-top:2em}
.plots img,.plots svg{width:48%;min-width:380px;height:auto;margin:4px}.note{color:#555;font-size:13px}
.banner{padding:10px 14px;border-radius:6px;margin:1em 0;font-size:16px}
.banner.ok{background:#e3f4e8;border:1px solid #1b7f3b}.banner.bad{background:#fbe4e8;
border:1px solid #b00020}
"""


def _verdict_badge(o: AuditOutcome, strict: bool = False) -> str:
    """The verdict as a coloured badge: red only for a verdict that fails the run."""
    verdict = o.result.verdict
    colour = _COLOURS.get(verdict, "#555")
    title = "as expected"
    if verdict in _BAD and unexpected_reason(o, strict) is None:
        colour = _EXPECTED_FINDING
    elif unexpected_reason(o, strict) is not None:
        colour, title = _COLOURS["violation"], unexpected_reason(o, strict)
    return (
        f'<span class="v" title="{html.escape(title)}" style="background:{colour}">'
        f"{html.escape(verdict)}</span>"
    )


def _claim_cell(claim) -> str:
    """The summary table's claim: ``ε=…, δ=…`` or the notion claim itself (``1-GDP``); a
    training result's claim is its description."""
    if isinstance(claim, str):
        return html.escape(claim)
    if is_notion_claim(claim):
        return html.escape(claim_label(claim))
    return f"ε={_fmt(claim.epsilon)}, δ={_fmt(claim.delta)}"


def _claim_text(claim) -> str:
    """A section's claim: ``(ε, δ)-DP``, or the notion claim with its (ε, δ) anchor."""
    if is_notion_claim(claim):
        return html.escape(claim_label(claim, anchor=True))
    return f"({_fmt(claim.epsilon)}, {_fmt(claim.delta)})-DP"


def _event_bound_rows(r, e) -> list[str]:
    """The counts in the certified event and how the ε bound was drawn from them."""
    n_p, n_q = (e.n, e.n) if e.releases is None else e.releases
    counts = (
        f"<tr><th>counts in S</th><td>P: {e.counts.P} of {n_p}, Q: {e.counts.Q} of "
        f"{n_q} (fresh certification releases)</td></tr>"
    )
    bound = e.bound
    if bound is not None and bound.method == "conditional-ratio":
        return [
            counts,
            "<tr><th>conditional ratio</th><td>release counts Poisson("
            f"{e.n}) per dataset; given k_P + k_Q, θ = P(S) / (P(S) + Q(S)) ≥ "
            f"{_fmt(bound.theta_lower)} (one-sided Clopper–Pearson, α = "
            f"{_fmt(1 - r.confidence)}); ε ≥ log(θ / (1 − θ)) = "
            f"log {_fmt(bound.ratio_lower)}</td></tr>",
        ]
    return [
        counts,
        f"<tr><th>Clopper–Pearson</th><td>P(S) ≥ {_fmt(e.p_lower)}, Q(S) ≤ {_fmt(e.q_upper)} "
        f"(one-sided, α/2 = {_fmt((1 - r.confidence) / 2)} each); ε ≥ log((P(S) − δ) / Q(S))"
        "</td></tr>",
    ]


def _notion_rows(r) -> list[str]:
    """The claim's own parameter: tightest for the pair (white-box) and certified lower bound."""
    record = notion_record(r).get("notion")
    if record is None:
        return []
    esc = html.escape
    if getattr(r, "kind", "white-box") == "black-box":
        return [f"<tr><th>certified notion parameter</th><td><b>"
                f"{esc(notion_bound_text(record))}</b></td></tr>"]  # fmt: skip
    tight, name = record["tightest"], esc(str(record["parameter"]))
    low, up = (tight.get("lower"), tight.get("upper")) if tight else (None, None)
    return [
        f"<tr><th>tightest {name}</th><td>[{_fmt_any(low)}, {_fmt_any(up)}] for this pair "
        f"(claimed {esc(record['stated'])})</td></tr>",
        f"<tr><th>certified {name}</th><td>≥ {_fmt_any(record['lower'])} at confidence "
        f"{_fmt(record['confidence'])}</td></tr>",
    ]


def _pair_rows(r) -> list[str]:
    """The pair the verdict holds on, against the declared sensitivity; a weak-pair warning."""
    scope = (getattr(r, "diagnostics", None) or {}).get("pair")
    if not scope:
        return []
    rows = [f"<tr><th>pair</th><td>{html.escape(scope_text(scope))}</td></tr>"]
    if scope.get("weak"):
        rows.append(
            "<tr><th>warning</th><td class='bad'><b>weak pair</b>: this "
            f"{html.escape(r.verdict)} holds for this pair only, which uses "
            f"{100 * scope['fraction']:.3g}% of the declared sensitivity; audit a pair at the "
            "sensitivity (dpaudit audit --pairs worst).</td></tr>"
        )
    return rows


def _certified_cell(r) -> str:
    """The summary table's certified bound (HTML-escaped)."""
    return html.escape(certified_lower_text(r, _fmt))


def _fmt_any(v) -> str:
    """A number, or a list of numbers (RDP: one per order)."""
    if isinstance(v, list | tuple):
        return "(" + ", ".join(_fmt(x) for x in v) + ")"
    return _fmt(v)


def _row(o: AuditOutcome, strict: bool) -> str:
    esc = html.escape
    r = o.result
    reason = unexpected_reason(o, strict)
    if o.expected is None:
        mark = "" if reason is None else f"✗ {esc(reason)}"
    else:
        mark = "✓" if reason is None else f"✗ {esc(reason)} (expected {esc(o.expected)})"
    estimate = getattr(r, "epsilon_at_claimed_delta", {}).get("estimate")
    return (
        f"<tr><td><a href='#{esc(o.name)}'>{esc(o.name)}</a></td><td>{esc(o.kind)}</td>"
        f"<td>{esc(r.mechanism)}</td>"
        f"<td>{_claim_cell(r.claim)}</td>"
        f"<td>{_verdict_badge(o, strict)}{_weak_mark(r)} {mark}</td><td>{_certified_cell(r)}</td>"
        f"<td>{_fmt(estimate)}</td><td>{_fmt(r.seconds)}</td></tr>"
    )


def _weak_mark(r) -> str:
    """`` (weak pair)`` after a verdict that holds on a pair using under half the sensitivity."""
    scope = (getattr(r, "diagnostics", None) or {}).get("pair") or {}
    return " (weak pair)" if scope.get("weak") else ""


def _banner(outcomes: Sequence[AuditOutcome], seconds: float, strict: bool) -> str:
    """The counts line at the top of the page, green when every audit is as expected, and
    links to the unexpected audits."""
    esc = html.escape
    unexpected = [o for o in outcomes if unexpected_reason(o, strict) is not None]
    links = ", ".join(
        f"<a href='#{esc(o.name)}'>{esc(o.name)}</a> ({esc(unexpected_reason(o, strict))})"
        for o in unexpected
    )
    kind = "bad" if unexpected else "ok"
    text = esc(counts_line(outcomes, seconds, strict))
    return f"<div class='banner {kind}'><b>{text}</b>" + (
        f"<br>unexpected: {links}</div>" if unexpected else "</div>"
    )


def _html(
    outcomes: Sequence[AuditOutcome], started: str, seconds: float | None = None, strict=False
) -> str:
    esc = html.escape
    if seconds is None:
        seconds = sum(float(o.result.seconds) for o in outcomes)
    # the unexpected audits first, in the table and in the sections below it
    ordered = sorted(outcomes, key=lambda o: unexpected_reason(o, strict) is None)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>dpaudit report</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>dpaudit report</h1>{_banner(outcomes, seconds, strict)}<p class='note'>dpaudit "
        f"{esc(dpaudit.__version__)}, started {esc(started)}, {len(outcomes)} audit(s). A "
        "violation in slate blue is one its spec expects (a known-faulty mechanism caught); red "
        "marks only what fails the run.</p>",
        "<table><tr><th>audit</th><th>kind</th><th>mechanism</th><th>claim</th><th>verdict</th>"
        "<th>certified lower bound</th><th>ε at claimed δ (estimate)</th><th>seconds</th></tr>",
        *(_row(o, strict) for o in ordered),
        "</table>",
    ]
    for o in ordered:
        parts += _SECTIONS.get(o.kind, _whitebox_section)(o)
    parts.append("</body></html>")
    return "\n".join(parts)


def _whitebox_section(o: AuditOutcome) -> list[str]:
    """The HTML of one white-box audit: the claim, the bounds, the certificate and the plots."""
    esc = html.escape
    r = o.result
    delta = r.delta_at_claimed_epsilon
    parts = [
        f"<div class='audit' id='{esc(o.name)}'><h2>{esc(o.name)} {_verdict_badge(o)}</h2>",
        f"<p>{esc(o.description)}</p>" if o.description else "",
        "<table>",
        f"<tr><th>mechanism</th><td>{esc(r.mechanism)}</td></tr>",
        f"<tr><th>claim</th><td>{_claim_text(r.claim)}, "
        f"{esc(r.claim.adjacency)}; sensitivity {_fmt(r.claim.sensitivity)} in "
        f"{esc(str(r.claim.sensitivity_norm))}; {esc(r.claim.reference)}</td></tr>",
        f"<tr><th>expected</th><td>{esc(str(o.expected))}</td></tr>",
        *_notion_rows(r),  # a notion claim's own parameter first, its (ε, δ) anchor below
        *_pair_rows(r),
        f"<tr><th>certified ε lower bound</th><td>{_fmt(r.epsilon_lower)} "
        f"(confidence {_fmt(r.confidence)})</td></tr>",
        f"<tr><th>ε at claimed δ</th><td>estimate "
        f"{_fmt(r.epsilon_at_claimed_delta.get('estimate'))}, upper "
        f"{_fmt(r.epsilon_at_claimed_delta.get('upper'))}, exact "
        f"{_fmt(r.epsilon_at_claimed_delta.get('exact'))}</td></tr>",
        f"<tr><th>δ at claimed ε</th><td>estimate {_fmt(delta.get('estimate'))}, "
        f"[{_fmt(delta.get('lower'))}, {_fmt(delta.get('upper'))}]</td></tr>",
        f"<tr><th>samples</th><td>{r.samples} per direction, seed {r.seed}, route "
        f"{esc(r.route)}, {_fmt(r.seconds)} s</td></tr>",
    ]
    if r.certificate is not None:
        parts.append(
            f"<tr><th>certificate</th><td>{esc(r.certificate.explanation)} "
            f"(loss {_fmt(r.certificate.loss)}, {esc(r.certificate.direction)})</td></tr>"
        )
    if r.compatibility is not None:
        parts.append(
            f"<tr><th>compatibility</th><td>{esc(r.compatibility.classification)}: "
            f"{esc(r.compatibility.reason)}</td></tr>"
        )
    parts.append("</table>")
    for note in r.notes:
        parts.append(f"<p class='note'>{esc(note)}</p>")
    plots = _whitebox_plots(o)
    parts.append("<div class='plots'>")
    parts += plots
    parts.append("</div></div>")
    return parts


def _blackbox_section(o: AuditOutcome) -> list[str]:
    """The HTML of one black-box audit: bound vs claim, the certified event, the histogram."""
    from dpaudit.io.plot.blackbox import datasets_of

    esc = html.escape
    r = o.result
    e = r.event
    p_name, q_name = datasets_of(e.direction)
    exceeds = "exceeds" if r.epsilon_lower > r.claim.epsilon else "does not exceed"
    flaw = getattr(o.mechanism, "known_flaw", None)
    sel = e.selection
    timings = ", ".join(f"{k} {_fmt(v)} s" for k, v in r.timings.to_dict().items())
    parts = [
        f"<div class='audit' id='{esc(o.name)}'><h2>{esc(o.name)} {_verdict_badge(o)}</h2>",
        f"<p>{esc(o.description)}</p>" if o.description else "",
        "<table>",
        f"<tr><th>kind</th><td>black-box audit from samples ({esc(r.method)})</td></tr>",
        f"<tr><th>implementation</th><td>{esc(r.mechanism)}</td></tr>",
        f"<tr><th>claim</th><td>{_claim_text(r.claim)}, {esc(r.claim.adjacency)}</td></tr>",
        f"<tr><th>expected</th><td>{esc(str(o.expected))}</td></tr>",
        f"<tr><th>certified ε lower bound</th><td><b>{_fmt(r.epsilon_lower)}</b> at δ = "
        f"{_fmt(r.claim.delta)} ({exceeds} the claimed ε = {_fmt(r.claim.epsilon)}; "
        f"confidence {_fmt(r.confidence)})</td></tr>",
        f"<tr><th>certified δ lower bound</th><td>{_fmt(r.delta_lower)} at the claimed ε "
        f"(claimed δ = {_fmt(r.claim.delta)})</td></tr>",
        *_notion_rows(r),
    ]
    if flaw is not None:
        parts.append(
            f"<tr><th>known true ε</th><td>{_fmt(flaw.true_epsilon)} ({esc(flaw.reason)})</td></tr>"
        )
    parts += [
        f"<tr><th>event S</th><td>{{s(x) &gt; t}} plus each release with s(x) = t kept with "
        f"probability γ = {_fmt(e.tie_probability)}; s = {esc(e.statistic)}; t = "
        f"{_fmt(e.threshold)}</td></tr>",
        f"<tr><th>direction</th><td>{esc(e.direction)}: P = releases of {p_name}, Q = releases "
        f"of {q_name} (pair {e.pair})</td></tr>",
        *_event_bound_rows(r, e),
        f"<tr><th>selection</th><td>chosen on {sel.n} releases per dataset "
        f"({sel.pairs} pair(s)): P̂ = {_fmt(sel.p_hat)}, Q̂ = "
        f"{_fmt(sel.q_hat)}, ε̂ = {_fmt(sel.epsilon_hat)}</td></tr>",
        f"<tr><th>samples</th><td>{r.samples} certification + {r.samples_select} selection "
        f"releases per dataset, seed {r.seed}, {_fmt(r.seconds)} s ({esc(timings)})</td></tr>",
        "</table>",
    ]
    parts += [f"<p class='note'>{esc(note)}</p>" for note in r.notes]
    from dpaudit.io.plot import certification_scores

    plot = _svg(lambda ax: certification_scores(r, ax=ax), "certification statistic under P and Q")
    parts.append("<div class='plots'>")
    if plot:
        parts.append(plot)
    parts.append("</div></div>")
    return parts


def _rank_row(rank) -> list[str]:
    """The training audit's rank-bound row (none when it was not computed)."""
    if rank is None:
        return []
    return [
        f"<tr><th>if the score's ROC curve is Gaussian</th><td>ε ≥ {_fmt(rank.epsilon)} at "
        f"δ = {_fmt(rank.delta)}; μ ≥ {_fmt(rank.mu)} (rank test of all runs, confidence "
        f"{_fmt(rank.confidence)}; decides no verdict)</td></tr>"
    ]


def _one_run_rows(o: AuditOutcome) -> list[str]:
    """The table rows of a one-run training audit: the canaries, the guesses, the bounds."""
    r, b = o.result, o.result.bound
    return [
        f"<tr><th>kind</th><td>training audit ({html.escape(r.canary)} canaries, one run)"
        "</td></tr>",
        f"<tr><th>training</th><td>{html.escape(r.mechanism)}</td></tr>",
        f"<tr><th>claim</th><td>{html.escape(r.claim)}</td></tr>",
        f"<tr><th>expected</th><td>{html.escape(str(o.expected))}</td></tr>",
        f"<tr><th>certified ε lower bound</th><td><b>{_fmt(b.epsilon)}</b> at δ = "
        f"{_fmt(b.delta)} (confidence {_fmt(b.confidence)}); μ ≥ {_fmt(b.mu)} (f-DP one-run "
        "bound, same confidence on its own)</td></tr>",
        f"<tr><th>guesses</th><td>{b.canaries} canaries; {b.k_plus} guessed in, {b.k_minus} "
        f"out; {b.correct} of {b.guesses} right; seed {r.seed}, {_fmt(r.seconds)} s</td></tr>",
        f"<tr><th>strength</th><td>at most ε {_fmt(r.strength)} certifiable with these "
        "guesses</td></tr>",
    ]


def _training_section(o: AuditOutcome) -> list[str]:
    """The HTML of one training audit: the claim, the certified bounds, the runs (no plot)."""
    esc = html.escape
    r, b = o.result, o.result.bound
    if r.mode == "one-run":
        parts = [
            f"<div class='audit' id='{esc(o.name)}'><h2>{esc(o.name)} {_verdict_badge(o)}</h2>",
            f"<p>{esc(o.description)}</p>" if o.description else "",
            "<table>",
            *_one_run_rows(o),
            "</table>",
        ]
        parts += [f"<p class='note'>{esc(n)}</p>" for n in (*r.notes, *b.assumptions)]
        return [*parts, "</div>"]
    parts = [
        f"<div class='audit' id='{esc(o.name)}'><h2>{esc(o.name)} {_verdict_badge(o)}</h2>",
        f"<p>{esc(o.description)}</p>" if o.description else "",
        "<table>",
        f"<tr><th>kind</th><td>training audit ({esc(r.canary)} canary, many runs)</td></tr>",
        f"<tr><th>training</th><td>{esc(r.mechanism)}</td></tr>",
        f"<tr><th>claim</th><td>{esc(r.claim)}</td></tr>",
        f"<tr><th>expected</th><td>{esc(str(o.expected))}</td></tr>",
        f"<tr><th>certified ε lower bound</th><td><b>{_fmt(b.epsilon)}</b> at δ = "
        f"{_fmt(b.delta)}; μ ≥ {_fmt(b.mu)} (confidence {_fmt(b.confidence)})</td></tr>",
        f"<tr><th>ε if the trade-off curve is Gaussian</th><td>{_fmt(b.epsilon_gdp_shape)} "
        "(an assumption, not a certified bound)</td></tr>",
        *_rank_row(r.rank),
        f"<tr><th>rates</th><td>TPR ≥ {_fmt(b.tpr_lower)}, FPR ≤ {_fmt(b.fpr_upper)} at "
        f"threshold {_fmt(b.threshold)} ({esc(b.side)} line); counts {b.counts}</td></tr>",
        f"<tr><th>runs</th><td>{r.runs[0]} with the canary, {r.runs[1]} without "
        f"({b.selection_runs} chose the threshold), seed {r.seed}, {_fmt(r.seconds)} s</td></tr>",
        f"<tr><th>strength</th><td>at most ε {_fmt(r.strength)} certifiable with these runs"
        "</td></tr>",
        "</table>",
    ]
    parts += [f"<p class='note'>{esc(n)}</p>" for n in (*r.notes, *b.assumptions)]
    parts.append("</div>")
    return parts


_SECTIONS = {"black-box": _blackbox_section, "training": _training_section}

#: Prefix of the hidden staging folder a report is written into, then the process id.
STAGING_PREFIX = ".dpaudit-report-"


def _aside_prefix(folder: Path) -> str:
    """Prefix of the hidden name an old report is moved to while it is replaced."""
    return f".{folder.name}.old-{os.getpid()}-"


def _owner_gone(name: str, prefix: str) -> bool:
    """Whether the process named after ``prefix`` in ``name`` has ended (a kill's debris).

    Names without a process id (written by an older dpaudit) are never taken for debris.
    """
    pid = name[len(prefix) :].partition("-")[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


def _ours(path: Path) -> bool:
    """A folder dpaudit made: it holds the marker, or nothing (killed before writing it)."""
    return (path / REPORT_MARKER).is_file() or not any(path.iterdir())


def clean_debris(folder: str | Path) -> list[Path]:
    """Remove what a killed run left beside ``folder``: staging and ``.old`` folders.

    A hard kill (``SIGKILL``, a power cut) skips the clean-up every other exit path runs:
    it can leave the staging folder of a report and, between the two renames that replace
    a report, the old report under its hidden ``.NAME.old-PID-*`` name. Only folders whose
    process has ended and that dpaudit wrote (the marker, or empty) are touched: a staging
    folder is removed; an old report is put back when ``folder`` is missing (the kill came
    after it was moved aside), else removed.

    Args:
        folder: the report folder about to be written.

    Returns:
        The debris folders handled.
    """
    folder = Path(folder)
    if not folder.parent.is_dir():
        return []
    handled = []
    aside = f".{folder.name}.old-"
    for path in sorted(folder.parent.iterdir()):
        for prefix in (STAGING_PREFIX, aside):
            if not (path.name.startswith(prefix) and path.is_dir()):
                continue
            if not (_owner_gone(path.name, prefix) and _ours(path)):
                continue
            if prefix == aside and not folder.exists():
                os.rename(path, folder)
            else:
                shutil.rmtree(path, ignore_errors=True)
            handled.append(path)
    return handled


def _publish(staging: Path, folder: Path) -> None:
    """Move the complete report ``staging`` to ``folder``; an old report there is replaced.

    Without an old report this is one ``os.rename`` (atomic). Replacing an old
    report takes two renames: the old one aside to a hidden unique sibling, then
    ``staging`` into place. If the second fails or is interrupted (any exception,
    Ctrl-C included), the old report is renamed back, so ``folder`` always holds
    the old report or the new one, never neither. Why not a symlink swap: it
    would turn the user's folder into a symlink (and the first conversion of a
    real folder is itself not atomic); ``renameat2(RENAME_EXCHANGE)`` would be
    atomic but is Linux-only. Only a hard kill between the two renames leaves
    the old report under its hidden ``.NAME.old-*`` name next to ``folder``.
    """
    if not folder.exists():
        os.rename(staging, folder)
        return
    aside = Path(tempfile.mkdtemp(prefix=_aside_prefix(folder), dir=folder.parent))
    aside.rmdir()  # a unique free name for the old report
    os.rename(folder, aside)
    try:
        os.rename(staging, folder)
    except BaseException:
        os.rename(aside, folder)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def write_report(
    outcomes: Sequence[AuditOutcome],
    folder: str | Path,
    *,
    started: str = "",
    seconds: float | None = None,
    strict: bool = False,
) -> Path:
    """Write ``results.json`` and ``index.html`` into ``folder``, atomically.

    Everything is written to a fresh temporary sibling folder first (with the
    :data:`REPORT_MARKER` file), which then replaces ``folder`` (see
    :func:`_publish`): an interrupted or failed run leaves the old report or
    the new one, never half a new one and never neither.

    Args:
        outcomes: the audits of the run, in order.
        folder: the report folder (replaced when it is a previous report).
        started: the run's start time (:func:`now`); empty: now.
        seconds: the run's wall time for the banner; ``None``: the sum of the audits' times.
        strict: an inconclusive verdict without an expected verdict counts as unexpected.

    Returns:
        The path of ``index.html``.

    Raises:
        ReportPathError: when ``folder`` may not be written (:func:`check_report_folder`).
        OSError: when writing fails (disk full, ...); nothing is published.
    """
    folder = check_report_folder(folder)
    started = started or now()
    folder.parent.mkdir(parents=True, exist_ok=True)
    clean_debris(folder)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=folder.parent))
    try:
        (staging / REPORT_MARKER).write_text(
            f"written by dpaudit {dpaudit.__version__}; dpaudit replaces only folders holding "
            f"this file\n{_MANIFEST_PREFIX}{' '.join(REPORT_FILES)}\n",
            encoding="utf-8",
        )
        write_json(outcomes, staging / "results.json", started=started)
        page = _html(outcomes, started, seconds, strict)
        (staging / "index.html").write_text(page, encoding="utf-8")
        os.chmod(staging, 0o755)  # mkdtemp creates 0700
        _publish(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return folder / "index.html"
