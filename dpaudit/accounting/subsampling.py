r"""Privacy accounting of subsampled Gaussian and Laplace mechanisms.

A subsampled mechanism runs a base mechanism ``M`` on a random subset of the data.
With the base mechanism's dominating pair ``(B, A)`` (``B`` = its law with the
differing record, ``A`` without; for shifted Gaussian/Laplace noise ``A`` and ``B``
are the noise around two centres, and the base loss ``l = log dB/dA`` has the
symmetric curve ``delta_M``), the subsampled mechanism is dominated as follows.

**Poisson subsampling, add/remove adjacency** (each record kept independently with
probability ``q``; Zhu, Dong & Wang 2022). The two orders of a neighbouring pair
have different dominating pairs, composed separately:

* *remove* (``D`` has the record, ``D'`` not): ``P = (1-q) A + q B`` against
  ``Q = A``; the loss is ``L = log(1 - q + q e^l)``, increasing in ``l``, and
  ``delta(epsilon) = q delta_M(log((e^epsilon - 1 + q)/q))`` for
  ``epsilon > log(1-q)``, ``1 - e^epsilon`` below;
* *add*: ``P = A`` against ``Q = (1-q) A + q B``; ``L = -log(1 - q + q e^l)`` and,
  with ``c = 1 - e^epsilon (1-q)``, ``delta(epsilon) = c delta_M(epsilon + log q - log c)``
  for ``epsilon < -log(1-q)``, 0 above.

Both follow from ``H_e(P||Q) = E_A[(dP/dA - e^e dQ/dA)_+]`` with ``dB/dA = e^l``
(derivation in ``docs/composition.md``). They are what dp_accounting calls the
REMOVE and ADD privacy-loss distributions of ``from_gaussian_mechanism(...,
sampling_prob=q)`` / ``from_laplace_mechanism(..., sampling_prob=q)``.

**Sampling without replacement, replace-one adjacency** (a batch of fixed size
``m`` out of ``n``, ``q = m/n``). By Balle, Barthe & Gaboardi (2018, Thm 10: advanced
joint convexity), for ``epsilon >= 0`` each order satisfies
``delta(epsilon) <= f(epsilon) = q delta_M(log((e^epsilon - 1 + q)/q))`` where
``delta_M`` is now the base mechanism's *replace-one* curve (for a sum of records
clipped to norm ``C``, a shift of ``2C``). Below 0 the identity
``H_e(P||Q) = 1 - e^e + e^e H_{-e}(Q||P)`` gives ``1 - e^e + e^e f(-e)``. This
symmetric upper curve is all that is used: its connect-the-dots pmf dominates both
orders at every epsilon. Only an upper curve is produced; the lower curve of such
a component is that of identical laws.

A :class:`SubsampledComponent` plugs into :func:`dpaudit.accounting.composition.compose_accounting`
(``T`` steps: ``compose_accounting([component], [T])``); :func:`subsampled_accounting`
does exactly that.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit.accounting.composition import (
    GaussianComponent,
    LaplaceComponent,
    components_of,
    compose_accounting,
    connect_dots_pmf,
    rounded_down_pmf,
    upper_curve_values,
)
from dpaudit.accounting.profiles import ExactAccounting
from dpaudit.core.checks import check_finite_parameter

__all__ = ["SCHEMES", "SubsampledComponent", "subsampled_accounting", "subsampled_component"]

#: Subsampling schemes: Poisson (add/remove) and sampling without replacement (replace-one).
SCHEMES = ("poisson", "without-replacement")


def _mix(loss, q: float):
    """``g(l) = log(1 - q + q e^l)``, accurate near 0."""
    return np.log1p(q * np.expm1(loss))


def _mix_inverse(value, q: float):
    """``g^{-1}(v) = log((e^v - 1 + q)/q)`` for ``v > log(1 - q)`` (``-inf`` at or below)."""
    v = np.asarray(value, dtype=np.float64)
    inside = np.maximum(np.expm1(v) + q, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(inside) - math.log(q)


@dataclasses.dataclass(frozen=True)
class SubsampledComponent:
    """A Gaussian or Laplace mechanism run on a subsample (one step).

    Attributes:
        base: the base mechanism's loss (:class:`~dpaudit.accounting.composition.GaussianComponent`
            or :class:`~dpaudit.accounting.composition.LaplaceComponent`; for ``"without-replacement"``
            its replace-one shift).
        q: the sampling probability (Poisson) or the batch fraction ``m/n``.
        scheme: ``"poisson"`` (add/remove: forward = remove, backward = add) or
            ``"without-replacement"`` (replace-one, symmetric upper curve).
    """

    base: GaussianComponent | LaplaceComponent
    q: float
    scheme: str = "poisson"
    connect_the_dots = True  # upper_pmf is connect_dots_pmf of the curve

    def __post_init__(self) -> None:
        """Refuse a sampling probability outside ``(0, 1]`` or a base of another kind."""
        if type(self.base) not in (GaussianComponent, LaplaceComponent):
            raise TypeError(
                "SubsampledComponent.base must be a GaussianComponent or a LaplaceComponent, "
                f"got {type(self.base).__name__}."
            )
        check_finite_parameter("SubsampledComponent.q", self.q)
        if not 0 < float(self.q) <= 1:
            raise ValueError(f"SubsampledComponent.q must lie in (0, 1], got {self.q!r}.")
        if self.scheme not in SCHEMES:
            raise ValueError(
                f"SubsampledComponent.scheme must be one of {SCHEMES}, got {self.scheme!r}."
            )

    @property
    def family(self) -> str:
        """The base's family (``"gaussian"`` or ``"laplace"``)."""
        return self.base.family

    @property
    def symmetric(self) -> bool:
        """``True`` for sampling without replacement (one symmetric upper curve)."""
        return self.scheme == "without-replacement"

    def sup_loss(self, forward: bool = True) -> float:
        """``ess sup L`` of one direction.

        Args:
            forward: remove (``True``) or add (``False``) for Poisson.

        Returns:
            ``log(1 - q + q e^a)`` (remove, Laplace; ``inf`` for Gaussian),
            ``-log(1 - q + q e^-a)`` (add; ``-log(1-q)`` for Gaussian); the
            remove value for sampling without replacement.
        """
        top = self.base.sup_loss()
        if forward or self.symmetric:
            return math.inf if math.isinf(top) else float(_mix(top, self.q))
        return float(-_mix(-top, self.q)) if math.isfinite(top) else -math.log1p(-self.q)

    def _remove_curve(self, eps: np.ndarray) -> np.ndarray:
        inner = _mix_inverse(eps, self.q)
        low = eps <= math.log1p(-self.q)
        safe = np.where(low, 0.0, inner)
        return np.where(low, -np.expm1(np.minimum(eps, 0.0)), self.q * self.base.curve(safe))

    def _add_curve(self, eps: np.ndarray) -> np.ndarray:
        high = eps >= -math.log1p(-self.q)
        c = -np.expm1(np.where(high, 0.0, eps) + math.log1p(-self.q))
        c = np.where(high, 1.0, c)
        arg = np.where(high, 0.0, eps + math.log(self.q) - np.log(c))
        return np.where(high, 0.0, c * self.base.curve(arg))

    def curve(self, epsilon, forward: bool = True) -> np.ndarray:
        """The exact curve of one direction (Poisson) or the symmetric upper curve.

        Args:
            epsilon: epsilon(s), any real values.
            forward: remove (``True``) or add (``False``) for Poisson.

        Returns:
            ``delta(epsilon)`` shaped like ``epsilon``.
        """
        eps = np.asarray(epsilon, dtype=np.float64)
        if self.symmetric:
            pos = self._remove_curve(np.abs(eps))
            return np.where(eps >= 0, pos, -np.expm1(eps) + np.exp(eps) * pos)
        return self._remove_curve(eps) if forward else self._add_curve(eps)

    def survival(self, t, forward: bool = True) -> np.ndarray:
        """``P(L >= t)`` (or ``P(L > t)`` at atoms) of one Poisson direction.

        Args:
            t: loss value(s).
            forward: remove (``True``) or add (``False``).

        Returns:
            The survival probabilities (finite losses).
        """
        t = np.asarray(t, dtype=np.float64)
        q = self.q
        if forward:
            inner = np.where(t <= math.log1p(-q), -np.inf, _mix_inverse(t, q))
            mix = (1 - q) * self.base.survival(inner, False) + q * self.base.survival(inner, True)
            return np.where(t <= math.log1p(-q), 1.0, mix)
        high = t >= -math.log1p(-q)
        inner = _mix_inverse(np.where(high, 0.0, -t), q)
        return np.where(high, 0.0, 1.0 - self.base.survival(inner, False))

    def _range(self, tail: float, forward: bool) -> tuple[float, float]:
        """Loss interval holding all but ``tail`` of the mass (and ``delta(hi) <= tail``)."""
        q = self.q
        top_p = self.base.loss_range(tail, True)[1]
        lo_a, top_a = self.base.loss_range(tail, False)
        if self.symmetric:
            hi = float(_mix(top_p, q))
            return -hi, hi
        if forward:
            return float(_mix(lo_a, q)), float(_mix(top_p, q))
        return float(-_mix(top_a, q)), float(-_mix(lo_a, q))

    def upper_pmf(self, discretization: float, tail: float, forward: bool = True):
        """Connect-the-dots pmf of one direction.

        Args:
            discretization: grid spacing.
            tail: mass allowed above the grid (sent to ``+inf``).
            forward: remove (``True``) or add (``False``).

        Returns:
            ``(offset, probs, infinity_mass)``.
        """
        lo, hi = self._range(tail, forward)
        k_lo, k_hi = math.floor(lo / discretization), math.ceil(hi / discretization)
        grid = discretization * np.arange(k_lo, k_hi + 1)
        deltas = upper_curve_values(self.curve(grid, forward))
        return connect_dots_pmf(deltas, k_lo, discretization)

    def lower_pmf(self, discretization: float, tail: float, forward: bool = True):
        """Losses rounded down (Poisson); identical laws for sampling without replacement.

        Args:
            discretization: grid spacing.
            tail: mass allowed below the grid (dropped).
            forward: remove (``True``) or add (``False``).

        Returns:
            ``(offset, probs)``.
        """
        if self.symmetric:
            return 0, np.ones(1)
        lo, hi = self._range(tail, forward)
        k_lo, k_hi = math.floor(lo / discretization), math.floor(hi / discretization)
        return rounded_down_pmf(
            lambda t: self.survival(t, forward), k_lo, max(k_hi, k_lo), discretization
        )


