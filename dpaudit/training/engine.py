r"""The many-run training audit: insert a canary, train many times, score, certify.

:func:`training_audit` runs the user's ``train`` ``runs`` times, half with the canary
and half without (run ``i`` gets the key ``fold_in(PRNGKey(seed), i)``), scores each
released state with the canary design, and certifies lower bounds with
:func:`~dpaudit.training.bounds.many_run_bound`. The verdict is ``"violation"`` when a
certified bound exceeds the claim (epsilon at the claim's delta for a
:class:`~dpaudit.Claim`, mu for a :class:`~dpaudit.model.claims.GDPClaim`), else
``"inconclusive"``: a lower bound below the claim proves nothing about the claim.
The GDP-shape epsilon is reported and never decides a verdict.

With ``vectorize=True`` the training function must be JAX-traceable: each group's runs
are one ``jax.vmap`` over keys (the same keys, so the same results as the serial loop
up to floating-point reassociation).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.accounting.conversions import gdp_epsilon, gdp_mu_for_point
from dpaudit.core.compilation_cache import ensure_compilation_cache
from dpaudit.core.executors import resolve_executor
from dpaudit.core.serialize import jsonable
from dpaudit.estimation.bounds import clopper_pearson
from dpaudit.model.claims import Claim, GDPClaim
from dpaudit.training.bounds import (
    ManyRunBound,
    OneRunBound,
    epsilon_on_side,
    many_run_bound,
    many_run_p_value,
    one_run_bound,
    one_run_epsilon,
    one_run_p_value,
    profile_excess,
)
from dpaudit.training.rank import RankBound, rank_bound

__all__ = [
    "ProfileClaim",
    "TrainingAuditResult",
    "TrainingTarget",
    "one_run_audit",
    "one_run_training_audit",
    "training_audit",
]

# Jitted vectorised trainings kept (one per training function and score).
_CACHED_TRAININGS = 16
# The largest epsilon a claimed profile is searched over.
_PROFILE_EPSILON_MAX = 60.0


@dataclasses.dataclass(frozen=True)
class TrainingAuditResult:
    """The outcome of :func:`training_audit` or :func:`one_run_training_audit` (frozen).

    Attributes:
        name: what was audited.
        claim: the claim, described (``"(8, 1e-05)-DP"`` or ``"1.5-GDP"``).
        verdict: ``"violation"`` or ``"inconclusive"``.
        bound: the certified bounds: a :class:`~dpaudit.training.bounds.ManyRunBound`
            (many runs) or a :class:`~dpaudit.training.bounds.OneRunBound` (one run).
        canary: the canary design's kind (``"input"``, ``"gradient"``, ``"user"``).
        runs: ``(with canary, without)``; ``(1, 0)`` for a one-run audit (one training
            holding the included canaries; ``bound.canaries`` counts them).
        strength: the largest epsilon (at the claim's delta) these runs could certify at
            this confidence (every certification run, or every guess, right).
        seed: the root seed.
        seconds: wall time of the trainings.
        notes: sentences qualifying the verdict.
        claimed_epsilon: the claim's epsilon at ``claimed_delta`` (a GDP claim's at 1e-5, a
            profile's where it reaches its delta).
        claimed_delta: the delta of :attr:`claimed_epsilon`.
        adjacency: the claim's adjacency (``"add-remove"`` unless a Claim says otherwise).
        p_value: for a violation, the smallest level at which the certification runs
            still refute the claim (for a suite's multiple-testing correction); else ``None``.
        borderline: set by a suite's correction when it demotes the violation.
        rank: the rank test of all runs (:func:`~dpaudit.training.rank.rank_bound`):
            mu and epsilon(delta) certified if the score's ROC curve is Gaussian (an
            assumption stated in it; it decides no verdict); ``None`` when not computed.
        mode: ``"many-run"`` or ``"one-run"``.
    """

    name: str
    claim: str
    verdict: str
    bound: ManyRunBound
    canary: str
    runs: tuple[int, int]
    strength: float
    seed: int
    seconds: float
    notes: tuple[str, ...] = ()
    claimed_epsilon: float | None = None
    claimed_delta: float | None = None
    adjacency: str = "add-remove"
    p_value: float | None = None
    borderline: dict | None = None
    rank: RankBound | None = None
    mode: str = "many-run"

    #: The kind of audit, beside the white-box and black-box results' (reports, JSON).
    kind = "training"

    @property
    def epsilon_lower(self) -> float:
        """The certified lower bound on epsilon at the claim's delta."""
        return self.bound.epsilon

    @property
    def confidence(self) -> float:
        """The confidence of the certified bounds."""
        return self.bound.confidence

    @property
    def mechanism(self) -> str:
        """What was audited (:attr:`name`)."""
        return self.name

    def to_dict(self) -> dict:
        """The record as JSON-able builtins."""
        out = dataclasses.asdict(self)
        out["bound"] = self.bound.to_dict()
        out["rank"] = None if self.rank is None else self.rank.to_dict()
        return jsonable(out)

    def to_json(self) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(), allow_nan=False)

    def report(self) -> str:
        """A few lines for people: verdict, claim, certified bounds, strength."""
        b = self.bound
        if self.mode == "one-run":
            return "\n".join(
                [
                    f"{self.name}: {self.verdict} (one-run training audit, {b.canaries} "
                    f"{self.canary} canaries, {b.guesses} guesses, {b.correct} right)",
                    f"claim: {self.claim}",
                    f"certified at {b.confidence:g}: epsilon({b.delta:g}) >= {b.epsilon:.4g}, "
                    f"mu >= {b.mu:.4g}",
                    f"strength: at most epsilon {self.strength:.4g} certifiable with these guesses",
                    *self.notes,
                    *(f"assumes: {a}" for a in b.assumptions),
                ]
            )
        return "\n".join(
            [
                f"{self.name}: {self.verdict} (training audit, {self.canary} canary, "
                f"{sum(self.runs)} runs)",
                f"claim: {self.claim}",
                f"certified at {b.confidence:g}: epsilon({b.delta:g}) >= {b.epsilon:.4g}, "
                f"mu >= {b.mu:.4g}",
                f"epsilon({b.delta:g}) if the trade-off curve is Gaussian: {b.epsilon_gdp_shape:.4g}",
                f"strength: at most epsilon {self.strength:.4g} certifiable with these runs",
                *self._rank_lines(),
                *self.notes,
            ]
        )

    def _rank_lines(self) -> list[str]:
        r = self.rank
        if r is None:
            return []
        return [
            f"if the score's ROC curve is Gaussian (rank test of all runs, {r.confidence:g}): "
            f"mu >= {r.mu:.4g}, epsilon({r.delta:g}) >= {r.epsilon:.4g}"
        ]


