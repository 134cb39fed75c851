r"""Rényi divergences of a pair of release laws: exact profiles and certified upper bounds.

``D_alpha(P || Q) = log E_P[e^{(alpha - 1) L}] / (alpha - 1)`` with ``L = log dP/dQ``.

* **Shifted Gaussian noise** (loss ``N(mu^2/2, mu^2)``): ``D_alpha = alpha mu^2 / 2``
  exactly, in both directions.
* **Independent Laplace / ICLP coefficients** (loss parameters ``a_j``, see
  :mod:`dpaudit.accounting.profiles`): Rényi divergences add over independent coordinates and
  one Laplace pair has (Mironov 2017, Prop. 6)
  ``D_alpha(a) = a + log(1 + (alpha - 1) expm1((1 - 2 alpha) a) / (2 alpha - 1)) / (alpha - 1)``.
* **A certified supremum** ``|L| <= s`` (the ``"supremum"`` accounting of
  :mod:`dpaudit.accounting.suprema`): an upper bound only, ``D_alpha <= min(s, alpha s^2 / 2)``
  (Bun & Steinke 2016, Prop. 3.3: pure ``s``-DP implies ``s^2/2``-zCDP).
Certified Monte Carlo lower bounds for any pair: :mod:`dpaudit.estimation.renyi`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special

from dpaudit.accounting.composition import GaussianComponent, LaplaceComponent, SupremumComponent
from dpaudit.accounting.subsampling import SubsampledComponent

__all__ = [
    "PROFILE_ORDERS",
    "component_renyi",
    "composition_renyi",
    "gaussian_renyi",
    "laplace_renyi",
    "renyi_bounds",
    "subsampled_gaussian_renyi",
    "supremum_renyi_upper",
]

#: Relative half-width of the bracket of a Laplace ``D_alpha`` (an fsum of float64 terms):
#: covers the per-term log1p/expm1 round-off; a claim at exactly the computed value passes
#: (:func:`dpaudit.whitebox.notions.renyi_tolerance` adds the bracket's width).
LAPLACE_RENYI_RTOL = 1e-12

#: Orders of the Rényi profile reported and checked by default.
PROFILE_ORDERS = (1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0)


def gaussian_renyi(orders, mu: float) -> np.ndarray:
    """``D_alpha = alpha mu^2 / 2`` of a shifted Gaussian pair with loss ``N(mu^2/2, mu^2)``.

    Args:
        orders: orders ``alpha > 1``.
        mu: ``||h||_C / sigma`` (:func:`dpaudit.accounting.profiles.gaussian_mu`).

    Returns:
        ``D_alpha`` at each order.

    Example:
        >>> gaussian_renyi([2.0, 4.0], 1.0).tolist()
        [1.0, 2.0]
    """
    return np.asarray(orders, dtype=np.float64) * float(mu) ** 2 / 2.0


def laplace_renyi(orders, a) -> np.ndarray:
    """``sum_j D_alpha(a_j)`` of independent Laplace pairs with loss parameters ``a_j``.

    Args:
        orders: orders ``alpha > 1``.
        a: ``(K,)`` parameters ``|h_j| / b_j >= 0``.

    Returns:
        ``D_alpha`` at each order (exact; ``fsum`` over the components).

    Example:
        >>> round(float(laplace_renyi([2.0], [1.0])[0]), 6)  # dp_accounting: 0.619124
        0.619124
    """
    alpha = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    a = a[a > 0]
    out = np.empty(alpha.shape)
    for i, al in enumerate(alpha):
        terms = a + np.log1p((al - 1.0) * np.expm1((1.0 - 2.0 * al) * a) / (2.0 * al - 1.0)) / (
            al - 1.0
        )
        out[i] = math.fsum(terms.tolist())
    return out


def supremum_renyi_upper(orders, sup_loss: float) -> np.ndarray:
    """``min(s, alpha s^2 / 2)``: an upper bound on ``D_alpha`` when ``|L| <= s``.

    Args:
        orders: orders ``alpha > 1``.
        sup_loss: a certified upper bound ``s`` on ``|L|`` (both directions).

    Returns:
        The bound at each order.
    """
    alpha = np.asarray(orders, dtype=np.float64)
    s = float(sup_loss)
    return np.minimum(s, alpha * s * s / 2.0)


def renyi_bounds(orders, accounting) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lower, upper)`` of ``D_alpha`` from an exact accounting (max over directions).

    Args:
        orders: orders ``alpha > 1``.
        accounting: an :class:`~dpaudit.accounting.profiles.ExactAccounting`, a supremum
            accounting (:mod:`dpaudit.accounting.suprema`) or ``None``.

    Returns:
        The bounds (equal when exact), or ``None`` when nothing is known.
    """
    alpha = np.asarray(orders, dtype=np.float64)
    if accounting is None:
        return None
    family = accounting.family
    if family == "singular":
        inf = np.full(alpha.shape, math.inf)
        return inf, inf
    if family == "gaussian":
        d = gaussian_renyi(alpha, accounting.mu)
        return d, d
    if family == "laplace" and getattr(accounting, "laplace_parameters", None) is not None:
        d = laplace_renyi(alpha, accounting.laplace_parameters)
        return d * (1 - LAPLACE_RENYI_RTOL), d * (1 + LAPLACE_RENYI_RTOL)
    if family == "supremum":
        return np.zeros(alpha.shape), supremum_renyi_upper(alpha, accounting.sup_loss)
    components = getattr(accounting, "components", None)
    return None if components is None else composition_renyi(alpha, components)


