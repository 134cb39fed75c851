"""The StatDP / DP-Sniper benchmark samplers against their exact laws, and the tightness runner.

``benchmarks/statdp_mechanisms.py`` writes the benchmark mechanisms as plain numpy
samplers; these tests hold each sampler to an outside law: scipy's Laplace for the
Laplace mechanism and noisy histograms, the product of CDFs (and the catalogue's
``NoisyMaxWithValue``) for report-noisy-max's value, the catalogue's ``NoisyArgmax``
and ``SparseVector`` laws for indices and sparse-vector patterns. Every statistical
check fails spuriously with probability at most ``TEST_FAILURE_RATE`` (Bonferroni
over the checks of a test).
"""

import doctest
import importlib
import json
import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE
from hypothesis import given, settings
from hypothesis import strategies as st

import dpaudit
from dpaudit.blackbox import certified_epsilon
from mechanisms.faulty.selection import NoisyMaxWithValue

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))
sm = importlib.import_module("statdp_mechanisms")
bt = importlib.import_module("blackbox_tightness")

EPS = sm.EPSILON


def _rng(seed):
    return np.random.default_rng(seed)


def test_docstring_examples():
    failures, _ = doctest.testmod(sm, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert failures == 0


# ---------------------------------------------------------------- continuous releases


def test_laplace_and_noisy_histograms_follow_scipy_laplace():
    """Laplace mechanism, NoisyHist1 (scale 1/eps) and NoisyHist2 (scale eps): KS per coordinate."""
    n = 20_000
    a = np.array([1.0, 0.0, 2.0, 1.0, 3.0])
    checks = [(sm.laplace_mechanism(1.0, n, _rng(1)), 1.0, 1 / EPS)]
    hist1 = sm.noisy_hist(a, n, _rng(2))
    hist2 = sm.noisy_hist(a, n, _rng(3), scale=EPS)
    checks += [(hist1[:, i], a[i], 1 / EPS) for i in range(a.size)]
    checks += [(hist2[:, i], a[i], EPS) for i in range(a.size)]
    for x, loc, scale in checks:
        p = scipy.stats.kstest(x, scipy.stats.laplace(loc=loc, scale=scale).cdf).pvalue
        assert p > TEST_FAILURE_RATE / len(checks), (loc, scale, p)
    assert hist1.shape == (n, 5)


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_noisy_max_value_follows_the_product_of_cdfs(noise):
    """RNM3 / RNM4 releases, and NoisyMaxValue.sample, against G(v) = prod_i F((v - a_i)/b)."""
    a = np.array([1.0, 0.0, 2.0, 1.0, 1.0])
    law = sm.NoisyMaxValue(a, 2 / EPS, noise)
    released = sm.report_noisy_max(a, 20_000, _rng(4), noise=noise, release="value")
    drawn = np.asarray(law.sample(jax.random.key(5), (20_000,)))
    for x in (released, drawn):
        p = scipy.stats.kstest(x, lambda v: np.asarray(law.cdf(jnp.asarray(v)))).pvalue
        assert p > TEST_FAILURE_RATE / 2, p


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_noisy_max_value_density_is_the_derivative_of_its_cdf(noise):
    """log_prob integrates to 1 and matches the numerical derivative of the exact CDF."""
    a = jnp.array([1.0, 0.0, 2.0, 1.0, 1.0])
    law = sm.NoisyMaxValue(a, 2 / EPS, noise)
    v = jnp.linspace(-700.0, 900.0, 400_001)
    density = np.exp(np.asarray(law.log_prob(v)))
    assert abs(np.trapezoid(density, np.asarray(v)) - 1) < 1e-6
    h = 1e-4
    x = jnp.array([-50.0, -3.0, 0.5, 2.5, 7.0, 40.0, 200.0])  # away from the kinks
    numeric = (law.cdf(x + h) - law.cdf(x - h)) / (2 * h)
    np.testing.assert_allclose(np.exp(law.log_prob(x)), numeric, rtol=1e-6, atol=1e-12)
    if noise == "exponential":  # below max(a) the release has no density
        assert float(law.log_prob(1.99)) == -math.inf


def test_noisy_max_value_is_the_catalogue_law_summed_over_the_index():
    """Laplace case: logsumexp_i of the catalogue's NoisyMaxWithValue([i, v]) (an outside law)."""
    a = jnp.array([1.0, 0.0, 2.0, 1.0, 1.0])
    v = jnp.linspace(-300.0, 300.0, 301)
    ours = sm.NoisyMaxValue(a, 2 / EPS).log_prob(v)
    catalogue = NoisyMaxWithValue(a, 2 / EPS)
    terms = [catalogue.log_prob(jnp.stack([jnp.full(v.shape, float(i)), v], -1)) for i in range(5)]
    np.testing.assert_allclose(ours, jax.nn.logsumexp(jnp.stack(terms), axis=0), atol=1e-10)


def test_report_noisy_max_value_true_epsilon_is_k_eps_over_2():
    """The derivation in statdp_mechanisms: the ratio is exactly e^{k/b} below min a, at most that."""
    k, b = 5, 2 / EPS
    v = jnp.linspace(-500.0, 500.0, 20_001)
    low = sm.NoisyMaxValue(jnp.ones(k), b).log_prob(v)
    high = sm.NoisyMaxValue(2 * jnp.ones(k), b).log_prob(v)
    loss = np.asarray(low - high)
    np.testing.assert_allclose(loss[np.asarray(v) < 1], k / b, rtol=1e-12)
    assert loss.max() <= k / b + 1e-12
    # the event {v < 1} has probability 2^-k under a = 1 and 2^-k e^{-k/b} under a = 2
    assert math.isclose(float(sm.NoisyMaxValue(jnp.ones(k), b).cdf(1.0)), 2.0**-k)


@settings(max_examples=25)
@given(
    st.lists(st.integers(-3, 3), min_size=5, max_size=5),
    st.lists(st.integers(-1, 1), min_size=5, max_size=5),
)
def test_report_noisy_max_value_loss_never_exceeds_k_eps_over_2(base, shift):
    """Any neighbours (every query moves by at most 1): |log g_a - log g_a'| <= k eps / 2."""
    a = jnp.asarray(base, dtype=float)
    v = jnp.linspace(-300.0, 300.0, 6001)
    loss = sm.NoisyMaxValue(a, 2 / EPS).log_prob(v) - sm.NoisyMaxValue(
        a + jnp.asarray(shift, dtype=float), 2 / EPS
    ).log_prob(v)
    assert float(jnp.max(jnp.abs(loss))) <= 5 * EPS / 2 + 1e-9


# ---------------------------------------------------------------- discrete releases


def _chi_square_p(observed: np.ndarray, expected: np.ndarray) -> float:
    """Pearson chi-square p-value, cells with expected count < 10 pooled into one."""
    big = expected >= 10
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    keep = exp > 0
    return float(scipy.stats.chisquare(obs[keep], exp[keep] * obs.sum() / exp[keep].sum()).pvalue)


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_noisy_max_index_frequencies_match_the_catalogue_noisy_argmax(noise):
    a = np.array([1.0, 0.0, 2.0, 1.0, 2.0])
    n = 40_000
    index = sm.report_noisy_max(a, n, _rng(6), noise=noise, release="index").astype(int)
    expected = n * np.asarray(dpaudit_noisy_argmax(a, noise).probs)
    assert _chi_square_p(np.bincount(index, minlength=5), expected) > TEST_FAILURE_RATE


def dpaudit_noisy_argmax(a, noise):
    from mechanisms.classic import NoisyArgmax

    return NoisyArgmax(jnp.asarray(a), 2 / EPS, noise)


SVT_CASES = [(1, 0.5), (4, 1.0), (5, 1.0), (6, 1.0)]  # DP-Sniper's thresholds


@pytest.mark.parametrize(("algorithm", "threshold"), SVT_CASES)
def test_sparse_vector_patterns_match_the_catalogue_law(algorithm, threshold):
    """Pattern frequencies of the numpy sampler vs the catalogue's exact SparseVector law."""
    a = np.array([2.0] * 5 + [0.0] * 5)
    n = 40_000
    codes = sm.sparse_vector(a, n, _rng(10 + algorithm), algorithm=algorithm, threshold=threshold)
    assert set(np.unique(codes)) <= {-1.0, 0.0, 1.0}
    reference = sm.reference_model("sparse-vector", algorithm=algorithm, threshold=threshold)
    law = reference.release_distribution(sm.counting_records(a))
    observed = np.bincount(np.asarray(sm.PatternTable.encode(codes)), minlength=3**10)
    expected = n * np.exp(np.asarray(law.log_table))
    assert observed[expected == 0].sum() == 0  # nothing outside the law's support
    # SparseVector's quadrature is accurate to 1e-3 in probability (catalogue docstring)
    assert abs(expected.sum() / n - 1) < 1e-3
    p = _chi_square_p(observed, expected)
    assert p > TEST_FAILURE_RATE, p


def test_pattern_table_is_the_catalogue_sparse_vector_law():
    a = np.array([1.0, 2.0, 0.0, 1.0])
    data = sm.counting_records(a)
    reference = sm.reference_model("sparse-vector", k=4, algorithm=4, threshold=1.0)
    exact = dpaudit.build("faulty/svt-lyu-alg4", epsilon=EPS, n=2, thresholds=(1.0,) * 4, cutoff=1)
    table = reference.release_distribution(data)
    # the table's look-ups and draws as jitted programs (as an audit runs them; eagerly every
    # operation compiled on its own for each shape)
    log_prob = jax.jit(lambda law, v: law.log_prob(v))
    patterns = jnp.array([[0, 0, 1, -1], [1, -1, -1, -1], [0, 0, 0, 0], [0, 1, -1, -1]], float)
    catalogue = jax.jit(exact.release_distribution(data).log_prob)
    np.testing.assert_allclose(log_prob(table, patterns), catalogue(patterns), rtol=1e-12)
    # impossible outputs: a code after the cutoff, and a non-code value (0.5 rounds to the
    # code 0 of a possible pattern: only the code check makes it impossible)
    impossible = jnp.array([[1.0, 1.0, -1.0, -1.0], [0.5, 0.0, 0.0, 0.0]])
    assert np.all(np.asarray(log_prob(table, impossible)) == -math.inf)
    drawn = jax.jit(lambda law, key: law.sample(key, (7,)))(table, jax.random.key(0))
    np.testing.assert_array_equal(sm.PatternTable.decode(sm.PatternTable.encode(drawn), 4), drawn)
    assert np.all(np.isfinite(np.asarray(log_prob(table, drawn))))


def test_svt_parameters_are_lyu_et_al():
    assert sm.svt_parameters(1, 0.1, cutoff=2) == pytest.approx(
        {"threshold_scale": 20.0, "query_scale": 80.0, "cutoff": 2}
    )
    assert sm.svt_parameters(4, 0.1) == pytest.approx(
        {"threshold_scale": 40.0, "query_scale": 40 / 3, "cutoff": 1}
    )
    assert sm.svt_parameters(5, 0.1)["query_scale"] == 0.0
    assert sm.svt_parameters(6, 0.1)["cutoff"] is None
    for algorithm, _ in SVT_CASES:  # and the catalogue entries used as references agree
        params = sm.svt_parameters(algorithm)
        built = sm.reference_model("sparse-vector", algorithm=algorithm).params
        assert built["threshold_scale"] == pytest.approx(params["threshold_scale"])
        assert built["query_scale"] == pytest.approx(params["query_scale"])


# ---------------------------------------------------------------- inputs as datasets


@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(-1, 1)), min_size=1, max_size=12).filter(
        lambda rows: all(0 <= a + d <= 2 for a, d in rows)
    )
)
def test_counting_pair_encodes_any_neighbouring_answers(rows):
    a = np.array([r[0] for r in rows], float)
    b = a + np.array([r[1] for r in rows], float)
    d, d_prime = sm.counting_pair(a, b)
    np.testing.assert_array_equal(sm.column_counts(d), a)
    np.testing.assert_array_equal(sm.column_counts(d_prime), b)
    dpaudit.check_adjacent(d, d_prime, "replace-one")


