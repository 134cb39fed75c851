r"""Audit a mechanism's claim on a pair of neighbouring datasets.

Three lines::

    >>> import dpaudit, jax.numpy as jnp, numpyro, numpyro.distributions as dist
    >>> mech = dpaudit.Mechanism("laplace-mean",
    ...     lambda d: numpyro.sample("release", dist.Laplace(jnp.mean(d), 1.0 / (d.shape[0] * 1.0))),
    ...     dpaudit.Claim(epsilon=1.0, sensitivity=1.0 / 10, sensitivity_norm="l1"))
    >>> report = dpaudit.audit(mech, jnp.zeros(10), jnp.zeros(10).at[0].set(1.0), samples=20_000)
    >>> report.verdict, round(report.epsilon_at_claimed_delta["exact"], 6)
    ('pass', 1.0)

What :func:`audit` does, for a claim ``(epsilon, delta)`` and datasets ``D ~ D'``:

1. **Monte Carlo, both directions.** Draws ``samples`` releases from ``P_D``
   and from ``P_D'`` (chunked, jitted, reproducible from ``seed``) and
   evaluates the privacy losses ``L`` (:mod:`dpaudit.loss`), folding them into
   streaming hockey-stick estimates with confidence bounds (:mod:`dpaudit.pld`).
2. **Exact accounting** when the release is shifted Gaussian-process / ICLP /
   Laplace noise (:mod:`dpaudit.accounting`): the exact Gaussian curve, or the
   numerical Laplace upper and lower curves, and the supremum of the loss.
3. **Certificates.** A release ``x`` with ``L(x) > epsilon + tol``, evaluated
   with the exact release densities, certifies that a *pure* epsilon claim is
   violated: the densities of these families are continuous, so the density
   ratio exceeds ``e^epsilon`` on a neighbourhood ``A`` of ``x`` and
   ``P_D(A) > e^epsilon P_D'(A)``. ``tol = 1e-9 (1 + sum_j |t_j|)`` over the
   summands of both log densities, so float64 round-off never certifies.
   Candidates are the Monte Carlo draw with the largest loss in each direction
   and, for shifted noise, the analytic worst case (``x = f_D`` for Laplace
   noise, where ``L = sqrt 2 ||h||_{1,C} / sigma``; a point far along ``h``
   for Gaussian noise). Two grid releases whose summaries differ off the
   Karhunen–Loève span are mutually singular: ``P_D`` is carried by the affine
   set ``f_D + span``, which ``P_D'`` gives mass 0, so ``delta(epsilon) = 1``
   and every claim with ``delta < 1`` fails.
4. **Compatibility** (:mod:`dpaudit.compatibility`) of ``f_D - f_D'`` with the
   noise, for functional noises.
5. **Verdict** at confidence ``1 - alpha``:

   * ``"violation"`` — a certificate (pure claims, or singular laws); or the
     lower bound of ``delta(epsilon)`` exceeds ``delta`` (Monte Carlo lower
     bounds at ``alpha/2`` per direction, or the exact lower curve).
   * ``"pass"`` — an upper bound on ``delta(epsilon)`` is at most ``delta``:
     the exact/numerical upper curve when available, else the Monte Carlo
     upper bounds of *both* directions (``alpha/2`` each). A pure-epsilon claim
     passes only with exact accounting (``sup L <= epsilon``); sampling cannot
     certify a supremum. A Monte Carlo pass covers only the pair tested.
   * ``"incompatible"`` — no violation on this pair at this truncation, but
     the compatibility analysis shows that the claimed kind of DP is
     impossible for this noise as ``K`` grows (mutually singular laws, or a
     pure claim with ICLP noise on a Gaussian-only pair).
   * ``"inconclusive"`` — otherwise.

Curves (``report.curves``) hold, on a grid of epsilons, the Monte Carlo
estimates with bounds that are simultaneous over the grid and both directions
(Bonferroni, ``alpha / (2 G)`` per point) and the exact curves when known.
``report.epsilon_lower`` is a certified lower bound on the mechanism's
``epsilon(delta)`` at the claimed ``delta`` (at confidence ``1 - alpha``;
deterministic for certificates and exact accounting).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.accounting import ExactAccounting, exact_accounting
from dpaudit.adjacency import check_adjacent
from dpaudit.compatibility import Compatibility
from dpaudit.compatibility import compatibility as compatibility_of
from dpaudit.loss import (
    ROUTES,
    NoiseShift,
    _closed_form_draws_jit,
    check_has_density,
    closed_form_losses,
    combine_log_probs,
    density_losses,
    evaluate_release,
    model_log_prob,
    noise_shift,
    traced_or_closed,
)
from dpaudit.mechanism import Claim, Mechanism
from dpaudit.pld import (
    BOUND_METHODS,
    DeltaCurve,
    delta_bounds,
    epsilon_for_delta,
    epsilon_lower_for_delta,
    hockey_stick_curve,
    init_hockey_stick,
    interpolate_epsilon,
    update_hockey_stick,
)

__all__ = ["VERDICTS", "AuditResult", "Certificate", "DirectionResult", "audit"]

#: Possible verdicts.
VERDICTS = ("pass", "violation", "inconclusive", "incompatible")

#: Direction labels: ``x ~ P_D`` with ``L = log p_D - log p_D'``, and the reverse.
DIRECTIONS = ("D->D'", "D'->D")

_ELEMENTS_PER_CHUNK = 1 << 22  # release coordinates per chunk (32 MiB of float64)
_MAX_CHUNK = 1 << 16
_PILOT = 2048
_GRID_POINTS = 65


# --------------------------------------------------------------------- records


@dataclasses.dataclass(frozen=True)
class Certificate:
    """A release that certifies a violation, evaluated with the exact release densities.

    Attributes:
        release: the release ``x`` (numpy, in the mechanism's coordinates).
        loss: ``L(x) = log p(x) - log q(x)`` (``inf`` for a singular certificate).
        direction: ``"D->D'"`` (``p = p_D``) or ``"D'->D"``.
        log_p, log_q: the two log densities at ``x``.
        tolerance: the round-off margin ``L`` had to exceed ``epsilon`` by.
        kind: ``"density-ratio"`` or ``"singular"``.
        source: ``"monte-carlo"`` or ``"constructed"`` (analytic worst case).
        explanation: one sentence for reports.
    """

    release: np.ndarray
    loss: float
    direction: str
    log_p: float
    log_q: float
    tolerance: float
    kind: str
    source: str
    explanation: str

    def to_dict(self) -> dict:
        return {
            "release": np.asarray(self.release).tolist(),
            "loss": _jf(self.loss),
            "direction": self.direction,
            "log_p": _jf(self.log_p),
            "log_q": _jf(self.log_q),
            "tolerance": self.tolerance,
            "kind": self.kind,
            "source": self.source,
            "explanation": self.explanation,
        }


@dataclasses.dataclass(frozen=True)
class DirectionResult:
    """Monte Carlo results of one direction.

    Attributes:
        direction: ``"D->D'"`` or ``"D'->D"``.
        n: number of losses.
        at_claim: ``{estimate, lower, upper, std_error}`` of ``delta(epsilon_claim)``,
            bounds at ``alpha / 2`` each.
        curve: the :class:`~dpaudit.pld.DeltaCurve` (simultaneous bounds).
        max_loss: largest loss drawn.
        n_infinite: number of ``+inf`` losses.
        losses: the first ``keep_samples`` losses (numpy).
        ess, mcse: ArviZ effective sample size and Monte Carlo standard error of
            ``Y_epsilon_claim`` on the kept losses.
    """

    direction: str
    n: int
    at_claim: Mapping[str, float]
    curve: DeltaCurve
    max_loss: float
    n_infinite: int
    losses: np.ndarray
    ess: float
    mcse: float


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit` (frozen; ``to_dict`` is JSON-able).

    Attributes:
        mechanism: the mechanism's name.
        claim: the :class:`~dpaudit.Claim` audited.
        verdict: one of :data:`VERDICTS`.
        confidence: ``1 - alpha``.
        samples: Monte Carlo releases per direction.
        seed: the seed.
        route: how losses were evaluated (``"closed-form"``, ``"density"``, ``"model"``).
        delta_at_claimed_epsilon: ``{estimate, lower, upper, monte_carlo_lower,
            monte_carlo_upper, exact_lower, exact_upper}`` of the mechanism's
            ``delta(epsilon_claim)`` (max over directions).
        epsilon_lower: certified lower bound on ``epsilon(delta_claim)``.
        epsilon_at_claimed_delta: ``{estimate, upper, exact}``: the tight
            epsilon at the claimed delta (how much budget the claim wastes, or
            by how much it is exceeded).
        certificate: a :class:`Certificate` when one certifies the violation.
        curves: ``{epsilons, "D->D'": {...}, "D'->D": {...}, exact_upper, exact_lower}``.
        exact: the :class:`~dpaudit.accounting.ExactAccounting`, if any.
        compatibility: the :class:`~dpaudit.compatibility.Compatibility`, if any.
        diagnostics: ArviZ ESS/MCSE per direction, infinite-loss counts, chunking.
        directions: the two :class:`DirectionResult`.
        seconds: wall time.
        notes: sentences qualifying the verdict.
    """

    mechanism: str
    claim: Claim
    verdict: str
    confidence: float
    samples: int
    seed: int
    route: str
    delta_at_claimed_epsilon: Mapping[str, Any]
    epsilon_lower: float
    epsilon_at_claimed_delta: Mapping[str, Any]
    certificate: Certificate | None
    curves: Mapping[str, Any]
    exact: ExactAccounting | None
    compatibility: Compatibility | None
    diagnostics: Mapping[str, Any]
    directions: tuple[DirectionResult, DirectionResult]
    seconds: float
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        """A JSON-able dict (non-finite floats as ``"inf"``/``"-inf"``, NaN as ``None``)."""
        return {
            "mechanism": self.mechanism,
            "claim": dataclasses.asdict(self.claim),
            "verdict": self.verdict,
            "confidence": self.confidence,
            "samples": self.samples,
            "seed": self.seed,
            "route": self.route,
            "delta_at_claimed_epsilon": _jsonable(self.delta_at_claimed_epsilon),
            "epsilon_lower": _jf(self.epsilon_lower),
            "epsilon_at_claimed_delta": _jsonable(self.epsilon_at_claimed_delta),
            "certificate": None if self.certificate is None else self.certificate.to_dict(),
            "curves": _jsonable(self.curves),
            "exact": None if self.exact is None else self.exact.summary(),
            "compatibility": None if self.compatibility is None else self.compatibility.to_dict(),
            "diagnostics": _jsonable(self.diagnostics),
            "seconds": self.seconds,
            "notes": list(self.notes),
        }

    def to_inference_data(self):
        """ArviZ ``InferenceData``: kept losses and ``Y_epsilon_claim`` as draws, curves as data.

        Groups: ``posterior`` holds ``loss`` and ``hockey_stick`` with dims
        ``(chain, draw, direction)`` (one chain; these are i.i.d. Monte Carlo
        draws, put where ArviZ's diagnostics look for them); ``constant_data``
        holds the curves over ``epsilon``. The verdict and claim are attributes.
        """
        az = _arviz()
        n = min(d.losses.size for d in self.directions)
        losses = np.stack([d.losses[:n] for d in self.directions], axis=-1)[None]
        y = -np.expm1(np.minimum(self.claim.epsilon - losses, 0.0))
        constant = {"epsilons": np.asarray(self.curves["epsilons"])}
        dims = {
            "loss": ["direction"],
            "hockey_stick": ["direction"],
            "epsilons": ["epsilon"],
        }
        for i, name in enumerate(DIRECTIONS):
            for field in ("estimate", "lower", "upper"):
                key = f"delta_{field}_{'forward' if i == 0 else 'backward'}"
                constant[key] = np.asarray(self.curves[name][field])
                dims[key] = ["epsilon"]
        for key in ("exact_upper", "exact_lower"):
            if self.curves.get(key) is not None:
                constant[f"delta_{key}"] = np.asarray(self.curves[key])
                dims[f"delta_{key}"] = ["epsilon"]
        attrs = {
            "mechanism": self.mechanism,
            "verdict": self.verdict,
            "claim_epsilon": self.claim.epsilon,
            "claim_delta": self.claim.delta,
            "confidence": self.confidence,
            "seed": self.seed,
            "samples": self.samples,
            "route": self.route,
        }
        posterior = {"loss": losses, "hockey_stick": y} if n else None  # keep_samples=0: none
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return az.from_dict(
                posterior=posterior,
                constant_data=constant,
                coords={"direction": list(DIRECTIONS)},
                dims=dims,
                attrs=attrs,
            )

    def to_netcdf(self, path) -> str:
        """Write :meth:`to_inference_data` to a netCDF file; returns the path."""
        return str(self.to_inference_data().to_netcdf(str(path)))


def _jf(v):
    if v is None:
        return None
    v = float(v)
    if math.isnan(v):
        return None
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def _jsonable(obj):
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return [_jf(v) for v in obj.reshape(-1)] if obj.ndim else _jf(obj)
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, bool | str) or obj is None:
        return obj
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return _jf(obj)
    return str(obj)


