r"""The sparse vector technique's laws: the whole run, and its threshold noise marginalised.

* :class:`SparseVector` — the output of an SVT run on fixed queries as *one*
  distribution (Lyu, Su & Li 2017, Alg. 1-6 as options); its ``log_prob``
  integrates the threshold noise out by quadrature, its ``certified_log_prob``
  brackets the same integral in closed form (:mod:`dpaudit.accounting.suprema`).
* :class:`ThresholdNoise` and :class:`NoisyComparison` — the same run written as a
  *program*: the threshold noise ``rho`` is a latent sample site
  (``infer={"dpaudit": "latent"}``) and each answer is its own release site,
  ``NoisyComparison(q_i - T_i, rho, query_scale, active)``, whose arguments may
  depend on earlier answers (adaptive queries, the cutoff). ``ThresholdNoise``
  provides the *marginal density* of the answers that depend on it,
  ``marginal_log_prob`` — the protocol by which :mod:`dpaudit.model.sites`
  marginalises a continuous latent site (docs/whole-trace.md) — together with a
  certified bound on its quadrature error and a closed-form bracket for exact
  accounting.

Given ``rho`` the answers are independent, so the answers' law is
``int p_rho(r) prod_i g_i(r) dr`` with ``g_i`` the Laplace CDF or survival
function of the query noise at ``r - (q_i - T_i)`` (an indicator without query
noise): a product of piecewise exponentials in ``r``.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax import lax
from numpyro.distributions import Distribution, constraints

from dpaudit.accounting.suprema import (
    ExpFactor,
    finite_sup_loss,
    log_bracket,
    piecewise_exponential_integral,
)
from dpaudit.core.checks import check_positive

__all__ = [
    "NoisyComparison",
    "SparseVector",
    "ThresholdNoise",
    "interval_roundoff",
    "log_laplace_cdf",
    "log_trapezoid",
    "quadrature_roundoff",
    "richardson",
]


def log_laplace_cdf(x):
    """``log F(x)`` of the standard (scale-1) Laplace law, stable in both tails.

    Args:
        x: points (array-like).

    Returns:
        ``log F(x)`` elementwise.
    """
    return jnp.where(x < 0, x - math.log(2.0), jnp.log1p(-0.5 * jnp.exp(-jnp.abs(x))))


def log_trapezoid(log_f, step):
    """``log int f`` by the trapezoid rule on the last axis, computed relative to the row max.

    Args:
        log_f: ``(..., G)`` log values of the integrand on an even grid.
        step: the grid spacing.

    Returns:
        ``(...)`` the log of the trapezoid sums.
    """
    top = jnp.max(log_f, axis=-1, keepdims=True)
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    f = jnp.exp(log_f - top)
    total = jnp.sum(f, axis=-1) - 0.5 * (f[..., 0] + f[..., -1])
    return jnp.log(total * step) + top[..., 0]


def richardson(integral, n_grid: int):
    """Richardson extrapolation of an ``O(h^2)`` rule over grids of ``n`` and ``(n+1)/2`` points.

    Args:
        integral: ``n -> value`` of the rule on ``n`` grid points.
        n_grid: the finer grid's number of points (odd, so the coarse grid nests in it).

    Returns:
        ``(4 I(n) - I((n+1)/2)) / 3``.
    """
    return (4.0 * integral(n_grid) - integral((n_grid + 1) // 2)) / 3.0


@partial(
    jax.jit, static_argnames=("sample_shape", "cutoff", "resample", "release_values")
)  # fmt: skip
def _sparse_vector_runs(
    key, queries, thresholds, threshold_scale, query_scale, *, sample_shape, cutoff, resample,
    release_values,
):  # fmt: skip
    # One compiled program per shape and form, the scales arguments: run eagerly, the
    # vmapped scan was traced and compiled anew on every draw (the model's trace draws a
    # release each time an audit reads the release law).
    keys = jax.random.split(key, math.prod(sample_shape) or 1)
    one = partial(
        _sparse_vector_run,
        queries=queries,
        thresholds=thresholds,
        threshold_scale=threshold_scale,
        query_scale=query_scale,
        cutoff=cutoff,
        resample=resample,
        release_values=release_values,
    )
    draws = jax.vmap(one)(keys)
    return draws.reshape(sample_shape + draws.shape[1:])


def _sparse_vector_run(
    key, *, queries, thresholds, threshold_scale, query_scale, cutoff, resample, release_values
):
    """One SVT run: the codes (and, with ``release_values``, the positives' noisy answers)."""
    k = queries.shape[0]
    k_rho, k_nu = jax.random.split(key)
    rho = threshold_scale * jax.random.laplace(k_rho, (k + 1,))
    nu = query_scale * jax.random.laplace(k_nu, (k,))
    cutoff = k + 1 if cutoff is None else cutoff

    def step(state, inputs):
        count, current = state
        q, t, noise, fresh = inputs
        answered = count < cutoff
        positive = answered & (q + noise >= t + current)
        code = jnp.where(answered, positive.astype(jnp.float64), -1.0)
        value = jnp.where(positive, q + noise, 0.0)
        current = jnp.where(positive & resample, fresh, current)
        return (count + positive, current), (code, value)

    _, (codes, values) = lax.scan(step, (0, rho[0]), (queries, thresholds, nu, rho[1:]))
    return jnp.stack([codes, values]) if release_values else codes


class SparseVector(Distribution):
    r"""Output of a sparse-vector-technique run on fixed queries (Lyu, Su & Li 2017).

    A threshold noise ``rho ~ Lap(threshold_scale)`` is drawn; query ``i``
    answers positive (``1``) when ``q_i + nu_i >= T_i + rho`` with
    ``nu_i ~ Lap(query_scale)`` (no noise when ``query_scale == 0``), negative
    (``0``) otherwise; after ``cutoff`` positives the run stops and the rest are
    ``-1`` (no cutoff when ``None``). With ``resample`` a new ``rho`` is drawn
    after every positive (Dwork & Roth, Lyu Alg. 2). With ``release_values``
    the release is ``(2, k)``: the codes and, for positives, the noisy answer
    ``q_i + nu_i`` (Lyu Alg. 3; 0 elsewhere).

    **Law.** Given ``rho`` the answers are independent, so the probability of a
    pattern is, for each stretch between redraws of ``rho``,

    .. math::  \int p_\rho(r) \prod_{i\ \text{neg}} F_\nu(T_i + r - q_i)
               \prod_{i\ \text{pos}} \big(1 - F_\nu(T_i + r - q_i)\big)\,dr ,

    with a positive released value ``v_i`` contributing the density
    ``f_\nu(v_i - q_i)`` and the constraint ``r <= v_i - T_i``. Without query
    noise the integral is ``F_rho(min_pos (q_i - T_i)) - F_rho(max_neg (q_i - T_i))``
    exactly; otherwise it is evaluated by the trapezoid rule with Richardson
    extrapolation (absolute error about ``1e-3`` in probability: below it on the tested
    patterns, 1.3e-3 seen on one other; certificates use :meth:`log_prob_error`, not this
    figure). ``log_prob`` is
    ``-inf`` for patterns the algorithm cannot produce.
    """

    arg_constraints = {}
    support = constraints.real_vector
    pytree_data_fields = ("queries", "thresholds", "threshold_scale", "query_scale")
    # ``noisy_queries`` (``query_scale > 0``) picks the density's form; the scales themselves
    # are data, so every SVT law of one shape and form is one compiled program
    pytree_aux_fields = (
        "cutoff", "resample", "release_values", "n_grid", "margin", "noisy_queries"
    )  # fmt: skip

    def __init__(
        self,
        queries,
        thresholds,
        threshold_scale,
        query_scale,
        *,
        cutoff: int | None = 1,
        resample: bool = False,
        release_values: bool = False,
        n_grid: int = 2049,
        margin: float = 40.0,
        validate_args=None,
    ):
        queries = jnp.asarray(queries, dtype=jnp.float64)
        if queries.ndim != 1 or queries.shape[0] < 1:
            raise ValueError(f"queries must be a non-empty 1-D array, got {queries.shape}.")
        thresholds = jnp.broadcast_to(jnp.asarray(thresholds, dtype=jnp.float64), queries.shape)
        check_positive("SparseVector threshold_scale", threshold_scale)
        if not (math.isfinite(float(query_scale)) and float(query_scale) >= 0):
            raise ValueError(f"query_scale must be finite and >= 0, got {query_scale!r}.")
        if cutoff is not None and (int(cutoff) < 1):
            raise ValueError(f"cutoff must be a positive integer or None, got {cutoff!r}.")
        if release_values and (resample or float(query_scale) == 0):
            raise ValueError("release_values needs query noise and a single threshold noise.")
        self.queries, self.thresholds = queries, thresholds
        self.threshold_scale = float(threshold_scale)
        self.query_scale = float(query_scale)
        self.noisy_queries = self.query_scale > 0.0
        self.cutoff = None if cutoff is None else int(cutoff)
        self.resample, self.release_values = bool(resample), bool(release_values)
        self.n_grid, self.margin = int(n_grid), float(margin)
        k = queries.shape[0]
        event = (2, k) if release_values else (k,)
        super().__init__(batch_shape=(), event_shape=event, validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        """Draws of the SparseVector release.

        Args:
            key, sample_shape: as :meth:`numpyro.distributions.Distribution.sample`.
        """
        return _sparse_vector_runs(
            key,
            self.queries,
            self.thresholds,
            self.threshold_scale,
            self.query_scale,
            sample_shape=tuple(sample_shape),
            cutoff=self.cutoff,
            resample=self.resample,
            release_values=self.release_values,
        )

    def log_prob(self, value):
        """Log density (mass) of SparseVector releases.

        Args:
            value: releases, with any leading shape.
        """
        value = jnp.asarray(value, dtype=jnp.float64)
        batch = value.shape[: value.ndim - len(self.event_shape)]
        flat = value.reshape((-1, *self.event_shape))
        return jax.vmap(self._log_prob_one)(flat).reshape(batch)

    def _log_prob_one(self, value):
        codes = value[0] if self.release_values else value
        k = codes.shape[0]
        positive, negative = codes == 1.0, codes == 0.0
        before = jnp.cumsum(positive) - positive  # positives strictly before i
        cutoff = k + 1 if self.cutoff is None else self.cutoff
        answered = before < cutoff
        valid = jnp.all(jnp.where(answered, positive | negative, codes == -1.0))
        n_segments = (min(cutoff, k) + 1) if self.resample else 1
        segment = jnp.minimum(before, n_segments - 1) if self.resample else jnp.zeros(k, int)
        member = (segment[None, :] == jnp.arange(n_segments)[:, None]) & answered[None, :]
        c = self.queries - self.thresholds  # positive iff nu >= rho - c
        if not self.noisy_queries:
            lo = jnp.max(jnp.where(member & negative, c, -jnp.inf), axis=1)
            hi = jnp.min(jnp.where(member & positive, c, jnp.inf), axis=1)
            total = jnp.sum(
                jnp.where(jnp.any(member, axis=1), _log_interval(lo, hi, self.threshold_scale), 0.0)
            )
            return jnp.where(valid, total, -jnp.inf)
        b_rho, b_nu = self.threshold_scale, self.query_scale
        width = self.margin * jnp.maximum(b_rho, b_nu)
        lo = jnp.minimum(jnp.min(c), 0.0) - width
        hi = jnp.maximum(jnp.max(c), 0.0) + width
        extra = 0.0
        if self.release_values:
            values = value[1]
            r_max = jnp.min(jnp.where(positive & answered, values - self.thresholds, jnp.inf))
            hi = jnp.minimum(hi, r_max)
            lo = jnp.minimum(lo, hi - width)
            extra = jnp.sum(
                jnp.where(
                    positive & answered,
                    -jnp.abs(values - self.queries) / b_nu - jnp.log(2 * b_nu),
                    0.0,
                )
            )

        def integral(n_grid):
            r = jnp.linspace(lo, hi, n_grid)
            t = (r[None, :] - c[:, None]) / b_nu  # (k, G): negative iff nu < r - c
            log_neg = log_laplace_cdf(t)
            log_pos = 0.0 if self.release_values else log_laplace_cdf(-t)
            log_g = jnp.where(
                negative[:, None], log_neg, jnp.where(positive[:, None], log_pos, 0.0)
            )
            log_rho = -jnp.abs(r) / b_rho - jnp.log(2 * b_rho)
            per_segment = log_rho + jnp.sum(jnp.where(member[:, :, None], log_g[None], 0.0), axis=1)
            used = jnp.any(member, axis=1)
            return jnp.sum(
                jnp.where(used, log_trapezoid(per_segment, (hi - lo) / (n_grid - 1)), 0.0)
            )

        total = richardson(integral, self.n_grid) + extra
        return jnp.where(valid, total, -jnp.inf)

    @property
    def density_work_elements(self) -> int:
        """Float64 values :meth:`log_prob` holds per release (docs/memory.md), declared.

        With query noise each stretch of the run integrates over a grid: ``(k, n_grid)``
        tables of the queries' CDF terms for the fine grid and the half-size coarse one.
        XLA's buffers for one release of the compiled density measure 1.3-1.6 x
        ``segments x k x n_grid`` values (k = 3 and 8, one and two stretches); the figure
        declared is 2 x that, so :func:`dpaudit.whitebox.plan.density_batch_size` bounds the
        memory from above. Without query noise the law is closed form: ``8 k`` values.
        """
        k = int(self.queries.shape[0])
        if not self.noisy_queries:
            return 8 * k
        cutoff = k + 1 if self.cutoff is None else self.cutoff
        segments = (min(cutoff, k) + 1) if self.resample else 1
        return 2 * segments * k * self.n_grid

    def patterns(self) -> np.ndarray:
        """Every pattern of codes the run can output (``1``, ``0``, then ``-1`` after the cutoff).

        Returns:
            A ``(n_patterns, k)`` float array (``n_patterns <= 2^k``).
        """
        k = self.queries.shape[0]
        cutoff = k + 1 if self.cutoff is None else self.cutoff
        rows = [[]]
        for _ in range(k):
            grown = []
            for row in rows:
                if sum(c == 1.0 for c in row) >= cutoff:
                    grown.append([*row, -1.0])
                else:
                    grown += [[*row, 0.0], [*row, 1.0]]
            rows = grown
        return np.array(rows, dtype=float)

    def certified_log_prob(self, codes) -> tuple[float, float]:
        r"""``[lower, upper]`` bounds on ``log P(codes)`` with no quadrature error.

        Each stretch of queries sharing one threshold noise contributes ``int p_rho(r)
        prod_neg F_nu(r - c_i) prod_pos (1 - F_nu(r - c_i)) dr`` (``c_i = q_i - T_i``;
        without query noise the factors are the indicators of ``r > c_i`` and ``r <=
        c_i``), a product of piecewise exponentials integrated in closed form with
        certified round-off (:func:`dpaudit.accounting.suprema.piecewise_exponential_integral`). With
        released values a positive contributes the indicator of ``r <= v_i - T_i`` and the
        density ``f_nu(v_i - q_i)``.

        Args:
            codes: one release: a pattern (a row of :meth:`patterns`), or ``(2, k)`` codes
                and values when the run releases values.

        Returns:
            ``(lower, upper)``; ``(-inf, -inf)`` for a pattern of mass 0.
        """
        # host arrays: the gaps and thresholds read without a JAX program per operation
        thresholds = np.asarray(self.thresholds, dtype=float)
        c = np.asarray(self.queries, dtype=float) - thresholds
        value = np.asarray(codes, dtype=float)
        codes = value[0] if self.release_values else value
        segment = np.cumsum(codes == 1.0) - (codes == 1.0) if self.resample else 0 * codes
        lower = upper = 0.0
        for s in np.unique(segment[codes >= 0]):
            factors = [ExpFactor.laplace_density(0.0, self.threshold_scale)]
            for i in np.flatnonzero((segment == s) & (codes >= 0)):
                positive = codes[i] == 1.0
                if self.release_values and positive:  # rho <= v_i - T_i, nu_i = v_i - q_i
                    edge = float(value[1, i] - thresholds[i])
                    factors.append(ExpFactor.indicator(edge, below=True))
                elif self.query_scale == 0.0:
                    factors.append(ExpFactor.indicator(c[i], below=bool(positive)))
                elif positive:
                    factors.append(ExpFactor.laplace_survival(c[i], self.query_scale))
                else:
                    factors.append(ExpFactor.laplace_cdf(c[i], self.query_scale))
            bracket = piecewise_exponential_integral(factors)
            if bracket is None:
                raise OverflowError
            lo, hi = log_bracket(bracket[0], min(bracket[1], 1.0))
            lower, upper = lower + lo, upper + hi
        eps = np.finfo(float).eps
        if self.release_values:  # the released values' densities f_nu(v_i - q_i), closed form
            noise = np.abs(value[1] - np.asarray(self.queries))[codes == 1.0]
            extra = -math.fsum(noise) / self.query_scale - noise.size * math.log(
                2 * self.query_scale
            )
            slack = 8 * eps * (noise.size + 2) * (math.fsum(noise) / self.query_scale + abs(extra))
            lower, upper = lower + extra - slack, upper + extra + slack
        # one rounding per added segment, outwards
        n = len(np.unique(segment)) + 1
        if math.isfinite(lower):
            lower = lower - n * eps * abs(lower)
        if math.isfinite(upper):
            upper = upper + n * eps * abs(upper)
        return lower, upper

    def log_prob_error(self, value) -> float:
        """A certified bound on ``|log_prob(value) - log P(value)|`` (the quadrature's error).

        The truth lies in :meth:`certified_log_prob`'s bracket, so the distance from the
        quadrature value to the far end of the bracket bounds the error of that value;
        :func:`quadrature_roundoff` is added twice, so the bound also holds for
        ``log_prob`` evaluated any other way (eagerly, or fused into an audit's compiled
        program: each within it of exact arithmetic). The quadrature is one compiled
        program per shape and form, the law's parameters its arguments.

        Args:
            value: one release (the event shape).

        Returns:
            The bound; ``inf`` when the pattern is too long to bracket (> 12 queries).
        """
        if self.queries.shape[0] > _MAX_SVT_QUERIES:
            return math.inf
        value = np.asarray(value, dtype=float)
        computed = float(_jitted_log_prob(self, value))
        try:
            lower, upper = self.certified_log_prob(value)
        except OverflowError:
            return math.inf
        if computed == -math.inf and upper == -math.inf:
            return 0.0  # an impossible release, exactly
        roundoff = self._roundoff(value, lower)
        return _charged(max(abs(computed - lower), abs(upper - computed)), roundoff)

    def _roundoff(self, value, lower: float) -> float:
        """The round-off of :meth:`log_prob` at one release (``lower``: its certified bound)."""
        thresholds = np.asarray(self.thresholds, dtype=float)
        gaps = np.asarray(self.queries, dtype=float) - thresholds
        k = gaps.shape[0]
        n_segments = min(k + 1 if self.cutoff is None else self.cutoff, k) + 1
        if not self.noisy_queries:
            return interval_roundoff(gaps, self.threshold_scale, lower, n_segments)
        reach, extra = 0.0, 0.0
        if self.release_values:  # the released values move the interval's top end
            positive = value[0] == 1.0
            reach = float(np.max(np.abs(value[1] - thresholds), initial=0.0))
            noise = np.abs(value[1] - np.asarray(self.queries, dtype=float))[positive]
            extra = math.fsum(noise / self.query_scale + abs(math.log(2 * self.query_scale)))
        return quadrature_roundoff(
            gaps,
            self.threshold_scale,
            self.query_scale,
            margin=self.margin,
            n_grid=self.n_grid,
            n_segments=n_segments if self.resample else 1,
            reach=reach,
            extra=extra,
        )

    def exact_sup_loss(self, other):
        """The supremum of the privacy loss against another SVT run, over every pattern.

        The patterns are enumerated (at most ``2^12``; more declines), their masses
        bracketed by :meth:`certified_log_prob`. Runs that release noisy values are
        continuous and decline.

        Args:
            other: the release law of the neighbouring dataset.

        Returns:
            A :class:`dpaudit.accounting.suprema.ExactSupLoss` (method ``"declared"``), or ``None``.
        """
        same = type(other) is type(self) and other.queries.shape == self.queries.shape
        same = same and all(
            getattr(self, name) == getattr(other, name)
            for name in ("threshold_scale", "query_scale", "cutoff", "resample")
        )
        if not same or self.release_values or other.release_values:
            return None
        if self.queries.shape[0] > _MAX_SVT_QUERIES:
            return None
        patterns = self.patterns()
        try:
            log_p = [self.certified_log_prob(row) for row in patterns]
            log_q = [other.certified_log_prob(row) for row in patterns]
        except OverflowError:
            return None
        return finite_sup_loss(np.array(log_p), np.array(log_q))


_EPS = float(np.finfo(float).eps)


def quadrature_roundoff(
    gaps, threshold_scale, query_scale, *, margin, n_grid, n_segments=1, reach=0.0, extra=0.0
) -> float:
    r"""A bound on the float64 round-off of the SVT quadrature, against exact arithmetic.

    Two evaluations of the same quadrature (eager op by op, one compiled program, or
    fused into an audit's program) differ in their last bits (fusion, reduction order,
    constants folded), so a certified error computed from one of them is charged twice
    this bound to hold for any of them. Derivation, with ``u = 2^-52`` and every
    elementary operation (``+ - * /``, ``exp``, ``log``, ``log1p``) within 2 ulp:
    every grid node lies in ``[-m, m]``, ``m = max(|gap|, reach) + 2 margin b_max``,
    and is computed within ``4 u m``; each log-factor (a Laplace log-CDF, 1-Lipschitz
    in ``t = (r - gap) / b_nu``, or the threshold density ``-|r| / b_rho - log 2 b_rho``)
    within ``u (16 Lambda)``, ``Lambda = m / min(b_rho, b_nu) + |log 2 b_rho| + 1``
    bounding every factor's size; the masked sum of ``k + 1`` factors adds ``(k + 1) u``
    times their total size, ``<= 3 (k + 1) Lambda``: the log-integrand is within
    ``E_v = 4 (k + 4)^2 Lambda u`` at each node. The trapezoid sum relative to its
    maximum (``>= 1/2``) of ``n`` terms ``exp(v - top)`` in any order: ``3 E_v``
    (the terms and the maximum) ``+ 2 n u`` (the ``n`` roundings and the
    ``|v - top| e^{-|v - top|} <= 1/e`` of each subtraction), and its log, the step
    and the maximum added back ``u (2 |log step| + 8 (k + 1) Lambda + 40)``; the
    Richardson pair ``(4 I_n - I_{(n+1)/2}) / 3`` and the ``n_segments`` stretches
    multiply by at most ``2 n_segments``; the released values' densities add
    ``4 (k + 2) u`` times their total size ``extra``. In all:
    ``u [2 n_segments (13 (k + 4)^2 Lambda + 2 n + 2 |log step| + 40) + 4 (k + 2) extra]``,
    ``1e-10`` to ``1e-9`` for the catalogue's laws: far below the quadrature's own error and
    the certificate's ``1e-9`` relative margin, so no verdict rests on it.

    Args:
        gaps: ``q_i - T_i``, ``(k,)``.
        threshold_scale, query_scale: the Laplace scales (``query_scale > 0``).
        margin: the grid's reach beyond the gaps in units of the larger scale.
        n_grid: the finer grid's number of points.
        n_segments: stretches of queries sharing one threshold noise.
        reach: the largest ``|v_i - T_i|`` of released values (0: none).
        extra: the total size ``sum (|v_i - q_i| / b_nu + |log 2 b_nu|)`` of the released
            values' log-densities (0: none).

    Returns:
        The bound (``>= 0``).
    """
    gaps = np.asarray(gaps, dtype=float)
    k = gaps.shape[0]
    b_rho, b_nu = float(threshold_scale), float(query_scale)
    width = margin * max(b_rho, b_nu)
    m = max(float(np.max(np.abs(gaps), initial=0.0)), reach) + 2.0 * width
    size = m / min(b_rho, b_nu) + abs(math.log(2.0 * b_rho)) + 1.0
    log_step = abs(math.log(width / n_grid)) + abs(math.log(2.0 * m / (n_grid // 2)))
    per_segment = 13.0 * (k + 4) ** 2 * size + 2.0 * n_grid + 2.0 * log_step + 40.0
    return _EPS * (2.0 * n_segments * per_segment + 4.0 * (k + 2) * extra)


def interval_roundoff(gaps, threshold_scale, lower: float, n_segments: int = 1) -> float:
    """A bound on the float64 round-off of SVT's closed form without query noise.

    Each stretch's ``log(F(hi) - F(lo))`` (:func:`_log_interval`) takes two CDF values,
    each within ``u (|x| / b + 8)`` relative (the log-CDF, 1-Lipschitz, then ``exp``),
    ``|x| <= max |gap|``; their difference divides that by the stretch's mass, which is
    at least ``e^lower`` (every stretch's log-mass is ``<= 0`` and they add up to at
    least ``lower``), and its log adds ``u |lower|``. In all, with ``u = 2^-52``:
    ``u n_segments ((2 max |gap| / b + 16) e^{-lower} + 2 |lower| + 4)``.

    Args:
        gaps: ``q_i - T_i``, ``(k,)``.
        threshold_scale: the threshold noise's Laplace scale.
        lower: a certified lower bound on the log-mass.
        n_segments: stretches of queries sharing one threshold noise.

    Returns:
        The bound (``>= 0``; ``inf`` when ``lower`` is ``-inf``).
    """
    top = float(np.max(np.abs(np.asarray(gaps, dtype=float)), initial=0.0))
    if lower < -700.0:  # e^-lower overflows (or the mass may be 0): no finite bound
        return math.inf
    conditioning = (2.0 * top / float(threshold_scale) + 16.0) * math.exp(-lower)
    return _EPS * n_segments * (conditioning + 2.0 * abs(lower) + 4.0)


def _charged(distance: float, roundoff: float) -> float:
    """``distance + 2 roundoff`` rounded up: the certified error of a quadrature value.

    The three positive terms are added with one rounding each (``<= u/2`` relative); the
    factor ``1 + 4u`` covers them.
    """
    return (distance + 2.0 * roundoff) * (1.0 + 4.0 * _EPS)


def _jitted_log_prob(law: SparseVector, value):
    """``law.log_prob(value)``: one program per shape and form, the law's parameters arguments.

    The fields enter keyed by name (a ``dict`` flattens in sorted key order): numpyro's
    own flattening orders them by a ``set`` of names, which follows the process's string
    hash seed, so the program's persistent-cache key would change from process to process.
    """
    children, aux = law.tree_flatten()
    fields = dict(zip(SparseVector.gather_pytree_data_fields(), children, strict=True))
    return _log_prob_program(fields, value, aux=aux)


@partial(jax.jit, static_argnames=("aux",))
def _log_prob_program(fields, value, *, aux):
    names = SparseVector.gather_pytree_data_fields()
    law = SparseVector.tree_unflatten(aux, tuple(fields[name] for name in names))
    return law.log_prob(value)


# 2^12 patterns of up to 12 two-term factors each (4096 terms per interval): a few
# seconds; longer query streams are left to sampling.
_MAX_SVT_QUERIES = 12


def _log_interval(lo, hi, b):
    """``log(F(hi) - F(lo))`` for the Laplace(0, b) CDF; ``-inf`` when ``hi <= lo``."""
    cdf_hi = jnp.exp(log_laplace_cdf(hi / b))
    cdf_lo = jnp.exp(log_laplace_cdf(lo / b))
    # upper tail form avoids 1 - 1 when both are far right
    tail = jnp.exp(log_laplace_cdf(-lo / b)) - jnp.exp(log_laplace_cdf(-hi / b))
    mass = jnp.where(lo > 0, tail, cdf_hi - cdf_lo)
    return jnp.where(hi > lo, jnp.log(jnp.maximum(mass, 0.0)), -jnp.inf)


# ------------------------------------------------- the run as a program: answers and threshold


class NoisyComparison(Distribution):
    r"""One SVT answer given the threshold noise: ``1[gap + nu >= rho]``, or ``-1`` when inactive.

    ``gap = q_i - T_i`` is the query's distance to its threshold, ``rho`` the value of
    the threshold noise (a latent site drawn from :class:`ThresholdNoise`) and
    ``nu ~ Lap(query_scale)`` the query noise (none when ``query_scale == 0``). An
    inactive query (after the cutoff: ``active`` is computed by the program from the
    earlier answers) is ``-1`` with probability 1.

    Its ``log_prob`` is the law *given* ``rho``; the law with ``rho`` integrated out is
    :meth:`ThresholdNoise.marginal_log_prob`.

    Args:
        gap: ``q_i - T_i`` (a scalar).
        threshold_noise: ``rho`` (a scalar).
        query_scale: the Laplace scale of the query noise (a concrete float ``>= 0``).
        active: whether the query is answered (a scalar bool).

    Example:
        >>> d = NoisyComparison(0.0, 0.0, 1.0)
        >>> round(float(jnp.exp(d.log_prob(1.0))), 6)
        0.5
    """

    arg_constraints = {}
    support = constraints.integer_interval(-1, 1)
    has_enumerate_support = True
    pytree_data_fields = ("gap", "threshold_noise", "active")
    pytree_aux_fields = ("query_scale",)

    def __init__(self, gap, threshold_noise, query_scale, active=True, *, validate_args=None):
        self.gap = jnp.asarray(gap, dtype=jnp.float64)
        self.threshold_noise = jnp.asarray(threshold_noise, dtype=jnp.float64)
        self.active = jnp.asarray(active, dtype=bool)
        for label, value in (("gap", self.gap), ("threshold_noise", self.threshold_noise)):
            if jnp.ndim(value) != 0:
                raise ValueError(
                    f"NoisyComparison {label} must be a scalar, got {jnp.shape(value)}."
                )
        if jnp.ndim(self.active) != 0:
            raise ValueError(f"NoisyComparison active must be a scalar, got {jnp.shape(active)}.")
        scale = float(query_scale)
        if not (math.isfinite(scale) and scale >= 0):
            raise ValueError(f"NoisyComparison query_scale must be finite and >= 0, got {scale!r}.")
        self.query_scale = scale
        super().__init__(batch_shape=(), event_shape=(), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        """Answers drawn given the threshold noise.

        Args:
            key: a JAX random key.
            sample_shape: leading shape.

        Returns:
            ``sample_shape`` codes in ``{-1, 0, 1}`` (float64).
        """
        nu = self.query_scale * jax.random.laplace(key, sample_shape)
        positive = self.gap + nu >= self.threshold_noise
        return jnp.where(self.active, positive.astype(jnp.float64), -1.0)

    def log_prob(self, value):
        """``log P(value | rho)``.

        Args:
            value: codes, any shape.

        Returns:
            The log masses (``-inf`` for a code the query cannot give).
        """
        value = jnp.asarray(value, dtype=jnp.float64)
        if self.query_scale == 0.0:
            log_pos = jnp.where(self.gap >= self.threshold_noise, 0.0, -jnp.inf)
            log_neg = jnp.where(self.gap >= self.threshold_noise, -jnp.inf, 0.0)
        else:  # negative iff nu < rho - gap
            t = (self.threshold_noise - self.gap) / self.query_scale
            log_pos, log_neg = log_laplace_cdf(-t), log_laplace_cdf(t)
        answered = jnp.where(value == 1.0, log_pos, jnp.where(value == 0.0, log_neg, -jnp.inf))
        return jnp.where(self.active, answered, jnp.where(value == -1.0, 0.0, -jnp.inf))

    def enumerate_support(self, expand=True):
        """The codes ``(-1, 0, 1)``.

        Args:
            expand: ignored (the law is a scalar).

        Returns:
            ``(3,)`` float64.
        """
        return jnp.array([-1.0, 0.0, 1.0])


class ThresholdNoise(dist.Laplace):
    r"""SVT threshold noise ``Lap(0, scale)`` that integrates itself out of the answers.

    Drawn at a latent site (``infer={"dpaudit": "latent"}``), it is an ordinary
    Laplace law; in addition it provides the **marginal density** of the release
    sites whose law depends on it (:mod:`dpaudit.model.sites` finds them and passes their
    conditional laws and values, in the model's order):

    * :meth:`marginal_log_prob` — ``log int p_rho(r) prod_i P(a_i | r) dr`` for
      :class:`NoisyComparison` answers, by the trapezoid rule with Richardson
      extrapolation (jit-able; the same rule as :class:`SparseVector`);
    * :meth:`marginal_log_prob_error` — a certified bound on that rule's error;
    * :meth:`certified_marginal_log_prob` — a closed-form ``[lower, upper]`` bracket
      (:func:`dpaudit.accounting.suprema.piecewise_exponential_integral`), for exact accounting.

    Args:
        scale: the Laplace scale (> 0).

    Example:
        >>> rho = ThresholdNoise(2.0)
        >>> answers = [(NoisyComparison(0.0, 0.0, 0.0), 1.0)]  # 1 iff rho <= 0
        >>> round(float(jnp.exp(rho.marginal_log_prob(answers))), 6)
        0.5
    """

    #: Grid of the quadrature (the Richardson pair nests in it) and its reach beyond the
    #: kinks in units of the larger scale: the tails beyond 40 scales weigh e^-40.
    N_GRID = 2049
    MARGIN = 40.0

    def __init__(self, scale, *, validate_args=None):
        if not isinstance(scale, jax.core.Tracer):
            check_positive("ThresholdNoise scale", float(scale))
        super().__init__(0.0, scale, validate_args=validate_args)

    @staticmethod
    def _answers(conditionals, xp=jnp):
        """Stacked ``(gaps, codes, active)`` and the common query scale of the answers."""
        conditionals = list(conditionals)
        for fn, _ in conditionals:
            if not isinstance(fn, NoisyComparison):
                raise TypeError(
                    "ThresholdNoise marginalises only NoisyComparison answers; a site that "
                    f"depends on the threshold noise is drawn from {type(fn).__name__}."
                )
        scales = {fn.query_scale for fn, _ in conditionals}
        if len(scales) > 1:
            raise ValueError(
                f"answers against one ThresholdNoise must share one query_scale, got {scales}."
            )
        gaps = xp.stack([xp.asarray(fn.gap) for fn, _ in conditionals])
        codes = xp.stack([xp.asarray(v, dtype=xp.float64) for _, v in conditionals])
        active = xp.stack([xp.asarray(fn.active) for fn, _ in conditionals])
        return gaps, codes, active, scales.pop()

    def marginal_log_prob(self, conditionals):
        """``log P(answers)`` with the threshold noise integrated out (quadrature).

        Args:
            conditionals: ``(NoisyComparison, code)`` pairs, one per dependent site.

        Returns:
            A scalar log mass (``-inf`` when a code contradicts its ``active`` flag).

        Raises:
            TypeError: when an answer is not a :class:`NoisyComparison`.
            ValueError: when the answers' query scales differ.
        """
        if not conditionals:
            return jnp.zeros(())
        gaps, codes, active, b_nu = self._answers(conditionals)
        return _marginal_log_mass(
            self.scale, gaps, codes, active, b_nu, noisy=b_nu > 0.0, n_grid=self.N_GRID,
            margin=self.MARGIN,
        )  # fmt: skip

    def certified_marginal_log_prob(self, conditionals) -> tuple[float, float]:
        """``[lower, upper]`` bounds on the marginal log mass, with no quadrature error.

        Args:
            conditionals: concrete ``(NoisyComparison, code)`` pairs.

        Returns:
            ``(lower, upper)``; ``(-inf, -inf)`` for answers of mass 0.

        Raises:
            OverflowError: when the closed form has too many terms (more than about 20
                answers).
        """
        if not conditionals:
            return 0.0, 0.0
        gaps, codes, active, b_nu = self._answers(conditionals, np)
        if not np.all(np.where(active, (codes == 0.0) | (codes == 1.0), codes == -1.0)):
            return -math.inf, -math.inf
        factors = [ExpFactor.laplace_density(0.0, float(self.scale))]
        for gap, code in zip(gaps[active], codes[active], strict=True):
            if b_nu == 0.0:
                factors.append(ExpFactor.indicator(float(gap), below=bool(code == 1.0)))
            elif code == 1.0:
                factors.append(ExpFactor.laplace_survival(float(gap), b_nu))
            else:
                factors.append(ExpFactor.laplace_cdf(float(gap), b_nu))
        bracket = piecewise_exponential_integral(factors)
        if bracket is None:
            raise OverflowError("too many answers for the closed-form marginal")
        lower, upper = log_bracket(bracket[0], min(bracket[1], 1.0))
        eps = np.finfo(float).eps  # the log of the bracket, rounded outwards once more
        lower = lower - 2 * eps * abs(lower) if math.isfinite(lower) else lower
        upper = upper + 2 * eps * abs(upper) if math.isfinite(upper) else upper
        return lower, upper

    def marginal_log_prob_error(self, conditionals) -> float:
        """A certified bound on ``|marginal_log_prob - log P(answers)|``.

        The truth lies in :meth:`certified_marginal_log_prob`'s bracket, so the distance
        from the quadrature value to the bracket's far end bounds the error of that value;
        twice the round-off bound (:func:`quadrature_roundoff`, :func:`interval_roundoff`)
        is added, so it holds however the marginal is evaluated (this value is one compiled
        program per number of answers, the scales and answers its arguments).

        Args:
            conditionals: concrete ``(NoisyComparison, code)`` pairs.

        Returns:
            The bound (``inf`` when the bracket cannot be computed).
        """
        if not conditionals:
            return 0.0
        gaps, codes, active, b_nu = self._answers(conditionals, np)
        noisy = b_nu > 0.0
        computed = float(
            _jitted_marginal_log_mass(
                float(self.scale), gaps, codes, active, b_nu, noisy=noisy, n_grid=self.N_GRID,
                margin=self.MARGIN,
            )
        )  # fmt: skip
        try:
            lower, upper = self.certified_marginal_log_prob(conditionals)
        except OverflowError:
            return math.inf
        if computed == -math.inf and upper == -math.inf:
            return 0.0
        if noisy:
            roundoff = quadrature_roundoff(
                gaps, float(self.scale), b_nu, margin=self.MARGIN, n_grid=self.N_GRID
            )
        else:
            roundoff = interval_roundoff(gaps, float(self.scale), lower)
        return _charged(max(abs(computed - lower), abs(upper - computed)), roundoff)


def _marginal_log_mass(b_rho, gaps, codes, active, b_nu, *, noisy, n_grid, margin):
    """:meth:`ThresholdNoise.marginal_log_prob` on stacked answers (traceable)."""
    valid = jnp.all(jnp.where(active, (codes == 0.0) | (codes == 1.0), codes == -1.0))
    positive, negative = active & (codes == 1.0), active & (codes == 0.0)
    if not noisy:  # rho in (max negative gap, min positive gap]
        lo = jnp.max(jnp.where(negative, gaps, -jnp.inf))
        hi = jnp.min(jnp.where(positive, gaps, jnp.inf))
        return jnp.where(valid, _log_interval(lo, hi, b_rho), -jnp.inf)
    width = margin * jnp.maximum(b_rho, b_nu)
    lo = jnp.minimum(jnp.min(gaps), 0.0) - width
    hi = jnp.maximum(jnp.max(gaps), 0.0) + width

    def integral(n):
        r = jnp.linspace(lo, hi, n)
        t = (r[None, :] - gaps[:, None]) / b_nu  # negative iff nu < r - gap
        log_g = jnp.where(
            negative[:, None],
            log_laplace_cdf(t),
            jnp.where(positive[:, None], log_laplace_cdf(-t), 0.0),
        )
        log_rho = -jnp.abs(r) / b_rho - jnp.log(2 * b_rho)
        return log_trapezoid(log_rho + jnp.sum(log_g, axis=0), (hi - lo) / (n - 1))

    return jnp.where(valid, richardson(integral, n_grid), -jnp.inf)


#: The marginal log-mass as one compiled program per number of answers and form, the
#: scales and answers its arguments (the certified error's evaluation; traced models call
#: :func:`_marginal_log_mass` inline, unchanged).
_jitted_marginal_log_mass = jax.jit(
    _marginal_log_mass, static_argnames=("noisy", "n_grid", "margin")
)
