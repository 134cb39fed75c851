"""Violations explained where users look, a regression test written for the user, CLI conventions.

* the CLI prints under an unexpected violation its one-line reason: expected against
  measured, the pair, the certificate; ``-v`` prints each audit's notes under its name;
* ``--write-regression-test FILE`` writes a pytest that fails on the faulty mechanism and
  passes once it is fixed (run under pytest in a subprocess);
* a reader that closes the pipe (``| head -1``) does not cost the run its files, nor its
  exit code;
* ``--statistic``, with ``--method`` kept as a deprecated alias.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from spec_fixtures import USER
from spec_fixtures import WHITE_BOX_SPEC as SPEC

import dpaudit
from dpaudit.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
REASON = "expected epsilon <= 1, got epsilon >= 2 (exact): record 0 differs ([0.] -> [1.]); "


def _spec(folder: Path, name: str, scale: float, expected: str = "") -> Path:
    (folder / "user.py").write_text(USER)
    path = folder / f"{name}.toml"
    path.write_text(SPEC.format(expected=expected, scale=scale).replace("4000", "500"))
    return path


def _env(cache: Path | None = None) -> dict:
    """The subprocess imports this worktree's dpaudit (not an editable install elsewhere); with
    ``cache``, its compiled programs are kept there for the next subprocess."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    if cache is not None:
        env |= {"JAX_COMPILATION_CACHE_DIR": str(cache),
                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}  # fmt: skip
    return env


