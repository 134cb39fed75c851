r"""Black-box audits: certified lower bounds on epsilon from samples of an implementation.

A user holds an *implementation* — a numpy function, a library call — not a
numpyro model. :func:`blackbox_audit` audits it from samples alone::

    >>> import dpaudit, jax, jax.numpy as jnp
    >>> from dpaudit.blackbox import blackbox_audit
    >>> def laplace_count(data, n, key):           # claims epsilon = 0.5, really epsilon = 1
    ...     return jnp.sum(data) + jax.random.laplace(key, (n,))
    >>> res = blackbox_audit(laplace_count, jnp.zeros(5), jnp.ones(5).at[1:].set(0.0),
    ...                      dpaudit.Claim(epsilon=0.5), samples=200_000, seed=0,
    ...                      progress=False)
    >>> res.verdict, 0.9 < res.epsilon_lower < 1.0
    ('violation', True)

**The test.** For any event ``S`` (measurable set of releases, possibly with
randomised membership), ``(epsilon, delta)``-DP implies
``P_D(S) <= e^epsilon P_D'(S) + delta``. With ``k_D`` of ``n`` releases from
``D`` and ``k_D'`` of ``n`` from ``D'`` in ``S``, one-sided Clopper–Pearson
bounds ``p_lo <= P_D(S)`` and ``q_hi >= P_D'(S)``, each at level ``alpha/2``,
hold together with probability ``>= 1 - alpha``, and then

``epsilon(delta) >= log((p_lo - delta) / q_hi)``  and
``delta(epsilon) >= p_lo - e^epsilon q_hi``.

Both are certified lower bounds at confidence ``1 - alpha`` **provided S was
chosen without looking at the certification samples**. The audit therefore
draws two disjoint sets of releases per dataset: a *selection* set on which it
builds a test statistic and chooses the event, and a *certification* set on
which it counts — one event, one pair, one direction, certified once (no
best-of-many).

**Choosing the event** (Neyman–Pearson): the most powerful test of ``P_D``
against ``P_D'`` thresholds the privacy loss ``L(x) = log p_D(x) - log
p_D'(x)``, so events are ``S = {s(x) > t}`` plus, at an atom of ``s``, the
releases with ``s(x) = t`` kept with probability ``gamma`` (randomised ties:
needed for discrete releases such as sparse-vector outputs). The statistic
``s`` is:

* ``"model"`` — the privacy loss of a *reference* :class:`~dpaudit.Mechanism`
  (the intended mechanism, declared as a numpyro model). Optimal when the
  implementation matches the model, and still a valid test when it does not
  (validity only needs ``s`` fixed before certification).
* ``"logistic"`` / ``"mlp"`` — model-free: a classifier trained to tell
  releases of ``D`` from releases of ``D'`` (logistic regression fitted with
  scipy's L-BFGS, or a small ReLU network trained with Adam in JAX), on
  features of the release: the flattened release (default), Karhunen–Loève
  coefficients of a functional release (:func:`kl_features`), or any
  callable. Its log-odds estimate ``L`` (this is DP-Sniper's idea). Half the
  selection set trains the classifier, the other half chooses the threshold.

Both directions are tried (``s`` for ``D -> D'``, ``-s`` for ``D' -> D``) and
each candidate event is scored on the selection set by the bound it would
certify with the certification sample size (Jeffreys-type plug-in counts, so
events never seen under the denominator dataset are not over-trusted). The
best (pair, direction, threshold, tie probability) is then certified.

**Verdicts.** ``"violation"`` when the certified ``epsilon`` lower bound at the
claimed ``delta`` exceeds the claimed ``epsilon`` (equivalently, the certified
``delta`` lower bound at the claimed ``epsilon`` exceeds the claimed
``delta``); otherwise ``"inconclusive"``: samples can refute a claim, never
prove it. A black-box audit never returns ``"pass"``.

**Floating point.** Releases computed in floating point are not exactly the
mathematical mechanism: ``0 + Z`` and ``1 + Z`` land on different sets of
doubles, and an event built from the low-order bits of the release separates
them perfectly (Mironov, CCS 2012). Such an event is a genuine violation of
the implementation, but not the question this audit asks: statistics are
rounded to multiples of :data:`STATISTIC_RESOLUTION` (``2^-30``) before
thresholding, so events are unions of level sets of a smooth statistic and
carry no information from the last bits of the release. Auditing
floating-point attacks needs a statistic built for them (e.g. pass
``features`` that extract the low-order bits).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.stats

from dpaudit.adjacency import check_adjacent
from dpaudit.checks import check_choice, check_count
from dpaudit.densities import combine_log_probs, site_log_prob
from dpaudit.mechanism import Claim, Mechanism

__all__ = [
    "METHODS",
    "BlackBoxResult",
    "CertifiedEvent",
    "as_sampler",
    "blackbox_audit",
    "certified_delta",
    "certified_epsilon",
    "clopper_pearson",
    "kl_features",
    "neighbour_candidates",
    "numpy_generator",
]

#: Ways of building the test statistic: the reference model's privacy loss, or a classifier.
METHODS = ("auto", "model", "logistic", "mlp")
#: What the event selection maximises: the epsilon bound at the claimed delta, or the delta
#: bound at the claimed epsilon.
OBJECTIVES = ("auto", "epsilon", "delta")
DIRECTIONS = ("D->D'", "D'->D")

_ELEMENTS_PER_CHUNK = 1 << 22
_MAX_CHUNK = 1 << 17
_TOP_RANKS = 400
_RANK_GROWTH = 1.03
_GAMMAS = (0.25, 0.5, 0.75)
_PLAN_ALPHA = 0.16
#: Releases scored per call of a reference model's log density.
_SCORE_CHUNK = 2048
#: Statistics are rounded to multiples of this before thresholding (see the module notes).
STATISTIC_RESOLUTION = 2.0**-30


# ----------------------------------------------------------------- exact binomial bounds


def clopper_pearson(k, n, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds ``(lower, upper)`` on a binomial proportion.

    ``P(p < lower) <= alpha`` and ``P(p > upper) <= alpha`` for ``k ~ Bin(n, p)``
    (exact, conservative): ``lower = Beta(alpha; k, n - k + 1)`` (0 when
    ``k = 0``) and ``upper = Beta(1 - alpha; k + 1, n - k)`` (1 when ``k = n``).
    Non-integer ``k`` (expected counts of randomised events) is accepted for
    planning; certified bounds use integer counts.

    Example:
        >>> lo, hi = clopper_pearson(0, 1000, 0.025)
        >>> float(lo), round(float(hi), 5)
        (0.0, 0.00368)
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("clopper_pearson needs 0 <= k <= n.")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, scipy.stats.beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1), 0.0)
        upper = np.where(
            k < n, scipy.stats.beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1e-300)), 1.0
        )
    return lower, upper


def certified_epsilon(k_p, n_p, k_q, n_q, *, delta: float = 0.0, confidence: float = 0.95):
    """Certified lower bound on ``epsilon(delta)`` from event counts under ``P`` and ``Q``.

    ``log((p_lo - delta) / q_hi)`` with one-sided Clopper–Pearson bounds at
    ``(1 - confidence) / 2`` each; ``0`` when ``p_lo <= delta`` (nothing
    certified). Holds with probability ``>= confidence`` when the event was
    fixed before the counts were drawn.

    Example:
        >>> round(float(certified_epsilon(5000, 10000, 1000, 10000)), 3)
        1.531
    """
    alpha = 1.0 - confidence
    p_lo, _ = clopper_pearson(k_p, n_p, alpha / 2)
    _, q_hi = clopper_pearson(k_q, n_q, alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(p_lo > delta, np.log(np.maximum(p_lo - delta, 1e-300)) - np.log(q_hi), 0.0)
    return np.maximum(eps, 0.0)


def certified_delta(k_p, n_p, k_q, n_q, *, epsilon: float, confidence: float = 0.95):
    """Certified lower bound on ``delta(epsilon) >= p_lo - e^epsilon q_hi`` (clipped at 0)."""
    alpha = 1.0 - confidence
    p_lo, _ = clopper_pearson(k_p, n_p, alpha / 2)
    _, q_hi = clopper_pearson(k_q, n_q, alpha / 2)
    return np.maximum(p_lo - math.exp(epsilon) * q_hi, 0.0)


# ----------------------------------------------------------------- samplers and features


def as_sampler(mechanism: Mechanism) -> Callable:
    """A plain sampler ``(data, n, key) -> releases`` drawing from ``mechanism``'s model.

    The audit sees only the samples: this is how a declared mechanism is audited
    *as a black box* (e.g. to compare with the white-box :func:`dpaudit.audit`).
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"as_sampler needs a dpaudit.Mechanism, got {type(mechanism).__name__}.")

    def sampler(data, n, key):
        return mechanism.sample(data, key, n)

    sampler.__name__ = mechanism.name
    return sampler