def subsampled_component(base, q: float, scheme: str = "poisson"):
    """A subsampled step, checked; the base itself when ``q = 1``.

    Args:
        base: a :class:`~dpaudit.accounting.composition.GaussianComponent`,
            :class:`~dpaudit.accounting.composition.LaplaceComponent`, or anything
            :func:`~dpaudit.accounting.composition.components_of` turns into exactly one of them
            (a one-coordinate Laplace or any Gaussian :class:`~dpaudit.model.shift.NoiseShift`).
        q: sampling probability in ``(0, 1]``.
        scheme: one of :data:`SCHEMES`.

    Returns:
        A :class:`SubsampledComponent` (or ``base`` for ``q = 1``).

    Raises:
        ValueError: for ``q`` outside ``(0, 1]``, an unknown scheme or a base that is not
            one Gaussian or Laplace loss.

    Example:
        >>> from dpaudit.accounting.composition import GaussianComponent
        >>> subsampled_component(GaussianComponent(1.0), 0.01).sup_loss(forward=False) > 0
        True
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}.")
    if isinstance(q, bool) or not isinstance(q, int | float) or not 0 < q <= 1:
        raise ValueError(f"the sampling probability q must lie in (0, 1], got {q!r}.")
    parts = components_of(base)
    if (
        len(parts) != 1
        or parts[0][1] != 1
        or type(parts[0][0])
        not in (
            GaussianComponent,
            LaplaceComponent,
        )
    ):
        raise ValueError(
            "subsampling needs a base that is one Gaussian or one Laplace loss; merge a "
            "multi-coordinate Gaussian base into one NoiseShift (its mu combines) or subsample "
            "each Laplace coordinate's mechanism separately."
        )
    component = parts[0][0]
    return component if q == 1 else SubsampledComponent(component, float(q), scheme)


def subsampled_accounting(
    base,
    q: float,
    steps: int = 1,
    *,
    scheme: str = "poisson",
    discretization: float = 1e-4,
    tail_mass: float = 1e-15,
    lower: bool = True,
) -> ExactAccounting:
    """Accounting of ``steps`` compositions of a subsampled Gaussian or Laplace mechanism.

    Args:
        base: as in :func:`subsampled_component`.
        q: the sampling probability.
        steps: the number of steps ``T >= 1``.
        scheme: one of :data:`SCHEMES`.
        discretization: grid spacing of the numerical PLDs.
        tail_mass: as in :func:`~dpaudit.accounting.composition.compose_accounting`.
        lower: also compute the lower curve.

    Returns:
        An :class:`~dpaudit.accounting.profiles.ExactAccounting` (both directions for Poisson).

    Raises:
        ValueError: for bad arguments (see :func:`subsampled_component`) or ``steps < 1``.

    Example:
        >>> from dpaudit.accounting.composition import GaussianComponent
        >>> acc = subsampled_accounting(GaussianComponent(1.0), 0.01, 10, discretization=1e-3)
        >>> 0 < acc.epsilon_upper(1e-5) < 1
        True
    """
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}.")
    component = subsampled_component(base, q, scheme)
    return compose_accounting(
        [component],
        [int(steps)],
        discretization=discretization,
        tail_mass=tail_mass,
        lower=lower,
    )