@dataclasses.dataclass(frozen=True)
class TrainingTarget:
    """A training pipeline to audit from a spec: what a ``[training]`` spec's callable returns.

    Attributes:
        train: ``train(dataset, key, gradient_canary) -> updates (T, dim)`` (all iterates).
        dataset: the training data, passed to every run.
        dim: the number of parameters (the canary's coordinate is below it).
        llr: the per-step log-likelihood ratio of the canary coordinate (a score transform,
            e.g. :func:`~dpaudit.training.canaries.subsampled_gaussian_loss`), or ``None``.
        vectorize: ``train`` is JAX-traceable: each group's runs are one ``jax.vmap``.
        name: what is audited (for the report).
        profile: the accountant's whole privacy profile (a :class:`ProfileClaim`), audited
            instead of one point when a spec asks ``claim = "profile"``; or ``None``.
    """

    train: Callable
    dataset: object
    dim: int
    llr: Callable | None = None
    vectorize: bool = False
    name: str = "training"
    profile: ProfileClaim | None = None

    def __post_init__(self):
        if not callable(self.train):
            raise TypeError("train must be a callable train(dataset, key, gradient_canary).")
        if not (isinstance(self.dim, int) and self.dim >= 1):
            raise ValueError(f"dim must be a positive integer, got {self.dim!r}.")
        if self.llr is not None and not callable(self.llr):
            raise TypeError("llr must be a callable per-step transform or None.")
        if self.profile is not None and not isinstance(self.profile, ProfileClaim):
            raise TypeError("profile must be a dpaudit.training.ProfileClaim or None.")


