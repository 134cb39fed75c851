r"""Claims in the privacy notions beyond ``(epsilon, delta)``-DP, frozen and validated like ``Claim``.

* :class:`ZCDPClaim` — rho-zero-concentrated DP (Bun & Steinke 2016):
  ``D_alpha(P_D || P_D') <= rho alpha`` for every order ``alpha > 1``.
* :class:`RDPClaim` — Rényi DP (Mironov 2017) at one or several orders:
  ``D_alpha(P_D || P_D') <= epsilon(alpha)`` at each order given.
* :class:`GDPClaim` — mu-Gaussian DP (Dong, Roth & Su 2022): the trade-off curve of
  every neighbouring pair lies above ``G_mu``.
* :class:`TradeoffClaim` — general f-DP, by a trade-off function tabulated on ``[0, 1]``.

Each is a claim about *every* neighbouring pair, in both directions, under its
``adjacency``; each carries the sensitivity fields and reference of
:class:`~dpaudit.Claim`, converts to the ``(epsilon, delta)`` profile it implies
(:meth:`delta_implied`, :meth:`epsilon_implied`, and :attr:`conversion` says which
conversion, exact or not; :mod:`dpaudit.accounting.conversions`), and reads as the
``(epsilon, delta)`` point it implies at ``anchor_delta`` (``claim.epsilon``,
``claim.delta``, :meth:`as_dp`), which is how the ``(epsilon, delta)`` parts of the
pipelines see it. :func:`make_claim` builds the right record from the fields of a
spec's ``[claim]`` table and refuses a table that mixes notions.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

import numpy as np

from dpaudit.accounting.conversions import (
    gdp_delta,
    gdp_epsilon,
    gdp_tradeoff,
    rdp_delta,
    rdp_epsilon,
    tradeoff_delta_bounds,
    zcdp_delta,
    zcdp_epsilon,
)
from dpaudit.accounting.libraries import (
    accountant_adjacency,
    as_accountant,
    check_accountant_delta,
    epsilon_at,
)
from dpaudit.core.checks import check_probability
from dpaudit.core.serialize import jsonable
from dpaudit.model.adjacency import ADJACENCIES

__all__ = [
    "CLAIM_FIELDS",
    "NOTIONS",
    "SENSITIVITY_NORMS",
    "Claim",
    "GDPClaim",
    "RDPClaim",
    "TradeoffClaim",
    "ZCDPClaim",
    "certified_lower_text",
    "claim_label",
    "is_notion_claim",
    "make_claim",
    "notion_bound_text",
    "notion_certified_text",
    "notion_fields",
    "notion_of",
    "notion_record",
    "notion_summary_lines",
]

#: Norms in which a claim's sensitivity may be stated.
#: ``rkhs`` is the RKHS norm of the noise kernel (HRW); ``cameron-martin`` is
#: ``||h||_C`` of the noise covariance (MRS); ``one-c`` is ``||h||_{1,C}`` (LR);
#: ``l1``/``l2``/``linf`` are the usual vector norms of the release coordinates.
SENSITIVITY_NORMS = ("rkhs", "cameron-martin", "one-c", "l1", "l2", "linf")


@dataclasses.dataclass(frozen=True)
class Claim:
    """What a mechanism claims: ``(epsilon, delta)``-DP under an adjacency relation.

    Fields never change meaning (compare dp_accounting's ``DpEvent``).

    Args:
        epsilon: claimed epsilon (finite, ``>= 0``; ``0`` only with ``delta > 0``: a
            pure-delta claim ``P_D(A) <= P_D'(A) + delta``, audited black-box only).
        delta: claimed delta (``0`` for a pure-epsilon claim, else in ``(0, 1)``).
        adjacency: ``"replace-one"`` or ``"add-remove"``.
        sensitivity_norm: the norm of :data:`SENSITIVITY_NORMS` in which the
            sensitivity was bounded, or ``None`` when the guarantee does not
            rest on a sensitivity (e.g. the sparse vector technique).
        sensitivity: the bound on ``||f_D - f_D'||`` used to calibrate the
            noise (``None`` exactly when ``sensitivity_norm`` is ``None``).
        reference: the paper and theorem the guarantee rests on.

    Raises:
        ValueError / TypeError: with one sentence naming the bad field.
    """

    epsilon: float
    delta: float = 0.0
    adjacency: str = "replace-one"
    sensitivity_norm: str | None = None
    sensitivity: float | None = None
    reference: str = ""

    def __post_init__(self):
        if isinstance(self.epsilon, bool) or not isinstance(
            self.epsilon, (int, float, np.floating, np.integer)
        ):
            raise TypeError(f"Claim epsilon must be a number, got {type(self.epsilon).__name__}.")
        epsilon = float(self.epsilon)
        if not (math.isfinite(epsilon) and epsilon >= 0):
            raise ValueError(f"Claim epsilon must be a finite number >= 0, got {epsilon!r}.")
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(
            self, "delta", check_probability("Claim delta", self.delta, allow_zero=True)
        )
        if epsilon == 0 and self.delta == 0:  # (0, 0)-DP: the release ignores the data
            raise ValueError(
                "Claim epsilon = 0 needs a delta > 0 (a pure-delta claim); epsilon = delta = 0 "
                "would claim the release does not depend on the data."
            )
        if self.adjacency not in ADJACENCIES:
            raise ValueError(
                f"Claim adjacency must be one of {ADJACENCIES}, got {self.adjacency!r}."
            )
        if (self.sensitivity_norm is None) != (self.sensitivity is None):
            raise ValueError(
                "Claim sensitivity and sensitivity_norm go together: give both (the bound and "
                "the norm it is measured in) or neither."
            )
        if self.sensitivity_norm is not None:
            if self.sensitivity_norm not in SENSITIVITY_NORMS:
                raise ValueError(
                    f"Claim sensitivity_norm must be one of {SENSITIVITY_NORMS}, got "
                    f"{self.sensitivity_norm!r}."
                )
            sensitivity = float(self.sensitivity)
            if not (math.isfinite(sensitivity) and sensitivity > 0):
                raise ValueError(
                    f"Claim sensitivity must be a finite number > 0, got {sensitivity!r}."
                )
            object.__setattr__(self, "sensitivity", sensitivity)
        if not isinstance(self.reference, str):
            raise TypeError("Claim reference must be a string naming the paper and theorem.")

    @property
    def pure(self) -> bool:
        """Whether the claim is pure epsilon-DP.

        Returns:
            True when ``delta == 0``.
        """
        return self.delta == 0.0

    @classmethod
    def from_dp_accounting(cls, accountant_or_event, delta: float | None = None) -> Claim:
        """The claim a dp_accounting accountant (or a ``DpEvent``) states: epsilon at ``delta``.

        Args:
            accountant_or_event: a dp_accounting ``PrivacyAccountant`` (PLD or RDP, after
                its ``compose`` calls) or a ``DpEvent`` (accounted with a PLD accountant,
                pessimistic as dp_accounting's default).
            delta: the delta of the claim (required: an accountant states a curve).

        Returns:
            ``Claim(epsilon = accountant.get_epsilon(delta), delta)``, its adjacency the
            accountant's neighbouring relation (add/remove by default). For the whole
            ``delta(epsilon)`` curve, see :func:`dpaudit.adapters.accountants.profile_claim`.

        Raises:
            ValueError: for a missing delta or one outside ``(0, 1)``, an event no
                accountant supports, a relation without a dpaudit adjacency, or no finite
                epsilon at ``delta``.
            TypeError: for an object that is neither an accountant nor a ``DpEvent``.
        """
        delta = check_accountant_delta(delta)
        accountant = as_accountant(accountant_or_event)
        return cls(
            epsilon=epsilon_at(accountant, delta),
            delta=delta,
            adjacency=accountant_adjacency(accountant),
            reference=f"dp_accounting {type(accountant).__name__}.get_epsilon({delta:g})",
        )


#: The notions a claim may be stated in; ``"dp"`` is :class:`~dpaudit.Claim`.
NOTIONS = ("dp", "zcdp", "rdp", "gdp", "f-dp")
#: The fields of a spec's ``[claim]`` table that state each notion's parameter.
CLAIM_FIELDS: Mapping[str, tuple[str, ...]] = {
    "dp": ("epsilon", "delta"),
    "zcdp": ("zcdp_rho",),
    "rdp": ("rdp_orders", "rdp_epsilons"),
    "gdp": ("gdp_mu",),
    "f-dp": ("tradeoff_points", "tradeoff_values"),
}
#: The delta at which a notion claim reads as an (epsilon, delta) point by default.
DEFAULT_ANCHOR_DELTA = 1e-5
#: Tolerance of the trade-off checks (convex, non-increasing, below 1 - x): tabulated
#: values carry float64 round-off of a few ulps, far below 1e-9.
_TRADEOFF_TOL = 1e-9
#: Points of the default grid a trade-off function is tabulated on: geometric towards
#: both ends, since small deltas are decided by f near x = 0 (where G_mu is steepest).
_TRADEOFF_POINTS = 1025


def _positive(owner: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner} {name} must be a number, got {type(value).__name__}.")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{owner} {name} must be a finite number > 0, got {value!r}.")
    return value


def _check_common(claim) -> None:
    """Validate adjacency, sensitivity, reference and anchor delta through ``Claim``'s checks."""
    Claim(
        epsilon=1.0,
        delta=claim.anchor_delta if isinstance(claim.anchor_delta, float | int) else 0.5,
        adjacency=claim.adjacency,
        sensitivity_norm=claim.sensitivity_norm,
        sensitivity=claim.sensitivity,
        reference=claim.reference,
    )
    anchor = _positive(type(claim).__name__, "anchor_delta", claim.anchor_delta)
    if not anchor < 1:
        raise ValueError(f"{type(claim).__name__} anchor_delta must lie in (0, 1), got {anchor!r}.")
    object.__setattr__(claim, "anchor_delta", anchor)
    if claim.sensitivity is not None:
        object.__setattr__(claim, "sensitivity", float(claim.sensitivity))


class _NotionMixin:
    """What every notion claim offers: the implied (epsilon, delta) profile and its anchor."""

    notion: str
    anchor_delta: float

    @property
    def epsilon(self) -> float:
        """The epsilon the claim implies at :attr:`anchor_delta` (its (epsilon, delta) reading)."""
        return self.epsilon_implied(self.anchor_delta)

    @property
    def delta(self) -> float:
        """:attr:`anchor_delta`: the delta of the claim's (epsilon, delta) reading."""
        return self.anchor_delta

    @property
    def pure(self) -> bool:
        """Always False: none of these notions implies pure epsilon-DP."""
        return False

    def as_dp(self) -> Claim:
        """The ``(epsilon, delta)`` claim implied at :attr:`anchor_delta`.

        Returns:
            A :class:`~dpaudit.Claim` with this claim's adjacency, sensitivity and reference.
        """
        return Claim(
            epsilon=self.epsilon,
            delta=self.anchor_delta,
            adjacency=self.adjacency,
            sensitivity_norm=self.sensitivity_norm,
            sensitivity=self.sensitivity,
            reference=self.reference,
        )

    def describe(self) -> str:
        """One line for tables and reports, e.g. ``"0.5-zCDP"``."""
        return self.notion

    def delta_implied(self, epsilon) -> np.ndarray:
        """A ``delta(epsilon)`` every mechanism meeting the claim satisfies (see :attr:`conversion`).

        Args:
            epsilon: epsilon(s).

        Returns:
            The implied delta, shaped like ``epsilon``.
        """
        raise NotImplementedError

    def epsilon_implied(self, delta: float) -> float:
        """The epsilon the claim implies at ``delta`` (see :attr:`conversion`).

        Args:
            delta: a delta in ``(0, 1)``.

        Returns:
            The implied epsilon.
        """
        raise NotImplementedError


_COMMON_DOC = """
        adjacency, sensitivity_norm, sensitivity, reference: as in :class:`~dpaudit.Claim`.
        anchor_delta: the delta at which the claim reads as an (epsilon, delta) point."""


@dataclasses.dataclass(frozen=True)
class ZCDPClaim(_NotionMixin):
    """rho-zCDP: ``D_alpha(P_D || P_D') <= rho alpha`` for all ``alpha > 1``, both directions.

    Args:
        rho: the zCDP parameter (> 0).
    """

    rho: float
    adjacency: str = "replace-one"
    sensitivity_norm: str | None = None
    sensitivity: float | None = None
    reference: str = ""
    anchor_delta: float = DEFAULT_ANCHOR_DELTA
    notion: str = dataclasses.field(default="zcdp", init=False)

    def __post_init__(self):
        object.__setattr__(self, "rho", _positive("ZCDPClaim", "rho", self.rho))
        _check_common(self)

    conversion = "zCDP -> (epsilon, delta): Canonne-Kamath-Steinke 2020 Prop. 12, min over alpha"

    def describe(self) -> str:
        return f"{self.rho:g}-zCDP"

    def delta_implied(self, epsilon) -> np.ndarray:
        return zcdp_delta(epsilon, self.rho)

    def epsilon_implied(self, delta: float) -> float:
        return zcdp_epsilon(delta, self.rho)

    def renyi_bound(self, orders) -> np.ndarray:
        """The claimed bound ``rho alpha`` on ``D_alpha`` at ``orders``.

        Args:
            orders: orders ``alpha > 1``.

        Returns:
            ``rho * orders``.
        """
        return self.rho * np.asarray(orders, dtype=np.float64)


@dataclasses.dataclass(frozen=True)
class RDPClaim(_NotionMixin):
    """RDP at one or several orders: ``D_alpha(P_D || P_D') <= epsilon_alpha``, both directions.

    Args:
        orders: the orders ``alpha > 1`` (a number or a sequence).
        epsilons: the bounds ``epsilon_alpha > 0``, one per order.
    """

    orders: tuple
    epsilons: tuple
    adjacency: str = "replace-one"
    sensitivity_norm: str | None = None
    sensitivity: float | None = None
    reference: str = ""
    anchor_delta: float = DEFAULT_ANCHOR_DELTA
    notion: str = dataclasses.field(default="rdp", init=False)

    def __post_init__(self):
        orders = np.atleast_1d(np.asarray(self.orders, dtype=object))
        epsilons = np.atleast_1d(np.asarray(self.epsilons, dtype=object))
        if orders.ndim != 1 or epsilons.ndim != 1 or orders.size == 0:
            raise ValueError("RDPClaim orders and epsilons must be non-empty flat sequences.")
        if orders.size != epsilons.size:
            raise ValueError(
                f"RDPClaim needs one epsilon per order: got {orders.size} orders and "
                f"{epsilons.size} epsilons."
            )
        alphas = tuple(_positive("RDPClaim", "order", a) for a in orders)
        bad = [a for a in alphas if not a > 1]
        if bad:
            raise ValueError(
                f"RDPClaim orders must be > 1 (Renyi DP is defined for alpha > 1), got {bad[0]!r}."
            )
        if len(set(alphas)) != len(alphas):
            raise ValueError("RDPClaim orders must be distinct.")
        object.__setattr__(self, "orders", alphas)
        object.__setattr__(
            self, "epsilons", tuple(_positive("RDPClaim", "epsilon", e) for e in epsilons)
        )
        _check_common(self)

    conversion = "RDP -> (epsilon, delta): Canonne-Kamath-Steinke 2020 Prop. 12, min over orders"

    def describe(self) -> str:
        pairs = ", ".join(
            f"({a:g}, {e:g})" for a, e in zip(self.orders, self.epsilons, strict=True)
        )
        return f"RDP {pairs}"

    def delta_implied(self, epsilon) -> np.ndarray:
        return rdp_delta(epsilon, self.orders, self.epsilons)

    def epsilon_implied(self, delta: float) -> float:
        return rdp_epsilon(delta, self.orders, self.epsilons)

    def renyi_bound(self, orders) -> np.ndarray:
        """The claimed bound at ``orders`` (each must be one of the claim's orders).

        Args:
            orders: orders of the claim.

        Returns:
            The claimed ``epsilon_alpha``.
        """
        table = dict(zip(self.orders, self.epsilons, strict=True))
        return np.array([table[float(a)] for a in np.atleast_1d(orders)])


@dataclasses.dataclass(frozen=True)
class GDPClaim(_NotionMixin):
    """mu-GDP: every pair's trade-off curve lies above ``G_mu`` (both directions).

    Args:
        mu: the GDP parameter (> 0).
    """

    mu: float
    adjacency: str = "replace-one"
    sensitivity_norm: str | None = None
    sensitivity: float | None = None
    reference: str = ""
    anchor_delta: float = DEFAULT_ANCHOR_DELTA
    notion: str = dataclasses.field(default="gdp", init=False)

    def __post_init__(self):
        object.__setattr__(self, "mu", _positive("GDPClaim", "mu", self.mu))
        _check_common(self)

    conversion = "GDP -> (epsilon, delta): Dong-Roth-Su 2022 Cor. 2.13 (exact)"

    def describe(self) -> str:
        return f"{self.mu:g}-GDP"

    def delta_implied(self, epsilon) -> np.ndarray:
        return gdp_delta(epsilon, self.mu)

    def epsilon_implied(self, delta: float) -> float:
        return gdp_epsilon(delta, self.mu)

    def delta_bracket(self, epsilon) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` of the claim's ``delta_f(epsilon)`` (equal: the curve is exact).

        Args:
            epsilon: epsilon(s), any real.

        Returns:
            ``(delta_mu, delta_mu)``.
        """
        d = gdp_delta(epsilon, self.mu)
        return d, d

    def tradeoff(self, x) -> np.ndarray:
        """``G_mu(x)``.

        Args:
            x: type I error(s).

        Returns:
            The claimed smallest type II error.
        """
        return gdp_tradeoff(x, self.mu)


@dataclasses.dataclass(frozen=True)
class TradeoffClaim(_NotionMixin):
    """f-DP by a trade-off function tabulated at ``points`` (0 to 1, increasing).

    The claim is: every pair's trade-off curve lies above a convex non-increasing
    ``f`` through these values. Build one from a function with :meth:`from_function`.

    Args:
        points: type I errors, strictly increasing from 0 to 1.
        values: ``f`` at the points: convex, non-increasing, ``<= 1 - x``, in ``[0, 1]``.
        name: a short name for reports (``"f"``).
    """

    points: tuple
    values: tuple
    name: str = "f"
    adjacency: str = "replace-one"
    sensitivity_norm: str | None = None
    sensitivity: float | None = None
    reference: str = ""
    anchor_delta: float = DEFAULT_ANCHOR_DELTA
    notion: str = dataclasses.field(default="f-dp", init=False)

    def __post_init__(self):
        x = np.asarray(self.points, dtype=np.float64).reshape(-1)
        f = np.asarray(self.values, dtype=np.float64).reshape(-1)
        _check_tradeoff(x, f)
        object.__setattr__(self, "points", tuple(float(v) for v in x))
        object.__setattr__(self, "values", tuple(float(v) for v in f))
        _check_common(self)

    conversion = "f-DP -> (epsilon, delta): Dong-Roth-Su 2022 Prop. 2.12 (exact, tabulated f)"

    @classmethod
    def from_function(cls, f: Callable, *, points: int = _TRADEOFF_POINTS, **fields):
        """Tabulate a vectorised trade-off function on ``points`` type I errors.

        The grid is geometric from ``1e-10`` to ``1/2`` and mirrored towards 1, with
        the ends 0 and 1: the profile at small deltas is decided by ``f`` near 0 (finer
        than ``1e-10``, float64 values of ``f`` near 1 are too coarse to resolve slopes).

        Args:
            f: ``f(x) -> type II error`` for ``x`` a numpy array in ``[0, 1]``.
            points: grid size (>= 3).
            **fields: the other fields (``name``, ``adjacency``, ...).

        Returns:
            The :class:`TradeoffClaim`.

        Raises:
            ValueError: when ``f`` is not a trade-off function on the grid.
        """
        half = max(int(points) // 2, 2)
        tail = np.geomspace(1e-10, 0.5, half)
        x = np.unique(np.concatenate([[0.0], tail, 1.0 - tail, [1.0]]))
        return cls(points=tuple(x), values=tuple(np.asarray(f(x), dtype=np.float64)), **fields)

    def describe(self) -> str:
        return f"{self.name}-DP"

    def delta_implied(self, epsilon) -> np.ndarray:
        return self.delta_bracket(epsilon)[1]

    def delta_bracket(self, epsilon) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` of ``delta_f(epsilon)`` (:func:`~dpaudit.accounting.conversions.tradeoff_delta_bounds`).

        Args:
            epsilon: epsilon(s), any real.

        Returns:
            The bracket.
        """
        return tradeoff_delta_bounds(epsilon, self.points, self.values)

    def epsilon_implied(self, delta: float) -> float:
        lo, hi = 0.0, 1.0
        while float(self.delta_implied(hi)) > delta:
            lo, hi = hi, 2.0 * hi
            if hi > 1e6:
                return math.inf
        while hi - lo > 1e-12 * max(1.0, hi):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if float(self.delta_implied(mid)) > delta else (lo, mid)
        return hi

    def tradeoff(self, x) -> np.ndarray:
        """The tabulated ``f`` interpolated linearly (the chord: an upper bracket of ``f``).

        Args:
            x: type I error(s).

        Returns:
            ``f(x)``.
        """
        return np.interp(np.asarray(x, dtype=np.float64), self.points, self.values)


def _check_tradeoff(x: np.ndarray, f: np.ndarray) -> None:
    """One sentence per way a tabulated function fails to be a trade-off function."""
    if x.size < 2 or x.size != f.size:
        raise ValueError(
            "TradeoffClaim needs at least two points and one value per point "
            f"(got {x.size} points and {f.size} values)."
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(f))):
        raise ValueError("TradeoffClaim points and values must be finite numbers.")
    if x[0] != 0.0 or x[-1] != 1.0 or np.any(np.diff(x) <= 0):
        raise ValueError(
            "TradeoffClaim points must increase strictly from 0 to 1 (type I errors on a "
            f"grid covering [0, 1]), got {_head(x)}."
        )
    if np.any(f < -_TRADEOFF_TOL) or np.any(f > 1 + _TRADEOFF_TOL):
        raise ValueError(
            "the trade-off function must take values in [0, 1] (they are type II errors), "
            f"got values from {float(np.min(f)):g} to {float(np.max(f)):g}."
        )
    if np.any(np.diff(f) > _TRADEOFF_TOL):
        i = int(np.argmax(np.diff(f) > _TRADEOFF_TOL))
        raise ValueError(
            f"the trade-off function must be non-increasing (allowing more type I error never "
            f"costs type II error); it rises between x = {x[i]:g} and x = {x[i + 1]:g}."
        )
    if np.any(f > 1.0 - x + _TRADEOFF_TOL):
        i = int(np.argmax(f > 1.0 - x + _TRADEOFF_TOL))
        raise ValueError(
            f"the trade-off function must lie below 1 - x (random guessing); at x = {x[i]:g} "
            f"it is {f[i]:g}."
        )
    # Convex: each value at most the chord of its neighbours (tolerance on values, not on
    # slopes, which round-off inflates on the tiny intervals of a geometric grid).
    w = (x[1:-1] - x[:-2]) / (x[2:] - x[:-2])
    excess = f[1:-1] - ((1.0 - w) * f[:-2] + w * f[2:])
    if np.any(excess > _TRADEOFF_TOL):
        i = int(np.argmax(excess > _TRADEOFF_TOL))
        raise ValueError(
            f"the trade-off function must be convex; at x = {x[i + 1]:g} it lies above the "
            "chord of its neighbours (state its lower convex envelope instead)."
        )


def _head(x: np.ndarray) -> str:
    """The first values of an array, for a message."""
    shown = ", ".join(f"{v:g}" for v in x[:4])
    return f"[{shown}{', ...' if x.size > 4 else ''}]"


def is_notion_claim(claim) -> bool:
    """Whether ``claim`` is one of the notion claims of this module.

    Args:
        claim: any object.

    Returns:
        True for :class:`ZCDPClaim`, :class:`RDPClaim`, :class:`GDPClaim`, :class:`TradeoffClaim`.
    """
    return isinstance(claim, ZCDPClaim | RDPClaim | GDPClaim | TradeoffClaim)


def notion_of(claim) -> str:
    """The notion of a claim: one of :data:`NOTIONS`.

    Args:
        claim: a :class:`~dpaudit.Claim` or a notion claim.

    Returns:
        ``"dp"`` for a :class:`~dpaudit.Claim`, else the claim's ``notion``.
    """
    return claim.notion if is_notion_claim(claim) else "dp"


def make_claim(**fields):
    """The claim stated by the fields of a ``[claim]`` table (one notion only).

    Fields: ``epsilon``/``delta`` (``Claim``), ``zcdp_rho``, ``rdp_orders`` with
    ``rdp_epsilons``, ``gdp_mu``, ``tradeoff_points`` with ``tradeoff_values`` (and
    ``tradeoff_name``; f-DP); plus ``adjacency`` and, for a notion claim, ``anchor_delta``.

    Args:
        **fields: the table's fields.

    Returns:
        A :class:`~dpaudit.Claim` or a notion claim.

    Raises:
        ValueError: for a table mixing notions or stating none, or a bad parameter.

    Example:
        >>> make_claim(zcdp_rho=0.5).describe()
        '0.5-zCDP'
    """
    stated = [n for n, keys in CLAIM_FIELDS.items() if any(k in fields for k in keys)]
    if "delta" in fields and "epsilon" not in fields and len(stated) > 1:
        stated.remove("dp")  # delta alone is allowed with a notion (an anchor, read as such)
    if len(stated) > 1:
        raise ValueError(
            f"the claim mixes notions ({', '.join(stated)}); state exactly one of epsilon "
            "(with delta), zcdp_rho, rdp_orders with rdp_epsilons, gdp_mu, or tradeoff_points "
            "with tradeoff_values."
        )
    if not stated:
        raise ValueError(
            "the claim states no privacy parameter; give epsilon (with delta), zcdp_rho, "
            "rdp_orders with rdp_epsilons, or gdp_mu."
        )
    common = {k: fields[k] for k in ("adjacency",) if k in fields}
    notion = stated[0]
    if notion == "dp":
        return Claim(epsilon=fields["epsilon"], delta=fields.get("delta", 0.0), **common)
    if "delta" in fields:
        common["anchor_delta"] = fields["delta"]
    if "anchor_delta" in fields:
        common["anchor_delta"] = fields["anchor_delta"]
    if notion == "zcdp":
        return ZCDPClaim(rho=fields["zcdp_rho"], **common)
    if notion == "gdp":
        return GDPClaim(mu=fields["gdp_mu"], **common)
    if notion == "f-dp":
        if "tradeoff_points" not in fields or "tradeoff_values" not in fields:
            raise ValueError(
                "an f-DP claim needs both tradeoff_points (type I errors from 0 to 1) and "
                "tradeoff_values (the trade-off function at each point)."
            )
        return TradeoffClaim(
            points=fields["tradeoff_points"],
            values=fields["tradeoff_values"],
            name=fields.get("tradeoff_name", "f"),
            **common,
        )
    if "rdp_orders" not in fields or "rdp_epsilons" not in fields:
        raise ValueError("an RDP claim needs both rdp_orders and rdp_epsilons (one per order).")
    return RDPClaim(orders=fields["rdp_orders"], epsilons=fields["rdp_epsilons"], **common)


def claim_label(claim, *, anchor: bool = False) -> str:
    """The claim as users state it: ``"(1, 1e-05)-DP"``, ``"0.5-zCDP"``, ``"1-GDP"``, ``"RDP ..."``.

    Args:
        claim: a :class:`~dpaudit.Claim` or a notion claim.
        anchor: for a notion claim, append the (epsilon, delta) it is checked at by
            (epsilon, delta) machinery and the conversion that gave it.

    Returns:
        One line (no adjacency).

    Example:
        >>> claim_label(GDPClaim(1.0))
        '1-GDP'
        >>> claim_label(ZCDPClaim(0.5), anchor=True)[:40]
        '0.5-zCDP (as (epsilon, delta): (4.72839,'
    """
    if not is_notion_claim(claim):
        return f"({claim.epsilon:g}, {claim.delta:g})-DP"
    text = claim.describe()
    if anchor:
        text += (
            f" (as (epsilon, delta): ({claim.epsilon:g}, {claim.delta:g}) by {claim.conversion})"
        )
    return text


def notion_bound_text(bound: dict) -> str:
    """One line for a certified notion parameter (a black-box result's ``notion_bound``).

    Args:
        bound: ``{"parameter", "lower", "confidence", "stated", "exceeds_claim"[, "orders"]}``.

    Returns:
        For example ``"mu >= 0.976 at confidence 0.95 (claimed 0.9-GDP: refuted)"``.

    Example:
        >>> notion_bound_text({"parameter": "rho", "lower": 0.12, "confidence": 0.95,
        ...                    "stated": "0.5-zCDP", "exceeds_claim": False})
        'rho >= 0.12 at confidence 0.95 (claimed 0.5-zCDP: not refuted)'
    """
    if bound.get("orders") is not None:
        value = ", ".join(
            f"epsilon({a:g}) >= {v:.4g}"
            for a, v in zip(bound["orders"], bound["lower"], strict=True)
        )
    else:
        value = f"{bound['parameter']} >= {bound['lower']:.4g}"
    verdict = "refuted" if bound.get("exceeds_claim") else "not refuted"
    return f"{value} at confidence {bound['confidence']:g} (claimed {bound['stated']}: {verdict})"


def notion_record(result) -> dict:
    """``{"notion": {...}}`` for a result of a notion claim (``{}`` otherwise): its JSON summary.

    Args:
        result: a white-box :class:`~dpaudit.AuditResult` (its ``diagnostics["notion"]``)
            or a :class:`~dpaudit.blackbox.BlackBoxResult` (its ``notion_bound``).

    Returns:
        ``{"notion": {"notion", "stated", "parameter", "tightest", "lower", "confidence",
        ...}}``: ``tightest`` is the pair's exact/bracketed parameter (white-box; ``None``
        for black-box), ``lower`` the certified lower bound at ``confidence``.
    """
    if not is_notion_claim(result.claim):
        return {}
    bound = getattr(result, "notion_bound", None)
    if bound is not None:
        return {"notion": jsonable({**bound.to_dict(), "tightest": None})}
    audit = (getattr(result, "diagnostics", None) or {}).get("notion")
    if audit is None:
        return {}
    return {
        "notion": jsonable(
            {
                "notion": audit["notion"],
                "stated": audit["claim"],
                "parameter": audit["parameter"],
                "tightest": audit["tightest"] or None,
                "lower": audit["certified"],
                "confidence": audit["confidence"],
                "verdict": audit["verdict"],
            }
        )
    }


def notion_fields(claim) -> dict:
    """The fields a JSON record adds for a notion claim (``{}`` for a :class:`~dpaudit.Claim`).

    Args:
        claim: any claim.

    Returns:
        ``{"notion", "stated", <the notion's parameters>, "anchor_delta", "conversion"}``;
        a trade-off claim gives its ``name`` (its table is in the record's details).
    """
    if not is_notion_claim(claim):
        return {}
    params = {
        "zcdp": ("rho",),
        "rdp": ("orders", "epsilons"),
        "gdp": ("mu",),
        "f-dp": ("name",),
    }[claim.notion]
    out = {"notion": claim.notion, "stated": claim.describe()}
    out.update(
        {k: list(v) if isinstance(v, tuple) else v for k in params for v in [getattr(claim, k)]}
    )
    out["anchor_delta"] = claim.anchor_delta
    out["conversion"] = claim.conversion
    return out


def _values_text(name: str, values, orders=None, op: str = ">=") -> str:
    """``"rho >= 0.5"``, or per order ``"epsilon(2) >= 1, epsilon(8) >= 4"`` (RDP)."""
    if isinstance(values, list | tuple):
        return ", ".join(
            f"epsilon({a:g}) {op} {float(v):.4g}" for a, v in zip(orders, values, strict=True)
        )
    return f"{name} {op} {float(values):.4g}"


def certified_lower_text(result, number) -> str:
    """The certified lower bound in the claim's own notion first, then epsilon at its anchor.

    Args:
        result: a white-box or black-box result.
        number: how to write a number (the CLI and the report format differently).

    Returns:
        ``"rho >= 0.5; ε ≥ 4.38"`` for a notion claim, ``number(epsilon_lower)`` otherwise.
    """
    notion = notion_certified_text(result)
    if notion is None:
        return number(result.epsilon_lower)
    return f"{notion}; ε ≥ {number(result.epsilon_lower)}"


def notion_certified_text(result) -> str | None:
    """The certified lower bound on a notion claim's own parameter, in one phrase.

    Args:
        result: a white-box :class:`~dpaudit.AuditResult` or a black-box result.

    Returns:
        For example ``"rho >= 0.5"``, ``"epsilon(2) >= 1"`` or ``"mu >= 1.2"`` (RDP: one
        bound per order); ``None`` for an ``(epsilon, delta)`` claim, or when the audit
        certified no bound on the parameter (an f-DP claim judged on its whole curve).
    """
    record = notion_record(result).get("notion")
    if record is None or record.get("lower") is None or record.get("parameter") is None:
        return None
    orders = record.get("orders", getattr(result.claim, "orders", None))
    name = "mu" if record["parameter"] == "gdp mu" else record["parameter"]
    return _values_text(name, record["lower"], orders)


def _bracket_text(name: str, tight: dict, claim) -> str:
    """``"rho = 0.5 (exact)"`` or ``"rho in [0.4, 0.6]"`` (RDP: per order)."""
    low, up = tight["lower"], tight["upper"]
    if not isinstance(low, list | tuple):
        low, up, labels = [low], [up], [name]
    else:
        labels = [f"epsilon({a:g})" for a in claim.orders]
    parts = [
        f"{k} = {float(lo):.4g}" if lo == hi else f"{k} in [{float(lo):.4g}, {float(hi):.4g}]"
        for k, lo, hi in zip(labels, low, up, strict=True)
    ]
    exact = all(lo == hi for lo, hi in zip(low, up, strict=True))
    return ", ".join(parts) + (" (exact)" if exact else "")


def notion_summary_lines(result) -> list[str]:
    """A notion claim's lines of ``summary()``: its own parameter first, then the anchor's.

    Args:
        result: a result whose claim is a notion claim (white-box or black-box).

    Returns:
        ``["  claim: 0.5-zCDP, replace-one", "  certified: rho >= 0.5 at confidence 0.95;
        this pair's rho = 0.5 (exact)", "  anchor: (4.73, 1e-05)-DP:"]``; the caller
        appends the anchor's figures to the last line (the conversion is in the notes).
    """
    c = result.claim
    record = notion_record(result).get("notion") or {}
    certified = notion_certified_text(result)
    if certified is None:
        line = (
            f"  certified: {record.get('verdict', result.verdict)} on this pair's trade-off "
            "curve (no single parameter; the curves are in the notion record)"
        )
    else:
        line = f"  certified: {certified} at confidence {result.confidence:g}"
    tight = record.get("tightest") or {}
    if tight.get("lower") is not None:
        line += f"; this pair's {_bracket_text(record['parameter'], tight, c)}"
    return [
        f"  claim: {claim_label(c)}, {c.adjacency}",
        line,
        f"  anchor: ({c.epsilon:g}, {c.delta:g})-DP:",
    ]
