r"""Sensitivity of *implemented* arithmetic: run the user's summary on neighbouring datasets.

A noise mechanism is calibrated to a claimed sensitivity ``Delta >= |f(D) - f(D')|``,
proved for the real-number summary. The summary a library actually runs adds
doubles (each addition rounds), adds fixed-width integers (which wrap), clamps
before or after summing, in some order. Casacuberta, Shoemate, Vadhan and
Wagaman (CCS 2022) found the implemented sensitivity above the idealised one in
essentially every library. :func:`find_sensitivity_violation` searches for such
pairs with hypothesis and returns the smallest it can shrink to:

* records mix magnitudes: the clamp bounds and their neighbouring doubles, values
  just above half a spacing of doubles at the bound (they round a large running
  total *up*), small integers, powers of two, uniform values of the domain, and
  (for integer summaries) values near the limits of fixed-width integers;
* a neighbour adds or removes one record at any position (``"add-remove"``), or
  replaces one (``"replace-one"``);
* differences are taken exactly (:class:`fractions.Fraction`), so the check itself
  never rounds; a summary that raises on a dataset refuses it (no release), which
  is not a violation.

The summary is run twice on the first dataset of every example: a summary that is
not deterministic has no sensitivity, and the search says so instead.

Example:
    >>> def float_sum(records):
    ...     total = 0.0
    ...     for r in records:
    ...         total += min(max(r, 0.0), 1e16)
    ...     return total
    >>> found = find_sensitivity_violation(float_sum, 1e16, (0.0, 1e16), max_examples=300)
    >>> found is not None and found.implemented > found.claimed and len(found.data) <= 10
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

__all__ = [
    "ADJACENCIES",
    "NonDeterministicSummary",
    "SensitivityCounterexample",
    "arithmetic_records",
    "assert_arithmetic_sensitivity",
    "find_sensitivity_violation",
    "neighbouring_record_lists",
]

#: Neighbouring relations the search generates.
ADJACENCIES = ("add-remove", "replace-one")
# Fixed-width integer limits whose neighbourhoods the integer records visit.
_INT_LIMITS = (2**7, 2**15, 2**31, 2**63)


class NonDeterministicSummary(ValueError):
    """The summary returned two different values on the same dataset."""


@dataclass(frozen=True)
class SensitivityCounterexample:
    """A neighbouring pair whose implemented difference exceeds the claimed sensitivity.

    Attributes:
        data: ``D`` (a list of records).
        data_prime: ``D'``.
        value: ``f(D)`` as implemented.
        value_prime: ``f(D')`` as implemented.
        implemented: ``|f(D) - f(D')|``, exact.
        idealised: the same difference of the exact real-number sum of the clamped
            records (``None`` when no clamp bounds are known).
        claimed: the claimed sensitivity.
    """

    data: list
    data_prime: list
    value: object
    value_prime: object
    implemented: Fraction
    idealised: Fraction | None
    claimed: Fraction

    def __str__(self) -> str:
        ideal = "unknown" if self.idealised is None else f"{float(self.idealised):.17g}"
        return (
            f"D = {self.data!r}, D' = {self.data_prime!r}: f(D) = {self.value!r}, "
            f"f(D') = {self.value_prime!r}; implemented |f(D) - f(D')| = "
            f"{float(self.implemented):.17g} (exactly {self.implemented}, "
            f"{float(self.implemented - self.claimed):.6g} above the claim), idealised "
            f"{ideal}, claimed sensitivity {float(self.claimed):.17g}."
        )


def _float_specials(lower: float, upper: float) -> list[float]:
    """Doubles where float sums misbehave, inside ``[lower, upper]``."""
    values = {lower, upper, 0.0, 1.0, 0.5, 1.5, 2.0, 3.0}
    for bound in (lower, upper):
        if bound != 0 and math.isfinite(bound):
            gap = math.ulp(bound)
            values |= {math.nextafter(bound, 0.0), bound / 2, gap, gap / 2, 0.75 * gap}
            values |= {gap / 2 * (1 + 2.0**-k) for k in (1, 4, 20)}
            values |= {gap * (1 + 2.0**-k) for k in (1, 4)}
    return sorted(v for v in values if lower <= v <= upper)


def arithmetic_records(lower: float, upper: float, *, integer: bool = False):
    """A hypothesis strategy of records in ``[lower, upper]`` that stress finite arithmetic.

    Args:
        lower: the smallest record.
        upper: the largest record.
        integer: integer records (fixed-width limits visited) instead of doubles.

    Returns:
        A strategy of single records (``int`` or ``float``).

    Raises:
        ValueError: if ``lower > upper`` or a bound is not finite.
    """
    if not (math.isfinite(lower) and math.isfinite(upper) and lower <= upper):
        raise ValueError(f"need finite bounds lower <= upper, got ({lower!r}, {upper!r}).")
    if integer:
        lo, hi = math.ceil(lower), math.floor(upper)
        near = {v + d for limit in _INT_LIMITS for v in (limit, -limit) for d in (-2, -1, 0, 1)}
        near |= {lo, hi, 0, 1, hi // 2 + 1}
        picks = sorted(v for v in near if lo <= v <= hi)
        return st.one_of(st.sampled_from(picks), st.integers(lo, hi))
    picks = _float_specials(float(lower), float(upper))
    uniform = st.floats(lower, upper, allow_nan=False, allow_infinity=False)
    return st.one_of(st.sampled_from(picks), uniform)


def neighbouring_record_lists(
    records, *, max_records: int = 12, adjacency: str = "add-remove", min_records: int = 1
):
    """A hypothesis strategy of neighbouring pairs ``(D, D')`` of record lists.

    Args:
        records: a strategy of one record (e.g. :func:`arithmetic_records`).
        max_records: the most records in ``D``.
        adjacency: ``"add-remove"`` (``D'`` is ``D`` without one record, at any
            position) or ``"replace-one"``.
        min_records: the fewest records in ``D`` (``min_records = max_records`` for a
            summary defined at one dataset size, so no example is spent on another).

    Returns:
        A strategy of ``(D, D')`` lists.

    Raises:
        ValueError: on an unknown adjacency, or sizes outside ``1 <= min <= max``.
    """
    if adjacency not in ADJACENCIES:
        raise ValueError(f"adjacency must be one of {ADJACENCIES}, got {adjacency!r}.")
    if not 1 <= min_records <= max_records:
        raise ValueError(
            f"need 1 <= min_records <= max_records, got {min_records!r} and {max_records!r}."
        )

    @st.composite
    def pairs(draw):
        data = draw(st.lists(records, min_size=min_records, max_size=max_records))
        i = draw(st.integers(0, len(data) - 1))
        if adjacency == "add-remove":
            return data, data[:i] + data[i + 1 :]
        return data, [*data[:i], draw(records), *data[i + 1 :]]

    return pairs()


def _exact(value) -> Fraction:
    """A summary's value as an exact fraction (scalars and 1-element arrays)."""
    array = np.asarray(value)
    if array.size != 1:
        raise TypeError(f"the summary must return one number, got shape {array.shape}.")
    item = array.reshape(()).item()
    if isinstance(item, float) and not math.isfinite(item):
        return Fraction(10**400)  # an infinite release: farther than any claim
    return Fraction(item)


def _idealised(data, data_prime, clamp) -> Fraction | None:
    """``|sum clamp(D) - sum clamp(D')|`` in exact arithmetic."""
    if clamp is None:
        return None
    lo, hi = Fraction(clamp[0]), Fraction(clamp[1])

    def total(records):
        return sum((min(max(Fraction(r), lo), hi) for r in records), Fraction(0))

    return abs(total(data) - total(data_prime))


def find_sensitivity_violation(
    summary: Callable[[list], object],
    sensitivity: float,
    bounds: tuple[float, float],
    *,
    integer: bool = False,
    adjacency: str = "add-remove",
    max_records: int = 12,
    max_examples: int = 2000,
    derandomize: bool = True,
    clamp: tuple[float, float] | None = None,
    min_records: int = 1,
) -> SensitivityCounterexample | None:
    """Search neighbouring datasets for ``|f(D) - f(D')| > sensitivity``, and shrink.

    Args:
        summary: the user's summary, ``summary(records: list) -> number`` (numpy, Python
            floats or ints, a library's ``sum``: it is run as it is).
        sensitivity: the claimed sensitivity.
        bounds: ``(lower, upper)``: the records' domain.
        integer: integer records.
        adjacency: ``"add-remove"`` or ``"replace-one"``.
        max_records: the most records in a dataset.
        max_examples: how many pairs hypothesis tries before giving up.
        derandomize: a fixed seed. The search is still not the same in every process:
            hypothesis also draws numbers written in the local modules the process has
            imported (its constant pool), so a counterexample found in one process may be
            missed in another; size the search (``min_records``, ``max_examples``) so that
            it does not rest on one lucky draw.
        clamp: the clamp bounds of the idealised summary (a sum of clamped records) the
            report compares with; default ``bounds``.
        min_records: the fewest records in a dataset (equal to ``max_records`` for a
            summary defined at one size only).

    Returns:
        The shrunk :class:`SensitivityCounterexample`, or ``None`` if none was found.

    Raises:
        NonDeterministicSummary: if the summary gives two values on one dataset.
        ValueError: on a claimed sensitivity that is not a finite number >= 0.
    """
    if isinstance(sensitivity, bool) or not (
        isinstance(sensitivity, int | float) and math.isfinite(sensitivity) and sensitivity >= 0
    ):
        raise ValueError(f"sensitivity must be a finite number >= 0, got {sensitivity!r}.")
    claimed = Fraction(sensitivity)
    records = arithmetic_records(bounds[0], bounds[1], integer=integer)
    pairs = neighbouring_record_lists(
        records, max_records=max_records, adjacency=adjacency, min_records=min_records
    )
    seen_nondeterministic = []

    def exceeds(pair) -> bool:
        data, data_prime = pair
        try:
            first, again, other = summary(list(data)), summary(list(data)), summary(data_prime)
        except (OverflowError, ValueError, ArithmeticError):
            return False  # the summary refuses the dataset: no release
        if _exact(first) != _exact(again):
            seen_nondeterministic.append((list(data), first, again))
            return True
        return abs(_exact(first) - _exact(other)) > claimed

    config = settings(
        max_examples=max_examples,
        database=None,
        derandomize=derandomize,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    try:
        data, data_prime = find(pairs, exceeds, settings=config)
    except NoSuchExample:
        return None
    if seen_nondeterministic:
        raise NonDeterministicSummary(_nondeterministic_message(summary, seen_nondeterministic))
    value, value_prime = summary(list(data)), summary(list(data_prime))
    return SensitivityCounterexample(
        data=list(data),
        data_prime=list(data_prime),
        value=value,
        value_prime=value_prime,
        implemented=abs(_exact(value) - _exact(value_prime)),
        idealised=_idealised(data, data_prime, bounds if clamp is None else clamp),
        claimed=claimed,
    )


def _nondeterministic_message(summary, seen: Sequence) -> str:
    data, first, again = seen[0]
    name = getattr(summary, "__name__", type(summary).__name__)
    return (
        f"the summary {name!r} returned {first!r} and then {again!r} on the same dataset "
        f"{data!r}: a summary that is not deterministic has no sensitivity; fix its randomness "
        "or order before testing it."
    )


def assert_arithmetic_sensitivity(summary, sensitivity: float, bounds, **options) -> None:
    """Fail (``AssertionError`` naming the shrunk pair) if the implemented sensitivity is exceeded.

    Args:
        summary: the user's summary (see :func:`find_sensitivity_violation`).
        sensitivity: the claimed sensitivity.
        bounds: the records' ``(lower, upper)``.
        **options: passed to :func:`find_sensitivity_violation`.

    Raises:
        AssertionError: with the counterexample and its implemented and idealised
            sensitivities.
        NonDeterministicSummary: if the summary is not deterministic.
    """
    found = find_sensitivity_violation(summary, sensitivity, bounds, **options)
    if found is not None:
        raise AssertionError(f"implemented sensitivity above the claim: {found}")
