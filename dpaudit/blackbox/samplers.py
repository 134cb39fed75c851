"""Samplers: the implementation under audit, and how releases are drawn from it in chunks.

A sampler is any callable ``sampler(data, n, key) -> releases`` of shape ``(n, ...)``.
:func:`as_sampler` turns a declared mechanism into one (to audit it as a black
box), :func:`numpy_generator` lets numpy code draw from a JAX key, and
:class:`ReleaseSource` draws the releases of one dataset chunk by chunk, checking
each chunk, so that memory stays bounded whatever the sample size.

Example:
    >>> import numpy as np
    >>> source = ReleaseSource(lambda data, n, key: np.zeros((n, 2)), None, "zeros", 4)
    >>> import jax
    >>> source.draw(6, jax.random.key(0)).shape
    (6, 2)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import numpy as np

from dpaudit.blackbox.drawhelper import helper_enabled, shared_helper, shipped_sampler
from dpaudit.core.checks import check_release_values
from dpaudit.core.errors import user_code_error
from dpaudit.model.mechanism import Mechanism

__all__ = [
    "REPLAY_RELEASES",
    "Categories",
    "OutputLayout",
    "Pilot",
    "ReleaseSource",
    "as_sampler",
    "check_same_shape",
    "chunks_of",
    "drawn_ahead",
    "numpy_generator",
    "open_sources",
    "pilot_run",
    "replays",
]

# A chunk holds at most 2^22 release values (32 MiB of float64) whatever the release size ...
_ELEMENTS_PER_CHUNK = 1 << 22
# ... and at most 2^17 releases, so that progress is reported and scalar releases do not make
# one huge chunk; at least 256 releases, so that very large releases are still batched.
_MAX_CHUNK = 1 << 17
_MIN_CHUNK = 256
# fold_in offsets of the keys of the probe call that measures the release size: far from the
# small integers used to derive the keys of the audit's own draws.
_PROBE_FOLD = 1 << 20
_AUDIT_PROBE_FOLD = 1 << 21
#: Releases of each of the two short runs that check a sampler replays its key: enough that a
#: sampler of two outcomes ignoring its key agrees by chance with probability 2^-64 at most.
REPLAY_RELEASES = 64
# What a sampler returning bad releases must do instead (the end of the one sentence).
_RELEASE_FIX = (
    "return an array of shape (n, ...) of real numbers (booleans, integers, strings and +-inf "
    "are fine; NaN and complex numbers are not)"
)


def as_sampler(mechanism: Mechanism) -> Callable:
    """A plain sampler ``(data, n, key) -> releases`` drawing from ``mechanism``'s model.

    The audit sees only the samples: this is how a declared mechanism is audited
    *as a black box* (e.g. to compare with the white-box :func:`dpaudit.audit`).

    Args:
        mechanism: a :class:`~dpaudit.Mechanism`.

    Returns:
        The sampler, named after the mechanism.

    Raises:
        TypeError: if ``mechanism`` is not a :class:`~dpaudit.Mechanism`.
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"as_sampler needs a dpaudit.Mechanism, got {type(mechanism).__name__}.")

    def sampler(data, n, key):
        return mechanism.sample(data, key, n)

    sampler.__name__ = mechanism.name
    return sampler


def numpy_generator(key) -> np.random.Generator:
    """A numpy ``Generator`` seeded from a JAX key, for samplers written in numpy.

    Args:
        key: a JAX PRNG key.

    Returns:
        A ``numpy.random.Generator`` determined by the key's data.

    Example:
        >>> import jax
        >>> g = numpy_generator(jax.random.key(3))
        >>> g.laplace(size=2).shape
        (2,)
    """
    data = np.asarray(jax.random.key_data(key)).ravel().tolist()
    return np.random.default_rng(data)


