r"""Classic DP mechanisms, for calibrating audits and for comparison.

Every mechanism here is a numpyro model whose release has an exact (or
numerically exact, stated) ``log_prob``:

* ``laplace-mean`` — mean of records clipped to ``[low, high]^d`` plus
  ``Lap(Delta_1/epsilon)`` per coordinate, ``Delta_1 = d (high - low) / n``
  (Dwork & Roth 2014, Thm 3.6).
* ``gaussian-mean-classical`` — the same mean plus ``N(0, sigma^2)`` with
  ``sigma = c(delta) Delta_2 / epsilon``, ``c = sqrt(2 log(2/delta))``,
  ``Delta_2 = sqrt(d) (high - low) / n``; refused for ``epsilon > 1`` (see docs/paper-errors.md#mrs-epsilon-at-most-one).
* ``gaussian-mean-analytic`` — the analytic calibration (Balle & Wang 2018).
* ``geometric-count`` — count of ones in binary records plus two-sided
  geometric (discrete Laplace) noise ``P(k) = tanh(epsilon/2) e^{-epsilon |k|}``
  (Ghosh, Roughgarden & Sundararajan 2012).
* ``report-noisy-max-{laplace,exponential,gumbel}`` — the index of the largest
  noisy histogram count. Under replace-one every count moves by at most 1 but
  not all in one direction, so the noise scale is ``2/epsilon`` (Dwork & Roth
  Claim 3.9 generalised; Ding et al. 2021). The argmax law is exact for Gumbel
  noise (Gumbel-max: ``softmax(epsilon u / 2)``, the exponential mechanism);
  exponential noise gives the *permute-and-flip* mechanism (Ding et al. 2021,
  not the exponential mechanism), and for it and Laplace noise the law is the
  one-dimensional integral ``P(i) = int f(x - u_i) prod_{j != i} F(x - u_j) dx``
  evaluated by quadrature (:class:`NoisyArgmax`).
* ``svt`` and ``svt-dwork-roth`` — the sparse vector technique, Lyu, Su & Li
  (2017) Alg. 1 (``rho ~ Lap(Delta/epsilon_1)``, ``nu_i ~ Lap(2 c Delta/epsilon_2)``,
  ``epsilon_1 = epsilon_2 = epsilon/2``) and Alg. 2 (Dwork & Roth: ``rho ~
  Lap(c Delta/epsilon_1)`` redrawn after every positive answer, ``nu_i ~ Lap(2 c
  Delta/epsilon_1)``), on counting queries (each record answers ``k`` yes/no
  questions) against public thresholds. The
  pattern's probability is an integral over the threshold noise
  (:class:`SparseVector`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.distributions import Distribution, constraints

import dpaudit
from dpaudit.accounting.suprema import (
    ExpFactor,
    finite_sup_loss,
    log_bracket,
    piecewise_exponential_integral,
    two_sided_geometric_sup_loss,
)
from dpaudit.core.checks import check_delta, check_epsilon, check_positive, is_concrete
from dpaudit.model.noise import analytic_gaussian_sigma, classical_gaussian_sigma
from dpaudit.model.noise.sparse_vector import (
    SparseVector,
    log_laplace_cdf,
    log_trapezoid,
    richardson,
)
from mechanisms.common import gaussian_release, laplace_release, summary_release

__all__ = [
    "DiscreteLaplace",
    "NoisyArgmax",
    "SparseVector",
    "clipped_mean",
    "gaussian_mean_sensitivity",
    "histogram_counts",
    "laplace_mean_sensitivity",
    "log_laplace_cdf",
]


# ------------------------------------------------------------------- summaries


def _records(data, n: int, dim: int | None = None) -> jax.Array:
    x = jnp.asarray(data, dtype=jnp.float64)
    if x.ndim == 1 and dim is not None:
        x = x[:, None]
    if x.shape[0] != n:
        raise ValueError(
            f"the mechanism was built for n = {n} records (public under replace-one), "
            f"got {x.shape[0]}."
        )
    if dim is not None and (x.ndim != 2 or x.shape[1] != dim):
        raise ValueError(f"records must have {dim} coordinates, got shape {x.shape}.")
    if is_concrete(x) and not np.all(np.isfinite(np.asarray(x))):
        raise ValueError("the data contain NaN or infinite values; clean them first.")
    return x


def clipped_mean(data, low: float, high: float) -> jax.Array:
    """Coordinatewise mean of the records clipped to ``[low, high]`` (the claimed clipping step).

    Args:
        data: ``(n, d)`` records.
        low, high: the public clipping range.

    Returns:
        ``(d,)`` the mean of the clipped records.
    """
    return jnp.mean(jnp.clip(jnp.asarray(data, dtype=jnp.float64), low, high), axis=0)


def laplace_mean_sensitivity(dim: int, low: float, high: float, n: int) -> float:
    """l1 sensitivity ``d (high - low) / n`` of :func:`clipped_mean` under replace-one.

    Args:
        dim: the dimension ``d`` of a record.
        low, high: the public clipping range.
        n: the public number of records.

    Returns:
        ``Delta``.
    """
    return dim * (high - low) / n


def gaussian_mean_sensitivity(dim: int, low: float, high: float, n: int) -> float:
    """l2 sensitivity ``sqrt(d) (high - low) / n`` of :func:`clipped_mean` under replace-one.

    Args:
        dim, low, high, n: as :func:`laplace_mean_sensitivity`.

    Returns:
        ``Delta``.
    """
    return math.sqrt(dim) * (high - low) / n


def histogram_counts(data, n_bins: int) -> jax.Array:
    """Counts of the categories ``0 .. n_bins - 1`` (each record is one category).

    Args:
        data: ``(n,)`` categories.
        n_bins: the number of categories.

    Returns:
        ``(n_bins,)`` float counts.

    Raises:
        ValueError: if a record is not an integer category in range.
    """
    x = jnp.asarray(data)
    if x.ndim != 1:
        raise ValueError(f"categorical records must be a 1-D array, got shape {x.shape}.")
    if is_concrete(x):
        values = np.asarray(x)
        if np.any(values != np.round(values)) or np.any((values < 0) | (values >= n_bins)):
            raise ValueError(f"records must be integer categories in [0, {n_bins - 1}].")
    return jnp.sum(x.astype(jnp.int64)[:, None] == jnp.arange(n_bins), axis=0).astype(jnp.float64)


def _check_common(epsilon, n, low=0.0, high=1.0):
    check_epsilon(epsilon)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer (public dataset size), got {n!r}.")
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"the public data range needs finite low < high, got [{low}, {high}].")


# --------------------------------------------------------------- distributions


class DiscreteLaplace(Distribution):
    r"""Two-sided geometric law: ``P(k) = tanh(a/2) e^{-a |k - loc|}`` on the integers.

    With ``a = epsilon / Delta`` this is the geometric mechanism for integer
    queries of l1 sensitivity ``Delta``. Sampling: difference of two i.i.d.
    geometric variables with success probability ``1 - e^{-a}``. scipy's
    ``dlaplace(a)`` is the same law (tested).

    Example:
        >>> d = DiscreteLaplace(0.0, 1.0)
        >>> round(float(jnp.exp(d.log_prob(0.0))), 6)  # tanh(1/2)
        0.462117
    """

    arg_constraints = {"loc": constraints.real, "a": constraints.positive}
    support = constraints.integer_interval(-(2**62), 2**62)
    pytree_data_fields = ("loc", "a")

    def __init__(self, loc, a, *, validate_args=None):
        check_positive("DiscreteLaplace a", a)
        self.loc, self.a = jnp.broadcast_arrays(
            jnp.asarray(loc, dtype=jnp.float64), jnp.asarray(a, dtype=jnp.float64)
        )
        super().__init__(batch_shape=jnp.shape(self.loc), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        """Draws of the DiscreteLaplace release.

        Args:
            key, sample_shape: as :meth:`numpyro.distributions.Distribution.sample`.
        """
        shape = sample_shape + self.batch_shape
        p = -jnp.expm1(-self.a)
        k1, k2 = jax.random.split(key)
        g1 = jax.random.geometric(k1, p, shape)
        g2 = jax.random.geometric(k2, p, shape)
        return self.loc + (g1 - g2).astype(jnp.float64)

    def log_prob(self, value):
        """Log density (mass) of DiscreteLaplace releases.

        Args:
            value: releases, with any leading shape.
        """
        on_lattice = jnp.round(value - self.loc) == value - self.loc
        log_p = jnp.log(jnp.tanh(self.a / 2.0)) - self.a * jnp.abs(value - self.loc)
        return jnp.where(on_lattice, log_p, -jnp.inf)

    def exact_sup_loss(self, other):
        """The exact supremum of the privacy loss against another two-sided geometric law.

        Args:
            other: the release law of the neighbouring dataset.

        Returns:
            A :class:`dpaudit.accounting.suprema.ExactSupLoss` (``a |loc - other.loc|`` summed over the
            batch), or ``None`` when ``other`` is not the same law shifted.
        """
        if type(other) is not type(self) or np.shape(self.loc) != np.shape(other.loc):
            return None
        if not np.array_equal(np.asarray(self.a), np.asarray(other.a)):
            return None
        return two_sided_geometric_sup_loss(self.loc, other.loc, self.a)


class NoisyArgmax(Distribution):
    r"""``argmax_i (u_i + b Z_i)`` with i.i.d. Laplace, exponential or Gumbel ``Z``.

    ``P(i) = int f(x - u_i) prod_{j != i} F(x - u_j) dx`` with ``f, F`` the
    density and CDF of ``b Z``. For Gumbel noise this is ``softmax(u / b)``
    exactly; for Laplace and exponential noise the integral is evaluated by the
    trapezoid rule on ``n_grid`` points over the support (``margin b`` beyond
    the kinks) with Richardson extrapolation
    (absolute error below 1e-5, tested against scipy quadrature), and the result is
    renormalised.

    Args:
        loc: ``(k,)`` query values ``u``.
        scale: noise scale ``b`` (> 0).
        noise: ``"laplace"``, ``"exponential"`` or ``"gumbel"``.
    """

    arg_constraints = {"loc": constraints.real_vector, "scale": constraints.positive}
    pytree_data_fields = ("loc", "scale", "probs")
    pytree_aux_fields = ("noise",)

    def __init__(
        self, loc, scale, noise="laplace", *, n_grid=4097, margin=40.0, validate_args=None
    ):
        if noise not in ("laplace", "exponential", "gumbel"):
            raise ValueError(f"noise must be 'laplace', 'exponential' or 'gumbel', got {noise!r}.")
        check_positive("NoisyArgmax scale", scale)
        loc = jnp.asarray(loc, dtype=jnp.float64)
        if loc.ndim != 1 or loc.shape[0] < 1:
            raise ValueError(f"NoisyArgmax loc must be a non-empty 1-D array, got {loc.shape}.")
        self.loc, self.scale, self.noise = loc, jnp.asarray(scale, dtype=jnp.float64), noise
        if noise == "gumbel":
            self.probs = jax.nn.softmax(loc / self.scale)
        else:
            log_p = richardson(lambda g: self._log_probs(g, margin), int(n_grid))
            self.probs = jnp.exp(log_p - jax.nn.logsumexp(log_p))
        super().__init__(batch_shape=(), event_shape=(), validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self.loc.shape[0] - 1)

    def _log_probs(self, n_grid, margin):
        u, b = self.loc, self.scale
        top = jnp.max(u)
        # exponential noise: every F(x - u_j) vanishes below max(u)
        lo = top if self.noise == "exponential" else jnp.min(u) - margin * b
        x = jnp.linspace(lo, top + margin * b, n_grid)
        t = (x[None, :] - u[:, None]) / b  # (k, G)
        if self.noise == "laplace":
            log_f = -jnp.abs(t) - jnp.log(2.0 * b)
            log_cdf = log_laplace_cdf(t)
        else:
            log_f = jnp.where(t >= 0, -t - jnp.log(b), -jnp.inf)
            log_cdf = jnp.where(t > 0, jnp.log(-jnp.expm1(-jnp.maximum(t, 1e-300))), -jnp.inf)
        k = u.shape[0]
        others = jnp.where(jnp.eye(k, dtype=bool)[:, :, None], 0.0, log_cdf[None, :, :])
        integrand = log_f + jnp.sum(others, axis=1)
        return log_trapezoid(integrand, (x[-1] - x[0]) / (n_grid - 1))

    def sample(self, key, sample_shape=()):
        """Draws of the NoisyArgmax release.

        Args:
            key, sample_shape: as :meth:`numpyro.distributions.Distribution.sample`.
        """
        shape = sample_shape + self.loc.shape
        if self.noise == "laplace":
            z = jax.random.laplace(key, shape)
        elif self.noise == "exponential":
            z = jax.random.exponential(key, shape)
        else:
            z = jax.random.gumbel(key, shape)
        return jnp.argmax(self.loc + self.scale * z, axis=-1)

    def log_prob(self, value):
        """Log density (mass) of NoisyArgmax releases.

        Args:
            value: releases, with any leading shape.
        """
        index = jnp.asarray(value).astype(jnp.int64)
        inside = (index >= 0) & (index < self.loc.shape[0]) & (jnp.asarray(value) == index)
        return jnp.where(
            inside, jnp.log(self.probs)[jnp.clip(index, 0, self.loc.shape[0] - 1)], -jnp.inf
        )

    def certified_log_probs(self) -> np.ndarray | None:
        r"""``[lower, upper]`` bounds on ``log P(i)`` for every index, with no quadrature error.

        Gumbel noise: ``log softmax(u / b)``, with its round-off bounded (``16 (k + 4)``
        ulps of the magnitudes involved). Laplace and exponential noise: ``P(i) = int
        f(x - u_i) prod_{j != i} F(x - u_j) dx`` is an integral of a product of
        piecewise exponentials, evaluated in closed form with certified round-off
        (:func:`dpaudit.accounting.suprema.piecewise_exponential_integral`).

        Returns:
            A ``(k, 2)`` array, or ``None`` when the expansion is too large (``k > 21``).
        """
        u, b = np.asarray(self.loc, dtype=float), float(self.scale)
        if self.noise == "gumbel":
            z = u / b
            top = np.max(z)
            log_p = z - (top + math.log(math.fsum(np.exp(z - top))))
            err = 16.0 * (u.size + 4) * np.finfo(float).eps * (1.0 + np.abs(z) + abs(top))
            return np.stack([log_p - err, log_p + err], axis=1)
        density = (
            ExpFactor.laplace_density
            if self.noise == "laplace"
            else (ExpFactor.exponential_density)
        )
        cdf = ExpFactor.laplace_cdf if self.noise == "laplace" else ExpFactor.exponential_cdf
        out = []
        for i in range(u.size):
            factors = [density(u[i], b)] + [cdf(u[j], b) for j in range(u.size) if j != i]
            bracket = piecewise_exponential_integral(factors)
            if bracket is None:
                return None
            out.append(log_bracket(bracket[0], min(bracket[1], 1.0)))
        return np.array(out)

    def exact_sup_loss(self, other):
        """The supremum of the privacy loss against another noisy argmax, over the indices.

        Args:
            other: the release law of the neighbouring dataset.

        Returns:
            A :class:`dpaudit.accounting.suprema.ExactSupLoss` (method ``"declared"``), or ``None`` when
            ``other`` has another noise, scale or number of candidates.
        """
        if type(other) is not type(self) or other.noise != self.noise:
            return None
        if other.loc.shape != self.loc.shape or float(other.scale) != float(self.scale):
            return None
        log_p, log_q = self.certified_log_probs(), other.certified_log_probs()
        if log_p is None or log_q is None:
            return None
        return finite_sup_loss(log_p, log_q)


# ------------------------------------------------------------------ mechanisms


@dpaudit.register("laplace-mean", example={"epsilon": 1.0, "n": 50, "dim": 2})
def laplace_mean(
    epsilon: float = 1.0, n: int = 100, low: float = 0.0, high: float = 1.0, dim: int = 1
) -> dpaudit.Mechanism:
    """Laplace mechanism: clipped mean plus Lap(d (high-low) / (n epsilon)) per coordinate.

    Args:
        epsilon: the claimed epsilon.
        n: the public number of records.
        low, high: the public range every record coordinate is clipped to.
        dim: the dimension ``d`` of a record.

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    _check_common(epsilon, n, low, high)
    sensitivity = laplace_mean_sensitivity(dim, low, high, n)
    scale = sensitivity / epsilon

    def summary(data):
        return clipped_mean(_records(data, n, dim), low, high)

    return laplace_release(
        "laplace-mean",
        summary,
        scale,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference="Dwork & Roth 2014, Thm 3.6",
        params={"epsilon": epsilon, "n": n, "low": low, "high": high, "dim": dim, "scale": scale},
        description="Mean of records clipped to [low, high]^d plus Laplace noise (l1 sensitivity).",
    )


