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
    >>> classifier_settings({"l2": 1e-3}).l2, classifier_settings(None).steps
    (0.001, 2000)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from dpaudit.blackbox.samplers import ReleaseSource, check_same_shape, drawn_ahead
from dpaudit.blackbox.statistics.classifiers import (
    ClassifierOptions,
    classifier_option_problem,
    logistic_fit,
    mlp_fit,
)
from dpaudit.blackbox.statistics.features import (
    feature_description,
    fit_standard_features,
    identity_features,
    kl_features,
)
from dpaudit.blackbox.statistics.floats import (
    MAX_COORDINATES,
    fit_reachability,
    float_bit_features,
    reachability_statistic,
)
from dpaudit.blackbox.statistics.reference import model_statistic
from dpaudit.blackbox.statistics.resolution import STATISTIC_RESOLUTION, snap
from dpaudit.core.checks import check_release_values
from dpaudit.model.mechanism import Mechanism

__all__ = [
    "CLASSIFIERS",
    "INFINITE_STATISTIC",
    "STATISTICS",
    "STATISTIC_RESOLUTION",
    "ClassifierOptions",
    "FittedStatistic",
    "classifier_option_problem",
    "classifier_settings",
    "feature_description",
    "fit_standard_features",
    "fit_statistics",
    "float_bit_features",
    "identity_features",
    "infinite_code",
    "kl_features",
    "snap",
]

#: Ways of building the test statistic: the reference model's privacy loss, a classifier, the
#: reachability of float releases, or the MLP on their bits (``"auto"``: ``"model"`` with a
#: reference and ``"logistic"``, and ``"float"`` when its fit is found on the selection set).
STATISTICS = ("auto", "model", "logistic", "mlp", "float", "bits")
#: The statistics that read the releases' values through classifier features.
CLASSIFIERS = ("logistic", "mlp", "bits")

#: At most this many releases per dataset train the classifier and fit the default features:
#: beyond 2^15 a model of a few hundred parameters gains little, and training
#: cost would dominate large audits; the whole second half still chooses the threshold.
MAX_TRAIN = 1 << 15
#: What the ``"infinite"`` statistic thresholds (an arm whenever a selection release holds
#: ``+-inf``, whatever ``statistic``): the count of each release's infinite values.
INFINITE_STATISTIC = "infinite values of the release (+inf and -inf counted apart)"


