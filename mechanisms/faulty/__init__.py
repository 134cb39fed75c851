"""The catalogue of known-faulty mechanisms: each claims a guarantee it does not meet.

Every entry is registered with ``faulty=True`` and carries a
:class:`dpaudit.KnownFlaw` with its true guarantee (``true_epsilon`` at
``true_delta``; ``math.inf`` when no epsilon holds at that delta) and the
reason, so audits can be tested for detection. Each builder's ``example``
builds a small instance on which the flaw is visible, and
:func:`example_pair` returns a neighbouring pair (under the claimed
adjacency) on which it shows.

Modules: :mod:`.functional` (ICLP and Gaussian-process releases),
:mod:`.calibration` (scalar noise calibrations), :mod:`.ecdf` (tree ECDFs),
:mod:`.selection` (report-noisy-max and sparse-vector variants). They are
built from dpaudit primitives only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["example_pair", "register_pair"]

_PAIRS: dict[str, Callable[[], tuple[Any, Any]]] = {}


def register_pair(name: str):
    """Decorator filing ``pair() -> (D, D')``, the visible neighbouring pair of ``name``.

    Args:
        name: the faulty mechanism's catalogue name.

    Returns:
        The decorator, which returns ``pair`` unchanged.
    """

    def decorate(pair):
        _PAIRS[name] = pair
        return pair

    return decorate


def example_pair(name: str) -> tuple[Any, Any]:
    """A neighbouring pair ``(D, D')`` on which the flaw of faulty mechanism ``name`` shows.

    The pair fits the mechanism built by ``dpaudit.build(name)`` (its example
    parameters) and is adjacent under the claimed adjacency.

    Args:
        name: the faulty mechanism's catalogue name.

    Returns:
        ``(D, D')``.

    Raises:
        ValueError: if ``name`` is not a faulty mechanism of the catalogue.
    """
    import mechanisms  # noqa: F401  (imports every faulty module)

    if name not in _PAIRS:
        raise ValueError(f"no faulty mechanism named {name!r}; known: {sorted(_PAIRS)}.")
    return _PAIRS[name]()
