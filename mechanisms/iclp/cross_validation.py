r"""Private cross-validation (PCV) of the ICLP and FRL mean releases' tuning parameter.

**Private cross-validation** (PCV, MRS Sec. 5 as used by LR Sec. 6.1.1):
:func:`private_cross_validation` scores each candidate ``psi`` (or FRL ``M``)
by ``k``-fold cross-validation of the *private* release against the held-out
curves, averaged over Monte Carlo draws of the noise. It reads the data, so a
release tuned by PCV is **not** covered by the epsilon-DP claim (LR Sec. 4.4:
CV and PCV "are not truly privacy-safe since the regularization parameters may
contain information about the data"); PSS is the private alternative.

This is an experiment tool (LR Sec. 6.1.1 and notebook 01), not a mechanism:
nothing here is registered. The mechanisms themselves are in
:mod:`mechanisms.iclp.mean`.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.core.checks import check_choice, check_count, check_number
from dpaudit.model.spaces import KarhunenLoeveBasis
from mechanisms.iclp.mean import (
    AR_BOUNDS,
    OUT_OF_BOUND,
    QR_BOUNDS,
    ar_active_components,
    ar_mean_sensitivity,
    ar_threshold,
    check_ar_eta,
    check_basis,
    check_frl_components,
    check_psi,
    enforce_l2_bound,
    frl_mean_sensitivity,
    qr_mean_sensitivity,
    qr_shrinkage,
    soft_threshold,
)

__all__ = ["PCV_METHODS", "PrivateCrossValidation", "private_cross_validation"]

#: Summaries that :func:`private_cross_validation` can tune.
PCV_METHODS = ("iclp-qr", "iclp-ar", "frl")


@dataclasses.dataclass(frozen=True, eq=False)
class PrivateCrossValidation:
    """Outcome of :func:`private_cross_validation` (read-only).

    Attributes:
        method: ``"iclp-qr"``, ``"iclp-ar"`` or ``"frl"``.
        candidates: the tuning values tried (``psi``, or ``M`` for FRL), in the given order.
        scores: ``(len(candidates),)`` PCV scores: the mean squared L2 distance between
            the private estimate fitted without a fold and that fold's curves.
        best: the candidate with the smallest score (the first one on ties).
        folds: the number of folds.
        draws: Monte Carlo releases per fold and candidate; ``None`` for the exact expectation.
    """

    method: str
    candidates: tuple
    scores: np.ndarray
    best: float | int
    folds: int
    draws: int | None


def _pcv_candidates(method, candidates, basis):
    values = list(candidates) if np.ndim(candidates) == 1 else None
    if not values:
        raise ValueError(
            "candidates must be a non-empty 1-D sequence of tuning values (psi > 0, or the "
            "FRL truncation M)."
        )
    if method == "frl":
        return tuple(check_frl_components(m, basis) for m in values)
    return tuple(check_psi(p) for p in values)


def _pcv_fit(method, mean_train, n_train, lam, value, *, epsilon, tau, eta, bound):
    """Summary coefficients ``(K,)`` and Laplace noise scales ``(K,)`` of one fitted release."""
    if method == "frl":
        keep = np.arange(lam.size) < value
        delta = frl_mean_sensitivity(n=n_train, tau=tau, n_components=value, bound=bound)
        return np.where(keep, mean_train, 0.0), np.where(keep, delta / epsilon, 0.0)
    if method == "iclp-qr":
        summary = np.asarray(qr_shrinkage(lam, psi=value, eta=eta)) * mean_train
        delta = qr_mean_sensitivity(lam, n=n_train, tau=tau, psi=value, eta=eta, bound=bound)
    else:
        summary = np.asarray(soft_threshold(mean_train, ar_threshold(lam, psi=value, eta=eta)))
        if ar_active_components(lam, tau=tau, psi=value, eta=eta) == 0:
            return summary, np.zeros_like(lam)  # identically zero: nothing is released
        delta = ar_mean_sensitivity(lam, n=n_train, tau=tau, psi=value, eta=eta, bound=bound)
    # ICLP coefficient j ~ Laplace(summary_j, Delta sqrt(lambda_j) / epsilon) (sigma = sqrt 2 Delta/eps)
    return summary, delta * np.sqrt(lam) / epsilon


@functools.partial(jax.jit, static_argnums=3)
def _pcv_noise_term(key, offset, scales, draws):
    """Monte Carlo mean over ``draws`` of ``2 <offset, xi> + ||xi||^2``, ``xi_j ~ Lap(scales_j)``."""
    xi = scales[:, None, :] * jax.random.laplace(key, (scales.shape[0], draws, scales.shape[1]))
    return jnp.mean(2.0 * jnp.sum(offset[:, None, :] * xi, axis=-1) + jnp.sum(xi * xi, axis=-1), 1)


def private_cross_validation(
    curves,
    basis: KarhunenLoeveBasis,
    *,
    method: str,
    candidates,
    epsilon: float,
    tau: float,
    eta: float | None = None,
    sensitivity_bound: str | None = None,
    folds: int = 10,
    draws: int | None = None,
    key=None,
    out_of_bound: str = "reject",
) -> PrivateCrossValidation:
    r"""Private cross-validation (PCV) of the tuning parameter of an LR mean release.

    MRS Sec. 5's PCV, as LR Sec. 6.1.1 compares it with PSS (10 folds, ``psi`` in
    ``[0.1 psi_PSS, 10 psi_PSS]``; FRL's admissible ``M`` widened by 3 on each
    side). The records are split into ``folds`` consecutive blocks (shuffle them
    first if their order carries information). For each block ``T`` and candidate
    ``theta``, the mechanism of ``method`` is fitted to the other
    ``n_T = n - |T|`` records, with its noise calibrated for ``n_T`` as the
    builders do (ICLP: ``sigma = sqrt(2) Delta(n_T) / epsilon``; FRL:
    ``Laplace(Delta(n_T) / epsilon)``), and scored against the held-out curves:

    ``S_T(theta) = E_xi[(1/|T|) sum_{i in T} ||tilde mu_{-T}(theta) - X_i||^2_{L2}]``.

    MRS estimate the expectation over the release noise ``xi`` with Monte Carlo
    releases (1000 in their paper): pass ``draws`` and ``key``. With
    ``draws=None`` it is computed exactly: the noise is centred and independent
    of the data, so ``S_T = (1/|T|) sum_i ||hat mu_{-T} - X_i||^2 + E||xi||^2``
    with ``E||xi||^2 = 2 Delta^2 tr(C) / epsilon^2`` (ICLP, see docs/paper-errors.md#lr-privacy-error-constant) or
    ``2 M Delta^2 / epsilon^2`` (FRL) on the truncated basis. The PCV score is
    ``sum_T |T| S_T / n`` and the chosen value minimises it. L2 distances use the
    grid quadrature; the part of a curve off the basis span counts in full.

    **Privacy cost.** None is accounted, and none can be claimed: PCV reads
    every curve (the held-out folds enter without noise), so the chosen ``psi``
    or ``M`` is a function of the data and a release built with it is *not*
    covered by the mechanism's epsilon-DP claim, which assumes public tuning
    parameters. LR Sec. 4.4: CV and PCV "are not truly privacy-safe since the
    regularization parameters may contain information about the data"; end-to-end
    privacy needs PSS (:func:`pss_qr_psi`, :func:`pss_frl_components`), public
    data, or extra budget spent on the selection. Use PCV as a benchmark.

    Args:
        curves: ``(n, m)`` grid values of the records (at least ``folds`` of them).
        basis: the ICLP eigenbasis (the release's coordinates).
        method: ``"iclp-qr"``, ``"iclp-ar"`` or ``"frl"``.
        candidates: values of ``psi`` (> 0) for the ICLP summaries, of ``M`` for FRL.
        epsilon: the privacy parameter of the release.
        tau: public bound on ``||X_i||_{L2}``; curves above it are handled by ``out_of_bound``.
        eta: the penalty power of ICLP-QR/AR (required there; not an FRL parameter).
        sensitivity_bound: as the builders (default ``"printed"`` for QR and FRL,
            ``"corrected"`` for AR).
        folds: number of folds (``2 <= folds <= n``).
        draws: Monte Carlo releases per fold and candidate; ``None``: exact expectation.
        key: ``jax.random`` key of the Monte Carlo draws (only with ``draws``).
        out_of_bound: ``"reject"`` or ``"clip"`` curves with norm above ``tau``.

    Returns:
        A :class:`PrivateCrossValidation`.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.

    Example:
        >>> import jax
        >>> from mechanisms.iclp.mean import default_basis
        >>> from mechanisms.iclp.simulations import generate_curves
        >>> b = default_basis()
        >>> x = generate_curves(jax.random.key(0), 200, "S-2").curves
        >>> pcv = private_cross_validation(x, b, method="iclp-qr", candidates=[1e-3, 1e-2, 1e-1],
        ...                                epsilon=1.0, tau=4.0, eta=1.5, out_of_bound="clip")
        >>> pcv.best in pcv.candidates, pcv.scores.shape
        (True, (3,))
    """
    check_choice("method", method, PCV_METHODS)
    basis = check_basis(basis)
    epsilon = check_number("epsilon", epsilon)
    tau = check_number("tau", tau, hint=" (the public bound on ||X_i||_{L2})")
    check_choice("out_of_bound", out_of_bound, OUT_OF_BOUND)
    if method == "frl":
        if eta is not None:
            raise ValueError(
                "eta is not a parameter of FRL (it keeps M raw coefficients); drop it."
            )
        bound = check_choice("sensitivity_bound", sensitivity_bound or "printed", QR_BOUNDS)
    else:
        if eta is None:
            raise ValueError(f"method {method!r} needs eta, the power of C in its penalty.")
        eta = check_ar_eta(eta) if method == "iclp-ar" else check_number("eta", eta)
        default = "corrected" if method == "iclp-ar" else "printed"
        bounds = AR_BOUNDS if method == "iclp-ar" else QR_BOUNDS
        bound = check_choice("sensitivity_bound", sensitivity_bound or default, bounds)
    values = _pcv_candidates(method, candidates, basis)
    if draws is None:
        if key is not None:
            raise ValueError(
                "key is used only for Monte Carlo scores: pass draws=... as well, or drop key "
                "for the exact expectation."
            )
    else:
        draws = check_count("draws", draws)
        if key is None:
            raise ValueError("Monte Carlo PCV (draws=...) needs key=jax.random.key(seed).")
    x = np.asarray(enforce_l2_bound(curves, basis.grid, tau, out_of_bound))
    n = x.shape[0]
    folds = check_count("folds", folds)
    if not 2 <= folds <= n:
        raise ValueError(f"folds must lie between 2 and the number of curves n = {n}, got {folds}.")
    lam = np.asarray(basis.eigenvalues)
    weights, phi = np.asarray(basis.grid.weights), np.asarray(basis.eigenfunctions)
    coefficients = (x * weights) @ phi
    off_span = ((x - coefficients @ phi.T) ** 2) @ weights
    totals = np.zeros(len(values))
    for k, test in enumerate(np.array_split(np.arange(n), folds)):
        train = np.ones(n, dtype=bool)
        train[test] = False
        mean_train = coefficients[train].mean(axis=0)
        held_out = coefficients[test]
        mean_test = held_out.mean(axis=0)
        spread = float(np.mean(np.sum((held_out - mean_test) ** 2, axis=1) + off_span[test]))
        fits = [
            _pcv_fit(
                method, mean_train, n - test.size, lam, v, epsilon=epsilon, tau=tau, eta=eta,
                bound=bound,
            )
            for v in values
        ]  # fmt: skip
        summaries = np.stack([s for s, _ in fits])
        scales = np.stack([b for _, b in fits])
        offset = summaries - mean_test
        if draws is None:
            noise = np.sum(2.0 * scales**2, axis=1)
        else:
            fold_key = jax.random.fold_in(key, k)
            noise = np.asarray(_pcv_noise_term(fold_key, offset, scales, draws))
        totals += test.size * (np.sum(offset**2, axis=1) + spread + noise)
    scores = totals / n
    return PrivateCrossValidation(
        method=method,
        candidates=values,
        scores=scores,
        best=values[int(np.argmin(scores))],
        folds=folds,
        draws=draws,
    )