def numpy_generator(key) -> np.random.Generator:
    """A numpy ``Generator`` seeded from a JAX key, for samplers written in numpy.

    Example:
        >>> import jax
        >>> g = numpy_generator(jax.random.key(3))
        >>> g.laplace(size=2).shape
        (2,)
    """
    data = np.asarray(jax.random.key_data(key)).ravel().tolist()
    return np.random.default_rng(data)


def kl_features(basis, n_components: int | None = None, *, whiten: bool = True) -> Callable:
    """Features of grid releases: their Karhunen–Loève coefficients ``<x, phi_k>``.

    ``basis`` is a :class:`~dpaudit.spaces.KarhunenLoeveBasis` on the release
    grid. With ``whiten`` the coefficients are divided by ``sqrt(lambda_k)``, so
    that Gaussian-process or ICLP noise has unit-scale coordinates and a shift of
    the mean becomes a direction the classifier can find. Releases whose grid
    size differs from the basis raise ``ValueError`` at audit time.
    """
    k = basis.n_components if n_components is None else check_count("n_components", n_components)
    k = min(k, basis.n_components)
    phi = jnp.asarray(basis.eigenfunctions[:, :k] * basis.grid.weights[:, None])
    scale = jnp.sqrt(basis.eigenvalues[:k]) if whiten else jnp.ones(k)
    m = int(phi.shape[0])

    def features(x):
        x = jnp.reshape(x, (x.shape[0], -1))
        if x.shape[1] != m:
            raise ValueError(
                f"kl_features: releases have {x.shape[1]} values but the basis grid has {m} "
                "points; build the basis on the release grid."
            )
        return (x @ phi) / scale

    features.description = f"KL coefficients (K = {k}{', whitened' if whiten else ''})"
    return features


def neighbour_candidates(data, records, *, index: int = 0, adjacency: str = "replace-one"):
    """Candidate neighbouring pairs for ``pairs=``: ``data`` with record ``index`` changed.

    Replace-one: ``(data, data with record index := r)`` for each ``r`` in
    ``records`` (e.g. the corners or extreme curves of the data domain).
    Add/remove: also ``(data, data without record index)``. The black-box audit
    picks one of them on its selection samples and certifies only that one, so
    passing many candidates costs selection samples, never validity.

    Example:
        >>> import numpy as np
        >>> pairs = neighbour_candidates(np.zeros(3), [np.float64(1.0), np.float64(-1.0)])
        >>> [np.asarray(dp).tolist() for _, dp in pairs]
        [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]
    """
    from dpaudit.adjacency import adjacency_of

    relation = adjacency_of(adjacency)
    records = list(records)
    if not records and relation.name == "replace-one":
        raise ValueError("neighbour_candidates needs at least one replacement record.")
    pairs = [(data, relation.neighbour(data, index, r)) for r in records]
    if relation.name == "add-remove":
        pairs.append((data, relation.neighbour(data, index)))
    return pairs


