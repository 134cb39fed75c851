"""Resident memory of the process, and releasing what finished audits left behind.

A suite run (``dpaudit audit audits/``) audits a hundred specs in one process. Each audit
leaves compiled XLA programs in JAX's caches (a program per loss kernel, release shape and
chunk size, plus the small programs of eager array operations); they are what lets the
next audit of the same family and shape compile nothing, but across a whole suite they
add up to gigabytes. :func:`release_memory` runs between audits: when the process holds
more than a budget it collects garbage and returns the freed heap to the operating system,
and if that was not enough it drops JAX's compiled programs (the next audits compile, or
load from the persistent cache, what they need again: never a different result,
compilation is deterministic). Compiled programs that other layers keep themselves
(the pre-audit draw programs of :mod:`dpaudit.io.spec.resolve`) are dropped with JAX's own:
their owners register a release with :func:`on_release`.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from collections.abc import Callable

__all__ = ["SUITE_MEMORY_BYTES", "on_release", "release_memory", "resident_bytes"]

#: Resident memory above which a suite drops JAX's compiled programs between audits. A fresh
#: process with JAX and the engine loaded holds about 0.5 GB; the largest shipped audit adds
#: at most about 0.6 GB above what it starts from (svt-dwork-roth and faulty/svt-lyu-alg6,
#: their quadrature densities batched within 512 MiB; BENCHMARKS.md, session 14): starting
#: each audit from at most 1.2 GB keeps the run below 2 GB. Below the budget the programs
#: stay, so audits of one family and shape keep sharing them.
SUITE_MEMORY_BYTES = 1200 << 20

#: What :func:`release_memory` calls when it drops JAX's compiled programs: the releases of
#: programs kept outside JAX's caches (compiled executables a module holds itself).
_RELEASES: list[Callable[[], None]] = []


def on_release(release: Callable[[], None]) -> Callable[[], None]:
    """Register ``release`` to run whenever :func:`release_memory` drops compiled programs.

    A module that keeps compiled executables of its own (``jax.jit(...).lower().compile()``
    results in a dict) registers the function that empties it: ``jax.clear_caches`` does
    not reach them, so without it they would outlive every release. Registering the same
    function twice registers it once.

    Args:
        release: a function of no arguments that drops what its module keeps.

    Returns:
        ``release`` itself (usable as a decorator).

    Raises:
        TypeError: for a ``release`` that is not callable.
    """
    if not callable(release):
        raise TypeError(f"release must be a function of no arguments, got {release!r}.")
    if release not in _RELEASES:
        _RELEASES.append(release)
    return release


def resident_bytes() -> int | None:
    """The resident memory of this process, in bytes (Linux; ``None`` elsewhere).

    Returns:
        The current resident set size, or ``None`` when ``/proc`` is unavailable.
    """
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _trim_heap() -> None:
    """Return freed heap pages to the operating system (glibc ``malloc_trim``; else nothing)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # another C library: its own policy applies
        return


def release_memory(budget_bytes: int | None = None) -> bool:
    """Above ``budget_bytes`` resident: collect garbage, and if still above, drop JAX's programs.

    Dropping the programs also runs every release registered with :func:`on_release`.
    Below the budget nothing is done: a full garbage collection traverses every live Python
    object (about 0.2 s with 40 specs built, more as a suite grows), which a suite paid after
    every audit. Above it, garbage is collected and freed heap returned to the operating
    system first; compiled programs are dropped only when that was not enough.

    Args:
        budget_bytes: the resident memory (bytes) above which memory is released;
            ``None`` reads :data:`SUITE_MEMORY_BYTES` at the call (a long-lived process
            that keeps many callers' programs on purpose, such as a test process, raises it).

    Returns:
        True when the compiled programs were dropped.

    Raises:
        ValueError: for a budget that is not a positive integer.
    """
    if budget_bytes is None:
        budget_bytes = SUITE_MEMORY_BYTES
    if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, int) or budget_bytes < 1:
        raise ValueError(
            f"budget_bytes must be a positive integer number of bytes, got {budget_bytes!r}."
        )
    resident = resident_bytes()
    if resident is None:  # nothing to measure against: collect, never drop
        gc.collect()
        _trim_heap()
        return False
    if resident <= budget_bytes:
        return False
    gc.collect()
    _trim_heap()
    resident = resident_bytes()
    if resident is not None and resident <= budget_bytes:
        return False
    import jax  # deferred: the accounting layer imports core without JAX

    jax.clear_caches()
    for release in _RELEASES:
        release()
    gc.collect()
    _trim_heap()
    return True
