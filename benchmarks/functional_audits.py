"""The functional white-box audits (BMR / HRW / ECDF family) of two trees, side by side.

Runs ``benchmarks/audit_fixed_costs.py`` over the 22 shipped specs of the family (BMR tree
releases, HRW kernel releases, ECDFs, the composed ROC) once per tree, each in its own
process with the tree first on ``PYTHONPATH``, both trees at the same time (so both see the
same load): first cold (an empty persistent compilation cache of its own), then warm (a
new process on the cache the cold run filled, i.e. a second ``make audit``; a new process
also draws a new string hash seed, which is what a warm run sees). Prints, per spec, the
audit's CPU seconds for each tree and the totals (CPU and wall), with the load average
before and after.

Usage (from the worktree root; ``BASE`` a checkout of the reference commit, e.g.
``git archive <ref> | tar -x -C /tmp/base``)::

    PYTHONPATH=$PWD python benchmarks/functional_audits.py --base /tmp/base

Counts (traces, lowerings, compilations, cache hits) are in the per-tree tables it saves
beside the summary (``--out``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SPECS = (
    "catalogue/bmr-ecdf",
    "catalogue/bmr-federated-ecdf",
    "catalogue/bmr-hosmer-lemeshow",
    "catalogue/bmr-roc",
    "catalogue/composed-bmr-roc",
    "catalogue/hrw-gaussian-kde-anisotropic",
    "catalogue/hrw-gaussian-kde",
    "catalogue/hrw-kernel-logistic",
    "catalogue/hrw-kernel-ridge",
    "catalogue/hrw-kernel-svm",
    "catalogue/hrw-online-gp",
    "catalogue/hrw-private-bandwidth-kde",
    "catalogue/hrw-sobolev-kde",
    "faulty/bmr-federated-ecdf-aggregate-uncounted",
    "faulty/bmr-federated-ecdf-noise-split",
    "faulty/bmr-hosmer-lemeshow-budget",
    "faulty/composed-bmr-roc-parallel",
    "faulty/ecdf-data-dependent-grid",
    "faulty/hrw-bandwidth-budget-ignored",
    "faulty/hrw-online-unconditioned",
    "faulty/hrw-unsquared-covariance",
    "blackbox/hrw-unsquared-covariance",
)

_ROW = re.compile(r"^\| (\S+) \| (\w+) \| ([\d.]+) \| ([\d.]+) \|")
_TOTAL = re.compile(r"pass 1 audits: ([\d.]+) s wall, ([\d.]+) s CPU")


def _start(tree: Path, cache: Path, log: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, str(tree / "benchmarks" / "audit_fixed_costs.py")]
    command += ["--cache-dir", str(cache), *SPECS]
    return subprocess.Popen(
        command, cwd=tree, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT
    )


def _parse(log: Path) -> tuple[dict, tuple]:
    rows, total = {}, (float("nan"), float("nan"))
    for line in log.read_text().splitlines():
        match = _ROW.match(line)
        if match and match.group(2) in ("pass", "violation", "inconclusive", "incompatible"):
            rows[match.group(1)] = (match.group(2), float(match.group(3)), float(match.group(4)))
        match = _TOTAL.search(line)
        if match:
            total = (float(match.group(1)), float(match.group(2)))
    return rows, total


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="checkout of the reference tree")
    parser.add_argument("--new", default=str(ROOT), help="the tree measured (default: this one)")
    parser.add_argument(
        "--caches",
        nargs=2,
        default=None,
        metavar=("BASE_CACHE", "NEW_CACHE"),
        help="filled caches: run the warm phase only, on these",
    )
    parser.add_argument("--out", default=None, help="folder for the logs (default: a temp dir)")
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="functional-audits-"))
    out.mkdir(parents=True, exist_ok=True)
    trees = {"base": Path(args.base).resolve(), "new": Path(args.new).resolve()}
    caches = {name: out / f"cache-{name}" for name in trees}
    if args.caches:
        caches = dict(zip(trees, map(Path, args.caches), strict=True))
    for phase in ("warm",) if args.caches else ("cold", "warm"):
        print(f"{phase}: load average before {_load()}", flush=True)
        procs = {
            name: _start(tree, caches[name], out / f"{phase}-{name}.txt")
            for name, tree in trees.items()
        }
        for proc in procs.values():
            proc.wait()
        print(f"{phase}: load average after {_load()}", flush=True)
        parsed = {name: _parse(out / f"{phase}-{name}.txt") for name in trees}
        print(
            f"\n| {phase} | verdict | base CPU s | new CPU s | base / new |\n|---|---|---|---|---|"
        )
        for spec in SPECS:
            (verdict, _, base), (verdict_new, _, new) = (
                parsed[n][0].get(spec, ("?", 0.0, float("nan"))) for n in trees
            )
            same = verdict if verdict == verdict_new else f"{verdict} / {verdict_new}"
            print(f"| {spec} | {same} | {base:.2f} | {new:.2f} | {base / max(new, 1e-9):.1f}x |")
        (bw, bc), (nw, nc) = parsed["base"][1], parsed["new"][1]
        print(
            f"| **all 22** | | {bc:.1f} CPU ({bw:.0f} wall) | {nc:.1f} CPU ({nw:.0f} wall) "
            f"| {bc / max(nc, 1e-9):.2f}x |\n",
            flush=True,
        )
    print(f"logs in {out}")


if __name__ == "__main__":
    main()
