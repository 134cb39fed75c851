"""Audit specs: validation with one clear line, user mechanisms from files, dataset generators."""

import jax
import numpy as np
import pytest
from spec_fixtures import write_spec

import dpaudit
from dpaudit.io.datasets import generate, generators
from dpaudit.io.spec import (
    SpecError,
    find_specs,
    load_array_file,
    load_callable,
    load_pair,
    load_spec,
    resolve_mechanism,
)

USER_MECHANISM = """
import jax.numpy as jnp, numpyro, numpyro.distributions as dist
from dpaudit import Claim, Mechanism

def build(n=20, epsilon=1.0):
    def model(data):
        numpyro.sample("release", dist.Laplace(jnp.mean(jnp.clip(data, 0, 1)), 1 / (n * epsilon)))
    return Mechanism("user-mean", model, Claim(epsilon=epsilon), params={"n": n})

def not_a_builder(x, y):
    return 3
"""

GOOD = """
expected = "pass"
[mechanism]
path = "user.py:build"
params = {{ n = 20 }}
[claim]
epsilon = {epsilon}
[data]
generator = "points"
[budget]
samples = 1000
"""


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "user.py").write_text(USER_MECHANISM)
    return tmp_path


def test_user_mechanism_from_a_file(folder):
    spec = load_spec(write_spec(folder, GOOD.format(epsilon=1.0)))
    assert spec.name == "spec" and spec.samples == 1000 and spec.expected == "pass"
    assert spec.claim.epsilon == 1.0 and spec.claim.delta == 0.0
    mech = resolve_mechanism(spec)
    assert isinstance(mech, dpaudit.Mechanism) and mech.name == "user-mean"
    d, d_prime = load_pair(spec, mech)
    assert d.shape == (20, 1)
    dpaudit.check_adjacent(d, d_prime)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[mechanism]\nname = 'no-such-mechanism'\n[claim]\nepsilon = 1\n[data]\n"
         "generator = 'points'", "mechanism.name"),
        ("[mechanism]\npath = 'user.py:build'\n[data]\ngenerator = 'points'", "claim"),
        ("[mechanism]\npath = 'user.py:build'\n[claim]\ndelta = 0.1\n[data]\n"
         "generator = 'points'", "claim.epsilon"),
        ("[mechanism]\npath = 'user.py:build'\n[claim]\nepsilon = 0\n[data]\n"
         "generator = 'points'", "claim.epsilon"),
        ("[mechanism]\npath = 'user.py:build'\n[claim]\nepsilon = -1\n[data]\n"
         "generator = 'points'", "claim.epsilon"),
        ("[mechanism]\npath = 'missing.py:build'\n[claim]\nepsilon = 1\n[data]\n"
         "generator = 'points'", "mechanism.path"),
        ("[mechanism]\npath = 'user.py:build'\n[claim]\nepsilon = 1\nadjacency = 'swap'\n"
         "[data]\ngenerator = 'points'", "claim.adjacency"),
        ("[mechanism]\npath = 'user.py:build'\n[claim]\nepsilon = 1\n[data]\n"
         "generator = 'nope'", "data.generator"),
        ("[mechanism]\npath = 'user.py:build'\n[claim]\nepsilon = 1\n[data]\n"
         "files = ['a.npy', 'b.npy']", "data.files"),
        ("[mechanism]\npath = 'user.py:build'\n[claim]\nepsilon = 1\nepsilom = 2\n[data]\n"
         "generator = 'points'", "claim.epsilom"),
        ("[mechanism]\npath = 'user.py:build'\n[claim]\nepsilon = 1\n[data]\n"
         "generator = 'points'\n[budget]\nconfidence = 1.5", "budget.confidence"),
        ("expected = 'fine'\n[mechanism]\npath = 'user.py:build'\n[claim]\nepsilon = 1\n[data]\n"
         "generator = 'points'", "expected"),
        ("[mechanism\n", "not valid TOML"),
    ],
)  # fmt: skip
def test_invalid_specs_name_the_field(folder, text, field):
    with pytest.raises(SpecError) as err:
        load_spec(write_spec(folder, text))
    message = str(err.value)
    assert field in message and "\n" not in message and str(folder) in message


