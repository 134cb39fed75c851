r"""Gaussian-process and ICLP noise as numpyro distributions.

Both processes are written in Karhunen–Loève coordinates of a covariance
operator ``C`` with eigenvalues ``lambda_j`` (docs/papers/lr.md#lr-iclp, docs/papers/mrs.md#mrs-setting):

* :class:`GaussianProcessNoise` — coefficient ``j`` is ``N(loc_j, sigma^2 lambda_j)``;
  the law of ``loc + sigma Z`` with ``Z ~ GP(0, C)``.
* :class:`ICLPNoise` — the Independent Component Laplace Process of Lin &
  Reimherr (Def. 2): coefficient ``j`` is ``Laplace(loc_j, b_j)`` with scale
  ``b_j = sigma sqrt(lambda_j / 2)``, i.e. ``sigma sqrt(lambda_j)`` times a
  *unit-variance* Laplace variable (LR Lemma 1 / Thm 4 leave out the sqrt(2), see
  docs/paper-errors.md#lr-iclp-sigma-constant). Its covariance is ``sigma^2 C``,
  the same as the Gaussian process with the same ``sigma``.

Each has event shape ``(K,)``, a batch shape from broadcasting ``loc``
``(..., K)`` with ``sigma`` ``(...)``, ``sample`` and ``log_prob`` that are
jit- and vmap-compatible, and densities with respect to Lebesgue measure on
``R^K``. :class:`GridNoise` carries either one onto the values of the release
at the points of a grid.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from numpyro.distributions import Distribution, constraints

from dpaudit.core.arrays import float64_array
from dpaudit.core.checks import check_finite, check_last_axis, check_positive, is_concrete
from dpaudit.model.spaces.bases import KarhunenLoeveBasis

__all__ = ["GaussianProcessNoise", "GridNoise", "ICLPNoise", "KarhunenLoeveNoise"]

_LOG_2PI = math.log(2.0 * math.pi)


class KarhunenLoeveNoise(Distribution):
    """Common base: independent coefficients with variances ``sigma^2 lambda_j``.

    A subclass names the law of the coefficients: ``_standard_draw(key, shape)``
    (standard draws), ``_draw_scale`` (their scales) and ``_log_density_terms``.

    Args:
        eigenvalues: ``(K,)`` positive eigenvalues of the covariance operator.
        sigma: noise multiplier (> 0), scalar or batch array.
        loc: ``(..., K)`` coefficients of the centre (the summary ``f_D``);
            zeros when omitted.
        validate_args: numpyro's argument validation flag.

    Raises:
        ValueError: for non-positive or non-finite ``sigma`` or eigenvalues,
            NaN/inf in ``loc``, or a ``loc`` whose last axis is not ``K``.
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "sigma": constraints.positive,
        "eigenvalues": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    reparametrized_params = ("loc", "sigma")
    pytree_data_fields = ("loc", "sigma", "eigenvalues")

    def __init__(self, eigenvalues, sigma=1.0, loc=None, *, validate_args=None):
        eigenvalues = float64_array(eigenvalues)
        if eigenvalues.ndim != 1 or eigenvalues.shape[0] == 0:
            raise ValueError(
                f"{type(self).__name__} eigenvalues must be a non-empty 1-D array, got shape "
                f"{eigenvalues.shape}."
            )
        check_positive(f"{type(self).__name__} eigenvalues", eigenvalues)
        check_positive(f"{type(self).__name__} sigma", sigma)
        k = eigenvalues.shape[0]
        loc = float64_array(np.zeros(k) if loc is None else loc)
        check_last_axis(f"{type(self).__name__} loc", loc, k, "one coefficient per eigenvalue")
        check_finite(f"{type(self).__name__} loc", loc)
        sigma = float64_array(sigma)
        batch_shape = lax.broadcast_shapes(jnp.shape(sigma), jnp.shape(loc)[:-1])
        self.eigenvalues = eigenvalues
        self.sigma = jnp.broadcast_to(sigma, batch_shape)
        self.loc = jnp.broadcast_to(loc, (*batch_shape, k))
        super().__init__(batch_shape=batch_shape, event_shape=(k,), validate_args=validate_args)

    @property
    def coefficient_std(self) -> jax.Array:
        """Standard deviations ``sigma sqrt(lambda_j)``, shape ``batch_shape + (K,)``."""
        return self.sigma[..., None] * jnp.sqrt(self.eigenvalues)

    @property
    def mean(self) -> jax.Array:
        return self.loc

    @property
    def variance(self) -> jax.Array:
        return self.coefficient_std**2

    def with_loc(self, loc) -> KarhunenLoeveNoise:
        """The same noise centred at other coefficients (the release law under another dataset).

        Args:
            loc: the new centre (coefficients), shape ``(..., K)``.

        Returns:
            A noise of the same type, eigenvalues and sigma.
        """
        return type(self)(self.eigenvalues, self.sigma, loc, validate_args=self._validate_args)

    def sample(self, key, sample_shape=()):
        """Independent coefficients ``loc_j + scale_j z_j`` (``z_j`` standard, the subclass's law).

        Args:
            key: a JAX PRNG key.
            sample_shape: leading shape of the draws.

        Returns:
            Draws of shape ``sample_shape + batch_shape + event_shape``.
        """
        z = self._standard_draw(key, sample_shape + self.batch_shape + self.event_shape)
        return self.loc + self._draw_scale * z

    def log_density_terms(self, value) -> jax.Array:
        """The independent log-densities of the coefficients, unsummed.

        Args:
            value: release values, shape ``(..., event)``.

        Returns:
            Shape ``(..., K)``; their sum over the last axis is :meth:`log_prob`.
        """
        return self._log_density_terms(value)

    def log_prob(self, value):
        """Sum of the independent log-densities of the coefficients (termwise).

        Args:
            value: release values, shape ``(..., event)``.

        Returns:
            The log-density, shape ``(...)``.
        """
        return jnp.sum(self._log_density_terms(value), axis=-1)


