"""The rank bound (dpaudit.training.rank): calibration on exactly Gaussian ROC curves, its record.

Calibration: scores ``N(mu, 1)`` with the canary and ``N(0, 1)`` without have exactly the
Gaussian ROC curve the bound assumes, so its certified ``mu`` may exceed the true one in
at most ``1 - confidence`` of the trials, and, the Monte Carlo test being exact, in about
that share. The count is checked on both sides against binomial quantiles at ``1e-4``
(each check fails by chance with probability < 1e-4): at confidence 0.8 a halved or a
doubled significance (0.1 or 0.4 instead of 0.2) lands outside, and at 0.95 so does a
misread level (0.05 used as the confidence).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from dpaudit.accounting.conversions import gdp_epsilon
from dpaudit.training import RankBound, rank_bound

_TEST_FAILURE_RATE = 1e-4
_TRIALS = 400
_MU = 1.0


def _failures(confidence: float) -> int:
    """How often the certified mu exceeds the true one (20 runs per group, B = 99)."""
    rng = np.random.default_rng(7)
    fails = 0
    for t in range(_TRIALS):
        s_in, s_out = rng.normal(_MU, 1.0, 20), rng.normal(0.0, 1.0, 20)
        bound = rank_bound(s_in, s_out, delta=1e-3, confidence=confidence, simulations=99, seed=t)
        fails += bound.mu > _MU
    return fails


def _band(rate: float) -> tuple[int, int]:
    lo = scipy.stats.binom.ppf(_TEST_FAILURE_RATE / 2, _TRIALS, rate)
    hi = scipy.stats.binom.ppf(1 - _TEST_FAILURE_RATE / 2, _TRIALS, rate)
    return int(lo), int(hi)


@pytest.mark.parametrize("confidence", [0.95, 0.8])
def test_rank_bound_exceeds_the_truth_at_the_stated_rate(confidence):
    lo, hi = _band(1 - confidence)
    assert lo <= _failures(confidence) <= hi


def test_rank_bound_calibration_sees_a_misread_level():
    _, hi = _band(0.05)
    assert _failures(0.05) > hi  # 0.05 read as the confidence
    lo, hi = _band(0.2)
    assert not lo <= 0.1 * _TRIALS <= hi and not lo <= 0.4 * _TRIALS <= hi  # the band sees halving


def test_rank_bound_record_and_what_it_certifies():
    rng = np.random.default_rng(0)
    s_in, s_out = rng.normal(1.5, 1.0, 500), rng.normal(0.0, 1.0, 500)
    b = rank_bound(s_in, s_out, delta=1e-5)
    assert isinstance(b, RankBound)
    assert 1.2 < b.mu < 1.5 and b.epsilon == gdp_epsilon(1e-5, b.mu)
    assert b.runs == (500, 500) and b.simulations == 999 and b.confidence == 0.95
    assert any("ROC curve is a Gaussian one" in a for a in b.to_dict()["assumptions"])
    # The same data certify more at a lower confidence, and nothing when the groups agree.
    assert rank_bound(s_in, s_out, delta=1e-5, confidence=0.5).mu > b.mu
    assert rank_bound(s_out[:250], s_out[250:], delta=1e-5).mu == 0.0
    # Ranks only: an increasing map of the scores changes nothing.
    assert rank_bound(np.exp(s_in), np.exp(s_out), delta=1e-5) == b
    assert rank_bound(s_in, s_out, delta=0.0).epsilon == math.inf


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 1.0}, "delta must be"),
        ({"delta": 1e-5, "confidence": 1.0}, "confidence must be"),
        ({"delta": 1e-5, "simulations": 5}, "simulations must be"),
    ],
)
def test_rank_bound_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rank_bound([0.0, 1.0, 2.0], [0.0, 1.0, 2.0], **kwargs)
    with pytest.raises(ValueError, match="non-finite"):
        rank_bound([0.0, np.nan], [0.0, 1.0], delta=1e-5)