def _arviz():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz

    return arviz


# ----------------------------------------------------------------- jitted steps


@partial(jax.jit, static_argnames=("n", "family"))
def _closed_form_step(state, key, h, eigenvalues, sigma, singular, epsilons, n_valid, *, n, family):
    loss = closed_form_losses(key, h, eigenvalues, sigma, singular, n, family)
    return _fold(state, loss, epsilons, n_valid)


@partial(jax.jit, static_argnames=("n",))
def _density_step(state, key, dist_p, dist_q, epsilons, n_valid, *, n):
    return _fold(state, density_losses(key, dist_p, dist_q, n), epsilons, n_valid)


def _density_step_closure(dist_p, dist_q, n):
    """The density step with the distributions closed over (for non-pytree distributions)."""

    @jax.jit
    def step(state, key, epsilons, n_valid):
        return _fold(state, density_losses(key, dist_p, dist_q, n), epsilons, n_valid)

    return step


@jax.jit
def _fold_jit(state, loss, epsilons, n_valid):
    return _fold(state, loss, epsilons, n_valid)


def _fold(state, loss, epsilons, n_valid):
    """Fold a chunk into the state; return it, the losses, and the chunk's largest loss and index.

    The draws are not returned (so the hot loop never writes them to memory); the
    winning chunk is regenerated from its key at the end.
    """
    mask = jnp.arange(loss.shape[0]) < n_valid
    state = update_hockey_stick(state, loss, epsilons, mask)
    masked = jnp.where(mask & ~jnp.isnan(loss), loss, -jnp.inf)
    best = jnp.argmax(masked)
    return state, loss, masked[best], best


