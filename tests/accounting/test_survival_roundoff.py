"""Round-off of the lower (rounded-down) pmfs of Gaussian and subsampled parts.

The lower pmf of a Gaussian or Poisson-subsampled part is built from float survival values
``s_k`` at the floats of the grid points ``k d``; its bound
(``lower_pmf_bounded``) is the largest distance of ``s_k`` to the exact survival at the exact
``k d`` (:func:`~dpaudit.core.roundoff.gaussian_survival_error`,
:meth:`~dpaudit.accounting.subsampling.SubsampledComponent.survival_error`) plus ``u``, carried
to the pmf's tails (``docs/composition.md``, "Round-off of the lower pmfs"). Here the exact
survival is computed at 40 digits.

Mutation checks: the bracket of the subsampled bound switched off (``_bracket_gap`` returning
0) fails ``test_pile_up_needs_the_bracket`` (the float survival errs by ~1e-11 next to
``log(1 - q)``); the Gaussian bound's argument term dropped (``slope = 0``) fails
``test_gaussian_survival_within_the_bound`` at ``mu = 3000``; the running minimum of
``rounded_down_pmf`` removed (negative masses) fails ``test_lower_pmf_tails``;
``gaussian_merge_error`` returning 0 fails ``test_merged_gaussian_within_the_bound``, and
the merged charge left out of ``_compose_direction`` fails
``test_merged_gaussian_error_in_the_margins``.
"""

import math

import numpy as np
import pytest
import scipy.special

from dpaudit.accounting.composition import (
    GaussianComponent,
    LaplaceComponent,
    gaussian_merge_error,
    rounded_down_pmf,
)
from dpaudit.accounting.profiles import DiscretePLD
from dpaudit.accounting.subsampling import SubsampledComponent, subsampled_component
from dpaudit.core.roundoff import (
    ELEMENTARY_ULPS,
    NDTR_ULPS,
    UNIT_ROUNDOFF,
    gaussian_survival_error,
)

mpmath = pytest.importorskip("mpmath")
U = UNIT_ROUNDOFF


def _base_survivals(base, i):
    """Exact ``A(l >= i)``, ``B(l >= i)`` of a base loss at an mpf ``i``."""
    if isinstance(base, GaussianComponent):
        m = mpmath.mpf(base.mu) ** 2 / 2
        mu = mpmath.mpf(base.mu)
        return mpmath.ncdf((-m - i) / mu), mpmath.ncdf((m - i) / mu)
    a = mpmath.mpf(base.a)
    if i <= -a:
        return mpmath.mpf(1), mpmath.mpf(1)
    if i > a:
        return mpmath.mpf(0), mpmath.mpf(0)
    return mpmath.exp((-i - a) / 2) / 2, 1 - mpmath.exp((i - a) / 2) / 2


def _exact_survival(part, k, d, forward=True):
    """``P(L >= k d)`` at the exact grid point, 40 digits."""
    with mpmath.workdps(40):
        t = mpmath.mpf(int(k)) * mpmath.mpf(d)
        if isinstance(part, GaussianComponent):
            m = mpmath.mpf(part.mu) ** 2 / 2
            return mpmath.ncdf((m - t) / mpmath.mpf(part.mu))
        q = mpmath.mpf(part.q)
        v = mpmath.exp(t if forward else -t) - 1 + q
        if v <= 0:
            return mpmath.mpf(1 if forward else 0)
        s_a, s_b = _base_survivals(part.base, mpmath.log(v / q))
        return (1 - q) * s_a + q * s_b if forward else 1 - s_a


def _sample(n, size, rng):
    """Grid positions to check: both ends densely, the rest at random."""
    ends = np.r_[np.arange(min(n, 200)), np.arange(max(0, n - 200), n)]
    return np.unique(np.r_[ends, rng.integers(0, n, size)])


def _max_error(part, d, tail, forward, rng, size=600):
    lo, probs, bound = part.lower_pmf_bounded(d, tail, forward)
    k = lo + np.arange(probs.size)
    values = part.survival(d * k, forward) if not isinstance(part, GaussianComponent) else None
    if values is None:
        values = part.survival(d * k)
    tails = np.cumsum(probs[::-1])[::-1]  # the pmf's own tails (float sums: within n u)
    worst_value = worst_tail = 0.0
    for j in _sample(probs.size, size, rng):
        exact = _exact_survival(part, k[j], d, forward)
        worst_value = max(worst_value, float(abs(mpmath.mpf(float(values[j])) - exact)))
        worst_tail = max(worst_tail, float(abs(mpmath.mpf(float(tails[j])) - exact)))
    return worst_value, worst_tail, bound, probs.size


def test_elementary_functions_within_the_assumed_ulps():
    rng = np.random.default_rng(3)
    with mpmath.workdps(40):
        for x in np.r_[np.linspace(-38.0, 8.5, 600), rng.uniform(-10, 8, 300)]:
            error = abs(mpmath.mpf(float(scipy.special.ndtr(x))) - mpmath.ncdf(mpmath.mpf(x)))
            assert error <= NDTR_ULPS * U, x
        for x in rng.uniform(-20, 20, 400):
            for f, exact in ((np.expm1, mpmath.expm1), (np.exp, mpmath.exp)):
                value = exact(mpmath.mpf(x))
                assert abs(mpmath.mpf(float(f(x))) - value) <= ELEMENTARY_ULPS * U * abs(value)
            y = abs(x) + 1e-3
            value = mpmath.log(mpmath.mpf(y))
            assert abs(mpmath.mpf(float(np.log(y))) - value) <= ELEMENTARY_ULPS * U * abs(value)


