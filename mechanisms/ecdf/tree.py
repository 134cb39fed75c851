r"""Differentially private ECDFs (Barczewski, Mawass & Ramon) and their post-processing.

**Release (BMR Eq. 2, Theorem 3.1; docs/papers/bmr.md#bmr-hierarchical-mechanism).** On a public, fixed grid
``tau_1 < ... < tau_N`` (never the data's min and max: docs/paper-errors.md#bmr-data-dependent-grid) with
``L = ceil(log2 N)``, every node of a complete binary tree over ``2^L``
leaves draws ``eta_v ~ Lap((L+1)/epsilon)`` on the **count** scale, and every
CDF value receives the noise of all its ``L + 1`` ancestors:

.. math::  \hat F(\tau_i) = F(\tau_i) + \frac1n \sum_{l=0}^{L} \eta_{\lceil i/2^l\rceil,\,l}
           = F + A\eta/n .

Scores are clamped to ``[tau_1, tau_N]`` first (a documented, claimed step:
``F(tau_N) = 1``). Adjacency is replace-one with ``n`` public (see docs/paper-errors.md#bmr-error-units).

**Why it is private, and how the claim is checked.** Replacing one record
shifts ``nF`` by the indicator of an index interval. The privacy loss between
neighbours is exactly ``min{||nu||_1 : A nu = n(F_D - F_D')} / b``
(:mod:`dpaudit.model.noise.linear_laplace`); BMR's Lemma 1 bounds the minimum by
``L + 1``, and the exact worst case over all intervals is ``L`` (see docs/paper-errors.md#bmr-noise-scale,
reproduced by :func:`bmr_worst_case_sensitivity` and the tests;
:func:`bmr_exact_sensitivity` and :func:`bmr_roc_exact_sensitivity` give the
worst case over the moves a replacement can really make, with a move that
attains it, and :func:`bmr_exact_epsilon` the resulting tight epsilon of a
built mechanism). The mechanism's
``difference_norm`` is that minimum (computed exactly by
:func:`~dpaudit.model.noise.linear_laplace.ancestor_sensitivity`), in the ``l1``
norm of node shifts, so ``mech.distance(D, D') <= claim.sensitivity = L + 1``
is testable on any pair, and the release's marginal density is available
(:class:`~dpaudit.model.noise.linear_laplace.AncestorLaplace`, exact belief
propagation on the tree) so audits can also evaluate privacy losses directly.

Post-processing of released curves (smoothing, inverse ECDF, ROC/AUC,
Hosmer–Lemeshow) lives in :mod:`mechanisms.ecdf.analysis`.

**Calibration.** ``calibration="lemma"`` (default) is BMR's node scale
``(L+1)/epsilon``; ``calibration="exact"`` uses the exact worst case instead
(``L/epsilon`` when ``N = 2^L``), which spends the whole budget and lowers
the noise standard deviation by the factor ``L/(L+1)``.

Registered: ``bmr-ecdf`` and ``bmr-roc``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro

import dpaudit
from dpaudit.core.checks import check_choice, check_epsilon, is_concrete
from dpaudit.model.noise.linear_laplace import AncestorLaplace, ancestor_sensitivity
from mechanisms.common import summary_release

__all__ = [
    "bmr_ecdf",
    "bmr_ecdf_mechanism",
    "bmr_exact_epsilon",
    "bmr_exact_sensitivity",
    "bmr_node_scale",
    "bmr_roc_exact_sensitivity",
    "bmr_roc_mechanism",
    "bmr_sensitivity",
    "bmr_worst_case_sensitivity",
    "check_grid",
    "check_labels",
    "check_scores",
    "ecdf_counts",
    "interval_shifts",
    "roc_counts",
    "tree_depth",
]

_BMR = "Barczewski, Mawass & Ramon, Thm 3.1 and Lemma 1 (Sec. 4.2; docs/paper-errors.md#bmr-noise-scale)"
_EXACT = "; node scale from the exact worst-case node explanation (linear programme, docs/paper-errors.md#bmr-noise-scale)"
CALIBRATIONS = ("lemma", "exact")


# ---------------------------------------------------------------------- summaries


def tree_depth(n_points: int) -> int:
    """``L = ceil(log2 N)``: depth of the tree over ``N`` grid points (0 for ``N = 1``).

    Args:
        n_points: ``N`` >= 1.

    Returns:
        ``L``.
    """
    if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)):
        raise TypeError(f"n_points must be an integer, got {type(n_points).__name__}.")
    if not 1 <= n_points <= 2**20:
        raise ValueError(f"n_points must lie in [1, 2^20], got {n_points}.")
    return math.ceil(math.log2(n_points)) if n_points > 1 else 0


def check_grid(grid) -> jax.Array:
    """Check a public evaluation grid: finite, 1-D, strictly increasing.

    Args:
        grid: the candidate grid.

    Returns:
        The grid as a float64 JAX array.

    Raises:
        ValueError: if it is empty, not 1-D, not finite or not strictly increasing.
    """
    grid = jnp.asarray(grid, dtype=jnp.float64)
    if grid.ndim != 1 or grid.shape[0] == 0:
        raise ValueError(f"grid must be a non-empty 1-D array, got shape {grid.shape}.")
    values = np.asarray(grid)
    if not np.all(np.isfinite(values)) or np.any(np.diff(values) <= 0):
        raise ValueError("grid must be finite and strictly increasing (a public, fixed grid).")
    return grid


def check_scores(data, n: int | None = None) -> jax.Array:
    """Check a dataset of scalar scores (one per record).

    Args:
        data: the scores.
        n: the public number of records, or ``None`` to accept any.

    Returns:
        The scores as a float64 JAX array.

    Raises:
        ValueError: if not 1-D, of the wrong length, or (when concrete) not finite.
    """
    scores = jnp.asarray(data, dtype=jnp.float64)
    if scores.ndim != 1:
        raise ValueError(f"scores must be a 1-D array of records, got shape {scores.shape}.")
    if n is not None and scores.shape[0] != n:
        raise ValueError(
            f"the mechanism was built for n = {n} records (n is public under replace-one "
            f"adjacency), got {scores.shape[0]}."
        )
    if is_concrete(scores) and not np.all(np.isfinite(np.asarray(scores))):
        raise ValueError("scores contain NaN or infinite values; remove or clip them first.")
    return scores


def ecdf_counts(scores, grid) -> jax.Array:
    """``n F(tau_i) = #{k : clamp(x_k) <= tau_i}`` with scores clamped to ``[tau_1, tau_N]``.

    Args:
        scores: ``(n,)`` scores.
        grid: ``(N,)`` increasing grid.

    Returns:
        ``(N,)`` counts.

    Example:
        >>> ecdf_counts(jnp.array([-1.0, 0.2, 0.6, 5.0]), jnp.array([0.0, 0.5, 1.0])).tolist()
        [1.0, 2.0, 4.0]
    """
    grid = check_grid(grid)
    x = jnp.clip(check_scores(scores), grid[0], grid[-1])
    return jnp.sum(x[:, None] <= grid[None, :], axis=0).astype(jnp.float64)


def bmr_ecdf(scores, grid) -> jax.Array:
    """The ECDF ``F(tau_i)`` on the grid (clamped scores), BMR Def. 3.

    Args:
        scores: ``(n,)`` scores.
        grid: ``(N,)`` increasing grid.

    Returns:
        ``(N,)`` ECDF values.
    """
    counts = ecdf_counts(scores, grid)
    return counts / jnp.shape(scores)[0]


def bmr_node_scale(epsilon: float, depth: int) -> float:
    """Node Laplace scale ``(L+1)/epsilon`` on the count scale (BMR Thm 3.1).

    Args:
        epsilon: the privacy parameter.
        depth: the tree depth ``L``.

    Returns:
        The scale.
    """
    check_epsilon(epsilon)
    return (depth + 1) / float(epsilon)


def bmr_sensitivity(depth: int) -> float:
    """The claimed bound ``L + 1`` on the node explanation (Lemma 1; used to calibrate).

    Args:
        depth: the tree depth ``L``.

    Returns:
        ``L + 1``.
    """
    return float(depth + 1)


def interval_shifts(n_points: int) -> np.ndarray:
    """All ``N (N+1) / 2`` interval indicators ``1_[a, b]`` on ``N`` grid points.

    A replacement that moves a score from grid cell ``a`` to cell ``b + 1``
    changes ``n F`` by ``+-1_[a, b]``: these are all the count shifts of
    replace-one neighbours (``F(tau_N) = n`` never moves, so the intervals that
    contain ``N`` are conservative extras).

    Args:
        n_points: ``N``.

    Returns:
        ``(N (N+1) / 2, N)`` indicators.
    """
    a, b = np.triu_indices(n_points)
    idx = np.arange(n_points)
    return ((idx >= a[:, None]) & (idx <= b[:, None])).astype(float)


def bmr_worst_case_sensitivity(depth: int, n_points: int | None = None) -> float:
    """``max over intervals of min{||nu||_1 : A nu = 1_[a,b]}``: the exact worst case (= L).

    Computed with the exact tree dynamic programme
    (:func:`~dpaudit.model.noise.linear_laplace.ancestor_sensitivity`) over every
    interval of the ``n_points <= 2^L`` released leaves (all ``2^L`` by default).

    Args:
        depth: the tree depth ``L``.
        n_points: ``N`` (default ``2^L``).

    Returns:
        The exact worst case.
    """
    m = 2**depth if n_points is None else int(n_points)
    return float(np.max(ancestor_sensitivity(depth, interval_shifts(m))))


def _check_n_points(n_points) -> int:
    tree_depth(n_points)  # the type and range
    if n_points < 2:
        raise ValueError(
            f"n_points must be at least 2 (one grid point never moves), got {n_points}."
        )
    return int(n_points)


def bmr_exact_sensitivity(n_points: int) -> tuple[float, tuple[int, int]]:
    r"""Exact worst-case node explanation of a replace-one move, and a move that attains it.

    A record with clamped score in grid cell ``a`` (``tau_(a-1) < x <= tau_a``)
    replaced by one in cell ``c > a`` changes the counts by
    ``n (F_D - F_D') = 1_[a, c-1]``: an interval that never contains the last
    grid point (``n F(tau_N) = n`` does not move). Over all such moves this
    returns

    .. math::  \Delta^\ast = \max_{0 \le a < c \le N-1}\ \min\{\|\nu\|_1 : A\nu = 1_{[a, c-1]}\},

    computed exactly by :func:`~dpaudit.model.noise.linear_laplace.ancestor_sensitivity`.
    For ``N = 2^L`` it equals ``L`` (see docs/paper-errors.md#bmr-noise-scale), one less than BMR's
    Lemma 1 bound ``L + 1``; the privacy loss of ``bmr-ecdf`` is at most
    ``Delta* / b`` for node scale ``b``, with equality on the returned move.

    Args:
        n_points: ``N >= 2`` grid points.

    Returns:
        ``(Delta*, (a, c))``: the worst case and grid indices ``a < c`` such that
        replacing a score ``tau_a`` by ``tau_c`` attains it.

    Example:
        >>> bmr_exact_sensitivity(8)
        (3.0, (1, 5))
    """
    n_points = _check_n_points(n_points)
    a, c = np.triu_indices(n_points, k=1)
    idx = np.arange(n_points)
    shifts = ((idx >= a[:, None]) & (idx < c[:, None])).astype(float)
    cost = ancestor_sensitivity(tree_depth(n_points), shifts)
    best = int(np.argmax(cost))
    return float(cost[best]), (int(a[best]), int(c[best]))


def bmr_roc_exact_sensitivity(
    n_points: int,
) -> tuple[float, tuple[tuple[int, int], tuple[int, int]]]:
    r"""Exact worst-case node explanation of ``bmr-roc`` (both ECDFs) over replace-one moves.

    A record ``(cell a, label y)`` replaced by ``(cell c, label y')`` shifts the
    true-positive counts by ``y 1[i >= a] - y' 1[i >= c]`` and the
    false-positive counts by ``(1-y) 1[i >= a] - (1-y') 1[i >= c]``. The two
    ECDFs have independent tree noise, so the cheapest explanation of the
    joint shift is the sum of the two rows' minima; this returns its maximum
    over all ``(a, y), (c, y')``. A label change moves both ECDFs, including
    their last values (the class sizes): that is why parallel composition does
    not apply (see docs/paper-errors.md#bmr-roc-composition).

    Args:
        n_points: ``N``.

    Returns:
        ``(Delta*, ((a, y), (c, y')))``: the worst case and a move attaining it.

    Example:
        >>> bmr_roc_exact_sensitivity(8)[0]
        4.0
    """
    n_points = _check_n_points(n_points)
    cells = np.repeat(np.arange(n_points), 2)
    labels = np.tile([0.0, 1.0], n_points)
    above = (np.arange(n_points)[None, :] >= cells[:, None]).astype(float)  # (2N, N)
    i, j = np.meshgrid(np.arange(2 * n_points), np.arange(2 * n_points), indexing="ij")
    i, j = i.ravel(), j.ravel()
    tp = labels[i, None] * above[i] - labels[j, None] * above[j]
    fp = (1 - labels[i, None]) * above[i] - (1 - labels[j, None]) * above[j]
    depth = tree_depth(n_points)
    cost = ancestor_sensitivity(depth, tp) + ancestor_sensitivity(depth, fp)
    best = int(np.argmax(cost))
    move = (
        (int(cells[i[best]]), int(labels[i[best]])),
        (int(cells[j[best]]), int(labels[j[best]])),
    )
    return float(cost[best]), move


def bmr_exact_epsilon(mechanism: dpaudit.Mechanism) -> float:
    """Tight pure epsilon of a built ``bmr-ecdf`` or ``bmr-roc``: worst case over all neighbours.

    The privacy loss between neighbours is exactly ``min ||nu||_1 / b``
    (:mod:`dpaudit.model.noise.linear_laplace`), so the mechanism is exactly
    ``Delta* / b``-DP with ``Delta*`` from :func:`bmr_exact_sensitivity` (or
    :func:`bmr_roc_exact_sensitivity`) and ``b`` the node scale; no smaller
    epsilon holds. With the default calibration this is ``L/(L+1)`` times the
    claimed epsilon (``N = 2^L``), with ``calibration="exact"`` it is the
    claimed epsilon.

    Args:
        mechanism: a mechanism built by ``bmr-ecdf`` or ``bmr-roc``.

    Returns:
        The tight epsilon.

    Raises:
        TypeError: if ``mechanism`` is not a :class:`dpaudit.Mechanism`.
        ValueError: if it is not a ``bmr-ecdf`` or ``bmr-roc`` mechanism.

    Example:
        >>> bmr_exact_epsilon(dpaudit.build("bmr-ecdf", epsilon=1.0, n_points=8))
        0.75
    """
    if not isinstance(mechanism, dpaudit.Mechanism):
        raise TypeError(f"mechanism must be a dpaudit.Mechanism, got {type(mechanism).__name__}.")
    worst = {"bmr-ecdf": bmr_exact_sensitivity, "bmr-roc": bmr_roc_exact_sensitivity}
    if mechanism.name not in worst:
        raise ValueError(
            f"bmr_exact_epsilon needs a bmr-ecdf or bmr-roc mechanism, got {mechanism.name!r}."
        )
    sensitivity, _ = worst[mechanism.name](mechanism.params["n_points"])
    return sensitivity / mechanism.params["node_scale"]


# ---------------------------------------------------------------------- mechanism


def _count_shift(h, n: int) -> np.ndarray:
    # n (F_D - F_D') is a vector of integers; remove the round-off of the division by n
    return np.round(n * np.asarray(h, dtype=float), 9)


class _TreeSetting(NamedTuple):
    """A BMR builder's checked grid, tree depth, claimed sensitivity, node scale and params."""

    grid: jax.Array
    depth: int
    sensitivity: float
    scale: float
    params: dict


def _tree_setting(arguments, exact, lemma) -> _TreeSetting:
    """``arguments`` are the builder's ``(epsilon, n, low, high, n_points, calibration)``;
    ``exact(n_points)[0]`` is the exact worst case; ``lemma(depth)`` the (sensitivity,
    node scale) of BMR's lemma calibration."""
    epsilon, n, low, high, n_points, calibration = arguments
    check_epsilon(epsilon)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer (public dataset size), got {n!r}.")
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"the public score range needs finite low < high, got [{low}, {high}].")
    depth = tree_depth(n_points)
    grid = jnp.linspace(float(low), float(high), int(n_points))
    check_choice("calibration", calibration, CALIBRATIONS)
    if calibration == "exact":
        sensitivity = exact(n_points)[0]
        scale = sensitivity / float(epsilon)
    else:
        sensitivity, scale = lemma(depth)
    params = {
        "epsilon": epsilon,
        "n": n,
        "low": low,
        "high": high,
        "n_points": n_points,
        "calibration": calibration,
        "depth": depth,
        "grid": np.asarray(grid),
        "node_scale": scale,
    }
    return _TreeSetting(grid, depth, sensitivity, scale, params)


@dpaudit.register("bmr-ecdf", example={"epsilon": 1.0, "n": 40, "n_points": 8})
def bmr_ecdf_mechanism(
    epsilon: float = 1.0,
    n: int = 100,
    low: float = 0.0,
    high: float = 1.0,
    n_points: int = 16,
    calibration: str = "lemma",
) -> dpaudit.Mechanism:
    """Hierarchical DP ECDF of BMR: every grid value gets all its ancestors' Lap((L+1)/eps) noise.

    Args:
        epsilon: privacy parameter (> 0).
        n: public number of records (replace-one adjacency).
        low, high: public score range; the grid is ``n_points`` equispaced
            points from ``low`` to ``high`` and scores are clamped to it.
        n_points: ``N``; the tree has depth ``L = ceil(log2 N)``.
        calibration: ``"lemma"`` (BMR Thm 3.1: node scale ``(L+1)/epsilon``,
            claimed sensitivity ``L + 1``) or ``"exact"`` (node scale
            ``Delta*/epsilon`` and claimed sensitivity ``Delta*``, the exact
            worst case of :func:`bmr_exact_sensitivity`, ``= L`` for ``N = 2^L``).

    Returns:
        The mechanism; its release is ``(N,)`` noisy CDF values with the
        :class:`~dpaudit.model.noise.linear_laplace.AncestorLaplace` density.
    """

    def lemma(depth):  # BMR Thm 3.1: sensitivity L + 1, node scale (L + 1)/epsilon
        return bmr_sensitivity(depth), bmr_node_scale(epsilon, depth)

    grid, depth, sensitivity, scale, params = _tree_setting(
        (epsilon, n, low, high, n_points, calibration), bmr_exact_sensitivity, lemma
    )

    def model(data):
        values = bmr_ecdf(check_scores(data, n), grid)
        numpyro.sample("release", AncestorLaplace(values, depth, scale, count_scale=n))

    return dpaudit.Mechanism(
        name="bmr-ecdf",
        model=model,
        claim=dpaudit.Claim(
            epsilon=epsilon,
            adjacency="replace-one",
            sensitivity_norm="l1",
            sensitivity=sensitivity,
            reference=_BMR + (_EXACT if calibration == "exact" else ""),
        ),
        summary=lambda data: bmr_ecdf(check_scores(data, n), grid),
        difference_norm=lambda h: ancestor_sensitivity(depth, _count_shift(h, n)),
        params=params,
        description=(
            f"ECDF on a public grid; node noise Lap({scale:g}) on counts ({calibration} "
            "calibration), each CDF value receives all its ancestors' noise (BMR Eq. 2). "
            "Sensitivity: minimum l1 node explanation of the count shift (exact worst case "
            "L <= L+1)."
        ),
    )


def roc_counts(scores, labels, grid) -> jax.Array:
    """``(2, N)`` counts ``#{y = 1, c <= tau_i}`` (true positives) and ``#{y = 0, c <= tau_i}``.

    BMR Sec. 5.1 (docs/papers/bmr.md#bmr-roc): **lower** scores mean "more likely positive". Labels must be 0 or 1.

    Args:
        scores: ``(n,)`` scores.
        labels: ``(n,)`` labels, 0 or 1.
        grid: ``(N,)`` increasing grid.

    Returns:
        ``(2, N)`` counts.
    """
    grid = check_grid(grid)
    x = jnp.clip(check_scores(scores), grid[0], grid[-1])
    y = check_labels(labels, x.shape[0])
    below = (x[:, None] <= grid[None, :]).astype(jnp.float64)
    return jnp.stack([y @ below, (1.0 - y) @ below])


def check_labels(labels, n: int) -> jax.Array:
    """Check binary labels, one per record.

    Args:
        labels: the labels.
        n: the number of records.

    Returns:
        The labels as a float64 JAX array.

    Raises:
        ValueError: if the shape is not ``(n,)`` or (when concrete) a label is not 0 or 1.
    """
    y = jnp.asarray(labels, dtype=jnp.float64)
    if y.shape != (n,):
        raise ValueError(f"labels must have one entry per record ({n}), got shape {y.shape}.")
    if is_concrete(y) and not np.all(np.isin(np.asarray(y), (0.0, 1.0))):
        raise ValueError("labels must be 0 or 1.")
    return y


@dpaudit.register("bmr-roc", example={"epsilon": 1.0, "n": 40, "n_points": 8})
def bmr_roc_mechanism(
    epsilon: float = 1.0,
    n: int = 100,
    low: float = 0.0,
    high: float = 1.0,
    n_points: int = 16,
    calibration: str = "lemma",
) -> dpaudit.Mechanism:
    """Private ROC: the true- and false-positive ECDFs, each a BMR release at epsilon/2.

    Data are ``(scores, labels)``. One replaced record can change its label and
    move both ECDFs, so parallel composition does not apply; sequential
    composition of two ``epsilon/2`` releases gives ``epsilon`` (see docs/paper-errors.md#bmr-roc-composition; BMR
    print ``2 epsilon``). As one linear-Laplace release with node scale
    ``2(L+1)/epsilon`` its sensitivity is the sum of the two rows' node
    explanations, claimed ``<= 2(L+1)``. With ``calibration="exact"`` the node
    scale is ``Delta*/epsilon`` with ``Delta*`` the exact joint worst case
    (:func:`bmr_roc_exact_sensitivity`). Post-process with :func:`smooth_ecdf`,
    :func:`roc_curve`, :func:`auc`.

    Args:
        epsilon, n, low, high, n_points, calibration: as :func:`bmr_ecdf_mechanism`.

    Returns:
        The mechanism; its release is ``(2, N)`` noisy true- and false-positive ECDF values.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """

    def lemma(depth):  # two releases at epsilon/2 each: twice BMR's L + 1
        return 2.0 * bmr_sensitivity(depth), bmr_node_scale(epsilon / 2.0, depth)

    grid, depth, sensitivity, scale, params = _tree_setting(
        (epsilon, n, low, high, n_points, calibration), bmr_roc_exact_sensitivity, lemma
    )

    def summary(data):
        scores, labels = data
        return roc_counts(check_scores(scores, n), labels, grid) / n

    def norm(h):
        h = _count_shift(h, n)
        return ancestor_sensitivity(depth, h[..., 0, :]) + ancestor_sensitivity(depth, h[..., 1, :])

    return summary_release(
        "bmr-roc",
        summary,
        lambda loc: AncestorLaplace(loc, depth, scale, count_scale=n).to_event(1),
        epsilon=epsilon,
        sensitivity=sensitivity,
        sensitivity_norm="l1",
        reference=_BMR
        + "; Sec. 4.5 with sequential composition (docs/paper-errors.md#bmr-roc-composition)"
        + (_EXACT if calibration == "exact" else ""),
        difference_norm=norm,
        params=params,
        description="True- and false-positive ECDFs (lower score = positive), BMR at epsilon/2 each.",
    )