def test_callable_with_the_wrong_signature(folder):
    text = GOOD.format(epsilon=1.0).replace("user.py:build", "user.py:not_a_builder")
    spec = load_spec(write_spec(folder, text))
    with pytest.raises(SpecError, match=r"mechanism\.params: the builder does not accept"):
        resolve_mechanism(spec)
    text = GOOD.format(epsilon=1.0).replace("user.py:build", "user.py:nothing_here")
    with pytest.raises(SpecError, match="defines no 'nothing_here'"):
        resolve_mechanism(load_spec(write_spec(folder, text)))


def test_data_files(folder):
    np.save(folder / "d.npy", np.zeros((20, 1)))
    d_prime = np.zeros((20, 1))
    d_prime[3] = 1.0
    np.save(folder / "d_prime.npy", d_prime)
    text = GOOD.format(epsilon=1.0).replace(
        'generator = "points"', 'files = ["d.npy", "d_prime.npy"]'
    )
    spec = load_spec(write_spec(folder, text))
    _, dp = load_pair(spec, resolve_mechanism(spec))
    np.testing.assert_array_equal(dp, d_prime)


def test_find_specs(folder):
    with pytest.raises(SpecError, match=r"no \*\.toml audit specs"):
        find_specs(folder)
    write_spec(folder, GOOD.format(epsilon=1.0), "a.toml")
    write_spec(folder, GOOD.format(epsilon=2.0), "b.toml")
    assert [p.name for p in find_specs(folder)] == ["a.toml", "b.toml"]
    with pytest.raises(SpecError, match="no such file or folder"):
        find_specs(folder / "nope")


class _Stub:
    name = "stub"
    params = {"n": 7, "tau": 2.0, "grid_size": 30, "n_bins": 3, "thresholds": (1.0, 2.0)}


@pytest.mark.parametrize("name", ["curves", "points", "labelled", "scores", "bits", "categories"])
def test_generators_give_neighbours_at_the_bound(name):
    d, d_prime = generate(name, _Stub(), seed=3)
    dpaudit.check_adjacent(d, d_prime)
    again = generate(name, _Stub(), seed=3)
    for a, b in zip(jax.tree_util.tree_leaves(d), jax.tree_util.tree_leaves(again[0]), strict=True):
        np.testing.assert_array_equal(a, b)
    if name == "curves":
        norms = np.sqrt(np.mean(np.asarray(d) ** 2, axis=1))
        assert d.shape == (7, 30) and np.all(norms <= 2.0)
        assert norms[0] == pytest.approx(2.0, rel=1e-9)  # the replaced record sits at the bound


def test_generator_errors():
    assert set(generators()) >= {"curves", "points", "labelled", "scores", "example"}
    with pytest.raises(ValueError, match="unknown generator"):
        generate("nope", _Stub())
    with pytest.raises(ValueError, match="does not take these parameters"):
        generate("points", _Stub(), colour="red")
    with pytest.raises(ValueError, match="n must be a positive integer"):
        generate("points", _Stub(), n=0)


def test_load_callable_names_the_spec_field(folder):
    build = load_callable(folder / "spec.toml", "user.py:build")
    assert build().name == "user-mean"
    with pytest.raises(SpecError, match=r"spec.toml: blackbox.sampler: user.py defines no 'nope'"):
        load_callable(folder / "spec.toml", "user.py:nope", "blackbox.sampler")


def test_load_array_file_reads_npy_and_npz(tmp_path):
    a = np.arange(3.0)
    np.save(tmp_path / "a.npy", a)
    np.savez(tmp_path / "one.npz", x=a)
    np.savez(tmp_path / "two.npz", x=a, y=2 * a)
    spec = tmp_path / "spec.toml"
    assert np.array_equal(load_array_file(spec, tmp_path / "a.npy"), a)
    assert np.array_equal(load_array_file(spec, tmp_path / "one.npz"), a)
    x, y = load_array_file(spec, tmp_path / "two.npz")
    assert np.array_equal(x, a) and np.array_equal(y, 2 * a)
    with pytest.raises(SpecError, match=r"spec.toml: data.files: cannot read"):
        load_array_file(spec, tmp_path / "missing.npy")
