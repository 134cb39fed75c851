"""Exact binomial bounds and the certified ``(epsilon, delta)`` lower bounds built on them.

For an event ``S`` fixed before the counts are drawn, ``(epsilon, delta)``-DP
implies ``P(S) <= e^epsilon Q(S) + delta``. A lower bound ``p_lo`` on ``P(S)``
and an upper bound ``q_hi`` on ``Q(S)`` therefore certify

``epsilon(delta) >= log((p_lo - delta) / q_hi)`` and ``delta(epsilon) >= p_lo - e^epsilon q_hi``.

That is the ``"clopper-pearson-pair"`` bound (two one-sided bounds at ``alpha / 2`` each).
A pure-epsilon claim (``delta = 0``) is certified instead by the ``"conditional-ratio"``
bound: the certification releases per dataset are themselves Poisson(``n``) (drawn from the
audit's key), so the event counts are independent Poisson(``n P(S)``) and Poisson(``n Q(S)``),
and given their sum ``s``, ``k_P ~ Binomial(s, P(S) / (P(S) + Q(S)))`` exactly. One
Clopper–Pearson lower bound ``theta_lo`` on that proportion at the full ``alpha`` certifies
``P(S) / Q(S) >= theta_lo / (1 - theta_lo)`` (see :func:`conditional_ratio_lower`). Which
bound is used is decided by the claim alone (:func:`bound_method`), before any release is
drawn, never as the better of the two on the data.

Example:
    >>> round(float(certified_epsilon(5000, 10000, 1000, 10000)), 3)
    1.531
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "BOUND_METHODS",
    "CONDITIONAL_RATIO",
    "PAIR",
    "bound_method",
    "certified_delta",
    "certified_epsilon",
    "certified_epsilon_by",
    "clopper_pearson",
    "conditional_ratio_lower",
    "detectable_violation",
    "one_sided_pair",
]

#: Two one-sided Clopper–Pearson bounds at ``alpha / 2`` each (fixed release counts).
PAIR = "clopper-pearson-pair"
#: One Clopper–Pearson bound at ``alpha`` on ``P(S) / (P(S) + Q(S))`` given the sum of
#: Poisson counts (Poissonised release counts); pure-epsilon claims only.
CONDITIONAL_RATIO = "conditional-ratio"
#: The certified epsilon bounds, by name.
BOUND_METHODS = (PAIR, CONDITIONAL_RATIO)

# Beta parameters must be > 0: at k = 0 (resp. k = n) the bound is set by np.where, but the
# untaken branch is still evaluated, so its parameter is clamped away from 0.
_TINY = 1e-300
# Bisection of the detectable violation: epsilon up to 50 (e^50 ~ 5e21: no budget resolves more),
# 48 halvings (below 2e-13 of the interval), delta on [0, 1].
_MAX_DETECTABLE_EPSILON = 50.0
# Quantile arrays at least this long are evaluated once per distinct parameter pair (below,
# sorting them costs more than it saves).
_DEDUPLICATE_FROM = 256
_BISECTIONS = 48


def clopper_pearson(k, n, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds ``(lower, upper)`` on a binomial proportion.

    ``P(p < lower) <= alpha`` and ``P(p > upper) <= alpha`` for ``k ~ Bin(n, p)``
    (exact, conservative): ``lower = Beta(alpha; k, n - k + 1)`` (0 when
    ``k = 0``) and ``upper = Beta(1 - alpha; k + 1, n - k)`` (1 when ``k = n``).
    Non-integer ``k`` (expected counts of randomised events) is accepted for
    planning; certified bounds use integer counts.

    Args:
        k: successes (array-like; ``0 <= k <= n``).
        n: trials (array-like, broadcast with ``k``).
        alpha: the level of *each* one-sided bound, in ``(0, 1)``.

    Returns:
        ``(lower, upper)`` as float arrays of the broadcast shape.

    Raises:
        ValueError: if some ``k`` is outside ``[0, n]`` or ``alpha`` outside ``(0, 1)``.

    Example:
        >>> lo, hi = clopper_pearson(0, 1000, 0.025)
        >>> float(lo), round(float(hi), 5)
        (0.0, 0.00368)
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("clopper_pearson needs 0 <= k <= n.")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    return _lower(k, n, alpha), _upper(k, n, alpha)


def _lower(k: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    """The lower Clopper–Pearson bound of float arrays ``k``, ``n`` (unchecked)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k > 0, _beta_ppf(alpha, np.maximum(k, _TINY), n - k + 1), 0.0)


