r"""Noise samplers on finite computers: the float textbook versions and their exact fixes.

Each sampler is ``sampler(data, n, key, **params) -> (n,)`` releases of a counting
query ``f(D) = sum(D)`` (records in ``{0, 1}``, add/remove or replace-one
sensitivity 1), its randomness drawn from a numpy generator seeded by the JAX key
(:func:`dpaudit.blackbox.numpy_generator`).

* :func:`naive_laplace` — ``f(D) + numpy.laplace(0, 1/epsilon)`` in doubles. Mathematically
  epsilon-DP; as implemented the sets of doubles reachable from ``D`` and ``D'``
  differ, so some releases are impossible under one dataset: infinite epsilon
  (Mironov, "On significance of the least significant bits for differential
  privacy", CCS 2012).
* :func:`naive_gaussian` — ``f(D) + numpy.normal(0, sigma)``: the same defect for the
  Gaussian (ziggurat) sampler.
* :func:`snapping_laplace` — Mironov's snapping mechanism (2012, Sec. 5.2): clamp to
  ``[-B, B]``, add ``S lambda ln(U*)`` with ``U*`` uniform over the doubles of ``(0, 1)``
  drawn with its full precision (a geometric exponent and 52 random mantissa bits) and ``S``
  a random sign, round to the nearest multiple of ``Lambda`` (the smallest power of two
  ``>= lambda``), clamp again. Mironov's Theorem 1: ``((1 + 12 B eta) epsilon + 2 eta)``-DP
  for ``lambda = 1/epsilon < B < 2^46 lambda``, ``eta = 2^-53``
  (:func:`snapping_epsilon`).
* :func:`discrete_laplace` and :func:`discrete_gaussian` — exact samplers of Canonne,
  Kamath and Steinke ("The discrete Gaussian for differential privacy", NeurIPS 2020,
  Algorithms 1-3): every step is an integer comparison of uniform integers, so the
  release law is exactly ``P(z) ∝ exp(-|z| epsilon)`` resp. ``exp(-z^2 / (2 sigma^2))``
  on the integers. Discrete Laplace with scale ``1/epsilon`` is epsilon-DP; the
  discrete Gaussian's exact ``delta(epsilon)`` is :func:`discrete_gaussian_delta`
  (their Theorem 7).

Example:
    >>> import jax
    >>> x = discrete_laplace([1.0, 0.0, 1.0], 5, jax.random.key(0), epsilon=1.0)
    >>> x.shape, bool((x == x.round()).all())
    ((5,), True)
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpaudit.blackbox import numpy_generator

__all__ = [
    "discrete_gaussian",
    "discrete_gaussian_delta",
    "discrete_laplace",
    "naive_gaussian",
    "naive_laplace",
    "snapping_epsilon",
    "snapping_laplace",
]

#: Machine epsilon of Mironov's Theorem 1 (the relative rounding error of a double).
ETA = 2.0**-53


def _count(data) -> float:
    """The counting query: the sum of the records (floats, as a library would hold them)."""
    return float(np.sum(np.asarray(data, dtype=np.float64)))


def naive_laplace(data, n, key, *, epsilon=1.0):
    """``sum(D) + numpy laplace(0, 1/epsilon)`` in doubles (flawed: Mironov 2012).

    Args:
        data: the records.
        n: releases.
        key: a JAX key.
        epsilon: the claimed epsilon (noise scale ``1/epsilon``).

    Returns:
        ``(n,)`` float64 releases.
    """
    return _count(data) + numpy_generator(key).laplace(0.0, 1.0 / epsilon, n)


def naive_gaussian(data, n, key, *, sigma=1.0):
    """``sum(D) + numpy normal(0, sigma)`` in doubles (flawed the same way).

    Args:
        data: the records.
        n: releases.
        key: a JAX key.
        sigma: the noise standard deviation.

    Returns:
        ``(n,)`` float64 releases.
    """
    return _count(data) + numpy_generator(key).normal(0.0, sigma, n)


def snapping_epsilon(epsilon: float, bound: float) -> float:
    """Mironov's guarantee for the snapping mechanism: ``(1 + 12 B eta) epsilon + 2 eta``.

    Args:
        epsilon: the nominal epsilon (``lambda = 1/epsilon``, sensitivity 1).
        bound: the clamp bound ``B``.

    Returns:
        The epsilon the snapping mechanism satisfies (Mironov 2012, Theorem 1).
    """
    return (1.0 + 12.0 * bound * ETA) * epsilon + 2.0 * ETA


def snapping_laplace(data, n, key, *, epsilon=1.0, bound=64.0):
    """Mironov's snapping mechanism for ``sum(D)`` with ``lambda = 1/epsilon``.

    Args:
        data: the records.
        n: releases.
        key: a JAX key.
        epsilon: the nominal epsilon.
        bound: the clamp bound ``B`` (``1/epsilon < B < 2^46 / epsilon``).

    Returns:
        ``(n,)`` float64 releases, multiples of ``Lambda`` in ``[-B, B]``.

    Raises:
        ValueError: if ``bound`` is outside Mironov's range.
    """
    scale = 1.0 / epsilon
    if not scale < bound < 2.0**46 * scale:
        raise ValueError(f"bound must be in (1/epsilon, 2^46/epsilon), got {bound!r}.")
    rng = numpy_generator(key)
    # U* uniform over the doubles of (0, 1), each with probability its spacing: binade
    # [2^-k, 2^-k+1) with probability 2^-k, then 52 uniform mantissa bits.
    exponent = rng.geometric(0.5, n)
    mantissa = rng.integers(0, 1 << 52, n, dtype=np.int64)
    u = np.ldexp(1.0 + mantissa * 2.0**-52, -exponent)
    sign = np.where(rng.integers(0, 2, n) == 1, 1.0, -1.0)
    lattice = 2.0 ** math.ceil(math.log2(scale))  # Lambda: smallest power of 2 >= lambda
    clamped = min(max(_count(data), -bound), bound)
    noisy = clamped + sign * scale * np.log(u)
    return np.clip(np.rint(noisy / lattice) * lattice, -bound, bound)


def _bernoulli_exp(rng, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Exact ``Bernoulli(exp(-num/den))`` per element (CKS Algorithm 1, integer draws only).

    For ``gamma = num/den`` in ``[0, 1]``: ``K = 1``; while ``Bernoulli(gamma / K)``,
    ``K += 1``; return ``K`` odd. Larger ``gamma``: ``floor(gamma)`` trials of
    ``Bernoulli(exp(-1))`` and one of the fractional part, all of which must succeed.
    """
    num, den = np.asarray(num, np.int64), np.asarray(den, np.int64)
    whole, part = num // den, num % den
    result = _bernoulli_exp_small(rng, part, den)
    remaining = whole.copy()
    while True:
        active = result & (remaining > 0)
        if not active.any():
            return result
        idx = np.flatnonzero(active)
        ones = np.ones(idx.size, np.int64)
        result[idx] = _bernoulli_exp_small(rng, ones, ones)
        remaining[idx] -= 1


