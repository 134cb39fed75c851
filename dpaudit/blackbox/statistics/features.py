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

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.core.checks import check_count

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

    ``basis`` is a :class:`~dpaudit.model.spaces.KarhunenLoeveBasis` on the release
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
    # the constants stay numpy arrays (exact products and square roots, the same bits as
    # XLA's; jnp.asarray would compile a program per shape): building the map compiles none
    weights = np.asarray(basis.grid.weights)[:, None]
    phi = np.asarray(basis.eigenfunctions)[:, :k] * weights
    scale = np.sqrt(np.asarray(basis.eigenvalues)[:k]) if whiten else np.ones(k)
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


def _histogram(v_p: np.ndarray, v_q: np.ndarray):
    """One coordinate's histogram: sorted atoms, quantile edges, and the log-ratio per bin.

    Bins are the atoms (index ``i < len(atoms)``), then ``len(edges) + 1`` intervals of the
    other values (index ``_MAX_ATOMS + #{edges <= x}``: a fixed offset, so that the
    coordinates' tables can be stacked).
    """
    pooled = np.concatenate([v_p, v_q])
    values, counts = np.unique(pooled, return_counts=True)
    atom = counts >= max(_ATOM_MIN_COUNT, _ATOM_MIN_SHARE * pooled.size)
    keep = np.argsort(-counts[atom], kind="stable")[:_MAX_ATOMS]
    atoms = np.sort(values[atom][keep])
    rest = pooled[~np.isin(pooled, atoms)]
    qs = np.linspace(0, 1, _BINS + 1)[1:-1]
    edges = np.unique(np.quantile(rest, qs)) if rest.size else np.zeros(0)

    def bins(v):
        i = np.clip(np.searchsorted(atoms, v), 0, max(atoms.size - 1, 0))
        is_atom = atoms[i] == v if atoms.size else np.zeros(v.shape, bool)
        return np.where(is_atom, i, _MAX_ATOMS + np.searchsorted(edges, v, side="right"))

    size = _MAX_ATOMS + _BINS
    c_p = np.bincount(bins(v_p), minlength=size) + 0.5
    c_q = np.bincount(bins(v_q), minlength=size) + 0.5
    # Normalise over the bins that exist (atoms and len(edges) + 1 intervals), not the padding.
    real = np.zeros(size, bool)
    real[: atoms.size] = True
    real[_MAX_ATOMS : _MAX_ATOMS + edges.size + 1] = True
    log_ratio = np.log(c_p / c_p[real].sum()) - np.log(c_q / c_q[real].sum())
    pad = np.full(_MAX_ATOMS, np.inf)
    pad[: atoms.size] = atoms
    pad_edges = np.full(_BINS - 1, np.inf)
    pad_edges[: edges.size] = edges
    return pad, pad_edges, np.where(real, log_ratio, 0.0)


@jax.jit
def _standard_features(v, params):
    """The default features (jitted: fused, no numpy temporaries per chunk)."""
    m1, s1, m0, s0, c1, b1, c0, b0, atoms, edges, table = params
    v = jnp.reshape(v, (v.shape[0], -1))
    g = -0.5 * ((v - m1) / s1) ** 2 - jnp.log(s1) + 0.5 * ((v - m0) / s0) ** 2 + jnp.log(s0)
    lap = -jnp.abs(v - c1) / b1 - jnp.log(b1) + jnp.abs(v - c0) / b0 + jnp.log(b0)

    def coordinate(x, atoms, edges, table):
        i = jnp.clip(jnp.searchsorted(atoms, x), 0, atoms.size - 1)
        b = jnp.where(atoms[i] == x, i, _MAX_ATOMS + jnp.searchsorted(edges, x, side="right"))
        return table[b]

    h = jax.vmap(coordinate, in_axes=(1, 0, 0, 0), out_axes=1)(v, atoms, edges, table)
    return jnp.concatenate([v, jnp.abs(v), v**2, g, lap, h], axis=1)


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
        The feature map ``(n, p) -> (n, k)`` (jitted), with a ``description``.
    """
    v_p, v_q = np.asarray(v_p, np.float64), np.asarray(v_q, np.float64)
    p = v_p.shape[1]
    if p > MAX_EXPANDED_VALUES:
        return identity_features
    pooled_scale = np.concatenate([v_p, v_q]).std(axis=0)
    floor = _SCALE_FLOOR * pooled_scale + 1e-300
    params = []
    for v in (v_p, v_q):
        params += [v.mean(axis=0), np.maximum(v.std(axis=0), floor)]
    for v in (v_p, v_q):
        med = np.median(v, axis=0)
        params += [med, np.maximum(np.mean(np.abs(v - med), axis=0), floor)]
    hists = [_histogram(v_p[:, j], v_q[:, j]) for j in range(p)]
    params += [np.stack([h[k] for h in hists]) for k in range(3)]
    features = functools.partial(_standard_features, params=tuple(jnp.asarray(a) for a in params))
    features.description = (
        "release values, |x|, x^2 and fitted Gaussian / Laplace / histogram log-density ratios"
    )
    return features
