r"""Lin & Reimherr's ICLP mechanisms for a mean function: ICLP-QR, ICLP-AR and FRL.

Mathematics: docs/papers/lr.md; corrections: docs/paper-errors.md (items 1–8 and 13); test oracles: docs/oracles.md. Paper:
Lin & Reimherr, *Pure Differential Privacy for Functional Summaries via a
Laplace-like Process* (arXiv v2; journal numbering in brackets).

**Setting.** ``H = L2[0, 1]`` represented on a grid; the ICLP covariance
operator ``C`` is a :class:`~dpaudit.model.spaces.KarhunenLoeveBasis` with
eigenpairs ``(lambda_j, phi_j)``, ``j = 1..K``, L2-normalised by the grid's
quadrature (``lambda_k = mu_k / m``, ``phi_k = sqrt(m) v_k`` on the uniform
midpoint grid, see docs/paper-errors.md#lr-discretization-scale). By default it is LR's Matérn kernel ``nu = 3/2``,
``rho = 0.1`` (``lambda_j ~ j^(-4)``) on 100 midpoint points, all components.
A dataset is ``n`` curves, an ``(n, m)`` array of grid values, with
``||X_i||_{L2} <= tau`` for a public ``tau`` (Assumption 1 [10]); a curve
above it is rejected (``out_of_bound="reject"``) or rescaled onto the ball,
``X_i <- X_i min(1, tau/||X_i||)`` (``out_of_bound="clip"``, a claimed step
of the mechanism). ``n`` is public (replace-one adjacency).

**Summaries** (Sec. 4.2, Thm 6 [12]), with ``bar X_j = <bar X, phi_j>``:

* ICLP-QR: ``argmin_f (1/n) sum_i ||X_i - f||^2 + psi ||f||^2_{C^eta}``, i.e.
  ``hat mu_j = lambda_j^eta / (lambda_j^eta + psi) bar X_j``.
* ICLP-AR: ``argmin_f (1/n) sum_i ||X_i - f||^2 + psi ||f||_{1,C^eta}``, i.e.
  soft-thresholding ``hat mu_j = sgn(bar X_j) (|bar X_j| - psi/(2 lambda_j^(eta/2)))_+``
  (see docs/paper-errors.md#lr-ar-typos: ``sgn(x)``, and the threshold ``psi / (2 lambda_j^(eta/2))``).
* FRL: ``hat mu_j = bar X_j`` for ``j <= M``.

**Sensitivities** (every bound uses ``||(bar X - bar X')_j||_{l2} <= 2 tau / n``):

* QR, ``1,C`` norm, with ``w_j = lambda_j^(eta-1/2) / (lambda_j^eta + psi)``:
  printed ``(2 tau/n) sum_j w_j`` (Thm 6 [12], used to reproduce the paper) or
  ``(2 tau/n) (sum_j w_j^2)^(1/2)`` (Cauchy–Schwarz, see docs/paper-errors.md#lr-loose-bounds), which is the exact
  supremum on a truncated basis (attained by ``X_1 = tau w/||w||``, ``X_1' = -X_1``).
  The series converges iff ``eta > 1/2 + 1/beta`` under eigenvalue decay
  ``lambda_j ~ j^(-beta)`` (see docs/paper-errors.md#lr-qr-eta-condition; the theorem states ``eta > 1 + 1/beta``).
* AR, ``1,C`` norm: ``J* = min{j : tau <= psi / (2 lambda_j^(eta/2))}`` (Remark 2
  [13]); every coefficient ``j >= J*`` is exactly zero and soft-thresholding is
  1-Lipschitz, so ``Delta <= (2 tau/n) sum_{j<J*} lambda_j^(-1/2)`` ("corrected",
  see docs/paper-errors.md#lr-ar-sensitivity-weights) or ``(2 tau/n) (sum_{j<J*} 1/lambda_j)^(1/2)`` (Cauchy–Schwarz). The
  printed ``(2 tau/n) sum_{j<=J*} lambda_j^(-eta/2)`` is kept as
  :func:`ar_mean_sensitivity_printed`; it bounds the truth only when every
  ``lambda_j <= 1`` and fails otherwise.
* FRL, ``l1`` norm of the ``M`` coefficients: printed ``2 M tau / n`` or
  Cauchy–Schwarz ``2 sqrt(M) tau / n`` (see docs/paper-errors.md#lr-loose-bounds).

**Noise** (Def. 2, Thm 4 [8], Alg. 1; see docs/paper-errors.md#lr-iclp-sigma-constant). ICLP with unit-variance
Laplace components and ``sigma = sqrt(2) Delta / epsilon``
(:func:`dpaudit.model.noise.iclp_sigma`): coefficient ``j`` of the release is
``Laplace(hat mu_j, Delta sqrt(lambda_j) / epsilon)``, variance
``2 Delta^2 lambda_j / epsilon^2``; the privacy loss between neighbours is at
most ``sqrt(2) ||h||_{1,C} / sigma <= epsilon``. FRL adds i.i.d.
``Laplace(Delta / epsilon)`` to each of its ``M`` coefficients. Expected
squared L2 noise: ``2 Delta^2 tr(C) / epsilon^2`` (ICLP, see docs/paper-errors.md#lr-privacy-error-constant) and
``2 M Delta^2 / epsilon^2`` (FRL).

**Privacy-safe selection** (PSS, Sec. 4.4, Cor. 1 [15]; data-free, constants 1
after normalising the curves to ``tau = 1`` and ``tr(C) = 1``):
``eta = 1 + 2/beta``; QR ``psi = (n epsilon^2)^(-eta beta/(beta+2))`` (privacy error
of the order of the statistical error); FRL ``M`` in
``[n^(1/(eta beta)), n^(1/3)]``; AR ``psi = (n epsilon)^(-2 eta beta/(3 eta beta + 4))``
(our balance of Thm 7's AR terms; the paper gives no AR rule).

Private cross-validation of ``psi`` (a tuning that reads the data) lives in
:mod:`mechanisms.iclp.cross_validation`.

**Worst-case neighbours.** :func:`qr_worst_case_record` and
:func:`frl_worst_case_record` give the record ``X_1`` whose replacement by
``-X_1`` attains the Cauchy–Schwarz sensitivity bounds exactly (for audits).

Registered mechanisms (all pure epsilon-DP, replace-one):

* ``iclp-qr-mean`` — ICLP-QR mean, released as grid values
  (:class:`~dpaudit.model.noise.GridNoise` of :class:`~dpaudit.model.noise.ICLPNoise`, Alg. 1 step 4).
* ``iclp-ar-mean`` — ICLP-AR mean, released as grid values.
* ``frl-mean`` — FRL baseline, released as the ``M`` coefficients (event ``(M,)``).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit import Mechanism, register
from dpaudit.core.checks import check_choice, check_count, check_finite, check_number, is_concrete
from dpaudit.model.noise import GridNoise, ICLPNoise, iclp_sigma
from dpaudit.model.spaces import (
    Exponential,
    Gaussian,
    KarhunenLoeveBasis,
    Matern,
    kl_basis,
    uniform_grid,
)
from dpaudit.model.spaces.grids import Grid
from mechanisms.common import (
    OUT_OF_BOUND,
    ROUNDING_SLACK,
    check_basis,
    laplace_release,
    summary_release,
)

__all__ = [
    "AR_BOUNDS",
    "DEFAULT_KERNEL",
    "OUT_OF_BOUND",
    "QR_BOUNDS",
    "ROUNDING_SLACK",
    "ar_active_components",
    "ar_mean",
    "ar_mean_sensitivity",
    "ar_mean_sensitivity_printed",
    "ar_threshold",
    "check_ar_eta",
    "check_basis",
    "check_eigenvalues",
    "check_frl_components",
    "check_psi",
    "check_qr_eta",
    "check_records",
    "curve_norms",
    "default_basis",
    "enforce_l2_bound",
    "frl_mean",
    "frl_mean_mechanism",
    "frl_mean_sensitivity",
    "frl_worst_case_record",
    "grid_one_c_norm",
    "iclp_ar_mean",
    "iclp_grid_release",
    "iclp_qr_mean",
    "kernel_basis",
    "kernel_decay_rate",
    "pss_ar_psi",
    "pss_eta",
    "pss_frl_components",
    "pss_frl_range",
    "pss_qr_psi",
    "qr_mean",
    "qr_mean_sensitivity",
    "qr_shrinkage",
    "qr_weights",
    "qr_worst_case_record",
    "resolve_beta",
    "soft_threshold",
    "spectral_decay_rate",
]

#: Sensitivity bounds of ICLP-QR and FRL: the paper's and the Cauchy–Schwarz one (see docs/paper-errors.md#lr-loose-bounds).
QR_BOUNDS = ("printed", "cauchy-schwarz")
#: Valid sensitivity bounds of ICLP-AR (see docs/paper-errors.md#lr-ar-sensitivity-weights); the printed one is a separate function.
AR_BOUNDS = ("corrected", "cauchy-schwarz")
REFERENCE = "Lin & Reimherr 2024 (arXiv v2)"
#: LR's ICLP covariance kernel (Sec. 6): Matérn nu = 3/2, rho = 0.1, unit variance.
DEFAULT_KERNEL = Matern(nu=1.5, lengthscale=0.1)
_TINY = 1e-300


# ------------------------------------------------------------------ validation


def check_eigenvalues(eigenvalues) -> np.ndarray:
    """Check a covariance spectrum ``lambda_1 >= lambda_2 >= ... > 0``.

    Args:
        eigenvalues: a 1-D array of eigenvalues, or a basis (its eigenvalues are used).

    Returns:
        The eigenvalues as a float NumPy array.

    Raises:
        ValueError: if they are empty, not 1-D, not finite and > 0, or increasing.
    """
    if isinstance(eigenvalues, KarhunenLoeveBasis):
        eigenvalues = eigenvalues.eigenvalues
    lam = np.asarray(eigenvalues, dtype=float)
    if lam.ndim != 1 or lam.size == 0 or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError("eigenvalues must be a non-empty 1-D array of finite numbers > 0.")
    if np.any(np.diff(lam) > 0):
        raise ValueError("eigenvalues must be non-increasing (lambda_1 >= lambda_2 >= ...).")
    return lam


def check_psi(psi) -> float:
    """Check the penalty weight ``psi``.

    Args:
        psi: the candidate penalty weight.

    Returns:
        ``psi`` as a float.

    Raises:
        ValueError, TypeError: as :func:`dpaudit.core.checks.check_number`.
    """
    return check_number("psi", psi, hint=" (the penalty weight)")


def check_records(records: int, n: int) -> None:
    """Check that a dataset has the public number of records ``n``.

    Args:
        records: the number of records in the dataset.
        n: the number the mechanism was built for.

    Raises:
        ValueError: if they differ (``n`` is public under replace-one adjacency).
    """
    if records != n:
        raise ValueError(
            f"the dataset has {records} records but the mechanism was built for n = {n} "
            "(n is public under replace-one adjacency)."
        )


def check_qr_eta(eta, beta) -> float:
    """Check ICLP-QR's penalty power ``eta`` against the decay rate ``beta``.

    Args:
        eta: the penalty power.
        beta: the eigenvalue decay rate ``lambda_j ~ j^(-beta)``.

    Returns:
        ``eta`` as a float.

    Raises:
        ValueError: unless ``eta > 1/2 + 1/beta`` (the sensitivity series converges).
        TypeError: if ``eta`` is not a number.
    """
    eta = check_number("eta", eta)
    if eta <= 0.5 + 1.0 / beta:
        raise ValueError(
            f"ICLP-QR needs eta > 1/2 + 1/beta = {0.5 + 1.0 / beta:.4g} for its sensitivity series "
            f"sum_j lambda_j^(eta-1/2)/(lambda_j^eta + psi) to converge (LR Thm 6, docs/paper-errors.md#lr-qr-eta-condition; beta = "
            f"{beta:.4g} is the eigenvalue decay rate), got eta = {eta:g}."
        )
    return eta


def check_ar_eta(eta) -> float:
    """Check ICLP-AR's penalty power ``eta >= 1``.

    Args:
        eta: the penalty power.

    Returns:
        ``eta`` as a float.

    Raises:
        ValueError, TypeError: unless ``eta`` is a number >= 1.
    """
    return check_number("eta", eta, low=1.0, inclusive=True, hint=" (ICLP-AR penalises with C^eta)")


# ------------------------------------------------------------------ data bound


def default_basis(grid_size: int = 100, n_components: int | None = None) -> KarhunenLoeveBasis:
    """LR's ICLP covariance: Matérn ``nu = 3/2``, ``rho = 0.1`` on the midpoint grid (Sec. 6).

    ``lambda_j ~ j^(-4)``; ``tr(C) = 1`` (unit variance). Cached.

    Args:
        grid_size: midpoint grid points on ``[0, 1]``.
        n_components: components kept (default: all).

    Returns:
        The :class:`~dpaudit.model.spaces.KarhunenLoeveBasis`.
    """
    return kernel_basis(DEFAULT_KERNEL, grid_size, 1, n_components)


@functools.lru_cache(maxsize=16)
def kernel_basis(kernel, grid_size: int = 100, dim: int = 1, n_components: int | None = None):
    """``kl_basis(kernel, uniform_grid(grid_size, dim), n_components)``, cached (bases are immutable).

    A truncation reuses the cached full basis (the leading eigenpairs do not depend on ``K``).

    Args:
        kernel: the covariance kernel.
        grid_size: grid points per axis.
        dim: the dimension of ``[0, 1]^dim``.
        n_components: components kept (default: every eigenvalue above ``1e-10 lambda_1``).

    Returns:
        The :class:`~dpaudit.model.spaces.KarhunenLoeveBasis`.

    Raises:
        ValueError / TypeError: a bad argument.
    """
    grid_size, dim = check_count("grid_size", grid_size), check_count("dim", dim)
    if n_components is None:
        return kl_basis(kernel, uniform_grid(grid_size, dim))
    full = kernel_basis(kernel, grid_size, dim)
    k = check_count("n_components", n_components)
    if k > full.n_components:
        raise ValueError(
            f"n_components = {k} exceeds the {full.n_components} usable eigenpairs of {kernel!r} "
            f"on {grid_size}^{dim} grid points."
        )
    lam, phi = np.asarray(full.eigenvalues), np.asarray(full.eigenfunctions)
    return KarhunenLoeveBasis(jnp.asarray(lam[:k]), jnp.asarray(phi[:, :k]), full.grid)


def curve_norms(curves, grid: Grid) -> jax.Array:
    """``||X_i||_{L2} = (sum_a w_a X_i(x_a)^2)^(1/2)`` with the grid's quadrature weights.

    Args:
        curves: ``(n, m)`` grid values, one row per record.
        grid: the grid of the curves.

    Returns:
        ``(n,)`` L2 norms.
    """
    x = jnp.asarray(curves, dtype=jnp.float64)
    return jnp.sqrt(jnp.sum(grid.weights * x * x, axis=-1))


def enforce_l2_bound(curves, grid: Grid, tau: float, out_of_bound: str = "reject") -> jax.Array:
    r"""Curves ``(n, m)`` with every L2 norm at most ``tau`` (Assumption 1 [10]).

    ``"clip"`` rescales ``X_i <- X_i min(1, tau/||X_i||)``, a per-record map,
    so the sensitivity bounds hold for every input. ``"reject"`` raises on a
    norm above ``tau (1 + ROUNDING_SLACK)`` and rescales the rounding-level
    excess below it. Inside ``jit`` "reject" cannot raise: an offending curve
    becomes NaN, so the release density is NaN rather than silently wrong.

    Args:
        curves: ``(n, m)`` grid values, one row per record.
        grid: the grid of the curves.
        tau: the public bound on ``||X_i||_{L2}``.
        out_of_bound: ``"reject"`` or ``"clip"``.

    Returns:
        The curves, each rescaled onto the ball where needed, as a float64 array.

    Raises:
        ValueError: a shape that is not ``(n, grid.size)``, NaN/inf, or (in
            "reject" mode) a curve whose norm exceeds ``tau``.

    Example:
        >>> g = uniform_grid(4)
        >>> x = enforce_l2_bound(jnp.full((1, 4), 2.0), g, 1.0, "clip")
        >>> round(float(curve_norms(x, g)[0]), 12)
        1.0
    """
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    tau = check_number("tau", tau)
    m = grid.size
    if np.ndim(curves) != 2 or np.shape(curves)[1] != m:
        raise ValueError(
            f"curves have shape {tuple(np.shape(curves))} but must be (n, {m}): one row of "
            f"values at the {m} grid points per record."
        )
    if is_concrete(curves):  # numpy: validation costs no JAX dispatch or compilation
        x = np.asarray(curves, dtype=np.float64)
        check_finite("curves", x)
        norms = np.sqrt((x * x) @ np.asarray(grid.weights))
        if out_of_bound == "reject" and np.any(norms > tau * (1.0 + ROUNDING_SLACK)):
            worst = int(np.argmax(norms))
            raise ValueError(
                f"curve {worst} has L2 norm {norms[worst]:.6g} > tau = {tau:g}; the data bound "
                "must hold for every record (rescale the data, raise the public tau, or build "
                "the mechanism with out_of_bound='clip')."
            )
        factor = np.where(norms > tau, tau / np.maximum(norms, _TINY), 1.0)
        return jnp.asarray(x * factor[:, None])
    x = jnp.asarray(curves, dtype=jnp.float64)
    norms = curve_norms(x, grid)
    factor = jnp.where(norms > tau, tau / jnp.maximum(norms, _TINY), 1.0)
    if out_of_bound == "reject":
        factor = jnp.where(norms > tau * (1.0 + ROUNDING_SLACK), jnp.nan, factor)
    return x * factor[:, None]


@jax.jit
def _mean_coefficients(curves, weights, eigenfunctions):
    """``<bar X, phi_j>`` by quadrature (one compiled kernel per shape)."""
    return (jnp.mean(curves, axis=0) * weights) @ eigenfunctions


@jax.jit
def _qr_values(curves, weights, eigenfunctions, shrinkage):
    return eigenfunctions @ (shrinkage * _mean_coefficients(curves, weights, eigenfunctions))


@jax.jit
def _ar_values(curves, weights, eigenfunctions, threshold):
    mean = _mean_coefficients(curves, weights, eigenfunctions)
    return eigenfunctions @ (jnp.sign(mean) * jnp.maximum(jnp.abs(mean) - threshold, 0.0))


def _curves(curves, basis: KarhunenLoeveBasis) -> jax.Array:
    shape = np.shape(curves)
    if len(shape) != 2 or shape[1] != basis.grid_size or shape[0] == 0:
        raise ValueError(
            f"curves have shape {tuple(shape)} but must be (n, {basis.grid_size}): one row of "
            "grid values per record."
        )
    check_finite("curves", curves)
    return jnp.asarray(curves, dtype=jnp.float64)


def grid_one_c_norm(basis: KarhunenLoeveBasis, power: float = 1.0, rtol: float = 1e-9):
    """``h -> ||h||_{1,C^power}`` for grid values ``h``; ``inf`` when ``h`` leaves the basis span.

    A difference of summaries outside ``span(phi_1..phi_K)`` would make the two
    releases mutually singular, so it must not be projected away.

    Args:
        basis: the ICLP eigenbasis.
        power: ``p`` in ``||h||_{1,C^p} = sum_j |h_j| / lambda_j^(p/2)``.
        rtol: relative size of the part of ``h`` off the span read as round-off.

    Returns:
        The function ``h -> ||h||_{1,C^power}`` on grid values ``(..., m)``.
    """
    basis = check_basis(basis)
    weights, phi, lam = basis.grid.weights, basis.eigenfunctions, basis.eigenvalues
    power, rtol = float(power), float(rtol)

    def norm(h):
        return _grid_one_c(jnp.asarray(h, dtype=jnp.float64), weights, phi, lam, power, rtol)

    return norm


@jax.jit
def _grid_one_c(h, weights, eigenfunctions, eigenvalues, power, rtol):
    coefficients = (h * weights) @ eigenfunctions
    residual = h - coefficients @ eigenfunctions.T

    def size(v):
        return jnp.sqrt(jnp.sum(weights * v * v, axis=-1))

    value = jnp.sum(jnp.abs(coefficients) / eigenvalues ** (0.5 * power), axis=-1)
    return jnp.where(size(residual) <= rtol * (size(h) + _TINY), value, jnp.inf)


def iclp_grid_release(
    name: str, summary, basis: KarhunenLoeveBasis, sigma: float, **fields
) -> Mechanism:
    """An ICLP release of grid values on ``basis`` (LR Alg. 1), claimed in the ``1,C`` norm.

    The release is ``summary(data)`` plus ``sum_j sigma sqrt(lambda_j / 2) Z_j phi_j``
    on the grid (``Z_j`` unit-variance Laplace) and the public parameters gain
    ``"sigma"``; differences of summaries are measured by :func:`grid_one_c_norm`.

    Args:
        name: the catalogue name.
        summary: ``summary(data)``, grid values ``(m,)`` in the span of the basis.
        basis: the ICLP eigenbasis.
        sigma: the ICLP ``sigma`` (``sqrt(2) Delta / epsilon``, :func:`dpaudit.model.noise.iclp_sigma`).
        **fields: the other keywords of :func:`mechanisms.common.summary_release`
            (``epsilon``, ``sensitivity``, ``reference``, ``params``, ``description``).

    Returns:
        The :class:`~dpaudit.Mechanism`.

    Raises:
        ValueError, TypeError: as :func:`mechanisms.common.summary_release`.
    """
    noise = ICLPNoise(basis.eigenvalues, sigma)
    params = {**fields.pop("params", {}), "sigma": sigma}
    return summary_release(
        name,
        summary,
        lambda loc: GridNoise(noise, basis, loc=loc),
        sensitivity_norm="one-c",
        difference_norm=grid_one_c_norm(basis),
        params=params,
        **fields,
    )


# ------------------------------------------------------------------ spectrum and PSS


def spectral_decay_rate(eigenvalues) -> float:
    r"""Eigenvalue decay rate ``beta`` (``lambda_j ~ j^(-beta)``) fitted on the spectrum.

    Least-squares slope of ``log lambda_j`` on ``log j`` over the middle half
    ``j in [K/4, 3K/4]`` when ``K >= 8`` (the leading eigenvalues are
    pre-asymptotic and the last ones carry the grid's discretisation error),
    over ``j = 1..K`` when ``2 <= K < 8``; ``inf`` for ``K = 1``. Data-free:
    it reads only the noise covariance. Matérn ``nu`` in dimension ``d`` has
    ``beta = 2 nu + d`` exactly; pass that instead where it is known.

    Args:
        eigenvalues: the ``lambda_j`` of the ICLP covariance, ``(K,)``.

    Returns:
        The fitted ``beta``.

    Example:
        >>> round(spectral_decay_rate(1.0 / np.arange(1, 41) ** 4), 6)
        4.0
    """
    lam = check_eigenvalues(eigenvalues)
    k = lam.size
    if k == 1:
        return math.inf
    j = np.arange(1, k + 1)
    lo, hi = (max(1, k // 4), (3 * k + 3) // 4) if k >= 8 else (1, k)
    slope = np.polyfit(np.log(j[lo - 1 : hi]), np.log(lam[lo - 1 : hi]), 1)[0]
    return float(-slope) if slope < 0 else math.inf


def kernel_decay_rate(kernel, dim: int = 1) -> float | None:
    r"""Known eigenvalue decay rate ``beta`` of a kernel on ``[0, 1]^d``, or ``None``.

    Matérn ``nu`` (and the exponential kernel, ``nu = 1/2``, in ``d = 1``):
    ``lambda_j ~ j^(-(2 nu + d)/d)`` (Weyl asymptotics; ``2 nu + 1`` in ``d = 1``,
    docs/papers/lr.md#lr-experiments); Gaussian: faster than any power, ``inf``. ``None`` otherwise
    (fit the spectrum with :func:`spectral_decay_rate`).

    Args:
        kernel: the covariance kernel.
        dim: the dimension ``d``.

    Returns:
        ``beta``, or ``None`` for a kernel whose rate is not known.

    Example:
        >>> kernel_decay_rate(Matern(nu=1.5, lengthscale=0.1))
        4.0
    """
    dim = check_count("dim", dim)
    if isinstance(kernel, Matern):
        return (2.0 * float(kernel.nu) + dim) / dim
    if isinstance(kernel, Exponential) and dim == 1:
        return 2.0
    if isinstance(kernel, Gaussian):
        return math.inf
    return None


def _beta_value(beta) -> float:
    """A decay rate ``beta > 0``; ``inf`` (faster than any power, e.g. a Gaussian kernel) allowed."""
    if isinstance(beta, int | float | np.integer | np.floating) and beta == math.inf:
        return math.inf
    return check_number("beta", beta, hint=" (the eigenvalue decay rate; inf is allowed)")


def resolve_beta(beta, eigenvalues) -> float:
    """The eigenvalue decay rate: ``beta`` if given, else estimated from the spectrum.

    Args:
        beta: a decay rate > 0 (``inf`` allowed), or ``None``.
        eigenvalues: the spectrum, for :func:`spectral_decay_rate` when ``beta`` is ``None``.

    Returns:
        The decay rate as a float.

    Raises:
        ValueError, TypeError: if ``beta`` is given and not a number > 0.
    """
    return spectral_decay_rate(eigenvalues) if beta is None else _beta_value(beta)


def _ratio(beta: float, a: float, b: float, c: float) -> float:
    """``a beta / (b beta + c)``, with its limit ``a / b`` at ``beta = inf``."""
    return a / b if math.isinf(beta) else a * beta / (b * beta + c)


def pss_eta(beta: float) -> float:
    """PSS smoothing power ``eta = 1 + 2/beta`` (Cor. 1 [15]: ``eta >= 1 + 2/beta``).

    Args:
        beta: the eigenvalue decay rate.

    Returns:
        ``1 + 2/beta``.

    Example:
        >>> pss_eta(4.0)
        1.5
    """
    return 1.0 + 2.0 / _beta_value(beta)


def pss_qr_psi(n: int, epsilon: float, *, beta: float, eta: float) -> float:
    r"""PSS penalty of ICLP-QR: ``psi = (n epsilon^2)^(-eta beta / (beta + 2))``.

    The lower end of Cor. 1's range ``(n eps^2)^(-eta beta/(beta+2)) <~ psi <~ 1/n``,
    where the privacy error of Thm 7 is of the order of the statistical error
    (LR Sec. 6.1.1), constant 1. At ``eta = 1 + 2/beta`` it is ``1/(n epsilon^2)``.

    Args:
        n: the number of curves.
        epsilon: the privacy parameter.
        beta: the eigenvalue decay rate.
        eta: the smoothing power.

    Returns:
        ``psi``.

    Example:
        >>> pss_qr_psi(500, 1.0, beta=4.0, eta=1.5)
        0.002
    """
    n = check_count("n", n)
    epsilon = check_number("epsilon", epsilon)
    beta, eta = _beta_value(beta), check_number("eta", eta)
    return float((n * epsilon**2) ** (-_ratio(beta, eta, 1.0, 2.0)))


def pss_ar_psi(n: int, epsilon: float, *, beta: float, eta: float) -> float:
    r"""PSS-style penalty of ICLP-AR: ``psi = (n epsilon)^(-2 eta beta / (3 eta beta + 4))``.

    The paper gives no AR rule (Cor. 1 says none reaches ``O(1/n)``). This
    balances Thm 7's AR privacy term ``4 tau^2 (J*)^(eta beta + 2) / (n eps)^2``
    against the bias ``psi`` with ``J* ~ (2 tau / psi)^(2/(eta beta))``
    (``lambda_j ~ j^(-beta)``), constants 1 and ``tau = 1``.

    Args:
        n, epsilon, beta, eta: as :func:`pss_qr_psi`.

    Returns:
        ``psi``.
    """
    n = check_count("n", n)
    epsilon = check_number("epsilon", epsilon)
    beta, eta = _beta_value(beta), check_number("eta", eta)
    return float((n * epsilon) ** (-_ratio(beta, 2.0 * eta, 3.0 * eta, 4.0)))


def pss_frl_range(n: int, *, beta: float, eta: float) -> tuple[int, int]:
    """Admissible FRL truncations ``n^(1/(eta beta)) <~ M <~ n^(1/3)`` (Cor. 1 [15]), inclusive.

    Returns ``(ceil(n^(1/(eta beta))), max(that, floor(n^(1/3))))``.

    Args:
        n: the number of curves.
        beta: the eigenvalue decay rate.
        eta: the smoothness of the mean.

    Returns:
        ``(M_low, M_high)``.

    Example:
        >>> pss_frl_range(500, beta=4.0, eta=1.5)
        (3, 7)
    """
    n = check_count("n", n)
    beta, eta = _beta_value(beta), check_number("eta", eta)
    low = max(1, math.ceil(n ** (1.0 / (eta * beta)) - 1e-12))
    high = max(low, math.floor(n ** (1.0 / 3.0) + 1e-12))
    return low, high


def pss_frl_components(
    n: int, epsilon: float, *, beta: float, eta: float, max_components: int | None = None
) -> int:
    r"""PSS truncation of FRL: the ``M`` of :func:`pss_frl_range` minimising Thm 7's FRL bound.

    Minimises ``8 M^3 / (n epsilon)^2 + M^(-eta beta)`` (curves normalised to
    ``tau = 1``, constants 1) over the admissible range, capped at
    ``max_components``. (The paper instead takes the ``M`` of the range with the
    smallest *simulated* MSE, which needs the true mean.)

    Args:
        n, epsilon, beta, eta: as :func:`pss_qr_psi`.
        max_components: the most components the basis has (caps ``M``).

    Returns:
        ``M``.

    Example:
        >>> pss_frl_components(500, 1.0, beta=4.0, eta=1.5)
        3
    """
    low, high = pss_frl_range(n, beta=beta, eta=eta)
    epsilon = check_number("epsilon", epsilon)
    if max_components is not None:
        cap = check_count("max_components", max_components)
        low, high = min(low, cap), min(high, cap)
    m = np.arange(low, high + 1, dtype=float)
    bound = 8.0 * m**3 / (n * epsilon) ** 2 + m ** (-eta * _beta_value(beta))
    return int(m[np.argmin(bound)])


# ------------------------------------------------------------------ ICLP-QR


def qr_shrinkage(eigenvalues, *, psi: float, eta: float) -> jax.Array:
    """Shrinkage factors ``lambda_j^eta / (lambda_j^eta + psi)`` of ICLP-QR.

    Args:
        eigenvalues: the ``lambda_j`` of the ICLP covariance, ``(K,)``.
        psi: the penalty weight (> 0).
        eta: the power of ``C`` in the penalty.

    Returns:
        The factors, the shape of ``eigenvalues``.
    """
    lam_eta = jnp.asarray(eigenvalues, dtype=jnp.float64) ** eta
    return lam_eta / (lam_eta + psi)


def qr_weights(eigenvalues, *, psi: float, eta: float) -> jax.Array:
    """``w_j = lambda_j^(eta - 1/2) / (lambda_j^eta + psi)``: the QR shrinkage in the 1,C norm.

    Args:
        eigenvalues, psi, eta: as :func:`qr_shrinkage`.

    Returns:
        ``w``, the shape of ``eigenvalues``.
    """
    lam = jnp.asarray(eigenvalues, dtype=jnp.float64)
    return lam ** (eta - 0.5) / (lam**eta + psi)


def qr_mean(curves, basis: KarhunenLoeveBasis, *, psi: float, eta: float) -> jax.Array:
    r"""Coefficients of the ICLP-QR mean (LR eq. 9): ``lambda_j^eta/(lambda_j^eta + psi) bar X_j``.

    The minimiser of ``(1/n) sum_i ||X_i - f||^2 + psi ||f||^2_{C^eta}`` over
    ``f`` in the span of the basis. ``basis.reconstruct`` gives grid values.

    Args:
        curves: ``(n, m)`` grid values of the records (not clipped here; the
            mechanisms enforce ``tau`` first).
        basis: the ICLP eigenbasis.
        psi: penalty weight (> 0).
        eta: power of ``C`` in the penalty (> 0).

    Returns:
        ``(K,)`` coefficients.

    Example:
        >>> from dpaudit.model.spaces import brownian_motion_basis
        >>> b = brownian_motion_basis(uniform_grid(8), 2)
        >>> c = qr_mean(b.eigenfunctions.T, b, psi=1.0, eta=1.0)  # bar X = (phi_1 + phi_2)/2
        >>> [round(float(v), 6) for v in c / qr_shrinkage(b.eigenvalues, psi=1.0, eta=1.0)]
        [0.5, 0.5]
    """
    basis = check_basis(basis)
    psi, eta = check_psi(psi), check_number("eta", eta)
    x = _curves(curves, basis)
    mean = _mean_coefficients(x, basis.grid.weights, basis.eigenfunctions)
    return qr_shrinkage(basis.eigenvalues, psi=psi, eta=eta) * mean


def qr_mean_sensitivity(
    eigenvalues, *, n: int, tau: float, psi: float, eta: float, bound: str = "printed"
) -> float:
    r"""``1,C`` sensitivity bound of the ICLP-QR mean (LR Thm 6 [12], see docs/paper-errors.md#lr-loose-bounds).

    With ``w_j = lambda_j^(eta-1/2) / (lambda_j^eta + psi)``:

    * ``"printed"``: ``(2 tau / n) sum_j w_j`` (the paper's, per coordinate);
    * ``"cauchy-schwarz"``: ``(2 tau / n) (sum_j w_j^2)^(1/2)``, the exact
      supremum over neighbours on the truncated basis.

    Args:
        eigenvalues: the ``lambda_j`` of the ICLP covariance, ``(K,)``.
        n: the number of curves.
        tau: the public bound on ``||X_i||_{L2}``.
        psi: the penalty weight (> 0).
        eta: the power of ``C`` in the penalty.
        bound: ``"printed"`` or ``"cauchy-schwarz"``.

    Returns:
        ``Delta``.

    Raises:
        ValueError: invalid ``n``, ``tau``, ``psi``, ``eta``, eigenvalues or bound.

    Example:
        >>> qr_mean_sensitivity([1.0, 1.0], n=10, tau=1.0, psi=1.0, eta=1.0)  # 0.2 * (1/2 + 1/2)
        0.2
    """
    lam = check_eigenvalues(eigenvalues)
    n, tau, psi = check_count("n", n), check_number("tau", tau), check_psi(psi)
    eta = check_number("eta", eta)
    check_choice("bound", bound, QR_BOUNDS)
    w = lam ** (eta - 0.5) / (lam**eta + psi)
    total = float(np.sum(w)) if bound == "printed" else float(np.sqrt(np.sum(w * w)))
    return 2.0 * tau / n * total


# ------------------------------------------------------------------ ICLP-AR


def soft_threshold(x, threshold) -> jax.Array:
    """``sgn(x) (|x| - threshold)_+`` (see docs/paper-errors.md#lr-ar-typos: the sign of ``x``, not of ``|x|``).

    Args:
        x: the values.
        threshold: the thresholds (broadcast against ``x``).

    Returns:
        The soft-thresholded values.
    """
    x = jnp.asarray(x, dtype=jnp.float64)
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - threshold, 0.0)


def ar_threshold(eigenvalues, *, psi: float, eta: float) -> jax.Array:
    """ICLP-AR thresholds ``psi / (2 lambda_j^(eta/2))``, non-decreasing in ``j``.

    Args:
        eigenvalues, psi, eta: as :func:`qr_shrinkage`.

    Returns:
        The thresholds, the shape of ``eigenvalues``.
    """
    return psi / (2.0 * jnp.asarray(eigenvalues, dtype=jnp.float64) ** (0.5 * eta))


def ar_active_components(eigenvalues, *, tau: float, psi: float, eta: float) -> int:
    r"""``J* - 1``: the number of leading coefficients the AR summary can leave non-zero.

    ``J* = min{j : tau <= psi / (2 lambda_j^(eta/2))}`` (Remark 2 [13], see docs/paper-errors.md#lr-ar-typos); as
    ``|bar X_j| <= ||bar X|| <= tau`` every coefficient ``j >= J*`` is zero. On a
    truncated basis where no ``j <= K`` qualifies, ``J* = K + 1``.

    Args:
        eigenvalues: the ``lambda_j`` of the ICLP covariance, ``(K,)``.
        tau: the public bound on ``||X_i||_{L2}``.
        psi: the penalty weight (> 0).
        eta: the power of ``C`` in the penalty.

    Returns:
        ``J* - 1``.
    """
    lam = check_eigenvalues(eigenvalues)
    tau, psi, eta = check_number("tau", tau), check_psi(psi), check_ar_eta(eta)
    return int(np.count_nonzero(psi / (2.0 * lam ** (0.5 * eta)) < tau))


def ar_mean(curves, basis: KarhunenLoeveBasis, *, psi: float, eta: float) -> jax.Array:
    r"""Coefficients of the ICLP-AR mean (LR eq. 8): soft-thresholded ``bar X_j``.

    The minimiser of ``(1/n) sum_i ||X_i - f||^2 + psi ||f||_{1,C^eta}`` over the
    span of the basis: ``sgn(bar X_j) (|bar X_j| - psi/(2 lambda_j^(eta/2)))_+``.

    Args:
        curves: ``(n, m)`` grid values on the basis grid.
        basis: the ICLP eigenbasis.
        psi: the penalty weight (> 0).
        eta: the power of ``C`` in the penalty.

    Returns:
        ``(K,)`` coefficients.

    Example:
        >>> from dpaudit.model.spaces import brownian_motion_basis
        >>> b = brownian_motion_basis(uniform_grid(8), 1)
        >>> lam = float(b.eigenvalues[0])
        >>> c = ar_mean(b.eigenfunctions.T, b, psi=2 * 0.25 * lam**0.5, eta=1.0)  # threshold 1/4
        >>> round(float(c[0]), 12)
        0.75
    """
    basis = check_basis(basis)
    psi, eta = check_psi(psi), check_ar_eta(eta)
    x = _curves(curves, basis)
    mean = _mean_coefficients(x, basis.grid.weights, basis.eigenfunctions)
    return soft_threshold(mean, ar_threshold(basis.eigenvalues, psi=psi, eta=eta))


def ar_mean_sensitivity(
    eigenvalues, *, n: int, tau: float, psi: float, eta: float, bound: str = "corrected"
) -> float:
    r"""Valid ``1,C`` sensitivity bound of the ICLP-AR mean (see docs/paper-errors.md#lr-ar-sensitivity-weights).

    * ``"corrected"``: ``(2 tau / n) sum_{j < J*} lambda_j^(-1/2)``;
    * ``"cauchy-schwarz"``: ``(2 tau / n) (sum_{j < J*} 1/lambda_j)^(1/2)``.

    Both use that soft-thresholding is 1-Lipschitz and zeroes every ``j >= J*``.

    Args:
        eigenvalues, n, tau, psi, eta: as :func:`qr_mean_sensitivity`.
        bound: ``"corrected"`` or ``"cauchy-schwarz"``.

    Returns:
        ``Delta``.

    Raises:
        ValueError: invalid inputs, or ``psi`` so large that ``J* = 1`` (the
            summary is identically zero and there is nothing to release).
    """
    lam = check_eigenvalues(eigenvalues)
    n, tau, psi, eta = (
        check_count("n", n),
        check_number("tau", tau),
        check_psi(psi),
        check_ar_eta(eta),
    )
    check_choice("bound", bound, AR_BOUNDS)
    active = ar_active_components(lam, tau=tau, psi=psi, eta=eta)
    if active == 0:
        raise ValueError(
            f"psi = {psi:g} thresholds every coefficient to zero (J* = 1: psi / (2 lambda_1^(eta/2)) "
            f">= tau = {tau:g}); the ICLP-AR summary would be identically 0. Choose a smaller psi."
        )
    inv_root = lam[:active] ** -0.5
    total = float(np.sum(inv_root)) if bound == "corrected" else float(np.sqrt(np.sum(inv_root**2)))
    return 2.0 * tau / n * total


def ar_mean_sensitivity_printed(
    eigenvalues, *, n: int, tau: float, psi: float, eta: float
) -> float:
    r"""The AR bound as printed in LR Thm 6 [12]: ``(2 tau / n) sum_{j=1}^{J*} lambda_j^(-eta/2)``.

    Kept to reproduce the paper and to show the error documented in docs/paper-errors.md#lr-ar-sensitivity-weights: it weights by
    ``lambda_j^(-eta/2)`` where the ``1,C`` norm needs ``lambda_j^(-1/2)``, so it
    is an upper bound only when every ``lambda_j <= 1`` (for ``eta >= 1``) and can
    be exceeded by neighbouring datasets otherwise. Do not calibrate with it.
    ``J*`` is capped at ``K`` on a truncated basis.

    Args:
        eigenvalues, n, tau, psi, eta: as :func:`qr_mean_sensitivity`.

    Returns:
        The printed bound (valid only when every ``lambda_j <= 1``).
    """
    lam = check_eigenvalues(eigenvalues)
    n, tau, psi, eta = (
        check_count("n", n),
        check_number("tau", tau),
        check_psi(psi),
        check_ar_eta(eta),
    )
    j_star = min(ar_active_components(lam, tau=tau, psi=psi, eta=eta) + 1, lam.size)
    return 2.0 * tau / n * float(np.sum(lam[:j_star] ** (-0.5 * eta)))


# ------------------------------------------------------------------ FRL


def frl_mean(curves, basis: KarhunenLoeveBasis, *, n_components: int) -> jax.Array:
    """FRL summary: the first ``M`` eigen-coefficients ``bar X_j`` of the sample mean, ``(M,)``.

    Args:
        curves: ``(n, m)`` grid values on the basis grid.
        basis: the eigenbasis.
        n_components: ``M``.

    Returns:
        ``(M,)`` coefficients.

    Raises:
        ValueError: if ``M`` exceeds the basis size or the curves do not match the grid.
    """
    basis = check_basis(basis)
    m = check_frl_components(n_components, basis)
    x = _curves(curves, basis)
    phi = jnp.asarray(np.asarray(basis.eigenfunctions)[:, :m])  # host slice: no compilation
    return _mean_coefficients(x, basis.grid.weights, phi)


def check_frl_components(n_components, basis: KarhunenLoeveBasis) -> int:
    """Check FRL's number of kept coefficients ``M`` against the basis.

    Args:
        n_components: ``M``.
        basis: the Karhunen–Loève basis the coefficients are taken in.

    Returns:
        ``M`` as an int.

    Raises:
        ValueError, TypeError: unless ``1 <= M <= basis.n_components``.
    """
    m = check_count("n_components", n_components)
    if m > basis.n_components:
        raise ValueError(
            f"FRL keeps n_components = {m} coefficients but the basis has only "
            f"{basis.n_components}."
        )
    return m


def frl_mean_sensitivity(*, n: int, tau: float, n_components: int, bound: str = "printed") -> float:
    r"""``l1`` sensitivity of the FRL coefficients (LR Thm 6 [12], see docs/paper-errors.md#lr-loose-bounds).

    ``"printed"``: ``2 M tau / n``; ``"cauchy-schwarz"``: ``2 sqrt(M) tau / n`` (exact).

    Args:
        n: the number of curves.
        tau: the public bound on ``||X_i||_{L2}``.
        n_components: ``M``.
        bound: ``"printed"`` or ``"cauchy-schwarz"``.

    Returns:
        ``Delta``.

    Example:
        >>> frl_mean_sensitivity(n=10, tau=1.0, n_components=4, bound="cauchy-schwarz")
        0.4
    """
    n, tau, m = (
        check_count("n", n),
        check_number("tau", tau),
        check_count("n_components", n_components),
    )
    check_choice("bound", bound, QR_BOUNDS)
    return 2.0 * tau / n * (m if bound == "printed" else math.sqrt(m))


# ------------------------------------------------------------------ worst-case neighbours


def qr_worst_case_record(basis: KarhunenLoeveBasis, *, tau: float, psi: float, eta: float):
    r"""Grid values of ``X_1 = tau sum_j (w_j / ||w||) phi_j``, the record attaining the QR bound.

    With ``w_j = lambda_j^(eta-1/2) / (lambda_j^eta + psi)`` (:func:`qr_weights`),
    replacing ``X_1`` by ``-X_1`` (both of L2 norm ``tau``) moves the ICLP-QR
    summary by ``h_j = (2/n) (lambda_j^eta / (lambda_j^eta + psi)) X_1j``, whatever
    the other records, so

    ``||h||_{1,C} = (2 tau / n) sum_j w_j^2 / ||w|| = (2 tau / n) ||w||``:

    the Cauchy–Schwarz bound of :func:`qr_mean_sensitivity` (LR Thm 6 [12],
    see docs/paper-errors.md#lr-loose-bounds) is attained. Use ``(X_1, -X_1)`` as the replaced record of a
    worst-case neighbouring pair in audits.

    Args:
        basis: the ICLP eigenbasis.
        tau: the public bound on ``||X_i||_{L2}``.
        psi: the penalty weight (> 0).
        eta: the power of ``C`` in the penalty.

    Returns:
        ``(m,)`` grid values.

    Raises:
        ValueError / TypeError: invalid ``tau``, ``psi``, ``eta`` or basis.

    Example:
        >>> b = default_basis()
        >>> x = qr_worst_case_record(b, tau=2.0, psi=0.01, eta=1.5)
        >>> round(float(curve_norms(x[None], b.grid)[0]), 9)
        2.0
    """
    basis = check_basis(basis)
    tau, psi, eta = check_number("tau", tau), check_psi(psi), check_number("eta", eta)
    w = np.asarray(qr_weights(basis.eigenvalues, psi=psi, eta=eta))
    return jnp.asarray(np.asarray(basis.eigenfunctions) @ (tau * w / np.linalg.norm(w)))


def frl_worst_case_record(basis: KarhunenLoeveBasis, *, tau: float, n_components: int):
    r"""Grid values of ``X_1 = (tau / sqrt(M)) sum_{j<=M} phi_j``, the record attaining the FRL bound.

    Replacing ``X_1`` by ``-X_1`` moves each of the ``M`` released coefficients
    by ``2 tau / (n sqrt(M))``: an ``l1`` change of ``2 sqrt(M) tau / n``, the
    Cauchy–Schwarz bound of :func:`frl_mean_sensitivity` (the printed
    ``2 M tau / n`` exceeds it by ``sqrt(M)``).

    Args:
        basis: the eigenbasis.
        tau: the public bound on ``||X_i||_{L2}``.
        n_components: ``M``.

    Returns:
        ``(m,)`` grid values.

    Raises:
        ValueError / TypeError: invalid ``tau``, ``M`` or basis.

    Example:
        >>> b = default_basis()
        >>> x = frl_worst_case_record(b, tau=1.0, n_components=4)
        >>> [round(float(c), 9) for c in frl_mean(x[None], b, n_components=4)]
        [0.5, 0.5, 0.5, 0.5]
    """
    basis = check_basis(basis)
    tau, m = check_number("tau", tau), check_frl_components(n_components, basis)
    phi = np.asarray(basis.eigenfunctions)[:, :m]
    return jnp.asarray(phi.sum(axis=1) * (tau / math.sqrt(m)))


# ------------------------------------------------------------------ builders


def _common(n, epsilon, tau, basis, out_of_bound, beta):
    n = check_count("n", n)
    epsilon = check_number("epsilon", epsilon)
    tau = check_number("tau", tau, hint=" (the public bound on ||X_i||_{L2})")
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    default = basis is None
    basis = default_basis() if default else check_basis(basis)
    label = (
        "Matérn(nu=1.5, rho=0.1) on the 100-point midpoint grid"
        if default
        else f"user basis on {basis.grid_size} grid points"
    ) + f", K = {basis.n_components}"
    if beta is None and default:
        beta = kernel_decay_rate(DEFAULT_KERNEL)
    return n, epsilon, tau, basis, label, resolve_beta(beta, basis.eigenvalues)


def _prepared(data, basis, n, tau, out_of_bound):
    x = enforce_l2_bound(data, basis.grid, tau, out_of_bound)
    check_records(x.shape[0], n)
    return x


@register("iclp-qr-mean", example={"n": 500, "epsilon": 1.0, "tau": 4.0})
def iclp_qr_mean(
    n: int = 500,
    epsilon: float = 1.0,
    tau: float = 4.0,
    psi: float | None = None,
    eta: float | None = None,
    *,
    basis: KarhunenLoeveBasis | None = None,
    beta: float | None = None,
    sensitivity_bound: str = "printed",
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""ICLP-QR mean function (LR Sec. 4.2, Thm 6 [12] + Thm 4 [8]): pure epsilon-DP curve release.

    Releases the grid values of
    ``sum_j (lambda_j^eta/(lambda_j^eta+psi) bar X_j + xi_j) phi_j`` with
    ``xi_j ~ Laplace(Delta sqrt(lambda_j) / epsilon)`` independent (ICLP,
    ``sigma = sqrt(2) Delta / epsilon``), ``Delta`` the QR bound chosen by
    ``sensitivity_bound`` (see the module docstring).

    Args:
        n: number of curves (public).
        epsilon: privacy parameter.
        tau: public bound on ``||X_i||_{L2}``.
        psi: penalty weight; default PSS :func:`pss_qr_psi`.
        eta: power of ``C`` in the penalty; default PSS :func:`pss_eta`. Must
            exceed ``1/2 + 1/beta``.
        basis: ICLP eigenbasis (default :func:`default_basis`).
        beta: eigenvalue decay rate for the ``eta`` check and PSS; default 4
            for the default basis (:func:`kernel_decay_rate`), else
            :func:`spectral_decay_rate` of the basis.
        sensitivity_bound: ``"printed"`` (paper) or ``"cauchy-schwarz"`` (exact).
        out_of_bound: ``"reject"`` or ``"clip"`` curves with norm above ``tau``.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    n, epsilon, tau, basis, label, beta = _common(n, epsilon, tau, basis, out_of_bound, beta)
    check_choice("sensitivity_bound", sensitivity_bound, QR_BOUNDS)
    eta = pss_eta(beta) if eta is None else eta
    eta = check_qr_eta(eta, beta)
    psi = pss_qr_psi(n, epsilon, beta=beta, eta=eta) if psi is None else check_psi(psi)
    lam = basis.eigenvalues
    sensitivity = qr_mean_sensitivity(lam, n=n, tau=tau, psi=psi, eta=eta, bound=sensitivity_bound)
    sigma = iclp_sigma(sensitivity, epsilon)
    shrinkage = qr_shrinkage(lam, psi=psi, eta=eta)

    weights, phi = basis.grid.weights, basis.eigenfunctions

    def summary(data):
        x = _prepared(data, basis, n, tau, out_of_bound)
        return _qr_values(x, weights, phi, shrinkage)

    which = "Thm 6 printed bound" if sensitivity_bound == "printed" else "Cauchy-Schwarz bound"
    return iclp_grid_release(
        "iclp-qr-mean",
        summary,
        basis,
        sigma,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference=f"{REFERENCE}, Thm 6 ({which}) and Thm 4, sigma = sqrt(2) Delta/epsilon",
        params={
            "n": n,
            "epsilon": epsilon,
            "tau": tau,
            "psi": psi,
            "eta": eta,
            "beta": beta,
            "sensitivity_bound": sensitivity_bound,
            "out_of_bound": out_of_bound,
            "basis": label,
        },
        description=f"ICLP-QR mean of n = {n} curves (||X_i|| <= tau = {tau:g}, {out_of_bound} above), "
        f"shrunk by lambda_j^eta/(lambda_j^eta + psi) with eta = {eta:.4g}, psi = {psi:.4g}; "
        f"1,C sensitivity {sensitivity:.4g} ({which}); ICLP noise sigma = sqrt(2) Delta/eps "
        f"= {sigma:.4g}; released as grid values ({label}).",
    )


@register("iclp-ar-mean", example={"n": 500, "epsilon": 1.0, "tau": 4.0})
def iclp_ar_mean(
    n: int = 500,
    epsilon: float = 1.0,
    tau: float = 4.0,
    psi: float | None = None,
    eta: float | None = None,
    *,
    basis: KarhunenLoeveBasis | None = None,
    beta: float | None = None,
    sensitivity_bound: str = "corrected",
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""ICLP-AR mean function (LR Sec. 4.2, Thm 6 [12] corrected as in docs/paper-errors.md#lr-ar-sensitivity-weights): pure epsilon-DP.

    Releases the grid values of ``sum_j (s_j(bar X_j) + xi_j) phi_j`` with
    ``s_j`` soft-thresholding at ``psi / (2 lambda_j^(eta/2))`` and ICLP noise
    ``xi_j ~ Laplace(Delta sqrt(lambda_j) / epsilon)``; ``Delta`` is the
    ``lambda_j^(-1/2)``-weighted bound over ``j < J*`` (``"corrected"``) or its
    Cauchy–Schwarz form. The printed ``lambda_j^(-eta/2)`` bound is not offered
    (it fails when some ``lambda_j > 1``).

    Args:
        n, epsilon, tau, basis, beta, out_of_bound: as :func:`iclp_qr_mean`.
        psi: penalty weight; default :func:`pss_ar_psi`.
        eta: power (>= 1); default :func:`pss_eta`.
        sensitivity_bound: ``"corrected"`` or ``"cauchy-schwarz"``.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    n, epsilon, tau, basis, label, beta = _common(n, epsilon, tau, basis, out_of_bound, beta)
    check_choice("sensitivity_bound", sensitivity_bound, AR_BOUNDS)
    eta = check_ar_eta(pss_eta(beta) if eta is None else eta)
    psi = pss_ar_psi(n, epsilon, beta=beta, eta=eta) if psi is None else check_psi(psi)
    lam = basis.eigenvalues
    sensitivity = ar_mean_sensitivity(lam, n=n, tau=tau, psi=psi, eta=eta, bound=sensitivity_bound)
    j_star = ar_active_components(lam, tau=tau, psi=psi, eta=eta) + 1
    sigma = iclp_sigma(sensitivity, epsilon)
    threshold = ar_threshold(lam, psi=psi, eta=eta)

    weights, phi = basis.grid.weights, basis.eigenfunctions

    def summary(data):
        x = _prepared(data, basis, n, tau, out_of_bound)
        return _ar_values(x, weights, phi, threshold)

    return iclp_grid_release(
        "iclp-ar-mean",
        summary,
        basis,
        sigma,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference=f"{REFERENCE}, Thm 6 with lambda_j^(-1/2) weights over j < J* (docs/paper-errors.md#lr-ar-sensitivity-weights) and "
        "Thm 4, sigma = sqrt(2) Delta/epsilon",
        params={
            "n": n,
            "epsilon": epsilon,
            "tau": tau,
            "psi": psi,
            "eta": eta,
            "beta": beta,
            "j_star": j_star,
            "sensitivity_bound": sensitivity_bound,
            "out_of_bound": out_of_bound,
            "basis": label,
        },
        description=f"ICLP-AR mean of n = {n} curves (||X_i|| <= tau = {tau:g}, {out_of_bound} above), "
        f"soft-thresholded at psi/(2 lambda_j^(eta/2)) with eta = {eta:.4g}, psi = {psi:.4g} "
        f"(J* = {j_star}); 1,C sensitivity {sensitivity:.4g} ({sensitivity_bound}); ICLP "
        f"noise sigma = {sigma:.4g}; released as grid values ({label}).",
    )


@register("frl-mean", example={"n": 500, "epsilon": 1.0, "tau": 4.0})
def frl_mean_mechanism(
    n: int = 500,
    epsilon: float = 1.0,
    tau: float = 4.0,
    n_components: int | None = None,
    *,
    basis: KarhunenLoeveBasis | None = None,
    beta: float | None = None,
    eta: float | None = None,
    sensitivity_bound: str = "printed",
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""FRL baseline (LR Sec. 4.2, Thm 6 [12]): Laplace noise on the first ``M`` eigen-coefficients.

    Releases ``(bar X_j + Z_j)_{j<=M}`` with ``Z_j ~ Laplace(Delta / epsilon)``
    i.i.d., ``Delta`` the ``l1`` bound ``2 M tau / n`` (printed) or
    ``2 sqrt(M) tau / n`` (Cauchy–Schwarz); event shape ``(M,)``. The curve is
    ``sum_j release_j phi_j`` (post-processing).

    Args:
        n, epsilon, tau, basis, out_of_bound: as :func:`iclp_qr_mean`.
        n_components: ``M``; default :func:`pss_frl_components` (uses ``beta``
            and the smoothness ``eta`` of the mean, default :func:`pss_eta`).
        sensitivity_bound: ``"printed"`` or ``"cauchy-schwarz"``.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    n, epsilon, tau, basis, label, beta = _common(n, epsilon, tau, basis, out_of_bound, beta)
    check_choice("sensitivity_bound", sensitivity_bound, QR_BOUNDS)
    if n_components is None:
        eta = pss_eta(beta) if eta is None else check_number("eta", eta)
        n_components = pss_frl_components(
            n, epsilon, beta=beta, eta=eta, max_components=basis.n_components
        )
    m = check_frl_components(n_components, basis)
    sensitivity = frl_mean_sensitivity(n=n, tau=tau, n_components=m, bound=sensitivity_bound)
    scale = sensitivity / epsilon

    weights, phi = basis.grid.weights, jnp.asarray(np.asarray(basis.eigenfunctions)[:, :m])

    def summary(data):
        x = _prepared(data, basis, n, tau, out_of_bound)
        return _mean_coefficients(x, weights, phi)

    which = "printed 2 M tau/n" if sensitivity_bound == "printed" else "2 sqrt(M) tau/n"
    return laplace_release(
        "frl-mean",
        summary,
        scale,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference=f"{REFERENCE}, Thm 6 (FRL, {which}); Laplace mechanism",
        params={
            "n": n,
            "epsilon": epsilon,
            "tau": tau,
            "n_components": m,
            "sensitivity_bound": sensitivity_bound,
            "out_of_bound": out_of_bound,
            "laplace_scale": scale,
            "basis": label,
        },
        description=f"FRL mean of n = {n} curves (||X_i|| <= tau = {tau:g}, {out_of_bound} above): the "
        f"first M = {m} eigen-coefficients plus i.i.d. Laplace({scale:.4g}); l1 sensitivity "
        f"{sensitivity:.4g} ({which}); released as coefficients ({label}).",
    )
