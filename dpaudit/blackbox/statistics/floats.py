r"""Float-aware statistics: reachability of a release by a sampler's own arithmetic, and bits.

A mechanism computed in floating point releases doubles, and which doubles it
can release depends on the data: ``0 + Z`` and ``1 + Z`` land on different
sets of doubles (Mironov, CCS 2012). Two statistics see this:

* **Reachability** (:func:`fit_reachability`). numpy's ``laplace(loc, scale)``
  draws ``U = k 2^-53`` (``k`` a 53-bit integer) and returns
  ``loc + scale * log(U + U)`` for ``U < 1/2`` and ``loc - scale * log((2 - U) - U)``
  otherwise, with the C library's ``log``. Given a release ``x`` and a
  hypothesised ``(loc, scale)``, the integers ``k`` that could have produced it
  are found by inverting the formula in exact arithmetic (``2U = e^{(x-loc)/scale}``)
  and the formula is re-run on ``k`` and its neighbours: ``x`` is *reachable*
  if one of them gives ``x`` bit for bit. ``(loc, scale)`` (and whether the
  scale multiplies or an epsilon divides) are fitted on training releases of
  each dataset, among round values near robust estimates; a fit counts when at
  least :data:`MIN_OWN_REACHABLE` of the dataset's own releases are reachable.
  The statistic is ``r_D(x) - r_D'(x)`` in ``{-1, 0, 1}``: the event
  ``{s > 0}`` holds releases that ``D'`` cannot produce, whose probability under
  ``D'`` is zero, so a handful of certification releases certify a large
  epsilon. When no fit is found the statistic is not offered.
* **Bits** (:func:`float_bit_features`): per coordinate the sign, the binary
  exponent, the exponent of the lowest set bit (a release ``1 + z`` near 0 is a
  multiple of ``2^-53``, a release ``z`` of the same size is not), the number
  of significant bits and the 8 lowest mantissa bits, for the classifiers
  (``statistic="bits"`` trains the MLP on them; this is DP-Sniper's feature set
  in spirit).

Validity never depends on either being right: the statistic is fixed on
selection releases and the event is counted on fresh ones, so a wrong fit only
costs power.

Example:
    >>> import numpy as np
    >>> x = np.random.default_rng(0).laplace(0.0, 1.0, 1000)
    >>> bool(numpy_laplace_reachable(x, 0.0, 1.0).all())
    True
    >>> float(numpy_laplace_reachable(x + 1.0, 0.0, 1.0).mean()) < 0.5  # 1 + Z from 0: ~0.2
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = [
    "MAX_COORDINATES",
    "MIN_OWN_REACHABLE",
    "ReachabilityFit",
    "fit_reachability",
    "float_bit_features",
    "libm_log",
    "numpy_laplace",
    "numpy_laplace_reachable",
    "reachability_statistic",
]

#: A ``(loc, scale)`` fit is accepted when at least this share of the dataset's own training
#: releases is reachable (the right parameters give 1 up to libm corner cases; wrong ones give
#: about the ratio of the double spacing to the spacing of the sampler's outputs, far lower).
MIN_OWN_REACHABLE = 0.98
# Training releases per dataset used to fit (loc, scale): enough to tell 0.98 from 0.6, cheap
# enough to try a few thousand candidates; candidates are first screened on _SCREEN of them.
_FIT_RELEASES = 256
_SCREEN = 12
# Candidate scales lie within this factor of the robust estimate (median absolute deviation
# over log 2: 256 Laplace releases estimate the scale to about 10 %).
_SCALE_RANGE = 1.6
#: Releases with more coordinates than this get no reachability fit (the fit is per coordinate,
#: and the selection set keeps the raw releases for it).
MAX_COORDINATES = 16
# Neighbours of the inverted integer tried: the inversion is exact to a unit or two.
_OFFSETS = (0, -1, 1, -2, 2)  # the likeliest first: found releases are not tried again
# numpy's vectorised log pre-filters candidate draws: those it puts within this many ulps
# (of the location and of the noise) of the release are recomputed with the C library's log.
_PREFILTER_ULPS = 64
_TWO_52 = 2.0**52
_TWO_53 = 2.0**53
#: The C library's log (numpy's random module calls it; numpy's vectorised np.log can differ
#: from it in the last bit).
libm_log = np.frompyfunc(math.log, 1, 1)


def _round_values() -> np.ndarray:
    """Round numbers a scale or an epsilon is written with (1, 2.5, 0.1, 2^-3, 1/3, ...)."""
    values = {m * 10.0**e for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9) for e in range(-3, 4)}
    values |= {2.0**j for j in range(-10, 11)} | {1.0 / m for m in range(1, 21)}
    return np.array(sorted(values))


_ROUND = _round_values()


def numpy_laplace(k: np.ndarray, loc, scale, divide, log_of=libm_log) -> np.ndarray:
    """numpy's Laplace draw for uniform integers ``k`` (``U = k 2^-53``), bit for bit.

    Args:
        k: the uniform integers (float64 arrays of integers).
        loc: the location.
        scale: the scale, or with ``divide`` the epsilon.
        divide: the noise is ``laplace(0, 1) / scale`` (an epsilon divides) instead of
            ``scale * laplace(0, 1)``.
        log_of: the C library's log (:data:`libm_log`, bit for bit), or numpy's
            vectorised one (fast, within an ulp: a pre-filter).

    Returns:
        The draws, float64, of the broadcast shape.
    """
    u = k * (1.0 / _TWO_53)
    high = u >= 0.5
    arg = np.where(high, (2.0 - u) - u, u + u)
    log = np.asarray(log_of(np.maximum(arg, 1e-300)), dtype=np.float64)
    unit = np.where(high, -log, log)
    noise = np.where(divide, unit / scale, unit * scale)
    return loc + noise


def numpy_laplace_reachable(x, loc, scale, divide=False) -> np.ndarray:
    """Whether each release is an output of ``numpy ... laplace(loc, scale)``, bit for bit.

    Args:
        x: releases (any shape), float64.
        loc: the location (broadcast against ``x``).
        scale: the scale, or with ``divide`` the epsilon that divides a unit Laplace draw.
        divide: the noise is ``laplace(0, 1) / scale``.

    Returns:
        A boolean array of the broadcast shape of the arguments.
    """
    arrays = np.broadcast_arrays(
        np.asarray(x, np.float64), np.asarray(loc, np.float64), np.asarray(scale, np.float64),
        np.asarray(divide, bool),
    )  # fmt: skip
    shape = arrays[0].shape
    x, loc, scale, divide = (np.ravel(a) for a in arrays)
    found = np.zeros(x.size, bool)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        unit = np.where(divide, (x - loc) * scale, (x - loc) / scale)
        # each release is tried on its side only (a unit of 0 on both), offset by offset, and
        # only while not found: found is the OR over (side, offset) of an exact match, as
        # when every release was tried everywhere, at a fraction of the work
        for side, lo, hi in ((unit <= 0, 1.0, _TWO_52 - 1), (unit >= 0, _TWO_52, _TWO_53 - 1)):
            todo = np.flatnonzero(side & ~found)
            u = unit[todo]
            if lo == 1.0:
                base = np.rint(np.exp(np.minimum(u, 0.0)) * _TWO_52)
            else:
                base = np.rint((1.0 - 0.5 * np.exp(-np.maximum(u, 0.0))) * _TWO_53)
            for offset in _OFFSETS:
                if todo.size == 0:
                    break
                k = np.clip(base + offset, lo, hi)
                xt, lt, st, dt = x[todo], loc[todo], scale[todo], divide[todo]
                # numpy's log is within an ulp of the C library's: a draw it puts far from x
                # cannot be x; the others are recomputed bit for bit with the C log.
                y = numpy_laplace(k, lt, st, dt, np.log)
                slack = _PREFILTER_ULPS * (np.spacing(np.abs(lt)) + np.spacing(np.abs(y - lt)))
                near = np.flatnonzero(np.abs(y - xt) <= slack + np.spacing(xt))
                exact = numpy_laplace(k[near], lt[near], st[near], dt[near]) == xt[near]
                found[todo[near[exact]]] = True
                left = np.ones(todo.size, bool)
                left[near[exact]] = False
                todo, base = todo[left], base[left]
    return found.reshape(shape)


class ReachabilityFit(NamedTuple):
    """The fitted arithmetic of one dataset's releases, per coordinate.

    Attributes:
        loc: the locations, shape ``(d,)``.
        scale: the scales (or epsilons when ``divide``), shape ``(d,)``.
        divide: per coordinate, whether an epsilon divides a unit draw.
        own: the share of the training releases found reachable (the worst coordinate).
    """

    loc: np.ndarray
    scale: np.ndarray
    divide: np.ndarray
    own: float

    def reachable(self, x: np.ndarray) -> np.ndarray:
        """``(n, d)`` releases -> ``(n,)``: every coordinate reachable."""
        return numpy_laplace_reachable(x, self.loc, self.scale, self.divide).all(axis=1)

    def describe(self) -> str:
        """The fit in words, for reports."""
        how = ["laplace(0, 1) / " if d else "laplace(0, scale=" for d in self.divide]
        parts = [
            f"{float(lo)!r} + {h}{float(s)!r}{'' if d else ')'}"
            for lo, h, s, d in zip(self.loc, how, self.scale, self.divide, strict=True)
        ]
        return "numpy " + ", ".join(parts)


def _candidates(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate ``(loc, scale, divide)`` arrays for one coordinate's releases ``v``."""
    median = float(np.median(v))
    spread = float(np.median(np.abs(v - median))) / math.log(2.0)
    locs = {float(np.round(median * 2.0**j) / 2.0**j) for j in range(0, 9)}
    locs |= {float(np.round(median, j)) for j in range(1, 4)}
    if not spread > 0 or not math.isfinite(spread):
        return np.empty(0), np.empty(0), np.empty(0, bool)
    quotients = np.unique((_ROUND[:, None] / _ROUND[None, :]).ravel())
    near = quotients[(quotients > spread / _SCALE_RANGE) & (quotients < spread * _SCALE_RANGE)]
    epsilons = 1.0 / spread
    divisors = _ROUND[(_ROUND > epsilons / _SCALE_RANGE) & (_ROUND < epsilons * _SCALE_RANGE)]
    scales = np.concatenate([near, divisors])
    divide = np.concatenate([np.zeros(near.size, bool), np.ones(divisors.size, bool)])
    loc_grid = np.repeat(np.array(sorted(locs)), scales.size)
    return loc_grid, np.tile(scales, len(locs)), np.tile(divide, len(locs))