def component_renyi(orders, component) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lower, upper)`` of ``D_alpha`` of one composition component (max over directions).

    Gaussian and Laplace components are symmetric; a Poisson-subsampled Gaussian
    (:class:`~dpaudit.accounting.subsampling.SubsampledComponent`) is bounded by its *remove*
    direction, which dominates *add* at every order (Mironov, Talwar & Zhang 2019);
    a supremum-only component has ``[0, min(s, alpha s^2/2)]``.

    Args:
        orders: orders ``alpha > 1``.
        component: a component of :mod:`dpaudit.accounting.composition` or :mod:`dpaudit.accounting.subsampling`.

    Returns:
        The bounds, or ``None`` for a component without a known Rényi profile
        (subsampled Laplace, sampling without replacement).
    """
    alpha = np.asarray(orders, dtype=np.float64)
    if isinstance(component, GaussianComponent):
        d = gaussian_renyi(alpha, component.mu)
        return d, d
    if isinstance(component, LaplaceComponent):
        d = laplace_renyi(alpha, [component.a])
        return d * (1 - LAPLACE_RENYI_RTOL), d * (1 + LAPLACE_RENYI_RTOL)
    if isinstance(component, SupremumComponent):
        return np.zeros(alpha.shape), supremum_renyi_upper(alpha, component.epsilon)
    if (
        isinstance(component, SubsampledComponent)
        and isinstance(component.base, GaussianComponent)
        and component.scheme == "poisson"
    ):
        return subsampled_gaussian_renyi(alpha, float(component.base.mu), float(component.q))
    return None


def composition_renyi(orders, components) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lower, upper)`` of ``D_alpha`` of a composition: ``sum count x D_alpha(component)``.

    Rényi divergences add over independent (also adaptively chosen) releases in each
    direction; every supported component's larger direction is its forward one (remove
    for Poisson subsampling), so the sums over forward directions are the profile.

    Args:
        orders: orders ``alpha > 1``.
        components: ``(component, count)`` pairs (``ExactAccounting.components``).

    Returns:
        The bounds, or ``None`` if some component has no known profile.
    """
    alpha = np.asarray(orders, dtype=np.float64)
    low, high = np.zeros(alpha.shape), np.zeros(alpha.shape)
    for component, count in components:
        bounds = component_renyi(alpha, component)
        if bounds is None:
            return None
        low, high = low + count * bounds[0], high + count * bounds[1]
    return low, high


# ------------------------------------------------- Poisson-subsampled Gaussian

#: Terms of the fractional-order series summed before the alternating-tail bound: the
#: terms decay like ``k^(-alpha-2)``, so at alpha = 1.1 the first omitted term is below
#: 1e-13 of the sum for mu <= 4 (the bracket carries the omitted part either way).
_SERIES_TERMS = 1 << 15
#: Round-off of one term ``e^(sum of pieces)``: each piece carries ~1 ulp relative error,
#: so the term is off by at most ``_ULPS eps (1 + sum |piece|)`` relative (generous).
_EPS = float(np.finfo(np.float64).eps)
_ULPS = 16.0
#: Cells of the monotone quadrature of the add direction (bracket width <= gmax / N).
_ADD_CELLS = 1 << 16


