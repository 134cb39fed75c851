r"""Conversions between privacy notions: the ``(epsilon, delta)`` profile each claim implies.

Every function here returns a value that is *implied* by the claim, so a mechanism
whose ``delta(epsilon)`` exceeds it certainly violates the claim; where the
conversion is also the exact worst case it says so (``docs/notions.md``).

* **mu-GDP** (Dong, Roth & Su 2022, Cor. 2.13): exact. A mechanism is mu-GDP iff it
  is ``(epsilon, delta_mu(epsilon))``-DP for every ``epsilon >= 0`` with
  ``delta_mu(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)``,
  the hockey-stick curve of ``N(0, 1)`` against ``N(mu, 1)``.
* **RDP** at orders ``alpha_i`` with ``epsilon_i`` (Canonne, Kamath & Steinke 2020,
  Prop. 12; the same bound as Balle et al. 2020, Thm 21):
  ``delta <= exp((alpha - 1)(epsilon_alpha - epsilon)) (1 - 1/alpha)^(alpha - 1) / alpha``
  for each order, and the minimum over orders; plus the Bretagnolle–Huber bound
  ``delta(epsilon) <= TV <= sqrt(1 - e^(-KL))`` with ``KL <= epsilon_alpha``. This is
  the conversion of ``dp_accounting``'s RDP accountant; it is a valid bound, not the
  worst case (no closed-form worst case is known for a finite set of orders).
* **rho-zCDP**: RDP at every order with ``epsilon_alpha = rho alpha``; the minimum
  over ``alpha > 1`` is taken numerically (any order gives a valid bound, so the
  numerical minimiser can only make the value larger, never invalid).
* **f-DP** (Dong, Roth & Su 2022, Prop. 2.12): ``delta_f(epsilon) = 1 + f^*(-e^epsilon)
  = sup_x (1 - f(x) - e^epsilon x)``, exact; computed from the claim's tabulated
  ``f`` with the bracket of :func:`tradeoff_delta_bounds`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special

from dpaudit.accounting.calibration import gaussian_delta

__all__ = [
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu_for_point",
    "gdp_tradeoff",
    "rdp_delta",
    "rdp_epsilon",
    "tradeoff_delta_bounds",
    "zcdp_delta",
    "zcdp_epsilon",
]


def gdp_delta(epsilon, mu: float) -> np.ndarray:
    """``delta_mu(epsilon)`` of mu-GDP (exact; any real ``epsilon``).

    Args:
        epsilon: epsilon(s), any real (for ``epsilon < 0`` the symmetry
            ``delta(-e) = 1 - e^(-e)(1 - delta(e))`` of the Gaussian pair is used).
        mu: the GDP parameter (> 0).

    Returns:
        ``delta_mu(epsilon)``, shaped like ``epsilon``.

    Example:
        >>> round(float(gdp_delta(1.0, 1.0)), 6)
        0.126937
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    pos = np.maximum(eps, 0.0)
    d = gaussian_delta(pos, mu)
    neg = 1.0 - np.exp(np.minimum(eps, 0.0)) * (1.0 - gaussian_delta(-np.minimum(eps, 0.0), mu))
    return np.where(eps >= 0, d, neg)


def gdp_epsilon(delta: float, mu: float) -> float:
    """Smallest ``epsilon >= 0`` with ``delta_mu(epsilon) <= delta`` (rounded up).

    Args:
        delta: target delta in ``(0, 1)``.
        mu: the GDP parameter (> 0).

    Returns:
        The epsilon (``0`` when ``delta_mu(0) <= delta``).
    """
    import scipy.optimize

    if float(gdp_delta(0.0, mu)) <= delta:
        return 0.0
    hi = 1.0
    while float(gdp_delta(hi, mu)) > delta:
        hi *= 2.0
    root = scipy.optimize.brentq(lambda e: float(gdp_delta(e, mu)) - delta, 0.0, hi, xtol=1e-14)
    while float(gdp_delta(root, mu)) > delta:
        root = float(np.nextafter(root, np.inf)) * (1 + 1e-15)
    return float(root)


def gdp_tradeoff(x, mu: float) -> np.ndarray:
    """The Gaussian trade-off function ``G_mu(x) = Phi(Phi^{-1}(1 - x) - mu)``.

    Args:
        x: type I error(s) in ``[0, 1]``.
        mu: the GDP parameter (>= 0).

    Returns:
        The smallest type II error of a level-``x`` test of ``N(0,1)`` against ``N(mu,1)``.

    Example:
        >>> round(float(gdp_tradeoff(0.05, 1.0)), 6)
        0.740489
    """
    x = np.clip(np.asarray(x, dtype=np.float64), 0.0, 1.0)
    return scipy.special.ndtr(scipy.special.ndtri(1.0 - x) - mu)


