r"""Covariance kernels on [0, 1]^d.

A kernel is a callable ``kernel(x, y) -> Gram matrix``: ``x`` has shape
``(m, d)`` (or ``(m,)`` for d = 1), ``y`` shape ``(n, d)``, the result shape
``(m, n)``. Closed forms are written in JAX, so summaries built from them (a
kernel density estimate, say) can be jit-compiled and differentiated with
respect to the data; the general-smoothness Matérn kernel evaluates the Bessel
function with scipy through :func:`jax.pure_callback` (it jit-compiles but has
no derivative).

Kernels (``r = ||x - y||``, lengthscale ``rho``):

* :class:`Matern` (LR Sec. 6, docs/papers/lr.md#lr-matern; the constant is Gamma(nu),
  see docs/paper-errors.md#lr-matern-formula)
  ``C_nu(r) = 2^(1-nu)/Gamma(nu) (sqrt(2 nu) r/rho)^nu K_nu(sqrt(2 nu) r/rho)``,
  with closed forms for nu = 1/2, 3/2, 5/2 (MRS kernels C4, C3, C2).
* :class:`Gaussian` ``exp(-r^2 / (2 rho^2))`` (HRW's KDE kernel; MRS's
  ``C1 = exp(-r^2/rho')`` is ``Gaussian(lengthscale=sqrt(rho'/2))``).
* :class:`Exponential` ``exp(-||x - y||_1 / rho)`` (HRW's Sobolev kernel, a
  tensor product in d > 1; with ``norm="l2"`` it is Matérn 1/2).
* :class:`BrownianMotion` ``min(s, t)`` on [0, 1].
* :class:`CallableKernel` any user function ``k(x, y)`` of two points.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from dpaudit.core.checks import check_positive

__all__ = [
    "BrownianMotion",
    "CallableKernel",
    "Exponential",
    "Gaussian",
    "Kernel",
    "Matern",
]


def _as_points(x) -> jax.Array:
    x = jnp.asarray(x, dtype=jnp.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"kernel inputs must have shape (m,) or (m, d), got {x.shape}.")
    return x


def _check_same_dim(x: jax.Array, y: jax.Array) -> None:
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            f"kernel inputs have dimensions {x.shape[1]} and {y.shape[1]}; both must be points "
            "of the same domain."
        )


def _squared_distances(x: jax.Array, y: jax.Array) -> jax.Array:
    diff = x[:, None, :] - y[None, :, :]
    return jnp.sum(diff * diff, axis=-1)


def _safe_sqrt(d2: jax.Array) -> jax.Array:
    # sqrt has an infinite derivative at 0; keep gradients finite on the diagonal.
    positive = d2 > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, d2, 1.0)), 0.0)


def _check_positive_fields(kernel, *fields: str) -> None:
    # one rule for every kernel parameter: lengthscales, variances and smoothness are > 0
    for field in fields:
        check_positive(f"{type(kernel).__name__} {field}", getattr(kernel, field))


class Kernel:
    """Base class: subclasses implement ``_gram`` (or override :meth:`gram`).

    Both take ``(m, d)``/``(n, d)`` arrays of points of the same dimension.
    """

    def __call__(self, x, y=None) -> jax.Array:
        x = _as_points(x)
        y = x if y is None else _as_points(y)
        _check_same_dim(x, y)
        return self.gram(x, y)

    def gram(self, x: jax.Array, y: jax.Array) -> jax.Array:
        """The Gram matrix of two point sets (the subclass's ``_gram``).

        Args:
            x: points ``(a, d)``.
            y: points ``(b, d)`` of the same dimension.

        Returns:
            The Gram matrix ``[k(x_i, y_j)]``, shape ``(a, b)``.
        """
        return self._gram(x, y)

    def _gram(self, x: jax.Array, y: jax.Array) -> jax.Array:  # pragma: no cover - abstract
        raise NotImplementedError

    def diagonal(self, x) -> jax.Array:
        """``k(x_a, x_a)`` for each point (used for ``sup_x K(x, x)`` bounds).

        Args:
            x: points ``(a,)`` or ``(a, d)``.

        Returns:
            The diagonal ``(a,)``.
        """
        x = _as_points(x)
        return jax.vmap(lambda p: self.gram(p[None, :], p[None, :])[0, 0])(x)


@dataclasses.dataclass(frozen=True)
class Matern(Kernel):
    r"""Matérn kernel with smoothness ``nu`` and lengthscale ``rho`` (unit variance).

    ``C(r) = 2^(1-nu)/Gamma(nu) * (sqrt(2 nu) r/rho)^nu * K_nu(sqrt(2 nu) r/rho)``, ``C(0) = 1``.
    The normalising constant uses Gamma(nu) (the LR paper prints Gamma of the
    wrong symbol; see docs/paper-errors.md#lr-matern-formula). Eigenvalues on
    [0,1]^d decay like ``j^(-(2 nu + d)/d)``, i.e. ``j^(-(2 nu + 1))`` in d = 1
    (Weyl asymptotics of the Sobolev space ``H^(nu + d/2)``, see
    docs/conventions.md#eigenvalue-decay); the paper's ``j^(-2(nu + d/2))`` is right
    for d = 1 only.

    Args:
        nu: smoothness > 0. 1/2, 3/2 and 5/2 use closed forms; other values use
            scipy's modified Bessel function ``kv``.
        lengthscale: ``rho`` > 0.
        variance: multiplier of the kernel, > 0.

    Example:
        >>> k = Matern(nu=1.5, lengthscale=0.1)
        >>> round(float(k([0.0], [0.1])[0, 0]), 6)  # (1 + sqrt 3) exp(-sqrt 3)
        0.483358
    """

    nu: float = 1.5
    lengthscale: float = 1.0
    variance: float = 1.0

    def __post_init__(self):
        _check_positive_fields(self, "nu", "lengthscale", "variance")

    def _gram(self, x, y):
        """The Matérn Gram matrix (closed forms for nu in 1/2, 3/2, 5/2)."""
        r = _safe_sqrt(_squared_distances(x, y)) / self.lengthscale
        nu = float(self.nu)
        if nu == 0.5:
            c = jnp.exp(-r)
        elif nu == 1.5:
            s = math.sqrt(3.0) * r
            c = (1.0 + s) * jnp.exp(-s)
        elif nu == 2.5:
            s = math.sqrt(5.0) * r
            c = (1.0 + s + s * s / 3.0) * jnp.exp(-s)
        else:
            c = _matern_bessel(r, nu)
        return self.variance * c


def _matern_bessel_numpy(r: np.ndarray, nu: float) -> np.ndarray:
    s = math.sqrt(2.0 * nu) * np.asarray(r, dtype=np.float64)
    out = np.ones_like(s)
    pos = s > 0
    sp = s[pos]
    # log-space evaluation avoids overflow of s^nu and underflow of K_nu for large s.
    log_c = (
        (1.0 - nu) * math.log(2.0)
        - scipy.special.gammaln(nu)
        + nu * np.log(sp)
        + np.log(scipy.special.kve(nu, sp))
        - sp
    )
    out[pos] = np.exp(log_c)
    return out


def _matern_bessel(r: jax.Array, nu: float) -> jax.Array:
    shape = jax.ShapeDtypeStruct(r.shape, jnp.float64)
    return jax.pure_callback(
        lambda rr: _matern_bessel_numpy(rr, nu), shape, r, vmap_method="broadcast_all"
    )


@dataclasses.dataclass(frozen=True)
class Gaussian(Kernel):
    """Gaussian (squared-exponential, RBF) kernel ``variance * exp(-||x-y||^2 / (2 rho^2))``.

    ``lengthscale`` may be a scalar or one value per axis (a diagonal bandwidth).
    """

    lengthscale: float | tuple[float, ...] = 1.0
    variance: float = 1.0

    def __post_init__(self):
        _check_positive_fields(self, "lengthscale", "variance")

    def _gram(self, x, y):
        """The Gaussian (squared-exponential) Gram matrix."""
        ls = jnp.asarray(self.lengthscale, dtype=jnp.float64)
        if ls.ndim == 1 and ls.shape[0] != x.shape[1]:
            raise ValueError(
                f"Gaussian lengthscale has {ls.shape[0]} entries but the points have dimension "
                f"{x.shape[1]}."
            )
        return self.variance * jnp.exp(-0.5 * _squared_distances(x / ls, y / ls))


@dataclasses.dataclass(frozen=True)
class Exponential(Kernel):
    """Exponential kernel ``variance * exp(-||x - y|| / rho)``.

    ``norm="l1"`` (default) gives HRW's Sobolev tensor-product kernel
    ``exp(-gamma ||x-y||_1)`` with ``gamma = 1/rho``; ``norm="l2"`` gives the
    isotropic Ornstein–Uhlenbeck kernel (Matérn 1/2). They agree for d = 1.
    """

    lengthscale: float = 1.0
    variance: float = 1.0
    norm: str = "l1"

    def __post_init__(self):
        _check_positive_fields(self, "lengthscale", "variance")
        if self.norm not in ("l1", "l2"):
            raise ValueError(f"Exponential norm must be 'l1' or 'l2', got {self.norm!r}.")

    def _gram(self, x, y):
        """The exponential Gram matrix (L1 or L2 distance)."""
        if self.norm == "l1":
            r = jnp.sum(jnp.abs(x[:, None, :] - y[None, :, :]), axis=-1)
        else:
            r = _safe_sqrt(_squared_distances(x, y))
        return self.variance * jnp.exp(-r / self.lengthscale)


@dataclasses.dataclass(frozen=True)
class BrownianMotion(Kernel):
    """Brownian-motion covariance ``variance * min(s, t)`` on [0, 1] (d = 1 only).

    Its L2[0,1] eigenpairs are known: ``lambda_j = 1/((j - 1/2)^2 pi^2)``,
    ``phi_j(t) = sqrt(2) sin((j - 1/2) pi t)`` (see
    :func:`dpaudit.model.spaces.bases.brownian_motion_basis`).
    """

    variance: float = 1.0

    def __post_init__(self):
        _check_positive_fields(self, "variance")

    def _gram(self, x, y):
        """The Brownian-motion Gram matrix ``min(s, t)`` (one-dimensional points)."""
        if x.shape[1] != 1:
            raise ValueError(
                f"the Brownian-motion kernel is defined on [0, 1] only, got points of dimension "
                f"{x.shape[1]}."
            )
        return self.variance * jnp.minimum(x[:, None, 0], y[None, :, 0])


@dataclasses.dataclass(frozen=True)
class CallableKernel(Kernel):
    """A user kernel given as ``fn(x, y) -> scalar`` on two points of shape ``(d,)``.

    ``fn`` must be written with ``jax.numpy`` so it can be vmapped. Symmetry and
    positive semi-definiteness are checked when a basis is built from it.

    Example:
        >>> k = CallableKernel(lambda s, t: jnp.exp(-jnp.sum(jnp.abs(s - t))))
        >>> k([0.0, 1.0]).shape
        (2, 2)
    """

    fn: Callable[[jax.Array, jax.Array], jax.Array]

    def __post_init__(self):
        if not callable(self.fn):
            raise TypeError(f"CallableKernel needs a callable fn(x, y), got {type(self.fn)}.")

    def _gram(self, x, y):
        """The Gram matrix of the wrapped function, vmapped over both point sets."""
        row = jax.vmap(self.fn, in_axes=(None, 0))
        return jax.vmap(row, in_axes=(0, None))(x, y)