def test_statdp_patterns_are_the_tools_neighbours():
    componentwise = sm.statdp_patterns(10, componentwise=True)
    assert [name for name, _, _ in componentwise] == [
        "one above",
        "one below",
        "one above rest below",
        "one below rest above",
        "half half",
        "all above",
        "all below",
        "X shape",
    ]
    assert len(sm.statdp_patterns(5, componentwise=False)) == 2
    for _, a, b in componentwise:
        assert np.max(np.abs(a - b)) <= 1 and set(np.concatenate([a, b])) <= {0.0, 1.0, 2.0}
    d, d_prime = sm.histogram_pair([1, 1, 1], [2, 1, 1])
    np.testing.assert_array_equal(sm.histogram_counts(d_prime, 3), [2, 1, 1])
    dpaudit.check_adjacent(d, d_prime, "add-remove")


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: sm.counting_pair([1, 1], [1, 3]), ValueError),
        (lambda: sm.counting_pair([0, 0], [2, 0]), ValueError),
        (lambda: sm.histogram_pair([1, 1], [2, 2]), ValueError),
        (lambda: sm.column_counts(np.array([[0.5, 1.0]])), ValueError),
        (lambda: sm.histogram_counts(np.array([0, 7]), 5), ValueError),
        (lambda: sm.sparse_vector(np.ones(3), 5, _rng(0), algorithm=2), ValueError),
        (lambda: sm.report_noisy_max(np.ones(3), 5, _rng(0), noise="gumbel"), ValueError),
        (lambda: sm.report_noisy_max(np.ones(3), 5, _rng(0), release="both"), ValueError),
        (lambda: sm.noisy_hist(np.ones(3), 5, _rng(0), epsilon=-1.0), ValueError),
        (lambda: sm.laplace_mechanism(np.ones(2), 5, _rng(0)), ValueError),
        (lambda: sm.laplace_mechanism(1.0, 0, _rng(0)), ValueError),
        (lambda: sm.sampler("not callable", len, "x"), TypeError),
        (lambda: sm.reference_model("gaussian"), ValueError),
        (lambda: sm.statdp_patterns(0, componentwise=True), ValueError),
    ],
)
def test_bad_inputs_raise_one_clear_error(call, error):
    with pytest.raises(error):
        call()


