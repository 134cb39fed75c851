"""Bad inputs reaching the spec and CLI layer: exit 2 with one sentence naming the field.

Each case was once accepted silently, leaked a NumPy/JAX message or crashed
the audit (exit 1 with a traceback).
"""

import numpy as np
import pytest
from spec_fixtures import WHITE_BOX_SPEC as SPEC

from dpaudit.cli.main import EXIT_INVALID, main

USER = """
import jax.numpy as jnp, numpyro, numpyro.distributions as dist
from dpaudit import Claim, Mechanism

def build(n=20, epsilon=1.0, scale_factor=1.0, twice=False, loc=0.0, dim=1):
    def model(data):
        mean = jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0)) + loc
        numpyro.sample("release", dist.Laplace(mean, scale_factor / (n * epsilon)))
        if twice:
            numpyro.sample("release", dist.Laplace(mean, 1.0))
    return Mechanism("user-mean", model,
                     Claim(epsilon=epsilon, sensitivity=1 / n, sensitivity_norm="l1"),
                     difference_norm=jnp.abs, params={"n": n, "dim": dim})
"""


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "user.py").write_text(USER)
    d = np.random.default_rng(0).uniform(size=(20, 1))
    d2 = d.copy()
    d2[0] = 0.3
    arrays = {
        "ok": (d, d2),
        "nan": (np.where(np.arange(20)[:, None] == 3, np.nan, d), None),
        "wide": (np.hstack([d, d]), np.hstack([d2, d2])),
        "empty": (np.zeros((0, 1)), np.zeros((0, 1))),
        "strings": (np.array([["a"]] * 20), None),
        "complex": (d.astype(complex), None),
        "flat": (d[:, 0], d2[:, 0]),
    }
    for name, (first, second) in arrays.items():
        np.save(tmp_path / f"{name}.npy", first)
        np.save(tmp_path / f"{name}2.npy", d2 if second is None else second)
    np.save(tmp_path / "objects.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    return tmp_path


def _spec(folder, *, files=None, params="", budget=""):
    text = SPEC.format(expected="", scale=1.0)
    if files:
        text = text.replace('generator = "points"', f'files = ["{files[0]}", "{files[1]}"]')
    text = text.replace("scale_factor = 1.0", f"scale_factor = 1.0{params}")
    text = text.replace("samples = 4000", budget or "samples = 4000")
    path = folder / "spec.toml"
    path.write_text(text)
    return path


def _refused(capsys, *fragments):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err, err


@pytest.mark.parametrize(
    ("files", "fragments"),
    [
        (("nan.npy", "nan2.npy"), ("data.files", "nan.npy", "NaN", "(3, 0)")),
        (("empty.npy", "empty2.npy"), ("data.files", "no records")),
        (("strings.npy", "ok2.npy"), ("data.files", "strings.npy", "real numbers")),
        (("complex.npy", "ok2.npy"), ("data.files", "complex", "real numbers")),
        (("objects.npy", "ok2.npy"), ("data.files", "objects.npy", "Python objects")),
        (("flat.npy", "flat2.npy"), ("mechanism", "fails on D", "IndexError")),
        (("ok.npy", "ok.npy"), ("data.files", "the same dataset", "differ")),
        (("ok2.npy", "nan2.npy"), ("data.files", "the same dataset", "differ")),
    ],
)
def test_bad_data_files_fail_check_and_run(folder, capsys, files, fragments):
    spec = _spec(folder, files=files)
    for command in ("check", "run"):
        assert main([command, str(spec)]) == EXIT_INVALID
        _refused(capsys, "spec.toml", *fragments)


@pytest.mark.parametrize(
    ("command", "params", "fragments"),
    [
        ("check", ", twice = true", ("mechanism", "unique names")),
        # validate (check) traces the model without running it (no XLA program); a value
        # the distribution rejects shows when the audit draws its first release, before it runs
        ("run", ", loc = nan", ("mechanism", "fails on D", "invalid loc")),
    ],
)
def test_malformed_models_fail_check(folder, capsys, command, params, fragments):
    assert main([command, str(_spec(folder, params=params))]) == EXIT_INVALID
    _refused(capsys, *fragments)


@pytest.mark.parametrize(
    ("budget", "fragments"),
    [
        ("seed = -1", ("budget.seed", "[0, 2**63)")),
        ("seed = 9223372036854775808", ("budget.seed", "[0, 2**63)")),
        ("samples = 1", ("budget.samples", ">= 2")),
    ],
)
def test_budget_out_of_range_is_blamed_on_its_field(folder, capsys, budget, fragments):
    spec = _spec(folder, budget="samples = 4000\n" + budget if "seed" in budget else budget)
    assert main(["check", str(spec)]) == EXIT_INVALID
    _refused(capsys, *fragments)


@pytest.mark.parametrize(
    ("option", "fragments"),
    [
        (["--seed", "-3"], ("--seed", "[0, 2**63)")),
        (["--seed", str(2**64)], ("--seed",)),
        (["--samples", "1"], ("--samples", ">= 2")),
    ],
)
def test_command_line_overrides_are_checked(folder, capsys, option, fragments):
    assert main(["run", str(_spec(folder)), *option]) == EXIT_INVALID
    _refused(capsys, *fragments)


def test_the_largest_seed_runs(folder):
    assert main(["run", str(_spec(folder)), "--samples", "300", "--seed", str(2**63 - 1)]) == 0


def _check_black_box_spec(tmp_path, sampler_text, *replacements) -> int:
    """``dpaudit check`` of the shared black-box spec with its text edited by ``replacements``."""
    from spec_fixtures import BLACK_BOX_SPEC

    (tmp_path / "sampler.py").write_text(sampler_text)
    text = BLACK_BOX_SPEC.format(expected="", scale=1.0)
    for old, new in replacements:
        text = text.replace(old, new)
    (tmp_path / "bb.toml").write_text(text)
    return main(["check", str(tmp_path / "bb.toml")])


@pytest.mark.parametrize(
    ("option", "fragment"),
    [
        ("learning_rate = nan", "learning_rate: must be a finite number > 0"),
        ("learning_rate = inf", "learning_rate: must be a finite number > 0"),
        ("l2 = nan", "l2: must be a finite number >= 0"),
        ("hidden = []", "hidden: must be a non-empty list of layer widths"),
    ],
)
def test_classifier_options_must_be_finite(tmp_path, capsys, option, fragment):
    from spec_fixtures import SAMPLER

    options = ('method = "logistic"', f'method = "logistic"\nclassifier_options = {{ {option} }}')
    assert _check_black_box_spec(tmp_path, SAMPLER, options) == EXIT_INVALID
    _refused(capsys, "blackbox.classifier_options.", fragment)


BAD_SAMPLERS = """
import numpy as np

def complex_valued(data, n, key):
    return np.zeros(n) + 1j

def nan_valued(data, n, key):
    return np.full(n, np.nan)

def one_row(data, n, key):
    return np.zeros((1, 3))
"""


@pytest.mark.parametrize(
    ("sampler", "fragment"),
    [
        ("complex_valued", "not real numbers (dtype complex128)"),
        ("nan_valued", "contain NaN values"),
        ("one_row", "shape (1, 3) when asked for 2 releases"),
    ],
)
def test_bad_samplers_fail_check(tmp_path, capsys, sampler, fragment):
    edits = (("sampler.py:laplace_mean", f"sampler.py:{sampler}"),)
    edits += (("params = { scale_factor = 1.0 }\n", ""),)
    assert _check_black_box_spec(tmp_path, BAD_SAMPLERS, *edits) == EXIT_INVALID
    _refused(capsys, "blackbox.sampler", fragment)


LABEL_SAMPLER = """
import numpy as np
from dpaudit.blackbox import numpy_generator

def labels(data, n, key, *, epsilon=1.0, scale_factor=1.0):
    # randomised response on "is the mean above 1/2": a yes/no label per release
    truth = np.mean(np.asarray(data, dtype=float)) > 0.5
    keep = numpy_generator(key).random(n) < np.exp(epsilon) / (1.0 + np.exp(epsilon))
    return np.where(keep == truth, "yes", "no")
"""


def test_a_sampler_of_string_labels_passes_check_like_the_engine(tmp_path, capsys):
    """Labels are releases (blackbox_audit numbers them); only the numeric checks refuse them."""
    edits = (("sampler.py:laplace_mean", "sampler.py:labels"),)
    assert _check_black_box_spec(tmp_path, LABEL_SAMPLER, *edits) == 0, capsys.readouterr()


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        (["--rho", "0"], "--rho must be a finite number > 0, got 0.0."),
        (["--mu", "nan"], "--mu must be a finite number > 0, got nan."),
        (["--renyi", "1,1"], "--renyi '1,1': the order must be a finite number > 1"),
        (["--renyi", "2"], "--renyi '2': write ORDER,EPS with two numbers"),
        (["--renyi", "2,0"], "--renyi '2,0': the bound EPS must be a finite number > 0"),
        (["--renyi", "2,1", "--renyi", "2,3"], "--renyi states one order twice"),
        (["--rho", "1", "--mu", "1"], "--rho and --mu state claims in two notions"),
        (["--epsilon", "1", "--renyi", "2,1"], "--epsilon and --renyi state claims in two"),
        (
            ["--rho", "1", "--delta", "0"],
            "--delta with --rho is the claim's anchor delta and must lie in (0, 1)",
        ),
    ],
)
def test_notion_claim_options_out_of_range(folder, capsys, options, sentence):
    out = folder / "out.json"
    args = ["audit", f"{folder / 'user.py'}:build", "--generator", "points", "--json", str(out)]
    assert main([*args, *options]) == EXIT_INVALID
    err = capsys.readouterr().err.strip()
    assert sentence in err and len(err.splitlines()) == 1
    assert not out.exists()
