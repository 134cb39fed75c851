"""The black-box options records: checked once, frozen, and the same audit as the keywords.

:class:`BlackBoxOptions` holds every keyword argument of ``blackbox_audit`` and
:class:`ClassifierOptions` the classifier settings; ``blackbox_audit(**keywords)`` and
``run_blackbox_audit(BlackBoxOptions(**keywords))`` must give the same result record.
"""

from __future__ import annotations

import dataclasses
import inspect
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpaudit
from dpaudit.blackbox import (
    BlackBoxOptions,
    ClassifierOptions,
    blackbox_audit,
    run_blackbox_audit,
)
from dpaudit.blackbox.statistics import classifier_settings


def laplace_count(data, n, key):  # claims epsilon = 0.5, really epsilon = 1
    return jnp.sum(data) + jax.random.laplace(key, (n,))


D, D_PRIME = jnp.zeros(5), jnp.zeros(5).at[0].set(1.0)
CLAIM = dpaudit.Claim(epsilon=0.5)


def _record(result) -> dict:
    """The JSON record without the wall and CPU times."""
    out = result.to_dict()
    out.pop("seconds"), out.pop("timings")
    return out


# Every keyword away from its default where it is cheap, so a keyword dropped on the way to
# the record changes the result.
KEYWORDS = {
    "statistic": "logistic",
    "samples": 20_000,
    "select_samples": 4_000,
    "confidence": 0.9,
    "objective": "epsilon",
    "seed": 5,
    "chunk_size": 5_000,
    "classifier_options": {"l2": 1e-2},
    "name": "laplace-count",
    "progress": False,
}


def test_the_keywords_and_the_record_give_the_same_audit():
    by_keywords = blackbox_audit(laplace_count, D, D_PRIME, CLAIM, **KEYWORDS)
    by_record = run_blackbox_audit(laplace_count, D, D_PRIME, CLAIM, BlackBoxOptions(**KEYWORDS))
    assert _record(by_keywords) == _record(by_record)
    assert by_record.mechanism == "laplace-count" and by_record.statistic == "logistic"
    assert by_record.samples == 20_000 and by_record.samples_select == 4_000
    assert by_record.confidence == 0.9 and by_record.seed == 5
    # the typed records keep the JSON record's keys in their documented order
    record = by_record.to_dict()
    assert list(record["event"]) == [
        "direction", "pair", "statistic", "threshold", "tie_probability", "counts", "n",
        "p_lower", "q_upper", "selection", "releases", "bound",
    ]  # fmt: skip
    assert list(record["event"]["counts"]) == list(record["event"]["releases"]) == ["P", "Q"]
    assert list(record["event"]["selection"]) == ["p_hat", "q_hat", "epsilon_hat", "n", "pairs"]
    assert list(record["event"]["bound"]) == ["method", "confidence", "theta_lower", "ratio_lower"]
    assert list(record["strength"]) == [
        "epsilon", "delta", "q", "epsilon_any_event", "gaussian_mu", "gaussian_epsilon",
        "gaussian_rho",
    ]  # fmt: skip
    assert list(record["timings"]) == [
        "selection", "certification", "selection_cpu", "certification_cpu"
    ]  # fmt: skip
    # the seed is used: another seed draws other releases
    other = run_blackbox_audit(
        laplace_count, D, D_PRIME, CLAIM, BlackBoxOptions(**{**KEYWORDS, "seed": 6})
    )
    assert other.event.counts != by_record.event.counts


def test_the_record_defaults_are_the_keyword_defaults():
    parameters = inspect.signature(blackbox_audit).parameters
    fields = dataclasses.fields(BlackBoxOptions)
    assert {f.name for f in fields} == {
        name for name, p in parameters.items() if p.kind is p.KEYWORD_ONLY
    } - {"method"}
    for field in fields:
        assert field.default == parameters[field.name].default, field.name
    classifier = inspect.signature(ClassifierOptions).parameters
    assert {name: p.default for name, p in classifier.items()} == {
        "l2": 1e-4, "hidden": (32, 16), "steps": 2000, "batch": 1024, "learning_rate": 1e-2
    }  # fmt: skip


