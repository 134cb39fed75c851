"""Exact suprema for selection releases: report-noisy-max (three noises) and SVT patterns.

The masses are integrals of products of piecewise exponentials evaluated in closed form
(:func:`dpaudit.accounting.suprema.piecewise_exponential_integral`); the oracles here are
independent: mpmath quadrature at 30 digits between the kinks, closed forms for two
candidates (the difference of two Laplace or exponential variables), softmax for Gumbel
noise, the interval form of SVT without query noise, and Monte Carlo frequencies.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

from dpaudit.accounting.suprema import ExpFactor, finite_sup_loss, piecewise_exponential_integral
from mechanisms.classic import NoisyArgmax, SparseVector

mpmath.mp.dps = 30


def _mp_factor(factor: ExpFactor):
    """The factor as an mpmath function (written from the law, not from the pieces)."""
    return lambda r: sum(
        mpmath.mpf(c) * mpmath.exp(mpmath.mpf(lam) * (r - factor.kink))
        for c, lam in (factor.left if r < factor.kink else factor.right)
    )


def _mp_integral(factors) -> mpmath.mpf:
    kinks = sorted({f.kink for f in factors})
    edges = [-mpmath.inf, *[mpmath.mpf(k) for k in kinks], mpmath.inf]
    funcs = [_mp_factor(f) for f in factors]

    def integrand(r):
        return mpmath.fprod(g(r) for g in funcs)

    return mpmath.fsum(mpmath.quad(integrand, [a, b]) for a, b in itertools.pairwise(edges))


def _laplace_pdf(mu, s):
    return lambda r: mpmath.exp(-abs(r - mu) / s) / (2 * s)


def _laplace_cdf(mu, s):
    return lambda r: mpmath.exp((r - mu) / s) / 2 if r < mu else 1 - mpmath.exp(-(r - mu) / s) / 2


def test_factors_are_the_laws_they_name():
    """Each constructor's pieces reproduce the Laplace density and CDF (mpmath; the rates ``1/scale`` are
    rounded once, 1e-15 relative)."""
    for r in (-3.0, -0.5, 0.2, 0.7, 4.0):
        r_mp = mpmath.mpf(r)
        pdf = _mp_factor(ExpFactor.laplace_density(0.7, 1.3))(r_mp)
        cdf = _mp_factor(ExpFactor.laplace_cdf(0.7, 1.3))(r_mp)
        surv = _mp_factor(ExpFactor.laplace_survival(0.7, 1.3))(r_mp)
        assert abs(pdf / _laplace_pdf(mpmath.mpf(0.7), mpmath.mpf(1.3))(r_mp) - 1) < 1e-15
        assert abs(cdf / _laplace_cdf(mpmath.mpf(0.7), mpmath.mpf(1.3))(r_mp) - 1) < 1e-15
        assert abs(cdf + surv - 1) < 1e-15


@pytest.mark.parametrize("seed", range(6))
def test_bracket_contains_high_precision_integral(seed):
    """Random products of Laplace densities, CDFs, survivals and indicators: the certified
    bracket contains the 30-digit quadrature value and is narrower than 1e-10 relative."""
    rng = np.random.default_rng(seed)
    factors = [ExpFactor.laplace_density(rng.normal(), rng.uniform(0.3, 3.0))]
    for _ in range(rng.integers(1, 6)):
        kind = rng.integers(3)
        loc, scale = float(rng.normal(0, 2)), float(rng.uniform(0.3, 3.0))
        if kind == 0:
            factors.append(ExpFactor.laplace_cdf(loc, scale))
        elif kind == 1:
            factors.append(ExpFactor.laplace_survival(loc, scale))
        else:
            factors.append(ExpFactor.indicator(loc, below=bool(rng.integers(2))))
    lower, upper = piecewise_exponential_integral(factors)
    truth = _mp_integral(factors)
    assert lower <= truth <= upper
    assert upper - lower <= 1e-10 * max(float(truth), 1e-300) + 1e-300


def test_exact_zero_and_divergent_tail():
    assert piecewise_exponential_integral(
        [
            ExpFactor.laplace_density(0.0, 1.0),
            ExpFactor.indicator(-1.0, below=True),
            ExpFactor.indicator(1.0, below=False),
        ]
    ) == (0.0, 0.0)
    with pytest.raises(ValueError, match="does not decay"):
        piecewise_exponential_integral([ExpFactor.laplace_cdf(0.0, 1.0)])


@pytest.mark.parametrize("gap", [0.0, 0.5, 3.0])
def test_two_candidates_against_closed_forms(gap):
    """k = 2: argmax is 0 iff Z_0 - Z_1 > gap / b. A difference of two Lap(1) has tail
    (2 + d) e^{-d} / 4; of two Exp(1) it is Lap(1), tail e^{-d} / 2."""
    b = 2.0
    d = gap / b
    expected = {"laplace": (2 + d) * math.exp(-d) / 4, "exponential": math.exp(-d) / 2}
    for noise, p0 in expected.items():
        bounds = np.exp(NoisyArgmax(jnp.array([0.0, gap]), b, noise).certified_log_probs())
        assert bounds[0, 0] <= p0 <= bounds[0, 1], noise
        assert bounds[1, 0] <= 1 - p0 <= bounds[1, 1], noise
        assert bounds[0, 1] - bounds[0, 0] < 1e-11


def test_noisy_max_masses_against_quadrature_and_softmax():
    u, b = np.array([3.0, 5.0, 4.0, 2.0]), 2.0
    for noise in ("laplace", "exponential"):
        bounds = np.exp(NoisyArgmax(jnp.asarray(u), b, noise).certified_log_probs())
        density = ExpFactor.laplace_density if noise == "laplace" else ExpFactor.exponential_density
        cdf = ExpFactor.laplace_cdf if noise == "laplace" else ExpFactor.exponential_cdf
        for i in (0, 3):
            factors = [density(u[i], b)] + [cdf(u[j], b) for j in range(4) if j != i]
            assert bounds[i, 0] <= _mp_integral(factors) <= bounds[i, 1]
        assert bounds[:, 0].sum() <= 1.0 <= bounds[:, 1].sum()
    gumbel = np.exp(NoisyArgmax(jnp.asarray(u), b, "gumbel").certified_log_probs())
    softmax = np.exp(u / b) / np.sum(np.exp(u / b))
    assert np.all(gumbel[:, 0] <= softmax) and np.all(softmax <= gumbel[:, 1])


@pytest.mark.slow
def test_noisy_max_masses_against_sampling():
    """Frequencies of 400 000 argmax draws within 5 standard errors of the exact masses."""
    u = jnp.array([3.0, 5.0, 4.0, 2.0])
    for noise in ("laplace", "exponential", "gumbel"):
        law = NoisyArgmax(u, 2.0, noise)
        draws = np.asarray(law.sample(jax.random.PRNGKey(1), (400_000,)))
        freq = np.bincount(draws, minlength=4) / draws.size
        exact = np.exp(law.certified_log_probs()[:, 0])
        assert np.all(np.abs(freq - exact) < 5 * np.sqrt(exact * (1 - exact) / draws.size))


def test_gumbel_sup_loss_is_the_softmax_ratio():
    u, v, b = np.array([3.0, 5.0, 4.0, 2.0]), np.array([4.0, 4.0, 4.0, 2.0]), 2.0
    p, q = NoisyArgmax(jnp.asarray(u), b, "gumbel"), NoisyArgmax(jnp.asarray(v), b, "gumbel")
    result = p.exact_sup_loss(q)
    log_p = u / b - math.log(np.sum(np.exp(u / b)))
    log_q = v / b - math.log(np.sum(np.exp(v / b)))
    forward, backward = np.max(log_p - log_q), np.max(log_q - log_p)
    assert result.forward_lower <= forward <= result.forward_upper
    assert result.backward_lower <= backward <= result.backward_upper
    assert result.error < 1e-12
    # replace-one moves two counts by one in opposite directions: within epsilon = 2 / b
    assert result.sup_loss < 2.0 / b


def _svt(queries, **kwargs):
    defaults = {"thresholds": 2.0, "threshold_scale": 2.0, "query_scale": 4.0, "cutoff": 1}
    return SparseVector(jnp.asarray(queries, dtype=float), **(defaults | kwargs))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"cutoff": 2},
        {"cutoff": 2, "resample": True},
        {"cutoff": None, "query_scale": 1.5},
        {"cutoff": None, "query_scale": 0.0},
    ],
)
def test_svt_patterns_are_a_probability_law(kwargs):
    """The certified pattern masses bracket 1 in total."""
    law = _svt([1.0, 3.0, 2.0, 2.5], **kwargs)
    bounds = np.exp(np.array([law.certified_log_prob(row) for row in law.patterns()]))
    assert bounds[:, 0].sum() <= 1.0 <= bounds[:, 1].sum()
    assert np.max(bounds[:, 1] - bounds[:, 0]) < 1e-10


@pytest.mark.slow
def test_svt_certified_masses_agree_with_log_prob():
    """The sampled law's own log_prob (quadrature, 1e-3 in probability) agrees."""
    law = _svt([1.0, 3.0, 2.0, 2.5], cutoff=2, resample=True)
    patterns = law.patterns()
    bounds = np.exp(np.array([law.certified_log_prob(row) for row in patterns]))
    quadrature = np.exp(np.asarray(law.log_prob(jnp.asarray(patterns))))
    assert np.max(np.abs(quadrature - bounds[:, 0])) < 1e-3


