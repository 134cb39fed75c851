r"""Lin & Reimherr's ICLP-QR beyond the mean: KDE, kernel ridge regression, covariance, FoS regression.

Mathematics: docs/papers/lr.md#lr-beyond-means; corrections: docs/paper-errors.md#lr-erm-squared-penalty, #lr-kde-sensitivity, #lr-discretization-scale and #lr-minor-typos; paper Sec. 4.3 (Thm 8 [16], Thm 9 [18])
and App. C. Conventions as in :mod:`mechanisms.iclp.mean`: the ICLP covariance
``C`` (kernel ``K``) is a :class:`~dpaudit.spaces.KarhunenLoeveBasis`
``(lambda_j, phi_j)_{j<=K}`` on a grid of ``[0, 1]^d``, ICLP noise has
coefficient ``j`` ``~ Laplace(Delta sqrt(lambda_j) / epsilon)``
(``sigma = sqrt(2) Delta / epsilon``, see docs/paper-errors.md#lr-iclp-sigma-constant), adjacency is replace-one with
``n`` public.

**Evaluating eigenfunctions off the grid (Nyström).** Data points ``x`` need
``phi_j(x)``; we use the Nyström extension
``phi_j(x) = (1/lambda_j) sum_a w_a K(x, y_a) phi_j(y_a)``, exact at the grid
points. The truncated power kernel ``K^eta(x, y) = sum_{j<=K} lambda_j^eta
phi_j(x) phi_j(y)`` then satisfies ``K^eta(x, x) <= lambda_1^(eta-1) K(x, x)``
for ``eta >= 1`` (``lambda_j^eta <= lambda_1^(eta-1) lambda_j`` and the rank-K
Nyström kernel is dominated by ``K``), which gives rigorous data-free
bounds ``M_K = lambda_1^(eta-1) sup_x K(x, x)`` below.

Registered mechanisms (pure epsilon-DP):

* ``iclp-qr-kde`` — kernel density estimate with the operator power ``K^eta`` of
  the ICLP kernel as smoothing kernel; the bandwidth is put into the ICLP
  kernel itself (``K = Gaussian(lengthscale=h)``; see docs/paper-errors.md#lr-kde-operator-power) and ``K^eta`` is
  computed by eigendecomposition, never as ``K(x, y)^eta``.
  ``hat f_D = (c / n) sum_i K^eta(., x_i)`` with the public normaliser
  ``c = 1 / int K^eta(x_0, y) dy`` (``x_0`` the grid point nearest the centre
  of the domain; the paper's ``1 / sqrt(det H)`` with ``int K^eta = 1``).
  Sensitivity (Thm 8 [16] with the correction in docs/paper-errors.md#lr-kde-rkhs-constant):
  ``||hat f_D - hat f_D'||_{1,K} <= (c/n) ||K^eta_x - K^eta_x'||_{K^eta} sqrt(tr K^(eta-1))
  <= (2 c sqrt(M_K) / n) sqrt(tr K^(eta-1))``; the printed ``2 M_K`` holds only
  when ``M_K >= 1`` (:func:`kde_sensitivity_printed`). Released as grid values.
  :func:`kde_replacement_distances` gives the exact ``1,K`` distance of every
  single-record replacement, to see how much of that bound is attained.
* ``iclp-qr-krr`` — kernel ridge regression (Thm 9 [18]):
  ``hat f = argmin_f (1/n) sum_i (y_i - f(x_i))^2 + psi ||f||^2_{C^eta}`` with the
  **squared** penalty (see docs/paper-errors.md#lr-erm-squared-penalty), solved in the eigenbasis. The square loss is
  ``M``-admissible on the reachable range with ``M = 2B(1 + sqrt(kappa/psi))``
  (``|y| <= B``, ``psi ||hat f||^2 <= B^2``, ``|f(x)| <= sqrt(kappa) ||f||_{C^eta}``,
  ``kappa = sup_x C^eta(x, x)``), and
  ``Delta_{1,C} <= M sqrt(kappa) sqrt(tr C^(eta-1)) / (psi n)``. Grid values.
* ``iclp-qr-covariance`` — the covariance function (App. C.1) smoothed by the
  tensor power: ``hat C_{jl} = (lambda_j lambda_l)^eta / ((lambda_j lambda_l)^eta + psi)
  <bar C, phi_j (x) phi_l>`` (the paper prints ``lambda_l^eta lambda_l^eta``;
  see docs/paper-errors.md#lr-minor-typos) with tensor ICLP noise of eigenvalues ``lambda_j lambda_l``.
  ``bar C = (1/n) sum_i (X_i - bar X)(X_i - bar X)`` moves by at most
  ``Delta_HS = (n - 1)(4 + sqrt 2) tau^2 / n^2`` in Hilbert–Schmidt norm (our
  derivation; see :func:`covariance_hs_sensitivity`), so the mean's two bounds
  carry over with ``2 tau / n`` replaced by ``Delta_HS``. Released as the
  ``K x K`` coefficient matrix, flattened (event ``(K^2,)``).
* ``iclp-qr-fos-regression`` — function-on-scalar regression (App. C.2),
  ``Y_i = X_i^T beta + e_i``, ``hat beta = T1^{-1} T2``: ``gamma epsilon`` on
  ``T1 = (1/n) sum X_i X_i^T`` (Laplace on its upper triangle, ``l1``
  sensitivity ``(p + 1) xi^2 / n`` for ``||X_i||_2 <= xi``) and
  ``(1 - gamma) epsilon`` on ``T2 = (1/n) sum Y_i X_i`` (``p`` functions, each
  smoothed by ICLP-QR; sensitivity ``sqrt(p) xi`` times the mean's with
  ``tau``). The joint release is one ICLP on the product space with block
  "eigenvalues" ``nu`` chosen so that its ``1,nu`` sensitivity is exactly
  ``gamma + (1 - gamma) = 1``: sequential composition written as a single
  Laplace-product density. ``hat beta`` is post-processing
  (:func:`fos_coefficient_functions`).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit import Mechanism, register
from dpaudit.core.checks import check_choice, check_count, check_finite, check_number, is_concrete
from dpaudit.model.noise import iclp_sigma
from dpaudit.model.spaces import (
    Exponential,
    Gaussian,
    KarhunenLoeveBasis,
    Kernel,
    Matern,
)
from mechanisms.common import iclp_release
from mechanisms.iclp.mean import (
    DEFAULT_KERNEL,
    OUT_OF_BOUND,
    QR_BOUNDS,
    REFERENCE,
    ROUNDING_SLACK,
    check_basis,
    check_eigenvalues,
    check_psi,
    check_qr_eta,
    check_records,
    default_basis,
    enforce_l2_bound,
    iclp_grid_release,
    kernel_basis,
    kernel_decay_rate,
    pss_eta,
    pss_qr_psi,
    qr_shrinkage,
    resolve_beta,
)

__all__ = [
    "alabi_slope",
    "centred_second_moment",
    "covariance_hs_sensitivity",
    "covariance_sensitivity",
    "eigenfunctions_at",
    "example_pair",
    "fos_coefficient_functions",
    "fos_dataset",
    "fos_sensitivities",
    "fos_summary",
    "iclp_qr_covariance",
    "iclp_qr_fos_regression",
    "iclp_qr_kde",
    "iclp_qr_krr",
    "kde_basis",
    "kde_normaliser",
    "kde_replacement_distances",
    "kde_sensitivity",
    "kde_sensitivity_printed",
    "kde_summary",
    "krr_fit",
    "krr_sensitivity",
    "power_kernel_diagonal_bound",
    "pss_kde_bandwidth",
    "qr_covariance",
    "stationary_kernel_sup",
]


# ------------------------------------------------------------------ kernels off the grid


def stationary_kernel_sup(kernel: Kernel) -> float:
    """``sup_x K(x, x)`` for the stationary kernels of dpaudit (their ``variance``).

    Args:
        kernel: a stationary kernel.

    Returns:
        ``sup_x K(x, x)``.

    Raises:
        ValueError: for another kernel; pass ``kernel_sup=`` (a public bound) to the builder.
    """
    if isinstance(kernel, Gaussian | Matern | Exponential):
        return float(kernel.variance)
    raise ValueError(
        f"sup_x K(x, x) is known in closed form only for the stationary Gaussian, Matern and "
        f"Exponential kernels, got {type(kernel).__name__}; pass kernel_sup= (a public bound)."
    )


def _points(points, dim: int) -> jax.Array:
    x = jnp.asarray(points, dtype=jnp.float64)
    if x.ndim == 1 and dim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] != dim or x.shape[0] == 0:
        raise ValueError(
            f"points have shape {tuple(x.shape)} but must be (n,) or (n, {dim}) points of the "
            f"{dim}-dimensional domain [0, 1]^{dim}."
        )
    return x


def eigenfunctions_at(kernel: Kernel, basis: KarhunenLoeveBasis, points) -> jax.Array:
    r"""Nyström values ``phi_j(x) = (1/lambda_j) sum_a w_a K(x, y_a) phi_j(y_a)``, shape ``(k, K)``.

    Exact at the grid points when ``basis`` was built from ``kernel`` on its grid.

    Args:
        kernel: the kernel of the basis.
        basis: its KL basis on a grid.
        points: ``(k,)`` or ``(k, d)`` points.

    Returns:
        ``(k, K)`` values.
    """
    x = _points(points, basis.grid.dim)
    return _nystrom(kernel, x, *_basis_arrays(basis))


def _basis_arrays(basis: KarhunenLoeveBasis):
    return basis.grid.points, basis.grid.weights, basis.eigenfunctions, basis.eigenvalues


@functools.partial(jax.jit, static_argnums=0)
def _nystrom(kernel, x, grid_points, weights, eigenfunctions, eigenvalues):
    return (kernel(x, grid_points) * weights) @ eigenfunctions / eigenvalues


def power_kernel_diagonal_bound(eigenvalues, eta: float, sup_kernel: float) -> float:
    """``M_K = lambda_1^(eta-1) sup_x K(x, x) >= sup_x K^eta(x, x)`` for ``eta >= 1`` (rank-K Nyström).

    Args:
        eigenvalues: the ``lambda_j``.
        eta: the operator power (>= 1).
        sup_kernel: ``sup_x K(x, x)``.

    Returns:
        ``M_K``.
    """
    lam = check_eigenvalues(eigenvalues)
    eta = check_number("eta", eta, low=1.0, inclusive=True)
    return float(lam[0] ** (eta - 1.0)) * check_number("kernel_sup", sup_kernel)


def _domain_points(points, dim: int, out_of_bound: str) -> jax.Array:
    if is_concrete(points):  # numpy: validation costs no JAX dispatch or compilation
        x = np.asarray(points, dtype=np.float64)
        x = x[:, None] if x.ndim == 1 and dim == 1 else x
        _points(x, dim)
        check_finite("points", x)
        outside = np.any((x < 0.0) | (x > 1.0), axis=1)
        if out_of_bound == "reject" and np.any(outside):
            raise ValueError(
                f"point {int(np.argmax(outside))} lies outside the domain [0, 1]^{dim}; rescale "
                "the data to the public domain or build the mechanism with out_of_bound='clip'."
            )
        return jnp.asarray(np.clip(x, 0.0, 1.0))
    x = _points(points, dim)
    if out_of_bound == "clip":
        return jnp.clip(x, 0.0, 1.0)
    outside = jnp.any((x < 0.0) | (x > 1.0), axis=1)
    return jnp.where(outside[:, None], jnp.nan, x)


# ------------------------------------------------------------------ KDE


def pss_kde_bandwidth(n: int, dim: int = 1, *, scale: float = 1.0) -> float:
    """Privacy-safe bandwidth ``h = scale n^(-1/(4+d))`` (LR Remark 3 [17], sign fixed as in docs/paper-errors.md#lr-kde-bandwidth-sign).

    Args:
        n: the number of points.
        dim: the dimension ``d``.
        scale: the constant in front.

    Returns:
        ``h``.

    Example:
        >>> round(pss_kde_bandwidth(32, 1), 6)
        0.5
    """
    n, dim = check_count("n", n), check_count("dim", dim)
    return check_number("scale", scale) * n ** (-1.0 / (4.0 + dim))


def kde_basis(bandwidth: float, grid_size: int = 100, dim: int = 1, n_components=None):
    """ICLP kernel with the bandwidth inside, ``Gaussian(lengthscale=h)``, and its KL basis.

    Returns ``(kernel, basis)``; the basis keeps every eigenvalue above
    ``1e-10 lambda_1`` (or ``n_components``).

    Args:
        bandwidth: ``h``.
        grid_size: grid points per axis.
        dim: the dimension ``d``.
        n_components: components kept (default: every eigenvalue above ``1e-10 lambda_1``).

    Returns:
        ``(kernel, basis)``.
    """
    h = check_number("bandwidth", bandwidth)
    kernel = Gaussian(lengthscale=h)
    return kernel, kernel_basis(kernel, grid_size, dim, n_components)


def kde_normaliser(basis: KarhunenLoeveBasis, eta: float) -> float:
    """``c = 1 / int_T K^eta(x_0, y) dy`` at the grid point ``x_0`` nearest the domain centre.

    ``int_T K^eta(x_0, y) dy = sum_j lambda_j^eta phi_j(x_0) <phi_j, 1>``. Public (data-free).

    Args:
        basis: the KL basis of the ICLP kernel.
        eta: the operator power.

    Returns:
        ``c``.

    Raises:
        ValueError: if that integral is not positive.
    """
    basis = check_basis(basis)
    eta = check_number("eta", eta)
    points = np.asarray(basis.grid.points)
    centre = int(np.argmin(np.sum((points - 0.5) ** 2, axis=1)))
    phi = np.asarray(basis.eigenfunctions)
    integrals = np.asarray(basis.grid.weights) @ phi
    mass = float(np.sum(np.asarray(basis.eigenvalues) ** eta * phi[centre] * integrals))
    if not mass > 0:
        raise ValueError(
            f"int K^eta(x_0, y) dy = {mass:.3g} is not positive; the kernel cannot smooth a "
            "density on this grid (use a positive kernel or more components)."
        )
    return 1.0 / mass


def _kde_coefficients(x, kernel, basis, eta, normaliser) -> jax.Array:
    return _kde_core(kernel, x, *_basis_arrays(basis), eta, normaliser)


@functools.partial(jax.jit, static_argnums=0)
def _kde_core(kernel, x, grid_points, weights, eigenfunctions, eigenvalues, eta, normaliser):
    phi_x = _nystrom(kernel, x, grid_points, weights, eigenfunctions, eigenvalues)
    return normaliser * eigenvalues**eta * jnp.mean(phi_x, axis=0)


def kde_summary(points, kernel: Kernel, basis: KarhunenLoeveBasis, *, eta: float):
    """Coefficients of ``hat f_D = (c/n) sum_i K^eta(., x_i)``, shape ``(K,)`` (LR eq. 10 [corrected]).

    ``K^eta`` is the operator power (eigenvalues ``lambda_j^eta``) of the
    ICLP kernel with the bandwidth inside it, and ``c = kde_normaliser``.
    Points outside ``[0, 1]^d`` are not handled here (the mechanism rejects or clips).

    Args:
        points: ``(n,)`` or ``(n, d)`` points of ``[0, 1]^d``.
        kernel: the ICLP kernel.
        basis: its KL basis.
        eta: the operator power.

    Returns:
        ``(K,)`` coefficients.
    """
    basis = check_basis(basis)
    eta = check_number("eta", eta, low=1.0, hint=" (LR Thm 8 smooths with K^eta, eta > 1)")
    x = _points(points, basis.grid.dim)
    return _kde_coefficients(x, kernel, basis, eta, kde_normaliser(basis, eta))


def kde_sensitivity(
    eigenvalues, *, n: int, eta: float, normaliser: float, sup_kernel: float = 1.0
) -> float:
    r"""``1,K`` sensitivity of the ICLP-QR KDE: ``(2 c sqrt(M_K) / n) sqrt(tr K^(eta-1))`` (see docs/paper-errors.md#lr-kde-rkhs-constant).

    ``M_K = lambda_1^(eta-1) sup_x K(x, x)`` (:func:`power_kernel_diagonal_bound`).

    Args:
        eigenvalues: the ``lambda_j`` of ``K``.
        n: the number of points.
        eta: the operator power.
        normaliser: ``c`` (:func:`kde_normaliser`).
        sup_kernel: ``sup_x K(x, x)``.

    Returns:
        ``Delta``.
    """
    lam = check_eigenvalues(eigenvalues)
    n = check_count("n", n)
    eta = check_number("eta", eta, low=1.0, hint=" (LR Thm 8 smooths with K^eta, eta > 1)")
    c = check_number("normaliser", normaliser)
    m_k = power_kernel_diagonal_bound(lam, eta, sup_kernel)
    return 2.0 * c * math.sqrt(m_k) / n * math.sqrt(float(np.sum(lam ** (eta - 1.0))))


def kde_sensitivity_printed(
    eigenvalues, *, n: int, eta: float, normaliser: float, sup_kernel: float = 1.0
) -> float:
    """LR Thm 8 [16] as printed, ``(2 c M_K / n) sqrt(tr K^(eta-1))``: valid only when ``M_K >= 1``.

    Args:
        eigenvalues, n, eta, normaliser, sup_kernel: as :func:`kde_sensitivity`.

    Returns:
        The printed bound.
    """
    lam = check_eigenvalues(eigenvalues)
    m_k = power_kernel_diagonal_bound(lam, eta, sup_kernel)
    return kde_sensitivity(
        lam, n=n, eta=eta, normaliser=normaliser, sup_kernel=sup_kernel
    ) * math.sqrt(m_k)


def kde_replacement_distances(
    points, others=None, *, kernel: Kernel, basis: KarhunenLoeveBasis, eta: float, n: int
) -> np.ndarray:
    r"""Exact ``||hat f_D - hat f_D'||_{1,K}`` when one record moves from ``points[a]`` to ``others[b]``.

    The ICLP-QR KDE ``hat f_D = (c/n) sum_i K^eta(., x_i)`` is linear in its
    records, so replacing ``x`` by ``x'`` (the other ``n - 1`` records being
    anything) moves coefficient ``j`` by ``(c/n) lambda_j^eta (phi_j(x) - phi_j(x'))``:

    .. math::
        \|\hat f_D-\hat f_{D'}\|_{1,K}=\frac cn\sum_{j\le K}\lambda_j^{\eta-1/2}
        \,\big|\phi_j(x)-\phi_j(x')\big| ,

    with ``phi_j`` off the grid by Nyström (:func:`eigenfunctions_at`) and
    ``c = kde_normaliser(basis, eta)``. The largest entry over a dense set of
    candidates is the sensitivity *attained* on those candidates: a lower
    bound on ``sup_{D ~ D'}``, which :func:`kde_sensitivity` bounds from above
    (LR Thm 8 [16] with the correction in docs/paper-errors.md#lr-kde-rkhs-constant). The gap between the two is the noise the
    Cauchy–Schwarz step of Thm 8 costs.

    Args:
        points: ``(k,)`` or ``(k, d)`` records in ``[0, 1]^d`` (the replaced ones).
        others: ``(k',)`` or ``(k', d)`` replacements in ``[0, 1]^d``; default ``points``.
        kernel: the ICLP kernel ``basis`` was built from (bandwidth inside, see docs/paper-errors.md#lr-kde-operator-power).
        basis: its Karhunen–Loève basis on the grid.
        eta: operator power of the smoothing kernel, ``> 1``.
        n: number of records (public).

    Returns:
        ``(k, k')`` numpy array of distances (zero where ``points[a] == others[b]``).

    Raises:
        ValueError / TypeError: a bad ``eta`` or ``n``, points of the wrong
            dimension, NaN, or a point outside ``[0, 1]^d``.

    Example:
        >>> kernel, basis = kde_basis(0.1, grid_size=50)
        >>> d = kde_replacement_distances([0.0, 1.0], kernel=kernel, basis=basis, eta=1.5, n=100)
        >>> bool(d[0, 0] == 0.0 and d[0, 1] == d[1, 0] > 0)
        True
    """
    basis = check_basis(basis)
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a dpaudit.spaces.Kernel, got {type(kernel).__name__}.")
    eta = check_number("eta", eta, low=1.0, hint=" (LR Thm 8 smooths with K^eta, eta > 1)")
    n = check_count("n", n)
    dim = basis.grid.dim
    x = _domain_points(points, dim, "reject")
    y = x if others is None else _domain_points(others, dim, "reject")
    weights = basis.eigenvalues ** (eta - 0.5) * kde_normaliser(basis, eta) / n
    phi_x = _nystrom(kernel, x, *_basis_arrays(basis))
    phi_y = phi_x if others is None else _nystrom(kernel, y, *_basis_arrays(basis))
    return np.asarray(_weighted_l1_distances(phi_x, phi_y, weights))


@jax.jit
def _weighted_l1_distances(phi_x, phi_y, weights):
    # one row at a time: memory k' K, not k k' K
    return jax.lax.map(lambda row: jnp.abs(row - phi_y) @ weights, phi_x)


@register("iclp-qr-kde", example={"n": 2000, "epsilon": 1.0, "bandwidth": 0.05, "eta": 1.25})
def iclp_qr_kde(
    n: int = 2000,
    epsilon: float = 1.0,
    bandwidth: float | None = None,
    eta: float = 1.25,
    *,
    dim: int = 1,
    grid_size: int = 100,
    n_components: int | None = None,
    kernel: Kernel | None = None,
    kernel_sup: float | None = None,
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""ICLP-QR kernel density estimate on ``[0, 1]^d`` (LR Thm 8 [16], corrected as in docs/paper-errors.md#lr-kde-sensitivity): pure epsilon-DP.

    Releases the grid values of ``(c/n) sum_i K^eta(., x_i)`` plus ICLP noise
    with the ICLP kernel ``K = Gaussian(lengthscale=bandwidth)`` (or ``kernel``)
    and ``Delta = (2 c sqrt(M_K)/n) sqrt(tr K^(eta-1))``.

    Args:
        n: number of points (public).
        epsilon: privacy parameter.
        bandwidth: ``h`` in the ICLP kernel; default :func:`pss_kde_bandwidth`
            (``n^(-1/(4+d))``). Ignored when ``kernel`` is given.
        eta: operator power of the smoothing kernel, ``> 1`` (paper: 1.25, 1.5).
        dim: dimension ``d`` of the domain.
        grid_size: grid points per axis.
        n_components: KL components kept (default: every eigenvalue above
            ``1e-10 lambda_1``).
        kernel: another ICLP kernel with the bandwidth already inside it.
        kernel_sup: public bound on ``sup_x K(x, x)`` (needed for a non-stationary kernel).
        out_of_bound: ``"reject"`` or ``"clip"`` points outside ``[0, 1]^d``.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    n, epsilon = check_count("n", n), check_number("epsilon", epsilon)
    dim, grid_size = check_count("dim", dim), check_count("grid_size", grid_size)
    eta = check_number("eta", eta, low=1.0, hint=" (LR Thm 8 smooths with K^eta, eta > 1)")
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    if kernel is None:
        bandwidth = pss_kde_bandwidth(n, dim) if bandwidth is None else bandwidth
        kernel, basis = kde_basis(bandwidth, grid_size, dim, n_components)
    else:
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a dpaudit.spaces.Kernel, got {type(kernel).__name__}.")
        basis = kernel_basis(kernel, grid_size, dim, n_components)
    sup_k = (
        stationary_kernel_sup(kernel)
        if kernel_sup is None
        else check_number("kernel_sup", kernel_sup)
    )
    normaliser = kde_normaliser(basis, eta)
    lam, phi = basis.eigenvalues, basis.eigenfunctions
    sensitivity = kde_sensitivity(lam, n=n, eta=eta, normaliser=normaliser, sup_kernel=sup_k)
    sigma = iclp_sigma(sensitivity, epsilon)

    def summary(data):
        x = _domain_points(data, dim, out_of_bound)
        check_records(x.shape[0], n)
        return phi @ _kde_coefficients(x, kernel, basis, eta, normaliser)

    return iclp_grid_release(
        "iclp-qr-kde",
        summary,
        basis,
        sigma,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference=f"{REFERENCE}, Thm 8 with the 2 sqrt(M_K) RKHS bound (docs/paper-errors.md#lr-kde-rkhs-constant) and Thm 4, "
        "sigma = sqrt(2) Delta/epsilon",
        params={
            "n": n,
            "epsilon": epsilon,
            "bandwidth": bandwidth,
            "eta": eta,
            "dim": dim,
            "grid_size": grid_size,
            "n_components": basis.n_components,
            "kernel": repr(kernel),
            "kernel_sup": sup_k,
            "normaliser": normaliser,
            "out_of_bound": out_of_bound,
        },
        description=f"ICLP-QR KDE of n = {n} points of [0, 1]^{dim} ({out_of_bound} outside): (c/n) sum_i "
        f"K^eta(., x_i) with K = {kernel!r} (bandwidth inside the ICLP kernel), operator "
        f"power eta = {eta:g} by eigendecomposition, c = {normaliser:.4g}; 1,K sensitivity "
        f"{sensitivity:.4g} = 2 c sqrt(M_K) sqrt(tr K^(eta-1))/n; ICLP noise sigma = "
        f"{sigma:.4g}; released as grid values (K = {basis.n_components} components).",
    )


# ------------------------------------------------------------------ kernel ridge regression


def krr_fit(points, responses, kernel: Kernel, basis: KarhunenLoeveBasis, *, psi, eta):
    r"""Kernel ridge regression in the eigenbasis (LR eq. 11 with the squared penalty, see docs/paper-errors.md#lr-erm-squared-penalty).

    ``theta = argmin (1/n) sum_i (y_i - sum_j theta_j phi_j(x_i))^2 + psi sum_j theta_j^2 / lambda_j^eta``,
    solved as ``theta = S (S Phi^T Phi S / n + psi I)^{-1} S Phi^T y / n`` with
    ``S = diag(lambda^(eta/2))`` (well conditioned). Returns ``(K,)`` coefficients.

    Args:
        points: ``(n,)`` or ``(n, d)`` covariates.
        responses: ``(n,)`` responses.
        kernel: the kernel of the basis.
        basis: its KL basis.
        psi: the penalty weight.
        eta: the power of the smoothing operator.

    Returns:
        ``(K,)`` coefficients ``theta``.

    Raises:
        ValueError: responses of the wrong shape.
    """
    basis = check_basis(basis)
    psi, eta = check_psi(psi), check_number("eta", eta)
    x = _points(points, basis.grid.dim)
    y = jnp.asarray(responses, dtype=jnp.float64)
    if y.shape != (x.shape[0],):
        raise ValueError(
            f"responses have shape {tuple(y.shape)} but must be ({x.shape[0]},): one per point."
        )
    return _krr_coefficients(x, y, kernel, basis, psi, eta)


def _krr_coefficients(x, y, kernel, basis, psi, eta):
    return _krr_core(kernel, x, y, *_basis_arrays(basis), psi, eta)


@functools.partial(jax.jit, static_argnums=0)
def _krr_core(kernel, x, y, grid_points, weights, eigenfunctions, eigenvalues, psi, eta):
    n = x.shape[0]
    scale = eigenvalues ** (0.5 * eta)
    design = _nystrom(kernel, x, grid_points, weights, eigenfunctions, eigenvalues) * scale
    gram = design.T @ design / n + psi * jnp.eye(eigenvalues.shape[0])
    return scale * jnp.linalg.solve(gram, design.T @ y / n)


def krr_sensitivity(
    eigenvalues, *, n: int, psi: float, eta: float, response_bound: float, sup_kernel: float = 1.0
) -> float:
    r"""``1,C`` sensitivity of kernel ridge regression: ``M sqrt(kappa tr C^(eta-1)) / (psi n)``.

    LR Thm 9 [18] (squared penalty, see docs/paper-errors.md#lr-erm-squared-penalty) with ``kappa = lambda_1^(eta-1) sup K``
    and the square loss's admissibility constant ``M = 2B(1 + sqrt(kappa/psi))``.

    Args:
        eigenvalues: the ``lambda_j`` of ``C``.
        n: the number of pairs.
        psi: the penalty weight.
        eta: the power of the smoothing operator.
        response_bound: ``B`` with ``|y| <= B``.
        sup_kernel: ``sup_x K(x, x)``.

    Returns:
        ``Delta``.

    Example:
        >>> round(krr_sensitivity([1.0], n=10, psi=1.0, eta=2.0, response_bound=1.0), 12)
        0.4
    """
    lam = check_eigenvalues(eigenvalues)
    n, psi = check_count("n", n), check_psi(psi)
    eta = check_number("eta", eta, low=1.0, hint=" (tr C^(eta-1) must be finite)")
    b = check_number("response_bound", response_bound)
    kappa = power_kernel_diagonal_bound(lam, eta, sup_kernel)
    lipschitz = 2.0 * b * (1.0 + math.sqrt(kappa / psi))
    return lipschitz * math.sqrt(kappa * float(np.sum(lam ** (eta - 1.0)))) / (psi * n)


def _regression_data(data, dim, response_bound, out_of_bound):
    if not isinstance(data, tuple | list) or len(data) != 2:
        raise TypeError("a regression dataset is a pair (points, responses) of arrays.")
    x = _domain_points(data[0], dim, out_of_bound)
    if np.shape(data[1]) != (x.shape[0],):
        raise ValueError(
            f"responses have shape {tuple(np.shape(data[1]))} but must be ({x.shape[0]},): one "
            "per point."
        )
    if is_concrete(data[1]):
        y = np.asarray(data[1], dtype=np.float64)
        check_finite("responses", y)
        too_big = np.abs(y) > response_bound
        if out_of_bound == "reject" and np.any(too_big):
            raise ValueError(
                f"response {int(np.argmax(too_big))} exceeds the public bound |y| <= "
                f"{response_bound:g}; rescale, raise the bound, or use out_of_bound='clip'."
            )
        return x, jnp.asarray(np.clip(y, -response_bound, response_bound))
    y = jnp.asarray(data[1], dtype=jnp.float64)
    if out_of_bound == "clip":
        return x, jnp.clip(y, -response_bound, response_bound)
    return x, jnp.where(jnp.abs(y) > response_bound, jnp.nan, y)


@register("iclp-qr-krr", example={"n": 200, "epsilon": 1.0, "psi": 0.05})
def iclp_qr_krr(
    n: int = 200,
    epsilon: float = 1.0,
    psi: float = 0.05,
    eta: float | None = None,
    *,
    response_bound: float = 1.0,
    kernel: Kernel | None = None,
    grid_size: int = 100,
    dim: int = 1,
    n_components: int | None = None,
    beta: float | None = None,
    kernel_sup: float | None = None,
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""ICLP-QR kernel ridge regression (LR Thm 9 [18], see docs/paper-errors.md#lr-erm-squared-penalty): pure epsilon-DP regression curve.

    Data ``(x, y)``: ``x`` of shape ``(n,)`` or ``(n, d)`` in ``[0, 1]^d`` and
    ``|y_i| <= response_bound``. Releases the grid values of the fit
    ``sum_j theta_j phi_j`` plus ICLP noise with ``Delta`` from :func:`krr_sensitivity`.

    Args:
        n, epsilon: as usual.
        psi: penalty weight of ``psi ||f||^2_{C^eta}`` (the paper gives no PSS rule here).
        eta: power, ``> 1 + 1/beta`` so ``tr C^(eta-1)`` is finite; default :func:`pss_eta`.
        response_bound: public ``B`` with ``|y| <= B``.
        kernel: the ICLP covariance kernel (default Matérn ``nu = 3/2``, ``rho = 0.1``).
        grid_size, dim, n_components: the KL basis of the kernel on ``[0, 1]^d``.
        beta: eigenvalue decay rate (default :func:`kernel_decay_rate` of the kernel,
            else fitted on the spectrum).
        kernel_sup: public bound on ``sup_x K(x, x)`` for a non-stationary kernel.
        out_of_bound: ``"reject"`` or ``"clip"`` points outside the domain and large responses.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    n, epsilon, psi = check_count("n", n), check_number("epsilon", epsilon), check_psi(psi)
    b = check_number("response_bound", response_bound)
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    kernel = DEFAULT_KERNEL if kernel is None else kernel
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a dpaudit.spaces.Kernel, got {type(kernel).__name__}.")
    dim = check_count("dim", dim)
    basis = kernel_basis(kernel, grid_size, dim, n_components)
    beta = resolve_beta(kernel_decay_rate(kernel, dim) if beta is None else beta, basis.eigenvalues)
    eta = check_number("eta", pss_eta(beta) if eta is None else eta)
    if eta <= 1.0 + 1.0 / beta:
        raise ValueError(
            f"ICLP-QR regression needs eta > 1 + 1/beta = {1.0 + 1.0 / beta:.4g} so that "
            f"tr(C^(eta-1)) is finite (LR Thm 9; beta = {beta:.4g}), got eta = {eta:g}."
        )
    sup_k = (
        stationary_kernel_sup(kernel)
        if kernel_sup is None
        else check_number("kernel_sup", kernel_sup)
    )
    lam = basis.eigenvalues
    sensitivity = krr_sensitivity(lam, n=n, psi=psi, eta=eta, response_bound=b, sup_kernel=sup_k)
    sigma = iclp_sigma(sensitivity, epsilon)

    def summary(data):
        x, y = _regression_data(data, dim, b, out_of_bound)
        check_records(x.shape[0], n)
        return basis.eigenfunctions @ _krr_coefficients(x, y, kernel, basis, psi, eta)

    return iclp_grid_release(
        "iclp-qr-krr",
        summary,
        basis,
        sigma,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference=f"{REFERENCE}, Thm 9 with the squared penalty (docs/paper-errors.md#lr-erm-squared-penalty) and HRW's M-admissible "
        "bound, square loss M = 2B(1 + sqrt(kappa/psi)); Thm 4, sigma = sqrt(2) Delta/eps",
        params={
            "n": n,
            "epsilon": epsilon,
            "psi": psi,
            "eta": eta,
            "beta": beta,
            "response_bound": b,
            "kernel": repr(kernel),
            "kernel_sup": sup_k,
            "grid_size": basis.grid_size,
            "n_components": basis.n_components,
            "out_of_bound": out_of_bound,
        },
        description=f"ICLP-QR kernel ridge regression on n = {n} pairs (x in [0, 1]^{dim}, |y| <= {b:g}; "
        f"{out_of_bound} outside): penalty psi ||f||^2_(C^eta), psi = {psi:g}, eta = "
        f"{eta:.4g}, C = {kernel!r}; 1,C sensitivity {sensitivity:.4g}; ICLP noise sigma = "
        f"{sigma:.4g}; released as grid values (K = {basis.n_components}).",
    )


# ------------------------------------------------------------------ covariance function


@jax.jit
def centred_second_moment(coefficients: jax.Array) -> jax.Array:
    """The empirical covariance (divisor ``n``) of coefficient vectors.

    Args:
        coefficients: ``(n, K)`` array, one coefficient vector per record.

    Returns:
        ``(K, K)`` array ``sum_i c_i c_i^T / n - mean mean^T``.
    """
    mean = jnp.mean(coefficients, axis=0)
    return coefficients.T @ coefficients / coefficients.shape[0] - jnp.outer(mean, mean)


@jax.jit
def _covariance_core(curves, weights, eigenfunctions, shrinkage):
    return shrinkage * centred_second_moment((curves * weights) @ eigenfunctions)


def qr_covariance(curves, basis: KarhunenLoeveBasis, *, psi: float, eta: float) -> jax.Array:
    r"""Tensor ICLP-QR covariance coefficients ``(K, K)`` (LR App. C.1, typo fixed as in docs/paper-errors.md#lr-minor-typos).

    ``hat C_{jl} = (lambda_j lambda_l)^eta / ((lambda_j lambda_l)^eta + psi) <bar C, phi_j (x) phi_l>``
    with ``bar C = (1/n) sum_i (X_i - bar X) (x) (X_i - bar X)`` (projected on the basis).

    Args:
        curves: ``(n, m)`` grid values on the basis grid.
        basis: the ICLP eigenbasis.
        psi: the penalty weight.
        eta: the power of the smoothing operator.

    Returns:
        ``(K, K)`` coefficients.

    Raises:
        ValueError: curves of the wrong shape or not finite.
    """
    basis = check_basis(basis)
    psi, eta = check_psi(psi), check_number("eta", eta)
    if np.ndim(curves) != 2 or np.shape(curves)[1] != basis.grid_size:
        raise ValueError(
            f"curves have shape {tuple(np.shape(curves))} but must be (n, {basis.grid_size}): one "
            "row of grid values per record."
        )
    check_finite("curves", curves)
    lam2 = jnp.outer(basis.eigenvalues, basis.eigenvalues)
    shrinkage = qr_shrinkage(lam2, psi=psi, eta=eta)
    x = jnp.asarray(curves, dtype=jnp.float64)
    return _covariance_core(x, basis.grid.weights, basis.eigenfunctions, shrinkage)


def covariance_hs_sensitivity(*, n: int, tau: float) -> float:
    r"""Hilbert–Schmidt sensitivity of ``bar C``: ``(n - 1)(4 + sqrt 2) tau^2 / n^2``.

    Replacing ``X_1 = a`` by ``b`` (``||a||, ||b|| <= tau``, ``S = sum_{i>=2} X_i``):
    ``n Delta bar C = (1 - 1/n)(a a^T - b b^T) - (1/n)(S (a-b)^T + (a-b) S^T)``, with
    ``||a a^T - b b^T||_HS <= sqrt 2 tau^2`` and ``||S (a-b)^T + (a-b) S^T||_HS <=
    2 ||S|| ||a - b|| <= 4 (n-1) tau^2``.

    Args:
        n: the number of curves.
        tau: the public L2 bound.

    Returns:
        ``Delta_HS``.
    """
    n, tau = check_count("n", n), check_number("tau", tau)
    return (n - 1) * (4.0 + math.sqrt(2.0)) * tau**2 / n**2


def covariance_sensitivity(
    eigenvalues, *, n: int, tau: float, psi: float, eta: float, bound: str = "printed"
) -> float:
    r"""``1, C (x) C`` sensitivity of :func:`qr_covariance` (App. C.1 with the mean's Thm 6 argument).

    With ``W_{jl} = (lambda_j lambda_l)^(eta-1/2) / ((lambda_j lambda_l)^eta + psi)``:
    ``"printed"`` ``Delta_HS sum_{jl} W_{jl}``, ``"cauchy-schwarz"`` ``Delta_HS ||W||_F``.

    Args:
        eigenvalues: the ``lambda_j``.
        n, tau: as :func:`covariance_hs_sensitivity`.
        psi: the penalty weight.
        eta: the power of the smoothing operator.
        bound: ``"printed"`` or ``"cauchy-schwarz"``.

    Returns:
        ``Delta``.
    """
    lam = check_eigenvalues(eigenvalues)
    psi, eta = check_psi(psi), check_number("eta", eta)
    check_choice("bound", bound, QR_BOUNDS)
    lam2 = np.outer(lam, lam)
    w = lam2 ** (eta - 0.5) / (lam2**eta + psi)
    total = float(np.sum(w)) if bound == "printed" else float(np.sqrt(np.sum(w * w)))
    return covariance_hs_sensitivity(n=n, tau=tau) * total


@register("iclp-qr-covariance", example={"n": 500, "epsilon": 1.0, "tau": 4.0})
def iclp_qr_covariance(
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
    r"""Tensor ICLP-QR covariance function (LR App. C.1): pure epsilon-DP ``K x K`` coefficients.

    Releases ``hat C_{jl} + xi_{jl}`` with ``xi_{jl} ~ Laplace(Delta sqrt(lambda_j lambda_l)/epsilon)``
    independent (the tensor ICLP), flattened row-major to ``(K^2,)``; the
    function is ``sum_{jl} release_{jl} phi_j(s) phi_l(t)`` (post-processing).

    Args:
        n, epsilon, tau, out_of_bound: as the mean (curves with ``||X_i|| <= tau``).
        psi, eta: penalty and power; default the mean's PSS (:func:`pss_qr_psi`,
            :func:`pss_eta`), the paper having no rule for the covariance.
        basis: ICLP eigenbasis (default LR's Matérn on 100 points, K = 20: the
            release has ``K^2`` coordinates).
        beta: eigenvalue decay rate for the ``eta`` check (``eta > 1/2 + 1/beta``).
        sensitivity_bound: ``"printed"`` or ``"cauchy-schwarz"``.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    n, epsilon = check_count("n", n), check_number("epsilon", epsilon)
    tau = check_number("tau", tau, hint=" (the public bound on ||X_i||_{L2})")
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    check_choice("sensitivity_bound", sensitivity_bound, QR_BOUNDS)
    if basis is None:
        basis = default_basis(100, 20)
        beta = kernel_decay_rate(DEFAULT_KERNEL) if beta is None else beta
    basis = check_basis(basis)
    beta = resolve_beta(beta, basis.eigenvalues)
    eta = check_qr_eta(pss_eta(beta) if eta is None else eta, beta)
    psi = pss_qr_psi(n, epsilon, beta=beta, eta=eta) if psi is None else check_psi(psi)
    lam2 = jnp.outer(basis.eigenvalues, basis.eigenvalues)
    sensitivity = covariance_sensitivity(
        basis.eigenvalues, n=n, tau=tau, psi=psi, eta=eta, bound=sensitivity_bound
    )
    sigma = iclp_sigma(sensitivity, epsilon)
    flat_eigenvalues = lam2.reshape(-1)
    shrinkage = qr_shrinkage(lam2, psi=psi, eta=eta)
    weights, phi = basis.grid.weights, basis.eigenfunctions

    def summary(data):
        x = enforce_l2_bound(data, basis.grid, tau, out_of_bound)
        check_records(x.shape[0], n)
        return _covariance_core(x, weights, phi, shrinkage).reshape(-1)

    k = basis.n_components
    return iclp_release(
        "iclp-qr-covariance",
        summary,
        flat_eigenvalues,
        sigma,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference=f"{REFERENCE}, App. C.1 (tensor ICLP-QR) with Thm 6's argument on "
        f"Delta_HS = (n-1)(4+sqrt 2) tau^2/n^2 ({sensitivity_bound}); Thm 4",
        params={
            "n": n,
            "epsilon": epsilon,
            "tau": tau,
            "psi": psi,
            "eta": eta,
            "beta": beta,
            "n_components": k,
            "sensitivity_bound": sensitivity_bound,
            "out_of_bound": out_of_bound,
            "sigma": sigma,
        },
        description=f"Tensor ICLP-QR covariance of n = {n} curves (||X_i|| <= tau = {tau:g}, "
        f"{out_of_bound} above): coefficients of bar C shrunk by (lambda_j lambda_l)^eta/"
        f"((lambda_j lambda_l)^eta + psi), eta = {eta:.4g}, psi = {psi:.4g}; 1,C(x)C "
        f"sensitivity {sensitivity:.4g} ({sensitivity_bound}); tensor ICLP noise sigma = "
        f"{sigma:.4g}; released as the {k} x {k} coefficient matrix, flattened.",
    )


# ------------------------------------------------------------------ function-on-scalar regression


def fos_summary(covariates, responses, basis: KarhunenLoeveBasis, *, psi: float, eta: float):
    r"""``(T1 upper triangle, T2 coefficients)`` of function-on-scalar regression (App. C.2).

    ``T1 = (1/n) sum_i X_i X_i^T`` (its ``p(p+1)/2`` upper-triangular entries,
    row-major) and the QR-smoothed ``T2_k = (1/n) sum_i X_ik Y_i``, ``(p, K)``.

    Args:
        covariates: ``(n, p)``.
        responses: ``(n, m)`` curves on the basis grid.
        basis: the ICLP eigenbasis.
        psi: the penalty weight.
        eta: the power of the smoothing operator.

    Returns:
        ``(t1, t2)``: ``(p(p+1)/2,)`` and ``(p, K)``.

    Raises:
        ValueError: inconsistent shapes.
    """
    basis = check_basis(basis)
    psi, eta = check_psi(psi), check_number("eta", eta)
    x = jnp.asarray(covariates, dtype=jnp.float64)
    y = jnp.asarray(responses, dtype=jnp.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0] or y.shape[1] != basis.grid_size:
        raise ValueError(
            f"covariates {tuple(x.shape)} and responses {tuple(y.shape)} must be (n, p) and "
            f"(n, {basis.grid_size})."
        )
    shrinkage = qr_shrinkage(basis.eigenvalues, psi=psi, eta=eta)
    return _fos_parts(x, y, basis.grid.weights, basis.eigenfunctions, shrinkage)


@jax.jit
def _fos_parts(x, y, weights, eigenfunctions, shrinkage):
    n, p = x.shape
    rows, cols = np.triu_indices(p)
    t1 = (x.T @ x / n)[rows, cols]
    t2 = shrinkage * (x.T @ ((y * weights) @ eigenfunctions) / n)
    return t1, t2


def fos_sensitivities(
    eigenvalues,
    *,
    n: int,
    p: int,
    tau: float,
    covariate_bound: float,
    psi: float,
    eta: float,
    bound: str = "printed",
) -> tuple[float, float]:
    r"""``(Delta_1, Delta_2)``: ``l1`` sensitivity of ``T1`` and ``sum_k ||.||_{1,C}`` of ``T2``.

    ``Delta_1 = (p + 1) xi^2 / n`` (``sum_{k<=l} |a_k a_l| = (||a||_1^2 + ||a||_2^2)/2
    <= (p + 1) xi^2 / 2``); ``Delta_2 = sqrt(p) xi`` times the mean's QR bound with
    ``tau`` (``sum_k |a_k| <= sqrt(p) xi``).

    Args:
        eigenvalues: the ``lambda_j``.
        n: the number of records.
        p: the number of covariates.
        tau: the public L2 bound of a response curve.
        covariate_bound: ``xi`` with ``||X_i||_2 <= xi``.
        psi: the penalty weight.
        eta: the power of the smoothing operator.
        bound: ``"printed"`` or ``"cauchy-schwarz"``.

    Returns:
        ``(Delta_1, Delta_2)``.
    """
    lam = check_eigenvalues(eigenvalues)
    n, p = check_count("n", n), check_count("p", p)
    xi = check_number("covariate_bound", covariate_bound)
    tau, psi, eta = check_number("tau", tau), check_psi(psi), check_number("eta", eta)
    check_choice("bound", bound, QR_BOUNDS)
    w = lam ** (eta - 0.5) / (lam**eta + psi)
    total = float(np.sum(w)) if bound == "printed" else float(np.sqrt(np.sum(w * w)))
    return (p + 1) * xi**2 / n, 2.0 * math.sqrt(p) * xi * tau / n * total


def _fos_data(data, p, xi, basis, tau, out_of_bound):
    if not isinstance(data, tuple | list) or len(data) != 2:
        raise TypeError("a regression dataset is a pair (covariates (n, p), curves (n, m)).")
    if np.ndim(data[0]) != 2 or np.shape(data[0])[1] != p:
        raise ValueError(f"covariates have shape {tuple(np.shape(data[0]))} but must be (n, {p}).")
    y = enforce_l2_bound(data[1], basis.grid, tau, out_of_bound)
    if y.shape[0] != np.shape(data[0])[0]:
        raise ValueError(f"{np.shape(data[0])[0]} covariate rows but {y.shape[0]} response curves.")
    if is_concrete(data[0]):
        x = np.asarray(data[0], dtype=np.float64)
        check_finite("covariates", x)
        norms = np.sqrt(np.sum(x * x, axis=1))
        if out_of_bound == "reject" and np.any(norms > xi * (1.0 + ROUNDING_SLACK)):
            raise ValueError(
                f"covariate vector {int(np.argmax(norms))} has l2 norm {norms.max():.6g} > "
                f"covariate_bound = {xi:g}; rescale, raise the bound, or use out_of_bound='clip'."
            )
        return jnp.asarray(
            x * np.where(norms > xi, xi / np.maximum(norms, 1e-300), 1.0)[:, None]
        ), y
    x = jnp.asarray(data[0], dtype=jnp.float64)
    norms = jnp.sqrt(jnp.sum(x * x, axis=1))
    factor = jnp.where(norms > xi, xi / jnp.maximum(norms, 1e-300), 1.0)
    if out_of_bound == "reject":
        factor = jnp.where(norms > xi * (1.0 + ROUNDING_SLACK), jnp.nan, factor)
    return x * factor[:, None], y


def fos_coefficient_functions(release, *, p: int, basis: KarhunenLoeveBasis) -> jax.Array:
    r"""Post-processing: ``tilde beta = tilde T1^{-1} tilde T2`` as grid values ``(p, m)``.

    ``tilde T1`` is rebuilt symmetric from its released upper triangle. It
    may be singular or indefinite at small ``n epsilon``; no correction is made.

    Args:
        release: the released vector ``(p(p+1)/2 + p K,)``.
        p: the number of covariates.
        basis: the ICLP eigenbasis.

    Returns:
        ``(p, m)`` grid values.

    Raises:
        ValueError: a release of the wrong length.
    """
    basis = check_basis(basis)
    p = check_count("p", p)
    release = jnp.asarray(release, dtype=jnp.float64)
    n_t1 = p * (p + 1) // 2
    if release.shape[-1] != n_t1 + p * basis.n_components:
        raise ValueError(
            f"release has {release.shape[-1]} coordinates, expected p(p+1)/2 + p K = "
            f"{n_t1 + p * basis.n_components}."
        )
    rows, cols = np.triu_indices(p)
    t1 = jnp.zeros((p, p)).at[rows, cols].set(release[:n_t1])
    t1 = t1 + jnp.triu(t1, 1).T
    t2 = release[n_t1:].reshape(p, basis.n_components)
    return basis.reconstruct(jnp.linalg.solve(t1, t2))


@register(
    "iclp-qr-fos-regression",
    example={"n": 500, "epsilon": 1.0, "p": 2, "tau": 4.0, "covariate_bound": 1.0},
)
def iclp_qr_fos_regression(
    n: int = 500,
    epsilon: float = 1.0,
    p: int = 2,
    tau: float = 4.0,
    covariate_bound: float = 1.0,
    gamma: float = 0.5,
    psi: float | None = None,
    eta: float | None = None,
    *,
    basis: KarhunenLoeveBasis | None = None,
    beta: float | None = None,
    sensitivity_bound: str = "printed",
    out_of_bound: str = "reject",
) -> Mechanism:
    r"""Function-on-scalar regression with a budget split (LR App. C.2): pure epsilon-DP.

    Data ``(X, Y)``: covariates ``(n, p)`` with ``||X_i||_2 <= covariate_bound``
    and response curves ``(n, m)`` with ``||Y_i||_{L2} <= tau``. Releases
    ``(T1 upper triangle + Laplace(Delta_1/(gamma eps)),
    T2 coefficients + Laplace(Delta_2 sqrt(lambda_j)/((1-gamma) eps)))`` flattened
    to ``(p(p+1)/2 + p K,)``: an ICLP with block eigenvalues
    ``nu = ((Delta_1/gamma)^2, ..., Delta_2^2 lambda_j / (1-gamma)^2, ...)`` and
    ``sigma = sqrt(2)/epsilon`` whose ``1,nu`` sensitivity is
    ``gamma + (1 - gamma) = 1`` (sequential composition).

    Args:
        n, epsilon, tau, basis, beta, eta, sensitivity_bound, out_of_bound:
            as :func:`~mechanisms.iclp.mean.iclp_qr_mean` (for ``T2``).
        psi: QR penalty of ``T2``; default :func:`pss_qr_psi` at the budget
            ``(1 - gamma) epsilon`` that ``T2`` receives.
        p: number of scalar covariates (include a constant 1 for an intercept).
        covariate_bound: public ``xi`` with ``||X_i||_2 <= xi``.
        gamma: share of epsilon spent on ``T1`` (the paper leaves it free; 1/2).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    n, epsilon, p = check_count("n", n), check_number("epsilon", epsilon), check_count("p", p)
    tau = check_number("tau", tau, hint=" (the public bound on ||Y_i||_{L2})")
    xi = check_number("covariate_bound", covariate_bound)
    gamma = check_number("gamma", gamma)
    if not gamma < 1:
        raise ValueError(
            f"gamma is the share of epsilon spent on T1 and must lie in (0, 1), got {gamma!r}."
        )
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    check_choice("sensitivity_bound", sensitivity_bound, QR_BOUNDS)
    if basis is None:
        basis = default_basis()
        beta = kernel_decay_rate(DEFAULT_KERNEL) if beta is None else beta
    basis = check_basis(basis)
    beta = resolve_beta(beta, basis.eigenvalues)
    eta = check_qr_eta(pss_eta(beta) if eta is None else eta, beta)
    psi = (
        pss_qr_psi(n, (1.0 - gamma) * epsilon, beta=beta, eta=eta)
        if psi is None
        else check_psi(psi)
    )
    lam = basis.eigenvalues
    delta_1, delta_2 = fos_sensitivities(
        lam, n=n, p=p, tau=tau, covariate_bound=xi, psi=psi, eta=eta, bound=sensitivity_bound
    )
    n_t1 = p * (p + 1) // 2
    block = np.asarray(lam) * delta_2**2 / (1.0 - gamma) ** 2
    nu = jnp.asarray(np.concatenate([np.full(n_t1, (delta_1 / gamma) ** 2), np.tile(block, p)]))
    sigma = iclp_sigma(1.0, epsilon)
    shrinkage = qr_shrinkage(lam, psi=psi, eta=eta)

    def summary(data):
        x, y = _fos_data(data, p, xi, basis, tau, out_of_bound)
        check_records(x.shape[0], n)
        t1, t2 = _fos_parts(x, y, basis.grid.weights, basis.eigenfunctions, shrinkage)
        return jnp.concatenate([t1, t2.reshape(-1)])

    return iclp_release(
        "iclp-qr-fos-regression",
        summary,
        nu,
        sigma,
        epsilon=epsilon,
        sensitivity=1.0,
        reference=f"{REFERENCE}, App. C.2: gamma eps on T1 (Laplace, l1 sensitivity (p+1) xi^2/n), "
        f"(1-gamma) eps on T2 (ICLP-QR, Thm 6 {sensitivity_bound} times sqrt(p) xi/tau), "
        "sequential composition; unit 1,nu sensitivity of the joint ICLP",
        params={
            "n": n,
            "epsilon": epsilon,
            "p": p,
            "tau": tau,
            "covariate_bound": xi,
            "gamma": gamma,
            "psi": psi,
            "eta": eta,
            "beta": beta,
            "delta_1": delta_1,
            "delta_2": delta_2,
            "n_components": basis.n_components,
            "sensitivity_bound": sensitivity_bound,
            "out_of_bound": out_of_bound,
        },
        description=f"Function-on-scalar regression, n = {n}, p = {p} (||X_i||_2 <= {xi:g}, ||Y_i|| <= "
        f"{tau:g}; {out_of_bound} outside): T1 = X^T X/n with Laplace({delta_1 / (gamma * epsilon):.4g}) "
        f"on its upper triangle (gamma = {gamma:g}), T2 = X^T Y/n smoothed by ICLP-QR (eta = "
        f"{eta:.4g}, psi = {psi:.4g}) with ICLP noise at (1-gamma) eps, Delta_2 = "
        f"{delta_2:.4g}; released as coefficients; beta = T1^-1 T2 is post-processing.",
    )


# ------------------------------------------------- function-on-scalar data and the scalar case


def fos_dataset(
    n: int,
    p: int = 2,
    *,
    tau: float = 4.0,
    covariate_bound: float = 1.0,
    grid_size: int = 100,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Simulated function-on-scalar data ``Y_i(t) = X_i^T beta(t) + e_i(t)`` within public bounds.

    ``X_i = (xi / sqrt p) (1, u_i2, ..., u_ip)`` with ``u ~ U[-1, 1]`` (an intercept and
    ``p - 1`` covariates, ``||X_i||_2 <= xi``); ``beta_1(t) = sin(2 pi t)``,
    ``beta_k(t) = t^(k-1)``; ``e_i`` a smooth random curve (three random Fourier terms of
    amplitude 0.3); each curve rescaled to ``||Y_i||_{L2} <= tau`` on the midpoint grid
    (a public bound, as the release needs).

    Args:
        n: records.
        p: covariates (the first is the intercept).
        tau: the public bound on ``||Y_i||_{L2}``.
        covariate_bound: the public ``xi``.
        grid_size: midpoint grid points (``default_basis``'s grid has 100).
        seed: the seed.

    Returns:
        ``(X (n, p), Y (n, grid_size))``.
    """
    n, p, grid_size = check_count("n", n), check_count("p", p), check_count("grid_size", grid_size)
    rng = np.random.default_rng(seed)
    t = (np.arange(grid_size) + 0.5) / grid_size
    u = np.concatenate([np.ones((n, 1)), rng.uniform(-1.0, 1.0, (n, p - 1))], axis=1)
    x = covariate_bound / math.sqrt(p) * u
    beta = np.stack([np.sin(2 * np.pi * t)] + [t**k for k in range(1, p)])
    freq = np.arange(1, 4)
    noise = 0.3 * rng.standard_normal((n, 3)) @ np.sin(np.pi * freq[:, None] * t[None, :])
    y = x @ beta + noise
    norms = np.sqrt(np.mean(y * y, axis=1))
    return x, y * np.minimum(1.0, tau / np.maximum(norms, 1e-300))[:, None]


def example_pair(name: str, seed: int = 0, **params):
    """The documented neighbouring pair of ``iclp-qr-fos-regression`` (``generator = "example"``).

    :func:`fos_dataset` with record 0 replaced by an extreme one: covariates
    ``xi e_1`` and curve ``tau sqrt 2 sin(pi t)`` in ``D``, ``xi e_2`` and the
    negated curve in ``D'`` (both on their bounds).

    Args:
        name: ``"iclp-qr-fos-regression"``.
        seed: the seed of :func:`fos_dataset`.
        **params: ``n``, ``p``, ``tau``, ``covariate_bound`` (default: the catalogue example).

    Returns:
        ``((X, Y), (X', Y'))``.

    Raises:
        ValueError: another name, or ``p < 2``.
    """
    if name != "iclp-qr-fos-regression":
        raise ValueError(f"no example pair for {name!r} in mechanisms.iclp.beyond.")
    from dpaudit.model.registry import entry

    setting = {**entry(name).example, **params}
    n, p = setting["n"], setting["p"]
    tau, xi = setting["tau"], setting["covariate_bound"]
    if p < 2:
        raise ValueError("the example pair moves the covariates between two axes: p >= 2.")
    x, y = fos_dataset(n, p, tau=tau, covariate_bound=xi, seed=seed)
    t = (np.arange(y.shape[1]) + 0.5) / y.shape[1]
    x_prime, y_prime = x.copy(), y.copy()
    x[0], x_prime[0] = 0.0, 0.0
    x[0, 0], x_prime[0, 1] = xi, xi
    y[0] = tau * math.sqrt(2.0) * np.sin(np.pi * t) * (1 - 1e-12)  # on the bound, not above it
    y_prime[0] = -y[0]
    return (x, y), (x_prime, y_prime)


def alabi_slope(x, y, *, epsilon: float, gamma: float = 0.5, key=None) -> jax.Array:
    r"""The scalar private slope of Alabi et al. (LR App. C.2): ``(n cov + Z_1)/(n var + Z_2)``.

    ``Z_1 ~ Lap(1/(gamma eps))`` and ``Z_2 ~ Lap(1/((1-gamma) eps))``, assuming (as
    LR state it) that the sensitivities of ``n cov(x, y)`` and ``n var(x)`` are both 1
    (e.g. ``x, y`` in ``[0, 1]`` with public means, or after clipping); with
    ``key=None`` the non-private slope ``cov/var`` is returned. Sequential
    composition: ``gamma eps + (1 - gamma) eps = eps``.

    Args:
        x: ``(n,)`` covariates.
        y: ``(n,)`` responses.
        epsilon: the budget.
        gamma: the share spent on the numerator.
        key: a ``jax.random`` key, or ``None`` for the non-private slope.

    Returns:
        The slope (scalar).
    """
    x = jnp.asarray(x, dtype=jnp.float64)
    y = jnp.asarray(y, dtype=jnp.float64)
    cov = jnp.sum((x - x.mean()) * (y - y.mean()))
    var = jnp.sum((x - x.mean()) ** 2)
    if key is None:
        return cov / var
    k1, k2 = jax.random.split(key)
    z1 = jax.random.laplace(k1) / (gamma * epsilon)
    z2 = jax.random.laplace(k2) / ((1.0 - gamma) * epsilon)
    return (cov + z1) / (var + z2)
