r"""Assertions for pytest: sensitivity bounds, compatibility with the noise, DP of a release.

Each assertion raises an :class:`AssertionError` subclass whose message names
the counterexample — the pair of datasets (the record that differs), the norm
measured and the bound — and carries them as attributes, so a test can print
or re-run it. Counterexamples are reproducible: hypothesis pairs from the
seed hypothesis prints (the ``ci`` profile is derandomized), searched pairs
from the ``seed`` of the search.

* :func:`assert_sensitivity_bound` — ``||f_D - f_D'|| <= Delta`` on given
  pairs, on hypothesis-drawn pairs, and on the worst pair a
  :func:`~dpaudit.testing.search.worst_neighbours` search finds.
* :func:`assert_compatible` — the summary differences lie in the span of the
  noise and their Cameron–Martin (Gaussian noise) or 1,C (ICLP noise) norm
  has converged over the retained components (MRS Def. 3.1 and Thm 3.1; LR
  Thm 2 and Thm 3): otherwise the claimed sensitivity grows without bound
  as the basis is refined.
* :func:`assert_dp` — delegates to the audit engine ``dpaudit.audit`` and
  fails on a violated verdict.

Example:
    >>> import jax.numpy as jnp
    >>> from dpaudit.testing import Box
    >>> mean = lambda x: jnp.mean(x)
    >>> worst = assert_sensitivity_bound(mean, jnp.abs, 1 / 10, record_space=Box(0, 1), n=10)
    >>> round(worst.ratio, 9)
    1.0
    >>> assert_sensitivity_bound(mean, jnp.abs, 0.5 / 10, record_space=Box(0, 1), n=10)
    Traceback (most recent call last):
    ...
    dpaudit.testing.assertions.SensitivityViolation: sensitivity bound violated ...
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.adjacency import adjacency_of, n_records
from dpaudit.mechanism import Claim, Mechanism
from dpaudit.noise.processes import GaussianProcessNoise, GridNoise, ICLPNoise, KarhunenLoeveNoise
from dpaudit.spaces.norms import cameron_martin_terms, one_c_terms
from dpaudit.testing.search import (
    RecordSpace,
    SearchBudget,
    WorstCase,
    _describe_pair,
    record_space_of,
    sensitivity_target,
    worst_neighbours,
)

__all__ = [
    "CompatibilityViolation",
    "DPViolation",
    "SensitivityViolation",
    "assert_compatible",
    "assert_dp",
    "assert_sensitivity_bound",
]


class SensitivityViolation(AssertionError):
    """A neighbouring pair whose summaries are farther apart than the claimed bound.

    Attributes:
        data, data_prime: the pair.
        distance: ``||f_D - f_D'||``.
        bound: the claimed sensitivity.
        ratio: ``distance / bound``.
        worst: the :class:`~dpaudit.testing.search.WorstCase` when a search found it.
    """

    def __init__(self, message: str, *, data, data_prime, distance, bound, worst=None):
        super().__init__(message)
        self.data, self.data_prime = data, data_prime
        self.distance, self.bound = float(distance), float(bound)
        self.ratio = self.distance / self.bound
        self.worst = worst


class CompatibilityViolation(AssertionError):
    """A summary difference outside the span of the noise or with a diverging norm."""

    def __init__(self, message: str, *, data, data_prime, reason: str, share: float):
        super().__init__(message)
        self.data, self.data_prime = data, data_prime
        self.reason, self.share = reason, float(share)


class DPViolation(AssertionError):
    """The audit engine's verdict on a pair is that the claim is violated."""

    def __init__(self, message: str, *, data, data_prime, result):
        super().__init__(message)
        self.data, self.data_prime, self.result = data, data_prime, result


# --------------------------------------------------------------------- helpers


