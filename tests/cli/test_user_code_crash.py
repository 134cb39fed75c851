"""Issue 34: an exception raised by user code during an audit is exit 3 (a crash), not 2.

Exit 2 is input that can be checked before running (nothing runs); a sampler or a model
that raises mid-audit is a crash in the mechanism, named with the audit. The Python API
keeps the exception's kind (a ``ValueError`` stays a ``ValueError``).
"""

import jax.numpy as jnp
import numpy as np
import pytest
from spec_fixtures import BLACK_BOX_SPEC, SAMPLER, USER, WHITE_BOX_SPEC, write_spec

import dpaudit
from dpaudit.cli.main import EXIT_ERROR, EXIT_INVALID, main
from dpaudit.core.errors import UserCodeError

# Raises on the sampler's third call: after the spec's two-release probe of D and D', in the
# audit's own draws.
LATE_CRASH = """
CALLS = []

def late_value_error(data, n, key, *, scale_factor=1.0):
    CALLS.append(n)
    if len(CALLS) > 2:
        raise ValueError("the implementation's buffer overflowed")
    return laplace_mean(data, n, key, scale_factor=scale_factor)
"""

# Raises from its third run on: after the spec's check of the model on D and D', when the
# audit traces it.
TRACED_CRASH = """
RUNS = []

def build_crashing(n=20, epsilon=1.0, scale_factor=1.0):
    def model(data):
        RUNS.append(1)
        if len(RUNS) > 2:
            raise ValueError("the model's table lookup failed")
        mean = jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0))
        numpyro.sample("release", dist.Laplace(mean, scale_factor / (n * epsilon)))
    return Mechanism("crashing-mean", model,
                     Claim(epsilon=epsilon, sensitivity=1 / n, sensitivity_norm="l1"),
                     summary=lambda d: jnp.mean(jnp.clip(d[:, 0], 0.0, 1.0)),
                     difference_norm=jnp.abs, params={"n": n})
"""


def _last_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err, err
    return err.splitlines()[-1]


def test_a_sampler_raising_mid_audit_is_exit_3_named_with_the_audit(tmp_path, capsys):
    (tmp_path / "sampler.py").write_text(SAMPLER + LATE_CRASH)
    text = BLACK_BOX_SPEC.format(expected="", scale=1.0)
    spec = write_spec(tmp_path, text.replace("laplace_mean", "late_value_error"))
    assert main(["run", str(spec)]) == EXIT_ERROR
    line = _last_line(capsys)
    assert "spec.toml" in line and "crashed in the mechanism" in line
    assert "buffer overflowed" in line


def test_a_sampler_raising_in_the_check_before_running_stays_exit_2(tmp_path, capsys):
    (tmp_path / "sampler.py").write_text(SAMPLER + LATE_CRASH.replace("> 2", ">= 0"))
    text = BLACK_BOX_SPEC.format(expected="", scale=1.0)
    spec = write_spec(tmp_path, text.replace("laplace_mean", "late_value_error"))
    assert main(["run", str(spec)]) == EXIT_INVALID


def test_a_model_raising_mid_audit_is_exit_3(tmp_path, capsys):
    (tmp_path / "user.py").write_text(USER + TRACED_CRASH)
    text = WHITE_BOX_SPEC.format(expected="", scale=1.0)
    spec = write_spec(tmp_path, text.replace("user.py:build", "user.py:build_crashing"))
    assert main(["run", str(spec)]) == EXIT_ERROR
    line = _last_line(capsys)
    assert "crashed in the mechanism" in line and "table lookup failed" in line


def test_the_python_api_keeps_the_kind_of_a_sampler_error():
    def raises(data, n, key):
        raise TypeError("wrong type inside the implementation")

    with pytest.raises(TypeError, match="failed on a request") as err:
        dpaudit.blackbox_audit(
            raises, np.zeros(3), np.array([1.0, 0, 0]), (1.0, 0.0), progress=False
        )
    assert isinstance(err.value, UserCodeError)


def test_the_python_api_reports_a_model_error_as_user_code():
    def model(data):
        raise ValueError("boom")

    mech = dpaudit.Mechanism("m", model, dpaudit.Claim(epsilon=1.0))
    with pytest.raises(ValueError, match="the model of mechanism 'm' raised ValueError: boom"):
        dpaudit.audit(mech, jnp.zeros(3), jnp.array([1.0, 0, 0]), samples=1000, progress=False)
