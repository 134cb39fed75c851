r"""Compatibility of a summary difference with a noise: do its norms converge as K grows?

For a difference of summaries ``h = f_D - f_D'`` with coefficients ``h_j`` in the
eigenbasis of the noise covariance (eigenvalues ``lambda_j``):

* Cameron–Martin series ``||h||_C^2 = sum_j h_j^2 / lambda_j``. If it diverges
  the two release laws are **mutually singular** (Feldman–Hájek; MRS Thm 3.1,
  LR Thm 2/5): no sigma gives any DP, Gaussian or ICLP. -> ``"incompatible"``.
* weighted-l1 series ``||h||_{1,C} = sum_j |h_j| / sqrt(lambda_j)``. If the
  Cameron–Martin series converges but this one diverges the laws are
  equivalent, Gaussian noise can give ``(epsilon, delta)``-DP, but the ICLP
  can give **no** pure epsilon-DP (LR Thm 3/7). -> ``"gaussian-only"``.
* both converge -> ``"compatible"`` (ICLP epsilon-DP possible, LR Thm 4/8).

Deciding convergence from ``K`` terms is a tail estimate, made robust as follows.

1. **Reliable terms only.** Eigenvalues at or below ``eigenvalue_rtol *
   lambda_1`` are numerical noise (an eigensolver's ``eps * lambda_1`` floor),
   and so are coefficients with ``|h_j| <= coefficient_rtol * ||h||_2``
   (round-off of the projection). Terms beyond the last reliable eigenvalue
   are dropped, and coefficients at round-off level count as zero, so
   ``h_j^2 / lambda_j`` with a meaningless tiny ``lambda_j`` cannot fake a
   divergence.
2. **Dyadic block sums.** The reliable range ``1..K_r`` is cut into blocks
   ``(K_r / 2^(b+1), K_r / 2^b]`` counted down from ``K_r``. For terms
   ``~ c j^(-p)`` the block sums decay by the ratio ``2^(1-p)`` per block, so
   the series converges iff the ratio is below 1; random fluctuations of
   single terms (e.g. coefficients of Brownian paths) average out in a block.
   The ratio is fitted by least squares on the logarithms of the last
   ``fit_blocks`` block sums. The series is declared convergent when the
   ratio is at most ``1 - margin`` (or the terms stop), divergent
   otherwise; ``p = 1`` (ratio 1, e.g. the harmonic series) is divergent.
   A single non-zero block at the end (one coefficient at the truncation
   edge) shows no trend and is left undetermined.
3. **Evidence.** The partial-sum curve, the block sums, the fitted ratio, the
   estimated exponent ``p = 1 - log2(ratio)`` and, for a convergent series,
   a geometric tail estimate ``B_last r / (1 - r)`` and limit are reported.

Fewer than ``min_blocks`` blocks (``K_r < 2^min_blocks``) give ``"undetermined"``.

**Where the analysis means something.** Extrapolating ``K -> infinity`` is only
meaningful when the ``K`` coefficients are a truncation of a functional release:
a :class:`~dpaudit.model.noise.GridNoise` (curves on a grid, expanded in a
Karhunen–Loève basis whose later eigenfunctions exist but were not kept). A
bare :class:`~dpaudit.model.noise.KarhunenLoeveNoise` release (a coefficient vector of
length ``K`` declared by the user, e.g. ``ICLPNoise(eigenvalues, sigma, loc=h)``)
*is* the mechanism: there is no ``K + 1``-th coefficient, and the verdict rests
on the audited law. :func:`compatibility` is then called with
``extrapolated=False``: the evidence is still computed and reported, but
:meth:`Compatibility.allows` is not used to override the verdict
(:mod:`dpaudit.whitebox.verdict` adds a note instead).

**Which theorem.** The sentence explaining an impossibility depends on the noise
(:meth:`Compatibility.limit_explanation`): for Gaussian noise, ``h`` outside the
Cameron–Martin space ``H_C`` gives mutually singular laws (Cameron–Martin /
Feldman–Hájek; MRS Thm 3.1); for ICLP noise, ``h`` outside ``H_C`` gives
mutually singular laws (LR Thm 2/5), and ``h`` in ``H_C`` but not in
``H_{1,C}`` gives *equivalent* laws that are not pure-DP for any noise scale
(LR Thm 3/7) -- "not pure-DP", not "singular". See ``docs/papers/lr.md`` and
``docs/papers/mrs.md``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit.core.serialize import json_float
from dpaudit.model.shift import noise_shift

__all__ = [
    "CLASSES",
    "Compatibility",
    "SeriesEvidence",
    "classify_pair",
    "compatibility",
    "is_functional_truncation",
    "series_evidence",
]

#: Possible classifications.
CLASSES = ("compatible", "gaussian-only", "incompatible", "undetermined")


@dataclasses.dataclass(frozen=True)
class SeriesEvidence:
    """Evidence on the convergence of a series of non-negative terms.

    Attributes:
        name: ``"cameron-martin"`` (terms ``h_j^2 / lambda_j``) or ``"one-c"``
            (terms ``|h_j| / sqrt(lambda_j)``).
        terms: the reliable terms (round-off coefficients set to 0).
        partial_sums: ``cumsum(terms)`` (for Cameron–Martin this is ``||h||_C^2`` up to ``k``).
        block_sums: dyadic block sums, earliest block first.
        block_ends: the last index (1-based) of each block.
        ratio: fitted decay ratio of consecutive block sums (``nan`` if undetermined).
        exponent: implied power-law exponent ``p = 1 - log2(ratio)``.
        converges: True / False, or ``None`` when undetermined.
        tail_estimate: estimated remainder beyond ``K_r`` (``inf`` when divergent).
        limit_estimate: ``partial_sums[-1] + tail_estimate``.
    """

    name: str
    terms: np.ndarray
    partial_sums: np.ndarray
    block_sums: np.ndarray
    block_ends: np.ndarray
    ratio: float
    exponent: float
    converges: bool | None
    tail_estimate: float
    limit_estimate: float

    def to_dict(self) -> dict:
        """JSON-able summary (the partial-sum curve included)."""
        return {
            "name": self.name,
            "partial_sums": [float(v) for v in self.partial_sums],
            "block_sums": [float(v) for v in self.block_sums],
            "block_ends": [int(v) for v in self.block_ends],
            "ratio": json_float(self.ratio),
            "exponent": json_float(self.exponent),
            "converges": self.converges,
            "tail_estimate": json_float(self.tail_estimate),
            "limit_estimate": json_float(self.limit_estimate),
        }


@dataclasses.dataclass(frozen=True)
class Compatibility:
    """Classification of a summary difference against a noise covariance.

    Attributes:
        classification: one of :data:`CLASSES`.
        cameron_martin: :class:`SeriesEvidence` for ``||h||_C^2``.
        one_c: :class:`SeriesEvidence` for ``||h||_{1,C}``.
        n_components: ``K`` given.
        n_reliable: ``K_r`` used.
        reason: one sentence for reports.
        extrapolated: True when the coefficients truncate a functional release (a grid
            release on a basis) and the ``K -> infinity`` limit applies to the verdict;
            False for a finite coefficient vector declared by the user, whose verdict
            rests on the audited law (see the module docstring).
    """

    classification: str
    cameron_martin: SeriesEvidence
    one_c: SeriesEvidence
    n_components: int
    n_reliable: int
    reason: str
    extrapolated: bool = True

    def allows(self, pure: bool, family: str) -> bool | None:
        """Whether this class allows the claimed kind of DP with this noise family in the limit.

        ``None`` when undetermined. Gaussian noise needs a compatible or
        gaussian-only pair; pure DP with Laplace/ICLP noise needs a compatible pair.

        Args:
            pure: the claim is pure epsilon-DP.
            family: ``"gaussian"`` or ``"laplace"``.

        Returns:
            True, False, or ``None`` when undetermined.
        """
        if self.classification == "undetermined":
            return None
        if self.classification == "incompatible":
            return False
        if pure and family == "laplace":
            return self.classification == "compatible"
        return True

    def limit_explanation(self, pure: bool, family: str) -> str:
        """The theorem behind :meth:`allows` for this noise family, as one sentence.

        Gaussian noise with ``h`` outside ``H_C``: mutually singular laws
        (Cameron–Martin / Feldman–Hájek, MRS Thm 3.1). ICLP noise with ``h`` outside
        ``H_C``: mutually singular laws (LR Thm 2/5); with ``h`` in ``H_C`` minus
        ``H_{1,C}`` and a pure claim: equivalent laws that are not pure-DP (LR Thm 3/7).

        Args:
            pure: the claim is pure epsilon-DP.
            family: ``"gaussian"`` or ``"laplace"`` (ICLP).

        Returns:
            The sentence (the classification's :attr:`reason` in the other cases).
        """
        cm, oc = self.cameron_martin.ratio, self.one_c.ratio
        if self.classification == "incompatible" and family == "gaussian":
            return (
                f"h lies outside the Cameron-Martin space H_C (||h||_C diverges, block ratio "
                f"{cm:.3g}): by the Cameron-Martin (Feldman-Hajek) theorem the Gaussian release "
                "laws are mutually singular in the limit, so no noise scale gives any DP "
                "(Mirshani et al. Thm 3.1)."
            )
        if self.classification == "incompatible":
            return (
                f"h lies outside H_C (||h||_C diverges, block ratio {cm:.3g}): the ICLP release "
                "laws are mutually singular in the limit, so no noise scale gives any DP "
                "(Lin & Reimherr Thm 2/5)."
            )
        if self.classification == "gaussian-only" and pure and family == "laplace":
            return (
                f"h lies in H_C but not in H_{{1,C}} (||h||_C converges, block ratio {cm:.3g}; "
                f"||h||_{{1,C}} diverges, block ratio {oc:.3g}): the ICLP release laws are "
                "equivalent (not singular) but not pure-DP for any noise scale "
                "(Lin & Reimherr Thm 3/7)."
            )
        return self.reason

    def to_dict(self) -> dict:
        """A JSON-able dict (non-finite floats as ``"inf"``/``"-inf"``, NaN as ``None``).

        Returns:
            The classification, sizes, reason and both series' evidence.
        """
        return {
            "classification": self.classification,
            "n_components": self.n_components,
            "n_reliable": self.n_reliable,
            "reason": self.reason,
            "cameron_martin": self.cameron_martin.to_dict(),
            "one_c": self.one_c.to_dict(),
        }


def _block_sums(terms: np.ndarray):
    k = terms.size
    ends = []
    end = k
    while end >= 1:
        ends.append(end)
        end //= 2
    ends = ends[::-1]  # increasing
    starts = [0, *ends[:-1]]
    sums = np.array([terms[s:e].sum() for s, e in zip(starts, ends, strict=True)])
    return sums, np.array(ends)


def series_evidence(
    terms, name: str, *, min_blocks: int = 3, fit_blocks: int = 4, margin: float = 0.05
) -> SeriesEvidence:
    """Convergence evidence for a series of non-negative ``terms`` (see the module docstring).

    Args:
        terms: the non-negative terms of the series.
        name: the series' name (``"cameron-martin"`` or ``"one-c"``).
        min_blocks: fewest dyadic blocks for a decision.
        fit_blocks: blocks used by the power-law fit of the tail.
        margin: a block ratio must stay below ``1 - margin`` to read as convergent.

    Returns:
        A :class:`SeriesEvidence`.

    Raises:
        ValueError: for negative or NaN terms, or bad tuning parameters.

    Example:
        >>> j = np.arange(1, 1025.0)
        >>> series_evidence(j**-2.0, "one-c").converges, series_evidence(1 / j, "one-c").converges
        (True, False)
    """
    terms = np.asarray(terms, dtype=np.float64)
    if terms.ndim != 1 or np.any(np.isnan(terms)) or np.any(terms < 0):
        raise ValueError("series terms must be a 1-D array of non-negative numbers.")
    if min_blocks < 2 or fit_blocks < 2 or not (0 <= margin < 1):
        raise ValueError("need min_blocks >= 2, fit_blocks >= 2 and 0 <= margin < 1.")
    partial = np.cumsum(terms)
    blocks, ends = _block_sums(terms) if terms.size else (np.zeros(0), np.zeros(0, int))
    nan = math.nan
    if terms.size and not np.all(np.isfinite(terms)):
        return SeriesEvidence(
            name, terms, partial, blocks, ends, nan, nan, False, math.inf, math.inf
        )
    total = float(partial[-1]) if terms.size else 0.0
    if terms.size < 2**min_blocks:
        return SeriesEvidence(name, terms, partial, blocks, ends, nan, nan, None, nan, nan)
    tail_blocks = blocks[-fit_blocks:]
    if np.all(tail_blocks == 0):
        # the series has stopped: finitely many non-zero terms in the reliable range
        return SeriesEvidence(name, terms, partial, blocks, ends, 0.0, math.inf, True, 0.0, total)
    positive = tail_blocks > 0
    if tail_blocks[-1] == 0:
        # the series has stopped inside the reliable range: finitely many non-zero terms
        return SeriesEvidence(name, terms, partial, blocks, ends, 0.0, math.inf, True, 0.0, total)
    if positive.sum() < 2:
        # a single non-zero block, the last one: no trend to read (e.g. one high-frequency
        # coefficient at the truncation edge), so no claim either way
        return SeriesEvidence(name, terms, partial, blocks, ends, nan, nan, None, nan, nan)
    else:
        # Read the trend after the largest block only: penalised summaries have terms that
        # rise until lambda_j^eta ~ psi and fall after it, and a fit across that peak would
        # read the rise as divergence. A series still growing at the edge keeps the whole fit.
        peak = int(np.argmax(tail_blocks))
        if peak < tail_blocks.size - 1:
            tail_blocks = tail_blocks[peak:]
            positive = tail_blocks > 0
        x = np.arange(tail_blocks.size, dtype=np.float64)[positive]
        y = np.log(tail_blocks[positive])
        slope = float(np.polyfit(x, y, 1)[0])
        ratio = math.exp(slope)
    converges = bool(ratio <= 1.0 - margin)
    exponent = 1.0 - math.log2(ratio) if ratio > 0 else math.inf
    if converges:
        tail = float(blocks[-1]) * ratio / (1.0 - ratio) if ratio > 0 else 0.0
    else:
        tail = math.inf
    return SeriesEvidence(
        name, terms, partial, blocks, ends, ratio, exponent, converges, tail, total + tail
    )


def compatibility(
    coefficients,
    eigenvalues,
    *,
    eigenvalue_rtol: float = 1e-12,
    coefficient_rtol: float = 1e-12,
    min_blocks: int = 3,
    fit_blocks: int = 4,
    margin: float = 0.05,
    extrapolated: bool = True,
) -> Compatibility:
    """Classify ``h`` (coefficients ``h_j``) against a noise with eigenvalues ``lambda_j``.

    Args:
        coefficients: ``(K,)`` coefficients of ``f_D - f_D'`` in the noise eigenbasis.
        eigenvalues: ``(K,)`` positive eigenvalues, non-increasing.
        eigenvalue_rtol: eigenvalues ``<= eigenvalue_rtol * lambda_1`` are
            treated as numerical noise and the analysis stops before the first
            of them (pass 0 for an analytic spectrum).
        coefficient_rtol: coefficients ``<= coefficient_rtol * ||h||_2`` are
            round-off and count as 0.
        min_blocks, fit_blocks, margin: see :func:`series_evidence`.
        extrapolated: True when the coefficients truncate a functional release (the
            ``K -> infinity`` limit applies to the verdict); False for a finite vector
            declared by the user (see the module docstring).

    Returns:
        A :class:`Compatibility` with the evidence.

    Raises:
        ValueError: on shape mismatch, NaN, non-positive eigenvalues.

    Example:
        >>> j = np.arange(1, 2049.0)
        >>> compatibility(j**-2.0, j**-1.5).classification   # a - beta/2 = 1.25 > 1
        'compatible'
        >>> compatibility(j**-1.2, j**-1.5).classification   # 2a - beta = 0.9 <= 1
        'incompatible'
    """
    h = np.asarray(coefficients, dtype=np.float64).reshape(-1)
    lam = np.asarray(eigenvalues, dtype=np.float64).reshape(-1)
    if h.shape != lam.shape or h.size == 0:
        raise ValueError(
            f"coefficients ({h.size}) and eigenvalues ({lam.size}) must be non-empty and of the "
            "same length."
        )
    if not (np.all(np.isfinite(h)) and np.all(np.isfinite(lam))):
        raise ValueError("coefficients and eigenvalues must be finite.")
    if np.any(lam <= 0):
        raise ValueError("eigenvalues must be > 0.")
    floor = eigenvalue_rtol * float(lam.max())
    below = np.nonzero(lam <= floor)[0]
    k_r = int(below[0]) if below.size else lam.size
    h_r, lam_r = h[:k_r].copy(), lam[:k_r]
    scale = float(np.sqrt(np.sum(h * h)))
    h_r[np.abs(h_r) <= coefficient_rtol * scale] = 0.0
    kw = {"min_blocks": min_blocks, "fit_blocks": fit_blocks, "margin": margin}
    cm = series_evidence(h_r * h_r / lam_r, "cameron-martin", **kw)
    oc = series_evidence(np.abs(h_r) / np.sqrt(lam_r), "one-c", **kw)
    if scale == 0.0:
        cls = "compatible"
        reason = "the summaries coincide: every norm of the difference is 0."
    elif cm.converges is None or (cm.converges and oc.converges is None):
        cls = "undetermined"
        reason = (
            f"the tail of the norms cannot be judged from {k_r} reliable components (fewer than "
            f"2^{min_blocks}, or only the last dyadic block of coefficients is non-zero)."
        )
    elif not cm.converges:
        cls = "incompatible"
        reason = (
            f"the Cameron-Martin norm diverges (block ratio {cm.ratio:.3g} >= {1 - margin:g}): the "
            "release laws are mutually singular in the limit, so no noise scale gives DP "
            "(Mirshani et al. Thm 3.1)."
        )
    elif oc.converges:
        cls = "compatible"
        reason = (
            f"both norms converge (block ratios {cm.ratio:.3g} and {oc.ratio:.3g}): ICLP noise "
            "can give epsilon-DP (Lin & Reimherr Thm 4/8)."
        )
    else:
        cls = "gaussian-only"
        reason = (
            f"the Cameron-Martin norm converges (ratio {cm.ratio:.3g}) but the 1,C norm diverges "
            f"(ratio {oc.ratio:.3g}): Gaussian noise can give (epsilon, delta)-DP, ICLP noise no "
            "pure epsilon-DP (Lin & Reimherr Thm 3/7)."
        )
    return Compatibility(cls, cm, oc, int(h.size), k_r, reason, extrapolated)


def classify_pair(mechanism, data, data_prime, **kwargs) -> Compatibility | None:
    """Compatibility of ``f_D - f_D'`` with the mechanism's noise, or ``None`` when not applicable.

    Applicable when the two release laws are shifted Gaussian-process/ICLP
    noise (:func:`dpaudit.model.loss.noise_shift`); the coefficients are
    ``basis.project(f_D - f_D')`` for grid releases.

    Args:
        mechanism: the :class:`~dpaudit.Mechanism`.
        data: the dataset ``D``.
        data_prime: its neighbour ``D'``.
        **kwargs: passed to :func:`compatibility`.

    Returns:
        A :class:`Compatibility`, or ``None`` for non-functional noise.
    """
    shift = noise_shift(
        mechanism.release_distribution(data), mechanism.release_distribution(data_prime)
    )
    if shift is None or shift.source in ("independent", "multivariate"):
        return None
    kwargs.setdefault("extrapolated", is_functional_truncation(shift.source))
    return compatibility(shift.shift, shift.eigenvalues, **kwargs)


def is_functional_truncation(source: str) -> bool:
    """Whether a release of this noise source truncates a functional release.

    Only a grid release (:class:`~dpaudit.model.noise.GridNoise`: curves expanded in a basis
    whose later eigenfunctions exist but were not kept) is extrapolated as ``K`` grows; a
    bare Karhunen–Loève coefficient vector (``source == "coefficients"``) is a finite
    vector declared by the user and is the mechanism itself.

    Args:
        source: :attr:`dpaudit.model.shift.NoiseShift.source`.

    Returns:
        True for ``"grid"``, False otherwise.
    """
    return source == "grid"
