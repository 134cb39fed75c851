"""The round-off margins of the numerical accounting, pinned from both sides.

Each margin is checked against a higher-precision evaluation of the computation it covers
(removing it fails: the float64 result errs by more than 0 somewhere) and against its
documented size (loosening it tenfold fails the pin on the derivation).

Mutation checks: ``margin=0`` in ``laplace_pld`` fails
``test_fft_margin_covers_the_convolution_error``; ``10 *`` the tree's bound fails its pin.
``gaussian_curve_error`` returning 0 fails ``test_gaussian_curve_error_bounds_the_evaluation``
(and times 10 its ratio pin); ``_CURVE_RTOL = 1e-11`` or ``0`` fails
``test_curve_inflation_without_a_derived_bound_is_relative_1e_12``. ``8 * _EPS`` -> ``0`` in ``log_bracket`` fails ``test_log_bracket_contains_the_log``;
``80 * _EPS`` fails its width pin.
"""

import math

import numpy as np
import pytest

from dpaudit.accounting.calibration import gaussian_delta
from dpaudit.accounting.composition import upper_curve_values
from dpaudit.accounting.profiles import (
    compose_pmfs,
    compose_pmfs_bounded,
    composed_error,
    laplace_components,
    laplace_pld,
    laplace_pmfs,
)
from dpaudit.accounting.suprema import log_bracket
from dpaudit.core.roundoff import gaussian_curve_error

U = 2.0**-53


def _direct(components):
    """Direct convolution of the component pmfs in extended precision."""
    out = np.ones(1, dtype=np.longdouble)
    for _, probs in components:
        out = np.convolve(out, np.asarray(probs, dtype=np.longdouble))
    return out


def test_fft_margin_covers_the_convolution_error():
    if np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps:
        pytest.skip("no extended precision on this platform")
    a = np.array([0.3, 0.7, 1.1, 0.05, 0.45, 0.9])
    pld = laplace_pld(a, 1e-3, estimate="pessimistic")
    components = laplace_pmfs(a, 1e-3, "pessimistic")
    offset, probs = compose_pmfs(components)
    exact = _direct(components)
    assert probs.size >= exact.size and offset == sum(o for o, _ in components)
    head = probs[: exact.size].astype(np.longdouble)
    error = float(np.sum(np.abs(head - exact)) + np.sum(np.abs(probs[exact.size :])))
    assert 0 < error <= pld.margin  # removing the margin leaves the error uncovered
    # the tree's derived bound plus the parts' own round-off (laplace_components), not looser
    _, errors = laplace_components(a, 1e-3, "pessimistic")
    assert pld.margin == compose_pmfs_bounded(components)[2] + composed_error(errors)


def test_gaussian_curve_error_bounds_the_evaluation():
    """Gaussian curve values (dpaudit.noise.gaussian_delta) vs 40-digit arithmetic, deep tails
    included (delta down to 1e-300, where log_ndtr's absolute error grows like a^2 / 2 and the
    former relative 1e-12 inflation left values 9e-11 below the truth)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    rng = np.random.default_rng(0)
    ratios, below = [], 0
    for mu, eps in zip(rng.uniform(0.05, 3, 1500), rng.uniform(0, 6, 1500), strict=True):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        truth = mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)
        if truth < 1e-300:
            continue
        value = float(gaussian_delta(eps, mu))
        bound = float(gaussian_curve_error(eps, mu))
        error = abs(mpmath.mpf(value) - truth)
        below += value < truth
        assert error <= bound
        assert float(upper_curve_values(value, bound)) >= truth
        ratios.append(float(error / bound))
    assert below > 0  # the raw values do fall below the truth: the bound is needed
    assert max(ratios) > 0.02  # within 50 x of the worst error met (a tenfold loosening fails)


def test_curve_inflation_without_a_derived_bound_is_relative_1e_12():
    assert float(upper_curve_values(1e-5)) == pytest.approx(1e-5 * (1 + 1e-12), rel=1e-15)


def test_log_bracket_contains_the_log():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    rng = np.random.default_rng(1)
    for x in 10.0 ** rng.uniform(-300, 300, 400):
        lo, hi = log_bracket(x, x)
        truth = mpmath.log(mpmath.mpf(x))
        assert lo <= truth <= hi
        assert hi - lo <= 20 * np.finfo(float).eps * abs(math.log(x)) + 3e-300  # 8 ulp a side
