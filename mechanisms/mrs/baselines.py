r"""Two finite-dimensional baselines for functional mean releases.

Both release a mean of ``n`` curves; LR (docs/papers/lr.md#lr-experiments) and MRS compare their
function-space mechanisms against such releases. Replace-one adjacency.

**Gaussian mechanism on basis coefficients** (``gaussian-kl-coefficients``).
The summary is the vector of the first ``K`` Karhunen–Loève coefficients of the
sample mean, ``f_D = (<bar X, phi_k>)_{k<=K}``. With ``||X_i||_{L2} <= tau``
(public ``tau``; curves outside the ball are rejected or rescaled onto it, as in
:func:`mechanisms.mrs.mean.enforce_l2_bound`), Bessel's inequality gives the exact
``l2`` sensitivity

.. math::
    \|f_D - f_{D'}\|_2 = \frac1n\Big(\sum_{k\le K}\langle X_1-X_1',\phi_k\rangle^2\Big)^{1/2}
    \le \frac{\|X_1 - X_1'\|_{L^2}}{n} \le \frac{2\tau}{n},

attained by ``X_1 = tau phi_1``, ``X_1' = -tau phi_1``. The release is
``f_D + N(0, sigma^2 I_K)`` with ``sigma = c(delta) Delta / epsilon``,
``c(delta) = sqrt(2 log(2/delta))`` (Dwork & Roth 2014 Thm A.1 / HRW Prop. 2.4,
``epsilon <= 1`` only, see docs/paper-errors.md#mrs-epsilon-at-most-one) or the analytic calibration (Balle & Wang 2018).

**Bernstein mechanism** (``bernstein-mean``, ``bernstein-mean-2d``), after
Aldà & Rubinstein (2017), "The Bernstein Mechanism: Function Release under
Differential Privacy" (AAAI), Algorithm 1 and its privacy theorem. For a
function ``F_D`` on ``[0, 1]^d`` and a degree ``k`` (the "cover size" of the R
package ``diffpriv``), the mechanism evaluates ``F_D`` on the lattice
``{0, 1/k, ..., 1}^d`` of ``L = (k+1)^d`` points, adds i.i.d. Laplace noise to
each value, and releases the Bernstein polynomial of the noisy values

.. math::
    \tilde B_k(x) = \sum_{\nu\in\{0..k\}^d} \big(F_D(\nu/k) + \xi_\nu\big)
    \prod_{i=1}^d \binom{k}{\nu_i} x_i^{\nu_i}(1-x_i)^{k-\nu_i},
    \qquad \xi_\nu \overset{iid}{\sim}\mathrm{Lap}(0, \Delta_1/\epsilon),

which is epsilon-DP by the Laplace mechanism on ``R^L`` (the polynomial is
post-processing); ``Delta_1`` is the ``l1`` sensitivity of the lattice values.
Aldà & Rubinstein bound it by ``L`` times the sup-norm sensitivity of ``F_D``.

What is implemented here: ``F_D`` is the sample mean of ``n`` curves given by
their values on a public tensor grid (``(n, m)``), read at the lattice points by
(multi)linear interpolation, with constant extension beyond the outermost grid
points. Each lattice value of a curve is then a convex combination of its grid
values, so ``sup_a |X_i(x_a)| <= tau`` (public ``tau``; values outside
``[-tau, tau]`` are rejected, or clipped to it as a claimed step) gives
``|F_D(nu/k) - F_D'(nu/k)| <= 2 tau / n`` at every lattice point and the exact

.. math::
    \Delta_1 = \sup_{D\sim D'}\sum_\nu|F_D(\nu/k)-F_{D'}(\nu/k)| = \frac{2\tau(k+1)^d}{n},

attained by ``X_1 = tau``, ``X_1' = -tau`` (constant curves). The release is
the noisy lattice-value vector (numpyro ``Laplace(...).to_event(1)``);
:func:`bernstein_polynomial` evaluates the released polynomial anywhere.
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln, xlog1py, xlogy

from dpaudit import Claim, Mechanism, register
from dpaudit.core.arrays import float64_array
from dpaudit.core.checks import check_choice, check_count, check_finite, check_number, is_concrete
from dpaudit.model.spaces import Grid, KarhunenLoeveBasis, Kernel, l2_norm, uniform_grid
from mechanisms.mrs.mean import (
    CALIBRATIONS,
    OUT_OF_BOUND,
    ROUNDING_SLACK,
    check_basis,
    check_curve_count,
    default_basis,
    enforce_l2_bound,
    gaussian_sigma,
    scaled_mean_coefficients,
)

__all__ = [
    "MAX_LATTICE_SIZE",
    "bernstein_basis_matrix",
    "bernstein_lattice",
    "bernstein_mean",
    "bernstein_mean_2d_mechanism",
    "bernstein_mean_mechanism",
    "bernstein_mean_sensitivity",
    "bernstein_polynomial",
    "enforce_sup_bound",
    "gaussian_kl_coefficients",
    "gaussian_kl_coefficients_mechanism",
    "gaussian_kl_coefficients_sensitivity",
    "lattice_interpolation_matrix",
]


# ------------------------------------------------- Gaussian mechanism on coefficients


def gaussian_kl_coefficients(curves, basis: KarhunenLoeveBasis) -> jax.Array:
    """First ``K`` coefficients ``<bar X, phi_k>`` of the sample mean of curves ``(n, m)``.

    ``K`` is ``basis.n_components`` (truncate the basis to choose it). No data
    bound is applied here; the mechanism applies it first.

    Args:
        curves: ``(n, m)`` grid values on the basis grid.
        basis: the eigenbasis.

    Returns:
        ``(K,)`` coefficients.

    Example:
        >>> from dpaudit.model.spaces import brownian_motion_basis, uniform_grid
        >>> b = brownian_motion_basis(uniform_grid(16), 3)
        >>> x = jnp.stack([b.eigenfunctions[:, 1], 3 * b.eigenfunctions[:, 1]])
        >>> [round(float(c), 6) for c in gaussian_kl_coefficients(x, b)]
        [0.0, 2.0, 0.0]
    """
    basis = check_basis(basis)
    x = curves
    if len(np.shape(x)) != 2 or np.shape(x)[1] != basis.grid_size:
        raise ValueError(
            f"curves have shape {tuple(np.shape(x))} but must be (n, {basis.grid_size}): one row of "
            "grid values per record."
        )
    check_finite("curves", x)
    return scaled_mean_coefficients(x, 1.0, basis.grid.weights, basis.eigenfunctions)


def gaussian_kl_coefficients_sensitivity(n: int, tau: float) -> float:
    """``l2`` sensitivity ``2 tau / n`` of the mean's coefficients in any orthonormal family.

    Args:
        n: the public number of curves.
        tau: the public L2 bound.

    Returns:
        ``Delta``.

    Example:
        >>> gaussian_kl_coefficients_sensitivity(100, 1.0)
        0.02
    """
    n = check_count("n", n)
    tau = check_number("tau", tau, low=0.0, inclusive=False)
    return 2.0 * tau / n


@register(
    "gaussian-kl-coefficients",
    example={"n": 100, "epsilon": 1.0, "delta": 0.1, "tau": 1.0, "n_components": 10},
)
def gaussian_kl_coefficients_mechanism(
    n: int = 100,
    epsilon: float = 1.0,
    delta: float = 0.1,
    tau: float = 1.0,
    *,
    n_components: int = 10,
    basis: KarhunenLoeveBasis | None = None,
    kernel: Kernel | None = None,
    grid_size: int = 100,
    calibration: str = "classical",
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""Gaussian mechanism on the first K Karhunen–Loève coefficients of the sample mean.

    ``tilde f_D = (<bar X, phi_k>)_{k<=K} + N(0, sigma^2 I_K)`` with
    ``sigma = c(delta) (2 tau / n) / epsilon`` (classical, ``epsilon <= 1``) or the
    analytic calibration; ``l2`` sensitivity ``2 tau / n`` for curves with
    ``||X_i||_{L2} <= tau``.

    Args:
        n: number of records (public).
        epsilon, delta: claimed privacy level.
        tau: public bound on every ``||X_i||_{L2}``.
        n_components: ``K``, the number of leading coefficients released.
        basis: the orthonormal eigenbasis (truncated to ``K``); by default
            :func:`mechanisms.mrs.mean.default_basis` of ``kernel`` and ``grid_size``.
        calibration: ``"classical"`` or ``"analytic"``.
        out_of_bound: ``"reject"`` or ``"clip"`` curves with ``||X_i|| > tau``.

    Raises:
        ValueError / TypeError: one sentence naming the bad parameter.
    """
    n = check_count("n", n)
    epsilon = check_number("epsilon", epsilon, low=0.0, inclusive=False)
    tau = check_number("tau", tau, low=0.0, inclusive=False)
    check_choice("calibration", calibration, CALIBRATIONS)
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    k = check_count("n_components", n_components)
    basis = default_basis(kernel, grid_size) if basis is None else check_basis(basis)
    basis = basis.truncate(k)
    sensitivity = gaussian_kl_coefficients_sensitivity(n, tau)
    sigma = gaussian_sigma(sensitivity, epsilon, delta, calibration)

    arrays = (basis.grid.weights, basis.eigenfunctions)

    def summary(data):
        x = enforce_l2_bound(data, basis.grid, tau, out_of_bound)
        check_curve_count(x, n)
        return scaled_mean_coefficients(x, 1.0, *arrays)

    def model(data):
        # sigma is a checked positive float; numpyro's runtime checks would only add compiles
        release = dist.Normal(summary(data), sigma, validate_args=False).to_event(1)
        numpyro.sample("release", release)

    how = "c(delta) Delta/epsilon" if calibration == "classical" else "analytic Gaussian"
    return Mechanism(
        name="gaussian-kl-coefficients",
        model=model,
        claim=Claim(
            epsilon=epsilon,
            delta=delta,
            sensitivity_norm="l2",
            sensitivity=sensitivity,
            reference=(
                "Gaussian mechanism (Dwork & Roth 2014 Thm A.1; HRW Prop. 2.4) on K basis "
                f"coefficients, {how}"
            ),
        ),
        summary=summary,
        difference_norm=l2_norm,
        params={
            "n": n,
            "epsilon": epsilon,
            "delta": delta,
            "tau": tau,
            "n_components": k,
            "grid_points": basis.grid_size,
            "calibration": calibration,
            "out_of_bound": out_of_bound,
            "sigma": sigma,
        },
        description=(
            "First K Karhunen-Loeve coefficients of the sample mean of curves bounded in L2 by "
            "tau, with i.i.d. N(0, sigma^2) noise: the finite-dimensional Gaussian baseline."
        ),
    )


