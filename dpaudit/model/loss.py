r"""Privacy losses of a declared mechanism: ``L(x) = log p_D(x) - log p_D'(x)``.

For a mechanism whose release ``x`` has density ``p_D`` under dataset ``D``
(the ``log_prob`` of the distribution at its release site, see
:class:`dpaudit.Mechanism`) the *privacy loss* of ``x`` between ``D`` and a
neighbour ``D'`` is

``L(x) = log p_D(x) - log p_D'(x)``,

and the mechanism's hockey-stick divergence is
``delta(epsilon) = E_{x ~ P_D}[(1 - e^(epsilon - L(x)))_+]`` (see
:mod:`dpaudit.estimation.pld`). DP needs both directions, ``(D, D')`` and ``(D', D)``.

Three routes evaluate ``L``, and they agree (``tests/model/test_loss.py``):

* ``"density"`` — the two release distributions' ``log_prob``
  (:meth:`dpaudit.Mechanism.release_distribution`). Jitted and vmapped.
* ``"model"`` — numpyro's :func:`~numpyro.infer.util.log_density` with the
  release site substituted, reading the site's log density from the model's
  trace. Vmapped, not jitted (models may run numpy on their data); slow, for
  cross-checks.
* ``"closed-form"`` — when the two laws differ by a shift of the same
  independent-coordinate noise (:func:`noise_shift`: ``GridNoise``,
  ``GaussianProcessNoise``, ``ICLPNoise``, or numpyro ``Normal``/``Laplace``
  with equal scales) the loss is the Radon–Nikodym form in noise coordinates
  ``z`` (the release minus its centre ``f_D``) with ``h = f_D - f_D'``:

  - Gaussian (Cameron–Martin, MRS Lemma 3.1):
    ``L = sum_j (h_j z_j + h_j^2/2) / (sigma^2 lambda_j)``, exactly
    ``N(mu^2/2, mu^2)`` under ``P_D`` with ``mu = ||h||_C / sigma``;
  - Laplace / ICLP (1,C form, LR Lemma 1; LR prints the scale without the
    sqrt(2) it needs, see docs/paper-errors.md#lr-iclp-sigma-constant):
    ``L = (sqrt 2/sigma) sum_j (|z_j + h_j| - |z_j|) / sqrt(lambda_j)``,
    bounded by ``sqrt 2 ||h||_{1,C} / sigma``.

  Both are summed termwise, never as differences of norms (a difference of two
  large norms loses the loss to round-off, see docs/paper-errors.md#lr-termwise-density).
  The noise structure itself is detected by :func:`noise_shift`
  (:mod:`dpaudit.model.shift`, re-exported here).

**Infinite losses.** A release outside the support of ``P_D'`` (a grid release
whose summaries differ off the Karhunen–Loève span: mutually singular laws)
has ``L = +inf``; this is a certificate of singularity, not an error. The
combination rule never forms ``inf - inf``: ``log p_D' = -inf`` gives
``+inf`` when ``log p_D`` is finite, ``log p_D = -inf`` gives ``-inf`` when
``log p_D'`` is finite, and a release outside *both* supports gives NaN, which
:func:`privacy_loss` reports as an error.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from numpyro.distributions import Distribution

from dpaudit.model.densities import (
    check_has_density,
    combine_log_probs,
    jit_safe,
    law_jit,
    model_log_prob,
    pytree_safe,
    release_log_prob,
    site_log_prob,
    traced_or_closed,
)
from dpaudit.model.mechanism import Mechanism
from dpaudit.model.noise.processes import GaussianProcessNoise, GridNoise, ICLPNoise
from dpaudit.model.noise.radon_nikodym import cameron_martin_log_rn_terms, one_c_log_rn_terms
from dpaudit.model.shift import NoiseShift, noise_shift, unwrap_independent
from dpaudit.model.sites import supported_log_prob

__all__ = [
    "CERTIFICATE_RTOL",
    "ROUTES",
    "NoiseShift",
    "closed_form_draws",
    "closed_form_losses",
    "combine_log_probs",
    "coordinate_log_probs",
    "density_losses",
    "evaluate_release",
    "jit_safe",
    "loss_at_releases",
    "loss_chunk",
    "model_log_prob",
    "noise_shift",
    "privacy_loss",
    "pytree_safe",
    "release_log_prob",
    "sample_losses",
    "traced_or_closed",
]

#: Ways to evaluate a privacy loss (see the module docstring).
ROUTES = ("density", "model", "closed-form")

#: Relative float64 safety margin of a certificate: a release certifies
#: ``L(x) > epsilon`` only when ``L(x) > epsilon + CERTIFICATE_RTOL * (1 + sum_j |t_j|)``
#: where ``t_j`` are the summands of both log densities at ``x``; the float64
#: error of such a sum is below ``K * 2^-53 * sum_j |t_j|``, far below this.
CERTIFICATE_RTOL = 1e-9


# ------------------------------------------------------------ chunk kernels


def _closed_form_terms(family: str, h, z, eigenvalues, sigma):
    """Summands of ``L`` at noise coordinates ``z`` (release relative to ``f_P``)."""
    if family == "gaussian":
        return cameron_martin_log_rn_terms(h, z + h, eigenvalues, sigma)
    return one_c_log_rn_terms(h, z + h, eigenvalues, sigma)


def closed_form_draws(key, eigenvalues, sigma, n: int, family: str) -> jax.Array:
    """Noise coordinates ``z (n, K)``: ``N(0, sigma^2 lambda_j)`` or ``Lap(0, sigma sqrt(lambda_j/2))``.

    Args:
        key: a JAX random key.
        eigenvalues: ``(K,)`` noise eigenvalues ``lambda_j``.
        sigma: noise multiplier.
        n: number of draws.
        family: ``"gaussian"`` or ``"laplace"``.

    Returns:
        ``(n, K)`` noise coordinates.
    """
    shape = (n, eigenvalues.shape[0])
    if family == "gaussian":
        return jax.random.normal(key, shape) * (sigma * jnp.sqrt(eigenvalues))
    return jax.random.laplace(key, shape) * (sigma * jnp.sqrt(eigenvalues / 2.0))


def closed_form_losses(key, h, eigenvalues, sigma, singular, n: int, family: str) -> jax.Array:
    """Losses of ``n`` draws from ``P`` by the closed form (traceable; the draws stay fused).

    The draws are not returned, so XLA never writes the ``(n, K)`` noise to memory;
    :func:`closed_form_draws` with the same key regenerates them when one is needed.

    Args:
        key: a JAX random key.
        h: ``(K,)`` shift ``f_P - f_Q`` in noise coordinates.
        eigenvalues: ``(K,)`` noise eigenvalues.
        sigma: noise multiplier.
        singular: True for mutually singular laws (every loss is ``+inf``).
        n: number of draws.
        family: ``"gaussian"`` or ``"laplace"``.

    Returns:
        ``(n,)`` losses.
    """
    z = closed_form_draws(key, eigenvalues, sigma, n, family)
    loss = jnp.sum(_closed_form_terms(family, h, z, eigenvalues, sigma), axis=-1)
    return jnp.where(singular, jnp.inf, loss)


def coordinate_log_probs(d: Distribution, x) -> jax.Array | None:
    """Per-coordinate log densities of releases ``x``, when ``d`` has independent coordinates.

    ``d`` is ``Independent`` (``.to_event``) over a law without event dimensions (numpyro
    ``Laplace``, ``Normal``, ...) or an :class:`~dpaudit.model.noise.processes.ICLPNoise` /
    :class:`~dpaudit.model.noise.processes.GaussianProcessNoise`; each coordinate is ``-inf``
    outside its own support, so the row sums are :func:`site_log_prob` up to summation order.

    Args:
        d: a release law.
        x: releases with a leading batch axis.

    Returns:
        ``(n, m)`` log densities of the ``m`` coordinates, or ``None`` for any other law.
    """
    base = d
    while isinstance(base, dist.Independent):
        base = base.base_dist
    if isinstance(base, GaussianProcessNoise | ICLPNoise):
        terms = base.log_density_terms(x)
        terms = jnp.where(jnp.isfinite(x), terms, -jnp.inf)  # support: the real line
    elif isinstance(base, Distribution) and base.event_shape == ():
        terms = supported_log_prob(base, x)
    else:
        return None
    return terms.reshape(terms.shape[0], -1)


def loss_at_releases(dist_p: Distribution, dist_q: Distribution, x) -> jax.Array:
    """``log p(x) - log q(x)`` at releases ``x ~ P`` (traceable; the density route's hot loop).

    When both laws have independent coordinates of the same layout
    (:func:`coordinate_log_probs`) the per-coordinate differences are summed once,
    ``sum_j (log p_j - log q_j)``, each resolved by :func:`combine_log_probs` (an impossible
    coordinate under ``Q`` is ``+inf``, under both NaN): one reduction over the release
    instead of two, and a smaller float64 error (at most ``gamma_m sum_j |log p_j - log q_j|``
    instead of ``gamma_m sum_j (|log p_j| + |log q_j|)``). Otherwise the two whole log
    densities are combined. Only Monte Carlo estimates read these losses; certificates
    re-evaluate their release with :func:`evaluate_release`, whose tolerance bounds the
    error of either order.

    Args:
        dist_p: the law the releases are drawn from.
        dist_q: the other law.
        x: releases with a leading batch axis.

    Returns:
        ``(n,)`` losses.
    """
    terms_p = coordinate_log_probs(dist_p, x)
    terms_q = None if terms_p is None else coordinate_log_probs(dist_q, x)
    if terms_q is None or terms_p.shape != terms_q.shape:
        return combine_log_probs(site_log_prob(dist_p, x), site_log_prob(dist_q, x))
    return jnp.sum(combine_log_probs(terms_p, terms_q), axis=-1)


def density_losses(key, dist_p, dist_q, n: int) -> jax.Array:
    """Losses of ``n`` draws ``x ~ P`` from the two ``log_prob`` (traceable).

    Args:
        key: a JAX random key.
        dist_p: the release law ``P`` the releases are drawn from.
        dist_q: the other release law ``Q``.
        n: number of draws.

    Returns:
        ``(n,)`` losses ``log p(x) - log q(x)``.
    """
    x = dist_p.sample(key, (n,))
    return loss_at_releases(dist_p, dist_q, x)


_closed_form_losses_jit = jax.jit(closed_form_losses, static_argnames=("n", "family"))
_closed_form_draws_jit = jax.jit(closed_form_draws, static_argnames=("n", "family"))
_density_losses_jit = law_jit(density_losses, static_argnames=("n",))


@partial(law_jit, static_argnames=("n",))
def _density_draws_jit(key, dist_p, n):
    return dist_p.sample(key, (n,))


def _closure_jit(fn, *bound):
    """``jit`` of ``fn`` with (non-pytree) distributions closed over."""
    return jax.jit(lambda *args: fn(*args[:1], *bound, *args[1:]))


def loss_chunk(
    key, dist_p, dist_q, n: int, *, shift: NoiseShift | None = None, return_draws: bool = True
):
    """Draw ``n`` releases ``x ~ P`` and their losses ``log p(x) - log q(x)``.

    With ``shift`` (from :func:`noise_shift`) the closed form is used and the
    draws are *noise coordinates* ``z`` (``shift.release(z)`` gives the
    releases); otherwise the density route is used and the draws are the
    releases. Singular shifts give ``+inf`` for every draw. With
    ``return_draws=False`` only the losses are computed (the fast path: the
    draws are never materialised); the same ``key`` regenerates them.

    Args:
        key: a JAX random key.
        dist_p: the release law ``P``.
        dist_q: the release law ``Q``.
        n: number of releases.
        shift: the noise structure (closed form), or ``None`` (densities).
        return_draws: also return the draws.

    Returns:
        ``(losses (n,), draws (n, ...) or None)``, JAX arrays.
    """
    n = int(n)
    if shift is None:
        loss = traced_or_closed(
            (dist_p, dist_q),
            lambda: _density_losses_jit(key, dist_p, dist_q, n=n),
            lambda: _closure_jit(lambda k, p, q: density_losses(k, p, q, n), dist_p, dist_q)(key),
        )
        draws = None
        if return_draws:
            draws = traced_or_closed(
                (dist_p,),
                lambda: _density_draws_jit(key, dist_p, n=n),
                lambda: dist_p.sample(key, (n,)),
            )
        return loss, draws
    args = (
        jnp.asarray(shift.shift),
        jnp.asarray(shift.eigenvalues),
        jnp.asarray(shift.sigma, dtype=jnp.float64),
    )
    loss = _closed_form_losses_jit(
        key, *args, jnp.asarray(shift.singular), n=n, family=shift.family
    )
    draws = (
        _closed_form_draws_jit(key, args[1], args[2], n=n, family=shift.family)
        if return_draws
        else None
    )
    return loss, draws


# ------------------------------------------------------------------ public API


def _release_pair(mechanism: Mechanism, data, data_prime):
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dpaudit.Mechanism, got {type(mechanism).__name__}.")
    dist_p = mechanism.release_distribution(data)
    dist_q = mechanism.release_distribution(data_prime)
    check_has_density(dist_p, mechanism.name)
    return dist_p, dist_q


def _raise_on_nan(loss, where: str) -> None:
    n_nan = int(np.count_nonzero(np.isnan(np.asarray(loss))))
    if n_nan:
        raise ValueError(
            f"{n_nan} privacy loss(es) are NaN {where}: the release is outside the support of "
            "both release distributions, or a log density is NaN; check the model's log_prob "
            "and the data (no partial result is returned)."
        )


def privacy_loss(mechanism: Mechanism, data, data_prime, releases, *, route: str = "density"):
    """``L(x) = log p_D(x) - log p_D'(x)`` at given releases ``(n, *event)``.

    Args:
        mechanism: the :class:`~dpaudit.Mechanism`.
        data, data_prime: the datasets ``D`` and ``D'``.
        releases: releases in the mechanism's coordinates, with a leading batch axis.
        route: ``"density"`` (release distributions' ``log_prob``), ``"model"``
            (numpyro ``log_density`` at the release site) or ``"closed-form"``
            (Cameron–Martin / 1,C forms; only for shifted noise, see :func:`noise_shift`).

    Returns:
        ``(n,)`` float64 losses; ``+inf`` where ``x`` is outside the support of ``P_D'``.

    Raises:
        ValueError: unknown route, closed form asked for a release that is not
            shifted noise, or NaN losses (a release outside both supports).
        TypeError: a release distribution without a density.

    Example:
        >>> import numpyro, numpyro.distributions as dist
        >>> from dpaudit import Claim, Mechanism
        >>> mech = Mechanism("lap", lambda d: numpyro.sample("release", dist.Laplace(d.mean(), 1.0)),
        ...                  Claim(epsilon=1.0))
        >>> [float(v) for v in privacy_loss(mech, jnp.array([1.0]), jnp.array([0.0]),
        ...                                 jnp.array([5.0, 0.5]))]
        [1.0, 0.0]
    """
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}.")
    releases = jnp.asarray(releases)
    dist_p, dist_q = _release_pair(mechanism, data, data_prime)
    if route == "density":
        loss = loss_at_releases(dist_p, dist_q, releases)
    elif route == "model":
        loss = combine_log_probs(
            model_log_prob(mechanism, data, releases),
            model_log_prob(mechanism, data_prime, releases),
        )
    else:
        shift = noise_shift(dist_p, dist_q)
        if shift is None:
            raise ValueError(
                f"mechanism {mechanism.name!r}: the closed-form route needs two releases that are "
                "the same Gaussian/ICLP/Laplace noise shifted; use route='density'."
            )
        loss = _closed_form_at_releases(shift, dist_p, dist_q, releases)
    _raise_on_nan(loss, f"for mechanism {mechanism.name!r}")
    return loss


def _closed_form_at_releases(shift: NoiseShift, dist_p, dist_q, releases) -> jax.Array:
    """Closed-form loss at given releases; off the support of ``P`` it defers to the densities."""
    centred = releases - jnp.asarray(shift.centre)
    if shift.basis is not None:
        z = (centred * shift.basis.grid.weights) @ shift.basis.eigenfunctions
    elif shift.embedding is not None:
        tril = jnp.asarray(shift.embedding)
        z = jax.scipy.linalg.solve_triangular(tril, centred.T, lower=True).T
    else:
        z = centred.reshape(releases.shape[0], -1)
    terms = _closed_form_terms(
        shift.family, jnp.asarray(shift.shift), z, jnp.asarray(shift.eigenvalues), shift.sigma
    )
    loss = jnp.where(shift.singular, jnp.inf, jnp.sum(terms, axis=-1))
    log_p = site_log_prob(dist_p, releases)
    off_p = log_p == -jnp.inf
    return jnp.where(off_p, combine_log_probs(log_p, site_log_prob(dist_q, releases)), loss)


def sample_losses(
    mechanism: Mechanism,
    data,
    data_prime,
    n_samples: int,
    key,
    *,
    route: str = "density",
    chunk_size: int = 65536,
) -> jax.Array:
    """Draw ``x ~ P_D`` and return ``L(x)`` for ``n_samples`` releases (one direction).

    For long runs with bounded memory, confidence bounds and both directions use
    :func:`dpaudit.audit`; this is the low-level tier.

    Args:
        mechanism: the :class:`~dpaudit.Mechanism`.
        data: the dataset ``D``.
        data_prime: its neighbour ``D'``.
        n_samples: number of releases.
        key: a JAX random key (chunk ``i`` uses ``fold_in(key, i)``).
        route: ``"density"``, ``"model"`` or ``"closed-form"``.
        chunk_size: releases per chunk.

    Returns:
        ``(n_samples,)`` losses.

    Raises:
        ValueError: for NaN losses or a closed-form route on unstructured noise.
    """
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}.")
    dist_p, dist_q = _release_pair(mechanism, data, data_prime)
    n_samples = int(n_samples)
    out = []
    shift = noise_shift(dist_p, dist_q) if route == "closed-form" else None
    if route == "closed-form" and shift is None:
        raise ValueError(
            f"mechanism {mechanism.name!r}: the closed-form route needs shifted "
            "Gaussian/ICLP/Laplace noise; use route='density'."
        )
    for i, start in enumerate(range(0, n_samples, chunk_size)):
        n = min(chunk_size, n_samples - start)
        k = jax.random.fold_in(key, i)
        if route == "model":
            x = dist_p.sample(k, (n,))
            loss = combine_log_probs(
                model_log_prob(mechanism, data, x), model_log_prob(mechanism, data_prime, x)
            )
        else:
            loss, _ = loss_chunk(k, dist_p, dist_q, n, shift=shift)
        out.append(loss)
    loss = jnp.concatenate(out) if out else jnp.zeros((0,))
    _raise_on_nan(loss, f"for mechanism {mechanism.name!r}")
    return loss


def _abs_terms(d: Distribution, x) -> jax.Array:
    """``sum_j |log-density summand_j|`` at one release (the float64 error scale)."""
    x = jnp.asarray(x)
    if isinstance(d, GridNoise):
        z = ((x - d.loc) * d.basis.grid.weights) @ d.basis.eigenfunctions
        return _abs_terms(d.coefficient_noise, z)
    if isinstance(d, GaussianProcessNoise):
        std = d.coefficient_std
        u = (x - d.loc) / std
        return jnp.sum(0.5 * u * u + jnp.abs(jnp.log(std)) + 0.5 * math.log(2 * math.pi))
    if isinstance(d, ICLPNoise):
        b = d.laplace_scale
        return jnp.sum(jnp.abs(x - d.loc) / b + jnp.abs(jnp.log(2.0 * b)))
    base = unwrap_independent(d)
    if isinstance(base, dist.Normal | dist.Laplace):
        return jnp.sum(jnp.abs(base.log_prob(x)))
    if isinstance(d, dist.MultivariateNormal):
        z = jax.scipy.linalg.solve_triangular(d.scale_tril, x - d.loc, lower=True)
        return jnp.sum(0.5 * z * z + jnp.abs(jnp.log(jnp.diagonal(d.scale_tril))) + 1.0)
    log_prob = supported_log_prob(d, x)
    # off the support the loss is infinite whatever its round-off: only finite terms count
    return jnp.abs(jnp.sum(jnp.where(jnp.isfinite(log_prob), log_prob, 0.0)))


@law_jit
def _evaluate_at(dist_p, dist_q, release):
    x = release[None]
    log_p = site_log_prob(dist_p, x)[0]
    log_q = site_log_prob(dist_q, x)[0]
    magnitude = _abs_terms(dist_p, release) + _abs_terms(dist_q, release)
    return combine_log_probs(log_p, log_q), log_p, log_q, magnitude


def evaluate_release(dist_p: Distribution, dist_q: Distribution, release) -> tuple:
    """``(L, log_p, log_q, tolerance)`` at one release, with the exact densities (jitted).

    ``tolerance = CERTIFICATE_RTOL (1 + sum_j |t_j|)`` over the summands ``t_j``
    of both log densities (per coordinate where the distribution exposes them),
    so cancellation inside a sum cannot hide its float64 error: a release
    certifies ``L(x) > epsilon`` only if ``L > epsilon + tolerance``.

    Args:
        dist_p: the release law ``P``.
        dist_q: the release law ``Q``.
        release: one release, in the mechanism's coordinates.

    Returns:
        ``(loss, log_p, log_q, tolerance)`` as Python floats.
    """
    release = np.asarray(release, dtype=np.float64)  # a host array: no conversion program
    loss, log_p, log_q, mag = traced_or_closed(
        (dist_p, dist_q),
        lambda: _evaluate_at(dist_p, dist_q, release),
        lambda: _evaluate_at.__wrapped__(dist_p, dist_q, release),
    )
    mag = float(mag)
    if not math.isfinite(mag):
        mag = 0.0
    return float(loss), float(log_p), float(log_q), CERTIFICATE_RTOL * (1.0 + mag)
