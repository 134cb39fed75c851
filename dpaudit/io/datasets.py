"""Named generators of neighbouring datasets ``(D, D')`` for audit specs.

Each generator takes the mechanism (to read public parameters such as ``n``,
``tau``, ``grid_size`` from ``mechanism.params`` when they are not given) and a
seed, and returns a replace-one neighbouring pair whose replaced record is
chosen to move the summary a lot (the extreme of the data bound), so that an
audit looks where a flaw would show:

* ``curves`` — ``n`` smooth random curves on a uniform grid of ``grid_size``
  points (or surfaces on ``grid_size^2`` points with ``dim = 2``) with L2 (or
  sup, ``norm = "sup"``) norm at most ``tau``; record 0 is ``sqrt(2) sin(pi t)``
  scaled to norm ``tau`` in ``D`` and its negative in ``D'``.
* ``points`` — ``n`` uniform points in ``[0, 1]^dim``; record 0 is the origin in
  ``D`` and the opposite corner in ``D'``.
* ``labelled`` — points as above with labels in ``{-1, +1}``; record 0 changes
  both its point and its label.
* ``scores`` — ``n`` scores in ``[0, 1]`` with 0/1 labels; record 0 moves from
  score 0 (label 0) to score 1 (label 1).
* ``bits`` — 0/1 records (``(n,)``, or ``(n, width)`` answers to ``width``
  yes/no queries); record 0 flips from all zeros to all ones.
* ``categories`` — labels in ``0 .. n_bins-1``; record 0 moves from bin 0 to bin 1.
* ``example`` — the pair the mechanism's own module documents
  (``example_pair(name, seed=...)`` in the module or its package), e.g. the
  pair on which a faulty mechanism's flaw is visible.
"""

from __future__ import annotations

import importlib
import inspect
import math
import sys
from collections.abc import Callable

import numpy as np

from dpaudit.core.checks import check_count
from dpaudit.model.mechanism import Mechanism
from dpaudit.model.registry import lookup

__all__ = ["generate", "generators"]


def _param(mechanism: Mechanism, given, name: str, default=None):
    """A generator parameter: as given, else the mechanism's public parameter, else the default."""
    if given is not None:
        return given
    if name in mechanism.params:
        return mechanism.params[name]
    if default is None:
        raise ValueError(
            f"the generator needs {name!r}: give it in [data.params] (the mechanism's "
            f"parameters do not include it)."
        )
    return default


def _count(mechanism: Mechanism, given, name: str, default=None) -> int:
    """A positive integer generator parameter (see :func:`_param`)."""
    return check_count(name, _param(mechanism, given, name, default))


def _differ_in_record_0(data: np.ndarray, first, second) -> tuple[np.ndarray, np.ndarray]:
    """``(D, D')``: ``data`` with record 0 set to ``first``, and a copy with it set to ``second``."""
    data_prime = data.copy()
    data[0], data_prime[0] = first, second
    return data, data_prime