def _changed_index(data, data_prime, adjacency: str) -> int:
    """The record that differs (replace-one) or is missing from the smaller dataset."""
    a = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(data)]
    b = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(data_prime)]
    if adjacency == "replace-one":
        differ = np.zeros(a[0].shape[0], dtype=bool)
        for x, y in zip(a, b, strict=True):
            differ |= np.any((x != y).reshape(x.shape[0], -1), axis=1)
        where = np.flatnonzero(differ)
        return int(where[0]) if where.size else 0
    big, small = (a, b) if a[0].shape[0] > b[0].shape[0] else (b, a)
    for drop in range(big[0].shape[0]):
        if all(
            np.array_equal(s, np.delete(g, drop, axis=0)) for s, g in zip(small, big, strict=True)
        ):
            return drop
    return 0


def _pair_text(data, data_prime, adjacency: str) -> str:
    index = _changed_index(data, data_prime, adjacency)
    if adjacency == "add-remove" and n_records(data) < n_records(data_prime):
        return _describe_pair(data_prime, data, index, adjacency).replace("D' is D", "D is D'")
    return _describe_pair(data, data_prime, index, adjacency)


def _is_strategy(value) -> bool:
    try:
        from hypothesis.strategies import SearchStrategy
    except ImportError:  # pragma: no cover - hypothesis is a dependency
        return False
    return isinstance(value, SearchStrategy)


def _run_hypothesis(strategy, check) -> None:
    """Run ``check(pair)`` on pairs drawn by hypothesis under the loaded settings profile."""
    from hypothesis import given

    given(strategy)(check)()


# ------------------------------------------------------------ sensitivity bound


def assert_sensitivity_bound(
    target,
    norm=None,
    bound: float | None = None,
    *,
    datasets=None,
    record_space: RecordSpace | None = None,
    n: int | None = None,
    adjacency=None,
    rtol: float = 1e-6,
    atol: float = 0.0,
    check_adjacency: bool = True,
    budget: SearchBudget | None = None,
    seed: int = 0,
    **search_options,
) -> WorstCase | None:
    r"""Assert ``||f_D - f_D'|| <= bound (1 + rtol) + atol`` for neighbouring datasets.

    Checks, in this order, whichever are given:

    1. ``datasets``: an iterable of pairs ``(D, D')``, or a hypothesis
       strategy of pairs (e.g. :func:`~dpaudit.testing.strategies.neighbouring_pairs`),
       run under the loaded hypothesis profile (do not call this from inside
       another ``@given`` test);
    2. ``record_space`` (and ``n``): a worst-case search
       (:func:`~dpaudit.testing.search.worst_neighbours`, with ``budget``,
       ``seed`` and ``search_options``). A mechanism's own record space
       (:func:`~dpaudit.testing.search.record_space_of`) is used when it
       declares one.

    Args:
        target: a :class:`~dpaudit.Mechanism` or a summary function.
        norm, bound: the norm of differences and the claimed sensitivity
            (read from the mechanism when omitted).
        adjacency: the relation (the claim's, or replace-one).
        rtol, atol: numerical tolerance on the bound.
        check_adjacency: verify that every given pair is adjacent.

    Returns:
        The :class:`~dpaudit.testing.search.WorstCase` of the search, or None
        when no search ran.

    Raises:
        SensitivityViolation: with the pair, the norm measured and the bound.
        ValueError: for non-adjacent pairs, or when neither datasets nor a
            record space is given.
    """
    spec = sensitivity_target(target, norm, bound, adjacency=adjacency)
    if spec.bound is None:
        raise ValueError("assert_sensitivity_bound needs the claimed bound.")
    if record_space is None and isinstance(target, Mechanism):
        record_space = record_space_of(target)
    if datasets is None and record_space is None:
        raise ValueError(
            "give datasets= (pairs or a hypothesis strategy of pairs) or record_space= (and n) "
            "for a worst-case search."
        )
    limit = spec.bound * (1.0 + rtol) + atol

    def check(pair) -> None:
        data, data_prime = pair
        if check_adjacency:
            spec.adjacency.check(data, data_prime)
        distance = spec.distance(data, data_prime)
        if not distance <= limit:  # also catches nan
            raise SensitivityViolation(
                f"sensitivity bound violated for {spec.name}: ||f_D - f_D'|| = {distance:.6g} > "
                f"bound {spec.bound:.6g} (ratio {distance / spec.bound:.6f}, rtol {rtol:g}) "
                f"under {spec.adjacency.name} adjacency, n = {n_records(data)}:\n"
                + _pair_text(data, data_prime, spec.adjacency.name),
                data=data,
                data_prime=data_prime,
                distance=distance,
                bound=spec.bound,
            )

    if datasets is not None:
        if _is_strategy(datasets):
            _run_hypothesis(datasets, check)
        elif isinstance(datasets, Iterable):
            for pair in datasets:
                check(pair)
        else:
            raise TypeError(
                "datasets must be an iterable of (D, D') pairs or a hypothesis strategy of pairs, "
                f"got {type(datasets).__name__}."
            )
    if record_space is None:
        return None
    worst = worst_neighbours(
        spec,
        record_space=record_space,
        n=n,
        budget=budget,
        seed=seed,
        **search_options,
    )
    if worst.exceeds(rtol, atol) or not math.isfinite(worst.distance):
        raise SensitivityViolation(
            f"sensitivity bound violated for {spec.name}: {worst.describe()}\n"
            f"(reproduce with dpaudit.testing.worst_neighbours(..., seed={seed}) and the same "
            "budget)",
            data=worst.data,
            data_prime=worst.data_prime,
            distance=worst.distance,
            bound=spec.bound,
            worst=worst,
        )
    return worst


