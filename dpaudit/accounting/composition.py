r"""Exact or numerically conservative accounting of compositions of independent releases.

A release made of several independent, non-adaptive parts (sites, queries, steps)
has a privacy loss that is the *sum* of independent per-part losses, so its
privacy-loss distribution (PLD) is the convolution of the per-part PLDs.
:func:`compose_accounting` takes the parts (one
:class:`~dpaudit.model.shift.NoiseShift` per site, an
:class:`~dpaudit.accounting.profiles.ExactAccounting`, or a *component* of this module or of
:mod:`dpaudit.accounting.subsampling`) and returns one
:class:`~dpaudit.accounting.profiles.ExactAccounting` with upper and lower bounds on the
hockey-stick curve ``delta(epsilon)`` and on ``epsilon(delta)``:

* **Gaussian parts only**: exact. The losses ``N(mu_i^2/2, mu_i^2)`` sum to
  ``N(mu^2/2, mu^2)`` with ``mu = sqrt(sum_i mu_i^2)``.
* **Anything else**: numerically, on a grid of spacing ``discretization``.
  Every Gaussian part is first merged into one Gaussian (exact), which is then
  discretised like any other component:

  - the *upper* curve composes pessimistic per-component pmfs: Doroshenko et
    al.'s connect-the-dots pmf (Laplace, Gaussian, subsampled mechanisms), whose
    curve equals the true curve at the grid epsilons and lies above it in between,
    with the loss mass above the top grid point sent to ``+inf``; or the
    randomized-response pair of a component known only through its supremum;
  - the *lower* curve composes per-component losses rounded *down* to the grid,
    with the mass below the bottom grid point dropped.

Why this is sound, direction by direction. With ``X_i = e^{-L_i}`` independent
under ``P``, ``delta(epsilon) = E[(1 - e^epsilon prod_i X_i)_+]``. Fixing all parts
but one, the expectation is ``E[(1 - s X_1)_+]`` for some ``s >= 0``, i.e. the
one-part curve at ``log s``. So replacing one part's law by a (non-negative,
possibly sub- or super-normalised) pmf whose curve is ``>=`` (``<=``) the true one
at *every real* epsilon can only raise (lower) the composed curve; doing this
part by part proves the bound. Moving mass to larger losses, to ``+inf``, or adding
mass raises every curve; moving mass to smaller losses or dropping it lowers it.

Equal components are composed by a **power path**: one real FFT of the pmf on a
window chosen by a Chernoff bound, the ``count``-th power by repeated squaring
of the spectrum, one inverse FFT (:func:`self_compose_pmf`). Mass outside the
window wraps around (aliasing); the Chernoff bound of the upper tail is added to
the ``+inf`` mass (upper curve) and that of the lower tail to the round-off margin
(lower curve). Distinct components are then convolved all at once
(:func:`~dpaudit.accounting.profiles.compose_pmfs`) and the composed pmf's negligible tails
are folded (upper: lower tail moved up to the first kept point, upper tail to
``+inf``; lower: upper tail moved down to the last kept point, lower tail dropped).

Many distinct components (at least ``_TREE_MIN_LEAVES`` pmfs) take a faster route:
the pmfs whose support is at most about four standard deviations wide convolved by a
balanced tree of batched real FFTs in which every pair is convolved cyclically on a
*window* around its mean when its support is wider: the exact sum of the leaves below
a pair has sub-Gaussian tails by Hoeffding's lemma, so the mass outside the window
is bounded, and it is moved the safe way (upper curve: the part from above also to
``+inf``; lower curve: the part from below subtracted from every delta). See
:func:`_windowed_tree` and ``docs/composition.md``.

Round-off. The convolutions' round-off is bounded from their operands' L1 and L2 norms
(:func:`~dpaudit.accounting.profiles.fft_convolution_error`; in the windowed tree carried as
an L1 distance to the same tree in exact arithmetic, with the folds' summation error and a
``k``-factor last product, :func:`_product_roundoff`; ``docs/composition.md``, "Round-off of
the windowed tree") and added to the margin. The power path assumes the trees' FFT model
(``FFT_ULPS_PER_LEVEL`` ulps per binary level, ``g = c log2(n) u / (1 - c log2(n) u)``,
``c = 16``, ``u = 2^-53``): each forward coefficient is within ``g ||p||_1``
(componentwise, :func:`fft_coefficient_error`), carried through the power
(``|a^k - b^k| <= k max(|a|, |b|)^(k-1) |a - b|``) and back to the sum of absolute output
errors (Parseval, Cauchy-Schwarz); the repeated squaring's ``k - 1`` complex products
(``3 u`` each) and the inverse FFT's normwise ``g sqrt(n) ||out||_2`` are added
(``docs/composition.md``, "Equal parts: the power path").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import scipy.fft
import scipy.special

from dpaudit.accounting.profiles import (
    COMPLEX_PRODUCT_ULPS,
    FFT_ULPS_PER_LEVEL,
    DiscretePLD,
    ExactAccounting,
    compose_pmfs_bounded,
    composed_error,
    fft_convolution_error,
    fft_product_error,
    gaussian_curve,
    gaussian_mu,
    laplace_components,
    laplace_delta,
    laplace_parameters,
    laplace_pld,
    laplace_pmfs,
)
from dpaudit.core.checks import check_loss_parameter
from dpaudit.core.roundoff import gaussian_curve_error, gaussian_survival_error, shift_errors
from dpaudit.core.serialize import json_float

__all__ = [
    "BoundedComposition",
    "GaussianComponent",
    "LaplaceBatch",
    "LaplaceComponent",
    "LaplacePairs",
    "SupremumComponent",
    "components_of",
    "compose_accounting",
    "compose_windowed",
    "connect_dots_error",
    "connect_dots_pmf",
    "exact_accounting",
    "fft_coefficient_error",
    "fold_roundoff",
    "fold_tails",
    "gaussian_merge_error",
    "laplace_group_pld",
    "powered_coefficients",
    "rounded_down_error",
    "rounded_down_pmf",
    "self_compose_pmf",
    "upper_curve_values",
]

_EPS = float(np.finfo(np.float64).eps)
_UNIT = _EPS / 2  # unit round-off u = 2^-53

# Curves without a derived error bound (the subsampled mixtures of dpaudit.subsampling) are
# inflated by 1e-12 relative plus 1e-300; a Gaussian component's curve adds the error bound
# of its evaluation (dpaudit.core.roundoff.gaussian_curve_error) instead.
_CURVE_RTOL = 1e-12

# Chernoff orders for the power-path window, relative to the order that is best for a
# Gaussian-shaped sum: 1/30 (heavy right tails of subsampled losses) to 3; consecutive
# orders differ by a factor 1.9, which widens the window by under 20 % over the best order.
_CHERNOFF_ORDERS = np.geomspace(1.0 / 30.0, 3.0, 8)

# The power path leaves out (sets to 0, and charges) the coefficients whose exact power has
# modulus at most this: their effect on the composed pmf is below 1e-27 in L1.
_DROPPED_POWER = 1e-30
# Compositions of at least this many distinct pmfs use the windowed tree
# (:func:`_windowed_tree`); below it the plain convolution (compose_pmfs) is cheap.
_TREE_MIN_LEAVES = 32
# One batch of the tree's FFTs holds at most this many float64 per input matrix (32 MiB),
# and pairs whose FFT length is at least this fraction of the batch's (padding <= 25 %).
_BATCH_ELEMENTS = 1 << 22
_BATCH_RATIO = 0.8
# The tree stops at this many nodes, which go into one last cyclic product with the long
# pmfs: one FFT each at the final window length costs less than the last levels of pairs.
_FINAL_FAN_IN = 16
# Compositions of plain Laplace parts only take the audit path's engine (laplace_group_pld:
# batched FFT trees, equal parts powered); the tests turn it off to exercise the windowed tree.
_LAPLACE_ROUTE = True


def _check_discretization(discretization) -> float:
    if isinstance(discretization, bool) or not isinstance(discretization, int | float):
        raise TypeError(f"discretization must be a number, got {type(discretization).__name__}.")
    if not (math.isfinite(discretization) and discretization > 0):
        raise ValueError(f"discretization must be a finite number > 0, got {discretization!r}.")
    return float(discretization)


def _check_tail(tail_mass) -> float:
    if isinstance(tail_mass, bool) or not isinstance(tail_mass, int | float):
        raise TypeError(f"tail_mass must be a number, got {type(tail_mass).__name__}.")
    if not (0 < tail_mass <= 1e-3):
        raise ValueError(
            f"tail_mass must lie in (0, 1e-3], got {tail_mass!r}: it is the mass the "
            "composition may fold into +inf, so it bounds the extra delta of the upper curve."
        )
    return float(tail_mass)


def upper_curve_values(deltas, errors=None) -> np.ndarray:
    """Curve values evaluated in float64, inflated to upper bounds of the exact values.

    Args:
        deltas: evaluated ``delta`` values.
        errors: bounds on their absolute evaluation errors (for a Gaussian curve,
            :func:`dpaudit.core.roundoff.gaussian_curve_error`), or ``None`` for a relative
            ``1e-12`` (curves whose evaluation has no derived bound).

    Returns:
        ``min(1, delta + error + 1e-300)``.
    """
    deltas = np.asarray(deltas, dtype=np.float64)
    if errors is None:
        return np.minimum(deltas * (1 + _CURVE_RTOL) + 1e-300, 1.0)
    return np.minimum(deltas + np.asarray(errors, dtype=np.float64) + 1e-300, 1.0)


def connect_dots_pmf(deltas, lo: int, discretization: float) -> tuple[int, np.ndarray, float]:
    r"""Pessimistic connect-the-dots pmf on the grid ``discretization * (lo + k)``.

    Doroshenko et al. (2022, Alg. 1) with equally spaced epsilons: the masses make
    the pmf's curve equal ``deltas`` at the grid epsilons, the chord in
    ``e^epsilon`` between them, the chord from ``(e^epsilon = 0, delta = 1)`` below
    the grid, and ``deltas[-1]`` (the ``+inf`` mass) above it. Hockey-stick curves are
    convex in ``e^epsilon``, so when ``deltas`` bound a true curve from above at the
    grid epsilons the pmf's curve bounds it at every real epsilon. Negative masses
    (round-off) are set to 0, which only raises the curve.

    Args:
        deltas: ``(n,)`` non-increasing upper bounds on the curve at the grid epsilons.
        lo: grid index of the first epsilon.
        discretization: grid spacing.

    Returns:
        ``(lo, probs, infinity_mass)``.

    Example:
        >>> lo, p, inf = connect_dots_pmf(np.array([0.5, 0.0]), 0, 1.0)
        >>> round(float(p.sum() + inf), 6) >= 1.0
        True
    """
    deltas = np.minimum.accumulate(np.clip(np.asarray(deltas, dtype=np.float64), 0.0, 1.0))
    if deltas.size == 1:
        return int(lo), np.array([1.0 - deltas[0]]), float(deltas[0])
    em1 = math.expm1(discretization)
    diffs = np.diff(deltas)
    probs = np.empty(deltas.size)
    probs[1:-1] = (diffs[1:] - math.exp(discretization) * diffs[:-1]) / em1
    probs[0] = 1.0 - deltas[0] + diffs[0] / em1
    probs[-1] = diffs[-1] / math.expm1(-discretization)
    return int(lo), np.maximum(probs, 0.0), float(deltas[-1])


def connect_dots_error(probs, infinity_mass: float, discretization: float) -> float:
    r"""Round-off of :func:`connect_dots_pmf`'s masses, bounded from the pmf it returned.

    The masses are the exact connect-the-dots masses of the float curve values ``delta_k``
    (upper bounds already, so their own error needs no charge) up to the rounding of
    ``((delta_(k+1) - delta_k) - e^d (delta_k - delta_(k-1))) / (e^d - 1)``. With
    ``D_k = delta_(k+1) - delta_k``, ``u = 2^-53`` and ``exp``, ``expm1`` within 2 ulp:
    the difference rounds by ``u |D_k|``, the product by ``(u + 2 u + u) e^d |D_(k-1)|``
    (its operand, ``e^d`` and the product), the numerator's subtraction by
    ``u (|D_k| + e^d |D_(k-1)|)`` and the division by ``e^d - 1`` by ``3 u`` relative of
    ``(|D_k| + e^d |D_(k-1)|) / (e^d - 1)``: at most
    ``u (5 |D_k| + 8 e^d |D_(k-1)|) / (e^d - 1)`` per mass; the two end masses stay within
    the same coefficients plus ``2 u``. Summed over the masses every ``|D_k|`` appears at
    most once with each coefficient, and ``sum |D_k| = delta_0 - delta_last = TV`` (the
    values are non-increasing): in all ``u ((5 + 8 e^d) TV / (e^d - 1) + 2)``, times 1.01
    for second-order terms. ``TV`` is read back from the pmf (its curve at the first grid
    point minus the ``+inf`` mass), which errs by at most that bound with ``TV <= 1``
    plus ``2 u N`` of summation. ``docs/composition.md``, "Round-off of the
    connect-the-dots pmfs".

    Args:
        probs: the masses :func:`connect_dots_pmf` returned.
        infinity_mass: the ``+inf`` mass it returned.
        discretization: grid spacing ``d``.

    Returns:
        A bound on the L1 distance between ``probs`` and the exact masses.
    """
    probs = np.asarray(probs, dtype=np.float64)
    unit = 2.0**-53
    coefficient = (5.0 + 8.0 * math.exp(discretization)) / math.expm1(discretization)
    weights = -np.expm1(-discretization * np.arange(probs.size))
    read = float(np.sum(weights * probs))  # delta_0 - delta_last, up to the slack below
    slack = 1.01 * unit * (coefficient + 2.0) + 2.0 * unit * probs.size
    variation = min(1.0, max(0.0, read) + slack)
    return 1.01 * unit * (coefficient * variation + 2.0)


def rounded_down_pmf(survival, lo: int, hi: int, discretization: float):
    """Losses rounded down to the grid from ``S(e) = P(L >= e)`` (or ``P(L > e)``).

    Bin ``k`` (``lo <= k < hi``) gets ``S(k d) - S((k+1) d)`` at ``k d``; the top bin
    gets ``S(hi d)``; the mass below ``lo d`` is dropped. Every loss moves down or
    disappears, so the curve is a lower bound at every epsilon.

    The float values ``s_k`` are clipped to ``[0, 1]`` and made non-increasing (a running
    minimum), which keeps each within the same distance of the exact, non-increasing
    ``S(k d)``; their differences are then non-negative and exact up to ``u`` of
    themselves, so the tail sums of the returned masses telescope to ``s_k`` up to
    ``u s_k``: every tail is within ``max_k |s_k - S(k d)| + u`` of the exact one
    (:func:`rounded_down_error`).

    Args:
        survival: vectorised ``e -> P(L >= e)`` under ``P`` (finite losses only).
        lo: first grid index.
        hi: last grid index (``>= lo``).
        discretization: grid spacing ``d``.

    Returns:
        ``(lo, probs)``.
    """
    edges = discretization * np.arange(lo, hi + 1)
    s = np.clip(np.asarray(survival(edges), dtype=np.float64), 0.0, 1.0)
    np.minimum.accumulate(s, out=s)
    probs = np.empty(s.size)
    np.subtract(s[:-1], s[1:], out=probs[:-1])
    probs[-1] = s[-1]
    return int(lo), probs


def rounded_down_error(survival_error: float) -> float:
    """Bound on the tail distance of :func:`rounded_down_pmf`'s pmf to the exact one.

    The tail distance ``max_k |sum_(j >= k) (p_j - p*_j)|`` bounds the difference of the two
    curves at every epsilon and composes like an L1 distance (``docs/composition.md``,
    "Round-off of the lower pmfs").

    Args:
        survival_error: a bound on ``|s_k - S(k d)|`` at every grid point (the float survival
            values against the exact survival at the exact grid points).

    Returns:
        ``1.01 (survival_error + u)``.
    """
    return 1.01 * (float(survival_error) + 2.0**-53)


# ---------------------------------------------------------------- components


@dataclasses.dataclass(frozen=True)
class GaussianComponent:
    """The loss ``N(mu^2/2, mu^2)`` of a Gaussian mechanism with ``mu = Delta / sigma``.

    Attributes:
        mu: the Gaussian loss parameter (:func:`~dpaudit.accounting.profiles.gaussian_mu`).
    """

    mu: float
    family = "gaussian"
    symmetric = True
    connect_the_dots = True  # upper_pmf is connect_dots_pmf of the curve

    def __post_init__(self) -> None:
        """Refuse a NaN, infinite or negative ``mu`` (one sentence, before any work)."""
        check_loss_parameter("GaussianComponent.mu", self.mu)

    def sup_loss(self, forward: bool = True) -> float:
        """``ess sup L``: ``inf`` unless ``mu = 0``.

        Args:
            forward: the direction (both are equal).

        Returns:
            The supremum.
        """
        return math.inf if self.mu > 0 else 0.0

    def curve(self, epsilon, forward: bool = True) -> np.ndarray:
        """The exact curve (:func:`~dpaudit.accounting.profiles.gaussian_curve`).

        Args:
            epsilon: epsilon(s).
            forward: the direction (both are equal).

        Returns:
            ``delta(epsilon)``.
        """
        return gaussian_curve(epsilon, self.mu)

    def survival(self, t, under_p: bool = True) -> np.ndarray:
        """``P(L >= t)`` (``under_p``) or ``Q(L >= t)``: ``L ~ N(+-mu^2/2, mu^2)``.

        Args:
            t: loss value(s).
            under_p: the law ``P`` (mean ``+mu^2/2``) or ``Q`` (mean ``-mu^2/2``).

        Returns:
            The survival probabilities.
        """
        m = 0.5 * self.mu**2 if under_p else -0.5 * self.mu**2
        return scipy.special.ndtr((m - np.asarray(t, dtype=np.float64)) / self.mu)

    def loss_range(self, tail: float, under_p: bool = True) -> tuple[float, float]:
        """``[lo, hi]`` outside which each tail of ``L`` has mass ``<= tail``.

        Args:
            tail: the tail mass.
            under_p: the law of ``L`` (as in :meth:`survival`).

        Returns:
            ``(lo, hi)``.
        """
        z = -float(scipy.special.ndtri(tail))
        m = 0.5 * self.mu**2 if under_p else -0.5 * self.mu**2
        return m - z * self.mu, m + z * self.mu

    def upper_pmf(self, discretization: float, tail: float, forward: bool = True):
        """Connect-the-dots pmf on ``[lo, hi]`` of :meth:`loss_range` (``delta(hi) <= tail``).

        Args:
            discretization: grid spacing.
            tail: mass allowed above the grid (sent to ``+inf``).
            forward: the direction (both are equal).

        Returns:
            ``(offset, probs, infinity_mass)``.
        """
        if self.mu == 0:
            return 0, np.ones(1), 0.0
        lo, hi = self.loss_range(tail)
        k_lo, k_hi = math.floor(lo / discretization), math.ceil(hi / discretization)
        grid = discretization * np.arange(k_lo, k_hi + 1)
        deltas = upper_curve_values(self.curve(grid), gaussian_curve_error(grid, self.mu))
        return connect_dots_pmf(deltas, k_lo, discretization)

    def lower_pmf(self, discretization: float, tail: float, forward: bool = True):
        """Losses rounded down on ``[lo, hi]`` of :meth:`loss_range`.

        Args:
            discretization: grid spacing.
            tail: mass allowed below the grid (dropped).
            forward: the direction (both are equal).

        Returns:
            ``(offset, probs)``.
        """
        offset, probs, _ = self.lower_pmf_bounded(discretization, tail, forward)
        return offset, probs

    def lower_pmf_bounded(self, discretization: float, tail: float, forward: bool = True):
        """:meth:`lower_pmf` and a bound on its round-off (tail distance to the exact pmf).

        The survival values err by :func:`~dpaudit.core.roundoff.gaussian_survival_error`
        (grid points rounded); :func:`rounded_down_error` carries that to the pmf.

        Args:
            discretization: grid spacing.
            tail: mass allowed below the grid (dropped).
            forward: the direction (both are equal).

        Returns:
            ``(offset, probs, error)``.
        """
        if self.mu == 0:
            return 0, np.ones(1), 0.0
        lo, hi = self.loss_range(tail)
        k_lo, k_hi = math.floor(lo / discretization), math.floor(hi / discretization)
        offset, probs = rounded_down_pmf(self.survival, k_lo, k_hi, discretization)
        error = gaussian_survival_error(self.mu, rounded_threshold=True)
        return offset, probs, rounded_down_error(error)


@dataclasses.dataclass(frozen=True)
class LaplaceComponent:
    """The loss ``|u + a| - |u|``, ``u ~ Lap(0, 1)``, of a Laplace mechanism with ``a = Delta / b``.

    Attributes:
        a: the loss parameter (:func:`~dpaudit.accounting.profiles.laplace_parameters`).
    """

    a: float
    family = "laplace"
    symmetric = True

    def __post_init__(self) -> None:
        """Refuse a NaN, infinite or negative ``a`` (one sentence, before any work)."""
        check_loss_parameter("LaplaceComponent.a", self.a)

    def sup_loss(self, forward: bool = True) -> float:
        """``ess sup L = a``.

        Args:
            forward: the direction (both are equal).

        Returns:
            ``a``.
        """
        return float(self.a)

    def curve(self, epsilon, forward: bool = True) -> np.ndarray:
        """The exact curve (:func:`~dpaudit.accounting.profiles.laplace_delta`).

        Args:
            epsilon: epsilon(s).
            forward: the direction (both are equal).

        Returns:
            ``delta(epsilon)``.
        """
        return laplace_delta(epsilon, self.a)

    def survival(self, t, under_p: bool = True) -> np.ndarray:
        """``P(L >= t)`` or ``Q(L >= t)`` (atoms at ``+-a``, density ``e^{(+-l - a)/2}/4`` between).

        Args:
            t: loss value(s).
            under_p: the law ``P`` (atom ``1/2`` at ``+a``) or ``Q`` (atom ``1/2`` at ``-a``).

        Returns:
            The survival probabilities.
        """
        t = np.asarray(t, dtype=np.float64)
        a = float(self.a)
        if under_p:
            mid = 1.0 - 0.5 * np.exp(0.5 * (np.clip(t, -a, a) - a))
            return np.where(t <= -a, 1.0, np.where(t > a, 0.0, mid))
        mid = 0.5 * np.exp(0.5 * (-np.clip(t, -a, a) - a))
        return np.where(t <= -a, 1.0, np.where(t > a, 0.0, mid))

    def loss_range(self, tail: float, under_p: bool = True) -> tuple[float, float]:
        """The support ``[-a, a]``.

        Args:
            tail: unused (the support is bounded).
            under_p: unused.

        Returns:
            ``(-a, a)``.
        """
        return -float(self.a), float(self.a)

    def upper_pmf(self, discretization: float, tail: float, forward: bool = True):
        """Connect-the-dots pmf (:func:`~dpaudit.accounting.profiles.laplace_pmfs`).

        Args:
            discretization: grid spacing.
            tail: unused (no mass above ``a``).
            forward: the direction (both are equal).

        Returns:
            ``(offset, probs, 0.0)``.
        """
        if self.a == 0:
            return 0, np.ones(1), 0.0
        offset, probs = laplace_pmfs(np.array([self.a]), discretization, "pessimistic")[0]
        return offset, probs, 0.0

    def lower_pmf(self, discretization: float, tail: float, forward: bool = True):
        """Losses rounded down (:func:`~dpaudit.accounting.profiles.laplace_pmfs`).

        Args:
            discretization: grid spacing.
            tail: unused.
            forward: the direction (both are equal).

        Returns:
            ``(offset, probs)``.
        """
        if self.a == 0:
            return 0, np.ones(1)
        return laplace_pmfs(np.array([self.a]), discretization, "optimistic")[0]

    def lower_pmf_bounded(self, discretization: float, tail: float, forward: bool = True):
        """:meth:`lower_pmf` and its proven round-off bound
        (:func:`~dpaudit.accounting.profiles.laplace_components`).

        Args:
            discretization: grid spacing.
            tail: unused.
            forward: the direction (both are equal).

        Returns:
            ``(offset, probs, error)``.
        """
        if self.a == 0:
            return 0, np.ones(1), 0.0
        pmfs, errors = laplace_components(np.array([self.a]), discretization, "optimistic")
        return int(pmfs[0][0]), pmfs[0][1], float(errors[0])


@dataclasses.dataclass(frozen=True, eq=False)
class LaplaceBatch:
    """Many Laplace parts in one object: the vectorised :class:`LaplaceComponent`.

    :func:`compose_accounting` takes it as one part standing for ``a.size`` Laplace parts
    (one per entry; equal entries are grouped and powered) without making a Python object
    per part; the composition's ``components`` are :class:`LaplacePairs` (one
    :class:`LaplaceComponent` per distinct value, made when read).

    Attributes:
        a: ``(K,)`` loss parameters ``a_j >= 0``
            (:func:`~dpaudit.accounting.profiles.laplace_parameters`).

    Example:
        >>> acc = compose_accounting([LaplaceBatch(np.array([0.25, 0.25, 0.5]))])
        >>> acc.sup_loss, list(acc.components)
        (1.0, [(LaplaceComponent(a=0.25), 2), (LaplaceComponent(a=0.5), 1)])
    """

    a: np.ndarray

    def __post_init__(self) -> None:
        """Refuse anything but finite numbers ``>= 0`` (one sentence, before any work)."""
        try:
            a = np.asarray(self.a, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise TypeError(
                f"LaplaceBatch.a must be an array of numbers, got {type(self.a).__name__}."
            ) from None
        if not (np.all(np.isfinite(a)) and np.all(a >= 0)):
            raise ValueError("LaplaceBatch.a must hold finite numbers >= 0; remove the others.")
        object.__setattr__(self, "a", a)


def _laplace_component(a: float) -> LaplaceComponent:
    """A :class:`LaplaceComponent` of an already checked ``a`` (no per-object check)."""
    component = object.__new__(LaplaceComponent)
    object.__setattr__(component, "a", a)
    return component


@dataclasses.dataclass(frozen=True)
class SupremumComponent:
    """A part known only through ``sup L <= epsilon`` in both directions (pure epsilon-DP).

    Every epsilon-DP pair is dominated by randomized response with that epsilon
    (Kairouz et al. 2015): its loss is ``+epsilon`` with mass ``e^eps / (1 + e^eps)``
    and ``-epsilon`` otherwise. The lower curve of such a part is that of
    identical laws (dropping a part is post-processing, so the rest's lower curve
    stays a lower bound).

    Attributes:
        epsilon: the certified upper bound on the supremum of the loss.
    """

    epsilon: float
    family = "supremum"
    symmetric = True

    def __post_init__(self) -> None:
        """Refuse a NaN, infinite or negative ``epsilon`` (one sentence, before any work)."""
        check_loss_parameter("SupremumComponent.epsilon", self.epsilon)

    def sup_loss(self, forward: bool = True) -> float:
        """The bound ``epsilon``.

        Args:
            forward: the direction (both are equal).

        Returns:
            ``epsilon``.
        """
        return float(self.epsilon)

    def curve(self, epsilon, forward: bool = True) -> np.ndarray:
        """Randomized response's curve: ``(e^S - e^eps)/(1 + e^S)`` on ``[-S, S]``.

        Args:
            epsilon: epsilon(s).
            forward: the direction (both are equal).

        Returns:
            ``delta(epsilon)`` of the dominating pair.
        """
        e = np.asarray(epsilon, dtype=np.float64)
        s = float(self.epsilon)
        p_top = 1.0 / (1.0 + math.exp(-s))
        top = p_top * -np.expm1(np.minimum(e - s, 0.0))
        bottom = (1.0 - p_top) * -np.expm1(np.minimum(e + s, 0.0))
        return top + bottom

    def upper_pmf(self, discretization: float, tail: float, forward: bool = True):
        """Randomized response with both atoms rounded up to the grid.

        Args:
            discretization: grid spacing.
            tail: unused.
            forward: the direction (both are equal).

        Returns:
            ``(offset, probs, 0.0)``.
        """
        s = float(self.epsilon)
        lo, hi = math.ceil(-s / discretization), math.ceil(s / discretization)
        probs = np.zeros(hi - lo + 1)
        p_top = 1.0 / (1.0 + math.exp(-s))
        probs[-1] += p_top
        probs[0] += 1.0 - p_top
        return lo, probs, 0.0

    def lower_pmf(self, discretization: float, tail: float, forward: bool = True):
        """Identical laws (the loss 0): nothing is known below the supremum.

        Args:
            discretization: grid spacing.
            tail: unused.
            forward: unused.

        Returns:
            ``(0, [1.0])``.
        """
        return 0, np.ones(1)

    def lower_pmf_bounded(self, discretization: float, tail: float, forward: bool = True):
        """:meth:`lower_pmf` with its round-off bound, 0 (the pmf is exact).

        Args:
            discretization: grid spacing.
            tail: unused.
            forward: unused.

        Returns:
            ``(0, [1.0], 0.0)``.
        """
        return 0, np.ones(1), 0.0


_SINGULAR = "singular"


def components_of(part) -> list:
    """The ``(component, count)`` pairs of one part of a composition.

    Args:
        part: a :class:`~dpaudit.model.shift.NoiseShift` (one release site of
            shifted Gaussian/ICLP/Laplace noise: Gaussian coordinates merge into one
            ``mu``, Laplace coordinates give one component per distinct ``a_j``), an
            :class:`~dpaudit.accounting.profiles.ExactAccounting`, a
            :class:`~dpaudit.accounting.suprema.SupremumAccounting` (pure: randomized response
            dominates it), or a component (:class:`GaussianComponent`,
            :class:`LaplaceComponent`, :class:`SupremumComponent`,
            :class:`~dpaudit.accounting.subsampling.SubsampledComponent`).

    Returns:
        A list of ``(component, count)``; ``[("singular", 1)]`` for mutually singular laws.

    Raises:
        TypeError: for anything else.
        ValueError: for a supremum-only part with an infinite supremum.
    """
    if hasattr(part, "upper_pmf") and hasattr(part, "lower_pmf"):
        return [(part, 1)]
    if all(hasattr(part, name) for name in ("shift", "eigenvalues", "sigma", "singular")):
        if part.singular:
            return [(_SINGULAR, 1)]
        if part.family == "gaussian":
            return [(GaussianComponent(gaussian_mu(part.shift, part.eigenvalues, part.sigma)), 1)]
        return _laplace_groups(laplace_parameters(part.shift, part.eigenvalues, part.sigma))
    family = getattr(part, "family", None)
    if family == "singular":
        return [(_SINGULAR, 1)]
    if family == "supremum":
        if not math.isfinite(part.sup_loss):
            raise ValueError(
                "cannot compose a part whose only evidence is an infinite supremum of the "
                "loss; give its noise structure (a NoiseShift) or its accounting instead."
            )
        return [(SupremumComponent(float(part.sup_loss)), 1)]
    if isinstance(part, ExactAccounting):
        if part.components is not None:
            return list(part.components)
        if family == "gaussian":
            return [(GaussianComponent(float(part.mu)), 1)]
        return _laplace_groups(part.laplace_parameters)
    raise TypeError(
        f"cannot compose a {type(part).__name__}: give a NoiseShift, an ExactAccounting, "
        "a SupremumAccounting or a component (GaussianComponent, LaplaceComponent, "
        "SupremumComponent, SubsampledComponent)."
    )


def _laplace_groups(a) -> list:
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    values, counts = np.unique(a[a > 0], return_counts=True)
    return [
        (_laplace_component(v), c) for v, c in zip(values.tolist(), counts.tolist(), strict=True)
    ]


# ------------------------------------------------------------- pmf algebra


def _log_mgf(orders: np.ndarray, idx: np.ndarray, logp: np.ndarray) -> np.ndarray:
    """``log sum_i p_i e^(order idx_i)`` for every order (a plain, stable log-sum-exp).

    In place on one ``(orders, support)`` matrix: the same floating-point operations as
    ``orders[:, None] * idx + logp`` and ``exp(exponents - top)``, so the same bits.
    """
    exponents = np.multiply.outer(orders, idx)
    exponents += logp
    top = exponents.max(axis=1)
    exponents -= top[:, None]
    np.exp(exponents, out=exponents)
    return top + np.log(exponents.sum(axis=1))


#: Largest ``|order (idx - centre)|`` for which :func:`_log_mgfs` sums ``p e^(...)`` directly.
_DIRECT_EXPONENT = 600.0


def _log_mgfs(orders: np.ndarray, idx: np.ndarray, weights: np.ndarray, centre: float):
    """``log sum_i p_i e^(order idx_i)`` for every order, from one ``(orders, support)`` matrix.

    ``sum_i p_i e^(order (idx_i - centre))`` for all orders at once (one ``exp`` per entry, a
    product with ``p`` and a sum), plus ``order centre``: no log of ``p``, no running
    maximum, no BLAS product (which may start threads). When an exponent could overflow
    (``|order (idx - centre)| > 600``) the stable log-sum-exp (:func:`_log_mgf`) is used.
    Either evaluates the same sums to a relative error of about ``size * 2^-52``; the window
    they pick is valid for any value (every order gives a Chernoff bound).
    """
    span = float(np.max(np.abs(orders))) * max(centre - idx[0], idx[-1] - centre)
    if span > _DIRECT_EXPONENT:
        return _log_mgf(orders, idx, np.log(weights))
    exponents = np.multiply.outer(orders, idx - centre)
    np.exp(exponents, out=exponents)
    exponents *= weights
    with np.errstate(divide="ignore"):
        return np.log(exponents.sum(axis=1)) + orders * centre


def _chernoff_window(probs: np.ndarray, count: int, discretization: float, tail: float):
    """Index window ``[lo, hi]`` of the ``count``-fold sum and bounds on the mass outside."""
    m = probs.size
    support = np.flatnonzero(probs)
    mass = probs[support]
    idx = support.astype(np.float64)
    weights = mass / float(np.sum(mass))
    centre = float(np.sum(weights * idx))
    spread = math.sqrt(max(float(np.sum(weights * (idx - centre) ** 2)), 1e-300))
    # For a near-Gaussian sum the best order is about z / (sqrt(count) spread) with z ~ 9
    # (tails of 1e-19); skewed pmfs want flatter orders for their heavy tail. Any order gives
    # a valid bound; these only decide how tight the window is.
    lam = 9.0 / (math.sqrt(count) * spread) * _CHERNOFF_ORDERS
    both = _log_mgfs(np.concatenate([lam, -lam]), idx, mass, centre)
    log_mgf_up, log_mgf_down = both[: lam.size], both[lam.size :]
    top = count * (m - 1)
    log_tail = math.log(0.5 * tail)
    hi = min(top, math.ceil(float(np.min((count * log_mgf_up - log_tail) / lam))))
    lo = max(0, math.floor(float(np.max(-(count * log_mgf_down - log_tail) / lam))))
    hi = max(hi, lo)
    # P(S >= hi + 1) <= e^{count log M(l) - l (hi + 1)}; P(S <= lo - 1) likewise from below.
    log_upper = float(np.min(count * log_mgf_up - lam * (hi + 1)))
    log_lower = float(np.min(count * log_mgf_down + lam * (lo - 1)))
    upper = 0.0 if hi >= top else math.exp(min(log_upper, 0.0))
    lower = 0.0 if lo <= 0 else math.exp(min(log_lower, 0.0))
    return lo, hi, upper + lower


def fft_coefficient_error(l1: float, n_fft: int) -> float:
    """Bound on every coefficient's error of a computed real FFT of a vector of L1 norm ``l1``.

    The componentwise form of the trees' FFT model (``FFT_ULPS_PER_LEVEL`` ulps per binary
    level; docs/composition.md, "Equal parts: the power path"): in a Cooley-Tukey FFT the
    nodes of one level that feed one output partition the inputs, so an error of relative
    size ``eta`` injected at each of ``log2(n)`` levels adds up to at most
    ``((1 + eta)^log2(n) - 1) ||x||_1 <= g ||x||_1`` per output,
    ``g = log2(n) eta / (1 - log2(n) eta)``.

    Args:
        l1: an upper bound on the transformed vector's L1 norm.
        n_fft: the transform length.

    Returns:
        ``g * l1``.
    """
    levels = FFT_ULPS_PER_LEVEL * math.log2(max(2, n_fft)) * _UNIT
    return levels / (1.0 - levels) * l1


def powered_coefficients(spec: np.ndarray, perturbation: float, count: int):
    """The coefficients worth powering, and the indices of the others.

    A coefficient with ``|s| + perturbation <= floor = _DROPPED_POWER^(1/count)`` (its exact
    value is within ``perturbation`` of ``s``) has an exact ``count``-th power of modulus at
    most ``_DROPPED_POWER``; it is not powered but set to 0, and
    :func:`self_compose_pmf` charges that. ``|s|^2`` is computed to 3 ulp, so the test
    ``|s|^2 <= (floor - perturbation)^2 (1 - 4 eps)`` is a safe one.

    Args:
        spec: the pmf's real-FFT coefficients.
        perturbation: the bound on each coefficient's FFT error.
        count: the power.

    Returns:
        ``(kept coefficients, dropped indices)``.
    """
    floor = _DROPPED_POWER ** (1.0 / count)
    if floor <= perturbation:
        return spec, np.empty(0, dtype=np.int64)
    modulus2 = spec.real * spec.real
    modulus2 += spec.imag * spec.imag
    low = modulus2 <= (floor - perturbation) ** 2 * (1 - 4 * _EPS)
    return spec[~low], np.flatnonzero(low)


def self_compose_pmf(offset: int, probs, count: int, discretization: float, tail: float):
    """The ``count``-fold convolution of a pmf with itself by one FFT power.

    Args:
        offset: grid index of ``probs[0]``.
        probs: ``(m,)`` non-negative masses (finite losses; the ``+inf`` mass is the
            caller's).
        count: the number of copies, ``>= 1``.
        discretization: grid spacing (for the Chernoff orders).
        tail: target mass outside the window, split between the two tails.

    Returns:
        ``(offset, probs, margin)``: ``margin`` bounds the sum over all grid points of
        the absolute error (round-off and the wrapped tails), to be added to
        (upper) or subtracted from (lower) every ``delta``.

    Example:
        >>> off, p, margin = self_compose_pmf(0, np.array([0.5, 0.5]), 3, 1.0, 1e-15)
        >>> np.round(p, 12).tolist(), margin < 1e-12
        ([0.125, 0.375, 0.375, 0.125], True)
    """
    probs = np.asarray(probs, dtype=np.float64)
    if count == 1:
        return int(offset), probs, 0.0
    lo, hi, outside = _chernoff_window(probs, count, discretization, tail)
    n = hi - lo + 1
    n_fft = scipy.fft.next_fast_len(max(n, probs.size), real=True)
    spec = scipy.fft.rfft(probs, n=n_fft)
    # Componentwise FFT error <= g ||p||_1 per coefficient (the trees' per-level constant;
    # the sum's own rounding covered by 4 m u); through the power,
    # |a^k - b^k| <= k max(|a|, |b|)^(k-1) |a - b|; Parseval (rfft: each coefficient twice)
    # turns the coefficient errors into the L2, then (Cauchy-Schwarz) L1 error of the outputs.
    l1 = float(np.sum(probs)) * (1.0 + 4 * probs.size * _UNIT)
    perturbation = fft_coefficient_error(l1, n_fft)
    spec, dropped = powered_coefficients(spec, perturbation, count)
    floor = _DROPPED_POWER ** (1.0 / count)
    growth = np.abs(spec)  # exp((count - 1) log(min(|spec| + perturbation, 1 + 1e-3))), in place
    growth += perturbation
    np.minimum(growth, 1 + 1e-3, out=growth)
    np.log(growth, out=growth)
    growth *= count - 1
    np.exp(growth, out=growth)
    growth *= growth
    # a dropped coefficient's (|s| + perturbation)^(count-1) is at most floor^(count-1), and the
    # exact power left out at most floor^count (both through Parseval, as above)
    squares = float(np.sum(growth)) + dropped.size * floor ** (2 * (count - 1))
    power_error = perturbation * count * math.sqrt(2.0 * squares)
    power_error += math.sqrt(2.0 * dropped.size) * floor**count
    result = np.ones_like(spec)
    k = count
    while True:  # repeated squaring of the spectrum
        if k & 1:
            result *= spec
        k >>= 1
        if not k:
            break
        spec *= spec
    # the k - 1 complex products (3 u each) put fl(s^k) within gamma |s^k| of the exact
    # power of the computed s (repeated squaring: by induction (1 + 3 u)^(k-1) - 1 <= gamma)
    t = COMPLEX_PRODUCT_ULPS * (count - 1) * _UNIT
    gamma = t / (1.0 - t)
    kept2 = float(np.sum(result.real * result.real + result.imag * result.imag))
    power_error += gamma / (1.0 - gamma) * math.sqrt(2.0 * kept2 * (1.0 + 4 * result.size * _UNIT))
    if dropped.size:
        full = np.zeros(n_fft // 2 + 1, dtype=result.dtype)
        keep = np.ones(full.size, dtype=bool)
        keep[dropped] = False
        full[keep] = result
        result = full
    out = scipy.fft.irfft(result, n=n_fft)
    # normwise inverse error <= g_inv ||exact||_2 <= g_inv / (1 - g_inv) ||out||_2 (the trees'
    # model; 1/n scaling one more rounding), sqrt(n) of it in L1 (Cauchy-Schwarz)
    g_inverse = fft_coefficient_error(1.0, n_fft)
    g_inverse += _UNIT * (1.0 + g_inverse)
    l2 = math.sqrt(float(np.sum(out * out)) * (1.0 + 4 * n_fft * _UNIT))
    inverse_error = g_inverse / (1.0 - g_inverse) * math.sqrt(n_fft) * l2
    start = lo % n_fft  # np.roll(out, -lo)[:n], without rolling the whole array
    if start + n <= n_fft:
        out = np.maximum(out[start : start + n], 0.0)
    else:
        out = np.maximum(np.concatenate([out[start:], out[: start + n - n_fft]]), 0.0)
    return int(offset) * count + lo, out, power_error + inverse_error + outside


def fold_tails(offset: int, probs, budget: float, *, pessimistic: bool):
    """Fold the negligible tails of a pmf into its edges, the safe way.

    Up to ``budget / 2`` of mass is taken from each end. Pessimistic (upper curve):
    the lower tail moves up to the first kept point and the upper tail goes to
    ``+inf``. Optimistic (lower curve): the upper tail moves down to the last kept
    point and the lower tail is dropped.

    Args:
        offset: grid index of ``probs[0]``.
        probs: ``(N,)`` masses.
        budget: the total mass that may be moved.
        pessimistic: the direction of the rounding.

    Returns:
        ``(offset, probs, infinity_mass_added)``.
    """
    probs = np.asarray(probs, dtype=np.float64)
    half = 0.5 * budget
    cumulative = np.cumsum(probs)
    total = float(cumulative[-1])
    left = min(int(np.searchsorted(cumulative, half, side="right")), probs.size - 1)
    # the suffix after index j has mass total - cumulative[j]; keep up to the first j
    # whose suffix is <= half
    right = int(np.searchsorted(cumulative, total - half, side="left")) + 1
    right = min(max(right, left + 1), probs.size)
    kept = probs[left:right].copy()
    head, tail = float(np.sum(probs[:left])), float(np.sum(probs[right:]))
    if pessimistic:
        kept[0] += head
        return int(offset) + left, kept, tail
    kept[-1] += tail
    return int(offset) + left, kept, 0.0


# ----------------------------------------------- Laplace pmfs on the audit path


def laplace_group_pld(
    a, discretization: float = 1e-4, *, upper: bool = True, tail_mass=1e-15, counts=None
):
    """The audit path's Laplace PLD with equal parameters grouped and powered.

    Distinct parameters are composed exactly as
    :func:`~dpaudit.accounting.profiles.laplace_pld` does (bit for bit when no parameter
    repeats). Each parameter repeated ``count > 1`` times is one closed-form pmf raised to
    its ``count``-th power by :func:`self_compose_pmf` (repeated squaring of its spectrum on
    a Chernoff window); the power's round-off and the Chernoff bound of the mass that
    wrapped around the window go into the margin, and so does ``count`` times the
    closed-form pmf's own round-off (``|p^k - q^k|_1 <= k |p - q|_1``).

    Args:
        a: ``(K,)`` non-negative Laplace loss parameters.
        discretization: grid spacing.
        upper: the pessimistic (upper) curve, else the optimistic (lower) one.
        tail_mass: the mass the windows of the powers may wrap around, in all.
        counts: how many times each entry of ``a`` is repeated (then ``a`` holds distinct
            values); default: count the equal entries of ``a``.

    Returns:
        A :class:`~dpaudit.accounting.profiles.DiscretePLD`.
    """
    estimate = "pessimistic" if upper else "optimistic"
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    if counts is None:
        values, counts = np.unique(a[a > 0], return_counts=True)
    else:
        counts = np.asarray(counts, dtype=np.int64).reshape(-1)
        keep = (a > 0) & (counts > 0)
        values, counts = a[keep], counts[keep]
    repeated = counts > 1
    if not np.any(repeated):
        return laplace_pld(values, discretization, estimate=estimate)
    parts, errors = laplace_components(values[~repeated], discretization, estimate)
    pmfs, power_errors = laplace_components(values[repeated], discretization, estimate)
    # a power is count copies of a pmf off by e each: charged as count parts (composed_error)
    errors = np.concatenate([errors, counts[repeated] * power_errors])
    margin = 0.0
    budget = tail_mass / max(1, len(pmfs))
    for (offset, probs), count in zip(pmfs, counts[repeated].tolist(), strict=True):
        offset, probs, extra = self_compose_pmf(offset, probs, int(count), discretization, budget)
        parts.append((offset, probs))
        margin += extra
    offset, probs, fft_error = compose_pmfs_bounded(parts)
    return DiscretePLD(
        discretization=float(discretization),
        offset=offset,
        probs=probs,
        infinity_mass=0.0,
        margin=margin + composed_error(errors) + fft_error,
        estimate=estimate,
    )


# ------------------------------------------------------------ windowed composition tree


@dataclasses.dataclass
class _Node:
    """A pmf of the tree with what is known of the exact composition of its leaves.

    ``mass``, ``mean`` (grid index) and ``proxy`` (a variance proxy: the normalised
    exact sum ``S`` has ``log E e^{l (S - mean)} <= l^2 proxy / 2`` for every real ``l``,
    Hoeffding's lemma summed over the leaves) describe the exact convolution of the
    leaves; ``moved`` bounds the total variation between the *ideal* node (the same tree
    in exact arithmetic) and that convolution (mass relocated by the windows below);
    ``roundoff`` bounds the L1 distance between ``probs`` and the ideal node.
    """

    offset: int
    probs: np.ndarray
    mass: float
    mean: float
    proxy: float
    moved: float = 0.0
    variance: float = 0.0
    roundoff: float = 0.0


def _leaf_nodes(pmfs: list) -> tuple[list, list]:
    """Nodes of the leaves (one vectorised pass), split into short and long ones.

    A leaf is *short* when Hoeffding's proxy suits it: its support is at most about four
    standard deviations wide (``w^2 / 4 <= 4 var + 1``, grid units). The pmfs keep a long
    double type (an extended-precision run of the same tree, with the same windows: the
    statistics are computed in float64 either way); anything else becomes float64.
    """
    probs = [np.asarray(p, dtype=np.result_type(np.asarray(p).dtype, np.float64)) for _, p in pmfs]
    sizes = np.array([p.size for p in probs], dtype=np.int64)
    flat = np.asarray(np.concatenate(probs), dtype=np.float64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    idx = np.arange(flat.size, dtype=np.float64) - np.repeat(starts, sizes)
    mass = np.add.reduceat(flat, starts)
    safe = np.where(mass > 0, mass, 1.0)
    mean = np.add.reduceat(flat * idx, starts) / safe
    centred = idx - np.repeat(mean, sizes)
    variance = np.add.reduceat(flat * centred * centred, starts) / safe
    # Hoeffding: a law on an interval of length w has log-MGF <= l^2 w^2 / 8 around its mean.
    proxy = 0.25 * (sizes - 1.0) ** 2
    short, long = [], []
    for j, (offset, _) in enumerate(pmfs):
        node = _Node(
            int(offset), probs[j], float(mass[j]), int(offset) + float(mean[j]),
            float(proxy[j]), 0.0, float(variance[j]),
        )  # fmt: skip
        (short if proxy[j] <= 4 * variance[j] + 1 or mass[j] <= 0 else long).append(node)
    return short, long


def _pair_plan(a: _Node, b: _Node, budget: float) -> dict:
    """Exact statistics of the pair's sum and the shortest FFT length its window needs."""
    mass, mean, proxy = a.mass * b.mass, a.mean + b.mean, a.proxy + b.proxy
    size = a.probs.size + b.probs.size - 1
    half = math.sqrt(2 * proxy * math.log(mass / budget)) if mass > budget else 0.0
    # the kept range of length >= need, centred on the mean, covers [mean - half, mean + half]
    need = min(size, math.floor(mean + half) - math.ceil(mean - half) + 3)
    moved = a.moved * b.mass + a.mass * b.moved + a.moved * b.moved
    return {
        "a": a,
        "b": b,
        "size": size,
        "need": need,
        "moved": moved,
        "stats": (mass, mean, proxy),
    }


def _wrapped(probs: np.ndarray, length: int) -> np.ndarray:
    """``probs`` folded modulo ``length`` (cyclic convolution of folded inputs = folded output)."""
    if probs.size <= length:
        return probs
    folded = np.zeros(-(-probs.size // length) * length, dtype=probs.dtype)
    folded[: probs.size] = probs
    return folded.reshape(-1, length).sum(axis=0)


def _kept(plan: dict, row: np.ndarray, length: int) -> tuple[_Node, float, float]:
    """The pair's node from its cyclic convolution of ``length``; masses moved up and down."""
    a, b = plan["a"], plan["b"]
    start0, size = a.offset + b.offset, plan["size"]
    mass, mean, proxy = plan["stats"]
    if length >= size:
        node = _Node(start0, row[:size], mass, mean, proxy, plan["moved"])
        return node, 0.0, 0.0
    start = min(max(round(mean - 0.5 * length), start0), start0 + size - length)
    top, bottom = start + length, start - 1  # first grid index above / last below the range

    def tail(gap: float) -> float:  # Chernoff bound of one tail of the exact sum
        if gap <= 0:
            return mass
        return 0.0 if proxy <= 0 else mass * math.exp(-gap * gap / (2 * proxy))

    above = 0.0 if top >= start0 + size else tail(top - mean)
    below = 0.0 if start <= start0 else tail(mean - bottom)
    # mass the children had already moved may sit anywhere, outside the range too
    above, below = above + plan["moved"], below + plan["moved"]
    probs = np.roll(row, start0 - start)
    node = _Node(start, probs, mass, mean, proxy, plan["moved"] + 2 * (above + below))
    return node, above, below


def fold_roundoff(sizes, length: int, l1):
    """L1 round-off of folding pmfs modulo ``length`` (the windowed tree's cyclic operands).

    Each output sums ``r = ceil(size / length)`` inputs; any order of summing ``r`` terms is
    within ``gamma_(r-1)`` of the exact sum relative to the sum of their absolute values
    (Higham, eq. 3.5), and those sums add up to ``||p||_1``.

    Args:
        sizes: the pmfs' lengths (an int or an array).
        length: the fold's length.
        l1: the pmfs' L1 norms (same shape as ``sizes``).

    Returns:
        The bounds (0 where nothing folds), times 1.01 for the rounding of ``l1``.
    """
    terms = np.maximum(-(-np.asarray(sizes) // length) - 1, 0) * (_EPS / 2)
    return 1.01 * terms / (1.0 - terms) * np.asarray(l1)


def _cyclic_pairs(plans: list, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Cyclic convolutions of the planned pairs' folded pmfs; each row's L1 round-off bound.

    The bound is against the *ideal* row, the exact cyclic convolution of the operands the
    tree would hold in exact arithmetic: the operands' own bounds (their ``roundoff`` plus
    the fold's, :func:`fold_roundoff`) carried through the product, plus the product's
    round-off (:func:`~dpaudit.accounting.profiles.fft_convolution_error`; a row cut to
    ``length`` points keeps all of them, a linear one its ``size``).
    """
    dtype = plans[0]["a"].probs.dtype
    left, right = np.zeros((len(plans), length), dtype), np.zeros((len(plans), length), dtype)
    for r, plan in enumerate(plans):
        pa, pb = _wrapped(plan["a"].probs, length), _wrapped(plan["b"].probs, length)
        left[r, : pa.size], right[r, : pb.size] = pa, pb
    spectrum = scipy.fft.rfft(left, axis=1)
    spectrum *= scipy.fft.rfft(right, axis=1)
    out = scipy.fft.irfft(spectrum, n=length, axis=1)
    np.maximum(out, 0.0, out=out)  # the ideal row is >= 0: clipping moves towards it
    norms = []
    for side, rows in (("a", left), ("b", right)):  # float64 norms (also of long double rows)
        l1 = np.asarray(np.sum(rows, axis=1), dtype=np.float64)  # the operands are >= 0
        l2 = np.sqrt(np.asarray(np.einsum("ij,ij->i", rows, rows), dtype=np.float64))
        sizes = np.array([plan[side].probs.size for plan in plans])
        carried = np.array([plan[side].roundoff for plan in plans])
        norms.append((l1, l2, carried + fold_roundoff(sizes, length, l1)))
    (l1_a, l2_a, e_a), (l1_b, l2_b, e_b) = norms
    support = np.minimum([plan["size"] for plan in plans], length)
    # ||a' b' - a b||_1 <= e_a ||b'||_1 + (||a'||_1 + e_a) e_b (bilinear; Young in L1)
    propagated = 1.01 * (e_a * l1_b + (l1_a + e_a) * e_b)
    return out, propagated + fft_convolution_error(l1_a, l2_a, l1_b, l2_b, length, support)


def _run_level(plans: list) -> tuple[list, float, float]:
    """Convolve every planned pair by batched real FFTs of similar lengths."""
    plans = sorted(plans, key=lambda p: -p["need"])
    nodes, up, down, i = [], 0.0, 0.0, 0
    while i < len(plans):
        length = scipy.fft.next_fast_len(plans[i]["need"], real=True)
        if length >= plans[i]["size"]:  # a linear convolution fits: no window needed
            length = scipy.fft.next_fast_len(plans[i]["size"], real=True)
        j = i + 1
        rows = max(1, _BATCH_ELEMENTS // length)
        while j < len(plans) and j - i < rows and plans[j]["need"] >= _BATCH_RATIO * length:
            j += 1
        out, roundoff = _cyclic_pairs(plans[i:j], length)
        for r, plan in enumerate(plans[i:j]):
            node, above, below = _kept(plan, out[r], length)
            node.roundoff = float(roundoff[r])
            nodes.append(node)
            up, down = up + above, down + below
        i = j
    return nodes, up, down


def _windowed_tree(nodes: list, budget: float, stop: int) -> tuple[list, float, float]:
    """Convolve short pmfs by a balanced tree of batched FFTs with Chernoff windows.

    At every pair the exact sum of the leaves below has Hoeffding's sub-Gaussian tails,
    so when its support is wider than ``mean +- half`` (the half-width at which each tail
    is below ``budget``) the pair is convolved cyclically on a range of at least that
    length and the mass outside wraps into it. Upper curve: the mass that wrapped down
    from above is sent to ``+inf`` as well (``up``); what wrapped up from below only
    raises the curve. Lower curve: the mass that wrapped up is subtracted from every
    delta (``down``). Mass moved by windows further down the tree is added to both.

    Args:
        nodes: the leaves.
        budget: the bound on each tail cut at one pair.
        stop: how many nodes to leave for the last product (:func:`_final_product`).

    Returns:
        ``(nodes, up, down)``.
    """
    up = down = 0.0
    while len(nodes) > stop:
        nodes = sorted(nodes, key=lambda node: node.probs.size)
        carry = [nodes.pop()] if len(nodes) % 2 else []
        plans = [_pair_plan(nodes[i], nodes[i + 1], budget) for i in range(0, len(nodes), 2)]
        nodes, level_up, level_down = _run_level(plans)
        nodes += carry
        up, down = up + level_up, down + level_down
    return nodes, up, down


def _centred_log_mgf(node: _Node, lam: float) -> float:
    """``log sum_k p_k e^(lam (k - mean))`` of a leaf's pmf (grid indices), exactly."""
    probs = np.asarray(node.probs, dtype=np.float64)
    keep = probs > 0
    x = lam * (np.flatnonzero(keep) + (node.offset - node.mean)) + np.log(probs[keep])
    top = float(np.max(x))
    return top + math.log(float(np.sum(np.exp(x - top))))


def _product_roundoff(l1: list, l2: list, carried: list, n_fft: int, support: int) -> float:
    """L1 bound on ``irfft(prod_j rfft(x_j, n), n)`` against the ideal cyclic convolution.

    The product's own round-off is :func:`~dpaudit.accounting.profiles.fft_product_error`
    (the ``k``-factor FFT model, ``docs/composition.md``, "Many factors in one product"; it
    holds for ``k = 1`` too). The operands ``x_j`` are within ``carried[j]`` (L1) of the
    ideal ones: carried through the product by telescoping (Young in L1),
    ``sum_j prod_(i<j) (||x_i||_1 + c_i) c_j prod_(i>j) ||x_i||_1``, with the norms times
    1.01 for their own rounding (``docs/composition.md``, "Round-off of the windowed tree").

    Args:
        l1, l2: ``||x_j||_1`` and ``||x_j||_2`` of the float operands.
        carried: the operands' L1 distances to the ideal ones.
        n_fft: the transform length.
        support: the number of output points kept.

    Returns:
        The bound.
    """
    norms = [1.01 * v for v in l1]
    after = [1.0] * len(norms)  # prod_(i>j) ||x_i||_1
    for j in range(len(norms) - 2, -1, -1):
        after[j] = after[j + 1] * norms[j + 1]
    propagated, before = 0.0, 1.0  # before: prod_(i<j) (||x_i||_1 + c_i)
    for norm, c, rest in zip(norms, carried, after, strict=True):
        propagated += before * c * rest
        before *= norm + c
    return fft_product_error(l1, l2, n_fft, support) + 1.01 * propagated


def _cyclic_product(nodes: list, length: int, support: int) -> tuple[np.ndarray, float]:
    """``irfft`` of the product of the nodes' folded spectra (clipped); its round-off bound."""
    l1, l2, carried = [], [], []
    spectrum = None
    for node in nodes:
        x = _wrapped(node.probs, length)
        l1.append(float(np.sum(x)))  # the operands are >= 0
        l2.append(math.sqrt(float(np.einsum("i,i->", x, x))))  # no BLAS call (threads)
        carried.append(node.roundoff + float(fold_roundoff(node.probs.size, length, l1[-1])))
        factor = scipy.fft.rfft(x, n=length)
        if spectrum is None:
            spectrum = factor
        else:
            spectrum *= factor
    out = np.maximum(scipy.fft.irfft(spectrum, n=length), 0.0)  # towards the ideal (>= 0)
    return out, _product_roundoff(l1, l2, carried, length, support)


def _final_product(shorts: list, longs: list, budget: float) -> tuple[_Node, float, float]:
    """The last convolution of the tree's (at most two) nodes with the long pmfs, windowed.

    One cyclic product of all their spectra. The window's Chernoff bound uses one order
    ``lam`` on each side: Hoeffding's bound for the tree's nodes and the exact
    moment-generating function of each long pmf at ``+-lam`` (any order gives a valid
    bound; ``lam`` is the best one for a Gaussian with the total variance).

    Returns:
        ``(node, up, down)`` as for one pair of the tree.
    """
    nodes = shorts + longs
    mass = math.prod(n.mass for n in nodes)
    mean = math.fsum(n.mean for n in nodes)
    proxy = math.fsum(n.proxy for n in shorts)
    start0 = sum(n.offset for n in nodes)
    size = sum(n.probs.size for n in nodes) - len(nodes) + 1
    moved = math.fsum(n.moved for n in shorts) * max(1.0, mass) * 2
    log_ratio = math.log(mass / budget) if mass > budget else 0.0
    lam = math.sqrt(2 * log_ratio / max(proxy + sum(n.variance for n in longs), 1.0))
    sides = []
    for sign in (1.0, -1.0):
        log_mgf = math.log(mass) - sum(math.log(n.mass) for n in longs) + 0.5 * lam * lam * proxy
        log_mgf += sum(_centred_log_mgf(n, sign * lam) for n in longs)
        sides.append(log_mgf)
    half_up, half_down = ((s - math.log(budget)) / lam if lam > 0 else 0.0 for s in sides)
    need = min(size, math.ceil(half_up) + math.ceil(half_down) + 3)
    length = scipy.fft.next_fast_len(need, real=True)
    if length >= size:
        length = scipy.fft.next_fast_len(size, real=True)
    out, roundoff = _cyclic_product(nodes, length, min(size, length))
    if length >= size:
        return _Node(start0, out[:size], mass, mean, proxy, moved, roundoff=roundoff), 0.0, 0.0
    centre = mean + 0.5 * (half_up - half_down)
    start = min(max(round(centre - 0.5 * length), start0), start0 + size - length)
    gaps = (start + length - mean, mean - (start - 1))
    bounds = [
        mass if gap <= 0 or lam <= 0 else min(mass, math.exp(s - lam * gap))
        for s, gap in zip(sides, gaps, strict=True)
    ]
    above = (0.0 if start + length >= start0 + size else bounds[0]) + moved
    below = (0.0 if start <= start0 else bounds[1]) + moved
    probs = np.roll(out, start0 - start)
    node = _Node(start, probs, mass, mean, proxy, moved + 2 * (above + below), roundoff=roundoff)
    return node, above, below


def compose_windowed(pmfs: list, tail: float) -> tuple[int, np.ndarray, float, float, float] | None:
    """Short pmfs by the windowed tree, whose last product takes in the long pmfs.

    What :func:`compose_accounting` uses for 32 different pmfs and more
    (``docs/composition.md``, "Many different parts: the windowed tree" and "Round-off of
    the windowed tree"). The pmfs keep a long double type (a reference run of the same
    tree in extended precision, with the same windows).

    Args:
        pmfs: ``(offset, probs)`` pairs of non-negative masses on a common grid.
        tail: the mass all windows together may cut (half for the last product).

    Returns:
        ``(offset, probs, up, down, roundoff)``: ``up`` is mass for ``+inf`` (upper curve),
        ``down`` is subtracted from every delta (lower curve); both already scaled by the
        largest total mass the rest of the composition can multiply them with. ``roundoff``
        bounds the L1 distance of ``probs`` to the same tree in exact arithmetic (every
        product's FFT round-off and every fold's, carried up the tree): it is added to the
        margin of both curves. ``None`` when no pmf is short.
    """
    short, long = _leaf_nodes(pmfs)
    if not short:
        return None
    # the rest of the composition (with its +inf atoms, at most ``tail`` in all) has mass <= scale
    scale = math.prod(max(1.0, node.mass) for node in short + long) * (1.0 + 4 * tail)
    # half of ``tail`` for the last product (it trims the result), half for all others
    budget, last = tail / (4 * len(short)), tail / 4  # per product and side
    short, up, down = _windowed_tree(short, budget, stop=_FINAL_FAN_IN)
    root, last_up, last_down = _final_product(short, long, last)
    up, down = up + last_up, down + last_down
    return root.offset, root.probs, up * scale, down * scale, root.roundoff


# --------------------------------------------------------------- composition


def _component_pmfs(items, discretization: float, tail: float, *, forward: bool, upper: bool):
    """Per-group pmfs (powered by their counts), the ``+inf`` mass and the margin."""
    estimate = "pessimistic" if upper else "optimistic"
    pmfs, finite, margin = [], 1.0, 0.0
    singles = [c.a for c, k in items if type(c) is LaplaceComponent and k == 1]
    pmfs, errors = laplace_components(np.array(singles), discretization, estimate)
    margin = composed_error(errors)
    total = sum(k for _, k in items)
    for component, count in items:
        if type(component) is LaplaceComponent and count == 1:
            continue
        per_copy = tail / (4 * total)
        # Each copy's pmf carries its rounding; a k-fold convolution of probability vectors
        # adds the copies' errors (||p^k - q^k|| <= k ||p - q|| in L1 or tail distance), so
        # charge it k times.
        if upper:
            offset, probs, inf_mass = component.upper_pmf(discretization, per_copy, forward)
            margin += count * _copy_error(component, (probs, inf_mass), discretization)
        elif hasattr(component, "lower_pmf_bounded"):
            inf_mass = 0.0
            offset, probs, error = component.lower_pmf_bounded(discretization, per_copy, forward)
            margin += count * error
        else:  # no proven bound: the part is left out of the lower curve (post-processing)
            offset, probs, inf_mass = 0, np.ones(1), 0.0
        finite *= (1.0 - inf_mass) ** count
        offset, probs, extra = self_compose_pmf(
            offset, probs, count, discretization, tail / (4 * len(items))
        )
        pmfs.append((offset, probs))
        margin += extra
    return pmfs, 1.0 - finite, margin


def _laplace_direction(a, counts, discretization: float, tail: float, *, upper: bool):
    """Plain Laplace parts: the audit path's engine (:func:`laplace_group_pld`), vectorised.

    Its margin already charges the round-off of building every part's pmf
    (:func:`~dpaudit.accounting.profiles.laplace_components`).
    """
    return laplace_group_pld(a, discretization, upper=upper, tail_mass=tail / 2, counts=counts)


def gaussian_merge_error(mu: float) -> float:
    """Tail distance between the merged Gaussian part's loss law and the exact one's.

    The Gaussian parts of a composition are merged into ``mu = sqrt(fsum(k_i mu_i^2))``:
    each term is two roundings, ``fsum`` one, ``sqrt`` one, so the float ``mu`` is within
    ``2.5 u mu`` (first order, times 1.01) of the exact one. The survival
    ``Phi(mu / 2 - t / mu)`` of ``N(mu^2 / 2, mu^2)`` moves with ``mu`` at the rate
    ``phi(z) (1 - z / mu)``, at most ``0.4 + 0.242 / mu``; hence at most
    ``1.02 u (mu + 0.62)`` on every tail (``docs/composition.md``, "Round-off of the lower
    pmfs"). Charged to both curves.

    Args:
        mu: the merged ``mu`` (0 when there is no Gaussian part).

    Returns:
        The bound.
    """
    return 0.0 if mu <= 0 else 1.02 * _EPS / 2 * (mu + 0.62)


def _copy_error(component, pmf: tuple, discretization: float) -> float:
    """Round-off of one copy's upper pmf ``(probs, infinity_mass)``: a derived bound where known.

    Laplace parts: :func:`~dpaudit.accounting.profiles.laplace_components`; upper pmfs
    built by :func:`connect_dots_pmf` (``connect_the_dots``): :func:`connect_dots_error`;
    anything else (randomized response: two masses of a few operations each) 4 ulp per
    grid point. Lower pmfs carry their own bound (``lower_pmf_bounded``).
    """
    probs, infinity_mass = pmf
    if type(component) is LaplaceComponent and component.a > 0:
        return float(laplace_components([component.a], discretization, "pessimistic")[1][0])
    if getattr(component, "connect_the_dots", False) and probs.size > 1:
        return connect_dots_error(probs, infinity_mass, discretization)
    return 4 * _EPS * probs.size


def _compose_direction(
    items, discretization: float, tail: float, *, forward: bool, upper: bool, merged: float = 0.0
):
    """One direction's :class:`~dpaudit.accounting.profiles.DiscretePLD` (upper or lower curve).

    ``merged`` (the merged Gaussian part's error, :func:`gaussian_merge_error`) is added to
    the margin.
    """
    pmfs, infinity, margin = _component_pmfs(
        items, discretization, tail, forward=forward, upper=upper
    )
    margin += merged
    many = compose_windowed(pmfs, tail / 2) if len(pmfs) >= _TREE_MIN_LEAVES else None
    if many is not None:  # the windows also trim the result: no fold
        offset, probs, up, down, roundoff = many
        folded, margin = (up, margin) if upper else (0.0, margin + down)
        margin += roundoff  # the FFTs' and folds' round-off, derived (docs/composition.md)
    else:
        offset, probs, fft_error = compose_pmfs_bounded(pmfs)
        margin += fft_error
        offset, probs, folded = fold_tails(offset, probs, tail / 4, pessimistic=upper)
    return DiscretePLD(
        discretization=discretization,
        offset=offset,
        probs=probs,
        infinity_mass=min(1.0, infinity + folded) if upper else 0.0,
        margin=margin,
        estimate="pessimistic" if upper else "optimistic",
    )


def _merge(parts, counts) -> list | None:
    """``(component, count)`` pairs with equal components merged; ``None`` if singular."""
    if counts is None:
        counts = [1] * len(parts)
    if len(counts) != len(parts):
        raise ValueError(f"counts has {len(counts)} entries for {len(parts)} parts; give one each.")
    merged: dict = {}
    batches = []
    for part, count in zip(parts, counts, strict=True):
        if type(count) is not int and (
            isinstance(count, bool) or not isinstance(count, int | np.integer)
        ):
            raise ValueError(f"counts must be non-negative integers, got {count!r}.")
        if count < 0:
            raise ValueError(f"counts must be non-negative integers, got {count!r}.")
        if type(part) is LaplaceBatch:
            if count and part.a.size:
                batches.append((part.a, np.full(part.a.size, count, dtype=np.int64)))
            continue
        grouped = getattr(part, "components", None)
        if isinstance(part, ExactAccounting) and isinstance(grouped, LaplacePairs):
            if count and len(grouped):
                batches.append((grouped.values, grouped.counts * int(count)))
            continue
        pairs = [(part, 1)] if type(part) is LaplaceComponent else components_of(part)
        for component, k in pairs:
            if component is _SINGULAR and count:
                return None
            if count * k:
                merged[component] = merged.get(component, 0) + int(count) * int(k)
    if not batches:
        return list(merged.items())
    grouped = _merge_batches(merged, batches)  # takes the plain Laplace parts out of merged
    return [*merged.items(), grouped]


def _merge_batches(merged: dict, batches: list) -> LaplacePairs:
    """Group the batches' parameters with the plain Laplace parts taken out of ``merged``.

    One sort of all parameters (``np.unique``) instead of a dictionary entry per part.

    Returns:
        The grouped parts as :class:`LaplacePairs` (no object per part).
    """
    plain = [(c, k) for c, k in merged.items() if type(c) is LaplaceComponent]
    for component, _ in plain:
        del merged[component]
    values = np.concatenate([a for a, _ in batches] + [np.array([c.a for c, _ in plain])])
    weights = np.concatenate(
        [k for _, k in batches] + [np.array([k for _, k in plain], dtype=np.int64)]
    )
    values, inverse = np.unique(values, return_inverse=True)
    inverse = inverse.reshape(-1)
    if float(np.max(weights)) * weights.size < 2.0**53:  # float sums of integers: exact
        totals = np.bincount(inverse, weights=weights, minlength=values.size).astype(np.int64)
    else:
        totals = np.zeros(values.size, dtype=np.int64)
        np.add.at(totals, inverse, weights)
    return LaplacePairs(values, totals)


class LaplacePairs(Sequence):
    """The ``(LaplaceComponent, count)`` pairs of grouped Laplace parts, made on demand.

    What :func:`compose_accounting` of :class:`LaplaceBatch` parts keeps as its
    ``components``: the distinct parameters and their counts as arrays; a pair (and its
    :class:`LaplaceComponent`) is made only when it is read, so composing 10 000 parts
    creates no Python object per part (thousands of objects would also trigger full
    garbage collections of the process).

    Args:
        values: ``(n,)`` distinct, checked parameters ``a >= 0``, ascending.
        counts: ``(n,)`` positive counts.
    """

    def __init__(self, values: np.ndarray, counts: np.ndarray) -> None:
        self.values, self.counts = values, counts

    def __len__(self) -> int:
        """The number of distinct parameters."""
        return int(self.values.size)

    def __getitem__(self, index):
        """The pair at ``index`` (a list of pairs for a slice)."""
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return (_laplace_component(float(self.values[index])), int(self.counts[index]))

    def __iter__(self):
        """The pairs in ascending order of the parameter."""
        for v, k in zip(self.values.tolist(), self.counts.tolist(), strict=True):
            yield _laplace_component(v), k

    def __repr__(self) -> str:
        """``LaplacePairs(n distinct, total parts)``."""
        return f"LaplacePairs({len(self)} distinct, {int(np.sum(self.counts))} parts)"


def compose_accounting(
    parts: Sequence,
    counts: Sequence[int] | None = None,
    *,
    discretization: float = 1e-4,
    tail_mass: float = 1e-15,
    lower: bool = True,
) -> ExactAccounting:
    """Accounting of the composition of independent, non-adaptive parts.

    Args:
        parts: the parts (see :func:`components_of`): typically one
            :class:`~dpaudit.model.shift.NoiseShift` per release site, all for the
            same ordered pair of datasets ``(D, D')``.
        counts: how many times each part is repeated (default: once each). Equal
            components (also across parts, and equal Laplace coordinates within a
            site) are composed by the FFT power path.
        discretization: grid spacing of the numerical PLDs (ignored when every part
            is Gaussian: their composition is exact).
        tail_mass: mass the numerical upper curve may send to ``+inf`` when it
            truncates unbounded tails (it raises ``delta`` by at most this much).
        lower: also compute the numerical lower curve (about half the work); when
            False the lower curve is that of identical laws, ``(1 - e^epsilon)_+``.

    Returns:
        An :class:`~dpaudit.accounting.profiles.ExactAccounting`: family ``"gaussian"`` (exact,
        ``mu = sqrt(sum mu_i^2)``), ``"laplace"`` (every part has an exactly known
        finite supremum: Laplace, possibly subsampled), ``"composed"`` (anything else)
        or ``"singular"``; ``components`` holds the merged ``(component, count)`` pairs,
        so the result can itself be composed further.

    Raises:
        TypeError: for a part of an unknown kind or a non-numeric setting.
        ValueError: for a bad count, discretization or tail mass.

    Example:
        >>> acc = compose_accounting([GaussianComponent(0.6), GaussianComponent(0.8)])
        >>> acc.family, round(acc.mu, 12)
        ('gaussian', 1.0)
        >>> acc = compose_accounting([LaplaceComponent(0.5)], [2], discretization=1e-3)
        >>> acc.sup_loss, float(acc.delta_upper(1.0))
        (1.0, 0.0)
    """
    discretization = _check_discretization(discretization)
    tail_mass = _check_tail(tail_mass)
    items = _merge(list(parts), None if counts is None else list(counts))
    if items is None:
        return ExactAccounting(family="singular", sup_loss=math.inf)
    grouped = items.pop() if items and isinstance(items[-1], LaplacePairs) else None
    if _LAPLACE_ROUTE and grouped is not None and not items:
        return _laplace_accounting(grouped, discretization, tail_mass, lower=lower)
    items += list(grouped) if grouped is not None else []
    if _LAPLACE_ROUTE and items and all(type(c) is LaplaceComponent for c, _ in items):
        return _laplace_accounting(items, discretization, tail_mass, lower=lower)
    gaussian = [(c, k) for c, k in items if type(c) is GaussianComponent]
    mu = math.sqrt(math.fsum(k * c.mu**2 for c, k in gaussian)) if gaussian else 0.0
    others = [(c, k) for c, k in items if type(c) is not GaussianComponent]
    if not others:
        sup = math.inf if mu > 0 else 0.0
        return ExactAccounting(family="gaussian", sup_loss=sup, mu=mu, components=tuple(items))
    work = others + ([(GaussianComponent(mu), 1)] if mu > 0 else [])
    merged = gaussian_merge_error(mu)
    symmetric = all(c.symmetric for c, _ in work)
    directions = (True,) if symmetric else (True, False)
    sup = max(math.fsum(k * c.sup_loss(fwd) for c, k in work) for fwd in directions)
    identity = DiscretePLD(discretization, 0, np.ones(1), 0.0, 0.0, "optimistic")
    plds = {
        (fwd, up): _compose_direction(
            work, discretization, tail_mass, forward=fwd, upper=up, merged=merged
        )
        if up or lower
        else identity
        for fwd in directions
        for up in (True, False)
    }
    laplace_only = mu == 0 and all(c.family == "laplace" for c, _ in others)
    plain = all(type(c) is LaplaceComponent for c, _ in others)
    return ExactAccounting(
        family="laplace" if laplace_only else "composed",
        sup_loss=sup,
        mu=mu if gaussian else None,
        laplace_parameters=np.repeat([c.a for c, _ in others], [k for _, k in others])
        if plain
        else None,
        upper_pld=plds[(True, True)],
        lower_pld=plds[(True, False)],
        reverse_upper_pld=None if symmetric else plds[(False, True)],
        reverse_lower_pld=None if symmetric else plds[(False, False)],
        components=tuple(items),
    )


def _laplace_accounting(items, discretization: float, tail: float, *, lower: bool):
    """:func:`compose_accounting` of plain Laplace parts only (pairs or :class:`LaplacePairs`)."""
    if isinstance(items, LaplacePairs):
        given, repeats = items.values, items.counts
    else:
        given = np.array([c.a for c, _ in items], dtype=np.float64)
        repeats = np.array([k for _, k in items], dtype=np.int64)
    order = np.argsort(given, kind="stable")  # the audit path's order (np.unique sorts)
    a, counts = given[order], repeats[order]
    identity = DiscretePLD(discretization, 0, np.ones(1), 0.0, 0.0, "optimistic")
    return ExactAccounting(
        family="laplace",
        sup_loss=math.fsum((repeats * given).tolist()),
        laplace_parameters=np.repeat(given, repeats),
        upper_pld=_laplace_direction(a, counts, discretization, tail, upper=True),
        lower_pld=_laplace_direction(a, counts, discretization, tail, upper=False)
        if lower
        else identity,
        components=items if isinstance(items, LaplacePairs) else tuple(items),
    )


# ------------------------------------------------- compositions with a known supremum


@dataclasses.dataclass(frozen=True)
class BoundedComposition:
    """A composition whose supremum of the loss is known with certified bounds, and its curves.

    A release of independent sites, each with a finite, certified supremum of its loss
    (Laplace/ICLP shifts: ``sum_j a_j``; linear-Laplace, enumerable or declared laws:
    :func:`dpaudit.accounting.suprema.exact_sup_loss`), has ``sup L = sum_i sup L_i`` (the ess sup of a
    sum of independent variables is the sum of their ess sups). This record carries those
    bounds under the family ``"supremum"``, so a pure claim is judged on the supremum exactly
    as a single linear-Laplace site is, and the composed curves of
    :func:`compose_accounting` (where parts known only through their supremum are
    dominated by randomized response) for ``(epsilon, delta)`` claims.

    Attributes:
        sup_loss: certified upper bound ``S`` on ``sup L`` (both directions).
        sup_loss_lower: certified lower bound on ``sup L``.
        method: how the site suprema were obtained.
        curves: the :class:`~dpaudit.accounting.profiles.ExactAccounting` of the composition.
        family: always ``"supremum"``.
        sup_loss_error: how far beyond the bracket a claim that holds exactly may lie
            (the rounding of the sites' parameters, :func:`dpaudit.core.roundoff.sup_loss_tolerance`),
            or ``None``.
    """

    sup_loss: float
    sup_loss_lower: float
    method: str
    curves: ExactAccounting
    family: str = "supremum"
    sup_loss_error: float | None = None

    def delta_upper(self, epsilon) -> np.ndarray:
        """The smaller of the composed upper curve and ``(1 - e^{epsilon - S})_+``.

        Args:
            epsilon: epsilon(s).

        Returns:
            An upper bound on ``delta(epsilon)``, shaped like ``epsilon``.
        """
        eps = np.asarray(epsilon, dtype=np.float64)
        crude = np.maximum(0.0, -np.expm1(np.minimum(eps - self.sup_loss, 0.0)))
        return np.minimum(np.asarray(self.curves.delta_upper(eps)), crude)

    def delta_lower(self, epsilon) -> np.ndarray:
        """The composed lower curve (``0`` at and above ``S``).

        Args:
            epsilon: epsilon(s).

        Returns:
            A lower bound on ``delta(epsilon)``, shaped like ``epsilon``.
        """
        eps = np.asarray(epsilon, dtype=np.float64)
        return np.where(eps >= self.sup_loss, 0.0, np.asarray(self.curves.delta_lower(eps)))

    def epsilon_upper(self, delta: float) -> float:
        """An upper bound on ``epsilon(delta)``; ``S`` for ``delta = 0``.

        Args:
            delta: the target delta.

        Returns:
            The bound.
        """
        if delta <= 0:
            return self.sup_loss
        return min(self.sup_loss, self.curves.epsilon_upper(delta))

    def epsilon_lower(self, delta: float) -> float:
        """A lower bound on ``epsilon(delta)``: the certified supremum for ``delta = 0``.

        Args:
            delta: the target delta.

        Returns:
            The bound.
        """
        if delta <= 0:
            return self.sup_loss_lower
        return min(self.sup_loss_lower, self.curves.epsilon_lower(delta))

    def summary(self) -> dict:
        """JSON-able description.

        Returns:
            ``{family, sup_loss, sup_loss_lower, method, composed}``.
        """
        return {
            "family": self.family,
            "sup_loss": json_float(self.sup_loss),
            "sup_loss_lower": json_float(self.sup_loss_lower),
            "method": self.method,
            "composed": self.curves.summary(),
        }


def exact_accounting(shift, *, discretization: float = 1e-4) -> ExactAccounting:
    """Exact/numerical accounting for a :class:`~dpaudit.model.loss.NoiseShift` (or several).

    Args:
        shift: from :func:`dpaudit.model.loss.noise_shift`; a list or tuple of them (one per
            independent release site) is composed by
            :func:`dpaudit.accounting.composition.compose_accounting`.
        discretization: Laplace grid spacing (ignored for Gaussian noise).

    Returns:
        An :class:`ExactAccounting`.

    Example:
        >>> from dpaudit.model.loss import NoiseShift
        >>> s = NoiseShift("gaussian", np.array([1.0]), np.array([1.0]), 1.0, False, 0.0,
        ...                np.zeros(1), np.zeros(1), None, "independent")
        >>> round(float(exact_accounting(s).delta_upper(1.0)), 6)
        0.126937
    """
    if isinstance(shift, list | tuple):
        composed = compose_accounting(shift, discretization=discretization)
        errors = [shift_errors(s) for s in shift if not s.singular]
        return dataclasses.replace(
            composed,
            sup_loss_error=math.fsum(e[0] for e in errors),
            mu_error=math.sqrt(math.fsum(e[1] ** 2 for e in errors)),
        )
    if shift.singular:
        return ExactAccounting(family="singular", sup_loss=math.inf)
    sup_error, mu_error = shift_errors(shift)
    if shift.family == "gaussian":
        mu = gaussian_mu(shift.shift, shift.eigenvalues, shift.sigma)
        sup = math.inf if mu > 0 else 0.0
        return ExactAccounting(family="gaussian", sup_loss=sup, mu=mu, mu_error=mu_error)
    a = laplace_parameters(shift.shift, shift.eigenvalues, shift.sigma)
    return ExactAccounting(
        family="laplace",
        sup_loss=float(math.fsum(a)),
        laplace_parameters=a,
        upper_pld=laplace_group_pld(a, discretization, upper=True),
        lower_pld=laplace_group_pld(a, discretization, upper=False),
        sup_loss_error=sup_error,
    )