def classifier_settings(options: ClassifierOptions | Mapping | None) -> ClassifierOptions:
    """The :class:`ClassifierOptions` of ``classifier_options=`` (checked once, here).

    Args:
        options: a :class:`ClassifierOptions`, a mapping of some of its fields (the others
            keep their defaults), or ``None`` (all defaults).

    Returns:
        The record.

    Raises:
        ValueError: on an unknown option or a bad value (one sentence naming it).
        TypeError: if ``options`` is neither a record, a mapping nor ``None``.
    """
    if isinstance(options, ClassifierOptions):
        return options
    if options is None:
        return ClassifierOptions()
    if not isinstance(options, Mapping):
        raise TypeError(
            "classifier_options must be a dict of classifier settings or a ClassifierOptions, "
            f"got {type(options).__name__}."
        )
    known = [f.name for f in dataclasses.fields(ClassifierOptions)]
    unknown = set(options) - set(known)
    if unknown:
        raise ValueError(f"unknown classifier_options {sorted(unknown)}; known: {sorted(known)}.")
    return ClassifierOptions(**options)


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
    settings: ClassifierOptions,
    progress=None,
    optional: tuple[str, ...] = (),
) -> list[FittedStatistic | None]:
    """Draw one pair's selection releases once and fix each statistic of ``kinds`` on them.

    Args:
        kinds: statistics to fit, among ``"model"``, ``"logistic"``, ``"mlp"``, ``"float"``
            and ``"bits"``.
        pair: ``(D, D')``.
        sources: their :class:`~dpaudit.blackbox.samplers.ReleaseSource`.
        keys: three JAX keys: releases of ``D``, of ``D'``, and the classifier's training.
        select: selection releases per dataset.
        reference: the reference model (``"model"`` only).
        features: the feature map of the classifiers, or ``None`` for the default
            :func:`~dpaudit.blackbox.statistics.features.fit_standard_features` (fitted on
            the training half; :func:`float_bit_features` for ``"bits"``).
        settings: :func:`classifier_settings`.
        progress: a :class:`dpaudit.core.progress.ProgressBar`.
        optional: kinds that may find no fit (``"float"`` under ``"auto"``): ``None`` then.

    Returns:
        One :class:`FittedStatistic` (or ``None``) per kind, in order.

    Raises:
        ValueError, TypeError: on bad releases or releases of two shapes, or when a
            ``"float"`` statistic that is not optional gets releases it cannot read.
    """
    name = sources[0].name
    model = reference_score = None
    if "model" in kinds:
        reference_score, model = model_statistic(reference, *pair)
    if "bits" in kinds and features is None:
        features = float_bit_features
    fixed = features if features is not None else identity_features
    raw = "float" in kinds

    # Per chunk: the reference's score (one column), the raw releases (the float statistic) and
    # the classifier's inputs, so the releases are drawn once and never all held in memory.
    def per_chunk(x):
        cols = [] if reference_score is None else [reference_score(x)[:, None]]
        if raw and np.prod(x.shape[1:], dtype=np.int64) <= MAX_COORDINATES:
            cols.append(np.asarray(x, dtype=np.float64).reshape(len(x), -1))
        if any(k in CLASSIFIERS for k in kinds):
            cols.append(_classifier_inputs(fixed, x, features is None, name))
        if "infinite" in kinds:
            cols.append(infinite_code(x)[:, None])
        return np.concatenate(cols, axis=1)

    # A classifier trains on the first min(half, MAX_TRAIN) releases and thresholds on the
    # second half: the releases in between are never used, so (without a model arm, which
    # scores them all) their chunks are not drawn; the others are the same releases.
    half = select // 2
    skip = None if "model" in kinds else (min(half, MAX_TRAIN), half)
    # D' drawn by the helper process while D is drawn here (host-Python samplers; the same
    # releases either way)
    with drawn_ahead(sources[1], sources[1].draw_requests(select, keys[1], skip)):
        z_d = sources[0].draw(select, keys[0], per_chunk, progress, skip)
        z_dp = sources[1].draw(select, keys[1], per_chunk, progress, skip)
    check_same_shape(sources, name)
    offset = 0 if reference_score is None else 1
    width = int(np.prod(sources[0].shape or (), dtype=np.int64)) if raw else 0
    width = width if width <= MAX_COORDINATES else 0  # wide releases: no raw columns kept
    # the classifier's columns (the infinite code, when fitted, is the last column)
    inputs = slice(offset + width, -1 if "infinite" in kinds else None)
    finite = np.isfinite(z_d[:, inputs]).all() and np.isfinite(z_dp[:, inputs]).all()
    if features is not None and not finite:
        raise ValueError(
            f"the features {feature_description(features)!r} returned NaN or infinite values on "
            f"releases of {name!r}; return finite features."
        )
    fitted = []
    for kind in kinds:
        if kind == "infinite":  # the last column: the code of each release's infinite values
            fitted.append(_fit_infinite_statistic(z_d[:, -1], z_dp[:, -1], select))
        elif kind == "model":
            fitted.append(FittedStatistic(reference_score, model, z_d[:, 0], z_dp[:, 0]))
        elif kind == "float":
            cut = slice(offset, offset + width)
            fitted.append(
                _fit_float_statistic(
                    z_d[:, cut], z_dp[:, cut], select, sources, kind not in optional
                )
            )
        else:
            v_d, v_dp = z_d[:, inputs], z_dp[:, inputs]
            fitted.append(
                _fit_classifier_statistic(
                    kind, v_d, v_dp, select, keys[2], features, settings, name
                )
            )
    return fitted


def _classifier_inputs(features: Callable, x: np.ndarray, default: bool, name: str) -> np.ndarray:
    """The classifier's inputs of one chunk of releases: ``features(x)``, checked, as rows.

    The default features read ``x`` with its infinite values set to 0 (the ``"infinite"``
    statistic counts them); a user's features read ``x`` as released.

    Raises:
        ValueError, TypeError: features that are complex, NaN or not one row per release.
    """
    if default:
        x = np.where(np.isinf(x), 0.0, x)
    v = check_release_values(
        f"the features {feature_description(features)!r} of releases of {name!r}",
        np.asarray(features(jnp.asarray(x))),
        len(x),
        fix="return one row of finite real numbers per release",
    )
    return np.asarray(v, dtype=np.float64).reshape(len(x), -1)


