r"""Exact suprema of the privacy loss for release laws whose structure is recognised.

A pure claim ``epsilon`` holds for a pair of release laws ``P, Q`` exactly when
``sup L <= epsilon`` in both directions, ``L = log dP/dQ``. Sampling never
certifies a supremum; this module computes it, with a certified error bound,
for three structures (:func:`exact_sup_loss`):

* **Linear-Laplace releases** ``y = f + A eta / n``, ``eta`` i.i.d. ``Lap(0, b)``
  (:class:`~dpaudit.model.noise.linear_laplace.LinearLaplace`,
  :class:`~dpaudit.model.noise.linear_laplace.AncestorLaplace`, the BMR ECDF and ROC
  releases and the textbook binary mechanism) with the same ``A``, ``b``, ``n``; both
  classes declare the value (``exact_sup_loss``, the third structure below). With ``s = n (f_P - f_Q)``, ``sup L = min{||d||_1 : A d = s} / b`` in both
  directions. *Upper bound*: for any ``d`` with ``A d = s`` the map ``eta -> eta + d``
  carries the fibre ``{A eta = x}`` onto ``{A eta = x + s}`` preserving its Lebesgue
  measure, and ``|eta + d|_1 <= |eta|_1 + |d|_1`` bounds the density ratio of the
  fibres pointwise by ``exp(||d||_1 / b)``, hence the marginal densities too.
  *Attainment*: with ``g(x) = min{||eta||_1 : A eta = x}`` the density of ``A eta`` is
  ``exp(-g(x)/b)`` up to factors polynomial in ``|x|``, and ``g`` is positively
  homogeneous, so along ``x = t s``, ``g((t+1) s) - g(t s) = g(s)`` and the loss tends
  to ``g(s)/b`` as ``t -> inf`` (for square invertible ``A`` the loss is exactly
  ``(||A^{-1}(x + s)||_1 - ||A^{-1} x||_1)/b`` and the supremum is attained). The LP is
  solved by HiGHS with certified bounds
  (:func:`~dpaudit.model.noise.linear_laplace.linear_laplace_sensitivity_bounds`); the BMR tree
  (:class:`~dpaudit.model.noise.linear_laplace.AncestorLaplace`) declares the same value from its
  tree dynamic programme, without forming the dense matrix. Independent
  batch components (``to_event``) add up: the supremum of a sum of functions of
  independent coordinates is the sum of the suprema.
* **Finite discrete releases** of numpyro's enumerable families (Bernoulli,
  Categorical, Binomial, DiscreteUniform): ``sup L = max_k (log p_k - log q_k)``
  over the enumerated support; a point with ``p_k > 0 = q_k`` gives ``inf``.
* **Distributions that declare their supremum**: any release law with a method
  ``exact_sup_loss(other) -> ExactSupLoss | None`` (the catalogue's two-sided
  geometric law does, through :func:`two_sided_geometric_sup_loss`; report-noisy-max
  and the sparse vector technique do, through :func:`finite_sup_loss` over their finite
  output sets, whose masses are integrals computed by
  :func:`piecewise_exponential_integral`).

**Integrals of products of Laplace (and exponential) densities and CDFs.** Every mass
of report-noisy-max and of an SVT pattern is ``int prod_m g_m(r) dr`` where each factor
``g_m`` is, on either side of one kink ``mu_m``, a sum of at most two terms
``c e^{lambda (r - mu_m)}`` (a Laplace density, CDF or survival function, an exponential
density or CDF, an indicator). Between consecutive kinks the product expands into a sum
of exponentials ``C e^{Lambda r}`` whose integrals are closed forms, so the mass is
computed *exactly* up to floating-point round-off, which is bounded term by term
(:func:`piecewise_exponential_integral`): no quadrature error at all.

The result, :class:`ExactSupLoss`, converts to a :class:`SupremumAccounting` that
has the interface of :class:`~dpaudit.accounting.profiles.ExactAccounting` (family
``"supremum"``): a pure claim passes when ``sup_loss <= epsilon`` (the upper bound)
and is violated when ``sup_loss_lower > epsilon``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import TYPE_CHECKING

import numpy as np

from dpaudit.core.serialize import json_float

if TYPE_CHECKING:  # numpyro is imported where a law is read: accounting alone loads no JAX
    from numpyro.distributions import Distribution

__all__ = [
    "ExactSupLoss",
    "ExpFactor",
    "SupremumAccounting",
    "exact_sup_loss",
    "finite_sup_loss",
    "log_bracket",
    "log_density_error",
    "piecewise_exponential_integral",
    "two_sided_geometric_sup_loss",
]

_EPS = float(np.finfo(float).eps)

# Enumeration evaluates both log-masses on every support point of every batch element:
# 2^22 points (two 32 MiB float64 arrays) keep it far below the audit's memory budget.
_MAX_ENUMERATED = 1 << 22

# numpyro families whose log_prob is a closed form (no quadrature): enumerating their
# support gives the supremum up to float round-off only (names in numpyro.distributions).
_ENUMERABLE = (
    "BernoulliProbs",
    "BernoulliLogits",
    "CategoricalProbs",
    "CategoricalLogits",
    "BinomialProbs",
    "BinomialLogits",
    "DiscreteUniform",
)


# Expanding a product of two-term factors doubles the terms per factor: past 2^20 terms
# per interval (a few 8 MiB arrays) the exact route declines and sampling decides.
_MAX_TERMS = 1 << 20

# Round-off of one expanded term: the log of its magnitude is a sum of at most m + 2
# rounded products, exp/expm1/log are within a few ulps in numpy and libm; 64 ulps per
# operation covers both with a wide margin (the bound is still ~1e-12 relative).
_ULPS = 64.0


@dataclasses.dataclass(frozen=True)
class ExactSupLoss:
    """Certified bounds on ``sup L`` in both directions of a pair ``(P, Q)``.

    Attributes:
        forward_lower, forward_upper: bounds on ``sup log dP/dQ``.
        backward_lower, backward_upper: bounds on ``sup log dQ/dP``.
        method: ``"linear-laplace"``, ``"enumeration"`` or ``"declared"``.
    """

    forward_lower: float
    forward_upper: float
    backward_lower: float
    backward_upper: float
    method: str

    @property
    def sup_loss(self) -> float:
        """Upper bound on ``max`` of the two suprema: a pure claim at or above it holds."""
        return max(self.forward_upper, self.backward_upper)

    @property
    def sup_loss_lower(self) -> float:
        """Lower bound on ``max`` of the two suprema: a pure claim below it is violated."""
        return max(self.forward_lower, self.backward_lower)

    @property
    def error(self) -> float:
        """Certified width ``sup_loss - sup_loss_lower`` (0 when both are ``inf``)."""
        if math.isinf(self.sup_loss) and math.isinf(self.sup_loss_lower):
            return 0.0
        return self.sup_loss - self.sup_loss_lower

    def accounting(self) -> SupremumAccounting:
        """The accounting record the white-box verdict reads.

        Returns:
            A :class:`SupremumAccounting` carrying these bounds.
        """
        return SupremumAccounting(
            sup_loss=self.sup_loss, sup_loss_lower=self.sup_loss_lower, method=self.method
        )


@dataclasses.dataclass(frozen=True)
class SupremumAccounting:
    """Accounting from the supremum of the loss alone (the interface of ``ExactAccounting``).

    Only ``sup L`` is known, so the privacy curve is bounded by the worst law with that
    supremum: ``delta(epsilon) = E_P[(1 - e^{epsilon - L})_+] <= (1 - e^{epsilon - S})_+``
    with ``S`` the upper bound, and ``0`` is the only lower bound for ``epsilon >= 0``
    (lower bounds on ``delta`` need the law of ``L``, not its supremum).

    Attributes:
        sup_loss: certified upper bound ``S`` on ``sup L`` (both directions).
        sup_loss_lower: certified lower bound on ``sup L``.
        method: how it was computed (:attr:`ExactSupLoss.method`).
        family: always ``"supremum"``.
    """

    sup_loss: float
    sup_loss_lower: float
    method: str
    family: str = "supremum"

    def delta_upper(self, epsilon) -> np.ndarray:
        """``(1 - e^{epsilon - S})_+``: an upper bound on ``delta(epsilon)``.

        Args:
            epsilon: epsilon(s).

        Returns:
            The bound, shaped like ``epsilon`` (1 when ``S`` is infinite).
        """
        eps = np.asarray(epsilon, dtype=np.float64)
        if math.isinf(self.sup_loss):
            return np.ones_like(eps)
        return np.maximum(0.0, -np.expm1(np.minimum(eps - self.sup_loss, 0.0)))

    def delta_lower(self, epsilon) -> np.ndarray:
        """``0``, except ``1`` for singular laws (``sup_loss_lower = inf``).

        Args:
            epsilon: epsilon(s).

        Returns:
            The bound, shaped like ``epsilon``.
        """
        eps = np.asarray(epsilon, dtype=np.float64)
        return np.full_like(eps, 1.0 if math.isinf(self.sup_loss_lower) else 0.0)

    def epsilon_upper(self, delta: float) -> float:
        """The smallest ``epsilon >= 0`` with ``(1 - e^{epsilon - S})_+ <= delta``.

        Args:
            delta: the target delta.

        Returns:
            ``max(0, S + log(1 - delta))`` (``S`` for ``delta = 0``, ``0`` for ``delta >= 1``).
        """
        if delta >= 1.0:
            return 0.0
        return max(0.0, self.sup_loss + math.log1p(-delta))

    def epsilon_lower(self, delta: float) -> float:
        """A lower bound on ``epsilon(delta)``: the supremum for ``delta = 0``, else ``0``.

        Args:
            delta: the target delta.

        Returns:
            The bound.
        """
        return self.sup_loss_lower if delta <= 0 else 0.0

    def summary(self) -> dict:
        """JSON-able description.

        Returns:
            ``{family, sup_loss, sup_loss_lower, method}`` (infinities as ``"inf"``).
        """
        return {
            "family": self.family,
            "sup_loss": json_float(self.sup_loss),
            "sup_loss_lower": json_float(self.sup_loss_lower),
            "method": self.method,
        }


def _down(value: float) -> float:
    return float(np.nextafter(value, -np.inf))


def _symmetric(lower: float, upper: float, method: str) -> ExactSupLoss:
    return ExactSupLoss(lower, upper, lower, upper, method)


def two_sided_geometric_sup_loss(loc_p, loc_q, a) -> ExactSupLoss:
    r"""``sup L`` of two-sided geometric laws ``P(k) ∝ e^{-a |k - loc|}`` with shifted centres.

    On the common lattice ``loc + Z``, ``L(k) = a (|k - loc_q| - |k - loc_p|)``; by the
    triangle inequality ``|L| <= a |loc_p - loc_q|``, with equality for every ``k`` on the
    far side of both centres, so ``sup L = a |s|`` exactly in both directions (``alpha =
    e^{-a}``: ``|s| log(1/alpha)``). Centres that differ by a non-integer put the two
    laws on disjoint lattices (``inf``). Batched laws are independent components and
    their suprema add up.

    Args:
        loc_p, loc_q: centres (broadcastable arrays).
        a: the decay ``a = log(1/alpha) > 0`` (broadcastable).

    Returns:
        An :class:`ExactSupLoss` with method ``"declared"``.

    Example:
        >>> r = two_sided_geometric_sup_loss(3.0, 2.0, 1.0)
        >>> r.sup_loss_lower <= 1.0 <= r.sup_loss, r.error < 1e-14
        (True, True)
    """
    s = np.abs(np.asarray(loc_p, dtype=float) - np.asarray(loc_q, dtype=float))
    a = np.broadcast_to(np.asarray(a, dtype=float), s.shape)
    if np.any(np.round(s) != s):
        return _symmetric(math.inf, math.inf, "declared")
    terms = (a * s).ravel()
    value = math.fsum(terms)
    # each product and the difference are rounded once (<= 2 eps relative), the fsum once
    slack = 4.0 * _EPS * (value + math.fsum(np.abs(terms)))
    return _symmetric(max(0.0, value - slack), value + slack, "declared")


@dataclasses.dataclass(frozen=True)
class ExpFactor:
    r"""A piecewise-exponential factor ``g(r)`` of an integrand, with one kink.

    ``g(r) = sum_{(c, lam) in left} c e^{lam (r - kink)}`` for ``r < kink`` and the same
    with ``right`` for ``r >= kink``; an empty side is ``0``. The constructors cover the
    laws the catalogue needs: :meth:`laplace_density`, :meth:`laplace_cdf`,
    :meth:`laplace_survival`, :meth:`exponential_density`, :meth:`exponential_cdf`,
    :meth:`indicator`.

    Attributes:
        kink: the point where the two expressions meet.
        left, right: ``((coefficient, rate), ...)`` on each side.
    """

    kink: float
    left: tuple[tuple[float, float], ...]
    right: tuple[tuple[float, float], ...]

    @classmethod
    def laplace_density(cls, loc: float, scale: float) -> ExpFactor:
        """The density of ``Lap(loc, scale)``.

        Args:
            loc, scale: location and scale (> 0).

        Returns:
            The factor ``e^{-|r - loc|/scale} / (2 scale)``.
        """
        c, lam = 0.5 / scale, 1.0 / scale
        return cls(float(loc), ((c, lam),), ((c, -lam),))

    @classmethod
    def laplace_cdf(cls, loc: float, scale: float) -> ExpFactor:
        """The CDF ``P(loc + scale Z <= r)`` of ``Lap(loc, scale)``.

        Args:
            loc, scale: location and scale (> 0).

        Returns:
            The factor (``e^{t}/2`` below ``loc``, ``1 - e^{-t}/2`` above, ``t = (r-loc)/scale``).
        """
        lam = 1.0 / scale
        return cls(float(loc), ((0.5, lam),), ((1.0, 0.0), (-0.5, -lam)))

    @classmethod
    def laplace_survival(cls, loc: float, scale: float) -> ExpFactor:
        """The survival function ``P(loc + scale Z > r)`` of ``Lap(loc, scale)``.

        Args:
            loc, scale: location and scale (> 0).

        Returns:
            The factor ``1 - F``.
        """
        lam = 1.0 / scale
        return cls(float(loc), ((1.0, 0.0), (-0.5, lam)), ((0.5, -lam),))

    @classmethod
    def exponential_density(cls, loc: float, scale: float) -> ExpFactor:
        """The density of ``loc + Exp(scale)`` (zero below ``loc``).

        Args:
            loc, scale: location and scale (> 0).

        Returns:
            The factor.
        """
        return cls(float(loc), (), ((1.0 / scale, -1.0 / scale),))

    @classmethod
    def exponential_cdf(cls, loc: float, scale: float) -> ExpFactor:
        """The CDF of ``loc + Exp(scale)``.

        Args:
            loc, scale: location and scale (> 0).

        Returns:
            The factor ``(1 - e^{-(r - loc)/scale})_+``.
        """
        return cls(float(loc), (), ((1.0, 0.0), (-1.0, -1.0 / scale)))

    @classmethod
    def indicator(cls, kink: float, below: bool) -> ExpFactor:
        """The indicator of ``r < kink`` (``below``) or ``r >= kink``.

        Args:
            kink: the edge.
            below: which side is 1.

        Returns:
            The factor.
        """
        one = ((1.0, 0.0),)
        return cls(float(kink), one, ()) if below else cls(float(kink), (), one)


def _expand(factors, lo: float, hi: float, ref: float):
    """The expanded terms of ``prod g_m`` on ``[lo, hi]``: sign, log-magnitude at ``ref``,
    rate, and the sizes that bound their round-off (``None`` when the product is 0)."""
    sign, logmag, rate = np.ones(1), np.zeros(1), np.zeros(1)
    size, abs_rate = np.zeros(1), np.zeros(1)
    for factor in factors:
        piece = factor.left if hi <= factor.kink else factor.right
        if not piece:
            return None
        coef, lam = np.array(piece).T
        log_coef, exponent = np.log(np.abs(coef)), lam * (ref - factor.kink)
        sign = np.outer(sign, np.sign(coef)).ravel()
        logmag = np.add.outer(logmag, log_coef + exponent).ravel()
        rate = np.add.outer(rate, lam).ravel()
        size = np.add.outer(size, np.abs(log_coef) + np.abs(exponent)).ravel()
        abs_rate = np.add.outer(abs_rate, np.abs(lam)).ravel()
        if sign.size > _MAX_TERMS:
            raise OverflowError
    return sign, logmag, rate, size, abs_rate


def _interval_terms(factors, lo: float, hi: float):
    """Signed values and round-off bounds of the expanded terms' integrals over ``[lo, hi]``."""
    ref = lo if math.isfinite(lo) else hi
    expanded = _expand(factors, lo, hi, ref)
    if expanded is None:
        return np.zeros(0), np.zeros(0)
    sign, logmag, rate, size, abs_rate = expanded
    with np.errstate(divide="ignore", invalid="ignore"):
        if math.isfinite(lo) and math.isfinite(hi):
            w = hi - lo
            rw = rate * w
            log_j = np.where(
                rate > 0,
                rw + np.log(-np.expm1(-np.abs(rw))) - np.log(np.abs(rate)),
                np.log(-np.expm1(-np.abs(rw))) - np.log(np.abs(rate)),
            )
            log_j = np.where(rate == 0, math.log(w), log_j)
            spread = np.abs(rw) + abs_rate * w
        else:
            outward = rate > 0 if math.isinf(lo) else rate < 0
            if not np.all(outward):  # a tail that does not decay: not a finite integral
                raise ValueError("the integrand does not decay in a tail (not a density).")
            log_j = -np.log(np.abs(rate))
            spread = 1.0 + abs_rate / np.abs(rate)
    values = sign * np.exp(logmag + log_j)
    # relative round-off of each term: the log-magnitude's absolute error (sums of the
    # exponents, `size`), the closed-form integral's sensitivity to the rounded rate and
    # width (`spread`), and the elementary functions, at _ULPS per operation
    m = len(factors) + 4
    rel = _ULPS * m * _EPS * (1.0 + size + spread)
    return values, np.abs(values) * np.expm1(np.minimum(2.0 * rel, 700.0))


