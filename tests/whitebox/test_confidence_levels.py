"""The confidence levels of the white-box Monte Carlo bounds, pinned exactly and calibrated.

* **Exact levels.** Each direction's bounds at the claimed epsilon are taken at
  ``alpha / 2`` (the verdict reads the max over both directions, which then fails with
  probability at most ``alpha``); the curves' bounds at ``alpha / (2 G)`` per grid point
  (Bonferroni over ``G`` points and two directions). The test recomputes both from the kept
  losses with :func:`dpaudit.estimation.pld.delta_bounds` at the stated level and compares to 1e-12.
* **Calibration.** The exceedance rate of :func:`dpaudit.estimation.pld.delta_bounds` on simulated
  hockey-stick terms of known mean, compared with its binomial band, sized so that a 2x
  level error is detected (power stated in the test's docstring).

Mutations checked (each makes a test of this file fail): the failure probability at the
claim ``alpha / 2 -> 5 alpha`` (``dpaudit/whitebox/run.py``), the per-point level
``alpha / (2 G) -> alpha / G``, and ``log(2 / alpha) -> log(1 / alpha)`` in the empirical
Bernstein width (a 2x level error, ``dpaudit/estimation/pld.py``).
"""

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE

import dpaudit
from dpaudit.estimation.pld import delta_bounds, hockey_stick_terms


def _laplace_mean():
    def model(d):
        numpyro.sample("release", dist.Laplace(jnp.mean(d), 1.0 / d.shape[0]))

    claim = dpaudit.Claim(epsilon=0.8, delta=0.05)  # the Laplace curve at 0.8 is ~0.1
    return dpaudit.Mechanism("test-laplace-mean-levels", model, claim)


@pytest.mark.parametrize("confidence", [0.95, 0.8])
def test_monte_carlo_failure_probabilities_are_alpha_over_two_and_alpha_over_two_g(confidence):
    mech = _laplace_mean()
    data = jnp.zeros(10)
    report = dpaudit.audit(
        mech, data, data.at[0].set(1.0), samples=4_000, seed=3, confidence=confidence
    )
    alpha = 1.0 - confidence
    grid = np.asarray(report.curves["epsilons"])
    g, claim_index = grid.size, report.curves["claim_index"]
    for result in report.directions:
        curve = report.curves[result.direction]
        assert curve["failure_probability_per_point"] == alpha / (2 * g)
        assert result.losses.size == result.n == 4_000  # every loss kept: moments recomputable
        y = np.asarray(hockey_stick_terms(jnp.asarray(result.losses), jnp.asarray(grid)))  # (G, n)
        mean, var = y.mean(axis=1), y.var(axis=1, ddof=1)
        lower, upper = delta_bounds(mean, var, result.n, alpha / (2 * g))
        np.testing.assert_allclose(curve["lower"], lower, rtol=0, atol=1e-12)
        np.testing.assert_allclose(curve["upper"], upper, rtol=0, atol=1e-12)
        at_lower, at_upper = delta_bounds(mean[claim_index], var[claim_index], result.n, alpha / 2)
        assert result.at_claim["lower"] == pytest.approx(float(at_lower), abs=1e-12)
        assert result.at_claim["upper"] == pytest.approx(float(at_upper), abs=1e-12)
    summary = report.delta_at_claimed_epsilon
    assert summary["monte_carlo_upper"] == max(d.at_claim["upper"] for d in report.directions)


# Calibration design. For Bernoulli(p) hockey-stick terms (losses +inf with probability p,
# else -inf) the bounds depend on the success count only, so the exact exceedance rate of
# the correct procedure is a finite binomial sum. The empirical Bernstein bound is
# conservative (at the audits' level 0.025 it almost never fails), so a level error is only
# visible where it fails often: per-side level 0.4, n = 2000, p = 0.2. The reference rate
# uses the Maurer & Pontil (2009, Thm 4) width as printed in the paper,
# sqrt(2 V log(2/a) / n) + 7 log(2/a) / (3 (n - 1)), not the code.
_LEVEL, _N, _P, _REPS = 0.4, 2_000, 0.2, 2_000


def _paper_rates(level: float) -> tuple[float, float]:
    """Exact rates of ``lower > p`` and ``upper < p`` for Bernoulli(_P) means of _N draws."""
    k = np.arange(_N + 1)
    mean, var = k / _N, k * (_N - k) / (_N * (_N - 1.0))
    log_term = np.log(2.0 / level)
    width = np.sqrt(2.0 * var * log_term / _N) + 7.0 * log_term / (3.0 * (_N - 1))
    pmf = scipy.stats.binom.pmf(k, _N, _P)
    return float(pmf[mean - width > _P].sum()), float(pmf[mean + width < _P].sum())


def test_empirical_bernstein_exceedance_matches_its_level_and_detects_a_2x_error():
    """Exceedance of each one-sided bound at level 0.4 over _REPS = 2000 simulated runs.

    The correct procedure exceeds at r0 = 0.0215 (lower) and 0.0259 (upper); with the
    level doubled (a 2x level error: log(2/a) -> log(1/a)) at r1 = 0.0701 and 0.0761. The
    test accepts counts inside the two-sided binomial band of r0 at TEST_FAILURE_RATE; the
    power against the 2x error, P(count outside the band | r1), is computed below and is
    above 1 - 1e-12 for each side (asserted >= 0.999). Both rates stay below the nominal
    level, as the bound promises. CPU: about 0.5 s.
    """
    r0, r1 = _paper_rates(_LEVEL), _paper_rates(2 * _LEVEL)
    rng = np.random.default_rng(20)
    losses = np.where(rng.random((_REPS, _N)) < _P, np.inf, -np.inf)
    y = np.asarray(hockey_stick_terms(jnp.asarray(losses), 0.0))
    lower, upper = delta_bounds(y.mean(axis=1), y.var(axis=1, ddof=1), _N, _LEVEL)
    counts = (int(np.sum(lower > _P)), int(np.sum(upper < _P)))
    for count, rate0, rate1 in zip(counts, r0, r1, strict=True):
        assert rate0 <= _LEVEL
        band = scipy.stats.binom.ppf(
            [TEST_FAILURE_RATE / 2, 1 - TEST_FAILURE_RATE / 2], _REPS, rate0
        )
        power = scipy.stats.binom.cdf(band[0] - 1, _REPS, rate1) + scipy.stats.binom.sf(
            band[1], _REPS, rate1
        )
        assert power >= 0.999, power
        assert band[0] <= count <= band[1], (count, band, rate0)
