"""Automatic neighbouring inputs for black-box audits (``pairs="auto"`` / :class:`AutoPairs`).

A black-box audit certifies a violation only on the pair of inputs it is given,
and the worst pair is rarely the obvious one (report-noisy-max and the sparse
vector technique fail on particular *patterns* of query answers). StatDP (Ding
et al. 2018, Sec. 5.1) and DP-Sniper (Bichsel et al. 2021) therefore try a fixed
family of input patterns; this module does the same for four kinds of input:

* ``"answers"`` — a vector ``a`` of ``k`` query answers whose neighbours move by
  at most the claim's ``sensitivity`` in its ``sensitivity_norm`` (``l1``,
  ``l2`` or ``linf``). Candidates ``(a, a + v)`` for the StatDP patterns ``v``
  (one above, one below, one above rest below, one below rest above, half half,
  all above, all below) and the "X shape" ``(a - x, a - x')``, each scaled to the
  sensitivity in the claim's norm.
* ``"histogram"`` — a vector of non-negative integer counts. Add/remove: one
  count added to or removed from a bin; replace-one: one count moved between
  two bins.
* ``"records"`` — real records ``(n,)`` or ``(n, d)`` in a declared box
  ``domain = (lo, hi)``. Record ``index`` is replaced by (replace-one) or joined
  by (add/remove: also removed) the extreme records of the domain: its corners
  in the same patterns (all low, all high, first high rest low, ...); replace-one
  also pairs two opposite corners with each other.
* ``"labelled"`` — a pair ``(X, y)`` of features in a box ``domain`` and labels
  (the label set: ``labels=``, default the labels in ``y``): the same corners,
  each with every label.

Which kind: :class:`AutoPairs` ``kind=`` says it; ``pairs="auto"`` (kind
``"auto"``) infers it: a ``(X, y)`` tuple with a domain is ``"labelled"``,
other data with a domain ``"records"``, a 1-D float array ``"answers"`` (the claim
must state its ``sensitivity_norm``); anything else, a 1-D integer array included
(counts or integer records?), is refused with a sentence asking for the kind. The inferred kind is stated in the result's notes.

Validity is not touched by the number of candidates: selection chooses one
pair, one statistic and one event on the selection releases (with the
Bonferroni correction of planning over every candidate of every pair), and only
that event is counted on fresh certification releases. More candidates cost
selection releases (``select_samples`` per pair) and a little power.

Example:
    >>> import numpy as np
    >>> from dpaudit import Claim
    >>> hist = AutoPairs(kind="histogram")
    >>> c = auto_pairs(np.array([3, 0]), Claim(1.0, adjacency="add-remove"), hist)
    >>> c.kind, c.names
    ('histogram', ('remove from bin 0', 'add to bin 0', 'add to bin 1'))
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np

from dpaudit.model.claims import Claim
from dpaudit.model.mechanism import adjacency_of

__all__ = ["AUTO_KINDS", "AutoCandidates", "AutoPairs", "auto_pairs"]

#: The input kinds :class:`AutoPairs` knows (``"auto"``: inferred from the data).
AUTO_KINDS = ("auto", "answers", "histogram", "records", "labelled")
# Histograms of more bins than this get candidates only on a few representative bins (the
# first, the second, the last, the smallest and the largest count): every bin would cost
# 2 k selection draws per dataset for add/remove and k (k - 1) for replace-one.
_ALL_BINS = 6
# Labelled records with more distinct labels than this need labels= (the label set is part
# of the domain, and every label multiplies the candidates).
_MAX_LABELS = 8
_ANSWER_NORMS = ("l1", "l2", "linf")


@dataclasses.dataclass(frozen=True)
class AutoPairs:
    """How ``pairs="auto"`` builds candidate neighbours (see :mod:`~dpaudit.blackbox.autopairs`).

    Attributes:
        kind: one of :data:`AUTO_KINDS`; ``"auto"`` infers it from the data.
        domain: ``(lo, hi)`` of a record's values (scalars, or arrays of a record's
            shape), for ``"records"`` and the features of ``"labelled"``.
        labels: the label set of ``"labelled"`` data (default: the labels in ``y``).
        index: the record that changes (``"records"``, ``"labelled"``).

    Example:
        >>> AutoPairs(domain=(0.0, 1.0)).kind
        'auto'
    """

    kind: str = "auto"
    domain: tuple | None = None
    labels: tuple | None = None
    index: int = 0

    def __post_init__(self):
        if self.kind not in AUTO_KINDS:
            raise ValueError(f"AutoPairs kind must be one of {AUTO_KINDS}, got {self.kind!r}.")
        if isinstance(self.index, bool) or not isinstance(self.index, int | np.integer):
            raise TypeError(f"AutoPairs index must be an integer, got {self.index!r}.")
        if self.domain is not None:  # kept as floats / nested tuples: comparable and hashable
            lo, hi = _domain_bounds(self.domain)
            object.__setattr__(self, "domain", (_frozen(lo), _frozen(hi)))
        if self.labels is not None:
            labels = tuple(np.asarray(self.labels).ravel().tolist())
            if not labels:
                raise ValueError("AutoPairs labels must name at least one label.")
            object.__setattr__(self, "labels", labels)


class AutoCandidates(NamedTuple):
    """The generated candidates: their kind, names and pairs, and whether they are records.

    Attributes:
        kind: the input kind used (inferred or stated).
        names: one name per pair (the pattern).
        pairs: the pairs ``(D, D')``.
        records: the datasets are record arrays (their adjacency can be checked);
            ``False`` for query answers and histograms, neighbouring by construction.
        note: one sentence for the result's notes.
    """

    kind: str
    names: tuple
    pairs: list
    records: bool
    note: str


def _frozen(bound: np.ndarray):
    """A float, or nested tuples of floats, for an array bound."""
    if bound.ndim == 0:
        return float(bound)
    return tuple(_frozen(b) for b in bound)


def _domain_bounds(domain) -> tuple[Any, Any]:
    """``(lo, hi)`` as float arrays, checked: two finite bounds, ``lo < hi`` everywhere."""
    if not isinstance(domain, tuple | list) or len(domain) != 2:
        raise ValueError(f"domain must be a pair (lo, hi), got {domain!r}.")
    try:
        lo, hi = (np.asarray(b, dtype=np.float64) for b in domain)
    except (TypeError, ValueError):
        raise ValueError(f"domain bounds must be numbers or arrays, got {domain!r}.") from None
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError(f"domain bounds must be finite, got {domain!r}.")
    if lo.shape != hi.shape or not np.all(lo < hi):
        raise ValueError(
            f"domain must be (lo, hi) with lo < hi (same shape), got {domain!r}: swap or fix them."
        )
    return lo, hi


def auto_pairs(data, claim: Claim, spec: AutoPairs | str = "auto") -> AutoCandidates:
    """Candidate neighbouring pairs around ``data`` for ``blackbox_audit(pairs=...)``.

    Args:
        data: the base input: query answers, histogram counts, records, or ``(X, y)``.
        claim: the claim audited (its adjacency; for answers its sensitivity and norm).
        spec: ``"auto"`` or an :class:`AutoPairs`.

    Returns:
        The :class:`AutoCandidates`.

    Raises:
        ValueError: for an unknown kind, a kind that cannot be inferred, a missing or
            inverted domain, data outside the domain, or an answers claim without a
            sensitivity.
        TypeError: when ``spec`` is neither ``"auto"`` nor an :class:`AutoPairs`.

    Example:
        >>> import numpy as np
        >>> from dpaudit import Claim
        >>> c = auto_pairs(np.array([0.5]), Claim(1.0), AutoPairs(domain=(0.0, 1.0)))
        >>> c.names
        ('record 0 := low', 'record 0 := high', 'record 0: low vs high')
    """
    if isinstance(spec, str):
        if spec != "auto":
            raise ValueError(
                f"pairs must be 'auto', an AutoPairs or a list of pairs, got {spec!r}."
            )
        spec = AutoPairs()
    if not isinstance(spec, AutoPairs):
        raise TypeError(f"pairs must be 'auto' or a dpaudit.blackbox.AutoPairs, got {spec!r}.")
    if data is None:
        raise ValueError("pairs='auto' builds neighbours of data: pass the base dataset as data.")
    kind = _infer_kind(data, spec)
    build = {"answers": _answers, "histogram": _histogram, "records": _records}
    if kind == "labelled":
        names, pairs = _labelled(data, claim, spec)
    else:
        names, pairs = build[kind](data, claim, spec)
    names, pairs = _unique(names, pairs)
    how = "stated" if spec.kind != "auto" else "inferred from the data"
    note = (
        f"pairs='auto': the data were read as {_KIND_TEXT[kind]} ({how}); {len(pairs)} "
        f"candidate pairs ({', '.join(names)}); the selection releases chose one."
    )
    return AutoCandidates(kind, tuple(names), pairs, kind in ("records", "labelled"), note)


_KIND_TEXT = {
    "answers": "a vector of query answers (neighbours move by the claim's sensitivity)",
    "histogram": "histogram counts",
    "records": "records in the declared domain",
    "labelled": "labelled records (X, y)",
}


def _infer_kind(data, spec: AutoPairs) -> str:
    """The stated kind, else the one documented in the module docstring."""
    is_xy = isinstance(data, tuple | list) and len(data) == 2 and not np.isscalar(data[0])
    kind = spec.kind
    if kind == "auto":
        arr = None if is_xy else np.asarray(data)
        if spec.domain is not None:
            kind = "labelled" if is_xy else "records"
        elif arr is not None and arr.ndim == 1 and np.issubdtype(arr.dtype, np.integer):
            # Integer vectors are as often records (binary or ordinal) as counts; moving a
            # count between bins of what are really records is not a neighbour, and a false
            # violation is what guessing would risk.
            raise ValueError(
                "pairs='auto' cannot tell whether a 1-D integer array holds histogram counts "
                "or integer records: pass pairs=AutoPairs(kind='histogram') for counts, or "
                "AutoPairs(domain=(lo, hi)) for records."
            )
        elif arr is not None and arr.ndim == 1 and np.issubdtype(arr.dtype, np.floating):
            kind = "answers"
        else:
            raise ValueError(
                "pairs='auto' cannot tell what these data are: pass "
                "pairs=AutoPairs(domain=(lo, hi)) for bounded records (or (X, y) labelled "
                "records), or AutoPairs(kind='answers') / AutoPairs(kind='histogram')."
            )
    if kind in ("records", "labelled") and spec.domain is None:
        raise ValueError(
            f"AutoPairs(kind={kind!r}) needs the records' domain: pass "
            "AutoPairs(domain=(lo, hi)) with the smallest and largest value a record may take."
        )
    if kind == "labelled" and not is_xy:
        raise ValueError("AutoPairs(kind='labelled') needs data = (X, y): features and labels.")
    return kind


def _unique(names, pairs):
    """Drop repeated pairs (small inputs make some patterns coincide) and pairs with ``D = D'``
    (a record already at the extreme), keeping the first of each."""
    seen, out_names, out_pairs = set(), [], []
    for name, (d, dp) in zip(names, pairs, strict=True):
        key = tuple(np.asarray(x).tobytes() + str(np.shape(x)).encode() for x in _leaves(d, dp))
        half = len(key) // 2
        if key not in seen and key[:half] != key[half:]:
            seen.add(key)
            out_names.append(name)
            out_pairs.append((d, dp))
    return out_names, out_pairs


def _leaves(d, dp):
    flat = []
    for x in (d, dp):
        flat.extend(x if isinstance(x, tuple) else (x,))
    return flat


# ------------------------------------------------------------------ query answers


def _patterns(k: int) -> list[tuple[str, np.ndarray]]:
    """StatDP's difference patterns ``v`` (``D' = D + v``) on ``k`` answers, entries in {-1, 0, 1}."""
    h = k // 2
    e0 = np.zeros(k)
    e0[0] = -1.0  # the tools' first pattern lowers the first answer
    first = np.where(np.arange(k) == 0, 1.0, -1.0)
    half = np.where(np.arange(k) < h, 1.0, -1.0)
    return [
        ("one below", e0),
        ("one above", -e0),
        ("one above rest below", first),
        ("one below rest above", -first),
        ("half half", half),
        ("all above", np.ones(k)),
        ("all below", -np.ones(k)),
    ]


def _scaled(v: np.ndarray, norm: str, sensitivity: float) -> np.ndarray:
    """``v`` scaled to length ``sensitivity`` in ``norm``."""
    size = {"l1": np.sum(np.abs(v)), "l2": np.sqrt(np.sum(v * v)), "linf": np.max(np.abs(v))}
    return v * (sensitivity / size[norm])


def _answers(data, claim: Claim, spec: AutoPairs):
    a = np.asarray(data, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(
            f"AutoPairs(kind='answers') needs a 1-D vector of finite query answers, got shape "
            f"{a.shape}."
        )
    if claim.sensitivity_norm not in _ANSWER_NORMS:
        raise ValueError(
            "AutoPairs(kind='answers') moves the answers by the claim's sensitivity: give the "
            f"Claim sensitivity and sensitivity_norm (one of {_ANSWER_NORMS}), got "
            f"{claim.sensitivity_norm!r}."
        )
    norm, size = claim.sensitivity_norm, float(claim.sensitivity)
    names, pairs = [], []
    for name, v in _patterns(a.size):
        names.append(name)
        pairs.append((a, a + _scaled(v, norm, size)))
    if a.size > 1:  # X shape: (1^h 0^(k-h)) vs (0^h 1^(k-h)) below the base
        h = a.size // 2
        x = np.where(np.arange(a.size) < h, 0.0, 1.0)
        step = _scaled(2 * x - 1, norm, size)  # D' - D, entries +-1 before scaling
        low = a - np.abs(step) * x
        names.append("X shape")
        pairs.append((low, low + step))
    return names, pairs


# ------------------------------------------------------------------ histograms


def _bins(counts: np.ndarray) -> list[int]:
    """Every bin of a small histogram; else the first, second, last, smallest and largest."""
    k = counts.size
    if k <= _ALL_BINS:
        return list(range(k))
    picks = [0, 1, k - 1, int(np.argmin(counts)), int(np.argmax(counts))]
    return list(dict.fromkeys(picks))


def _histogram(data, claim: Claim, spec: AutoPairs):
    c = np.asarray(data)
    if c.ndim != 1 or c.size == 0:
        raise ValueError(
            f"AutoPairs(kind='histogram') needs a 1-D vector of counts, got {c.shape}."
        )
    if not np.all(np.isfinite(c.astype(np.float64))) or np.any(c < 0) or np.any(c != np.round(c)):
        raise ValueError("AutoPairs(kind='histogram') needs non-negative integer counts.")
    names, pairs = [], []
    bins = _bins(c)

    def moved(i, step):
        out = c.copy()
        out[i] = out[i] + step
        return out

    if claim.adjacency == "add-remove":
        for i in bins:
            if c[i] > 0:
                names.append(f"remove from bin {i}")
                pairs.append((c, moved(i, -1)))
            names.append(f"add to bin {i}")
            pairs.append((c, moved(i, 1)))
        return names, pairs
    for i in bins:  # replace-one: one record changes bin
        for j in bins:
            if i != j and c[i] > 0:
                names.append(f"move from bin {i} to bin {j}")
                pairs.append((c, moved(i, -1) + (np.arange(c.size) == j).astype(c.dtype)))
    if not pairs:
        raise ValueError(
            "AutoPairs(kind='histogram') under replace-one moves a count between bins: the "
            "histogram needs a non-zero count and at least two bins."
        )
    return names, pairs


# ------------------------------------------------------------------ records


def _corners(lo: np.ndarray, hi: np.ndarray, shape: tuple) -> list[tuple[str, np.ndarray]]:
    """Extreme records: the StatDP patterns on a record's coordinates, low / high."""
    lo, hi = np.broadcast_to(lo, shape), np.broadcast_to(hi, shape)
    size = int(np.prod(shape)) if shape else 1
    if size == 1:
        return [("low", lo.copy()), ("high", hi.copy())]
    idx = np.arange(size).reshape(shape)
    first, half = idx == 0, idx < size // 2
    return [
        ("low", lo.copy()),
        ("high", hi.copy()),
        ("first high rest low", np.where(first, hi, lo)),
        ("first low rest high", np.where(first, lo, hi)),
        ("half high half low", np.where(half, hi, lo)),
        ("half low half high", np.where(half, lo, hi)),
    ]


