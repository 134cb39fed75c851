"""The verdict rules of dpaudit.whitebox.verdict, one table row per rule of its docstring.

Each row calls the pure ``verdict`` function with small hand-built records: no audit runs.

The round-off tolerances (:mod:`dpaudit.core.roundoff`) are pinned from both sides: rows at
half the computation's error bound above the claim pass (a tolerance removed reads them as
violations) and rows at three times the bound are violations (a tolerance loosened tenfold
passes them). Mutations checked: ``sup_loss_tolerance`` returning 0 fails "5 Laplace
supremum within its error bound", "5 Laplace supremum at the claim" and the catalogue
``laplace-mean`` audit below (exact supremum 1.0000000000000002 for a claim of 1); times 10
fails "4 Laplace supremum beyond its error bound"; ``delta_tolerance`` returning 0 fails
"3 exact lower curve within its error bound", times 10 fails "3 exact lower curve beyond
its error bound".
"""

import math

import numpy as np
import pytest

from dpaudit import Certificate, Claim, Compatibility
from dpaudit.accounting.profiles import ExactAccounting
from dpaudit.model.compatibility import SeriesEvidence
from dpaudit.whitebox.summaries import DeltaSummary
from dpaudit.whitebox.verdict import clamp_pass_lower_bound, delta_tolerance, verdict

PURE = Claim(epsilon=1.0)
APPROX = Claim(epsilon=1.0, delta=1e-5)


def _delta(mc_lower=0.0, upper=1.0, exact_lower=None, exact_upper=None) -> DeltaSummary:
    return DeltaSummary(
        estimate=0.0,
        lower=max(mc_lower, exact_lower or 0.0),
        upper=upper,
        monte_carlo_estimate=0.0,
        monte_carlo_lower=mc_lower,
        monte_carlo_upper=upper,
        exact_lower=exact_lower,
        exact_upper=exact_upper,
    )


def _laplace(sup_loss: float, error: float | None = None) -> ExactAccounting:
    return ExactAccounting(family="laplace", sup_loss=sup_loss, sup_loss_error=error)


# A Gaussian pair with mu = 1 known to 1e-12, and the error bound of delta(1) computed at it.
GAUSS = ExactAccounting(family="gaussian", sup_loss=math.inf, mu=1.0, mu_error=1e-12)
DELTA_TOL = delta_tolerance(APPROX, GAUSS)
# A Laplace pair whose supremum is known to 1e-13 (the laws' parameters rounded).
SUP_TOL = 1e-13


def _series(name: str, ratio: float) -> SeriesEvidence:
    empty = np.zeros(0)
    return SeriesEvidence(name, empty, empty, empty, empty, ratio, 1.0, ratio < 1, 0.0, 0.0)


def _compat(classification: str, extrapolated: bool = True) -> Compatibility:
    cm = _series("cameron-martin", 1.5 if classification == "incompatible" else 0.5)
    one_c = _series("one-c", 0.5 if classification == "compatible" else 1.0)
    reason = f"the pair is {classification}."
    return Compatibility(classification, cm, one_c, 16, 8, reason, extrapolated)


CERTIFICATE = Certificate(
    release=np.zeros(1),
    loss=2.0,
    direction="D->D'",
    log_p=0.0,
    log_q=-2.0,
    tolerance=1e-9,
    kind="density-ratio",
    source="monte-carlo",
    explanation="L(x) = 2 > epsilon = 1.",
)

