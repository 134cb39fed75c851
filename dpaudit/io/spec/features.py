"""Classifier features of a black-box spec: the release values, or Karhunen–Loève coefficients.

``features = "kl"`` in a ``[blackbox]`` table turns each release into its
coefficients in the Karhunen–Loève basis of the reference's release (else of
the sampled catalogue mechanism's release), whitened by ``sqrt(lambda_k)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpaudit.blackbox import kl_features
from dpaudit.io.spec.resolve import BlackBoxTarget
from dpaudit.io.spec.schema import AuditSpec, field_error

__all__ = ["blackbox_features"]


def _coefficient_features(eigenvalues, n_components: int | None) -> Callable:
    """Whitened KL coefficients ``x_k / sqrt(lambda_k)`` of a release given in KL coordinates."""
    import jax.numpy as jnp

    lam = np.asarray(eigenvalues)  # numpy: building the features compiles no program
    k = lam.shape[-1] if n_components is None else min(int(n_components), lam.shape[-1])
    scale = np.sqrt(lam[:k])  # a numpy constant: jnp.asarray would compile a program
    width = int(lam.shape[-1])

    def features(x):
        x = jnp.reshape(x, (x.shape[0], -1))
        if x.shape[1] != width:
            raise ValueError(
                f"kl features: releases have {x.shape[1]} coordinates but the reference has "
                f"{width} KL coefficients; give a reference of the same release."
            )
        return x[:, :k] / scale

    features.description = f"KL coefficients (K = {k}, whitened)"
    return features


def _traced_release(source, data):
    """The release law of ``source`` at ``data``, read by tracing the model (no program).

    ``None`` when the law holds traced values (its basis computed from the data) or the
    model reads its data's values: the caller then reads the law by running the model.
    """
    import jax

    captured = []

    def probe(d):
        captured.append(source.release_distribution(d))
        return 0.0

    try:
        jax.eval_shape(probe, data)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return None
    except (jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError):
        return None
    release = captured[0]
    parts = [getattr(release, "eigenvalues", None), getattr(release, "basis", None)]
    basis = parts[1]
    if basis is not None and hasattr(basis, "eigenfunctions"):
        parts += [basis.eigenvalues, basis.eigenfunctions, basis.grid.weights]
    leaves = jax.tree_util.tree_leaves([p for p in parts if isinstance(p, jax.Array)])
    return None if any(isinstance(x, jax.core.Tracer) for x in leaves) else release


def blackbox_features(
    spec: AuditSpec, target: BlackBoxTarget, data, traced: bool = False
) -> Callable | None:
    """The classifier features of a black-box spec (``None``: the release values).

    ``features = "kl"`` reads the Karhunen–Loève basis of the release from the
    reference (else the sampled catalogue mechanism) at ``data``: releases on a
    grid (:class:`~dpaudit.model.noise.GridNoise`) get :func:`dpaudit.blackbox.kl_features`,
    releases of KL coefficients (Gaussian-process / ICLP noise) are divided by
    ``sqrt(lambda_k)``; ``components`` keeps the first ``K``.

    Args:
        spec: a validated spec (a white-box spec gives ``None``).
        target: the spec's :class:`BlackBoxTarget` (from :func:`dpaudit.io.spec.resolve_blackbox`).
        data: the dataset ``D`` at which the release's basis is read.
        traced: read the basis by tracing the model (``dpaudit validate``: no XLA program),
            falling back to running it when the basis depends on the data's values.

    Returns:
        A function ``releases -> features``, or ``None`` for the release values.

    Raises:
        SpecError: when the release has no Karhunen–Loève basis.
    """
    bb = spec.blackbox
    if bb is None or bb.features == "values":
        return None
    source = target.reference if target.reference is not None else target.mechanism
    try:
        release = _traced_release(source, data) if traced else None
        release = source.release_distribution(data) if release is None else release
    except (TypeError, ValueError) as err:
        raise field_error(
            spec.path, "blackbox.features", f"cannot read the basis ({err})."
        ) from None
    basis = getattr(release, "basis", None)
    if basis is not None and hasattr(basis, "eigenfunctions"):
        return kl_features(basis, bb.components)
    eigenvalues = getattr(release, "eigenvalues", None)
    if eigenvalues is not None:
        return _coefficient_features(eigenvalues, bb.components)
    raise field_error(
        spec.path,
        "blackbox.features",
        f"'kl' needs a functional release, but {source.name!r} releases "
        f"{type(release).__name__} (no Karhunen–Loève basis); use features = 'values'.",
    )
