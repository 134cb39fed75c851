r"""Round-off error bounds of the computations a verdict rests on.

A white-box verdict compares numbers computed in float64 (the supremum of the
privacy loss, ``mu`` of a Gaussian pair, the hockey-stick curve) with the claim.
A claim calibrated at exactly the pair's value must not read as violated because
of rounding, and an excess larger than the rounding must never read as
"round-off". Every tolerance is therefore the error bound of the computation it
covers, scaled by the magnitudes actually involved (Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., 2002):

* **Rounded operations.** Each float64 operation ``+ - * / sqrt`` (and a
  correctly rounded constant such as ``sqrt(2)``) has relative error at most
  ``u = 2^-53``; ``n`` of them in a product chain at most
  ``gamma_n = n u / (1 - n u)`` (Lemma 3.1).
* **Sums.** A sum of ``n`` terms, each the result of ``k`` rounded operations,
  computed in any order, errs by at most ``gamma_(n - 1 + k) sum |t_j|``
  (eq. (4.4); :func:`sum_error`). The audit itself sums with ``math.fsum``
  (correctly rounded), so the bound also covers a mechanism that calibrated
  its noise with an ordinary float64 sum of the same terms.
* **Law parameters.** The centres ``f_D``, ``f_D'`` of the two release laws
  are float64 results of the mechanism's own computation (a clipped mean, a
  projection): each coordinate is allowed :data:`SUMMARY_ULPS` rounding errors
  of its own magnitude, the bound of a pairwise float64 sum of up to
  ``2^SUMMARY_ULPS`` records (Higham eq. (4.6): ``gamma_(ceil log2 n)``), so a
  mechanism exact in real arithmetic is not reported as violated for rounding
  its summaries. The scales ``b_j``, ``sigma`` carry
  :data:`SCALE_OPS` operations of their calibration.
* **The Gaussian curve** ``delta = Phi(a) - e^epsilon Phi(b)`` (computed in log
  space): :data:`NDTR_ULPS` rounding errors of each ``log_ndtr`` term's magnitude,
  carried through the cancellation of the difference
  (:func:`gaussian_curve_error`), plus the effect of the error in ``mu`` through
  ``d delta / d mu = phi(a)`` (:func:`gaussian_delta_error`).

Nothing here covers statistical error (Monte Carlo bounds carry their own
confidence) or discretisation (the numerical curves are upper/lower bounds by
construction, :mod:`dpaudit.accounting`).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special

__all__ = [
    "ELEMENTARY_ULPS",
    "LAPLACE_TERM_OPS",
    "NDTR_ULPS",
    "SCALE_OPS",
    "SUMMARY_ULPS",
    "UNIT_ROUNDOFF",
    "gamma",
    "gaussian_curve_error",
    "gaussian_delta_error",
    "gaussian_survival_error",
    "laplace_evaluation_error",
    "laplace_survival_error",
    "shift_errors",
    "sum_error",
    "sup_loss_tolerance",
    "supremum_rounding",
]

#: Unit round-off of float64: every rounded operation has relative error at most this.
UNIT_ROUNDOFF = 2.0**-53
#: Rounding errors allowed in each centre coordinate of a release law (a pairwise sum of
#: up to 2^16 records, or any computation of at most 16 rounded steps of its magnitude).
SUMMARY_ULPS = 16
#: Rounded operations in the calibration of a noise scale (``b = Delta / epsilon``, a
#: square root, a product with a constant; a few to spare).
SCALE_OPS = 4
#: Rounded operations per Laplace parameter ``a_j = sqrt(2) |h_j| / (sigma sqrt(lambda_j))``
#: as the audit computes it: the difference ``h_j``, ``sqrt(2)``, ``sqrt``, ``*``, ``/``, ``*``.
LAPLACE_TERM_OPS = 6
#: Relative rounding errors of one ``log_ndtr`` term of the Gaussian curve, its ``exp`` and
#: the ``expm1`` of the difference (cephes ``ndtr``/``erfc`` are accurate to a few ulps).
NDTR_ULPS = 16
#: Elementary functions (``exp``, ``expm1``, ``log``, ``log1p`` of numpy) are taken to be within
#: 2 ulp, i.e. a relative error of at most ``ELEMENTARY_ULPS u`` with ``ELEMENTARY_ULPS = 4``
#: (measured within 0.52 ulp; tests/accounting/test_survival_roundoff.py).
ELEMENTARY_ULPS = 4


#: A supremum bracket ``[lower, upper]`` narrower than this, relative to ``1 + upper``, is the
#: evaluation error of its two bounds (sums of site brackets, a linear programme's optimum
#: certified from both sides), not uncertainty about where the supremum lies: a claim with
#: ``lower <= epsilon`` up to :func:`sup_loss_tolerance` passes. A wider bracket (an adaptive
#: release's bound over every history, [2, 4]) around the claim is inconclusive.
BRACKET_ROUNDOFF_RTOL = 1e-12


def gamma(n: int) -> float:
    """``gamma_n = n u / (1 - n u)``: the relative error of ``n`` rounded operations.

    Args:
        n: the number of rounded float64 operations, ``0 <= n < 2^53``.

    Returns:
        The bound (``0`` for ``n = 0``).

    Raises:
        ValueError: a negative or too large ``n``.

    Example:
        >>> gamma(1) == 2.0**-53 / (1 - 2.0**-53)
        True
    """
    if not 0 <= n < 2**52:
        raise ValueError(f"n must be a count of operations in [0, 2^52), got {n!r}.")
    nu = n * UNIT_ROUNDOFF
    return nu / (1.0 - nu)


def sum_error(abs_sum: float, n_terms: int, ops_per_term: int = 0) -> float:
    """Bound on the error of a float64 sum of ``n_terms`` computed terms, in any order.

    Higham (2002) eq. (4.4) with Lemma 3.1: ``|computed - exact| <= gamma_(n - 1 + k)
    sum_j |t_j|`` when each term ``t_j`` is itself the result of ``k`` rounded operations.

    Args:
        abs_sum: ``sum_j |t_j|`` (computed; its own error is second order).
        n_terms: the number ``n >= 1`` of terms.
        ops_per_term: the rounded operations ``k`` behind each term.

    Returns:
        The bound.

    Example:
        >>> sum_error(1.0, 1, 2) == gamma(2)
        True
    """
    return gamma(max(int(n_terms), 1) - 1 + int(ops_per_term)) * float(abs_sum)


def _noise_coordinate_magnitudes(shift) -> np.ndarray:
    """``|f_D| + |f_D'|`` in noise coordinates (norms when the embedding changes the size)."""
    k = int(np.size(shift.shift))
    centre = np.abs(np.ravel(np.asarray(shift.centre, dtype=np.float64)))
    other = np.abs(np.ravel(np.asarray(shift.centre_other, dtype=np.float64)))
    if centre.size == k and other.size == k and shift.source in ("independent", "coefficients"):
        return centre + other
    # An embedding (KL basis, whitening) spreads a centre's rounding over the coordinates;
    # with an orthonormal basis the error vector keeps its L2 size, carried by each coordinate.
    return np.full(k, float(np.linalg.norm(centre) + np.linalg.norm(other)))


