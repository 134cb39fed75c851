r"""Hall, Rinaldo & Wasserman (2013), Sec. 4.1–4.2: private kernel density estimators.

Data: ``n`` records in the unit cube ``[0, 1]^d`` (the domain ``T`` of the
released density; records outside it are rejected), replace-one adjacency,
``n`` public. The release is the density on a public grid plus Gaussian-process
noise with covariance ``s^2 K`` (see :mod:`mechanisms.hrw.release` for the batch
release, the calibration and the cylinder sigma-field caveat, see docs/paper-errors.md#hrw-sigma-field).

**Gaussian KDE (Sec. 4.1, 4.1.1).** With a fixed positive-definite bandwidth
matrix ``H`` (``H = h^2 I`` isotropic, ``diag(h_j^2)`` per axis),

.. math::
    f_D(x) = \frac{1}{n(2\pi)^{d/2}|H|^{1/2}}\sum_{i=1}^n
    \exp\{-\tfrac12 (x-x_i)^\top H^{-1}(x-x_i)\},

and the noise kernel is the *unnormalised* ``K(x, y) = exp{-(x-y)^T H^{-1}
(x-y)/2}``. Then ``f_D - f_D' = (K_{x_n} - K_{x_n'}) / (n (2 pi)^{d/2}
|H|^{1/2})``, so

.. math::
    \|f_D-f_{D'}\|_{\mathcal H}^2=\frac{K(x_n,x_n)+K(x_n',x_n')-2K(x_n,x_n')}
    {n^2(2\pi)^d|H|}\le\Delta^2,\qquad
    \Delta=\frac{\sqrt2}{n(2\pi)^{d/2}|H|^{1/2}}
    \ \Big(=\frac{\sqrt2}{n(2\pi h^2)^{d/2}}\text{ isotropic}\Big).

The bound is approached when the replaced record moves far away (``K(x_n,
x_n') -> 0``).

**Sobolev KDE (Sec. 4.2, eqs. 10–11, see docs/paper-errors.md#hrw-sobolev-kde-constants).** The same isotropic Gaussian
KDE, with noise kernel ``K(x, y) = exp(-gamma ||x - y||_1)``, ``gamma = 1/h``,
whose RKHS on ``[0, 1]`` is ``H^1[0, 1]`` with norm

.. math::
    \|f\|_{\mathcal H}^2=\tfrac12\big(f(0)^2+f(1)^2\big)
    +\tfrac1{2\gamma}\int_0^1\big(f'(t)^2+\gamma^2f(t)^2\big)\,dt ,

and in ``d`` dimensions the tensor product, where product functions have
product norms (eq. 11). A 1-D Gaussian bump satisfies
``||phi_{mu,h}||_H^2 <= 1/(2 pi h^2) + 1/(8 sqrt(pi) h^2) + 1/(4 sqrt(pi) h^2)
~ 0.371/h^2 <= 1/(sqrt(2 pi) h^2)`` (docs/paper-errors.md#hrw-sobolev-kde-constants corrects the paper's intermediate
constants; the final bound stands), hence

.. math::
    \Delta = \frac{2}{(2\pi)^{d/4}\,n\,h^d}.

:func:`sobolev_kde_rkhs_distance` computes ``||f_D - f_D'||_H`` exactly (closed
forms with ``erf``), which the tests compare with this bound.

Registered mechanisms:

* ``hrw-gaussian-kde`` — isotropic Gaussian KDE, noise kernel ``exp(-||x-y||^2/(2h^2))``.
* ``hrw-gaussian-kde-anisotropic`` — fixed per-axis or full bandwidth matrix ``H``.
* ``hrw-sobolev-kde`` — isotropic Gaussian KDE released with the exponential
  (Sobolev ``H^1``) kernel.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from dpaudit import Mechanism, register
from dpaudit.core.arrays import float64_array
from dpaudit.core.checks import check_finite
from dpaudit.model.spaces import Exponential, Gaussian, Kernel
from mechanisms.hrw.release import (
    HRWSetting,
    check_count,
    check_points,
    check_positive_number,
    hrw_grid_mechanism,
    hrw_setting,
    kernel_matrix,
)

__all__ = [
    "GaussianBandwidthKernel",
    "bandwidth_matrix",
    "gaussian_bump_sobolev_inner",
    "gaussian_kde",
    "gaussian_kde_kernel",
    "gaussian_kde_rkhs_distance",
    "gaussian_kde_sensitivity",
    "hrw_gaussian_kde",
    "hrw_gaussian_kde_anisotropic",
    "hrw_sobolev_kde",
    "sobolev_kde_rkhs_distance",
    "sobolev_kde_sensitivity",
    "sobolev_kernel",
]


# ------------------------------------------------------------------- bandwidths


def bandwidth_matrix(bandwidth, dim: int) -> np.ndarray:
    """The bandwidth matrix ``H`` (``d x d``, symmetric positive definite) of a Gaussian KDE.

    Args:
        bandwidth: a scalar ``h`` (``H = h^2 I``), ``d`` per-axis bandwidths
            ``h_j`` (``H = diag(h_j^2)``), or a ``d x d`` matrix ``H`` itself
            (a covariance: its square root is the bandwidth).
        dim: dimension ``d``.

    Raises:
        ValueError: non-positive or non-finite bandwidths, a wrong shape, or a
            matrix that is not symmetric positive definite.

    Example:
        >>> bandwidth_matrix((0.1, 0.2), 2).tolist()
        [[0.010000000000000002, 0.0], [0.0, 0.04000000000000001]]
    """
    dim = check_count("dim", dim)
    b = np.asarray(bandwidth, dtype=np.float64)
    if not np.all(np.isfinite(b)):
        raise ValueError(f"bandwidth must be finite, got {bandwidth!r}.")
    if b.ndim == 0 or (b.ndim == 1 and b.shape == (dim,)):
        if not np.all(b > 0):
            raise ValueError(f"bandwidth must be > 0, got {bandwidth!r}.")
        return np.diag(np.broadcast_to(b**2, (dim,))).astype(np.float64)
    if b.ndim == 2 and b.shape == (dim, dim):
        if not np.allclose(b, b.T, rtol=1e-12, atol=0.0):
            raise ValueError("the bandwidth matrix H must be symmetric.")
        try:
            np.linalg.cholesky(b)
        except np.linalg.LinAlgError:
            raise ValueError("the bandwidth matrix H must be positive definite.") from None
        return b.copy()
    raise ValueError(
        f"bandwidth must be a number, {dim} per-axis values or a {dim}x{dim} matrix, got shape "
        f"{b.shape}."
    )


def _is_diagonal(matrix: np.ndarray) -> bool:
    return bool(np.all(matrix == np.diag(np.diag(matrix))))


@dataclasses.dataclass(frozen=True)
class GaussianBandwidthKernel(Kernel):
    """Unnormalised Gaussian kernel ``exp{-(x-y)^T H^{-1} (x-y) / 2}`` with a full matrix ``H``.

    Attributes:
        matrix: ``H`` as a tuple of rows (hashable; use :func:`gaussian_kde_kernel`).
    """

    matrix: tuple[tuple[float, ...], ...]

    def __post_init__(self):
        h = np.asarray(self.matrix, dtype=np.float64)
        bandwidth_matrix(h, h.shape[0] if h.ndim == 2 else 1)  # validates

    def numpy_gram(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The Gram matrix in numpy (see :func:`mechanisms.hrw.release.kernel_matrix`).

        Args:
            x: ``(m, d)`` points.
            y: ``(k, d)`` points.

        Returns:
            ``(m, k)`` Gram matrix.
        """
        whiten = np.linalg.inv(np.linalg.cholesky(np.asarray(self.matrix, dtype=np.float64))).T
        diff = (x @ whiten)[:, None, :] - (y @ whiten)[None, :, :]
        return np.exp(-0.5 * np.sum(diff * diff, axis=-1))

    def gram(self, x, y):
        """The Gram matrix in JAX (traceable).

        Args:
            x: ``(m, d)`` points.
            y: ``(k, d)`` points.

        Returns:
            ``(m, k)`` Gram matrix.
        """
        h = np.asarray(self.matrix, dtype=np.float64)
        if x.shape[1] != h.shape[0]:
            raise ValueError(
                f"the bandwidth matrix is {h.shape[0]}x{h.shape[0]} but the points have "
                f"dimension {x.shape[1]}."
            )
        whiten = float64_array(np.linalg.inv(np.linalg.cholesky(h)).T)  # L^{-T}: ||(x-y) L^-T||
        zx, zy = x @ whiten, y @ whiten
        diff = zx[:, None, :] - zy[None, :, :]
        return jnp.exp(-0.5 * jnp.sum(diff * diff, axis=-1))


