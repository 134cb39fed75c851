r"""The StatDP / DP-Sniper benchmark mechanisms as *plain samplers*, and their exact laws.

Black-box testers are compared on a fixed set of small mechanisms (claimed
``epsilon = 0.1``, queries of sensitivity 1). This module writes each of them
the way an implementer would — numpy code drawing releases, nothing dpaudit
can read — from the papers' definitions:

* StatDP: Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer, *Detecting
  Violations of Differential Privacy*, CCS 2018, Sec. 6 (Algs. 1-10).
* DP-Sniper: B. Bichsel, S. Steffen, I. Bogunovic, M. Vechev, *DP-Sniper:
  Black-Box Discovery of Differential Privacy Violations using
  Classifiers*, IEEE S&P 2021, Sec. VI and Table II.
* Sparse vector: M. Lyu, D. Su, N. Li, *Understanding the Sparse Vector
  Technique for Differential Privacy*, PVLDB 10(6), 2017, Algs. 1-6.

The mechanisms act on a vector of query answers ``a`` (neighbours: ``|a_i -
a'_i| <= 1`` for every ``i``, StatDP's ``ALL_DIFFER``; or one coordinate
only, ``ONE_DIFFER``):

=====================  ===============================================  =================
function               release                                          true epsilon
=====================  ===============================================  =================
laplace_mechanism      ``a + Lap(1/eps)`` (one query)                   ``eps``
noisy_hist             ``a + Lap(1/eps)`` per bin (NoisyHist1)          ``eps``
noisy_hist(scale=eps)  ``a + Lap(eps)`` per bin (NoisyHist2, a bug)     ``1/eps``
report_noisy_max       ``argmax_i (a_i + Lap(2/eps))`` (RNM1)           ``<= eps``
... release="value"    ``max_i (a_i + Lap(2/eps))`` (RNM3, a bug)       ``k eps / 2``
... noise="exponential" ``Exp(2/eps)`` noise (RNM2 index / RNM4 value)  ``<= eps`` / ``inf``
sparse_vector alg=1    Lyu Alg. 1 (correct SVT)                         ``eps``
sparse_vector alg=4    Lyu Alg. 4 (Lee & Clifton)                       ``(1 + 6c) eps / 4``
sparse_vector alg=5    Lyu Alg. 5 (no query noise, no cutoff)           ``inf``
sparse_vector alg=6    Lyu Alg. 6 (no cutoff)                           ``inf`` (streams)
=====================  ===============================================  =================

**True epsilon of report-noisy-max returning the value** (RNM3, Laplace
noise of scale ``b = 2/eps`` on ``k`` queries). The release ``v = max_i (a_i
+ Z_i)`` has density ``g_a(v) = sum_i f(v - a_i) prod_{j != i} F(v - a_j)``.
Both ``log f`` and ``log F`` are ``1/b``-Lipschitz (``f/F = 1/b`` left of 0
and ``< 1/b`` right of it), so moving every ``a_j`` by at most 1 changes each
of the ``k`` factors of each term by at most ``e^{1/b}``: ``g_a / g_a' <=
e^{k/b}``. For ``a' = a + 1`` and ``v < min_i a_i`` every factor sits on the
left branch and the ratio is exactly ``e^{k/b}``. Hence ``epsilon = k/b = k
eps / 2`` (``0.25`` for ``k = 5``, ``eps = 0.1``), attained on ``{v < min
a}``, which has probability ``2^-k`` when the ``a_i`` are equal. With
exponential noise (RNM4) the release under ``a + 1`` is ``>= max a + 1``
while under ``a`` it falls below that with probability ``(1 -
e^{-1/b})^k > 0``: no finite epsilon.

**Data.** dpaudit audits datasets, so each query vector is encoded as a
dataset (and a tool's input pair as a neighbouring pair of datasets) that a
catalogue model can read too, for the model-guided statistic:

* sparse vector / report noisy max: two records of ``k`` yes/no answers,
  query ``i`` = number of yeses (:func:`counting_records`,
  :func:`counting_pair`: replace-one neighbours move every count by at most
  one, in either direction — Lyu et al.'s setting, StatDP's ``ALL_DIFFER``);
* noisy histograms: categorical records, the answers are the bin counts
  (:func:`histogram_records`; add/remove-one neighbours, ``ONE_DIFFER``);
* Laplace: one record in ``[0, 1]``, the query is its value (the catalogue's
  ``laplace-mean`` with ``n = 1``).

Reference models (:func:`reference_model`) are catalogue models with the same
law as each sampler; for the sparse vector the catalogue's exact pattern law
is tabulated over the finite output space (:class:`PatternTable`), so the
model-guided statistic costs one table look-up per release.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro.distributions import Distribution, constraints

import dpaudit
import mechanisms  # noqa: F401  (fills the catalogue)
from dpaudit.blackbox import numpy_generator
from mechanisms.classic import NoisyArgmax, log_laplace_cdf

__all__ = [
    "EPSILON",
    "SVT_ALGORITHMS",
    "NoisyMaxValue",
    "PatternTable",
    "column_counts",
    "counting_pair",
    "counting_records",
    "histogram_counts",
    "histogram_pair",
    "histogram_records",
    "laplace_mechanism",
    "noisy_hist",
    "one_hot",
    "reference_model",
    "report_noisy_max",
    "sampler",
    "sparse_vector",
    "statdp_patterns",
    "svt_parameters",
]

#: The claimed epsilon of every benchmark mechanism (StatDP and DP-Sniper use 0.1).
EPSILON = 0.1
#: Lyu et al.'s sparse-vector variants implemented here.
SVT_ALGORITHMS = (1, 4, 5, 6)


def _check_epsilon(epsilon) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float | np.floating):
        raise TypeError(f"epsilon must be a number, got {type(epsilon).__name__}.")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    return float(epsilon)


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n (the number of releases) must be a positive integer, got {n!r}.")
    return int(n)


def _answers(a, what: str) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 1 or a.size < 1:
        raise ValueError(f"{what} must be a non-empty 1-D vector of query answers, got {a.shape}.")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contain NaN or infinite values.")
    return a


# ---------------------------------------------------------------- data encodings


def counting_records(answers) -> np.ndarray:
    """Two records of yes/no answers whose column counts are ``answers`` (each in {0, 1, 2}).

    Example:
        >>> counting_records([2, 1, 0])
        array([[1., 1., 0.],
               [1., 0., 0.]])
    """
    a = _answers(answers, "answers")
    if not np.all(np.isin(a, (0.0, 1.0, 2.0))):
        raise ValueError("two yes/no records encode counts in {0, 1, 2} only.")
    first = np.minimum(a, 1.0)
    return np.stack([first, a - first])


def counting_pair(answers, answers_prime) -> tuple[np.ndarray, np.ndarray]:
    """Replace-one neighbours ``(D, D')`` of two records with column counts ``a`` and ``a'``.

    The second record is shared; the first differs. Every ``|a_i - a'_i| <= 1``
    (StatDP's ``ALL_DIFFER`` neighbours of sensitivity-1 queries).

    Raises:
        ValueError: if the answers are not in {0, 1, 2} or differ by more than 1.
    """
    a = _answers(answers, "answers")
    b = _answers(answers_prime, "answers_prime")
    if a.shape != b.shape:
        raise ValueError(f"the two answer vectors differ in length: {a.shape} and {b.shape}.")
    if not (np.all(np.isin(a, (0.0, 1.0, 2.0))) and np.all(np.isin(b, (0.0, 1.0, 2.0)))):
        raise ValueError("two yes/no records encode counts in {0, 1, 2} only.")
    change = b - a
    if np.any(np.abs(change) > 1):
        raise ValueError("neighbouring answers differ by at most 1 per query (sensitivity 1).")
    # The changing record holds 1 where the count falls, 0 where it rises.
    first = np.where(change < 0, 1.0, np.where(change > 0, 0.0, np.minimum(a, 1.0)))
    shared = a - first
    return np.stack([first, shared]), np.stack([first + change, shared])


def column_counts(data) -> np.ndarray:
    """The counting queries of yes/no records ``(n, k)``: the number of yeses per column.

    Raises:
        ValueError: unless ``data`` is a 2-D array of 0/1 answers.
    """
    x = np.asarray(data, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"records must be a 2-D (n, k) array of yes/no answers, got {x.shape}.")
    if not np.all(np.isin(x, (0.0, 1.0))):
        raise ValueError("records must be 0/1 answers, one per query.")
    return x.sum(axis=0)


def histogram_records(counts) -> np.ndarray:
    """Categorical records (bin indices) whose histogram is ``counts``.

    Example:
        >>> histogram_records([1, 0, 2])
        array([0, 2, 2])
    """
    c = _answers(counts, "counts")
    if np.any(c < 0) or np.any(c != np.round(c)):
        raise ValueError("histogram counts must be non-negative integers.")
    return np.repeat(np.arange(c.size), c.astype(np.int64))


def histogram_pair(counts, counts_prime) -> tuple[np.ndarray, np.ndarray]:
    """Add/remove-one neighbours whose histograms are ``counts`` and ``counts_prime``.

    Raises:
        ValueError: unless the histograms differ by one in exactly one bin.
    """
    a, b = _answers(counts, "counts"), _answers(counts_prime, "counts_prime")
    if a.shape != b.shape or np.sum(np.abs(a - b)) != 1:
        raise ValueError("add/remove neighbours' histograms differ by one in exactly one bin.")
    return histogram_records(a), histogram_records(b)


def histogram_counts(data, n_bins: int) -> np.ndarray:
    """Counts of the categories ``0 .. n_bins - 1`` of 1-D categorical records.

    Raises:
        ValueError: if a record is not an integer category in range.
    """
    x = np.asarray(data, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"categorical records must be a 1-D array, got shape {x.shape}.")
    if np.any(x != np.round(x)) or np.any((x < 0) | (x >= n_bins)):
        raise ValueError(f"records must be integer categories in [0, {n_bins - 1}].")
    return np.bincount(x.astype(np.int64), minlength=n_bins).astype(np.float64)


def statdp_patterns(k: int, *, componentwise: bool) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """StatDP's input patterns for ``k`` queries: ``[(name, a, a'), ...]``.

    The base input is ``a = (1, ..., 1)``; ``a'`` moves one query ("one above":
    ``a'_1 = 0``, "one below": ``a'_1 = 2``) or, ``componentwise``, every query
    ("one above rest below", "one below rest above", "half half", "all above",
    "all below"), plus the "X shape" ``(1^h 0^{k-h})`` vs ``(0^h 1^{k-h})``
    (Ding et al. 2018, Sec. 5.1; DP-Sniper's ``PatternGenerator``). The tools also
    try each pair swapped; dpaudit tries both directions of every pair, so
    swaps are not listed.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k (number of queries) must be a positive integer, got {k!r}.")
    ones = np.ones(k)
    h = k // 2

    def vec(first, rest):
        return np.array([first] + [rest] * (k - 1), dtype=float)

    out = [("one above", ones, vec(0, 1)), ("one below", ones, vec(2, 1))]
    if componentwise:
        out += [
            ("one above rest below", ones, vec(2, 0)),
            ("one below rest above", ones, vec(0, 2)),
            ("half half", ones, np.array([2.0] * h + [0.0] * (k - h))),
            ("all above", ones, np.full(k, 2.0)),
            ("all below", ones, np.zeros(k)),
            (
                "X shape",
                np.array([1.0] * h + [0.0] * (k - h)),
                np.array([0.0] * h + [1.0] * (k - h)),
            ),
        ]
    return out


# ---------------------------------------------------------------- the mechanisms (numpy)


def laplace_mechanism(answer, n: int, rng: np.random.Generator, *, epsilon: float = EPSILON):
    """``a + Lap(1/epsilon)``, ``n`` times: the Laplace mechanism (Dwork & Roth 2014, Thm 3.6).

    StatDP's ``laplace_mechanism`` and DP-Sniper's ``LaplaceMechanism``
    (identity query on one number, inputs 1 vs 0 and 1 vs 2).

    Returns:
        ``(n,)`` releases.
    """
    a = _answers(np.atleast_1d(answer), "answer")
    if a.size != 1:
        raise ValueError(f"the Laplace mechanism answers one query, got {a.size}.")
    return a[0] + rng.laplace(scale=1.0 / _check_epsilon(epsilon), size=_check_n(n))


def noisy_hist(
    answers, n: int, rng: np.random.Generator, *, epsilon: float = EPSILON, scale=None
) -> np.ndarray:
    """Noisy histogram ``a + Lap(scale)`` per bin; ``scale = 1/epsilon`` is correct.

    NoisyHist1 (Ding et al. 2018, Alg. 9) uses ``1/epsilon``; NoisyHist2 (Alg.
    10) uses ``epsilon`` by mistake, so its true epsilon is ``1/epsilon`` (10 at
    the claimed 0.1). Neighbours change one bin by one.

    Returns:
        ``(n, k)`` releases.
    """
    a = _answers(answers, "answers")
    epsilon = _check_epsilon(epsilon)
    scale = 1.0 / epsilon if scale is None else _check_epsilon(scale)
    return a + rng.laplace(scale=scale, size=(_check_n(n), a.size))


def report_noisy_max(
    answers,
    n: int,
    rng: np.random.Generator,
    *,
    epsilon: float = EPSILON,
    noise: str = "laplace",
    release: str = "index",
) -> np.ndarray:
    """Report noisy max: ``argmax_i`` (or ``max_i``) of ``a_i + Z_i``, ``Z_i ~ Lap(2/eps)`` or ``Exp(2/eps)``.

    Ding et al. 2018, Algs. 5-8 (DP-Sniper's ReportNoisyMax1-4): index with
    Laplace noise (RNM1, ``epsilon``-DP), index with exponential noise (RNM2,
    ``epsilon``-DP), and the buggy variants returning the maximum *value*
    (RNM3 Laplace: true epsilon ``k epsilon / 2``; RNM4 exponential: not DP).

    Returns:
        ``(n,)`` releases (indices as floats, or values).
    """
    a = _answers(answers, "answers")
    scale = 2.0 / _check_epsilon(epsilon)
    size = (_check_n(n), a.size)
    if noise == "laplace":
        z = rng.laplace(scale=scale, size=size)
    elif noise == "exponential":
        z = rng.exponential(scale=scale, size=size)
    else:
        raise ValueError(f"noise must be 'laplace' or 'exponential', got {noise!r}.")
    noisy = a + z
    if release == "index":
        return np.argmax(noisy, axis=1).astype(np.float64)
    if release == "value":
        return np.max(noisy, axis=1)
    raise ValueError(f"release must be 'index' or 'value', got {release!r}.")


def svt_parameters(algorithm: int, epsilon: float = EPSILON, cutoff: int = 1) -> dict:
    """Noise scales and cutoff of Lyu et al.'s Alg. 1, 4, 5, 6 (queries of sensitivity 1).

    ========  =========================  =====================  ========
    Alg.      threshold noise ``rho``    query noise ``nu_i``   cutoff
    ========  =========================  =====================  ========
    1         ``Lap(2/eps)``             ``Lap(4c/eps)``        ``c``
    4         ``Lap(4/eps)``             ``Lap(4/(3 eps))``     ``c``
    5         ``Lap(2/eps)``             none                   none
    6         ``Lap(2/eps)``             ``Lap(2/eps)``         none
    ========  =========================  =====================  ========

    Returns:
        ``{"threshold_scale", "query_scale", "cutoff"}`` (``cutoff`` ``None`` for no cutoff).
    """
    epsilon = _check_epsilon(epsilon)
    if isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1:
        raise ValueError(f"cutoff must be a positive integer, got {cutoff!r}.")
    if algorithm == 1:
        return {
            "threshold_scale": 2 / epsilon,
            "query_scale": 4 * cutoff / epsilon,
            "cutoff": cutoff,
        }
    if algorithm == 4:
        return {"threshold_scale": 4 / epsilon, "query_scale": 4 / (3 * epsilon), "cutoff": cutoff}
    if algorithm == 5:
        return {"threshold_scale": 2 / epsilon, "query_scale": 0.0, "cutoff": None}
    if algorithm == 6:
        return {"threshold_scale": 2 / epsilon, "query_scale": 2 / epsilon, "cutoff": None}
    raise ValueError(f"algorithm must be one of {SVT_ALGORITHMS} (Lyu et al.), got {algorithm!r}.")


def sparse_vector(
    answers,
    n: int,
    rng: np.random.Generator,
    *,
    algorithm: int,
    threshold: float = 1.0,
    epsilon: float = EPSILON,
    cutoff: int = 1,
) -> np.ndarray:
    r"""The sparse vector technique, Lyu, Su & Li (2017) Alg. 1, 4, 5 or 6 (:func:`svt_parameters`).

    One threshold noise ``rho`` per run; query ``i`` answers ``1`` when ``a_i +
    nu_i >= T + rho`` and ``0`` otherwise; after ``cutoff`` positives the run
    stops and the remaining answers are ``-1`` (DP-Sniper's encoding; Alg. 5 and
    6 never stop). DP-Sniper runs ``c = 1`` and ``T = 1`` (``T = 0.5`` for Alg.
    1) on 10 queries.

    Returns:
        ``(n, k)`` codes in ``{-1, 0, 1}`` as floats.
    """
    a = _answers(answers, "answers")
    p = svt_parameters(algorithm, epsilon, cutoff)
    n = _check_n(n)
    rho = rng.laplace(scale=p["threshold_scale"], size=(n, 1))
    noisy = (
        a if p["query_scale"] == 0.0 else a + rng.laplace(scale=p["query_scale"], size=(n, a.size))
    )
    positive = noisy >= threshold + rho
    if p["cutoff"] is None:
        return positive.astype(np.float64)
    before = np.cumsum(positive, axis=1) - positive  # positives strictly before query i
    return np.where(before < p["cutoff"], positive.astype(np.float64), -1.0)


def sampler(mechanism: Callable, summary: Callable, name: str, **params) -> Callable:
    """``sampler(data, n, key) -> releases``: ``mechanism(summary(data), n, rng, **params)``.

    The black-box interface of :func:`dpaudit.blackbox_audit`: the JAX key seeds
    a numpy ``Generator`` (:func:`dpaudit.blackbox.numpy_generator`); nothing
    of the mechanism is visible to the audit but its releases.
    """
    if not callable(mechanism) or not callable(summary):
        raise TypeError("sampler needs a callable mechanism and a callable summary.")

    def draw(data, n, key):
        return mechanism(summary(data), n, numpy_generator(key), **params)

    draw.__name__ = name
    draw.__qualname__ = name
    return draw


# ---------------------------------------------------------------- exact laws


class NoisyMaxValue(Distribution):
    r"""``max_i (u_i + b Z_i)`` with i.i.d. Laplace or exponential ``Z`` (report-noisy-max's value).

    CDF ``G(v) = prod_i F((v - u_i)/b)`` and density
    ``g(v) = sum_i f(v - u_i) prod_{j != i} F(v - u_j)`` (``f, F`` of ``b Z``),
    evaluated in log space. For Laplace noise this is the catalogue's
    ``NoisyMaxWithValue`` law (``faulty/noisy-max-with-value``) summed over the
    index.
    """

    arg_constraints = {}
    support = constraints.real
    pytree_data_fields = ("loc", "scale")
    pytree_aux_fields = ("noise",)

    def __init__(self, loc, scale, noise: str = "laplace", *, validate_args=None):
        if noise not in ("laplace", "exponential"):
            raise ValueError(f"noise must be 'laplace' or 'exponential', got {noise!r}.")
        loc = jnp.asarray(loc, dtype=jnp.float64)
        if loc.ndim != 1 or loc.shape[0] < 1:
            raise ValueError(f"NoisyMaxValue loc must be a non-empty 1-D array, got {loc.shape}.")
        if not (math.isfinite(float(scale)) and float(scale) > 0):
            raise ValueError(f"NoisyMaxValue scale must be finite and > 0, got {scale!r}.")
        self.loc, self.scale, self.noise = loc, float(scale), noise
        super().__init__(batch_shape=(), event_shape=(), validate_args=validate_args)

    def _log_terms(self, value):
        t = (jnp.asarray(value, dtype=jnp.float64)[..., None] - self.loc) / self.scale
        if self.noise == "laplace":
            log_f = -jnp.abs(t) - math.log(2.0 * self.scale)
            log_cdf = log_laplace_cdf(t)
        else:
            pos = t > 0
            log_f = jnp.where(t >= 0, -t - math.log(self.scale), -jnp.inf)
            log_cdf = jnp.where(pos, jnp.log(-jnp.expm1(-jnp.where(pos, t, 1.0))), -jnp.inf)
        return log_f, log_cdf

    def log_cdf(self, value):
        """``log G(v) = sum_i log F((v - u_i)/b)``."""
        return jnp.sum(self._log_terms(value)[1], axis=-1)

    def cdf(self, value):
        return jnp.exp(self.log_cdf(value))

    def log_prob(self, value):
        log_f, log_cdf = self._log_terms(value)
        if self.noise == "laplace":  # log F is finite: g = G sum_i f_i / F_i, O(k)
            return jnp.sum(log_cdf, axis=-1) + jax.nn.logsumexp(log_f - log_cdf, axis=-1)
        k = self.loc.shape[0]
        chosen = jnp.eye(k, dtype=bool)  # term i takes f at i and F elsewhere
        terms = jnp.sum(jnp.where(chosen, log_f[..., None, :], log_cdf[..., None, :]), axis=-1)
        return jax.nn.logsumexp(terms, axis=-1)

    def sample(self, key, sample_shape=()):
        shape = (*sample_shape, self.loc.shape[0])
        if self.noise == "laplace":
            z = jax.random.laplace(key, shape)
        else:
            z = jax.random.exponential(key, shape)
        return jnp.max(self.loc + self.scale * z, axis=-1)


class PatternTable(Distribution):
    r"""A law on ``{-1, 0, 1}^k`` given by a table of log-probabilities.

    Pattern ``x`` sits at index ``sum_i (x_i + 1) 3^i``; ``log_prob`` is a
    look-up (``-inf`` off the table's support and for non-code values).
    :func:`reference_model` fills it with the catalogue's exact sparse-vector
    law so that the model-guided statistic costs one look-up per release.
    """

    arg_constraints = {}
    support = constraints.real_vector
    pytree_data_fields = ("log_table",)
    pytree_aux_fields = ("k",)

    def __init__(self, log_table, k: int, *, validate_args=None):
        self.k = int(k)
        self.log_table = jnp.asarray(log_table, dtype=jnp.float64)
        if self.log_table.shape != (3**self.k,):
            raise ValueError(
                f"log_table must have 3^k = {3**self.k} entries, got {self.log_table.shape}."
            )
        super().__init__(batch_shape=(), event_shape=(self.k,), validate_args=validate_args)

    @staticmethod
    def encode(codes) -> jax.Array:
        """Table index of each pattern (last axis) of codes in ``{-1, 0, 1}``."""
        codes = jnp.asarray(codes)
        digits = jnp.clip(jnp.round(codes) + 1, 0, 2).astype(jnp.int64)
        return jnp.sum(digits * 3 ** jnp.arange(codes.shape[-1], dtype=jnp.int64), axis=-1)

    @staticmethod
    def decode(index, k: int) -> jax.Array:
        """Inverse of :meth:`encode`: ``(..., k)`` codes of table indices."""
        index = jnp.asarray(index, dtype=jnp.int64)[..., None]
        return (index // 3 ** jnp.arange(k, dtype=jnp.int64) % 3 - 1).astype(jnp.float64)

    def log_prob(self, value):
        value = jnp.asarray(value, dtype=jnp.float64)
        is_code = jnp.all((value == -1.0) | (value == 0.0) | (value == 1.0), axis=-1)
        return jnp.where(is_code, self.log_table[self.encode(value)], -jnp.inf)

    def sample(self, key, sample_shape=()):
        index = jax.random.categorical(key, self.log_table, shape=sample_shape)
        return self.decode(index, self.k)


def _svt_patterns(k: int, cutoff: int | None) -> np.ndarray:
    """Every output of a ``k``-query sparse vector run (``cutoff`` 1 or none)."""
    if cutoff is None:
        return np.array(list(itertools.product((0.0, 1.0), repeat=k)))
    if cutoff != 1:
        raise ValueError("tabulated sparse-vector laws are implemented for cutoff 1 or none.")
    rows = [[0.0] * j + [1.0] + [-1.0] * (k - j - 1) for j in range(k)]
    return np.array([*rows, [0.0] * k])


def _linf(h):
    return jnp.max(jnp.abs(h), axis=-1)


def one_hot(values) -> Callable:
    """Classifier features: indicators ``[x_i == value]`` for every coordinate and value.

    For discrete releases (sparse-vector codes, report-noisy-max indices) a
    linear classifier on indicators can give each code its own weight
    (DP-Sniper's ``FlagsFeatureTransformer`` does this for the abort flag).
    """
    values = jnp.asarray(values, dtype=jnp.float64)

    def features(x):
        x = jnp.reshape(jnp.asarray(x, dtype=jnp.float64), (x.shape[0], -1))
        return jnp.reshape(x[:, :, None] == values, (x.shape[0], -1)).astype(jnp.float64)

    features.description = f"one-hot codes {[float(v) for v in values]}"
    return features


def reference_model(name: str, *, epsilon: float = EPSILON, k: int | None = None, **params):
    """A :class:`dpaudit.Mechanism` with the same law as sampler ``name``, from the catalogue.

    ``name`` and the catalogue entry used:

    * ``"laplace"`` — ``laplace-mean`` with ``n = 1``, records in ``[0, 1]``
      (scale ``1/epsilon``).
    * ``"noisy-hist"`` (``scale``) — ``faulty/histogram-scale-epsilon`` built
      with ``epsilon = scale``: its law is ``Lap(counts, scale)``, the law of
      NoisyHist1 at ``scale = 1/epsilon`` and of NoisyHist2 at ``scale = epsilon``.
    * ``"report-noisy-max"`` (``noise``, ``release``) — the catalogue's exact
      :class:`~mechanisms.classic.NoisyArgmax` law for indices, the
      :class:`NoisyMaxValue` law for values, on the column counts of two records.
    * ``"sparse-vector"`` (``algorithm``, ``threshold``, ``cutoff``) — ``svt``
      (Alg. 1) or ``faulty/svt-lyu-alg{4,5,6}`` with ``n = 2``, tabulated over all
      outputs (:class:`PatternTable`).

    Raises:
        ValueError: for an unknown name or parameters that do not fit.
    """
    epsilon = _check_epsilon(epsilon)
    if name == "laplace":
        return dpaudit.build("laplace-mean", epsilon=epsilon, n=1, low=0.0, high=1.0, dim=1)
    if name == "noisy-hist":
        scale = params.pop("scale", 1.0 / epsilon)
        return dpaudit.build(
            "faulty/histogram-scale-epsilon", epsilon=scale, n_bins=k or 5, **params
        )
    if name == "report-noisy-max":
        return _noisy_max_reference(epsilon, k or 5, **params)
    if name == "sparse-vector":
        return _svt_reference(epsilon, k or 10, **params)
    raise ValueError(
        f"no reference model named {name!r}; known: 'laplace', 'noisy-hist', "
        "'report-noisy-max', 'sparse-vector'."
    )


def _noisy_max_reference(epsilon: float, k: int, noise: str = "laplace", release: str = "index"):
    scale = 2.0 / epsilon

    def summary(data):
        x = jnp.asarray(data, dtype=jnp.float64)
        if x.ndim != 2 or x.shape[1] != k:
            raise ValueError(f"report-noisy-max records must have shape (n, {k}), got {x.shape}.")
        return jnp.sum(x, axis=0)

    def model(data):
        u = summary(data)
        law = NoisyArgmax(u, scale, noise) if release == "index" else NoisyMaxValue(u, scale, noise)
        numpyro.sample("release", law)

    if release not in ("index", "value"):
        raise ValueError(f"release must be 'index' or 'value', got {release!r}.")
    return dpaudit.Mechanism(
        name=f"report-noisy-max-{noise}-{release}",
        model=model,
        claim=dpaudit.Claim(
            epsilon=epsilon,
            sensitivity_norm="linf",
            sensitivity=1.0,
            reference="Ding et al. 2018, Algs. 5-8; Dwork & Roth 2014, Claim 3.9",
        ),
        summary=summary,
        difference_norm=_linf,
        params={"epsilon": epsilon, "k": k, "scale": scale, "noise": noise, "release": release},
        description=f"The {release} of the largest of {k} counts plus {noise} noise of scale 2/eps.",
    )


_SVT_CATALOGUE = {
    1: "svt",
    4: "faulty/svt-lyu-alg4",
    5: "faulty/svt-lyu-alg5",
    6: "faulty/svt-lyu-alg6",
}


def _svt_reference(epsilon: float, k: int, algorithm: int = 1, threshold: float = 1.0, cutoff=1):
    p = svt_parameters(algorithm, epsilon, cutoff)
    options = {} if p["cutoff"] is None else {"cutoff": p["cutoff"]}
    exact = dpaudit.build(
        _SVT_CATALOGUE[algorithm],
        epsilon=epsilon,
        n=2,
        thresholds=(float(threshold),) * k,
        **options,
    )
    if exact.params["threshold_scale"] != p["threshold_scale"] or not math.isclose(
        exact.params["query_scale"], p["query_scale"]
    ):
        raise ValueError(
            f"the catalogue's {exact.name!r} does not have Lyu et al.'s Alg. {algorithm} scales."
        )
    patterns = jnp.asarray(_svt_patterns(k, p["cutoff"]))
    index = PatternTable.encode(patterns)

    @jax.jit
    def log_table(data):  # compiled once per reference; the catalogue model's exact law
        with numpyro.handlers.block():  # the catalogue model's own site stays inside
            law = exact.release_distribution(data)
        return jnp.full(3**k, -jnp.inf).at[index].set(law.log_prob(patterns))

    tables: dict[tuple, jax.Array] = {}  # the law depends on the data through the counts only

    def model(data):
        counts = tuple(np.asarray(exact.summary(data)).tolist())
        if counts not in tables:
            tables[counts] = log_table(jnp.asarray(data, dtype=jnp.float64))
        numpyro.sample("release", PatternTable(tables[counts], k))

    return dataclasses.replace(exact, model=model, name=f"{exact.name} (tabulated)")
