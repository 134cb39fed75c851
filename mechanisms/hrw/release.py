r"""Hall, Rinaldo & Wasserman (2013): Gaussian-process noise for functions — shared pieces.

Mathematics: docs/papers/hrw.md (HRW, "Differential Privacy for Functions and Functional Data");
corrections: docs/paper-errors.md#hrw-batch-covariance to #hrw-sigma-field; oracles: docs/oracles.md#oracle-hrw. HRW write ``(alpha, beta)`` for ``(epsilon, delta)``;
this package writes ``(epsilon, delta)``. Adjacency is replace-one.

**Mechanism (HRW Prop. 2.4, Prop. 3.3, Prop. 3.4, Cor. 3.5).** If every
summary ``f_D`` lies in the RKHS ``H`` of a kernel ``K`` and
``sup_{D~D'} ||f_D - f_D'||_H <= Delta``, then

.. math::
    \tilde f_D = f_D + s\,G,\qquad G\sim GP(0,K),\qquad
    s = \frac{c(\delta)\,\Delta}{\epsilon},\quad c(\delta)=\sqrt{2\log(2/\delta)},

is ``(epsilon, delta)``-DP for ``epsilon <= 1`` on the cylinder sigma-field
of ``R^T``. At finitely many points ``x_{1:m}`` the release is
``N(f_D(x_{1:m}), s^2 K_{x_{1:m}})`` — the multiplier is **squared** (see docs/paper-errors.md#hrw-batch-covariance;
Sec. 5 of the paper prints ``(c Delta/alpha) K``, which is not DP). The proof
(Prop. 3.4, docs/oracles.md#oracle-hrw) is that for every finite point set
``||K_{x_{1:m}}^{-1/2} f(x_{1:m})||_2 <= ||f||_H``, so the Mahalanobis
sensitivity of every finite-dimensional marginal is at most ``Delta``.

**Calibration.** ``calibration="classical"`` uses ``s = c(delta) Delta /
epsilon`` (HRW eq. 6 / Prop. 2.4), which is proven for ``epsilon <= 1`` only
(see docs/paper-errors.md#hrw-c-beta; it fails for large epsilon, see docs/paper-errors.md#mrs-epsilon-at-most-one) and is refused above;
``calibration="analytic"`` uses the exact analytic Gaussian mechanism of Balle
& Wang (2018, Thm 8), :func:`dpaudit.model.noise.analytic_gaussian_sigma`, valid for
every epsilon and never larger than the classical multiplier.

**Grid release (see docs/paper-errors.md#hrw-sigma-field).** The catalogue releases the function at the points
of a public grid. That is a finite-dimensional *cylinder* event of HRW's
sigma-field: the guarantee covers every event about these values (and, by
Prop. 3.1–3.2, any countable set of evaluations), but not path events such as
"the path is continuous" or sup-norm balls of the unobserved function. The
release is drawn through the Karhunen–Loève basis of ``K`` on the grid
(:func:`dpaudit.model.spaces.kl_basis`), so its ``log_prob`` is the exact
Cameron–Martin density of ``N(loc, s^2 K_grid)`` on the span of the retained
eigenvectors (those with ``lambda_k > rtol lambda_1``; the rest are numerical
zeros of the Gram matrix). The released summary is the grid-value vector
projected onto that span, ``P f_D(x_{1:m})``, and the noise is ``P`` applied to
the exact batch noise: the release is ``P`` (a public linear map) applied to
HRW's batch release, so it is DP by post-processing, and its support does not
depend on ``D``. The grid Cameron–Martin norm of ``P(f_D - f_D')`` is at most
``||K_grid^{-1/2}(f_D - f_D')(grid)||_2 <= ||f_D - f_D'||_H <= Delta``.

**Online release (HRW Sec. 5, see docs/paper-errors.md#hrw-online-formulas).** :class:`OnlineExponentialRelease`
answers a stream of point queries for the exponential kernel
``K(x, y) = exp(-|x - y| / rho)`` in ``d = 1``, using the Markov property of
the Ornstein–Uhlenbeck process: the conditional law at a new point depends on
its two nearest queried neighbours only.

Module contents: :func:`hrw_noise_multiplier`, :class:`GridRelease` /
:func:`grid_release`, :func:`check_points`, :func:`kernel_matrix` (numpy Gram
matrices for the solvers and exact norms), :func:`ou_conditional`,
:class:`OnlineExponentialRelease`, :func:`online_exponential_release`. The
mechanisms themselves live in :mod:`mechanisms.hrw.kde` (kernel density
estimators) and :mod:`mechanisms.hrw.erm` (regularised ERM in an RKHS).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit import Mechanism
from dpaudit.core.checks import check_delta, check_epsilon, check_positive, is_concrete
from dpaudit.model.noise import (
    GaussianProcessNoise,
    GridNoise,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
)
from dpaudit.model.spaces import (
    Exponential,
    Gaussian,
    Grid,
    KarhunenLoeveBasis,
    Kernel,
    cameron_martin_norm,
    kl_basis,
    uniform_grid,
)
from mechanisms.common import summary_release

__all__ = [
    "CALIBRATIONS",
    "GridRelease",
    "HRWSetting",
    "OnlineExponentialRelease",
    "check_count",
    "check_points",
    "check_positive_number",
    "grid_release",
    "hrw_grid_mechanism",
    "hrw_noise_multiplier",
    "hrw_setting",
    "kernel_matrix",
    "online_exponential_release",
    "ou_conditional",
    "unit_cube_grid",
]

#: Noise calibrations: ``"classical"`` (HRW Prop. 2.4, epsilon <= 1) and
#: ``"analytic"`` (Balle & Wang 2018, any epsilon).
CALIBRATIONS = ("classical", "analytic")

HRW_REFERENCE = "Hall, Rinaldo & Wasserman 2013"
ANALYTIC_REFERENCE = "Balle & Wang 2018, Thm 8 (analytic Gaussian calibration)"


# ------------------------------------------------------------------ validation


def check_positive_number(name: str, value) -> float:
    """``float(value)`` if it is a finite real number > 0, else one clear error.

    Args:
        name: the argument's name, for the message.
        value: the value.

    Returns:
        ``float(value)``.

    Raises:
        ValueError / TypeError: not a finite real number > 0.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}.")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return value


