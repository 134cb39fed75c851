r"""Data-generating settings of Lin & Reimherr's experiments (docs/papers/lr.md#lr-experiments).

Everything here is *data*, not a mechanism: the audits and notebooks draw
datasets from these settings and feed them to the catalogue. Nothing is
registered.

**Curves** (LR Sec. 6.1, App. D.1). On ``H = L2[0, 1]`` represented by a grid,
``X_i = mu_0 + e_i`` with mean function ``mu_0`` one of

* S-1: ``mu_0(t) = 10 t exp(-t)``;
* S-2: ``mu_0 = 0.3 f_{0.3,0.05} + 0.7 f_{0.8,0.05}``;
* S-3: ``mu_0 = 0.2 (f_{0,0.03} + f_{0.2,0.05} + f_{0.5,0.05} - f_{0.75,0.03} + f_{1,0.03})``;
* S-4: ``mu_0 = sum_{j<=25} R_j phi_j`` with ``R_j ~ U[-1, 1]`` i.i.d. and
  ``phi_j`` the eigenfunctions of the ICLP covariance (the paper writes
  ``R_ij``, a typo for ``R_j``: docs/paper-errors.md#lr-minor-typos),

where ``f_{a,b}`` is the ``N(a, b^2)`` density, and errors ``e_i`` one of

* ``"rbf"``: a zero-mean Gaussian process with the radial-basis-function
  kernel ``v exp(-(s-t)^2 / (2 l^2))`` (the paper's main setting);
* ``"exponential"``: a Gaussian process with kernel ``v exp(-|s-t| / l)``
  (v2 App. D.1 only);
* ``"t5"``: ``e_i = sum_{j<=100} U_ij phi_j`` with ``U_ij ~ t_5`` i.i.d. and
  ``phi_j`` the ICLP eigenfunctions (App. D.1).

**Where the paper is silent** (documented choices):

* The RBF and exponential hyperparameters are not given. We use variance
  ``v = 1`` and lengthscale ``l = 0.1`` (the lengthscale of the ICLP kernel,
  Matérn ``rho = 0.1``); both are arguments.
* The ``t_5`` coefficients are taken literally, unscaled (``scale = 1``), so
  ``E||e_i||^2 = 100 * 5/3``; ``scale`` multiplies them.
* S-4 draws ``R_j`` once per call from the given key (a fixed function for a
  fixed seed), and the ICLP basis defaults to LR's Matérn ``nu = 3/2``,
  ``rho = 0.1`` on the grid.
* The GP errors are exact on the grid: ``e = V diag(sqrt(mu)) z`` from the
  eigendecomposition of the kernel matrix (numerically singular for the RBF
  kernel, so no Cholesky), with ``z`` standard normal.
* ``n`` and the grid (100 midpoint points by default) are arguments; the
  paper's grid of ``n`` values is shown only in its figures.

**Densities for the KDE** (LR Sec. 6.2): the 1-D mixture
``0.6 N(0.3, 0.1; 0, 1) + 0.4 N(0.7, 0.1; 0, 1)`` (second argument the
standard deviation, each component truncated to [0, 1]), and the 2-D
mixture ``0.6 N((-3,-3), S) + 0.4 N((3,2), S)``, ``S = [[1, .5], [.5, 1]]``,
truncated to ``[-5, 5]^2`` (the printed box is garbled; see docs/paper-errors.md#lr-experiment-reporting).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from dpaudit.model.spaces import Exponential, Gaussian, KarhunenLoeveBasis, uniform_grid
from dpaudit.model.spaces.grids import Grid
from mechanisms.iclp.mean import default_basis

__all__ = [
    "ERRORS",
    "KDE_MIXTURE_1D",
    "SCENARIOS",
    "SimulatedCurves",
    "gaussian_process_errors",
    "generate_curves",
    "iclp_basis",
    "kde_mixture_density",
    "kde_mixture_density_2d",
    "mean_function",
    "sample_kde_mixture",
    "sample_kde_mixture_2d",
    "t5_basis_errors",
]

#: Mean-function scenarios of LR Sec. 6.1.
SCENARIOS = ("S-1", "S-2", "S-3", "S-4")
#: Error processes: RBF Gaussian process (main), exponential-kernel GP and t_5 basis expansion.
ERRORS = ("rbf", "exponential", "t5")
#: The 1-D KDE mixture: (weight, mean, standard deviation) of each truncated component.
KDE_MIXTURE_1D = ((0.6, 0.3, 0.1), (0.4, 0.7, 0.1))
#: The 2-D KDE mixture: weights, means, shared covariance and the truncation box.
KDE_MIXTURE_2D_WEIGHTS = (0.6, 0.4)
KDE_MIXTURE_2D_MEANS = ((-3.0, -3.0), (3.0, 2.0))
KDE_MIXTURE_2D_COVARIANCE = ((1.0, 0.5), (0.5, 1.0))
KDE_MIXTURE_2D_BOX = (-5.0, 5.0)


def _normal_pdf(t, mean, sd):
    return np.exp(-0.5 * ((t - mean) / sd) ** 2) / (sd * math.sqrt(2.0 * math.pi))


def _points(grid_or_points) -> np.ndarray:
    if isinstance(grid_or_points, Grid):
        if grid_or_points.dim != 1:
            raise ValueError(
                f"the LR curves live on [0, 1]; the grid has dimension {grid_or_points.dim}."
            )
        return np.asarray(grid_or_points.points[:, 0])
    return np.asarray(grid_or_points, dtype=np.float64)


def iclp_basis(grid_size: int = 100, n_components: int | None = None) -> KarhunenLoeveBasis:
    """LR's ICLP covariance basis: Matérn ``nu = 3/2``, ``rho = 0.1`` on the midpoint grid.

    ``lambda_j ~ j^(-4)`` (docs/papers/lr.md#lr-experiments). Used for S-4 and the ``t5`` errors; the same
    (cached) basis as :func:`mechanisms.iclp.mean.default_basis`.

    Args:
        grid_size: midpoint grid points on ``[0, 1]``.
        n_components: components kept (default: all).

    Returns:
        The :class:`~dpaudit.model.spaces.KarhunenLoeveBasis`.
    """
    return default_basis(grid_size, n_components)


def mean_function(scenario: str, t, *, basis: KarhunenLoeveBasis | None = None, key=None):
    """Values of the LR mean function ``mu_0`` of ``scenario`` at points ``t`` (or a grid).

    Args:
        scenario: ``"S-1"`` .. ``"S-4"``.
        t: points in [0, 1] (``(m,)``) or a 1-D :class:`~dpaudit.model.spaces.Grid`.
        basis: for S-4 only, the ICLP basis whose first 25 eigenfunctions are
            combined; its grid must be ``t`` (default :func:`iclp_basis` on a
            midpoint grid of ``len(t)`` points, which must then be that grid).
        key: for S-4 only, the ``jax.random`` key of the ``R_j ~ U[-1, 1]``.

    Raises:
        ValueError: for an unknown scenario, or S-4 without a key or with a
            basis of fewer than 25 components or another grid.

    Example:
        >>> round(float(mean_function("S-1", jnp.array([1.0]))[0]), 6)  # 10 / e
        3.678794
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}, got {scenario!r}.")
    t = _points(t)
    if scenario == "S-1":
        return jnp.asarray(10.0 * t * np.exp(-t))
    if scenario == "S-2":
        return jnp.asarray(0.3 * _normal_pdf(t, 0.3, 0.05) + 0.7 * _normal_pdf(t, 0.8, 0.05))
    if scenario == "S-3":
        return jnp.asarray(
            0.2
            * (
                _normal_pdf(t, 0.0, 0.03)
                + _normal_pdf(t, 0.2, 0.05)
                + _normal_pdf(t, 0.5, 0.05)
                - _normal_pdf(t, 0.75, 0.03)
                + _normal_pdf(t, 1.0, 0.03)
            )
        )
    if key is None:
        raise ValueError("S-4 draws R_j ~ U[-1, 1]: pass key=jax.random.key(seed).")
    if basis is None:
        basis = iclp_basis(int(t.shape[0]))
    if basis.n_components < 25:
        raise ValueError(f"S-4 combines 25 eigenfunctions; the basis has {basis.n_components}.")
    if basis.grid_size != t.shape[0] or not np.allclose(
        np.asarray(basis.grid.points[:, 0]), t, rtol=0.0, atol=1e-12
    ):
        raise ValueError("S-4 is defined on the basis grid: pass t equal to basis.grid.")
    return _s4_mean(key, jnp.asarray(np.asarray(basis.eigenfunctions)[:, :25]))


