"""The samplers of the implementation audits: the catalogue's float and exact samplers.

Thin wrappers (one spec-facing callable per sampler, its parameters as keywords) around
:mod:`mechanisms.implementations.samplers`, so each spec names a file beside it.
"""

from __future__ import annotations

from mechanisms.implementations import samplers


def naive_laplace(data, n, key, *, epsilon=1.0):
    """``sum(D) + numpy laplace(0, 1/epsilon)`` (flawed)."""
    return samplers.naive_laplace(data, n, key, epsilon=epsilon)


def naive_gaussian(data, n, key, *, sigma=1.0):
    """``sum(D) + numpy normal(0, sigma)`` (flawed)."""
    return samplers.naive_gaussian(data, n, key, sigma=sigma)


def snapping_laplace(data, n, key, *, epsilon=1.0, bound=64.0):
    """Mironov's snapping mechanism (the fix)."""
    return samplers.snapping_laplace(data, n, key, epsilon=epsilon, bound=bound)


def discrete_laplace(data, n, key, *, epsilon=1.0):
    """Canonne–Kamath–Steinke exact discrete Laplace (the fix)."""
    return samplers.discrete_laplace(data, n, key, epsilon=epsilon)


def discrete_gaussian(data, n, key, *, sigma2=2.0):
    """Canonne–Kamath–Steinke exact discrete Gaussian (the fix)."""
    return samplers.discrete_gaussian(data, n, key, sigma2=sigma2)