def curves(mechanism, *, seed=0, n=None, grid_size=None, tau=None, norm="l2", dim=None):
    """Smooth random curves with norm <= tau (``norm`` = ``"l2"`` or ``"sup"``); record 0 flips sign.

    ``dim = 2`` gives surfaces on the tensor grid of ``grid_size^2`` points
    (row-major, the layout of ``uniform_grid((g, g), dim=2)``).

    Args:
        mechanism: read for ``n``, ``grid_size``, ``tau``, ``dim`` when not given.
        seed: seed of the random curves.
        n: number of records (curves).
        grid_size: grid points per axis (default 100).
        tau: bound on each record's norm (default 1).
        norm: ``"l2"`` (root mean square over the grid) or ``"sup"``.
        dim: 1 (curves) or 2 (surfaces).

    Returns:
        ``(D, D')``, arrays of shape ``(n, grid_size**dim)``.

    Raises:
        ValueError: for a missing or invalid parameter.
    """
    n = _count(mechanism, n, "n")
    g = _count(mechanism, grid_size, "grid_size", 100)
    dim = _count(mechanism, dim, "dim", 1)
    tau = float(_param(mechanism, tau, "tau", 1.0))
    if not (math.isfinite(tau) and tau > 0):
        raise ValueError(f"tau must be a finite number > 0, got {tau!r}.")
    if norm not in ("l2", "sup"):
        raise ValueError(f"norm must be 'l2' or 'sup', got {norm!r}.")
    if dim not in (1, 2):
        raise ValueError(f"dim must be 1 or 2, got {dim}.")
    rng = np.random.default_rng(seed)
    t = (np.arange(g) + 0.5) / g
    j = np.arange(1, 21)
    axis = np.sqrt(2.0) * np.sin(np.pi * np.outer(t, j))  # (g, 20), L2-orthonormal
    if dim == 1:
        basis = axis
    else:
        pairs = [(a, b) for a in range(6) for b in range(6) if a + b < 6][:20]
        basis = np.stack([np.outer(axis[:, a], axis[:, b]).ravel() for a, b in pairs], axis=1)
        j = np.array([a + b + 1 for a, b in pairs])
    coefficients = rng.standard_normal((n, basis.shape[1])) * j ** (-2.0)
    data = coefficients @ basis.T

    def size(x):
        return np.sqrt(np.mean(x**2, axis=-1)) if norm == "l2" else np.max(np.abs(x), axis=-1)

    # ordinary records: norms spread over [0.1 tau, 0.5 tau], well inside the bound;
    # 1e-300 only guards a division by an all-zero curve
    data *= (0.5 * tau / np.maximum(size(data), 1e-300))[:, None] * rng.uniform(0.2, 1.0, (n, 1))
    # record 0 at the bound, shrunk by 1e-12 so that round-off never puts it outside
    extreme = tau * basis[:, 0] / size(basis[:, 0]) * (1 - 1e-12)
    return _differ_in_record_0(data, extreme, -extreme)


def points(mechanism, *, seed=0, n=None, dim=None):
    """Uniform points in [0, 1]^dim; record 0 jumps between opposite corners.

    Args:
        mechanism: read for ``n`` and ``dim`` when not given.
        seed: seed of the points.
        n: number of records.
        dim: dimension of a point (default 1).

    Returns:
        ``(D, D')``, arrays of shape ``(n, dim)``.

    Raises:
        ValueError: for a missing or invalid parameter.
    """
    n = _count(mechanism, n, "n")
    dim = _count(mechanism, dim, "dim", 1)
    rng = np.random.default_rng(seed)
    d = rng.uniform(0.0, 1.0, (n, dim))
    return _differ_in_record_0(d, 0.0, 1.0)


def labelled(mechanism, *, seed=0, n=None, dim=None):
    """Points in [0, 1]^dim with labels in {-1, +1}; record 0 changes point and label.

    Args:
        mechanism: read for ``n`` and ``dim`` when not given.
        seed: seed of the points (``seed + 1`` for the labels).
        n: number of records.
        dim: dimension of a point (default 1).

    Returns:
        ``((X, y), (X', y'))``: points ``(n, dim)`` and labels ``(n,)``.

    Raises:
        ValueError: for a missing or invalid parameter.
    """
    x, x_prime = points(mechanism, seed=seed, n=n, dim=dim)
    rng = np.random.default_rng(seed + 1)
    y = np.where(rng.uniform(size=x.shape[0]) < 0.5, -1.0, 1.0)
    y, y_prime = _differ_in_record_0(y, -1.0, 1.0)
    return (x, y), (x_prime, y_prime)


def scores(mechanism, *, seed=0, n=None, labels=True):
    """Scores in [0, 1] with 0/1 labels; record 0 moves from (0, 0) to (1, 1).

    With ``labels = False`` the records are the scores alone (an ECDF's input).

    Args:
        mechanism: read for ``n`` when not given.
        seed: seed of the scores and labels.
        n: number of records.
        labels: pair each score with its 0/1 label.

    Returns:
        ``((s, y), (s', y'))``, or ``(s, s')`` without labels; arrays of shape ``(n,)``.

    Raises:
        ValueError: for a missing or invalid ``n``.
    """
    n = _count(mechanism, n, "n")
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=n) < 0.5).astype(float)
    s = np.clip(rng.beta(2.0 + 2.0 * y, 4.0 - 2.0 * y), 0.0, 1.0)
    s, s_prime = _differ_in_record_0(s, 0.0, 1.0)
    y, y_prime = _differ_in_record_0(y, 0.0, 1.0)
    if not labels:
        return s, s_prime
    return (s, y), (s_prime, y_prime)


