"""Issue 34: the Python black-box API checks releases and features like the spec route.

An infinite release possible under one dataset only is counted as an outcome of its own
(a certified violation); complex releases and features that are NaN or not one row per
release are refused with one sentence instead of a powerless result or a crash.
"""

import numpy as np
import pytest

import dpaudit
from dpaudit.blackbox import numpy_generator

D0 = np.zeros(5)
D1 = np.array([1.0, 0, 0, 0, 0])
CLAIM = dpaudit.Claim(epsilon=1.0)
FAST = {"samples": 4000, "select_samples": 2000, "progress": False}


def _half_infinite_under_d_prime(data, n, key):
    g = numpy_generator(key)
    x = g.normal(size=n)
    if float(np.sum(data)) > 0:  # D': +inf half the time; D: never
        x = np.where(g.random(n) < 0.5, np.inf, x)
    return x


def _laplace(data, n, key):
    return float(np.sum(data)) + numpy_generator(key).laplace(size=n)


def test_an_infinite_release_under_one_dataset_only_is_a_certified_violation():
    res = dpaudit.blackbox_audit(_half_infinite_under_d_prime, D0, D1, CLAIM, **FAST)
    assert res.verdict == "violation"
    assert res.statistic == "infinite"
    assert res.event.counts.Q == 0 and res.event.counts.P > 1000
    assert res.epsilon_lower > 5.0
    assert any("infinite privacy loss" in note for note in res.notes)


def test_infinite_releases_of_both_datasets_alike_are_no_violation():
    def both(data, n, key):
        g = numpy_generator(key)
        return np.where(g.random(n) < 0.5, np.inf, g.normal(size=n))

    res = dpaudit.blackbox_audit(both, D0, D1, CLAIM, **FAST)
    assert res.verdict == "inconclusive"


def test_complex_releases_are_refused():
    def complex_valued(data, n, key):
        return np.zeros(n) + 1j

    with pytest.raises(TypeError, match=r"not real numbers \(dtype complex128\)") as err:
        dpaudit.blackbox_audit(complex_valued, D0, D1, CLAIM, **FAST)
    assert len(str(err.value).splitlines()) == 1


def test_complex_parts_of_a_multi_output_release_are_refused():
    def two_parts(data, n, key):
        return np.zeros(n), np.zeros(n) + 1j

    with pytest.raises(
        TypeError, match=r"a part of the releases .* not real numbers \(dtype complex128\)"
    ):
        dpaudit.blackbox_audit(two_parts, D0, D1, CLAIM, **FAST)


@pytest.mark.parametrize(
    ("features", "error", "match"),
    [
        (lambda x: np.full((x.shape[0], 2), np.nan), ValueError, "contain NaN values"),
        (lambda x: np.zeros((3, 2)), ValueError, r"shape \(3, 2\) when asked for"),
        (lambda x: np.zeros((0, 2)), ValueError, r"shape \(0, 2\) when asked for"),
        (lambda x: np.asarray(x).reshape(-1, 1)[:-1], ValueError, "when asked for"),
        (lambda x: np.zeros((x.shape[0], 2)) + 1j, TypeError, r"dtype complex128"),
    ],
)
def test_bad_features_are_refused_with_one_sentence(features, error, match):
    with pytest.raises(error, match=match) as err:
        dpaudit.blackbox_audit(_laplace, D0, D1, CLAIM, features=features, **FAST)
    assert len(str(err.value).splitlines()) == 1