# ---------------------------------------------------------------- the tightness runner


def test_every_row_is_consistent():
    """Pairs adjacent under the claim, datasets encode the tool's answers, shapes agree.

    The reference law is evaluated on the first pair, except for the sparse-vector
    references with query noise, whose tables (seconds each) the pattern test checks.
    """
    for row in bt.rows():
        assert row.claim.epsilon == EPS
        for (name, a, b), (name2, d, d_prime) in zip(row.answers, row.pairs, strict=True):
            assert name == name2
            dpaudit.check_adjacent(d, d_prime, row.claim.adjacency)
            if row.key.startswith(("svt", "rnm")):
                np.testing.assert_array_equal(sm.column_counts(d), a)
                np.testing.assert_array_equal(sm.column_counts(d_prime), b)
        if row.key in ("svt1", "svt4", "svt6"):
            continue
        d = row.pairs[0][1]
        releases = np.asarray(row.sampler(d, 3, jax.random.key(0)))
        law = row.reference().release_distribution(d)
        width = int(np.prod(law.batch_shape + law.event_shape))
        assert releases.shape[0] == 3 and releases[0].size == width, row.key
        assert np.all(np.isfinite(np.asarray(law.log_prob(jnp.asarray(releases)))))
        assert row.select_samples(row.samples) <= row.samples // 10