@jax.jit
def _s4_mean(key, eigenfunctions):
    return eigenfunctions @ jax.random.uniform(key, (25,), minval=-1.0, maxval=1.0)


def gaussian_process_errors(
    key, n: int, grid: Grid, kernel="rbf", *, lengthscale=0.1, variance=1.0
):
    """``n`` zero-mean Gaussian-process paths on the grid, shape ``(n, m)``.

    ``kernel="rbf"``: ``variance exp(-(s-t)^2 / (2 lengthscale^2))``;
    ``kernel="exponential"``: ``variance exp(-|s-t| / lengthscale)``. Exact on
    the grid via the eigendecomposition of the kernel matrix.

    Args:
        key: a JAX PRNG key.
        n: the number of paths.
        grid: the grid.
        kernel: ``"rbf"`` or ``"exponential"``.
        lengthscale, variance: its parameters.

    Returns:
        ``(n, m)`` paths.

    Raises:
        ValueError: for an unknown kernel or a non-positive ``n``.
    """
    if kernel == "rbf":
        k = Gaussian(lengthscale=lengthscale, variance=variance)
    elif kernel == "exponential":
        k = Exponential(lengthscale=lengthscale, variance=variance)
    else:
        raise ValueError(f"kernel must be 'rbf' or 'exponential', got {kernel!r}.")
    n = _check_n(n)
    gram = np.asarray(k(grid.points, grid.points))
    mu, v = np.linalg.eigh(0.5 * (gram + gram.T))
    return _gaussian_draw(key, jnp.asarray(v * np.sqrt(np.clip(mu, 0.0, None))), n)


