r"""Exact suprema of the privacy loss for release laws whose structure is recognised.

A pure claim ``epsilon`` holds for a pair of release laws ``P, Q`` exactly when
``sup L <= epsilon`` in both directions, ``L = log dP/dQ``. Sampling never
certifies a supremum; this module computes it, with a certified error bound,
for three structures (:func:`exact_sup_loss`):

* **Linear-Laplace releases** ``y = f + A eta / n``, ``eta`` i.i.d. ``Lap(0, b)``
  (:class:`~dpaudit.noise.linear_laplace.LinearLaplace`,
  :class:`~dpaudit.noise.linear_laplace.AncestorLaplace`, the BMR ECDF and ROC
  releases and the textbook binary mechanism) with the same ``A``, ``b``, ``n``.
  With ``s = n (f_P - f_Q)``, ``sup L = min{||d||_1 : A d = s} / b`` in both
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
  (:func:`~dpaudit.noise.linear_laplace.linear_laplace_sensitivity_bounds`). Independent
  batch components (``to_event``) add up: the supremum of a sum of functions of
  independent coordinates is the sum of the suprema.
* **Finite discrete releases** of numpyro's enumerable families (Bernoulli,
  Categorical, Binomial, DiscreteUniform): ``sup L = max_k (log p_k - log q_k)``
  over the enumerated support; a point with ``p_k > 0 = q_k`` gives ``inf``.
* **Distributions that declare their supremum**: any release law with a method
  ``exact_sup_loss(other) -> ExactSupLoss | None`` (the catalogue's two-sided
  geometric law does, through :func:`two_sided_geometric_sup_loss`).

The result, :class:`ExactSupLoss`, converts to a :class:`SupremumAccounting` that
has the interface of :class:`~dpaudit.accounting.ExactAccounting` (family
``"supremum"``): a pure claim passes when ``sup_loss <= epsilon`` (the upper bound)
and is violated when ``sup_loss_lower > epsilon``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpyro.distributions as dist
from numpyro.distributions import Distribution

from dpaudit.noise.linear_laplace import LinearLaplace, linear_laplace_sensitivity_bounds
from dpaudit.serialize import json_float

__all__ = [
    "ExactSupLoss",
    "SupremumAccounting",
    "exact_sup_loss",
    "two_sided_geometric_sup_loss",
]

_EPS = float(np.finfo(float).eps)

# Enumeration evaluates both log-masses on every support point of every batch element:
# 2^22 points (two 32 MiB float64 arrays) keep it far below the audit's memory budget.
_MAX_ENUMERATED = 1 << 22

# numpyro families whose log_prob is a closed form (no quadrature): enumerating their
# support gives the supremum up to float round-off only.
_ENUMERABLE = (
    dist.BernoulliProbs,
    dist.BernoulliLogits,
    dist.CategoricalProbs,
    dist.CategoricalLogits,
    dist.BinomialProbs,
    dist.BinomialLogits,
    dist.DiscreteUniform,
)


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


def _unwrap(d: Distribution) -> Distribution:
    while isinstance(d, dist.Independent):
        d = d.base_dist
    return d


def _same_linear_laplace(p, q) -> bool:
    if type(p) is not type(q) or not isinstance(p, LinearLaplace):
        return False
    same = np.array_equal(np.asarray(p.matrix), np.asarray(q.matrix))
    same = same and np.shape(p.loc) == np.shape(q.loc)
    same = same and np.array_equal(np.asarray(p.count_scale), np.asarray(q.count_scale))
    return same and np.array_equal(np.asarray(p.scale), np.asarray(q.scale))


def _linear_laplace_sup_loss(p: LinearLaplace, q: LinearLaplace) -> ExactSupLoss:
    """Sum over the batch of ``min{||d||_1 : A d = n (loc_p - loc_q)} / b``."""
    n = float(np.asarray(p.count_scale))
    loc_p, loc_q = np.asarray(p.loc, dtype=float), np.asarray(q.loc, dtype=float)
    difference = loc_p - loc_q
    shifts = (n * difference).reshape(-1, loc_p.shape[-1])
    # the difference and the product are each rounded once: 2 eps relative, 4 for safety
    errors = 4.0 * _EPS * np.abs(shifts)
    scales = np.broadcast_to(np.asarray(p.scale, dtype=float), loc_p.shape[:-1]).reshape(-1)
    matrix = np.asarray(p.matrix, dtype=float)
    lower = upper = 0.0
    for shift, error, scale in zip(shifts, errors, scales, strict=True):
        bounds = linear_laplace_sensitivity_bounds(matrix, shift, error)
        # one division each: step one float outwards (an infinite bound stays infinite)
        lower += bounds.lower / scale if math.isinf(bounds.lower) else _down(bounds.lower / scale)
        upper += float(np.nextafter(bounds.upper / scale, np.inf))
    # the running sums are rounded once per term (<= batch eps relative)
    count = shifts.shape[0]
    return _symmetric(lower * (1 - count * _EPS), upper * (1 + count * _EPS), "linear-laplace")


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

    Recognised pairs (module docstring): two linear-Laplace releases with
    the same matrix and scales, two laws of one enumerable numpyro family, and laws that
    declare ``exact_sup_loss(other)``. ``Independent`` wrappers are looked through.

    Args:
        dist_p: the release law under ``D``.
        dist_q: the release law under ``D'``.

    Returns:
        An :class:`ExactSupLoss`, or ``None`` when the structure is not recognised (the
        audit then relies on sampling, as before).

    Example:
        >>> import jax.numpy as jnp
        >>> from dpaudit.noise.linear_laplace import LinearLaplace
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
    if _same_linear_laplace(p, q):
        return _linear_laplace_sup_loss(p, q)
    if type(p) is type(q) and isinstance(p, _ENUMERABLE):
        return _enumerated_sup_loss(p, q)
    return None
