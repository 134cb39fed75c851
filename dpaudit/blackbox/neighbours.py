"""Candidate neighbouring pairs for the black-box neighbour search (``pairs=``).

Example:
    >>> import numpy as np
    >>> pairs = neighbour_candidates(np.zeros(2), [np.float64(5.0)], adjacency="add-remove")
    >>> [np.asarray(dp).tolist() for _, dp in pairs]
    [[5.0, 0.0, 0.0], [0.0]]
"""

from __future__ import annotations

from dpaudit.model.mechanism import adjacency_of

__all__ = ["neighbour_candidates"]


def neighbour_candidates(data, records, *, index: int = 0, adjacency: str = "replace-one"):
    """Candidate neighbouring pairs for ``pairs=``: ``data`` with record ``index`` changed.

    Replace-one: ``(data, data with record index := r)`` for each ``r`` in
    ``records`` (e.g. the corners or extreme curves of the data domain).
    Add/remove: also ``(data, data without record index)``. The black-box audit
    picks one of them on its selection samples and certifies only that one, so
    passing many candidates costs selection samples, never validity.

    Args:
        data: the dataset ``D``.
        records: replacement records for record ``index``.
        index: the record changed.
        adjacency: ``"replace-one"`` or ``"add-remove"``.

    Returns:
        A list of pairs ``(D, D')``.

    Raises:
        ValueError: for replace-one without records, or an unknown adjacency.

    Example:
        >>> import numpy as np
        >>> pairs = neighbour_candidates(np.zeros(3), [np.float64(1.0), np.float64(-1.0)])
        >>> [np.asarray(dp).tolist() for _, dp in pairs]
        [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]
    """
    relation = adjacency_of(adjacency)
    records = list(records)
    if not records and relation.name == "replace-one":
        raise ValueError("neighbour_candidates needs at least one replacement record.")
    pairs = [(data, relation.neighbour(data, index, r)) for r in records]
    if relation.name == "add-remove":
        pairs.append((data, relation.neighbour(data, index)))
    return pairs