@functools.partial(jax.jit, static_argnums=2)
def _gaussian_draw(key, factor, n):
    return jax.random.normal(key, (n, factor.shape[1])) @ factor.T


def t5_basis_errors(key, n: int, basis: KarhunenLoeveBasis, *, n_terms=100, df=5.0, scale=1.0):
    """``e_i = scale * sum_{j <= n_terms} U_ij phi_j`` with ``U_ij ~ t_df``; shape ``(n, m)``.

    Args:
        key: a JAX PRNG key.
        n: the number of curves.
        basis: the basis ``phi_j``.
        n_terms: the terms summed.
        df: the degrees of freedom of ``t``.
        scale: the factor in front.

    Returns:
        ``(n, m)`` curves.

    Raises:
        ValueError: if the basis has fewer than ``n_terms`` components.
    """
    n = _check_n(n)
    if basis.n_components < n_terms:
        raise ValueError(
            f"the t5 errors combine {n_terms} eigenfunctions but the basis has "
            f"{basis.n_components}; use a grid of at least {n_terms} points."
        )
    phi = jnp.asarray(np.asarray(basis.eigenfunctions)[:, :n_terms])
    return scale * _t_draw(key, phi, n, float(df))


@functools.partial(jax.jit, static_argnums=(2, 3))
def _t_draw(key, eigenfunctions, n, df):
    shape = (n, eigenfunctions.shape[1])
    if df.is_integer() and 1 <= df <= 30:
        # t_df = Z_0 / sqrt(chi^2_df / df) with chi^2_df a sum of df squared normals: exact
        # for integer df, and far cheaper to compile than jax.random.t's gamma sampler.
        z = jax.random.normal(key, (int(df) + 1, *shape))
        u = z[0] / jnp.sqrt(jnp.mean(z[1:] ** 2, axis=0))
    else:
        u = jax.random.t(key, df, shape)
    return u @ eigenfunctions.T


@dataclasses.dataclass(frozen=True)
class SimulatedCurves:
    """A simulated LR dataset.

    Attributes:
        curves: ``(n, m)`` grid values of ``X_i = mu_0 + e_i``.
        mean: ``(m,)`` grid values of the true mean ``mu_0``.
        grid: the grid.
        scenario: ``"S-1"`` .. ``"S-4"``.
        errors: ``"rbf"``, ``"exponential"`` or ``"t5"``.
    """

    curves: jax.Array
    mean: jax.Array
    grid: Grid
    scenario: str
    errors: str


