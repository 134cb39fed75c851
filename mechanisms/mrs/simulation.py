r"""The simulation study of Mirshani, Reimherr & Slavković (MRS Sec. 5, App. B).

**Simulation study (MRS Sec. 5, App. B; docs/papers/mrs.md#mrs-experiments).** :func:`mrs_kernel`
gives the kernels ``C1``–``C4`` of the appendix (eq. 6);
:func:`mrs_simulation` fixes the data model of eq. (4),
:func:`mrs_simulation_curves` draws from it, :func:`mrs_simulation_tau` is
its exact public norm bound (replacing the paper's data-dependent
``tau = max_i ||X_i||``, see docs/paper-errors.md#mrs-data-dependent-inputs) and :func:`mrs_penalized_mean_risk` is the
exact mean squared error of the (non-private) penalised mean under it.

This is data and analysis for the experiments and notebook 03, not a
mechanism: nothing here is registered. The mechanisms are in
:mod:`mechanisms.mrs.mean`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.core.checks import check_choice, check_count, check_finite, check_number
from dpaudit.model.spaces import (
    Exponential,
    Gaussian,
    KarhunenLoeveBasis,
    Kernel,
    Matern,
    kl_basis,
    uniform_grid,
)
from mechanisms.mrs.mean import check_basis, check_eta_phi, mrs_shrinkage

__all__ = [
    "EIGENVECTOR_NORMS",
    "MRS_KERNELS",
    "MRSSimulation",
    "mrs_kernel",
    "mrs_penalized_mean_risk",
    "mrs_simulation",
    "mrs_simulation_curves",
    "mrs_simulation_tau",
]

#: The kernels of MRS App. eq. (6): C1 Gaussian, C2 Matérn 5/2, C3 Matérn 3/2, C4 exponential.
MRS_KERNELS = ("C1", "C2", "C3", "C4")
#: How the eigenvectors ``v_j`` of the simulation's eq. (4) are normalised on the grid.
EIGENVECTOR_NORMS = ("euclidean", "l2")


def mrs_kernel(name: str, rho: float) -> Kernel:
    r"""Kernel ``C1``–``C4`` of MRS (App. eq. 6) with range parameter ``rho``.

    * ``C1 = exp(-|t-s|^2 / rho)`` (Gaussian; no factor 2, see docs/paper-errors.md#mrs-minor), i.e.
      :class:`~dpaudit.model.spaces.Gaussian` with lengthscale ``sqrt(rho / 2)``;
    * ``C2 = (1 + sqrt5 r/rho + 5 r^2/(3 rho^2)) exp(-sqrt5 r/rho)`` (Matérn 5/2);
    * ``C3 = (1 + sqrt3 r/rho) exp(-sqrt3 r/rho)`` (Matérn 3/2);
    * ``C4 = exp(-r/rho)`` (exponential, Ornstein–Uhlenbeck),

    with ``r = |t - s|``.

    Args:
        name: ``"C1"`` to ``"C4"``.
        rho: the range parameter.

    Returns:
        The kernel.

    Raises:
        ValueError: for an unknown name or ``rho <= 0``.

    Example:
        >>> round(float(mrs_kernel("C1", 0.5)([0.0], [1.0])[0, 0]), 6)  # exp(-1/0.5)
        0.135335
    """
    check_choice("name", name, MRS_KERNELS)
    rho = check_number("rho", rho, low=0.0, inclusive=False, hint=" (the kernel's range)")
    if name == "C1":
        return Gaussian(math.sqrt(rho / 2.0))
    if name == "C2":
        return Matern(2.5, rho)
    if name == "C3":
        return Matern(1.5, rho)
    return Exponential(rho)


@dataclasses.dataclass(frozen=True)
class MRSSimulation:
    r"""The data model of MRS Sec. 5, eq. (4): ``X_i = mu + sum_{j<=M} j^(-p/2) U_ij v_j``.

    ``U_ij ~ U(-b, b)`` i.i.d. with ``b = score_bound``, and ``v_j = s phi_j``
    with ``phi_j`` the L2-orthonormal eigenfunctions of ``basis`` and ``s`` the
    ``eigenvector_scale`` (see :func:`mrs_simulation`). Build it with
    :func:`mrs_simulation`.

    Attributes:
        basis: the data eigenbasis (its grid is the data grid).
        mean: ``(m,)`` grid values of ``mu``.
        p: smoothness exponent (> 1 for square-summable loadings).
        score_bound: ``b``.
        n_terms: ``M``, the number of terms.
        eigenvector_scale: ``s``.
    """

    basis: KarhunenLoeveBasis
    mean: np.ndarray
    p: float
    score_bound: float
    n_terms: int
    eigenvector_scale: float

    @property
    def loadings(self) -> np.ndarray:
        """``a_j = s j^(-p/2)``, ``j = 1..M``: curve ``i`` is ``mu + sum_j a_j U_ij phi_j``."""
        return self.eigenvector_scale * np.arange(1, self.n_terms + 1, dtype=float) ** (-self.p / 2)


def mrs_simulation(
    grid_size: int = 100,
    *,
    kernel: str = "C1",
    rho: float = 0.001,
    p: float = 4.0,
    score_bound: float = 0.4,
    mean: Callable | np.ndarray | None = None,
    n_terms: int | None = None,
    eigenvector_norm: str = "euclidean",
) -> MRSSimulation:
    r"""MRS's simulation setting (Sec. 5; docs/papers/mrs.md#mrs-experiments), defaults as in the paper.

    ``X_i(t) = mu(t) + sum_{j=1}^M j^(-p/2) U_ij v_j(t)``, ``U_ij ~ U(-0.4, 0.4)``,
    ``v_j`` the eigenfunctions of ``C1`` with ``rho = 0.001`` on 100 equally
    spaced points, ``p = 4``, ``mu(t) = 0.1 sin(pi t)``.

    Where the paper is silent (documented choices):

    * **Scale of v_j.** The paper computes the eigenvectors in R, whose
      ``eigen()`` returns vectors of unit *Euclidean* norm on the grid; in L2
      terms that is ``v_j = phi_j / sqrt(m)`` (``eigenvector_norm="euclidean"``,
      the default). ``"l2"`` uses the L2-orthonormal ``phi_j`` (``sqrt(m)``
      times rougher data).
    * **M.** "The largest m with lambda_m numerically non-zero (about 50)":
      by default every component :func:`dpaudit.model.spaces.kl_basis` keeps
      (eigenvalues above ``1e-10 lambda_1``); the terms past 50 carry
      less than ``1e-5`` of the variance for ``p = 4``.
    * **Grid.** The midpoint grid of :func:`dpaudit.model.spaces.uniform_grid`.

    Args:
        grid_size: grid points ``m``.
        kernel, rho: the data kernel (:func:`mrs_kernel`).
        p: smoothness exponent, > 1.
        score_bound: ``b`` of ``U(-b, b)``, > 0.
        mean: ``mu`` as a vectorised callable of ``t`` or ``(m,)`` grid values
            (default ``0.1 sin(pi t)``).
        n_terms: ``M`` (default: all usable components).
        eigenvector_norm: ``"euclidean"`` (R's convention, the paper's) or ``"l2"``.

    Returns:
        An :class:`MRSSimulation`.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    grid_size = check_count("grid_size", grid_size)
    p = check_number("p", p, low=1.0, hint=" (square-summable loadings j^(-p/2) need p > 1)")
    score_bound = check_number("score_bound", score_bound, low=0.0)
    check_choice("eigenvector_norm", eigenvector_norm, EIGENVECTOR_NORMS)
    grid = uniform_grid(grid_size)
    basis = kl_basis(mrs_kernel(kernel, rho), grid)
    if n_terms is None:
        n_terms = basis.n_components
    n_terms = check_count("n_terms", n_terms)
    if n_terms > basis.n_components:
        raise ValueError(
            f"n_terms={n_terms} exceeds the {basis.n_components} usable eigenfunctions of "
            f"{kernel} with rho={rho:g} on {grid_size} points; ask for fewer terms."
        )
    basis = basis.truncate(n_terms)
    t = np.asarray(grid.points)[:, 0]
    if mean is None:
        values = 0.1 * np.sin(np.pi * t)
    elif callable(mean):
        values = np.asarray(mean(t), dtype=float)
    else:
        values = np.asarray(mean, dtype=float)
    if values.shape != (grid_size,):
        raise ValueError(
            f"mean has shape {values.shape} but must be ({grid_size},): one value per grid point."
        )
    check_finite("mean", values)
    scale = 1.0 / math.sqrt(grid_size) if eigenvector_norm == "euclidean" else 1.0
    return MRSSimulation(basis, values, p, score_bound, n_terms, scale)


def _check_simulation(simulation) -> MRSSimulation:
    if not isinstance(simulation, MRSSimulation):
        raise TypeError(
            f"simulation must be an MRSSimulation (see mrs_simulation), got "
            f"{type(simulation).__name__}."
        )
    return simulation


def mrs_simulation_curves(simulation: MRSSimulation, key, n: int) -> jax.Array:
    """``n`` curves of MRS eq. (4) on the simulation's grid; shape ``(n, m)``.

    Args:
        simulation: from :func:`mrs_simulation`.
        key: a ``jax.random.key``.
        n: number of curves.

    Example:
        >>> sim = mrs_simulation(20, n_terms=5)
        >>> x = mrs_simulation_curves(sim, jax.random.key(0), 3)
        >>> x.shape, bool(np.all(np.sqrt(np.mean(x**2, 1)) <= mrs_simulation_tau(sim)))
        ((3, 20), True)
    """
    simulation = _check_simulation(simulation)
    n = check_count("n", n)
    b = simulation.score_bound
    scores = jax.random.uniform(key, (n, simulation.n_terms), jnp.float64, -b, b)
    return _simulation_draw(
        scores, jnp.asarray(simulation.loadings), simulation.basis.eigenfunctions,
        jnp.asarray(simulation.mean),
    )  # fmt: skip


@jax.jit
def _simulation_draw(scores, loadings, eigenfunctions, mean):
    return mean + (scores * loadings) @ eigenfunctions.T


def mrs_simulation_tau(simulation: MRSSimulation) -> float:
    r"""The exact public bound ``sup ||X_i||_{L2}`` of the simulation's curves.

    With ``mu_j = <mu, phi_j>`` and ``mu_perp`` the part of ``mu`` off the span
    of ``phi_1..phi_M``, the coordinates of ``X_i`` are ``mu_j + a_j U_ij`` with
    ``|U_ij| <= b``, so

    .. math::
        \sup\|X_i\|^2 = \|\mu_\perp\|^2 + \sum_{j\le M}(|\mu_j| + a_j b)^2 ,

    attained at ``U_ij = b sgn(mu_j)``. It depends on the data model only, not
    on the data, so it is a legitimate public ``tau`` (MRS take
    ``tau = max_i ||X_i||`` from the sample, which the guarantee does not
    cover; see docs/paper-errors.md#mrs-data-dependent-inputs).

    Args:
        simulation: the simulation design.

    Returns:
        ``tau``.
    """
    simulation = _check_simulation(simulation)
    basis = simulation.basis
    weights = np.asarray(basis.grid.weights)
    mean = simulation.mean
    coefficients = np.asarray(basis.project(mean))
    residual = mean - coefficients @ np.asarray(basis.eigenfunctions).T
    square = np.sum(weights * residual**2) + np.sum(
        (np.abs(coefficients) + simulation.loadings * simulation.score_bound) ** 2
    )
    return float(math.sqrt(square))


def mrs_penalized_mean_risk(
    simulation: MRSSimulation, basis: KarhunenLoeveBasis, *, n: int, eta: float, phi: float
) -> float:
    r"""Exact ``E||hat mu - mu||^2_{L2}`` of the penalised mean of ``n`` simulated curves.

    ``hat mu = A bar X`` with ``A h = sum_k s_k <h, e_k> e_k``, ``s_k =
    lambda_k^eta / (lambda_k^eta + phi)`` and ``(lambda_k, e_k)`` the
    eigenpairs of ``basis`` (the noise/penalty operator, which may differ from
    the simulation's data basis ``phi_j``). Since ``E bar X = mu`` and the
    scores have variance ``b^2 / 3``,

    .. math::
        E\|\hat\mu-\mu\|^2 = \|\mu - \textstyle\sum_k c_k e_k\|^2 + \sum_k (1-s_k)^2 c_k^2
        + \frac{b^2}{3n}\sum_j a_j^2 \sum_k s_k^2 \langle\phi_j, e_k\rangle^2 ,

    with ``c_k = <mu, e_k>`` (bias, then variance). Inner products are the
    grid quadrature. The private release adds ``sigma^2 tr(C)`` (independent,
    mean-zero noise), see :func:`mrs_penalized_mean_sigma`.

    Args:
        simulation: the simulation design.
        basis: the eigenbasis of the noise covariance.
        n: the number of curves.
        eta, phi: the penalty power and weight.

    Returns:
        The risk.

    Raises:
        ValueError: if ``basis`` lives on another grid, or for bad ``n``, ``eta``, ``phi``.
    """
    simulation = _check_simulation(simulation)
    basis = check_basis(basis)
    n = check_count("n", n)
    eta, phi = check_eta_phi(eta, phi)
    data = simulation.basis
    weights = np.asarray(data.grid.weights)
    if basis.grid_size != data.grid_size or not np.allclose(
        np.asarray(basis.grid.points), np.asarray(data.grid.points), rtol=0, atol=1e-12
    ):
        raise ValueError(
            f"basis lives on a grid of {basis.grid_size} points but the simulation's grid has "
            f"{data.grid_size}; build the basis on simulation.basis.grid."
        )
    e = np.asarray(basis.eigenfunctions)
    s = np.asarray(mrs_shrinkage(basis.eigenvalues, eta, phi))
    c = (simulation.mean * weights) @ e
    off_span = simulation.mean - e @ c
    bias = np.sum(weights * off_span**2) + np.sum((1.0 - s) ** 2 * c**2)
    cross = e.T @ (weights[:, None] * np.asarray(data.eigenfunctions))  # <e_k, phi_j>, (K, M)
    variance = (
        simulation.score_bound**2 / (3.0 * n) * np.sum(simulation.loadings**2 * ((s**2) @ cross**2))
    )
    return float(bias + variance)
