"""The README's code example runs as written and its assertion holds."""

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