@pytest.mark.slow
def test_svt_pattern_against_high_precision_and_sampling():
    """One pattern of Dwork-Roth SVT (two threshold noises) against mpmath, and every
    pattern's frequency in 100 000 runs within 5 standard errors."""
    law = _svt([1.0, 3.0, 2.0, 2.5], cutoff=2, resample=True)
    c = [-1.0, 1.0, 0.0, 0.5]
    # codes (0, 1, 1, -1): segment 0 = {neg q0, pos q1}, segment 1 = {pos q2}
    first = _mp_integral(
        [
            ExpFactor.laplace_density(0.0, 2.0),
            ExpFactor.laplace_cdf(c[0], 4.0),
            ExpFactor.laplace_survival(c[1], 4.0),
        ]
    )
    second = _mp_integral(
        [ExpFactor.laplace_density(0.0, 2.0), ExpFactor.laplace_survival(c[2], 4.0)]
    )
    lo, hi = law.certified_log_prob([0.0, 1.0, 1.0, -1.0])
    assert lo <= float(mpmath.log(first * second)) <= hi
    patterns = law.patterns()
    draws = np.asarray(law.sample(jax.random.PRNGKey(3), (100_000,)))
    exact = np.exp([law.certified_log_prob(row)[0] for row in patterns])
    for row, p in zip(patterns, exact, strict=True):
        freq = np.mean(np.all(draws == row, axis=1))
        assert abs(freq - p) < 5 * math.sqrt(p * (1 - p) / draws.shape[0]) + 1e-9