class GaussianProcessNoise(KarhunenLoeveNoise):
    r"""Gaussian process ``loc + sigma Z``, ``Z ~ GP(0, C)``, in Karhunen–Loève coordinates.

    ``log p(x) = sum_j [ -1/2 log(2 pi sigma^2 lambda_j) - (x_j - loc_j)^2 / (2 sigma^2 lambda_j) ]``.

    Example:
        >>> d = GaussianProcessNoise(jnp.array([1.0, 0.5]), sigma=2.0)
        >>> d.sample(jax.random.key(0), (3,)).shape
        (3, 2)
    """

    # coefficient j is loc_j + sigma sqrt(lambda_j) z_j with z_j standard normal
    _standard_draw = staticmethod(jax.random.normal)
    _draw_scale = KarhunenLoeveNoise.coefficient_std

    def _log_density_terms(self, value) -> jax.Array:
        """The normal log-densities of the coefficients, shape ``(..., K)``."""
        std = self.coefficient_std
        u = (value - self.loc) / std
        return -0.5 * u * u - jnp.log(std) - 0.5 * _LOG_2PI


class ICLPNoise(KarhunenLoeveNoise):
    r"""Independent Component Laplace Process ``loc + sigma Z`` (Lin & Reimherr, Def. 2).

    ``Z = sum_j sqrt(lambda_j) Z_j phi_j`` with ``Z_j`` i.i.d. Laplace of mean 0 and
    variance 1, so coefficient ``j`` is ``Laplace(loc_j, b_j)``, ``b_j = sigma sqrt(lambda_j/2)``:

    ``log p(x) = sum_j [ -log(2 b_j) - |x_j - loc_j| / b_j ]``.

    For epsilon-DP with 1,C-sensitivity ``Delta`` use ``sigma = sqrt(2) Delta / epsilon``
    (:func:`dpaudit.model.noise.iclp_sigma`), i.e. ``b_j = Delta sqrt(lambda_j) / epsilon``.

    Example:
        >>> d = ICLPNoise(jnp.array([1.0, 0.5]), sigma=1.0)
        >>> [round(float(b), 4) for b in d.laplace_scale]
        [0.7071, 0.5]
    """

    @property
    def laplace_scale(self) -> jax.Array:
        """Laplace scales ``b_j = sigma sqrt(lambda_j / 2)``, shape ``batch_shape + (K,)``."""
        return self.coefficient_std / math.sqrt(2.0)

    # coefficient j is loc_j + b_j z_j with z_j standard Laplace (scale 1)
    _standard_draw = staticmethod(jax.random.laplace)
    _draw_scale = laplace_scale

    def _log_density_terms(self, value) -> jax.Array:
        """The Laplace log-densities of the coefficients (termwise), shape ``(..., K)``."""
        b = self.laplace_scale
        return -jnp.abs(value - self.loc) / b - jnp.log(2.0 * b)


