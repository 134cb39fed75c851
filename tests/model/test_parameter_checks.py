"""numpyro's checks of constant distribution parameters made in numpy: same answers, no program."""

import jax
import numpy as np
import numpyro.distributions as dist
import pytest

from dpaudit.model.parameter_checks import host_parameter_checks

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


def _device(*values):
    return jax.device_put(np.asarray(values, dtype=np.float64))


CASES = {
    "laplace": lambda v: dist.Laplace(_device(0.0, 1.0), _device(1.0, v)),
    "normal-event": lambda v: dist.Normal(_device(0.0, 0.0), _device(v, 1.0)).to_event(1),
    "mvn-tril": lambda v: dist.MultivariateNormal(
        _device(0.0, 0.0), scale_tril=jax.device_put(np.array([[1.0, 0.0], [0.5, v]]))
    ),
    "bernoulli": lambda v: dist.Bernoulli(probs=_device(0.5, v)),
    "uniform-scalar": lambda v: dist.Exponential(v),
}


def _refusal(build, value):
    try:
        build(value)
    except ValueError as err:
        return str(err)
    return None


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("value", [0.5, -1.0, float("nan"), float("inf"), 1.5])
def test_the_same_parameters_are_refused_with_the_same_sentence(name, value):
    numpyro_says = _refusal(CASES[name], value)
    with host_parameter_checks():
        host_says = _refusal(CASES[name], value)
    assert host_says == numpyro_says


def test_constant_parameters_are_checked_without_compiling():
    compiled = []

    def listener(event, duration, **kwargs):
        compiled.append(event == BACKEND_COMPILE)

    values = [_device(0.25, 0.5, 0.75), jax.device_put(np.eye(3))]
    jax.clear_caches()
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        with host_parameter_checks():
            dist.Laplace(values[0], values[0]).to_event(1)
            dist.Bernoulli(probs=values[0])
            key = jax.ShapeDtypeStruct((2,), np.uint32)  # traced: a data-dependent loc
            jax.eval_shape(lambda k, x: dist.Normal(x, values[0]).sample(k), key, values[0])
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert sum(compiled) == 0, f"{sum(compiled)} program(s) compiled"


def test_numpyro_method_is_restored_after_the_block():
    from numpyro.distributions.distribution import Distribution

    before = Distribution.validate_args
    with host_parameter_checks(), host_parameter_checks():
        assert Distribution.validate_args is not before
    assert Distribution.validate_args is before
