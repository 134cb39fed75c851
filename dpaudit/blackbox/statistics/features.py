"""Features of releases for the classifier statistics: the release itself, or KL coefficients.

A feature map takes releases ``(n, ...)`` and returns ``(n, p)``; its
``description`` attribute names it in reports.

Example:
    >>> import numpy as np
    >>> identity_features(np.zeros((3, 2, 2))).shape, feature_description(identity_features)
    ((3, 4), 'release values')
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp

from dpaudit.checks import check_count

__all__ = ["feature_description", "identity_features", "kl_features"]


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
