"""How much of each executed notebook's run time its "Checks against the paper" cell takes.

Reads the cell timestamps nbclient records in executed notebooks (``execution`` metadata), so
it measures a run that already happened (the committed full-size notebooks, or the reduced-size
copies ``notebooks/execute.py --size small --out DIR`` writes) and starts no kernel:

    python benchmarks/notebook_checks_time.py                 # the committed notebooks
    python benchmarks/notebook_checks_time.py /tmp/nb-small   # a reduced-size run's copies
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

HEADING = "## Checks against the paper"
HERE = Path(__file__).resolve().parents[1] / "notebooks"


def cell_seconds(cell) -> float | None:
    """Wall seconds of one executed code cell from its nbclient timestamps (None if absent)."""
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return None
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def checks_share(path: Path) -> tuple[float, float]:
    """(seconds of the checks cell, seconds of all code cells) of an executed notebook."""
    cells = json.loads(path.read_text())["cells"]
    total, checks = 0.0, 0.0
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        seconds = cell_seconds(cell) or 0.0
        total += seconds
        previous = cells[i - 1] if i else {}
        if previous.get("cell_type") == "markdown" and "".join(previous["source"]).startswith(
            HEADING
        ):
            checks += seconds
    return checks, total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=HERE)
    args = parser.parse_args(argv)
    print(f"{'notebook':32} {'checks cell (s)':>16} {'all cells (s)':>14} {'share':>7}")
    for path in sorted(args.folder.glob("[0-9]*.ipynb")):
        checks, total = checks_share(path)
        share = checks / total if total else float("nan")
        print(f"{path.name:32} {checks:16.2f} {total:14.1f} {share:7.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
