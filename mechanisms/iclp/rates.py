r"""Lin & Reimherr Thm 7 [14] and Cor. 1 [15]: the three error terms of the mean estimators.

Thm 7 bounds the mean squared error of the private mean by three terms
(docs/papers/lr.md#lr-utility):

.. math::  E\|\tilde\mu - \mu_0\|^2 \le 3\big(\underbrace{E\|\tilde\mu - \hat\mu\|^2}_{\text{privacy}}
           + \underbrace{E\|\hat\mu - \mu_\psi\|^2}_{\text{statistical}}
           + \underbrace{\|\mu_\psi - \mu_0\|^2}_{\text{bias}}\big),

with ``mu_psi`` the estimator applied to ``mu_0`` itself (the population
estimator). Every estimator (ICLP-QR, ICLP-AR, FRL) is a coordinatewise
1-Lipschitz map of the sample mean's coefficients, so the statistical error is
at most ``E||bar X - mu_0||^2 = tr(Cov)/n``; the bias is at most
``psi ||mu_0||^2_{C^eta}`` (QR), ``(psi/2) ||mu_0||_{1,C^eta}`` (AR) and
``lambda_{M+1}^eta ||mu_0||^2_{C^eta}`` (FRL, ``~ M^(-eta beta)``); the privacy
error is ``2 Delta^2 tr(C) / epsilon^2`` (ICLP) or ``2 M Delta^2 / epsilon^2`` (FRL).

**The experiment** (:func:`thm7_errors`, :func:`thm7_slopes`). A sequence model
in the eigenbasis: ``lambda_j = j^(-beta)``, ``J`` coefficients, mean
``mu_0j = j^(-(eta beta + 1 + delta)/2)`` (in ``H_{C^eta}`` and, for
``delta > 1``, in ``H_{1,C^eta}``), records ``X_ij = mu_0j + j^(-1) U_ij`` with
``U_ij`` uniform of unit variance, so ``||X_i|| <= tau`` with the public
``tau = ||mu_0|| + sqrt(3 sum_j j^(-2))`` (Assumption 1). The estimators use
the catalogue's coefficient maps (:func:`~mechanisms.iclp.mean.qr_shrinkage`,
:func:`~mechanisms.iclp.mean.soft_threshold` at
:func:`~mechanisms.iclp.mean.ar_threshold`, truncation at ``M``) and its
sensitivity bounds; the tuning follows Cor. 1: QR ``psi = 1/n``; FRL
``M = n^(1/3)``; AR the PSS-style ``psi`` of
:func:`~mechanisms.iclp.mean.pss_ar_psi`. :func:`thm7_exponents` gives the
exponents in ``n`` that Thm 7 and Cor. 1 imply for each term under that
tuning, and the exact exponents of this mean function.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dpaudit.core.checks import check_choice, check_count
from mechanisms.iclp.mean import (
    ar_mean_sensitivity,
    ar_threshold,
    frl_mean_sensitivity,
    pss_ar_psi,
    qr_mean_sensitivity,
    qr_shrinkage,
    soft_threshold,
)

__all__ = [
    "ESTIMATORS",
    "SequenceModel",
    "sequence_model",
    "thm7_errors",
    "thm7_exponents",
    "thm7_slopes",
    "thm7_tuning",
]

#: The estimators Thm 7 covers.
ESTIMATORS = ("iclp-qr", "iclp-ar", "frl")


class SequenceModel(NamedTuple):
    """Eigenvalues, mean coefficients, record noise scales and the public norm bound."""

    eigenvalues: np.ndarray
    mean: np.ndarray
    noise_sd: np.ndarray
    tau: float
    beta: float
    eta: float
    delta: float


def sequence_model(
    beta: float = 4.0, eta: float = 2.0, delta: float = 1.5, n_coefficients: int = 60
) -> SequenceModel:
    """The sequence model of the module docstring.

    Args:
        beta: eigenvalue decay rate (``lambda_j = j^-beta``; LR's Matérn 3/2 has 4).
        eta: smoothness power of the mean and of the penalties.
        delta: extra smoothness of the mean (``> 1`` puts it in ``H_{1,C^eta}``).
        n_coefficients: ``J``.

    Returns:
        The :class:`SequenceModel`.

    Raises:
        ValueError: for ``beta <= 1``, ``eta <= 1 + 1/beta`` or ``delta <= 0``.
    """
    if not beta > 1.0 or not eta > 1.0 + 1.0 / beta or not delta > 0.0:
        raise ValueError(
            f"need beta > 1, eta > 1 + 1/beta and delta > 0 (Thm 7's assumptions), got "
            f"beta={beta}, eta={eta}, delta={delta}."
        )
    j = np.arange(1, check_count("n_coefficients", n_coefficients) + 1, dtype=float)
    mean = j ** (-(eta * beta + 1.0 + delta) / 2.0)
    noise_sd = 1.0 / j
    tau = float(np.linalg.norm(mean) + math.sqrt(3.0 * np.sum(noise_sd**2)))
    return SequenceModel(j**-beta, mean, noise_sd, tau, beta, eta, delta)


def thm7_tuning(estimator: str, n: int, model: SequenceModel, epsilon: float = 1.0) -> float:
    """Cor. 1's tuning: QR ``psi = 1/n``, FRL ``M = round(n^(1/3))``, AR :func:`pss_ar_psi`.

    Args:
        estimator: one of :data:`ESTIMATORS`.
        n: the number of records.
        model: the :class:`SequenceModel`.
        epsilon: the privacy parameter.

    Returns:
        ``psi`` (QR, AR) or ``M`` (FRL).
    """
    check_choice("estimator", estimator, ESTIMATORS)
    if estimator == "iclp-qr":
        return 1.0 / n
    if estimator == "frl":
        return round(n ** (1.0 / 3.0))
    return pss_ar_psi(n, epsilon, beta=model.beta, eta=model.eta)


def _estimate(estimator, coefficients, model, tuning):
    lam = model.eigenvalues
    if estimator == "iclp-qr":
        return np.asarray(qr_shrinkage(lam, psi=tuning, eta=model.eta)) * coefficients
    if estimator == "iclp-ar":
        threshold = np.asarray(ar_threshold(lam, psi=tuning, eta=model.eta))
        return np.asarray(soft_threshold(coefficients, threshold))
    return np.where(np.arange(lam.shape[0]) < tuning, coefficients, 0.0)


def _privacy_error(estimator, n, model, tuning, epsilon):
    lam, tau = model.eigenvalues, model.tau
    if estimator == "frl":
        delta = frl_mean_sensitivity(n=n, tau=tau, n_components=tuning)
        return 2.0 * tuning * delta**2 / epsilon**2
    if estimator == "iclp-qr":
        delta = qr_mean_sensitivity(lam, n=n, tau=tau, psi=tuning, eta=model.eta)
    else:
        delta = ar_mean_sensitivity(lam, n=n, tau=tau, psi=tuning, eta=model.eta)
    return 2.0 * delta**2 * float(np.sum(lam)) / epsilon**2


def _bias_bound(estimator, model, tuning):
    lam, mean, eta = model.eigenvalues, model.mean, model.eta
    if estimator == "iclp-qr":
        return tuning * float(np.sum(mean**2 / lam**eta))
    if estimator == "iclp-ar":
        return tuning / 2.0 * float(np.sum(np.abs(mean) / lam ** (eta / 2.0)))
    return float(lam[tuning] ** eta * np.sum(mean**2 / lam**eta)) if tuning < lam.shape[0] else 0.0


def thm7_errors(
    estimator: str,
    n: int,
    model: SequenceModel,
    *,
    epsilon: float = 1.0,
    replicates: int = 100,
    seed: int = 0,
) -> dict:
    """Privacy, statistical and bias errors of one estimator at ``n`` records (Monte Carlo).

    Args:
        estimator: one of :data:`ESTIMATORS`.
        n: the number of records.
        model: the :class:`SequenceModel`.
        epsilon: the privacy parameter.
        replicates: datasets drawn for the statistical error.
        seed: seed of the datasets.

    Returns:
        ``{"privacy", "statistical", "bias", "bias_bound", "statistical_bound", "tuning"}``.
    """
    n, replicates = check_count("n", n), check_count("replicates", replicates)
    tuning = thm7_tuning(estimator, n, model, epsilon)
    rng = np.random.default_rng(seed)
    population = _estimate(estimator, model.mean, model, tuning)
    statistical = 0.0
    for _ in range(replicates):
        u = rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), size=(n, model.mean.shape[0]))
        sample_mean = model.mean + model.noise_sd * u.mean(axis=0)
        statistical += float(
            np.sum((_estimate(estimator, sample_mean, model, tuning) - population) ** 2)
        )
    return {
        "privacy": _privacy_error(estimator, n, model, tuning, epsilon),
        "statistical": statistical / replicates,
        "bias": float(np.sum((population - model.mean) ** 2)),
        "bias_bound": _bias_bound(estimator, model, tuning),
        "statistical_bound": float(np.sum(model.noise_sd**2)) / n,
        "tuning": tuning,
    }


def thm7_exponents(estimator: str, model: SequenceModel) -> dict:
    """The exponents Thm 7 and Cor. 1 give each term, and this model's exact bias exponent.

    * ``"privacy"``: in ``n`` under :func:`thm7_tuning`, with the catalogue's
      sensitivity bound: QR ``-2 + (beta+2)/(eta beta)``; FRL ``-2 + 1 = -1``
      (``M^3 / n^2``, ``M = n^(1/3)``); AR, with ``psi = (n eps)^-a``,
      ``a = 2 eta beta/(3 eta beta + 4)``, ``J* ~ psi^(-2/(eta beta))`` and the
      corrected sensitivity ``(2 tau/n) sum_{j<J*} j^(beta/2) ~ J*^(beta/2+1)/n``:
      ``-2 + (4a/(eta beta)) (beta/2 + 1)``.
    * ``"statistical"``: ``-1`` in ``n`` (1-Lipschitz estimators of the sample mean).
    * ``"bias"``: in the tuning parameter: ``+1`` in ``psi`` (QR, AR: the bias is
      ``O(psi)``), ``-eta beta`` in ``M`` (FRL).
    * ``"bias_exact"``: for this model's mean (``delta`` extra smoothness): QR
      ``min(2, 1 + delta/(eta beta))``; FRL ``-(eta beta + delta)``; AR
      ``(eta beta + delta)/(eta beta + (1 + delta)/2)`` (the thresholds
      ``psi j^(eta beta/2)/2`` meet the coefficients at ``j* ~ psi^(-1/(eta beta
      + (1+delta)/2))`` and the bias is the tail beyond ``j*``).

    Args:
        estimator: one of :data:`ESTIMATORS`.
        model: the :class:`SequenceModel`.

    Returns:
        ``{"privacy", "statistical", "bias", "bias_exact"}``.
    """
    check_choice("estimator", estimator, ESTIMATORS)
    beta, eta, delta = model.beta, model.eta, model.delta
    eb = eta * beta
    if estimator == "iclp-qr":
        privacy, bias, exact = -2.0 + (beta + 2.0) / eb, 1.0, min(2.0, 1.0 + delta / eb)
    elif estimator == "frl":
        privacy, bias, exact = -1.0, -eb, -(eb + delta)
    else:
        a = 2.0 * eb / (3.0 * eb + 4.0)
        privacy = -2.0 + 4.0 * a / eb * (beta / 2.0 + 1.0)
        bias, exact = 1.0, (eb + delta) / (eb + (1.0 + delta) / 2.0)
    return {"privacy": privacy, "statistical": -1.0, "bias": bias, "bias_exact": exact}


def _slope(x, y) -> float:
    return float(np.polyfit(np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y)), 1)[0])


def thm7_slopes(
    estimator: str,
    model: SequenceModel,
    *,
    ns=(125, 343, 1000, 2744),
    wide_ns=tuple(10.0**k for k in range(2, 9)),
    tunings=None,
    seed: int = 0,
    replicates: int = 300,
) -> dict:
    """Least-squares log-log slopes of the three terms.

    The statistical error is Monte Carlo over ``ns``; the privacy error and the
    bias are exact (no randomness), so they are fitted over wider ranges: the
    privacy error over ``wide_ns`` (at the tuning of each ``n``), the bias over
    the tuning parameter itself (``psi`` from ``1e-2`` to ``1e-10`` for QR and AR,
    ``M`` from 2 to 30 for FRL), where the theorem states it.

    Args:
        estimator: one of :data:`ESTIMATORS`.
        model: the :class:`SequenceModel`.
        ns: sample sizes of the Monte Carlo statistical error.
        wide_ns: sample sizes of the privacy error.
        tunings: the ``psi`` (or ``M``) grid of the bias, or ``None`` for the default.
        seed: seed of the datasets (each ``n`` gets ``seed + index``).
        replicates: datasets per ``n``.

    Returns:
        ``{"privacy", "statistical", "bias"}`` slopes and ``"errors"``, the per-``n`` dicts.
    """
    check_choice("estimator", estimator, ESTIMATORS)
    errors = [
        thm7_errors(estimator, n, model, seed=seed + i, replicates=replicates)
        for i, n in enumerate(ns)
    ]
    if tunings is None:
        tunings = np.arange(2, 31) if estimator == "frl" else np.logspace(-2, -10, 17)
    privacy = [
        _privacy_error(estimator, int(n), model, thm7_tuning(estimator, int(n), model), 1.0)
        for n in wide_ns
    ]
    bias = [
        float(np.sum((_estimate(estimator, model.mean, model, t) - model.mean) ** 2))
        for t in tunings
    ]
    return {
        "privacy": _slope(wide_ns, privacy),
        "statistical": _slope(ns, [e["statistical"] for e in errors]),
        "bias": _slope(tunings, bias),
        "errors": errors,
    }
