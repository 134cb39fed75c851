"""Issue 34: the bad-input set and the fault scenarios, re-run as tables.

Each row is one bad input (or one fault) and what every entry point must answer: one
sentence naming the argument and the fix, with the documented exit code (2: refused before
running, nothing written; 3: user code crashed mid-audit; 130: interrupted). The rows of one
table go through every entry point that takes the input (the Python API, a spec checked and
run by the CLI), so an entry point that skips the shared check fails its row.

The rows that need their own set-up live beside the code they pin: the infinite-release
sampler (a certified violation) and bad releases in ``tests/blackbox/test_bad_releases_checked.py``,
the key-ignoring sampler in ``tests/blackbox/test_reproducibility_checked.py``, D = D' and the
same-file spec in ``tests/core/test_distinct_pair.py`` and ``tests/cli/test_bad_inputs.py``,
accounting components in ``tests/accounting/test_component_checks.py``, a model drawing
``np.random`` in ``tests/model/test_traced_randomness.py``, user code raising mid-audit (exit 3)
in ``tests/cli/test_user_code_crash.py``, Ctrl-C (exit 130, in a subprocess) in
``tests/cli/test_interrupts.py``, interrupted report swaps in ``tests/cli/test_report_files.py``.
"""

import math
import os

import numpy as np
import pytest
from spec_fixtures import BLACK_BOX_SPEC, SAMPLER, WHITE_BOX_SPEC, write_spec

import dpaudit
from dpaudit.accounting.composition import GaussianComponent, LaplaceComponent, compose_accounting
from dpaudit.cli.main import EXIT_INVALID, main
from dpaudit.io.report import REPORT_FILES, REPORT_MARKER, STAGING_PREFIX, clean_debris

D0 = np.zeros(5)
D1 = np.array([1.0, 0, 0, 0, 0])
FAST_BB = {"samples": 4000, "select_samples": 2000, "progress": False}


def _laplace(data, n, key):
    return float(np.sum(data)) + dpaudit.blackbox.numpy_generator(key).laplace(size=n)


def _one_sentence(text: str) -> str:
    """``text`` stripped, checked to be one line without a traceback."""
    text = text.strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    return text


# (TOML value, Python value, reason): every classifier option out of range.
CLASSIFIER_OPTIONS = [
    ("learning_rate = nan", {"learning_rate": math.nan}, "must be a finite number > 0"),
    ("learning_rate = inf", {"learning_rate": math.inf}, "must be a finite number > 0"),
    ("learning_rate = 0", {"learning_rate": 0}, "must be a finite number > 0"),
    ("learning_rate = -0.1", {"learning_rate": -0.1}, "must be a finite number > 0"),
    ("l2 = -1", {"l2": -1}, "must be a finite number >= 0"),
    ("l2 = nan", {"l2": math.nan}, "must be a finite number >= 0"),
    ("l2 = inf", {"l2": math.inf}, "must be a finite number >= 0"),
    ("hidden = []", {"hidden": []}, "must be a non-empty list of layer widths >= 1"),
    ("hidden = [0]", {"hidden": [0]}, "must be a non-empty list of layer widths >= 1"),
    ("hidden = [8, -2]", {"hidden": [8, -2]}, "must be a non-empty list of layer widths >= 1"),
    ("hidden = [1.5]", {"hidden": [1.5]}, "must be a non-empty list of layer widths >= 1"),
    ("steps = 0", {"steps": 0}, "must be an integer >= 1"),
    ("steps = -3", {"steps": -3}, "must be an integer >= 1"),
    ("steps = 2.5", {"steps": 2.5}, "must be an integer >= 1"),
    ("batch = 0", {"batch": 0}, "must be an integer >= 1"),
]


@pytest.mark.parametrize(("toml", "options", "reason"), CLASSIFIER_OPTIONS)
def test_classifier_options_out_of_range_python_api(toml, options, reason):
    (key,) = options
    for statistic in ("logistic", "mlp"):
        with pytest.raises(ValueError, match=rf"classifier_options\['{key}'\] {reason}") as err:
            dpaudit.blackbox_audit(
                _laplace, D0, D1, dpaudit.Claim(epsilon=1.0), statistic=statistic,
                classifier_options=options, samples=100, progress=False,
            )  # fmt: skip
        _one_sentence(str(err.value))


@pytest.mark.parametrize(("toml", "options", "reason"), CLASSIFIER_OPTIONS)
def test_classifier_options_out_of_range_spec(tmp_path, capsys, toml, options, reason):
    (key,) = options
    (tmp_path / "sampler.py").write_text(SAMPLER)
    text = BLACK_BOX_SPEC.format(expected="", scale=1.0)
    text = text.replace('method = "logistic"', f'method = "mlp"\nclassifier_options = {{ {toml} }}')
    spec = write_spec(tmp_path, text)
    for command in ("check", "run"):
        assert main([command, str(spec), "--report", str(tmp_path / "rep")]) == EXIT_INVALID
        line = _one_sentence(capsys.readouterr().err)
        assert f"spec.toml: blackbox.classifier_options.{key}: {reason}" in line, line
    assert not (tmp_path / "rep").exists()