def piecewise_exponential_integral(factors) -> tuple[float, float] | None:
    r"""Certified bounds on ``int_R prod_m g_m(r) dr`` for piecewise-exponential factors.

    The kinks split the line into intervals; on each, every factor is one of its two
    expressions, the product expands into terms ``C e^{Lambda r}`` and each term is
    integrated in closed form (``(e^{Lambda w} - 1)/Lambda`` on a bounded interval,
    ``1/|Lambda|`` on a tail). The terms are summed exactly (``math.fsum``); the bound
    adds each term's round-off (module constants) and the final rounding, so the true
    integral of the factors as given lies in ``[lower, upper]``.

    Args:
        factors: a sequence of :class:`ExpFactor`.

    Returns:
        ``(lower, upper)`` with ``0 <= lower <= upper``, or ``None`` when an interval
        expands into more than ``2^20`` terms.

    Raises:
        ValueError: a tail where the product does not decay (the integral diverges).

    Example:
        >>> lo, hi = piecewise_exponential_integral(  # int f F = 1/2 for any law
        ...     [ExpFactor.laplace_density(1.0, 2.0), ExpFactor.laplace_cdf(1.0, 2.0)])
        >>> lo <= 0.5 <= hi and hi - lo < 1e-11
        True
    """
    edges = [-math.inf, *sorted({f.kink for f in factors}), math.inf]
    values, errors = [], []
    try:
        for lo, hi in itertools.pairwise(edges):
            v, e = _interval_terms(factors, lo, hi)
            values.extend(v.tolist())
            errors.extend(e.tolist())
    except OverflowError:
        return None
    if not values:  # every interval has a factor that vanishes: exactly 0
        return 0.0, 0.0
    total = math.fsum(values)
    # fsum is correctly rounded: one more eps of the total, and the error sum rounded up
    error = math.fsum(errors) * (1.0 + len(errors) * _EPS) + 2.0 * _EPS * abs(total)
    return max(0.0, _down(total - error)), float(np.nextafter(total + error, np.inf))