def _log_binomials(alpha: float, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log |C(alpha, k)|`` and the sign of ``C(alpha, k)`` for integers ``0 <= k`` (sorted)."""
    j = np.arange(int(k[-1]), dtype=np.float64)
    steps = np.log(np.abs(alpha - j)) - np.log(j + 1.0)
    log_abs = np.concatenate([[0.0], np.cumsum(steps)])[k]
    negatives = np.concatenate([[0], np.cumsum(alpha - j < 0)])[k]
    return log_abs, np.where(negatives % 2 == 1, -1.0, 1.0)


def _signed_sum(pieces: list, sign: np.ndarray) -> tuple[float, float, float]:
    """``(log |S|, scale, rel)`` of ``S = sum sign_i exp(sum_j pieces_j[i])``.

    ``S = e^scale * sum_i sign_i e^(x_i - scale)`` is summed exactly (``fsum``) from
    rounded terms; ``rel`` bounds the relative error of ``S`` from the terms' round-off
    (``log(length)`` ulps per term for the ``log C`` cumulative sums included).
    """
    x = np.sum(pieces, axis=0)
    mag = np.sum(np.abs(pieces), axis=0) + math.log2(x.size + 1.0)
    top = float(np.max(x))
    terms = np.exp(x - top)
    total = math.fsum((sign * terms).tolist())
    err = math.fsum((terms * _ULPS * _EPS * (1.0 + mag)).tolist())
    return top + math.log(total), top, err / total + 4.0 * _EPS


def _remove_log_moment(alpha: float, mu: float, q: float) -> tuple[float, float]:
    """Bracket of ``log E_A[(1 - q + q e^l)^alpha]`` (the remove direction).

    Integer ``alpha``: the binomial expansion, written as ``log1p`` of
    ``sum_(k >= 2) C(alpha,k) (1-q)^(alpha-k) q^k expm1(k(k-1) mu^2 / 2)`` (the ``k = 0, 1``
    terms of the expansion sum with the rest to 1), all terms positive. Otherwise the
    expansion on each side of ``z0`` (where ``q e^l = 1 - q``) in the ratio that is below 1
    there (Mironov, Talwar & Zhang 2019, Sec. 3.3); after ``k = floor(alpha) + 1`` the
    terms alternate in sign and shrink, so the omitted tail of each side lies between 0
    and its first omitted term.
    """
    m2 = mu * mu / 2.0
    lq, l1q = math.log(q), math.log1p(-q)
    if float(alpha).is_integer():
        k = np.arange(2, int(alpha) + 1)
        lc, sign = _log_binomials(alpha, k)
        e = k * (k - 1) * m2
        log_excess = e + np.log(-np.expm1(-e))
        value, _, rel = _signed_sum([lc, (alpha - k) * l1q, k * lq, log_excess], sign)
        # log(1 + S (1 +- rel)), also for S beyond float range
        low = float(np.logaddexp(0.0, value + math.log1p(-rel)))
        return low, float(np.logaddexp(0.0, value + math.log1p(rel)))
    k = np.arange(_SERIES_TERMS + 1)
    lc, sign = _log_binomials(alpha, k)
    z0 = (l1q - lq + m2) / mu
    r = alpha - k
    left = [lc, r * l1q, k * lq, k * (k - 1) * m2, scipy.special.log_ndtr(z0 - k * mu)]
    right = [lc, r * lq, k * l1q, r * (r - 1) * m2, scipy.special.log_ndtr(r * mu - z0)]
    both = [np.concatenate([a[:-1], b[:-1]]) for a, b in zip(left, right, strict=True)]
    value, _, rel = _signed_sum(both, np.concatenate([sign[:-1], sign[:-1]]))
    # The first omitted term of each side (index _SERIES_TERMS) bounds that side's tail.
    last = np.array([sum(p[-1] for p in left), sum(p[-1] for p in right)])
    tail = np.exp(last - value) * sign[-1]
    low = value + math.log1p(float(np.sum(np.minimum(tail, 0.0))) - rel)
    high = value + math.log1p(float(np.sum(np.maximum(tail, 0.0))) + rel)
    return low, high


def _add_log_moment(alpha: float, mu: float, q: float, cells: int) -> tuple[float, float]:
    """Bracket of ``log E_A[(1 - q + q e^l)^(1 - alpha)]`` (the add direction).

    The integrand ``g(x) = h(x)^(1-alpha)`` decreases in ``x`` from ``gmax = (1-q)^(1-alpha)``
    to 0, so on each cell ``[x_i, x_(i+1)]`` its integral against ``N(0, 1)`` lies between
    ``g(x_(i+1))`` and ``g(x_i)`` times the cell's probability. Cells: the union of ``N``
    equal-probability cells and ``N`` cells of equal drop of ``g``, so the bracket is at
    most ``gmax / N`` wide (and the moment is at least 1 by Jensen).
    """
    m2 = mu * mu / 2.0
    u = np.arange(1, cells) / cells
    xs_u = scipy.special.ndtri(u)
    # g = gmax v  <=>  h = (1-q) v^(-1/(alpha-1))  <=>  q e^l = (1-q) expm1(-log(v)/(alpha-1))
    excess = np.expm1(-np.log(u) / (alpha - 1.0))
    xs_g = (math.log1p(-q) - math.log(q) + np.log(excess) + m2) / mu
    xs = np.unique(np.concatenate([[-np.inf], xs_u, xs_g, [np.inf]]))
    with np.errstate(over="ignore"):
        g = np.exp((1.0 - alpha) * np.log1p(q * np.expm1(mu * xs - m2)))
    g[0], g[-1] = (1.0 - q) ** (1.0 - alpha), 0.0
    a, b = xs[:-1], xs[1:]
    # Cell probabilities without cancellation in either tail.
    p = np.where(b <= 0, scipy.special.ndtr(b) - scipy.special.ndtr(a),
                 scipy.special.ndtr(-a) - scipy.special.ndtr(-b))  # fmt: skip
    low = math.fsum((g[1:] * p).tolist()) * (1 - 1e-12)
    high = math.fsum((g[:-1] * p).tolist()) * (1 + 1e-12)
    return math.log(low), math.log(high)


def subsampled_gaussian_renyi(orders, mu: float, q: float, *, direction: str = "remove",
                              cells: int = _ADD_CELLS) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    r"""Bracket of ``D_alpha`` of the Poisson-subsampled Gaussian pair (add/remove).

    With ``A = N(0, 1)``, ``B = N(mu, 1)`` and ``M = (1 - q) A + q B``: *remove* is
    ``D_alpha(M || A)``, *add* is ``D_alpha(A || M)``. Remove: exact series (binomial at
    integer orders; at fractional orders an alternating series whose omitted tail is
    bracketed), to round-off. Add: a monotone quadrature bracket (at most
    ``log(1 + (1-q)^(1-alpha) / cells) / (alpha - 1)`` wide). The remove direction is the
    larger (Mironov, Talwar & Zhang 2019), which is what RDP accountants report.

    Args:
        orders: orders ``alpha > 1``.
        mu: the base Gaussian's ``Delta / sigma`` (``>= 0``).
        q: the sampling probability in ``(0, 1]``.
        direction: ``"remove"`` or ``"add"``.
        cells: quadrature cells of the add direction.

    Returns:
        ``(lower, upper)`` at each order.

    Raises:
        ValueError: for an order ``<= 1``, ``mu < 0``, ``q`` outside ``(0, 1]`` or an
            unknown direction.

    Example:
        >>> low, up = subsampled_gaussian_renyi([2.0], 1.0, 0.5)
        >>> round(float(low[0]), 12) == round(math.log(1 + 0.25 * math.expm1(1.0)), 12)
        True
    """
    alpha = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if direction not in ("remove", "add"):
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}.")
    if not np.all(alpha > 1) or not np.all(np.isfinite(alpha)):
        raise ValueError(f"Renyi orders must be finite and > 1, got {alpha.tolist()}.")
    if not (math.isfinite(mu) and mu >= 0):
        raise ValueError(f"mu must be a finite number >= 0, got {mu!r}.")
    if not 0 < q <= 1:
        raise ValueError(f"the sampling probability q must lie in (0, 1], got {q!r}.")
    if mu == 0:
        return np.zeros(alpha.shape), np.zeros(alpha.shape)
    if q == 1:
        d = gaussian_renyi(alpha, mu)
        return d, d
    low, high = np.empty(alpha.shape), np.empty(alpha.shape)
    for i, al in enumerate(alpha):
        if direction == "remove":
            lo, hi = _remove_log_moment(float(al), float(mu), float(q))
        else:
            lo, hi = _add_log_moment(float(al), float(mu), float(q), int(cells))
        low[i], high[i] = max(lo, 0.0) / (al - 1.0), max(hi, 0.0) / (al - 1.0)
    return low, high
