"""Exact Laplace part pmfs at 40 digits: the reference of the Laplace round-off bounds.

Shared by ``tests/accounting/test_laplace_roundoff.py`` and ``benchmarks/laplace_roundoff.py``
(the benchmark imports it from its own folder, the test loads it by its path: an installed
package named ``benchmarks`` may shadow this folder). The float
parameters are taken exactly (the grid is ``k d`` for the float ``d``). Needs mpmath (the
``dev`` extra).
"""

import math
from fractions import Fraction

import mpmath

__all__ = ["exact_lower", "exact_pmf", "exact_upper"]


def exact_upper(a: float, d: float):
    """Connect-the-dots pmf of the Laplace loss ``a`` on the grid ``d k`` (exact grid).

    Args:
        a: the loss parameter.
        d: the grid spacing.

    Returns:
        ``(lo, masses)``: the first grid index and the masses as mpf numbers (at the
        caller's working precision).
    """
    big_a, big_d = mpmath.mpf(a), mpmath.mpf(d)
    ratio = Fraction(a) / Fraction(d)
    lo, hi = math.floor(-ratio), math.ceil(ratio)

    def delta(k):
        e = k * big_d
        if e >= big_a:
            return mpmath.mpf(0)
        return -mpmath.expm1(e if e < -big_a else (e - big_a) / 2)

    ds = [delta(k) for k in range(lo, hi + 1)]
    grow, em1 = mpmath.exp(big_d), mpmath.expm1(big_d)
    p = [1 - ds[0] + (ds[1] - ds[0]) / em1]
    p += [((ds[i + 1] - ds[i]) - grow * (ds[i] - ds[i - 1])) / em1 for i in range(1, len(ds) - 1)]
    p.append((ds[-1] - ds[-2]) / mpmath.expm1(-big_d))
    return lo, p


def exact_lower(a: float, d: float):
    """The Laplace loss ``a`` rounded down to the grid ``d k`` (exact grid).

    Args:
        a: the loss parameter.
        d: the grid spacing.

    Returns:
        ``(lo, masses)`` as for :func:`exact_upper`.
    """
    big_a, big_d = mpmath.mpf(a), mpmath.mpf(d)
    ratio = Fraction(a) / Fraction(d)
    lo, hi = math.floor(-ratio), math.floor(ratio)
    p = []
    for k in range(lo, hi + 1):
        left, right = max(k * big_d, -big_a), min((k + 1) * big_d, big_a)
        p.append((mpmath.exp((right - big_a) / 2) - mpmath.exp((left - big_a) / 2)) / 2)
    p[-1] += mpmath.mpf(1) / 2
    p[0] += mpmath.exp(-big_a) / 2
    return lo, p


def exact_pmf(a: float, d: float, estimate: str):
    """:func:`exact_upper` (``"pessimistic"``) or :func:`exact_lower`, at 40 digits.

    Args:
        a: the loss parameter.
        d: the grid spacing.
        estimate: ``"pessimistic"`` or ``"optimistic"``.

    Returns:
        ``(lo, masses)``.
    """
    with mpmath.workdps(40):
        return (exact_upper if estimate == "pessimistic" else exact_lower)(a, d)