def log_bracket(lower: float, upper: float) -> tuple[float, float]:
    """``log`` of a bracket ``[lower, upper]`` of a mass, widened by the rounding of ``log``.

    Args:
        lower, upper: bounds on a non-negative quantity.

    Returns:
        ``(log lower, log upper)`` moved outwards by 8 ulps (``-inf`` for a bound ``<= 0``).
    """
    lo = -math.inf if lower <= 0 else math.log(lower)
    hi = -math.inf if upper <= 0 else math.log(upper)
    lo = lo if math.isinf(lo) else lo - 8 * _EPS * abs(lo) - 1e-300
    hi = hi if math.isinf(hi) else hi + 8 * _EPS * abs(hi) + 1e-300
    return lo, hi


def finite_sup_loss(log_p, log_q, method: str = "declared") -> ExactSupLoss:
    """Certified ``sup L`` of two laws on one finite output set from bracketed log-masses.

    ``sup log dP/dQ = max_k (log p_k - log q_k)`` over the outputs with ``p_k > 0``;
    the upper bound pairs each ``p_k``'s upper bound with ``q_k``'s lower bound, the lower
    bound the other way round; an output with ``p_k > 0 = q_k`` certainly gives ``inf``.
    Both suprema are ``>= 0`` for probability laws, so the lower bounds are clamped at 0.

    Args:
        log_p, log_q: ``(n_outputs, 2)`` arrays of ``[lower, upper]`` bounds on the
            log-masses (``-inf`` for a mass that may be 0).
        method: recorded in the result.

    Returns:
        An :class:`ExactSupLoss`.
    """
    log_p, log_q = np.asarray(log_p, dtype=float), np.asarray(log_q, dtype=float)
    out = []
    for first, second in ((log_p, log_q), (log_q, log_p)):
        possible = first[:, 1] > -np.inf
        sure = first[:, 0] > -np.inf
        with np.errstate(invalid="ignore"):
            top = np.where(possible, first[:, 1] - second[:, 0], -np.inf)
            bottom = np.where(sure, first[:, 0] - second[:, 1], -np.inf)
        upper = float(np.nextafter(np.max(top), np.inf))
        lower = float(np.max(bottom))
        lower = lower if math.isinf(lower) else _down(lower)
        out += [max(0.0, lower), max(0.0, upper)]
    return ExactSupLoss(*out, method)