class GridNoise(Distribution):
    r"""A Karhunen–Loève noise viewed through the values of the release on a grid.

    The release is ``x = loc + sum_k c_k phi_k`` at the grid points, where
    ``c ~ coefficient_noise`` (centred) and ``loc`` are the summary's grid values.
    With ``K`` components it lives on the ``K``-dimensional affine set
    ``loc + span(phi_1..phi_K)``. ``log_prob(x)`` is the coefficient density of
    ``project(x - loc)`` (a density with respect to Lebesgue measure on that
    set, the same for every ``loc``, so differences of ``log_prob`` are exact
    log Radon–Nikodym derivatives) and is ``-inf`` when ``x - loc`` has a part
    orthogonal to the span larger than ``support_rtol`` relative to the sizes
    involved: two summaries whose difference leaves the span give mutually
    singular releases, and that must show as an infinite privacy loss rather
    than be projected away.

    Args:
        coefficient_noise: a centred :class:`GaussianProcessNoise` or
            :class:`ICLPNoise` (its ``loc`` must be zero) whose eigenvalues are
            those of ``basis``.
        basis: the :class:`~dpaudit.model.spaces.KarhunenLoeveBasis` of the grid.
        loc: ``(..., m)`` values of the summary at the grid points; zeros if omitted.
        support_rtol: relative tolerance of the support test.

    Raises:
        ValueError: if the eigenvalues do not match the basis, ``loc`` does not
            match the grid, or ``coefficient_noise`` is not centred.
    """

    arg_constraints = {"loc": constraints.real_vector}
    support = constraints.real_vector
    pytree_data_fields = ("loc", "coefficient_noise", "basis")
    pytree_aux_fields = ("support_rtol",)

    def __init__(
        self, coefficient_noise, basis, loc=None, *, support_rtol=1e-9, validate_args=None
    ):
        if not isinstance(coefficient_noise, KarhunenLoeveNoise):
            raise TypeError(
                "coefficient_noise must be a GaussianProcessNoise or ICLPNoise, got "
                f"{type(coefficient_noise).__name__}."
            )
        if not isinstance(basis, KarhunenLoeveBasis):
            raise TypeError(f"basis must be a KarhunenLoeveBasis, got {type(basis).__name__}.")
        if coefficient_noise.event_shape != (basis.n_components,):
            raise ValueError(
                f"the noise has {coefficient_noise.event_shape[0]} components but the basis has "
                f"{basis.n_components}; build both from the same basis."
            )
        if is_concrete(coefficient_noise.eigenvalues) and is_concrete(basis.eigenvalues):
            # numpy, not jnp: under jit even concrete inputs would give traced booleans
            noise_eigenvalues = np.asarray(coefficient_noise.eigenvalues)
            # rtol 1e-12: the same eigenvalues up to rounding (e.g. after a float32 round trip
            # they would differ by far more, which is a different basis)
            if not np.allclose(noise_eigenvalues, np.asarray(basis.eigenvalues), rtol=1e-12):
                raise ValueError(
                    "the noise eigenvalues differ from the basis eigenvalues; build the noise "
                    "with basis.eigenvalues."
                )
            if is_concrete(coefficient_noise.loc) and np.any(
                np.asarray(coefficient_noise.loc) != 0
            ):
                raise ValueError(
                    "coefficient_noise must be centred (loc = 0); give the summary as GridNoise's "
                    "loc on the grid instead."
                )
        m = basis.grid_size
        loc = jnp.zeros(m) if loc is None else jnp.asarray(loc, dtype=jnp.float64)
        check_last_axis("GridNoise loc", loc, m, "one value per grid point")
        check_finite("GridNoise loc", loc)
        batch_shape = lax.broadcast_shapes(coefficient_noise.batch_shape, jnp.shape(loc)[:-1])
        self.coefficient_noise = coefficient_noise
        self.basis = basis
        self.loc = jnp.broadcast_to(loc, (*batch_shape, m))
        self.support_rtol = float(support_rtol)
        super().__init__(batch_shape=batch_shape, event_shape=(m,), validate_args=validate_args)

    @property
    def mean(self) -> jax.Array:
        return self.loc

    def sample(self, key, sample_shape=()):
        """Coefficient noise mapped to the grid by the basis, plus ``loc``.

        Args:
            key, sample_shape: as in :meth:`KarhunenLoeveNoise.sample`.

        Returns:
            Draws of shape ``sample_shape + batch_shape + event_shape``.
        """
        coefficients = self.coefficient_noise.sample(key, sample_shape + self.batch_shape)
        return self.loc + coefficients @ self.basis.eigenfunctions.T

    def log_prob(self, value):
        """Log-density of the coefficients of grid values; -inf off the span of the basis.

        Args:
            value: release values, shape ``(..., event)``.

        Returns:
            The log-density, shape ``(...)``.
        """
        centred = value - self.loc
        weights = self.basis.grid.weights
        coefficients = (centred * weights) @ self.basis.eigenfunctions
        residual = centred - coefficients @ self.basis.eigenfunctions.T

        def size(v):
            return jnp.sqrt(jnp.sum(weights * v * v, axis=-1))

        noise_scale = self.coefficient_noise.sigma * jnp.sqrt(self.coefficient_noise.eigenvalues[0])
        tolerance = self.support_rtol * (size(value) + size(self.loc) + noise_scale)
        log_density = self.coefficient_noise.log_prob(coefficients)
        return jnp.where(size(residual) <= tolerance, log_density, -jnp.inf)
