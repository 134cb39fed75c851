"""Execute the notebooks in this folder, top to bottom, with a size parameter.

Every notebook reads ``DPAUDIT_NOTEBOOK_SIZE`` (``"full"`` or ``"small"``) in
its first code cell and scales its experiments by it:

    python notebooks/execute.py                 # full size, outputs written back in place
    python notebooks/execute.py --size small    # reduced size into a scratch copy (what CI runs)
    python notebooks/execute.py 01_iclp_mean.ipynb --size small

``make notebooks`` runs the first form (the committed notebooks hold these
outputs); ``make test-notebooks`` runs the second through pytest.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZES = ("full", "small")


def notebooks(names=()) -> list[Path]:
    """The notebooks to run: ``names`` (relative to this folder) or every ``*.ipynb`` here."""
    if names:
        paths = [(HERE / n) if not Path(n).is_absolute() else Path(n) for n in names]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise ValueError(f"no such notebook: {', '.join(missing)}.")
        return paths
    return sorted(HERE.glob("[0-9]*.ipynb"))


def execute(path: Path, *, size: str = "full", write_to: Path | None = None, timeout: int = 3600):
    """Execute one notebook with ``DPAUDIT_NOTEBOOK_SIZE=size``; write it to ``write_to``.

    ``write_to=None`` writes the executed notebook back to ``path``. Raises
    ``nbclient.exceptions.CellExecutionError`` naming the failing cell.
    """
    import nbformat
    from nbclient import NotebookClient

    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}.")
    nb = nbformat.read(path, as_version=4)
    old = os.environ.get("DPAUDIT_NOTEBOOK_SIZE")
    os.environ["DPAUDIT_NOTEBOOK_SIZE"] = size
    try:
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(HERE)}},
        )
        client.execute()
    finally:
        if old is None:
            os.environ.pop("DPAUDIT_NOTEBOOK_SIZE", None)
        else:
            os.environ["DPAUDIT_NOTEBOOK_SIZE"] = old
    nbformat.write(nb, write_to or path)
    return nb


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebooks to run (default: all)")
    parser.add_argument("--size", choices=SIZES, default="full")
    parser.add_argument(
        "--out", type=Path, default=None, help="write executed copies here instead of in place"
    )
    args = parser.parse_args(argv)
    paths = notebooks(args.names)
    if args.size == "small" and args.out is None:
        parser.error("--size small needs --out (the committed notebooks hold full-size outputs).")
    for path in paths:
        start = time.perf_counter()
        target = None if args.out is None else args.out / path.name
        if target is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
        execute(path, size=args.size, write_to=target)
        print(f"{path.name}: {time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
