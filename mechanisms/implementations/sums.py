r"""Bounded sums as libraries implement them, for the arithmetic sensitivity property test.

Each takes the records (a 1-d sequence of numbers) and clamp bounds and returns the
summary a noise mechanism would be calibrated to. Idealised, a sum of records
clamped to ``[0, U]`` has add/remove sensitivity ``U``; implemented, it may not
(Casacuberta, Shoemate, Vadhan and Wagaman, "Widespread underestimation of
sensitivity in differentially private libraries and how to fix it", CCS 2022):

* :func:`float_sum` — clamp, then add left to right in doubles. With a record at
  ``U = 1e16`` (whose spacing of doubles is 2), every small record of ``1.5`` rounds
  the running total *up* by 2: the total moves by more than ``U`` when the large
  record is removed.
* :func:`int32_sum` — clamp, then a fixed-width ``int32`` sum that wraps on overflow.
* :func:`clamp_after_sum` — add the raw records, then clamp the total to ``[0, n U]``:
  one record outside the bounds moves the total by far more than ``U``.
* :func:`checked_sum` — the fix (in the spirit of Casacuberta et al.'s fixed-point
  summation): clamp, round each record down to a power-of-two grid coarse enough that
  every reachable total is a double, add exactly in Python integers: the released
  total moves by at most ``U`` per record.

Example (differences taken exactly, as :class:`fractions.Fraction`):
    >>> from fractions import Fraction as F
    >>> F(float_sum([1e16, 1.5], 1e16)) - F(float_sum([1.5], 1e16))
    Fraction(20000000000000001, 2)
    >>> F(checked_sum([1e16, 1.5], 1e16)) - F(checked_sum([1.5], 1e16)) <= 10**16
    True
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["checked_sum", "clamp_after_sum", "float_sum", "int32_sum"]


def float_sum(records, upper: float, lower: float = 0.0) -> float:
    """Records clamped to ``[lower, upper]``, added left to right in doubles.

    Args:
        records: the records.
        upper: the upper clamp bound.
        lower: the lower clamp bound.

    Returns:
        The float total.
    """
    total = 0.0
    for r in records:
        total += min(max(float(r), lower), upper)
    return total


def int32_sum(records, upper: int, lower: int = 0) -> int:
    """Records clamped to ``[lower, upper]`` and added as ``int32`` (wraps on overflow).

    Args:
        records: integer records.
        upper: the upper clamp bound.
        lower: the lower clamp bound.

    Returns:
        The wrapped total, as a Python int.
    """
    clamped = np.clip(np.asarray(records, dtype=np.int64), lower, upper).astype(np.int32)
    with np.errstate(over="ignore"):
        return int(np.sum(clamped, dtype=np.int32))


def clamp_after_sum(records, upper: float, lower: float = 0.0) -> float:
    """The raw records added, then the total clamped to ``[n lower, n upper]``.

    Args:
        records: the records.
        upper: the upper clamp bound.
        lower: the lower clamp bound.

    Returns:
        The clamped total.
    """
    n = len(records)
    return float(min(max(math.fsum(float(r) for r in records), n * lower), n * upper))


def checked_sum(records, upper: float, lower: float = 0.0, max_records: int = 1 << 20) -> float:
    """Records clamped, rounded down to a fixed-point grid, added exactly (the fix).

    The grid is the power of two ``g`` with ``max_records * max(|lower|, |upper|) <= 2^53 g``:
    every multiple of ``g`` a total can reach is a double, so the exact integer total is
    released without rounding and one record moves it by at most ``max(|lower|, |upper|)``.

    Args:
        records: the records.
        upper: the upper clamp bound.
        lower: the lower clamp bound.
        max_records: the most records the sum accepts (sets the grid).

    Returns:
        The exact total of the rounded records, a double.

    Raises:
        ValueError: if there are more than ``max_records`` records.
    """
    if len(records) > max_records:
        raise ValueError(f"checked_sum takes at most max_records={max_records} records.")
    _, exponent = math.frexp(max_records * max(abs(lower), abs(upper)))
    grid = 2.0 ** (exponent - 53)
    units = sum(math.floor(min(max(float(r), lower), upper) / grid) for r in records)
    return float(units) * grid  # |units| < 2^53: exact
