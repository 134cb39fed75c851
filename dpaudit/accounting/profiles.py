r"""Exact and numerical privacy accounting for shifted Gaussian and Laplace noise.

When the two release laws are the same independent-coordinate noise shifted by
``h = f_D - f_D'`` (:func:`dpaudit.model.loss.noise_shift`), the privacy-loss
distribution is known and the hockey-stick curve ``delta(epsilon)`` can be
computed without Monte Carlo:

* **Gaussian process / Gaussian noise** (MRS Thm 3.3 proof, Balle & Wang 2018):
  under ``P_D`` the loss is exactly ``N(mu^2/2, mu^2)`` with
  ``mu = ||h||_C / sigma = (sum_j h_j^2 / (sigma^2 lambda_j))^(1/2)``, so
  ``delta(epsilon) = Phi(mu/2 - epsilon/mu) - e^epsilon Phi(-mu/2 - epsilon/mu)``
  (:func:`dpaudit.model.noise.gaussian_delta`), the same in both directions.
* **ICLP / independent Laplace noise** (LR Lemma 1): the loss is a sum of
  independent Laplace privacy losses with parameters
  ``a_j = |h_j| / b_j = sqrt(2) |h_j| / (sigma sqrt(lambda_j))``. One such
  loss, for ``u ~ Lap(0, 1)``, is ``|u + a| - |u|``: the atom ``+a`` with mass
  ``1/2``, the atom ``-a`` with mass ``e^(-a)/2`` and density
  ``e^((l - a)/2) / 4`` on ``(-a, a)``; its curve is
  ``delta_a(epsilon) = 1 - e^((epsilon - a)/2)`` on ``[-a, a]`` (0 above ``a``).
  The supremum of the total loss is ``sum_j a_j = sqrt(2) ||h||_{1,C} / sigma``
  (attained at the release ``x = f_D``), the same in both directions.

The Laplace composition is computed numerically on a grid of spacing
``discretization`` (:func:`laplace_pld`):

* ``"pessimistic"`` (an **upper** curve): each component is discretised with
  the pessimistic *connect-the-dots* pmf of Doroshenko et al. (2022, Alg. 1),
  as ``dp_accounting``'s ``from_laplace_mechanism`` does (here in closed form,
  :func:`laplace_components`); these pmfs dominate the true pair and composition
  preserves domination. The K pmfs are
  then convolved all at once (a balanced tree of batched FFT convolutions)
  instead of sequentially, which is where the speed comes from.
* ``"optimistic"`` (a **lower** curve): each component's loss is rounded
  *down* to the grid, so the composed loss is stochastically smaller than the
  true one and ``E[(1 - e^(epsilon - L))_+]`` (increasing in ``L``) is a lower
  bound.

Discretisation error: the connect-the-dots curve is exact at grid epsilons for
one component and its composition error shrinks like ``O(discretization)``
(Doroshenko et al. Thm 4); the optimistic curve is off by at most the effect
of shifting every component's loss by ``discretization``. Round-off is covered
by adding (upper) or subtracting (lower) to ``delta`` the parts' proven bounds,
composed (:func:`laplace_components`, :func:`composed_error`;
``docs/composition.md``, "Round-off of the Laplace pmfs"), plus ``N * 2^-52``
for the FFTs, with ``N`` the length of the composed pmf, far above the round-off
observed against direct convolution in the tests.
"""

from __future__ import annotations

import dataclasses
import heapq
import math

import numpy as np
import scipy.fft

from dpaudit.accounting.calibration import gaussian_delta
from dpaudit.core.serialize import json_float

__all__ = [
    "DiscretePLD",
    "ExactAccounting",
    "compose_pmfs",
    "compose_pmfs_bounded",
    "composed_error",
    "declared_accounting",
    "fft_convolution_error",
    "fft_product_error",
    "gaussian_curve",
    "gaussian_epsilon",
    "gaussian_mu",
    "laplace_components",
    "laplace_delta",
    "laplace_parameters",
    "laplace_pld",
    "laplace_pmfs",
    "prefer_multiway",
]

_EPS = float(np.finfo(np.float64).eps)


# ------------------------------------------------------------------- Gaussian


def gaussian_mu(shift, eigenvalues, sigma: float) -> float:
    """``mu = ||h||_C / sigma``: the Gaussian loss is ``N(mu^2/2, mu^2)`` (MRS Thm 3.3 proof).

    Args:
        shift: ``(K,)`` shift ``h`` in noise coordinates.
        eigenvalues: ``(K,)`` noise eigenvalues.
        sigma: noise multiplier.

    Returns:
        ``mu``.

    Example:
        >>> gaussian_mu(np.array([3.0, 4.0]), np.array([1.0, 1.0]), 5.0)
        1.0
    """
    h = np.asarray(shift, dtype=np.float64)
    lam = np.asarray(eigenvalues, dtype=np.float64)
    return float(math.sqrt(float(np.sum(h * h / lam))) / float(sigma))


def _gaussian_delta(epsilon, mu: float) -> np.ndarray:
    eps = np.asarray(epsilon, dtype=np.float64)
    if mu == 0.0:
        return np.where(eps >= 0, 0.0, -np.expm1(eps))
    if math.isinf(mu):
        return np.ones_like(eps)
    out = np.empty_like(eps)
    neg = eps < 0
    # delta(-e) = 1 - e^(-e) (1 - delta(e)) for symmetric PLDs; gaussian_delta wants e >= 0.
    out[~neg] = gaussian_delta(eps[~neg], mu) if np.any(~neg) else out[~neg]
    if np.any(neg):
        d = gaussian_delta(-eps[neg], mu)
        out[neg] = 1.0 - np.exp(eps[neg]) * (1.0 - d)
    return out


def gaussian_curve(epsilon, mu: float) -> np.ndarray:
    """Exact hockey-stick curve of the Gaussian loss ``N(mu^2/2, mu^2)`` at every real epsilon.

    ``gaussian_delta`` for ``epsilon >= 0`` and ``1 - e^epsilon (1 - delta(-epsilon))``
    below 0 (the loss law is symmetric); ``mu = 0`` gives ``(1 - e^epsilon)_+`` and
    ``mu = inf`` gives 1.

    Args:
        epsilon: epsilon(s), any real values.
        mu: the Gaussian loss parameter (:func:`gaussian_mu`), ``>= 0``.

    Returns:
        ``delta(epsilon)`` shaped like ``epsilon``.

    Example:
        >>> round(float(gaussian_curve(1.0, 1.0)), 6)
        0.126937
    """
    return _gaussian_delta(epsilon, float(mu))


def gaussian_epsilon(delta: float, mu: float) -> float:
    """Smallest epsilon with ``gaussian_delta(epsilon, mu) <= delta`` (``inf`` for ``delta = 0``).

    Rounded up to the next float above the brentq root, so it is an upper bound.

    Args:
        delta: the target delta.
        mu: the Gaussian loss parameter (:func:`gaussian_mu`).

    Returns:
        The epsilon (``0`` when ``delta(0) <= delta``).

    Example:
        >>> round(gaussian_epsilon(0.126937, 1.0), 4)
        1.0
    """
    import scipy.optimize

    if delta <= 0:
        return 0.0 if mu == 0 else math.inf
    if mu == 0 or float(_gaussian_delta(0.0, mu)) <= delta:
        return 0.0
    hi = 1.0
    while float(_gaussian_delta(hi, mu)) > delta:
        hi *= 2.0
    root = scipy.optimize.brentq(
        lambda e: float(_gaussian_delta(e, mu)) - delta, 0.0, hi, xtol=1e-14, rtol=1e-14
    )
    eps = root
    while float(_gaussian_delta(eps, mu)) > delta:
        eps = np.nextafter(eps, np.inf) * (1 + 1e-14)
    return float(eps)