def _identity_features(x):
    return jnp.reshape(x, (x.shape[0], -1))


_identity_features.description = "release values"


# ----------------------------------------------------------------- records


@dataclasses.dataclass(frozen=True)
class CertifiedEvent:
    """The event a black-box audit certified, and the counts behind the bound.

    Attributes:
        direction: ``"D->D'"`` (``P = P_D`` in the numerator) or ``"D'->D"``.
        pair: index of the neighbouring pair used (0 for a single pair).
        statistic: what was thresholded (``"privacy loss of <model>"``,
            ``"logistic log-odds on <features>"``...).
        threshold: ``t``; the event is ``{s > t}`` plus ``{s = t}`` kept with
            probability ``tie_probability``.
        tie_probability: ``gamma`` in ``[0, 1]``.
        counts: ``{"P": k, "Q": k}`` on the certification set (``n`` releases each).
        n: certification releases per dataset.
        p_lower, q_upper: the one-sided Clopper–Pearson bounds (``alpha / 2`` each).
        selection: the plug-in estimates on the selection set
            (``p_hat, q_hat, epsilon_hat, n``).
    """

    direction: str
    pair: int
    statistic: str
    threshold: float
    tie_probability: float
    counts: dict
    n: int
    p_lower: float
    q_upper: float
    selection: dict

    def to_dict(self) -> dict:
        return {
            "direction": self.direction,
            "pair": self.pair,
            "statistic": self.statistic,
            "threshold": _jf(self.threshold),
            "tie_probability": self.tie_probability,
            "counts": dict(self.counts),
            "n": self.n,
            "p_lower": self.p_lower,
            "q_upper": self.q_upper,
            "selection": {
                k: _jf(v) if isinstance(v, float) else v for k, v in self.selection.items()
            },
        }


@dataclasses.dataclass(frozen=True)
class BlackBoxResult:
    """The outcome of :func:`blackbox_audit` (frozen; ``to_dict`` is JSON-able).

    Shares the white-box :class:`~dpaudit.AuditResult`'s fields where they mean
    the same (``mechanism, claim, verdict, confidence, samples, seed,
    epsilon_lower, delta_at_claimed_epsilon, seconds, notes``), so reports and
    CI scripts read both kinds alike; ``kind`` is ``"black-box"``.

    Attributes:
        mechanism: the sampler's name.
        claim: the :class:`~dpaudit.Claim` audited.
        verdict: ``"violation"`` or ``"inconclusive"``.
        confidence: ``1 - alpha`` of the certified bounds.
        samples: certification releases per dataset.
        samples_select: selection releases per dataset (per pair).
        seed: the seed.
        method: ``"model"``, ``"logistic"`` or ``"mlp"``.
        epsilon_lower: certified lower bound on ``epsilon(delta_claim)``.
        delta_lower: certified lower bound on ``delta(epsilon_claim)``.
        event: the :class:`CertifiedEvent`.
        selection_scores / certification_scores: ``{"P": ..., "Q": ...}`` — a
            subsample (at most 20000) of the statistic's values in the certified
            direction, for plots.
        seconds: wall time; ``timings``: sampling / selection / certification.
        notes: sentences qualifying the verdict.
    """

    mechanism: str
    claim: Claim
    verdict: str
    confidence: float
    samples: int
    samples_select: int
    seed: int
    method: str
    epsilon_lower: float
    delta_lower: float
    event: CertifiedEvent
    selection_scores: dict
    certification_scores: dict
    seconds: float
    timings: dict
    notes: tuple[str, ...]
    kind: str = "black-box"

    @property
    def route(self) -> str:
        return f"black-box ({self.method})"

    @property
    def delta_at_claimed_epsilon(self) -> dict:
        return {"lower": self.delta_lower}

    def to_dict(self) -> dict:
        """A JSON-able dict in the shape of :meth:`dpaudit.AuditResult.to_dict` where it overlaps."""
        return {
            "kind": self.kind,
            "mechanism": self.mechanism,
            "claim": dataclasses.asdict(self.claim),
            "verdict": self.verdict,
            "confidence": self.confidence,
            "samples": self.samples,
            "samples_select": self.samples_select,
            "seed": self.seed,
            "route": self.route,
            "method": self.method,
            "epsilon_lower": _jf(self.epsilon_lower),
            "delta_at_claimed_epsilon": {"lower": _jf(self.delta_lower)},
            "event": self.event.to_dict(),
            "seconds": self.seconds,
            "timings": dict(self.timings),
            "notes": list(self.notes),
        }


def _jf(v):
    v = float(v)
    if math.isnan(v):
        return None
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


# ----------------------------------------------------------------- drawing releases


