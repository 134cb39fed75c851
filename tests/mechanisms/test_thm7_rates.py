"""Lin & Reimherr Thm 7 [14] / Cor. 1 [15]: privacy error, statistical error and bias of ICLP-QR,
ICLP-AR and FRL, as fitted slopes against the theorem's exponents.

Model and tuning: :mod:`mechanisms.iclp.rates` (``lambda_j = j^-4``, ``eta = 2``, mean with
``delta = 1.5`` extra smoothness; QR ``psi = 1/n``, FRL ``M = n^(1/3)``, AR PSS-style ``psi``).

Stated tolerances (tuned on seed 0; the Monte Carlo test runs seeds 1000, 2000, 3000):

* privacy error (exact, ``n`` from 1e2 to 1e8): slope within ``PRIVACY_BAND`` of the exponent;
* bias (exact, over ``psi`` from 1e-2 to 1e-10, or ``M`` from 2 to 30): the slope lies between
  the theorem's exponent (an upper bound on the rate) and the exact exponent of this mean, with
  ``BIAS_SLACK``; and the bias is below the theorem's bound at every tuning;
* statistical error (Monte Carlo, 300 datasets per ``n``, ``n`` from 125 to 2744): slope within
  ``STATISTICAL_BAND`` of -1 (the exact expectation for QR is -0.94, its shrinkage relaxing as
  ``psi = 1/n`` falls; the Monte Carlo slope has a standard deviation near 0.035), and the
  error below ``tr(Cov)/n`` (1-Lipschitz estimators) up to ``STATISTICAL_MC_FACTOR``.
"""

import numpy as np
import pytest

from mechanisms.iclp.rates import (
    ESTIMATORS,
    sequence_model,
    thm7_errors,
    thm7_exponents,
    thm7_slopes,
)

PRIVACY_BAND = 0.06
BIAS_SLACK = 0.05
STATISTICAL_BAND = 0.2
STATISTICAL_MC_FACTOR = 1.3
MODEL = sequence_model()


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_privacy_error_and_bias_slopes_match_the_theorem(estimator):
    slopes = thm7_slopes(estimator, MODEL, ns=(125, 343), replicates=10, seed=1)
    exponents = thm7_exponents(estimator, MODEL)
    assert abs(slopes["privacy"] - exponents["privacy"]) <= PRIVACY_BAND, slopes
    low, high = sorted((exponents["bias"], exponents["bias_exact"]))
    assert low - BIAS_SLACK <= slopes["bias"] <= high + BIAS_SLACK, (slopes, exponents)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_bias_and_statistical_error_stay_under_the_theorem_bounds(estimator):
    for n in (125, 1000, 8000):
        errors = thm7_errors(estimator, n, MODEL, replicates=40, seed=7)
        assert errors["bias"] <= errors["bias_bound"]
        assert errors["statistical"] <= STATISTICAL_MC_FACTOR * errors["statistical_bound"]


def test_exponents_are_the_corollary_values():
    assert thm7_exponents("iclp-qr", MODEL)["privacy"] == pytest.approx(-1.25)  # -2 + 6/8
    assert thm7_exponents("frl", MODEL)["bias"] == -8.0  # M^(-eta beta)
    assert thm7_exponents("iclp-ar", MODEL)["privacy"] == pytest.approx(-8 / 7)
    with pytest.raises(ValueError, match="eta > 1 \\+ 1/beta"):
        sequence_model(beta=4.0, eta=1.2)


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("seed", [1000, 2000, 3000])
def test_statistical_error_slope_is_minus_one_on_unseen_seeds(estimator, seed):
    slopes = thm7_slopes(estimator, MODEL, seed=seed)
    assert abs(slopes["statistical"] + 1.0) <= STATISTICAL_BAND, slopes
    total = [e["privacy"] + e["statistical"] + e["bias"] for e in slopes["errors"]]
    assert np.all(np.diff(total) < 0)
