r"""Adjacency relations as first-class objects: replace-one and add/remove.

A dataset is an array, or a pytree of arrays such as ``(X, y)``, with the
records on the first axis; a *record* is the matching pytree of slices
(``(X[i], y[i])``). numpy datasets give numpy neighbours. Two relations are used by the papers (docs/conventions.md#adjacency):

* :data:`REPLACE_ONE` (``"replace-one"``): same ``n``, at most one record
  differs. LR, MRS, HRW and the proofs of BMR use it.
* :data:`ADD_REMOVE` (``"add-remove"``): one dataset is the other with one
  record added.

Each relation is a frozen :class:`Adjacency` whose :attr:`~Adjacency.name` is
the string stored in :class:`dpaudit.Claim`. It checks a pair
(:meth:`~Adjacency.check`, delegating to :func:`check_adjacent`) and
builds a neighbour (:meth:`~Adjacency.neighbour`). The record helpers
(:func:`replace_record`, :func:`remove_record`, :func:`insert_record`) accept a
traced index, so a search can ``jit`` and ``vmap`` them over candidate pairs.

Example:
    >>> import numpy as np
    >>> from dpaudit.model.adjacency import ADD_REMOVE, REPLACE_ONE
    >>> data = np.array([0.1, 0.5, 0.9])
    >>> prime = REPLACE_ONE.neighbour(data, 1, 0.0)
    >>> np.asarray(prime).tolist()
    [0.1, 0.0, 0.9]
    >>> REPLACE_ONE.is_adjacent(data, prime), ADD_REMOVE.is_adjacent(data, prime)
    (True, False)
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "ADD_REMOVE",
    "ADJACENCIES",
    "REPLACE_ONE",
    "AddRemove",
    "Adjacency",
    "ReplaceOne",
    "check_adjacent",
    "get_record",
    "insert_record",
    "is_scalar_dataset",
    "n_records",
    "remove_record",
    "replace_record",
]

#: Adjacency relations: ``replace-one`` (same ``n``, one record differs) and
#: ``add-remove`` (one record added or removed).
ADJACENCIES = ("replace-one", "add-remove")


def _records(data) -> list[np.ndarray]:
    leaves = jax.tree_util.tree_leaves(data)
    if not leaves:
        raise ValueError("a dataset must hold at least one array of records.")
    arrays = [np.asarray(leaf) for leaf in leaves]
    if any(a.ndim == 0 for a in arrays):
        raise ValueError("every array of a dataset must have the records on its first axis.")
    sizes = {a.shape[0] for a in arrays}
    if len(sizes) != 1:
        raise ValueError(f"the arrays of a dataset hold different numbers of records: {sizes}.")
    return arrays


def check_adjacent(data, data_prime, adjacency: str = "replace-one") -> None:
    """Raise ``ValueError`` unless ``data`` and ``data_prime`` are neighbours.

    A dataset is an array (or a pytree of arrays, e.g. ``(X, y)``) with the
    records on the first axis. ``replace-one``: same number of records, at most
    one differs. ``add-remove``: one dataset is the other with one record added.

    Args:
        data: a dataset (an array or pytree of arrays, records on the first axis).
        data_prime: the other dataset.
        adjacency: ``"replace-one"`` or ``"add-remove"``.

    Raises:
        ValueError: for an unknown relation, datasets of different structure,
            or datasets that are not neighbours.
    """
    if adjacency not in ADJACENCIES:
        raise ValueError(f"adjacency must be one of {ADJACENCIES}, got {adjacency!r}.")
    a, b = _records(data), _records(data_prime)
    if len(a) != len(b) or any(x.shape[1:] != y.shape[1:] for x, y in zip(a, b, strict=True)):
        raise ValueError("the two datasets do not have the same structure of record arrays.")
    n, n_prime = a[0].shape[0], b[0].shape[0]
    if adjacency == "replace-one":
        if n != n_prime:
            raise ValueError(
                f"replace-one neighbours have the same number of records, got {n} and {n_prime}."
            )
        differ = np.zeros(n, dtype=bool)
        for x, y in zip(a, b, strict=True):
            differ |= np.any((x != y).reshape(n, -1), axis=1)
        if int(differ.sum()) > 1:
            raise ValueError(
                f"the datasets differ in {int(differ.sum())} records; replace-one neighbours "
                "differ in at most one."
            )
        return
    small, large = (a, b) if n < n_prime else (b, a)
    if abs(n - n_prime) != 1:
        raise ValueError(
            f"add-remove neighbours differ by exactly one record, got sizes {n} and {n_prime}."
        )
    m = small[0].shape[0]
    for drop in range(m + 1):  # find the added record
        if all(
            np.array_equal(s, np.delete(big, drop, axis=0))
            for s, big in zip(small, large, strict=True)
        ):
            return
    raise ValueError("no single added record turns the smaller dataset into the larger one.")


def is_scalar_dataset(data) -> bool:
    """Whether a dataset is one scalar (no records to compare).

    Measures shapes only (``np.shape`` per leaf), so ``(X, y)`` tuples, dicts of arrays
    and ragged pytrees are never stacked into one array. A pytree of several scalars is
    not a scalar dataset (:func:`check_adjacent` then says what is wrong with it).

    Args:
        data: a dataset (a scalar, an array, or a pytree of arrays).

    Returns:
        ``True`` when the dataset is a single 0-dimensional leaf.
    """
    leaves = jax.tree_util.tree_leaves(data)
    return len(leaves) == 1 and len(np.shape(leaves[0])) == 0


def n_records(data) -> int:
    """Number of records (length of the first axis, the same for every array).

    Args:
        data: a dataset (an array or pytree of arrays).

    Returns:
        The number of records.

    Raises:
        ValueError: for an empty pytree, a scalar array, or arrays holding
            different numbers of records.
    """
    leaves = jax.tree_util.tree_leaves(data)
    if not leaves:
        raise ValueError("a dataset must hold at least one array of records.")
    sizes = set()
    for leaf in leaves:
        shape = np.shape(leaf)
        if len(shape) == 0:
            raise ValueError("every array of a dataset must have the records on its first axis.")
        sizes.add(int(shape[0]))
    if len(sizes) != 1:
        raise ValueError(f"the arrays of a dataset hold different numbers of records: {sizes}.")
    return sizes.pop()


def _uses_jax(*trees) -> bool:
    """True when any leaf (or the index) is a JAX array or tracer: then stay in JAX."""
    return any(
        isinstance(leaf, jax.Array) for tree in trees for leaf in jax.tree_util.tree_leaves(tree)
    )


def get_record(data, index):
    """Record ``index`` of ``data``: the pytree of ``leaf[index]`` (index may be traced).

    Args:
        data: a dataset (an array or pytree of arrays).
        index: the record's position (an int or a traced integer).

    Returns:
        One record, with the structure of ``data`` (numpy or JAX like the input).
    """
    if _uses_jax(data, index):
        return jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf)[index], data)
    return jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[int(index)], data)


def replace_record(data, index, record):
    """``data`` with record ``index`` replaced by ``record`` (same pytree structure).

    numpy in, numpy out; JAX arrays or a traced index give JAX arrays (jit/vmap-able).

    Args:
        data: a dataset (an array or pytree of arrays).
        index: the position to replace (an int or a traced integer).
        record: the new record.

    Returns:
        The new dataset.

    Raises:
        ValueError: if ``record`` does not have the structure of one record of ``data``.
    """
    _check_record_structure(data, record)
    if _uses_jax(data, index, record):

        def put(leaf, new):
            leaf = jnp.asarray(leaf)
            return leaf.at[index].set(jnp.asarray(new, leaf.dtype))

        return jax.tree_util.tree_map(put, data, record)

    def put_numpy(leaf, new):
        out = np.array(leaf, copy=True)
        out[int(index)] = new
        return out

    return jax.tree_util.tree_map(put_numpy, data, record)


def remove_record(data, index):
    """``data`` without record ``index`` (``n - 1`` records; index may be traced).

    Args:
        data: a dataset (an array or pytree of arrays).
        index: the position to remove (an int or a traced integer).

    Returns:
        The dataset with ``n - 1`` records.
    """
    n = n_records(data)
    if not _uses_jax(data, index):
        return jax.tree_util.tree_map(lambda leaf: np.delete(leaf, int(index), axis=0), data)
    keep = jnp.arange(n - 1)
    keep = keep + (keep >= index)
    return jax.tree_util.tree_map(lambda leaf: jnp.take(jnp.asarray(leaf), keep, axis=0), data)


def insert_record(data, index, record):
    """``data`` with ``record`` inserted before position ``index`` (``n + 1`` records).

    ``index = n`` appends. The index may be traced.

    Args:
        data: a dataset (an array or pytree of arrays).
        index: the position of the new record, ``0..n`` (an int or a traced integer).
        record: the record to insert.

    Returns:
        The dataset with ``n + 1`` records.

    Raises:
        ValueError: if ``record`` does not have the structure of one record of ``data``.
    """
    _check_record_structure(data, record)
    n = n_records(data)
    if not _uses_jax(data, index, record):

        def insert_numpy(leaf, new):
            leaf, i = np.asarray(leaf), int(index)
            new = np.asarray(new, dtype=leaf.dtype)[None]
            return np.concatenate([leaf[:i], new, leaf[i:]], axis=0)

        return jax.tree_util.tree_map(insert_numpy, data, record)
    positions = jnp.arange(n + 1)
    # gather from [data; record]: rows before index, then the new record (row n), then the rest
    source = jnp.where(
        positions < index, positions, jnp.where(positions == index, n, positions - 1)
    )

    def insert(leaf, new):
        leaf = jnp.asarray(leaf)
        stacked = jnp.concatenate([leaf, jnp.asarray(new, leaf.dtype)[None]], axis=0)
        return jnp.take(stacked, source, axis=0)

    return jax.tree_util.tree_map(insert, data, record)


def _check_record_structure(data, record) -> None:
    data_def = jax.tree_util.tree_structure(data)
    record_def = jax.tree_util.tree_structure(record)
    if data_def != record_def:
        raise ValueError(
            f"a record must have the structure of the dataset ({data_def}), got {record_def}."
        )
    for leaf, new in zip(
        jax.tree_util.tree_leaves(data), jax.tree_util.tree_leaves(record), strict=True
    ):
        if tuple(np.shape(new)) != tuple(np.shape(leaf))[1:]:
            raise ValueError(
                f"a record of this dataset has shape {tuple(np.shape(leaf))[1:]}, got "
                f"{tuple(np.shape(new))}."
            )


@dataclasses.dataclass(frozen=True)
class Adjacency:
    """A neighbouring relation between datasets; subclasses fix :attr:`name`.

    Instances are immutable and compare equal by type; ``str(relation)`` is the
    name used in :class:`dpaudit.Claim`.
    """

    name: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.name

    def check(self, data, data_prime) -> None:
        """Raise ``ValueError`` (one sentence) unless the two datasets are neighbours.

        Args:
            data: a dataset (an array or pytree of arrays, records on the first axis).
            data_prime: the other dataset.

        Raises:
            ValueError: if they are not neighbours under this relation.
        """
        check_adjacent(data, data_prime, self.name)

    def is_adjacent(self, data, data_prime) -> bool:
        """True when :meth:`check` passes.

        Args:
            data: a dataset (an array or pytree of arrays, records on the first axis).
            data_prime: the other dataset.

        Returns:
            True when they are neighbours under this relation.
        """
        try:
            self.check(data, data_prime)
        except ValueError:
            return False
        return True

    def neighbour(self, data, index, record=None):  # pragma: no cover - abstract
        """A neighbour of ``data`` built by changing record ``index``.

        Args:
            data: a dataset (an array or pytree of arrays).
            index: the record that changes.
            record: the new record, if the relation needs one.

        Returns:
            The neighbouring dataset.
        """
        raise NotImplementedError

    def size_change(self) -> tuple[int, ...]:  # pragma: no cover - abstract
        """The possible values of ``n' - n`` for a neighbour ``D'`` of ``D``."""
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class ReplaceOne(Adjacency):
    """Replace-one adjacency: same number of records, at most one differs."""

    name: ClassVar[str] = "replace-one"

    def neighbour(self, data, index, record=None):
        """``data`` with record ``index`` replaced by ``record``.

        Args:
            data, index: as in :meth:`Adjacency.neighbour` (``index`` is the record replaced).
            record: the replacement record (required).

        Returns:
            The neighbouring dataset (same number of records).

        Raises:
            ValueError: if ``record`` is missing or has the wrong structure.
        """
        if record is None:
            raise ValueError("a replace-one neighbour needs the replacement record.")
        return replace_record(data, index, record)

    def size_change(self) -> tuple[int, ...]:
        return (0,)


@dataclasses.dataclass(frozen=True)
class AddRemove(Adjacency):
    """Add/remove adjacency: one dataset is the other with one record added."""

    name: ClassVar[str] = "add-remove"

    def neighbour(self, data, index, record=None):
        """``data`` without record ``index`` (``record=None``), or with ``record`` inserted there.

        Args:
            data: a dataset (an array or pytree of arrays).
            index: the record to remove, or the position to insert ``record`` at.
            record: the record to add, or None to remove one.

        Returns:
            The neighbouring dataset (one record fewer or more).
        """
        if record is None:
            return remove_record(data, index)
        return insert_record(data, index, record)

    def size_change(self) -> tuple[int, ...]:
        return (-1, 1)


#: Replace-one adjacency (the relation of LR, MRS, HRW and BMR's proofs).
REPLACE_ONE = ReplaceOne()
#: Add/remove adjacency.
ADD_REMOVE = AddRemove()

RELATIONS = {REPLACE_ONE.name: REPLACE_ONE, ADD_REMOVE.name: ADD_REMOVE}
if set(RELATIONS) != set(ADJACENCIES):  # pragma: no cover - guards against drift from mechanism.py
    raise RuntimeError(
        f"dpaudit.model.adjacency knows {sorted(RELATIONS)} but Claim allows {ADJACENCIES}."
    )
