"""Real implementations: per-call samplers, seeds, scalar data, categories, multi-output releases."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import dpaudit
from dpaudit.blackbox import blackbox_audit, per_call

KW = {"samples": 4000, "select_samples": 4000, "seed": 0, "progress": False}


def laplace_unseeded(data):
    """A library-style primitive: one input, one release, its own randomness."""
    return float(data) + np.random.laplace(scale=1.0)  # noqa: NPY002 (unseeded on purpose)


def laplace_seeded(data, seed):
    return float(data) + np.random.default_rng(seed).laplace(scale=1.0)


def randomized_response(data, rng):
    """Categorical output: a string."""
    truth = bool(data)
    return ("yes" if truth else "no") if rng.random() < 0.9 else ("no" if truth else "yes")


def test_an_unseeded_per_call_sampler_is_audited_with_a_note():
    res = blackbox_audit(laplace_unseeded, 0.0, 1.0, dpaudit.Claim(0.5), **KW)
    assert res.verdict == "violation" and not res.reproducible
    assert any("does not use the audit's seed" in n for n in res.notes)
    assert any("datasets are scalars" in n for n in res.notes)
    assert res.to_dict()["reproducible"] is False


def test_a_seeded_per_call_sampler_is_reproducible():
    sampler = per_call(laplace_seeded, seed="int")
    a = blackbox_audit(sampler, 0.0, 1.0, dpaudit.Claim(0.5), **KW)
    b = blackbox_audit(sampler, 0.0, 1.0, dpaudit.Claim(0.5), **KW)
    assert a.reproducible and a.epsilon_lower == b.epsilon_lower and a.verdict == "violation"


def test_string_outputs_are_mapped_to_categories():
    """Randomized response with p = 0.9 (true epsilon log 9 = 2.2) claimed at epsilon 1."""
    sampler = per_call(randomized_response, seed="generator")
    res = blackbox_audit(sampler, 0.0, 1.0, dpaudit.Claim(1.0), **KW)
    assert res.verdict == "violation" and 1.0 < res.epsilon_lower <= np.log(9)


def test_tuple_and_dict_releases_are_one_multi_output_release():
    def batch(data, n, key):
        k1, k2 = jax.random.split(key)
        shift = float(np.sum(data))
        return {
            "mean": shift + jax.random.laplace(k1, (n,)),
            "count": jax.random.normal(k2, (n, 2)),
        }

    res = blackbox_audit(batch, np.zeros(2), np.array([3.0, 0.0]), dpaudit.Claim(1.0), **KW)
    assert res.verdict == "violation"

    def single(data, seed):
        rng = np.random.default_rng(seed)
        return (float(data) + rng.laplace(), "tag")

    small = {**KW, "samples": 1000, "select_samples": 1000}
    res = blackbox_audit(per_call(single, seed="int"), 0.0, 3.0, dpaudit.Claim(1.0), **small)
    assert res.verdict == "violation"


def test_a_multi_output_sampler_changing_shape_gets_one_sentence():
    calls = []

    def sampler(data, n, key):
        calls.append(n)
        return (np.zeros(n), np.zeros((n, 1 if len(calls) == 1 else 2)))

    with pytest.raises(ValueError, match="must return the same parts of the same shapes"):
        blackbox_audit(sampler, np.zeros(1), np.ones(1), dpaudit.Claim(1.0), **KW)


def test_a_failing_sampler_is_named_and_keeps_its_error_type():
    def diffprivlib_like(data, n, key):
        raise TypeError("random_state must be an int or RandomState")

    with pytest.raises(TypeError, match=r"sampler 'diffprivlib_like' failed.*random_state"):
        blackbox_audit(diffprivlib_like, np.zeros(1), np.ones(1), dpaudit.Claim(1.0), **KW)


def test_two_argument_samplers_must_say_what_their_seed_is():
    with pytest.raises(TypeError, match=r"per_call\(f, seed='int'\)"):
        blackbox_audit(laplace_seeded, 0.0, 1.0, dpaudit.Claim(1.0), **KW)
    with pytest.raises(ValueError, match="seed"):
        per_call(laplace_seeded, seed="numpy")


@pytest.mark.slow
def test_a_process_pool_gives_the_same_kind_of_result():
    sampler = per_call(laplace_seeded, seed="int", processes=2)
    res = blackbox_audit(sampler, 0.0, 1.0, dpaudit.Claim(0.5), **KW)
    assert res.verdict == "violation" and res.reproducible


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"learning_rate": float("nan")}, "learning_rate"),
        ({"hidden": []}, "hidden"),
        ({"steps": 0}, "steps"),
        ({"l2": -1.0}, "l2"),
    ],
)
def test_bad_classifier_options_get_one_sentence(options, match):
    with pytest.raises(ValueError, match=match):
        blackbox_audit(
            laplace_unseeded, 0.0, 1.0, dpaudit.Claim(1.0), classifier_options=options, **KW
        )


def test_features_returning_nan_get_one_sentence():
    def features(x):
        return np.full((x.shape[0], 1), np.nan)

    with pytest.raises(ValueError, match="NaN"):
        blackbox_audit(laplace_unseeded, 0.0, 1.0, dpaudit.Claim(1.0), features=features, **KW)


@pytest.mark.parametrize(
    "outputs", [[0.5, 1.0, -2.25], [1, 2, 3], [1, 2.5], [np.float64(1.0), np.float64(2.0)]]
)
def test_plain_numbers_stack_as_np_stack_stacks_them(outputs):
    values = iter(outputs)
    got = per_call(lambda data: next(values))(None, len(outputs), jax.random.key(0))
    want = np.stack([np.asarray(o) for o in outputs])
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)


class _CountedLaplace:
    """A seeded per-call Laplace release that counts its library calls (one per release)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, data, rng):
        self.calls += 1
        return float(data) + rng.laplace()


@pytest.mark.parametrize("delta", [0.0, 1e-3])  # a Poisson and a fixed certification count
def test_a_per_call_sampler_is_called_once_per_release_the_audit_uses(delta):
    # probe (2), pilot (2 x 64, replayed), selection (select per dataset), and exactly the
    # certification releases counted: a last partial chunk is not drawn whole and cut
    # (a Poisson count of ~4000 in a chunk planned for 4000 + 4 sds drew ~250 extra each)
    counted = _CountedLaplace()
    sampler = per_call(counted, seed="generator")
    res = blackbox_audit(sampler, 0.0, 1.0, dpaudit.Claim(0.5, delta), **KW)
    used = res.event.releases.P + res.event.releases.Q
    assert counted.calls == 2 + 2 * 64 + 2 * KW["select_samples"] + used
    again = _CountedLaplace()
    same = blackbox_audit(
        per_call(again, seed="generator"), 0.0, 1.0, dpaudit.Claim(0.5, delta), **KW
    )
    assert same.epsilon_lower == res.epsilon_lower  # reproducible, as before


def test_a_per_call_sampler_in_processes_keeps_whole_chunks():
    # blocks split across processes are not prefix-stable: whole chunks, as any batch sampler
    assert per_call(laplace_seeded, seed="int").prefix_stable
    assert not per_call(laplace_seeded, seed="int", processes=2).prefix_stable