def gaussian_kde_kernel(bandwidth, dim: int) -> Kernel:
    """The noise kernel ``K(x, y) = exp{-(x-y)^T H^{-1} (x-y)/2}`` of a Gaussian KDE (HRW Sec. 4.1).

    A diagonal ``H`` gives :class:`dpaudit.model.spaces.Gaussian` (per-axis
    lengthscales ``sqrt(H_jj)``); a full ``H`` gives :class:`GaussianBandwidthKernel`.

    Args:
        bandwidth: a scalar ``h``, ``d`` per-axis bandwidths or a ``d x d`` matrix ``H``.
        dim: the dimension ``d``.

    Returns:
        The kernel.
    """
    h = bandwidth_matrix(bandwidth, dim)
    if _is_diagonal(h):
        scales = np.sqrt(np.diag(h))
        lengthscale = float(scales[0]) if np.all(scales == scales[0]) else tuple(map(float, scales))
        return Gaussian(lengthscale=lengthscale)
    return GaussianBandwidthKernel(tuple(tuple(map(float, row)) for row in h))


# ------------------------------------------------------------------ Gaussian KDE


def gaussian_kde(data, points, bandwidth) -> jax.Array:
    r"""Gaussian kernel density estimate ``f_D`` at ``points``.

    ``f_D(x) = (n (2 pi)^{d/2} |H|^{1/2})^{-1} sum_i exp{-(x - x_i)^T H^{-1} (x - x_i) / 2}``.

    Args:
        data: ``(n,)`` or ``(n, d)`` records (any real values).
        points: ``(m,)`` or ``(m, d)`` evaluation points.
        bandwidth: see :func:`bandwidth_matrix` (public and fixed in advance).

    Returns:
        ``(m,)`` density values.

    Raises:
        ValueError: NaN/inf, mismatched dimensions, or an invalid bandwidth.

    Example:
        >>> round(float(gaussian_kde([0.5], [0.5], 0.1)[0]), 6)  # 1 / (sqrt(2 pi) 0.1)
        3.989423
    """
    x = jnp.asarray(data, dtype=jnp.float64)
    p = jnp.asarray(points, dtype=jnp.float64)
    x = x[:, None] if x.ndim == 1 else x
    p = p[:, None] if p.ndim == 1 else p
    if x.ndim != 2 or p.ndim != 2 or x.shape[1] != p.shape[1]:
        raise ValueError(
            f"data {tuple(x.shape)} and points {tuple(p.shape)} must be (n, d) and (m, d) arrays "
            "of the same dimension d."
        )
    check_finite("KDE data", x)
    check_finite("KDE evaluation points", p)
    d = x.shape[1]
    h = bandwidth_matrix(bandwidth, d)
    whiten = float64_array(np.linalg.inv(np.linalg.cholesky(h)).T)
    norm = 1.0 / (x.shape[0] * (2.0 * math.pi) ** (d / 2) * math.sqrt(np.linalg.det(h)))
    return norm * _kernel_sums(x, p, whiten)