def log_density_error(distribution: Distribution, release) -> float:
    """A certified bound on the numerical error of ``distribution.log_prob(release)``.

    Laws whose log-density is computed numerically (quadrature) declare
    ``log_prob_error(value) -> float``; closed-form laws do not and their error is
    float round-off only, which the certificate's own margin covers (``0`` here). A law
    that cannot bound its error returns ``inf``, and no certificate rests on it.
    ``Independent`` wrappers are looked through.

    Args:
        distribution: the release law.
        release: one release.

    Returns:
        The bound (``>= 0``, possibly ``inf``).
    """
    declared = getattr(_unwrap(distribution), "log_prob_error", None)
    return float(declared(release)) if callable(declared) else 0.0


def _unwrap(d: Distribution) -> Distribution:
    import numpyro.distributions as dist  # already loaded: d is a numpyro law

    while isinstance(d, dist.Independent):
        d = d.base_dist
    return d


def _enumerated_sup_loss(p: Distribution, q: Distribution) -> ExactSupLoss | None:
    """Max over the enumerated support of ``log p - log q``, summed over the batch."""
    try:
        points = np.shape(p.enumerate_support(expand=False))[0]
        if points * max(1, math.prod(p.batch_shape)) > _MAX_ENUMERATED:
            return None
        support = np.asarray(p.enumerate_support(expand=True))
        other = np.asarray(q.enumerate_support(expand=True))
    except NotImplementedError:  # e.g. a Binomial batch with different total counts
        return None
    if support.shape != other.shape or not np.array_equal(support, other):
        return None
    log_p, log_q = np.asarray(p.log_prob(support)), np.asarray(q.log_prob(support))
    log_p, log_q = log_p.reshape(log_p.shape[0], -1), log_q.reshape(log_q.shape[0], -1)
    # closed-form log-masses are accurate to a few hundred ulps of their size (log-sum-exp
    # normalisation, gammaln): 1e-12 relative plus 1e-12 absolute covers it with room
    error = 1e-12 * (1.0 + np.abs(np.where(np.isfinite(log_p), log_p, 0.0)))
    error = error + 1e-12 * np.abs(np.where(np.isfinite(log_q), log_q, 0.0))
    bounds = []
    for first, second in ((log_p, log_q), (log_q, log_p)):
        with np.errstate(invalid="ignore"):
            ratio = np.where(first == -np.inf, -np.inf, first - second)
        top = np.max(ratio - error, axis=0), np.max(ratio + error, axis=0)
        bounds.append((max(0.0, math.fsum(top[0])), math.fsum(top[1])))
    (fl, fu), (bl, bu) = bounds
    return ExactSupLoss(fl, fu, bl, bu, "enumeration")