def generate_curves(
    key,
    n: int,
    scenario: str = "S-2",
    errors: str = "rbf",
    *,
    grid: Grid | None = None,
    basis: KarhunenLoeveBasis | None = None,
    lengthscale: float = 0.1,
    variance: float = 1.0,
    t_scale: float = 1.0,
) -> SimulatedCurves:
    """Draw ``n`` curves ``X_i = mu_0 + e_i`` of an LR simulation setting.

    Args:
        key: ``jax.random`` key (split for S-4's ``R_j`` and for the errors).
        n: number of curves.
        scenario: ``"S-1"`` .. ``"S-4"``.
        errors: ``"rbf"``, ``"exponential"`` or ``"t5"``.
        grid: a 1-D grid (default: the grid of ``basis``, else 100 midpoint points).
        basis: ICLP basis for S-4 and ``t5`` (default :func:`iclp_basis` on the grid).
        lengthscale, variance: of the Gaussian-process errors.
        t_scale: multiplier of the ``t5`` coefficients.

    Raises:
        ValueError: for an unknown scenario or error process, or a basis on another grid.

    Example:
        >>> sim = generate_curves(jax.random.key(0), 4, "S-1")
        >>> sim.curves.shape, sim.mean.shape
        ((4, 100), (100,))
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}, got {scenario!r}.")
    if errors not in ERRORS:
        raise ValueError(f"errors must be one of {ERRORS}, got {errors!r}.")
    n = _check_n(n)
    if grid is None:
        grid = basis.grid if basis is not None else uniform_grid(100)
    needs_basis = scenario == "S-4" or errors == "t5"
    if needs_basis and basis is None:
        basis = iclp_basis(grid.size)
    if needs_basis and basis.grid_size != grid.size:
        raise ValueError("the basis must be evaluated on the simulation grid.")
    key_mean, key_errors = jax.random.split(key)
    mu0 = mean_function(scenario, grid, basis=basis, key=key_mean)
    if errors == "t5":
        e = t5_basis_errors(key_errors, n, basis, scale=t_scale)
    else:
        e = gaussian_process_errors(
            key_errors, n, grid, errors, lengthscale=lengthscale, variance=variance
        )
    return SimulatedCurves(mu0[None, :] + e, mu0, grid, scenario, errors)


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}.")
    return int(n)


# ---------------------------------------------------------------- KDE mixtures


def _truncated_normal_pdf(x, mean, sd, low, high):
    import scipy.stats  # on use: the catalogue loads without it (0.5 s CPU)

    mass = scipy.stats.norm.cdf((high - mean) / sd) - scipy.stats.norm.cdf((low - mean) / sd)
    return np.where((x >= low) & (x <= high), _normal_pdf(x, mean, sd) / mass, 0.0)


def kde_mixture_density(x):
    """Density of ``0.6 N(0.3, 0.1; 0, 1) + 0.4 N(0.7, 0.1; 0, 1)`` (truncated components), numpy.

    Args:
        x: points of ``[0, 1]``.

    Returns:
        The density, the shape of ``x``.

    Example:
        >>> import scipy.integrate
        >>> round(scipy.integrate.quad(lambda u: float(kde_mixture_density(u)), 0, 1)[0], 8)
        1.0
    """
    x = np.asarray(x, dtype=np.float64)
    return sum(w * _truncated_normal_pdf(x, m, s, 0.0, 1.0) for w, m, s in KDE_MIXTURE_1D)


def sample_kde_mixture(key, n: int) -> jax.Array:
    """``n`` draws of the 1-D KDE mixture on [0, 1] (exact, by inverse-CDF per component).

    Args:
        key: a JAX PRNG key.
        n: the number of draws.

    Returns:
        ``(n,)`` draws.

    Example:
        >>> x = sample_kde_mixture(jax.random.key(0), 1000)
        >>> bool((x >= 0).all() and (x <= 1).all())
        True
    """
    return _mixture_draw(key, _check_n(n))


_MIXTURE_MEANS = np.array([m for _, m, _ in KDE_MIXTURE_1D])
_MIXTURE_SDS = np.array([s for _, _, s in KDE_MIXTURE_1D])
# scipy.stats.norm.cdf of a standard normal is scipy.special.ndtr of the same argument (the
# same bits), without importing scipy.stats when the catalogue loads
_MIXTURE_CDF_LOW = scipy.special.ndtr((0.0 - _MIXTURE_MEANS) / _MIXTURE_SDS)
_MIXTURE_CDF_HIGH = scipy.special.ndtr((1.0 - _MIXTURE_MEANS) / _MIXTURE_SDS)


@functools.partial(jax.jit, static_argnums=1)
def _mixture_draw(key, n):
    key_component, key_uniform = jax.random.split(key)
    weights = jnp.array([w for w, _, _ in KDE_MIXTURE_1D])
    component = jax.random.choice(key_component, len(KDE_MIXTURE_1D), (n,), p=weights)
    lo, hi = jnp.asarray(_MIXTURE_CDF_LOW)[component], jnp.asarray(_MIXTURE_CDF_HIGH)[component]
    u = lo + (hi - lo) * jax.random.uniform(key_uniform, (n,))
    x = jnp.asarray(_MIXTURE_MEANS)[component]
    x = x + jnp.asarray(_MIXTURE_SDS)[component] * jax.scipy.special.ndtri(u)
    return jnp.clip(x, 0.0, 1.0)  # round-off only: u lies strictly inside (lo, hi)


def kde_mixture_density_2d(x):
    """Density of the truncated 2-D mixture on ``[-5, 5]^2`` at points ``(k, 2)`` (normalised numerically).

    Args:
        x: ``(k, 2)`` points.

    Returns:
        ``(k,)`` density values.
    """
    import scipy.stats  # on use: the catalogue loads without it

    x = np.atleast_2d(np.asarray(x, dtype=float))
    low, high = KDE_MIXTURE_2D_BOX
    inside = np.all((x >= low) & (x <= high), axis=1)
    total = np.zeros(x.shape[0])
    for w, m in zip(KDE_MIXTURE_2D_WEIGHTS, KDE_MIXTURE_2D_MEANS, strict=True):
        law = scipy.stats.multivariate_normal(m, KDE_MIXTURE_2D_COVARIANCE)
        total += w * law.pdf(x) / _box_mass(m)
    return np.where(inside, total, 0.0)


def _box_mass(mean) -> float:
    import scipy.stats  # on use: the catalogue loads without it

    low, high = KDE_MIXTURE_2D_BOX
    law = scipy.stats.multivariate_normal(mean, KDE_MIXTURE_2D_COVARIANCE)
    return float(
        law.cdf([high, high]) - law.cdf([low, high]) - law.cdf([high, low]) + law.cdf([low, low])
    )


def sample_kde_mixture_2d(key, n: int) -> jax.Array:
    """``n`` draws of the truncated 2-D mixture on ``[-5, 5]^2`` (rejection sampling), ``(n, 2)``.

    Rescale by ``(x + 5) / 10`` to use them on the unit square.

    Args:
        key: a JAX PRNG key.
        n: the number of draws.

    Returns:
        ``(n, 2)`` draws.
    """
    n = _check_n(n)
    low, high = KDE_MIXTURE_2D_BOX
    chol = np.linalg.cholesky(np.asarray(KDE_MIXTURE_2D_COVARIANCE))
    means = jnp.asarray(KDE_MIXTURE_2D_MEANS)
    batch = 2 * n + 64  # acceptance is above 0.99, so one or two batches suffice
    accepted, total = [], 0
    while total < n:
        key, key_component, key_normal = jax.random.split(key, 3)
        component = jax.random.choice(
            key_component, 2, (batch,), p=jnp.asarray(KDE_MIXTURE_2D_WEIGHTS)
        )
        x = means[component] + jax.random.normal(key_normal, (batch, 2)) @ jnp.asarray(chol).T
        x = np.asarray(x)
        x = x[np.all((x >= low) & (x <= high), axis=1)]
        accepted.append(x)
        total += x.shape[0]
    return jnp.asarray(np.concatenate(accepted)[:n])
