r"""Karhunen–Loève bases: eigenpairs of a covariance operator on a grid.

A :class:`KarhunenLoeveBasis` holds ``K`` eigenvalues ``lambda_1 >= ... >=
lambda_K > 0`` of a covariance operator ``C`` on L2 of the domain and its
eigenfunctions ``phi_k`` evaluated on a :class:`~dpaudit.model.spaces.grids.Grid`,
orthonormal in the grid's quadrature inner product. Functions on the grid map
to coefficients ``h_k = <h, phi_k>`` (:meth:`~KarhunenLoeveBasis.project`) and
back (:meth:`~KarhunenLoeveBasis.reconstruct`).

Three ways to obtain one:

* :func:`kl_basis` — Nyström eigendecomposition of a kernel on a grid. With
  quadrature weights ``W``, the eigenproblem ``W^(1/2) K W^(1/2) v = lambda v``
  gives ``phi = W^(-1/2) v``; on the uniform midpoint grid of ``m`` points this
  is ``lambda_k = mu_k / m``, ``phi_k = sqrt(m) v_k`` for the Gram-matrix
  eigenpairs ``(mu_k, v_k)`` (LR Alg. 1 corrected, docs/paper-errors.md#lr-discretization-scale).
* :func:`brownian_motion_basis` — the analytic eigenpairs of ``min(s, t)``.
* :func:`spectral_basis` — eigenvalues and eigenfunctions supplied directly
  (e.g. a Fourier basis), which gives tests exact ground truth.

The power operator ``C^eta`` (:meth:`~KarhunenLoeveBasis.power`) keeps the
eigenfunctions and raises the eigenvalues to ``eta``; it is not the pointwise
power of the kernel function.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from dpaudit.core.arrays import float64_array
from dpaudit.core.checks import check_finite, check_last_axis, check_positive
from dpaudit.core.threads import one_blas_thread
from dpaudit.model.spaces.grids import Grid
from dpaudit.model.spaces.kernels import Kernel

__all__ = [
    "KarhunenLoeveBasis",
    "brownian_motion_basis",
    "kl_basis",
    "spectral_basis",
]

#: Default relative eigenvalue cut-off of :func:`kl_basis`: eigenpairs with
#: ``lambda_k <= rtol * lambda_1`` are numerically unreliable and are dropped.
DEFAULT_RTOL = 1e-10
#: Default tolerance for negative eigenvalues, relative to ``lambda_1``.
DEFAULT_PSD_TOL = 1e-8
#: Default tolerance for asymmetry of a kernel matrix, relative to its largest entry.
DEFAULT_SYMMETRY_TOL = 1e-10


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class KarhunenLoeveBasis:
    """Eigenvalues and grid values of orthonormal eigenfunctions of a covariance operator.

    Attributes:
        eigenvalues: ``(K,)``, positive, non-increasing.
        eigenfunctions: ``(m, K)``; column ``k`` holds ``phi_k`` at the grid points.
        grid: the :class:`Grid` the eigenfunctions are evaluated on.
    """

    eigenvalues: jax.Array
    eigenfunctions: jax.Array
    grid: Grid

    @property
    def n_components(self) -> int:
        """Number of retained components ``K``."""
        return int(self.eigenvalues.shape[0])

    @property
    def grid_size(self) -> int:
        """Number of grid points ``m``."""
        return int(self.eigenfunctions.shape[0])

    def project(self, values) -> jax.Array:
        """Coefficients ``h_k = sum_a w_a h(x_a) phi_k(x_a)`` of grid values ``(..., m)``.

        Args:
            values: grid values ``h(x_a)``, shape ``(..., m)``.

        Returns:
            The coefficients, shape ``(..., K)``.

        Raises:
            ValueError: if the last axis is not the grid size, or on NaN/inf.
        """
        values = jnp.asarray(values, dtype=jnp.float64)
        check_last_axis("function values", values, self.grid_size, "one value per grid point")
        check_finite("function values", values)
        return (values * self.grid.weights) @ self.eigenfunctions

    def reconstruct(self, coefficients) -> jax.Array:
        """Grid values ``sum_k h_k phi_k(x_a)`` of coefficients ``(..., K)``.

        Args:
            coefficients: ``h_k``, shape ``(..., K)``.

        Returns:
            The grid values, shape ``(..., m)``.
        """
        coefficients = jnp.asarray(coefficients, dtype=jnp.float64)
        check_last_axis("coefficients", coefficients, self.n_components, "one per component")
        check_finite("coefficients", coefficients)
        return coefficients @ self.eigenfunctions.T

    def residual(self, values) -> jax.Array:
        """Part of grid values ``(..., m)`` orthogonal to the span of the retained eigenfunctions.

        Args:
            values: grid values, shape ``(..., m)``.

        Returns:
            ``values`` minus their reconstruction from the retained components.
        """
        return jnp.asarray(values, dtype=jnp.float64) - self.reconstruct(self.project(values))

    def truncate(self, n_components: int | None = None, *, rtol: float | None = None):
        """Keep the first ``n_components``, or those with ``lambda_k > rtol * lambda_1``.

        Args:
            n_components: the number of leading components to keep.
            rtol: keep the components whose eigenvalue exceeds ``rtol`` times the largest.

        Returns:
            A new :class:`KarhunenLoeveBasis` on the same grid.

        Raises:
            ValueError: if ``n_components`` is not in ``1..K`` or ``rtol`` is not in [0, 1).
        """
        k = _resolve_truncation(np.asarray(self.eigenvalues), n_components, rtol)
        return KarhunenLoeveBasis(self.eigenvalues[:k], self.eigenfunctions[:, :k], self.grid)

    def power(self, eta: float) -> KarhunenLoeveBasis:
        """Basis of the operator power ``C^eta``: same eigenfunctions, eigenvalues ``lambda^eta``.

        Args:
            eta: the power (> 0).

        Returns:
            A new :class:`KarhunenLoeveBasis`.

        Raises:
            ValueError: if ``eta`` is not a finite number > 0.
        """
        check_positive("eta", eta)
        return KarhunenLoeveBasis(self.eigenvalues**eta, self.eigenfunctions, self.grid)

    def trace(self, power: float = 1.0) -> jax.Array:
        """``tr(C^power) = sum_k lambda_k^power`` over the retained components.

        Args:
            power: the operator power.

        Returns:
            The trace as a 0-d array.
        """
        return jnp.sum(self.eigenvalues**power)

    def covariance(self, power: float = 1.0) -> jax.Array:
        """Matrix ``[C^power(x_a, x_b)]`` of the truncated operator on the grid, ``(m, m)``.

        Args:
            power: the operator power.

        Returns:
            The ``(m, m)`` covariance matrix on the grid points.
        """
        return (self.eigenfunctions * self.eigenvalues**power) @ self.eigenfunctions.T


def _resolve_truncation(eigenvalues: np.ndarray, n_components, rtol) -> int:
    total = eigenvalues.shape[0]
    if n_components is not None and rtol is not None:
        raise ValueError("give n_components or rtol, not both.")
    if n_components is not None:
        if isinstance(n_components, bool) or not isinstance(n_components, int | np.integer):
            raise ValueError(f"n_components must be an integer, got {n_components!r}.")
        if not 1 <= n_components <= total:
            raise ValueError(
                f"n_components={n_components} is outside 1..{total}: the basis has only {total} "
                "usable components (at most the grid size, fewer after dropping numerically "
                "zero eigenvalues)."
            )
        return int(n_components)
    if rtol is None:
        return total
    if not (np.isfinite(rtol) and 0 <= rtol < 1):
        raise ValueError(f"rtol must lie in [0, 1), got {rtol!r}.")
    return max(1, int(np.count_nonzero(eigenvalues > rtol * eigenvalues[0])))


def kl_basis(
    kernel: Kernel | Callable | np.ndarray,
    grid: Grid,
    n_components: int | None = None,
    *,
    rtol: float | None = None,
    psd_tol: float = DEFAULT_PSD_TOL,
    symmetry_tol: float = DEFAULT_SYMMETRY_TOL,
) -> KarhunenLoeveBasis:
    """Karhunen–Loève basis of a kernel on a grid, L2-normalised by the grid's quadrature.

    Args:
        kernel: a :class:`Kernel`, any callable ``kernel(x, y) -> (m, n)``, or a
            precomputed ``(m, m)`` kernel matrix on the grid.
        grid: the grid.
        n_components: keep this many leading components; at most the grid size.
        rtol: keep components with ``lambda_k > rtol * lambda_1`` (default
            ``1e-10``). Components below the cut-off are round-off and are never
            kept, so ``n_components`` may not exceed the number above it.
        psd_tol: eigenvalues below ``-psd_tol * lambda_1`` mean the kernel is not
            positive semi-definite and raise; smaller negative values are
            round-off and are dropped.
        symmetry_tol: allowed ``max|K - K^T| / max|K|``.

    Returns:
        A :class:`KarhunenLoeveBasis` with non-increasing positive eigenvalues.
        Each eigenfunction's sign is fixed so that its largest-magnitude grid
        value is positive.

    Raises:
        ValueError: non-square, asymmetric, non-PSD or non-finite kernel matrix,
            a matrix that does not match the grid, or an invalid truncation.

    Example:
        >>> from dpaudit.model.spaces import BrownianMotion, uniform_grid
        >>> basis = kl_basis(BrownianMotion(), uniform_grid(500), n_components=3)
        >>> [round(float(l * np.pi**2 * (j - 0.5) ** 2), 3) for j, l in enumerate(basis.eigenvalues, 1)]
        [1.0, 1.0, 1.0]
    """
    if not isinstance(grid, Grid):
        raise TypeError(
            f"grid must be a dpaudit Grid (see uniform_grid), got {type(grid).__name__}."
        )
    key = _basis_key(kernel, grid, (n_components, rtol, psd_tol, symmetry_tol))
    if key is not None and key in _BASES:
        return _BASES[key]
    basis = _decompose(kernel, grid, n_components, rtol, psd_tol, symmetry_tol)
    if key is not None:
        if len(_BASES) >= _CACHED_BASES:
            _BASES.pop(next(iter(_BASES)))
        _BASES[key] = basis
    return basis


#: Bases kept per (kernel, grid, truncation) in this process: building the catalogue builds
#: the same Matern / Gaussian basis on the same grid for many mechanisms.
_CACHED_BASES = 64
_BASES: dict = {}


def _basis_key(kernel, grid: Grid, options: tuple):
    """The cache key of a :class:`Kernel` on a grid (``None``: not cached, e.g. a matrix)."""
    if not isinstance(kernel, Kernel):
        return None
    try:
        hash(kernel)
    except TypeError:
        return None
    arrays = (np.asarray(grid.points), np.asarray(grid.weights))
    return (kernel, *((a.shape, a.tobytes()) for a in arrays), options)


def _decompose(kernel, grid: Grid, n_components, rtol, psd_tol, symmetry_tol):
    """:func:`kl_basis` without its cache."""
    m = grid.size
    if isinstance(kernel, np.ndarray | jax.Array):
        gram = np.asarray(kernel, dtype=np.float64)
    elif callable(kernel):
        gram = np.asarray(kernel(grid.points, grid.points), dtype=np.float64)
    else:
        raise TypeError(
            f"kernel must be a Kernel, a callable or a matrix, got {type(kernel).__name__}."
        )
    if gram.shape != (m, m):
        raise ValueError(
            f"kernel matrix has shape {gram.shape} but the grid has {m} points; expected ({m}, {m})."
        )
    check_finite("kernel matrix", gram)
    scale = float(np.max(np.abs(gram)))
    if scale == 0.0:
        raise ValueError("kernel matrix is identically zero; a covariance needs positive variance.")
    asym = float(np.max(np.abs(gram - gram.T))) / scale
    if asym > symmetry_tol:
        raise ValueError(
            f"kernel matrix is not symmetric (max |K - K^T| / max |K| = {asym:.3g} > "
            f"{symmetry_tol:g}); a covariance kernel must satisfy k(s, t) = k(t, s)."
        )
    if rtol is not None and not (np.isfinite(rtol) and 0 <= rtol < 1):
        raise ValueError(f"rtol must lie in [0, 1), got {rtol!r}.")
    sqrt_w = np.sqrt(np.asarray(grid.weights))
    operator = 0.5 * (gram + gram.T) * sqrt_w[:, None] * sqrt_w[None, :]
    with one_blas_thread():  # small eigenproblems: far faster on one thread (core/threads.py)
        eigenvalues, vectors = scipy.linalg.eigh(operator, check_finite=False)
    eigenvalues, vectors = eigenvalues[::-1], vectors[:, ::-1]
    top = eigenvalues[0]
    if top <= 0:
        raise ValueError("kernel matrix has no positive eigenvalue; it is not a covariance.")
    if eigenvalues[-1] < -psd_tol * top:
        raise ValueError(
            f"kernel matrix is not positive semi-definite: smallest eigenvalue "
            f"{eigenvalues[-1]:.3g} is below -{psd_tol:g} x the largest ({top:.3g})."
        )
    # Eigenpairs below the cut-off are round-off: their eigenvectors are arbitrary
    # and 1/lambda would dominate every Cameron-Martin norm. rtol=0 keeps all > 0.
    floor = (DEFAULT_RTOL if rtol is None else rtol) * top
    usable = int(np.count_nonzero(eigenvalues > floor))
    if n_components is not None and n_components > m:
        raise ValueError(f"n_components={n_components} exceeds the grid size {m}.")
    if n_components is not None and n_components > usable:
        raise ValueError(
            f"n_components={n_components} exceeds the {usable} eigenvalues of this kernel on this "
            f"grid that are above {floor / top:g} x the largest; ask for fewer components, pass "
            "a smaller rtol, or use a rougher kernel."
        )
    k = _resolve_truncation(eigenvalues[:usable], n_components, None)
    vectors = vectors[:, :k] / sqrt_w[:, None]
    idx = np.argmax(np.abs(vectors), axis=0)
    vectors = vectors * np.sign(vectors[idx, np.arange(k)])
    return KarhunenLoeveBasis(float64_array(eigenvalues[:k]), float64_array(vectors), grid)


def spectral_basis(
    eigenvalues,
    eigenfunctions: Callable | np.ndarray,
    grid: Grid,
    *,
    orthonormality_tol: float = 1e-8,
) -> KarhunenLoeveBasis:
    """A basis from given eigenvalues and eigenfunctions (exact ground truth for tests).

    Args:
        eigenvalues: ``(K,)`` positive, non-increasing.
        eigenfunctions: an ``(m, K)`` array of values on the grid, or a callable
            ``points (m, d) -> (m, K)``.
        grid: the grid.
        orthonormality_tol: allowed ``max |Phi^T W Phi - I|``; the
            eigenfunctions must be orthonormal in the grid's inner product for
            coefficients and norms to mean what they say.

    Raises:
        ValueError: non-positive, non-finite or increasing eigenvalues, shape
            mismatches, or eigenfunctions that are not orthonormal on the grid.

    Example:
        >>> from dpaudit.model.spaces import uniform_grid
        >>> g = uniform_grid(64)
        >>> fourier = lambda t: np.sqrt(2) * np.cos(np.pi * np.arange(1, 4) * t)
        >>> b = spectral_basis([1.0, 0.25, 0.1], fourier, g)
        >>> b.n_components
        3
    """
    lam = np.asarray(eigenvalues, dtype=np.float64)
    if lam.ndim != 1 or lam.size == 0:
        raise ValueError(f"eigenvalues must be a non-empty 1-D array, got shape {lam.shape}.")
    check_positive("eigenvalues", lam)
    if np.any(np.diff(lam) > 0):
        raise ValueError("eigenvalues must be non-increasing (lambda_1 >= lambda_2 >= ...).")
    if callable(eigenfunctions):
        phi = np.asarray(eigenfunctions(np.asarray(grid.points)), dtype=np.float64)
    else:
        phi = np.asarray(eigenfunctions, dtype=np.float64)
    if phi.shape != (grid.size, lam.size):
        raise ValueError(
            f"eigenfunctions have shape {phi.shape} but the grid has {grid.size} points and there "
            f"are {lam.size} eigenvalues; expected ({grid.size}, {lam.size})."
        )
    check_finite("eigenfunctions", phi)
    gram = phi.T @ (phi * np.asarray(grid.weights)[:, None])
    err = float(np.max(np.abs(gram - np.eye(lam.size))))
    if err > orthonormality_tol:
        raise ValueError(
            f"eigenfunctions are not orthonormal in the grid's L2 inner product (max deviation "
            f"{err:.3g} > {orthonormality_tol:g}); use a finer grid or an orthonormal family."
        )
    return KarhunenLoeveBasis(jnp.asarray(lam), jnp.asarray(phi), grid)


def brownian_motion_basis(
    grid: Grid, n_components: int, *, orthonormality_tol: float = 1e-8
) -> KarhunenLoeveBasis:
    """Analytic Karhunen–Loève basis of Brownian motion ``min(s, t)`` on [0, 1].

    ``lambda_j = 1 / ((j - 1/2)^2 pi^2)`` and ``phi_j(t) = sqrt(2) sin((j - 1/2) pi t)``.
    On the midpoint grid these functions are exactly orthonormal (a DST-IV
    basis) for ``n_components <= m``; on other grids loosen ``orthonormality_tol``.

    Args:
        grid: a one-dimensional :class:`~dpaudit.model.spaces.Grid` on [0, 1].
        n_components: the number ``K`` of components (``1..m``).
        orthonormality_tol: the largest deviation of the grid Gram matrix of
            the eigenfunctions from the identity that is accepted.

    Returns:
        The :class:`KarhunenLoeveBasis`.

    Raises:
        ValueError: if the grid is not one-dimensional or ``n_components`` is
            not in ``1..m``.
    """
    if grid.dim != 1:
        raise ValueError(f"Brownian motion lives on [0, 1]; the grid has dimension {grid.dim}.")
    if isinstance(n_components, bool) or not isinstance(n_components, int | np.integer):
        raise ValueError(f"n_components must be an integer, got {n_components!r}.")
    if not 1 <= n_components <= grid.size:
        raise ValueError(f"n_components={n_components} must lie in 1..{grid.size} (the grid size).")
    j = np.arange(1, n_components + 1) - 0.5
    lam = 1.0 / (j * np.pi) ** 2
    t = np.asarray(grid.points)[:, :1]
    phi = np.sqrt(2.0) * np.sin(j * np.pi * t)
    return spectral_basis(lam, phi, grid, orthonormality_tol=orthonormality_tol)
