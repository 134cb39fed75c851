r"""Post-processing of Barczewski, Mawass & Ramon's private ECDF and ROC releases.

**Post-processing (free).** :func:`smooth_ecdf` (Eq. 3, ``p = 1`` linear
programme, ``p = 2`` quadratic programme, clamped to ``[0, 1]``),
:func:`inverse_ecdf` (Algorithm 1 on the grid), :func:`roc_curve` and
:func:`auc` from two private ECDFs (``bmr-roc``: ``epsilon/2`` each, sequential
composition gives ``epsilon``, see docs/paper-errors.md#bmr-roc-composition), and :func:`private_hosmer_lemeshow`
(Algorithm 2 with the corrections of docs/paper-errors.md#bmr-hl-algorithm).

Post-processing costs no privacy; the releases themselves are in
:mod:`mechanisms.ecdf.tree`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.optimize

from dpaudit.checks import check_epsilon
from dpaudit.noise.linear_laplace import AncestorLaplace, ancestor_matrix
from mechanisms.ecdf.tree import bmr_ecdf, check_grid, check_labels, check_scores, tree_depth

__all__ = [
    "auc",
    "hosmer_lemeshow",
    "inverse_ecdf",
    "private_hosmer_lemeshow",
    "roc_curve",
    "smooth_ecdf",
]


def _as_values(values) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"ECDF values must be a non-empty 1-D array, got shape {v.shape}.")
    if not np.all(np.isfinite(v)):
        raise ValueError("ECDF values contain NaN or infinite entries.")
    return v


def _monotone_clamp(x: np.ndarray) -> np.ndarray:
    # removes solver round-off (~1e-9): the output is exactly monotone and in [0, 1]
    return np.clip(np.maximum.accumulate(x), 0.0, 1.0)


def smooth_ecdf(noisy, *, p: int = 2, indices=None) -> np.ndarray:
    r"""Monotone smoothing of a BMR release (Eq. 3), pure post-processing.

    .. math::  \min_\nu \sum_{v} |\nu_v|^p \ \text{s.t.}\
               \acute F_i = \hat F_i + (A\nu)_i\ (i\in B),\
               \acute F_{\min B}\ge0,\ \acute F_{\max B}\le1,\
               \acute F_{b_k}\le\acute F_{b_{k+1}},

    with the corrections ``nu`` on the same tree as the noise (``A`` the
    ancestor matrix) and only consecutive elements of ``B`` constrained
    (see docs/paper-errors.md#bmr-smoothing-problem). ``p = 1`` is a linear programme (``nu = nu+ - nu-``, HiGHS);
    ``p = 2`` is a quadratic programme, solved in the values: the cheapest
    ``nu`` reaching values ``x`` has ``||nu||^2 = (x - F)' (A_B A_B')^{-1} (x - F)``,
    minimised over ``0 <= x_1 <= ... <= x_|B| <= 1``. With increments
    ``x = cumsum(d)``, ``d >= 0``, this is a bounded least-squares problem
    (exact active-set BVLS) plus the single constraint ``sum(d) <= 1``, whose
    Lagrange multiplier is found by a safeguarded root search (SLSQP, used
    before, stopped with "positive directional derivative" at the optimum on
    about one release in five at ``N = 64``). Solver
    round-off is removed by a final running maximum and clamp, so the output is
    exactly monotone and in ``[0, 1]``, and it is a deterministic function of
    ``noisy``.

    Args:
        noisy: ``(N,)`` released values ``F-hat``.
        p: 1 or 2.
        indices: the evaluation set ``B`` (increasing indices); all by default.

    Returns:
        ``(|B|,)`` smoothed values.

    Raises:
        ValueError: for bad input; RuntimeError if a solver fails.

    Example:
        >>> smooth_ecdf(np.array([0.1, 0.05, 0.6, 1.2]), p=1).round(6).tolist()
        [0.0, 0.0, 0.4, 1.0]
    """
    values = _as_values(noisy)
    if p not in (1, 2):
        raise ValueError(f"p must be 1 or 2, got {p!r}.")
    n_points = values.size
    idx = np.arange(n_points) if indices is None else np.asarray(indices, dtype=int)
    if idx.ndim != 1 or idx.size == 0 or np.any(np.diff(idx) <= 0):
        raise ValueError("indices must be a non-empty increasing 1-D array of grid indices.")
    if idx[0] < 0 or idx[-1] >= n_points:
        raise ValueError(f"indices must lie in [0, {n_points - 1}].")
    a = ancestor_matrix(tree_depth(n_points), n_points)[idx]
    f = values[idx]
    k = idx.size
    # constraint rows G x <= h on the smoothed values x = f + a nu
    diff = np.zeros((k + 1, k))
    diff[0, 0] = -1.0  # -x_1 <= 0
    diff[1, -1] = 1.0  # x_k <= 1
    rows = np.arange(k - 1)
    diff[2 + rows, rows] = 1.0  # x_j - x_j+1 <= 0
    diff[2 + rows, rows + 1] = -1.0
    bound = np.zeros(k + 1)
    bound[1] = 1.0
    if p == 1:
        g = diff @ a
        n_nodes = a.shape[1]
        result = scipy.optimize.linprog(
            np.ones(2 * n_nodes),
            A_ub=np.hstack([g, -g]),
            b_ub=bound - diff @ f,
            bounds=(0, None),
            method="highs",
        )
        if result.status != 0:
            raise RuntimeError(f"HiGHS failed on the p = 1 smoothing LP: {result.message}")
        smoothed = f + a @ (result.x[:n_nodes] - result.x[n_nodes:])
    else:
        smoothed = _smooth_least_squares(f, a)
    return _monotone_clamp(smoothed)


def _smooth_least_squares(f: np.ndarray, a: np.ndarray) -> np.ndarray:
    """The ``p = 2`` problem as bounded least squares in the increments (see smooth_ecdf)."""
    k = f.size
    cholesky = np.linalg.cholesky(a @ a.T)  # (x - f)' (A A')^-1 (x - f) = ||C^-1 (x - f)||^2
    cumulative = np.tril(np.ones((k, k)))  # x = cumulative @ increments
    design = scipy.linalg.solve_triangular(cholesky, cumulative, lower=True)
    target = scipy.linalg.solve_triangular(cholesky, f, lower=True)
    # mu 1'd added to the objective = shifting the target by mu * pull, with design' pull = 1
    pull = np.linalg.solve(design.T, np.ones(k))

    def increments(mu):
        result = scipy.optimize.lsq_linear(
            design, target - mu * pull, bounds=(0.0, np.inf), method="bvls", tol=1e-12
        )
        if result.status < 0:
            raise RuntimeError(f"BVLS failed on the p = 2 smoothing problem: {result.message}")
        return result.x

    d = increments(0.0)
    if d.sum() <= 1.0:
        return cumulative @ d
    # the multiplier of x_k <= 1: sum(d(mu)) is continuous, piecewise linear and
    # non-increasing in mu; bracket it, then regula falsi (Illinois) with bisection fallback
    lo, excess_lo = 0.0, d.sum() - 1.0
    hi = 1.0
    while (excess_hi := increments(hi).sum() - 1.0) > 0.0:
        lo, excess_lo, hi = hi, excess_hi, 2.0 * hi
        if hi > 1e12:
            raise RuntimeError("the p = 2 smoothing problem did not bracket its multiplier.")
    side = 0
    for _ in range(200):
        mid = hi - excess_hi * (hi - lo) / (excess_hi - excess_lo)
        if not lo < mid < hi:
            mid = 0.5 * (lo + hi)
        d = increments(mid)
        excess = d.sum() - 1.0
        if abs(excess) <= 1e-13 or hi - lo <= 1e-15 * hi:
            break
        if excess > 0.0:
            lo, excess_lo = mid, excess
            excess_hi = excess_hi / 2.0 if side == 1 else excess_hi
            side = 1
        else:
            hi, excess_hi = mid, excess
            excess_lo = excess_lo / 2.0 if side == -1 else excess_lo
            side = -1
    return cumulative @ d


def inverse_ecdf(values, grid, probabilities) -> jax.Array:
    """Inverse ECDF on the grid (BMR Algorithm 1 with midpoints snapped to grid points).

    Bisection over grid indices finds, for each ``p``, the smallest grid point
    ``tau_i`` with ``F(tau_i) >= p`` (the last grid point when there is none),
    so every answer is a grid point. Needs monotone values: smooth first.

    Args:
        values: ``(N,)`` (noisy) ECDF values on the grid.
        grid: ``(N,)`` increasing grid.
        probabilities: the levels to invert.

    Returns:
        The grid points, the shape of ``probabilities``.

    Raises:
        ValueError: if ``values`` is not non-decreasing or does not match the grid.

    Example:
        >>> inverse_ecdf([0.2, 0.5, 1.0], [1.0, 2.0, 3.0], [0.1, 0.5, 0.7]).tolist()
        [1.0, 2.0, 3.0]
    """
    v = _as_values(values)
    grid = check_grid(grid)
    if v.size != grid.shape[0]:
        raise ValueError(f"values has {v.size} entries but the grid has {grid.shape[0]} points.")
    if np.any(np.diff(v) < 0):
        raise ValueError("inverse_ecdf needs non-decreasing values; apply smooth_ecdf first.")
    # a binary search on the sorted values is exactly the bisection of Algorithm 1 on indices
    index = jnp.searchsorted(jnp.asarray(v), jnp.asarray(probabilities, dtype=jnp.float64))
    return grid[jnp.minimum(index, v.size - 1)]


def roc_curve(tp_values, fp_values) -> tuple[np.ndarray, np.ndarray]:
    """ROC points ``(FPR, TPR)`` from two monotone ECDFs (lower score = positive), from (0, 0).

    ``TPR(t) = F_TP(t) / F_TP(tau_N)``, ``FPR(t) = F_FP(t) / F_FP(tau_N)``
    (BMR Sec. 5.1 (docs/papers/bmr.md#bmr-roc)); a curve whose last value is not positive is treated as 0.

    Args:
        tp_values: ``(N,)`` true-positive ECDF values.
        fp_values: ``(N,)`` false-positive ECDF values.

    Returns:
        ``(fpr, tpr)`` arrays starting at ``(0, 0)``.
    """
    tp, fp = _as_values(tp_values), _as_values(fp_values)
    if tp.shape != fp.shape:
        raise ValueError("the two ECDFs must be evaluated on the same grid.")

    def rate(v):
        return np.clip(v / v[-1], 0.0, 1.0) if v[-1] > 0 else np.zeros_like(v)

    return np.concatenate([[0.0], rate(fp)]), np.concatenate([[0.0], rate(tp)])


def auc(fpr, tpr) -> float:
    """Area under the ROC polyline (trapezoid rule).

    Args:
        fpr: false-positive rates, increasing.
        tpr: the matching true-positive rates.

    Returns:
        The area.
    """
    fpr, tpr = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))


# ---------------------------------------------------------------- Hosmer–Lemeshow


def hosmer_lemeshow(probabilities, labels, cut_points) -> tuple[float, np.ndarray]:
    """Non-private Hosmer–Lemeshow statistic (BMR eq. 5) with half-open groups.

    Group ``q`` holds the records with ``t_(q-1) < M(x) <= t_q`` (the first
    also ``M(x) = t_0``), so a value on a cut point counts once (see docs/paper-errors.md#bmr-hl-algorithm).

    Args:
        probabilities: ``(n,)`` predicted probabilities ``M(x)`` in ``[0, 1]``.
        labels: ``(n,)`` labels in ``{0, 1}``.
        cut_points: ``(Q + 1,)`` non-decreasing ``t_0 = 0 < ... < t_Q = 1``.

    Returns:
        ``H`` and the ``(4, Q)`` sums ``E1, E0, O1, O0``.
    """
    m = np.clip(np.asarray(probabilities, dtype=float), 0.0, 1.0)
    y = np.asarray(check_labels(labels, m.shape[0]))
    sums = _group_sums(m, y, np.asarray(cut_points, dtype=float))
    return _hl_statistic(sums), sums


def _group_sums(m, y, cuts):
    group = np.clip(np.searchsorted(cuts[1:-1], m, side="left"), 0, cuts.size - 2)
    one_hot = np.eye(cuts.size - 1)[group]  # (n, Q)
    return np.stack([m @ one_hot, (1 - m) @ one_hot, y @ one_hot, (1 - y) @ one_hot])


def _hl_statistic(sums, floor: float = 1e-9) -> float:
    expected = np.maximum(sums[:2], floor)
    return float(np.sum((sums[2:] - expected) ** 2 / expected))


def private_hosmer_lemeshow(
    probabilities,
    labels,
    *,
    epsilon: float,
    key,
    n_points: int = 64,
    n_groups: int = 10,
    expected_floor: float = 1.0,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Private Hosmer–Lemeshow statistic: BMR Algorithm 2 with the corrections of docs/paper-errors.md#bmr-hl-algorithm.

    1. ``epsilon' = epsilon / (L + 9)``.
    2. One BMR ECDF of ``M(x)`` on ``n_points`` grid points of ``[0, 1]`` with
       node noise ``Lap(1/epsilon')`` (an ``(L+1) epsilon'``-DP release),
       smoothed with ``p = 2``; cut points ``t_q = F^{-1}(q/Q)`` on the grid,
       ``t_0 = 0``, ``t_Q = 1``.
    3. Half-open groups; ``E1 = sum M``, ``E0 = sum (1 - M)``, ``O1 = sum Y``,
       ``O0 = sum (1 - Y)`` per group, each plus ``Lap(1/epsilon')`` on the count
       scale (``E0`` and ``O0`` use ``1 - M`` and ``1 - Y``). One replaced
       record touches at most 2 groups, hence 8 sums: ``(L + 1 + 8) epsilon' = epsilon``.
    4. Noisy expected counts are clamped below at ``expected_floor``
       (post-processing) before ``H`` is formed.

    Args:
        probabilities: ``(n,)`` predicted probabilities.
        labels: ``(n,)`` outcomes, 0 or 1.
        epsilon: the privacy budget.
        key: a JAX PRNG key.
        n_points: the grid size of the ECDF release.
        n_groups: the number of risk groups.
        expected_floor: the smallest expected count a group may have.

    Returns:
        ``H``, the noisy ``(4, Q)`` sums, and the ``(Q + 1,)`` cut points.
    """
    check_epsilon(epsilon)
    m = np.clip(np.asarray(check_scores(probabilities)), 0.0, 1.0)
    y = np.asarray(check_labels(labels, m.shape[0]))
    depth = tree_depth(n_points)
    eps_prime = epsilon / (depth + 9)
    grid = np.linspace(0.0, 1.0, n_points)
    key_tree, key_sums = jax.random.split(key)
    release = AncestorLaplace(bmr_ecdf(m, grid), depth, 1.0 / eps_prime, count_scale=m.shape[0])
    smoothed = smooth_ecdf(np.asarray(release.sample(key_tree)), p=2)
    inner = np.asarray(inverse_ecdf(smoothed, grid, np.arange(1, n_groups) / n_groups))
    cuts = np.concatenate([[0.0], inner, [1.0]])
    noise = np.asarray(jax.random.laplace(key_sums, (4, n_groups))) / eps_prime
    sums = _group_sums(m, y, cuts) + noise
    sums[:2] = np.maximum(sums[:2], expected_floor)
    return _hl_statistic(sums), sums, cuts