# ------------------------------------------------------------------- helpers


def _validate(mechanism, samples, confidence, route, method, keep_samples, discretization):
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dpaudit.Mechanism, got {type(mechanism).__name__}.")
    if isinstance(samples, bool) or not isinstance(samples, int | np.integer) or samples < 2:
        raise ValueError(f"samples must be an integer >= 2, got {samples!r}.")
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}.")
    if route not in (*ROUTES, "auto"):
        raise ValueError(f"route must be 'auto' or one of {ROUTES}, got {route!r}.")
    if method not in BOUND_METHODS:
        raise ValueError(f"method must be one of {BOUND_METHODS}, got {method!r}.")
    if keep_samples < 0:
        raise ValueError(f"keep_samples must be >= 0, got {keep_samples!r}.")
    if not (math.isfinite(discretization) and discretization > 0):
        raise ValueError(f"discretization must be a finite number > 0, got {discretization!r}.")


def _event_size(d) -> int:
    return int(np.prod(d.batch_shape + d.event_shape, dtype=np.int64)) or 1


def _chunk_size(chunk_size, samples, width) -> int:
    if chunk_size is None:
        chunk_size = max(256, min(_MAX_CHUNK, _ELEMENTS_PER_CHUNK // max(width, 1)))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer):
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}.")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}.")
    return int(min(chunk_size, samples))