# ----------------------------------------------------------- Bernstein mechanism

#: Largest lattice ``(k+1)^d`` a builder accepts (the release is one Laplace per point).
MAX_LATTICE_SIZE = 100_000


def bernstein_lattice(degree: int, dim: int = 1) -> np.ndarray:
    """Lattice ``{0, 1/k, ..., 1}^d`` in lexicographic order (first axis slowest); ``((k+1)^d, d)``.

    Args:
        degree: ``k``.
        dim: ``d``.

    Returns:
        ``((k+1)^d, d)`` lattice points.

    Example:
        >>> bernstein_lattice(2, 2)[:4].tolist()
        [[0.0, 0.0], [0.0, 0.5], [0.0, 1.0], [0.5, 0.0]]
    """
    k = check_count("degree", degree)
    d = check_count("dim", dim)
    axis = np.arange(k + 1) / k
    return np.array(list(itertools.product(axis, repeat=d)), dtype=float).reshape(-1, d)


def _tensor_axes(grid: Grid) -> list[np.ndarray]:
    points = np.asarray(grid.points)
    axes = [np.unique(points[:, i]) for i in range(grid.dim)]
    product = np.array(list(itertools.product(*axes)), dtype=float).reshape(-1, grid.dim)
    if product.shape != points.shape or not np.array_equal(product, points):
        raise ValueError(
            "the Bernstein mechanism reads curves on a tensor grid in lexicographic order (as "
            "uniform_grid builds); this grid is not one."
        )
    return axes


