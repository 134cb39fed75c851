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
    rounded_down_error,
    rounded_down_pmf,
    upper_curve_values,
)
from dpaudit.accounting.profiles import ExactAccounting
from dpaudit.core.checks import check_finite_parameter
from dpaudit.core.roundoff import (
    ELEMENTARY_ULPS,
    UNIT_ROUNDOFF,
    gaussian_survival_error,
    laplace_survival_error,
)

__all__ = ["SCHEMES", "SubsampledComponent", "subsampled_accounting", "subsampled_component"]

# Grid points whose survival error the density bound puts above this many u are bounded by
# the bracket instead (a few hundred points near t = log(1 - q) at DP-SGD's settings).
_BULK_ULPS = 64

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
            return np.where(t <= math.log1p(-q), 1.0, self._mixture(inner, True))
        high = t >= -math.log1p(-q)
        inner = _mix_inverse(np.where(high, 0.0, -t), q)
        return np.where(high, 0.0, self._mixture(inner, False))

    def _mixture(self, inner, forward: bool) -> np.ndarray:
        """The survival as a function of the base loss ``l = g^-1(+-t)`` (non-increasing)."""
        q = self.q
        if forward:  # P(l >= inner) under (1 - q) A + q B
            return (1 - q) * self.base.survival(inner, False) + q * self.base.survival(inner, True)
        return 1.0 - self.base.survival(inner, False)  # A(l < inner), increasing in inner

    def survival_error(self, t, values, forward: bool = True) -> float:
        """A bound on ``|values_k - S(t_k)|`` at every point, with ``t`` the floats of grid points.

        The base loss ``i = log(v / q)``, ``v = e^x - 1 + q`` (``x = t`` remove, ``-t`` add),
        of the exact grid point is located from the float computation: ``t`` is off by
        ``u |t|``, ``expm1`` and ``log`` by :data:`~dpaudit.core.roundoff.ELEMENTARY_ULPS`,
        each ``+``/``-`` by ``u``, so the float ``v`` is within
        ``w = 8 u (|expm1 x| + |x| (1 + |expm1 x|) + |v|)`` of the exact one. Where
        ``w <= v / 4`` the float ``i`` is within ``1.5 w / v + 5.01 u |i| + 8 u |log q|`` of the
        exact one and the survival, a function of ``i`` with density at most
        ``0.4 / mu`` (Gaussian base) or ``1/4`` (Laplace base, away from its atoms at
        ``+-a``), moves by at most that density times the distance. Elsewhere (near
        ``t = log(1 - q)``, where the law of ``L`` piles up, at the atoms and where the float
        comparisons put a point in the other branch) ``i`` is bracketed by the logarithms of
        ``v -+ w``, widened outwards, and the survival, monotone in ``i``, lies between its
        float values at the bracket's ends (also wherever the density bound exceeds 64 u,
        where the bracket is tighter). Every float survival value is within the base
        survival's error (:func:`~dpaudit.core.roundoff.gaussian_survival_error`,
        :func:`~dpaudit.core.roundoff.laplace_survival_error`) plus ``4 u`` (the mixture) of
        its exact value. ``docs/composition.md``, "Round-off of the lower pmfs".

        Args:
            t: the float grid points ``fl(k d)``.
            values: :meth:`survival` at ``t``.
            forward: remove (``True``) or add (``False``).

        Returns:
            The bound (the largest over the points).
        """
        t = np.asarray(t, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        q, unit, log_q = self.q, UNIT_ROUNDOFF, math.log(self.q)
        x = t if forward else -t
        grown = np.expm1(x)
        v = grown + q
        # ELEMENTARY_ULPS (= 4) u per elementary function plus the roundings, as 8 u
        spread = (4 + ELEMENTARY_ULPS) * unit * (np.abs(grown) + np.abs(x) * (1 + np.abs(grown)))
        spread += (4 + ELEMENTARY_ULPS) * unit * np.abs(v)
        bulk = v > 4 * spread
        with np.errstate(divide="ignore", invalid="ignore"):
            inner = np.log(np.where(bulk, v, 1.0)) - log_q
            # log v (ELEMENTARY_ULPS u of |log v| <= |i| + |log q|), log q, the difference
            width = 1.5 * spread / v + ELEMENTARY_ULPS * unit * (np.abs(inner) - 2 * log_q)
            width += 1.01 * unit * np.abs(inner)
        edge = math.log1p(-q)
        bulk &= (t > edge) if forward else (t < -edge)  # the float branch agrees
        if type(self.base) is GaussianComponent:
            density, base = 0.4 / self.base.mu, gaussian_survival_error(self.base.mu)
        else:
            density, base = 0.25, laplace_survival_error()
            a = float(self.base.a)
            bulk &= (np.abs(inner - a) > 2 * width) & (np.abs(inner + a) > 2 * width)
        bulk &= density * width <= _BULK_ULPS * unit  # else the bracket is tighter
        gap = float(np.max(density * width[bulk], initial=0.0))
        rest = ~bulk
        if np.any(rest):
            gap = max(gap, self._bracket_gap(x[rest], v[rest], spread[rest], values[rest], forward))
        return 1.01 * (gap + base + 4 * unit) + unit

    def _bracket_gap(self, x, v, spread, values, forward: bool) -> float:
        """Largest distance from ``values`` to the float survival at the ends of the brackets."""
        unit, log_q = UNIT_ROUNDOFF, math.log(self.q)
        ends = []
        for w, side in (
            ((v - spread) * (1 - 4 * unit), -np.inf),
            ((v + spread) * (1 + 4 * unit), np.inf),
        ):
            positive = w > 0
            with np.errstate(divide="ignore", invalid="ignore"):
                log_w = np.log(np.where(positive, w, 1.0))
                inner = log_w - log_q
                width = (4 + ELEMENTARY_ULPS) * unit * (np.abs(log_w) - log_q + np.abs(inner))
                inner = np.nextafter(inner + math.copysign(1.0, side) * (width + 1e-300), side)
            ends.append(np.where(positive, inner, -np.inf))
        high_end, low_end = self._mixture(ends[0], forward), self._mixture(ends[1], forward)
        if not forward:  # the add survival increases with the base loss
            high_end, low_end = low_end, high_end
        return max(float(np.max(high_end - values)), float(np.max(values - low_end)), 0.0)

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
        offset, probs, _ = self.lower_pmf_bounded(discretization, tail, forward)
        return offset, probs

    def lower_pmf_bounded(self, discretization: float, tail: float, forward: bool = True):
        """:meth:`lower_pmf` and a bound on its round-off (tail distance to the exact pmf).

        Args:
            discretization: grid spacing.
            tail: mass allowed below the grid (dropped).
            forward: remove (``True``) or add (``False``).

        Returns:
            ``(offset, probs, error)``: the survival values' error (:meth:`survival_error`)
            carried to the pmf by :func:`~dpaudit.accounting.composition.rounded_down_error`.
        """
        if self.symmetric:
            return 0, np.ones(1), 0.0
        lo, hi = self._range(tail, forward)
        k_lo, k_hi = math.floor(lo / discretization), math.floor(hi / discretization)
        seen = {}

        def survival(t):
            seen["t"], seen["values"] = t, self.survival(t, forward)
            return seen["values"]

        offset, probs = rounded_down_pmf(survival, k_lo, max(k_hi, k_lo), discretization)
        error = self.survival_error(seen["t"], seen["values"], forward)
        return offset, probs, rounded_down_error(error)


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