class _Runner:
    """Runs the chunks of one direction with one evaluation route."""

    def __init__(self, mechanism, data_p, data_q, dist_p, dist_q, shift, route):
        self.mechanism, self.data_p, self.data_q = mechanism, data_p, data_q
        self.dist_p, self.dist_q, self.shift, self.route = dist_p, dist_q, shift, route
        self._closure = None

    def _closed_step(self, n):
        if self._closure is None or self._closure[0] != n:
            self._closure = (n, _density_step_closure(self.dist_p, self.dist_q, n))
        return self._closure[1]

    def step(self, state, key, epsilons, n_valid, n):
        if self.route == "closed-form":
            s = self.shift
            return _closed_form_step(
                state,
                key,
                jnp.asarray(s.shift),
                jnp.asarray(s.eigenvalues),
                jnp.asarray(s.sigma, dtype=jnp.float64),
                jnp.asarray(s.singular),
                epsilons,
                n_valid,
                n=n,
                family=s.family,
            )
        if self.route == "density":
            return traced_or_closed(
                (self.dist_p, self.dist_q),
                lambda: _density_step(state, key, self.dist_p, self.dist_q, epsilons, n_valid, n=n),
                lambda: self._closed_step(n)(state, key, epsilons, n_valid),
            )
        x = self.dist_p.sample(key, (n,))
        loss = combine_log_probs(
            model_log_prob(self.mechanism, self.data_p, x),
            model_log_prob(self.mechanism, self.data_q, x),
        )
        return _fold_jit(state, loss, epsilons, n_valid)

    def release(self, key, n: int, index: int) -> np.ndarray:
        """Regenerate the chunk drawn with ``key`` and return its release number ``index``."""
        if self.route == "closed-form":
            s = self.shift
            z = _closed_form_draws_jit(
                key,
                jnp.asarray(s.eigenvalues),
                jnp.asarray(s.sigma, dtype=jnp.float64),
                n=n,
                family=s.family,
            )
            return s.release(np.asarray(z[index]))
        return np.asarray(self.dist_p.sample(key, (n,))[index])


def _constructed_candidates(shift: NoiseShift | None, dist_p, dist_q, epsilon: float):
    """Analytic worst-case releases (or a directed search along ``E_P - E_Q`` without structure)."""
    out = []
    if shift is not None:
        if shift.singular or shift.family == "laplace":
            out.append(np.asarray(shift.release(np.zeros(shift.n_components))))
        else:
            mu2 = float(np.sum(shift.shift**2 / (shift.sigma**2 * shift.eigenvalues)))
            if mu2 > 0:
                t = max(0.0, (epsilon + 1.0) / mu2 - 0.5)
                out.append(np.asarray(shift.release(t * shift.shift)))
        return out
    try:
        mean_p = np.asarray(dist_p.mean, dtype=np.float64)
        mean_q = np.asarray(dist_q.mean, dtype=np.float64)
    except (NotImplementedError, AttributeError, TypeError, ValueError):
        return out
    if mean_p.shape != mean_q.shape or not (
        np.all(np.isfinite(mean_p)) and np.all(np.isfinite(mean_q))
    ):
        return out
    for t in (0.0, 1.0, 3.0, 10.0, 30.0):
        out.append(mean_p + t * (mean_p - mean_q))
    return out


