r"""Certificates: single releases that prove a violation, checked with the exact densities.

A release ``x`` with ``L(x) > epsilon + tol`` certifies that a *pure* epsilon
claim is violated: the densities are continuous, so the density ratio exceeds
``e^epsilon`` on a neighbourhood ``A`` of ``x`` and ``P_D(A) > e^epsilon
P_D'(A)``. ``tol = 1e-9 (1 + sum_j |t_j|)`` over the summands of both log
densities (:func:`dpaudit.model.loss.evaluate_release`), so float64 round-off never
certifies; laws whose log-density is numerical add their certified error
(:func:`dpaudit.accounting.suprema.log_density_error`; ``inf`` refuses the certificate).
Candidates are the Monte Carlo draw with the largest loss in each direction and
the constructed worst cases (:func:`constructed_candidates`).
Two grid releases whose summaries differ off the Karhunen–Loève span are
mutually singular: ``P_D`` is carried by ``f_D + span``, which ``P_D'`` gives
mass 0, so ``delta(epsilon) = 1`` and every claim with ``delta < 1`` fails.
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.accounting.suprema import log_density_error
from dpaudit.model.claims import Claim
from dpaudit.model.loss import evaluate_release
from dpaudit.model.shift import NoiseShift
from dpaudit.whitebox.result import DIRECTIONS, Certificate

__all__ = ["constructed_candidates", "find_certificate"]

# Offsets t of the directed search x = E_P + t (E_P - E_Q) when no structure is known.
_SEARCH_STEPS = (0.0, 1.0, 3.0, 10.0, 30.0)

_SINGULAR_WHY = (
    "the summaries differ off the span of the noise's eigenfunctions, so P_D is "
    "carried by the affine set f_D + span, which P_D' gives probability 0: "
    "delta(epsilon) = 1 for every epsilon."
)


def _mean_search(dist_p, dist_q) -> list[np.ndarray]:
    """Releases along ``E_P - E_Q`` from ``E_P`` (no noise structure known)."""
    try:
        mean_p = np.asarray(dist_p.mean, dtype=np.float64)
        mean_q = np.asarray(dist_q.mean, dtype=np.float64)
    except (NotImplementedError, AttributeError, TypeError, ValueError):
        return []
    if mean_p.shape != mean_q.shape or not (
        np.all(np.isfinite(mean_p)) and np.all(np.isfinite(mean_q))
    ):
        return []
    return [mean_p + t * (mean_p - mean_q) for t in _SEARCH_STEPS]


def constructed_candidates(shift: NoiseShift | None, dist_p, dist_q, epsilon: float) -> list:
    """Analytic worst-case releases, or a directed search along ``E_P - E_Q`` without structure.

    For Laplace noise (and singular pairs) the worst case is ``x = f_P``, where
    ``L = sqrt 2 ||h||_{1,C} / sigma``; for Gaussian noise a point far along ``h``,
    ``x = f_P + t h`` with ``L = mu^2 (t + 1/2)`` just above ``epsilon + 1``.

    Args:
        shift: the noise structure ``P -> Q``, or ``None``.
        dist_p: the release law ``P``.
        dist_q: the release law ``Q``.
        epsilon: the claimed epsilon.

    Returns:
        A list of releases (numpy).
    """
    if shift is None:
        return _mean_search(dist_p, dist_q)
    if shift.singular or shift.family == "laplace":
        return [np.asarray(shift.release(np.zeros(shift.n_components)))]
    mu2 = float(np.sum(shift.shift**2 / (shift.sigma**2 * shift.eigenvalues)))
    if mu2 <= 0:
        return []
    t = max(0.0, (epsilon + 1.0) / mu2 - 0.5)
    return [np.asarray(shift.release(t * shift.shift))]


def _certificate_at(claim, d_index, source, x, loss, lp, lq, tol, shift) -> Certificate | None:
    """The certificate a verified release gives, or ``None``."""
    singular = loss == math.inf
    certifies = singular or (claim.pure and loss > claim.epsilon + tol)
    known_singular = shift is not None and shift.singular
    if singular and not known_singular:
        # a single point outside the support of Q is a certificate only when the whole
        # support of P is known to be (shifted noise whose summaries leave the span).
        certifies = claim.pure
    if not certifies:
        return None
    if singular and known_singular:
        kind, why = "singular", _SINGULAR_WHY
    else:
        kind = "density-ratio"
        why = (
            f"L(x) = {loss:.6g} > epsilon = {claim.epsilon:g} (+ round-off margin "
            f"{tol:.2g}); the densities are continuous, so the density ratio exceeds "
            "e^epsilon on a neighbourhood A of x and P(A) > e^epsilon Q(A)."
        )
    return Certificate(
        release=np.asarray(x),
        loss=loss,
        direction=DIRECTIONS[d_index],
        log_p=lp,
        log_q=lq,
        tolerance=tol,
        kind=kind,
        source=source,
        explanation=why,
    )


def find_certificate(
    claim: Claim, kernels, best_releases, shift: NoiseShift | None
) -> tuple[Certificate | None, list[float]]:
    """The best verified certificate over Monte Carlo maxima and constructed worst cases.

    Args:
        claim: the claim audited.
        kernels: the two directions' loss kernels (their ``dist_p``, ``dist_q``).
        best_releases: per direction, the release with the largest sampled loss, or ``None``.
        shift: the noise structure ``D -> D'``, or ``None``.

    Returns:
        ``(certificate, verified)``: the certificate with the largest loss (or
        ``None``) and every candidate's verified loss less its round-off margin.
    """
    found, verified = None, []
    for d_index, kernel in enumerate(kernels):
        s = shift if d_index == 0 or shift is None else shift.reversed()
        candidates = (
            [] if best_releases[d_index] is None else [("monte-carlo", best_releases[d_index])]
        )
        for x in constructed_candidates(s, kernel.dist_p, kernel.dist_q, claim.epsilon):
            candidates.append(("constructed", x))
        for source, x in candidates:
            try:
                loss, lp, lq, tol = evaluate_release(kernel.dist_p, kernel.dist_q, x)
                if math.isfinite(loss):  # numerical densities: their certified error too
                    tol += log_density_error(kernel.dist_p, x) + log_density_error(kernel.dist_q, x)
            except (ValueError, TypeError):
                continue  # a candidate the densities cannot evaluate certifies nothing
            if math.isnan(loss) or lp == -math.inf:
                continue  # outside the support of P: not a release P can produce
            verified.append(loss - tol if math.isfinite(loss) else loss)
            cert = _certificate_at(claim, d_index, source, x, loss, lp, lq, tol, shift)
            if cert is not None and (found is None or loss > found.loss):
                found = cert
    return found, verified
