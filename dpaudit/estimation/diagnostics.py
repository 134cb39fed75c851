"""Effective sample size and Monte Carlo standard error of draws, as ArviZ computes them.

The white-box audit reports, per direction, ArviZ's bulk effective sample size
(``arviz.ess``) and its Monte Carlo standard error of the mean (``arviz.mcse``) of the
hockey-stick terms at the claimed epsilon, split into four pseudo-chains. The same
arithmetic is written here with numpy (and ``scipy.special.ndtri``, which
``scipy.stats.norm.ppf`` calls), step for step as in ArviZ 0.23 (Vehtari et al. 2021,
rank-normalised split-chain ESS; Geyer's initial monotone sequence): importing ArviZ (with
xarray and pandas) cost a fresh process 1-2 s for two numbers. The numbers are ArviZ's own
to round-off (``tests/estimation/test_diagnostics.py`` compares them when ArviZ is installed).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.fft
import scipy.special

__all__ = ["ess_bulk", "mcse_mean"]

#: Blom's fractional offset of the rank back-transformation (as ArviZ).
BLOM_OFFSET = 3 / 8


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties given their average rank (``scipy.stats.rankdata(method='average')``)."""
    flat = x.ravel()
    order = np.argsort(flat, kind="mergesort")
    ordered = flat[order]
    starts = np.concatenate([[True], ordered[1:] != ordered[:-1]])
    group = np.cumsum(starts) - 1
    bounds = np.concatenate([np.nonzero(starts)[0], [flat.size]])
    average = 0.5 * (bounds[1:] + bounds[:-1] + 1)
    ranks = np.empty(flat.size)
    ranks[order] = average[group]
    return ranks.reshape(x.shape)


def _z_scale(x: np.ndarray) -> np.ndarray:
    ranks = _average_ranks(x)
    return scipy.special.ndtri((ranks - BLOM_OFFSET) / (ranks.size - 2 * BLOM_OFFSET + 1))


def _split_chains(x: np.ndarray) -> np.ndarray:
    half = x.shape[1] // 2
    return np.vstack((x[:, :half], x[:, -half:]))


def _autocov(x: np.ndarray) -> np.ndarray:
    """Autocovariance of each row at every lag (FFT)."""
    n = x.shape[1]
    m = scipy.fft.next_fast_len(2 * n)
    x = x - x.mean(1, keepdims=True)
    spectrum = np.fft.rfft(x, n=m, axis=1)
    spectrum *= np.conjugate(spectrum)
    cov = np.fft.irfft(spectrum, n=m, axis=1)[:, :n]
    cov /= n
    return cov


def _geyer_rho(acov: np.ndarray, mean_var: float, var_plus: float, n_draw: int):
    """Autocorrelations truncated at the first negative pair sum, made monotone (Geyer)."""
    rho = np.zeros(n_draw)
    even = 1.0
    rho[0] = even
    odd = 1.0 - (mean_var - np.mean(acov[:, 1])) / var_plus
    rho[1] = odd
    t = 1
    while t < (n_draw - 3) and (even + odd) > 0.0:
        even = 1.0 - (mean_var - np.mean(acov[:, t + 1])) / var_plus
        odd = 1.0 - (mean_var - np.mean(acov[:, t + 2])) / var_plus
        if (even + odd) >= 0:
            rho[t + 1] = even
            rho[t + 2] = odd
        t += 2
    max_t = t - 2
    if even > 0:
        rho[max_t + 1] = even
    t = 1
    while t <= max_t - 2:
        if (rho[t + 1] + rho[t + 2]) > (rho[t - 1] + rho[t]):
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 2] = rho[t + 1]
        t += 2
    return rho, max_t


def _ess(x: np.ndarray) -> float:
    """Effective sample size of ``(chain, draw)`` draws (ArviZ's ``_ess``)."""
    if np.isnan(x).any():
        return math.nan
    if (np.max(x) - np.min(x)) < np.finfo(float).resolution:
        return float(x.size)
    n_chain, n_draw = x.shape
    acov = _autocov(x)
    mean_var = np.mean(acov[:, 0]) * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += np.var(x.mean(axis=1), ddof=1)
    rho, max_t = _geyer_rho(acov, mean_var, var_plus, n_draw)
    ess = n_chain * n_draw
    tau = -1.0 + 2.0 * np.sum(rho[: max_t + 1]) + np.sum(rho[max_t + 1 : max_t + 2])
    tau = max(tau, 1 / np.log10(ess))
    return math.nan if np.isnan(rho).any() else float(ess / tau)


def _checked(draws) -> np.ndarray | None:
    x = np.asarray(draws, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"draws must be a (chain, draw) array, got shape {x.shape}.")
    return None if x.shape[1] < 4 or np.isnan(x).any() else x


def ess_bulk(draws) -> float:
    """Bulk effective sample size (``arviz.ess(draws)``, its default method).

    Args:
        draws: a ``(chain, draw)`` array.

    Returns:
        The rank-normalised split-chain effective sample size; NaN for fewer than
        4 draws per chain or NaN draws.

    Raises:
        ValueError: ``draws`` is not two-dimensional.
    """
    x = _checked(draws)
    return math.nan if x is None else _ess(_z_scale(_split_chains(x)))


def mcse_mean(draws) -> float:
    """Monte Carlo standard error of the mean (``arviz.mcse(draws)``, its default method).

    Args:
        draws: a ``(chain, draw)`` array.

    Returns:
        ``sd / sqrt(ess_mean)`` (split chains, no rank normalisation); NaN as
        :func:`ess_bulk`.

    Raises:
        ValueError: ``draws`` is not two-dimensional.
    """
    x = _checked(draws)
    if x is None:
        return math.nan
    return float(np.std(x, ddof=1) / np.sqrt(_ess(_split_chains(x))))
