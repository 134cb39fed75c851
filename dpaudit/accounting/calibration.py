r"""Noise calibration for the ICLP and Gaussian mechanisms.

* ICLP (LR Thm 4/8; LR print sigma = Delta/epsilon, the sqrt(2) is needed, see
  docs/paper-errors.md#lr-iclp-sigma-constant): with 1,C-sensitivity ``Delta``,
  ``sigma = sqrt(2) Delta / epsilon`` gives epsilon-DP (unit-variance components).
* Classical Gaussian (HRW Prop. 2.4, MRS Thm 3.3): ``sigma = c(delta) Delta / epsilon``
  with ``c(delta) = sqrt(2 log(2/delta))``, proven only for ``epsilon <= 1``
  (docs/paper-errors.md#mrs-epsilon-at-most-one; it fails for large epsilon, e.g. true delta 0.0245 at epsilon 10,
  delta 0.01).
* Analytic Gaussian (Balle & Wang 2018, Thm 8): the privacy loss of the
  Gaussian mechanism with ``mu = Delta / sigma`` is ``N(mu^2/2, mu^2)``, so
  ``delta(epsilon) = Phi(mu/2 - epsilon/mu) - e^epsilon Phi(-mu/2 - epsilon/mu)``,
  tight for every epsilon > 0. :func:`analytic_gaussian_sigma` inverts it.

These are scalar helpers in numpy/scipy: calibration runs once per mechanism,
not per sample.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special

from dpaudit.core.checks import check_delta, check_epsilon, check_positive

__all__ = [
    "analytic_gaussian_sigma",
    "classical_gaussian_multiplier",
    "classical_gaussian_sigma",
    "gaussian_delta",
    "iclp_sigma",
]


def iclp_sigma(sensitivity: float, epsilon: float) -> float:
    """``sigma = sqrt(2) Delta / epsilon`` for the epsilon-DP ICLP mechanism.

    Args:
        sensitivity: global sensitivity ``Delta`` in the 1,C norm (> 0).
        epsilon: privacy parameter (> 0).

    Raises:
        ValueError: if either is not a finite positive number.

    Example:
        >>> round(iclp_sigma(1.0, 1.0), 6)
        1.414214
    """
    check_positive("sensitivity", sensitivity)
    check_epsilon(epsilon)
    return math.sqrt(2.0) * float(sensitivity) / float(epsilon)


def classical_gaussian_multiplier(delta: float) -> float:
    """``c(delta) = sqrt(2 log(2/delta))`` (HRW eq. 6, MRS Thm 3.2).

    Args:
        delta: the privacy parameter delta.

    Returns:
        The multiplier ``c(delta)``.

    Raises:
        ValueError: if delta is not in (0, 1).
    """
    check_delta(delta)
    return math.sqrt(2.0 * math.log(2.0 / float(delta)))


def classical_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """``sigma = c(delta) Delta / epsilon``, valid for ``epsilon <= 1`` only.

    Args:
        sensitivity: the L2 (or Cameron–Martin) sensitivity ``Delta`` (> 0).
        epsilon: the privacy parameter, ``0 < epsilon <= 1``.
        delta: the privacy parameter, in (0, 1).

    Returns:
        The noise multiplier ``sigma``.

    Raises:
        ValueError: for ``epsilon > 1`` (the classical bound is not proven there
            and fails for large epsilon; use :func:`analytic_gaussian_sigma`), or
            invalid inputs.

    Example:
        >>> round(classical_gaussian_sigma(1.0, 1.0, 0.1), 4)
        2.4477
    """
    check_positive("sensitivity", sensitivity)
    check_epsilon(epsilon)
    if epsilon > 1:
        raise ValueError(
            f"the classical Gaussian calibration c(delta) Delta/epsilon is proven only for "
            f"epsilon <= 1, got epsilon={epsilon}; use analytic_gaussian_sigma instead."
        )
    return classical_gaussian_multiplier(delta) * float(sensitivity) / float(epsilon)


def gaussian_delta(epsilon, mu):
    """Exact ``delta(epsilon)`` of the Gaussian mechanism with ``mu = Delta / sigma``.

    ``delta = Phi(mu/2 - epsilon/mu) - e^epsilon Phi(-mu/2 - epsilon/mu)``, computed
    in log space. Vectorised over numpy arrays.

    Args:
        epsilon: the privacy parameter (scalar or array).
        mu: ``Delta / sigma`` (scalar or array, > 0).

    Returns:
        ``delta(epsilon)``, a float or an array of the broadcast shape.

    Example:
        >>> round(float(gaussian_delta(1.0, 1.0)), 6)
        0.126937
    """
    epsilon = np.asarray(epsilon, dtype=float)
    mu = np.asarray(mu, dtype=float)
    check_positive("mu", mu)
    if np.any(~np.isfinite(epsilon)) or np.any(epsilon < 0):
        raise ValueError("epsilon must be finite and >= 0 in gaussian_delta.")
    a = mu / 2.0 - epsilon / mu
    b = -mu / 2.0 - epsilon / mu
    log_first = scipy.special.log_ndtr(a)
    log_second = epsilon + scipy.special.log_ndtr(b)
    # delta = e^log_first (1 - e^(log_second - log_first)); expm1 keeps precision when close.
    delta = -np.exp(log_first) * np.expm1(log_second - log_first)
    return np.clip(delta, 0.0, 1.0)


#: Relative noise added to the exact analytic root, so that norms computed in float64 that
#: attain the sensitivity bound still meet the claim (see :func:`analytic_gaussian_sigma`).
ANALYTIC_SIGMA_SLACK = 1e-12


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest ``sigma`` with exact ``delta(epsilon) <= delta`` for the Gaussian mechanism.

    Valid for every epsilon > 0 (Balle & Wang 2018). The root is found on
    ``mu = Delta / sigma`` with brentq and the returned sigma is rounded up, so
    ``gaussian_delta(epsilon, Delta / sigma) <= delta`` holds for the float returned,
    and then raised by a relative :data:`ANALYTIC_SIGMA_SLACK` (1e-12), so that a pair
    whose computed norm exceeds ``Delta`` by round-off still meets the claim.

    Args:
        sensitivity: the L2 (or Cameron–Martin) sensitivity ``Delta`` (> 0).
        epsilon: the privacy parameter (> 0).
        delta: the privacy parameter, in (0, 1).

    Returns:
        The noise multiplier ``sigma``.

    Raises:
        ValueError: for invalid inputs.

    Example:
        >>> s = analytic_gaussian_sigma(1.0, 1.0, 1e-5)
        >>> bool(gaussian_delta(1.0, 1.0 / s) <= 1e-5) and round(s, 3) == 3.731
        True
    """
    import scipy.optimize

    check_positive("sensitivity", sensitivity)
    check_epsilon(epsilon)
    check_delta(delta)
    epsilon, delta, sensitivity = float(epsilon), float(delta), float(sensitivity)

    def excess(log_mu):
        return float(gaussian_delta(epsilon, math.exp(log_mu))) - delta

    lo, hi = -20.0, 0.0
    while excess(hi) < 0:  # delta(epsilon) -> 1 as mu -> infinity, so this ends.
        hi += 2.0
    # brentq to a few ulps of log(mu): the loop below then needs at most a few steps
    log_mu = scipy.optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    sigma = sensitivity / math.exp(log_mu)
    # round sigma up (one ulp and a relative 1e-15 per step) until the float returned is valid
    while gaussian_delta(epsilon, sensitivity / sigma) > delta:
        sigma = np.nextafter(sigma, np.inf) * (1 + 1e-15)
    # A worst-case pair attains the sensitivity bound only up to the round-off of computing
    # its norm (a few ulps): calibrated at the exact root, such a pair's exact delta can read
    # 3e-16 above the claim (measured: 0.10000000000000028 for a 0.1 claim), and its audit
    # can certify neither pass nor violation. A relative 1e-12 more noise absorbs that.
    return float(sigma * (1.0 + ANALYTIC_SIGMA_SLACK))
