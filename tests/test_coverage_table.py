"""docs/coverage.md keeps its own rule: the counts at the top match the rows, and every row
marked done names a test that exists (a test function in a test file, or a notebook whose
"Checks against the paper" cell asserts its numbers and runs under ``make test-notebooks``).
"""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "coverage.md"
STATUSES = ("done with substitute data", "done", "partial", "missing")
ROW = re.compile(r"^\|\s*(\d+)\s*\|(.*)\|\s*$")
COUNT = re.compile(
    r"^Count: (\d+) items: (\d+) done, (\d+) done with substitute data, (\d+) partial, (\d+) missing\.$",
    re.M,
)
REFERENCE = re.compile(r"`((?:tests|notebooks)/[^`:]+)?(?:::([A-Za-z0-9_]+))?`")
CHECKS_HEADING = "## Checks against the paper"


def rows(text):
    """(number, cells, status) of every numbered table row, in order."""
    found = []
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            cells = [c.strip() for c in match.group(2).split("|")]
            found.append((int(match.group(1)), cells, status_of(cells[-1])))
    return found


def status_of(cell):
    """The status a row's last cell starts with (the longest status name first)."""
    for status in STATUSES:
        if cell.startswith(status):
            return status
    return None


def references(cell):
    """(file, test name or None) named in a cell; ``::name`` alone refers to the file before it."""
    found, current = [], None
    for path, name in REFERENCE.findall(cell):
        if path:
            current = path
        if current is None:
            continue
        found.append((current, name or None))
    return found


def notebook_checks(path):
    """The source of the code cell after the notebook's "Checks against the paper" heading."""
    cells = json.loads(path.read_text())["cells"]
    for i, cell in enumerate(cells[:-1]):
        if cell["cell_type"] == "markdown" and "".join(cell["source"]).startswith(CHECKS_HEADING):
            following = cells[i + 1]
            return "".join(following["source"]) if following["cell_type"] == "code" else ""
    return ""


def missing_reference(path, name):
    """Why a reference does not resolve (``None`` when it does)."""
    file = ROOT / path
    if not file.is_file():
        return f"{path} does not exist"
    if file.suffix == ".ipynb":
        source = notebook_checks(file)
        if "assert " not in source:
            return f"{path} has no asserting '{CHECKS_HEADING}' cell"
        return None
    if name is None:
        return f"{path} is named without a test function (write {path}::test_name)"
    if not re.search(rf"^\s*(?:async )?def {re.escape(name)}\(", file.read_text(), re.M):
        return f"{path} has no test function {name}"
    return None


TEXT = TABLE.read_text()
ROWS = rows(TEXT)


def test_rows_are_numbered_one_to_n_and_each_has_a_known_status():
    assert [n for n, _, _ in ROWS] == list(range(1, len(ROWS) + 1)), "rows must be numbered 1..N"
    unknown = [n for n, _, status in ROWS if status is None]
    assert not unknown, f"rows {unknown} start their status with none of {STATUSES}"
    assert all(len(cells) == 4 for _, cells, _ in ROWS), (
        "every row has item, implementation, test, status"
    )


def test_count_at_the_top_matches_the_table():
    match = COUNT.search(TEXT)
    assert match, "docs/coverage.md has no 'Count: N items: ...' line"
    total, *stated = (int(g) for g in match.groups())
    counts = Counter(status for _, _, status in ROWS)
    actual = [counts[s] for s in ("done", "done with substitute data", "partial", "missing")]
    assert (total, stated) == (len(ROWS), actual), (
        f"the count line says {total} items {stated}, the table has {len(ROWS)} items {actual} "
        "(done, done with substitute data, partial, missing)"
    )


@pytest.mark.parametrize("status", ["done", "done with substitute data"])
def test_every_done_row_names_tests_that_exist(status):
    problems = []
    for number, cells, row_status in ROWS:
        if row_status != status:
            continue
        named = references(cells[2])
        if not named:
            problems.append(f"row {number}: no test named in the test column")
        problems += [f"row {number}: {why}" for p, n in named if (why := missing_reference(p, n))]
    assert not problems, "\n".join(problems)


def test_partial_and_missing_rows_say_what_is_missing():
    silent = [n for n, cells, s in ROWS if s in ("partial", "missing") and ":" not in cells[-1]]
    assert not silent, f"rows {silent}: write 'partial: what is missing' / 'missing: why'"


def test_the_parser_catches_a_wrong_count_and_a_test_that_does_not_exist():
    table = "| 1 | a | b | `tests/test_coverage_table.py::no_such_test` | done |"
    (_, cells, status), *_ = rows(table)
    assert status == "done"
    assert "no test function" in missing_reference(*references(cells[2])[0])
    assert status_of("done with substitute data: x") == "done with substitute data"
    assert references("`tests/a.py::b`, `::c`") == [("tests/a.py", "b"), ("tests/a.py", "c")]
    assert not COUNT.search("Count: 3 items: 1 done, 1 partial, 1 missing.")
