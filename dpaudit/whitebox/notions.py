r"""A notion claim judged on one pair of release laws: verdict, tightest and certified parameters.

:func:`evaluate_notion` reads what a white-box audit produced — the exact accounting
of the pair (when the noise structure allows), the kept Monte Carlo losses of both
directions and the simultaneous confidence bounds of their hockey-stick curves — and
decides the claim in its own notion:

* **rho-zCDP / RDP** on the Rényi profile (:mod:`dpaudit.accounting.renyi`): *pass* when
  the exact (or certified upper) ``D_alpha`` is within the claim at every order the
  claim constrains (for zCDP all ``alpha > 1``: ``sup_alpha D_alpha / alpha <= rho``,
  bounded between grid orders by monotonicity of ``D_alpha``); *violation* when the
  exact ``D_alpha`` or its certified Monte Carlo lower bound (truncated moment,
  Bernstein, Bonferroni over orders and directions) exceeds the claim at some order.
* **mu-GDP / f-DP** on the trade-off curve, through its dual hockey-stick profile
  (:mod:`dpaudit.accounting.tradeoff`): *pass* when the exact/numerical upper profile is
  below the claim's lower profile between every two grid points (so everywhere);
  *violation* when the exact lower profile or a Monte Carlo lower bound (simultaneous
  over the grid and both directions) exceeds the claim's upper profile somewhere.
* Otherwise *inconclusive*. A Monte Carlo pass is never issued (sampling cannot bound
  a Rényi divergence or a whole curve from above).

The tightest parameter of the claimed notion for the pair (smallest rho, smallest mu,
``epsilon(alpha)`` per order) is reported exactly or as a bracket, and the certified
lower bound on it at the stated confidence.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np
import scipy.special

from dpaudit.accounting.composition import LaplaceComponent, SupremumComponent
from dpaudit.accounting.conversions import gdp_delta, gdp_tradeoff
from dpaudit.accounting.profiles import ExactAccounting
from dpaudit.accounting.renyi import (
    LAPLACE_RENYI_RTOL,
    PROFILE_ORDERS,
    composition_renyi,
    renyi_bounds,
)
from dpaudit.accounting.tradeoff import pair_profile, pair_tradeoff, profile_grid
from dpaudit.core.roundoff import gamma, gaussian_delta_error
from dpaudit.core.serialize import jsonable
from dpaudit.estimation.renyi import monte_carlo_renyi_lower
from dpaudit.model.claims import GDPClaim, RDPClaim, TradeoffClaim, ZCDPClaim

__all__ = [
    "NotionAudit",
    "ParameterBracket",
    "RenyiProfile",
    "TradeoffProfile",
    "composed_rho_bracket",
    "evaluate_notion",
    "gdp_mu_for_delta",
    "renyi_tolerance",
    "zcdp_rho_bracket",
]

#: Whether the kept Monte Carlo losses feed certified Renyi lower bounds into the verdict.
#: On: the kept losses are the audit's own i.i.d. draws under P, bit-identical whatever ran
#: before in the process (tests/whitebox/test_process_history.py), and the bound is
#: calibrated at every order (tests/accounting/test_renyi_profiles.py). The bounds once seen
#: above the exact D_alpha in a golden run (0.74 > 0.513, 2.93 > 0.625) were those of a
#: mutant without the 1 / (alpha - 1), on the same losses; False turns the route off.
MONTE_CARLO_RENYI = True
#: Orders of the grid bounding ``sup_alpha D_alpha / alpha``: 1 + 1e-6 ... 1 + 1e4.
_RHO_ORDERS = 1.0 + np.geomspace(1e-6, 1e4, 600)
#: Orders of the lower end of a composition's rho bracket (exact profiles at each).
_RHO_LOWER_ORDERS = np.array([*PROFILE_ORDERS, 128.0, 256.0, 512.0, 1024.0])
#: Type I errors at which trade-off curves are tabulated in the record.
_TRADEOFF_X = np.unique(np.concatenate([[0.0], np.geomspace(1e-6, 1.0, 120)]))


class ParameterBracket(NamedTuple):
    """The pair's smallest notion parameter, bracketed (equal ends when exact).

    Attributes:
        lower: the lower end (an array per order for RDP).
        upper: the upper end.
    """

    lower: Any
    upper: Any


class RenyiProfile(NamedTuple):
    """The Rényi profile a zCDP / RDP verdict rests on, per order.

    Attributes:
        orders: the orders ``alpha``.
        exact_lower, exact_upper: the exact/numerical divergences, or ``None``.
        monte_carlo_lower: certified Monte Carlo lower bounds.
        claimed: the claimed divergences.
    """

    orders: Any
    exact_lower: Any
    exact_upper: Any
    monte_carlo_lower: Any
    claimed: Any

    def to_dict(self) -> dict:
        """The fields as a dict, in order.

        Returns:
            The dict.
        """
        return self._asdict()


class TradeoffProfile(NamedTuple):
    """The trade-off curves a GDP / f-DP verdict rests on.

    Attributes:
        x: the type I errors.
        exact_lower, exact_upper: the pair's exact/numerical trade-off bracket, or ``None``.
        claimed: the claimed trade-off at ``x``.
        monte_carlo_epsilons, monte_carlo_delta_lower: the Monte Carlo lower bounds of the
            hockey-stick curve (``None`` without curves).
    """

    x: Any
    exact_lower: Any
    exact_upper: Any
    claimed: Any
    monte_carlo_epsilons: Any = None
    monte_carlo_delta_lower: Any = None

    def to_dict(self) -> dict:
        """The fields as a dict, in order, without the Monte Carlo ones when absent.

        Returns:
            The dict.
        """
        out = self._asdict()
        if self.monte_carlo_epsilons is None:
            del out["monte_carlo_epsilons"], out["monte_carlo_delta_lower"]
        return out


@dataclasses.dataclass(frozen=True)
class NotionAudit:
    """The verdict on a notion claim for one pair, and what it rests on.

    Attributes:
        notion: ``"zcdp"``, ``"rdp"``, ``"gdp"`` or ``"f-dp"``.
        claim: the claim in words (``"0.5-zCDP"``).
        verdict: ``"pass"``, ``"violation"`` or ``"inconclusive"``.
        parameter: the notion's parameter (``"rho"``, ``"mu"``, ``"epsilon(alpha)"``) or ``None``.
        tightest: the pair's smallest parameter, a :class:`ParameterBracket` (equal ends
            when exact; arrays per order for RDP), or ``None`` (JSON ``{}``).
        certified: certified lower bound on the parameter at ``confidence`` (list for RDP).
        confidence: confidence of the Monte Carlo bounds.
        conversion: the conversion of the claim to (epsilon, delta) used.
        profile: the :class:`RenyiProfile` or the :class:`TradeoffProfile`.
        notes: sentences qualifying the verdict.
    """

    notion: str
    claim: str
    verdict: str
    parameter: str | None
    tightest: ParameterBracket | None
    certified: float | list | None
    confidence: float
    conversion: str
    profile: RenyiProfile | TradeoffProfile
    notes: tuple

    def to_dict(self) -> dict:
        """A JSON-able dict of the fields (arrays as lists, infinities as strings).

        Returns:
            The dict.
        """
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["tightest"] = {} if self.tightest is None else self.tightest._asdict()
        fields["profile"] = self.profile.to_dict()
        return jsonable(fields)


def zcdp_rho_bracket(accounting) -> tuple[float, float] | None:
    """Bracket of ``sup_{alpha > 1} D_alpha / alpha`` (the pair's smallest zCDP rho).

    ``D_alpha`` is non-decreasing in ``alpha``: on ``[a_i, a_{i+1}]`` the ratio is at most
    ``D(a_{i+1}) / a_i``; below the grid at most ``D(a_0)``; above it at most
    ``sup L / a_last`` (``D_alpha <= sup L``). Compositions with Gaussian or subsampled
    Gaussian components: :func:`composed_rho_bracket`.

    Args:
        accounting: exact accounting of the pair, or ``None``.

    Returns:
        ``(lower, upper)``, or ``None`` when nothing is known.
    """
    if accounting is None:
        return None
    if accounting.family == "gaussian":
        rho = float(accounting.mu) ** 2 / 2.0
        return rho, rho
    if accounting.family == "singular":
        return math.inf, math.inf
    if accounting.family == "supremum":
        s = float(accounting.sup_loss)
        return 0.0, s * s / 2.0  # Bun & Steinke Prop. 3.3 (the sup of min(s, a s^2/2) / a)
    if accounting.family == "composed" or getattr(accounting, "laplace_parameters", None) is None:
        components = getattr(accounting, "components", None)
        return None if components is None else composed_rho_bracket(components)
    low_d, up_d = renyi_bounds(_RHO_ORDERS, accounting)
    a = _RHO_ORDERS
    lower = float(np.max(low_d / a))
    upper = max(
        float(np.max(up_d[1:] / a[:-1])),
        float(up_d[0]),
        float(accounting.sup_loss) / float(a[-1]),
    )
    return lower, max(lower, upper)


def composed_rho_bracket(components) -> tuple[float, float] | None:
    """Bracket of the smallest zCDP rho of a composition (``ExactAccounting.components``).

    Upper: rho adds over the composition, and each part's rho is at most ``mu^2 / 2``
    for a Gaussian or Poisson-subsampled Gaussian (``D_alpha`` of a mixture is at most
    the base's ``alpha mu^2 / 2`` by quasi-convexity; the add direction is smaller), the
    grid bracket of :func:`zcdp_rho_bracket` for the Laplace parts together, ``s^2 / 2``
    for a supremum-only part. Lower: ``max D_alpha / alpha`` over :data:`_RHO_LOWER_ORDERS`
    of the exact composed profile (a subsampled Gaussian reaches ``mu^2 / 2`` only as
    ``alpha -> inf``, so the bracket is not a point then).

    Args:
        components: ``(component, count)`` pairs.

    Returns:
        ``(lower, upper)``, or ``None`` when a component has no known Rényi profile.
    """
    bounds = composition_renyi(_RHO_LOWER_ORDERS, components)
    if bounds is None:
        return None
    lower = float(np.max(bounds[0] / _RHO_LOWER_ORDERS))
    upper, laplace = 0.0, []
    for component, count in components:
        if isinstance(component, LaplaceComponent):
            laplace += [component.a] * int(count)
        elif isinstance(component, SupremumComponent):
            upper += count * float(component.epsilon) ** 2 / 2.0
        else:  # Gaussian, or Poisson-subsampled Gaussian (composition_renyi checked it)
            mu = float(getattr(component, "base", component).mu)
            upper += count * mu * mu / 2.0
    if laplace:
        a = np.asarray(laplace, dtype=np.float64)
        part = ExactAccounting(family="laplace", sup_loss=math.fsum(a), laplace_parameters=a)
        upper += zcdp_rho_bracket(part)[1]
    return lower, max(lower, upper * (1 + 1e-12))


def gdp_mu_for_delta(epsilon: float, delta: float) -> float:
    """The ``mu`` with ``delta_mu(epsilon) = delta`` (``delta_mu`` increases with ``mu``).

    Args:
        epsilon: an epsilon ``>= 0``.
        delta: a delta.

    Returns:
        ``0`` for ``delta <= delta_0(epsilon)``, ``inf`` for ``delta >= 1``, else the root.
    """
    import scipy.optimize

    if delta <= 0.0 or (epsilon > 0 and delta <= 0.0):
        return 0.0
    if delta >= 1.0:
        return math.inf

    def f(mu):
        return float(gdp_delta(epsilon, mu)) - delta

    lo, hi = 1e-12, 1.0
    if f(lo) >= 0:
        return 0.0
    while f(hi) < 0:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    return float(scipy.optimize.brentq(f, lo, hi, xtol=1e-13, rtol=1e-13))


def _renyi_claimed(claim, orders) -> np.ndarray:
    return claim.renyi_bound(orders)


def renyi_tolerance(accounting, orders, claimed) -> np.ndarray:
    """How far an exact ``D_alpha`` (or ``D_alpha / alpha``) may exceed a claim that holds.

    The error bound of the computation behind it (:mod:`dpaudit.core.roundoff`): for Gaussian
    noise ``D_alpha = alpha mu^2 / 2`` moves by at most ``alpha (mu e + e^2 / 2)`` for an
    error ``e`` of ``mu``; for Laplace noise ``D_alpha`` is 1-Lipschitz in each ``a_j`` (the
    loss ``|u + a| - |u|`` is), so it moves by at most the supremum's error; the profile's
    own evaluation is bracketed already (:func:`~dpaudit.accounting.renyi.renyi_bounds`), and
    the comparison adds the rounding of the claimed value.

    Args:
        accounting: the pair's exact accounting, or ``None``.
        orders: the orders ``alpha`` (``1`` for a tolerance on ``rho``, which is divided
            by ``alpha`` already).
        claimed: the claimed values at those orders.

    Returns:
        The tolerance per order.
    """
    orders = np.asarray(orders, dtype=np.float64)
    out = gamma(4) * np.abs(np.asarray(claimed, dtype=np.float64))
    if accounting is None:
        return out
    if accounting.family == "gaussian" and accounting.mu:
        e = float(getattr(accounting, "mu_error", None) or 0.0)
        return out + orders * (float(accounting.mu) * e + e * e / 2.0)
    if accounting.family == "laplace":
        return out + float(getattr(accounting, "sup_loss_error", None) or 0.0)
    return out


def _renyi_evidence(claim, accounting, directions, confidence):
    """Orders, exact bounds, Monte Carlo lower bounds and the claimed bound of the profile."""
    if isinstance(claim, RDPClaim):
        orders = np.asarray(claim.orders, dtype=np.float64)
    else:
        orders = np.asarray(PROFILE_ORDERS, dtype=np.float64)
    exact = renyi_bounds(orders, accounting)
    per = (1.0 - confidence) / (2.0 * orders.size)  # Bonferroni: orders x directions
    mc = np.zeros(orders.shape)
    if MONTE_CARLO_RENYI:
        for d in directions:
            mc = np.maximum(mc, monte_carlo_renyi_lower(d.losses, orders, per))
    return orders, exact, mc, _renyi_claimed(claim, orders)


def _renyi_verdict(claim, accounting, directions, confidence) -> NotionAudit:
    """The zCDP / RDP verdict (module docstring)."""
    orders, exact, mc, claimed = _renyi_evidence(claim, accounting, directions, confidence)
    notes = []
    exact_low = exact[0] if exact is not None else np.zeros(orders.shape)
    tolerance = renyi_tolerance(accounting, orders, claimed)
    exact_viol = bool(np.any(exact_low > claimed + tolerance))
    mc_viol = bool(np.any(mc > claimed))
    certified_d = np.maximum(exact_low, mc)
    if isinstance(claim, ZCDPClaim):
        bracket = zcdp_rho_bracket(accounting)
        rho_tol = float(renyi_tolerance(accounting, 1.0, claim.rho))
        width = 0.0 if bracket is None else 2 * LAPLACE_RENYI_RTOL * bracket[1]
        passed = bracket is not None and bracket[1] <= claim.rho + rho_tol + width
        # The bracket's lower end is an exact D_alpha / alpha at some order (possibly
        # beyond the profile's orders: a subsampled Gaussian's sup is reached at infinity).
        exact_viol = exact_viol or (bracket is not None and bracket[0] > claim.rho + rho_tol)
        tightest = None if bracket is None else ParameterBracket(bracket[0], bracket[1])
        certified = float(np.max(certified_d / orders))
        if bracket is not None:
            certified = max(certified, bracket[0])
        parameter = "rho"
    else:
        # the bracket's round-off width: a claim at exactly the computed value passes
        width = 0.0 if exact is None else 2 * LAPLACE_RENYI_RTOL * np.abs(exact[1])
        passed = exact is not None and bool(np.all(exact[1] <= claimed + tolerance + width))
        tightest = None if exact is None else ParameterBracket(exact[0], exact[1])
        certified = certified_d.tolist()
        parameter = "epsilon(alpha)"
    verdict = "violation" if exact_viol or mc_viol else ("pass" if passed else "inconclusive")
    if mc_viol and not exact_viol:
        notes.append(
            f"violation certified by the Monte Carlo lower bound on a Renyi divergence "
            f"(truncated moment, empirical Bernstein) at confidence {confidence:g}."
        )
    if verdict == "inconclusive" and exact is None:
        notes.append(
            "no exact accounting for this pair: Monte Carlo bounds Renyi divergences from "
            "below only, so the claim can be refuted but not confirmed."
        )
    profile = RenyiProfile(
        orders=orders,
        exact_lower=None if exact is None else exact[0],
        exact_upper=None if exact is None else exact[1],
        monte_carlo_lower=mc,
        claimed=claimed,
    )
    return _record(claim, verdict, parameter, tightest, certified, confidence, profile, notes)


def _record(claim, verdict, parameter, tightest, certified, confidence, profile, notes):
    return NotionAudit(
        notion=claim.notion,
        claim=claim.describe(),
        verdict=verdict,
        parameter=parameter,
        tightest=tightest,
        certified=certified,
        confidence=confidence,
        conversion=claim.conversion,
        profile=profile,
        notes=tuple(notes),
    )


def _curves_lower(curves) -> tuple[np.ndarray, np.ndarray] | None:
    """Epsilon grid and the Monte Carlo lower bounds of delta (max over directions)."""
    if curves is None or "epsilons" not in curves:
        return None
    grid = np.asarray(curves["epsilons"], dtype=np.float64)
    lower = np.zeros(grid.shape)
    for key in ("D->D'", "D'->D"):
        if key in curves:
            lower = np.maximum(lower, np.asarray(curves[key]["lower"], dtype=np.float64))
    return grid, lower


def _tradeoff_pass(claim, accounting) -> bool:
    """Whether the exact/numerical profile of the pair lies inside the claim everywhere."""
    if accounting is None or accounting.family == "singular":
        return False
    if accounting.family == "gaussian":
        mu = float(accounting.mu)
        if isinstance(claim, GDPClaim):
            return mu <= claim.mu + gamma(2) * claim.mu + float(accounting.mu_error or 0.0)
        # G_mu is convex: its tangent at x_(i+1) lies below it on [x_i, x_(i+1)], and the
        # claimed f lies below its chord there; both are lines, so comparing them at the
        # two ends shows G_mu >= f on the interval.
        x, f = np.asarray(claim.points), np.asarray(claim.values)
        g = gdp_tradeoff(x[1:], mu)
        slope = -np.exp(mu * scipy.special.ndtri(1.0 - x[1:]) - mu * mu / 2.0)
        at_left = g + slope * (x[:-1] - x[1:])
        return bool(np.all(g >= f[1:] - 1e-12) and np.all(at_left >= f[:-1] - 1e-12))
    grid = profile_grid(accounting)
    _, upper = pair_profile(accounting, grid)
    claim_low, _ = claim.delta_bracket(grid)
    # delta is non-increasing: on [e_i, e_(i+1)] the pair is below upper(e_i) and the
    # claim above claim_low(e_(i+1)); beyond the grid the pair's delta is 0 (its supremum).
    return bool(np.all(upper[:-1] <= claim_low[1:] + gamma(4) * claim_low[1:]))


def _profile_tolerance(accounting, grid, claimed) -> np.ndarray:
    """How far the exact lower profile may exceed a claim that holds (its error bound).

    Gaussian: the closed form's error at the computed ``mu``
    (:func:`dpaudit.core.roundoff.gaussian_delta_error`); a numerical lower curve is a lower
    bound after its round-off margin already, so only the comparison's rounding is left.
    """
    out = gamma(4) * np.asarray(claimed, dtype=np.float64)
    if accounting.family == "gaussian" and accounting.mu:
        mu_error = float(accounting.mu_error or 0.0)
        eps = np.abs(np.asarray(grid, dtype=np.float64))
        out = out + gaussian_delta_error(eps, float(accounting.mu), mu_error)
    return out


def _mu_bracket(accounting) -> tuple[float, float] | None:
    """The pair's smallest GDP mu: exact for Gaussian, a grid bracket otherwise."""
    if accounting is None:
        return None
    if accounting.family == "gaussian":
        return float(accounting.mu), float(accounting.mu)
    if accounting.family == "singular":
        return math.inf, math.inf
    grid = profile_grid(accounting, points=161)
    grid = grid[grid >= 0]
    low, up = pair_profile(accounting, grid)
    lower = max(gdp_mu_for_delta(e, d) for e, d in zip(grid, low, strict=True))
    upper = max(gdp_mu_for_delta(e, d) for e, d in zip(grid[1:], up[:-1], strict=True))
    return lower, max(lower, upper)


def _tradeoff_verdict(claim, accounting, curves, confidence) -> NotionAudit:
    """The GDP / f-DP verdict (module docstring)."""
    notes = []
    exact_viol = False
    # A tabulated f carries float64 round-off (values near 1 to ~1e-16, slopes between close
    # points far worse), so its profile is trusted to 1e-12 only; G_mu is a closed form.
    slack = 1e-15 if isinstance(claim, GDPClaim) else 1e-12
    if accounting is not None:
        grid = profile_grid(accounting)
        low, _ = pair_profile(accounting, grid)
        claim_up = claim.delta_bracket(grid)[1]
        tolerance = _profile_tolerance(accounting, grid, claim_up)
        exact_viol = bool(np.any(low > claim_up + tolerance + slack))
    mc = _curves_lower(curves)
    mc_viol = mc is not None and bool(np.any(mc[1] > claim.delta_bracket(mc[0])[1] + slack))
    passed = _tradeoff_pass(claim, accounting)
    verdict = "violation" if exact_viol or mc_viol else ("pass" if passed else "inconclusive")
    if mc_viol and not exact_viol:
        notes.append(
            "violation certified by the Monte Carlo lower bounds of the hockey-stick curve "
            f"(simultaneous over the grid and both directions) at confidence {confidence:g}."
        )
    x = _TRADEOFF_X
    exact_t = pair_tradeoff(accounting, x)
    profile = TradeoffProfile(
        x=x,
        exact_lower=None if exact_t is None else exact_t[0],
        exact_upper=None if exact_t is None else exact_t[1],
        claimed=claim.tradeoff(x),
        monte_carlo_epsilons=None if mc is None else mc[0],
        monte_carlo_delta_lower=None if mc is None else mc[1],
    )
    if not isinstance(claim, GDPClaim):
        return _record(claim, verdict, None, None, None, confidence, profile, notes)
    bracket = _mu_bracket(accounting)
    tightest = None if bracket is None else ParameterBracket(bracket[0], bracket[1])
    certified = 0.0 if bracket is None else bracket[0]
    if mc is not None:
        pos = mc[0] >= 0
        mus = [gdp_mu_for_delta(e, d) for e, d in zip(mc[0][pos], mc[1][pos], strict=True)]
        certified = max([certified, *mus])
    return _record(claim, verdict, "mu", tightest, certified, confidence, profile, notes)


def evaluate_notion(claim, accounting, directions, curves, confidence: float) -> NotionAudit:
    """Judge a notion claim on one pair from a white-box audit's evidence.

    Args:
        claim: a :class:`ZCDPClaim`, :class:`RDPClaim`, :class:`GDPClaim` or :class:`TradeoffClaim`.
        accounting: the pair's exact accounting, or ``None``.
        directions: the two direction results (their kept ``losses`` are used).
        curves: the audit's ``curves`` dict (simultaneous Monte Carlo bounds), or ``None``.
        confidence: ``1 - alpha`` of the Monte Carlo bounds.

    Returns:
        A :class:`NotionAudit`.

    Raises:
        TypeError: for a claim that is not a notion claim.
    """
    if isinstance(claim, ZCDPClaim | RDPClaim):
        return _renyi_verdict(claim, accounting, directions, confidence)
    if isinstance(claim, GDPClaim | TradeoffClaim):
        return _tradeoff_verdict(claim, accounting, curves, confidence)
    raise TypeError(f"evaluate_notion needs a notion claim, got {type(claim).__name__}.")
