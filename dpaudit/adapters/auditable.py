"""What a library adapter hands to the black-box engine: sampler, claim, data and neighbours.

An adapter (:mod:`~dpaudit.adapters.opendp`, :mod:`~dpaudit.adapters.diffprivlib`)
translates a library object into the four things :func:`~dpaudit.blackbox_audit`
needs, with the translation written down in :attr:`Auditable.notes`:

* a batch sampler ``sampler(data, n, key) -> releases``;
* the claim (a :class:`~dpaudit.Claim` or a notion claim such as
  :class:`~dpaudit.model.claims.ZCDPClaim`) with its adjacency;
* a base dataset ``data`` from the library's input domain;
* the neighbours: an explicit list of pairs, or an
  :class:`~dpaudit.blackbox.AutoPairs` generating them around ``data`` under the
  claim's adjacency.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from dpaudit.blackbox import AutoPairs, BlackBoxResult, blackbox_audit

__all__ = ["Auditable", "find_named"]


@dataclasses.dataclass(frozen=True)
class Auditable:
    """A library mechanism made auditable: what :func:`~dpaudit.blackbox_audit` takes.

    Attributes:
        name: the mechanism's name in reports.
        sampler: ``sampler(data, n, key) -> releases`` (``n`` releases stacked on axis 0).
        claim: the claim audited: the library's own statement, or the one a caller gave.
        data: the base dataset (records, labelled records ``(X, y)`` or query answers).
        pairs: the neighbours: a list of ``(D, D')`` pairs, or an
            :class:`~dpaudit.blackbox.AutoPairs` built around ``data``.
        library_claim: what the library itself states (e.g. OpenDP's privacy map at
            ``d_in``), which :attr:`claim` replaces when a caller states another.
        reproducible: whether the sampler replays its key (OpenDP's randomness cannot be
            seeded: ``False``; the engine checks it again and says so in the result).
        notes: one sentence per translation step (measure, metric, domain, batching).
    """

    name: str
    sampler: Callable
    claim: Any
    data: Any
    pairs: Any
    library_claim: Any = None
    reproducible: bool = True
    notes: tuple[str, ...] = ()

    def audit(self, **options) -> BlackBoxResult:
        """Run :func:`~dpaudit.blackbox_audit` on this mechanism.

        Args:
            **options: keyword arguments of :func:`~dpaudit.blackbox_audit` (``samples``,
                ``select_samples``, ``seed``, ``statistic``, ``progress``, ...); ``pairs``
                and ``name`` default to this record's.

        Returns:
            The :class:`~dpaudit.BlackBoxResult`, with this record's notes appended.
        """
        options.setdefault("name", self.name)
        pairs = options.pop("pairs", self.pairs)
        if isinstance(pairs, AutoPairs | str):
            result = blackbox_audit(
                self.sampler, self.data, None, self.claim, pairs=pairs, **options
            )
        else:
            result = blackbox_audit(self.sampler, None, None, self.claim, pairs=pairs, **options)
        return dataclasses.replace(result, notes=(*result.notes, *self.notes))


def find_named(items, name: str, library: str):
    """The item of ``items`` whose ``name`` is ``name`` (a shipped library audit, by name).

    Args:
        items: records with a ``name`` field (the audits of a library script).
        name: the name looked up.
        library: the library's name, for the message.

    Returns:
        The item.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    for item in items:
        if item.name == name:
            return item
    raise ValueError(f"no {library} audit {name!r}; one of {[i.name for i in items]}.")
