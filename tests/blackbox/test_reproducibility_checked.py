"""Issue 34: a sampler is reported reproducible only if two short runs from one key agree."""

import jax
import numpy as np

import dpaudit
from dpaudit.blackbox import numpy_generator
from dpaudit.blackbox.samplers import ReleaseSource, replays

D0 = np.zeros(5)
D1 = np.array([1.0, 0, 0, 0, 0])
FAST = {"samples": 2000, "select_samples": 1000, "progress": False}
NOTE = "does not use the audit's seed"


def _uses_key(data, n, key):
    return float(np.sum(data)) + numpy_generator(key).laplace(size=n)


def _ignores_key(data, n, key):
    return float(np.sum(data)) + np.random.default_rng().laplace(size=n)


def _ignores_key_with_two_outcomes(data, n, key):
    return np.random.default_rng().random(n) < 0.5


def test_a_sampler_that_ignores_its_key_is_reported_not_reproducible():
    res = dpaudit.blackbox_audit(_ignores_key, D0, D1, (1.0, 0.0), **FAST)
    assert res.reproducible is False
    assert any(NOTE in note for note in res.notes)
    assert res.to_dict()["reproducible"] is False


def test_a_sampler_that_uses_its_key_is_reported_reproducible():
    res = dpaudit.blackbox_audit(_uses_key, D0, D1, (1.0, 0.0), **FAST)
    assert res.reproducible is True
    assert not any(NOTE in note for note in res.notes)


def test_the_replay_check_sees_a_key_ignoring_sampler_of_two_outcomes():
    source = ReleaseSource(_ignores_key_with_two_outcomes, D0, "coin", None)
    assert not replays(source, jax.random.key(0))
    assert replays(ReleaseSource(_uses_key, D0, "laplace", None), jax.random.key(0))
