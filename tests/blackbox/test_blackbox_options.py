"""Pure-delta claims (epsilon = 0), the ``stopping`` option in specs, and classifier options.

The pure-delta mechanism: a coin with ``P(1) = 1/2 + t`` on ``D`` and ``1/2`` on
``D'``. Its hockey-stick divergence at epsilon = 0 is the total variation ``t``, so
it is ``(0, t)``-DP exactly and no better: a claim ``(0, t)`` is correct (tight),
``(0, t / 4)`` is violated.
"""

from __future__ import annotations

import dataclasses
import json
import math

import jax
import numpy as np
import pytest
from spec_fixtures import SAMPLER, write_spec

import dpaudit
from dpaudit.blackbox import blackbox_audit
from dpaudit.io.spec import SpecError, load_spec

T = 0.2


def shifted_coin(data, n, key):
    return (jax.random.uniform(key, (n,)) < 0.5 + T * float(data[0])).astype(float)


KW = {"samples": 40_000, "select_samples": 4000, "seed": 2, "progress": False}


def test_claim_accepts_epsilon_zero_only_with_a_positive_delta():
    claim = dpaudit.Claim(epsilon=0, delta=0.1)
    assert claim.epsilon == 0.0 and not claim.pure
    with pytest.raises(ValueError, match="epsilon = 0 needs a delta > 0"):
        dpaudit.Claim(epsilon=0)


def test_a_pure_delta_claim_is_audited_black_box():
    pair = (np.ones(1), np.zeros(1))
    correct = blackbox_audit(shifted_coin, *pair, dpaudit.Claim(0, T), **KW)
    assert correct.verdict == "inconclusive"
    assert 0.1 < correct.delta_lower <= T  # the TV, certified from below
    wrong = blackbox_audit(shifted_coin, *pair, dpaudit.Claim(0, T / 4), **KW)
    assert wrong.verdict == "violation" and wrong.epsilon_lower > 0
    assert T / 4 < wrong.delta_lower <= T and math.isfinite(wrong.detectable_epsilon)


def test_the_white_box_route_refuses_epsilon_zero_in_one_sentence():
    mech = dpaudit.build("laplace-mean", epsilon=1.0, n=4, dim=1)
    mech = dataclasses.replace(mech, claim=dpaudit.Claim(0, 0.1))
    with pytest.raises(ValueError, match="black-box") as err:
        dpaudit.audit(mech, np.zeros((4, 1)), np.eye(4, 1), samples=100)
    assert "\n" not in str(err.value)


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "sampler.py").write_text(SAMPLER)
    return tmp_path


def _spec(claim: str, blackbox: str = '[blackbox]\nsampler = "sampler.py:laplace_mean"\n') -> str:
    return f"{blackbox}[claim]\n{claim}\n[data]\ngenerator = 'points'\n"


def test_specs_take_epsilon_zero_black_box_only_and_the_stopping_option(folder):
    spec = load_spec(write_spec(folder, _spec("epsilon = 0\ndelta = 0.1")))
    assert spec.claim.epsilon == 0 and spec.blackbox.stopping == "fixed"
    with pytest.raises(SpecError, match=r"claim\.epsilon: epsilon = 0 .* black-box only"):
        load_spec(write_spec(folder, _spec("epsilon = 0\ndelta = 0.1", "[mechanism]\n"
                                           'name = "laplace-mean"\n')))  # fmt: skip
    with pytest.raises(SpecError, match=r"claim\.epsilon"):
        load_spec(write_spec(folder, _spec("epsilon = 0")))
    seq = '[blackbox]\nsampler = "sampler.py:laplace_mean"\nstopping = "sequential"\n'
    assert load_spec(write_spec(folder, _spec("epsilon = 1", seq))).blackbox.stopping == (
        "sequential"
    )
    bad = seq.replace("sequential", "anytime")
    with pytest.raises(SpecError, match=r"blackbox\.stopping"):
        load_spec(write_spec(folder, _spec("epsilon = 1", bad)))


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"learning_rate": math.inf}, "'learning_rate'.*finite"),
        ({"learning_rate": 0.0}, "'learning_rate'.*> 0"),
        ({"learning_rate": -0.1}, "'learning_rate'"),
        ({"learning_rate": "fast"}, "'learning_rate'"),
        ({"l2": math.nan}, "'l2'"),
        ({"l2": math.inf}, "'l2'.*finite"),
        ({"hidden": [0]}, "'hidden'"),
        ({"hidden": (32, -1)}, "'hidden'"),
        ({"hidden": "32"}, "'hidden'"),
        ({"hidden": [3.5]}, "'hidden'"),
    ],
)
def test_classifier_options_get_one_sentence_naming_the_option(options, match):
    with pytest.raises(ValueError, match=match) as err:
        blackbox_audit(shifted_coin, np.ones(1), np.zeros(1), dpaudit.Claim(1.0),
                       classifier_options=options, samples=100, progress=False)  # fmt: skip
    assert "\n" not in str(err.value)


@pytest.mark.slow
def test_a_sequential_spec_run_records_when_it_stopped(folder, tmp_path):
    from spec_fixtures import BLACK_BOX_SPEC

    from dpaudit.cli.main import main

    text = BLACK_BOX_SPEC.format(expected='expected = "violation"', scale=0.25).replace(
        'method = "logistic"', 'method = "logistic"\nstopping = "sequential"'
    )
    out = tmp_path / "r.json"
    assert main(["run", str(write_spec(folder, text)), "--json", str(out)]) == 0
    (record,) = json.loads(out.read_text())["audits"]
    stopping = record["details"]["stopping"]  # the result's to_dict(), in the run's JSON
    assert record["verdict"] == "violation" and stopping["stopped_early"]
    assert record["samples"] == stopping["releases"] < 20000
    assert any(note.startswith("Sequential certification") for note in record["notes"])
