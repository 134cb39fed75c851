"""Every notebook runs top to bottom at reduced size (``make test-notebooks``; CI runs it).

Marked ``notebooks`` and excluded from the default ``make test``: each
notebook starts a kernel and compiles its own JAX programs, which is minutes of
work for the whole folder on 2 cores.
"""

import importlib.util
import json
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "notebooks"
spec = importlib.util.spec_from_file_location("nb_execute", HERE / "execute.py")
nb_execute = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nb_execute)

NOTEBOOKS = nb_execute.notebooks()

pytestmark = [
    pytest.mark.notebooks,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_at_small_size(path, tmp_path):
    nb = nb_execute.execute(path, size="small", write_to=tmp_path / path.name, timeout=900)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{path.name} has no code cells"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name} raised: {errors[0].get('ename')}: {errors[0].get('evalue')}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebook_holds_full_size_outputs(path):
    """The committed notebook was executed (every code cell has a count) and ends with verdicts."""
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    unexecuted = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    assert not unexecuted, f"{path.name}: code cells {unexecuted} were not executed"
    text = "".join(
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
        for c in code[-3:]
        for o in c.get("outputs", [])
    )
    assert "verdict" in text.lower(), f"{path.name} does not end with dpaudit verdicts"
    first = "".join("".join(o.get("text", "")) for o in code[0].get("outputs", []))
    assert "notebook size: full" in first, f"{path.name} was committed from a reduced-size run"
