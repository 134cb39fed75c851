r"""Post-processing of Barczewski, Mawass & Ramon's private ECDF and ROC releases.

**Post-processing (free).** :func:`smooth_ecdf` (Eq. 3, ``p = 1`` linear
programme, ``p = 2`` quadratic programme, clamped to ``[0, 1]``),
:func:`inverse_ecdf` (Algorithm 1 on the grid), :func:`roc_curve` and
:func:`auc` from two private ECDFs (``bmr-roc``: ``epsilon/2`` each, sequential
composition gives ``epsilon``, see docs/paper-errors.md#bmr-roc-composition), and :func:`private_hosmer_lemeshow`
(Algorithm 2 with the corrections of docs/paper-errors.md#bmr-hl-algorithm).

**The Hosmer–Lemeshow procedure as a registered mechanism.** Its releases are three
numpyro sample sites (``Mechanism.release_sites``): ``"ecdf"``, the ECDF of the
predictions at node scale ``1/epsilon'``
(:class:`~dpaudit.model.noise.linear_laplace.AncestorLaplace`), then ``"expected"`` and
``"observed"``, the ``2 Q + 2 Q`` noisy group sums (:class:`HosmerLemeshowSums`, each sum
``Lap(1/epsilon')``) at cut points read off the released ECDF, with
``epsilon' = epsilon / (L + 9)``. The audit checks the budget split itself:
``bmr-hosmer-lemeshow`` (correct) and ``faulty/bmr-hosmer-lemeshow-budget``
(``epsilon / (L + 1)``, which forgets the group sums). The sums depend on the earlier
release (an adaptive composition): the audit evaluates the joint (whole-trace) density by
the chain rule, and the certified supremum of the loss is the sum of the sites' bounds,
the sums' bounds holding uniformly over every cut point vector
(:meth:`HosmerLemeshowSums.uniform_sup_loss`, :func:`dpaudit.model.sites.adaptive_sup_loss`).
:class:`HosmerLemeshowRelease` is the same transcript as one distribution, with its own
declared supremum, kept as the one-distribution form the tests compare the multi-site
form with (as ``SparseVector`` is for the SVT program).

Post-processing costs no privacy; the releases themselves are in
:mod:`mechanisms.ecdf.tree`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import scipy.linalg
from numpyro.distributions import Distribution, constraints

import dpaudit
from dpaudit.accounting.suprema import ExactSupLoss, exact_sup_loss
from dpaudit.core.checks import check_count, check_epsilon
from dpaudit.model.noise.linear_laplace import AncestorLaplace, ancestor_matrix
from mechanisms.ecdf.tree import (
    bmr_ecdf,
    bmr_exact_sensitivity,
    check_grid,
    check_labels,
    check_scores,
    tree_depth,
)
from mechanisms.faulty import register_pair

__all__ = [
    "HosmerLemeshowRelease",
    "HosmerLemeshowSums",
    "auc",
    "hosmer_lemeshow",
    "hosmer_lemeshow_epsilon_prime",
    "hosmer_lemeshow_sum_shift",
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
    from scipy.optimize import linprog  # on use: loading the catalogue does not need it

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
        result = linprog(
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
    from scipy.optimize import lsq_linear  # on use: loading the catalogue does not need it

    k = f.size
    cholesky = np.linalg.cholesky(a @ a.T)  # (x - f)' (A A')^-1 (x - f) = ||C^-1 (x - f)||^2
    cumulative = np.tril(np.ones((k, k)))  # x = cumulative @ increments
    design = scipy.linalg.solve_triangular(cholesky, cumulative, lower=True)
    target = scipy.linalg.solve_triangular(cholesky, f, lower=True)
    # mu 1'd added to the objective = shifting the target by mu * pull, with design' pull = 1
    pull = np.linalg.solve(design.T, np.ones(k))

    def increments(mu):
        result = lsq_linear(
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


def hosmer_lemeshow_epsilon_prime(epsilon: float, depth: int) -> float:
    """The per-release budget ``epsilon' = epsilon / (L + 9)`` of the private Hosmer–Lemeshow test.

    ``(L + 1) epsilon'`` pays for the ECDF of the predictions (BMR's lemma bound on its
    node sensitivity) and ``8 epsilon'`` for the group sums (a replaced record moves at
    most 2 groups, 4 sums each). The registered ``bmr-hosmer-lemeshow`` uses this
    function, so its audit checks the split :func:`private_hosmer_lemeshow` uses.

    Args:
        epsilon: the total budget.
        depth: the tree depth ``L`` of the ECDF release.

    Returns:
        ``epsilon'``.

    Example:
        >>> hosmer_lemeshow_epsilon_prime(1.1, 2)
        0.1
    """
    check_epsilon(epsilon)
    return epsilon / (depth + 9)


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
    eps_prime = hosmer_lemeshow_epsilon_prime(epsilon, depth)
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


# ------------------------------------------- the Hosmer–Lemeshow procedure as a mechanism

# Costs of the group sums are sums of a few exact terms times epsilon'; 1e-12 relative
# covers their float rounding when they enter a certified supremum.
_HL_RTOL = 1e-12


def _monotone_cuts(values, grid, n_groups: int):
    """Cut points ``(Q + 1,)`` from a noisy ECDF: monotone envelope, then the inverse on the grid.

    The envelope ``min(1, max(0, cummax F))`` replaces the quadratic-programme smoothing
    of :func:`private_hosmer_lemeshow` (both are post-processing of the release; this one
    is a JAX expression, so the release law's density can be evaluated under ``vmap``).
    """
    envelope = jnp.clip(jax.lax.cummax(values, axis=values.ndim - 1), 0.0, 1.0)
    levels = jnp.arange(1, n_groups) / n_groups
    index = jnp.minimum(jnp.searchsorted(envelope, levels), grid.shape[0] - 1)
    return jnp.concatenate([jnp.zeros(1), grid[index], jnp.ones(1)])


def _jax_group_sums(scores, labels, cuts):
    """The ``(4, Q)`` sums ``E1, E0, O1, O0`` of half-open groups (as :func:`hosmer_lemeshow`)."""
    n_groups = cuts.shape[0] - 1
    group = jnp.clip(jnp.searchsorted(cuts[1:-1], scores, side="left"), 0, n_groups - 1)
    one_hot = jax.nn.one_hot(group, n_groups, dtype=jnp.float64)
    columns = jnp.stack([scores, 1.0 - scores, labels, 1.0 - labels])
    return columns @ one_hot


#: The rows of the ``(4, Q)`` group sums each release site of the procedure carries.
_HL_ROWS = {"all": slice(0, 4), "expected": slice(0, 2), "observed": slice(2, 4)}


def hosmer_lemeshow_sum_shift(record, record_prime, rows: str = "all") -> tuple[float, float]:
    """Bounds, over every choice of cut points, on ``sum |Delta|`` of the group sums.

    A record ``(m, y)`` (``m`` in ``[0, 1]``, ``y`` in ``{0, 1}``) adds ``(m, 1 - m, y, 1 - y)``
    to the sums ``(E1, E0, O1, O0)`` of its group. Replaced by ``(m', y')``: in different
    groups both groups move by ``m + (1 - m) = 1`` in the expected rows and by
    ``y + (1 - y) = 1`` in the observed rows, total ``2`` each (``4`` in all); in the same
    group the expected rows move by ``2 |m - m'|`` and the observed rows by ``2 |y - y'|``
    (``<= 2`` each). Distinct scores can fall in different groups, equal scores never do.
    The same-group value is the smallest over cut points, whatever the groups are; the
    different-group value the largest, attained when a cut point separates the scores.

    Args:
        record: ``(m, y)`` in ``D``.
        record_prime: ``(m', y')`` in ``D'``.
        rows: ``"all"`` (the ``4 Q`` sums), ``"expected"`` (``E1, E0``) or ``"observed"``
            (``O1, O0``).

    Returns:
        ``(lower, upper)``: bounds on the total shift of those rows, valid for every choice
        of cut points.

    Raises:
        ValueError: for an unknown ``rows``.

    Example:
        >>> hosmer_lemeshow_sum_shift((0.0, 0.0), (1.0, 1.0))
        (4.0, 4.0)
        >>> hosmer_lemeshow_sum_shift((0.4, 1.0), (0.4, 0.0), rows="expected")
        (0.0, 0.0)
    """
    if rows not in _HL_ROWS:
        raise ValueError(f"rows must be one of {tuple(_HL_ROWS)}, got {rows!r}.")
    (m, y), (m2, y2) = record, record_prime
    parts = {"expected": 2.0 * abs(m - m2), "observed": 2.0 * abs(y - y2)}
    names = ("expected", "observed") if rows == "all" else (rows,)
    same_group = sum(parts[name] for name in names)
    return same_group, (2.0 * len(names) if m != m2 else same_group)


def _one_record_shift(law, other, rows: str = "all") -> tuple[float, float] | None:
    """:func:`hosmer_lemeshow_sum_shift` of the one record two laws' datasets differ in.

    Args:
        law, other: laws carrying ``scores`` and ``labels`` of their datasets.
        rows: as :func:`hosmer_lemeshow_sum_shift`.

    Returns:
        ``(lower, upper)`` (``(0, 0)`` for equal datasets), or ``None`` when the datasets
        differ in more than one record.
    """
    moved = np.flatnonzero(
        (np.asarray(law.scores) != np.asarray(other.scores))
        | (np.asarray(law.labels) != np.asarray(other.labels))
    )
    if moved.size > 1:
        return None
    if not moved.size:
        return 0.0, 0.0
    i = int(moved[0])
    return hosmer_lemeshow_sum_shift(
        (float(law.scores[i]), float(law.labels[i])),
        (float(other.scores[i]), float(other.labels[i])),
        rows=rows,
    )


class HosmerLemeshowRelease(Distribution):
    """The transcript of the private Hosmer–Lemeshow procedure: ECDF values, then noisy sums.

    ``x = (F, S)``: ``F`` the BMR ECDF of the predictions ``m`` on ``grid`` with node noise
    ``Lap(1/epsilon')`` (:class:`~dpaudit.model.noise.linear_laplace.AncestorLaplace`), ``S`` the
    ``(4, Q)`` group sums (flattened row-major) at the cut points
    :func:`_monotone_cuts` ``(F)`` plus independent ``Lap(1/epsilon')`` each. The density
    is the chain rule ``p(F) p(S | cuts(F))``. The registered ``bmr-hosmer-lemeshow``
    releases the same transcript (same layout) as three sample sites; this one-law form,
    with its own supremum, is what the tests compare it with.

    Args:
        scores: ``(n,)`` predicted probabilities (clipped to ``[0, 1]``).
        labels: ``(n,)`` outcomes in ``{0, 1}``.
        grid: ``(N,)`` ECDF grid on ``[0, 1]``.
        depth: the tree depth ``L`` (``N <= 2^L``).
        epsilon_prime: the per-release budget ``epsilon'``.
        n_groups: the number ``Q`` of risk groups.
    """

    support = constraints.real_vector
    pytree_data_fields = ("ecdf", "scores", "labels", "grid")
    pytree_aux_fields = ("n_groups", "sum_scale", "epsilon_prime")

    def __init__(self, scores, labels, grid, depth, epsilon_prime, n_groups, *, validate_args=None):
        self.scores = jnp.clip(jnp.asarray(scores, dtype=jnp.float64), 0.0, 1.0)
        self.labels = jnp.asarray(labels, dtype=jnp.float64)
        self.grid = jnp.asarray(grid, dtype=jnp.float64)
        self.epsilon_prime = float(epsilon_prime)
        self.sum_scale = 1.0 / self.epsilon_prime
        self.n_groups = int(n_groups)
        n = self.scores.shape[0]
        self.ecdf = AncestorLaplace(
            bmr_ecdf(self.scores, self.grid), depth, self.sum_scale, count_scale=n
        )
        width = self.grid.shape[0] + 4 * self.n_groups
        super().__init__(batch_shape=(), event_shape=(width,), validate_args=validate_args)

    @property
    def density_work_elements(self) -> int:
        """The ECDF density's working memory (the group sums add ``O(N + Q)``)."""
        return self.ecdf.density_work_elements + 8 * self.event_shape[0]

    def _sums(self, ecdf_values):
        cuts = _monotone_cuts(ecdf_values, self.grid, self.n_groups)
        return _jax_group_sums(self.scores, self.labels, cuts).reshape(-1)

    def sample(self, key, sample_shape=()):
        """Draw transcripts.

        Args:
            key: a JAX PRNG key.
            sample_shape: leading shape.

        Returns:
            ``sample_shape + (N + 4 Q,)`` transcripts.
        """
        key_ecdf, key_sums = jax.random.split(key)
        f = self.ecdf.sample(key_ecdf, sample_shape)
        flat = f.reshape(-1, f.shape[-1])
        sums = jax.vmap(self._sums)(flat).reshape((*tuple(sample_shape), 4 * self.n_groups))
        noise = jax.random.laplace(key_sums, sums.shape, dtype=jnp.float64) * self.sum_scale
        return jnp.concatenate([f, sums + noise], axis=-1)

    def log_prob(self, value):
        """The chain-rule log-density ``log p(F) + log p(S | cuts(F))``.

        Args:
            value: ``(..., N + 4 Q)`` transcripts.

        Returns:
            The log-density, shape ``(...)``.
        """
        n_points = self.grid.shape[0]
        f, s = value[..., :n_points], value[..., n_points:]
        flat = f.reshape(-1, n_points)
        loc = jax.vmap(self._sums)(flat).reshape(s.shape)
        b = self.sum_scale
        log_sums = jnp.sum(-jnp.abs(s - loc) / b - jnp.log(2.0 * b), axis=-1)
        return self.ecdf.log_prob(f) + log_sums

    def log_prob_error(self, value) -> float:
        """The ECDF density's certified error bound (the Laplace terms are closed forms).

        Args:
            value: one transcript.

        Returns:
            ``0.0`` or ``inf`` (:meth:`AncestorLaplace.log_prob_error`).
        """
        return self.ecdf.log_prob_error(value[..., : self.grid.shape[0]])

    def exact_sup_loss(self, other) -> ExactSupLoss | None:
        """Certified bounds on the supremum of the loss against ``other`` (adjacent data).

        ``L(F, S) = L_F(F) + L_S(S | cuts(F))``. For every ``F``, ``sup_S L_S`` is the group
        sums' total shift times ``epsilon'``, which lies in the bounds of
        :func:`hosmer_lemeshow_sum_shift` whatever the cut points; so
        ``sup L_F + lower <= sup L <= sup L_F + upper``, with ``sup L_F`` the ECDF's
        linear-programme bounds (:func:`dpaudit.accounting.suprema.exact_sup_loss`).

        Args:
            other: the release law under the neighbouring dataset.

        Returns:
            An :class:`~dpaudit.accounting.suprema.ExactSupLoss`, or ``None`` for another kind of law, a
            different grid, budget or group count, or datasets differing in more than one
            record.
        """
        if not isinstance(other, HosmerLemeshowRelease) or not self._same_design(other):
            return None
        shift = _one_record_shift(self, other)
        if shift is None:
            return None
        lower, upper = shift
        ecdf = exact_sup_loss(self.ecdf, other.ecdf)
        if ecdf is None:
            return None
        low = lower * self.epsilon_prime * (1 - _HL_RTOL)
        high = upper * self.epsilon_prime * (1 + _HL_RTOL)
        return ExactSupLoss(
            forward_lower=math.nextafter(ecdf.forward_lower + low, -math.inf),
            forward_upper=math.nextafter(ecdf.forward_upper + high, math.inf),
            backward_lower=math.nextafter(ecdf.backward_lower + low, -math.inf),
            backward_upper=math.nextafter(ecdf.backward_upper + high, math.inf),
            method="declared: hosmer-lemeshow (" + ecdf.method + " + group sums)",
        )

    def _same_design(self, other) -> bool:
        return (
            self.n_groups == other.n_groups
            and self.epsilon_prime == other.epsilon_prime
            and np.array_equal(np.asarray(self.grid), np.asarray(other.grid))
            and self.scores.shape == other.scores.shape
            and self.ecdf.depth == other.ecdf.depth
        )


class HosmerLemeshowSums(Distribution):
    """Noisy group sums of the Hosmer–Lemeshow procedure at given cut points: one release site.

    ``rows="expected"``: ``(E1, E0)``, ``rows="observed"``: ``(O1, O0)`` of the half-open
    groups of :func:`hosmer_lemeshow` at ``cuts``, a ``(2, Q)`` release, each sum plus
    independent ``Lap(scale)``. In the registered procedure the cut points are read off
    the released ECDF, so this law depends on an earlier release: it names ``cuts`` in
    :attr:`uniform_fields` and declares bounds on the supremum of its loss that hold for
    every cut point vector (:meth:`uniform_sup_loss`; the protocol of
    :mod:`dpaudit.model.sites`). The sums themselves are computed when needed, not stored, so no
    stored parameter depends on both the data and the earlier release.

    Args:
        scores: ``(n,)`` predicted probabilities (clipped to ``[0, 1]``).
        labels: ``(n,)`` outcomes in ``{0, 1}``.
        cuts: ``(Q + 1,)`` cut points ``t_0 = 0 <= ... <= t_Q = 1``.
        scale: the Laplace scale ``1/epsilon'`` of each sum (a number, or a traced scalar
            when the model is traced with its constants as ``jit`` arguments).
        rows: ``"expected"`` or ``"observed"``.
        log_normalizer: ``log(2 scale)``; ``None`` computes it on the host from a concrete
            ``scale``. A builder passes it with a traced scale, so the density keeps the
            host's bits (XLA's runtime ``log`` may differ from it in the last bit).

    Raises:
        ValueError: for an unknown ``rows``, fewer than two groups or a bad scale.
    """

    support = constraints.independent(constraints.real, 2)
    # the scale is a leaf: two builds with other epsilons share one program
    # (tests/whitebox/test_second_audit_programs.py)
    pytree_data_fields = ("scores", "labels", "cuts", "scale", "log_normalizer")
    pytree_aux_fields = ("rows",)
    #: The fields computed from the earlier release (the ECDF): the bounds of
    #: :meth:`uniform_sup_loss` hold for every value of them.
    uniform_fields = ("cuts",)

    def __init__(
        self, scores, labels, cuts, scale, rows, *, log_normalizer=None, validate_args=None
    ):
        if rows not in ("expected", "observed"):
            raise ValueError(f"rows must be 'expected' or 'observed', got {rows!r}.")
        self.scores = jnp.clip(jnp.asarray(scores, dtype=jnp.float64), 0.0, 1.0)
        self.labels = jnp.asarray(labels, dtype=jnp.float64)
        self.cuts = jnp.asarray(cuts, dtype=jnp.float64)
        if self.cuts.ndim != 1 or self.cuts.shape[0] < 3:
            raise ValueError("cuts must be a 1-D array of Q + 1 >= 3 cut points.")
        if not isinstance(scale, jax.core.Tracer):
            scale = float(scale)
            if not (math.isfinite(scale) and scale > 0):
                raise ValueError(f"the Laplace scale must be finite and positive, got {scale!r}.")
        if log_normalizer is None:
            log_normalizer = math.log(2.0 * scale)  # a traced scale passes its own (Args)
        self.scale = jnp.asarray(scale, dtype=jnp.float64)
        self.log_normalizer = jnp.asarray(log_normalizer, dtype=jnp.float64)
        self.rows = rows
        n_groups = self.cuts.shape[0] - 1
        super().__init__(batch_shape=(), event_shape=(2, n_groups), validate_args=validate_args)

    @property
    def loc(self) -> jax.Array:
        """The ``(2, Q)`` exact sums of the rows at the cut points."""
        return _jax_group_sums(self.scores, self.labels, self.cuts)[_HL_ROWS[self.rows]]

    def sample(self, key, sample_shape=()):
        """Draw the noisy sums.

        Args:
            key: a JAX PRNG key.
            sample_shape: leading shape.

        Returns:
            ``sample_shape + (2, Q)`` noisy sums.
        """
        shape = tuple(sample_shape) + self.event_shape
        return self.loc + self.scale * jax.random.laplace(key, shape, dtype=jnp.float64)

    def log_prob(self, value):
        """The Laplace log-density of the sums.

        Args:
            value: ``(..., 2, Q)`` noisy sums.

        Returns:
            The log-density, shape ``(...)``.
        """
        terms = -jnp.abs(value - self.loc) / self.scale - self.log_normalizer
        return jnp.sum(terms, axis=(-2, -1))

    def uniform_sup_loss(self, other) -> ExactSupLoss | None:
        """Bounds on the supremum of the loss against ``other`` valid for every cut point vector.

        Both laws are read at the same cut points (the same earlier release). Given the cut
        points the loss of independent Laplace sums has supremum ``||Delta||_1 / scale``
        (attained: take every sum far beyond both centres), and for one replaced record
        ``||Delta||_1`` lies in the bounds of :func:`hosmer_lemeshow_sum_shift` for these
        rows, whatever the cut points: the lower bound is below the supremum at every cut
        point vector, the upper bound above it.

        Args:
            other: the law under the neighbouring dataset.

        Returns:
            An :class:`~dpaudit.accounting.suprema.ExactSupLoss` (both directions alike), or ``None``
            for another kind of law, other rows, scale or shapes, or datasets differing in
            more than one record.
        """
        if not isinstance(other, HosmerLemeshowSums) or other.rows != self.rows:
            return None
        if float(other.scale) != float(self.scale) or other.cuts.shape != self.cuts.shape:
            return None
        if other.scores.shape != self.scores.shape:
            return None
        shift = _one_record_shift(self, other, rows=self.rows)
        if shift is None:
            return None
        lower, upper = shift
        # shift / scale is rounded once (and the shift, a sum of two differences, twice)
        low = lower / float(self.scale) * (1 - _HL_RTOL)
        high = upper / float(self.scale) * (1 + _HL_RTOL)
        method = f"declared: hosmer-lemeshow {self.rows} sums, uniform over cut points"
        return ExactSupLoss(low, high, low, high, method)


_HL_EXAMPLE = {"epsilon": 1.0, "n": 40, "n_points": 4, "n_groups": 4}


def _hosmer_lemeshow_mechanism(name, epsilon, n, n_points, n_groups, budget, known_flaw=None):
    check_epsilon(epsilon)
    n, n_points = check_count("n", n), check_count("n_points", n_points)
    n_groups = check_count("n_groups", n_groups)
    if n_points < 2 or n_groups < 2:
        raise ValueError("n_points and n_groups must be at least 2.")
    depth = tree_depth(n_points)
    grid = jnp.linspace(0.0, 1.0, n_points)
    epsilon_prime = budget(epsilon, depth)
    scale = 1.0 / epsilon_prime
    log_normalizer = math.log(2.0 * scale)  # closed over: a jit argument with the host's bits

    def model(data):
        scores, labels = data
        m = jnp.clip(check_scores(scores, n), 0.0, 1.0)
        y = check_labels(labels, n)
        # 1. the ECDF of the predictions, node noise Lap(1/epsilon')
        ecdf = numpyro.sample(
            "ecdf", AncestorLaplace(bmr_ecdf(m, grid), depth, scale, count_scale=n)
        )
        # 2. cut points read off the released ECDF (post-processing), then the group sums
        cuts = _monotone_cuts(ecdf, grid, n_groups)
        for rows in ("expected", "observed"):
            law = HosmerLemeshowSums(m, y, cuts, scale, rows, log_normalizer=log_normalizer)
            numpyro.sample(rows, law)

    params = {
        "epsilon": epsilon,
        "n": n,
        "n_points": n_points,
        "n_groups": n_groups,
        "depth": depth,
        "epsilon_prime": epsilon_prime,
    }
    claim = dpaudit.Claim(
        epsilon=epsilon,
        reference="Barczewski, Mawass & Ramon, Algorithm 2 / Thm 5.1 with the corrections of "
        "docs/paper-errors.md#bmr-hl-algorithm: epsilon' = epsilon / (L + 9)",
    )
    return dpaudit.Mechanism(
        name=name,
        model=model,
        claim=claim,
        params=params,
        release_site=("ecdf", "expected", "observed"),
        description=f"Private Hosmer-Lemeshow procedure, three release sites: the BMR ECDF of "
        f"the predictions on {n_points} points, then {2 * n_groups} expected and {2 * n_groups} "
        f"observed group sums at cut points read off it, Lap(1/{epsilon_prime:.4g}) each.",
        known_flaw=known_flaw,
    )


@dpaudit.register("bmr-hosmer-lemeshow", example=_HL_EXAMPLE)
def bmr_hosmer_lemeshow(epsilon: float = 1.0, n: int = 100, n_points: int = 4, n_groups: int = 4):
    """Private Hosmer–Lemeshow (BMR Algorithm 2, corrected) with ``epsilon' = epsilon/(L+9)``.

    Args:
        epsilon: the claimed epsilon.
        n: the public number of records ``(prediction, outcome)``.
        n_points: grid points ``N`` of the ECDF of the predictions.
        n_groups: risk groups ``Q``.

    Returns:
        The :class:`~dpaudit.Mechanism` (release sites ``"ecdf"``, ``"expected"``,
        ``"observed"``); data are ``(predictions, labels)``.
    """
    return _hosmer_lemeshow_mechanism(
        "bmr-hosmer-lemeshow",
        epsilon,
        n,
        n_points,
        n_groups,
        hosmer_lemeshow_epsilon_prime,
    )


@dpaudit.register("faulty/bmr-hosmer-lemeshow-budget", example=_HL_EXAMPLE, faulty=True)
def bmr_hosmer_lemeshow_budget(
    epsilon: float = 1.0, n: int = 100, n_points: int = 4, n_groups: int = 4
):
    """Private Hosmer–Lemeshow with ``epsilon' = epsilon/(L+1)``: the group sums are not paid for.

    Args:
        epsilon, n, n_points, n_groups: as :func:`bmr_hosmer_lemeshow`.

    Returns:
        The :class:`~dpaudit.Mechanism`; ``known_flaw.true_epsilon`` is
        ``(Delta* + 4) epsilon / (L + 1)`` with ``Delta*`` the ECDF's exact worst case
        (:func:`~mechanisms.ecdf.bmr_exact_sensitivity`), attained together with the group
        sums' worst shift 4 by a record moving from ``(0, 0)`` to ``(1, 1)`` when that move is
        the ECDF's worst (``N = 2^L <= 4``) and bounded by it otherwise.
    """
    n_points = check_count("n_points", n_points)
    depth = tree_depth(n_points)
    worst, _ = bmr_exact_sensitivity(n_points)
    flaw = dpaudit.KnownFlaw(
        reason="epsilon' = epsilon / (L + 1) pays for the ECDF only; the 4 Q noisy group sums "
        "(a replaced record moves at most 2 groups: a total shift of 4) spend 4 epsilon' more.",
        true_epsilon=(worst + 4.0) * epsilon / (depth + 1),
        visible_on="a record moving from prediction 0, outcome 0 to prediction 1, outcome 1",
    )
    return _hosmer_lemeshow_mechanism(
        "faulty/bmr-hosmer-lemeshow-budget",
        epsilon,
        n,
        n_points,
        n_groups,
        lambda eps, depth: eps / (depth + 1),
        known_flaw=flaw,
    )


@register_pair("faulty/bmr-hosmer-lemeshow-budget")
def _hl_worst_pair():
    """Random records; record 0 from (prediction 0, outcome 0) to (1, 1)."""
    n = _HL_EXAMPLE["n"]
    rng = np.random.default_rng(0)
    scores, labels = rng.uniform(size=n), rng.integers(0, 2, size=n).astype(float)
    scores_prime, labels_prime = scores.copy(), labels.copy()
    scores[0], labels[0], scores_prime[0], labels_prime[0] = 0.0, 0.0, 1.0, 1.0
    return (scores, labels), (scores_prime, labels_prime)