def _upper(k: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    """The upper Clopper–Pearson bound of float arrays ``k``, ``n`` (unchecked)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k < n, _beta_ppf(1 - alpha, k + 1, np.maximum(n - k, _TINY)), 1.0)


def _beta_ppf(level: float, a, b) -> np.ndarray:
    """``Beta(a, b)`` quantiles, computed once per distinct ``(a, b)`` (elementwise: the same
    numbers). Planning asks for thousands of candidate events whose counts repeat (a few
    hundred distinct counts under ``Q`` in the tail), at 10-20 us per quantile.

    The quantile is scipy's inverse regularised incomplete beta function, the function
    ``scipy.stats.beta.ppf`` evaluates (Boost's ``ibeta_inv``), called without the
    distribution's argument handling: the same numbers (a test compares them bit for bit)
    at a quarter of the cost of a call; an audit asks for a few hundred."""
    import scipy.special

    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    if a.size < _DEDUPLICATE_FROM:
        return scipy.special.betaincinv(a, b, level)
    distinct, inverse = np.unique(
        np.stack([a.ravel(), b.ravel()], axis=1), axis=0, return_inverse=True
    )
    out = scipy.special.betaincinv(distinct[:, 0], distinct[:, 1], level)
    return out[inverse.ravel()].reshape(a.shape)


def one_sided_pair(k_p, n_p, k_q, n_q, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The lower bound on ``P(S)`` and the upper bound on ``Q(S)`` that hold together.

    Each one-sided bound is taken at level ``alpha / 2`` with ``alpha = 1 - confidence``:
    by the union bound both hold at once with probability ``>= confidence``, which is
    what a bound using both (a ratio or a difference) needs.

    Args:
        k_p, n_p: event count and releases under ``P``.
        k_q, n_q: event count and releases under ``Q``.
        confidence: ``1 - alpha``, in ``(0, 1)``.

    Returns:
        ``(p_lower, q_upper)``.

    Raises:
        ValueError: as :func:`clopper_pearson`.
    """
    alpha = 1.0 - confidence
    p_lo, _ = clopper_pearson(k_p, n_p, alpha / 2)
    _, q_hi = clopper_pearson(k_q, n_q, alpha / 2)
    return p_lo, q_hi


def certified_epsilon(k_p, n_p, k_q, n_q, *, delta: float = 0.0, confidence: float = 0.95):
    """Certified lower bound on ``epsilon(delta)`` from event counts under ``P`` and ``Q``.

    ``log((p_lo - delta) / q_hi)`` with one-sided Clopper–Pearson bounds at
    ``(1 - confidence) / 2`` each; ``0`` when ``p_lo <= delta`` (nothing
    certified). Holds with probability ``>= confidence`` when the event was
    fixed before the counts were drawn.

    Args:
        k_p, n_p: event count and releases under ``P`` (the numerator).
        k_q, n_q: event count and releases under ``Q``.
        delta: the ``delta`` at which ``epsilon`` is bounded.
        confidence: ``1 - alpha`` of the bound.

    Returns:
        The bound, ``>= 0`` (a float array of the counts' broadcast shape).

    Raises:
        ValueError: as :func:`clopper_pearson`.

    Example:
        >>> round(float(certified_epsilon(5000, 10000, 1000, 10000)), 3)
        1.531
    """
    p_lo, q_hi = one_sided_pair(k_p, n_p, k_q, n_q, confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(p_lo > delta, np.log(np.maximum(p_lo - delta, _TINY)) - np.log(q_hi), 0.0)
    return np.maximum(eps, 0.0)


def certified_delta(k_p, n_p, k_q, n_q, *, epsilon: float, confidence: float = 0.95):
    """Certified lower bound on ``delta(epsilon) >= p_lo - e^epsilon q_hi`` (clipped at 0).

    Args:
        k_p, n_p: event count and releases under ``P`` (the numerator).
        k_q, n_q: event count and releases under ``Q``.
        epsilon: the ``epsilon`` at which ``delta`` is bounded.
        confidence: ``1 - alpha`` of the bound (``alpha / 2`` per side).

    Returns:
        The bound, ``>= 0``.

    Raises:
        ValueError: as :func:`clopper_pearson`.

    Example:
        >>> round(float(certified_delta(5000, 10000, 1000, 10000, epsilon=1.0)), 3)
        0.202
    """
    p_lo, q_hi = one_sided_pair(k_p, n_p, k_q, n_q, confidence)
    return np.maximum(p_lo - math.exp(epsilon) * q_hi, 0.0)


def bound_method(delta: float) -> str:
    """The epsilon bound an audit of a claim with this ``delta`` certifies (decided up front).

    ``delta = 0`` (a pure-epsilon claim): :data:`CONDITIONAL_RATIO`, the exact conditional
    test of ``P(S) / Q(S)`` on Poissonised release counts: it spends the whole ``alpha`` on
    one binomial bound where the pair splits it over two, and its width adds the two
    counts' variances instead of their standard deviations, so it is about 1.8x narrower
    when ``P(S) ~ Q(S)`` are small. ``delta > 0``: :data:`PAIR` (``log((p_lo - delta) /
    q_hi)`` is not a function of the ratio).

    Args:
        delta: the claimed delta.

    Returns:
        :data:`CONDITIONAL_RATIO` or :data:`PAIR`.

    Example:
        >>> bound_method(0.0), bound_method(1e-5)
        ('conditional-ratio', 'clopper-pearson-pair')
    """
    return CONDITIONAL_RATIO if delta == 0 else PAIR


def conditional_ratio_lower(k_p, k_q, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact lower bound on ``P(S) / Q(S)`` from independent Poisson event counts.

    With ``k_P ~ Poisson(m P(S))`` and ``k_Q ~ Poisson(m Q(S))`` independent (``m``
    releases per dataset *on average*: the release counts themselves Poisson(``m``)),
    ``k_P`` given ``k_P + k_Q = s`` is ``Binomial(s, theta)``, ``theta = P(S) / (P(S) +
    Q(S))``, whatever ``m``. The one-sided Clopper–Pearson lower bound ``theta_lo`` at
    ``alpha = 1 - confidence`` fails with probability ``<= alpha`` given every ``s``, so
    unconditionally; ``theta / (1 - theta) = P(S) / Q(S)`` is increasing in ``theta``.
    With *fixed* equal release counts the conditional law is Fisher's noncentral
    hypergeometric in the odds ratio, not in the ratio: do not use this bound there.

    Args:
        k_p: event count under ``P`` (array-like, ``>= 0``).
        k_q: event count under ``Q``.
        confidence: ``1 - alpha``, in ``(0, 1)``.

    Returns:
        ``(ratio_lower, theta_lower)``: ``theta_lo / (1 - theta_lo)`` (0 when ``k_P = 0``;
        finite even when ``k_Q = 0``) and ``theta_lo``.

    Raises:
        ValueError: for negative counts or ``confidence`` outside ``(0, 1)``.

    Example:
        >>> ratio, theta = conditional_ratio_lower(5000, 1000, 0.95)
        >>> round(float(np.log(ratio)), 3)
        1.552
    """
    k_p = np.asarray(k_p, dtype=float)
    s = k_p + np.asarray(k_q, dtype=float)
    theta_lo, _ = clopper_pearson(k_p, s, 1.0 - confidence)
    return theta_lo / (1.0 - theta_lo), theta_lo


def certified_epsilon_by(
    method: str, k_p, n_p, k_q, n_q, *, delta: float = 0.0, confidence: float = 0.95
):
    """The certified epsilon lower bound of ``method`` (see :func:`bound_method`).

    Args:
        method: :data:`PAIR` or :data:`CONDITIONAL_RATIO` (the latter only for counts of
            Poissonised releases, and only at ``delta = 0``; it ignores ``n_p``, ``n_q``).
        k_p, n_p: event count and releases under ``P``.
        k_q, n_q: event count and releases under ``Q``.
        delta: the ``delta`` at which ``epsilon`` is bounded.
        confidence: ``1 - alpha`` of the bound.

    Returns:
        The bound, ``>= 0``.

    Raises:
        ValueError: for an unknown method, or the ratio bound at ``delta > 0``.
    """
    if method == PAIR:
        return certified_epsilon(k_p, n_p, k_q, n_q, delta=delta, confidence=confidence)
    if method != CONDITIONAL_RATIO:
        raise ValueError(f"method must be one of {BOUND_METHODS}, got {method!r}.")
    if delta != 0:
        raise ValueError("the conditional-ratio bound certifies epsilon at delta = 0 only.")
    ratio, _ = conditional_ratio_lower(k_p, k_q, confidence)
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(np.maximum(ratio, _TINY)), 0.0)


def _bisect(certifies, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per element, the smallest ``x`` in ``[lo, hi]`` with ``certifies(x)`` (monotone; ``inf``
    where even ``hi`` does not certify), by vectorised bisection."""
    lo_a, hi_a = lo, hi
    never = ~certifies(hi_a)
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo_a + hi_a)
        ok = certifies(mid)
        lo_a, hi_a = np.where(ok, lo_a, mid), np.where(ok, mid, hi_a)
    return np.where(never, np.inf, hi_a)


def detectable_violation(
    q, n: int, epsilon: float, delta: float, confidence: float, method: str | None = None
):
    """The smallest violations a budget certifies on an event of ``Q``-probability ``q``.

    The audit strength: an implementation with ``P(S) = min(1, e^eps_true q + delta)``
    on the event, and the expected counts ``n P(S)``, ``n q`` among ``n`` releases per
    dataset, gets a certified violation of the claim ``(epsilon, delta)`` at
    ``confidence`` exactly when ``eps_true`` is at least the first returned value;
    likewise ``P(S) = min(1, e^epsilon q + delta_true)`` for the second. Expected
    counts make this the median outcome (about even odds of certifying), not a power
    guarantee.

    Args:
        q: the event's probability under ``Q`` (in ``[0, 1)``; a float or an array).
        n: certification releases per dataset.
        epsilon: the claimed epsilon.
        delta: the claimed delta.
        confidence: ``1 - alpha`` of the certified bounds.
        method: the epsilon bound (default :func:`bound_method` of ``delta``, the audit's).

    Returns:
        ``(epsilon_detectable, delta_detectable)`` of ``q``'s shape (floats for a float
        ``q``); ``inf`` where even ``P(S) = 1`` would not be certified.

    Example:
        >>> eps, dlt = detectable_violation(0.1, 100_000, 1.0, 0.0, 0.95)
        >>> bool(1.0 < eps < 1.05), bool(0.0 < dlt < 0.01)
        (True, True)
    """
    q = np.clip(np.asarray(q, dtype=float), 0.0, 1.0)
    ratio = (bound_method(delta) if method is None else method) == CONDITIONAL_RATIO
    # The expressions of certified_epsilon / certified_delta at the expected counts, with the
    # upper bound on Q(S) (which does not move with the violation) computed once and the two
    # bisections run as one: one Beta quantile call per halving instead of eight.
    half_alpha = (1.0 - confidence) / 2
    n_f = np.asarray(n, dtype=float)
    q_hi = _upper(n * q, n_f, half_alpha)
    e_claim = math.exp(epsilon)

    def certifies(x):  # x[0]: a true epsilon, x[1]: a true delta
        k_p = np.stack(
            [n * np.minimum(1.0, np.exp(x[0]) * q + delta), n * np.minimum(1.0, e_claim * q + x[1])]
        )
        p_lo = _lower(k_p, n_f, half_alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            if ratio:  # the conditional ratio bound at the full alpha on the expected counts
                theta = _lower(k_p[0], k_p[0] + n * q, 2 * half_alpha)
                eps = np.where(theta > 0, np.log(np.maximum(theta, _TINY) / (1 - theta)), 0.0)
            else:
                eps = np.where(
                    p_lo[0] > delta, np.log(np.maximum(p_lo[0] - delta, _TINY)) - np.log(q_hi), 0.0
                )
        return np.stack(
            [np.maximum(eps, 0.0) > epsilon, np.maximum(p_lo[1] - e_claim * q_hi, 0.0) > delta]
        )

    lo = np.stack([np.full(q.shape, float(epsilon)), np.full(q.shape, float(delta))])
    hi = np.stack([np.full(q.shape, _MAX_DETECTABLE_EPSILON), np.full(q.shape, 1.0)])
    eps, dlt = _bisect(certifies, lo, hi)
    if q.ndim == 0:
        return float(eps), float(dlt)
    return eps, dlt
