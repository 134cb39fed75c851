"""The pre-audit model checks of a white-box spec: one sentence naming ``mechanism``."""

from pathlib import Path

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from dpaudit import Claim, Mechanism
from dpaudit.io.spec.resolve import check_model_runs, check_model_traces
from dpaudit.io.spec.schema import SpecError

PAIR = (jnp.zeros((3, 1)), jnp.ones((3, 1)))
SPEC = Path("spec.toml")


def _mechanism(law):
    def model(data):
        numpyro.sample("release", law(data))

    return Mechanism("m", model, Claim(epsilon=1.0))


@pytest.mark.parametrize("check", [check_model_runs, check_model_traces])
def test_a_failing_model_is_blamed_on_mechanism(check):
    with pytest.raises(SpecError) as err:
        check(SPEC, _mechanism(lambda d: dist.Delta(d[:, 0] + jnp.zeros(2))), PAIR)
    message = str(err.value)
    assert message.startswith("spec.toml: mechanism: the model fails on D (")
    assert message.endswith("check the data's shape and the model's parameters and site names.")


def test_an_infinite_release_is_refused_when_run():
    with pytest.raises(SpecError) as err:
        check_model_runs(SPEC, _mechanism(lambda d: dist.LogNormal(d[:, 0] + 1e3, 1.0)), PAIR)
    assert str(err.value) == (
        "spec.toml: mechanism: the model draws a release that is not a finite real number on D "
        "(dtype float64, e.g. [inf inf inf]); check its location and scale on these data."
    )


@pytest.mark.parametrize("check", [check_model_runs, check_model_traces])
def test_a_complex_release_is_refused(check):
    with pytest.raises(SpecError, match=r"not a (finite )?real number on D \(dtype complex128"):
        check(SPEC, _mechanism(lambda d: dist.Delta(d[:, 0] + 1j)), PAIR)


def test_a_traced_complex_release_names_its_dtype_only():
    with pytest.raises(SpecError) as err:
        check_model_traces(SPEC, _mechanism(lambda d: dist.Delta(d[:, 0] + 1j)), PAIR)
    assert str(err.value) == (
        "spec.toml: mechanism: the model draws a release that is not a real number on D "
        "(dtype complex128); check its location and scale on these data."
    )


def test_a_parameter_computed_from_the_data_is_checked_when_run():
    """numpyro cannot check a parameter computed from traced data; the compiled draw
    checks it inside its program, and the eager draw then names it."""
    with pytest.raises(SpecError) as err:
        check_model_runs(SPEC, _mechanism(lambda d: dist.Laplace(0.0, d[:, 0] - 1.0)), PAIR)
    assert str(err.value) == (
        "spec.toml: mechanism: the model fails on D (ValueError: Laplace distribution got "
        "invalid scale parameter.); check the data's shape and the model's parameters and "
        "site names."
    )


def test_a_model_that_reads_its_data_values_is_run_eagerly():
    """A model that converts its data to numpy cannot be compiled: it is drawn op by op."""

    def law(d, big=1.0):
        return dist.Laplace(big * (1.0 + 9.0 * float(np.mean(np.asarray(d)))), 1.0)

    check_model_runs(SPEC, _mechanism(law), PAIR)
    with pytest.raises(SpecError, match=r"fails on D' \(ValueError: Laplace .* invalid loc"):
        check_model_runs(SPEC, _mechanism(lambda d: law(d, big=1e308)), PAIR)  # 1e309 on D'


def _counting_mechanism(calls, read_values=False):
    def model(data):
        calls.append(np.shape(data))
        loc = float(np.mean(np.asarray(data))) if read_values else jnp.mean(data)
        numpyro.sample("release", dist.Laplace(loc, 1.0))

    return Mechanism("m", model, Claim(epsilon=1.0))


@pytest.mark.parametrize(
    ("pair", "traces"),
    [
        ((np.zeros((3, 1)), np.ones((3, 1))), 1),  # D' shaped as D: one trace for both
        ((np.zeros((3, 1)), np.ones((2, 1))), 2),  # add-remove: one per shape
    ],
)
def test_validate_traces_a_model_once_per_shape_of_its_data(pair, traces):
    calls = []
    check_model_traces(SPEC, _counting_mechanism(calls), pair)
    assert len(calls) == traces, calls


def test_a_model_that_reads_its_data_values_is_still_checked_on_each_dataset():
    calls = []
    check_model_traces(SPEC, _counting_mechanism(calls, read_values=True), PAIR)
    assert len(calls) >= 2  # the abstract trace fails; each dataset is traced (or run)
