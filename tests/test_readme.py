"""README.md runs as written: every Python block is a complete program whose printed output
is the text block that follows it; the shell commands it shows exist."""

import contextlib
import io
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
# a python block, then (after prose or nothing) the text block of its output, if any
BLOCK = re.compile(r"```python\n(.*?)```\n(?:[^`]*?```text\n(.*?)```)?", re.S)


def _blocks() -> list[tuple[str, str | None]]:
    text = README.read_text()
    pairs = []
    for match in BLOCK.finditer(text):
        code, output = match.group(1), match.group(2)
        # an output block belongs to this program only if no other program comes first
        between = text[match.start(1) + len(code) : match.end()]
        pairs.append((code, None if "```python" in between else output))
    return pairs


def test_readme_has_complete_programs_with_their_output():
    blocks = _blocks()
    assert len(blocks) >= 4
    assert all(output is not None for _, output in blocks), "every program shows its output"
    assert "```text\nimport" not in README.read_text()  # no code fenced as text


@pytest.mark.parametrize("index", range(4))
def test_readme_block_prints_what_the_readme_says(index, tmp_path, monkeypatch):
    code, output = _blocks()[index]
    monkeypatch.chdir(tmp_path)  # a program that writes files writes them here
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"README.md block {index + 1}", "exec"), {"__name__": "__main__"})
    got = [line.rstrip() for line in printed.getvalue().strip().splitlines()]
    assert got == [line.rstrip() for line in output.strip().splitlines()]


def test_readme_shows_both_commands_and_their_durations():
    text = README.read_text()
    assert "make audit" in text and "make test" in text
    assert re.search(r"make audit .*minutes", text) and re.search(r"make test .*minutes", text)


def test_readme_has_no_internal_jargon():
    text = README.read_text()
    for word in ("trap ", "route closed-form", ":func:", ".. code"):
        assert word not in text, word
    assert not re.search(r"(?<!`)``(?!`)", text)  # RST inline literals


def test_readme_commands_exist():
    from dpaudit.cli.main import build_parser

    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    shown = re.findall(r"(?:bin/|`)dpaudit (\w+)", README.read_text(), re.M)
    assert {"audit", "validate", "list", "info"} <= set(shown)
    for command in shown:
        assert command in commands, command