class _Source:
    """Draws releases of one dataset in fixed-size chunks (one sampler shape: no recompiles)."""

    def __init__(self, sampler, data, name: str, chunk: int | None):
        self.sampler = sampler
        self.data = data
        self.name = name
        self.chunk = chunk
        self.shape: tuple[int, ...] | None = None

    def _call(self, n: int, key) -> np.ndarray:
        try:
            x = self.sampler(self.data, n, key)
        except (ValueError, TypeError):
            raise
        except Exception as err:  # report, with the sampler's name, what went wrong
            raise ValueError(
                f"the sampler {self.name!r} failed on a request for {n} releases: "
                f"{type(err).__name__}: {err}"
            ) from err
        x = np.asarray(x)
        if x.dtype == bool:
            x = x.astype(np.float64)
        if not np.issubdtype(x.dtype, np.number):
            raise TypeError(
                f"the sampler {self.name!r} returned {x.dtype} values; return a numeric array of "
                "releases (booleans and integers are fine)."
            )
        if x.ndim == 0 or x.shape[0] != n:
            raise ValueError(
                f"the sampler {self.name!r} returned an array of shape {x.shape} when asked for "
                f"{n} releases; return shape (n, ...) with one release per row."
            )
        if self.shape is None:
            self.shape = tuple(x.shape[1:])
        elif tuple(x.shape[1:]) != self.shape:
            raise ValueError(
                f"the sampler {self.name!r} returned releases of shape {x.shape[1:]} after "
                f"{self.shape}; releases must keep one shape."
            )
        if np.isnan(x).any():
            raise ValueError(
                f"the sampler {self.name!r} returned NaN releases; fix the implementation (a "
                "NaN release is not a valid output)."
            )
        return x.astype(np.float64, copy=False)

    def chunk_size(self, key) -> int:
        if self.chunk is None:
            probe = self._call(2, key)
            width = int(np.prod(probe.shape[1:], dtype=np.int64)) or 1
            self.chunk = int(max(256, min(_MAX_CHUNK, _ELEMENTS_PER_CHUNK // width)))
        return self.chunk

    def draw(self, n: int, key, score=None, progress=None) -> np.ndarray:
        """``n`` releases (``score is None``) or their scores ``score(chunk)``, drawn in chunks."""
        chunk = min(self.chunk_size(jax.random.fold_in(key, 1 << 20)), n)
        n_chunks = -(-n // chunk)
        keys = jax.random.split(key, n_chunks)
        out = []
        for i in range(n_chunks):
            x = self._call(chunk, keys[i])
            out.append(np.asarray(x if score is None else score(x)))
            if progress is not None:
                progress.advance(progress.task_ids[0])
        return np.concatenate(out, axis=0)[:n]

    def tally(self, n: int, key, score, sign: float, threshold: float, keep: int, progress=None):
        """Stream ``n`` scores: ``#{sign*s > t}``, ``#{sign*s = t}`` and the first ``keep`` values.

        Certification needs only counts, so memory stays bounded whatever ``n`` is.
        """
        chunk = min(self.chunk_size(jax.random.fold_in(key, 1 << 20)), n)
        n_chunks = -(-n // chunk)
        keys = jax.random.split(key, n_chunks)
        above = ties = 0
        head = []
        for i in range(n_chunks):
            s = sign * np.asarray(score(self._call(chunk, keys[i])))[: n - i * chunk]
            above += int(np.count_nonzero(s > threshold))
            ties += int(np.count_nonzero(s == threshold))
            if i * chunk < keep:
                head.append(s[: keep - i * chunk])
            if progress is not None:
                progress.advance(progress.task_ids[0])
        return above, ties, np.concatenate(head) if head else np.zeros(0)


# ----------------------------------------------------------------- statistics


def _snap(s: np.ndarray) -> np.ndarray:
    """Round a statistic to multiples of :data:`STATISTIC_RESOLUTION` (infinities kept)."""
    s = np.asarray(s, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(
            np.isfinite(s), np.round(s / STATISTIC_RESOLUTION) * STATISTIC_RESOLUTION, s
        )


def _model_statistic(reference: Mechanism, data, data_prime):
    """``s(x) = log p_D(x) - log p_D'(x)`` of the reference model, jitted per chunk shape."""
    dist_p = reference.release_distribution(data)
    dist_q = reference.release_distribution(data_prime)
    event = tuple(dist_p.batch_shape + dist_p.event_shape)

    @jax.jit
    def loss(x):
        return combine_log_probs(site_log_prob(dist_p, x), site_log_prob(dist_q, x))

    def score(x):
        x = np.asarray(x)
        size = int(np.prod(x.shape[1:], dtype=np.int64))
        if size != int(np.prod(event, dtype=np.int64)):
            raise ValueError(
                f"the reference model {reference.name!r} releases shape {event} but the sampler "
                f"returns {x.shape[1:]}; give a reference of the same release, or use "
                "method='logistic'/'mlp'."
            )
        x = np.reshape(x, (x.shape[0], *event))
        # Sub-chunks bound the memory of heavy log densities (e.g. sparse-vector laws).
        s = np.concatenate(
            [
                np.asarray(loss(jnp.asarray(x[i : i + _SCORE_CHUNK])))
                for i in range(0, len(x), _SCORE_CHUNK)
            ]
        )
        # Outside both supports the reference says nothing: such releases get score 0.
        return _snap(np.where(np.isnan(s), 0.0, s))

    return score, f"privacy loss of the reference model {reference.name!r}"


def _standardize(z):
    mean = jnp.mean(z, axis=0)
    std = jnp.std(z, axis=0)
    return mean, jnp.where(std > 0, std, 1.0)


@jax.jit
def _logistic_value_and_grad(theta, zs, y, l2):
    """Penalised mean logistic loss and its gradient (data as arguments: compiled once per
    shape, never constant-folded into the program)."""

    def objective(theta):
        d = zs.shape[1]
        w, b = theta[:d], theta[d]
        logits = zs @ w + b
        nll = jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)
        return nll + 0.5 * l2 * jnp.sum(w**2)

    return jax.value_and_grad(objective)(theta)


def _logistic_fit(z_p, z_q, l2: float):
    """Logistic regression of ``label = [x from D]`` on standardised features (scipy L-BFGS)."""
    z = jnp.concatenate([z_p, z_q])
    y = jnp.concatenate([jnp.ones(z_p.shape[0]), jnp.zeros(z_q.shape[0])])
    mean, std = _standardize(z)
    zs = (z - mean) / std
    d = zs.shape[1]
    l2 = jnp.asarray(l2)

    def fun(theta):
        v, g = _logistic_value_and_grad(jnp.asarray(theta), zs, y, l2)
        return float(v), np.asarray(g, dtype=np.float64)

    res = scipy.optimize.minimize(fun, np.zeros(d + 1), jac=True, method="L-BFGS-B")
    theta = jnp.asarray(res.x)
    w, b = theta[:d], theta[d]
    return jax.jit(lambda z: ((z - mean) / std) @ w + b)


def _mlp_fit(z_p, z_q, key, hidden: Sequence[int], steps: int, batch: int, lr: float):
    """A ReLU network's log-odds of ``[x from D]``, trained with Adam on minibatches (jitted scan)."""
    from numpyro.optim import Adam

    z = jnp.concatenate([z_p, z_q])
    y = jnp.concatenate([jnp.ones(z_p.shape[0]), jnp.zeros(z_q.shape[0])])
    mean, std = _standardize(z)
    zs = (z - mean) / std
    sizes = [zs.shape[1], *hidden, 1]
    keys = jax.random.split(key, len(sizes))
    params = [
        (
            jax.random.normal(keys[i], (sizes[i], sizes[i + 1])) * jnp.sqrt(2.0 / sizes[i]),
            jnp.zeros(sizes[i + 1]),
        )
        for i in range(len(sizes) - 1)
    ]

    def net(params, z):
        for w, b in params[:-1]:
            z = jax.nn.relu(z @ w + b)
        w, b = params[-1]
        return (z @ w + b)[..., 0]

    def loss(params, zb, yb):
        logits = net(params, zb)
        return jnp.mean(jnp.logaddexp(0.0, logits) - yb * logits)

    optim = Adam(lr)
    n = zs.shape[0]
    batch = min(batch, n)

    @jax.jit
    def train(state, key, zs, y):  # data as arguments: never constant-folded
        def step(state, k):
            idx = jax.random.randint(k, (batch,), 0, n)
            params = optim.get_params(state)
            grads = jax.grad(loss)(params, zs[idx], y[idx])
            return optim.update(grads, state), None

        state, _ = jax.lax.scan(step, state, jax.random.split(key, steps))
        return state

    state = train(optim.init(params), keys[-1], zs, y)
    fitted = optim.get_params(state)
    return jax.jit(lambda z: net(fitted, (z - mean) / std))


# ----------------------------------------------------------------- event selection


@dataclasses.dataclass(frozen=True)
class _Candidate:
    objective: float
    pair: int
    direction: int
    threshold: float
    gamma: float
    p_hat: float
    q_hat: float


def _plan_bound(k_p, k_q, n_sel, n_cert, claim: Claim, objective: str, alpha: float, level, q_is):
    """The bound an event would certify with ``n_cert`` releases, from selection counts.

    ``level``: the selection estimates are one-sided Clopper–Pearson bounds at
    this level (pessimistic for the event), then projected to ``n_cert``.
    """
    p_tilde, _ = clopper_pearson(k_p, n_sel, level)
    _, q_tilde = clopper_pearson(k_q, n_sel, level)
    # A reference model's importance-sampling estimate replaces an upper bound that only
    # says "unseen in n_sel draws" (planning only; certification counts fresh draws).
    q_tilde = np.where(np.isnan(q_is), q_tilde, np.minimum(q_tilde, np.maximum(q_is, k_q / n_sel)))
    p_lo, _ = clopper_pearson(p_tilde * n_cert, n_cert, alpha / 2)
    _, q_hi = clopper_pearson(q_tilde * n_cert, n_cert, alpha / 2)
    if objective == "delta":
        return p_lo - math.exp(claim.epsilon) * q_hi
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            p_lo > claim.delta, np.log(np.maximum(p_lo - claim.delta, 1e-300)) - np.log(q_hi), -1.0
        )


def _candidates(s_p: np.ndarray, s_q: np.ndarray, loss: bool = False):
    """Thresholds ``t`` and tie probabilities ``gamma`` worth trying, with their counts.

    With ``loss`` (the statistic is the reference model's privacy loss
    ``u = log p_P / p_Q``), also the importance-sampling estimate of ``Q(event)``
    from the ``P`` draws, ``mean_P[1{event} e^-u]`` — exact in expectation when the
    implementation matches the model, and able to see events far rarer under
    ``Q`` than the selection set's size. Otherwise that column is NaN.

    Every distinct value among the top ``_TOP_RANKS`` ranks of ``s_p``, then
    geometrically spaced ranks; for each ``t`` the event ``{s > t} + gamma {s = t}``
    for ``gamma`` in ``{0, 1}`` (both directions of the tie) and, at atoms, a few
    fractions.
    """
    sp = np.sort(s_p)[::-1]
    n = sp.size
    ranks = list(range(min(n, _TOP_RANKS)))
    r = float(_TOP_RANKS)
    while r < n:
        ranks.append(int(r))
        r *= _RANK_GROWTH
    t = np.unique(sp[np.asarray(ranks, dtype=int)])
    sp_asc = np.sort(s_p)
    sq_asc = np.sort(np.asarray(s_q))

    def counts(sorted_s, t):
        gt = sorted_s.size - np.searchsorted(sorted_s, t, side="right")
        ge = sorted_s.size - np.searchsorted(sorted_s, t, side="left")
        return gt.astype(float), (ge - gt).astype(float)

    p_gt, p_eq = counts(sp_asc, t)
    q_gt, q_eq = counts(sq_asc, t)
    if loss:
        # suffix[i] = sum_{j >= i} e^{-u_j} over the sorted P draws (exponent clipped: the
        # events where it matters have u > 0).
        with np.errstate(over="ignore"):
            w = np.where(sp_asc > -50.0, np.exp(-np.maximum(sp_asc, -50.0)), 0.0)
        suffix = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])
        w_gt = suffix[np.searchsorted(sp_asc, t, side="right")] / n
        w_eq = suffix[np.searchsorted(sp_asc, t, side="left")] / n - w_gt
    else:
        w_gt = w_eq = np.full(t.shape, np.nan)
    rows = [
        (t, np.zeros_like(t), p_gt, q_gt, w_gt),
        (t, np.ones_like(t), p_gt + p_eq, q_gt + q_eq, w_gt + w_eq),
    ]
    atoms = (p_eq + q_eq) > 2
    if atoms.any():
        ta = t[atoms]
        for g in _GAMMAS:
            rows.append(
                (
                    ta,
                    np.full(ta.shape, g),
                    p_gt[atoms] + g * p_eq[atoms],
                    q_gt[atoms] + g * q_eq[atoms],
                    w_gt[atoms] + g * w_eq[atoms],
                )
            )
    return [np.concatenate(col) for col in zip(*rows, strict=True)]


def _trust_reference(table, n_sel):
    """Drop the importance-sampling column when the reference disagrees with the counts.

    Where ``Q`` was seen often enough (>= 30 selection releases in the event), the
    importance-sampling estimate must match the count within 4 standard errors plus
    10%; a reference that fails this somewhere is not the implementation's law, and
    its tail estimates are not trusted for planning (plain counts are used).
    """
    t, g, k_p, k_q, q_is = table
    seen = (k_q >= 30) & ~np.isnan(q_is)
    if seen.any():
        expected = q_is[seen] * n_sel
        if np.any(np.abs(expected - k_q[seen]) > 4.0 * np.sqrt(k_q[seen]) + 0.1 * k_q[seen]):
            q_is = np.full_like(q_is, np.nan)
    return t, g, k_p, k_q, q_is


def _select(scores, n_sel, n_cert, claim, objective, alpha, loss=False) -> _Candidate:
    """The best (pair, direction, threshold, gamma) on the selection scores.

    Candidates are ranked by the bound they would certify, computed from
    pessimistic selection estimates at level ``_PLAN_ALPHA / N`` over all ``N``
    candidates (Bonferroni): the maximum of ``N`` noisy tail estimates would
    otherwise favour a rare event that happened to look extreme in selection.
    This only affects power; validity rests on the certification set alone.
    """
    tables = []
    for pair, (s_d, s_dp) in enumerate(scores):
        for direction, (s_p, s_q) in enumerate(((s_d, s_dp), (-s_dp, -s_d))):
            tables.append((pair, direction, _candidates(s_p, s_q, loss)))
    level = _PLAN_ALPHA / sum(table[0].size for _, _, table in tables)
    tables = [
        (pair, direction, _trust_reference(table, n_sel)) for pair, direction, table in tables
    ]
    best = None
    for pair, direction, (t, g, k_p, k_q, q_is) in tables:
        obj = np.asarray(_plan_bound(k_p, k_q, n_sel, n_cert, claim, objective, alpha, level, q_is))
        i = int(np.argmax(obj))
        cand = _Candidate(
            float(obj[i]),
            pair,
            direction,
            float(t[i]),
            float(g[i]),
            float(k_p[i] / n_sel),
            float(k_q[i] / n_sel),
        )
        if best is None or cand.objective > best.objective:
            best = cand
    return best


# ----------------------------------------------------------------- the audit


def _check_same_shape(src, name: str) -> None:
    if src[0].shape != src[1].shape:
        raise ValueError(
            f"the sampler {name!r} returns releases of shape {src[0].shape} for D but "
            f"{src[1].shape} for D'; neighbouring datasets must give releases of one shape "
            "(pad or fix the implementation)."
        )


def _check_claim(claim) -> Claim:
    if isinstance(claim, Claim):
        return claim
    if isinstance(claim, tuple) and len(claim) == 2:
        return Claim(epsilon=claim[0], delta=claim[1])
    raise TypeError(
        f"claim must be a dpaudit.Claim or an (epsilon, delta) tuple, got {type(claim).__name__}."
    )


def _progress(total: int, progress, label: str):
    show = progress if progress is not None else (total >= 50 and sys.stderr.isatty())
    if not show:
        return None
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn(f"[bold]black-box audit[/bold] {label}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} chunks"),
        TimeRemainingColumn(),
        transient=True,
    )
    bar.add_task(label, total=total)
    bar.start()
    return bar


def blackbox_audit(
    sampler: Callable,
    data=None,
    data_prime=None,
    claim: Claim | tuple | None = None,
    *,
    pairs: Sequence[tuple[Any, Any]] | None = None,
    reference: Mechanism | None = None,
    method: str = "auto",
    features: Callable | None = None,
    samples: int = 1_000_000,
    select_samples: int | None = None,
    confidence: float = 0.95,
    objective: str = "auto",
    seed: int = 0,
    check_adjacency: bool = True,
    chunk_size: int | None = None,
    classifier_options: dict | None = None,
    name: str | None = None,
    progress: bool | None = None,
) -> BlackBoxResult:
    """Audit an implementation's claim from its samples alone.

    Args:
        sampler: ``sampler(data, n, key) -> releases`` of shape ``(n, ...)`` (a
            JAX key; numpy code can use :func:`numpy_generator`). Releases are
            vectors or curves on a grid; booleans and integers are fine.
        data, data_prime: a neighbouring pair; or give ``pairs`` instead.
        claim: the :class:`~dpaudit.Claim` (or ``(epsilon, delta)``).
        pairs: several candidate pairs (e.g. from :func:`neighbour_candidates`:
            the black-box neighbour search); the selection set picks one, which
            alone is certified.
        reference: a :class:`~dpaudit.Mechanism` modelling the *intended*
            mechanism; its privacy loss is the test statistic (``method="model"``).
        method: ``"auto"`` (``"model"`` with a reference, else ``"logistic"``),
            ``"model"``, ``"logistic"`` or ``"mlp"``.
        features: for classifiers, ``features(releases (n, ...)) -> (n, p)``;
            default the flattened release; :func:`kl_features` for curves.
        samples: certification releases per dataset.
        select_samples: selection releases per dataset and pair (default
            ``max(10000, samples // 10)``).
        confidence: ``1 - alpha`` of the certified bounds.
        objective: choose the event maximising the ``"epsilon"`` bound at the
            claimed delta (tightness), or the ``"delta"`` bound at the claimed
            epsilon (the margin of a violation); ``"auto"``: ``"delta"`` for an
            approximate claim, ``"epsilon"`` for a pure one.
        seed: everything is reproducible from it.
        check_adjacency: check each pair is adjacent under the claim's adjacency.
        chunk_size: releases per sampler call (default from the release size).
        classifier_options: ``l2`` (logistic, default 1e-4); ``hidden`` (default
            ``(32, 16)``), ``steps`` (2000), ``batch`` (1024), ``learning_rate``
            (1e-2) for ``"mlp"``.
        name: the implementation's name in reports (default the sampler's name).
        progress: show a progress bar (default: on a terminal, for long runs).

    Returns:
        A :class:`BlackBoxResult`.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    start = time.perf_counter()
    if not callable(sampler):
        raise TypeError(
            f"sampler must be a callable (data, n, key) -> releases, got {type(sampler).__name__}."
        )
    if claim is None:
        raise ValueError("claim is required: pass dpaudit.Claim(epsilon=..., delta=...).")
    claim = _check_claim(claim)
    if pairs is None:
        if data is None or data_prime is None:
            raise ValueError("give a neighbouring pair (data, data_prime) or pairs=[(D, D'), ...].")
        pairs = [(data, data_prime)]
    else:
        if data is not None or data_prime is not None:
            raise ValueError("give either (data, data_prime) or pairs, not both.")
        pairs = list(pairs)
        if not pairs or not all(isinstance(p, tuple | list) and len(p) == 2 for p in pairs):
            raise ValueError("pairs must be a non-empty list of (D, D') tuples.")
    method = check_choice("method", method, METHODS)
    objective = check_choice("objective", objective, OBJECTIVES)
    if objective == "auto":  # detection margin for approximate claims, tightness for pure ones
        objective = "delta" if claim.delta > 0 else "epsilon"
    if method == "auto":
        method = "model" if reference is not None else "logistic"
    if method == "model" and reference is None:
        raise ValueError(
            "method='model' needs reference=<a dpaudit.Mechanism of the intended mechanism>."
        )
    if reference is not None and not isinstance(reference, Mechanism):
        raise TypeError(f"reference must be a dpaudit.Mechanism, got {type(reference).__name__}.")
    if features is not None and not callable(features):
        raise TypeError("features must be a callable releases (n, ...) -> features (n, p).")
    samples = check_count("samples", samples)
    select = max(10_000, samples // 10) if select_samples is None else select_samples
    select = check_count("select_samples", select)
    if method in ("logistic", "mlp") and select < 4:
        raise ValueError("select_samples must be >= 4 to train and threshold a classifier.")
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
    if chunk_size is not None:
        chunk_size = check_count("chunk_size", chunk_size)
    opts = {"l2": 1e-4, "hidden": (32, 16), "steps": 2000, "batch": 1024, "learning_rate": 1e-2}
    unknown = set(classifier_options or {}) - set(opts)
    if unknown:
        raise ValueError(f"unknown classifier_options {sorted(unknown)}; known: {sorted(opts)}.")
    opts.update(classifier_options or {})
    if check_adjacency:
        for d, dp in pairs:
            check_adjacent(d, dp, claim.adjacency)
    alpha = 1.0 - float(confidence)
    name = name or getattr(sampler, "__name__", type(sampler).__name__)
    root = jax.random.key(seed)
    timings = {"selection": 0.0, "certification": 0.0}
    feats = features or _identity_features
    feat_name = getattr(feats, "description", getattr(feats, "__name__", "custom features"))

    # ---- selection: build the statistic and choose the event, per pair.
    t0 = time.perf_counter()
    sources = [
        (_Source(sampler, d, name, chunk_size), _Source(sampler, dp, name, chunk_size))
        for d, dp in pairs
    ]
    chunk = sources[0][0].chunk_size(jax.random.fold_in(root, 1 << 21))
    for src in sources:
        src[0].chunk = src[1].chunk = chunk
    total = 2 * len(pairs) * -(-select // min(chunk, select)) + 2 * -(
        -samples // min(chunk, samples)
    )
    bar = _progress(total, progress, name)
    try:
        statistics, sel_scores = [], []
        for i, ((d, dp), src) in enumerate(zip(pairs, sources, strict=True)):
            keys = jax.random.split(jax.random.fold_in(root, 2 * i), 3)
            if method == "model":
                score, stat_name = _model_statistic(reference, d, dp)
                s_d = src[0].draw(select, keys[0], score, bar)
                s_dp = src[1].draw(select, keys[1], score, bar)
                _check_same_shape(src, name)
            else:
                # Features are computed chunk by chunk: raw releases are never all in memory.
                def featurize(x):
                    return np.asarray(feats(jnp.asarray(x)))

                z_d = jnp.asarray(src[0].draw(select, keys[0], featurize, bar))
                z_dp = jnp.asarray(src[1].draw(select, keys[1], featurize, bar))
                _check_same_shape(src, name)
                half = select // 2
                if method == "logistic":
                    fitted = _logistic_fit(z_d[:half], z_dp[:half], float(opts["l2"]))
                else:
                    fitted = _mlp_fit(
                        z_d[:half],
                        z_dp[:half],
                        keys[2],
                        tuple(opts["hidden"]),
                        int(opts["steps"]),
                        int(opts["batch"]),
                        float(opts["learning_rate"]),
                    )
                stat_name = f"{method} log-odds on {feat_name}"

                def score(x, fitted=fitted):
                    return _snap(np.asarray(fitted(jnp.asarray(feats(jnp.asarray(x))))))

                s_d = _snap(np.asarray(fitted(z_d[half:])))
                s_dp = _snap(np.asarray(fitted(z_dp[half:])))
            statistics.append((score, stat_name))
            sel_scores.append((s_d, s_dp))
        n_sel = sel_scores[0][0].size
        best = _select(sel_scores, n_sel, samples, claim, objective, alpha, method == "model")
        timings["selection"] = time.perf_counter() - t0

        # ---- certification: fresh releases of the chosen pair, one event, counted once.
        t0 = time.perf_counter()
        score, stat_name = statistics[best.pair]
        src = sources[best.pair]
        keys = jax.random.split(jax.random.fold_in(root, 1_000_003), 3)
        sign = 1.0 if best.direction == 0 else -1.0
        # Direction D->D': P = P_D, statistic s; D'->D: P = P_D', statistic -s.
        src_p, src_q = (src[0], src[1]) if sign > 0 else (src[1], src[0])
        key_p, key_q = (keys[0], keys[1]) if sign > 0 else (keys[1], keys[0])
        keep = min(20_000, samples)
        p_above, p_ties, s_p = src_p.tally(samples, key_p, score, sign, best.threshold, keep, bar)
        q_above, q_ties, s_q = src_q.tally(samples, key_q, score, sign, best.threshold, keep, bar)
    finally:
        if bar is not None:
            bar.stop()
    rng = numpy_generator(keys[2])
    k_p = p_above + (int(rng.binomial(p_ties, best.gamma)) if p_ties else 0)
    k_q = q_above + (int(rng.binomial(q_ties, best.gamma)) if q_ties else 0)
    timings["certification"] = time.perf_counter() - t0
    p_lo, _ = clopper_pearson(k_p, samples, alpha / 2)
    _, q_hi = clopper_pearson(k_q, samples, alpha / 2)
    eps_lo = float(
        certified_epsilon(k_p, samples, k_q, samples, delta=claim.delta, confidence=confidence)
    )
    delta_lo = float(
        certified_delta(k_p, samples, k_q, samples, epsilon=claim.epsilon, confidence=confidence)
    )
    violated = eps_lo > claim.epsilon
    verdict = "violation" if violated else "inconclusive"
    eps_hat = (
        math.log(best.p_hat - claim.delta) - math.log(best.q_hat)
        if best.p_hat > claim.delta and best.q_hat > 0
        else (math.inf if best.p_hat > claim.delta else 0.0)
    )
    event = CertifiedEvent(
        direction=DIRECTIONS[best.direction],
        pair=best.pair,
        statistic=stat_name if sign > 0 else f"minus the {stat_name}",
        threshold=best.threshold,
        tie_probability=best.gamma,
        counts={"P": k_p, "Q": k_q},
        n=samples,
        p_lower=float(p_lo),
        q_upper=float(q_hi),
        selection={
            "p_hat": best.p_hat,
            "q_hat": best.q_hat,
            "epsilon_hat": eps_hat,
            "n": int(n_sel),
            "pairs": len(pairs),
        },
    )
    notes = []
    if objective == "delta" and claim.delta > 0:
        notes.append(
            "The event was chosen for the delta margin at the claimed epsilon (objective "
            "'delta'); pass objective='epsilon' for the tightest epsilon lower bound."
        )
    if violated:
        notes.append(
            f"Certified at confidence {confidence:g}: epsilon({claim.delta:g}) >= {eps_lo:.4g} > "
            f"claimed {claim.epsilon:g} (event chosen on {n_sel} selection releases per "
            f"dataset, counted on {samples} fresh ones)."
        )
    else:
        notes.append(
            "No violation found: a black-box audit can refute a claim from samples but never "
            f"prove it; the certified lower bound {eps_lo:.4g} does not exceed the claimed "
            f"epsilon {claim.epsilon:g}."
        )
    sub_sel = min(20_000, sel_scores[best.pair][0].size)
    sel_p, sel_q = (
        sel_scores[best.pair]
        if best.direction == 0
        else (
            -sel_scores[best.pair][1],
            -sel_scores[best.pair][0],
        )
    )
    return BlackBoxResult(
        mechanism=name,
        claim=claim,
        verdict=verdict,
        confidence=float(confidence),
        samples=samples,
        samples_select=int(select),
        seed=int(seed),
        method=method,
        epsilon_lower=eps_lo,
        delta_lower=delta_lo,
        event=event,
        selection_scores={"P": sel_p[:sub_sel], "Q": sel_q[:sub_sel]},
        certification_scores={"P": s_p, "Q": s_q},
        seconds=time.perf_counter() - start,
        timings=timings,
        notes=tuple(notes),
    )
