"""The share of a warm ``dpaudit audit`` run spent outside the audits, on a subset of audits/.

Run: ``PYTHONPATH=$PWD python benchmarks/prepare_share.py [--other ROOT] [--cache DIR]
[--bytecode DIR] [--mixed] [SPEC ...]``. Each checkout (``--other`` first, e.g. an unpacked older
commit, then this one) runs ``dpaudit audit SPECS --json FILE -q`` twice in a fresh
process with a persistent compilation cache of its own under ``DIR``: the first run fills
the cache and is discarded, the second is the warm run measured, as in a warm ``make
audit``. Reported: the child's CPU (user + system) and wall time, the audits' own seconds
(the ``seconds`` field of each result, wall) and what is left: importing, validating and
building the specs, the pre-audit draw and the report. The default subset is 13 shipped
specs, every sixth of ``make audit``'s audits below 2 s (white-box, black-box, library,
faulty), so the run takes a minute or two; the whole suite is what ``make audit`` measures.
``--bytecode DIR``: the children keep Python bytecode under ``DIR``, as an installed package
has it (see benchmarks/validate_cost.py). Seconds depend on the load: the load average is
printed, and the checkouts run one after the other in one invocation.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBSET = (
    "audits/faulty/gaussian-pure-claim.toml",
    "audits/catalogue/hrw-kernel-ridge.toml",
    "audits/catalogue/iclp-qr-mean.toml",
    "audits/faulty/gaussian-gdp-linf-sensitivity.toml",
    "audits/faulty/composed-laplace-one-budget.toml",
    "audits/catalogue/gaussian-kl-coefficients.toml",
    "audits/faulty/composed-gaussian-one-budget.toml",
    "audits/faulty/gaussian-classical-large-epsilon.toml",
    "audits/catalogue/hrw-online-gp.toml",
    "audits/blackbox/histogram-scale-epsilon.toml",
    "audits/catalogue/hrw-kernel-logistic.toml",
    "audits/faulty/hrw-unsquared-covariance.toml",
    "audits/libraries/diffprivlib-laplace.toml",
)

#: ``--mixed``: 28 shipped specs mixing white-box, black-box (implementations, OpenDP) and
#: training audits, most below 1 s of audit (the driver's share is largest there).
MIXED = (
    "audits/catalogue/gaussian-mean-classical.toml",
    "audits/faulty/gaussian-pure-claim.toml",
    "audits/catalogue/gaussian-mean-zcdp.toml",
    "audits/faulty/iclp-unscaled-sigma.toml",
    "audits/catalogue/hrw-kernel-ridge.toml",
    "audits/catalogue/hrw-kernel-svm.toml",
    "audits/faulty/laplace-histogram-rdp-add-remove.toml",
    "audits/catalogue/iclp-qr-mean.toml",
    "audits/catalogue/composed-laplace-queries.toml",
    "audits/faulty/gaussian-gdp-linf-sensitivity.toml",
    "audits/faulty/histogram-scale-epsilon.toml",
    "audits/faulty/continual-textbook-half-scale.toml",
    "audits/catalogue/laplace-mean-rdp.toml",
    "audits/catalogue/laplace-mean.toml",
    "audits/catalogue/mrs-penalized-mean.toml",
    "audits/catalogue/gaussian-kl-coefficients.toml",
    "audits/catalogue/hrw-online-gp.toml",
    "audits/implementations/snapping.toml",
    "audits/implementations/discrete-laplace.toml",
    "audits/blackbox/laplace-mean.toml",
    "audits/libraries/opendp-geometric.toml",
    "audits/blackbox/histogram-scale-epsilon.toml",
    "audits/training/catalogue-dpsgd-correct.toml",
    "audits/training/catalogue-dpsgd-ignores-steps.toml",
    "audits/training/catalogue-dpsgd-noise-batch.toml",
    "audits/training/jax-privacy-dpsgd.toml",
    "audits/libraries/opendp-laplace.toml",
    "audits/libraries/opendp-histogram.toml",
)


def _run(root: Path, specs, cache: Path, bytecode: Path | None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root), "DPAUDIT_CACHE": "1"}
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode / root.name)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "results.json"
        command = [sys.executable, "-m", "dpaudit.cli.main", "audit", *specs, "-q",
                   "--cache-dir", str(cache), "--json", str(out)]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if not out.exists():
            raise SystemExit(f"{root}: exit {done.returncode}: {done.stderr[-500:]}")
        audits = json.loads(out.read_text())["audits"]
    return {
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "wall": wall,
        "audits": sum(float(a["seconds"]) for a in audits),
        "count": len(audits),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=list(SUBSET))
    parser.add_argument("--other", type=Path, help="another checkout to run first, e.g. the base")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "share")
    parser.add_argument("--bytecode", type=Path, help="children keep their bytecode under DIR")
    parser.add_argument("--mixed", action="store_true", help="the 28 specs of MIXED")
    args = parser.parse_args()
    if args.mixed:
        args.specs = list(MIXED)
    roots = ([args.other] if args.other else []) + [ROOT]
    print(f"load before {os.getloadavg()}")
    print("| checkout | audits | CPU | wall | audits' own seconds | outside the audits (share) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for root in roots:
        cache = args.cache / root.name
        shutil.rmtree(cache, ignore_errors=True)
        _run(root, args.specs, cache, args.bytecode)  # fills the cache (and the bytecode)
        r = _run(root, args.specs, cache, args.bytecode)
        outside = r["wall"] - r["audits"]
        print(
            f"| {root.name} | {r['count']} | {r['cpu']:.1f} s | {r['wall']:.1f} s "
            f"| {r['audits']:.1f} s | {outside:.1f} s ({outside / r['wall']:.0%}) |"
        )
        print(f"  load {os.getloadavg()[0]:.1f}")
    print(f"load after {os.getloadavg()}")


if __name__ == "__main__":
    main()