@jax.jit
def _kernel_sums(x: jax.Array, p: jax.Array, whiten: jax.Array) -> jax.Array:
    """``sum_i exp(-||(p_a - x_i) L^{-T}||^2 / 2)`` for each point ``p_a`` (``H = L L^T``)."""
    diff = (p @ whiten)[:, None, :] - (x @ whiten)[None, :, :]
    return jnp.sum(jnp.exp(-0.5 * jnp.sum(diff * diff, axis=-1)), axis=1)


def gaussian_kde_sensitivity(n: int, bandwidth, dim: int = 1) -> float:
    r"""RKHS sensitivity ``Delta = sqrt(2) / (n (2 pi)^{d/2} |H|^{1/2})`` (HRW Sec. 4.1, 4.1.1).

    Isotropic: ``sqrt(2) / (n (2 pi h^2)^{d/2})``; the norm is that of the
    unnormalised kernel ``exp{-(x-y)^T H^{-1} (x-y)/2}``.

    Args:
        n: the public number of records.
        bandwidth: as :func:`gaussian_kde_kernel`.
        dim: the dimension ``d``.

    Returns:
        ``Delta``.

    Raises:
        ValueError / TypeError: a non-integer or non-positive ``n``, an invalid bandwidth.

    Example:
        >>> round(gaussian_kde_sensitivity(100, 0.1), 6)  # sqrt(2) / (100 sqrt(2 pi) 0.1)
        0.056419
    """
    n = check_count("n", n)
    h = bandwidth_matrix(bandwidth, dim)
    return math.sqrt(2.0) / (n * (2.0 * math.pi) ** (dim / 2) * math.sqrt(np.linalg.det(h)))


