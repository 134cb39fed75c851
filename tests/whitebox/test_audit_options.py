"""The white-box options record: checked once, frozen, and the same audit as the keywords.

:class:`dpaudit.AuditOptions` holds every keyword argument of :func:`dpaudit.audit`;
``audit(**keywords)`` and ``run_audit(AuditOptions(**keywords))`` must give the same
result record.
"""

from __future__ import annotations

import dataclasses
import inspect

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import dpaudit
from dpaudit import AuditOptions
from dpaudit.whitebox.engine import run_audit

N = 10
DATA, DATA_PRIME = jnp.zeros(N), jnp.zeros(N).at[0].set(1.0)


def _laplace_mean(data):  # scale 1/n: the claimed epsilon 0.5 is violated (true epsilon 1)
    return numpyro.sample("release", dist.Laplace(jnp.mean(data), 1.0 / data.shape[0]))


MECHANISM = dpaudit.Mechanism(
    "laplace-mean",
    _laplace_mean,
    dpaudit.Claim(epsilon=0.5, sensitivity=0.1, sensitivity_norm="l1"),
)

# Every keyword away from its default where it is cheap, so a keyword dropped on the way to
# the record changes the result.
KEYWORDS = {
    "samples": 6_000,
    "seed": 4,
    "confidence": 0.9,
    "epsilons": [0.25, 0.75, 1.5],
    "route": "density",
    "exact": False,
    "compatibility": False,
    "bound_method": "hoeffding",
    "chunk_size": 1_000,
    "keep_samples": 100,
    "discretization": 1e-3,
    "progress": False,
}


def _record(result) -> dict:
    out = result.to_dict()
    out.pop("seconds")
    return out


def test_the_keywords_and_the_record_give_the_same_audit():
    by_keywords = dpaudit.audit(MECHANISM, DATA, DATA_PRIME, **KEYWORDS)
    by_record = run_audit(MECHANISM, DATA, DATA_PRIME, AuditOptions(**KEYWORDS))
    assert _record(by_keywords) == _record(by_record)
    assert by_record.route == "density" and by_record.exact is None
    assert by_record.samples == 6_000 and by_record.seed == 4 and by_record.confidence == 0.9
    assert by_record.diagnostics["chunk_size"] == 1_000
    assert by_record.directions[0].losses.size == 100
    assert list(by_record.curves["epsilons"]) == [0.25, 0.5, 0.75, 1.5]
    other = run_audit(MECHANISM, DATA, DATA_PRIME, AuditOptions(**{**KEYWORDS, "seed": 5}))
    assert _record(other) != _record(by_record)


def test_the_record_defaults_are_the_keyword_defaults():
    parameters = inspect.signature(dpaudit.audit).parameters
    fields = dataclasses.fields(AuditOptions)
    assert {f.name for f in fields} == {
        name for name, p in parameters.items() if p.kind is p.KEYWORD_ONLY
    } - {"method"}
    for field in fields:
        assert field.default == parameters[field.name].default, field.name


def test_the_record_is_frozen_and_normalised():
    options = AuditOptions(
        samples=np.int64(5000), epsilons=np.array([0.5, 1.0]), confidence=np.float64(0.9)
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.samples = 10
    assert type(options.samples) is int and options.epsilons == (0.5, 1.0)
    assert type(options.confidence) is float


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"samples": 1}, "samples must be an integer >= 2"),
        ({"samples": 2.5}, "samples must be an integer >= 2"),
        ({"confidence": 0}, "confidence must lie strictly between 0 and 1"),
        ({"route": "fast"}, "route must be 'auto' or one of"),
        ({"bound_method": "chebyshev"}, "bound_method must be one of"),
        ({"keep_samples": -1}, "keep_samples must be >= 0"),
        ({"discretization": float("nan")}, "discretization must be a finite number > 0"),
        ({"chunk_size": 0}, "chunk_size must be a positive integer"),
        ({"chunk_size": True}, "chunk_size must be a positive integer"),
        ({"epsilons": [-1.0]}, "epsilons must be a list of finite numbers >= 0"),
        ({"epsilons": [[0.5]]}, "epsilons must be a list of finite numbers >= 0"),
    ],
)
def test_each_bad_option_gets_one_sentence_when_the_record_is_built(options, match):
    with pytest.raises(ValueError, match=match) as err:
        AuditOptions(**options)
    text = str(err.value)
    assert "\n" not in text and text.endswith(".") and ". " not in text, text


def test_run_audit_takes_only_the_record():
    with pytest.raises(TypeError, match=r"options must be a dpaudit\.AuditOptions"):
        run_audit(MECHANISM, DATA, DATA_PRIME, {"samples": 1000})