def _gaussian_mean(name, sigma, epsilon, delta, n, low, high, dim, reference):
    sensitivity = gaussian_mean_sensitivity(dim, low, high, n)

    def summary(data):
        return clipped_mean(_records(data, n, dim), low, high)

    return gaussian_release(
        name,
        summary,
        sigma,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference=reference,
        delta=delta,
        params={
            "epsilon": epsilon,
            "delta": delta,
            "n": n,
            "low": low,
            "high": high,
            "dim": dim,
            "sigma": sigma,
        },
        description="Mean of records clipped to [low, high]^d plus Gaussian noise (l2 sensitivity).",
    )


@dpaudit.register("gaussian-mean-classical", example={"epsilon": 1.0, "delta": 1e-3, "n": 50})
def gaussian_mean_classical(
    epsilon: float = 1.0,
    delta: float = 1e-5,
    n: int = 100,
    low: float = 0.0,
    high: float = 1.0,
    dim: int = 1,
) -> dpaudit.Mechanism:
    """Gaussian mechanism, sigma = sqrt(2 log(2/delta)) Delta_2 / epsilon (epsilon <= 1 only).

    Args:
        epsilon, delta: the claim (``epsilon <= 1`` for this calibration).
        n, low, high, dim: as :func:`laplace_mean`.

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    _check_common(epsilon, n, low, high)
    check_delta(delta)
    sigma = classical_gaussian_sigma(gaussian_mean_sensitivity(dim, low, high, n), epsilon, delta)
    return _gaussian_mean(
        "gaussian-mean-classical",
        sigma,
        epsilon,
        delta,
        n,
        low,
        high,
        dim,
        "HRW Prop. 2.4 / MRS Thm 3.2 (epsilon <= 1; docs/paper-errors.md#mrs-epsilon-at-most-one)",
    )


@dpaudit.register("gaussian-mean-analytic", example={"epsilon": 2.0, "delta": 1e-3, "n": 50})
def gaussian_mean_analytic(
    epsilon: float = 1.0,
    delta: float = 1e-5,
    n: int = 100,
    low: float = 0.0,
    high: float = 1.0,
    dim: int = 1,
) -> dpaudit.Mechanism:
    """Gaussian mechanism with the analytic calibration of Balle & Wang (any epsilon).

    Args:
        epsilon, delta, n, low, high, dim: as :func:`gaussian_mean_classical` (any epsilon).

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    _check_common(epsilon, n, low, high)
    check_delta(delta)
    sigma = analytic_gaussian_sigma(gaussian_mean_sensitivity(dim, low, high, n), epsilon, delta)
    return _gaussian_mean(
        "gaussian-mean-analytic",
        sigma,
        epsilon,
        delta,
        n,
        low,
        high,
        dim,
        "Balle & Wang 2018, Thm 8",
    )


