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
  noise and their Cameron–Martin (Gaussian noise) or 1,C (ICLP noise, pure
  claims) series converge, judged by :mod:`dpaudit.model.compatibility` (MRS Def.
  3.1 and Thm 3.1; LR Thm 3/7): otherwise no noise scale gives the claimed
  DP once the basis is refined.
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
import math
from collections.abc import Iterable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.model.adjacency import Adjacency, n_records
from dpaudit.model.claims import Claim, claim_label, is_notion_claim, notion_certified_text
from dpaudit.model.compatibility import compatibility
from dpaudit.model.loss import noise_shift
from dpaudit.model.mechanism import Mechanism, adjacency_of
from dpaudit.model.noise.processes import GridNoise, ICLPNoise, KarhunenLoeveNoise
from dpaudit.testing.record_spaces import RecordSpace, record_space_of
from dpaudit.testing.search import (
    SearchBudget,
    SensitivityTarget,
    WorstCase,
    describe_pair,
    pair_phrase,
    sensitivity_target,
    worst_neighbours,
)
from dpaudit.whitebox.engine import audit as dpaudit_audit

__all__ = [
    "CompatibilityViolation",
    "DPViolation",
    "SensitivityViolation",
    "assert_compatible",
    "assert_dp",
    "assert_sensitivity_bound",
    "expectation_sentence",
    "violation_sentence",
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
    """A summary difference outside the span of the noise or with a diverging norm.

    Attributes:
        data, data_prime: the pair.
        result: the :class:`~dpaudit.model.compatibility.Compatibility` (None for a
            difference outside the span of a grid noise).
    """

    def __init__(self, message: str, *, data, data_prime, result):
        super().__init__(message)
        self.data, self.data_prime, self.result = data, data_prime, result


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
        return describe_pair(data_prime, data, index, adjacency).replace("D' is D", "D is D'")
    return describe_pair(data, data_prime, index, adjacency)


def _is_strategy(value) -> bool:
    try:
        from hypothesis.strategies import SearchStrategy
    except ImportError:  # pragma: no cover - hypothesis is a dependency
        return False
    return isinstance(value, SearchStrategy)


def _run_hypothesis(strategy, check, hypothesis_settings=None) -> None:
    """Run ``check(pair)`` on pairs drawn by hypothesis (loaded profile, or the settings given)."""
    from hypothesis import Phase, given, settings

    if hypothesis_settings is None:
        # the loaded profile, without the explain phase: re-running variations of a failing
        # example to annotate it costs far more than the search for it
        current = settings()
        hypothesis_settings = settings(
            current, phases=[p for p in current.phases if p is not Phase.explain]
        )
    hypothesis_settings(given(strategy)(check))()


def _check_each_pair(datasets, check, hypothesis_settings) -> None:
    """Run ``check(pair)`` on every given pair, or on pairs drawn from a hypothesis strategy."""
    __tracebackhide__ = True
    if _is_strategy(datasets):
        _run_hypothesis(datasets, check, hypothesis_settings)
    elif isinstance(datasets, Iterable):
        for pair in datasets:
            check(pair)
    else:
        raise TypeError(
            "datasets must be an iterable of (D, D') pairs or a hypothesis strategy of pairs, "
            f"got {type(datasets).__name__}."
        )


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
    hypothesis_settings=None,
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
       (:func:`~dpaudit.testing.record_spaces.record_space_of`) and ``params["n"]``
       are used when it declares them.

    Args:
        target: a :class:`~dpaudit.Mechanism` or a summary function.
        norm, bound: the norm of differences and the claimed sensitivity
            (read from the mechanism when omitted).
        adjacency: the relation (the claim's, or replace-one).
        rtol, atol: numerical tolerance on the bound.
        check_adjacency: verify that every given pair is adjacent.
        hypothesis_settings: a ``hypothesis.settings`` for the drawn pairs
            (default: the loaded profile).

    Returns:
        The :class:`~dpaudit.testing.search.WorstCase` of the search, or None
        when no search ran.

    Raises:
        SensitivityViolation: with the pair, the norm measured and the bound.
        ValueError: for non-adjacent pairs, or when neither datasets nor a
            record space is given.
    """
    __tracebackhide__ = True
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
    if datasets is not None:
        check = _sensitivity_check(spec, rtol, atol, check_adjacency)
        _check_each_pair(datasets, check, hypothesis_settings)
    if record_space is None:
        return None
    if n is None and isinstance(target, Mechanism):
        n = target.params.get("n")
    worst = worst_neighbours(
        spec,
        record_space=record_space,
        n=n,
        budget=budget,
        seed=seed,
        **search_options,
    )
    _raise_if_worst_exceeds(spec, worst, rtol, atol, seed)
    return worst


def _sensitivity_check(spec: SensitivityTarget, rtol: float, atol: float, check_adjacency: bool):
    """``check(pair)`` raising :class:`SensitivityViolation` when the pair exceeds the bound."""
    limit = spec.bound * (1.0 + rtol) + atol

    def check(pair) -> None:
        __tracebackhide__ = True
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

    return check


def _raise_if_worst_exceeds(
    spec: SensitivityTarget, worst: WorstCase, rtol: float, atol: float, seed: int
) -> None:
    """Raise :class:`SensitivityViolation` when the searched pair exceeds the bound (or is nan)."""
    __tracebackhide__ = True
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


def _release_laws(target, noise, data, data_prime):
    """The two release laws of a pair: from the mechanism, or ``noise`` centred at the summaries."""
    if noise is None:
        return target.release_distribution(data), target.release_distribution(data_prime)
    f, f_prime = (jnp.asarray(target(d), dtype=jnp.float64) for d in (data, data_prime))
    if isinstance(noise, GridNoise):
        laws = [GridNoise(noise.coefficient_noise, noise.basis, loc=c) for c in (f, f_prime)]
        return tuple(laws)
    return noise.with_loc(f), noise.with_loc(f_prime)


class _CompatibilitySetup(NamedTuple):
    """What :func:`assert_compatible` checks, resolved from its target.

    Attributes:
        target: the mechanism (its release laws are used) or the summary function.
        relation: the :class:`~dpaudit.model.adjacency.Adjacency` of the pairs.
        claim_pure: judge for a pure-epsilon claim.
        name: for messages.
    """

    target: Any
    relation: Adjacency
    claim_pure: bool
    name: str


def _compatibility_setup(target, noise, adjacency, pure) -> _CompatibilitySetup:
    """Resolve the summary, relation and claim kind of :func:`assert_compatible`."""
    if isinstance(target, Mechanism):
        relation = adjacency_of(adjacency if adjacency is not None else target.claim)
        claim_pure = target.claim.pure if pure is None else bool(pure)
        name = target.name
        if noise is not None:
            if target.summary is None:
                raise ValueError(f"mechanism {target.name!r} declares no summary.")
            target = target.summary
    else:
        if not callable(target):
            raise TypeError(
                f"target must be a Mechanism or a summary function, got {type(target).__name__}."
            )
        if noise is None:
            raise ValueError("give the noise of the release (GridNoise, GaussianProcessNoise ...).")
        relation = adjacency_of(adjacency if adjacency is not None else "replace-one")
        claim_pure = isinstance(_noise_parts(noise)[0], ICLPNoise) if pure is None else bool(pure)
        name = getattr(target, "__name__", "summary")
    if noise is not None:
        _noise_parts(noise)  # type check before anything runs
    return _CompatibilitySetup(target, relation, claim_pure, name)


def _compatibility_check(
    setup: _CompatibilitySetup,
    noise,
    results: list,
    allow_undetermined: bool,
    check_adjacency: bool,
    compatibility_options: dict,
):
    """``check(pair)`` appending the pair's Compatibility to ``results``, raising on a violation."""
    name, relation, claim_pure = setup.name, setup.relation, setup.claim_pure

    def check(pair) -> None:
        __tracebackhide__ = True
        data, data_prime = pair
        if check_adjacency:
            relation.check(data, data_prime)
        law, law_prime = _release_laws(setup.target, noise, data, data_prime)
        shift = noise_shift(law, law_prime)
        if shift is None or shift.source == "independent":
            raise TypeError(
                f"{name}: assert_compatible needs releases that are the same Gaussian-process or "
                "ICLP noise shifted by the summary (GridNoise, GaussianProcessNoise, ICLPNoise)."
            )
        pair_text = _pair_text(data, data_prime, relation.name)
        if shift.singular:
            raise CompatibilityViolation(
                f"{name} is not compatible with its noise: f_D - f_D' has a part of L2 size "
                f"{shift.residual_norm:.3g} outside the span of the noise eigenfunctions, so the "
                "two releases are mutually singular:\n" + pair_text,
                data=data,
                data_prime=data_prime,
                result=None,
            )
        result = compatibility(shift.shift, shift.eigenvalues, **compatibility_options)
        results.append(result)
        allowed = result.allows(claim_pure, shift.family)
        if allowed is None and allow_undetermined:
            return
        if allowed is not True:
            kind = "pure epsilon-DP" if claim_pure else "(epsilon, delta)-DP"
            raise CompatibilityViolation(
                f"{name} is {result.classification} with its {shift.family} noise for {kind}: "
                f"{result.reason}\n" + pair_text,
                data=data,
                data_prime=data_prime,
                result=result,
            )

    return check


def assert_compatible(
    target,
    noise=None,
    *,
    datasets,
    adjacency=None,
    pure: bool | None = None,
    allow_undetermined: bool = False,
    check_adjacency: bool = True,
    hypothesis_settings=None,
    **compatibility_options,
) -> list:
    r"""Assert that summary differences are compatible with the noise, as ``K`` grows.

    For Gaussian-process noise with covariance ``C`` a release can be DP only
    if ``f_D - f_D'`` lies in the Cameron–Martin space ``H_C`` (MRS Def. 3.1
    and Thm 3.1: otherwise the releases are mutually singular); pure
    epsilon-DP with ICLP noise needs ``H_{1,C}`` (LR Thm 3/7). For each pair
    this checks, with :mod:`dpaudit.model.compatibility` (dyadic block sums of the
    terms ``h_j^2 / lambda_j`` and ``|h_j| / sqrt(lambda_j)``):

    * a grid difference has no part outside the span of the retained
      eigenfunctions (else the grid releases are singular already);
    * the Cameron–Martin series converges (Gaussian noise), and also the 1,C
      series for a pure claim with ICLP noise.

    Args:
        target: a :class:`~dpaudit.Mechanism` (the noise is read from its
            release distribution) or a summary function (then give ``noise``).
        noise: a :class:`~dpaudit.model.noise.GridNoise` (the summary gives grid
            values) or a :class:`~dpaudit.model.noise.GaussianProcessNoise` /
            :class:`~dpaudit.model.noise.ICLPNoise` (the summary gives coefficients).
        datasets: an iterable of pairs ``(D, D')`` or a hypothesis strategy of pairs.
        pure: judge for a pure-epsilon claim (default: the mechanism's claim;
            for a bare summary, pure exactly for ICLP noise).
        allow_undetermined: pass when too few components are reliable to
            judge (fewer than ``2^min_blocks``); by default that fails.
        hypothesis_settings: a ``hypothesis.settings`` for drawn pairs.
        compatibility_options: passed to :func:`dpaudit.model.compatibility.compatibility`.

    Returns:
        The :class:`~dpaudit.model.compatibility.Compatibility` of every pair checked.

    Raises:
        CompatibilityViolation: naming the pair, the classification and the reason.
        TypeError: when the release is not shifted Karhunen–Loève noise.
    """
    __tracebackhide__ = True
    setup = _compatibility_setup(target, noise, adjacency, pure)
    results = []
    check = _compatibility_check(
        setup, noise, results, allow_undetermined, check_adjacency, compatibility_options
    )
    _check_each_pair(datasets, check, hypothesis_settings)
    return results


# --------------------------------------------------------------------------- DP

#: Verdict words read as "the claim is violated" (compared case-insensitively
#: with the verdict, its ``name`` or its ``value``).
VIOLATED_VERDICTS = ("violated", "violation", "fail", "failed", "refuted", "not-dp", "not dp")


def _is_violation(result: Any, failing=VIOLATED_VERDICTS) -> bool:
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
    return any(w in failing or w.split(".")[-1] in failing for w in words)


def expectation_sentence(result) -> str:
    """What the claim promised and what the audit measured, in the claim's own terms.

    Args:
        result: an :class:`~dpaudit.AuditResult` or :class:`~dpaudit.BlackBoxResult`.

    Returns:
        For example ``"expected epsilon <= 1, got epsilon >= 2 (exact)"``; ``(exact)`` when
        no sampling is involved in the bound, else its confidence.
    """
    claim = result.claim
    # exact: a white-box bound that involves no sampling (a verified release, exact accounting)
    exact = hasattr(result, "certificate") and getattr(result, "p_value", None) == 0
    how = "exact" if exact else f"confidence {result.confidence:g}"
    if is_notion_claim(claim):
        got = notion_certified_text(result) or f"epsilon({result.claim.delta:g}) >= " + (
            f"{result.epsilon_lower:.4g}"
        )
        return f"expected {claim_label(claim)}, got {got} ({how})"
    at = f"({claim.delta:g})" if claim.delta > 0 else ""
    delta_lower = (getattr(result, "delta_at_claimed_epsilon", None) or {}).get("lower")
    if result.epsilon_lower <= claim.epsilon and delta_lower is not None and claim.delta > 0:
        return (
            f"expected delta({claim.epsilon:g}) <= {claim.delta:g}, got delta({claim.epsilon:g})"
            f" >= {float(delta_lower):.4g} ({how})"
        )
    return (
        f"expected epsilon{at} <= {claim.epsilon:g}, got epsilon{at} >= "
        f"{result.epsilon_lower:.4g} ({how})"
    )


def violation_sentence(result, data, data_prime) -> str:
    """One line explaining a verdict: expected against measured, the pair, the decisive reason.

    Args:
        result: an :class:`~dpaudit.AuditResult` or :class:`~dpaudit.BlackBoxResult`.
        data, data_prime: the pair audited.

    Returns:
        For example ``"expected epsilon <= 1, got epsilon >= 2 (exact): record 9 differs
        (0 -> 1); release x = 0.43 has loss 2 > epsilon = 1 (D->D')"``.
    """
    adjacency = result.claim.adjacency
    if adjacency == "add-remove" and n_records(data) < n_records(data_prime):
        index = _changed_index(data_prime, data, adjacency)
        pair = pair_phrase(data_prime, data, index, adjacency).replace("D' is D", "D is D'")
    else:
        pair = pair_phrase(data, data_prime, _changed_index(data, data_prime, adjacency), adjacency)
    return f"{expectation_sentence(result)}: {pair}; {getattr(result, 'reason', result.verdict)}"


def assert_dp(
    mechanism: Mechanism,
    data=None,
    data_prime=None,
    *,
    claim=None,
    record_space: RecordSpace | None = None,
    n: int | None = None,
    seed: int = 0,
    allow_incompatible: bool = False,
    strict: bool = False,
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
        claim: a claim to audit instead of the mechanism's own: a :class:`~dpaudit.Claim`
            or a claim in another notion (:mod:`dpaudit.model.claims`), audited in that notion.
        record_space, n: where to search the pair when none is given.
        seed: seeds the audit (and the search).
        allow_incompatible: accept the verdict ``"incompatible"`` (no violation
            at this truncation, but the claimed DP is impossible as the basis
            is refined); by default it fails.
        strict: also fail on ``"inconclusive"``.

    Returns:
        The audit result.

    Raises:
        DPViolation: with the pair and the result.
        ValueError: for a non-adjacent pair, or no pair and no record space.
    """
    __tracebackhide__ = True  # pytest shows the test's line and the message, not dpaudit's frames
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"assert_dp needs a dpaudit.Mechanism, got {type(mechanism).__name__}.")

    if claim is not None:
        if not (isinstance(claim, Claim) or is_notion_claim(claim)):
            raise TypeError(
                "claim must be a dpaudit.Claim or a dpaudit.model.claims claim (ZCDPClaim, "
                f"RDPClaim, GDPClaim, TradeoffClaim), got {type(claim).__name__}."
            )
        mechanism = dataclasses.replace(mechanism, claim=claim)
    if (data is None) != (data_prime is None):
        raise ValueError("give both datasets of the pair, or neither (then record_space= and n=).")
    if data is None:
        worst = worst_neighbours(mechanism, record_space=record_space, n=n, seed=seed)
        data, data_prime = worst.data, worst.data_prime
    relation = adjacency_of(mechanism.claim)
    relation.check(data, data_prime)
    result = dpaudit_audit(mechanism, data, data_prime, seed=seed, **audit_options)
    failing = VIOLATED_VERDICTS + (() if allow_incompatible else ("incompatible",))
    failing = failing + (("inconclusive",) if strict else ())
    if _is_violation(result, failing):
        raise DPViolation(
            f"{violation_sentence(result, data, data_prime)}\n"
            f"{mechanism.name} fails its claim ({claim_label(mechanism.claim)}, {relation.name}):"
            f" audit verdict {getattr(result, 'verdict', result)!r} on the pair (seed {seed})\n"
            + _pair_text(data, data_prime, relation.name),
            data=data,
            data_prime=data_prime,
            result=result,
        )
    return result