def _bernoulli_exp_small(rng, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Exact ``Bernoulli(exp(-num/den))`` for ``0 <= num <= den`` (CKS Algorithm 1)."""
    k = np.ones(num.shape, np.int64)
    active = np.ones(num.shape, bool)
    while active.any():
        idx = np.flatnonzero(active)
        # Bernoulli(num / (den k)): a uniform integer below den k falls below num.
        success = rng.integers(0, den[idx] * k[idx]) < num[idx]
        k[idx[success]] += 1
        active[idx[~success]] = False
    return k % 2 == 1


def _discrete_laplace_noise(rng, n: int, s: int, t: int) -> np.ndarray:
    """``n`` exact draws of ``P(z) ∝ exp(-|z| s / t)`` (CKS Algorithm 2)."""
    out = np.zeros(n, np.int64)
    todo = np.arange(n)
    while todo.size:
        m = todo.size
        u = rng.integers(0, t, m)
        keep = _bernoulli_exp(rng, u, np.full(m, t))
        v = np.zeros(m, np.int64)
        going = keep.copy()
        while going.any():  # V: the number of Bernoulli(exp(-1)) successes before a failure
            idx = np.flatnonzero(going)
            ones = np.ones(idx.size, np.int64)
            hit = _bernoulli_exp(rng, ones, ones)
            v[idx[hit]] += 1
            going[idx[~hit]] = False
        y = (u + t * v) // s
        b = rng.integers(0, 2, m)
        accept = keep & ~((b == 1) & (y == 0))
        out[todo[accept]] = ((1 - 2 * b) * y)[accept]
        todo = todo[~accept]
    return out


def discrete_laplace(data, n, key, *, epsilon=1.0):
    """``sum(D)`` plus exact discrete Laplace noise of scale ``1/epsilon`` (epsilon-DP).

    Args:
        data: the records (their sum must be an integer).
        n: releases.
        key: a JAX key.
        epsilon: a rational epsilon (as a float; read with :class:`fractions.Fraction`,
            denominator at most 1000).

    Returns:
        ``(n,)`` int64 releases.
    """
    rate = Fraction(epsilon).limit_denominator(1000)  # P(z) ∝ exp(-|z| s/t)
    rng = numpy_generator(key)
    noise = _discrete_laplace_noise(rng, n, rate.numerator, rate.denominator)
    return round(_count(data)) + noise


def discrete_gaussian(data, n, key, *, sigma2=1.0):
    """``sum(D)`` plus exact discrete Gaussian noise of variance parameter ``sigma2``.

    Args:
        data: the records (their sum must be an integer).
        n: releases.
        key: a JAX key.
        sigma2: ``sigma^2``, rational (denominator at most 1000).

    Returns:
        ``(n,)`` int64 releases.
    """
    var = Fraction(sigma2).limit_denominator(1000)
    a, b = var.numerator, var.denominator
    t = math.isqrt(a // b) + 1  # floor(sigma) + 1 (CKS Algorithm 3)
    rng = numpy_generator(key)
    out = np.zeros(n, np.int64)
    todo = np.arange(n)
    while todo.size:
        y = _discrete_laplace_noise(rng, todo.size, 1, t)
        # accept with exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|y| t b - a)^2 / (2 a b t^2))
        num = (np.abs(y) * t * b - a) ** 2
        accept = _bernoulli_exp(rng, num, np.full(y.size, 2 * a * b * t * t))
        out[todo[accept]] = y[accept]
        todo = todo[~accept]
    return round(_count(data)) + out


def discrete_gaussian_delta(sigma2: float, epsilon: float, sensitivity: int = 1) -> float:
    """Exact ``delta(epsilon)`` of the discrete Gaussian (CKS 2020, Theorem 7).

    ``delta = P[Z > epsilon sigma^2 / Delta - Delta / 2] - e^epsilon P[Z > epsilon sigma^2 /
    Delta + Delta / 2]`` for ``Z`` discrete Gaussian, summed exactly over the integers
    (rounded up by a relative ``1e-9``).

    Args:
        sigma2: ``sigma^2``.
        epsilon: the epsilon.
        sensitivity: the integer sensitivity ``Delta``.

    Returns:
        The smallest delta.
    """
    sigma = math.sqrt(sigma2)
    z = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
    log_w = -(z.astype(np.float64) ** 2) / (2.0 * sigma2)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    lo = epsilon * sigma2 / sensitivity - sensitivity / 2.0
    hi = epsilon * sigma2 / sensitivity + sensitivity / 2.0
    delta = w[z > lo].sum() - math.exp(epsilon) * w[z > hi].sum()
    return float(max(delta, 0.0) * (1 + 1e-9))