def infinite_code(x: np.ndarray) -> np.ndarray:
    """Per release, ``(#+inf values) + (m + 1) (#-inf values)`` (``m`` values per release).

    Distinct counts of ``+inf`` and ``-inf`` get distinct codes, 0 for a finite release: an
    infinite release is an outcome of its own, counted by the ``"infinite"`` statistic.
    """
    flat = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    width = flat.shape[1]
    return np.sum(flat == np.inf, axis=1) + (width + 1.0) * np.sum(flat == -np.inf, axis=1)


def _fit_infinite_statistic(c_d, c_dp, select: int) -> FittedStatistic | None:
    """The infinite-release statistic, when a selection release is infinite (else ``None``).

    Its events count releases by their infinite values: a release infinite under one dataset
    only is an infinite privacy loss, and its counts certify the largest epsilon they can
    (never more: a finite sample cannot rule out a rare infinite release of the other dataset).
    """
    held = select - select // 2
    c_d, c_dp = c_d[-held:], c_dp[-held:]
    if not (np.any(c_d) or np.any(c_dp)):
        return None
    # high scores are D-like (events s > t count D, -s > t count D'): the code's sign is fixed
    # on the selection releases, so that the dataset infinite more often has the extreme scores
    sign = 1.0 if np.count_nonzero(c_d) >= np.count_nonzero(c_dp) else -1.0
    return FittedStatistic(
        lambda x: sign * infinite_code(x), INFINITE_STATISTIC, sign * c_d, sign * c_dp
    )


def _fit_float_statistic(v_d, v_dp, select: int, sources, required: bool):
    """The reachability statistic fitted on the training half, scored on the held half.

    ``None`` when the releases are not floats or no fit is found and ``required`` is false;
    with ``required``, one sentence saying why instead.
    """
    name = sources[0].name
    dtypes = {np.dtype(s.release_dtype).kind for s in sources if s.release_dtype is not None}
    if dtypes - {"f"}:
        if not required:
            return None
        raise TypeError(
            f"statistic='float' reads float releases, but the sampler {name!r} returned "
            f"{sorted(str(s.release_dtype) for s in sources)} values; use statistic='auto' or a "
            "classifier for integer, boolean or categorical releases."
        )
    half = select // 2
    train = min(half, MAX_TRAIN)
    held = select - half
    fit_d = fit_reachability(v_d[:train]) if v_d.shape[1] else None
    fit_dp = None if fit_d is None else fit_reachability(v_dp[:train])
    if fit_dp is None:
        if not required:
            return None
        raise ValueError(
            f"statistic='float' found no numpy Laplace arithmetic producing the releases of "
            f"{name!r} (fewer than 98 % of either dataset's releases reachable at round "
            "parameters); use statistic='bits' (bit features) or 'auto'."
        )
    score = reachability_statistic(fit_d, fit_dp)
    description = f"reachability (D: {fit_d.describe()}; D': {fit_dp.describe()})"
    return FittedStatistic(
        lambda x: snap(score(x)), description, snap(score(v_d[-held:])), snap(score(v_dp[-held:]))
    )


def _fit_classifier_statistic(
    kind, v_d, v_dp, select: int, key, features, settings, name: str
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
        v = _classifier_inputs(fixed, x, features is None, name)
        return snap(np.asarray(fitted(inputs(v))))

    return FittedStatistic(
        score,
        f"{kind} log-odds on {description}",
        snap(np.asarray(fitted(inputs(v_d[-held:])))),
        snap(np.asarray(fitted(inputs(v_dp[-held:])))),
    )


def _fit_classifier(statistic: str, z_d, z_dp, key, settings: ClassifierOptions) -> Callable:
    if statistic == "logistic":  # "bits" is the MLP on bit features
        return logistic_fit(z_d, z_dp, float(settings.l2))
    return mlp_fit(
        z_d,
        z_dp,
        key,
        tuple(settings.hidden),
        int(settings.steps),
        int(settings.batch),
        float(settings.learning_rate),
    )