def _progress(total_chunks: int, progress):
    show = progress if progress is not None else (total_chunks >= 200 and sys.stderr.isatty())
    if not show:
        return None
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("[bold]auditing[/bold] {task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} chunks"),
        TimeRemainingColumn(),
        transient=True,
    )
    bar.start()
    return bar


def _arviz_diagnostics(y: np.ndarray) -> tuple[float, float]:
    if y.size < 16:
        return math.nan, math.nan
    az = _arviz()
    n = (y.size // 4) * 4
    draws = y[:n].reshape(4, -1)
    if np.all(draws == draws.flat[0]):
        return float(n), 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ess = float(az.ess(draws))
        mcse = float(az.mcse(draws))
    return ess, mcse


# ----------------------------------------------------------------------- audit


def audit(
    mechanism: Mechanism,
    data,
    data_prime,
    *,
    samples: int = 100_000,
    seed: int = 0,
    confidence: float = 0.95,
    epsilons: Sequence[float] | None = None,
    route: str = "auto",
    exact: bool = True,
    compatibility: bool = True,
    check_adjacency: bool = True,
    method: str = "bernstein",
    chunk_size: int | None = None,
    keep_samples: int = 1_000_000,
    discretization: float = 1e-4,
    progress: bool | None = None,
) -> AuditResult:
    """Audit ``mechanism``'s claim on the neighbouring datasets ``data`` and ``data_prime``.

    Args:
        mechanism: a :class:`~dpaudit.Mechanism`.
        data, data_prime: the neighbouring datasets ``D`` and ``D'``.
        samples: Monte Carlo releases per direction (memory stays bounded:
            losses are folded chunk by chunk).
        seed: seed of ``jax.random.key``; the same ``(seed, samples,
            chunk_size)`` reproduce the same draws.
        confidence: ``1 - alpha`` for every bound and verdict.
        epsilons: grid for the curves (the claimed epsilon is always added);
            default: 65 points from 0 to beyond the largest loss of a pilot run.
        route: ``"auto"`` (closed form for shifted Gaussian/ICLP/Laplace
            noise, else densities), ``"closed-form"``, ``"density"`` or ``"model"``.
        exact: use exact/numerical accounting when the structure allows.
        compatibility: run the compatibility analysis for functional noises.
        check_adjacency: check that the datasets are neighbours under the claim's adjacency.
        method: confidence-bound method of :data:`dpaudit.pld.BOUND_METHODS`.
        chunk_size: releases per chunk (default: 2^22 release coordinates, at most 2^16).
        keep_samples: losses kept per direction for diagnostics and export.
        discretization: grid spacing of the numerical Laplace accounting.
        progress: show a progress bar (default: for long runs on a terminal).

    Returns:
        An :class:`AuditResult`.

    Raises:
        ValueError: non-adjacent datasets, a model without a release site,
            NaN losses (no partial result is returned), bad arguments.
        TypeError: a release distribution without a density, a non-Mechanism.
    """
    started = time.perf_counter()
    _validate(mechanism, samples, confidence, route, method, keep_samples, discretization)
    samples, seed, confidence = int(samples), int(seed), float(confidence)
    claim = mechanism.claim
    alpha = 1.0 - confidence
    if check_adjacency:
        check_adjacent(data, data_prime, claim.adjacency)
    dist_d = mechanism.release_distribution(data)
    dist_dp = mechanism.release_distribution(data_prime)
    shift = noise_shift(dist_d, dist_dp)
    if shift is None:  # shifted Gaussian/ICLP/Laplace noise has a density by construction
        check_has_density(dist_d, mechanism.name)
        check_has_density(dist_dp, mechanism.name)
    if route == "auto":
        route = "closed-form" if shift is not None else "density"
    if route == "closed-form" and shift is None:
        raise ValueError(
            f"mechanism {mechanism.name!r}: route='closed-form' needs releases that are the same "
            "Gaussian/ICLP/Laplace noise shifted; use route='density'."
        )
    accounting = exact_accounting(shift, discretization=discretization) if exact and shift else None
    compat = None
    if compatibility and shift is not None and shift.source in ("grid", "coefficients"):
        compat = compatibility_of(shift.shift, shift.eigenvalues)

    reverse = None if shift is None else shift.reversed()
    runners = [
        _Runner(mechanism, data, data_prime, dist_d, dist_dp, shift, route),
        _Runner(mechanism, data_prime, data, dist_dp, dist_d, reverse, route),
    ]
    width = shift.n_components if route == "closed-form" else _event_size(dist_d)
    chunk = _chunk_size(chunk_size, samples, width)
    key = jax.random.key(seed)

    # Pilot run (its own keys, not reused) to place the default epsilon grid; it has the
    # shapes of the main run so the jitted step compiles once.
    grid = _epsilon_grid(epsilons, claim.epsilon, runners, key, accounting, chunk, samples)
    claim_index = int(np.nonzero(grid == claim.epsilon)[0][0])
    eps_j = jnp.asarray(grid)

    n_chunks = -(-samples // chunk)
    bar = _progress(2 * n_chunks, progress)
    results = []
    best = []
    try:
        task = bar.add_task(mechanism.name, total=2 * n_chunks) if bar else None
        for d_index, runner in enumerate(runners):
            state = init_hockey_stick(grid.size)
            dkey = jax.random.fold_in(key, d_index)
            kept, n_kept = [], 0
            best_loss, best_at = -math.inf, None
            for c in range(n_chunks):
                n_valid = min(chunk, samples - c * chunk)
                state, loss, top, where = runner.step(
                    state, jax.random.fold_in(dkey, c), eps_j, n_valid, chunk
                )
                if float(state.n_nan) > 0:
                    raise ValueError(
                        f"mechanism {mechanism.name!r}: {int(state.n_nan)} privacy loss(es) are "
                        f"NaN in direction {DIRECTIONS[d_index]} (a release outside the support "
                        "of both release distributions, or a NaN log density); the audit is "
                        "aborted and no partial result is returned."
                    )
                if n_kept < keep_samples:
                    part = np.asarray(loss[: min(n_valid, keep_samples - n_kept)])
                    kept.append(part)
                    n_kept += part.size
                top = float(top)
                if top > best_loss:
                    best_loss, best_at = top, (c, int(where))
                if bar:
                    bar.advance(task)
            losses = np.concatenate(kept) if kept else np.zeros(0)
            results.append(
                _direction_result(
                    d_index, state, grid, claim_index, losses, alpha, method, claim.epsilon
                )
            )
            best_release = None
            if best_at is not None:
                best_release = runner.release(
                    jax.random.fold_in(dkey, best_at[0]), chunk, best_at[1]
                )
            best.append((best_loss, best_release))
    finally:
        if bar:
            bar.stop()

    certificate, candidate_losses = _find_certificate(claim, runners, best, shift, accounting)
    return _conclude(
        mechanism=mechanism,
        claim=claim,
        confidence=confidence,
        alpha=alpha,
        samples=samples,
        seed=seed,
        route=route,
        grid=grid,
        claim_index=claim_index,
        results=results,
        accounting=accounting,
        compat=compat,
        shift=shift,
        certificate=certificate,
        candidate_losses=candidate_losses,
        chunk=chunk,
        started=started,
    )


def _epsilon_grid(epsilons, claim_epsilon, runners, key, accounting, chunk, samples):
    if epsilons is not None:
        grid = np.asarray(epsilons, dtype=np.float64).reshape(-1)
        if grid.size == 0 or not np.all(np.isfinite(grid)):
            raise ValueError("epsilons must be a non-empty sequence of finite numbers.")
        return np.unique(np.append(grid, claim_epsilon))
    top = 0.0
    n_valid = min(_PILOT, chunk, samples)
    # Closed-form chunks are cheap: reuse the main shape (one compilation). Densities may be
    # expensive per release: draw only the pilot's releases (one more compilation).
    shape = chunk if runners[0].route == "closed-form" else n_valid
    for d_index, runner in enumerate(runners):
        state = init_hockey_stick(_GRID_POINTS + 1)
        _, loss, _, _ = runner.step(
            state,
            jax.random.fold_in(key, 1000 + d_index),
            jnp.zeros(_GRID_POINTS + 1),
            n_valid,
            shape,
        )
        loss = np.asarray(loss)[:n_valid]
        finite = loss[np.isfinite(loss)]
        if finite.size:
            top = max(top, float(finite.max()))
    if accounting is not None and math.isfinite(accounting.sup_loss):
        top = max(top, accounting.sup_loss)
    hi = max(2.0 * claim_epsilon, 1.25 * top)
    grid = np.linspace(0.0, hi, _GRID_POINTS)
    if np.any(grid == claim_epsilon):
        grid = np.append(grid, 1.05 * hi)  # keep G fixed so the step compiles once
    return np.unique(np.append(grid, claim_epsilon))


def _direction_result(d_index, state, grid, claim_index, losses, alpha, method, claim_eps):
    g = grid.size
    curve = hockey_stick_curve(state, grid, alpha / (2 * g), method=method)
    n = int(state.count)
    mean = float(curve.estimate[claim_index])
    var = float(state.m2[claim_index]) / (n - 1)
    lower, upper = delta_bounds(mean, var, n, alpha / 2, method=method)
    y = -np.expm1(np.minimum(claim_eps - losses, 0.0)) if losses.size else losses
    ess, mcse = _arviz_diagnostics(y)
    return DirectionResult(
        direction=DIRECTIONS[d_index],
        n=n,
        at_claim={
            "estimate": mean,
            "lower": float(lower),
            "upper": float(upper),
            "std_error": float(curve.std_error[claim_index]),
        },
        curve=curve,
        max_loss=float(state.max_loss),
        n_infinite=int(state.n_infinite),
        losses=losses,
        ess=ess,
        mcse=mcse,
    )


def _find_certificate(claim, runners, best, shift, accounting):
    """Best verified release over Monte Carlo maxima and constructed worst cases, per direction."""
    found = None
    verified = []
    for d_index, runner in enumerate(runners):
        s = shift if d_index == 0 or shift is None else shift.reversed()
        candidates = []
        if best[d_index][1] is not None:
            candidates.append(("monte-carlo", best[d_index][1]))
        for x in _constructed_candidates(s, runner.dist_p, runner.dist_q, claim.epsilon):
            candidates.append(("constructed", x))
        for source, x in candidates:
            try:
                loss, lp, lq, tol = evaluate_release(runner.dist_p, runner.dist_q, x)
            except (ValueError, TypeError):
                continue
            if math.isnan(loss) or lp == -math.inf:
                continue
            verified.append(loss - tol if math.isfinite(loss) else loss)
            singular = loss == math.inf
            certifies = singular or (claim.pure and loss > claim.epsilon + tol)
            if singular and not (shift is not None and shift.singular):
                # a single point outside the support of Q is a certificate only when the whole
                # support of P is known to be (shifted noise whose summaries leave the span).
                certifies = claim.pure
            if not certifies:
                continue
            if singular and shift is not None and shift.singular:
                kind = "singular"
                why = (
                    "the summaries differ off the span of the noise's eigenfunctions, so P_D is "
                    "carried by the affine set f_D + span, which P_D' gives probability 0: "
                    "delta(epsilon) = 1 for every epsilon."
                )
            else:
                kind = "density-ratio"
                why = (
                    f"L(x) = {loss:.6g} > epsilon = {claim.epsilon:g} (+ round-off margin "
                    f"{tol:.2g}); the densities are continuous, so the density ratio exceeds "
                    "e^epsilon on a neighbourhood A of x and P(A) > e^epsilon Q(A)."
                )
            cert = Certificate(
                release=np.asarray(x),
                loss=loss,
                direction=DIRECTIONS[d_index],
                log_p=lp,
                log_q=lq,
                tolerance=tol,
                kind=kind,
                source=source,
                explanation=why,
            )
            if found is None or loss > found.loss:
                found = cert
    del accounting
    return found, verified


def _conclude(
    *,
    mechanism,
    claim,
    confidence,
    alpha,
    samples,
    seed,
    route,
    grid,
    claim_index,
    results,
    accounting,
    compat,
    shift,
    certificate,
    candidate_losses,
    chunk,
    started,
) -> AuditResult:
    eps, delta = claim.epsilon, claim.delta
    notes = []
    fwd, bwd = results
    mc_est = max(fwd.at_claim["estimate"], bwd.at_claim["estimate"])
    mc_lower = max(fwd.at_claim["lower"], bwd.at_claim["lower"])
    mc_upper = max(fwd.at_claim["upper"], bwd.at_claim["upper"])
    exact_lower = exact_upper = None
    if accounting is not None:
        exact_lower = float(accounting.delta_lower(eps))
        exact_upper = float(accounting.delta_upper(eps))
    lower = max(mc_lower, exact_lower if exact_lower is not None else 0.0)
    upper = exact_upper if exact_upper is not None else mc_upper
    estimate = (
        exact_upper if (accounting is not None and accounting.family == "gaussian") else mc_est
    )
    delta_info = {
        "estimate": estimate,
        "lower": lower,
        "upper": upper,
        "monte_carlo_estimate": mc_est,
        "monte_carlo_lower": mc_lower,
        "monte_carlo_upper": mc_upper,
        "exact_lower": exact_lower,
        "exact_upper": exact_upper,
    }

    # ---- verdict
    exact_violation = exact_lower is not None and exact_lower > delta * (1 + 1e-9) + 1e-15
    if accounting is not None and accounting.family == "laplace" and claim.pure:
        tol_sup = 1e-9 * (1.0 + accounting.sup_loss)
        exact_violation = exact_violation or accounting.sup_loss > eps + tol_sup
    if certificate is not None or mc_lower > delta or exact_violation:
        verdict = "violation"
        if certificate is None and claim.pure and exact_violation:
            notes.append("violation from exact accounting (no single release verified).")
    elif claim.pure:
        if accounting is not None and accounting.family == "laplace":
            ok = accounting.sup_loss <= eps + 1e-9 * (1.0 + accounting.sup_loss)
            verdict = "pass" if ok else "inconclusive"
        elif accounting is not None and accounting.sup_loss == 0.0:
            verdict = "pass"
        else:
            verdict = "inconclusive"
            notes.append(
                "a pure-epsilon claim cannot pass on Monte Carlo evidence alone (a supremum "
                "is never certified by sampling); no release with L > epsilon was found."
            )
    elif upper <= delta:
        verdict = "pass"
        if accounting is None:
            notes.append(
                "Monte Carlo pass: the upper confidence bounds of both directions support the "
                "claim for this pair of datasets only, not for every neighbouring pair."
            )
    else:
        verdict = "inconclusive"
    if compat is not None and verdict != "violation":
        family = shift.family if shift is not None else "gaussian"
        if compat.allows(claim.pure, family) is False:
            notes.append(
                f"no violation at K = {compat.n_components}, but {compat.reason} The claim "
                "cannot hold for the functional (K -> infinity) mechanism."
            )
            verdict = "incompatible"
    if compat is not None and compat.classification == "undetermined":
        notes.append(compat.reason)

    # ---- epsilons
    lower_curve = np.maximum(fwd.curve.lower, bwd.curve.lower)
    upper_curve = np.maximum(fwd.curve.upper, bwd.curve.upper)
    est_curve = np.maximum(fwd.curve.estimate, bwd.curve.estimate)
    exact_curve_upper = exact_curve_lower = None
    if accounting is not None:
        exact_curve_upper = np.asarray(accounting.delta_upper(grid))
        exact_curve_lower = np.asarray(accounting.delta_lower(grid))
    observed = [v for v in candidate_losses if not math.isnan(v)]
    max_observed = max(observed, default=-math.inf)
    if claim.pure:
        epsilon_lower = max(0.0, max_observed) if observed else 0.0
        if accounting is not None and accounting.family == "laplace":
            epsilon_lower = max(epsilon_lower, accounting.sup_loss)
        if accounting is not None and accounting.family in ("gaussian", "singular"):
            epsilon_lower = math.inf if accounting.sup_loss > 0 else 0.0
        exact_eps = accounting.epsilon_upper(0.0) if accounting is not None else None
        eps_info = {
            "estimate": exact_eps
            if exact_eps is not None
            else max(0.0, max(fwd.max_loss, bwd.max_loss)),
            "upper": exact_eps if exact_eps is not None else math.inf,
            "exact": exact_eps,
        }
    else:
        epsilon_lower = epsilon_lower_for_delta(grid, lower_curve, delta)
        if certificate is not None and certificate.kind == "singular":
            epsilon_lower = math.inf
        exact_eps = None
        if accounting is not None:
            epsilon_lower = max(epsilon_lower, accounting.epsilon_lower(delta))
            exact_eps = accounting.epsilon_upper(delta)
        eps_info = {
            "estimate": exact_eps
            if exact_eps is not None
            else interpolate_epsilon(grid, est_curve, delta),
            "upper": exact_eps
            if exact_eps is not None
            else epsilon_for_delta(grid, upper_curve, delta),
            "exact": exact_eps,
            "monte_carlo_estimate": interpolate_epsilon(grid, est_curve, delta),
            "monte_carlo_upper": epsilon_for_delta(grid, upper_curve, delta),
        }
    # An estimate never sits below what is certified (the constructed candidates of a
    # pure claim can certify more than the largest sampled loss shows).
    if not math.isnan(eps_info["estimate"]):
        eps_info["estimate"] = max(eps_info["estimate"], epsilon_lower)
    eps_info["claimed"] = eps
    if math.isfinite(eps_info["estimate"]) and eps_info["estimate"] > 0:
        eps_info["ratio_to_claim"] = eps_info["estimate"] / eps
    else:
        eps_info["ratio_to_claim"] = math.inf if eps_info["estimate"] == math.inf else 0.0

    curves = {"epsilons": grid, "claim_index": claim_index, "confidence": confidence}
    for r in results:
        curves[r.direction] = {
            "estimate": r.curve.estimate,
            "lower": r.curve.lower,
            "upper": r.curve.upper,
            "std_error": r.curve.std_error,
            "failure_probability_per_point": r.curve.failure_probability,
        }
    curves["exact_upper"] = exact_curve_upper
    curves["exact_lower"] = exact_curve_lower
    diagnostics = {
        r.direction: {
            "n": r.n,
            "ess": r.ess,
            "mcse": r.mcse,
            "std_error_at_claim": r.at_claim["std_error"],
            "max_loss": r.max_loss,
            "n_infinite": r.n_infinite,
            "kept": int(r.losses.size),
        }
        for r in results
    }
    diagnostics["chunk_size"] = chunk
    diagnostics["route"] = route
    return AuditResult(
        mechanism=mechanism.name,
        claim=claim,
        verdict=verdict,
        confidence=confidence,
        samples=samples,
        seed=seed,
        route=route,
        delta_at_claimed_epsilon=delta_info,
        epsilon_lower=float(epsilon_lower),
        epsilon_at_claimed_delta=eps_info,
        certificate=certificate,
        curves=curves,
        exact=accounting,
        compatibility=compat,
        diagnostics=diagnostics,
        directions=tuple(results),
        seconds=time.perf_counter() - started,
        notes=tuple(notes),
    )