def chunks_of(n: int, chunk: int) -> int:
    """How many sampler calls of ``min(chunk, n)`` releases draw ``n`` releases.

    Args:
        n: releases wanted.
        chunk: releases per call.

    Returns:
        ``ceil(n / min(chunk, n))``.
    """
    return -(-n // min(chunk, n))


class Categories:
    """One index per distinct non-numeric output (strings, objects), in order of first sight.

    Shared by every source of an audit, so that a category has one index in the
    selection and the certification releases of both datasets. The indices are
    labels, not magnitudes: the default features give each its own histogram bin.
    """

    def __init__(self) -> None:
        self.index: dict = {}

    def indices(self, x: np.ndarray, name: str) -> np.ndarray:
        """The index of each output (new categories get the next indices).

        Args:
            x: outputs of any non-numeric dtype.
            name: the sampler's name in error messages.

        Returns:
            A float array of indices, of ``x``'s shape.

        Raises:
            TypeError: for unhashable outputs.
        """
        flat = x.ravel()
        try:  # vectorised: the distinct outputs in order of first sight, and each one's rank
            uniques, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
            order = np.argsort(first, kind="stable")
            seen = uniques[order].tolist()
        except TypeError:  # outputs that do not sort (mixed types) or do not hash
            return self._indices_one_by_one(flat, name).reshape(x.shape)
        codes = np.empty(len(seen))
        try:
            for rank, u in zip(order.tolist(), seen, strict=True):  # one per category
                codes[rank] = self.index.setdefault(u, len(self.index))
        except TypeError as err:
            raise TypeError(_unhashable(name, err)) from None
        return codes[inverse.ravel()].reshape(x.shape)

    def _indices_one_by_one(self, flat: np.ndarray, name: str) -> np.ndarray:
        """The same indices for outputs ``np.unique`` cannot sort (a loop over the outputs)."""
        try:
            uniques = dict.fromkeys(flat.tolist())
        except TypeError as err:
            raise TypeError(_unhashable(name, err)) from None
        for u in uniques:
            self.index.setdefault(u, len(self.index))
        return np.fromiter((self.index[v] for v in flat.tolist()), float, flat.size)


def _unhashable(name: str, err: Exception) -> str:
    return (
        f"the sampler {name!r} returned outputs that are neither numbers nor hashable "
        f"categories ({err}); return numbers or strings."
    )


class OutputLayout:
    """Flattens multi-output releases (a tuple or dict of arrays) into one array per release.

    The structure (tuple length or dict keys, and each part's shape) is fixed by the
    first call; a sampler whose outputs change structure or shape between calls is
    refused with one sentence.
    """

    def __init__(self) -> None:
        self.categories = Categories()
        self.structure = None

    def flatten(self, x, n: int, name: str) -> np.ndarray:
        """``x`` as an ``(n, p)`` array if it is a tuple/list/dict of arrays, else as an array.

        Args:
            x: the sampler's output for ``n`` releases.
            n: releases requested.
            name: the sampler's name in error messages.

        Returns:
            The array.

        Raises:
            ValueError: if a part is not ``(n, ...)`` or the structure changed.
        """
        if isinstance(x, dict):
            keys = tuple(sorted(x, key=str))
            parts = [x[k] for k in keys]
        elif isinstance(x, tuple | list):
            keys, parts = len(x), list(x)
        else:
            return np.asarray(x)
        arrays = []
        for part in parts:
            a = np.asarray(part)
            if a.ndim == 0 or a.shape[0] != n:
                raise ValueError(
                    f"the sampler {name!r} returned a multi-output release with a part of shape "
                    f"{a.shape} when asked for {n} releases; every part must have shape (n, ...)."
                )
            if a.dtype.kind in "OUS":
                a = self.categories.indices(a, name)
            a = check_release_values(
                f"a part of the releases of the sampler {name!r}", a, n, fix=_RELEASE_FIX
            )
            arrays.append(a.reshape(n, -1).astype(np.float64))
        structure = (keys, tuple(np.asarray(p).shape[1:] for p in parts))
        if self.structure is None:
            self.structure = structure
        elif structure != self.structure:
            raise ValueError(
                f"the sampler {name!r} returned outputs {_describe(structure)} after "
                f"{_describe(self.structure)}; a multi-output sampler must return the same parts "
                "of the same shapes on every call."
            )
        return np.concatenate(arrays, axis=1)


def _describe(structure) -> str:
    keys, shapes = structure
    names = [f"[{k}]" for k in keys] if isinstance(keys, tuple) else range(keys)
    return "(" + ", ".join(f"{k}: {s}" for k, s in zip(names, shapes, strict=True)) + ")"


class ReleaseSource:
    """Draws releases of one dataset in fixed-size chunks (one sampler shape: no recompiles).

    Args:
        sampler: the implementation, ``sampler(data, n, key) -> (n, ...)`` releases.
        data: the dataset it is called on.
        name: the sampler's name in error messages.
        chunk: releases per call, or ``None`` to derive it from the release size.

    Attributes:
        shape: the shape of one release, known after the first call.
    """

    def __init__(self, sampler: Callable, data, name: str, chunk: int | None, outputs=None) -> None:
        self.sampler = sampler
        self.data = data
        self.name = name
        self.chunk = chunk
        self.shape: tuple[int, ...] | None = None
        # The dtype the sampler returned (releases are handed on as float64).
        self.release_dtype: np.dtype | None = None
        # Shared by the sources of one audit: one category index and one output structure.
        self.outputs = outputs if outputs is not None else OutputLayout()
        # A per-release sampler (a library called once per release) that says its first m
        # releases of a call for n are the releases of a call for m (same key): a last,
        # partial chunk is drawn at its own size, not drawn whole and cut (library calls
        # are its cost, and no program is compiled per shape).
        self.prefix_stable = bool(getattr(sampler, "prefix_stable", False))
        # A host-Python sampler's calls asked of the helper process ahead of need:
        # (releases, key data) -> ticket (dpaudit.blackbox.drawhelper).
        self.shipped: bytes | None = None
        self.ahead: dict = {}

    def ask_ahead(self, requests) -> None:
        """Ask the helper process for these calls now (a host-Python sampler, when enabled).

        The calls are drawn there while this process draws others; :meth:`call` takes
        their releases (the same ``sampler(data, n, key)``: the same releases).

        Args:
            requests: ``(n, key)`` of the calls this source will make.
        """
        if self.shipped is None:
            self.shipped = shipped_sampler(self.sampler) or b""
        if not requests or not self.shipped or not helper_enabled():
            return
        helper = shared_helper()
        for n, key in requests:
            ticket = helper.submit(self.shipped, self.data, n, key)
            if ticket is None:
                return
            self.ahead[(int(n), _key_bytes(key))] = ticket

    def forget_ahead(self) -> None:
        """Tell the helper the calls asked ahead and not taken are no longer needed."""
        helper = shared_helper()
        for ticket in self.ahead.values():
            helper.discard(ticket)
        self.ahead = {}

    def _sample(self, n: int, key):
        """``sampler(data, n, key)``: the helper's answer if it was asked ahead, else here."""
        ticket = self.ahead.pop((int(n), _key_bytes(key)), None) if self.ahead else None
        if ticket is not None:
            answer = shared_helper().take(ticket)
            if answer is not None and answer[0] == "refused":
                self.shipped = b""  # the helper cannot run it: this source draws here
            elif answer is not None:
                status, value = answer
                if status == "error":
                    raise value
                return value
        return self.sampler(self.data, n, key)

    def _call(self, n: int, key) -> np.ndarray:
        try:
            x = self._sample(n, key)
        except Exception as err:  # report, with the sampler's name, what went wrong
            message = (
                f"the sampler {self.name!r} failed on a request for {n} releases: "
                f"{type(err).__name__}: {err}"
            )
            # still a ValueError / TypeError for the Python API; a crash (exit 3) for the CLI
            raise user_code_error(message, err) from err
        return self._checked(self.outputs.flatten(x, n, self.name), n)

    def _checked(self, x: np.ndarray, n: int) -> np.ndarray:
        self.release_dtype = x.dtype
        if x.dtype == bool:
            x = x.astype(np.float64)
        if x.dtype.kind in "OUS" and x.ndim >= 1 and x.shape[0] == n:
            x = self.outputs.categories.indices(x, self.name)
        # complex, NaN, non-numeric or mis-counted releases: one sentence (the checks every
        # entry point shares); +-inf releases pass, an outcome of their own (the "infinite" arm)
        x = check_release_values(
            f"the releases of the sampler {self.name!r}", x, n, fix=_RELEASE_FIX
        )
        if self.shape is None:
            self.shape = tuple(x.shape[1:])
        elif tuple(x.shape[1:]) != self.shape:
            raise ValueError(
                f"the sampler {self.name!r} returned releases of shape {x.shape[1:]} after "
                f"{self.shape}; releases must keep one shape."
            )
        return x.astype(np.float64, copy=False)

    def releases_of_chunk(self, chunk: int, rest: int) -> int:
        """Releases to draw for a chunk of ``chunk`` of which ``rest`` are still needed.

        Args:
            chunk: the chunk size.
            rest: releases still needed (the chunk's releases past ``rest`` are cut).

        Returns:
            ``min(chunk, rest)`` for a prefix-stable sampler, else ``chunk`` (one shape).
        """
        return min(chunk, rest) if self.prefix_stable else chunk

    def chunk_size(self, key) -> int:
        """Releases per sampler call, probing the release size once if not given.

        Args:
            key: the key of the probe call (2 releases), used only when the size is unknown.

        Returns:
            The chunk size.

        Raises:
            ValueError, TypeError: if the probe call fails or returns bad releases.
        """
        if self.chunk is None:
            probe = self._call(2, key)
            width = int(np.prod(probe.shape[1:], dtype=np.int64)) or 1
            self.chunk = int(max(_MIN_CHUNK, min(_MAX_CHUNK, _ELEMENTS_PER_CHUNK // width)))
        return self.chunk

    def _chunk_keys(self, n: int, key):
        chunk = min(self.chunk_size(jax.random.fold_in(key, _PROBE_FOLD)), n)
        n_chunks = -(-n // chunk)
        return chunk, jax.random.split(key, n_chunks)

    def chunk_keys(self, n: int, key) -> tuple[int, jax.Array]:
        """The chunk size and the chunk keys of ``n`` releases drawn with ``key``.

        Args:
            n: releases wanted.
            key: a JAX key; chunk ``i`` uses ``split(key, chunks)[i]``.

        Returns:
            ``(chunk, keys)``.
        """
        return self._chunk_keys(n, key)

    def call(self, n: int, key) -> np.ndarray:
        """One sampler call of ``n`` releases, checked (shape, dtype, no NaN).

        Args:
            n: releases wanted.
            key: the call's JAX key.

        Returns:
            The ``(n, ...)`` float64 releases.

        Raises:
            ValueError, TypeError: if the sampler fails or returns bad releases.
        """
        return self._call(n, key)

    def draw(
        self, n: int, key, score: Callable | None = None, progress=None, skip=None
    ) -> np.ndarray:
        """``n`` releases (``score is None``) or their scores ``score(chunk)``, drawn in chunks.

        Args:
            n: releases to draw.
            key: a JAX key; chunk ``i`` uses ``split(key, chunks)[i]``.
            score: applied to each chunk of releases (e.g. features or a statistic).
            progress: a :class:`dpaudit.core.progress.ProgressBar` advanced once per chunk.
            skip: ``(lo, hi)``: releases ``lo .. hi - 1`` are not needed, so the chunks
                lying wholly inside that range are not drawn (the others are drawn with
                the same keys as without ``skip``, so they hold the same releases).

        Returns:
            The releases or scores, concatenated along the first axis: all ``n``, or
            without ``skip`` at least the first ``lo`` and the last ``n - hi`` (the rows
            of the chunks that were drawn).

        Raises:
            ValueError, TypeError: if the sampler fails or returns bad releases.
        """
        chunk, keys = self._chunk_keys(n, key)
        out = []
        for c, chunk_key in enumerate(keys):
            start, stop = c * chunk, min((c + 1) * chunk, n)
            if _needed(start, stop, skip):  # a chunk holding a needed release
                # whole chunks (one shape for score) unless the sampler is prefix-stable
                x = self._call(self.releases_of_chunk(chunk, n - start), chunk_key)
                out.append(np.asarray(x if score is None else score(x))[: stop - start])
            if progress is not None:
                progress.advance()
        return np.concatenate(out, axis=0)

    def draw_requests(self, n: int, key, skip=None) -> list:
        """The sampler calls ``(releases, key)`` that :meth:`draw` makes for these arguments.

        Args:
            n: releases to draw.
            key: the JAX key of the draw.
            skip: as for :meth:`draw`.

        Returns:
            The calls, in order.
        """
        chunk, keys = self._chunk_keys(n, key)
        return [
            (self.releases_of_chunk(chunk, n - c * chunk), chunk_key)
            for c, chunk_key in enumerate(keys)
            if _needed(c * chunk, min((c + 1) * chunk, n), skip)
        ]

    def tally(self, n: int, key, score, sign: float, threshold: float, keep: int, progress=None):
        """Stream ``n`` scores: ``#{sign*s > t}``, ``#{sign*s = t}`` and the first ``keep`` values.

        Certification needs only counts, so memory stays bounded whatever ``n`` is.

        Args:
            n: releases to draw.
            key: a JAX key, split per chunk as in :meth:`draw`.
            score: the statistic, releases ``(m, ...) -> (m,)``.
            sign: ``+1`` or ``-1`` (the direction of the event).
            threshold: ``t``.
            keep: how many of the signed scores to return (for plots).
            progress: a :class:`dpaudit.core.progress.ProgressBar` advanced once per chunk.

        Returns:
            ``(above, ties, head)``: the two counts and the first ``keep`` signed scores.

        Raises:
            ValueError, TypeError: if the sampler fails or returns bad releases.
        """
        chunk, keys = self._chunk_keys(n, key)
        above = ties = 0
        head = []
        for i, chunk_key in enumerate(keys):
            x = self._call(self.releases_of_chunk(chunk, n - i * chunk), chunk_key)
            s = sign * np.asarray(score(x))[: n - i * chunk]
            above += int(np.count_nonzero(s > threshold))
            ties += int(np.count_nonzero(s == threshold))
            if i * chunk < keep:
                head.append(s[: keep - i * chunk])
            if progress is not None:
                progress.advance()
        return above, ties, np.concatenate(head) if head else np.zeros(0)


def _needed(start: int, stop: int, skip) -> bool:
    """Whether releases ``start .. stop - 1`` hold one outside ``skip = (lo, hi)``."""
    lo, hi = skip if skip is not None else (0, 0)
    return not lo <= start < stop <= hi


def _key_bytes(key) -> bytes:
    """A JAX key's data, as the dictionary key of a call asked ahead."""
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return np.asarray(key).tobytes()


@contextlib.contextmanager
def drawn_ahead(source: ReleaseSource, requests):
    """Within the block, ``source``'s calls ``requests`` are drawn by the helper process.

    The block draws something else first (the other dataset of the pair); what the
    helper drew is taken when ``source`` makes those calls, and what was not taken is
    forgotten when the block ends (also on an error).

    Args:
        source: the :class:`ReleaseSource` drawn second.
        requests: its calls ``(n, key)`` (:meth:`ReleaseSource.draw_requests`).

    Yields:
        Nothing.
    """
    source.ask_ahead(requests)
    try:
        yield
    finally:
        if source.ahead:
            source.forget_ahead()


def open_sources(
    sampler: Callable, pairs: Sequence[tuple], name: str, chunk_size: int | None, root
) -> list[tuple[ReleaseSource, ReleaseSource]]:
    """One :class:`ReleaseSource` per dataset of each pair, all with one chunk size.

    One chunk size for every dataset keeps one sampler shape (no recompiles of a
    jitted sampler); it is probed on the first dataset when not given.

    Args:
        sampler: the implementation.
        pairs: the neighbouring pairs ``(D, D')``.
        name: the sampler's name in error messages.
        chunk_size: releases per call, or ``None``.
        root: the audit's root key (the probe uses a key derived from it).

    Returns:
        ``[(source of D, source of D'), ...]``, one per pair.

    Raises:
        ValueError, TypeError: if the probe call fails or returns bad releases.
    """
    layout = OutputLayout()
    sources = [
        (
            ReleaseSource(sampler, d, name, chunk_size, layout),
            ReleaseSource(sampler, dp, name, chunk_size, layout),
        )
        for d, dp in pairs
    ]
    chunk = sources[0][0].chunk_size(jax.random.fold_in(root, _AUDIT_PROBE_FOLD))
    for source_d, source_dp in sources:
        source_d.chunk = source_dp.chunk = chunk
    return sources


def replays(source: ReleaseSource, key, n: int = REPLAY_RELEASES) -> bool:
    """Whether two short runs of ``source``'s sampler from one key give the same releases.

    A sampler that ignores its key (its own randomness) is not reproducible from the
    audit's seed; its bounds stay valid (they need independent releases only), but the
    result must not say it is reproducible.

    Args:
        source: a :class:`ReleaseSource` (its sampler and dataset).
        key: the JAX key of both runs (not one the audit draws with).
        n: releases per run.

    Returns:
        ``True`` when both runs agree exactly (NaN-free releases, compared as floats).

    Raises:
        ValueError, TypeError: if the sampler fails or returns bad releases.
    """
    return bool(np.array_equal(source.call(n, key), source.call(n, key)))


class Pilot(NamedTuple):
    """What the short runs before an audit measured of a sampler.

    Attributes:
        replays: two runs from one key gave the same releases (``None``: not checked).
        seconds_per_release: wall time per release of the last (warm) run.
        bytes_per_release: memory of one release as the audit holds it.
        releases: releases per run.
    """

    replays: bool | None
    seconds_per_release: float
    bytes_per_release: float
    releases: int


def pilot_run(source: ReleaseSource, key, *, replay: bool, n: int = REPLAY_RELEASES) -> Pilot:
    """Time short runs of ``source``'s sampler; with ``replay``, check that they agree.

    The second run is timed (the first may compile); without ``replay`` there is one run.

    Args:
        source: a :class:`ReleaseSource` (its sampler and dataset).
        key: the JAX key of the runs (not one the audit draws with).
        replay: run twice from ``key`` and compare (:func:`replays`).
        n: releases per run.

    Returns:
        The :class:`Pilot`.

    Raises:
        ValueError, TypeError: if the sampler fails or returns bad releases.
    """
    first = source.call(n, key) if replay else None
    start = time.perf_counter()
    last = source.call(n, key)
    seconds = time.perf_counter() - start
    same = bool(np.array_equal(first, last)) if replay else None
    return Pilot(same, seconds / n, np.asarray(last).nbytes / n, n)


def check_same_shape(sources: tuple[ReleaseSource, ReleaseSource], name: str) -> None:
    """Raise ``ValueError`` unless the two datasets of a pair gave releases of one shape.

    Args:
        sources: the sources of ``D`` and ``D'`` (after drawing from both).
        name: the sampler's name in the message.

    Raises:
        ValueError: if the release shapes differ.
    """
    if sources[0].shape != sources[1].shape:
        raise ValueError(
            f"the sampler {name!r} returns releases of shape {sources[0].shape} for D but "
            f"{sources[1].shape} for D'; neighbouring datasets must give releases of one shape "
            "(pad or fix the implementation)."
        )