def _differing_records(data, data_prime, dim: int) -> tuple[np.ndarray, np.ndarray, int]:
    x = np.asarray(data, dtype=np.float64).reshape(np.shape(data)[0], dim)
    y = np.asarray(data_prime, dtype=np.float64).reshape(np.shape(data_prime)[0], dim)
    if x.shape != y.shape:
        raise ValueError(
            f"the two datasets have shapes {x.shape} and {y.shape}; replace-one neighbours have "
            "the same number of records."
        )
    differ = np.any(x != y, axis=1)
    return x[differ], y[differ], x.shape[0]


def gaussian_kde_rkhs_distance(data, data_prime, bandwidth, dim: int = 1) -> float:
    r"""Exact ``||f_D - f_D'||_H`` in the RKHS of the unnormalised Gaussian kernel.

    ``f_D - f_D' = c sum_i (K_{x_i} - K_{x_i'})`` with ``c = 1/(n (2 pi)^{d/2}
    |H|^{1/2})``, summed over the records that differ, so
    ``||f_D - f_D'||_H^2 = c^2 a^T K a`` with ``a = (1, ..., 1, -1, ..., -1)``
    on the points ``(x_i, x_i')`` (reproducing property).

    Args:
        data, data_prime: ``(n,)`` or ``(n, d)`` neighbouring datasets.
        bandwidth: as :func:`gaussian_kde_kernel`.
        dim: the dimension ``d``.

    Returns:
        The distance.
    """
    a, b, n = _differing_records(data, data_prime, dim)
    if a.shape[0] == 0:
        return 0.0
    kernel = gaussian_kde_kernel(bandwidth, dim)
    points = np.concatenate([a, b])
    signs = np.concatenate([np.ones(len(a)), -np.ones(len(b))])
    gram = kernel_matrix(kernel, points)
    matrix = bandwidth_matrix(bandwidth, dim)
    c = 1.0 / (n * (2.0 * math.pi) ** (dim / 2) * math.sqrt(np.linalg.det(matrix)))
    return c * math.sqrt(max(float(signs @ gram @ signs), 0.0))


# ------------------------------------------------------------------ Sobolev KDE


def sobolev_kernel(bandwidth: float) -> Exponential:
    """The Sobolev noise kernel ``exp(-||x - y||_1 / h)`` (``gamma = 1/h``, HRW Sec. 4.2).

    Args:
        bandwidth: ``h`` > 0.

    Returns:
        The exponential kernel.
    """
    return Exponential(lengthscale=check_positive_number("bandwidth", bandwidth), norm="l1")


def sobolev_kde_sensitivity(n: int, bandwidth: float, dim: int = 1) -> float:
    r"""``Delta = 2 / ((2 pi)^{d/4} n h^d)`` for the Gaussian KDE in the ``H^1`` tensor RKHS.

    HRW Sec. 4.2 with ``gamma = 1/h`` (see docs/paper-errors.md#hrw-sobolev-kde-constants: the paper's intermediate
    constants are wrong, the final bound stands).

    Args:
        n: the public number of records.
        bandwidth: ``h`` > 0.
        dim: the dimension ``d``.

    Returns:
        ``Delta``.

    Example:
        >>> round(sobolev_kde_sensitivity(100, 0.1), 6)  # 2 / ((2 pi)^(1/4) 100 0.1)
        0.126324
    """
    n = check_count("n", n)
    h = check_positive_number("bandwidth", bandwidth)
    dim = check_count("dim", dim)
    return 2.0 / ((2.0 * math.pi) ** (dim / 4) * n * h**dim)