def _fit_coordinate(v: np.ndarray) -> tuple[float, float, bool, float] | None:
    """The best ``(loc, scale, divide, own share)`` of one coordinate, or ``None``."""
    locs, scales, divide = _candidates(v)
    if locs.size == 0:
        return None
    screen = v[:_SCREEN]
    hits = numpy_laplace_reachable(
        screen[None, :], locs[:, None], scales[:, None], divide[:, None]
    ).mean(axis=1)
    keep = np.flatnonzero(hits >= 1.0 - 1.5 / _SCREEN)
    if keep.size == 0:
        return None
    shares = numpy_laplace_reachable(
        v[None, :], locs[keep, None], scales[keep, None], divide[keep, None]
    ).mean(axis=1)
    best = int(np.argmax(shares))
    if shares[best] < MIN_OWN_REACHABLE:
        return None
    i = keep[best]
    return float(locs[i]), float(scales[i]), bool(divide[i]), float(shares[best])


def fit_reachability(v: np.ndarray) -> ReachabilityFit | None:
    """Fit numpy's Laplace arithmetic to one dataset's training releases.

    Args:
        v: float64 releases ``(n, d)`` of one dataset.

    Returns:
        The fit, or ``None`` when some coordinate fits no candidate (the releases are not
        numpy Laplace draws at round parameters).
    """
    v = np.asarray(v, dtype=np.float64)[:_FIT_RELEASES]
    if v.ndim != 2 or not 0 < v.shape[1] <= MAX_COORDINATES or v.shape[0] < 2 * _SCREEN:
        return None
    fits = []
    for j in range(v.shape[1]):  # stop at the first coordinate without a fit
        fits.append(_fit_coordinate(v[:, j]))
        if fits[-1] is None:
            return None
    loc, scale, divide, own = (np.array(c) for c in zip(*fits, strict=True))
    return ReachabilityFit(loc, scale, divide.astype(bool), float(own.min()))