def exact_sup_loss(dist_p: Distribution, dist_q: Distribution) -> ExactSupLoss | None:
    """Certified bounds on ``sup log dP/dQ`` and ``sup log dQ/dP`` when the structure is known.

    Recognised pairs (module docstring): laws that declare ``exact_sup_loss(other)``
    (the linear-Laplace, sparse-vector and report-noisy-max laws of
    :mod:`dpaudit.model.noise` and the catalogue do), and two laws of one enumerable
    numpyro family. ``Independent`` wrappers are looked through.

    Args:
        dist_p: the release law under ``D``.
        dist_q: the release law under ``D'``.

    Returns:
        An :class:`ExactSupLoss`, or ``None`` when the structure is not recognised (the
        audit then relies on sampling, as before).

    Example:
        >>> import jax.numpy as jnp
        >>> from dpaudit.model.noise.linear_laplace import LinearLaplace
        >>> p = LinearLaplace(jnp.array([1.0, 0.0]), jnp.eye(2), scale=2.0)
        >>> q = LinearLaplace(jnp.array([0.0, 1.0]), jnp.eye(2), scale=2.0)
        >>> round(exact_sup_loss(p, q).sup_loss, 9)
        1.0
    """
    p, q = _unwrap(dist_p), _unwrap(dist_q)
    if p.batch_shape + p.event_shape != q.batch_shape + q.event_shape:
        return None
    declared = getattr(p, "exact_sup_loss", None)
    if callable(declared) and type(p) is type(q):
        return declared(q)
    import numpyro.distributions as dist  # already loaded: p is a numpyro law

    if type(p) is type(q) and isinstance(p, tuple(getattr(dist, n) for n in _ENUMERABLE)):
        return _enumerated_sup_loss(p, q)
    return None