# -------------------------------------------------------------------- Laplace


def laplace_parameters(shift, eigenvalues, sigma: float) -> np.ndarray:
    """``a_j = |h_j| / b_j = sqrt(2) |h_j| / (sigma sqrt(lambda_j))``; ``sum_j a_j`` is the sup loss.

    Args:
        shift: ``(K,)`` shift ``h`` in noise coordinates.
        eigenvalues: ``(K,)`` noise eigenvalues.
        sigma: noise multiplier.

    Returns:
        ``(K,)`` parameters ``a_j``.
    """
    h = np.abs(np.asarray(shift, dtype=np.float64))
    lam = np.asarray(eigenvalues, dtype=np.float64)
    return math.sqrt(2.0) * h / (float(sigma) * np.sqrt(lam))


def laplace_delta(epsilon, a) -> np.ndarray:
    """Hockey-stick curve of one Laplace privacy loss with parameter ``a = |h| / b``.

    ``delta(epsilon) = 1 - e^epsilon`` below ``-a``, ``1 - e^((epsilon - a)/2)`` on
    ``[-a, a]`` and ``0`` above ``a``. Broadcasts over ``epsilon`` and ``a``.

    Args:
        epsilon: epsilon(s).
        a: loss parameter(s) ``a >= 0``.

    Returns:
        ``delta(epsilon)``, broadcast.

    Example:
        >>> round(float(laplace_delta(0.0, 1.0)), 6)
        0.393469
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    mid = -np.expm1(0.5 * (np.minimum(eps, a) - a))
    low = -np.expm1(np.minimum(eps, 0.0))
    return np.where(eps >= a, 0.0, np.where(eps < -a, low, mid))


@dataclasses.dataclass(frozen=True)
class DiscretePLD:
    """A privacy-loss pmf on the grid ``discretization * (offset + arange(N))``.

    Attributes:
        discretization: grid spacing.
        offset: integer index of the first grid point.
        probs: ``(N,)`` masses.
        infinity_mass: mass at ``+inf``.
        margin: round-off allowance added to (upper) or subtracted from (lower)
            every ``delta`` it reports.
        estimate: ``"pessimistic"`` (upper curve) or ``"optimistic"`` (lower curve).
    """

    discretization: float
    offset: int
    probs: np.ndarray
    infinity_mass: float
    margin: float
    estimate: str

    @property
    def losses(self) -> np.ndarray:
        """Grid values ``discretization * (offset + k)``."""
        return self.discretization * (self.offset + np.arange(self.probs.size))

    def delta(self, epsilon) -> np.ndarray:
        """``sum_l (1 - e^(epsilon - l))_+ p_l + p_inf``, with the round-off margin applied.

        Args:
            epsilon: epsilon(s).

        Returns:
            ``delta(epsilon)`` shaped like ``epsilon``.
        """
        eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
        losses = self.losses
        out = np.empty(eps.shape)
        for i, e in enumerate(eps):
            start = int(np.searchsorted(losses, e, side="right"))
            tail = losses[start:]
            out[i] = float(np.sum(-np.expm1(e - tail) * self.probs[start:])) + self.infinity_mass
        if self.estimate == "pessimistic":
            out = np.minimum(out + self.margin, 1.0)
        else:
            out = np.maximum(out - self.margin, 0.0)
        return out.reshape(np.shape(epsilon))

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon with ``self.delta(epsilon) <= delta`` (to 1e-12; ``inf`` if none).

        One pass of suffix sums finds the grid interval where the curve crosses ``delta``
        (on ``[l_j, l_{j+1})`` the curve is ``A_j - e^epsilon B_j`` with ``A_j``, ``B_j``
        the masses and ``e^-l``-weighted masses above ``l_j``) and the crossing is solved
        in closed form from the interval's sums, recomputed by pairwise summation. The
        bisection that this replaces (about 90 evaluations of the curve) is then replayed
        against that crossing without evaluating the curve, so the answer is the
        bisection's to the last bit unless a midpoint falls within round-off of the
        crossing, and one evaluation of :meth:`delta` checks it (if the check fails, the
        real bisection finishes from there).

        Args:
            delta: the target delta.

        Returns:
            The epsilon.
        """
        if self.infinity_mass + (self.margin if self.estimate == "pessimistic" else 0) > delta:
            return math.inf
        bounds = _nonzero_bounds(self.probs)
        if bounds is None:
            return 0.0
        first, last = bounds
        hi = self.discretization * (self.offset + last)
        lo = min(self.discretization * (self.offset + first), 0.0) - 1.0
        probs = self.probs[first : last + 1]
        crossing = _crossing(self.offset + first, probs, self._offset_delta(delta), self)
        if crossing is None:
            return self._bisect(delta, lo, hi)
        if crossing <= lo:
            return lo
        below, above = lo, hi
        while above - below > 1e-12 * max(1.0, abs(above)):  # the bisection, replayed
            mid = 0.5 * (below + above)
            if mid < crossing:
                below = mid
            else:
                above = mid
        if float(self.delta(above)) <= delta:
            return above
        return self._bisect(delta, below, hi)

    def _offset_delta(self, delta: float) -> float:
        """The target for the bare sum ``sum (1 - e^(epsilon - l))_+ p_l`` (no +inf, no margin)."""
        shift = self.margin if self.estimate == "pessimistic" else -self.margin
        return delta - shift - self.infinity_mass

    def _bisect(self, delta: float, lo: float, hi: float) -> float:
        """Bisection on ``[lo, hi]`` (``delta(lo) > delta``), to 1e-12 relative."""
        if float(self.delta(hi)) > delta:
            return math.inf
        while hi - lo > 1e-12 * max(1.0, abs(hi)):
            mid = 0.5 * (lo + hi)
            if float(self.delta(mid)) > delta:
                lo = mid
            else:
                hi = mid
        return hi


# The loss range of one block of :func:`_crossing`'s weights: ``e^700`` is finite.
_SPAN = 700.0