def shift_errors(shift) -> tuple[float, float]:
    """Error bounds of the supremum and of ``mu`` computed for a shifted-noise pair.

    For Laplace noise, ``sup L = sum_j a_j`` with ``a_j = |h_j| / b_j``: the audit's own
    evaluation errs by :func:`sum_error` with :data:`LAPLACE_TERM_OPS` + :data:`SCALE_OPS`
    operations per term; the centres' rounding (:data:`SUMMARY_ULPS` of ``|f_D| + |f_D'|``
    per coordinate) moves ``a_j`` by that much over ``b_j``. For Gaussian noise,
    ``mu = ||h / (sigma sqrt(lambda))||_2`` errs by ``gamma_(K + 8) mu`` in evaluation plus
    the weighted L2 norm of the centres' rounding (triangle inequality).

    Args:
        shift: a :class:`~dpaudit.whitebox.shift.NoiseShift`.

    Returns:
        ``(sup_error, mu_error)``: bounds on ``|computed - exact|`` of the supremum (Laplace;
        ``0`` for Gaussian) and of ``mu`` (Gaussian; ``0`` for Laplace).
    """
    h = np.abs(np.ravel(np.asarray(shift.shift, dtype=np.float64)))
    lam = np.ravel(np.asarray(shift.eigenvalues, dtype=np.float64))
    inv_scale = 1.0 / (float(shift.sigma) * np.sqrt(lam))
    rounding = gamma(SUMMARY_ULPS) * _noise_coordinate_magnitudes(shift) * inv_scale
    k = h.size
    if shift.family == "gaussian":
        mu = math.sqrt(math.fsum((h * inv_scale) ** 2))
        evaluation = gamma(k + 2 * SCALE_OPS) * mu
        return 0.0, evaluation + math.sqrt(math.fsum(rounding**2))
    a = math.sqrt(2.0) * h * inv_scale
    return laplace_evaluation_error(a) + math.sqrt(2.0) * math.fsum(rounding), 0.0