@dataclasses.dataclass(frozen=True)
class ProfileClaim:
    """A claimed privacy profile: ``delta(epsilon)`` for every epsilon (an accountant's output).

    Attributes:
        delta_of_epsilon: the claimed ``delta(epsilon)``, vectorised (e.g. an
            :class:`~dpaudit.accounting.ExactAccounting`'s ``delta_upper``).
        delta: the delta at which the certified epsilon is reported.
        description: how the claim reads in the report; or a callable returning it, called
            when the audit runs (a profile computed on first use, e.g. an accountant that
            imports its library only then, describes itself without being built early).
    """

    delta_of_epsilon: Callable
    delta: float = 1e-5
    description: str | Callable[[], str] = "a privacy profile"

    def __post_init__(self):
        if not callable(self.delta_of_epsilon):
            raise TypeError("delta_of_epsilon must be a callable epsilon -> delta.")
        if not 0 < self.delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {self.delta!r}.")
        if not (isinstance(self.description, str) or callable(self.description)):
            raise TypeError("description must be a string or a callable returning one.")

    def describe(self) -> str:
        """How the claim reads in the report (the description, called if it is a callable).

        Returns:
            The description.
        """
        return self.description if isinstance(self.description, str) else self.description()


def _check_claim(claim) -> tuple[str, float, str, Callable | None]:
    """The claim's description, its delta, the selection target and the profile."""
    if isinstance(claim, GDPClaim):
        return claim.describe(), 1e-5, "mu", None
    if isinstance(claim, ProfileClaim):
        return claim.describe(), claim.delta, "profile", claim.delta_of_epsilon
    if isinstance(claim, Claim):
        if not claim.delta < 1:
            raise ValueError(f"the claim's delta must be < 1, got {claim.delta!r}.")
        return f"({claim.epsilon:g}, {claim.delta:g})-DP", float(claim.delta), "epsilon", None
    raise TypeError("claim must be a dpaudit.Claim, a GDPClaim or a ProfileClaim.")


def _violated(claim, bound: ManyRunBound) -> bool:
    if isinstance(claim, GDPClaim):
        return bound.mu > claim.mu
    if isinstance(claim, ProfileClaim):
        return bound.profile_excess > 0
    return bound.epsilon > claim.epsilon


def _p_value(claim, bound: ManyRunBound) -> float:
    """The violation's p-value (:func:`~dpaudit.training.bounds.many_run_p_value`)."""
    if isinstance(claim, GDPClaim):

        def rejects(p_lo, q_hi):
            return gdp_mu_for_point(q_hi, 1.0 - p_lo) > claim.mu
    elif isinstance(claim, ProfileClaim):

        def rejects(p_lo, q_hi):
            return profile_excess(p_lo, q_hi, claim.delta_of_epsilon) > 0
    else:

        def rejects(p_lo, q_hi):
            return epsilon_on_side(p_lo, q_hi, bound.delta, bound.side) > claim.epsilon

    n = bound.thresholds_tested  # Bonferroni: each threshold was tested at alpha / n
    return min(1.0, n * many_run_p_value(bound.counts, rejects, (1.0 - bound.confidence) / n))


def _states_serial(train, canary, dataset, keys, present: bool) -> list:
    data, extra = canary.arguments(dataset, present)
    return [train(data, key, **extra) for key in keys]


def _check_shapes(states) -> None:
    shapes = {str(jax.tree_util.tree_map(np.shape, s)) for s in states}
    if len(shapes) > 1:
        raise ValueError(
            "train returned states of different shapes between runs; return the same "
            "structure every run."
        )


@functools.lru_cache(maxsize=_CACHED_TRAININGS)
def _vmapped(train, score):
    """``train`` vmapped over keys and scored, jitted once (both groups share it)."""

    def run(data, keys, extra):
        states = jax.vmap(lambda k: train(data, k, **extra))(keys)
        return states if score is None else score(states)

    return jax.jit(run)


def _score_shard(shared, task) -> tuple[np.ndarray, str]:
    """One shard of runs on an executor's worker: ``task = (present, keys)``, serially."""
    train, canary, dataset = shared
    present, keys = task
    states = _states_serial(train, canary, dataset, keys, present)
    _check_shapes(states)
    shape = str(jax.tree_util.tree_map(np.shape, states[0]))
    return np.array([canary.score(s) for s in states], dtype=np.float64), shape


