"""The README's code example runs as written and its assertion holds."""

import math
import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README.md has no python example"
    namespace: dict = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    assert float(abs(namespace["loss"]).max()) <= 1.0 + 1e-9


def test_readme_shows_both_commands():
    text = README.read_text()
    assert "make audit" in text and "make test" in text


def test_readme_mechanism_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    example = next(b for b in blocks if "Mechanism(" in b)
    namespace: dict = {}
    exec(compile(example, str(README), "exec"), namespace)
    # Laplace(0.5, 1/100) density at 0.52: log(100/2) - 2
    assert abs(float(namespace["log_p"]) - (math.log(50.0) - 2.0)) < 1e-12


def test_readme_audit_example_finds_the_missing_sqrt2():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    example = next(b for b in blocks if "iclp-mean-unscaled" in b)
    namespace: dict = {}
    exec(compile(example, str(README), "exec"), namespace)
    report = namespace["report"]
    assert report.verdict == "violation" and report.certificate is not None
    assert abs(report.epsilon_at_claimed_delta["estimate"] - math.sqrt(2)) < 1e-6
