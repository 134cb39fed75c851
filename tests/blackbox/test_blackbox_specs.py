"""Black-box audit specs: validation of every ``[blackbox]`` field, CLI runs, reports, shipped suite.

Statistical checks (the shipped numpy implementations against their declared
models) use fixed seeds and fail spuriously with probability at most
``TEST_FAILURE_RATE`` for a random seed (Bonferroni over the checks of a test).
Audits run at small budgets; their verdicts are far from the decision boundary
(a Laplace scale halved doubles the true epsilon).
"""

import dataclasses
import importlib.util
import json
import math
import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE
from spec_fixtures import BLACK_BOX_SPEC as SPEC
from spec_fixtures import SAMPLER, write_spec
from spec_fixtures import USER as WHITE_USER
from spec_fixtures import WHITE_BOX_SPEC as WHITE_SPEC

import dpaudit
from dpaudit.blackbox.result import PerLaw
from dpaudit.cli.main import main
from dpaudit.io.report import AuditOutcome, result_record, score_histogram
from dpaudit.io.spec import (
    BLACKBOX_VERDICTS,
    SpecError,
    blackbox_features,
    find_specs,
    load_pair,
    load_spec,
    resolve_blackbox,
    resolve_mechanism,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "audits" / "blackbox"


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "audits"
    folder.mkdir()
    (folder / "sampler.py").write_text(SAMPLER)
    return folder


# ----------------------------------------------------------------------- loading


def test_a_sampler_spec_loads_and_resolves(folder):
    spec = load_spec(write_spec(folder, SPEC.format(expected='expected = "violation"', scale=0.5)))
    assert spec.kind == "black-box" and spec.expected == "violation"
    assert spec.samples == 20000 and spec.select_samples == 4000
    bb = spec.blackbox
    assert bb.method == "logistic" and bb.features == "values" and bb.objective == "auto"
    assert bb.sampler.endswith("sampler.py:laplace_mean") and bb.mechanism is None
    assert spec.mechanism == bb.sampler and dict(spec.params) == {"scale_factor": 0.5}
    target = resolve_blackbox(spec)
    assert target.name == "sampler.py:laplace_mean" and target.reference is None
    d, d_prime = load_pair(spec, target.public)  # n from data.params
    assert d.shape == (20, 1)
    dpaudit.check_adjacent(d, d_prime)
    x = np.asarray(target.sampler(d, 5, jax.random.key(0)))
    assert x.shape == (5,)
    with pytest.raises(SpecError, match=r"blackbox\.sampler: a plain sampler"):
        resolve_mechanism(spec)


def test_auto_method_and_the_mechanism_table_as_reference(folder):
    text = SPEC.format(expected="", scale=1.0).replace('method = "logistic"\n', "")
    assert load_spec(write_spec(folder, text)).blackbox.method == "logistic"  # no reference
    with_ref = text.replace("[claim]", 'reference = "laplace-mean"\n[claim]')
    bb = load_spec(write_spec(folder, with_ref)).blackbox
    assert bb.method == "model" and bb.reference == "laplace-mean"
    assert not bb.reference_in_mechanism
    declared = '[mechanism]\nname = "laplace-mean"\nparams = { n = 20 }\n' + text
    spec = load_spec(write_spec(folder, declared))
    assert spec.blackbox.method == "model" and spec.blackbox.reference_in_mechanism
    assert spec.mechanism == "laplace-mean" and dict(spec.params) == {"n": 20}
    target = resolve_blackbox(spec)
    assert target.reference.name == "laplace-mean" and target.reference.params["n"] == 20
    assert resolve_mechanism(spec).name == "laplace-mean"
    # generators read the reference's public parameters, the sampler's params on top
    assert target.public.params["n"] == 20 and target.public.params["scale_factor"] == 1.0


def test_a_catalogue_model_sampled_as_a_black_box():
    spec = load_spec(SHIPPED / "iclp-unscaled-sigma-kl.toml")
    target = resolve_blackbox(spec)
    assert target.mechanism.name == "faulty/iclp-unscaled-sigma" and target.reference is None
    assert resolve_mechanism(spec).name == "faulty/iclp-unscaled-sigma"
    d, _ = load_pair(spec, target.public)
    x = np.asarray(target.sampler(d, 7, jax.random.key(1)))
    assert x.shape == (7, 4)


_BAD_BLACKBOX = [
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nmechanism = "laplace-mean"', "blackbox:"),
    ('[blackbox]\nmethod = "logistic"', "blackbox:"),
    ("blackbox = 3", "blackbox:"),
    ('[blackbox]\nsampler = "missing.py:f"', "blackbox.sampler"),
    ('[blackbox]\nsampler = "sampler.py"', "blackbox.sampler"),
    ('[blackbox]\nsampler = "sampler.py:not-a-name"', "blackbox.sampler"),
    ('[blackbox]\nmechanism = "no-such-mechanism"', "blackbox.mechanism"),
    ("[blackbox]\nmechanism = 3", "blackbox.mechanism"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nparams = 3', "blackbox.params"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nmethod = "svm"', "blackbox.method"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nmethod = "model"', "blackbox.method"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nreference = "nope"', "blackbox.reference"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nreference = "x.py:f"', "blackbox.reference"),
    ('[mechanism]\nname = "laplace-mean"\n[blackbox]\nsampler = "sampler.py:laplace_mean"\n'
     'reference = "laplace-mean"', "blackbox.reference"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nreference_params = { n = 3 }',
     "blackbox.reference_params"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nreference = "laplace-mean"\n'
     "reference_params = 3", "blackbox.reference_params"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nfeatures = "pixels"', "blackbox.features"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nreference = "laplace-mean"\n'
     'features = "values"', "blackbox.features"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nfeatures = "kl"', "blackbox.features"),
    ('[blackbox]\nmechanism = "iclp-qr-mean"\nfeatures = "kl"\ncomponents = 0',
     "blackbox.components"),
    ('[blackbox]\nmechanism = "iclp-qr-mean"\nfeatures = "kl"\ncomponents = 2.5',
     "blackbox.components"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\ncomponents = 3', "blackbox.components"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nobjective = "gamma"', "blackbox.objective"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nclassifier_options = { depth = 3 }',
     "blackbox.classifier_options.depth"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nclassifier_options = { hidden = [0] }',
     "blackbox.classifier_options.hidden"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nclassifier_options = { steps = 0 }',
     "blackbox.classifier_options.steps"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nclassifier_options = { l2 = -1 }',
     "blackbox.classifier_options.l2"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\n'
     "classifier_options = { learning_rate = 0 }", "blackbox.classifier_options.learning_rate"),
    ('[blackbox]\nmechanism = "laplace-mean"\nmethod = "model"\nreference = "laplace-mean"\n'
     "classifier_options = { l2 = 1.0 }", "blackbox.classifier_options"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\nsamplr = 1', "blackbox.samplr"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\n[budget]\nselect_samples = 2',
     "budget.select_samples"),
    ('[blackbox]\nsampler = "sampler.py:laplace_mean"\n[budget]\nselect_samples = 1.5',
     "budget.select_samples"),
    ('[mechanism]\nname = "laplace-mean"\n[budget]\nselect_samples = 100',
     "budget.select_samples"),
    ('expected = "pass"\n[blackbox]\nsampler = "sampler.py:laplace_mean"', "expected"),
]  # fmt: skip


@pytest.mark.parametrize(("tables", "field"), _BAD_BLACKBOX)
def test_invalid_blackbox_fields_name_the_file_and_field(folder, tables, field):
    body, _, rest = tables.partition("\n[budget]")
    text = body + "\n[claim]\nepsilon = 1\n[data]\ngenerator = 'points'\n"
    if rest:
        text += "[budget]" + rest + "\n"
    with pytest.raises(SpecError) as err:
        load_spec(write_spec(folder, text))
    message = str(err.value)
    assert f": {field}" in message and "\n" not in message and str(folder) in message, message


def test_select_samples_of_the_model_method_may_be_small(folder):
    text = (
        '[blackbox]\nsampler = "sampler.py:laplace_mean"\nreference = "laplace-mean"\n'
        "[claim]\nepsilon = 1\n[data]\ngenerator = 'points'\n[budget]\nselect_samples = 1\n"
    )
    assert load_spec(write_spec(folder, text)).select_samples == 1


# ------------------------------------------------------------------ features


def test_kl_features_of_a_coefficient_release_are_whitened_coefficients():
    spec = load_spec(SHIPPED / "iclp-unscaled-sigma-kl.toml")
    spec = dataclasses.replace(spec, blackbox=dataclasses.replace(spec.blackbox, components=2))
    target = resolve_blackbox(spec)
    d, _ = load_pair(spec, target.public)
    features = blackbox_features(spec, target, d)
    assert features.description == "KL coefficients (K = 2, whitened)"
    lam = np.asarray(target.mechanism.release_distribution(d).eigenvalues)
    x = np.asarray(target.sampler(d, 6, jax.random.key(2)))
    np.testing.assert_allclose(features(jnp.asarray(x)), x[:, :2] / np.sqrt(lam[:2]), rtol=1e-12)
    with pytest.raises(ValueError, match="4 KL coefficients"):
        features(jnp.zeros((3, 5)))


def test_kl_features_of_a_grid_release_use_the_basis():
    spec = load_spec(SHIPPED / "iclp-qr-mean-kl.toml")
    target = resolve_blackbox(spec)
    d, _ = load_pair(spec, target.public)
    features = blackbox_features(spec, target, d)
    basis = target.mechanism.release_distribution(d).basis
    x = np.asarray(target.sampler(d, 4, jax.random.key(3)))
    k = spec.blackbox.components
    # <x, phi_k> with quadrature weights, divided by sqrt(lambda_k): an outside computation
    phi = np.asarray(basis.eigenfunctions)[:, :k]
    w = np.asarray(basis.grid.weights)
    expected = (x * w) @ phi / np.sqrt(np.asarray(basis.eigenvalues)[:k])
    np.testing.assert_allclose(features(jnp.asarray(x)), expected, rtol=1e-10, atol=1e-12)


def test_kl_features_need_a_functional_release(folder):
    text = (
        '[blackbox]\nsampler = "sampler.py:laplace_mean"\nreference = "laplace-mean"\n'
        'reference_params = { n = 20, dim = 1 }\nmethod = "logistic"\nfeatures = "kl"\n'
        "[claim]\nepsilon = 1\n[data]\ngenerator = 'points'\n"
    )
    spec = load_spec(write_spec(folder, text))
    target = resolve_blackbox(spec)
    d, _ = load_pair(spec, target.public)
    with pytest.raises(SpecError, match=r"blackbox\.features: 'kl' needs a functional release"):
        blackbox_features(spec, target, d)


# ----------------------------------------------------------------------- the CLI


def test_run_writes_black_and_white_records_in_one_report(folder, tmp_path):
    (folder / "user.py").write_text(WHITE_USER)
    write_spec(folder, WHITE_SPEC.format(expected='expected = "pass"', scale=1.0), "white.toml")
    write_spec(folder, SPEC.format(expected='expected = "violation"', scale=0.5), "broken.toml")
    write_spec(folder, SPEC.format(expected='expected = "inconclusive"', scale=1.0), "correct.toml")
    reports = tmp_path / "reports"
    assert main(["run", str(folder), "--report", str(reports)]) == 0
    document = json.loads((reports / "results.json").read_text())
    assert document["schema"] == "dpaudit.results/1"
    by_name = {a["name"]: a for a in document["audits"]}
    assert by_name["white"]["kind"] == "white-box"
    broken, correct = by_name["broken"], by_name["correct"]
    assert broken["kind"] == correct["kind"] == "black-box"
    assert broken["verdict"] == "violation" and broken["as_expected"] is True
    assert correct["verdict"] == "inconclusive" and correct["as_expected"] is True
    # Laplace scale halved: true epsilon 2; the certified bound lies in (claim, truth]
    assert 1.0 < broken["epsilon_lower"] <= 2.0
    assert correct["epsilon_lower"] <= 1.0
    assert broken["samples"] == 20000 and broken["samples_select"] == 4000
    assert broken["method"] == "logistic" and broken["mechanism"] == "sampler.py:laplace_mean"
    assert set(broken) >= set(by_name["white"])  # the same fields, and more
    event = broken["event"]
    assert event["n"] == 20000 and set(event["counts"]) == {"P", "Q"}
    assert event["direction"] in ("D->D'", "D'->D") and 0 <= event["tie_probability"] <= 1
    # the record's bound is the conditional ratio bound of its own counts (a pure claim; an
    # outside oracle: scipy's Beta at alpha); the delta bound the Clopper-Pearson pair on the
    # releases counted
    k_p, k_q = event["counts"]["P"], event["counts"]["Q"]
    assert event["bound"]["method"] == broken["details"]["bound_method"] == "conditional-ratio"
    theta = scipy.stats.beta.ppf(0.05, k_p, k_q + 1)
    assert broken["epsilon_lower"] == pytest.approx(math.log(theta / (1 - theta)), rel=1e-9)
    n_p, n_q = event["releases"]["P"], event["releases"]["Q"]
    p_lo = scipy.stats.beta.ppf(0.025, k_p, n_p - k_p + 1)
    q_hi = scipy.stats.beta.ppf(0.975, k_q + 1, n_q - k_q)
    assert broken["delta_at_claimed_epsilon"]["lower"] == pytest.approx(
        max(p_lo - math.e * q_hi, 0.0), rel=1e-9, abs=1e-15
    )
    assert broken["certificate"] is None and broken["epsilon_at_claimed_delta"] is None
    page = (reports / "index.html").read_text()
    assert page.count("<title>certification statistic under P and Q</title>") == 2
    assert "Clopper–Pearson" in page and "black-box audit from samples (logistic)" in page


def test_unexpected_violations_and_missed_expectations_exit_1(folder, capsys):
    path = write_spec(folder, SPEC.format(expected="", scale=0.5))
    assert main(["run", str(path)]) == 1
    assert "1 audit(s) failed" in capsys.readouterr().err
    path = write_spec(folder, SPEC.format(expected='expected = "violation"', scale=1.0))
    assert main(["run", str(path)]) == 1  # the correct sampler is not caught
    assert main(["run", str(path), "--strict"]) == 1


def test_overrides_apply_to_black_box_specs(folder, tmp_path):
    path = write_spec(folder, SPEC.format(expected="", scale=1.0))
    out = tmp_path / "r.json"
    assert main(["run", str(path), "--samples", "3000", "--seed", "7", "--json", str(out)]) == 0
    (record,) = json.loads(out.read_text())["audits"]
    assert record["samples"] == 3000 and record["seed"] == 7 and record["samples_select"] == 4000


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("scale_factor = 0.5", "colour = 1", "blackbox.params"),
        ('sampler.py:laplace_mean"', 'sampler.py:two_arguments"', "blackbox.sampler"),
        ('generator = "points"', 'generator = "example"', "data"),
        ("params = { n = 20 }", "params = { n = 0 }", "data"),
        ("epsilon = 1.0", "epsilon = 1.0\nadjacency = 'add-remove'", "data"),
    ],
)
def test_invalid_black_box_input_exits_2_and_writes_nothing(
    folder, tmp_path, capsys, old, new, field
):
    text = SPEC.format(expected="", scale=0.5)
    if "two_arguments" in new:
        text = text.replace("params = { scale_factor = 0.5 }\n", "")
    path = write_spec(folder, text.replace(old, new, 1))
    reports = tmp_path / "reports"
    assert main(["run", str(folder), "--report", str(reports)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpaudit: ") and "\n" not in err and path.name in err
    assert f": {field}" in err, err
    assert not reports.exists()


def test_a_crashing_sampler_stops_the_run_and_writes_nothing(folder, tmp_path, capsys):
    write_spec(folder, SPEC.format(expected="", scale=1.0), "a.toml")
    text = SPEC.format(expected="", scale=1.0).replace("laplace_mean", "crashing")
    write_spec(folder, text.replace("params = { scale_factor = 1.0 }\n", ""), "b.toml")
    reports = tmp_path / "reports"
    assert (
        main(["run", str(folder), "--report", str(reports)]) == 3
    )  # a crash is an internal error, not invalid input
    err = capsys.readouterr().err
    assert "b.toml" in err and "out of cheese" in err
    assert not reports.exists()


def test_check_validates_specs_without_running(folder, capsys):
    write_spec(folder, SPEC.format(expected='expected = "violation"', scale=0.5))
    assert main(["check", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "spec: black-box — sampler sampler.py:laplace_mean; method logistic on values" in out
    assert "1 spec(s) valid (0 white-box, 1 black-box)." in out
    assert main(["check", str(folder), "--epsilon", "1"]) == 2
    assert "validates specs" in capsys.readouterr().err
    write_spec(folder, SPEC.format(expected='expected = "pass"', scale=0.5))
    assert main(["check", str(folder / "spec.toml")]) == 2
    assert "spec.toml: expected: must be one of" in capsys.readouterr().err


def test_check_a_plain_sampler_once(folder, tmp_path, capsys):
    d = np.zeros((20, 1))
    d_prime = d.copy()
    d_prime[0] = 1.0
    np.save(tmp_path / "d.npy", d)
    np.save(tmp_path / "d2.npy", d_prime)
    target = f"{folder / 'sampler.py'}:laplace_mean"
    data = ["--data", str(tmp_path / "d.npy"), str(tmp_path / "d2.npy"), "--samples", "20000"]
    logistic = ["--method", "logistic"]  # the law of the sampler: a true claim passes
    assert main(["check", target, "--blackbox", "--epsilon", "1", *logistic, *data]) == 0
    # auto also tries float reachability: numpy's Laplace in doubles leaks D (Mironov 2012)
    assert main(["check", target, "--blackbox", "--epsilon", "1", *data]) == 1
    assert "among logistic, float: float" in capsys.readouterr().err
    assert main(["check", target, "--blackbox", "--epsilon", "0.5", *data]) == 1
    assert "Certified at confidence 0.95" in capsys.readouterr().err
    assert main(["check", target, "--blackbox", *data]) == 2  # no claim
    assert main(["check", target, "--epsilon", "1", "--method", "mlp", *data]) == 2
    assert "add --blackbox" in capsys.readouterr().err


def test_info_shows_the_kind_of_each_spec(folder, capsys):
    (folder / "user.py").write_text(WHITE_USER)
    write_spec(folder, WHITE_SPEC.format(expected='expected = "pass"', scale=1.0), "white.toml")
    write_spec(folder, SPEC.format(expected="", scale=1.0), "black.toml")
    assert main(["info", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "x64 on" in out
    assert "black: black-box — sampler sampler.py:laplace_mean" in out
    assert "white: white-box — mechanism user.py:build" in out
    assert main(["info", str(folder / "nope.toml")]) == 2


# ------------------------------------------------------------------ the report


def testscore_histogram_with_infinite_scores_and_no_warnings(folder):
    from dpaudit.blackbox import blackbox_audit

    d, d_prime = np.zeros((20, 1)), np.zeros((20, 1))
    d_prime[0] = 1.0
    spec = load_spec(write_spec(folder, SPEC.format(expected="", scale=1.0)))
    result = blackbox_audit(
        resolve_blackbox(spec).sampler,
        d,
        d_prime,
        dpaudit.Claim(epsilon=1.0),
        samples=2000,
        select_samples=400,
        seed=0,
        progress=False,
    )
    scores = PerLaw(
        np.append(result.certification_scores.P, np.inf),
        np.append(result.certification_scores.Q, -np.inf),
    )
    result = dataclasses.replace(result, certification_scores=scores)
    assert score_histogram(result).startswith("data:image/png;base64,")
    only_infinite = PerLaw(np.array([np.inf]), np.array([-np.inf]))
    assert score_histogram(dataclasses.replace(result, certification_scores=only_infinite)) is None
    record = result_record(AuditOutcome(name="x", result=result, expected="inconclusive"))
    assert record["kind"] == "black-box" and record["as_expected"] is (
        result.verdict == "inconclusive"
    )
    json.dumps(record, allow_nan=False)  # JSON-able, no NaN or infinity


# ------------------------------------------------------------ the shipped suite


def test_shipped_black_box_specs_are_valid_and_expect_a_black_box_verdict():
    specs = [load_spec(p) for p in find_specs(SHIPPED)]
    assert len(specs) >= 5
    assert all(s.kind == "black-box" and s.expected in BLACKBOX_VERDICTS for s in specs)
    assert {s.blackbox.method for s in specs} >= {"model", "logistic"}
    assert any(s.blackbox.features == "kl" for s in specs)
    assert any(s.blackbox.sampler for s in specs) and any(s.blackbox.mechanism for s in specs)
    assert {s.expected for s in specs} == set(BLACKBOX_VERDICTS)
    for spec in specs:  # correct implementations are never expected to be violations
        if spec.blackbox.sampler is None:
            faulty = dpaudit.model.registry.entry(spec.blackbox.mechanism).faulty
            assert (spec.expected == "violation") == faulty, spec.name


@pytest.mark.parametrize(
    ("spec", "verdict"),
    [("noisy-max-with-value.toml", "violation"), ("laplace-mean.toml", "inconclusive")],
)
def test_shipped_black_box_specs_get_their_verdict(spec, verdict, tmp_path):
    out = tmp_path / "r.json"
    assert main(["run", str(SHIPPED / spec), "--samples", "40000", "--json", str(out)]) == 0
    (record,) = json.loads(out.read_text())["audits"]
    assert record["verdict"] == verdict and record["kind"] == "black-box"


def _implementations():
    spec = importlib.util.spec_from_file_location("_bb_impl", SHIPPED / "implementations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_implementations_sample_their_declared_laws():
    """KS tests against scipy's Laplace (each coordinate / bin) and, for the noisy max, a
    two-sample KS test of the value and a chi-square test of the index against the
    catalogue model's own sampler; 2 + 4 + 2 checks, each at TEST_FAILURE_RATE / 8."""
    impl = _implementations()
    level = TEST_FAILURE_RATE / 8
    n = 20_000
    points = np.random.default_rng(0).uniform(-0.5, 1.5, (50, 2))  # some outside [0, 1]: clipped
    x = impl.laplace_mean(points, n, jax.random.key(0), epsilon=1.0)
    mean, scale = np.clip(points, 0, 1).mean(axis=0), 2 / 50
    for j in range(2):
        assert scipy.stats.kstest(x[:, j], "laplace", args=(mean[j], scale)).pvalue > level
    labels = np.array([0, 1, 2, 3, 1])
    h = impl.histogram_scale_epsilon(labels, n, jax.random.key(1), epsilon=0.5, n_bins=4)
    for j, count in enumerate([1, 2, 1, 1]):
        assert scipy.stats.kstest(h[:, j], "laplace", args=(count, 0.5)).pvalue > level
    scores = np.array([0.1, 0.3, 0.6, 0.9, 0.2])
    mine = impl.noisy_max_with_value(scores, n, jax.random.key(2), epsilon=1.0)
    model = np.asarray(
        dpaudit.build("faulty/noisy-max-with-value").sample(scores, jax.random.key(3), n)
    )
    assert scipy.stats.ks_2samp(mine[:, 1], model[:, 1]).pvalue > level
    table = [np.bincount(a[:, 0].astype(int), minlength=3) for a in (mine, model)]
    assert scipy.stats.chi2_contingency(table).pvalue > level


def test_shipped_implementations_reject_records_outside_their_domain():
    impl = _implementations()
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"integer labels in 0 \.\. 3"):
        impl.histogram_scale_epsilon(np.array([0, 7]), 3, key)
    with pytest.raises(ValueError, match="1-D array of scores"):
        impl.noisy_max_with_value(np.zeros((3, 2)), 3, key)
    with pytest.raises(ValueError, match=r"\(records, dim\) array"):
        impl.laplace_mean(np.zeros(3), 3, key)


# ------------------------------------------------------------------ the README


def test_readme_black_box_example_finds_the_histogram_bug():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    example = next(b for b in blocks if "blackbox_audit" in b)
    namespace: dict = {}
    exec(compile(example, "README.md", "exec"), namespace)
    result = namespace["result"]
    # scale epsilon = 0.5 for a count: true epsilon 1/0.5 = 2; the claim is 0.5
    assert result.verdict == "violation" and 1.5 < result.epsilon_lower <= 2.0
    assert "Black-box audits" in text and "audits/blackbox/" in text