def gaussian_bump_sobolev_inner(mu, nu, bandwidth: float, gamma: float | None = None):
    r"""``<phi_mu, phi_nu>_H`` in ``H^1[0, 1]`` (HRW eq. 10) for 1-D Gaussian bumps.

    ``phi_mu(x) = exp(-(x - mu)^2 / (2 h^2)) / (sqrt(2 pi) h)`` and

    ``<u, v>_H = (u(0) v(0) + u(1) v(1)) / 2 + (1/(2 gamma)) int_0^1 (u' v' + gamma^2 u v)``.

    With ``m = (mu + nu)/2``, ``delta = (mu - nu)/2``:
    ``phi_mu phi_nu = e^{-delta^2/h^2} e^{-(x-m)^2/h^2} / (2 pi h^2)`` and
    ``phi_mu' phi_nu' = ((x-m)^2 - delta^2) phi_mu phi_nu / h^4``; both integrals
    over ``[0, 1]`` are closed forms in ``erf``.

    Args:
        mu, nu: bump centres (arrays broadcast together).
        bandwidth: ``h`` (> 0).
        gamma: kernel rate (default ``1/h``, HRW's choice).

    Returns:
        numpy array of inner products.
    """
    h = check_positive_number("bandwidth", bandwidth)
    gamma = 1.0 / h if gamma is None else check_positive_number("gamma", gamma)
    mu, nu = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(nu, dtype=float))
    m, half = 0.5 * (mu + nu), 0.5 * (mu - nu)
    scale = np.exp(-((half / h) ** 2)) / (2.0 * math.pi * h * h)
    i0 = 0.5 * h * math.sqrt(math.pi) * (scipy.special.erf((1 - m) / h) + scipy.special.erf(m / h))
    edge = (1 - m) * np.exp(-(((1 - m) / h) ** 2)) + m * np.exp(-((m / h) ** 2))
    i2 = 0.5 * h * h * (i0 - edge)
    values = scale * i0  # int_0^1 phi_mu phi_nu
    slopes = scale * (i2 - half * half * i0) / h**4  # int_0^1 phi_mu' phi_nu'

    def bump(c, t):
        return np.exp(-(((t - c) / h) ** 2) / 2) / (math.sqrt(2 * math.pi) * h)

    boundary = 0.5 * (bump(mu, 0.0) * bump(nu, 0.0) + bump(mu, 1.0) * bump(nu, 1.0))
    return boundary + (slopes + gamma * gamma * values) / (2.0 * gamma)


def sobolev_kde_rkhs_distance(data, data_prime, bandwidth: float, dim: int = 1) -> float:
    r"""Exact ``||f_D - f_D'||_H`` of the isotropic Gaussian KDE in the ``H^1`` tensor RKHS.

    ``f_D - f_D' = n^{-1} sum_i (phi_{x_i} - phi_{x_i'})`` over the differing
    records; ``d``-dimensional bumps are products of 1-D bumps, so
    ``<phi_p, phi_q>_H = prod_j <phi_{p_j}, phi_{q_j}>_{H^1}`` (eq. 11) and the
    squared norm is ``n^{-2} a^T G a`` with the Gram matrix ``G`` of these inner
    products and ``a = (1, ..., 1, -1, ..., -1)``.

    Args:
        data, data_prime: ``(n,)`` or ``(n, d)`` neighbouring datasets.
        bandwidth: ``h`` > 0.
        dim: the dimension ``d``.

    Returns:
        The distance.
    """
    a, b, n = _differing_records(data, data_prime, dim)
    if a.shape[0] == 0:
        return 0.0
    points = np.concatenate([a, b])
    signs = np.concatenate([np.ones(len(a)), -np.ones(len(b))])
    gram = np.ones((len(points), len(points)))
    for j in range(dim):
        gram *= gaussian_bump_sobolev_inner(points[:, None, j], points[None, :, j], bandwidth)
    return math.sqrt(max(float(signs @ gram @ signs), 0.0)) / n


# --------------------------------------------------------------------- builders