def _crossing(start: int, probs: np.ndarray, target: float, pld: DiscretePLD) -> float | None:
    """Where ``sum_i (1 - e^(e - l_i))_+ p_i`` falls to ``target``, by suffix sums.

    ``probs[i]`` is the mass at ``l_i = d (start + i)``. The suffix sums are taken from the
    top over a part that grows fourfold until it holds the crossing (the curve at the grid
    points is non-increasing), so a crossing in the upper tail costs only that tail. The
    weights ``p_i e^(r - l_i)`` are taken against a reference ``r`` per block of losses
    ``_SPAN`` wide (one block, the top loss, unless the range is wider), so they never
    overflow; a block's suffix sum carries into the next one down scaled by ``e^-_SPAN``.
    Returns ``None`` when the curve never reaches ``target`` (the caller then bisects).
    """
    d, n = pld.discretization, probs.size
    ref = d * (start + n - 1)
    size = min(n, 4096)
    while True:
        part = probs[n - size :]
        losses = d * (start + np.arange(n - size, n))
        refs, scale, weights, weight_above = _block_weights(part, losses, ref)
        mass_above = np.cumsum(part[::-1])[::-1]  # sum over i >= j
        # the curve at l_j: mass and weights strictly above l_j (the weight above l_j taken
        # to l_j's block: a factor 1 inside a block, e^-_SPAN across a block's bottom)
        above = weight_above[1:]
        if refs[0] != ref:
            above = above * np.exp(refs[:-1] - refs[1:])
        at_grid = np.append(mass_above[1:] - above / scale[:-1], 0.0)
        if size == n or at_grid[0] > target:
            break
        size = min(n, 4 * size)
    j = int(np.argmax(at_grid <= target))  # first grid point at or below the target
    if at_grid[j] > target:
        return None
    # on [l_(j-1), l_j] (or below l_0 when j = 0) the curve is A - e^(e - r) B, r = l_j's
    # reference: B the weights of l_j's block from j up plus the carry of the blocks above
    mass = float(np.sum(part[j:]))
    same = refs == refs[j]
    top = j + int(np.count_nonzero(same[j:]))
    weight = float(np.sum(weights[j:top]))
    if top < size:
        weight += float(weight_above[top] * math.exp(refs[j] - refs[top]))
    if weight <= 0 or mass - target <= 0:
        return float(losses[j])
    crossing = float(refs[j]) + math.log((mass - target) / weight)
    low = float(losses[j - 1]) if j else -math.inf
    return min(max(crossing, low), float(losses[j]))


def _block_weights(part: np.ndarray, losses: np.ndarray, ref: float):
    """References, ``e^(r - l)``, weights ``p e^(r - l)`` and their suffix sums, by blocks.

    Block ``k`` holds the losses with ``floor((ref - l) / _SPAN) = k`` and the reference
    ``r_k = ref - k _SPAN``; the suffix sum at ``i`` is over ``i' >= i``, every term taken to
    ``i``'s reference. With one block (a range under ``_SPAN``) this is the plain suffix sum
    of ``p e^(ref - l)``, bit for bit.
    """
    blocks = np.floor((ref - losses) / _SPAN)
    refs = ref - blocks * _SPAN
    scale = np.exp(refs - losses)
    weights = part * scale  # p_i e^(r - l_i) >= p_i
    if blocks[0] == 0:
        return refs, scale, weights, np.cumsum(weights[::-1])[::-1]
    suffix = np.empty_like(weights)
    # blocks are contiguous, the top one (k = 0) last: carry each block's total downwards
    edges = np.flatnonzero(np.diff(blocks)) + 1  # first index of each higher block
    carry = 0.0
    bounds = [*edges.tolist(), part.size]
    for low, high in zip([0, *edges.tolist()][::-1], bounds[::-1], strict=True):
        suffix[low:high] = np.cumsum(weights[low:high][::-1])[::-1] + carry
        carry = float(suffix[low]) * math.exp(-_SPAN)
    return refs, scale, weights, suffix