def gdp_mu_for_point(type_one, type_two) -> np.ndarray:
    """The smallest ``mu`` whose ``G_mu`` passes below the point ``(type_one, type_two)``.

    ``G_mu(x) <= y`` iff ``mu >= Phi^{-1}(1 - x) - Phi^{-1}(y)``: a test reaching the
    errors ``(x, y)`` shows the pair is not ``mu'``-GDP for any ``mu'`` below this value.

    Args:
        type_one: type I error(s) in ``[0, 1]``.
        type_two: type II error(s) in ``[0, 1]``.

    Returns:
        ``max(0, Phi^{-1}(1 - x) - Phi^{-1}(y))`` (``inf`` when ``x = 0`` and ``y = 0``).
    """
    x = np.asarray(type_one, dtype=np.float64)
    y = np.asarray(type_two, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        mu = scipy.special.ndtri(1.0 - x) - scipy.special.ndtri(y)
    return np.maximum(np.nan_to_num(mu, nan=0.0, posinf=math.inf), 0.0)


def _cks_log_delta(epsilon: float, alpha, tau) -> np.ndarray:
    """log of Canonne–Kamath–Steinke's ``delta`` from ``(alpha, tau)``-RDP at ``epsilon``."""
    alpha = np.asarray(alpha, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    return (alpha - 1.0) * (tau - epsilon + np.log1p(-1.0 / alpha)) - np.log(alpha)


def rdp_delta(epsilon, orders, epsilons) -> np.ndarray:
    """``delta(epsilon)`` implied by RDP at the given orders (CKS 2020 Prop. 12, min over orders).

    Args:
        epsilon: epsilon(s).
        orders: the orders ``alpha_i > 1``.
        epsilons: the RDP bounds ``epsilon(alpha_i) >= 0``.

    Returns:
        The implied delta (at most 1), shaped like ``epsilon``.

    Example:
        >>> round(float(rdp_delta(1.0, [2.0], [0.1])), 6)  # e^(-0.9 + log 0.5) / 2
        0.101642
    """
    eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
    alpha = np.asarray(orders, dtype=np.float64).reshape(-1)
    tau = np.asarray(epsilons, dtype=np.float64).reshape(-1)
    log_cks = _cks_log_delta(eps[:, None], alpha[None, :], tau[None, :])
    # Bretagnolle–Huber: delta(epsilon) <= TV <= sqrt(1 - e^{-KL}), KL <= tau (D_alpha grows).
    tv = np.sqrt(-np.expm1(-np.min(tau))) if np.min(tau) > 0 else 0.0
    out = np.minimum(np.exp(np.min(log_cks, axis=1)), tv)
    out = np.where(eps >= 0, out, 1.0)  # no conversion below 0 is used
    return np.minimum(out, 1.0).reshape(np.shape(epsilon))


def rdp_epsilon(delta: float, orders, epsilons) -> float:
    """``epsilon(delta)`` implied by RDP at the given orders (CKS 2020 Prop. 12, min over orders).

    ``epsilon = epsilon_alpha + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``.

    Args:
        delta: target delta in ``(0, 1)``.
        orders: the orders ``alpha_i > 1``.
        epsilons: the RDP bounds.

    Returns:
        The implied epsilon (``>= 0``).
    """
    alpha = np.asarray(orders, dtype=np.float64).reshape(-1)
    tau = np.asarray(epsilons, dtype=np.float64).reshape(-1)
    eps = tau + np.log1p(-1.0 / alpha) - (math.log(delta) + np.log(alpha)) / (alpha - 1.0)
    return float(max(0.0, float(np.min(eps))))


def _zcdp_log_delta(epsilon: float, rho: float) -> float:
    """min over ``alpha > 1`` of the CKS log-delta with ``tau = rho alpha`` (bounded search)."""
    import scipy.optimize

    def objective(log_am1):
        alpha = 1.0 + math.exp(log_am1)
        return float(_cks_log_delta(epsilon, alpha, rho * alpha))

    # The optimum is near alpha = (epsilon + rho) / (2 rho) + 1/2; search log(alpha - 1) widely.
    res = scipy.optimize.minimize_scalar(objective, bounds=(-20.0, 20.0), method="bounded")
    guess = max((epsilon + rho) / (2.0 * rho), 1.0 + 1e-9)
    return min(float(res.fun), objective(math.log(guess - 1.0 + 1e-12)))


def zcdp_delta(epsilon, rho: float) -> np.ndarray:
    """``delta(epsilon)`` implied by rho-zCDP (CKS 2020 Prop. 12 minimised over ``alpha > 1``).

    Args:
        epsilon: epsilon(s).
        rho: the zCDP parameter (> 0).

    Returns:
        The implied delta, shaped like ``epsilon`` (1 for ``epsilon < 0``).

    Example:
        >>> round(float(zcdp_delta(1.0, 0.5)), 4)  # a 1-GDP pair has 0.1269 (it is 0.5-zCDP)
        0.2468
    """
    eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
    out = np.ones(eps.shape)
    for i, e in enumerate(eps):
        if e >= 0:
            log_d = _zcdp_log_delta(float(e), rho)
            tv = math.sqrt(-math.expm1(-rho))  # Bretagnolle–Huber with KL <= rho
            out[i] = min(1.0, math.exp(log_d), tv)
    return out.reshape(np.shape(epsilon))


def zcdp_epsilon(delta: float, rho: float) -> float:
    """``epsilon(delta)`` implied by rho-zCDP (CKS 2020, minimised over ``alpha > 1``).

    Args:
        delta: target delta in ``(0, 1)``.
        rho: the zCDP parameter (> 0).

    Returns:
        The implied epsilon; below ``rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke).

    Example:
        >>> round(zcdp_epsilon(1e-5, 0.5), 3)  # dp_accounting's RDP accountant: 4.728
        4.728
    """
    import scipy.optimize

    def eps_at(log_am1):
        alpha = 1.0 + math.exp(log_am1)
        return (
            rho * alpha
            + math.log1p(-1.0 / alpha)
            - (math.log(delta) + math.log(alpha)) / (alpha - 1.0)
        )

    res = scipy.optimize.minimize_scalar(eps_at, bounds=(-20.0, 20.0), method="bounded")
    return float(max(0.0, res.fun))


def tradeoff_delta_bounds(epsilon, points, values) -> tuple[np.ndarray, np.ndarray]:
    """Bracket ``[low, high]`` of ``delta_f(epsilon) = sup_x (1 - f(x) - e^epsilon x)``.

    ``f`` is known at ``points`` (increasing, from 0 to 1) and is convex, so on each
    interval it lies below its chord and above the chords of the neighbouring
    intervals extended (convexity). The chord gives ``low`` (the supremum of a linear
    function over a piecewise-linear ``f`` is attained at the points); the extended
    neighbouring chords give ``high`` (a concave piecewise-linear function on each
    interval: its supremum is at an end or where the two lines cross). A mechanism
    above ``high`` violates the claim; one below ``low`` meets it.

    Args:
        epsilon: epsilon(s), any real.
        points: ``(N,)`` type I errors, increasing from 0 to 1 (``N >= 2``).
        values: ``(N,)`` ``f`` at the points.

    Returns:
        ``(low, high)`` shaped like ``epsilon``, clipped to ``[0, 1]``.
    """
    eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
    x = np.asarray(points, dtype=np.float64)
    f = np.asarray(values, dtype=np.float64)
    # e^700 is finite in float64; beyond it every x > 0 term is -inf anyway.
    scale = np.exp(np.minimum(eps, 700.0))[:, None]
    low = np.max(1.0 - f[None, :] - scale * x[None, :], axis=1)
    slope = np.diff(f) / np.diff(x)
    icpt = f[:-1] - slope * x[:-1]
    m = slope.size
    # Lower envelope on interval i: the max of lines i-1 and i+1 (missing ones: -inf).
    s_prev, c_prev = np.r_[0.0, slope[:-1]], np.r_[-np.inf, icpt[:-1]]
    s_next, c_next = np.r_[slope[1:], 0.0], np.r_[icpt[1:], -np.inf]
    if m == 1:  # one interval: only f >= f(1) and f >= 0 are known
        s_next, c_next = np.zeros(1), np.array([f[-1]])
    cand = [x[:-1], x[1:]]
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (c_next - c_prev) / (s_prev - s_next)
    cross = np.where(np.isfinite(cross), np.clip(cross, x[:-1], x[1:]), x[:-1])
    cand.append(cross)
    high = np.full(eps.shape, -np.inf)
    for xc in cand:
        env = np.maximum(s_prev * xc + c_prev, s_next * xc + c_next)
        env = np.maximum(env, f[1:])  # f is non-increasing: f >= f(x_{i+1}) on interval i
        val = np.max(1.0 - env[None, :] - scale * xc[None, :], axis=1)
        high = np.maximum(high, val)
    high = np.maximum(high, low)
    shape = np.shape(epsilon)
    return np.clip(low, 0.0, 1.0).reshape(shape), np.clip(high, 0.0, 1.0).reshape(shape)
