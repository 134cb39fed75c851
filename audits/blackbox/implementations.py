"""Plain numpy implementations someone might write, audited as black boxes by the specs here.

Each is a *sampler* ``sampler(data, n, key, **params) -> releases``: it draws
``n`` independent releases of the mechanism on ``data`` (records on the first
axis) from the JAX ``key``, turned into a numpy generator by
:func:`dpaudit.blackbox.numpy_generator`. The audit sees only the releases.
Records outside the stated domain are clipped (a documented step of the
mechanism) or rejected, never silently used.

* :func:`laplace_mean` — correct: the clipped mean of points in
  ``[low, high]^dim`` plus ``Laplace(dim (high - low) / (n epsilon))`` per
  coordinate (what the catalogue's ``laplace-mean`` declares).
* :func:`histogram_scale_epsilon` — broken: a histogram with noise *scale*
  ``epsilon`` instead of ``1/epsilon`` (DP-Sniper's / StatDP's "NoisyHist"
  bug; the catalogue's ``faulty/histogram-scale-epsilon`` models it).
* :func:`noisy_max_with_value` — broken: report-noisy-max that also returns
  the noisy maximum (StatDP's NoisyMax returning the value; the catalogue's
  ``faulty/noisy-max-with-value`` models it).
"""

from __future__ import annotations

import numpy as np

from dpaudit.blackbox import numpy_generator


def laplace_mean(data, n, key, *, epsilon=1.0, low=0.0, high=1.0):
    """Clipped mean of ``(records, dim)`` points plus Laplace noise: epsilon-DP (replace-one).

    Records are clipped to ``[low, high]^dim`` (part of the mechanism), so
    replacing one moves the mean by at most ``Delta_1 = dim (high - low) /
    records`` in l1 norm and ``Laplace(Delta_1 / epsilon)`` per coordinate is
    epsilon-DP (Dwork & Roth 2014, Thm 3.6). Returns shape ``(n, dim)``.
    """
    x = np.asarray(data, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"records must be a (records, dim) array, got shape {x.shape}.")
    mean = np.clip(x, low, high).mean(axis=0)
    scale = x.shape[1] * (high - low) / (x.shape[0] * epsilon)
    return mean + numpy_generator(key).laplace(0.0, scale, size=(n, x.shape[1]))


def histogram_scale_epsilon(data, n, key, *, epsilon=0.5, n_bins=4):
    """Histogram of labels ``0 .. n_bins-1`` plus ``Laplace`` noise of scale ``epsilon`` (BUG).

    Adding or removing a record changes one bin by 1 (l1 sensitivity 1), so
    epsilon-DP needs scale ``1/epsilon``; with scale ``epsilon`` the privacy
    loss reaches ``1/epsilon`` (``2`` for the claimed ``epsilon = 0.5``).
    Returns shape ``(n, n_bins)``.
    """
    labels = np.asarray(data, dtype=float)
    if not np.all((labels == np.round(labels)) & (labels >= 0) & (labels < n_bins)):
        raise ValueError(f"records must be integer labels in 0 .. {n_bins - 1}.")
    counts = np.bincount(labels.astype(int), minlength=n_bins).astype(float)
    return counts + numpy_generator(key).laplace(0.0, epsilon, size=(n, n_bins))


def noisy_max_with_value(data, n, key, *, epsilon=1.0, thresholds=(0.25, 0.5, 0.75)):
    """Report noisy max of ``#{x >= t_j}`` with ``Laplace(1/epsilon)``, returning the max too (BUG).

    For monotone counting queries (adding a record raises counts by at most 1)
    the index of the largest noisy count is epsilon-DP (Dwork & Roth 2014,
    Claim 3.9); releasing the noisy maximum as well is not: when an added
    record raises all ``k`` counts, the density ratio below every count is
    ``e^(k epsilon)`` (``3`` for three thresholds and ``epsilon = 1``).
    Returns shape ``(n, 2)``: ``(index, value)``.
    """
    x = np.asarray(data, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"records must be a 1-D array of scores, got shape {x.shape}.")
    counts = np.sum(x[:, None] >= np.asarray(thresholds)[None, :], axis=0).astype(float)
    noisy = counts + numpy_generator(key).laplace(0.0, 1.0 / epsilon, size=(n, counts.size))
    index = np.argmax(noisy, axis=1)
    return np.stack([index.astype(float), noisy[np.arange(n), index]], axis=1)