def _connect_dots_components(a: np.ndarray, discretization: float):
    """Pessimistic connect-the-dots pmfs of Laplace losses (dp_accounting's construction)."""
    lo = np.floor(-a / discretization).astype(np.int64)
    hi = np.ceil(a / discretization).astype(np.int64)
    lengths = hi - lo + 1
    comp = np.repeat(np.arange(a.size), lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    k = np.arange(comp.size) - starts[comp] + lo[comp]
    deltas = laplace_delta(k * discretization, a[comp])
    # Segment-wise running minimum is unnecessary: laplace_delta is non-increasing exactly.
    first = np.zeros(comp.size, bool)
    first[starts] = True
    last = np.zeros(comp.size, bool)
    last[starts + lengths - 1] = True
    prev = np.where(first, np.nan, np.roll(deltas, 1))
    nxt = np.where(last, np.nan, np.roll(deltas, -1))
    em1 = math.expm1(discretization)
    probs = np.empty(comp.size)
    probs[:] = ((nxt - deltas) - math.exp(discretization) * (deltas - prev)) / em1
    probs[first] = 1.0 - deltas[first] + (nxt[first] - deltas[first]) / em1
    probs[last] = (deltas[last] - prev[last]) / math.expm1(-discretization)
    probs = np.maximum(probs, 0.0)
    ends = (starts + lengths).tolist()
    return [(o, probs[b:e]) for o, b, e in zip(lo.tolist(), starts.tolist(), ends, strict=True)]


def laplace_pmfs(a, discretization: float, estimate: str) -> list[tuple[int, np.ndarray]]:
    """Per-component discrete loss laws of Laplace losses with parameters ``a_j > 0``.

    Args:
        a: ``(K,)`` positive loss parameters.
        discretization: grid spacing.
        estimate: ``"pessimistic"`` (connect-the-dots pmfs whose curves dominate the
            true ones at every epsilon) or ``"optimistic"`` (losses rounded down).

    Returns:
        ``[(offset, probs), ...]``, one per component, on the grid ``discretization * k``
        (:func:`laplace_components`, without the round-off bounds).
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    if not a.size:
        return []
    return laplace_components(a, discretization, estimate)[0]


def _rounded_down_components(a: np.ndarray, discretization: float):
    """P-laws of Laplace losses with every value rounded down to the grid."""
    out = []
    for aj in a:
        lo = math.floor(-aj / discretization)
        hi = math.floor(aj / discretization)
        k = np.arange(lo, hi + 1)
        left = np.maximum(k * discretization, -aj)
        right = np.minimum((k + 1) * discretization, aj)
        # continuous part: density e^((l - a)/2)/4 on (-a, a)
        cont = 0.5 * (np.exp(0.5 * (right - aj)) - np.exp(0.5 * (left - aj)))
        probs = np.maximum(cont, 0.0)
        probs[-1] += 0.5  # atom at +a
        probs[0] += 0.5 * math.exp(-aj)  # atom at -a
        out.append((int(lo), probs))
    return out


# Round-off of the per-part Laplace pmfs (docs/composition.md, "Round-off of the Laplace
# pmfs", has the proofs). Each bound is on the sup over every real epsilon of the distance
# between the curve of the computed pmf and that of the exact pmf (the L1 distance of the two
# pmfs bounds it); composition adds these distances (times the other parts' masses).
# Closed forms: a fixed 64 ulp (four edge masses to a few ulp absolute, interior masses to a
# few ulp relative) plus ``a / 4`` ulp for the rounding of the grid point ``k d`` inside
# ``e^((k d - a)/2)`` (twice the derived ``a / 8``); the rounded-down pmfs another ``a / 4``
# ulp for an atom that a float ``floor(a / d)`` may place ``2^-52 a`` above its loss.
_CLOSED_FORM_ULPS = 64.0
# Closed forms need at least four grid points and grid indices below 2^26 (_grid_minus).
_CLOSED_FORM_MAX_POINTS = 2.0**25


def _grid_minus(k: np.ndarray, d: float, x: np.ndarray) -> np.ndarray:
    """``k d - x`` for integers ``|k| < 2^26``, to about 2 ulp of the exact difference.

    ``k d`` is split exactly into ``p + err`` (Dekker's product with Veltkamp's split of
    ``d``: ``k`` has at most 26 significant bits, so ``k d_hi`` and ``k d_lo`` are exact),
    and ``p - x`` is exact by Sterbenz's lemma when ``x`` is within a factor 2 of ``p``
    (otherwise it rounds once). The masses at the edges of a Laplace pmf depend on
    ``k d - x`` with weight ``1 / d``, so a plain ``k * d - x`` (absolute error
    ``2^-53 |x|``) would cost ``2^-53 |x| / d`` of mass per edge point.
    """
    p = k * d
    c = 134217729.0 * d  # 2^27 + 1
    d_hi = c - (c - d)
    err = (k * d_hi - p) + k * (d - d_hi)
    return (p - x) + err


def _laplace_grid(a: np.ndarray, d: float, *, upper: bool):
    """Grid index ranges of Laplace pmfs with the edge conditions checked exactly.

    Upper (connect-the-dots): ``lo d <= -a < (lo + 1) d`` and ``(hi - 1) d < a <= hi d``
    exactly. Lower (rounded down): ``floor(-+a / d)`` in floating point, as the second
    route: when ``a / d`` rounds to an integer ``k`` the atom at ``-+a`` may sit up to
    ``2^-52 a`` below ``k d`` and moves up by that much, which moves the curve by less
    than ``2^-52 a`` (inside the charge of :func:`_closed_form_errors`); the exact test
    would instead move it down by a whole grid step.
    """
    if not upper:
        return np.floor(-a / d), np.floor(a / d)
    lo = np.floor(-a / d)
    lo -= _grid_minus(lo, d, -a) > 0
    hi = np.ceil(a / d)
    hi += _grid_minus(hi, d, a) < 0
    return lo, hi


def _laplace_upper_pmfs(a: np.ndarray, d: float) -> list:
    r"""Doroshenko et al.'s connect-the-dots pmfs of Laplace losses, in closed form.

    Needs ``a >= 2 d`` (at least four grid points). With ``g_k = e^{(k d - a)/2}`` the
    second differences of the curve simplify to ``g_k tanh(d/4)`` inside, and at the two
    ends (``s = ((lo+1) d + a)/2 in (0, d/2]``, ``t = ((hi-1) d - a)/2 in [-d/2, 0)``,
    ``h = e^{d/2} - 1``) to ``e^{(lo+1) d} (1 - e^{-s}) / (e^d - 1)``,
    ``g_{lo+1} (e^{d/2} h - (e^s - 1)) / (e^d - 1)``,
    ``(e^t - 1 + e^{t + d/2} h) / (e^d - 1)`` and ``(1 - e^t) / (1 - e^{-d})``. Evaluated
    this way every interior mass has a relative error of a few ulp (plus the rounding of
    ``k d``) and every edge mass an absolute error of a few ulp, instead of the
    ``2^-52 / d`` per point that second differences of the curve cost.
    """
    lo, hi = _laplace_grid(a, d, upper=True)
    n = (hi - lo + 1).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(n)[:-1]))
    comp = np.repeat(np.arange(a.size), n)
    k = lo[comp] + (np.arange(comp.size) - starts[comp])
    probs = np.exp(0.5 * (k * d - a[comp])) * math.tanh(0.25 * d)
    em1, h = math.expm1(d), math.expm1(0.5 * d)
    s = 0.5 * _grid_minus(lo + 1, d, -a)
    t = 0.5 * _grid_minus(hi - 1, d, a)
    probs[starts] = -np.exp((lo + 1) * d) * np.expm1(-s) / em1
    g1 = np.exp(0.5 * ((lo + 1) * d - a))
    probs[starts + 1] = g1 * (math.exp(0.5 * d) * h - np.expm1(s)) / em1
    probs[starts + n - 2] = (np.expm1(t) + np.exp(t + 0.5 * d) * h) / em1
    probs[starts + n - 1] = -np.expm1(t) / -math.expm1(-d)
    np.maximum(probs, 0.0, out=probs)
    return [(int(lo[j]), probs[starts[j] : starts[j] + n[j]]) for j in range(a.size)]


def _laplace_lower_pmfs(a: np.ndarray, d: float) -> list:
    """Laplace losses rounded down to the grid, each bin's mass in closed form.

    Needs ``a >= 2 d``. An interior bin ``[k d, (k+1) d)`` holds
    ``e^{(k d - a)/2} expm1(d/2) / 2`` (its width is ``d`` exactly, not the difference
    of two rounded grid points, whose error ``2^-53 |k d|`` would be relative
    ``2^-53 |k|`` of the mass), the end bins ``[-a, (lo+1) d)`` and ``[hi d, a)`` the
    same with widths ``k d - -+a`` from :func:`_grid_minus`; the atoms ``1/2`` at ``a``
    and ``e^{-a}/2`` at ``-a`` go to the bins holding them.
    """
    lo, hi = _laplace_grid(a, d, upper=False)
    n = (hi - lo + 1).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(n)[:-1]))
    comp = np.repeat(np.arange(a.size), n)
    k = lo[comp] + (np.arange(comp.size) - starts[comp])
    probs = 0.5 * np.exp(0.5 * (k * d - a[comp])) * math.expm1(0.5 * d)
    first = 0.5 * np.maximum(_grid_minus(lo + 1, d, -a), 0.0)
    probs[starts] = 0.5 * np.exp(first - a)  # the atom e^-a / 2 and the mass above it
    last = -0.5 * _grid_minus(hi, d, a)
    top = np.exp(0.5 * (hi * d - a)) * np.expm1(np.maximum(last, 0.0))
    probs[starts + n - 1] = 0.5 * top + 0.5
    return [(int(lo[j]), probs[starts[j] : starts[j] + n[j]]) for j in range(a.size)]


def _closed_form_errors(a: np.ndarray, d: float, *, upper: bool) -> np.ndarray:
    """Round-off bounds of the closed-form pmfs (curve distance, see the constants above)."""
    ulps = _CLOSED_FORM_ULPS + (0.25 if upper else 0.5) * a
    return ulps * _EPS


def _second_difference_errors(a: np.ndarray, d: float, *, upper: bool) -> np.ndarray:
    """Round-off bounds of the pmfs built from curve values (``laplace_delta``, bin edges).

    Every curve value ``delta_k = -expm1(phi_k)`` is off by at most
    ``rho = 2^-52 (2 delta_max + a + d)``: 2 ulp of ``delta_k <= delta_max =
    min(1, a + d)`` for ``expm1``, plus the rounding of ``k d`` and of ``k d - a``
    (``2^-54 (3 a + 2 d)``) times the slope ``e^phi <= 1``. Upper (connect-the-dots):
    the exact formula applied to these values moves each of the ``N`` masses by at most
    ``2 rho (1 + e^d) / (e^d - 1)``; evaluating it rounds each mass by at most
    ``2^-52 (2 (|u_k| + e^d |u_(k-1)|) / (e^d - 1) + 1.5 p_k)`` with ``u_k`` the
    differences of consecutive values, which sum to at most ``delta_max``; and
    ``ceil(a / d) d`` may fall ``2^-53 a`` short of ``a`` (``<= 2^-54 a`` of curve
    dropped). Lower: each bin is half a difference of two such terms, ``N rho``, and a
    misplaced atom moves up by at most ``2^-52 a``.
    """
    points = np.ceil(a / d) - np.floor(-a / d) + 1
    rho = (2 * np.minimum(1.0, a + d) + a + d) * _EPS
    if not upper:
        return points * rho + (a + 1.0) * _EPS
    growth = (1 + math.exp(d)) / math.expm1(d)
    values = points * 2 * rho * growth
    formula = (2 * growth * np.minimum(1.0, a + d) + 2) * _EPS
    return values + formula + (a + 1.0) * _EPS


def laplace_components(a, discretization: float, estimate: str):
    """Per-part discrete loss laws of Laplace losses ``a_j > 0`` and their round-off bounds.

    Closed forms (:func:`_laplace_upper_pmfs`, :func:`_laplace_lower_pmfs`) where
    ``2 d <= a < 2^25 d``; elsewhere the pmfs are built from curve values (second
    differences, or bin edges) with the larger bound those cost.

    Args:
        a: ``(K,)`` positive loss parameters.
        discretization: grid spacing ``d``.
        estimate: ``"pessimistic"`` (connect-the-dots pmfs whose curves dominate the
            true ones at every epsilon) or ``"optimistic"`` (losses rounded down).

    Returns:
        ``([(offset, probs), ...], errors)``: one pmf per part, on the grid
        ``discretization * k``, in the order of ``a``, and ``(K,)`` bounds on the distance
        between each computed pmf's curve and the exact pmf's, at every real epsilon.
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    d = float(discretization)
    upper = estimate == "pessimistic"
    closed = (a >= 2 * d) & (a / d < _CLOSED_FORM_MAX_POINTS)
    errors = np.where(
        closed,
        _closed_form_errors(a, d, upper=upper),
        _second_difference_errors(a, d, upper=upper),
    )
    pmfs: list = [None] * a.size
    build = _laplace_upper_pmfs if upper else _laplace_lower_pmfs
    rest = _connect_dots_components if upper else _rounded_down_components
    for mask, make in ((closed, build), (~closed, rest)):
        idx = np.flatnonzero(mask)
        if idx.size:
            for i, pmf in zip(idx.tolist(), make(a[idx], d), strict=True):
                pmfs[i] = pmf
    return pmfs, errors


def composed_error(errors) -> float:
    """The composed curve's round-off from its parts' (``sum e_j prod_(i != j) (1 + e_i)``).

    Fixing all parts but one, the composed curve is the average of that part's curve at
    shifted epsilons (the others' masses summing to at most ``prod (1 + e_i)``), so each
    part's error adds at most ``e_j`` times that. Bounded by ``S (1 + 2 S)`` for
    ``S = sum e_j <= 1`` (``e^S <= 1 + 2 S``).

    Args:
        errors: the parts' round-off bounds (:func:`laplace_components`).

    Returns:
        The bound.
    """
    total = float(np.sum(errors))
    return min(1.0, total * (1.0 + 2.0 * total))


# The FFT error model (docs/composition.md, "Round-off of the convolution trees"): a
# computed real FFT of length n (forward or inverse, unscaled) is within
# FFT_ULPS_PER_LEVEL * log2(n) * u / (1 - that) of the exact transform in L2, relative to
# the exact transform's L2 norm (Higham's Theorem 24.2 gives (1 + 4 sqrt 2) u ~ 6.7 u per
# binary level for radix 2 with twiddles within u; doubled for pocketfft's radix-3/4/5
# passes and twiddles). A complex product is within COMPLEX_PRODUCT_ULPS * u relative.
FFT_ULPS_PER_LEVEL = 16.0
COMPLEX_PRODUCT_ULPS = 3.0
_UNIT = _EPS / 2  # unit round-off u = 2^-53


def fft_convolution_error(l1_a, l2_a, l1_b, l2_b, n_fft: int, support):
    """Bound on the L1 error of ``irfft(rfft(a, n) * rfft(b, n), n)[:support]``.

    For float operands ``a``, ``b`` (the exact convolution is of these very operands) with
    ``n >= support`` and the convolution supported on ``support`` points; holds after
    negative outputs are clipped to 0 and outputs beyond the support set to 0 (both move
    every output towards its exact value). Vectorised over rows.

    Args:
        l1_a, l2_a: ``||a||_1`` and ``||a||_2`` (computed; the factor 1.01 covers their
            rounding).
        l1_b, l2_b: the same for ``b``.
        n_fft: the transform length.
        support: the number of output points kept (the exact convolution's support).

    Returns:
        The bound (``sqrt(support)`` times a bound on the L2 error).
    """
    levels = FFT_ULPS_PER_LEVEL * math.log2(max(2, n_fft)) * _UNIT
    g = levels / (1.0 - levels)
    g_inverse = g + _UNIT * (1.0 + g)  # irfft's scaling by 1/n: one more rounding
    root_n = math.sqrt(n_fft)
    err_a, err_b = g * root_n * l2_a, g * root_n * l2_b  # ||E_a||_2, ||E_b||_2
    spectrum_b = root_n * l2_b + err_b  # ||fl(F b)||_2 (Parseval)
    product = (
        err_a * l1_b  # E_a (F b): ||F b||_inf <= ||b||_1
        + l1_a * err_b  # (F a) E_b
        + err_a * err_b
        + COMPLEX_PRODUCT_ULPS * _UNIT * (l1_a + err_a) * spectrum_b  # rounding the product
    )
    exact = np.minimum(l1_a * l2_b, l2_a * l1_b)  # ||a * b||_2 (Young)
    l2_error = product / root_n + g_inverse * (exact + product / root_n)
    return 1.01 * np.sqrt(support) * l2_error


def _prefix_products(x: list) -> list:
    """``prod_(i<j) x_i`` for every ``j`` (1 for ``j = 0``)."""
    out = [1.0]
    for value in x[:-1]:
        out.append(out[-1] * value)
    return out


def _suffix_products(x: list) -> list:
    """``prod_(i>j) x_i`` for every ``j`` (1 for the last)."""
    return _prefix_products(x[::-1])[::-1]


def fft_product_error(l1, l2, n_fft: int, support: int) -> float:
    """Bound on the L1 error of ``irfft(prod_j rfft(p_j, n), n)[:support]`` for ``m >= 2`` rows.

    The ``m``-way generalisation of :func:`fft_convolution_error` (docs/composition.md,
    "Many factors in one product"): with ``e_j = g sqrt(n) ||p_j||_2`` the spectra's errors
    and ``m - 1`` complex products (any order) within ``3 u`` each, the computed product
    of spectra is within ``T + gamma M`` of the exact one in L2, where
    ``T = sum_j e_j prod_(i<j) (||p_i||_1 + e_i) prod_(i>j) ||p_i||_1`` (one factor
    replaced at a time; ``||F x||_inf <= ||x||_1``), ``gamma = 3 (m - 1) u / (1 - 3 (m - 1) u)``
    and ``M = min_j (sqrt(n) ||p_j||_2 + e_j) prod_(i != j) (||p_i||_1 + e_i)`` bounds the
    computed spectra's product in L2. For ``m = 2`` this is :func:`fft_convolution_error`'s
    bound term by term. Holds after negative outputs and outputs beyond the support are
    set to 0, for ``n >= support``.

    Args:
        l1: ``(m,)`` L1 norms of the rows (computed; the factor 1.01 covers their rounding).
        l2: ``(m,)`` L2 norms of the rows.
        n_fft: the transform length.
        support: the number of output points kept (the exact product's support).

    Returns:
        The bound (``sqrt(support)`` times a bound on the L2 error).
    """
    l1 = [float(x) for x in l1]  # few rows: plain floats cost less than numpy calls
    l2 = [float(x) for x in l2]
    m = len(l1)
    levels = FFT_ULPS_PER_LEVEL * math.log2(max(2, n_fft)) * _UNIT
    g = levels / (1.0 - levels)
    g_inverse = g + _UNIT * (1.0 + g)  # irfft's scaling by 1/n: one more rounding
    root_n = math.sqrt(n_fft)
    err = [g * root_n * x for x in l2]  # ||E_j||_2
    sup = [x + e for x, e in zip(l1, err, strict=True)]  # ||fl(F p_j)||_inf
    sup_before, sup_after = _prefix_products(sup), _suffix_products(sup)
    l1_before, l1_after = _prefix_products(l1), _suffix_products(l1)
    spectra = sum(e * b * f for e, b, f in zip(err, sup_before, l1_after, strict=True))
    t = COMPLEX_PRODUCT_ULPS * (m - 1) * _UNIT
    spectrum = min(
        (root_n * x + e) * b * f for x, e, b, f in zip(l2, err, sup_before, sup_after, strict=True)
    )
    product = spectra + t / (1.0 - t) * spectrum
    # gradual underflow: a complex product below 2^-1022 is off by <= 2^-1072 absolutely, then
    # multiplied by the later factors (<= sup each); over sqrt(n) coefficients in L2
    product += (m - 1) * 2.0**-1072 * root_n * max(1.0, math.prod(sup))
    # ||p_1 * ... * p_m||_2 <= ||p_j||_2 prod_(i != j) ||p_i||_1 (Young)
    exact = min(x * b * f for x, b, f in zip(l2, l1_before, l1_after, strict=True))
    l2_error = product / root_n + g_inverse * (exact + product / root_n)
    return 1.01 * math.sqrt(support) * l2_error


def _direct_convolution_error(l1_a, l1_b, terms: int):
    """L1 error of a direct convolution, at most ``terms`` products per output.

    Each output is a dot product of at most ``terms`` products: within
    ``gamma_(terms+1) = (terms + 1) u / (1 - (terms + 1) u)`` of the sum of absolute
    products (Higham, eq. 3.5); the absolute products sum to ``||a||_1 ||b||_1``.
    """
    t = (terms + 1) * _UNIT
    return 1.01 * t / (1.0 - t) * l1_a * l1_b


def _tree_level(rows: np.ndarray, errs: np.ndarray, pair: np.ndarray):
    """One level of :func:`_batched_tree`: the pairwise products and their L1 error bounds."""
    out_len = int(pair.max())
    length = rows.shape[1]
    l1 = np.sum(np.abs(rows), axis=1)
    l1_a, l1_b, e_a, e_b = l1[0::2], l1[1::2], errs[0::2], errs[1::2]
    # the operands are off by e_a, e_b from the exact ones: |a'b' - ab| <= e_a |b'| + |a| e_b
    propagated = e_a * l1_b + (l1_a + e_a) * e_b
    if length <= 16:
        a, b = rows[0::2], rows[1::2]
        out = np.zeros((a.shape[0], 2 * length - 1))
        for s in range(length):
            out[:, s : s + length] += a[:, s : s + 1] * b
        out = out[:, :out_len]
        new = _direct_convolution_error(l1_a, l1_b, length)
    else:
        n_fft = scipy.fft.next_fast_len(out_len, real=True)
        spec = scipy.fft.rfft(rows, n=n_fft, axis=1)
        out = scipy.fft.irfft(spec[0::2] * spec[1::2], n=n_fft, axis=1)[:, :out_len]
        np.maximum(out, 0.0, out=out)
        for r in np.flatnonzero(pair < out_len).tolist():  # rows are sorted: few
            out[r, pair[r] :] = 0.0
        l2 = np.sqrt(np.einsum("ij,ij->i", rows, rows))
        new = fft_convolution_error(l1_a, l2[0::2], l1_b, l2[1::2], n_fft, pair)
    return out, propagated + new


def _batched_tree(rows: np.ndarray, offsets: np.ndarray, lengths: np.ndarray):
    """Convolve all rows of ``rows (B, W)`` together by a balanced tree of batched FFTs.

    ``lengths[i]`` is row ``i``'s support (the rest of the row is zero). Every product is
    cut to its exact support ``n_1 + n_2 - 1``: the FFT's round-off beyond it is set to the
    exact value, zero, so no padding carries round-off into longer and longer supports.

    Returns:
        ``(offset, probs, error)`` of the convolution, ``probs`` of its exact support
        length, ``error`` a bound on its L1 distance to the exact convolution of the rows.
    """
    errs = np.zeros(rows.shape[0])
    while rows.shape[0] > 1:
        if rows.shape[0] % 2:
            identity = np.zeros((1, rows.shape[1]))
            identity[0, 0] = 1.0
            rows = np.vstack([rows, identity])
            offsets = np.append(offsets, 0)
            lengths = np.append(lengths, 1)
            errs = np.append(errs, 0.0)
        pair = lengths[0::2] + lengths[1::2] - 1
        rows, errs = _tree_level(rows, errs, pair)
        offsets, lengths = offsets[0::2] + offsets[1::2], pair
    return int(offsets[0]), rows[0, : int(lengths[0])], float(errs[0])


# Cost model of one length class (in transformed points; one numpy/scipy round trip of a tree
# level or of a multi-way product costs about as much as transforming this many points).
_CALL_POINTS = 9000.0


def _tree_points(rows: int, width: int) -> float:
    """Points transformed (plus call overheads) by :func:`_batched_tree`, about.

    ``rows`` rows of at most ``width`` points: each level transforms every row once and half
    of them back, at the length of its longest product (at most ``2 width - 1``).
    """
    cost = 0.0
    while rows > 1:
        rows += rows % 2
        if width > 16:
            cost += 1.5 * rows * scipy.fft.next_fast_len(2 * width - 1, real=True)
        cost += _CALL_POINTS
        rows, width = rows // 2, 2 * width - 1
    return cost


def prefer_multiway(lengths) -> bool:
    """Whether one multi-way product (:func:`_multiway_product`) is cheaper than the tree.

    The tree transforms each row about twice per level at twice its length; the multi-way
    product transforms every row once, at the length of the whole product, in two calls.
    Few rows of similar lengths (small composition sizes) favour the multi-way product;
    many rows (each padded to the whole product's length) favour the tree.

    Args:
        lengths: ``(B,)`` the rows' supports, ``B >= 2``.

    Returns:
        ``True`` for the multi-way product.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    support = int(lengths.sum()) - lengths.size + 1
    multiway = (lengths.size + 1) * scipy.fft.next_fast_len(support, real=True) + _CALL_POINTS
    return bool(multiway < _tree_points(lengths.size, int(lengths.max())))


def _multiway_product(rows: np.ndarray, offsets: np.ndarray, lengths: np.ndarray):
    """Convolve all rows of ``rows (B, W)`` together by one batched FFT and a product of spectra.

    Every row is transformed at the length of the whole product, the ``B`` spectra are
    multiplied, and one inverse transform gives the product, cut to its exact support
    (``sum n_i - B + 1``) with negative outputs set to 0; the bound is
    :func:`fft_product_error`.

    Returns:
        ``(offset, probs, error)`` as :func:`_batched_tree`.
    """
    support = int(lengths.sum()) - lengths.size + 1
    n_fft = scipy.fft.next_fast_len(support, real=True)
    spectra = scipy.fft.rfft(rows, n=n_fft, axis=1)
    probs = scipy.fft.irfft(np.prod(spectra, axis=0), n=n_fft)[:support]
    np.maximum(probs, 0.0, out=probs)
    l1 = np.sum(np.abs(rows), axis=1)
    l2 = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    return int(offsets.sum()), probs, fft_product_error(l1, l2, n_fft, support)


def _fft_convolve(p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """``scipy.signal.fftconvolve(p1, p2)`` for 1-D real inputs, bit for bit, without its overhead."""
    size = p1.size + p2.size - 1
    n_fft = scipy.fft.next_fast_len(size, real=True)
    spectrum = scipy.fft.rfft(p1, n=n_fft)
    spectrum *= scipy.fft.rfft(p2, n=n_fft)
    return scipy.fft.irfft(spectrum, n=n_fft)[:size]


def _nonzero_bounds(probs: np.ndarray) -> tuple[int, int] | None:
    """First and last index of a non-zero entry (``None`` if all are zero).

    The same indices as ``np.flatnonzero(probs)[[0, -1]]``, found with two boolean scans
    instead of an index array of the whole support (pmfs of 10^5 points).
    """
    nonzero = probs != 0
    first = int(np.argmax(nonzero))
    if not nonzero[first]:
        return None
    return first, probs.size - 1 - int(np.argmax(nonzero[::-1]))


def compose_pmfs(components) -> tuple[int, np.ndarray]:
    """Convolution of many pmfs on a common integer grid (:func:`compose_pmfs_bounded`).

    Args:
        components: a sequence of ``(offset, probs)``: ``probs[i]`` is the mass
            at grid index ``offset + i``.

    Returns:
        ``(offset, probs)`` of the convolution (``(0, [1.0])`` for no components; for one
        component its ``probs`` without trailing zeros, a view of the input).
    """
    offset, probs, _ = compose_pmfs_bounded(components)
    return offset, probs


def compose_pmfs_bounded(components) -> tuple[int, np.ndarray, float]:
    """Convolution of many pmfs on a common integer grid, with its round-off bound.

    Per length class (``ceil(log2 n)``) a batched FFT tree or, where :func:`prefer_multiway`
    says it is cheaper, one multi-way FFT product; then a heap that always convolves the
    two shortest parts (small ones directly, large ones by FFT). Each product's error
    (:func:`fft_convolution_error`, :func:`fft_product_error`, from its operands' L1 and L2
    norms) is added to the operands' errors carried through it.

    Args:
        components: a sequence of ``(offset, probs)``: ``probs[i]`` is the mass
            at grid index ``offset + i``.

    Returns:
        ``(offset, probs, error)``: the convolution as for :func:`compose_pmfs`, and a
        bound on its L1 distance to the exact convolution of the given pmfs.
    """
    if not components:
        return 0, np.ones(1), 0.0
    if len(components) == 1:  # what the tree below returns for one pmf: a view, not a copy
        offset, probs = components[0]
        probs = np.asarray(probs, dtype=float)
        bounds = _nonzero_bounds(probs)
        end = bounds[1] + 1 if bounds is not None else 1
        return int(offset), probs[:end], 0.0
    buckets: dict[int, list] = {}
    for offset, probs in components:
        buckets.setdefault(max(0, math.ceil(math.log2(probs.size))), []).append((offset, probs))
    parts = []
    for items in buckets.values():
        items.sort(key=lambda item: item[1].size)  # pairs of similar lengths
        lengths = np.array([p.size for _, p in items], dtype=np.int64)
        rows = np.zeros((len(items), int(lengths[-1])))
        for i, (_, p) in enumerate(items):
            rows[i, : p.size] = p
        offsets = np.array([o for o, _ in items], dtype=np.int64)
        many = len(items) > 1 and prefer_multiway(lengths)
        off, probs, error = (_multiway_product if many else _batched_tree)(rows, offsets, lengths)
        bounds = _nonzero_bounds(probs)
        probs = probs[: bounds[1] + 1] if bounds is not None else probs[:1]
        parts.append((probs.size, len(parts), off, probs, error))  # index breaks ties
    return _heap_product(parts)


def _pair_product(first: tuple, second: tuple) -> tuple[int, np.ndarray, float]:
    """One product of the heap: two ``(size, tie, offset, probs, error)`` nodes."""
    n1, _, o1, p1, e1 = first
    n2, _, o2, p2, e2 = second
    l1_1, l1_2 = float(np.sum(np.abs(p1))), float(np.sum(np.abs(p2)))
    error = e1 * l1_2 + (l1_1 + e1) * e2
    if min(n1, n2) <= 64:
        p = np.convolve(p1, p2)
        error += _direct_convolution_error(l1_1, l1_2, min(n1, n2))
    else:
        p = np.maximum(_fft_convolve(p1, p2), 0.0)
        n_fft = scipy.fft.next_fast_len(p.size, real=True)
        l2_1, l2_2 = math.sqrt(float(p1 @ p1)), math.sqrt(float(p2 @ p2))
        error += float(fft_convolution_error(l1_1, l2_1, l1_2, l2_2, n_fft, p.size))
    return o1 + o2, p, error


def _heap_product(parts: list) -> tuple[int, np.ndarray, float]:
    """Convolve ``(size, tie, offset, probs, error)`` nodes, the shortest first.

    (Multi-way products here, a node joining the two shortest while a cost model said so,
    measured slower at K = 100 and 1000 Laplace parts: the heap's nodes differ in length.)
    """
    heapq.heapify(parts)
    tie = len(parts)
    while len(parts) > 1:
        offset, p, error = _pair_product(heapq.heappop(parts), heapq.heappop(parts))
        heapq.heappush(parts, (p.size, tie, offset, p, error))
        tie += 1
    _, _, offset, probs, error = parts[0]
    return offset, probs, error


def laplace_pld(a, discretization: float = 1e-4, *, estimate: str = "pessimistic") -> DiscretePLD:
    """Numerical PLD of a sum of independent Laplace privacy losses with parameters ``a_j``.

    Args:
        a: ``(K,)`` non-negative parameters ``|h_j| / b_j`` (:func:`laplace_parameters`).
        discretization: grid spacing of the losses (dp_accounting's
            ``value_discretization_interval``).
        estimate: ``"pessimistic"`` (connect-the-dots: an upper curve, equal to
            dp_accounting's composed ``from_laplace_mechanism`` PLDs) or
            ``"optimistic"`` (losses rounded down: a lower curve).

    Raises:
        ValueError: for negative/non-finite ``a``, a non-positive
            discretization or an unknown estimate.

    Example:
        >>> pld = laplace_pld(np.array([0.5, 0.5]), 1e-3)
        >>> abs(float(pld.delta(1.0))) < 1e-9  # sup loss is exactly 1
        True
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("Laplace loss parameters a_j must be finite and >= 0.")
    if not (math.isfinite(discretization) and discretization > 0):
        raise ValueError(f"discretization must be a finite number > 0, got {discretization!r}.")
    if estimate not in ("pessimistic", "optimistic"):
        raise ValueError(f"estimate must be 'pessimistic' or 'optimistic', got {estimate!r}.")
    a = a[a > 0]
    components, errors = laplace_components(a, discretization, estimate)
    offset, probs, fft_error = compose_pmfs_bounded(components)
    return DiscretePLD(
        discretization=float(discretization),
        offset=offset,
        probs=probs,
        infinity_mass=0.0,
        margin=composed_error(errors) + fft_error,
        estimate=estimate,
    )


# ------------------------------------------------------------------- records


@dataclasses.dataclass(frozen=True)
class ExactAccounting:
    """The exact (Gaussian) or numerical (Laplace, composed) privacy curve of a pair of laws.

    Single shifted-noise pairs have the same curve in both directions (their loss
    laws are symmetric). Compositions built by :func:`dpaudit.accounting.composition.compose_accounting`
    may include asymmetric components (subsampling); they then carry the curves of
    the reverse direction too, and every bound is the maximum over the two directions.

    Attributes:
        family: ``"gaussian"``, ``"laplace"``, ``"composed"`` or ``"singular"``
            (mutually singular laws: ``delta(epsilon) = 1`` for every epsilon).
            ``"laplace"`` means every component has a finite supremum known
            exactly, which is ``sup_loss``; ``"composed"`` mixes in components
            (Gaussian, supremum-only) for which the curve is the only evidence.
        sup_loss: ``ess sup L``: ``sum_j a_j`` for Laplace, ``inf`` with any
            Gaussian component (``0`` when the summaries coincide); the maximum
            over the two directions.
        mu: ``||h||_C / sigma`` of the (combined) Gaussian part, else ``None``.
        laplace_parameters: ``a_j`` of the Laplace components, else ``None``.
        upper_pld, lower_pld: the numerical :class:`DiscretePLD` curves.
        reverse_upper_pld, reverse_lower_pld: the curves of the reverse direction
            (``None`` when both directions share ``upper_pld``/``lower_pld``).
        components: the ``(component, count)`` pairs of a composition, else ``None``.
        sup_loss_error: bound on the error of ``sup_loss`` from rounding (the laws'
            parameters and the sum; :func:`dpaudit.core.roundoff.shift_errors`), or ``None``
            when the parameters behind it are not known.
        mu_error: the same for ``mu``, or ``None``.
    """

    family: str
    sup_loss: float
    mu: float | None = None
    laplace_parameters: np.ndarray | None = None
    upper_pld: DiscretePLD | None = None
    lower_pld: DiscretePLD | None = None
    reverse_upper_pld: DiscretePLD | None = None
    reverse_lower_pld: DiscretePLD | None = None
    components: tuple | None = None
    sup_loss_error: float | None = None
    mu_error: float | None = None

    def delta_upper(self, epsilon) -> np.ndarray:
        """An upper bound on ``delta(epsilon)`` (exact for Gaussian).

        Args:
            epsilon: epsilon(s).

        Returns:
            The bound, shaped like ``epsilon``.
        """
        return self._delta(epsilon, upper=True)

    def delta_lower(self, epsilon) -> np.ndarray:
        """A lower bound on ``delta(epsilon)`` (exact for Gaussian).

        Args:
            epsilon: as in :meth:`delta_upper`.

        Returns:
            The bound, shaped like ``epsilon``.
        """
        return self._delta(epsilon, upper=False)

    def _plds(self, *, upper: bool) -> list[DiscretePLD]:
        forward = self.upper_pld if upper else self.lower_pld
        reverse = self.reverse_upper_pld if upper else self.reverse_lower_pld
        return [forward] if reverse is None else [forward, reverse]

    def _delta(self, epsilon, *, upper: bool) -> np.ndarray:
        eps = np.asarray(epsilon, dtype=np.float64)
        if self.family == "singular":
            return np.ones_like(eps)
        if self.family == "gaussian":
            return _gaussian_delta(eps, float(self.mu))
        curve = np.max([pld.delta(eps) for pld in self._plds(upper=upper)], axis=0)
        exact_zero = eps >= self.sup_loss
        return np.where(exact_zero, 0.0, curve)

    def epsilon_upper(self, delta: float) -> float:
        """An upper bound on ``epsilon(delta)``, the smallest epsilon with ``delta(epsilon) <= delta``.

        Args:
            delta: the target delta.

        Returns:
            The bound (``inf`` for singular laws).
        """
        return self._epsilon_bound(delta, upper=True)

    def epsilon_lower(self, delta: float) -> float:
        """A lower bound on ``epsilon(delta)``: :meth:`epsilon_upper` from the lower distribution.

        Args:
            delta: as in :meth:`epsilon_upper`.

        Returns:
            The bound (``inf`` for singular laws).
        """
        return self._epsilon_bound(delta, upper=False)

    def _epsilon_bound(self, delta: float, *, upper: bool) -> float:
        if self.family == "singular":
            return math.inf
        if self.family == "gaussian":
            return gaussian_epsilon(delta, float(self.mu))
        if delta <= 0:
            return self.sup_loss
        first, *others = self._plds(upper=upper)
        best = first.epsilon(delta)
        for pld in others:
            # A direction whose curve is already <= delta at ``best`` needs no pass of its own:
            # ``best`` is an epsilon for both (checked by one curve evaluation instead of the
            # suffix sums and check of ``epsilon``); its own answer could only be ``best`` or a
            # bisection step above it. The remove direction, first, is the larger for DP-SGD.
            if not (math.isfinite(best) and float(pld.delta(best)) <= delta):
                best = max(best, pld.epsilon(delta))
        return min(self.sup_loss, best)

    def summary(self) -> dict:
        """JSON-able description.

        Returns:
            ``{family, sup_loss[, mu][, n_components, discretization][, symmetric]}``.
        """
        out = {"family": self.family, "sup_loss": json_float(self.sup_loss)}
        if self.mu is not None:
            out["mu"] = float(self.mu)
        if self.components is not None:
            counts = getattr(self.components, "counts", None)  # LaplacePairs: an array
            total = np.sum(counts) if counts is not None else sum(k for _, k in self.components)
            out["n_components"] = int(total)
            out["discretization"] = self.upper_pld.discretization
            out["symmetric"] = self.reverse_upper_pld is None
        elif self.laplace_parameters is not None:
            out["n_components"] = int(self.laplace_parameters.size)
            out["discretization"] = self.upper_pld.discretization
        return out


def declared_accounting(dist_p, dist_q, *, discretization: float = 1e-4):
    """The accounting a release law declares for itself and a neighbouring law, if any.

    A distribution may define ``privacy_accounting(other, *, discretization)`` returning
    an :class:`ExactAccounting` of the pair (both orders), or ``None`` when it does not
    recognise ``other`` (the DP-SGD trajectory of the catalogue does: its pair is
    ``T`` Poisson-subsampled Gaussian steps, :mod:`dpaudit.accounting.subsampling`).

    Args:
        dist_p: the release law under ``D``.
        dist_q: the release law under ``D'``.
        discretization: grid spacing of numerical curves.

    Returns:
        The declared accounting, or ``None``.
    """
    method = getattr(dist_p, "privacy_accounting", None)
    if callable(method) and type(dist_p) is type(dist_q):
        return method(dist_q, discretization=discretization)
    return None