def _check_in_domain(x: np.ndarray, lo, hi, what: str) -> np.ndarray:
    if x.ndim == 0 or x.shape[0] == 0:
        raise ValueError(
            f"AutoPairs needs {what} with the records on the first axis, got {x.shape}."
        )
    try:
        np.broadcast_to(lo, x.shape[1:])
    except ValueError:
        raise ValueError(
            f"the domain bounds have shape {np.shape(lo)}, a record {x.shape[1:]}: give scalar "
            "bounds or bounds of a record's shape."
        ) from None
    if np.any(x < lo) or np.any(x > hi):
        raise ValueError(f"{what} lie outside the declared domain: widen domain=(lo, hi).")
    return x


def _records(data, claim: Claim, spec: AutoPairs):
    lo, hi = _domain_bounds(spec.domain)
    x = _check_in_domain(np.asarray(data, dtype=np.float64), lo, hi, "the records")
    _check_index(spec.index, x.shape[0])
    return _record_pairs(x, _corners(lo, hi, x.shape[1:]), claim, spec.index)


def _check_index(index: int, n: int) -> None:
    if not -n <= index < n:
        raise ValueError(f"AutoPairs index {index} is out of range for {n} records.")


def _opposite(name: str) -> str:
    """``"first high rest low"`` -> ``"first low rest high"``."""
    swap = {"low": "high", "high": "low"}
    return " ".join(swap.get(w, w) for w in name.split(" "))