def _scores_sharded(executor, train, canary, dataset, keys, half: int) -> tuple:
    """Both groups' scores, each group's keys cut into ``executor.shards`` shards, in order."""
    shared = executor.put((train, canary, dataset), "the training function and canary")
    cuts = [np.array_split(np.arange(g * half, (g + 1) * half), executor.shards) for g in (0, 1)]
    tasks = [(g == 0, keys[idx]) for g, parts in enumerate(cuts) for idx in parts if idx.size]
    parts = executor.map(_score_shard, shared, tasks, [1] * len(tasks), None, ordered=True)
    if len({shape for _, shape in parts}) > 1:  # each shard checked its own runs
        _check_shapes([np.zeros(1), np.zeros(2)])  # raises the one sentence
    group = [present for present, _ in tasks]
    s_in = np.concatenate([p for (p, _), g in zip(parts, group, strict=True) if g])
    s_out = np.concatenate([p for (p, _), g in zip(parts, group, strict=True) if not g])
    return s_in, s_out


def _scores(train, canary, dataset, keys, present: bool, vectorize: bool) -> np.ndarray:
    """One score per key (serial loop, or one vmap over the keys)."""
    if vectorize:
        data, extra = canary.arguments(dataset, present)
        score = getattr(canary, "score_array", None)
        states = _vmapped(train, score)(data, keys, extra)
        if score is not None:
            return np.asarray(states, dtype=np.float64)
        n = keys.shape[0]
        return np.array(
            [canary.score(jax.tree_util.tree_map(lambda a, i=i: a[i], states)) for i in range(n)]
        )
    states = _states_serial(train, canary, dataset, keys, present)
    _check_shapes(states)
    return np.array([canary.score(s) for s in states], dtype=np.float64)


def training_audit(
    train: Callable,
    dataset,
    claim,
    canary,
    *,
    runs: int = 1000,
    confidence: float = 0.95,
    select_fraction: float = 0.25,
    seed: int = 0,
    vectorize=False,
    name: str = "training",
) -> TrainingAuditResult:
    """Audit a training pipeline with a canary over many runs.

    Args:
        train: ``train(dataset, key, **canary_arguments) -> released state``
            (gradient canaries pass ``gradient_canary``).
        dataset: the training data (an array, ``(X, y)``, or a pytree of arrays).
        claim: the pipeline's claim: :class:`~dpaudit.Claim` (epsilon at delta),
            :class:`~dpaudit.model.claims.GDPClaim` (mu), or :class:`ProfileClaim` (an
            accountant's whole ``delta(epsilon)`` curve: the most a point can refute).
        canary: a canary design (:mod:`dpaudit.training.canaries`).
        runs: total trainings, half with the canary (even, ``>= 8``).
        confidence: the confidence of the certified bounds, in ``(0, 1)``.
        select_fraction: fraction of the runs that choose the threshold, in ``[0, 1)``;
            ``0``: every run certifies, Bonferroni over all thresholds.
        seed: the root seed.
        vectorize: ``True``: ``jax.vmap`` the trainings of each group (``train`` must be
            traceable); ``False``: a serial loop here; ``"ray"`` or a :mod:`dpaudit.runtime`
            executor: each group's runs cut into ``executor.shards`` shards of consecutive
            keys, trained serially on its workers (the scores, so the result, are the
            serial run's).
        name: what is audited (for the report).

    Returns:
        A :class:`TrainingAuditResult`.

    Raises:
        ValueError: for an odd or too small ``runs``, a confidence outside ``(0, 1)``, a
            claim delta ``>= 1``, states of different shapes, or non-finite scores.
        TypeError: for a claim of another kind.
    """
    ensure_compilation_cache()
    described, delta, target, profile = _check_claim(claim)
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
    if not (isinstance(runs, int) and runs >= 8 and runs % 2 == 0):
        raise ValueError(f"runs must be an even integer >= 8, got {runs!r}.")
    root = jax.random.PRNGKey(int(seed))
    keys = jax.vmap(lambda i: jax.random.fold_in(root, i))(jnp.arange(runs))
    half = runs // 2
    start = time.perf_counter()
    if not isinstance(vectorize, bool):  # an executor: serial shards on its workers
        executor = resolve_executor(vectorize)
        s_in, s_out = _scores_sharded(executor, train, canary, dataset, keys, half)
    else:
        s_in = _scores(train, canary, dataset, keys[:half], True, vectorize)
        s_out = _scores(train, canary, dataset, keys[half:], False, vectorize)
    seconds = time.perf_counter() - start
    if not (np.all(np.isfinite(s_in)) and np.all(np.isfinite(s_out))):
        raise ValueError("the canary scores are not all finite; make train and the score finite.")
    bound = many_run_bound(
        s_in,
        s_out,
        delta=delta,
        confidence=confidence,
        select_fraction=select_fraction,
        target=target,
        seed=int(seed),
        profile=profile,
    )
    violated = _violated(claim, bound)
    _, fpr_hi = clopper_pearson(0, bound.counts[3], (1 - confidence) / 2)
    strength = math.log((1 - delta) / float(fpr_hi))
    return TrainingAuditResult(
        name=name,
        claim=described,
        verdict="violation" if violated else "inconclusive",
        bound=bound,
        canary=canary.kind,
        runs=(half, half),
        strength=strength,
        seed=int(seed),
        seconds=seconds,
        notes=_notes(violated, bound),
        p_value=_p_value(claim, bound) if violated else None,
        rank=rank_bound(s_in, s_out, delta=delta, confidence=confidence, seed=int(seed)),
        **_claimed(claim, delta),
    )