def _kde_mechanism(
    setting: HRWSetting,
    *,
    name: str,
    section: str,
    kernel: Kernel,
    sensitivity: float,
    matrix: np.ndarray,
    bandwidth,
    description: str,
) -> Mechanism:
    release = setting.grid_release(kernel, sensitivity)
    grid_points = release.grid.points

    def summary(data):
        records = check_points("KDE data", data, dim=setting.dim, n=setting.n)
        return release.project(gaussian_kde(records, grid_points, matrix))

    return hrw_grid_mechanism(
        name,
        summary,
        release,
        setting,
        sensitivity=sensitivity,
        section=section,
        params={**setting.params(), "bandwidth": bandwidth},
        description=description,
    )


_GAUSSIAN_EXAMPLE = {
    "epsilon": 1.0,
    "delta": 1e-3,
    "n": 100,
    "bandwidth": 0.1,
    "dim": 1,
    "grid_size": 64,
}


@register("hrw-gaussian-kde", example=_GAUSSIAN_EXAMPLE)
def hrw_gaussian_kde(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    n: int = 100,
    bandwidth: float = 0.1,
    dim: int = 1,
    grid_size: int = 64,
    calibration: str = "classical",
    rtol: float | None = None,
) -> Mechanism:
    r"""Gaussian KDE with isotropic bandwidth h, released on a grid with GP noise (HRW Sec. 4.1).

    Release ``f_D(grid) + s G(grid)``, ``G ~ GP(0, exp(-||x-y||^2/(2h^2)))``,
    ``s = c(delta) Delta / epsilon``, ``Delta = sqrt(2)/(n (2 pi h^2)^{d/2})``;
    data in ``[0, 1]^d`` (rejected otherwise).

    Args:
        epsilon, delta: the claim (``epsilon <= 1`` for the classical calibration).
        n: public number of records.
        bandwidth: ``h`` > 0, fixed in advance (a data-driven ``h`` would need
            its own private release, HRW Sec. 4.1.2).
        dim: ``d`` (1 or 2 in practice; the grid has ``grid_size^d`` points).
        grid_size: grid points per axis (midpoint grid on ``[0, 1]^d``).
        calibration: ``"classical"`` or ``"analytic"``.
        rtol: eigenvalue cut-off of the KL basis (see :func:`dpaudit.model.spaces.kl_basis`).

    Raises:
        ValueError / TypeError: invalid parameters; ``epsilon > 1`` with the
            classical calibration.
    """
    setting = hrw_setting(epsilon, delta, n, dim, grid_size, calibration, rtol)
    n, dim, grid_size = setting.n, setting.dim, setting.grid_size
    h = check_positive_number("bandwidth", bandwidth)
    sensitivity = gaussian_kde_sensitivity(n, h, dim)
    return _kde_mechanism(
        setting,
        name="hrw-gaussian-kde",
        section="Sec. 4.1",
        kernel=gaussian_kde_kernel(h, dim),
        sensitivity=sensitivity,
        matrix=bandwidth_matrix(h, dim),
        bandwidth=h,
        description=(
            f"Gaussian kernel density estimate (bandwidth h={h:g}) of n={n} records in "
            f"[0,1]^{dim}, released on a {grid_size}^{dim} grid with Gaussian-process noise "
            f"of covariance s^2 exp(-|x-y|^2/(2h^2)), s = c Delta/epsilon, RKHS sensitivity "
            f"Delta = sqrt(2)/(n (2 pi h^2)^(d/2)) = {sensitivity:.4g}."
        ),
    )