def test_the_records_are_frozen():
    options = BlackBoxOptions(samples=1000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.samples = 2000
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.classifier_options.l2 = 1.0


def test_the_record_normalises_what_it_is_given():
    options = BlackBoxOptions(
        samples=np.int64(50_000), confidence=1 - 0.05, classifier_options={"hidden": [4, 2]}
    )
    assert type(options.samples) is int and options.select == 10_000
    assert BlackBoxOptions(samples=500_000).select == 50_000
    assert options.classifier_options == ClassifierOptions(hidden=(4, 2))
    assert options.classifier_options.hidden == (4, 2)
    assert options.kinds == ("logistic", "float")  # float: an arm only when its fit is found
    given = ClassifierOptions(l2=1e-3)
    assert BlackBoxOptions(classifier_options=given).classifier_options is given
    assert classifier_settings(None) == ClassifierOptions()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"learning_rate": math.inf}, r"classifier_options\['learning_rate'\] must be a finite number > 0"),
        ({"learning_rate": math.nan}, r"classifier_options\['learning_rate'\] must be a finite number > 0"),
        ({"learning_rate": 0}, r"classifier_options\['learning_rate'\] must be a finite number > 0"),
        ({"learning_rate": -1e-3}, r"classifier_options\['learning_rate'\] must be a finite number > 0"),
        ({"learning_rate": "fast"}, r"classifier_options\['learning_rate'\] must be a finite number > 0"),
        ({"learning_rate": True}, r"classifier_options\['learning_rate'\] must be a finite number > 0"),
        ({"l2": -1.0}, r"classifier_options\['l2'\] must be a finite number >= 0"),
        ({"l2": math.nan}, r"classifier_options\['l2'\] must be a finite number >= 0"),
        ({"l2": math.inf}, r"classifier_options\['l2'\] must be a finite number >= 0"),
        ({"hidden": []}, r"classifier_options\['hidden'\] must be a non-empty list of layer widths >= 1"),
        ({"hidden": [0]}, r"classifier_options\['hidden'\] must be a non-empty list"),
        ({"hidden": (8, -1)}, r"classifier_options\['hidden'\] must be a non-empty list"),
        ({"hidden": [3.5]}, r"classifier_options\['hidden'\] must be a non-empty list"),
        ({"hidden": [True]}, r"classifier_options\['hidden'\] must be a non-empty list"),
        ({"hidden": "32"}, r"classifier_options\['hidden'\] must be a non-empty list"),
        ({"steps": 0}, r"classifier_options\['steps'\] must be an integer >= 1"),
        ({"steps": 1.5}, r"classifier_options\['steps'\] must be an integer >= 1"),
        ({"batch": 0}, r"classifier_options\['batch'\] must be an integer >= 1"),
    ],
)  # fmt: skip
def test_each_bad_classifier_option_gets_one_sentence(options, match):
    for build in (lambda: ClassifierOptions(**options), lambda: classifier_settings(options)):
        with pytest.raises(ValueError, match=match) as err:
            build()
        _one_sentence(err)
    ClassifierOptions(l2=0, learning_rate=1e-9, hidden=[1], steps=1, batch=1)  # the edges pass


def test_classifier_options_of_the_wrong_kind_get_one_sentence():
    with pytest.raises(ValueError, match=r"unknown classifier_options \['depth'\]") as err:
        classifier_settings({"depth": 3})
    _one_sentence(err)
    with pytest.raises(TypeError, match="classifier_options must be a dict") as err:
        BlackBoxOptions(classifier_options=[("l2", 1.0)])
    _one_sentence(err)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"statistic": "svm"}, ValueError, "statistic must be one of"),
        ({"objective": "power"}, ValueError, "objective must be one of"),
        ({"statistic": "model"}, ValueError, "statistic='model' needs reference="),
        ({"reference": "laplace"}, TypeError, "reference must be a dpaudit.Mechanism"),
        ({"features": "abs"}, TypeError, "features must be a callable"),
        ({"samples": 0}, ValueError, "samples must be a positive integer"),
        ({"select_samples": 3}, ValueError, "select_samples must be >= 4"),
        ({"select_samples": 0}, ValueError, "select_samples must be a positive integer"),
        ({"confidence": 1.0}, ValueError, r"confidence must be in \(0, 1\)"),
        ({"chunk_size": 0}, ValueError, "chunk_size must be a positive integer"),
        ({"stopping": "anytime"}, ValueError, "stopping must be one of"),
        ({"stopping": "sequential", "executor": "ray"}, ValueError, "drop executor="),
    ],
)
def test_each_bad_option_gets_one_sentence_when_the_record_is_built(options, error, match):
    with pytest.raises(error, match=match) as err:
        BlackBoxOptions(**options)
    _one_sentence(err)


def test_run_blackbox_audit_takes_only_the_record():
    with pytest.raises(TypeError, match=r"options must be a dpaudit\.blackbox\.BlackBoxOptions"):
        run_blackbox_audit(laplace_count, D, D_PRIME, CLAIM, {"samples": 1000})


def _one_sentence(err) -> None:
    text = str(err.value)
    assert "\n" not in text and text.endswith(".") and ". " not in text.replace("e.g. ", ""), text