def laplace_evaluation_error(a) -> float:
    """Bound on the error of ``sum_j a_j`` as evaluated from the laws' float64 parameters.

    Args:
        a: the Laplace parameters ``a_j >= 0`` (:func:`dpaudit.accounting.laplace_parameters`).

    Returns:
        :func:`sum_error` of the ``K`` terms with :data:`LAPLACE_TERM_OPS` +
        :data:`SCALE_OPS` operations each (the centres' rounding is not included).
    """
    a = np.abs(np.ravel(np.asarray(a, dtype=np.float64)))
    return sum_error(math.fsum(a), a.size, LAPLACE_TERM_OPS + SCALE_OPS)


def sup_loss_tolerance(accounting) -> float:
    """How far the certified lower bound on the supremum may exceed a claim that holds.

    The verdict compares ``sup_loss_lower`` (``sup_loss`` when there is no bracket) with
    ``epsilon + tolerance``: above, a violation; at or below, the claim holds up to
    rounding. ``accounting.sup_loss_error`` when the accounting records it (computed from
    the laws' parameters by :func:`shift_errors`: the evaluation error of an unbracketed
    ``sup_loss`` plus the centres' rounding); otherwise :data:`SUMMARY_ULPS` +
    :data:`SCALE_OPS` rounding errors of the supremum itself for a certified bracket
    (:mod:`dpaudit.exact`: the law's parameters are not visible, so their rounding is
    assumed to scale with the supremum), or :func:`laplace_evaluation_error` of a bare
    Laplace record's parameters.

    Args:
        accounting: an exact accounting with a finite ``sup_loss``.

    Returns:
        The tolerance (``>= 0``).
    """
    recorded = getattr(accounting, "sup_loss_error", None)
    if recorded is not None:
        return float(recorded)
    sup = float(accounting.sup_loss)
    if not math.isfinite(sup):
        return 0.0
    if getattr(accounting, "sup_loss_lower", None) is not None:
        return supremum_rounding(sup)
    params = getattr(accounting, "laplace_parameters", None)
    return laplace_evaluation_error(np.atleast_1d(sup) if params is None else params)


def supremum_rounding(sup: float) -> float:
    """The rounding allowed a certified supremum whose laws' parameters are not visible.

    Args:
        sup: the supremum (finite).

    Returns:
        ``gamma_(SUMMARY_ULPS + SCALE_OPS) |sup|``.
    """
    return gamma(SUMMARY_ULPS + SCALE_OPS) * abs(float(sup))


def gaussian_delta_error(epsilon, mu: float, mu_error: float = 0.0):
    """Bound on the error of the Gaussian curve ``delta(epsilon)`` computed at a computed ``mu``.

    The float64 evaluation error at ``mu`` (:func:`gaussian_curve_error`), plus the effect of
    an error ``e`` in ``mu``: ``d delta / d mu = phi(a)`` with ``a = mu/2 - epsilon/mu``, so
    ``delta`` moves by at most ``phi(a') e`` for some ``a'`` between the two values of ``a``;
    ``phi(a') <= 2 phi(a)`` while ``e |d a / d mu| <= 1/2``, so the bound takes ``2 phi(a) e``.

    Args:
        epsilon: epsilon(s) ``>= 0``.
        mu: the computed ``mu > 0``.
        mu_error: a bound on the error of ``mu`` (:func:`shift_errors`).

    Returns:
        The bound, shaped like ``epsilon``.
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    a = mu / 2.0 - eps / mu
    moved = 2.0 * np.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi) * mu_error
    return gaussian_curve_error(eps, mu) + moved


def gaussian_curve_error(epsilon, mu: float):
    """Bound on the float64 error of the Gaussian curve as :func:`dpaudit.noise.gaussian_delta`
    computes it, at every real ``epsilon``.

    ``delta = e^la (-expm1(d))`` with ``la = log_ndtr(a)``, ``lb = log_ndtr(b)`` and
    ``d = epsilon + lb - la``. ``log_ndtr`` errs by :data:`NDTR_ULPS` rounding errors of its
    magnitude (its logarithm grows like ``a^2 / 2`` in the tail, so the absolute error does
    too), ``d`` by those of ``|epsilon| + |la| + |lb|``; an absolute error ``e_d`` of ``d``
    moves ``-expm1(d)`` by ``e^d e_d`` (the cancellation when ``e^epsilon Phi(b)`` is close to
    ``Phi(a)``), and ``e^la`` carries the relative error ``e_la`` of ``la``'s absolute one:

    ``|error| <= e^la (e^d e_d) + delta (e_la + gamma_4)`` (first order; doubled).
    Below 0 the curve is ``1 - e^epsilon (1 - delta(-epsilon))``: ``e^epsilon`` times the
    error at ``-epsilon`` plus the rounding of the two operations.

    Args:
        epsilon: epsilon(s), any real.
        mu: ``mu > 0``.

    Returns:
        The bound, shaped like ``epsilon``.
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    pos = np.abs(eps)
    a = mu / 2.0 - pos / mu
    b = -mu / 2.0 - pos / mu
    la, lb = scipy.special.log_ndtr(a), scipy.special.log_ndtr(b)
    g = gamma(NDTR_ULPS)
    e_d = g * (1.0 + pos + np.abs(la) + np.abs(lb))
    e_la = g * (1.0 + np.abs(la))
    d = pos + lb - la
    delta = -np.exp(la) * np.expm1(d)
    err = 2.0 * (np.exp(la + d) * e_d + np.abs(delta) * (e_la + gamma(4)))
    return np.where(eps >= 0, err, np.exp(eps) * err + gamma(4))


