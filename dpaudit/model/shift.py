r"""Noise structure of two release laws: the same independent-coordinate noise, shifted.

When ``P_D`` and ``P_D'`` are the same noise around two centres, the privacy
loss has a closed form in noise coordinates and the privacy curve can be
computed exactly (:mod:`dpaudit.accounting.profiles`). :func:`noise_shift` recognises
the pairs of this kind; :class:`NoiseShift` describes one.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpyro.distributions as dist
import scipy.linalg
from numpyro.distributions import Distribution

from dpaudit.model.noise.processes import (
    GaussianProcessNoise,
    GridNoise,
    ICLPNoise,
    KarhunenLoeveNoise,
)
from dpaudit.model.spaces.bases import KarhunenLoeveBasis

__all__ = ["NoiseShift", "joint_noise_shift", "noise_shift", "unwrap_independent"]


@dataclasses.dataclass(frozen=True)
class NoiseShift:
    r"""Two release laws that are the same independent-coordinate noise, shifted.

    ``P = law(f_P + E(Z))`` and ``Q = law(f_Q + E(Z))`` where ``Z`` has
    independent coordinates (Gaussian ``N(0, sigma^2 lambda_j)`` or Laplace
    ``Lap(0, sigma sqrt(lambda_j/2))``) and ``E`` embeds noise coordinates into
    the release (the Karhunen–Loève reconstruction on a grid, or the identity).

    Attributes:
        family: ``"gaussian"`` or ``"laplace"``.
        shift: ``h = f_P - f_Q`` in noise coordinates, ``(K,)`` numpy.
        eigenvalues: ``(K,)``; for numpyro ``Normal(loc, s)`` they are ``s^2``
            and for ``Laplace(loc, b)`` they are ``2 b^2`` (with ``sigma = 1``).
        sigma: noise multiplier.
        singular: True when ``f_P - f_Q`` leaves the noise's support (a grid
            release whose difference has a part orthogonal to the span of the
            retained eigenfunctions): the laws are mutually singular.
        residual_norm: L2 size of that orthogonal part (0 off grids).
        centre: ``f_P`` in release coordinates.
        centre_other: ``f_Q`` in release coordinates.
        basis: the basis of a grid release, else ``None``.
        source: ``"grid"``, ``"coefficients"``, ``"independent"`` or ``"multivariate"``.
        embedding: for a multivariate normal ``N(f, L L^T)`` the factor ``L``
            (noise coordinates are whitened: ``x = f + L z``, ``h = L^-1 (f_P - f_Q)``).
    """

    family: str
    shift: np.ndarray
    eigenvalues: np.ndarray
    sigma: float
    singular: bool
    residual_norm: float
    centre: np.ndarray
    centre_other: np.ndarray
    basis: KarhunenLoeveBasis | None
    source: str
    embedding: np.ndarray | None = None

    @property
    def n_components(self) -> int:
        """The number ``K`` of noise coordinates."""
        return int(self.shift.shape[0])

    @property
    def coordinate_scale(self) -> np.ndarray:
        """Per-coordinate scale: Gaussian std ``sigma sqrt(lambda_j)``, Laplace ``sigma sqrt(lambda_j/2)``."""
        std = self.sigma * np.sqrt(self.eigenvalues)
        return std if self.family == "gaussian" else std / math.sqrt(2.0)

    def release(self, noise_coordinates) -> np.ndarray:
        """The release ``f_P + E(z)`` for noise coordinates ``z``.

        Args:
            noise_coordinates: ``(..., K)`` noise coordinates ``z``.

        Returns:
            The releases, numpy, in the mechanism's coordinates.
        """
        z = np.asarray(noise_coordinates, dtype=np.float64)
        if self.basis is not None:
            return self.centre + z @ np.asarray(self.basis.eigenfunctions).T
        if self.embedding is not None:
            return self.centre + z @ self.embedding.T
        return self.centre + z.reshape(z.shape[:-1] + self.centre.shape)

    def reversed(self) -> NoiseShift:
        """The same pair seen from ``Q``: shift ``-h``, centres swapped.

        Returns:
            A new :class:`NoiseShift`.
        """
        return dataclasses.replace(
            self, shift=-self.shift, centre=self.centre_other, centre_other=self.centre
        )


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b))


def unwrap_independent(d: Distribution) -> Distribution:
    """The base distribution under any ``Independent`` wrappers.

    Args:
        d: a numpyro distribution.

    Returns:
        ``d`` with every ``Independent``/``to_event`` layer removed.
    """
    while isinstance(d, dist.Independent):
        d = d.base_dist
    return d


def _grid_size(v, weights) -> float:
    return float(np.sqrt(np.sum(np.asarray(weights) * np.asarray(v) ** 2)))


def _kl_family(noise: KarhunenLoeveNoise) -> str | None:
    if type(noise) is GaussianProcessNoise:
        return "gaussian"
    if type(noise) is ICLPNoise:
        return "laplace"
    return None


def _grid_shift(dist_p: GridNoise, dist_q: GridNoise) -> NoiseShift | None:
    """Two grid releases with the same basis and coefficient noise."""
    cp, cq = dist_p.coefficient_noise, dist_q.coefficient_noise
    if type(cp) is not type(cq) or dist_p.batch_shape != () or dist_q.batch_shape != ():
        return None
    if cp.batch_shape != () or cq.batch_shape != ():
        return None
    bp, bq = dist_p.basis, dist_q.basis
    if not (
        _same(bp.eigenfunctions, bq.eigenfunctions)
        and _same(bp.grid.weights, bq.grid.weights)
        and _same(cp.eigenvalues, cq.eigenvalues)
        and _same(cp.sigma, cq.sigma)
    ):
        return None
    family = _kl_family(cp)
    if family is None:
        return None
    loc_p, loc_q = np.asarray(dist_p.loc), np.asarray(dist_q.loc)
    diff = loc_p - loc_q
    phi = np.asarray(bp.eigenfunctions)
    weights = np.asarray(bp.grid.weights)
    h = (diff * weights) @ phi
    residual = diff - phi @ h
    noise_scale = float(cp.sigma) * math.sqrt(float(np.asarray(cp.eigenvalues)[0]))
    residual_norm = _grid_size(residual, weights)
    # The residual is measured against the noise's own support tolerance, relative to the
    # sizes involved, so projection round-off never reads as a singular pair.
    tolerance = dist_p.support_rtol * (
        _grid_size(loc_p, weights) + _grid_size(loc_q, weights) + noise_scale
    )
    return NoiseShift(
        family=family,
        shift=h,
        eigenvalues=np.asarray(cp.eigenvalues),
        sigma=float(cp.sigma),
        singular=bool(residual_norm > tolerance),
        residual_norm=residual_norm,
        centre=loc_p,
        centre_other=loc_q,
        basis=bp,
        source="grid",
    )


def _coefficient_shift(dist_p: KarhunenLoeveNoise, dist_q: KarhunenLoeveNoise):
    """Two Karhunen–Loève coefficient noises of the same kind, eigenvalues and sigma."""
    if type(dist_p) is not type(dist_q) or dist_p.batch_shape != () or dist_q.batch_shape != ():
        return None
    if not (_same(dist_p.eigenvalues, dist_q.eigenvalues) and _same(dist_p.sigma, dist_q.sigma)):
        return None
    family = _kl_family(dist_p)
    if family is None:
        return None
    loc_p = np.asarray(dist_p.loc)
    return NoiseShift(
        family=family,
        shift=loc_p - np.asarray(dist_q.loc),
        eigenvalues=np.asarray(dist_p.eigenvalues),
        sigma=float(dist_p.sigma),
        singular=False,
        residual_norm=0.0,
        centre=loc_p,
        centre_other=np.asarray(dist_q.loc),
        basis=None,
        source="coefficients",
    )


def _same_covariance(dist_p, dist_q) -> bool:
    """Whether two multivariate normals of one class have the same covariance parameters.

    ``MultivariateNormal`` is compared on ``scale_tril`` (whichever of ``scale_tril``,
    ``covariance_matrix`` or ``precision_matrix`` built it, numpyro keeps its Cholesky
    factor); ``LowRankMultivariateNormal`` on ``cov_factor`` and ``cov_diag``.
    """
    if type(dist_p) is dist.LowRankMultivariateNormal:
        return _same(dist_p.cov_factor, dist_q.cov_factor) and _same(
            dist_p.cov_diag, dist_q.cov_diag
        )
    return _same(dist_p.scale_tril, dist_q.scale_tril)


def _multivariate_shift(dist_p, dist_q) -> NoiseShift | None:
    """Two numpyro multivariate normals with the same covariance (whitened coordinates)."""
    if dist_p.batch_shape != () or not _same_covariance(dist_p, dist_q):
        return None
    tril = np.asarray(dist_p.scale_tril, dtype=np.float64)
    loc_p = np.asarray(dist_p.loc, dtype=np.float64)
    loc_q = np.asarray(dist_q.loc, dtype=np.float64)
    h = scipy.linalg.solve_triangular(tril, loc_p - loc_q, lower=True)
    return NoiseShift(
        family="gaussian",
        shift=h,
        eigenvalues=np.ones(h.size),
        sigma=1.0,
        singular=False,
        residual_norm=0.0,
        centre=loc_p,
        centre_other=loc_q,
        basis=None,
        source="multivariate",
        embedding=tril,
    )


def _independent_shift(dist_p, dist_q, base_p, base_q, family: str) -> NoiseShift | None:
    """Numpyro ``Normal``/``Laplace`` (possibly ``Independent``) with equal scales."""
    shape = dist_p.batch_shape + dist_p.event_shape
    scale_p = np.broadcast_to(np.asarray(base_p.scale, dtype=np.float64), shape)
    scale_q = np.broadcast_to(np.asarray(base_q.scale, dtype=np.float64), shape)
    if not _same(scale_p, scale_q):
        return None
    loc_p = np.broadcast_to(np.asarray(base_p.loc, dtype=np.float64), shape)
    loc_q = np.broadcast_to(np.asarray(base_q.loc, dtype=np.float64), shape)
    scale = scale_p.reshape(-1)
    eigenvalues = scale**2 if family == "gaussian" else 2.0 * scale**2
    return NoiseShift(
        family=family,
        shift=(loc_p - loc_q).reshape(-1),
        eigenvalues=eigenvalues,
        sigma=1.0,
        singular=False,
        residual_norm=0.0,
        centre=np.array(loc_p),
        centre_other=np.array(loc_q),
        basis=None,
        source="independent",
    )


def noise_shift(dist_p: Distribution, dist_q: Distribution) -> NoiseShift | None:
    """Detect two laws that differ only by a shift of the same independent-coordinate noise.

    Recognised: two :class:`~dpaudit.model.noise.GridNoise` on the same basis with the
    same noise; two :class:`~dpaudit.model.noise.KarhunenLoeveNoise` of the same kind
    with equal eigenvalues and sigma; numpyro ``Normal`` or ``Laplace`` (possibly
    wrapped in ``Independent``/``to_event``) with equal scales; two numpyro
    ``MultivariateNormal`` with the same ``scale_tril`` (however parameterised), or two
    ``LowRankMultivariateNormal`` with the same ``cov_factor`` and ``cov_diag`` (whitened
    by the Cholesky factor of the covariance).

    For grid releases the shift is ``h = project(f_P - f_Q)``; a part of
    ``f_P - f_Q`` orthogonal to the span larger than the noise's own support
    tolerance (``GridNoise.support_rtol`` relative to the sizes involved) marks
    the pair ``singular``.

    Args:
        dist_p: the release law ``P`` (under ``D``).
        dist_q: the release law ``Q`` (under ``D'``).

    Returns:
        The :class:`NoiseShift`, or ``None`` for anything else (batched noise
        parameters, different noises).
    """
    if isinstance(dist_p, GridNoise) and isinstance(dist_q, GridNoise):
        return _grid_shift(dist_p, dist_q)
    if isinstance(dist_p, KarhunenLoeveNoise) and isinstance(dist_q, KarhunenLoeveNoise):
        return _coefficient_shift(dist_p, dist_q)
    if dist_p.event_shape != dist_q.event_shape or dist_p.batch_shape != dist_q.batch_shape:
        return None
    for cls in (dist.MultivariateNormal, dist.LowRankMultivariateNormal):
        if type(dist_p) is cls and type(dist_q) is cls:
            return _multivariate_shift(dist_p, dist_q)
    base_p, base_q = unwrap_independent(dist_p), unwrap_independent(dist_q)
    for cls, family in ((dist.Normal, "gaussian"), (dist.Laplace, "laplace")):
        if type(base_p) is cls and type(base_q) is cls:
            return _independent_shift(dist_p, dist_q, base_p, base_q, family)
    return None


# Sources whose noise coordinates are the release's own coordinates (no embedding), so
# their shifts concatenate into one independent-coordinate shift of the joint release.
_CONCATENABLE = ("independent", "coefficients")


def joint_noise_shift(joint_p, joint_q) -> NoiseShift | None:
    """The noise structure of two joint releases whose sites are independent shifted noises.

    When every release site's law is the same independent-coordinate noise shifted
    (:func:`noise_shift`), of one family (all Gaussian or all Laplace), in the release's
    own coordinates, and no site's law depends on another site's value
    (:meth:`dpaudit.model.sites.JointRelease.adaptive`), the joint release is one shifted
    noise over the concatenated coordinates: Gaussian sites compose into one Gaussian
    with ``mu = sqrt(sum_i mu_i^2)`` and Laplace/ICLP sites into the Laplace PLD of the
    concatenated ``a`` vectors. Each site's ``sigma`` is folded into its eigenvalues.

    Args:
        joint_p: the :class:`~dpaudit.model.sites.JointRelease` under ``D``.
        joint_q: the :class:`~dpaudit.model.sites.JointRelease` under ``D'``.

    Returns:
        The joint :class:`NoiseShift` (source ``"independent"``), or ``None`` (mixed
        families, adaptive sites, latent or shared sites, embedded noise such as grid
        releases or multivariate normals).
    """
    if joint_p.adaptive() or joint_q.adaptive():
        return None
    laws_p, laws_q = joint_p.site_distributions(), joint_q.site_distributions()
    shifts = [noise_shift(laws_p[s], laws_q[s]) for s in joint_p.release_sites]
    if any(s is None or s.source not in _CONCATENABLE or s.singular for s in shifts):
        return None
    if len({s.family for s in shifts}) != 1:
        return None
    for s, site in zip(shifts, joint_p.release_sites, strict=True):
        if s.centre.size != s.n_components or s.centre.size != joint_p.shapes_size(site):
            return None
    return NoiseShift(
        family=shifts[0].family,
        shift=np.concatenate([s.shift for s in shifts]),
        eigenvalues=np.concatenate([s.eigenvalues * s.sigma**2 for s in shifts]),
        sigma=1.0,
        singular=False,
        residual_norm=0.0,
        centre=np.concatenate([np.reshape(s.centre, -1) for s in shifts]),
        centre_other=np.concatenate([np.reshape(s.centre_other, -1) for s in shifts]),
        basis=None,
        source="independent",
    )
