"""connect_dots_pmf's round-off bound against the exact masses of the same curve values.

The masses of :func:`~dpaudit.accounting.composition.connect_dots_pmf` are second
differences of float curve values (already upper bounds), divided by ``e^d - 1``; the
exact masses of those same values are computed here at 40 digits, and their L1 distance
to the float masses must be within :func:`~dpaudit.accounting.composition.connect_dots_error`
(which replaced 4 ulp per grid point per copy, 4.3e-8 of margin at DP-SGD's 1000 steps).

Mutation checks: ``connect_dots_error`` returning a fortieth of its bound fails
``test_masses_within_the_bound`` (both DP-SGD directions reach 0.03 of it at
``d = 1e-4``); any other formula (such as the previous session's estimate, without the
division's rounding) fails the pin on the derivation in the same test.
"""

import math

import numpy as np
import pytest

from dpaudit.accounting.composition import (
    GaussianComponent,
    connect_dots_error,
    connect_dots_pmf,
    upper_curve_values,
)
from dpaudit.accounting.subsampling import subsampled_component
from dpaudit.core.roundoff import gaussian_curve_error

mpmath = pytest.importorskip("mpmath")


def _exact_masses(deltas, d):
    with mpmath.workdps(40):
        values = [mpmath.mpf(float(x)) for x in deltas]
        grow, em1 = mpmath.exp(mpmath.mpf(d)), mpmath.expm1(mpmath.mpf(d))
        out = [1 - values[0] + (values[1] - values[0]) / em1]
        out += [
            ((values[i + 1] - values[i]) - grow * (values[i] - values[i - 1])) / em1
            for i in range(1, len(values) - 1)
        ]
        out.append((values[-1] - values[-2]) / mpmath.expm1(-mpmath.mpf(d)))
    return out


def _pmf_and_values(case, d):
    """The pmf an upper_pmf returns and the float curve values it was built from."""
    if case == "gaussian":
        part = GaussianComponent(1.0)
        lo, probs, inf = part.upper_pmf(d, 1e-12)
        grid = d * np.arange(lo, lo + probs.size)
        values = upper_curve_values(part.curve(grid), gaussian_curve_error(grid, 1.0))
    else:
        part = subsampled_component(GaussianComponent(1.0), 0.01)
        lo, probs, inf = part.upper_pmf(d, 1e-12, case == "remove")
        grid = d * np.arange(lo, lo + probs.size)
        values = upper_curve_values(part.curve(grid, case == "remove"))
    assert np.array_equal(connect_dots_pmf(values, lo, d)[1], probs)  # the same values
    return probs, inf, np.minimum.accumulate(np.clip(values, 0.0, 1.0))


@pytest.mark.parametrize("d", [1e-3, 1e-4])
@pytest.mark.parametrize("case", ["gaussian", "remove", "add"])
def test_masses_within_the_bound(case, d):
    probs, inf, values = _pmf_and_values(case, d)
    exact = _exact_masses(values, d)
    # the pmf clips negative masses to 0; the exact ones are compared clipped likewise
    error = float(
        sum(abs(mpmath.mpf(float(p)) - max(x, 0)) for p, x in zip(probs, exact, strict=True))
    )
    bound = connect_dots_error(probs, inf, d)
    assert error <= bound, (error, bound)
    variation = float(values[0] - values[-1])
    u = 2.0**-53
    formula = 1.01 * u * ((5 + 8 * math.exp(d)) / math.expm1(d) * variation + 2)
    assert formula <= bound <= 1.001 * formula + 1e-18  # TV read back from the pmf