def _record_pairs(data, candidates, claim: Claim, index: int):
    """Pairs changing record ``index`` to each candidate record, and opposite candidates."""
    relation = adjacency_of(claim.adjacency)
    names, pairs = [], []
    i = index % _size(data)
    if relation.name == "add-remove":
        names.append(f"remove record {i}")
        pairs.append((data, relation.neighbour(data, i)))
        for name, r in candidates:
            names.append(f"add {name}")
            pairs.append((data, relation.neighbour(data, i, r)))
        return names, pairs
    by_name = dict(candidates)
    for name, r in candidates:
        names.append(f"record {i} := {name}")
        pairs.append((data, relation.neighbour(data, i, r)))
    done = set()
    for name, r in candidates:  # two extremes against each other, each opposite pair once
        for partner in _partners(name, by_name):
            if frozenset((name, partner)) in done:
                continue
            done.add(frozenset((name, partner)))
            names.append(f"record {i}: {name} vs {partner}")
            pairs.append(
                (relation.neighbour(data, i, r), relation.neighbour(data, i, by_name[partner]))
            )
    return names, pairs


def _partners(name: str, by_name: dict) -> list[str]:
    """The candidates opposite to ``name``: low <-> high, with every label for labelled records."""
    base, sep, _ = name.partition(", label ")
    other = _opposite(base)
    if not sep:
        return [other] if other in by_name and other != name else []
    labels = dict.fromkeys(n.partition(", label ")[2] for n in by_name)
    return [f"{other}, label {lab}" for lab in labels if f"{other}, label {lab}" != name]


def _size(data) -> int:
    return int(np.shape(data[0] if isinstance(data, tuple) else data)[0])


# ------------------------------------------------------------------ labelled records


def _labelled(data, claim: Claim, spec: AutoPairs):
    lo, hi = _domain_bounds(spec.domain)
    x = _check_in_domain(np.asarray(data[0], dtype=np.float64), lo, hi, "the features")
    y = np.asarray(data[1])
    if y.ndim == 0 or y.shape[0] != x.shape[0]:
        raise ValueError(
            f"labelled data (X, y) need one label per record: X has {x.shape[0]} records, y "
            f"has shape {y.shape}."
        )
    labels = spec.labels if spec.labels is not None else tuple(np.unique(y).tolist())
    if len(labels) > _MAX_LABELS:
        raise ValueError(
            f"y holds {len(labels)} distinct labels: pass AutoPairs(labels=[...]) with the few "
            "labels to try."
        )
    _check_index(spec.index, x.shape[0])
    candidates = []
    for name, c in _corners(lo, hi, x.shape[1:]):
        for label in labels:
            candidates.append((f"{name}, label {label}", (c, np.asarray(label, dtype=y.dtype))))
    return _record_pairs((x, y), candidates, claim, spec.index)