def _interpolation_1d(axis: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Matrix ``(len(targets), len(axis))`` of linear interpolation, constant beyond the ends."""
    weights = np.zeros((targets.size, axis.size))
    if axis.size == 1:
        weights[:, 0] = 1.0
        return weights
    t = np.clip(targets, axis[0], axis[-1])
    right = np.clip(np.searchsorted(axis, t, side="right"), 1, axis.size - 1)
    left = right - 1
    frac = (t - axis[left]) / (axis[right] - axis[left])
    rows = np.arange(targets.size)
    weights[rows, left] += 1.0 - frac
    weights[rows, right] += frac
    return weights


def lattice_interpolation_matrix(grid: Grid, degree: int) -> jax.Array:
    """Matrix ``A`` ``((k+1)^d, m)`` reading grid values at the Bernstein lattice points.

    Multilinear interpolation on the tensor grid (constant beyond its outermost
    points): ``A = A_1 kron ... kron A_d``. Rows are non-negative and sum to 1,
    so ``max |A x| <= max |x|``.

    Args:
        grid: the tensor grid of the data.
        degree: ``k``.

    Returns:
        ``A``, ``((k+1)^d, m)``.

    Raises:
        ValueError: if ``grid`` is not a tensor grid in lexicographic order.
    """
    if not isinstance(grid, Grid):
        raise TypeError(f"grid must be a dpaudit Grid (see uniform_grid), got {type(grid)}.")
    k = check_count("degree", degree)
    targets = np.arange(k + 1) / k
    matrix = np.ones((1, 1))
    for axis in _tensor_axes(grid):
        matrix = np.kron(matrix, _interpolation_1d(axis, targets))
    return float64_array(matrix)


def _bernstein_points(points) -> tuple[jax.Array, int]:
    xp = np if is_concrete(points) else jnp
    x = xp.asarray(points, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"points must have shape (p,) or (p, d), got {tuple(x.shape)}.")
    if xp is np:
        check_finite("points", x)
        if np.any((x < 0) | (x > 1)):
            raise ValueError("Bernstein polynomials are evaluated on [0, 1]^d; a point is outside.")
    return x, x.shape[1]


@functools.partial(jax.jit, static_argnums=1)
def _bernstein_basis(x, k: int) -> jax.Array:
    nu = jnp.arange(k + 1, dtype=jnp.float64)
    log_binom = gammaln(k + 1.0) - gammaln(nu + 1.0) - gammaln(k - nu + 1.0)
    matrix = jnp.ones((x.shape[0], 1))
    for i in range(x.shape[1]):
        xi = x[:, i : i + 1]
        axis = jnp.exp(log_binom + xlogy(nu, xi) + xlog1py(k - nu, -xi))
        matrix = (matrix[:, :, None] * axis[:, None, :]).reshape(x.shape[0], -1)
    return matrix


def bernstein_basis_matrix(points, degree: int) -> jax.Array:
    r"""Tensor Bernstein basis ``prod_i C(k, nu_i) x_i^nu_i (1 - x_i)^(k - nu_i)``, ``(p, (k+1)^d)``.

    Computed in log space (``xlogy``/``xlog1py``) so large degrees neither
    overflow nor turn ``0^0`` into NaN. Columns are in lattice order.

    Args:
        points: ``(p,)`` or ``(p, d)`` points of ``[0, 1]^d``.
        degree: ``k``.

    Raises:
        ValueError: for points outside ``[0, 1]^d`` or NaN.
    """
    k = check_count("degree", degree)
    x, _ = _bernstein_points(points)
    return _bernstein_basis(x, k)


def bernstein_polynomial(coefficients, points, degree: int) -> jax.Array:
    """Values ``sum_nu c_nu b_nu(x)`` of the Bernstein polynomial at ``points`` (post-processing).

    Args:
        coefficients: ``(..., (k+1)^d)`` lattice values (e.g. a release).
        points: ``(p,)`` or ``(p, d)`` points of ``[0, 1]^d``.
        degree: ``k``.

    Returns:
        ``(..., p)`` values.

    Raises:
        ValueError: if the number of coefficients is not ``(k+1)^d``, or for
            points outside ``[0, 1]^d``.

    Example:
        >>> c = jnp.asarray(bernstein_lattice(3)[:, 0])  # the identity is reproduced exactly
        >>> [round(float(v), 12) for v in bernstein_polynomial(c, jnp.array([0.1, 0.7]), 3)]
        [0.1, 0.7]
    """
    k = check_count("degree", degree)
    x, d = _bernstein_points(points)
    shape = np.shape(coefficients)
    if len(shape) == 0 or shape[-1] != (k + 1) ** d:
        raise ValueError(
            f"coefficients have shape {tuple(shape)} but a degree-{k} polynomial on [0, 1]^{d} "
            f"needs {(k + 1) ** d} lattice values on the last axis."
        )
    return _bernstein_values(coefficients, x, k)


@functools.partial(jax.jit, static_argnums=2)
def _bernstein_values(coefficients, x, k: int) -> jax.Array:
    return jnp.asarray(coefficients, dtype=jnp.float64) @ _bernstein_basis(x, k).T


def enforce_sup_bound(values, tau: float, out_of_bound: str = "reject") -> jax.Array:
    """Grid values with ``|X_i(x_a)| <= tau``: rejected or clipped to ``[-tau, tau]``.

    In "reject" mode, values within ``tau (1 + ROUNDING_SLACK)`` are clipped
    (rounding); under ``jit`` a record with a larger value becomes NaN.

    Args:
        values: ``(n, m)`` grid values.
        tau: the public sup bound.
        out_of_bound: ``"reject"`` or ``"clip"``.

    Returns:
        The values, clipped where needed.

    Raises:
        ValueError: on NaN/inf or (in "reject" mode) a value with ``|x| > tau``.
    """
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    xp = np if is_concrete(values) else jnp  # numpy for concrete data: nothing to compile
    x = xp.asarray(values, dtype=np.float64)
    check_finite("curves", x)
    clipped = xp.clip(x, -tau, tau)
    if out_of_bound == "clip":
        return clipped
    too_large = xp.abs(x) > tau * (1.0 + ROUNDING_SLACK)
    if xp is np:
        if np.any(too_large):
            raise ValueError(
                f"a curve takes the value {np.max(np.abs(x)):.6g}, outside [-tau, tau] with "
                f"tau = {tau:g}; the data bound must hold for every record (rescale the data, "
                "raise the public tau, or build the mechanism with out_of_bound='clip')."
            )
        return clipped
    return jnp.where(too_large, jnp.nan, clipped)


def bernstein_mean(curves, grid: Grid, degree: int) -> jax.Array:
    """Lattice values ``F_D(nu/k)`` of the sample mean of curves ``(n, m)`` on a tensor grid.

    No data bound is applied here; the mechanism applies it first.

    Args:
        curves: ``(n, m)`` grid values.
        grid: their tensor grid.
        degree: ``k``.

    Returns:
        ``((k+1)^d,)`` lattice values.
    """
    a = lattice_interpolation_matrix(grid, degree)
    x = curves
    if len(np.shape(x)) != 2 or np.shape(x)[1] != grid.size:
        raise ValueError(
            f"curves have shape {tuple(np.shape(x))} but must be (n, {grid.size}): one row of "
            "grid values per record."
        )
    check_finite("curves", x)
    return _interpolated_mean(x, a)


@jax.jit
def _interpolated_mean(curves, interpolation) -> jax.Array:
    return interpolation @ jnp.mean(jnp.asarray(curves, dtype=jnp.float64), axis=0)


def bernstein_mean_sensitivity(n: int, tau: float, degree: int, dim: int = 1) -> float:
    """``l1`` sensitivity ``2 tau (k+1)^d / n`` of the mean's lattice values.

    Args:
        n: the public number of curves.
        tau: the public sup bound.
        degree: ``k``.
        dim: ``d``.

    Returns:
        ``Delta``.

    Example:
        >>> bernstein_mean_sensitivity(100, 1.0, 9)
        0.2
    """
    n = check_count("n", n)
    tau = check_number("tau", tau, low=0.0, inclusive=False)
    k = check_count("degree", degree)
    d = check_count("dim", dim)
    return 2.0 * tau * (k + 1) ** d / n


def _bernstein_mechanism(name, n, epsilon, tau, degree, dim, grid, grid_size, out_of_bound):
    n = check_count("n", n)
    epsilon = check_number("epsilon", epsilon, low=0.0, inclusive=False)
    tau = check_number("tau", tau, low=0.0, inclusive=False)
    k = check_count("degree", degree)
    dim = check_count("dim", dim)
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    if grid is None:
        grid = uniform_grid(check_count("grid_size", grid_size), dim)
    elif not isinstance(grid, Grid):
        raise TypeError(f"grid must be a dpaudit Grid (see uniform_grid), got {type(grid)}.")
    elif grid.dim != dim:
        raise ValueError(f"the grid has dimension {grid.dim} but dim = {dim}; make them agree.")
    if (k + 1) ** dim > MAX_LATTICE_SIZE:
        raise ValueError(
            f"degree {k} in dimension {dim} gives {(k + 1) ** dim} lattice values; use a "
            f"smaller degree (at most {MAX_LATTICE_SIZE} values)."
        )
    interpolation = lattice_interpolation_matrix(grid, k)
    sensitivity = bernstein_mean_sensitivity(n, tau, k, dim)
    scale = sensitivity / epsilon

    def summary(data):
        if len(np.shape(data)) != 2 or np.shape(data)[1] != grid.size:
            raise ValueError(
                f"curves have shape {tuple(np.shape(data))} but must be (n, {grid.size}): one "
                "row of grid values per record."
            )
        x = enforce_sup_bound(data, tau, out_of_bound)
        check_curve_count(x, n)
        return _interpolated_mean(x, interpolation)

    def model(data):
        # scale is a checked positive float; numpyro's runtime checks would only add compiles
        release = dist.Laplace(summary(data), scale, validate_args=False).to_event(1)
        numpyro.sample("release", release)

    return Mechanism(
        name=name,
        model=model,
        claim=Claim(
            epsilon=epsilon,
            sensitivity_norm="l1",
            sensitivity=sensitivity,
            reference=(
                "Alda & Rubinstein (2017), The Bernstein Mechanism, Algorithm 1 (Laplace "
                "mechanism on the (k+1)^d lattice values, Dwork & Roth 2014 Thm 3.6)"
            ),
        ),
        summary=summary,
        difference_norm=lambda h: jnp.sum(jnp.abs(h), axis=-1),
        params={
            "n": n,
            "epsilon": epsilon,
            "tau": tau,
            "degree": k,
            "dim": dim,
            "grid_points": grid.size,
            "out_of_bound": out_of_bound,
            "laplace_scale": scale,
        },
        description=(
            f"Bernstein mechanism in dimension {dim}: the sample mean of curves bounded by tau "
            "in sup norm, read at the (k+1)^d lattice points, with i.i.d. "
            "Laplace(2 tau (k+1)^d / (n epsilon)) noise; the release is the noisy lattice values, "
            "whose Bernstein polynomial is post-processing."
        ),
    )


@register("bernstein-mean", example={"n": 100, "epsilon": 1.0, "tau": 1.0, "degree": 20})
def bernstein_mean_mechanism(
    n: int = 100,
    epsilon: float = 1.0,
    tau: float = 1.0,
    *,
    degree: int = 20,
    dim: int = 1,
    grid: Grid | None = None,
    grid_size: int = 100,
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""Bernstein mechanism (Aldà & Rubinstein 2017) on the sample mean of bounded curves.

    Releases the lattice values ``F_D(nu/k)``, ``nu in {0..k}^d``, of the sample
    mean plus i.i.d. ``Laplace(0, 2 tau (k+1)^d / (n epsilon))`` noise: pure
    epsilon-DP with ``l1`` sensitivity ``2 tau (k+1)^d / n`` (see the module
    docstring). Evaluate the released function with :func:`bernstein_polynomial`.

    Args:
        n: number of records (public).
        epsilon: claimed (pure) privacy level.
        tau: public bound on every ``|X_i(x_a)|`` (sup norm on the grid).
        degree: ``k``; the lattice has ``(k+1)^d`` points (LR used ``k = 20``).
        dim: ``d``, the dimension of the domain ``[0, 1]^d``.
        grid: the tensor grid of the curves; by default ``uniform_grid(grid_size, dim)``.
        grid_size: points per axis of the default grid.
        out_of_bound: ``"reject"`` or ``"clip"`` values outside ``[-tau, tau]``.

    Raises:
        ValueError / TypeError: one sentence naming the bad parameter.
    """
    return _bernstein_mechanism(
        "bernstein-mean", n, epsilon, tau, degree, dim, grid, grid_size, out_of_bound
    )


@register(
    "bernstein-mean-2d",
    example={"n": 100, "epsilon": 1.0, "tau": 1.0, "degree": 5, "grid_size": 20},
)
def bernstein_mean_2d_mechanism(
    n: int = 100,
    epsilon: float = 1.0,
    tau: float = 1.0,
    *,
    degree: int = 5,
    grid: Grid | None = None,
    grid_size: int = 20,
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""Bernstein mechanism on the mean of bounded surfaces on [0, 1]^2 (tensor lattice).

    The two-dimensional case of :func:`bernstein_mean_mechanism` (LR's 2-D KDE
    experiment used ``k`` in {5, 10}): ``(k+1)^2`` lattice values read from a
    tensor grid by bilinear interpolation, ``Laplace(2 tau (k+1)^2 / (n epsilon))``
    noise on each. Data are ``(n, m)`` values on the grid (lexicographic order).

    Args:
        n, epsilon, tau, out_of_bound: as :func:`bernstein_mean_mechanism`.
        degree: the lattice degree ``k`` per axis (``(k+1)^2`` lattice values).
        grid: the tensor grid of the data (default ``grid_size x grid_size`` midpoints).
        grid_size: points per axis of the default grid.

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    return _bernstein_mechanism(
        "bernstein-mean-2d", n, epsilon, tau, degree, 2, grid, grid_size, out_of_bound
    )