@register(
    "hrw-gaussian-kde-anisotropic",
    example={
        "epsilon": 1.0,
        "delta": 1e-3,
        "n": 100,
        "bandwidth": ((0.02, 0.006), (0.006, 0.01)),
        "dim": 2,
        "grid_size": 16,
    },
)
def hrw_gaussian_kde_anisotropic(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    n: int = 100,
    bandwidth=((0.02, 0.006), (0.006, 0.01)),
    dim: int = 2,
    grid_size: int = 16,
    calibration: str = "classical",
    rtol: float | None = None,
) -> Mechanism:
    r"""Gaussian KDE with a fixed bandwidth matrix H, released on a grid with GP noise (HRW Sec. 4.1.1).

    ``bandwidth`` is ``d`` per-axis bandwidths ``h_j`` (``H = diag(h_j^2)``) or a
    symmetric positive-definite ``d x d`` matrix ``H``. Noise kernel
    ``exp{-(x-y)^T H^{-1} (x-y)/2}``, ``Delta = sqrt(2)/(n (2 pi)^{d/2} |H|^{1/2})``.
    Other arguments as in :func:`hrw_gaussian_kde`.

    Args:
        bandwidth: ``d`` per-axis bandwidths or a ``d x d`` bandwidth matrix ``H``.
        epsilon, delta, n, dim, grid_size, calibration, rtol: as :func:`hrw_gaussian_kde`.

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: invalid parameters, including a scalar ``bandwidth``.
    """
    setting = hrw_setting(epsilon, delta, n, dim, grid_size, calibration, rtol)
    n, dim, grid_size = setting.n, setting.dim, setting.grid_size
    matrix = bandwidth_matrix(bandwidth, dim)
    if np.ndim(bandwidth) == 0:
        raise ValueError(
            "hrw-gaussian-kde-anisotropic needs per-axis bandwidths or a bandwidth matrix; "
            "use hrw-gaussian-kde for a scalar bandwidth."
        )
    sensitivity = gaussian_kde_sensitivity(n, matrix, dim)
    return _kde_mechanism(
        setting,
        name="hrw-gaussian-kde-anisotropic",
        section="Sec. 4.1.1",
        kernel=gaussian_kde_kernel(matrix, dim),
        sensitivity=sensitivity,
        matrix=matrix,
        bandwidth=np.asarray(bandwidth, dtype=float).tolist(),
        description=(
            f"Gaussian kernel density estimate with fixed bandwidth matrix H (|H| = "
            f"{np.linalg.det(matrix):.3g}) of n={n} records in [0,1]^{dim}, released on a "
            f"{grid_size}^{dim} grid with Gaussian-process noise of covariance "
            f"s^2 exp(-(x-y)^T H^-1 (x-y)/2), RKHS sensitivity sqrt(2)/(n (2 pi)^(d/2) |H|^(1/2)) "
            f"= {sensitivity:.4g}."
        ),
    )


@register("hrw-sobolev-kde", example={**_GAUSSIAN_EXAMPLE})
def hrw_sobolev_kde(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    n: int = 100,
    bandwidth: float = 0.1,
    dim: int = 1,
    grid_size: int = 64,
    calibration: str = "classical",
    rtol: float | None = None,
) -> Mechanism:
    r"""Gaussian KDE released with Sobolev H^1 (exponential-kernel) GP noise (HRW Sec. 4.2).

    Noise kernel ``exp(-||x - y||_1 / h)`` (``gamma = 1/h``), RKHS sensitivity
    ``Delta = 2 / ((2 pi)^{d/4} n h^d)`` (see docs/paper-errors.md#hrw-sobolev-kde-constants); the released curve is rough
    (OU paths). Arguments as in :func:`hrw_gaussian_kde`.

    Args:
        epsilon, delta, n, bandwidth, dim, grid_size, calibration, rtol: as
            :func:`hrw_gaussian_kde` (``bandwidth`` also sets ``gamma = 1/h``).

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    setting = hrw_setting(epsilon, delta, n, dim, grid_size, calibration, rtol)
    n, dim, grid_size = setting.n, setting.dim, setting.grid_size
    h = check_positive_number("bandwidth", bandwidth)
    sensitivity = sobolev_kde_sensitivity(n, h, dim)
    return _kde_mechanism(
        setting,
        name="hrw-sobolev-kde",
        section="Sec. 4.2 (eqs. 10-11; constants per docs/paper-errors.md#hrw-sobolev-kde-constants)",
        kernel=sobolev_kernel(h),
        sensitivity=sensitivity,
        matrix=bandwidth_matrix(h, dim),
        bandwidth=h,
        description=(
            f"Gaussian kernel density estimate (h={h:g}) of n={n} records in [0,1]^{dim}, "
            f"released on a {grid_size}^{dim} grid with Gaussian-process noise of covariance "
            f"s^2 exp(-|x-y|_1/h) (Sobolev H^1 tensor RKHS), sensitivity "
            f"2/((2 pi)^(d/4) n h^d) = {sensitivity:.4g}."
        ),
    )