NP_RANDOM_MODEL = """
import jax.numpy as jnp, numpy as np, numpyro, numpyro.distributions as dist
from dpaudit import Claim, Mechanism

def build(n=20, epsilon=1.0, scale_factor=1.0):
    def model(data):
        mean = jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0)) + np.random.normal(0.0, 0.1)
        numpyro.sample("release", dist.Laplace(mean, scale_factor / (n * epsilon)))
    return Mechanism("np-random-mean", model,
                     Claim(epsilon=epsilon, sensitivity=1 / n, sensitivity_norm="l1"),
                     difference_norm=jnp.abs, params={"n": n})
"""


def test_a_model_drawing_np_random_is_refused_by_run(tmp_path, capsys):
    # refused by the audit's plan, before any Monte Carlo release (its two traces cost a
    # DP-SGD trajectory about 2.8 s of CPU, so the spec's check does not repeat them)
    (tmp_path / "user.py").write_text(NP_RANDOM_MODEL)
    spec = write_spec(tmp_path, WHITE_BOX_SPEC.format(expected="", scale=1.0))
    assert main(["run", str(spec), "--report", str(tmp_path / "rep")]) == EXIT_INVALID
    line = _one_sentence(capsys.readouterr().err.strip().splitlines()[-1])
    assert "spec.toml: audit failed: mechanism 'np-random-mean'" in line, line
    assert "outside numpyro (np.random" in line
    assert not (tmp_path / "rep").exists()


# Budgets: estimated before running, refused beyond a day or 2 GiB unless forced.
def test_samples_10_15_is_refused_with_its_estimate_black_box():
    with pytest.raises(ValueError, match=r"estimated to take .* years and .* PiB \(a pilot") as err:
        dpaudit.blackbox_audit(_laplace, D0, D1, dpaudit.Claim(epsilon=1.0), samples=10**15)
    assert "force=True" in _one_sentence(str(err.value))


def test_selection_at_10_9_samples_is_refused_with_its_memory_estimate():
    with pytest.raises(ValueError, match=r"and 1\d\.\d GiB .* 100000000 selection releases"):
        dpaudit.blackbox_audit(_laplace, D0, D1, dpaudit.Claim(epsilon=1.0), samples=10**9)


def test_samples_10_15_is_refused_with_its_estimate_white_box():
    from mechanisms.classic import laplace_mean

    data = np.zeros((5, 1))
    other = data.copy()
    other[0, 0] = 1.0
    with pytest.raises(
        ValueError, match=r"estimated to take 23.1 days and .* \(at least 1 ns"
    ) as err:
        dpaudit.audit(laplace_mean(epsilon=1.0, n=5), data, other, samples=10**15)
    assert "lower samples or keep_samples" in _one_sentence(str(err.value))


def test_force_runs_an_audit_beyond_the_limits(monkeypatch):
    import dpaudit.core.budget

    monkeypatch.setattr(dpaudit.core.budget, "MAX_BYTES", 1000)
    with pytest.raises(ValueError, match=r"beyond the limit of 1\.0 days and 1000 B"):
        dpaudit.blackbox_audit(_laplace, D0, D1, dpaudit.Claim(epsilon=1.0), **FAST_BB)
    res = dpaudit.blackbox_audit(
        _laplace, D0, D1, dpaudit.Claim(epsilon=1.0), force=True, **FAST_BB
    )
    assert res.verdict in ("pass", "inconclusive", "violation")


def test_the_command_line_refuses_a_budget_beyond_the_limits_and_force_runs_it(
    tmp_path, capsys, monkeypatch
):
    import dpaudit.core.budget

    (tmp_path / "sampler.py").write_text(SAMPLER)
    spec = write_spec(tmp_path, BLACK_BOX_SPEC.format(expected="", scale=1.0))
    rep = str(tmp_path / "rep")
    assert main(["run", str(spec), "--samples", str(10**15), "--report", rep]) == EXIT_INVALID
    line = _one_sentence(capsys.readouterr().err.strip().splitlines()[-1])
    assert "spec.toml" in line and "estimated to take" in line and "--force" in line
    assert not (tmp_path / "rep").exists()
    monkeypatch.setattr(dpaudit.core.budget, "MAX_BYTES", 1000)
    assert main(["run", str(spec), "--samples", "4000"]) == EXIT_INVALID
    capsys.readouterr()
    assert main(["run", str(spec), "--samples", "4000", "--force"]) in (0, 1)


# Reports: a previous report holding files dpaudit did not write is refused, never emptied;
# what a kill left beside the report (staging, old report moved aside) is cleaned next run.
def _bb_spec(tmp_path):
    (tmp_path / "sampler.py").write_text(SAMPLER)
    text = BLACK_BOX_SPEC.format(expected="", scale=1.0)
    return write_spec(tmp_path, text.replace("samples = 20000", "samples = 4000"))


