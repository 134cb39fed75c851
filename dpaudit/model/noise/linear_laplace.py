r"""Linear-Laplace releases ``y = loc + A eta / n`` and their exact sensitivity.

A *linear-Laplace* mechanism draws ``p`` i.i.d. Laplace variables
``eta_j ~ Lap(0, b)`` (scale ``b``, docs/conventions.md#laplace-distribution) and releases

.. math::  y = F_D + A\,\eta / n,

with a public matrix ``A`` (``m x p``) and a public ``count_scale`` ``n``
(the noise lives on the count scale and is divided by ``n``; BMR's error is in counts, see docs/paper-errors.md#bmr-error-units).
The hierarchical ECDF of Barczewski, Mawass & Ramon (BMR, Eq. 2) is one: ``A``
is the leaf-to-ancestor incidence matrix of a complete binary tree
(:func:`ancestor_matrix`); the textbook binary mechanism is another, with
``A = I`` on the node counts.

**Privacy.** For neighbours ``D ~ D'`` write ``s = n (F_D - F_D')``. Any
``nu`` with ``A nu = s`` turns a noise draw for ``D'`` into one for ``D``
(``eta -> eta + nu``), and the Laplace density ratio of that shift is at most
``exp(||nu||_1 / b)``. Hence the privacy loss is bounded by

.. math::  \epsilon(D, D') = \frac{1}{b}\,\min\{\|\nu\|_1 : A\nu = s\}

(:func:`linear_laplace_sensitivity`, a linear programme), and the bound is
the exact supremum of the log density ratio: with ``g(y) = min{||eta||_1 :
A eta = y}`` the marginal density decays like ``exp(-g(y)/b)`` and
``g((t+1)s) - g(t s) = g(s)`` along the ray ``y = t s``. When ``s`` is not in
the column space of ``A`` the two releases live on different affine sets and
no epsilon holds (``math.inf``).

**Densities.** :class:`LinearLaplace` has the exact density when ``A`` is
square and invertible (a change of variables). For the BMR tree the release
keeps only the ``m <= 2^L`` leaves of a ``2^{L+1}-1`` node tree, so ``A`` is
wide and the marginal is an integral over the internal nodes;
:class:`AncestorLaplace` evaluates it by exact belief propagation on the tree
(closed forms for depth <= 1 and for the messages just above the leaves, an
Euler–Maclaurin-corrected trapezoid rule above; see its docstring for the error), and
never forms the dense matrix. For any other wide ``A``
:meth:`LinearLaplace.log_prob` raises ``NotImplementedError``: audit such a
release through :func:`linear_laplace_sensitivity`.

**Certified value.** :func:`linear_laplace_sensitivity_bounds` brackets the LP value
between a dual objective (weak duality) and a repaired primal point, with every
rounding bounded; :func:`dpaudit.accounting.suprema.exact_sup_loss` turns it into the exact
supremum of the loss that lets a pure claim pass.

Public names (import from ``dpaudit.model.noise.linear_laplace``):
:class:`LinearLaplace`, :class:`AncestorLaplace`, :func:`ancestor_matrix`,
:func:`ancestor_sensitivity`, :func:`linear_laplace_sensitivity`,
:func:`linear_laplace_sensitivity_bounds` (certified two-sided bounds on the LP value,
:class:`SensitivityBounds`), :func:`linear_laplace_epsilon`.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
from jax import lax
from numpyro.distributions import Distribution, constraints

from dpaudit.accounting.suprema import ExactSupLoss
from dpaudit.core.checks import check_finite, check_last_axis, check_positive, is_concrete

__all__ = [
    "AncestorLaplace",
    "LinearLaplace",
    "SensitivityBounds",
    "ancestor_matrix",
    "ancestor_sensitivity",
    "linear_laplace_epsilon",
    "linear_laplace_sensitivity",
    "linear_laplace_sensitivity_bounds",
]

#: Relative margin added to an LP optimum so the returned sensitivity is an
#: upper bound despite the solver's feasibility tolerance (HiGHS: 1e-7 absolute
#: on constraints with O(1) coefficients; we check the residual below 1e-9).
_LP_ROUND_UP = 1e-9


# ------------------------------------------------------------------ sensitivity


def _as_matrix(matrix) -> np.ndarray:
    a = np.asarray(matrix, dtype=float)
    if a.ndim != 2 or 0 in a.shape:
        raise ValueError(f"matrix must be a non-empty 2-D array, got shape {a.shape}.")
    check_finite("matrix", a)
    return a


def linear_laplace_sensitivity(matrix, shift) -> float:
    r"""``min ||nu||_1`` subject to ``A nu = shift``: the exact l1 sensitivity of ``A eta``.

    Solved as the linear programme ``min 1'(nu+ + nu-)``, ``A (nu+ - nu-) = shift``,
    ``nu+- >= 0`` with scipy's HiGHS. The optimum is rounded up (relative
    ``1e-9``) so that it can be used as an upper bound, and the solver's status
    and residual are checked. For a linear-Laplace release with noise scale
    ``b`` the privacy loss between the two datasets is exactly this value over
    ``b`` (module docstring).

    Args:
        matrix: ``(m, p)`` noise matrix ``A``.
        shift: ``(m,)`` difference of the two summaries in the units of ``A eta``
            (counts for the ECDF: ``n (F_D - F_D')``).

    Returns:
        The minimum, ``0.0`` for a zero shift and ``math.inf`` when the shift is
        not in the column space of ``A`` (the releases are mutually singular).

    Raises:
        ValueError: on shapes that do not match or non-finite entries.
        RuntimeError: if HiGHS fails for another reason than infeasibility.

    Example:
        >>> round(linear_laplace_sensitivity([[1.0, 1.0], [0.0, 1.0]], [1.0, 1.0]), 6)  # nu = (0, 1)
        1.0
    """
    import scipy.optimize

    a = _as_matrix(matrix)
    s = np.asarray(shift, dtype=float)
    if s.shape != (a.shape[0],):
        raise ValueError(
            f"shift has shape {s.shape} but the matrix has {a.shape[0]} rows; give one entry per "
            "released coordinate."
        )
    check_finite("shift", s)
    if not np.any(s):
        return 0.0
    p = a.shape[1]
    result = scipy.optimize.linprog(
        np.ones(2 * p), A_eq=np.hstack([a, -a]), b_eq=s, bounds=(0, None), method="highs"
    )
    if result.status == 2:
        return math.inf
    if result.status != 0:
        raise RuntimeError(f"HiGHS did not solve the sensitivity LP: {result.message}")
    nu = result.x[:p] - result.x[p:]
    residual = float(np.max(np.abs(a @ nu - s)))
    # HiGHS is feasible to ~1e-7 absolute; 1e-9 relative catches a wrong solution, not noise
    if residual > 1e-9 * max(1.0, float(np.max(np.abs(s)))):
        raise RuntimeError(f"the sensitivity LP solution violates A nu = shift by {residual:.3g}.")
    value = float(np.sum(np.abs(nu)))
    return float(np.nextafter(value * (1.0 + _LP_ROUND_UP), np.inf))


class SensitivityBounds(NamedTuple):
    """Certified bounds ``lower <= min{||nu||_1 : A nu = s} <= upper``.

    Attributes:
        lower: a dual objective ``s' lambda`` with ``||A' lambda||_inf <= 1`` (weak
            duality), rounded down; ``inf`` when ``s`` is outside the column space.
        upper: ``||nu||_1`` of a primal solution repaired to ``A nu = s``, plus a
            bound on the residual left and on the rounding of ``s``, rounded up.
        point: HiGHS's optimum (between the two up to the solver's tolerances).
    """

    lower: float
    upper: float
    point: float

    @property
    def gap(self) -> float:
        """``upper - lower``: the certified width of the LP value."""
        return self.upper - self.lower


_EPS = float(np.finfo(float).eps)


class _RowFactor(NamedTuple):
    """The Gram matrix ``A A'`` of a full-row-rank ``A``, factorised, and ``sigma_min(A)``."""

    cholesky: tuple
    sigma_min: float


@functools.lru_cache(maxsize=4)
def _row_factor(data: bytes, shape: tuple[int, int]) -> _RowFactor | None:
    """Factorise ``A A'`` once per matrix (cached: a batch of shifts shares its matrix)."""
    a = np.frombuffer(data).reshape(shape)
    if shape[0] > shape[1]:
        return None
    gram = a @ a.T
    # Weyl: the rounding of the product (p eps |A||A|') and the eigensolver's backward
    # error (m eps ||G||) move the smallest eigenvalue by at most their Frobenius norms
    slack = _EPS * (
        shape[1] * np.linalg.norm(np.abs(a) @ np.abs(a).T) + shape[0] * np.linalg.norm(gram)
    )
    smallest = float(scipy.linalg.eigvalsh(gram, subset_by_index=[0, 0])[0]) - slack
    if smallest <= 0.0:
        return None
    return _RowFactor(scipy.linalg.cho_factor(gram), math.sqrt(smallest))


def _factor(a: np.ndarray) -> _RowFactor | None:
    a = np.ascontiguousarray(a, dtype=float)
    return _row_factor(a.tobytes(), a.shape)


def _explanation_cost(factor: _RowFactor | None, width: int, error: np.ndarray) -> float:
    """An upper bound on ``min{||d||_1 : A d = error}`` for full-row-rank ``A``.

    The least-norm ``d = A^+ error`` has ``||d||_1 <= sqrt(p) ||d||_2 <=
    sqrt(p) ||error||_2 / sigma_min(A)``; it bounds what a residual or a rounding of the
    shift can add to or remove from the LP value (the value is subadditive in the shift).
    ``inf`` when ``A`` is not certified to have full row rank.
    """
    if not np.any(error):
        return 0.0
    if factor is None:
        return math.inf
    # 2x the exact expression: covers the rounding of the norm and of the products
    return 2.0 * math.sqrt(width) * float(np.linalg.norm(error)) / factor.sigma_min


def _solve_primal_dual(a: np.ndarray, s: np.ndarray):
    """HiGHS on ``min 1'(nu+ + nu-)``, ``[A, -A] nu+- = s``; ``None`` when infeasible."""
    import scipy.optimize

    p = a.shape[1]
    result = scipy.optimize.linprog(
        np.ones(2 * p), A_eq=np.hstack([a, -a]), b_eq=s, bounds=(0, None), method="highs"
    )
    if result.status == 2:
        return None
    if result.status != 0:
        raise RuntimeError(f"HiGHS did not solve the sensitivity LP: {result.message}")
    return result.x[:p] - result.x[p:], np.asarray(result.eqlin.marginals, dtype=float)


def _certified_upper(a: np.ndarray, s: np.ndarray, nu: np.ndarray, shift_error) -> float:
    """``||nu'||_1`` for ``nu`` repaired to ``A nu = s``, plus what is left unexplained."""
    factor = _factor(a)
    if factor is not None:  # the least-norm correction A' (A A')^-1 (s - A nu)
        nu = nu + a.T @ scipy.linalg.cho_solve(factor.cholesky, s - a @ nu)
    # a dot product of k non-zero terms and one subtraction is off by <= (k + 1) eps |A||nu|
    terms = np.count_nonzero(a, axis=1) + 1.0
    residual = np.abs(s - a @ nu) + terms * _EPS * (np.abs(a) @ np.abs(nu) + np.abs(s))
    value = math.fsum(np.abs(nu)) * (1.0 + 2.0 * _EPS)  # fsum is correctly rounded
    value += _explanation_cost(factor, a.shape[1], residual + shift_error)
    return float(np.nextafter(value, np.inf))


def _certified_lower(a: np.ndarray, s: np.ndarray, dual: np.ndarray, shift_error) -> float:
    """``s' lambda`` for the dual scaled into ``||A' lambda||_inf <= 1`` (weak duality)."""
    # |fl(A' lambda) - A' lambda| <= k eps |A|' |lambda| for k non-zero terms: bound the
    # constraint before scaling
    terms = np.count_nonzero(a, axis=0)  # zero entries add exact zeros to A' lambda
    worst = np.max(np.abs(a.T @ dual) + terms * _EPS * (np.abs(a).T @ np.abs(dual)))
    dual = dual / max(1.0, float(worst))
    objective = float(s @ dual) - a.shape[0] * _EPS * float(np.abs(s) @ np.abs(dual))
    # the true shift differs from s by at most shift_error: s' lambda moves by <= |err|'|lambda|
    objective -= float(np.asarray(shift_error) @ np.abs(dual))
    return max(0.0, float(np.nextafter(objective, -np.inf)))


def linear_laplace_sensitivity_bounds(matrix, shift, shift_error=0.0) -> SensitivityBounds:
    r"""Certified lower and upper bounds on ``min{||nu||_1 : A nu = shift}``.

    The lower bound is weak duality: any ``lambda`` with ``||A' lambda||_inf <= 1``
    gives ``s' lambda = nu' A' lambda <= ||nu||_1`` for every feasible ``nu``; HiGHS's
    equality marginals are scaled into that set with a bound on the rounding of
    ``A' lambda``. The upper bound is a feasible point: HiGHS's ``nu`` is repaired by
    least squares and the residual that rounding leaves is paid for by the least-norm
    explanation ``sqrt(p) ||r||_2 / sigma_min(A)`` (``sigma_min`` from the Gram matrix,
    bounded below by Weyl's inequality). Unlike :func:`linear_laplace_sensitivity` (a relative
    ``1e-9`` round-up of the solver's optimum) no solver tolerance is trusted.

    Args:
        matrix: ``(m, p)`` noise matrix ``A`` (full row rank for a finite upper bound).
        shift: ``(m,)`` shift ``s`` in the units of ``A eta``.
        shift_error: ``(m,)`` or scalar bound on ``|s - s_true|`` when ``s`` was rounded
            (for example ``n (F_D - F_D')`` computed in float64).

    Returns:
        A :class:`SensitivityBounds`; ``(inf, inf, inf)`` when the shift is outside the
        column space of ``A`` (relative residual above ``1e-9``: the laws are singular).

    Raises:
        ValueError: on shapes that do not match or non-finite entries.
        RuntimeError: if HiGHS fails for another reason than infeasibility.

    Example:
        >>> b = linear_laplace_sensitivity_bounds([[1.0, 1.0], [0.0, 1.0]], [1.0, 1.0])
        >>> b.lower <= 1.0 <= b.upper, b.gap < 1e-12
        (True, True)
    """
    a = _as_matrix(matrix)
    s = np.asarray(shift, dtype=float)
    if s.shape != (a.shape[0],):
        raise ValueError(f"shift has shape {s.shape} but the matrix has {a.shape[0]} rows.")
    check_finite("shift", s)
    error = np.broadcast_to(np.abs(np.asarray(shift_error, dtype=float)), s.shape)
    if not np.any(s) and not np.any(error):
        return SensitivityBounds(0.0, 0.0, 0.0)
    solution = _solve_primal_dual(a, s)
    if solution is None:
        # HiGHS says infeasible: confirm with least squares (relative 1e-9 is far above
        # float64 round-off of a projection, far below any real departure from col(A))
        fit, *_ = np.linalg.lstsq(a, s, rcond=None)
        if np.linalg.norm(a @ fit - s) <= 1e-9 * np.linalg.norm(s):
            raise RuntimeError("HiGHS reports an infeasible shift that lies in col(A).")
        return SensitivityBounds(math.inf, math.inf, math.inf)
    nu, dual = solution
    point = float(np.sum(np.abs(nu)))
    upper = _certified_upper(a, s, nu, error)
    return SensitivityBounds(_certified_lower(a, s, dual, error), max(upper, point), point)


def linear_laplace_epsilon(matrix, shift, scale, count_scale=1.0) -> float:
    """Exact privacy loss ``min{||nu||_1 : A nu = n shift} / b`` of ``y = F + A eta / n``.

    Args:
        matrix: ``(m, p)`` noise matrix ``A``.
        shift: ``F_D - F_D'`` in release units (divided by ``count_scale``).
        scale: Laplace scale ``b`` of each ``eta_j`` (> 0).
        count_scale: ``n``, the divisor of the noise (> 0).

    Example:
        >>> round(linear_laplace_epsilon(np.eye(2), [0.5, -0.5], scale=2.0, count_scale=2.0), 6)
        1.0
    """
    check_positive("scale", scale)
    check_positive("count_scale", count_scale)
    shift = float(count_scale) * np.asarray(shift, dtype=float)
    return linear_laplace_sensitivity(matrix, shift) / float(scale)


def ancestor_matrix(depth: int, n_leaves: int | None = None) -> np.ndarray:
    """Leaf-to-ancestor incidence matrix of a complete binary tree of depth ``L``.

    Nodes are ordered level by level from the leaves (level 0, ``2^L`` nodes)
    to the root (level ``L``); node ``(j, l)`` (``j = 0 .. 2^(L-l) - 1``)
    covers leaves ``j 2^l .. (j+1) 2^l - 1``. Row ``i`` has a one at each of the
    ``L + 1`` ancestors of leaf ``i`` (itself included): BMR Eq. 2, where every
    CDF value receives the noise of all its ancestors.

    Args:
        depth: ``L >= 0``.
        n_leaves: keep only the first ``n_leaves <= 2^L`` rows (the released
            grid points); all ``2^L`` when omitted.

    Returns:
        ``(n_leaves, 2^(L+1) - 1)`` array of zeros and ones.

    Example:
        >>> ancestor_matrix(1).astype(int).tolist()
        [[1, 0, 1], [0, 1, 1]]
    """
    depth = _check_depth(depth)
    leaves = 2**depth
    m = leaves if n_leaves is None else int(n_leaves)
    if not 1 <= m <= leaves:
        raise ValueError(f"n_leaves must lie in [1, 2^depth] = [1, {leaves}], got {n_leaves}.")
    a = np.zeros((m, 2 * leaves - 1))
    rows = np.arange(m)
    offset = 0
    for level in range(depth + 1):
        a[rows, offset + (rows >> level)] = 1.0
        offset += leaves >> level
    return a


def _check_depth(depth) -> int:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an integer, got {type(depth).__name__}.")
    if not 0 <= int(depth) <= 20:
        raise ValueError(f"depth must lie in [0, 20], got {depth}.")
    return int(depth)


def ancestor_sensitivity(depth: int, shift) -> np.ndarray:
    r"""``min ||nu||_1`` s.t. ``A nu = shift`` for the ancestor matrix, by dynamic programming.

    With ``x_v`` the sum of ``nu`` over the ancestors of node ``v`` (itself
    included), ``nu_v = x_v - x_parent(v)`` and the leaves are pinned to
    ``x_leaf = shift``, so the programme is the total variation
    ``sum_v |x_v - x_parent(v)|`` on the tree (the root's parent pinned at 0).
    Its incidence matrix is totally unimodular, so an optimum takes values in
    ``{0} U {shift_i}``, and a bottom-up pass over that finite set solves it
    exactly. It is the same number as :func:`linear_laplace_sensitivity`
    with :func:`ancestor_matrix` (tested), without a solver, and vectorised
    over many shifts.

    Args:
        depth: tree depth ``L``.
        shift: ``(..., m)`` shifts of the first ``m <= 2^L`` leaves (the rest
            are not released and are free).

    Returns:
        ``(...)`` array of minima.

    Example:
        >>> ancestor_sensitivity(2, [0.0, 1.0, 1.0, 0.0]).item()  # nu = leaves 1, 2 and node (0,1) ...
        2.0
    """
    depth = _check_depth(depth)
    s = np.asarray(shift, dtype=float)
    leaves = 2**depth
    if s.ndim == 0 or not 1 <= s.shape[-1] <= leaves:
        raise ValueError(f"shift must have 1..{leaves} entries on its last axis, got {s.shape}.")
    check_finite("shift", s)
    batch = s.shape[:-1]
    s = s.reshape(-1, s.shape[-1])
    values = np.unique(np.concatenate([s.ravel(), [0.0]]))
    jump = np.abs(values[:, None] - values[None, :])  # |x_child - x_parent|
    cost = np.zeros((s.shape[0], leaves, values.size))  # unreleased leaves are free
    cost[:, : s.shape[1], :] = np.where(s[..., None] == values, 0.0, np.inf)
    for _ in range(depth):
        # edge from each child to its parent, then the two children of a parent add up
        to_parent = np.min(cost[..., :, None] + jump, axis=-2)
        cost = to_parent.reshape(s.shape[0], -1, 2, values.size).sum(axis=2)
    root = np.min(cost[:, 0, :] + np.abs(values), axis=-1)
    return root.reshape(batch)


# ---------------------------------------------------------------- distributions


def _same_linear_laplace(p, q) -> bool:
    if type(p) is not type(q) or not isinstance(p, LinearLaplace):
        return False
    same = np.array_equal(np.asarray(p.matrix), np.asarray(q.matrix))
    same = same and np.shape(p.loc) == np.shape(q.loc)
    same = same and np.array_equal(np.asarray(p.count_scale), np.asarray(q.count_scale))
    return same and np.array_equal(np.asarray(p.scale), np.asarray(q.scale))


def _linear_laplace_sup_loss(p: LinearLaplace, q: LinearLaplace) -> ExactSupLoss:
    """Sum over the batch of ``min{||d||_1 : A d = n (loc_p - loc_q)} / b``."""
    n = float(np.asarray(p.count_scale))
    loc_p, loc_q = np.asarray(p.loc, dtype=float), np.asarray(q.loc, dtype=float)
    difference = loc_p - loc_q
    shifts = (n * difference).reshape(-1, loc_p.shape[-1])
    # the difference and the product are each rounded once: 2 eps relative, 4 for safety
    errors = 4.0 * _EPS * np.abs(shifts)
    scales = np.broadcast_to(np.asarray(p.scale, dtype=float), loc_p.shape[:-1]).reshape(-1)
    matrix = np.asarray(p.matrix, dtype=float)
    lower = upper = 0.0
    for shift, error, scale in zip(shifts, errors, scales, strict=True):
        bounds = linear_laplace_sensitivity_bounds(matrix, shift, error)
        # one division each: step one float outwards (an infinite bound stays infinite)
        lower += (
            bounds.lower / scale
            if math.isinf(bounds.lower)
            else float(np.nextafter(bounds.lower / scale, -np.inf))
        )
        upper += float(np.nextafter(bounds.upper / scale, np.inf))
    # the running sums are rounded once per term (<= batch eps relative)
    count = shifts.shape[0]
    low, up = lower * (1 - count * _EPS), upper * (1 + count * _EPS)
    return ExactSupLoss(low, up, low, up, "linear-laplace")


class LinearLaplace(Distribution):
    r"""The release ``y = loc + A eta / n`` with ``eta_j ~ Lap(0, b)`` i.i.d.

    For square invertible ``A`` (``m = p``) the density is exact:

    .. math::  \log p(y) = \sum_j \Big[-\frac{|\eta_j|}{b} - \log 2b\Big]
               + m\log n - \log|\det A|,\qquad \eta = n A^{-1}(y - \mathrm{loc}).

    Otherwise the release lives on a lower-dimensional set or is a marginal of
    ``eta`` and :meth:`log_prob` raises ``NotImplementedError`` (use
    :class:`AncestorLaplace` for the BMR tree, or audit through
    :func:`linear_laplace_sensitivity`).

    Args:
        loc: ``(..., m)`` summary ``F_D``.
        matrix: ``(m, p)`` noise matrix ``A``.
        scale: Laplace scale ``b`` (> 0) on the count scale.
        count_scale: ``n`` (> 0): the noise is divided by it.

    Raises:
        ValueError: if ``loc`` does not have ``m`` entries, or inputs are not finite.

    Example:
        >>> d = LinearLaplace(jnp.zeros(2), jnp.array([[1.0, 0.0], [1.0, 1.0]]), scale=1.0)
        >>> round(float(d.log_prob(jnp.array([0.0, 0.0]))), 6)  # 2 log(1/2)
        -1.386294
    """

    arg_constraints = {"loc": constraints.real_vector, "scale": constraints.positive}
    support = constraints.real_vector
    pytree_data_fields = ("loc", "matrix", "scale", "count_scale", "_inverse", "_log_det")

    def __init__(self, loc, matrix, scale, count_scale=1.0, *, validate_args=None):
        name = type(self).__name__
        matrix = jnp.asarray(matrix, dtype=jnp.float64)
        if matrix.ndim != 2 or 0 in matrix.shape:
            raise ValueError(f"{name} matrix must be a non-empty 2-D array, got {matrix.shape}.")
        check_finite(f"{name} matrix", matrix)
        check_positive(f"{name} scale", scale)
        check_positive(f"{name} count_scale", count_scale)
        loc = jnp.asarray(loc, dtype=jnp.float64)
        check_last_axis(f"{name} loc", loc, matrix.shape[0], "one value per row of the matrix")
        check_finite(f"{name} loc", loc)
        self.matrix = matrix
        self.scale = jnp.asarray(scale, dtype=jnp.float64)
        self.count_scale = jnp.asarray(count_scale, dtype=jnp.float64)
        self.loc = loc
        self._inverse, self._log_det = self._factorise(matrix)
        super().__init__(
            batch_shape=loc.shape[:-1], event_shape=loc.shape[-1:], validate_args=validate_args
        )

    @staticmethod
    def _factorise(matrix):
        m, p = matrix.shape
        if m != p or not is_concrete(matrix):
            return None, None
        sign, log_det = np.linalg.slogdet(np.asarray(matrix))
        # condition number above 1e12: the inverse loses more than 12 of the 16 digits, so the
        # density would be unreliable; treat the matrix as singular
        if sign == 0 or not np.isfinite(log_det) or np.linalg.cond(np.asarray(matrix)) > 1e12:
            return None, None
        return jnp.linalg.inv(matrix), jnp.asarray(log_det)

    @property
    def n_noise(self) -> int:
        """Number ``p`` of Laplace variables."""
        return int(self.matrix.shape[1])

    @property
    def mean(self):
        return jnp.broadcast_to(self.loc, self.batch_shape + self.event_shape)

    @property
    def variance(self):
        return jnp.broadcast_to(
            2.0 * (self.scale / self.count_scale) ** 2 * jnp.sum(self.matrix**2, axis=1),
            self.batch_shape + self.event_shape,
        )

    def sample(self, key, sample_shape=()):
        """Draw ``loc + A eta / n``.

        Args:
            key, sample_shape: as in :meth:`dpaudit.model.noise.KarhunenLoeveNoise.sample`.

        Returns:
            Draws of shape ``sample_shape + batch_shape + event_shape``.
        """
        eta = self.scale * jax.random.laplace(
            key, sample_shape + self.batch_shape + (self.n_noise,)
        )
        return self.loc + eta @ self.matrix.T / self.count_scale

    def log_prob(self, value):
        """Exact log-density for a square invertible matrix.

        Args:
            value: release values, shape ``(..., event)``.

        Returns:
            The log-density, shape ``(...)``.

        Raises:
            NotImplementedError: when the matrix is not square and well conditioned.
        """
        if self._inverse is None:
            raise NotImplementedError(
                f"{type(self).__name__}: the release density is exact only for a square "
                f"invertible matrix, this one is {tuple(self.matrix.shape)}; audit the release "
                "through its linear representation (linear_laplace_sensitivity) or use "
                "AncestorLaplace for the BMR tree."
            )
        eta = self.count_scale * (value - self.loc) @ self._inverse.T
        m = self.matrix.shape[0]
        return (
            jnp.sum(-jnp.abs(eta) / self.scale - jnp.log(2.0 * self.scale), axis=-1)
            + m * jnp.log(self.count_scale)
            - self._log_det
        )

    def epsilon(self, other_loc) -> float:
        """Exact privacy loss between this release and the one centred at ``other_loc``.

        Args:
            other_loc: the summary of the neighbouring dataset, shape ``(m,)``.

        Returns:
            ``sup_y |log p(y) - log p'(y)|``, by :func:`linear_laplace_epsilon`.

        Raises:
            ValueError: if the locations are not 1-D.
        """
        shift = np.asarray(self.loc) - np.asarray(other_loc)
        if shift.ndim != 1:
            raise ValueError("epsilon compares two single releases; give 1-D locations.")
        return linear_laplace_epsilon(self.matrix, shift, self.scale, self.count_scale)

    def exact_sup_loss(self, other):
        """Certified bounds on ``sup L`` against another linear-Laplace release with the same noise.

        ``sup L = sum over the batch of min{||d||_1 : A d = n (loc_p - loc_q)} / b`` in both
        directions (:func:`linear_laplace_sensitivity_bounds`), rounded outward.

        Args:
            other: the release law of the neighbouring dataset.

        Returns:
            A :class:`dpaudit.accounting.suprema.ExactSupLoss` (method ``"linear-laplace"``),
            or ``None`` when ``other`` is not a ``LinearLaplace`` with the same matrix,
            shape and scales.
        """
        if not _same_linear_laplace(self, other):
            return None
        return _linear_laplace_sup_loss(self, other)


class AncestorLaplace(Distribution):
    r"""BMR's hierarchical release: leaf ``i`` gets the noise of all its ``L + 1`` ancestors.

    ``y_i = loc_i + (1/n) sum_{l=0}^{L} eta_(floor(i / 2^l), l)`` for the first
    ``m <= 2^L`` leaves, ``eta ~ Lap(0, b)`` i.i.d. on the ``2^(L+1) - 1`` nodes
    (Barczewski, Mawass & Ramon, Eq. 2): the linear-Laplace release with the
    :func:`ancestor_matrix`, kept implicit (a 4096-point grid's dense matrix alone is
    268 MB). Draws sum each leaf's ancestors directly; the exact supremum of the loss
    (:meth:`exact_sup_loss`) is the tree dynamic programme :func:`ancestor_sensitivity`.

    **Density.** With ``u = n (y - loc)`` and ``w_v`` the sum of the noise on
    the path from the root to node ``v``, ``w_v = w_parent(v) + eta_v`` and the
    released leaves are pinned at ``w = u``. The marginal density of ``u`` is
    therefore a tree-structured integral that belief propagation computes
    exactly from the leaves up, each message being one convolution with the
    Laplace kernel ``k(t) = e^{-|t|/b} / 2b``:

    .. math::  M_v(x) = \int k(w - x) \prod_{c\,\in\,\mathrm{children}(v)} M_c(w)\,dw,
               \qquad M_{\mathrm{leaf}\ i}(x) = k(u_i - x),

    and ``p(u) = M_root(0)``, ``log p(y) = log p(u) + m log n``. The messages of the
    nodes just above the leaves, and the whole density for ``L <= 1``, are closed
    forms: for leaves ``a <= c`` and the sorted kinks ``t1 <= t2 <= t3`` of
    ``{x, a, c}``, ``M(x) = b e^{-(t3 - t1)/b} [2 - (2/3)(e^{-(t2-t1)/b} +
    e^{-(t3-t2)/b})] / (2b)^3``. Each message satisfies ``M - b^2 M'' = g`` (``k`` is
    the Green's function of ``1 - b^2 d^2/dx^2``), so messages are smoother than their
    integrands (``C^2`` above the leaves, ``C^4`` above that), and the higher
    convolutions are evaluated on ``n_grid`` equispaced points, step ``h <= b / 6``,
    covering ``[min(u, 0) - margin b, max(u, 0) + margin b]`` with 0 (the root's kink)
    on the grid. The only kink of ``w -> k(w - x_j) g(w)`` is then on a grid point and
    the Euler–Maclaurin expansion of the trapezoid rule on either side of it gives

    .. math::  M(x_j) = \tanh\!\big(\tfrac{h}{2b}\big) \sum_k e^{-|j-k| h/b} g_k
               + \frac{h^2}{240\,b^2}\,(g_{j+1} - 2 g_j + g_{j-1}) + O(h^6)

    (the ``tanh`` factor integrates constants exactly; the second term is the ``h^4 g''``
    term of the expansion). The sum is two first-order recursions, evaluated as
    cumulative sums with the geometric weights factored out (all terms positive: no
    cancellation), in linear space with one normalising log-scale per node. Sibling
    messages are products of smooth functions except for third-derivative jumps at the
    leaves, which bound the error by ``O((h/b)^4)``: at the defaults the absolute error
    of ``log_prob`` was measured below ``2e-5`` at depths 2 to 5 (against an independent
    log-space quadrature on 8193 points, itself within ``1e-8``; ``L = 1`` is exact and
    tested against scipy) and falls to ``5e-7`` at twice the grid density. Releases farther than
    600 node scales from ``loc`` (beyond float64's range in linear space) get NaN, which
    an audit reports as an error rather than a loss. Cost: ``O(2^L n_grid)`` per release.

    Args:
        loc: ``(..., m)`` summary (CDF values at the first ``m`` grid points).
        depth: tree depth ``L`` (``m <= 2^L``).
        scale: node Laplace scale ``b`` on the count scale.
        count_scale: ``n``.
        n_grid: points of the quadrature grid (odd, static).
        margin: half-width of the tails kept, in units of ``b``.

    Raises:
        ValueError: if ``loc`` has no or too many values on its last axis, or an input
            is not finite or not positive.

    Example:
        >>> d = AncestorLaplace(jnp.zeros(1), depth=0, scale=1.0)
        >>> round(float(d.log_prob(jnp.array([0.0]))), 6)  # one node: Lap(0, 1) at 0
        -0.693147
    """

    arg_constraints = {"loc": constraints.real_vector, "scale": constraints.positive}
    support = constraints.real_vector
    pytree_data_fields = ("loc", "scale", "count_scale")
    pytree_aux_fields = ("depth", "n_grid", "margin")

    def __init__(
        self,
        loc,
        depth,
        scale,
        count_scale=1.0,
        *,
        n_grid: int = 257,
        margin: float = 16.0,
        validate_args=None,
    ):
        self.depth = _check_depth(depth)
        loc = jnp.asarray(loc, dtype=jnp.float64)
        m = int(np.shape(loc)[-1]) if np.ndim(loc) else 0
        if not 1 <= m <= 2**self.depth:
            raise ValueError(
                f"AncestorLaplace loc must have 1..2^depth = {2**self.depth} values on its last "
                f"axis, got shape {tuple(np.shape(loc))}."
            )
        if int(n_grid) < 33 or int(n_grid) % 2 == 0:
            raise ValueError(f"n_grid must be an odd number >= 33, got {n_grid}.")
        check_positive("AncestorLaplace margin", margin)
        check_positive("AncestorLaplace scale", scale)
        check_positive("AncestorLaplace count_scale", count_scale)
        check_finite("AncestorLaplace loc", loc)
        self.n_grid = int(n_grid)
        self.margin = float(margin)
        self.loc = loc
        self.scale = jnp.asarray(scale, dtype=jnp.float64)
        self.count_scale = jnp.asarray(count_scale, dtype=jnp.float64)
        super().__init__(
            batch_shape=loc.shape[:-1], event_shape=loc.shape[-1:], validate_args=validate_args
        )

    @property
    def n_noise(self) -> int:
        """Number ``2^(L+1) - 1`` of Laplace variables (tree nodes)."""
        return 2 ** (self.depth + 1) - 1

    @property
    def matrix(self) -> np.ndarray:
        """The dense ``(m, 2^(L+1) - 1)`` :func:`ancestor_matrix` (built on demand, numpy)."""
        return ancestor_matrix(self.depth, self.event_shape[0])

    @property
    def mean(self):
        return jnp.broadcast_to(self.loc, self.batch_shape + self.event_shape)

    @property
    def variance(self):
        return jnp.broadcast_to(
            2.0 * (self.depth + 1) * (self.scale / self.count_scale) ** 2,
            self.batch_shape + self.event_shape,
        )

    def sample(self, key, sample_shape=()):
        """Draw ``loc + A eta / n``, each leaf summing the noise of its ancestors.

        Args:
            key: a JAX random key.
            sample_shape: leading shape of the draws.

        Returns:
            Draws of shape ``sample_shape + batch_shape + event_shape``.
        """
        return _ancestor_draws(
            self.loc, self.scale, self.count_scale, key, tuple(sample_shape), self.depth
        )

    @property
    def density_work_elements(self) -> int:
        """Float64 intermediates of :meth:`log_prob` per release (the audit's memory bound).

        The level-1 closed form holds about eight arrays of ``2^(L-1)`` leaf pairs by
        ``n_grid`` points (its exponentials, selections and the message); the higher
        levels are half, a quarter, ... of that. 16 per pair and point is declared, so
        the chunking of :func:`dpaudit.whitebox.plan.density_batch_size` errs on the safe
        side. Depths 0 and 1 are closed forms over at most three kinks.
        """
        per_vector = 64 if self.depth <= 1 else 16 * 2 ** (self.depth - 1) * self.n_grid
        return per_vector * math.prod(self.batch_shape)

    def log_prob(self, value):
        """The leaf-release log-density, marginalised over the tree noise.

        Args:
            value: release values, shape ``(..., event)``.

        Returns:
            The log-density, shape ``(...)``.
        """
        return _ancestor_log_prob(
            value, self.loc, self.scale, self.count_scale, self.depth, self.n_grid, self.margin
        )

    def log_prob_error(self, value) -> float:
        """A certified bound on the error of :meth:`log_prob` at ``value``.

        Depths 0 and 1 are closed forms (float round-off only, covered by the
        certificate's own margin: ``0``). Deeper trees use grid quadrature whose error
        (below ``2e-5`` at the defaults, *measured*, not proved) has no certified bound
        yet, so the bound is ``inf``: no certificate rests on such a density, and pure
        claims are decided by the exact route instead (:meth:`exact_sup_loss`).

        Args:
            value: one release (any batch).

        Returns:
            ``0.0`` or ``inf``.
        """
        del value
        return 0.0 if self.depth <= 1 else math.inf

    def epsilon(self, other_loc) -> float:
        """Exact privacy loss between this release and the one centred at ``other_loc``.

        Args:
            other_loc: the summary of the neighbouring dataset, shape ``(m,)``.

        Returns:
            ``sup_y |log p(y) - log p'(y)| = min{||nu||_1 : A nu = n shift} / b``, by the
            tree dynamic programme :func:`ancestor_sensitivity`.

        Raises:
            ValueError: if the locations are not 1-D.
        """
        shift = np.asarray(self.loc) - np.asarray(other_loc)
        if shift.ndim != 1:
            raise ValueError("epsilon compares two single releases; give 1-D locations.")
        value = ancestor_sensitivity(self.depth, float(self.count_scale) * shift)
        return float(value) / float(self.scale)

    def exact_sup_loss(self, other):
        """Certified bounds on ``sup L`` against another tree release with the same noise.

        ``sup L = min{||nu||_1 : A nu = s} / b`` with ``s = n (loc - other.loc)`` in both
        directions (:mod:`dpaudit.accounting.suprema`), the minimum computed by the exact tree dynamic
        programme :func:`ancestor_sensitivity` without forming ``A``. Its float64
        arithmetic adds nonnegative terms (at most ``2^(L+2)`` roundings of relative
        ``eps`` each, doubled), and the rounding of ``s`` itself (``4 eps |s|``) moves the
        minimum by at most its l1 norm (each released leaf has its own noise: the
        minimum is 1-Lipschitz in l1). Independent batch components add up.

        Args:
            other: the release law of the neighbouring dataset.

        Returns:
            A :class:`dpaudit.accounting.suprema.ExactSupLoss` (method ``"linear-laplace"``), or
            ``None`` when ``other`` is not an ``AncestorLaplace`` with the same depth,
            shape and scales.
        """
        if not _same_tree(self, other):
            return None
        n = float(np.asarray(self.count_scale))
        loc_p, loc_q = np.asarray(self.loc, dtype=float), np.asarray(other.loc, dtype=float)
        shifts = (n * (loc_p - loc_q)).reshape(-1, loc_p.shape[-1])
        # the difference and the product are each rounded once: 2 eps relative, 4 for safety
        shift_error = np.sum(4.0 * _EPS * np.abs(shifts), axis=1)
        scales = np.broadcast_to(np.asarray(self.scale, dtype=float), loc_p.shape[:-1])
        values = _tree_minimum(self.depth, shifts)
        rounding = 2.0 * 2 ** (self.depth + 2) * _EPS * values
        lower = np.maximum(0.0, values - rounding - shift_error) / scales.reshape(-1)
        upper = (values + rounding + shift_error) / scales.reshape(-1)
        # one division each, then a sum of `count` nonnegative terms: step outwards
        count = shifts.shape[0]
        low = float(np.nextafter(math.fsum(np.nextafter(lower, 0.0)), 0.0))
        up = float(np.nextafter(math.fsum(np.nextafter(upper, np.inf)), np.inf))
        low, up = max(0.0, low * (1 - count * _EPS)), up * (1 + count * _EPS)
        return ExactSupLoss(low, up, low, up, "linear-laplace")


#: Grid values per array of a block of releases evaluated together inside ``log_prob``:
#: 2^19 (4 MiB of float64; 64 releases at 64 leaves) keep a block in cache; whole-batch
#: vmaps were measured 2-5x slower per release (memory-bound), and a deep tree's block
#: shrinks to one release, so the working memory stays bounded.
_BLOCK_VALUES = 1 << 19


@functools.partial(jax.jit, static_argnums=(4, 5))
def _ancestor_draws(loc, scale, count_scale, key, sample_shape: tuple, depth: int):
    # One compiled program per law shape and sample shape, the law's arrays jit arguments:
    # run eagerly, each of the depth + 1 gathers and sums was its own dispatch and
    # compilation (the model's trace draws a release every time the release law is read).
    # The arrays are passed one by one, in this fixed order: passed as the law itself, they
    # entered the program in numpyro's field order, which follows the process's string
    # hash seed, so every new process lowered a permuted program and the persistent cache
    # missed every program drawing a tree release (each BMR audit recompiled its loss kernels).
    leaves, m = 2**depth, loc.shape[-1]
    eta = scale * jax.random.laplace(key, sample_shape + loc.shape[:-1] + (2 * leaves - 1,))
    rows, offset = np.arange(m), 0
    noise = None
    for level in range(depth + 1):  # level by level from the leaves, as A's columns
        term = eta[..., offset + (rows >> level)]
        noise = term if noise is None else noise + term
        offset += leaves >> level
    return loc + noise / count_scale


@functools.partial(jax.jit, static_argnums=(4, 5, 6))
def _ancestor_log_prob(value, loc, scale, count_scale, depth: int, n_grid: int, margin: float):
    # A module-level program of the law's arrays (``AncestorLaplace.log_prob``): traced once
    # per shape and depth in a process, however many sites, directions, audits and loss
    # programs evaluate a tree density. Inline, every program containing the density
    # re-traced the whole belief propagation (about 0.1-0.3 s per site and program).
    u = count_scale * (value - loc)
    shape = u.shape
    flat = u.reshape(-1, shape[-1])
    scales = jnp.broadcast_to(scale, shape[:-1]).reshape(-1)

    def one(row, b):
        return _ancestor_log_density(row, b, depth, n_grid, margin)

    per_row = 2 ** max(depth - 1, 0) * n_grid
    log_p = _blocked_vmap(one, flat, scales, per_row)
    return log_p.reshape(shape[:-1]) + shape[-1] * jnp.log(count_scale)


def _blocked_vmap(fn, rows, scales, per_row: int):
    """``vmap(fn)`` over ``rows`` in sequential blocks of ``2^19 / per_row`` (``lax.map``)."""
    n, block = rows.shape[0], max(1, _BLOCK_VALUES // per_row)
    if n <= block:
        return jax.vmap(fn)(rows, scales)
    blocks = -(-n // block)
    pad = blocks * block - n  # padded with copies of the first rows, dropped after
    rows = jnp.concatenate([rows, jnp.broadcast_to(rows[:1], (pad, rows.shape[1]))])
    scales = jnp.concatenate([scales, jnp.broadcast_to(scales[:1], (pad,))])
    out = lax.map(
        lambda part: jax.vmap(fn)(*part),
        (rows.reshape(blocks, block, -1), scales.reshape(blocks, block)),
    )
    return out.reshape(-1)[:n]


def _same_tree(p: AncestorLaplace, q) -> bool:
    """Two tree releases with the same depth, shape, node scale and count scale."""
    if type(q) is not AncestorLaplace or p.depth != q.depth or p.loc.shape != q.loc.shape:
        return False
    same = np.array_equal(np.asarray(p.scale), np.asarray(q.scale))
    return same and np.array_equal(np.asarray(p.count_scale), np.asarray(q.count_scale))


# The dynamic programme holds (leaves, values, values) float64 per shift: past 2^24
# (128 MiB) it is run one shift at a time, and past that per shift the dense LP decides.
_DP_ELEMENTS = 1 << 24


def _tree_minimum(depth: int, shifts: np.ndarray) -> np.ndarray:
    """``min{||nu||_1 : A nu = s}`` per row of ``shifts`` with bounded memory."""
    leaves = 2**depth
    out = np.empty(shifts.shape[0])
    for i, shift in enumerate(shifts):
        n_values = np.unique(np.append(shift, 0.0)).size
        if leaves * n_values * n_values <= _DP_ELEMENTS:
            out[i] = float(ancestor_sensitivity(depth, shift))
        else:  # many distinct shift values: the LP on the dense matrix (certified upper)
            matrix = ancestor_matrix(depth, shift.shape[0])
            out[i] = linear_laplace_sensitivity_bounds(matrix, shift).upper
    return out


#: Grid steps per node scale at least: the quadrature error is O((h/b)^4) (docstring).
_STEPS_PER_SCALE = 6.0
#: Beyond this spread (in node scales) linear-space messages could underflow: NaN.
_MAX_SPREAD = 600.0


def _laplace_smooth(g, weights_up, weights_down, t):
    """``int k(w - x_j) g(w) dw`` on the grid for each row of ``g`` (class docstring).

    ``weights_up[k] = e^{(k - c) t}``, ``weights_down = 1 / weights_up`` (``t = h/b``):
    the left sum ``sum_{k<=j} e^{-(j-k) t} g_k`` is ``weights_down[j]`` times a
    cumulative sum of ``weights_up g``, and symmetrically on the right.
    """
    left = weights_down * jnp.cumsum(weights_up * g, axis=-1)
    right = weights_up * jnp.cumsum((weights_down * g)[..., ::-1], axis=-1)[..., ::-1]
    padded = jnp.pad(g, [(0, 0)] * (g.ndim - 1) + [(1, 1)])
    second = padded[..., 2:] - 2.0 * g + padded[..., :-2]
    return _corrected_trapezoid(left + right - g, g, second, t)


def _corrected_trapezoid(total, g, second, t):
    """Euler–Maclaurin on both sides of the kink at ``x_j`` (class docstring).

    ``total = sum_k e^{-|j-k| t} g_k``; the trapezoid value is ``(t/2) total``. The pure
    ``g_j`` terms of the expansion sum to ``((t/2) coth(t/2) - 1) g_j`` (a constant ``g``
    is integrated exactly), the ``h^4 g''`` term is ``(t^2/240)(g_{j+1} - 2 g_j + g_{j-1})``.
    """
    half = t / 2.0
    return half * total - (half / jnp.tanh(half) - 1.0) * g + (t * t / 240.0) * second


def _pair_messages(u, grid, b, m: int, pairs: int):
    """Level-1 messages in closed form, normalised: ``(pairs, G)`` values, ``(pairs,)`` logs.

    ``grid = (x, up, down, mid)``: the points, ``e^{+-(x - mid)/b}`` and the centre ``mid``;
    ``e^{-|x - a|/b}`` is ``up e^{(mid - a)/b}`` left of ``a`` and ``down e^{(a - mid)/b}``
    right of it (products, not one exponential per point and pair).
    """
    x, up, down, mid = grid

    def kernel(a):  # e^{-|x - a|/b} on the grid, a: (k, 1)
        return jnp.where(x < a, up * jnp.exp((mid - a) / b), down * jnp.exp((a - mid) / b))

    full = m // 2
    parts, scales = [], []
    log_b, log_2b = jnp.log(b), jnp.log(2.0 * b)
    if full:
        a = jnp.minimum(u[0 : 2 * full : 2], u[1 : 2 * full : 2])[:, None]
        c = jnp.maximum(u[0 : 2 * full : 2], u[1 : 2 * full : 2])[:, None]
        near_a, near_c = kernel(a), kernel(c)
        inner = jnp.exp(-(c - a) / b)
        below, above = x < a, x > c
        # e^{-(t2 - t1)/b} + e^{-(t3 - t2)/b} and e^{-(dist of x to [a, c])/b}
        pair = jnp.where(below, near_a + inner, jnp.where(above, inner + near_c, near_a + near_c))
        decay = jnp.where(below, near_a, jnp.where(above, near_c, 1.0))
        parts.append(decay * (2.0 - (2.0 / 3.0) * pair))
        scales.append(-(c[:, 0] - a[:, 0]) / b + log_b - 3.0 * log_2b)
    if m % 2:  # one released leaf: int k(w - x) k(u - w) dw
        near = kernel(u[m - 1 : m, None])
        parts.append(near * (jnp.abs(x - u[m - 1]) / b + 1.0))
        scales.append(jnp.reshape(log_b - 2.0 * log_2b, (1,)))
    empty = pairs - full - m % 2
    if empty:  # no released leaf: the kernel integrates to one
        parts.append(jnp.ones((empty, x.shape[0])))
        scales.append(jnp.zeros(empty))
    return jnp.concatenate(parts), jnp.concatenate(scales)


def _log_pair_density(u, b):
    """``log p(u)`` of a depth-1 tree (root and two leaves) in closed form."""
    log_2b = jnp.log(2.0 * b)
    if u.shape[0] == 1:
        d = jnp.abs(u[0])
        return -d / b + jnp.log(d + b) - 2.0 * log_2b
    t1, t3 = jnp.minimum(0.0, jnp.min(u)), jnp.maximum(0.0, jnp.max(u))
    t2 = jnp.clip(0.0, jnp.min(u), jnp.max(u))
    bracket = 2.0 - (2.0 / 3.0) * (jnp.exp(-(t2 - t1) / b) + jnp.exp(-(t3 - t2) / b))
    return -(t3 - t1) / b + jnp.log(b) + jnp.log(bracket) - 3.0 * log_2b


def _normalise(g):
    top = jnp.max(g, axis=-1, keepdims=True)
    return g / top, jnp.log(top[..., 0])


def _ancestor_log_density(u, scale, depth: int, n_grid: int, margin: float):
    """``log p(u)`` for one vector of leaf noises ``u`` (count scale); see AncestorLaplace."""
    b = scale
    if depth == 0:
        return -jnp.abs(u[0]) / b - jnp.log(2.0 * b)
    if depth == 1:
        return _log_pair_density(u, b)
    lo, hi = jnp.minimum(jnp.min(u), 0.0), jnp.maximum(jnp.max(u), 0.0)
    width = hi - lo + 2.0 * margin * b
    step = jnp.maximum(b / _STEPS_PER_SCALE, width / (n_grid - 1))
    slack = (n_grid - 1) * step - width
    # 0 (the root's kink) on the grid, the window [lo - margin b, hi + margin b] inside it
    zero = jnp.clip(jnp.round((margin * b - lo + slack / 2.0) / step), 0, n_grid - 1)
    k = jnp.arange(n_grid)
    x = (k - zero) * step
    t = step / b
    centre = (n_grid - 1) / 2.0
    up, down = jnp.exp((k - centre) * t), jnp.exp(-(k - centre) * t)
    mid = (centre - zero) * step
    grid = (x, up, down, mid)
    messages, log_scale = _pair_messages(u, grid, b, u.shape[0], 2 ** (depth - 1))
    for _ in range(2, depth):  # levels 2 .. L-1: the product of two children, smoothed
        g, log_top = _normalise(messages.reshape(-1, 2, n_grid).prod(axis=1))
        log_scale = log_scale.reshape(-1, 2).sum(axis=1) + log_top
        messages = _laplace_smooth(g, up, down, t)
    # the root: the product of its two children, integrated against k(w) (kink at x = 0)
    g, log_top = _normalise(messages.prod(axis=0))
    j = zero.astype(int)
    second = (
        jnp.take(g, jnp.minimum(j + 1, n_grid - 1))
        - 2.0 * jnp.take(g, j)
        + jnp.take(g, jnp.maximum(j - 1, 0))
    )
    total = jnp.dot(jnp.exp(-jnp.abs(k - zero) * t), g)
    root = _corrected_trapezoid(total, jnp.take(g, j), second, t)
    log_p = jnp.sum(log_scale) + log_top + jnp.log(root)
    return jnp.where((hi - lo) / b > _MAX_SPREAD, jnp.nan, log_p)
