"""The shipped audits of diffprivlib (audits/libraries/diffprivlib_primitives.py).

Skipped without the ``libraries`` extra. The fast tests check the seeding bridge
(diffprivlib refuses numpy Generators), that the wrapped primitives release the
documented distributions (against scipy), and one cheap violation; the slow test
runs every audit at its shipped budget on seeds never used for tuning.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import warnings
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import optimize, stats


@pytest.fixture(scope="module", autouse=True)
def diffprivlib():
    """diffprivlib (with scikit-learn), imported when this file's tests run, not when it is
    collected (every xdist worker collects every file); its tests skip without it."""
    with warnings.catch_warnings():  # a library's import-time deprecations are not ours to fail on
        warnings.simplefilter("ignore")
        # ImportError too: diffprivlib 0.6.6 installed beside scikit-learn >= 1.9 fails to import
        return pytest.importorskip(
            "diffprivlib", reason="the 'libraries' extra is not installed", exc_type=ImportError
        )


_PATH = Path(__file__).resolve().parents[2] / "audits" / "libraries" / "diffprivlib_primitives.py"


def _module():
    spec = importlib.util.spec_from_file_location("diffprivlib_primitives", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("diffprivlib_primitives", module)
    spec.loader.exec_module(module)
    return module


LIB = _module()


def _releases(name: str, which: int, n: int, seed: int = 0) -> np.ndarray:
    audit = LIB.audit_named(name)
    return np.asarray(LIB.sampler_of(audit)(audit.inputs[which], n, jax.random.key(seed)))


def test_diffprivlib_refuses_a_generator_and_the_bridge_keeps_the_stream(diffprivlib):
    with pytest.raises(ValueError):
        diffprivlib.mechanisms.Laplace(
            epsilon=1.0, sensitivity=1.0, random_state=np.random.default_rng(0)
        )
    calls = []

    def make(state):
        calls.append(state)
        return lambda data: data + state.random()

    seeded = LIB.Seeded(make)
    rng = np.random.default_rng(7)
    first = [seeded(0.0, rng) for _ in range(3)]
    assert len(calls) == 1 and isinstance(calls[0], np.random.RandomState)
    # the RandomState draws the Generator's own stream (same bit generator)
    assert first == np.random.RandomState(np.random.default_rng(7).bit_generator).random(3).tolist()
    seeded(0.0, np.random.default_rng(7))
    assert len(calls) == 2  # a new Generator (a new block of calls) rebuilds the primitive


def test_seeded_samplers_are_reproducible_and_unseeded_ones_say_so():
    a = _releases("laplace", 0, 50, seed=3)
    b = _releases("laplace", 0, 50, seed=3)
    assert a.tolist() == b.tolist() and a.tolist() != _releases("laplace", 0, 50, seed=4).tolist()
    assert LIB.sampler_of(LIB.audit_named("laplace"), seeded=False).reproducible is False


def _analytic_sigma(epsilon: float, delta: float) -> float:
    """Balle & Wang's analytic Gaussian: the sigma whose delta(epsilon) is exactly delta."""

    def excess(sigma):
        a, b = 1 / (2 * sigma), epsilon * sigma
        return stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b) - delta

    return optimize.brentq(excess, 1e-3, 1e3, xtol=1e-12)


@pytest.mark.parametrize(
    ("name", "law"),
    [
        ("laplace", stats.laplace(0.0, 1.0)),
        ("laplace-scale-as-epsilon", stats.laplace(0.0, 0.5)),
        ("gaussian", stats.norm(0.0, math.sqrt(2 * math.log(1.25 / 1e-5)))),
        ("gaussian-analytic", stats.norm(0.0, _analytic_sigma(1.0, 1e-5))),
        ("gaussian-wrong-delta", stats.norm(0.0, _analytic_sigma(1.0, 1e-2))),
    ],
)
def test_the_wrapped_primitives_release_the_documented_laws(name, law):
    # a wrong parameter passed through (epsilon for the scale, the wrong delta) moves the
    # scale by a factor >= 1.4: a KS test on 4000 releases sees that with p < 1e-10
    x = _releases(name, 0, 4000) - np.sum(LIB.audit_named(name).inputs[0])  # noise alone
    assert stats.kstest(x, law.cdf).pvalue > 1e-3


def test_the_exponential_misuse_has_its_closed_form_law():
    # monotonic=True: P(c) ~ exp(eps u_c); counts (1, 3, 2) -> (e, e^3, e^2) / sum
    x = _releases("exponential-monotonic", 1, 6000)
    expected = np.exp([1.0, 3.0, 2.0]) / np.exp([1.0, 3.0, 2.0]).sum()
    counts = np.bincount(x.astype(int), minlength=3)
    assert stats.chisquare(counts, 6000 * expected).pvalue > 1e-3


def test_two_attribute_randomised_response_is_caught_cheaply():
    """The cheapest misuse (2000 releases; true epsilon 2 against the claimed 1)."""
    audit = LIB.audit_named("randomised-response-two-attributes")
    res = LIB.run(audit, samples=2_000, select_samples=2_000, seed=11)
    assert res.verdict == "violation" and res.reproducible
    assert 1.0 < res.epsilon_lower <= 2.0


@pytest.mark.slow
@pytest.mark.parametrize("name", [a.name for a in LIB.AUDITS])
def test_every_diffprivlib_audit_gives_its_expected_verdict(name):
    audit = LIB.audit_named(name)
    res = LIB.run(audit, seed=2026)  # a seed never used while choosing the budgets
    assert res.verdict == audit.expected, res.notes


@pytest.mark.parametrize("name", ["laplace", "gaussian", "geometric", "laplace-sensitivity-2"])
def test_the_query_answer_is_computed_once_per_block_and_the_library_called_per_release(
    name, monkeypatch, diffprivlib
):
    audit = LIB.audit_named(name)
    sums, randomised = [], []
    real_sum = np.sum
    monkeypatch.setattr(np, "sum", lambda *a, **k: sums.append(1) or real_sum(*a, **k))
    mechanisms = diffprivlib.mechanisms
    cls = {"gaussian": mechanisms.Gaussian, "geometric": mechanisms.Geometric}
    cls = cls.get(name, mechanisms.Laplace)
    real_randomise = cls.randomise
    monkeypatch.setattr(
        cls, "randomise", lambda self, v: randomised.append(v) or real_randomise(self, v)
    )
    releases = LIB.sampler_of(audit)(audit.inputs[1], 300, jax.random.key(0))
    assert len(sums) == 1 and len(randomised) == 300  # one sum, 300 library calls
    assert set(randomised) == {float(real_sum(np.clip(audit.inputs[1], -1, 1)))}
    assert len(np.unique(releases)) > 1
