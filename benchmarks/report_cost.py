"""What writing the HTML report costs: figures, bytes and time per figure, for a few audits.

Runs ``dpaudit audit audits/ -k EXPR`` in this process with the report-writing step
(:func:`dpaudit.io.report.write_report`) wrapped: the audits run as usual, then the report
is written ``--repeat`` times (the first pays matplotlib's imports and font cache, the
later ones are what each further audit costs). For every write it prints wall and CPU
seconds, the matplotlib figures created, the images embedded and their bytes, and the
bytes of ``index.html`` and ``results.json``; ``--profile`` prints a cProfile of one write.

Run from the worktree with ``PYTHONPATH=$PWD``; the load average is printed beside every
figure (a busy machine stretches wall time; CPU time moves less).

Usage::

    PYTHONPATH=$PWD python benchmarks/report_cost.py
    PYTHONPATH=$PWD python benchmarks/report_cost.py -k "laplace-mean or gdp" --profile
    PYTHONPATH=$PWD python benchmarks/report_cost.py --copies 12   # 132 audits on the page
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import io
import os
import pstats
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: A mix of the report's sections: Laplace closed form, a functional release with a
#: compatibility check and sample paths, GDP and zCDP notion figures, a continual
#: counter, SVT, two black-box audits and one training-free faulty spec.
DEFAULT_K = (
    "catalogue/laplace-mean.toml or iclp-qr-mean.toml or gaussian-mean-gdp or "
    "gaussian-mean-zcdp or hrw-gaussian-kde.toml or continual-counter.toml or "
    "catalogue/svt.toml or blackbox/laplace-mean or histogram-scale-epsilon or "
    "composed-laplace-one-budget"
)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _figures_created() -> list[int]:
    """Count every matplotlib figure made from now on (a one-element list, updated)."""
    import matplotlib.figure

    count = [0]
    original = matplotlib.figure.Figure.__init__

    def counting(self, *args, **kwargs):
        count[0] += 1
        original(self, *args, **kwargs)

    matplotlib.figure.Figure.__init__ = counting
    return count


def _measure(write, outcomes, folder, args, kwargs, figures, profile: bool) -> dict:
    before_fig, t0, c0 = figures[0], time.perf_counter(), time.process_time()
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    page = write(outcomes, folder, *args, **kwargs)
    if profiler:
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(35)
        print(text.getvalue())
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    html = Path(page).read_text(encoding="utf-8")
    images = re.findall(r"src='(data:image/[^']*)'", html)
    for chunk in html.split("<svg xmlns=")[1:]:  # an inline figure: its plot area nested
        inner = chunk.index("</svg>")
        images.append(chunk[: chunk.index("</svg>", inner + 1) + 6])
    return {
        "wall": wall,
        "cpu": cpu,
        "figures": figures[0] - before_fig,
        "images": len(images),
        "image_bytes": sum(len(i) for i in images),
        "html_bytes": len(html.encode()),
        "json_bytes": (Path(page).parent / "results.json").stat().st_size,
        "audits": len(outcomes),
    }


def main(argv=None) -> int:
    """Run the selected audits once and time writing their report ``--repeat`` times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default=DEFAULT_K, help="the audits (dpaudit's -k expression)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile the last write")
    parser.add_argument(
        "--copies", type=int, default=1, help="write each audit this many times (renamed)"
    )
    parser.add_argument("--out", help="keep the report in this folder (default: a temporary one)")
    options = parser.parse_args(argv)
    import dpaudit.io.report as report
    from dpaudit.cli.main import main as dpaudit_main

    figures = _figures_created()
    original, rows = report.write_report, []

    def wrapped(outcomes, folder, *args, **kwargs):
        outcomes = [
            dataclasses.replace(o, name=f"{o.name}-{i}") if i else o
            for i in range(options.copies)
            for o in outcomes
        ]
        for i in range(options.repeat):
            last = i == options.repeat - 1
            rows.append(
                _measure(
                    original, outcomes, folder, args, kwargs, figures, options.profile and last
                )
            )
        return Path(folder) / "index.html"

    report.write_report = wrapped
    with tempfile.TemporaryDirectory() as tmp:
        folder = options.out or f"{tmp}/r"
        code = dpaudit_main(
            ["audit", str(ROOT / "audits"), "-k", options.k, "-q", "--report", folder]
        )
    print(f"dpaudit exit code {code}; load {_load()}")
    print("write  audits  wall s   cpu s  figures  images  image kB  html kB  json kB  ms/audit")
    for i, r in enumerate(rows):
        print(
            f"{i:5d}  {r['audits']:6d}  {r['wall']:6.2f}  {r['cpu']:6.2f}  {r['figures']:7d}  "
            f"{r['images']:6d}  {r['image_bytes'] / 1e3:8.1f}  {r['html_bytes'] / 1e3:7.1f}  "
            f"{r['json_bytes'] / 1e3:7.1f}  {1e3 * r['cpu'] / max(r['audits'], 1):8.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