# ----------------------------------------------------------------- compatibility


def _noise_parts(noise):
    """(coefficient noise, basis or None) of a Karhunen–Loève or grid noise."""
    if isinstance(noise, GridNoise):
        return noise.coefficient_noise, noise.basis
    if isinstance(noise, KarhunenLoeveNoise):
        return noise, None
    raise TypeError(
        "assert_compatible needs a GridNoise, GaussianProcessNoise or ICLPNoise (the noise of "
        f"a functional release), got {type(noise).__name__}."
    )


def assert_compatible(
    target,
    noise=None,
    *,
    datasets,
    adjacency=None,
    tail_fraction: float = 0.25,
    max_tail_share: float = 0.05,
    support_rtol: float = 1e-6,
    check_adjacency: bool = True,
) -> float:
    r"""Assert that summary differences are compatible with the noise (their norm converges).

    For Gaussian-process noise with covariance ``C`` a release is DP only if
    ``f_D - f_D'`` lies in the Cameron–Martin space ``H_C`` (MRS Def. 3.1 and
    Thm 3.1: otherwise the releases are mutually singular); for ICLP noise it
    must lie in ``H_{1,C}`` (LR Thm 3). On a truncated basis this is checked
    in two ways, for each pair ``(D, D')``:

    * the difference has no part outside ``span(phi_1..phi_K)`` (grid noise;
      relative size ``<= support_rtol``) — such a part makes the grid
      releases singular;
    * the last ``tail_fraction`` of the components carry at most
      ``max_tail_share`` of ``||h||_C^2 = sum_j h_j^2/lambda_j`` (Gaussian) or
      of ``||h||_{1,C} = sum_j |h_j|/sqrt(lambda_j)`` (ICLP): the partial
      norms have levelled off. An incompatible summary (e.g. the raw mean of
      rough curves under a smooth kernel) keeps growing as ``K`` grows.

    Args:
        target: a :class:`~dpaudit.Mechanism` (the noise is read from its
            release distribution) or a summary function (give ``noise``).
        noise: a :class:`~dpaudit.noise.GridNoise` (summary = grid values) or
            a :class:`~dpaudit.noise.GaussianProcessNoise` /
            :class:`~dpaudit.noise.ICLPNoise` (summary = coefficients).
        datasets: an iterable of pairs ``(D, D')`` or a hypothesis strategy of pairs.
        tail_fraction, max_tail_share, support_rtol: the criteria above.

    Returns:
        The largest tail share seen.

    Raises:
        CompatibilityViolation: naming the pair and what failed.
    """
    if not 0 < tail_fraction < 1:
        raise ValueError(f"tail_fraction must lie in (0, 1), got {tail_fraction!r}.")
    if not 0 < max_tail_share < 1:
        raise ValueError(f"max_tail_share must lie in (0, 1), got {max_tail_share!r}.")
    if isinstance(target, Mechanism):
        summary, name = target.summary, target.name
        relation = adjacency_of(adjacency if adjacency is not None else target.claim)
        if summary is None:
            raise ValueError(f"mechanism {target.name!r} declares no summary.")
    else:
        if not callable(target):
            raise TypeError(
                f"target must be a Mechanism or a summary function, got {type(target).__name__}."
            )
        if noise is None:
            raise ValueError("give the noise of the release (GridNoise, GaussianProcessNoise ...).")
        summary, name = target, getattr(target, "__name__", "summary")
        relation = adjacency_of(adjacency if adjacency is not None else "replace-one")
    worst_share = 0.0

    def check(pair) -> None:
        nonlocal worst_share
        data, data_prime = pair
        if check_adjacency:
            relation.check(data, data_prime)
        release_noise = noise if noise is not None else target.release_distribution(data)
        coefficient_noise, basis = _noise_parts(release_noise)
        h = jnp.asarray(summary(data), dtype=jnp.float64) - jnp.asarray(
            summary(data_prime), dtype=jnp.float64
        )
        gaussian = isinstance(coefficient_noise, GaussianProcessNoise)
        if not gaussian and not isinstance(coefficient_noise, ICLPNoise):
            raise TypeError(
                f"unknown Karhunen–Loève noise {type(coefficient_noise).__name__}; expected "
                "GaussianProcessNoise or ICLPNoise."
            )
        space = "H_C (Cameron–Martin)" if gaussian else "H_{1,C}"
        pair_text = _pair_text(data, data_prime, relation.name)
        if basis is not None:
            weights = basis.grid.weights
            coefficients = basis.project(h)
            residual = h - basis.reconstruct(coefficients)
            size = float(jnp.sqrt(jnp.sum(weights * h * h)))
            outside = float(jnp.sqrt(jnp.sum(weights * residual * residual)))
            if outside > support_rtol * size:
                raise CompatibilityViolation(
                    f"{name} is not compatible with its noise: f_D - f_D' has a part of relative "
                    f"L2 size {outside / size:.3g} outside the span of the {basis.n_components} "
                    "noise eigenfunctions, so the two releases are mutually singular:\n"
                    + pair_text,
                    data=data,
                    data_prime=data_prime,
                    reason="outside-span",
                    share=outside / size,
                )
        else:
            coefficients = h
        terms = (cameron_martin_terms if gaussian else one_c_terms)(
            coefficients, coefficient_noise.eigenvalues
        )
        terms = np.asarray(terms)
        total = float(terms.sum())
        if total == 0.0:
            return
        k = terms.shape[-1]
        tail = max(1, math.ceil(tail_fraction * k))
        share = float(terms[k - tail :].sum()) / total
        worst_share = max(worst_share, share)
        if share > max_tail_share:
            raise CompatibilityViolation(
                f"{name} does not look compatible with its noise: the last {tail} of {k} "
                f"components carry {share:.1%} of the {space} norm of f_D - f_D' (at most "
                f"{max_tail_share:.1%} allowed), so the norm is still growing with the number "
                "of components and the sensitivity would diverge on a finer basis:\n" + pair_text,
                data=data,
                data_prime=data_prime,
                reason="tail",
                share=share,
            )

    if _is_strategy(datasets):
        _run_hypothesis(datasets, check)
    elif isinstance(datasets, Iterable):
        for pair in datasets:
            check(pair)
    else:
        raise TypeError(
            "datasets must be an iterable of (D, D') pairs or a hypothesis strategy of pairs, "
            f"got {type(datasets).__name__}."
        )
    return worst_share