def _debris(parent, name: str, *files: str):
    path = parent / name
    path.mkdir()
    for file in files:
        (path / file).write_text("left by a killed run\n")
    return path


def test_a_report_folder_holding_user_files_is_refused_and_kept(tmp_path, capsys):
    spec, rep = _bb_spec(tmp_path), tmp_path / "rep"
    assert main(["run", str(spec), "--report", str(rep)]) in (0, 1)
    (rep / "notes.txt").write_text("mine")
    before = sorted(p.name for p in rep.iterdir())
    capsys.readouterr()
    assert main(["run", str(spec), "--report", str(rep)]) == EXIT_INVALID
    line = _one_sentence(capsys.readouterr().err)
    assert "files dpaudit did not write (notes.txt)" in line, line
    assert sorted(p.name for p in rep.iterdir()) == before
    assert (rep / "notes.txt").read_text() == "mine"


def test_a_kills_debris_is_cleaned_at_the_next_run(tmp_path):
    spec, rep = _bb_spec(tmp_path), tmp_path / "rep"
    gone = os.getpid() + 10**6  # no such process (above pid_max)
    _debris(tmp_path, f"{STAGING_PREFIX}{gone}-abc", REPORT_MARKER, "results.json")
    _debris(tmp_path, f"{STAGING_PREFIX}{gone}-empty")
    old = _debris(tmp_path, f".rep.old-{gone}-xyz", REPORT_MARKER, "results.json", "index.html")
    alive = _debris(tmp_path, f"{STAGING_PREFIX}{os.getpid()}-live", REPORT_MARKER)
    foreign = _debris(tmp_path, f"{STAGING_PREFIX}{gone}-foreign", "user.txt")
    # the kill came between the two renames: the report folder is missing, the old one aside
    assert main(["run", str(spec), "--report", str(rep)]) in (0, 1)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert left == sorted([alive.name, foreign.name]), left
    assert sorted(p.name for p in rep.iterdir()) == sorted(REPORT_FILES) and not old.exists()


def test_an_old_report_moved_aside_by_a_kill_is_put_back(tmp_path):
    gone = os.getpid() + 10**6
    old = _debris(tmp_path, f".rep.old-{gone}-xyz", REPORT_MARKER, "results.json", "index.html")
    assert clean_debris(tmp_path / "rep") == [old]
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == sorted(REPORT_FILES)
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_report_folder_is_refused_before_running(tmp_path, capsys):
    spec, locked = _bb_spec(tmp_path), tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert main(["run", str(spec), "--report", str(locked / "rep")]) == EXIT_INVALID
    assert "permission denied" in _one_sentence(capsys.readouterr().err)


def _complex_sampler(data, n, key):
    return np.zeros(n) + 1j


def _features(rows):
    return lambda x: rows(np.asarray(x).reshape(len(x), -1))


# The issue's quick refusals through the Python API, one row each: (call, error, fragment).
API_ROWS = {
    "complex releases": (
        lambda: dpaudit.blackbox_audit(_complex_sampler, D0, D1, (1.0, 0.0), **FAST_BB),
        TypeError,
        r"not real numbers \(dtype complex128\)",
    ),
    "features NaN": (
        lambda: dpaudit.blackbox_audit(
            _laplace, D0, D1, (1.0, 0.0), features=_features(lambda z: z * np.nan), **FAST_BB
        ),
        ValueError,
        "contain NaN values",
    ),
    "features with the wrong number of rows": (
        lambda: dpaudit.blackbox_audit(
            _laplace, D0, D1, (1.0, 0.0), features=_features(lambda z: z[:-1]), **FAST_BB
        ),
        ValueError,
        "when asked for",
    ),
    "D equal to D' (black-box)": (
        lambda: dpaudit.blackbox_audit(_laplace, D0, D0.copy(), (1.0, 0.0), **FAST_BB),
        ValueError,
        "data and data_prime are the same dataset",
    ),
    "GaussianComponent(inf)": (
        lambda: compose_accounting([GaussianComponent(math.inf)]),
        ValueError,
        r"GaussianComponent\.mu",
    ),
    "LaplaceComponent(nan)": (
        lambda: compose_accounting([LaplaceComponent(math.nan)]),
        ValueError,
        r"LaplaceComponent\.a",
    ),
    "samples = 10**15": (
        lambda: dpaudit.blackbox_audit(_laplace, D0, D1, (1.0, 0.0), samples=10**15),
        ValueError,
        "estimated to take",
    ),
}


@pytest.mark.parametrize("row", list(API_ROWS))
def test_the_issues_bad_inputs_are_one_sentence_each(row):
    call, error, fragment = API_ROWS[row]
    with pytest.raises(error, match=fragment) as err:
        call()
    _one_sentence(str(err.value))