@dpaudit.register("geometric-count", example={"epsilon": 1.0, "n": 30})
def geometric_count(epsilon: float = 1.0, n: int = 100) -> dpaudit.Mechanism:
    """Count of ones in binary records plus two-sided geometric noise (pure epsilon-DP).

    Args:
        epsilon: the claimed epsilon.
        n: the public number of binary records.

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    _check_common(epsilon, n)

    def summary(data):
        x = _records(data, n)
        if is_concrete(x) and not np.all(np.isin(np.asarray(x), (0.0, 1.0))):
            raise ValueError("geometric-count records must be 0 or 1.")
        return jnp.sum(x)

    return summary_release(
        "geometric-count",
        summary,
        lambda loc: DiscreteLaplace(loc, epsilon),
        epsilon=epsilon,
        sensitivity=1.0,
        sensitivity_norm="l1",
        reference="Ghosh, Roughgarden & Sundararajan 2012 (geometric mechanism)",
        difference_norm=jnp.abs,
        params={"epsilon": epsilon, "n": n},
        description="Count of ones plus two-sided geometric noise with parameter e^-epsilon.",
    )


def _noisy_max(noise: str, epsilon: float, n: int, n_bins: int, reference: str):
    _check_common(epsilon, n)
    if n_bins < 2:
        raise ValueError(f"report-noisy-max needs at least 2 bins, got {n_bins}.")
    scale = 2.0 / epsilon

    def summary(data):
        x = _records(data, n)
        return histogram_counts(x, n_bins)

    name = f"report-noisy-max-{noise}"
    return summary_release(
        name,
        summary,
        lambda loc: NoisyArgmax(loc, scale, noise),
        epsilon=epsilon,
        sensitivity=1.0,
        sensitivity_norm="linf",
        reference=reference,
        difference_norm=lambda h: jnp.max(jnp.abs(h), axis=-1),
        params={"epsilon": epsilon, "n": n, "n_bins": n_bins, "scale": scale, "noise": noise},
        description=f"Index of the largest histogram count plus {noise} noise of scale 2/epsilon.",
    )


@dpaudit.register("report-noisy-max-laplace", example={"epsilon": 1.0, "n": 20, "n_bins": 3})
def report_noisy_max_laplace(epsilon: float = 1.0, n: int = 100, n_bins: int = 4):
    """Report noisy max: argmax of histogram counts plus Lap(2/epsilon).

    Args:
        epsilon: the claimed epsilon.
        n: the public number of records (categories ``0..n_bins-1``).
        n_bins: the number of histogram bins (candidates).

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    return _noisy_max("laplace", epsilon, n, n_bins, "Dwork & Roth 2014, Claim 3.9 (Delta = 1)")