# --------------------------------------------------------------------------- DP

#: Verdict words read as "the claim is violated" (compared case-insensitively
#: with the verdict, its ``name`` or its ``value``).
VIOLATED_VERDICTS = ("violated", "violation", "fail", "failed", "refuted", "not-dp", "not dp")


def _audit_function():
    """``dpaudit.audit`` (a function, or the function ``audit`` of the module), or None."""
    import dpaudit

    audit = getattr(dpaudit, "audit", None)
    if audit is None:
        try:
            audit = importlib.import_module("dpaudit.audit")
        except ImportError:
            return None
    if not callable(audit):
        audit = getattr(audit, "audit", None)
    return audit if callable(audit) else None


def _is_violation(result: Any) -> bool:
    for flag, meaning in (("violated", True), ("passed", False), ("ok", False)):
        value = getattr(result, flag, None)
        if isinstance(value, bool | np.bool_):
            return bool(value) == meaning
    verdict = getattr(result, "verdict", result)
    words = {str(verdict)}
    for attr in ("name", "value"):
        value = getattr(verdict, attr, None)
        if value is not None:
            words.add(str(value))
    words = {w.strip().lower() for w in words}
    return any(w in VIOLATED_VERDICTS or w.split(".")[-1] in VIOLATED_VERDICTS for w in words)