# (rule, claim, delta summary, accounting, certificate, compatibility, family,
#  expected verdict, a phrase expected in the notes or None for no notes)
RULES = [
    ("1 certificate", PURE, _delta(), None, CERTIFICATE, None, None, "violation", None),
    ("2 Monte Carlo lower", APPROX, _delta(mc_lower=1e-3), None, None, None, None, "violation", None),
    (
        "3 exact lower curve",
        APPROX,
        _delta(exact_lower=2e-5, exact_upper=3e-5, upper=3e-5),
        ExactAccounting(family="gaussian", sup_loss=math.inf, mu=1.0),
        None,
        None,
        "gaussian",
        "violation",
        None,
    ),
    (
        "3 exact lower curve within its error bound",
        APPROX,
        _delta(exact_lower=1e-5 + 0.5 * DELTA_TOL, exact_upper=1e-5, upper=1e-5),
        GAUSS,
        None,
        None,
        "gaussian",
        "pass",
        None,
    ),
    (
        "3 exact lower curve beyond its error bound",
        APPROX,
        _delta(exact_lower=1e-5 + 3 * DELTA_TOL, exact_upper=1e-5, upper=1e-5),
        GAUSS,
        None,
        None,
        "gaussian",
        "violation",
        None,
    ),
    ("4 exact supremum", PURE, _delta(), _laplace(1.5), None, None, "laplace", "violation",
     "exact accounting"),
    ("4 Laplace supremum beyond its error bound", PURE, _delta(), _laplace(1 + 3 * SUP_TOL, SUP_TOL),
     None, None, "laplace", "violation", "exact accounting"),
    ("5 Laplace supremum within its error bound", PURE, _delta(),
     _laplace(1 + 0.5 * SUP_TOL, SUP_TOL), None, None, "laplace", "pass", None),
    ("5 Laplace supremum at the claim", PURE, _delta(), _laplace(1.0000000000000002), None, None,
     "laplace", "pass", None),
    ("5 identical laws", PURE, _delta(), ExactAccounting(family="gaussian", sup_loss=0.0, mu=0.0),
     None, None, "gaussian", "pass", None),
    ("6 pure claim on sampling", PURE, _delta(), None, None, None, None, "inconclusive",
     "cannot pass on Monte Carlo"),
    ("7 exact upper curve", APPROX, _delta(upper=1e-6, exact_upper=1e-6, exact_lower=0.0),
     ExactAccounting(family="gaussian", sup_loss=math.inf, mu=0.1), None, None, "gaussian",
     "pass", None),
    ("7 Monte Carlo upper bounds", APPROX, _delta(upper=1e-6), None, None, None, None, "pass",
     "this pair of datasets only"),
    ("8 otherwise", APPROX, _delta(upper=1e-3), None, None, None, None, "inconclusive", None),
    ("9 incompatible pass", APPROX, _delta(upper=1e-6), None, None, _compat("incompatible"),
     "gaussian", "incompatible", "cannot hold for the functional"),
    ("9 pure ICLP claim, gaussian-only pair", PURE, _delta(), _laplace(0.5), None,
     _compat("gaussian-only"), "laplace", "incompatible", "K = 16"),
    ("9 Gaussian noise outside H_C: Cameron-Martin, singular", APPROX, _delta(upper=1e-6), None,
     None, _compat("incompatible"), "gaussian", "incompatible", "mutually singular"),
    ("9 ICLP gaussian-only: 1,C, not pure-DP", PURE, _delta(), _laplace(0.5), None,
     _compat("gaussian-only"), "laplace", "incompatible", "not pure-DP"),
    ("9 a finite coefficient vector is not extrapolated", PURE, _delta(), _laplace(1.0), None,
     _compat("gaussian-only", extrapolated=False), "laplace", "pass", "rests on the audited law"),
    ("9 a violation stays a violation", PURE, _delta(), None, CERTIFICATE,
     _compat("incompatible"), "laplace", "violation", None),
    ("9 compatible pair", PURE, _delta(), _laplace(0.5), None, _compat("compatible"), "laplace",
     "pass", None),
    ("10 undetermined", APPROX, _delta(upper=1e-3), None, None, _compat("undetermined"),
     "gaussian", "inconclusive", "the pair is undetermined."),
]  # fmt: skip


@pytest.mark.parametrize(
    "rule, claim, delta, accounting, certificate, compat, family, expected, note",
    RULES,
    ids=[row[0] for row in RULES],
)
def test_verdict_rules(rule, claim, delta, accounting, certificate, compat, family, expected, note):
    outcome, notes = verdict(claim, delta, accounting, certificate, compat, family)
    assert outcome == expected, rule
    if note is None:
        assert notes == (), (rule, notes)
    else:
        assert any(note in n for n in notes), (rule, notes)


def test_delta_summary_reads_as_the_documented_dict():
    summary = _delta(mc_lower=0.1, upper=0.2)
    assert summary["upper"] == summary.upper == 0.2
    assert summary.get("exact_upper") is None and summary.get("missing", 3) == 3
    assert list(summary) == [
        "estimate", "lower", "upper", "monte_carlo_estimate", "monte_carlo_lower",
        "monte_carlo_upper", "exact_lower", "exact_upper",
    ]  # fmt: skip
    assert dict(summary) == {k: getattr(summary, k) for k in summary}
    with pytest.raises(KeyError):
        summary["missing"]


def test_a_pass_never_reports_a_lower_bound_above_its_claim():
    """Round-off above the claim is clamped on a pass only; a violation keeps its bound."""
    clamped = clamp_pass_lower_bound("pass", PURE, 1.0000000000000009)
    assert (clamped.value, clamped.raw) == (1.0, 1.0000000000000009)
    assert "round-off" in clamped.note
    for outcome, bound in (("pass", 0.7), ("violation", 1.5), ("inconclusive", 1.0 + 1e-15)):
        kept = clamp_pass_lower_bound(outcome, PURE, bound)
        assert kept == (bound, bound, None)


def test_laplace_mean_at_its_tight_epsilon_passes_with_a_clamped_lower_bound():
    """The catalogue's laplace-mean (n = 50, d = 2) at exactly its tight epsilon: the exact
    supremum of the loss is 1.0000000000000002 (fsum round-off) for a claim of 1."""
    import jax.numpy as jnp

    import dpaudit

    mech = dpaudit.build("laplace-mean", epsilon=1.0, n=50, dim=2)
    data = jnp.zeros((50, 2))
    report = dpaudit.audit(mech, data, data.at[0].set(1.0), samples=256)
    assert report.verdict == "pass"
    assert report.exact.sup_loss > 1.0  # the round-off this test is about
    assert report.epsilon_lower == 1.0
    assert report.diagnostics["epsilon_lower_raw"] == report.exact.sup_loss
    assert report.to_dict()["diagnostics"]["epsilon_lower_raw"] == report.exact.sup_loss
    assert any("round-off" in n for n in report.notes)