@dpaudit.register("report-noisy-max-exponential", example={"epsilon": 1.0, "n": 20, "n_bins": 3})
def report_noisy_max_exponential(epsilon: float = 1.0, n: int = 100, n_bins: int = 4):
    """Report noisy max with Exp(2/epsilon) noise (= permute-and-flip).

    Args:
        epsilon, n, n_bins: as :func:`report_noisy_max_laplace`.

    Returns:
        The :class:`~dpaudit.Mechanism`; it raises as :func:`report_noisy_max_laplace`.
    """
    return _noisy_max("exponential", epsilon, n, n_bins, "Ding et al. 2021; McKenna & Sheldon 2020")


@dpaudit.register("report-noisy-max-gumbel", example={"epsilon": 1.0, "n": 20, "n_bins": 3})
def report_noisy_max_gumbel(epsilon: float = 1.0, n: int = 100, n_bins: int = 4):
    """Report noisy max with Gumbel(2/epsilon) noise (= exponential mechanism, exp(eps u / 2)).

    Args:
        epsilon, n, n_bins: as :func:`report_noisy_max_laplace`.

    Returns:
        The :class:`~dpaudit.Mechanism`; it raises as :func:`report_noisy_max_laplace`.
    """
    return _noisy_max("gumbel", epsilon, n, n_bins, "McSherry & Talwar 2007; Dwork & Roth Thm 3.10")


