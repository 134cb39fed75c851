"""Features of releases for the classifier statistics: the release itself, or KL coefficients.

A feature map takes releases ``(n, ...)`` and returns ``(n, p)``; its
``description`` attribute names it in reports.

The default (:func:`fit_standard_features`) sees more than a shift of the mean:
a linear classifier on the release values alone cannot tell ``N(0, 1)`` from
``N(0, 2)`` (a change of noise scale, true epsilon infinite), a noise truncated
for one dataset only (a change of support) or a discrete atom whose weight
differs. By Neyman–Pearson the best test thresholds the log-density ratio, so
per coordinate the default adds ``|x|``, ``x^2`` and fitted log-density ratios of
three simple families (Gaussian, Laplace, and a histogram with the atoms of the
coordinate as their own bins); the logistic regression then weighs them.

Example:
    >>> import numpy as np
    >>> identity_features(np.zeros((3, 2, 2))).shape, feature_description(identity_features)
    ((3, 4), 'release values')
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from dpaudit.checks import check_count

__all__ = ["feature_description", "fit_standard_features", "identity_features", "kl_features"]

#: Releases with more values than this keep the plain values as default features (the
#: expansion multiplies the features by 6; for curves pass :func:`kl_features`).
MAX_EXPANDED_VALUES = 64
# Histogram log-ratio: values seen at least this often (and at least this share of the training
# releases) are atoms with their own bin; at most _MAX_ATOMS of them (the most frequent), then
# _BINS quantile bins of the other values. Counts get +1/2 (Jeffreys) so empty bins stay finite.
_ATOM_MIN_COUNT = 5
_ATOM_MIN_SHARE = 1e-3
_MAX_ATOMS = 64
_BINS = 32
# A fitted scale is floored at this fraction of the pooled scale (plus a tiny absolute floor):
# a coordinate that is constant under one dataset must not give an infinite feature.
_SCALE_FLOOR = 1e-6


def kl_features(basis, n_components: int | None = None, *, whiten: bool = True) -> Callable:
    """Features of grid releases: their Karhunen–Loève coefficients ``<x, phi_k>``.

    ``basis`` is a :class:`~dpaudit.spaces.KarhunenLoeveBasis` on the release
    grid. With ``whiten`` the coefficients are divided by ``sqrt(lambda_k)``, so
    that Gaussian-process or ICLP noise has unit-scale coordinates and a shift of
    the mean becomes a direction the classifier can find.

    Args:
        basis: the Karhunen–Loève basis on the release grid.
        n_components: how many leading coefficients (default all of the basis').
        whiten: divide coefficient ``k`` by ``sqrt(lambda_k)``.

    Returns:
        The feature map ``releases (n, m) -> (n, K)`` with a ``description``. Releases
        whose grid size differs from the basis raise ``ValueError`` at audit time.

    Raises:
        ValueError: if ``n_components`` is not a positive integer.
    """
    k = basis.n_components if n_components is None else check_count("n_components", n_components)
    k = min(k, basis.n_components)
    phi = jnp.asarray(basis.eigenfunctions[:, :k] * basis.grid.weights[:, None])
    scale = jnp.sqrt(basis.eigenvalues[:k]) if whiten else jnp.ones(k)
    m = int(phi.shape[0])

    def features(x):
        x = jnp.reshape(x, (x.shape[0], -1))
        if x.shape[1] != m:
            raise ValueError(
                f"kl_features: releases have {x.shape[1]} values but the basis grid has {m} "
                "points; build the basis on the release grid."
            )
        return (x @ phi) / scale

    features.description = f"KL coefficients (K = {k}{', whitened' if whiten else ''})"
    return features


def identity_features(x):
    """The flattened releases, the default features.

    Args:
        x: releases ``(n, ...)``.

    Returns:
        ``(n, p)`` with ``p`` the number of values of one release.
    """
    return jnp.reshape(x, (x.shape[0], -1))


identity_features.description = "release values"


def feature_description(features: Callable) -> str:
    """How a feature map is named in reports: its ``description``, else its ``__name__``.

    Args:
        features: a feature map.

    Returns:
        The name.
    """
    return getattr(features, "description", getattr(features, "__name__", "custom features"))


class _Histogram:
    """Per-coordinate histogram log-ratio ``log p_D(bin) - log p_D'(bin)`` (atoms, then quantiles)."""

    def __init__(self, v_p: np.ndarray, v_q: np.ndarray):
        pooled = np.concatenate([v_p, v_q])
        values, counts = np.unique(pooled, return_counts=True)
        atom = counts >= max(_ATOM_MIN_COUNT, _ATOM_MIN_SHARE * pooled.size)
        keep = np.argsort(-counts[atom], kind="stable")[:_MAX_ATOMS]
        self.atoms = np.sort(values[atom][keep])
        rest = pooled[~self._is_atom(pooled)]
        qs = np.linspace(0, 1, _BINS + 1)[1:-1]
        self.edges = np.unique(np.quantile(rest, qs)) if rest.size else np.zeros(0)
        c_p = np.bincount(self._bins(v_p), minlength=self._size()) + 0.5
        c_q = np.bincount(self._bins(v_q), minlength=self._size()) + 0.5
        self.log_ratio = np.log(c_p / c_p.sum()) - np.log(c_q / c_q.sum())

    def _size(self) -> int:
        return self.atoms.size + self.edges.size + 1

    def _is_atom(self, v):
        if not self.atoms.size:
            return np.zeros(v.shape, bool)
        i = np.clip(np.searchsorted(self.atoms, v), 0, self.atoms.size - 1)
        return self.atoms[i] == v

    def _bins(self, v):
        i = np.clip(np.searchsorted(self.atoms, v), 0, max(self.atoms.size - 1, 0))
        continuous = self.atoms.size + np.searchsorted(self.edges, v, side="right")
        return np.where(self._is_atom(v), i, continuous)

    def __call__(self, v):
        return self.log_ratio[self._bins(v)]


def fit_standard_features(v_p, v_q):
    """The default feature map, fitted on training values of ``D`` and ``D'``.

    Per coordinate ``x`` of the flattened release: ``x``, ``|x|``, ``x^2``, and the
    fitted log-density ratios ``log f_D(x) - log f_D'(x)`` of a Gaussian (mean, sd), a
    Laplace (median, mean absolute deviation) and a histogram (atoms as their own bins,
    then 32 quantile bins). Releases with more than :data:`MAX_EXPANDED_VALUES` values
    keep the plain values.

    Args:
        v_p: flattened training releases of ``D``, ``(n_p, p)``.
        v_q: the same for ``D'``, ``(n_q, p)``.

    Returns:
        The feature map ``(n, p) -> (n, k)`` (numpy), with a ``description``.
    """
    v_p, v_q = np.asarray(v_p, np.float64), np.asarray(v_q, np.float64)
    p = v_p.shape[1]
    if p > MAX_EXPANDED_VALUES:
        return identity_features
    pooled_scale = np.concatenate([v_p, v_q]).std(axis=0)
    floor = _SCALE_FLOOR * pooled_scale + 1e-300
    gauss = [(v.mean(axis=0), np.maximum(v.std(axis=0), floor)) for v in (v_p, v_q)]
    laplace = []
    for v in (v_p, v_q):
        med = np.median(v, axis=0)
        laplace.append((med, np.maximum(np.mean(np.abs(v - med), axis=0), floor)))
    hists = [_Histogram(v_p[:, j], v_q[:, j]) for j in range(p)]

    def features(v):
        v = np.asarray(v, np.float64).reshape(v.shape[0], -1)
        (m1, s1), (m0, s0) = gauss
        g = -0.5 * ((v - m1) / s1) ** 2 - np.log(s1) + 0.5 * ((v - m0) / s0) ** 2 + np.log(s0)
        (c1, b1), (c0, b0) = laplace
        lap = -np.abs(v - c1) / b1 - np.log(b1) + np.abs(v - c0) / b0 + np.log(b0)
        h = np.stack([hist(v[:, j]) for j, hist in enumerate(hists)], axis=1)
        return np.concatenate([v, np.abs(v), v**2, g, lap, h], axis=1)

    features.description = (
        "release values, |x|, x^2 and fitted Gaussian / Laplace / histogram log-density ratios"
    )
    return features
