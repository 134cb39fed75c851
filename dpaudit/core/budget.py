"""Audit budgets estimated before running, and refused beyond a stated limit.

An audit asked for ``samples = 10**15`` used to start and run for ever, and a black-box
selection of ``10**8`` releases per dataset held about 12 GB. Each engine estimates its
time and memory before it draws anything (the black-box audit from a pilot: the two short
runs of its reproducibility check, timed; the white-box audit from a floor on the cost of
one release) and asks :func:`check_cost`, which refuses an estimate beyond
:data:`MAX_SECONDS` or :data:`MAX_BYTES` with one sentence giving it, unless the caller
passes ``force=True`` (``--force`` on the command line).

Example:
    >>> check_cost(CostEstimate(10.0, 2**20, "a pilot"), what="the audit", force=False)
    >>> format_bytes(3 * 2**30), format_seconds(2 * 86400)
    ('3.0 GiB', '2.0 days')
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "MAX_BYTES",
    "MAX_SECONDS",
    "CostEstimate",
    "check_cost",
    "format_bytes",
    "format_seconds",
]

#: Longest estimated run accepted without ``force=True``: one day.
MAX_SECONDS = 86_400.0
#: Largest estimated memory accepted without ``force=True``: 2 GiB (the peak the project
#: allows one audit, so that a suite of them fits a laptop).
MAX_BYTES = 2 * 2**30


class CostEstimate(NamedTuple):
    """What an audit is estimated to cost before it runs.

    Attributes:
        seconds: wall time on this machine.
        bytes: the memory it holds at its peak (beyond the sampler's own).
        basis: how the estimate was made, for the message (``"a pilot of 128 releases at
            3.1 us each"``).
    """

    seconds: float
    bytes: float
    basis: str


def format_seconds(seconds: float) -> str:
    """``seconds`` in the largest unit that keeps it >= 1 (s, min, h, days, years).

    Args:
        seconds: a duration.

    Returns:
        e.g. ``"3.2 h"``.
    """
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return (
                f"{seconds / size:.3g} {unit}" if unit != "days" else f"{seconds / size:.1f} days"
            )
    return f"{seconds:.2g} s"


def format_bytes(size: float) -> str:
    """``size`` bytes in binary units (B, KiB, MiB, GiB, TiB, PiB).

    Args:
        size: a number of bytes.

    Returns:
        e.g. ``"12.0 GiB"``.
    """
    for unit, power in (("PiB", 5), ("TiB", 4), ("GiB", 3), ("MiB", 2), ("KiB", 1)):
        if size >= 1024**power:
            return f"{size / 1024**power:.1f} {unit}"
    return f"{size:.0f} B"


def check_cost(estimate: CostEstimate, *, what: str, force: bool, budget: str = "samples") -> None:
    """Refuse an audit estimated beyond :data:`MAX_SECONDS` or :data:`MAX_BYTES`.

    Args:
        estimate: the audit's :class:`CostEstimate`.
        what: the audit, for the message (``"the black-box audit of 'laplace'"``).
        force: run whatever the estimate (``--force``).
        budget: the arguments to lower, for the message.

    Raises:
        ValueError: one sentence with the estimate, its basis, the limit and the two ways
            out (a smaller budget, or ``force=True`` / ``--force``).
    """
    over_time = estimate.seconds > MAX_SECONDS
    over_memory = estimate.bytes > MAX_BYTES
    if force or not (over_time or over_memory):
        return
    raise ValueError(
        f"{what} is estimated to take {format_seconds(estimate.seconds)} and "
        f"{format_bytes(estimate.bytes)} ({estimate.basis}), beyond the limit of "
        f"{format_seconds(MAX_SECONDS)} and {format_bytes(MAX_BYTES)}; lower {budget}, or pass "
        "force=True (--force on the command line) to run it anyway."
    )
