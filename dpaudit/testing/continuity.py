r"""Path continuity of released functions on refining grids (LR Thm 5/9), as a diagnostic check.

Lin & Reimherr (Thm 5 in arXiv v2, Thm 9 in the journal) show that an ICLP
whose covariance ``C`` is ``alpha``-Hölder in each coordinate,
``|C(t_1, s) - C(t_2, s)| <= M |t_1 - t_2|^alpha``, has a sample-continuous
modification: increments have variance ``C(t,t) - 2C(t,s) + C(s,s) <=
2M |t-s|^alpha`` and Laplace (sub-exponential) tails, so by chaining the
largest increment between neighbouring points of a grid of step ``h`` is of
order ``h^(alpha/2) log(1/h)``. See docs/papers/lr.md#lr-path-continuity.

:func:`assert_path_continuity` draws paths on midpoint grids of ``2^k``
points for a range of ``k``, takes the median over paths of the largest
neighbouring increment ``M_k``, and fits the slope of
``log(M_k / log(2/h_k))`` against ``log h_k``. A release consistent with the
theorem has slope at least about ``alpha/2``; a release whose paths do not
shrink their increments as the grid refines (a kernel with a nugget, white
noise) has slope about 0. The check fails when the slope is below
``alpha/2 - tolerance``.

This is a numerical diagnostic, not a certified bound: the slope is fitted
on finitely many levels with a log correction that is right only up to
constants. ``tolerance`` absorbs that (0.2 by default: measured slopes of
correct releases in ``tests/testing/test_continuity.py`` sit within 0.1 of
their prediction or above it, and the white-noise counterexample at 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np

from dpaudit.core.checks import check_count
from dpaudit.model.noise import ICLPNoise
from dpaudit.model.spaces import kl_basis, uniform_grid

__all__ = ["ContinuityCheck", "ContinuityViolation", "assert_path_continuity", "iclp_path_sampler"]


class ContinuityCheck(NamedTuple):
    """What :func:`assert_path_continuity` measured.

    Attributes:
        steps: grid steps ``h_k = 2^-k``.
        max_increments: median over paths of ``max_i |X(t_{i+1}) - X(t_i)|`` per level.
        slope: fitted slope of ``log(M_k / log(2/h_k))`` against ``log h_k``.
        predicted: ``alpha / 2``.
        tolerance: the allowed shortfall.
    """

    steps: np.ndarray
    max_increments: np.ndarray
    slope: float
    predicted: float
    tolerance: float


class ContinuityViolation(AssertionError):
    """Increments that do not shrink like ``h^(alpha/2)`` as the grid refines.

    Attributes:
        check: the :class:`ContinuityCheck`.
    """

    def __init__(self, message: str, check: ContinuityCheck):
        super().__init__(message)
        self.check = check


def iclp_path_sampler(kernel, sigma: float = 1.0) -> Callable:
    """A sampler of ICLP paths ``sigma sum_j sqrt(lambda_j) Z_j phi_j`` on midpoint grids.

    ``Z_j`` are unit-variance Laplace variables (LR Def. 2); the basis is the
    Karhunen–Loève basis of ``kernel`` on the grid of ``m`` points
    (:func:`dpaudit.model.spaces.kl_basis`).

    Args:
        kernel: a :class:`dpaudit.model.spaces.Kernel` on ``[0, 1]``.
        sigma: the multiplier.

    Returns:
        ``sampler(m, key, n_paths) -> (n_paths, m)`` path values.
    """

    def sampler(m: int, key, n_paths: int) -> np.ndarray:
        basis = kl_basis(kernel, uniform_grid(m))
        coefficients = ICLPNoise(basis.eigenvalues, sigma).sample(key, (n_paths,))
        return np.asarray(basis.reconstruct(coefficients))

    return sampler


def assert_path_continuity(
    sampler: Callable,
    holder_exponent: float,
    *,
    levels: tuple[int, ...] = (4, 5, 6, 7, 8),
    n_paths: int = 200,
    tolerance: float = 0.2,
    seed: int = 0,
) -> ContinuityCheck:
    """Check that released paths have a modulus of continuity consistent with LR Thm 5/9.

    Args:
        sampler: ``sampler(m, key, n_paths) -> (n_paths, m)``: paths at the ``m``
            midpoints of ``[0, 1]`` (e.g. :func:`iclp_path_sampler`).
        holder_exponent: ``alpha`` in ``(0, 1]``, the Hölder exponent of the kernel.
        levels: the grids have ``2^k`` points for ``k`` in ``levels`` (at least 3 levels).
        n_paths: paths per level.
        tolerance: the allowed shortfall of the fitted slope below ``alpha / 2``.
        seed: the seed.

    Returns:
        The :class:`ContinuityCheck`.

    Raises:
        ContinuityViolation: the fitted slope is below ``alpha/2 - tolerance``.
        ValueError: invalid arguments or a sampler returning the wrong shape.
    """
    if not (isinstance(holder_exponent, float | int) and 0 < holder_exponent <= 1):
        raise ValueError(f"holder_exponent must lie in (0, 1], got {holder_exponent!r}.")
    if len(levels) < 3 or any(int(k) < 1 or int(k) > 14 for k in levels):
        raise ValueError(f"levels needs at least 3 integers in [1, 14], got {levels!r}.")
    n_paths = check_count("n_paths", n_paths)
    keys = jax.random.split(jax.random.key(seed), len(levels))
    steps, maxima = [], []
    for k, key in zip(levels, keys, strict=True):
        m = 2 ** int(k)
        paths = np.asarray(sampler(m, key, n_paths), dtype=float)
        if paths.shape != (n_paths, m):
            raise ValueError(f"sampler returned shape {paths.shape}, expected ({n_paths}, {m}).")
        steps.append(1.0 / m)
        maxima.append(float(np.median(np.max(np.abs(np.diff(paths, axis=1)), axis=1))))
    h, big_m = np.asarray(steps), np.asarray(maxima)
    y = np.log(big_m / np.log(2.0 / h))
    slope = float(np.polyfit(np.log(h), y, 1)[0])
    check = ContinuityCheck(h, big_m, slope, holder_exponent / 2.0, float(tolerance))
    if slope < holder_exponent / 2.0 - tolerance:
        raise ContinuityViolation(
            f"path increments shrink like h^{slope:.3g} as the grid refines (largest neighbouring "
            f"increment {big_m[0]:.3g} at h = {h[0]:.3g}, {big_m[-1]:.3g} at h = {h[-1]:.3g}); an "
            f"{holder_exponent:g}-Hölder kernel gives at least h^{holder_exponent / 2:g} up to a "
            "log factor (LR Thm 5/9): the paths are not consistent with a continuous release.",
            check,
        )
    return check