def svt_queries(data, n: int, n_queries: int) -> jax.Array:
    """The SVT queries: each record answers ``k`` yes/no questions; query ``i`` counts the yeses.

    Data are ``(n, k)`` in ``{0, 1}``; a replaced record moves every count by at
    most 1, in either direction (``Delta = 1``).

    Args:
        data: ``(n, k)`` yes/no answers, one row per record.
        n: the public number of records.
        n_queries: ``k``.

    Returns:
        ``(k,)`` counts.
    """
    x = _records(data, n, n_queries)
    if is_concrete(x) and not np.all(np.isin(np.asarray(x), (0.0, 1.0))):
        raise ValueError("SVT records must be 0/1 answers, one per query.")
    return jnp.sum(x, axis=0)


def sparse_vector_mechanism(
    name: str,
    *,
    epsilon: float,
    n: int,
    thresholds,
    cutoff: int | None,
    threshold_scale: float,
    query_scale: float,
    resample: bool = False,
    release_values: bool = False,
    reference: str,
    known_flaw: dpaudit.KnownFlaw | None = None,
    description: str = "",
) -> dpaudit.Mechanism:
    """An SVT run on counting queries against public thresholds (shared by the faulty variants).

    Args:
        name: the catalogue name.
        epsilon: the claimed epsilon.
        n: the public number of records.
        thresholds: one public threshold per query.
        cutoff: the positives before stopping (``None``: never stops).
        threshold_scale: the Laplace scale of the threshold noise.
        query_scale: the Laplace scale of each query's noise (0: none).
        resample: redraw the threshold noise after each positive.
        release_values: release the noisy answer of each positive too.
        reference: the source of the claim.
        known_flaw: the true guarantee, for the faulty variants.
        description: one paragraph for reports.

    Returns:
        The :class:`~dpaudit.Mechanism`.
    """
    _check_common(epsilon, n)
    thresholds = np.asarray(thresholds, dtype=float)
    if thresholds.ndim != 1 or thresholds.size < 1 or not np.all(np.isfinite(thresholds)):
        raise ValueError("thresholds must be a non-empty 1-D array of finite public values.")
    n_queries = thresholds.size

    def summary(data):
        return svt_queries(data, n, n_queries)

    return summary_release(
        name,
        summary,
        lambda loc: SparseVector(
            loc,
            thresholds,
            threshold_scale,
            query_scale,
            cutoff=cutoff,
            resample=resample,
            release_values=release_values,
        ),
        epsilon=epsilon,
        sensitivity=1.0,
        sensitivity_norm="linf",
        reference=reference,
        difference_norm=lambda h: jnp.max(jnp.abs(h), axis=-1),
        params={
            "epsilon": epsilon,
            "n": n,
            "thresholds": thresholds,
            "cutoff": cutoff,
            "threshold_scale": threshold_scale,
            "query_scale": query_scale,
            "resample": resample,
            "release_values": release_values,
        },
        description=description,
        known_flaw=known_flaw,
    )