def _claimed(claim, delta: float) -> dict:
    """The claim's epsilon at its delta and its adjacency, for records and reports."""
    if isinstance(claim, GDPClaim):
        return {"claimed_epsilon": gdp_epsilon(delta, claim.mu), "claimed_delta": delta}
    if isinstance(claim, ProfileClaim):
        return {"claimed_epsilon": _profile_epsilon(claim), "claimed_delta": delta}
    return {
        "claimed_epsilon": float(claim.epsilon),
        "claimed_delta": delta,
        "adjacency": claim.adjacency,
    }


def _notes(violated: bool, bound: ManyRunBound | OneRunBound) -> tuple[str, ...]:
    if violated:
        return (
            "The certified lower bound exceeds the claim: the pipeline does not keep it "
            f"(with probability >= {bound.confidence:g} over the audit's randomness).",
        )
    return ("No violation certified; a lower bound below the claim does not prove the claim.",)


def _one_run_claim(claim) -> tuple[str, float, float, str]:
    """A one-run claim's description, epsilon, delta and adjacency."""
    if isinstance(claim, ProfileClaim):
        return claim.describe(), float(_profile_epsilon(claim)), claim.delta, "add-remove"
    if isinstance(claim, Claim):
        described, delta, _, _ = _check_claim(claim)
        return described, float(claim.epsilon), delta, claim.adjacency
    raise TypeError("claim must be a dpaudit.Claim or a ProfileClaim for a one-run audit.")