def test_svt_patterns_enumerate_the_runs():
    law = _svt([0.0] * 4, cutoff=2)
    rows = {tuple(r) for r in law.patterns().tolist()}
    runs = set()
    for bits in itertools.product((0.0, 1.0), repeat=4):
        out, count = [], 0
        for bit in bits:
            out.append(bit if count < 2 else -1.0)
            count += out[-1] == 1.0
        runs.add(tuple(out))
    assert rows == runs


def test_catalogue_sized_svt_is_exact():
    """The faulty entries' size (8 queries, no cutoff: 256 patterns) is enumerated exactly
    (its cost is measured in benchmarks, never timed in a test)."""
    law = _svt([2.0] * 8, cutoff=None, query_scale=2.0)
    other = _svt([3.0] * 4 + [1.0] * 4, cutoff=None, query_scale=2.0)
    result = law.exact_sup_loss(other)
    assert result.error < 1e-8


def test_svt_without_query_noise_detects_an_empty_interval():
    """No query noise: a pattern possible under D has mass 0 under D' (sup L = inf, certain)."""
    kwargs = {"thresholds": [2.0, 2.0, 1.0, 1.0], "query_scale": 0.0, "cutoff": None}
    p, q = _svt([2.0, 2.0, 2.0, 2.0], **kwargs), _svt([3.0, 3.0, 1.0, 1.0], **kwargs)
    result = p.exact_sup_loss(q)
    assert math.isinf(result.sup_loss_lower)


