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
    identity_features,
    kl_features,
)
from dpaudit.blackbox.statistics.reference import model_statistic
from dpaudit.blackbox.statistics.resolution import STATISTIC_RESOLUTION, snap
from dpaudit.mechanism import Mechanism

__all__ = [
    "CLASSIFIER_DEFAULTS",
    "STATISTICS",
    "STATISTIC_RESOLUTION",
    "FittedStatistic",
    "classifier_settings",
    "feature_description",
    "fit_statistic",
    "identity_features",
    "kl_features",
    "snap",
]

#: Ways of building the test statistic: the reference model's privacy loss, or a classifier
#: (``"auto"``: ``"model"`` with a reference, else ``"logistic"``).
STATISTICS = ("auto", "model", "logistic", "mlp")

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
    return settings


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


def fit_statistic(
    statistic: str,
    pair: tuple,
    sources: tuple[ReleaseSource, ReleaseSource],
    keys,
    *,
    select: int,
    reference: Mechanism | None,
    features: Callable,
    settings: dict,
    progress=None,
) -> FittedStatistic:
    """Draw one pair's selection releases and fix the statistic on them.

    Args:
        statistic: ``"model"``, ``"logistic"`` or ``"mlp"``.
        pair: ``(D, D')``.
        sources: their :class:`~dpaudit.blackbox.samplers.ReleaseSource`.
        keys: three JAX keys: releases of ``D``, of ``D'``, and the classifier's training.
        select: selection releases per dataset.
        reference: the reference model (``"model"`` only).
        features: the feature map (classifiers only).
        settings: :func:`classifier_settings`.
        progress: a :class:`dpaudit.progress.ProgressBar`.

    Returns:
        The :class:`FittedStatistic`.

    Raises:
        ValueError, TypeError: on bad releases or releases of two shapes.
    """
    name = sources[0].name
    if statistic == "model":
        score, stat_name = model_statistic(reference, *pair)
        s_d = sources[0].draw(select, keys[0], score, progress)
        s_dp = sources[1].draw(select, keys[1], score, progress)
        check_same_shape(sources, name)
        return FittedStatistic(score, stat_name, s_d, s_dp)

    # Features are computed chunk by chunk: raw releases are never all in memory.
    def featurize(x):
        return np.asarray(features(jnp.asarray(x)))

    z_d = jnp.asarray(sources[0].draw(select, keys[0], featurize, progress))
    z_dp = jnp.asarray(sources[1].draw(select, keys[1], featurize, progress))
    check_same_shape(sources, name)
    # The first half trains the classifier; the second half, unseen in training, is scored
    # to choose the threshold (scores of training points would overstate the separation).
    half = select // 2
    fitted = _fit_classifier(statistic, z_d[:half], z_dp[:half], keys[2], settings)

    def score(x):
        return snap(np.asarray(fitted(jnp.asarray(features(jnp.asarray(x))))))

    stat_name = f"{statistic} log-odds on {feature_description(features)}"
    return FittedStatistic(
        score,
        stat_name,
        snap(np.asarray(fitted(z_d[half:]))),
        snap(np.asarray(fitted(z_dp[half:]))),
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
