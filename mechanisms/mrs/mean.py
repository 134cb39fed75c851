r"""Mirshani–Reimherr–Slavković: Gaussian mechanisms for a penalised mean function.

Mathematics: docs/papers/mrs.md (MRS, "Formal privacy for functional data with Gaussian
perturbations"); corrections: docs/paper-errors.md#mrs-epsilon-at-most-one to #mrs-minor; oracles: docs/oracles.md#oracle-mrs-sensitivity. Conventions of docs/conventions.md: the noise
is ``sigma Z`` with ``Z ~ N(0, C)`` a Gaussian process whose covariance
operator ``C`` has eigenpairs ``(lambda_j, v_j)`` (a
:class:`~dpaudit.model.spaces.KarhunenLoeveBasis`, L2-normalised by the grid's
quadrature); adjacency is replace-one.

**Data.** ``n`` curves on the basis grid, an ``(n, m)`` array of grid values,
with ``||X_i||_{L2} <= tau`` for a *public* ``tau`` (see docs/paper-errors.md#mrs-data-dependent-inputs: the paper's
simulation takes ``tau = max_i ||X_i||``, which is data-dependent and not
covered by the guarantee). A curve with a larger norm is rejected
(``out_of_bound="reject"``, the default) or rescaled onto the ball,
``X_i <- X_i min(1, tau / ||X_i||)`` (``out_of_bound="clip"``, a claimed step of
the mechanism: rescaling maps every record into the ball, so the sensitivity
below holds for all inputs).

**Summary (MRS Sec. 4, eq. 2).** The penalised mean

.. math::
    \hat\mu = \arg\min_m \frac1N\sum_i\|X_i-m\|^2 + \phi\|m\|_{C^\eta}^2
    = \sum_j \frac{\lambda_j^\eta}{\lambda_j^\eta+\phi}\,\bar X_j\, v_j,
    \qquad \bar X_j = \langle \bar X, v_j\rangle ,

with ``eta >= 1`` and ``phi > 0``. On a basis truncated to ``K`` components the
penalty is infinite off their span, so ``hat mu`` lives in the span and the
release below is exactly "summary plus the truncated noise".

**Sensitivity (MRS Thm 4.1)**, in the Cameron–Martin norm of ``C``:

.. math::
    \Delta^2 \le \frac{4\tau^2}{N^2}\sup_j\frac{\lambda_j^{2\eta-1}}{(\lambda_j^\eta+\phi)^2}
    \le \frac{\tau^2}{N^2\phi^{1/\eta}}\,\frac{(2\eta-1)^{2-1/\eta}}{\eta^2}
    \le \frac{4\tau^2}{N^2\phi^{1/\eta}} .

The first ("spectral") bound is attained by ``X_1 = tau v_j, X_1' = -tau v_j``
at the maximising ``j``; the second ("closed-form") uses
``sup_{x>0} x^(2eta-1)/(x^eta+phi)^2 = phi^(-1/eta)(2eta-1)^(2-1/eta)/(4eta^2)``,
attained at ``x^eta = (2eta-1) phi`` (docs/oracles.md#oracle-mrs-sensitivity).

**Noise (MRS Thms 3.2, 3.3, 4.2).** ``sigma = c(delta) Delta / epsilon`` with
``c(delta) = sqrt(2 log(2/delta))`` (``calibration="classical"``, proven for
``epsilon <= 1`` only, see docs/paper-errors.md#mrs-epsilon-at-most-one), or the exact analytic Gaussian calibration of
Balle & Wang (``calibration="analytic"``, any epsilon). With the closed-form
bound and the classical calibration this is Theorem 4.2's

.. math::
    \sigma^2 = \frac{2\log(2/\delta)}{\epsilon^2}\cdot
    \frac{\tau^2(2\eta-1)^{2-1/\eta}}{N^2\phi^{1/\eta}\eta^2},

and the privacy error is ``E||tilde mu - hat mu||^2 = sigma^2 tr(C)``, of order
``N^(-2+1/eta)`` when ``phi ~ 1/N`` (``o(1/N)`` only for ``eta > 1``; see docs/paper-errors.md#mrs-rate).

Registered mechanisms:

* ``mrs-penalized-mean`` — the whole function on the grid (Thm 3.3),
  :class:`~dpaudit.model.noise.GridNoise` of :class:`~dpaudit.model.noise.GaussianProcessNoise`.
* ``mrs-penalized-mean-coefficients`` — the same release read in the
  eigenbasis (a measurable post-processing, Cor. 3.1).
* ``mrs-linear-functionals`` — finitely many linear functionals
  ``(<tilde mu, g_l>)_l`` (Thm 3.2), a multivariate normal with covariance
  ``sigma^2 G Lambda G^T``, ``G_lk = <g_l, v_k>``.

The simulation study of MRS Sec. 5 (data model, public norm bound, exact risk)
lives in :mod:`mechanisms.mrs.simulation`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from dpaudit import Claim, Mechanism, register
from dpaudit.core.arrays import float64_array
from dpaudit.core.checks import check_choice, check_count, check_finite, check_number, is_concrete
from dpaudit.model.noise import (
    GaussianProcessNoise,
    GridNoise,
    analytic_gaussian_sigma,
    classical_gaussian_multiplier,
)
from dpaudit.model.spaces import (
    KarhunenLoeveBasis,
    Kernel,
    Matern,
    cameron_martin_norm,
    kl_basis,
    uniform_grid,
)
from mechanisms.common import OUT_OF_BOUND, ROUNDING_SLACK, check_basis, summary_release

__all__ = [
    "CALIBRATIONS",
    "OUT_OF_BOUND",
    "ROUNDING_SLACK",
    "SENSITIVITY_BOUNDS",
    "check_basis",
    "check_curve_count",
    "check_eta_phi",
    "default_basis",
    "enforce_l2_bound",
    "gaussian_sigma",
    "linear_functional_matrix",
    "mrs_linear_functionals",
    "mrs_linear_functionals_mechanism",
    "mrs_penalized_mean",
    "mrs_penalized_mean_coefficients",
    "mrs_penalized_mean_coefficients_mechanism",
    "mrs_penalized_mean_mechanism",
    "mrs_penalized_mean_sensitivity",
    "mrs_penalized_mean_sigma",
    "mrs_shrinkage",
    "mrs_sup_bound",
    "mrs_sup_function",
    "scaled_mean_coefficients",
]

#: Noise calibrations: ``classical`` ``c(delta) Delta / epsilon`` (epsilon <= 1 only)
#: and ``analytic`` (Balle & Wang 2018, exact for every epsilon).
CALIBRATIONS = ("classical", "analytic")
#: Sensitivity bounds of MRS Theorem 4.1.
SENSITIVITY_BOUNDS = ("closed-form", "spectral")
#: MRS's kernel C3 (Matérn 3/2, ``(1 + sqrt(3)|t-s|/rho) exp(-sqrt(3)|t-s|/rho)``) at
#: its PCV optimum rho = 0.25 (with phi = 0.005, MRS Table 2). Its eigenvalues decay
#: like j^-4, so on a 100-point grid all 100 components are usable and the CM
#: series of a difference of penalised means visibly converges past lambda_j ~ phi
#: (their Gaussian kernel C1 keeps only ~20 components above round-off).
_DEFAULT_RHO = 0.25
_REFERENCE = "Mirshani, Reimherr & Slavkovic (2019)"


# ------------------------------------------------------------------ validation


def check_eta_phi(eta, phi) -> tuple[float, float]:
    """Check MRS's penalty power ``eta >= 1`` and penalty weight ``phi > 0``.

    Args:
        eta: the penalty power.
        phi: the penalty weight.

    Returns:
        ``(eta, phi)`` as floats.

    Raises:
        ValueError, TypeError: naming the bad argument.
    """
    eta = check_number(
        "eta",
        eta,
        low=1.0,
        inclusive=True,
        hint=" (MRS Theorem 4.1 penalises with C^eta, eta >= 1)",
    )
    phi = check_number("phi", phi, low=0.0, inclusive=False, hint=" (the penalty weight)")
    return eta, phi


def default_basis(
    kernel: Kernel | None = None, grid_size: int = 100, n_components: int | None = None
) -> KarhunenLoeveBasis:
    """The Karhunen–Loève basis used when a builder is given no ``basis``.

    Args:
        kernel: the noise covariance kernel; by default MRS's Matérn 3/2 kernel
            ``C3`` with ``rho = 0.25`` (its PCV optimum with ``phi = 0.005``,
            MRS Table 2), i.e. ``Matern(1.5, 0.25)``.
        grid_size: points of the uniform midpoint grid on [0, 1].
        n_components: components kept (default: every eigenvalue above
            ``1e-10 lambda_1``, see :func:`dpaudit.model.spaces.kl_basis`).
    """
    kernel = Matern(1.5, _DEFAULT_RHO) if kernel is None else kernel
    return kl_basis(kernel, uniform_grid(check_count("grid_size", grid_size)), n_components)


def enforce_l2_bound(curves, grid, tau: float, out_of_bound: str = "reject") -> jax.Array:
    r"""Curves ``(n, m)`` on ``grid`` with every L2 norm at most ``tau``.

    ``||X_i||_{L2} = (sum_a w_a X_i(x_a)^2)^(1/2)`` with the grid's quadrature
    weights. ``"clip"`` rescales ``X_i <- X_i min(1, tau/||X_i||)``;
    ``"reject"`` raises on a norm above ``tau (1 + ROUNDING_SLACK)`` and
    rescales the rounding-level excess below it. Inside ``jit`` (traced data)
    "reject" cannot raise: it turns an offending curve into NaN, so the
    release density is NaN rather than silently wrong.

    Args:
        curves, grid, tau, out_of_bound: the ``(n, m)`` curves, their grid, the
            public L2 bound and ``"reject"`` or ``"clip"``.

    Returns:
        The curves, rescaled onto the ball where needed.

    Raises:
        ValueError: on a shape that is not ``(n, grid.size)``, NaN/inf, or (in
            "reject" mode) a curve whose norm exceeds ``tau``.
    """
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    # Concrete data are checked in numpy: no JAX op is compiled per new data shape.
    xp = np if is_concrete(curves) else jnp
    x = xp.asarray(curves, dtype=np.float64)
    m = grid.size
    if x.ndim != 2 or x.shape[1] != m:
        raise ValueError(
            f"curves have shape {tuple(x.shape)} but must be (n, {m}): one row of values at the "
            f"{m} grid points per record."
        )
    check_finite("curves", x)
    norms = xp.sqrt(xp.sum(xp.asarray(grid.weights) * x * x, axis=-1))
    factor = xp.where(norms > tau, tau / xp.where(norms > 0, norms, 1.0), 1.0)
    if out_of_bound == "reject":
        too_long = norms > tau * (1.0 + ROUNDING_SLACK)
        if xp is np:
            if np.any(too_long):
                worst = int(np.argmax(norms))
                raise ValueError(
                    f"curve {worst} has L2 norm {norms[worst]:.6g} > tau = {tau:g}; the data "
                    "bound must hold for every record (rescale the data, raise the public tau, "
                    "or build the mechanism with out_of_bound='clip')."
                )
        else:
            factor = jnp.where(too_long, jnp.nan, factor)
    return x * factor[:, None]


def check_curve_count(curves: jax.Array, n: int) -> None:
    """Check that a dataset of curves has the public number of records ``n``.

    Args:
        curves: the curves, one per row.
        n: the number the mechanism was built for.

    Raises:
        ValueError: if the row count differs (``n`` is public under replace-one adjacency).
    """
    if curves.shape[0] != n:
        raise ValueError(
            f"the dataset has {curves.shape[0]} records but the mechanism was built for n = {n} "
            "(n is public under replace-one adjacency)."
        )


# ------------------------------------------------------------ summary and bounds


def mrs_shrinkage(eigenvalues, eta: float, phi: float) -> jax.Array:
    """Shrinkage factors ``lambda_j^eta / (lambda_j^eta + phi)`` of MRS eq. (2).

    Args:
        eigenvalues: the ``lambda_j`` of the covariance.
        eta: the penalty power.
        phi: the penalty weight.

    Returns:
        The factors, the shape of ``eigenvalues``.
    """
    lam_eta = jnp.asarray(eigenvalues, dtype=jnp.float64) ** eta
    return lam_eta / (lam_eta + phi)


def mrs_penalized_mean_coefficients(
    curves,
    basis: KarhunenLoeveBasis,
    *,
    eta: float,
    phi: float,
    tau: float | None = None,
    out_of_bound: str = "reject",
) -> jax.Array:
    r"""Eigen-coefficients of the MRS penalised mean (MRS eq. 2).

    ``hat mu_j = lambda_j^eta / (lambda_j^eta + phi) * <bar X, v_j>`` for
    ``j = 1..K``, the minimiser of
    ``(1/N) sum_i ||X_i - m||^2 + phi sum_j m_j^2 / lambda_j^eta``.

    Args:
        curves: ``(n, m)`` grid values of the records.
        basis: eigenbasis of the noise covariance ``C`` on the grid.
        eta: power of the penalty operator ``C^eta`` (>= 1).
        phi: penalty weight (> 0).
        tau: public bound on ``||X_i||_{L2}``; ``None`` skips the bound (for a
            plain estimate; the mechanisms always pass it).
        out_of_bound: ``"reject"`` or ``"clip"`` (see :func:`enforce_l2_bound`).

    Returns:
        ``(K,)`` coefficients.

    Example:
        >>> from dpaudit.model.spaces import brownian_motion_basis, uniform_grid
        >>> b = brownian_motion_basis(uniform_grid(8), 2)
        >>> x = jnp.stack([b.eigenfunctions[:, 0], -b.eigenfunctions[:, 1]])
        >>> c = mrs_penalized_mean_coefficients(x, b, eta=1.0, phi=1.0)
        >>> [round(float(v), 4) for v in c / mrs_shrinkage(b.eigenvalues, 1.0, 1.0)]
        [0.5, -0.5]
    """
    basis = check_basis(basis)
    eta, phi = check_eta_phi(eta, phi)
    if tau is None:
        x = curves
        if len(np.shape(x)) != 2 or np.shape(x)[1] != basis.grid_size:
            raise ValueError(
                f"curves have shape {tuple(np.shape(x))} but must be (n, {basis.grid_size}): one "
                "row of grid values per record."
            )
        check_finite("curves", x)
    else:
        tau = check_number("tau", tau, low=0.0, inclusive=False)
        x = enforce_l2_bound(curves, basis.grid, tau, out_of_bound)
    shrinkage = mrs_shrinkage(basis.eigenvalues, eta, phi)
    return scaled_mean_coefficients(x, shrinkage, basis.grid.weights, basis.eigenfunctions)


@jax.jit
def scaled_mean_coefficients(curves, multipliers, weights, eigenfunctions) -> jax.Array:
    """``multipliers_k <bar X, phi_k>`` for curves ``(n, m)``: the jitted core of the summaries.

    ``<bar X, phi_k> = sum_a w_a bar X(x_a) phi_k(x_a)``. One compiled program per
    shape, shared by every mechanism built on bases of that size.

    Args:
        curves: ``(n, m)`` grid values.
        multipliers: ``(K,)`` factors applied to the mean's coefficients.
        weights: ``(m,)`` quadrature weights of the grid.
        eigenfunctions: ``(m, K)`` grid values of the basis.

    Returns:
        ``(K,)`` scaled coefficients.
    """
    mean = jnp.mean(jnp.asarray(curves, dtype=jnp.float64), axis=0)
    return multipliers * ((mean * weights) @ eigenfunctions)


@jax.jit
def _scaled_mean_grid_values(curves, multipliers, weights, eigenfunctions) -> jax.Array:
    return scaled_mean_coefficients(curves, multipliers, weights, eigenfunctions) @ eigenfunctions.T


def mrs_penalized_mean(
    curves,
    basis: KarhunenLoeveBasis,
    *,
    eta: float,
    phi: float,
    tau: float | None = None,
    out_of_bound: str = "reject",
) -> jax.Array:
    """Grid values of the MRS penalised mean, ``sum_j hat mu_j v_j``; shape ``(m,)``.

    See :func:`mrs_penalized_mean_coefficients` for the formula and arguments.

    Args:
        curves: ``(n, m)`` grid values on the basis grid.
        basis: the eigenbasis of the covariance.
        eta, phi: the penalty power and weight.
        tau: the public L2 bound (``None``: no bound enforced).
        out_of_bound: ``"reject"`` or ``"clip"`` curves above ``tau``.

    Returns:
        ``(m,)`` grid values.
    """
    coefficients = mrs_penalized_mean_coefficients(
        curves, basis, eta=eta, phi=phi, tau=tau, out_of_bound=out_of_bound
    )
    return coefficients @ basis.eigenfunctions.T


def mrs_sup_function(x, eta: float, phi: float):
    """``f(x) = x^(2 eta - 1) / (x^eta + phi)^2``, the per-eigenvalue factor of MRS Thm 4.1.

    Evaluated in log space, ``exp((2eta-1) log x - 2 log(x^eta + phi))``, so that
    large ``eta`` or extreme eigenvalues neither overflow nor underflow to 0/0.

    Args:
        x: eigenvalues (> 0).
        eta, phi: the penalty power and weight.

    Returns:
        ``f(x)``, the shape of ``x``.
    """
    log_x = np.log(np.asarray(x, dtype=float))
    return np.exp((2 * eta - 1) * log_x - 2 * np.logaddexp(eta * log_x, math.log(phi)))


def mrs_sup_bound(eta: float, phi: float) -> float:
    r"""``sup_{x > 0} x^(2eta-1)/(x^eta+phi)^2 = phi^(-1/eta) (2eta-1)^(2-1/eta) / (4 eta^2)``.

    Attained at ``x = ((2 eta - 1) phi)^(1/eta)`` (MRS proof of Thm 4.1, docs/oracles.md#oracle-mrs-sensitivity).

    Args:
        eta: the penalty power (>= 1).
        phi: the penalty weight.

    Returns:
        The supremum.

    Example:
        >>> mrs_sup_bound(1.0, 0.25)  # 1 / (4 phi) at eta = 1
        1.0
    """
    eta, phi = check_eta_phi(eta, phi)
    return phi ** (-1.0 / eta) * (2 * eta - 1) ** (2 - 1.0 / eta) / (4 * eta**2)


def mrs_penalized_mean_sensitivity(
    n: int, tau: float, eta: float, phi: float, eigenvalues=None
) -> float:
    r"""Cameron–Martin sensitivity bound of the penalised mean (MRS Theorem 4.1).

    * ``eigenvalues=None`` (closed form): ``Delta = (tau / n) phi^(-1/(2eta))
      (2eta-1)^(1-1/(2eta)) / eta``, the bound Theorem 4.2 calibrates with.
    * with eigenvalues (spectral): ``Delta = (2 tau / n) max_j
      lambda_j^(eta-1/2) / (lambda_j^eta + phi)``, tight (attained by
      ``X_1 = tau v_j``, ``X_1' = -tau v_j``) for the truncated basis.

    Args:
        n: the number of curves.
        tau: the public L2 bound.
        eta, phi: the penalty power and weight.
        eigenvalues: when given, the sup runs over them (the spectral bound) instead of ``x > 0``.

    Returns:
        ``Delta``.

    Raises:
        ValueError: for ``n`` not a positive integer, ``tau <= 0``, ``eta < 1``,
            ``phi <= 0`` or invalid eigenvalues.

    Example:
        >>> mrs_penalized_mean_sensitivity(100, 1.0, 1.0, 0.01)  # tau / (n sqrt(phi))
        0.1
    """
    n = check_count("n", n)
    tau = check_number("tau", tau, low=0.0, inclusive=False)
    eta, phi = check_eta_phi(eta, phi)
    if eigenvalues is None:
        sup = mrs_sup_bound(eta, phi)
    else:
        lam = np.asarray(eigenvalues, dtype=float)
        if lam.ndim != 1 or lam.size == 0 or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
            raise ValueError("eigenvalues must be a non-empty 1-D array of finite numbers > 0.")
        sup = float(np.max(mrs_sup_function(lam, eta, phi)))
    return 2.0 * tau / n * math.sqrt(sup)


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, calibration: str) -> float:
    """Noise multiplier of the Gaussian mechanism: classical ``c(delta) Delta / epsilon`` or analytic.

    Args:
        sensitivity: ``Delta``.
        epsilon, delta: the claim.
        calibration: ``"classical"`` or ``"analytic"``.

    Returns:
        ``sigma``.

    Raises:
        ValueError: for ``calibration="classical"`` with ``epsilon > 1`` (the
            classical bound is proven only for ``epsilon <= 1`` and fails for
            large epsilon, see docs/paper-errors.md#mrs-epsilon-at-most-one), or invalid inputs.
    """
    check_choice("calibration", calibration, CALIBRATIONS)
    epsilon = check_number("epsilon", epsilon, low=0.0, inclusive=False)
    if calibration == "analytic":
        return analytic_gaussian_sigma(sensitivity, epsilon, delta)
    if epsilon > 1:
        raise ValueError(
            f"the classical calibration sigma = sqrt(2 log(2/delta)) Delta / epsilon is proven "
            f"only for epsilon <= 1 (MRS Thm 3.2, docs/paper-errors.md#mrs-epsilon-at-most-one), got epsilon = {epsilon:g}; use "
            "calibration='analytic'."
        )
    return classical_gaussian_multiplier(delta) * float(sensitivity) / epsilon


def mrs_penalized_mean_sigma(
    n: int,
    tau: float,
    eta: float,
    phi: float,
    epsilon: float,
    delta: float,
    *,
    eigenvalues=None,
    calibration: str = "classical",
) -> float:
    r"""Noise multiplier of the penalised-mean release.

    With the closed-form sensitivity and the classical calibration this is MRS
    Theorem 4.2 exactly:
    ``sigma^2 = 2 log(2/delta)/epsilon^2 * tau^2 (2eta-1)^(2-1/eta) / (N^2 phi^(1/eta) eta^2)``.

    Args:
        n, tau, eta, phi, eigenvalues: as :func:`mrs_penalized_mean_sensitivity`.
        epsilon, delta: the claim.
        calibration: ``"classical"`` or ``"analytic"``.

    Returns:
        ``sigma``.

    Example:
        >>> s = mrs_penalized_mean_sigma(100, 1.0, 1.0, 0.01, 1.0, 0.1)
        >>> round(s**2, 10) == round(2 * math.log(20) * 1.0 / (100**2 * 0.01), 10)
        True
    """
    sensitivity = mrs_penalized_mean_sensitivity(n, tau, eta, phi, eigenvalues)
    return gaussian_sigma(sensitivity, epsilon, delta, calibration)


# ------------------------------------------------------------ linear functionals


def linear_functional_matrix(functionals, basis: KarhunenLoeveBasis) -> jax.Array:
    """``G_lk = <g_l, v_k>`` for functionals given by grid values ``(p, m)``; shape ``(p, K)``.

    For ``f`` in the span of the basis, ``(<f, g_l>)_l = G f_coefficients``.

    Args:
        functionals: ``(p, m)`` grid values of ``g_1..g_p``.
        basis: the eigenbasis.

    Returns:
        ``G``, ``(p, K)``.

    Raises:
        ValueError: if ``functionals`` is not ``(p, m)`` or holds NaN/inf.
    """
    basis = check_basis(basis)
    g = jnp.asarray(functionals, dtype=jnp.float64)
    if g.ndim != 2 or g.shape[1] != basis.grid_size or g.shape[0] == 0:
        raise ValueError(
            f"functionals have shape {tuple(g.shape)} but must be (p, {basis.grid_size}): one row "
            "of grid values per functional g_l."
        )
    return basis.project(g)


def mrs_linear_functionals(
    curves,
    basis: KarhunenLoeveBasis,
    functionals,
    *,
    eta: float,
    phi: float,
    tau: float | None = None,
    out_of_bound: str = "reject",
) -> jax.Array:
    """``(<hat mu, g_l>)_{l=1..p}`` for the MRS penalised mean ``hat mu``; shape ``(p,)``.

    Args:
        curves, basis, eta, phi, tau, out_of_bound: as :func:`mrs_penalized_mean`.
        functionals: ``(p, m)`` grid values of ``g_1..g_p``.

    Returns:
        ``(p,)`` values.
    """
    coefficients = mrs_penalized_mean_coefficients(
        curves, basis, eta=eta, phi=phi, tau=tau, out_of_bound=out_of_bound
    )
    return linear_functional_matrix(functionals, basis) @ coefficients


# ------------------------------------------------------------------- builders


def _penalized_setup(
    *,
    n,
    epsilon,
    delta,
    tau,
    eta,
    phi,
    basis,
    kernel,
    grid_size,
    n_components,
    sensitivity_bound,
    calibration,
    out_of_bound,
):
    n = check_count("n", n)
    epsilon = check_number("epsilon", epsilon, low=0.0, inclusive=False)
    tau = check_number("tau", tau, low=0.0, inclusive=False)
    eta, phi = check_eta_phi(eta, phi)
    check_choice("sensitivity_bound", sensitivity_bound, SENSITIVITY_BOUNDS)
    check_choice("calibration", calibration, CALIBRATIONS)
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    if basis is None:
        basis = default_basis(kernel, grid_size, n_components)
    else:
        basis = check_basis(basis)
        if n_components is not None:
            basis = basis.truncate(n_components)
    eigenvalues = basis.eigenvalues if sensitivity_bound == "spectral" else None
    sensitivity = mrs_penalized_mean_sensitivity(n, tau, eta, phi, eigenvalues)
    sigma = gaussian_sigma(sensitivity, epsilon, delta, calibration)

    shrinkage = jnp.asarray(mrs_shrinkage(basis.eigenvalues, eta, phi))
    arrays = (shrinkage, basis.grid.weights, basis.eigenfunctions)

    def coefficients(data):
        x = enforce_l2_bound(data, basis.grid, tau, out_of_bound)
        check_curve_count(x, n)
        return scaled_mean_coefficients(x, *arrays)

    def grid_values(data):
        x = enforce_l2_bound(data, basis.grid, tau, out_of_bound)
        check_curve_count(x, n)
        return _scaled_mean_grid_values(x, *arrays)

    params = {
        "n": n, "epsilon": epsilon, "delta": delta, "tau": tau, "eta": eta, "phi": phi,
        "grid_points": basis.grid_size, "n_components": basis.n_components,
        "sensitivity_bound": sensitivity_bound, "calibration": calibration,
        "out_of_bound": out_of_bound, "sigma": sigma,
    }  # fmt: skip
    theorem = "Thm 4.1 (closed form)" if sensitivity_bound == "closed-form" else "Thm 4.1 (sup_j)"
    calib = "c(delta) Delta/epsilon" if calibration == "classical" else "analytic Gaussian"
    summaries = {"coefficients": coefficients, "grid": grid_values}
    return basis, sensitivity, sigma, summaries, params, f"{theorem}, {calib}"


@jax.jit
def _grid_cm_norm_values(h, weights, eigenfunctions, eigenvalues, rtol):
    h = jnp.asarray(h, dtype=jnp.float64)
    coefficients = (h * weights) @ eigenfunctions
    residual = h - coefficients @ eigenfunctions.T

    def size(v):
        return jnp.sqrt(jnp.sum(weights * v * v, axis=-1))

    cm = cameron_martin_norm(coefficients, eigenvalues)
    return jnp.where(size(residual) <= rtol * size(h), cm, jnp.inf)


def _grid_cm_norm(basis: KarhunenLoeveBasis, rtol: float = 1e-9):
    """Cameron–Martin norm of grid values ``(..., m)``; ``inf`` when they leave the basis span.

    A difference of summaries with a part off the span would make the two
    releases mutually singular (MRS Thm 3.1), so it must not be projected away.
    """
    arrays = (basis.grid.weights, basis.eigenfunctions, basis.eigenvalues)
    return lambda h: _grid_cm_norm_values(h, *arrays, rtol)


_PENALIZED_EXAMPLE = {"n": 100, "epsilon": 1.0, "delta": 0.1, "tau": 1.0, "eta": 1.0, "phi": 0.005}


@register("mrs-penalized-mean", example=_PENALIZED_EXAMPLE)
def mrs_penalized_mean_mechanism(
    n: int = 100,
    epsilon: float = 1.0,
    delta: float = 0.1,
    tau: float = 1.0,
    *,
    eta: float = 1.0,
    phi: float = 0.005,
    basis: KarhunenLoeveBasis | None = None,
    kernel: Kernel | None = None,
    grid_size: int = 100,
    n_components: int | None = None,
    sensitivity_bound: str = "closed-form",
    calibration: str = "classical",
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""MRS penalised mean function released whole on a grid with Gaussian-process noise.

    ``tilde mu = hat mu + sigma Z`` on the grid, ``Z ~ GP(0, C)`` truncated to the
    basis (MRS Thm 3.3, Thm 4.2), with ``hat mu`` the penalised mean of the
    module docstring and ``sigma = c(delta) Delta / epsilon`` (classical) or the
    analytic calibration, ``Delta`` from Theorem 4.1.

    Args:
        n: number of records (public).
        epsilon, delta: the claimed privacy level (``epsilon <= 1`` for the
            classical calibration).
        tau: public bound on every ``||X_i||_{L2}``.
        eta: penalty power (>= 1); ``eta > 1`` makes the privacy error ``o(1/n)``.
        phi: penalty weight (> 0).
        basis: eigenbasis of the noise covariance; by default
            :func:`default_basis` of ``kernel``, ``grid_size``, ``n_components``.
        kernel, grid_size, n_components: used when ``basis`` is not given
            (``n_components`` also truncates a given basis).
        sensitivity_bound: ``"closed-form"`` (Thm 4.1's eta-only bound, used by
            Thm 4.2) or ``"spectral"`` (its sup over the basis eigenvalues; tight).
        calibration: ``"classical"`` or ``"analytic"``.
        out_of_bound: ``"reject"`` or ``"clip"`` records with ``||X_i|| > tau``.

    Returns:
        A :class:`~dpaudit.Mechanism` whose data are ``(n, m)`` curves on the
        basis grid, whose summary is ``hat mu`` on the grid and whose
        sensitivity norm is the Cameron–Martin norm of ``C``.

    Raises:
        ValueError / TypeError: one sentence naming the bad parameter.
    """
    # locals() here is exactly the keyword arguments of the builder
    basis, sensitivity, sigma, summaries, params, how = _penalized_setup(**locals())
    noise = GaussianProcessNoise(basis.eigenvalues, sigma)
    summary = summaries["grid"]

    return summary_release(
        "mrs-penalized-mean",
        summary,
        lambda loc: GridNoise(noise, basis, loc=loc),
        epsilon=params["epsilon"],
        sensitivity=sensitivity,
        sensitivity_norm="cameron-martin",
        reference=f"{_REFERENCE}, Thm 3.3 with {how}",
        delta=delta,
        difference_norm=_grid_cm_norm(basis),
        params=params,
        description="Penalised mean function (penalty phi ||m||^2 in the Cameron-Martin norm of C^eta) of "
        "curves bounded in L2 by tau, released on the grid with Gaussian-process noise "
        "sigma Z, Z ~ GP(0, C) (MRS Thm 3.3, 4.1, 4.2).",
    )


@register("mrs-penalized-mean-coefficients", example=_PENALIZED_EXAMPLE)
def mrs_penalized_mean_coefficients_mechanism(
    n: int = 100,
    epsilon: float = 1.0,
    delta: float = 0.1,
    tau: float = 1.0,
    *,
    eta: float = 1.0,
    phi: float = 0.005,
    basis: KarhunenLoeveBasis | None = None,
    kernel: Kernel | None = None,
    grid_size: int = 100,
    n_components: int | None = None,
    sensitivity_bound: str = "closed-form",
    calibration: str = "classical",
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""MRS penalised mean released as its eigen-coefficients with Gaussian noise.

    Coefficient ``j`` is ``N(hat mu_j, sigma^2 lambda_j)``, independent over
    ``j = 1..K``: the law of the coefficients of ``mrs-penalized-mean`` (a
    measurable post-processing, MRS Cor. 3.1). Arguments as for
    :func:`mrs_penalized_mean_mechanism`; the summary is ``(hat mu_j)_j`` and the
    sensitivity norm is ``||h||_C = (sum_j h_j^2 / lambda_j)^(1/2)``.

    Args:
        n, epsilon, delta, tau, eta, phi, basis, kernel, grid_size, n_components,
            sensitivity_bound, calibration, out_of_bound: as
            :func:`mrs_penalized_mean_mechanism`.

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    # locals() here is exactly the keyword arguments of the builder
    basis, sensitivity, sigma, summaries, params, how = _penalized_setup(**locals())
    eigenvalues = basis.eigenvalues
    coefficients = summaries["coefficients"]

    return summary_release(
        "mrs-penalized-mean-coefficients",
        coefficients,
        lambda loc: GaussianProcessNoise(eigenvalues, sigma, loc=loc),
        epsilon=params["epsilon"],
        sensitivity=sensitivity,
        sensitivity_norm="cameron-martin",
        reference=f"{_REFERENCE}, Thm 3.3 / Cor. 3.1 with {how}",
        delta=delta,
        difference_norm=lambda h: cameron_martin_norm(h, eigenvalues),
        params=params,
        description="Eigen-coefficients of the MRS penalised mean with independent N(0, sigma^2 lambda_j) "
        "noise: the coefficient view of the whole-function Gaussian-process release.",
    )


def _default_functionals(grid) -> np.ndarray:
    """Indicators of [0, 1/3), [1/3, 2/3), [2/3, 1]: ``<f, g_l>`` integrates f over a third."""
    t = np.asarray(grid.points)[:, 0]
    return np.stack([(t >= a) & (t < a + 1 / 3) for a in (0.0, 1 / 3, 2 / 3)]).astype(float)


@register("mrs-linear-functionals", example=_PENALIZED_EXAMPLE)
def mrs_linear_functionals_mechanism(
    n: int = 100,
    epsilon: float = 1.0,
    delta: float = 0.1,
    tau: float = 1.0,
    *,
    functionals=None,
    eta: float = 1.0,
    phi: float = 0.005,
    basis: KarhunenLoeveBasis | None = None,
    kernel: Kernel | None = None,
    grid_size: int = 100,
    n_components: int | None = None,
    sensitivity_bound: str = "closed-form",
    calibration: str = "classical",
    out_of_bound: str = "reject",
    cond_max: float = 1e10,
) -> Mechanism:
    r"""MRS penalised mean released through finitely many linear functionals.

    ``T(tilde mu) = (<tilde mu, g_l>)_{l=1..p} ~ N(G hat mu, sigma^2 G Lambda G^T)``
    with ``G_lk = <g_l, v_k>``, ``Lambda = diag(lambda_k)`` and the ``sigma`` of
    the whole-function release (MRS Thm 3.2). The sensitivity norm on ``R^p`` is
    the Mahalanobis norm ``(h^T (G Lambda G^T)^{-1} h)^(1/2)``, which equals the
    Cameron–Martin norm of the H-orthogonal projection of the difference of
    penalised means (proof of Thm 3.2), so it never exceeds ``Delta``.

    Args:
        functionals: ``(p, m)`` grid values of ``g_1..g_p``; by default the
            indicators of the three thirds of [0, 1] (integrals over thirds).
        cond_max: largest allowed condition number of ``G Lambda G^T``; the
            functionals must be linearly independent on the span of the basis.
        Others: as for :func:`mrs_penalized_mean_mechanism`.

    Raises:
        ValueError: for functionals of the wrong shape or linearly dependent
            ones (on the span of the basis), and the errors of the other builders.
    """
    basis, sensitivity, sigma, summaries, params, how = _penalized_setup(
        n=n,
        epsilon=epsilon,
        delta=delta,
        tau=tau,
        eta=eta,
        phi=phi,
        basis=basis,
        kernel=kernel,
        grid_size=grid_size,
        n_components=n_components,
        sensitivity_bound=sensitivity_bound,
        calibration=calibration,
        out_of_bound=out_of_bound,
    )
    if functionals is None:
        functionals = _default_functionals(basis.grid)
    g = linear_functional_matrix(functionals, basis)
    check_finite("functionals", g)
    gram = (g * basis.eigenvalues) @ g.T
    spectrum = np.linalg.eigvalsh(np.asarray(gram))
    if not spectrum[0] > spectrum[-1] / cond_max:
        raise ValueError(
            f"the {g.shape[0]} functionals are linearly dependent on the span of the "
            f"{basis.n_components} basis functions (G Lambda G^T has condition number above "
            f"{cond_max:g}); drop redundant functionals or use more components."
        )
    chol = jnp.linalg.cholesky(gram)
    scale_tril = sigma * chol
    whitening = float64_array(np.linalg.inv(np.asarray(chol)))

    coefficients = summaries["coefficients"]

    def summary(data):
        return g @ coefficients(data)

    def mahalanobis(h):
        white = jnp.asarray(h, dtype=jnp.float64) @ whitening.T
        return jnp.sqrt(jnp.sum(white * white, axis=-1))

    def model(data):
        # scale_tril is a Cholesky factor checked above; numpyro's runtime check of it would
        # compile a dozen programs per data shape and adds nothing.
        release = dist.MultivariateNormal(summary(data), scale_tril=scale_tril, validate_args=False)
        numpyro.sample("release", release)

    return Mechanism(
        name="mrs-linear-functionals",
        model=model,
        claim=Claim(
            epsilon=params["epsilon"],
            delta=delta,
            sensitivity_norm="cameron-martin",
            sensitivity=sensitivity,
            reference=f"{_REFERENCE}, Thm 3.2 with {how}",
        ),
        summary=summary,
        difference_norm=mahalanobis,
        params={**params, "n_functionals": int(g.shape[0])},
        description=(
            "Linear functionals <tilde mu, g_l> of the MRS Gaussian-process release of the "
            "penalised mean: a p-variate normal with covariance sigma^2 G Lambda G^T (MRS Thm 3.2)."
        ),
    )