@pytest.mark.parametrize("mu", [0.3, 1.0, 3000.0])
def test_gaussian_survival_within_the_bound(mu):
    part = GaussianComponent(mu)
    d = mu / 997  # grid points whose floats are rounded
    worst_value, worst_tail, bound, _ = _max_error(part, d, 1e-14, True, np.random.default_rng(0))
    assert worst_value <= gaussian_survival_error(mu, rounded_threshold=True)
    assert worst_tail <= bound + 1e5 * U  # the test's own cumsum adds up to n u
    # the bound is the derived formula, not more
    assert bound <= 1.01 * (1.01 * U * (NDTR_ULPS + 0.4 * mu + 0.74) + U) * 1.0001


@pytest.mark.parametrize(
    ("base", "q", "d"),
    [
        (GaussianComponent(1.0), 0.01, 1e-3),
        (GaussianComponent(0.5), 0.2, 1e-3),
        (LaplaceComponent(1.0), 0.1, 1e-3),
    ],
)
@pytest.mark.parametrize("forward", [True, False])
def test_subsampled_survival_within_the_bound(base, q, d, forward):
    part = subsampled_component(base, q)
    rng = np.random.default_rng(1)
    worst_value, worst_tail, bound, n = _max_error(part, d, 1e-14, forward, rng)
    assert worst_value <= bound
    assert worst_tail <= bound + 2 * n * U
    assert bound < 200 * U  # and small: well below the former 4 ulp per grid point


def test_pile_up_needs_the_bracket():
    """A grid point 1e-12 above ``log(1 - q)``: the float survival errs by ~1e-11 there."""
    d, k = 1e-3, -693
    q = -math.expm1(k * d - 1e-12)
    part = SubsampledComponent(GaussianComponent(4.0), q)
    _lo, _probs, bound = part.lower_pmf_bounded(d, 1e-14, True)
    worst = 0.0
    for j in range(k - 3, k + 4):
        value = float(part.survival(np.array([d * j]), True)[0])
        worst = max(worst, float(abs(mpmath.mpf(value) - _exact_survival(part, j, d, True))))
    assert 1e3 * U < worst <= bound, (worst / U, bound / U)


def test_lower_pmf_tails():
    """Non-monotone survival values are made monotone: no negative mass, tails within ``u``."""
    values = np.array([1.0, 0.7, 0.7000000000000001, 0.3, 0.30000000000000004, 0.0])
    _lo, probs = rounded_down_pmf(lambda e: values, 0, values.size - 1, 1.0)
    assert np.all(probs >= 0)
    tails = np.cumsum(probs[::-1])[::-1]
    assert np.max(np.abs(tails - values)) <= 2 * U


def test_tail_distance_bounds_curves_and_composes():
    """The curve distance is at most the tail distance; convolution composes it like L1."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        p = rng.dirichlet(np.ones(40))
        q = np.maximum(p + rng.normal(0, 1e-3, p.size), 0)
        r = rng.dirichlet(np.ones(30))
        s = np.maximum(r + rng.normal(0, 1e-3, r.size), 0)

        def tails(x):
            return np.cumsum(x[::-1])[::-1]

        def distance(x, y):
            return float(np.max(np.abs(tails(x) - tails(y))))

        e1, e2 = distance(p, q), distance(r, s)
        eps = np.linspace(-0.5, 0.6, 23)
        for a, b, e in ((p, q, e1), (np.convolve(p, r), np.convolve(q, s), None)):
            pa = DiscretePLD(0.05, -10, a, 0.0, 0.0, "optimistic").delta(eps)
            pb = DiscretePLD(0.05, -10, b, 0.0, 0.0, "optimistic").delta(eps)
            limit = e if e is not None else e1 * s.sum() + p.sum() * e2
            assert np.max(np.abs(pa - pb)) <= limit + 1e-14
        assert distance(np.convolve(p, r), np.convolve(q, s)) <= e1 * s.sum() + e2 + 1e-14


def test_merged_gaussian_within_the_bound():
    """The float ``mu`` of merged Gaussian parts moves every tail by at most the charge."""
    rng = np.random.default_rng(7)
    parts = rng.uniform(0.05, 2.0, 9)
    counts = rng.integers(1, 50, 9)
    mu = math.sqrt(math.fsum(int(k) * float(m) ** 2 for m, k in zip(parts, counts, strict=True)))
    with mpmath.workdps(40):
        exact = mpmath.sqrt(
            sum(int(k) * mpmath.mpf(float(m)) ** 2 for m, k in zip(parts, counts, strict=True))
        )
        assert exact != mpmath.mpf(mu)  # the float merge did round

        def tail(t, m):
            return mpmath.ncdf(m / 2 - t / m)

        worst = max(
            abs(tail(mpmath.mpf(t), mpmath.mpf(mu)) - tail(mpmath.mpf(t), exact))
            for t in np.linspace(exact**2 / 2 - 6 * exact, exact**2 / 2 + 6 * exact, 401)
        )
    assert 0 < worst <= gaussian_merge_error(mu)


def test_merged_gaussian_error_in_the_margins(monkeypatch):
    import dpaudit.accounting.composition as composition

    parts = [GaussianComponent(0.5), GaussianComponent(0.7), LaplaceComponent(0.3)]
    before = composition.compose_accounting(parts, discretization=1e-3)
    monkeypatch.setattr(composition, "gaussian_merge_error", lambda mu: 1e-3)
    after = composition.compose_accounting(parts, discretization=1e-3)
    for name in ("upper_pld", "lower_pld"):
        moved = getattr(after, name).margin - getattr(before, name).margin
        assert moved == pytest.approx(1e-3 - gaussian_merge_error(math.sqrt(0.74)), rel=1e-9)