def bits(mechanism, *, seed=0, n=None, width=None):
    """0/1 records, ``(n,)`` or ``(n, width)``; record 0 is all zeros in D and all ones in D'.

    ``width`` defaults to the number of the mechanism's ``thresholds`` (sparse
    vector: one yes/no answer per query) when it has them.

    Args:
        mechanism: read for ``n`` (and ``thresholds``) when not given.
        seed: seed of the bits.
        n: number of records.
        width: answers per record, or ``None`` for one bit per record.

    Returns:
        ``(D, D')``, arrays of shape ``(n,)`` or ``(n, width)``.

    Raises:
        ValueError: for a missing or invalid parameter.
    """
    n = _count(mechanism, n, "n")
    if width is None and "thresholds" in mechanism.params:
        width = len(mechanism.params["thresholds"])
    rng = np.random.default_rng(seed)
    shape = (n,) if width is None else (n, check_count("width", width))
    d = (rng.uniform(size=shape) < 0.5).astype(float)
    return _differ_in_record_0(d, 0.0, 1.0)


def categories(mechanism, *, seed=0, n=None, n_bins=None):
    """Category labels in ``0 .. n_bins-1``; record 0 moves from bin 0 to bin 1.

    Args:
        mechanism: read for ``n`` and ``n_bins`` when not given.
        seed: seed of the labels.
        n: number of records.
        n_bins: number of categories (at least 2).

    Returns:
        ``(D, D')``, float arrays of shape ``(n,)``.

    Raises:
        ValueError: for a missing or invalid parameter.
    """
    n = _count(mechanism, n, "n")
    k = _count(mechanism, n_bins, "n_bins")
    if k < 2:
        raise ValueError(f"n_bins must be at least 2, got {k}.")
    rng = np.random.default_rng(seed)
    d = rng.integers(0, k, size=n).astype(float)
    return _differ_in_record_0(d, 0.0, 1.0)


def example(mechanism, *, seed=0, **params):
    """The pair the mechanism's module (or package) documents via ``example_pair``.

    The module of the catalogue builder is searched first, then its parent packages.

    Args:
        mechanism: a catalogue mechanism (found by its ``name``).
        seed: passed on when ``example_pair`` takes a seed.
        **params: passed on to ``example_pair``.

    Returns:
        ``(D, D')`` as ``example_pair(name, ...)`` gives it.

    Raises:
        ValueError: when no module of the mechanism defines ``example_pair``.
    """
    entry = lookup(mechanism.name)
    module_name = entry.builder.__module__ if entry is not None else None
    candidates = []
    while module_name:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        if hasattr(module, "example_pair"):
            candidates.append(module.example_pair)
            break
        module_name = module_name.rpartition(".")[0]
    if not candidates:
        raise ValueError(
            f"mechanism {mechanism.name!r} documents no example pair (no example_pair function "
            "in its module); use another generator or data files."
        )
    fn = candidates[0]
    kwargs = {"seed": seed, **params} if "seed" in inspect.signature(fn).parameters else params
    return fn(mechanism.name, **kwargs)


_GENERATORS: dict[str, Callable] = {
    "curves": curves,
    "points": points,
    "labelled": labelled,
    "scores": scores,
    "bits": bits,
    "categories": categories,
    "example": example,
}


def generators() -> list[str]:
    """Names of the dataset generators.

    Returns:
        The names, sorted.

    Example:
        >>> generators()
        ['bits', 'categories', 'curves', 'example', 'labelled', 'points', 'scores']
    """
    return sorted(_GENERATORS)


def generate(name: str, mechanism: Mechanism, *, seed: int = 0, **params):
    """Run generator ``name`` for ``mechanism``; returns ``(D, D')``.

    Args:
        name: a generator (see :func:`generators`).
        mechanism: what the generator reads public parameters from (``name``
            and ``params``): a :class:`~dpaudit.Mechanism`, or
            :class:`dpaudit.io.spec.PublicParameters` for a plain sampler.
        seed: the generator's seed.
        **params: the generator's parameters (``[data.params]`` of a spec).

    Returns:
        The neighbouring datasets ``(D, D')``.

    Raises:
        ValueError: for an unknown generator or bad parameters.
    """
    if name not in _GENERATORS:
        raise ValueError(f"unknown generator {name!r}; one of {generators()}.")
    fn = _GENERATORS[name]
    try:
        inspect.signature(fn).bind(mechanism, seed=seed, **params)
    except TypeError as err:
        raise ValueError(f"generator {name!r} does not take these parameters ({err}).") from None
    return fn(mechanism, seed=seed, **params)
