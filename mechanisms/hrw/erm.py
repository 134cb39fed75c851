r"""Hall, Rinaldo & Wasserman (2013), Sec. 4.3: regularised ERM in an RKHS, released with GP noise.

Data: ``n`` labelled records ``z_i = (x_i, y_i)`` given as a tuple ``(X, y)``
with ``X`` of shape ``(n,)`` or ``(n, d)`` in the unit cube ``[0, 1]^d`` and
``y`` of shape ``(n,)``; replace-one adjacency (a record is the pair, so
replacing it may change both ``x_i`` and ``y_i``), ``n`` public. Records
outside the stated domain are rejected.

**Estimator.** No intercept (an unpenalised offset is not covered by the argument below):

.. math::
    f_D=\arg\min_{g\in\mathcal H}\ \frac1n\sum_{i=1}^n c(g(x_i),y_i)+\lambda\|g\|_{\mathcal H}^2
    \qquad(\textbf{squared norm}).

By the representer theorem ``f_D = sum_i alpha_i K(x_i, .)`` and, for a
differentiable loss, stationarity in ``H`` reads
``2 lambda n alpha_i + c'(f_D(x_i), y_i) = 0``.

**Sensitivity (HRW Sec. 4.3, after Bousquet & Elisseeff 2002, Lemma 20).**
If ``c`` is convex and ``M``-Lipschitz in its first argument (``M``-admissible,
Def. 4.1) on the range of values the minimisers take, then
``||f_D - f_D'||_H^2 <= M ||f_D - f_D'||_inf / (lambda n)`` and, by the
reproducing property, ``||f||_inf <= ||f||_H sqrt(kappa)``, so

.. math::
    \|f_D-f_{D'}\|_{\mathcal H}\le\Delta=\frac{M\sqrt{\kappa}}{\lambda n},\qquad
    \kappa=\sup_xK(x,x).

Losses and their constants (``kappa = 1`` for the unit-variance Gaussian and
exponential kernels used here):

* hinge (soft-margin SVM) ``c(t, y) = (1 - y t)_+``, ``y in {-1, +1}``: ``M = 1``.
  The bound is attained: if every record is a bounded support vector
  (``y_i f_D(x_i) < 1``, e.g. large ``lambda``) then ``f_D = sum_i y_i K_{x_i} /
  (2 lambda n)``, and flipping one label moves ``f_D`` by exactly ``Delta``.
* logistic ``c(t, y) = log(1 + exp(-y t))``, ``y in {-1, +1}``: ``|c'| < 1``, ``M = 1``.
* square (kernel ridge regression) ``c(t, y) = (t - y)^2``, ``|y| <= B``: comparing
  with ``g = 0`` gives ``lambda ||f_D||_H^2 <= B^2``, so ``|f_D(x)| <= R =
  B sqrt(kappa/lambda)`` and ``c`` is Lipschitz with ``M = 2(B + R) = 2B(1 +
  sqrt(kappa/lambda))`` on ``[-R, R] x [-B, B]``, which contains every value used
  in the argument (it only evaluates convex combinations of ``f_D`` and ``f_D'``).

**Solvers** (numpy/scipy on concrete data; each returns an :class:`ERMSolution`
with its optimality residual):

* square: ``alpha = (K + lambda n I)^{-1} y`` (closed form).
* logistic: Newton's method in ``H`` on the representer coefficients,
  ``(diag(c'') K + 2 lambda n I) p = 2 lambda n alpha + c'``, with Armijo
  backtracking on the objective.
* hinge: the dual box-constrained QP ``max_beta 1^T beta - beta^T Q beta / 2``,
  ``0 <= beta_i <= C = 1/(2 lambda n)``, ``Q = diag(y) K diag(y)``, solved by a
  Mehrotra predictor–corrector interior-point method (robust to the singular
  Gram matrices of smooth kernels and to repeated records), then polished by
  solving the free variables exactly; ``alpha = beta * y``. Optimality: the projected gradient of the dual in
  margin units, ``y_i f_D(x_i) - 1`` restricted to the feasible directions,
  vanishes, and the duality gap ``J(f_D) - 2 lambda (1^T beta - beta^T Q beta/2)``
  is zero.

Registered mechanisms (release ``f_D`` on a public grid plus GP noise with the
learning kernel as covariance, see :mod:`mechanisms.hrw.release`):

* ``hrw-kernel-ridge`` — square loss, ``|y| <= B``.
* ``hrw-kernel-logistic`` — logistic loss, ``y in {-1, +1}``.
* ``hrw-kernel-svm`` — hinge loss, ``y in {-1, +1}``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.linalg
import scipy.special

from dpaudit import Mechanism, register
from dpaudit.model.spaces import Exponential, Gaussian, Kernel
from mechanisms.hrw import release as hrw

__all__ = [
    "LOSSES",
    "ERMSolution",
    "erm_kernel",
    "erm_rkhs_distance",
    "erm_sensitivity",
    "hrw_kernel_logistic",
    "hrw_kernel_ridge",
    "hrw_kernel_svm",
    "kernel_erm",
    "kernel_logistic",
    "kernel_logistic_sensitivity",
    "kernel_ridge",
    "kernel_ridge_sensitivity",
    "kernel_svm",
    "kernel_svm_sensitivity",
    "loss_lipschitz_constant",
]

#: Supported losses ``c(t, y)``.
LOSSES = ("square", "logistic", "hinge")

#: Stationarity residual below which Newton stops, in units of ``c'`` (which is O(1)).
NEWTON_TOLERANCE = 1e-13


# ------------------------------------------------------------------ kernels


def erm_kernel(kernel: str = "gaussian", lengthscale: float = 0.2) -> Kernel:
    """The learning (and noise) kernel: ``"gaussian"`` ``exp(-||x-y||^2/(2 rho^2))`` or
    ``"exponential"`` ``exp(-||x-y||_1 / rho)``, both with ``sup_x K(x, x) = 1``.

    Args:
        kernel: ``"gaussian"`` or ``"exponential"``.
        lengthscale: ``rho`` > 0.

    Returns:
        The :class:`~dpaudit.model.spaces.Kernel`.

    Raises:
        ValueError: an unknown kernel name or a non-positive lengthscale.
    """
    rho = hrw.check_positive_number("lengthscale", lengthscale)
    if kernel == "gaussian":
        return Gaussian(lengthscale=rho)
    if kernel == "exponential":
        return Exponential(lengthscale=rho, norm="l1")
    raise ValueError(f"kernel must be 'gaussian' or 'exponential', got {kernel!r}.")


# ------------------------------------------------------------------- losses


def _loss(loss: str, t: np.ndarray, y: np.ndarray):
    """Values, first and second derivatives of ``c(t, y)`` in ``t``."""
    if loss == "square":
        r = t - y
        return r * r, 2.0 * r, np.full_like(t, 2.0)
    if loss == "logistic":
        u = -y * t
        value = np.logaddexp(0.0, u)
        p = scipy.special.expit(u)  # sigma(-y t)
        return value, -y * p, p * (1.0 - p)
    if loss == "hinge":
        margin = 1.0 - y * t
        return np.maximum(margin, 0.0), np.where(margin > 0, -y, 0.0), np.zeros_like(t)
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")


def loss_lipschitz_constant(
    loss: str, regularization: float, *, y_bound: float | None = None, kernel_sup: float = 1.0
) -> float:
    """The admissibility constant ``M`` of a loss (HRW Def. 4.1) on the range the minimisers visit.

    hinge and logistic: ``M = 1`` (labels in ``{-1, +1}``); square:
    ``M = 2 B (1 + sqrt(kappa / lambda))`` for ``|y| <= B``.

    Args:
        loss: one of :data:`LOSSES`.
        regularization: ``lambda`` > 0.
        y_bound: the public bound ``B`` on ``|y|`` (square loss only).
        kernel_sup: ``kappa = sup_x K(x, x)``.

    Returns:
        ``M``.

    Raises:
        ValueError: unknown loss, or a square loss without ``y_bound``.
    """
    if loss in ("hinge", "logistic"):
        return 1.0
    if loss == "square":
        if y_bound is None:
            raise ValueError("the square loss needs the public response bound y_bound (|y| <= B).")
        b = hrw.check_positive_number("y_bound", y_bound)
        lam = hrw.check_positive_number("regularization", regularization)
        return (
            2.0 * b * (1.0 + math.sqrt(hrw.check_positive_number("kernel_sup", kernel_sup) / lam))
        )
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")


def erm_sensitivity(lipschitz: float, regularization: float, n: int, kernel_sup: float = 1.0):
    r"""``Delta = M sqrt(kappa) / (lambda n)`` (HRW Sec. 4.3).

    Args:
        lipschitz: the admissibility constant ``M``.
        regularization: ``lambda`` > 0.
        n: the public number of records.
        kernel_sup: ``kappa = sup_x K(x, x)``.

    Returns:
        ``Delta``.

    Example:
        >>> erm_sensitivity(1.0, 0.1, 50)
        0.2
    """
    m = hrw.check_positive_number("lipschitz", lipschitz)
    lam = hrw.check_positive_number("regularization", regularization)
    n = hrw.check_count("n", n)
    return m * math.sqrt(hrw.check_positive_number("kernel_sup", kernel_sup)) / (lam * n)


def kernel_svm_sensitivity(n: int, regularization: float, kernel_sup: float = 1.0) -> float:
    """``Delta = sqrt(kappa) / (lambda n)`` for the hinge loss (``M = 1``).

    Args:
        n: the public number of records.
        regularization: ``lambda`` > 0.
        kernel_sup: ``kappa = sup_x K(x, x)``.

    Returns:
        ``Delta``.
    """
    return erm_sensitivity(1.0, regularization, n, kernel_sup)


def kernel_logistic_sensitivity(n: int, regularization: float, kernel_sup: float = 1.0) -> float:
    """``Delta = sqrt(kappa) / (lambda n)`` for the logistic loss (``M = 1``).

    Args:
        n, regularization, kernel_sup: as :func:`kernel_svm_sensitivity`.

    Returns:
        ``Delta``.
    """
    return erm_sensitivity(1.0, regularization, n, kernel_sup)


def kernel_ridge_sensitivity(
    n: int, regularization: float, y_bound: float, kernel_sup: float = 1.0
) -> float:
    """``Delta = 2 B (1 + sqrt(kappa/lambda)) sqrt(kappa) / (lambda n)`` for the square loss.

    Args:
        n: the public number of records.
        regularization: ``lambda`` > 0.
        kernel_sup: ``kappa = sup_x K(x, x)``.
        y_bound: the public bound ``B`` on ``|y|``.

    Returns:
        ``Delta``.
    """
    m = loss_lipschitz_constant("square", regularization, y_bound=y_bound, kernel_sup=kernel_sup)
    return erm_sensitivity(m, regularization, n, kernel_sup)


# ------------------------------------------------------------------ solutions


@dataclasses.dataclass(frozen=True)
class ERMSolution:
    """A regularised ERM solution ``f = sum_i alpha_i K(x_i, .)``.

    Attributes:
        points: ``(n, d)`` covariates ``x_i``.
        labels: ``(n,)`` responses ``y_i``.
        coefficients: ``(n,)`` representer coefficients ``alpha``.
        kernel: the kernel ``K``.
        loss: one of :data:`LOSSES`.
        regularization: ``lambda``.
        dual: the dual variables ``beta`` (hinge loss only).
    """

    points: np.ndarray
    labels: np.ndarray
    coefficients: np.ndarray
    kernel: Kernel
    loss: str
    regularization: float
    dual: np.ndarray | None = None

    def __call__(self, x) -> np.ndarray:
        """``f(x) = sum_i alpha_i K(x_i, x)`` at points ``(m,)`` or ``(m, d)``.

        Args:
            x: points ``(m,)`` or ``(m, d)``.

        Returns:
            ``(m,)`` values.
        """
        return hrw.kernel_matrix(self.kernel, x, self.points) @ self.coefficients

    @property
    def gram(self) -> np.ndarray:
        return hrw.kernel_matrix(self.kernel, self.points)

    @property
    def rkhs_norm(self) -> float:
        """``||f||_H = (alpha^T K alpha)^(1/2)``."""
        a = self.coefficients
        return math.sqrt(max(float(a @ self.gram @ a), 0.0))

    def objective(self) -> float:
        """``J(f) = (1/n) sum_i c(f(x_i), y_i) + lambda ||f||_H^2``."""
        k, a = self.gram, self.coefficients
        values, _, _ = _loss(self.loss, k @ a, self.labels)
        return float(np.mean(values) + self.regularization * (a @ k @ a))

    def optimality_residual(self) -> float:
        """How far ``f`` is from optimal, in units of the loss derivative (0 at the optimum).

        * square / logistic: ``max_i |2 lambda n alpha_i + c'(f(x_i), y_i)|``, the
          stationarity condition of the representer coefficients.
        * hinge: the natural residual of the dual KKT conditions,
          ``max_i |u_i - clip(u_i - (y_i f(x_i) - 1), 0, 1)|`` with ``u = beta / C``
          (0 iff ``y_i f(x_i) >= 1`` where ``beta_i = 0``, ``= 1`` where
          ``0 < beta_i < C``, ``<= 1`` where ``beta_i = C``), plus the
          infeasibility of ``u`` and of ``alpha = beta y`` (scaled by ``1/C``).
        """
        k, a, y = self.gram, self.coefficients, self.labels
        n = len(a)
        if self.loss != "hinge":
            _, d1, _ = _loss(self.loss, k @ a, y)
            return float(np.max(np.abs(2.0 * self.regularization * n * a + d1)))
        c = 1.0 / (2.0 * self.regularization * n)
        u = self.dual / c
        infeasible = float(np.max(np.maximum(-u, 0.0) + np.maximum(u - 1.0, 0.0)))
        mismatch = float(np.max(np.abs(a - self.dual * y))) / c
        return _natural_residual(u, c * (y[:, None] * k * y[None, :])) + infeasible + mismatch

    def duality_gap(self) -> float:
        """Hinge loss: ``J(f) - 2 lambda (1^T beta - beta^T Q beta / 2) >= 0`` (0 at the optimum)."""
        if self.loss != "hinge":
            raise ValueError("the duality gap is computed for the hinge loss only.")
        q = self.labels[:, None] * self.gram * self.labels[None, :]
        beta = self.dual
        dual_value = 2.0 * self.regularization * (beta.sum() - 0.5 * beta @ q @ beta)
        return self.objective() - float(dual_value)


def _check_labels(loss: str, labels, n: int, y_bound: float | None) -> np.ndarray:
    y = np.asarray(labels, dtype=np.float64)
    if y.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), one per record, got {y.shape}.")
    if not np.all(np.isfinite(y)):
        raise ValueError("labels contain NaN or infinite values; clean the data first.")
    if loss in ("hinge", "logistic"):
        if not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError(
                f"the {loss} loss needs labels in {{-1, +1}}, got values {np.unique(y)[:5]}; "
                "recode the classes as -1 and +1."
            )
    elif y_bound is not None and np.max(np.abs(y)) > y_bound:
        raise ValueError(
            f"responses reach |y| = {np.max(np.abs(y)):.4g} > y_bound = {y_bound:g}, outside the "
            "public bound the sensitivity was computed for; clip them with public bounds first."
        )
    return y


def _split_data(data, dim: int, n: int | None):
    if not isinstance(data, tuple | list) or len(data) != 2:
        raise TypeError("ERM data must be a tuple (X, y) of covariates and labels.")
    x = np.asarray(hrw.check_points("ERM covariates X", data[0], dim=dim, n=n))
    return x, data[1]


def _newton(k: np.ndarray, y: np.ndarray, lam: float, loss: str, max_iter: int = 100):
    n = len(y)
    alpha = np.zeros(n)

    def objective(a):
        values, _, _ = _loss(loss, k @ a, y)
        return float(np.mean(values) + lam * (a @ k @ a))

    current = objective(alpha)
    for _ in range(max_iter):
        _, d1, d2 = _loss(loss, k @ alpha, y)
        residual = 2.0 * lam * n * alpha + d1  # n x the H-gradient's coefficients
        size = float(np.max(np.abs(residual)))
        if size <= NEWTON_TOLERANCE:
            break
        step = _solve(d2[:, None] * k + 2.0 * lam * n * np.eye(n), residual)
        slope = float(residual @ k @ step) / n  # <grad J, Newton direction>_H >= 0
        # Armijo backtracking; near the optimum the decrease is below round-off of J,
        # so a step that shrinks the stationarity residual is accepted as well.
        t, slack = 1.0, 1e-14 * (1.0 + abs(current))
        while True:
            trial_alpha = alpha - t * step
            trial = objective(trial_alpha)
            if trial <= current - 0.25 * t * slope + slack:
                break
            _, d1_trial, _ = _loss(loss, k @ trial_alpha, y)
            if np.max(np.abs(2.0 * lam * n * trial_alpha + d1_trial)) < size and t == 1.0:
                break
            t *= 0.5
            if t < 1e-12:
                return alpha  # no further progress at machine precision
        alpha, current = trial_alpha, trial
    return alpha


def _solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.solve(matrix, rhs)
    except np.linalg.LinAlgError:  # exactly singular (repeated records): least squares
        return np.linalg.lstsq(matrix, rhs, rcond=None)[0]


def _natural_residual(u: np.ndarray, h: np.ndarray) -> float:
    """``max_i |u_i - clip(u_i - g_i, 0, 1)|`` with ``g = h u - 1``: 0 exactly at a KKT point."""
    g = h @ u - 1.0
    return float(np.max(np.abs(u - np.clip(u - g, 0.0, 1.0))))


def _ipm_direction(system, dual_residual, u, w, z, s, rz, rs):
    """Newton direction of the box-QP interior point for complementarity residuals ``rz, rs``."""
    du = _solve(system, -dual_residual - rz / u + rs / w)
    return du, (-rz - z * du) / u, (-rs + s * du) / w


def _box_qp(h: np.ndarray, tol: float = 1e-14, max_iter: int = 80) -> np.ndarray:
    """``argmin_u u^T h u / 2 - 1^T u`` over ``[0, 1]^n`` (``h`` PSD, possibly singular).

    Mehrotra predictor-corrector interior point (robust to the singular,
    degenerate Gram matrices of smooth kernels), then a polish: variables whose
    multiplier dominates are put on their bound and the free ones solved exactly.
    """
    n = h.shape[0]
    u, z, s = np.full(n, 0.5), np.ones(n), np.ones(n)
    w = 1.0 - u

    def max_step(v, dv):
        negative = dv < 0
        with np.errstate(over="ignore", divide="ignore"):
            return float(np.min(-v[negative] / dv[negative])) if negative.any() else np.inf

    for _ in range(max_iter):
        dual_residual = h @ u - 1.0 - z + s
        mu = (z @ u + s @ w) / (2 * n)
        if (np.max(np.abs(dual_residual)) < tol and mu < tol) or _natural_residual(u, h) < tol:
            break
        system = h + np.diag(z / u + s / w)

        state = (system, dual_residual, u, w, z, s)
        du, dz, ds = _ipm_direction(*state, z * u, s * w)
        step = min(1.0, max_step(u, du), max_step(w, -du), max_step(z, dz), max_step(s, ds))
        mu_affine = ((z + step * dz) @ (u + step * du) + (s + step * ds) @ (w - step * du)) / (
            2 * n
        )
        centring = (mu_affine / mu) ** 3
        du, dz, ds = _ipm_direction(
            *state, z * u + dz * du - centring * mu, s * w - ds * du - centring * mu
        )
        step = min(
            1.0, 0.995 * min(max_step(u, du), max_step(w, -du), max_step(z, dz), max_step(s, ds))
        )
        if not np.all(np.isfinite(du)) or step <= 0:
            break
        u, w, z, s = u + step * du, w - step * du, z + step * dz, s + step * ds
    best, best_residual = np.clip(u, 0.0, 1.0), _natural_residual(np.clip(u, 0.0, 1.0), h)
    lower, upper = z > u, s > w
    free = ~(lower | upper)
    polished = np.where(upper, 1.0, 0.0)
    if free.any():
        rhs = 1.0 - h[np.ix_(free, upper)] @ polished[upper]
        polished[free] = np.linalg.lstsq(h[np.ix_(free, free)], rhs, rcond=None)[0]
    polished = np.clip(polished, 0.0, 1.0)
    if _natural_residual(polished, h) < best_residual:
        best = polished
    return best


def kernel_erm(
    x, y, *, loss: str, kernel: Kernel, regularization: float, y_bound: float | None = None
) -> ERMSolution:
    r"""Solve ``min_g (1/n) sum_i c(g(x_i), y_i) + lambda ||g||_H^2`` exactly (representer theorem).

    Args:
        x: covariates ``(n,)`` or ``(n, d)`` (any finite values; the mechanisms
            restrict them to ``[0, 1]^d``).
        y: labels ``(n,)``: ``{-1, +1}`` for hinge/logistic, ``|y| <= y_bound``
            for the square loss when ``y_bound`` is given.
        loss: ``"square"``, ``"logistic"`` or ``"hinge"``.
        kernel: a :class:`dpaudit.model.spaces.Kernel`.
        regularization: ``lambda`` (> 0).
        y_bound: optional public bound ``B`` checked for the square loss.

    Returns:
        An :class:`ERMSolution`.

    Raises:
        ValueError: invalid inputs (NaN, labels outside their set, ``lambda <= 0``).
    """
    lam = hrw.check_positive_number("regularization", regularization)
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")
    points = np.asarray(x, dtype=np.float64)
    points = points[:, None] if points.ndim == 1 else points
    if points.ndim != 2 or not np.all(np.isfinite(points)):
        raise ValueError("covariates must be a finite (n,) or (n, d) array.")
    n = points.shape[0]
    labels = _check_labels(loss, y, n, y_bound)
    k = hrw.kernel_matrix(kernel, points)
    dual = None
    if loss == "square":
        alpha = scipy.linalg.solve(k + lam * n * np.eye(n), labels, assume_a="pos")
    elif loss == "logistic":
        alpha = _newton(k, labels, lam, loss)
    else:
        c = 1.0 / (2.0 * lam * n)
        dual = c * _box_qp(c * (labels[:, None] * k * labels[None, :]))
        alpha = dual * labels
    return ERMSolution(points, labels, np.asarray(alpha), kernel, loss, lam, dual)


def kernel_ridge(x, y, *, kernel: Kernel, regularization: float, y_bound=None) -> ERMSolution:
    """Kernel ridge regression: ``alpha = (K + lambda n I)^{-1} y`` (square loss).

    Args:
        x: ``(n, d)`` covariates.
        y: ``(n,)`` responses.
        kernel: the learning kernel.
        regularization: ``lambda`` > 0.
        y_bound: optional public bound ``B`` on ``|y|``, checked on the responses.

    Returns:
        The :class:`ERMSolution`.
    """
    return kernel_erm(
        x, y, loss="square", kernel=kernel, regularization=regularization, y_bound=y_bound
    )


def kernel_logistic(x, y, *, kernel: Kernel, regularization: float) -> ERMSolution:
    """Kernel logistic regression (Newton in the RKHS), labels in ``{-1, +1}``.

    Args:
        x: ``(n, d)`` covariates.
        y: ``(n,)`` labels in ``{-1, +1}``.
        kernel: the learning kernel.
        regularization: ``lambda`` > 0.

    Returns:
        The :class:`ERMSolution`.
    """
    return kernel_erm(x, y, loss="logistic", kernel=kernel, regularization=regularization)


def kernel_svm(x, y, *, kernel: Kernel, regularization: float) -> ERMSolution:
    """Soft-margin kernel SVM without intercept (hinge loss, dual QP), labels in ``{-1, +1}``.

    Args:
        x, y, kernel, regularization: as :func:`kernel_logistic`.

    Returns:
        The :class:`ERMSolution` (with its dual variables).
    """
    return kernel_erm(x, y, loss="hinge", kernel=kernel, regularization=regularization)


def erm_rkhs_distance(solution: ERMSolution, other: ERMSolution) -> float:
    """Exact ``||f - f'||_H`` of two representer solutions with the same kernel.

    ``||sum_i a_i K_{x_i} - sum_j b_j K_{x'_j}||_H^2 = (a, -b)^T K (a, -b)`` on
    the stacked points.

    Args:
        solution: one solution.
        other: the other, with the same kernel.

    Returns:
        ``||f - f'||_H``.
    """
    points = np.concatenate([solution.points, other.points])
    coefficients = np.concatenate([solution.coefficients, -other.coefficients])
    gram = hrw.kernel_matrix(solution.kernel, points)
    return math.sqrt(max(float(coefficients @ gram @ coefficients), 0.0))


# --------------------------------------------------------------------- builders


def _erm_mechanism(
    *,
    name: str,
    loss: str,
    epsilon: float,
    delta: float,
    n: int,
    regularization: float,
    kernel: str,
    lengthscale: float,
    dim: int,
    grid_size: int,
    calibration: str,
    rtol: float | None,
    y_bound: float | None = None,
) -> Mechanism:
    setting = hrw.hrw_setting(epsilon, delta, n, dim, grid_size, calibration, rtol)
    n, dim, grid_size = setting.n, setting.dim, setting.grid_size
    lam = hrw.check_positive_number("regularization", regularization)
    k = erm_kernel(kernel, lengthscale)
    kernel_sup = 1.0  # both kernels have unit variance
    m = loss_lipschitz_constant(loss, lam, y_bound=y_bound, kernel_sup=kernel_sup)
    sensitivity = erm_sensitivity(m, lam, n, kernel_sup)
    release = setting.grid_release(k, sensitivity)
    grid_points = np.asarray(release.grid.points)

    def fit(data) -> ERMSolution:
        x, y = _split_data(data, dim, n)
        return kernel_erm(x, y, loss=loss, kernel=k, regularization=lam, y_bound=y_bound)

    def summary(data):
        return release.project(fit(data)(grid_points))

    params = {
        **setting.params(),
        "regularization": lam,
        "kernel": kernel,
        "lengthscale": float(lengthscale),
    }
    label_text = "labels in {-1,+1}"
    if y_bound is not None:
        params["y_bound"] = float(y_bound)
        label_text = f"|y| <= {y_bound:g}"
    return hrw.hrw_grid_mechanism(
        name,
        summary,
        release,
        setting,
        sensitivity=sensitivity,
        section="Sec. 4.3 (M-admissible loss, Def. 4.1)",
        params=params,
        description=(
            f"Regularised ERM with the {loss} loss (M = {m:.4g}) in the RKHS of the {kernel} "
            f"kernel (lengthscale {lengthscale:g}), lambda = {lam:g}, n = {n} records with "
            f"covariates in [0,1]^{dim} and {label_text}; the minimiser is released on a "
            f"{grid_size}^{dim} grid with GP noise of covariance s^2 K, RKHS sensitivity "
            f"M sqrt(sup K)/(lambda n) = {sensitivity:.4g}."
        ),
    )


_ERM_EXAMPLE = {
    "epsilon": 1.0,
    "delta": 1e-3,
    "n": 50,
    "regularization": 0.05,
    "kernel": "gaussian",
    "lengthscale": 0.2,
    "dim": 1,
    "grid_size": 64,
}


@register("hrw-kernel-ridge", example={**_ERM_EXAMPLE, "y_bound": 1.0})
def hrw_kernel_ridge(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    n: int = 50,
    regularization: float = 0.05,
    y_bound: float = 1.0,
    kernel: str = "gaussian",
    lengthscale: float = 0.2,
    dim: int = 1,
    grid_size: int = 64,
    calibration: str = "classical",
    rtol: float | None = None,
) -> Mechanism:
    r"""Kernel ridge regression released on a grid with GP noise (HRW Sec. 4.3, square loss).

    ``f_D = sum_i alpha_i K_{x_i}``, ``alpha = (K + lambda n I)^{-1} y``; data
    ``(X, y)`` with ``X`` in ``[0, 1]^d`` and ``|y| <= y_bound`` (rejected
    otherwise); ``Delta = 2B(1 + sqrt(1/lambda)) / (lambda n)``.

    Args:
        epsilon, delta: the claim (``epsilon <= 1`` for the classical calibration).
        n: public number of records.
        regularization: ``lambda`` > 0 (the penalty is ``lambda ||g||_H^2``).
        y_bound: public bound ``B`` on ``|y|``.
        kernel: ``"gaussian"`` or ``"exponential"`` (learning and noise kernel).
        lengthscale: its lengthscale.
        dim, grid_size, calibration, rtol: as in :func:`mechanisms.hrw.kde.hrw_gaussian_kde`.
    """
    y_bound = hrw.check_positive_number("y_bound", y_bound)
    # locals() here is exactly the keyword arguments, passed on unchanged
    return _erm_mechanism(name="hrw-kernel-ridge", loss="square", **locals())


@register("hrw-kernel-logistic", example=_ERM_EXAMPLE)
def hrw_kernel_logistic(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    n: int = 50,
    regularization: float = 0.05,
    kernel: str = "gaussian",
    lengthscale: float = 0.2,
    dim: int = 1,
    grid_size: int = 64,
    calibration: str = "classical",
    rtol: float | None = None,
) -> Mechanism:
    r"""Kernel logistic regression released on a grid with GP noise (HRW Sec. 4.3, M = 1).

    Labels in ``{-1, +1}``, covariates in ``[0, 1]^d`` (rejected otherwise);
    ``Delta = 1 / (lambda n)``. Arguments as in :func:`hrw_kernel_ridge`.

    Args:
        epsilon, delta, n, regularization, kernel, lengthscale, dim, grid_size, calibration,
            rtol: as :func:`hrw_kernel_ridge`.

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    # locals() here is exactly the keyword arguments, passed on unchanged
    return _erm_mechanism(name="hrw-kernel-logistic", loss="logistic", **locals())


@register("hrw-kernel-svm", example=_ERM_EXAMPLE)
def hrw_kernel_svm(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    n: int = 50,
    regularization: float = 0.05,
    kernel: str = "gaussian",
    lengthscale: float = 0.2,
    dim: int = 1,
    grid_size: int = 64,
    calibration: str = "classical",
    rtol: float | None = None,
) -> Mechanism:
    r"""Soft-margin kernel SVM (hinge loss) released on a grid with GP noise (HRW Sec. 4.3, M = 1).

    No intercept; labels in ``{-1, +1}``, covariates in ``[0, 1]^d`` (rejected
    otherwise); ``Delta = 1 / (lambda n)``, attained when every record is a
    bounded support vector and one label flips. Arguments as in
    :func:`hrw_kernel_ridge`.

    Args:
        epsilon, delta, n, regularization, kernel, lengthscale, dim, grid_size, calibration,
            rtol: as :func:`hrw_kernel_ridge`.

    Returns:
        The :class:`~dpaudit.Mechanism`; it raises as :func:`hrw_kernel_ridge`.
    """
    # locals() here is exactly the keyword arguments, passed on unchanged
    return _erm_mechanism(name="hrw-kernel-svm", loss="hinge", **locals())