def assert_dp(
    mechanism: Mechanism,
    data=None,
    data_prime=None,
    *,
    claim: Claim | None = None,
    record_space: RecordSpace | None = None,
    n: int | None = None,
    seed: int = 0,
    **audit_options,
):
    """Assert that the audit engine does not find ``mechanism`` in violation of its claim.

    Delegates to ``dpaudit.audit(mechanism, D, D_prime, seed=..., **audit_options)``
    (``samples=``, ``confidence=`` ... are passed through) and fails when the
    result's verdict is a violation. Without a pair, the worst pair of a
    sensitivity search over ``record_space`` (``n`` records) is audited.

    Args:
        mechanism: the :class:`~dpaudit.Mechanism`.
        data, data_prime: the neighbouring pair to audit.
        claim: a claim to audit instead of the mechanism's own.
        record_space, n: where to search the pair when none is given.
        seed: seeds the audit (and the search).

    Returns:
        The audit result.

    Raises:
        DPViolation: with the pair and the result.
        RuntimeError: when the audit engine ``dpaudit.audit`` is not installed.
        ValueError: for a non-adjacent pair, or no pair and no record space.
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"assert_dp needs a dpaudit.Mechanism, got {type(mechanism).__name__}.")
    audit = _audit_function()
    if audit is None:
        raise RuntimeError(
            "the audit engine dpaudit.audit is not available in this installation; "
            "assert_dp needs it."
        )
    if claim is not None:
        if not isinstance(claim, Claim):
            raise TypeError(f"claim must be a dpaudit.Claim, got {type(claim).__name__}.")
        mechanism = dataclasses.replace(mechanism, claim=claim)
    if (data is None) != (data_prime is None):
        raise ValueError("give both datasets of the pair, or neither (then record_space= and n=).")
    if data is None:
        worst = worst_neighbours(mechanism, record_space=record_space, n=n, seed=seed)
        data, data_prime = worst.data, worst.data_prime
    relation = adjacency_of(mechanism.claim)
    relation.check(data, data_prime)
    result = audit(mechanism, data, data_prime, seed=seed, **audit_options)
    if _is_violation(result):
        raise DPViolation(
            f"{mechanism.name} violates its claim (epsilon = {mechanism.claim.epsilon:g}, "
            f"delta = {mechanism.claim.delta:g}, {relation.name}): audit verdict "
            f"{getattr(result, 'verdict', result)!r} on the pair\n"
            + _pair_text(data, data_prime, relation.name)
            + f"\n(seed {seed})",
            data=data,
            data_prime=data_prime,
            result=result,
        )
    return result