def check_count(name: str, value, *, minimum: int = 1) -> int:
    """``int(value)`` if it is an integer ``>= minimum``, else one clear error.

    Args:
        name: the argument's name, for the message.
        value: the value.
        minimum: the smallest allowed value.

    Returns:
        ``int(value)``.

    Raises:
        ValueError / TypeError: not an integer ``>= minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}.")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def check_points(name: str, points, *, dim: int, n: int | None = None) -> jax.Array:
    """Records in the unit cube ``[0, 1]^dim`` as a float64 ``(n, dim)`` array.

    ``[0, 1]^d`` is the domain ``T`` of the released functions; HRW's
    sensitivity bounds are stated for it, so a record outside it is rejected
    (never silently used). Value checks are skipped inside ``jit``.

    Args:
        name: what the points are, for the error message.
        points: ``(n,)`` (``dim == 1`` only) or ``(n, dim)``.
        dim: dimension ``d``.
        n: the public number of records the sensitivity was computed for.

    Raises:
        ValueError: wrong shape, a record count other than ``n``, NaN/inf, or a
            coordinate outside ``[0, 1]``.
    """
    x = jnp.asarray(points, dtype=jnp.float64)
    if x.ndim == 1 and dim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] != dim:
        raise ValueError(
            f"{name} must have shape (n, {dim})"
            + (" or (n,)" if dim == 1 else "")
            + f" (one record per row in [0, 1]^{dim}), got shape {tuple(np.shape(points))}."
        )
    if n is not None and x.shape[0] != n:
        raise ValueError(
            f"{name} has {x.shape[0]} records but the mechanism was built for n={n}; the "
            "sensitivity depends on n (replace-one adjacency keeps n fixed and public)."
        )
    if is_concrete(x):
        arr = np.asarray(x)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values; clean the data first.")
        if arr.size and (arr.min() < 0.0 or arr.max() > 1.0):
            raise ValueError(
                f"{name} has coordinates in [{arr.min():.4g}, {arr.max():.4g}], outside the "
                f"domain [0, 1]^{dim} for which the sensitivity is bounded; rescale the data "
                "into the unit cube with public bounds first."
            )
    return x


def kernel_matrix(kernel: Kernel, x, y=None) -> np.ndarray:
    """Gram matrix ``[K(x_a, y_b)]`` as a numpy array, ``(m, d)`` x ``(k, d)`` -> ``(m, k)``.

    The Gaussian and exponential kernels (and any kernel with a ``numpy_gram``
    method) are evaluated in numpy: the ERM solvers and exact RKHS norms run
    on concrete data of ever-changing size, where eager JAX would compile
    every operation again for every new shape. Other kernels go through JAX.

    Args:
        kernel: the kernel.
        x: ``(m, d)`` points.
        y: ``(k, d)`` points (default ``x``).

    Returns:
        ``(m, k)`` numpy array.
    """
    x = np.asarray(x, dtype=np.float64)
    x = x[:, None] if x.ndim == 1 else x
    y = x if y is None else np.asarray(y, dtype=np.float64)
    y = y[:, None] if y.ndim == 1 else y
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(
            f"kernel inputs must be (m, d) and (k, d) arrays of the same d, got {x.shape} and "
            f"{y.shape}."
        )
    if isinstance(kernel, Gaussian):
        scale = np.asarray(kernel.lengthscale, dtype=np.float64)
        diff = (x[:, None, :] - y[None, :, :]) / scale
        return kernel.variance * np.exp(-0.5 * np.sum(diff * diff, axis=-1))
    if isinstance(kernel, Exponential):
        diff = x[:, None, :] - y[None, :, :]
        if kernel.norm == "l1":
            r = np.sum(np.abs(diff), axis=-1)
        else:
            r = np.sqrt(np.sum(diff * diff, axis=-1))
        return kernel.variance * np.exp(-r / kernel.lengthscale)
    if hasattr(kernel, "numpy_gram"):
        return kernel.numpy_gram(x, y)
    return np.asarray(kernel(x, y), dtype=np.float64)


def unit_cube_grid(grid_size: int, dim: int) -> Grid:
    """The public midpoint grid with ``grid_size`` points per axis on ``[0, 1]^dim``.

    Args:
        grid_size: points per axis.
        dim: the dimension.

    Returns:
        The :class:`~dpaudit.model.spaces.Grid`.

    Raises:
        ValueError / TypeError: for a non-integer or non-positive size or dimension.
    """
    grid_size = check_count("grid_size", grid_size)
    dim = check_count("dim", dim)
    return uniform_grid(grid_size, dim)


def check_calibration(calibration: str) -> str:
    """Return ``calibration`` if it is one of :data:`CALIBRATIONS`.

    Args:
        calibration: the requested calibration.

    Returns:
        ``calibration``.

    Raises:
        ValueError: not one of :data:`CALIBRATIONS`.
    """
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}.")
    return calibration


def claim_reference(section: str, calibration: str) -> str:
    """The reference string of a claim: HRW's section plus the calibration theorem.

    Args:
        section: the HRW section the guarantee rests on.
        calibration: ``"classical"`` or ``"analytic"``.

    Returns:
        The reference string.
    """
    base = f"{HRW_REFERENCE}, {section}, with Cor. 3.5 and Prop. 2.4 (covariance (c Delta/eps)^2 K, docs/paper-errors.md#hrw-batch-covariance)"
    if calibration == "analytic":
        return f"{base}; noise calibrated by {ANALYTIC_REFERENCE}"
    return base


# ----------------------------------------------------------------- calibration


def hrw_noise_multiplier(
    sensitivity: float, epsilon: float, delta: float, calibration: str = "classical"
) -> float:
    r"""Standard-deviation multiplier ``s`` of the GP noise: release ``f_D + s G``, ``G ~ GP(0, K)``.

    * ``"classical"`` (HRW Prop. 2.4, eq. 6): ``s = c(delta) Delta / epsilon`` with
      ``c(delta) = sqrt(2 log(2/delta))``, proven for ``epsilon <= 1`` only.
    * ``"analytic"`` (Balle & Wang 2018, Thm 8): the smallest ``s`` with exact
      ``delta(epsilon) <= delta`` for Mahalanobis sensitivity ``Delta``.

    The covariance of the release is ``s^2 K`` (squared; see docs/paper-errors.md#hrw-batch-covariance).

    Args:
        sensitivity: RKHS sensitivity ``Delta`` (> 0).
        epsilon: > 0 (at most 1 for the classical calibration).
        delta: in (0, 1).
        calibration: ``"classical"`` or ``"analytic"``.

    Raises:
        ValueError: invalid inputs, or ``epsilon > 1`` with the classical
            calibration (the message points to ``calibration="analytic"``).

    Example:
        >>> round(hrw_noise_multiplier(1.0, 1.0, 0.1), 4)  # sqrt(2 log 20)
        2.4477
    """
    check_calibration(calibration)
    check_positive("sensitivity", sensitivity)
    check_epsilon(epsilon)
    check_delta(delta)
    if calibration == "classical":
        if epsilon > 1:
            raise ValueError(
                f"the classical calibration s = c(delta) Delta / epsilon with c(delta) = "
                f"sqrt(2 log(2/delta)) (HRW Prop. 2.4) is proven only for epsilon <= 1, got "
                f'epsilon={epsilon}; pass calibration="analytic" (Balle & Wang 2018), which is '
                "exact for every epsilon."
            )
        return classical_gaussian_sigma(sensitivity, epsilon, delta)
    return analytic_gaussian_sigma(sensitivity, epsilon, delta)


# ---------------------------------------------------------------- grid release


@dataclasses.dataclass(frozen=True)
class GridRelease:
    """HRW's batch release on a public grid, in the Karhunen–Loève basis of the noise kernel.

    The release at the grid points is ``P f + s sum_k sqrt(lambda_k) z_k phi_k``
    with ``z_k ~ N(0, 1)`` i.i.d., i.e. ``P`` applied to ``N(f, s^2 K_grid)``,
    where ``P`` is the projection onto the retained eigenfunctions.

    Attributes:
        kernel: the noise covariance kernel ``K`` (the RKHS of the claim).
        grid: the public grid.
        basis: ``kl_basis(kernel, grid)``.
        sigma: the multiplier ``s`` (covariance ``s^2 K``).
    """

    kernel: Kernel
    grid: Grid
    basis: KarhunenLoeveBasis
    sigma: float

    @property
    def noise(self) -> GaussianProcessNoise:
        """The centred coefficient noise ``N(0, s^2 diag(lambda))``."""
        return GaussianProcessNoise(self.basis.eigenvalues, self.sigma)

    def project(self, values) -> jax.Array:
        """``P f``: grid values ``(..., m)`` projected onto the span of the retained eigenfunctions.

        Args:
            values: grid values ``(..., m)``.

        Returns:
            The projected values, same shape.
        """
        return self.basis.reconstruct(self.basis.project(values))

    def distribution(self, loc) -> GridNoise:
        """The release law ``GridNoise`` centred at the (projected) summary ``loc``.

        Args:
            loc: the projected summary ``(m,)``.

        Returns:
            The :class:`~dpaudit.model.noise.GridNoise`.
        """
        return GridNoise(self.noise, self.basis, loc=loc)

    def grid_rkhs_norm(self, difference) -> jax.Array:
        """``||K_grid^{-1/2} P h||_2``: the Cameron–Martin norm of grid values in the KL basis.

        With all components retained this is ``(h^T K_grid^{-1} h)^(1/2)``, the
        restriction of the RKHS norm to the grid (HRW Prop. 3.4), so it is at
        most ``||h||_H``.

        Args:
            difference: grid values ``(..., m)``, a difference of summaries.

        Returns:
            The norms ``(...)``.
        """
        return cameron_martin_norm(self.basis.project(difference), self.basis.eigenvalues)

    def covariance(self) -> jax.Array:
        """Covariance ``s^2 Phi Lambda Phi^T`` of the release on the grid, ``(m, m)``."""
        return self.sigma**2 * self.basis.covariance()


def grid_release(kernel: Kernel, grid: Grid, sigma: float, *, rtol: float | None = None):
    """Build the :class:`GridRelease` of kernel ``kernel`` on ``grid`` with multiplier ``sigma``.

    Args:
        kernel: the noise kernel.
        grid: the public grid.
        sigma: the multiplier ``s`` (covariance ``s^2 K``).
        rtol: eigenvalue cut-off of the KL basis.

    Returns:
        The :class:`GridRelease`.

    Raises:
        ValueError: a non-positive ``sigma`` or a kernel matrix that is not a covariance.
    """
    check_positive("sigma", sigma)
    basis = kl_basis(kernel, grid, rtol=rtol)
    return GridRelease(kernel=kernel, grid=grid, basis=basis, sigma=float(sigma))


# -------------------------------------------------------------- the builders' shared steps


class HRWSetting(NamedTuple):
    """The checked arguments every HRW grid builder shares (:func:`hrw_setting`).

    Attributes:
        epsilon, delta: the claim.
        n: the public number of records.
        dim: the dimension of the domain ``[0, 1]^dim``.
        grid_size: grid points per axis.
        calibration: ``"classical"`` or ``"analytic"``.
        rtol: eigenvalue cut-off of the KL basis (``None``: the default).
    """

    epsilon: float
    delta: float
    n: int
    dim: int
    grid_size: int
    calibration: str
    rtol: float | None

    def params(self) -> dict:
        """The public parameters every HRW grid release records.

        Returns:
            ``{"epsilon", "delta", "n", "dim", "grid_size", "calibration"}`` with their values.
        """
        names = ("epsilon", "delta", "n", "dim", "grid_size", "calibration")
        return {name: getattr(self, name) for name in names}

    def grid_release(self, kernel: Kernel, sensitivity: float) -> GridRelease:
        """The calibrated :class:`GridRelease` of ``kernel`` on the setting's unit-cube grid.

        Args:
            kernel: the noise kernel (the RKHS of the claim).
            sensitivity: the RKHS sensitivity ``Delta`` the noise is calibrated to.

        Returns:
            The release with multiplier :func:`hrw_noise_multiplier` of ``Delta``.

        Raises:
            ValueError: as :func:`hrw_noise_multiplier` and :func:`grid_release`.
        """
        grid = unit_cube_grid(self.grid_size, self.dim)
        sigma = hrw_noise_multiplier(sensitivity, self.epsilon, self.delta, self.calibration)
        return grid_release(kernel, grid, sigma, rtol=self.rtol)


def hrw_setting(epsilon, delta, n, dim, grid_size, calibration, rtol) -> HRWSetting:
    """Check the arguments every HRW grid builder shares.

    Args:
        epsilon, delta, n, dim, grid_size, calibration, rtol: as the fields of :class:`HRWSetting`.

    Returns:
        The checked :class:`HRWSetting`.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    check_positive_number("epsilon", epsilon)
    check_positive_number("delta", delta)
    return HRWSetting(
        epsilon,
        delta,
        check_count("n", n),
        check_count("dim", dim),
        check_count("grid_size", grid_size),
        check_calibration(calibration),
        rtol,
    )


def hrw_grid_mechanism(
    name: str,
    summary: Callable,
    release: GridRelease,
    setting: HRWSetting,
    *,
    sensitivity: float,
    section: str,
    params: dict,
    description: str,
) -> Mechanism:
    """The mechanism releasing ``summary(data)`` through ``release``, claimed in the RKHS norm.

    Args:
        name: the catalogue name.
        summary: ``summary(data)``, grid values already projected by ``release.project``.
        release: the calibrated :class:`GridRelease`.
        setting: the builder's :class:`HRWSetting` (epsilon, delta and calibration of the claim).
        sensitivity: the RKHS sensitivity ``Delta``.
        section: the HRW section the guarantee rests on (see :func:`claim_reference`).
        params: the public parameters.
        description: one paragraph for reports and ``dpaudit list``.

    Returns:
        The :class:`~dpaudit.Mechanism` (replace-one adjacency).

    Raises:
        ValueError, TypeError: as :func:`mechanisms.common.summary_release`.
    """
    return summary_release(
        name,
        summary,
        release.distribution,
        epsilon=setting.epsilon,
        sensitivity=sensitivity,
        sensitivity_norm="rkhs",
        reference=claim_reference(section, setting.calibration),
        delta=setting.delta,
        difference_norm=release.grid_rkhs_norm,
        params=params,
        description=description,
    )


# -------------------------------------------------------------- online release


def ou_conditional(x: float, left: float | None, right: float | None, lengthscale: float):
    r"""Conditional law of a unit-variance OU process at ``x`` given its nearest queried points.

    For ``K(x, y) = exp(-gamma |x - y|)``, ``gamma = 1/lengthscale``, the process
    is Markov, so given values at any set of points the law at ``x`` depends on
    the nearest point on each side only (HRW Sec. 5, see docs/paper-errors.md#hrw-online-formulas). With
    ``rho(a, b) = 2 sinh(gamma |a - b|)``:

    * one neighbour ``a`` (``x`` left or right of all queried points):
      mean ``K(x, a) xi(a)``, variance ``1 - K(x, a)^2``;
    * two neighbours ``a < x < b``: mean ``w_a xi(a) + w_b xi(b)`` with
      ``w_a = rho(b, x)/rho(a, b)``, ``w_b = rho(a, x)/rho(a, b)``, variance
      ``1 - w_a K(x, a) - w_b K(x, b)``;
    * no neighbour: mean 0, variance 1.

    The ratios of ``sinh`` are evaluated as ``exp(u - v) expm1(-2u)/expm1(-2v)``
    so that large ``gamma |b - a|`` does not overflow.

    Args:
        x: the new point.
        left: the largest queried point below ``x``, or None.
        right: the smallest queried point above ``x``, or None.
        lengthscale: ``rho = 1/gamma`` (> 0).

    Returns:
        ``(w_left, w_right, variance)``; a weight is 0 when its neighbour is None.

    Raises:
        ValueError: if ``left >= x`` or ``right <= x``.

    Example:
        >>> w_a, w_b, var = ou_conditional(0.5, 0.0, 1.0, 1.0)
        >>> round(w_a, 6) == round(w_b, 6), round(var, 6)
        (True, 0.462117)
    """
    gamma = 1.0 / check_positive_number("lengthscale", lengthscale)
    x = float(x)
    if left is not None and not left < x:
        raise ValueError(f"the left neighbour {left} must lie below the query {x}.")
    if right is not None and not right > x:
        raise ValueError(f"the right neighbour {right} must lie above the query {x}.")
    if left is None and right is None:
        return 0.0, 0.0, 1.0
    if right is None or left is None:
        distance = abs(x - (left if right is None else right))
        k = math.exp(-gamma * distance)
        variance = -math.expm1(-2.0 * gamma * distance)  # 1 - k^2 without cancellation
        return (k, 0.0, variance) if right is None else (0.0, k, variance)
    u_a, u_b, v = gamma * (x - left), gamma * (right - x), gamma * (right - left)

    def sinh_ratio(u: float) -> float:  # sinh(u) / sinh(v), u <= v
        return math.exp(u - v) * math.expm1(-2.0 * u) / math.expm1(-2.0 * v)

    w_a, w_b = sinh_ratio(u_b), sinh_ratio(u_a)
    variance = 1.0 - w_a * math.exp(-u_a) - w_b * math.exp(-u_b)
    return w_a, w_b, max(variance, 0.0)


class OnlineExponentialRelease:
    r"""Answer point queries of ``f_D + s G``, ``G ~ GP(0, exp(-|x-y|/rho))``, one at a time (d = 1).

    HRW Sec. 5 ("online"): each query ``x_i`` is answered by sampling the
    noise conditionally on the answers already given. For the exponential
    (Ornstein–Uhlenbeck) kernel the conditional law depends only on the two
    nearest queried points (:func:`ou_conditional`), found by binary search
    in a sorted list: ``O(log i)`` comparisons per query (the list insertion is
    a ``memmove``; a balanced tree would make it ``O(log i)`` as well). The
    formulas are those of the unit-variance process ``xi = (tilde f_D - f_D)/s``
    (see docs/paper-errors.md#hrw-online-formulas): the answer is ``f_D(x_i) + s xi(x_i)`` with
    ``s = c(delta) Delta / epsilon`` (or the analytic multiplier). A repeated
    query returns the earlier answer. The joint law of all answers is the batch
    law ``N(f_D(x_{1:i}), s^2 K_{x_{1:i}})``, whatever the query order, so the
    guarantee is that of the batch release (Prop. 3.3) on every finite set of
    queries; it holds only in ``d = 1``, where the OU process is Markov.

    Args:
        summary_fn: ``f_D`` as a function of an array of points ``(k,)`` -> ``(k,)``.
        sensitivity: RKHS sensitivity ``Delta`` of ``f_D`` for the kernel
            ``exp(-|x - y|/lengthscale)`` on ``[0, 1]`` (e.g.
            :func:`mechanisms.hrw.kde.sobolev_kde_sensitivity`).
        epsilon, delta, calibration: as in :func:`hrw_noise_multiplier`.
        lengthscale: ``rho = 1/gamma`` of the kernel (HRW's Sobolev KDE uses ``h``).
        key: a ``jax.random`` key; query ``i`` uses ``fold_in(key, i)``.
        sample_shape: draw this many independent release paths at once (the
            answers are then arrays of this shape).

    Raises:
        ValueError: invalid parameters (see :func:`hrw_noise_multiplier`), or a
            query outside ``[0, 1]``.
    """

    def __init__(
        self,
        summary_fn: Callable,
        *,
        sensitivity: float,
        epsilon: float,
        delta: float,
        lengthscale: float,
        key: jax.Array,
        calibration: str = "classical",
        sample_shape: tuple[int, ...] = (),
    ):
        if not callable(summary_fn):
            raise TypeError(f"summary_fn must be callable, got {type(summary_fn).__name__}.")
        self.summary_fn = summary_fn
        self.lengthscale = check_positive_number("lengthscale", lengthscale)
        self.scale = hrw_noise_multiplier(sensitivity, epsilon, delta, calibration)
        self.sample_shape = tuple(int(s) for s in sample_shape)
        self._key = key
        self._points: list[float] = []
        self._noise: list[np.ndarray] = []
        self._count = 0

    @property
    def points(self) -> tuple[float, ...]:
        """The queried points, sorted."""
        return tuple(self._points)

    def noise_at(self, x: float) -> np.ndarray:
        """The unit-process value ``xi(x)`` already drawn at a queried point ``x``.

        Args:
            x: a point already queried.

        Returns:
            ``xi(x)``.
        """
        i = bisect.bisect_left(self._points, float(x))
        if i == len(self._points) or self._points[i] != float(x):
            raise ValueError(f"{x} has not been queried.")
        return self._noise[i]

    def query(self, x: float) -> np.ndarray:
        """The release ``f_D(x) + s xi(x)`` at one point ``x`` in ``[0, 1]``.

        Args:
            x: the point.

        Returns:
            The released value (with ``sample_shape`` leading axes).
        """
        x = float(x)
        if not (math.isfinite(x) and 0.0 <= x <= 1.0):
            raise ValueError(
                f"query point {x} is outside [0, 1], the domain on which the sensitivity "
                "was bounded."
            )
        i = bisect.bisect_left(self._points, x)
        if i < len(self._points) and self._points[i] == x:
            xi = self._noise[i]
        else:
            left = self._points[i - 1] if i > 0 else None
            right = self._points[i] if i < len(self._points) else None
            w_left, w_right, variance = ou_conditional(x, left, right, self.lengthscale)
            mean = np.zeros(self.sample_shape)
            if left is not None:
                mean = mean + w_left * self._noise[i - 1]
            if right is not None:
                mean = mean + w_right * self._noise[i]
            z = np.asarray(
                jax.random.normal(jax.random.fold_in(self._key, self._count), self.sample_shape)
            )
            self._count += 1
            xi = mean + math.sqrt(variance) * z
            self._points.insert(i, x)
            self._noise.insert(i, xi)
        value = float(np.asarray(self.summary_fn(jnp.array([x])))[0])
        return value + self.scale * xi


def online_exponential_release(summary_fn: Callable, points, **options) -> np.ndarray:
    """Answer the queries ``points`` in the given order with :class:`OnlineExponentialRelease`.

    Args:
        summary_fn: ``f_D`` as a function of a point.
        points: the query points in ``[0, 1]``, in order.
        **options: the keyword arguments of :class:`OnlineExponentialRelease`
            (``sensitivity``, ``epsilon``, ``delta``, ``lengthscale``, ``key``,
            ``calibration``, ``sample_shape``).

    Returns:
        An array ``sample_shape + (k,)`` of answers, one per query.

    Example:
        >>> out = online_exponential_release(lambda x: 0 * x, [0.2, 0.7, 0.4], sensitivity=0.1,
        ...     epsilon=1.0, delta=0.1, lengthscale=0.1, key=jax.random.key(0))
        >>> out.shape
        (3,)
    """
    release = OnlineExponentialRelease(summary_fn, **options)
    answers = [release.query(x) for x in np.asarray(points, dtype=float).ravel()]
    return np.stack(answers, axis=-1)