def test_an_unexpected_violation_prints_its_reason_and_verbose_names_the_notes(
    tmp_path, capsys, monkeypatch
):
    faulty = _spec(tmp_path, "faulty", 0.5)
    assert main(["audit", str(faulty)]) == 1
    lines = capsys.readouterr().out.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("faulty: violation")))
    assert lines[at + 1].startswith("  why: " + REASON)
    assert "release x = " in lines[at + 1] and "has loss 2 > epsilon = 1" in lines[at + 1]
    junit = tmp_path / "x.xml"  # CI's first line of the failure says why too
    assert main(["audit", str(faulty), "--junitxml", str(junit), "-q"]) == 1
    assert "; why: release x = " in junit.read_text()
    # -v: each audit's notes under its own name (a result with notes)
    from dpaudit.cli import main as cli

    real = cli.run_audit
    monkeypatch.setattr(
        cli, "run_audit", lambda item: dataclasses_replace(real(item), notes=("a note",))
    )
    ok = _spec(tmp_path, "ok", 1.0)
    assert main(["audit", str(ok), "-v"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[lines.index("ok:") + 1] == "  note: a note"


def dataclasses_replace(result, **fields):
    import dataclasses

    return dataclasses.replace(result, **fields)


def test_the_summary_leads_with_the_certificate(tmp_path):
    from dpaudit.cli.main import prepare, run_audit

    result = run_audit(prepare([_spec(tmp_path, "faulty", 0.5)])[0])
    why = result.summary().splitlines()[1]
    assert why.startswith("  why: release x = ") and "has loss 2 > epsilon = 1 (D->D')" in why


def test_assert_dp_fails_like_a_pytest_assertion_with_its_frames_hidden(tmp_path):
    from dpaudit.cli.main import prepare
    from dpaudit.testing import DPViolation, assert_dp

    item = prepare([_spec(tmp_path, "faulty", 0.5)])[0]
    with pytest.raises(DPViolation) as caught:
        assert_dp(item.mechanism, *item.pair, samples=500)
    message = str(caught.value)
    assert message.startswith(REASON + "release x = ") and "has loss 2 > epsilon = 1" in message
    package = str(Path(dpaudit.__file__).parent)
    tb = caught.tb.tb_next  # the frames below this test's
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename.startswith(package):
            assert frame.f_locals.get("__tracebackhide__") is True, frame.f_code.co_name
        tb = tb.tb_next


def test_a_written_regression_test_fails_until_the_mechanism_is_fixed(tmp_path, capsys):
    faulty = _spec(tmp_path, "faulty", 0.5)
    written = tmp_path / "tests" / "test_dp_regressions.py"
    assert main(["audit", str(faulty), "--write-regression-test", str(written)]) == 1
    text = written.read_text()
    assert "def test_faulty_keeps_its_claim():" in text and "seed=0" in text
    assert "samples=500" in text and "Claim(epsilon=1.0" in text and "pair=(\n" in text
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
               "no:hypothesispytest", str(written)]  # fmt: skip
    env = _env(tmp_path / "jax-cache")  # the second run (fixed) reuses most of the first's
    run = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert REASON in run.stdout and "dpaudit/cli/main.py" not in run.stdout  # frames hidden
    faulty.write_text(faulty.read_text().replace("scale_factor = 0.5", "scale_factor = 1.0"))
    run = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("inside", ["dpaudit/test_dp.py", "dpaudit/cli/test_x.py"])
def test_a_regression_test_inside_the_package_is_refused(tmp_path, capsys, inside):
    path = Path(dpaudit.__file__).parent.parent / inside
    faulty = _spec(tmp_path, "faulty", 0.5)
    report = tmp_path / "report"
    code = main(["audit", str(faulty), "--write-regression-test", str(path),
                 "--report", str(report)])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "inside the dpaudit package" in err[0]
    assert not path.exists() and not report.exists()


def test_a_regression_test_must_be_a_python_file(tmp_path, capsys):
    code = main(["audit", str(_spec(tmp_path, "faulty", 0.5)), "--write-regression-test",
                 str(tmp_path / "regressions.txt")])  # fmt: skip
    assert code == 2 and "not a Python file" in capsys.readouterr().err
    assert not (tmp_path / "regressions.txt").exists()


def test_a_closed_pipe_ends_quietly_and_every_file_is_written(tmp_path):
    ok = _spec(tmp_path, "ok", 1.0)
    report, doc, junit = tmp_path / "R", tmp_path / "J.json", tmp_path / "X.xml"
    command = [sys.executable, "-m", "dpaudit.cli.main", "audit", str(ok), "--report",
               str(report), "--json", str(doc), "--junitxml", str(junit)]  # fmt: skip
    # the reader has gone before the first line (``| head -1`` at its hardest)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    proc.stdout.close()
    with proc.stderr:
        stderr = proc.stderr.read().decode()
    assert proc.wait() == 0, stderr
    assert "BrokenPipe" not in stderr and "Traceback" not in stderr
    assert (report / "index.html").exists() and junit.exists()
    assert "<failure" not in junit.read_text()
    assert json.loads(doc.read_text())["audits"][0]["verdict"] == "pass"


def test_statistic_is_the_option_and_method_its_deprecated_alias(capsys, tmp_path):
    parser = build_parser()
    args = parser.parse_args(["audit", "s.py:f", "--blackbox", "--statistic", "logistic"])
    assert args.method == "logistic" and capsys.readouterr().err == ""
    args = parser.parse_args(["audit", "s.py:f", "--blackbox", "--method", "mlp"])
    assert args.method == "mlp" and "--method is deprecated; use --statistic" in (
        capsys.readouterr().err
    )
    (tmp_path / "s.py").write_text("def f(data, n, key):\n    return data\n")
    target = f"{tmp_path / 's.py'}:f"
    assert main(["audit", target, "--epsilon", "1", "--statistic", "mlp"]) == 2
    assert "--statistic is for black-box audits of a sampler" in capsys.readouterr().err


def test_a_black_box_violation_leads_with_its_event_and_is_never_called_exact():
    import numpy as np

    from dpaudit.blackbox import blackbox_audit, numpy_generator
    from dpaudit.testing.assertions import violation_sentence

    def histogram(data, n, key):  # Laplace scale epsilon instead of 1 / epsilon: epsilon 2
        counts = np.bincount(np.asarray(data, dtype=int), minlength=4).astype(float)
        return counts + numpy_generator(key).laplace(0.0, 0.5, size=(n, 4))

    d, d_prime = np.array([0, 1, 2, 3, 1]), np.array([0, 1, 2, 3, 1, 2])
    claim = dpaudit.Claim(epsilon=0.5, adjacency="add-remove")
    result = blackbox_audit(histogram, d, d_prime, claim, samples=2_000, seed=0,
                            statistic="logistic", progress=False)  # fmt: skip
    assert result.verdict == "violation"
    why = result.summary().splitlines()[1]
    assert why.startswith("  why: event statistic > ") and "P_D >= " in why and "P_D' <= " in why
    sentence = violation_sentence(result, d, d_prime)
    assert sentence.startswith("expected epsilon <= 0.5, got epsilon >= ")
    assert "(confidence 0.95): D is D' without record 5 (2); event statistic > " in sentence
    # overwhelming evidence (a p-value that underflows to 0) is still a sampled bound
    underflow = dataclasses_replace(result, p_value=0.0)
    assert "(confidence 0.95)" in violation_sentence(underflow, d, d_prime)


def test_a_callable_target_is_written_with_its_options_and_absolute_paths(tmp_path, monkeypatch):
    from dpaudit.cli.regression import absolute_target, callable_options

    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["audit", "mech.py:build", "--param", "scale_factor=0.5",
                                      "--data", "D.npy", "E.npy", "--method", "logistic",
                                      "--epsilon", "0.5", "--blackbox", "-q"])  # fmt: skip
    assert absolute_target("mech.py:build") == f"{tmp_path / 'mech.py'}:build"
    assert callable_options(args) == [
        "--epsilon", "0.5", "--param", "scale_factor=0.5", "--data", str(tmp_path / "D.npy"),
        str(tmp_path / "E.npy"), "--blackbox", "--statistic", "logistic",
    ]  # fmt: skip
