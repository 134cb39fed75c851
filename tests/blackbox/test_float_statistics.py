"""Float-aware black-box statistics: numpy Laplace reachability and bit features (issue 31)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpaudit
from dpaudit.blackbox import blackbox_audit, numpy_generator
from dpaudit.blackbox.statistics.floats import (
    MIN_OWN_REACHABLE,
    fit_reachability,
    float_bit_features,
    numpy_laplace_reachable,
    reachability_statistic,
)


def naive_laplace(data, n, key):
    """The textbook float Laplace mechanism (Mironov 2012): sum plus numpy Laplace noise."""
    return np.sum(data) + numpy_generator(key).laplace(0.0, 1.0, n)


def jax_laplace(data, n, key):
    return jnp.sum(data) + jax.random.laplace(key, (n,))


D, D_PRIME = np.zeros(5), np.array([1.0, 0.0, 0.0, 0.0, 0.0])


def test_numpy_laplace_releases_are_reachable_bit_for_bit():
    rng = np.random.default_rng(11)
    for loc, scale in [(0.0, 1.0), (1.0, 1.0), (7.0, 0.5), (-3.0, 1 / 0.3)]:
        x = rng.laplace(loc, scale, 4000)
        assert numpy_laplace_reachable(x, loc, scale).all()
    # an epsilon that divides a unit draw
    x = 2.0 + rng.laplace(0.0, 1.0, 4000) / 0.3
    assert numpy_laplace_reachable(x, 2.0, 0.3, divide=True).all()


def test_shifted_releases_are_mostly_unreachable():
    x = 1.0 + np.random.default_rng(12).laplace(0.0, 1.0, 20000)
    share = numpy_laplace_reachable(x, 0.0, 1.0).mean()
    assert share < 0.3  # ~0.18: D' = 1 + Z rarely lands on an output of 0 + Z


def test_reachability_tries_each_release_on_its_side_until_found(monkeypatch):
    # draws computed per release: reachable releases of 0 + Z are found at the first offset
    # or second offset on their own side (under 1.5 pre-filter draws each; trying both sides
    # and all five offsets for every release cost ten pre-filter draws each); unreachable
    # ones (D' = 1 + Z) are tried at most on their side's five offsets
    from dpaudit.blackbox.statistics import floats

    drawn = {"filter": 0, "exact": 0}
    real = floats.numpy_laplace

    def counted(k, loc, scale, divide, log_of=floats.libm_log):
        drawn["exact" if log_of is floats.libm_log else "filter"] += np.size(k)
        return real(k, loc, scale, divide, log_of)

    monkeypatch.setattr(floats, "numpy_laplace", counted)
    rng = np.random.default_rng(14)
    n = 20000
    assert numpy_laplace_reachable(rng.laplace(0.0, 1.0, n), 0.0, 1.0).all()
    assert drawn["filter"] <= 1.5 * n and drawn["exact"] <= 1.5 * n, drawn
    drawn.update(filter=0, exact=0)
    numpy_laplace_reachable(1.0 + rng.laplace(0.0, 1.0, n), 0.0, 1.0)
    assert drawn["filter"] <= 5 * n + 5


def test_fit_finds_location_and_scale_and_refuses_other_noise():
    rng = np.random.default_rng(13)
    fit = fit_reachability(rng.laplace(4.0, 2.0, (300, 2)))
    assert fit is not None and fit.own >= MIN_OWN_REACHABLE
    np.testing.assert_array_equal(fit.loc, [4.0, 4.0])
    np.testing.assert_array_equal(fit.scale * np.where(fit.divide, 0, 1), [2.0, 2.0])
    assert fit_reachability(rng.normal(size=(300, 1))) is None
    assert fit_reachability(rng.laplace(size=(300, 40))) is None  # too many coordinates


def test_reachability_statistic_is_zero_under_d_prime_on_the_event():
    rng = np.random.default_rng(14)
    fit_d = fit_reachability(rng.laplace(0.0, 1.0, (300, 1)))
    fit_dp = fit_reachability(rng.laplace(1.0, 1.0, (300, 1)))
    score = reachability_statistic(fit_d, fit_dp)
    s_d = score(rng.laplace(0.0, 1.0, (50000, 1)))
    s_dp = score(1.0 + rng.laplace(0.0, 1.0, (50000, 1)))
    assert (s_d == 1).mean() > 0.7 and (s_dp == 1).sum() == 0
    assert (s_dp == -1).mean() > 0.7 and (s_d == -1).sum() == 0


def test_bit_features_read_exponent_and_lowest_bit():
    x = np.array([[1.0], [3 * 2.0**-53], [-1.5], [0.0], [1 + 3 * 2.0**-52]])
    f = float_bit_features(x)
    assert f.shape == (5, 14)
    np.testing.assert_array_equal(f[:, 2], [1, -51, 1, 0, 1])  # binary exponent
    np.testing.assert_array_equal(f[:, 3], [0, -53, -1, 0, -52])  # lowest set bit
    np.testing.assert_array_equal(f[:, 5], [20, 0, 20, 20, 1])  # lowest bit relative to 2^-53
    np.testing.assert_array_equal(f[:, 6], [0, 0, 0, 0, 1])  # the last mantissa bit
    np.testing.assert_array_equal(f[4, 6:9], [1, 1, 0])


def test_default_route_picks_reachability_on_naive_laplace():
    res = blackbox_audit(
        naive_laplace, D, D_PRIME, dpaudit.Claim(epsilon=1.0), samples=30_000, seed=0,
        progress=False,
    )  # fmt: skip
    assert res.verdict == "violation" and res.statistic == "float"
    assert res.epsilon_lower >= 5.0  # ~9: no release of D' is in the event
    assert res.event.counts.Q == 0


@pytest.mark.slow
def test_acceptance_epsilon_five_from_a_million_releases():
    res = blackbox_audit(
        naive_laplace, D, D_PRIME, dpaudit.Claim(epsilon=1.0), samples=1_000_000, seed=1,
        progress=False,
    )  # fmt: skip
    assert res.verdict == "violation" and res.statistic == "float"
    assert res.epsilon_lower >= 5.0  # 12.5 measured


def test_auto_keeps_the_classifier_when_no_fit_is_found():
    res = blackbox_audit(
        jax_laplace, D, D_PRIME, dpaudit.Claim(epsilon=0.5), samples=20_000, seed=0,
        progress=False,
    )  # fmt: skip
    assert res.statistic == "logistic"
    assert not any("chosen on the selection set among" in n for n in res.notes)


def test_float_statistic_refuses_integer_releases():
    def counts(data, n, key):
        return np.sum(data).astype(np.int64) + numpy_generator(key).integers(0, 3, n)

    with pytest.raises(TypeError, match="statistic='float' reads float releases"):
        blackbox_audit(
            counts, D, D_PRIME, dpaudit.Claim(epsilon=1.0), samples=1000, seed=0,
            statistic="float", progress=False,
        )  # fmt: skip


def test_float_statistic_says_when_no_arithmetic_fits():
    with pytest.raises(ValueError, match="found no numpy Laplace arithmetic"):
        blackbox_audit(
            jax_laplace, D, D_PRIME, dpaudit.Claim(epsilon=1.0), samples=1000, seed=0,
            statistic="float", progress=False,
        )  # fmt: skip


def test_nan_releases_get_one_sentence():
    def nan_sampler(data, n, key):
        return np.full(n, np.nan)

    with pytest.raises(ValueError, match="contain NaN values"):
        blackbox_audit(
            nan_sampler, D, D_PRIME, dpaudit.Claim(epsilon=1.0), samples=1000, seed=0,
            statistic="float", progress=False,
        )  # fmt: skip


@pytest.mark.slow
def test_bits_statistic_finds_the_precision_flaw():
    res = blackbox_audit(
        naive_laplace, D, D_PRIME, dpaudit.Claim(epsilon=1.0), samples=50_000, seed=0,
        statistic="bits", classifier_options={"steps": 600}, progress=False,
    )  # fmt: skip
    assert res.statistic == "bits" and res.verdict == "violation"


def test_dp_sniper_float_row_at_a_small_budget():
    # DP-Sniper (2021) certifies 0.252 for a naive float Laplace claimed at 0.1 (scale 10).
    def naive_laplace_tenth(data, n, key):
        return np.sum(data) + numpy_generator(key).laplace(0.0, 10.0, n)

    res = blackbox_audit(
        naive_laplace_tenth, np.zeros(1), np.ones(1), dpaudit.Claim(epsilon=0.1),
        samples=20_000, seed=0, progress=False,
    )  # fmt: skip
    assert res.statistic == "float" and res.epsilon_lower >= 0.252  # 1e5 releases: 10.20
