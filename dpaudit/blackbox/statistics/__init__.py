"""Test statistics of the black-box audit: what is thresholded to form the event.

The statistic ``s`` is fitted on the selection releases of one neighbouring
pair and then fixed (validity of the certified bound needs ``s`` chosen
without the certification releases):

* ``"model"`` — the privacy loss of a reference model
  (:mod:`dpaudit.blackbox.statistics.reference`);
* ``"logistic"`` / ``"mlp"`` — a classifier's log-odds on features of the
  release (:mod:`dpaudit.blackbox.statistics.classifiers`,
  :mod:`dpaudit.blackbox.statistics.features`): half the selection releases
  train it, the other half are scored to choose the threshold.

All statistics are rounded to :data:`STATISTIC_RESOLUTION` (see
:mod:`dpaudit.blackbox.statistics.resolution`).

Example:
    >>> classifier_settings({"l2": 1e-3})["l2"], classifier_settings(None)["steps"]
    (0.001, 2000)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from dpaudit.blackbox.samplers import ReleaseSource, check_same_shape
from dpaudit.blackbox.statistics.classifiers import logistic_fit, mlp_fit
from dpaudit.blackbox.statistics.features import (
    feature_description,
    fit_standard_features,
    identity_features,
    kl_features,
)
from dpaudit.blackbox.statistics.reference import model_statistic
from dpaudit.blackbox.statistics.resolution import STATISTIC_RESOLUTION, snap
from dpaudit.model.mechanism import Mechanism

__all__ = [
    "CLASSIFIER_DEFAULTS",
    "STATISTICS",
    "STATISTIC_RESOLUTION",
    "FittedStatistic",
    "classifier_settings",
    "feature_description",
    "fit_standard_features",
    "fit_statistics",
    "identity_features",
    "kl_features",
    "snap",
]

#: Ways of building the test statistic: the reference model's privacy loss, or a classifier
#: (``"auto"``: ``"model"`` with a reference, else ``"logistic"``).
STATISTICS = ("auto", "model", "logistic", "mlp")

#: At most this many releases per dataset train the classifier and fit the default features:
#: beyond 2^15 a model of a few hundred parameters gains little, and training
#: cost would dominate large audits; the whole second half still chooses the threshold.
MAX_TRAIN = 1 << 15

#: Classifier settings: ridge penalty of the logistic regression (small: only keeps separable
#: selection sets from diverging); the MLP's hidden widths, Adam steps, minibatch and learning
#: rate (enough to fit smooth log-odds of low-dimensional features in seconds on a CPU).
CLASSIFIER_DEFAULTS = {
    "l2": 1e-4,
    "hidden": (32, 16),
    "steps": 2000,
    "batch": 1024,
    "learning_rate": 1e-2,
}


def classifier_settings(options: dict | None) -> dict:
    """:data:`CLASSIFIER_DEFAULTS` updated with ``options``.

    Args:
        options: some of the keys of :data:`CLASSIFIER_DEFAULTS`, or ``None``.

    Returns:
        The complete settings.

    Raises:
        ValueError: on an unknown key.
    """
    settings = dict(CLASSIFIER_DEFAULTS)
    unknown = set(options or {}) - set(settings)
    if unknown:
        raise ValueError(
            f"unknown classifier_options {sorted(unknown)}; known: {sorted(settings)}."
        )
    settings.update(options or {})
    _check_settings(settings)
    return settings


def _check_settings(settings: dict) -> None:
    """One sentence per bad classifier option (the trainers would fail deep inside JAX)."""
    for key in ("l2", "learning_rate"):
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise ValueError(
                f"classifier_options[{key!r}] must be a finite number >= 0, got {value!r}."
            )
        if not np.isfinite(value):
            raise ValueError(f"classifier_options[{key!r}] must be finite, got {value!r}.")
    if settings["learning_rate"] == 0:
        raise ValueError("classifier_options['learning_rate'] must be > 0, got 0.")
    for key in ("steps", "batch"):
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"classifier_options[{key!r}] must be an integer >= 1, got {value!r}.")
    hidden = settings["hidden"]
    widths = list(hidden) if isinstance(hidden, list | tuple) else None
    if not widths or not all(
        isinstance(w, int | np.integer) and not isinstance(w, bool) and w >= 1 for w in widths
    ):
        raise ValueError(
            "classifier_options['hidden'] must be a non-empty list of layer widths >= 1 (e.g. "
            f"[32, 16]), got {hidden!r}."
        )


class FittedStatistic(NamedTuple):
    """A statistic fixed on one pair's selection releases, and its selection scores.

    Attributes:
        score: ``releases (n, ...) -> (n,)``, snapped to :data:`STATISTIC_RESOLUTION`.
        name: what is thresholded, for reports.
        selection_d: scores of the selection releases of ``D`` used to choose the event.
        selection_d_prime: the same for ``D'``.
    """

    score: Callable
    name: str
    selection_d: np.ndarray
    selection_d_prime: np.ndarray


def fit_statistics(
    kinds: tuple[str, ...],
    pair: tuple,
    sources: tuple[ReleaseSource, ReleaseSource],
    keys,
    *,
    select: int,
    reference: Mechanism | None,
    features: Callable | None,
    settings: dict,
    progress=None,
) -> list[FittedStatistic]:
    """Draw one pair's selection releases once and fix each statistic of ``kinds`` on them.

    Args:
        kinds: statistics to fit, among ``"model"``, ``"logistic"`` and ``"mlp"``.
        pair: ``(D, D')``.
        sources: their :class:`~dpaudit.blackbox.samplers.ReleaseSource`.
        keys: three JAX keys: releases of ``D``, of ``D'``, and the classifier's training.
        select: selection releases per dataset.
        reference: the reference model (``"model"`` only).
        features: the feature map of the classifiers, or ``None`` for the default
            :func:`~dpaudit.blackbox.statistics.features.fit_standard_features` (fitted on
            the training half).
        settings: :func:`classifier_settings`.
        progress: a :class:`dpaudit.core.progress.ProgressBar`.

    Returns:
        One :class:`FittedStatistic` per kind, in order.

    Raises:
        ValueError, TypeError: on bad releases or releases of two shapes.
    """
    name = sources[0].name
    model = reference_score = None
    if "model" in kinds:
        reference_score, model = model_statistic(reference, *pair)
    fixed = features if features is not None else identity_features

    # Per chunk: the reference's score (one column) and the classifier's inputs, so the
    # releases are drawn once and never all held in memory.
    def per_chunk(x):
        cols = [] if reference_score is None else [reference_score(x)[:, None]]
        if any(k != "model" for k in kinds):
            cols.append(np.asarray(fixed(jnp.asarray(x)), dtype=np.float64))
        return np.concatenate(cols, axis=1)

    # A classifier trains on the first min(half, MAX_TRAIN) releases and thresholds on the
    # second half: the releases in between are never used, so (without a model arm, which
    # scores them all) their chunks are not drawn; the others are the same releases.
    half = select // 2
    skip = None if "model" in kinds else (min(half, MAX_TRAIN), half)
    z_d = sources[0].draw(select, keys[0], per_chunk, progress, skip)
    z_dp = sources[1].draw(select, keys[1], per_chunk, progress, skip)
    check_same_shape(sources, name)
    offset = 0 if reference_score is None else 1
    finite = np.isfinite(z_d[:, offset:]).all() and np.isfinite(z_dp[:, offset:]).all()
    if features is not None and not finite:
        raise ValueError(
            f"the features {feature_description(features)!r} returned NaN or infinite values on "
            f"releases of {name!r}; return finite features."
        )
    fitted = []
    for kind in kinds:
        if kind == "model":
            fitted.append(FittedStatistic(reference_score, model, z_d[:, 0], z_dp[:, 0]))
        else:
            fitted.append(
                _fit_classifier_statistic(
                    kind, z_d[:, offset:], z_dp[:, offset:], select, keys[2], features, settings
                )
            )
    return fitted


def _fit_classifier_statistic(
    kind, v_d, v_dp, select: int, key, features, settings
) -> FittedStatistic:
    """A classifier's statistic from the selection inputs (releases or fixed features).

    ``v_d``, ``v_dp`` hold at least the first ``min(select // 2, MAX_TRAIN)`` and the last
    ``select - select // 2`` of the ``select`` selection inputs (the rows between may be
    missing: they are not used).
    """
    # The first half trains the classifier (and fits the default features) on at most
    # MAX_TRAIN releases; the second half, unseen in training, is scored to choose the
    # threshold (scores of training points would overstate the separation).
    half = select // 2
    train = min(half, MAX_TRAIN)
    held = select - half
    if features is None:
        expand = fit_standard_features(v_d[:train], v_dp[:train])
        description = feature_description(expand)
    else:
        expand = None
        description = feature_description(features)

    def inputs(v):
        return jnp.asarray(v if expand is None else expand(v))

    fitted = _fit_classifier(kind, inputs(v_d[:train]), inputs(v_dp[:train]), key, settings)
    fixed = features if features is not None else identity_features

    def score(x):
        v = np.asarray(fixed(jnp.asarray(x)), dtype=np.float64)
        return snap(np.asarray(fitted(inputs(v))))

    return FittedStatistic(
        score,
        f"{kind} log-odds on {description}",
        snap(np.asarray(fitted(inputs(v_d[-held:])))),
        snap(np.asarray(fitted(inputs(v_dp[-held:])))),
    )


def _fit_classifier(statistic: str, z_d, z_dp, key, settings: dict) -> Callable:
    if statistic == "logistic":
        return logistic_fit(z_d, z_dp, float(settings["l2"]))
    return mlp_fit(
        z_d,
        z_dp,
        key,
        tuple(settings["hidden"]),
        int(settings["steps"]),
        int(settings["batch"]),
        float(settings["learning_rate"]),
    )