_SVT_EXAMPLE = {"epsilon": 1.0, "n": 12, "thresholds": (4.0, 4.0, 4.0), "cutoff": 1}


@dpaudit.register("svt", example=_SVT_EXAMPLE)
def svt(epsilon: float = 1.0, n: int = 100, thresholds=(10.0,) * 4, cutoff: int = 1):
    """Sparse vector technique, Lyu et al. Alg. 1: rho ~ Lap(2/eps), nu_i ~ Lap(4c/eps).

    Args:
        epsilon: the claimed epsilon.
        n: the public number of records.
        thresholds: one public threshold per query (the number of queries).
        cutoff: the number ``c`` of positive answers before the mechanism stops.

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    check_epsilon(epsilon)
    return sparse_vector_mechanism(
        "svt",
        epsilon=epsilon,
        n=n,
        thresholds=thresholds,
        cutoff=cutoff,
        threshold_scale=1.0 / (epsilon / 2.0),
        query_scale=2.0 * cutoff / (epsilon / 2.0),
        reference="Lyu, Su & Li 2017, Alg. 1 / Thm 2",
        description="SVT (Lyu Alg. 1) on counting queries; stops after `cutoff` positives.",
    )


@dpaudit.register("svt-dwork-roth", example=_SVT_EXAMPLE)
def svt_dwork_roth(epsilon: float = 1.0, n: int = 100, thresholds=(10.0,) * 4, cutoff: int = 1):
    """SVT as in Dwork & Roth (Lyu Alg. 2): rho ~ Lap(2c/eps) redrawn after each positive.

    Args:
        epsilon, n, thresholds, cutoff: as :func:`svt`.

    Returns:
        The :class:`~dpaudit.Mechanism` (its catalogue entry is the first line above).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    check_epsilon(epsilon)
    return sparse_vector_mechanism(
        "svt-dwork-roth",
        epsilon=epsilon,
        n=n,
        thresholds=thresholds,
        cutoff=cutoff,
        threshold_scale=cutoff / (epsilon / 2.0),
        query_scale=2.0 * cutoff / (epsilon / 2.0),
        resample=True,
        reference="Dwork & Roth 2014, Alg. 2 (Sparse); Lyu, Su & Li 2017, Alg. 2",
        description="SVT with the threshold noise redrawn after every positive answer.",
    )