def reachability_statistic(fit_d: ReachabilityFit, fit_dp: ReachabilityFit) -> Callable:
    """``s(x) = r_D(x) - r_D'(x)``: reachable from ``D`` only (1), from ``D'`` only (-1), else 0.

    Args:
        fit_d: the fit of ``D``'s releases.
        fit_dp: the fit of ``D'``'s releases.

    Returns:
        ``releases (n, ...) -> (n,)`` float64 scores.
    """

    def score(x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        x = x.reshape(x.shape[0], -1)
        return fit_d.reachable(x).astype(np.float64) - fit_dp.reachable(x).astype(np.float64)

    return score


def float_bit_features(x) -> np.ndarray:
    """Bit-level features of float releases for the classifiers.

    Per coordinate: the value, the sign, the binary exponent ``e`` (``x = m 2^e``,
    ``1/2 <= |m| < 1``), the exponent ``l`` of the lowest set bit, the number of significant
    bits ``e - l``, ``l`` relative to ``-53`` clipped to ``[-20, 20]`` (a release ``1 + z``
    near 0 is a multiple of ``2^-53``), and the 8 lowest mantissa bits. Zero has ``e = l = 0``.

    Args:
        x: releases ``(n, ...)`` (converted to float64).

    Returns:
        Features ``(n, 14 d)``.
    """
    x = np.asarray(x, dtype=np.float64)
    x = x.reshape(x.shape[0], -1)
    _, exponent = np.frexp(x)
    bits = np.abs(x).view(np.int64)
    mantissa = (bits & ((1 << 52) - 1)) | np.where((bits >> 52) > 0, 1 << 52, 0)
    trailing = _trailing_zeros(mantissa)
    biased = (bits >> 52).astype(np.int64)
    unit = np.where(biased > 0, biased - 1075, -1074)  # exponent of the mantissa's last bit
    lowest = np.where(x == 0, 0, unit + trailing)
    exponent = np.where(x == 0, 0, exponent)
    low = [((bits >> b) & 1).astype(np.float64) for b in range(8)]
    columns = [
        x,
        np.sign(x),
        exponent.astype(np.float64),
        lowest.astype(np.float64),
        (exponent - lowest).astype(np.float64),
        np.clip(lowest + 53, -20, 20).astype(np.float64),
        *low,
    ]
    return np.stack(columns, axis=2).reshape(x.shape[0], -1)


float_bit_features.description = "float bits (exponent, lowest set bit, low mantissa bits)"


def _trailing_zeros(m: np.ndarray) -> np.ndarray:
    """Trailing zero bits of non-negative int64 ``m`` (53 for 0)."""
    low = m & -m  # lowest set bit
    out = np.where(low > 0, np.log2(np.maximum(low, 1).astype(np.float64)), 53.0)
    return np.rint(out).astype(np.int64)