def gaussian_survival_error(mu: float, *, rounded_threshold: bool = False) -> float:
    r"""Bound on the absolute float64 error of a Gaussian loss's survival function.

    ``P(L >= t) = Phi(z)``, ``z = (m - t) / mu``, ``m = +-mu^2 / 2``, computed as
    ``ndtr(fl(fl(m) - t) / mu)``. ``ndtr`` errs by at most :data:`NDTR_ULPS` ``u`` in absolute
    terms (its values lie in ``[0, 1]``; measured within 1.3 u against 40-digit references).
    The argument errs by ``u (m + 2 |m - t|) / mu = u (mu / 2 + 2 |z|)`` (the rounding of
    ``mu^2``, of the difference and of the division), which moves ``Phi`` by ``phi(z)`` times
    that, at most ``u (0.2 mu + 0.49)`` (``phi(0) < 0.399``, ``max |z| phi(z) < 0.242``). A
    threshold that is itself the float of a grid point ``k d`` (``rounded_threshold``) is off
    by ``u |t| <= u (m + mu |z|)``, which adds ``u (0.2 mu + 0.25)``. The factor 1.01 covers
    second-order terms and ``phi`` at a point between ``z`` and its float (valid while
    ``mu <= 1e9``; above it the bound is the trivial 1).

    Args:
        mu: the Gaussian loss parameter, ``mu >= 0``.
        rounded_threshold: the threshold is ``fl(k d)`` and the error is measured against the
            survival at the exact ``k d``.

    Returns:
        The bound (``0`` for ``mu = 0``).

    Example:
        >>> gaussian_survival_error(1.0) < 20 * UNIT_ROUNDOFF
        True
    """
    if mu == 0:
        return 0.0
    if mu > 1e9:
        return 1.0
    slope = 0.2 * mu + 0.49 + (0.2 * mu + 0.25 if rounded_threshold else 0.0)
    return 1.01 * UNIT_ROUNDOFF * (NDTR_ULPS + slope)


def laplace_survival_error() -> float:
    r"""Bound on the absolute float64 error of a Laplace loss's survival function at a float ``t``.

    ``P(L >= t) = 1 - e^((t - a)/2) / 2`` or ``Q(L >= t) = e^((-t - a)/2) / 2`` on
    ``(-a, a]`` (exact comparisons place the atoms): the exponential's relative error
    (:data:`ELEMENTARY_ULPS` ``u``) on a value at most ``1/2`` is ``2 u``; the rounding of
    ``y = t - a`` (``u |y|``) moves ``e^(y/2)/2`` by ``e^(y/2) |y| u / 4 <= u / (2e)``; the
    final ``1 - w`` one more ``u``. In all ``3.19 u``, charged as ``4 u``.

    Returns:
        The bound.

    Example:
        >>> laplace_survival_error() == 4 * UNIT_ROUNDOFF
        True
    """
    return 4.0 * UNIT_ROUNDOFF
