"""The catalogue registry: builders filed by name; catalogues found through entry points.

A catalogue entry is a *builder*, a function of public parameters (epsilon,
the dataset size ``n``, a data bound ...) returning a
:class:`~dpaudit.Mechanism`. :func:`register` files it under a name;
:func:`build`, :func:`catalogue` and :func:`entry` read the registry. Nothing in
:mod:`dpaudit` imports a catalogue: a catalogue is a package whose modules call
:func:`register` on import, declared as an entry point of the group
``dpaudit.catalogues`` (the shipped one, :mod:`mechanisms`, in ``pyproject.toml``).
The registry loads every declared catalogue on its first read, so the engine never
depends on its catalogue.

Example:
    >>> import dpaudit
    >>> "laplace-mean" in dpaudit.catalogue()
    True
    >>> dpaudit.build("laplace-mean", epsilon=0.5).claim.epsilon
    0.5
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpaudit.model.mechanism import Mechanism

__all__ = [
    "CATALOGUE_GROUP",
    "Entry",
    "build",
    "catalogue",
    "entry",
    "lookup",
    "register",
    "unregister",
]


#: The entry-point group naming catalogue packages (``mechanisms = "mechanisms"``).
CATALOGUE_GROUP = "dpaudit.catalogues"


#: The catalogue entry points already imported in this process (by name and value).
_LOADED: set[tuple[str, str]] = set()


def _load_catalogue() -> None:
    """Import every declared catalogue (their modules call :func:`register` on import).

    Once per process: reading the installed packages' entry points costs about 5 ms, and
    ``dpaudit validate audits/`` looked a name up about 190 times. A catalogue installed
    while the process runs is not seen (as Python's own imports would not see it either).
    """
    if _LOADED:
        return
    points = list(entry_points(group=CATALOGUE_GROUP))
    for point in points:
        point.load()  # a failure leaves _LOADED empty: the next read tries again
    _LOADED.update((point.name, point.value) for point in points)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One registered builder.

    Attributes:
        name: the catalogue name.
        builder: ``builder(**params) -> Mechanism``.
        summary: the first paragraph of the builder's docstring, on one line.
        example: parameters giving a realistic instance.
        faulty: True for the catalogue of known-faulty mechanisms.
    """

    name: str
    builder: Callable[..., Mechanism]
    summary: str
    example: Mapping[str, Any]
    faulty: bool


_REGISTRY: dict[str, Entry] = {}


def register(name: str, *, example: Mapping[str, Any] | None = None, faulty: bool = False):
    """Decorator filing a builder ``builder(**params) -> Mechanism`` under ``name``.

    Args:
        name: the catalogue name (``dpaudit list`` shows it; audit specs use it).
        example: parameters with which ``build(name, **example)`` gives a
            realistic instance (used by ``dpaudit list`` and the tests).
        faulty: True for the catalogue of known-faulty mechanisms.

    Raises:
        ValueError: if ``name`` is already registered to another builder.
    """

    def decorate(builder: Callable[..., Mechanism]) -> Callable[..., Mechanism]:
        previous = _REGISTRY.get(name)
        if previous is not None and previous.builder is not builder:
            if (previous.builder.__module__, previous.builder.__qualname__) != (
                builder.__module__,
                builder.__qualname__,
            ):
                raise ValueError(f"a mechanism named {name!r} is already registered.")
        doc = (builder.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        _REGISTRY[name] = Entry(name, builder, doc, dict(example or {}), faulty)
        return builder

    return decorate


def catalogue(*, faulty: bool | None = None) -> list[str]:
    """Registered names, sorted.

    Args:
        faulty: ``None`` for every name; ``True``/``False`` for the faulty
            catalogue or the correct one only.

    Returns:
        The sorted list of names (the shipped catalogue is loaded first).
    """
    _load_catalogue()
    return sorted(n for n, e in _REGISTRY.items() if faulty is None or e.faulty == faulty)


def entry(name: str) -> Entry:
    """The registry entry (builder, one-line summary, example parameters) of ``name``.

    Args:
        name: a catalogue name.

    Returns:
        Its :class:`Entry`.

    Raises:
        ValueError: if nothing is registered under ``name``.
    """
    _load_catalogue()
    if name not in _REGISTRY:
        raise ValueError(
            f"no mechanism named {name!r}; `dpaudit list` shows the catalogue "
            f"({len(_REGISTRY)} names)."
        )
    return _REGISTRY[name]


def build(name: str, **params) -> Mechanism:
    """Build the registered mechanism ``name``: its example parameters updated by ``params``.

    Args:
        name: a catalogue name.
        **params: public parameters overriding the entry's example ones.

    Returns:
        The :class:`~dpaudit.Mechanism` the builder returns.

    Raises:
        ValueError: if nothing is registered under ``name`` (or the builder
            refuses the parameters).
    """
    e = entry(name)
    return e.builder(**{**e.example, **params})


def lookup(name: str) -> Entry | None:
    """The entry registered under ``name``, or ``None`` (the catalogue is not loaded).

    Args:
        name: a catalogue name.

    Returns:
        The :class:`Entry`, or ``None`` when nothing is registered under ``name``.
    """
    return _REGISTRY.get(name)


def unregister(name: str) -> None:
    """Remove ``name`` from the registry (tests that register a temporary builder).

    Args:
        name: a catalogue name; nothing happens if it is not registered.
    """
    _REGISTRY.pop(name, None)