def test_tiny_runs_detect_noisy_hist_2_and_clear_its_control():
    """Tiny budgets: NoisyHist2 (true epsilon 10) is a violation for both statistics; the
    correct NoisyHist1, certified at confidence 1 - TEST_FAILURE_RATE, is not.

    The control's false-violation probability is at most TEST_FAILURE_RATE (the
    Clopper–Pearson guarantee of one event chosen on separate selection releases);
    NoisyHist2's event {x_0 <= 1} alone would certify about log(0.5 / (12 / 20000))
    = 6.7 at that confidence, so missing it has negligible probability.
    """
    record = bt.run_row(bt.row("noisyhist2"), samples=20_000, oracle=True)
    for method in bt.METHODS:
        result = record["results"][method]
        assert result["verdict"] == "violation" and result["epsilon_lower"] > 5
    json.dumps(record)  # JSON-able
    assert record["oracle"]["epsilon_on_pairs"] == pytest.approx(1 / EPS)
    text = bt.markdown([record], {"machine": "test"})
    assert "NoisyHist, Lap(eps) per bin" in text
    control = bt.audit_row(
        bt.row("noisyhist1"), "logistic", samples=20_000, confidence=1 - TEST_FAILURE_RATE
    )
    assert control.verdict == "inconclusive" and control.epsilon_lower <= EPS


def test_oracle_bound_of_one_event_is_its_certified_bound():
    n = 1_000_000
    p = np.array([0.5, 0.5])
    q = np.array([0.5 * math.exp(-1.0), 1 - 0.5 * math.exp(-1.0)])
    expected = float(certified_epsilon(0.5 * n, n, q[0] * n, n))
    assert bt.oracle_bound(p, q, n) == pytest.approx(expected, rel=1e-12)
    assert 0.99 < expected < 1.0
