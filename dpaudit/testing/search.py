r"""Worst-case neighbour search: how large can ``||f_D - f_D'||`` really get?

A mechanism calibrates its noise to a claimed sensitivity
``Delta >= sup_{D ~ D'} ||f_D - f_D'||``. Summaries in dpaudit are JAX
functions of the data, so the supremum can be *searched* directly: the
replaced record (and, optionally, the whole dataset) is moved by projected
gradient ascent on the sensitivity norm, subject to the data bound, from many
random restarts (one ``jit``-compiled program run from each start, in this process
or one task per start on workers; every other restart starts from a dataset of
identical records, where thresholds and saturations are reached);
summaries without a useful gradient (ECDF counts, anything piecewise constant,
or not traceable by JAX) fall back to random search followed by scipy's
differential evolution. The result is the worst pair found and the
ratio ``||f_D - f_D'|| / Delta``: a ratio above 1 is a counterexample to the
claim; a ratio close to 1 says the bound is tight.

The search stays inside a record space (:mod:`dpaudit.testing.record_spaces`:
:class:`L2Ball`, :class:`Box`, :class:`Labels`, :class:`Product`), which
supplies a projection, a sampler and a map from the unit cube onto the set.

Gradient ascent is Riemannian: the gradient is taken in the space's own metric
(for the weighted L2 ball ``g_a / w_a``), normalised per record and stepped
with a cosine-decaying step ``learning_rate * scale``, then projected. With
the Euclidean gradient and a weighted projection the ascent would converge to
the wrong direction on a non-uniform grid.

Example:
    >>> import jax.numpy as jnp
    >>> from dpaudit.model.spaces import uniform_grid
    >>> grid = uniform_grid(20)
    >>> mean = lambda data: jnp.mean(data, axis=0)
    >>> l2 = lambda h: jnp.sqrt(jnp.sum(grid.weights * h * h))
    >>> worst = worst_neighbours(mean, l2, bound=2 * 1.0 / 10, record_space=L2Ball(1.0, grid), n=10,
    ...                          budget=SearchBudget(restarts=4, steps=60))
    >>> round(worst.ratio, 6)  # 2 tau / n is attained by two antipodal curves
    1.0
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.core.checks import check_finite_number
from dpaudit.core.executors import resolve_executor
from dpaudit.model.adjacency import REPLACE_ONE, Adjacency, insert_record, n_records, replace_record
from dpaudit.model.mechanism import Mechanism, adjacency_of
from dpaudit.testing.record_spaces import Box as Box
from dpaudit.testing.record_spaces import L2Ball as L2Ball
from dpaudit.testing.record_spaces import Labels as Labels
from dpaudit.testing.record_spaces import Product as Product
from dpaudit.testing.record_spaces import RecordSpace as RecordSpace
from dpaudit.testing.record_spaces import record_space_of as record_space_of

# the record spaces imported above stay importable from here (``X as X``: re-exported)
__all__ = [
    "SearchBudget",
    "SensitivityTarget",
    "WorstCase",
    "describe_pair",
    "pair_phrase",
    "sensitivity_target",
    "worst_neighbours",
]


# ------------------------------------------------------------------------ targets


@dataclasses.dataclass(frozen=True)
class SensitivityTarget:
    """What is searched: ``summary``, the ``norm`` of differences, the claimed ``bound``.

    Attributes:
        summary: ``summary(data) -> f_D`` (an array or pytree of arrays).
        norm: ``norm(h)`` of a difference of summaries.
        bound: the claimed sensitivity (None: search only, no ratio).
        adjacency: the :class:`~dpaudit.model.adjacency.Adjacency` of the claim.
        name: for messages.
    """

    summary: Callable
    norm: Callable
    bound: float | None
    adjacency: Adjacency = REPLACE_ONE
    name: str = "summary"

    def distance(self, data, data_prime) -> float:
        """``||f_D - f_D'||`` evaluated outside ``jit``.

        Args:
            data: the dataset ``D``.
            data_prime: its neighbour ``D'``.

        Returns:
            The norm of the difference of the two summaries.
        """
        diff = jax.tree_util.tree_map(jnp.subtract, self.summary(data), self.summary(data_prime))
        return float(self.norm(diff))


def sensitivity_target(target, norm=None, bound=None, *, adjacency=None) -> SensitivityTarget:
    """A :class:`SensitivityTarget` from a :class:`~dpaudit.Mechanism` or ``(summary, norm, bound)``.

    Args:
        target: a :class:`~dpaudit.Mechanism`, a :class:`SensitivityTarget`
            (returned as it is) or a summary function.
        norm: the norm of a difference of summaries (required with a function;
            overrides the mechanism's).
        bound: the claimed sensitivity (the mechanism's claim by default; None
            with a function: search only).
        adjacency: the relation (the claim's, or replace-one).

    Returns:
        The :class:`SensitivityTarget`.

    Raises:
        ValueError: if the mechanism declares no summary/norm, or a summary is
            given without a norm.
        TypeError: if ``target`` is neither a mechanism nor callable.
    """
    if isinstance(target, SensitivityTarget):
        return target
    if isinstance(target, Mechanism):
        if target.summary is None or target.difference_norm is None:
            raise ValueError(
                f"mechanism {target.name!r} declares no summary/difference_norm, so its "
                "sensitivity cannot be searched."
            )
        return SensitivityTarget(
            summary=target.summary,
            norm=norm if norm is not None else target.difference_norm,
            bound=bound if bound is not None else target.claim.sensitivity,
            adjacency=adjacency_of(adjacency if adjacency is not None else target.claim),
            name=target.name,
        )
    if not callable(target):
        raise TypeError(
            f"the search target must be a dpaudit.Mechanism or a summary function, got "
            f"{type(target).__name__}."
        )
    if norm is None or not callable(norm):
        raise ValueError(
            "give the norm of a difference of summaries, e.g. norm=dpaudit.model.spaces.l2_norm."
        )
    if bound is not None:
        bound = check_finite_number("bound", bound)
        if bound <= 0:
            raise ValueError(f"the claimed sensitivity bound must be > 0, got {bound!r}.")
    return SensitivityTarget(
        summary=target,
        norm=norm,
        bound=bound,
        adjacency=adjacency_of(adjacency if adjacency is not None else REPLACE_ONE),
        name=getattr(target, "__name__", "summary"),
    )


# ------------------------------------------------------------------------ budget


@dataclasses.dataclass(frozen=True)
class SearchBudget:
    """How much work a search may do (fixed, so results are reproducible).

    Attributes:
        restarts: gradient-ascent restarts (one compiled program run from each start;
            an executor runs them one task per start).
        steps: projected gradient steps per restart.
        learning_rate: first step as a fraction of the record space's ``scale``
            (cosine decay to 0).
        candidates: random pairs evaluated by derivative-free search (the best
            one starts differential evolution).
        evolution_iterations: generations of differential evolution (0: none).
        evolution_population: population size of differential evolution.
    """

    restarts: int = 16
    steps: int = 150
    learning_rate: float = 0.5
    candidates: int = 512
    evolution_iterations: int = 40
    evolution_population: int = 64

    def __post_init__(self):
        for field in ("restarts", "steps", "candidates", "evolution_population"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"SearchBudget {field} must be a positive integer, got {value!r}.")
        value = self.evolution_iterations
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(
                f"SearchBudget evolution_iterations must be an integer >= 0, got {value!r}."
            )
        lr = check_finite_number("SearchBudget learning_rate", self.learning_rate)
        if lr <= 0:
            raise ValueError(f"SearchBudget learning_rate must be > 0, got {lr!r}.")

    @classmethod
    def long(cls) -> SearchBudget:
        """A budget for local runs (``HYPOTHESIS_PROFILE=long``): 8x the restarts and candidates."""
        return cls(restarts=128, steps=400, candidates=4096, evolution_iterations=200)


# ------------------------------------------------------------------------ result


@dataclasses.dataclass(frozen=True)
class WorstCase:
    """The worst neighbouring pair a search found.

    Attributes:
        data, data_prime: the pair (numpy arrays, records on the first axis);
            ``data`` has ``n`` records (under add-remove ``data_prime`` lacks
            record ``index``).
        index: the record that differs.
        distance: ``||f_D - f_D'||`` of the pair, evaluated outside ``jit``.
        bound: the claimed sensitivity (None when none was given).
        ratio: ``distance / bound`` (nan without a bound).
        adjacency: name of the relation searched.
        method: ``"gradient"``, ``"random"`` or ``"evolution"`` — the phase
            that found the pair.
        evaluations: objective evaluations spent.
        seed: the seed that reproduces the search.
        name: name of the summary or mechanism.
    """

    data: Any
    data_prime: Any
    index: int
    distance: float
    bound: float | None
    ratio: float
    adjacency: str
    method: str
    evaluations: int
    seed: int
    name: str = "summary"

    def exceeds(self, rtol: float = 1e-6, atol: float = 0.0) -> bool:
        """True when ``distance > bound (1 + rtol) + atol`` (a counterexample).

        Args:
            rtol: relative tolerance on the bound (rounding in the summary).
            atol: absolute tolerance on the bound.

        Returns:
            False when no bound was given.
        """
        if self.bound is None:
            return False
        return self.distance > self.bound * (1.0 + rtol) + atol

    def describe(self) -> str:
        """The pair and the figures, in a few lines."""
        records = describe_pair(self.data, self.data_prime, self.index, self.adjacency)
        bound = "no bound given" if self.bound is None else f"bound {self.bound:.6g}"
        return (
            f"||f_D - f_D'|| = {self.distance:.6g}, {bound}, ratio {self.ratio:.6f} "
            f"({self.adjacency}, n = {n_records(self.data)}; found by {self.method} search "
            f"with seed {self.seed}, {self.evaluations} evaluations)\n{records}"
        )


def _format_record(record) -> str:
    def fmt(x):
        x = np.asarray(x)
        if x.ndim == 0:
            return f"{x.item():.6g}" if np.issubdtype(x.dtype, np.floating) else str(x.item())
        return np.array2string(x, precision=4, threshold=8, edgeitems=3, separator=", ")

    leaves = jax.tree_util.tree_leaves(record)
    if len(leaves) == 1:
        return fmt(leaves[0])
    return "(" + ", ".join(fmt(leaf) for leaf in leaves) + ")"


def pair_phrase(data, data_prime, index: int, adjacency: str) -> str:
    """The record that differs between ``D`` and ``D'``, in a few words.

    Args:
        data: the dataset ``D`` (records on the first axis; a pytree of arrays).
        data_prime: its neighbour ``D'``.
        index: the record that differs (under add-remove: the one ``D'`` lacks).
        adjacency: ``"replace-one"`` or ``"add-remove"``.

    Returns:
        ``"record 9 differs (0 -> 1)"`` under replace-one, ``"D' is D without record 9 (0.5)"``
        under add-remove.
    """
    old = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[index], data)
    if adjacency == "replace-one":
        new = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[index], data_prime)
        return f"record {index} differs ({_format_record(old)} -> {_format_record(new)})"
    return f"D' is D without record {index} ({_format_record(old)})"


def describe_pair(data, data_prime, index: int, adjacency: str) -> str:
    """The record that differs between ``D`` and ``D'``, as indented lines for a message.

    Args:
        data: the dataset ``D`` (records on the first axis; a pytree of arrays).
        data_prime: its neighbour ``D'``.
        index: the record that differs (under add-remove: the one ``D'`` lacks).
        adjacency: ``"replace-one"`` or ``"add-remove"``.

    Returns:
        Two lines (old and new record) under replace-one, one line under add-remove.
    """
    old = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[index], data)
    if adjacency == "replace-one":
        new = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[index], data_prime)
        return (
            f"  record {index} of D:  {_format_record(old)}\n"
            f"  record {index} of D': {_format_record(new)}"
        )
    return f"  D' is D without record {index}: {_format_record(old)}"


# ------------------------------------------------------------------------ search


def _tree_where(condition, x, y):
    return jax.tree_util.tree_map(lambda a, b: jnp.where(condition, a, b), x, y)


def _as_numpy(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


def _numpy_pair(replace: bool, base, old, new, index: int):
    """The pair ``(D, D')`` in numpy (outside ``jit``)."""
    index = int(index)
    if replace:
        base = _as_numpy(base)
        return replace_record(base, index, _as_numpy(old)), replace_record(
            base, index, _as_numpy(new)
        )
    return insert_record(_as_numpy(base), index, _as_numpy(old)), _as_numpy(base)


def _pick(tree, r: int):
    return jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[r], tree)


class _Problem:
    """The objective over (base dataset, old record, new record, index), with static layout."""

    def __init__(self, target, space: RecordSpace, n: int, base, vary: str, budget: SearchBudget):
        self.target, self.space, self.n, self.vary, self.budget = target, space, n, vary, budget
        self.replace = target.adjacency.name == "replace-one"
        # base dataset: n records under replace-one, n - 1 under add-remove
        self.base_size = n if self.replace else n - 1
        self.fixed_base = base
        self.leaves = space.leaf_spaces()

    def pair(self, base, old, new, index):
        if self.replace:
            return replace_record(base, index, old), replace_record(base, index, new)
        return insert_record(base, index, old), base

    def objective(self, base, old, new, index):
        data, data_prime = self.pair(base, old, new, index)
        diff = jax.tree_util.tree_map(
            jnp.subtract, self.target.summary(data), self.target.summary(data_prime)
        )
        value = jnp.asarray(self.target.norm(diff), dtype=jnp.float64)
        return jnp.where(jnp.isfinite(value), value, -jnp.inf)

    def draw(self, rng: np.random.Generator, batch: int):
        """Random (base, old, new, index) for ``batch`` restarts (numpy)."""
        if self.fixed_base is None:
            base = self.space.sample(rng, (batch, self.base_size))
            # every other restart starts from a dataset of identical records: extreme
            # summaries (a mean far from 0, all mass at one point) reach thresholds and
            # saturations that i.i.d. records average away
            same = np.arange(batch) % 2 == 1
            base = jax.tree_util.tree_map(
                lambda leaf: np.where(
                    same.reshape((batch,) + (1,) * (leaf.ndim - 1)), leaf[:, :1], leaf
                ),
                base,
            )
        else:
            base = jax.tree_util.tree_map(
                lambda leaf: np.broadcast_to(leaf, (batch, *np.shape(leaf))), self.fixed_base
            )
        old = self.space.sample(rng, (batch,))
        new = self.space.sample(rng, (batch,))
        index = rng.integers(0, self.n, size=batch)
        return base, old, new, index

    def from_unit(self, u):
        """(old, new) from unit-cube coordinates ``(..., 2 unit_dim)``."""
        k = self.space.unit_dim
        return self.space.from_unit(u[..., :k]), self.space.from_unit(u[..., k : 2 * k])


def _batched_objective(problem: _Problem):
    """``jit(vmap(objective))`` when the summary is traceable, else a Python loop."""
    vmapped = jax.jit(jax.vmap(problem.objective))

    def python_loop(base, old, new, index):
        values = []
        for r in range(int(np.shape(index)[0])):
            data, data_prime = _numpy_pair(
                problem.replace, _pick(base, r), _pick(old, r), _pick(new, r), int(index[r])
            )
            values.append(problem.target.distance(data, data_prime))
        return np.asarray(values)

    def evaluate(base, old, new, index):
        nonlocal vmapped
        if vmapped is not None:
            try:
                return np.asarray(vmapped(base, old, new, index))
            except Exception:  # not traceable: evaluate pair by pair; real errors re-raise there
                vmapped = None
        return python_loop(base, old, new, index)

    return evaluate


def _gradient_phase(problem: _Problem, starts, program=None):
    """Projected (Riemannian, normalised) gradient ascent from the given starts.

    Returns the best variables and value of each restart and the size of the
    first gradient (all zero: the objective is flat, e.g. piecewise constant).
    ``program`` is :func:`_gradient_program` of the problem (built here when not given).

    The starts run one after another through one compiled program (a batch of one):
    XLA computes a row of a vmapped batch of 16 and the same start alone in a batch of
    one differently in the last bits (measured: 2.0609852243911635 vs ...164 on the
    ICLP 1,C-norm search), so a fixed batch of one is what lets an executor run the
    starts anywhere (one task per start) and return this function's bits.
    """
    program = _gradient_program(problem) if program is None else program
    index0 = starts[3]
    count = int(np.shape(index0)[0])
    rows = [
        _as_numpy(program(*jax.tree_util.tree_map(lambda a, r=r: a[r : r + 1], starts)))
        for r in range(count)
    ]
    (base, old, new), values, first_gradient = jax.tree_util.tree_map(
        lambda *leaves: np.concatenate(leaves), *rows
    )
    return (base, old, new, index0), values, first_gradient


def _gradient_program(problem: _Problem):
    """The jitted, vmapped gradient ascent of the problem (compiled once per batch shape)."""
    space, leaves, budget = problem.space, problem.leaves, problem.budget
    vary_base = problem.vary == "dataset"

    def value(variables, index):
        base, old, new = variables
        return problem.objective(base, old, new, index)

    value_and_grad = jax.value_and_grad(value, allow_int=True)

    def gradient_size(grads) -> jax.Array:
        total = jnp.asarray(0.0)
        _, go, gw = grads
        for part in (go, gw):
            for g, leaf_space in zip(jax.tree_util.tree_leaves(part), leaves, strict=True):
                if leaf_space.differentiable:
                    total = total + jnp.sum(jnp.where(jnp.isfinite(g), jnp.abs(g), 0.0))
        return total

    def step_records(records, gradients, step):
        """Move each differentiable leaf along its normalised Riemannian gradient, then project."""
        flat, treedef = jax.tree_util.tree_flatten(records)
        flat_g = jax.tree_util.tree_leaves(gradients)
        moved = []
        for leaf, g, leaf_space in zip(flat, flat_g, leaves, strict=True):
            if not leaf_space.differentiable:
                moved.append(leaf)
                continue
            g = jnp.where(jnp.isfinite(g), g, 0.0)
            direction = leaf_space.precondition(g)
            size = leaf_space.record_norm(direction)
            size = jnp.where(size > 0, size, 1.0)
            direction = direction / size.reshape(size.shape + (1,) * len(leaf_space.shape))
            moved.append(leaf + step * leaf_space.scale * direction)
        return space.project(jax.tree_util.tree_unflatten(treedef, moved))

    def run(base, old, new, index):
        def body(carry, t):
            variables, best, best_value = carry
            current, grads = value_and_grad(variables, index)
            better = current > best_value
            best = _tree_where(better, variables, best)
            best_value = jnp.where(better, current, best_value)
            step = 0.5 * budget.learning_rate * (1.0 + jnp.cos(jnp.pi * t / budget.steps))
            b, o, w = variables
            gb, go, gw = grads
            o = step_records(o, go, step)
            if problem.replace:
                w = step_records(w, gw, step)
            if vary_base:
                b = step_records(b, gb, step)
            return ((b, o, w), best, best_value), gradient_size(grads)

        variables = (base, old, new)
        init = (variables, variables, jnp.asarray(-jnp.inf))
        (variables, best, best_value), sizes = jax.lax.scan(body, init, jnp.arange(budget.steps))
        last = value(variables, index)
        better = last > best_value
        return _tree_where(better, variables, best), jnp.where(better, last, best_value), sizes[0]

    return jax.jit(jax.vmap(run))


class _Phase(NamedTuple):
    """The best pair one search phase found.

    Attributes:
        method: ``"gradient"``, ``"random"`` or ``"evolution"``.
        variables: ``(base, old, new, index)`` of the best pair (numpy).
        value: its objective ``||f_D - f_D'||``.
    """

    method: str
    variables: tuple
    value: float


class _PhaseOutcome(NamedTuple):
    """What a search stage returns: its phases, evaluations spent, and whether it met a flat objective."""

    phases: list[_Phase]
    evaluations: int
    flat: bool


def _resolve_record_space(target, record_space) -> RecordSpace:
    """The record space searched: the one given, else the mechanism's; checked."""
    if record_space is None and isinstance(target, Mechanism):
        record_space = record_space_of(target)
    if record_space is None:
        raise ValueError(
            "give record_space= (e.g. L2Ball(tau, grid) or Box(0, 1, d)): the search must know "
            "which records the sensitivity claim is about."
        )
    if not isinstance(record_space, RecordSpace):
        raise TypeError(
            f"record_space must be a dpaudit.testing RecordSpace, got {type(record_space).__name__}."
        )
    return record_space


def _check_search_options(method: str, vary: str) -> None:
    """Reject an unknown ``method`` or ``vary``."""
    if method not in ("auto", "gradient", "random", "evolution"):
        raise ValueError(
            f"method must be 'auto', 'gradient', 'random' or 'evolution', got {method!r}."
        )
    if vary not in ("pair", "dataset"):
        raise ValueError(f"vary must be 'pair' or 'dataset', got {vary!r}.")


def _resolve_size(target, record_space: RecordSpace, n, data, replace: bool) -> tuple[int, Any]:
    """The number of records of ``D`` and the fixed base dataset (None: random bases)."""
    if n is None and data is None and isinstance(target, Mechanism):
        n = target.params.get("n")
    base = None
    if data is not None:
        # rtol 1e-9: data produced by a projection may sit on the boundary up to rounding
        if not record_space.contains(jax.tree_util.tree_map(np.asarray, data), rtol=1e-9):
            raise ValueError(
                f"the given data lie outside the record space ({record_space.describe()})."
            )
        n_data = n_records(data)
        if n is not None and n != n_data:
            raise ValueError(f"n = {n} but the given data hold {n_data} records.")
        n = n_data if replace else n_data + 1
        base = _as_numpy(data)
    # add-remove needs a record to remove, so D has at least 2 records there
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < (1 if replace else 2):
        raise ValueError(
            f"n must be an integer >= {1 if replace else 2} (records of D), got {n!r}."
        )
    return int(n), base


def _gradient_stage(
    problem: _Problem, rng: np.random.Generator, method: str, executor=None
) -> _PhaseOutcome:
    """Gradient ascent for ``"auto"``/``"gradient"``; flat when it cannot or need not be used."""
    budget = problem.budget
    if method not in ("auto", "gradient"):
        return _PhaseOutcome([], 0, flat=True)
    starts = problem.draw(rng, budget.restarts)
    if executor is None:
        ascend = functools.partial(_gradient_phase, problem)
    else:  # one task per start point (dpaudit.runtime); a problem that cannot be sent raises
        ascend = executor.start_search(_gradient_program, _gradient_phase, problem)
    try:
        found, values_g, first_gradient = _as_numpy(ascend(starts))
    except Exception:
        if method == "gradient":
            raise
        return _PhaseOutcome([], 0, flat=True)  # not differentiable (e.g. a callback)
    best_g = int(np.argmax(values_g))
    phase = _Phase("gradient", _pick(found, best_g), float(values_g[best_g]))
    # a zero first gradient at every start: the objective is flat (piecewise constant)
    flat = not np.any(first_gradient > 0)
    return _PhaseOutcome([phase], budget.restarts * (budget.steps + 1), flat)


def _derivative_free_stage(
    problem: _Problem, rng: np.random.Generator, method: str, seed: int
) -> _PhaseOutcome:
    """Random candidates, then differential evolution from the best (unless ``"random"``)."""
    budget, space = problem.budget, problem.space
    # random candidates, in unit-cube coordinates so that evolution can start from the best
    evaluate = _batched_objective(problem)
    base_r, _, _, index_r = problem.draw(rng, budget.candidates)
    u = rng.uniform(size=(budget.candidates, 2 * space.unit_dim))
    old_r, new_r = problem.from_unit(u)
    values_r = evaluate(base_r, old_r, new_r, index_r)
    evaluations = budget.candidates
    best = int(np.argmax(values_r))
    start = _pick((base_r, old_r, new_r, index_r), best)
    phases = [_Phase("random", start, float(values_r[best]))]
    if method != "random" and budget.evolution_iterations > 0:
        found, value, spent = _evolution_phase(
            problem, evaluate, start[0], start[3], u[best], budget, seed
        )
        evaluations += spent
        phases.append(_Phase("evolution", found, value))
    return _PhaseOutcome(phases, evaluations, flat=True)


def _worst_case(
    spec: SensitivityTarget, problem: _Problem, phases: list[_Phase], evaluations: int, seed: int
) -> WorstCase:
    """The :class:`WorstCase` of the best phase, its distance re-evaluated outside ``jit``."""
    method_used, (b, o, w, i), _ = max(phases, key=lambda p: p[2])
    data_np, data_prime_np = _numpy_pair(problem.replace, b, o, w, i)
    distance = spec.distance(data_np, data_prime_np)
    ratio = distance / spec.bound if spec.bound is not None else math.nan
    return WorstCase(
        data=data_np,
        data_prime=data_prime_np,
        index=int(i),
        distance=distance,
        bound=spec.bound,
        ratio=ratio,
        adjacency=spec.adjacency.name,
        method=method_used,
        evaluations=int(evaluations),
        seed=int(seed),
        name=spec.name,
    )


def worst_neighbours(
    target,
    norm: Callable | None = None,
    bound: float | None = None,
    *,
    record_space: RecordSpace | None = None,
    n: int | None = None,
    data=None,
    adjacency=None,
    method: str = "auto",
    vary: str = "pair",
    budget: SearchBudget | None = None,
    seed: int = 0,
    executor=None,
) -> WorstCase:
    r"""Search the neighbouring pair that maximises ``||f_D - f_D'||`` within the record space.

    Under replace-one the pair is ``D = B[i <- a]``, ``D' = B[i <- b]`` and the
    search moves the two records ``a, b`` (``vary="pair"``) or also every
    record of ``B`` (``vary="dataset"``); under add-remove ``D`` is ``D'``
    plus the record ``a`` at position ``i``. ``B`` is the given ``data``, or
    random records from the space (fresh for each restart).

    Methods:

    * ``"gradient"`` — projected gradient ascent, ``budget.restarts`` restarts
      of ``budget.steps`` steps, one jitted program run from each start.
    * ``"random"`` — ``budget.candidates`` random pairs.
    * ``"evolution"`` — random pairs, then scipy's differential evolution on
      the unit-cube coordinates of ``(a, b)`` around the best one (for
      piecewise-constant summaries such as ECDF counts).
    * ``"auto"`` — gradient ascent; when the objective cannot be
      differentiated or its gradient vanishes at every start (piecewise
      constant), random pairs and differential evolution instead.

    Args:
        target: a :class:`~dpaudit.Mechanism` (summary, norm, claimed bound and
            adjacency are read from it) or a summary function.
        norm: the norm of a difference of summaries (required with a function).
        bound: the claimed sensitivity (the mechanism's claim by default).
        record_space: the admissible records (the mechanism's
            :func:`record_space_of` by default).
        n: the number of records of ``D`` (without ``data``: required, or the
            mechanism's ``params["n"]``).
        data: a fixed dataset ``B`` to search around.
        adjacency: ``"replace-one"`` / ``"add-remove"`` (the claim's by default).
        method, vary: as above.
        budget: a :class:`SearchBudget` (default ``SearchBudget()``).
        seed: seeds every random choice; the same seed gives the same result.
        executor: ``None`` (this process) or ``"ray"`` / a :mod:`dpaudit.runtime`
            executor: the gradient restarts run one task per start point on workers
            (the same result; the derivative-free stage stays in this process).

    Returns:
        The :class:`WorstCase` found (its ``ratio`` compares it with ``bound``).

    Raises:
        ValueError: for a missing record space, a bad ``n``/``method``/``vary``,
            or data outside the record space.

    """
    spec = sensitivity_target(target, norm, bound, adjacency=adjacency)
    record_space = _resolve_record_space(target, record_space)
    _check_search_options(method, vary)
    budget = SearchBudget() if budget is None else budget
    replace = spec.adjacency.name == "replace-one"
    n, base = _resolve_size(target, record_space, n, data, replace)
    problem = _Problem(spec, record_space, n, base, vary, budget)
    rng = np.random.default_rng(seed)
    if executor is not None:
        executor = resolve_executor(executor)

    gradient = _gradient_stage(problem, rng, method, executor)
    phases, evaluations = list(gradient.phases), gradient.evaluations
    if gradient.flat:
        fallback = _derivative_free_stage(problem, rng, method, seed)
        phases += fallback.phases
        evaluations += fallback.evaluations
    return _worst_case(spec, problem, phases, evaluations, seed)


def _evolution_phase(problem, evaluate, base, index, u0, budget: SearchBudget, seed: int):
    """Differential evolution over the unit-cube coordinates of (old, new), base and index fixed."""
    import scipy.optimize

    dim = 2 * problem.space.unit_dim
    popsize = max(1, math.ceil(budget.evolution_population / dim))
    calls = 0

    def negative(us):  # us: (dim, S) in scipy's vectorized mode
        nonlocal calls
        us = np.atleast_2d(np.asarray(us).T)
        batch = us.shape[0]
        calls += batch
        old, new = problem.from_unit(us)
        bases = jax.tree_util.tree_map(
            lambda leaf: np.broadcast_to(leaf, (batch, *np.shape(leaf))), base
        )
        values = evaluate(bases, old, new, np.full((batch,), index))
        # a finite stand-in for -inf (non-finite distances): scipy's evolution needs finite values
        return -np.where(np.isfinite(values), values, -1e300)

    result = scipy.optimize.differential_evolution(
        negative,
        bounds=[(0.0, 1.0)] * dim,
        maxiter=budget.evolution_iterations,
        popsize=popsize,
        tol=0.0,
        polish=False,
        x0=np.clip(u0, 0.0, 1.0),
        rng=np.random.default_rng(seed),
        vectorized=True,
        updating="deferred",
    )
    old, new = problem.from_unit(np.asarray(result.x)[None])
    return (base, _pick(old, 0), _pick(new, 0), int(index)), float(-result.fun), calls