def test_finite_sup_loss_reads_brackets_outwards():
    log_p = np.log([[0.5, 0.5], [0.5, 0.5]])
    log_q = np.log([[0.25, 0.3], [0.7, 0.75]])
    r = finite_sup_loss(log_p, log_q)
    assert r.forward_lower <= math.log(0.5 / 0.3) and r.forward_upper >= math.log(0.5 / 0.25)
    assert r.backward_upper >= math.log(0.75 / 0.5)
    zero = finite_sup_loss(np.log([[0.5, 0.5], [0.5, 0.5]]), [[0.0, 0.0], [-np.inf, -np.inf]])
    assert math.isinf(zero.forward_lower)


def _margin_case():
    """An SVT pair and the release whose quadrature loss most exceeds the certified truth."""
    kwargs = {"cutoff": None, "query_scale": 2.0}
    p, q = _svt([2.0] * 4, **kwargs), _svt([3.0] * 4, **kwargs)  # quadrature off by ~1e-4
    patterns = p.patterns()
    # one compiled program for the 16 patterns' quadrature losses (op by op it was ~40 % of
    # the test's CPU); the laws are jit arguments (pytrees), as the audit passes them
    loss = jax.jit(lambda p, q, r: p.log_prob(r) - q.log_prob(r))
    quad = np.asarray(loss(p, q, jnp.asarray(patterns)))
    truth_hi = np.array([p.certified_log_prob(r)[1] - q.certified_log_prob(r)[0] for r in patterns])
    i = int(np.argmax(np.where(truth_hi > 0.05, quad - truth_hi, -np.inf)))  # claims are > 0
    return p, q, patterns[i], float(quad[i]), float(truth_hi[i])


def test_certificate_margin_includes_the_quadrature_error(monkeypatch):
    """The certificate-margin case: a claim between the true loss at a release and its
    quadrature value (within the quadrature error of the truth) is not certified as
    violated; with the numerical error left out of the margin (a mutation) it would be."""
    from types import SimpleNamespace

    from dpaudit.model.claims import Claim
    from dpaudit.whitebox.certificate import find_certificate

    p, q, x, quad, truth_hi = _margin_case()
    assert quad - truth_hi > 1e-5  # the quadrature overstates the loss at x
    claim = Claim(epsilon=truth_hi + (quad - truth_hi) / 2)
    kernels = [SimpleNamespace(dist_p=p, dist_q=q), SimpleNamespace(dist_p=q, dist_q=p)]
    certificate, verified = find_certificate(claim, kernels, [x, None], None)
    assert certificate is None
    assert verified[0] <= truth_hi  # the verified lower bound is below the truth
    monkeypatch.setattr(SparseVector, "log_prob_error", lambda self, value: 0.0)
    certificate, _ = find_certificate(claim, kernels, [x, None], None)
    assert certificate is not None  # the case is sharp: only the margin refuses it


def test_tree_quadrature_refuses_certificates():
    """AncestorLaplace beyond depth 1 has no certified quadrature bound: inf (closed forms 0)."""
    from dpaudit.accounting.suprema import log_density_error
    from dpaudit.model.noise.linear_laplace import AncestorLaplace

    x = jnp.zeros(4)
    assert log_density_error(AncestorLaplace(jnp.zeros(4), 2, 1.0), x) == math.inf
    assert log_density_error(AncestorLaplace(jnp.zeros(2), 1, 1.0), x[:2]) == 0.0