def one_run_training_audit(
    train: Callable,
    dataset,
    claim,
    canaries,
    *,
    k_plus: int,
    k_minus: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
    name: str = "training",
) -> TrainingAuditResult:
    """The one-run audit as a result record: coins include canaries, one training, guesses.

    Args:
        train: ``train(dataset, key, gradient_canary) -> updates (T, dim)``; the canaries
            arrive as an ``(m, dim)`` matrix (zero rows for the excluded ones).
        dataset: the training data.
        claim: a :class:`~dpaudit.Claim` (its epsilon at its delta) or a
            :class:`ProfileClaim` (its epsilon at its delta).
        canaries: a :class:`~dpaudit.training.canaries.DiracCanaries`.
        k_plus: guesses *in* (highest scores), fixed in advance.
        k_minus: guesses *out* (lowest scores), fixed in advance.
        confidence: the confidence of the bound, in ``(0, 1)``.
        seed: the seed of the inclusion coins and of the training key.
        name: what is audited (for the report).

    Returns:
        A :class:`TrainingAuditResult` with ``mode = "one-run"`` and a
        :class:`~dpaudit.training.bounds.OneRunBound`: ``"violation"`` when the certified
        epsilon exceeds the claimed epsilon, else ``"inconclusive"``.

    Raises:
        ValueError: for a confidence outside ``(0, 1)``, a claim delta ``>= 1``, guess
            counts outside ``[1, m]``, updates that are not ``(steps, dim)``, or
            non-finite scores.
        TypeError: for a claim of another kind.
    """
    ensure_compilation_cache()
    described, epsilon, delta, adjacency = _one_run_claim(claim)
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
    coins, train_key = jax.random.split(jax.random.PRNGKey(int(seed)))
    included = np.asarray(jax.random.bernoulli(coins, 0.5, (canaries.m,)))
    start = time.perf_counter()
    updates = train(dataset, train_key, canaries.gradients(included))
    shape = tuple(np.shape(updates))
    if len(shape) != 2 or shape[1] != canaries.dim:
        raise ValueError(
            f"train returned updates of shape {shape}; a one-run audit needs (steps, dim = "
            f"{canaries.dim}) updates, every iterate with one column per parameter."
        )
    scores = canaries.scores(updates)
    seconds = time.perf_counter() - start
    if not np.all(np.isfinite(scores)):
        raise ValueError("the canary scores are not all finite; make train and the score finite.")
    bound = one_run_bound(
        scores, included, k_plus=k_plus, k_minus=k_minus, delta=delta, confidence=confidence
    )
    violated = bound.epsilon > epsilon
    m, r, v = bound.canaries, bound.guesses, bound.correct
    return TrainingAuditResult(
        name=name,
        claim=described,
        verdict="violation" if violated else "inconclusive",
        bound=bound,
        canary="gradient",
        runs=(1, 0),
        strength=one_run_epsilon(m, r, r, delta=delta, confidence=confidence),
        seed=int(seed),
        seconds=seconds,
        notes=_notes(violated, bound),
        claimed_epsilon=epsilon,
        claimed_delta=delta,
        adjacency=adjacency,
        p_value=one_run_p_value(m, r, v, epsilon, delta) if violated else None,
        mode="one-run",
    )


def one_run_audit(
    train: Callable,
    dataset,
    claim,
    canaries,
    *,
    k_plus: int,
    k_minus: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[str, OneRunBound]:
    """The one-run audit's verdict and bound (:func:`one_run_training_audit`, shortened).

    Args:
        train: ``train(dataset, key, gradient_canary) -> updates (T, dim)``.
        dataset: the training data.
        claim: a :class:`~dpaudit.Claim` or a :class:`ProfileClaim`.
        canaries: a :class:`~dpaudit.training.canaries.DiracCanaries`.
        k_plus: guesses *in* (highest scores), fixed in advance.
        k_minus: guesses *out* (lowest scores), fixed in advance.
        confidence: the confidence of the bound, in ``(0, 1)``.
        seed: the seed of the inclusion coins and of the training key.

    Returns:
        ``(verdict, bound)``: ``"violation"`` when the certified epsilon exceeds the
        claimed epsilon, else ``"inconclusive"``; the :class:`OneRunBound`.

    Raises:
        ValueError: as :func:`one_run_training_audit`.
        TypeError: for a claim of another kind.
    """
    result = one_run_training_audit(
        train, dataset, claim, canaries, k_plus=k_plus, k_minus=k_minus,
        confidence=confidence, seed=seed,
    )  # fmt: skip
    return result.verdict, result.bound


def _profile_epsilon(claim: ProfileClaim) -> float:
    """An epsilon (within 1e-9 above the smallest) at which the profile is at most its delta.

    ``delta(epsilon)`` is non-increasing, so bisection on ``[0, 60]`` finds it; rounding
    up keeps the claimed epsilon a claim's (the verdict compares a lower bound with it).
    """

    def ok(e: float) -> bool:
        return float(np.asarray(claim.delta_of_epsilon(np.array([e])))[0]) <= claim.delta

    lo, hi = 0.0, _PROFILE_EPSILON_MAX
    if ok(lo):
        return 0.0
    if not ok(hi):
        return math.inf
    while hi - lo > 1e-9:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
